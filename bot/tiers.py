"""The tiers: every Flux Kustomization a cluster entrypoint applies, and the dependsOn graph between them.

Each evaluation path (`evalpaths.evaluation_paths`: an overlay, or a Flux Kustomization building the
base) is built as kustomize builds it; every Flux Kustomization in that build is a tier, and so is
every one a tier's own pass applies (a tier of tiers). The waves are tiers like any other, so their
own chain (wave 0 dependsOn `platform-config`) is checked with the rest.

Flux resolves a `dependsOn` entry in the namespace it names, else in the dependent's own. A target
no entrypoint applies is never Ready, so the dependent and every tier after it stall at "dependency
not ready"; a cycle never starts. `crds` and `substitution` check each tier's pass on the same model.
"""
from __future__ import annotations

import difflib
import posixpath
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bot import yamlio
from bot.config import Config
from bot.decryption import wave_of
from bot.errors import WaveBotError
from bot.evalpaths import evaluation_paths
from bot.kustomizations import Builds
from bot.kustomize import Additions, Build, BuildError, Object, Unsupported, find_kustomization
from bot.model import Finding, Severity
from bot.render import FLUX_GROUP
from bot.tree import Tree

MAX_TIER_DEPTH = 3
"""How many tiers of tiers are followed (a tier whose pass applies Flux Kustomizations, and so on)."""
DEFAULT_NAMESPACE = "flux-system"
CODES = ("depends-on-missing", "depends-on-namespace", "depends-on-cycle", "tier-not-checked")
BOOTSTRAP = (DEFAULT_NAMESPACE, "flux-system")
"""The Kustomization `flux bootstrap` creates to apply the cluster entrypoint: it exists wherever the
entrypoint is applied, whether or not its gotk-sync.yaml is part of the build."""


@dataclass(frozen=True)
class Dependency:
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
    depends_on: tuple[Dependency, ...]
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

    def edges(self) -> list[tuple[Tier, Dependency, Tier]]:
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
            deps.append(Dependency(entry["name"], str(ns) if ns else None, line))
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


# ---- findings shared by the tier checks --------------------------------------------------------------


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


def merge(issues: Iterable[tuple[str, Issue]], config: Config, labels: Sequence[str]) -> list[Finding]:
    """One finding per issue, naming the entrypoints it happens on (all of them: 'on every entrypoint')."""
    where: dict[Issue, list[str]] = {}
    for label, issue in issues:
        where.setdefault(issue, [])
        if label not in where[issue]:
            where[issue].append(label)
    out = []
    for issue, on in where.items():
        scope = "on every entrypoint" if len(on) == len(labels) and len(labels) > 1 else "on " + ", ".join(on)
        out.append(Finding(
            code=issue.code, severity=issue.severity, message=f"{issue.message} ({scope})", path=issue.path,
            line=issue.line or None, wave=wave_of(issue.tier, config) if issue.tier else None,
            overlay=on[0] if len(on) == 1 else None, resource=issue.resource, fix=issue.fix,
        ))
    return out


# ---- the dependsOn graph ---------------------------------------------------------------------------


def graph_issues(entry: Entrypoint) -> list[Issue]:
    out = []
    names: dict[str, list[Tier]] = {}
    for tier in entry.tiers:
        names.setdefault(tier.name, []).append(tier)
    for tier in entry.tiers:
        for dep in tier.depends_on:
            ns = dep.namespace or tier.namespace
            if entry.tier((ns, dep.name)) is not None or (ns, dep.name) == BOOTSTRAP:
                continue
            elsewhere = [t for t in names.get(dep.name, []) if dep.namespace is None]
            out.append(_namespace_issue(tier, dep, elsewhere[0]) if elsewhere else _missing_issue(entry, tier, dep))
    out += [_cycle_issue(cycle) for cycle in cycles(entry)]
    out += [_unchecked_issue(t, entry.unchecked[t.key]) for t in entry.tiers if t.key in entry.unchecked]
    return out


def _unchecked_issue(tier: Tier, reason: str) -> Issue:
    return Issue(
        code="tier-not-checked", severity="info",
        message=f"{tier.title}: {reason}, so its pass is not checked for CRD provenance and substitution",
        path=tier.file, line=tier.line, resource=tier.title, fix=None, tier=tier.name,
    )


def _missing_issue(entry: Entrypoint, tier: Tier, dep: Dependency) -> Issue:
    ns = dep.namespace or tier.namespace
    close = difflib.get_close_matches(dep.name, [t.name for t in entry.tiers if t.namespace == ns], n=1)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    if close:
        fix = f"# in {tier.file}, the dependsOn entry of {tier.title}:\n- name: {close[0]}\n"
    else:
        fix = (f"in {tier.file}, make the dependsOn entry of {tier.title} name a Flux Kustomization this entrypoint "
               "applies, or add the missing one's file to the entrypoint's resources")
    return Issue(
        code="depends-on-missing", severity="error",
        message=(f"{tier.title} dependsOn {ns}/{dep.name}, but no Flux Kustomization of that name is applied "
                 f"here{hint}: it is never Ready, so {tier.title} and every tier after it stall at 'dependency not "
                 "ready'"),
        path=tier.file, line=dep.line or tier.line, resource=tier.title, fix=fix, tier=tier.name,
    )


def _namespace_issue(tier: Tier, dep: Dependency, target: Tier) -> Issue:
    return Issue(
        code="depends-on-namespace", severity="error",
        message=(f"{tier.title} dependsOn {dep.name} without a namespace, so Flux looks for it in {tier.namespace}; "
                 f"the {dep.name} applied here is in {target.namespace}: {tier.title} never starts"),
        path=tier.file, line=dep.line or tier.line, resource=tier.title,
        fix=(f"# in {tier.file}, the dependsOn entry of {tier.title}:\n- name: {dep.name}\n"
             f"  namespace: {target.namespace}\n"),
        tier=tier.name,
    )


def cycles(entry: Entrypoint) -> list[list[tuple[Tier, Dependency, Tier]]]:
    """Each dependsOn cycle once, as its edges (a strongly connected component's cycle through its
    first tier; a self-dependency is a cycle of one edge)."""
    after: dict[tuple[str, str], list[tuple[Tier, Dependency, Tier]]] = {}
    for edge in entry.edges():
        after.setdefault(edge[0].key, []).append(edge)
    found: list[list[tuple[Tier, Dependency, Tier]]] = []
    covered: set[tuple[str, str]] = set()
    for tier in entry.tiers:
        if tier.key in covered:
            continue
        path = _cycle_from(tier.key, after)
        if path:
            found.append(path)
            covered |= {a.key for a, _, _ in path}
    return found


def _cycle_from(start: tuple[str, str], after: Mapping[tuple[str, str], list[tuple[Tier, Dependency, Tier]]]
                ) -> list[tuple[Tier, Dependency, Tier]]:
    """The shortest path of edges from `start` back to itself ([] when there is none)."""
    frontier: list[list[tuple[Tier, Dependency, Tier]]] = [[e] for e in after.get(start, [])]
    seen: set[tuple[str, str]] = set()
    while frontier:
        nxt = []
        for path in frontier:
            end = path[-1][2].key
            if end == start:
                return path
            if end in seen:
                continue
            seen.add(end)
            nxt += [[*path, e] for e in after.get(end, [])]
        frontier = nxt
    return []


def _cycle_issue(cycle: list[tuple[Tier, Dependency, Tier]]) -> Issue:
    ring = " -> ".join([cycle[0][0].title, *(b.title for _, _, b in cycle)])
    edges = "; ".join(f"{a.title} dependsOn {b.title} ({a.file}:{d.line})" for a, d, b in cycle)
    first = cycle[0]
    return Issue(
        code="depends-on-cycle", severity="error",
        message=f"dependsOn cycle {ring}: each waits for the next to be Ready, so none ever starts. The edges: {edges}",
        path=first[0].file, line=first[1].line, resource=first[0].title,
        fix="delete the dependsOn entry of the edge that is not a real need: " + edges, tier=first[0].name,
    )


def tier_findings(tree: Tree, config: Config, builds: Builds | None = None) -> list[Finding]:
    """Every tier check on every entrypoint: the dependsOn graph, substitution, CRD provenance."""
    return _run(entrypoints(tree, config, builds), config)[0]


def _run(entries: list[Entrypoint], config: Config) -> tuple[list[Finding], set[str]]:
    """The findings, and the tiers they are about (by title) for the report's graph."""
    from bot import crds, substitution  # they build on this module's model

    labels = [e.label for e in entries]
    issues = [(e, i) for e in entries for i in graph_issues(e)]
    seen: dict[int, list[substitution.Reference]] = {}  # the objects stay alive for the whole run
    issues += [(e, i) for e in entries for i in substitution.issues(e, config, seen)]
    unknown: list[crds.Unknown] = []
    for entry in entries:
        races, missing = crds.check(entry, config)
        issues += [(entry, i) for i in races]
        unknown += missing
    broken = {t.title for e, i in issues if i.severity != "info" for t in e.tiers if t.name == i.tier}
    broken |= {a.title for e in entries for cycle in cycles(e) for a, _, _ in cycle}
    findings = merge([(e.label, i) for e, i in issues], config, labels)
    return [*findings, *crds.unknown_findings(unknown, config)], broken


def all_codes() -> tuple[str, ...]:
    """Every code the tier checks report."""
    from bot import crds, substitution

    return (*CODES, *substitution.CODES, *crds.CODES)


@dataclass(frozen=True)
class TierReport:
    """The tier checks' findings, the graph they are about, and which findings the change introduces."""

    findings: tuple[Finding, ...]
    nodes: tuple[str, ...]
    """Every tier any entrypoint applies (by title), in the order first met."""
    edges: tuple[tuple[str, str], ...]
    """(dependent, target) for each dependsOn entry, over every entrypoint; a target that is not a
    node is one no entrypoint applies."""
    broken: frozenset[str] = frozenset()
    """The tiers a finding is about."""
    base: frozenset[tuple[Any, ...]] | None = None
    """The keys of the findings at the base revision; None without a base."""

    def introduced(self, finding: Finding) -> bool:
        """Whether the change brings `finding` (always true without a base to compare with)."""
        return self.base is None or _key(finding) not in self.base


def _key(finding: Finding) -> tuple[Any, ...]:
    return (finding.code, finding.path, finding.resource, finding.message)


def check(tree: Tree, config: Config, builds: Builds | None = None, base: Tree | None = None) -> TierReport:
    """`tier_findings` with the graph for the report and, against `base`, what the change introduces."""
    entries = entrypoints(tree, config, builds)
    nodes: dict[str, None] = {}
    edges: dict[tuple[str, str], None] = {}
    for entry in entries:
        for tier in entry.tiers:
            nodes.setdefault(tier.title)
            for dep in tier.depends_on:
                target = entry.tier((dep.namespace or tier.namespace, dep.name))
                ns = dep.namespace or tier.namespace
                if (ns, dep.name) == BOOTSTRAP:
                    nodes.setdefault(dep.name)
                edges.setdefault((tier.title, target.title if target else (
                    dep.name if ns == DEFAULT_NAMESPACE else f"{ns}/{dep.name}")))
    before = None
    if base is not None:
        try:
            before = frozenset(_key(f) for f in tier_findings(base, config))
        except WaveBotError:  # the base cannot be read: every finding counts as the change's
            before = frozenset()
    findings, broken = _run(entries, config)
    return TierReport(tuple(findings), tuple(nodes), tuple(edges), frozenset(broken), before)


__all__ = [
    "CODES", "Dependency", "Entrypoint", "Issue", "Pass", "Tier", "TierReport", "all_codes", "check", "cycles",
    "doc_info", "entrypoints", "graph_issues", "is_flux_kustomization", "merge", "tier_findings", "tier_pass",
]
