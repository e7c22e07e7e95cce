"""One regression test per case of issue 8, each reproduced on a copy of examples/homelab the way the
issue describes it: through the CLI, with real git, judged by the finding a reviewer sees."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bot.cli import main

from conftest import TOOLS_KUSTOMIZATION, Kubectl, cluster_apps, git, write_files

TOOLS_PATCH = """apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: tools
  namespace: flux-system
spec:
  interval: 5m
"""


def plan(repo: Path, capsys: pytest.CaptureFixture[str], base: str = "HEAD") -> dict[str, Any]:
    capsys.readouterr()
    code = main(["plan", str(repo), "--base", base, "--format", "json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    return dict(json.loads(out.out))


def codes(out: dict[str, Any], code: str) -> list[dict[str, Any]]:
    return [f for f in out["findings"] if f["code"] == code]


def commit(repo: Path, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)


@pytest.mark.parametrize("name", ["kustomization.yaml", "kustomization.yml", "Kustomization"])
def test_1_removing_a_kustomization_with_a_targeted_patch_file_in_any_kustomization_file_name(
    name: str, example_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base_k = example_repo / "clusters/base/kustomization.yaml"
    prod = example_repo / "clusters/prod/kustomization.yaml"
    base_text = base_k.read_text()
    base_k.write_text(base_text.replace("resources:\n", "resources:\n  - tools.yaml\n", 1))
    prod_text = prod.read_text() + "  - path: patches/tools.yaml\n    target: {kind: Kustomization, name: tools}\n"
    prod.unlink()
    write_files(example_repo, {"clusters/base/tools.yaml": TOOLS_KUSTOMIZATION, f"clusters/prod/{name}": prod_text,
                               "clusters/prod/patches/tools.yaml": TOOLS_PATCH,
                               "tools/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: t, namespace: x}\n"})
    commit(example_repo, "add tools")
    base_k.write_text(base_text)
    (example_repo / "clusters/base/tools.yaml").unlink()
    commit(example_repo, "remove tools")
    (removed,) = codes(plan(example_repo, capsys, base="HEAD~1"), "kustomization-removed")
    assert (removed["severity"], removed["path"], removed["resource"]) == (
        "error", "clusters/base/tools.yaml", "kustomize.toolkit.fluxcd.io/Kustomization flux-system/tools")


CLUSTER_APPS = cluster_apps("""    - target:
        kind: ConfigMap
        name: cluster-vars
      patch: |
        - op: replace
          path: /data/CLUSTER_ENV
          value: dev
""")
REGEX_DECRYPTION = """    - target:
        kind: Kustomization
        name: apps-wave-[0-9]+
      patch: |
        apiVersion: kustomize.toolkit.fluxcd.io/v1
        kind: Kustomization
        metadata:
          name: all
        spec:
          decryption:
            provider: sops
            secretRef:
              name: sops-age
"""


def cluster_template(repo: Path, cluster_apps: str) -> None:
    """clusters/dev in the cluster-template layout: it lists a Flux Kustomization that builds the base."""
    write_files(repo, {
        "clusters/dev/kustomization.yaml": "resources:\n  - cluster-apps.yaml\n",
        "clusters/dev/cluster-apps.yaml": cluster_apps,
    })
    commit(repo, "cluster-template layout")


def test_2_a_flux_kustomization_building_the_base_is_checked(
    example_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster_template(example_repo, CLUSTER_APPS)
    missing = codes(plan(example_repo, capsys), "missing-decryption")
    label = "clusters/dev/cluster-apps.yaml (Flux Kustomization flux-system/cluster-apps, path ./clusters/base)"
    assert sorted((f["wave"], f["severity"], f["path"], f["overlay"]) for f in missing) == [
        (0, "error", "clusters/dev/cluster-apps.yaml", label), (1, "error", "clusters/dev/cluster-apps.yaml", label),
        (2, "warning", "clusters/dev/cluster-apps.yaml", label)]  # wave 2 holds no SOPS file
    assert main(["check", str(example_repo)]) == 1
    (fix,) = {f["fix"] for f in missing}
    header, item = fix.split("\n", 1)
    assert header == ("# clusters/dev/cluster-apps.yaml: add under spec.patches: of "
                      "kustomize.toolkit.fluxcd.io/Kustomization flux-system/cluster-apps:")
    with open(example_repo / "clusters/dev/cluster-apps.yaml", "a") as handle:  # spec.patches is its last key
        handle.write("".join(f"    {line}" if line.strip() else line for line in item.splitlines(keepends=True)))
    commit(example_repo, "paste the fix")
    assert codes(plan(example_repo, capsys), "missing-decryption") == []


def test_2_with_decryption_in_its_spec_patches_it_passes(
    example_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster_template(example_repo, CLUSTER_APPS + REGEX_DECRYPTION)
    out = plan(example_repo, capsys)
    assert not codes(out, "missing-decryption") and not codes(out, "decryption-unchecked")
    assert main(["check", str(example_repo)]) == 0


def test_3_a_posix_class_target_regex_decrypts_every_wave(
    example_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dev = example_repo / "clusters/dev/kustomization.yaml"
    head = dev.read_text().split("  # SOPS decryption")[0]
    dev.write_text(head + REGEX_DECRYPTION.replace("    - target", "  - target").replace("\n    ", "\n  ")
                   .replace("apps-wave-[0-9]+", '"apps-wave-[[:digit:]]+"'))
    commit(example_repo, "one regex patch")
    out = plan(example_repo, capsys)
    assert not codes(out, "missing-decryption") and not codes(out, "overlay-not-checked")


def test_4_a_patch_allowed_to_rename_a_wave(example_repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prod = example_repo / "clusters/prod/kustomization.yaml"
    prod.write_text(prod.read_text() + (
        "  - target: {kind: Kustomization, name: apps-wave-2}\n    options: {allowNameChange: true}\n"
        "    patch: |\n      apiVersion: kustomize.toolkit.fluxcd.io/v1\n      kind: Kustomization\n"
        "      metadata: {name: apps-wave-2-renamed}\n"))
    commit(example_repo, "rename wave 2 in prod")
    (gone,) = codes(plan(example_repo, capsys), "wave-not-in-overlay")
    assert (gone["wave"], gone["overlay"]) == (2, "clusters/prod")


CONTROLLER_PATCH = """apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - gotk-components.yaml
patches:
  - patch: |
      - op: add
        path: /spec/template/spec/containers/0/args/-
        value: --sops-age-secret=sops-age
    target:
      kind: Deployment
      name: kustomize-controller
"""


def without_secret_refs(repo: Path) -> None:
    for overlay in ("clusters/dev/kustomization.yaml", "clusters/prod/kustomization.yaml"):
        path = repo / overlay
        path.write_text(path.read_text().replace("          secretRef:\n            name: sops-age\n", ""))
    for patch in (repo / "clusters/prod/patches").glob("apps-wave-*-sops.yaml"):
        patch.write_text(patch.read_text().replace("    secretRef:\n      name: sops-age\n", ""))


def test_5_a_controller_level_key_needs_no_secret_ref(
    example_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    without_secret_refs(example_repo)
    commit(example_repo, "migrate to the controller-level key")
    missing = codes(plan(example_repo, capsys), "missing-decryption")
    assert {f["overlay"] for f in missing} == {"clusters/dev", "clusters/prod"}  # not configured, not detected
    assert "wave-bot expects provider sops and secretRef.name sops-age, per decryption_secret" in missing[0]["message"]

    (example_repo / ".wave-bot.yaml").write_text((example_repo / ".wave-bot.yaml").read_text()
                                                 + "decryption_secret: null\n")
    commit(example_repo, "say so")
    assert codes(plan(example_repo, capsys), "missing-decryption") == []


def test_5_the_repositorys_own_controller_patch_is_detected(
    example_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    without_secret_refs(example_repo)
    write_files(example_repo, {"clusters/dev/flux-system/kustomization.yaml": CONTROLLER_PATCH,
                               "clusters/dev/flux-system/gotk-components.yaml": "# flux install output\n"})
    commit(example_repo, "dev migrates to the controller-level key")
    missing = codes(plan(example_repo, capsys), "missing-decryption")
    assert {f["overlay"] for f in missing} == {"clusters/prod"}  # prod's controller has no such key


def test_6_an_overlay_wave_bot_cannot_evaluate_fails_check_when_waves_hold_sops_files(
    example_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prod = example_repo / "clusters/prod/kustomization.yaml"
    prod.write_text(prod.read_text().replace("  - ../base\n", "  - ../base\n  - github.com/example/fleet//x?ref=v1\n"))
    commit(example_repo, "a remote base")
    (unchecked,) = codes(plan(example_repo, capsys), "overlay-not-checked")
    assert (unchecked["severity"], unchecked["overlay"]) == ("error", "clusters/prod")
    assert main(["check", str(example_repo)]) == 1


def test_2_a_flux_kustomization_building_a_base_without_kustomization_is_not_checked(
    example_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """kustomize-controller generates the missing kustomization; wave-bot says it did not evaluate that
    rather than calling the path broken."""
    (example_repo / "clusters/base/kustomization.yaml").unlink()
    cluster_template(example_repo, CLUSTER_APPS)
    out = plan(example_repo, capsys)
    assert not [f for f in codes(out, "overlay-build-error") if "cluster-apps" in (f.get("overlay") or "")]
    (unchecked,) = [f for f in codes(out, "overlay-not-checked") if "cluster-apps" in f["overlay"]]
    assert unchecked["severity"] == "error"
    assert "./clusters/base has no kustomization, so kustomize-controller generates one" in unchecked["message"]


def test_an_overlay_with_a_repeated_key_is_checked_as_kubectl_builds_it(
    example_repo: Path, kubectl: Kubectl, capsys: pytest.CaptureFixture[str]
) -> None:
    """kustomize builds a kustomization with a repeated key, keeping the last value; wave-bot reads it
    the same way and checks that overlay (it used to report it as not checked)."""
    prod = example_repo / "clusters/prod/kustomization.yaml"
    prod.write_text(prod.read_text() + "namespace: other\nnamespace: flux-system\n")
    dev = example_repo / "clusters/dev/kustomization.yaml"
    dev.write_text(dev.read_text().replace("name: apps-wave-0\n", "name: apps-wave-7\n", 1))
    commit(example_repo, "a repeated key in prod, a patch without a target in dev")
    assert kubectl(example_repo / "clusters/prod").returncode == 0
    assert kubectl(example_repo / "clusters/dev").returncode != 0
    out = plan(example_repo, capsys)
    assert not codes(out, "overlay-not-checked")
    # prod is checked, and nothing is wrong with it
    assert not [f for f in out["findings"] if f.get("overlay") == "clusters/prod"]
    # dev is still evaluated: its patch that kustomize refuses is found
    assert [f["overlay"] for f in codes(out, "stale-decryption-patch")] == ["clusters/dev"]
    assert main(["check", str(example_repo)]) == 1
