"""bot.checks.overlays, bot.fixes.overlays, bot.flux.evalpaths: every wave listed in the base and decrypted in every
overlay, checked against real kustomize."""
from __future__ import annotations

import difflib
import json
import os
import re
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest

from bot.checks.overlays import base_findings, decryption_findings, new_deepest_wave_findings
from bot.cli import main
from bot.config import Config
from bot.errors import WaveBotError
from bot.fixes.overlays import fix_overlays, regex_item
from bot.flux.evalpaths import discover_overlays, evaluation_paths
from bot.kustomize.build import build
from bot.layout import render
from bot.model import Change, Finding
from bot.repo.tree import PlannedTree
from bot.repo.worktree import FsTree
from bot.side import Side
from bot.yamlio import documents as yamlio

from conftest import CONTROLLER_KEY, Kubectl, cluster_apps, write_files
from support import fluxcrd

CFG = Config()
SECRET = CFG.decryption_secret
ALL = (0, 1, 2)

# ---- building repositories ---------------------------------------------------------------------------


def base_kustomization(listed: Iterable[int]) -> str:
    """clusters/base/kustomization.yaml in the example's style (a comment on every line)."""
    lines = [
        "---",
        "# Base Flux entrypoint set, shared by every environment overlay.",
        "apiVersion: kustomize.config.k8s.io/v1beta1",
        "kind: Kustomization",
        "resources:",
        "  - flux-system.yaml # GitRepository (reconciliation source)",
        "  # App tier, split into dependency-ordered WAVES (wave-bot flags a new deepest wave).",
    ]
    for n in listed:
        after = "platform-config" if n == 0 else f"apps-wave-{n - 1}"
        lines.append(f"  - apps-wave-{n}.yaml # Flux Kustomization -> ./apps/wave-{n} (dependsOn {after})")
    lines.append("  - cluster-vars.yaml # overlay knob surface (base defaults)")
    return "\n".join(lines) + "\n"


FLUX_SYSTEM = """apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: flux-system
  namespace: flux-system
spec:
  interval: 1m
  url: ssh://git@example/gitops.git
"""
CLUSTER_VARS = """apiVersion: v1
kind: ConfigMap
metadata:
  name: cluster-vars
  namespace: flux-system
data:
  CLUSTER_ENV: base
"""


def base_files(waves: Sequence[int] = ALL, listed: Iterable[int] | None = None,
               template: dict[str, Any] | None = None) -> dict[str, str | bytes]:
    """The base: one generated Flux Kustomization per wave (bot.layout.render), listed in its kustomization."""
    tpl = template if template is not None else render.DEFAULT_TEMPLATE
    files: dict[str, str | bytes] = {
        "clusters/base/kustomization.yaml": base_kustomization(waves if listed is None else listed),
        "clusters/base/flux-system.yaml": FLUX_SYSTEM,
        "clusters/base/cluster-vars.yaml": CLUSTER_VARS,
    }
    for n in waves:
        files[CFG.wave_cr_path(n)] = render.wave_cr(n, tpl, CFG)
    return files


def make(tmp_path: Path, files: dict[str, str | bytes], **base: Any) -> Path:
    root = tmp_path / "repo"
    write_files(root, {**base_files(**base), **files})
    return root


def indent(text: str, by: int) -> str:
    return "".join(" " * by + line if line.strip() else line for line in text.splitlines(keepends=True))


def smp(n: int, secret: str = SECRET, provider: str | None = "sops", comment: str = "") -> str:
    lines = [comment] if comment else []
    lines += ["apiVersion: kustomize.toolkit.fluxcd.io/v1", "kind: Kustomization", "metadata:",
              f"  name: apps-wave-{n}", "  namespace: flux-system", "spec:", "  decryption:"]
    lines += [f"    provider: {provider}"] if provider else []
    lines += ["    secretRef:", f"      name: {secret}"]
    return "\n".join(lines) + "\n"


def json_ops(secret: str = SECRET) -> str:
    return (f"- op: add\n  path: /spec/decryption\n  value:\n    provider: sops\n    secretRef:\n"
            f"      name: {secret}\n")


HEAD = """---
# dev cluster: `flux bootstrap ... --path=clusters/dev`.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - ../base
"""
KNOBS = """patches:
  # dev values for the overlay knobs
  - target:
      kind: ConfigMap
      name: cluster-vars
    patch: |
      - op: replace
        path: /data/CLUSTER_ENV
        value: dev
  # SOPS decryption. LOAD-BEARING: a wave without it applies its *.sops.yaml files still encrypted.
"""
DEV = "clusters/dev/kustomization.yaml"


def inline_smp(waves: Iterable[int] = ALL, secrets: dict[int, str] | None = None) -> dict[str, str]:
    items = "".join("  - patch: |\n" + indent(smp(n, (secrets or {}).get(n, SECRET)), 6) for n in waves)
    return {DEV: HEAD + KNOBS + items}


def path_smp(waves: Iterable[int] = ALL) -> dict[str, str]:
    files = {DEV: HEAD + KNOBS + "".join(f"  - path: patches/apps-wave-{n}-sops.yaml\n" for n in waves)}
    for n in waves:
        files[f"clusters/dev/patches/apps-wave-{n}-sops.yaml"] = smp(
            n, comment=f"# SOPS decryption for apps-wave-{n} (age key: the out-of-band sops-age Secret).")
    return files


def json_inline(waves: Iterable[int] = ALL) -> dict[str, str]:
    items = "".join(
        f"  - target:\n      group: kustomize.toolkit.fluxcd.io\n      kind: Kustomization\n      name: apps-wave-{n}\n"
        "    patch: |\n" + indent(json_ops(), 6) for n in waves)
    return {DEV: HEAD + KNOBS + items}


def json_appending(index: str, op: str = "add") -> dict[str, str]:
    """Every wave gets decryption from a JSON6902 patch that first applies `op` to the one-item
    postBuild.substituteFrom list at `index` (RFC 6902: add at most at the list's length, `-`
    appends; the other ops only at an existing index)."""
    value = "  value:\n    kind: ConfigMap\n    name: " + ("cluster-vars\n" if op == "test" else "extra-vars\n")
    ops = f"- op: {op}\n  path: /spec/postBuild/substituteFrom/{index}\n" + ("" if op == "remove" else value) \
        + json_ops()
    items = "".join(
        f"  - target:\n      kind: Kustomization\n      name: apps-wave-{n}\n    patch: |\n" + indent(ops, 6)
        for n in ALL)
    return {DEV: HEAD + KNOBS + items}


def json_files(waves: Iterable[int] = ALL) -> dict[str, str]:
    items = "".join(
        f"  - path: decryption/apps-wave-{n}.yaml # JSON6902\n    target:\n      kind: Kustomization\n"
        f"      name: apps-wave-{n}\n" for n in waves)
    files = {DEV: HEAD + KNOBS + items}
    for n in waves:
        files[f"clusters/dev/decryption/apps-wave-{n}.yaml"] = f"# decryption for apps-wave-{n}\n" + json_ops()
    return files


def regex_target(pattern: str = "apps-wave-[0-9]+") -> dict[str, str]:
    item = (f"  - target:\n      kind: Kustomization\n      name: {pattern}\n    patch: |\n"
            + indent(smp(0).replace("apps-wave-0", "any"), 6))
    return {DEV: HEAD + KNOBS + item}


def legacy_psm(paths: Iterable[int] = (0, 1), inline: Iterable[int] = (2,)) -> dict[str, str]:
    text = HEAD + "# Legacy fields, still accepted by kustomize v5.\npatchesStrategicMerge:\n"
    text += "".join(f"  - sops/apps-wave-{n}.yaml\n" for n in paths)
    text += "".join("  - |-\n" + indent(smp(n), 4) for n in inline)
    files = {DEV: text}
    for n in paths:
        files[f"clusters/dev/sops/apps-wave-{n}.yaml"] = smp(n)
    return files


def legacy_json(waves: Iterable[int] = ALL, files_for: Iterable[int] = ()) -> dict[str, str]:
    text = HEAD + "patchesJson6902:\n  # one per wave\n"
    files: dict[str, str] = {}
    for n in waves:
        text += (f"  - target:\n      group: kustomize.toolkit.fluxcd.io\n      version: v1\n"
                 f"      kind: Kustomization\n      name: apps-wave-{n}\n")
        if n in files_for:
            text += f"    path: json/apps-wave-{n}.yaml\n"
            files[f"clusters/dev/json/apps-wave-{n}.yaml"] = json_ops()
        else:
            text += "    patch: |\n" + indent(json_ops(), 6)
    return {DEV: text, **files}


COMPONENT = "clusters/components/sops/kustomization.yaml"


def component(waves: Iterable[int] = ALL) -> dict[str, str]:
    items = "".join("  - patch: |\n" + indent(smp(n), 6) for n in waves)
    return {
        DEV: HEAD + "components:\n  - ../components/sops # SOPS decryption for every wave\n",
        COMPONENT: ("# Shared by every cluster.\napiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n"
                    "patches:\n" + items),
    }


STAGING = "clusters/staging/kustomization.yaml"


def on_overlay(staging_body: str = "") -> dict[str, str]:
    return {**inline_smp(), STAGING: "# staging = dev + a few tweaks\nresources:\n  - ../dev\n" + staging_body}


# ---- what kubectl and the bot each say -----------------------------------------------------------------


def kubectl_decrypted(kubectl: Kubectl, root: Path, overlay: str) -> set[int] | None:
    """Waves whose Flux Kustomization kubectl's build gives the SOPS decryption; None: no build."""
    real = kubectl(root / overlay)
    if real.returncode != 0:
        return None
    out = set()
    for doc in yamlio.load(real.stdout.encode(), "kubectl output"):
        value = doc.value or {}
        wave = CFG.wave_of_cr_file(f"{value.get('metadata', {}).get('name')}.yaml")
        decryption = (value.get("spec") or {}).get("decryption") or {}
        if (value.get("kind") == "Kustomization" and wave is not None and decryption.get("provider") == "sops"
                and (decryption.get("secretRef") or {}).get("name") == SECRET):
            out.add(wave)
    return out


BREAKING = {"stale-decryption-patch", "overlay-build-error"}


def bot_verdict(root: Path, overlay: str, waves: Sequence[int]) -> tuple[set[int], set[str]]:
    """(waves the bot finds decrypted, codes of its findings) for one overlay."""
    config = Config(overlays=(overlay,))
    found = decryption_findings(FsTree(str(root)), config, waves, set(waves))
    missing = {f.wave for f in found if f.code == "missing-decryption"}
    return set(waves) - missing, {f.code for f in found}


# The shapes: (files, waves in the base, overlay checked, waves kubectl decrypts; None: it fails to build).
SHAPES: dict[str, tuple[dict[str, str], Sequence[int], str, set[int] | None]] = {
    "inline smp per wave": (inline_smp(), ALL, "clusters/dev", {0, 1, 2}),
    "path files per wave": (path_smp(), ALL, "clusters/dev", {0, 1, 2}),
    "json6902 inline": (json_inline((0, 1)), ALL, "clusters/dev", {0, 1}),
    "json6902 files": (json_files(), ALL, "clusters/dev", {0, 1, 2}),
    "json6902 add at the end index": (json_appending("1"), ALL, "clusters/dev", {0, 1, 2}),
    "json6902 add at the start index": (json_appending("0"), ALL, "clusters/dev", {0, 1, 2}),
    "json6902 add with -": (json_appending("-"), ALL, "clusters/dev", {0, 1, 2}),
    "json6902 add past the end": (json_appending("2"), ALL, "clusters/dev", None),
    "json6902 test of a list item": (json_appending("0", "test"), ALL, "clusters/dev", {0, 1, 2}),
    "json6902 replace at the end index": (json_appending("1", "replace"), ALL, "clusters/dev", None),
    "json6902 remove at the end index": (json_appending("1", "remove"), ALL, "clusters/dev", None),
    "json6902 remove the last item": (json_appending("0", "remove"), ALL, "clusters/dev", {0, 1, 2}),
    "regex target covering all waves": (regex_target(), ALL, "clusters/dev", {0, 1, 2}),
    "regex target covering some waves": (regex_target("apps-wave-[01]"), ALL, "clusters/dev", {0, 1}),
    "wrong secret name": (inline_smp(secrets={1: "sops-key"}), ALL, "clusters/dev", {0, 2}),
    "provider missing": ({DEV: HEAD + KNOBS + "".join(
        "  - patch: |\n" + indent(smp(n, provider=None if n == 2 else "sops"), 6) for n in ALL)},
        ALL, "clusters/dev", {0, 1}),
    "legacy patchesStrategicMerge": (legacy_psm(), ALL, "clusters/dev", {0, 1, 2}),
    "legacy patchesJson6902": (legacy_json(files_for=(1,)), ALL, "clusters/dev", {0, 1, 2}),
    "overlay on an overlay": (on_overlay(
        "patches:\n  - target:\n      name: apps-wave-2\n    patch: |\n      - op: remove\n"
        "        path: /spec/decryption\n"), ALL, "clusters/staging", {0, 1}),
    "overlay on an overlay, inheriting": (on_overlay("namespace: flux-system\n"), ALL, "clusters/staging", {0, 1, 2}),
    "a component": (component(), ALL, "clusters/dev", {0, 1, 2}),
    "decryption in the base": ({DEV: HEAD + KNOBS}, ALL, "clusters/dev", {0, 1, 2}),
    "no decryption at all": ({DEV: HEAD + KNOBS}, ALL, "clusters/dev", set()),
    "decryption removed by a later patch": ({DEV: inline_smp()[DEV] + "  - patch: |\n" + indent(
        smp(0).split("spec:")[0] + "spec:\n  decryption: null\n", 6)}, ALL, "clusters/dev", {1, 2}),
    "stale patch without target (wave 2 removed)": (inline_smp(), (0, 1), "clusters/dev", None),
    "stale patch with a target (wave 2 removed)": (json_inline(), (0, 1), "clusters/dev", {0, 1}),
    "smp without namespace": ({DEV: HEAD + KNOBS + "  - patch: |\n" + indent(
        smp(0).replace("  namespace: flux-system\n", ""), 6)}, ALL, "clusters/dev", None),
}
WITH_TEMPLATE = {"decryption in the base"}
DECRYPTING_TEMPLATE = {
    "metadata": {"namespace": "flux-system"},
    "spec": {**render.DEFAULT_TEMPLATE["spec"], "decryption": {"provider": "sops", "secretRef": {"name": SECRET}}},
}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_analysis_agrees_with_kubectl(shape: str, tmp_path: Path, kubectl: Kubectl) -> None:
    files, waves, overlay, expected = SHAPES[shape]
    root = make(tmp_path, files, waves=waves, template=DECRYPTING_TEMPLATE if shape in WITH_TEMPLATE else None)
    real = kubectl_decrypted(kubectl, root, overlay)
    assert real == expected, "the shape does not do what its name says"
    decrypted, codes = bot_verdict(root, overlay, waves)
    if real is None:
        assert codes & BREAKING, f"kubectl cannot build {overlay}, but wave-bot did not say so: {codes}"
    else:
        assert not codes & BREAKING
        assert decrypted == real


# ---- finding messages ----------------------------------------------------------------------------------


def findings(root: Path, waves: Sequence[int] = ALL, sops: set[int] | None = None, **config: Any) -> list[Finding]:
    return decryption_findings(FsTree(str(root)), Config(**config), waves, set(waves) if sops is None else sops)


def test_missing_decryption_is_an_error_for_a_wave_with_sops_files(tmp_path: Path) -> None:
    root = make(tmp_path, inline_smp((0, 1), secrets={1: "sops-key"}))
    wrong, missing = sorted((f for f in findings(root, sops={1, 2})), key=lambda f: f.wave or 0)
    assert (wrong.code, wrong.severity, wrong.overlay, wrong.wave, wrong.path, wrong.resource) == (
        "missing-decryption", "error", "clusters/dev", 1, DEV, "apps-wave-1")
    assert wrong.message == (
        "clusters/dev: apps-wave-1 gets no SOPS decryption (spec.decryption.secretRef.name is 'sops-key', not "
        "'sops-age'; wave-bot expects provider sops and secretRef.name sops-age, per decryption_secret); wave 1 holds "
        "SOPS-encrypted files: its *.sops.yaml files would be applied still encrypted, "
        "corrupting the Secrets they hold; `wave-bot apply --fix-overlays` makes this edit")
    assert missing.message.startswith("clusters/dev: apps-wave-2 gets no SOPS decryption (no spec.decryption;")


def test_missing_decryption_is_a_warning_for_a_wave_without_sops_files(tmp_path: Path) -> None:
    root = make(tmp_path, inline_smp((0, 1)))
    (finding,) = findings(root, sops={0, 1})
    assert (finding.severity, finding.wave) == ("warning", 2)
    assert finding.message == (
        "clusters/dev: apps-wave-2 gets no SOPS decryption (no spec.decryption; wave-bot expects provider sops and "
        "secretRef.name sops-age, per decryption_secret); wave 2 holds no SOPS file yet, "
        "but once it does its *.sops.yaml files would be applied still encrypted, corrupting the Secrets they hold"
        "; `wave-bot apply --fix-overlays` makes this edit")


@pytest.mark.parametrize(("patch", "reason"), [
    ("spec:\n  decryption:\n    provider: vault\n    secretRef: {name: sops-age}",
     "spec.decryption.provider is 'vault', not 'sops'"),
    ("spec:\n  decryption:\n    secretRef: {name: sops-age}", "spec.decryption has no provider"),
    ("spec:\n  decryption:\n    provider: sops", "spec.decryption has no secretRef.name (expected 'sops-age')"),
])
def test_each_reason_a_decryption_is_wrong(patch: str, reason: str, tmp_path: Path) -> None:
    head = smp(2).split("spec:")[0]
    root = make(tmp_path, {DEV: inline_smp((0, 1))[DEV] + "  - patch: |\n" + indent(head + patch + "\n", 6)})
    (finding,) = findings(root)
    assert f"apps-wave-2 gets no SOPS decryption ({reason}; wave-bot expects" in finding.message


def test_the_fix_is_the_patch_fix_overlays_adds(tmp_path: Path) -> None:
    root = make(tmp_path, path_smp((0, 1)))
    (finding,) = findings(root)
    assert finding.fix == (
        "# create clusters/dev/patches/apps-wave-2-sops.yaml:\n"
        + smp(2, comment="# SOPS decryption for apps-wave-2 (age key: the out-of-band sops-age Secret).")
        + "---\n# clusters/dev/kustomization.yaml: add under patches:\n- path: patches/apps-wave-2-sops.yaml\n")


def test_an_overlay_without_any_decryption_is_offered_one_regex_patch(tmp_path: Path) -> None:
    root = make(tmp_path, {DEV: HEAD + KNOBS})
    found = findings(root)
    assert [f.wave for f in found] == [0, 1, 2]
    assert len({f.fix for f in found}) == 1
    assert "name: apps-wave-[0-9]+" in str(found[0].fix)
    assert yamlio.load(str(found[0].fix).encode(), "fix")[0].value[0]["target"]["kind"] == "Kustomization"


def test_with_a_controller_level_key_the_fix_drops_a_secret_a_wave_names(tmp_path: Path, kubectl: Kubectl) -> None:
    """A controller-level key, and wave 2 names a Secret (which Flux would read the key from, not the
    controller's own): the one regex item sets `secretRef: null`, which the strategic merge turns into
    no secretRef at all, so once pasted every wave decrypts with the controller's key."""
    root = make(tmp_path, {DEV: HEAD + KNOBS, CFG.wave_cr_path(2): render.wave_cr(2, DECRYPTING_TEMPLATE, CFG)})
    before = findings(root, decryption_secret=None)
    assert [(f.code, f.wave) for f in before] == [("missing-decryption", n) for n in ALL]
    fix = before[0].fix
    assert fix is not None and "name: apps-wave-[0-9]+" in fix and [f.fix for f in before] == [fix, fix, fix]
    paste(root, fix)
    assert findings(root, decryption_secret=None) == []
    real = kubectl(root / "clusters/dev")
    assert real.returncode == 0, real.stderr
    waves = {d.value["metadata"]["name"]: d.value["spec"]["decryption"]
             for d in yamlio.load(real.stdout.encode(), "kubectl output")
             if d.value and d.value["kind"] == "Kustomization" and d.value["metadata"]["name"].startswith("apps-wave-")}
    assert waves == {CFG.wave_cr_name(n): {"provider": "sops"} for n in ALL}


def test_a_stale_patch_without_target_breaks_the_overlay(tmp_path: Path) -> None:
    root = make(tmp_path, path_smp(), waves=(0, 1))
    (finding,) = findings(root, waves=(0, 1))
    assert (finding.code, finding.severity, finding.path, finding.line, finding.wave) == (
        "stale-decryption-patch", "error", DEV, 19, 2)
    assert finding.message == (
        "clusters/dev: clusters/dev/kustomization.yaml patches[3] gives decryption to apps-wave-2, but wave 2 no "
        "longer exists; kustomize fails on a patch without a target that names a missing object, so Flux applies "
        "nothing from clusters/dev")
    assert finding.fix == ("delete patches[3] (line 19) from clusters/dev/kustomization.yaml, and delete "
                           "clusters/dev/patches/apps-wave-2-sops.yaml")
    inline = make(tmp_path / "inline", inline_smp(), waves=(0, 1))
    (finding,) = findings(inline, waves=(0, 1))
    assert (finding.code, finding.fix) == ("stale-decryption-patch",
                                           "delete patches[3] (line 39) from clusters/dev/kustomization.yaml")


def test_a_regex_target_matching_nothing_is_harmless(tmp_path: Path) -> None:
    root = make(tmp_path, regex_target("apps-wave-[0-9]+|apps-wave-old"), waves=(0, 1))
    assert findings(root, waves=(0, 1)) == []


def test_other_build_errors(tmp_path: Path) -> None:
    root = make(tmp_path, {DEV: HEAD + "patches:\n  - target: {name: apps-wave-0}\n    patch: |\n"
                                  "      - {op: remove, path: /spec/decryption}\n"})
    build_error = [f for f in findings(root) if f.code == "overlay-build-error"]
    # An error (check fails) on the overlay, at the patch's own line (8: `- target:`).
    assert (build_error[0].severity, build_error[0].overlay, build_error[0].path, build_error[0].line) == (
        "error", "clusters/dev", DEV, 8)
    assert build_error[0].message == (
        "clusters/dev: kustomize cannot build it: clusters/dev/kustomization.yaml patches[0]: JSON6902 patch on "
        "Kustomization flux-system/apps-wave-0 (kustomize.toolkit.fluxcd.io/v1) fails: Unable to remove "
        "nonexistent key: decryption")
    root = make(tmp_path / "b", {DEV: HEAD + "bogus: 1\n"})
    (finding,) = findings(root)
    assert (finding.code, finding.severity, finding.overlay, finding.path, finding.line) == (
        "overlay-build-error", "error", "clusters/dev", DEV, 7)
    assert finding.message == ("clusters/dev: kustomize cannot build it, so Flux applies nothing from it: "
                               "clusters/dev/kustomization.yaml:7: unknown field 'bogus': kustomize rejects this "
                               "kustomization")
    # An overlay that does not build does not stop the next one being checked.
    write_files(root, {"clusters/prod/kustomization.yaml": inline_smp((0, 1))[DEV]})
    assert [(f.code, f.overlay, f.wave) for f in findings(root)] == [
        ("overlay-build-error", "clusters/dev", None), ("missing-decryption", "clusters/prod", 2)]


def test_an_overlay_wave_bot_cannot_evaluate_is_reported_not_guessed(tmp_path: Path) -> None:
    root = make(tmp_path, {DEV: HEAD + "  - https://github.com/example/fleet//monitoring?ref=v1\n"})
    (finding,) = findings(root, sops={0, 2})
    assert (finding.code, finding.severity, finding.path, finding.line) == ("overlay-not-checked", "error", DEV, 7)
    assert finding.message == (
        "clusters/dev: wave-bot cannot check its SOPS decryption (waves 0, 2 hold SOPS-encrypted files, so nothing "
        "shows they are decrypted): clusters/dev/kustomization.yaml:7: "
        "'https://github.com/example/fleet//monitoring?ref=v1' is a remote reference; wave-bot never fetches anything")
    (quiet,) = findings(root, sops=set())
    assert (quiet.code, quiet.severity) == ("overlay-not-checked", "warning")
    assert "(no wave holds a SOPS file yet)" in quiet.message
    assert finding.fix == ("kubectl kustomize clusters/dev  # then check every wave's Flux Kustomization has "
                           "spec.decryption")


def test_a_stray_document_separator_is_reported_with_the_edit_that_mends_it(tmp_path: Path, kubectl: Kubectl) -> None:
    # A `---` above patches: kustomize builds the first document only, so no wave is decrypted. The
    # fix says what to change; done as it says, the overlay is checked and decrypts every wave.
    good = inline_smp(ALL)[DEV]
    root = make(tmp_path, {DEV: good.replace("patches:\n", "---\npatches:\n", 1)})
    assert kubectl_decrypted(kubectl, root, "clusters/dev") == set()
    (finding,) = findings(root, sops={0})
    assert (finding.code, finding.severity, finding.path) == ("overlay-not-checked", "error", DEV)
    line = (root / DEV).read_text().splitlines().index("patches:")  # 0-based: the `---` just above
    assert finding.fix is not None and finding.fix.splitlines()[0] == (
        f"# delete the `---` on line {line} to make one document, or delete what follows it")
    write_files(root, {DEV: good})  # the `---` line deleted: one document
    assert findings(root, sops={0}) == [] and kubectl_decrypted(kubectl, root, "clusters/dev") == set(ALL)


@pytest.mark.parametrize(("limit", "last"), [
    (10, None), (9, "clusters/dev/patches/apps-wave-2-sops.yaml"), (6, "clusters/base/cluster-vars.yaml")])
def test_an_overlay_reading_more_files_than_the_limit_is_not_checked_its_patch_files_counted(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limit: int, last: str | None) -> None:
    # The limit refuses a pathological repository with a finding instead of reading it all; lowered
    # here so that ten files cross it: two kustomizations, the base's five objects and the overlay's
    # three patch files, which are read as much as resources are. The finding names the file read
    # past the limit.
    monkeypatch.setattr("bot.kustomize.build.MAX_FILES", limit)
    root = make(tmp_path, path_smp())
    found = findings(root)
    if last is None:
        assert found == []
        return
    (finding,) = found
    assert (finding.code, finding.severity) == ("overlay-not-checked", "error")
    assert finding.message.endswith(f"{last}: the build reads more than {limit} files; wave-bot stops there")
    assert finding.fix is not None and finding.fix.startswith("kubectl kustomize clusters/dev")


def deleting_wave_2() -> dict[str, str]:
    """clusters/dev decrypting waves 0 and 1 and deleting wave 2's Flux Kustomization."""
    return {DEV: inline_smp((0, 1))[DEV].replace("patches:\n", "patches:\n  - patch: |\n" + indent(
        "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: apps-wave-2, "
        "namespace: flux-system}\n$patch: delete\n", 6), 1)}


def test_a_wave_the_overlay_deletes(tmp_path: Path) -> None:
    root = make(tmp_path, deleting_wave_2())
    (finding,) = findings(root)
    assert (finding.code, finding.severity, finding.wave) == ("wave-not-in-overlay", "error", 2)
    assert (finding.path, finding.overlay, finding.resource) == (DEV, "clusters/dev", "apps-wave-2")
    assert finding.message == ("clusters/dev: its build has no apps-wave-2 Kustomization although clusters/base "
                               "has one, so wave 2 is never applied in this cluster")


def test_a_wave_with_sops_files_that_nothing_builds_is_unchecked(tmp_path: Path) -> None:
    """No overlay and no Flux Kustomization builds the base: nothing shows Flux decrypts the waves
    that hold SOPS files (wave 1 holds none, so it is no finding)."""
    root = make(tmp_path, {})
    found = findings(root, sops={2, 0})
    assert [(f.code, f.severity, f.wave, f.path, f.resource) for f in found] == [
        ("decryption-unchecked", "error", 0, "clusters/base/apps-wave-0.yaml", "apps-wave-0"),
        ("decryption-unchecked", "error", 2, "clusters/base/apps-wave-2.yaml", "apps-wave-2")]
    assert found[1].message.startswith(
        "wave 2 holds SOPS-encrypted files, but no overlay and no Flux Kustomization wave-bot found builds "
        "apps-wave-2, so nothing shows Flux decrypts them")
    assert found[1].fix == ("list the directories Flux builds clusters/base through under `overlays:` in "
                            ".wave-bot.yaml (the base itself when Flux applies it directly), or add an overlay of "
                            "clusters/base")
    assert findings(root, sops=set()) == []
    # Following the fix (Flux applies the base itself): each wave's decryption is checked, and missing.
    checked = findings(root, sops={2, 0}, overlays=("clusters/base",))
    assert [(f.code, f.wave, f.overlay) for f in checked] == [("missing-decryption", n, "clusters/base") for n in ALL]


def test_decryption_unchecked_is_not_said_where_another_finding_covers_the_wave(tmp_path: Path) -> None:
    # The overlay deletes wave 2: wave-not-in-overlay says so; one finding per wave, not two.
    deletes = make(tmp_path / "a", deleting_wave_2())
    assert [f.code for f in findings(deletes)] == ["wave-not-in-overlay"]
    # An overlay wave-bot cannot evaluate may build every wave: overlay-not-checked names it instead.
    remote = make(tmp_path / "b", {DEV: HEAD + "  - https://github.com/example/fleet//monitoring?ref=v1\n"})
    assert [f.code for f in findings(remote)] == ["overlay-not-checked"]
    # ... and the overlays after it are still checked
    write_files(remote, {"clusters/prod/kustomization.yaml": inline_smp((0, 1))[DEV]})
    assert [(f.code, f.overlay, f.wave) for f in findings(remote)] == [
        ("overlay-not-checked", "clusters/dev", None), ("missing-decryption", "clusters/prod", 2)]


def test_a_regex_target_that_misses_a_side_branch_is_named(tmp_path: Path) -> None:
    """kustomize matches a target name against the whole name: the finding names the patch whose
    regex covers the waves but not the side branch, after the cluster-vars patch that is no regex."""
    side = Side(1)
    # Before the regex patch: one without target, one by plain name, and a regex that sets no
    # decryption; none of them is the patch to name.
    before = ("  - patch: |\n" + indent(smp(0), 6) + json_inline((0,))[DEV].split(KNOBS)[1]
              + "  - target: {kind: Kustomization, name: 'apps-wave-[0-9]'}\n    patch: |\n"
              + "      - {op: add, path: /spec/retryInterval, value: 7m}\n")
    dev = regex_target()[DEV].replace(KNOBS, KNOBS + before)
    root = make(tmp_path, {DEV: dev, CFG.wave_cr_path(side): render.wave_cr(side, render.DEFAULT_TEMPLATE, CFG),
                           "clusters/base/kustomization.yaml": base_kustomization(ALL) + "  - apps-wave-1-side.yaml\n"})
    (finding,) = findings(root, waves=(0, 1, side, 2))
    assert (finding.code, finding.wave, finding.resource) == ("missing-decryption", side, "apps-wave-1-side")
    assert ("apps-wave-1-side gets no SOPS decryption (no spec.decryption; clusters/dev/kustomization.yaml "
            "patches[4] (line 42) gives decryption to the target name 'apps-wave-[0-9]+', which kustomize matches "
            "against the whole name: it covers apps-wave-0, apps-wave-1, apps-wave-2 but not apps-wave-1-side; "
            "wave-bot expects") in finding.message


def test_every_overlays_findings_are_kept(tmp_path: Path) -> None:
    root = make(tmp_path, {**inline_smp((0, 1)), "clusters/prod/kustomization.yaml": inline_smp()[DEV]})
    assert [(f.code, f.overlay, f.wave) for f in findings(root)] == [("missing-decryption", "clusters/dev", 2)]


def test_a_wave_whose_flux_kustomization_is_not_generated_yet_breaks_no_build(tmp_path: Path) -> None:
    """Wave 3 has no apps-wave-3.yaml before `apply` writes it: judging the overlays as if the base
    listed it would make every build fail on the missing file."""
    root = make(tmp_path, inline_smp(), waves=ALL)
    assert findings(root, waves=(0, 1, 2, 3), sops={3}) == []


@pytest.mark.parametrize("cluster", ["clusters/dev", "clusters/eu/west/zone-a/rack-1/env/team/prod"])
def test_the_clusters_own_controller_key_decrypts_waves_that_name_no_secret(cluster: str, tmp_path: Path) -> None:
    """The --sops-age-secret its flux-system/ gives kustomize-controller makes a secretRef optional.
    The cluster's kustomizations are read from its own directory down, not from the repository root,
    whose depth limit stops above a deep cluster's flux-system/."""
    base = "/".join([".."] * cluster.count("/")) + "/base"
    items = "".join("  - patch: |\n" + indent(smp(n).replace("    secretRef:\n      name: sops-age\n", ""), 6)
                    for n in ALL)
    root = make(tmp_path, {f"{cluster}/kustomization.yaml": f"resources: [{base}, flux-system]\npatches:\n" + items,
                           f"{cluster}/flux-system/kustomization.yaml": CONTROLLER_KEY,
                           f"{cluster}/flux-system/gotk-components.yaml": "# flux install\n"})
    assert findings(root, overlays=(cluster,)) == []
    write_files(root, {f"{cluster}/flux-system/kustomization.yaml": "resources: [gotk-components.yaml]\n"})
    assert [(f.code, f.wave) for f in findings(root, overlays=(cluster,))] == [("missing-decryption", n) for n in ALL]


# ---- discovery -----------------------------------------------------------------------------------------


def test_discovery_finds_overlays_and_overlays_of_overlays(tmp_path: Path) -> None:
    root = make(tmp_path, {
        **on_overlay(), **component(),
        "clusters/eu/prod/kustomization.yaml": "resources: [../../base]\n",
        "clusters/dev/flux-system/kustomization.yaml": "resources: [gotk-components.yaml]\n",
        "clusters/unrelated/kustomization.yaml": "resources: ['https://example.com/x.yaml', ../../../elsewhere]\n",
        "clusters/.hidden/kustomization.yaml": "resources: [../base]\n",
        # outside the clusters directory: a kustomization that builds the base is no cluster Flux bootstraps
        "tools/preview/kustomization.yaml": "resources: [../../clusters/base]\n",
        # as deep as it is: an overlay missed is a cluster whose decryption nobody checks
        "clusters/a/b/c/d/e/f/g/kustomization.yaml": "resources: [../../../../../../../base]\n",
    })
    assert discover_overlays(FsTree(str(root)), CFG) == [
        "clusters/a/b/c/d/e/f/g", "clusters/dev", "clusters/eu/prod", "clusters/staging"]


def test_configured_overlays_are_used_as_given(tmp_path: Path) -> None:
    root = make(tmp_path, {**inline_smp(), "clusters/prod/kustomization.yaml": "resources: [../base]\n"})
    assert discover_overlays(FsTree(str(root)), Config(overlays=("clusters/prod",))) == ["clusters/prod"]
    with pytest.raises(WaveBotError, match="overlays lists 'clusters/stage', which has no kustomization.yaml") as e:
        discover_overlays(FsTree(str(root)), Config(overlays=("clusters/stage",)))
    assert e.value.path == ".wave-bot.yaml"
    assert e.value.hint == "list the directories Flux bootstraps (clusters/<env>)"


def test_discovery_reports_a_broken_kustomization(tmp_path: Path) -> None:
    root = make(tmp_path, {DEV: "resources: [../base\n"})
    with pytest.raises(WaveBotError, match="invalid YAML") as caught:
        discover_overlays(FsTree(str(root)), CFG)
    assert caught.value.path == DEV


# ---- the base ------------------------------------------------------------------------------------------


def test_missing_base_entry(tmp_path: Path) -> None:
    root = make(tmp_path, {}, waves=(0, 1, 2, 3), listed=(0, 1, 2))
    (finding,) = base_findings(FsTree(str(root)), CFG, (0, 1, 2, 3))
    assert (finding.code, finding.severity, finding.wave, finding.path, finding.resource) == (
        "missing-base-entry", "error", 3, "clusters/base/kustomization.yaml", "apps-wave-3")
    assert finding.message == (
        "clusters/base/kustomization.yaml does not list apps-wave-3.yaml: Flux never creates the apps-wave-3 "
        "Kustomization, so nothing in apps/wave-3/ is ever applied; `wave-bot apply --fix-overlays` makes this edit")
    assert finding.fix == ("# clusters/base/kustomization.yaml: add under resources:\n"
                           "- apps-wave-3.yaml # Flux Kustomization -> ./apps/wave-3 (dependsOn apps-wave-2)\n")


def test_a_stale_base_entry_under_bases_names_that_field(tmp_path: Path) -> None:
    # kustomize builds `bases:` like `resources:` (after them); an old base may still list a wave there
    root = make(tmp_path, {}, waves=(0, 1, 2))
    edit = root / "clusters/base/kustomization.yaml"
    edit.write_text(edit.read_text() + "bases:\n  - apps-wave-3.yaml\n")
    (finding,) = base_findings(FsTree(str(root)), CFG, (0, 1, 2))
    assert (finding.code, finding.wave, finding.line) == ("stale-base-entry", 3, 13)
    assert finding.fix == "delete the line `- apps-wave-3.yaml` from bases: in clusters/base/kustomization.yaml"


def test_stale_base_entry(tmp_path: Path) -> None:
    root = make(tmp_path, {}, waves=(0, 1), listed=(0, 1, 2))
    (finding,) = base_findings(FsTree(str(root)), CFG, (0, 1))
    assert (finding.code, finding.severity, finding.wave, finding.line, finding.resource) == (
        "stale-base-entry", "error", 2, 10, "apps-wave-2")
    assert finding.message == (
        "clusters/base/kustomization.yaml lists apps-wave-2.yaml, which does not exist: kustomize fails on it, so "
        "no overlay built on clusters/base applies at all")
    assert finding.fix == "delete the line `- apps-wave-2.yaml` from resources: in clusters/base/kustomization.yaml"


def test_a_wave_listed_through_a_sub_kustomization_is_not_missing(tmp_path: Path) -> None:
    files = base_files()
    root = make(tmp_path, {
        "clusters/base/kustomization.yaml": "resources: [flux-system.yaml, cluster-vars.yaml, waves]\n",
        "clusters/base/waves/kustomization.yaml": "resources: [../apps-wave-0.yaml, ../apps-wave-1.yaml, "
                                                  "../apps-wave-2.yaml]\n",
        **{p: c for p, c in files.items() if "apps-wave" in p}})
    assert base_findings(FsTree(str(root)), CFG, ALL) == []


# ---- the new deepest wave --------------------------------------------------------------------------------


def paste(root: Path, fix: str) -> None:
    """Paste each `---` section of a fix where its header says, as a person would."""
    for section in fix.split("---\n"):
        header, body = section.split("\n", 1)
        assert yamlio.load(body.encode(), "snippet"), "every section is valid YAML"
        if header.startswith("# create "):
            write_files(root, {header[len("# create "):-1]: body})
            continue
        path, key = header[2:].split(": add under ")
        key = key.rstrip(":")
        lines = (root / path).read_text().splitlines(keepends=True)
        at = next(i for i, line in enumerate(lines) if line.startswith(f"{key}:")) + 1
        lines[at:at] = [indent(body, 2)]
        (root / path).write_text("".join(lines))


def test_new_deepest_wave_snippet_pasted_in_makes_the_findings_go_away(tmp_path: Path, kubectl: Kubectl) -> None:
    root = make(tmp_path, {**path_smp(), "clusters/prod/kustomization.yaml": (
        "resources:\n  - ../base\npatches:\n  - target: {kind: Kustomization, name: 'apps-wave-[0-9]+'}\n"
        "    patch: |\n" + indent(smp(0), 6))}, waves=(0, 1, 2, 3), listed=ALL)
    tree, waves = FsTree(str(root)), (0, 1, 2, 3)
    (finding,) = new_deepest_wave_findings(tree, CFG, waves, 2)
    assert (finding.code, finding.severity, finding.wave, finding.resource) == (
        "new-deepest-wave", "warning", 3, "apps-wave-3")
    assert finding.message == (
        "wave 3 is a new deepest wave: apps-wave-3 must be listed in the base and get SOPS decryption in every "
        "overlay; 3 edit(s) are still needed in: clusters/base/kustomization.yaml, clusters/dev/kustomization.yaml, "
        "new file clusters/dev/patches/apps-wave-3-sops.yaml; run `wave-bot apply --fix-overlays`, or paste each "
        "`---` section of the fix into the file it names")
    assert "clusters/prod" not in str(finding.fix)  # its regex patch already covers wave 3
    paste(root, str(finding.fix))
    tree = FsTree(str(root))
    assert new_deepest_wave_findings(tree, CFG, waves, 2) == []
    assert base_findings(tree, CFG, waves) == [] and findings(root, waves) == []
    for overlay in ("clusters/dev", "clusters/prod"):
        assert kubectl_decrypted(kubectl, root, overlay) == {0, 1, 2, 3}


def test_no_new_deepest_wave_finding_without_a_deeper_wave_or_work_left(tmp_path: Path) -> None:
    root = make(tmp_path, regex_target(), waves=(0, 1, 2, 3), listed=(0, 1, 2, 3))
    tree = FsTree(str(root))
    assert new_deepest_wave_findings(tree, CFG, (0, 1, 2, 3), 3) == []
    assert new_deepest_wave_findings(tree, CFG, (0, 1, 2, 3), 2) == []  # base listed, regex covers it
    assert new_deepest_wave_findings(tree, CFG, (), None) == []


def test_new_deepest_wave_looks_at_the_layout_apply_will_write(tmp_path: Path) -> None:
    """The wave's Flux Kustomization file may not exist yet: apply generates it."""
    root = make(tmp_path, inline_smp(), waves=ALL)
    (finding,) = new_deepest_wave_findings(FsTree(str(root)), CFG, (0, 1, 2, 3), 2)
    assert "- apps-wave-3.yaml # Flux Kustomization -> ./apps/wave-3 (dependsOn apps-wave-2)" in str(finding.fix)
    assert "name: apps-wave-3" in str(finding.fix)


def test_first_waves_ever(tmp_path: Path) -> None:
    root = make(tmp_path, {DEV: HEAD + KNOBS}, waves=(0, 1), listed=())
    (finding,) = new_deepest_wave_findings(FsTree(str(root)), CFG, (0, 1), None)
    assert "- apps-wave-0.yaml\n" in str(finding.fix) and "apps-wave-[0-9]+" in str(finding.fix)


# ---- --fix-overlays ------------------------------------------------------------------------------------


def write_changes(root: Path, changes: Iterable[Change]) -> None:
    for change in changes:
        assert change.action in ("create", "update") and change.content is not None
        write_files(root, {change.path: change.content})


def only_insertions(before: str, after: str) -> list[str]:
    """The lines `after` adds to `before`; fails when anything was changed or removed."""
    matcher = difflib.SequenceMatcher(a=before.splitlines(), b=after.splitlines(), autojunk=False)
    added = []
    for op, a1, a2, b1, b2 in matcher.get_opcodes():
        assert op in ("equal", "insert"), f"{op}: {before.splitlines()[a1:a2]} -> {after.splitlines()[b1:b2]}"
        added += after.splitlines()[b1:b2]
    return added


# style -> (overlay files for waves 0..2, overlay, file that must get the new patch, text it must add)
STYLES: dict[str, tuple[dict[str, str], str, str, str]] = {
    "inline smp per wave": (inline_smp(), "clusters/dev", DEV, "        name: apps-wave-3"),
    "path files": (path_smp(), "clusters/dev", DEV, "  - path: patches/apps-wave-3-sops.yaml"),
    "json6902 inline": (json_inline(), "clusters/dev", DEV, "      name: apps-wave-3"),
    "json6902 files": (json_files(), "clusters/dev", DEV, "  - path: decryption/apps-wave-3.yaml # JSON6902"),
    "legacy psm paths": (legacy_psm(paths=ALL, inline=()), "clusters/dev", DEV, "  - sops/apps-wave-3.yaml"),
    "legacy psm inline": (legacy_psm(paths=(), inline=ALL), "clusters/dev", DEV, "      name: apps-wave-3"),
    "legacy json6902 inline": (legacy_json(), "clusters/dev", DEV, "      name: apps-wave-3"),
    "legacy json6902 files": (legacy_json(files_for=ALL), "clusters/dev", DEV, "    path: json/apps-wave-3.yaml"),
    "no decryption at all": ({DEV: HEAD + KNOBS}, "clusters/dev", DEV, "      name: apps-wave-[0-9]+"),
    "regex covering some waves": (regex_target("apps-wave-[0-2]"), "clusters/dev", DEV, "      name: apps-wave-3"),
    "a component": (component(), "clusters/dev", COMPONENT, "        name: apps-wave-3"),
    "overlay on an overlay": (on_overlay(), "clusters/staging", DEV, "        name: apps-wave-3"),
    "no patches list yet": ({DEV: HEAD}, "clusters/dev", DEV, "patches:"),
}


@pytest.mark.parametrize("style", list(STYLES))
def test_fix_overlays_in_each_style(style: str, tmp_path: Path, kubectl: Kubectl) -> None:
    files, overlay, edited, added_line = STYLES[style]
    waves = (0, 1, 2, 3)
    root = make(tmp_path, files, waves=waves)
    before = {p: (root / p).read_text() for p in files}
    assert 3 in {f.wave for f in findings(root, waves) if f.code == "missing-decryption"}

    changes = fix_overlays(FsTree(str(root)), CFG, waves)
    write_changes(root, changes)

    for directory in {overlay, "clusters/dev"}:  # (1) it builds, every wave decrypted
        assert kubectl_decrypted(kubectl, root, directory) == set(waves), directory
    tree = FsTree(str(root))  # (2) the findings are gone
    assert findings(root, waves) == [] and base_findings(tree, CFG, waves) == []
    for path, text in before.items():  # (3) every original line, every comment, is still there
        added = only_insertions(text, (root / path).read_text())
        assert all(line in (root / path).read_text().splitlines() for line in text.splitlines() if "#" in line)
        if path == edited:
            assert added_line in added, added
    assert fix_overlays(FsTree(str(root)), CFG, waves) == []  # nothing left to do


@pytest.mark.parametrize("style", ["strategic-merge", "json6902"])
def test_fix_overlays_with_a_controller_level_key_also_drops_a_secret_a_wave_names(
        style: str, tmp_path: Path, kubectl: Kubectl) -> None:
    # Waves 0 and 1 are patched in the overlay's style without a secretRef (the controller's key);
    # wave 2, unpatched, names a Secret in its own spec. What --fix-overlays writes for it must give
    # it the decryption the others have, and a Flux Kustomization the API server accepts.
    own = {"strategic-merge": lambda n: "  - patch: |\n" + indent(smp(n).replace(
        "    secretRef:\n      name: sops-age\n", ""), 6),
           "json6902": lambda n: f"  - target:\n      group: kustomize.toolkit.fluxcd.io\n      kind: Kustomization\n"
                                 f"      name: apps-wave-{n}\n    patch: |\n" + indent(
               "- op: add\n  path: /spec/decryption\n  value:\n    provider: sops\n", 6)}[style]
    root = make(tmp_path, {DEV: HEAD + KNOBS + own(0) + own(1),
                           CFG.wave_cr_path(2): render.wave_cr(2, DECRYPTING_TEMPLATE, CFG)})
    config = Config(decryption_secret=None)
    assert [f.wave for f in findings(root, decryption_secret=None)] == [2]
    write_changes(root, fix_overlays(FsTree(str(root)), config, ALL))
    assert findings(root, decryption_secret=None) == []
    built = kubectl(root / "clusters/dev")
    assert built.returncode == 0, built.stderr
    waves = [fluxcrd.validate(d.value) for d in yamlio.load(built.stdout.encode(), "kubectl output")
             if d.value and d.value["kind"] == "Kustomization" and d.value["metadata"]["name"].startswith("apps-wave-")]
    assert [w["spec"]["decryption"] for w in waves] == [{"provider": "sops"}] * 3


@pytest.mark.parametrize("secret", [SECRET, None])
def test_the_regex_item_is_a_flux_kustomization_patch_that_says_whose_key_it_uses(secret: str | None) -> None:
    text = regex_item(Config(decryption_secret=secret))
    (item,) = yamlio.load(text.encode(), "item")[0].value
    (patch,) = [d.value for d in yamlio.load(item["patch"].encode(), "patch")]
    # a document of the kind it patches, with a name the API server accepts (the target picks the waves)
    assert (patch["apiVersion"], patch["kind"], set(patch)) == (
        "kustomize.toolkit.fluxcd.io/v1", "Kustomization", {"apiVersion", "kind", "metadata", "spec"})
    assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", patch["metadata"]["name"])
    assert patch["spec"] == {"decryption": {"provider": "sops", "secretRef": {"name": secret} if secret else None}}
    key = (f"encrypted. The key is the out-of-band {secret} Secret.\n" if secret else
           "encrypted. The key is kustomize-controller's own (--sops-age-secret):\n"
           "# the empty `secretRef:` (null) drops a Secret a wave names.\n")
    assert key in text


def test_fix_overlays_follows_the_overlays_own_comment_and_file_style(tmp_path: Path) -> None:
    root = make(tmp_path, path_smp(), waves=(0, 1, 2, 3), listed=ALL)
    changes = {c.path: c for c in fix_overlays(FsTree(str(root)), CFG, (0, 1, 2, 3))}
    assert sorted((c.action, p) for p, c in changes.items()) == [
        ("create", "clusters/dev/patches/apps-wave-3-sops.yaml"),
        ("update", "clusters/base/kustomization.yaml"), ("update", DEV)]
    assert changes["clusters/dev/patches/apps-wave-3-sops.yaml"].content == smp(
        3, comment="# SOPS decryption for apps-wave-3 (age key: the out-of-band sops-age Secret).").encode()
    base = str(changes["clusters/base/kustomization.yaml"].content, "utf-8")
    assert ("  - apps-wave-2.yaml # Flux Kustomization -> ./apps/wave-2 (dependsOn apps-wave-1)\n"
            "  - apps-wave-3.yaml # Flux Kustomization -> ./apps/wave-3 (dependsOn apps-wave-2)\n"
            "  - cluster-vars.yaml") in base


def test_fix_overlays_adds_one_regex_patch_when_there_is_none(tmp_path: Path) -> None:
    root = make(tmp_path, {DEV: HEAD + KNOBS, "clusters/prod/kustomization.yaml": "resources: [../base]\n"})
    changes = fix_overlays(FsTree(str(root)), CFG, ALL)
    assert [c.path for c in changes] == [DEV, "clusters/prod/kustomization.yaml"]
    for change in changes:
        text = str(change.content, "utf-8")
        assert text.count("name: apps-wave-[0-9]+") == 1 and text.count("patch: |") == 1 + (change.path == DEV)
        assert "# SOPS decryption for every app wave (added by wave-bot)" in text


def test_fix_overlays_fixes_a_shared_parent_once(tmp_path: Path) -> None:
    root = make(tmp_path, on_overlay(), waves=(0, 1, 2, 3), listed=ALL)
    changes = fix_overlays(FsTree(str(root)), CFG, (0, 1, 2, 3))
    assert [c.path for c in changes] == ["clusters/base/kustomization.yaml", DEV]


def test_fix_overlays_overrides_a_wrong_secret_after_it(tmp_path: Path, kubectl: Kubectl) -> None:
    root = make(tmp_path, inline_smp(secrets={1: "sops-key"}))
    write_changes(root, fix_overlays(FsTree(str(root)), CFG, ALL))
    assert kubectl_decrypted(kubectl, root, "clusters/dev") == {0, 1, 2}


def test_fix_overlays_leaves_alone_a_wave_without_its_flux_kustomization_file(tmp_path: Path) -> None:
    root = make(tmp_path, inline_smp(), waves=ALL)
    assert fix_overlays(FsTree(str(root)), CFG, (0, 1, 2, 3)) == []


def test_fix_overlays_works_on_a_planned_tree(tmp_path: Path, kubectl: Kubectl) -> None:
    """As `apply --fix-overlays` uses it: the plan's new Flux Kustomization is only planned."""
    root = make(tmp_path, path_smp(), waves=ALL)
    tpl, _ = render.resolve_template(FsTree(str(root)), CFG)
    planned = [Change("create", CFG.wave_cr_path(3), content=render.wave_cr(3, tpl, CFG))]
    changes = fix_overlays(PlannedTree(FsTree(str(root)), planned), CFG, (0, 1, 2, 3))
    write_changes(root, [*planned, *changes])
    assert kubectl_decrypted(kubectl, root, "clusters/dev") == {0, 1, 2, 3}


def test_fix_overlays_keeps_the_homelab_example_byte_for_byte(tmp_path: Path, kubectl: Kubectl) -> None:
    from conftest import EXAMPLE

    root = tmp_path / "homelab"
    write_files(root, {str(p.relative_to(EXAMPLE)): p.read_bytes() for p in EXAMPLE.rglob("*") if p.is_file()})
    tpl, _ = render.resolve_template(FsTree(str(root)), CFG)
    write_files(root, {CFG.wave_cr_path(3): render.wave_cr(3, tpl, CFG)})
    before = {p: (root / p).read_text() for p in ("clusters/base/kustomization.yaml", DEV,
                                                 "clusters/prod/kustomization.yaml")}
    write_changes(root, fix_overlays(FsTree(str(root)), CFG, (0, 1, 2, 3)))
    for path, text in before.items():
        assert len(only_insertions(text, (root / path).read_text())) >= 1
    for overlay in ("clusters/dev", "clusters/prod"):
        assert kubectl_decrypted(kubectl, root, overlay) == {0, 1, 2, 3}


def test_a_flow_style_patches_list_still_gets_a_snippet(tmp_path: Path) -> None:
    root = make(tmp_path, {DEV: HEAD + "patches: [{path: cv.yaml}]\n", "clusters/dev/cv.yaml": CLUSTER_VARS})
    found = findings(root)
    assert [f.wave for f in found] == [0, 1, 2]
    assert str(found[0].fix).startswith("# clusters/dev/kustomization.yaml: add under patches:\n# SOPS decryption")
    assert fix_overlays(FsTree(str(root)), CFG, ALL) == []  # nothing it could verify


def test_symlinked_overlay_is_not_followed(tmp_path: Path) -> None:
    root = make(tmp_path, inline_smp())
    os.symlink(root / "clusters/dev/kustomization.yaml", root / "clusters/base/../sym.yaml")
    write_files(root, {"clusters/other/kustomization.yaml": "resources: [../base, ../sym.yaml]\n"})
    codes = {f.code: f for f in findings(root, overlays=("clusters/other",))}
    assert codes["overlay-not-checked"].message.endswith("is a symbolic link; wave-bot never follows links")


# ---- the fixer's choices (each test kills a mutant the suite once let live) ----------------------------

GONE = ("---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: gone\n  namespace: flux-system\n"
        "data:\n  KEY: value\n")


def test_fix_overlays_never_keeps_an_edit_that_adds_a_build_problem(tmp_path: Path) -> None:
    """Cloning wave 2's patch file would copy its stale second document too: one more patch kustomize
    fails on. The fixer must take the next candidate, a clean file in the same style."""
    files = path_smp()
    files["clusters/dev/patches/apps-wave-2-sops.yaml"] += GONE
    root = make(tmp_path, files, waves=(0, 1, 2, 3))
    before = build(FsTree(str(root)), "clusters/dev")
    assert len(before.problems) == 1  # the stale ConfigMap document
    write_changes(root, fix_overlays(FsTree(str(root)), CFG, (0, 1, 2, 3)))
    after = build(FsTree(str(root)), "clusters/dev")
    assert len(after.problems) == 1
    created = (root / "clusters/dev/patches/apps-wave-3-sops.yaml").read_text()
    assert created.startswith("# SOPS decryption for apps-wave-3 (added by wave-bot).\n")  # fresh, not a clone
    assert "name: apps-wave-3" in created and "gone" not in created
    assert not [f for f in findings(root, (0, 1, 2, 3)) if f.code == "missing-decryption"]


def test_fix_overlays_follows_the_overlays_style_not_the_bases(tmp_path: Path, kubectl: Kubectl) -> None:
    """Both the base and the overlay's component give decryption, at the same depth; the new patch
    goes where the overlay keeps its own, never into the base every cluster shares."""
    base_json = "patches:\n" + "".join(
        f"  - target: {{kind: Kustomization, name: apps-wave-{n}}}\n    patch: |\n" + indent(json_ops(), 6)
        for n in (0, 1))
    files = {**component((0, 1, 2)),
             "clusters/base/kustomization.yaml": base_kustomization((0, 1, 2, 3)) + base_json}
    root = make(tmp_path, files, waves=(0, 1, 2, 3))
    changes = {c.path: c for c in fix_overlays(FsTree(str(root)), CFG, (0, 1, 2, 3))}
    assert list(changes) == [COMPONENT]
    write_changes(root, changes.values())
    assert kubectl_decrypted(kubectl, root, "clusters/dev") == {0, 1, 2, 3}


def test_fix_overlays_follows_the_overlays_own_patches_before_its_components(tmp_path: Path) -> None:
    """The overlay gives waves 0 and 1 decryption itself and a component gives wave 2: the new patch
    goes where the overlay keeps its own, the nearest kustomization, not into the shared component."""
    files = {DEV: inline_smp((0, 1))[DEV] + "components:\n  - ../components/sops\n",
             COMPONENT: component((2,))[COMPONENT]}
    root = make(tmp_path, files, waves=(0, 1, 2, 3))
    changes = fix_overlays(FsTree(str(root)), CFG, (0, 1, 2, 3))
    assert [c.path for c in changes] == [DEV]
    assert "        name: apps-wave-3" in str(changes[0].content, "utf-8")


def test_fix_overlays_never_copies_a_patch_that_removes_decryption(tmp_path: Path, kubectl: Kubectl) -> None:
    """The last patch touching decryption removes it (from the `tools` Kustomization, in JSON6902);
    the template for wave 3 is the last one that gives it: wave 2's patch file."""
    files = path_smp()
    files[DEV] += ("  - target: {kind: Kustomization, name: tools}\n    patch: |\n"
                   "      - {op: remove, path: /spec/decryption}\n")
    files["clusters/base/kustomization.yaml"] = base_kustomization((0, 1, 2, 3)) + "  - tools.yaml\n"
    files["clusters/base/tools.yaml"] = render.wave_cr(0, DECRYPTING_TEMPLATE, CFG).decode().replace(
        "apps-wave-0", "tools")
    root = make(tmp_path, files, waves=(0, 1, 2, 3))
    changes = {c.path: c for c in fix_overlays(FsTree(str(root)), CFG, (0, 1, 2, 3))}
    assert sorted(changes) == [DEV, "clusters/dev/patches/apps-wave-3-sops.yaml"]
    write_changes(root, changes.values())
    assert kubectl_decrypted(kubectl, root, "clusters/dev") == {0, 1, 2, 3}


def test_discovery_follows_components_files_of_the_base_and_skips_remote_references(tmp_path: Path) -> None:
    root = make(tmp_path, {
        # a Component that lists the base (so it builds the waves itself), and an overlay using it
        "clusters/shared/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n"
                                              "resources: [../base]\n",
        DEV: "components: [../shared]\n",
        "clusters/one/kustomization.yaml": "resources: [../base/apps-wave-0.yaml]\n",  # a file of the base
        "clusters/remote/kustomization.yaml": "resources: [example.org/team/deploy]\n",  # a host: never fetched
    })
    assert discover_overlays(FsTree(str(root)), CFG) == ["clusters/dev", "clusters/one", "clusters/shared"]


CLUSTER_APPS = "clusters/dev/cluster-apps.yaml"


def test_a_flux_kustomization_of_the_base_is_checked_with_its_components(tmp_path: Path) -> None:
    # kustomize-controller resolves spec.components against spec.path (./clusters/base)
    root = make(tmp_path, {
        COMPONENT: component((0, 1))[COMPONENT],
        CLUSTER_APPS: "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\n"
                      "metadata: {name: cluster-apps, namespace: flux-system}\n"
                      "spec:\n  path: ./clusters/base\n  components: [../components/sops]\n",
        # a Flux Kustomization without spec builds nothing wave-bot checks
        "clusters/dev/unfinished.yaml": "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\n"
                                        "metadata: {name: unfinished, namespace: flux-system}\n",
    })
    [missing] = findings(root, sops=set())
    assert (missing.code, missing.wave, missing.overlay) == (
        "missing-decryption", 2,
        f"{CLUSTER_APPS} (Flux Kustomization flux-system/cluster-apps, path ./clusters/base)")
    # The suggested item is checked the way kustomize-controller builds it (the component resolved
    # against ./clusters/base), so it is offered, and pasted it clears the finding.
    paste_under_spec_patches(root, CLUSTER_APPS, str(missing.fix), open_key=True)
    assert findings(root, sops=set()) == []


def test_a_flux_level_path_wave_bot_cannot_evaluate_names_its_file_and_the_build_to_check(tmp_path: Path) -> None:
    root = make(tmp_path, {CLUSTER_APPS: cluster_apps("").replace("  patches:\n", "  namePrefix: dev-\n")})
    (finding,) = findings(root, sops={0})
    assert (finding.code, finding.severity, finding.path, finding.line) == (
        "overlay-not-checked", "error", CLUSTER_APPS, 1)
    assert finding.message.endswith(f"{CLUSTER_APPS}:1: its spec.namePrefix is not evaluated by wave-bot")
    assert "(wave 0 holds SOPS-encrypted files, so nothing shows they are decrypted)" in finding.message
    assert str(finding.fix).startswith(f"kubectl kustomize clusters/base with the spec.patches of {CLUSTER_APPS} added")


def test_the_flux_level_fix_follows_the_rule_of_its_cluster(tmp_path: Path) -> None:
    """decryption_secret: null, but clusters/dev gives its controller --sops-age-secret=cluster-key:
    the suggested item names that Secret, as the message's rule does, and pasted it passes."""
    root = make(tmp_path, {CLUSTER_APPS: cluster_apps(""),
                           "clusters/dev/flux-system/kustomization.yaml": CONTROLLER_KEY,
                           "clusters/dev/flux-system/gotk-components.yaml": "# flux install\n"})
    found = findings(root, decryption_secret=None)
    assert [(f.code, f.wave) for f in found] == [("missing-decryption", n) for n in ALL]
    assert "per kustomize-controller --sops-age-secret=cluster-key in clusters/dev/flux-system" in found[0].message
    fix = str(found[0].fix)
    assert "The key is the out-of-band cluster-key Secret." in fix
    assert "secretRef:\n          name: cluster-key\n" in fix
    paste_under_spec_patches(root, CLUSTER_APPS, fix)
    assert findings(root, decryption_secret=None) == []


def paste_under_spec_patches(root: Path, unit: str, fix: str, open_key: bool = False) -> None:
    """Paste a Flux-level fix as a user does: its item, indented, under spec.patches: (`open_key`:
    that key is still to be written), the last key of the file."""
    header, item = fix.split("\n", 1)
    assert header.startswith(f"# {unit}: add under spec.patches: of ")
    with open(root / unit, "a") as handle:
        handle.write(("  patches:\n" if open_key else "") + indent(item, 4))


def test_the_flux_level_fix_drops_a_secret_a_wave_names_with_a_controller_level_key(tmp_path: Path) -> None:
    """With a controller-level key, wave 2's secretRef is the problem: the suggested item, under the
    Flux Kustomization's spec.patches, sets the provider and `secretRef: null`, so it fixes all three."""
    root = make(tmp_path, {CLUSTER_APPS: cluster_apps(""),
                           CFG.wave_cr_path(2): render.wave_cr(2, DECRYPTING_TEMPLATE, CFG)})
    before = findings(root, decryption_secret=None)
    assert [(f.code, f.wave) for f in before] == [("missing-decryption", n) for n in ALL]
    fix = before[0].fix
    assert fix is not None and [f.fix for f in before] == [fix, fix, fix]
    # --fix-overlays edits overlays, never a Flux Kustomization: no finding may say it makes this edit
    assert fix_overlays(FsTree(str(root)), Config(decryption_secret=None), ALL) == []
    assert not [f.message for f in before if "--fix-overlays" in f.message]
    paste_under_spec_patches(root, CLUSTER_APPS, fix)
    assert findings(root, decryption_secret=None) == []


def flux_k(name: str, spec: str) -> str:
    return (f"apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\n"
            f"metadata: {{name: {name}, namespace: flux-system}}\nspec:\n{spec}")


def test_the_evaluation_paths_of_the_flux_kustomizations(tmp_path: Path) -> None:
    # what each path's findings are labelled with, and the file and line they point at
    root = make(tmp_path, {
        **inline_smp(),
        COMPONENT: component((0, 1))[COMPONENT],
        # the overlay's own bootstrap Kustomization adds nothing: the overlay is that path already
        "clusters/dev/flux-system.yaml": flux_k("flux-system", "  path: ./clusters/dev\n"),
        "clusters/dev/renamed.yaml": flux_k("renamed", "  path: ./clusters/dev\n  namePrefix: dev-\n"),
        # an absolute spec.path is the same directory; an empty namePrefix renames nothing
        CLUSTER_APPS: "# cluster apps\n---\n" + flux_k(
            "cluster-apps", "  path: /clusters/base\n  namePrefix: ''\n  components: [../components/sops]\n"),
        # a Kustomization of another group is no Flux object, whatever it mentions
        "clusters/dev/other.yaml": flux_k("other", "  path: ./clusters/base\n  components: [../components/sops]\n")
        .replace("kustomize.toolkit.fluxcd.io/v1", "example.com/v1\n# like kustomize.toolkit.fluxcd.io"),
        # at any depth: one left unseen would leave what it patches unchecked without a word
        "deep/1/2/3/4/5/ks.yaml": flux_k("deep", "  path: ./clusters/base\n  components: [../components/sops]\n"),
        "deep/1/2/3/4/5/6/ks.yaml": flux_k("deeper", "  path: ./clusters/base\n  components: [../components/sops]\n"),
    })
    paths = [p for p in evaluation_paths(FsTree(str(root)), CFG) if p.file is not None]
    assert [(p.file, p.directory, p.line, p.unsupported) for p in paths] == [
        (CLUSTER_APPS, "clusters/base", 2, None),
        ("clusters/dev/renamed.yaml", "clusters/dev", 1, "its spec.namePrefix is not evaluated by wave-bot"),
        ("deep/1/2/3/4/5/6/ks.yaml", "clusters/base", 1, None),
        ("deep/1/2/3/4/5/ks.yaml", "clusters/base", 1, None),
    ]


def test_flux_kustomizations_are_not_looked_for_where_nothing_defines_one(tmp_path: Path) -> None:
    # A hidden directory (.archive/), the apps and catalog directories (a child's ks.yaml is the app
    # tier's object, not an entrypoint), a file that is not YAML (ks.yaml.bak) and a kustomization file
    # hold no Flux Kustomization that builds the base or an overlay.
    spec = "  path: ./clusters/base\n  components: [../components/sops]\n"
    root = make(tmp_path, {COMPONENT: component((0, 1))[COMPONENT], "clusters/dev/ks.yaml": flux_k("seen", spec),
                           **{f"{d}/ks.yaml": flux_k(d.replace("/", "-").strip("."), spec)
                              for d in (".archive", "apps/tools", "catalog/tools")},
                           "old/ks.yaml.bak": flux_k("bak", spec)})
    paths = [p.file for p in evaluation_paths(FsTree(str(root)), CFG) if p.file is not None]
    assert paths == ["clusters/dev/ks.yaml"]


def test_overlays_are_found_beside_a_base_at_the_top_level(tmp_path: Path) -> None:
    # base_dir: base puts the overlays beside it at the repository's top level
    config = Config(base_dir="base")
    root = make(tmp_path, {"base/kustomization.yaml": "resources: [apps-wave-0.yaml]\n",
                           "base/apps-wave-0.yaml": render.wave_cr(0, render.DEFAULT_TEMPLATE, config),
                           "dev/kustomization.yaml": "resources: [../base]\n",
                           "eu/prod/kustomization.yaml": "resources: [../../base]\n",
                           ".hidden/kustomization.yaml": "resources: [../base]\n"})
    assert discover_overlays(FsTree(str(root)), config) == ["dev", "eu/prod"]


# ---- the Flux-level fix, pasted as a user pastes it --------------------------------------------------

OWN_PATCHES = """    - target:
        kind: ConfigMap
        name: cluster-vars
      patch: |
        - op: replace
          path: /data/CLUSTER_ENV
          value: dev
    - target:
        kind: Kustomization
        name: apps-wave-0
      patch: |
        - op: add
          path: /spec/retryInterval
          value: 7m
"""


def flux_level_plan(repo: Path, capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    capsys.readouterr()
    assert main(["plan", str(repo), "--format", "json"]) == 0
    return list(json.loads(capsys.readouterr().out)["findings"])


@pytest.mark.parametrize("own", [OWN_PATCHES, ""], ids=["own patches", "patches: null"])
def test_pasting_the_flux_level_fix_decrypts_every_wave_and_keeps_the_paths_own_patches(
    own: str, example_repo: Path, capsys: pytest.CaptureFixture[str], kubectl: Kubectl, tmp_path: Path
) -> None:
    # clusters/dev in the cluster-template layout: a Flux Kustomization builds the base with its own
    # spec.patches (cluster-vars, a wave's retryInterval), or none, and none of them decrypts.
    unit = "clusters/dev/cluster-apps.yaml"
    write_files(example_repo, {"clusters/dev/kustomization.yaml": "resources:\n  - cluster-apps.yaml\n",
                               unit: cluster_apps(own)})
    before = flux_level_plan(example_repo, capsys)
    missing = [f for f in before if f["code"] == "missing-decryption" and f["path"] == unit]
    assert sorted(f["wave"] for f in missing) == [0, 1, 2]
    (fix,) = {f["fix"] for f in missing}
    header, item = fix.split("\n", 1)
    assert header.startswith(f"# {unit}: add under spec.patches: of ")
    with open(example_repo / unit, "a") as handle:  # spec.patches is its last key: the item goes below
        handle.write("".join(f"    {line}" if line.strip() else line for line in item.splitlines(keepends=True)))
    after = flux_level_plan(example_repo, capsys)
    assert [f for f in after if f["code"] == "missing-decryption"] == []
    assert {f["code"] for f in after} <= {f["code"] for f in before} - {"missing-decryption"}
    # What kustomize-controller builds: the base with the Flux Kustomization's spec.patches appended.
    built = tmp_path / "built"
    shutil.copytree(example_repo / "clusters/base", built)
    kust = yamlio.load_one((built / "kustomization.yaml").read_bytes(), "base").value  # type: ignore[union-attr]
    spec = yamlio.load_one((example_repo / unit).read_bytes(), unit).value["spec"]  # type: ignore[union-attr]
    (built / "kustomization.yaml").write_bytes(yamlio.dump({**kust, "patches": [*kust.get("patches", []),
                                                                                *spec["patches"]]}))
    real = kubectl(built)
    assert real.returncode == 0, real.stderr
    objects = {(d.value["kind"], d.value["metadata"]["name"]): d.value
               for d in yamlio.load(real.stdout.encode(), "kubectl")}
    for n in ALL:
        assert objects[("Kustomization", f"apps-wave-{n}")]["spec"]["decryption"] == {
            "provider": "sops", "secretRef": {"name": SECRET}}
    if own:
        assert objects[("ConfigMap", "cluster-vars")]["data"]["CLUSTER_ENV"] == "dev"
        assert objects[("Kustomization", "apps-wave-0")]["spec"]["retryInterval"] == "7m"
