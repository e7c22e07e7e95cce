"""Adopting without a catalog: `.wave-bot.yaml` declares what each unit needs (`dependencies`)."""
from __future__ import annotations

from pathlib import Path

import pytest

from bot.config import load_config
from bot.errors import WaveBotError
from bot.layout.catalog import load_catalog
from bot.layout.waves import compute_waves
from bot.repo.worktree import FsTree

from conftest import service, write_files


def waves(root: Path, files: dict[str, str]) -> dict[str, int]:
    write_files(root, files)
    tree = FsTree(str(root))
    config = load_config(tree)
    return {name: node.wave for name, node in compute_waves(load_catalog(tree, config), config).nodes.items()}


def error(root: Path, files: dict[str, str]) -> WaveBotError:
    with pytest.raises(WaveBotError) as exc:
        waves(root, files)
    return exc.value


def test_units_declared_in_the_config_get_waves_without_a_catalog(tmp_path: Path) -> None:
    config = "dependencies:\n  postgres: []\n  sonarr: [postgres]\n  seerr:\n    - sonarr\n    - nextcloud-db\n"
    assert waves(tmp_path, {".wave-bot.yaml": config, "apps/x.yaml": "a: 1\n"}) == {
        "nextcloud-db": 0, "postgres": 0, "sonarr": 1, "seerr": 2}


def test_the_catalog_and_the_config_may_mix_but_not_define_one_unit_twice(tmp_path: Path) -> None:
    files = {"catalog/postgres.yaml": service("postgres"), ".wave-bot.yaml": "dependencies:\n  sonarr: [postgres]\n"}
    assert waves(tmp_path / "mixed", files) == {"postgres": 0, "sonarr": 1}
    exc = error(tmp_path / "twice", {**files, ".wave-bot.yaml": "dependencies:\n  sonarr: []\n  postgres: []\n"})
    assert exc.path == ".wave-bot.yaml" and exc.line == 3
    assert "dependencies declares 'postgres', which catalog/postgres.yaml:4 already defines" in exc.message
    assert exc.hint is not None and "remove 'postgres' from dependencies, or delete catalog/postgres.yaml" in exc.hint


def test_an_unknown_dependency_names_the_config_line_with_a_did_you_mean(tmp_path: Path) -> None:
    exc = error(tmp_path, {".wave-bot.yaml": "dependencies:\n  postgres: []\n  sonarr:\n    - postgress\n"})
    assert (exc.path, exc.line) == (".wave-bot.yaml", 4)
    assert "'sonarr' depends on 'postgress'" in exc.message and "did you mean 'postgres'?" in exc.message


def test_a_cycle_in_the_config_is_an_error(tmp_path: Path) -> None:
    exc = error(tmp_path, {".wave-bot.yaml": "dependencies:\n  a: [b]\n  b: [a]\n"})
    assert "a -> b -> a" in exc.message


@pytest.mark.parametrize("config, line, message", [
    ("dependencies: [a, b]\n", 1, "'dependencies' must be a mapping from each unit to the list of units it needs"),
    ("dependencies:\n  Sonarr: []\n", 2, "dependencies names 'Sonarr', which is not a DNS-1123 label"),
    ("dependencies:\n  sonarr: postgres\n", 2, "dependencies of 'sonarr' must be a list of unit names"),
    ("dependencies:\n  sonarr: [../etc]\n", 2, "dependency 1 of 'sonarr' must name a unit (a DNS-1123 label), "
     "got '../etc'"),
    ("dependencies:\n  sonarr:\n    - sonarr\n", 3, "'sonarr' depends on itself"),
    ("dependencie:\n  sonarr: []\n", 1, "unknown key 'dependencie' (did you mean 'dependencies'?)"),
])
def test_bad_declarations_name_the_line(tmp_path: Path, config: str, line: int, message: str) -> None:
    exc = error(tmp_path, {".wave-bot.yaml": config})
    assert (exc.path, exc.line, exc.message) == (".wave-bot.yaml", line, message)

