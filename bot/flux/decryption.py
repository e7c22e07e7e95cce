"""What counts as SOPS decryption for a wave's Flux Kustomization, as Flux accepts it.

Every wave Kustomization needs `spec.decryption.provider: sops`. Which Secret holds the key is the
`DecryptionRule`:
- `decryption_secret: <name>` (default `sops-age`): `secretRef.name` must be that name;
- `decryption_secret: null`: the key is controller-level (kustomize-controller `--sops-age-secret`,
  Flux >= 2.7), so no `secretRef` is needed, and one naming a Secret is reported (it would replace
  the controller's key);
- without configuration, when the repository itself patches kustomize-controller's arguments with
  `--sops-age-secret=<name>` (the `flux-system` kustomization's patches on the controller
  Deployment, in the cluster directory being checked): no `secretRef` is needed, and one naming
  `decryption_secret` or the controller's Secret is fine.
Each finding says which rule it applied (`DecryptionRule.describe`).
"""
from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from bot.config import Config
from bot.flux.vocabulary import FLUX_GROUP
from bot.kustomize.build import Build, Object
from bot.kustomize.files import PatchUse
from bot.kustomize.repository import Kustomizations
from bot.kustomize.spec import Unsupported
from bot.resid import ResourceId
from bot.side import Slot

SOPS = "sops"
ENCRYPTED = "its *.sops.yaml files would be applied still encrypted, corrupting the Secrets they hold"
CONTROLLER = ResourceId("apps", "Deployment", "flux-system", "kustomize-controller", "v1")
# The labels `flux install` gives the controller Deployment: what a patch's labelSelector may match.
CONTROLLER_LABELS = {
    "app.kubernetes.io/component": "kustomize-controller",
    "app.kubernetes.io/instance": "flux-system",
    "app.kubernetes.io/part-of": "flux",
    "control-plane": "controller",
}
_FLAG = re.compile(r"^--sops-age-secret=([A-Za-z0-9][A-Za-z0-9.-]*)$")


@dataclass(frozen=True)
class DecryptionRule:
    """Which `spec.decryption` decrypts the waves in one cluster."""

    secrets: tuple[str, ...]
    """The Secret names a `secretRef` may give; () when none is acceptable."""
    ref_required: bool
    """False when a controller-level key decrypts what names no Secret."""
    source: str
    """Where the rule comes from, for the findings."""

    @property
    def secret(self) -> str | None:
        """The Secret a new decryption patch names; None: it names none."""
        return self.secrets[0] if self.secrets and self.ref_required else None

    def describe(self) -> str:
        if self.ref_required:
            return f"provider sops and secretRef.name {self.secrets[0]}, per {self.source}"
        if self.secrets:
            names = " or ".join(self.secrets)
            return f"provider sops, and secretRef.name {names} or no secretRef, per {self.source}"
        return f"provider sops and no secretRef, per {self.source}"

    def problem(self, value: Mapping[str, Any]) -> str | None:
        """Why this Flux Kustomization does not decrypt by this rule; None when it does."""
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
            if not self.ref_required:
                return None
            return f"spec.decryption has no secretRef.name (expected '{self.secrets[0]}')"
        if name in self.secrets:
            return None
        if not self.secrets:
            return (f"spec.decryption.secretRef.name is '{name}', but the key is controller-level: a secretRef "
                    "replaces it with that Secret's keys")
        return f"spec.decryption.secretRef.name is '{name}', not '{self.secrets[0]}'"


def configured_rule(config: Config) -> DecryptionRule:
    if config.decryption_secret is None:
        return DecryptionRule((), False, "decryption_secret: null (a controller-level key)")
    return DecryptionRule((config.decryption_secret,), True, "decryption_secret")


def rule_for(config: Config, model: Kustomizations, cluster_dir: str) -> DecryptionRule:
    """The rule for the cluster whose files are under `cluster_dir`: the configured one, unless the
    repository patches kustomize-controller there with `--sops-age-secret`."""
    rule = configured_rule(config)
    for name, where in controller_keys(model, cluster_dir):
        if config.decryption_secret is None:
            return DecryptionRule((name,), False, f"kustomize-controller --sops-age-secret={name} in {where}")
        names = tuple(dict.fromkeys((config.decryption_secret, name)))
        return DecryptionRule(names, False, f"kustomize-controller --sops-age-secret={name} in {where}")
    return rule


def controller_keys(model: Kustomizations, cluster_dir: str) -> list[tuple[str, str]]:
    """(Secret name, kustomization file) for each patch under `cluster_dir` that gives the
    kustomize-controller Deployment a `--sops-age-secret=<name>` argument."""
    found = []
    for entry in model.patches:
        use = entry.use
        if not _within(use.file, cluster_dir) or not _patches_controller(use):
            continue
        for text in _strings(use.documents):
            match = _FLAG.match(text.strip())
            if match is not None:
                found.append((match.group(1), use.file))
    return found


def _within(path: str, directory: str) -> bool:
    """Whether `path` (as the model spells it, normalised) is under `directory`, however that is
    spelt: a whole path component, so clusters/dev-2 is not under clusters/dev."""
    directory = posixpath.normpath(directory) if directory else "."
    return directory == "." or path.startswith(directory + "/")


def _patches_controller(use: PatchUse) -> bool:
    if use.target is not None:
        value = {"apiVersion": CONTROLLER.api_version, "kind": CONTROLLER.kind,
                 "metadata": {"name": CONTROLLER.name, "namespace": CONTROLLER.namespace, "labels": CONTROLLER_LABELS}}
        try:
            return use.target.matches(value, [CONTROLLER])
        except Unsupported:  # a selector wave-bot cannot read says nothing about the controller
            return False
    return any(isinstance(d, dict) and (ResourceId.of_object(d).kind, ResourceId.of_object(d).name) ==
               (CONTROLLER.kind, CONTROLLER.name) for d in use.documents)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)


def cluster_dir_of(path: str) -> str:
    """The cluster directory an evaluation path belongs to: the overlay directory itself, or the
    directory of the file defining a Flux Kustomization."""
    return posixpath.dirname(path) if path.endswith((".yaml", ".yml")) else path


def decryption_problem(value: Mapping[str, Any], config: Config) -> str | None:
    """Why this Flux Kustomization does not decrypt by the configured rule; None when it does."""
    return configured_rule(config).problem(value)


def wave_objects(result: Build, config: Config, n: Slot) -> list[Object]:
    return result.find("Kustomization", FLUX_GROUP, config.wave_cr_name(n))


def wave_problem(result: Build, config: Config, n: Slot, rule: DecryptionRule | None = None) -> str | None:
    """Why wave `n` lacks decryption in `result`; None when it has it or is not in the build."""
    rule = rule if rule is not None else configured_rule(config)
    for obj in wave_objects(result, config, n):
        problem = rule.problem(obj.value)
        if problem is not None:
            return problem
    return None


def wave_named(name: str, config: Config) -> Slot | None:
    """The wave (or side branch) whose Flux Kustomization is named `name`; None for any other name."""
    return config.slot_of_cr_file(f"{name}.yaml")


__all__ = [
    "CONTROLLER", "ENCRYPTED", "SOPS", "DecryptionRule", "configured_rule", "controller_keys", "decryption_problem",
    "rule_for", "wave_named", "wave_objects", "wave_problem",
]
