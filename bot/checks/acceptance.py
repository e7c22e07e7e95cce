"""Deletions taken on purpose: `.wave-bot-accept.yaml`, an explicit, auditable acknowledgement.

Each entry names one object, exactly as the findings spell it (`PersistentVolumeClaim pihole/pihole-data`),
and who accepts its deletion (`by:`, required; `reason:` optional). A finding that Flux deletes that
object (or moves it so that it is deleted and recreated) then passes as info, saying who accepted
it and where. The file is committed like any other, so the pull request shows it and git keeps who
added each line; there is no pattern and no switch for everything. An entry that matches nothing
this change deletes is reported (`stale-acceptance`): remove it once its deletion has merged.
"""
from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass

from bot.errors import WaveBotError
from bot.model import Finding
from bot.repo.tree import Tree, refuse_link
from bot.yamlio import documents as yamlio

ACCEPT_FILE = ".wave-bot-accept.yaml"
DELETING = frozenset({"resource-removed", "resource-dropped", "later-wave-move", "cross-kustomization-move",
                      "copy-removed", "namespace-deleted"})
"""The findings that say Flux deletes the object they name."""
# `[group/]Kind [namespace/]name`, as str(ResourceId) writes it: one object, never a pattern.
_RESOURCE = re.compile(r"^(?:[a-z0-9.-]+/)?[A-Za-z][A-Za-z0-9]*(?: (?:[a-z0-9.-]+/)?[a-z0-9][a-z0-9.:-]*)$")
_KEYS = frozenset({"resource", "by", "reason"})
_EXAMPLE = ("accept:\n  - resource: PersistentVolumeClaim pihole/pihole-data\n    by: alice\n"
            "    reason: pihole is retired")


@dataclass(frozen=True)
class Acceptance:
    """One accepted deletion, and where it is written."""

    resource: str
    by: str
    reason: str
    path: str
    line: int


def _bad(what: str, line: int | None) -> WaveBotError:
    return WaveBotError(what, path=ACCEPT_FILE, line=line, hint=f"write it as\n{_EXAMPLE}")


def load(tree: Tree) -> tuple[Acceptance, ...]:
    """The acceptances the tree's `.wave-bot-accept.yaml` holds; none without the file."""
    kind = tree.kind(ACCEPT_FILE)
    if kind is None:
        return ()
    if kind != "file":
        raise refuse_link(ACCEPT_FILE) if kind == "link" else _bad("is not a regular file", None)
    doc = yamlio.load_one(tree.read(ACCEPT_FILE), ACCEPT_FILE)
    if doc is None:
        return ()
    if not isinstance(doc.value, dict) or set(doc.value) != {"accept"} or not isinstance(doc.value["accept"], list):
        raise _bad("must hold one key, accept: a list of the objects whose deletion is accepted",
                   doc.info.start_line)
    out: list[Acceptance] = []
    for i, entry in enumerate(doc.value["accept"]):
        line = doc.info.line(("accept", i))
        if not isinstance(entry, dict) or set(entry) - _KEYS:
            extra = sorted(map(str, set(entry) - _KEYS)) if isinstance(entry, dict) else []
            raise _bad(f"accept item {i + 1} must be a mapping of resource, by and reason"
                       + (f"; unknown key(s): {', '.join(extra)}" if extra else ""), line)
        resource, by, reason = entry.get("resource"), entry.get("by"), entry.get("reason", "")
        if not isinstance(resource, str) or not _RESOURCE.match(resource):
            raise _bad(f"accept item {i + 1}: resource must name one object as the findings do "
                       f"(`[group/]Kind [namespace/]name`), not {resource!r}", line)
        if not isinstance(by, str) or not by.strip():
            raise _bad(f"accept item {i + 1} ({resource}) has no by: say who accepts this deletion", line)
        if not isinstance(reason, str):
            raise _bad(f"accept item {i + 1} ({resource}): reason must be text", line)
        if any(a.resource == resource for a in out):
            raise _bad(f"accept item {i + 1}: {resource} is accepted twice", line)
        out.append(Acceptance(resource, by.strip(), reason.strip(), ACCEPT_FILE, line))
    return tuple(out)


def judge(findings: Sequence[Finding], accepted: Sequence[Acceptance], deletions_checked: bool) -> list[Finding]:
    """`findings` with every accepted deletion turned into info that says who accepted it, and a
    `stale-acceptance` warning per entry that names nothing deleted (only when deletions were
    checked: without a deployed revision they are not, so every entry would look stale)."""
    by_resource = {a.resource: a for a in accepted}
    used: set[str] = set()
    out = []
    for f in findings:
        a = by_resource.get(f.resource or "") if f.code in DELETING else None
        if a is None:
            out.append(f)
            continue
        used.add(a.resource)
        if f.severity == "info":
            out.append(f)
            continue
        why = f": {a.reason}" if a.reason else ""
        out.append(dataclasses.replace(
            f, severity="info", fix=None,
            message=f"accepted by {a.by} ({a.path}:{a.line}{why}), so it does not block: {f.message}"))
    if deletions_checked:
        out += [Finding(
            code="stale-acceptance",
            severity="warning",
            message=f"{a.path}:{a.line} accepts the deletion of {a.resource} (by {a.by}), but this change deletes "
                    "no such object: remove the entry (its deletion has merged, or the name is wrong)",
            path=a.path, line=a.line, resource=a.resource,
        ) for a in accepted if a.resource not in used]
    return out


__all__ = ["ACCEPT_FILE", "DELETING", "Acceptance", "judge", "load"]
