"""Waves at real scale: two public homelab dependency graphs (187 and 162 services).

The fixtures live outside the project (../shared/fixtures, beside the checkout) and are not copied in.
Where they are absent (a plain clone) the test skips, unless WAVE_BOT_REQUIRE_REALGRAPH=1 (set by .ci/run).
"""
from __future__ import annotations

import json
import os

import pytest

from bot.config import Config
from bot.plan import make_plan
from bot.repo.worktree import FsTree

from conftest import PROJECT

FIXTURES = PROJECT.parent / "shared" / "fixtures"
NAMES = ["realgraph", "realgraph2"]


@pytest.mark.parametrize("name", NAMES)
def test_real_graph_waves_match(name: str) -> None:
    fixture = FIXTURES / name
    if not fixture.is_dir():
        if os.environ.get("WAVE_BOT_REQUIRE_REALGRAPH") == "1":
            pytest.fail(f"{fixture} is missing")
        pytest.skip(f"{fixture} is not beside this checkout")
    expected = json.loads((fixture / "expected-waves.json").read_text())
    plan = make_plan(FsTree(str(fixture)), Config())
    assert plan.graph.waves() == expected
    assert plan.changes == ()  # catalog only: nothing to place
