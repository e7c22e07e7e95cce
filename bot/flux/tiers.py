"""The tiers: every Flux Kustomization a cluster entrypoint applies, its dependsOn entries and its own pass."""
from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bot.config import Config
from bot.errors import WaveBotError
from bot.flux.evalpaths import evaluation_paths
from bot.flux.vocabulary import FLUX_GROUP
from bot.kustomize.build import Build, Object
from bot.kustomize.files import Additions, find_kustomization
from bot.kustomize.repository import Builds
from bot.kustomize.spec import BuildError, Unsupported
from bot.model import Severity
from bot.repo.tree import Tree
from bot.yamlio import documents as yamlio

MAX_TIER_DEPTH = 3
DEFAULT_NAMESPACE = "flux-system"
BOOTSTRAP = (DEFAULT_NAMESPACE, "flux-system")


@dataclass(frozen=True)
class DependsOnEntry:
    name: str
    namespace: str | None
    """As written; None: the dependent's own namespace."""
    line: int


@dataclass(frozen=True)
class Tier:
    """One Flux Kustomization as an entrypoint builds it."""

    name: str
    namespace: str
    file: str
    line: int
    path: str | None
    """spec.path as a repo directory ('' for the root); None when it leaves the repository."""
    depends_on: tuple[DependsOnEntry, ...]
    ready_gated: bool
    """wait: true or health checks: dependents start once what it applied is healthy, not just applied."""
    value: Mapping[str, Any]
    info: yamlio.DocInfo | None

    @property
    def key(self) -> tuple[str, str]:
        return (self.namespace, self.name)

    @property
    def title(self) -> str:
        return self.name if self.namespace == DEFAULT_NAMESPACE else f"{self.namespace}/{self.name}"

    def spec(self) -> Mapping[str, Any]:
        spec = self.value.get("spec")
        return spec if isinstance(spec, dict) else {}


@dataclass(frozen=True)
class Pass:
    """What one tier applies in one reconcile: its spec.path built with its spec.patches and components."""

    tier: Tier
    objects: tuple[Object, ...]


@dataclass(frozen=True)
class Entrypoint:
    """One cluster entrypoint: its tiers and each tier's pass (None: not evaluated)."""

    label: str
    tiers: tuple[Tier, ...]
    passes: Mapping[tuple[str, str], Pass | None]
    objects: tuple[Object, ...]
    """What the entrypoint's own build applies (the tiers' Flux Kustomizations, ConfigMaps, ...)."""
    unchecked: Mapping[tuple[str, str], str] = field(default_factory=dict)
    """Why a tier's pass was not evaluated."""

    def tier(self, key: tuple[str, str]) -> Tier | None:
        return next((t for t in self.tiers if t.key == key), None)

    def edges(self) -> list[tuple[Tier, DependsOnEntry, Tier]]:
        """(dependent, entry, target) for each dependsOn entry whose target this entrypoint applies."""
        out = []
        for tier in self.tiers:
            for dep in tier.depends_on:
                target = self.tier((dep.namespace or tier.namespace, dep.name))
                if target is not None:
                    out.append((tier, dep, target))
        return out

    def upstream(self, tier: Tier) -> set[tuple[str, str]]:
        """Every tier `tier` depends on, directly or transitively."""
        after: dict[tuple[str, str], list[tuple[str, str]]] = {}
        for a, _, b in self.edges():
            after.setdefault(a.key, []).append(b.key)
        seen: set[tuple[str, str]] = set()
        frontier = list(after.get(tier.key, []))
        while frontier:
            key = frontier.pop()
            if key not in seen:
                seen.add(key)
                frontier += after.get(key, [])
        return seen

    def all_objects(self) -> list[Object]:
        """What this entrypoint puts in the cluster: its own build and every evaluated pass."""
        return [*self.objects, *(o for p in self.passes.values() if p is not None for o in p.objects)]


def is_flux_kustomization(value: Mapping[str, Any]) -> bool:
    return value.get("kind") == "Kustomization" and str(value.get("apiVersion", "")).startswith(f"{FLUX_GROUP}/")


def entrypoints(tree: Tree, config: Config, builds: Builds | None = None) -> list[Entrypoint]:
    """Every evaluation path wave-bot can build, with its tiers (paths it cannot build are reported by
    the overlay checks: overlay-build-error, overlay-not-checked)."""
    builds = builds if builds is not None else Builds()
    out = []
    for path in evaluation_paths(tree, config):
        if path.unsupported is not None:
            continue
        try:
            result = builds.build(tree, path.directory, path.additions)
        except (BuildError, Unsupported):
            continue
        out.append(_entrypoint(tree, path.label, result, builds))
    return out


def _entrypoint(tree: Tree, label: str, result: Build, builds: Builds) -> Entrypoint:
    tiers: dict[tuple[str, str], Tier] = {}
    passes: dict[tuple[str, str], Pass | None] = {}
    unchecked: dict[tuple[str, str], str] = {}
    frontier = [o for o in result.objects if is_flux_kustomization(o.value)]
    for _ in range(MAX_TIER_DEPTH + 1):
        found: list[Object] = []
        for obj in frontier:
            tier = _tier(tree, obj)
            if tier.key in tiers:
                continue
            tiers[tier.key] = tier
            applied = tier_pass(tree, tier, builds)
            if isinstance(applied, str):
                passes[tier.key], unchecked[tier.key] = None, applied
                continue
            passes[tier.key] = applied
            found += [o for o in applied.objects if is_flux_kustomization(o.value)]
        frontier = found
    return Entrypoint(label, tuple(tiers.values()), passes, result.objects, unchecked)


def _tier(tree: Tree, obj: Object) -> Tier:
    value = obj.value
    meta = value.get("metadata") if isinstance(value.get("metadata"), dict) else {}
    assert isinstance(meta, dict)
    spec = value.get("spec") if isinstance(value.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    namespace = str(meta.get("namespace") or DEFAULT_NAMESPACE)
    info = doc_info(tree, obj)
    deps = []
    entries = spec.get("dependsOn")
    for i, entry in enumerate(entries if isinstance(entries, list) else []):
        if isinstance(entry, dict) and isinstance(entry.get("name"), str):
            ns = entry.get("namespace")
            line = info.line(("spec", "dependsOn", i)) if info is not None else 0
            deps.append(DependsOnEntry(entry["name"], str(ns) if ns else None, line))
    health = spec.get("healthChecks")
    gated = spec.get("wait") is True or (isinstance(health, list) and bool(health))
    return Tier(str(meta.get("name", "")), namespace, obj.source, info.start_line if info is not None else 0,
                _spec_path(spec.get("path")), tuple(deps), gated, value, info)


def doc_info(tree: Tree, obj: Object) -> yamlio.DocInfo | None:
    """Where `obj` is written: the document of its source file with its original kind and name."""
    try:
        docs = yamlio.load(tree.read(obj.source), obj.source)
    except (WaveBotError, OSError):
        return None
    for doc in docs:
        value = doc.value
        if isinstance(value, dict) and value.get("kind") == obj.original.kind and isinstance(
                value.get("metadata"), dict) and value["metadata"].get("name") == obj.original.name:
            return doc.info
    return None


def locate(tree: Tree, obj: Object, at: tuple[str | int, ...] = (), text: str | None = None) -> int | None:
    """The line of `obj` in its source file: of the key at `at` in it (or its nearest recorded parent),
    and of the first line from there on within the object that holds `text`, when one does (a value
    an overlay patched in is not in the file: then the key's line). None when the file does not hold it."""
    try:
        data = tree.read(obj.source)
        docs = yamlio.load(data, obj.source)
    except (WaveBotError, OSError):
        return None
    for i, doc in enumerate(docs):
        value = doc.value
        if isinstance(value, dict) and value.get("kind") == obj.original.kind and isinstance(
                value.get("metadata"), dict) and value["metadata"].get("name") == obj.original.name:
            line = doc.info.line(at)
            if text is None:
                return line
            end = docs[i + 1].info.start_line if i + 1 < len(docs) else None
            lines = data.decode("utf-8", "replace").splitlines()[line - 1:end]
            return line + next((n for n, row in enumerate(lines) if text in row), 0)
    return None


def _spec_path(value: Any) -> str | None:
    if value is None:
        return ""
    if not isinstance(value, str):
        return None
    joined = posixpath.normpath(value.lstrip("/")) if value.strip() else "."
    if joined == ".." or joined.startswith("../"):
        return None
    return "" if joined == "." else joined


def tier_pass(tree: Tree, tier: Tier, builds: Builds) -> Pass | str:
    """The tier's pass, or why wave-bot cannot build it."""
    source = tier.spec().get("sourceRef")
    kind = source.get("kind") if isinstance(source, dict) else None
    if kind not in (None, "GitRepository"):
        return f"its sourceRef is of kind {kind}, not a Git repository wave-bot can read"
    if tier.path is None:
        return "its spec.path leaves the repository"
    if tree.kind(tier.path) != "dir":
        return f"./{tier.path} is not a directory of this repository"
    try:
        if find_kustomization(tree, tier.path) is None:
            return f"./{tier.path} has no kustomization, so kustomize-controller generates one"
        spec = tier.spec()
        adds = {k: spec.get(k) for k in ("patches", "components") if spec.get(k) not in (None, [])}
        additions = Additions(tier.file, adds, tier.info, built=tier.path) if adds and tier.info else None
        result = builds.build(tree, tier.path, additions)
    except (BuildError, Unsupported) as exc:
        return f"wave-bot cannot build ./{tier.path} ({exc.message})"
    return Pass(tier, result.objects)


@dataclass(frozen=True)
class Issue:
    """A finding about one entrypoint, before the same one on other entrypoints is folded in."""

    code: str
    severity: Severity
    message: str
    path: str | None
    line: int | None
    resource: str | None
    fix: str | None
    tier: str | None = None


__all__ = [
    "DependsOnEntry", "Entrypoint", "Issue", "Pass", "Tier", "doc_info", "entrypoints", "is_flux_kustomization",
    "locate", "tier_pass",
]
