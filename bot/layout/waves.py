"""The dependency graph and each node's wave: the longest dependency path below it."""
from __future__ import annotations

import dataclasses
import fnmatch
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from bot.config import Config, ExtraUnit
from bot.errors import WaveBotError
from bot.layout.catalog import Service
from bot.naming import did_you_mean, shown
from bot.side import Side, Slot

Origin = Literal["service", "leaf", "extra"]


@dataclass(frozen=True)
class Node:
    """A unit that gets a wave: a catalog service, a leaf it depends on, or an extra unit."""

    name: str
    wave: int
    origin: Origin
    dependencies: tuple[str, ...] = ()
    path: str | None = None  # the ServiceDefinition, for services
    gating: bool = True
    """False for a `non_gating` unit: it goes to its wave's side branch."""

    @property
    def slot(self) -> Slot:
        """The Flux Kustomization that applies it: its wave, or that wave's side branch."""
        return self.wave if self.gating else Side(self.wave)


@dataclass(frozen=True)
class WaveGraph:
    nodes: Mapping[str, Node]

    @property
    def max_wave(self) -> int | None:
        return max((n.wave for n in self.nodes.values()), default=None)

    def waves(self) -> dict[str, int]:
        return {name: node.wave for name, node in sorted(self.nodes.items())}

    def declared_in(self, config: Config) -> str | None:
        """The config file when its `dependencies` declare every unit (no ServiceDefinition), else None:
        the reports then must not speak of a catalog the repository does not have."""
        services = [n for n in self.nodes.values() if n.origin == "service"]
        return config.source if services and all(n.path == config.source for n in services) else None


def compute_waves(services: Iterable[Service], config: Config) -> WaveGraph:
    """Assign every node its wave. Raises WaveBotError for unknown dependencies and cycles."""
    import networkx as nx  # slow to import; only commands that compute waves pay for it

    by_name = {s.name: s for s in services}
    leaves = _leaves(by_name, config)
    graph = nx.DiGraph()
    graph.add_nodes_from(sorted([*by_name, *leaves]))
    graph.add_edges_from(
        (s.name, d.target) for s in sorted(by_name.values(), key=lambda s: s.name) for d in s.dependencies
    )
    if not nx.is_directed_acyclic_graph(graph):
        raise _cycle_error(nx.find_cycle(graph), by_name)
    wave: dict[str, int] = {}
    # Edges point from a service to what it needs, so reversed topological order visits needs first.
    for name in reversed(list(nx.topological_sort(graph))):
        wave[name] = 1 + max((wave[d] for d in graph.successors(name)), default=-1)
    nodes = {
        name: Node(
            name=name,
            wave=wave[name],
            origin="service" if name in by_name else "leaf",
            dependencies=tuple(sorted(d.target for d in by_name[name].dependencies)) if name in by_name else (),
            path=by_name[name].path if name in by_name else None,
        )
        for name in wave
    }
    nodes.update(_place_extra_units(config.extra_units, nodes, config))
    nodes = _mark_non_gating(nodes, config)
    return WaveGraph(dict(sorted(nodes.items())))


PATHS_SHOWN = 8  # dependents named in a non-gating error; the rest are counted


def _mark_non_gating(nodes: dict[str, Node], config: Config) -> dict[str, Node]:
    """The nodes with every `non_gating` unit marked. A unit another one depends on (directly, or
    as an extra unit's anchor) cannot be non-gating: its side branch is depended on by nobody, so
    the dependent could start before it is ready."""
    if not config.non_gating:
        return nodes
    lines = dict(zip(config.non_gating, config.non_gating_lines, strict=False))  # no lines: built in code
    needed_by: dict[str, list[str]] = {}
    for name, node in nodes.items():
        for dep in node.dependencies:
            needed_by.setdefault(dep, []).append(name)
    for name in config.non_gating:
        if name not in nodes:
            raise WaveBotError(
                f"non_gating lists {shown(name)}, which is no unit{did_you_mean(name, nodes)}",
                path=config.source, line=lines.get(name),
                hint="list catalog services or extra units by name",
            )
        paths = _dependent_paths(name, needed_by)
        if paths:
            shown_paths = "; ".join(" -> ".join(p) for p in paths[:PATHS_SHOWN])
            more = f"; and {len(paths) - PATHS_SHOWN} more" if len(paths) > PATHS_SHOWN else ""
            raise WaveBotError(
                f"non_gating lists '{name}', but {len(paths)} unit(s) depend on it (dependency paths: "
                f"{shown_paths}{more}). A non-gating unit gates nobody, so they could start before '{name}' is ready",
                path=config.source, line=lines.get(name),
                hint=f"remove '{name}' from non_gating, or remove the dependencies on it",
            )
    side = set(config.non_gating)
    return {name: dataclasses.replace(n, gating=False) if name in side else n for name, n in nodes.items()}


def _dependent_paths(name: str, needed_by: Mapping[str, list[str]]) -> list[list[str]]:
    """For every unit that (transitively) depends on `name`: a shortest path from it down to `name`."""
    paths: dict[str, list[str]] = {}
    frontier = [name]
    while frontier:
        following = []
        for current in frontier:
            for dependent in sorted(needed_by.get(current, ())):
                if dependent not in paths and dependent != name:
                    paths[dependent] = [dependent, *paths.get(current, [name])]
                    following.append(dependent)
        frontier = following
    return [paths[d] for d in sorted(paths, key=lambda d: (len(paths[d]), d))]


def _leaves(by_name: Mapping[str, Service], config: Config) -> set[str]:
    """Dependency targets without a ServiceDefinition; only `leaf_patterns` names may be one."""
    leaves = set()
    for service in by_name.values():
        for dep in service.dependencies:
            if dep.target in by_name:
                continue
            if any(fnmatch.fnmatchcase(dep.target, pattern) for pattern in config.leaf_patterns):
                leaves.add(dep.target)
                continue
            raise WaveBotError(
                f"'{service.name}' depends on '{dep.target}', which has no ServiceDefinition"
                f"{did_you_mean(dep.target, [n for n in _known_names(by_name, config) if n != service.name])}",
                path=service.path,
                line=dep.line,
                hint=f"fix the name, add {config.catalog_dir}/{dep.target}.yaml, or add a pattern "
                f"matching it to leaf_patterns (now: {', '.join(config.leaf_patterns) or 'none'})",
            )
    return leaves


def check_leaf_typos(services: Iterable[Service], graph: WaveGraph, file_stems: Iterable[str],
                     config: Config) -> None:
    """A leaf nobody defines and no app file belongs to, close to a name that has a ServiceDefinition
    or app files, is taken for a typo (`nexcloud-db` for `nextcloud-db`): as a leaf it would be
    accepted silently, and the real database's files left unplaced. A leaf named after its service
    by the patterns (`keycloak-db` for `keycloak`) is what leaves are for, files or not.

    `file_stems` are the app files' names without extension and `.sops`; raises WaveBotError.
    """
    stems = set(file_stems)
    named = stems | {stem[: -len(s)] for stem in stems for s in config.file_suffixes
                                        if s and stem.endswith(s)}
    by_name = {s.name: s for s in services}
    for service in sorted(by_name.values(), key=lambda s: s.name):
        for dep in service.dependencies:
            node = graph.nodes.get(dep.target)
            if node is None or node.origin != "leaf" or dep.target in named or _own_leaf(dep.target, by_name, config):
                continue
            guess = did_you_mean(dep.target, sorted((named | set(by_name)) - {service.name}))
            if guess:
                raise WaveBotError(
                    f"'{service.name}' depends on '{dep.target}', which has no ServiceDefinition and no app files"
                    f"{guess}",
                    path=service.path,
                    line=dep.line,
                    hint=f"fix the name; if '{dep.target}' is a new leaf, add its app file "
                    f"{config.apps_dir}/{dep.target}.yaml (or {config.catalog_dir}/{dep.target}.yaml)",
                )


def _own_leaf(name: str, by_name: Mapping[str, Service], config: Config) -> bool:
    """Whether `name` is a service's name put into a leaf pattern (`keycloak` and `*-db`: `keycloak-db`)."""
    for pattern in config.leaf_patterns:
        if pattern.count("*") == 1 and not set(pattern) & set("?["):
            head, tail = pattern.split("*")
            if name.startswith(head) and name.endswith(tail) and name[len(head): len(name) - len(tail)] in by_name:
                return True
    return False


def _known_names(by_name: Mapping[str, Service], config: Config) -> list[str]:
    """What a dependency may name: the services, the leaves others name, and each service's leaf
    by the patterns (`keycloak` and `*-db` give `keycloak-db`), so a typo is matched to a leaf too."""
    names = set(by_name)
    names |= {d.target for s in by_name.values() for d in s.dependencies
              if any(fnmatch.fnmatchcase(d.target, p) for p in config.leaf_patterns)}
    names |= {p.replace("*", name) for p in config.leaf_patterns if p.count("*") == 1 and not set(p) & set("?[")
              for name in by_name}
    return sorted(names)


def _cycle_error(edges: list[tuple[str, str]], by_name: Mapping[str, Service]) -> WaveBotError:
    cycle = [a for a, _ in edges]
    start = cycle.index(min(cycle))  # start at the smallest name so the message is stable
    cycle = cycle[start:] + cycle[:start]
    # Every edge with where it is declared: the one that closed the cycle (a new dependency) is often
    # not the first, and the user must find it to decide which one to remove.
    edges = [(a, cycle[(i + 1) % len(cycle)]) for i, a in enumerate(cycle)]
    lines = [next(d.line for d in by_name[a].dependencies if d.target == b) for a, b in edges]
    declared = ", ".join(f"{a} -> {b} ({by_name[a].path}:{line})" for (a, b), line in zip(edges, lines, strict=True))
    return WaveBotError(
        f"dependency cycle: {' -> '.join([*cycle, cycle[0]])}; its dependencies: {declared}",
        path=by_name[cycle[0]].path,
        line=lines[0],
        hint="a service cannot (indirectly) depend on itself; remove one of these dependencies",
    )


def _place_extra_units(units: tuple[ExtraUnit, ...], nodes: Mapping[str, Node], config: Config) -> dict[str, Node]:
    """Extra units sit at their anchor's wave, or one above it; an anchor may be another extra unit."""
    placed: dict[str, Node] = {}
    pending = list(units)
    seen: set[str] = set()
    for unit in units:
        if unit.name in nodes or unit.name in seen:
            raise WaveBotError(
                f"extra unit '{unit.name}' has the name of another node", path=config.source, line=unit.line,
                hint="give the extra unit a name of its own",
            )
        seen.add(unit.name)
    while pending:
        progress = False
        for unit in list(pending):
            anchor = nodes.get(unit.anchor) or placed.get(unit.anchor)
            if anchor is None:
                continue
            wave = anchor.wave + 1 if unit.above else anchor.wave
            placed[unit.name] = Node(unit.name, wave, "extra", (unit.anchor,))
            pending.remove(unit)
            progress = True
        if not progress:
            unit = pending[0]
            if unit.anchor in seen:
                raise WaveBotError(
                    f"extra units are anchored to each other in a cycle: {', '.join(u.name for u in pending)}",
                    path=config.source, line=unit.line, hint="anchor one of them to a catalog node",
                )
            known = [*nodes, *placed, *(u.name for u in units)]
            raise WaveBotError(
                f"extra unit '{unit.name}' is anchored to '{unit.anchor}', which is no node"
                f"{did_you_mean(unit.anchor, known)}",
                path=config.source,
                line=unit.line,
                hint="anchor it to a service in the catalog (or to a leaf such as a -db node)",
            )
    return placed
