"""`.wave-bot-accept.yaml`: a deliberate deletion passes, named, with who accepted it; nothing else does."""
from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from bot.cli import main

from conftest import git

ACCEPT = """accept:
  - resource: Namespace pihole
    by: alice
    reason: pihole is retired
  - resource: PersistentVolumeClaim pihole/pihole-data
    by: alice
"""


def check(repo: Path) -> tuple[int, dict[str, dict[str, str]], str]:
    """check's exit code, its findings by resource for the codes that matter here, and stderr."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["check", str(repo), "--base", "HEAD", "--format", "json"])
    found = {f.get("resource", ""): f for f in json.loads(out.getvalue() or "{}").get("findings", [])
             if f["code"] in ("resource-removed", "stale-acceptance")}
    return code, found, err.getvalue()


def decommission_pihole(repo: Path) -> None:
    git(repo, "rm", "-q", "catalog/pihole.yaml", "apps/wave-0/pihole.yaml")
    (repo / "apps/wave-0/kustomization.yaml").write_text(
        (repo / "apps/wave-0/kustomization.yaml").read_text().replace("  - pihole.yaml\n", ""))


def test_decommissioning_a_stateful_service_needs_each_stateful_object_accepted(example_repo: Path) -> None:
    decommission_pihole(example_repo)
    code, found, _ = check(example_repo)
    assert code == 1 and found["PersistentVolumeClaim pihole/pihole-data"]["severity"] == "error"

    # Accepting the Namespace does not accept the claim in it: each object is named.
    (example_repo / ".wave-bot-accept.yaml").write_text(ACCEPT.split("  - resource: Persistent")[0])
    code, found, _ = check(example_repo)
    assert code == 1 and found["PersistentVolumeClaim pihole/pihole-data"]["severity"] == "error"
    assert found["Namespace pihole"]["severity"] == "info"

    (example_repo / ".wave-bot-accept.yaml").write_text(ACCEPT)
    code, found, _ = check(example_repo)

    assert code == 0
    pvc = found["PersistentVolumeClaim pihole/pihole-data"]
    assert pvc["severity"] == "info"
    assert "fix" not in pvc or pvc["fix"] is None  # accepted: there is nothing left to fix
    assert pvc["message"].startswith("accepted by alice (.wave-bot-accept.yaml:5), so it does not block: ")
    assert found["Namespace pihole"]["message"].startswith(
        "accepted by alice (.wave-bot-accept.yaml:2: pihole is retired), so it does not block: ")


def test_accepting_a_deletion_that_loses_nothing_leaves_its_finding_as_it_is(example_repo: Path) -> None:
    # The Service's deletion is info already: the entry matches it (not stale) but claims nothing.
    decommission_pihole(example_repo)
    (example_repo / ".wave-bot-accept.yaml").write_text("accept:\n  - resource: Service pihole/pihole\n    by: bob\n")
    _, found, _ = check(example_repo)
    # (a stale-acceptance of the Service would take its place in `found`)
    assert (found["Service pihole/pihole"]["code"], found["Service pihole/pihole"]["severity"]) == (
        "resource-removed", "info")
    assert found["Service pihole/pihole"]["message"] == (
        "apps/wave-0/pihole.yaml is deleted in this change, so apps-wave-0 deletes Service pihole/pihole when it "
        "reconciles")


def test_an_acceptance_that_matches_nothing_is_reported(example_repo: Path) -> None:
    (example_repo / ".wave-bot-accept.yaml").write_text(ACCEPT)
    code, found, _ = check(example_repo)
    assert found["Namespace pihole"]["severity"] == "warning"
    assert (found["Namespace pihole"]["path"], found["Namespace pihole"]["line"]) == (".wave-bot-accept.yaml", 2)
    assert found["Namespace pihole"]["message"] == (
        ".wave-bot-accept.yaml:2 accepts the deletion of Namespace pihole (by alice), but this change deletes no "
        "such object: remove the entry (its deletion has merged, or the name is wrong)")


@pytest.mark.parametrize(("text", "line", "message"), [
    ("accept:\n  - resource: Namespace pihole\n", 2,
     "accept item 1 (Namespace pihole) has no by: say who accepts this deletion"),
    ("accept:\n  - resource: Namespace pihole\n    by: ''\n", 2,
     "accept item 1 (Namespace pihole) has no by: say who accepts this deletion"),
    ("accept:\n  - resource: '*'\n    by: bob\n", 2,
     "accept item 1: resource must name one object as the findings do (`[group/]Kind [namespace/]name`), not '*'"),
    ("accept:\n  - resource: Namespace pihole\n    by: bob\n    all: true\n", 2,
     "accept item 1 must be a mapping of resource, by and reason; unknown key(s): all"),
    ("accept:\n  - Namespace pihole\n", 2, "accept item 1 must be a mapping of resource, by and reason"),
    ("everything: true\n", 1, "must hold one key, accept: a list of the objects whose deletion is accepted"),
    ("accept:\n  - resource: Namespace pihole\n    by: bob\n    reason: [a]\n", 2,
     "accept item 1 (Namespace pihole): reason must be text"),
    ("accept:\n  - resource: Namespace pihole\n    by: bob\n  - resource: Namespace pihole\n    by: eve\n", 4,
     "accept item 2: Namespace pihole is accepted twice"),
    ("accept: [\n", 2, "invalid YAML: while parsing a flow node: did not find expected node content"),
])
def test_a_bad_acceptance_file_is_one_clear_error(example_repo: Path, text: str, line: int, message: str) -> None:
    (example_repo / ".wave-bot-accept.yaml").write_text(text)
    code, _, err = check(example_repo)
    assert code == 2
    assert err.startswith(f"wave-bot: error: .wave-bot-accept.yaml:{line}: {message}\n")


def test_an_acceptance_file_that_is_a_directory_is_refused(example_repo: Path) -> None:
    (example_repo / ".wave-bot-accept.yaml").mkdir()
    code, _, err = check(example_repo)
    assert code == 2
    assert err.startswith("wave-bot: error: .wave-bot-accept.yaml: is not a regular file")
