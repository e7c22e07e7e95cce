"""Fake forges for the tests: `GitHubServer` and `GiteaServer` fake the two REST APIs over HTTP
(through `responses`), answering with the recorded JSON under tests/fixtures/forge/, so that the real
implementations, and the one sticky-comment algorithm in `bot/actions/forge/_base.py`, are what the tests run.
Every JSON answer the fakes give (and every request body they receive) is checked against the forge's
own API description as it goes (tests/support/apischema.py), and answered as `application/json` like the
real thing.
"""
from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qs, urlsplit

import requests
import responses

from bot.actions.forge import Forge, make_forge

from support.apischema import request_errors, response_errors

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "forge"
REPOSITORY = "acme/gitops"
# A Gitea-shaped token (40 hex digits); the recorded 401 answer quotes it back, as Gitea does.
TOKEN = "0f6d3c9ab27e41d58c0b7e2f9a4d61c3b5e8f027"
MARKER = "<!-- flux-wave-bot -->"
# What a fake server answered (or was sent) that the real API could not have; conftest fails the
# test on any, even when the code under test swallowed the AssertionError raised at the time.
VIOLATIONS: list[str] = []
CHECKED = [0]  # how many JSON answers and request bodies were checked against the API descriptions


def fixture(platform: str, name: str) -> Any:
    """A recorded answer: parsed JSON for .json files, text otherwise."""
    path = FIXTURES / platform / name
    text = path.read_text()
    return json.loads(text) if path.suffix == ".json" else text


# -- fakes of the REST APIs ----------------------------------------------------------------------------

Author = Literal["bot", "human"]
Identity = Literal["actions", "pat"]
# A queued failure: an exception to raise, or (status, body, headers); "landed" means the request
# takes effect but its answer is lost (a 502 after the server already did the work).
Failure = Exception | tuple[int, Any, dict[str, str]]


@dataclass
class _Queued:
    failure: Failure
    landed: bool = False


class ForgeServer:
    """A stateful fake of one forge's REST API for one repository, registered on a RequestsMock."""

    platform = ""
    api = ""
    json_type = "application/json"  # the Content-Type header the forge answers JSON with
    bot_comment = "issue_comment_bot.json"
    human_comment = "issue_comment_human.json"

    def __init__(self, rsps: responses.RequestsMock, *, identity: Identity = "actions", token: str = TOKEN) -> None:
        self.rsps = rsps
        self.identity = identity
        self.token = token
        self.comments: list[dict[str, Any]] = []
        self.pulls: dict[int, dict[str, Any]] = {7: fixture(self.platform, "pull_request.json")}
        self.queued: dict[str, list[_Queued]] = {}
        self._next_id = 5000
        self._register()

    # -- set-up -----------------------------------------------------------------------------------

    def fail(self, route: str, *failures: Failure, landed: bool = False) -> None:
        """Answer the next requests to `route` ("pull", "list", "create", "edit", "user") with `failures`."""
        self.queued.setdefault(route, []).extend(_Queued(f, landed) for f in failures)

    def add_comment(self, body: str, author: Author = "human") -> dict[str, Any]:
        """Put a comment on PR #7 as it would be stored, written by the bot's identity or by a human."""
        template = fixture(self.platform, self.bot_comment if author == "bot" else self.human_comment)
        comment = copy.deepcopy(template)
        if author == "bot":
            comment["user"] = self.bot_user()
        self._next_id += 1
        self._renumber(comment, self._next_id)
        comment["body"] = body
        self.comments.append(comment)
        return comment

    def forge(self, sleep: Any = None, **options: Any) -> Forge:
        waits = sleep if sleep is not None else _refuse_sleep
        return make_forge(
            self.platform, api_url=self.api, repository=REPOSITORY, token=self.token, sleep=waits, **options
        )

    # -- what happened ------------------------------------------------------------------------------

    @property
    def prefix(self) -> str:
        """The path the API lives under: "" on GitHub, "/api/v1" on Gitea."""
        return urlsplit(self.api).path

    def requests(self, method: str | None = None, path_suffix: str = "") -> list[str]:
        """"METHOD path" of every request that reached the server, optionally filtered."""
        seen = [f"{c.request.method} {urlsplit(c.request.url).path}" for c in self.rsps.calls]
        return [s for s in seen if (method is None or s.startswith(method + " ")) and s.endswith(path_suffix)]

    @property
    def writes(self) -> list[str]:
        return [s for s in self.requests() if not s.startswith("GET ")]

    def bodies(self) -> list[str]:
        return [c["body"] for c in self.comments]

    # -- platform specifics ---------------------------------------------------------------------------

    def bot_user(self) -> dict[str, Any]:
        raise NotImplementedError

    def _renumber(self, comment: dict[str, Any], cid: int) -> None:
        raise NotImplementedError

    def _auth_ok(self, request: requests.PreparedRequest) -> bool:
        return request.headers.get("Authorization") == f"token {self.token}"

    def _list(self, request: requests.PreparedRequest) -> tuple[int, dict[str, str], str]:
        return 200, {}, json.dumps(self.comments)

    def _user(self) -> tuple[int, dict[str, str], str]:
        raise NotImplementedError

    def _error(self, status: int) -> str:
        raise NotImplementedError

    # -- routing ----------------------------------------------------------------------------------------

    def _url(self, path: str) -> str:
        """A pattern for `path` under the API, with or without an explicit port (PyGithub adds :443)."""
        parts = urlsplit(self.api)
        return rf"{re.escape(f'{parts.scheme}://{parts.hostname}')}(?::\d+)?{re.escape(parts.path + path)}"

    def _register(self) -> None:
        base = self._url(f"/repos/{REPOSITORY}")
        routes = [
            ("GET", rf"{base}/pulls/(\d+)$", "pull"),
            ("GET", rf"{base}/issues/(\d+)/comments(\?.*)?$", "list"),
            ("POST", rf"{base}/issues/(\d+)/comments$", "create"),
            ("PATCH", rf"{base}/issues/comments/(\d+)$", "edit"),
            ("GET", rf"{self._url('/user')}$", "user"),
        ]
        for method, pattern, route in routes:
            self.rsps.add_callback(method, re.compile(pattern), callback=self._handler(route, re.compile(pattern)),
                                   content_type=None)

    def _handler(self, route: str, pattern: re.Pattern[str]) -> Any:
        def handle(request: requests.PreparedRequest) -> tuple[int, dict[str, str], str]:
            return self._typed(route, *answer(request))

        def answer(request: requests.PreparedRequest) -> tuple[int, dict[str, str], str]:
            if not self._auth_ok(request):
                return 401, {}, self._error(401)
            match = pattern.match(request.url or "")
            assert match is not None
            queue = self.queued.get(route)
            if queue:
                queued = queue.pop(0)
                if queued.landed:
                    self._serve(route, match, request)
                if isinstance(queued.failure, Exception):
                    raise queued.failure
                status, body, headers = queued.failure
                return status, headers, body if isinstance(body, str) else json.dumps(body)
            return self._serve(route, match, request)

        return handle

    def _typed(self, route: str, status: int, headers: dict[str, str], body: str) -> tuple[int, dict[str, str], str]:
        """The answer with the Content-Type the forge would give it, checked against the API
        description when it is JSON. A body that is not JSON (a proxy's HTML error page) is text/html."""
        headers = dict(headers)
        given = next((v for k, v in headers.items() if k.lower() == "content-type"), None)
        try:
            parsed = json.loads(body) if body else None
        except ValueError:
            parsed, given = None, given or "text/html; charset=utf-8"
        if given is None and body:
            given = self.json_type
        if given is not None and not any(k.lower() == "content-type" for k in headers):
            headers["Content-Type"] = given
        if given is not None and "json" in given and body:
            _violation(response_errors(self.platform, route, status, parsed))
        return status, headers, body

    def _serve(
        self, route: str, match: re.Match[str], request: requests.PreparedRequest
    ) -> tuple[int, dict[str, str], str]:
        if route == "pull":
            pull = self.pulls.get(int(match.group(1)))
            return (200, {}, json.dumps(pull)) if pull else (404, {}, self._error(404))
        if route == "list":
            return self._list(request)
        if route == "user":
            return self._user()
        sent = json.loads(request.body or b"{}")
        _violation(request_errors(self.platform, route, sent))
        body = sent["body"]
        if route == "create":
            comment = self.add_comment(body, "bot")
            return 201, {}, json.dumps(comment)
        comment = next((c for c in self.comments if c["id"] == int(match.group(1))), None)
        if comment is None:
            return 404, {}, self._error(404)
        comment["body"] = body
        comment["updated_at"] = "2024-05-14T10:02:11Z"
        return 200, {}, json.dumps(comment)


def _violation(problems: list[str]) -> None:
    CHECKED[0] += 1
    if problems:
        VIOLATIONS.extend(problems)
        raise AssertionError("the fake forge was made to say what the real API could not:\n" + "\n".join(problems))


def _refuse_sleep(seconds: float) -> None:
    raise AssertionError(f"the forge slept {seconds}s where no retry was expected")


class GitHubServer(ForgeServer):
    platform = "github"
    api = "https://api.github.com"
    json_type = "application/json; charset=utf-8"

    def __init__(self, rsps: responses.RequestsMock, *, identity: Identity = "actions", per_page: int = 100, **kw: Any):
        self.per_page = per_page  # the page size the server uses, whatever the client asks for
        self.page_failures: dict[int, list[tuple[int, Any, dict[str, str]]]] = {}
        super().__init__(rsps, identity=identity, **kw)

    def fail_page(self, page: int, *failures: tuple[int, Any, dict[str, str]]) -> None:
        """Answer the next requests for page `page` of the comments with `failures`."""
        self.page_failures.setdefault(page, []).extend(failures)

    def bot_user(self) -> dict[str, Any]:
        if self.identity == "actions":
            return fixture("github", "issue_comment_bot.json")["user"]
        me = fixture("github", "user_authenticated.json")
        simple = fixture("github", "issue_comment_human.json")["user"].keys()
        return {**{k: me[k] for k in simple}, "user_view_type": "public"}  # others see the public view

    def _renumber(self, comment: dict[str, Any], cid: int) -> None:
        comment["id"] = cid
        comment["url"] = re.sub(r"/\d+$", f"/{cid}", comment["url"])
        comment["html_url"] = re.sub(r"\d+$", str(cid), comment["html_url"])
        comment["reactions"]["url"] = f"{comment['url']}/reactions"

    def _list(self, request: requests.PreparedRequest) -> tuple[int, dict[str, str], str]:
        query = parse_qs(urlsplit(request.url or "").query)
        page = int(query.get("page", ["1"])[0])
        if self.page_failures.get(page):
            status, body, headers = self.page_failures[page].pop(0)
            return status, headers, body if isinstance(body, str) else json.dumps(body)
        pages = max(1, -(-len(self.comments) // self.per_page))
        start = (page - 1) * self.per_page
        headers = {}
        if pages > 1:
            link = f"{self.api}/repositories/601234567/issues/7/comments?per_page={self.per_page}&page="
            rels = [(page + 1, "next")] if page < pages else []
            rels += [(pages, "last")] if page < pages else [(1, "first"), (page - 1, "prev")]
            headers["Link"] = ", ".join(f'<{link}{n}>; rel="{rel}"' for n, rel in rels)
        return 200, headers, json.dumps(self.comments[start : start + self.per_page])

    def _user(self) -> tuple[int, dict[str, str], str]:
        if self.identity == "actions":
            return 403, {}, json.dumps(fixture("github", "error_integration_user.json"))
        return 200, {}, json.dumps(fixture("github", "user_authenticated.json"))

    def _error(self, status: int) -> str:
        name = {401: "error_bad_credentials.json", 404: "error_not_found.json"}[status]
        return json.dumps(fixture("github", name))

    def _register(self) -> None:
        super()._register()
        # PyGithub follows the Link header, which GitHub writes with the repository's numeric id.
        pattern = re.compile(rf"{self._url('/repositories/601234567/issues')}/(\d+)/comments(\?.*)?$")
        self.rsps.add_callback("GET", pattern, callback=self._handler("list", pattern))


class GiteaServer(ForgeServer):
    platform = "gitea"
    api = "https://gitea.example.com/api/v1"
    json_type = "application/json;charset=utf-8"

    def bot_user(self) -> dict[str, Any]:
        if self.identity == "actions":
            return fixture("gitea", "issue_comment_bot.json")["user"]
        # In a comment Gitea shows a user as to an anonymous reader: no login_name, a placeholder email.
        me = fixture("gitea", "user_token_owner.json")
        return {**me, "login_name": "", "email": f"{me['login']}@noreply.gitea.example.com", "language": "",
                "active": False, "last_login": "0001-01-01T00:00:00Z"}

    def _renumber(self, comment: dict[str, Any], cid: int) -> None:
        comment["id"] = cid
        comment["html_url"] = re.sub(r"\d+$", str(cid), comment["html_url"])

    def _list(self, request: requests.PreparedRequest) -> tuple[int, dict[str, str], str]:
        return 200, {"X-Total-Count": str(len(self.comments))}, json.dumps(self.comments)

    def _user(self) -> tuple[int, dict[str, str], str]:
        name = "user_actions.json" if self.identity == "actions" else "user_token_owner.json"
        return 200, {}, json.dumps(fixture("gitea", name))

    def _error(self, status: int) -> str:
        if status == 401:
            # Gitea quotes the rejected token back; the forge must never repeat it.
            echo = fixture("gitea", "error_token_not_exist.json")
            return json.dumps({**echo, "message": f"access token does not exist [sha: {self.token}]"})
        return json.dumps(fixture("gitea", "error_not_found.json"))


SERVERS: dict[str, type[ForgeServer]] = {"github": GitHubServer, "gitea": GiteaServer}

