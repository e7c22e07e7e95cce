"""PlannedTree: the repository as it will be once a plan is applied, without touching the disk."""
from __future__ import annotations

from pathlib import Path

import pytest

from bot.errors import WaveBotError
from bot.model import Change
from bot.repo.git import GitTree
from bot.repo.tree import Entry, Kind, PlannedTree, ReadOnce, Tree, known_blob_id, read_once, walk
from bot.repo.worktree import FsTree, apply_changes

from conftest import git, snapshot, write_files

FILES = {
    "apps/a.yaml": "a\n",
    "apps/wave-1/b.yaml": "b\n",
    "apps/wave-1/kustomization.yaml": "old\n",
    "apps/README.md": "docs\n",
}
CHANGES = [
    Change("move", "apps/wave-0/a.yaml", source="apps/a.yaml"),
    Change("move", "apps/wave-2/b.yaml", source="apps/wave-1/b.yaml"),
    Change("delete", "apps/wave-1/kustomization.yaml"),
    Change("create", "apps/wave-2/kustomization.yaml", content=b"new\n"),
]


def _view(tree: Tree, directory: str = "apps") -> dict[str, bytes | None]:
    """Every path under `directory` with its bytes (files) or None (directories), as `tree` shows it."""
    out: dict[str, bytes | None] = {}
    for entry in tree.entries(directory):
        path = f"{directory}/{entry.name}"
        if entry.kind == "dir":
            out[path] = None
            out.update(_view(tree, path))
        else:
            out[path] = tree.read(path)
    return out


def test_planned_tree_shows_exactly_what_apply_leaves(tmp_path: Path) -> None:
    write_files(tmp_path, FILES)
    planned = _view(PlannedTree(FsTree(str(tmp_path)), CHANGES))
    apply_changes(str(tmp_path), CHANGES)
    assert planned == _view(FsTree(str(tmp_path)))
    assert "apps/wave-1" not in planned  # emptied directories are gone, as in git


def test_planned_tree_kinds_and_entries(tmp_path: Path) -> None:
    write_files(tmp_path, FILES)
    tree = PlannedTree(FsTree(str(tmp_path)), CHANGES)
    assert tree.entries("apps") == [Entry("README.md", "file"), Entry("wave-0", "dir"), Entry("wave-2", "dir")]
    assert tree.kind("apps/a.yaml") is None and tree.kind("apps/wave-0/a.yaml") == "file"
    with pytest.raises(WaveBotError, match="does not exist"):
        tree.read("apps/wave-1/kustomization.yaml")


def test_a_file_moved_twice_still_reads_its_original_bytes(tmp_path: Path) -> None:
    write_files(tmp_path, FILES)
    before = snapshot(tmp_path)
    tree = PlannedTree(FsTree(str(tmp_path)), [Change("move", "x/a.yaml", source="apps/a.yaml"),
                                                Change("move", "y/a.yaml", source="x/a.yaml")])
    assert tree.read("y/a.yaml") == b"a\n" and tree.kind("x/a.yaml") is None
    assert snapshot(tmp_path) == before  # a view, never a write


def test_walk_goes_depth_first_in_order_past_hidden_and_skipped_paths_and_never_into_links(
        tmp_path: Path) -> None:
    write_files(tmp_path, {"a/b/c.yaml": "", "a/d.yaml": "", "a.yaml": "", ".git/x": "", "a/.hidden/y": "",
                           "skip/z": "", "real/r.yaml": "", "deep/" + "/".join("123456789") + "/f": ""})
    (tmp_path / "a/link").symlink_to(tmp_path / "real")
    walked = [(path, entry.kind) for path, entry in walk(FsTree(str(tmp_path)), "", {"skip"})]
    assert walked[:7] == [("a", "dir"), ("a/b", "dir"), ("a/b/c.yaml", "file"), ("a/d.yaml", "file"),
                          ("a/link", "link"), ("a.yaml", "file"), ("deep", "dir")]
    assert ("deep/1/2/3/4/5/6/7/8/9/f", "file") in walked
    assert walked[-2:] == [("real", "dir"), ("real/r.yaml", "file")]
    assert [p for p, _ in walk(FsTree(str(tmp_path)), "a/b")] == ["a/b/c.yaml"]


class _Counting:
    """A tree that counts what its readers ask of it."""

    def __init__(self, tree: Tree) -> None:
        self.tree, self.reads, self.listings = tree, 0, 0

    def entries(self, directory: str) -> list[Entry]:
        self.listings += 1
        return self.tree.entries(directory)

    def kind(self, path: str) -> Kind | None:
        return self.tree.kind(path)

    def read(self, path: str) -> bytes:
        self.reads += 1
        return self.tree.read(path)


def test_read_once_lists_and_reads_each_path_once_for_every_reader_of_a_run(tmp_path: Path) -> None:
    write_files(tmp_path, FILES)
    counting = _Counting(FsTree(str(tmp_path)))
    tree = read_once(counting)
    first = _view(tree)
    assert _view(tree) == first == _view(FsTree(str(tmp_path)))  # a second reader sees the same tree
    assert (counting.reads, counting.listings) == (4, 2)  # 4 files, apps/ and apps/wave-1/
    assert read_once(tree) is tree
    with pytest.raises(WaveBotError, match="apps/missing.yaml"):
        tree.read("apps/missing.yaml")
    with pytest.raises(WaveBotError, match="apps/missing.yaml"):
        tree.read("apps/missing.yaml")  # an error is answered again, not kept
    assert counting.reads == 6


def test_read_once_of_a_git_revision_keeps_its_blob_ids(tmp_path: Path) -> None:
    """The inventory skips reading a base blob whose id it has parsed: the view must not hide the ids."""
    write_files(tmp_path, FILES)
    git(tmp_path, "init", "-q", "-b", "main")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "files")
    with GitTree(str(tmp_path), "HEAD") as base:
        assert known_blob_id(ReadOnce(base), "apps/a.yaml") == known_blob_id(base, "apps/a.yaml") is not None
    assert known_blob_id(ReadOnce(FsTree(str(tmp_path))), "apps/a.yaml") is None
