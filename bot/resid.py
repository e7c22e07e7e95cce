"""A Kubernetes object's identity: the one record the inventory, the hazard checks and the kustomize
evaluator share.

Flux tracks objects by group, kind, namespace and name (its inventory ignores the version: a
`v1beta1` -> `v1` bump is the same object), so those four fields are what `==`, hashing and ordering
compare. kustomize also tells versions apart when it matches a patch to an object; `version` is kept
for that (`same`), and for messages that name the apiVersion (`full`).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, order=True)
class ResourceId:
    group: str
    kind: str
    namespace: str
    name: str
    version: str = field(default="", compare=False)

    @classmethod
    def of(cls, api_version: str, kind: str, namespace: str, name: str) -> ResourceId:
        """`apps/v1` -> group `apps`, version `v1`; `v1` -> the core group ``."""
        group, _, version = api_version.rpartition("/")
        return cls(group, kind, namespace, name, version)

    @classmethod
    def of_object(cls, doc: Mapping[str, Any]) -> ResourceId:
        """The identity an object (a parsed YAML mapping) declares; missing fields are ''."""
        metadata: Mapping[str, Any] = doc["metadata"] if isinstance(doc.get("metadata"), dict) else {}
        return cls.of(str(doc.get("apiVersion") or ""), str(doc.get("kind") or ""),
                      str(metadata.get("namespace") or ""), str(metadata.get("name") or ""))

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def effective_namespace(self) -> str:
        return self.namespace or "default"  # kustomize: no namespace means `default`

    def same(self, other: ResourceId) -> bool:
        """kustomize's ResId.Equals: exact group, version, kind and name; namespaces alike."""
        return (self.group, self.version, self.kind, self.name) == (
            other.group, other.version, other.kind, other.name
        ) and self.effective_namespace == other.effective_namespace

    def identical(self, other: ResourceId) -> bool:
        """Every field equal, version included."""
        return self == other and self.version == other.version

    @property
    def full(self) -> str:
        """`Kind namespace/name (apiVersion)`, as kustomize's messages name an object."""
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind} {where}{self.name} ({self.api_version})"

    def __str__(self) -> str:
        kind = f"{self.group}/{self.kind}" if self.group else self.kind
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{kind} {where}"


__all__ = ["ResourceId"]
