"""The only module that touches the filesystem: reading the work tree, and applying a plan to it."""
from __future__ import annotations

import errno
import functools
import os
import stat
import tempfile
from collections.abc import Callable, Iterator, Sequence

from bot.errors import RUN_ERROR, WaveBotError
from bot.model import Change
from bot.naming import is_safe_relpath
from bot.repo.tree import Entry, Kind, entry_name, refuse_link, split
from bot.yamlio.documents import MAX_FILE_BYTES

IndexMoves = Callable[[Sequence[tuple[str, str]]], None]
"""Records in git's index the (source, destination) renames already made in the work tree, all at once."""


def _kind_of(mode: int) -> Kind:
    if stat.S_ISLNK(mode):
        return "link"
    if stat.S_ISDIR(mode):
        return "dir"
    return "file" if stat.S_ISREG(mode) else "other"


def _entry_kind(entry: os.DirEntry[str]) -> Kind:
    """The kind from the directory listing itself (d_type): no stat per entry where the filesystem says."""
    if entry.is_symlink():
        return "link"
    if entry.is_dir(follow_symlinks=False):
        return "dir"
    return "file" if entry.is_file(follow_symlinks=False) else "other"


class FsTree:
    """The work tree under `root`, read without ever following a symbolic link."""

    def __init__(self, root: str) -> None:
        if not os.path.isdir(root):
            raise WaveBotError("is not a directory", path=root, hint="pass the root of a GitOps repository")
        self.root = os.path.realpath(root)
        self._checked_dirs: set[str] = {""}

    def _abs(self, path: str) -> str:
        if path and not is_safe_relpath(path):
            raise WaveBotError("is not a path inside the repository", path=path)
        return os.path.join(self.root, path) if path else self.root

    def _check_parents(self, path: str) -> bool:
        """Whether every directory above `path` exists; a link among them is refused."""
        parent = split(path)[0]
        if parent in self._checked_dirs:
            return True
        if not self._check_parents(parent):
            return False
        kind = self.kind(parent)
        if kind == "link":
            raise refuse_link(parent)
        if kind != "dir":
            return False
        self._checked_dirs.add(parent)
        return True

    def kind(self, path: str) -> Kind | None:
        if not path:
            return "dir"
        if not self._check_parents(path):
            return None
        try:
            return _kind_of(os.lstat(self._abs(path)).st_mode)
        except FileNotFoundError:
            return None

    def entries(self, directory: str) -> list[Entry]:
        kind = self.kind(directory)
        if kind == "link":
            raise refuse_link(directory)
        if kind != "dir":
            return []
        with os.scandir(self._abs(directory)) as it:
            return sorted((Entry(e.name, _entry_kind(e)) for e in it), key=entry_name)

    def read(self, path: str) -> bytes:
        if not self._check_parents(path):
            raise WaveBotError("does not exist", path=path)
        try:
            fd = os.open(self._abs(path), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise refuse_link(path) from None
            raise WaveBotError(f"cannot be read: {exc.strerror}", path=path) from None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise WaveBotError("is not a regular file", path=path)
            # One byte over the cap is enough for yamlio to report the size; never slurp a huge file.
            # Plain reads sized by fstat: plan reads every manifest, and a buffered file object or a
            # cap-sized buffer per read costs more than the read itself.
            return _read_fd(fd, min(info.st_size, MAX_FILE_BYTES) + 1, MAX_FILE_BYTES + 1)
        finally:
            os.close(fd)


def _read_fd(fd: int, expected: int, cap: int) -> bytes:
    """Up to `cap` bytes from `fd`: `expected` in one read when the size did not change meanwhile."""
    data = os.read(fd, expected)
    while len(data) < cap:
        more = os.read(fd, min(cap - len(data), 1 << 16))
        if not more:
            break
        data += more
    return data


def real_path(path: str) -> str:
    """`path` with every symbolic link resolved (what git compares `safe.directory` with)."""
    return os.path.realpath(path)


def read_user_file(path: str) -> bytes:
    """A file the user named on the command line (`--config`), which may live outside the repo."""
    try:
        with open(path, "rb") as handle:
            return handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise WaveBotError(f"cannot be read: {exc.strerror}", path=path) from None


def append_file(path: str, text: str) -> None:
    """Append to a file the runner gave us (GITHUB_STEP_SUMMARY, GITHUB_OUTPUT)."""
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(text)


# ---- applying a plan -------------------------------------------------------------------------


class _Journal:
    """Undo steps for everything done so far, replayed in reverse when a later step fails."""

    def __init__(self) -> None:
        self.undo: list[Callable[[], None]] = []

    def rollback(self) -> list[str]:
        problems = []
        for step in reversed(self.undo):
            try:
                step()
            except OSError as exc:  # keep going: restore as much as possible
                problems.append(str(exc))
        return problems


def _write_atomic(target: str, content: bytes, mode: int) -> None:
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(target), prefix=".wave-bot-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(content)
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


class _Applier:
    def __init__(self, tree: FsTree) -> None:
        self.tree = tree
        self.journal = _Journal()
        self.moved: list[tuple[str, str]] = []
        self.emptied: set[str] = set()  # directories a move or delete may have emptied

    def ensure_dir(self, directory: str) -> None:
        # The tree's own record of directories known to exist: a wave's N moves look at it once.
        if directory in self.tree._checked_dirs:
            return
        if self.tree.kind(directory) != "dir":
            self.ensure_dir(split(directory)[0])
            full = self.tree._abs(directory)
            os.mkdir(full)
            self.journal.undo.append(lambda: os.rmdir(full))
        self.tree._checked_dirs.add(directory)

    def prune_dirs(self) -> None:
        """Remove the directories the changes emptied (git keeps no empty directories), deepest first.

        Once at the end: looking after every move would list a directory of N files N times.
        """
        for directory in sorted(self.emptied, key=lambda d: d.count("/"), reverse=True):
            full = self.tree._abs(directory)
            if directory and self.tree.kind(directory) == "dir" and not os.listdir(full):
                os.rmdir(full)
                self.journal.undo.append(functools.partial(os.mkdir, full))

    def write(self, change: Change) -> None:
        assert change.content is not None
        target = self.tree._abs(change.path)
        self.ensure_dir(split(change.path)[0])
        if self.tree.kind(change.path) == "file":
            old = self.tree.read(change.path)
            mode = stat.S_IMODE(os.lstat(target).st_mode)
            _write_atomic(target, change.content, mode)
            self.journal.undo.append(lambda: _write_atomic(target, old, mode))
        else:
            _write_atomic(target, change.content, 0o644)
            self.journal.undo.append(lambda: os.unlink(target))

    def move(self, change: Change) -> None:
        assert change.source is not None
        src, dst = change.source, change.path
        self.ensure_dir(split(dst)[0])
        os.rename(self.tree._abs(src), self.tree._abs(dst))
        self.journal.undo.append(lambda: os.rename(self.tree._abs(dst), self.tree._abs(src)))
        self.moved.append((src, dst))
        self.emptied.add(split(src)[0])

    def delete(self, change: Change) -> None:
        target = self.tree._abs(change.path)
        old = self.tree.read(change.path)
        mode = stat.S_IMODE(os.lstat(target).st_mode)
        os.unlink(target)
        self.journal.undo.append(lambda: _write_atomic(target, old, mode))
        self.emptied.add(split(change.path)[0])


def _preflight(tree: FsTree, changes: Sequence[Change]) -> None:
    """Refuse the whole plan before touching anything when the tree is not what it expects. A file
    an earlier move brings to its place (a moved unit's kustomization that is then edited) is
    checked where it is now."""
    moved: dict[str, str] = {}  # destination -> source, of the moves so far
    for change in changes:
        kind = tree.kind(_before_moves(change.path, moved))
        if change.action == "move":
            assert change.source is not None
            if tree.kind(change.source) not in ("file", "dir"):  # a directory: a unit moving as a whole
                raise WaveBotError("vanished or is not a regular file; nothing was changed", path=change.source)
            if kind is not None:
                raise WaveBotError(f"already exists; cannot move {change.source} here", path=change.path)
            moved[change.path] = change.source
        elif change.action in ("update", "delete") and kind != "file":
            raise WaveBotError("vanished or is not a regular file; nothing was changed", path=change.path)
        elif change.action == "create" and kind is not None:
            raise WaveBotError("appeared while wave-bot ran; nothing was changed", path=change.path)


def _before_moves(path: str, moved: dict[str, str]) -> str:
    """Where the file a move brings to `path` is before the moves (`path` itself when none does)."""
    probe = path
    while probe:
        if probe in moved:
            return moved[probe] + path[len(probe):]
        probe = split(probe)[0]
    return path


def apply_changes(root: str, changes: Sequence[Change], index_moves: IndexMoves | None = None) -> None:
    """Apply `changes` under `root` all-or-nothing: on any failure the tree is restored, then it raises.

    Files move by rename; `index_moves` (in a git work tree) then records every move in the index at
    once, as the last step, so that a failure there also restores the tree and leaves the index alone.
    """
    tree = FsTree(root)
    _preflight(tree, changes)
    applier = _Applier(tree)
    steps = {"create": applier.write, "update": applier.write, "move": applier.move, "delete": applier.delete}
    try:
        # The steps only add directories (ensure_dir), so the directories checked so far stay valid
        # until prune_dirs removes some.
        for change in changes:
            steps[change.action](change)
        applier.prune_dirs()
        tree._checked_dirs = {""}
        if index_moves is not None:
            index_moves(applier.moved)
    except BaseException as exc:
        problems = applier.journal.rollback()
        if isinstance(exc, WaveBotError) or not isinstance(exc, Exception):
            raise
        detail = f"; restoring also failed: {'; '.join(problems)}" if problems else "; the work tree was restored"
        raise WaveBotError(f"applying the plan failed: {exc}{detail}", path=root, exit_code=RUN_ERROR) from exc



class OwnerKeeper:
    """Gives what this process creates under `root` to the owner of `root` (see `give_back`).

    A container action runs as root in a workspace the runner's user owns (uid 1001 on GitHub's
    hosted runners); the index, config, refs and objects git rewrites and the files `apply` writes
    would otherwise be root's, and a later step of the same job could not `git commit`.
    """

    def __init__(self, root: str) -> None:
        self.root = root
        self.owner: tuple[int, int] | None = None
        self.before: dict[str, int] = {}
        if not hasattr(os, "geteuid") or os.geteuid() != 0:
            return  # only root can give files away
        info = os.lstat(root)
        if info.st_uid != 0:
            self.owner = (info.st_uid, info.st_gid)
            # What root already owned is not this run's to give away (an earlier step's files).
            self.before = dict(self._mine())

    def _mine(self) -> Iterator[tuple[str, int]]:
        """(path, inode) of every entry under root owned by root, never following a link."""
        for directory, dirs, files in os.walk(self.root):
            for name in [*dirs, *files]:
                path = os.path.join(directory, name)
                info = os.lstat(path)
                if info.st_uid == 0:
                    yield path, info.st_ino

    def give_back(self) -> int:
        """Chown every root-owned entry that was not there (as the same inode) before; their count.

        git and `apply` replace files by renaming a new one over them, so a rewritten file is a new
        inode; a file someone else owns, or one root owned and nobody touched, keeps its owner.
        """
        if self.owner is None:
            return 0
        count = 0
        for path, inode in list(self._mine()):
            if self.before.get(path) != inode:
                os.chown(path, *self.owner, follow_symlinks=False)
                count += 1
        return count
