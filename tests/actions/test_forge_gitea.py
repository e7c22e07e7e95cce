"""Gitea specifics: its pull request and comment JSON, the gitea-actions identity, its error bodies."""
from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import responses

from bot.actions.forge import make_forge
from bot.actions.forge.gitea import GiteaForge, api_base
from bot.errors import WaveBotError

from support.fakes import MARKER, REPOSITORY, TOKEN, GiteaServer, fixture

BODY = f"{MARKER}\n## Wave report\n\nNo changes."
NEW_BODY = f"{MARKER}\n## Wave report\n\n- podinfo: wave 1 -> wave 2"
API = "/api/v1"


@pytest.fixture
def rsps() -> Iterator[responses.RequestsMock]:
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        yield mock


@pytest.fixture
def server(rsps: responses.RequestsMock) -> GiteaServer:
    return GiteaServer(rsps)


def failing(server: GiteaServer, route: str, status: int, name: str) -> None:
    server.fail(route, (status, fixture("gitea", name), {"content-type": "application/json;charset=utf-8"}))


# -- pull requests --------------------------------------------------------------------------------------


def test_reads_a_pull_request_from_the_same_repository(server: GiteaServer) -> None:
    pr = server.forge().pull_request(7)
    assert (pr.number, pr.head_ref, pr.base_ref) == (7, "wave/podinfo-redis", "main")
    assert pr.head_sha == "e5a1c7d3b9f2e4a6c8d0b2f4a6c8e0d2b4f6a8c0"
    assert pr.base_sha == "4b1f0c2e8d9a7b6c5d4e3f2a1b0c9d8e7f6a5b4c"
    assert (pr.head_repo, pr.base_repo) == (REPOSITORY, REPOSITORY)
    assert pr.html_url == "https://gitea.example.com/acme/gitops/pulls/7"
    assert not pr.is_fork


def test_reads_a_pull_request_from_a_fork(server: GiteaServer) -> None:
    server.pulls[8] = fixture("gitea", "pull_request_fork.json")
    pr = server.forge().pull_request(8)
    assert (pr.head_repo, pr.head_ref) == ("contrib/gitops", "feature/grafana")
    assert pr.is_fork


def test_a_deleted_head_repository_keeps_the_branch_name(server: GiteaServer) -> None:
    # Gitea then answers ref "refs/pull/9/head", repo null, repo_id -1; the label still names the branch.
    server.pulls[9] = fixture("gitea", "pull_request_head_deleted.json")
    pr = server.forge().pull_request(9)
    assert (pr.head_repo, pr.head_ref) == (None, "feature/loki")
    assert pr.is_fork


@pytest.mark.parametrize(
    "api_url",
    [
        "https://gitea.example.com",
        "https://gitea.example.com/",
        "https://gitea.example.com/api/v1",
        "https://gitea.example.com/api/v1/",
    ],
)
def test_the_api_url_may_be_the_server_or_the_api(api_url: str) -> None:
    assert api_base(api_url) == "https://gitea.example.com/api/v1"


def test_authenticates_with_a_token_header(server: GiteaServer, rsps: responses.RequestsMock) -> None:
    server.forge().pull_request(7)
    assert rsps.calls[0].request.headers["Authorization"] == f"token {TOKEN}"
    assert "token=" not in (rsps.calls[0].request.url or "")  # never in the URL, where proxies log it


# -- comments -------------------------------------------------------------------------------------------


def test_lists_every_comment_in_one_request(server: GiteaServer) -> None:
    for i in range(150):
        server.add_comment(f"review note {i}", "human")
    ours = server.add_comment(BODY, "bot")
    assert server.forge().upsert_comment(7, MARKER, BODY).id == ours["id"]
    assert server.requests("GET", "/comments") == [f"GET {API}/repos/{REPOSITORY}/issues/7/comments"]


def test_sends_the_body_as_utf8(server: GiteaServer, rsps: responses.RequestsMock) -> None:
    server.forge().upsert_comment(7, MARKER, f"{BODY}\n\nGrüße → wave 2 ✓")
    post = next(c.request for c in rsps.calls if c.request.method == "POST")
    assert "Grüße → wave 2 ✓".encode() in post.body
    assert post.headers["Content-Type"] == "application/json"
    assert json.loads(post.body) == {"body": f"{BODY}\n\nGrüße → wave 2 ✓"}


def test_the_comment_url_is_the_html_url(server: GiteaServer) -> None:
    result = server.forge().upsert_comment(7, MARKER, BODY)
    assert result.url == f"https://gitea.example.com/acme/gitops/pulls/7#issuecomment-{result.id}"


# -- identity ---------------------------------------------------------------------------------------------


def test_the_actions_token_is_gitea_actions(server: GiteaServer) -> None:
    assert fixture("gitea", "user_actions.json")["login"] == "gitea-actions"
    ours = server.add_comment(BODY, "bot")
    assert ours["user"]["login"] == "gitea-actions" and ours["user"]["id"] == -2
    result = server.forge().upsert_comment(7, MARKER, NEW_BODY)
    assert (result.action, result.id) == ("updated", ours["id"])
    assert server.requests("GET", "/user") == [f"GET {API}/user"]


def test_an_access_token_is_its_owner(rsps: responses.RequestsMock) -> None:
    server = GiteaServer(rsps, identity="pat")
    actions_comment = server.add_comment(BODY, "human")
    actions_comment["user"] = fixture("gitea", "issue_comment_bot.json")["user"]  # gitea-actions
    ours = server.add_comment(BODY, "bot")
    assert ours["user"]["login"] == "wave-bot"
    result = server.forge().upsert_comment(7, MARKER, NEW_BODY)
    assert (result.action, result.id) == ("updated", ours["id"])
    assert actions_comment["body"] == BODY
    assert server.requests() == [
        f"GET {API}/repos/{REPOSITORY}/issues/7/comments",
        f"GET {API}/user",
        f"PATCH {API}/repos/{REPOSITORY}/issues/comments/{ours['id']}",
    ]


# -- errors, with Gitea's own bodies ------------------------------------------------------------------------


def test_a_rejected_token_is_not_quoted_back(server: GiteaServer) -> None:
    failing(server, "pull", 401, "error_token_not_exist.json")
    assert TOKEN in json.dumps(fixture("gitea", "error_token_not_exist.json"))  # what Gitea really does
    with pytest.raises(WaveBotError) as caught:
        server.forge().pull_request(7)
    assert caught.value.message.endswith("HTTP 401: access token does not exist [sha: ***]")
    assert TOKEN not in str(caught.value)
    assert "secrets.GITEA_TOKEN" in (caught.value.hint or "")


def test_an_access_token_without_read_user_is_told_so(server: GiteaServer) -> None:
    server.add_comment(BODY, "bot")
    failing(server, "user", 403, "error_scope.json")
    with pytest.raises(WaveBotError) as caught:
        server.forge().upsert_comment(7, MARKER, NEW_BODY)
    assert "(GET /user): HTTP 403: token does not have at least one of required scope(s)" in caught.value.message
    assert "read:user" in (caught.value.hint or "")


def test_a_forbidden_edit_names_the_permissions(server: GiteaServer) -> None:
    server.add_comment(BODY, "bot")
    server.fail("edit", (403, "", {}))  # Gitea answers a forbidden edit with an empty body
    with pytest.raises(WaveBotError) as caught:
        server.forge().upsert_comment(7, MARKER, NEW_BODY)
    assert caught.value.message.endswith("HTTP 403")
    hint = caught.value.hint or ""
    assert "forks" in hint and "write:issue" in hint and "permissions" in hint


def test_a_pull_request_not_found(server: GiteaServer) -> None:
    failing(server, "pull", 404, "error_not_found.json")
    with pytest.raises(WaveBotError) as caught:
        server.forge().pull_request(7)
    assert caught.value.message.endswith("HTTP 404: The target couldn't be found.")


def test_a_binding_error_names_the_field(server: GiteaServer) -> None:
    failing(server, "create", 422, "error_validation.json")
    with pytest.raises(WaveBotError) as caught:
        server.forge().upsert_comment(7, MARKER, BODY)
    assert caught.value.message.endswith("HTTP 422: Body: Required")


def test_an_html_page_instead_of_the_api_says_so(server: GiteaServer) -> None:
    server.fail("pull", (200, "<!DOCTYPE html><html><title>Gitea: Git with a cup of tea</title></html>", {}))
    with pytest.raises(WaveBotError) as caught:
        server.forge().pull_request(7)
    assert "not JSON" in caught.value.message


def test_the_limit_is_renovates_for_gitea() -> None:
    forge = make_forge("gitea", api_url="https://gitea.example.com", repository=REPOSITORY, token=TOKEN)
    assert isinstance(forge, GiteaForge)
    assert forge.max_comment_chars == 1_000_000
    assert TOKEN not in repr(forge)
