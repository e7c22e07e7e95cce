"""flux/stateful.py: the claims bjw-s's app-template renders, and a ResourceSet's stateful resources."""
from __future__ import annotations

from typing import Any

from bot.config import Config
from bot.flux.stateful import chart_claims, resource_set_claims
from bot.resid import ResourceId

RELEASE = ResourceId("helm.toolkit.fluxcd.io", "HelmRelease", "home", "mosquitto", "v2")


def _spec(persistence: Any, chart: Any = None) -> dict[str, Any]:
    return {"chart": chart or {"spec": {"chart": "app-template", "sourceRef": {"kind": "HelmRepository",
                                                                                 "name": "bjw-s"}}},
            "values": {"persistence": persistence}}


def _names(spec: dict[str, Any]) -> list[str]:
    return [r.name for r in chart_claims(RELEASE, spec)]


def test_a_persistence_item_without_enabled_or_type_renders_a_claim_named_after_release_and_item() -> None:
    claims = chart_claims(RELEASE, _spec({"data": {"storageClass": "ceph-block", "size": "1Gi"}}))
    assert claims == (ResourceId("", "PersistentVolumeClaim", "home", "mosquitto-data", "v1"),)


def test_existing_claims_other_types_disabled_and_retained_items_render_none() -> None:
    spec = _spec({
        "config": {"existingClaim": "mosquitto"},
        "tmp": {"type": "emptyDir"},
        "off": {"enabled": False, "size": "1Gi"},
        "kept": {"retain": True, "size": "1Gi"},
        "cache": {"enabled": True, "type": "persistentVolumeClaim", "size": "1Gi", "nameOverride": "cache-v2"},
    })
    assert _names(spec) == ["mosquitto-cache-v2"]


def test_chart_ref_to_an_oci_repository_named_app_template_counts_and_other_charts_do_not() -> None:
    via_ref = {"chartRef": {"kind": "OCIRepository", "name": "app-template"},
               "values": {"persistence": {"config": {"size": "1Gi"}}}}
    assert _names(via_ref) == ["mosquitto-config"]
    other = _spec({"config": {"size": "1Gi"}}, chart={"spec": {"chart": "mosquitto"}})
    assert _names(other) == []


def test_a_resource_set_of_claims_names_them_in_its_namespace() -> None:
    rid = ResourceId("fluxcd.controlplane.io", "ResourceSet", "media", "volumes", "v1")
    spec = {"resources": [{"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "a"}},
                          {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}}]}
    assert resource_set_claims(rid, spec, Config()) == (ResourceId("", "PersistentVolumeClaim", "media", "a", "v1"),)
