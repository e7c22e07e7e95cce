"""A small, static evaluator for the kustomize features Flux cluster overlays use.

wave-bot must know what `kustomize build clusters/<env>` gives each wave's Flux Kustomization (does
it carry `spec.decryption`?), but it never runs kustomize: the bot must not execute anything from
the repository, and kubectl is not in its container. So this module re-implements, over a `Tree`,
exactly the part of kustomize v5 those overlays rely on:

- `resources` / `bases` (files and directories), `components` (kind: Component);
- `patches` (inline or `path:`, strategic-merge or JSON6902, with or without `target:`), the legacy
  `patchesStrategicMerge` (paths or inline strings) and `patchesJson6902`;
- `namespace`, `commonLabels`, `labels`, `commonAnnotations` (they change what later selectors match);
- `configMapGenerator`, `secretGenerator` and `generatorOptions` (`bot.kustomize.generators`): the
  objects they make are applied and pruned like any other;

applied in kustomize's order: resources, then components, then patchesStrategicMerge, patches,
namespace, labels, annotations, patchesJson6902 (api/internal/target/kusttarget_configplugin.go).
Fields that change no object's identity and cannot touch a Flux Kustomization's spec (images,
replicas, ...) are skipped. Anything that could, and that this module does not evaluate
(namePrefix, replacements, plugins, helm, remote bases, paths outside the repository), raises
`Unsupported` rather than guessing. What kustomize itself would reject raises `BuildError`; a patch
that kustomize would fail on is recorded as a `Problem` and skipped, so one stale patch does not
hide what the rest of the overlay does.
"""
from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from bot.kustomize.files import (
    Additions,
    Kustomization,
    PatchField,
    PatchUse,
    _list,
    _load,
    _mapping_of,
    _name,
    _string_map,
    find_kustomization,
    kind_of,
    read_bytes,
    read_kustomization,
    read_patch,
    resolve,
)
from bot.kustomize.generators import GENERATORS, generate
from bot.kustomize.patching import PatchFailed, apply_json_patch, merge_patch
from bot.kustomize.select import ResId
from bot.kustomize.spec import CLUSTER_SCOPED, HINT_BY_HAND, JSON_OPS, LABEL_KEYS, MAX_FILES, BuildError, Unsupported
from bot.naming import shown
from bot.repo.tree import Tree
from bot.yamlio import documents as yamlio


@dataclass(frozen=True)
class Object:
    """One object of a build's output."""

    value: Mapping[str, Any]
    id: ResId
    original: ResId
    """Its id as first loaded (before a namespace transformer moved it)."""
    source: str
    document: yamlio.Document | None = field(default=None, compare=False, repr=False)
    """The YAML document it was read from (its `info` says where its keys are)."""


@dataclass(frozen=True)
class Problem:
    """A patch kustomize would fail on. The build carried on without it."""

    message: str
    patch: PatchUse
    missing: ResId | None = None
    """For a strategic-merge patch without `target:`: the object it names, which is not there."""


@dataclass(frozen=True)
class Build:
    """What `kustomize build <directory>` gives, as far as this evaluator can tell."""

    objects: tuple[Object, ...]
    patches: tuple[PatchUse, ...]
    problems: tuple[Problem, ...]
    kustomizations: tuple[str, ...]
    """Kustomization files read, in the order they were read (the built directory's first)."""

    def find(self, kind: str, group: str, name: str) -> list[Object]:
        return [o for o in self.objects if (o.id.kind, o.id.group, o.id.name) == (kind, group, name)]


def build(tree: Tree, directory: str, additions: Additions | None = None) -> Build:
    """Evaluate `kustomize build directory` over `tree`, with a Flux Kustomization's `additions`
    (None: none) as kustomize-controller applies them. Raises BuildError or Unsupported."""
    builder = _Builder(tree, additions)
    # kustomize leaves out of its output what is annotated `config.kubernetes.io/local-config: "true"`
    resources = [r for r in builder.target(directory, 0, None, []) if not _local_config(r.value)]
    return Build(
        objects=tuple(
            Object(value=r.value, id=r.ids[-1], original=r.ids[0], source=r.source, document=r.document)
            for r in resources
        ),
        patches=tuple(builder.patches),
        problems=tuple(builder.problems),
        kustomizations=tuple(builder.kustomizations),
    )


@dataclass
class _Res:
    """An object while a build transforms it."""

    value: dict[str, Any]
    ids: list[ResId]
    source: str
    document: yamlio.Document | None = None

    @property
    def id(self) -> ResId:
        return self.ids[-1]

    def note_id(self) -> None:
        new = ResId.of_object(self.value)
        if not new.identical(self.ids[-1]):
            self.ids.append(new)


@dataclass
class _Builder:
    tree: Tree
    additions: Additions | None = None
    patches: list[PatchUse] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    kustomizations: list[str] = field(default_factory=list)
    stack: list[str] = field(default_factory=list)

    def _count(self, path: str) -> None:
        self.files.append(path)
        if len(self.files) > MAX_FILES:
            raise Unsupported(f"the build reads more than {MAX_FILES} files; wave-bot stops there", path=path,
                              hint=HINT_BY_HAND)

    def target(self, directory: str, depth: int, expect: str | None, acc: list[_Res]) -> list[_Res]:
        """Build `directory` on top of `acc` (empty, except for a component)."""
        if directory in self.stack:
            raise BuildError(f"kustomizations include each other in a cycle: {' -> '.join([*self.stack, directory])}",
                             path=directory)
        kfile = find_kustomization(self.tree, directory)
        if kfile is None:
            raise BuildError("has no kustomization.yaml; kustomize cannot build it", path=directory or ".")
        self._count(kfile)
        self.kustomizations.append(kfile)
        kust = read_kustomization(self.tree, kfile)
        if expect is not None and kust.kind != expect:
            raise BuildError(f"is a {kust.kind}, but it is listed under "
                             f"{'components' if expect == 'Component' else 'resources'}", path=kfile,
                             hint="list a Component under components:, anything else under resources:")
        self.stack.append(directory)
        try:
            acc = list(acc)
            for key in ("resources", "bases"):  # kustomize appends `bases` after `resources`
                for i, ref in enumerate(kust.strings(key)):
                    self._add(acc, self._resource(kust, key, i, ref, depth), kust, kust.line(key, i))
            extra = self.additions if depth == 0 else None
            for source in (kust, extra) if extra is not None else (kust,):
                for i, ref in enumerate(source.strings("components")):
                    path = resolve(source.directory, ref, source.path, source.line("components", i), tree=self.tree)
                    acc = self.target(path, depth + 1, "Component", acc)
            self._generate(kust, acc)
            self._transform(kust, acc, depth, extra)
        finally:
            self.stack.pop()
        return acc

    def _resource(self, kust: Kustomization, key: str, i: int, ref: str, depth: int) -> list[_Res]:
        line = kust.line(key, i)
        path = resolve(kust.directory, ref, kust.path, line, tree=self.tree)
        kind = kind_of(self.tree, path)
        if kind == "dir":
            return self.target(path, depth + 1, "Kustomization", [])
        if kind is None:
            raise BuildError(f"{key} lists '{ref}', which does not exist; kustomize fails to build", path=kust.path,
                             line=line)
        self._count(path)
        return [r for doc in _load(read_bytes(self.tree, path), path) for r in _objects(doc, path)]

    def _generate(self, kust: Kustomization, acc: list[_Res]) -> None:
        """configMapGenerator and secretGenerator, after resources and components (as kustomize runs them)."""
        options = kust.value.get("generatorOptions")

        def read(ref: str, where: str, line: int) -> bytes:
            path = resolve(kust.directory, ref, where, line, tree=self.tree)
            if kind_of(self.tree, path) != "file":
                raise BuildError(f"a generator lists '{ref}', which is not a file; kustomize fails to build",
                                 path=where, line=line)
            self._count(path)
            return read_bytes(self.tree, path)

        for key, kind in GENERATORS:
            for i, entry in enumerate(_list(kust, key)):
                line = kust.line(key, i)
                value = generate(kind, entry, options if isinstance(options, dict) else {}, kust.directory,
                                 kust.path, line, read)
                self._add(acc, [_Res(value, [ResId.of_object(value)], kust.path)], kust, line)

    @staticmethod
    def _add(acc: list[_Res], new: list[_Res], kust: Kustomization, line: int) -> None:
        for res in new:
            if any(res.id.same(other.id) for other in acc):
                raise BuildError(f"{res.id.full} is added twice (kustomize: may not add resource with an already "
                                 "registered id)", path=kust.path, line=line)
            acc.append(res)

    # -- transformers, in kustomize's order

    def _transform(self, kust: Kustomization, acc: list[_Res], depth: int, extra: Additions | None) -> None:
        for i, entry in enumerate(_list(kust, "patchesStrategicMerge")):
            self._legacy_smp(kust, i, entry, acc, depth)
        for source in (kust, extra) if extra is not None else (kust,):
            for i, entry in enumerate(_list(source, "patches")):
                self._patch(source, "patches", i, entry, acc, depth)
        target = extra if extra is not None and extra.value.get("namespace") else kust
        self._namespace(target, acc)
        self._metadata(kust, acc)
        for i, entry in enumerate(_list(kust, "patchesJson6902")):
            self._patch(kust, "patchesJson6902", i, entry, acc, depth)

    def _namespace(self, kust: Kustomization, acc: list[_Res]) -> None:
        namespace = kust.value.get("namespace")
        if not namespace:
            return
        if not isinstance(namespace, str):
            raise BuildError("'namespace' must be a string", path=kust.path, line=kust.line("namespace"))
        for res in acc:
            if res.id.kind == "Namespace":
                # kustomize's namespace field specs include a Namespace's own name
                # (api/konfig/builtinpluginconsts/namespace.go): the build creates the namespace it
                # names, not the one the file names.
                res.value.setdefault("metadata", {})["name"] = namespace
                res.note_id()
            elif res.id.kind not in CLUSTER_SCOPED:
                res.value.setdefault("metadata", {})["namespace"] = namespace
                res.note_id()
        for i, res in enumerate(acc):  # two Namespaces, or a name already in the namespace
            if any(res.id.same(other.id) for other in acc[:i]):
                raise BuildError(f"'namespace: {namespace}' gives two objects the id {res.id.full} (kustomize: "
                                 "namespace transformation produces ID conflict)", path=kust.path,
                                 line=kust.line("namespace"),
                                 hint="keep one Namespace object per kustomization that sets a namespace")

    def _metadata(self, kust: Kustomization, acc: list[_Res]) -> None:
        """commonLabels, labels and commonAnnotations: they change what label selectors match later."""
        labels = _string_map(kust, "commonLabels")
        for i, item in enumerate(_list(kust, "labels")):
            if item is None:
                continue  # kustomize reads a null entry as an empty one
            line = kust.line("labels", i)
            _mapping_of(item, LABEL_KEYS, f"labels[{i}]", "a mapping (pairs, includeSelectors, ...)", kust, line)
            if item.get("fields"):
                # fieldSpecs write the labels wherever they name, spec.decryption included
                raise Unsupported(f"labels[{i}].fields puts labels at paths wave-bot does not follow", path=kust.path,
                                  line=line, hint=HINT_BY_HAND)
            pairs = item.get("pairs")
            if pairs is None:
                continue  # kustomize adds nothing for an entry without pairs
            if not isinstance(pairs, dict):
                raise BuildError(f"labels[{i}].pairs must be a mapping of labels", path=kust.path, line=line)
            labels.update({str(k): str(v) for k, v in pairs.items()})
        annotations = _string_map(kust, "commonAnnotations")
        for res in acc:
            metadata = res.value.setdefault("metadata", {})
            if labels:
                metadata["labels"] = {**(metadata.get("labels") or {}), **labels}
            if annotations:
                metadata["annotations"] = {**(metadata.get("annotations") or {}), **annotations}

    # -- patches

    def _legacy_smp(self, kust: Kustomization, i: int, entry: Any, acc: list[_Res], depth: int) -> None:
        self._smp_by_id(read_patch(self.tree, kust, "patchesStrategicMerge", i, entry, depth, self._count), acc)

    def _patch(self, kust: Kustomization, key: PatchField, i: int, entry: Any, acc: list[_Res], depth: int) -> None:
        use = read_patch(self.tree, kust, key, i, entry, depth, self._count)
        if not use.documents:  # a `patches` entry holding only comments: kustomize applies nothing
            self._record(use, [])
        elif use.form == "json6902":
            self._json(use, acc, kust)
        elif use.target is None:
            self._smp_by_id(use, acc)
        else:
            self._smp_by_target(use, acc, kust)

    def _record(self, use: PatchUse, applied: list[ResId]) -> PatchUse:
        done = replace(use, applied_to=tuple(applied))
        self.patches.append(done)
        return done

    def _smp_by_id(self, use: PatchUse, acc: list[_Res]) -> None:
        """No target: each document patches the one object its own apiVersion/kind/name/namespace names."""
        applied: list[ResId] = []
        failed: list[tuple[str, ResId]] = []
        for doc in use.documents:
            wanted = ResId.of_object(doc)
            matches = [r for r in acc if any(wanted.same(i) for i in r.ids)]
            if len(matches) != 1:
                why = "no object in the build matches" if not matches else "several objects match"
                failed.append((f"{why} the strategic-merge patch for {wanted.full}", wanted))
                continue
            applied.append(matches[0].id)
            _merge_into(acc, matches[0], doc, use.options)
        done = self._record(use, applied)
        for message, wanted in failed:
            self.problems.append(Problem(message, done, wanted))

    def _smp_by_target(self, use: PatchUse, acc: list[_Res], kust: Kustomization) -> None:
        if len(use.documents) > 1:
            raise BuildError(f"{use.where}: several strategic-merge patches in one entry cannot have a target",
                             path=kust.path, line=use.line)
        assert use.target is not None
        selected = [r for r in acc if use.target.matches(r.value, r.ids)]
        for res in selected:
            _merge_into(acc, res, use.documents[0], use.options)
        self._record(use, [r.id for r in selected])

    def _json(self, use: PatchUse, acc: list[_Res], kust: Kustomization) -> None:
        if use.target is None:
            raise BuildError(f"{use.where}: a JSON6902 patch needs a target", path=kust.path, line=use.line)
        ops = _json_ops(use, kust)
        selected = [r for r in acc if use.target.matches(r.value, r.ids)]
        applied: list[ResId] = []
        errors: list[str] = []
        for res in selected:
            try:
                res.value = apply_json_patch(res.value, ops)
            except PatchFailed as exc:
                errors.append(f"JSON6902 patch on {res.id.full} fails: {exc}")
                continue
            applied.append(res.id)
            res.note_id()
        done = self._record(use, applied)
        self.problems.extend(Problem(message, done) for message in errors)


LOCAL_CONFIG = "config.kubernetes.io/local-config"


def _local_config(value: Mapping[str, Any]) -> bool:
    metadata = value.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
    return isinstance(annotations, dict) and str(annotations.get(LOCAL_CONFIG, "")).lower() == "true"


def _objects(doc: yamlio.Document, path: str) -> list[_Res]:
    """The objects one resource document holds (a `kind: List` holds several)."""
    value = doc.value
    if not isinstance(value, dict):
        raise BuildError("a resource document must be a mapping (an object)", path=path, line=doc.info.start_line)
    if str(value.get("kind", "")).endswith("List") and isinstance(value.get("items"), list):
        items = value["items"]
    else:
        items = [value]
    out = []
    for item in items:
        if not isinstance(item, dict) or not item.get("kind") or not _name(item):
            raise BuildError("a resource needs kind and metadata.name (kustomize refuses it otherwise)", path=path,
                             line=doc.info.start_line)
        item = copy.deepcopy(item)
        out.append(_Res(item, [ResId.of_object(item)], path, doc))
    return out


def _merge_into(acc: list[_Res], res: _Res, patch: Mapping[str, Any], options: frozenset[str]) -> None:
    """Apply one strategic-merge document to `res` the way Resource.ApplySmPatch does: the object
    keeps its apiVersion and namespace, and its kind and name unless the patch's options allow a
    change; `$patch: delete` at the top removes it from the build."""
    before = res.id
    merged = merge_patch(res.value, patch)
    if merged is None:
        acc.remove(res)
        return
    if "allowKindChange" not in options or not merged.get("kind"):
        merged["kind"] = before.kind
    merged["apiVersion"] = before.api_version
    metadata = merged.setdefault("metadata", {})
    if "allowNameChange" not in options or not metadata.get("name"):
        metadata["name"] = before.name
    if before.namespace:
        metadata["namespace"] = before.namespace
    else:
        metadata.pop("namespace", None)
    res.value = merged
    res.note_id()


# ---- JSON patch operations, as kustomize checks them ---------------------------------------


def _json_ops(use: PatchUse, kust: Kustomization) -> list[dict[str, Any]]:
    ops: list[dict[str, Any]] = use.documents[0]
    for op in ops:
        if not isinstance(op, dict) or op.get("op") not in JSON_OPS:
            kind = op.get("op", "unknown") if isinstance(op, dict) else "unknown"
            raise BuildError(f"{use.where}: {shown(kind)} is not a JSON6902 operation (add, remove, replace, move, "
                             "copy, test)", path=use.path or kust.path, line=use.line)
        for key in ("path", *(("from",) if op["op"] in ("move", "copy") else ())):
            if not isinstance(op.get(key), str):
                raise BuildError(f"{use.where}: a '{op['op']}' operation needs '{key}'", path=use.path or kust.path,
                                 line=use.line)
    return ops


__all__ = ["Build", "Object", "PatchFailed", "Problem", "apply_json_patch", "build", "merge_patch"]
