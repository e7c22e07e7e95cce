"""checks/codes.py: every finding code declared once, and the table of docs/explanation/checks.md agrees with it."""
from __future__ import annotations

import re
from pathlib import Path

from bot.checks.codes import BY_NAME, CODES, DELETING, OWN_SECTION, TIER

ROOT = Path(__file__).resolve().parent.parent.parent
TABLE_HEAD = "| code | severity | what it means |"


def readme_table() -> dict[str, str]:
    """code -> severity rule, from the table of docs/explanation/checks.md (a row may name two codes: `a` / `b`)."""
    text = (ROOT / "docs" / "explanation" / "checks.md").read_text()
    rows = text[text.index(TABLE_HEAD):].split("\n\n", 1)[0].splitlines()[2:]
    out: dict[str, str] = {}
    for row in rows:
        code_cell, severity, _meaning = [c.strip() for c in row.strip().strip("|").split(" | ", 2)]
        codes = re.findall(r"`([a-z0-9-]+)`", code_cell)
        severities = severity.split(" / ") if len(codes) == 2 and " / " in severity else [severity] * len(codes)
        for code, rule in zip(codes, severities, strict=True):
            assert code not in out, f"docs/explanation/checks.md names {code} twice"
            out[code] = rule
    return out


def test_every_code_is_declared_once() -> None:
    assert len(BY_NAME) == len(CODES)


def test_the_readme_table_lists_every_declared_code_with_its_severity_rule() -> None:
    assert readme_table() == {c.name: c.severity for c in CODES}


def test_every_code_the_bot_emits_is_declared() -> None:
    emitted = set()
    for path in (ROOT / "bot").rglob("*.py"):
        text = path.read_text()
        emitted |= set(re.findall(r'\bcode="([a-z0-9-]+)"', text))
        for either in re.findall(r'\bcode = "([a-z0-9-]+)" if .* else "([a-z0-9-]+)"', text):
            emitted |= set(either)
        emitted |= set(re.findall(r'^(?:CODE|INVALID_MANIFEST) = "([a-z0-9-]+)"', text, re.M))
    assert emitted and emitted <= set(BY_NAME), sorted(emitted - set(BY_NAME))
    assert set(BY_NAME) <= emitted, f"declared but never emitted: {sorted(set(BY_NAME) - emitted)}"


def test_the_special_lists_are_derived_from_the_declarations() -> None:
    deleting = ["copy-removed", "cross-kustomization-move", "kustomization-renamed", "later-wave-move",
                "resource-dropped", "resource-removed"]
    assert sorted(DELETING) == deleting
    assert sorted(OWN_SECTION) == ["chain-gating", "not-onboarded"]
    assert sorted(TIER) == ["depends-on-not-gating", "ready-expr-replaces-readiness", "sops-not-decrypted"]
