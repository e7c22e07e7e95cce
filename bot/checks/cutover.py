"""The transitions of the app tier beyond onboarding: removing a wave, and the cutover from `apps`.

Both follow one principle: `apply` performs the next step that is safe for what is deployed (the
base revision), and the report says which step it is and what comes next.

Removing a wave: once the deployed wave applies nothing, its generated files go together with the
lines that refer to its Flux Kustomization (the base entry, overlay patches aimed only at it), so
every overlay keeps building. Without `--fix-overlays` wave-bot keeps the wave and quotes the exact
lines; deleting them by hand is the step, and the next `apply` deletes the wave.

The cutover (docs/design.md §4.1), for a repository whose app tier is one Flux Kustomization `apps`
with `path: ./<apps_dir>`:
- step 1, deployed with prune: true (and no deletionPolicy: Orphan): only `prune: false` on it;
- step 2, deployed with prune: false (or Orphan): the whole split at once.
"""
from __future__ import annotations

import posixpath
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bot.checks.removal import ListItem
from bot.config import Config
from bot.errors import WaveBotError
from bot.flux.inventory import FluxKustomization, Inventory, OwnedResource, source_dir
from bot.flux.vocabulary import FLUX_GROUP, PRUNE_DISABLED, PRUNE_KEY
from bot.kustomize.repository import read_kustomizations
from bot.layout import render
from bot.model import Change, Finding, FindingObject
from bot.repo.tree import Tree
from bot.resid import ResourceId
from bot.yamlio import documents as yamlio
from bot.yamlio import edit as yamledit


@dataclass(frozen=True)
class Cutover:
    """Where a repository with the legacy app tier stands, and the step `apply` takes."""

    legacy: FluxKustomization
    """The legacy Kustomization as the work tree defines it."""
    step: int
    """1: release it (prune: false) first; 2 (deployed so that deleting it deletes nothing): the whole split."""
    deployed: str
    """How the deployed state was learnt: 'the base revision' or 'the work tree (no --base)'."""


def legacy_kustomization(flux: Sequence[FluxKustomization], config: Config) -> FluxKustomization | None:
    """The Flux Kustomization that applies the apps directory itself (`path: ./<apps_dir>`)."""
    found = [k for k in flux if source_dir(k) == posixpath.normpath(config.apps_dir)]
    return found[0] if found else None


def cutover(tree_flux: Sequence[FluxKustomization], base_inventory: Inventory | None, config: Config,
            ) -> Cutover | None:
    """The cutover step for this tree (its Flux Kustomizations); None without a legacy Kustomization."""
    legacy = legacy_kustomization(tree_flux, config)
    if legacy is None:
        return None
    deployed: FluxKustomization | None
    if base_inventory is None:
        deployed, where = legacy, "the work tree (no --base given, so it is taken as deployed)"
    else:
        deployed, where = legacy_kustomization(base_inventory.flux, config), "the base revision"
    releases = deployed is None or not deployed.deletes_on_removal
    return Cutover(legacy, 2 if releases else 1, where)


def legacy_document(tree: Tree, legacy: FluxKustomization) -> tuple[int, yamlio.Document]:
    """The legacy Kustomization's own document in its file (any name, any position), and its index."""
    data = tree.read(legacy.path)
    for index, doc in enumerate(yamlio.load(data, legacy.path)):
        value = doc.value
        if (isinstance(value, dict) and value.get("kind") == "Kustomization"
                and str(value.get("apiVersion", "")).startswith(FLUX_GROUP + "/")
                and isinstance(value.get("metadata"), dict) and value["metadata"].get("name") == legacy.name):
            return index, doc
    raise WaveBotError(f"holds no Flux Kustomization {legacy.name}", path=legacy.path)  # read from it just now


def legacy_template(tree: Tree, legacy: FluxKustomization) -> Mapping[str, Any]:
    """Step 2's template for the waves: the legacy document itself (whatever its file is called and
    wherever in it), all but its name, path and dependsOn, with `prune: true` again (step 1 released
    it, or the user did, only for the cutover)."""
    _, doc = legacy_document(tree, legacy)
    template = render.template_of(doc.value, legacy.path)
    return {**template, "spec": {**template["spec"], "prune": True}}


def check_wave_roots(flux: Sequence[FluxKustomization], legacy: FluxKustomization, depends_on: Sequence[str]) -> None:
    """Wave 0 must depend only on Flux Kustomizations the repository has: one it does not have is never
    Ready, and every wave would wait behind it forever."""
    names = {k.name for k in flux}
    missing = [name for name in depends_on if name not in names]
    if missing:
        raise WaveBotError(
            f"wave 0 would depend on {', '.join(missing)}, which no Flux Kustomization in the repository is "
            f"named, so no wave would ever start; {legacy.name} here depends on "
            f"{', '.join(legacy.depends_on) or 'nothing'}",
            path=legacy.path, line=legacy.line,
            hint="set root_depends_on in .wave-bot.yaml to the Flux Kustomizations the app tier waits for "
                 f"(or drop it, and wave 0 depends on what {legacy.name} depends on), then run wave-bot again")


def retire_change(tree: Tree, legacy: FluxKustomization) -> Change:
    """Step 2's edit of the legacy Kustomization's file: its document goes, every other document and
    comment stays byte for byte; the file goes only when the legacy was all it held."""
    index, _ = legacy_document(tree, legacy)
    rest = yamledit.remove_document(tree.read(legacy.path), legacy.path, index)
    return Change("delete", legacy.path) if rest is None else Change("update", legacy.path, content=rest)


def _release_setting(legacy: FluxKustomization) -> tuple[str, str]:
    """The one spec field (and value) that makes deleting `legacy` delete nothing: with these
    policies the finalizer deletes whatever spec.prune says, so only Orphan releases."""
    if legacy.deletion_policy in ("Delete", "WaitForTermination"):
        return "deletionPolicy", "Orphan"
    return "prune", "false"


def release_change(tree: Tree, legacy: FluxKustomization) -> Change | None:
    """Step 1's only edit: `prune: false` (or `deletionPolicy: Orphan`) on the legacy Kustomization.

    Only the value on that one line changes; comments and formatting stay. None when the work tree
    already releases it (the pull request made step 1 itself).
    """
    if not legacy.deletes_on_removal:
        return None
    data = tree.read(legacy.path)
    index, doc = legacy_document(tree, legacy)
    spec = doc.value.get("spec") or {}
    key, value = _release_setting(legacy)
    lines = data.decode().splitlines(keepends=True)
    at = doc.info.line(("spec", key)) - 1
    released = False if key == "prune" else value
    if key in spec and spec[key] == released:
        # The file releases it already, so an overlay's patch makes it delete: editing this line
        # would change nothing, and step 1 would come back after every merge.
        raise WaveBotError(f"spec.{key} is already {value} here, yet {legacy.name} deletes what it owns on removal: "
                           f"an overlay's patch sets {'prune: true' if key == 'prune' else 'its deletionPolicy'} "
                           "on it, which step 1 cannot release by editing this file",
                           path=legacy.path, line=at + 1,
                           hint=f"set spec.{key}: {value} in that patch (or drop spec.{key} from it), then run "
                                "wave-bot again")
    edited = re.sub(rf"^(\s*{key}:\s*)([^\s#]+|\"[^\"]*\"|'[^']*')", rf"\g<1>{value}", lines[at], count=1)
    out = "".join([*lines[:at], edited, *lines[at + 1:]]).encode()
    check = yamlio.load(out, legacy.path)[index]
    want = {**spec, key: released}
    if key not in spec or check.value.get("spec") != want:
        raise WaveBotError(f"cannot set spec.{key}: {value} on {legacy.name} by editing one line",
                           path=legacy.path, line=at + 1, hint=f"set spec.{key}: {value} by hand")
    return Change("update", legacy.path, content=out)


def wave_base_entries(
    data: bytes, entry: ListItem, legacy: FluxKustomization, waves: Sequence[int], config: Config
) -> bytes:
    """The base kustomization with an entry per wave right after the legacy entry, in its style; the
    legacy entry itself is removed separately.

    The legacy line's comment describes `apps` (`# Flux Kustomization -> ./apps (all app manifests)`):
    copied, it would say something false on every wave's line. A wave's line gets a comment of its
    own when the legacy one had a comment, else none.
    """
    text = yamledit.item_text(data, entry.path, entry.key, entry.index)
    legacy_file = posixpath.basename(legacy.path)
    first, _, rest = text.partition("\n")
    commented = re.fullmatch(r"(-\s+\S+)(\s+)#.*", first)
    for k, n in enumerate(waves):
        line = yamledit.substitute(commented.group(1) if commented else first,
                                   {legacy_file: posixpath.basename(config.wave_cr_path(n))})
        if commented:
            line += (f"{commented.group(2)}# Flux Kustomization -> ./{config.wave_dir(n)} "
                     f"(dependsOn {', '.join(config.wave_depends_on(n)) or 'nothing'})")
        data = yamledit.insert_item(data, entry.path, entry.key, f"{line}\n{rest}", after=entry.index + k)
    return data


def _part(path: str, units: Sequence[str], config: Config) -> str:
    """The part of the legacy's tree `path` belongs to: below the apps directory, its shallowest
    directory holding no unit (so a whole undeclared tree is named once); elsewhere, the file."""
    apps = posixpath.normpath(config.apps_dir)
    if not path.startswith(apps + "/"):
        return path
    parts = path[len(apps) + 1:].split("/")
    for depth in range(1, len(parts)):
        folder = "/".join([apps, *parts[:depth]])
        if not any(u == folder or u.startswith(folder + "/") for u in units):
            return folder + "/"
    return path


def object_key(rid: ResourceId, loose: bool) -> str:
    """How `left_behind` tells objects apart: `loose` leaves the namespace out (a legacy with a
    targetNamespace, which the waves copy: the inventory of each side may place it differently)."""
    return f"{rid.group}/{rid.kind}/{rid.name}" if loose else str(rid)


def left_behind(legacy_objects: Sequence[OwnedResource], applied: set[str], units: Sequence[str],
                config: Config, loose: bool = False) -> dict[str, int]:
    """Part of the legacy's tree -> how many of its objects nothing applies once the legacy is gone
    (`applied`: `object_key` of every object a Flux Kustomization applies then)."""
    out: dict[str, int] = {}
    for o in legacy_objects:
        if object_key(o.id, loose) not in applied:
            part = _part(o.path, units, config)
            out[part] = out.get(part, 0) + 1
    return dict(sorted(out.items()))


def outside_units(inventory: Inventory, legacy: FluxKustomization, units: Sequence[str], config: Config
                  ) -> dict[str, int]:
    """Step 1's view of `left_behind`: the legacy's objects defined under the apps directory outside
    every declared unit (what the split moves)."""
    apps = posixpath.normpath(config.apps_dir)
    mine = [o for o in inventory.others if o.owner == legacy.name and o.path.startswith(apps + "/")
            and not any(o.path == u or o.path.startswith(u + "/") for u in units)]
    return left_behind(mine, set(), units, config)


def left_behind_error(legacy: FluxKustomization, parts: Mapping[str, int], config: Config) -> WaveBotError:
    """Step 2 refused: the split would leave what `legacy` applies outside the declared units applied by
    nothing. Refused rather than given a Kustomization wave-bot makes up: that tree (often the
    platform: CNI, storage, certificates) needs a name, an order and health checks the user decides."""
    listed = ", ".join(f"{part} ({count} object(s))" for part, count in parts.items())
    total = sum(parts.values())
    return WaveBotError(
        f"the split would leave {total} object(s) {legacy.name} applies outside the declared units applied by no "
        f"Flux Kustomization once {legacy.name} is gone: {listed}",
        path=legacy.path, line=legacy.line,
        hint=f"declare what each holds as units under dependencies (a directory in a grouping folder, a file or "
             f"directory directly in {config.apps_dir}/) so that it moves into a wave, or move it out of "
             f"{config.apps_dir}/ into a tree another Flux Kustomization applies "
             "(a file of a grouping folder: into the unit that needs it), then run wave-bot again")


def _moved(path: str, moving: Mapping[str, str]) -> tuple[str | None, str]:
    """The moving unit `path` is in (None: none) and where `path` is once moved. Units do not nest, so
    the one `path` is in is the first of its ancestors that moves: a look-up per level, not a scan of
    every move (a repository of thousands of units moves thousands)."""
    probe = path
    while probe and probe != ".":
        target = moving.get(probe)
        if target is not None:
            return probe, target + path[len(probe):]
        probe = posixpath.dirname(probe)
    return None, path


def _ancestors(paths: Iterable[str]) -> set[str]:
    """Every directory strictly above one of `paths`."""
    out: set[str] = set()
    for path in paths:
        parent = posixpath.dirname(path)
        while parent and parent not in out:
            out.add(parent)
            parent = posixpath.dirname(parent)
    return out


def check_references_kept(tree: Tree, moves: Sequence[Change], replaced: Sequence[str], config: Config,
                          rewritten: Collection[tuple[str, int]] = ()) -> None:
    """Refuse a move that breaks a build: a kustomization that names a path across a moving unit's
    boundary (into it from outside, or out of it from inside) would no longer build once the unit is one
    level deeper in its wave. `replaced`: the kustomizations this change regenerates or deletes. The
    apps directory's and the grouping folders' own kustomizations list the units as the waves will:
    the cutover replaces them, and without a legacy Kustomization nothing builds them. `rewritten`:
    (kustomization, line) of the entries this change rewrites (`grouping.rewrite_references`)."""
    moving = {c.source: c.path for c in moves if c.action == "move" and c.source}
    if not moving:
        return
    gone = set(replaced)
    apps = posixpath.normpath(config.apps_dir)
    above_units = _ancestors(moving)
    for ref in read_kustomizations(tree, "").references:
        folder = posixpath.dirname(ref.kustomization)
        if ref.kustomization in gone or folder == apps or folder.startswith(apps + "/") and folder in above_units:
            continue
        if (ref.kustomization, ref.line) in rewritten:
            continue
        here, here_after = _moved(ref.kustomization, moving)
        there, there_after = _moved(ref.path, moving)
        relative = posixpath.relpath(ref.path, posixpath.dirname(ref.kustomization) or ".")
        if posixpath.normpath(posixpath.join(posixpath.dirname(here_after), relative)) == there_after:
            continue  # inside one unit, neither moving, or a move at the same depth: the entry still holds
        write = posixpath.relpath(there_after, posixpath.dirname(here_after))
        if here is None and there is not None:
            raise WaveBotError(
                f"{ref.key} entry {ref.written} builds on {ref.path}, which this change moves into a wave "
                f"({there_after}): this kustomization would no longer build, and the wave would apply {there} a "
                "second time, without what this kustomization adds to it",
                path=ref.kustomization, line=ref.line,
                hint=f"a unit is applied by its wave alone: do not declare {posixpath.basename(there)} as a unit "
                     f"while {posixpath.dirname(ref.kustomization) or '.'}/ builds on it (a per-environment overlay "
                     "of a shared base cannot be split into waves this way; point apps_dir at the directory the "
                     "cluster's app Kustomization applies and declare its own directories), then run wave-bot again")
        assert here is not None  # neither moving keeps every entry
        raise WaveBotError(
            f"{ref.key} entry {ref.written} names {ref.path}, outside the unit {here}, which this change moves to "
            f"{moving[here]}: from there the entry would name another path and the unit would no longer build",
            path=ref.kustomization, line=ref.line,
            hint=f"make the path independent of the unit's place (move what it names into {here}/), or move "
                 f"{here} to {moving[here]} yourself and write {write} on that line, then run wave-bot again")


def stateful_objects(inventory: Inventory, legacy: FluxKustomization, config: Config) -> list[OwnedResource]:
    """The objects the legacy Kustomization applies whose deletion loses data."""
    from bot.flux.stateful import is_stateful

    return [o for o in inventory.others if o.owner == legacy.name and is_stateful(o.id, config)]


def step_1_finding(c: Cutover, inventory: Inventory, config: Config, deepest: int | None = None) -> Finding:
    name, ns = c.legacy.name, c.legacy.id.namespace or "flux-system"
    stateful = stateful_objects(inventory, c.legacy, config)
    owned = sum(1 for o in inventory.others if o.owner == name)
    key, value = _release_setting(c.legacy)
    setting = f"{key}: {value}"
    deployed_with = "prune: true" if key == "prune" else f"deletionPolicy: {c.legacy.deletion_policy}"
    annotate = "\n".join(
        f"kubectl{f' -n {o.id.namespace}' if o.id.namespace else ''} annotate "
        f"{o.id.kind.lower()}{'.' + o.id.group if o.id.group else ''}/{o.id.name} {PRUNE_KEY}={PRUNE_DISABLED}"
        for o in stateful
    )
    kinds: dict[str, int] = {}
    for o in stateful:
        kinds[f"{o.id.group}/{o.id.kind}" if o.id.group else o.id.kind] = kinds.get(
            f"{o.id.group}/{o.id.kind}" if o.id.group else o.id.kind, 0) + 1
    listed = ", ".join(f"{count} {kind}" for kind, count in sorted(kinds.items())) or "no stateful object found"
    into = f"waves 0 to {deepest}" if deepest else "wave 0" if deepest == 0 else "waves"
    return Finding(
        code="cutover-step-1",
        severity="warning",
        message=f"cutover step 1 of 2: {ns}/{name} ({c.legacy.path}:{c.legacy.line}) is deployed with {deployed_with} "
                f"(according to {c.deployed}). Splitting the app tier removes it, and deleting a Kustomization "
                f"that prunes deletes everything it still owns ({owned} object(s) here; the stateful ones: {listed}). "
                f"So this change only sets `{setting}` on it, and nothing moves. Next: merge "
                f"it, wait until it has reconciled (`flux get kustomization {name}`; `kubectl -n {ns} get "
                f"kustomization {name} -o jsonpath='{{.spec.{key}}}'` prints {value}), then run wave-bot again "
                "(push to this branch, re-run the workflow, or `wave-bot apply --base <the deployed revision> "
                f"--fix-overlays`): step 2 splits the app tier into {into}. Optionally protect the stateful "
                "objects meanwhile with the commands in the fix",
        path=c.legacy.path,
        line=c.legacy.line,
        resource=str(c.legacy.id),
        fix=annotate or None,
        # Removing it before the release is deployed would delete these: the objects at risk.
        objects=tuple(FindingObject.of(o.id, True) for o in stateful),
    )


def step_2_finding(c: Cutover, inventory: Inventory, config: Config, waves: Sequence[int],
                   template_source: str = "", file_kept: bool = False) -> Finding:
    name = c.legacy.name
    template = (f"each a copy of {name} from {c.legacy.path} but for name, path and dependsOn, with prune: true"
                if template_source in ("", c.legacy.path) else f"generated from {template_source} as the template")
    kept = (" (the file keeps its other documents, and its base entry stays)" if file_kept
            else " (the file with it, and its base entry)")
    stateful = stateful_objects(inventory, c.legacy, config)
    checks = [f"kubectl get {o.id.kind.lower()}{'.' + o.id.group if o.id.group else ''} "
              f"{'-n ' + o.id.namespace + ' ' if o.id.namespace else ''}{o.id.name}" for o in stateful]
    first = stateful[0] if stateful else None
    label = (f"kubectl{' -n ' + first.id.namespace if first and first.id.namespace else ''} get "
             f"{first.id.kind.lower()}/{first.id.name} -o jsonpath='{{.metadata.labels.kustomize\\.toolkit\\.fluxcd"
             "\\.io/name}'" if first else "")
    verify = "\n".join(["flux get kustomizations", *checks, "kubectl get deploy -A -o wide", *([label] if label
                                                                                                 else [])])
    return Finding(
        code="cutover-step-2",
        severity="info",
        message=f"cutover step 2 of 2: {name} is deployed without pruning on removal (according to {c.deployed}), "
                f"so this change splits the app tier at once: every manifest moves byte for byte into waves "
                f"{', '.join(map(str, waves))} ({template}), "
                f"and {name}'s document in {c.legacy.path}{kept}, {config.apps_dir}/kustomization.yaml (and each "
                f"grouping folder's units' entries in its kustomization: the units take what it did to them "
                f"along) and the overlay "
                f"patches (and patch files) only {name} matched are removed. On merge Flux deletes {name} "
                "without deleting anything it applied, and the waves adopt every object in place. Next: merge, "
                "then verify with the commands in the fix (waves Ready, databases and PVCs with their original "
                "age, labels moved to the waves)",
        path=c.legacy.path,
        line=c.legacy.line,
        resource=str(c.legacy.id),
        fix=verify,
        objects=tuple(FindingObject.of(o.id) for o in stateful),  # the ones to verify: adopted, not deleted
    )


__all__ = [
    "Cutover", "check_references_kept", "check_wave_roots", "cutover", "left_behind",
    "left_behind_error", "legacy_document", "legacy_kustomization", "legacy_template", "object_key", "outside_units",
    "release_change", "retire_change", "stateful_objects", "step_1_finding", "step_2_finding", "wave_base_entries",
]
