"""What kustomize accepts: file names, API versions, the fields evaluated, ignored or refused; its two errors."""
from __future__ import annotations

from bot.errors import WaveBotError

KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
KUSTOMIZATION_API = "kustomize.config.k8s.io/v1beta1"
COMPONENT_API = "kustomize.config.k8s.io/v1alpha1"
MAX_FILES = 2000
"""Most files one build reads (kustomizations, resources and patch files); a cluster overlay reads a few dozen."""

# Kustomization fields, by what this evaluator does with them (api/types/kustomization.go).
EVALUATED = frozenset({
    "apiVersion", "kind", "resources", "bases", "components", "patches", "patchesStrategicMerge",
    "patchesJson6902", "namespace", "commonLabels", "labels", "commonAnnotations",
    "configMapGenerator", "secretGenerator", "generatorOptions",
})

# These never change a Flux Kustomization's spec (images/replicas touch workloads, generators add
# ConfigMaps/Secrets, the rest is metadata about the build itself).
IGNORED = frozenset({
    "metadata", "openapi", "images", "imageTags", "replicas", "sortOptions", "crds",
    "configurations", "buildMetadata",
})

# These could rename objects or rewrite any field; wave-bot does not guess what they do.
UNSUPPORTED = frozenset({
    "namePrefix", "nameSuffix", "replacements", "vars", "generators", "transformers", "validators",
    "helmCharts", "helmGlobals", "helmChartInflationGenerator", "inventory",
})
PATCH_KEYS = frozenset({"path", "patch", "target", "options"})
LABEL_KEYS = frozenset({"pairs", "includeSelectors", "includeTemplates", "fields"})
SELECTOR_KEYS = frozenset({"group", "version", "kind", "name", "namespace", "labelSelector", "annotationSelector"})
JSON_OPS = frozenset({"add", "remove", "replace", "move", "copy", "test"})

# Built-in kinds the namespace transformer leaves alone; kustomize treats any other kind
# (every custom resource included) as namespaced.
CLUSTER_SCOPED = frozenset({
    "APIService", "CSIDriver", "CSINode", "CertificateSigningRequest", "ClusterRole",
    "ClusterRoleBinding", "ComponentStatus", "CustomResourceDefinition", "FlowSchema", "IngressClass",
    "MutatingWebhookConfiguration", "Namespace", "Node", "PersistentVolume", "PodSecurityPolicy",
    "PriorityClass", "PriorityLevelConfiguration", "RuntimeClass", "StorageClass",
    "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "ValidatingWebhookConfiguration",
    "VolumeAttachment",
})
HINT_BY_HAND = "check this overlay by hand: kubectl kustomize <overlay>"


class BuildError(WaveBotError):
    """kustomize itself would refuse to build this, so Flux applies nothing from the overlay."""


class Unsupported(WaveBotError):
    """What kustomize would do here is beyond this evaluator (or would mean following a reference
    wave-bot refuses to follow), so the result is unknown rather than guessed."""


KUSTOMIZATION = "kustomization.yaml"


__all__ = ["BuildError", "Unsupported"]
