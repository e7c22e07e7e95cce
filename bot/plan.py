"""The pipeline: catalog -> graph -> placement -> generated files -> a Plan (pure data)."""
from __future__ import annotations

import dataclasses
import difflib
import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bot.checks import acceptance, cascade, cutover, deletes, gating, grouping, restored, review, tiers
from bot.checks.registry import PlanContext, ReviewContext, run_checks, run_review
from bot.checks.removal import (
    kustomization_references,
    removable_sides,
    removal_changes,
    unused_patch_files,
    wave_deletes,
    wave_files,
    wave_removable_finding,
    wave_removed_finding,
    waves_to_remove,
)
from bot.config import Config
from bot.errors import WaveBotError
from bot.fixes import overlays as overlayfix
from bot.fixes import stepping
from bot.flux.applied import read_model
from bot.flux.inventory import Inventory, read_flux_kustomizations, read_inventory
from bot.flux.manifests import ParseCache
from bot.flux.ownership import ownership
from bot.kustomize import build as kustomize
from bot.kustomize.files import find_kustomization
from bot.kustomize.repository import Builds
from bot.layout import render, units, wiring
from bot.layout.catalog import load_catalog, missing_dir
from bot.layout.placement import AppFile, existing_slots, existing_waves, place_files
from bot.layout.waves import WaveGraph, check_leaf_typos, compute_waves
from bot.model import Change, Finding
from bot.naming import file_stem, is_dns_label
from bot.repo.tree import PlannedTree, Tree, read_once, refuse_link
from bot.side import Side, Slot, order


@dataclass(frozen=True)
class Mode:
    """Which pipeline ran, and why: `waves` (the catalog's layout) or `review` (no waves, nothing written)."""

    name: str
    reason: str

    @property
    def review(self) -> bool:
        return self.name == "review"


WAVES = Mode("waves", "the catalog declares the units")


def choose_mode(tree: Tree, config: Config) -> Mode:
    """`mode:` when the config sets it; else review exactly when there is no catalog directory (at its
    default place) and no `dependencies:` declare a unit. A catalog_dir the config names but the tree
    lacks stays an error: that is a typo, not a repository without waves."""
    where, _ = config.where("mode")
    if config.mode == "review":
        return Mode("review", f"mode: review in {where}")
    if config.mode == "waves":
        return Mode("waves", f"mode: waves in {where}")
    if config.dependencies or config.where("catalog_dir")[0] is not None or tree.kind(config.catalog_dir) is not None:
        return WAVES
    declared = f"; dependencies: in {config.source} declares none" if "dependencies" in config.lines else ""
    return Mode("review", f"no catalog directory '{config.catalog_dir}' and no units declared{declared}; "
                          "`mode: waves` or `mode: review` in .wave-bot.yaml chooses")


@dataclass(frozen=True)
class Plan:
    """Everything `apply` would do and everything a reviewer should know, for one tree."""

    config: Config
    graph: WaveGraph
    files: tuple[AppFile, ...]
    waves: tuple[int, ...]
    """The waves the layout has once applied: 0..deepest, without gaps."""
    changes: tuple[Change, ...]
    findings: tuple[Finding, ...]
    template_source: str
    base_waves: Mapping[str, Slot | None] | None = None
    """File name -> its wave at the base revision (None: directly under apps/), when a base was given."""
    sides: tuple[Side, ...] = ()
    """The side branches the layout has once applied (for the `non_gating` units)."""
    tier_report: tiers.TierReport | None = None
    """The tier checks (their findings are among `findings` too) and the dependsOn graph."""
    split: Plan | None = None
    """At cutover step 1 (which moves nothing): the layout step 2 will produce, every file in place."""
    mode: Mode = WAVES

    @property
    def slots(self) -> tuple[Slot, ...]:
        """Every app-tier Flux Kustomization once applied: the waves and the side branches, in order."""
        return tuple(sorted((*self.waves, *self.sides), key=order))

    def placement(self) -> dict[Slot, list[str]]:
        """Wave (or side branch) -> repo-relative paths of the files it holds once applied."""
        out: dict[Slot, list[str]] = {n: [] for n in self.slots}
        for file in self.files:
            if file.target_wave is not None:
                out.setdefault(file.target_wave, []).append(file.target)
        return {n: sorted(paths) for n, paths in sorted(out.items())}

    def units(self) -> dict[Slot, list[str]]:
        """Wave (or side branch) -> the placed nodes in it."""
        out: dict[Slot, set[str]] = {n: set() for n in self.slots}
        for file in self.files:
            if file.node is not None and file.target_wave is not None:
                out[file.target_wave].add(file.node)
        return {n: sorted(nodes) for n, nodes in out.items()}

    def not_onboarded(self) -> list[str]:
        placed = {f.node for f in self.files}
        return [name for name in self.graph.nodes if name not in placed]

    @property
    def moves(self) -> list[AppFile]:
        """Files this plan moves."""
        return [f for f in self.files if f.moves]

    def wave_moves(self) -> list[tuple[str, Slot | None, Slot]]:
        """(file name, wave before, wave after) for every placed file whose wave differs from the base's.

        Against the base revision when there is one, so a PR's report reads the same before and
        after wave-bot's own commit; else against the work tree. 'before' is None for a file new
        to the waves (new, or directly under apps/).
        """
        out = []
        for file in self.files:
            if file.node is None or file.target_wave is None:
                continue
            if self.base_waves is not None:
                before = self.base_waves.get(file.name)
            else:
                before = file.wave
            if before != file.target_wave:
                out.append((file.name, before, file.target_wave))
        return sorted(out, key=lambda m: (m[2], m[0]))

    def has_errors(self) -> bool:
        return any(f.severity == "error" for f in self.findings)

    def to_json(self) -> dict[str, Any]:
        return {
            "mode": self.mode.name,
            "mode_reason": self.mode.reason,
            "max_wave": self.graph.max_wave,
            "waves": self.graph.waves(),
            "placement": {str(n): paths for n, paths in self.placement().items()},
            "non_gating": sorted(n for n, node in self.graph.nodes.items() if not node.gating),
            "sides": {str(s): {"wave": s.wave, "name": self.config.wave_cr_name(s), "path": self.config.wave_dir(s),
                               "dependsOn": list(self.config.wave_depends_on(s))} for s in self.sides},
            "changes": [c.to_json() for c in self.changes],
            "findings": [f.to_json() for f in self.findings],
        }


def make_plan(tree: Tree, config: Config, base: Tree | None = None, fix_overlays: bool = False,
              held: stepping.Held | None = None, hold: bool = True) -> Plan:
    """Compute the wave layout `tree` should have, the changes that get it there, and the findings.

    `base` is the deployed revision (the PR base): with it the plan checks Flux prune hazards and
    removes waves that were already empty there. `fix_overlays` adds the edits that give every wave
    its base entry and SOPS decryption in every overlay. `held`: files whose move would lose data,
    kept in place this time with their objects protected (the plan finds them itself); `hold=False`
    makes every move as it is, for `wave-bot accept` to see what the change itself deletes.
    """
    # The work tree is read once for the whole run: the catalog, the inventories, the model of what
    # Flux applies and the checks all list and read the same files. The base is not kept so: its
    # inventory fetches only the blobs the work tree's did not parse, and its model reads it once.
    tree = read_once(tree)
    mode = choose_mode(tree, config)
    if mode.review:
        return review_plan(tree, config, mode, base)
    # The layout: waves from the catalog, each app file's wave, the generated files.
    services = load_catalog(tree, config)
    graph = compute_waves(services, config)
    _check_configured_dirs(tree, config)
    files = place_files(tree, graph, config)
    check_leaf_typos(services, graph, (file_stem(f.name) for f in files if not f.is_dir), config)
    held = held or {}
    placed_as = {f.path: f for f in files if f.path in held}
    files = [dataclasses.replace(f, target=f.path, target_wave=f.wave) if f.path in held else f for f in files]
    slots = {f.target_wave for f in files if f.target_wave is not None}
    targets = {n for n in slots if not isinstance(n, Side)}
    existing_all = existing_slots(tree, config)
    existing = {n for n in existing_all if not isinstance(n, Side)}
    sides = sorted({n for n in slots | existing_all if isinstance(n, Side)})
    # A side branch depends on the wave below its own, so that wave must exist.
    deepest = max(targets | existing | {s.wave - 1 for s in sides if s.wave}, default=None)
    waves = tuple(range(deepest + 1)) if deepest is not None else ()
    cache = ParseCache()
    # The work tree before the base: the base then fetches and parses only the blobs that differ.
    here = read_inventory(tree, config, cache) if base is not None else None
    before = read_inventory(base, config, cache) if base is not None else None
    flux = here.flux if here is not None else read_flux_kustomizations(tree, config, cache)
    adoption = cutover.cutover(flux, before, config)
    if adoption is not None and here is None:
        here = read_inventory(tree, config, cache)
    if adoption is not None and here is not None and adoption.step == 1:
        return _release_plan(tree, config, graph, files, existing, adoption, here, before, cache)
    if adoption is not None and config.kustomization_template is None:
        # Step 2: the waves are the legacy Kustomization but for name, path and dependsOn.
        template, template_source = cutover.legacy_template(tree, adoption.legacy), adoption.legacy.path
        if config.where("root_depends_on")[0] is None:
            config = dataclasses.replace(config, root_depends_on=adoption.legacy.depends_on)
    else:
        template, template_source = render.resolve_template(tree, config)
        config = wiring.keep_root(config, flux, template_source)
    if adoption is not None:
        cutover.check_wave_roots(flux, adoption.legacy, config.root_depends_on)
    moves = [Change("move", f.target, source=f.path) for f in files if f.moves]
    protecting, held_findings = stepping.hold(tree, config, held, placed_as)
    moves += protecting
    rest: cutover.Remainder | None = None
    kept: list[Change] = []  # step 2: what keeps applying the rest of the legacy's tree
    regrouped = grouping.Regroup((), frozenset())
    # The relative references the moves break are rewritten (a unit's `../` entries, a child's
    # spec.path into a moved unit), a line each.
    rewrites = grouping.rewrite_references(tree, {c.source: c.path for c in moves if c.source},
                                           [k.path for k in flux])
    if adoption is not None:
        # Units leave their grouping folders with what the group did to them (the group keeps what it
        # adds), and what the legacy applied besides the units stays applied by the remainder, which
        # wave 0 depends on.
        regrouped = grouping.regroup(tree, config, files, rewrites.edited)
        kept = list(regrouped.changes)
        rest_changes, rest = cutover.remainder(tree, PlannedTree(tree, [*moves, *rewrites.changes, *kept]), config,
                                               adoption.legacy, (k.name for k in flux))
        kept += rest_changes
        if rest is not None:
            kept += _writes(tree, {rest.file: cutover.rest_cr(rest, adoption.legacy, template, config.root_depends_on)})
            config = dataclasses.replace(config, root_depends_on=(rest.name,))
    elif any(c.action == "move" for c in moves):
        # After the split, a unit leaving the remainder's tree for a wave leaves its grouping folder as
        # at step 2, and the remainder's listing too.
        regrouped = grouping.regroup(tree, config, files, rewrites.edited)
        kept = cutover.after_the_cutover(tree, config, moves, regrouped.changes)
    generated = _generated(tree, files, (*waves, *sides), template, config, regrouped.given)
    writes = _writes(tree, generated)
    retired = [*_retire(tree, config, adoption, waves, fix_overlays, rest), *kept] if adoption is not None else kept
    # What Flux will apply once this lands, and (against the base) what it will delete.
    pending = [*moves, *rewrites.changes, *writes, *retired]
    cutover.check_references_kept(tree, moves, [c.path for c in [*writes, *retired]], config, rewrites.entries)
    if regrouped.changes or rewrites.changes:  # never a layout that does not build
        grouping.verify_builds(tree, PlannedTree(tree, pending), PlannedTree(tree, [*moves, *writes, *retired]), [
            *(posixpath.dirname(c.path) for c in [*writes, *regrouped.changes, *rewrites.changes]
              if c.action != "delete")], regrouped, rewrites)
    # With nothing to change (the steady state of most bot runs) what Flux applies once this lands
    # is the work tree, already read: reading it again would only repeat the same inventory.
    # Without changes the planned tree is the work tree: read it directly, not through the overlay.
    now = here if here is not None and not pending else read_inventory(
        PlannedTree(tree, pending) if pending else tree, config, cache)
    findings = [*held_findings, *_elsewhere(_placement_findings(files, graph, config), now)]
    findings += restored.regeneration_findings(tree, writes, config, template_source, base)
    if adoption is not None and here is not None:
        findings.append(cutover.step_2_finding(
            adoption, here, config, waves, template_source,
            file_kept=any(c.path == adoption.legacy.path and c.action == "update" for c in retired), rest=rest,
            units=_unit_waves(files)))
    if before is not None:
        assert base is not None
        removed, references, removal = waves_to_remove(tree, before, now, targets, config, fix_overlays,
                                                removable_sides(before, now, sides, slots))
        waves = tuple(n for n in waves if n not in removed)
        sides = [s for s in sides if s not in removed]
        gone = {p for n in removed for p in wave_files(n, config)}
        writes = [c for c in writes if c.path not in gone]
        findings += [wave_removed_finding(before, n, config, references.get(n, ()), removed=fix_overlays)
                     for n in removed]
        findings += [wave_removable_finding(before, n, config, refs, fix_overlays)
                     for n, refs in references.items() if n not in removed]
        findings += cascade.with_cascades(deletes.hazard_findings(before, now, config), base, before, config)
        findings += stepping.removable(tree, base, files, config)  # the annotation of a held move, once moved
        deepest_before = max(existing_waves(base, config), default=None)
        # Where each file was at base, from the inventory already read (no second walk of the base).
        base_waves: dict[str, Slot | None] | None = {
            **units.directory_waves([*((f.path, f.wave) for f in before.stray),
                                     *((f.path, f.wave) for f in before.files)], config),
            **{f.name: f.wave for f in before.stray}, **{f.name: f.wave for f in before.files}}
    else:
        base_waves = None
        removed, removal = (), []
        findings += [*now.problems, *deletes.duplicate_findings(now), *deletes.shared_findings(ownership(now, config))]
        if moves:
            deployed = here or read_inventory(tree, config, cache)
            findings += cascade.with_cascades(deletes.work_tree_move_findings(deployed, now, config), tree, deployed,
                                              config)
        deepest_before = max(existing, default=None)
    # The hand-maintained files around the waves: base entries and each overlay's decryption.
    changes = _compact([*moves, *rewrites.changes, *writes, *retired, *wave_deletes(tree, removed, config), *removal])
    # Without changes the planned tree is the work tree, read directly as `now` is: an overlay of
    # nothing lists every directory twice for every walk of the checks and the model.
    planned: Tree = PlannedTree(tree, changes) if changes else tree
    every: tuple[Slot, ...] = tuple(sorted((*waves, *sides), key=order))
    if fix_overlays:
        changes = _compact([*changes, *overlayfix.fix_overlays(planned, config, every)])
        planned = PlannedTree(tree, changes) if changes else tree
    if adoption is not None:
        # The safety net: every object Flux applied before the split, applied after it as often.
        # Without --fix-overlays the waves' base entries are the findings' edits: judged as made.
        fixed = planned
        if not fix_overlays:
            wired = _compact([*moves, *rewrites.changes, *writes, *_retire(tree, config, adoption, waves, True, rest),
                              *kept,
                              *wave_deletes(tree, removed, config), *removal])
            fixed = PlannedTree(tree, _compact([*wired, *overlayfix.fix_overlays(PlannedTree(tree, wired), config,
                                                                                 every)]))
        replaced = {adoption.legacy.name, *(config.wave_cr_name(n) for n in every), *([rest.name] if rest else [])}
        judged, layout = cutover.judged_model(tree, config, adoption.legacy)
        after, _ = cutover.judged_model(fixed, config, adoption.legacy, layout)
        repath = cutover.repathed(fixed, after, moves)
        if repath:  # a child's spec.path that named its unit's old place: `tier-path-moved` says the fix
            after, _ = cutover.judged_model(PlannedTree(fixed, repath), config, adoption.legacy, layout)
        cutover.check_same_objects(judged, after, adoption.legacy, replaced)
    placed: dict[Slot, set[str]] = {}
    for file in files:
        if file.node is not None and file.target_wave is not None:
            placed.setdefault(file.target_wave, set()).add(file.node)
    # A unit whose files change wave in this change (or since the base) is not offered as non_gating yet.
    moving = {f.node for f in files if f.node is not None and (f.moves or base_waves is not None and f.name in
                                                               base_waves and base_waves[f.name] != f.target_wave)}
    builds = Builds()  # the overlay and tier checks evaluate the same overlays of the same tree
    findings += run_checks(PlanContext(
        tree=planned, config=config, slots=every, waves=waves, deepest_before=deepest_before,
        sops_waves=frozenset(now.sops_waves()), graph=graph, units={n: sorted(u) for n, u in placed.items()},
        builds=builds, stateful_units=gating.stateful_units(files, now, config), moving=frozenset(moving),
    ))
    # The tiers are plan data too (the report draws their graph), so not a registered check.
    tier_report = tiers.check(planned, config, base)
    findings += tier_report.findings
    findings = acceptance.judge(findings, acceptance.read_accepted(tree), base is not None)
    # The next safe step: a move that would lose data waits, its objects protected first. Without
    # --base the work tree is what is deployed, so the same moves wait.
    unsafe = stepping.unsafe_moves(findings, files, lambda: _built_units(tree, files)) if hold else {}
    if unsafe:
        return make_plan(tree, config, base, fix_overlays, {**held, **unsafe})
    return Plan(
        config=config,
        graph=graph,
        files=tuple(files),
        waves=waves,
        changes=tuple(changes),
        findings=tuple(sorted(set(findings), key=Finding.sort_key)),
        template_source=template_source,
        base_waves=base_waves,
        sides=tuple(sides),
        tier_report=tier_report,
    )


def review_plan(tree: Tree, config: Config, mode: Mode, base: Tree | None = None) -> Plan:
    """Review mode: no catalog, no waves, no changes; the findings of every producer that does not
    need the layout (what the change makes Flux delete against `base`, the tier checks)."""
    # One model per tree, shared by the tier checks and review mode's producers.
    plain: set[str] | None = set() if base is not None else None  # the two reads share the plain blobs
    head_model = read_model(tree, config, plain)
    base_model = read_model(base, config, plain) if base is not None else None
    tier_report = tiers.check(tree, config, base, model=head_model, base_model=base_model)
    ctx = ReviewContext(config, head_model, review.units_of(head_model, config), review.feature_gate_on(tree))
    if base is not None:
        assert base_model is not None
        ctx = dataclasses.replace(ctx, base_model=base_model, base=review.units_of(base_model, config),
                                  base_gate=review.feature_gate_on(base))
    # A dependsOn problem the tier checks report already is said once.
    findings = [f for f in run_review(ctx) if f.code != "depends-on-missing" or not _said(f, tier_report.findings)]
    if base is not None:
        findings = review.with_moves(findings, ctx.head, base, tree)
    # A stale spec.path is said once: as the build failure, with where the directory went.
    failed = {(f.path, f.line) for f in findings if f.code == "build-failed"}
    findings += [f for f in tier_report.findings if f.code != "tier-path-moved" or (f.path, f.line) not in failed]
    findings = acceptance.judge(findings, acceptance.read_accepted(tree), base is not None)
    return Plan(
        config=config,
        graph=WaveGraph({}),
        files=(),
        waves=(),
        changes=(),
        findings=tuple(sorted(set(findings), key=Finding.sort_key)),
        template_source="",
        tier_report=tier_report,
        mode=mode,
    )


def _said(finding: Finding, others: Sequence[Finding]) -> bool:
    """Whether the tier checks already report this dependsOn problem of the same file."""
    return any(f.code == finding.code and f.path == finding.path for f in others)


def _retire(
    tree: Tree, config: Config, adoption: cutover.Cutover, waves: tuple[int, ...], fix_overlays: bool,
    rest: cutover.Remainder | None = None,
) -> list[Change]:
    """Cutover step 2: delete the legacy Kustomization's document, every line referring to the legacy
    Kustomization (its base entry, overlay patches for it) and the patch files only it used. With
    --fix-overlays the remainder's and the waves' base entries take the legacy entry's place, in its
    style. With a remainder, the overlay patches for the legacy aim at it instead. (The apps
    directory's own kustomization is the remainder's business: `cutover.remainder`.)"""
    legacy = adoption.legacy
    retired = cutover.retire_change(tree, legacy)
    refs = kustomization_references(tree, config, legacy.name, legacy.path)
    base_entry = next((r for r in refs if r.key == "resources"), None)
    if retired.action != "delete":  # the file keeps other documents, so its entry stays
        refs = tuple(r for r in refs if r.key != "resources")
    read = {r.path: tree.read(r.path) for r in [*refs, *([base_entry] if base_entry else [])]}
    if fix_overlays and base_entry is not None:
        read[base_entry.path] = cutover.wave_base_entries(read[base_entry.path], base_entry.item, legacy, waves, config,
                                                          rest)
    rewrites: list[Change] = []
    if rest is not None:  # what the overlays gave the legacy, they give the rest of its tree
        patches = [r for r in refs if r.key != "resources"]
        done, rewrites = cutover.retarget(tree, read, patches, legacy, rest, unused_patch_files(tree, patches))
        refs = tuple(r for r in refs if r not in done)
    changes = removal_changes(read, [r.item for r in refs])
    for path, data in read.items():
        if path not in {c.path for c in changes} and data != tree.read(path):
            changes.append(Change("update", path, content=data))
    changes += rewrites
    changes.append(retired)
    for path in sorted(unused_patch_files(tree, refs)):
        if tree.kind(path) == "file":
            changes.append(Change("delete", path))
    return changes


def _built_units(tree: Tree, files: list[AppFile]) -> dict[str, frozenset[str]]:
    """Moving unit directory -> what its kustomization's build applies, objects from bases and
    components outside it included (their move loses them as much as the unit's own)."""
    out = {}
    for file in files:
        if file.is_dir and file.moves and find_kustomization(tree, file.path) is not None:
            try:
                out[file.path] = frozenset(str(o.id) for o in kustomize.build(tree, file.path).objects)
            except WaveBotError:
                continue  # the inventory reports what does not build
    return out


def _unit_waves(files: list[AppFile]) -> dict[Slot, list[str]]:
    """Wave -> the units moving into it (their current paths)."""
    out: dict[Slot, list[str]] = {}
    for file in files:
        if file.node is not None and file.target_wave is not None and file.moves:
            out.setdefault(file.target_wave, []).append(file.path)
    return {n: sorted(paths) for n, paths in sorted(out.items(), key=lambda item: order(item[0]))}


def _unit_paths(files: list[AppFile]) -> list[str]:
    """Where the declared units are now (file or directory)."""
    return [f.path for f in files if f.node is not None]


def _compact(changes: list[Change]) -> list[Change]:
    """One change per file: later edits of a file written earlier in the list fold into that write."""
    out: list[Change] = []
    at: dict[str, int] = {}
    for change in changes:
        i = at.get(change.path)
        if i is not None and change.action == "update" and out[i].action in ("create", "update"):
            out[i] = dataclasses.replace(out[i], content=change.content)
            continue
        if change.action != "move":
            at[change.path] = len(out)
        out.append(change)
    return out


def _release_plan(
    tree: Tree, config: Config, graph: WaveGraph, files: list[AppFile], existing: set[int],
    adoption: cutover.Cutover, here: Inventory, before: Inventory | None, cache: ParseCache,
) -> Plan:
    """Cutover step 1: nothing moves; the legacy Kustomization only stops pruning."""
    release = cutover.release_change(tree, adoption.legacy)
    changes = (release,) if release is not None else ()
    staying = [dataclasses.replace(f, target=f.path, target_wave=f.wave) for f in files]
    deepest = max((f.target_wave for f in files if isinstance(f.target_wave, int)), default=None)
    # What the legacy applies as Flux builds it (group components, generated kustomizations included):
    # the count and the protection commands name every object deleting it could delete.
    built = cutover.legacy_build(read_model(tree, config), adoption.legacy)
    step_1 = cutover.step_1_finding(adoption, here, config, deepest, built)
    outside = cutover.outside_units(here, adoption.legacy, _unit_paths(files), config)
    if outside:
        note = cutover.outside_units_note(adoption.legacy, outside)
        step_1 = dataclasses.replace(step_1, message=f"{step_1.message}. {note}")
    try:  # what would stop step 2 is said now, while step 1 waits to be deployed
        grouping.regroup(tree, config, files)
    except WaveBotError as exc:
        step_1 = dataclasses.replace(step_1, message=f"{step_1.message}. Step 2 will stop at {exc.location()}: "
                                                     f"{exc.message}; {exc.hint}")
    # Nothing moves at step 1, so a file no unit places changes nothing yet: step 2 needs it placed
    # (step 1's finding names every part), but this change itself must pass `check`.
    findings = [dataclasses.replace(f, severity="warning") if f.code == "unplaced-file" else f
                for f in _placement_findings(staying, graph, config)]
    findings.append(step_1)
    placed = [dataclasses.replace(f, path=f.target, wave=f.target_wave) for f in files]
    split_sides = tuple(sorted({f.target_wave for f in files if isinstance(f.target_wave, Side)}))
    split = Plan(config, graph, tuple(placed), tuple(range(deepest + 1)) if deepest is not None else (), (), (),
                 adoption.legacy.path, sides=split_sides)
    if before is not None:
        now = read_inventory(PlannedTree(tree, changes), config, cache)
        findings += deletes.hazard_findings(before, now, config)
    return Plan(
        config=config,
        graph=graph,
        files=tuple(staying),
        waves=tuple(sorted(existing)),
        changes=changes,
        findings=tuple(sorted(set(findings), key=Finding.sort_key)),
        template_source=adoption.legacy.path,
        split=split,
    )


def _generated(
    tree: Tree, files: list[AppFile], waves: tuple[Slot, ...], template: Mapping[str, Any], config: Config,
    given: frozenset[str] = frozenset(),
) -> dict[str, bytes]:
    """Each wave's files. `given`: units that get a kustomization of their own in this change (their
    wave lists the directory)."""
    resources: dict[Slot, list[str]] = {n: [] for n in waves}
    for file in files:
        if file.target_wave is not None:
            resources[file.target_wave] += [file.listed(config)] if file.path in given else units.listing(
                tree, file.path, file.listed(config), file.is_dir)
    out: dict[str, bytes] = {}
    for n in waves:
        kustomization, cr = wave_files(n, config)
        out[kustomization] = render.wave_kustomization(resources[n])
        out[cr] = render.wave_cr(n, template, config)
    return out


def _writes(tree: Tree, generated: Mapping[str, bytes]) -> list[Change]:
    changes = []
    for path, content in sorted(generated.items()):
        kind = tree.kind(path)
        if kind is None:
            changes.append(Change("create", path, content=content))
        elif kind != "file":
            raise refuse_link(path) if kind == "link" else WaveBotError(
                "stands where wave-bot writes a generated file", path=path, hint="move it away"
            )
        elif tree.read(path) != content:
            changes.append(Change("update", path, content=content))
    return changes


def _check_configured_dirs(tree: Tree, config: Config) -> None:
    """A directory the config names must exist: a typo there would otherwise create a second layout."""
    for key in ("apps_dir", "base_dir"):
        value = getattr(config, key)
        if config.where(key)[0] is not None and tree.kind(value) != "dir":
            raise missing_dir(tree, config, key, value, key.replace("_dir", " directory"))


def _unplaced_fix(file: AppFile, graph: WaveGraph, config: Config, taken: frozenset[str] = frozenset()
                  ) -> tuple[str, str | None]:
    """How to place the file (the message's last sentence) and, when its name can be a node's, the
    ServiceDefinition that places it, ready to paste. `taken`: the app files' names.

    A rename keeps the file's own suffix and its `.sops` (a `.sops.yaml` `path_regex` relies on it)
    and is offered only onto a name no file has: proposing `plex.yaml` for an orphaned `pihole.yaml`
    would overwrite plex."""
    stem = file_stem(file.name) if not file.is_dir else file.name
    suffixes = [s for s in config.file_suffixes if s and stem.endswith(s)]
    suffix = suffixes[0] if suffixes else ""
    name = stem[: -len(suffix)] if suffix else stem
    ending = file.name[len(stem):] if not file.is_dir else ""  # `.sops.yaml`, `.yaml` or `.yml`
    matches = difflib.get_close_matches(name, list(graph.nodes), n=3)
    if file.is_dir:  # a directory belongs to the node of its very name: no suffixes
        renames = [r for r in (f"{node}/" for node in matches) if r.rstrip("/") not in taken][:1] or ["<node>/"]
    else:
        renames = [r for r in (f"{node}{suffix}{ending}" for node in matches) if r not in taken][:1]
    if not file.is_dir and file.listed(config) != file.name:
        # In a grouping folder only directories are units: no name or definition places this file.
        return (f"A file in a grouping folder is no unit: move it into the directory of the unit that needs it "
                f"(git mv {file.path} {posixpath.dirname(file.path)}/<unit>/)", None)
    ways = [f"rename it after the node it belongs to ({renames[0]})"] if renames else []
    ways.append(f"list it in an extra unit's files: in {config.source}")
    declared = graph.declared_in(config)
    if is_dns_label(name):
        ways.insert(0, f"declare '{name}' under dependencies in {declared} (with what it needs)" if declared
                    else f"add the ServiceDefinition {config.catalog_dir}/{name}.yaml below")
    how = "To place it, " + (f"{', '.join(ways[:-1])}, or {ways[-1]}" if len(ways) > 1 else ways[0])
    if not is_dns_label(name):
        return how, None
    if declared:
        return how, f"# in {declared}: list what it needs\ndependencies:\n  {name}: []\n"
    return (how,
            f"# create {config.catalog_dir}/{name}.yaml:\n# (apiVersion as in your other catalog files)\n"
            f"kind: ServiceDefinition\nmetadata:\n  name: {name}\nspec:\n  dependencies: []\n")


def _elsewhere(findings: list[Finding], now: Inventory) -> list[Finding]:
    """An unplaced file another Flux Kustomization applies (the remainder the cutover left: the rest of
    the legacy's tree) is applied as it is, not lost: said as information, not as an error."""
    owners: dict[str, str] = {}
    for o in now.others:
        owners.setdefault(o.path, o.owner)
    out = []
    for f in findings:
        owner = owners.get(f.path or "") or next((o for p, o in owners.items() if p.startswith(f"{f.path}/")), None)
        if f.code == "unplaced-file" and owner is not None:
            f = dataclasses.replace(f, severity="info", fix=None, message=(
                f"{f.path}: no unit owns it, and the Flux Kustomization {owner} applies it where it is (not a wave); "
                "declare it as a unit to move it into one"))
        out.append(f)
    return out


def _placement_findings(files: list[AppFile], graph: WaveGraph, config: Config) -> list[Finding]:
    findings = []
    taken = frozenset(f.name for f in files)
    for file in files:
        if file.node is not None:
            continue
        folder = posixpath.dirname(file.path)
        where = (f"stays in wave {file.wave}" if file.wave is not None else f"stays directly in {config.apps_dir}/"
                 if folder == config.apps_dir else f"stays in {folder}/")
        what = "directory" if file.is_dir else "file"
        how, fix = _unplaced_fix(file, graph, config, taken)
        declared = graph.declared_in(config)
        nodes = f"unit in the dependencies of {declared}" if declared else "catalog node"
        findings.append(Finding(
            code="unplaced-file",
            severity="error",
            message=f"{file.path}: no {nodes} owns this {what}, so wave-bot cannot place it; it {where}. {how}",
            path=file.path,
            wave=file.wave,
            fix=fix,
        ))
    placed = {f.node for f in files}
    for name, node in graph.nodes.items():
        if name not in placed:
            findings.append(Finding(
                code="not-onboarded",
                severity="info",
                message=f"{name} (wave {node.wave}) has no app files yet: computed, not placed",
                wave=node.wave,
                resource=name,
            ))
    return findings
