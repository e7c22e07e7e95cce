"""What deleting an owner inside a wave deletes with it.

A wave applies objects; two kinds of them own more objects in turn, and deleting one of them
(the wave prunes it, or a later-wave move makes the old wave prune it) deletes what it owns:

- A Flux Kustomization (kustomize.toolkit.fluxcd.io) runs its finalizer, which garbage-collects its
  inventory when `deletionPolicy` is `Delete` or `WaitForTermination`, or the default `MirrorPrune`
  with `prune: true`; `Orphan` (or `prune: false`) leaves everything alive. Its inventory is the
  build of its `spec.path` with its own `spec.patches`, `spec.components` and `spec.targetNamespace`,
  evaluated with `bot.kustomize.build`; an object there carrying `kustomize.toolkit.fluxcd.io/prune:
  disabled` is left. A Flux Kustomization in that build is deleted too and runs its own finalizer;
  a HelmRelease there is uninstalled.
- A HelmRelease (helm.toolkit.fluxcd.io) is uninstalled by helm-controller: every resource the chart
  rendered is deleted, and a later install starts from scratch. The chart's templates are not in
  git, so wave-bot cannot list them nor see `helm.sh/resource-policy: keep` on one. It calls a release
  stateful when its `spec.values` show the chart renders something stateful: a `persistence`
  mapping with `enabled: true` and no `existingClaim` (the convention of most charts: the chart
  templates the claim), or an object of a stateful kind written in the values (`extraObjects` and
  the like); `stateful_kinds` naming `HelmRelease` makes every release stateful (`bot.checks.deletes`).

A tier that is not a wave may apply owners too (a child defined outside the clusters directory, a
HelmRelease): deleting one of those (`bot.checks.deletes.tier_owner_findings`) or moving it between
tiers has the same cascade.

The spec used is the one deployed at base: the owner is deleted before the change's spec of it
could apply. What cannot be evaluated (a path outside the repository, another source, a build
wave-bot does not follow, values from ConfigMaps or Secrets) is said on the finding, never guessed.
"""
from __future__ import annotations

import dataclasses
import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bot.checks.deletes import ORPHAN_SNIPPET, PRUNE_FALSE_SNIPPET, RESTART, namespace_findings
from bot.config import Config
from bot.errors import WaveBotError
from bot.flux.evalpaths import FLUX_UNSUPPORTED
from bot.flux.inventory import Inventory
from bot.flux.ownership import ownership
from bot.flux.stateful import data_loss, is_stateful
from bot.flux.vocabulary import DEFAULT_NAMESPACE, FLUX_GROUP, PRUNE_DISABLED, PRUNE_KEY
from bot.kustomize.build import build
from bot.kustomize.files import Additions, find_kustomization
from bot.kustomize.spec import CLUSTER_SCOPED, KUSTOMIZATION_FILES
from bot.layout import units
from bot.model import Change, Finding, FindingObject, at_risk
from bot.naming import is_yaml_name
from bot.repo.tree import PlannedTree, Tree
from bot.resid import ResourceId
from bot.side import Slot
from bot.yamlio import documents as yamlio

HELM_GROUP = "helm.toolkit.fluxcd.io"
MAX_DEPTH = 8
"""Nested Kustomizations followed at most this deep (a cycle of paths stops there too)."""
NAMED = 12
"""Objects named on a finding that are not stateful; the stateful ones are always all named."""
# The findings whose `resource` Flux deletes (when their severity says it is not protected).
_DELETING = frozenset({"later-wave-move", "resource-removed", "resource-dropped", "cross-kustomization-move",
                       "copy-removed", "namespace-deleted"})


@dataclass(frozen=True)
class Cascade:
    """What deleting one owner deletes with it."""

    owner: ResourceId
    collects: bool
    """A Flux Kustomization whose finalizer garbage-collects, or a HelmRelease (always uninstalled)."""
    setting: str
    """Why it collects or not, as written (`prune: true`, `deletionPolicy: Orphan`, ...)."""
    deletes: tuple[ResourceId, ...] = ()
    """The objects of its evaluated inventory it deletes (nested owners' included)."""
    stateful: tuple[str, ...] = ()
    """What is lost, one phrase each: a stateful object, or a release whose values show one."""
    lost: tuple[ResourceId, ...] = ()
    """The stateful objects among `deletes`."""
    releases: tuple[ResourceId, ...] = ()
    """HelmReleases uninstalled on the way (the owner itself when it is one)."""
    kept: tuple[ResourceId, ...] = ()
    """Objects of its inventory that carry prune: disabled: the finalizer leaves them."""
    unknown: tuple[str, ...] = ()
    """What wave-bot could not evaluate, one phrase each."""
    orphan_fix: bool = False
    """Its deletionPolicy (Delete, WaitForTermination) collects whatever spec.prune says."""
    unreconciled: str = ""
    """Why it never reconciles (its source is not in its namespace): its inventory is empty."""

    @property
    def is_release(self) -> bool:
        return self.owner.group == HELM_GROUP


def is_owner(rid: ResourceId) -> bool:
    return (rid.group, rid.kind) in ((FLUX_GROUP, "Kustomization"), (HELM_GROUP, "HelmRelease"))


def cascade_of(tree: Tree, path: str, rid: ResourceId, config: Config, wave: Slot | None = None) -> Cascade | None:
    """The cascade of the owner `rid` defined in `path` of `tree` (the base), which `wave` applies
    (None: as the file reads); None if it is not there."""
    value = _built_document(tree, path, rid, config, wave) if wave is not None else None
    value = value if value is not None else _document(tree, path, rid)
    if value is None:
        return None
    return _cascade(tree, path, value, rid, config, 0, frozenset())


def _built_document(tree: Tree, path: str, rid: ResourceId, config: Config, wave: Slot) -> Mapping[str, Any] | None:
    """The owner as its wave applies it when `path` is inside a unit directory with a kustomization:
    that build's namespace, patches and labels applied (the id, and the spec its deletion runs with)."""
    directory = config.wave_dir(wave)
    try:
        kfile = units.own_kustomization(tree, directory)
        refs = units.wave_refs(tree, kfile) if kfile is not None else units.generated_listing(tree, directory)
        unit = next((f"{directory}/{r}" for r in refs if path.startswith(f"{directory}/{r}/")), None)
        if unit is None:
            return None  # a file the wave lists: as the file reads
        found = [o.value for o in build(tree, unit).objects if o.id.identical(rid)]
    except WaveBotError:
        return None
    return found[0] if len(found) == 1 else None


def _document(tree: Tree, path: str, rid: ResourceId) -> Mapping[str, Any] | None:
    try:
        docs = yamlio.load(tree.read(path), path)
    except WaveBotError:
        return None
    for doc in docs:
        value = doc.value
        if (isinstance(value, dict) and value.get("kind") and isinstance(value.get("metadata"), dict)
                and ResourceId.of_object(value).identical(rid)):
            return value
    return None


def _cascade(tree: Tree, path: str, value: Mapping[str, Any], rid: ResourceId, config: Config, depth: int,
             seen: frozenset[str]) -> Cascade:
    spec: Mapping[str, Any] = value["spec"] if isinstance(value.get("spec"), dict) else {}
    if rid.group == HELM_GROUP:
        return _release(rid, spec, config)
    policy = str(spec.get("deletionPolicy") or "")
    prune = spec.get("prune") is True  # YAML 1.2, as kustomize-controller reads it
    if policy in ("Delete", "WaitForTermination"):
        collects, setting = True, f"deletionPolicy: {policy}"
    elif policy == "Orphan":
        collects, setting = False, "deletionPolicy: Orphan"
    else:
        collects, setting = prune, f"prune: {str(prune).lower()}"
    if not collects:
        return Cascade(rid, False, setting)
    orphan_fix = policy in ("Delete", "WaitForTermination")
    missing = _source_elsewhere(spec, rid, config)
    if missing:
        return Cascade(rid, True, setting, unreconciled=missing)
    directory, unknown = _directory(spec, config)
    if directory is None or depth >= MAX_DEPTH or directory in seen:
        if directory is not None:
            unknown = f"./{directory} (nested Kustomizations go deeper than wave-bot follows)"
        return Cascade(rid, True, setting, unknown=(unknown,), orphan_fix=orphan_fix)
    try:
        objects = _build(tree, path, directory, spec)
    except WaveBotError as exc:
        why = f"{exc.path}: {exc.message}" if exc.path else exc.message
        return Cascade(rid, True, setting, unknown=(f"what ./{directory} builds ({why})",), orphan_fix=orphan_fix)
    deletes: list[ResourceId] = []
    stateful: list[str] = []
    lost: list[ResourceId] = []
    releases: list[ResourceId] = []
    kept: list[ResourceId] = []
    unknowns: list[str] = []
    for obj_id, obj, source in objects:
        if _prune_disabled(obj):
            kept.append(obj_id)
            continue
        deletes.append(obj_id)
        if is_stateful(obj_id, config):
            stateful.append(f"{obj_id} ({data_loss(obj_id, config)})")
            lost.append(obj_id)
        if is_owner(obj_id):
            inner = _cascade(tree, source, obj, obj_id, config, depth + 1, seen | {directory})
            deletes += inner.deletes
            stateful += inner.stateful
            lost += inner.lost
            releases += inner.releases
            kept += inner.kept
            unknowns += inner.unknown
    return Cascade(rid, True, setting, tuple(deletes), tuple(stateful), tuple(lost), tuple(releases), tuple(kept),
                   tuple(unknowns), orphan_fix)


def _directory(spec: Mapping[str, Any], config: Config) -> tuple[str | None, str]:
    """(the repository directory the Kustomization builds, or None and why it cannot be evaluated)."""
    source = spec.get("sourceRef") if isinstance(spec.get("sourceRef"), dict) else {}
    assert isinstance(source, dict)
    expected = _wave_source(config)
    found = (str(source.get("kind") or ""), str(source.get("name") or ""))
    if source and found != expected:
        return None, (f"what it applies (its sourceRef is {found[0]} {found[1]}, not this repository's "
                      f"{expected[0]} {expected[1]})")
    unsupported = [k for k in FLUX_UNSUPPORTED if spec.get(k) not in (None, "", [])]
    if unsupported:
        return None, f"what it applies (its spec.{unsupported[0]} is not evaluated by wave-bot)"
    raw = spec.get("path")
    text = raw if isinstance(raw, str) else ""
    joined = posixpath.normpath(text.lstrip("/")) if text.strip() else "."
    if joined == ".." or joined.startswith("../"):
        return None, f"what it applies (its path {text} is outside the repository)"
    return ("" if joined == "." else joined), ""


def _source_elsewhere(spec: Mapping[str, Any], rid: ResourceId, config: Config) -> str:
    """Why the Kustomization `rid` (as applied) never reconciles: its sourceRef, without a namespace,
    names the waves' source, which is in another namespace (a unit kustomization's `namespace:`
    moved it); "" when it finds its source."""
    source = spec.get("sourceRef") if isinstance(spec.get("sourceRef"), dict) else {}
    assert isinstance(source, dict)
    kind, name = _wave_source(config)
    if not source or source.get("namespace") or (str(source.get("kind")), str(source.get("name"))) != (kind, name):
        return ""
    template = config.kustomization_template or {}
    meta = template.get("metadata") if isinstance(template.get("metadata"), dict) else {}
    home = str((meta or {}).get("namespace") or DEFAULT_NAMESPACE)
    where = rid.namespace or DEFAULT_NAMESPACE
    if where == home:
        return ""
    return f"its sourceRef {kind} {name} has no namespace, so Flux looks for it in {where}; it is in {home}"


def _wave_source(config: Config) -> tuple[str, str]:
    """The source the waves read (the template's sourceRef; wave-bot's default is flux-system)."""
    template = config.kustomization_template or {}
    spec = template.get("spec")
    ref = spec.get("sourceRef") if isinstance(spec, dict) and isinstance(spec.get("sourceRef"), dict) else None
    ref = ref if isinstance(ref, dict) else {}
    return str(ref.get("kind") or "GitRepository"), str(ref.get("name") or "flux-system")


def _build(tree: Tree, path: str, directory: str,
           spec: Mapping[str, Any]) -> list[tuple[ResourceId, Mapping[str, Any], str]]:
    """(id, object, file) of everything the Kustomization applies, as kustomize-controller builds it."""
    if find_kustomization(tree, directory) is None:
        # kustomize-controller generates a kustomization listing every manifest below the path (a
        # directory holding a kustomization taken as one), then adds spec.patches and components.
        listed = _generated(tree, directory)
        if not listed:
            raise WaveBotError("has no manifests (kustomize-controller fails on an empty path)", path=directory or ".")
        content = yamlio.dump({"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
                               "resources": listed})
        tree = PlannedTree(tree, [Change("create", posixpath.join(directory, KUSTOMIZATION_FILES[0]),
                                         content=content)])
    adds = {k: spec[k] for k in ("patches", "components") if spec.get(k) not in (None, [])}
    info = yamlio.DocInfo(1, {}, {}, True, False)
    additions = Additions(path, adds, info, built=directory) if adds else None
    namespace = spec.get("targetNamespace")
    out: list[tuple[ResourceId, Mapping[str, Any], str]] = []
    for obj in build(tree, directory, additions).objects:
        value = dict(obj.value)
        rid = obj.id
        if isinstance(namespace, str) and namespace and rid.kind not in CLUSTER_SCOPED:
            rid = dataclasses.replace(rid, namespace=namespace)
            value = {**value, "metadata": {**value.get("metadata", {}), "namespace": namespace}}
        out.append((rid, value, obj.source))
    return out


def _generated(tree: Tree, directory: str, prefix: str = "") -> list[str]:
    out = []
    for entry in tree.entries(directory):
        sub = f"{directory}/{entry.name}" if directory else entry.name
        if entry.kind == "file" and is_yaml_name(entry.name):
            out.append(prefix + entry.name)
        elif entry.kind == "dir":
            if find_kustomization(tree, sub) is not None:
                out.append(prefix + entry.name)
            else:
                out += _generated(tree, sub, f"{prefix}{entry.name}/")
    return out


def _prune_disabled(value: Mapping[str, Any]) -> bool:
    metadata = value.get("metadata") if isinstance(value.get("metadata"), dict) else {}
    assert isinstance(metadata, dict)
    for key in ("annotations", "labels"):
        marks = metadata.get(key) if isinstance(metadata.get(key), dict) else {}
        if str((marks or {}).get(PRUNE_KEY, "")).casefold() == PRUNE_DISABLED:
            return True
    return False


# ---- HelmReleases ---------------------------------------------------------------------------------


def _release(rid: ResourceId, spec: Mapping[str, Any], config: Config) -> Cascade:
    stateful = [f"{rid}: {why}" for why in _stateful_values(spec.get("values"), config, "spec.values")]
    unknown = ["what the chart renders (its templates are not in git, nor whether one carries "
               "helm.sh/resource-policy: keep)"]
    if spec.get("valuesFrom"):
        unknown.append(f"the values {rid} reads from ConfigMaps or Secrets (spec.valuesFrom)")
    return Cascade(rid, True, "uninstall", stateful=tuple(stateful), releases=(rid,), unknown=tuple(unknown))


def _stateful_values(values: Any, config: Config, where: str) -> list[str]:
    """Why the values show the chart renders a stateful object (one phrase per place)."""
    found: list[str] = []
    if isinstance(values, dict):
        persistence = values.get("persistence")
        # existingClaim: the chart mounts a claim made elsewhere, which the uninstall leaves
        if (isinstance(persistence, dict) and persistence.get("enabled") is True
                and not persistence.get("existingClaim")):
            found.append(f"{where}.persistence.enabled is true, so the chart templates a volume claim, "
                         "deleted with its data")
        kind, api = values.get("kind"), values.get("apiVersion")
        meta = values.get("metadata")
        if isinstance(kind, str) and isinstance(api, str) and isinstance(meta, dict):
            obj = ResourceId.of(api, kind, str(meta.get("namespace") or ""), str(meta.get("name") or ""))
            if is_stateful(obj, config):
                found.append(f"{where} holds {obj}, which the chart renders: {data_loss(obj, config)}")
        for key, value in values.items():
            if key != "persistence":
                found += _stateful_values(value, config, f"{where}.{key}")
    elif isinstance(values, list):
        for i, value in enumerate(values):
            found += _stateful_values(value, config, f"{where}[{i}]")
    return found


# ---- the findings ---------------------------------------------------------------------------------


def _deletes_owner(finding: Finding) -> bool:
    """Whether `finding` says Flux deletes its resource (its protected variants do not)."""
    if finding.code not in _DELETING or finding.resource is None:
        return False
    if finding.code == "resource-dropped":
        return finding.severity == "error"
    if finding.code == "resource-removed":
        return f"{PRUNE_KEY}: {PRUNE_DISABLED}, so Flux leaves it" not in finding.message
    return finding.severity != "info"


def with_cascades(findings: Sequence[Finding], tree: Tree, base: Inventory, config: Config) -> list[Finding]:
    """`findings`, each one that deletes an owner (of `base`, read from the base `tree`) telling its cascade."""
    # The waves' objects, and the owners a tier that is not a wave applies (a child, a release).
    by_str: dict[str, tuple[ResourceId, str, Slot | None]] = {
        str(rid): (found[0].id, found[0].path, found[0].wave) for rid, found in base.by_id.items()}
    for other in base.others:
        by_str.setdefault(str(other.id), (other.id, other.path, None))
    out: list[Finding] = []
    namespaces: list[Finding] = []
    for finding in findings:
        found = by_str.get(finding.resource or "")
        if not found or not is_owner(found[0]) or not _deletes_owner(finding):
            out.append(finding)
            continue
        cascade = cascade_of(tree, found[1], found[0], config, found[2])
        if cascade is None:
            out.append(finding)
            continue
        out.append(cascade_finding(finding, cascade))
        namespaces += [dataclasses.replace(finding, severity="error", resource=str(rid), message="")
                       for rid in cascade.deletes if (rid.group, rid.kind) == ("", "Namespace")]
    if namespaces:  # a namespace the cascade deletes takes everything in it, whoever applies it
        said = set(out)
        out += [f for f in namespace_findings([*namespaces, *out], ownership(base, config), config) if f not in said]
    return out


def cascade_finding(finding: Finding, cascade: Cascade) -> Finding:
    """`finding`, which deletes `cascade.owner`, saying what goes with it and how to keep it."""
    owner = cascade.owner
    name, ns = owner.name, owner.namespace or "flux-system"
    if cascade.is_release:
        cost = ("helm-controller uninstalls the release: every resource its chart rendered is deleted (the "
                "volume claims the chart templates included, unless the chart marks them "
                "helm.sh/resource-policy: keep), and it is installed again from scratch")
    elif cascade.unreconciled:
        cost = (f"it never reconciled ({cascade.unreconciled}): it is not Ready and applied nothing, so its "
                "inventory is empty and its finalizer deletes nothing")
    elif not cascade.collects:
        cost = (f"its finalizer deletes nothing ({cascade.setting}): what it applies stays in the cluster, "
                "unmanaged, until a Flux Kustomization of that name applies it again and adopts it")
    else:
        cost = f"its finalizer ({cascade.setting}) deletes everything in its inventory with it{_listed(cascade)}"
    if cascade.stateful:
        cost += f". Data is lost: {'; '.join(cascade.stateful)}"
    if cascade.kept:
        cost += f". Left in place (they carry {PRUNE_KEY}: {PRUNE_DISABLED}): {', '.join(map(str, cascade.kept))}"
    if cascade.unknown:
        cost += f". Not evaluated, check by hand: {'; '.join(cascade.unknown)}"
    message = finding.message.replace(RESTART, cost) if RESTART in finding.message else f"{finding.message}. {cost}"
    fix = finding.fix
    if cascade.collects and not cascade.is_release and not cascade.unreconciled:
        setting = "spec.deletionPolicy: Orphan" if cascade.orphan_fix else "spec.prune: false"
        check = "{.spec.deletionPolicy}' prints Orphan" if cascade.orphan_fix else "{.spec.prune}' prints false"
        message += (f". Or keep what it owns, as the cutover runbook does: 1. merge a change that only sets "
                    f"{setting} on the Flux Kustomization {ns}/{name} (or only adds the annotation "
                    f"{PRUNE_KEY}: {PRUNE_DISABLED} to the objects that must survive, in their files); 2. wait "
                    f"until it has reconciled (kubectl -n {ns} get kustomization {name} -o jsonpath='{check}); "
                    "3. then make this change")
        fix = ORPHAN_SNIPPET if cascade.orphan_fix else PRUNE_FALSE_SNIPPET
    severity = finding.severity
    if cascade.stateful:
        severity = "error"
    elif not cascade.collects and severity == "warning":
        severity = "info"  # the Kustomization object is recreated and adopts what it left alive
    # What goes with the owner is at risk too: the finding lists it, the objects whose data is lost first.
    # The data is lost with the stateful objects it names; with the owner itself when none is named (a
    # release whose values show a claim the chart renders).
    owner_loses = bool(cascade.stateful) and not cascade.lost
    objects = at_risk([*finding.objects, FindingObject.of(owner, owner_loses),
                       *(FindingObject.of(rid, rid in cascade.lost) for rid in cascade.deletes)])
    return dataclasses.replace(finding, severity=severity, message=message, fix=fix, objects=objects)


def _listed(cascade: Cascade) -> str:
    if not cascade.deletes:
        return ("" if cascade.unknown else " (its inventory is empty, so nothing)")
    stateful = [r for r in cascade.deletes if r in cascade.lost]
    rest = [r for r in cascade.deletes if r not in cascade.lost]
    shown = [*stateful, *rest[:NAMED]]
    more = f" and {len(rest) - NAMED} more" if len(rest) > NAMED else ""
    uninstalls = [r for r in cascade.releases if r != cascade.owner]
    helm = (f"; helm-controller uninstalls {', '.join(map(str, uninstalls))}, deleting what its chart rendered"
            if uninstalls else "")
    return f": {', '.join(map(str, shown))}{more}{helm} (whatever applies them again recreates them empty)"


__all__ = ["Cascade", "HELM_GROUP", "cascade_finding", "cascade_of", "is_owner", "with_cascades"]
