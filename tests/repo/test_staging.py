"""apply stages everything it writes, so a plain `git commit` records the whole layout."""
from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

from bot.cli import main

from conftest import git

EXTRA = """apiVersion: catalog.homelab.dev/v1alpha1
kind: ServiceDefinition
metadata:
  name: extra
spec:
  dependencies:
    - to: seerr
"""
CONFIGMAP = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n  namespace: default\n"


def run(*argv: str) -> tuple[int, str]:
    err = io.StringIO()
    with redirect_stdout(io.StringIO()), redirect_stderr(err):
        code = main(list(argv))
    return code, err.getvalue()


def new_deepest_wave(repo: Path) -> None:
    """A service above seerr: wave 3, which needs new files and edits of the overlays."""
    (repo / "catalog/extra.yaml").write_text(EXTRA)
    (repo / "apps/wave-2/extra.yaml").write_text(CONFIGMAP)
    git(repo, "add", "catalog/extra.yaml", "apps/wave-2/extra.yaml")


def test_apply_stages_what_it_writes_and_a_plain_commit_passes_check_in_a_clone(
        example_repo: Path, tmp_path: Path) -> None:
    new_deepest_wave(example_repo)

    code, _ = run("apply", str(example_repo), "--fix-overlays")

    assert code == 0
    assert git(example_repo, "status", "--porcelain", "--untracked-files=all").splitlines() == [
        "A  apps/wave-3/extra.yaml", "A  apps/wave-3/kustomization.yaml", "A  catalog/extra.yaml",
        "A  clusters/base/apps-wave-3.yaml", "M  clusters/base/kustomization.yaml",
        "M  clusters/dev/kustomization.yaml", "M  clusters/prod/kustomization.yaml",
        "A  clusters/prod/patches/apps-wave-3-sops.yaml",
    ]
    git(example_repo, "commit", "-qm", "extra")  # no -a
    git(tmp_path, "clone", "-q", str(example_repo), "clone")
    assert run("check", str(tmp_path / "clone"))[0] == 0


def test_check_names_the_layout_files_that_are_not_staged(example_repo: Path) -> None:
    new_deepest_wave(example_repo)
    run("apply", str(example_repo), "--fix-overlays")
    # What pre-commit sees when the changes to tracked files are not staged: they are stashed away.
    git(example_repo, "reset", "-q", "--", "clusters", "apps/wave-3")
    git(example_repo, "stash", "-q", "--keep-index")

    code, err = run("check", str(example_repo))

    assert code == 1
    listed = ("apps/wave-3/extra.yaml apps/wave-3/kustomization.yaml clusters/base/apps-wave-3.yaml "
              "clusters/prod/patches/apps-wave-3-sops.yaml")
    assert (f"wave-bot: 4 file(s) of the layout have changes that are not staged, and a commit (and pre-commit) "
            f"sees only what is staged: {listed}. Stage them: git add -A -- {listed}\n") in err
