"""CI: the workflow runs what .ci/run runs, and .ci/run runs the README's commands."""
from __future__ import annotations

import re

from conftest import PROJECT

# .ci/run runs them quietly: `pip install -q`, output to /dev/null.
CI_RUN = (PROJECT / ".ci" / "run").read_text().replace(" -q ", " ").replace(" >/dev/null", "")
WORKFLOW = (PROJECT / ".github" / "workflows" / "ci.yml").read_text()
README = (PROJECT / "README.md").read_text()
# Each step of .ci/run, as the command both spell it.
STEPS = [
    "wave-bot plan examples/homelab",
    "pip install -e '.[test,dev,docs]'",
    "ruff check .",
    "mypy --strict",
    "python tools/layers.py",
    "mkdocs build --strict",
    "python tools/reference.py --check",
    "-m build",
    "-m pytest",
]


def test_the_workflow_runs_every_step_of_ci_run() -> None:
    for step in STEPS:
        assert step in CI_RUN, f".ci/run no longer runs {step!r}: update STEPS"
        assert step in WORKFLOW, f".github/workflows/ci.yml does not run {step!r}, which .ci/run does"


def test_ci_run_runs_the_readme_contributor_commands() -> None:
    (block,) = [b for b in re.findall(r"```sh\n(.*?)```", README, re.S) if "pytest" in b]
    first, second = block.strip().splitlines()
    assert first in CI_RUN  # the install and the example's plan, verbatim
    install, _, suite = second.partition(" && ")
    assert install in CI_RUN and suite in CI_RUN
