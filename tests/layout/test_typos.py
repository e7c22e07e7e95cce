"""Typos and orphans (issue 18, item 6): a misspelt leaf is caught, and the advice for what is left
unplaced never names a file another node owns, never drops `.sops`, never makes a service its own
dependency. Each is tried as a user would: the CLI on a copy of the example, the advice followed."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bot.cli import main

from conftest import git


def _plan(capsys: pytest.CaptureFixture[str], repo: Path) -> tuple[int, dict[str, Any], str]:
    capsys.readouterr()
    code = main(["plan", str(repo), "--format", "json"])
    out = capsys.readouterr()
    return code, json.loads(out.out), out.err


def _depend(repo: Path, service: str, old: str, new: str) -> None:
    path = repo / f"catalog/{service}.yaml"
    path.write_text(path.read_text().replace(f"to: {old}\n", f"to: {new}\n"))


def test_a_misspelt_leaf_is_an_error_naming_the_real_one(example_repo: Path, capsys: pytest.CaptureFixture[str]
                                                         ) -> None:
    _depend(example_repo, "nextcloud", "nextcloud-db", "nexcloud-db")  # matches *-db: a leaf, silently
    line = (example_repo / "catalog/nextcloud.yaml").read_text().splitlines().index("    - to: nexcloud-db") + 1
    code, out, err = _plan(capsys, example_repo)
    assert code == 2
    assert out["error"]["path"] == "catalog/nextcloud.yaml" and out["error"]["line"] == line
    assert out["error"]["message"] == ("'nextcloud' depends on 'nexcloud-db', which has no ServiceDefinition and no "
                                       "app files (did you mean 'nextcloud-db'?)")


def test_a_leaf_named_after_its_service_needs_no_files(example_repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # keycloak -> keycloak-db: no files yet, close to 'keycloak', and exactly what leaf_patterns are for.
    code, out, _ = _plan(capsys, example_repo)
    assert code == 0 and out["waves"]["keycloak-db"] == 0


def test_an_unknown_dependency_never_suggests_the_service_itself(
    example_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _depend(example_repo, "nextcloud", "nextcloud-db", "nextcloud-pg")
    code, out, _ = _plan(capsys, example_repo)
    assert code == 2 and "which has no ServiceDefinition" in out["error"]["message"]
    assert "did you mean 'nextcloud'?" not in out["error"]["message"]
    assert "did you mean 'nextcloud-db'?" in out["error"]["message"]


def test_an_orphaned_file_is_not_told_to_take_another_node_s_name(
    example_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (example_repo / "catalog/pihole.yaml").unlink()
    _, out, _ = _plan(capsys, example_repo)
    (finding,) = [f for f in out["findings"] if f["code"] == "unplaced-file"]
    assert finding["path"] == "apps/wave-0/pihole.yaml"
    assert "plex" not in finding["message"] and "rename" not in finding["message"]
    assert finding["message"].endswith("To place it, add the ServiceDefinition catalog/pihole.yaml below, or list it "
                                       "in an extra unit's files: in .wave-bot.yaml")


def test_a_misspelt_sops_file_is_renamed_keeping_sops_and_the_rename_places_it(
    example_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    git(example_repo, "mv", "apps/wave-0/nextcloud-db-app.sops.yaml", "apps/wave-0/nexcloud-db-app.sops.yaml")
    _, out, _ = _plan(capsys, example_repo)
    (finding,) = [f for f in out["findings"] if f["code"] == "unplaced-file"]
    assert "rename it after the node it belongs to (nextcloud-db-app.sops.yaml)" in finding["message"]
    git(example_repo, "mv", "apps/wave-0/nexcloud-db-app.sops.yaml", "apps/wave-0/nextcloud-db-app.sops.yaml")
    code, out, _ = _plan(capsys, example_repo)
    assert code == 0 and not [f for f in out["findings"] if f["severity"] != "info"]
