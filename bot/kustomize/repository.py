"""Every kustomization of a directory tree, read once, and what each file is to them.

The inventory (is this YAML file a definition or a patch?), the hazard checks (which lines refer
to a wave being removed?) and the overlay checks all ask the same questions about the repository's
kustomize structure; this module answers them from one reading, through the same functions the
evaluator (`bot.kustomize.build`) uses, so that they never disagree. Every file name kustomize accepts
(`kustomization.yaml`, `kustomization.yml`, `Kustomization`) is a kustomization.

`Builds` memoizes evaluations per (tree, directory) for callers that ask about the same overlay
many times (the fixer does).
"""
from __future__ import annotations

import posixpath
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from bot.errors import WaveBotError
from bot.kustomize.build import Build, build
from bot.kustomize.files import (
    Additions,
    Kustomization,
    PatchField,
    PatchUse,
    find_kustomization,
    kind_of,
    read_kustomization,
    read_patch,
    resolve,
)
from bot.kustomize.spec import KUSTOMIZATION_FILES, Unsupported
from bot.naming import is_yaml_name
from bot.repo.tree import Tree, walk
from bot.resid import ResourceId
from bot.yamlio import documents as yamlio

Role = Literal["resource", "directory", "component", "patch", "generator-input", "configuration"]
"""What a kustomization makes of a path it names: an object file (`resource`), a directory it builds
on (`directory`: a base, or another overlay), a Component, a patch file, a generator's input
(configMapGenerator/secretGenerator files and envs), or kustomize configuration (crds, openapi,
configurations)."""
PATCH_FIELDS: tuple[PatchField, ...] = ("patchesStrategicMerge", "patches", "patchesJson6902")


def is_kustomization_file(name: str) -> bool:
    return name in KUSTOMIZATION_FILES


@dataclass(frozen=True)
class Reference:
    """One path a kustomization names, and as what."""

    path: str
    role: Role
    kustomization: str
    line: int
    key: str = ""
    """The top-level field naming it (resources, components, patches, ...)."""
    index: int = -1
    """Its item in that field (for a generator: the generator's)."""
    written: str = ""
    """The reference as written."""


@dataclass(frozen=True)
class PatchEntry:
    """One patch of a kustomization, read but not applied (its documents, its target)."""

    use: PatchUse

    @property
    def kustomization(self) -> str:
        return self.use.file

    def aims_only_at(self, group: str, kind: str, name: str) -> bool:
        """Whether it patches the object named `kind`/`name` (of `group`) and nothing else, whatever
        the build holds: a target whose name is that name literally (no regular-expression syntax),
        or, without a target, strategic-merge documents that all name it."""
        use = self.use
        if use.target is not None:
            fields = use.target.fields
            return (_literal(fields.get("name")) == name and fields.get("kind") in (None, kind)
                    and fields.get("group") in (None, group))  # other fields only narrow it further
        return bool(use.documents) and all(_names(d, group, kind, name) for d in use.documents)


def _literal(pattern: str | None) -> str | None:
    """`pattern` when it matches only itself as a regular expression, else None."""
    if pattern is None or not pattern or any(c in pattern for c in r"\^$.|?*+()[]{}"):
        return None
    return pattern


def _names(doc: Any, group: str, kind: str, name: str) -> bool:
    if not isinstance(doc, dict):
        return False
    rid = ResourceId.of_object(doc)
    return (rid.group, rid.kind, rid.name) == (group, kind, name)


@dataclass(frozen=True)
class Kustomizations:
    """The kustomizations under one directory and what they name."""

    root: str
    files: tuple[Kustomization, ...]
    references: tuple[Reference, ...]
    patches: tuple[PatchEntry, ...]
    unreadable: tuple[str, ...] = ()
    """Kustomization files that could not be read (kustomize reports them; so do the builds)."""

    def roles(self, path: str) -> set[Role]:
        return {r.role for r in self.references if r.path == path}

    def patch_files(self) -> set[str]:
        """Files used as patches (and not also as resources)."""
        patches = {r.path for r in self.references if r.role == "patch"}
        return patches - {r.path for r in self.references if r.role == "resource"}

    def not_objects(self) -> set[str]:
        """Files under the root that are not objects of a build: kustomizations, patches,
        generator inputs and kustomize configuration."""
        used = {r.path for r in self.references if r.role in ("patch", "generator-input", "configuration")}
        used -= {r.path for r in self.references if r.role == "resource"}
        return used | {k.path for k in self.files} | set(self.unreadable)

    def in_directory(self, directory: str) -> Kustomization | None:
        return next((k for k in self.files if k.directory == directory), None)

    def patches_aimed_only_at(self, group: str, kind: str, name: str) -> list[PatchEntry]:
        """The patches, in every kustomization, that patch exactly that object and nothing else:
        what has to go when the object goes."""
        return [p for p in self.patches if p.aims_only_at(group, kind, name)]


def read_kustomizations(tree: Tree, root: str) -> Kustomizations:
    """Read every kustomization under `root` (hidden directories and links left out)."""
    files: list[Kustomization] = []
    references: list[Reference] = []
    patches: list[PatchEntry] = []
    unreadable: list[str] = []
    for directory in _directories(tree, root):
        try:
            kfile = find_kustomization(tree, directory)
            if kfile is None:
                continue
            kust = read_kustomization(tree, kfile, check=False)
        except WaveBotError as exc:
            unreadable += [exc.path] if exc.path and exc.path != directory else []
            continue
        files.append(kust)
        references += _references(tree, kust)
        patches += _patches(tree, kust)
    return Kustomizations(root, tuple(files), tuple(references), tuple(patches), tuple(unreadable))


def _directories(tree: Tree, root: str) -> Iterator[str]:
    """`root` and every directory below it, at any depth (one too deep to see would be a patch file
    nobody checks), in order, hidden ones left out."""
    yield root
    yield from (path for path, entry in walk(tree, root) if entry.kind == "dir")


_GENERATOR_KEYS = ("files", "envs", "env")


def _references(tree: Tree, kust: Kustomization) -> list[Reference]:
    out: list[Reference] = []

    def add(ref: Any, role: Role, *keys: str | int) -> None:
        if not isinstance(ref, str) or "\n" in ref.strip():
            return
        if role == "generator-input" and "=" in ref:
            ref = ref.split("=", 1)[1]  # files: [key=path]
        try:
            path = resolve(kust.directory, ref.strip(), kust.path, None, tree=tree)
            kind = kind_of(tree, path)
        except Unsupported:
            return  # remote, absolute or outside the repository: never a file of this tree
        if role == "resource" and kind == "dir":
            role = "directory"
        if role != "directory" and kind is None:
            return
        key, index = (keys[0], keys[1]) if len(keys) > 1 else (keys[0], -1)
        out.append(Reference(path, role, kust.path, kust.line(*keys), str(key), int(index), ref.strip()))

    value = kust.value
    for key in ("resources", "bases", "components"):
        for i, ref in enumerate(_items(value, key)):
            add(ref, "component" if key == "components" else "resource", key, i)
    for i, entry in enumerate(_items(value, "patchesStrategicMerge")):
        add(entry, "patch", "patchesStrategicMerge", i)
    for key in ("patches", "patchesJson6902"):
        for i, entry in enumerate(_items(value, key)):
            add(entry.get("path") if isinstance(entry, dict) else None, "patch", key, i)
    for key in ("configMapGenerator", "secretGenerator"):
        for i, generator in enumerate(_items(value, key)):
            for sub in _GENERATOR_KEYS:
                refs = generator.get(sub) if isinstance(generator, dict) else None
                for ref in refs if isinstance(refs, list) else [refs]:
                    add(ref, "generator-input", key, i)
    for key in ("crds", "configurations"):
        for i, ref in enumerate(_items(value, key)):
            add(ref, "configuration", key, i)
    openapi = value.get("openapi")
    if isinstance(openapi, dict):
        add(openapi.get("path"), "configuration", "openapi")
    return out


def _patches(tree: Tree, kust: Kustomization) -> list[PatchEntry]:
    out = []
    for key in PATCH_FIELDS:
        for i, entry in enumerate(_items(kust.value, key)):
            try:
                out.append(PatchEntry(read_patch(tree, kust, key, i, entry)))
            except WaveBotError:
                continue  # kustomize fails on it; a build reports it where it matters
    return out


def _items(value: Any, key: str) -> list[Any]:
    items = value.get(key) if isinstance(value, dict) else None
    return items if isinstance(items, list) else []


# ---- a wave's own kustomization, read fast --------------------------------------------------


def _listing_field(path: yamlio.Path) -> bool:
    return len(path) <= 2 and path[0] == "resources" or path == ("namespace",)


def applied_files(tree: Tree, directory: str) -> list[str]:
    """The files a Flux Kustomization whose spec.path is `directory` applies: what its kustomization
    (any file name) lists under `resources`, through listed directories; without a kustomization,
    every YAML file below it (kustomize-controller generates one that lists them). Read with the
    scanner: an app tier may list thousands of files. Remote and outside references are left out."""
    return [path for path, _ in applied_files_in_namespaces(tree, directory)]


def applied_files_in_namespaces(tree: Tree, directory: str, namespace: str = "",
                                seen: set[str] | None = None) -> list[tuple[str, str]]:
    """`applied_files`, each with the namespace kustomize moves its namespaced objects to: the
    outermost `namespace:` among the kustomizations that list it (an outer transformer runs after
    the inner ones), else `namespace`; '' when the objects keep the namespace they are written with."""
    seen = set() if seen is None else seen
    if directory in seen:
        return []
    seen.add(directory)
    prefix = f"{directory}/" if directory else ""
    names = [n for n in KUSTOMIZATION_FILES if tree.kind(prefix + n) == "file"]
    out: list[tuple[str, str]] = []
    if names:
        kustomization = prefix + names[0]
        try:
            docs = [d for d in yamlio.scan(tree.read(kustomization), kustomization, capture=_listing_field)
                    if not d.empty]
        except WaveBotError:
            return []
        items = docs[0].scalars if docs else {}
        inner = namespace or items.get(("namespace",), "")
        for _, ref in sorted((k, v) for k, v in items.items() if len(k) == 2):
            path = posixpath.normpath(f"{prefix}{ref}")
            if "://" in ref or path == ".." or path.startswith("../"):
                continue
            kind = tree.kind(path)
            if kind == "file":
                out.append((path, inner))
            elif kind == "dir":
                out += applied_files_in_namespaces(tree, path, inner, seen)
        return out
    for entry in tree.entries(directory):
        path = f"{prefix}{entry.name}"
        if entry.kind == "file" and is_yaml_name(entry.name):
            out.append((path, namespace))
        elif entry.kind == "dir":
            out += applied_files_in_namespaces(tree, path, namespace, seen)
    return out


# ---- memoized builds ------------------------------------------------------------------------


@dataclass
class Builds:
    """`bot.kustomize.build.build`, once per (tree, directory, additions). Hold one only while the trees it
    has seen stay unchanged (one check, one plan): it keys on the tree object, not its content."""

    _done: dict[tuple[int, str, int], tuple[Tree, Additions | None, Build | WaveBotError]] = field(
        default_factory=dict)
    evaluations: int = 0
    """How many builds were actually evaluated (the rest were remembered)."""

    def build(self, tree: Tree, directory: str, additions: Additions | None = None) -> Build:
        key = (id(tree), directory, id(additions))
        found = self._done.get(key)
        if found is None or found[0] is not tree or found[1] is not additions:
            self.evaluations += 1
            try:
                result: Build | WaveBotError = build(tree, directory, additions)
            except WaveBotError as exc:
                result = exc
            found = (tree, additions, result)
            self._done[key] = found
        if isinstance(found[2], WaveBotError):
            raise found[2]
        return found[2]


__all__ = [
    "Builds", "Kustomizations", "PatchEntry", "Reference", "Role", "applied_files", "applied_files_in_namespaces",
    "is_kustomization_file",
    "read_kustomizations",
]
