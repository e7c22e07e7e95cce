"""`wave-bot run` end to end: real git repositories with a bare origin, each forge's API faked over HTTP."""
from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import responses

from bot.actions import run as action
from bot.errors import RUN_ERROR, WaveBotError
from bot.repo.git import Workspace

from conftest import deployment, git, service, write_files
from support.actionkit import BRANCH, NEW_SERVICE, action_env, push_pr_branch, run_action
from support.fakes import SERVERS, TOKEN, ForgeServer


@dataclass
class Scenario:
    platform: str
    origin: Path
    work: Path  # a developer's clone, to push competing commits from
    tmp: Path
    server: ForgeServer
    base_sha: str = ""
    head_sha: str = ""

    def pr_branch(self, files: dict[str, str | bytes], message: str = "onboard tautulli") -> None:
        self.base_sha, self.head_sha = push_pr_branch(self.work, self.server.pulls[7], files, message, git)

    def fork(self) -> None:
        pull = self.server.pulls[7]
        pull["head"]["repo"] = {**pull["head"]["repo"], "full_name": "octo-contrib/gitops"}

    def checkout(self, name: str = "workspace") -> Path:
        """What actions/checkout leaves: a clone detached at the PR head (GitHub: its merge commit)."""
        workspace = self.tmp / name
        subprocess.run(["git", "clone", "-q", str(self.origin), str(workspace)], check=True)
        git(workspace, "checkout", "-q", "--detach", self.head_sha or "main")
        return workspace

    def env(self, workspace: Path, event: str = "pull_request", action: str | None = None, **extra: str
            ) -> dict[str, str]:
        return action_env(self.platform, self.server.pulls[7], self.tmp, workspace, api_url=self.server.api,
                          token=TOKEN, event=event, action=action) | extra

    def run(self, env: dict[str, str]) -> tuple[int, str]:
        return run_action(env)

    def outputs(self) -> dict[str, str]:
        lines = (self.tmp / "output.txt").read_text().splitlines()
        return dict(line.split("=", 1) for line in lines)

    def origin_log(self, ref: str = BRANCH) -> list[str]:
        return git(self.origin, "log", "--format=%H %an%n%B%x00", ref).split("\0")


@pytest.fixture(params=["github", "gitea"])
def scenario(request: pytest.FixtureRequest, example_repo: Path, tmp_path: Path) -> Iterator[Scenario]:
    origin = example_repo.parent / "homelab-origin.git"
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        server = SERVERS[request.param](rsps)
        yield Scenario(request.param, origin, example_repo, tmp_path, server)


def test_first_run_pushes_one_commit_and_creates_one_comment(scenario: Scenario) -> None:
    scenario.pr_branch(NEW_SERVICE)
    code, log = scenario.run(scenario.env(scenario.checkout()))
    assert code == 0, log

    head, pushed_message = scenario.origin_log()[0].split("\n", 1)
    sha, author = head.split(" ", 1)
    assert author == ("github-actions[bot]" if scenario.platform == "github" else "flux-wave-bot")
    assert "Generated-by: flux-wave-bot" in pushed_message
    assert "- apps/tautulli.yaml -> apps/wave-1/tautulli.yaml" in pushed_message
    assert git(scenario.origin, "rev-parse", f"{sha}~1").strip() == scenario.head_sha  # one commit, no force
    tree = git(scenario.origin, "ls-tree", "-r", "--name-only", sha)
    assert "apps/wave-1/tautulli.yaml" in tree and "apps/tautulli.yaml" not in tree

    assert [w.split()[0] for w in scenario.server.writes] == ["POST"]
    (body,) = scenario.server.bodies()
    assert body.startswith(action.MARKER)
    assert f"regenerated** by wave-bot in {sha[:12]}" in body
    assert "| `tautulli.yaml` | new | wave 1 |" in body
    assert scenario.outputs() == {"changed": "true", "max-wave": "2", "commit-sha": sha,
                                  "comment-url": scenario.server.comments[0]["html_url"]}
    assert (scenario.tmp / "summary.md").read_text() == body.removeprefix(action.MARKER + "\n")
    assert f"platform={scenario.platform} api={scenario.server.api}" in log


def test_a_re_run_on_the_bots_commit_reports_the_same_restored_file(scenario: Scenario) -> None:
    """The first comment says a hand edit was undone; the run on wave-bot's commit must say it too,
    or it edits the comment once more (the edit is gone from the tree it sees)."""
    kustomization = (scenario.work / "apps/wave-1/kustomization.yaml").read_text()
    scenario.pr_branch({**NEW_SERVICE, "apps/wave-1/kustomization.yaml": kustomization.replace(
        "resources:\n", "resources:  # hand edit\n")})
    assert scenario.run(scenario.env(scenario.checkout("first")))[0] == 0
    (first,) = scenario.server.bodies()
    assert "`generated-file-restored`: `apps/wave-1/kustomization.yaml` differs from anything" in first
    scenario.head_sha = git(scenario.origin, "rev-parse", BRANCH).strip()
    scenario.server.pulls[7]["head"]["sha"] = scenario.head_sha
    writes_before = len(scenario.server.writes)

    code, log = scenario.run(scenario.env(scenario.checkout("second")))
    assert code == 0, log
    assert len(scenario.server.writes) == writes_before, scenario.server.bodies()[-1]
    assert "comment unchanged" in log


def test_second_run_pushes_nothing_and_writes_nothing(scenario: Scenario) -> None:
    scenario.pr_branch(NEW_SERVICE)
    assert scenario.run(scenario.env(scenario.checkout("first")))[0] == 0
    tip = scenario.origin_log()[0]
    scenario.head_sha = git(scenario.origin, "rev-parse", BRANCH).strip()
    scenario.server.pulls[7]["head"]["sha"] = scenario.head_sha
    writes_before = len(scenario.server.writes)

    code, log = scenario.run(scenario.env(scenario.checkout("second")))
    assert code == 0, log
    assert scenario.origin_log()[0] == tip
    assert len(scenario.server.writes) == writes_before  # the report reads the same: no edit
    assert "comment unchanged" in log
    assert scenario.outputs()["commit-sha"] == ""


def test_a_human_comment_carrying_the_marker_is_never_edited(scenario: Scenario) -> None:
    human = scenario.server.add_comment(f"{action.MARKER}\nI copied the bot's comment", author="human")
    scenario.pr_branch(NEW_SERVICE)
    assert scenario.run(scenario.env(scenario.checkout()))[0] == 0
    assert human["body"] == f"{action.MARKER}\nI copied the bot's comment"
    assert len(scenario.server.comments) == 2
    assert [w.split()[0] for w in scenario.server.writes] == ["POST"]


def test_a_push_race_is_won_by_regenerating_on_the_new_head(
    scenario: Scenario, monkeypatch: pytest.MonkeyPatch
) -> None:
    scenario.pr_branch(NEW_SERVICE)
    real_push = Workspace.push
    raced = []

    def push_after_a_human(self: Workspace, branch: str) -> Any:
        if not raced:  # someone else pushes to the branch while the bot works
            write_files(scenario.work, {"catalog/overseerr.yaml": service("overseerr", "seerr"),
                                        "apps/overseerr.yaml": deployment("overseerr")})
            git(scenario.work, "add", "-A")
            git(scenario.work, "commit", "-q", "-m", "onboard overseerr too")
            git(scenario.work, "push", "-q", "origin", f"HEAD:refs/heads/{BRANCH}")
            raced.append(git(scenario.work, "rev-parse", "HEAD").strip())
        return real_push(self, branch)

    monkeypatch.setattr(Workspace, "push", push_after_a_human)
    code, log = scenario.run(scenario.env(scenario.checkout()))
    assert "moved while wave-bot ran; regenerating on its new head (1/3)" in log
    commits = scenario.origin_log()
    assert git(scenario.origin, "rev-parse", f"{BRANCH}~1").strip() == raced[0]  # built on the human's commit
    assert "Generated-by: flux-wave-bot" in commits[0]
    tree = git(scenario.origin, "ls-tree", "-r", "--name-only", BRANCH)
    assert "apps/wave-1/tautulli.yaml" in tree and "apps/wave-3/overseerr.yaml" in tree
    assert code in (0, 1), log  # wave 3 is new: whether that fails is the findings' business


def test_fork_pr_gets_the_diff_in_the_comment_and_a_failing_exit(scenario: Scenario) -> None:
    scenario.pr_branch(NEW_SERVICE)
    scenario.fork()
    branches_before = git(scenario.origin, "for-each-ref")
    code, log = scenario.run(scenario.env(scenario.checkout()))
    assert code == 1
    assert git(scenario.origin, "for-each-ref") == branches_before  # nothing pushed anywhere
    (body,) = scenario.server.bodies()
    assert "This pull request comes from a fork, so wave-bot cannot push to it." in body
    assert "```diff" in body and "rename to apps/wave-1/tautulli.yaml" in body
    assert "wave-bot apply" in body and "git apply --index" in body
    assert scenario.outputs()["commit-sha"] == ""


def test_403_on_the_comment_says_which_permission_is_missing(scenario: Scenario) -> None:
    scenario.pr_branch(NEW_SERVICE)
    if scenario.platform == "github":
        forbidden = {"message": "Resource not accessible by integration",
                     "documentation_url": "https://docs.github.com/rest/issues/comments#create-an-issue-comment",
                     "status": "403"}
    else:
        forbidden = {"message": "token does not have at least one of required scope(s): [write:issue]",
                     "url": "https://gitea.example.com/api/swagger"}
    scenario.server.fail("create", (403, forbidden, {}))
    with pytest.raises(WaveBotError) as exc:
        scenario.run(scenario.env(scenario.checkout()))
    assert exc.value.exit_code == RUN_ERROR
    text = str(exc.value)
    assert "comment" in text
    assert "pull-requests: write" in text or "write:issue" in text


def test_workflow_dispatch_regenerates_the_branch_and_reports_in_the_summary(scenario: Scenario) -> None:
    write_files(scenario.work, NEW_SERVICE)
    git(scenario.work, "add", "-A")
    git(scenario.work, "commit", "-q", "-m", "onboard tautulli on main")
    git(scenario.work, "push", "-q", "origin", "HEAD:refs/heads/main")
    code, log = scenario.run(scenario.env(scenario.checkout(), event="workflow_dispatch"))
    assert code == 0, log
    assert "Generated-by: flux-wave-bot" in scenario.origin_log("main")[0]
    assert scenario.server.requests() == []  # no PR, no API
    assert "#### Waves" in (scenario.tmp / "summary.md").read_text()


def test_dispatch_on_a_protected_branch_fails_with_the_command_to_run(scenario: Scenario) -> None:
    write_files(scenario.work, NEW_SERVICE)
    git(scenario.work, "add", "-A")
    git(scenario.work, "commit", "-q", "-m", "onboard tautulli on main")
    git(scenario.work, "push", "-q", "origin", "HEAD:refs/heads/main")
    hook = scenario.origin / "hooks" / "pre-receive"  # branch protection, as the server enforces it
    hook.write_text("#!/bin/sh\necho 'GH006: Protected branch update failed' >&2\nexit 1\n")
    hook.chmod(0o755)
    tip = git(scenario.origin, "rev-parse", "main")
    code, log = scenario.run(scenario.env(scenario.checkout(), event="workflow_dispatch"))
    assert code == 1
    assert "push refused" in log
    assert git(scenario.origin, "rev-parse", "main") == tip
    summary = (scenario.tmp / "summary.md").read_text()
    assert "could not push to `main`" in summary and "wave-bot apply" in summary


def test_loop_guard_stops_instead_of_committing_again(scenario: Scenario, monkeypatch: pytest.MonkeyPatch) -> None:
    scenario.pr_branch(NEW_SERVICE, message="wave-bot: regenerate\n\nGenerated-by: flux-wave-bot")
    with pytest.raises(WaveBotError, match="head commit is wave-bot's own and regenerating would change files again"):
        scenario.run(scenario.env(scenario.checkout()))
    assert "Generated-by" in scenario.origin_log()[0]
    assert git(scenario.origin, "rev-parse", BRANCH).strip() == scenario.head_sha


def test_unrelated_pull_request_actions_do_nothing(scenario: Scenario) -> None:
    scenario.pr_branch(NEW_SERVICE)
    code, log = scenario.run(scenario.env(scenario.checkout(), action="labeled"))
    assert code == 0 and "nothing to do for pull_request action 'labeled'" in log
    assert scenario.server.requests() == []


def test_fail_on_never_passes_despite_errors(scenario: Scenario) -> None:
    scenario.pr_branch({"apps/wave-0/mystery.yaml": deployment("mystery")})
    code, log = scenario.run(scenario.env(scenario.checkout()))
    assert code == 1 and "::error file=apps/wave-0/mystery.yaml,title=unplaced-file::" in log
    code, _ = scenario.run(scenario.env(scenario.checkout("again"), **{"INPUT_FAIL-ON": "never"}))
    assert code == 0


@pytest.mark.parametrize("branch", ["-rf", "feature/../main", "two words", "x;rm -rf ~", "$(id)", "line\nbreak",
                                    "refs~1", "ends.lock", "colon:name"])
def test_hostile_branch_names_are_refused_before_git_sees_them(scenario: Scenario, branch: str) -> None:
    scenario.pr_branch(NEW_SERVICE)
    scenario.server.pulls[7]["head"]["ref"] = branch
    with pytest.raises(WaveBotError, match="refusing to work on branch") as exc:
        scenario.run(scenario.env(scenario.checkout()))
    assert exc.value.exit_code == 2
    assert git(scenario.origin, "rev-parse", BRANCH).strip() == scenario.head_sha


def test_a_refused_push_on_a_pr_gets_the_diff_comment_and_fails(scenario: Scenario) -> None:
    scenario.pr_branch(NEW_SERVICE)
    hook = scenario.origin / "hooks" / "pre-receive"
    denied = "remote: Permission to acme/gitops.git denied to github-actions[bot]."
    hook.write_text(f"#!/bin/sh\necho '{denied}' >&2\nexit 1\n")
    hook.chmod(0o755)
    code, log = scenario.run(scenario.env(scenario.checkout()))
    assert code == 1 and "push refused" in log
    assert git(scenario.origin, "rev-parse", BRANCH).strip() == scenario.head_sha
    (body,) = scenario.server.bodies()
    assert f"could not push to `{BRANCH}`" in body and "```diff" in body


def test_a_run_failure_exits_with_its_own_code(tmp_path: Path) -> None:
    """`wave-bot run` as the container starts it: a run that could not do its work exits 4, not 1
    (which says the run worked and found the layout wanting) nor 2 (the input is wrong)."""
    (tmp_path / "not-a-checkout").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "GITEA_", "INPUT_"))} | {
        "GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "workflow_dispatch", "GITHUB_REF_NAME": "main",
        "GITHUB_SERVER_URL": "https://github.com", "GITHUB_REPOSITORY": "acme/gitops",
        "GITHUB_WORKSPACE": str(tmp_path / "not-a-checkout"), "INPUT_TOKEN": TOKEN}
    done = subprocess.run([sys.executable, "-m", "bot", "run"], env=env, capture_output=True, text=True)
    assert done.returncode == RUN_ERROR == 4, done.stderr
    assert "is not a git checkout" in done.stderr and "actions/checkout" in done.stderr
    assert "::error file=" in done.stdout
    assert TOKEN not in done.stdout.replace(f"::add-mask::{TOKEN}\n", "", 1) + done.stderr


def test_a_fetch_failure_is_a_clear_run_error(scenario: Scenario) -> None:
    scenario.pr_branch(NEW_SERVICE)
    workspace = scenario.checkout()
    git(workspace, "remote", "set-url", "origin", str(scenario.tmp / "gone.git"))
    with pytest.raises(WaveBotError, match="git fetch failed") as exc:
        scenario.run(scenario.env(workspace))
    assert exc.value.exit_code == RUN_ERROR


def test_a_base_commit_that_cannot_be_fetched_degrades_loudly(scenario: Scenario) -> None:
    scenario.pr_branch(NEW_SERVICE)
    scenario.server.pulls[7]["base"]["sha"] = "0123456789abcdef0123456789abcdef01234567"
    code, log = scenario.run(scenario.env(scenario.checkout()))
    (body,) = scenario.server.bodies()
    assert "`hazards-skipped`" in body and "were NOT checked" in body
    assert "::warning title=hazards-skipped::" in log
    assert code == 0  # a warning: fails only with fail-on: warning


def test_a_shallow_checkout_still_compares_with_the_fork_point(scenario: Scenario) -> None:
    # main moves on after the PR branched: the report must not blame the PR for main's new service.
    scenario.pr_branch(NEW_SERVICE)
    git(scenario.work, "checkout", "-q", "main")
    write_files(scenario.work, {"catalog/overseerr.yaml": service("overseerr", "seerr"),
                                "apps/wave-3/overseerr.yaml": deployment("overseerr")})
    git(scenario.work, "add", "-A")
    git(scenario.work, "commit", "-q", "-m", "main moves on")
    git(scenario.work, "push", "-q", "origin", "HEAD:refs/heads/main")
    scenario.server.pulls[7]["base"]["sha"] = git(scenario.work, "rev-parse", "HEAD").strip()
    workspace = scenario.tmp / "shallow"
    subprocess.run(["git", "clone", "-q", "--depth", "1", "--no-single-branch", f"file://{scenario.origin}",
                    str(workspace)], check=True)
    code, log = scenario.run(scenario.env(workspace))
    (body,) = scenario.server.bodies()
    assert "overseerr" not in body.split("#### Waves")[0]  # no finding about main's own change
    assert "`resource-removed`" not in body and "`resource-dropped`" not in body
    assert code == 0, log


def test_an_input_error_is_explained_in_the_comment(scenario: Scenario) -> None:
    scenario.pr_branch({"catalog/sonarr.yaml": service("sonarr", "seerr")})  # seerr -> sonarr -> seerr
    with pytest.raises(WaveBotError, match="dependency cycle: seerr -> sonarr -> seerr") as exc:
        scenario.run(scenario.env(scenario.checkout()))
    assert exc.value.exit_code == 2
    (body,) = scenario.server.bodies()
    assert "cannot compute the waves" in body and "dependency cycle: seerr -&gt; sonarr -&gt; seerr" in body
    assert "`catalog/seerr.yaml:" in body
    assert git(scenario.origin, "rev-parse", BRANCH).strip() == scenario.head_sha


def test_a_symlink_out_of_the_repo_is_refused_and_never_echoed(scenario: Scenario) -> None:
    scenario.pr_branch({})
    (scenario.work / "apps" / "leak.yaml").symlink_to("/proc/self/environ")
    git(scenario.work, "add", "apps/leak.yaml")
    git(scenario.work, "commit", "-q", "-m", "a link")
    git(scenario.work, "push", "-q", "origin", f"HEAD:refs/heads/{BRANCH}")
    scenario.head_sha = git(scenario.work, "rev-parse", "HEAD").strip()
    scenario.server.pulls[7]["head"]["sha"] = scenario.head_sha
    with pytest.raises(WaveBotError, match="is a symbolic link"):
        scenario.run(scenario.env(scenario.checkout(), INPUT_TOKEN=TOKEN))
    (body,) = scenario.server.bodies()
    assert "leak.yaml" in body and "GITHUB_" not in body and "PATH=" not in body
