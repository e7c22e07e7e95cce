"""The checks of the planned layout behind one protocol: a `Check` takes the `PlanContext`, returns findings.

`make_plan` first decides the changes (the moves, the generated files, the waves it removes, the
cutover's step: the checks that shape the plan stay there, because their results are changes too);
it then builds one `PlanContext` of the tree as it will be and runs every check in `CHECKS` on it. A new
check of the planned layout is one function here and one entry in `CHECKS`; its codes are declared
in checks/codes.py.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from bot.checks import gating, imageauto, overlays, review
from bot.config import Config
from bot.flux.applied import FluxModel
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


# ---- review mode: the producers that need no layout ----------------------------------------------


@dataclass(frozen=True)
class ReviewContext:
    """What Flux applies at the head and, against a base, at the deployed revision."""

    config: Config
    head_model: FluxModel
    head: Sequence[review.Unit]
    head_gate: bool  # the AdditiveCELDependencyCheck feature gate is on at the head
    base_model: FluxModel | None = None
    base: Sequence[review.Unit] | None = None
    base_gate: bool = False


@dataclass(frozen=True)
class Producer:
    """One producer of findings: the codes it may emit, and whether a problem it finds at the base
    too is left out (a problem already deployed is not the pull request's to fix)."""

    codes: tuple[str, ...]
    run: Callable[[ReviewContext], list[Finding]]
    introduced_only: bool = False

    def __call__(self, ctx: ReviewContext) -> list[Finding]:
        found = self.run(ctx)
        if not self.introduced_only or ctx.base is None or ctx.base_model is None:
            return found
        before = {_key(f) for f in self.run(ReviewContext(ctx.config, ctx.base_model, ctx.base, ctx.base_gate))}
        return [f for f in found if _key(f) not in before]


def _key(finding: Finding) -> tuple[str, str | None, str]:
    return (finding.code, finding.resource, finding.message)


def _deletions(ctx: ReviewContext) -> list[Finding]:
    if ctx.base is None:  # without a deployed revision only the head's build failures are known
        return review.build_failure_findings((), ctx.head) + review.apply_failure_findings((), ctx.head)
    return review.deletion_findings(ctx.base, ctx.head, ctx.config)


REVIEW: dict[str, Producer] = {
    "deletions": Producer(("resource-removed", "kustomization-renamed", "cross-kustomization-move", "build-failed",
                           "apply-failed", "base-not-applied"),
                          _deletions),
    "decryption": Producer(("sops-not-decrypted",), lambda ctx: review.sops_findings(ctx.head_model), True),
    "depends-on": Producer(("depends-on-missing",), lambda ctx: review.depends_on_findings(ctx.head), True),
    "gating": Producer(("depends-on-not-gating", "ready-expr-replaces-readiness"),
                       lambda ctx: review.gating_findings(ctx.head, ctx.head_gate), True),
}
"""Review mode is these producers and the tier checks: the registry without the layout's checks."""


def run_review(ctx: ReviewContext) -> list[Finding]:
    """Every review producer's findings, in the registry's order."""
    return [finding for producer in REVIEW.values() for finding in producer(ctx)]


__all__ = ["CHECKS", "REVIEW", "Check", "PlanContext", "Producer", "ReviewContext", "run_checks", "run_review"]
