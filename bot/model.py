"""The records that flow between the bot's modules."""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from bot.resid import ResourceId
from bot.side import Side, Slot

Action = Literal["create", "update", "move", "delete"]
Severity = Literal["error", "warning", "info"]
SEVERITY_RANK: dict[str, int] = {"error": 0, "warning": 1, "info": 2}


@dataclass(frozen=True)
class Change:
    """One edit to the work tree. A move carries no content: the bytes travel untouched."""

    action: Action
    path: str
    source: str | None = None  # move: where the file is now
    content: bytes | None = None  # create/update: the new bytes

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"action": self.action, "path": self.path}
        if self.source is not None:
            out["from"] = self.source
        return out


@dataclass(frozen=True, order=True)
class FindingObject:
    """One object a finding is about (what Flux deletes, moves or holds), as data: a reader and a
    program both see which objects are at risk without parsing the message."""

    loses_data: bool
    """Deleting it loses data (a claim, a volume, a namespace, a database, a `stateful_kinds` kind)."""
    kind: str
    namespace: str
    name: str
    group: str = ""

    @classmethod
    def of(cls, rid: ResourceId, loses_data: bool = False) -> FindingObject:
        return cls(loses_data, rid.kind, rid.namespace, rid.name, rid.group)

    def __str__(self) -> str:  # as `ResourceId` names it: `[group/]Kind [namespace/]name`
        kind = f"{self.group}/{self.kind}" if self.group else self.kind
        return f"{kind} {self.namespace}/{self.name}" if self.namespace else f"{kind} {self.name}"

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "group": self.group, "namespace": self.namespace, "name": self.name,
                "loses_data": self.loses_data}


def at_risk(objects: Iterable[FindingObject]) -> tuple[FindingObject, ...]:
    """`objects` once each (losing data if any mention says so), those that lose data first, else in
    the order given."""
    unique: dict[tuple[str, str, str, str], FindingObject] = {}
    for o in objects:
        key = (o.group, o.kind, o.namespace, o.name)
        seen = unique.get(key)
        unique[key] = o if seen is None or (o.loses_data and not seen.loses_data) else seen
    return tuple(sorted(unique.values(), key=lambda o: not o.loses_data))


@dataclass(frozen=True)
class Finding:
    """Something a reviewer must know. `code` is stable; the other fields locate it."""

    code: str
    severity: Severity
    message: str
    path: str | None = None
    line: int | None = None
    wave: Slot | None = None
    """A wave, or a side branch (in JSON: its wave number, and `side: true`)."""
    overlay: str | None = None
    resource: str | None = None
    fix: str | None = None
    """A ready-to-paste snippet or command that resolves the finding."""
    objects: tuple[FindingObject, ...] = ()
    """The objects it is about: what Flux deletes, moves or holds (`resource`, one name, stays for compatibility)."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code, "severity": self.severity, "message": self.message}
        for key in ("path", "line", "wave", "overlay", "resource", "fix"):
            value = getattr(self, key)
            if isinstance(value, Side):
                out[key], out["side"] = value.wave, True
            elif value is not None:
                out[key] = value
        if self.objects:
            out["objects"] = [o.to_json() for o in at_risk(self.objects)]
        return out

    def sort_key(self) -> tuple[Any, ...]:
        return (SEVERITY_RANK[self.severity], self.code, self.wave if self.wave is not None else -1,
                self.overlay or "", self.path or "", self.resource or "", self.message)
