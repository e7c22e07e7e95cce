"""What both forges do alike: one sticky comment, bounded retries, errors that say what to fix.

Each test runs against a stateful fake of the GitHub and of the Gitea REST API (tests/support/fakes.py), which
answers with the JSON recorded under tests/fixtures/forge/.
"""
from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
import requests
import responses
from hypothesis import given
from hypothesis import strategies as st

from bot.actions.forge import Forge, fit_body, make_forge
from bot.actions.forge.gitea import GiteaForge
from bot.actions.forge.github import GitHubForge
from bot.errors import RUN_ERROR, WaveBotError

from support.fakes import MARKER, REPOSITORY, SERVERS, ForgeServer, fixture

BODY = f"{MARKER}\n## Wave report\n\nNo changes."
NEW_BODY = f"{MARKER}\n## Wave report\n\n- podinfo: wave 1 -> wave 2"
NOW = 1_715_678_400.0  # 2024-05-14T09:20:00Z


@pytest.fixture
def rsps() -> Iterator[responses.RequestsMock]:
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        yield mock


@pytest.fixture(params=sorted(SERVERS))
def server(request: pytest.FixtureRequest, rsps: responses.RequestsMock) -> ForgeServer:
    return SERVERS[request.param](rsps)


class Waits:
    """A sleep that records instead of sleeping."""

    def __init__(self) -> None:
        self.seconds: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.seconds.append(seconds)


def clocked(server: ForgeServer, waits: Waits, token: str | None = None) -> Forge:
    """The server's forge with a fixed clock, for waits computed from rate-limit reset times."""
    cls = GitHubForge if server.platform == "github" else GiteaForge
    return cls(api_url=server.api, repository=REPOSITORY, token=token or server.token, sleep=waits, clock=lambda: NOW)


def comments_path(server: ForgeServer) -> str:
    return f"{server.prefix}/repos/{REPOSITORY}/issues/7/comments"


# -- the sticky comment ---------------------------------------------------------------------------------


def test_creates_the_comment_when_there_is_none(server: ForgeServer) -> None:
    server.add_comment("Looks good; waiting for the report.", "human")
    result = server.forge().upsert_comment(7, MARKER, BODY)
    assert result.action == "created"
    assert server.writes == [f"POST {comments_path(server)}"]
    assert server.bodies()[-1] == BODY
    assert result.url.endswith(f"#issuecomment-{result.id}")
    # No comment carries the marker, so there is nobody to tell apart: the identity is never asked.
    assert server.requests("GET", "/user") == []


def test_leaves_an_identical_comment_alone(server: ForgeServer) -> None:
    existing = server.add_comment(BODY, "bot")
    result = server.forge().upsert_comment(7, MARKER, BODY)
    assert (result.action, result.id) == ("unchanged", existing["id"])
    assert result.url == existing["html_url"]
    assert server.writes == []


def test_edits_its_comment_once_when_the_report_changed(server: ForgeServer) -> None:
    existing = server.add_comment(BODY, "bot")
    result = server.forge().upsert_comment(7, MARKER, NEW_BODY)
    assert (result.action, result.id) == ("updated", existing["id"])
    assert server.writes == [f"PATCH {server.prefix}/repos/{REPOSITORY}/issues/comments/{existing['id']}"]
    assert server.bodies() == [NEW_BODY]


def test_a_body_without_the_marker_gets_it(server: ForgeServer) -> None:
    server.forge().upsert_comment(7, MARKER, "## Wave report")
    assert server.bodies() == [f"{MARKER}\n## Wave report"]


def test_never_edits_a_humans_comment_that_carries_the_marker(server: ForgeServer) -> None:
    quoted = f"Why does the bot say this?\n> {BODY}"
    human = server.add_comment(quoted, "human")
    result = server.forge().upsert_comment(7, MARKER, NEW_BODY)
    assert result.action == "created"
    assert human["body"] == quoted
    assert [w.split(" ")[0] for w in server.writes] == ["POST"]
    assert len(server.requests("GET", "/user")) == 1


def test_updates_the_oldest_of_several_bot_comments_and_leaves_the_rest(server: ForgeServer) -> None:
    oldest = server.add_comment(BODY, "bot")
    newer = server.add_comment(f"{BODY}\n(duplicate from an old bug)", "bot")
    result = server.forge().upsert_comment(7, MARKER, NEW_BODY)
    assert (result.action, result.id) == ("updated", oldest["id"])
    assert newer["body"] == f"{BODY}\n(duplicate from an old bug)"
    assert len(server.writes) == 1


def test_looks_up_its_identity_once_per_forge(server: ForgeServer) -> None:
    server.add_comment(BODY, "bot")
    forge = server.forge()
    forge.upsert_comment(7, MARKER, NEW_BODY)
    forge.upsert_comment(7, MARKER, BODY)
    assert len(server.requests("GET", "/user")) == 1


def test_a_given_bot_login_skips_the_lookup(server: ForgeServer) -> None:
    existing = server.add_comment(BODY, "bot")
    login = existing["user"]["login"].upper()  # logins compare without case
    result = server.forge(bot_login=login).upsert_comment(7, MARKER, NEW_BODY)
    assert (result.action, result.id) == ("updated", existing["id"])
    assert server.requests("GET", "/user") == []


def test_an_overlong_report_is_cut_and_points_elsewhere(server: ForgeServer) -> None:
    forge = server.forge()
    line = "| podinfo | wave 1 | wave 2 |\n"
    body = f"{MARKER}\n## Wave report\n\n" + line * (forge.max_comment_chars // len(line) + 10)
    note = "The full report is in the job summary."
    forge.upsert_comment(7, MARKER, body, overflow_note=note)
    (posted,) = server.bodies()
    assert len(posted) <= forge.max_comment_chars
    assert posted.startswith(f"{MARKER}\n## Wave report")
    assert posted.endswith(f"{line.rstrip()}\n\n{note}")


# -- retries --------------------------------------------------------------------------------------------


def test_a_lost_answer_to_the_post_does_not_leave_a_second_comment(server: ForgeServer) -> None:
    waits = Waits()
    server.fail("create", (502, "<html>Bad Gateway</html>", {}), landed=True)
    result = server.forge(waits).upsert_comment(7, MARKER, BODY)
    assert result.action == "created"
    assert server.bodies() == [BODY]
    assert [w.split(" ")[0] for w in server.writes] == ["POST"]
    # The second look found the comment the failed POST had made.
    assert len(server.requests("GET", comments_path(server))) >= 2
    assert waits.seconds == [1.0]


def test_a_post_that_never_arrived_is_sent_again_after_looking(server: ForgeServer) -> None:
    waits = Waits()
    server.fail("create", requests.ConnectionError("connection reset by peer"))
    result = server.forge(waits).upsert_comment(7, MARKER, BODY)
    assert result.action == "created"
    assert server.bodies() == [BODY]
    assert [w.split(" ")[0] for w in server.writes] == ["POST", "POST"]
    assert waits.seconds == [1.0]


def test_a_refused_post_is_not_retried(server: ForgeServer) -> None:
    server.fail("create", (422, fixture(server.platform, "error_validation.json"), {}))
    with pytest.raises(WaveBotError) as caught:
        server.forge().upsert_comment(7, MARKER, BODY)
    assert caught.value.exit_code == RUN_ERROR
    assert "HTTP 422" in caught.value.message
    assert len(server.writes) == 1


def test_retry_after_is_honoured(server: ForgeServer) -> None:
    waits = Waits()
    server.fail("list", (429, {"message": "Too Many Requests"}, {"Retry-After": "7"}))
    assert server.forge(waits).upsert_comment(7, MARKER, BODY).action == "created"
    assert waits.seconds == [7.0]


def test_server_errors_back_off_then_give_up(server: ForgeServer) -> None:
    waits = Waits()
    server.fail("pull", *[(503, {"message": "Service Unavailable"}, {})] * 4)
    with pytest.raises(WaveBotError) as caught:
        server.forge(waits).pull_request(7)
    assert waits.seconds == [1.0, 2.0, 4.0]
    assert "HTTP 503" in caught.value.message and "after 4 attempts" in caught.value.message
    assert "re-run the job" in (caught.value.hint or "")


def test_a_timeout_is_retried(server: ForgeServer) -> None:
    waits = Waits()
    server.fail("list", requests.Timeout("read timed out"))
    existing = server.add_comment(BODY, "bot")
    assert server.forge(waits).upsert_comment(7, MARKER, BODY).id == existing["id"]
    assert waits.seconds == [1.0]


def test_an_edit_is_retried_after_a_server_error(server: ForgeServer) -> None:
    waits = Waits()
    server.add_comment(BODY, "bot")
    server.fail("edit", (500, {"message": "Internal Server Error"}, {}))
    assert server.forge(waits).upsert_comment(7, MARKER, NEW_BODY).action == "updated"
    assert server.bodies() == [NEW_BODY]
    assert waits.seconds == [1.0]


def test_a_rate_limit_reset_within_a_minute_is_waited_for(server: ForgeServer) -> None:
    waits = Waits()
    headers = {"x-ratelimit-limit": "1000", "x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(NOW) + 30)}
    server.fail("pull", (403, {"message": "API rate limit exceeded"}, headers))
    assert clocked(server, waits).pull_request(7).number == 7
    assert waits.seconds == [31.0]


def test_a_rate_limit_resetting_later_fails_at_once_saying_when(server: ForgeServer) -> None:
    waits = Waits()
    headers = {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(NOW) + 45 * 60)}
    server.fail("pull", (403, {"message": "API rate limit exceeded"}, headers))
    with pytest.raises(WaveBotError) as caught:
        clocked(server, waits).pull_request(7)
    assert waits.seconds == []
    assert "10:05:01 UTC" in (caught.value.hint or "")


# -- errors ---------------------------------------------------------------------------------------------


def test_an_unknown_pull_request_says_so(server: ForgeServer) -> None:
    with pytest.raises(WaveBotError) as caught:
        server.forge().pull_request(99)
    error = caught.value
    assert error.exit_code == RUN_ERROR
    assert f"could not read pull request #99 (GET /repos/{REPOSITORY}/pulls/99): HTTP 404" in error.message
    assert "does not exist" in (error.hint or "")


def test_a_comment_deleted_meanwhile_says_so(server: ForgeServer) -> None:
    existing = server.add_comment(BODY, "bot")
    server.fail("edit", (404, fixture(server.platform, "error_not_found.json"), {}))
    with pytest.raises(WaveBotError) as caught:
        server.forge().upsert_comment(7, MARKER, NEW_BODY)
    assert f"could not update comment {existing['id']}" in caught.value.message
    assert "deleted while the bot ran" in (caught.value.hint or "")


def test_no_answer_at_all_says_to_check_the_url(server: ForgeServer) -> None:
    waits = Waits()
    server.fail("pull", *[requests.ConnectionError("Name or service not known")] * 4)
    with pytest.raises(WaveBotError) as caught:
        server.forge(waits).pull_request(7)
    assert "no answer" in caught.value.message
    assert "check api_url" in (caught.value.hint or "")


SENTINEL = "ghp_SENTINEL0123456789abcdefSENTINEL0123"


def test_the_token_never_shows(rsps: responses.RequestsMock, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.DEBUG, logger="github")  # PyGithub pins its logger to INFO
    for platform, cls in SERVERS.items():
        server = cls(rsps, token=SENTINEL)
        echo = {"message": f"access token does not exist [sha: {SENTINEL}]", "url": "https://x/api/swagger"}
        server.fail("list", (401, echo, {}))
        proxy = requests.ConnectionError(f"proxy said: Authorization: token {SENTINEL}")
        server.fail("pull", proxy, *[(502, SENTINEL, {})] * 3)
        forge = server.forge(Waits())
        errors: list[BaseException] = []
        with pytest.raises(WaveBotError) as caught:
            forge.upsert_comment(7, MARKER, BODY)
        errors.append(caught.value)
        with pytest.raises(WaveBotError) as caught:
            forge.pull_request(7)
        errors.append(caught.value)
        seen = [repr(forge), str(forge)]
        for error in errors:
            link: BaseException | None = error
            while link is not None:  # the whole chain, though `from None` hides it from tracebacks
                seen += [str(link), repr(link), repr(vars(link))]
                link = link.__cause__ or link.__context__
        assert "HTTP 401" in str(errors[0]) and "invalid or expired" in str(errors[0]), platform
        assert all(SENTINEL not in text for text in seen), platform
    assert SENTINEL not in caplog.text
    assert caplog.records  # the debug logging ran, so the check above means something


# -- make_forge -----------------------------------------------------------------------------------------


def test_an_unknown_platform_lists_the_known_ones() -> None:
    with pytest.raises(WaveBotError) as caught:
        make_forge("gitlab", api_url="https://gitlab.com/api/v4", repository=REPOSITORY, token="t")
    assert "gitlab" in caught.value.message
    assert caught.value.hint == "use one of: gitea, github"


@pytest.mark.parametrize("repository", ["acme", "acme/", "/gitops", "acme/gitops/extra"])
def test_a_repository_must_be_owner_slash_name(repository: str) -> None:
    with pytest.raises(WaveBotError, match="owner/name"):
        make_forge("github", api_url="https://api.github.com", repository=repository, token="t")


def test_an_empty_token_is_refused_before_any_request() -> None:
    with pytest.raises(WaveBotError, match="no API token"):
        make_forge("gitea", api_url="https://gitea.example.com", repository=REPOSITORY, token="")


# -- fit_body -------------------------------------------------------------------------------------------

_lines = st.lists(st.text(alphabet=st.characters(blacklist_characters="\n"), max_size=40), max_size=30)


@given(lines=_lines, limit=st.integers(min_value=80, max_value=600), marker_last=st.booleans())
def test_fit_body_keeps_the_marker_and_the_limit(lines: list[str], limit: int, marker_last: bool) -> None:
    body = "\n".join([*lines, MARKER] if marker_last else [MARKER, *lines])
    note = "Full report: job summary."
    fitted = fit_body(body, MARKER, note, limit)
    assert len(fitted) <= limit
    assert MARKER in fitted
    if len(body) <= limit:
        assert fitted == body
    else:
        assert fitted.endswith(note)


def test_fit_body_cuts_at_a_line_boundary_and_closes_a_code_fence() -> None:
    body = f"{MARKER}\n```\n" + "".join(f"line {i:03}\n" for i in range(100)) + "```\n"
    fitted = fit_body(body, MARKER, "see the summary", 200)
    kept, _, note = fitted.rpartition("\n\n")
    assert note == "see the summary"
    assert kept.endswith("\n```")
    assert kept.removesuffix("\n```").splitlines()[-1].startswith("line ")
    assert len(fitted) <= 200


def test_fit_body_leads_with_a_marker_that_would_be_cut_off() -> None:
    body = "x" * 500 + "\n" + MARKER
    fitted = fit_body(body, MARKER, "", 100)
    assert fitted.startswith(MARKER) and len(fitted) <= 100
