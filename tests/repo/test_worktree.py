from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from bot.errors import RUN_ERROR, WaveBotError
from bot.model import Change
from bot.repo import git as gitlayer
from bot.repo import worktree
from bot.repo.worktree import FsTree, apply_changes

from conftest import git, snapshot, write_files

FILES = {
    "apps/a.yaml": "a: 1\n",
    "apps/b.sops.yaml": "secret: ENC[AES256_GCM,data:xx]\nsops:\n    version: 3.9.0\n",
    "apps/wave-1/old.yaml": "kind: K\n",
    "clusters/base/gen.yaml": "old\n",
}
CHANGES = [
    Change("move", "apps/wave-0/a.yaml", source="apps/a.yaml"),
    Change("move", "apps/wave-0/b.sops.yaml", source="apps/b.sops.yaml"),
    Change("move", "apps/wave-2/old.yaml", source="apps/wave-1/old.yaml"),
    Change("create", "apps/wave-0/kustomization.yaml", content=b"resources: []\n"),
    Change("update", "clusters/base/gen.yaml", content=b"new\n"),
]


def test_apply_moves_bytes_untouched_and_writes_generated_files(tmp_path: Path) -> None:
    write_files(tmp_path, FILES)
    apply_changes(str(tmp_path), CHANGES)
    after = snapshot(tmp_path)
    assert after["apps/wave-0/b.sops.yaml"] == FILES["apps/b.sops.yaml"].encode()
    assert after["apps/wave-0/a.yaml"] == b"a: 1\n"
    assert after["clusters/base/gen.yaml"] == b"new\n"
    assert "apps/a.yaml" not in after and "apps/wave-1/" not in after  # emptied directory removed
    assert oct(os.stat(tmp_path / "apps/wave-0/kustomization.yaml").st_mode & 0o777) == "0o644"


def test_apply_in_a_git_work_tree_stages_moves_as_renames(make_repo: Callable[..., Path]) -> None:
    repo = make_repo(FILES)
    apply_changes(str(repo), CHANGES, gitlayer.mover(str(repo)))
    status = git(repo, "status", "--porcelain").splitlines()
    assert "R  apps/a.yaml -> apps/wave-0/a.yaml" in status
    assert "R  apps/b.sops.yaml -> apps/wave-0/b.sops.yaml" in status
    assert " M clusters/base/gen.yaml" in status
    assert "?? apps/wave-0/kustomization.yaml" in status


def test_untracked_files_are_renamed_in_a_work_tree(make_repo: Callable[..., Path]) -> None:
    repo = make_repo({"README.md": "x\n"})
    write_files(repo, {"apps/a.yaml": "a: 1\n"})
    apply_changes(str(repo), [Change("move", "apps/wave-0/a.yaml", source="apps/a.yaml")], gitlayer.mover(str(repo)))
    assert (repo / "apps/wave-0/a.yaml").read_text() == "a: 1\n"


@pytest.mark.parametrize("fail_at", range(len(CHANGES)))
def test_a_failure_part_way_restores_the_tree_exactly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fail_at: int
) -> None:
    write_files(tmp_path, FILES)
    before = snapshot(tmp_path)
    calls = {"n": 0}
    real_rename, real_replace = os.rename, os.replace

    def flaky(real: Callable[[str, str], None]) -> Callable[[str, str], None]:
        def op(src: str, dst: str) -> None:
            # Every change ends in exactly one rename/replace: fail the one of change `fail_at`.
            if calls["n"] == fail_at:
                calls["n"] += 1
                raise OSError(28, "No space left on device")
            calls["n"] += 1
            real(src, dst)
        return op

    monkeypatch.setattr(worktree.os, "rename", flaky(real_rename))
    monkeypatch.setattr(worktree.os, "replace", flaky(real_replace))
    with pytest.raises(WaveBotError, match="No space left on device.*the work tree was restored"):
        apply_changes(str(tmp_path), CHANGES)
    monkeypatch.undo()
    assert snapshot(tmp_path) == before
    assert not [p for p in tmp_path.rglob(".wave-bot-*")]


def test_an_index_failure_restores_the_tree_and_leaves_the_index_alone(make_repo: Callable[..., Path]) -> None:
    repo = make_repo(FILES)
    before, status = snapshot(repo), git(repo, "status", "--porcelain")
    (repo / ".git/index.lock").write_text("")  # another git holds the index: update-index must fail
    with pytest.raises(WaveBotError, match="update-index failed.*index.lock.*the work tree was restored") as caught:
        apply_changes(str(repo), CHANGES, gitlayer.mover(str(repo)))
    assert caught.value.exit_code == RUN_ERROR
    (repo / ".git/index.lock").unlink()
    assert snapshot(repo) == before
    assert git(repo, "status", "--porcelain") == status


def test_moves_are_renames_that_log_follow_and_diff_find(make_repo: Callable[..., Path]) -> None:
    repo = make_repo(FILES)
    apply_changes(str(repo), CHANGES, gitlayer.mover(str(repo)))
    git(repo, "add", "--all")
    git(repo, "commit", "-q", "-m", "the cutover")
    renames = git(repo, "diff", "-M", "--name-status", "HEAD~1", "HEAD").splitlines()
    assert "R100\tapps/a.yaml\tapps/wave-0/a.yaml" in renames
    assert "R100\tapps/wave-1/old.yaml\tapps/wave-2/old.yaml" in renames
    followed = git(repo, "log", "--follow", "--format=%s", "--", "apps/wave-0/b.sops.yaml").splitlines()
    assert followed == ["the cutover", "initial layout"]


def test_a_move_keeps_unstaged_edits_unstaged_as_git_mv_does(make_repo: Callable[..., Path]) -> None:
    repo = make_repo(FILES)
    (repo / "apps/a.yaml").write_text("a: 2\n")  # edited, not staged
    apply_changes(str(repo), CHANGES[:1], gitlayer.mover(str(repo)))
    assert "RM apps/a.yaml -> apps/wave-0/a.yaml" in git(repo, "status", "--porcelain").splitlines()
    assert git(repo, "show", ":apps/wave-0/a.yaml") == "a: 1\n"
    assert (repo / "apps/wave-0/a.yaml").read_text() == "a: 2\n"


def test_a_root_below_the_top_moves_its_own_paths(make_repo: Callable[..., Path]) -> None:
    repo = make_repo({f"gitops/{path}": text for path, text in FILES.items()})
    apply_changes(str(repo / "gitops"), CHANGES[:1], gitlayer.mover(str(repo / "gitops")))
    assert "R  gitops/apps/a.yaml -> gitops/apps/wave-0/a.yaml" in git(repo, "status", "--porcelain").splitlines()


def test_inherited_git_variables_do_not_redirect_the_index(
    make_repo: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(FILES)
    # What git exports to a hook run from another repository (pre-commit in a submodule, say).
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "elsewhere.git"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(tmp_path / "elsewhere.index"))
    apply_changes(str(repo), CHANGES[:1], gitlayer.mover(str(repo)))
    monkeypatch.delenv("GIT_DIR")
    monkeypatch.delenv("GIT_INDEX_FILE")
    assert "R  apps/a.yaml -> apps/wave-0/a.yaml" in git(repo, "status", "--porcelain").splitlines()
    assert not (tmp_path / "elsewhere.index").exists()


def test_a_vanished_source_refuses_the_whole_plan_before_touching_anything(tmp_path: Path) -> None:
    write_files(tmp_path, FILES)
    os.unlink(tmp_path / "apps/b.sops.yaml")
    before = snapshot(tmp_path)
    with pytest.raises(WaveBotError, match="vanished or is not a regular file; nothing was changed") as exc:
        apply_changes(str(tmp_path), CHANGES)
    assert exc.value.path == "apps/b.sops.yaml"
    assert snapshot(tmp_path) == before


def test_a_move_never_overwrites_an_existing_file(tmp_path: Path) -> None:
    write_files(tmp_path, {**FILES, "apps/wave-0/a.yaml": "someone else's\n"})
    with pytest.raises(WaveBotError, match="already exists"):
        apply_changes(str(tmp_path), CHANGES)
    assert (tmp_path / "apps/a.yaml").read_text() == "a: 1\n"


def test_fs_tree_refuses_links_fifos_and_paths_outside(tmp_path: Path) -> None:
    write_files(tmp_path, {"apps/a.yaml": "a: 1\n"})
    (tmp_path / "apps/link.yaml").symlink_to("a.yaml")
    os.mkfifo(tmp_path / "apps/fifo.yaml")
    tree = FsTree(str(tmp_path))
    assert [(e.name, e.kind) for e in tree.entries("apps")] == [("a.yaml", "file"), ("fifo.yaml", "other"),
                                                                ("link.yaml", "link")]
    with pytest.raises(WaveBotError, match="is a symbolic link"):
        tree.read("apps/link.yaml")
    with pytest.raises(WaveBotError, match="is not a regular file"):
        tree.read("apps/fifo.yaml")
    with pytest.raises(WaveBotError, match="is not a path inside the repository"):
        tree.read("../etc/passwd")


def test_fs_tree_reads_at_most_one_byte_over_the_cap(tmp_path: Path) -> None:
    (tmp_path / "big.yaml").write_bytes(b"x" * (worktree.MAX_FILE_BYTES * 3))
    assert len(FsTree(str(tmp_path)).read("big.yaml")) == worktree.MAX_FILE_BYTES + 1
