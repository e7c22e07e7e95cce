"""Flux's vocabulary: the Kustomization API and the annotations wave-bot reads and writes."""
from __future__ import annotations

FLUX_API = "kustomize.toolkit.fluxcd.io/v1"
FLUX_GROUP = "kustomize.toolkit.fluxcd.io"


PRUNE_KEY = f"{FLUX_GROUP}/prune"
PRUNE_DISABLED = "disabled"
