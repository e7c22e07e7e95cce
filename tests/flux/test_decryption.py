"""bot.flux.decryption: which spec.decryption decrypts a wave, by the rule that applies to its cluster."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bot.config import Config, parse_config
from bot.flux.decryption import DecryptionRule, configured_rule, rule_for
from bot.kustomize.repository import read_kustomizations
from bot.repo.worktree import FsTree

from conftest import CONTROLLER_KEY, write_files


def wave(decryption: Any) -> dict[str, Any]:
    return {"spec": {"decryption": decryption}} if decryption is not None else {"spec": {}}


@pytest.mark.parametrize(("decryption", "named", "null"), [
    ({"provider": "sops", "secretRef": {"name": "sops-age"}}, None,
     "spec.decryption.secretRef.name is 'sops-age', but the key is controller-level"),
    ({"provider": "sops"}, "spec.decryption has no secretRef.name (expected 'sops-age')", None),
    ({"provider": "sops", "secretRef": {"name": "other"}}, "spec.decryption.secretRef.name is 'other', not 'sops-age'",
     "spec.decryption.secretRef.name is 'other', but the key is controller-level"),
    ({"secretRef": {"name": "sops-age"}}, "spec.decryption has no provider", "spec.decryption has no provider"),
    (None, "no spec.decryption", "no spec.decryption"),
])
def test_the_configured_rules(decryption: Any, named: str | None, null: str | None) -> None:
    by_name, controller = configured_rule(Config()), configured_rule(Config(decryption_secret=None))
    assert by_name.problem(wave(decryption)) == named
    problem = controller.problem(wave(decryption))
    assert (problem is None) if null is None else (problem is not None and problem.startswith(null))


def test_decryption_secret_null_is_read_from_the_config() -> None:
    assert parse_config(b"decryption_secret: null\n", ".wave-bot.yaml").decryption_secret is None
    assert configured_rule(parse_config(b"{}\n", ".wave-bot.yaml")) == DecryptionRule(
        ("sops-age",), True, "decryption_secret")


FLUX_SYSTEM = CONTROLLER_KEY


@pytest.mark.parametrize(("configured", "secrets"), [
    ("sops-age", ("sops-age", "cluster-key")), (None, ("cluster-key",))])
def test_a_controller_key_set_by_the_clusters_own_patch(
    configured: str | None, secrets: tuple[str, ...], tmp_path: Path
) -> None:
    write_files(tmp_path, {"clusters/dev/flux-system/kustomization.yaml": FLUX_SYSTEM,
                           "clusters/dev/flux-system/gotk-components.yaml": "# flux install\n",
                           "clusters/prod/kustomization.yaml": "resources: [../base]\n"})
    model = read_kustomizations(FsTree(str(tmp_path)), "clusters")
    config = Config(decryption_secret=configured)
    dev = rule_for(config, model, "clusters/dev")
    assert (dev.secrets, dev.ref_required) == (secrets, False)
    assert dev.source == ("kustomize-controller --sops-age-secret=cluster-key in "
                          "clusters/dev/flux-system/kustomization.yaml")
    assert dev.problem(wave({"provider": "sops"})) is None
    assert dev.problem(wave({"provider": "sops", "secretRef": {"name": "cluster-key"}})) is None
    assert dev.problem(wave({"provider": "sops", "secretRef": {"name": "else"}})) is not None
    assert rule_for(config, model, "clusters/prod") == configured_rule(config)  # another cluster's controller


def test_a_patch_of_another_deployment_says_nothing(tmp_path: Path) -> None:
    write_files(tmp_path, {"clusters/dev/flux-system/kustomization.yaml": FLUX_SYSTEM.replace(
        "labelSelector: app.kubernetes.io/component=kustomize-controller", "name: helm-controller")})
    model = read_kustomizations(FsTree(str(tmp_path)), "clusters")
    assert rule_for(Config(), model, "clusters/dev") == configured_rule(Config())


@pytest.mark.parametrize("sibling", ["clusters/dev-2", "clusters/dev2", "clusters/dev.old", "clusters/devel"])
@pytest.mark.parametrize("asked", ["clusters/dev", "clusters/dev/", "./clusters/dev"])
def test_a_sibling_directory_sharing_the_clusters_name_is_another_cluster(
    sibling: str, asked: str, tmp_path: Path
) -> None:
    # Only patches under the cluster's own directory set its controller's key; a sibling whose name
    # merely starts the same (dev-2 beside dev) is another cluster, whatever the model covers.
    write_files(tmp_path, {f"{sibling}/flux-system/kustomization.yaml": FLUX_SYSTEM,
                           f"{sibling}/flux-system/gotk-components.yaml": "# flux install\n",
                           "clusters/dev/kustomization.yaml": "resources: [../base]\n"})
    model = read_kustomizations(FsTree(str(tmp_path)), "clusters")
    assert rule_for(Config(), model, asked) == configured_rule(Config())
    other = rule_for(Config(), model, sibling)
    assert other.secrets == ("sops-age", "cluster-key")
    assert other.source == f"kustomize-controller --sops-age-secret=cluster-key in {sibling}/flux-system/" \
        "kustomization.yaml"


@pytest.mark.parametrize("asked", ["clusters/dev", "clusters/dev/", "./clusters/dev"])
def test_the_clusters_own_patch_is_found_however_its_directory_is_spelt(asked: str, tmp_path: Path) -> None:
    write_files(tmp_path, {"clusters/dev/flux-system/kustomization.yaml": FLUX_SYSTEM,
                           "clusters/dev/flux-system/gotk-components.yaml": "# flux install\n",
                           "clusters/dev-2/flux-system/kustomization.yaml": FLUX_SYSTEM.replace("cluster-key", "dev-2"),
                           "clusters/dev-2/flux-system/gotk-components.yaml": "# flux install\n"})
    model = read_kustomizations(FsTree(str(tmp_path)), "clusters")
    assert rule_for(Config(), model, asked).secrets == ("sops-age", "cluster-key")


CONTROLLER_SMP = """resources: [gotk-components.yaml]
patches:
  - patch: |
      apiVersion: apps/v1
      kind: Deployment
      metadata: {name: kustomize-controller, namespace: flux-system}
      spec:
        template:
          spec:
            containers:
              - name: manager
                args: [--sops-age-secret=cluster-key]
"""


@pytest.mark.parametrize("kustomization", [
    FLUX_SYSTEM.replace("labelSelector: app.kubernetes.io/component=kustomize-controller",
                        "name: kustomize-controller"),
    FLUX_SYSTEM.replace("{kind: Deployment, labelSelector: app.kubernetes.io/component=kustomize-controller}",
                        "{group: apps, version: v1, kind: Deployment, name: kustomize-controller}"),
    CONTROLLER_SMP,
], ids=["target by name", "target by group and version", "strategic merge without target"])
def test_every_way_of_naming_the_controller_sets_its_key(kustomization: str, tmp_path: Path) -> None:
    write_files(tmp_path, {"clusters/dev/flux-system/kustomization.yaml": kustomization,
                           "clusters/dev/flux-system/gotk-components.yaml": "# flux install\n"})
    model = read_kustomizations(FsTree(str(tmp_path)), "clusters")
    assert rule_for(Config(), model, "clusters/dev").describe() == (
        "provider sops, and secretRef.name sops-age or cluster-key or no secretRef, per kustomize-controller "
        "--sops-age-secret=cluster-key in clusters/dev/flux-system/kustomization.yaml")


@pytest.mark.parametrize("kustomization", [
    CONTROLLER_SMP.replace("name: kustomize-controller", "name: helm-controller"),
    # a selector wave-bot cannot read says nothing about which Deployment the patch changes
    FLUX_SYSTEM.replace("app.kubernetes.io/component=kustomize-controller", "'tier > 1'"),
], ids=["strategic merge of another Deployment", "unreadable selector"])
def test_a_patch_not_known_to_change_the_controller_sets_no_key(kustomization: str, tmp_path: Path) -> None:
    write_files(tmp_path, {"clusters/dev/flux-system/kustomization.yaml": kustomization,
                           "clusters/dev/flux-system/gotk-components.yaml": "# flux install\n"})
    model = read_kustomizations(FsTree(str(tmp_path)), "clusters")
    assert rule_for(Config(), model, "clusters/dev").describe() == (
        "provider sops and secretRef.name sops-age, per decryption_secret")


def test_a_cluster_at_the_repository_root_takes_the_key_from_any_directory(tmp_path: Path) -> None:
    # a Flux Kustomization file at the root has "" as its cluster directory: everything is under it
    write_files(tmp_path, {"clusters/dev/flux-system/kustomization.yaml": FLUX_SYSTEM,
                           "clusters/dev/flux-system/gotk-components.yaml": "# flux install\n"})
    model = read_kustomizations(FsTree(str(tmp_path)), "clusters")
    assert rule_for(Config(decryption_secret=None), model, "").describe() == (
        "provider sops, and secretRef.name cluster-key or no secretRef, per kustomize-controller "
        "--sops-age-secret=cluster-key in clusters/dev/flux-system/kustomization.yaml")


def test_the_controller_level_rule_says_where_it_comes_from() -> None:
    # quoted in every missing-decryption finding ("wave-bot expects ...")
    assert configured_rule(Config(decryption_secret=None)).describe() == (
        "provider sops and no secretRef, per decryption_secret: null (a controller-level key)")
