"""The only module that runs git: every call through `_run`, in an environment `clean_env` builds."""
from __future__ import annotations

import bisect
import collections
import logging
import os
import re
import subprocess
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Literal

from bot.errors import RUN_ERROR, WaveBotError
from bot.repo.tree import Entry, Kind, entry_name, refuse_link
from bot.repo.worktree import real_path
from bot.yamlio.documents import MAX_FILE_BYTES

LINK_MODE = 0o120000
FETCH_BATCH = 16
"""Blobs asked of `git cat-file` in one round trip; bounds what is held ahead to 16 MiB."""
_log = logging.getLogger(__name__)
# What a caller may set to tune git's transport, configuration and tracing. Every other GIT_*
# variable is dropped: GIT_DIR, GIT_WORK_TREE, GIT_INDEX_FILE and the like (which git exports to the
# hooks it runs, pre-commit's among them) would point git at another repository or index. An allow
# list, as pre-commit's `no_git_env` keeps.
_KEPT_GIT_VARS = frozenset({
    "GIT_EXEC_PATH", "GIT_SSH", "GIT_SSH_COMMAND", "GIT_SSH_VARIANT", "GIT_PROXY_COMMAND", "GIT_ALLOW_PROTOCOL",
    "GIT_ASKPASS", "GIT_TERMINAL_PROMPT", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_NOSYSTEM",
    "GIT_CONFIG_COUNT",
})
_KEPT_GIT_PREFIXES = ("GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_", "GIT_HTTP_", "GIT_SSL_", "GIT_CURL_", "GIT_TRACE")


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The process environment without inherited repository-locating GIT_* variables, plus `extra`.

    Messages stay in English: the push outcome is told apart by git's wording.
    """
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("GIT_") or k in _KEPT_GIT_VARS or k.startswith(_KEPT_GIT_PREFIXES)}
    env["LC_ALL"] = env["LANGUAGE"] = "C"
    return env | dict(extra or {})


def _run(cwd: str, args: Sequence[str], env: Mapping[str, str] | None = None,
         stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    """`git ARGS` in `cwd`; the caller looks at the return code. A missing `cwd` raises OSError."""
    done = subprocess.run(["git", *args], cwd=cwd, env=clean_env(env), input=stdin, capture_output=True)
    _log.debug("git %s: exit %d", " ".join(args), done.returncode)  # never the environment: it holds the token
    return done


def _text(output: bytes) -> str:
    return output.decode("utf-8", errors="replace")


def _locate(root: str, env: Mapping[str, str] | None) -> tuple[str, str] | None:
    """(the work tree's top, `root` relative to it as a path prefix: '' or 'sub/dir/'); None outside one."""
    try:
        found = _run(root, ["rev-parse", "--show-toplevel", "--show-prefix"], env)
    except OSError:
        return None
    lines = _text(found.stdout).split("\n")
    if found.returncode or len(lines) < 2 or not lines[0]:
        return None
    return lines[0], lines[1]


IndexMoves = Callable[[Sequence[tuple[str, str]]], None]


def mover(root: str, env: Mapping[str, str] | None = None) -> IndexMoves | None:
    """What records renames already made in the work tree holding `root` in git's index; None outside one.

    One `git update-index --index-info` for the whole batch: each tracked source's index entry (its
    staged bytes, mode and all) moves to the destination, so git sees byte-identical renames, as after
    `git mv`. Untracked sources stay untracked. Paths are relative to `root`. git writes the index
    once, atomically: when it fails (RuntimeError) the index is as it was.
    """
    located = _locate(root, env)
    if located is None:
        return None
    top, prefix = located

    def record(moves: Sequence[tuple[str, str]]) -> None:
        if not moves:
            return
        listed = _run(top, ["ls-files", "--stage", "-z", "--full-name", "--", prefix or "."], env)
        if listed.returncode:
            raise RuntimeError(f"git ls-files failed: {_one_line(_text(listed.stderr))}")
        staged: dict[bytes, tuple[bytes, bytes]] = {}
        for line in listed.stdout.split(b"\0"):
            meta, _, path = line.partition(b"\t")
            mode, oid, stage = (meta.split(b" ") + [b"", b"", b""])[:3]
            if stage == b"0":
                staged[path] = (mode, oid)
        lines = []
        ordered = sorted(staged)
        for src, dst in moves:
            pairs = [(os.fsencode(prefix + src), os.fsencode(prefix + dst))]
            if pairs[0][0] not in staged:  # a directory moved as a whole: every tracked file below it
                below = os.fsencode(prefix + src + "/")
                at = bisect.bisect_left(ordered, below)
                pairs = []
                while at < len(ordered) and ordered[at].startswith(below):
                    pairs.append((ordered[at], os.fsencode(prefix + dst + "/") + ordered[at][len(below):]))
                    at += 1
            for old, new in pairs:
                mode, oid = staged[old]
                lines.append(b"0 %s\t%s\0" % (b"0" * len(oid), old))
                lines.append(b"%s %s 0\t%s\0" % (mode, oid, new))
        if not lines:
            return
        done = _run(top, ["update-index", "-z", "--index-info"], env, b"".join(lines))
        if done.returncode:
            raise RuntimeError(f"git update-index failed: {_one_line(_text(done.stderr))}")

    return record


def stager(root: str, env: Mapping[str, str] | None = None) -> Callable[[Sequence[str]], None] | None:
    """What stages exactly the given paths (relative to `root`) as they are in the work tree: written
    ones are added, gone ones leave the index; None outside a work tree.

    `apply` stages what it writes, so that a plain `git commit` records the layout `check` approved.
    One `git update-index` for the lot, with literal paths (never a pathspec).
    """
    located = _locate(root, env)
    if located is None:
        return None
    top, prefix = located

    def stage(paths: Sequence[str]) -> None:
        listed = b"".join(os.fsencode(prefix + p) + b"\0" for p in sorted(set(paths)))
        if not listed:
            return
        done = _run(top, ["update-index", "--add", "--remove", "-z", "--stdin"], env, listed)
        if done.returncode:
            raise WaveBotError(f"git update-index failed: {_one_line(_text(done.stderr))}", path=root,
                               hint="the files were written; stage them yourself (git add)", exit_code=RUN_ERROR)

    return stage


def unstaged(root: str, env: Mapping[str, str] | None = None) -> list[str] | None:
    """Paths (relative to `root`, below it) whose work-tree state differs from the index: modified or
    deleted and not staged, or untracked. None outside a work tree."""
    located = _locate(root, env)
    if located is None:
        return None
    top, prefix = located
    done = _run(top, ["status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames", "--",
                      prefix or "."], env)
    if done.returncode:
        return None
    out = []
    for entry in done.stdout.split(b"\0"):
        if len(entry) > 3 and (entry[1:2] != b" " or entry[:2] == b"??"):
            path = os.fsdecode(entry[3:])
            if path.startswith(prefix):
                out.append(path[len(prefix):])
    return sorted(out)


def _one_line(text: str) -> str:
    return " ".join(text.split())[:600]


@dataclass(frozen=True)
class _TreeEntry:
    mode: int
    type: str  # blob, tree, commit (a submodule)
    oid: str


class GitTree:
    """The repository as it was at revision `rev`, read from git's object store (never checked out).

    `root` may be a subdirectory of the work tree; paths are relative to it, as for `FsTree`. The
    revision's whole listing comes from one `git ls-tree`; file contents from one long-running
    `git cat-file --batch`, started on the first read and ended with the tree (or `close()`).
    """

    def __init__(self, root: str, rev: str, env: Mapping[str, str] | None = None) -> None:
        located = _locate(root, env)
        if located is None:
            raise WaveBotError("is not inside a git work tree, so a base revision cannot be read", path=root)
        self._top, prefix = located
        self._env = env
        resolved = None if rev.startswith("-") else _run(
            self._top, ["rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], env)
        if resolved is None or resolved.returncode:
            raise WaveBotError(
                f"unknown revision '{rev}'", hint="fetch it first (git fetch origin <branch>) or pass a commit SHA"
            )
        self.rev = _text(resolved.stdout).strip()
        self._objects: dict[str, _TreeEntry] = {}
        self._children: dict[str, list[Entry]] = {"": []}
        treeish = f"{self.rev}:{prefix.rstrip('/')}" if prefix else self.rev
        listed = _run(self._top, ["ls-tree", "-r", "-t", "-z", treeish], env)
        if listed.returncode == 0:  # else `root` did not exist at `rev`: an empty tree
            self._index(listed.stdout)
        self._batch: subprocess.Popen[bytes] | None = None
        self._fetched: dict[str, bytes] = {}  # blobs read ahead, until asked for
        self._asked: set[str] = set()
        self._unread: dict[str, collections.deque[str]] = {}

    def _index(self, listing: bytes) -> None:
        for record in listing.split(b"\0"):
            if not record:
                continue
            meta, _, raw = record.partition(b"\t")
            mode, kind, oid = meta.split()
            path = os.fsdecode(raw)
            obj = _TreeEntry(int(mode, 8), kind.decode(), oid.decode())
            self._objects[path] = obj
            parent, _, name = path.rpartition("/")
            self._children.setdefault(parent, []).append(Entry(name, self._kind(obj)))
            if obj.type == "tree":
                self._children.setdefault(path, [])

    @staticmethod
    def _kind(obj: _TreeEntry) -> Kind:
        if obj.type == "tree":
            return "dir"
        if obj.type == "blob":
            return "link" if obj.mode == LINK_MODE else "file"
        return "other"  # a submodule

    def kind(self, path: str) -> Kind | None:
        if not path:
            return "dir"
        obj = self._objects.get(path)
        return None if obj is None else self._kind(obj)

    def entries(self, directory: str) -> list[Entry]:
        if directory and self.kind(directory) != "dir":
            return []
        return sorted(self._children.get(directory, []), key=entry_name)

    def blob_id(self, path: str) -> str | None:
        """The SHA-1 blob id `path` has at this revision (what `tree.blob_id` computes from bytes);
        None for anything but a regular file, and in a SHA-256 repository."""
        obj = self._objects.get(path)
        if obj is None or obj.type != "blob" or obj.mode == LINK_MODE or len(obj.oid) != 40:
            return None
        return obj.oid

    def read(self, path: str) -> bytes:
        obj = self._objects.get(path)
        if obj is None or obj.type != "blob":
            raise WaveBotError(f"does not exist at {self.rev[:12]}", path=path)
        if obj.mode == LINK_MODE:
            raise refuse_link(path)
        data = self._fetched.pop(obj.oid, None)
        if data is None:
            self._fetch([obj.oid, *self._next_siblings(path, obj.oid)])
            data = self._fetched.pop(obj.oid)
        return data

    def _next_siblings(self, path: str, oid: str) -> list[str]:
        """Up to FETCH_BATCH - 1 blobs of `path`'s directory not asked for yet, in listing order: the
        inventory reads a wave's files one after another, so one round trip brings the next ones."""
        directory = path.rpartition("/")[0]
        queue = self._unread.get(directory)
        if queue is None:
            prefix = f"{directory}/" if directory else ""
            queue = self._unread[directory] = collections.deque(
                o.oid for o in (self._objects[prefix + e.name] for e in self._children.get(directory, ())
                                if e.kind == "file"))
        found: list[str] = []
        while queue and len(found) < FETCH_BATCH - 1:
            candidate = queue.popleft()
            if candidate != oid and candidate not in self._asked:
                found.append(candidate)
        return found

    def _fetch(self, oids: list[str]) -> None:
        """The blobs `oids` through the one `git cat-file --batch`, asked for together, answered in turn."""
        if self._batch is None:
            self._batch = subprocess.Popen(["git", "cat-file", "--batch"], cwd=self._top, env=clean_env(self._env),
                                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            weakref.finalize(self, _end, self._batch)
        assert self._batch.stdin is not None and self._batch.stdout is not None
        # A few dozen ids stay far below a pipe's buffer, so git never waits for us to read while we write.
        self._batch.stdin.write("".join(f"{oid}\n" for oid in oids).encode())
        self._batch.stdin.flush()
        self._asked.update(oids)
        for oid in oids:
            header = self._batch.stdout.readline().split()
            if len(header) != 3 or header[1] != b"blob":
                raise WaveBotError(f"git cat-file could not read {oid} at {self.rev[:12]}", exit_code=RUN_ERROR)
            self._fetched[oid] = _take(self._batch.stdout, int(header[2]), MAX_FILE_BYTES + 1)

    def close(self) -> None:
        if self._batch is not None:
            _end(self._batch)
            self._batch = None

    def __enter__(self) -> GitTree:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _take(stream: IO[bytes], size: int, keep: int) -> bytes:
    """The first `keep` of the `size` bytes (and the newline) git sends next; the rest is read and dropped."""
    data = stream.read(min(size, keep))
    left = size - len(data) + 1
    while left > 0:
        chunk = stream.read(min(left, 1 << 16))
        if not chunk:
            raise WaveBotError("git cat-file stopped in the middle of a file", exit_code=RUN_ERROR)
        left -= len(chunk)
    return data


def _end(process: subprocess.Popen[bytes]) -> None:
    if process.stdin is not None and not process.stdin.closed:
        process.stdin.close()
    process.wait()
    if process.stdout is not None:
        process.stdout.close()


# ---- the action's work tree -------------------------------------------------------------------

BOT_TRAILER = "Generated-by: flux-wave-bot"
# How git says "the branch moved under us" and "you may not push here" (status codes as git prints
# them: a path in the message may well contain "403").
_PUSH_RACE = re.compile(r"\[rejected\]|non-fast-forward|fetch first|stale info")
_PUSH_REFUSED = re.compile(
    r"\[remote rejected\]|returned error: 40[13]|permission to \S+ denied|protected branch"
    r"|authentication failed|could not read username|write access to repository not granted",
)


@dataclass(frozen=True)
class PushResult:
    outcome: Literal["pushed", "race", "refused"]
    detail: str = ""


@dataclass(frozen=True)
class Identity:
    name: str
    email: str


_BRANCH_CHARS = re.compile(r"[A-Za-z0-9._/+@=,-]+")


def valid_branch(name: str) -> bool:
    """Whether `name` is a branch name git accepts, made only of characters branch names really use.

    Stricter than git on purpose: no shell metacharacters, quotes, spaces or control characters,
    and no leading '-' that could pass for an option; the name also travels into logs and comments.
    """
    if not _BRANCH_CHARS.fullmatch(name) or name.startswith("-"):
        return False
    return _run(".", ["check-ref-format", f"refs/heads/{name}"]).returncode == 0


def auth_env(server_url: str, token: str) -> dict[str, str]:
    """Git configuration, passed through the environment, that authenticates HTTP to the forge only.

    Nothing is written to .git/config and nothing appears on a command line. The empty value first
    resets any header a checkout step persisted, so the forge never receives two Authorization headers.
    """
    header = "AUTHORIZATION: basic " + secret_forms(token)[1]
    key = f"http.{server_url.rstrip('/')}/.extraheader"
    pairs = [(key, ""), (key, header)]
    env = {"GIT_CONFIG_COUNT": str(len(pairs)), "GIT_TERMINAL_PROMPT": "0"}
    for i, (k, v) in enumerate(pairs):
        env[f"GIT_CONFIG_KEY_{i}"], env[f"GIT_CONFIG_VALUE_{i}"] = k, v
    return env


class Workspace:
    """The repository the action runs in: fetch, check out, commit and push, never force."""

    def __init__(self, path: str, env: dict[str, str], secret: str = "") -> None:
        # git passes a server's refusal on as "remote: ..."; a server that quotes the token back
        # (Gitea does, for a bad token) must not get it into our messages.
        self._secrets = secret_forms(secret) if secret else ()

        config = dict(env)
        # Container actions run as root on a workspace owned by the runner's user: without this git
        # refuses the repository ("dubious ownership"). Command-scope config, not ~/.gitconfig.
        count = int(config.get("GIT_CONFIG_COUNT", "0"))
        config[f"GIT_CONFIG_KEY_{count}"] = "safe.directory"
        config[f"GIT_CONFIG_VALUE_{count}"] = real_path(path)
        # Never run hooks from the repository being read.
        config[f"GIT_CONFIG_KEY_{count + 1}"], config[f"GIT_CONFIG_VALUE_{count + 1}"] = "core.hooksPath", os.devnull
        config["GIT_CONFIG_COUNT"] = str(count + 2)
        self._env = config
        self.path = path
        located = _locate(path, config)
        if located is None or located[1]:  # not a work tree, or only a directory inside one
            raise WaveBotError("is not a git checkout", path=path,
                               hint="run actions/checkout before wave-bot", exit_code=RUN_ERROR)

    def _run(self, args: Sequence[str], extra: Mapping[str, str] | None = None,
             stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
        return _run(self.path, args, self._env | dict(extra or {}), stdin)

    def git(self, *args: str, extra: Mapping[str, str] | None = None, stdin: bytes | None = None) -> str:
        """git's output; a failure is a WaveBotError carrying git's complaint (secrets redacted)."""
        done = self._run(args, extra, stdin)
        if done.returncode:
            raise WaveBotError(f"git {args[0]} failed: {self._stderr(done.stderr)}", exit_code=RUN_ERROR)
        return _text(done.stdout).removesuffix("\n")

    def _stderr(self, stderr: bytes) -> str:
        """git's complaint on one line, secrets redacted before anything is cut."""
        text = _text(stderr).strip()
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return _one_line(text.strip("'\" \n"))

    def fetch(self, *refspecs: str) -> None:
        self.git("fetch", "--no-tags", "--quiet", "origin", *refspecs)

    def mover(self) -> IndexMoves | None:
        return mover(self.path, self._env)

    def tree_at(self, rev: str) -> GitTree:
        return GitTree(self.path, rev, self._env)

    def _answer(self, *args: str) -> str | None:
        """git's output, or None when the command fails (a question whose answer may be no)."""
        done = self._run(args)
        return None if done.returncode else _text(done.stdout)

    def has_commit(self, sha: str) -> bool:
        return self._answer("cat-file", "-e", f"{sha}^{{commit}}") is not None

    def checkout(self, branch: str | None, start: str) -> None:
        """Check out `start`, on local `branch` (created or reset to it) or detached."""
        if branch is None:
            self.git("checkout", "--quiet", "--detach", start, "--")
        else:
            self.git("checkout", "--quiet", "-B", branch, start, "--")

    def merge_base(self, a: str, b: str) -> str | None:
        return (self._answer("merge-base", a, b) or "").strip() or None

    def is_shallow(self) -> bool:
        return self.git("rev-parse", "--is-shallow-repository").strip() == "true"

    def head(self) -> str:
        return self.git("rev-parse", "HEAD").strip()

    def head_is_bots(self) -> bool:
        return BOT_TRAILER in self.git("log", "-1", "--format=%B")

    def stage(self, paths: list[str]) -> None:
        """Stage exactly `paths` (additions, changes and deletions), nothing else in the tree.

        One `git update-index` for the lot: literal paths (no pathspec matching, which grows with
        the number of paths times the size of the index); a path gone from the work tree leaves the index.
        """
        listed = b"".join(os.fsencode(p) + b"\0" for p in sorted(set(paths)))
        if listed:
            self.git("update-index", "--add", "--remove", "-z", "--stdin", stdin=listed)

    def staged_diff(self) -> str:
        return self.git("diff", "--cached", "--find-renames", "--no-color", "--no-ext-diff")

    def commit(self, message: str, author: Identity) -> str:
        identity = {"GIT_AUTHOR_NAME": author.name, "GIT_AUTHOR_EMAIL": author.email,
                    "GIT_COMMITTER_NAME": author.name, "GIT_COMMITTER_EMAIL": author.email}
        self.git("commit", "--quiet", "--no-verify", "--no-gpg-sign", "-m", message, extra=identity)
        return self.head()

    def push(self, branch: str) -> PushResult:
        refspec = f"HEAD:refs/heads/{branch}"  # explicit: never a force, never another ref
        done = self._run(["push", "origin", refspec])
        if done.returncode == 0:
            return PushResult("pushed")
        detail = self._stderr(done.stderr)
        lowered = detail.lower()
        # A hook or branch protection ("[remote rejected]") is a refusal even when the reason
        # mentions fast-forwards, so look for refusals first.
        if _PUSH_REFUSED.search(lowered):
            return PushResult("refused", detail)
        if _PUSH_RACE.search(lowered):
            return PushResult("race", detail)
        raise WaveBotError(f"git push failed: {detail}", exit_code=RUN_ERROR)


def secret_forms(token: str) -> tuple[str, ...]:
    """The token as it may show up in a server's answer: raw, or inside the basic-auth header."""
    import base64

    return (token, base64.b64encode(f"x-access-token:{token}".encode()).decode(),
            base64.b64encode(token.encode()).decode())
