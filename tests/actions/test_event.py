"""Reading the runner's environment and event payloads of both platforms."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bot.actions.event import read_event, read_inputs
from bot.errors import WaveBotError

from support.actionkit import dispatch_event, pull_request_event

FORGE = Path(__file__).parent.parent / "fixtures" / "forge"


def pr_payload(platform: str, action: str, fixture: str = "pull_request.json") -> dict[str, Any]:
    """A pull_request event payload built around the platform's real PR object."""
    return pull_request_event(platform, json.loads((FORGE / platform / fixture).read_text()), action)


def env(platform: str, **extra: str) -> dict[str, str]:
    base = {
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_REPOSITORY": "acme/homelab-gitops",
        "GITHUB_WORKSPACE": "/github/workspace",
        "GITHUB_RUN_ID": "1234",
        "GITHUB_REF_NAME": "7/merge",
        "INPUT_TOKEN": "t0ken",
    }
    if platform == "github":
        base |= {"GITHUB_SERVER_URL": "https://github.com", "GITHUB_API_URL": "https://api.github.com"}
    else:
        base |= {"GITEA_ACTIONS": "true", "GITHUB_SERVER_URL": "https://gitea.home.example"}
    return base | extra


@pytest.mark.parametrize("platform, action", [("github", "synchronize"), ("gitea", "synchronized")])
def test_pull_request_event_of_each_platform(platform: str, action: str) -> None:
    payload = pr_payload(platform, action)
    event = read_event(env(platform), json.dumps(payload).encode())
    assert event.platform == platform
    assert event.action == action
    assert event.pull_number == payload["number"]
    assert event.api_url == ("https://api.github.com" if platform == "github" else "https://gitea.home.example/api/v1")
    assert event.run_url == f"{env(platform)['GITHUB_SERVER_URL']}/acme/homelab-gitops/actions/runs/1234"


def test_only_the_number_is_taken_from_the_payload() -> None:
    """The forge's answer is the pull request's one record; the payload's copy may lack anything else."""
    payload = pr_payload("gitea", "reopened", "pull_request_head_deleted.json")
    assert read_event(env("gitea"), json.dumps(payload).encode()).pull_number == payload["number"]
    bare = {"action": "opened", "pull_request": {"number": 12}}
    assert read_event(env("github"), json.dumps(bare).encode()).pull_number == 12
    assert read_event(env("github"), json.dumps({"action": "opened", "number": 13}).encode()).pull_number == 13


@pytest.mark.parametrize("payload", [{"action": "opened"}, {"pull_request": {"number": "7"}}, {"number": True}])
def test_a_payload_without_a_pull_request_number_is_refused(payload: dict[str, object]) -> None:
    with pytest.raises(WaveBotError, match=r"no pull request number \(pull_request.number\)"):
        read_event(env("github"), json.dumps(payload).encode())


def test_dispatch_has_no_pull_request() -> None:
    pull = json.loads((FORGE / "github" / "pull_request.json").read_text())
    event = read_event(env("github", GITHUB_EVENT_NAME="workflow_dispatch", GITHUB_REF_NAME="main"),
                       json.dumps(dispatch_event("github", pull)).encode())
    assert event.pull_number is None and event.ref_name == "main"


def test_inputs_defaults_and_hyphenated_names() -> None:
    inputs = read_inputs({"INPUT_TOKEN": "x"})
    assert (inputs.fix_overlays, inputs.commit, inputs.comment, inputs.fail_on) == (False, True, True, "error")
    inputs = read_inputs({"INPUT_TOKEN": "x", "INPUT_FIX-OVERLAYS": "true", "INPUT_FAIL-ON": "warning",
                          "INPUT_COMMIT": "false", "INPUT_CONFIG": "ops/wave-bot.yaml"})
    assert (inputs.fix_overlays, inputs.commit, inputs.fail_on) == (True, False, "warning")
    assert inputs.config == "ops/wave-bot.yaml"


@pytest.mark.parametrize(
    "environment, message",
    [
        ({}, "no token: the 'token' input is empty"),
        ({"INPUT_TOKEN": "x", "INPUT_COMMIT": "maybe"}, "input 'commit' must be true or false, got 'maybe'"),
        ({"INPUT_TOKEN": "x", "INPUT_FAIL-ON": "info"}, "input 'fail-on' must be error, warning or never"),
    ],
)
def test_bad_inputs(environment: dict[str, str], message: str) -> None:
    with pytest.raises(WaveBotError, match=message):
        read_inputs(environment)


def test_outside_actions_says_what_to_run_instead() -> None:
    with pytest.raises(WaveBotError, match="GITHUB_SERVER_URL is not set") as exc:
        read_event({}, None)
    assert "wave-bot plan" in (exc.value.hint or "")

