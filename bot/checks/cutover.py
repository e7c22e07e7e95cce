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

import dataclasses
import posixpath
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bot.checks import grouping
from bot.checks.removal import FluxReference, ListItem, removal_changes
from bot.config import Config
from bot.errors import WaveBotError
from bot.flux.applied import FluxModel, read_model
from bot.flux.generator import GENERATED_FILE, generated_resources, has_kustomization
from bot.flux.inventory import FluxKustomization, Inventory, OwnedResource, source_dir
from bot.flux.vocabulary import DEFAULT_NAMESPACE, FLUX_GROUP, PRUNE_DISABLED, PRUNE_KEY, is_flux_kustomization
from bot.kustomize.files import find_kustomization
from bot.kustomize.repository import read_kustomizations
from bot.kustomize.spec import KUSTOMIZATION_API
from bot.layout import render
from bot.model import Change, Finding, FindingObject
from bot.repo.tree import PlannedTree, Tree
from bot.resid import ResourceId
from bot.side import Slot
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
    """The Flux Kustomization that applies the apps directory itself (`path: ./<apps_dir>`). The
    remainder step 2 leaves (the rest of the apps directory, which wave 0 depends on) is none: the
    cutover is done."""
    waits = {d for k in flux if config.slot_of_cr_file(f"{k.name}.yaml") is not None for d in k.depends_on}
    found = [k for k in flux if source_dir(k) == posixpath.normpath(config.apps_dir) and k.name not in waits]
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


def _release_settings(legacy: FluxKustomization) -> list[tuple[str, str]]:
    """The spec fields (and values) that make `legacy` delete nothing, neither when it is deleted
    nor when it reconciles a revision before the root deletes it.

    Delete and WaitForTermination make the finalizer delete whatever spec.prune says, so only Orphan
    releases a deletion; and `prune: false` is needed as well, for at step 2 the legacy may still
    reconcile the split revision before the root removes it, and with `prune: true` it would prune
    every unit that moved into a wave (real Flux did, tests/live/test_cutover_live.py)."""
    out = [("prune", "false")] if legacy.prune else []
    if legacy.deletion_policy in ("Delete", "WaitForTermination"):
        out.append(("deletionPolicy", "Orphan"))
    return out or [("prune", "false")]


def release_change(tree: Tree, legacy: FluxKustomization) -> Change | None:
    """Step 1's only edit: `prune: false` (and `deletionPolicy: Orphan` where the policy deletes
    whatever prune says) on the legacy Kustomization.

    Only the value on those lines changes; comments and formatting stay. None when the work tree
    already releases it (the pull request made step 1 itself).
    """
    if not legacy.deletes_on_removal and not legacy.prune:
        return None
    data = tree.read(legacy.path)
    index, doc = legacy_document(tree, legacy)
    spec = doc.value.get("spec") or {}
    lines = data.decode().splitlines(keepends=True)
    want = dict(spec)
    settings = _release_settings(legacy)
    for key, value in settings:
        at = doc.info.line(("spec", key)) - 1 if key in spec else -1
        released: Any = False if key == "prune" else value
        want[key] = released
        if key in spec and spec[key] == released:
            # The file releases it already, so an overlay's patch makes it delete: editing this file
            # would change nothing, and step 1 would come back after every merge.
            sets = "prune: true" if key == "prune" else "its deletionPolicy"
            raise WaveBotError(f"spec.{key} is already {value} here, yet {legacy.name} deletes what it owns on "
                               f"removal: an overlay's patch sets {sets} "
                               "on it, which step 1 cannot release by editing this file",
                               path=legacy.path, line=at + 1,
                               hint=f"set spec.{key}: {value} in that patch (or drop spec.{key} from it), then run "
                                    "wave-bot again")
        if at < 0:
            raise WaveBotError(f"cannot set spec.{key}: {value} on {legacy.name} by editing one line",
                               path=legacy.path, line=legacy.line, hint=f"set spec.{key}: {value} by hand")
        edited = re.sub(rf"^(\s*{key}:\s*)([^\s#]+|\"[^\"]*\"|'[^']*')", rf"\g<1>{value}", lines[at], count=1)
        if edited == lines[at]:
            raise WaveBotError(f"cannot set spec.{key}: {value} on {legacy.name} by editing one line",
                               path=legacy.path, line=at + 1, hint=f"set spec.{key}: {value} by hand")
        lines[at] = edited
    out = "".join(lines).encode()
    check = yamlio.load(out, legacy.path)[index]
    if check.value.get("spec") != want:
        key, value = settings[0]
        raise WaveBotError(f"cannot set spec.{key}: {value} on {legacy.name} by editing one line",
                           path=legacy.path, line=doc.info.line(("spec", key)), hint=f"set spec.{key}: {value} by hand")
    return Change("update", legacy.path, content=out)


def wave_base_entries(
    data: bytes, entry: ListItem, legacy: FluxKustomization, waves: Sequence[int], config: Config,
    rest: Remainder | None = None,
) -> bytes:
    """The base kustomization with an entry per wave right after the legacy entry, in its style; the
    legacy entry itself is removed separately.

    The legacy line's comment describes `apps` (`# Flux Kustomization -> ./apps (all app manifests)`):
    copied, it would say something false on every wave's line. A wave's line gets a comment of its
    own when the legacy one had a comment, else none.
    """
    text = yamledit.item_text(data, entry.path, entry.key, entry.index)
    legacy_file = posixpath.basename(legacy.path)
    first, _, tail = text.partition("\n")
    commented = re.fullmatch(r"(-\s+\S+)(\s+)#.*", first)
    lines: list[tuple[str, str]] = [] if rest is None else [
        (posixpath.basename(rest.file), f"./{rest.path} (the rest of {legacy.name})")]
    lines += [(posixpath.basename(config.wave_cr_path(n)),
               f"./{config.wave_dir(n)} (dependsOn {', '.join(config.wave_depends_on(n)) or 'nothing'})")
              for n in waves]
    for k, (file, says) in enumerate(lines):
        line = yamledit.substitute(commented.group(1) if commented else first, {legacy_file: file})
        if commented:
            line += f"{commented.group(2)}# Flux Kustomization -> {says}"
        data = yamledit.insert_item(data, entry.path, entry.key, f"{line}\n{tail}", after=entry.index + k)
    return data


# ---- what stays: the remainder Kustomization (issue 28, "What to build" 2) -----------------------

REST_SUFFIX = "-rest"
_REST_HEADER = (
    "# Written by wave-bot at cutover step 2: what {legacy} applied outside the units that moved into\n"
    "# waves, applied as before. Yours to edit: wave-bot only drops what a unit moving into a wave takes.\n"
)
_GENERATING_KEYS = ("components", "configMapGenerator", "secretGenerator", "generators", "helmCharts",
                    "helmChartInflationGenerator")


@dataclass(frozen=True)
class Remainder:
    """Cutover step 2: the Flux Kustomization that keeps applying what the legacy applied outside the
    declared units. Its spec is the legacy's but for name, path (the legacy's own) and dependsOn
    (the legacy's); wave 0 depends on it, as the rest is typically the platform the apps need."""

    name: str
    path: str
    """Its spec.path: the legacy's apps directory."""
    file: str
    """Where its Flux Kustomization is written (the base directory, beside the waves')."""
    listing: str
    """The kustomization file it builds: the apps directory's own, edited, or one wave-bot writes."""
    entries: tuple[str, ...]
    """What that file lists (relative to `path`)."""
    written: bool
    """True: wave-bot wrote `listing` (the controller's generated one minus the units and waves)."""


def rest_name(legacy: FluxKustomization, taken: Iterable[str], config: Config) -> str:
    """`<legacy>-rest`, or `<legacy>-rest-<k>` when a Flux Kustomization (or a file in the base
    directory) already has that name: never one the repository uses."""
    used = set(taken)
    stem = f"{legacy.name[:63 - len(REST_SUFFIX) - 4].rstrip('-.')}{REST_SUFFIX}"
    candidates = [stem, *(f"{stem}-{k}" for k in range(2, 1000))]
    return next(c for c in candidates if c not in used and c != legacy.name
                and config.wave_of_cr_file(f"{c}.yaml") is None)


def remainder(tree: Tree, planned: Tree, config: Config, legacy: FluxKustomization, taken: Iterable[str]
              ) -> tuple[list[Change], Remainder | None]:
    """What the legacy applied that no wave will, and the edits that keep it applied.

    `planned`: the tree once the units have moved and the legacy's document, the grouping folders'
    unit entries and the like are gone. With a kustomization of its own, the apps directory keeps it
    without the entries that named what moved or went (comments and the rest byte for byte); it is
    deleted when it then lists and generates nothing. Without one, wave-bot writes what
    kustomize-controller would generate there (`bot.flux.generator`, the one policy) less the wave
    directories, which the moved units are in. Returns the edits and the remainder (None: nothing
    is left, and no remainder Kustomization is made).
    """
    apps = posixpath.normpath(config.apps_dir)
    name = rest_name(legacy, [*taken, *(posixpath.splitext(e.name)[0] for e in tree.entries(config.base_dir))],
                     config)
    own = find_kustomization(tree, apps)
    if own is None:
        slots = [f"{apps}/{e.name}" for e in planned.entries(apps)
                 if e.kind == "dir" and config.slot_of_dir(e.name) is not None]
        entries = generated_resources(planned, apps, excluding=slots)
        if not entries:
            return [], None
        listing = f"{apps}/{GENERATED_FILE}"
        content = yamlio.dump({"apiVersion": KUSTOMIZATION_API, "kind": "Kustomization", "resources": entries},
                              _REST_HEADER.format(legacy=legacy.name))
        return [Change("create", listing, content=content)], Remainder(
            name, apps, f"{config.base_dir}/{name}.yaml", listing, tuple(entries), True)
    edits, kept, generates = _listing_without_moved(tree, planned, apps, own)
    if not kept and not generates:
        return [Change("delete", own)], None
    return edits, Remainder(name, apps, f"{config.base_dir}/{name}.yaml", own, kept, False)


def _listing_without_moved(tree: Tree, planned: Tree, apps: str, own: str
                           ) -> tuple[list[Change], tuple[str, ...], bool]:
    """The apps directory's own kustomization `own` without the entries of what moved or went: the
    edit, the entries kept, and whether it generates objects besides its resources."""
    doc = yamlio.load_one(tree.read(own), own)
    value = doc.value if doc is not None and isinstance(doc.value, dict) else {}
    resources = value.get("resources")
    listed = resources if isinstance(resources, list) else []
    gone = [i for i, ref in enumerate(listed) if isinstance(ref, str) and _goes(tree, planned, apps, ref)]
    kept = tuple(str(ref) for i, ref in enumerate(listed) if i not in gone)
    edits = removal_changes({own: tree.read(own)}, [ListItem(own, "resources", i) for i in gone]) if gone else []
    return edits, kept, any(key in value for key in _GENERATING_KEYS)


def after_the_cutover(tree: Tree, config: Config, moves: Sequence[Change], groups: Sequence[Change]) -> list[Change]:
    """Once the cutover is done the apps directory's own kustomization is the remainder's (or the
    user's): a unit that leaves its tree for a wave leaves its listing too, as its grouping folder's
    (`groups`: the caller's regrouping, as at step 2), so that what stays still builds. The file
    itself stays, listing nothing if need be (without it Flux would generate one applying the waves a
    second time)."""
    apps = posixpath.normpath(config.apps_dir)
    own = find_kustomization(tree, apps)
    if own is None or not any(c.action == "move" for c in moves):
        return []
    edits, _, _ = _listing_without_moved(tree, PlannedTree(tree, [*moves, *groups]), apps, own)
    return [*groups, *edits]


def _goes(tree: Tree, planned: Tree, apps: str, ref: str) -> bool:
    """Whether the apps directory's entry `ref` names what the split moves or removes: a path gone
    from the planned tree, or a directory whose kustomization went (a grouping folder that listed only
    its units)."""
    if "://" in ref or ref.startswith(("git@", "github.com/")):
        return False
    target = posixpath.normpath(posixpath.join(apps, ref))
    kind = planned.kind(target)
    return kind is None or kind == "dir" and has_kustomization(tree, target) and not has_kustomization(
        planned, target)


def _renamed(text: str, old: str, new: str) -> str:
    """`text` with every `name: <old>` (a patch's target or its object's metadata.name) naming `new`."""
    return re.sub(rf"^(\s*-?\s*name:\s*)(['\"]?){re.escape(old)}\2(?=\s*(#.*)?$)", rf"\g<1>\g<2>{new}\g<2>",
                  text, flags=re.M)


def retarget(tree: Tree, read: dict[str, bytes], patches: Sequence[FluxReference], legacy: FluxKustomization,
             rest: Remainder, files: Collection[str]) -> tuple[list[FluxReference], list[Change]]:
    """The overlay patches aimed only at the legacy aim at the remainder instead: whatever an overlay
    gave the legacy (SOPS decryption, per-cluster settings) it gives the rest of its tree, which the
    remainder applies as the legacy did. `read` is updated in place; a patch file is rewritten when
    only these entries use it (`files`), else its entry goes as before. Returns the references
    retargeted and the patch files' rewrites."""
    done: list[FluxReference] = []
    rewrites: list[Change] = []
    for ref in patches:
        if ref.file:
            if ref.file not in files or tree.kind(ref.file) != "file":
                continue
            written = tree.read(ref.file).decode()
            renamed = _renamed(written, legacy.name, rest.name)
            if renamed != written:
                rewrites.append(Change("update", ref.file, content=renamed.encode()))
                done.append(ref)
            continue
        text = yamledit.item_text(read[ref.path], ref.path, ref.key, ref.index)
        renamed = _renamed(text, legacy.name, rest.name)
        if renamed != text:
            inserted = yamledit.insert_item(read[ref.path], ref.path, ref.key, renamed, after=ref.index)
            read[ref.path] = yamledit.remove_item(inserted, ref.path, ref.key, ref.index)
            done.append(ref)
    return done, rewrites


def rest_cr(rest: Remainder, legacy: FluxKustomization, template: Mapping[str, Any],
            depends_on: Sequence[str]) -> bytes:
    """The remainder's Flux Kustomization: the legacy's document but for name, path and dependsOn."""
    return render.flux_kustomization(rest.name, rest.path, depends_on, template,
                                     _REST_HEADER.format(legacy=legacy.name))


# ---- the safety net: the same objects, each once (issue 28, "What to build" 2) --------------------

ObjectKey = tuple[str, str, str, str]
"""(cluster, group/kind, namespace, name) of one object a Flux Kustomization applies."""


def judged_model(tree: Tree, config: Config, legacy: FluxKustomization, layout: Config | None = None
                 ) -> tuple[FluxModel, Config]:
    """The model the safety net judges, and the config it was read with (`layout`: read the other
    side with the same). A repository of the configured layout without environment overlays names no
    cluster; then its clusters are the directories holding the Flux Kustomizations no other applies
    (billimek's `setup/flux/cluster/`). When no cluster reaches the legacy, nothing can be judged:
    an input error rather than a check that passes on nothing."""
    if layout is not None:
        return read_model(tree, layout), layout
    model = read_model(tree, config)
    if any(ks.name == legacy.name for ks in model.kustomizations()):
        return model, config
    unnamed = dataclasses.replace(config, base_dir=posixpath.join(config.base_dir, ".no-overlays"))
    model = read_model(tree, unnamed)
    if any(ks.name == legacy.name for ks in model.kustomizations()):
        return model, unnamed
    raise WaveBotError(
        f"no cluster wave-bot finds applies {legacy.name}, so it cannot check that the split keeps every object "
        f"{legacy.name} applied applied; step 2 writes nothing it cannot check",
        path=legacy.path, line=legacy.line,
        hint="name the cluster directories under overlays: in .wave-bot.yaml (each one's kustomization applies the "
             f"file holding {legacy.name}), then run wave-bot again")


def applied_objects(model: FluxModel, skip: Collection[str]) -> dict[ObjectKey, list[tuple[str, int]]]:
    """Every object the model's Flux Kustomizations apply -> where each application is written (file,
    line), one per Kustomization applying it. `skip`: the names of the Flux Kustomizations the cutover
    replaces (the legacy, the waves, the remainder), whose own objects are expected to change."""
    out: dict[ObjectKey, list[tuple[str, int]]] = {}
    for cluster in model.clusters:
        for _, obj in cluster.objects():
            rid = obj.id
            if rid.group == FLUX_GROUP and rid.kind == "Kustomization" and rid.name in skip:
                continue
            kind = f"{rid.group}/{rid.kind}" if rid.group else rid.kind
            out.setdefault((cluster.name, kind, rid.namespace or "", rid.name), []).append((obj.path, obj.line))
    return out


def repathed(tree: Tree, model: FluxModel, moves: Sequence[Change]) -> list[Change]:
    """The edits that point each Flux Kustomization whose spec.path names a directory this change
    moves (a unit's child `ks.yaml` naming its `app/`) at the new place: `tier-path-moved`'s fix,
    which the safety net takes as made (the finding asks for it, naming the line)."""
    moving = {c.source: c.path for c in moves if c.action == "move" and c.source}
    edits: dict[str, bytes] = {}
    for ks in model.kustomizations():
        if ks.path is None or ks.synthesized or tree.kind(ks.path) is not None:
            continue
        unit, moved = grouping.moved(ks.path, moving)
        if unit is None:
            continue
        data = edits.get(ks.file, tree.read(ks.file))
        lines = data.decode().splitlines(keepends=True)
        at = ks.line_of("spec", "path") - 1
        if 0 <= at < len(lines):
            lines[at] = re.sub(r"^(\s*path:\s*)\S+", rf"\g<1>./{moved}", lines[at], count=1)
            edits[ks.file] = "".join(lines).encode()
    return [Change("update", path, content=data) for path, data in sorted(edits.items())]


def check_same_objects(before: FluxModel, after: FluxModel, legacy: FluxKustomization, skip: Collection[str]
                       ) -> None:
    """Refuse step 2 unless every object the Flux Kustomizations applied before it is applied after it,
    as often (each once, when it was), and nothing else: the first difference is named. Flux
    Kustomizations of this cluster are compared by the objects they apply, those the cutover replaces
    (`skip`) excepted; a build that fails before makes new objects after possible, never duplicates."""
    failed = {(ks.cluster, ks.key) for ks in before.kustomizations() if ks.build_failure is not None}
    for ks in after.kustomizations():
        failure = ks.build_failure
        if failure is not None and not failure.unsupported and (ks.cluster, ks.key) not in failed:
            raise WaveBotError(
                f"after the split the Flux Kustomization {ks.name} (cluster {ks.cluster}) would not build: "
                f"{failure.message}; step 2 keeps everything {legacy.name} applied applied, or writes nothing",
                path=failure.path or ks.file, line=failure.line,
                hint=failure.hint or "make it build without the units that move into waves (a kustomization that "
                                     "lists or patches a unit), or declare what it needs as units, then run "
                                     "wave-bot again")
    was, now = applied_objects(before, skip), applied_objects(after, skip)
    # A build that failed before applied nothing this time, yet what it applied last time is still in
    # the cluster: an object new after the split may be one of those, unless it is applied twice.
    unknown = any(ks.build_failure is not None for ks in before.kustomizations())
    for key in sorted(set(was) | set(now)):
        old, new = was.get(key, []), now.get(key, [])
        if len(old) == len(new) or unknown and len(new) == 1 and not old:
            continue
        cluster, kind, namespace, name = key
        what = f"{kind} {namespace + '/' if namespace else ''}{name}"
        if len(new) < len(old):
            path, line = old[0]
            lost = (f"applied by no Flux Kustomization once {legacy.name} is gone" if not new else
                    f"applied {len(new)} time(s) after the split and {len(old)} before")
            raise WaveBotError(
                f"the split would leave {what} (cluster {cluster}) {lost}: step 2 keeps everything "
                f"{legacy.name} applied applied, by exactly one Kustomization, or writes nothing",
                path=path or legacy.path, line=line or None,
                hint="make what applies it build as before (a kustomization that lists or patches a unit that "
                     "moves, a path the split removes), or declare it as a unit, then run wave-bot again")
        path, line = new[0]
        raise WaveBotError(
            f"the split would apply {what} (cluster {cluster}) {len(new)} time(s), {len(old)} before: step 2 keeps "
            f"what Flux applies as it is, each object by exactly one Kustomization, or writes nothing",
            path=path or legacy.path, line=line or None,
            hint="list it in one place only (a unit and the rest of the apps directory must not both apply it), "
                 "then run wave-bot again")


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


def outside_units(inventory: Inventory, legacy: FluxKustomization, units: Sequence[str], config: Config
                  ) -> dict[str, int]:
    """Part of the legacy's tree -> how many of its objects are defined under the apps directory
    outside every declared unit: what the remainder Kustomization keeps applying after step 2."""
    apps = posixpath.normpath(config.apps_dir)
    out: dict[str, int] = {}
    for o in inventory.others:
        if o.owner == legacy.name and o.path.startswith(apps + "/") and not any(
                o.path == u or o.path.startswith(u + "/") for u in units):
            part = _part(o.path, units, config)
            out[part] = out.get(part, 0) + 1
    return dict(sorted(out.items()))


def outside_units_note(legacy: FluxKustomization, parts: Mapping[str, int]) -> str:
    """Step 1's word on what step 2 does with the parts of the legacy's tree no unit holds."""
    listed = ", ".join(f"{part} ({count} object(s))" for part, count in parts.items())
    return (f"Outside the declared units {legacy.name} applies {sum(parts.values())} object(s): {listed}. Step 2 "
            f"keeps them applied by one more Flux Kustomization, {legacy.name}{REST_SUFFIX} (its spec "
            f"{legacy.name}'s but for name and dependsOn, wave 0 depending on it); declare any of them as units "
            "to move them into waves instead")


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
        here, here_after = grouping.moved(ref.kustomization, moving)
        there, there_after = grouping.moved(ref.path, moving)
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


@dataclass(frozen=True)
class LegacyBuild:
    """What the legacy Kustomization applies as Flux builds it (`bot.flux.applied`): its own or the
    generated kustomization, the components and patches its kustomizations and spec add, postBuild
    substitution; once each across the clusters that reconcile it."""

    objects: tuple[ResourceId, ...]
    """Every object whose identity is known, once each."""
    unknown: int = 0
    """Objects an unresolved variable hides the identity of (counted, never named)."""
    pruning_children: tuple[ResourceId, ...] = ()
    """The Flux Kustomizations among `objects` whose deletion deletes what they apply (their finalizer
    prunes): deleting the legacy while it prunes deletes them, and their objects with them."""


def legacy_build(model: FluxModel, legacy: FluxKustomization) -> LegacyBuild | None:
    """`LegacyBuild` of `legacy` from the model of what Flux applies; None when no cluster the model
    reads reconciles it from this tree, or its build is not evaluated (then the inventory's reading
    is all there is)."""
    key = (legacy.id.namespace or DEFAULT_NAMESPACE, legacy.name)
    found = [ks for ks in model.kustomizations() if ks.key == key and ks.file == legacy.path]
    if not found or not all(ks.evaluated for ks in found):
        return None
    objects: dict[str, ResourceId] = {}
    unknown = 0  # the same in each cluster reconciling it: counted once, not once per cluster
    children: dict[str, ResourceId] = {}
    for ks in found:
        kids = {(c.namespace, c.name): c for c in model.kustomizations() if c.parent == ks.key
                and c.cluster == ks.cluster}
        unknown = max(unknown, sum(1 for o in ks.objects if not o.known))
        for o in ks.objects:
            if not o.known:
                continue
            objects.setdefault(str(o.id), o.id)
            child = kids.get((o.id.namespace or DEFAULT_NAMESPACE, o.id.name)) if is_flux_kustomization(
                o.value) else None
            if child is not None and (child.deletion_policy in ("Delete", "WaitForTermination")
                                      or child.prune and child.deletion_policy in ("", "MirrorPrune")):
                children.setdefault(str(o.id), o.id)
    return LegacyBuild(tuple(objects.values()), unknown, tuple(children.values()))


def step_1_finding(c: Cutover, inventory: Inventory, config: Config, deepest: int | None = None,
                   built: LegacyBuild | None = None) -> Finding:
    """`built`: what the legacy applies as Flux builds it (`legacy_build`); without it, the
    inventory's reading of its path (which leaves out what components and generated kustomizations add)."""
    from bot.flux.stateful import is_stateful

    name, ns = c.legacy.name, c.legacy.id.namespace or "flux-system"
    if built is not None:
        stateful_ids = [rid for rid in built.objects if is_stateful(rid, config)]
        owned = len(built.objects) + built.unknown
        children = list(built.pruning_children)
    else:
        stateful_ids = [o.id for o in stateful_objects(inventory, c.legacy, config)]
        owned = sum(1 for o in inventory.others if o.owner == name)
        children = []
    stateful = sorted(stateful_ids, key=str)
    protected = [*stateful, *sorted(children, key=str)]
    settings = _release_settings(c.legacy)
    setting = "` and `".join(f"{k}: {v}" for k, v in settings)
    deployed_with = " and ".join(["prune: true"] * c.legacy.prune + [f"deletionPolicy: {c.legacy.deletion_policy}"] * (
        c.legacy.deletion_policy in ("Delete", "WaitForTermination"))) or "prune: true"
    checks = "; ".join(f"`kubectl -n {ns} get kustomization {name} "
                       f"-o jsonpath='{{.spec.{k}}}'` prints {v}" for k, v in settings)
    annotate = "\n".join(
        f"kubectl{f' -n {o.namespace}' if o.namespace else ''} annotate "
        f"{o.kind.lower()}{'.' + o.group if o.group else ''}/{o.name} {PRUNE_KEY}={PRUNE_DISABLED}"
        for o in protected
    )
    kinds: dict[str, int] = {}
    for o in stateful:
        kinds[f"{o.group}/{o.kind}" if o.group else o.kind] = kinds.get(
            f"{o.group}/{o.kind}" if o.group else o.kind, 0) + 1
    listed = ", ".join(f"{count} {kind}" for kind, count in sorted(kinds.items())) or "no stateful object found"
    into = f"waves 0 to {deepest}" if deepest else "wave 0" if deepest == 0 else "waves"
    nested = (f" and the {len(children)} Flux Kustomization(s) it applies whose deletion would delete everything "
              "they apply" if children else "")
    return Finding(
        code="cutover-step-1",
        severity="warning",
        message=f"cutover step 1 of 2: {ns}/{name} ({c.legacy.path}:{c.legacy.line}) is deployed with {deployed_with} "
                f"(according to {c.deployed}). Splitting the app tier removes it, and deleting a Kustomization "
                f"that prunes deletes everything it still owns ({owned} object(s) here; the stateful ones: {listed}). "
                f"So this change only sets `{setting}` on it, and nothing moves. Next: merge "
                f"it, wait until it has reconciled (`flux get kustomization {name}`; {checks}), then run wave-bot "
                "again "
                "(push to this branch, re-run the workflow, or `wave-bot apply --base <the deployed revision> "
                f"--fix-overlays`): step 2 splits the app tier into {into}. Optionally protect the stateful "
                f"objects{nested} meanwhile with the commands in the fix",
        path=c.legacy.path,
        line=c.legacy.line,
        resource=str(c.legacy.id),
        fix=annotate or None,
        # Removing it before the release is deployed would delete these: the objects at risk.
        objects=(*(FindingObject.of(o, True) for o in stateful), *(FindingObject.of(o) for o in children)),
    )


def _where_parts_go(c: Cutover, config: Config, units: Mapping[Slot, Sequence[str]], rest: Remainder | None) -> str:
    """Where every part of the legacy's tree goes: each wave's units, and the remainder."""
    waves = "; ".join(f"into {config.wave_dir(n)}/ ({config.wave_cr_name(n)}): "
                      f"{', '.join(posixpath.basename(p) for p in paths)}" for n, paths in units.items())
    if rest is None:
        return f"{waves}; nothing else: every part of {c.legacy.name}'s tree is in a unit"
    shown = ", ".join(rest.entries[:12]) + (f" and {len(rest.entries) - 12} more" if len(rest.entries) > 12 else "")
    how = (f"written by wave-bot: what kustomize-controller generated for ./{rest.path} without the moved units"
           if rest.written else f"{c.legacy.name}'s own, without the entries of what moved")
    return (f"{waves}; the rest stays applied by {rest.name} ({rest.file}, path ./{rest.path}, dependsOn "
            f"what {c.legacy.name} depended on; wave 0 depends on it), which builds {rest.listing} ({how}): {shown}")


def step_2_finding(c: Cutover, inventory: Inventory, config: Config, waves: Sequence[int],
                   template_source: str = "", file_kept: bool = False, rest: Remainder | None = None,
                   units: Mapping[Slot, Sequence[str]] | None = None) -> Finding:
    name = c.legacy.name
    copies = f"the waves{' and ' + rest.name if rest else ''}"
    template = (f"{copies} each a copy of {name} from {c.legacy.path} but for name, path and dependsOn, with prune: "
                "true" if template_source in ("", c.legacy.path) else f"generated from {template_source} as the "
                                                                         "template")
    kept = (" (the file keeps its other documents, and its base entry stays)" if file_kept
            else " (the file with it, and its base entry)")
    listing = (f"{config.apps_dir}/kustomization.yaml (if any) and each grouping folder's lose the entries of "
               "what moved (a file left listing nothing goes)")
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
                f"so this change splits the app tier at once: every unit moves byte for byte into waves "
                f"{', '.join(map(str, waves))} ({template}): {_where_parts_go(c, config, units or {}, rest)}. "
                f"{name}'s document in {c.legacy.path}{kept} and the overlay patches (and patch files) only {name} "
                f"matched are removed; {listing}. Every object {name} applied is applied after the split by exactly "
                f"one Flux Kustomization (checked before writing). On merge Flux deletes {name} "
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
    "REST_SUFFIX", "Cutover", "LegacyBuild", "ObjectKey", "Remainder", "after_the_cutover", "applied_objects",
    "check_references_kept", "check_same_objects", "check_wave_roots", "cutover",
    "judged_model", "legacy_build", "legacy_document", "legacy_kustomization", "legacy_template", "outside_units",
    "outside_units_note", "release_change", "remainder", "repathed", "rest_cr", "rest_name", "retarget",
    "retire_change", "stateful_objects", "step_1_finding",
    "step_2_finding", "wave_base_entries",
]
