"""After a run as root, the workspace belongs to its owner again, as GitHub's hosted runners need.

The container runs as root in a workspace owned by the runner's user (uid 1001); a later step of the
same job runs as that user and must still be able to `git commit`.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import responses

from conftest import GIT_ENV, git
from support.actionkit import BRANCH, NEW_SERVICE, action_env, push_pr_branch, run_action
from support.fakes import SERVERS, TOKEN

RUNNER_UID = RUNNER_GID = 1001  # the `runner` user of GitHub's hosted runners
OTHER_UID = 1002

pytestmark = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                                reason="only root can give files away (the container action runs as root)")


def chown_tree(root: Path, uid: int, gid: int) -> None:
    os.chown(root, uid, gid, follow_symlinks=False)
    for directory, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            os.chown(os.path.join(directory, name), uid, gid, follow_symlinks=False)


def owners(root: Path) -> dict[str, tuple[int, int]]:
    found = {}
    for directory, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            path = Path(directory, name)
            info = path.lstat()
            found[str(path.relative_to(root))] = (info.st_uid, info.st_gid)
    return found


@pytest.fixture
def runner_home() -> Iterator[Path]:
    """A directory the runner's user can reach (pytest's tmp_path sits under a root-only 0700 dir)."""
    home = Path(tempfile.mkdtemp(prefix="wave-bot-runner-"))
    home.chmod(0o755)
    os.chown(home, RUNNER_UID, RUNNER_GID)
    yield home
    shutil.rmtree(home)


def test_a_run_as_root_gives_what_it_wrote_back_to_the_workspace_owner(
        example_repo: Path, tmp_path: Path, runner_home: Path) -> None:
    origin = example_repo.parent / "homelab-origin.git"
    workspace = runner_home / "workspace"
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        server = SERVERS["github"](rsps)
        _, head = push_pr_branch(example_repo, server.pulls[7], NEW_SERVICE, "onboard tautulli", git)
        subprocess.run(["git", "clone", "-q", str(origin), str(workspace)], check=True)
        git(workspace, "checkout", "-q", "--detach", head)
        chown_tree(workspace, RUNNER_UID, RUNNER_GID)
        # Not the run's to give away: a root-owned file from an earlier root step, another user's file.
        (workspace / "earlier-root-step.log").write_text("root wrote this before wave-bot ran\n")
        (workspace / "someone-else.txt").write_text("uid 1002's\n")
        os.chown(workspace / "someone-else.txt", OTHER_UID, OTHER_UID)

        code, log = run_action(action_env("github", server.pulls[7], tmp_path, workspace,
                                          api_url=server.api, token=TOKEN))
    assert code == 0, log

    found = owners(workspace)
    # What the run created or rewrote: the moved and generated files, the index, config, refs, objects.
    for path in [".git/index", ".git/config", ".git/HEAD", f".git/refs/heads/{BRANCH}", ".git/refs/heads/wave",
                 "apps/wave-1/tautulli.yaml", "apps/wave-1/kustomization.yaml"]:
        assert found[path] == (RUNNER_UID, RUNNER_GID), path
    assert found["earlier-root-step.log"] == (0, 0)
    assert found["someone-else.txt"] == (OTHER_UID, OTHER_UID)
    assert [p for p, owner in found.items() if owner[0] == 0] == ["earlier-root-step.log"]
    assert "back to the workspace's owner 1001:1001" in log

    # The job's next step, as the runner's user: commit on the branch the bot checked out.
    (workspace / "apps" / "wave-1" / "tautulli.yaml").write_text("# edited by a later step\n")
    env = GIT_ENV | {"PATH": os.environ["PATH"], "HOME": str(runner_home)}
    for args in (["add", "-A", "apps"], ["commit", "-q", "-m", "a later step"]):
        result = subprocess.run(["git", *args], cwd=workspace, env=env, user=RUNNER_UID, group=RUNNER_GID,
                                extra_groups=[], capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
