"""Flux's vocabulary: its API groups, the kinds wave-bot reads, and the annotations it reads and writes.

The one home of "is this object a Flux Kustomization / GitRepository / HelmRelease / ...": every
module identifies Flux's kinds through the predicates here (by group and kind, never the version, as
fluxcd/pkg's predicates do: `v1beta2` and `v1` of a kind are the same kind).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

FLUX_API = "kustomize.toolkit.fluxcd.io/v1"
FLUX_GROUP = "kustomize.toolkit.fluxcd.io"
SOURCE_GROUP = "source.toolkit.fluxcd.io"
SOURCE_EXTENSIONS_GROUP = "source.extensions.fluxcd.io"
HELM_GROUP = "helm.toolkit.fluxcd.io"
NOTIFICATION_GROUP = "notification.toolkit.fluxcd.io"
IMAGE_GROUP = "image.toolkit.fluxcd.io"
OPERATOR_GROUP = "fluxcd.controlplane.io"
"""The Flux Operator's group: FluxInstance, ResourceSet."""

KUSTOMIZATION = "Kustomization"
GIT_REPOSITORY = "GitRepository"
OCI_REPOSITORY = "OCIRepository"
BUCKET = "Bucket"
EXTERNAL_ARTIFACT = "ExternalArtifact"
HELM_RELEASE = "HelmRelease"
FLUX_INSTANCE = "FluxInstance"
RESOURCE_SET = "ResourceSet"
SOURCE_KINDS = (GIT_REPOSITORY, OCI_REPOSITORY, BUCKET, EXTERNAL_ARTIFACT)
"""What a Flux Kustomization's spec.sourceRef may name."""

DEFAULT_NAMESPACE = "flux-system"
"""The namespace Flux is installed in, and where `flux bootstrap` and a FluxInstance put the root."""
BOOTSTRAP_NAME = "flux-system"
"""The name of the root GitRepository and Kustomization made by `flux bootstrap` and a FluxInstance."""
BOOTSTRAP_FILE = "gotk-sync.yaml"
"""The file `flux bootstrap` writes the root GitRepository and Kustomization to."""
BOOTSTRAP_DIR = "flux-system"
"""The directory under the bootstrap path that holds it."""

PRUNE_KEY = f"{FLUX_GROUP}/prune"
PRUNE_DISABLED = "disabled"
SUBSTITUTE_KEY = f"{FLUX_GROUP}/substitute"
SUBSTITUTE_DISABLED = "disabled"
DECRYPT_KEY = f"{FLUX_GROUP}/decrypt"

DELETION_POLICIES = ("MirrorPrune", "Delete", "WaitForTermination", "Orphan")
DEFAULT_DELETION_POLICY = "MirrorPrune"
"""spec.deletionPolicy when unset: delete on deletion what prune would (only when prune is on)."""


def group_of(value: Mapping[str, Any]) -> str:
    """The API group of an object (`apps/v1` -> `apps`, `v1` -> '')."""
    return str(value.get("apiVersion") or "").rpartition("/")[0]


def is_kind(value: Mapping[str, Any], group: str, kind: str) -> bool:
    return value.get("kind") == kind and group_of(value) == group


def is_flux_kustomization(value: Mapping[str, Any]) -> bool:
    return is_kind(value, FLUX_GROUP, KUSTOMIZATION)


def is_git_repository(value: Mapping[str, Any]) -> bool:
    return is_kind(value, SOURCE_GROUP, GIT_REPOSITORY)


def is_oci_repository(value: Mapping[str, Any]) -> bool:
    return is_kind(value, SOURCE_GROUP, OCI_REPOSITORY)


def is_helm_release(value: Mapping[str, Any]) -> bool:
    return is_kind(value, HELM_GROUP, HELM_RELEASE)


def is_flux_instance(value: Mapping[str, Any]) -> bool:
    return is_kind(value, OPERATOR_GROUP, FLUX_INSTANCE)


def is_resource_set(value: Mapping[str, Any]) -> bool:
    return is_kind(value, OPERATOR_GROUP, RESOURCE_SET)


def is_encrypted_secret(value: Mapping[str, Any]) -> bool:
    """A `v1` Secret still SOPS-encrypted (a top-level `sops` field) and not annotated
    `kustomize.toolkit.fluxcd.io/decrypt: disabled`: kustomize-controller refuses to apply a revision
    holding one unless the Kustomization decrypts it (its decryptor's IsEncryptedSecret)."""
    if value.get("kind") != "Secret" or value.get("apiVersion") != "v1" or "sops" not in value:
        return False
    meta = value.get("metadata")
    notes = meta.get("annotations") if isinstance(meta, dict) else None
    return not (isinstance(notes, dict) and str(notes.get(DECRYPT_KEY, "")).casefold() == "disabled")


def is_flux_source(value: Mapping[str, Any]) -> bool:
    """A source a Kustomization can take its artifact from (GitRepository, OCIRepository, Bucket,
    ExternalArtifact)."""
    return value.get("kind") in SOURCE_KINDS and group_of(value) in (SOURCE_GROUP, SOURCE_EXTENSIONS_GROUP)


__all__ = [
    "BOOTSTRAP_DIR", "BOOTSTRAP_FILE", "BOOTSTRAP_NAME", "BUCKET", "DECRYPT_KEY", "DEFAULT_DELETION_POLICY",
    "DEFAULT_NAMESPACE", "DELETION_POLICIES", "EXTERNAL_ARTIFACT", "FLUX_API", "FLUX_GROUP", "FLUX_INSTANCE",
    "GIT_REPOSITORY", "HELM_GROUP", "HELM_RELEASE", "IMAGE_GROUP", "KUSTOMIZATION", "NOTIFICATION_GROUP",
    "OCI_REPOSITORY", "OPERATOR_GROUP", "PRUNE_DISABLED", "PRUNE_KEY", "RESOURCE_SET", "SOURCE_EXTENSIONS_GROUP",
    "SOURCE_GROUP", "SOURCE_KINDS", "SUBSTITUTE_DISABLED", "SUBSTITUTE_KEY", "group_of", "is_encrypted_secret",
    "is_flux_instance", "is_flux_kustomization", "is_flux_source", "is_git_repository", "is_helm_release", "is_kind",
    "is_oci_repository", "is_resource_set",
]
