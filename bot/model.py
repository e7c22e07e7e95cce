"""The records that flow between the bot's modules."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

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

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code, "severity": self.severity, "message": self.message}
        for key in ("path", "line", "wave", "overlay", "resource", "fix"):
            value = getattr(self, key)
            if isinstance(value, Side):
                out[key], out["side"] = value.wave, True
            elif value is not None:
                out[key] = value
        return out

    def sort_key(self) -> tuple[Any, ...]:
        return (SEVERITY_RANK[self.severity], self.code, self.wave if self.wave is not None else -1,
                self.overlay or "", self.path or "", self.resource or "", self.message)
