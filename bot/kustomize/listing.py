"""What a directory's kustomization lists: its own, or the one kustomize-controller generates.

kustomize-controller generates a kustomization for a `spec.path` without one: every YAML file below
it, a subdirectory holding a kustomization taken as one entry. Both the app-tier units
(`layout/units.py`) and the inventories of what each Flux Kustomization applies
(`flux/inventory.py`) read directories this way, so it lives below both (docs/design.md §6).
"""
from __future__ import annotations

import posixpath

from bot.errors import WaveBotError
from bot.kustomize.spec import KUSTOMIZATION_FILES
from bot.naming import is_yaml_name
from bot.repo.tree import Tree, refuse_link
from bot.yamlio import documents as yamlio


def own_kustomization(tree: Tree, directory: str) -> str | None:
    """The directory's kustomization file under any name kustomize accepts; None without one."""
    for name in KUSTOMIZATION_FILES:
        kind = tree.kind(f"{directory}/{name}")
        if kind == "link":
            raise refuse_link(f"{directory}/{name}")
        if kind == "file":
            return f"{directory}/{name}"
    return None


def generated_listing(tree: Tree, directory: str) -> list[str]:
    """What kustomize-controller's generated kustomization for `directory` lists, relative to it:
    every YAML file below it, and each subdirectory holding a kustomization as one entry.
    Links are refused: a unit moves as a whole and a link inside it could point anywhere."""
    out: list[str] = []
    for entry in tree.entries(directory):
        path = f"{directory}/{entry.name}"
        if entry.kind == "link":
            raise refuse_link(path)
        if entry.kind == "dir":
            if own_kustomization(tree, path) is not None:
                out.append(entry.name)
            else:
                out += (f"{entry.name}/{rel}" for rel in generated_listing(tree, path))
        elif entry.kind == "file" and is_yaml_name(entry.name):
            out.append(entry.name)
    return out


def wave_refs(tree: Tree, kustomization: str) -> list[str]:
    """The local entries a wave's kustomization lists under `resources`, relative to its directory
    and without `./` (remote entries and entries leaving the directory are not followed)."""
    docs = [d for d in yamlio.scan(tree.read(kustomization), kustomization, capture=_resource_item) if not d.empty]
    if docs and (not docs[0].is_mapping or ("resources",) in docs[0].scalars):
        raise WaveBotError("is not a kustomization with a list of resources", path=kustomization,
                           line=docs[0].start_line, hint="run `wave-bot apply` to regenerate it")
    items = docs[0].scalars if docs else {}
    out = []
    for _, ref in sorted((k, v) for k, v in items.items() if len(k) == 2):
        path = posixpath.normpath(ref) if ref else ""
        if path and "://" not in ref and path not in (".", "..") and not path.startswith(("../", "/")):
            out.append(path)
    return out


def _resource_item(path: yamlio.Path) -> bool:
    return len(path) <= 2 and path[0] == "resources"


__all__ = ["generated_listing", "own_kustomization", "wave_refs"]
