"""The engine end to end on real repositories: the seed's table, apply, idempotence, kustomize builds."""
from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bot.cli import main
from bot.config import Config
from bot.plan import make_plan
from bot.repo.worktree import FsTree

from conftest import deployment, git, service, snapshot, write_files
from support.moves import apply_as_is, findings_as_is, plan_as_is

# The example's waves (examples/homelab), written out by hand from its catalog.
SEED_WAVES = {
    "pihole": 0, "gitea": 0, "jackett": 0, "plex": 0, "qbittorrent": 0, "nextcloud-db": 0, "semaphore-db": 0,
    "sonarr": 1, "radarr": 1, "nextcloud": 1, "semaphore": 1, "gitea-actions": 1,
    "seerr": 2,
    "keycloak": 1, "keycloak-db": 0, "vm-demo": 0,
}
SEED_FILES = {
    0: {"pihole.yaml", "gitea.yaml", "gitea-bootstrap-secret.sops.yaml", "jackett.yaml", "plex.yaml",
        "qbittorrent.yaml", "nextcloud-db.yaml", "nextcloud-db-app.sops.yaml", "semaphore-db.yaml",
        "semaphore-db-app.sops.yaml"},
    1: {"sonarr.yaml", "radarr.yaml", "nextcloud.yaml", "nextcloud-bootstrap-secret.sops.yaml", "semaphore.yaml",
        "semaphore-bootstrap-secret.sops.yaml", "gitea-actions.yaml", "gitea-actions-runner-secret.sops.yaml"},
    2: {"seerr.yaml"},
}


def run_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code = main([*args, "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


def test_example_reproduces_the_seed_table_and_is_up_to_date(
    example_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = run_json(capsys, "plan", str(example_repo))
    assert code == 0
    assert out["waves"] == dict(sorted(SEED_WAVES.items()))
    assert out["max_wave"] == 2
    assert {int(w): {Path(p).name for p in paths} for w, paths in out["placement"].items()} == SEED_FILES
    assert all(p.startswith(f"apps/wave-{w}/") for w, paths in out["placement"].items() for p in paths)
    assert out["changes"] == []
    not_onboarded = sorted(f["resource"] for f in out["findings"] if f["code"] == "not-onboarded")
    assert not_onboarded == ["keycloak", "keycloak-db", "vm-demo"]
    assert main(["check", str(example_repo)]) == 0


def test_text_plan_prints_the_wave_table(example_repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", str(example_repo)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "wave-bot: up to date"
    rows = [line.split() for line in out[3:16]]
    waves: dict[str, list[str]] = {}
    current = ""
    for row in rows:
        if row[0].isdigit():
            current, row = row[0], row[1:]
        waves.setdefault(current, []).append(row[0])
    assert waves == {
        "0": ["gitea", "jackett", "nextcloud-db", "pihole", "plex", "qbittorrent", "semaphore-db"],
        "1": ["gitea-actions", "nextcloud", "radarr", "semaphore", "sonarr"],
        "2": ["seerr"],
    }
    assert "Computed, not placed (no app files yet): keycloak (wave 1), keycloak-db (wave" in out
    assert "  0), vm-demo (wave 0)" in out  # wrapped at 80 columns: the output is not a terminal
    assert out[-1] == "No file to move, create, update or delete: the wave layout matches the catalog."


def _flatten(repo: Path) -> dict[str, bytes]:
    """Turn the example back into the pre-split layout: every app file directly in apps/, no wave files."""
    app_bytes = {}
    for path in sorted((repo / "apps").glob("wave-*/*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        app_bytes[path.name] = path.read_bytes()
        git(repo, "mv", str(path.relative_to(repo)), f"apps/{path.name}")
    git(repo, "rm", "-q", "-r", "apps/wave-0", "apps/wave-1", "apps/wave-2")
    git(repo, "rm", "-q", *[f"clusters/base/apps-wave-{n}.yaml" for n in range(3)])
    git(repo, "commit", "-q", "-m", "pre-split layout")
    return app_bytes


def test_apply_splits_a_flat_layout_into_the_seed_waves(
    example_repo: Path, capsys: pytest.CaptureFixture[str], kubectl: Callable[..., Any]
) -> None:
    app_bytes = _flatten(example_repo)
    code, out = run_json(capsys, "apply", str(example_repo))
    assert code == 0
    assert sum(c["action"] == "move" for c in out["changes"]) == sum(len(f) for f in SEED_FILES.values())
    for wave, names in SEED_FILES.items():
        for name in names:
            # byte-identical moves, SOPS files included
            assert (example_repo / f"apps/wave-{wave}/{name}").read_bytes() == app_bytes[name]
    assert not list((example_repo / "apps").glob("*.yaml"))
    for directory in ["apps/wave-0", "apps/wave-1", "apps/wave-2", "clusters/dev", "clusters/prod"]:
        built = kubectl(example_repo / directory)
        assert built.returncode == 0, f"{directory}: {built.stderr}"
    # The moves are staged as renames, so history follows each file.
    assert "R  apps/seerr.yaml -> apps/wave-2/seerr.yaml" in git(example_repo, "status", "--porcelain")

    before = snapshot(example_repo)
    code, again = run_json(capsys, "apply", str(example_repo))
    assert code == 0 and again["changes"] == []
    assert snapshot(example_repo) == before


def test_apply_touches_only_app_files_and_generated_files(example_repo: Path) -> None:
    _flatten(example_repo)
    before = snapshot(example_repo)
    assert main(["apply", str(example_repo)]) == 0
    after = snapshot(example_repo)
    changed = {p for p in before.keys() | after.keys() if before.get(p) != after.get(p)}
    assert all(p.startswith("apps/") or p.startswith("clusters/base/apps-wave-") for p in changed), changed
    assert all(after[p] == before[p] for p in before if not p.startswith("apps/"))


def test_a_wave_that_empties_keeps_its_files_with_no_resources(
    example_repo: Path, capsys: pytest.CaptureFixture[str], kubectl: Callable[..., Any]
) -> None:
    write_files(example_repo, {"catalog/seerr.yaml": service("seerr")})
    code, out = run_json(capsys, "apply", str(example_repo))
    assert code == 0
    assert {"action": "move", "path": "apps/wave-0/seerr.yaml", "from": "apps/wave-2/seerr.yaml"} in out["changes"]
    assert out["placement"]["2"] == []
    assert b"resources: []" in (example_repo / "apps/wave-2/kustomization.yaml").read_bytes()
    assert (example_repo / "clusters/base/apps-wave-2.yaml").exists()
    assert kubectl(example_repo / "apps/wave-2").returncode == 0


def test_unplaced_file_stays_in_its_wave_kustomization(
    make_repo: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_repo({
        "catalog/web.yaml": service("web"),
        "apps/wave-0/web.yaml": deployment("web"),
        "apps/wave-0/legacy-cron.yaml": deployment("legacy-cron"),
    })
    code, out = run_json(capsys, "apply", str(repo))
    assert code == 0
    assert out["placement"] == {"0": ["apps/wave-0/legacy-cron.yaml", "apps/wave-0/web.yaml"]}
    (finding,) = [f for f in out["findings"] if f["code"] == "unplaced-file"]
    assert finding["severity"] == "error" and finding["path"] == "apps/wave-0/legacy-cron.yaml"
    assert "stays in wave 0" in finding["message"]
    assert b"- legacy-cron.yaml" in (repo / "apps/wave-0/kustomization.yaml").read_bytes()
    assert main(["check", str(repo)]) == 1  # an error finding fails the check


def test_hand_edited_generated_file_is_restored(example_repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = example_repo / "apps/wave-1/kustomization.yaml"
    original = path.read_bytes()
    path.write_bytes(original.replace(b"kind: Kustomization\n", b"kind: Kustomization  # careful\n"))
    assert main(["check", str(example_repo)]) == 1
    capsys.readouterr()
    code, out = run_json(capsys, "apply", str(example_repo))
    assert {"action": "update", "path": "apps/wave-1/kustomization.yaml"} in out["changes"]
    (restored,) = [f for f in out["findings"] if f["code"] == "generated-file-restored"]
    assert restored["path"] == "apps/wave-1/kustomization.yaml" and "a hand edit" in restored["message"]
    assert path.read_bytes() == original


def test_catalog_change_moves_files_and_check_fails_until_applied(
    example_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_files(example_repo, {"catalog/gitea.yaml": service("gitea", "gitea-db")})
    capsys.readouterr()
    assert not [f for f in run_json(capsys, "plan", str(example_repo))[1]["findings"]
                if f["code"] == "generated-file-restored"]  # regenerated, not restored: nobody edited them
    assert main(["check", str(example_repo)]) == 1
    assert "out of date" in capsys.readouterr().err
    out = plan_as_is(example_repo).to_json()  # the moves as they are (apply holds the data-loss ones)
    moves = {(c["from"], c["path"]) for c in out["changes"] if c["action"] == "move"}
    assert moves == {
        ("apps/wave-0/gitea.yaml", "apps/wave-1/gitea.yaml"),
        ("apps/wave-0/gitea-bootstrap-secret.sops.yaml", "apps/wave-1/gitea-bootstrap-secret.sops.yaml"),
        ("apps/wave-1/gitea-actions.yaml", "apps/wave-2/gitea-actions.yaml"),
        ("apps/wave-1/gitea-actions-runner-secret.sops.yaml", "apps/wave-2/gitea-actions-runner-secret.sops.yaml"),
    }
    assert out["waves"]["gitea-db"] == 0 and out["waves"]["gitea-actions"] == 2


def test_plan_writes_nothing(example_repo: Path) -> None:
    _flatten(example_repo)
    before = snapshot(example_repo)
    assert main(["plan", str(example_repo)]) == 0
    assert snapshot(example_repo) == before


def test_plan_outside_git_renames_files(tmp_path: Path) -> None:
    write_files(tmp_path, {"catalog/web.yaml": service("web"), "apps/web.yaml": deployment("web")})
    assert main(["apply", str(tmp_path)]) == 0
    assert (tmp_path / "apps/wave-0/web.yaml").read_text() == deployment("web")


def test_empty_catalog_and_no_apps_plans_nothing(tmp_path: Path) -> None:
    (tmp_path / "catalog").mkdir()
    plan = make_plan(FsTree(str(tmp_path)), Config())
    assert plan.waves == () and plan.changes == () and plan.graph.max_wave is None


def test_config_flag_points_elsewhere(example_repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    other = tmp_path / "other.yaml"
    other.write_text("leaf_patterns: ['*-db']\n")  # no extra unit: gitea-actions files become unplaced
    code, out = run_json(capsys, "plan", str(example_repo), "--config", str(other))
    assert code == 0
    assert "gitea-actions" not in out["waves"]
    assert {f["path"] for f in out["findings"] if f["code"] == "unplaced-file"} == {
        "apps/wave-1/gitea-actions.yaml", "apps/wave-1/gitea-actions-runner-secret.sops.yaml"}


def test_example_is_not_modified_by_the_suite() -> None:
    # Tests work on copies; the bundled example stays pristine and in sync with its own check.
    example = Path(__file__).resolve().parent.parent.parent / "examples" / "homelab"
    assert shutil.which("git") is not None
    assert main(["check", str(example)]) == 0


def test_without_base_the_work_tree_stands_for_the_deployed_state(
    example_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A local `apply` with no --base still hears that its move deletes plex's volume, and says what it assumed."""
    plex = (example_repo / "catalog/plex.yaml").read_text()
    write_files(example_repo, {"catalog/plex.yaml": plex + "  dependencies:\n    - to: sonarr\n"})
    capsys.readouterr()
    code, _ = run_json(capsys, "check", str(example_repo))
    assert code == 1
    found = findings_as_is(example_repo)  # the move as it is (apply holds it)
    errors = {(f["code"], f["resource"]) for f in found if f["severity"] == "error"}
    assert ("later-wave-move", "PersistentVolumeClaim plex/plex-data") in errors
    assert ("later-wave-move", "Namespace plex") in errors
    assumed = [f for f in found if f["code"] == "base-is-work-tree"]
    assert len(assumed) == 1 and "--base" in assumed[0]["message"]
    # Once moved, the work tree is the new layout: nothing moves, so nothing is judged or assumed.
    apply_as_is(example_repo)
    capsys.readouterr()
    _, out = run_json(capsys, "plan", str(example_repo))
    assert not [f for f in out["findings"] if f["code"] in ("later-wave-move", "base-is-work-tree")]
