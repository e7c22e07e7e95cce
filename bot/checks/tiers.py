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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bot.config import Config
from bot.errors import WaveBotError
from bot.flux.applied import FluxModel, read_model
from bot.flux.decryption import wave_named
from bot.flux.tiers import BOOTSTRAP, DEFAULT_NAMESPACE, DependsOnEntry, Entrypoint, Issue, Tier, entrypoints
from bot.model import Finding
from bot.repo.tree import Tree

"""How many tiers of tiers are followed (a tier whose pass applies Flux Kustomizations, and so on)."""


CODES = ("depends-on-missing", "depends-on-namespace", "depends-on-cycle", "tier-not-checked", "tier-path-moved",
         "kustomization-namespace-missing", "kustomization-source-namespace")


"""The Kustomization `flux bootstrap` creates to apply the cluster entrypoint: it exists wherever the
entrypoint is applied, whether or not its gotk-sync.yaml is part of the build."""


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
            line=issue.line or None, wave=wave_named(issue.tier, config) if issue.tier else None,
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
    out += [_no_namespace_issue(t) for t in entry.tiers if not _built_namespace(t)]
    out += _source_namespace_issues(entry)
    return out


SOURCE_GROUP = "source.toolkit.fluxcd.io"


def _source_namespace_issues(entry: Entrypoint) -> list[Issue]:
    """A tier whose sourceRef, without a namespace, names a source that only another namespace has
    (a unit kustomization's `namespace:` moved the Flux Kustomization out of flux-system): Flux
    looks in the tier's own namespace, finds nothing, and the tier is never Ready."""
    applied = [*entry.objects, *(o for p in entry.passes.values() if p is not None for o in p.objects)]
    sources = {("GitRepository", DEFAULT_NAMESPACE, BOOTSTRAP[1])} | {
        (o.id.kind, o.id.namespace or "default", o.id.name) for o in applied if o.id.group == SOURCE_GROUP}
    out = []
    for tier in entry.tiers:
        ref = tier.spec().get("sourceRef")
        if not isinstance(ref, dict) or ref.get("namespace"):
            continue
        kind, name = str(ref.get("kind") or ""), str(ref.get("name") or "")
        elsewhere = sorted(ns for k, ns, n in sources if (k, n) == (kind, name) and ns != tier.namespace)
        if (kind, tier.namespace, name) in sources or not elsewhere:
            continue
        out.append(Issue(
            code="kustomization-source-namespace", severity="error",
            message=(f"{tier.title} names its sourceRef {kind} {name} without a namespace, so Flux looks for it in "
                     f"{tier.namespace}, where there is none (it is in {elsewhere[0]}): {tier.title} is never "
                     "Ready, applies nothing and prunes nothing, and deleting it deletes nothing else"),
            path=tier.file, line=tier.info.line(("spec", "sourceRef")) if tier.info is not None else tier.line,
            resource=tier.title,
            fix=(f"# in {tier.file}, the Flux Kustomization {tier.name}:\nspec:\n  sourceRef:\n    kind: {kind}\n"
                 f"    name: {name}\n    namespace: {elsewhere[0]}\n"),
            tier=tier.name,
        ))
    return out


def _built_namespace(tier: Tier) -> str:
    meta = tier.value.get("metadata")
    return str(meta.get("namespace") or "") if isinstance(meta, dict) else ""


def _no_namespace_issue(tier: Tier) -> Issue:
    return Issue(
        code="kustomization-namespace-missing", severity="error",
        message=(f"the Flux Kustomization {tier.name} has no metadata.namespace, even as built: the API server "
                 "refuses it ('namespace not specified'), so the apply that carries it fails and Flux applies and "
                 f"prunes nothing of this revision there: {tier.name} is not created, and no deletion this change "
                 "makes happens until it is fixed"),
        path=tier.file, line=tier.info.line(("metadata",)) if tier.info is not None else tier.line,
        resource=tier.title,
        fix=f"# in {tier.file}, the Flux Kustomization {tier.name}:\nmetadata:\n  name: {tier.name}\n"
            f"  namespace: {DEFAULT_NAMESPACE}\n",
        tier=tier.name,
    )


def _unchecked_issue(tier: Tier, reason: str) -> Issue:
    return Issue(
        code="tier-not-checked", severity="info",
        message=f"{tier.title}: {reason}, so its pass is not checked for CRD provenance and substitution",
        path=tier.file, line=tier.line, resource=tier.title, fix=None, tier=tier.name,
    )


def _moved_path_issues(entry: Entrypoint, tree: Tree, base: Tree, config: Config) -> list[Issue]:
    """`tier-path-moved`: a tier's spec.path was a directory at base and this change moves it away,
    as moving a unit directory does to the path of the child Kustomization inside it (cluster-template's
    `ks.yaml` naming `./apps/<ns>/<app>/app`): wave-bot moves a unit's bytes untouched."""
    out = []
    for tier in entry.tiers:
        if not tier.path or tree.kind(tier.path) == "dir" or base.kind(tier.path) != "dir":
            continue
        new = _moved_to(tree, tier.path, config)
        line = tier.info.line(("spec", "path")) if tier.info else tier.line
        out.append(Issue(
            code="tier-path-moved", severity="error",
            message=f"{tier.title}: its spec.path ./{tier.path} is a directory at base, and this change moves it "
                    f"away{f' (to ./{new})' if new else ''}: kustomize-controller cannot build {tier.title} (the path "
                    "is not found), so it never becomes Ready and every Kustomization that waits for it stalls, its "
                    "wave among them. Set its spec.path to where the directory is now, in this change",
            path=tier.file, line=line, resource=tier.title, tier=tier.name,
            fix=f"# in {tier.file}:\nspec:\n  path: ./{new}\n" if new else None,
        ))
    return out


def _moved_to(tree: Tree, path: str, config: Config) -> str | None:
    """Where a directory below the apps directory is now: the same place below another wave (or
    directly below the apps directory); None unless exactly one such place exists."""
    prefix = f"{config.apps_dir}/"
    if not path.startswith(prefix):
        return None
    head, _, rest = path[len(prefix):].partition("/")
    rel = rest if config.slot_of_dir(head) is not None else path[len(prefix):]
    places = [f"{prefix}{e.name}/{rel}" for e in tree.entries(config.apps_dir)
              if e.kind == "dir" and config.slot_of_dir(e.name) is not None] + [f"{prefix}{rel}"]
    found = [p for p in places if p != path and tree.kind(p) == "dir"]
    return found[0] if len(found) == 1 else None


def _missing_issue(entry: Entrypoint, tier: Tier, dep: DependsOnEntry) -> Issue:
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


def _namespace_issue(tier: Tier, dep: DependsOnEntry, target: Tier) -> Issue:
    return Issue(
        code="depends-on-namespace", severity="error",
        message=(f"{tier.title} dependsOn {dep.name} without a namespace, so Flux looks for it in {tier.namespace}; "
                 f"the {dep.name} applied here is in {target.namespace}: {tier.title} never starts"),
        path=tier.file, line=dep.line or tier.line, resource=tier.title,
        fix=(f"# in {tier.file}, the dependsOn entry of {tier.title}:\n- name: {dep.name}\n"
             f"  namespace: {target.namespace}\n"),
        tier=tier.name,
    )


def cycles(entry: Entrypoint) -> list[list[tuple[Tier, DependsOnEntry, Tier]]]:
    """Each dependsOn cycle once, as its edges (a strongly connected component's cycle through its
    first tier; a self-dependency is a cycle of one edge)."""
    after: dict[tuple[str, str], list[tuple[Tier, DependsOnEntry, Tier]]] = {}
    for edge in entry.edges():
        after.setdefault(edge[0].key, []).append(edge)
    found: list[list[tuple[Tier, DependsOnEntry, Tier]]] = []
    covered: set[tuple[str, str]] = set()
    for tier in entry.tiers:
        if tier.key in covered:
            continue
        path = _cycle_from(tier.key, after)
        if path:
            found.append(path)
            covered |= {a.key for a, _, _ in path}
    return found


def _cycle_from(start: tuple[str, str], after: Mapping[tuple[str, str], list[tuple[Tier, DependsOnEntry, Tier]]]
                ) -> list[tuple[Tier, DependsOnEntry, Tier]]:
    """The shortest path of edges from `start` back to itself ([] when there is none)."""
    frontier: list[list[tuple[Tier, DependsOnEntry, Tier]]] = [[e] for e in after.get(start, [])]
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


def _cycle_issue(cycle: list[tuple[Tier, DependsOnEntry, Tier]]) -> Issue:
    ring = " -> ".join([cycle[0][0].title, *(b.title for _, _, b in cycle)])
    edges = "; ".join(f"{a.title} dependsOn {b.title} ({a.file}:{d.line})" for a, d, b in cycle)
    first = cycle[0]
    return Issue(
        code="depends-on-cycle", severity="error",
        message=f"dependsOn cycle {ring}: each waits for the next to be Ready, so none ever starts. The edges: {edges}",
        path=first[0].file, line=first[1].line, resource=first[0].title,
        fix="delete the dependsOn entry of the edge that is not a real need: " + edges, tier=first[0].name,
    )


def tier_findings(tree: Tree, config: Config, model: FluxModel | None = None) -> list[Finding]:
    """Every tier check on every entrypoint: the dependsOn graph, substitution, CRD provenance.
    `model`: the tree's model of what Flux applies, when the caller has read it (else read here)."""
    model = model if model is not None else read_model(tree, config)
    return _run(entrypoints(model), config, tree, model)[0]


def _run(entries: list[Entrypoint], config: Config, tree: Tree, model: FluxModel) -> tuple[list[Finding], set[str]]:
    """The findings, and the tiers they are about (by title) for the report's graph."""
    from bot.checks import crds, substitution  # they build on this module's model

    labels = [e.label for e in entries]
    issues = [(e, i) for e in entries for i in graph_issues(e)]
    seen: dict[int, list[substitution.VariableUse]] = {}  # the objects stay alive for the whole run
    issues += [(e, i) for e in entries for i in substitution.issues(e, config, seen, tree)]
    unknown: list[crds.Unknown] = []
    # The helmfiles a bootstrap installs are the tree's, the same for every entrypoint: read once,
    # from the files the model's walk listed.
    bootstrap = crds.bootstrap_charts(tree, model.yaml_files) if entries else set()
    for entry in entries:
        races, missing = crds.provenance(entry, config, tree, bootstrap)
        issues += [(entry, i) for i in races]
        unknown += missing
    broken = {t.title for e, i in issues if i.severity != "info" for t in e.tiers if t.name == i.tier}
    broken |= {a.title for e in entries for cycle in cycles(e) for a, _, _ in cycle}
    findings = merge([(e.label, i) for e, i in issues], config, labels)
    return [*findings, *crds.unknown_findings(unknown, config)], broken


def all_codes() -> tuple[str, ...]:
    """Every code the tier checks report."""
    from bot.checks import crds, substitution

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


def check(tree: Tree, config: Config, base: Tree | None = None, *, model: FluxModel | None = None,
          base_model: FluxModel | None = None) -> TierReport:
    """`tier_findings` with the graph for the report and, against `base`, what the change introduces.
    `model`, `base_model`: the models of `tree` and `base` when the caller has read them (each tree is
    read once per run, and its model shared by every check); else read here."""
    # against a base, the two revisions' reads share which blobs hold no Flux object
    plain: set[str] | None = set() if base is not None else None
    model = model if model is not None else read_model(tree, config, plain)
    entries = entrypoints(model)
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
            base_model = base_model if base_model is not None else read_model(base, config, plain)
            before = frozenset(_key(f) for f in tier_findings(base, config, base_model))
        except WaveBotError:  # the base cannot be read: every finding counts as the change's
            before = frozenset()
    findings, broken = _run(entries, config, tree, model)
    if base is not None:
        moved = [(e, i) for e in entries for i in _moved_path_issues(e, tree, base, config)]
        said = {(i.path, i.resource) for _, i in moved}  # the error says why the pass is not checked
        findings = [f for f in findings if f.code != "tier-not-checked" or (f.path, f.resource) not in said]
        findings += merge([(e.label, i) for e, i in moved], config, [e.label for e in entries])
        broken |= {t.title for e, i in moved for t in e.tiers if t.name == i.tier}
    return TierReport(tuple(findings), tuple(nodes), tuple(edges), frozenset(broken), before)


__all__ = ["CODES", "TierReport", "all_codes", "check", "cycles", "graph_issues", "merge", "tier_findings"]
