"""Turning a Plan into what people read: a text table, JSON, and the markdown report.

One markdown renderer serves `--format markdown`, the PR comment and the job summary. Every string
that comes from the repository (file names, resource names, messages quoting them) is escaped, so a
hostile name renders as inert text: never a link, an image, HTML or an @-mention.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass

from bot.errors import WaveBotError
from bot.model import Finding
from bot.plan import Plan
from bot.side import Side, Slot, order

SEVERITY_ICON = {"error": "🛑", "warning": "⚠️", "info": "ℹ️"}
# Past these a report stops being readable, and a large repository would blow GitHub's limits
# (65,536 characters a comment, 1 MiB a job summary): lists are cut with a count of the rest.
MERMAID_NODE_LIMIT = 150
MERMAID_EDGE_LIMIT = 400
CELL_LIMIT = 60  # names in one table cell
ROW_LIMIT = 200  # rows of the moves table


GATING_TITLE = "Gating worth knowing about"
OWN_SECTION = frozenset({"not-onboarded", "chain-gating"})
"""Info findings the reports show in a section of their own rather than among the findings."""


def _gating(plan: Plan) -> list[Finding]:
    return [f for f in plan.findings if f.code == "chain-gating"]


def _unit_files(plan: Plan) -> dict[Slot, list[tuple[str, list[str]]]]:
    """Wave (or side branch) -> [(unit, its file names, main manifest first)]."""
    by_unit: dict[tuple[Slot, str], list[str]] = {}
    for file in plan.files:
        if file.target_wave is not None:
            by_unit.setdefault((file.target_wave, file.node or "(unplaced)"), []).append(file.name)
    out: dict[Slot, list[tuple[str, list[str]]]] = {n: [] for n in plan.slots}
    for (wave, unit), names in sorted(by_unit.items(), key=lambda item: (order(item[0][0]), item[0][1])):
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
    gating = _gating(plan)
    if gating:
        lines += ["", f"{GATING_TITLE}:"]
        lines += [f"  {f.message}" for f in gating]
    lines.append("")
    if plan.changes:
        lines.append(f"{len(plan.changes)} change(s) {'applied' if applied else 'to apply'}:")
        for change in plan.changes:
            arrow = f"{change.source} -> {change.path}" if change.source else change.path
            lines.append(f"  {change.action:<7} {arrow}")
    else:
        lines.append("The wave layout is up to date.")
    findings = [f for f in plan.findings if f.code not in OWN_SECTION]  # listed above already
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
    commit: str | None = None  # the commit in which wave-bot regenerated the layout
    diff: str | None = None  # a change the bot could not push (fork PRs): shown collapsed
    apply_hint: str | None = None  # how to apply `diff` locally
    note: str | None = None  # one more plain sentence under the status (trusted text)


def status(plan: Plan, context: Context) -> str:
    errors = sum(f.severity == "error" for f in plan.findings)
    warnings = sum(f.severity == "warning" for f in plan.findings)
    if errors or warnings:
        counts = ", ".join(p for p in (_plural(errors, "error"), _plural(warnings, "warning")) if p)
        regenerated = f" (layout regenerated by wave-bot in {context.commit[:12]})" if context.commit else ""
        return f"⚠️ **needs attention**: {counts}{regenerated}"
    if context.commit:
        return f"🔄 **regenerated** by wave-bot in {context.commit[:12]}"
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


def _cell(names: list[str], empty: str) -> str:
    shown_names = ", ".join(code(name) for name in names[:CELL_LIMIT]) or empty
    return shown_names + (f" … and {len(names) - CELL_LIMIT} more" if len(names) > CELL_LIMIT else "")


def _wave_table(plan: Plan) -> list[str]:
    out = ["| wave | units | files |", "|---:|---|---|"]
    for n, units in _unit_files(plan).items():
        names = _cell([unit for unit, _ in units], "_(empty)_")
        files = _cell([name for _, files in units for name in files], "—")
        out.append(f"| {n} | {names} | {files} |")
    return out


def _moves(plan: Plan) -> list[str]:
    moves = plan.wave_moves()
    if not moves:
        return []
    against = "the base branch" if plan.base_waves is not None else "the work tree"
    out = ["#### Moves", "", f"Compared with {against}.", "", "| file | from | to |", "|---|---|---|"]
    for name, before, after in moves[:ROW_LIMIT]:
        origin = f"wave {before}" if before is not None else "new"
        out.append(f"| {code(name)} | {origin} | wave {after} |")
    if len(moves) > ROW_LIMIT:
        out.append(f"| … and {len(moves) - ROW_LIMIT} more | | |")
    return out + [""]


def _mermaid_id(n: Slot) -> str:
    return f"s{n.wave}" if isinstance(n, Side) else f"w{n}"


def _mermaid(plan: Plan) -> list[str]:
    """Waves bottom-up, each wave's arrow from the one below; a side branch hangs off the wave its
    own wave depends on by a dotted arrow, and no arrow leaves it: it gates nobody."""
    units = _unit_files(plan)
    placed = [unit for n in plan.slots for unit, _ in units[n] if unit != "(unplaced)"]
    if len(placed) > MERMAID_NODE_LIMIT:  # too many to draw: draw the waves with their sizes
        placed = []
    ids = {unit: f"u{i}" for i, unit in enumerate(placed)}  # ids, not names: `end` is a keyword
    lines = ["flowchart BT"]
    for n in plan.slots:
        count = len([unit for unit, _ in units[n] if unit != "(unplaced)"])
        title = f"wave {n.wave} side (non-gating)" if isinstance(n, Side) else f"wave {n}"
        node = _mermaid_id(n)
        lines.append(f'  subgraph {node}["{title}"]' if ids else f'  {node}["{title}: {count} units"]')
        if ids:
            members = [f'    {ids[unit]}["{unit}"]' for unit, _ in units[n] if unit in ids]
            lines += members or [f'    e{node.removeprefix("w")}[" "]']
            lines.append("  end")
    edges = [(ids[d], ids[name]) for name, node in plan.graph.nodes.items() if name in ids
             for d in node.dependencies if d in ids]
    if len(edges) <= MERMAID_EDGE_LIMIT:
        lines += [f"  {a} --> {b}" for a, b in edges]
    lines += [f"  w{n - 1} ==> w{n}" for n in plan.waves[1:]]
    lines += [f"  w{s.wave - 1} -.-> s{s.wave}" for s in plan.sides if s.wave - 1 in plan.waves]
    return ["<details><summary>Wave graph</summary>", "", fence("\n".join(lines), "mermaid"), "", "</details>"]


def to_markdown(plan: Plan, context: Context = Context()) -> str:
    """The report: status, findings (errors first) with fixes, waves, moves, not onboarded, graph."""
    out = ["### 🌊 flux-wave-bot", "", status(plan, context)]
    if context.note:
        out += ["", context.note]
    findings = [f for f in plan.findings if f.code not in OWN_SECTION]
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
    gating = _gating(plan)
    if gating:
        out += [f"#### {GATING_TITLE}", "", "<details><summary>Units that wait for others they do not need "
                f"({len(gating)} wave {'boundary' if len(gating) == 1 else 'boundaries'})</summary>", ""]
        for f in gating:
            out += _finding(f)
        out += ["", "</details>", ""]
    pending = [f"{code(n)} (wave {plan.graph.nodes[n].wave})" for n in plan.not_onboarded()]
    if pending:
        out += ["#### Computed, not onboarded", "", ", ".join(pending), ""]
    if plan.waves:
        out += _mermaid(plan)
    return "\n".join(out).rstrip() + "\n"


def error_markdown(exc: WaveBotError) -> str:
    """The report when the repository cannot be read: what is wrong, where, and how to fix it."""
    where = f" in {code(exc.location())}" if exc.path else ""
    out = ["### 🌊 flux-wave-bot", "", f"🛑 **cannot compute the waves**: an input error{where}", "",
           f"> {escape(exc.message)}"]
    if exc.hint:
        out += ["", f"How to fix: {escape(exc.hint)}"]
    out += ["", "Nothing was changed. Push a fix and wave-bot runs again."]
    return "\n".join(out) + "\n"


def render(plan: Plan, fmt: str, applied: bool = False) -> str:
    if fmt == "json":
        return to_json(plan)
    if fmt == "markdown":
        return to_markdown(plan, Context(applied=applied))
    return to_text(plan, applied)
