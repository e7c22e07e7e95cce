"""Gitea (and Forgejo), through its REST API under <server>/api/v1.

Plain requests rather than PyGithub: Gitea's JSON only resembles GitHub's (a comment has no `url`, its
`issue_url` is an HTML URL and empty on pull requests), which PyGithub's comment helpers trip over.
"""
from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import requests

from bot import __version__
from bot.actions.forge._base import ApiFailure, Call, Comment, StickyForge
from bot.actions.forge.api import PullRequest, Sleep

_TIMEOUT_SECONDS = (10, 30)  # connect, read
_PULL_HEAD_PREFIX = "refs/pull/"


def api_base(api_url: str) -> str:
    """The API root for `api_url`, which may be the server URL or already end in /api/v1."""
    base = api_url.rstrip("/")
    return base if base.endswith("/api/v1") else f"{base}/api/v1"


def _message(response: requests.Response) -> str:
    """Gitea's error text: `message` of its JSON error, or the start of whatever else came back."""
    try:
        data = response.json()
    except ValueError:
        return " ".join(response.text.split())[:200]
    if isinstance(data, dict):
        return str(data.get("message") or "")
    if isinstance(data, list):  # a binding error: [{"fieldNames": [...], "classification": ..., "message": ...}]
        return "; ".join(_binding_error(e) for e in data)
    return str(data)


def _binding_error(error: Any) -> str:
    if not isinstance(error, dict):
        return str(error)
    return f"{', '.join(error.get('fieldNames') or [])}: {error.get('message')}"


def _comment(data: dict[str, Any]) -> Comment:
    user = data.get("user") or {}
    return Comment(int(data["id"]), data.get("body") or "", user.get("login"), data.get("html_url") or "")


def _branch(info: dict[str, Any]) -> str:
    # Once the head branch (or its repository) is gone, `ref` becomes refs/pull/N/head and `label`
    # still holds the branch name.
    ref = str(info.get("ref") or "")
    return str(info.get("label") or ref) if ref.startswith(_PULL_HEAD_PREFIX) else ref


class GiteaForge(StickyForge):
    name = "gitea"
    title = "Gitea"
    # Gitea sets no length limit on a comment (the column is LONGTEXT); Renovate caps Gitea bodies at
    # 1,000,000 characters, and so do we.
    max_comment_chars = 1_000_000
    token_hint = "pass ${{ secrets.GITEA_TOKEN }} (the job's automatic token), or an access token that still exists"

    def __init__(
        self,
        *,
        api_url: str,
        repository: str,
        token: str,
        sleep: Sleep = time.sleep,
        clock: Callable[[], float] = time.time,
        bot_login: str | None = None,
        session: requests.Session | None = None,
    ) -> None:
        super().__init__(repository, token, sleep=sleep, clock=clock, bot_login=bot_login)
        self._base = api_base(api_url)
        self._session = session or requests.Session()
        self._session.headers.update(
            {
                "Authorization": f"token {token}",
                "Accept": "application/json",
                "User-Agent": f"flux-wave-bot/{__version__}",
            }
        )

    def _request(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        """The decoded JSON answer of one request (None for an empty one); ApiFailure otherwise."""
        # UTF-8 as is: json= would escape every non-ASCII character to six bytes.
        data = json.dumps(body, ensure_ascii=False).encode() if body is not None else None
        headers = {"Content-Type": "application/json"} if body is not None else None
        try:
            # Reads follow a renamed repository's redirect; a write must not be replayed elsewhere.
            response = self._session.request(
                method,
                self._base + path,
                data=data,
                headers=headers,
                timeout=_TIMEOUT_SECONDS,
                allow_redirects=method == "GET",
            )
        except requests.Timeout:
            raise ApiFailure(None, "timed out") from None
        except requests.RequestException as exc:
            raise ApiFailure(None, f"connection failed ({type(exc).__name__})") from None
        if response.status_code >= 300:
            raise ApiFailure(response.status_code, _message(response), response.headers)
        if not response.content:
            return None
        try:
            return response.json()
        except ValueError:
            raise ApiFailure(response.status_code, "the answer was not JSON (is api_url the Gitea server?)") from None

    def _fetch_pull(self, number: int) -> PullRequest:
        data = self._request("GET", f"/repos/{self.repository}/pulls/{number}")
        head, base = data["head"], data["base"]
        return PullRequest(
            number=int(data["number"]),
            head_ref=_branch(head),
            head_sha=head["sha"],
            head_repo=(head.get("repo") or {}).get("full_name"),
            base_ref=_branch(base),
            base_sha=base["sha"],
            base_repo=(base.get("repo") or {}).get("full_name") or self.repository,
            html_url=data["html_url"],
        )

    def _fetch_comments(self, number: int) -> list[Comment]:
        # Not paginated: Gitea answers every comment of the issue at once.
        return [_comment(c) for c in self._request("GET", f"/repos/{self.repository}/issues/{number}/comments") or []]

    def _post_comment(self, number: int, body: str) -> Comment:
        return _comment(self._request("POST", f"/repos/{self.repository}/issues/{number}/comments", {"body": body}))

    def _patch_comment(self, comment: Comment, body: str) -> Comment:
        data = self._request("PATCH", f"/repos/{self.repository}/issues/comments/{comment.id}", {"body": body})
        # 204 when Gitea deems the comment's type to carry no text; the edit did not happen then.
        if data is None:
            raise ApiFailure(204, "Gitea did not edit the comment")
        return _comment(data)

    def _fetch_login(self) -> str:
        # The Actions token answers as the built-in user "gitea-actions" (id -2); any other token as its owner.
        return str(self._request("GET", "/user")["login"])

    def _forbidden_hint(self, call: Call) -> str:
        if call.path == "/user":
            return "the token may not read its own account: give the access token the read:user scope"
        return (
            "the token lacks a permission: the automatic Actions token is read-only on pull requests from forks; "
            "on Gitea 1.26+ also check the repository's Actions token permissions and the workflow's `permissions:` "
            "(pull-requests: write); an access token needs the write:issue and read:repository scopes"
        )
