"""Who applies each object at one revision, across every Flux Kustomization, and in which order.

The waves are one chain of Flux Kustomizations, but Flux garbage-collects the same way for every
Kustomization in the repository (platform, a legacy `apps`, ...). An object's copies are the
definitions every Kustomization applies; a Kustomization's ancestors are the ones it `dependsOn`,
directly or not: `dependsOn` is Ready- and revision-gated, so they apply a revision before it does.
Two Kustomizations neither of which is an ancestor of the other race.
"""
from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

from bot.config import Config
from bot.flux.inventory import FluxKustomization, Inventory, ResourceId, source_dir
from bot.side import Slot


@dataclass(frozen=True, order=True)
class Copy:
    """One definition of an object, and the Flux Kustomization that applies it."""

    id: ResourceId
    owner: str
    path: str
    line: int
    prune_disabled: bool
    wave: Slot | None
    """The wave (or side branch) it is in; None for a Kustomization that is not a wave."""


def wave_of(k: FluxKustomization, config: Config) -> Slot | None:
    directory = source_dir(k)
    if directory is None or posixpath.dirname(directory) != config.apps_dir:
        return None
    return config.slot_of_dir(posixpath.basename(directory))


@dataclass(frozen=True)
class Ownership:
    """Every object's copies at one revision, and its Flux Kustomizations by name."""

    copies: Mapping[ResourceId, tuple[Copy, ...]]
    kustomizations: Mapping[str, FluxKustomization]
    wave_owner: Mapping[Slot, str]

    @cached_property
    def _ancestors(self) -> dict[str, frozenset[str]]:
        out: dict[str, frozenset[str]] = {}

        def walk(name: str, seen: frozenset[str]) -> frozenset[str]:
            if name in out:
                return out[name]
            k = self.kustomizations.get(name)
            found: set[str] = set()
            for dep in k.depends_on if k is not None else ():
                if dep not in seen:
                    found |= {dep, *walk(dep, seen | {name})}
            out[name] = frozenset(found)
            return out[name]

        for name in self.kustomizations:
            walk(name, frozenset())
        return out

    def ancestors(self, name: str) -> frozenset[str]:
        return self._ancestors.get(name, frozenset())

    def prunes(self, name: str) -> bool | None:
        """spec.prune of `name`; None when this revision has no such Kustomization."""
        k = self.kustomizations.get(name)
        return None if k is None else k.prune


def ownership(inventory: Inventory, config: Config) -> Ownership:
    kustomizations = {k.name: k for k in inventory.flux}
    wave_owner: dict[Slot, str] = {}
    for k in inventory.flux:
        wave = wave_of(k, config)
        if wave is not None:
            wave_owner.setdefault(wave, k.name)
    owners = {f.wave: wave_owner.get(f.wave, config.wave_cr_name(f.wave)) for f in inventory.files}
    found: dict[ResourceId, list[Copy]] = {}
    for r in inventory.resources:
        owner = owners[r.wave]
        found.setdefault(r.id, []).append(Copy(r.id, owner, r.path, r.line, r.prune_disabled, r.wave))
    for o in inventory.others:
        found.setdefault(o.id, []).append(Copy(o.id, o.owner, o.path, o.line, o.prune_disabled, None))
    # In order already: the waves' resources come sorted, then the other Kustomizations' (sorted too).
    return Ownership({rid: tuple(c) for rid, c in found.items()}, kustomizations, wave_owner)


def may_prune(base: Ownership, now: Ownership, name: str) -> bool:
    """Whether `name` may garbage-collect when it reconciles the new revision.

    It may reconcile it with its old spec or its new one (the root applying the new spec races with
    it), so either pruning counts. A Kustomization unknown at base is taken as pruning whatever its
    new spec says: it applied the object there from a definition wave-bot cannot see (another
    repository, a directory it does not read), so nothing shows that old spec does not prune.
    """
    old, new = base.prunes(name), now.prunes(name)
    if old is None:
        return True
    return old or bool(new)


__all__ = ["Copy", "Ownership", "may_prune", "ownership", "source_dir", "wave_of"]
