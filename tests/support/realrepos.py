"""The real public repositories of ../shared/realrepos, unpacked as a user's repository.

The archives live outside the project (beside the checkout, as ../shared/fixtures does) and are never
copied in. Each test unpacks one into `tmp_path`, commits it as the deployed `main` and runs wave-bot
there. Where the archives are absent (a plain clone) the tests skip with the reason, unless
WAVE_BOT_REQUIRE_REALGRAPH=1 (set by .ci/run), where their absence fails.

Nothing here knows a repository's name: the shapes are told apart by what the tree holds, so the
same tests hold for any repository of the same shape.
"""
from __future__ import annotations

import os
import subprocess
import tarfile
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[2]
ARCHIVE_DIR = PROJECT.parent / "shared" / "realrepos"
GIT = ["git", "-c", "user.email=test@example.invalid", "-c", "user.name=test", "-c", "commit.gpgsign=false"]


def archives() -> list[Path]:
    """Every archive beside the checkout (empty when there are none)."""
    return sorted(ARCHIVE_DIR.glob("*.tar.gz")) if ARCHIVE_DIR.is_dir() else []


def archive_ids() -> list[str]:
    return [a.name[: -len(".tar.gz")] for a in archives()] or ["no-archives"]


def params() -> list[Path | None]:
    """pytest parameters: one per archive, or one None that `require` turns into a skip or a failure."""
    return list(archives()) or [None]


def require(archive: Path | None) -> Path:
    """The archive, or skip (plain clone) / fail (CI) when the archives are not beside the checkout."""
    if archive is None:
        if os.environ.get("WAVE_BOT_REQUIRE_REALGRAPH") == "1":
            pytest.fail(f"{ARCHIVE_DIR} holds no archive (CI requires the real repositories)")
        pytest.skip(f"{ARCHIVE_DIR} is not beside this checkout")
    return archive


def git(cwd: Path, *args: str) -> str:
    return subprocess.run([*GIT, "-C", str(cwd), *args], check=True, capture_output=True, text=True).stdout


def unpack(archive: Path, destination: Path) -> Path:
    """`archive` unpacked into `destination` (made if needed), a git repository whose `main` holds it."""
    destination.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive) as tar:
        tar.extractall(destination, filter="data")
    git(destination, "init", "-q", "-b", "main")
    git(destination, "add", "-A")
    git(destination, "commit", "-qm", "deployed")
    return destination


__all__ = ["ARCHIVE_DIR", "archive_ids", "archives", "git", "params", "require", "unpack"]
