"""The kustomization kustomize-controller generates for a `spec.path` that has none: the one home of that policy.

fluxcd/pkg `kustomize/kustomize_generator.go` (`generateKustomization`): when the directory holds no
kustomization file (`kustomization.yaml`, `kustomization.yml`, `Kustomization`), the controller walks
it in lexical order and lists as `resources`
- every file below it whose name ends in `.yaml` or `.yml` (and that decodes as Kubernetes YAML: a
  file that does not fails the build), and
- every subdirectory that holds a kustomization file, as a whole: the walk does not descend into it;
other subdirectories are walked. Then it builds that kustomization as if it were written there.

The walk sees the source artifact, not the git tree: source-controller leaves out, by default, the
files its `.sourceignore` defaults name (VCS files, CI configuration, `.sops.yaml`, `.flux.yaml`,
images and archives), so they are never listed. A symbolic link is never followed by wave-bot: one
below the directory is left out of the listing (its target is not read).

`GeneratedTree` lays the generated kustomization over a `Tree`, so the evaluator builds it exactly as
kustomize builds the file the controller writes.
"""
from __future__ import annotations

import fnmatch
import json
from collections.abc import Collection

from bot.kustomize.spec import KUSTOMIZATION_FILES
from bot.repo.tree import Entry, Kind, Tree

GENERATED_FILE = "kustomization.yaml"
YAML_EXTENSIONS = (".yaml", ".yml")

# source-controller's default exclusions (pkg/sourceignore: VCS, CI and the files Flux itself reads)
_IGNORED_DIRS = frozenset({".git", ".github", ".circleci"})
_IGNORED_FILES = (
    ".gitignore", ".gitmodules", ".gitattributes", ".travis.yml", ".gitlab-ci.yml", "appveyor.yml", ".drone.yml",
    "cloudbuild.yaml", "codeship-services.yml", "codeship-steps.yml", ".goreleaser.yml", ".goreleaser.brew.yml",
    ".sops.yaml", ".flux.yaml", ".golangci.yaml",
    "*.jpg", "*.jpeg", "*.gif", "*.png", "*.wmv", "*.flv", "*.tar.gz", "*.zip",
)


def has_kustomization(tree: Tree, directory: str) -> bool:
    prefix = f"{directory}/" if directory else ""
    return any(tree.kind(prefix + name) in ("file", "link") for name in KUSTOMIZATION_FILES)


def _ignored(entry: Entry) -> bool:
    if entry.kind == "dir":
        return entry.name in _IGNORED_DIRS
    return any(fnmatch.fnmatchcase(entry.name, pattern) for pattern in _IGNORED_FILES)


def generated_resources(tree: Tree, directory: str, excluding: Collection[str] = ()) -> list[str]:
    """What the generated kustomization of `directory` lists, relative to it, in the controller's order.

    `excluding`: repository paths (files or directories) the walk passes over, as if they were not
    there (cutover step 2 lists the rest of the legacy's tree without the wave directories)."""
    out: list[str] = []
    skipped = frozenset(excluding)

    def visit(path: str, rel: str) -> None:
        for entry in tree.entries(path):  # sorted by name: Go's filepath.Walk order
            if _ignored(entry) or entry.kind == "link":
                continue
            child, child_rel = (f"{path}/{entry.name}" if path else entry.name), f"{rel}{entry.name}"
            if child in skipped:
                continue
            if entry.kind == "dir":
                if has_kustomization(tree, child):
                    out.append(child_rel)
                else:
                    visit(child, f"{child_rel}/")
            elif entry.kind == "file" and entry.name.endswith(YAML_EXTENSIONS):
                out.append(child_rel)

    visit(directory, "")
    return out


def generated_kustomization(tree: Tree, directory: str) -> bytes:
    """The kustomization file kustomize-controller writes into `directory`."""
    resources = generated_resources(tree, directory)
    # no manifest: the controller writes apiVersion and kind only, and kustomize refuses that file
    # ("kustomization.yaml is empty"): the build fails
    lines = ["apiVersion: kustomize.config.k8s.io/v1beta1", "kind: Kustomization",
             *(["resources:"] if resources else []), *(f"- {json.dumps(ref)}" for ref in resources)]
    return ("\n".join(lines) + "\n").encode()


class GeneratedTree:
    """`base` with the controller's generated kustomization file in each of `directories` (those
    without one of their own): what kustomize reads once kustomize-controller has written it."""

    def __init__(self, base: Tree, directories: list[str]) -> None:
        self._base = base
        self._files: dict[str, bytes] = {}
        for directory in directories:
            if not has_kustomization(base, directory):
                path = f"{directory}/{GENERATED_FILE}" if directory else GENERATED_FILE
                self._files[path] = generated_kustomization(base, directory)

    @property
    def generated(self) -> list[str]:
        """The generated kustomization files."""
        return list(self._files)

    def entries(self, directory: str) -> list[Entry]:
        entries = self._base.entries(directory)
        path = f"{directory}/{GENERATED_FILE}" if directory else GENERATED_FILE
        if path in self._files:
            entries = sorted([*entries, Entry(GENERATED_FILE, "file")], key=lambda e: e.name)
        return entries

    def read(self, path: str) -> bytes:
        found = self._files.get(path)
        return found if found is not None else self._base.read(path)

    def kind(self, path: str) -> Kind | None:
        return "file" if path in self._files else self._base.kind(path)


__all__ = ["GENERATED_FILE", "GeneratedTree", "generated_kustomization", "generated_resources", "has_kustomization"]
