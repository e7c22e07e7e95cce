"""Owners inside the waves (issue 19): deleting a Flux Kustomization or a HelmRelease that a wave
applies deletes what it owns. Reproduced on copies of examples/homelab whose pihole unit holds only
an owner, as the issue describes them, through the CLI with real git."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bot.checks.cascade import cascade_of
from bot.cli import main
from bot.config import Config
from bot.repo.worktree import FsTree
from bot.resid import ResourceId
from bot.yamlio import documents as yamlio

from conftest import Kubectl, git, pvc, write_files
from support.moves import apply_as_is, findings_as_is

CHILD = "kustomize.toolkit.fluxcd.io/Kustomization flux-system/pihole"
RELEASE = "helm.toolkit.fluxcd.io/HelmRelease pihole/pihole"
PIHOLE_PVC = "PersistentVolumeClaim pihole/pihole-data"
PIHOLE_DEPLOY = "apps/Deployment pihole/pihole"


def child(prune: str = "true", path: str = "./kubernetes/pihole/app", extra: str = "") -> str:
    return f"""apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: pihole
  namespace: flux-system
spec:
  interval: 10m
  path: {path}
  prune: {prune}
  sourceRef:
    kind: GitRepository
    name: flux-system
{extra}"""


def release(values: str = "") -> str:
    return f"""apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: pihole
  namespace: pihole
spec:
  interval: 30m
  chart:
    spec:
      chart: pihole
      sourceRef:
        kind: HelmRepository
        name: mojo2600
        namespace: flux-system
{values}"""


APP = {
    "kubernetes/pihole/app/kustomization.yaml": "resources:\n  - deployment.yaml\n  - pvc.yaml\n",
    "kubernetes/pihole/app/deployment.yaml": """apiVersion: apps/v1
kind: Deployment
metadata:
  name: pihole
  namespace: pihole
spec:
  selector:
    matchLabels: {app: pihole}
  template:
    metadata:
      labels: {app: pihole}
    spec:
      containers:
        - name: pihole
          image: docker.io/pihole/pihole:2024.07.0
""",
    "kubernetes/pihole/app/pvc.yaml": pvc("pihole-data", "pihole").replace("1Gi", "2Gi"),
}


def with_unit(repo: Path, unit: str, files: dict[str, str] | None = None) -> Path:
    """`repo` with pihole's unit file holding `unit` (and `files` beside it), committed as the base."""
    (repo / "apps/wave-0/pihole.yaml").write_text(unit)
    for path, text in (APP if files is None else files).items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "pihole is an owner")
    return repo


def gain_dependency(repo: Path, moved: bool = True) -> None:
    """pihole needs jackett (wave 0): pihole moves to wave 1. `moved`: the PR's author also made the
    move (a plain `wave-bot apply`, which judges against the work tree); else only the catalog
    changes, and `apply --base` takes the next safe step itself."""
    catalog = repo / "catalog/pihole.yaml"
    catalog.write_text(catalog.read_text() + "  dependencies:\n    - to: jackett\n")
    if moved:
        apply_as_is(repo)
        assert (repo / "apps/wave-1/pihole.yaml").exists()


def plan(repo: Path, capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    capsys.readouterr()
    code = main(["plan", str(repo), "--base", "HEAD", "--format", "json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    return list(json.loads(out.out)["findings"])


def about(findings: list[dict[str, Any]], resource: str) -> list[dict[str, Any]]:
    return [f for f in findings if f.get("resource") == resource]


def test_moving_a_pruning_child_kustomization_to_a_later_wave_is_an_error_naming_its_pvc(
    example_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = with_unit(example_repo, child())
    gain_dependency(repo)
    (move,) = about(plan(repo, capsys), CHILD)
    assert move["code"] == "later-wave-move" and move["severity"] == "error"
    assert "its finalizer (prune: true) deletes everything in its inventory" in move["message"]
    assert PIHOLE_PVC in move["message"] and PIHOLE_DEPLOY in move["message"]
    assert "restart" not in move["message"]
    assert move["fix"].startswith("spec:\n  prune: false\n# Or, to take the move as it is")  # or accept it
    assert "sets spec.prune: false on the Flux Kustomization flux-system/pihole" in move["message"]


def test_a_child_kustomization_that_does_not_prune_moves_with_nothing_lost(
    example_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = with_unit(example_repo, child(prune="false"))
    gain_dependency(repo)
    (move,) = about(plan(repo, capsys), CHILD)
    assert move["code"] == "later-wave-move" and move["severity"] == "info"
    assert "its finalizer deletes nothing (prune: false)" in move["message"]
    assert PIHOLE_PVC not in move["message"]


def test_deleting_the_unit_file_of_a_pruning_child_is_an_error_naming_its_pvc(
    example_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = with_unit(example_repo, child(extra="  deletionPolicy: WaitForTermination\n"))
    (repo / "apps/wave-0/pihole.yaml").unlink()
    (removed,) = about(plan(repo, capsys), CHILD)
    assert removed["code"] == "resource-removed" and removed["severity"] == "error"
    assert "its finalizer (deletionPolicy: WaitForTermination) deletes everything" in removed["message"]
    assert PIHOLE_PVC in removed["message"] and PIHOLE_DEPLOY in removed["message"]
    assert removed["fix"].startswith("spec:\n  deletionPolicy: Orphan\n")


def test_orphan_keeps_what_a_removed_child_owns(example_repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = with_unit(example_repo, child(extra="  deletionPolicy: Orphan\n"))
    (repo / "apps/wave-0/pihole.yaml").unlink()
    (removed,) = about(plan(repo, capsys), CHILD)
    assert removed["severity"] == "info" and "its finalizer deletes nothing (deletionPolicy: Orphan)" in removed[
        "message"]


def test_the_childs_own_patches_and_nested_kustomizations_are_evaluated(
    example_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The child's spec.patches protect the PVC; a Kustomization inside its path owns a CNPG database.
    protect = """  patches:
    - target: {kind: PersistentVolumeClaim}
      patch: |
        - op: add
          path: /metadata/annotations
          value: {kustomize.toolkit.fluxcd.io/prune: disabled}
"""
    db = child(path="./kubernetes/pihole/db").replace("name: pihole\n  namespace", "name: pihole-db\n  namespace")
    files = {**APP, "kubernetes/pihole/app/kustomization.yaml": "resources: [deployment.yaml, pvc.yaml, db.yaml]\n",
             "kubernetes/pihole/app/db.yaml": db,
             "kubernetes/pihole/db/cluster.yaml": "apiVersion: postgresql.cnpg.io/v1\nkind: Cluster\nmetadata:\n"
                                                 "  name: pihole-db\n  namespace: pihole\n"}
    repo = with_unit(example_repo, child(extra=protect), files)
    gain_dependency(repo)
    (move,) = about(plan(repo, capsys), CHILD)
    assert move["severity"] == "error"
    assert "Data is lost: postgresql.cnpg.io/Cluster pihole/pihole-db" in move["message"]
    assert f"Left in place (they carry kustomize.toolkit.fluxcd.io/prune: disabled): {PIHOLE_PVC}" in move["message"]
    assert "kustomize.toolkit.fluxcd.io/Kustomization flux-system/pihole-db" in move["message"]


@pytest.mark.parametrize(("path", "extra", "said"), [
    ("../elsewhere", "", "its path ../elsewhere is outside the repository"),
    ("./kubernetes/pihole/app", "", "its sourceRef is GitRepository pihole-charts"),
])
def test_what_cannot_be_evaluated_is_said(path: str, extra: str, said: str, example_repo: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    unit = child(path=path)
    if "sourceRef" in said:
        unit = unit.replace("name: flux-system\n", "name: pihole-charts\n")
    repo = with_unit(example_repo, unit)
    gain_dependency(repo)
    (move,) = about(plan(repo, capsys), CHILD)
    assert f"Not evaluated, check by hand: what it applies ({said}" in move["message"]
    assert move["severity"] == "warning" and PIHOLE_PVC not in move["message"]


def test_a_helmrelease_moved_to_a_later_wave_is_an_uninstall_and_an_error_with_persistence(
    example_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = with_unit(example_repo, release("  values:\n    persistence:\n      enabled: true\n      size: 2Gi\n"), {})
    gain_dependency(repo)
    (move,) = about(plan(repo, capsys), RELEASE)
    assert move["code"] == "later-wave-move" and move["severity"] == "error"
    assert "helm-controller uninstalls the release" in move["message"] and "restart" not in move["message"]
    assert ("spec.values.persistence.enabled is true, so the chart templates a volume claim, deleted with its data"
            in move["message"])
    assert "Not evaluated, check by hand: what the chart renders" in move["message"]


EXISTING_CLAIM = "  values:\n    persistence:\n      enabled: true\n      existingClaim: data\n"


@pytest.mark.parametrize("values", ["", EXISTING_CLAIM])
def test_a_helmrelease_without_persistence_it_owns_is_an_uninstall_warning(
    values: str, example_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = with_unit(example_repo, release(values), {})
    gain_dependency(repo)
    (move,) = about(plan(repo, capsys), RELEASE)
    assert move["severity"] == "warning"
    assert "helm-controller uninstalls the release" in move["message"] and "restart" not in move["message"]


def test_a_helmrelease_rendering_a_stateful_kind_from_its_values_is_an_error(
    example_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    values = """  values:
    extraObjects:
      - apiVersion: postgresql.cnpg.io/v1
        kind: Cluster
        metadata: {name: pihole-db}
"""
    repo = with_unit(example_repo, release(values), {})
    gain_dependency(repo)
    (move,) = about(plan(repo, capsys), RELEASE)
    assert move["severity"] == "error"
    assert "spec.values.extraObjects[0] holds postgresql.cnpg.io/Cluster pihole-db" in move["message"]


# ---- the child's build against real kustomize ----------------------------------------------------

COMPONENT = {
    "kubernetes/pihole/extra/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n"
                                                  "resources: [cm.yaml]\npatches:\n  - target: {kind: Deployment}\n"
                                                  "    patch: |\n      - op: add\n        path: /metadata/labels\n"
                                                  "        value: {tier: dns}\n",
    "kubernetes/pihole/extra/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: pihole-env\n",
}
SHAPES = {
    "listed, with spec.patches and spec.components": (
        {**APP, **COMPONENT,
         "kubernetes/pihole/app/kustomization.yaml": "namespace: pihole\nresources: [deployment.yaml, pvc.yaml]\n"},
        """  components: [../extra]
  patches:
    - target: {kind: PersistentVolumeClaim, name: pihole-.*}
      patch: |
        - op: add
          path: /metadata/annotations
          value: {kustomize.toolkit.fluxcd.io/prune: disabled}
""", None),
    "a $patch: delete, labels and a strategic-merge spec.patches entry": (
        {**APP, "kubernetes/pihole/app/cm.yaml": COMPONENT["kubernetes/pihole/extra/cm.yaml"],
         "kubernetes/pihole/app/kustomization.yaml": "resources: [deployment.yaml, pvc.yaml, cm.yaml]\n"
                                                     "commonLabels: {app: pihole}\npatches:\n  - patch: |\n"
                                                     "      apiVersion: v1\n      kind: ConfigMap\n"
                                                     "      metadata: {name: pihole-env}\n      $patch: delete\n"},
        """  patches:
    - target: {labelSelector: app=pihole, kind: Deployment}
      patch: |
        apiVersion: apps/v1
        kind: Deployment
        metadata:
          name: any
          annotations: {kustomize.toolkit.fluxcd.io/prune: disabled}
""", None),
    "no kustomization (generated), with a subdirectory that has one": (
        {"kubernetes/pihole/app/deployment.yaml": APP["kubernetes/pihole/app/deployment.yaml"],
         "kubernetes/pihole/app/data/pvc.yaml": APP["kubernetes/pihole/app/pvc.yaml"],
         "kubernetes/pihole/app/sub/kustomization.yaml": "resources: [cm.yaml]\nnamespace: pihole\n",
         "kubernetes/pihole/app/sub/cm.yaml": COMPONENT["kubernetes/pihole/extra/cm.yaml"]},
        "", "resources: [deployment.yaml, data/pvc.yaml, sub]\n"),
}


def kubectl_ids(kubectl: Kubectl, root: Path, extra: str, generated: str | None) -> set[tuple[str, bool]]:
    """(object, carries prune: disabled) for what kustomize-controller builds: the child's spec.patches and
    spec.components appended to the kustomization of its path (or to the one it generates)."""
    app = root / "kubernetes/pihole/app"
    kfile = app / "kustomization.yaml"
    text = generated if generated is not None else kfile.read_text()
    adds = yamlio.load_one(f"spec:\n{extra}".encode(), "extra")
    spec = adds.value["spec"] if adds is not None and adds.value["spec"] else {}
    kust = {**yamlio.load_one(text.encode(), "k").value}  # type: ignore[union-attr]
    for key in ("patches", "components"):
        if key in spec:
            kust[key] = [*kust.get(key, []), *spec[key]]
    kfile.write_bytes(yamlio.dump(kust))
    built = kubectl(app)
    assert built.returncode == 0, built.stderr
    out = set()
    for doc in yamlio.load(built.stdout.encode(), "kubectl"):
        notes = (doc.value["metadata"].get("annotations") or {})
        out.add((str(ResourceId.of_object(doc.value)), notes.get("kustomize.toolkit.fluxcd.io/prune") == "disabled"))
    return out


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_what_the_cascade_says_a_child_builds_is_what_kustomize_builds(
    shape: str, tmp_path: Path, kubectl: Kubectl
) -> None:
    files, extra, generated = SHAPES[shape]
    write_files(tmp_path, {"apps/wave-0/pihole.yaml": child(extra=extra), **files})
    rid = ResourceId.of("kustomize.toolkit.fluxcd.io/v1", "Kustomization", "flux-system", "pihole")
    cascade = cascade_of(FsTree(str(tmp_path)), "apps/wave-0/pihole.yaml", rid, Config())
    assert cascade is not None and not cascade.unknown
    assert len(cascade.deletes) + len(cascade.kept) >= 2
    ours = {(str(r), False) for r in cascade.deletes} | {(str(r), True) for r in cascade.kept}
    assert ours == kubectl_ids(kubectl, tmp_path, extra, generated)


def test_the_childs_target_namespace_names_the_objects_where_they_live(
    example_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = with_unit(example_repo, child(extra="  targetNamespace: dns\n"))
    (repo / "apps/wave-0/pihole.yaml").unlink()
    (removed,) = about(plan(repo, capsys), CHILD)
    assert "Data is lost: PersistentVolumeClaim dns/pihole-data" in removed["message"]


def test_without_a_base_the_move_of_a_child_is_judged_on_the_work_tree(
    example_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = with_unit(example_repo, child())
    gain_dependency(repo, moved=False)
    (move,) = about(findings_as_is(repo), CHILD)  # the move as it is (plain apply holds it)
    assert move["severity"] == "error" and PIHOLE_PVC in move["message"]


def test_apply_against_the_base_holds_a_pruning_child_and_protects_the_child_itself(
    example_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The move would run the child's finalizer: the safe first step keeps it in wave 0 and marks the
    # child Kustomization prune: disabled, so wave 0 leaves it (and so its inventory) in place.
    repo = with_unit(example_repo, child())
    gain_dependency(repo, moved=False)
    capsys.readouterr()
    assert main(["apply", str(repo), "--base", "HEAD", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    (held,) = about(out["findings"], CHILD)
    assert held["code"] == "move-held"
    # It names the claim the child's finalizer would delete: in its message, and first among its objects
    # (the child itself holds no data).
    assert f"`{PIHOLE_PVC}`)." in held["message"].split("data loss for ", 1)[1]
    assert held["objects"][0] == {"kind": "PersistentVolumeClaim", "group": "", "namespace": "pihole",
                                  "name": "pihole-data", "loses_data": True}
    assert PIHOLE_PVC in held["headline"]
    assert not (repo / "apps/wave-1/pihole.yaml").exists()
    unit = (repo / "apps/wave-0/pihole.yaml").read_text()
    assert "kustomize.toolkit.fluxcd.io/prune: disabled" in unit


PATCH_PRUNE = """  - target:
      kind: Kustomization
    patch: |
      - op: replace
        path: /spec/prune
        value: true
"""


@pytest.mark.parametrize(("unit", "patches", "owner", "said"), [
    # Its sourceRef names its namespace: moved to dns, it still finds its GitRepository (without, it
    # never reconciles and its finalizer deletes nothing: tests/flux/test_fluxsim.py).
    (child(prune="false", extra="    namespace: flux-system\n"), PATCH_PRUNE,
     "kustomize.toolkit.fluxcd.io/Kustomization dns/pihole",
     "Data is lost: PersistentVolumeClaim pihole/pihole-data"),
    (release("  values:\n    persistence:\n      enabled: true\n"), "", "helm.toolkit.fluxcd.io/HelmRelease dns/pihole",
     "spec.values.persistence.enabled is true"),
], ids=["child", "helmrelease"])
def test_an_owner_in_a_unit_directory_is_judged_as_its_kustomization_builds_it(
    unit: str, patches: str, owner: str, said: str, example_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The unit's kustomization moves the owner into namespace dns, and (child) patches the child to
    # prune: the owner Flux deletes is the built one, and so is the spec its finalizer runs with.
    (example_repo / "apps/wave-0/pihole.yaml").unlink()
    kustomization = "namespace: dns\nresources:\n  - pihole.yaml\n" + ("patches:\n" + patches if patches else "")
    write_files(example_repo, {**APP, "apps/wave-0/pihole/pihole.yaml": unit,
                               "apps/wave-0/pihole/kustomization.yaml": kustomization})
    assert main(["apply", str(example_repo), "--format", "json"]) == 0  # the wave lists the directory
    git(example_repo, "add", "-A")
    git(example_repo, "commit", "-qm", "pihole is an owner in a directory")
    gain_dependency(example_repo, moved=False)
    apply_as_is(example_repo)
    assert (example_repo / "apps/wave-1/pihole/pihole.yaml").exists()
    (move,) = about(plan(example_repo, capsys), owner)
    assert (move["code"], move["severity"]) == ("later-wave-move", "error")
    assert said in move["message"] and "restart" not in move["message"]


def in_platform(repo: Path, name: str, text: str, files: dict[str, str] | None = None) -> Path:
    """`repo` with `text` in platform/<name> (the `platform` tier, not a wave, prune: true) and `files`,
    committed as the base."""
    kustomization = repo / "platform/kustomization.yaml"
    kustomization.write_text(kustomization.read_text() + f"  - {name}\n")
    write_files(repo, {f"platform/{name}": text, **(files or {})})
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", f"the platform tier applies {name}")
    return repo


def drop_from_platform(repo: Path, name: str) -> None:
    kustomization = repo / "platform/kustomization.yaml"
    kustomization.write_text(kustomization.read_text().replace(f"  - {name}\n", ""))
    (repo / "platform" / name).unlink()


def test_a_child_kustomization_a_tier_stops_applying_is_deleted_with_what_it_owns(
    example_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = in_platform(example_repo, "pihole-ks.yaml", child(), APP)
    drop_from_platform(repo, "pihole-ks.yaml")
    (removed,) = about(plan(repo, capsys), CHILD)
    assert (removed["code"], removed["severity"], removed["path"]) == (
        "resource-removed", "error", "platform/pihole-ks.yaml")
    assert removed["message"].startswith(f"platform no longer applies {CHILD} (platform/pihole-ks.yaml:1 at base), so "
                                         "it deletes it when it reconciles. its finalizer (prune: true) deletes "
                                         "everything in its inventory with it")
    assert PIHOLE_PVC in removed["message"] and removed["fix"].startswith("spec:\n  prune: false\n# Or, if Flux")


def test_a_helmrelease_a_tier_stops_applying_is_an_uninstall(
    example_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = in_platform(example_repo, "pihole-hr.yaml", release("  values:\n    persistence:\n      enabled: true\n"))
    drop_from_platform(repo, "pihole-hr.yaml")
    (removed,) = about(plan(repo, capsys), RELEASE)
    assert (removed["code"], removed["severity"]) == ("resource-removed", "error")
    assert "helm-controller uninstalls the release" in removed["message"]
    assert "persistence.enabled is true" in removed["message"]


def test_every_owner_a_tier_stops_applying_is_judged_a_protected_one_left_in_place(
    example_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    protected = child().replace("  namespace: flux-system\n", "  namespace: flux-system\n  annotations:\n"
                                "    kustomize.toolkit.fluxcd.io/prune: disabled\n", 1)
    repo = in_platform(example_repo, "pihole-ks.yaml", protected, APP)
    repo = in_platform(repo, "pihole-hr.yaml", release("  values:\n    persistence:\n      enabled: true\n"))
    drop_from_platform(repo, "pihole-ks.yaml")
    drop_from_platform(repo, "pihole-hr.yaml")
    report = plan(repo, capsys)
    (uninstall,) = about(report, RELEASE)
    assert (uninstall["code"], uninstall["severity"]) == ("resource-removed", "error")
    (kept,) = about(report, CHILD)
    assert (kept["code"], kept["severity"]) == ("resource-removed", "info")
    assert kept["message"] == (f"platform no longer applies {CHILD} (platform/pihole-ks.yaml:1 at base); it "
                               "carries kustomize.toolkit.fluxcd.io/prune: disabled, so Flux leaves it in the cluster, "
                               "unmanaged")


def test_a_tier_that_does_not_prune_deletes_no_owner_it_stops_applying(
    example_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    platform = example_repo / "clusters/base/platform.yaml"
    platform.write_text(platform.read_text().replace("  prune: true\n", "  prune: false\n"))
    repo = in_platform(example_repo, "pihole-ks.yaml", child(), APP)
    drop_from_platform(repo, "pihole-ks.yaml")
    assert about(plan(repo, capsys), CHILD) == []  # platform leaves it in the cluster, unmanaged


def test_an_owner_a_tier_keeps_applying_is_no_finding(example_repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = in_platform(example_repo, "pihole-ks.yaml", child(), APP)
    (repo / "platform/pihole-ks.yaml").write_text(child().replace("interval: 10m", "interval: 5m"))
    assert about(plan(repo, capsys), CHILD) == []


def test_a_helmrelease_moving_from_a_tier_into_a_wave_is_an_uninstall(
    example_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    values = "  values:\n    persistence:\n      enabled: true\n"
    repo = in_platform(example_repo, "pihole-hr.yaml", release(values))
    drop_from_platform(repo, "pihole-hr.yaml")
    (repo / "apps/wave-0/pihole.yaml").write_text(release(values))  # platform prunes it before wave 0 applies it
    (moved,) = about(plan(repo, capsys), RELEASE)
    assert (moved["code"], moved["severity"]) == ("cross-kustomization-move", "error")
    assert "helm-controller uninstalls the release" in moved["message"]


# ---- what the mutation run of checks.cascade let through (tools/mutation.py) ----------------------


def removed_child(repo: Path, capsys: pytest.CaptureFixture[str], unit: str,
                  files: dict[str, str] | None = None) -> dict[str, Any]:
    """The finding on the pihole child Kustomization `unit` when its unit file is deleted."""
    repo = with_unit(repo, unit, files)
    (repo / "apps/wave-0/pihole.yaml").unlink()
    (removed,) = about(plan(repo, capsys), CHILD)
    assert removed["code"] == "resource-removed"
    return removed


CLUSTER_ROLE = ("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: pihole-reader\n"
                "rules: []\n")


def test_a_target_namespace_moves_namespaced_objects_only_and_keeps_their_annotations(
    example_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kept = APP["kubernetes/pihole/app/pvc.yaml"].replace(
        "metadata:\n", "metadata:\n  annotations:\n    kustomize.toolkit.fluxcd.io/prune: disabled\n", 1)
    files = {**APP, "kubernetes/pihole/app/pvc.yaml": kept, "kubernetes/pihole/app/role.yaml": CLUSTER_ROLE,
             "kubernetes/pihole/app/kustomization.yaml": "resources: [deployment.yaml, pvc.yaml, role.yaml]\n"}
    removed = removed_child(example_repo, capsys, child(extra="  targetNamespace: dns\n"), files)
    assert "Left in place (they carry kustomize.toolkit.fluxcd.io/prune: disabled): PersistentVolumeClaim " \
           "dns/pihole-data" in removed["message"]
    assert "apps/Deployment dns/pihole" in removed["message"]
    assert "rbac.authorization.k8s.io/ClusterRole pihole-reader" in removed["message"]
    assert "ClusterRole dns/" not in removed["message"] and removed["severity"] != "error"


def test_prune_disabled_as_a_label_keeps_the_object_too(example_repo: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    # kustomize-controller skips an object labelled or annotated kustomize.toolkit.fluxcd.io/prune: disabled
    labelled = APP["kubernetes/pihole/app/pvc.yaml"].replace(
        "metadata:\n", "metadata:\n  labels:\n    kustomize.toolkit.fluxcd.io/prune: disabled\n", 1)
    removed = removed_child(example_repo, capsys, child(), {**APP, "kubernetes/pihole/app/pvc.yaml": labelled})
    assert f"Left in place (they carry kustomize.toolkit.fluxcd.io/prune: disabled): {PIHOLE_PVC}" in removed[
        "message"]
    assert "Data is lost" not in removed["message"] and removed["severity"] != "error"


def test_a_child_path_without_manifests_is_said_not_evaluated(example_repo: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    removed = removed_child(example_repo, capsys, child(), {"kubernetes/pihole/app/README.md": "nothing yet\n"})
    assert ("Not evaluated, check by hand: what ./kubernetes/pihole/app builds (kubernetes/pihole/app: has no "
            "manifests (kustomize-controller fails on an empty path))") in removed["message"]


def test_a_child_path_that_builds_nothing_deletes_nothing(example_repo: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    empty = {"kubernetes/pihole/app/kustomization.yaml": "resources: []\n"}
    removed = removed_child(example_repo, capsys, child(), empty)
    assert "deletes everything in its inventory with it (its inventory is empty, so nothing)" in removed["message"]


def test_an_unsupported_spec_key_of_the_child_is_said_not_evaluated(example_repo: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    removed = removed_child(example_repo, capsys, child(extra="  namePrefix: dns-\n"))
    assert "Not evaluated, check by hand: what it applies (its spec.namePrefix is not evaluated by wave-bot)" in \
        removed["message"]
    assert PIHOLE_PVC not in removed["message"]


def test_a_dropped_child_kustomization_tells_its_cascade(example_repo: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    # Its unit file kept without it: wave 0 prunes the child, whose finalizer prunes the PVC.
    settings = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: pihole-settings\n  namespace: pihole\n"
    repo = with_unit(example_repo, f"{child()}---\n{settings}")
    (repo / "apps/wave-0/pihole.yaml").write_text(settings)
    found = plan(repo, capsys)
    (dropped,) = about(found, CHILD)
    assert dropped["code"] == "resource-dropped" and dropped["severity"] == "error"
    assert "its finalizer (prune: true) deletes everything in its inventory" in dropped["message"]
    assert PIHOLE_PVC in dropped["message"]


def test_past_twelve_objects_the_rest_are_counted(example_repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    maps = {f"kubernetes/pihole/app/cm-{i:02}.yaml": f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-{i:02}\n"
                                                      f"  namespace: pihole\n" for i in range(14)}
    listed = ", ".join(["deployment.yaml", "pvc.yaml", *(p.rsplit("/", 1)[1] for p in maps)])
    files = {**APP, **maps, "kubernetes/pihole/app/kustomization.yaml": f"resources: [{listed}]\n"}
    removed = removed_child(example_repo, capsys, child(), files)
    # 15 objects that are not stateful: 12 named, 3 counted; the PVC always named
    assert f"with it: {PIHOLE_PVC}, " in removed["message"]
    assert " and 3 more (whatever applies them again recreates them empty)" in removed["message"]


def test_a_release_inside_the_child_is_said_uninstalled(example_repo: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    files = {"kubernetes/pihole/app/kustomization.yaml": "resources: [release.yaml]\n",
             "kubernetes/pihole/app/release.yaml": release()}
    removed = removed_child(example_repo, capsys, child(), files)
    assert (f"with it: {RELEASE}; helm-controller uninstalls {RELEASE}, deleting what its chart rendered "
            "(whatever applies them again recreates them empty)") in removed["message"]


def test_a_release_reading_values_from_elsewhere_says_they_were_not_evaluated(
    example_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    values = "  valuesFrom:\n    - kind: ConfigMap\n      name: pihole-values\n"
    repo = with_unit(example_repo, release(values), {})
    (repo / "apps/wave-0/pihole.yaml").unlink()
    (removed,) = about(plan(repo, capsys), RELEASE)
    assert f"the values {RELEASE} reads from ConfigMaps or Secrets (spec.valuesFrom)" in removed["message"]


def test_values_objects_of_a_configured_stateful_kind_inside_a_list_are_data_loss(
    example_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = example_repo / ".wave-bot.yaml"
    config.write_text(config.read_text() + "stateful_kinds:\n  - redis.example.com/Redis\n")
    values = """  values:
    extraObjects:
      - apiVersion: redis.example.com/v1
        kind: Redis
        metadata: {name: cache}
      - apiVersion: postgresql.cnpg.io/v1
        kind: Cluster
        metadata: {namespace: pihole}
"""
    repo = with_unit(example_repo, release(values), {})
    (repo / "apps/wave-0/pihole.yaml").unlink()
    (removed,) = about(plan(repo, capsys), RELEASE)
    assert removed["severity"] == "error"
    assert ("spec.values.extraObjects[0] holds redis.example.com/Redis cache, which the chart renders: it is "
            "deleted and its state is lost (redis.example.com/Redis is listed in stateful_kinds)") in removed["message"]
    # a name the chart fills in is not in the values: the object is named without one
    assert "spec.values.extraObjects[1] holds postgresql.cnpg.io/Cluster pihole/, which the chart renders" in \
        removed["message"]


def test_a_child_reading_the_waves_configured_source_is_evaluated(example_repo: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    config = example_repo / ".wave-bot.yaml"
    config.write_text(config.read_text() + "kustomization_template:\n  apiVersion: kustomize.toolkit.fluxcd.io/v1\n"
                      "  kind: Kustomization\n"
                      "  spec:\n    interval: 10m\n    prune: true\n"
                      "    sourceRef: {kind: OCIRepository, name: home-ops}\n")
    unit = child().replace("kind: GitRepository\n    name: flux-system\n", "kind: OCIRepository\n    name: home-ops\n")
    removed = removed_child(example_repo, capsys, unit)
    assert PIHOLE_PVC in removed["message"] and "Not evaluated" not in removed["message"]


@pytest.mark.parametrize("path", ["", "./"])
def test_a_child_building_the_repository_root_is_built_from_the_root(
    path: str, example_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # No spec.path is the source's root to Flux, as `./` is (this one fails on a file that is no manifest).
    removed = removed_child(example_repo, capsys, child(path=path))
    assert "Not evaluated, check by hand: what ./ builds (.sops.yaml: " in removed["message"]
