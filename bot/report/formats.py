"""Turning a Plan into what people read: a text table, JSON, and the markdown report.

One markdown renderer serves `--format markdown`, the PR comment and the job summary. Every string
that comes from the repository (file names, resource names, messages quoting them) is escaped, so a
hostile name renders as inert text: never a link, an image, HTML or an @-mention.
"""
from __future__ import annotations

import json
import re
import textwrap
from dataclasses import dataclass
from typing import Any

from bot.checks.codes import OWN_SECTION, TIER
from bot.checks.tiers import all_codes
from bot.config import CONFIG_FILE
from bot.errors import WaveBotError
from bot.model import Finding
from bot.plan import Plan
from bot.report.groups import Group, group_findings, single
from bot.report.headline import headline, objects_of, quoted, split_step, why
from bot.report.markup import code, escape, fence, inline
from bot.side import Side, Slot, number, order

SEVERITY_ICON = {"error": "🛑", "warning": "⚠️", "info": "ℹ️"}
# Past these a report stops being readable, and a large repository would blow GitHub's limits
# (65,536 characters a comment, 1 MiB a job summary): lists are cut with a count of the rest.
MERMAID_NODE_LIMIT = 150
MERMAID_EDGE_LIMIT = 400
CELL_LIMIT = 60  # names in one table cell
ROW_LIMIT = 200  # rows of the moves table


GATING_TITLE = "Gating worth knowing about"
# OWN_SECTION (checks/codes.py): info findings shown in a section of their own, not among the findings.


TIERS_TITLE = "Tiers"
TIER_CODES = frozenset(all_codes()) | TIER
"""The tier checks' findings: shown in a section of their own, the ones the change introduces first."""
TIER_STYLE = "stroke:#d1242f,stroke-width:3px"


def _tiers(plan: Plan) -> tuple[list[Finding], list[Finding]]:
    """The tier findings the change introduces, and those already at the base (none without a base)."""
    found = [f for f in plan.findings if f.code in TIER_CODES]
    report = plan.tier_report
    if report is None:
        return found, []
    return [f for f in found if report.introduced(f)], [f for f in found if not report.introduced(f)]


def _tier_parts(plan: Plan) -> list[tuple[str, list[Finding]]]:
    """(heading, findings) of the tier section: one part without a base, else new ones first."""
    new, old = _tiers(plan)
    if plan.tier_report is None or plan.tier_report.base is None:
        return [("", new)] if new else []
    return [(title, part) for title, part in (("Introduced by this change", new), ("Already there before it", old))
            if part]


def _gating(plan: Plan, asked: bool = False) -> list[Finding]:
    """The gating advice worth showing: on request (`--gating`) every boundary's; else only that of a
    boundary whose membership the change touches (a file changes wave or side branch, so a unit
    joins or leaves one; a new wave). A plan that changes nothing there repeats no standing advice."""
    found = [f for f in plan.findings if f.code == "chain-gating"]
    if asked or not found:
        return found
    touched = {number(s) for _, before, after in plan.wave_moves() for s in (before, after) if s is not None}
    touched |= {number(n) for n in _changed(plan)[1]}
    return [f for f in found if f.wave is not None and {number(f.wave) - 1, number(f.wave)} & touched]


def _unit_files(plan: Plan) -> dict[Slot, list[tuple[str, list[str]]]]:
    """Wave (or side branch) -> [(unit, its file names, main manifest first)]."""
    by_unit: dict[tuple[Slot, str], list[str]] = {}
    for file in plan.files:
        if file.target_wave is not None:
            by_unit.setdefault((file.target_wave, file.node or "(unplaced)"), []).append(
                f"{file.name}/" if file.is_dir else file.name)
    out: dict[Slot, list[tuple[str, list[str]]]] = {n: [] for n in plan.slots}
    for (wave, unit), names in sorted(by_unit.items(), key=lambda item: (order(item[0][0]), item[0][1])):
        out[wave].append((unit, sorted(names, key=lambda name: (len(name.split(".")[0]), name))))
    return out


# ---- the status line --------------------------------------------------------------------------

_VERBS = {"move": ("to move", "moved"), "create": ("to create", "created"),
          "update": ("to update", "updated"), "delete": ("to delete", "deleted")}


@dataclass(frozen=True)
class Status:
    """The verdict every format opens with. `state` matches `wave-bot check`: it exits 1 exactly when
    the state is `needs-attention` (an error) or `out-of-date` (changes not yet applied)."""

    state: str  # needs-attention | out-of-date | regenerated | up-to-date
    headline: str  # e.g. "needs attention"
    detail: str  # the counts: "3 errors, 1 warning; 2 files to move, 1 to create"
    errors: int
    warnings: int
    changes: dict[str, int]
    by: str = ""  # " by wave-bot in <commit>", after the headline when the bot regenerated

    def text(self) -> str:
        return f"{self.headline}{self.by}: {self.detail}" if self.detail else f"{self.headline}{self.by}"

    def to_json(self) -> dict[str, Any]:
        return {"state": self.state, "text": self.text(), "errors": self.errors, "warnings": self.warnings,
                "changes": self.changes}


def plan_status(plan: Plan, applied: bool = False, commit: str | None = None) -> Status:
    errors = sum(f.severity == "error" for f in plan.findings)
    warnings = sum(f.severity == "warning" for f in plan.findings)
    changes: dict[str, int] = {}
    for change in plan.changes:
        changes[change.action] = changes.get(change.action, 0) + 1
    done = applied or commit is not None
    changes = {action: changes[action] for action in _VERBS if action in changes}
    files = [f"{n} {_VERBS[action][done]}" for action, n in changes.items()]
    if files:
        files[0] = files[0].replace(" ", " file " if files[0].startswith("1 ") else " files ", 1)
    file_text = ", ".join(files)
    finding_text = ", ".join(p for p in (_plural(errors, "error"), _plural(warnings, "warning")) if p)
    by = f" by wave-bot in {commit[:12]}" if commit else ""
    if errors:
        detail = "; ".join(p for p in (finding_text, f"{file_text}{by}" if file_text else "") if p)
        return Status("needs-attention", "needs attention", detail, errors, warnings, changes)
    if changes and not done:
        detail = "; ".join(p for p in (file_text, finding_text) if p)
        return Status("out-of-date", "out of date", detail, errors, warnings, changes)
    if changes or commit:
        detail = "; ".join(p for p in (file_text, finding_text) if p)
        return Status("regenerated", "regenerated", detail, errors, warnings, changes, by)
    detail = f"{finding_text} to review" if finding_text else ""
    if plan.mode.review:  # nothing is laid out: the change was reviewed
        checked = plan.tier_report is not None and plan.tier_report.base is not None
        quiet = ("nothing this change makes Flux delete" if checked else
                 "no deployed revision given (--base), so deletions are not checked")
        return Status("up-to-date", "reviewed", detail or quiet, errors, warnings, changes)
    if not plan.graph.nodes:
        detail = f"no ServiceDefinition in {plan.config.catalog_dir}/"
    return Status("up-to-date", "up to date", detail, errors, warnings, changes)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}" if n else ""


def _reported(plan: Plan) -> list[Finding]:
    # shown in sections of their own
    return [f for f in plan.findings if f.code not in OWN_SECTION and f.code not in TIER_CODES]


# ---- text ---------------------------------------------------------------------------------------

TEXT_WIDTH = 80  # when the output is not a terminal


def _wrap(text: str, width: int, first: str, rest: str) -> list[str]:
    return textwrap.wrap(text, width=max(width, len(rest) + 20), initial_indent=first, subsequent_indent=rest,
                         break_long_words=False, break_on_hyphens=False) or [first.rstrip()]


def _text_fix(fix: str, indent: str) -> list[str]:
    """A fix as it is pasted: never wrapped, every line indented under its finding."""
    return [f"{indent}fix:"] + [f"{indent}  {row}".rstrip() for row in fix.rstrip("\n").splitlines()]


OBJECTS_SHOWN = 20  # objects listed under one finding; the rest are counted


def _headline(group: Group) -> str:
    """A group's headline: from its findings' code and objects, else from the words they share."""
    return headline(group.findings, None if group.by == "finding" else group.lead)


def _why_and_step(group: Group) -> tuple[list[tuple[str, str]], str]:
    """The group's why as (label, text) rows (label "" for prose) and its step (the objects and the
    file it names in code format), lifted out of the shared closing (or of the one message)."""
    rows, step = _why_and_raw_step(group)
    return rows, quoted(step, objects_of(group.findings), group.findings[0].path)


def _why_and_raw_step(group: Group) -> tuple[list[tuple[str, str]], str]:
    if group.by == "finding":
        rest, step = split_step(why(group.findings[0]))
        return [("", rest)], step
    tail, step = split_step(group.tail) if group.tail else ("", "")
    if group.by == "wave":
        head_why, head_step = split_step(group.lead)
        rows = [("", head_why), *((i.finding.code, i.finding.message) for i in group.items)]
        return rows, step or head_step
    lead = group.lead
    if not step and not any(i.text for i in group.items):  # one message for all: its step is in the lead
        lead, step = split_step(lead.rstrip(":"))
    rows = [("", lead), *((i.label, i.text) for i in group.items if i.text), *([("", tail)] if tail else [])]
    return rows, step


def _text_group(group: Group, width: int, fixes: bool) -> list[str]:
    """Headline, the objects at risk, the step, the fix; then the why, indented."""
    where = {"file": f" ({group.key})", "overlay": f" ({group.key})", "wave": f" (wave {group.key})"}.get(group.by, "")
    where = f" ({group.location})" if group.location else where
    indent = " " * 10
    out = _wrap(f"{group.code}{where}: {_headline(group)}", width, f"  {group.severity:<7} ", indent)
    objects = objects_of(group.findings)
    if len(objects) > 1 or any(o.loses_data for o in objects):
        for o in objects[:OBJECTS_SHOWN]:
            out.append(f"{indent}- {o}{' (loses data)' if o.loses_data else ''}")
        if len(objects) > OBJECTS_SHOWN:
            out.append(f"{indent}- … and {len(objects) - OBJECTS_SHOWN} more")
    if group.by == "wave":
        for item in group.items:
            out += _wrap(f"{item.finding.code} ({item.finding.severity}): {headline([item.finding])}", width,
                         indent + "- ", indent + "  ")
            if fixes and item.fix:
                out += _text_fix(item.fix, indent + "  ")
    rows, step = _why_and_step(group)
    if step:
        out += _wrap(step, width, indent + "next: ", indent + "  ")
    if fixes and group.fix:
        out += _text_fix(group.fix, indent)
    for item in group.items if fixes and group.by != "wave" else ():
        if item.fix:  # no one fix clears them all: each member's under its name
            out += [f"{indent}- {item.label}:", *_text_fix(item.fix, indent + "  ")]
    for label, text in rows:
        if text:
            out += _wrap(f"{label}: {text}" if label else text, width, indent + "why: " if not label else indent + "- ",
                         indent + "  ")
    return out


def to_text(plan: Plan, applied: bool = False, width: int = TEXT_WIDTH, fixes: bool = True,
            gating: bool = False) -> str:
    """The terminal and pre-commit report: status, waves, changes, then every finding with its fix."""
    lines = [f"wave-bot: {plan_status(plan, applied).text()}", ""]
    note = review_note(plan, applied) if plan.mode.review else catalog_note(plan)
    if note:
        lines += [*_wrap(note, width, "", ""), ""]
    lines += _text_table(plan, width)
    if plan.split is not None:
        lines += [*([""] if plan.slots else []), f"{SPLIT_TITLE}:", *_text_table(plan.split, width)]
    pending = [f"{n} (wave {plan.graph.nodes[n].wave})" for n in plan.not_onboarded()]
    if pending:
        lines += [""] + _wrap("Computed, not placed (no app files yet): " + ", ".join(pending), width, "", "  ")
    advice = _gating(plan, gating)
    if advice:
        lines += ["", f"{GATING_TITLE}:"]
        for f in advice:
            lines += _wrap(f.message, width, "  ", "    ")
            if fixes and f.fix:
                lines += _text_fix(f.fix, "    ")
    lines.append("")
    held = sum(f.code == "move-held" for f in plan.findings)
    if plan.changes:
        lines.append(f"{len(plan.changes)} change(s) {'applied' if applied else 'to apply'}:")
        for change in plan.changes:
            arrow = f"{change.source} -> {change.path}" if change.source else change.path
            lines.append(f"  {change.action:<7} {arrow}")
    elif plan.mode.review:
        pass  # the review note says it writes nothing
    elif held:
        lines.append(f"No file to move, create, update or delete now: {held} move(s) wait until their "
                     "objects are protected (move-held below).")
    else:
        lines.append("No file to move, create, update or delete: the wave layout matches "
                     f"{_declarations(plan)}.")
    findings = _reported(plan)
    if findings:
        lines += ["", "Findings:"]
        for group in group_findings(findings):
            lines += _text_group(group, width, fixes)
    parts = _tier_parts(plan)
    if parts:
        lines += ["", f"{TIERS_TITLE} (every Flux Kustomization each cluster entrypoint applies):"]
    for title, part in parts:
        lines += [f"  {title}:"] if title else []
        for group in group_findings(part):
            lines += _text_group(group, width, fixes)
    return "\n".join(lines) + "\n"


SPLIT_TITLE = "The waves step 2 of the cutover will produce (this change moves nothing)"


def _text_table(plan: Plan, width: int) -> list[str]:
    rows = [("wave", "unit", "files")]
    for n, units in _unit_files(plan).items():
        if not units:
            rows.append((str(n), "(empty)", ""))
        for i, (unit, names) in enumerate(units):
            rows.append((str(n) if i == 0 else "", unit, ", ".join(names)))
    if len(rows) == 1:
        return []
    lines = []
    w = [max(len(r[i]) for r in rows) for i in range(2)]
    for wave, unit, files in rows:
        lines += _wrap(files, width, f"{wave:<{w[0]}}  {unit:<{w[1]}}  ", " " * (w[0] + w[1] + 4))
    return lines


def _declarations(plan: Plan) -> str:
    declared = plan.graph.declared_in(plan.config)
    return f"the dependencies in {declared}" if declared else "the catalog"


def catalog_note(plan: Plan) -> str | None:
    """What a report says first when the catalog places nothing: that it is empty, or which services
    it read and that none has app files yet. Without it, an empty table (or a list of unplaced files)
    reads as if wave-bot had not found the catalog at all."""
    if plan.mode.review:
        return review_note(plan)
    if not plan.graph.nodes:
        return _empty_catalog(plan)
    if any(f.node is not None for f in plan.files):
        return None
    services = [name for name, node in plan.graph.nodes.items() if node.origin == "service"]
    names = ", ".join(services[:CELL_LIMIT]) + (f" and {len(services) - CELL_LIMIT} more"
                                                 if len(services) > CELL_LIMIT else "")
    first = services[0] if services else '<service>'
    example = ", ".join(f"{first}{suffix}.yaml" for suffix in plan.config.file_suffixes)
    declared = plan.graph.declared_in(plan.config)
    read = (f"{_plural(len(services), 'unit')} from the dependencies in {declared}" if declared
            else f"{_plural(len(services), 'ServiceDefinition')} in {plan.config.catalog_dir}/")
    return (f"Read {read} ({names}); none has app files in {plan.config.apps_dir}/ yet, so no wave has anything "
            f"in it. An app file belongs to a service by its name ({example}), a directory by its very name "
            f"({first}/)")


def review_note(plan: Plan, applied: bool = False) -> str:
    """What a report in review mode says first: which mode ran, why, and that it writes nothing."""
    wrote = "`apply` wrote nothing: " if applied else ""
    return (f"Review mode ({plan.mode.reason}). {wrote}Review mode writes no file: it reports what this change "
            "makes Flux delete, then the problems of the Flux Kustomizations (dependsOn, paths, substitution, "
            "decryption, CRDs)")


def _empty_catalog(plan: Plan) -> str:
    where, _ = plan.config.where("catalog_dir")
    setting = f"catalog_dir is set in {where}" if where else f"the default catalog_dir; set it in {CONFIG_FILE}"
    unplaced = sum(f.node is None for f in plan.files)
    outcome = (f"so none of the {unplaced} app file(s) below can be placed" if unplaced else
               "so there are no waves")
    return (f"No ServiceDefinition in {plan.config.catalog_dir}/ ({setting}): wave-bot read every *.yaml file "
            f"there and found none, {outcome}. Add one file per service (kind: ServiceDefinition, "
            f"metadata.name, spec.dependencies), or declare the units under dependencies in {CONFIG_FILE}")


def to_json(plan: Plan, applied: bool = False) -> str:
    """`plan.to_json()` with the status first and the groups the other formats show (keys only added)."""
    body = plan.to_json()
    for f, out in zip(plan.findings, body["findings"], strict=True):
        out["headline"] = headline([f])
    index = {f: i for i, f in enumerate(plan.findings)}
    groups = [_group_json(g, index) for g in group_findings(_reported(plan))]
    new, old = _tiers(plan)
    tiers = {"groups": [_group_json(g, index) for _, part in _tier_parts(plan) for g in group_findings(part)],
             "introduced": [index[f] for f in new], "already_at_base": [index[f] for f in old]}
    if plan.tier_report is not None:
        tiers["graph"] = {"nodes": list(plan.tier_report.nodes),
                          "edges": [{"from": a, "dependsOn": b} for a, b in plan.tier_report.edges]}
    if plan.split is not None:  # cutover step 1: where step 2 puts every file
        body["split"] = {"waves": list(plan.split.waves), "placement": {
            str(n): paths for n, paths in plan.split.placement().items()}}
    return json.dumps({"status": plan_status(plan, applied).to_json(), **body, "groups": groups, "tiers": tiers},
                      indent=2) + "\n"


def _group_json(group: Group, index: dict[Finding, int]) -> dict[str, Any]:
    """A group as JSON, with its headline and every object its findings are about."""
    out = {"headline": _headline(group), **group.to_json(index)}
    objects = objects_of(group.findings)
    if objects:
        out["objects"] = [o.to_json() for o in objects]
    return out


def error_json(exc: WaveBotError) -> str:
    """An input error for `--format json`: the same four fields whatever went wrong."""
    return json.dumps({"error": {"message": exc.message, "path": exc.path, "line": exc.line, "hint": exc.hint}},
                      indent=2) + "\n"


@dataclass(frozen=True)
class Context:
    """What the caller did with the plan, for the status line and extra sections."""

    applied: bool = False
    commit: str | None = None  # the commit in which wave-bot regenerated the layout
    diff: str | None = None  # a change the bot could not push (fork PRs): shown collapsed
    apply_hint: str | None = None  # how to apply `diff` locally
    note: str | None = None  # one more plain sentence under the status (trusted text)
    gating: bool = False  # show every wave boundary's chain-gating advice, touched by the change or not


_STATUS_ICON = {"needs-attention": "🛑", "out-of-date": "🔄", "regenerated": "🔄", "up-to-date": "✅"}


def status(plan: Plan, context: Context) -> str:
    st = plan_status(plan, context.applied, context.commit)
    icon = "⚠️" if st.state == "up-to-date" and st.warnings else _STATUS_ICON[st.state]
    return f"{icon} **{st.headline}**{st.by}" + (f": {st.detail}" if st.detail else "")


def _md_fix(fix: str, indent: str, severity: str) -> list[str]:
    # An info's "fix" is a next step or a suggestion (commands, a config snippet), not a repair.
    summary = "What to do" if severity == "info" else "How to fix"
    out = ["", f"{indent}<details><summary>{summary}</summary>", ""]
    out += [indent + row if row else "" for row in fence(fix, "yaml" if ":" in fix else "").splitlines()]
    return out + ["", f"{indent}</details>"]


LOSES_DATA = "💾"


def _md_group(group: Group, where: str | None = None) -> list[str]:
    """One finding (or group) in a glance: the headline, the objects at risk (data loss first), the
    step and the fix; the why collapsed."""
    if where is not None:  # the caller says where
        pass
    elif group.by == "wave":
        where = f" for wave {group.key}"
    elif group.by in ("file", "overlay"):
        where = f" in {code(group.key)}"
    else:
        where = f" in {code(group.location)}" if group.location else ""
    out = [f"- {SEVERITY_ICON[group.severity]} **{group.severity}** {code(group.code)}{where}: "
           f"{inline(_headline(group))}"]
    objects = objects_of(group.findings)
    if len(objects) > 1 or any(o.loses_data for o in objects):
        out += [f"  - {LOSES_DATA + ' ' if o.loses_data else ''}{code(str(o))}{' (data loss)' if o.loses_data else ''}"
                for o in objects[:OBJECTS_SHOWN]]
        if len(objects) > OBJECTS_SHOWN:
            out.append(f"  - … and {len(objects) - OBJECTS_SHOWN} more")
    if group.by == "wave":
        for item in group.items:
            out.append(f"  - {SEVERITY_ICON[item.finding.severity]} {code(item.finding.code)}: "
                       f"{inline(headline([item.finding]))}")
            if item.fix:
                out += _md_fix(item.fix, "    ", item.finding.severity)
    rows, step = _why_and_step(group)
    if step:
        out += ["", f"  **{'Next' if group.severity == 'info' else 'Safe step'}:** {inline(step)}"]
    if group.fix:
        out += _md_fix(group.fix, "  ", group.severity)
    own = [item for item in group.items if item.fix] if group.by != "wave" else []
    if own:  # no one fix clears them all: each member's under its name
        out.append("")
    for item in own:
        out.append(f"  - {SEVERITY_ICON[item.finding.severity]} {code(item.label)}")
        out += _md_fix(item.fix or "", "    ", item.finding.severity)
    reasons = [(label, text) for label, text in rows if text]
    if reasons:
        out += ["", "  <details><summary>Why</summary>"]
        for label, text in reasons:  # prose a paragraph, an object's own part an item of a list
            out += ["", f"  - {code(label)}: {inline(text)}"] if label else ["", f"  {inline(text)}"]
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
    dirs = {f.name for f in plan.files if f.is_dir}
    for name, before, after in moves[:ROW_LIMIT]:
        origin = f"wave {before}" if before is not None else "new"
        out.append(f"| {code(name + '/' if name in dirs else name)} | {origin} | wave {after} |")
    if len(moves) > ROW_LIMIT:
        out.append(f"| … and {len(moves) - ROW_LIMIT} more | | |")
    return out + [""]


def _mermaid_id(n: Slot) -> str:
    return f"s{n.wave}" if isinstance(n, Side) else f"w{n}"


def _writes(plan: Plan) -> list[str]:
    """The generated files the plan creates, updates or deletes, listed like the moves."""
    writes = [c for c in plan.changes if c.action != "move"]
    if not writes:
        return []
    verb = {"create": "create", "update": "update", "delete": "delete"}
    out = ["#### Files wave-bot writes", "", "| file | change |", "|---|---|"]
    out += [f"| {code(c.path)} | {verb[c.action]} |" for c in writes[:ROW_LIMIT]]
    if len(writes) > ROW_LIMIT:
        out.append(f"| … and {len(writes) - ROW_LIMIT} more | |")
    return out + [""]


MOVED_STYLE = "fill:#fde68a,stroke:#b45309,stroke-width:2px"
NEW_WAVE_STYLE = "stroke:#b45309,stroke-width:3px,stroke-dasharray:6 3"


def _changed(plan: Plan) -> tuple[dict[str, Slot | None], set[Slot]]:
    """The units whose files change wave (-> the wave they leave; None: new to the waves), and the
    waves this plan creates."""
    unit_of = {f.name: f.node for f in plan.files if f.node is not None}
    moved: dict[str, Slot | None] = {}
    for name, before, _ in plan.wave_moves():
        unit = unit_of.get(name)
        if unit is not None:
            moved.setdefault(unit, before)
    created = {c.path for c in plan.changes if c.action == "create"}
    return moved, {n for n in plan.slots if plan.config.wave_cr_path(n) in created}


def _mermaid(plan: Plan) -> list[str]:
    """Waves bottom-up, each wave's arrow from the one below; a side branch hangs off the wave its
    own wave depends on by a dotted arrow, and no arrow leaves it: it gates nobody. Moved units and
    new waves stand out."""
    units = _unit_files(plan)
    moved, new_waves = _changed(plan)
    placed = [unit for n in plan.slots for unit, _ in units[n] if unit != "(unplaced)"]
    if len(placed) > MERMAID_NODE_LIMIT:  # too many to draw: draw the waves with their sizes
        placed = []
    ids = {unit: f"u{i}" for i, unit in enumerate(placed)}  # ids, not names: `end` is a keyword
    lines = ["flowchart BT"]
    for n in plan.slots:
        count = len([unit for unit, _ in units[n] if unit != "(unplaced)"])
        new = " (new)" if n in new_waves else ""
        title = f"wave {n.wave} side (non-gating)" if isinstance(n, Side) else f"wave {n}"
        node = _mermaid_id(n)
        lines.append(f'  subgraph {node}["{title}{new}"]' if ids else f'  {node}["{title}: {count} units{new}"]')
        if ids:
            members = [f'    {ids[unit]}["{unit}{_moved_note(moved, unit)}"]' for unit, _ in units[n] if unit in ids]
            lines += members or [f'    e{node.removeprefix("w")}[" "]']
            lines.append("  end")
    edges = [(ids[d], ids[name]) for name, node in plan.graph.nodes.items() if name in ids
             for d in node.dependencies if d in ids]
    if len(edges) <= MERMAID_EDGE_LIMIT:
        lines += [f"  {a} --> {b}" for a, b in edges]
    lines += [f"  w{n - 1} ==> w{n}" for n in plan.waves[1:]]
    lines += [f"  w{s.wave - 1} -.-> s{s.wave}" for s in plan.sides if s.wave - 1 in plan.waves]
    marked = [ids[u] for u in moved if u in ids]
    if marked:
        lines += [f"  classDef moved {MOVED_STYLE}", f"  class {','.join(marked)} moved"]
    lines += [f"  style {_mermaid_id(n)} {NEW_WAVE_STYLE}" for n in sorted(new_waves, key=order)]
    return ["<details><summary>Wave graph</summary>", "", fence("\n".join(lines), "mermaid"), "", "</details>"]


def _tier_mermaid(plan: Plan) -> list[str]:
    """Every tier bottom-up, an arrow from each dependency to its dependent; the tiers a finding is
    about, and dependsOn targets no entrypoint applies, stand out."""
    report = plan.tier_report
    if report is None:
        return []
    names = list(report.nodes)
    missing = sorted({b for _, b in report.edges if b not in report.nodes})
    ids = {name: f"t{i}" for i, name in enumerate(names)}  # ids, not names: `end` is a keyword
    ids |= {name: f"m{i}" for i, name in enumerate(missing)}
    lines = ["flowchart BT"]
    lines += [f'  {ids[n]}["{_label(n)}"]' for n in names[:MERMAID_NODE_LIMIT]]
    lines += [f'  {ids[n]}["{_label(n)} (applied by no entrypoint)"]' for n in missing[:MERMAID_NODE_LIMIT]]
    drawn = set(names[:MERMAID_NODE_LIMIT]) | set(missing[:MERMAID_NODE_LIMIT])
    edges = [(ids[b], ids[a]) for a, b in report.edges if a in drawn and b in drawn]
    lines += [f"  {a} --> {b}" for a, b in edges[:MERMAID_EDGE_LIMIT]]
    marked = [ids[n] for n in [*names, *missing] if n in drawn and (n in report.broken or n in missing)]
    if marked:
        lines += [f"  classDef broken {TIER_STYLE}", f"  class {','.join(marked)} broken"]
    return ["<details><summary>Tier graph</summary>", "", fence("\n".join(lines), "mermaid"), "", "</details>"]


def _label(name: str) -> str:
    # Names come from the repository: only what a Kubernetes name may hold reaches the diagram.
    return re.sub(r"[^A-Za-z0-9._/-]", "_", name)


def _moved_note(moved: dict[str, Slot | None], unit: str) -> str:
    if unit not in moved:
        return ""
    before = moved[unit]
    return " (new)" if before is None else f" (from wave {before})"


def to_markdown(plan: Plan, context: Context = Context(), limit: int | None = None, overflow: str = "") -> str:
    """The report: status, findings (errors first) with fixes, waves, moves, writes, not onboarded, graph.

    With `limit` (a forge's comment size), the parts are kept in that order of importance while they
    fit: finding groups one by one (errors first), then each later section whole; what is left out
    is counted in a closing line that ends with `overflow` (where the full report is).
    """
    head = ["### 🌊 flux-wave-bot", "", status(plan, context)]
    if context.note:
        head += ["", context.note]
    note = review_note(plan, context.applied) if plan.mode.review else catalog_note(plan)
    if note:
        head += ["", escape(note)]
    records = group_findings(_reported(plan))
    groups = [_md_group(g) for g in records]
    sections: list[tuple[str, list[str]]] = []
    if context.diff is not None:
        diff = ["", "<details><summary>The regenerated layout (not pushed)</summary>", "",
                fence(context.diff, "diff"), "", "</details>"]
        sections.append(("the regenerated layout", diff + (["", context.apply_hint] if context.apply_hint else [])))
    if plan.slots:  # else the catalog note above says why there is no wave
        sections.append(("the waves", ["", "#### Waves", "", *_wave_table(plan), ""]))
    if plan.split is not None and plan.split.slots:
        sections.append(("the coming split", ["", f"#### {SPLIT_TITLE}", "", *_wave_table(plan.split), ""]))
    sections += [(title, part) for title, part in (("the moves", _moves(plan)), ("the files written", _writes(plan)))
                 if part]
    gating = _gating(plan, context.gating)
    if gating:
        gate = [f"#### {GATING_TITLE}", "", "<details><summary>Units that wait for others they do not need "
                f"({len(gating)} wave {'boundary' if len(gating) == 1 else 'boundaries'})</summary>", ""]
        for f in gating:  # one line per boundary: which one it is, the code's meaning as its headline
            gate += _md_group(single(f), f" at wave {f.wave}" if f.wave is not None else "")
        sections.append(("the gating notes", [*gate, "", "</details>", ""]))
    pending = [f"{code(n)} (wave {plan.graph.nodes[n].wave})" for n in plan.not_onboarded()]
    if pending:
        sections.append(("the services not onboarded", ["#### Computed, not onboarded", "", ", ".join(pending), ""]))
    if plan.waves:
        sections.append(("the wave graph", _mermaid(plan)))
    elif plan.split is not None and plan.split.waves:
        sections.append(("the wave graph", _mermaid(plan.split)))
    tier_parts = _tier_parts(plan)
    if any(f.severity != "info" for _, part in tier_parts for f in part):
        sections.append(("the tier graph", _tier_mermaid(plan)))
    for i, (title, part) in enumerate(tier_parts):
        intro = (["", f"#### {TIERS_TITLE}", ""] if i == 0 else [""]) + ([f"**{title}**", ""] if title else [])
        for j, group in enumerate(group_findings(part)):
            records.append(group)
            groups.append([*(intro if j == 0 else []), *_md_group(group)])
    findings_head = ["", "#### Findings", ""] if groups and groups[0][:2] != ["", f"#### {TIERS_TITLE}"] else []
    full = _join([*head, *findings_head, *(line for part in [*groups, *(p for _, p in sections)] for line in part)])
    if limit is None or len(full) <= limit:
        return full
    return _fit([*head, *findings_head], list(zip(groups, records, strict=True)), sections, limit, overflow)


def _join(lines: list[str]) -> str:
    return "\n".join(lines).rstrip() + "\n"


def _fit(head: list[str], groups: list[tuple[list[str], Group]], sections: list[tuple[str, list[str]]],
         limit: int, overflow: str) -> str:
    """The most important parts of the report that fit in `limit` characters, and what was left out."""
    budget = limit - 400 - len(overflow)  # room for the closing line
    out = list(head)
    size = len(_join(out))
    left_out: list[Group] = []
    for lines, group in groups:
        cost = len("\n".join(lines)) + 1
        if left_out or size + cost > budget:  # keep the order: no less important group jumps the queue
            left_out.append(group)
        else:
            out += lines
            size += cost
    dropped = []
    for title, part in sections:
        cost = len("\n".join(part)) + 1
        if size + cost > budget:
            dropped.append(title)
        else:
            out += part
            size += cost
    counts = {s: sum(f.severity == s for g in left_out for f in g.findings) for s in ("error", "warning", "info")}
    findings = ", ".join(_plural(n, "more " + ("info note" if s == "info" else s)) for s, n in counts.items() if n)
    sections_left = ", ".join(dropped[:-1]) + " and " + dropped[-1] if len(dropped) > 1 else "".join(dropped)
    note = f"✂️ This comment is cut to fit. Not shown: {'; '.join(p for p in (findings, sections_left) if p)}."
    return _join([*out, "", f"{note} {overflow}".rstrip()])


def error_markdown(exc: WaveBotError) -> str:
    """The report when the repository cannot be read: what is wrong, where, and how to fix it."""
    where = f" in {code(exc.location())}" if exc.path else ""
    out = ["### 🌊 flux-wave-bot", "", f"🛑 **cannot compute the waves**: an input error{where}", "",
           f"> {inline(exc.message)}"]
    if exc.hint:
        out += ["", f"How to fix: {inline(exc.hint)}"]
    out += ["", "Nothing was changed. Push a fix and wave-bot runs again."]
    return "\n".join(out) + "\n"


def render(plan: Plan, fmt: str, applied: bool = False, width: int = TEXT_WIDTH, fixes: bool = True,
           gating: bool = False) -> str:
    if fmt == "json":
        return to_json(plan, applied)
    if fmt == "markdown":
        return to_markdown(plan, Context(applied=applied, gating=gating))
    return to_text(plan, applied, width, fixes, gating)
