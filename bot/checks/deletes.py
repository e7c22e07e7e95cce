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

from bot.checks.codes import DELETING
from bot.checks.prune import invalid_prune_findings
from bot.checks.removal import wave_emptied_findings
from bot.config import Config
from bot.fixes.stepping import kubectl_annotate
from bot.flux.inventory import FluxKustomization, Inventory, Resource, ResourceId, WaveFile
from bot.flux.ownership import Copy, Ownership, may_prune, ownership
from bot.flux.stateful import data_loss, is_stateful
from bot.flux.vocabulary import FLUX_GROUP, PRUNE_DISABLED, PRUNE_KEY
from bot.model import Finding, FindingObject
from bot.side import Slot, number, ready_before

PRUNE_SNIPPET = f"metadata:\n  annotations:\n    {PRUNE_KEY}: {PRUNE_DISABLED}\n"
PRUNE_FALSE_SNIPPET = "spec:\n  prune: false\n"
ORPHAN_SNIPPET = "spec:\n  deletionPolicy: Orphan\n"


# What deleting and recreating a plain object costs (`bot.checks.cascade` replaces it for owners).
RESTART = "it is missing in between (a restart, and an outage of what needs it)"


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
        *tier_owner_findings(owned_base, owned_now),
        *kustomization_removed_findings(base, now, config, owned_base),
        *wave_emptied_findings(base, now, config),
    ]
    findings += namespace_findings(findings, owned_base, config)
    return sorted(findings, key=lambda f: (f.sort_key(), f.line or 0))


def _wave_prunes(ob: Ownership, on: Ownership, wave: Slot) -> bool:
    """Whether the Flux Kustomization that applied wave `wave` at base may garbage-collect what leaves
    it (with either spec). When none in view applied its directory there, one wave-bot cannot see
    did, which is taken as pruning: not one that merely bears the wave's name, or applies it now."""
    owner = ob.wave_owner.get(wave)
    return owner is None or may_prune(ob, on, owner)


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
            resource=str(rid), objects=(FindingObject.of(rid),),
        ))
    return findings


# ---- objects moving between waves ---------------------------------------------------------------


def move_findings(base: Inventory, now: Inventory, config: Config, ob: Ownership, on: Ownership) -> list[Finding]:
    """`later-wave-move` and `earlier-wave-move` for every object that changes wave.

    An object still defined in one of its base waves does not move (`owner_findings` checks the
    copies it leaves). Otherwise the earliest wave applying it now is compared with the earliest
    wave that applied it at base: if it is later, the old wave prunes before the new one adopts,
    unless its Flux Kustomization does not prune (with either its old or its new spec). Objects that
    a Kustomization other than a wave applies, at base or now, are left to `owner_findings`.
    """
    findings = []
    sealed = {f.path for f in base.files if f.sops}
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
        elif _wave_prunes(ob, on, old.wave):
            protected = all(r.prune_disabled for r in base_found)
            findings.append(_later(rid, old, new, protected, config, old.path in sealed))
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
        resource=str(rid), objects=(FindingObject.of(rid),),
    )


def _later(rid: ResourceId, old: Resource, new: Resource, protected: bool, config: Config,
           sealed: bool = False) -> Finding:
    """`sealed`: the deployed file is SOPS-encrypted, so the annotation can only go on the live object."""
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
            path=new.path, line=new.line, wave=new.wave, resource=str(rid), objects=(FindingObject.of(rid),),
        )
    stateful = is_stateful(rid, config)
    cost = data_loss(rid, config) if stateful else RESTART
    late = (f" The annotation this change adds comes too late: the live object does not carry it when "
            f"{old_cr} prunes." if new.prune_disabled else "")
    if sealed:
        return _later_sealed(rid, old, new, stateful, f"{moves}: {old_cr} deletes it as soon as it reconciles this "
                             f"change, and {recreates}, so {cost}.", config)
    return Finding(
        code="later-wave-move",
        severity="error" if stateful else "warning",
        message=f"{moves}: {old_cr} deletes it as soon as it reconciles this change, and {recreates}, "
                f"so {cost}.{late} Safe procedure: first merge a "
                f"change that only adds the annotation `{PRUNE_KEY}: {PRUNE_DISABLED}` to {rid} in {old.path}, "
                f"wait until {old_cr} has reconciled it (`flux get kustomization {old_cr}`), then make this move",
        # Where the fix goes: the annotation is merged in the file as deployed, before it moves.
        path=old.path, line=old.line, wave=new.wave, resource=str(rid),
        objects=(FindingObject.of(rid, stateful),), fix=PRUNE_SNIPPET,
    )


def _later_sealed(rid: ResourceId, old: Resource, new: Resource, stateful: bool, deletes: str,
                  config: Config) -> Finding:
    """A later-wave move out of a SOPS-encrypted file, which cannot carry the annotation (its MAC
    covers every value): the only protection is the annotation on the live object."""
    new_cr = config.wave_cr_name(new.wave)
    sealed = (f"{old.path} is SOPS-encrypted, so it cannot carry `{PRUNE_KEY}: {PRUNE_DISABLED}` (editing it breaks "
              "its MAC)")
    undo = f"once {new_cr} owns it, remove the annotation (the same command with `{PRUNE_KEY}-`)"
    if stateful:
        how = (f"Safe procedure: annotate the live object (the command in the fix), then accept this move for {rid} "
               f"in .wave-bot-accept.yaml (resource and by:, see docs/guides/deleting-on-purpose.md); {undo}")
    else:
        # A Secret whose content is in git comes back as it was: the gap is the cost, not the data,
        # so this is no error and asks for no acceptance.
        how = (f"Its content is in git, so no data is lost. To avoid the gap, annotate the live object before this "
               f"merges (the command in the fix); {undo}")
    return Finding(
        code="later-wave-move", severity="error" if stateful else "warning",
        message=f"{deletes} {sealed}. {how}",
        path=old.path, line=old.line, wave=new.wave, resource=str(rid),
        objects=(FindingObject.of(rid, stateful),), fix=kubectl_annotate(rid),
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
        objects=(FindingObject.of(rid),),
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
            path=new.path, line=new.line, wave=new.wave, resource=str(rid), objects=(FindingObject.of(rid),),
        )
    stateful = is_stateful(rid, config)
    cost = data_loss(rid, config) if stateful else RESTART
    return Finding(
        code=code,
        severity="error" if stateful else "warning",
        message=f"{moves}: {order}, so {cost}. Safe procedure: first merge a change that only adds the "
                f"annotation `{PRUNE_KEY}: {PRUNE_DISABLED}` to {rid} in {old.path}, wait until {old.owner} has "
                f"reconciled it (`flux get kustomization {old.owner}`), then make this move",
        path=old.path, line=old.line, wave=new.wave, resource=str(rid),
        objects=(FindingObject.of(rid, stateful),), fix=PRUNE_SNIPPET,
    )


# ---- a deleted Namespace takes everything in it -------------------------------------------------


def namespace_findings(findings: Sequence[Finding], base: Ownership, config: Config) -> list[Finding]:
    """`namespace-deleted` for every object in a Namespace that one of `findings` says Flux deletes.

    Kubernetes deletes a namespace's objects with it whatever Flux's annotations say, even those
    another Kustomization still applies.
    """
    deleted = {f.resource: f for f in findings if f.code in DELETING and f.severity == "error"}
    if not any(r is not None and r.startswith("Namespace ") for r in deleted):
        return []
    said: dict[str | None, list[Finding]] = {}
    for f in findings:
        if f.code in DELETING:
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
        cost = f": {data_loss(rid, config)}" if stateful else ""
        out.append(Finding(
            code="namespace-deleted",
            severity="error" if stateful else "warning",
            message=f"{rid} ({copies[0].path}:{copies[0].line}) is in Namespace {rid.namespace}, which this change "
                    f"deletes ({cause.code}, {cause.path}): Kubernetes deletes everything in a namespace with "
                    f"it, whichever Kustomization applies it{cost}. Keep the Namespace where it is",
            path=copies[0].path, line=copies[0].line, wave=copies[0].wave, resource=str(rid),
            objects=(FindingObject.of(rid, stateful),),
        ))
    return out


# ---- objects leaving every wave ------------------------------------------------------------------


def gone_findings(base: Inventory, now: Inventory, config: Config, ob: Ownership, on: Ownership) -> list[Finding]:
    """`resource-dropped` / `resource-removed` for every object at base that no wave applies now.

    Files are tracked by their place below their wave (or the apps directory), because wave-bot's
    moves keep it: when a file is still at that place (applied or not), the object was dropped rather
    than deleted on purpose. Not by name alone: directory units often share file names
    (`deployment.yaml`). A wave whose Flux Kustomization does not prune leaves the object in the
    cluster, unmanaged.
    """
    places: dict[str, list[str]] = {}
    for path in sorted([*(f.path for f in now.files), *(f.path for f in now.stray)]):
        places.setdefault(_place(path, config), []).append(path)
    findings = []
    for rid, base_found in base.by_id.items():
        if rid in now.by_id or _elsewhere(rid, ob, on):
            continue
        old = base_found[0]
        protected = all(r.prune_disabled for r in base_found) or not _wave_prunes(ob, on, old.wave)
        kept = places.get(_place(old.path, config))
        if kept:
            findings.append(_dropped(rid, old, kept[0], now, protected, config))
        else:
            findings.append(_removed(rid, old, protected, config))
    return findings


def _place(path: str, config: Config) -> str:
    """`apps/wave-1/media/sonarr/app.yaml` -> `media/sonarr/app.yaml`: where a move keeps a file."""
    prefix = f"{config.apps_dir}/"
    if not path.startswith(prefix):
        return path  # a file a unit's build takes from outside the apps directory stays where it is
    rel = path[len(prefix):]
    head, _, rest = rel.partition("/")
    return rest if rest and config.slot_of_dir(head) is not None else rel


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
            path=path, wave=old.wave, resource=str(rid), objects=(FindingObject.of(rid),),
        )
    cost = data_loss(rid, config) if is_stateful(rid, config) else "it is deleted"
    return Finding(
        code="resource-dropped",
        severity="error",
        message=f"{rid} (wave {old.wave}, {_where(old)}) is in no wave any more although its file is kept: "
                f"{why}. {old_cr} deletes it when it reconciles: {cost}. Put it back; if Flux should delete "
                "it, delete it in a change of its own",
        path=path, wave=old.wave, resource=str(rid), objects=(FindingObject.of(rid, is_stateful(rid, config)),),
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
            path=old.path, line=old.line, wave=old.wave, resource=str(rid), objects=(FindingObject.of(rid),),
        )
    if not is_stateful(rid, config):
        return Finding(
            code="resource-removed",
            severity="info",
            message=f"{deleted}, so {old_cr} deletes {rid} when it reconciles",
            path=old.path, line=old.line, wave=old.wave, resource=str(rid), objects=(FindingObject.of(rid),),
        )
    return Finding(
        code="resource-removed",
        severity="error",
        message=f"{deleted}, so {old_cr} deletes {rid} when it reconciles: {data_loss(rid, config)}. If the data "
                f"must survive, first merge a change that only adds the annotation {PRUNE_KEY}: {PRUNE_DISABLED} "
                f"to it, wait until {old_cr} has reconciled it, then delete the file",
        path=old.path, line=old.line, wave=old.wave, resource=str(rid),
        objects=(FindingObject.of(rid, True),), fix=PRUNE_SNIPPET,
    )


_OWNERS = frozenset({(FLUX_GROUP, "Kustomization"), ("helm.toolkit.fluxcd.io", "HelmRelease")})


def tier_owner_findings(base: Ownership, now: Ownership) -> list[Finding]:
    """`resource-removed` for an owner (a Flux Kustomization or a HelmRelease) that a Kustomization
    other than a wave applied at base and no Kustomization applies now: the tier prunes it, and its
    deletion takes what it owns (`bot.checks.cascade` says what). Only owners: other objects leaving
    a tier that is not a wave are not judged (README, What it checks)."""
    findings = []
    for rid, copies in sorted(base.copies.items()):
        if (rid.group, rid.kind) not in _OWNERS or now.copies.get(rid):
            continue
        for copy in copies:
            if copy.wave is not None or now.prunes(copy.owner) is None or not may_prune(base, now, copy.owner):
                continue  # a wave's: gone_findings; its tier removed: kustomization-removed; never prunes
            gone = f"{copy.owner} no longer applies {rid} ({copy.path}:{copy.line} at base)"
            protected = all(c.prune_disabled for c in copies)
            findings.append(Finding(
                code="resource-removed",
                severity="info",
                message=(f"{gone}; it carries {PRUNE_KEY}: {PRUNE_DISABLED}, so Flux leaves it in the cluster, "
                         "unmanaged" if protected else f"{gone}, so it deletes it when it reconciles"),
                path=copy.path, line=copy.line, resource=str(rid), objects=(FindingObject.of(rid),),
            ))
            break
    return findings


# ---- Flux Kustomizations and waves ---------------------------------------------------------------


def kustomization_removed_findings(base: Inventory, now: Inventory, config: Config, ob: Ownership) -> list[Finding]:
    """`kustomization-removed`: a pruning Flux Kustomization at base that is gone now (the cutover).

    One that applied nothing at base owns nothing, so its finalizer deletes nothing: no finding.
    """
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
        resource=str(k.id), objects=(FindingObject.of(k.id),),
        fix=fix,
    )


__all__ = [
    "duplicate_findings", "gone_findings", "hazard_findings", "kustomization_removed_findings",
    "move_findings", "namespace_findings", "owner_findings", "shared_findings",
]
