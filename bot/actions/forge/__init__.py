"""The forge layer: the only code that talks to a forge API (GitHub, Gitea).

The bot needs two things from a forge: the pull request it runs for, and one sticky comment on it that
each run rewrites in place. `make_forge` picks the implementation; both keep to the `Forge` protocol,
and every failure reaches the caller as a `WaveBotError` (exit code 1) that says which call failed and
what fixes it. The token never appears in a message, a log line or a repr.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol

from bot.errors import WaveBotError

Sleep = Callable[[float], None]

_CODE_FENCE = "```"


@dataclass(frozen=True)
class PullRequest:
    number: int
    head_ref: str  # branch name
    head_sha: str
    head_repo: str | None  # "owner/name"; None when the head repository was deleted
    base_ref: str
    base_sha: str
    base_repo: str  # "owner/name"
    html_url: str

    @property
    def is_fork(self) -> bool:
        """Whether the head lives outside the base repository (a deleted head repository counts)."""
        return self.head_repo is None or self.head_repo.casefold() != self.base_repo.casefold()


@dataclass(frozen=True)
class CommentResult:
    action: Literal["created", "updated", "unchanged"]
    id: int
    url: str  # the comment's HTML URL


class Forge(Protocol):
    """A forge seen from one repository."""

    name: str  # "github" | "gitea"
    max_comment_chars: int

    def pull_request(self, number: int) -> PullRequest:
        """The pull request `number` of the repository."""

    def upsert_comment(self, number: int, marker: str, body: str, overflow_note: str = "") -> CommentResult:
        """Make the bot's one comment carrying `marker` on PR `number` read `body`.

        Creates it when absent, edits it only when the text differs, never makes a second one. A
        comment counts as the bot's only when the bot's own identity wrote it: a human who pastes the
        marker never gets their comment overwritten. A `body` longer than `max_comment_chars` is cut
        at a line boundary and ends with `overflow_note`.
        """


def fit_body(body: str, marker: str, overflow_note: str, limit: int) -> str:
    """`body` as posted: always carrying `marker`, and within `limit` characters.

    A body that fits is kept as it is (with the marker put in front when it lacks one). A longer
    one is cut at the last line break that fits, a code fence left open by the cut is closed (so
    the rest of the comment does not render as code), and `overflow_note` is appended.
    """
    if not marker:
        raise ValueError("the marker must not be empty")
    text = body if marker in body else f"{marker}\n{body}"
    if len(text) <= limit:
        return text

    tail = f"\n\n{overflow_note}" if overflow_note else ""
    fence = f"\n{_CODE_FENCE}"
    budget = limit - len(tail) - len(fence)
    # The marker must survive the cut whole; when the caller put it late in the body, lead with it.
    at = text.find(marker)
    if at + len(marker) <= budget:
        lead, keep_from = "", at + len(marker)
    else:
        lead, keep_from = f"{marker}\n", 1
        text = text.replace(marker, "")
        budget -= len(lead)
    if budget < 0:
        raise ValueError(f"the marker and overflow note alone exceed the {limit}-character limit")

    cut = text.rfind("\n", 0, budget + 1)
    if cut < keep_from:  # no line break fits after the marker: cut inside the line
        cut = budget
    kept = text[:cut]
    if kept.count(_CODE_FENCE) % 2:
        kept += fence
    return f"{lead}{kept}{tail}"


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
    factory = FORGES.get(platform)
    if factory is None:
        raise WaveBotError(
            f"unknown forge platform {platform!r}",
            hint=f"use one of: {', '.join(sorted(FORGES))}",
        )
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
