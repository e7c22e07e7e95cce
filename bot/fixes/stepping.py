"""The next safe step of a move that would lose data (the cutover's principle, for every move).

A file moving to a later wave is deleted by its old wave before the new one recreates it, unless
the live objects carry `kustomize.toolkit.fluxcd.io/prune: disabled`. When that is a data-loss
error, `apply` does not move the file: it keeps it where it is and adds the annotation to exactly
the objects the move would delete (bot/fixes/protect.py). Once that is deployed (at the base revision)
the move is safe and the next `apply` makes it. A SOPS-encrypted file is never edited (its MAC
covers every value), so there the move is held and the report gives the `kubectl annotate`
commands; an acceptance (bot/checks/acceptance.py) of the move then lets it through.

The unit's other files (a SOPS Secret beside its app file) wait with it, but their own move loses
no data: their content is in git, so they get no finding of their own and never an acceptance
demand; the unit's `move-held` names them, and their move is at most a warning about the gap.
"""
from __future__ import annotations

import posixpath
import shlex
from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

from bot.config import Config
from bot.errors import WaveBotError
from bot.fixes.protect import MARK, ManifestSetsPrune, protect
from bot.flux.stateful import is_stateful
from bot.flux.vocabulary import PRUNE_DISABLED, PRUNE_KEY
from bot.layout.placement import AppFile
from bot.model import Change, Finding, FindingObject, at_risk
from bot.repo.tree import Tree
from bot.resid import ResourceId
from bot.yamlio import documents as yamlio


class Hold(NamedTuple):
    """Why one file's move is held."""

    objects: frozenset[str]
    """The objects (str of their id) its move would delete."""
    losing: bool
    """Its own move loses data; False for a file held only because its unit waits."""
    at_risk: tuple[FindingObject, ...] = ()
    """What its move would delete, as the findings that hold it list it (what a child Kustomization's
    or a release's deletion takes along included), data loss first."""


Held = Mapping[str, Hold]
"""Path of a file whose move is held -> why."""


def unsafe_moves(findings: Sequence[Finding], files: Sequence[AppFile],
                 applies: Callable[[], Mapping[str, frozenset[str]]] | None = None) -> dict[str, Hold]:
    """The moving files with a data-loss `later-wave-move`, and every object their move deletes;
    with them the other moving files of their units (not `losing`). `applies` gives moving unit
    directory -> the objects (str of their id) its build applies, for an object defined outside it
    (a base or component its kustomization names), whose finding stands at that outside file; it
    is called only for such a finding, at most once (building every moving unit is costly)."""
    # A move's finding stands at the deployed (source) file, where its fix goes; at the destination
    # when the report has no source to point at.
    moving = {**{f.target: f for f in files if f.moves}, **{f.path: f for f in files if f.moves}}
    deleted: dict[str, set[str]] = {}
    objects: dict[str, list[FindingObject]] = {}
    losing: set[str] = set()
    built: list[tuple[str, frozenset[str]]] | None = None
    for finding in findings:
        if finding.code != "later-wave-move" or finding.severity == "info" or not finding.resource:
            continue
        file = moving.get(finding.path or "") or _unit_directory(finding.path, moving)
        if file is None and applies is not None:
            built = sorted(applies().items()) if built is None else built
            file = next((moving[path] for path, ids in built if finding.resource in ids and path in moving), None)
        if file is None:
            continue
        deleted.setdefault(file.path, set()).add(finding.resource)
        objects.setdefault(file.path, []).extend(finding.objects)
        if finding.severity == "error":
            losing.add(file.path)
    # The whole unit waits together: a companion (its SOPS Secret) moving alone would put the unit
    # in two waves for a merge and have Flux delete and recreate the companion's objects.
    units = {moving[p].node for p in losing if moving[p].node is not None}
    held = losing | {f.path for f in files if f.moves and f.node in units}
    return {path: Hold(frozenset(deleted.get(path, ())), path in losing, at_risk(objects.get(path, ())))
            for path in sorted(held)}


def _unit_directory(path: str | None, moving: Mapping[str, AppFile]) -> AppFile | None:
    """The moving directory unit a finding's file lies in: its findings name the files inside it,
    and the unit moves (or waits) as one `git mv`."""
    while path and "/" in path:
        path = posixpath.dirname(path)
        found = moving.get(path)
        if found is not None and found.is_dir:
            return found
    return None


def _parse(name: str) -> ResourceId:
    """A finding's resource name (`str(ResourceId)`: `[group/]Kind [namespace/]name`) as an id."""
    kind, _, where = name.partition(" ")
    group, _, kind = kind.rpartition("/")
    namespace, _, obj = where.rpartition("/")
    return ResourceId(group, kind, namespace, obj)


def kubectl_annotate(rid: ResourceId) -> str:
    what = f"{rid.kind.lower()}{'.' + rid.group if rid.group else ''}/{rid.name}"
    return f"kubectl{f' -n {rid.namespace}' if rid.namespace else ''} annotate {what} {PRUNE_KEY}={PRUNE_DISABLED}"


def _is_sops(data: bytes, path: str, docs: Sequence[yamlio.Document]) -> bool:
    return ".sops." in posixpath.basename(path) or any(isinstance(d.value, dict) and "sops" in d.value for d in docs)


def hold(tree: Tree, config: Config, held: Held, targets: Mapping[str, AppFile]) -> tuple[list[Change], list[Finding]]:
    """The annotation edits for the held files and one `move-held` finding per file whose own move
    loses data (naming the unit's files that wait with it); `targets` are the held files as placed
    before the hold (where each is, and where it belongs)."""
    changes = []
    found: dict[str, tuple[list[ResourceId], str]] = {}  # path -> (the objects, why it is not annotated)
    by_hand: dict[str, ManifestSetsPrune] = {}  # the file sets another prune value: only its own edit lasts
    for path, (names, *_) in sorted(held.items()):
        if tree.kind(path) == "dir":
            # Its objects are what its kustomization builds (namespace, patches), not what each file
            # says: an annotation edit inside it could miss them, so the live objects are annotated.
            found[path] = sorted(_parse(n) for n in names), ("it is a unit directory, whose objects its "
                                                             "kustomization builds: wave-bot edits no file in it")
            continue
        data = tree.read(path)
        docs = yamlio.load(data, path)
        ids = {str(r): r for r in (ResourceId.of_object(d.value) for d in docs if isinstance(d.value, dict))}
        rids = sorted(ids[n] for n in names if n in ids)
        why = ""
        edited: bytes | None = None
        if _is_sops(data, path, docs):
            why = "it is SOPS-encrypted, and editing it would break its MAC"
        else:
            try:
                edited = protect(data, path, rids)
            except ManifestSetsPrune as exc:
                by_hand[path] = exc
            except WaveBotError as exc:
                why = f"wave-bot cannot edit it safely ({exc.message})"
        if edited is not None and edited != data:
            changes.append(Change("update", path, content=edited))
        found[path] = rids, why
    findings = []
    for path, reason in sorted(held.items()):
        if not reason.losing:
            continue
        node = targets[path].node
        waiting = [_waits(p, targets[p], *found[p], config) for p, other in sorted(held.items())
                   if not other.losing and node is not None and targets[p].node == node]
        # What the move would delete: the objects annotated, and what their deletion takes along (the
        # claims of a child Kustomization or a release), as the findings that hold it list them.
        objects = at_risk([*(FindingObject.of(r, is_stateful(r, config)) for r in found[path][0]), *reason.at_risk])
        if path in by_hand:
            findings.append(_edit_by_hand(path, targets[path], found[path][0], by_hand[path], config, objects))
            continue
        findings.append(_held_finding(path, targets[path], *found[path], config, waiting, objects))
    return changes, findings


def _edit_by_hand(path: str, source: AppFile, rids: Sequence[ResourceId], exc: ManifestSetsPrune,
                  config: Config, risk: tuple[FindingObject, ...] = ()) -> Finding:
    """The held move of a file that sets the prune annotation to another value itself: a live
    `kubectl annotate` would be undone by the next reconcile, so the fix is the file's own value."""
    return Finding(
        code="move-held", severity="warning", path=path, line=exc.line, wave=source.wave,
        resource=str(rids[0]) if rids else None, objects=risk,
        message=f"{_moving(path, source, rids, config, risk)}, and adds no annotation: {exc.message}. Once that is "
                "deployed the next run moves the file",
        fix=f"metadata:\n  annotations:\n    {PRUNE_KEY}: {PRUNE_DISABLED}\n",
    )


def _waits(path: str, source: AppFile, rids: Sequence[ResourceId], why: str, config: Config) -> str:
    """What the held finding says of a file of the unit that waits with it (its own move loses no data)."""
    if not rids:
        return path
    objects = ", ".join(f"`{r}`" for r in rids)
    if not why:
        return f"{path} (this change annotates its {objects} too)"
    old_cr = config.wave_cr_name(source.wave) if source.wave is not None else "its Kustomization"
    commands = "; ".join(f"`{kubectl_annotate(r)}`" for r in rids)
    # Not data loss (the content is in git), so no acceptance: only the gap, and how to avoid it.
    them = "them" if len(rids) > 1 else "it"
    return (f"{path}, which gets no annotation ({why}): when it moves, {old_cr} deletes {objects} and the new "
            f"wave recreates {them} from git, so no data is lost but {them} {'are' if len(rids) > 1 else 'is'} "
            f"missing in between; to avoid that, annotate the live {'objects' if len(rids) > 1 else 'object'} "
            f"before that merge: {commands}")


def _moving(path: str, source: AppFile, rids: Sequence[ResourceId], config: Config,
            risk: Sequence[FindingObject] = ()) -> str:
    """The held finding's first sentence: where the file belongs, what its move would delete now."""
    old_cr = config.wave_cr_name(source.wave) if source.wave is not None else "its Kustomization"
    new_cr = config.wave_cr_name(source.target_wave) if source.target_wave is not None else "its new wave"
    objects = ", ".join(f"`{r}`" for r in rids)
    losing = ", ".join(f"`{o}`" for o in risk if o.loses_data) if risk else \
        ", ".join(f"`{r}`" for r in rids if is_stateful(r, config))
    loss = f" (data loss for {losing})" if losing else ""
    return (f"{path} belongs in wave {source.target_wave} ({source.target}), but moving it now makes {old_cr} "
            f"delete {objects} before {new_cr} recreates them{loss}. So wave-bot does not move it yet")


def _held_finding(path: str, source: AppFile, rids: Sequence[ResourceId], why: str, config: Config,
                  waiting: Sequence[str] = (), risk: tuple[FindingObject, ...] = ()) -> Finding:
    here = f"wave {source.wave}" if source.wave is not None else f"{config.apps_dir}/"
    old_cr = config.wave_cr_name(source.wave) if source.wave is not None else "its Kustomization"
    new_cr = config.wave_cr_name(source.target_wave) if source.target_wave is not None else "its new wave"
    objects = ", ".join(f"`{r}`" for r in rids)
    also = f". Its unit's other files wait and then move with it: {'; '.join(waiting)}" if waiting else ""
    moving = _moving(path, source, rids, config, risk)
    commands = "\n".join(kubectl_annotate(r) for r in rids)
    if why:
        # Then the acceptance, as `wave-bot accept` writes it (the name is the user's to fill in).
        commands += " \\\n  ".join(["\nwave-bot accept --by '<your name>'",
                                    *(shlex.quote(str(r)) for r in rids)])
        return Finding(
            code="move-held", severity="warning", path=path, wave=source.wave, resource=str(rids[0]) if rids else None,
            objects=risk,
            message=f"{moving}, and adds no annotation: {why}. To go on: annotate the live objects with the "
                    f"commands in the fix, then accept the move for each of them in .wave-bot-accept.yaml "
                    f"(the fix's `wave-bot accept` command writes the entries) and run wave-bot again: it then "
                    f"moves the {'directory' if source.is_dir else 'file'}. Once "
                    f"{new_cr} owns them, remove the annotation (the same commands with `{PRUNE_KEY}-`){also}",
            fix=commands,
        )
    return Finding(
        code="move-held", severity="warning", path=path, wave=source.wave, resource=str(rids[0]) if rids else None,
        objects=risk,
        message=f"{moving}: this change only adds `{PRUNE_KEY}: {PRUNE_DISABLED}` to {objects} in {path}, and the "
                f"file stays in {here}. Next: merge it, wait until {old_cr} has reconciled it (`flux get "
                f"kustomization {old_cr}`), then run wave-bot again (`wave-bot apply --base <the deployed "
                f"revision>`, or push to the pull request): the annotation is then deployed and the move is "
                f"safe. Once {new_cr} owns them, remove the annotation in a change of its own if Flux should "
                "garbage-collect them again (once that move is deployed, wave-bot names the lines: "
                f"annotation-removable){also}",
    )


def removable(tree: Tree, base: Tree, files: Sequence[AppFile], config: Config) -> list[Finding]:
    """`annotation-removable` for every file whose annotation lines a `move-held` step added (marked
    `MARK`) are deployed where the file stays: at base in its place, with those lines, and not moving
    now. Reported, never removed: whether Flux should garbage-collect the objects again is the
    user's call, and an annotation without the mark may be theirs."""
    findings = []
    for file in files:
        if file.is_dir or file.moves or file.wave is None or base.kind(file.path) != "file" \
                or tree.kind(file.path) != "file":
            continue
        data = tree.read(file.path)
        if MARK.encode() not in data:
            continue
        deployed = set(base.read(file.path).decode().splitlines())
        lines = data.decode().splitlines()
        marked: list[tuple[ResourceId, list[int]]] = []
        for doc in yamlio.load(data, file.path):
            meta = doc.value.get("metadata") if isinstance(doc.value, dict) else None
            annotations = meta.get("annotations") if isinstance(meta, dict) else None
            at = doc.info.lines.get(("metadata", "annotations", PRUNE_KEY))
            rid = ResourceId.of_object(doc.value) if isinstance(doc.value, dict) else None
            if rid is None or at is None or not isinstance(annotations, dict) \
                    or not lines[at - 1].rstrip().endswith(MARK) or lines[at - 1] not in deployed:
                continue
            head = doc.info.lines.get(("metadata", "annotations"))
            # The `annotations:` line goes too when the annotation is all it holds (protect added both then).
            marked.append((rid, [head, at] if len(annotations) == 1 and head is not None else [at]))
        if marked:
            findings.append(_removable(file, marked, lines, config))
    return findings


def _removable(file: AppFile, marked: Sequence[tuple[ResourceId, Sequence[int]]], lines: Sequence[str],
               config: Config) -> Finding:
    cr = config.wave_cr_name(file.wave) if file.wave is not None else "its wave"
    drop = [n for _, numbers in marked for n in numbers]
    objects = ", ".join(f"`{rid}`" for rid, _ in marked)
    return Finding(
        code="annotation-removable", severity="info", path=file.path, line=drop[0], wave=file.wave,
        message=f"wave-bot added `{PRUNE_KEY}: {PRUNE_DISABLED}` to {objects} for the move of {file.name} (the "
                f"lines end `{MARK}`), and the file is deployed in wave {file.wave}: once `flux get kustomization "
                f"{cr}` shows this revision applied, {cr} owns them and the annotation has done its job. If Flux "
                f"should garbage-collect them again, delete lines {', '.join(map(str, drop))} of {file.path} in a "
                "change of its own (nothing else changes); to keep them protected, delete only the comments",
        fix="".join(f"# {file.path}:{n}, delete:\n{lines[n - 1]}\n" for n in drop),
    )


__all__ = ["Held", "Hold", "hold", "kubectl_annotate", "removable", "unsafe_moves"]
