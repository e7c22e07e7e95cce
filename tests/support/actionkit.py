"""Driving `wave-bot run` in tests: a PR branch on a real origin, the runner's environment, the run."""
from __future__ import annotations

import functools
import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bot.actions import run as action
from bot.actions.forge import make_forge

from conftest import deployment, service, write_files
from support.apischema import event_errors
from support.fakes import REPOSITORY, _refuse_sleep

BRANCH = "wave/podinfo-redis"  # the head.ref of the recorded PR fixtures
NEW_SERVICE = {
    "catalog/tautulli.yaml": service("tautulli", "plex"),
    "apps/tautulli.yaml": deployment("tautulli"),
}
SERVER_URLS = {"github": "https://github.com", "gitea": "https://gitea.example.com"}


def push_pr_branch(work: Path, pull: dict[str, Any], files: dict[str, str | bytes], message: str,
                   git: Callable[..., str]) -> tuple[str, str]:
    """Push a PR branch changing `files` (no regenerated layout) from `work`, point the PR object
    `pull` (the forge's JSON) at it, and return (base sha, head sha)."""
    git(work, "checkout", "-q", "-B", BRANCH, "main")
    write_files(work, files)
    git(work, "add", "-A")
    git(work, "commit", "-q", "--allow-empty", "-m", message)
    git(work, "push", "-q", "-f", "origin", f"HEAD:refs/heads/{BRANCH}", "HEAD:refs/pull/7/head")
    base, head = git(work, "rev-parse", "main").strip(), git(work, "rev-parse", "HEAD").strip()
    pull["head"]["ref"], pull["head"]["sha"] = BRANCH, head
    pull["base"]["ref"], pull["base"]["sha"] = "main", base
    return base, head


PUSHED = {"github": "synchronize", "gitea": "synchronized"}  # the action for new commits on a PR's branch
WORKFLOW = ".github/workflows/wave-bot.yml"
LABEL = {"github": {"id": 6781234501, "node_id": "LA_kwDOI9xVh88AAAABk-Y3xQ", "url": "https://api.github.com/repos/"
                    f"{REPOSITORY}/labels/flux", "name": "flux", "color": "0e8a16", "default": False,
                    "description": "Touches the Flux layout"}}


def pull_request_event(platform: str, pull: dict[str, Any], action: str | None = None) -> dict[str, Any]:
    """A pull_request event payload as each platform sends it, around the forge's PR object `pull`.

    GitHub's `synchronize` says which head the push replaced (`before`, here the base: the branch
    was cut from it) and the new one (`after`); Gitea's payload struct always carries its
    `commit_id` and `review` fields. Checked against the platform's webhook schema
    (tests/support/apischema.py), so no test runs on a payload the platform could not send."""
    action = action or PUSHED[platform]
    payload: dict[str, Any] = {"action": action, "number": pull["number"], "pull_request": pull,
                               "repository": pull["base"]["repo"], "sender": pull["user"]}
    if platform == "github" and action == "synchronize":
        payload |= {"before": pull["base"]["sha"], "after": pull["head"]["sha"]}
    if platform == "github" and action == "labeled":
        payload["label"] = LABEL["github"]
    if platform == "gitea":
        payload |= {"commit_id": "", "review": None}
    return _checked(platform, "pull_request", payload)


def dispatch_event(platform: str, pull: dict[str, Any], ref: str = "refs/heads/main") -> dict[str, Any]:
    """A workflow_dispatch payload: the repository and the sender taken from the forge's PR object."""
    payload = {"inputs": {}, "ref": ref, "repository": pull["base"]["repo"], "sender": pull["user"],
               "workflow": WORKFLOW}
    return _checked(platform, "workflow_dispatch", payload)


def _checked(platform: str, event: str, payload: dict[str, Any]) -> dict[str, Any]:
    problems = event_errors(platform, event, payload)
    assert not problems, "an event payload the platform could not send:\n" + "\n".join(problems)
    return payload


def action_env(platform: str, pull: dict[str, Any], tmp: Path, workspace: Path, *, api_url: str, token: str,
               server_url: str | None = None, event: str = "pull_request",
               action: str | None = None) -> dict[str, str]:
    """The environment the runner gives a container action, with the event payload written to disk."""
    if event == "workflow_dispatch":
        payload = dispatch_event(platform, pull)
    else:
        payload = pull_request_event(platform, pull, action)
    path = tmp / f"event-{len(list(tmp.glob('event-*')))}.json"
    path.write_text(json.dumps(payload))
    env = {
        "GITHUB_EVENT_NAME": event,
        "GITHUB_EVENT_PATH": str(path),
        "GITHUB_REPOSITORY": REPOSITORY,
        "GITHUB_WORKSPACE": str(workspace),
        "GITHUB_SERVER_URL": server_url or SERVER_URLS[platform],
        "GITHUB_API_URL": api_url,
        "GITHUB_RUN_ID": "987654321",
        "GITHUB_REF_NAME": "main" if event == "workflow_dispatch" else "7/merge",
        "GITHUB_STEP_SUMMARY": str(tmp / "summary.md"),
        "GITHUB_OUTPUT": str(tmp / "output.txt"),
        "INPUT_TOKEN": token,
    }
    if platform == "gitea":
        env["GITEA_ACTIONS"] = "true"
    return env


def run_action(env: dict[str, str], logs: list[str] | None = None) -> tuple[int, str]:
    """`action.run` with a forge that may not sleep; its log is also kept in `logs` when it raises."""
    out = io.StringIO()
    try:
        return action.run(env, out=out, make_forge=functools.partial(make_forge, sleep=_refuse_sleep)), out.getvalue()
    finally:
        if logs is not None:
            logs.append(out.getvalue())
