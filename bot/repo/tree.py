"""Read-only views of a repository: the interface the pure core reads through.

The core never opens files itself. It reads a `Tree`: the work tree (`worktree.FsTree`), a git
revision (`git.GitTree`), or either of them with a plan's changes laid on top (`PlannedTree`), which
is how the checks look at the layout as it will be after `apply`.
"""
from __future__ import annotations

import hashlib
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass
from typing import Literal, Protocol

from bot.errors import WaveBotError
from bot.model import Change

Kind = Literal["file", "dir", "link", "other"]


@dataclass(frozen=True, order=True)
class Entry:
    name: str
    kind: Kind


def entry_name(entry: Entry) -> str:
    """The sort key of a directory's entries: names are unique there, so this is the dataclass order
    without comparing dataclasses (a directory of a large repository holds thousands)."""
    return entry.name


class Tree(Protocol):
    """A repository at one moment. Paths are repo-relative POSIX paths; '' is the root."""

    def entries(self, directory: str) -> list[Entry]:
        """The directory's entries sorted by name; [] when it does not exist."""

    def read(self, path: str) -> bytes:
        """The bytes of a regular file; WaveBotError for a link, a missing file or a path outside."""

    def kind(self, path: str) -> Kind | None:
        """What `path` is, without following links; None when it does not exist."""


def blob_id(data: bytes) -> str:
    """git's id of a blob holding `data` in a SHA-1 repository (`git hash-object`, without running git)."""
    digest = hashlib.sha1(b"blob %d\0" % len(data), usedforsecurity=False)
    digest.update(data)
    return digest.hexdigest()


def known_blob_id(tree: Tree, path: str) -> str | None:
    """`blob_id` of the file at `path` when `tree` knows it without reading (a git revision), else None."""
    known = getattr(tree, "blob_id", None)
    return known(path) if known is not None else None


def refuse_link(path: str) -> WaveBotError:
    return WaveBotError(
        "is a symbolic link; wave-bot never follows links (they can point outside the repository)",
        path=path,
        hint="replace the link with the file itself",
    )


def walk(tree: Tree, root: str, skip: Collection[str] = ()) -> Iterator[tuple[str, Entry]]:
    """Every entry below `root` as (path, entry), depth first in each directory's order. Hidden names
    (`.git`, `.archive`) and the paths in `skip` are left out and not entered; a link is yielded,
    never followed. A stack, not recursion: a repository's nesting is not bounded by Python's."""
    stack = [(f"{root}/" if root else "", iter(tree.entries(root)))]
    while stack:
        prefix, entries = stack[-1]
        entry = next(entries, None)
        if entry is None:
            stack.pop()
            continue
        path = prefix + entry.name
        if entry.name.startswith(".") or path in skip:
            continue
        yield path, entry
        if entry.kind == "dir":
            stack.append((f"{path}/", iter(tree.entries(path))))


def split(path: str) -> tuple[str, str]:
    head, _, tail = path.rpartition("/")
    return head, tail


def _files_below(tree: Tree, directory: str) -> list[str]:
    """Every file below `directory`, relative to it; links are refused (never followed)."""
    out: list[str] = []
    for entry in tree.entries(directory):
        if entry.kind == "dir":
            out += (f"{entry.name}/{rel}" for rel in _files_below(tree, f"{directory}/{entry.name}"))
        elif entry.kind == "link":
            raise refuse_link(f"{directory}/{entry.name}")
        else:
            out.append(entry.name)
    return out


class PlannedTree:
    """`base` as it will be once `changes` are applied."""

    def __init__(self, base: Tree, changes: Iterable[Change]) -> None:
        self._base = base
        self._content: dict[str, bytes | None] = {}  # None: deleted
        self._origin: dict[str, str] = {}  # moved file -> where its bytes are in `base`
        for change in changes:
            if change.action == "move":
                assert change.source is not None
                # A unit directory moves as a whole: every file below it goes along, same relative path.
                pairs = [(f"{change.source}/{rel}", f"{change.path}/{rel}") for rel in _files_below(base, change.source)
                         ] if base.kind(change.source) == "dir" else [(change.source, change.path)]
                for source, path in pairs:
                    self._content[source] = None
                    self._origin[path] = self._origin.pop(source, source)
                    self._content.pop(path, None)
            elif change.action == "delete":
                self._content[change.path] = None
                self._origin.pop(change.path, None)
            else:
                self._content[change.path] = change.content
                self._origin.pop(change.path, None)
        # directory -> names of the entries the changes add to it (files and the dirs leading there)
        self._children: dict[str, set[str]] = {}
        for path in [*self._origin, *(p for p, c in self._content.items() if c is not None)]:
            while path:
                parent, name = split(path)
                self._children.setdefault(parent, set()).add(name)
                path = parent

    def _added(self, directory: str) -> set[str]:
        return self._children.get(directory, set())

    def entries(self, directory: str) -> list[Entry]:
        prefix = f"{directory}/" if directory else ""
        found = {e.name: e for e in self._base.entries(directory) if self.kind(prefix + e.name) is not None}
        for name in self._added(directory):
            kind = self.kind(prefix + name)
            if kind is not None:
                found[name] = Entry(name, kind)
        return sorted(found.values(), key=entry_name)

    def kind(self, path: str) -> Kind | None:
        if path in self._origin:
            return "file"
        if path in self._content:
            return "file" if self._content[path] is not None else None
        if self._added(path):
            return "dir"
        kind = self._base.kind(path)
        if kind == "dir" and not self._has_remaining(path):
            return None
        return kind

    def _has_remaining(self, directory: str) -> bool:
        """Whether a base directory keeps anything (an emptied directory is gone, as in git)."""
        prefix = f"{directory}/"
        for entry in self._base.entries(directory):
            sub = prefix + entry.name
            if sub in self._content and self._content[sub] is None:
                continue
            if entry.kind != "dir" or self._has_remaining(sub):
                return True
        return False

    def read(self, path: str) -> bytes:
        if path in self._origin:
            return self._base.read(self._origin[path])
        if path in self._content:
            content = self._content[path]
            if content is None:
                raise WaveBotError("does not exist", path=path)
            return content
        return self._base.read(path)


class ReadOnce:
    """`tree` listed, looked up and read at most once per path: one run's view of a revision, which
    several readers walk and read in turn (the catalog, the inventory, the model of what Flux applies,
    the checks). The caller makes it for one run and drops it with the run; the tree must not change
    meanwhile (nothing is written while a plan is computed). Errors are not kept: asked again, the
    tree answers again."""

    def __init__(self, tree: Tree) -> None:
        self.tree = tree
        self._read: dict[str, bytes] = {}
        self._entries: dict[str, list[Entry]] = {}
        self._kinds: dict[str, Kind | None] = {}
        known = getattr(tree, "blob_id", None)
        if known is not None:  # a git revision names its blobs without reading them (`known_blob_id`)
            self.blob_id = known

    def entries(self, directory: str) -> list[Entry]:
        found = self._entries.get(directory)
        if found is None:
            found = self._entries[directory] = self.tree.entries(directory)
        return list(found)

    def kind(self, path: str) -> Kind | None:
        if path in self._kinds:
            return self._kinds[path]
        kind = self._kinds[path] = self.tree.kind(path)
        return kind

    def read(self, path: str) -> bytes:
        data = self._read.get(path)
        if data is None:
            data = self._read[path] = self.tree.read(path)
        return data


def read_once(tree: Tree) -> Tree:
    """`tree` as a `ReadOnce` view (itself when it is one already)."""
    return tree if isinstance(tree, ReadOnce) else ReadOnce(tree)
