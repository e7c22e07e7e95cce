"""How the API server scopes a kind: what Flux's inventory records, and what its apply refuses.

kustomize takes every kind it has no schema for as namespaced, so a `namespace:` transformer (or a
Flux `targetNamespace`) writes a namespace into a cluster-scoped custom object: `ClusterIssuer
cert-manager/letsencrypt`. The API server drops it, and kustomize-controller records the object as
the server returns it from the dry-run (fluxcd/pkg/ssa `ApplyAll`: the change set is built from the
dry-run object), so Flux's inventory names it without the namespace. Two builds that write
different namespaces into it give one object, not a deletion and a creation.

The other way round, a namespaced object that reaches the API server without a namespace is refused
("namespace not specified": the dry-run finds no such resource), and kustomize-controller's apply of
that revision fails: it applies nothing of that stage and prunes nothing.

Where a scope comes from, most exact first:
1. a CustomResourceDefinition the cluster applies (`spec.group`, `spec.names.kind`, `spec.scope`);
2. the kinds Kubernetes serves itself, and Flux's (all namespaced);
3. cluster-scoped kinds of widely used charts that install their CRDs themselves (so no CRD is in
   git): each entry checked against the project's published CRD. Keyed by group and kind, never by
   a naming convention (`Cluster` of CloudNativePG and OLM's `ClusterServiceVersion` are namespaced).
A kind none of these knows has an unknown scope: its objects keep the namespace kustomize wrote, and
no apply failure is concluded from one without a namespace.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from bot.resid import ResourceId

GroupKind = tuple[str, str]

CRD: GroupKind = ("apiextensions.k8s.io", "CustomResourceDefinition")

_BUILTIN_CLUSTER: frozenset[GroupKind] = frozenset({
    ("", "Namespace"), ("", "Node"), ("", "PersistentVolume"), ("", "ComponentStatus"),
    ("rbac.authorization.k8s.io", "ClusterRole"), ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
    ("storage.k8s.io", "StorageClass"), ("storage.k8s.io", "CSIDriver"), ("storage.k8s.io", "CSINode"),
    ("storage.k8s.io", "VolumeAttachment"), ("storage.k8s.io", "VolumeAttributesClass"),
    ("networking.k8s.io", "IngressClass"), ("networking.k8s.io", "IPAddress"), ("networking.k8s.io", "ServiceCIDR"),
    ("scheduling.k8s.io", "PriorityClass"), ("node.k8s.io", "RuntimeClass"),
    ("apiextensions.k8s.io", "CustomResourceDefinition"), ("apiregistration.k8s.io", "APIService"),
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"),
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"),
    ("admissionregistration.k8s.io", "MutatingAdmissionPolicy"),
    ("admissionregistration.k8s.io", "MutatingAdmissionPolicyBinding"),
    ("certificates.k8s.io", "CertificateSigningRequest"), ("certificates.k8s.io", "ClusterTrustBundle"),
    ("flowcontrol.apiserver.k8s.io", "FlowSchema"), ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"),
    ("resource.k8s.io", "DeviceClass"), ("resource.k8s.io", "ResourceSlice"),
})
"""Kinds Kubernetes serves cluster-scoped."""

_BUILTIN_NAMESPACED: frozenset[GroupKind] = frozenset({
    ("", "ConfigMap"), ("", "Secret"), ("", "Service"), ("", "ServiceAccount"), ("", "PersistentVolumeClaim"),
    ("", "Pod"), ("", "PodTemplate"), ("", "ReplicationController"), ("", "Endpoints"), ("", "LimitRange"),
    ("", "ResourceQuota"), ("", "Event"),
    ("apps", "Deployment"), ("apps", "StatefulSet"), ("apps", "DaemonSet"), ("apps", "ReplicaSet"),
    ("apps", "ControllerRevision"), ("batch", "Job"), ("batch", "CronJob"),
    ("autoscaling", "HorizontalPodAutoscaler"), ("policy", "PodDisruptionBudget"),
    ("networking.k8s.io", "Ingress"), ("networking.k8s.io", "NetworkPolicy"),
    ("rbac.authorization.k8s.io", "Role"), ("rbac.authorization.k8s.io", "RoleBinding"),
    ("coordination.k8s.io", "Lease"), ("discovery.k8s.io", "EndpointSlice"), ("events.k8s.io", "Event"),
    ("storage.k8s.io", "CSIStorageCapacity"),
    ("resource.k8s.io", "ResourceClaim"), ("resource.k8s.io", "ResourceClaimTemplate"),
})
"""Kinds Kubernetes serves namespaced (the common ones; a kind missing here is unknown, not cluster-scoped)."""

_FLUX_GROUPS = frozenset({
    "kustomize.toolkit.fluxcd.io", "source.toolkit.fluxcd.io", "source.extensions.fluxcd.io",
    "helm.toolkit.fluxcd.io", "notification.toolkit.fluxcd.io", "image.toolkit.fluxcd.io",
    "fluxcd.controlplane.io",
})
"""Every kind of these groups is namespaced (Flux's and the Flux Operator's CRDs)."""

_CHARTED_CLUSTER: frozenset[GroupKind] = frozenset({
    ("cert-manager.io", "ClusterIssuer"),
    ("trust.cert-manager.io", "Bundle"),
    ("external-secrets.io", "ClusterSecretStore"), ("external-secrets.io", "ClusterExternalSecret"),
    ("kyverno.io", "ClusterPolicy"), ("kyverno.io", "ClusterCleanupPolicy"),
    ("wgpolicyk8s.io", "ClusterPolicyReport"),
    ("gateway.networking.k8s.io", "GatewayClass"),
    ("snapshot.storage.k8s.io", "VolumeSnapshotClass"), ("snapshot.storage.k8s.io", "VolumeSnapshotContent"),
    ("groupsnapshot.storage.k8s.io", "VolumeGroupSnapshotClass"),
    ("groupsnapshot.storage.k8s.io", "VolumeGroupSnapshotContent"),
    ("cilium.io", "CiliumClusterwideNetworkPolicy"), ("cilium.io", "CiliumLoadBalancerIPPool"),
    ("cilium.io", "CiliumL2AnnouncementPolicy"), ("cilium.io", "CiliumBGPPeeringPolicy"),
    ("cilium.io", "CiliumBGPClusterConfig"), ("cilium.io", "CiliumBGPPeerConfig"),
    ("cilium.io", "CiliumBGPAdvertisement"), ("cilium.io", "CiliumNode"), ("cilium.io", "CiliumIdentity"),
    ("nfd.k8s-sigs.io", "NodeFeatureRule"),
    ("karpenter.sh", "NodePool"), ("karpenter.sh", "NodeClaim"),
    ("postgresql.cnpg.io", "ClusterImageCatalog"),
    ("tailscale.com", "Connector"), ("tailscale.com", "ProxyClass"), ("tailscale.com", "ProxyGroup"),
})
"""Cluster-scoped kinds whose CRDs a chart installs (so git holds no CRD to read the scope from)."""


@dataclass(frozen=True)
class Scopes:
    """What a cluster's API server knows of scopes: the built-in tables and the CRDs it applies."""

    cluster: frozenset[GroupKind] = _BUILTIN_CLUSTER | _CHARTED_CLUSTER
    namespaced: frozenset[GroupKind] = _BUILTIN_NAMESPACED

    @classmethod
    def of(cls, objects: Iterable[Mapping[str, Any]]) -> Scopes:
        """The scopes with the CRDs among `objects` (a CRD in git says more than any table)."""
        cluster, namespaced = set(cls.cluster), set(cls.namespaced)
        for value in objects:
            crd = _crd_scope(value)
            if crd is None:
                continue
            kind, scope = crd
            (cluster if scope == "Cluster" else namespaced).add(kind)
            (namespaced if scope == "Cluster" else cluster).discard(kind)
        return cls(frozenset(cluster), frozenset(namespaced))

    def cluster_scoped(self, rid: ResourceId) -> bool | None:
        """True or False when the scope of `rid`'s kind is known, None when it is not."""
        kind = (rid.group, rid.kind)
        if kind in self.cluster:
            return True
        if kind in self.namespaced or rid.group in _FLUX_GROUPS:
            return False
        return None

    def served(self, rid: ResourceId) -> ResourceId:
        """`rid` as the API server (and so Flux's inventory) names it: without the namespace when the
        kind is cluster-scoped."""
        if rid.namespace and self.cluster_scoped(rid):
            return ResourceId(rid.group, rid.kind, "", rid.name, rid.version)
        return rid

    def refused(self, rid: ResourceId) -> bool:
        """Whether the API server refuses the object for want of a namespace ('namespace not specified')."""
        return not rid.namespace and self.cluster_scoped(rid) is False


def _crd_scope(value: Mapping[str, Any]) -> tuple[GroupKind, str] | None:
    if value.get("kind") != CRD[1] or str(value.get("apiVersion") or "").rpartition("/")[0] != CRD[0]:
        return None
    spec = value.get("spec")
    names = spec.get("names") if isinstance(spec, dict) else None
    if not isinstance(spec, dict) or not isinstance(names, dict):
        return None
    group, kind, scope = spec.get("group"), names.get("kind"), spec.get("scope")
    if not isinstance(group, str) or not isinstance(kind, str) or scope not in ("Cluster", "Namespaced"):
        return None
    return (group, kind), str(scope)


__all__ = ["GroupKind", "Scopes"]
