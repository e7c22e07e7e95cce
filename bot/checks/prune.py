"""Prune values Flux cannot read."""
from __future__ import annotations

from bot.flux.inventory import FluxKustomization, Inventory
from bot.flux.manifests import NOT_A_SCALAR
from bot.model import Finding
from bot.yamlio.goyaml import YAML_1_1_BOOLEANS


def invalid_prune_findings(now: Inventory) -> list[Finding]:
    """`invalid-prune`: spec.prune that is not a YAML 1.2 boolean (`yes`, `on`, `"true"`, ...)."""
    return [_invalid_prune(k) for k in now.flux
            if k.prune_value and k.prune_value not in ("true", "false", "True", "False", "TRUE", "FALSE")]


def _invalid_prune(k: FluxKustomization) -> Finding:
    quoted = k.prune_value.startswith('"')
    # Unquoted, a YAML 1.1 boolean word means what its writer meant: `off` is false, and a fix turning
    # it into `prune: true` would switch garbage collection on for them.
    # Any other value spells no boolean: `true`, what wave-bot assumed it means.
    false = k.prune_value.strip('"').lower() == "false" if quoted else YAML_1_1_BOOLEANS.get(k.prune_value) is False
    why = ("which is written as a string (quoted, or tagged !!str), so a string in every YAML version" if quoted else
           "which kustomize emits as written" if k.prune_value == NOT_A_SCALAR else
           "which kustomize reads as YAML 1.2, where it is a string")
    return Finding(
        code="invalid-prune",
        severity="error",
        message=f"{k.path}:{k.prune_line}: the Flux Kustomization {k.name} has spec.prune: {k.prune_value}, {why}, "
                "not a boolean: the Kustomization CRD rejects it and Flux cannot apply this revision of the cluster "
                "entrypoints. wave-bot assumes it prunes",
        path=k.path, line=k.prune_line, resource=str(k.id),
        fix=f"spec:\n  prune: {'false' if false else 'true'}\n",
    )


__all__ = ["invalid_prune_findings"]
