"""The bot follows the same safe steps as `apply --base`: it commits the protection, not the move."""
from __future__ import annotations

from pathlib import Path

import responses

from conftest import git
from support.actionkit import action_env, push_pr_branch, run_action
from support.fakes import SERVERS, TOKEN
from support.fluxsim import PRUNE


def test_the_bot_commits_the_annotation_and_keeps_plex_where_it_is(example_repo: Path, tmp_path: Path) -> None:
    platform = "github"
    origin = example_repo.parent / "homelab-origin.git"
    catalog = (example_repo / "catalog/plex.yaml").read_text() + "  dependencies:\n    - to: sonarr\n"
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        server = SERVERS[platform](rsps)
        _, head = push_pr_branch(example_repo, server.pulls[7], {"catalog/plex.yaml": catalog},
                                 "plex needs sonarr", git)
        workspace = tmp_path / "workspace"
        git(tmp_path, "clone", "-q", str(origin), str(workspace))
        git(workspace, "checkout", "-q", "--detach", head)
        env = action_env(platform, server.pulls[7], tmp_path, workspace, api_url=server.api, token=TOKEN,
                         event="pull_request", action=None)
        code, log = run_action(env)

    assert code == 0, log
    pushed = git(origin, "rev-parse", "refs/heads/" + server.pulls[7]["head"]["ref"]).strip()
    assert pushed != head
    assert git(origin, "diff", "--name-status", head, pushed).split() == ["M", "apps/wave-0/plex.yaml"]
    assert f"+    {PRUNE}: disabled" in git(origin, "diff", head, pushed)
    (body,) = server.bodies()
    assert "`move-held`" in body
