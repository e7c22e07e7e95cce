"""No two findings of one report may contradict each other, checked on every plan the suite makes.

`conftest.py` loads this as a plugin: its autouse fixture wraps `bot.plan.make_plan` (also where a
test module imported it by name), so every scenario of every test is checked, not a sample.
"""
from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

import bot.plan
from bot.model import Finding

# Codes that cannot be said of the same resource: one of each pair is wrong.
SAME_RESOURCE = [
    ({"kustomization-removed"}, {"wave-removed", "wave-removable"}, "deletes what it owns / owns nothing"),
    ({"earlier-wave-move"}, {"later-wave-move"}, "moves earlier / moves later"),
    ({"resource-removed", "resource-dropped"}, {"earlier-wave-move", "later-wave-move", "cross-kustomization-move"},
     "in no wave any more / still applied"),
]
# Codes that cannot be said of the same wave.
SAME_WAVE = [
    ({"wave-removed"}, {"wave-emptied"}, "deleted / kept with resources: []"),
    ({"wave-removed"}, {"missing-base-entry", "missing-decryption", "new-deepest-wave"}, "deleted / to be wired"),
    ({"wave-removed"}, {"stale-base-entry"}, "deleted with its lines / a line left pointing at it"),
]


def contradictions(findings: Sequence[Finding], changes: Sequence[Any] = ()) -> list[str]:
    out = []
    for rules, key in ((SAME_RESOURCE, "resource"), (SAME_WAVE, "wave")):
        for left, right, why in rules:
            for a in findings:
                for b in findings:
                    if a.code in left and b.code in right and getattr(a, key) is not None \
                            and getattr(a, key) == getattr(b, key):
                        out.append(f"{a.code} and {b.code} on {key} {getattr(a, key)} ({why})")
    if any(f.code == "cutover-step-1" for f in findings) and any(c.action == "move" for c in changes):
        out.append("cutover-step-1 says nothing moves, yet the plan moves files")
    if any(f.code == "cutover-step-1" for f in findings) and any(f.code == "cutover-step-2" for f in findings):
        out.append("cutover step 1 and step 2 at once")
    return out


@pytest.fixture(autouse=True)
def _no_contradicting_findings(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    original = bot.plan.make_plan

    def checked(*args: Any, **kwargs: Any) -> bot.plan.Plan:
        plan = original(*args, **kwargs)
        found = contradictions(plan.findings, plan.changes)
        assert not found, f"contradicting findings: {found}"
        return plan

    monkeypatch.setattr(bot.plan, "make_plan", checked)
    for module in list(sys.modules.values()):
        if getattr(module, "make_plan", None) is original and module is not bot.plan:
            monkeypatch.setattr(module, "make_plan", checked)
    yield
