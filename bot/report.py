"""Turning a Plan into what people read: a text table, JSON, and the markdown report.

One markdown renderer serves `--format markdown`, the PR comment and the job summary. Every string
that comes from the repository (file names, resource names, messages quoting them) is escaped, so a
hostile name renders as inert text: never a link, an image, HTML or an @-mention.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass

from bot.model import Finding
from bot.plan import Plan

SEVERITY_ICON = {"error": "🛑", "warning": "⚠️", "info": "ℹ️"}
MERMAID_EDGE_LIMIT = 400  # beyond this a diagram stops being readable (and GitHub stops rendering it)


def _unit_files(plan: Plan) -> dict[int, list[tuple[str, list[str]]]]:
    """Wave -> [(unit, its file names, main manifest first)]."""
    by_unit: dict[tuple[int, str], list[str]] = {}
    for file in plan.files:
        if file.target_wave is not None:
            by_unit.setdefault((file.target_wave, file.node or "(unplaced)"), []).append(file.name)
    out: dict[int, list[tuple[str, list[str]]]] = {n: [] for n in plan.waves}
    for (wave, unit), names in sorted(by_unit.items()):
        out[wave].append((unit, sorted(names, key=lambda name: (len(name.split(".")[0]), name))))
    return out


# ---- text ---------------------------------------------------------------------------------------


def to_text(plan: Plan, applied: bool = False) -> str:
    rows = [("wave", "unit", "files")]
    for n, units in _unit_files(plan).items():
        if not units:
            rows.append((str(n), "(empty)", ""))
        for i, (unit, names) in enumerate(units):
            rows.append((str(n) if i == 0 else "", unit, ", ".join(names)))
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
    return json.dumps(plan.to_json(), indent=2) + "\n"


# ---- markdown -----------------------------------------------------------------------------------

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|~<>&])")


def escape(text: str) -> str:
    """Repository text as inert markdown: punctuation escaped, no HTML, no @-mentions, one line."""
    text = " ".join(text.split())
    text = _MD_SPECIAL.sub(lambda m: {"<": "&lt;", ">": "&gt;", "&": "&amp;"}.get(m.group(1), "\\" + m.group(1)), text)
    return text.replace("@", "@\u200b")  # a zero-width space after @ stops mentions and team pings


def code(text: str) -> str:
    """`text` as an inline code span when that is safe, else escaped plain text."""
    if "`" in text or "\n" in text or not text.strip():
        return escape(text)
    return f"`{text}`".replace("|", "\\|")  # a pipe would split a table cell even inside a code span


def fence(text: str, lang: str = "") -> str:
    """A fenced block that no backtick run inside `text` can close early."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{lang}\n{text.rstrip()}\n{ticks}"


@dataclass(frozen=True)
class Context:
    """What the caller did with the plan, for the status line and extra sections."""

    applied: bool = False
    commit: str | None = None  # the commit the bot pushed
    diff: str | None = None  # a change the bot could not push (fork PRs): shown collapsed
    apply_hint: str | None = None  # how to apply `diff` locally
    note: str | None = None  # one more plain sentence under the status (trusted text)


def status(plan: Plan, context: Context) -> str:
    errors = sum(f.severity == "error" for f in plan.findings)
    warnings = sum(f.severity == "warning" for f in plan.findings)
    if errors or warnings:
        head = "needs attention"
        counts = ", ".join(p for p in (_plural(errors, "error"), _plural(warnings, "warning")) if p)
        return f"⚠️ **{head}**: {counts}"
    if plan.changes and context.commit:
        return f"🔄 **regenerated**: {_plural(len(plan.changes), 'change')} committed in {context.commit[:12]}"
    if plan.changes:
        return f"🔄 **{'regenerated' if context.applied else 'out of date'}**: {_plural(len(plan.changes), 'change')}"
    return "✅ **up to date**"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}" if n else ""


def _finding(f: Finding) -> list[str]:
    line = f"- {SEVERITY_ICON[f.severity]} **{f.severity}** {code(f.code)}: {escape(f.message)}"
    out = [line]
    if f.fix:
        out += ["", "  <details><summary>How to fix</summary>", ""]
        out += ["  " + row if row else "" for row in fence(f.fix, "yaml" if ":" in f.fix else "").splitlines()]
        out += ["", "  </details>"]
    return out


def _wave_table(plan: Plan) -> list[str]:
    out = ["| wave | units | files |", "|---:|---|---|"]
    for n, units in _unit_files(plan).items():
        names = ", ".join(code(unit) for unit, _ in units) or "_(empty)_"
        files = ", ".join(code(name) for _, files in units for name in files) or "—"
        out.append(f"| {n} | {names} | {files} |")
    return out


def _moves(plan: Plan) -> list[str]:
    if not plan.moves:
        return []
    out = ["#### Moves", "", "| file | from | to |", "|---|---|---|"]
    for file in plan.moves:
        before = f"wave {file.wave}" if file.wave is not None else f"{code(plan.config.apps_dir + '/')}"
        out.append(f"| {code(file.name)} | {before} | wave {file.target_wave} |")
    return out + [""]


def _mermaid(plan: Plan) -> list[str]:
    units = _unit_files(plan)
    placed = [unit for n in plan.waves for unit, _ in units[n] if unit != "(unplaced)"]
    ids = {unit: f"u{i}" for i, unit in enumerate(placed)}  # ids, not names: `end` is a keyword
    lines = ["flowchart BT"]
    for n in plan.waves:
        lines.append(f'  subgraph w{n}["wave {n}"]')
        members = [f'    {ids[unit]}["{unit}"]' for unit, _ in units[n] if unit in ids]
        lines += members or [f'    e{n}[" "]']
        lines.append("  end")
    edges = [(ids[d], ids[name]) for name, node in plan.graph.nodes.items() if name in ids
             for d in node.dependencies if d in ids]
    if len(edges) <= MERMAID_EDGE_LIMIT:
        lines += [f"  {a} --> {b}" for a, b in edges]
    lines += [f"  w{n - 1} ==> w{n}" for n in plan.waves[1:]]
    return ["<details><summary>Wave graph</summary>", "", fence("\n".join(lines), "mermaid"), "", "</details>"]


def to_markdown(plan: Plan, context: Context = Context()) -> str:
    """The report: status, findings (errors first) with fixes, waves, moves, not onboarded, graph."""
    out = ["### 🌊 flux-wave-bot", "", status(plan, context)]
    if context.note:
        out += ["", context.note]
    findings = [f for f in plan.findings if f.code != "not-onboarded"]
    if findings:
        out += ["", "#### Findings", ""]
        for f in findings:
            out += _finding(f)
    if context.diff is not None:
        out += ["", "<details><summary>The regenerated layout (not pushed)</summary>", "",
                fence(context.diff, "diff"), "", "</details>"]
        if context.apply_hint:
            out += ["", context.apply_hint]
    out += ["", "#### Waves", "", *_wave_table(plan), ""]
    out += _moves(plan)
    pending = [f"{code(n)} (wave {plan.graph.nodes[n].wave})" for n in plan.not_onboarded()]
    if pending:
        out += ["#### Computed, not onboarded", "", ", ".join(pending), ""]
    if plan.waves:
        out += _mermaid(plan)
    return "\n".join(out).rstrip() + "\n"


def render(plan: Plan, fmt: str, applied: bool = False) -> str:
    if fmt == "json":
        return to_json(plan)
    if fmt == "markdown":
        return to_markdown(plan, Context(applied=applied))
    return to_text(plan, applied)
