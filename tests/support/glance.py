"""Every finding of every plan the suite makes reads in a glance, checked where the plan is made.

`conftest.py` loads this as a plugin, beside `support.contradictions`: its autouse fixture wraps
`bot.plan.make_plan` (also where a test module imported it by name), so the example, every scenario
and every real-repository lane is measured, not a sample:

- a headline under `HEADLINE_LIMIT` words (issue 32: "under about 20 words"; the limit measured);
- a finding about objects (what Flux deletes, moves or holds) lists them as data, and the object its
  `resource` names is among them.
"""
from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

import bot.plan
from bot.checks.codes import DELETING
from bot.model import Finding
from bot.report.headline import headline, words

HEADLINE_LIMIT = 25
ABOUT_OBJECTS = DELETING | {"earlier-wave-move", "duplicate-resource", "namespace-deleted", "kustomization-removed",
                            "move-held"}
"""The codes whose every finding is about objects (not a wave, a file or a tier)."""
LONGEST: list[tuple[int, str, str]] = []
"""(words, code, headline) of the longest headline seen so far in this run, for the report of a test."""


def unreadable(findings: Sequence[Finding]) -> list[str]:
    out = []
    for f in findings:
        line = headline([f])
        if words(line) >= HEADLINE_LIMIT:
            out.append(f"{f.code}: a headline of {words(line)} words: {line}")
        if not LONGEST or words(line) > LONGEST[0][0]:
            LONGEST[:] = [(words(line), f.code, line)]
        if f.code in ABOUT_OBJECTS and not f.objects:
            out.append(f"{f.code} about {f.resource} lists no objects")
        if f.objects and f.resource and f.code in ABOUT_OBJECTS and f.resource not in {str(o) for o in f.objects}:
            out.append(f"{f.code}: its resource {f.resource} is not among its objects")
    return out


@pytest.fixture(autouse=True)
def _findings_read_in_a_glance(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    original = bot.plan.make_plan

    def checked(*args: Any, **kwargs: Any) -> bot.plan.Plan:
        plan = original(*args, **kwargs)
        found = unreadable(plan.findings)
        assert not found, f"findings that do not read in a glance: {found}"
        return plan

    monkeypatch.setattr(bot.plan, "make_plan", checked)
    for module in list(sys.modules.values()):
        if getattr(module, "make_plan", None) is original and module is not bot.plan:
            monkeypatch.setattr(module, "make_plan", checked)
    yield
