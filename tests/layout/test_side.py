"""Side branches: `non_gating` units in wave N's own Flux Kustomization, which gates nobody."""
from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bot.cli import main
from bot.config import Config, ExtraUnit, parse_config
from bot.errors import WaveBotError
from bot.layout import render
from bot.layout.catalog import Service, parse_service
from bot.layout.waves import compute_waves
from bot.plan import make_plan
from bot.repo.worktree import FsTree, apply_changes
from bot.side import Side, ready_before
from bot.yamlio import documents as yamlio

from conftest import EXAMPLE, deployment, git, service, write_files


def svc(name: str, *deps: str) -> Service:
    return parse_service(service(name, *deps).encode(), f"catalog/{name}.yaml")


# ---- the slot order and who is ready first ------------------------------------------------------


def test_a_side_branch_sorts_after_its_wave_and_before_the_next() -> None:
    assert sorted([2, Side(1), 1, Side(0), 0]) == [0, Side(0), 1, Side(1), 2]
    assert Side(1) != 1 and len({1, Side(1)}) == 2  # a side branch is never its wave
    assert str(Side(3)) == "3-side"
    # <= and >= too, against plain waves as well (new-deepest-wave compares max(waves) <= the old deepest)
    assert Side(1) >= 1 and Side(1) <= 2 and not Side(1) <= 1 and not Side(1) >= 2
    assert 1 <= Side(1) <= Side(1) and 2 >= Side(1) >= Side(0)


@pytest.mark.parametrize(("new", "old", "expected"), [
    (0, 2, True),  # wave 2 depends on wave 1, which depends on wave 0
    (1, Side(2), True),  # wave 2's side branch depends on wave 1
    (1, Side(1), False),  # wave 1 and its side branch both wait only for wave 0
    (Side(1), 1, False),  # nothing ever waits for a side branch
    (Side(1), 3, False),
    (2, 2, False),
])
def test_only_what_the_old_owner_depends_on_is_ready_before_it(new: object, old: object, expected: bool) -> None:
    assert ready_before(new, old) is expected  # type: ignore[arg-type]


# ---- config ----------------------------------------------------------------------------------------


def test_config_names_side_branches_after_their_wave() -> None:
    config = parse_config(b"non_gating: [gitea-actions]\n", ".wave-bot.yaml")
    assert config.non_gating == ("gitea-actions",)
    assert config.wave_cr_name(Side(1)) == "apps-wave-1-side"
    assert config.wave_dir(Side(1)) == "apps/wave-1-side"
    assert config.wave_cr_path(Side(1)) == "clusters/base/apps-wave-1-side.yaml"
    assert config.slot_of_cr_file("apps-wave-1-side.yaml") == Side(1)
    assert config.slot_of_cr_file("apps-wave-1.yaml") == 1
    assert config.wave_of_cr_file("apps-wave-1-side.yaml") is None
    assert config.slot_of_dir("wave-2-side") == Side(2) and config.slot_of_dir("wave-02-side") is None


def test_side_name_may_use_the_number_and_stays_apart_from_wave_names() -> None:
    config = parse_config(b"wave_name: 'apps-{n}'\nside_name: 'ci-{n}'\n", ".wave-bot.yaml")
    assert config.wave_cr_name(Side(4)) == "ci-4"
    assert config.slot_of_cr_file("ci-4.yaml") == Side(4)
    assert config.wave_dir(Side(4)) == "apps/wave-4-side"  # the directory never follows side_name


@pytest.mark.parametrize(("text", "expected"), [
    ("side_name: 'apps-wave-side'\n", ".wave-bot.yaml:1: 'side_name' must contain '{wave_name}' or '{n}' once"),
    ("side_name: '{wave_name}'\n", "which is also a wave's name"),
    ("side_name: 'Side_{n}'\n", "give a DNS-1123 name"),
    ("non_gating: gitea-actions\n", ".wave-bot.yaml:1: 'non_gating' must be a list of strings"),
    ("non_gating:\n  - a\n  - a\n", ".wave-bot.yaml:3: 'non_gating' lists 'a' twice"),
])
def test_bad_side_settings_name_file_and_line(text: str, expected: str) -> None:
    with pytest.raises(WaveBotError) as caught:
        parse_config(text.encode(), ".wave-bot.yaml")
    assert expected in str(caught.value)


# ---- the wave engine ---------------------------------------------------------------------------------


def test_a_non_gating_unit_keeps_its_wave_and_moves_to_the_side_branch() -> None:
    config = Config(non_gating=("gitea-actions",),
                    extra_units=(ExtraUnit("gitea-actions", "gitea", above=True),))
    graph = compute_waves([svc("gitea"), svc("seerr", "sonarr"), svc("sonarr")], config)
    assert graph.nodes["gitea-actions"].wave == 1 and graph.nodes["gitea-actions"].slot == Side(1)
    assert graph.nodes["sonarr"].slot == 0 and graph.nodes["seerr"].slot == 1


def test_a_unit_others_depend_on_cannot_be_non_gating_and_the_paths_are_named() -> None:
    text = b"non_gating:\n  - plex\n  - sonarr\n"
    config = parse_config(text, ".wave-bot.yaml")
    with pytest.raises(WaveBotError) as caught:
        compute_waves([svc("seerr", "sonarr"), svc("sonarr", "qbittorrent"), svc("qbittorrent"), svc("plex"),
                       svc("overseer", "seerr")], config)
    message = str(caught.value)
    assert message.startswith(".wave-bot.yaml:3: non_gating lists 'sonarr', but 2 unit(s) depend on it")
    assert "seerr -> sonarr; overseer -> seerr -> sonarr" in message


def test_an_extra_unit_anchored_to_a_non_gating_unit_depends_on_it() -> None:
    config = Config(non_gating=("gitea",), extra_units=(ExtraUnit("gitea-actions", "gitea", above=True),))
    with pytest.raises(WaveBotError, match="gitea-actions -> gitea"):
        compute_waves([svc("gitea")], config)


def test_an_unknown_non_gating_name_suggests_the_closest() -> None:
    config = parse_config(b"non_gating: [sonar]\n", ".wave-bot.yaml")
    with pytest.raises(WaveBotError, match=r"\.wave-bot\.yaml:1: non_gating lists 'sonar', which is no unit "
                                           r"\(did you mean 'sonarr'\?\)"):
        compute_waves([svc("sonarr")], config)


# ---- the generated files -------------------------------------------------------------------------------


def test_the_side_branch_cr_is_wave_ns_with_its_own_name_and_path() -> None:
    config = Config(non_gating=("x",))
    wave = yamlio.load_one(render.wave_cr(2, render.DEFAULT_TEMPLATE, config), "w.yaml")
    side = yamlio.load_one(render.wave_cr(Side(2), render.DEFAULT_TEMPLATE, config), "s.yaml")
    assert wave is not None and side is not None
    assert side.value["metadata"]["name"] == "apps-wave-2-side"
    assert side.value["spec"]["path"] == "./apps/wave-2-side"
    assert side.value["spec"]["dependsOn"] == wave.value["spec"]["dependsOn"] == [{"name": "apps-wave-1"}]
    same = {k: v for k, v in side.value["spec"].items() if k != "path"}
    assert same == {k: v for k, v in wave.value["spec"].items() if k != "path"}


def _repo(tmp_path: Path, config: str) -> Path:
    write_files(tmp_path, {
        ".wave-bot.yaml": config,
        "catalog/gitea.yaml": service("gitea"),
        "catalog/sonarr.yaml": service("sonarr"),
        "catalog/seerr.yaml": service("seerr", "sonarr"),
        "apps/gitea.yaml": deployment("gitea"),
        "apps/sonarr.yaml": deployment("sonarr"),
        "apps/seerr.yaml": deployment("seerr"),
        "apps/gitea-actions.yaml": deployment("gitea-actions"),
    })
    return tmp_path


RUNNER = "extra_units:\n  - name: gitea-actions\n    anchor: gitea\n    above: true\n"


def test_apply_lays_out_the_side_branch_and_nothing_depends_on_it(tmp_path: Path) -> None:
    repo = _repo(tmp_path, RUNNER + "non_gating: [gitea-actions]\n")
    plan = make_plan(FsTree(str(repo)), parse_config((repo / ".wave-bot.yaml").read_bytes(), ".wave-bot.yaml"))
    assert plan.waves == (0, 1) and plan.sides == (Side(1),)
    assert plan.units() == {0: ["gitea", "sonarr"], 1: ["seerr"], Side(1): ["gitea-actions"]}
    apply_changes(str(repo), plan.changes)

    assert (repo / "apps/wave-1-side/gitea-actions.yaml").read_text() == deployment("gitea-actions")
    listed = yamlio.load_one((repo / "apps/wave-1-side/kustomization.yaml").read_bytes(), "k.yaml")
    assert listed is not None and listed.value["resources"] == ["gitea-actions.yaml"]
    depends = {}
    for path in sorted((repo / "clusters/base").glob("*.yaml")):
        doc = yamlio.load_one(path.read_bytes(), str(path))
        assert doc is not None
        depends[doc.value["metadata"]["name"]] = [d["name"] for d in doc.value["spec"]["dependsOn"]]
    assert depends == {"apps-wave-0": ["platform-config"], "apps-wave-1": ["apps-wave-0"],
                       "apps-wave-1-side": ["apps-wave-0"]}
    again = make_plan(FsTree(str(repo)), plan.config)
    assert again.changes == ()


def test_a_side_branch_below_no_gating_unit_still_gets_the_wave_it_depends_on(tmp_path: Path) -> None:
    # The runner's anchor has no app files, so no gating unit sits in wave 0: wave 0 must exist anyway.
    write_files(tmp_path, {
        "catalog/gitea.yaml": service("gitea"),
        "apps/gitea-actions.yaml": deployment("gitea-actions"),
    })
    config = Config(non_gating=("gitea-actions",), extra_units=(ExtraUnit("gitea-actions", "gitea", above=True),))
    plan = make_plan(FsTree(str(tmp_path)), config)
    assert plan.waves == (0,) and plan.sides == (Side(1),)


def test_making_the_unit_gating_again_moves_it_back_and_keeps_the_empty_side_branch(tmp_path: Path) -> None:
    repo = _repo(tmp_path, RUNNER + "non_gating: [gitea-actions]\n")
    config = parse_config((repo / ".wave-bot.yaml").read_bytes(), ".wave-bot.yaml")
    apply_changes(str(repo), make_plan(FsTree(str(repo)), config).changes)
    gating = parse_config(RUNNER.encode(), ".wave-bot.yaml")
    plan = make_plan(FsTree(str(repo)), gating)
    assert [(c.source, c.path) for c in plan.changes if c.action == "move"] == [
        ("apps/wave-1-side/gitea-actions.yaml", "apps/wave-1/gitea-actions.yaml")]
    # Without a base revision wave-bot cannot know the side branch owns nothing live: it stays, empty.
    assert plan.sides == (Side(1),) and plan.units()[Side(1)] == []


def test_json_names_the_non_gating_units_and_side_branches(tmp_path: Path) -> None:
    repo = _repo(tmp_path, RUNNER + "non_gating: [gitea-actions]\n")
    plan = make_plan(FsTree(str(repo)), parse_config((repo / ".wave-bot.yaml").read_bytes(), ".wave-bot.yaml"))
    out = plan.to_json()
    assert out["non_gating"] == ["gitea-actions"]
    assert out["sides"] == {"1-side": {"wave": 1, "name": "apps-wave-1-side", "path": "apps/wave-1-side",
                                       "dependsOn": ["apps-wave-0"]}}
    assert out["placement"]["1-side"] == ["apps/wave-1-side/gitea-actions.yaml"]
    assert out["waves"]["gitea-actions"] == 1


# ---- end to end on the example: apply --fix-overlays, then what kustomize and Flux see -----------------


def _flux_kustomizations(built: str) -> dict[str, dict[str, object]]:
    docs = yamlio.load(built.encode(), "build")
    return {d.value["metadata"]["name"]: d.value["spec"] for d in docs
            if isinstance(d.value, dict) and d.value.get("kind") == "Kustomization"}


def _make_runner_non_gating(repo: Path) -> None:
    config = repo / ".wave-bot.yaml"
    config.write_text(config.read_text() + "\nnon_gating: [gitea-actions]\n")
    git(repo, "commit", "-qam", "make the flaky CI runner non-gating")


def test_example_with_a_non_gating_runner_builds_in_both_overlays_and_checks_clean(
    example_repo: Path, kubectl: Callable[..., Any], capsys: pytest.CaptureFixture[str]
) -> None:
    _make_runner_non_gating(example_repo)
    _protect_runner(example_repo)
    assert main(["apply", "--fix-overlays", str(example_repo)]) == 0
    capsys.readouterr()

    for overlay in ("clusters/dev", "clusters/prod"):
        built = kubectl(example_repo / overlay)
        assert built.returncode == 0, built.stderr
        crs = _flux_kustomizations(built.stdout)
        side, gating = crs["apps-wave-1-side"], crs["apps-wave-1"]
        assert side["path"] == "./apps/wave-1-side"
        # after gitea's wave, like wave 1; seerr's wave waits for wave 1 only; nobody waits for the side
        assert side["dependsOn"] == gating["dependsOn"] == [{"name": "apps-wave-0"}]
        assert crs["apps-wave-2"]["dependsOn"] == [{"name": "apps-wave-1"}]
        assert all({"name": "apps-wave-1-side"} not in spec.get("dependsOn", []) for spec in crs.values())  # type: ignore[operator, union-attr]
        assert side["decryption"] == {"provider": "sops", "secretRef": {"name": "sops-age"}}
        assert {k: v for k, v in side.items() if k not in ("path", "decryption")} == {
            k: v for k, v in gating.items() if k not in ("path", "decryption")}

    wave_1, side_1 = kubectl(example_repo / "apps/wave-1"), kubectl(example_repo / "apps/wave-1-side")
    assert side_1.returncode == 0 and wave_1.returncode == 0
    assert "name: act-runner" in side_1.stdout and "name: gitea-actions-runner" in side_1.stdout
    assert "act-runner" not in wave_1.stdout and "name: seerr" in kubectl(example_repo / "apps/wave-2").stdout
    # the secret moved byte for byte
    assert (example_repo / "apps/wave-1-side/gitea-actions-runner-secret.sops.yaml").read_bytes() == (
        EXAMPLE / "apps/wave-1/gitea-actions-runner-secret.sops.yaml").read_bytes()

    assert main(["check", str(example_repo)]) == 0, capsys.readouterr().out


def test_against_the_deployed_revision_the_move_to_the_side_branch_is_a_prune_hazard(
    example_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Both Kustomizations wait only for wave 0, so apps-wave-1 may prune before apps-wave-1-side adopts.
    _make_runner_non_gating(example_repo)
    assert main(["check", "--fix-overlays", "--base", "origin/main", "--format", "json", str(example_repo)]) == 1
    findings = json.loads(capsys.readouterr().out)["findings"]
    # So apply does not make the move yet: it protects the runner's objects first.
    (held,) = [f for f in findings if f["code"] == "move-held"]
    assert held["path"] == "apps/wave-1/gitea-actions.yaml" and held["wave"] == 1
    assert held["message"].startswith("apps/wave-1/gitea-actions.yaml belongs in wave 1-side")
    assert "data loss for `Namespace gitea-actions`)" in held["message"]  # the StatefulSet only restarts
    assert "apps-wave-1-side recreates them" in held["message"]


def _protect_runner(repo: Path) -> None:
    """The first step of the runner's move (its Namespace would be lost): apply holds it and protects its
    objects; committed, the work tree (taken as deployed without --base) then lets the move go."""
    assert main(["apply", str(repo)]) == 0
    git(repo, "commit", "-qam", "wave-bot: protect the runner's objects first")


def _deploy_side_branch(repo: Path) -> None:
    """The runner made non-gating, applied with its overlays, and merged (origin/main is deployed)."""
    _make_runner_non_gating(repo)
    # Its objects as a user would have had them before apply held moves without --base: unannotated.
    from bot.config import load_config
    from bot.plan import make_plan
    from bot.repo.git import mover
    from bot.repo.worktree import FsTree, apply_changes

    plan = make_plan(FsTree(str(repo)), load_config(FsTree(str(repo))), fix_overlays=True, hold=False)
    apply_changes(str(repo), plan.changes, mover(str(repo)))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "side branch")
    git(repo, "push", "-q")


@pytest.mark.parametrize(("still_non_gating", "code", "slot"), [
    # side branch 1 depends on wave 0, so wave 0 adopts before the side branch prunes
    (False, "earlier-wave-move", {"wave": 0}),
    # side branch 0 and side branch 1 depend on nothing of each other
    (True, "later-wave-move", {"wave": 0, "side": True}),
])
def test_moves_out_of_a_side_branch_follow_the_dependsOn_chain(
    example_repo: Path, capsys: pytest.CaptureFixture[str], still_non_gating: bool, code: str,
    slot: dict[str, object],
) -> None:
    _deploy_side_branch(example_repo)
    config = example_repo / ".wave-bot.yaml"
    text = config.read_text().replace("above: true", "above: false")  # the runner now sits in gitea's wave
    config.write_text(text if still_non_gating else text.replace("non_gating: [gitea-actions]", ""))
    if still_non_gating:  # a move that loses the Namespace: apply protects first; that is deployed
        assert main(["apply", "--base", "origin/main", str(example_repo)]) == 0
        git(example_repo, "commit", "-qam", "protect the runner")
        git(example_repo, "push", "-q")
    capsys.readouterr()
    assert main(["plan", "--base", "origin/main", "--format", "json", str(example_repo)]) == 0
    findings = json.loads(capsys.readouterr().out)["findings"]
    found = [f for f in findings if f.get("resource") == "apps/StatefulSet gitea-actions/act-runner"]
    assert [f["code"] for f in found] == [code]
    assert {k: found[0][k] for k in ("wave", "side") if k in found[0]} == slot


# ---- overlays whose decryption is one regular expression ---------------------------------------------


REGEX_DEV = """apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - ../base
patches:
  # SOPS decryption for every app wave, by name.
  - target:
      group: kustomize.toolkit.fluxcd.io
      kind: Kustomization
      name: apps-wave-[0-9]+
    patch: |
      apiVersion: kustomize.toolkit.fluxcd.io/v1
      kind: Kustomization
      metadata:
        name: any
      spec:
        decryption:
          provider: sops
          secretRef:
            name: sops-age
"""


def test_a_regex_target_that_misses_the_side_branch_is_named_and_fixed(
    example_repo: Path, kubectl: Callable[..., Any], capsys: pytest.CaptureFixture[str]
) -> None:
    (example_repo / "clusters/dev/kustomization.yaml").write_text(REGEX_DEV)
    git(example_repo, "commit", "-qam", "dev: one regex patch")
    _make_runner_non_gating(example_repo)
    assert main(["apply", str(example_repo)]) == 0  # the layout, without touching the overlays
    capsys.readouterr()
    assert main(["check", "--format", "json", str(example_repo)]) == 1
    findings = json.loads(capsys.readouterr().out)["findings"]
    dev = [f for f in findings if f["code"] == "missing-decryption" and f["overlay"] == "clusters/dev"]
    assert len(dev) == 1 and dev[0]["severity"] == "error" and dev[0]["resource"] == "apps-wave-1-side"
    assert ("clusters/dev/kustomization.yaml patches[0] (line 7) gives decryption to the target name "
            "'apps-wave-[0-9]+', which kustomize matches against the whole name: it covers apps-wave-0, "
            "apps-wave-1, apps-wave-2 but not apps-wave-1-side") in dev[0]["message"]

    assert main(["apply", "--fix-overlays", str(example_repo)]) == 0
    built = kubectl(example_repo / "clusters/dev")
    assert built.returncode == 0, built.stderr
    side = _flux_kustomizations(built.stdout)["apps-wave-1-side"]
    assert side["decryption"] == {"provider": "sops", "secretRef": {"name": "sops-age"}}
    capsys.readouterr()
    assert main(["check", str(example_repo)]) == 0, capsys.readouterr().out


def test_a_fresh_regex_patch_covers_the_side_branches(tmp_path: Path) -> None:
    from bot.fixes.overlays import regex_item as _regex_item

    item = _regex_item(Config(non_gating=("x",)))
    assert "name: apps-wave-[0-9]+(-side)?\n" in item
    assert "name: apps-wave-[0-9]+\n" in _regex_item(Config())
    assert "name: apps-wave-[0-9]+|ci-[0-9]+\n" in _regex_item(Config(non_gating=("x",), side_name="ci-{n}"))


# ---- the report ----------------------------------------------------------------------------------------


def test_the_report_draws_the_side_branch_hanging_off_the_wave_below_gating_nothing(
    example_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _make_runner_non_gating(example_repo)
    _protect_runner(example_repo)
    capsys.readouterr()
    assert main(["plan", "--format", "markdown", str(example_repo)]) == 0
    out = capsys.readouterr().out
    assert "| 1-side | `gitea-actions` | `gitea-actions.yaml`, `gitea-actions-runner-secret.sops.yaml` |" in out
    mermaid = out.split("```mermaid", 1)[1].split("```", 1)[0]
    assert 'subgraph s1["wave 1 side (non-gating) (new)"]' in mermaid  # created by this plan: highlighted
    side_block = mermaid.split('subgraph s1', 1)[1].split("end", 1)[0]
    assert '["gitea-actions (from wave 1)"]' in side_block  # the moved unit is marked
    arrows = [line.strip() for line in mermaid.splitlines() if "->" in line or "==>" in line]
    assert "w0 -.-> s1" in arrows and "w0 ==> w1" in arrows and "w1 ==> w2" in arrows
    assert not [a for a in arrows if a.startswith("s1 ")]  # nothing hangs off a side branch
    assert main(["plan", str(example_repo)]) == 0
    row = "\n1-side  gitea-actions  gitea-actions.yaml, gitea-actions-runner-secret.sops.yaml\n"
    assert row in capsys.readouterr().out


def test_a_side_branch_emptied_is_kept_then_removed_once_it_owns_nothing(
    example_repo: Path, kubectl: Callable[..., Any], capsys: pytest.CaptureFixture[str]
) -> None:
    _deploy_side_branch(example_repo)
    config = example_repo / ".wave-bot.yaml"
    config.write_text(config.read_text().replace("non_gating: [gitea-actions]", ""))
    # Moving the runner's Namespace back loses it unless protected: apply's first step, deployed.
    assert main(["apply", "--base", "origin/main", str(example_repo)]) == 0
    git(example_repo, "commit", "-qam", "protect the runner")
    git(example_repo, "push", "-q")
    capsys.readouterr()
    # The runner goes back to wave 1; its side branch still owns it live, so it stays, empty.
    assert main(["apply", "--base", "origin/main", "--format", "json", str(example_repo)]) == 0
    out = json.loads(capsys.readouterr().out)
    emptied = [f for f in out["findings"] if f["code"] == "wave-emptied"]
    assert [(f["wave"], f.get("side")) for f in emptied] == [(1, True)]
    assert "removes it when it is still empty in a later change" in emptied[0]["message"]
    assert (example_repo / "clusters/base/apps-wave-1-side.yaml").is_file()
    assert out["placement"]["1-side"] == []
    git(example_repo, "add", "-A")
    git(example_repo, "commit", "-qm", "runner gating again")
    git(example_repo, "push", "-q")
    # Once merged (and reconciled), it owns nothing and can go, but lines in the base and the overlays
    # refer to it: without --fix-overlays it stays and they are named; with it, all of them go.
    assert main(["apply", "--base", "origin/main", "--format", "json", str(example_repo)]) == 0
    out = json.loads(capsys.readouterr().out)
    removable = [f for f in out["findings"] if f["code"] == "wave-removable"]
    assert len(removable) == 1 and removable[0]["side"] is True
    assert "holds no non-gating unit now, so it can go" in removable[0]["message"]
    assert "clusters/base/kustomization.yaml:16" in removable[0]["message"]
    assert (example_repo / "clusters/base/apps-wave-1-side.yaml").is_file()
    assert main(["apply", "--fix-overlays", "--base", "origin/main", "--format", "json", str(example_repo)]) == 0
    out = json.loads(capsys.readouterr().out)
    removed = [f for f in out["findings"] if f["code"] == "wave-removed"]
    assert len(removed) == 1 and removed[0]["side"] is True
    assert not (example_repo / "clusters/base/apps-wave-1-side.yaml").exists()
    assert not (example_repo / "apps/wave-1-side").exists()
    assert "1-side" not in out["placement"]
    for overlay in ("clusters/dev", "clusters/prod"):
        built = kubectl(example_repo / overlay)
        assert built.returncode == 0, built.stderr
        assert "apps-wave-1-side" not in built.stdout
    assert main(["check", str(example_repo)]) == 0, capsys.readouterr().out


# ---- ready_before against every schedule Flux may run -------------------------------------------------


def _may_reconcile_first(old: object, new: object, waves: int) -> bool:
    """Brute force over schedules: can `old` reconcile (and prune) before `new` has (and adopted)?

    Flux reconciles a Kustomization at a revision only after everything in its dependsOn is ready at
    that revision: wave n and side n both depend on wave n-1 (wave 0 and side 0 on the root).
    Any order consistent with that can happen.
    """
    slots: list[object] = [*range(waves), *(Side(n) for n in range(waves))]
    depends = {s: ([s.wave - 1] if s.wave else []) if isinstance(s, Side) else ([s - 1] if s else [])  # type: ignore[operator]
               for s in slots}
    for schedule in itertools.permutations(slots):
        position = {s: i for i, s in enumerate(schedule)}
        if all(position[d] < position[s] for s in slots for d in depends[s]) and position[old] < position[new]:
            return True
    return False


SLOTS = [0, 1, 2, Side(0), Side(1), Side(2)]


@pytest.mark.parametrize(("old", "new"), [(o, n) for o in SLOTS for n in SLOTS if o != n], ids=str)
def test_ready_before_is_exactly_when_no_schedule_lets_the_old_owner_prune_first(old: object, new: object) -> None:
    assert ready_before(new, old) is not _may_reconcile_first(old, new, waves=3)  # type: ignore[arg-type]
