"""GitHub specifics: its pull request JSON, paginated comments, who an Actions token is, its error bodies."""
from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import responses

from bot.actions.forge import make_forge
from bot.actions.forge.github import ACTIONS_BOT, GitHubForge
from bot.errors import WaveBotError

from support.fakes import MARKER, REPOSITORY, GitHubServer, fixture

BODY = f"{MARKER}\n## Wave report\n\nNo changes."
NEW_BODY = f"{MARKER}\n## Wave report\n\n- podinfo: wave 1 -> wave 2"


@pytest.fixture
def rsps() -> Iterator[responses.RequestsMock]:
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        yield mock


@pytest.fixture
def server(rsps: responses.RequestsMock) -> GitHubServer:
    return GitHubServer(rsps)


class Waits(list[float]):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def failing(server: GitHubServer, route: str, status: int, name: str, headers: dict[str, str] | None = None) -> None:
    server.fail(route, (status, fixture("github", name), headers or {}))


# -- pull requests --------------------------------------------------------------------------------------


def test_reads_a_pull_request_from_the_same_repository(server: GitHubServer) -> None:
    pr = server.forge().pull_request(7)
    assert (pr.number, pr.head_ref, pr.base_ref) == (7, "wave/podinfo-redis", "main")
    assert pr.head_sha == "e5a1c7d3b9f2e4a6c8d0b2f4a6c8e0d2b4f6a8c0"
    assert pr.base_sha == "4b1f0c2e8d9a7b6c5d4e3f2a1b0c9d8e7f6a5b4c"
    assert (pr.head_repo, pr.base_repo) == (REPOSITORY, REPOSITORY)
    assert pr.html_url == "https://github.com/acme/gitops/pull/7"
    assert not pr.is_fork
    assert server.requests() == [f"GET /repos/{REPOSITORY}/pulls/7"]  # no GET of the repository first


def test_reads_a_pull_request_from_a_fork(server: GitHubServer) -> None:
    server.pulls[8] = fixture("github", "pull_request_fork.json")
    pr = server.forge().pull_request(8)
    assert (pr.head_repo, pr.head_ref, pr.base_repo) == ("octo-contrib/gitops", "feature/grafana", REPOSITORY)
    assert pr.is_fork


def test_a_deleted_head_repository_reads_as_none_and_counts_as_a_fork(server: GitHubServer) -> None:
    server.pulls[9] = fixture("github", "pull_request_head_deleted.json")
    pr = server.forge().pull_request(9)
    assert pr.head_repo is None and pr.head_ref == "feature/loki"
    assert pr.is_fork


def test_an_enterprise_server_api_url_is_used_as_given(rsps: responses.RequestsMock) -> None:
    class EnterpriseServer(GitHubServer):
        api = "https://ghe.example.com/api/v3"

    server = EnterpriseServer(rsps)
    forge = make_forge("github", api_url="https://ghe.example.com/api/v3/", repository=REPOSITORY, token=server.token)
    assert forge.pull_request(7).number == 7
    assert server.requests() == [f"GET /api/v3/repos/{REPOSITORY}/pulls/7"]


# -- comments across pages --------------------------------------------------------------------------------


def test_finds_its_comment_on_the_second_page(server: GitHubServer) -> None:
    for i in range(120):
        server.add_comment(f"review note {i}", "human")
    ours = server.add_comment(BODY, "bot")
    result = server.forge().upsert_comment(7, MARKER, NEW_BODY)
    assert (result.action, result.id) == ("updated", ours["id"])
    assert server.requests("GET", "/comments") == [
        f"GET /repos/{REPOSITORY}/issues/7/comments",
        "GET /repositories/601234567/issues/7/comments",  # the Link header's rel="next"
    ]
    assert [w.split(" ")[0] for w in server.writes] == ["PATCH"]


def test_a_failure_on_the_second_page_lists_again_from_the_first(server: GitHubServer) -> None:
    waits = Waits()
    for i in range(120):
        server.add_comment(f"review note {i}", "human")
    ours = server.add_comment(BODY, "bot")
    server.fail_page(2, (502, fixture("github", "error_bad_gateway.html"), {"content-type": "text/html"}))
    forge = server.forge(waits)
    assert forge.upsert_comment(7, MARKER, BODY).id == ours["id"]
    assert waits == [1.0]
    assert len(server.requests("GET", "/comments")) == 4  # page 1, page 2 (502), page 1, page 2


# -- identity ---------------------------------------------------------------------------------------------


def test_an_actions_token_is_github_actions_bot(server: GitHubServer) -> None:
    assert fixture("github", "issue_comment_bot.json")["user"]["login"] == ACTIONS_BOT
    foreign = server.add_comment(BODY, "human")
    foreign["user"] = {**foreign["user"], "login": "some-other-bot[bot]", "type": "Bot"}
    result = server.forge().upsert_comment(7, MARKER, NEW_BODY)
    assert result.action == "created"
    assert foreign["body"] == BODY
    assert server.requests("GET", "/user") == ["GET /user"]  # answered 403 "not accessible by integration"


def test_a_personal_token_is_its_owner(rsps: responses.RequestsMock) -> None:
    server = GitHubServer(rsps, identity="pat")
    actions_comment = server.add_comment(BODY, "human")
    actions_comment["user"] = fixture("github", "issue_comment_bot.json")["user"]  # github-actions[bot]
    ours = server.add_comment(BODY, "bot")  # written by wave-bot, the token's owner
    assert ours["user"]["login"] == "wave-bot"
    result = server.forge().upsert_comment(7, MARKER, NEW_BODY)
    assert (result.action, result.id) == ("updated", ours["id"])
    assert actions_comment["body"] == BODY
    # Exactly these: PyGithub fetches nothing behind our back to "complete" its objects.
    assert server.requests() == [
        f"GET /repos/{REPOSITORY}/issues/7/comments",
        "GET /user",
        f"PATCH /repos/{REPOSITORY}/issues/comments/{ours['id']}",
    ]


def test_a_rejected_identity_lookup_that_is_not_the_integration_case_fails(server: GitHubServer) -> None:
    server.add_comment(BODY, "bot")
    failing(server, "user", 401, "error_bad_credentials.json")
    with pytest.raises(WaveBotError) as caught:
        server.forge().upsert_comment(7, MARKER, NEW_BODY)
    message = caught.value.message
    assert message.endswith("could not look up the account the token belongs to (GET /user): HTTP 401: Bad credentials")


# -- errors, with GitHub's own bodies -----------------------------------------------------------------------


def test_bad_credentials(server: GitHubServer) -> None:
    failing(server, "pull", 401, "error_bad_credentials.json")
    with pytest.raises(WaveBotError) as caught:
        server.forge().pull_request(7)
    assert caught.value.message.endswith("HTTP 401: Bad credentials")
    assert "invalid or expired" in (caught.value.hint or "") and "secrets.GITHUB_TOKEN" in (caught.value.hint or "")


def test_missing_permission_names_the_workflow_permissions(server: GitHubServer) -> None:
    failing(server, "create", 403, "error_integration_comment.json")
    with pytest.raises(WaveBotError) as caught:
        server.forge().upsert_comment(7, MARKER, BODY)
    error = caught.value
    assert f"could not create the comment on #7 (POST /repos/{REPOSITORY}/issues/7/comments)" in error.message
    assert error.message.endswith("HTTP 403: Resource not accessible by integration")
    assert "permissions: contents: write, pull-requests: write" in (error.hint or "")
    assert len(server.writes) == 1


def test_a_pull_request_not_found(server: GitHubServer) -> None:
    failing(server, "pull", 404, "error_not_found.json")
    with pytest.raises(WaveBotError) as caught:
        server.forge().pull_request(7)
    assert caught.value.message.endswith("HTTP 404: Not Found")


def test_validation_failed_says_what_github_refused(server: GitHubServer) -> None:
    failing(server, "create", 422, "error_validation.json")
    with pytest.raises(WaveBotError) as caught:
        server.forge().upsert_comment(7, MARKER, BODY)
    assert "Validation Failed (Body is too long (maximum is 65536 characters))" in caught.value.message


def test_a_secondary_rate_limit_waits_as_long_as_github_asks(server: GitHubServer) -> None:
    waits = Waits()
    failing(server, "create", 403, "error_secondary_rate_limit.json", {"retry-after": "42"})
    assert server.forge(waits).upsert_comment(7, MARKER, BODY).action == "created"
    assert waits == [42.0]
    assert server.bodies() == [BODY]  # looked again before the second POST, found nothing, posted once more


def test_a_secondary_rate_limit_without_a_time_waits_a_minute(server: GitHubServer) -> None:
    waits = Waits()
    failing(server, "list", 403, "error_secondary_rate_limit.json")
    assert server.forge(waits).upsert_comment(7, MARKER, BODY).action == "created"
    assert waits == [60.0]


def test_a_bad_gateway_page_is_retried(server: GitHubServer) -> None:
    waits = Waits()
    server.fail("pull", (502, fixture("github", "error_bad_gateway.html"), {"content-type": "text/html"}))
    assert server.forge(waits).pull_request(7).number == 7
    assert waits == [1.0]


def test_pygithub_never_sleeps_on_its_own(server: GitHubServer, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(seconds: float) -> None:
        raise AssertionError(f"time.sleep({seconds}) called")

    monkeypatch.setattr(time, "sleep", refuse)
    waits = Waits()
    server.add_comment(BODY, "bot")
    server.fail("edit", (503, {"message": "Service Unavailable"}, {}))
    forge = server.forge(waits)
    forge.pull_request(7)
    assert forge.upsert_comment(7, MARKER, NEW_BODY).action == "updated"  # several requests, two of them writes
    assert waits == [1.0]


def test_the_limit_is_githubs(server: GitHubServer) -> None:
    assert GitHubForge.max_comment_chars == server.forge().max_comment_chars == 65536
