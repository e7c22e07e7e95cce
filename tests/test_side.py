"""Side branches: `non_gating` units in wave N's own Flux Kustomization, which gates nobody."""
from __future__ import annotations

from pathlib import Path

import pytest

from bot import render, yamlio
from bot.catalog import Service, parse_service
from bot.config import Config, ExtraUnit, parse_config
from bot.errors import WaveBotError
from bot.plan import make_plan
from bot.side import Side, ready_before
from bot.waves import compute_waves
from bot.worktree import FsTree, apply_changes

from conftest import deployment, service, write_files


def svc(name: str, *deps: str) -> Service:
    return parse_service(service(name, *deps).encode(), f"catalog/{name}.yaml")


# ---- the slot order and who is ready first ------------------------------------------------------


def test_a_side_branch_sorts_after_its_wave_and_before_the_next() -> None:
    assert sorted([2, Side(1), 1, Side(0), 0]) == [0, Side(0), 1, Side(1), 2]
    assert Side(1) != 1 and len({1, Side(1)}) == 2  # a side branch is never its wave
    assert str(Side(3)) == "3-side"


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
