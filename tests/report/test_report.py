"""The reports people read: text, JSON and markdown (the PR comment and job summary)."""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from bot.cli import main
from bot.config import Config, load_config
from bot.plan import make_plan
from bot.repo.worktree import FsTree
from bot.report import formats as report
from bot.report import markup

from conftest import deployment, git, pvc, service, write_files

HOSTILE_NAMES = [
    "<img src=x onerror=alert(1)>.yaml",
    "[click](https:__evil.example).yaml",
    "![pixel](https:__evil.example_p.png).yaml",
    "@acme-corp.yaml",
    "ping @octocat and @acme-corp team.yaml",
    "`whoami` and ``x``.yaml",
    "pipe | breaks | tables.yaml",
    "<!-- hide the rest.yaml",
    "**bold** _it_ # h1.yaml",
]


@pytest.fixture
def hostile_repo(tmp_path: Path) -> Path:
    files: dict[str, str | bytes] = {"catalog/web.yaml": service("web"), "apps/wave-0/web.yaml": deployment("web")}
    files |= {f"apps/wave-0/{name}": deployment("x") for name in HOSTILE_NAMES}
    write_files(tmp_path, files)
    return tmp_path


def test_hostile_file_names_render_inert(hostile_repo: Path) -> None:
    text = report.to_markdown(make_plan(FsTree(str(hostile_repo)), Config()))
    # Code spans and blocks render their content literally: no HTML, links or mentions there.
    outside_code = re.sub(r"`[^`\n]*`", "", re.sub(r"```.*?```", "", text, flags=re.S))
    assert "<img" not in outside_code and "<!--" not in outside_code
    assert "](" not in outside_code.replace("\\](", "")  # no link or image syntax survives unescaped
    assert not re.search(r"@[A-Za-z0-9]", outside_code)  # every @ is followed by a zero-width space
    for table in re.findall(r"(?:^\|.*\n)+", text, flags=re.M):
        header, *rows = table.splitlines()
        for row in rows:  # as many cells as the header, whatever the names hold
            assert len(re.findall(r"(?<!\\)\|", row)) == header.count("|")
    assert "onerror" in text  # escaped, not dropped: the reviewer still sees the real name


def test_fences_outlast_backticks_inside() -> None:
    block = markup.fence("a ```` b\n```\n")
    assert block.startswith("`````") and block.endswith("`````")


def test_markdown_is_deterministic_and_has_every_section(tmp_path: Path) -> None:
    write_files(tmp_path, {
        "catalog/web.yaml": service("web", "api"),
        "catalog/api.yaml": service("api", "api-db"),
        "catalog/end.yaml": service("end"),  # a mermaid keyword as a service name
        "catalog/later.yaml": service("later", "web"),
        "apps/web.yaml": deployment("web"),
        "apps/api.yaml": deployment("api"),
        "apps/end.yaml": deployment("end"),
        "apps/wave-0/stray.yaml": deployment("stray"),
    })
    plan = make_plan(FsTree(str(tmp_path)), Config())
    first = report.to_markdown(plan)
    assert first == report.to_markdown(make_plan(FsTree(str(tmp_path)), Config()))
    assert "🛑 **needs attention**: 1 error; 3 files to move, 6 to create" in first
    assert "#### Findings" in first and "`unplaced-file`" in first
    assert "| 1 | `api` | `api.yaml` |" in first
    assert "| `web.yaml` | new | wave 2 |" in first
    assert "#### Computed, not onboarded" in first and "`api-db` (wave 0)" in first
    mermaid = first.split("```mermaid", 1)[1].split("```", 1)[0]
    assert '["end (new)"]' in mermaid and "\n    end\n" not in mermaid.replace("  end\n", "")
    assert "w0 ==> w1" in mermaid and "w1 ==> w2" in mermaid


@pytest.mark.parametrize(
    "context, expected",
    [
        (report.Context(), "🔄 **out of date**: 1 file to move, 2 to create\n"),
        (report.Context(applied=True), "🔄 **regenerated**: 1 file moved, 2 created\n"),
        (report.Context(commit="0123456789abcdef"),
         "🔄 **regenerated** by wave-bot in 0123456789ab: 1 file moved, 2 created\n"),
    ],
)
def test_status_line(tmp_path: Path, context: report.Context, expected: str) -> None:
    write_files(tmp_path, {"catalog/web.yaml": service("web"), "apps/web.yaml": deployment("web")})
    assert expected in report.to_markdown(make_plan(FsTree(str(tmp_path)), Config()), context)


def test_up_to_date_example(example_repo: Path) -> None:
    tree = FsTree(str(example_repo))
    text = report.to_markdown(make_plan(tree, load_config(tree, None)))
    assert "✅ **up to date**" in text
    assert "#### Moves" not in text and "#### Findings" not in text


def test_text_report_lists_changes_and_findings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_files(tmp_path, {"catalog/web.yaml": service("web"), "apps/web.yaml": deployment("web"),
                           "apps/wave-0/x.yaml": deployment("x")})
    text = report.to_text(make_plan(FsTree(str(tmp_path)), Config()))
    assert text.startswith("wave-bot: needs attention: 1 error; 1 file to move, 2 to create\n")
    assert "  move    apps/web.yaml -> apps/wave-0/web.yaml" in text
    # The headline is the message's first sentence, the file in code format; the rest is the why.
    assert "  error   unplaced-file: `apps/wave-0/x.yaml`: no catalog node owns this file" in text
    assert "          why: To place it, add the ServiceDefinition catalog/x.yaml below" in text
    # The fix, which names the files that would place it, is printed under the finding.
    assert "          fix:\n            # create catalog/x.yaml:\n" in text


def test_a_large_repository_gets_a_report_of_bounded_size(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = {}
    for i in range(400):
        deps = [f"s{i - 1:03d}"] if i % 2 else []
        files[f"catalog/s{i:03d}.yaml"] = service(f"s{i:03d}", *deps)
        files[f"apps/s{i:03d}.yaml"] = deployment(f"s{i:03d}")
    write_files(tmp_path, files)
    text = report.to_markdown(make_plan(FsTree(str(tmp_path)), Config()))
    assert len(text) < 40_000
    assert "… and 140 more" in text  # 200 units in each wave, 60 named
    assert "… and 200 more |" in text  # 400 moves, 200 rows
    mermaid = text.split("```mermaid", 1)[1]
    assert 'w0["wave 0: 200 units (new)"]' in mermaid and "-->" not in mermaid and "w0 ==> w1" in mermaid


# ---- what a person sees for one PR: plex.yaml moves from wave 0 to wave 2 -------------------------


def _plex_to_wave_2(repo: Path) -> None:
    """The PR: plex gains a dependency on sonarr (wave 1), so it belongs in wave 2, and the author
    moves its file there by hand (wave-bot itself would hold that move and protect the objects first)."""
    git(repo, "checkout", "-q", "-b", "pr")
    with open(repo / "catalog/plex.yaml", "a") as catalog:
        catalog.write("  dependencies:\n    - to: sonarr\n")
    git(repo, "mv", "apps/wave-0/plex.yaml", "apps/wave-2/plex.yaml")
    git(repo, "commit", "-qam", "plex depends on sonarr")


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_a_moved_file_is_one_finding_with_its_objects_inside(
    example_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _plex_to_wave_2(example_repo)
    code, text, err = _run(capsys, "check", str(example_repo), "--base", "main")
    assert code == 1
    assert text.startswith("wave-bot: needs attention: 2 errors, 2 warnings; 2 files to update\n")
    findings = text.split("\nFindings:\n", 1)[1]
    assert findings.count("later-wave-move") == 1 and findings.count("next: ") == 1
    # Headed by the file the fix goes in (the annotation is merged where the file is deployed), then one
    # headline: what the move does, to which object (the first that loses data).
    assert findings.startswith("  error   later-wave-move (apps/wave-0/plex.yaml): Moving to wave 2 deletes\n"
                               "          `Namespace plex` and 3 more objects before the new wave recreates them\n")
    procedure = " ".join(findings.split("next: ", 1)[1].split("fix:", 1)[0].split())
    assert procedure == ("First merge a change that only adds the annotation `kustomize.toolkit.fluxcd.io/prune: "
                         "disabled` to `Namespace plex`, `PersistentVolumeClaim plex/plex-data`, `Service plex/plex` "
                         "and `apps/Deployment plex/plex` in `apps/wave-0/plex.yaml`, wait until apps-wave-0 has "
                         "reconciled it (`flux get kustomization apps-wave-0`), then make this move")
    listed = findings.split("next: ", 1)[0].splitlines()[2:-1]
    assert listed == ["          - Namespace plex (loses data)",  # data loss first
                      "          - PersistentVolumeClaim plex/plex-data (loses data)",
                      "          - Service plex/plex", "          - apps/Deployment plex/plex"]
    assert "          fix:\n            metadata:\n              annotations:\n" in findings
    # The why comes after the fix, each object's own cost in it.
    assert "          - PersistentVolumeClaim plex/plex-data: the claim is deleted and its\n" in findings
    assert all(len(line) <= 80 for line in text.splitlines())  # not a terminal: 80 columns
    # `apply` does not clear a later-wave move, so check does not pretend it does.
    assert "run `wave-bot apply` to make the 2 change(s); fix the 2 error(s) listed above" in err
    assert "(`wave-bot apply` does not clear them)" in err

    _, markdown, _ = _run(capsys, "plan", str(example_repo), "--base", "main", "--format", "markdown")
    assert markdown.count("`later-wave-move`") == 1 and markdown.count("**Safe step:**") == 1
    assert markdown.count("How to fix") == 1 and markdown.split("#### Waves")[0].count("<summary>Why</summary>") == 1
    assert "\n  - 💾 `PersistentVolumeClaim plex/plex-data` (data loss)\n" in markdown
    why = markdown.split("<summary>Why</summary>", 1)[1].split("</details>", 1)[0]
    assert "\n  - `Namespace plex`: the namespace is deleted and everything in it with it.\n" in why

    _, raw, _ = _run(capsys, "plan", str(example_repo), "--base", "main", "--format", "json")
    out = json.loads(raw)
    assert list(out)[0] == "status" and out["status"]["state"] == "needs-attention"
    assert out["status"]["changes"] == {"update": 2}
    (group,) = [g for g in out["groups"] if g["code"] == "later-wave-move"]
    assert group["by"] == "file" and group["key"] == "apps/wave-0/plex.yaml"
    members = [out["findings"][i] for i in group["findings"]]
    assert [m["resource"] for m in members][:2] == ["Namespace plex", "PersistentVolumeClaim plex/plex-data"]
    assert len(members) == 4 and all(m["code"] == "later-wave-move" for m in members)  # per object: kept
    # The objects as data: each finding's, and the group's, data loss first.
    assert [m["objects"] for m in members][1] == [{"kind": "PersistentVolumeClaim", "group": "", "namespace": "plex",
                                                   "name": "plex-data", "loses_data": True}]
    assert [(o["kind"], o["loses_data"]) for o in group["objects"]] == [
        ("Namespace", True), ("PersistentVolumeClaim", True), ("Service", False), ("Deployment", False)]
    assert group["headline"].startswith("Moving to wave 2 deletes `Namespace plex` and 3 more objects")


def test_once_the_stateful_objects_are_protected_the_rest_get_the_procedure_once(
    example_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plex = example_repo / "apps/wave-0/plex.yaml"
    docs = plex.read_text().split("\n---\n")
    docs = [re.sub(r"^metadata:\n", "metadata:\n  annotations:\n    kustomize.toolkit.fluxcd.io/prune: disabled\n", d,
                   count=1, flags=re.M) if re.search(r"^kind: (Namespace|PersistentVolumeClaim)$", d, re.M) else d
            for d in docs]
    plex.write_text("\n---\n".join(docs))
    git(example_repo, "commit", "-qam", "protect plex's Namespace and PVC")
    _plex_to_wave_2(example_repo)
    _, text, _ = _run(capsys, "plan", str(example_repo), "--base", "main", "--no-fixes")
    findings = text.split("\nFindings:\n", 1)[1]
    assert findings.count("next: First merge") == 1 and findings.count("remove the annotation") == 1
    warning, info = findings.split("  info    ", 1)
    # Only the two objects Flux still deletes are at risk: named in the headline, listed, none losing data.
    assert " ".join(warning.split()).startswith(
        "warning later-wave-move (apps/wave-0/plex.yaml): Moving to wave 2 deletes `Service plex/plex` and "
        "`apps/Deployment plex/plex` before the new wave recreates them - Service plex/plex - apps/Deployment "
        "plex/plex next: First merge a change")
    assert "loses data" not in findings
    # The protected ones move safely: their finding says so, without a step.
    assert " ".join(info.split()).startswith("later-wave-move (apps/wave-2/plex.yaml): Each of these 2 objects "
                                             "moves from wave 0")
    _, markdown, _ = _run(capsys, "plan", str(example_repo), "--base", "main", "--format", "markdown")
    assert markdown.count("**Safe step:**") == 1
    assert "recreates them\n  - `Service plex/plex`\n  - `apps/Deployment plex/plex`\n" in markdown


def test_no_fixes_hides_them(example_repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _plex_to_wave_2(example_repo)
    _, text, _ = _run(capsys, "plan", str(example_repo), "--base", "main", "--no-fixes")
    assert "fix:" not in text and "annotations:" not in text and "next: First merge a change" in text


def test_text_wraps_to_the_terminal(example_repo: Path, capsys: pytest.CaptureFixture[str],
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    _plex_to_wave_2(example_repo)
    monkeypatch.setattr("sys.stdout.isatty", lambda: True, raising=False)
    monkeypatch.setenv("COLUMNS", "120")
    _, text, _ = _run(capsys, "plan", str(example_repo), "--base", "main")
    widths = [len(line) for line in text.splitlines()]
    assert max(widths) <= 119 and max(widths) > 100


@pytest.mark.parametrize("step, state, code", [
    ("nothing", "up to date", 0),
    ("new app", "out of date: 1 file to move, 1 to update", 1),
    ("new wave, applied without --fix-overlays", "needs attention: 1 error, 2 warnings", 1),
])
def test_the_status_line_matches_the_exit_code(example_repo: Path, capsys: pytest.CaptureFixture[str],
                                               step: str, state: str, code: int) -> None:
    if step != "nothing":
        deps = ("seerr",) if "wave" in step else ("sonarr",)
        write_files(example_repo, {"catalog/tautulli.yaml": service("tautulli", *deps),
                                   "apps/tautulli.yaml": deployment("tautulli")})
    if "applied" in step:
        assert _run(capsys, "apply", str(example_repo))[0] == 0
    got, text, _ = _run(capsys, "check", str(example_repo))
    assert (got, text.splitlines()[0]) == (code, f"wave-bot: {state}")
    _, raw, _ = _run(capsys, "check", str(example_repo), "--format", "json")
    assert json.loads(raw)["status"]["text"] == state
    _, markdown, _ = _run(capsys, "check", str(example_repo), "--format", "markdown")
    assert markdown.splitlines()[2].split(" ", 1)[1] == "**" + state.replace(":", "**:", 1) + (
        "" if ":" in state else "**")


def test_created_and_updated_files_are_listed(example_repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_files(example_repo, {"catalog/tautulli.yaml": service("tautulli", "seerr"),
                               "apps/tautulli.yaml": deployment("tautulli")})
    _, markdown, _ = _run(capsys, "plan", str(example_repo), "--format", "markdown")
    table = markdown.split("#### Files wave-bot writes\n\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert table[2:] == ["| `apps/wave-3/kustomization.yaml` | create |",
                         "| `clusters/base/apps-wave-3.yaml` | create |"]


def test_an_empty_catalog_says_so_and_where_it_looked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "catalog").mkdir()
    code, text, _ = _run(capsys, "check", str(tmp_path))
    assert code == 0
    assert text.startswith("wave-bot: up to date: no ServiceDefinition in catalog/\n\n")
    assert " ".join(text.split()[8:]).startswith("No ServiceDefinition in catalog/ (the default catalog_dir; set it in "
                                                 ".wave-bot.yaml): wave-bot read every *.yaml")
    assert "wave  unit" not in text  # no bare table header
    write_files(tmp_path, {".wave-bot.yaml": "catalog_dir: services\n", "services/README.md": "x"})
    _, markdown, _ = _run(capsys, "plan", str(tmp_path), "--format", "markdown")
    assert "✅ **up to date**: no ServiceDefinition in services/" in markdown
    assert "catalog\\_dir is set in .wave-bot.yaml" in markdown and "| wave |" not in markdown


def test_services_without_app_files_are_named_not_called_an_empty_catalog(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_files(tmp_path, {"catalog/web.yaml": service("web", "api"), "catalog/api.yaml": service("api"),
                           "catalog/cron.yaml": service("cron"), "apps/README.md": "x"})
    code, text, _ = _run(capsys, "check", str(tmp_path))
    assert code == 0 and "No ServiceDefinition" not in text
    assert " ".join(text.split("\n\n")[1].split()) == (
        "Read 3 ServiceDefinitions in catalog/ (api, cron, web); none has app files in apps/ yet, so no wave has "
        "anything in it. An app file belongs to a service by its name (api.yaml, api-bootstrap-secret.yaml, "
        "api-app.yaml), a directory by its very name (api/)")
    _, markdown, _ = _run(capsys, "plan", str(tmp_path), "--format", "markdown")
    assert "No ServiceDefinition" not in markdown and "| wave |" not in markdown
    assert markdown.split("\n\n")[2].startswith("Read 3 ServiceDefinitions in catalog/ (api, cron, web); none has")


def test_units_declared_in_the_config_are_not_called_servicedefinitions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_files(tmp_path, {".wave-bot.yaml": "dependencies:\n  web: [api]\n  api: []\n", "apps/README.md": "x"})
    code, text, _ = _run(capsys, "check", str(tmp_path))
    assert code == 0
    assert " ".join(text.split("\n\n")[1].split()).startswith(
        "Read 2 units from the dependencies in .wave-bot.yaml (api, web); none has app files in apps/ yet")


def test_an_empty_catalog_is_said_before_the_files_it_leaves_unplaced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_files(tmp_path, {"catalog/README.md": "x", "apps/web.yaml": deployment("web"),
                           "apps/api.yaml": deployment("api")})
    code, text, _ = _run(capsys, "check", str(tmp_path))
    assert code == 1
    note = " ".join(text.split("\n\n")[1].split())
    assert note.startswith("No ServiceDefinition in catalog/")
    assert "none of the 2 app file(s) below can be placed" in note
    assert text.index("No ServiceDefinition") < text.index("unplaced-file")
    _, markdown, _ = _run(capsys, "plan", str(tmp_path), "--format", "markdown")
    assert markdown.index("No ServiceDefinition") < markdown.index("#### Findings") < markdown.index("unplaced-file")


def test_a_500_service_pr_fits_one_github_comment_most_important_first(make_repo: Any) -> None:
    """Every second service gains a dependency and moves to wave 1: half of them lose a PVC (errors),
    the others restart (warnings). The comment keeps the errors, says what it left out, and points at
    the job summary, which has everything."""
    files: dict[str, str | bytes] = {
        "clusters/base/kustomization.yaml": "resources:\n  - apps-wave-0.yaml\n",
    }
    for i in range(500):
        name = f"s{i:03d}"
        files[f"catalog/{name}.yaml"] = service(name)
        files[f"apps/{name}.yaml"] = deployment(name) + ("---\n" + pvc(f"{name}-data", name) if i % 4 == 1 else "")
    repo = make_repo(files, name="big")
    assert main(["apply", str(repo)]) == 0
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "layout")
    git(repo, "checkout", "-q", "-b", "pr")
    write_files(repo, {f"catalog/s{i:03d}.yaml": service(f"s{i:03d}", f"s{i - 1:03d}") for i in range(1, 500, 2)})
    tree = FsTree(str(repo))
    # The moves as they are (hold=False): apply, with or without a base, would hold the PVC moves.
    plan = make_plan(tree, Config(), hold=False)
    pointer = "The whole report is in the job summary: https://github.com/acme/gitops/actions/runs/1"
    marker = "<!-- flux-wave-bot:report -->"
    comment = report.to_markdown(plan, report.Context(), limit=65_536 - len(marker) - 101, overflow=pointer)
    summary = report.to_markdown(plan)

    assert len(f"{marker}\n{comment}") <= 65_536 < len(summary)
    # The status counts everything: 125 PVCs and the missing base entry of the new wave 1; a Deployment
    # and a Service per moved file, and the new wave.
    assert comment.splitlines()[2] == ("🛑 **needs attention**: 126 errors, 501 warnings; 250 files to move, "
                                       "2 to create, 1 to update")
    shown = re.findall(r"^- (?:🛑|⚠️) \*\*(error|warning)\*\* `later-wave-move`", comment, flags=re.M)
    assert len(shown) > 20 and set(shown) == {"error"}  # data loss first; the restarts are what is cut
    cut = comment.rstrip().splitlines()[-1]
    # The info note is base-is-work-tree: no deployed revision was given.
    sections = {"the waves": "#### Waves", "the moves": "#### Moves", "the files written": "#### Files wave-bot writes",
                "the gating notes": f"#### {report.GATING_TITLE}", "the wave graph": "<summary>Wave graph</summary>"}
    left_out = [name for name, heading in sections.items() if heading not in comment]
    assert left_out[:2] == ["the waves", "the moves"]  # the two tables of 500 rows do not fit
    assert all(heading in summary for heading in sections.values())
    named = ", ".join(left_out[:-1]) + " and " + left_out[-1]
    assert cut == (f"✂️ This comment is cut to fit. Not shown: {126 - len(shown)} more errors, "
                   f"{501 - 2 * len(shown)} more warnings, 1 more info note; {named}. {pointer}")
    assert summary.count("`later-wave-move`") == 250 and "✂️" not in summary
    from support.rendered import assert_renders_as_intended

    assert_renders_as_intended(comment)
