"""One version everywhere a user reads or pins it, and the pre-commit hook run from a tag."""
from __future__ import annotations

import importlib.metadata
import os
import re
import shutil
import subprocess
from pathlib import Path

from ruamel.yaml import YAML

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
    re.compile(r"flux_wave_bot-(?P<v>[0-9][^-\s]*)-py3"),  # a wheel's file name
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
    assert "the wave layout is out of date: run `wave-bot apply`" in failed.stdout


# ---- the release workflow and the image it pins ----------------------------------------------------------

RELEASE = PROJECT / ".github" / "workflows" / "release.yml"


def test_main_builds_the_dockerfile_and_a_release_commit_runs_the_published_image(tmp_path: Path) -> None:
    action_yml = (PROJECT / "action.yml").read_text()
    assert "\n  image: Dockerfile\n" in action_yml  # runnable before any image exists, and from any branch
    pinned = tmp_path / "action.yml"
    pinned.write_text(action_yml)
    result = subprocess.run([str(PROJECT / ".ci" / "pin-image"), f"ghcr.io/acme/flux-wave-bot:{VERSION}", str(pinned)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert pinned.read_text() == action_yml.replace("\n  image: Dockerfile\n",
                                                    f"\n  image: docker://ghcr.io/acme/flux-wave-bot:{VERSION}\n")
    schema = subprocess.run([str(installed_tool("check-jsonschema")), "--builtin-schema", "vendor.github-actions",
                             str(pinned)], capture_output=True, text=True)
    assert schema.returncode == 0, schema.stdout


def test_pin_image_refuses_what_a_runner_could_not_pull(tmp_path: Path) -> None:
    pinned = tmp_path / "action.yml"
    pinned.write_text((PROJECT / "action.yml").read_text())
    for reference in ["ghcr.io/Acme/flux-wave-bot:0.1.0", "flux-wave-bot", "ghcr.io/acme/flux-wave-bot:", "x y:1"]:
        result = subprocess.run([str(PROJECT / ".ci" / "pin-image"), reference, str(pinned)],
                                capture_output=True, text=True)
        assert result.returncode != 0 and "not a lower-case registry/name:tag" in result.stderr, reference
    assert pinned.read_text() == (PROJECT / "action.yml").read_text()


def test_the_release_workflow_publishes_both_architectures_with_attestations_and_pins_them() -> None:
    workflow = YAML(typ="safe", pure=True).load(RELEASE.read_text())
    assert workflow["on"] == {"workflow_dispatch": None}  # from main, once the version is merged
    (build,) = [s for s in workflow["jobs"]["image"]["steps"] if str(s.get("uses", "")).startswith("docker/build-push")]
    options = build["with"]
    assert options["platforms"] == "linux/amd64,linux/arm64" and options["push"] is True
    assert options["provenance"] == "mode=max" and options["sbom"] is True
    assert options["tags"].splitlines() == ["${{ needs.check.outputs.image }}:${{ needs.check.outputs.version }}",
                                       "${{ needs.check.outputs.image }}:${{ needs.check.outputs.major }}"]
    pin_script = "\n".join(s.get("run", "") for s in workflow["jobs"]["pin"]["steps"])
    assert '.ci/release-tag "$VERSION" "$IMAGE"' in pin_script
    scripts = [s.get("run", "") for job in workflow["jobs"].values() for s in job["steps"]]
    assert not [s for s in scripts if "--force" in s or "tag -f" in s]  # no step moves a tag by force
    assert workflow["jobs"]["pin"]["needs"] == ["check", "image"]  # never pin an image that was not pushed


def release_tag(clone: Path, image: str = "ghcr.io/acme/flux-wave-bot") -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(PROJECT / ".ci" / "release-tag"), VERSION, image], cwd=clone,
                          capture_output=True, text=True)


def test_a_release_creates_its_version_tag_once_and_moves_only_the_major_tag(tmp_path: Path) -> None:
    project = tagged_copy(tmp_path / "project")
    git(project, "tag", "-d", f"v{VERSION}")  # not released yet: only an older major tag exists
    git(project, "tag", f"v{VERSION.split('.')[0]}", "HEAD")
    git(project, "commit", "-q", "--allow-empty", "-m", "the commit to release")
    origin = tmp_path / "origin.git"
    git(tmp_path, "clone", "-q", "--bare", str(project), str(origin))
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(origin), str(clone))
    released = git(clone, "rev-parse", "HEAD").strip()
    major = f"v{VERSION.split('.')[0]}"

    done = release_tag(clone)
    assert done.returncode == 0, done.stderr
    tagged = git(origin, "rev-parse", f"refs/tags/v{VERSION}^{{commit}}").strip()
    assert git(origin, "cat-file", "-t", f"refs/tags/v{VERSION}").strip() == "tag"  # annotated
    assert git(origin, "rev-parse", f"refs/tags/{major}").strip() == tagged
    assert git(origin, "rev-parse", f"{tagged}^").strip() == released  # on top of the released commit
    assert git(origin, "rev-parse", "refs/heads/main").strip() == released  # main still builds the Dockerfile
    assert f"image: docker://ghcr.io/acme/flux-wave-bot:{VERSION}\n" in git(origin, "show", f"{tagged}:action.yml")
    assert git(origin, "diff", "--name-only", released, tagged).split() == ["action.yml"]

    # Released once: running it again (or from another commit) refuses and moves nothing.
    refs = git(origin, "show-ref")
    git(clone, "reset", "-q", "--hard", released)
    again = release_tag(clone)
    assert again.returncode != 0
    assert f"origin already has v{VERSION}: a published version never moves" in again.stderr
    assert git(origin, "show-ref") == refs

