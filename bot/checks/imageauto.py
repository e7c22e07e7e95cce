"""Flux image automation must still see every wave (docs/design.md §5.3).

An `ImageUpdateAutomation` (image.toolkit.fluxcd.io) rewrites the `$imagepolicy` markers only in
the files under its `spec.update.path` (unset: the whole repository). The seed layout scans
`./apps`, which holds every wave directory; a changed `apps_dir`, a narrowed path or a path naming
one wave silently stops image updates for the waves and side branches it misses.

The automations are looked for in every YAML file of the repository outside the app and catalog
directories (hidden directories and links are skipped); a file is parsed only when it names the
kind, so large repositories pay little.
"""
from __future__ import annotations

import posixpath
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bot.config import Config
from bot.errors import WaveBotError
from bot.model import Finding
from bot.naming import is_yaml_name
from bot.repo.tree import Tree, walk
from bot.side import Slot
from bot.yamlio import documents as yamlio

GROUP = "image.toolkit.fluxcd.io"
KIND = "ImageUpdateAutomation"
CODE = "image-automation-uncovered"


@dataclass(frozen=True)
class Automation:
    """One ImageUpdateAutomation and the directory it updates ('' for the repository root)."""

    path: str
    line: int
    name: str
    namespace: str
    scans: str
    written: str | None
    """spec.update.path as written; None when unset."""

    def covers(self, directory: str) -> bool:
        return not self.scans or directory == self.scans or directory.startswith(self.scans + "/")


def _normal(path: str) -> str:
    """`./apps/` -> `apps`; `./` and `.` -> '' (the root)."""
    norm = posixpath.normpath(path.strip() or ".")
    return "" if norm in (".", "/") else norm.lstrip("/")


def _mapping(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def automations(tree: Tree, config: Config) -> list[Automation]:
    """Every ImageUpdateAutomation in `tree`; unreadable YAML is skipped (other checks report it)."""
    found = []
    for path, entry in walk(tree, "", {config.apps_dir, config.catalog_dir}):
        if entry.kind != "file" or not is_yaml_name(entry.name):
            continue
        data = tree.read(path)
        if KIND.encode() not in data:
            continue
        try:
            docs = yamlio.load(data, path)
        except WaveBotError:
            continue
        for doc in docs:
            value = doc.value
            if not (isinstance(value, dict) and value.get("kind") == KIND
                    and str(value.get("apiVersion", "")).startswith(GROUP + "/")):
                continue
            metadata, spec = _mapping(value.get("metadata")), _mapping(value.get("spec"))
            written = _mapping(spec.get("update")).get("path")
            written = written if isinstance(written, str) else None
            line = doc.info.line(("spec", "update", "path")) if written is not None else doc.info.start_line
            found.append(Automation(path, line, str(metadata.get("name", "")), str(metadata.get("namespace", "")),
                                    _normal(written or "."), written))
    return found


def coverage_findings(tree: Tree, config: Config, slots: Sequence[Slot]) -> list[Finding]:
    """`image-automation-uncovered` (warning) for each automation missing a wave or side directory,
    when no automation covers it: one may scan the platform only while another scans the apps."""
    dirs = [config.wave_dir(n) for n in slots]
    found = automations(tree, config) if dirs else []
    uncovered = [d for d in dirs if not any(a.covers(d) for a in found)]
    if not uncovered:
        return []
    return [_finding(a, [d for d in dirs if not a.covers(d)], config) for a in found
            if not all(a.covers(d) for d in dirs)]


def _finding(automation: Automation, missed: list[str], config: Config) -> Finding:
    wanted = posixpath.commonpath([automation.scans, config.apps_dir]) if automation.scans else ""
    fix_path = f"./{wanted}" if wanted else "./"
    who = f"{automation.namespace}/{automation.name}" if automation.namespace else automation.name
    scans = f"spec.update.path: {automation.written}"
    shown = ", ".join(f"{d}/" for d in missed[:10]) + (f" and {len(missed) - 10} more" if len(missed) > 10 else "")
    return Finding(
        code=CODE,
        severity="warning",
        message=(f"{automation.path}:{automation.line}: the ImageUpdateAutomation {who} updates only what is under "
                 f"{scans}, which does not cover {shown}: the $imagepolicy markers of the manifests there are never "
                 f"updated. Set spec.update.path to {fix_path}, which holds every wave directory"),
        path=automation.path,
        line=automation.line,
        resource=f"{GROUP}/{KIND} {who}",
        fix=f"# {automation.path}: ImageUpdateAutomation {who}\nspec:\n  update:\n    path: {fix_path}\n",
    )
