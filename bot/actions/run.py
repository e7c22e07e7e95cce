"""`wave-bot run`: the GitHub/Gitea Actions entrypoint.

On a pull request: check out the head branch, regenerate the wave layout, commit it back (never
force; a moved branch is regenerated on its new head), and post one sticky comment. On a fork, or
when the push is refused, push nothing and put the change in the comment as a diff. On
workflow_dispatch: regenerate the dispatched branch and report in the job summary.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

from bot.actions import workflow_commands
from bot.actions.event import PR_ACTIONS, Event, Inputs, read_event, read_inputs
from bot.errors import INPUT_ERROR, RUN_ERROR, WaveBotError
from bot.model import SEVERITY_RANK, Finding
from bot.naming import shown
from bot.report import formats as report

if TYPE_CHECKING:
    from bot.actions.forge import Forge
    from bot.plan import Plan
    from bot.repo.git import Identity, Workspace
    from bot.repo.tree import Tree
    from bot.repo.worktree import OwnerKeeper

MARKER = "<!-- flux-wave-bot:report -->"
ATTEMPTS = 3


class Log:
    """The run's log, written to the stream the CLI hands over: plain lines and workflow commands."""

    def __init__(self, out: TextIO) -> None:
        self.out = out

    def info(self, text: str) -> None:
        self.out.write(f"wave-bot: {text}\n")

    def mask(self, secret: str) -> None:
        self.out.write(workflow_commands.mask(secret))

    def annotate(self, finding: Finding) -> None:
        self.out.write(workflow_commands.annotation(finding))


@dataclass(frozen=True)
class Outcome:
    """What the run did, for the comment, summary, outputs and exit code."""

    plan: Plan
    pushed: str | None = None  # the commit this run pushed
    regenerated_in: str | None = None  # wave-bot's commit holding the layout (this run's or an earlier one)
    diff: str | None = None  # a needed change that was not pushed
    note: str | None = None


def identity(event: Event) -> Identity:
    from bot.actions.forge.platforms import platform
    from bot.repo.git import Identity

    forge = platform(event.platform)
    return Identity(forge.committer, forge.email(event.server_url))


def _commit_message(plan: Plan) -> str:
    moves = [c for c in plan.changes if c.action == "move"]
    lines = [
        "wave-bot: regenerate the app waves from the catalog",
        "",
        "The catalog's dependency graph changed, so app files move to the wave of their longest",
        "dependency path and the wave kustomizations and Flux Kustomizations are regenerated.",
        "",
    ]
    lines += [f"- {c.source} -> {c.path}" for c in moves]
    lines += [f"- {c.action} {c.path}" for c in plan.changes if c.action != "move"]
    return "\n".join([*lines, "", "Generated-by: flux-wave-bot"]) + "\n"


class Runner:
    """One run of the action against one workspace and forge."""

    def __init__(self, event: Event, inputs: Inputs, workspace: Workspace, log: Log,
                 forge: Forge | None) -> None:
        self.event = event
        self.inputs = inputs
        self.ws = workspace
        self.log = log
        self.forge = forge

    def regenerate(self, base_rev: str | None) -> Plan:
        """Plan against `base_rev` (the deployed state) and apply it to the work tree."""
        from bot.repo.worktree import FsTree, apply_changes

        plan = self.plan(FsTree(self.ws.path), base_rev)
        if plan.changes:
            apply_changes(self.ws.path, plan.changes, self.ws.mover())
        return plan

    def plan(self, tree: Tree, base_rev: str | None) -> Plan:
        """The plan for `tree` against `base_rev` (None: unavailable, so hazards are not checked)."""
        from bot.config import load_config
        from bot.plan import make_plan

        config = load_config(tree, self.inputs.config)
        base = self.ws.tree_at(base_rev) if base_rev else None
        plan = make_plan(tree, config, base=base, fix_overlays=self.inputs.fix_overlays)
        if base is None:
            plan = _with_finding(plan, Finding(
                code="hazards-skipped",
                severity="warning",
                message="the base revision is not available, so Flux prune hazards (deletions, "
                "later-wave moves of PVCs and databases) were NOT checked",
                fix="fetch the PR base: use actions/checkout with fetch-depth: 0",
            ))
        return plan

    def ensure_commit(self, sha: str) -> bool:
        if self.ws.has_commit(sha):
            return True
        try:
            self.ws.fetch(sha)
        except WaveBotError as exc:
            self.log.info(f"could not fetch {sha[:12]}: {exc.message}")
            return False
        return self.ws.has_commit(sha)

    def pull_request(self) -> Outcome:
        assert self.event.pull_number is not None and self.forge is not None
        pr = self.forge.pull_request(self.event.pull_number)
        base = pr.base_sha if self.ensure_commit(pr.base_sha) else None
        if pr.is_fork or not self.inputs.commit:
            self.ws.fetch(f"+refs/pull/{pr.number}/head:refs/wave-bot/head")
            self.ws.checkout(None, "refs/wave-bot/head")
            why = ("comes from a fork, so wave-bot cannot push to it" if pr.is_fork
                   else "runs with `commit: false`")
            return self.unpushed(self.regenerate(base), f"This pull request {why}.")
        return self.commit_to(pr.head_ref, base, pull_request=True)

    def fork_point(self, base: str) -> str:
        """The merge base of `base` and HEAD, deepening a shallow clone once; else `base` itself."""
        found = self.ws.merge_base(base, "HEAD")
        if found is None and self.ws.is_shallow():
            try:
                self.ws.git("fetch", "--no-tags", "--quiet", "--unshallow", "origin")
            except WaveBotError as exc:
                self.log.info(f"could not deepen the shallow clone: {exc.message}")
            found = self.ws.merge_base(base, "HEAD")
        if found is None:
            self.log.info(f"no merge base with {base[:12]}; comparing with the base branch's tip")
        return found or base

    def dispatch(self) -> Outcome:
        branch = self.event.ref_name
        if branch is None:
            raise WaveBotError("GITHUB_REF_NAME is not set for workflow_dispatch")
        return self.commit_to(branch, None, pull_request=False)

    def commit_to(self, branch: str, base: str | None, pull_request: bool) -> Outcome:
        """Regenerate `branch` and push the result. A PR compares with `base` (None: unavailable,
        hazards unchecked); a dispatch with the branch as it is."""
        from bot.repo.git import valid_branch

        if not valid_branch(branch):
            raise WaveBotError(f"refusing to work on branch {shown(branch)}: not a valid git branch name")
        for attempt in range(1, ATTEMPTS + 1):
            self.ws.fetch(f"+refs/heads/{branch}:refs/remotes/origin/{branch}")
            self.ws.checkout(branch, f"refs/remotes/origin/{branch}")
            # A PR is compared with where it forked from its base (the base may have moved on since,
            # and those changes are not the PR's); a dispatch with the branch as it is.
            if pull_request:
                deployed = self.fork_point(base) if base else None
            else:
                deployed = self.ws.head()
            bots_head = self.ws.head_is_bots()
            plan = self.regenerate(deployed)
            if not plan.changes:
                if not bots_head:
                    return Outcome(plan)
                # Report what the run that pushed this commit reported, from the tree it started from:
                # the same moves, writes and findings (a restored file's note included), so the comment
                # is not edited again. The plan of HEAD itself would find nothing left to say.
                return Outcome(self.plan(self.ws.tree_at("HEAD~1"), deployed), regenerated_in=self.ws.head())
            if bots_head:
                raise WaveBotError(
                    "the head commit is wave-bot's own and regenerating would change files again; "
                    "stopping instead of committing in a loop",
                    hint="run `wave-bot plan` locally on this branch and report the output as a bug",
                    exit_code=RUN_ERROR,
                )
            self.ws.stage([p for c in plan.changes for p in (c.path, c.source) if p])
            sha = self.ws.commit(_commit_message(plan), identity(self.event))
            result = self.ws.push(branch)
            if result.outcome == "pushed":
                self.log.info(f"pushed {sha[:12]} to {branch}")
                return Outcome(plan, pushed=sha, regenerated_in=sha)
            if result.outcome == "refused":
                self.log.info(f"push refused: {result.detail}")
                diff = self.ws.git("diff", "--find-renames", "--no-color", "--no-ext-diff", "HEAD~1", "HEAD")
                return Outcome(plan, diff=diff, note=f"wave-bot could not push to `{branch}` (the push was refused).")
            self.log.info(f"{branch} moved while wave-bot ran; regenerating on its new head ({attempt}/{ATTEMPTS})")
        raise WaveBotError(f"{branch} kept moving; gave up after {ATTEMPTS} attempts", exit_code=RUN_ERROR,
                           hint="re-run the job once pushes to the branch have settled")

    def unpushed(self, plan: Plan, why: str) -> Outcome:
        if not plan.changes:
            return Outcome(plan)
        self.ws.stage([p for c in plan.changes for p in (c.path, c.source) if p])
        return Outcome(plan, diff=self.ws.staged_diff(), note=why)


def _with_finding(plan: Plan, finding: Finding) -> Plan:
    findings = tuple(sorted([*plan.findings, finding], key=Finding.sort_key))
    return dataclasses.replace(plan, findings=findings)


APPLY_HINT = (
    "To apply it, run `wave-bot apply` on the branch (or save the diff and run "
    "`git apply --index wave.diff`), then commit and push."
)


def _report(outcome: Outcome, limit: int | None = None, overflow: str = "") -> str:
    context = report.Context(
        applied=outcome.pushed is not None,
        commit=outcome.regenerated_in,
        diff=outcome.diff,
        apply_hint=APPLY_HINT if outcome.diff is not None else None,
        note=outcome.note,
    )
    return report.to_markdown(outcome.plan, context, limit, overflow)


def _fails(plan: Plan, fail_on: str) -> list[Finding]:
    if fail_on == "never":
        return []
    limit = SEVERITY_RANK[fail_on]
    return [f for f in plan.findings if SEVERITY_RANK[f.severity] <= limit]


def _finish(runner: Runner, outcome: Outcome) -> int:
    from bot.repo.worktree import append_file

    event, log = runner.event, runner.log
    body = _report(outcome)
    if event.summary_path:
        append_file(event.summary_path, body)
    comment_url = ""
    if runner.forge is not None and event.pull_number is not None and runner.inputs.comment:
        note = (f"The whole report is in the job summary: {event.run_url}" if event.run_url
                else "The whole report is in the job summary.")
        room = runner.forge.max_comment_chars - len(MARKER) - 1 - 100  # a margin for how a forge counts
        comment = _report(outcome, room, note) if room > 0 else body
        result = runner.forge.upsert_comment(event.pull_number, MARKER, f"{MARKER}\n{comment}", note)
        comment_url = result.url
        log.info(f"comment {result.action}: {result.url}")
    if event.output_path:
        max_wave = outcome.plan.graph.max_wave
        append_file(event.output_path, "".join(f"{k}={v}\n" for k, v in [
            ("changed", "true" if outcome.plan.changes else "false"),
            ("max-wave", "" if max_wave is None else str(max_wave)),
            ("commit-sha", outcome.pushed or ""),
            ("comment-url", comment_url),
        ]))
    for finding in outcome.plan.findings:
        log.annotate(finding)
    failing = _fails(outcome.plan, runner.inputs.fail_on)
    if outcome.diff is not None:
        log.info("the wave layout needs changes that were not pushed; failing the job")
        return 1
    if failing:
        log.info(f"{len(failing)} finding(s) at or above fail-on={runner.inputs.fail_on}; failing the job")
        return 1
    return 0


def run(env: Mapping[str, str], out: TextIO, make_forge: Callable[..., Forge] | None = None) -> int:
    """One action run from the runner's environment; returns the exit code (errors raise)."""
    from bot.repo.git import Workspace, auth_env
    from bot.repo.worktree import read_user_file

    inputs = read_inputs(env)
    log = Log(out)
    log.mask(inputs.token)
    payload_path = env.get("GITHUB_EVENT_PATH")
    event = read_event(env, read_user_file(payload_path) if payload_path else None)
    pr = f" pull_request=#{event.pull_number} ({event.action})" if event.pull_number is not None else ""
    log.info(f"platform={event.platform} api={event.api_url} repository={event.repository} "
             f"event={event.name}{pr}")
    if event.name in ("pull_request", "pull_request_target") and event.action not in PR_ACTIONS:
        log.info(f"nothing to do for pull_request action '{event.action}'")
        return 0
    if event.name not in ("pull_request", "pull_request_target", "workflow_dispatch"):
        raise WaveBotError(f"unsupported event '{event.name}'",
                           hint="trigger wave-bot on pull_request and workflow_dispatch")
    forge = None
    if event.pull_number is not None:
        if make_forge is None:
            from bot.actions.forge import make_forge as default_forge

            make_forge = default_forge
        forge = make_forge(event.platform, api_url=event.api_url, repository=event.repository, token=inputs.token)
    workspace = Workspace(event.workspace, auth_env(event.server_url, inputs.token), inputs.token)
    runner = Runner(event, inputs, workspace, log, forge)
    keeper = _owner_keeper(event.workspace, log)
    try:
        outcome = runner.pull_request() if event.pull_number is not None else runner.dispatch()
    except WaveBotError as exc:
        if exc.exit_code == INPUT_ERROR:  # the PR's content is wrong: tell its author where it sees it
            _report_input_error(runner, exc)
        raise
    finally:
        if keeper is not None:
            _give_back(keeper, log)
    return _finish(runner, outcome)


def _owner_keeper(workspace: str, log: Log) -> OwnerKeeper | None:
    from bot.repo.worktree import OwnerKeeper

    try:
        return OwnerKeeper(workspace)
    except OSError as exc:
        log.info(f"cannot read the workspace's owner, so new files stay the container user's: {exc}")
        return None


def _give_back(keeper: OwnerKeeper, log: Log) -> None:
    """Leave the workspace usable by the job's later steps, which run as the workspace's owner."""
    try:
        count = keeper.give_back()
    except OSError as exc:
        log.info(f"could not give the workspace's new files back to its owner: {exc}")
        return
    if count and keeper.owner is not None:
        uid, gid = keeper.owner
        log.info(f"gave {count} new or rewritten workspace entries back to the workspace's owner {uid}:{gid}")


def _report_input_error(runner: Runner, exc: WaveBotError) -> None:
    from bot.repo.worktree import append_file

    body = report.error_markdown(exc)
    if runner.event.summary_path:
        append_file(runner.event.summary_path, body)
    if runner.forge is not None and runner.event.pull_number is not None and runner.inputs.comment:
        runner.forge.upsert_comment(runner.event.pull_number, MARKER, f"{MARKER}\n{body}")

