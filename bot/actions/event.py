"""What the Actions runner tells the bot: environment, inputs and the event payload, parsed once.

GitHub Actions and Gitea Actions set the same GITHUB_* variables with small differences (Gitea
adds GITEA_ACTIONS=true, serves its API at <server>/api/v1, and calls a pushed PR `synchronized`
where GitHub says `synchronize`). Everything here is pure: it takes the environment as a mapping
and the payload as bytes.
"""
from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from bot.actions.forge.platforms import detect
from bot.errors import WaveBotError
from bot.naming import shown

Platform = Literal["github", "gitea"]
FailOn = Literal["error", "warning", "never"]
PR_ACTIONS = {"opened", "synchronize", "synchronized", "reopened"}
_REPO = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")


@dataclass(frozen=True)
class Inputs:
    """The action's inputs (INPUT_<NAME> variables)."""

    token: str
    config: str | None = None
    fix_overlays: bool = False
    commit: bool = True
    comment: bool = True
    fail_on: FailOn = "error"


@dataclass(frozen=True)
class Event:
    platform: Platform
    name: str  # pull_request, workflow_dispatch, ...
    action: str | None
    repository: str  # owner/name
    workspace: str
    api_url: str
    server_url: str
    ref_name: str | None  # the dispatched branch
    run_url: str | None
    summary_path: str | None
    output_path: str | None
    pull_number: int | None
    """The pull request the run is for. Only its number is taken from the payload: the forge's answer
    (`forge.PullRequest`) is the one record of it, read fresh, so a field the payload lacks cannot
    fail the run."""


def _input(env: Mapping[str, str], name: str) -> str:
    """Input `name` as the runner passes it: INPUT_FIX-OVERLAYS (hyphen kept), or with an underscore."""
    key = "INPUT_" + name.upper()
    return env.get(key, env.get(key.replace("-", "_"), "")).strip()


def _bool(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = _input(env, name).lower()
    if not raw:
        return default
    if raw in ("true", "yes", "1"):
        return True
    if raw in ("false", "no", "0"):
        return False
    raise WaveBotError(f"input '{name}' must be true or false, got {shown(raw)}")


def read_inputs(env: Mapping[str, str]) -> Inputs:
    token = _input(env, "token")
    if not token:
        raise WaveBotError(
            "no token: the 'token' input is empty",
            hint="keep the default `token: ${{ github.token }}` or pass a secret",
        )
    fail_on = _input(env, "fail-on") or "error"
    if fail_on not in ("error", "warning", "never"):
        raise WaveBotError(f"input 'fail-on' must be error, warning or never, got {shown(fail_on)}")
    return Inputs(
        token=token,
        config=_input(env, "config") or None,
        fix_overlays=_bool(env, "fix-overlays", False),
        commit=_bool(env, "commit", True),
        comment=_bool(env, "comment", True),
        fail_on=fail_on,  # type: ignore[arg-type]
    )


def _require(env: Mapping[str, str], name: str) -> str:
    value = env.get(name, "").strip()
    if not value:
        raise WaveBotError(f"{name} is not set: `wave-bot run` runs inside GitHub or Gitea Actions",
                           hint="locally, use `wave-bot plan`, `apply` or `check`")
    return value


def _pull_number(payload: Mapping[str, Any]) -> int:
    pull = payload.get("pull_request")
    number = pull.get("number") if isinstance(pull, Mapping) else None
    number = number if number is not None else payload.get("number")
    if isinstance(number, int) and not isinstance(number, bool) and number > 0:
        return number
    raise WaveBotError("the pull_request event payload has no pull request number (pull_request.number)")


def read_event(env: Mapping[str, str], payload: bytes | None) -> Event:
    """The run's facts from the runner's environment and the event payload (GITHUB_EVENT_PATH's bytes)."""
    forge = detect(env)
    server = _require(env, "GITHUB_SERVER_URL").rstrip("/")
    repository = _require(env, "GITHUB_REPOSITORY")
    if not _REPO.fullmatch(repository):
        raise WaveBotError(f"GITHUB_REPOSITORY {shown(repository)} is not owner/name")
    name = _require(env, "GITHUB_EVENT_NAME")
    data: Mapping[str, Any] = {}
    if payload:
        try:
            data = json.loads(payload)
        except ValueError:
            raise WaveBotError("the event payload (GITHUB_EVENT_PATH) is not JSON") from None
    run_id = env.get("GITHUB_RUN_ID", "").strip()
    return Event(
        platform=forge.name,  # type: ignore[arg-type]
        name=name,
        action=data.get("action") if isinstance(data.get("action"), str) else None,
        repository=repository,
        workspace=_require(env, "GITHUB_WORKSPACE"),
        api_url=(env.get("GITHUB_API_URL", "").strip() or forge.default_api(server)).rstrip("/"),
        server_url=server,
        ref_name=env.get("GITHUB_REF_NAME", "").strip() or None,
        run_url=f"{server}/{repository}/actions/runs/{run_id}" if run_id.isdigit() else None,
        summary_path=env.get("GITHUB_STEP_SUMMARY") or None,
        output_path=env.get("GITHUB_OUTPUT") or None,
        pull_number=_pull_number(data) if name in ("pull_request", "pull_request_target") else None,
    )
