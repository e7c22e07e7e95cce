"""checks/review.py: what a change makes Flux delete, Flux Kustomization by Flux Kustomization."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from bot.checks import acceptance
from bot.checks.review import (
    Built,
    Failure,
    Unit,
    deletion_findings,
    depends_on_findings,
    gating_findings,
    moved_to,
)
from bot.config import Config
from bot.repo.worktree import FsTree
from bot.resid import ResourceId

from support.fluxsim import Rid, simulate
from support.minirepo import (
    APP,
    W0,
    check,
    child,
    cm,
    commit,
    drop_y_and_add,
    files_at,
    move_y_to_a_new_child_without_a_namespace,
    repo_of,
)

FLUX = "kustomize.toolkit.fluxcd.io"
PVC = ResourceId("", "PersistentVolumeClaim", "media", "plex-config", "v1")
DEPLOY = ResourceId("apps", "Deployment", "media", "plex", "v1")
CONFIG = Config()


def _obj(rid: ResourceId, **kw: object) -> Built:
    return Built(rid, "kubernetes/apps/media/plex/app/pvc.yaml", 3, **kw)  # type: ignore[arg-type]


def _ks_obj(name: str, namespace: str = "flux-system") -> Built:
    return Built(ResourceId(FLUX, "Kustomization", namespace, name, "v1"), f"kubernetes/apps/{name}/ks.yaml", 2)


PARENT = Unit("main", "flux-system", "cluster-apps", "kubernetes/flux/cluster/ks.yaml", 2,
              spec_path="./kubernetes/apps", objects=(_ks_obj("plex"),))
PLEX = Unit("main", "flux-system", "plex", "kubernetes/apps/media/plex/ks.yaml", 3,
            spec_path="./kubernetes/apps/media/plex/app", parent="flux-system/cluster-apps",
            objects=(_obj(PVC), _obj(DEPLOY)))


def _parent_without_children() -> Unit:
    return dataclasses.replace(PARENT, objects=())


def test_deleting_a_child_kustomization_that_owns_a_pvc_is_an_error_naming_it_with_the_safe_step() -> None:
    findings = deletion_findings([PARENT, PLEX], [_parent_without_children()], CONFIG)

    errors = [f for f in findings if f.severity == "error"]
    assert [(f.code, f.resource) for f in errors] == [("resource-removed", str(PVC))]
    assert errors[0].message.startswith("PersistentVolumeClaim media/plex-config is lost: Kustomization "
                                        "flux-system/plex (main) is deleted")
    assert "its finalizer (deletionPolicy: MirrorPrune, prune: true) deletes it: the claim is deleted" \
        in errors[0].message
    assert errors[0].fix is not None and "deletionPolicy: Orphan" in errors[0].fix
    assert "kubernetes/apps/media/plex/ks.yaml" in errors[0].fix
    stateless = [f for f in findings if f.severity == "info"]
    assert len(stateless) == 1 and "apps/Deployment media/plex" in stateless[0].message


def test_the_deletion_can_be_accepted_by_name() -> None:
    findings = deletion_findings([PARENT, PLEX], [_parent_without_children()], CONFIG)
    judged = acceptance.judge(findings, (), True)
    error = next(f for f in judged if f.severity == "error")
    assert "wave-bot accept --by '<your name>'" in (error.fix or "")
    assert "'PersistentVolumeClaim media/plex-config'" in (error.fix or "")
    entry = acceptance.Acceptance(str(PVC), "alice", "retired", acceptance.ACCEPT_FILE, 2)
    assert not [f for f in acceptance.judge(findings, (entry,), True) if f.severity == "error"]


def test_orphan_or_prune_false_at_base_deletes_nothing() -> None:
    for setting in ({"deletion_policy": "Orphan"}, {"prune": False}):
        old = dataclasses.replace(PLEX, **setting)  # type: ignore[arg-type]
        assert deletion_findings([PARENT, old], [_parent_without_children()], CONFIG) == []


def test_delete_policy_deletes_even_without_prune() -> None:
    old = dataclasses.replace(PLEX, prune=False, deletion_policy="Delete")
    findings = deletion_findings([PARENT, old], [_parent_without_children()], CONFIG)
    assert [f.resource for f in findings if f.severity == "error"] == [str(PVC)]


def test_a_parent_that_does_not_prune_leaves_the_child() -> None:
    parent = dataclasses.replace(PARENT, prune=False)
    assert deletion_findings([parent, PLEX], [dataclasses.replace(parent, objects=())], CONFIG) == []


def test_renaming_a_child_kustomization_is_an_error_whose_fix_is_orphan_first() -> None:
    new = dataclasses.replace(PLEX, name="plex-app")
    findings = deletion_findings([PARENT, PLEX], [PARENT, new], CONFIG)

    errors = [f for f in findings if f.severity == "error"]
    assert [(f.code, f.resource) for f in errors] == [("kustomization-renamed", str(PVC))]
    assert "renamed to flux-system/plex-app" in errors[0].message
    assert "recreates them empty" in errors[0].message
    assert errors[0].fix is not None
    assert errors[0].fix.startswith("# 1. in kubernetes/apps/media/plex/ks.yaml, set only this on Kustomization "
                                    "flux-system/plex")
    assert [f.severity for f in findings if f.severity != "error"] == ["warning"]


def test_a_namespace_change_is_a_deletion_and_a_creation_too() -> None:
    new = dataclasses.replace(PLEX, namespace="media")
    findings = deletion_findings([PARENT, PLEX], [PARENT, new], CONFIG)
    assert any(f.code == "kustomization-renamed" and "its namespace changes to media/plex" in f.message
               and f.severity == "error" for f in findings)


def test_where_the_parent_patches_the_deletion_policy_the_step_goes_through_the_parent() -> None:
    patched = dataclasses.replace(PLEX, deletion_policy="WaitForTermination", policy_from=PARENT.path)
    new = dataclasses.replace(patched, name="plex-app")
    (error,) = [f for f in deletion_findings([PARENT, patched], [PARENT, new], CONFIG) if f.severity == "error"]
    assert error.fix is not None
    assert f"in {PARENT.path}, append to the parent's spec.patches" in error.fix
    assert "        name: plex\n" in error.fix and "deletionPolicy: Orphan" in error.fix
    assert "an edit of kubernetes/apps/media/plex/ks.yaml is overridden" in error.fix


def test_a_head_that_fails_to_build_deletes_nothing_and_says_why() -> None:
    failure = Failure("kubernetes/apps/media/plex/ks.yaml", 9, "spec.path 'kubernetes/apps/media/plex/app' does "
                      "not exist", "did you mean 'kubernetes/apps/media/plex/application'?")
    broken = dataclasses.replace(PLEX, objects=(), failure=failure)
    findings = deletion_findings([PARENT, PLEX], [PARENT, broken], CONFIG)
    assert [f.code for f in findings] == ["build-failed"]
    assert findings[0].path == "kubernetes/apps/media/plex/ks.yaml" and findings[0].line == 9
    assert "cannot be built: kubernetes/apps/media/plex/ks.yaml:9: spec.path 'kubernetes/apps/media/plex/app' " \
           "does not exist. kustomize-controller applies and prunes nothing of it until it is fixed. So this change " \
           "deletes nothing through it" in findings[0].message
    assert findings[0].fix == "did you mean 'kubernetes/apps/media/plex/application'?"
    assert deletion_findings([PARENT, broken], [PARENT, broken], CONFIG) == []  # not this change's


def test_a_parent_that_fails_to_build_deletes_no_child() -> None:
    broken = dataclasses.replace(PARENT, objects=(), failure=Failure(PARENT.path, 8, "'kubernetes/apps' is gone"))
    findings = deletion_findings([PARENT, PLEX], [broken], CONFIG)
    assert [f.code for f in findings] == ["build-failed"]


def test_deleting_a_parent_cascades_through_its_children() -> None:
    root = Unit("main", "flux-system", "flux-system", "kubernetes/flux/config/cluster.yaml", 1,
                objects=(_ks_obj("cluster-apps"),))
    parent = dataclasses.replace(PARENT, parent="flux-system/flux-system")
    findings = deletion_findings([root, parent, PLEX], [dataclasses.replace(root, objects=())], CONFIG)
    (error,) = [f for f in findings if f.severity == "error"]
    assert error.resource == str(PVC)
    assert "through Kustomization flux-system/plex, which it deletes" in error.message


def test_an_object_leaving_a_pruning_build_is_deleted_and_prune_disabled_keeps_it() -> None:
    without = dataclasses.replace(PLEX, objects=(_obj(DEPLOY),))
    (error,) = deletion_findings([PARENT, PLEX], [PARENT, without], CONFIG)
    assert (error.code, error.severity, error.resource) == ("resource-removed", "error", str(PVC))
    kept = dataclasses.replace(PLEX, objects=(_obj(PVC, prune_disabled=True), _obj(DEPLOY)))
    assert deletion_findings([PARENT, kept], [PARENT, without], CONFIG) == []
    not_pruning = dataclasses.replace(PLEX, prune=False)
    assert deletion_findings([PARENT, not_pruning], [PARENT, dataclasses.replace(without, prune=False)],
                             CONFIG) == []


def test_a_move_between_kustomizations_is_safe_only_when_the_old_owner_waits_for_the_new() -> None:
    storage = Unit("main", "flux-system", "storage", "kubernetes/apps/storage/ks.yaml", 2,
                   parent="flux-system/cluster-apps")
    moved_to = dataclasses.replace(storage, objects=(_obj(PVC),))
    left = dataclasses.replace(PLEX, objects=(_obj(DEPLOY),))
    (error,) = deletion_findings([PARENT, PLEX, storage], [PARENT, left, moved_to], CONFIG)
    assert (error.code, error.severity, error.resource) == ("cross-kustomization-move", "error", str(PVC))
    # The parent and the child race to apply the new spec: a dependsOn added by the same change is too late.
    waits = dataclasses.replace(left, depends_on=("flux-system/storage",))
    assert [f.code for f in deletion_findings([PARENT, PLEX, storage], [PARENT, waits, moved_to], CONFIG)] == [
        "cross-kustomization-move"]
    waited = dataclasses.replace(PLEX, depends_on=("flux-system/storage",))
    assert deletion_findings([PARENT, waited, storage], [PARENT, waits, moved_to], CONFIG) == []


def test_an_identity_substitution_leaves_unknown_is_never_compared() -> None:
    unknown = ResourceId("", "PersistentVolumeClaim", "media", "${APP}", "v1")
    old = dataclasses.replace(PLEX, objects=(_obj(unknown, known=False), _obj(DEPLOY)))
    new = dataclasses.replace(PLEX, objects=(_obj(DEPLOY),))
    assert deletion_findings([PARENT, old], [PARENT, new], CONFIG) == []


def test_a_helm_release_deleted_with_its_kustomization_takes_the_claims_its_chart_renders() -> None:
    release = ResourceId("helm.toolkit.fluxcd.io", "HelmRelease", "media", "plex", "v2")
    claim = ResourceId("", "PersistentVolumeClaim", "media", "plex-config", "v1")
    old = dataclasses.replace(PLEX, objects=(_obj(release, renders=(claim,)),))
    (error,) = [f for f in deletion_findings([PARENT, old], [_parent_without_children()], CONFIG)
                if f.severity == "error"]
    assert error.resource == str(claim)
    assert "HelmRelease media/plex is deleted and takes it with it" in error.message


def test_an_external_source_is_never_compared() -> None:
    ext = dataclasses.replace(PLEX, external=True, objects=())
    assert deletion_findings([PARENT, dataclasses.replace(PLEX, external=True)], [PARENT, ext], CONFIG) == []


def test_a_depends_on_target_that_neither_waits_nor_checks_health_gates_only_the_apply() -> None:
    db = Unit("main", "flux-system", "postgres", "kubernetes/apps/db/ks.yaml", 2)
    app = dataclasses.replace(PLEX, depends_on=("flux-system/postgres",))
    (info,) = gating_findings([db, app], gate_on=False)
    assert (info.code, info.severity, info.path) == ("depends-on-not-gating", "info", db.path)
    assert "flux-system/plex wait(s) for its apply only" in info.message
    assert info.fix is not None and "wait: true" in info.fix
    for ready in ({"wait": True}, {"health_checks": True}):
        assert gating_findings([dataclasses.replace(db, **ready), app], gate_on=False) == []  # type: ignore[arg-type]


def test_a_ready_expr_without_the_feature_gate_is_a_warning() -> None:
    db = Unit("main", "flux-system", "postgres", "kubernetes/apps/db/ks.yaml", 2, wait=True)
    app = dataclasses.replace(PLEX, depends_on=("flux-system/postgres",), ready_exprs=("flux-system/postgres",))
    (warning,) = gating_findings([db, app], gate_on=False)
    assert (warning.code, warning.severity) == ("ready-expr-replaces-readiness", "warning")
    assert "no longer waits for the new revision" in warning.message
    assert gating_findings([db, app], gate_on=True) == []


def test_a_depends_on_typo_is_an_error_with_a_did_you_mean_within_the_cluster() -> None:
    db = Unit("main", "flux-system", "postgres", "kubernetes/apps/db/ks.yaml", 2)
    app = dataclasses.replace(PLEX, depends_on=("flux-system/postgress",))
    (error,) = depends_on_findings([db, app])
    assert (error.code, error.severity, error.path) == ("depends-on-missing", "error", PLEX.path)
    assert "dependsOn flux-system/postgress, which no Kustomization of this cluster is (did you mean " \
           "'postgres'?)" in error.message
    other_cluster = dataclasses.replace(db, cluster="staging")
    assert len(depends_on_findings([other_cluster, app])) == 1
    assert depends_on_findings([db, dataclasses.replace(app, depends_on=("flux-system/postgres",))]) == []


def test_a_cluster_whose_entry_moved_is_not_judged_object_by_object() -> None:
    moved = [dataclasses.replace(u, cluster="clusters/prod") for u in (PARENT, PLEX)]
    assert deletion_findings([PARENT, PLEX], moved, CONFIG) == []


def test_moved_to_finds_the_directory_a_change_moved_by_its_files(tmp_path: Path) -> None:
    base_dir, head_dir = tmp_path / "base", tmp_path / "head"
    for root, app in ((base_dir, "app"), (head_dir, "application")):
        for name in ("kustomization.yaml", "helmrelease.yaml"):
            (root / "apps/plex" / app).mkdir(parents=True, exist_ok=True)
            (root / "apps/plex" / app / name).write_text("x: 1\n")
    (head_dir / "apps/plex/other").mkdir()
    (head_dir / "apps/plex/other/kustomization.yaml").write_text("x: 1\n")
    base, head = FsTree(str(base_dir)), FsTree(str(head_dir))
    assert moved_to(base, head, "./apps/plex/app") == "apps/plex/application"
    assert moved_to(base, head, "apps/plex/gone") is None  # never there
    assert moved_to(head, head, "apps/plex/application") is None  # still there


# ---- a revision the controller builds but cannot apply -------------------------------------------
# kustomize-controller prunes nothing of a revision whose apply fails: an object of a namespaced kind
# with no namespace ("namespace not specified"), or a SOPS Secret without spec.decryption. What the
# change drops from such a Kustomization is not deleted until it is fixed.

def _deleting(report: dict[str, object]) -> list[object]:
    codes = ("resource-removed", "cross-kustomization-move", "kustomization-renamed")
    return [f for f in report["findings"] if f["code"] in codes]  # type: ignore[attr-defined, index]


def test_an_object_without_a_namespace_fails_the_apply_so_nothing_dropped_is_deleted(tmp_path: Path) -> None:
    repo = repo_of(tmp_path, APP)
    drop_y_and_add(repo, "z.yaml", cm("z", None))
    code, report = check(repo)
    assert code == 1
    assert _deleting(report) == []
    (failed,) = [f for f in report["findings"] if f["code"] == "apply-failed"]
    assert failed["severity"] == "error" and (failed["path"], failed["line"]) == ("apps/one/z.yaml", 1)
    assert failed["resource"] == "ConfigMap z"
    assert "ConfigMap z" in failed["message"] and "namespace not specified" in failed["message"]


def test_once_the_namespace_is_fixed_the_drop_is_deleted_and_the_base_is_said_unknown(tmp_path: Path) -> None:
    """The fix's review: the cluster still holds y (the failing revision pruned nothing), which the base
    revision no longer shows; the warning says so and how to see what the cluster holds."""
    repo = repo_of(tmp_path, APP)
    drop_y_and_add(repo, "z.yaml", cm("z", None))
    (repo / "apps/one/z.yaml").write_text(cm("z"))
    commit(repo, "fix the namespace")
    code, report = check(repo)
    (warning,) = [f for f in report["findings"] if f["code"] == "base-not-applied"]
    assert warning["severity"] == "warning" and "flux-system/app" in warning["message"]
    assert (warning["path"], warning["line"]) == ("clusters/main/app.yaml", 1)
    assert warning["resource"] == "kustomize.toolkit.fluxcd.io/Kustomization flux-system/app"
    assert "kubectl -n flux-system get kustomization app" in warning["fix"]


@pytest.mark.parametrize("field", ["data", "stringData"])
def test_a_sops_secret_without_decryption_fails_the_apply_only_when_its_data_is_encrypted(
    tmp_path: Path, field: str
) -> None:
    """kustomize-controller v1.9.6 refuses the revision for an encrypted `data` value (not base64), and
    applies one encrypted in `stringData` with the ciphertext as its value (real Flux: test_review_live)."""
    secret = (f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n  namespace: apps\n{field}:\n"
              "  key: ENC[AES256_GCM,data:AAAA,iv:AAAA,tag:AAAA,type:str]\nsops:\n  version: 3.9.0\n")
    repo = repo_of(tmp_path, APP)
    drop_y_and_add(repo, "s.yaml", secret)
    code, report = check(repo)
    assert code == 1
    assert [f["code"] for f in report["findings"] if f["severity"] == "error"] == ["sops-not-decrypted"]
    claimed = {o["name"] for f in _deleting(report) for o in f["objects"]}  # type: ignore[index]
    assert claimed == (set() if field == "data" else {"y"})


def test_a_kustomization_without_a_namespace_holds_back_what_its_parent_would_prune(tmp_path: Path) -> None:
    """The root's apply fails on the new child: the removed child is not pruned (its finalizer would
    delete y), as the simulation says (tests/live/test_fluxsim_live.py plays the same through real Flux)."""
    repo = repo_of(tmp_path, {
        "clusters/main/kustomization.yaml": "resources: [w0.yaml, w1.yaml]\n",
        "clusters/main/w0.yaml": child("w0", "apps/w0"),
        "clusters/main/w1.yaml": child("w1", "apps/w1"),
        "apps/w0/x.yaml": cm("x"),
        "apps/w1/y.yaml": cm("y"),
    })
    base = files_at(repo, "HEAD")
    (repo / "clusters/main/w1.yaml").unlink()
    (repo / "clusters/main/w2.yaml").write_text(child("w2", "apps/w2").replace("  namespace: flux-system\n", ""))
    (repo / "clusters/main/kustomization.yaml").write_text("resources: [w0.yaml, w2.yaml]\n")
    (repo / "apps/w2").mkdir()
    (repo / "apps/w2/z.yaml").write_text(cm("z"))
    commit(repo, "replace w1")
    code, report = check(repo)
    assert code == 1
    assert _deleting(report) == []
    assert [f["code"] for f in report["findings"] if f["severity"] == "error"] == ["kustomization-namespace-missing"]
    assert simulate(base, files_at(repo, "HEAD"), "clusters/main").deleted == set()


def test_a_kustomization_only_a_failing_apply_would_create_adopts_nothing(tmp_path: Path) -> None:
    """y moves from w0 to a new w2 that has no namespace: the root's apply fails, so w2 is never
    created, while w0 (already in the cluster) reconciles the revision and prunes y. Not a move: a
    deletion, as the simulation says."""
    repo = repo_of(tmp_path, W0)
    base = files_at(repo, "HEAD")
    move_y_to_a_new_child_without_a_namespace(repo)
    _, report = check(repo)
    assert [(f["code"], f["resource"]) for f in _deleting(report)] == [("resource-removed", "ConfigMap apps/y")]
    assert simulate(base, files_at(repo, "HEAD"), "clusters/main").deleted == {Rid("", "ConfigMap", "apps", "y")}
