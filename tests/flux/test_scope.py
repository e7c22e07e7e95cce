"""flux/scope.py: the API server's scope of a kind, as Flux's inventory records it and its apply refuses it.

Each test reads a small real repository the way a user's review runs: `wave-bot check --base` on a git
history, or the model of what Flux applies (`read_model`) where the identity itself is the point.
The tables' facts are checked against real Flux in tests/live/test_realrepos_live.py (the names the
API server gives what it deletes).
"""
from __future__ import annotations

from pathlib import Path

from bot.flux.applied import read_model
from bot.flux.scope import Scopes
from bot.repo.worktree import FsTree
from bot.resid import ResourceId

from support.minirepo import check, child, commit, repo_of

ISSUER = """apiVersion: cert-manager.io/v1
kind: ClusterIssuer
metadata:
  name: letsencrypt
spec:
  acme:
    server: https://acme-v02.api.letsencrypt.org/directory
"""


def ids(repo: Path, kind: str) -> set[ResourceId]:
    return {o.id for ks in read_model(FsTree(str(repo))).kustomizations() for o in ks.objects if o.id.kind == kind}


ISSUER_TREE = {
    "clusters/main/kustomization.yaml": "resources: [issuers.yaml]\n",
    "clusters/main/issuers.yaml": child("issuers", "infra/issuers"),
    "infra/issuers/kustomization.yaml": "namespace: cert-manager\nresources: [issuer.yaml]\n",
    "infra/issuers/issuer.yaml": ISSUER,
}


def test_a_charted_cluster_scoped_kind_is_named_without_the_namespace_kustomize_writes(tmp_path: Path) -> None:
    """kustomize writes `cert-manager` into the ClusterIssuer (it knows no CRD schema); the API server
    drops it, and so does the name wave-bot gives the object."""
    repo = repo_of(tmp_path, ISSUER_TREE)
    assert ids(repo, "ClusterIssuer") == {ResourceId("cert-manager.io", "ClusterIssuer", "", "letsencrypt")}


def test_changing_the_namespace_a_cluster_scoped_object_is_written_with_deletes_nothing(tmp_path: Path) -> None:
    repo = repo_of(tmp_path, ISSUER_TREE)
    (repo / "infra/issuers/kustomization.yaml").write_text("namespace: security\nresources: [issuer.yaml]\n")
    commit(repo, "another namespace")
    code, report = check(repo)
    assert code == 0, report["findings"]
    deleting = ("resource-removed", "cross-kustomization-move", "kustomization-renamed")
    assert not [f for f in report["findings"] if f["code"] in deleting], report["findings"]


def test_a_crd_in_the_repository_decides_the_scope(tmp_path: Path) -> None:
    """A CRD git holds says more than any table: a cluster-scoped kind nobody lists loses the
    namespace, and a namespaced CRD of a listed group keeps it."""
    crds = "".join(f"""---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: {plural}.example.com
spec:
  group: example.com
  names: {{kind: {kind}, plural: {plural}}}
  scope: {scope}
  versions: [{{name: v1, served: true, storage: true, schema: {{openAPIV3Schema: {{type: object}}}}}}]
""" for kind, plural, scope in (("Fleet", "fleets", "Cluster"), ("Ship", "ships", "Namespaced")))
    objects = "".join(f"---\napiVersion: example.com/v1\nkind: {kind}\nmetadata:\n  name: one\n"
                      for kind in ("Fleet", "Ship"))
    repo = repo_of(tmp_path, {
        "clusters/main/kustomization.yaml": "resources: [crds.yaml, app.yaml]\n",
        "clusters/main/crds.yaml": child("crds", "infra/crds"),
        "clusters/main/app.yaml": child("app", "apps/one"),
        "infra/crds/crds.yaml": crds,
        "apps/one/kustomization.yaml": "namespace: sea\nresources: [objects.yaml]\n",
        "apps/one/objects.yaml": objects,
    })
    assert ids(repo, "Fleet") == {ResourceId("example.com", "Fleet", "", "one")}
    assert ids(repo, "Ship") == {ResourceId("example.com", "Ship", "sea", "one")}


def test_a_kind_of_unknown_scope_keeps_what_kustomize_wrote() -> None:
    scopes = Scopes()
    # CloudNativePG's Cluster and OLM's ClusterServiceVersion are namespaced: no naming convention decides
    for rid in (ResourceId("postgresql.cnpg.io", "Cluster", "db", "main"),
                ResourceId("operators.coreos.com", "ClusterServiceVersion", "olm", "x")):
        assert scopes.cluster_scoped(rid) is None
        assert scopes.served(rid) == rid
        assert not scopes.refused(without_namespace(rid))


def without_namespace(rid: ResourceId) -> ResourceId:
    return ResourceId(rid.group, rid.kind, "", rid.name, rid.version)


def test_a_namespaced_crd_makes_an_object_without_a_namespace_a_refused_one() -> None:
    """A CRD in git that says Namespaced: an object of its kind with no namespace is refused by the API
    server ('namespace not specified'), which is what fails a Kustomization's apply."""
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "spec": {"group": "example.com", "names": {"kind": "Ship"}, "scope": "Namespaced"}}
    ship = ResourceId("example.com", "Ship", "", "one")
    assert Scopes().refused(ship) is False  # unknown scope: nothing concluded
    assert Scopes.of([crd]).refused(ship) is True
    # a malformed CRD (no names, another apiVersion) says nothing
    assert Scopes.of([{**crd, "spec": {"group": "example.com", "scope": "Namespaced"}}]).refused(ship) is False
    assert Scopes.of([{**crd, "apiVersion": "example.com/v1"}]).refused(ship) is False
