"""What a unit of the app tier is on disk: a file, or a directory (with or without a kustomization).

A directory unit is `<apps>/<name>/` or `<apps>/wave-<N>/<name>/`, optionally one grouping folder
down (`<apps>/<group>/<name>/`, the namespace folders of many Flux repositories), and it moves as a
whole. A wave's kustomization lists a directory that has its own kustomization as the directory
(`<group>/<name>`); one without is listed file by file, exactly what kustomize-controller
generates for a path without a kustomization (every YAML file below it, a subdirectory with its own
kustomization taken as one entry): kustomize itself refuses a listed directory with no
kustomization in it, and wave-bot never writes into a unit's directory (its bytes travel untouched).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from bot.config import Config
from bot.kustomize.listing import generated_listing as generated_listing
from bot.kustomize.listing import own_kustomization as own_kustomization
from bot.kustomize.listing import wave_refs as wave_refs
from bot.kustomize.spec import KUSTOMIZATION_FILES
from bot.naming import is_yaml_name
from bot.repo.tree import Tree, refuse_link
from bot.side import Slot


@dataclass(frozen=True)
class UnitEntry:
    """A file or directory under the apps directory (or a wave directory) that can be a unit."""

    path: str
    rel: str
    """Its path below the apps directory or its wave directory: `name`, or `group/name`."""
    is_dir: bool
    owned: bool
    """Whether a node (or an extra unit) claims it by name; unowned entries stay where they are."""


def listing(tree: Tree, path: str, rel: str, is_dir: bool) -> list[str]:
    """The entries a wave's kustomization lists for the unit at `path` (`rel` below the wave)."""
    if not is_dir:
        return [rel]
    if own_kustomization(tree, path) is not None:
        return [rel]
    return [f"{rel}/{item}" for item in generated_listing(tree, path)]


def directories(tree: Tree, folder: str, claimed: Callable[[str], bool], in_wave: bool,
                skip: Callable[[str], bool], groups: frozenset[str] = frozenset()) -> list[UnitEntry]:
    """The directory units of `folder` (the apps directory, or one wave directory).

    `claimed(name)` tells whether a node (or an extra unit) owns a directory of that name; `skip`
    names the directories that are not units at all (the wave directories). A directory no node
    claims but holding directories that one does is a grouping folder: its subdirectories are the
    units (an unclaimed one is unplaced and kept), and its YAML files other than its kustomization
    are unplaced too. So is a folder named in `groups` (one that is a grouping folder inside a wave:
    once its units have moved there, what is left of it is still a group). Any other unclaimed
    directory inside a wave is unplaced and kept; directly under the apps directory it is left alone
    (another Flux tier, such as `apps/vms/`, lives there).
    """
    out: list[UnitEntry] = []
    for entry in tree.entries(folder):
        path = f"{folder}/{entry.name}"
        if entry.kind != "dir" or skip(entry.name):
            continue
        if claimed(entry.name):
            out.append(UnitEntry(path, entry.name, True, True))
            continue
        inside = tree.entries(path)
        if entry.name not in groups and not any(e.kind == "dir" and claimed(e.name) for e in inside):
            if in_wave and holds_files(tree, path):
                out.append(UnitEntry(path, entry.name, True, False))
            continue
        for child in inside:
            sub, rel = f"{path}/{child.name}", f"{entry.name}/{child.name}"
            if child.kind == "link":
                raise refuse_link(sub)
            if child.kind == "dir" and (claimed(child.name) or holds_files(tree, sub)):
                out.append(UnitEntry(sub, rel, True, claimed(child.name)))
            elif child.kind == "file" and is_yaml_name(child.name) and child.name not in KUSTOMIZATION_FILES:
                out.append(UnitEntry(sub, rel, False, False))
    return out


def holds_files(tree: Tree, directory: str) -> bool:
    """Whether anything but directories is below `directory`. A folder a `git mv` of its unit left
    empty is nothing: git tracks no empty directory, so no checkout Flux or the bot makes has it."""
    return any(e.kind != "dir" or holds_files(tree, f"{directory}/{e.name}") for e in tree.entries(directory))


def directory_waves(paths: list[tuple[str, Slot | None]], config: Config) -> dict[str, Slot]:
    """Directory name -> its wave, for every directory holding one of `paths` (path, wave) inside a
    wave: where each directory unit was at a revision (units keep their names when they move)."""
    out: dict[str, Slot] = {}
    for path, wave in paths:
        if wave is None:
            continue
        rel = path[len(config.wave_dir(wave)) + 1:]
        for name in rel.split("/")[:-1]:
            out.setdefault(name, wave)
    return out
