"""tools/reference.py: the reference pages are the code's own lists, and stale pages fail."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bot.checks.codes import CODES
from bot.cli import main
from bot.config import parse_config

from conftest import PROJECT

sys.path.insert(0, str(PROJECT / "tools"))
import reference  # noqa: E402


@pytest.mark.parametrize("name", sorted(reference.PAGES))
def test_each_generated_page_is_fresh(name: str) -> None:
    page = reference.PAGES[name]
    assert page.read_text() == reference.RENDER[name](), f"{page.relative_to(PROJECT)} is stale: run " \
        "`python tools/reference.py`"


def test_the_findings_page_has_a_row_for_every_declared_code() -> None:
    rows = [line for line in reference.findings_page().splitlines() if line.startswith("| `")]
    assert [row.split("`")[1] for row in rows] == [c.name for c in CODES]


def test_the_configuration_page_lists_what_the_loader_accepts_and_its_example_loads() -> None:
    page = reference.configuration_page()
    keys = [line.split("`")[1] for line in page.splitlines() if line.startswith("| `")]
    assert keys == reference.config_keys() and "catalog_dir" in keys and "non_gating" in keys
    config = parse_config(reference.EXAMPLE_CONFIG.encode(), ".wave-bot.yaml")
    assert config.non_gating == ("gitea-actions",)


def test_every_option_the_cli_accepts_is_on_the_cli_page(capsys: pytest.CaptureFixture[str]) -> None:
    page = reference.cli_page()
    for command in ("plan", "apply", "check", "accept", "run"):
        assert f"## `wave-bot {command}`" in page
        with pytest.raises(SystemExit):
            main([command, "--help"])
        helped = capsys.readouterr().out
        for word in helped.split():
            if word.startswith("--") and word.strip("[],") != "--help":
                assert f"`{word.strip('[],')}`" in page, (command, word)


def test_check_names_a_stale_page_and_a_code_missing_from_the_built_site(tmp_path: Path) -> None:
    site = tmp_path / "site"
    for name in ("findings", "configuration", "cli"):
        (site / "reference" / name).mkdir(parents=True)
    (site / "reference" / "findings" / "index.html").write_text(
        "".join(f"<td><code>{c.name}</code></td>" for c in CODES if c.name != "move-held"))
    missing = reference.missing_from(site)
    assert "site/reference/findings/: `move-held` is missing" in missing
    assert not any("findings/: `later-wave-move`" in m for m in missing)
    assert "site/reference/configuration/: `catalog_dir` is missing" in missing
    assert "site/reference/cli/: `--base` is missing" in missing


def test_the_tool_rewrites_a_page_edited_by_hand(tmp_path: Path) -> None:
    copy = tmp_path / "project"
    for rel in ("tools/reference.py", *(str(p.relative_to(PROJECT)) for p in reference.PAGES.values())):
        (copy / rel).parent.mkdir(parents=True, exist_ok=True)
        (copy / rel).write_text((PROJECT / rel).read_text())
    page = copy / "docs" / "reference" / "findings.md"
    page.write_text(page.read_text().replace("| `move-held` |", "| `move-hold` |"))
    env = {"PYTHONPATH": str(PROJECT), "PATH": "/usr/bin:/bin"}
    checked = subprocess.run([sys.executable, str(copy / "tools/reference.py"), "--check"], capture_output=True,
                             text=True, env=env)
    assert checked.returncode == 1 and "docs/reference/findings.md is stale" in checked.stderr
    subprocess.run([sys.executable, str(copy / "tools/reference.py")], check=True, capture_output=True, env=env)
    assert page.read_text() == reference.findings_page()
