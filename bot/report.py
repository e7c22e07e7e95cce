"""Turning a Plan into what people read: a text table, JSON, and markdown."""
from __future__ import annotations

import json

from bot.plan import Plan


def _unit_rows(plan: Plan) -> list[tuple[str, str, str]]:
    """(wave, unit, files) rows; the wave shows on its first row only."""
    by_unit: dict[tuple[int, str], list[str]] = {}
    for file in plan.files:
        if file.target_wave is not None:
            key = (file.target_wave, file.node or "(unplaced)")
            by_unit.setdefault(key, []).append(file.name)
    rows: list[tuple[str, str, str]] = []
    for n in plan.waves:
        units = sorted((unit, names) for (wave, unit), names in by_unit.items() if wave == n)
        if not units:
            rows.append((str(n), "(empty)", ""))
        for i, (unit, names) in enumerate(units):
            rows.append((str(n) if i == 0 else "", unit, ", ".join(_file_order(names))))
    return rows


def _file_order(names: list[str]) -> list[str]:
    """The unit's main manifest first, then its companions."""
    return sorted(names, key=lambda name: (len(name.split(".")[0]), name))


def to_text(plan: Plan, applied: bool = False) -> str:
    rows = [("wave", "unit", "files"), *_unit_rows(plan)]
    width = [max(len(r[i]) for r in rows) for i in range(2)]
    lines = [f"{w:<{width[0]}}  {u:<{width[1]}}  {f}".rstrip() for w, u, f in rows]
    pending = [f"{n} (wave {plan.graph.nodes[n].wave})" for n in plan.not_onboarded()]
    if pending:
        lines += ["", "Computed, not placed (no app files yet): " + ", ".join(pending)]
    lines.append("")
    if plan.changes:
        lines.append(f"{len(plan.changes)} change(s) {'applied' if applied else 'to apply'}:")
        for change in plan.changes:
            arrow = f"{change.source} -> {change.path}" if change.source else change.path
            lines.append(f"  {change.action:<7} {arrow}")
    else:
        lines.append("The wave layout is up to date.")
    findings = [f for f in plan.findings if f.code != "not-onboarded"]  # listed above already
    if findings:
        lines += ["", "Findings:"]
        lines += [f"  {f.severity:<7} {f.code}: {f.message}" for f in findings]
    return "\n".join(lines) + "\n"


def to_json(plan: Plan) -> str:
    return json.dumps(plan.to_json(), indent=2, sort_keys=False) + "\n"


def render(plan: Plan, fmt: str, applied: bool = False) -> str:
    if fmt == "json":
        return to_json(plan)
    if fmt == "markdown":
        from bot.markdown import to_markdown

        return to_markdown(plan)
    return to_text(plan, applied)
