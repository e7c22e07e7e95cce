"""bot.flux.applied against kubectl: for every Flux Kustomization the model builds from each real
repository of ../shared/realrepos, its objects (kind, namespace, name) are what `kubectl kustomize`
builds of the same directory, with the kustomization kustomize-controller would write there.

The test writes that kustomization itself, from Flux's documented rules (not from wave-bot's
generator): where the directory has none, every `.yaml`/`.yml` file below it and every
subdirectory holding a kustomization file (not descended); then `spec.targetNamespace` as its
`namespace`, `spec.components` and `spec.patches` appended. kubectl builds it as kustomize-controller
does (no load restriction). Then the test substitutes `${VAR}` itself (the braces forms, with the
values git holds as the model read them) and compares. Where they disagree, kubectl is right.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.flux.applied import FluxKs, read_model
from bot.repo.worktree import FsTree

from conftest import installed_tool
from support import realrepos


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader, reading a plain `=` (YAML 1.1's value key) as the string kubectl prints."""


_Loader.add_constructor("tag:yaml.org,2002:value", lambda loader, node: loader.construct_scalar(node))
KUSTOMIZATION_NAMES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
_IGNORED = {".git", ".github", ".sops.yaml", ".flux.yaml", ".gitlab-ci.yml", ".travis.yml", "cloudbuild.yaml"}


def _has_kustomization(directory: Path) -> bool:
    return any((directory / name).is_file() for name in KUSTOMIZATION_NAMES)


def _listing(directory: Path) -> list[str]:
    """What kustomize-controller's generated kustomization lists, as the Flux docs describe it."""
    out: list[str] = []
    for root, dirs, files in os.walk(directory):
        here = Path(root)
        dirs.sort()
        keep = []
        for name in dirs:
            if name in _IGNORED or (here / name).is_symlink():
                continue
            if _has_kustomization(here / name):
                out.append(str((here / name).relative_to(directory)))
            else:
                keep.append(name)
        dirs[:] = keep
        out += [str((here / f).relative_to(directory)) for f in sorted(files)
                if f.endswith((".yaml", ".yml")) and f not in _IGNORED and not (here / f).is_symlink()]
    return sorted(out)


_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-=])((?:[^{}]|\{[^{}]*\})*))?\}")


def _substitute(text: str, values: dict[str, str]) -> str:
    """`${VAR}`, `${VAR:-d}`, `${VAR:=d}`, `${VAR-d}`, `${VAR=d}` with `values`; unknown ones stay."""
    def one(match: re.Match[str]) -> str:
        name, op, default = match.group(1), match.group(2), match.group(3)
        if name in values and not (op and op.startswith(":") and values[name] == ""):
            return values[name]
        if op is not None:
            return _substitute(default or "", values)
        return match.group(0)

    for _ in range(3):  # nested defaults: `${A:-${B}}`
        text = _VAR.sub(one, text)
    return text


def _kubectl_ids(scratch: Path, ks: FluxKs) -> tuple[set[tuple[str, str, str]], int]:
    """(known identities, how many with an unresolved variable) of kubectl's build of `ks`."""
    assert ks.path is not None
    directory = scratch / ks.path if ks.path else scratch
    existing = next((directory / n for n in KUSTOMIZATION_NAMES if (directory / n).is_file()), None)
    original = existing.read_bytes() if existing is not None else None
    kust: dict[str, Any] = (yaml.safe_load(original) or {}) if original is not None else {
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", "resources": _listing(directory)}
    spec = ks.spec
    if spec.get("targetNamespace"):
        kust["namespace"] = spec["targetNamespace"]
    for key in ("components", "patches"):
        if spec.get(key):
            kust[key] = [*(kust.get(key) or []), *spec[key]]
    target = existing or directory / "kustomization.yaml"
    target.write_text(yaml.safe_dump(kust))
    try:
        result = subprocess.run([str(installed_tool("kubectl")), "kustomize", "--load-restrictor",
                                 "LoadRestrictionsNone", str(directory)], capture_output=True, text=True)
    finally:
        if original is None:
            target.unlink()
        else:
            target.write_bytes(original)
    assert result.returncode == 0, f"kubectl kustomize {ks.path} ({ks.title}): {result.stderr}"
    values = dict(ks.variables.values) if ks.variables is not None else None
    known: set[tuple[str, str, str]] = set()
    unknown = 0
    for doc in yaml.load_all(result.stdout, Loader=_Loader):
        if not isinstance(doc, dict):
            continue
        meta = doc.get("metadata") or {}
        marks = {**(meta.get("labels") or {}), **(meta.get("annotations") or {})}
        ident = (str(doc.get("kind")), str(meta.get("namespace") or ""), str(meta.get("name")))
        if values is not None and marks.get("kustomize.toolkit.fluxcd.io/substitute") != "disabled":
            ident = (ident[0], _substitute(ident[1], values), _substitute(ident[2], values))
        if any("${" in part for part in ident):
            unknown += 1
        else:
            known.add(ident)
    return known, unknown


@pytest.mark.parametrize("archive", realrepos.params(), ids=realrepos.archive_ids())
def test_each_kustomization_builds_what_kubectl_builds(archive: Path | None, tmp_path: Path) -> None:
    repo = realrepos.unpack(realrepos.require(archive), tmp_path / "repo")
    model = read_model(FsTree(str(repo)))
    scratch = tmp_path / "scratch"
    shutil.copytree(repo, scratch, ignore=shutil.ignore_patterns(".git"))
    compared = 0
    differences = []
    for ks in model.kustomizations():
        if not ks.evaluated:
            continue
        expected, expected_unknown = _kubectl_ids(scratch, ks)
        got = {(o.id.kind, o.id.namespace, o.id.name) for o in ks.objects if o.known}
        got_unknown = sum(1 for o in ks.objects if not o.known)
        if (got, got_unknown) != (expected, expected_unknown):
            differences.append(f"{ks.cluster} {ks.title} (./{ks.path}): only kubectl {sorted(expected - got)}, "
                               f"only wave-bot {sorted(got - expected)}, unknown {expected_unknown} vs {got_unknown}")
        compared += 1
    print(f"{archive.name if archive else ''}: {compared} Flux Kustomizations compared with kubectl")
    assert not differences, "\n".join(differences)
    assert compared >= 1
