"""What the linear chain of waves costs: who waits for whom without needing them.

Wave N's Flux Kustomization depends on wave N-1's, which is health-gated as a whole (`wait: true`),
so every unit of wave N (and of its side branch) waits until every unit of wave N-1 is ready, also
the ones it has no dependency path to. A crashloop in one of those holds wave N and everything
after it (design doc §6, risk 2). This module names those waits per wave boundary, and the units of
the wave below that nothing above needs: the candidates for `non_gating`.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping

from bot.config import Config
from bot.model import Finding
from bot.side import Side, Slot, number
from bot.waves import WaveGraph

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


def chain_findings(graph: WaveGraph, units: Mapping[Slot, list[str]], config: Config) -> list[Finding]:
    """`chain-gating` (info), one per wave boundary N-1 -> N where a unit of wave N (or of its side
    branch) waits for units of wave N-1 it has no dependency path to. `units` are the placed units
    of each wave and side branch."""
    depended_on = {d for node in graph.nodes.values() for d in node.dependencies}
    findings = []
    for n in sorted({number(slot) for slot in units}):
        below = set(units.get(n - 1, ())) if n > 0 else set()
        if not below:
            continue
        waiting = [u for slot in (n, Side(n)) for u in units.get(slot, ())]
        needed = {u: sorted(below & reached(graph, u, n - 1)) for u in waiting}
        needed = {u: found for u, found in needed.items() if len(found) < len(below)}
        if needed:
            findings.append(_finding(n, len(below), needed, sorted(below - depended_on), config))
    return findings


def _names(names: Iterable[str], sep: str = ", ") -> str:
    names = list(names)
    shown = sep.join(names[:NAMES_SHOWN])
    return shown + (f" and {len(names) - NAMES_SHOWN} more" if len(names) > NAMES_SHOWN else "")


def _finding(n: int, count: int, needed: Mapping[str, list[str]], gate_for_nothing: list[str],
             config: Config) -> Finding:
    """`needed`: each unit of wave n that does not need all of wave n-1 -> what it does need there."""
    parts = [f"{u} {'needs ' + _names(d) if d else 'needs none of them'}" for u, d in sorted(needed.items())]
    message = (f"{config.wave_cr_name(n)} waits until all {count} units of wave {n - 1} are ready, but "
               f"{len(needed)} unit(s) of wave {n} need only some of them and wait for the rest only because of the "
               f"linear chain: {_names(parts, '; ')}")
    fix = None
    if gate_for_nothing:
        message += (f". Nothing depends on {_names(gate_for_nothing)}, yet a crashloop in "
                    f"{'it' if len(gate_for_nothing) == 1 else 'one of them'} holds wave {n} and every wave after "
                    f"it: list what need not gate in non_gating in {config.source}, and it moves to a side "
                    "branch that gates nobody")
        listed = [*config.non_gating, *(u for u in gate_for_nothing if u not in config.non_gating)]
        fix = "non_gating:\n" + "".join(f"  - {u}\n" for u in listed)
    return Finding(code="chain-gating", severity="info", message=message, wave=n, fix=fix)
