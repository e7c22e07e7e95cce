"""Findings gathered into the things a reviewer acts on: one moved file, one new wave, one overlay.

The grouping reads only the keys every Finding carries (`path`, `wave`, `overlay`, `resource`), never
a list of codes, so a finding added tomorrow is grouped by the same rules:

- **wave**: a finding about a whole wave (a `wave` and a `resource`, no `path` or `overlay`, such as
  `new-deepest-wave`) gathers every finding about the same wave and resource (its base entry, each
  overlay's decryption): the head's fix is shown once, a member's only when the head's lacks it.
- **overlay**: the remaining findings about one overlay.
- **file**: the remaining findings of one code about one file (the objects of a moved file).

Wording the members share is said once: the words every member's message opens and closes with
(each member's own resource name taken out first) become the group's lead and tail, and each
member keeps only what is its own, so a file's four objects read as one safe procedure and four
consequences instead of four copies of the procedure.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from bot.model import SEVERITY_RANK, Finding, Severity

By = Literal["file", "wave", "overlay", "finding"]
_HOLE = "\x00"  # stands for the member's own resource name while messages are compared
_CLAUSE_END = (":", ";", ",")
_CONJUNCTIONS = ("so", "and", "but", "because", "since")
_MIN_SHARED = 0.3  # below this share of common words, members keep their whole messages


@dataclass(frozen=True)
class Item:
    """One member of a group, with only the words that are its own."""

    label: str  # its resource (or code) as the reader knows it
    text: str  # what is particular to it; the whole message when nothing is shared
    finding: Finding
    fix: str | None  # None when the group's fix covers it


@dataclass(frozen=True)
class Group:
    """One thing the reviewer acts on."""

    by: By
    key: str  # the file, wave number, overlay or (for a single finding) its code
    lead: str  # the sentence that heads the group: the shared opening, or the one message
    items: tuple[Item, ...]  # the members, worst first; empty for a single finding
    tail: str  # the shared closing (a safe procedure, a hint), said once
    fix: str | None  # the fix that clears every member, when there is one
    findings: tuple[Finding, ...]  # every finding the group holds (the head first)

    @property
    def severity(self) -> Severity:
        return min((f.severity for f in self.findings), key=SEVERITY_RANK.__getitem__)

    @property
    def code(self) -> str:
        return self.findings[0].code

    @property
    def location(self) -> str | None:
        """Where a single finding's fix goes (`path:line`), when its message does not say it already:
        the tier checks' messages name Kustomizations, not the file that declares them."""
        f = self.findings[0]
        if self.by != "finding" or not f.path or f.path in f.message:
            return None
        return f"{f.path}:{f.line}" if f.line else f.path

    @property
    def codes(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(f.code for f in self.findings))

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for f in self.findings:
            out[f.severity] = out.get(f.severity, 0) + 1
        return out

    def to_json(self, index: dict[Finding, int]) -> dict[str, Any]:
        """The group for `--format json`: the members as indexes into the top-level `findings`."""
        out: dict[str, Any] = {"by": self.by, "key": self.key, "code": self.code, "severity": self.severity,
                               "summary": self.lead}
        if self.tail:
            out["tail"] = self.tail
        if self.fix is not None:
            out["fix"] = self.fix
        out["findings"] = [index[f] for f in self.findings]
        return out


def group_findings(findings: Iterable[Finding]) -> list[Group]:
    """Every finding in exactly one group; groups worst first, then in the findings' own order."""
    pending = list(dict.fromkeys(findings))
    groups: list[Group] = []

    def take(members: Sequence[Finding]) -> list[Finding]:
        for f in members:
            pending.remove(f)
        return list(members)

    for head in [f for f in pending if f.wave is not None and f.resource and not f.path and not f.overlay]:
        if head not in pending:
            continue
        members = [f for f in pending if f is not head and f.wave == head.wave and f.resource == head.resource]
        if members:
            take([head, *members])
            groups.append(_wave_group(head, members))
    by_overlay: dict[str, list[Finding]] = {}
    for f in pending:
        if f.overlay:
            by_overlay.setdefault(f.overlay, []).append(f)
    groups += [_factored("overlay", key, take(members)) for key, members in by_overlay.items() if len(members) > 1]
    by_file: dict[tuple[str, str], list[Finding]] = {}
    for f in pending:
        if f.path:
            by_file.setdefault((f.code, f.path), []).append(f)
    groups += [_factored("file", key[1], take(members)) for key, members in by_file.items() if len(members) > 1]
    groups += [single(f) for f in pending]
    order = {f: i for i, f in enumerate(dict.fromkeys(findings))}
    return sorted(groups, key=lambda g: (SEVERITY_RANK[g.severity], min(order[f] for f in g.findings)))


def single(f: Finding) -> Group:
    """A finding in a group of its own."""
    return Group("finding", f.code, f.message, (), "", f.fix, (f,))


def _worst_first(findings: Sequence[Finding]) -> list[Finding]:
    return sorted(findings, key=lambda f: SEVERITY_RANK[f.severity])  # stable: keeps the findings' order


def _wave_group(head: Finding, members: Sequence[Finding]) -> Group:
    covered = head.fix or ""
    items = tuple(
        Item(f.code, f.message, f, None if f.fix and f.fix.strip() in covered else f.fix)
        for f in _worst_first(members)
    )
    return Group("wave", str(head.wave), head.message, items, "", head.fix, (head, *(i.finding for i in items)))


def _factored(by: By, key: str, members: Sequence[Finding]) -> Group:
    ordered = _worst_first(members)
    words = [_with_hole(f).split(" ") for f in ordered]
    if all(w == words[0] for w in words):  # one message for all: it is the lead, the members are listed
        items = tuple(Item(_label(f), "", f, None if len({g.fix for g in ordered}) == 1 else f.fix) for f in ordered)
        fixes = {f.fix for f in ordered}
        return Group(by, key, _lead(" ".join(words[0]), len(ordered)), items, "",
                     fixes.pop() if len(fixes) == 1 else None, tuple(ordered))
    prefix = _cut_prefix(_common_prefix(words))
    shortest = min(len(w) for w in words)
    common_end = _common_prefix([list(reversed(w[len(prefix):])) for w in words])[::-1]
    suffix = _cut_suffix(common_end[len(common_end) - (shortest - len(prefix)):] if len(common_end) > shortest - len(
        prefix) else common_end, words)
    shared = (len(prefix) + len(suffix)) / (sum(len(w) for w in words) / len(words))
    fixes = {f.fix for f in ordered}
    fix = fixes.pop() if len(fixes) == 1 else None
    if shared < _MIN_SHARED:
        items = tuple(Item(_label(f), f.message, f, None if fix else f.fix) for f in ordered)
        return Group(by, key, f"{len(ordered)} findings", items, "", fix, tuple(ordered))
    items = tuple(
        Item(_label(f), _fill(" ".join(w[len(prefix): len(w) - len(suffix)]), f.resource or ""), f,
             None if fix else f.fix)
        for f, w in zip(ordered, words, strict=True)
    )
    lead = _lead(" ".join(prefix), len(ordered))
    tail = _fill(" ".join(suffix), _listed([f.resource or "it" for f in ordered]))  # which objects, by name
    return Group(by, key, lead, items, tail, fix, tuple(ordered))


def _with_hole(f: Finding) -> str:
    text = " ".join(f.message.split())
    if not f.resource:
        return text
    # Only where the name stands alone: inside a path (`./apps/db/postgres/app` for `db/postgres`)
    # or a longer name it is part of that text, and a hole there would read "each of these N objects".
    return re.sub(rf"(?<![\w./-]){re.escape(f.resource)}(?![\w/-]|\.\w)", _HOLE, text)


def _listed(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _fill(text: str, name: str) -> str:
    return text.replace(_HOLE, name)


def _label(f: Finding) -> str:
    return f.resource or f.path or f.code


def _lead(prefix: str, count: int) -> str:
    """The shared opening, the hole read as 'each of these N objects', ending on a colon."""
    if not prefix:
        return f"{count} findings:"
    if prefix.startswith(_HOLE):
        prefix = f"Each of these {count} objects" + prefix[len(_HOLE):]
    prefix = prefix.replace(_HOLE, f"each of these {count} objects")
    return prefix.rstrip(":;,") + ":"


def _common_prefix(lists: Sequence[Sequence[str]]) -> list[str]:
    out: list[str] = []
    for column in zip(*lists, strict=False):
        if any(word != column[0] for word in column):
            break
        out.append(column[0])
    return out


def _cut_prefix(words: list[str]) -> list[str]:
    """Back to the end of the last whole clause, so no member's text starts mid-clause."""
    for i in range(len(words), 0, -1):
        word = words[i - 1]
        if word.endswith(_CLAUSE_END) or word in _CONJUNCTIONS:
            return words[:i]
    return []


def _cut_suffix(suffix: list[str], messages: Sequence[Sequence[str]]) -> list[str]:
    """Forward to the start of a sentence: the shared closing begins with a capital, after a full
    stop or semicolon in every message."""
    for i, word in enumerate(suffix):
        starts = [len(m) - len(suffix) + i for m in messages]
        after_stop = all(s > 0 and m[s - 1].endswith((".", ";")) for m, s in zip(messages, starts, strict=True))
        if word[:1].isupper() and after_stop:
            return suffix[i:]
    return []
