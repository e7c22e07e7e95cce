"""The transitions of the app tier beyond onboarding: removing a wave, and the cutover from `apps`.

Both follow one principle: `apply` performs the next step that is safe for what is deployed (the
base revision), and the report says which step it is and what comes next.

Removing a wave: once the deployed wave applies nothing, its generated files go together with the
lines that refer to its Flux Kustomization (the base entry, overlay patches aimed only at it), so
every overlay keeps building. Without `--fix-overlays` wave-bot keeps the wave and quotes the exact
lines; deleting them by hand is the step, and the next `apply` deletes the wave.

The cutover (design doc §5.2), for a repository whose app tier is one Flux Kustomization `apps`
with `path: ./<apps_dir>`:
- step 1, deployed with prune: true (and no deletionPolicy: Orphan): only `prune: false` on it;
- step 2, deployed with prune: false (or Orphan): the whole split at once.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bot import yamlio
from bot.errors import WaveBotError
from bot.model import Change


@dataclass(frozen=True, order=True)
class Item:
    """One item of a top-level list in a YAML file, to remove."""

    path: str
    key: str
    index: int


def _is_comment_or_blank(line: str) -> bool:
    stripped = line.strip()
    return not stripped or stripped.startswith("#")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def remove_items(data: bytes, path: str, key: str, indices: Sequence[int]) -> bytes:
    """`data` without the items `indices` of its top-level block list `key`; every other byte kept.

    An item runs from the comment lines just above its dash to the line before the next item, less
    the comment and blank lines just above the next item (they describe that one). WaveBotError
    when the list is not a block list or the result does not read as the same document less those
    items.
    """
    doc = yamlio.load_one(data, path)
    if doc is None or not isinstance(doc.value, dict) or not isinstance(doc.value.get(key), list):
        raise WaveBotError(f"has no '{key}' list to remove an item from", path=path)
    items = doc.value[key]
    lines = data.decode().splitlines(keepends=True)
    starts = [doc.info.line((key, i)) - 1 for i in range(len(items))]
    if any(not lines[s].lstrip().startswith("-") for s in starts):
        raise WaveBotError(f"'{key}' is not a block list; wave-bot edits only block lists", path=path,
                           hint="delete the lines by hand")
    dash = _indent(lines[starts[0]])
    drop: set[int] = set()
    for i in sorted(set(indices)):
        start = starts[i]
        if i + 1 < len(starts):
            end = starts[i + 1]
        else:
            end = start + 1
            while end < len(lines) and (_indent(lines[end]) > dash or _is_comment_or_blank(lines[end])):
                end += 1
        while end - 1 > start and _is_comment_or_blank(lines[end - 1]) and _indent(lines[end - 1]) <= dash:
            end -= 1
        floor = starts[i - 1] + 1 if i else 0
        while start - 1 >= floor and lines[start - 1].strip().startswith("#") and _indent(lines[start - 1]) == dash:
            start -= 1  # the comment just above an item describes it
        drop.update(range(start, end))
    out = "".join(line for n, line in enumerate(lines) if n not in drop).encode()
    expected = [item for i, item in enumerate(items) if i not in set(indices)]
    after = yamlio.load_one(out, path)
    value = after.value if after is not None else None
    if not isinstance(value, dict) or (value.get(key) or []) != expected or \
            {k: v for k, v in value.items() if k != key} != {k: v for k, v in doc.value.items() if k != key}:
        raise WaveBotError(f"removing items of '{key}' would change more than those items", path=path,
                           hint="delete the lines by hand")
    return out


def removal_changes(read: dict[str, bytes], items: Sequence[Item]) -> list[Change]:
    """The updates that remove `items`; `read` holds the current bytes of every file they are in."""
    changes = []
    by_file: dict[tuple[str, str], list[int]] = {}
    for item in items:
        by_file.setdefault((item.path, item.key), []).append(item.index)
    content: dict[str, bytes] = {}
    for (path, key), indices in sorted(by_file.items()):
        content[path] = remove_items(content.get(path, read[path]), path, key, indices)
    for path, data in sorted(content.items()):
        changes.append(Change("update", path, content=data))
    return changes


__all__ = ["Item", "removal_changes", "remove_items"]
