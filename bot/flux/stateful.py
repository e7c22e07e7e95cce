"""What is stateful: the objects whose deletion loses data, by the configured rule."""
from __future__ import annotations

from bot.config import Config
from bot.flux.inventory import ResourceId

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


def _loss(rid: ResourceId, config: Config) -> str:
    """What deleting `rid` costs, for a stateful kind."""
    if (rid.group, rid.kind) in _LOSS:
        return _LOSS[(rid.group, rid.kind)]
    return f"it is deleted and its state is lost ({stateful_entry(rid, config)} is listed in stateful_kinds)"


__all__ = ["is_stateful", "stateful_entry"]
