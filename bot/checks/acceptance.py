"""Deletions taken on purpose: `.wave-bot-accept.yaml`, an explicit, auditable acknowledgement.

Each entry names one object, exactly as the findings spell it (`PersistentVolumeClaim pihole/pihole-data`),
and who accepts its deletion (`by:`, required; `reason:` optional). A finding that Flux deletes that
object (or moves it so that it is deleted and recreated) then passes as info, saying who accepted
it and where. The file is committed like any other, so the pull request shows it and git keeps who
added each line; there is no pattern and no switch for everything. An entry that matches nothing
this change deletes is reported (`stale-acceptance`): remove it once its deletion has merged.
`wave-bot accept` appends entries (`add`, after `refuse_new`), and every deletion not accepted yet
carries in its fix the command and the entries that would accept it.
"""
from __future__ import annotations

import dataclasses
import difflib
import re
import shlex
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from bot.checks import codes
from bot.errors import WaveBotError
from bot.model import Finding
from bot.repo.tree import Tree, refuse_link
from bot.yamlio import documents as yamlio
from bot.yamlio.edit import insert_item, render_item

ACCEPT_FILE = ".wave-bot-accept.yaml"
DELETING = codes.DELETING | {"namespace-deleted"}
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


def read_accepted(tree: Tree) -> tuple[Acceptance, ...]:
    """The acceptances the tree's `.wave-bot-accept.yaml` holds; none without the file."""
    kind = tree.kind(ACCEPT_FILE)
    if kind is None:
        return ()
    if kind != "file":
        raise refuse_link(ACCEPT_FILE) if kind == "link" else _bad("is not a regular file", None)
    return parse(tree.read(ACCEPT_FILE))


def parse(data: bytes) -> tuple[Acceptance, ...]:
    """The acceptances `.wave-bot-accept.yaml`'s bytes hold (WaveBotError at the line when invalid)."""
    doc = yamlio.load_one(data, ACCEPT_FILE)
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
    """`findings` with every accepted deletion turned into info that says who accepted it, every other
    deletion's fix saying how to accept it (so a reviewer can, from the pull request), and a
    `stale-acceptance` warning per entry that names nothing deleted (only when deletions were
    checked: without a deployed revision they are not, so every entry would look stale)."""
    by_resource = {a.resource: a for a in accepted}
    used: set[str] = set()
    out = []
    offers = _offers(findings, by_resource)
    for f in findings:
        a = by_resource.get(f.resource or "") if f.code in DELETING else None
        if a is None:
            offer = offers.get((f.code, f.path)) if f.code in DELETING and f.severity != "info" else None
            fix = f.fix if not f.fix or f.fix.endswith("\n") else f"{f.fix}\n"  # a command: the offer goes below it
            out.append(dataclasses.replace(f, fix=f"{fix or ''}{offer}") if offer else f)
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


def _offers(findings: Sequence[Finding], accepted: Collection[str]) -> dict[tuple[str, str | None], str]:
    """(code, path) -> how to accept the data-loss deletions (errors) not accepted yet that those
    findings name: the command and the entries, for every such object of the file at once, given
    to each of its findings so that the report's group by file keeps one shared fix. A file whose
    deletions are all warnings loses nothing (a Secret recreated from git) and gets no offer:
    asking to accept what needs no acceptance would teach accepting without reading."""
    names: dict[tuple[str, str | None], list[str]] = {}
    for f in findings:
        if f.code in DELETING and f.severity == "error" and f.resource and f.resource not in accepted:
            names.setdefault((f.code, f.path), []).append(f.resource)
    return {key: _offer(key[0], list(dict.fromkeys(rs))) for key, rs in names.items()}


def _offer(code: str, resources: Sequence[str]) -> str:
    """How to accept: the command (commented, one object a line: fixes are never wrapped, and the
    text report keeps 80 columns) and the entries to paste."""
    them = "it" if len(resources) == 1 else "them"
    why = "to take the move as it is (deleted, then recreated)" if code.endswith("-move") else \
        f"if Flux should delete {them}"
    names = " \\\n".join(f"#     {shlex.quote(r)}" for r in resources)
    return (f"# Or, {why}:\n"
            "# accept that in this pull request, with the command\n"
            f"#   wave-bot accept --by {shlex.quote(NAME_PLACEHOLDER)} \\\n{names}\n"
            f"# or these entries in {ACCEPT_FILE} (reason: optional):\n"
            f"accept:\n{_entries(resources, NAME_PLACEHOLDER)}")


# ---- `wave-bot accept`: new entries, refused unless each names one deletion of the change --------

_HEADER = ("# Deletions Flux performs on purpose, one entry per object, named exactly as wave-bot's findings\n"
           "# name it: see docs/guides/deleting-on-purpose.md. Reviewed and merged with the change that deletes.\n")
NAME_PLACEHOLDER = "<your name>"


def looks_like_resource(text: str) -> bool:
    return _RESOURCE.match(text) is not None


def refuse_new(resources: Sequence[str], by: str, accepted: Sequence[Acceptance],
               deleted: Collection[str] | None, base: str | None = None) -> None:
    """WaveBotError unless every one of `resources` may be accepted by `by`: one object, named as the
    findings name it, not accepted yet, and (when `deleted` is known: the objects the change deletes
    against `base`) deleted by this change."""
    if not by.strip():
        raise WaveBotError("--by is empty: an acceptance says who accepts the deletion",
                           hint="pass your name or handle, e.g. --by alice")
    for resource in resources:
        if not _RESOURCE.match(resource):
            raise WaveBotError(f"{resource!r} does not name one object as the findings do "
                               "(`[group/]Kind [namespace/]name`)",
                               hint="quote each object as one argument, e.g. "
                                    "'PersistentVolumeClaim pihole/pihole-data'")
        done = next((a for a in accepted if a.resource == resource), None)
        if done is not None:
            raise WaveBotError(f"already accepts the deletion of {resource} (by {done.by})", path=done.path,
                               line=done.line, hint="leave the entry as it is, or edit it by hand")
    if deleted is None:
        return
    unknown = [r for r in resources if r not in deleted]
    if not unknown:
        return
    against = f" (against {base})" if base else ""
    if not deleted:
        raise WaveBotError(f"this change deletes nothing{against}, so there is no deletion of {unknown[0]} to accept",
                           hint="make the change first (delete or move the files), then accept what "
                                "`wave-bot check --base` reports as deleted")
    close = difflib.get_close_matches(unknown[0], sorted(deleted), n=1, cutoff=0.6)
    mean = f"; did you mean {close[0]}?" if close else "."
    listed = sorted(deleted)
    more = f" and {len(listed) - 10} more" if len(listed) > 10 else ""  # a big change: `check` lists them all
    raise WaveBotError(f"this change does not delete {unknown[0]}{against}{mean} It deletes "
                       + ", ".join(listed[:10]) + more,
                       hint="name each object exactly as the findings do")


def add(data: bytes | None, resources: Sequence[str], by: str, reason: str = "") -> bytes:
    """`.wave-bot-accept.yaml` (`data`; None: there is none yet) with one entry per resource appended
    to its `accept:` list in the list's own indentation; every byte already there stays (insert_item
    parses each edit: the list gained exactly that entry, nothing else changed)."""
    out = data if data is not None else _HEADER.encode()
    # Every line added ends as the file's first does (a file saved on Windows: CRLF), the missing
    # final newline too: a file of mixed endings shows as changed throughout in some diffs and editors.
    newline = "\r\n" if out.split(b"\n", 1)[0].endswith(b"\r") else "\n"
    if out and not out.endswith(b"\n"):
        out += newline.encode()
    if yamlio.load_one(out, ACCEPT_FILE) is None:  # empty, or only comments: the list starts here
        out += f"accept:{newline}".encode()
    for resource in resources:
        entry = {"resource": resource, "by": by.strip(), **({"reason": reason.strip()} if reason.strip() else {})}
        item = render_item(entry).replace("\n", newline)
        try:
            out = insert_item(out, ACCEPT_FILE, "accept", item, None)
        except WaveBotError as exc:  # a flow-style list: the hint gives the entries to add by hand
            raise WaveBotError(exc.message, path=exc.path, line=exc.line,
                               hint=f"add them by hand, under accept: as a block list:\n"
                                    f"{_entries(resources, by.strip(), reason.strip())}") from None
    return out


def _entries(resources: Sequence[str], by: str, reason: str = "") -> str:
    why = f"    reason: {reason}\n" if reason else ""
    return "".join(f"  - resource: {r}\n    by: {by}\n{why}" for r in resources)


__all__ = ["ACCEPT_FILE", "DELETING", "NAME_PLACEHOLDER", "Acceptance", "add", "judge", "read_accepted",
           "looks_like_resource", "parse", "refuse_new"]
