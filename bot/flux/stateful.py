"""What is stateful: the objects whose deletion loses data, by the configured rule."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bot.config import Config
from bot.flux.inventory import ResourceId

APP_TEMPLATE = "app-template"
"""bjw-s's chart, the one most Flux home repositories deploy their apps with."""

# What deleting an object of a built-in stateful kind costs; keyed by (group, kind).
_LOSS: dict[tuple[str, str], str] = {
    ("", "PersistentVolumeClaim"): "the claim is deleted and its volume's data with it",
    ("", "PersistentVolume"): "the volume is deleted (with reclaimPolicy: Delete, its data too)",
    ("", "Namespace"): "the namespace is deleted and everything in it with it",
    ("postgresql.cnpg.io", "Cluster"): "the CNPG database cluster is deleted and its PVCs with it: the data is lost",
}


def stateful_entry(rid: ResourceId, config: Config) -> str | None:
    """The `stateful_kinds` entry matching `rid`, or None."""
    for entry in config.stateful_kinds:
        group, slash, kind = entry.rpartition("/")
        if kind == rid.kind and (not slash or group == rid.group) and group.count("/") == 0:
            return entry
    return None


def is_stateful(rid: ResourceId, config: Config) -> bool:
    """Whether deleting the object loses data (or everything inside it)."""
    return (rid.group, rid.kind) in _LOSS or stateful_entry(rid, config) is not None


def data_loss(rid: ResourceId, config: Config) -> str:
    """What deleting `rid` costs, for a stateful kind."""
    if (rid.group, rid.kind) in _LOSS:
        return _LOSS[(rid.group, rid.kind)]
    return f"it is deleted and its state is lost ({stateful_entry(rid, config)} is listed in stateful_kinds)"


def _chart_name(spec: Mapping[str, Any]) -> str:
    """The chart a HelmRelease installs: `spec.chart.spec.chart`, else the name its `chartRef` points at
    (an OCIRepository named after the chart, as the repositories that use chartRef name them)."""
    chart = spec.get("chart")
    inner = chart.get("spec") if isinstance(chart, dict) else None
    if isinstance(inner, dict) and isinstance(inner.get("chart"), str):
        return str(inner["chart"]).rstrip("/").rpartition("/")[2]
    ref = spec.get("chartRef")
    return str(ref.get("name") or "") if isinstance(ref, dict) else ""


def is_app_template(spec: Mapping[str, Any]) -> bool:
    return _chart_name(spec) == APP_TEMPLATE


def chart_claims(release: ResourceId, spec: Mapping[str, Any]) -> tuple[ResourceId, ...]:
    """The PersistentVolumeClaims the app-template chart renders for a HelmRelease, by the chart's
    documented defaults: every `persistence` item whose `type` is `persistentVolumeClaim` (the default
    when none is written) and that has no `existingClaim`, whether or not `enabled` is written (it
    defaults to true; `enabled: false` renders nothing), except `retain: true` (kept on uninstall).
    Named `<release>-<item>` (`nameOverride` replaces the suffix; `-` alone names it the release).
    Empty for any other chart: its templates are not in git."""
    if not is_app_template(spec):
        return ()
    values = spec.get("values")
    persistence = values.get("persistence") if isinstance(values, dict) else None
    if not isinstance(persistence, dict):
        return ()
    namespace = str(spec.get("targetNamespace") or release.namespace)
    name = str(spec.get("releaseName") or release.name)
    out = []
    for key, item in persistence.items():
        if not isinstance(item, dict) or item.get("enabled") is False or item.get("retain") is True:
            continue
        if item.get("type", "persistentVolumeClaim") != "persistentVolumeClaim" or item.get("existingClaim"):
            continue
        suffix = item.get("nameOverride")
        claim = name if suffix == "-" else f"{name}-{suffix if isinstance(suffix, str) and suffix else key}"
        out.append(ResourceId("", "PersistentVolumeClaim", namespace, claim, "v1"))
    return tuple(out)


RESOURCE_SET = ("fluxcd.controlplane.io", "ResourceSet")


def resource_set_claims(rid: ResourceId, spec: Mapping[str, Any], config: Config) -> tuple[ResourceId, ...]:
    """The stateful objects a ResourceSet (Flux Operator) renders from its `spec.resources` templates:
    deleting the ResourceSet garbage-collects them. Names with template expressions stay as written."""
    if (rid.group, rid.kind) != RESOURCE_SET:
        return ()
    out = []
    for item in spec.get("resources") or []:
        if not isinstance(item, dict):
            continue
        found = ResourceId.of_object(item)
        if is_stateful(found, config):
            out.append(ResourceId(found.group, found.kind, found.namespace or rid.namespace, found.name,
                                  found.version))
    return tuple(out)


__all__ = ["APP_TEMPLATE", "chart_claims", "is_app_template", "is_stateful", "resource_set_claims",
           "stateful_entry"]
