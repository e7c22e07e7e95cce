"""The forge layer: the only code that talks to a forge API (GitHub, Gitea).

The bot needs two things from a forge: the pull request it runs for, and one sticky comment on it that
each run rewrites in place. `make_forge` picks the implementation from `FORGES`; both keep to the
`Forge` protocol (`api.py`, which they import and which imports neither). Every API failure reaches
the caller as a `WaveBotError` with `RUN_ERROR` (exit code 4) that says which call failed and what
fixes it; a bad argument to `make_forge` is an input error (exit code 2). The token never appears in
a message, a log line or a repr.
"""
from __future__ import annotations

import time
from collections.abc import Callable

from bot.actions.forge.api import CommentResult, Forge, PullRequest, Sleep, fit_body
from bot.actions.forge.platforms import platform as known
from bot.errors import WaveBotError


def _github(api_url: str, repository: str, token: str, sleep: Sleep, bot_login: str | None) -> Forge:
    from bot.actions.forge.github import GitHubForge

    return GitHubForge(api_url=api_url, repository=repository, token=token, sleep=sleep, bot_login=bot_login)


def _gitea(api_url: str, repository: str, token: str, sleep: Sleep, bot_login: str | None) -> Forge:
    from bot.actions.forge.gitea import GiteaForge

    return GiteaForge(api_url=api_url, repository=repository, token=token, sleep=sleep, bot_login=bot_login)


# Implementations import lazily: PyGithub is slow to import and only one of them is ever used.
FORGES: dict[str, Callable[[str, str, str, Sleep, str | None], Forge]] = {
    "github": _github,
    "gitea": _gitea,
}


def make_forge(
    platform: str,
    *,
    api_url: str,
    repository: str,
    token: str,
    sleep: Sleep = time.sleep,
    bot_login: str | None = None,
) -> Forge:
    """The forge for `platform`, acting on `repository` ("owner/name") through `api_url` with `token`.

    `bot_login` names the account the token comments as, for tokens whose identity cannot be looked
    up (a GitHub App's installation token comments as "<app-slug>[bot]"); by default it is looked up.
    """
    factory = FORGES[known(platform).name]  # an unknown name: the registry's error, listing the valid ones
    owner, _, name = repository.partition("/")
    if not owner or not name or "/" in name:
        raise WaveBotError(
            f"repository must be given as owner/name, not {repository!r}",
            hint="on GitHub and Gitea Actions pass ${{ github.repository }}",
        )
    if not token:
        raise WaveBotError(
            "no API token given",
            hint="pass the job's token (${{ secrets.GITHUB_TOKEN }}, or ${{ secrets.GITEA_TOKEN }} on Gitea)",
        )
    return factory(api_url, repository, token, sleep, bot_login)


__all__ = ["FORGES", "CommentResult", "Forge", "PullRequest", "Sleep", "fit_body", "make_forge"]
