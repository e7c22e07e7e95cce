"""The per-forge facts: detection, default API, commit identity, and the registry's error."""
from __future__ import annotations

import pytest

from bot.actions.forge import FORGES
from bot.actions.forge.platforms import PLATFORMS, detect, in_actions, platform
from bot.errors import WaveBotError


def test_every_platform_has_an_implementation() -> None:
    assert set(PLATFORMS) == set(FORGES)


def test_gitea_is_told_by_its_marker_and_github_is_the_default() -> None:
    assert detect({"GITEA_ACTIONS": "true"}).name == "gitea"
    assert detect({"GITHUB_ACTIONS": "true"}).name == "github"


def test_an_unknown_platform_names_the_valid_ones() -> None:
    with pytest.raises(WaveBotError, match="unknown forge platform 'gitlab'") as exc:
        platform("gitlab")
    assert exc.value.hint == "use one of: gitea, github"


def test_the_commit_identity_is_the_forges() -> None:
    assert platform("gitea").email("https://gitea.home.example") == "flux-wave-bot@noreply.gitea.home.example"
    assert platform("github").committer == "github-actions[bot]"


@pytest.mark.parametrize("env", [{"GITHUB_ACTIONS": "true"}, {"GITEA_ACTIONS": "true"}, {"GITHUB_EVENT_PATH": "/e"}])
def test_any_runner_variable_means_actions(env: dict[str, str]) -> None:
    assert in_actions(env)


def test_no_runner_variable_means_a_local_run() -> None:
    assert not in_actions({"GITHUB_ACTIONS": "false", "HOME": "/root"})
