"""What GitHub and Gitea share: the sticky-comment algorithm, the retry policy, the error messages.

A platform module supplies one-request primitives that raise `ApiFailure`; everything that decides
(which comment is ours, whether to write, when to retry, what to tell the user) lives here, once.
"""
from __future__ import annotations

import email.utils
import re
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TypeVar

from bot.actions.forge.api import CommentResult, PullRequest, Sleep, fit_body
from bot.errors import RUN_ERROR, WaveBotError

T = TypeVar("T")

MAX_ATTEMPTS = 4
BACKOFF_SECONDS = 1.0  # doubled after each failed attempt: 1, 2, 4
MAX_WAIT_SECONDS = 60.0  # a longer wait (a primary rate limit resetting later) fails instead
SECONDARY_LIMIT_WAIT = 60.0  # GitHub: "wait at least one minute" when it names no time
REDACTED = "***"

# Gitea and Forgejo answer a rejected token with "access token does not exist [sha: <the token>]".
_TOKEN_ECHO = re.compile(r"\[sha:[^\]]*\]")


@dataclass(frozen=True)
class Comment:
    id: int
    body: str
    author: str | None  # login; None for a deleted account
    url: str  # HTML URL


@dataclass(frozen=True)
class Call:
    """One API request, described for the user."""

    what: str  # completes "could not ...", e.g. "read pull request #7"
    method: str
    path: str

    @property
    def retryable(self) -> bool:
        # Reading, and editing a comment to a given text, can be repeated safely; creating cannot.
        return self.method != "POST"


class ApiFailure(Exception):
    """One failed request, the same for every platform; turned into a WaveBotError before leaving the package."""

    def __init__(self, status: int | None, message: str, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(status, message)
        self.status = status  # None: no answer at all (timeout, connection refused)
        self.message = message
        self.headers = {k.lower(): v for k, v in (headers or {}).items()}
        self.call: Call | None = None
        self.attempts = 1
        self.wait_needed: float | None = None  # set when a rate limit asked for longer than we wait

    @property
    def rate_limited(self) -> bool:
        if self.status == 429:
            return True
        return self.status == 403 and (
            "retry-after" in self.headers
            or self.headers.get("x-ratelimit-remaining") == "0"
            or "rate limit" in self.message.lower()
        )

    @property
    def transient(self) -> bool:
        """Whether the same request may well succeed later."""
        return self.status is None or self.rate_limited or (self.status >= 500 and self.status != 501)


def redact(text: str, token: str) -> str:
    """`text` with every trace of `token` replaced."""
    text = _TOKEN_ECHO.sub(f"[sha: {REDACTED}]", text)
    return text.replace(token, REDACTED) if token else text


def _retry_after(value: str, now: float) -> float | None:
    if value.strip().isdigit():
        return float(value.strip())
    try:
        return email.utils.parsedate_to_datetime(value).timestamp() - now
    except (TypeError, ValueError):
        return None


class StickyForge:
    """The shared half of a forge; subclasses implement the `_fetch_*`, `_post_*`, `_patch_*` primitives."""

    name = ""
    title = ""  # for messages: "GitHub", "Gitea"
    max_comment_chars = 0
    token_hint = ""  # how to pass a valid token, for the 401 hint

    def __init__(
        self,
        repository: str,
        token: str,
        *,
        sleep: Sleep = time.sleep,
        clock: Callable[[], float] = time.time,
        bot_login: str | None = None,
    ) -> None:
        self.repository = repository
        self._token = token
        self._sleep = sleep
        self._clock = clock
        self._login = bot_login

    def __repr__(self) -> str:
        return f"{type(self).__name__}(repository={self.repository!r})"

    # -- primitives: one request each, raising ApiFailure -------------------------------------------

    def _fetch_pull(self, number: int) -> PullRequest:
        raise NotImplementedError

    def _fetch_comments(self, number: int) -> list[Comment]:
        raise NotImplementedError

    def _post_comment(self, number: int, body: str) -> Comment:
        raise NotImplementedError

    def _patch_comment(self, comment: Comment, body: str) -> Comment:
        raise NotImplementedError

    def _fetch_login(self) -> str:
        raise NotImplementedError

    def _login_despite(self, failure: ApiFailure) -> str | None:
        """The bot's login when the identity lookup failed in a way that still tells who we are."""
        return None

    def _forbidden_hint(self, call: Call) -> str:
        raise NotImplementedError

    # -- the Forge protocol -------------------------------------------------------------------------

    def pull_request(self, number: int) -> PullRequest:
        with self._user_errors():
            call = Call(f"read pull request #{number}", "GET", f"/repos/{self.repository}/pulls/{number}")
            return self._call(call, lambda: self._fetch_pull(number))

    def upsert_comment(self, number: int, marker: str, body: str, overflow_note: str = "") -> CommentResult:
        text = fit_body(body, marker, overflow_note, self.max_comment_chars)
        with self._user_errors():
            ours = self._own_comments(number, marker)
            if ours:
                return self._update(ours[0], text)
            return self._create(number, marker, text)

    # -- the algorithm ------------------------------------------------------------------------------

    def _own_comments(self, number: int, marker: str) -> list[Comment]:
        """The bot's comments carrying `marker`, oldest first."""
        call = Call(f"list the comments of #{number}", "GET", f"/repos/{self.repository}/issues/{number}/comments")
        carrying = [c for c in self._call(call, lambda: self._fetch_comments(number)) if marker in c.body]
        if not carrying:
            return []  # nothing to tell apart, so no need to know who we are
        me = self._identity().casefold()
        return sorted((c for c in carrying if c.author is not None and c.author.casefold() == me), key=lambda c: c.id)

    def _identity(self) -> str:
        if self._login is None:
            call = Call("look up the account the token belongs to", "GET", "/user")
            try:
                self._login = self._call(call, self._fetch_login)
            except ApiFailure as failure:
                login = self._login_despite(failure)
                if login is None:
                    raise
                self._login = login
        return self._login

    def _update(self, comment: Comment, text: str) -> CommentResult:
        if comment.body == text:
            return CommentResult("unchanged", comment.id, comment.url)
        call = Call(f"update comment {comment.id}", "PATCH", f"/repos/{self.repository}/issues/comments/{comment.id}")
        updated = self._call(call, lambda: self._patch_comment(comment, text))
        return CommentResult("updated", updated.id, updated.url or comment.url)

    def _create(self, number: int, marker: str, text: str) -> CommentResult:
        call = Call(f"create the comment on #{number}", "POST", f"/repos/{self.repository}/issues/{number}/comments")
        attempt = 1
        while True:
            try:
                created = self._call(call, lambda: self._post_comment(number, text))
                return CommentResult("created", created.id, created.url)
            except ApiFailure as failure:
                failure.attempts = attempt
                wait = self._wait_before_retry(failure, attempt)
                if wait is None:
                    raise
            self._sleep(wait)
            attempt += 1
            # A POST whose answer was lost may still have landed: look before posting again, so a
            # retry can never leave two comments.
            ours = self._own_comments(number, marker)
            if ours:
                found = ours[0]
                if found.body == text:
                    return CommentResult("created", found.id, found.url)
                return self._update(found, text)

    # -- retries --------------------------------------------------------------------------------------

    def _call(self, call: Call, request: Callable[[], T]) -> T:
        """`request()`, repeated after transient failures when `call` may be repeated."""
        attempt = 1
        while True:
            try:
                return request()
            except ApiFailure as failure:
                self._scrub(failure)
                failure.call = call
                failure.attempts = attempt
                wait = self._wait_before_retry(failure, attempt) if call.retryable else None
                if wait is None:
                    raise
            self._sleep(wait)
            attempt += 1

    def _scrub(self, failure: ApiFailure) -> None:
        """Rid `failure` of the token, which a server may quote back in its answer."""
        failure.message = redact(failure.message, self._token)
        failure.args = (failure.status, failure.message)
        # `from None` only hides the exception it came from: that one holds the request, headers and all.
        failure.__cause__ = failure.__context__ = None

    def _wait_before_retry(self, failure: ApiFailure, attempt: int) -> float | None:
        """Seconds to wait before trying again; None when trying again is pointless."""
        if not failure.transient or attempt >= MAX_ATTEMPTS:
            return None
        wait = BACKOFF_SECONDS * 2 ** (attempt - 1)
        if failure.rate_limited:
            wait = self._rate_limit_wait(failure)
        if wait > MAX_WAIT_SECONDS:
            failure.wait_needed = wait
            return None
        return max(float(wait), 0.0)

    def _rate_limit_wait(self, failure: ApiFailure) -> float:
        now = self._clock()
        after = failure.headers.get("retry-after")
        if after is not None:
            seconds = _retry_after(after, now)
            if seconds is not None:
                return seconds
        reset = failure.headers.get("x-ratelimit-reset")
        if failure.headers.get("x-ratelimit-remaining") == "0" and reset and reset.isdigit():
            return float(reset) - now + 1  # the reset second itself may still be limited
        return SECONDARY_LIMIT_WAIT

    # -- errors ---------------------------------------------------------------------------------------

    @contextmanager
    def _user_errors(self) -> Iterator[None]:
        try:
            yield
        except ApiFailure as failure:
            raise self._user_error(failure) from None

    def _user_error(self, failure: ApiFailure) -> WaveBotError:
        call = failure.call or Call("reach the API", "GET", "")
        answer = "no answer" if failure.status is None else f"HTTP {failure.status}"
        message = f"{self.title} API: could not {call.what} ({call.method} {call.path}): {answer}"
        if failure.message:
            message += f": {failure.message}"
        if failure.attempts > 1:
            message += f" (gave up after {failure.attempts} attempts)"
        hint = self._hint(failure, call)
        return WaveBotError(
            redact(message, self._token), hint=redact(hint, self._token) if hint else None, exit_code=RUN_ERROR
        )

    def _hint(self, failure: ApiFailure, call: Call) -> str:
        status = failure.status
        if failure.wait_needed is not None:
            resume = time.strftime("%H:%M:%S UTC", time.gmtime(self._clock() + failure.wait_needed))
            return f"the API rate limit is exhausted until about {resume}; re-run the job after that"
        if failure.rate_limited:
            return "the API kept answering with its rate limit; wait a few minutes and re-run the job"
        if status is None:
            return "the forge did not answer (timeout or connection error); check api_url, then re-run the job"
        if status == 401:
            return f"the token is invalid or expired: {self.token_hint}"
        if status == 403:
            return self._forbidden_hint(call)
        if status == 404:
            if call.method == "PATCH":
                return "the comment was deleted while the bot ran; re-run the job"
            return (
                f"the pull request does not exist in {self.repository}, or the token cannot see that repository: "
                "check the repository and the token's access"
            )
        if status == 422:
            return "the forge refused the request as sent; the message above says why"
        if status == 413:
            return "a proxy in front of the forge refused the request size (e.g. nginx client_max_body_size)"
        if status >= 500:
            return "the forge failed on its side; this is usually temporary: re-run the job"
        return ""
