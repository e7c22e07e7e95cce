"""The only module that runs git (through GitPython, imported lazily)."""
from __future__ import annotations

import os
from collections.abc import Callable


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
