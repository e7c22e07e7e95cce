"""Which builds a file breaks when kustomize refuses it: what an `invalid-manifest` message names.

kustomize reads a file only when a build includes it, so a file it refuses breaks exactly the
builds that include it: the base directory, the overlays, and the Flux Kustomizations whose
`spec.path` reaches it, through `resources`, `components`, patches and generator inputs of the
kustomizations on the way (without a kustomization, every YAML file below the directory, as
kustomize-controller generates one). A file none of them includes breaks nothing wave-bot knows of,
and the message says so instead of naming builds that never read it.
"""
from __future__ import annotations

from collections.abc import Sequence

from bot.config import Config
from bot.errors import WaveBotError
from bot.kustomize.files import find_kustomization
from bot.kustomize.overlays import discover_overlays
from bot.kustomize.repository import Kustomizations, applied_files
from bot.repo.tree import Tree


def _reads(tree: Tree, kustomizations: Kustomizations, directory: str, seen: set[str]) -> set[str]:
    """Every file the build of `directory` reads (as far as wave-bot follows it)."""
    if directory in seen:
        return set()
    seen.add(directory)
    kust = kustomizations.in_directory(directory)
    if kust is None:
        try:
            found = find_kustomization(tree, directory)
        except WaveBotError:
            found = None
        files = set(applied_files(tree, directory))
        return files | {found} if found is not None else files
    out = {kust.path}
    for ref in kustomizations.references:
        if ref.kustomization == kust.path:
            out.add(ref.path)
            if tree.kind(ref.path) == "dir":
                out |= _reads(tree, kustomizations, ref.path, seen)
    return out


def builds_including(tree: Tree, config: Config, kustomizations: Kustomizations, path: str,
                     flux: Sequence[tuple[str, str]]) -> list[str]:
    """The builds that read `path`, each as a message names it: the base directory, `overlay <dir>`,
    and of `flux` ((label, directory) of each Flux Kustomization) the label."""
    try:
        overlays = discover_overlays(tree, config)
    except WaveBotError:
        overlays = []  # the overlay check reports a broken `overlays:` setting
    builds = [(config.base_dir, config.base_dir), *((f"overlay {o}", o) for o in overlays), *flux]
    return [label for label, directory in builds if path in _reads(tree, kustomizations, directory, set())]


__all__ = ["builds_including"]
