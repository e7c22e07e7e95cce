"""What counts as SOPS decryption for a wave's Flux Kustomization, as Flux accepts it."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bot.config import Config
from bot.kustomize import Build, Object
from bot.render import FLUX_GROUP
from bot.side import Slot

SOPS = "sops"
ENCRYPTED = "its *.sops.yaml files would be applied still encrypted, corrupting the Secrets they hold"


def decryption_problem(value: Mapping[str, Any], config: Config) -> str | None:
    """Why this Flux Kustomization does not decrypt with the SOPS key; None when it does."""
    spec: Mapping[str, Any] = value["spec"] if isinstance(value.get("spec"), dict) else {}
    decryption = spec.get("decryption")
    if not isinstance(decryption, dict):
        return "no spec.decryption"
    provider = decryption.get("provider")
    if provider is None:
        return "spec.decryption has no provider"
    if provider != SOPS:
        return f"spec.decryption.provider is '{provider}', not '{SOPS}'"
    ref = decryption.get("secretRef")
    name = ref.get("name") if isinstance(ref, dict) else None
    if name is None:
        return f"spec.decryption has no secretRef.name (expected '{config.decryption_secret}')"
    if name != config.decryption_secret:
        return f"spec.decryption.secretRef.name is '{name}', not '{config.decryption_secret}'"
    return None


def wave_objects(result: Build, config: Config, n: Slot) -> list[Object]:
    return result.find("Kustomization", FLUX_GROUP, config.wave_cr_name(n))


def wave_problem(result: Build, config: Config, n: Slot) -> str | None:
    """Why wave `n` lacks decryption in `result`; None when it has it or is not in the build."""
    for obj in wave_objects(result, config, n):
        problem = decryption_problem(obj.value, config)
        if problem is not None:
            return problem
    return None


def wave_of(name: str, config: Config) -> Slot | None:
    """The wave (or side branch) whose Flux Kustomization is named `name`; None for any other name."""
    return config.slot_of_cr_file(f"{name}.yaml")


__all__ = ["ENCRYPTED", "SOPS", "decryption_problem", "wave_objects", "wave_of", "wave_problem"]
