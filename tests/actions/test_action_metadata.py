"""action.yml and the shipped workflows as a runner sees them.

The other action tests call `wave-bot run` with an environment written by hand; these start from the
files a user's runner reads: action.yml and the workflows are checked against SchemaStore's schemas
and actionlint, and `wave-bot run` is driven with the INPUT_<NAME> variables the runner computes from
action.yml's inputs (defaults applied, expressions evaluated) and the example workflow's `with:`.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import responses
from ruamel.yaml import YAML

from conftest import GIT_ENV, PROJECT, git, installed_tool, write_files
from support.actionkit import NEW_SERVICE, action_env, push_pr_branch, run_action
from support.fakes import SERVERS, TOKEN, fixture

ACTION = PROJECT / "action.yml"
README = PROJECT / "README.md"
EXAMPLE_WORKFLOW = PROJECT / "examples" / "workflows" / "wave-bot.yml"
WORKFLOWS = sorted([*(PROJECT / ".github" / "workflows").glob("*.y*ml"),
                    *(PROJECT / "examples" / "workflows").glob("*.y*ml")])


def load(path: Path) -> Any:
    return YAML(typ="safe", pure=True).load(path.read_text())


def action_yml() -> dict[str, Any]:
    data = load(ACTION)
    assert isinstance(data, dict), "action.yml is not a mapping"
    return data


def readme_workflows(tmp: Path) -> list[Path]:
    """The workflow examples of the README and the docs (```yaml blocks with `jobs:`), as files actionlint can read."""
    pages = [README, *sorted((PROJECT / "docs").rglob("*.md"))]
    blocks = [b for page in pages for b in re.findall(r"^ *```yaml\n(.*?)^ *```", page.read_text(), flags=re.S | re.M)]
    files = []
    for number, block in enumerate(b for b in blocks if re.search(r"^jobs:", b, flags=re.M)):
        path = tmp / f"readme-workflow-{number}.yml"
        path.write_text(block)
        files.append(path)
    assert files, "the README shows no workflow"
    return files


def wave_bot_steps(workflow: Any) -> list[dict[str, Any]]:
    """The steps of `workflow` that use flux-wave-bot (by any owner or ref)."""
    return [step for job in workflow["jobs"].values() for step in job.get("steps", [])
            if re.search(r"(^|/)flux-wave-bot(@|$)", str(step.get("uses", "")))]


# ---- what the schemas and actionlint say -----------------------------------------------------------------


def check_jsonschema(schema: str, files: list[Path]) -> subprocess.CompletedProcess[str]:
    tool = installed_tool("check-jsonschema")
    return subprocess.run([str(tool), "--builtin-schema", schema, *map(str, files)], capture_output=True, text=True)


def test_action_yml_matches_the_action_metadata_schema() -> None:
    result = check_jsonschema("vendor.github-actions", [ACTION])
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_shipped_workflow_matches_the_workflow_schema(tmp_path: Path) -> None:
    assert {p.name for p in WORKFLOWS} >= {"ci.yml", "wave-bot.yml"}
    result = check_jsonschema("vendor.github-workflows", [*WORKFLOWS, *readme_workflows(tmp_path)])
    assert result.returncode == 0, result.stdout + result.stderr


def test_actionlint_finds_nothing_in_any_shipped_workflow(tmp_path: Path) -> None:
    tool = installed_tool("actionlint")
    # Without shellcheck and pyflakes: whether actionlint runs them depends on what is on PATH, and the
    # verdict must not depend on the machine.
    files = [*WORKFLOWS, *readme_workflows(tmp_path)]
    result = subprocess.run([str(tool), "-no-color", "-oneline", "-shellcheck=", "-pyflakes=", *map(str, files)],
                            capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_consumer_workflow_runs_on_every_pull_request(tmp_path: Path) -> None:
    # A paths: filter naming the default layout skips every pull request of a repository whose Flux
    # tree is kubernetes/ (the dominant layout): its deletions would merge unreviewed.
    for path in [EXAMPLE_WORKFLOW, *readme_workflows(tmp_path)]:
        trigger = load(path)["on"]["pull_request"]
        assert not (trigger or {}).get("paths") and not (trigger or {}).get("paths-ignore"), path


def test_the_pre_commit_hook_runs_on_any_staged_file() -> None:
    (hook,) = load(PROJECT / ".pre-commit-hooks.yaml")
    files = re.compile(hook.get("files", ""))
    assert files.search("kubernetes/apps/default/echo/ks.yaml") and files.search("apps/plex.yaml")
    assert not hook.get("exclude") and hook["pass_filenames"] is False


def test_every_with_key_in_the_shipped_workflows_is_a_declared_input(tmp_path: Path) -> None:
    declared = set(action_yml()["inputs"])
    steps = [s for path in [*WORKFLOWS, *readme_workflows(tmp_path)] for s in wave_bot_steps(load(path))]
    assert steps, "no shipped workflow uses flux-wave-bot"
    for step in steps:
        assert set(step.get("with") or {}) <= declared, step


# ---- the environment the runner gives the container --------------------------------------------------------

EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def evaluate(text: str, context: Mapping[str, str]) -> str:
    """`${{ ... }}` in an input's value or default, as the runner evaluates it (only what action.yml uses)."""
    def value(match: re.Match[str]) -> str:
        assert match.group(1) in context, f"the test does not know how the runner evaluates {match.group(0)}"
        return context[match.group(1)]

    return EXPRESSION.sub(value, text)


def input_variable(name: str) -> str:
    """The variable the runner passes input `name` in: upper case, spaces to underscores, hyphens kept.

    (GitHub's runner: `INPUT_` + name.Replace(' ', '_').ToUpperInvariant(); act and Gitea's act_runner
    also map any other character outside [A-Z0-9-] to `_`, which no name here has.)
    """
    return "INPUT_" + name.replace(" ", "_").upper()


def runner_inputs(with_: Mapping[str, Any], token: str) -> dict[str, str]:
    """INPUT_* for every declared input: the step's `with:` value, else the declared default."""
    context = {"github.token": token}
    env = {}
    for name, spec in action_yml()["inputs"].items():
        value = with_.get(name, (spec or {}).get("default"))
        if value is None:
            continue
        text = value if isinstance(value, str) else json.dumps(value)  # the runner passes `true` as "true"
        env[input_variable(name)] = evaluate(text, context)
    return env


class ReadRecorder(Mapping[str, str]):
    """The environment, remembering every name the code looked up."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self.env = dict(env)
        self.read: set[str] = set()

    def __getitem__(self, key: str) -> str:
        self.read.add(key)
        return self.env[key]

    def __contains__(self, key: object) -> bool:
        self.read.add(str(key))
        return key in self.env

    def __iter__(self) -> Iterator[str]:
        raise AssertionError("wave-bot run iterated over the environment: look inputs up by name, so that "
                             "what it reads can be compared with action.yml")

    def __len__(self) -> int:
        return len(self.env)


def outputs_written(path: Path) -> dict[str, str]:
    """GITHUB_OUTPUT as the runner parses it: `name=value` lines, or `name<<DELIMITER` blocks."""
    outputs: dict[str, str] = {}
    lines = iter(path.read_text().splitlines())
    for line in lines:
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            body = []
            for inner in lines:
                if inner == delimiter:
                    break
                body.append(inner)
            else:
                raise AssertionError(f"{name}: no closing {delimiter} in GITHUB_OUTPUT")
            outputs[name] = "\n".join(body)
        else:
            assert "=" in line, f"GITHUB_OUTPUT line the runner cannot parse: {line!r}"
            name, value = line.split("=", 1)
            outputs[name] = value
    return outputs


def example_with() -> dict[str, Any]:
    (step,) = wave_bot_steps(load(EXAMPLE_WORKFLOW))
    return dict(step.get("with") or {})


def test_input_variables_follow_the_runners_rule() -> None:
    env = runner_inputs({}, token="t0k3n")
    assert env["INPUT_TOKEN"] == "t0k3n"  # `${{ github.token }}` evaluated
    assert env["INPUT_FIX-OVERLAYS"] == "false" and env["INPUT_FAIL-ON"] == "error"
    assert runner_inputs({"commit": False}, token="x")["INPUT_COMMIT"] == "false"


@pytest.fixture
def pr_run(example_repo: Path, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Any]:
    """Run `wave-bot run` on a PR (per forge) with the example workflow's step as the runner passes it."""
    platform = request.param
    origin = example_repo.parent / "homelab-origin.git"
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        server = SERVERS[platform](rsps)
        _, head = push_pr_branch(example_repo, server.pulls[7], NEW_SERVICE, "onboard tautulli", git)
        workspace = tmp_path / "workspace"
        subprocess.run(["git", "clone", "-q", str(origin), str(workspace)], check=True)
        git(workspace, "checkout", "-q", "--detach", head)
        hand_written = action_env(platform, server.pulls[7], tmp_path, workspace, api_url=server.api, token=TOKEN)
        env = {k: v for k, v in hand_written.items() if not k.startswith("INPUT_")}
        env |= runner_inputs(example_with(), token=TOKEN)
        recorder = ReadRecorder(env)
        code, log = run_action(recorder)  # type: ignore[arg-type]
        yield code, log, recorder, tmp_path / "output.txt", server


@pytest.mark.parametrize("pr_run", ["github", "gitea"], indirect=True)
def test_the_code_reads_exactly_the_declared_inputs_and_writes_exactly_the_declared_outputs(pr_run: Any) -> None:
    code, log, recorder, output_file, server = pr_run
    assert code == 0, log
    declared = {input_variable(name) for name in action_yml()["inputs"]}
    read = {key for key in recorder.read if key.startswith("INPUT_")}
    # `_input` also accepts INPUT_FIX_OVERLAYS, for `docker run -e` users (shells cannot export hyphens).
    aliases = {key.replace("-", "_") for key in declared}
    assert read - declared - aliases == set(), "inputs read but not declared in action.yml"
    assert declared - read == set(), "inputs declared in action.yml that wave-bot never reads"

    outputs = outputs_written(output_file)
    assert set(outputs) == set(action_yml()["outputs"])
    assert outputs["changed"] == "true" and outputs["max-wave"] == "2"
    assert outputs["comment-url"] == server.comments[0]["html_url"]
    assert re.fullmatch(r"[0-9a-f]{40}", outputs["commit-sha"])


def test_the_image_entrypoint_runs_the_dispatch_with_the_runners_environment(example_repo: Path,
                                                                            tmp_path: Path) -> None:
    """The container's ENTRYPOINT, as a process, with only what the runner passes (no forge needed)."""
    dockerfile = (PROJECT / "Dockerfile").read_text()
    (entrypoint,) = re.findall(r"^ENTRYPOINT (.*)$", dockerfile, flags=re.M)
    runs = action_yml()["runs"]
    assert runs["using"] == "docker" and "args" not in runs and "entrypoint" not in runs
    command = json.loads(entrypoint)
    assert command == ["wave-bot", "run"]

    write_files(example_repo, NEW_SERVICE)
    git(example_repo, "add", "-A")
    git(example_repo, "commit", "-q", "-m", "onboard tautulli on main")
    git(example_repo, "push", "-q", "origin", "HEAD:refs/heads/main")
    workspace = tmp_path / "workspace"
    subprocess.run(["git", "clone", "-q", str(example_repo.parent / "homelab-origin.git"), str(workspace)], check=True)
    env = {k: v for k, v in action_env("github", fixture("github", "pull_request.json"), tmp_path, workspace, api_url="https://api.github.com",
                                       token=TOKEN, event="workflow_dispatch").items() if not k.startswith("INPUT_")}
    env |= runner_inputs(example_with(), token=TOKEN) | GIT_ENV
    env |= {"PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    result = subprocess.run([str(installed_tool(command[0])), *command[1:]], env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"::add-mask::{TOKEN}" in result.stdout
    outputs = outputs_written(tmp_path / "output.txt")
    assert set(outputs) == set(action_yml()["outputs"])
    origin = example_repo.parent / "homelab-origin.git"
    assert outputs["commit-sha"] == git(origin, "rev-parse", "main").strip()
    assert "Generated-by: flux-wave-bot" in git(origin, "log", "-1", "main")
    assert outputs["changed"] == "true" and outputs["comment-url"] == ""  # a dispatch has no PR to comment on
    assert "#### Waves" in (tmp_path / "summary.md").read_text()
