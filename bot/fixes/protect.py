"""The first step of an unsafe move: `kustomize.toolkit.fluxcd.io/prune: disabled` on the objects it
would delete, added to their manifest as whole new lines (every other byte stays), each marked as wave-bot's.

Flux honours the annotation on the live object, so once the edited manifest is deployed the old wave
leaves the objects in place when the file moves, and the new wave adopts them. The edit is checked
by parsing the result again: every document must equal the old one with exactly the annotation
added to the named objects, else WaveBotError (the caller then holds the move and gives commands).
"""
from __future__ import annotations

import copy
import re
from collections.abc import Collection
from typing import Any

from bot.errors import WaveBotError
from bot.flux.vocabulary import PRUNE_DISABLED, PRUNE_KEY
from bot.resid import ResourceId
from bot.yamlio import documents as yamlio

MARK = "# wave-bot: move-held"
"""Ends every annotation line wave-bot adds, so that a later run tells its annotation apart from one
the user wrote (and may rely on): only a marked line is reported as removable once the move is
deployed (bot/fixes/stepping.py). Deleting the comment keeps the annotation for good."""


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _opens_block(line: str, key: str) -> bool:
    """Whether `line` is `key:` with nothing after it but a comment (a block mapping follows)."""
    return re.match(rf"^\s*{re.escape(key)}:\s*(#.*)?$", line.rstrip("\r\n")) is not None


def _ending(line: str) -> str:
    return "\r\n" if line.endswith("\r\n") else "\n"


def _insertion(lines: list[str], doc: yamlio.Document, path: str) -> tuple[int, list[str]]:
    """Where the annotation goes in `doc` and the lines to insert there."""
    meta = doc.value.get("metadata")
    info = doc.info
    at = info.lines.get(("metadata",))
    first = next(iter(meta), None) if isinstance(meta, dict) else None
    if at is None or first is None or not _opens_block(lines[at - 1], "metadata") \
            or ("metadata", first) not in info.lines:
        raise WaveBotError("its metadata is not a block mapping wave-bot can add a line to", path=path, line=at)
    end = _ending(lines[at - 1])
    child = _indent(lines[info.lines[("metadata", first)] - 1])
    annotations = meta.get("annotations")
    if "annotations" not in meta:
        return at, [f"{' ' * child}annotations:{end}", f"{' ' * (child + 2)}{PRUNE_KEY}: {PRUNE_DISABLED}  {MARK}{end}"]
    own = info.lines.get(("metadata", "annotations"))
    key = next(iter(annotations), None) if isinstance(annotations, dict) else None
    if own is None or key is None or not _opens_block(lines[own - 1], "annotations") \
            or ("metadata", "annotations", key) not in info.lines:
        raise WaveBotError("its metadata.annotations is not a block mapping wave-bot can add a line to",
                           path=path, line=own)
    grandchild = _indent(lines[info.lines[("metadata", "annotations", key)] - 1])
    return own, [f"{' ' * grandchild}{PRUNE_KEY}: {PRUNE_DISABLED}  {MARK}{_ending(lines[own - 1])}"]


def _annotated(value: Any) -> Any:
    out = copy.deepcopy(value)
    meta = out["metadata"]
    meta["annotations"] = {**(meta.get("annotations") or {}), PRUNE_KEY: PRUNE_DISABLED}
    return out


def _carries(value: Any) -> bool:
    annotations = (value.get("metadata") or {}).get("annotations")
    return isinstance(annotations, dict) and str(annotations.get(PRUNE_KEY, "")).casefold() == PRUNE_DISABLED


class ManifestSetsPrune(WaveBotError):
    """The manifest sets the prune annotation to another value: a kubectl annotation would not
    last (Flux reapplies the file's value), so the file itself must change."""


def protect(data: bytes, path: str, targets: Collection[ResourceId]) -> bytes:
    """`data` with the annotation on every object of `targets` (those carrying it already stay as
    they are). Only whole lines are inserted; an object wave-bot cannot edit so is a WaveBotError."""
    docs = yamlio.load(data, path)
    text = data.decode()
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"  # an inserted line after the last one must start on its own line
    inserts: list[tuple[int, list[str]]] = []
    expected: list[Any] = []
    found: set[ResourceId] = set()
    for doc in docs:
        value = doc.value
        rid = ResourceId.of_object(value) if isinstance(value, dict) else None
        if rid is None or rid not in targets:
            expected.append(value)
            continue
        found.add(rid)
        if _carries(value):
            expected.append(value)
            continue
        other = ((value.get("metadata") or {}).get("annotations") or {}).get(PRUNE_KEY)
        if other is not None:
            # Flux applies the file's value over a live annotation: only the file can protect it.
            raise ManifestSetsPrune(
                f"it sets {PRUNE_KEY}: {other} on {rid}, which Flux applies over any live annotation; change "
                f"that value to {PRUNE_DISABLED} in the file, merge it, then run wave-bot again", path=path,
                line=doc.info.lines.get(("metadata", "annotations", PRUNE_KEY)))
        inserts.append(_insertion(lines, doc, path))
        expected.append(_annotated(value))
    missing = sorted(str(r) for r in set(targets) - found)
    if missing:
        raise WaveBotError(f"defines {', '.join(missing)} in no document of its own (inside a List?), so "
                           "wave-bot cannot annotate it", path=path)
    for at, new in sorted(inserts, reverse=True):  # from the end: earlier line numbers stay valid
        lines[at:at] = new
    out = "".join(lines).encode()
    if [d.value for d in yamlio.load(out, path)] != expected:
        raise WaveBotError(f"cannot add {PRUNE_KEY}: {PRUNE_DISABLED} by inserting lines alone", path=path)
    return out if inserts else data


__all__ = ["MARK", "ManifestSetsPrune", "protect"]
