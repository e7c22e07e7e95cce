#!/usr/bin/env python3
"""Benchmark: the action's image, its size and how fast `wave-bot run` starts and finishes inside it.

Builds the Dockerfile with podman (or docker), then times, each `--repeat` times (median shown):
  - the container alone (`true` as the entrypoint): what any container action costs;
  - `wave-bot --version` in it: container plus interpreter and CLI start-up;
  - `wave-bot run` as the runner starts it (ENTRYPOINT, runner-style environment, the workspace
    mounted) on a workflow_dispatch of the bundled example with a local origin: a complete run that
    finds the layout up to date and pushes nothing (no forge API needed, no network).

    python bench/container_bench.py [--base-image IMAGE] [--repeat 5]

Where podman needs it (no systemd, no cgroup v2 delegation), set the engine command, e.g.
PODMAN="podman --runtime runc --cgroup-manager cgroupfs".
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
TAG = "localhost/flux-wave-bot:bench"
LIMITS = ["--ulimit", "nproc=4096:4096", "--ulimit", "nofile=1024:1024"]
GIT = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.com"]


def engine() -> list[str]:
    return shlex.split(os.environ.get("PODMAN", "podman"))


def timed(command: list[str], expect: int = 0) -> float:
    start = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if result.returncode != expect:
        raise SystemExit(f"{' '.join(command)} exited {result.returncode}:\n{result.stdout}{result.stderr}")
    return elapsed


def workspace(root: Path) -> dict[str, str]:
    """A clone of the example with a bare origin under `root` (mounted at /github), and the runner's env."""
    origin, work = root / "origin.git", root / "workspace"
    shutil.copytree(PROJECT / "examples" / "homelab", work)
    subprocess.run(["git", "init", "-q", "-b", "main", str(work)], check=True)
    subprocess.run([*GIT, "-C", str(work), "add", "-A"], check=True)
    subprocess.run([*GIT, "-C", str(work), "commit", "-q", "-m", "example"], check=True)
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(origin)], check=True)
    subprocess.run(["git", "-C", str(work), "remote", "add", "origin", "/github/origin.git"], check=True)
    (root / "event.json").write_text(json.dumps({"inputs": {}, "ref": "refs/heads/main",
                                                  "repository": {"full_name": "acme/gitops"}}))
    (root / "summary.md").touch()
    (root / "output.txt").touch()
    return {
        "GITHUB_EVENT_NAME": "workflow_dispatch", "GITHUB_EVENT_PATH": "/github/event.json",
        "GITHUB_REPOSITORY": "acme/gitops", "GITHUB_WORKSPACE": "/github/workspace",
        "GITHUB_SERVER_URL": "https://github.com", "GITHUB_API_URL": "https://api.github.com",
        "GITHUB_REF_NAME": "main", "GITHUB_STEP_SUMMARY": "/github/summary.md", "GITHUB_OUTPUT": "/github/output.txt",
        "INPUT_TOKEN": "bench-token", "INPUT_CONFIG": "", "INPUT_FIX-OVERLAYS": "false", "INPUT_COMMIT": "true",
        "INPUT_COMMENT": "true", "INPUT_FAIL-ON": "error",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base-image", default=None, help="BASE_IMAGE build argument (default: the Dockerfile's)")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    build = [*engine(), "build", "-q", "--network", "host", *LIMITS, "-t", TAG, str(PROJECT)]
    if args.base_image:
        build[-1:-1] = ["--build-arg", f"BASE_IMAGE={args.base_image}"]
    print(f"build: {timed(build):.1f} s")
    size = int(subprocess.run([*engine(), "image", "inspect", TAG, "--format", "{{.Size}}"],
                              capture_output=True, text=True, check=True).stdout)
    base_size = None
    if args.base_image:
        base_size = int(subprocess.run([*engine(), "image", "inspect", args.base_image, "--format", "{{.Size}}"],
                                       capture_output=True, text=True, check=True).stdout)
    extra = f" ({(size - base_size) / 1e6:.0f} MB over the base image)" if base_size else ""
    print(f"image: {size / 1e6:.0f} MB{extra}")

    run = [*engine(), "run", "--rm", "--network", "none", *LIMITS]
    with tempfile.TemporaryDirectory() as tmp:
        env = workspace(Path(tmp))
        env_args = [a for k, v in env.items() for a in ("-e", f"{k}={v}")]
        cases = {
            "container only (entrypoint true)": [*run, "--entrypoint", "true", TAG],
            "wave-bot --version": [*run, "--entrypoint", "wave-bot", TAG, "--version"],
            "wave-bot run (dispatch, up to date)": [*run, "-v", f"{tmp}:/github", *env_args, TAG],
        }
        for name, command in cases.items():
            times = [timed(command) for _ in range(args.repeat)]
            print(f"{name}: median {statistics.median(times):.2f} s (min {min(times):.2f}, max {max(times):.2f})")
        summary = (Path(tmp) / "summary.md").read_text()
        if "up to date" not in summary:
            raise SystemExit(f"the run did not report the layout up to date:\n{summary[:2000]}")


if __name__ == "__main__":
    main()
