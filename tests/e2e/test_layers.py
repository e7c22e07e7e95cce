"""tools/layers.py: the import-layer contract of bot/ holds, and fails on an upward import."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import PROJECT

TOOL = PROJECT / "tools" / "layers.py"
sys.path.insert(0, str(PROJECT / "tools"))
import layers  # noqa: E402


def run(package: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(TOOL), str(package)], capture_output=True, text=True)


def copy_of_bot(tmp_path: Path) -> Path:
    copy = tmp_path / "bot"
    shutil.copytree(PROJECT / "bot", copy, ignore=shutil.ignore_patterns("__pycache__"))
    return copy


def test_bot_imports_only_down() -> None:
    result = run(PROJECT / "bot")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""


def test_an_upward_import_fails_the_contract_naming_its_file_and_line(tmp_path: Path) -> None:
    bot = copy_of_bot(tmp_path)
    vocabulary = bot / "flux" / "vocabulary.py"
    lines = vocabulary.read_text().splitlines()
    vocabulary.write_text("\n".join([*lines, "from bot.layout import units  # deliberately upward", ""]))
    result = run(bot)
    assert result.returncode == 1
    assert f"bot/flux/vocabulary.py:{len(lines) + 1}: flux imports bot.layout" in result.stderr
    assert result.stderr.count("\n") == 1  # that line only, once


def test_type_only_relative_and_function_level_imports_count_too(tmp_path: Path) -> None:
    bot = copy_of_bot(tmp_path)
    (bot / "yamlio" / "upward.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from bot.config import Config\n"
        "def f() -> None:\n"
        "    from ..plan import make_plan\n"
        "    import bot.report.formats\n")
    found = {(v.path, v.line, v.imported) for v in layers.upward_imports(bot)}
    assert found == {("bot/yamlio/upward.py", 3, "bot.config"), ("bot/yamlio/upward.py", 5, "bot.plan"),
                     ("bot/yamlio/upward.py", 6, "bot.report.formats")}


def test_a_package_in_no_layer_fails_the_contract(tmp_path: Path) -> None:
    bot = copy_of_bot(tmp_path)
    (bot / "extras").mkdir()
    (bot / "extras" / "__init__.py").write_text("")
    result = run(bot)
    assert result.returncode == 1
    assert "bot/extras: in no layer" in result.stderr


def test_the_design_page_lists_the_layers_in_the_contracts_order() -> None:
    text = (PROJECT / "docs" / "design.md").read_text()
    table = text[text.index("| layer | its one job |"):].split("\n\n", 1)[0].splitlines()[2:]
    shown = []
    for row in table:
        cell = row.strip("|").split("|")[0]
        shown.append(tuple(m.removesuffix(".py").removesuffix("/") for m in re.findall(r"`([^`]+)`", cell)))
    assert shown == [tuple(p for p in layer if p not in ("__main__", "__init__")) for layer in layers.LAYERS]
