"""bot.checks.gating: which units wait for others they do not need, only because waves form one chain."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.cli import main
from bot.config import Config, ExtraUnit, load_config, parse_config
from bot.model import Finding
from bot.plan import make_plan
from bot.repo.worktree import FsTree
from bot.report import formats as report
from bot.side import Side

from conftest import deployment, service, write_files


def chain(plan_findings: tuple[Finding, ...]) -> dict[int, Finding]:
    return {f.wave: f for f in plan_findings if f.code == "chain-gating"}  # type: ignore[misc]


def test_the_example_shows_what_each_wave_boundary_costs(example_repo: Path) -> None:
    tree = FsTree(str(example_repo))
    found = chain(make_plan(tree, load_config(tree, None)).findings)
    assert set(found) == {1, 2}
    assert found[2].severity == "info"
    assert found[2].message.startswith(
        "apps-wave-2 waits until all 5 units of wave 1 are ready, but 1 unit(s) of wave 2 need only some of them "
        "and wait for the rest only because of the linear chain: seerr needs radarr, sonarr. Nothing depends on "
        "gitea-actions, nextcloud, semaphore, yet a crashloop in one of them holds wave 2")
    assert "Nothing depends on pihole, plex" in found[1].message
    # One snippet for the report, on the first boundary: non_gating is one key.
    assert found[2].fix is None and "the one snippet, under wave 1's note, lists every candidate" in found[2].message
    assert found[1].fix == (
        "non_gating:\n"
        "  - gitea-actions  # later-wave-move of its Namespace\n"
        "  - nextcloud  # later-wave-move of its Namespace, PersistentVolumeClaim\n"
        "  - pihole  # later-wave-move of its Namespace, PersistentVolumeClaim\n"
        "  - plex  # later-wave-move of its Namespace, PersistentVolumeClaim\n"
        "  - semaphore  # later-wave-move of its Namespace\n")
    assert ("taking gitea-actions, nextcloud, pihole, plex, semaphore off the chain moves their stateful objects"
            in found[1].message)


def test_the_suggested_fix_is_valid_config_that_takes_the_units_off_the_chain(
    example_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Pasted into the config as a user would (every report's one snippet, appended): it parses, takes
    every candidate off the chain, and each stateful move it announced is reported as one. The layout
    is judged with every move made (hold=False): plain apply holds the data-loss ones first."""
    tree = FsTree(str(example_repo))
    fix = chain(make_plan(tree, load_config(tree, None), hold=False).findings)[1].fix
    assert fix is not None
    config_file = example_repo / ".wave-bot.yaml"
    config_file.write_text(config_file.read_text() + "\n" + fix)
    plan = make_plan(tree, load_config(tree, None), hold=False)
    assert plan.units()[Side(0)] == ["pihole", "plex"]
    assert plan.units()[Side(1)] == ["gitea-actions", "nextcloud", "semaphore"]
    assert plan.units()[1] == ["radarr", "sonarr"]
    assert 2 not in chain(plan.findings)  # seerr now waits only for what it needs
    assert not [f for f in chain(plan.findings).values() if f.fix or "Nothing depends on" in f.message]
    main(["plan", str(example_repo), "--base", "HEAD", "--format", "json"])
    findings = json.loads(capsys.readouterr().out)["findings"]
    # Each announced stateful move is a data-loss later-wave-move, which plan --base holds (move-held:
    # its objects protected first) rather than make.
    moved = {f["path"].split("/")[-1].removesuffix(".yaml") for f in findings
             if f["code"] == "move-held" or f["code"] == "later-wave-move"
             and f["resource"].split(" ")[0] in ("Namespace", "PersistentVolumeClaim")}
    assert moved == {"gitea-actions", "nextcloud", "pihole", "plex", "semaphore"}


def test_a_second_suggestion_keeps_the_units_already_non_gating(example_repo: Path) -> None:
    config_file = example_repo / ".wave-bot.yaml"
    config_file.write_text(config_file.read_text() + "\nnon_gating: [gitea-actions]\n")
    tree = FsTree(str(example_repo))
    found = chain(make_plan(tree, load_config(tree, None), hold=False).findings)
    assert "Nothing depends on nextcloud, semaphore," in found[2].message
    assert found[1].fix is not None and found[1].fix.startswith("non_gating:\n  - gitea-actions\n  - nextcloud  #")
    assert found[1].fix.count("gitea-actions") == 1


def test_a_unit_that_is_moving_is_not_suggested_until_it_settles(example_repo: Path) -> None:
    with open(example_repo / "catalog/plex.yaml", "a") as catalog:
        catalog.write("  dependencies:\n    - to: pihole\n")  # plex moves from wave 0 to wave 1
    tree = FsTree(str(example_repo))
    found = chain(make_plan(tree, load_config(tree, None), hold=False).findings)
    fixes = [f.fix for f in found.values() if f.fix]
    assert len(fixes) == 1 and "plex" not in fixes[0] and "- gitea-actions" in fixes[0]
    assert "Not suggested while their files move in this change: plex" in found[2].message


def _plan(
    tmp_path: Path, catalog: dict[str, tuple[str, ...]], placed: list[str], config: Config | None = None
) -> dict[int, Finding]:
    files: dict[str, str | bytes] = {f"catalog/{n}.yaml": service(n, *deps) for n, deps in catalog.items()}
    files.update({f"apps/{n}.yaml": deployment(n) for n in placed})
    write_files(tmp_path, files)
    return chain(make_plan(FsTree(str(tmp_path)), config or Config()).findings)


def test_no_finding_when_every_unit_needs_all_of_the_wave_below(tmp_path: Path) -> None:
    assert _plan(tmp_path, {"a": (), "b": ("a",), "c": ("b",), "d": ("b",)}, ["a", "b", "c", "d"]) == {}


def test_a_unit_whose_path_down_runs_through_an_unplaced_one_needs_nothing_below(tmp_path: Path) -> None:
    # app -> keycloak (not onboarded) -> keycloak-db: app is wave 2 but needs nothing placed in wave 1.
    found = _plan(tmp_path, {"keycloak": ("keycloak-db",), "app": ("keycloak",), "api": ("api-db",), "web": ("api",)},
                  ["app", "api", "api-db", "web", "keycloak-db"])
    assert "app needs none of them" in found[2].message and "web" not in found[2].message
    assert "Nothing depends on" not in found[2].message and found[2].fix is None  # api gates web


def test_a_side_branch_unit_waits_for_the_wave_below_like_its_wave(tmp_path: Path) -> None:
    config = Config(non_gating=("runner",), extra_units=(ExtraUnit("runner", "git", above=True),))
    write_files(tmp_path, {"apps/runner.yaml": deployment("runner")})
    found = _plan(tmp_path, {"git": (), "dns": ()}, ["git", "dns"], config)
    assert found[1].message.startswith("apps-wave-1 waits until all 2 units of wave 0 are ready, but 1 unit(s) "
                                       "of wave 1 need only some of them and wait for the rest only because of "
                                       "the linear chain: runner needs git. Nothing depends on dns")


def test_reports_give_it_a_section_of_its_own_when_asked(
    example_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = FsTree(str(example_repo))
    plan = make_plan(tree, load_config(tree, None))
    # Nothing changes wave in the example: the standing advice is not repeated on every plan ...
    assert "Gating worth knowing about" not in report.to_markdown(plan)
    # ... and is there on request.
    markdown = report.to_markdown(plan, report.Context(gating=True))
    assert "#### Findings" not in markdown  # nothing to act on: the example is up to date
    section = markdown.split("#### Gating worth knowing about", 1)[1].split("####", 1)[0]
    assert "(2 wave boundaries)" in section and "seerr needs radarr, sonarr" in section
    assert "  non_gating:\n    - gitea-actions  # later-wave-move of its Namespace\n" in section
    assert main(["plan", str(example_repo)]) == 0
    assert "Gating worth knowing about" not in capsys.readouterr().out
    assert main(["plan", str(example_repo), "--gating"]) == 0
    text = capsys.readouterr().out
    assert "\nGating worth knowing about:\n  apps-wave-1 waits until all 7 units of wave 0" in text
    assert text.endswith("No file to move, create, update or delete: the wave layout matches the catalog.\n")
    assert main(["plan", "--format", "json", str(example_repo)]) == 0  # the data has every boundary's
    findings = json.loads(capsys.readouterr().out)["findings"]
    assert sorted(f["wave"] for f in findings if f["code"] == "chain-gating") == [1, 2]


def test_a_change_shows_the_advice_of_the_boundaries_it_touches(
    example_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # tautulli joins wave 2 (it needs sonarr): the boundary between waves 1 and 2 changes, not 0 and 1.
    write_files(example_repo, {"catalog/tautulli.yaml": service("tautulli", "sonarr"),
                               "apps/tautulli.yaml": deployment("tautulli")})
    assert main(["plan", str(example_repo)]) == 0
    text = capsys.readouterr().out
    section = text.split("\nGating worth knowing about:\n", 1)[1].split("\n\n", 1)[0]
    assert section.startswith("  apps-wave-2 waits until all 5 units of wave 1")
    assert "apps-wave-1 waits" not in section


def test_suggested_config_parses(example_repo: Path) -> None:
    tree = FsTree(str(example_repo))
    fix = chain(make_plan(tree, load_config(tree, None)).findings)[1].fix
    assert fix is not None and parse_config(fix.encode(), ".wave-bot.yaml").non_gating == (
        "gitea-actions", "nextcloud", "pihole", "plex", "semaphore")
