from __future__ import annotations

from pathlib import Path

import pytest

from bot.config import Config
from bot.errors import WaveBotError
from bot.layout.catalog import load_catalog, parse_service
from bot.repo.worktree import FsTree

from conftest import service, write_files


def test_service_from_metadata_and_spec_with_mapping_and_string_items() -> None:
    data = b"""apiVersion: catalog.example.dev/v1alpha1
kind: ServiceDefinition
metadata:
  name: sonarr
spec:
  dependencies:
    - to: qbittorrent
      reason: download client
    - jackett
    - to: qbittorrent
"""
    svc = parse_service(data, "catalog/sonarr.yaml")
    assert svc.name == "sonarr" and svc.line == 4
    assert [(d.target, d.line) for d in svc.dependencies] == [("qbittorrent", 7), ("jackett", 9)]


def test_service_from_top_level_name_and_dependencies() -> None:
    svc = parse_service(b"name: seerr\ndependencies: [sonarr, {to: radarr}]\n", "catalog/seerr.yaml")
    assert svc.name == "seerr"
    assert [d.target for d in svc.dependencies] == ["sonarr", "radarr"]


def test_service_without_dependencies() -> None:
    assert parse_service(b"metadata: {name: plex}\nspec: {}\n", "p.yaml").dependencies == ()
    assert parse_service(b"metadata: {name: plex}\nspec:\n  dependencies:\n", "p.yaml").dependencies == ()


def test_catalog_reads_yaml_files_only_and_sorts_by_name(tmp_path: Path) -> None:
    write_files(tmp_path, {
        "catalog/b.yaml": service("b"),
        "catalog/a.yml": service("a", "b"),
        "catalog/render.py": "print('never executed, never read')\n",
        "catalog/README.md": "# catalog\n",
        "catalog/old/ignored.yaml": "not: [valid",
    })
    names = [s.name for s in load_catalog(FsTree(str(tmp_path)), Config())]
    assert names == ["a", "b"]


def test_catalog_file_of_another_kind_is_an_error() -> None:
    with pytest.raises(WaveBotError, match="has kind 'ConfigMap'; every file in the catalog must be a Service"):
        parse_service(b"kind: ConfigMap\nmetadata: {name: x}\n", "catalog/x.yaml")


def test_empty_catalog_file_is_an_error() -> None:
    with pytest.raises(WaveBotError, match="is empty; expected a ServiceDefinition"):
        parse_service(b"", "catalog/x.yaml")


def test_dependencies_that_are_not_a_list() -> None:
    with pytest.raises(WaveBotError, match="dependencies must be a list") as exc:
        parse_service(b"name: x\ndependencies: y\n", "catalog/x.yaml")
    assert exc.value.line == 2


def test_symlinked_catalog_file_is_refused_without_reading_it(tmp_path: Path) -> None:
    write_files(tmp_path, {"catalog/a.yaml": service("a")})
    (tmp_path / "catalog" / "secret.yaml").symlink_to("/proc/self/environ")
    with pytest.raises(WaveBotError, match="is a symbolic link") as exc:
        load_catalog(FsTree(str(tmp_path)), Config())
    assert exc.value.path == "catalog/secret.yaml"


def test_symlinked_catalog_directory_is_refused(tmp_path: Path) -> None:
    write_files(tmp_path, {"elsewhere/a.yaml": service("a")})
    (tmp_path / "catalog").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(WaveBotError, match="is a symbolic link"):
        load_catalog(FsTree(str(tmp_path)), Config())
