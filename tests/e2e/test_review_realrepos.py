"""Review mode on the real repositories of ../shared/realrepos, with no configuration at all.

Untouched, each checks clean (`check --base HEAD` exits 0 with no error). On the repositories of the
one-child-Kustomization-per-app shape (a `ks.yaml` per app, found by that shape, never by name),
scripted pull requests get the verdict Flux's behaviour calls for: deleting an app that owns a claim
(an error naming it, whose fix is the safe step or `wave-bot accept`), renaming its Kustomization
(an error whose fix is `deletionPolicy: Orphan` first; followed literally, merge by merge, the
rename then deletes nothing), a `dependsOn` typo (an error with a did-you-mean), a stale
`spec.path` (a build failure, no deletion claimed) and a harmless edit (exit 0).
"""
from __future__ import annotations

import io
import json
import shutil
import tarfile
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from bot.cli import main

from support.realrepos import archives, git, params, require, unpack

_yaml = YAML(typ="safe", pure=True)
FLUX = "kustomize.toolkit.fluxcd.io"


def _ks_archives() -> list[Path | None]:
    """The archives holding a `ks.yaml` (the one-child-Kustomization-per-app shape)."""
    found: list[Path | None] = []
    for archive in archives():
        with tarfile.open(archive) as tar:
            if any(name.rsplit("/", 1)[-1] == "ks.yaml" for name in tar.getnames()):
                found.append(archive)
    return found or [None]


def cli(*argv: str) -> tuple[int, dict[str, Any]]:
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        code = main([*argv, "--format", "json"])
    return code, json.loads(out.getvalue())


def _commit(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)
    return git(repo, "rev-parse", "HEAD").strip()


def _errors(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for f in report["findings"] if f["severity"] == "error"]


@pytest.mark.parametrize("archive", params(), ids=lambda a: a.name.split(".")[0] if a else "none")
def test_an_untouched_repository_checks_clean_in_review_mode(archive: Path | None, tmp_path: Path) -> None:
    repo = unpack(require(archive), tmp_path / "repo")
    code, report = cli("check", str(repo), "--base", "HEAD")
    assert report["mode"] == "review"
    assert (code, _errors(report)) == (0, [])
    # Nothing changed: no finding of what the change deletes, and no gating or decryption problem
    # (those are reported only when the change brings them).
    assert [f for f in report["findings"] if f["code"] in REVIEW_CODES] == []
    # The warnings left are the tier checks' on the repository as it is, each true of what git holds:
    # a CRD whose source git does not show wave-bot (a chart's or the bootstrap's), a `${VAR}` in a
    # tier without postBuild (it reaches the cluster as written), a substituteFrom Secret not in git.
    assert {f["code"] for f in report["findings"] if f["severity"] == "warning"} <= JUSTIFIED


REVIEW_CODES = {"resource-removed", "kustomization-renamed", "cross-kustomization-move", "build-failed",
                "sops-not-decrypted", "depends-on-not-gating", "ready-expr-replaces-readiness"}
JUSTIFIED = {"crd-source-unknown", "substitution-without-postbuild", "substitution-source-missing"}


@dataclass(frozen=True)
class App:
    ks_file: str  # the app's ks.yaml, repository-relative
    name: str  # its (first) Kustomization's name
    path: str  # its spec.path, repository-relative
    claim: str  # the name of a PVC its build holds


def _docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in _yaml.load_all(path.read_text()) if isinstance(d, dict)]


def _flux_ks(doc: dict[str, Any]) -> bool:
    return doc.get("kind") == "Kustomization" and str(doc.get("apiVersion", "")).startswith(FLUX + "/")


def _claims(directory: Path) -> list[str]:
    """Plain names of the PVCs a directory's manifests define (no `${VAR}` in them)."""
    out = []
    for path in sorted(directory.glob("*.yaml")):
        for doc in _docs(path):
            name = str((doc.get("metadata") or {}).get("name", ""))
            if doc.get("kind") == "PersistentVolumeClaim" and "$" not in name:
                out.append(name)
    return out


def _depended_on(repo: Path) -> set[str]:
    names = set()
    for ks in repo.rglob("ks.yaml"):
        for doc in _docs(ks):
            for dep in ((doc.get("spec") or {}).get("dependsOn") or []) if _flux_ks(doc) else []:
                names.add(str(dep.get("name")))
    return names


def _apps(repo: Path) -> list[tuple[str, dict[str, Any]]]:
    """(ks.yaml, its first Flux Kustomization) of every app, in path order."""
    out = []
    for ks in sorted(repo.rglob("ks.yaml")):
        docs = [d for d in _docs(ks) if _flux_ks(d) and (d.get("spec") or {}).get("path")]
        if docs:
            out.append((str(ks.relative_to(repo)), docs[0]))
    return out


def _claim_app(repo: Path) -> App:
    """The first app whose Kustomization's build holds a PVC and that nothing dependsOn; where no app
    has one, the first such app gets one, committed as deployed (so every shape is exercised)."""
    needed = _depended_on(repo)
    candidates = [(f, d) for f, d in _apps(repo) if d["metadata"]["name"] not in needed
                  and (repo / str(d["spec"]["path"]).removeprefix("./") / "kustomization.yaml").is_file()]
    for ks_file, doc in candidates:
        path = str(doc["spec"]["path"]).removeprefix("./")
        claims = _claims(repo / path)
        if claims:
            return App(ks_file, doc["metadata"]["name"], path, claims[0])
    ks_file, doc = candidates[0]
    path = str(doc["spec"]["path"]).removeprefix("./")
    (repo / path / "claim.yaml").write_text(
        "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: added-data\nspec:\n"
        "  accessModes: [ReadWriteOnce]\n  resources:\n    requests:\n      storage: 1Gi\n")
    kustomization = repo / path / "kustomization.yaml"
    text = kustomization.read_text()
    assert "\nresources:\n" in text
    kustomization.write_text(text.replace("\nresources:\n", "\nresources:\n  - ./claim.yaml\n", 1))
    _commit(repo, "an app with a claim, deployed")
    return App(ks_file, doc["metadata"]["name"], path, "added-data")


@pytest.fixture(params=_ks_archives(), ids=lambda a: a.name.split(".")[0] if a else "none")
def ks_repo(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, App, str]:
    repo = unpack(require(request.param), tmp_path / "repo")
    app = _claim_app(repo)
    return repo, app, git(repo, "rev-parse", "HEAD").strip()


def _claim_errors(report: dict[str, Any], app: App) -> list[dict[str, Any]]:
    return [f for f in _errors(report) if str(f.get("resource", "")).startswith("PersistentVolumeClaim ")
            and str(f["resource"]).endswith(f"/{app.claim}")]


def test_deleting_an_app_that_owns_a_claim_is_an_error_naming_it(ks_repo: tuple[Path, App, str]) -> None:
    repo, app, deployed = ks_repo
    app_dir = Path(app.ks_file).parent
    parent = repo / app_dir.parent / "kustomization.yaml"
    listed = f"./{app_dir.name}/ks.yaml"
    assert listed in parent.read_text()
    parent.write_text("".join(line for line in parent.read_text().splitlines(keepends=True) if listed not in line))
    shutil.rmtree(repo / app_dir)
    _commit(repo, "retire the app")

    code, report = cli("check", str(repo), "--base", deployed)

    assert code == 1
    (error,) = _claim_errors(report, app)
    assert error["code"] == "resource-removed"
    assert "deletionPolicy: Orphan" in error["fix"] and "wave-bot accept --by" in error["fix"]


def _rename(repo: Path, app: App, new: str) -> None:
    path = repo / app.ks_file
    text = path.read_text()
    assert text.count(f"  name: {app.name}\n") >= 1
    path.write_text(text.replace(f"  name: {app.name}\n", f"  name: {new}\n", 1))


def _follow_step_1(repo: Path, fix: str) -> None:
    """The fix's step 1, pasted where it says: a patch appended to the parent's spec.patches (the
    file's last list), or `deletionPolicy: Orphan` under the Kustomization's `spec:`."""
    lines = fix.splitlines()
    where = next(line for line in lines if line.startswith(("# 1. in ", "#    in ")))
    target = where.split(" in ", 1)[1].split(",", 1)[0]
    body = [line for line in lines[:next(i for i, line in enumerate(lines) if line.startswith("# 2."))]
            if not line.startswith("#")]
    path = repo / target
    text = path.read_text()
    if body[0].startswith("    - patch:"):
        assert text.rstrip().splitlines()[-1].startswith("        "), "the parent's spec.patches must end the file"
        path.write_text(text.rstrip("\n") + "\n" + "\n".join(body) + "\n")
    else:
        assert body == ["spec:", "  deletionPolicy: Orphan"]
        assert "\nspec:\n" in text
        path.write_text(text.replace("\nspec:\n", "\nspec:\n  deletionPolicy: Orphan\n", 1))


def test_renaming_the_apps_kustomization_is_an_error_and_orphan_first_makes_it_safe(
    ks_repo: tuple[Path, App, str]
) -> None:
    repo, app, deployed = ks_repo
    _rename(repo, app, f"{app.name}-renamed")
    _commit(repo, "rename")
    code, report = cli("check", str(repo), "--base", deployed)
    assert code == 1
    (error,) = _claim_errors(report, app)
    assert error["code"] == "kustomization-renamed"
    assert "deletionPolicy: Orphan" in error["fix"]

    # Step 1, merged alone: it deletes nothing.
    git(repo, "reset", "-q", "--hard", deployed)
    _follow_step_1(repo, error["fix"])
    step_1 = _commit(repo, "orphan first")
    code, report = cli("check", str(repo), "--base", deployed)
    assert (code, _errors(report)) == (0, [])
    # Step 2, once step 1 is deployed: the rename deletes nothing now.
    _rename(repo, app, f"{app.name}-renamed")
    _commit(repo, "rename")
    code, report = cli("check", str(repo), "--base", step_1)
    assert (code, _errors(report)) == (0, [])


def test_a_depends_on_typo_is_an_error_with_a_did_you_mean(ks_repo: tuple[Path, App, str]) -> None:
    repo, _, deployed = ks_repo
    dependent = [(f, d["spec"]["dependsOn"]) for f, d in _apps(repo) if (d.get("spec") or {}).get("dependsOn")]
    assert dependent, "no app Kustomization has a dependsOn"
    ks_file, deps = dependent[0]
    target = str(deps[0]["name"])
    path = repo / ks_file
    text = path.read_text()
    assert f"- name: {target}\n" in text
    path.write_text(text.replace(f"- name: {target}\n", f"- name: {target}x\n", 1))
    _commit(repo, "typo")

    code, report = cli("check", str(repo), "--base", deployed)

    assert code == 1
    typos = [f for f in _errors(report) if f["code"] == "depends-on-missing"]
    assert typos and f"did you mean '{target}'" in typos[0]["message"] + str(typos[0].get("fix"))


def test_a_stale_spec_path_is_a_build_failure_and_no_deletion(ks_repo: tuple[Path, App, str]) -> None:
    repo, app, deployed = ks_repo
    moved = f"{app.path}-moved"
    git(repo, "mv", app.path, moved)
    _commit(repo, "move the app's directory, forgetting spec.path")

    code, report = cli("check", str(repo), "--base", deployed)

    assert code == 1
    assert [f for f in _errors(report) if f["code"] in ("resource-removed", "kustomization-renamed",
                                                         "cross-kustomization-move")] == []
    (failure,) = [f for f in _errors(report) if f["code"] in ("build-failed", "tier-path-moved")]
    assert failure["code"] == "build-failed" and app.path in failure["message"]
    assert f"(did you mean './{moved}'?)" in failure["message"]
    assert f"path: ./{moved}" in failure["fix"]


def test_a_harmless_edit_passes(ks_repo: tuple[Path, App, str]) -> None:
    repo, app, deployed = ks_repo
    with (repo / app.ks_file).open("a") as ks:
        ks.write("# reviewed\n")
    _commit(repo, "a comment")
    code, report = cli("check", str(repo), "--base", deployed)
    assert (code, _errors(report)) == (0, [])


def _app_template_release(repo: Path) -> tuple[Path, str] | None:
    """The first HelmRelease of bjw-s's app-template whose `persistence` has an item with a size and no
    `existingClaim` or other type (the chart renders a claim `<release>-<item>` for it), in a file that
    can go: one a generated kustomization takes, or that its directory's kustomization lists."""
    for path in sorted(repo.rglob("*.yaml")):
        if ".git" in path.parts or path.name == "kustomization.yaml":
            continue
        try:
            docs = _docs(path)
        except Exception:  # noqa: BLE001 - a template or an encrypted file: not this shape
            continue
        releases = [d for d in docs if d.get("kind") == "HelmRelease"]
        if len(docs) != 1 or len(releases) != 1:
            continue
        spec = releases[0].get("spec") or {}
        chart = str(((spec.get("chart") or {}).get("spec") or {}).get("chart") or (spec.get("chartRef") or {}).get(
            "name") or "")
        name = str((releases[0].get("metadata") or {}).get("name", ""))
        persistence = (spec.get("values") or {}).get("persistence") or {}
        items = [k for k, v in persistence.items() if isinstance(v, dict) and v.get("size") and "existingClaim" not in v
                 and v.get("type", "persistentVolumeClaim") == "persistentVolumeClaim" and v.get("enabled", True)
                 and not v.get("nameOverride") and not v.get("retain")]
        if chart != "app-template" or "$" in name or not items or spec.get("releaseName"):
            continue
        kustomization = path.parent / "kustomization.yaml"
        if not kustomization.exists() or f"./{path.name}\n" in kustomization.read_text():
            return path, f"{name}-{items[0]}"
    return None


@pytest.mark.parametrize("archive", params(), ids=lambda a: a.name.split(".")[0] if a else "none")
def test_deleting_an_app_template_release_with_persistence_is_an_error_naming_its_claim(
    archive: Path | None, tmp_path: Path
) -> None:
    repo = unpack(require(archive), tmp_path / "repo")
    found = _app_template_release(repo)
    if found is None:
        pytest.skip("no app-template HelmRelease with persistence in a file of its own: not this shape")
    path, claim = found
    kustomization = path.parent / "kustomization.yaml"
    if kustomization.exists():
        kustomization.write_text("".join(line for line in kustomization.read_text().splitlines(keepends=True)
                                         if line.strip() != f"- ./{path.name}"))
    path.unlink()
    _commit(repo, "retire the release")

    code, report = cli("check", str(repo), "--base", "HEAD~1")

    assert code == 1
    lost = [f for f in _errors(report) if str(f.get("resource", "")).startswith("PersistentVolumeClaim ")
            and str(f["resource"]).endswith(f"/{claim}")]
    assert lost, [f["message"] for f in _errors(report)]
