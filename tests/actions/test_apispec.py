"""The recorded forge answers and the event payloads the tests build are ones the real forges send.

Checked against the forges' own descriptions, trimmed into tests/apispec/ by regenerate.py: GitHub's
OpenAPI description and webhook schemas, Gitea's swagger. The fake servers check every answer they
give as they give it (tests/support/fakes.py); this file checks the recordings themselves, the event
builders, and that the checks do catch what the real APIs would never say.
"""
from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from typing import Any

import pytest
import responses

from support import fakes
from support.actionkit import dispatch_event, pull_request_event
from support.apischema import SPECS, event_errors, request_errors, response_errors, spec
from support.fakes import FIXTURES, SERVERS, fixture

sys.path.insert(0, str(SPECS))
import regenerate  # noqa: E402 - the regeneration script, run here on its own output

# Each recording: the route (tests/support/fakes.py names) and status it answers.
RECORDED = {
    "github": {
        "pull_request.json": ("pull", 200), "pull_request_fork.json": ("pull", 200),
        "pull_request_head_deleted.json": ("pull", 200), "issue_comment_bot.json": ("create", 201),
        "issue_comment_human.json": ("create", 201), "user_authenticated.json": ("user", 200),
        "error_bad_credentials.json": ("pull", 401), "error_not_found.json": ("pull", 404),
        "error_integration_comment.json": ("create", 403), "error_integration_user.json": ("user", 403),
        "error_rate_limit.json": ("pull", 403), "error_secondary_rate_limit.json": ("pull", 403),
        "error_validation.json": ("create", 422),
    },
    "gitea": {
        "pull_request.json": ("pull", 200), "pull_request_fork.json": ("pull", 200),
        "pull_request_head_deleted.json": ("pull", 200), "issue_comment_bot.json": ("create", 201),
        "issue_comment_human.json": ("create", 201), "user_actions.json": ("user", 200),
        "user_token_owner.json": ("user", 200), "error_not_found.json": ("pull", 404),
        "error_scope.json": ("pull", 403), "error_token_not_exist.json": ("pull", 401),
        "error_validation.json": ("create", 422),
    },
}
PULLS = ["pull_request.json", "pull_request_fork.json", "pull_request_head_deleted.json"]
ACTIONS = {"github": ["opened", "synchronize", "reopened", "labeled"], "gitea": ["opened", "synchronized", "reopened"]}
# Nobody can open a PR from, or push to, a repository that no longer exists: a PR whose head fork
# was deleted only comes back reopened or relabelled (GitHub's synchronize schema rightly says so).
AFTER_DELETION = {"github": ["reopened", "labeled"], "gitea": ["reopened"]}


def test_every_json_recording_is_checked() -> None:
    recorded = {f"{platform}/{name}" for platform, names in RECORDED.items() for name in names}
    assert {p.relative_to(FIXTURES).as_posix() for p in FIXTURES.rglob("*.json")} == recorded


@pytest.mark.parametrize("platform, name", [(p, n) for p, names in RECORDED.items() for n in names])
def test_every_recording_matches_the_api_description(platform: str, name: str) -> None:
    route, status = RECORDED[platform][name]
    assert response_errors(platform, route, status, fixture(platform, name)) == []


@pytest.mark.parametrize("platform", ["github", "gitea"])
@pytest.mark.parametrize("pull", PULLS)
def test_pull_request_events_match_the_webhook_schemas(platform: str, pull: str) -> None:
    for action in (AFTER_DELETION if pull == "pull_request_head_deleted.json" else ACTIONS)[platform]:
        payload = pull_request_event(platform, fixture(platform, pull), action)  # the builder checks too
        assert event_errors(platform, "pull_request", payload) == []


@pytest.mark.parametrize("platform", ["github", "gitea"])
def test_dispatch_events_match_the_webhook_schemas(platform: str) -> None:
    payload = dispatch_event(platform, fixture(platform, "pull_request.json"))
    assert {"sender", "workflow", "ref", "inputs", "repository"} <= payload.keys()
    assert event_errors(platform, "workflow_dispatch", payload) == []


@pytest.mark.parametrize("platform", ["github", "gitea"])
def test_the_bots_request_bodies_match(platform: str) -> None:
    assert request_errors(platform, "create", {"body": "hello"}) == []
    assert request_errors(platform, "edit", {"body": "hello"}) == []
    assert request_errors(platform, "create", {"text": "hello"}) != []  # body is required


# -- the checks catch what the real APIs never say (the mismatches these recordings once had) --------


def test_an_empty_homepage_is_not_a_uri() -> None:
    pull = fixture("github", "pull_request.json")
    pull["base"]["repo"]["homepage"] = ""
    assert any("base/repo/homepage" in e for e in response_errors("github", "pull", 200, pull))


def test_a_public_user_view_with_private_fields_is_refused() -> None:
    me = fixture("github", "user_authenticated.json")
    assert me["user_view_type"] == "private" and "two_factor_authentication" in me
    assert response_errors("github", "user", 200, {**me, "user_view_type": "public"}) != []


def test_a_synchronize_event_needs_before_and_after() -> None:
    payload = pull_request_event("github", fixture("github", "pull_request.json"), "synchronize")
    for key in ("before", "after"):
        broken = {k: v for k, v in payload.items() if k != key}
        assert any(f"'{key}' is a required property" in e for e in event_errors("github", "pull_request", broken))


@pytest.mark.parametrize("platform", ["github", "gitea"])
@pytest.mark.parametrize("key", ["sender", "workflow"])
def test_a_dispatch_event_needs_its_sender_and_workflow(platform: str, key: str) -> None:
    payload = dispatch_event(platform, fixture(platform, "pull_request.json"))
    del payload[key]
    assert any(repr(key) in e for e in event_errors(platform, "workflow_dispatch", payload))


def test_a_wrong_type_in_a_gitea_answer_is_caught() -> None:
    pull = fixture("gitea", "pull_request.json")
    pull["number"] = "7"
    assert any(e.startswith("gitea pull 200: number:") for e in response_errors("gitea", "pull", 200, pull))


# -- the fake servers --------------------------------------------------------------------------------


@pytest.mark.parametrize("platform", ["github", "gitea"])
def test_the_fakes_answer_json_as_json(platform: str) -> None:
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        server = SERVERS[platform](rsps)
        server.forge().pull_request(7)
        (call,) = rsps.calls
    assert call.response.headers["Content-Type"] == server.json_type
    assert call.response.headers["Content-Type"].startswith("application/json")


@pytest.mark.parametrize("platform", ["github", "gitea"])
def test_a_fake_made_to_answer_nonsense_fails_the_test(platform: str) -> None:
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        server = SERVERS[platform](rsps)
        server.pulls[7]["number"] = "seven"
        checked = fakes.CHECKED[0]
        with pytest.raises(AssertionError, match="could not"):
            server.forge().pull_request(7)
    problems, fakes.VIOLATIONS[:] = list(fakes.VIOLATIONS), []  # seen here; not a failure of this test
    assert fakes.CHECKED[0] > checked
    assert any(f"{platform} pull 200: number:" in p for p in problems)


# -- the trimmed copies ------------------------------------------------------------------------------


def _refs(node: Any) -> list[str]:
    return list(regenerate.refs(node))


@pytest.mark.parametrize("name", ["github-rest", "github-webhooks", "gitea"])
def test_the_trimmed_copies_are_complete_and_minimal(name: str) -> None:
    """Every $ref resolves inside the copy, and trimming the copy again keeps all of it: it holds
    exactly what the operations the bot uses reach, as regenerate.py makes it from the full source."""
    doc = spec(name)
    for ref in _refs(doc):
        regenerate.pointer(doc, ref)
    roots = {
        "github-rest": (regenerate.operation_refs("paths", regenerate.GITHUB_OPERATIONS), regenerate.GITHUB_EXTRA),
        "github-webhooks": ([f"#/webhooks/{w}/post" for w in regenerate.GITHUB_WEBHOOKS], []),
        "gitea": (regenerate.operation_refs("paths", regenerate.GITEA_OPERATIONS), regenerate.GITEA_EXTRA),
    }[name]
    again = regenerate.trim(copy.deepcopy(doc), *roots, doc["info"]["x-trimmed-from"])
    assert json.dumps(again, sort_keys=True) == json.dumps(doc, sort_keys=True)


def test_the_copies_say_where_they_come_from() -> None:
    assert spec("github-rest")["info"]["x-trimmed-from"]["package"].startswith("@octokit/openapi@")
    assert spec("github-webhooks")["info"]["x-trimmed-from"]["package"].startswith("@octokit/openapi-webhooks@")
    assert spec("gitea")["info"]["x-trimmed-from"]["version"]
    assert Path(regenerate.__file__).resolve().parent == SPECS
