"""A smart-HTTP git server for tests: `git http-backend` behind basic auth, on 127.0.0.1 only.

It serves every bare repository under `root` (as GitHub and Gitea do: `<url>/<owner>/<name>`, with or
without `.git`), answers every request that does not carry exactly one
`Authorization: Basic base64("x-access-token:<token>")` with 401, and records what each request
carried, so that a test can prove git sent the header and that nothing else carried the token.

    with GitHttpServer(root, token) as server:
        server.export(root / "acme" / "gitops.git")  # allow pushes
        git clone -c http.extraheader="AUTHORIZATION: basic ..." server.url + "/acme/gitops"
"""
from __future__ import annotations

import base64
import binascii
import os
import subprocess
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from urllib.parse import urlsplit

CGI_TIMEOUT_SECONDS = 60  # one http-backend run; a pack of the example repository takes milliseconds
SOCKET_TIMEOUT_SECONDS = 30  # a client that stops talking mid-request
STOP_TIMEOUT_SECONDS = 10
MAX_BODY_BYTES = 64 * 1024 * 1024
USER = "x-access-token"  # the user name actions/checkout and wave-bot put in front of the token
SERVICES = ("git-upload-pack", "git-receive-pack")


def basic_credentials(token: str, user: str = USER) -> str:
    """base64("<user>:<token>"), as it follows `Basic ` in the header."""
    return base64.b64encode(f"{user}:{token}".encode()).decode()


def extraheader(token: str) -> str:
    """The `http.extraheader` value actions/checkout (and wave-bot's auth_env) give git."""
    return f"AUTHORIZATION: basic {basic_credentials(token)}"


def _service(path: str, query: str) -> str | None:
    for name in SERVICES:
        if path.endswith("/" + name) or f"service={name}" in query.split("&"):
            return name
    return None


@dataclass(frozen=True)
class Seen:
    """One request as it reached the server."""

    method: str
    path: str  # without the query
    query: str
    authorization: tuple[str, ...]  # every Authorization header, as sent
    headers: tuple[tuple[str, str], ...]  # every header, in order
    status: int  # what the server answered

    @property
    def service(self) -> str | None:
        """git-upload-pack (fetch) or git-receive-pack (push); None for anything else."""
        return _service(self.path, self.query)

    @property
    def target(self) -> str:
        return f"{self.path}?{self.query}" if self.query else self.path


@dataclass
class Refusal:
    service: str
    status: int
    message: str


@dataclass
class _State:
    token: str
    root: Path
    lock: threading.Lock = field(default_factory=threading.Lock)
    seen: list[Seen] = field(default_factory=list)
    refusals: list[Refusal] = field(default_factory=list)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    timeout = SOCKET_TIMEOUT_SECONDS
    protocol_version = "HTTP/1.0"  # one request per connection: no keep-alive bookkeeping

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
        pass  # the default writes every request line to stderr, which the tests scan

    # -- one request ---------------------------------------------------------------------------------

    def _handle(self) -> None:
        parts = urlsplit(self.path)
        authorization = tuple(self.headers.get_all("Authorization") or ())
        try:
            body = self._body()
        except ValueError as exc:
            self._record(parts.path, parts.query, authorization, 400)
            self._answer(400, [("Content-Type", "text/plain")], f"{exc}\n".encode())
            return
        if len(authorization) > 1:
            # GitHub answers a doubled header with 400 "Duplicate header: Authorization".
            self._record(parts.path, parts.query, authorization, 400)
            self._answer(400, [("Content-Type", "text/plain")], b"Duplicate header: Authorization\n")
            return
        if not authorization or not self._authorized(authorization[0]):
            self._record(parts.path, parts.query, authorization, 401)
            self._answer(401, [("Content-Type", "text/plain"), ("WWW-Authenticate", 'Basic realm="git"')],
                         b"Unauthorized\n")
            return
        refusal = self._refusal(parts.path, parts.query)
        if refusal is not None:
            self._record(parts.path, parts.query, authorization, refusal.status)
            self._answer(refusal.status, [("Content-Type", "text/plain; charset=utf-8")],
                         refusal.message.encode() + b"\n")
            return
        status, headers, payload = self._cgi(parts.path, parts.query, body)
        self._record(parts.path, parts.query, authorization, status)
        self._answer(status, headers, payload)

    def _authorized(self, value: str) -> bool:
        scheme, _, credentials = value.strip().partition(" ")
        if scheme.lower() != "basic":
            return False
        try:
            decoded = base64.b64decode(credentials.strip(), validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            return False
        return decoded == f"{USER}:{self.server.state.token}"

    def _refusal(self, path: str, query: str) -> Refusal | None:
        service = _service(path, query)
        with self.server.state.lock:
            return next((r for r in self.server.state.refusals if r.service == service), None)

    def _body(self) -> bytes:
        if self.command != "POST":
            return b""
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            return self._chunked()
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY_BYTES:
            raise ValueError("request body too large")
        return self.rfile.read(length)

    def _chunked(self) -> bytes:
        """The body of a `Transfer-Encoding: chunked` request (git sends large pushes that way)."""
        chunks, total = [], 0
        while True:
            size_line = self.rfile.readline(1024)
            if not size_line:
                raise ValueError("truncated chunked body")
            size = int(size_line.split(b";", 1)[0].strip() or b"0", 16)
            if size == 0:
                while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):  # trailers
                    pass
                return b"".join(chunks)
            total += size
            if total > MAX_BODY_BYTES:
                raise ValueError("request body too large")
            chunks.append(self.rfile.read(size))
            self.rfile.readline(1024)  # the CRLF after the chunk

    def _cgi(self, path: str, query: str, body: bytes) -> tuple[int, list[tuple[str, str]], bytes]:
        """Run `git http-backend` for one request, as a web server runs a CGI script."""
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LANG": "C",
            # Nothing from the test's or the developer's git setup reaches the server.
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "HOME": str(self.server.state.root),
            "GIT_PROJECT_ROOT": str(self.server.state.root),
            "GIT_HTTP_EXPORT_ALL": "1",
            "GATEWAY_INTERFACE": "CGI/1.1",
            "SERVER_PROTOCOL": self.request_version,
            "SERVER_SOFTWARE": "githttp-test",
            "REQUEST_METHOD": self.command,
            "PATH_INFO": path,
            "QUERY_STRING": query,
            "CONTENT_TYPE": self.headers.get("Content-Type") or "",
            "CONTENT_LENGTH": str(len(body)),
            "REMOTE_USER": USER,
            "REMOTE_ADDR": self.client_address[0],
            "AUTH_TYPE": "Basic",
        }
        # Git-Protocol (protocol v2) and Content-Encoding (gzip'd requests) reach the CGI as HTTP_*;
        # Authorization does not, as CGI servers keep it from scripts (REMOTE_USER says who it was).
        for name, value in self.headers.items():
            key = "HTTP_" + name.upper().replace("-", "_")
            if key not in ("HTTP_AUTHORIZATION", "HTTP_CONTENT_TYPE", "HTTP_CONTENT_LENGTH"):
                env[key] = value
        try:
            result = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True,
                                    timeout=CGI_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            return 504, [("Content-Type", "text/plain")], b"git http-backend timed out\n"
        return _parse_cgi(result.stdout)

    def _record(self, path: str, query: str, authorization: tuple[str, ...], status: int) -> None:
        seen = Seen(self.command, path, query, authorization, tuple(self.headers.items()), status)
        with self.server.state.lock:
            self.server.state.seen.append(seen)

    def _answer(self, status: int, headers: list[tuple[str, str]], payload: bytes) -> None:
        self.send_response(status)
        for name, value in headers:
            if name.lower() not in ("content-length", "connection"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)


def _parse_cgi(output: bytes) -> tuple[int, list[tuple[str, str]], bytes]:
    """A CGI script's output as (status, headers, body); `Status:` becomes the status code."""
    for separator in (b"\r\n\r\n", b"\n\n"):
        head, found, payload = output.partition(separator)
        if found:
            break
    else:
        return 502, [("Content-Type", "text/plain")], b"git http-backend sent no headers\n"
    status, headers = 200, []
    for line in head.decode("latin-1").splitlines():
        name, _, value = line.partition(":")
        if name.strip().lower() == "status":
            status = int(value.strip().split(" ", 1)[0])
        elif name.strip():
            headers.append((name.strip(), value.strip()))
    return status, headers, payload


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    state: _State


class GitHttpServer:
    """Serves the bare repositories under `root` to clients presenting `token`; a context manager."""

    def __init__(self, root: Path, token: str) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self._state = _State(token=token, root=self.root)
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- life cycle ----------------------------------------------------------------------------------

    def start(self) -> GitHttpServer:
        server = _Server(("127.0.0.1", 0), _Handler)
        server.state = self._state
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                                  name="githttp", daemon=True)
        thread.start()
        self._server, self._thread = server, thread
        return self

    def stop(self) -> None:
        if self._server is None:
            return
        self._server.shutdown()  # returns once serve_forever has left its loop (polled every 50 ms)
        self._server.server_close()
        assert self._thread is not None
        self._thread.join(timeout=STOP_TIMEOUT_SECONDS)
        alive = self._thread.is_alive()
        self._server = self._thread = None
        assert not alive, "the git HTTP server did not stop"

    def __enter__(self) -> GitHttpServer:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    # -- set-up ----------------------------------------------------------------------------------------

    @property
    def port(self) -> int:
        assert self._server is not None, "the server is not running"
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        """The server's base URL, as GITHUB_SERVER_URL would give it: http://127.0.0.1:<port>."""
        return f"http://127.0.0.1:{self.port}"

    def export(self, repo: Path, as_name: str | None = None) -> str:
        """Serve bare repository `repo` (at `as_name` under root, a symlink, when it lives elsewhere),
        pushes allowed; returns its clone URL without `.git`, as actions/checkout spells it."""
        repo = Path(repo)
        target = self.root / as_name if as_name else repo
        if as_name:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(repo.resolve(), target_is_directory=True)
        subprocess.run(["git", "config", "--file", str(repo / "config"), "http.receivepack", "true"],
                       check=True, capture_output=True, timeout=CGI_TIMEOUT_SECONDS)
        rel = target.relative_to(self.root).as_posix()
        return f"{self.url}/{rel.removesuffix('.git')}"

    def refuse(self, service: str, status: int = 403, message: str = "") -> None:
        """Answer every later request for `service` (git-upload-pack, git-receive-pack) with
        `status` and `message` as text/plain, which git shows as `remote: <message>`."""
        assert service in SERVICES, service
        with self._state.lock:
            self._state.refusals.append(Refusal(service, status, message))

    # -- what happened -----------------------------------------------------------------------------------

    @property
    def requests(self) -> list[Seen]:
        with self._state.lock:
            return list(self._state.seen)

    def clear(self) -> None:
        with self._state.lock:
            self._state.seen.clear()

    def expected_authorization(self) -> str:
        return f"basic {basic_credentials(self._state.token)}"
