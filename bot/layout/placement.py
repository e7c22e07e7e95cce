"""Which app file belongs to which node, and so in which wave directory it must sit."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from bot.config import Config
from bot.errors import WaveBotError
from bot.kustomize.repository import read_kustomizations
from bot.kustomize.spec import KUSTOMIZATION
from bot.layout.units import directories
from bot.layout.waves import WaveGraph
from bot.naming import file_stem, is_yaml_name
from bot.repo.tree import Tree, refuse_link
from bot.side import Side, Slot


@dataclass(frozen=True)
class AppFile:
    """An app manifest (or a directory inside a wave): where it is and where it belongs."""

    path: str
    wave: Slot | None  # the wave (or side) directory it is in now; None directly under apps/
    node: str | None  # the node owning it; None when no node matches (unplaced)
    target: str  # where it must be: its own path when unplaced
    target_wave: Slot | None
    is_dir: bool = False

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]

    @property
    def moves(self) -> bool:
        return self.path != self.target

    def listed(self, config: Config) -> str:
        """Its path below the wave directory it ends up in (or below apps/ when unplaced there)."""
        folder = config.wave_dir(self.target_wave) if self.target_wave is not None else config.apps_dir
        return self.target[len(folder) + 1:]


def existing_slots(tree: Tree, config: Config) -> set[Slot]:
    """Waves and side branches that have a directory under apps/ or a Flux Kustomization file in the base."""
    slots = {config.slot_of_dir(e.name) for e in tree.entries(config.apps_dir) if e.kind == "dir"}
    slots |= {config.slot_of_cr_file(e.name) for e in tree.entries(config.base_dir) if e.kind == "file"}
    return {s for s in slots if s is not None}


def existing_waves(tree: Tree, config: Config) -> set[int]:
    """Waves that have a directory under apps/ or a Flux Kustomization file in the base."""
    return {s for s in existing_slots(tree, config) if not isinstance(s, Side)}


def app_entries(tree: Tree, config: Config, claimed: Callable[[str], bool] = lambda name: False,
                ) -> list[tuple[str, Slot | None, bool, str, bool]]:
    """(path, current wave or side branch, is a directory, path below apps/ or its wave directory,
    claimed by name) of every unit-bearing entry under apps/. `claimed` tells which directory names
    a node owns (see `bot.layout.units.directories`)."""
    found: list[tuple[str, Slot | None, bool, str, bool]] = []

    def is_wave_dir(name: str) -> bool:
        return config.slot_of_dir(name) is not None

    folders: list[tuple[str, Slot | None]] = [(config.apps_dir, None)]
    for entry in tree.entries(config.apps_dir):
        wave = config.slot_of_dir(entry.name)
        if wave is not None and entry.kind in ("dir", "link"):
            folders.append((f"{config.apps_dir}/{entry.name}", wave))
    # The grouping folders inside the waves: what is left of one directly under apps/ is a group too.
    groups = frozenset(u.rel.split("/", 1)[0] for folder, _ in folders[1:]
                       for u in directories(tree, folder, claimed, True, lambda name: False) if "/" in u.rel)
    for folder, wave in folders:
        for entry in tree.entries(folder):
            path = f"{folder}/{entry.name}"
            if entry.kind == "link" and (wave is not None or is_yaml_name(entry.name)):
                raise refuse_link(path)
            if entry.kind == "file" and is_yaml_name(entry.name) and entry.name != KUSTOMIZATION:
                found.append((path, wave, False, entry.name, False))
        # Directly under apps/, the wave directories are folders, not units.
        for unit in directories(tree, folder, claimed, wave is not None,
                                skip=is_wave_dir if wave is None else lambda name: False, groups=groups):
            found.append((unit.path, wave, unit.is_dir, unit.rel, unit.owned))
    return found


def _explicit_files(config: Config) -> dict[str, str]:
    owners: dict[str, str] = {}
    for unit in config.extra_units:
        for name in unit.files:
            if name in owners:
                raise WaveBotError(
                    f"'{name}' is listed by extra units '{owners[name]}' and '{unit.name}'",
                    path=config.source, line=unit.line, hint="list each file under one unit only",
                )
            owners[name] = unit.name
    return owners


def owner(name: str, nodes: Mapping[str, object], config: Config, explicit: Mapping[str, str]) -> str | None:
    """The node a file name belongs to: an extra unit's listed file, else the longest matching node."""
    if name in explicit:
        return explicit[name]
    stem = file_stem(name)
    best: str | None = None
    for suffix in config.file_suffixes:
        if suffix and not stem.endswith(suffix):
            continue
        candidate = stem[: len(stem) - len(suffix)] if suffix else stem
        if candidate in nodes and (best is None or len(candidate) > len(best)):
            best = candidate
    return best


def dir_owner(name: str, nodes: Mapping[str, object], explicit: Mapping[str, str]) -> str | None:
    """The node a directory belongs to: an extra unit listing it, else the node of the same name."""
    return explicit.get(name) or (name if name in nodes else None)


def place_files(tree: Tree, graph: WaveGraph, config: Config) -> list[AppFile]:
    """Every app file and unit directory with its owner and target path. Two entries bound for one
    path is an error."""
    explicit = _explicit_files(config)
    files: list[AppFile] = []
    targets: dict[str, str] = {}
    entries = app_entries(tree, config, lambda name: dir_owner(name, graph.nodes, explicit) is not None)
    # A file a kustomization uses as a patch or component is part of that build, never a unit:
    # moved into a wave as a resource, it would be applied as an object and the build would lose it.
    # So is a directory no node claims that it uses as a component (a grouping folder's own Component).
    if any(not is_dir or not claimed for _, _, is_dir, _, claimed in entries):
        used = {r.path for r in read_kustomizations(tree, "").references if r.role in ("patch", "component")}
        entries = [e for e in entries if e[2] and e[4] or e[0] not in used]
    for path, wave, is_dir, rel, claimed in entries:
        name = path.rsplit("/", 1)[-1]
        if is_dir:
            node = dir_owner(name, graph.nodes, explicit) if claimed else None
        else:
            node = owner(name, graph.nodes, config, explicit) if rel == name else None
        if node is None:
            files.append(AppFile(path, wave, None, path, wave, is_dir))
            continue
        target_wave = graph.nodes[node].slot
        target = f"{config.wave_dir(target_wave)}/{rel}"
        if target in targets:
            raise WaveBotError(
                f"both {targets[target]} and {path} belong at {target}",
                path=path,
                hint="keep one of the two (they are copies of one unit)",
            )
        targets[target] = path
        files.append(AppFile(path, wave, node, target, target_wave, is_dir))
    # An unplaced file that already sits where a placed one is bound would be overwritten.
    for file in files:
        if file.node is None and file.path in targets and targets[file.path] != file.path:
            raise WaveBotError(f"{targets[file.path]} belongs here, but the path is taken", path=file.path)
    return sorted(files, key=lambda f: f.target)
