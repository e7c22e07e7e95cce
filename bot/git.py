"""The only module that runs git (through GitPython, imported lazily)."""
from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from bot.errors import WaveBotError
from bot.tree import Entry, Kind, refuse_link
from bot.yamlio import MAX_FILE_BYTES

LINK_MODE = 0o120000


def _open(root: str, env: dict[str, str] | None) -> Any:
    """The git.Repo holding `root` (None outside a work tree), running git with `env` added."""
    import git

    try:
        repo = git.Repo(root, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        return None
    if env:
        repo.git.update_environment(**env)
    return repo


def _prefix(repo: Any, root: str) -> str:
    """`root` relative to the work tree's top, as a path prefix ('' at the top)."""
    rel = os.path.relpath(os.path.realpath(root), os.path.realpath(repo.working_tree_dir))
    return "" if rel == "." else rel.replace(os.sep, "/") + "/"


def mover(root: str, env: dict[str, str] | None = None) -> Callable[[str, str], bool] | None:
    """A `git mv` for files tracked in the work tree holding `root`; None outside a work tree.

    Paths given to the mover are relative to `root`, which may be a subdirectory of the work tree.
    The mover returns False for an untracked file, which the caller then renames itself.
    """
    repo = _open(root, env)
    if repo is None or repo.bare or repo.working_tree_dir is None:
        return None
    prefix = _prefix(repo, root)
    tracked = set(repo.git.ls_files("-z", "--", prefix or ".").split("\0"))

    def move(src: str, dst: str) -> bool:
        if prefix + src not in tracked:
            return False
        repo.git.mv("--", prefix + src, prefix + dst)
        tracked.discard(prefix + src)
        tracked.add(prefix + dst)
        return True

    return move


class GitTree:
    """The repository as it was at revision `rev`, read from git's object store (never checked out).

    `root` may be a subdirectory of the work tree; paths are relative to it, as for `FsTree`.
    """

    def __init__(self, root: str, rev: str, env: dict[str, str] | None = None) -> None:
        import git

        repo = _open(root, env)
        if repo is None or repo.working_tree_dir is None:
            raise WaveBotError("is not inside a git work tree, so a base revision cannot be read", path=root)
        try:
            commit = repo.commit(rev)
        except (git.BadName, ValueError, git.GitCommandError):
            raise WaveBotError(
                f"unknown revision '{rev}'", hint="fetch it first (git fetch origin <branch>) or pass a commit SHA"
            ) from None
        self._prefix = _prefix(repo, root).rstrip("/")
        self._root = commit.tree
        self.rev = commit.hexsha

    def _object(self, path: str) -> Any:
        full = "/".join(p for p in (self._prefix, path) if p)
        if not full:
            return self._root
        try:
            return self._root / full
        except KeyError:
            return None

    @staticmethod
    def _kind(obj: Any) -> Kind:
        if obj.type == "tree":
            return "dir"
        if obj.type == "blob":
            return "link" if obj.mode == LINK_MODE else "file"
        return "other"  # a submodule

    def kind(self, path: str) -> Kind | None:
        obj = self._object(path)
        return None if obj is None else self._kind(obj)

    def entries(self, directory: str) -> list[Entry]:
        obj = self._object(directory)
        if obj is None or obj.type != "tree":
            return []
        return sorted(Entry(item.name, self._kind(item)) for item in obj)

    def read(self, path: str) -> bytes:
        obj = self._object(path)
        if obj is None or obj.type != "blob":
            raise WaveBotError(f"does not exist at {self.rev[:12]}", path=path)
        if obj.mode == LINK_MODE:
            raise refuse_link(path)
        return bytes(obj.data_stream.read(MAX_FILE_BYTES + 1))


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
    import subprocess

    if not _BRANCH_CHARS.fullmatch(name) or name.startswith("-"):
        return False
    check = subprocess.run(["git", "check-ref-format", f"refs/heads/{name}"], capture_output=True)
    return check.returncode == 0


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
        import git

        # git passes a server's refusal on as "remote: ..."; a server that quotes the token back
        # (Gitea does, for a bad token) must not get it into our messages.
        self._secrets = secret_forms(secret) if secret else ()

        config = dict(env)
        # Container actions run as root on a workspace owned by the runner's user: without this git
        # refuses the repository ("dubious ownership"). Command-scope config, not ~/.gitconfig.
        count = int(config.get("GIT_CONFIG_COUNT", "0"))
        config[f"GIT_CONFIG_KEY_{count}"] = "safe.directory"
        config[f"GIT_CONFIG_VALUE_{count}"] = os.path.realpath(path)
        # Never run hooks from the repository being read.
        config[f"GIT_CONFIG_KEY_{count + 1}"], config[f"GIT_CONFIG_VALUE_{count + 1}"] = "core.hooksPath", os.devnull
        config["GIT_CONFIG_COUNT"] = str(count + 2)
        self._env = config
        try:
            self.repo = git.Repo(path)
        except (git.InvalidGitRepositoryError, git.NoSuchPathError):
            raise WaveBotError("is not a git checkout", path=path,
                               hint="run actions/checkout before wave-bot", exit_code=1) from None
        self.repo.git.update_environment(**config)
        self.path = path

    def git(self, *args: str) -> str:
        import git

        try:
            return str(self.repo.git.execute(["git", *args], env=self._env))
        except git.GitCommandError as exc:
            failure = f"git {args[0]} failed: {self._stderr(exc)}"
        # Raised outside the except block, so no __context__ keeps git's raw stderr.
        raise WaveBotError(failure, exit_code=1)

    def _stderr(self, exc: Any) -> str:
        """git's complaint on one line, secrets redacted before anything is cut."""
        text = str(getattr(exc, "stderr", "") or exc).strip()
        for secret in self._secrets:
            text = text.replace(secret, "***")
        text = text.removeprefix("stderr: ").strip("'\" \n")
        return " ".join(text.split())[:600]

    def fetch(self, *refspecs: str) -> None:
        self.git("fetch", "--no-tags", "--quiet", "origin", *refspecs)

    def mover(self) -> Callable[[str, str], bool] | None:
        return mover(self.path, self._env)

    def tree_at(self, rev: str) -> GitTree:
        return GitTree(self.path, rev, self._env)

    def _answer(self, *args: str) -> str | None:
        """git's output, or None when the command fails (a question whose answer may be no)."""
        import git

        try:
            return str(self.repo.git.execute(["git", *args], env=self._env))
        except git.GitCommandError:
            return None

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
        """Stage exactly `paths` (additions, changes and deletions), nothing else in the tree."""
        present = sorted(p for p in set(paths) if os.path.lexists(os.path.join(self.path, p)))
        gone = sorted(set(paths) - set(present))
        if present:
            self.git("add", "--all", "--", *present)
        if gone:  # a `git mv` already recorded most of these; the rest were renamed or deleted
            self.git("rm", "--quiet", "--cached", "--ignore-unmatch", "--", *gone)

    def staged_diff(self) -> str:
        return self.git("diff", "--cached", "--find-renames", "--no-color", "--no-ext-diff")

    def commit(self, message: str, author: Identity) -> str:
        identity = {"GIT_AUTHOR_NAME": author.name, "GIT_AUTHOR_EMAIL": author.email,
                    "GIT_COMMITTER_NAME": author.name, "GIT_COMMITTER_EMAIL": author.email}
        with self.repo.git.custom_environment(**identity):
            self.git("commit", "--quiet", "--no-verify", "--no-gpg-sign", "-m", message)
        return self.head()

    def push(self, branch: str) -> PushResult:
        import git

        refspec = f"HEAD:refs/heads/{branch}"  # explicit: never a force, never another ref
        try:
            self.repo.git.execute(["git", "push", "origin", refspec], env=self._env)
        except git.GitCommandError as exc:
            detail = self._stderr(exc)
            lowered = detail.lower()
            # A hook or branch protection ("[remote rejected]") is a refusal even when the reason
            # mentions fast-forwards, so look for refusals first.
            if _PUSH_REFUSED.search(lowered):
                return PushResult("refused", detail)
            if _PUSH_RACE.search(lowered):
                return PushResult("race", detail)
        else:
            return PushResult("pushed")
        raise WaveBotError(f"git push failed: {detail}", exit_code=1)


def secret_forms(token: str) -> tuple[str, ...]:
    """The token as it may show up in a server's answer: raw, or inside the basic-auth header."""
    import base64

    return (token, base64.b64encode(f"x-access-token:{token}".encode()).decode(),
            base64.b64encode(token.encode()).decode())
