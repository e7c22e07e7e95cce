"""Review mode's next safe step, followed literally merge by merge, judged by tests/support/fluxsim.py.

A repository of the cluster-template shape (no catalog, no configuration): the cluster's root applies
`cluster-apps`, whose `spec.patches` give every child Kustomization `deletionPolicy:
WaitForTermination`, and one child Kustomization per app; `plex` owns a PVC. Renaming `plex` or
deleting it is an error naming the claim, and Flux (the simulation) does delete it. The fix's first
step, pasted where it says, deletes nothing; the change made after it is deployed deletes no claim.
"""
from __future__ import annotations

import io
import json
import subprocess
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from bot.cli import main

from conftest import git, write_files
from support.fluxsim import Rid, simulate
from support.ksrepo import ks_repo_files

FLUX = "kustomize.toolkit.fluxcd.io"
CLAIM = Rid("", "PersistentVolumeClaim", "media", "plex-config")
def _files_at(repo: Path, rev: str) -> dict[str, bytes]:
    names = git(repo, "ls-tree", "-r", "--name-only", "-z", rev).split("\0")
    return {n: subprocess.run(["git", "show", f"{rev}:{n}"], cwd=repo, capture_output=True, check=True).stdout
            for n in names if n}


def _check(repo: Path, base: str) -> tuple[int, dict[str, Any]]:
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        code = main(["check", str(repo), "--base", base, "--format", "json"])
    return code, json.loads(out.getvalue())


def _commit(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)
    return git(repo, "rev-parse", "HEAD").strip()


def _paste(repo: Path, fix: str) -> None:
    """Step 1 of the fix, as a user pastes it: the lines under '# 1.' into the file it names."""
    lines = fix.splitlines()
    head = lines[0] if "in " in lines[0] and ", " in lines[0] else lines[1]
    target = head.split("in ", 1)[1].split(",", 1)[0]
    body = []
    for line in lines[1:]:
        if line.startswith("# 2."):
            break
        if not line.startswith("#"):
            body.append(line)
    path = repo / target
    text = path.read_text()
    if body[0].startswith("    - patch:"):  # an item of the parent's spec.patches, the file's last list
        assert text.rstrip().splitlines()[-1].startswith("        "), "spec.patches must end the file"
        path.write_text(text.rstrip("\n") + "\n" + "\n".join(body) + "\n")
    else:  # `spec:` and the one field under it
        assert body[0] == "spec:"
        path.write_text(text.replace("\nspec:\n", "\nspec:\n" + "\n".join(body[1:]) + "\n", 1))


@pytest.mark.parametrize("change", ["rename", "delete"])
def test_the_safe_step_through_the_parents_patches_deletes_no_claim(
    change: str, tmp_path: Path, make_repo: Any
) -> None:
    repo = make_repo(ks_repo_files())
    deployed = git(repo, "rev-parse", "HEAD").strip()
    head = ks_repo_files("plex-app" if change == "rename" else None)

    # The change as written: an error naming the claim, and Flux does delete it.
    (repo / "kubernetes/apps/plex.yaml").unlink()
    write_files(repo, head)
    naive = _commit(repo, change)
    code, report = _check(repo, deployed)
    assert code == 1
    errors = [f for f in report["findings"] if f["severity"] == "error"]
    assert [f["resource"] for f in errors] == ["PersistentVolumeClaim media/plex-config"]
    assert errors[0]["code"] == ("kustomization-renamed" if change == "rename" else "resource-removed")
    assert CLAIM in simulate(_files_at(repo, deployed), _files_at(repo, naive)).deleted
    fix = errors[0]["fix"]
    assert "clusters/base/apps.yaml, append to the parent's spec.patches" in fix

    # Step 1, literally: back to what is deployed, then only the pasted patch.
    git(repo, "reset", "-q", "--hard", deployed)
    _paste(repo, fix)
    step_1 = _commit(repo, "orphan plex first")
    code, report = _check(repo, deployed)
    assert (code, [f for f in report["findings"] if f["severity"] == "error"]) == (0, [])
    assert simulate(_files_at(repo, deployed), _files_at(repo, step_1)).deleted == set()

    # Step 2, once step 1 is deployed: the change itself.
    (repo / "kubernetes/apps/plex.yaml").unlink()
    write_files(repo, head)
    step_2 = _commit(repo, change)
    code, report = _check(repo, step_1)
    assert (code, [f for f in report["findings"] if f["severity"] == "error"]) == (0, [])
    deleted = simulate(_files_at(repo, step_1), _files_at(repo, step_2)).deleted
    assert CLAIM not in deleted
    assert deleted <= {Rid(FLUX, "Kustomization", "flux-system", "plex"), Rid("apps", "Deployment", "media", "plex")}


def test_a_deliberate_deletion_is_accepted_with_wave_bot_accept(make_repo: Any) -> None:
    repo = make_repo(ks_repo_files())
    deployed = git(repo, "rev-parse", "HEAD").strip()
    (repo / "kubernetes/apps/plex.yaml").unlink()
    _commit(repo, "retire plex")
    assert _check(repo, deployed)[0] == 1

    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        code = main(["accept", "PersistentVolumeClaim media/plex-config", "--by", "alice", "--base", deployed,
                     str(repo)])
    assert code == 0, out.getvalue()
    code, report = _check(repo, deployed)
    assert (code, [f for f in report["findings"] if f["severity"] == "error"]) == (0, [])
    (accepted,) = [f for f in report["findings"] if f.get("resource") == "PersistentVolumeClaim media/plex-config"]
    assert accepted["severity"] == "info" and accepted["message"].startswith("accepted by alice")
