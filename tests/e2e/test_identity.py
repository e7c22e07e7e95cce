"""`wave-bot plan --format json` is byte-identical to a given revision's, on the example and the scenarios.

A restructuring must change no output. Set WAVE_BOT_IDENTITY_REV to the revision to compare with
(`WAVE_BOT_IDENTITY_REV=55d58fc python -m pytest tests/e2e/test_identity.py`): its bot/ is taken
with `git archive`, this checkout's bot/ is the other side, and both plan the same fixture
repositories (tests/e2e/test_scenarios.py's, built once). Without the variable there is nothing to
compare with, and the test is skipped saying so.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from test_scenarios import REGEX_PATCH

from conftest import EXAMPLE, PROJECT, deployment, installed_tool, service, write_files

REV = os.environ.get("WAVE_BOT_IDENTITY_REV", "")
GIT_ENV = {"GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "T",
           "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z"}


def git(cwd: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")} | GIT_ENV
    r = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, env=env)
    if r.returncode:
        raise AssertionError(f"git {args}: {r.stderr}")
    return r.stdout


def example(where: Path) -> Path:
    repo = where
    shutil.copytree(EXAMPLE, repo)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "main")
    return repo


def pr(repo: Path, files: dict[str, str]) -> None:
    git(repo, "checkout", "-q", "-b", "pr")
    write_files(repo, files)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "the PR's change")


def encrypted_secret(tmp: Path) -> str:
    path = tmp / "overseerr-bootstrap-secret.sops.yaml"
    path.write_text("apiVersion: v1\nkind: Secret\nmetadata:\n  name: overseerr-bootstrap\n  namespace: overseerr\n"
                    "stringData:\n  api-key: 5b0d7c1e9a2f4836\n")
    sops = installed_tool("sops")
    env = {"PATH": os.environ.get("PATH", ""), "HOME": os.devnull,
           "SOPS_AGE_KEY_FILE": str(EXAMPLE / "DEMO-age-key.txt")}
    r = subprocess.run([str(sops), "--config", str(EXAMPLE / ".sops.yaml"), "encrypt", "--in-place", str(path)],
                       env=env, capture_output=True, text=True)
    if r.returncode:
        raise AssertionError(f"sops: {r.stderr}")
    return path.read_text()


OVERSEERR = {"catalog/overseerr.yaml": service("overseerr", "seerr"), "apps/overseerr.yaml": deployment("overseerr")}


def fixtures(tmp: Path) -> list[tuple[str, Path, list[str]]]:
    """(name, repository, extra plan arguments) for every scenario."""
    out: list[tuple[str, Path, list[str]]] = []
    out.append(("homelab (no base)", example(tmp / "homelab"), []))
    a = example(tmp / "a")
    pr(a, OVERSEERR)
    out += [("a: new dependent of seerr", a, ["--base", "main"]),
            ("a: --fix-overlays", a, ["--base", "main", "--fix-overlays"])]
    a2 = example(tmp / "a2")
    pr(a2, OVERSEERR | {"apps/overseerr-bootstrap-secret.sops.yaml": encrypted_secret(tmp)})
    out.append(("a: new wave with a sops file", a2, ["--base", "main"]))
    b = example(tmp / "b")
    pr(b, {"catalog/gitea.yaml": service("gitea", "gitea-db")})
    out.append(("b: gitea gains a database", b, ["--base", "main"]))
    b2 = example(tmp / "b2")
    gitea = b2 / "apps/wave-0/gitea.yaml"
    gitea.write_text(gitea.read_text().replace(
        "  name: gitea-data\n  namespace: gitea\n",
        "  name: gitea-data\n  namespace: gitea\n  annotations:\n    kustomize.toolkit.fluxcd.io/prune: disabled\n"))
    git(b2, "commit", "-q", "-am", "protect")
    pr(b2, {"catalog/gitea.yaml": service("gitea", "gitea-db")})
    out.append(("b: annotation deployed first", b2, ["--base", "main"]))
    c = example(tmp / "c")
    dev = c / "clusters/dev/kustomization.yaml"
    text = dev.read_text()
    per_wave = text[text.index("  - patch: |\n      apiVersion: kustomize.toolkit.fluxcd.io/v1"):]
    dev.write_text(text.replace(per_wave, REGEX_PATCH))
    git(c, "commit", "-q", "-am", "regex patch")
    base = (c / "clusters/base/kustomization.yaml").read_text()
    pr(c, OVERSEERR | {"clusters/base/kustomization.yaml": base.replace(
        "  - cluster-vars.yaml", "  - apps-wave-3.yaml\n  - cluster-vars.yaml")})
    out.append(("c: regex decryption patch", c, ["--base", "main"]))
    d = example(tmp / "cutover")
    base_k = (d / "clusters/base/kustomization.yaml").read_text()
    git(d, "mv", "clusters/base/apps-wave-0.yaml", "clusters/base/apps.yaml")
    apps = (d / "clusters/base/apps.yaml").read_text()
    (d / "clusters/base/apps.yaml").write_text(apps.replace("name: apps-wave-0", "name: apps")
                                               .replace("path: ./apps/wave-0", "path: ./apps"))
    git(d, "rm", "-q", "clusters/base/apps-wave-1.yaml", "clusters/base/apps-wave-2.yaml")
    (d / "clusters/base/kustomization.yaml").write_text(
        base_k.replace("  - apps-wave-0.yaml", "  - apps.yaml").replace("  - apps-wave-1.yaml", "")
        .replace("  - apps-wave-2.yaml", ""))
    git(d, "commit", "-q", "-am", "pre-split")
    git(d, "checkout", "-q", "-b", "pr")
    git(d, "rm", "-q", "clusters/base/apps.yaml")
    git(d, "commit", "-q", "-m", "remove apps")
    out += [("cutover: pre-split base", d, ["--base", "main"]), ("cutover: work tree only", d, [])]
    return out


def code_at(rev: str, into: Path) -> Path:
    into.mkdir()
    if rev == "WORKTREE":
        shutil.copytree(PROJECT / "bot", into / "bot")
    else:
        archive = into / "bot.tar"
        subprocess.run(["git", "archive", "-o", str(archive), rev, "bot"], cwd=PROJECT, check=True)
        with tarfile.open(archive) as t:
            t.extractall(into, filter="data")
    return into


def run(code: Path, repo: Path, extra: list[str], cwd: Path) -> tuple[int, bytes, bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "GITHUB_", "WAVE_BOT_"))}
    env["PYTHONPATH"] = str(code)
    r = subprocess.run([sys.executable, "-c", "import sys, bot.cli; assert bot.cli.__file__.startswith(sys.argv[1]);"
                        " sys.argv[0] = 'wave-bot'; sys.exit(bot.cli.main(sys.argv[2:]))", str(code),
                        "plan", str(repo), "--format", "json", *extra], cwd=cwd, env=env, capture_output=True)
    return r.returncode, r.stdout, r.stderr


@pytest.mark.skipif(not REV, reason="WAVE_BOT_IDENTITY_REV names no revision to compare `plan --format json` with")
def test_plan_json_is_byte_identical_to_the_given_revision(tmp_path: Path) -> None:
    cases = fixtures(tmp_path / "fixtures")
    old, new = code_at(REV, tmp_path / "old"), code_at("WORKTREE", tmp_path / "new")
    different = []
    for name, repo, extra in cases:
        if run(old, repo, extra, tmp_path) != run(new, repo, extra, tmp_path):
            different.append(name)
    assert different == [], f"`plan --format json` differs from {REV} on: {different}"
