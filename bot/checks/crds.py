"""CRD provenance: for every custom object a tier applies, what serves its CRD when that pass runs.

kustomize-controller server-side dry-runs every object of a pass before it applies any (fluxcd/pkg
`ssa` ApplyAllStaged; CRDs and Namespaces of the same pass go first), so an object whose kind the
API server does not know yet aborts the whole pass. The CRD is there in time when it is:
- in the same pass (Flux applies it first);
- applied by a tier this one depends on, directly or transitively, and that tier is Ready-gated
  (`wait: true` or health checks): dependsOn waits for Ready, and only then is what it applied
  healthy (a HelmRelease installed, a CR reconciled);
- installed by a HelmRelease's chart: not in git, so declared in the config (`crd_sources` with
  `kustomization:`), then ordered like the above;
- installed by a chart git names whose name names the kind's group (`cert-manager` for
  `cert-manager.io`, `rook-ceph` for `ceph.rook.io`, plus `CHART_GROUPS` for charts named otherwise):
  a release of a bootstrap helmfile (installed before Flux starts), or a HelmRelease some tier applies
  that does not skip CRDs on install. Git says the chart, not its CRDs, so such a kind is taken as
  served and its ordering is not judged (`crd_sources` makes it judged);
- created at runtime by a controller from a CR (second-order: CDI's StorageProfile from the `CDI`
  CR, ...): the table below, extended by `crd_sources` with `created_by:`. In the same pass as its
  creating CR it deadlocks (the dry-run fails, the CR is never applied, the CRD never created); in a
  tier not ordered after a Ready-gated creating tier, it races on a cold cluster.
Built-in Kubernetes groups and the groups `flux install` registers need nothing. Any other kind
whose source wave-bot cannot find is reported once, never guessed.
"""
from __future__ import annotations

import fnmatch
import posixpath
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from bot.config import Config
from bot.errors import WaveBotError
from bot.flux.tiers import Entrypoint, Issue, Tier, locate
from bot.kustomize.build import Object
from bot.model import Finding
from bot.repo.tree import Tree, walk
from bot.yamlio import documents as yamlio

CODES = ("crd-same-pass-as-creator", "crd-not-ordered", "crd-source-unknown")
BUILTIN_GROUPS = frozenset({
    "", "admissionregistration.k8s.io", "apiextensions.k8s.io", "apiregistration.k8s.io", "apps",
    "authentication.k8s.io", "authorization.k8s.io", "autoscaling", "batch", "certificates.k8s.io",
    "coordination.k8s.io", "discovery.k8s.io", "events.k8s.io", "flowcontrol.apiserver.k8s.io",
    "internal.apiserver.k8s.io", "networking.k8s.io", "node.k8s.io", "policy", "rbac.authorization.k8s.io",
    "resource.k8s.io", "scheduling.k8s.io", "storage.k8s.io", "storagemigration.k8s.io",
})
"""The API groups a Kubernetes API server serves without a CRD (snapshot.storage.k8s.io and
gateway.networking.k8s.io are CRDs, so they are not here)."""
FLUX_GROUPS = frozenset({
    "kustomize.toolkit.fluxcd.io", "source.toolkit.fluxcd.io", "helm.toolkit.fluxcd.io",
    "notification.toolkit.fluxcd.io",
})
"""What `flux bootstrap` installs before any Kustomization runs (the default components only: the
image automation controllers are extras)."""

GroupKind = tuple[str, str]
CHART_GROUPS: Mapping[str, tuple[str, ...]] = {
    # Charts whose name does not name the group of the CRDs they install (their chart's crds/ folder).
    "kube-prometheus-stack": ("monitoring.coreos.com",),
    "prometheus-operator-crds": ("monitoring.coreos.com",),
    "cloudnative-pg": ("postgresql.cnpg.io",),
    "envoy-gateway": ("gateway.envoyproxy.io", "gateway.networking.k8s.io"),
    "flux-operator": ("fluxcd.controlplane.io",),
    "node-feature-discovery": ("nfd.k8s-sigs.io",),
    "silence-operator": ("observability.giantswarm.io",),
}
GENERIC_WORDS = frozenset({"operator", "controller", "crds", "crd", "stack", "chart", "charts", "helm", "kube",
                           "k8s", "app", "system"})
"""Words of a chart's name that say nothing of the group it serves."""
SECOND_ORDER: Mapping[GroupKind, tuple[str, ...]] = {
    # cdi-operator's manifest registers only cdis.cdi.kubevirt.io; the rest appear once it reconciles a CDI CR.
    ("cdi.kubevirt.io", "CDI"): tuple(f"cdi.kubevirt.io/{k}" for k in (
        "CDIConfig", "DataImportCron", "DataSource", "DataVolume", "ObjectTransfer", "StorageProfile",
        "VolumeCloneSource", "VolumeImportSource", "VolumeUploadSource")),
    # virt-operator registers kubevirts.kubevirt.io; the VM kinds appear once it reconciles the KubeVirt CR.
    ("kubevirt.io", "KubeVirt"): (
        *(f"kubevirt.io/{k}" for k in ("VirtualMachine", "VirtualMachineInstance", "VirtualMachineInstanceMigration",
                                       "VirtualMachineInstancePreset", "VirtualMachineInstanceReplicaSet")),
        "snapshot.kubevirt.io/*", "export.kubevirt.io/*", "instancetype.kubevirt.io/*", "pool.kubevirt.io/*",
        "clone.kubevirt.io/*", "migrations.kubevirt.io/*"),
    # A Crossplane Provider package installs its managed resources' CRDs.
    ("pkg.crossplane.io", "Provider"): ("*.upbound.io/*", "kubernetes.crossplane.io/*", "helm.crossplane.io/*"),
}


@dataclass(frozen=True)
class Creator:
    """A CR in some tier's pass that makes a controller create CRDs."""

    tier: Tier
    obj: Object
    creates: tuple[str, ...]
    """`group/Kind` patterns (`*` as a glob)."""

    def makes(self, gk: GroupKind) -> bool:
        return any(_match(gk, pattern) for pattern in self.creates)


def _match(gk: GroupKind, pattern: str) -> bool:
    group, _, kind = pattern.partition("/")
    return fnmatch.fnmatchcase(gk[0], group) and fnmatch.fnmatchcase(gk[1], kind)


def builtin(group: str) -> bool:
    return group in BUILTIN_GROUPS or group in FLUX_GROUPS


def _dig(value: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def _dynamic(obj: Object) -> tuple[str, ...]:
    """The kinds a CR defines itself: a Gatekeeper ConstraintTemplate its constraint kind, a Crossplane
    CompositeResourceDefinition its composite (and claim) kind."""
    gk = (obj.id.group, obj.id.kind)
    if gk == ("templates.gatekeeper.sh", "ConstraintTemplate"):
        kind = _dig(obj.value, "spec", "crd", "spec", "names", "kind")
        return (f"constraints.gatekeeper.sh/{kind}",) if isinstance(kind, str) else ()
    if gk == ("apiextensions.crossplane.io", "CompositeResourceDefinition"):
        group = _dig(obj.value, "spec", "group")
        kinds = [_dig(obj.value, "spec", "names", "kind"), _dig(obj.value, "spec", "claimNames", "kind")]
        return tuple(f"{group}/{k}" for k in kinds if isinstance(k, str)) if isinstance(group, str) else ()
    return ()


def _creators(entry: Entrypoint, config: Config) -> list[Creator]:
    table: dict[GroupKind, list[str]] = {gk: list(kinds) for gk, kinds in SECOND_ORDER.items()}
    for source in config.crd_sources:
        if source.created_by is not None:
            group, _, kind = source.created_by.partition("/")
            table.setdefault((group, kind), []).append(source.kind)
    out = []
    for tier in entry.tiers:
        applied = entry.passes.get(tier.key)
        for obj in applied.objects if applied is not None else ():
            creates = (*table.get((obj.id.group, obj.id.kind), ()), *_dynamic(obj))
            if creates:
                out.append(Creator(tier, obj, tuple(creates)))
    return out


def charted(group: str, charts: Iterable[str]) -> bool:
    """Whether a chart of one of these names installs CRDs of `group`: the table, else the chart's name
    is one of the group's labels (`acme.cert-manager.io`), or it or a word of it (generic and short
    words aside) is the group's first, most specific label (`ceph.rook.io` for `rook-ceph`)."""
    labels = group.split(".")
    for chart in charts:
        if group in CHART_GROUPS.get(chart, ()):
            return True
        words = {w for w in chart.split("-") if len(w) >= 4 and w not in GENERIC_WORDS}
        if chart in labels or labels[0] in {chart.replace("-", ""), *words}:
            return True
    return False


def _chart_names(value: Mapping[str, Any], oci_urls: Mapping[str, str]) -> list[str]:
    """The names a HelmRelease's chart goes by: spec.chart.spec.chart, its chartRef (and that OCIRepository's
    URL's last segment) and the release's own name."""
    names = [_dig(value, "spec", "chart", "spec", "chart"), _dig(value, "spec", "releaseName"),
             _dig(value, "metadata", "name")]
    ref = _dig(value, "spec", "chartRef")
    if isinstance(ref, dict) and isinstance(ref.get("name"), str):
        names += [ref["name"], oci_urls.get(ref["name"])]
    return [n.rstrip("/").rpartition("/")[2] for n in names if isinstance(n, str) and n]


def _helm_charts(entry: Entrypoint) -> set[str]:
    """The charts of every HelmRelease the entrypoint applies that installs CRDs (install.crds not Skip)."""
    objects = entry.all_objects()
    oci_urls = {o.id.name: str(_dig(o.value, "spec", "url")) for o in objects
                if (o.id.group, o.id.kind) == ("source.toolkit.fluxcd.io", "OCIRepository")}
    out: set[str] = set()
    for obj in objects:
        if (obj.id.group, obj.id.kind) == ("helm.toolkit.fluxcd.io", "HelmRelease") \
                and _dig(obj.value, "spec", "install", "crds") != "Skip":
            out.update(_chart_names(obj.value, oci_urls))
    return out


def _is_helmfile(path: str) -> bool:
    name = posixpath.basename(path)
    folder = posixpath.basename(posixpath.dirname(path))
    return name.endswith((".yaml", ".yml")) and (name.startswith("helmfile") or folder in ("helmfile", "helmfile.d"))


def bootstrap_charts(tree: Tree, yaml_files: Iterable[str] | None = None) -> set[str]:
    """The releases (and their charts) of every helmfile in the repository: a bootstrap installs them, CRDs
    included, before Flux starts. Templates and files that are not YAML are skipped, never run.
    `yaml_files`: the tree's YAML files when a walk already listed them (`FluxModel.yaml_files`)."""
    out: set[str] = set()
    paths = yaml_files if yaml_files is not None else (p for p, e in walk(tree, "") if e.kind == "file")
    for path in paths:
        if not _is_helmfile(path):
            continue
        try:
            documents = yamlio.load(tree.read(path), path, duplicates="last")
        except WaveBotError:
            continue
        for doc in documents:
            releases = doc.value.get("releases") if isinstance(doc.value, dict) else None
            for release in releases if isinstance(releases, list) else ():
                if isinstance(release, dict):
                    out.update(str(release[key]).rstrip("/").rpartition("/")[2] for key in ("name", "chart")
                               if isinstance(release.get(key), str) and "{{" not in release[key])
    return out


def _served(objects: Iterable[Object]) -> set[GroupKind]:
    """The kinds the CRDs among `objects` define."""
    out = set()
    for obj in objects:
        if (obj.id.group, obj.id.kind) == ("apiextensions.k8s.io", "CustomResourceDefinition"):
            group, kind = _dig(obj.value, "spec", "group"), _dig(obj.value, "spec", "names", "kind")
            if isinstance(group, str) and isinstance(kind, str):
                out.add((group, kind))
    return out


@dataclass(frozen=True)
class Unknown:
    gk: GroupKind
    obj: Object
    line: int | None = None
    """Where `obj` is written in its source file."""


def _check(entry: Entrypoint, config: Config, tree: Tree | None, bootstrap: Collection[str] | None
           ) -> tuple[list[Issue], list[Unknown]]:
    if bootstrap is None:
        bootstrap = bootstrap_charts(tree) if tree is not None else set()
    charts = _helm_charts(entry) | set(bootstrap)
    served = {t.key: _served(p.objects) for t in entry.tiers if (p := entry.passes.get(t.key)) is not None}
    creators = _creators(entry, config)
    declared = {s.kind: s.kustomization for s in config.crd_sources if s.kustomization is not None}
    issues: list[Issue] = []
    unknown: list[Unknown] = []
    for tier in entry.tiers:
        applied = entry.passes.get(tier.key)
        if applied is None:
            continue
        upstream = entry.upstream(tier)
        done: set[GroupKind] = set()
        for obj in applied.objects:
            gk = (obj.id.group, obj.id.kind)
            if builtin(gk[0]) or gk in served[tier.key] or gk in done:
                continue
            done.add(gk)
            line = locate(tree, obj) if tree is not None else None
            makers = [c for c in creators if c.makes(gk)]
            owners = [t for t in entry.tiers if gk in served.get(t.key, set())]
            owners += [t for pattern, name in declared.items() if _match(gk, pattern)
                       if (t := next((x for x in entry.tiers if x.name == name), None)) is not None]
            sources = [c.tier for c in makers] + owners
            if any(s.key in upstream and s.ready_gated for s in sources):
                continue
            if not sources and charted(gk[0], charts):
                continue
            same = next((c for c in makers if c.tier.key == tier.key), None)
            if same is not None:
                issues.append(_deadlock(tier, obj, gk, same, applied.objects, line))
            elif sources:
                source = sources[0]
                # An edge the other way would close a cycle: then the CRD has to move instead.
                cyclic = tier.key in entry.upstream(source)
                issues.append(_race(tier, obj, gk, source, upstream, bool(makers), cyclic, line))
            else:
                unknown.append(Unknown(gk, obj, line))
    return issues, unknown


def _name(gk: GroupKind) -> str:
    return f"{gk[0]}/{gk[1]}"


def _deadlock(tier: Tier, obj: Object, gk: GroupKind, creator: Creator, objects: Iterable[Object],
              line: int | None) -> Issue:
    files = sorted({o.source for o in objects if creator.makes((o.id.group, o.id.kind))})
    suffix = gk[0].split(".")[0]
    name = f"{tier.name}-{suffix}"
    base = tier.path if tier.path else "."
    new_path = f"{base}-{suffix}" if tier.path else suffix
    spec = tier.spec()
    new: dict[str, Any] = {
        "apiVersion": str(tier.value.get("apiVersion")), "kind": "Kustomization",
        "metadata": {"name": name, "namespace": tier.namespace},
        "spec": {"dependsOn": [{"name": tier.name}], "wait": True, "interval": spec.get("interval", "10m"),
                 "path": f"./{new_path}", "prune": True},
    }
    if "sourceRef" in spec:
        new["spec"]["sourceRef"] = spec["sourceRef"]
    target = posixpath.join(posixpath.dirname(tier.file), f"{name}.yaml")
    gate = "" if tier.ready_gated else (f"# and set spec.wait: true on {tier.title} ({tier.file}): its CR must be "
                                        "healthy first\n")
    fix = (f"# create {target} and list it in the resources: beside {posixpath.basename(tier.file)}:\n{gate}"
           + yamlio.dump(new).decode()
           + f"# then move {', '.join(files)} into ./{new_path}/, listed in a kustomization.yaml there and no longer "
             "in the resources: that list them now\n")
    return Issue(
        code="crd-same-pass-as-creator", severity="error",
        message=(f"{tier.title} applies {_name(gk)} ({obj.source}) in the same pass as the {creator.obj.id.kind} CR "
                 f"({creator.obj.source}) whose controller creates that CRD at runtime: Flux dry-runs the whole pass "
                 f"first, the unknown kind aborts it, the CR is never applied, so the CRD never appears and "
                 f"{tier.title} never converges (every tier after it stalls)"),
        path=obj.source, line=line, resource=_name(gk), fix=fix, tier=tier.name,
    )


def _race(tier: Tier, obj: Object, gk: GroupKind, source: Tier, upstream: set[tuple[str, str]],
          second_order: bool, cyclic: bool, line: int | None) -> Issue:
    how = "whose controller creates" if second_order else "that applies"
    if cyclic:
        why = f"{source.title} depends on {tier.title}, so {tier.title} cannot depend on it"
        fix = (f"move what serves {_name(gk)} out of {source.title} into a tier {tier.title} depends on (e.g. the "
               "one that applies its controller), or move the object into a tier after "
               f"{source.title}")
    elif source.key in upstream:
        why = (f"{tier.title} depends on {source.title}, but {source.title} is not Ready-gated (no wait: true, "
               "no healthChecks)")
        fix = f"# in {source.file}, under spec: of {source.title}\nwait: true\n"
    else:
        why = f"{tier.title} does not depend on {source.title}, directly or transitively"
        entry: dict[str, Any] = {"name": source.name}
        if source.namespace != tier.namespace:
            entry["namespace"] = source.namespace
        deps = [{k: v for k, v in (("name", d.name), ("namespace", d.namespace)) if v} for d in tier.depends_on]
        fix = (f"# in {tier.file}, under spec: of {tier.title}\n" + yamlio.dump({"dependsOn": [*deps, entry]}).decode()
               + ("" if source.ready_gated else f"# and set spec.wait: true on {source.title} ({source.file})\n"))
    return Issue(
        code="crd-not-ordered", severity="error",
        message=(f"{tier.title} applies {_name(gk)} ({obj.source}), whose CRD comes from {source.title} ({how} it), "
                 f"and {why}: on a cold cluster the two race and {tier.title}'s dry-run fails on the unknown kind"),
        path=obj.source, line=line, resource=_name(gk), fix=fix, tier=tier.name,
    )


def provenance(entry: Entrypoint, config: Config, tree: Tree | None = None, bootstrap: Collection[str] | None = None
               ) -> tuple[list[Issue], list[Unknown]]:
    """The deadlocks and races on one entrypoint, and the kinds whose source it does not show; with the
    `tree` the objects come from, each with the line of the object. `bootstrap`: the tree's
    `bootstrap_charts`, read once for every entrypoint of the tree (else read here)."""
    return _check(entry, config, tree, bootstrap)


def unknown_findings(unknowns: Iterable[Unknown], config: Config) -> list[Finding]:
    """crd-source-unknown, once per kind over every entrypoint."""
    first: dict[GroupKind, Unknown] = {}
    for item in unknowns:
        first.setdefault(item.gk, item)
    return [_unknown(item, config) for _, item in sorted(first.items())]


def _unknown(item: Unknown, config: Config) -> Finding:
    name = _name(item.gk)
    return Finding(
        code="crd-source-unknown", severity="warning",
        message=(f"no tier applies a CRD for {name} (first used in {item.obj.source}), no known controller creates "
                 f"it, and {config.source} declares no source for it: wave-bot cannot tell whether it exists when "
                 "that pass is dry-run"),
        path=item.obj.source, line=item.line, resource=name,
        fix=(f"# in {config.source}: the Flux Kustomization whose HelmRelease chart installs the CRD\n"
             f"crd_sources:\n  - kind: {name}\n    kustomization: <its name>\n"),
    )


__all__ = [
    "BUILTIN_GROUPS", "CHART_GROUPS", "CODES", "FLUX_GROUPS", "SECOND_ORDER", "Creator", "Unknown",
    "bootstrap_charts", "builtin", "charted", "provenance", "unknown_findings",
]
