"""What a change makes Flux delete, Flux Kustomization by Flux Kustomization (review mode).

The unit is the Flux Kustomization, per cluster: each one's build at the base revision (deployed)
and at the head (what merges), as the model of what Flux applies reads them (`bot.flux.applied`,
turned into the `Unit` records below by `units_of`). The Flux behaviour modelled (kustomize-controller v1):

- A Kustomization whose build fails at the head applies nothing and prunes nothing: its build failure
  is reported (`build-failed`: the file and line that name the missing path), and no deletion is
  concluded from it, nor from a child Kustomization that only its build would have applied.
- A Kustomization that prunes (`prune: true`, at the base or the head spec: the parent and the child
  race to apply the new spec) deletes every object that leaves its build, unless the deployed object
  carries `kustomize.toolkit.fluxcd.io/prune: disabled`. An object that another Kustomization
  applies now moves: safe only when the old owner `dependsOn` the new one (the new one adopts it
  first); else the old owner may delete it after the new one applied it (`cross-kustomization-move`).
- A Kustomization that leaves its parent's build is deleted by the parent's garbage collection (a
  parent with `prune: false` leaves it, unmanaged). Its finalizer then deletes its whole inventory,
  child Kustomizations and HelmReleases with their own cascades, unless `deletionPolicy: Orphan`
  or (`MirrorPrune`, the default) `prune: false`, as deployed. A rename or a namespace change is such
  a deletion and a creation: the new one recreates the objects empty (`kustomization-renamed`).
- A HelmRelease that is deleted is uninstalled: for bjw-s's app-template, the claims its
  `persistence` items render go with it (`bot.flux.stateful.chart_claims`).

Severity: an error for every object whose deletion loses state (PVC, PV, Namespace, CNPG Cluster,
`stateful_kinds`, a chart's or ResourceSet's claims), naming it; info for stateless objects of a
deletion, a warning for the stateless objects a rename recreates. Each error's fix is the next safe
step: `deletionPolicy: Orphan` on the old Kustomization, merged first (through the parent's
`spec.patches` when the parent sets the child's deletionPolicy or prune there, since an edit in the
child's own file is overridden), or `wave-bot accept` for a deliberate deletion (added by
`bot.checks.acceptance.judge`).
"""
from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from bot.config import Config
from bot.flux.applied import Applied, FluxKs, FluxModel
from bot.flux.stateful import chart_claims, data_loss, is_stateful, resource_set_claims
from bot.flux.vocabulary import FLUX_GROUP, PRUNE_DISABLED, PRUNE_KEY, is_helm_release
from bot.model import Finding, FindingObject, Severity
from bot.naming import is_yaml_name
from bot.repo.tree import Tree, walk
from bot.resid import ResourceId

NAMED = 8
"""Stateless objects named on a finding; the stateful ones are always all named, one finding each."""


@dataclass(frozen=True)
class Built:
    """One object a Flux Kustomization's build applies."""

    id: ResourceId
    path: str
    line: int
    known: bool = True
    """False when substitution leaves its identity unknown: never compared, never merged."""
    prune_disabled: bool = False
    refused: bool = False
    """Its Kustomization's apply refuses it (no namespace, still encrypted): it never reached the cluster."""
    renders: tuple[ResourceId, ...] = ()
    """The stateful objects it owns in turn (a HelmRelease's chart claims, a ResourceSet's resources)."""


@dataclass(frozen=True)
class Failure:
    """Why a Flux Kustomization's build fails: the file (and line) at fault, what is wrong (the path
    that does not exist), and how to fix it (what the path should be, when a rename explains it)."""

    path: str | None
    line: int | None
    message: str
    hint: str | None = None


@dataclass(frozen=True)
class Unit:
    """One Flux Kustomization of one cluster, with its effective spec and its build."""

    cluster: str
    namespace: str
    name: str
    path: str
    """The file defining it."""
    line: int = 0
    spec_path: str = ""
    prune: bool = True
    deletion_policy: str = ""
    policy_from: str | None = None
    """The parent's file, when the parent's `spec.patches` set this one's deletionPolicy or prune."""
    parent: str | None = None
    """`namespace/name` of the Kustomization whose build applies it; None: the cluster's entry."""
    depends_on: tuple[str, ...] = ()
    """`namespace/name` of each dependsOn target."""
    wait: bool = False
    health_checks: bool = False
    """`spec.healthChecks` (or `healthCheckExprs`) lists something: Ready waits for it."""
    ready_exprs: tuple[str, ...] = ()
    """`namespace/name` of each dependsOn entry that carries a `readyExpr`."""
    objects: tuple[Built, ...] = ()
    failure: Failure | None = None
    apply_failure: Failure | None = None
    """Its build succeeds but the controller's apply of it fails: it prunes nothing, as with `failure`."""
    refused: ResourceId | None = None
    """The object its apply fails on, when no other finding names it (a SOPS Secret: sops-not-decrypted; a
    Flux Kustomization: kustomization-namespace-missing)."""
    external: bool = False
    """Its source is not this repository (OCIRepository, Bucket, ...): never built, never compared."""

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def key(self) -> tuple[str, str]:
        return (self.cluster, self.ref)

    @property
    def finalizer_deletes(self) -> bool:
        """Whether deleting it deletes its inventory (kustomize-controller's finalizer)."""
        if self.deletion_policy in ("Delete", "WaitForTermination"):
            return True
        return self.prune and self.deletion_policy in ("", "MirrorPrune")

    @property
    def setting(self) -> str:
        return f"deletionPolicy: {self.deletion_policy or 'MirrorPrune'}, prune: {str(self.prune).lower()}"


def _is_flux_ks(rid: ResourceId) -> bool:
    return rid.group == FLUX_GROUP and rid.kind == "Kustomization"


def _lost(b: Built, config: Config) -> list[tuple[ResourceId, str]]:
    """(object, what its deletion loses) for the stateful objects deleting `b` deletes."""
    out = [(b.id, data_loss(b.id, config))] if is_stateful(b.id, config) else []
    owner = f"{b.id.kind} {b.id.namespace}/{b.id.name}"
    out += [(r, f"{owner} is deleted and takes it with it: {data_loss(r, config)}") for r in b.renders]
    return out


@dataclass(frozen=True)
class _Gone:
    """Everything deleting one Kustomization deletes: its objects and, through its children, theirs."""

    stateful: tuple[tuple[ResourceId, str, str], ...]  # (object, what is lost, the Kustomization deleting it)
    stateless: tuple[ResourceId, ...]


def _cascade(unit: Unit, children: Mapping[tuple[str, str], Sequence[Unit]], config: Config,
             seen: frozenset[tuple[str, str]] = frozenset()) -> _Gone:
    if not unit.finalizer_deletes or unit.key in seen or unit.external:
        return _Gone((), ())
    stateful: list[tuple[ResourceId, str, str]] = []
    stateless: list[ResourceId] = []
    for b in unit.objects:
        if not b.known or b.prune_disabled or b.refused:
            continue
        lost = _lost(b, config)
        stateful += [(r, why, unit.ref) for r, why in lost]
        if not is_stateful(b.id, config):
            stateless.append(b.id)
    for child in children.get(unit.key, ()):
        more = _cascade(child, children, config, seen | {unit.key})
        stateful += more.stateful
        stateless += more.stateless
    return _Gone(tuple(dict.fromkeys(stateful)), tuple(dict.fromkeys(stateless)))


def orphan_step(unit: Unit) -> str:
    """Step 1 of keeping what `unit` owns through its deletion: `deletionPolicy: Orphan` where it takes
    effect, merged and applied before the change that deletes (or renames) it."""
    if unit.policy_from is not None:
        return (f"# 1. the parent's spec.patches set this Kustomization's deletionPolicy, so an edit of "
                f"{unit.path} is overridden:\n"
                f"#    in {unit.policy_from}, append to the parent's spec.patches (after the patch that sets "
                "it for every child), merge, and wait until Flux has applied it:\n"
                "    - patch: |-\n"
                f"        apiVersion: {FLUX_GROUP}/v1\n"
                "        kind: Kustomization\n"
                "        metadata:\n"
                f"          name: {unit.name}\n"
                "        spec:\n"
                "          deletionPolicy: Orphan\n"
                "      target:\n"
                f"        group: {FLUX_GROUP}\n"
                "        kind: Kustomization\n"
                f"        name: {unit.name}\n"
                f"# 2. then merge this change: the old Kustomization goes and leaves its objects in place\n")
    return (f"# 1. in {unit.path}, set only this on Kustomization {unit.ref}, merge, and wait until Flux has "
            "applied it:\nspec:\n  deletionPolicy: Orphan\n"
            "# 2. then merge this change: the old Kustomization goes and leaves its objects in place\n")


def _names(ids: Sequence[ResourceId]) -> str:
    shown = ", ".join(map(str, ids[:NAMED]))
    return shown + (f" and {len(ids) - NAMED} more" if len(ids) > NAMED else "")


def build_failure_findings(base: Iterable[Unit], head: Iterable[Unit]) -> list[Finding]:
    """`build-failed`: a head build that fails (and did not fail the same way at the base)."""
    before = {(u.key, u.failure.path, u.failure.message) for u in base if u.failure is not None}
    out = []
    for u in head:
        f = u.failure
        if f is None or (u.key, f.path, f.message) in before:
            continue
        where = f"{f.path}{f':{f.line}' if f.line else ''}: " if f.path else ""
        out.append(Finding(
            code="build-failed", severity="error",
            message=f"Kustomization {u.ref} ({u.cluster}) cannot be built: {where}{f.message.rstrip('.')}"
                    + ("" if "prunes nothing" in f.message else
                       ". kustomize-controller applies and prunes nothing of it until it is fixed")
                    + ". So this change deletes nothing through it, and whatever dependsOn it waits",
            path=f.path or u.path, line=f.line if f.path else u.line or None,
            resource=f"{FLUX_GROUP}/Kustomization {u.ref}", fix=f.hint,
        ))
    return out


def apply_failure_findings(base: Iterable[Unit], head: Iterable[Unit]) -> list[Finding]:
    """`apply-failed`: a head build the controller cannot apply for want of an object's namespace (and
    that did not fail so at the base). The other apply failures have their own findings."""
    before = {(u.key, u.refused) for u in base if u.refused is not None}
    out = []
    for u in head:
        f = u.apply_failure
        if f is None or u.refused is None or (u.key, u.refused) in before:
            continue  # no apply failure, or one another finding names
        out.append(Finding(
            code="apply-failed", severity="error",
            message=f"Kustomization {u.ref} ({u.cluster}) cannot be applied: {f.message.rstrip('.')}. So this "
                    "change deletes nothing through it, and whatever dependsOn it waits",
            path=f.path or u.path, line=f.line if f.path else u.line or None,
            resource=str(u.refused), fix=f.hint,
        ))
    return out


def recovered_findings(base: Iterable[Unit], head: Iterable[Unit]) -> list[Finding]:
    """`base-not-applied`: a Kustomization whose build or apply fails at the base and not at the head. The
    cluster still holds what the last revision it applied gave it, which the base revision does not
    say; this change lets it prune again, so what left its build since then goes too."""
    failing = {u.key: u.failure or u.apply_failure for u in base if u.failure or u.apply_failure}
    out = []
    for u in head:
        was = failing.get(u.key)
        if was is None or u.failure is not None or u.apply_failure is not None or not u.prune:
            continue
        namespace, _, name = u.ref.partition("/")
        out.append(Finding(
            code="base-not-applied", severity="warning",
            message=f"Kustomization {u.ref} ({u.cluster}) fails at the base revision ({was.message.rstrip('.')}), "
                    "so the cluster still holds what the last revision it applied gave it, which wave-bot does not "
                    "see. This change makes it apply again, and Flux then prunes whatever of that it no longer "
                    "builds: wave-bot judged the deletions against the base revision only",
            path=u.path, line=u.line or None, resource=f"{FLUX_GROUP}/Kustomization {u.ref}",
            fix=f"list what the cluster holds and compare it with the build:\nkubectl -n {namespace} get "
                f"kustomization {name} -o jsonpath='{{.status.inventory.entries[*].id}}'\n",
        ))
    return out


def deletion_findings(base: Sequence[Unit], head: Sequence[Unit], config: Config) -> list[Finding]:
    """Every deletion going from `base` to `head` makes Flux perform, with the build failures that stop it."""
    findings = build_failure_findings(base, head)
    base_by = {u.key: u for u in base}
    head_by = {u.key: u for u in head}
    children: dict[tuple[str, str], list[Unit]] = {}
    for u in base:
        if u.parent is not None:
            children.setdefault((u.cluster, u.parent), []).append(u)
    findings += apply_failure_findings(base, head) + recovered_findings(base, head)
    failed = {u.key for u in head if u.failure is not None or u.apply_failure is not None}
    # A Kustomization new at the head that only a failing apply would create never exists: it adopts nothing.
    # `head` lists parents before their children (the model walks breadth first), so one pass finds them all.
    never: set[tuple[str, str]] = set()
    for u in head:
        parent = (u.cluster, u.parent)
        if u.key not in base_by and u.parent is not None and (parent in failed or parent in never):
            never.add(u.key)
    head_by = {k: u for k, u in head_by.items() if k not in never}
    findings += _removed_kustomizations(base, base_by, head_by, children, failed, config)
    findings += _objects_leaving(base_by, head_by, failed, config)
    return findings


def _successor(u: Unit, head: Sequence[Unit], base_by: Mapping[tuple[str, str], Unit]) -> Unit | None:
    """The new Kustomization that takes over `u`'s build: same cluster, new to the head, same name or
    same spec.path (a rename or a namespace change)."""
    new = [h for h in head if h.cluster == u.cluster and h.key not in base_by]
    for h in new:
        if h.name == u.name or (u.spec_path and h.spec_path == u.spec_path):
            return h
    ids = {b.id for b in u.objects if b.known}
    for h in new:
        if ids and ids <= {b.id for b in h.objects if b.known}:
            return h
    return None


def _removed_kustomizations(
    base: Sequence[Unit], base_by: Mapping[tuple[str, str], Unit], head_by: Mapping[tuple[str, str], Unit],
    children: Mapping[tuple[str, str], Sequence[Unit]], failed: set[tuple[str, str]], config: Config,
) -> list[Finding]:
    out: list[Finding] = []
    head = list(head_by.values())
    clusters = {u.cluster for u in head}
    for u in base:
        if u.key in head_by or u.external or u.parent is None or u.cluster not in clusters:
            # A cluster's root is applied by the bootstrap, not pruned by a parent; a cluster wave-bot
            # no longer finds (its entry moved) is not judged object by object.
            continue
        parent_key = (u.cluster, u.parent)
        parent = head_by.get(parent_key)
        if parent is None:
            continue  # its parent goes too: the parent's cascade covers it
        if parent_key in failed:
            continue  # the parent's build or apply fails: it prunes nothing (build-failed and the like say so)
        deployed = base_by.get(parent_key)
        if not parent.prune and (deployed is None or not deployed.prune):
            continue  # a parent that does not prune leaves it in the cluster, unmanaged
        successor = _successor(u, head, base_by)
        gone = _cascade(u, children, config)
        out += _deletion_of(u, successor, gone)
    return out


def _deletion_of(u: Unit, successor: Unit | None, gone: _Gone) -> list[Finding]:
    code = "kustomization-renamed" if successor is not None else "resource-removed"
    if successor is not None:
        what = ("its namespace changes" if successor.name == u.name else "it is renamed") + \
               f" to {successor.ref}, which Flux takes as a deletion and a creation"
        after = f"; {successor.ref} recreates them empty"
    else:
        what = "this change removes it from what its parent applies, so Flux deletes it"
        after = ""
    owner = f"Kustomization {u.ref} ({u.cluster})"
    out: list[Finding] = []
    for rid, why, by in gone.stateful:
        through = "" if by == u.ref else f" (through Kustomization {by}, which it deletes)"
        out.append(Finding(
            code=code, severity="error",
            message=f"{rid} is lost: {owner} is deleted ({what}), and its finalizer ({u.setting}) deletes "
                    f"it{through}: {why}{after}",
            path=u.path, line=u.line or None, resource=str(rid), fix=orphan_step(u),
            objects=(FindingObject.of(rid, True),),
        ))
    if gone.stateless:
        severity: Severity = "warning" if successor is not None else "info"
        out.append(Finding(
            code=code, severity=severity,
            message=f"{owner} is deleted ({what}), and its finalizer ({u.setting}) deletes "
                    f"{len(gone.stateless)} object(s) with no state: {_names(gone.stateless)}{after}"
                    + (" (missing in between: a restart)" if successor is not None else ""),
            path=u.path, line=u.line or None,
            fix=orphan_step(u) if successor is not None else None,
            objects=tuple(FindingObject.of(rid) for rid in gone.stateless),
        ))
    return out


def _adopts_first(old: Unit, new: Unit, units: Mapping[tuple[str, str], Unit]) -> bool:
    """Whether `old` waits for `new` (dependsOn, transitively, among `units`): `new` adopts first. The
    caller asks it of both specs: the parent and the child race to apply the new one."""
    todo, seen = list(old.depends_on), set()
    while todo:
        ref = todo.pop()
        if ref == new.ref:
            return True
        if ref in seen:
            continue
        seen.add(ref)
        dep = units.get((old.cluster, ref))
        todo += dep.depends_on if dep is not None else ()
    return False


def _objects_leaving(base_by: Mapping[tuple[str, str], Unit], head_by: Mapping[tuple[str, str], Unit],
                     failed: set[tuple[str, str]], config: Config) -> list[Finding]:
    out: list[Finding] = []
    applied_by: dict[tuple[str, ResourceId], Unit] = {}
    for h in head_by.values():
        for b in h.objects:
            if b.known:
                applied_by.setdefault((h.cluster, b.id), h)
    for key, old in base_by.items():
        new = head_by.get(key)
        if new is None or key in failed or old.external or not (old.prune or new.prune):
            continue
        now = {b.id for b in new.objects if b.known}
        for b in old.objects:
            if not b.known or b.id in now or _is_flux_ks(b.id):
                continue  # a child Kustomization that leaves is judged as a Kustomization
            if b.prune_disabled:
                continue  # deployed with prune: disabled: Flux leaves it
            if b.refused:
                continue  # the base's apply refused it: it never reached the cluster (base-not-applied)
            lost = _lost(b, config)
            other = applied_by.get((old.cluster, b.id))
            where = f"{b.path}:{b.line}"
            if other is not None:
                if _adopts_first(old, other, base_by) and _adopts_first(new, other, head_by):
                    continue
                message = (f"{b.id} moves from Kustomization {old.ref} to {other.ref} ({old.cluster}), and "
                           f"{old.ref} does not dependsOn {other.ref}: it may prune the object after {other.ref} "
                           "applied it, or before, so it is deleted and recreated")
                code = "cross-kustomization-move"
                fix = (f"first merge the objects with the annotation {PRUNE_KEY}: {PRUNE_DISABLED} (in "
                       f"{b.path}), wait until {old.ref} has applied it, then move them; or make {old.ref} "
                       f"dependsOn {other.ref} so that it adopts them first")
                stateless: Severity = "warning"
            else:
                message = (f"{b.id} leaves the build of Kustomization {old.ref} ({old.cluster}, prune: true) "
                           f"and nothing applies it now, so Flux deletes it (it was defined at {where})")
                code = "resource-removed"
                fix = (f"to keep it, first merge the annotation {PRUNE_KEY}: {PRUNE_DISABLED} on it (in "
                       f"{b.path}), wait until Flux has applied it, then remove it")
                stateless = "info"
            if lost:
                for rid, why in lost:
                    out.append(Finding(code=code, severity="error", message=f"{message}: {rid} is lost: {why}",
                                       path=old.path, line=old.line or None, resource=str(rid), fix=fix,
                                       objects=(FindingObject.of(rid, True),)))
            else:
                out.append(Finding(code=code, severity=stateless, message=message, path=old.path,
                                   line=old.line or None, resource=str(b.id), fix=None if stateless == "info" else fix,
                                   objects=(FindingObject.of(b.id),)))
    return out


def depends_on_findings(units: Sequence[Unit]) -> list[Finding]:
    """`depends-on-missing`: a dependsOn target no Kustomization of the cluster is (the dependent is
    never Ready), with the closest name of that cluster as a did-you-mean."""
    by_cluster: dict[str, set[str]] = {}
    for u in units:
        by_cluster.setdefault(u.cluster, set()).add(u.ref)
    out = []
    for u in units:
        refs = by_cluster[u.cluster]
        for ref in u.depends_on:
            if ref in refs:
                continue
            namespace, _, name = ref.partition("/")
            same_ns = [r.partition("/")[2] for r in refs if r.startswith(f"{namespace}/")]
            close = difflib.get_close_matches(name, same_ns, n=1, cutoff=0.6) or difflib.get_close_matches(
                ref, sorted(refs), n=1, cutoff=0.6)
            guess = close[0] if close else None
            hint = f" (did you mean '{guess}'?)" if guess else ""
            out.append(Finding(
                code="depends-on-missing", severity="error",
                message=f"Kustomization {u.ref} ({u.cluster}) dependsOn {ref}, which no Kustomization of this "
                        f"cluster is{hint}: it is never Ready, so {u.ref} never reconciles",
                path=u.path, line=u.line or None, resource=f"{FLUX_GROUP}/Kustomization {u.ref}",
                fix=f"name the Kustomization it needs: '{guess}'" if guess else
                    f"remove the entry, or add the Kustomization {ref}",
            ))
    return out


FEATURE_GATE = "AdditiveCELDependencyCheck"


def gating_findings(units: Sequence[Unit], gate_on: bool) -> list[Finding]:
    """How the dependsOn edges really gate. `depends-on-not-gating` (info), once per target: a target
    that neither waits nor has health checks is Ready once applied, so its dependents wait for its
    apply, not for what it runs. `ready-expr-replaces-readiness` (warning) per entry: without the
    `AdditiveCELDependencyCheck` feature gate (`gate_on`), a `readyExpr` replaces the built-in check
    that the target is Ready at the same revision, so the edge no longer waits for the new revision."""
    by = {u.key: u for u in units}
    waiting: dict[tuple[str, str], list[str]] = {}
    out: list[Finding] = []
    for u in units:
        for ref in u.depends_on:
            target = by.get((u.cluster, ref))
            if target is not None and not target.wait and not target.health_checks and not target.external:
                waiting.setdefault(target.key, []).append(u.ref)
        for ref in u.ready_exprs if not gate_on else ():
            out.append(Finding(
                code="ready-expr-replaces-readiness", severity="warning",
                message=f"Kustomization {u.ref} ({u.cluster}) dependsOn {ref} with a readyExpr: without the "
                        f"{FEATURE_GATE} feature gate the expression replaces Flux's own check that {ref} is Ready "
                        "at the same revision, so the edge no longer waits for the new revision",
                path=u.path, line=u.line or None, resource=f"{FLUX_GROUP}/Kustomization {u.ref}",
                fix=f"enable the gate on kustomize-controller (--feature-gates={FEATURE_GATE}=true), or add "
                    "the readiness and revision check to the expression",
            ))
    for key, dependents in sorted(waiting.items()):
        target = by[key]
        out.append(Finding(
            code="depends-on-not-gating", severity="info",
            message=f"Kustomization {target.ref} ({target.cluster}) has wait: false and no healthChecks, so it is "
                    f"Ready as soon as it is applied: {', '.join(sorted(set(dependents)))} wait(s) for its apply "
                    "only, not for what it runs to be ready",
            path=target.path, line=target.line or None, resource=f"{FLUX_GROUP}/Kustomization {target.ref}",
            fix="where a dependent needs it running, set on it (or list what must be ready):\nspec:\n  wait: true\n",
        ))
    return out





# ---- from the model of what Flux applies ------------------------------------------------------------


def _sets_policy(parent: FluxKs, child: FluxKs) -> bool:
    """Whether the parent's `spec.patches` set the child's deletionPolicy or prune (then an edit of the
    child's own file is overridden by what the parent applies)."""
    for entry in parent.spec.get("patches") or []:
        if not isinstance(entry, dict):
            continue
        target = entry.get("target") if isinstance(entry.get("target"), dict) else {}
        assert isinstance(target, dict)
        if target.get("kind") not in (None, "Kustomization") or target.get("name") not in (None, child.name):
            continue
        text = entry.get("patch")
        if isinstance(text, str) and ("deletionPolicy" in text or "prune:" in text):
            return True
    return False


def _built(obj: Applied, config: Config, refused: tuple[ResourceId, ...] = ()) -> Built:
    spec = obj.value.get("spec") if isinstance(obj.value.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    renders: tuple[ResourceId, ...] = ()
    if obj.known and is_helm_release(obj.value):
        renders = chart_claims(obj.id, spec)
    elif obj.known:
        renders = resource_set_claims(obj.id, spec, config)
    return Built(obj.id, obj.path, obj.line, known=obj.known, prune_disabled=obj.prune_disabled,
                 refused=obj.known and obj.id in refused, renders=renders)


def units_of(model: FluxModel, config: Config) -> list[Unit]:
    """Every Flux Kustomization of every cluster of `model`, as the records the checks above compare."""
    out = []
    for cluster in model.clusters:
        for ks in cluster.kustomizations:
            parent = cluster.get(ks.parent) if ks.parent is not None else None
            failure = ks.build_failure
            unknown = failure is not None and failure.unsupported  # kustomize may build it: objects unknown
            exprs = ks.spec.get("healthCheckExprs")
            applying = ks.apply_failure
            out.append(Unit(
                cluster=cluster.name, namespace=ks.namespace, name=ks.name, path=ks.file, line=ks.line,
                spec_path=ks.path or "", prune=ks.prune, deletion_policy=ks.deletion_policy,
                policy_from=parent.file if parent is not None and _sets_policy(parent, ks) else None,
                parent=f"{ks.parent[0]}/{ks.parent[1]}" if ks.parent is not None else None,
                depends_on=tuple(f"{d.namespace}/{d.name}" for d in ks.depends_on),
                wait=ks.wait, health_checks=bool(ks.health_checks) or bool(exprs),
                ready_exprs=tuple(f"{d.namespace}/{d.name}" for d in ks.depends_on if d.ready_expr),
                objects=tuple(_built(o, config, ks.refused) for o in ks.objects),
                failure=Failure(failure.path, failure.line, failure.message, failure.hint)
                if failure is not None and not unknown else None,
                apply_failure=Failure(applying.path, applying.line, applying.message, applying.hint)
                if applying is not None else None,
                refused=applying.refused if applying is not None and applying.refused is not None
                and not applying.undecrypted and not _is_flux_ks(applying.refused) else None,
                external=ks.external or unknown,
            ))
    return out


def sops_findings(model: FluxModel) -> list[Finding]:
    """`sops-not-decrypted`: a Kustomization applies a SOPS-encrypted object and has no
    `spec.decryption` (as its parent's build gives its spec): the encrypted values reach the API
    server, which refuses them (or stores ciphertext)."""
    out = []
    for ks in model.kustomizations():
        if not ks.evaluated or isinstance(ks.spec.get("decryption"), dict):
            continue
        encrypted = [o for o in ks.objects if isinstance(o.value.get("sops"), dict)]
        if encrypted:
            first = encrypted[0]
            names = ", ".join(f"{o.id} ({o.path})" for o in encrypted[:NAMED])
            out.append(Finding(
                code="sops-not-decrypted", severity="error",
                message=f"Kustomization {ks.namespace}/{ks.name} ({ks.cluster}) applies {len(encrypted)} "
                        f"SOPS-encrypted object(s) without spec.decryption: {names}. kustomize-controller "
                        "refuses the whole revision when a Secret's encrypted values are in `data` (it applies and "
                        "prunes nothing), and stores the ciphertext as the Secret's value when they are in "
                        "`stringData`",
                path=ks.file, line=ks.line, resource=str(first.id),
                fix="spec:\n  decryption:\n    provider: sops\n    secretRef:\n      name: sops-age\n",
            ))
    return out


def _files(tree: Tree, directory: str) -> frozenset[str]:
    return frozenset(path[len(directory) + 1:] for path, entry in walk(tree, directory) if entry.kind == "file")


def moved_to(base: Tree, head: Tree, directory: str) -> str | None:
    """Where the change moved `directory` (a directory at the base that the head lacks): the directory
    new to the head, below the same parent or the one above it, holding the same files; None if none."""
    directory = directory.removeprefix("./").rstrip("/")
    if not directory or head.kind(directory) is not None or base.kind(directory) != "dir":
        return None
    before = _files(base, directory)
    parent = directory.rpartition("/")[0]
    grand = parent.rpartition("/")[0]
    candidates = [f"{parent}/{e.name}" if parent else e.name for e in head.entries(parent) if e.kind == "dir"]
    if parent:
        for up in head.entries(grand):
            top = f"{grand}/{up.name}" if grand else up.name
            if up.kind == "dir" and top != parent:
                candidates += [f"{top}/{e.name}" for e in head.entries(top) if e.kind == "dir"]
    for candidate in candidates:
        if base.kind(candidate) is None and before and _files(head, candidate) == before:
            return candidate
    return None


def with_moves(findings: Sequence[Finding], head: Sequence[Unit], base: Tree, tree: Tree) -> list[Finding]:
    """Each `build-failed` of a stale spec.path, with the directory the change moved it to as the
    did-you-mean and the fix."""
    by_ref = {f"{FLUX_GROUP}/Kustomization {u.ref}": u for u in head}
    out = []
    for f in findings:
        unit = by_ref.get(f.resource or "") if f.code == "build-failed" else None
        target = moved_to(base, tree, unit.spec_path) if unit is not None else None
        if unit is not None and target is not None:
            f = dataclasses.replace(
                f, message=f"{f.message}. This change moved it to {target} (did you mean './{target}'?)",
                fix=f"# in {unit.path}, Kustomization {unit.ref}:\nspec:\n  path: ./{target}\n")
        out.append(f)
    return out


def feature_gate_on(tree: Tree) -> bool:
    """Whether some YAML file of the repository turns the AdditiveCELDependencyCheck gate on
    (kustomize-controller's `--feature-gates=...AdditiveCELDependencyCheck=true`)."""
    needle = f"{FEATURE_GATE}=true".encode()
    for path, entry in walk(tree, ""):
        if entry.kind == "file" and is_yaml_name(entry.name) and needle in tree.read(path):
            return True
    return False


__all__ = [
    "Built", "Failure", "Unit", "apply_failure_findings", "build_failure_findings", "deletion_findings",
    "depends_on_findings", "feature_gate_on", "gating_findings", "moved_to", "orphan_step", "recovered_findings",
    "sops_findings", "units_of", "with_moves",
]
