"""bot.resid: one identity for the inventory (Flux's view) and the kustomize evaluator."""
from __future__ import annotations

from bot.flux import inventory
from bot.kustomize import select
from bot.resid import ResourceId


def test_flux_identity_ignores_the_version_kustomize_does_not() -> None:
    old = ResourceId.of("kustomize.toolkit.fluxcd.io/v1beta2", "Kustomization", "flux-system", "apps")
    new = ResourceId.of("kustomize.toolkit.fluxcd.io/v1", "Kustomization", "flux-system", "apps")
    assert old == new and hash(old) == hash(new) and {old: 1}[new] == 1  # Flux: the same object
    assert not old.same(new) and not old.identical(new)  # kustomize: a patch for one misses the other
    assert old.same(ResourceId.of("kustomize.toolkit.fluxcd.io/v1beta2", "Kustomization", "flux-system", "apps"))


def test_both_views_read_an_object_alike() -> None:
    doc = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}}
    rid = ResourceId.of_object(doc)
    assert (rid.group, rid.version, rid.kind, rid.namespace, rid.name) == ("apps", "v1", "Deployment", "", "web")
    assert rid.effective_namespace == "default" and rid.api_version == "apps/v1"
    assert str(rid) == "apps/Deployment web" and rid.full == "Deployment web (apps/v1)"
    assert ResourceId.of_object({"apiVersion": "v1", "kind": "ConfigMap"}).api_version == "v1"


def test_one_class_under_both_names() -> None:
    assert inventory.ResourceId is select.ResId is ResourceId
