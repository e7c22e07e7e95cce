"""The only module that runs git (through GitPython, imported lazily)."""
from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from bot.errors import WaveBotError
from bot.tree import Entry, Kind, refuse_link
from bot.yamlio import MAX_FILE_BYTES

LINK_MODE = 0o120000


def mover(root: str) -> Callable[[str, str], bool] | None:
    """A `git mv` for files tracked in the work tree holding `root`; None outside a work tree.

    Paths given to the mover are relative to `root`, which may be a subdirectory of the work tree.
    The mover returns False for an untracked file, which the caller then renames itself.
    """
    import git

    try:
        repo = git.Repo(root, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        return None
    if repo.bare or repo.working_tree_dir is None:
        return None
    prefix = os.path.relpath(os.path.realpath(root), os.path.realpath(repo.working_tree_dir))
    prefix = "" if prefix == "." else prefix.replace(os.sep, "/") + "/"
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

    def __init__(self, root: str, rev: str) -> None:
        import git

        try:
            self._repo = git.Repo(root, search_parent_directories=True)
            commit = self._repo.commit(rev)
        except (git.InvalidGitRepositoryError, git.NoSuchPathError):
            raise WaveBotError("is not inside a git repository, so --base cannot be read", path=root) from None
        except (git.BadName, ValueError, git.GitCommandError):
            raise WaveBotError(
                f"unknown revision '{rev}'", hint="fetch it first (git fetch origin <branch>) or pass a commit SHA"
            ) from None
        assert self._repo.working_tree_dir is not None
        prefix = os.path.relpath(os.path.realpath(root), os.path.realpath(self._repo.working_tree_dir))
        self._prefix = "" if prefix == "." else prefix.replace(os.sep, "/")
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
