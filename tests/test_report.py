"""The reports people read: text, JSON and markdown (the PR comment and job summary)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from bot import report
from bot.config import Config, load_config
from bot.plan import make_plan
from bot.worktree import FsTree

from conftest import deployment, service, write_files

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
    for row in [r for r in text.splitlines() if r.startswith("| ")]:
        assert len(re.findall(r"(?<!\\)\|", row)) == 4  # three cells, whatever the names hold
    assert "onerror" in text  # escaped, not dropped: the reviewer still sees the real name


def test_fences_outlast_backticks_inside() -> None:
    block = report.fence("a ```` b\n```\n")
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
    assert "⚠️ **needs attention**: 1 error" in first
    assert "#### Findings" in first and "`unplaced-file`" in first
    assert "| 1 | `api` | `api.yaml` |" in first
    assert "| `web.yaml` | new | wave 2 |" in first
    assert "#### Computed, not onboarded" in first and "`api-db` (wave 0)" in first
    mermaid = first.split("```mermaid", 1)[1].split("```", 1)[0]
    assert '["end"]' in mermaid and "\n    end\n" not in mermaid.replace("  end\n", "")
    assert "w0 ==> w1" in mermaid and "w1 ==> w2" in mermaid


@pytest.mark.parametrize(
    "context, expected",
    [
        (report.Context(), "🔄 **out of date**: "),
        (report.Context(applied=True), "🔄 **regenerated**: "),
        (report.Context(commit="0123456789abcdef"), "🔄 **regenerated** by wave-bot in 0123456789ab"),
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
    assert "  move    apps/web.yaml -> apps/wave-0/web.yaml" in text
    assert "  error   unplaced-file: apps/wave-0/x.yaml" in text


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
    assert 'w0["wave 0: 200 units"]' in mermaid and "-->" not in mermaid and "w0 ==> w1" in mermaid
