"""Every fix clears its finding: pasted into a copy of the repository the way a person would, then
planned again.

The harness reads the fix as a person does, not as wave-bot wrote it: `# PATH: add under KEY:`
sections are pasted at the end of that list (indented like its items), `# create PATH:` sections
become files, `delete the line `X` from KEY: in PATH` removes that line, and an annotation snippet
is merged into the objects' old file in a change merged first, as the safe procedure says.
"""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from bot.cli import main

from conftest import deployment, git, service, write_files

_HEADER = re.compile(r"^# (?:create (?P<new>\S+)|(?P<path>\S+): add under (?P<key>\w+)):\n")
_DELETE = re.compile(r"^delete the line `(?P<line>[^`]+)` from (?P<key>\w+): in (?P<path>\S+)$")


def plan(capsys: pytest.CaptureFixture[str], repo: Path, *args: str) -> list[dict[str, Any]]:
    capsys.readouterr()
    code = main(["plan", str(repo), "--format", "json", *args])
    out = capsys.readouterr()
    assert code == 0, out.err
    return list(json.loads(out.out)["findings"])


def paste(repo: Path, fix: str) -> None:
    """Apply a fix the way its text tells a person to; fail on a fix this cannot read."""
    deleted = _DELETE.match(fix.strip())
    if deleted:
        path = repo / deleted["path"]
        lines = path.read_text().splitlines(keepends=True)
        kept = [line for line in lines if line.split("#")[0].strip() != deleted["line"]]
        assert len(kept) == len(lines) - 1, f"the line to delete is not in {deleted['path']} once"
        path.write_text("".join(kept))
        return
    sections = re.split(r"^---\n", fix, flags=re.M)
    assert all(_HEADER.match(s) for s in sections), f"a fix this test cannot paste:\n{fix}"
    for section in sections:
        head = _HEADER.match(section)
        assert head is not None
        body = section[head.end():]
        if head["new"]:
            (repo / head["new"]).parent.mkdir(parents=True, exist_ok=True)
            (repo / head["new"]).write_text(body)
        else:
            _add_under(repo / head["path"], head["key"], body)


def _add_under(path: Path, key: str, item: str) -> None:
    lines = path.read_text().splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if re.match(rf"{key}:\s*(#.*)?$", line)), None)
    if start is None:
        path.write_text("".join(lines) + f"{key}:\n{item}")
        return
    end, indent = start + 1, ""
    while end < len(lines) and (lines[end].startswith((" ", "-", "#")) or not lines[end].strip()):
        if lines[end].lstrip().startswith("- ") and not indent:
            indent = lines[end][: len(lines[end]) - len(lines[end].lstrip())]
        end += 1
    pasted = "".join(indent + row if row.strip() else row for row in item.splitlines(keepends=True))
    path.write_text("".join(lines[:end]) + pasted + "".join(lines[end:]))


def key(finding: dict[str, Any]) -> tuple[Any, ...]:
    return finding["code"], finding.get("path"), finding.get("wave"), finding.get("overlay"), finding.get("resource")


def assert_each_fix_clears(repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], *args: str) -> int:
    """For every error and warning with a fix: in a fresh copy, paste the fix, plan again, the finding is
    gone. (An info's snippet is a suggestion, such as chain-gating's non_gating entries.)"""
    findings = [f for f in plan(capsys, repo, *args) if f.get("fix") and f["severity"] != "info"]
    for i, finding in enumerate(findings):
        copy = tmp_path / f"copy-{i}"
        shutil.copytree(repo, copy, symlinks=True)
        paste(copy, finding["fix"])
        left = {key(f) for f in plan(capsys, copy, *args)}
        assert key(finding) not in left, f"pasting the fix of {finding['code']} did not clear it:\n{finding['fix']}"
    return len(findings)


def test_a_new_wave_s_fixes_each_clear_their_finding(
    example_repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    git(example_repo, "checkout", "-q", "-b", "pr")
    write_files(example_repo, {"catalog/tautulli.yaml": service("tautulli", "seerr"),
                               "apps/tautulli.yaml": deployment("tautulli")})
    assert main(["apply", str(example_repo)]) == 0  # without --fix-overlays
    git(example_repo, "add", "-A")
    git(example_repo, "commit", "-qm", "tautulli in a new wave 3")
    codes = {f["code"] for f in plan(capsys, example_repo, "--base", "main")
             if f.get("fix") and f["severity"] != "info"}
    assert codes == {"new-deepest-wave", "missing-base-entry", "missing-decryption"}
    assert assert_each_fix_clears(example_repo, tmp_path, capsys, "--base", "main") == 4
    # The wave's one fix clears the whole group.
    (deepest,) = [f for f in plan(capsys, example_repo, "--base", "main") if f["code"] == "new-deepest-wave"]
    paste(example_repo, deepest["fix"])
    assert not [f for f in plan(capsys, example_repo, "--base", "main") if f.get("wave") == 3]


def test_after_a_plain_apply_the_one_command_is_still_named_and_clears_the_rest(
    example_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_files(example_repo, {"catalog/tautulli.yaml": service("tautulli", "seerr"),
                               "apps/tautulli.yaml": deployment("tautulli")})
    assert main(["apply", str(example_repo)]) == 0  # without --fix-overlays: wave 3 is no longer new
    left = [f for f in plan(capsys, example_repo) if f["code"] in ("missing-base-entry", "missing-decryption")]
    assert len(left) == 3 and not [f for f in plan(capsys, example_repo) if f["code"] == "new-deepest-wave"]
    assert all(f["message"].endswith("; `wave-bot apply --fix-overlays` makes this edit") for f in left)
    assert main(["apply", str(example_repo), "--fix-overlays"]) == 0
    assert not [f for f in plan(capsys, example_repo) if f["code"] in ("missing-base-entry", "missing-decryption")]


def test_an_unplaced_file_s_fix_places_it(example_repo: Path, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    (example_repo / "apps/wave-0/junk.yaml").write_text(deployment("junk"))
    assert assert_each_fix_clears(example_repo, tmp_path, capsys) == 1


def test_a_stale_base_entry_s_fix_removes_it(example_repo: Path, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    base = example_repo / "clusters/base/kustomization.yaml"
    base.write_text(base.read_text().replace("  - apps-wave-2.yaml", "  - apps-wave-2.yaml\n  - apps-wave-7.yaml"))
    assert {f["code"] for f in plan(capsys, example_repo) if f.get("fix") and f["severity"] != "info"} == {
        "stale-base-entry"}
    assert assert_each_fix_clears(example_repo, tmp_path, capsys) == 1


def _annotate(text: str, annotation: str) -> str:
    """Merge `metadata.annotations` into every document, as a person pastes the snippet into each."""
    added = f"metadata:\n  annotations:\n    {annotation}\n"
    return "---\n".join(re.sub(r"^metadata:\n", added, d, count=1, flags=re.M) for d in text.split("---\n"))


def test_the_later_wave_move_s_fix_merged_first_makes_the_move_safe(
    example_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def move_plex() -> list[dict[str, Any]]:
        git(example_repo, "checkout", "-q", "-B", "pr", "main")
        with open(example_repo / "catalog/plex.yaml", "a") as catalog:
            catalog.write("  dependencies:\n    - to: sonarr\n")
        # Moved by hand: wave-bot's own apply would hold the move until the annotation is deployed.
        git(example_repo, "mv", "apps/wave-0/plex.yaml", "apps/wave-2/plex.yaml")
        git(example_repo, "commit", "-qam", "plex depends on sonarr")
        return [f for f in plan(capsys, example_repo, "--base", "main") if f["code"] == "later-wave-move"]

    before = move_plex()
    assert {f["severity"] for f in before} == {"error", "warning"}
    fix = {f["fix"] for f in before}
    assert len(fix) == 1  # one snippet for the whole file: the comment shows it once
    (annotation,) = [line.strip() for line in fix.pop().splitlines() if "prune" in line]
    # The safe procedure: a change that only adds the annotation, merged (and reconciled) first.
    git(example_repo, "checkout", "-q", "main")
    plex = example_repo / "apps/wave-0/plex.yaml"
    plex.write_text(_annotate(plex.read_text(), annotation))
    git(example_repo, "commit", "-qam", "plex: prune disabled before it moves")
    after = move_plex()
    assert len(after) == len(before) and {f["severity"] for f in after} == {"info"}
