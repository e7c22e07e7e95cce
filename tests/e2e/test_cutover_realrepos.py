"""The README's two-step cutover, run as a user would on real public repositories and on the bundled
dir-per-app example flattened to its pre-wave shape (issue 28).

Nothing here knows a repository's name or paths: the shape is read from the tree.
- A *monolith*: a pruning Flux Kustomization (GitRepository source) whose `spec.path` is a directory
  holding the app tier, one directory per app, directly or in grouping folders. The user writes
  `.wave-bot.yaml` with `apps_dir` (that path), `base_dir` (the directory of its file) and every app
  directory as a unit under `dependencies:`, then runs `wave-bot apply --base main --fix-overlays`,
  merges, and runs it again.
- *Per-environment overlays*: kustomizations that build on directories of a sibling folder
  (`apps/staging` -> `../base/podinfo`). Declaring those directories as units must be refused at
  the first apply, exit 2, the tree unchanged.

Each step either succeeds, and then everything holds that the issue asks for (every kustomization
that built still builds; after step 2 the objects applied by all Flux Kustomizations are the same,
each as often; no Flux Kustomization but the legacy is gone; the waves (and the remainder that keeps
applying what no unit holds) equal the legacy but for name, path and dependsOn; every dependsOn
exists), or it is refused with exit 2, the tree unchanged and the error naming a file and line. A
monolith whose apps directory and grouping folders only list resources must split: what the units
leave behind is the remainder's, never a reason to refuse. Which outcome each repository gets is
printed.
"""
from __future__ import annotations

import json
import posixpath
import re
import shutil
import subprocess
import tempfile
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from bot.cli import main

from conftest import PROJECT, Kubectl, snapshot
from support import fluxsim, realrepos

FLUX_API = "kustomize.toolkit.fluxcd.io/"
KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
DNS = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
Id = tuple[str, str, str]


def _yaml_files(repo: Path) -> list[Path]:
    return sorted(p for p in repo.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file()
                  and not any(part.startswith(".") for part in p.relative_to(repo).parts))


def _docs(path: Path) -> list[Any]:
    """As kustomize reads a file: YAML 1.2 (`[os:etcd:backup]` is a list of one string; an anchor may
    be defined again), which the pure loader reads and libyaml's does not."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ruamel warns about a redefined anchor
            return [d for d in YAML(typ="safe", pure=True).load_all(path.read_text()) if isinstance(d, dict)]
    except Exception:  # a template, an encrypted or a non-YAML file: no Flux object of ours
        return []


def flux_kustomizations(repo: Path) -> dict[str, tuple[str, dict[str, Any]]]:
    """name -> (file, document) of every Flux Kustomization written in the repository."""
    out = {}
    for path in _yaml_files(repo):
        for doc in _docs(path):
            if doc.get("kind") == "Kustomization" and str(doc.get("apiVersion", "")).startswith(FLUX_API):
                name = (doc.get("metadata") or {}).get("name")
                if isinstance(name, str):
                    out[name] = (str(path.relative_to(repo)), doc)
    return out


def _spec_dir(doc: dict[str, Any]) -> str:
    return posixpath.normpath(str((doc.get("spec") or {}).get("path", "")).lstrip("./") or ".")


def _app_dirs(repo: Path, apps: str) -> list[str]:
    """The directories a user declares: each directory of a grouping folder, and each directory
    directly in the apps directory that holds YAML files itself."""
    out = []
    for top in sorted(p for p in (repo / apps).iterdir() if p.is_dir()):
        if any(p.suffix in (".yaml", ".yml") for p in top.iterdir() if p.is_file()) and not any(
                p.is_dir() for p in top.iterdir()):
            out.append(top)
        else:
            out += sorted(p for p in top.iterdir() if p.is_dir())
    return [str(p.relative_to(repo)) for p in out]


def monolith(repo: Path) -> tuple[str, str, list[str]] | None:
    """(legacy name, its apps directory, the app directories) of a monolithic pruning app tier."""
    found = []
    for name, (file, doc) in flux_kustomizations(repo).items():
        spec = doc.get("spec") or {}
        apps = _spec_dir(doc)
        if (spec.get("prune") is not True or (spec.get("sourceRef") or {}).get("kind") != "GitRepository"
                or apps == "." or not (repo / apps).is_dir() or file.startswith(apps + "/")):
            continue
        units = _app_dirs(repo, apps)
        if len(units) >= 3:
            found.append((len(units), name, apps, units))
    return max(found)[1:] if found else None


def overlays_of_a_base(repo: Path) -> tuple[str, list[str]] | None:
    """(the parent folder, the base directories) when sibling kustomizations build on a shared base."""
    bases: dict[str, set[str]] = {}
    for path in _yaml_files(repo):
        if path.name not in KUSTOMIZATION_FILES:
            continue
        for doc in _docs(path)[:1]:
            for ref in doc.get("resources") or []:
                if not isinstance(ref, str) or not ref.startswith("../"):
                    continue
                target = (path.parent / ref).resolve()
                parent = path.parent.parent.resolve()
                if target.is_dir() and target.parent.parent == parent:
                    bases.setdefault(str(parent.relative_to(repo.resolve())), set()).add(
                        str(target.relative_to(repo.resolve())))
    if not bases:
        return None
    parent, units = sorted(bases.items())[0]
    return parent, sorted(units)


def write_config(repo: Path, apps: str, base: str, units: list[str]) -> list[str]:
    names = Counter(posixpath.basename(u) for u in units)
    declared = sorted(n for n, count in names.items() if count == 1 and DNS.fullmatch(n) and len(n) <= 63)
    (repo / ".wave-bot.yaml").write_text(f"apps_dir: {apps}\nbase_dir: {base}\ndependencies:\n"
                                         + "".join(f"  {n}: []\n" for n in declared))
    return declared


def apply(repo: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["apply", str(repo), "--base", "main", "--fix-overlays"])
    return code, capsys.readouterr().err


def merge(repo: Path, message: str) -> None:
    realrepos.git(repo, "add", "-A")
    realrepos.git(repo, "commit", "-qm", message)


def kustomization_dirs(repo: Path) -> list[Path]:
    return sorted({p.parent for p in repo.rglob("*") if p.name in KUSTOMIZATION_FILES
                   and not any(part.startswith(".") for part in p.relative_to(repo).parts)})


def building(repo: Path, kubectl: Kubectl) -> set[str]:
    return {str(d.relative_to(repo)) for d in kustomization_dirs(repo) if kubectl(d).returncode == 0}


def _ids(text: str) -> list[Id]:
    return [(d.get("kind", ""), (d.get("metadata") or {}).get("namespace", ""), (d.get("metadata") or {})
             .get("name", "")) for d in YAML(typ="base").load_all(text) if isinstance(d, dict) and d.get("kind")]


def _has_kustomization(directory: Path) -> bool:
    return any((directory / name).is_file() for name in KUSTOMIZATION_FILES)


def controller_listing(directory: Path) -> list[str]:
    """What kustomize-controller lists in the kustomization it generates for a spec.path without one
    (fluxcd/pkg generateKustomization): every YAML file below it, in lexical order, a directory
    holding a kustomization as a whole, other directories walked; hidden files are never in the
    source artifact (written here from the controller's documented behaviour, not from wave-bot)."""
    out: list[str] = []

    def visit(folder: Path, rel: str) -> None:
        for entry in sorted(folder.iterdir(), key=lambda p: p.name):
            if entry.name.startswith(".") or entry.is_symlink():
                continue
            if entry.is_dir():
                if _has_kustomization(entry):
                    out.append(rel + entry.name)
                else:
                    visit(entry, f"{rel}{entry.name}/")
            elif entry.suffix in (".yaml", ".yml") and entry.is_file():
                out.append(rel + entry.name)

    visit(directory, "")
    return out


def applied_by_each(repo: Path, kubectl: Kubectl) -> dict[str, list[Id]]:
    """Flux Kustomization (GitRepository source) name -> what it applies (sorted): its spec.path built by
    kubectl kustomize, with the kustomization the controller generates written first (in a scratch
    copy) where the directory has none, so files the YAML reader here would misread count as Flux
    counts them."""
    named = {name: _spec_dir(doc) for name, (_, doc) in flux_kustomizations(repo).items()
             if ((doc.get("spec") or {}).get("sourceRef") or {}).get("kind") == "GitRepository"
             and (repo / _spec_dir(doc)).is_dir()}
    paths = list(named.values())
    scratch = Path(tempfile.mkdtemp(dir=repo.parent)) / "copy"
    shutil.copytree(repo, scratch, ignore=shutil.ignore_patterns(".git"))
    listings = {p: controller_listing(scratch / p) for p in set(paths) if not _has_kustomization(scratch / p)}
    for path, listing in listings.items():
        (scratch / path / "kustomization.yaml").write_text(
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n"
            + "".join(f"- {json.dumps(entry)}\n" for entry in listing))
    out: dict[str, list[Id]] = {}
    for name, path in named.items():
        built = kubectl(scratch / path)
        assert built.returncode == 0, f"{path}: {built.stderr}"
        out[name] = sorted(_ids(built.stdout))
    shutil.rmtree(scratch.parent)
    return out


def files_at(repo: Path, rev: str) -> dict[str, bytes]:
    """Every file of a revision with its bytes."""
    listing = realrepos.git(repo, "ls-tree", "-r", "-z", "--full-tree", rev).split("\0")
    blobs = [(line.split("\t", 1)[1], line.split()[2]) for line in listing if line and line.split()[1] == "blob"]
    raw = subprocess.run(["git", "-C", str(repo), "cat-file", "--batch"], check=True, capture_output=True,
                         input="".join(f"{sha}\n" for _, sha in blobs).encode()).stdout
    out, at = {}, 0
    for path, _ in blobs:
        header_end = raw.index(b"\n", at)
        size = int(raw[at:header_end].split()[2])
        out[path] = raw[header_end + 1:header_end + 1 + size]
        at = header_end + 1 + size + 1
    return out


def judge_merge(repo: Path, legacy_file: str, legacy: str, step: str) -> None:
    """The merge just made (HEAD~1 deployed, HEAD merged), judged by the project's Flux simulation
    (tests/support/fluxsim.py, independent of wave-bot): no history of Flux reconciling it deletes
    anything. The root is taken to build the directory of the legacy's file."""
    before, after = files_at(repo, "HEAD~1"), files_at(repo, "HEAD")
    entry = posixpath.dirname(legacy_file)
    specs = fluxsim.kustomizations(before, entry)
    # Not a vacuous verdict: the simulation reads the legacy and builds what it applies.
    assert legacy in specs and fluxsim.flux_build(before, specs[legacy]), f"{step}: the simulation cannot read it"
    outcome = fluxsim.simulate(before, after, entry)
    assert not outcome.deleted, f"{step}: Flux deletes {sorted(map(str, outcome.deleted))[:20]}"


def refused(repo: Path, before: dict[str, bytes], code: int, err: str) -> bool:
    """Whether the step was refused as input errors must be: exit 2, nothing written, file and line named."""
    if code != 2:
        return False
    print(err.splitlines()[0][:400])
    assert snapshot(repo) == before
    assert re.match(r"wave-bot: error: [^\s:]+:\d+: ", err), err
    return True


STATEFUL = ("Namespace", "PersistentVolumeClaim", "PersistentVolume")


def step_1_tells_the_whole_truth(repo: Path, capsys: pytest.CaptureFixture[str], kubectl: Kubectl,
                                 legacy_doc: dict[str, Any]) -> None:
    """Step 1's finding counts what the legacy applies as kustomize-controller builds its path (its
    kustomization, or the generated one, group components included) and its protection names every
    Namespace and claim among them."""
    capsys.readouterr()
    if main(["plan", str(repo), "--base", "main", "--format", "json"]) == 2:
        return  # refused: the apply that follows says why
    (step,) = [f for f in json.loads(capsys.readouterr().out)["findings"] if f["code"] == "cutover-step-1"]
    applied = set(applied_by_each(repo, kubectl)[legacy_doc["metadata"]["name"]])
    assert f"({len(applied)} object(s) here;" in step["message"], step["message"][:600]
    for kind, namespace, name in sorted(applied):
        if kind in STATEFUL:
            ns = f" -n {namespace}" if namespace and kind != "Namespace" else ""
            assert f"kubectl{ns} annotate {kind.lower()}/{name} " in (step["fix"] or ""), (kind, name)


def run_the_cutover(repo: Path, capsys: pytest.CaptureFixture[str], kubectl: Kubectl, legacy: str) -> str:
    """Steps 1 and 2 as the README says; returns how far it got ('split', or the refused step)."""
    built = building(repo, kubectl)
    flux_before = flux_kustomizations(repo)
    legacy_file, legacy_doc = flux_before[legacy]
    step_1_tells_the_whole_truth(repo, capsys, kubectl, legacy_doc)
    before = snapshot(repo)
    code, err = apply(repo, capsys)
    if refused(repo, before, code, err):
        return "step 1 refused"
    assert code == 0, err
    diff = realrepos.git(repo, "diff", "-U0", "HEAD")
    changed = [line for line in diff.splitlines() if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    assert sorted(c for c in changed if c.startswith("+")) in (["+  prune: false"], ["+  deletionPolicy: Orphan"], [
        "+  deletionPolicy: Orphan", "+  prune: false"]) and len(changed) in (2, 4), diff
    assert realrepos.git(repo, "diff", "--name-only", "HEAD").split() == [legacy_file]
    assert built <= building(repo, kubectl)
    capsys.readouterr()  # step 1's own pull request passes check: it only releases the legacy
    assert main(["check", str(repo), "--base", "main"]) == 0, capsys.readouterr().err[:2000]
    merge(repo, "wave-bot step 1")
    judge_merge(repo, legacy_file, legacy, "step 1")
    # The waves copy the legacy as step 2 finds it: `prune: true` again, but a `deletionPolicy: Orphan`
    # step 1 set in place of WaitForTermination/Delete stays (step 2 cannot tell which it replaced).
    released = flux_kustomizations(repo)[legacy][1]
    each_before = applied_by_each(repo, kubectl)
    applied_before = Counter(i for ids in each_before.values() for i in ids)
    children_before = {n: ids for n, ids in each_before.items() if n != legacy}
    before = snapshot(repo)
    code, err = apply(repo, capsys)
    if refused(repo, before, code, err):
        return f"step 2 refused: {err.splitlines()[0]}"
    assert code == 0, err
    merge(repo, "wave-bot step 2")
    judge_merge(repo, legacy_file, legacy, "step 2")
    # Every child Flux Kustomization that moved with its unit keeps its name (and, through its group's
    # namespace carried along, its namespace: the lane's object sets say so), and its spec.path,
    # rewritten to the unit's new place, builds the same objects.
    children_after = applied_by_each(repo, kubectl)
    for name, objects in children_before.items():
        assert children_after.get(name) == objects, name
    assert built - {d for d in built if not (repo / d).is_dir()} <= building(repo, kubectl)
    flux_after = flux_kustomizations(repo)
    assert set(flux_before) - set(flux_after) == {legacy}
    waves = {n: d for n, (_, d) in flux_after.items() if n not in flux_before}
    assert waves
    same = {k: v for k, v in released["spec"].items() if k not in ("path", "dependsOn")}
    assert {k: v for k, v in same.items() if k not in ("prune", "deletionPolicy")} == {
        k: v for k, v in legacy_doc["spec"].items() if k not in ("path", "dependsOn", "prune", "deletionPolicy")}
    for doc in waves.values():
        assert {k: v for k, v in doc["spec"].items() if k not in ("path", "dependsOn")} == {**same, "prune": True}
        assert {k: v for k, v in doc["metadata"].items() if k != "name"} == {
            k: v for k, v in legacy_doc["metadata"].items() if k != "name"}
    for _, doc in flux_after.values():
        for dep in (doc.get("spec") or {}).get("dependsOn") or []:
            assert dep["name"] in flux_after, (doc["metadata"]["name"], dep)
    assert Counter(i for ids in children_after.values() for i in ids) == applied_before
    assert legacy_file not in realrepos.git(repo, "ls-files") or legacy not in flux_after
    return "split"


@pytest.mark.parametrize("archive", realrepos.params(), ids=realrepos.archive_ids())
def test_the_readme_cutover_on_a_real_repository(
    archive: Path | None, tmp_path: Path, capsys: pytest.CaptureFixture[str], kubectl: Kubectl
) -> None:
    repo = realrepos.unpack(realrepos.require(archive), tmp_path / "repo")
    shape = monolith(repo)
    if shape is not None:
        legacy, apps, units = shape
        file, _ = flux_kustomizations(repo)[legacy]
        assert write_config(repo, apps, posixpath.dirname(file), units)
        merge(repo, "adopt wave-bot")
        judge_merge(repo, file, legacy, "adopt")
        outcome = run_the_cutover(repo, capsys, kubectl, legacy)
        print(f"{archive}: {outcome[:300]}")
        # Every monolith splits: what no unit holds stays applied by the remainder, and units leave
        # their grouping folders (namespace:, components:, one ks.yaml per app) with what the group
        # did to them.
        assert outcome == "split", outcome
        return
    overlays = overlays_of_a_base(repo)
    if overlays is None:
        pytest.skip("neither a monolithic app tier nor per-environment overlays of a base")
    parent, units = overlays
    anchor = next(iter(flux_kustomizations(repo).values()))[0]
    write_config(repo, parent, posixpath.dirname(anchor), units)
    merge(repo, "adopt wave-bot")
    before = snapshot(repo)
    code, err = apply(repo, capsys)
    assert refused(repo, before, code, err), err
    assert "builds on" in err and "per-environment overlay" in err


def flattened_example(make_repo: Any) -> tuple[Path, str]:
    """The dir-per-app example with its waves flattened (`flatten_waves`), merged as a monolith: the
    repository and its legacy Kustomization's name."""
    example = PROJECT / "examples" / "dir-per-app"
    repo = make_repo({str(p.relative_to(example)): p.read_bytes() for p in example.rglob("*") if p.is_file()},
                     name="dir-per-app")
    legacy = flatten_waves(repo)
    merge(repo, "the monolithic app tier")
    return repo, legacy


def flatten_waves(repo: Path) -> str:
    """A wave layout back in its pre-wave shape: every unit directly in apps/ (or its grouping folder),
    one Flux Kustomization `apps` for all of apps/ made from wave 0's, the waves' entries replaced by it."""
    waves = sorted((repo / "apps").glob("wave-*"))
    for wave in waves:
        (wave / "kustomization.yaml").unlink()
        shutil.copytree(wave, repo / "apps", dirs_exist_ok=True)
        shutil.rmtree(wave)
    base = repo / "clusters/base"
    wave0 = (base / "apps-wave-0.yaml").read_text()
    (base / "apps.yaml").write_text(wave0.replace("name: apps-wave-0", "name: apps")
                                    .replace("path: ./apps/wave-0", "path: ./apps"))
    for n in range(len(waves)):
        (base / f"apps-wave-{n}.yaml").unlink()
    text = (base / "kustomization.yaml").read_text()
    text = re.sub(r"  - apps-wave-0\.yaml[^\n]*\n", "  - apps.yaml\n", text)
    (base / "kustomization.yaml").write_text(re.sub(r"  - apps-wave-[1-9][0-9]*\.yaml[^\n]*\n", "", text))
    return "apps"


def test_the_readme_cutover_on_the_flattened_dir_per_app_example(
    make_repo: Any, capsys: pytest.CaptureFixture[str], kubectl: Kubectl
) -> None:
    repo, legacy = flattened_example(make_repo)
    assert run_the_cutover(repo, capsys, kubectl, legacy) == "split"
    # The simulation's verdict can fail: the split merged over the still pruning legacy (step 1
    # skipped) deletes the namespaces, claims and deployments.
    skipped = fluxsim.simulate(files_at(repo, "HEAD~2"), files_at(repo, "HEAD")).deleted
    assert fluxsim.Rid("", "PersistentVolumeClaim", "media", "jellyfin-config") in skipped
