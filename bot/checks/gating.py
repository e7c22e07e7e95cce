"""What the linear chain of waves costs: who waits for whom without needing them.

Wave N's Flux Kustomization depends on wave N-1's, which is health-gated as a whole (`wait: true`),
so every unit of wave N (and of its side branch) waits until every unit of wave N-1 is ready, also
the ones it has no dependency path to. A crashloop in one of those holds wave N and everything
after it (docs/design.md §5.1). This module names those waits per wave boundary, and the units of
the wave below that nothing above needs: the candidates for `non_gating`.
"""
from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence

from bot.config import Config
from bot.flux.inventory import Inventory
from bot.layout.placement import AppFile
from bot.layout.waves import WaveGraph
from bot.model import Finding
from bot.side import Side, Slot, number

NAMES_SHOWN = 12  # units named per list in one finding; the rest are counted


def reached(graph: WaveGraph, start: str, floor: int) -> set[str]:
    """The nodes `start` depends on, directly or not, down to wave `floor`.

    Dependencies sit in lower waves (an extra unit beside its anchor in the same one), so a path
    to wave `floor` never leaves the waves at or above it: the walk stays small on large graphs.
    """
    found: set[str] = set()
    todo = [start]
    while todo:
        for dep in graph.nodes[todo.pop()].dependencies:
            if dep not in found and graph.nodes[dep].wave >= floor:
                found.add(dep)
                todo.append(dep)
    return found


def stateful_units(files: Sequence[AppFile], inventory: Inventory, config: Config) -> dict[str, list[str]]:
    """Unit -> the kind of each of its objects whose deletion loses data, as `inventory` applies them."""
    from bot.flux.stateful import is_stateful  # hazards is large; only a plan with a suggestion needs it

    unit_of = {f.name: f.node for f in files if f.node is not None}
    out: dict[str, list[str]] = {}
    for file in inventory.files:
        unit = unit_of.get(file.name)
        if unit is None:
            continue
        for r in file.resources:
            if is_stateful(r.id, config):
                out.setdefault(unit, []).append(r.id.kind)
    return out


def chain_findings(graph: WaveGraph, units: Mapping[Slot, list[str]], config: Config,
                   stateful: Mapping[str, Sequence[str]] | None = None, moving: Collection[str] = ()) -> list[Finding]:
    """`chain-gating` (info), one per wave boundary N-1 -> N where a unit of wave N (or of its side
    branch) waits for units of wave N-1 it has no dependency path to. `units` are the placed units
    of each wave and side branch.

    The units nothing depends on are the candidates for `non_gating`; every boundary's go into one
    snippet (on the first finding that has any), since `non_gating` is one key: one snippet per
    boundary pasted together is a duplicate key. A unit in `moving` (its files change wave in this
    change) is left out until it has settled, and the units with `stateful` objects are named: taking
    them off the chain moves those objects to a side branch, a `later-wave-move`.
    """
    depended_on = {d for node in graph.nodes.values() for d in node.dependencies}
    found: list[tuple[int, int, dict[str, list[str]], list[str]]] = []
    for n in sorted({number(slot) for slot in units}):
        below = set(units.get(n - 1, ())) if n > 0 else set()
        if not below:
            continue
        waiting = [u for slot in (n, Side(n)) for u in units.get(slot, ())]
        needed = {u: sorted(below & reached(graph, u, n - 1)) for u in waiting}
        needed = {u: found for u, found in needed.items() if len(found) < len(below)}
        if needed:
            found.append((n, len(below), needed, sorted(below - depended_on)))
    candidates = sorted({u for *_, free in found for u in free if u not in moving and u not in config.non_gating})
    findings = []
    snippet_at = next((n for n, *_, free in found if set(free) & set(candidates)), None)
    carrying = [u for u in candidates if (stateful or {}).get(u)]
    for n, count, needed, free in found:
        fix = _snippet(candidates, stateful or {}, config) if n == snippet_at else None
        findings.append(_finding(n, count, needed, free, config, fix, snippet_at, moving, carrying))
    return findings


def _snippet(candidates: list[str], stateful: Mapping[str, Sequence[str]], config: Config) -> str:
    """`non_gating` as it is pasted into the config: what it lists already and every candidate, each
    stateful one with a comment naming what its move takes along."""
    rows = [f"  - {u}\n" for u in config.non_gating]
    for u in candidates:
        kinds = list(stateful.get(u, ()))
        counted = [f"{kinds.count(k)} {k}" if kinds.count(k) > 1 else k for k in dict.fromkeys(kinds)]
        note = f"  # later-wave-move of its {', '.join(counted)}" if kinds else ""
        rows.append(f"  - {u}{note}\n")
    return "non_gating:\n" + "".join(rows)


def _names(names: Iterable[str], sep: str = ", ") -> str:
    names = list(names)
    shown = sep.join(names[:NAMES_SHOWN])
    return shown + (f" and {len(names) - NAMES_SHOWN} more" if len(names) > NAMES_SHOWN else "")


def _finding(n: int, count: int, needed: Mapping[str, list[str]], gate_for_nothing: list[str],
             config: Config, fix: str | None, snippet_at: int | None, moving: Collection[str],
             carrying: Sequence[str]) -> Finding:
    """`needed`: each unit of wave n that does not need all of wave n-1 -> what it does need there."""
    parts = [f"{u} {'needs ' + _names(d) if d else 'needs none of them'}" for u, d in sorted(needed.items())]
    message = (f"{config.wave_cr_name(n)} waits until all {count} units of wave {n - 1} are ready, but "
               f"{len(needed)} unit(s) of wave {n} need only some of them and wait for the rest only because of the "
               f"linear chain: {_names(parts, '; ')}")
    if gate_for_nothing:
        message += (f". Nothing depends on {_names(gate_for_nothing)}, yet a crashloop in "
                    f"{'it' if len(gate_for_nothing) == 1 else 'one of them'} holds wave {n} and every wave after "
                    f"it: list what need not gate in non_gating in {config.source}, and it moves to a side "
                    "branch that gates nobody")
        if fix is not None:
            message += ". The snippet lists every wave boundary's candidates"
            if carrying:
                message += (f"; taking {_names(carrying)} off the chain moves their stateful objects (the snippet's "
                            "comments) to a side branch, a later-wave-move: once it is pasted, wave-bot reports "
                            "each with its safe procedure")
        elif snippet_at is not None:
            message += f" (the one snippet, under wave {snippet_at}'s note, lists every candidate)"
        held = sorted(set(gate_for_nothing) & set(moving))
        if held:
            message += (f". Not suggested while their files move in this change: {_names(held)}; suggest again once "
                        "that is merged")
    return Finding(code="chain-gating", severity="info", message=message, wave=n, fix=fix)
