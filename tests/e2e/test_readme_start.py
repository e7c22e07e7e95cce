"""The README's "Try it on your repository": its commands, verbatim, on any Flux repository.

On the bundled example (waves) and on each real repository of ../shared/realrepos, untouched, with no
configuration (review mode), as a user's clone whose origin is what Flux has deployed.
"""
from __future__ import annotations

import dataclasses
import re
import subprocess
from pathlib import Path

import pytest

from bot.config import Config

from conftest import PROJECT, git, installed_tool
from support import realrepos

REVIEW_MODE = "mode" in {f.name for f in dataclasses.fields(Config)}


def readme_start() -> list[str]:
    """The commands of the README's "Try it on your repository" block, comments dropped."""
    text = (PROJECT / "README.md").read_text()
    section = text.split("## Try it on your repository\n", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```sh\n(.*?)```", section, re.S)
    return [re.sub(r"\s+#.*$", "", line).strip() for line in block.strip().splitlines()]


def run_start(repo: Path) -> list[tuple[str, int, str]]:
    tools = {"wave-bot": str(installed_tool("wave-bot"))}
    out = []
    for command in readme_start():
        argv = command.split()
        result = subprocess.run([tools.get(argv[0], argv[0]), *argv[1:]], cwd=repo, capture_output=True, text=True)
        out.append((command, result.returncode, result.stdout + result.stderr))
    return out


def with_origin(work: Path) -> Path:
    origin = work.parent / f"{work.name}-origin.git"
    git(work.parent, "init", "-q", "--bare", "-b", "main", str(origin))
    git(work, "remote", "add", "origin", str(origin))
    git(work, "push", "-q", "-u", "origin", "main")
    return work


def test_the_start_is_three_commands_with_check_then_the_report() -> None:
    commands = readme_start()
    assert len(commands) == 3 and commands[0] == "git fetch origin"
    assert commands[1].startswith("wave-bot check --base origin/main")
    assert commands[2].startswith("wave-bot plan --base origin/main")


def test_the_start_works_verbatim_on_the_bundled_example(example_repo: Path) -> None:
    for command, code, output in run_start(example_repo):
        assert code == 0, f"{command}: {output}"
    assert not git(example_repo, "status", "--porcelain")  # nothing written


@pytest.mark.xfail(not REVIEW_MODE, strict=True, reason="review mode (issue 30) is not in this branch yet")
@pytest.mark.parametrize("archive", realrepos.params(), ids=realrepos.archive_ids())
def test_the_start_works_verbatim_on_a_real_repository_with_no_configuration(
    archive: Path | None, tmp_path: Path
) -> None:
    repo = with_origin(realrepos.unpack(realrepos.require(archive), tmp_path / "repo"))
    results = run_start(repo)
    for command, code, output in results:
        assert code == 0, f"{command}: {output}"
    assert "review mode" in results[1][2].lower()
    assert not git(repo, "status", "--porcelain")  # review mode writes nothing
