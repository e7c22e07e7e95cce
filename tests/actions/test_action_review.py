"""`wave-bot run` in review mode: a pull request on a repository without a catalog gets one comment
naming the claim its change makes Flux delete, and nothing is pushed."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import responses

from bot.actions import run as action

from conftest import git
from support.actionkit import action_env, push_pr_branch, run_action
from support.fakes import SERVERS, TOKEN, ForgeServer
from support.ksrepo import CHILD, ks_repo_files


@pytest.fixture(params=["github", "gitea"])
def server(request: pytest.FixtureRequest) -> Iterator[tuple[str, ForgeServer]]:
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        yield request.param, SERVERS[request.param](rsps)


def test_a_rename_that_loses_a_claim_gets_one_comment_naming_it_and_no_commit(
    server: tuple[str, ForgeServer], make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    platform, forge = server
    work = make_repo(ks_repo_files(), name="home")
    origin = tmp_path / "home-origin.git"
    _, head = push_pr_branch(work, forge.pulls[7], {"kubernetes/apps/plex.yaml": CHILD.format(name="plex-app",
                                                                                              app="plex")},
                             "rename plex", git)
    workspace = tmp_path / "workspace"
    git(tmp_path, "clone", "-q", str(origin), str(workspace))
    git(workspace, "checkout", "-q", "--detach", head)
    before = git(origin, "rev-parse", "--all")

    code, log = run_action(action_env(platform, forge.pulls[7], tmp_path, workspace, api_url=forge.api, token=TOKEN))

    assert code == 1, log  # an error: the default fail-on
    assert git(origin, "rev-parse", "--all") == before  # review mode pushes nothing
    assert [w.split()[0] for w in forge.writes] == ["POST"]
    (body,) = forge.bodies()
    assert body.startswith(action.MARKER)
    assert "Review mode (no catalog directory" in body
    assert "PersistentVolumeClaim media/plex-config" in body
    assert "kustomization-renamed" in body and "deletionPolicy: Orphan" in body
    assert "#### Waves" not in body and "Wave graph" not in body
