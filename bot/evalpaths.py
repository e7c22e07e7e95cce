"""Which directories Flux builds the waves' Flux Kustomizations through: the evaluation paths.

The base (`clusters/base`) lists one Flux Kustomization per wave; Flux applies them through the
environment overlays (`clusters/dev`, ...), directories whose kustomization refers to the base,
directly or through another overlay. The checks evaluate each of them (`bot.kustomize.build`).
"""
from __future__ import annotations

import posixpath
from collections.abc import Sequence
from dataclasses import dataclass

from bot.config import Config
from bot.decryption import wave_objects
from bot.errors import WaveBotError
from bot.kustomize import (
    BuildError,
    Kustomization,
    Unsupported,
    build,
    find_kustomization,
    read_kustomization,
    resolve,
)
from bot.side import Slot
from bot.tree import Tree

MAX_DISCOVERY_DEPTH = 4
"""How deep under clusters/ overlays are looked for (clusters/<env>/<region>/... is plenty)."""


def discover_overlays(tree: Tree, config: Config) -> list[str]:
    """The overlays to check: `config.overlays` when set; else every directory under the base's
    parent (clusters/) whose kustomization refers to the base, directly or through another overlay."""
    if config.overlays is not None:
        for overlay in config.overlays:
            if find_kustomization(tree, overlay) is None:
                raise WaveBotError(f"overlays lists '{overlay}', which has no kustomization.yaml",
                                   path=config.source, hint="list the directories Flux bootstraps (clusters/<env>)")
        return list(config.overlays)
    refs = {d: _references(tree, d) for d in _candidate_dirs(tree, config)}
    overlays = {d for d, targets in refs.items() if any(_within(t, config.base_dir) for t in targets)}
    while True:  # an overlay of an overlay is an overlay too
        more = {d for d, targets in refs.items() if d not in overlays and targets & overlays}
        if not more:
            return sorted(overlays)
        overlays |= more


def _within(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory + "/")


def _candidate_dirs(tree: Tree, config: Config) -> list[str]:
    """Directories under the base's parent (hidden ones, links and the base itself left out)."""
    found, frontier = [], [posixpath.dirname(config.base_dir)]
    for _ in range(MAX_DISCOVERY_DEPTH):
        next_frontier = []
        for directory in frontier:
            prefix = f"{directory}/" if directory else ""
            for entry in tree.entries(directory):
                path = prefix + entry.name
                if entry.kind == "dir" and not entry.name.startswith(".") and not _within(path, config.base_dir):
                    found.append(path)
                    next_frontier.append(path)
        frontier = next_frontier
    return found


def _references(tree: Tree, directory: str) -> set[str]:
    """The repo paths a directory's kustomization lists under resources, bases and components."""
    kfile = find_kustomization(tree, directory)
    if kfile is None:
        return set()
    kust = read_kustomization(tree, kfile, check=False)
    out = set()
    for key in ("resources", "bases", "components"):
        values = kust.value.get(key)
        for ref in values if isinstance(values, list) else []:
            try:
                out.add(resolve(directory, str(ref), kfile, None, tree=tree))
            except Unsupported:  # remote or outside the repository: cannot be the base
                continue
    return out


# ---- the base: where it lists each wave -----------------------------------------------------------


@dataclass(frozen=True)
class WaveEntry:
    """A base `resources:` (or `bases:`) entry that names a wave's Flux Kustomization file."""

    key: str
    index: int
    ref: str
    path: str
    wave: Slot
    line: int


def wave_entries(tree: Tree, kust: Kustomization, config: Config) -> list[WaveEntry]:
    out = []
    for key in ("resources", "bases"):
        values = kust.value.get(key)
        for i, ref in enumerate(values if isinstance(values, list) else []):
            if not isinstance(ref, str):
                continue
            try:
                path = resolve(kust.directory, ref, kust.path, None, tree=tree)
            except Unsupported:
                continue
            wave = config.slot_of_cr_file(posixpath.basename(path))
            if wave is not None and posixpath.dirname(path) == config.base_dir:
                out.append(WaveEntry(key, i, ref, path, wave, kust.line(key, i)))
    return out


def base_kustomization(tree: Tree, config: Config) -> Kustomization | None:
    kfile = find_kustomization(tree, config.base_dir)
    return read_kustomization(tree, kfile, check=False) if kfile is not None else None


def built_waves(tree: Tree, directory: str, config: Config, waves: Sequence[Slot]) -> set[Slot] | None:
    """The waves whose Flux Kustomization `directory` builds; None when it cannot be evaluated."""
    try:
        result = build(tree, directory)
    except (BuildError, Unsupported):
        return None
    return {n for n in waves if wave_objects(result, config, n)}


__all__ = ["WaveEntry", "base_kustomization", "built_waves", "discover_overlays", "wave_entries"]
