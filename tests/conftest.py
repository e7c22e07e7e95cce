"""Shared fixtures: small real repositories built in tmp_path, real git, real kubectl."""
from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest

# Every plan any test makes is checked for findings that contradict each other (tests/support/contradictions.py).
pytest_plugins = ["support.contradictions", "support.glance"]

PROJECT = Path(__file__).resolve().parent.parent
EXAMPLE = PROJECT / "examples" / "homelab"

# Tests never inherit a developer's git identity, hooks or signing setup.
GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test Author",
    "GIT_AUTHOR_EMAIL": "author@example.com",
    "GIT_COMMITTER_NAME": "Test Author",
    "GIT_COMMITTER_EMAIL": "author@example.com",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


@pytest.fixture(autouse=True)
def _isolated_git(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in [k for k in os.environ if k.startswith("GIT_")]:
        monkeypatch.delenv(key)
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)


@pytest.fixture(autouse=True)
def _fake_forges_spoke_like_the_real_ones() -> Iterator[None]:
    """Fail a test whose fake forge answered what the real API could not (tests/support/fakes.py checks each
    answer against the forge's API description), even if the code under test swallowed the error."""
    yield
    fakes = sys.modules.get("fakes")
    if fakes is not None and fakes.VIOLATIONS:
        problems, fakes.VIOLATIONS[:] = list(fakes.VIOLATIONS), []
        pytest.fail("the fake forge said what the real API could not:\n" + "\n".join(problems))


def git(cwd: Path | str, *args: str) -> str:
    """Run git in `cwd` and return its stdout; a failure fails the test with git's stderr."""
    result = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    assert result.returncode == 0, f"git {' '.join(args)} failed: {result.stderr}"
    return result.stdout


def write_files(root: Path, files: Mapping[str, str | bytes]) -> None:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under `root` (outside .git) with its bytes: compare before/after to prove nothing changed."""
    out = {}
    for path in sorted(root.rglob("*")):
        if ".git" in path.relative_to(root).parts:
            continue
        if path.is_symlink():
            out[str(path.relative_to(root))] = b"-> " + os.readlink(path).encode()
        elif path.is_file():
            out[str(path.relative_to(root))] = path.read_bytes()
        elif path.is_dir():
            out[str(path.relative_to(root)) + "/"] = b""
    return out


CONTROLLER_KEY = """resources: [gotk-components.yaml]
patches:
  - target: {kind: Deployment, labelSelector: app.kubernetes.io/component=kustomize-controller}
    patch: |
      - op: add
        path: /spec/template/spec/containers/0/args/-
        value: --sops-age-secret=cluster-key
"""
"""A cluster's flux-system/kustomization.yaml giving kustomize-controller the key `cluster-key`."""


TOOLS_KUSTOMIZATION = """apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: tools
  namespace: flux-system
spec:
  interval: 10m
  path: ./tools
  prune: true
  sourceRef:
    kind: GitRepository
    name: flux-system
"""
"""A Flux Kustomization `tools` (not a wave) that prunes what ./tools holds."""


def cluster_apps(patches: str) -> str:
    """The Flux Kustomization `cluster-apps` of the cluster-template layout: it builds ./clusters/base,
    with `patches` (list items indented four spaces) as its own spec.patches."""
    return ("apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: cluster-apps\n"
            "  namespace: flux-system\nspec:\n  interval: 10m\n  path: ./clusters/base\n  prune: true\n"
            "  sourceRef:\n    kind: GitRepository\n    name: flux-system\n  patches:\n" + patches)


def service(name: str, *deps: str) -> str:
    """A ServiceDefinition in the catalog's usual shape."""
    lines = [
        "apiVersion: catalog.example.dev/v1alpha1",
        "kind: ServiceDefinition",
        "metadata:",
        f"  name: {name}",
        "spec:",
    ]
    if deps:
        lines.append("  dependencies:")
        lines += [f"    - to: {d}" for d in deps]
    else:
        lines[-1] = "spec: {}"
    return "\n".join(lines) + "\n"


def deployment(name: str, namespace: str | None = None) -> str:
    """A small but valid app manifest: Deployment + Service."""
    ns = namespace or name
    return f"""apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
  namespace: {ns}
spec:
  selector:
    matchLabels:
      app: {name}
  template:
    metadata:
      labels:
        app: {name}
    spec:
      containers:
        - name: {name}
          image: registry.example/{name}:1.0
---
apiVersion: v1
kind: Service
metadata:
  name: {name}
  namespace: {ns}
spec:
  selector:
    app: {name}
  ports:
    - port: 80
"""


def pvc(name: str, namespace: str) -> str:
    return f"""apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: {name}
  namespace: {namespace}
spec:
  accessModes: [ReadWriteOnce]
  resources:
    requests:
      storage: 1Gi
"""


@pytest.fixture
def make_repo(tmp_path: Path) -> Callable[..., Path]:
    """Build a git repository with `files`, committed on `main`, and a bare `origin` it tracks."""

    def make(files: Mapping[str, str | bytes], *, name: str = "repo", commit: bool = True) -> Path:
        origin = tmp_path / f"{name}-origin.git"
        work = tmp_path / name
        git(tmp_path, "init", "-q", "--bare", "-b", "main", str(origin))
        git(tmp_path, "init", "-q", "-b", "main", str(work))
        write_files(work, files)
        if commit:
            git(work, "add", "-A")
            git(work, "commit", "-q", "-m", "initial layout")
            git(work, "remote", "add", "origin", str(origin))
            git(work, "push", "-q", "-u", "origin", "main")
        return work

    return make


@pytest.fixture
def example_repo(make_repo: Callable[..., Path]) -> Path:
    """A committed copy of examples/homelab with its own git history and origin."""
    files = {
        str(p.relative_to(EXAMPLE)): p.read_bytes() for p in EXAMPLE.rglob("*") if p.is_file()
    }
    return make_repo(files, name="homelab")


def installed_tool(name: str) -> Path:
    """A binary the test extra installed into this environment's scripts dir (next to the venv's python).

    Never one found on PATH: a developer's or CI image's kubectl has some other kustomize, and a fresh
    machine has none, so the suite would test against whatever happened to be installed. Missing, it
    fails the run (never a skip): these tests prove things about the real tools.
    """
    scripts = Path(sysconfig.get_path("scripts"))
    for candidate in (scripts / name, scripts / f"{name}.exe"):
        if candidate.is_file():
            return candidate
    pytest.fail(f"{name} is not installed in this environment ({scripts}); the test extra brings it: "
                "pip install -e '.[test]'")


Kubectl = Callable[[Path | str], subprocess.CompletedProcess[str]]
"""The `kubectl` fixture: `kubectl kustomize DIR`."""


@pytest.fixture(scope="session")
def kubectl() -> Kubectl:
    """`kubectl kustomize DIR` with the environment's kubectl; missing, it fails the run."""
    binary = installed_tool("kubectl")

    def build(directory: Path | str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([binary, "kustomize", str(directory)], capture_output=True, text=True)

    return build
