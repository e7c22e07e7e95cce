"""Which ways Flux builds the waves' Flux Kustomizations: the evaluation paths.

The base (`clusters/base`) lists one Flux Kustomization per wave. Flux applies them through
- the environment overlays (`clusters/dev`, ...): directories under the base's parent whose
  kustomization refers to the base, directly or through another overlay (or `overlays:` as
  configured), each built as kustomize builds it;
- Flux Kustomizations anywhere in the repository (outside the app and catalog directories) whose
  `spec.path` is the base or an overlay, built with their `spec.components` and `spec.patches`
  added the way kustomize-controller adds them (the common cluster-template layout:
  `clusters/<env>/cluster-apps.yaml` with `path: ./clusters/base` and per-cluster `spec.patches`).
  One that points at an overlay and adds nothing is that overlay's path already.
The checks evaluate each of them (`bot.kustomize.build.build`).
"""
from __future__ import annotations

import posixpath
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bot.config import Config
from bot.errors import WaveBotError
from bot.flux.decryption import wave_objects
from bot.flux.vocabulary import is_flux_kustomization
from bot.kustomize.files import Additions, Kustomization, find_kustomization, read_kustomization, resolve
from bot.kustomize.repository import Builds, is_kustomization_file
from bot.kustomize.spec import BuildError, Unsupported
from bot.naming import is_yaml_name
from bot.repo.tree import Tree, walk
from bot.resid import ResourceId
from bot.side import Slot
from bot.yamlio import documents as yamlio

# Flux Kustomization spec fields that change what a build gives the waves and that wave-bot does not
# evaluate (namePrefix/nameSuffix rename the waves' Kustomizations; the v1beta2 patch fields are gone
# from Flux's v1 API). Other spec fields (targetNamespace, commonMetadata, images, postBuild) act
# after the patches or not on a Flux Kustomization's spec.decryption.
FLUX_UNSUPPORTED = ("namePrefix", "nameSuffix", "patchesStrategicMerge", "patchesJson6902")


@dataclass(frozen=True)
class EvalPath:
    """One way Flux builds the waves: an overlay directory, or a Flux Kustomization's spec.path
    with its spec.patches and spec.components."""

    directory: str
    """The directory kustomize builds."""
    label: str
    """How findings name it."""
    cluster_dir: str
    """The directory of the cluster it belongs to (where its kustomize-controller is configured)."""
    file: str | None = None
    """For a Flux Kustomization: the file that defines it."""
    flux: ResourceId | None = None
    line: int | None = None
    additions: Additions | None = None
    unsupported: str | None = None
    """Why wave-bot cannot evaluate it, when it cannot (read before any build)."""


def discover_overlays(tree: Tree, config: Config) -> list[str]:
    """The overlays to check: `config.overlays` when set; else every directory under the base's
    parent (clusters/) whose kustomization refers to the base, directly or through another overlay."""
    if config.overlays is not None:
        for overlay in config.overlays:
            if find_kustomization(tree, overlay) is None:
                raise WaveBotError(f"overlays lists '{overlay}', which has no kustomization.yaml",
                                   path=config.source, hint="list the directories Flux bootstraps (clusters/<env>)")
        return list(config.overlays)
    refs = {d: _references(tree, d) for d in _candidate_dirs(tree, config)}
    # One whose kustomization cannot be read may refer to the base: it counts as an overlay, and its
    # check then says why it was not checked instead of the whole run stopping.
    overlays = {d for d, targets in refs.items()
                if targets is None or any(_within(t, config.base_dir) for t in targets)}
    while True:  # an overlay of an overlay is an overlay too
        more = {d for d, targets in refs.items() if d not in overlays and targets and targets & overlays}
        if not more:
            return sorted(overlays)
        overlays |= more


def _within(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory + "/")


def _candidate_dirs(tree: Tree, config: Config) -> list[str]:
    """Directories under the base's parent, at any depth: a depth limit would leave a deep overlay
    unchecked without a word (hidden ones, links, the base, apps and catalog directories left out)."""
    skip = {config.base_dir, config.apps_dir, config.catalog_dir}
    return [path for path, entry in walk(tree, posixpath.dirname(config.base_dir), skip) if entry.kind == "dir"]


def _references(tree: Tree, directory: str) -> set[str] | None:
    """The repo paths a directory's kustomization lists under resources, bases and components; None
    when wave-bot cannot read it (a repeated key, a file over the size limit)."""
    kfile = find_kustomization(tree, directory)
    if kfile is None:
        return set()
    try:
        kust = read_kustomization(tree, kfile, check=False)
    except Unsupported:
        return None
    out = set()
    for key in ("resources", "bases", "components"):
        values = kust.value.get(key)
        for ref in values if isinstance(values, list) else []:
            try:
                out.add(resolve(directory, str(ref), kfile, None, tree=tree))
            except Unsupported:  # remote or outside the repository: cannot be the base
                continue
    return out


def evaluation_paths(tree: Tree, config: Config) -> list[EvalPath]:
    """Every evaluation path: the overlays first, then the Flux Kustomizations that build the base or
    an overlay (sorted by file)."""
    overlays = discover_overlays(tree, config)
    paths = [EvalPath(o, o, o) for o in overlays]
    targets = {config.base_dir, *overlays}
    for path, info, value in flux_kustomizations(tree, config):
        spec: dict[str, Any] = value["spec"] if isinstance(value.get("spec"), dict) else {}
        built = _spec_path(spec.get("path"))
        if built is None or built not in targets:
            continue
        adds = {k: spec.get(k) for k in ("patches", "components") if spec.get(k) not in (None, [])}
        if built in overlays and not adds and not any(k in spec for k in FLUX_UNSUPPORTED):
            continue  # the overlay as it is: already a path
        rid = ResourceId.of_object(value)
        label = f"{path} (Flux Kustomization {rid.namespace or 'flux-system'}/{rid.name}, path ./{built})"
        unsupported = next((f"its spec.{k} is not evaluated by wave-bot" for k in FLUX_UNSUPPORTED
                            if spec.get(k) not in (None, "", [])), None)
        if unsupported is None and find_kustomization(tree, built) is None:
            # kustomize-controller generates a kustomization listing every file; wave-bot does not
            unsupported = f"./{built} has no kustomization, so kustomize-controller generates one"
        paths.append(EvalPath(built, label, posixpath.dirname(path), path, rid, info.start_line,
                              _additions(path, built, adds, info), unsupported))
    return paths


def _spec_path(value: Any) -> str | None:
    """spec.path as a repo-relative directory ('' for the root); None when it leaves the repository."""
    if not isinstance(value, str):
        return None if value is not None else ""  # Flux: no path means the source's root
    joined = posixpath.normpath(value.lstrip("/")) if value.strip() else "."
    if joined == ".." or joined.startswith("../"):
        return None
    return "" if joined == "." else joined


def _additions(path: str, built: str, adds: dict[str, Any], info: yamlio.DocInfo) -> Additions | None:
    if not adds:
        return None
    return Additions(path, adds, info, built=built)


def flux_kustomizations(tree: Tree, config: Config) -> list[tuple[str, yamlio.DocInfo, dict[str, Any]]]:
    """(file, document info, value) of every Flux Kustomization in the repository outside the app and
    catalog directories (hidden directories, links and unreadable files left out)."""
    out = []
    for path in _yaml_files(tree, {config.apps_dir, config.catalog_dir}):
        try:
            data = tree.read(path)
            if b"kustomize.toolkit.fluxcd.io" not in data:
                continue  # cheap: most files are not Flux objects
            docs = yamlio.load(data, path)
        except WaveBotError:
            continue  # the inventory reports unreadable files
        for doc in docs:
            value = doc.value
            if isinstance(value, dict) and is_flux_kustomization(value):
                out.append((path, doc.info, value))
    return out


def _yaml_files(tree: Tree, skip: set[str]) -> list[str]:
    """Every YAML file of the repository but kustomization files, at any depth (see `walk`)."""
    return [path for path, entry in walk(tree, "", skip)
            if entry.kind == "file" and is_yaml_name(entry.name) and not is_kustomization_file(entry.name)]


# ---- the base: where it lists each wave -----------------------------------------------------------


@dataclass(frozen=True)
class WaveEntry:
    """A base `resources:` (or `bases:`) entry that names a wave's Flux Kustomization file."""

    key: str
    index: int
    ref: str
    path: str
    wave: Slot
    line: int


def wave_entries(tree: Tree, kust: Kustomization, config: Config) -> list[WaveEntry]:
    out = []
    for key in ("resources", "bases"):
        values = kust.value.get(key)
        for i, ref in enumerate(values if isinstance(values, list) else []):
            if not isinstance(ref, str):
                continue
            try:
                path = resolve(kust.directory, ref, kust.path, None, tree=tree)
            except Unsupported:
                continue
            wave = config.slot_of_cr_file(posixpath.basename(path))
            if wave is not None and posixpath.dirname(path) == config.base_dir:
                out.append(WaveEntry(key, i, ref, path, wave, kust.line(key, i)))
    return out


def base_kustomization(tree: Tree, config: Config) -> Kustomization | None:
    kfile = find_kustomization(tree, config.base_dir)
    return read_kustomization(tree, kfile, check=False) if kfile is not None else None


def built_waves(tree: Tree, directory: str, config: Config, waves: Sequence[Slot],
                builds: Builds | None = None) -> set[Slot] | None:
    """The waves whose Flux Kustomization `directory` builds; None when it cannot be evaluated."""
    try:
        result = (builds or Builds()).build(tree, directory)
    except (BuildError, Unsupported):
        return None
    return {n for n in waves if wave_objects(result, config, n)}


__all__ = [
    "EvalPath", "WaveEntry", "base_kustomization", "built_waves", "discover_overlays", "evaluation_paths",
    "flux_kustomizations", "wave_entries",
]
