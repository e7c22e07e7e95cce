"""A user's repository played through real Flux (tests/support/liveflux.py) commit by commit, and what
real Flux deleted set beside what wave-bot reported for the same change.

Nothing here knows a repository's name or paths; what it needs is read from the tree:
- the bootstrap path (what the root Kustomization `flux-system` applies, as `flux bootstrap --path`
  sets it): the directory of the Flux Kustomizations no other Flux Kustomization's `spec.path`
  applies; where a cluster overlay of that directory gives the Kustomizations SOPS decryption and the
  repository holds SOPS files, that overlay (as a cluster that decrypts is bootstrapped on it);
- SOPS: a file encrypted to the project's published DEMO age key (examples/homelab/DEMO-age-key.txt)
  stays encrypted, and the cluster gets that key as Flux's docs say (a `sops-age` Secret in
  flux-system, key `age.agekey`; kustomize-controller runs with `--sops-age-secret=sops-age` for
  Kustomizations whose `decryption` names no Secret, as the flux-operator's FluxInstance configures
  it). A file encrypted to any other key has its `data`/`stringData` values replaced with placeholders
  and its `sops:` metadata dropped in the artifact (real Flux could not decrypt it here).
"""
from __future__ import annotations

import base64
import io
import json
import posixpath
import subprocess
import warnings
from collections.abc import Mapping
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from bot.cli import main

from conftest import EXAMPLE
from support.liveflux import FLUX_GROUP, NAMESPACE, SOPS_AGE_SECRET, Cluster, Ref

FLUX_API = "kustomize.toolkit.fluxcd.io/"
KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
DEMO_KEY = EXAMPLE / "DEMO-age-key.txt"
PLACEHOLDER = "placeholder"

_yaml = YAML(typ="safe", pure=True)
_dump = YAML(typ="safe", pure=True)
_dump.default_flow_style = False


def tree(repo: Path) -> dict[str, bytes]:
    """The committed files of `repo`'s HEAD, as source-controller would pack the revision."""
    names = subprocess.run(["git", "-C", str(repo), "ls-files", "-z"], check=True, capture_output=True).stdout
    return {n: (repo / n).read_bytes() for n in names.decode().split("\0") if n and (repo / n).is_file()}


def _docs(data: bytes) -> list[Any]:
    try:
        with warnings.catch_warnings():  # ruamel's ReusedAnchorWarning on valid YAML
            warnings.simplefilter("ignore")
            return [d for d in _yaml.load_all(data) if isinstance(d, dict)]
    except Exception:  # noqa: BLE001 - a template or not YAML: nothing of Flux's to read here
        return []


def _flux_ks(doc: Mapping[str, Any]) -> bool:
    return doc.get("kind") == "Kustomization" and str(doc.get("apiVersion", "")).startswith(FLUX_API)


def _norm(path: str) -> str:
    return posixpath.normpath(path.lstrip("./") or ".")


def bootstrap_path(files: Mapping[str, bytes]) -> str:
    """`./<dir>` the root Kustomization applies (see the module's docstring)."""
    kustomizations = {name: [d for d in _docs(data) if _flux_ks(d)] for name, data in files.items()
                      if name.endswith((".yaml", ".yml"))}
    paths = {_norm(str(d["spec"]["path"])) for ds in kustomizations.values() for d in ds
             if isinstance(d.get("spec"), dict) and d["spec"].get("path")}  # a patch of one names no path
    top = sorted({posixpath.dirname(name) for name, ds in kustomizations.items() if ds
                  and not any(p == "." or name.startswith(p + "/") for p in paths)})
    assert top, "no Flux Kustomization outside every spec.path: no bootstrap path to play"
    entry = top[0]
    encrypted = any(b"\nsops:\n" in data for data in files.values())
    for name in sorted(files):
        directory = posixpath.dirname(name)
        if name.rsplit("/", 1)[-1] not in KUSTOMIZATION_FILES or not encrypted:
            continue
        for doc in _docs(files[name])[:1]:
            refs = [posixpath.normpath(posixpath.join(directory, r)) for r in doc.get("resources") or []
                    if isinstance(r, str)]
            below = [data for n, data in files.items() if n.startswith(directory + "/")]
            if entry in refs and any(b"decryption:" in data for data in below):
                return f"./{directory}"
    return f"./{entry}"


def _demo_recipient() -> str:
    line = next(line for line in DEMO_KEY.read_text().splitlines() if line.startswith("# public key: "))
    return line.removeprefix("# public key: ")


def _placeholders(doc: Any) -> Any:
    """An encrypted document with placeholder values and no `sops:` metadata."""
    if not isinstance(doc, dict) or "sops" not in doc:
        return doc
    out = {k: v for k, v in doc.items() if k != "sops"}
    if isinstance(out.get("data"), dict):
        out["data"] = {k: base64.b64encode(PLACEHOLDER.encode()).decode() for k in out["data"]}
    if isinstance(out.get("stringData"), dict):
        out["stringData"] = {k: PLACEHOLDER for k in out["stringData"]}
    return out


def artifact(files: Mapping[str, bytes]) -> tuple[dict[str, bytes], bool]:
    """(the files as played, whether the DEMO key decrypts some of them): see the module's docstring."""
    demo = _demo_recipient().encode()
    out, needs_key = dict(files), False
    for name, data in files.items():
        if not name.endswith((".yaml", ".yml")) or b"\nsops:\n" not in data:
            continue
        if demo in data:
            needs_key = True
            continue
        stream = io.StringIO()
        _dump.dump_all([_placeholders(d) for d in _yaml.load_all(data) if d is not None], stream)
        out[name] = stream.getvalue().encode()
    return out, needs_key


def needed(files: Mapping[str, bytes], names: set[str]) -> set[str]:
    """`names` and every Flux Kustomization they depend on, transitively (by name)."""
    depends: dict[str, set[str]] = {}
    for name, data in files.items():
        for doc in _docs(data) if name.endswith((".yaml", ".yml")) else []:
            if _flux_ks(doc) and isinstance(doc.get("metadata"), dict):
                deps = (doc.get("spec") or {}).get("dependsOn") or []
                depends.setdefault(str(doc["metadata"].get("name")), set()).update(
                    str(d.get("name")) for d in deps if isinstance(d, dict))
    out, todo = set(), list(names)
    while todo:
        name = todo.pop()
        if name not in out:
            out.add(name)
            todo += sorted(depends.get(name, set()))
    return out


HEAVY = 30
"""More child Kustomizations (in `ks.yaml` files) than this and a repository is too heavy to play whole
here (placeholders for its Secrets and custom health checks stall some of them): see `sample`."""


def sample(files: Mapping[str, bytes]) -> set[str] | None:
    """None where the repository can be played whole; else the Flux Kustomizations to keep (see `trim`):
    one group folder's children and what they depend on, the group whose closure is smallest."""
    groups: dict[str, set[str]] = {}
    for name, data in files.items():
        if name.endswith("/ks.yaml"):
            group = posixpath.dirname(posixpath.dirname(name))
            groups.setdefault(group, set()).update(str(d["metadata"].get("name")) for d in _docs(data)
                                                   if _flux_ks(d) and isinstance(d.get("metadata"), dict))
    if sum(len(names) for names in groups.values()) <= HEAVY:
        return None
    return min((needed(files, names) for _, names in sorted(groups.items()) if names), key=len)


def trim(files: Mapping[str, bytes], keep: set[str]) -> dict[str, bytes]:
    """The files with every kustomization's `resources:` entry dropped that names a `ks.yaml` of Flux
    Kustomizations none of which is in `keep` (a repository too heavy to play whole: only the
    Kustomizations a scenario needs reach the cluster; everything else the groups hold stays)."""
    out = dict(files)
    for name, data in files.items():
        if name.rsplit("/", 1)[-1] not in KUSTOMIZATION_FILES:
            continue
        docs = _docs(data)
        if not docs or not isinstance(docs[0].get("resources"), list):
            continue
        directory = posixpath.dirname(name)
        kept = []
        for entry in docs[0]["resources"]:
            target = posixpath.normpath(posixpath.join(directory, str(entry)))
            flux = [d for d in _docs(files.get(target, b""))] if target in files else []
            if target.endswith("/ks.yaml") and flux and all(_flux_ks(d) for d in flux) and not any(
                    str((d.get("metadata") or {}).get("name")) in keep for d in flux):
                continue
            kept.append(entry)
        if kept != docs[0]["resources"]:
            stream = io.StringIO()
            _dump.dump({**docs[0], "resources": kept}, stream)
            out[name] = stream.getvalue().encode()
    return out


def give_demo_key(live: Cluster) -> None:
    """The DEMO key where kustomize-controller looks for it (Secret `sops-age` in flux-system)."""
    key = "".join(line + "\n" for line in DEMO_KEY.read_text().splitlines() if line.startswith("AGE-SECRET-KEY-"))
    live.apply({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": SOPS_AGE_SECRET, "namespace": NAMESPACE},
                "data": {"age.agekey": base64.b64encode(key.encode()).decode()}})


def play(live: Cluster, repo: Path, label: str, root: str | None = None, timeout: float = 240,
         keep: set[str] | None = None) -> str:
    """Play `repo`'s HEAD as the next revision (bootstrapped on `root`, found when not given; only the
    Flux Kustomizations in `keep` where given, see `trim`); return `root`."""
    files, needs_key = artifact(tree(repo))
    if keep is not None:
        files = trim(files, keep)
    root = root or bootstrap_path(files)
    if needs_key:
        give_demo_key(live)
    live.play(files, label, timeout=timeout, root=root)
    return root


def stalled(live: Cluster) -> dict[str, str]:
    """`namespace/name` -> why, of every Flux Kustomization that is not Ready (after a play): what did
    not apply this revision, so its "deletes nothing" would prove nothing."""
    out = {}
    for k in live.list(FLUX_GROUP, "Kustomization"):
        ready = next((c for c in (k.get("status") or {}).get("conditions") or [] if c["type"] == "Ready"), {})
        if ready.get("status") != "True":
            out[f"{k['metadata']['namespace']}/{k['metadata']['name']}"] = f"{ready.get('reason')}: " \
                                                                           f"{str(ready.get('message'))[:300]}"
    return out


def cli(*argv: str) -> tuple[int, dict[str, Any]]:
    """wave-bot's exit code and JSON report."""
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        code = main([*argv, "--format", "json"])
    return code, json.loads(out.getvalue())


def named(ref: Ref) -> str:
    """An object as wave-bot's findings name it: `Kind namespace/name` (`Kind name` when cluster-scoped)."""
    return f"{ref.kind} {ref.namespace}/{ref.name}" if ref.namespace else f"{ref.kind} {ref.name}"


__all__ = ["HEAVY", "artifact", "bootstrap_path", "cli", "give_demo_key", "named", "needed", "play", "sample",
           "stalled", "trim", "tree"]
