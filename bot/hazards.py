"""What Flux will delete when a change merges: the findings a reviewer must see before merging.

`hazard_findings` compares the base revision's inventory with the layout after regeneration. The
Flux behaviour it models (kustomize-controller v1.x):

- A Kustomization with `prune: true` deletes every object that leaves its build, unless the LIVE
  object carries `kustomize.toolkit.fluxcd.io/prune: disabled`. "Live" means as applied from the
  base revision: an annotation added in the same change arrives too late.
- It only deletes objects still labelled as its own. A wave applies only once the wave before it is
  ready at the same revision, so an object moved to an EARLIER wave is relabelled (adopted) before
  its old wave prunes: safe. Moved to a LATER wave, the old wave deletes it before the new one
  recreates it.
- Deleting a Flux Kustomization that prunes deletes everything it still owns (its finalizer).

Stateful kinds: PersistentVolumeClaim, PersistentVolume, Namespace (core group), CNPG `Cluster`
(postgresql.cnpg.io), and every entry of `config.stateful_kinds`, spelled `Kind` (that kind in any
API group, e.g. `StatefulSet`) or `group/Kind` (that group only, e.g. `mariadb.mmontes.io/MariaDB`;
`/Kind` for the core group only, whose name is empty). Kinds are case-sensitive, as in Kubernetes.
An entry with more than one `/` (an apiVersion such as `apps/v1/StatefulSet`) matches nothing.
"""
from __future__ import annotations

import posixpath
from collections.abc import Sequence
from dataclasses import dataclass, field

from bot.config import Config
from bot.errors import WaveBotError
from bot.evalpaths import EvalPath, discover_overlays, evaluation_paths
from bot.inventory import (
    PRUNE_DISABLED,
    PRUNE_KEY,
    FluxKustomization,
    Inventory,
    Resource,
    ResourceId,
    WaveFile,
    clusters_dir,
)
from bot.kustomizations import Kustomizations, PatchEntry, read_kustomizations
from bot.kustomize import build, read_patch
from bot.lifecycle import Item
from bot.model import Finding
from bot.ownership import Copy, Ownership, may_prune, ownership
from bot.render import FLUX_GROUP
from bot.side import Side, Slot, number, ready_before
from bot.tree import Tree

PRUNE_SNIPPET = f"metadata:\n  annotations:\n    {PRUNE_KEY}: {PRUNE_DISABLED}\n"
PRUNE_FALSE_SNIPPET = "spec:\n  prune: false\n"
ORPHAN_SNIPPET = "spec:\n  deletionPolicy: Orphan\n"

# What deleting an object of a built-in stateful kind costs; keyed by (group, kind).
_LOSS: dict[tuple[str, str], str] = {
    ("", "PersistentVolumeClaim"): "the claim is deleted and its volume's data with it",
    ("", "PersistentVolume"): "the volume is deleted (with reclaimPolicy: Delete, its data too)",
    ("", "Namespace"): "the namespace is deleted and everything in it with it",
    ("postgresql.cnpg.io", "Cluster"): "the CNPG database cluster is deleted and its PVCs with it: the data is lost",
}
# What deleting and recreating a plain object costs (`bot.cascade` replaces it for owners).
RESTART = "it is missing in between (a restart, and an outage of what needs it)"


def stateful_entry(rid: ResourceId, config: Config) -> str | None:
    """The `stateful_kinds` entry matching `rid`, or None."""
    for entry in config.stateful_kinds:
        group, slash, kind = entry.rpartition("/")
        if kind == rid.kind and (not slash or group == rid.group) and group.count("/") == 0:
            return entry
    return None


def is_stateful(rid: ResourceId, config: Config) -> bool:
    """Whether deleting the object loses data (or everything inside it)."""
    return (rid.group, rid.kind) in _LOSS or stateful_entry(rid, config) is not None


def _loss(rid: ResourceId, config: Config) -> str:
    """What deleting `rid` costs, for a stateful kind."""
    if (rid.group, rid.kind) in _LOSS:
        return _LOSS[(rid.group, rid.kind)]
    return f"it is deleted and its state is lost ({stateful_entry(rid, config)} is listed in stateful_kinds)"


def _where(resource: Resource) -> str:
    return f"{resource.path}:{resource.line}"


def hazard_findings(base: Inventory, now: Inventory, config: Config) -> list[Finding]:
    """Every hazard of going from `base` to `now`, sorted. `now.problems` are included."""
    owned_base, owned_now = ownership(base, config), ownership(now, config)
    findings = [
        *now.problems,
        *invalid_prune_findings(now),
        *duplicate_findings(now),
        *move_findings(base, now, config, owned_base, owned_now),
        *gone_findings(base, now, config, owned_base, owned_now),
        *owner_findings(owned_base, owned_now, config),
        *kustomization_removed_findings(base, now, config, owned_base),
        *wave_emptied_findings(base, now, config),
    ]
    findings += namespace_findings(findings, owned_base, config)
    return sorted(findings, key=lambda f: (f.sort_key(), f.line or 0))


def _owners(base: Inventory, now: Inventory, config: Config,
            owned: tuple[Ownership | None, Ownership | None]) -> tuple[Ownership, Ownership]:
    ob, on = owned
    return (ob if ob is not None else ownership(base, config), on if on is not None else ownership(now, config))


def _wave_prunes(ob: Ownership, on: Ownership, config: Config, wave: Slot) -> bool:
    """Whether wave `wave`'s Flux Kustomization may garbage-collect what leaves it (either spec)."""
    return may_prune(ob, on, ob.wave_owner.get(wave, on.wave_owner.get(wave, config.wave_cr_name(wave))))


def work_tree_move_findings(here: Inventory, now: Inventory, config: Config) -> list[Finding]:
    """Without a deployed revision, the moves `apply` makes, judged as if the work tree were deployed.

    A local `wave-bot apply` with no `--base` is the common first step; keeping quiet about the PVC it
    is about to move into a later wave would be a silent "fine". Only moves are judged: removals and
    emptied waves need the real deployed state, so they wait for `--base`.
    """
    owned_here, owned_now = ownership(here, config), ownership(now, config)
    moves = move_findings(here, now, config, owned_here, owned_now)
    if not moves:
        return []
    moves += namespace_findings(moves, owned_here, config)
    return [*moves, Finding(
        code="base-is-work-tree",
        severity="info",
        message="no deployed revision was given, so the work tree as it is now is taken as what Flux has "
                "deployed: the move findings compare it with the layout after `wave-bot apply`, and removals "
                "are not checked. Pass the deployed branch as --base (for example `--base origin/main`) to "
                "check against what the cluster really runs",
    )]


# ---- prune values Flux cannot read ----------------------------------------------------------------


def invalid_prune_findings(now: Inventory) -> list[Finding]:
    """`invalid-prune`: spec.prune that is not a YAML 1.2 boolean (`yes`, `on`, `"true"`, ...)."""
    return [_invalid_prune(k) for k in now.flux
            if k.prune_value and k.prune_value not in ("true", "false", "True", "False", "TRUE", "FALSE")]


def _invalid_prune(k: FluxKustomization) -> Finding:
    quoted = k.prune_value.startswith('"')
    spelled = k.prune_value.strip('"').lower() if quoted else ""
    why = ("which is quoted, so a string in every YAML version" if quoted else
           "which kustomize reads as YAML 1.2, where it is a string")
    return Finding(
        code="invalid-prune",
        severity="error",
        message=f"{k.path}:{k.line}: the Flux Kustomization {k.name} has spec.prune: {k.prune_value}, {why}, not a "
                "boolean: the Kustomization CRD rejects it and Flux cannot apply this revision of the cluster "
                "entrypoints. wave-bot assumes it prunes",
        path=k.path, line=k.line, resource=str(k.id),
        fix=f"spec:\n  prune: {spelled if spelled in ('true', 'false') else 'true'}\n",
    )


# ---- one object in two places ---------------------------------------------------------------------


def duplicate_findings(now: Inventory) -> list[Finding]:
    """`duplicate-resource`: an object defined more than once (needs no base)."""
    findings = []
    for rid, found in now.by_id.items():
        if len(found) < 2:
            continue
        places = ", ".join(f"wave {r.wave} ({_where(r)})" for r in found)
        if len({r.wave for r in found}) > 1:
            why = ("several Flux Kustomizations apply it and fight over it, and each one that later stops "
                   "applying it deletes it")
        else:
            why = f"kustomize refuses to build wave {found[0].wave} with the same object twice"
        findings.append(Finding(
            code="duplicate-resource",
            severity="error",
            message=f"{rid} is defined {len(found)} times: {places}; {why}. Keep exactly one definition",
            path=found[1].path,
            line=found[1].line,
            wave=found[1].wave,
            resource=str(rid),
        ))
    return findings


# ---- objects moving between waves ---------------------------------------------------------------


def move_findings(base: Inventory, now: Inventory, config: Config,
                  owned_base: Ownership | None = None, owned_now: Ownership | None = None) -> list[Finding]:
    """`later-wave-move` and `earlier-wave-move` for every object that changes wave.

    An object still defined in one of its base waves does not move (`owner_findings` checks the
    copies it leaves). Otherwise the earliest wave applying it now is compared with the earliest
    wave that applied it at base: if it is later, the old wave prunes before the new one adopts,
    unless its Flux Kustomization does not prune (with either its old or its new spec). Objects that
    a Kustomization other than a wave applies, at base or now, are left to `owner_findings`.
    """
    ob, on = _owners(base, now, config, (owned_base, owned_now))
    findings = []
    for rid, now_found in now.by_id.items():
        base_found = base.by_id.get(rid)
        if not base_found or base_found[0].wave == now_found[0].wave:
            continue  # the common case, decided without building the two sets below
        if {r.wave for r in base_found} & {r.wave for r in now_found}:
            continue
        if _elsewhere(rid, ob, on):
            continue
        old, new = base_found[0], now_found[0]  # by_id lists definitions by wave first
        if ready_before(new.wave, old.wave):
            findings.append(_earlier(rid, old, new, config))
        elif _wave_prunes(ob, on, config, old.wave):
            protected = all(r.prune_disabled for r in base_found)
            findings.append(_later(rid, old, new, protected, config))
    return findings


def _elsewhere(rid: ResourceId, ob: Ownership, on: Ownership) -> bool:
    """Whether a Kustomization that is not a wave applies `rid` at base or now."""
    return any(c.wave is None for c in (*ob.copies.get(rid, ()), *on.copies.get(rid, ())))


def _earlier(rid: ResourceId, old: Resource, new: Resource, config: Config) -> Finding:
    old_cr, new_cr = config.wave_cr_name(old.wave), config.wave_cr_name(new.wave)
    return Finding(
        code="earlier-wave-move",
        severity="info",
        message=f"{rid} moves from wave {old.wave} ({old.path}) to the earlier wave {new.wave} ({new.path}): "
                f"{new_cr} adopts it before {old_cr} reconciles, so nothing is deleted",
        path=new.path,
        line=new.line,
        wave=new.wave,
        resource=str(rid),
    )


def _later(rid: ResourceId, old: Resource, new: Resource, protected: bool, config: Config) -> Finding:
    old_cr, new_cr = config.wave_cr_name(old.wave), config.wave_cr_name(new.wave)
    if number(new.wave) > number(old.wave):
        where = f"the later wave {new.wave}"
        recreates = f"{new_cr} recreates it only after wave {number(new.wave) - 1} is ready"
    else:  # into a side branch, or beside one: both Kustomizations wait only for the wave below
        where = f"wave {new.wave}"
        recreates = f"{new_cr} reconciles in parallel (no dependsOn orders the two) and may recreate it only after that"
    moves = f"{rid} moves from wave {old.wave} ({old.path}) to {where} ({new.path})"
    if protected:
        return Finding(
            code="later-wave-move",
            severity="info",
            message=f"{moves}; it carried `{PRUNE_KEY}: {PRUNE_DISABLED}` at base, so {old_cr} leaves it in "
                    f"place and {new_cr} adopts it. Once {new_cr} owns it, remove the annotation in a later "
                    "change if Flux should garbage-collect it again",
            path=new.path, line=new.line, wave=new.wave, resource=str(rid),
        )
    stateful = is_stateful(rid, config)
    cost = _loss(rid, config) if stateful else RESTART
    late = (f" The annotation this change adds comes too late: the live object does not carry it when "
            f"{old_cr} prunes." if new.prune_disabled else "")
    return Finding(
        code="later-wave-move",
        severity="error" if stateful else "warning",
        message=f"{moves}: {old_cr} deletes it as soon as it reconciles this change, and {recreates}, "
                f"so {cost}.{late} Safe procedure: first merge a "
                f"change that only adds the annotation `{PRUNE_KEY}: {PRUNE_DISABLED}` to {rid} in {old.path}, "
                f"wait until {old_cr} has reconciled it (`flux get kustomization {old_cr}`), then make this move",
        # Where the fix goes: the annotation is merged in the file as deployed, before it moves.
        path=old.path, line=old.line, wave=new.wave, resource=str(rid), fix=PRUNE_SNIPPET,
    )


# ---- objects changing Flux Kustomization, across every Kustomization --------------------------


def owner_findings(base: Ownership, now: Ownership, config: Config) -> list[Finding]:
    """What the wave rules above cannot see: Kustomizations that are not waves, and shared copies.

    - `duplicate-resource`: an object that a wave and another Kustomization both apply now.
    - `cross-kustomization-move`: an object moving between Kustomizations when one of them is not a
      wave: its old owner deletes it unless a new owner applies the revision before it (one of its
      dependsOn ancestors); unordered Kustomizations race, so a delete is possible.
    - `copy-removed`: an object that several Kustomizations applied at base (each one applying it
      last owns it) loses a copy: the Kustomization that dropped it deletes it if it owned it last,
      unless one that keeps it applies before it.
    An object is protected only when every copy deployed at base carries prune: disabled.
    """
    findings = shared_findings(now)
    changed = [rid for rid in {*base.copies, *now.copies} if base.copies.get(rid) != now.copies.get(rid)]
    for rid in sorted(changed):  # an object applied exactly as at base changes no owner
        old, new = base.copies.get(rid, ()), now.copies.get(rid, ())
        if not old or not new:
            continue
        if not _elsewhere(rid, base, now) and not ({c.owner for c in old} & {c.owner for c in new}):
            continue  # between waves: move_findings
        protected = all(c.prune_disabled for c in old)
        keepers = {c.owner for c in new}
        for copy in old:
            if copy.owner in keepers or now.prunes(copy.owner) is None or not may_prune(base, now, copy.owner):
                continue  # still applied by it; removed (kustomization-removed); or never prunes
            if keepers & now.ancestors(copy.owner):
                continue  # a new owner adopts it before the old one reconciles
            code = "copy-removed" if keepers & {c.owner for c in old} else "cross-kustomization-move"
            findings.append(_owner_move(code, rid, copy, new[0], keepers, protected, now, config))
            break
    return findings


def shared_findings(now: Ownership) -> list[Finding]:
    """`duplicate-resource` for an object that a wave and another Flux Kustomization both apply (needs
    no base; two waves are `duplicate_findings`)."""
    shared = [rid for rid, copies in now.copies.items()
              if len(copies) > 1 and len({c.owner for c in copies}) > 1 and any(c.wave is None for c in copies)]
    return [_shared(rid, now.copies[rid]) for rid in sorted(shared)]


def _shared(rid: ResourceId, copies: Sequence[Copy]) -> Finding:
    places = ", ".join(f"{c.owner} ({c.path}:{c.line})" for c in copies)
    return Finding(
        code="duplicate-resource",
        severity="error",
        message=f"{rid} is applied by {len({c.owner for c in copies})} Flux Kustomizations: {places}; each "
                f"relabels it as its own and strips the other's {PRUNE_KEY} annotation "
                "(kustomize-controller#1724), and each one that later stops applying it deletes it. "
                "Keep exactly one definition",
        path=copies[-1].path, line=copies[-1].line, wave=copies[-1].wave, resource=str(rid),
    )


def _owner_move(code: str, rid: ResourceId, old: Copy, new: Copy, keepers: set[str], protected: bool,
                now: Ownership, config: Config) -> Finding:
    names = ", ".join(sorted(keepers))
    if any(old.owner in now.ancestors(k) for k in keepers):
        order = f"{old.owner} reconciles first (they dependsOn it), deletes it, and {names} recreates it"
    else:
        order = (f"{old.owner} and {names} are not ordered by dependsOn, so they race: if {old.owner} "
                 "reconciles first, it deletes it before it is adopted")
    if code == "copy-removed":
        moves = (f"{rid} was applied by several Kustomizations at base, and the copy {old.owner} applied "
                 f"({old.path}:{old.line}) is gone: whichever applied it last owns it, so {old.owner} may own it")
    else:
        moves = f"{rid} moves from {old.owner} ({old.path}:{old.line}) to {names} ({new.path}:{new.line})"
    if protected:
        return Finding(
            code=code,
            severity="info",
            message=f"{moves}; every copy carried `{PRUNE_KEY}: {PRUNE_DISABLED}` at base, so {old.owner} leaves "
                    f"it in place and {names} adopts it",
            path=new.path, line=new.line, wave=new.wave, resource=str(rid),
        )
    stateful = is_stateful(rid, config)
    cost = _loss(rid, config) if stateful else RESTART
    return Finding(
        code=code,
        severity="error" if stateful else "warning",
        message=f"{moves}: {order}, so {cost}. Safe procedure: first merge a change that only adds the "
                f"annotation `{PRUNE_KEY}: {PRUNE_DISABLED}` to {rid} in {old.path}, wait until {old.owner} has "
                f"reconciled it (`flux get kustomization {old.owner}`), then make this move",
        path=old.path, line=old.line, wave=new.wave, resource=str(rid), fix=PRUNE_SNIPPET,
    )


# ---- a deleted Namespace takes everything in it -------------------------------------------------

_DELETING = frozenset({"resource-removed", "resource-dropped", "later-wave-move", "cross-kustomization-move",
                       "copy-removed"})


def namespace_findings(findings: Sequence[Finding], base: Ownership, config: Config) -> list[Finding]:
    """`namespace-deleted` for every object in a Namespace that one of `findings` says Flux deletes.

    Kubernetes deletes a namespace's objects with it whatever Flux's annotations say, even those
    another Kustomization still applies.
    """
    deleted = {f.resource: f for f in findings if f.code in _DELETING and f.severity == "error"}
    if not any(r is not None and r.startswith("Namespace ") for r in deleted):
        return []
    said: dict[str | None, list[Finding]] = {}
    for f in findings:
        if f.code in _DELETING:
            said.setdefault(f.resource, []).append(f)
    out = []
    for rid, copies in sorted(base.copies.items()):
        if not rid.namespace:
            continue
        cause = deleted.get(str(ResourceId("", "Namespace", "", rid.namespace)))
        if cause is None:
            continue
        stateful = is_stateful(rid, config)
        named = said.get(str(rid), [])
        if any(f.severity == "error" or not stateful for f in named):
            continue  # its own finding already says it is deleted
        cost = f": {_loss(rid, config)}" if stateful else ""
        out.append(Finding(
            code="namespace-deleted",
            severity="error" if stateful else "warning",
            message=f"{rid} ({copies[0].path}:{copies[0].line}) is in Namespace {rid.namespace}, which this change "
                    f"deletes ({cause.code}, {cause.path}): Kubernetes deletes everything in a namespace with "
                    f"it, whichever Kustomization applies it{cost}. Keep the Namespace where it is",
            path=copies[0].path, line=copies[0].line, wave=copies[0].wave, resource=str(rid),
        ))
    return out


# ---- objects leaving every wave ------------------------------------------------------------------


def gone_findings(base: Inventory, now: Inventory, config: Config,
                  owned_base: Ownership | None = None, owned_now: Ownership | None = None) -> list[Finding]:
    """`resource-dropped` / `resource-removed` for every object at base that no wave applies now.

    Files are tracked by name, because wave-bot's moves keep names: when a file of the same name is
    still there (applied or not), the object was dropped rather than deleted on purpose. A wave
    whose Flux Kustomization does not prune leaves the object in the cluster, unmanaged.
    """
    ob, on = _owners(base, now, config, (owned_base, owned_now))
    findings = []
    for rid, base_found in base.by_id.items():
        if rid in now.by_id or _elsewhere(rid, ob, on):
            continue
        old = base_found[0]
        protected = all(r.prune_disabled for r in base_found) or not _wave_prunes(ob, on, config, old.wave)
        kept = now.paths_by_name.get(posixpath.basename(old.path))
        if kept:
            findings.append(_dropped(rid, old, kept[0], now, protected, config))
        else:
            findings.append(_removed(rid, old, protected, config))
    return findings


def _dropped(rid: ResourceId, old: Resource, path: str, now: Inventory, protected: bool, config: Config) -> Finding:
    old_cr = config.wave_cr_name(old.wave)
    held = now.file(path)
    if isinstance(held, WaveFile):
        why = f"{path} (wave {held.wave}) no longer defines it"
    elif held is not None and held.wave is not None:
        why = f"{path} is no longer listed in {config.wave_dir(held.wave)}/kustomization.yaml, so no wave applies it"
    else:
        why = f"{path} is outside the wave directories, so no wave applies it"
    if protected:
        return Finding(
            code="resource-dropped",
            severity="warning",
            message=f"{rid} (wave {old.wave}, {_where(old)}) is in no wave any more although its file is kept: "
                    f"{why}. It carries {PRUNE_KEY}: {PRUNE_DISABLED}, so Flux leaves it in the cluster, "
                    "unmanaged. Put it back in a wave, or delete it by hand",
            path=path, wave=old.wave, resource=str(rid),
        )
    cost = _loss(rid, config) if is_stateful(rid, config) else "it is deleted"
    return Finding(
        code="resource-dropped",
        severity="error",
        message=f"{rid} (wave {old.wave}, {_where(old)}) is in no wave any more although its file is kept: "
                f"{why}. {old_cr} deletes it when it reconciles: {cost}. Put it back; if Flux should delete "
                "it, delete it in a change of its own",
        path=path, wave=old.wave, resource=str(rid),
    )


def _removed(rid: ResourceId, old: Resource, protected: bool, config: Config) -> Finding:
    old_cr = config.wave_cr_name(old.wave)
    deleted = f"{old.path} is deleted in this change"
    if protected:
        return Finding(
            code="resource-removed",
            severity="info",
            message=f"{deleted}; {rid} carries {PRUNE_KEY}: {PRUNE_DISABLED}, so Flux leaves it in the cluster, "
                    "unmanaged. Delete it by hand if it is no longer needed",
            path=old.path, line=old.line, wave=old.wave, resource=str(rid),
        )
    if not is_stateful(rid, config):
        return Finding(
            code="resource-removed",
            severity="info",
            message=f"{deleted}, so {old_cr} deletes {rid} when it reconciles",
            path=old.path, line=old.line, wave=old.wave, resource=str(rid),
        )
    return Finding(
        code="resource-removed",
        severity="error",
        message=f"{deleted}, so {old_cr} deletes {rid} when it reconciles: {_loss(rid, config)}. If the data "
                f"must survive, first merge a change that only adds the annotation {PRUNE_KEY}: {PRUNE_DISABLED} "
                f"to it, wait until {old_cr} has reconciled it, then delete the file",
        path=old.path, line=old.line, wave=old.wave, resource=str(rid), fix=PRUNE_SNIPPET,
    )


# ---- Flux Kustomizations and waves ---------------------------------------------------------------


def kustomization_removed_findings(base: Inventory, now: Inventory, config: Config,
                                   owned_base: Ownership | None = None) -> list[Finding]:
    """`kustomization-removed`: a pruning Flux Kustomization at base that is gone now (the cutover).

    One that applied nothing at base owns nothing, so its finalizer deletes nothing: no finding.
    """
    ob = owned_base if owned_base is not None else ownership(base, config)
    owning = {c.owner for copies in ob.copies.values() for c in copies}
    return [
        _kustomization_removed(k, base, config)
        for k in base.flux
        if k.deletes_on_removal and k.id not in now.flux_by_id and k.name in owning
    ]


def _kustomization_removed(k: FluxKustomization, base: Inventory, config: Config) -> Finding:
    name, ns = k.id.name, k.id.namespace or "flux-system"
    wave = config.slot_of_cr_file(f"{name}.yaml")
    if wave is not None and wave in base.counts():
        owned = f" (the {base.counts()[wave]} object(s) of wave {wave} at base)"
    elif k.source_path:
        owned = f" (everything it applies from {k.source_path})"
    else:
        owned = ""
    if k.deletion_policy in ("Delete", "WaitForTermination"):
        setting, first, fix = (f"spec.deletionPolicy: {k.deletion_policy}", "sets spec.deletionPolicy: Orphan",
                               ORPHAN_SNIPPET)
        check = "{.spec.deletionPolicy}'` prints Orphan"  # the command ends its code span
    else:
        setting, first, fix = ("prune: true", "sets spec.prune: false (or spec.deletionPolicy: Orphan)",
                               PRUNE_FALSE_SNIPPET)
        check = "{.spec.prune}'` prints false"
    return Finding(
        code="kustomization-removed",
        severity="error",
        message=f"the Flux Kustomization {ns}/{name} ({k.path}:{k.line}) has {setting} and this change removes it: "
                f"the Kustomization that applies {posixpath.dirname(k.path)} deletes it, and its finalizer then "
                f"deletes everything it still owns{owned}, PVCs and CNPG databases included, even those "
                f"another Kustomization is about to adopt. Safe procedure: 1. merge a change that only {first} "
                f"on {name}; 2. wait until it has reconciled (`kubectl -n {ns} get kustomization {name} "
                f"-o jsonpath='{check}); 3. then merge its removal: its objects stay alive and the "
                "Kustomizations that now apply them adopt them without a delete",
        path=k.path,
        line=k.line,
        wave=wave,
        resource=str(k.id),
        fix=fix,
    )


def wave_emptied_findings(base: Inventory, now: Inventory, config: Config) -> list[Finding]:
    """`wave-emptied`: a wave that applied objects at base and applies none now."""
    findings = []
    now_counts = now.counts()
    for wave, count in base.counts().items():
        if count == 0 or now_counts.get(wave, 0) != 0:
            continue
        cr = config.wave_cr_name(wave)
        findings.append(Finding(
            code="wave-emptied",
            severity="warning",
            message=f"wave {wave} applied {count} object(s) at base and applies none now. wave-bot keeps "
                    f"{config.wave_dir(wave)}/kustomization.yaml (with resources: []) and {cr}, because "
                    f"deleting a Flux Kustomization with prune: true deletes everything it still owns. Once "
                    f"{cr} has reconciled the empty wave it owns nothing, and wave-bot removes it when it is "
                    f"{'still empty in a later change' if isinstance(wave, Side) else 'beyond the deepest wave'}",
            path=f"{config.wave_dir(wave)}/kustomization.yaml",
            wave=wave,
            resource=_wave_cr_resource(base, config, wave),
        ))
    return findings


def _wave_cr_resource(inventory: Inventory, config: Config, wave: Slot) -> str | None:
    """str() of the wave's Flux Kustomization as `inventory` defines it; None when it does not."""
    name = config.wave_cr_name(wave)
    return next((str(k.id) for k in inventory.flux if k.id.name == name), None)


def removable_waves(base: Inventory, now: Inventory, deepest: int | None) -> tuple[int, ...]:
    """Waves beyond `deepest` (the new layout's last wave; None: no wave) that wave-bot may delete.

    A wave may go only when it applied nothing at base (its Flux Kustomization owns nothing, so
    deleting it deletes nothing) and applies nothing now. Waves go from the top down: removing a
    wave below one that stays would break the dependsOn chain, so the first wave that must stay
    stops the walk.
    """
    floor = -1 if deepest is None else deepest
    base_counts, now_counts = base.counts(), now.counts()
    candidates = sorted({n for n in {*base_counts, *now_counts} if not isinstance(n, Side)} - set(range(floor + 1)),
                        reverse=True)
    removable = []
    for wave in candidates:
        if base_counts.get(wave, 0) or now_counts.get(wave, 0):
            break
        removable.append(wave)
    return tuple(sorted(removable))


# ---- removing an empty wave ----------------------------------------------------------------------


@dataclass(frozen=True, order=True)
class Reference:
    """A line outside the wave's own files that refers to its Flux Kustomization."""

    path: str
    line: int
    what: str
    key: str = field(default="", compare=False)
    """The top-level list the line is an item of (resources, patches, ...)."""
    index: int = field(default=-1, compare=False)
    text: str = field(default="", compare=False)
    """The item's first line, as written."""
    file: str = field(default="", compare=False)
    """For a patch file: its repository path."""

    @property
    def item(self) -> Item:
        return Item(self.path, self.key, self.index)


def _why_removable(wave: Slot) -> str:
    return "holds no non-gating unit now" if isinstance(wave, Side) else "is beyond the deepest wave"


def wave_removed_finding(
    base: Inventory, wave: Slot, config: Config, references: Sequence[Reference] = (), removed: bool = False
) -> Finding:
    """The info finding for a wave wave-bot deletes; `references` are the lines to delete with it
    (`removed`: wave-bot deletes them too, with --fix-overlays)."""
    cr = config.wave_cr_name(wave)
    refs = sorted(references)
    listed = "; ".join(f"{r.path}:{r.line} ({r.what})" for r in refs)
    if refs and removed:
        unused = sorted({r.file for r in refs if r.file})
        left = (f". {', '.join(unused)} {'is' if len(unused) == 1 else 'are'} no longer used; wave-bot did not write "
                f"{'it' if len(unused) == 1 else 'them'}, so delete {'it' if len(unused) == 1 else 'them'} yourself"
                if unused else "")
        also = f", and removes the lines that refer to it: {listed}{left}"
    elif refs:
        also = f"; also delete {listed}"
    else:
        also = ""
    return Finding(
        code="wave-removed",
        severity="info",
        message=f"wave {wave} was already empty at base and "
                f"{_why_removable(wave)}, "
                f"so wave-bot deletes "
                f"{config.wave_dir(wave)}/ and {config.wave_cr_path(wave)}: {cr} owns nothing, so deleting it "
                f"deletes nothing{also}",
        path=config.wave_cr_path(wave),
        wave=wave,
        resource=_wave_cr_resource(base, config, wave),
        fix=None if removed else "\n".join(f"{r.path}:{r.line}" for r in refs) or None,
    )


def wave_removable_finding(base: Inventory, wave: Slot, config: Config, references: Sequence[Reference]) -> Finding:
    """`wave-removable`: the wave could go, but lines outside its files refer to it (no --fix-overlays).

    Deleting only the wave's files would leave those lines pointing at nothing and break the
    overlays, so wave-bot keeps the wave; deleting the lines is the step, the next apply deletes it.
    """
    cr = config.wave_cr_name(wave)
    refs = sorted(references)
    quoted = "; ".join(f"{r.path}:{r.line} `{r.text.strip()}` ({r.what})" for r in refs)
    how = ("Delete those items (wave-bot does not edit a Flux Kustomization's own spec.patches, so "
           "`--fix-overlays` leaves the wave in place)" if any(not r.key for r in refs) else
           "Delete those items (or run `wave-bot apply --fix-overlays`)")
    return Finding(
        code="wave-removable",
        severity="info",
        message=f"wave {wave} was already empty at base and {_why_removable(wave)}, so it can go ({cr} owns "
                f"nothing), but these lines refer to it and deleting the wave alone would break the builds: "
                f"{quoted}. {how}; the next apply then "
                f"deletes {config.wave_dir(wave)}/ and {config.wave_cr_path(wave)}",
        path=refs[0].path,
        line=refs[0].line,
        wave=wave,
        resource=_wave_cr_resource(base, config, wave),
        fix="\n".join(f"{r.path}:{r.line}: {r.text.strip()}" for r in refs),
    )


def wave_references(tree: Tree, config: Config, wave: Slot) -> tuple[Reference, ...]:
    """Where `tree` refers to wave `wave`'s Flux Kustomization outside its own file.

    The base kustomization's `resources` entry, every patch aimed at that Kustomization alone
    (inline, a patch file, or a target naming it) in the kustomizations the overlays build with, and
    such patches in the `spec.patches` of a Flux Kustomization that builds the base or an overlay.
    """
    return waves_references(tree, config, (wave,))[wave]


def waves_references(tree: Tree, config: Config, waves: Sequence[Slot]) -> dict[Slot, tuple[Reference, ...]]:
    """`wave_references` of each of `waves`, reading the kustomizations and evaluation paths once."""
    if not waves:
        return {}
    model = read_kustomizations(tree, clusters_dir(config))
    used = _overlay_kustomizations(tree, config, model)
    paths = evaluation_paths(tree, config)
    out = {}
    for wave in waves:
        cr = config.wave_cr_name(wave)
        out[wave] = tuple(sorted({*_kustomization_references(tree, config, model, used, cr, config.wave_cr_path(wave)),
                                  *_flux_patch_references(tree, paths, cr)}))
    return out


def _flux_patch_references(tree: Tree, paths: Sequence[EvalPath], cr: str) -> list[Reference]:
    """The patches aimed at the Flux Kustomization `cr` alone in another Flux Kustomization's own
    `spec.patches`, on the evaluation paths the checks build (kustomize-controller appends them to
    the build of its spec.path). Their `key` is empty: wave-bot does not edit them, since they sit
    inside a Flux Kustomization (often in a multi-document file), not in a top-level list."""
    found: list[Reference] = []
    for path in paths:
        adds = path.additions
        if adds is None:
            continue
        patches = adds.value.get("patches")
        for i, entry in enumerate(patches if isinstance(patches, list) else []):
            try:
                use = read_patch(tree, adds, "patches", i, entry)
            except WaveBotError:
                continue  # kustomize-controller fails on it; the overlay checks report it
            if PatchEntry(use).aims_only_at(FLUX_GROUP, "Kustomization", cr):
                owner = path.flux.name if path.flux is not None else adds.path
                found.append(Reference(use.file, use.line, f"spec.patches[{i}] of the Flux Kustomization {owner}",
                                       "", i, _line_text(tree, use.file, use.line)))
    return found


def kustomization_references(tree: Tree, config: Config, cr: str, path: str) -> tuple[Reference, ...]:
    """Where `tree` refers to the Flux Kustomization `cr`, defined in `path`, outside that file:
    read from the one model of the repository's kustomizations (any kustomization file name)."""
    model = read_kustomizations(tree, clusters_dir(config))
    used = _overlay_kustomizations(tree, config, model)
    return tuple(sorted(set(_kustomization_references(tree, config, model, used, cr, path))))


def _kustomization_references(tree: Tree, config: Config, model: Kustomizations, used: set[str], cr: str,
                              path: str) -> list[Reference]:
    """`kustomization_references` in `model`; `used` are the kustomization files the overlays read."""
    found: list[Reference] = []
    base = model.in_directory(config.base_dir)
    for ref in model.references:
        if base is not None and ref.kustomization == base.path and ref.role == "resource" and ref.path == path:
            found.append(Reference(base.path, ref.line, f"resource {ref.written}", ref.key, ref.index,
                                   _line_text(tree, base.path, ref.line)))
    for entry in model.patches_aimed_only_at(FLUX_GROUP, "Kustomization", cr):
        use = entry.use
        if use.file not in used:
            continue
        file = ""
        if use.target is not None:
            what = f"patch targeting {cr}"
        elif use.path is not None:
            what, file = f"patch file {posixpath.relpath(use.path, posixpath.dirname(use.file))}", use.path
        else:
            what = f"inline patch for {cr}"
        found.append(Reference(use.file, use.line, what, use.field, use.index, _line_text(tree, use.file, use.line),
                               file))
    return found


def _overlay_kustomizations(tree: Tree, config: Config, model: Kustomizations) -> set[str]:
    """The kustomization files the overlays read: each overlay's own, its components', its parents'."""
    used: set[str] = set()
    for overlay in discover_overlays(tree, config):
        try:
            used.update(build(tree, overlay).kustomizations)
        except WaveBotError:  # what cannot be built still has its own kustomization
            own = model.in_directory(overlay)
            used.update([own.path] if own is not None else [])
    return used


def _line_text(tree: Tree, path: str, line: int) -> str:
    lines = tree.read(path).decode(errors="replace").splitlines()
    return lines[line - 1] if 0 < line <= len(lines) else ""


__all__ = [
    "Reference", "duplicate_findings", "gone_findings", "hazard_findings", "invalid_prune_findings", "is_stateful",
    "kustomization_references", "kustomization_removed_findings", "move_findings", "namespace_findings",
    "owner_findings", "removable_waves", "shared_findings", "stateful_entry", "wave_emptied_findings",
    "wave_references", "wave_removable_finding", "wave_removed_finding", "waves_references",
]
