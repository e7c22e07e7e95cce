from __future__ import annotations

from pathlib import Path

import pytest

from bot.config import Config, ExtraUnit
from bot.errors import WaveBotError
from bot.layout.placement import owner, place_files
from bot.layout.waves import Node, WaveGraph
from bot.repo.worktree import FsTree

from conftest import write_files

NODES = {name: Node(name, wave, "service") for name, wave in
         [("nextcloud", 1), ("nextcloud-db", 0), ("gitea", 0), ("foo", 0), ("foo-app", 2)]}
GRAPH = WaveGraph(NODES)


@pytest.mark.parametrize(
    "name, expected",
    [
        ("nextcloud.yaml", "nextcloud"),
        ("nextcloud.yml", "nextcloud"),
        ("nextcloud-bootstrap-secret.sops.yaml", "nextcloud"),
        ("nextcloud-db.yaml", "nextcloud-db"),
        ("nextcloud-db-app.sops.yaml", "nextcloud-db"),  # not nextcloud + "-db-app"
        ("nextcloud-app.yaml", "nextcloud"),
        ("foo-app.yaml", "foo-app"),  # foo + "-app" and foo-app + "": the longer name wins
        ("gitea-actions.yaml", None),  # "-actions" is not a suffix
        ("nextcloud-extra.yaml", None),
        ("README.md", None),
    ],
)
def test_owner_by_name_and_suffix(name: str, expected: str | None) -> None:
    assert owner(name, NODES, Config(), {}) == expected


def test_owner_uses_configured_suffixes() -> None:
    assert owner("gitea-config.yaml", NODES, Config(file_suffixes=("", "-config")), {}) == "gitea"
    assert owner("gitea.yaml", NODES, Config(file_suffixes=("-config",)), {}) is None


def test_explicit_extra_unit_files_win() -> None:
    name = "gitea-actions-runner-secret.sops.yaml"
    assert owner(name, NODES, Config(), {name: "x"}) == "x"


def _place(tmp_path: Path, files: dict[str, str], config: Config | None = None) -> dict[str, tuple[str, str | None]]:
    write_files(tmp_path, files)
    placed = place_files(FsTree(str(tmp_path)), GRAPH, config or Config())
    return {f.path: (f.target, f.node) for f in placed}


def test_files_are_placed_from_apps_root_and_from_wave_dirs(tmp_path: Path) -> None:
    placed = _place(tmp_path, {
        "apps/nextcloud.yaml": "a: 1\n",
        "apps/wave-1/nextcloud-db.yaml": "a: 1\n",
        "apps/wave-0/gitea.yaml": "a: 1\n",
        "apps/wave-0/kustomization.yaml": "resources: []\n",
        "apps/kustomization.yaml": "resources: []\n",
        "apps/README.md": "docs\n",
        "apps/vms/nextcloud.yaml": "a separate Flux tier: never touched\n",
        "apps/wave-x/gitea.yaml": "not a wave dir\n",
    })
    assert placed == {
        "apps/nextcloud.yaml": ("apps/wave-1/nextcloud.yaml", "nextcloud"),
        "apps/wave-1/nextcloud-db.yaml": ("apps/wave-0/nextcloud-db.yaml", "nextcloud-db"),
        "apps/wave-0/gitea.yaml": ("apps/wave-0/gitea.yaml", "gitea"),
    }


def test_unplaced_files_and_directories_stay_where_they_are(tmp_path: Path) -> None:
    placed = _place(tmp_path, {
        "apps/mystery.yaml": "a: 1\n",
        "apps/wave-2/mystery.yaml": "a: 1\n",
        "apps/wave-1/bundle/kustomization.yaml": "resources: []\n",
    })
    assert placed == {
        "apps/mystery.yaml": ("apps/mystery.yaml", None),
        "apps/wave-2/mystery.yaml": ("apps/wave-2/mystery.yaml", None),
        "apps/wave-1/bundle": ("apps/wave-1/bundle", None),
    }


def test_a_file_listed_by_two_extra_units_is_an_error(tmp_path: Path) -> None:
    units = (ExtraUnit("a", "gitea", files=("x.yaml",)), ExtraUnit("b", "gitea", files=("x.yaml",)))
    config = Config(extra_units=units)
    with pytest.raises(WaveBotError, match="'x.yaml' is listed by extra units 'a' and 'b'"):
        _place(tmp_path, {"apps/x.yaml": "a: 1\n"}, config)


def test_symlinked_app_file_is_refused(tmp_path: Path) -> None:
    write_files(tmp_path, {"apps/gitea.yaml": "a: 1\n"})
    (tmp_path / "apps" / "nextcloud.yaml").symlink_to("../../etc/passwd")
    with pytest.raises(WaveBotError, match="is a symbolic link") as exc:
        place_files(FsTree(str(tmp_path)), GRAPH, Config())
    assert exc.value.path == "apps/nextcloud.yaml"


def test_symlinked_wave_directory_is_refused(tmp_path: Path) -> None:
    write_files(tmp_path, {"outside/gitea.yaml": "a: 1\n", "apps/README.md": "x\n"})
    (tmp_path / "apps" / "wave-0").symlink_to(tmp_path / "outside")
    with pytest.raises(WaveBotError, match="is a symbolic link"):
        place_files(FsTree(str(tmp_path)), GRAPH, Config())


def test_an_unplaced_file_never_gets_overwritten_by_a_move(tmp_path: Path) -> None:
    # apps/wave-0/gitea.yml is gitea's; apps/wave-0/gitea.yaml is where... both are gitea's: distinct targets.
    placed = _place(tmp_path, {"apps/gitea.yml": "a: 1\n", "apps/wave-0/gitea.yaml": "a: 1\n"})
    assert placed["apps/gitea.yml"] == ("apps/wave-0/gitea.yml", "gitea")


def test_a_file_a_kustomization_uses_as_a_patch_is_never_a_unit(tmp_path: Path) -> None:
    # gitea-app.yaml would be gitea's by its name, but an overlay patches with it: moved into a wave as
    # a resource it would be applied as an object and the overlay would lose its patch.
    placed = _place(tmp_path, {
        "apps/gitea.yaml": "a: 1\n",
        "apps/gitea-app.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: gitea\n",
        "clusters/dev/kustomization.yaml": "resources: [../../apps/gitea.yaml]\npatches:\n"
                                           "  - path: ../../apps/gitea-app.yaml\n",
    })
    assert placed == {"apps/gitea.yaml": ("apps/wave-0/gitea.yaml", "gitea")}
