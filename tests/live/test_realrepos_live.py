"""Scripted pull requests on the real repositories of ../shared/realrepos, judged by real Flux
(kustomize-controller on a real API server, tests/support/liveflux.py): per pull request, what real
Flux deletes is what wave-bot's review reports, and the errors are exactly the claims among them.

The repositories are those of the one-child-Kustomization-per-app shape (a `ks.yaml` per app), found
by that shape, never by name, each played whole from its bootstrap path (tests/support/liveplay.py
says how that path is found and how SOPS is handled: where the files are encrypted to the project's
published DEMO age key, as cluster-template's are, the cluster gets that key as a `sops-age` Secret;
a file encrypted to any other key is played with placeholder values). The deployed revision gets an
app whose child Kustomization owns a PersistentVolumeClaim through a Flux `spec.components`
component (the claim named `${APP}`, substituted per child, as home-ops's kopiur component does): the
first such app the repository has, or else one made so, committed as deployed. Then, each from that
revision:
- deleting the app: wave-bot errors on the claim; real Flux deletes it (the parent prunes the child
  Kustomization, whose finalizer deletes its inventory);
- renaming its Kustomization: an error on the claim; real Flux deletes the old Kustomization's objects;
- renaming its directory so `spec.path` goes stale: `build-failed`, no deletion claimed; real Flux's
  build fails and deletes nothing;
- a harmless edit: no error; real Flux deletes nothing.
Compared per object (kind, namespace, name): every object real Flux deletes but the Flux
Kustomization objects themselves is among the objects wave-bot's deletion findings list (any
severity), and each of those is deleted; the error findings name exactly the claims real Flux
deleted. Left out, and why: what a HelmRelease's chart renders (helm-controller does not run, so the
chart's objects never exist and their uninstall is never seen; the HelmRelease object itself is
compared). The Kustomization objects are compared on their own: the deleted or renamed one is gone.

Cluster-scoped custom objects: kustomize writes a child's `targetNamespace` into a cluster-scoped custom
object (cert-manager's ClusterIssuer), and the API server drops it. wave-bot names such an object without
the namespace where it knows the kind's scope (bot/flux/scope.py: a CRD in git, or its table of charted
kinds), and the comparison holds it to that. Only for a kind wave-bot does not know does the comparison
name the object without the namespace where real Flux shows the kind cluster-scoped; the run prints
which objects those were. The harness scopes permissive CRDs by the `Cluster*`
convention (tests/support/liveflux.py).

A repository with more child Kustomizations than liveplay.HEAVY (home-ops: 77) is played trimmed: only
the scenario app's Kustomizations and what they depend on reach the cluster (liveplay.trim); the rest of
each group folder stays. wave-bot reviews the whole repository all the same.

Skipped with the reason without the binaries (oracle/build) or the archives; required under
WAVE_BOT_REQUIRE_LIVEFLUX=1 and WAVE_BOT_REQUIRE_REALGRAPH=1.
"""
from __future__ import annotations

import posixpath
import shutil
import tarfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from bot.flux.scope import Scopes
from bot.resid import ResourceId

from support import liveplay
from support.liveflux import FLUX_GROUP, Cluster, Ref, cluster, require_binaries
from support.realrepos import archives, git, require, unpack

_yaml = YAML(typ="safe", pure=True)
DELETING = {"resource-removed", "kustomization-renamed", "cross-kustomization-move", "namespace-deleted"}
TIMES: dict[str, float] = {}
NAMED_WITH_A_NAMESPACE: set[str] = set()


def _ks_archives() -> list[Path | None]:
    """The archives holding a `ks.yaml` (the one-child-Kustomization-per-app shape), smallest first."""
    found: list[Path | None] = []
    for archive in sorted(archives(), key=lambda a: a.stat().st_size):
        with tarfile.open(archive) as tar:
            if any(name.rsplit("/", 1)[-1] == "ks.yaml" for name in tar.getnames()):
                found.append(archive)
    return found or [None]


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    require_binaries()
    with cluster(tmp_path_factory.mktemp("liveflux")) as c:
        yield c


@dataclass(frozen=True)
class App:
    ks_file: str  # the app's ks.yaml
    listed: str  # its entry in the parent kustomization's resources
    name: str  # the child Kustomization owning the claim
    home: str  # that Kustomization's namespace
    namespace: str  # where its objects live
    path: str  # its spec.path, repository-relative
    claim: str  # the claim's name, substituted


def _docs(path: Path) -> list[dict[str, Any]]:
    try:
        return [d for d in _yaml.load_all(path.read_text()) if isinstance(d, dict)]
    except Exception:  # noqa: BLE001 - a template or an encrypted file: no Flux object of ours
        return []


def _flux_ks(doc: dict[str, Any]) -> bool:
    return doc.get("kind") == "Kustomization" and str(doc.get("apiVersion", "")).startswith(FLUX_GROUP + "/")


def _group_namespace(repo: Path, ks_file: Path) -> tuple[str, str] | None:
    """(the entry naming `ks_file` in its parent kustomization, that kustomization's `namespace:`)."""
    parent = ks_file.parent.parent / "kustomization.yaml"
    entry = f"./{ks_file.parent.name}/{ks_file.name}"
    if not parent.is_file():
        return None
    docs = _docs(parent)
    if not docs or entry not in (docs[0].get("resources") or []):
        return None
    return entry, str(docs[0].get("namespace") or "flux-system")


def _component_claims(repo: Path, doc: dict[str, Any]) -> list[str]:
    """Names of the PVCs the Kustomization's `spec.components` add, with its `postBuild.substitute`."""
    spec = doc.get("spec") or {}
    subst = {str(k): str(v) for k, v in ((spec.get("postBuild") or {}).get("substitute") or {}).items()}
    out = []
    for component in spec.get("components") or []:
        where = repo / posixpath.normpath(posixpath.join(str(spec["path"]).removeprefix("./"), str(component)))
        for path in sorted(where.rglob("*.yaml")) if where.is_dir() else []:
            for d in _docs(path):
                name = str((d.get("metadata") or {}).get("name", ""))
                if d.get("kind") == "PersistentVolumeClaim":
                    for var, value in subst.items():
                        name = name.replace("${" + var + "}", value)
                    if "$" not in name:
                        out.append(name)
    return out


def _depended_on(repo: Path) -> set[str]:
    return {str(dep.get("name")) for ks in repo.rglob("ks.yaml") for d in _docs(ks) if _flux_ks(d)
            for dep in (d.get("spec") or {}).get("dependsOn") or []}


def component_claim_app(repo: Path) -> App:
    """The first app whose child Kustomization owns a claim through `spec.components` and that nothing
    depends on; where none has, the first such app gets one (a component beside its ks.yaml adding a
    PVC `${APP}`, APP substituted as its name), committed as deployed."""
    needed = _depended_on(repo)
    candidates = []
    for ks in sorted(repo.rglob("ks.yaml")):
        group = _group_namespace(repo, ks)
        docs = [d for d in _docs(ks) if _flux_ks(d) and (d.get("spec") or {}).get("path")]
        if group is None or not docs or any(d["metadata"]["name"] in needed for d in docs):
            continue
        for doc in docs:
            ns = str(doc["metadata"].get("namespace") or group[1])
            path = str(doc["spec"]["path"]).removeprefix("./")
            target = str(doc["spec"].get("targetNamespace") or ns)
            claims = _component_claims(repo, doc)
            if claims:
                return App(str(ks.relative_to(repo)), group[0], doc["metadata"]["name"], ns, target, path, claims[0])
            candidates.append((ks, group[0], doc, ns, target, path))
    assert candidates, "no app Kustomization listed by its group's kustomization and depended on by none"
    ks, listed, doc, home, target, path = candidates[0]
    name = doc["metadata"]["name"]
    component = ks.parent / "claim-component"
    component.mkdir()
    (component / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nresources:\n  - ./claim.yaml\n")
    (component / "claim.yaml").write_text(
        "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: ${APP}\nspec:\n"
        "  accessModes: [ReadWriteOnce]\n  resources:\n    requests:\n      storage: 1Gi\n")
    relative = posixpath.relpath(str(component.relative_to(repo)), path)
    text = ks.read_text()
    head, sep, tail = text.partition(f"  name: {name}\nspec:\n")
    assert sep and "components:" not in tail.split("\n---", 1)[0], text
    if "  postBuild:\n" in tail.split("\n---", 1)[0]:
        tail = tail.replace("  postBuild:\n", f"  postBuild:\n    substitute:\n      APP: {name}\n", 1)
    else:
        tail = f"  postBuild:\n    substitute:\n      APP: {name}\n" + tail
    ks.write_text(head + sep + f"  components:\n    - {relative}\n" + tail)
    _commit(repo, "an app owning a claim through a component, deployed")
    return App(str(ks.relative_to(repo)), listed, name, home, target, path, name)


def _commit(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)
    return git(repo, "rev-parse", "HEAD").strip()


@pytest.fixture(params=_ks_archives(), ids=lambda a: a.name.split(".")[0] if a else "none")
def ks_repo(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, App, str]:
    repo = unpack(require(request.param), tmp_path / "repo")
    app = component_claim_app(repo)
    return repo, app, git(repo, "rev-parse", "HEAD").strip()


@dataclass(frozen=True)
class Verdict:
    real: set[Ref]  # what the API server deleted, the Flux Kustomization objects left out
    kustomizations: set[str]  # the Flux Kustomizations it deleted, as `namespace/name`
    reported: set[Ref]  # the objects of wave-bot's deletion findings, any severity
    errors: set[str]  # the resources of its error findings
    codes: set[str]  # the codes of its error findings
    code: int
    stalled: dict[str, str]  # the Flux Kustomizations not Ready after the head revision, and why


def judge(live: Cluster, repo: Path, deployed: str, label: str, app: App) -> Verdict:
    """Play `deployed`, then HEAD, through real Flux; wave-bot's review of HEAD against `deployed`."""
    started = time.monotonic()
    head = git(repo, "rev-parse", "HEAD").strip()
    live.reset()
    git(repo, "checkout", "-q", deployed)
    files = liveplay.tree(repo)
    keep = None
    if liveplay.sample(files) is not None:  # too heavy to play whole
        keep = liveplay.needed(files, {app.name}) | {f"{app.name}-renamed"}
    root = liveplay.play(live, repo, "deployed", keep=keep)
    since = live.audit_offset()
    git(repo, "checkout", "-q", head)
    liveplay.play(live, repo, label, root=root, keep=keep)
    deleted = live.deletions(since)
    stalled = liveplay.stalled(live)
    code, report = liveplay.cli("check", str(repo), "--base", deployed)
    TIMES[f"{repo.parent.name}: {label}"] = time.monotonic() - started
    reported = {Ref(o["group"], o["kind"], o["namespace"], o["name"]) for f in report["findings"]
                if f["code"] in DELETING for o in f.get("objects") or []}
    errors = [f for f in report["findings"] if f["severity"] == "error"]
    flux = {r for r in deleted if (r.group, r.kind) == (FLUX_GROUP, "Kustomization")}
    return Verdict(deleted - flux, {f"{r.namespace}/{r.name}" for r in flux}, reported,
                   {str(f.get("resource", "")) for f in errors}, {f["code"] for f in errors}, code, stalled)


def _claim(app: App) -> Ref:
    return Ref("", "PersistentVolumeClaim", app.namespace, app.claim)


def _scope_blind(v: Verdict) -> set[Ref]:
    """wave-bot's reported objects, those of a custom kind whose scope wave-bot does not know
    (bot/flux/scope.py) and that real Flux showed to be cluster-scoped named without the namespace
    kustomize wrote into them (recorded and printed). A kind wave-bot knows is compared as named."""
    cluster_kinds = {(r.group, r.kind) for r in v.real if not r.namespace and r.group}
    unknown = {(r.group, r.kind) for r in v.reported
               if Scopes().cluster_scoped(ResourceId(r.group, r.kind, r.namespace, r.name)) is None}
    blind = cluster_kinds & unknown
    out = {Ref(r.group, r.kind, "", r.name) if (r.group, r.kind) in blind else r for r in v.reported}
    NAMED_WITH_A_NAMESPACE.update(sorted(liveplay.named(r) for r in v.reported - out))
    return out


def _agree(v: Verdict) -> None:
    """What real Flux deleted is what wave-bot reported; its errors are exactly the claims among them."""
    assert not v.stalled, f"not applied, so its verdict would prove nothing: {v.stalled}"
    reported = _scope_blind(v)
    assert v.real == reported, (f"real Flux deleted but wave-bot did not report: {sorted(v.real - reported)}; "
                                  f"reported but not deleted: {sorted(reported - v.real)}")
    claims = {liveplay.named(r) for r in v.real if r.kind == "PersistentVolumeClaim"}
    assert v.errors == claims, (v.errors, claims)


def test_deleting_an_app_whose_component_owns_a_claim(live: Cluster, ks_repo: tuple[Path, App, str]) -> None:
    repo, app, deployed = ks_repo
    parent = repo / Path(app.ks_file).parent.parent / "kustomization.yaml"
    parent.write_text("".join(line for line in parent.read_text().splitlines(keepends=True)
                              if line.strip() != f"- {app.listed}"))
    shutil.rmtree(repo / Path(app.ks_file).parent)
    _commit(repo, "retire the app")

    v = judge(live, repo, deployed, "delete the app", app)

    assert _claim(app) in v.real
    assert v.code == 1 and v.codes == {"resource-removed"}
    _agree(v)


def test_renaming_the_apps_kustomization(live: Cluster, ks_repo: tuple[Path, App, str]) -> None:
    repo, app, deployed = ks_repo
    path = repo / app.ks_file
    path.write_text(path.read_text().replace(f"  name: {app.name}\n", f"  name: {app.name}-renamed\n", 1))
    _commit(repo, "rename the app's Kustomization")

    v = judge(live, repo, deployed, "rename the Kustomization", app)

    assert _claim(app) in v.real and any(k.endswith(f"/{app.name}") for k in v.kustomizations)
    assert v.code == 1 and v.codes == {"kustomization-renamed"}
    _agree(v)


def test_a_stale_spec_path_fails_the_build_and_deletes_nothing(
    live: Cluster, ks_repo: tuple[Path, App, str]
) -> None:
    repo, app, deployed = ks_repo
    git(repo, "mv", app.path, f"{app.path}-moved")
    _commit(repo, "move the app's directory, forgetting spec.path")

    v = judge(live, repo, deployed, "stale spec.path", app)

    assert (v.real, v.kustomizations) == (set(), set())
    assert list(v.stalled) == [f"{app.home}/{app.name}"] and "path not found" in v.stalled[f"{app.home}/{app.name}"]
    assert v.code == 1 and v.codes == {"build-failed"} and v.reported == set()


def test_a_harmless_edit_deletes_nothing(live: Cluster, ks_repo: tuple[Path, App, str]) -> None:
    repo, app, deployed = ks_repo
    with (repo / app.ks_file).open("a") as ks:
        ks.write("# reviewed\n")
    _commit(repo, "a comment")

    v = judge(live, repo, deployed, "harmless edit", app)

    assert (v.real, v.kustomizations, v.code, v.errors, v.stalled) == (set(), set(), 0, set(), {})


@pytest.fixture(scope="module", autouse=True)
def _report_times() -> Iterator[None]:
    yield
    if TIMES:
        print("\nscripted pull requests through real Flux:")
        for what, seconds in TIMES.items():
            print(f"  {what}: {seconds:.0f} s")
    if NAMED_WITH_A_NAMESPACE:
        print("cluster-scoped custom objects wave-bot names with a namespace (the API server drops it): "
              + ", ".join(sorted(NAMED_WITH_A_NAMESPACE)))
