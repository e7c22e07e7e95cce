"""Why a generated file is rewritten, when the plan's own changes do not explain it.

A wave's kustomization.yaml is rewritten whenever its `resources:` change: that is the plan's own
doing (a move, a new or removed app file) and needs no finding. A wave's Flux Kustomization is
rewritten when the wave template changed, or when it has a value the template does not: say which
keys and where the template lives (`wave-template-changed`). Only bytes no input of wave-bot can
produce (a comment, a key wave-bot never writes, another layout) are an edit that regeneration
undoes (`generated-file-restored`).
"""
from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping
from typing import Any

from bot.config import Config
from bot.errors import WaveBotError
from bot.kustomize.spec import KUSTOMIZATION
from bot.layout import render
from bot.model import Change, Finding
from bot.repo.tree import Tree
from bot.yamlio import documents as yamlio

_PER_WAVE = {"metadata.name", "spec.path", "spec.dependsOn"}  # from the wave number and .wave-bot.yaml


def regeneration_findings(
    tree: Tree, writes: Iterable[Change], config: Config, template_source: str, base: Tree | None = None
) -> list[Finding]:
    """Findings for the `update` writes of a plan for `tree`; `base` is the deployed revision, if known."""
    findings: list[Finding] = []
    differing: dict[str, list[tuple[str, str, str]]] = {}  # key -> [(file, its value, the template's)]
    for change in writes:
        if change.action != "update" or change.content is None:
            continue
        current = tree.read(change.path)
        doc = _load(current, change.path)
        if posixpath.basename(change.path) == KUSTOMIZATION:
            if not _pristine_kustomization(doc, current):
                findings.append(_restored(change.path, current, change.content))
            elif base is not None:
                findings += _entries_edited(tree, base, change.path, doc["resources"])
            continue
        if doc is None or yamlio.dump(doc, render.HEADER) != current:
            findings.append(_restored(change.path, current, change.content))
            continue
        new = _load(change.content, change.path)
        for key, (have, want) in _diff(doc, new).items():
            if key not in _PER_WAVE:
                differing.setdefault(key, []).append((change.path, have, want))
    if differing:
        findings.append(_template_changed(differing, template_source))
    return findings


def _load(data: bytes, path: str) -> Any:
    try:
        doc = yamlio.load_one(data, path)
    except WaveBotError:
        return None
    return doc.value if doc is not None else None


def _pristine_kustomization(doc: Any, current: bytes) -> bool:
    """Whether the file is exactly what wave-bot writes for the resources it lists."""
    if not isinstance(doc, dict) or set(doc) != {"apiVersion", "kind", "resources"}:
        return False
    resources = doc["resources"]
    if not isinstance(resources, list) or not all(isinstance(r, str) for r in resources):
        return False
    return render.wave_kustomization(resources) == current


def _entries_edited(tree: Tree, base: Tree, path: str, listed: list[str]) -> list[Finding]:
    """A resources list edited by hand: a line dropped for a file still there, or one added for a file
    that is not. Entries that follow files added, moved or deleted are the layout's own change."""
    at_base = _load(base.read(path), path) if base.kind(path) == "file" else None
    before = at_base.get("resources") if isinstance(at_base, dict) else None
    if not isinstance(before, list):
        return []
    here = posixpath.dirname(path)
    dropped = [e for e in before if isinstance(e, str) and e not in listed and tree.kind(f"{here}/{e}") is not None]
    added = [e for e in listed if e not in before and tree.kind(f"{here}/{e}") is None]
    if not dropped and not added:
        return []
    what = "; ".join(p for p in (
        f"it no longer lists {', '.join(dropped)}, still in {here}/" if dropped else "",
        f"it lists {', '.join(added)}, not in {here}/" if added else "") if p)
    return [Finding(
        code="generated-file-restored",
        severity="info",
        message=(f"{path} was edited by hand since the base revision ({what}); wave-bot rewrites it from the files "
                 f"in {here}/, so that edit is undone: to take an app out of the wave, delete or move its file"),
        path=path,
    )]


def _first_difference(a: bytes, b: bytes) -> int:
    for i, (x, y) in enumerate(zip(a.splitlines(), b.splitlines(), strict=False), start=1):
        if x != y:
            return i
    return min(len(a.splitlines()), len(b.splitlines())) + 1


def _restored(path: str, current: bytes, new: bytes) -> Finding:
    line = _first_difference(current, new)
    return Finding(
        code="generated-file-restored",
        severity="info",
        message=(f"{path} differs from anything wave-bot generates (from line {line}: a hand edit, or another "
                 "tool's); wave-bot rewrites it, so that edit is undone: change the catalog, .wave-bot.yaml or the "
                 "wave template instead"),
        path=path,
        line=line,
    )


def _diff(old: Any, new: Any) -> dict[str, tuple[str, str]]:
    """`section.key` -> (old, new) for the top-level keys of metadata and spec that differ."""
    out: dict[str, tuple[str, str]] = {}
    for section in ("metadata", "spec"):
        a = old.get(section) if isinstance(old, dict) else None
        b = new.get(section) if isinstance(new, dict) else None
        a, b = a if isinstance(a, dict) else {}, b if isinstance(b, dict) else {}
        for key in sorted(set(a) | set(b), key=str):
            if a.get(key) != b.get(key):
                out[f"{section}.{key}"] = (_show(a.get(key)), _show(b.get(key)))
    return out


def _show(value: Any) -> str:
    if value is None:
        return "(unset)"
    text = yamlio.dump(value).decode().strip() if isinstance(value, dict | list) else str(value).lower() \
        if isinstance(value, bool) else str(value)
    text = " ".join(text.split())
    return text if len(text) <= 60 else text[:57] + "..."


def _template_changed(differing: Mapping[str, list[tuple[str, str, str]]], source: str) -> Finding:
    files = sorted({path for rows in differing.values() for path, _, _ in rows})
    them = "them" if len(files) > 1 else "it"

    def holders(rows: list[tuple[str, str, str]]) -> str:
        paths = sorted({path for path, _, _ in rows})
        return them if paths == files else _names(paths)

    keys = "; ".join(
        f"{key} is {rows[0][2]} in the template and {', '.join(sorted({have for _, have, _ in rows}))} in "
        f"{holders(rows)}"
        for key, rows in sorted(differing.items())
    )
    template = f"the wave template ({source})" if source != "built-in defaults" else "the built-in wave template"
    return Finding(
        code="wave-template-changed",
        severity="info",
        message=(f"{template} differs from {_names(files)}, so wave-bot regenerates {them} from it: {keys}. Every "
                 "wave shares the template; to change a setting for every wave, change it there"),
        path=source if source != "built-in defaults" else None,
    )


def _names(paths: list[str]) -> str:
    return paths[0] if len(paths) == 1 else ", ".join(paths[:-1]) + " and " + paths[-1]
