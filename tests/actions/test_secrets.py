"""The token never leaks: `wave-bot run` end to end against a real smart-HTTP git server on 127.0.0.1.

The workspace is cloned over HTTP as actions/checkout does with `persist-credentials: false` (the
header given for the clone only), the forge API is faked over `responses` with the same token, and
the run must authenticate git through the environment alone. Afterwards every place the token could
have ended up is searched for it and for its base64 forms: the log (but for the one `::add-mask::`
line), stdout and stderr at the file-descriptor level, every log record with bot.repo.git's and
PyGithub's debug logging on, the comments, the job summary, the outputs file, every file under the
test's directory (the workspace's and the origin's .git included) and every git object and commit
message in every repository there. The process list is not checked.
"""
from __future__ import annotations

import base64
import json
import logging
import os
import socket
import subprocess
import traceback
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import responses

import bot.actions.forge.github  # noqa: F401 - PyGithub pins its logger to INFO on import: import before raising it
from bot.actions import workflow_commands
from bot.errors import RUN_ERROR, WaveBotError

from conftest import write_files
from support.actionkit import BRANCH, NEW_SERVICE, action_env, push_pr_branch, run_action
from support.fakes import SERVERS, ForgeServer, GiteaServer
from support.githttp import GitHttpServer, Seen, basic_credentials, extraheader

TOKEN = "wbtok_SENTINEL_4c7e1f9a2d6b8035"
STALE_TOKEN = "wbtok_STALE_d41d8cd98f00b204"  # what a checkout step might have persisted before
GIT_TIMEOUT_SECONDS = 60
MASK_LINE = f"::add-mask::{TOKEN}"


def secret_forms(token: str = TOKEN) -> dict[str, str]:
    """What must never appear: the token, either half of it (a cut-off token escapes the runner's
    mask), and the base64 forms git sends (`x-access-token:<token>`) or a careless encoder would."""
    half = len(token) // 2
    return {
        "the token": token,
        "the token's first half": token[:half],
        "the token's second half": token[half:],
        "the basic-auth credentials (base64)": basic_credentials(token),
        "the token in base64": base64.b64encode(token.encode()).decode(),
    }


def leaks(where: str, data: str | bytes, token: str = TOKEN) -> list[str]:
    """Each secret form found in `data`, described without repeating the secret."""
    found = []
    for name, form in secret_forms(token).items():
        needle: str | bytes = form if isinstance(data, str) else form.encode()
        at = data.find(needle)  # type: ignore[arg-type]
        if at >= 0:
            window = data[max(0, at - 60): at + len(needle) + 60]
            text = window.decode("utf-8", "replace") if isinstance(window, bytes) else window
            for other in secret_forms(token).values():
                text = text.replace(other, "<SECRET>")
            found.append(f"{where} contains {name} at offset {at}: ...{text!r}...")
    return found


def assert_clean(evidence: Iterable[tuple[str, str | bytes]], token: str = TOKEN) -> None:
    problems = [p for where, data in evidence for p in leaks(where, data, token)]
    assert not problems, "the token leaked:\n" + "\n".join(problems)


def run_git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[bytes]:
    result = subprocess.run(["git", *args], cwd=cwd, capture_output=True, timeout=GIT_TIMEOUT_SECONDS)
    assert not check or result.returncode == 0, f"git {' '.join(args)} failed: {result.stderr.decode()}"
    return result


def git_text(cwd: Path, *args: str) -> str:
    return run_git(cwd, *args).stdout.decode()


# -- everything on disk ----------------------------------------------------------------------------------


def files_under(root: Path) -> Iterator[tuple[str, bytes]]:
    """Every regular file under `root` (symlinks not followed), with its bytes."""
    for directory, _, names in os.walk(root):
        for name in names:
            path = Path(directory, name)
            if path.is_file() and not path.is_symlink():
                yield str(path.relative_to(root)), path.read_bytes()


def git_dirs_under(root: Path) -> list[Path]:
    """The git directory of every repository under `root`: work trees' .git and bare repositories."""
    found = []
    for directory, subdirs, names in os.walk(root):
        here = Path(directory)
        if "HEAD" in names and "objects" in subdirs and "refs" in subdirs:
            found.append(here)
            subdirs[:] = []  # no repositories inside a git directory
    return sorted(found)


def git_history(gitdir: Path) -> Iterator[tuple[str, bytes]]:
    """Every object (packed ones inflated), every commit message and every reflog of `gitdir`."""
    where = f"{gitdir.name} ({gitdir.parent.name})"
    for label, args in [
        ("objects", ["cat-file", "--batch-all-objects", "--batch"]),
        ("log", ["log", "--all", "--reflog", "--format=%H %an <%ae> %cn <%ce>%n%B"]),
        ("reflog", ["reflog", "show", "--all"]),
        ("config", ["config", "--list", "--show-origin"]),
    ]:
        result = run_git(gitdir, "--git-dir", str(gitdir), *args, check=False)
        yield f"{where} git {label}", result.stdout + result.stderr


def disk_evidence(tmp: Path) -> list[tuple[str, str | bytes]]:
    evidence: list[tuple[str, str | bytes]] = [(f"file {rel}", data) for rel, data in files_under(tmp)]
    gitdirs = git_dirs_under(tmp)
    assert len(gitdirs) >= 3, gitdirs  # the origin, the developer's clone and at least one workspace
    for gitdir in gitdirs:
        evidence += list(git_history(gitdir))
    return evidence


def log_evidence(caplog: pytest.LogCaptureFixture) -> list[tuple[str, str | bytes]]:
    records = [(f"log record {r.name}:{r.lineno}", f"{r.getMessage()} {r.exc_text or ''} {r.args!r}")
               for r in caplog.records]
    return [("caplog text", caplog.text), *records]


def exception_evidence(exc: BaseException) -> list[tuple[str, str | bytes]]:
    """str, repr, args and attributes of `exc` and of every exception chained to it, and the
    traceback as Python would print it."""
    evidence: list[tuple[str, str | bytes]] = [
        ("formatted traceback", "".join(traceback.format_exception(exc))),
        ("formatted traceback (chain forced)",
         "".join(traceback.TracebackException.from_exception(exc, compact=False).format(chain=True))),
    ]
    seen: set[int] = set()
    todo: list[tuple[str, BaseException]] = [("exception", exc)]
    while todo:
        name, current = todo.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        evidence += [(f"str({name})", str(current)), (f"repr({name})", repr(current)),
                     (f"{name}.args", repr(current.args)), (f"vars({name})", repr(vars(current)))]
        for link in ("__cause__", "__context__"):
            chained = getattr(current, link)
            if chained is not None:
                todo.append((f"{name}.{link}", chained))
    return evidence


# -- the scenario -----------------------------------------------------------------------------------------


@dataclass
class Scenario:
    platform: str
    origin: Path  # the bare repository the HTTP server serves as acme/gitops
    work: Path  # a developer's clone (over the file system), to prepare branches from
    tmp: Path
    server: GitHttpServer
    rsps: responses.RequestsMock
    url: str  # the origin's clone URL, as actions/checkout spells it
    base_sha: str = ""
    head_sha: str = ""
    _forge: ForgeServer | None = None
    run_logs: list[str] = field(default_factory=list)

    # -- set-up ---------------------------------------------------------------------------------------

    @property
    def forge(self) -> ForgeServer:
        if self._forge is None:
            self.serve_forge()
        assert self._forge is not None
        return self._forge

    def serve_forge(self, server: type[ForgeServer] | None = None, token: str = TOKEN) -> ForgeServer:
        """Fake the forge API, accepting `token`; call before anything else touches `forge`."""
        assert self._forge is None, "the forge API is already faked"
        self._forge = (server or SERVERS[self.platform])(self.rsps, token=token)
        return self._forge

    def pr_branch(self, files: dict[str, str | bytes], message: str = "onboard tautulli") -> None:
        self.base_sha, self.head_sha = push_pr_branch(self.work, self.forge.pulls[7], files, message, git_text)

    def checkout(self, name: str = "workspace") -> Path:
        """actions/checkout with `persist-credentials: false`: cloned over HTTP with the header given
        for that command only, detached at the PR head, and nothing of the token left in .git/config."""
        workspace = self.tmp / name
        run_git(self.tmp, "-c", f"http.extraheader={extraheader(TOKEN)}", "clone", "-q", self.url, str(workspace))
        run_git(workspace, "checkout", "-q", "--detach", self.head_sha or "main")
        assert run_git(workspace, "config", "--get-regexp", "extraheader", check=False).returncode == 1
        assert_clean([("the checkout's .git/config", (workspace / ".git" / "config").read_bytes())])
        assert any(s.service == "git-upload-pack" and s.status == 200 for s in self.server.requests)
        self.server.clear()  # from here on, only the run's requests
        return workspace

    def env(self, workspace: Path, **extra: str) -> dict[str, str]:
        # GITHUB_SERVER_URL is this server, so that auth_env scopes the header to it.
        return action_env(self.platform, self.forge.pulls[7], self.tmp, workspace, api_url=self.forge.api,
                          token=TOKEN, server_url=self.server.url) | extra

    def run(self, env: dict[str, str]) -> tuple[int, str]:
        """`action.run`; the log is kept (in `run_logs`) even when the run raises."""
        return run_action(env, self.run_logs)

    # -- what happened ----------------------------------------------------------------------------------

    def origin_tip(self, ref: str = BRANCH) -> str:
        return git_text(self.origin, "rev-parse", ref).strip()

    def forge_authorizations(self) -> list[str]:
        return [c.request.headers.get("Authorization", "") for c in self.rsps.calls]

    def everything(self, caplog: pytest.LogCaptureFixture, captured: pytest.CaptureResult[str],
                   ) -> list[tuple[str, str | bytes]]:
        """Every place a leak would show: fd 1 and 2, log records, comments, forge requests, the logs of
        `run` (but for their mask line), every file under tmp and every git object and message there."""
        evidence: list[tuple[str, str | bytes]] = [
            ("stdout (fd 1)", captured.out),
            ("stderr (fd 2)", captured.err),
            *log_evidence(caplog),
            *[(f"comment {i}", body) for i, body in enumerate(self.forge.bodies())],
            *[(f"forge request {c.request.method} {c.request.url}", (c.request.url or "") + str(c.request.body or ""))
              for c in self.rsps.calls],
            *disk_evidence(self.tmp),
        ]
        for i, log in enumerate(self.run_logs):
            evidence.append((f"log of run {i} (but for its ::add-mask:: line)", without_mask(log)))
        return evidence


def without_mask(log: str) -> str:
    """`log` without its first line, which must be the one `::add-mask::` line (and the only one)."""
    first, _, rest = log.partition("\n")
    assert first == MASK_LINE, f"the log must start by masking the token, not with {first[:40]!r}"
    assert "::add-mask::" not in rest
    return rest


def git_requests(server: GitHttpServer) -> dict[str, list[Seen]]:
    by_service: dict[str, list[Seen]] = {}
    for seen in server.requests:
        by_service.setdefault(seen.service or "other", []).append(seen)
    return by_service


def assert_authenticated_by_header_only(server: GitHttpServer, token: str = TOKEN) -> None:
    """Every request carried exactly one Authorization header, the token's, and the token nowhere else."""
    expected = f"basic {basic_credentials(token)}"
    for seen in server.requests:
        assert seen.authorization == (expected,), f"{seen.method} {seen.target}: {len(seen.authorization)} headers"
        assert_clean([(f"the URL of {seen.method} {seen.path}", seen.target)], token)
        others = [(n, v) for n, v in seen.headers if n.lower() != "authorization"]
        assert_clean([(f"another header of {seen.method} {seen.path}", repr(others))], token)


@pytest.fixture
def quiet_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    """Loopback only: no proxy between git and the server; and no git HTTP transfer that stalls forever."""
    for name in ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    # The autouse fixture cleared GIT_*; these bound every git HTTP transfer (< 1 byte/s for 20 s: abort).
    monkeypatch.setenv("GIT_HTTP_LOW_SPEED_LIMIT", "1")
    monkeypatch.setenv("GIT_HTTP_LOW_SPEED_TIME", "20")


@pytest.fixture
def verbose_logging(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    """Everything at DEBUG: bot.repo.git logs every git command it runs."""
    caplog.set_level(logging.DEBUG)
    for name in ("github", "urllib3", "requests", "responses", "bot"):
        caplog.set_level(logging.DEBUG, logger=name)
    return caplog


@pytest.fixture(params=["github", "gitea"])
def scenario(request: pytest.FixtureRequest, example_repo: Path, tmp_path: Path, quiet_proxies: None,
             ) -> Iterator[Scenario]:
    origin = example_repo.parent / "homelab-origin.git"
    with GitHttpServer(tmp_path / "git-server", TOKEN) as server, \
            responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        url = server.export(origin, "acme/gitops.git")
        yield Scenario(request.param, origin, example_repo, tmp_path, server, rsps, url)


# -- the tests -------------------------------------------------------------------------------------------


def test_the_server_serves_only_requests_carrying_the_header(example_repo: Path, tmp_path: Path,
                                                           quiet_proxies: None) -> None:
    """The helper's own guarantees: no header or a wrong token is refused with 401 (and recorded),
    the right one clones and pushes, and a refusal asked for is answered as text git shows."""
    origin = example_repo.parent / "homelab-origin.git"
    with GitHttpServer(tmp_path / "git-server", TOKEN) as server:
        url = server.export(origin, "acme/gitops.git")
        assert url == f"{server.url}/acme/gitops"
        assert run_git(tmp_path, "clone", "-q", url, str(tmp_path / "anonymous"), check=False).returncode != 0
        (seen,) = server.requests
        assert (seen.method, seen.status, seen.authorization, seen.service) == ("GET", 401, (), "git-upload-pack")
        wrong = extraheader("not-the-token")
        result = run_git(tmp_path, "-c", f"http.extraheader={wrong}", "clone", "-q", url, str(tmp_path / "w"),
                         check=False)
        assert result.returncode != 0 and server.requests[-1].status == 401
        server.clear()

        header = f"http.extraheader={extraheader(TOKEN)}"
        clone = tmp_path / "clone"
        run_git(tmp_path, "-c", header, "clone", "-q", url, str(clone))
        write_files(clone, {"README.md": "changed\n"})
        run_git(clone, "commit", "-q", "-am", "a change")
        run_git(clone, "-c", header, "push", "-q", "origin", "HEAD:refs/heads/pushed")
        assert git_text(origin, "rev-parse", "pushed") == git_text(clone, "rev-parse", "HEAD")
        assert {(s.service, s.method, s.status) for s in server.requests} == {
            ("git-upload-pack", "GET", 200), ("git-upload-pack", "POST", 200),
            ("git-receive-pack", "GET", 200), ("git-receive-pack", "POST", 200)}
        assert_authenticated_by_header_only(server)

        server.refuse("git-receive-pack", 403, "no pushes today")
        result = run_git(clone, "-c", header, "push", "origin", "HEAD:refs/heads/refused", check=False)
        assert result.returncode != 0 and b"remote: no pushes today" in result.stderr
        port = server.port
    with pytest.raises(ConnectionRefusedError):  # stopped: the port is closed
        socket.create_connection(("127.0.0.1", port), timeout=5).close()


def test_a_run_authenticates_over_http_and_leaks_the_token_nowhere(
    scenario: Scenario, verbose_logging: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str],
) -> None:
    scenario.pr_branch(NEW_SERVICE)
    workspace = scenario.checkout()
    code, log = scenario.run(scenario.env(workspace))
    assert code == 0, log

    # git really went over HTTP and authenticated with the header, on fetch and on push.
    by_service = git_requests(scenario.server)
    for service in ("git-upload-pack", "git-receive-pack"):
        assert {(s.method, s.status) for s in by_service.get(service, [])} >= {("GET", 200), ("POST", 200)}, service
    assert set(by_service) <= {"git-upload-pack", "git-receive-pack"}
    assert_authenticated_by_header_only(scenario.server)
    # ... and the bot's commit is what the branch on the origin now holds.
    tip = scenario.origin_tip()
    assert tip == git_text(workspace, "rev-parse", "HEAD").strip()
    assert git_text(scenario.origin, "rev-parse", f"{tip}~1").strip() == scenario.head_sha
    assert "Generated-by: flux-wave-bot" in git_text(scenario.origin, "log", "-1", "--format=%B", tip)
    assert f"pushed {tip[:12]} to {BRANCH}" in log
    # The forge got the same token (this is the token whose leaks are looked for).
    assert scenario.forge_authorizations() and all(a == f"token {TOKEN}" for a in scenario.forge_authorizations())
    assert scenario.forge.bodies() and (scenario.tmp / "summary.md").is_file()
    assert (scenario.tmp / "output.txt").read_text().count(f"commit-sha={tip}") == 1
    # The debug logs were really on, so their silence about the token means something.
    names = {r.name for r in verbose_logging.records}
    assert "bot.repo.git" in names, names
    if scenario.platform == "github":
        assert "github.Requester" in names, names
    # Nothing was left in the workspace's configuration.
    assert run_git(workspace, "config", "--get-regexp", "extraheader", check=False).returncode == 1

    assert log.count(TOKEN) == 1
    assert_clean(scenario.everything(verbose_logging, capfd.readouterr()))


@pytest.mark.parametrize("persisted", ["scoped", "unscoped"])
def test_credentials_a_checkout_persisted_are_replaced_never_sent_twice(scenario: Scenario, persisted: str) -> None:
    """actions/checkout with persist-credentials: true leaves its header in .git/config; the bot's
    empty value resets it, so the server sees one Authorization header, the bot's token's."""
    scenario.pr_branch(NEW_SERVICE)
    workspace = scenario.checkout()
    key = f"http.{scenario.server.url}/.extraheader" if persisted == "scoped" else "http.extraheader"
    run_git(workspace, "config", "--add", key, extraheader(STALE_TOKEN))
    code, log = scenario.run(scenario.env(workspace))
    assert code == 0, log
    assert {s.service for s in scenario.server.requests} == {"git-upload-pack", "git-receive-pack"}
    assert_authenticated_by_header_only(scenario.server)
    assert scenario.origin_tip() == git_text(workspace, "rev-parse", "HEAD").strip()


@pytest.mark.parametrize(("status", "says"), [(403, "returned error: 403"),
                                              (401, "could not read Username")])
def test_a_refused_push_ends_without_the_token(
    scenario: Scenario, status: int, says: str, caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    """403: the token may not push; 401: the server wants other credentials, and git, which may not
    prompt, gives up. Either way the push counts as refused and nothing shows the token."""
    caplog.set_level(logging.DEBUG)
    scenario.pr_branch(NEW_SERVICE)
    workspace = scenario.checkout()
    scenario.server.refuse("git-receive-pack", status, "Permission to acme/gitops.git denied to github-actions[bot].")
    code, log = scenario.run(scenario.env(workspace))
    assert code == 1, log
    assert "push refused:" in log and says in log
    assert scenario.origin_tip() == scenario.head_sha  # nothing was pushed
    refused = [s for s in scenario.server.requests if s.service == "git-receive-pack"]
    assert refused and all(s.status == status for s in refused)
    assert_authenticated_by_header_only(scenario.server)  # the refusal was not for want of the header
    (body,) = scenario.forge.bodies()
    assert f"could not push to `{BRANCH}`" in body
    assert_clean(scenario.everything(caplog, capfd.readouterr()))


# Git prints a refusal's text/plain body as `remote: <body>`; a server may quote the token there (as
# Gitea's API does for a bad token: "access token does not exist [sha: <token>]"): never repeat it.


def test_a_refused_push_whose_answer_quotes_the_token_does_not_repeat_it(
    scenario: Scenario, capfd: pytest.CaptureFixture[str],
) -> None:
    scenario.pr_branch(NEW_SERVICE)
    workspace = scenario.checkout()
    scenario.server.refuse("git-receive-pack", 403, f"push denied: access token does not exist [sha: {TOKEN}]")
    code, log = scenario.run(scenario.env(workspace))
    assert code == 1 and "push refused:" in log
    assert scenario.origin_tip() == scenario.head_sha
    assert_clean([("the log (but for its ::add-mask:: line)", without_mask(log)),
                  *[(f"comment {i}", b) for i, b in enumerate(scenario.forge.bodies())],
                  ("stderr", capfd.readouterr().err)])


def test_a_refused_fetch_whose_answer_quotes_the_token_raises_no_token(scenario: Scenario) -> None:
    scenario.pr_branch(NEW_SERVICE)
    workspace = scenario.checkout()
    scenario.server.refuse("git-upload-pack", 403, f"access token does not exist [sha: {TOKEN}]")
    with pytest.raises(WaveBotError) as caught:
        scenario.run(scenario.env(workspace))
    assert "git fetch failed" in str(caught.value)
    assert_clean(exception_evidence(caught.value))


class EchoingGiteaServer(GiteaServer):
    """Gitea as it is: a rejected token is quoted back in the 401 answer (`[sha: <the token sent>]`)."""

    presented = ""

    def _auth_ok(self, request: object) -> bool:
        headers = getattr(request, "headers", {})
        self.presented = str(headers.get("Authorization", "")).removeprefix("token ")
        return super()._auth_ok(request)  # type: ignore[arg-type]

    def _error(self, status: int) -> str:
        if status == 401:
            return json.dumps({"message": f"access token does not exist [sha: {self.presented}]",
                               "url": "https://gitea.example.com/api/swagger"})
        return super()._error(status)


def _unauthorized(platform: str) -> dict[str, str]:
    """A 401 answer quoting the token: Gitea's own, and a GitHub-shaped one that does the same."""
    if platform == "gitea":
        return {"message": f"access token does not exist [sha: {TOKEN}]", "url": "https://gitea.example.com/api/swagger"}
    return {"message": f"Bad credentials: {TOKEN}", "documentation_url": "https://docs.github.com/rest",
            "status": "401"}


@pytest.mark.parametrize("how", ["wrong-token", "pull", "list", "create"])
def test_a_forge_401_raises_an_error_without_the_token(
    scenario: Scenario, how: str, verbose_logging: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str],
) -> None:
    """`wrong-token`: the API expects another token (Gitea quotes the one it got back); otherwise the
    API answers the named call with a 401 that quotes the token, the last ones after the push."""
    if how == "wrong-token":
        scenario.serve_forge(EchoingGiteaServer if scenario.platform == "gitea" else None, token="the-right-token")
    else:
        scenario.serve_forge().fail(how, (401, _unauthorized(scenario.platform), {}))
    scenario.pr_branch(NEW_SERVICE)
    workspace = scenario.checkout()
    with pytest.raises(WaveBotError) as caught:
        scenario.run(scenario.env(workspace))
    error = caught.value
    assert error.exit_code == RUN_ERROR and "HTTP 401" in str(error) and "token is invalid or expired" in str(error)
    answered = [c.response for c in scenario.rsps.calls if c.response is not None and c.response.status_code == 401]
    assert answered
    if scenario.platform == "gitea" or how != "wrong-token":  # GitHub's own 401 says "Bad credentials"
        assert all(TOKEN in r.text for r in answered)  # the server did quote the token back
    if how == "create":
        assert scenario.origin_tip() != scenario.head_sha  # the push happened before the comment failed
    assert_clean(exception_evidence(error))
    assert_clean([("the error annotation", workflow_commands.error_annotation(error))])
    assert_clean(scenario.everything(verbose_logging, capfd.readouterr()))


def test_the_token_never_reaches_a_command_line(
    scenario: Scenario, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str],
) -> None:
    """Every process the run starts, from Python and from git itself (GIT_TRACE),
    has no form of the token in its argv; git gets the header through the environment instead."""
    scenario.pr_branch(NEW_SERVICE)
    workspace = scenario.checkout()

    started: list[tuple[list[str], dict[str, str]]] = []
    real_popen = subprocess.Popen

    class SpyPopen(real_popen):  # type: ignore[valid-type, misc]
        def __init__(self, args: object, *rest: object, **kwargs: object) -> None:
            argv = [args] if isinstance(args, (str, bytes, os.PathLike)) else list(args)  # type: ignore[call-overload]
            env = kwargs.get("env")
            started.append(([os.fsdecode(a) for a in argv], dict(env) if isinstance(env, dict) else dict(os.environ)))
            super().__init__(args, *rest, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(subprocess, "Popen", SpyPopen)
    trace, curl_trace = scenario.tmp / "git-trace.txt", scenario.tmp / "git-trace-curl.txt"
    monkeypatch.setenv("GIT_TRACE", str(trace))  # every command git runs, its helpers included
    monkeypatch.setenv("GIT_TRACE_CURL", str(curl_trace))  # the HTTP headers git sends (git redacts auth)

    code, log = scenario.run(scenario.env(workspace))
    assert code == 0, log

    bot_commands = [argv for argv, _ in started if argv[:2] != ["git", "http-backend"]]
    verbs = {argv[1] for argv in bot_commands if argv and argv[0] == "git" and len(argv) > 1}
    assert {"fetch", "push", "commit", "checkout"} <= verbs, verbs
    assert_clean((f"argv {argv}", "\0".join(argv)) for argv in bot_commands)
    # The header reached git through the environment, as the command-scope config auth_env promises.
    (push_env,) = [env for argv, env in started if argv[:2] == ["git", "push"]]
    assert extraheader(TOKEN) in {v for k, v in push_env.items() if k.startswith("GIT_CONFIG_VALUE_")}
    # git's own children (git-remote-http, receive-pack over HTTP) saw no token on their command lines.
    traced = trace.read_text()
    assert "remote-http" in traced and "git push" in traced
    assert_clean([("GIT_TRACE", traced)])
    curl = curl_trace.read_text()
    assert "authorization: basic <redacted>" in curl.lower()
    assert_clean([("GIT_TRACE_CURL", curl)])
    assert_authenticated_by_header_only(scenario.server)
    captured = capfd.readouterr()
    assert_clean([("stdout (fd 1)", captured.out), ("stderr (fd 2)", captured.err)])
