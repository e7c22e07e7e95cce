"""GitHub (and GitHub Enterprise Server), through PyGithub."""
from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any, TypeVar

import requests
from github import Auth, Github, GithubException
from github.IssueComment import IssueComment

from bot import __version__
from bot.actions.forge._base import ApiFailure, Call, Comment, StickyForge, redact
from bot.actions.forge.api import PullRequest, Sleep

T = TypeVar("T")

# Who a workflow's GITHUB_TOKEN comments as; it may not read GET /user to say so itself.
ACTIONS_BOT = "github-actions[bot]"
_INTEGRATION_DENIED = "resource not accessible by integration"
_TIMEOUT_SECONDS = 30
_PER_PAGE = 100  # the most GitHub allows: fewest pages to walk


class _RedactingFilter(logging.Filter):
    """Removes tokens from PyGithub's debug log, which prints response bodies as they came."""

    def __init__(self) -> None:
        super().__init__()
        self.tokens: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        clean = text
        for token in self.tokens:
            clean = redact(clean, token)
        if clean != text:
            record.msg, record.args = clean, None
        return True


_REDACTING = _RedactingFilter()
# Filters on a logger see only the records logged there, not those of its children: so this one.
logging.getLogger("github.Requester").addFilter(_REDACTING)


def _message(data: Any) -> str:
    """GitHub's error text: `message`, plus the `errors` entries of a 422."""
    if not isinstance(data, dict):
        return str(data or "").strip()[:300]
    text = str(data.get("message") or "")
    errors = data.get("errors") or []
    details = [str(e.get("message") or e.get("code") or "") if isinstance(e, dict) else str(e) for e in errors]
    details = [d for d in details if d]
    return f"{text} ({'; '.join(details)})" if details else text


def _api(request: Callable[[], T]) -> T:
    """`request()` with PyGithub's and requests' exceptions turned into ApiFailure."""
    try:
        return request()
    except GithubException as exc:
        raise ApiFailure(exc.status, _message(exc.data), exc.headers) from None
    except requests.Timeout:
        raise ApiFailure(None, "timed out") from None
    except requests.RequestException as exc:
        raise ApiFailure(None, f"connection failed ({type(exc).__name__})") from None


class GitHubForge(StickyForge):
    name = "github"
    title = "GitHub"
    max_comment_chars = 65536  # "Body is too long (maximum is 65536 characters)"
    token_hint = "pass ${{ secrets.GITHUB_TOKEN }}, or a personal access token that has not expired"

    def __init__(
        self,
        *,
        api_url: str,
        repository: str,
        token: str,
        sleep: Sleep = time.sleep,
        clock: Callable[[], float] = time.time,
        bot_login: str | None = None,
    ) -> None:
        super().__init__(repository, token, sleep=sleep, clock=clock, bot_login=bot_login)
        _REDACTING.tokens.add(token)
        # retry=None: PyGithub's own GithubRetry can sleep for minutes; ours is bounded and testable.
        # No throttling between requests either: a run makes a handful of them.
        self._github = Github(
            auth=Auth.Token(token),
            base_url=api_url.rstrip("/"),
            timeout=_TIMEOUT_SECONDS,
            user_agent=f"flux-wave-bot/{__version__}",
            per_page=_PER_PAGE,
            retry=None,
            seconds_between_requests=None,
            seconds_between_writes=None,
            lazy=True,
        )
        self._repo = self._github.get_repo(repository)
        self._handles: dict[int, IssueComment] = {}  # PyGithub objects behind listed comments, to edit them

    def _comment(self, handle: IssueComment) -> Comment:
        self._handles[handle.id] = handle
        return Comment(handle.id, handle.body or "", handle.user.login if handle.user else None, handle.html_url)

    def _fetch_pull(self, number: int) -> PullRequest:
        def fetch() -> PullRequest:
            pr = self._repo.get_pull(number)
            pr.complete()
            head_repo = pr.head.repo
            return PullRequest(
                number=pr.number,
                head_ref=pr.head.ref,
                head_sha=pr.head.sha,
                head_repo=head_repo.full_name if head_repo is not None else None,
                base_ref=pr.base.ref,
                base_sha=pr.base.sha,
                base_repo=pr.base.repo.full_name,
                html_url=pr.html_url,
            )

        return _api(fetch)

    def _fetch_comments(self, number: int) -> list[Comment]:
        # Walks every page (Link: rel="next"); a failure on any page fails the whole listing, which
        # is then retried from the first page.
        return _api(lambda: [self._comment(c) for c in self._repo.get_issue(number).get_comments()])

    def _post_comment(self, number: int, body: str) -> Comment:
        return _api(lambda: self._comment(self._repo.get_issue(number).create_comment(body)))

    def _patch_comment(self, comment: Comment, body: str) -> Comment:
        handle = self._handles[comment.id]

        def patch() -> Comment:
            handle.edit(body)
            return self._comment(handle)

        return _api(patch)

    def _fetch_login(self) -> str:
        return _api(lambda: self._github.get_user().login)

    def _login_despite(self, failure: ApiFailure) -> str | None:
        # An Actions (installation) token may not read /user, and that refusal is how we know it is one.
        if failure.status in (401, 403) and _INTEGRATION_DENIED in failure.message.lower():
            return ACTIONS_BOT
        return None

    def _forbidden_hint(self, call: Call) -> str:
        return (
            "the token lacks a permission: give the job `permissions: contents: write, pull-requests: write` "
            "in the workflow; on pull requests from forks the GITHUB_TOKEN is read-only and cannot comment"
        )
