"""What a forge is to the bot, whichever forge it is: the pull request, the comment, the protocol.

The records every implementation returns and the one algorithm they share for a comment's length
(`fit_body`). The implementations and the package's registry import this; it imports none of them.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol

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
