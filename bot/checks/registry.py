"""The checks of the planned layout behind one protocol: a `Check` takes the `PlanContext`, returns findings.

`make_plan` first decides the changes (the moves, the generated files, the waves it removes, the
cutover's step: the checks that shape the plan stay there, because their results are changes too);
it then builds one `PlanContext` of the tree as it will be and runs every check in `CHECKS` on it. A new
check of the planned layout is one function here and one entry in `CHECKS`; its codes are declared
in checks/codes.py.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from bot.checks import gating, imageauto, overlays
from bot.config import Config
from bot.kustomize.repository import Builds
from bot.layout.waves import WaveGraph
from bot.model import Finding
from bot.repo.tree import Tree
from bot.side import Slot


@dataclass(frozen=True)
class PlanContext:
    """The layout once the plan is applied, as every check of it reads it."""

    tree: Tree  # the work tree with the plan's changes applied
    config: Config
    slots: tuple[Slot, ...]  # every wave and side branch, in order
    waves: tuple[int, ...]
    deepest_before: int | None  # the deepest wave before this change (None: there was none)
    sops_waves: frozenset[Slot]  # the slots that hold a SOPS-encrypted file
    graph: WaveGraph
    units: Mapping[Slot, list[str]]  # slot -> the catalog units placed in it
    builds: Builds  # one evaluation of each overlay, shared by the checks
    stateful_units: Mapping[str, Sequence[str]]  # unit -> the kinds of its objects whose deletion loses data
    moving: frozenset[str]  # the units whose files change wave in this change (or since the base)


class Check(Protocol):
    def __call__(self, ctx: PlanContext, /) -> list[Finding]: ...


def base_entries(ctx: PlanContext) -> list[Finding]:
    """missing-base-entry, stale-base-entry."""
    return overlays.base_findings(ctx.tree, ctx.config, ctx.slots, ctx.builds)


def new_deepest_wave(ctx: PlanContext) -> list[Finding]:
    """new-deepest-wave."""
    return overlays.new_deepest_wave_findings(ctx.tree, ctx.config, ctx.waves, ctx.deepest_before, ctx.builds)


def decryption(ctx: PlanContext) -> list[Finding]:
    """missing-decryption, decryption-unchecked, stale-decryption-patch, wave-not-in-overlay,
    overlay-build-error, overlay-not-checked."""
    return overlays.decryption_findings(ctx.tree, ctx.config, ctx.slots, set(ctx.sops_waves), ctx.builds)


def image_automation(ctx: PlanContext) -> list[Finding]:
    """image-automation-uncovered."""
    return imageauto.coverage_findings(ctx.tree, ctx.config, ctx.slots)


def chain_gating(ctx: PlanContext) -> list[Finding]:
    """chain-gating."""
    return gating.chain_findings(ctx.graph, ctx.units, ctx.config, ctx.stateful_units, ctx.moving)


CHECKS: dict[str, Check] = {
    "base-entries": base_entries,
    "new-deepest-wave": new_deepest_wave,
    "decryption": decryption,
    "image-automation": image_automation,
    "chain-gating": chain_gating,
}


def run_checks(ctx: PlanContext) -> list[Finding]:
    """Every registered check's findings, in the registry's order."""
    return [finding for check in CHECKS.values() for finding in check(ctx)]


__all__ = ["CHECKS", "Check", "PlanContext", "run_checks"]
