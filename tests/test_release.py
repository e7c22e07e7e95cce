"""One version everywhere a user reads or pins it, and the pre-commit hook run from a tag."""
from __future__ import annotations

import importlib.metadata
import os
import re
import shutil
import subprocess
from pathlib import Path

import bot

from conftest import EXAMPLE, PROJECT, git, installed_tool

VERSION = bot.__version__
README = PROJECT / "README.md"
# Every file that tells users which release to pin.
PINNING_FILES = [README, PROJECT / ".pre-commit-hooks.yaml", *sorted((PROJECT / "examples").rglob("*.y*ml"))]
PINS = [
    re.compile(r"flux-wave-bot@v(?P<v>[^\s`'\"]+)"),  # uses: OWNER/flux-wave-bot@v1.2.3
    re.compile(r"flux-wave-bot:(?P<v>[0-9][^\s`'\"]*)"),  # uses: docker://.../flux-wave-bot:1.2.3
    re.compile(r"\brev: v(?P<v>\S+)"),  # pre-commit
]


def test_the_package_the_cli_and_the_source_agree_on_one_version() -> None:
    assert re.fullmatch(r"\d+\.\d+\.\d+", VERSION)
    assert importlib.metadata.version("flux-wave-bot") == VERSION, "reinstall: pip install -e '.[test]'"
    shown = subprocess.run([str(installed_tool("wave-bot")), "--version"], capture_output=True, text=True)
    assert shown.stdout.strip() == f"wave-bot {VERSION}"


def test_the_changelog_opens_with_the_current_version() -> None:
    headings = re.findall(r"^## \[([^\]]+)\]", (PROJECT / "CHANGELOG.md").read_text(), flags=re.M)
    assert headings and headings[0] == VERSION


def test_every_pin_users_copy_is_the_current_version() -> None:
    found: dict[str, set[str]] = {}
    for path in PINNING_FILES:
        for pattern in PINS:
            for match in pattern.finditer(path.read_text()):
                found.setdefault(match["v"], set()).add(str(path.relative_to(PROJECT)))
    assert set(found) == {VERSION}, found
    assert "README.md" in found[VERSION]


def tagged_copy(destination: Path) -> Path:
    """The project's tracked files as they are now, committed in a new repository and tagged v<VERSION>."""
    files = git(PROJECT, "ls-files", "-z").split("\0")
    for name in filter(None, files):
        source = PROJECT / name
        if source.is_file():
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination / name)
    git(destination, "init", "-q", "-b", "main")
    git(destination, "add", "-A")
    git(destination, "commit", "-q", "-m", "release")
    git(destination, "tag", f"v{VERSION}")
    return destination


def test_the_readme_pre_commit_config_runs_the_hook_from_the_release_tag(tmp_path: Path) -> None:
    hook_repo = tagged_copy(tmp_path / "flux-wave-bot")
    consumer = tmp_path / "gitops"
    shutil.copytree(EXAMPLE, consumer)
    (config,) = [b for b in re.findall(r"^```yaml\n(.*?)^```", README.read_text(), flags=re.S | re.M)
                 if "wave-bot-check" in b]
    # The README's block as it is, with the clone in place of the GitHub URL.
    config = re.sub(r"repo: https://github.com/\S+/flux-wave-bot", f"repo: {hook_repo}", config)
    (consumer / ".pre-commit-config.yaml").write_text(config)
    git(consumer, "init", "-q", "-b", "main")
    git(consumer, "add", "-A")
    git(consumer, "commit", "-q", "-m", "gitops")
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home")}
    pre_commit = [str(installed_tool("pre-commit")), "run", "--all-files", "--color", "never"]

    passed = subprocess.run(pre_commit, cwd=consumer, env=env, capture_output=True, text=True)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert re.search(r"^wave-bot check\.+Passed$", passed.stdout, flags=re.M), passed.stdout

    (consumer / "apps" / "wave-1" / "radarr.yaml").rename(consumer / "apps" / "radarr.yaml")
    git(consumer, "add", "-A")
    failed = subprocess.run(pre_commit, cwd=consumer, env=env, capture_output=True, text=True)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "move    apps/radarr.yaml -> apps/wave-1/radarr.yaml" in failed.stdout
    assert "the wave layout is out of date; run `wave-bot apply`" in failed.stdout
