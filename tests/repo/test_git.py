"""`git.py` on real repositories: the base revision read through one batch, and a clean environment."""
from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from bot.config import load_config
from bot.errors import WaveBotError
from bot.flux.inventory import read_inventory
from bot.flux.manifests import ParseCache
from bot.repo.git import GitTree
from bot.repo.tree import blob_id
from bot.repo.worktree import FsTree
from bot.yamlio.documents import MAX_FILE_BYTES

from conftest import git, write_files

FILES = {
    "catalog/a.yaml": "kind: ServiceDefinition\n",
    "apps/wave-0/a.yaml": "a: 1\n",
    "apps/wave-0/b.sops.yaml": "sops:\n  version: 3.9.0\n",
    "apps/wave-1/c.yaml": "c: 3\n",
    "clusters/base/apps.yaml": "kind: Kustomization\n",
    "weird name, with spaces/ü.yaml": "x: 1\n",
}


def walk(tree: FsTree | GitTree, directory: str = "") -> dict[str, object]:
    """Every path under `directory` with its kind, and the bytes of every file."""
    seen: dict[str, object] = {}
    for entry in tree.entries(directory):
        path = f"{directory}/{entry.name}" if directory else entry.name
        seen[path] = (entry.kind, tree.kind(path), tree.read(path) if entry.kind == "file" else None)
        if entry.kind == "dir":
            seen.update(walk(tree, path))
    return seen


def test_a_revision_reads_as_its_checkout_does(make_repo: Callable[..., Path]) -> None:
    repo = make_repo(FILES)
    (repo / "apps/wave-0/a.yaml").write_text("changed after the commit\n")  # the work tree differs
    with GitTree(str(repo), "HEAD") as base:
        assert base.kind("apps/wave-0/a.yaml") == "file" and base.kind("apps") == "dir"
        assert base.kind("apps/nope.yaml") is None and base.entries("apps/wave-0/a.yaml") == []
        assert base.read("apps/wave-0/a.yaml") == b"a: 1\n"
        git(repo, "checkout", "-q", "--", ".")
        assert walk(base) == {k: v for k, v in walk(FsTree(str(repo))).items() if not k.startswith(".git")}


def test_a_root_below_the_top_reads_its_own_paths(make_repo: Callable[..., Path]) -> None:
    repo = make_repo({f"gitops/{path}": text for path, text in FILES.items()})
    base = GitTree(str(repo / "gitops"), "HEAD")
    assert base.read("apps/wave-1/c.yaml") == b"c: 3\n"
    assert [e.name for e in base.entries("")] == ["apps", "catalog", "clusters", "weird name, with spaces"]


def test_links_are_refused_and_missing_files_named(make_repo: Callable[..., Path]) -> None:
    repo = make_repo(FILES, commit=False)
    os.symlink("/etc/passwd", repo / "apps/wave-0/passwd.yaml")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a link")
    base = GitTree(str(repo), "HEAD")
    assert base.kind("apps/wave-0/passwd.yaml") == "link"
    with pytest.raises(WaveBotError, match="symbolic link"):
        base.read("apps/wave-0/passwd.yaml")
    with pytest.raises(WaveBotError, match=r"does not exist at [0-9a-f]{12}") as caught:
        base.read("apps/gone.yaml")
    assert caught.value.path == "apps/gone.yaml"


def test_a_huge_blob_is_cut_and_the_next_read_is_still_right(make_repo: Callable[..., Path]) -> None:
    repo = make_repo({**FILES, "apps/huge.yaml": b"#" * (3 * MAX_FILE_BYTES)})
    base = GitTree(str(repo), "HEAD")
    assert base.read("apps/huge.yaml") == b"#" * (MAX_FILE_BYTES + 1)
    assert base.read("apps/wave-1/c.yaml") == b"c: 3\n"


@pytest.mark.parametrize("rev", ["no-such-branch", "--output=/tmp/x", "HEAD~5"])
def test_an_unknown_revision_is_an_input_error_with_a_hint(make_repo: Callable[..., Path], rev: str) -> None:
    repo = make_repo(FILES)
    with pytest.raises(WaveBotError, match=f"unknown revision '{rev}'") as caught:
        GitTree(str(repo), rev)
    assert caught.value.exit_code == 2 and caught.value.hint and "fetch" in caught.value.hint


def test_outside_a_work_tree_no_base_can_be_read(tmp_path: Path) -> None:
    write_files(tmp_path / "plain", FILES)
    with pytest.raises(WaveBotError, match="not inside a git work tree"):
        GitTree(str(tmp_path / "plain"), "HEAD")


def test_inherited_git_variables_do_not_redirect_the_read(
    make_repo: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(FILES)
    other = make_repo({"apps/wave-0/a.yaml": "from the other repository\n"}, name="other")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(other))
    assert GitTree(str(repo), "HEAD").read("apps/wave-0/a.yaml") == b"a: 1\n"


def test_a_base_read_after_the_head_reads_only_the_blobs_that_differ(
    example_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What `plan --base` does: the head is parsed first; the base then reuses every parse of a blob
    both share, found by the blob id `git ls-tree` lists, without asking git for its bytes."""
    with open(example_repo / "apps/wave-0/pihole.yaml", "a") as handle:
        handle.write("# edited\n")
    git(example_repo, "commit", "-qam", "edit pihole")
    config = load_config(FsTree(str(example_repo)))
    cache = ParseCache()
    now = read_inventory(FsTree(str(example_repo)), config, cache)
    read: list[str] = []
    real = GitTree.read

    def counting(self: GitTree, path: str) -> bytes:
        read.append(path)
        return real(self, path)

    monkeypatch.setattr(GitTree, "read", counting)
    with GitTree(str(example_repo), "HEAD~1") as base_tree:
        base = read_inventory(base_tree, config, cache)
    assert base.counts() == now.counts()
    app_files = [p for p in read if p.startswith("apps/") and not p.endswith("/kustomization.yaml")]
    assert app_files == ["apps/wave-0/pihole.yaml"]


def test_the_blob_id_from_bytes_is_the_one_git_lists(make_repo: Callable[..., Path]) -> None:
    repo = make_repo(FILES)
    base = GitTree(str(repo), "HEAD")
    for path in ("apps/wave-0/a.yaml", "weird name, with spaces/ü.yaml"):
        assert base.blob_id(path) == blob_id((repo / path).read_bytes())
        assert base.blob_id(path) == git(repo, "rev-parse", f"HEAD:{path}").strip()
    assert base.blob_id("apps") is None and base.blob_id("nope.yaml") is None


def test_reading_ahead_returns_every_file_as_asked_for_in_any_order(make_repo: Callable[..., Path]) -> None:
    """Blobs come from git in batches of a directory's next files; each read still gets its own bytes."""
    files = {f"apps/wave-0/f{i:02d}.yaml": f"n: {i}\n" for i in range(40)}
    repo = make_repo({**files, "apps/wave-0/same.yaml": "n: 7\n"})  # a blob two paths share
    base = GitTree(str(repo), "HEAD")
    order = sorted(files, reverse=True)[:5] + sorted(files) + ["apps/wave-0/same.yaml", "apps/wave-0/f07.yaml"]
    assert [base.read(p) for p in order] == [files.get(p, "n: 7\n").encode() for p in order]
