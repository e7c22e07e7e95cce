"""Which directories are overlays of the base: the environments Flux builds the waves through.

An overlay is a directory under the base's parent (`clusters/`) whose kustomization refers to the
base, directly or through another overlay, or one `overlays:` lists. It lives here, below `flux/`,
because both the evaluation paths (`flux/evalpaths.py`) and the builds a broken file breaks
(`kustomize/breaks.py`) start from it (docs/design.md §6: arrows point down only).
"""
from __future__ import annotations

import posixpath

from bot.config import Config
from bot.errors import WaveBotError
from bot.kustomize.files import find_kustomization, read_kustomization, resolve
from bot.kustomize.spec import Unsupported
from bot.repo.tree import Tree, walk


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


__all__ = ["discover_overlays"]
