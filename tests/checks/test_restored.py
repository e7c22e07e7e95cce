"""Why a generated file is rewritten: the plan's own change (no finding), the template, or a hand edit."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bot.cli import main

from conftest import deployment, git


def _plan(capsys: pytest.CaptureFixture[str], repo: Path, *extra: str) -> list[dict[str, Any]]:
    capsys.readouterr()
    assert main(["plan", str(repo), "--format", "json", *extra]) == 0
    return [f for f in json.loads(capsys.readouterr().out)["findings"]
            if f["code"] in ("generated-file-restored", "wave-template-changed")]


def test_a_new_file_in_a_wave_is_the_layouts_own_change(
    example_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (example_repo / "apps/wave-0/junk.yaml").write_text(deployment("junk"))
    assert _plan(capsys, example_repo) == []


def test_a_template_change_says_so_and_where(example_repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    template = example_repo / "clusters/base/apps-wave-0.yaml"
    template.write_text(template.read_text().replace("interval: 10m", "interval: 15m"))
    (finding,) = _plan(capsys, example_repo)
    assert finding["code"] == "wave-template-changed" and finding["path"] == "clusters/base/apps-wave-0.yaml"
    assert finding["message"] == (
        "the wave template (clusters/base/apps-wave-0.yaml) differs from clusters/base/apps-wave-1.yaml and "
        "clusters/base/apps-wave-2.yaml, so wave-bot regenerates them from it: spec.interval is 15m in the template "
        "and 10m in them. Every wave shares the template; to change a setting for every wave, change it there")


def test_a_hand_edit_wave_bot_never_writes_is_restored(example_repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = example_repo / "apps/wave-1/kustomization.yaml"
    path.write_text(path.read_text().replace("resources:\n", "resources:  # keep sorted!\n"))
    (finding,) = _plan(capsys, example_repo)
    assert finding["code"] == "generated-file-restored" and finding["path"] == "apps/wave-1/kustomization.yaml"
    assert finding["line"] == 5 and "resources:  # keep sorted!" in path.read_text().splitlines()[4]
    assert "differs from anything wave-bot generates (from line 5" in finding["message"]


def test_a_dropped_line_is_restored_when_the_base_shows_it(
    example_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    git(example_repo, "checkout", "-q", "-b", "pr")
    path = example_repo / "apps/wave-1/kustomization.yaml"
    path.write_text(path.read_text().replace("  - sonarr.yaml\n", ""))
    git(example_repo, "commit", "-qam", "drop sonarr by hand")
    (finding,) = _plan(capsys, example_repo, "--base", "main")
    assert finding["code"] == "generated-file-restored"
    assert "(it no longer lists sonarr.yaml, still in apps/wave-1/)" in finding["message"]
    # Without the base, a missing line looks exactly like a file just added: nothing to say.
    assert _plan(capsys, example_repo) == []
