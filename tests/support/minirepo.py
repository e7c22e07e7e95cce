"""A small Flux repository in tmp_path, reviewed as a user runs wave-bot: `flux bootstrap`'s sync for
`clusters/main`, child Kustomizations of the GitRepository flux-system, and `check --base main~1`."""
from __future__ import annotations

import io
import json
import subprocess
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

from bot.cli import main

from conftest import git, write_files

SYNC = """apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: flux-system
  namespace: flux-system
spec:
  interval: 1m
  ref:
    branch: main
  url: https://example.com/cluster.git
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: flux-system
  namespace: flux-system
spec:
  interval: 10m
  path: ./clusters/main
  prune: true
  sourceRef:
    kind: GitRepository
    name: flux-system
"""


def child(name: str, path: str, extra: str = "") -> str:
    return f"""apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: {name}
  namespace: flux-system
spec:
  interval: 10m
  path: ./{path}
  prune: true
{extra}  sourceRef:
    kind: GitRepository
    name: flux-system
"""


def repo_of(tmp_path: Path, files: dict[str, str]) -> Path:
    repo = tmp_path / "repo"
    write_files(repo, {"clusters/main/flux-system/gotk-sync.yaml": SYNC, **files})
    git(tmp_path, "init", "-q", "-b", "main", str(repo))
    commit(repo, "base")
    return repo


def commit(repo: Path, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", message)


def check(repo: Path) -> tuple[int, dict[str, Any]]:
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        code = main(["check", str(repo), "--base", "main~1", "--format", "json"])
    return code, json.loads(out.getvalue())




def files_at(repo: Path, rev: str) -> dict[str, bytes]:
    """The files of `rev`, as the Flux simulation (tests/support/fluxsim.py) takes a revision."""
    names = git(repo, "ls-tree", "-r", "--name-only", "-z", rev).split("\0")
    return {n: subprocess.run(["git", "show", f"{rev}:{n}"], cwd=repo, capture_output=True, check=True).stdout
            for n in names if n}


def cm(name: str, namespace: str | None = "apps") -> str:
    """A ConfigMap, in `namespace` (None: with no namespace at all)."""
    where = f"\n  namespace: {namespace}" if namespace else ""
    return f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}{where}\n"


APP = {
    "clusters/main/kustomization.yaml": "resources: [app.yaml]\n",
    "clusters/main/app.yaml": child("app", "apps/one"),
    "apps/one/kustomization.yaml": "resources: [x.yaml, y.yaml]\n",
    "apps/one/x.yaml": cm("x"),
    "apps/one/y.yaml": cm("y"),
}
"""One child Kustomization `app` applying ConfigMaps apps/x and apps/y."""


def drop_y_and_add(repo: Path, name: str, text: str) -> None:
    """Commit `APP` without y and with `name` holding `text`."""
    (repo / "apps/one/y.yaml").unlink()
    (repo / f"apps/one/{name}").write_text(text)
    (repo / "apps/one/kustomization.yaml").write_text(f"resources: [x.yaml, {name}]\n")
    commit(repo, f"drop y, add {name}")


W0 = {
    "clusters/main/kustomization.yaml": "resources: [w0.yaml]\n",
    "clusters/main/w0.yaml": child("w0", "apps/w0"),
    "apps/w0/x.yaml": cm("x"),
    "apps/w0/y.yaml": cm("y"),
}
"""One child Kustomization `w0` applying ConfigMaps apps/x and apps/y."""


def move_y_to_a_new_child_without_a_namespace(repo: Path) -> None:
    """Commit `W0` with y moved to a new child `w2` that has no metadata.namespace (the root's apply fails)."""
    (repo / "clusters/main/w2.yaml").write_text(child("w2", "apps/w2").replace("  namespace: flux-system\n", ""))
    (repo / "clusters/main/kustomization.yaml").write_text("resources: [w0.yaml, w2.yaml]\n")
    (repo / "apps/w2").mkdir()
    (repo / "apps/w0/y.yaml").rename(repo / "apps/w2/y.yaml")
    commit(repo, "move y to w2")
