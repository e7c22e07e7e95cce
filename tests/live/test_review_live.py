"""Review mode's reading of a repository, judged by real Flux (kustomize-controller on a real API server,
tests/support/liveflux.py): what `wave-bot check --base` says a change deletes, against what the API
server's audit log shows real Flux deleting when the same two revisions are played.

One rule each, the ones the model of what Flux applies (bot/flux/applied.py, bot/flux/scope.py)
states beyond kustomize's build:
- a revision kustomize builds but the controller cannot apply (an object of a namespaced kind with no
  namespace; a SOPS Secret encrypted in `data` without spec.decryption) prunes nothing, and fixing it prunes what left
  meanwhile (wave-bot: apply-failed / sops-not-decrypted, no deletion claimed; then base-not-applied);
- a cluster-scoped custom object keeps its identity whatever namespace kustomize writes into it.

Skipped with the reason without the binaries (oracle/build); required under WAVE_BOT_REQUIRE_LIVEFLUX=1.
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support.liveflux import FLUX_GROUP, Cluster, Ref, cluster
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

ROOT = "./clusters/main"
Y = Ref("", "ConfigMap", "apps", "y")
DELETING = ("resource-removed", "cross-kustomization-move", "kustomization-renamed", "kustomization-removed")


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with cluster(tmp_path_factory.mktemp("liveflux")) as c:
        yield c


def merge(live: Cluster, repo: Path, label: str) -> set[Ref]:
    """Play HEAD over the cluster as it is; what the API server deleted meanwhile."""
    since = live.audit_offset()
    live.play(files_at(repo, "HEAD"), label, root=ROOT)
    return live.deletions(since)


def deploy(live: Cluster, repo: Path) -> None:
    live.reset()
    live.play(files_at(repo, "HEAD"), "base", root=ROOT)


def ready(live: Cluster, name: str) -> dict[str, Any]:
    (ks,) = [k for k in live.list(FLUX_GROUP, "Kustomization") if k["metadata"]["name"] == name]
    return next(c for c in ks["status"]["conditions"] if c["type"] == "Ready")


def deleting(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for f in report["findings"] if f["code"] in DELETING]


def test_an_object_without_a_namespace_prunes_nothing_until_it_is_fixed(live: Cluster, tmp_path: Path) -> None:
    repo = repo_of(tmp_path, APP)
    deploy(live, repo)
    drop_y_and_add(repo, "z.yaml", cm("z", None))
    code, report = check(repo)
    assert merge(live, repo, "no namespace") == set()
    condition = ready(live, "app")
    assert condition["status"] == "False" and "namespace not specified" in condition["message"], condition
    assert code == 1 and deleting(report) == []
    assert [f["code"] for f in report["findings"] if f["severity"] == "error"] == ["apply-failed"]

    (repo / "apps/one/z.yaml").write_text(cm("z"))
    commit(repo, "the namespace")
    code, report = check(repo)
    assert merge(live, repo, "fixed") == {Y}  # y left two revisions ago; this one prunes it
    assert [f["code"] for f in report["findings"]] == ["base-not-applied"], report["findings"]


@pytest.mark.parametrize("field", ["data", "stringData"])
def test_a_sops_secret_without_decryption_prunes_nothing_only_when_its_data_is_encrypted(
    live: Cluster, tmp_path: Path, field: str
) -> None:
    """The controller's "is SOPS encrypted" refusal looks for the `sops` field after normalising the
    Secret through its typed struct, which drops it unless the conversion fails (an `ENC[...]` in
    `data` is no base64): so only then is the revision refused."""
    secret = (f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n  namespace: apps\n{field}:\n"
              "  key: ENC[AES256_GCM,data:AAAA,iv:AAAA,tag:AAAA,type:str]\nsops:\n  version: 3.9.0\n")
    repo = repo_of(tmp_path, APP)
    deploy(live, repo)
    drop_y_and_add(repo, "s.yaml", secret)
    code, report = check(repo)
    deleted = merge(live, repo, f"encrypted {field}")
    condition = ready(live, "app")
    if field == "data":
        assert deleted == set()
        assert condition["status"] == "False" and "SOPS encrypted" in condition["message"], condition
    else:
        assert deleted == {Y} and condition["status"] == "True", condition
    assert code == 1 and {o["name"] for f in deleting(report) for o in f["objects"]} == {r.name for r in deleted}
    assert [f["code"] for f in report["findings"] if f["severity"] == "error"] == ["sops-not-decrypted"]


def test_a_cluster_scoped_object_written_under_another_namespace_is_the_same_object(
    live: Cluster, tmp_path: Path
) -> None:
    issuer = ("apiVersion: cert-manager.io/v1\nkind: ClusterIssuer\nmetadata:\n  name: letsencrypt\nspec:\n"
              "  selfSigned: {}\n")
    repo = repo_of(tmp_path, {
        "clusters/main/kustomization.yaml": "resources: [issuers.yaml]\n",
        "clusters/main/issuers.yaml": child("issuers", "infra/issuers"),
        "infra/issuers/kustomization.yaml": "namespace: cert-manager\nresources: [issuer.yaml]\n",
        "infra/issuers/issuer.yaml": issuer,
    })
    deploy(live, repo)
    (repo / "infra/issuers/kustomization.yaml").write_text("namespace: security\nresources: [issuer.yaml]\n")
    commit(repo, "another namespace")
    code, report = check(repo)
    assert merge(live, repo, "another namespace") == set()
    assert ready(live, "issuers")["status"] == "True"
    assert code == 0 and deleting(report) == []


def test_what_moves_to_a_kustomization_a_failing_apply_never_creates_is_deleted(
    live: Cluster, tmp_path: Path
) -> None:
    """The root's apply fails on the new w2 (no namespace), so w2 is never created; w0, already in the
    cluster, reconciles the revision on its own and prunes y."""
    repo = repo_of(tmp_path, W0)
    deploy(live, repo)
    move_y_to_a_new_child_without_a_namespace(repo)
    _, report = check(repo)
    assert merge(live, repo, "move to w2") == {Y}
    assert "namespace not specified" in ready(live, "flux-system")["message"]
    assert {o["name"] for f in deleting(report) for o in f["objects"]} == {"y"}
