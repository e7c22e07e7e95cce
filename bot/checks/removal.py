"""Removing an empty wave: when a wave may go, what refers to it, and the changes that remove it."""
from __future__ import annotations

import posixpath
from collections.abc import Sequence
from dataclasses import dataclass, field

from bot.config import Config
from bot.errors import WaveBotError
from bot.flux.evalpaths import EvalPath, discover_overlays, evaluation_paths
from bot.flux.inventory import Inventory, clusters_dir
from bot.flux.vocabulary import FLUX_GROUP
from bot.kustomize.build import build
from bot.kustomize.files import read_patch
from bot.kustomize.repository import Kustomizations, PatchEntry, read_kustomizations
from bot.kustomize.spec import KUSTOMIZATION
from bot.model import Change, Finding
from bot.repo.tree import Tree
from bot.side import Side, Slot
from bot.yamlio import edit as yamledit


def wave_emptied_findings(base: Inventory, now: Inventory, config: Config) -> list[Finding]:
    """`wave-emptied`: a wave that applied objects at base and applies none now."""
    findings = []
    now_counts = now.counts()
    for wave, count in base.counts().items():
        # A wave this change deletes outright is not kept: deleting its Flux Kustomization is
        # kustomization-removed's error, which says how to do it safely.
        if count == 0 or now_counts.get(wave) != 0:
            continue
        cr = config.wave_cr_name(wave)
        findings.append(Finding(
            code="wave-emptied",
            severity="warning",
            message=f"wave {wave} applied {count} object(s) at base and applies none now. wave-bot keeps "
                    f"{config.wave_dir(wave)}/kustomization.yaml (with resources: []) and {cr}, because "
                    f"deleting a Flux Kustomization with prune: true deletes everything it still owns. Once "
                    f"{cr} has reconciled the empty wave it owns nothing, and wave-bot removes it when it is "
                    f"{'still empty in a later change' if isinstance(wave, Side) else 'beyond the deepest wave'}",
            path=f"{config.wave_dir(wave)}/kustomization.yaml",
            wave=wave,
            resource=_wave_cr_resource(base, config, wave),
        ))
    return findings


def _wave_cr_resource(inventory: Inventory, config: Config, wave: Slot) -> str | None:
    """str() of the wave's Flux Kustomization as `inventory` defines it; None when it does not."""
    name = config.wave_cr_name(wave)
    return next((str(k.id) for k in inventory.flux if k.id.name == name), None)


def removable_waves(base: Inventory, now: Inventory, deepest: int | None) -> tuple[int, ...]:
    """Waves beyond `deepest` (the new layout's last wave; None: no wave) that wave-bot may delete.

    A wave may go only when it applied nothing at base (its Flux Kustomization owns nothing, so
    deleting it deletes nothing) and applies nothing now. Waves go from the top down: removing a
    wave below one that stays would break the dependsOn chain, so the first wave that must stay
    stops the walk.
    """
    base_counts, now_counts = base.counts(), now.counts()
    candidates = sorted((n for n in {*base_counts, *now_counts}
                         if not isinstance(n, Side) and (deepest is None or n > deepest)), reverse=True)
    removable = []
    for wave in candidates:
        if base_counts.get(wave) or now_counts.get(wave):
            break
        removable.append(wave)
    return tuple(sorted(removable))


@dataclass(frozen=True, order=True)
class FluxReference:
    """A line outside the wave's own files that refers to its Flux Kustomization."""

    path: str
    line: int
    what: str
    key: str = field(default="", compare=False)
    """The top-level list the line is an item of (resources, patches, ...)."""
    index: int = field(default=-1, compare=False)
    text: str = field(default="", compare=False)
    """The item's first line, as written."""
    file: str = field(default="", compare=False)
    """For a patch file: its repository path."""

    @property
    def item(self) -> ListItem:
        return ListItem(self.path, self.key, self.index)


def _why_removable(wave: Slot) -> str:
    return "holds no non-gating unit now" if isinstance(wave, Side) else "is beyond the deepest wave"


def wave_removed_finding(
    base: Inventory, wave: Slot, config: Config, references: Sequence[FluxReference] = (), removed: bool = False
) -> Finding:
    """The info finding for a wave wave-bot deletes; `references` are the lines to delete with it
    (`removed`: wave-bot deletes them too, with --fix-overlays)."""
    cr = config.wave_cr_name(wave)
    refs = sorted(references)
    listed = "; ".join(f"{r.path}:{r.line} ({r.what})" for r in refs)
    if refs and removed:
        unused = sorted({r.file for r in refs if r.file})
        left = (f". {', '.join(unused)} {'is' if len(unused) == 1 else 'are'} no longer used; wave-bot did not write "
                f"{'it' if len(unused) == 1 else 'them'}, so delete {'it' if len(unused) == 1 else 'them'} yourself"
                if unused else "")
        also = f", and removes the lines that refer to it: {listed}{left}"
    elif refs:
        also = f"; also delete {listed}"
    else:
        also = ""
    return Finding(
        code="wave-removed",
        severity="info",
        message=f"wave {wave} was already empty at base and "
                f"{_why_removable(wave)}, "
                f"so wave-bot deletes "
                f"{config.wave_dir(wave)}/ and {config.wave_cr_path(wave)}: {cr} owns nothing, so deleting it "
                f"deletes nothing{also}",
        path=config.wave_cr_path(wave),
        wave=wave,
        resource=_wave_cr_resource(base, config, wave),
        fix=None if removed else "\n".join(f"{r.path}:{r.line}" for r in refs) or None,
    )


def wave_removable_finding(base: Inventory, wave: Slot, config: Config, references: Sequence[FluxReference],
                           fix_overlays: bool = False) -> Finding:
    """`wave-removable`: the wave could go, but lines outside its files refer to it, and this apply
    does not delete them (no --fix-overlays, or lines it cannot edit).

    Deleting only the wave's files would leave those lines pointing at nothing and break the
    overlays, so wave-bot keeps the wave; deleting the lines is the step, the next apply deletes it.
    """
    cr = config.wave_cr_name(wave)
    refs = sorted(references)
    quoted = "; ".join(f"{r.path}:{r.line} `{r.text.strip()}` ({r.what})" for r in refs)
    if any(not r.key for r in refs):
        how = ("Delete those items (wave-bot does not edit a Flux Kustomization's own spec.patches, so "
               "`--fix-overlays` leaves the wave in place)")
    elif fix_overlays:  # it ran, and could not remove them: the advice to run it again would loop
        how = "Delete those items by hand (`--fix-overlays` removes no item of a flow-style list, `[a, b]`)"
    else:
        how = "Delete those items (or run `wave-bot apply --fix-overlays`)"
    return Finding(
        code="wave-removable",
        severity="info",
        message=f"wave {wave} was already empty at base and {_why_removable(wave)}, so it can go ({cr} owns "
                f"nothing), but these lines refer to it and deleting the wave alone would break the builds: "
                f"{quoted}. {how}; the next apply then "
                f"deletes {config.wave_dir(wave)}/ and {config.wave_cr_path(wave)}",
        path=refs[0].path,
        line=refs[0].line,
        wave=wave,
        resource=_wave_cr_resource(base, config, wave),
        fix="\n".join(f"{r.path}:{r.line}: {r.text.strip()}" for r in refs),
    )


def wave_references(tree: Tree, config: Config, wave: Slot) -> tuple[FluxReference, ...]:
    """Where `tree` refers to wave `wave`'s Flux Kustomization outside its own file.

    The base kustomization's `resources` entry, every patch aimed at that Kustomization alone
    (inline, a patch file, or a target naming it) in the kustomizations the overlays build with, and
    such patches in the `spec.patches` of a Flux Kustomization that builds the base or an overlay.
    """
    return waves_references(tree, config, (wave,))[wave]


def waves_references(tree: Tree, config: Config, waves: Sequence[Slot]) -> dict[Slot, tuple[FluxReference, ...]]:
    """`wave_references` of each of `waves`, reading the kustomizations and evaluation paths once."""
    if not waves:
        return {}
    model = read_kustomizations(tree, clusters_dir(config))
    used = _overlay_kustomizations(tree, config, model)
    paths = evaluation_paths(tree, config)
    out = {}
    for wave in waves:
        cr = config.wave_cr_name(wave)
        out[wave] = tuple(sorted({*_kustomization_references(tree, config, model, used, cr, config.wave_cr_path(wave)),
                                  *_flux_patch_references(tree, paths, cr)}))
    return out


def _flux_patch_references(tree: Tree, paths: Sequence[EvalPath], cr: str) -> list[FluxReference]:
    """The patches aimed at the Flux Kustomization `cr` alone in another Flux Kustomization's own
    `spec.patches`, on the evaluation paths the checks build (kustomize-controller appends them to
    the build of its spec.path). Their `key` is empty: wave-bot does not edit them, since they sit
    inside a Flux Kustomization (often in a multi-document file), not in a top-level list."""
    found: list[FluxReference] = []
    for path in paths:
        adds = path.additions
        if adds is None:
            continue
        patches = adds.value.get("patches")
        for i, entry in enumerate(patches if isinstance(patches, list) else []):
            try:
                use = read_patch(tree, adds, "patches", i, entry)
            except WaveBotError:
                continue  # kustomize-controller fails on it; the overlay checks report it
            if PatchEntry(use).aims_only_at(FLUX_GROUP, "Kustomization", cr):
                owner = path.flux.name if path.flux is not None else adds.path
                found.append(FluxReference(use.file, use.line, f"spec.patches[{i}] of the Flux Kustomization {owner}",
                                       "", i, _line_text(tree, use.file, use.line)))
    return found


def kustomization_references(tree: Tree, config: Config, cr: str, path: str) -> tuple[FluxReference, ...]:
    """Where `tree` refers to the Flux Kustomization `cr`, defined in `path`, outside that file:
    read from the one model of the repository's kustomizations (any kustomization file name)."""
    model = read_kustomizations(tree, clusters_dir(config))
    used = _overlay_kustomizations(tree, config, model)
    return tuple(sorted(set(_kustomization_references(tree, config, model, used, cr, path))))


def _kustomization_references(tree: Tree, config: Config, model: Kustomizations, used: set[str], cr: str,
                              path: str) -> list[FluxReference]:
    """`kustomization_references` in `model`; `used` are the kustomization files the overlays read."""
    found: list[FluxReference] = []
    base = model.in_directory(config.base_dir)
    for ref in model.references:
        if base is not None and ref.kustomization == base.path and ref.role == "resource" and ref.path == path:
            found.append(FluxReference(base.path, ref.line, f"resource {ref.written}", ref.key, ref.index,
                                   _line_text(tree, base.path, ref.line)))
    for entry in model.patches_aimed_only_at(FLUX_GROUP, "Kustomization", cr):
        use = entry.use
        if use.file not in used:
            continue
        if use.target is not None:
            what = f"patch targeting {cr}"
        elif use.path is not None:
            what = f"patch file {posixpath.relpath(use.path, posixpath.dirname(use.file))}"
        else:
            what = f"inline patch for {cr}"
        found.append(FluxReference(use.file, use.line, what, use.field, use.index, _line_text(tree, use.file, use.line),
                                   use.path or ""))
    return found


def unused_patch_files(tree: Tree, refs: Sequence[FluxReference]) -> list[str]:
    """The patch files of `refs` that no entry but those names (so removing the entries leaves them
    unused): any kustomization entry elsewhere that names one, aimed at anything, keeps it. Read from
    the repository root: kustomize-controller lets a kustomization anywhere name a file anywhere."""
    model = read_kustomizations(tree, "")
    removed = {(r.path, r.key, r.index) for r in refs}
    files = {r.file for r in refs if r.file}
    return sorted(f for f in files if all((u.kustomization, u.key, u.index) in removed
                                          for u in model.references if u.path == f))


def _overlay_kustomizations(tree: Tree, config: Config, model: Kustomizations) -> set[str]:
    """The kustomization files the overlays read: each overlay's own, its components', its parents'."""
    used: set[str] = set()
    for overlay in discover_overlays(tree, config):
        try:
            used.update(build(tree, overlay).kustomizations)
        except WaveBotError:  # what cannot be built still has its own kustomization
            own = model.in_directory(overlay)
            used.update([own.path] if own is not None else [])
    return used


def _line_text(tree: Tree, path: str, line: int) -> str:
    lines = tree.read(path).decode(errors="replace").splitlines()
    return lines[line - 1] if 0 < line <= len(lines) else ""


@dataclass(frozen=True, order=True)
class ListItem:
    """One item of a top-level list in a YAML file, to remove."""

    path: str
    key: str
    index: int


def removal_changes(read: dict[str, bytes], items: Sequence[ListItem]) -> list[Change]:
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


def removable_sides(before: Inventory, now: Inventory, sides: list[Side], used: set[Slot]) -> tuple[Side, ...]:
    """Side branches that applied nothing at base and apply nothing now: deleting their Flux
    Kustomization deletes nothing, and nothing depends on a side branch."""
    base_counts, now_counts = before.counts(), now.counts()
    return tuple(s for s in sides if s not in used and not base_counts.get(s) and not now_counts.get(s))


def waves_to_remove(
    tree: Tree, before: Inventory, now: Inventory, targets: set[int], config: Config, fix_overlays: bool,
    sides: tuple[Side, ...] = (),
) -> tuple[tuple[Slot, ...], dict[Slot, tuple[FluxReference, ...]], list[Change]]:
    """The waves (and the removable side branches `sides`) to delete now, the lines referring to each
    removable one, and the edits removing them.

    With --fix-overlays the lines go with the wave. Without it, a wave that lines still refer to
    stays (deleting it alone would break the builds), and so does every wave below it: waves go from
    the top down. A side branch only keeps itself: nothing depends on it.
    """
    removable: tuple[Slot, ...] = (*removable_waves(before, now, max(targets, default=None)), *sides)
    references = waves_references(tree, config, removable)
    # A line wave-bot does not edit (a Flux Kustomization's own spec.patches) keeps its wave, quoted.
    if fix_overlays and all(r.key for refs in references.values() for r in refs):
        items = [r.item for n in removable for r in references[n]]
        read = {item.path: tree.read(item.path) for item in items}
        try:
            return removable, references, removal_changes(read, items)
        except WaveBotError:
            pass  # a line wave-bot cannot remove safely (a flow-style list, ...): quote it instead
    blocked = max((n for n in removable if references[n] and not isinstance(n, Side)), default=None)
    removed = tuple(n for n in removable
                    if (not references[n] if isinstance(n, Side) else blocked is None or n > blocked))
    return removed, {n: refs for n, refs in references.items() if refs}, []


def wave_files(n: Slot, config: Config) -> tuple[str, str]:
    """The two files wave-bot generates for wave `n` (or a side branch)."""
    return f"{config.wave_dir(n)}/{KUSTOMIZATION}", config.wave_cr_path(n)


def wave_deletes(tree: Tree, waves: tuple[Slot, ...], config: Config) -> list[Change]:
    """Delete the generated files of `waves` (nothing else: a stray file keeps its directory)."""
    return [Change("delete", p) for n in waves for p in wave_files(n, config) if tree.kind(p) == "file"]


__all__ = [
    "FluxReference", "ListItem", "kustomization_references", "removable_sides", "removable_waves", "removal_changes",
    "unused_patch_files",
    "wave_deletes", "wave_emptied_findings", "wave_files", "wave_references", "wave_removable_finding",
    "wave_removed_finding", "waves_references", "waves_to_remove",
]
