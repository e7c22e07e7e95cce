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

from bot import yamledit
from bot.model import Change


@dataclass(frozen=True, order=True)
class Item:
    """One item of a top-level list in a YAML file, to remove."""

    path: str
    key: str
    index: int


def removal_changes(read: dict[str, bytes], items: Sequence[Item]) -> list[Change]:
    """The updates that remove `items`; `read` holds the current bytes of every file they are in."""
    changes = []
    by_file: dict[tuple[str, str], list[int]] = {}
    for item in items:
        by_file.setdefault((item.path, item.key), []).append(item.index)
    content: dict[str, bytes] = {}
    for (path, key), indices in sorted(by_file.items()):
        data = content.get(path, read[path])
        for index in sorted(set(indices), reverse=True):  # from the end: earlier indices stay valid
            data = yamledit.remove_item(data, path, key, index)
        content[path] = data
    for path, data in sorted(content.items()):
        changes.append(Change("update", path, content=data))
    return changes


__all__ = ["Item", "removal_changes"]
