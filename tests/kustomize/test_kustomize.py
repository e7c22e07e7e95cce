"""bot.kustomize.build: the static evaluator agrees with real `kubectl kustomize` on what it claims to know."""
from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bot.errors import WaveBotError
from bot.kustomize.build import PatchFailed, apply_json_patch, build, merge_patch
from bot.kustomize.files import find_kustomization
from bot.kustomize.select import ResId, Selector, label_selector_matches
from bot.kustomize.spec import BuildError, Unsupported
from bot.repo.git import GitTree
from bot.repo.worktree import FsTree
from bot.yamlio import documents as yamlio

from conftest import Kubectl, write_files

FLUX = "kustomize.toolkit.fluxcd.io/v1"


def wave(n: int, labels: str = "tier: apps") -> str:
    return f"""apiVersion: {FLUX}
kind: Kustomization
metadata:
  name: apps-wave-{n}
  namespace: flux-system
  labels: {{{labels}}}
spec:
  interval: 10m
  path: ./apps/wave-{n}
  prune: true
  sourceRef:
    kind: GitRepository
    name: flux-system
"""


BASE = {
    "clusters/base/kustomization.yaml": (
        "resources:\n  - apps-wave-0.yaml\n  - apps-wave-1.yaml\n  - cluster-vars.yaml\n"),
    "clusters/base/apps-wave-0.yaml": wave(0),
    "clusters/base/apps-wave-1.yaml": wave(1),
    "clusters/base/cluster-vars.yaml": (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cluster-vars\n  namespace: flux-system\n"
        "data:\n  CLUSTER_ENV: base\n"
    ),
}


def smp(name: str, body: str, namespace: str = "flux-system", api: str = FLUX) -> str:
    ns = f", namespace: {namespace}" if namespace else ""
    return f"apiVersion: {api}\nkind: Kustomization\nmetadata: {{name: {name}{ns}}}\n{body}\n"


def indent(text: str, by: int) -> str:
    return "".join(" " * by + line if line.strip() else line for line in text.splitlines(keepends=True))


def overlay(body: str, resources: str = "[../base]") -> str:
    return f"resources: {resources}\n{body}"


def inline(patch: str, target: str | None = None) -> str:
    head = f"  - target: {target}\n    patch: |\n" if target else "  - patch: |\n"
    return head + indent(patch if patch.endswith("\n") else patch + "\n", 6)


def objects(text: str) -> dict[tuple[str, str, str, str], Any]:
    docs = [d.value for d in yamlio.load(text.encode(), "kubectl output") if not d.info.empty]
    return {(d["apiVersion"], d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"]): d for d in docs}


def ours(root: Path, directory: str) -> dict[tuple[str, str, str, str], Any]:
    result = build(FsTree(str(root)), directory)
    assert not result.problems, result.problems
    return {(o.id.api_version, o.id.kind, o.id.namespace, o.id.name): dict(o.value) for o in result.objects}


DEC = "spec:\n  decryption:\n    provider: sops\n    secretRef: {name: sops-age}"

# Each shape: files on top of BASE; the overlay built is clusters/o.
AGREE: dict[str, dict[str, str]] = {
    "smp without target names one object": {
        "clusters/o/kustomization.yaml": overlay("patches:\n" + inline(smp("apps-wave-0", DEC))),
    },
    "smp with a regex target, its own kind ignored": {
        "clusters/o/kustomization.yaml": overlay("patches:\n" + inline(
            "apiVersion: x/v1\nkind: Whatever\nmetadata: {name: ignored}\n" + DEC,
            "{group: kustomize.toolkit.fluxcd.io, kind: Kustomization, name: 'apps-wave-[0-9]+'}")),
    },
    "anchored target matches nothing": {
        "clusters/o/kustomization.yaml": overlay("patches:\n" + inline(
            smp("x", DEC), "{kind: Kustomization, name: apps-wave}")),
    },
    "label and annotation selectors": {
        "clusters/o/kustomization.yaml": overlay(
            "commonAnnotations: {team: platform}\npatches:\n"
            + inline(smp("x", DEC), "{labelSelector: 'tier in (apps, web),!legacy'}")
            + inline(smp("x", "spec: {timeout: 1m}"), "{annotationSelector: team=platform, kind: ConfigMap}")),
    },
    "json6902 ops: add, replace of a missing leaf, copy, move, escapes, test": {
        "clusters/o/kustomization.yaml": overlay("patches:\n" + inline(
            "- {op: add, path: /spec/decryption, value: {provider: sops, secretRef: {name: a}}}\n"
            "- {op: replace, path: /spec/decryption/secretRef/name, value: sops-age}\n"
            "- {op: replace, path: /spec/timeout, value: 3m}\n"
            "- {op: copy, from: /spec/decryption, path: /spec/copied}\n"
            "- {op: move, from: /spec/copied/secretRef, path: /spec/moved}\n"
            "- {op: add, path: /metadata/labels/x~1y, value: '1'}\n"
            "- {op: add, path: /spec/sourceRef/extra, value: [1, 2]}\n"
            "- {op: add, path: /spec/sourceRef/extra/-, value: 3}\n"
            "- {op: add, path: /spec/sourceRef/extra/0, value: 0}\n"
            "- {op: remove, path: /spec/sourceRef/extra/1}\n"
            "- {op: test, path: /spec/decryption/provider, value: sops}\n",
            "{kind: Kustomization, name: apps-wave-1}")),
    },
    # kustomize reads a kustomization and a JSON6902 patch keeping the last value of a repeated key
    "a key repeated in the kustomization: the last wins": {
        "clusters/o/kustomization.yaml": overlay("patches:\n" + inline(smp("apps-wave-0", DEC))
                                                 + "patches:\n" + inline(smp("apps-wave-1", DEC))),
    },
    "a key repeated in a json6902 patch: the last wins": {
        "clusters/o/kustomization.yaml": overlay("patches:\n" + inline(
            "- {op: add, path: /spec/decryption, value: {provider: sops, provider: vault}}\n",
            "{kind: Kustomization, name: apps-wave-1}")),
    },
    "json6902 in JSON syntax, from a file": {
        "clusters/o/kustomization.yaml": overlay(
            "patches:\n  - path: dec.json\n    target:\n      kind: Kustomization\n      name: apps-wave-.*\n"),
        "clusters/o/dec.json": '[{"op": "add", "path": "/spec/decryption", "value": {"provider": "sops"}}]\n',
    },
    "null deletes, $patch replace and delete": {
        "clusters/o/kustomization.yaml": overlay("patches:\n" + inline(smp("apps-wave-0", DEC))
            + inline(smp("apps-wave-0",
                         "spec:\n  decryption:\n    $patch: replace\n    provider: other\n  prune: null"))
            + inline(smp("apps-wave-1", "$patch: delete"))),
    },
    "several documents in one patch without target": {
        "clusters/o/kustomization.yaml": overlay("patches:\n" + inline(
            smp("apps-wave-0", DEC) + "---\n" + smp("apps-wave-1", "spec: {decryption: {provider: sops}}"))),
    },
    "legacy fields run in kustomize's order around namespace": {
        "clusters/o/kustomization.yaml": overlay(
            "namespace: other\n"
            "patchesJson6902:\n  - target: {group: kustomize.toolkit.fluxcd.io, version: v1, kind: Kustomization,"
            " name: apps-wave-0}\n    patch: |\n      - {op: replace, path: /spec/decryption/provider, value: last}\n"
            "patches:\n" + inline("- {op: replace, path: /spec/decryption/provider, value: second}",
                                  "{kind: Kustomization, name: apps-wave-0}")
            + "patchesStrategicMerge:\n  - p.yaml\n  - |-\n"
            + indent(smp("apps-wave-1", "spec: {decryption: {provider: first}}"), 4)),
        "clusters/o/p.yaml": smp("apps-wave-0", "spec: {decryption: {provider: first}}"),
    },
    "components run after resources, before the overlay's own patches": {
        "clusters/o/kustomization.yaml": overlay(
            "components: [../comp]\npatches:\n" + inline(
                "- {op: replace, path: /spec/decryption/provider, value: parent}",
                "{kind: Kustomization, name: apps-wave-0}")),
        "clusters/comp/kustomization.yaml": (
            "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\npatches:\n"
            + inline("- {op: add, path: /spec/decryption, value: {provider: comp}}", "{kind: Kustomization}")),
    },
    "a component with its own resources, labels selected later": {
        "clusters/o/kustomization.yaml": overlay(
            "components: [../comp]\nlabels:\n  - pairs: {sops: 'yes'}\n"
            "patchesJson6902:\n  - target: {labelSelector: sops=yes, kind: Kustomization, name: '.*'}\n"
            "    patch: |\n      - {op: add, path: /spec/decryption, value: {provider: sops}}\n"),
        "clusters/comp/kustomization.yaml": (
            "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nresources: [w.yaml]\npatches:\n"
            + inline(smp("x", "spec: {timeout: 2m}"), "{name: apps-wave-.*}")),
        "clusters/comp/w.yaml": wave(7),
    },
    "overlay on an overlay that moved the namespace": {
        "clusters/mid/kustomization.yaml": overlay("namespace: other\ncommonLabels: {env: mid}\n"),
        "clusters/o/kustomization.yaml": overlay("patches:\n" + inline(smp("apps-wave-0", DEC))
            + inline("- {op: add, path: /spec/decryption, value: {provider: sops}}",
                     "{namespace: flux-system, name: apps-wave-1}")
            + inline(smp("x", "spec: {timeout: 9m}"), "{labelSelector: env=mid, kind: ConfigMap}"),
            resources="[../mid]"),
    },
    "RE2 syntax Python's re lacks: a POSIX class": {
        "clusters/o/kustomization.yaml": overlay("patches:\n" + inline(
            smp("x", DEC), "{kind: Kustomization, name: 'apps-wave-[[:digit:]]+'}")),
    },
    "an alternation is anchored as a whole": {
        "clusters/o/kustomization.yaml": overlay("patches:\n" + inline(
            smp("x", DEC), "{kind: Kustomization, name: 'apps-wave-0|s-wave-1'}")),
    },
    "patches run before namespace and labels": {
        "clusters/o/kustomization.yaml": overlay(
            "namespace: other\ncommonLabels: {env: o}\npatches:\n" + inline(smp("apps-wave-0", DEC))
            + inline(smp("x", "spec: {timeout: 7m}"), "{kind: Kustomization, namespace: flux-system}")
            + inline(smp("x", "spec: {timeout: 8m}"), "{kind: Kustomization, labelSelector: env=o}")
            + inline("- {op: copy, from: /metadata/namespace, path: /spec/targetNamespace}",
                     "{kind: Kustomization, name: apps-wave-1}")),
    },
    "options allow a strategic-merge patch to rename and re-kind": {
        "clusters/o/kustomization.yaml": overlay(
            "patches:\n  - target: {kind: Kustomization, name: apps-wave-1}\n"
            "    options: {allowNameChange: true}\n    patch: |\n"
            + indent(smp("apps-wave-1-renamed", DEC, namespace="elsewhere", api="x/v9"), 6)
            + "  - target: {kind: ConfigMap}\n    options: {allowKindChange: true, allowNameChange: false}\n"
            "    patch: |\n      kind: Secret\n      metadata: {name: ignored}\n"
            + inline(smp("x", "spec: {timeout: 1m}"), "{name: apps-wave-1}")
            + inline(smp("x", "spec: {wait: true}"), "{kind: Kustomization, name: apps-wave-1-renamed}")),
    },
    "without options a strategic-merge patch keeps name and kind": {
        "clusters/o/kustomization.yaml": overlay("patches:\n" + inline(
            "apiVersion: v2\nkind: Other\nmetadata: {name: new, namespace: n}\n" + DEC,
            "{kind: Kustomization, name: apps-wave-0}")),
    },
    # a value is copied where it lands: changing it later leaves the source, the other target and
    # the patch itself as they were
    "json6902 values are copies: of the source, and of the patch for every target": {
        "clusters/o/kustomization.yaml": overlay("patches:\n" + inline(
            "- {op: add, path: /spec/decryption, value: {provider: sops, secretRef: {name: a}}}\n"
            "- {op: add, path: /spec/list, value: [0]}\n"
            "- {op: copy, from: /spec/decryption, path: /spec/list/0}\n"
            "- {op: replace, path: /spec/decryption/secretRef/name, value: b}\n"
            "- {op: replace, path: /spec/list/1, value: {x: [1]}}\n"
            "- {op: add, path: /spec/list/1/x/-, value: 2}\n"
            "- {op: add, path: /spec/list/0, value: {w: [1]}}\n"
            "- {op: add, path: /spec/list/0/w/-, value: 2}\n",
            "{kind: Kustomization}")),
    },
    "null for a key the object lacks": {
        "clusters/o/kustomization.yaml": overlay("patches:\n" + inline(smp("apps-wave-0", "spec: {absent: null}"))),
    },
    "a target's group must match as well": {
        "clusters/o/kustomization.yaml": overlay("patches:\n" + inline(
            smp("x", DEC), "{group: apps, kind: Kustomization, name: apps-wave-0}")),
    },
    "an annotation selector reads the object's own annotations": {
        "clusters/o/kustomization.yaml": overlay("patches:\n" + inline(
            "- {op: add, path: /data/picked, value: 'yes'}", "{annotationSelector: team=platform}"),
            resources="[../base, cm.yaml]"),
        "clusters/o/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: annotated\n"
                              "  annotations: {team: platform}\ndata: {}\n",
    },
    "a targeted strategic-merge patch: delete, and no namespace on a cluster-scoped object": {
        "clusters/o/kustomization.yaml": overlay("patches:\n"
            + inline("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: any}\n$patch: delete\n", "{kind: ConfigMap}")
            + inline("apiVersion: v1\nkind: Namespace\nmetadata: {name: any, namespace: flux-system}\n"
                     "spec: {finalizers: [kubernetes]}\n", "{kind: Namespace}"), resources="[../base, ns.yaml]"),
        "clusters/o/ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: apps}\n",
    },
    "labels entries without pairs add nothing, and the others still apply": {
        "clusters/o/kustomization.yaml": overlay("labels:\n  - includeSelectors: true\n  - null\n  - {}\n"
                                                 "  - pairs: null\n  - pairs: {team: apps}\n"
                                                 "    includeTemplates: true\n"),
    },
    "a patches entry of comments only changes nothing; a null path is no path": {
        "clusters/o/kustomization.yaml": overlay(
            "patches:\n  - path: later.yaml\n  - path: later.yaml\n    target: {kind: Kustomization}\n"
            "  - patch: '# later'\n  - path: null\n    patch: |\n" + indent(smp("apps-wave-0", DEC), 6)),
        "clusters/o/later.yaml": "# the decryption patch goes here\n",
    },
    "namespace renames the Namespace object the build holds": {
        "clusters/o/kustomization.yaml": overlay("namespace: apps\n", resources="[../base, ns.yaml]"),
        "clusters/o/ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: other}\n",
    },
    "commonAnnotations add to the annotations an object has": {
        "clusters/o/kustomization.yaml": overlay("commonAnnotations: {team: apps}\ncommonLabels: {env: o}\n",
                                                 resources="[../base, cm.yaml]"),
        "clusters/o/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: annotated\n"
                              "  annotations: {owner: me, team: db}\n  labels: {tier: data}\ndata: {}\n",
    },
    "a kustomization ending in an empty document": {
        "clusters/o/kustomization.yaml": overlay("commonLabels: {env: o}\n") + "---\n",
    },
    "bases come after resources": {
        "clusters/o/kustomization.yaml": "resources: [extra.yaml]\nbases: [../base]\n",
        "clusters/o/extra.yaml": (
            "apiVersion: v1\nkind: List\nitems:\n  - {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n"),
    },
}


@pytest.mark.parametrize("shape", sorted(AGREE))
def test_objects_match_kubectl(shape: str, tmp_path: Path, kubectl: Kubectl) -> None:
    write_files(tmp_path, {**BASE, **AGREE[shape]})
    real = kubectl(tmp_path / "clusters/o")
    assert real.returncode == 0, real.stderr
    assert ours(tmp_path, "clusters/o") == objects(real.stdout)


# Shapes kustomize refuses: (files, the message wave-bot gives). A BuildError stops the build; a
# failing patch is recorded as a Problem and the build carries on without it.
REFUSED: dict[str, tuple[dict[str, str], str]] = {
    "smp without namespace": (
        {"clusters/o/kustomization.yaml": overlay("patches:\n" + inline(smp("apps-wave-0", DEC, namespace="")))},
        "no object in the build matches the strategic-merge patch for Kustomization apps-wave-0"),
    "smp with another apiVersion": (
        {"clusters/o/kustomization.yaml": overlay("patches:\n" + inline(
            smp("apps-wave-0", DEC, api="kustomize.toolkit.fluxcd.io/v1beta2")))},
        "no object in the build matches the strategic-merge patch for Kustomization flux-system/apps-wave-0 "
        "(kustomize.toolkit.fluxcd.io/v1beta2)"),
    "json add under a missing parent": (
        {"clusters/o/kustomization.yaml": overlay("patches:\n" + inline(
            "- {op: add, path: /spec/decryption/secretRef/name, value: x}", "{name: apps-wave-0}"))},
        "JSON6902 patch on Kustomization flux-system/apps-wave-0 (kustomize.toolkit.fluxcd.io/v1) fails: "
        "doc is missing path: /spec/decryption/secretRef/name"),
    "json replace under a missing parent": (
        {"clusters/o/kustomization.yaml": overlay("patches:\n" + inline(
            "- {op: replace, path: /spec/decryption/provider, value: x}", "{name: apps-wave-0}"))},
        "doc is missing path: /spec/decryption/provider"),
    "json remove of a missing key": (
        {"clusters/o/kustomization.yaml": overlay("patches:\n" + inline(
            "- {op: remove, path: /spec/decryption}", "{name: apps-wave-0}"))},
        "Unable to remove nonexistent key: decryption"),
    "json add under a list index past the end": (
        {"clusters/o/kustomization.yaml": overlay("patches:\n" + inline(
            "- {op: add, path: /spec/l, value: [1]}\n- {op: add, path: /spec/l/1/x, value: 1}",
            "{name: apps-wave-0}"))},
        "doc is missing path: /spec/l/1/x"),
    "json add under a scalar": (
        {"clusters/o/kustomization.yaml": overlay("patches:\n" + inline(
            "- {op: add, path: /spec/prune/x, value: 1}", "{name: apps-wave-0}"))},
        "doc is missing path: /spec/prune/x"),
    "json remove under a missing parent": (
        {"clusters/o/kustomization.yaml": overlay("patches:\n" + inline(
            "- {op: remove, path: /spec/decryption/provider}", "{name: apps-wave-0}"))},
        "doc is missing path: /spec/decryption/provider"),
    "json remove past the end of a list": (
        {"clusters/o/kustomization.yaml": overlay("patches:\n" + inline(
            "- {op: add, path: /spec/l, value: [1]}\n- {op: remove, path: /spec/l/1}", "{name: apps-wave-0}"))},
        "index out of range in /spec/l/1"),
    "json remove of the whole document": (
        {"clusters/o/kustomization.yaml": overlay("patches:\n" + inline(
            "- {op: remove, path: ''}", "{name: apps-wave-0}"))},
        "fails: cannot remove the whole document"),
    # kustomization errors name the file and the entry's line, and say what is wrong
    "a target that is not a mapping": (
        {"clusters/o/kustomization.yaml": overlay(
            "patches:\n  - target: apps-wave-0\n    patch: |\n      - {op: remove, path: /spec/prune}\n")},
        "clusters/o/kustomization.yaml:3: patches[0].target must be a mapping"),
    "options that are not booleans": (
        {"clusters/o/kustomization.yaml": overlay(
            "patches:\n  - options: {allowNameChange: 'yes'}\n    patch: |\n"
            + indent(smp("apps-wave-0", DEC), 6))},
        "clusters/o/kustomization.yaml:3: patches[0].options must be a mapping of booleans"),
    "legacy psm entry that is not a string": (
        {"clusters/o/kustomization.yaml": overlay("patchesStrategicMerge:\n  - {a: 1}\n")},
        "clusters/o/kustomization.yaml:3: patchesStrategicMerge[0] must be a string (a path or an inline patch)"),
    "legacy psm inline patch without kind": (
        {"clusters/o/kustomization.yaml": overlay(
            "patchesStrategicMerge:\n  - |\n    metadata: {name: apps-wave-0}\n    spec: {}\n")},
        "clusters/o/kustomization.yaml:3: patchesStrategicMerge[0]: a strategic-merge patch needs kind and "
        "metadata.name"),
    "legacy psm entry with a long name that is no file": (
        {"clusters/o/kustomization.yaml": overlay("patchesStrategicMerge:\n  - " + "p" * 90 + ".yaml\n")},
        "clusters/o/kustomization.yaml:3: patchesStrategicMerge[0]: '" + "p" * 80 + "' is neither a file nor a "
        "strategic-merge patch"),
    "json op without op": (
        {"clusters/o/kustomization.yaml": overlay("patches:\n" + inline(
            "- {path: /spec/prune}", "{name: apps-wave-0}"))},
        "clusters/o/kustomization.yaml:3: patches[0]: 'unknown' is not a JSON6902 operation (add, remove, replace, "
        "move, copy, test)"),
    "json op that is not a mapping": (
        {"clusters/o/kustomization.yaml": overlay("patches:\n" + inline("- remove", "{name: apps-wave-0}"))},
        "patches[0]: 'unknown' is not a JSON6902 operation"),
    "json op without path": (
        {"clusters/o/kustomization.yaml": overlay("patches:\n" + inline("- {op: remove}", "{name: apps-wave-0}"))},
        "clusters/o/kustomization.yaml:3: patches[0]: a 'remove' operation needs 'path'"),
    "a namespace that is not a string": (
        {"clusters/o/kustomization.yaml": overlay("namespace: [a]\n")},
        "clusters/o/kustomization.yaml:2: 'namespace' must be a string"),
    "json test that fails": (
        {"clusters/o/kustomization.yaml": overlay("patches:\n" + inline(
            "- {op: test, path: /spec/prune, value: false}", "{name: apps-wave-0}"))},
        "testing value /spec/prune failed"),
    "json patch without target": (
        {"clusters/o/kustomization.yaml": overlay("patches:\n" + inline("- {op: remove, path: /spec/prune}"))},
        "patches[0]: a JSON6902 patch needs a target"),
    "json op that does not exist": (
        {"clusters/o/kustomization.yaml": overlay("patches:\n" + inline(
            "- {op: bogus, path: /spec/prune}", "{name: apps-wave-0}"))},
        "patches[0]: 'bogus' is not a JSON6902 operation"),
    "legacy json6902 target without a name": (
        {"clusters/o/kustomization.yaml": overlay(
            "patchesJson6902:\n  - target: {kind: Kustomization}\n"
            "    patch: |\n      - {op: remove, path: /spec/prune}\n")},
        "patchesJson6902[0] needs a target with a name (kustomize: must specify the target name)"),
    "several smp documents with a target": (
        {"clusters/o/kustomization.yaml": overlay("patches:\n" + inline(
            smp("apps-wave-0", DEC) + "---\n" + smp("apps-wave-1", DEC), "{name: apps-wave-.*}"))},
        "clusters/o/kustomization.yaml:3: patches[0]: several strategic-merge patches in one entry cannot have a "
        "target"),
    "smp without kind": (
        {"clusters/o/kustomization.yaml": overlay("patches:\n" + inline(
            "metadata: {name: x}\n" + DEC, "{name: apps-wave-1}"))},
        "clusters/o/kustomization.yaml:3: patches[0]: a strategic-merge patch needs kind and metadata.name (kustomize "
        "cannot parse it otherwise)"),
    "a patches entry with a field kustomize does not know": (
        {"clusters/o/kustomization.yaml": overlay("patches:\n  - path: p.yaml\n    tagret: {name: x}\n"),
         "clusters/o/p.yaml": smp("apps-wave-0", DEC)},
        "clusters/o/kustomization.yaml:3: patches[0] has unknown field 'tagret' (kustomize rejects it)"),
    "a patches field that is not a list": (
        {"clusters/o/kustomization.yaml": overlay("patches: later\n")},
        "clusters/o/kustomization.yaml:2: 'patches' must be a list"),
    "commonLabels that are not a mapping": (
        {"clusters/o/kustomization.yaml": overlay("commonLabels: [team]\n")},
        "clusters/o/kustomization.yaml:2: 'commonLabels' must be a mapping"),
    "an inline patch of plain text": (
        {"clusters/o/kustomization.yaml": overlay("patches:\n  - patch: add decryption later\n")},
        "clusters/o/kustomization.yaml:3: patches[0] is neither a strategic-merge nor a JSON6902 patch"),
    "a patchesJson6902 entry holding a strategic-merge patch": (
        {"clusters/o/kustomization.yaml": overlay(
            "patchesJson6902:\n  - target: {group: kustomize.toolkit.fluxcd.io, version: v1, kind: Kustomization, "
            "name: apps-wave-0}\n    patch: |\n" + indent(smp("apps-wave-0", DEC), 6))},
        "clusters/o/kustomization.yaml:3: patchesJson6902[0] is neither a strategic-merge nor a JSON6902 patch"),
    "resources that are not strings": (
        {"clusters/o/kustomization.yaml": overlay("", resources="[../base, {path: x.yaml}]")},
        "clusters/o/kustomization.yaml:1: 'resources' must be a list of strings"),
    "an inline patch that is not a string": (
        {"clusters/o/kustomization.yaml": overlay("patches:\n  - patch: {metadata: {name: apps-wave-0}}\n")},
        "clusters/o/kustomization.yaml:3: patches[0].patch must be a string (use `patch: |`)"),
    "a patch path that is not a string": (
        {"clusters/o/kustomization.yaml": overlay("patches:\n  - path: [p.yaml]\n"),
         "clusters/o/p.yaml": smp("apps-wave-0", DEC)},
        "clusters/o/kustomization.yaml:3: patches[0].path must be a string"),
    "unknown kustomization field": (
        {"clusters/o/kustomization.yaml": overlay("bogus: 1\n")},
        "unknown field 'bogus': kustomize rejects this kustomization"),
    "unknown target field": (
        {"clusters/o/kustomization.yaml": overlay("patches:\n" + inline(
            "- {op: remove, path: /spec/prune}", "{name: apps-wave-0, foo: x}"))},
        "patches[0].target has unknown field 'foo'"),
    "bad target regex": (
        {"clusters/o/kustomization.yaml": overlay("patches:\n" + inline(
            "- {op: remove, path: /spec/prune}", "{name: 'apps-wave-(0|1'}"))},
        "clusters/o/kustomization.yaml:3: target regular expression 'apps-wave-(0|1' does not parse"),
    "a kind target regex that does not parse": (
        {"clusters/o/kustomization.yaml": overlay("patches:\n" + inline(
            "- {op: remove, path: /spec/prune}", "{kind: 'Kustomization(', name: x}"))},
        "clusters/o/kustomization.yaml:3: target regular expression 'Kustomization(' does not parse"),
    "a namespace target regex that does not parse": (
        {"clusters/o/kustomization.yaml": overlay("patches:\n" + inline(
            "- {op: remove, path: /spec/prune}", "{namespace: 'flux-(system'}"))},
        "clusters/o/kustomization.yaml:3: target regular expression 'flux-(system' does not parse"),
    "a patchesJson6902 target with an empty name": (
        {"clusters/o/kustomization.yaml": overlay(
            "patchesJson6902:\n  - target: {group: kustomize.toolkit.fluxcd.io, version: v1, kind: Kustomization, "
            "name: ''}\n    patch: '[{op: remove, path: /spec/prune}]'\n")},
        "clusters/o/kustomization.yaml:3: patchesJson6902[0] needs a target with a name"),
    "an empty patch string": (
        {"clusters/o/kustomization.yaml": overlay("patches:\n  - patch: ''\n")},
        "clusters/o/kustomization.yaml:3: patches[0] needs exactly one of 'path' and 'patch'"),
    "a legacy patch file of comments only": (
        {"clusters/o/kustomization.yaml": overlay("patchesStrategicMerge:\n  - later.yaml\n"),
         "clusters/o/later.yaml": "# the decryption patch goes here\n"},
        "clusters/o/kustomization.yaml:3: patchesStrategicMerge[0] is an empty patch"),
    "a look-ahead RE2 refuses": (
        {"clusters/o/kustomization.yaml": overlay("patches:\n" + inline(
            "- {op: remove, path: /spec/prune}", "{name: '(?!apps-wave-1)apps-wave-.*'}"))},
        "target regular expression '(?!apps-wave-1)apps-wave-.*' does not parse"),
    "a strategic-merge patch several objects match": (
        {"clusters/mid/kustomization.yaml": overlay("namespace: other\n"),
         "clusters/o/kustomization.yaml": overlay("patches:\n" + inline(smp("apps-wave-0", DEC)),
                                                  resources="[../mid, w.yaml]"),
         "clusters/o/w.yaml": wave(0)},
        "several objects match the strategic-merge patch for Kustomization flux-system/apps-wave-0"),
    "component listed under resources": (
        {"clusters/o/kustomization.yaml": overlay("", resources="[../base, ../comp]"),
         "clusters/comp/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n"
                                             "namespace: x\n"},
        "clusters/comp/kustomization.yaml: is a Component, but it is listed under resources\n"
        "  hint: list a Component under components:, anything else under resources:"),
    "kustomization listed under components": (
        {"clusters/o/kustomization.yaml": "components: [../base]\n"},
        "is a Kustomization, but it is listed under components"),
    "the same object twice": (
        {"clusters/o/kustomization.yaml": overlay("", resources="\n  - ../base\n  - ../other"),
         "clusters/other/kustomization.yaml": "resources: [w.yaml]\n", "clusters/other/w.yaml": wave(0)},
        "clusters/o/kustomization.yaml:3: Kustomization flux-system/apps-wave-0 (kustomize.toolkit.fluxcd.io/v1) is "
        "added twice (kustomize: may not add resource with an already registered id)"),
    "a key repeated in a resource": (
        {"clusters/o/kustomization.yaml": overlay("", resources="[../base, x.yaml]"),
         "clusters/o/x.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  - {a: 1, a: 2}\n"},
        'clusters/o/x.yaml:6: mapping key "a" already defined at line 6'),
    "a key repeated in a resource, with both values to merge": (
        {"clusters/o/kustomization.yaml": overlay("", resources="[../base, x.yaml]"),
         "clusters/o/x.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: one\n  a: two\n"},
        'clusters/o/x.yaml:7: mapping key "a" already defined at line 6\n  hint: line 6 gives it "one", line 7 gives '
        'it "two"'),
    "missing resource": (
        {"clusters/o/kustomization.yaml": overlay("", resources="[../base, gone.yaml]")},
        "clusters/o/kustomization.yaml:1: resources lists 'gone.yaml', which does not exist"),
    "missing patch file": (
        {"clusters/o/kustomization.yaml": overlay("patches:\n  - path: gone.yaml\n")},
        "does not exist (kustomize fails to build without it)"),
    "legacy psm entry that is neither file nor patch": (
        {"clusters/o/kustomization.yaml": overlay("patchesStrategicMerge:\n  - gone.yaml\n")},
        "patchesStrategicMerge[0]: 'gone.yaml' is neither a file nor a strategic-merge patch"),
    "empty kustomization": ({"clusters/o/kustomization.yaml": ""}, "kustomization file is empty"),
    "a component with nothing but apiVersion and kind": (
        {"clusters/o/kustomization.yaml": overlay("components: [../comp]\n"),
         "clusters/comp/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n"},
        "kustomization file is empty: it sets no field but apiVersion and kind"),
    "wrong apiVersion": (
        {"clusters/o/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1\n" + overlay("")},
        "apiVersion for Kustomization must be kustomize.config.k8s.io/v1beta1, not 'kustomize.config.k8s.io/v1'"),
    "directory without kustomization": (
        {"clusters/o/kustomization.yaml": overlay("", resources="[../base, ../empty]"),
         "clusters/empty/x.yaml": wave(5)},
        "clusters/empty: has no kustomization.yaml; kustomize cannot build it"),
    "cycle": (
        {"clusters/o/kustomization.yaml": overlay("", resources="[../p]"),
         "clusters/p/kustomization.yaml": "resources: [../o]\n"},
        "clusters/o: kustomizations include each other in a cycle: clusters/o -> clusters/p -> clusters/o"),
    "a labels entry that is not a mapping": (
        {"clusters/o/kustomization.yaml": overlay("labels:\n  - pairs: {a: b}\n  - team\n")},
        "clusters/o/kustomization.yaml:4: labels[1] must be a mapping (pairs, includeSelectors, ...)"),
    "labels pairs that are not a mapping": (
        {"clusters/o/kustomization.yaml": overlay("labels:\n  - pairs: [team]\n")},
        "clusters/o/kustomization.yaml:3: labels[0].pairs must be a mapping of labels"),
    "a labels entry with a field kustomize does not know": (
        {"clusters/o/kustomization.yaml": overlay("labels:\n  - pair: {a: b}\n")},
        "clusters/o/kustomization.yaml:3: labels[0] has unknown field 'pair' (kustomize rejects it)"),
    "namespace renames two Namespaces to one": (
        {"clusters/o/kustomization.yaml": overlay("namespace: apps\n", resources="[../base, ns.yaml]"),
         "clusters/o/ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\n"
                               "apiVersion: v1\nkind: Namespace\nmetadata: {name: b}\n"},
        "clusters/o/kustomization.yaml:2: 'namespace: apps' gives two objects the id Namespace apps (v1) "
        "(kustomize: namespace transformation produces ID conflict)\n"
        "  hint: keep one Namespace object per kustomization that sets a namespace"),
    "a resource document that is not a mapping": (
        {"clusters/o/kustomization.yaml": overlay("", resources="[../base, x.yaml]"),
         "clusters/o/x.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n---\n- a\n"},
        "clusters/o/x.yaml:5: a resource document must be a mapping (an object)"),
    "resource without a name": (
        {"clusters/o/kustomization.yaml": overlay("", resources="[../base, x.yaml]"),
         "clusters/o/x.yaml": "apiVersion: v1\nkind: ConfigMap\n"},
        "clusters/o/x.yaml:1: a resource needs kind and metadata.name"),
    # Where each refusal of the kustomization file itself points: the file, and the line when it has one.
    "a kustomization whose first document is empty": (
        {"clusters/o/kustomization.yaml": "---\n---\n" + overlay("")},
        "clusters/o/kustomization.yaml:1: kustomization file is empty: its first YAML document, the only one "
        "kustomize reads, is empty\n  hint: delete the `---` lines above line 2"),
    "an empty kustomization file": (
        {"clusters/o/kustomization.yaml": ""}, "clusters/o/kustomization.yaml: kustomization file is empty"),
    "a kustomization with only apiVersion and kind": (
        {"clusters/o/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"},
        "clusters/o/kustomization.yaml: kustomization file is empty: it sets no field but apiVersion and kind "
        "(kustomize: kustomization.yaml is empty)"),
    "a kustomization that is a list": (
        {"clusters/o/kustomization.yaml": "- ../base\n"},
        "clusters/o/kustomization.yaml:1: kustomization file is not a mapping of fields"),
    "a Component apiVersion on a Kustomization kind's file": (
        {"clusters/o/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Component\n"
                                          + overlay("")},
        "clusters/o/kustomization.yaml:1: apiVersion for Component must be kustomize.config.k8s.io/v1alpha1, not "
        "'kustomize.config.k8s.io/v1beta1'"),
    "a misspelt kind": (
        {"clusters/o/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomizaton\n"
                                          + overlay("")},
        "clusters/o/kustomization.yaml:2: kind is 'Kustomizaton'; kustomize expects Kustomization or Component"),
    "an unknown Kustomization apiVersion": (
        {"clusters/o/kustomization.yaml": "kind: Kustomization\napiVersion: kustomize.config.k8s.io/v1\n"
                                          + overlay("")},
        "clusters/o/kustomization.yaml:2: apiVersion for Kustomization must be kustomize.config.k8s.io/v1beta1, "
        "not 'kustomize.config.k8s.io/v1'"),
    "a patch path that is a number": (
        {"clusters/o/kustomization.yaml": overlay("patches:\n  - path: 5\n")},
        "clusters/o/kustomization.yaml:3: patches[0].path is 5, which kustomize reads in a kustomization as a "
        "number (json: cannot unmarshal number into Go struct field Patch.patches.path of type string)\n"
        "  hint: quote it: '5'"),
    "an inline patch that is a number": (
        {"clusters/o/kustomization.yaml": overlay("patches:\n  - patch: 5\n")},
        "clusters/o/kustomization.yaml:3: patches[0].patch is 5, which kustomize reads in a kustomization as a "
        "number (json: cannot unmarshal number into Go struct field Patch.patches.patch of type string)\n"
        "  hint: quote it: '5'"),
    "resource without a kind": (
        {"clusters/o/kustomization.yaml": overlay("", resources="[../base, x.yaml]"),
         "clusters/o/x.yaml": "apiVersion: v1\nmetadata:\n  name: x\n"},
        "clusters/o/x.yaml:1: a resource needs kind and metadata.name"),
}


@pytest.mark.parametrize("shape", sorted(REFUSED))
def test_refused_like_kubectl(shape: str, tmp_path: Path, kubectl: Kubectl) -> None:
    files, message = REFUSED[shape]
    write_files(tmp_path, {**BASE, **files})
    real = kubectl(tmp_path / "clusters/o")
    assert real.returncode != 0, f"kubectl built it:\n{real.stdout}"
    try:
        result = build(FsTree(str(tmp_path)), "clusters/o")
    except BuildError as exc:
        assert message in str(exc)
        return
    assert any(message in p.message for p in result.problems), result.problems


@pytest.mark.parametrize("patch", [
    smp("apps-wave-0", DEC + "\n  wait: true\n  wait: false"),  # kustomize keeps `wait: true`
    smp("apps-wave-0", "spec:\n  decryption: {provider: sops, provider: vault}"),  # kustomize fails
], ids=["kept first", "refused"])
def test_a_key_repeated_in_a_strategic_merge_patch_is_not_evaluated(patch: str, tmp_path: Path) -> None:
    write_files(tmp_path, {**BASE, "clusters/o/kustomization.yaml": overlay("patches:\n" + inline(patch))})
    with pytest.raises(Unsupported, match=r'mapping key "(wait|provider)" already defined at line \d in a '
                       "strategic-merge patch; kustomize keeps the first value or fails") as refused:
        build(FsTree(str(tmp_path)), "clusters/o")
    assert refused.value.message.endswith(", so wave-bot does not evaluate it")
    # and how to write it once, as for any repeated key
    assert refused.value.hint is not None and re.fullmatch(
        r'line \d+ gives it "true", line \d+ gives it "false": keep the key once.*|remove one of the two',
        refused.value.hint), refused.value.hint
    assert refused.value.path is not None and refused.value.path.startswith("clusters/o/kustomization.yaml")


def test_a_failing_patch_is_skipped_and_the_rest_still_evaluated(tmp_path: Path) -> None:
    write_files(tmp_path, {**BASE, "clusters/o/kustomization.yaml": overlay(
        "patches:\n" + inline(smp("apps-wave-7", DEC)) + inline(smp("apps-wave-1", DEC)))})
    result = build(FsTree(str(tmp_path)), "clusters/o")
    (problem,) = result.problems
    assert problem.missing == ResId("kustomize.toolkit.fluxcd.io", "Kustomization", "flux-system", "apps-wave-7", "v1")
    assert problem.patch.where == "patches[0]" and problem.patch.line == 3
    (obj,) = result.find("Kustomization", "kustomize.toolkit.fluxcd.io", "apps-wave-1")
    assert obj.value["spec"]["decryption"] == {"provider": "sops", "secretRef": {"name": "sops-age"}}


def test_patch_uses_record_where_and_what(tmp_path: Path) -> None:
    write_files(tmp_path, {**BASE,
        "clusters/o/kustomization.yaml": overlay("patches:\n  - path: p/dec.yaml\n" + inline(
            "- {op: add, path: /spec/decryption/provider, value: sops}", "{name: apps-wave-1}")),
        "clusters/o/p/dec.yaml": smp("apps-wave-0", DEC)})
    first, second = build(FsTree(str(tmp_path)), "clusters/o").patches
    assert (first.file, first.field, first.index, first.form, first.path) == (
        "clusters/o/kustomization.yaml", "patches", 0, "smp", "clusters/o/p/dec.yaml")
    assert [i.name for i in first.applied_to] == ["apps-wave-0"] and first.touches_decryption
    assert second.form == "json6902" and second.target is not None and second.touches_decryption
    assert second.applied_to == ()  # the add failed (no decryption to add a provider to)


# ---- what wave-bot refuses to follow -----------------------------------------------------------------


BY_HAND = "check this overlay by hand: kubectl kustomize <overlay>"


def test_a_component_outside_the_repository_is_refused_at_its_line(tmp_path: Path) -> None:
    write_files(tmp_path, {**BASE, "clusters/o/kustomization.yaml": overlay("components:\n  - ../../../outside\n")})
    with pytest.raises(Unsupported, match="'../../../outside' points outside the repository") as caught:
        build(FsTree(str(tmp_path)), "clusters/o")
    assert (caught.value.path, caught.value.line) == ("clusters/o/kustomization.yaml", 3)


@pytest.mark.parametrize(("resources", "message", "hint"), [
    ("[../base, 'https://github.com/org/repo//deploy?ref=v1']", "is a remote reference; wave-bot never fetches",
     BY_HAND),
    ("[../base, github.com/fluxcd/flux2/manifests/install]", "is a remote reference; wave-bot never fetches", BY_HAND),
    ("[../base, /etc/kustomize]", "is an absolute path; wave-bot reads only files inside the repository",
     "use a path relative to the kustomization"),
    ("[../base, ../../../outside]", "points outside the repository; wave-bot does not follow it",
     "keep every kustomize reference inside the repository"),
    ("[../base, ../../..]", "'../../..' points outside the repository; wave-bot does not follow it",
     "keep every kustomize reference inside the repository"),
])
def test_references_outside_the_repository_are_not_followed(
    resources: str, message: str, hint: str, tmp_path: Path
) -> None:
    write_files(tmp_path, {**BASE, "clusters/o/kustomization.yaml": overlay("", resources=resources)})
    with pytest.raises(Unsupported, match=message) as caught:
        build(FsTree(str(tmp_path)), "clusters/o")
    assert caught.value.path == "clusters/o/kustomization.yaml" and caught.value.line == 1
    assert caught.value.hint == hint


@pytest.mark.parametrize("field", ["namePrefix: dev-", "replacements: [{path: r.yaml}]", "helmCharts: [{name: x}]"])
def test_fields_that_could_rewrite_anything_are_unsupported(field: str, tmp_path: Path) -> None:
    write_files(tmp_path, {**BASE, "clusters/o/kustomization.yaml": overlay(field + "\n")})
    key = field.split(":")[0]
    with pytest.raises(Unsupported, match=f"uses '{key}', which wave-bot does not evaluate") as refused:
        build(FsTree(str(tmp_path)), "clusters/o")
    assert (refused.value.path, refused.value.line) == ("clusters/o/kustomization.yaml", 2)  # the field's own line


def test_labels_with_fields_are_unsupported(tmp_path: Path) -> None:
    # fieldSpecs can write the labels into any field, spec.decryption included
    write_files(tmp_path, {**BASE, "clusters/o/kustomization.yaml": overlay(
        "labels:\n  - pairs: {provider: sops}\n"
        "    fields: [{path: spec/decryption, kind: Kustomization, create: true}]\n")})
    with pytest.raises(Unsupported) as caught:
        build(FsTree(str(tmp_path)), "clusters/o")
    assert (caught.value.path, caught.value.line) == ("clusters/o/kustomization.yaml", 3)
    assert caught.value.message == "labels[0].fields puts labels at paths wave-bot does not follow"
    assert caught.value.hint == "check this overlay by hand: kubectl kustomize <overlay>"


def test_symbolic_links_are_not_followed(tmp_path: Path) -> None:
    write_files(tmp_path, {**BASE, "clusters/o/kustomization.yaml": overlay("patches:\n  - path: p.yaml\n"),
                           "secret.yaml": smp("apps-wave-0", DEC)})
    os.symlink(tmp_path / "secret.yaml", tmp_path / "clusters/o/p.yaml")
    with pytest.raises(Unsupported, match="is a symbolic link; wave-bot never follows links") as refused:
        build(FsTree(str(tmp_path)), "clusters/o")
    assert (refused.value.path, refused.value.hint) == ("clusters/o/p.yaml", "replace the link with the file itself")


def test_a_kustomization_file_that_is_a_link_is_found_and_not_followed(tmp_path: Path) -> None:
    # Not taken for a directory without a kustomization (Flux would then generate one of every file).
    write_files(tmp_path, {**BASE, "elsewhere.yaml": overlay("")})
    (tmp_path / "clusters/o").mkdir()
    os.symlink(tmp_path / "elsewhere.yaml", tmp_path / "clusters/o/kustomization.yaml")
    with pytest.raises(Unsupported, match="is a symbolic link; wave-bot never follows links") as refused:
        build(FsTree(str(tmp_path)), "clusters/o")
    assert refused.value.path == "clusters/o/kustomization.yaml"


def test_a_resource_file_that_is_missing_is_named(tmp_path: Path) -> None:
    write_files(tmp_path, {**BASE, "clusters/o/kustomization.yaml": overlay("patches:\n  - path: gone.yaml\n")})
    with pytest.raises(BuildError, match="does not exist") as refused:
        build(FsTree(str(tmp_path)), "clusters/o")
    assert refused.value.path == "clusters/o/gone.yaml"


def test_oversized_files_are_not_read(tmp_path: Path) -> None:
    write_files(tmp_path, {**BASE, "clusters/o/kustomization.yaml": overlay("", resources="[../base, big.yaml]"),
                           "clusters/o/big.yaml": "# " + "x" * 2 * yamlio.MAX_FILE_BYTES + "\n"})
    with pytest.raises(Unsupported) as refused:
        build(FsTree(str(tmp_path)), "clusters/o")
    # the size is not given: the tree reads one byte past the cap, never the whole file
    assert (refused.value.path, refused.value.message, refused.value.hint) == (
        "clusters/o/big.yaml", "file is larger than 1,048,576 bytes, the most wave-bot reads of a YAML file", BY_HAND)


def test_a_kustomization_of_several_documents_is_refused_at_the_one_kustomize_ignores(
    tmp_path: Path, kubectl: Kubectl
) -> None:
    # a `---` slipped in above `resources` would have Flux prune everything listed below it
    write_files(tmp_path, {**BASE, "clusters/o/kustomization.yaml": overlay("") + "---\nresources: [extra.yaml]\n",
                           "clusters/o/extra.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra}\n"})
    real = kubectl(tmp_path / "clusters/o")
    assert real.returncode == 0, real.stderr
    assert "extra" not in real.stdout and "apps-wave-0" in real.stdout
    with pytest.raises(Unsupported) as refused:
        build(FsTree(str(tmp_path)), "clusters/o")
    assert (refused.value.path, refused.value.line, refused.value.message, refused.value.hint) == (
        "clusters/o/kustomization.yaml", 2, "kustomization file holds several YAML documents; kustomize reads only "
        "the first and ignores the rest, so nothing listed from here on is applied",
        "delete the `---` on line 2 to make one document, or delete what follows it")


class _Unreadable(FsTree):
    """A tree that refuses to read one file (what FsTree does for a file it has no permission to
    read, which the tests cannot arrange when they run as root)."""

    def read(self, path: str) -> bytes:
        if path == "clusters/o/x.yaml":
            raise WaveBotError("cannot be read: Permission denied", path=path, line=None, hint="fix its mode")
        return super().read(path)


def test_a_file_the_tree_cannot_read_is_refused_naming_it(tmp_path: Path) -> None:
    write_files(tmp_path, {**BASE, "clusters/o/kustomization.yaml": overlay("", resources="[../base, x.yaml]"),
                           "clusters/o/x.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"})
    with pytest.raises(Unsupported) as refused:
        build(_Unreadable(str(tmp_path)), "clusters/o")
    assert (refused.value.path, refused.value.message, refused.value.hint) == (
        "clusters/o/x.yaml", "cannot be read: Permission denied", "fix its mode")


def test_a_linked_directory_on_the_way_to_a_resource_is_refused_with_the_fix(tmp_path: Path) -> None:
    write_files(tmp_path, {**BASE, "clusters/o/kustomization.yaml": overlay("", resources="[../base, more/x.yaml]"),
                           "real/x.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"})
    os.symlink(tmp_path / "real", tmp_path / "clusters/o/more")
    with pytest.raises(Unsupported, match="is a symbolic link; wave-bot never follows links") as refused:
        build(FsTree(str(tmp_path)), "clusters/o")
    assert (refused.value.path, refused.value.hint) == ("clusters/o/more", "replace the link with the file itself")


def test_ignored_fields_do_not_stop_the_evaluation(tmp_path: Path, kubectl: Kubectl) -> None:
    write_files(tmp_path, {**BASE, "clusters/o/kustomization.yaml": overlay(
        "images: [{name: nginx, newTag: '1.2'}]\nconfigMapGenerator: [{name: gen, literals: [a=b]}]\n"
        "generatorOptions: {disableNameSuffixHash: true}\nsortOptions: {order: fifo}\n")})
    assert kubectl(tmp_path / "clusters/o").returncode == 0
    names = {o.id.name for o in build(FsTree(str(tmp_path)), "clusters/o").objects}
    assert {"apps-wave-0", "apps-wave-1", "cluster-vars"} <= names


def test_several_kustomization_files_are_refused(tmp_path: Path) -> None:
    write_files(tmp_path, {"d/kustomization.yaml": "resources: []\n", "d/kustomization.yml": "resources: []\n"})
    message = r"has several kustomization files \(d/kustomization.yaml, d/kustomization.yml\)"
    with pytest.raises(BuildError, match=message) as refused:
        find_kustomization(FsTree(str(tmp_path)), "d")
    assert refused.value.path == "d"


# ---- the small algorithms ---------------------------------------------------------------------------


def test_merge_patch_without_schema() -> None:
    target = {"spec": {"a": 1, "list": [1, 2], "keep": {"x": 1}, "gone": 1}}
    patch = {"spec": {"a": 2, "list": [3], "keep": {"y": 2}, "gone": None, "new": {"$patch": "replace", "z": 1}}}
    assert merge_patch(target, patch) == {"spec": {"a": 2, "list": [3], "keep": {"x": 1, "y": 2}, "new": {"z": 1}}}
    assert merge_patch({"spec": {"d": {"a": 1}}}, {"spec": {"d": {"$patch": "delete"}}}) == {"spec": {}}
    assert merge_patch({"a": 1}, {"$patch": "delete"}) is None
    assert target["spec"]["gone"] == 1  # inputs are not modified


@pytest.mark.parametrize(("ops", "message"), [
    ([{"op": "add", "path": "/a/b/c", "value": 1}], "doc is missing path: /a/b/c"),
    ([{"op": "remove", "path": "/nope"}], "Unable to remove nonexistent key: nope"),
    ([{"op": "add", "path": "/l/5", "value": 1}], "index out of range in /l/5"),
    ([{"op": "test", "path": "/a", "value": 2}], "testing value /a failed"),
    ([{"op": "copy", "from": "/nope", "path": "/x"}], "doc is missing path: /nope"),
    ([{"op": "add", "path": "a", "value": 1}], "'a' is not a JSON pointer"),
])
def test_json_patch_failures(ops: list[dict[str, Any]], message: str) -> None:
    with pytest.raises(PatchFailed, match=message):
        apply_json_patch({"a": 1, "l": [0]}, ops)


def test_json_patch_add_replaces_and_root_replace() -> None:
    assert apply_json_patch({"a": {"b": 1}}, [{"op": "add", "path": "/a", "value": {"c": 2}}]) == {"a": {"c": 2}}
    assert apply_json_patch({"a": 1}, [{"op": "replace", "path": "", "value": {"b": 2}}]) == {"b": 2}
    assert apply_json_patch({"l": [1, 2]}, [{"op": "replace", "path": "/l/1", "value": 9}]) == {"l": [1, 9]}


@pytest.mark.parametrize(("expression", "expected"), [
    ("tier=apps", True), ("tier==apps", True), ("tier!=apps", False), ("tier in (web, apps)", True),
    ("tier notin (apps)", False), ("tier", True), ("!tier", False), ("!other", True), ("tier=apps,env=dev", False),
])
def test_label_selectors(expression: str, expected: bool) -> None:
    assert label_selector_matches(expression, {"tier": "apps"}) is expected


def test_unreadable_label_selector_is_unsupported() -> None:
    with pytest.raises(Unsupported, match="label selector 'tier > 1' is not one wave-bot understands") as caught:
        label_selector_matches("tier > 1", {})
    assert caught.value.hint == "check this overlay by hand: kubectl kustomize <overlay>"


def test_selector_regexes_are_anchored_and_match_original_names() -> None:
    moved = [ResId("", "ConfigMap", "flux-system", "cfg", "v1"), ResId("", "ConfigMap", "other", "cfg", "v1")]
    assert Selector({"name": "cf"}).matches({}, moved) is False
    assert Selector({"name": "c.g", "namespace": "flux-system"}).matches({}, moved) is True
    assert Selector({"namespace": "default"}).matches({}, [ResId("", "ConfigMap", "", "x", "v1")]) is True


def test_res_id_treats_no_namespace_as_default() -> None:
    a = ResId("g", "K", "", "x", "v1")
    assert a.same(ResId("g", "K", "default", "x", "v1")) and not a.same(ResId("g", "K", "flux-system", "x", "v1"))
    assert a.full == "K x (g/v1)" and ResId("", "ConfigMap", "ns", "c", "v1").full == "ConfigMap ns/c (v1)"


@pytest.mark.parametrize(("ops", "touches"), [
    ([{"op": "replace", "path": "/spec", "value": {"prune": True, "decryption": {"provider": "sops"}}}], True),
    ([{"op": "replace", "path": "/spec", "value": {"prune": True}}], False),
    ([{"op": "replace", "path": "/spec/decryption/secretRef/name", "value": "sops-age"}], True),
    ([{"op": "move", "from": "/spec/decryption", "path": "/spec/old"}], True),
    ([{"op": "add", "path": "/metadata/labels/decryption", "value": "x"}], False),
])
def test_which_json6902_patches_touch_decryption(ops: list[dict[str, Any]], touches: bool, tmp_path: Path) -> None:
    """The fixer copies the style of the patches that touch decryption, the checks name them."""
    import json

    write_files(tmp_path, {**BASE, "clusters/o/kustomization.yaml": overlay(
        "patches:\n" + inline(json.dumps(ops), "{kind: Kustomization, name: apps-wave-0}"))})
    (use,) = build(FsTree(str(tmp_path)), "clusters/o").patches
    assert use.form == "json6902" and use.touches_decryption is touches


def test_a_patch_file_outside_the_repository_is_refused_at_its_line(tmp_path: Path) -> None:
    write_files(tmp_path, {**BASE, "clusters/o/kustomization.yaml": overlay("patches:\n  - path: ../../../p.yaml\n")})
    with pytest.raises(Unsupported) as caught:
        build(FsTree(str(tmp_path)), "clusters/o")
    assert (caught.value.path, caught.value.line) == ("clusters/o/kustomization.yaml", 3)
    assert caught.value.message.startswith("'../../../p.yaml' points outside the repository")


def test_a_legacy_patch_outside_the_repository_is_refused_at_its_line(tmp_path: Path) -> None:
    write_files(tmp_path, {**BASE,
                           "clusters/o/kustomization.yaml": overlay("patchesStrategicMerge:\n  - /etc/p.yaml\n")})
    with pytest.raises(Unsupported) as caught:
        build(FsTree(str(tmp_path)), "clusters/o")
    assert (caught.value.path, caught.value.line) == ("clusters/o/kustomization.yaml", 3)
    assert caught.value.message.startswith("'/etc/p.yaml' is an absolute path")


def test_a_local_config_object_is_not_in_the_output(make_repo: Callable[..., Path]) -> None:
    local = ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: local\n  annotations:\n"
             "    config.kubernetes.io/local-config: \"true\"\n")
    repo = make_repo({"base/kustomization.yaml": "resources: [a.yaml]\n",
                      "base/a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: keep\n---\n" + local,
                      "app/kustomization.yaml": "resources: [../base]\n"})
    for directory in ("base", "app"):
        assert [o.id.name for o in build(GitTree(str(repo), "HEAD"), directory).objects] == ["keep"]
