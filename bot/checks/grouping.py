"""Cutover step 2: how a unit leaves its grouping folder, and the relative references its move breaks.

A grouping folder's kustomization (`apps/<group>/kustomization.yaml`) may do more than list its
units: cluster-template's sets `namespace: <ns>`, adds the Component `../../components/sops` (a
Secret per namespace) and applies `namespace.yaml` and only `./<app>/ks.yaml` of each unit. Once a
unit moves into `wave-<N>/<group>/<app>/`, its wave applies it, not the group; so:

- what the group did to the unit goes with it: a unit without a kustomization of its own gets one at
  its new place (a new file beside its untouched bytes) listing exactly what the group listed of it
  and carrying every field of the group that transforms objects (namespace, labels, annotations,
  name prefix/suffix, inline patches, images, ...) and the group's components that only transform;
- what the group adds stays in the group (its own files, entries outside the units, generators,
  components that add objects: they are applied once, where they were), and the group's
  kustomization only loses the entries of the units that left (deleted when nothing is left);
- what cannot be carried exactly is an input error naming the line: a unit with a kustomization of
  its own that the group transforms (wave-bot does not rewrite a unit's own kustomization), a
  component that both adds objects and transforms, a transforming field that names a file.

Relative references a move breaks are rewritten, a line each, the rest of the file byte for byte:
a moved unit's kustomization entries (`resources`, `bases`, `components`) that leave the unit, a
Flux Kustomization's `spec.path` into a moved unit (wherever its file is) and its `spec.components`
(relative to spec.path). Before anything is written, `verify_builds` builds every kustomization the
change writes and every moved build with the project's evaluator and compares the objects: a
difference or a failure is a refusal.
"""
from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.config import Config
from bot.errors import WaveBotError
from bot.flux.vocabulary import FLUX_GROUP
from bot.kustomize import build as kustomize
from bot.kustomize.files import find_kustomization
from bot.kustomize.listing import generated_listing, own_kustomization
from bot.kustomize.repository import read_kustomizations
from bot.kustomize.spec import KUSTOMIZATION_API, BuildError, Unsupported
from bot.layout.placement import AppFile
from bot.model import Change
from bot.naming import is_yaml_name
from bot.repo.tree import Tree
from bot.yamlio import documents as yamlio
from bot.yamlio import edit as yamledit

_LISTING = ("apiVersion", "kind", "resources", "components")
ADDING = ("configMapGenerator", "secretGenerator", "generatorOptions", "helmCharts", "helmGlobals", "generators")
"""Fields that make objects of their own: they stay where they are, applied once."""
_FILE_FIELDS = ("patchesStrategicMerge", "configurations", "crds", "openapi", "transformers", "validators",
                "bases")
"""Transforming fields that name files (or cannot be copied as they are): carried, they would resolve elsewhere."""
HEADER = ("# Written by wave-bot's cutover (step 2): what {group} applied of this unit and did to it,\n"
          "# kept now that the unit's wave applies it. Yours to edit from here on.\n")


@dataclass(frozen=True)
class Regroup:
    """What step 2 changes of the grouping folders, and which units get a kustomization of their own."""

    changes: tuple[Change, ...]
    """Grouping kustomizations updated (the moved units' entries gone) or deleted; the units'
    kustomizations created at their new place."""
    given: frozenset[str]
    """Units (their current path) that get a kustomization: their wave lists the directory."""
    compare: tuple[tuple[str, int, str, str], ...] = ()
    """(group kustomization, the line listing the unit, unit now, unit then): the objects the group
    built from the unit, and what the unit's new kustomization must build."""


def _unit_folders(files: Sequence[AppFile], config: Config) -> dict[str, dict[str, AppFile]]:
    out: dict[str, dict[str, AppFile]] = {}
    for file in files:
        folder = posixpath.dirname(file.path)
        if file.is_dir and file.node is not None and file.wave is None and folder != config.apps_dir and file.moves:
            out.setdefault(folder, {})[file.name] = file
    return out


def regroup(tree: Tree, config: Config, files: Sequence[AppFile], edited: Mapping[str, bytes] | None = None,
            ) -> Regroup:
    """Every grouping folder whose units move: what each unit takes along, what the folder keeps.
    `edited`: files (by their current path) other edits of this change already rewrote. Every
    folder's problem is raised at once (one run, one list of edits)."""
    def read(path: str) -> bytes:
        return edited[path] if edited and path in edited else tree.read(path)

    changes: list[Change] = []
    given: set[str] = set()
    compare: list[tuple[str, int, str, str]] = []
    problems: list[WaveBotError] = []
    for folder, units in sorted(_unit_folders(files, config).items()):
        own = own_kustomization(tree, folder)
        if own is None:
            continue
        try:
            done = _regroup_folder(tree, own, units, read)
        except WaveBotError as exc:
            problems.append(exc)
            continue
        if done is not None:
            changes += done.changes
            given |= done.given
            compare += done.compare
    if problems:
        raise all_of(problems)
    return Regroup(tuple(changes), frozenset(given), tuple(compare))


def all_of(problems: Sequence[WaveBotError]) -> WaveBotError:
    """One input error naming every grouping folder to change, each with its own edit."""
    first = problems[0]
    if len(problems) == 1:
        return first
    rest = "; ".join(f"{p.location()}: {p.message} (fix: {p.hint})" for p in problems[1:])
    return WaveBotError(f"{first.message}. {len(problems) - 1} more grouping folder(s) to change the same way: "
                        f"{rest}", path=first.path, line=first.line, hint=first.hint)


def _component_role(tree: Tree, path: str) -> tuple[bool, list[str]]:
    """(whether the component at `path` adds objects, the fields by which it transforms them)."""
    found = find_kustomization(tree, path) if tree.kind(path) == "dir" else None
    if found is None:
        return False, []
    doc = yamlio.load_one(tree.read(found), found)
    value = doc.value if doc is not None and isinstance(doc.value, dict) else {}
    adds = bool(value.get("resources")) or any(k in value for k in ADDING)
    return adds, [k for k in value if k not in ("apiVersion", "kind", "resources", *ADDING)]


def _regroup_folder(tree: Tree, own: str, units: Mapping[str, AppFile], read: Callable[[str], bytes],
                    ) -> Regroup | None:
    folder = posixpath.dirname(own)
    data = tree.read(own)
    doc = yamlio.load_one(data, own)
    value = doc.value if doc is not None else None
    if doc is None or not isinstance(value, dict):
        return Regroup((Change("delete", own),), frozenset())  # kustomize refuses it, and so did the legacy build
    resources = value.get("resources")
    if not isinstance(resources, list) or not all(isinstance(ref, str) for ref in resources):
        return Regroup((Change("delete", own),), frozenset())  # kustomize refuses it too
    listed: dict[str, list[tuple[int, str]]] = {}
    for index, ref in enumerate(resources):
        norm = posixpath.normpath(ref) if ref else ""
        head, _, rest = norm.partition("/")
        if head in units:
            listed.setdefault(head, []).append((index, "" if rest in ("", ".") else rest))
    if not listed:
        return None
    transforms = [k for k in value if k not in (*_LISTING, *ADDING)]
    for key in transforms:
        if key in _FILE_FIELDS or key in ("patches", "patchesJson6902") and any(
                isinstance(p, dict) and "path" in p for p in value[key] or []):
            raise WaveBotError(
                f"{key} here names files relative to {folder}/ and transforms every unit listed here; the units "
                "move into waves, where this file no longer applies to them, and wave-bot does not copy files",
                path=own, line=doc.info.line((key,)),
                hint=f"write the patches inline (patches: - patch: |-) or move {key} into each unit's own "
                     "kustomization, then run wave-bot again")
    _refuse_hashed_references(tree, own, value, doc.info.line, [units[name].path for name in listed])
    carried: list[str] = []
    components = value.get("components")
    for index, ref in enumerate(components if isinstance(components, list) else []):
        if not isinstance(ref, str):
            continue
        path = posixpath.normpath(posixpath.join(folder, ref))
        adds, transforming = _component_role(tree, path)
        if adds and transforming:
            raise WaveBotError(
                f"components entry {ref} both adds objects and transforms the units listed here "
                f"({', '.join(transforming)}); once the units move into waves its objects must stay applied once, "
                "here, and its changes must still reach the units, which one component cannot do from two places",
                path=own, line=doc.info.line(("components", index)),
                hint=f"split {ref} into a component that adds the objects (keep it listed here) and one with "
                     f"{', '.join(transforming)} (list it in this file too), then run wave-bot again")
        if transforming:
            carried.append(path)
    changes: list[Change] = []
    given: set[str] = set()
    compare: list[tuple[str, int, str, str]] = []
    for name, entries in sorted(listed.items()):
        unit = units[name]
        parts = sorted(rest for _, rest in entries)
        unit_own = own_kustomization(tree, unit.path)
        if unit_own is not None:
            if parts != [""]:
                shown = ", ".join(p or "the directory" for p in parts)
                now = ["what it lists now"] if "" in parts else []
                raise WaveBotError(
                    f"lists {shown} of {name}/, and its wave will list {name} (what its own "
                    f"{posixpath.basename(unit_own)} lists); the split would apply something else than the legacy "
                    "Kustomization did",
                    path=own, line=doc.info.line(("resources",)),
                    hint=f"make {unit_own} list exactly what this file applies of {name}/ "
                         f"({', '.join([*now, *(p for p in parts if p)])}) and list only ./{name} here, then run "
                         "wave-bot again")
            if transforms or carried:
                moved_own = f"{unit.target}/{posixpath.basename(unit_own)}"
                line = doc.info.line((transforms[0],) if transforms else ("components",))
                data_own = _carry(read(unit_own), unit_own, value, own, line, transforms, carried, unit.target,
                                  {key: doc.info.line((key,)) for key in transforms})
                changes.append(Change("update", moved_own, content=data_own))
                compare.append((own, doc.info.line(("resources", entries[0][0])), unit.path, unit.target))
            continue
        if "" in parts:
            continue  # a directory without a kustomization: kustomize refused it in the legacy build too
        if transforms or carried or parts != sorted(generated_listing(tree, unit.path)):
            changes.append(Change("create", f"{unit.target}/kustomization.yaml",
                                  content=_unit_kustomization(value, own, transforms, carried, unit.target, parts)))
            given.add(unit.path)
            compare.append((own, doc.info.line(("resources", entries[0][0])), unit.path, unit.target))
    # The group keeps everything but the entries of the units that left.
    gone = sorted((i for entries in listed.values() for i, _ in entries), reverse=True)
    rest = data
    for index in gone:
        rest = yamledit.remove_item(rest, own, "resources", index)
    left = len(resources) - len(gone)
    # It stays while the folder holds anything besides the units that leave: without it, what applies
    # the folder then (the remainder's generated listing) would take every file and kustomization
    # directory there (a Component listed as a resource, a file the group never listed).
    others = [e.name for e in tree.entries(folder)
              if e.name != posixpath.basename(own) and not (e.name in units and units[e.name].moves)]
    keeps = left > 0 or bool(others) or any(k in value for k in ADDING if k not in ("generatorOptions",
                                                                                    "helmGlobals")) or any(
        _component_role(tree, posixpath.normpath(posixpath.join(folder, ref)))[0]
        for ref in (components if isinstance(components, list) else []) if isinstance(ref, str))
    changes.insert(0, Change("update", own, content=rest) if keeps else Change("delete", own))
    return Regroup(tuple(changes), frozenset(given), tuple(compare))


def _refuse_hashed_references(tree: Tree, own: str, group: Mapping[str, Any],
                              line: Callable[[tuple[str | int, ...]], int], leaving: Sequence[str]) -> None:
    """A group's generator names its object `<name>-<hash>`, and kustomize rewrites the references to
    `<name>` in the objects the group builds (a Deployment's volume, envFrom, ...) to that name. A unit
    that leaves is built by its wave alone: its references would name `<name>`, which nothing makes.
    Refused when a leaving unit's objects (Flux Kustomizations aside: kustomize rewrites none of their
    fields) hold the generated name anywhere outside their metadata."""
    options = group.get("generatorOptions")
    hashed = []
    for key in ("configMapGenerator", "secretGenerator"):
        entries = group.get(key)
        for index, entry in enumerate(entries if isinstance(entries, list) else []):
            if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
                continue
            own_options = entry.get("options")
            merged = {**(options if isinstance(options, dict) else {}),
                      **(own_options if isinstance(own_options, dict) else {})}
            if merged.get("disableNameSuffixHash") is not True:
                hashed.append((key, index, entry["name"]))
    if not hashed:
        return
    try:
        objects = kustomize.build(tree, posixpath.dirname(own)).objects
    except (Unsupported, BuildError, WaveBotError):
        return  # the legacy build fails too, or the evaluator cannot tell: the builds verified later say so
    for key, index, name in hashed:
        users = sorted({unit for o in objects for unit in leaving if o.source.startswith(unit + "/")
                        and not str(o.value.get("apiVersion", "")).startswith(FLUX_GROUP + "/")
                        and any(_holds(v, name) for k, v in o.value.items() if k != "metadata")})
        if users:
            raise WaveBotError(
                f"{key} entry {name} makes {name}-<hash>, and kustomize renames the references to {name} in what "
                f"this file builds to it; {', '.join(users)} refer(s) to {name}, and once the units move into waves "
                f"this file no longer builds them: their references would name {name}, which nothing makes",
                path=own, line=line((key, index)),
                hint=f"move the {name} generator into the kustomization of each unit that uses it (or set "
                     "options: disableNameSuffixHash: true on it, which renames the object), then run wave-bot again")


def _holds(value: Any, text: str) -> bool:
    if isinstance(value, Mapping):
        return any(_holds(v, text) for v in value.values())
    if isinstance(value, list):
        return any(_holds(v, text) for v in value)
    return isinstance(value, str) and value == text


def _carry(data: bytes, path: str, group: Mapping[str, Any], own: str, line: int, transforms: Sequence[str],
           carried: Sequence[str], target: str, lines: Mapping[str, int]) -> bytes:
    """A unit's own kustomization with what its group did to it: each transforming field the unit's
    lacks added at the end (a `namespace` it has set to the group's: the group's wins in the build
    too), each transforming component added to its `components`. Every other byte stays. `lines`:
    the group's line of each transforming field (a field both set is refused at the group's line)."""
    docs = yamlio.load(data, path)
    value = docs[0].value if len(docs) == 1 else None
    if not isinstance(value, dict):
        raise WaveBotError(f"{path} is not one kustomization document, so wave-bot cannot add what this group does "
                           "to its unit", path=own, line=line,
                           hint=f"add {', '.join(transforms) or 'the components'} to {path} yourself, then run "
                                "wave-bot again")
    for key in transforms:
        if key == "namespace" and isinstance(value.get(key), str) and isinstance(group[key], str):
            if value[key] != group[key]:
                data = yamledit.replace_scalar(data, path, 0, (key,), group[key])
        elif key in value:
            raise WaveBotError(
                f"sets {key} for {posixpath.basename(posixpath.dirname(path))}/, whose own kustomization ({path}) "
                f"sets {key} too; once the unit moves into its wave this file no longer applies to it, and wave-bot "
                "does not merge the two", path=own, line=lines.get(key, line),
                hint=f"merge this {key} into {path} yourself (the objects stay the same), then run wave-bot again")
        else:
            text = data.decode()
            data = (text + ("" if text.endswith("\n") else "\n") + yamledit.dump_text({key: group[key]})).encode()
    for component in carried:
        data = yamledit.insert_item(data, path, "components", f"- {posixpath.relpath(component, target)}\n", None)
    check = yamlio.load(data, path)
    if len(check) != 1 or not isinstance(check[0].value, dict) or any(
            check[0].value.get(k) != v for k, v in value.items() if k not in ("namespace", "components")):
        raise WaveBotError(f"cannot add what this group does to its unit to {path} without changing anything else",
                           path=own, line=line, hint=f"add {', '.join(transforms)} to {path} yourself")
    return data


def _unit_kustomization(group: Mapping[str, Any], own: str, transforms: Sequence[str], carried: Sequence[str],
                        target: str, parts: Sequence[str]) -> bytes:
    out: dict[str, Any] = {"apiVersion": KUSTOMIZATION_API, "kind": "Kustomization"}
    for key in transforms:
        out[key] = group[key]
    if carried:
        out["components"] = [posixpath.relpath(path, target) for path in carried]
    out["resources"] = list(parts)
    return yamlio.dump(out, HEADER.format(group=own))


# ---- relative references ---------------------------------------------------------------------


def moved(path: str, moving: Mapping[str, str]) -> tuple[str | None, str]:
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


def _relative(path: str, directory: str, like: str) -> str:
    rel = posixpath.relpath(path, directory or ".")
    return f"./{rel}" if like.startswith("./") and not rel.startswith("../") else rel


@dataclass(frozen=True)
class Rewrites:
    """The line edits that keep relative references true across the moves."""

    changes: tuple[Change, ...]
    """One update per file (at its new place when it moves), every other byte kept."""
    entries: frozenset[tuple[str, int]]
    """(kustomization as it is now, line) of each rewritten kustomization entry."""
    flux_dirs: tuple[tuple[str, str, str, int], ...]
    """(old spec.path directory, new one, file as it is now, line) of each Flux Kustomization repathed."""
    edited: Mapping[str, bytes] = field(default_factory=dict)
    """File as it is now -> its rewritten bytes."""


def rewrite_references(tree: Tree, moving: Mapping[str, str], flux_files: Iterable[str]) -> Rewrites:
    """The edits a move needs: kustomization entries that leave a moving unit, and Flux
    Kustomizations (in `flux_files` or inside a moving unit) whose spec.path or spec.components the
    move changes."""
    edits: dict[str, bytes] = {}
    entries: set[tuple[str, int]] = set()
    flux_dirs: list[tuple[str, str, str, int]] = []
    if not moving:
        return Rewrites((), frozenset(), ())

    def edit(path: str, index: int, keys: tuple[str | int, ...], new: str) -> None:
        edits[path] = yamledit.replace_scalar(edits.get(path, tree.read(path)), path, index, keys, new)

    for ref in read_kustomizations(tree, "").references:
        if ref.key not in ("resources", "bases", "components") or ref.index < 0:
            continue
        here, here_after = moved(ref.kustomization, moving)
        if here is None:
            continue
        _, there_after = moved(ref.path, moving)
        relative = posixpath.relpath(ref.path, posixpath.dirname(ref.kustomization) or ".")
        if posixpath.normpath(posixpath.join(posixpath.dirname(here_after), relative)) == there_after:
            continue
        write = _relative(there_after, posixpath.dirname(here_after), ref.written)
        try:
            edit(ref.kustomization, 0, (ref.key, ref.index), write)
        except WaveBotError as exc:
            raise WaveBotError(
                f"{ref.key} entry {ref.written} names {ref.path}, outside the unit {here}, which this change moves to "
                f"{moving[here]}: from there the entry must read {write}, and wave-bot cannot rewrite it on its line "
                f"alone ({exc.message})", path=ref.kustomization, line=ref.line,
                hint=f"write each entry of {ref.key} on a line of its own (or move {here} to {moving[here]} yourself "
                     f"and write {write} on that line), then run wave-bot again") from exc
        entries.add((ref.kustomization, ref.line))
    candidates = set(flux_files)
    for unit in moving:
        candidates |= set(_yaml_below(tree, unit))
    for path in sorted(candidates):
        if tree.kind(path) != "file":
            continue
        data = tree.read(path)
        if FLUX_GROUP.encode() not in data:
            continue  # no Flux Kustomization in it: not parsed (a unit moving holds mostly manifests)
        try:
            docs = yamlio.load(data, path)
        except WaveBotError:
            continue  # the inventory reports it
        for index, doc in enumerate(docs):
            value = doc.value
            if not (isinstance(value, dict) and value.get("kind") == "Kustomization"
                    and str(value.get("apiVersion", "")).startswith(FLUX_GROUP + "/")
                    and isinstance(value.get("spec"), dict) and isinstance(value["spec"].get("path"), str)):
                continue
            spec = value["spec"]
            written = spec["path"]
            old = posixpath.normpath(written.lstrip("/") or ".")
            if old == ".." or old.startswith("../"):
                continue
            old = "" if old == "." else old
            _, new = moved(old, moving)
            if new != old:
                edit(path, index, ("spec", "path"), f"./{new}")
                flux_dirs.append((old, new, path, doc.info.line(("spec", "path"))))
            for i, component in enumerate(spec.get("components") or []):
                if not isinstance(component, str) or "://" in component:
                    continue
                target = posixpath.normpath(posixpath.join(old or ".", component))
                _, after = moved(target, moving)
                if posixpath.normpath(posixpath.join(new or ".", component)) != after:
                    edit(path, index, ("spec", "components", i), _relative(after, new, component))
    changes = tuple(Change("update", moved(path, moving)[1], content=data) for path, data in sorted(edits.items()))
    return Rewrites(changes, frozenset(entries), tuple(flux_dirs), edits)


def _yaml_below(tree: Tree, directory: str) -> list[str]:
    if tree.kind(directory) == "file":
        return [directory] if is_yaml_name(posixpath.basename(directory)) else []
    out = []
    for entry in tree.entries(directory):
        path = f"{directory}/{entry.name}"
        if entry.kind == "dir":
            out += _yaml_below(tree, path)
        elif entry.kind == "file" and is_yaml_name(entry.name):
            out.append(path)
    return out


# ---- the builds, before anything is written ---------------------------------------------------


def _objects(tree: Tree, directory: str, below: str = "") -> list[tuple[str, str]] | None:
    """(id, value) of what `directory` builds (`below`: only the objects read from files there);
    None when the evaluator cannot tell (Unsupported)."""
    try:
        built = kustomize.build(tree, directory)
    except Unsupported:
        return None
    return sorted((str(o.id), repr(_plain(o.value))) for o in built.objects
                  if not below or o.source.startswith(below + "/"))


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _refuse(path: str, line: int | None, cause: str, hint: str) -> WaveBotError:
    return WaveBotError(f"the split would break this build: {cause}", path=path, line=line,
                        hint=f"{hint}; nothing was written, then run wave-bot again")


def verify_builds(tree: Tree, planned: Tree, moved_only: Tree, built: Iterable[str], regrouped: Regroup,
                  rewrites: Rewrites) -> None:
    """Build, over the tree as it will be (`planned`), every directory in `built` (the kustomizations
    the change writes) and each repathed Flux Kustomization's directory against what it built before;
    and each unit's new kustomization against what its group built of it, over `moved_only` (the
    change without the rewritten references: a child's spec.path is the one difference allowed).
    Refuse the first failure or difference (exit 2, nothing written)."""
    for directory in sorted(set(built)):
        if find_kustomization(planned, directory) is None:
            continue
        try:
            _objects(planned, directory)
        except (BuildError, WaveBotError) as exc:
            raise _refuse(exc.path or directory, exc.line, exc.message,
                          exc.hint or "fix the path it names") from exc
    for group, line, now, then in regrouped.compare:
        try:
            before = _objects(tree, posixpath.dirname(group), now)
            after = _objects(moved_only, then)
        except (BuildError, WaveBotError) as exc:
            raise _refuse(exc.path or then, exc.line, exc.message, exc.hint or "fix the path it names") from exc
        if before is None or after is None:
            continue
        if before != after:
            odd = next((o for o in after if o not in before), None) or next(o for o in before if o not in after)
            raise _refuse(group, line, f"the kustomization written for {then} would not build {odd[0]} as {group} "
                          f"built it from {now}", f"give {now} a kustomization of its own that builds it as "
                          f"{group} does")
    for old, new, path, line in rewrites.flux_dirs:
        try:
            before = _objects(tree, old) if find_kustomization(tree, old) else None
            after = _objects(planned, new) if find_kustomization(planned, new) else None
        except (BuildError, WaveBotError) as exc:
            raise _refuse(path, line, f"spec.path ./{new}: {exc.message}", f"set spec.path to ./{new} once it "
                          "builds") from exc
        if before is not None and after is not None and before != after:
            raise _refuse(path, line, f"spec.path ./{new} would build other objects than ./{old} did",
                          f"set spec.path to ./{new} by hand once it builds what ./{old} built")


__all__ = ["ADDING", "Regroup", "Rewrites", "all_of", "moved", "regroup", "rewrite_references", "verify_builds"]
