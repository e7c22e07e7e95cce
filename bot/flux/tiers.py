"""The tiers: every Flux Kustomization a cluster entrypoint applies, its dependsOn entries and its own pass."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bot.errors import WaveBotError
from bot.flux.applied import Cluster, FluxKs, FluxModel
from bot.flux.vocabulary import is_flux_kustomization
from bot.kustomize.build import Object
from bot.model import Severity
from bot.repo.tree import Tree
from bot.yamlio import documents as yamlio

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


def entrypoints(model: FluxModel) -> list[Entrypoint]:
    """One entrypoint per cluster of the model of what Flux applies (`bot.flux.applied.read_model`):
    its tiers are every Flux Kustomization the cluster reconciles (a root `flux bootstrap` or the Flux
    Operator makes for a sync path is not written anywhere, so it is no tier), each with the pass its
    build gives, generated kustomizations included."""
    return [_entrypoint(cluster) for cluster in model.clusters]


def _entrypoint(cluster: Cluster) -> Entrypoint:
    tiers: list[Tier] = []
    passes: dict[tuple[str, str], Pass | None] = {}
    unchecked: dict[tuple[str, str], str] = {}
    for ks in cluster.kustomizations:
        if ks.synthesized:
            continue
        tier = _tier(ks)
        tiers.append(tier)
        reason = _not_checked(ks)
        if reason is None:
            passes[tier.key] = Pass(tier, ks.built)
        else:
            passes[tier.key], unchecked[tier.key] = None, reason
    roots = [k for k in cluster.kustomizations if k.parent is None]
    objects = tuple(o for k in roots for o in k.built)
    return Entrypoint(cluster.name, tuple(tiers), passes, objects, unchecked)


def _not_checked(ks: FluxKs) -> str | None:
    """Why a tier's pass is not evaluated (None: it is)."""
    if ks.external:
        if ks.source.kind == "GitRepository":
            return f"its sourceRef is {ks.source}, not the Git repository this cluster is synced from"
        return f"its sourceRef is of kind {ks.source.kind}, not a Git repository wave-bot can read"
    failure = ks.build_failure
    if failure is None:
        return None
    if ks.path is None:
        return "its spec.path leaves the repository"
    if failure.path == ks.file and "spec.path" in failure.message:
        return f"./{ks.path} is not a directory of this repository"
    return f"wave-bot cannot build ./{ks.path} ({failure.message})"


def _tier(ks: FluxKs) -> Tier:
    deps = tuple(DependsOnEntry(d.name, d.written_namespace, d.line) for d in ks.depends_on)
    return Tier(ks.name, ks.namespace, ks.file, ks.line, ks.path, deps, ks.wait or bool(ks.health_checks), ks.value,
                ks.info)


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
    "locate",
]
