"""wave-bot's prune-hazard findings against `fluxsim`, a model of kustomize-controller.

Random small repositories (a catalog, app manifests with Deployments, PVCs, Namespaces and CNPG
Clusters, some protected at base; some units hold an owner instead: a child Flux Kustomization,
pruning or not, whose path holds the objects, or a HelmRelease; units are files or directories, with a
kustomization of their own that sets a namespace, labels and a protecting patch or without one, some under
a grouping folder) and random pull requests (moves, deletions and regroupings of them too) go through
the real `wave-bot apply --base main --fix-overlays` on real git repositories. The model then replays Flux over the
transition from the base commit to what wave-bot leaves: every object it deletes in some possible
history must have a finding naming it (an error when deleting it loses data; what an owner's
deletion deletes is named on the finding that deletes the owner, and what a chart renders is covered
by the release's uninstall), and no error claims a deletion that the model never performs.
"""
from __future__ import annotations

import dataclasses
import io
import json
import os
import shutil
import subprocess
import tempfile
from contextlib import redirect_stdout
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from bot.cli import main

from conftest import service, snapshot, write_files
from support.fluxsim import FLUX_GROUP, PRUNE, Outcome, Rid, Spec, build, flux_build, kustomizations, simulate

STATEFUL = {("", "PersistentVolumeClaim"), ("", "PersistentVolume"), ("", "Namespace"),
            ("postgresql.cnpg.io", "Cluster")}
MOVE_CODES = {"later-wave-move", "resource-dropped", "cross-kustomization-move", "copy-removed",
              "kustomization-removed", "namespace-deleted"}
CASES = int(os.environ.get("FLUXSIM_CASES", "300"))

# ---- the model on hand-made transitions ---------------------------------------------------------


def flux_k(name: str, path: str, prune: bool = True, depends: tuple[str, ...] = (), extra: str = "") -> bytes:
    deps = "".join(f"\n    - name: {d}" for d in depends)
    return (f"apiVersion: {'kustomize.toolkit.fluxcd.io'}/v1\nkind: Kustomization\nmetadata:\n  name: {name}\n"
            f"  namespace: flux-system\nspec:\n  path: ./{path}\n  prune: {str(prune).lower()}\n"
            f"  interval: 10m\n{'  dependsOn:' + deps if deps else ''}\n{extra}").encode()


def cm(name: str, protected: bool = False, kind: str = "ConfigMap", api: str = "v1", ns: str = "default") -> bytes:
    notes = f"\n  annotations:\n    {PRUNE}: disabled" if protected else ""
    return f"apiVersion: {api}\nkind: {kind}\nmetadata:\n  name: {name}\n  namespace: {ns}{notes}\n".encode()


def two_waves(a: bytes = b"", b: bytes = b"", prune: bool = True) -> dict[str, bytes]:
    files = {
        "clusters/base/kustomization.yaml": b"resources: [w0.yaml, w1.yaml]\n",
        "clusters/base/w0.yaml": flux_k("w0", "apps/w0", prune),
        "clusters/base/w1.yaml": flux_k("w1", "apps/w1", prune, ("w0",)),
    }
    files |= {"apps/w0/a.yaml": a} if a else {"apps/w0/.keep.yaml": b""}
    files |= {"apps/w1/a.yaml": b} if b else {"apps/w1/.keep.yaml": b""}
    return files


X = Rid("", "ConfigMap", "default", "x")


def test_the_model_deletes_an_object_moved_to_a_later_wave_only() -> None:
    assert simulate(two_waves(a=cm("x")), two_waves(b=cm("x"))).deleted == {X}
    assert simulate(two_waves(b=cm("x")), two_waves(a=cm("x"))).deleted == set()


def test_the_model_honours_only_live_annotations_and_prune_false() -> None:
    assert simulate(two_waves(a=cm("x", True)), two_waves(b=cm("x"))).deleted == set()
    assert simulate(two_waves(a=cm("x")), two_waves(b=cm("x", True))).deleted == {X}
    assert simulate(two_waves(a=cm("x"), prune=False), two_waves(b=cm("x"), prune=False)).deleted == set()
    # Flipping prune on in the same change: the wave may reconcile with either spec.
    assert simulate(two_waves(a=cm("x"), prune=False), two_waves(b=cm("x"))).deleted == {X}


def test_the_model_races_unordered_kustomizations_and_runs_finalizers() -> None:
    base = two_waves(a=cm("x"))
    base["clusters/base/w1.yaml"] = flux_k("w1", "apps/w1")  # no dependsOn: a race
    head = {**base, "apps/w0/a.yaml": cm("y"), "apps/w1/a.yaml": cm("x")}
    assert X in simulate(base, head).deleted
    gone = {**base, "clusters/base/kustomization.yaml": b"resources: [w1.yaml]\n", "apps/w1/a.yaml": cm("x")}
    del gone["clusters/base/w0.yaml"]
    outcome = simulate(base, gone)
    assert outcome.finalizer_deleted("w0") and X in outcome.deleted
    orphan = {**gone}
    base_orphan = {**base, "clusters/base/w0.yaml": flux_k("w0", "apps/w0", extra="  deletionPolicy: Orphan\n")}
    assert simulate(base_orphan, orphan).deleted == set()


def test_the_model_deletes_a_namespace_with_everything_in_it() -> None:
    ns = cm("default", kind="Namespace", ns="")
    base = two_waves(a=ns + b"---\n" + cm("x", protected=True))
    head = two_waves(a=cm("x", protected=True))
    assert simulate(base, head).deleted == {Rid("", "Namespace", "", "default"), X}


def test_the_model_lets_either_copy_of_a_contested_object_own_it_at_base() -> None:
    base = two_waves(a=cm("x"), b=cm("x"))
    head = two_waves(b=cm("x"))
    (deletion,) = simulate(base, head).deletions[X]
    assert deletion.by == "w0" and deletion.recreated


def test_the_model_reads_prune_as_yaml_1_2_and_a_failing_build_prunes_nothing() -> None:
    base = two_waves(a=cm("x"))
    base["clusters/base/w0.yaml"] = base["clusters/base/w0.yaml"].replace(b"prune: true", b"prune: yes")
    assert simulate(base, two_waves(b=cm("x"))).deleted == {X}  # the head spec prunes
    head = {**base, "apps/w0/kustomization.yaml": b"resources: [missing.yaml]\n"}
    assert build(head, "apps/w0") is None
    assert simulate(two_waves(a=cm("x")), head).deleted == set()


def test_the_model_releases_a_legacy_kustomization_only_with_prune_false() -> None:
    def legacy(prune: bool) -> dict[str, bytes]:
        return {"clusters/base/kustomization.yaml": b"resources: [apps.yaml]\n",
                "clusters/base/apps.yaml": flux_k("apps", "apps", prune), "apps/x.yaml": cm("x")}

    split = {"clusters/base/kustomization.yaml": b"resources: [w0.yaml]\n",
             "clusters/base/w0.yaml": flux_k("w0", "apps/w0"), "apps/w0/x.yaml": cm("x")}
    assert simulate(legacy(True), split).deleted == {X}  # the finalizer races the adoption
    assert simulate(legacy(False), split).deleted == set()
    assert simulate(legacy(True), legacy(False)).deleted == set()  # step 1 alone deletes nothing


def test_the_model_runs_a_nested_kustomizations_finalizer_only_when_it_collects() -> None:
    data = Rid("", "PersistentVolumeClaim", "default", "data")
    child = Rid("kustomize.toolkit.fluxcd.io", "Kustomization", "flux-system", "child")

    def world(prune: bool, wave: str) -> dict[str, bytes]:
        files = two_waves(**{wave: flux_k("child", "kubernetes/child", prune)})
        return {**files, "kubernetes/child/pvc.yaml": cm("data", kind="PersistentVolumeClaim")}

    outcome = simulate(world(True, "a"), world(True, "b"))
    assert outcome.deleted == {child, data}
    (gone,) = outcome.deletions[data]
    assert (gone.how, gone.by, gone.owner, gone.recreated) == ("finalizer", "child", child, True)
    assert simulate(world(False, "a"), world(False, "b")).deleted == {child}
    assert simulate(world(True, "b"), world(True, "a")).deleted == set()  # adopted by the earlier wave


def test_the_model_gives_a_nested_kustomization_the_deletion_policy_its_parents_patches_set() -> None:
    data = Rid("", "PersistentVolumeClaim", "default", "data")
    every = ("  patches:\n    - patch: |-\n        apiVersion: kustomize.toolkit.fluxcd.io/v1\n"
             "        kind: Kustomization\n        metadata:\n          name: _\n        spec:\n"
             "          deletionPolicy: WaitForTermination\n      target:\n"
             "        group: kustomize.toolkit.fluxcd.io\n        kind: Kustomization\n")
    orphan_child = ("    - patch: |-\n        apiVersion: kustomize.toolkit.fluxcd.io/v1\n"
                    "        kind: Kustomization\n        metadata:\n          name: child\n        spec:\n"
                    "          deletionPolicy: Orphan\n      target:\n"
                    "        group: kustomize.toolkit.fluxcd.io\n        kind: Kustomization\n        name: child\n")

    def world(child: bool, patches: str, own: str = "") -> dict[str, bytes]:
        files = {"clusters/base/kustomization.yaml": b"resources: [apps.yaml]\n",
                 "clusters/base/apps.yaml": flux_k("apps", "kubernetes/apps", extra=patches),
                 "kubernetes/apps/.keep.yaml": b"",
                 "kubernetes/child/pvc.yaml": cm("data", kind="PersistentVolumeClaim")}
        if child:
            files["kubernetes/apps/child.yaml"] = flux_k("child", "kubernetes/child", extra=own)
        return files

    # The child's own Orphan is overridden by the parent's patch: its finalizer deletes the claim.
    assert data in simulate(world(True, every, "  deletionPolicy: Orphan\n"), world(False, every)).deleted
    # A later patch of the parent naming the child wins over the one for every child.
    assert simulate(world(True, every + orphan_child), world(False, every + orphan_child)).deleted == {
        Rid("kustomize.toolkit.fluxcd.io", "Kustomization", "flux-system", "child")}


def test_the_model_reads_a_ks_yaml_repository_from_a_generated_entry() -> None:
    # The shape of the homelab templates: the root builds a directory without a kustomization (Flux
    # generates one); the legacy applies kubernetes/apps/ (generated too), whose grouping folder sets a
    # namespace and adds a component; its child applies an app with a Flux-level component whose
    # claim is named by postBuild substitution.
    claim = Rid("", "PersistentVolumeClaim", "media", "plex")
    secret = Rid("", "Secret", "media", "cluster-secrets")
    child = Rid(FLUX_GROUP, "Kustomization", "media", "plex")
    kust = b"apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
    component = b"apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n"

    def world(prune: bool) -> dict[str, bytes]:
        return {
            "kubernetes/flux/cluster/ks.yaml": flux_k("cluster-apps", "kubernetes/apps", prune),
            "kubernetes/apps/media/kustomization.yaml": kust + b"namespace: media\ncomponents: [../../components/sops]"
                                                               b"\nresources: [./plex/ks.yaml]\n",
            "kubernetes/apps/media/plex/ks.yaml": flux_k("plex", "kubernetes/apps/media/plex/app", extra=(
                "  targetNamespace: media\n  components: [../../../../components/backup]\n"
                "  postBuild:\n    substitute:\n      APP: plex\n")).replace(b"  namespace: flux-system\n", b""),
            "kubernetes/apps/media/plex/app/kustomization.yml": kust + b"resources: [cm.yaml]\n",
            "kubernetes/apps/media/plex/app/cm.yaml": cm("plex", ns=""),
            "kubernetes/components/sops/kustomization.yaml": component
            + b"secretGenerator:\n  - name: cluster-secrets\n",
            "kubernetes/components/backup/kustomization.yaml": component + b"resources: [pvc.yaml]\n",
            "kubernetes/components/backup/pvc.yaml": cm("${APP}", kind="PersistentVolumeClaim", ns=""),
        }

    specs = kustomizations(world(True), "kubernetes/flux/cluster")
    assert [m.rid for m in flux_build(world(True), specs["cluster-apps"]) or []] == [child, secret]
    assert {m.rid for m in flux_build(world(True), _spec_of(world(True), "plex")) or []} == {
        Rid("", "ConfigMap", "media", "plex"), claim}
    # Deleting the pruning legacy deletes its child, whose finalizer deletes the claim; released, nothing.
    gone = {"kubernetes/flux/cluster/other.yaml": cm("keep", ns="flux-system")}
    assert {child, secret, claim} <= simulate(world(True), gone, "kubernetes/flux/cluster").deleted
    assert simulate(world(False), gone, "kubernetes/flux/cluster").deleted == set()


def _spec_of(files: dict[str, bytes], name: str) -> Spec:
    from support.fluxsim import _spec

    (doc,) = [d for d in YAML(typ="safe").load_all(files[f"kubernetes/apps/media/{name}/ks.yaml"])]
    return _spec(name, doc["spec"], "media")


def test_the_model_reconciles_no_kustomization_whose_source_is_not_in_its_namespace() -> None:
    # A unit kustomization's namespace: moves the child out of flux-system; its sourceRef (no
    # namespace: its own) names no GitRepository there. Real Flux: not Ready, applies nothing
    # (tests/live/test_fluxsim_live.py plays it).
    child = Rid("kustomize.toolkit.fluxcd.io", "Kustomization", "elsewhere", "child")
    source = "  sourceRef:\n    kind: GitRepository\n    name: flux-system\n"

    def world(namespace: str) -> dict[str, bytes]:
        return {**two_waves(), "apps/w0/kustomization.yaml": b"resources: [child]\n",
                "apps/w0/child/kustomization.yaml": f"namespace: {namespace}\nresources: [k.yaml]\n".encode(),
                "apps/w0/child/k.yaml": flux_k("child", "kubernetes/child", extra=source),
                "kubernetes/child/x.yaml": cm("x")}

    assert simulate(world("elsewhere"), two_waves()).deleted == {child}
    assert simulate(world("flux-system"), two_waves()).deleted == {
        dataclasses.replace(child, namespace="flux-system"), X}


def test_a_waiting_wave_that_applies_a_never_ready_child_holds_back_the_waves_after_it() -> None:
    # wave 0 (wait: true) applies a child its unit moves out of flux-system (no source there: never
    # Ready); its health check times out, so wave 1, which depends on it, never reconciles the
    # revision and prunes nothing (tests/live/test_fluxsim_live.py plays it through real Flux).
    source = "  sourceRef:\n    kind: GitRepository\n    name: flux-system\n"

    def world(wait: bool, namespace: str) -> dict[str, bytes]:
        files = two_waves(b=cm("y"))
        w0 = flux_k("w0", "apps/w0", extra="  wait: true\n" if wait else "")
        return {**files, "clusters/base/w0.yaml": w0, "apps/w0/kustomization.yaml": b"resources: [child]\n",
                "apps/w0/child/kustomization.yaml": f"namespace: {namespace}\nresources: [k.yaml]\n".encode(),
                "apps/w0/child/k.yaml": flux_k("child", "kubernetes/child", extra=source),
                "kubernetes/child/x.yaml": cm("x")}

    def base(wait: bool) -> dict[str, bytes]:
        return {**two_waves(b=cm("y")), "clusters/base/w0.yaml": world(wait, "")["clusters/base/w0.yaml"]}

    y = Rid("", "ConfigMap", "default", "y")
    head = world(True, "elsewhere")
    del head["apps/w1/a.yaml"]
    head["apps/w1/.keep.yaml"] = b""
    assert simulate(base(True), head).deleted == set()  # y stays: wave 1 waits on wave 0 for good
    unwaited = {**head, "clusters/base/w0.yaml": flux_k("w0", "apps/w0")}
    assert simulate(base(False), unwaited).deleted == {y}  # without wait, wave 0 is Ready once applied
    ready = {**head, **{k: v for k, v in world(True, "flux-system").items() if k.startswith("apps/w0/")}}
    assert simulate(base(True), ready).deleted == {y}  # a child that reconciles becomes Ready


def test_a_wave_held_back_at_base_never_applied_so_removing_it_deletes_nothing() -> None:
    # At base already, wave 0 (wait: true) holds a never-Ready child: wave 1 never applied there, so
    # y never existed and the root removing wave 1 deletes nothing (its finalizer's inventory is
    # empty; tests/live/test_fluxsim_live.py plays it through real Flux). Once wave 0's child
    # reconciles at base, wave 1 applied y, and removing wave 1 deletes it.
    source = "  sourceRef:\n    kind: GitRepository\n    name: flux-system\n"

    def base(namespace: str) -> dict[str, bytes]:
        return {**two_waves(b=cm("y")), "clusters/base/w0.yaml": flux_k("w0", "apps/w0", extra="  wait: true\n"),
                "apps/w0/kustomization.yaml": b"resources: [child]\n",
                "apps/w0/child/kustomization.yaml": f"namespace: {namespace}\nresources: [k.yaml]\n".encode(),
                "apps/w0/child/k.yaml": flux_k("child", "kubernetes/child", extra=source),
                "kubernetes/child/x.yaml": cm("x")}

    def without_w1(files: dict[str, bytes]) -> dict[str, bytes]:
        head = {k: v for k, v in files.items() if k != "clusters/base/w1.yaml"}
        return {**head, "clusters/base/kustomization.yaml": b"resources: [w0.yaml]\n"}

    assert simulate(base("elsewhere"), without_w1(base("elsewhere"))).deleted == set()
    assert simulate(base("flux-system"), without_w1(base("flux-system"))).deleted == {
        Rid("", "ConfigMap", "default", "y")}


def test_the_model_applies_nothing_of_a_root_holding_a_kustomization_without_a_namespace() -> None:
    base = two_waves(a=cm("x"), b=cm("y"))
    head = {k: v for k, v in base.items() if k != "clusters/base/w1.yaml"} | {
        "clusters/base/kustomization.yaml": b"resources: [w0.yaml, w2.yaml]\n",
        "clusters/base/w2.yaml": flux_k("w2", "apps/w2").replace(b"  namespace: flux-system\n", b""),
        "apps/w2/a.yaml": cm("z")}
    assert simulate(base, head).deleted == set()  # the root prunes nothing: w1 stays, with y
    moved = {**head, "apps/w0/a.yaml": b"", "apps/w1/a.yaml": cm("x") + b"---\n" + cm("y")}
    assert simulate(base, moved).deleted == {X}  # the waves it has still reconcile the revision
    assert simulate(head, base).deleted == set()  # from an empty cluster, that revision applied nothing


def test_the_model_uninstalls_a_deleted_helmrelease_with_what_its_chart_rendered() -> None:
    release = Rid("helm.toolkit.fluxcd.io", "HelmRelease", "default", "app")
    claim = Rid("", "PersistentVolumeClaim", "default", "app-data")

    def hr(persistence: bool) -> bytes:
        values = "  values:\n    persistence:\n      enabled: true\n" if persistence else ""
        return cm("app", kind="HelmRelease", api="helm.toolkit.fluxcd.io/v2") + b"spec:\n" + values.encode()

    outcome = simulate(two_waves(a=hr(True)), two_waves(b=hr(True)))
    assert outcome.deleted == {release, claim, Rid("apps", "Deployment", "default", "app")}
    assert {d.how for d in outcome.deletions[claim]} == {"uninstall"}
    assert claim not in simulate(two_waves(a=hr(False)), two_waves(b=hr(False))).deleted


def test_the_model_builds_a_unit_directory_with_its_kustomizations_transformers() -> None:
    protect = json.dumps({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                          "metadata": {"name": "any", "annotations": {PRUNE: "disabled"}}})
    kust = {"resources": ["a.yaml"], "namespace": "data", "commonLabels": {"team": "db"},
            "patches": [{"target": {"kind": "PersistentVolumeClaim"}, "patch": protect}]}
    files = {"apps/w0/kustomization.yaml": b"resources: [db]\n",
             "apps/w0/db/kustomization.yaml": json.dumps(kust).encode(),
             "apps/w0/db/a.yaml": b"---\n".join([cm("db", kind="Namespace", ns=""),
                                                 cm("x", kind="PersistentVolumeClaim"), cm("x")])}
    assert {(m.rid, m.prune_disabled) for m in build(files, "apps/w0") or []} == {
        (Rid("", "Namespace", "", "data"), False),  # kustomize renames it to the namespace
        (Rid("", "PersistentVolumeClaim", "data", "x"), True), (Rid("", "ConfigMap", "data", "x"), False)}
    labelled = {**files, "apps/w0/db/kustomization.yaml": json.dumps(
        {**kust, "patches": [], "commonLabels": {PRUNE: "disabled"}}).encode()}
    assert all(m.prune_disabled for m in build(labelled, "apps/w0") or [])  # Flux honours the label too
    two = {**files, "apps/w0/db/a.yaml": files["apps/w0/db/a.yaml"] + b"---\n" + cm("other", kind="Namespace", ns="")}
    assert build(two, "apps/w0") is None  # two Namespaces renamed to one: kustomize fails


# ---- random repositories and pull requests -------------------------------------------------------


@dataclass
class World:
    """A small repository: services with their objects, and how the app tier is laid out at base."""

    deps: dict[str, list[str]]
    objects: dict[str, list[str]]
    """service -> kinds of objects in its file (Deployment always; PVC, Namespace, Cluster)."""
    protected: set[str]
    layout: str
    """waves | noprune | legacy-prune | legacy-keep"""
    legacy_kustomization: bool
    in_platform: str | None
    """A service whose file the platform Kustomization applies at base (not onboarded yet)."""
    duplicate: tuple[str, str] | None
    """(a, b): b's file also defines a's Deployment at base."""
    pr: str
    pick: int
    """Chooses the services the pull request touches among those it can touch."""
    extra: dict[str, Any] = field(default_factory=dict)
    shapes: dict[str, str] = field(default_factory=dict)
    """service -> what its unit file holds: plain objects, or an owner of them (SHAPES)."""
    dirs: dict[str, str] = field(default_factory=dict)
    """service -> how its unit sits in the apps directory (LAYOUTS)."""
    dressing: dict[str, tuple[bool, int, str]] = field(default_factory=dict)
    """service with a kustomization of its own -> (sets a namespace, labels: 0 none, 1 commonLabels,
    2 labels, how the kustomization protects it when the service is protected: PROTECTIONS)."""


KINDS = st.lists(st.sampled_from(["PersistentVolumeClaim", "Namespace", "Cluster", "ConfigMap"]), unique=True,
                 max_size=2)
PRS = ["add-dependency", "remove-dependencies", "add-service", "delete-file", "delete-catalog-entry",
       "annotate-and-move", "remove-platform", "rename-waves", "move-from-platform", "prune-on-and-move",
       "prune-off-and-move", "prune-off-and-move", *["empty-waves"] * 4, "nothing", "move-owner", "delete-owner",
       "regroup-unit", "regroup-unit"]
"""move-owner / delete-owner: add-dependency (moving it to a later wave) / delete-file on a unit that is an
owner (nothing when the world has none). regroup-unit: the author moves a unit out of its wave into
another layout (a file into a directory of its own, a directory into a grouping folder or out of
one), for wave-bot to place again."""
# The legacy `apps` Kustomization's spec.deletionPolicy ("": none): each decides what cutover step 1 sets.
POLICIES = ["", "Delete", "WaitForTermination", "Orphan", "MirrorPrune"]


@st.composite
def worlds(draw: st.DrawFn) -> World:
    count = draw(st.integers(1, 4))
    names = [f"s{i}" for i in range(count)]
    deps = {n: sorted(set(draw(st.lists(st.sampled_from(names[:i]), max_size=2)))) if i else []
            for i, n in enumerate(names)}
    objects = {n: ["Deployment", *draw(KINDS)] for n in names}
    protected = set(draw(st.lists(st.sampled_from(names), unique=True, max_size=2)))
    layout = draw(st.sampled_from(["waves", "waves", "waves", "noprune", "legacy-prune", "legacy-keep"]))
    in_platform = draw(st.one_of(st.none(), st.sampled_from(names))) if count > 1 else None
    duplicate = None
    if count > 1 and draw(st.booleans()) and layout.startswith(("waves", "noprune")):
        a, b = draw(st.permutations(names))[:2]
        duplicate = (a, b)
    kinds = [k for k in PRS if (k != "move-from-platform" or in_platform) and (k != "prune-on-and-move" or
                                                                              layout == "noprune")
             and (k != "prune-off-and-move" or layout == "waves")]
    # About a quarter of the wave layouts (sampled_from draws evenly; integers favour 0).
    hidden = layout == "waves" and draw(st.sampled_from([False, False, False, True]))
    if hidden:  # wave-bot cannot remove or rename waves it cannot see: not these changes
        kinds = [k for k in kinds if k not in ("rename-waves", "empty-waves", "remove-platform")]
    pr = "nothing" if layout.startswith("legacy") else draw(st.sampled_from(kinds))
    policy = draw(st.sampled_from(POLICIES)) if layout.startswith("legacy") else ""
    w = World(deps, objects, protected, layout, draw(st.booleans()), in_platform, duplicate, pr,
              draw(st.integers(0, 63)), {"policy": policy, "hidden": hidden})
    # Owners only where the rest of the world leaves them alone: wave-bot does not read what the
    # platform Kustomization's nested owners apply, nor a child's objects defined twice.
    plain = {in_platform, *(duplicate or ())}
    w.shapes = {n: "plain" if n in plain else draw(st.sampled_from(SHAPES)) for n in names}
    # The platform's file and the duplicated ones are found by their file names: files.
    w.dirs = {n: "file" if n in plain else draw(st.sampled_from(LAYOUTS)) for n in names}
    w.dressing = {n: (draw(st.booleans()), draw(st.integers(0, 2)), draw(st.sampled_from(PROTECTIONS)))
                  for n in names if w.dirs[n].endswith("-kust")}
    return w


LAYOUTS = ["file", "file", "dir", "dir-kust", "dir-kust", "group", "group-kust"]
"""file: apps/<name>.yaml; dir: apps/<name>/ without a kustomization (its unit file, and a ConfigMap
one directory down); dir-kust: apps/<name>/ with a kustomization listing its unit file (WORLD.dressing);
group, group-kust: the same under the grouping folder apps/grp/."""
PROTECTIONS = ["file", "commonAnnotations", "commonLabels", "patch-claims", "patch-clusters"]
"""How a protected service's kustomization marks it prune: disabled: not at all (its file does), for every
object (commonAnnotations, or commonLabels: Flux honours the label too), or by a patch on its claims only
(strategic merge) or its CNPG Clusters only (JSON6902)."""


SHAPES = ["plain", "child", "child-keep", "helm"]
"""plain: the objects themselves; child / child-keep: a Flux Kustomization (prune: true / false) whose
path holds them; helm: a HelmRelease whose chart renders a claim when the service has a PVC."""


def unit(w: World, name: str, protected: bool) -> dict[str, str]:
    """The unit file's text (key "") and the files its owner applies (their paths)."""
    kinds, shape = w.objects[name], w.shapes.get(name, "plain")
    notes = f"\n  annotations:\n    {PRUNE}: disabled" if protected else ""
    if shape.startswith("child"):
        prune = "true" if shape == "child" else "false"
        owner = flux(name, f"kubernetes/{name}/app", prune=prune).replace(
            "  namespace: flux-system\n", f"  namespace: flux-system{notes}\n")
        return {"": owner, f"kubernetes/{name}/app/{name}.yaml": manifest(name, kinds, False)}
    if shape == "helm":
        values = "  values:\n    persistence:\n      enabled: true\n" if "PersistentVolumeClaim" in kinds else ""
        release = (f"apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: {name}\n"
                   f"  namespace: {name}{notes}\nspec:\n  interval: 30m\n  chart:\n    spec:\n      chart: app\n"
                   f"{values}")
        namespace = manifest(name, ["Namespace"], protected) + "---\n" if "Namespace" in kinds else ""
        return {"": namespace + release}
    return {"": manifest(name, kinds, protected)}


def unit_dir(w: World, name: str) -> str | None:
    """Where the directory of `name`'s unit sits below the apps directory; None: it is a file."""
    layout = w.dirs.get(name, "file")
    return None if layout == "file" else f"grp/{name}" if layout.startswith("group") else name


def placed(w: World, name: str, where: str) -> dict[str, str]:
    """The files of `name`'s unit at base, by their paths (its owner's files included)."""
    protected = name in w.protected
    directory = unit_dir(w, name) if where == "apps" else None
    dressing = w.dressing.get(name)
    files = unit(w, name, protected and (dressing is None or dressing[2] == "file"))
    main = files.pop("")
    if directory is None:
        return {f"{where}/{name}.yaml": main, **files}
    files[f"apps/{directory}/{name}.yaml"] = main
    if dressing is None:
        files[f"apps/{directory}/config/{name}-config.yaml"] = manifest(f"{name}-config", ["ConfigMap"], False)
        return files
    namespace, labels, protection = dressing
    kust: dict[str, Any] = {"resources": [f"{name}.yaml"]}
    if namespace:
        kust["namespace"] = f"{name}-ns"
    common = {"app.kubernetes.io/name": name} if labels == 1 else {}
    if labels == 2:
        kust["labels"] = [{"pairs": {"tier": "apps"}}]
    if protected and protection == "commonAnnotations":
        kust["commonAnnotations"] = {PRUNE: "disabled"}
    if protected and protection == "commonLabels":
        common[PRUNE] = "disabled"
    if common:
        kust["commonLabels"] = common
    if protected and protection == "patch-claims":
        kust["patches"] = [{"target": {"kind": "PersistentVolumeClaim"}, "patch": json.dumps(
            {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
             "metadata": {"name": "any", "annotations": {PRUNE: "disabled"}}})}]
    if protected and protection == "patch-clusters":
        kust["patches"] = [{"target": {"group": "postgresql.cnpg.io", "kind": "Cluster"}, "patch": json.dumps(
            [{"op": "add", "path": "/metadata/annotations", "value": {PRUNE: "disabled"}}])}]
    files[f"apps/{directory}/kustomization.yaml"] = json.dumps(kust) + "\n"
    return files


def legacy_entries(w: World, name: str) -> list[str]:
    """What a legacy `apps/kustomization.yaml` lists for `name`'s unit (kustomize refuses a listed
    directory that has no kustomization: its files then)."""
    directory = unit_dir(w, name)
    if directory is None:
        return [f"{name}.yaml"]
    if w.dirs[name].endswith("-kust"):
        return [directory]
    return [f"{directory}/{name}.yaml", f"{directory}/config/{name}-config.yaml"]


def unit_at(root: Path, name: str) -> Path | None:
    """The unit of `name` in the work tree: its file, or its directory."""
    for pattern in (f"apps/wave-*/{name}.yaml", f"apps/{name}.yaml"):
        if found := sorted(root.glob(pattern)):
            return found[0]
    for pattern in (f"apps/wave-*/{name}", f"apps/wave-*/grp/{name}", f"apps/{name}", f"apps/grp/{name}"):
        if found := sorted(p for p in root.glob(pattern) if p.is_dir()):
            return found[0]
    return None


def manifest(name: str, kinds: list[str], protected: bool) -> str:
    notes = f"\n  annotations:\n    {PRUNE}: disabled" if protected else ""
    docs = []
    for kind in kinds:
        if kind == "Namespace":
            docs.append(f"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {name}{notes}\n")
            continue
        api = {"Deployment": "apps/v1", "Cluster": "postgresql.cnpg.io/v1"}.get(kind, "v1")
        docs.append(f"apiVersion: {api}\nkind: {kind}\nmetadata:\n  name: {name}\n  namespace: {name}{notes}\n")
    return "---\n".join(docs)


def flux(name: str, path: str, depends: str | None = None, prune: str = "true", policy: str = "") -> str:
    dep = f"  dependsOn:\n    - name: {depends}\n" if depends else ""
    deletion = f"  deletionPolicy: {policy}\n" if policy else ""
    return (f"apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: {name}\n"
            f"  namespace: flux-system\nspec:\n{dep}  interval: 10m\n  path: ./{path}\n  prune: {prune}\n"
            f"{deletion}  sourceRef:\n    kind: GitRepository\n    name: flux-system\n")


def kustomization(*resources: str) -> str:
    return "resources:\n" + "".join(f"  - {r}\n" for r in resources)


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def cli(repo: Path, *args: str) -> tuple[int, dict[str, Any]]:
    out = io.StringIO()
    with redirect_stdout(out):
        code = main([*args, str(repo), "--format", "json"])
    return code, json.loads(out.getvalue()) if out.getvalue() else {}


def base_files(w: World) -> dict[str, str]:
    files = {f"catalog/{n}.yaml": service(n, *d) for n, d in w.deps.items()}
    for n in w.objects:
        files |= placed(w, n, "platform" if n == w.in_platform else "apps")
    platform = [f"{w.in_platform}.yaml"] if w.in_platform else []
    files["platform/kustomization.yaml"] = kustomization("base.yaml", *platform)
    files["platform/base.yaml"] = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: platform\n"
    files["platform-config/kustomization.yaml"] = kustomization("config.yaml")
    files["platform-config/config.yaml"] = manifest("platform-config", ["ConfigMap"], False)
    resources = ["platform.yaml", "platform-config.yaml"]
    files["clusters/base/platform.yaml"] = flux("platform", "platform")
    files["clusters/base/platform-config.yaml"] = flux("platform-config", "platform-config", "platform")
    if w.layout.startswith("legacy"):
        prune = "true" if w.layout == "legacy-prune" else "false"
        files["clusters/base/apps.yaml"] = flux("apps", "apps", "platform-config", prune, w.extra["policy"])
        resources.append("apps.yaml")
        if w.legacy_kustomization:
            apps = sorted(e for n in w.objects if n != w.in_platform for e in legacy_entries(w, n))
            files["apps/kustomization.yaml"] = kustomization(*apps)
    files["clusters/base/kustomization.yaml"] = kustomization(*resources)
    files["clusters/dev/kustomization.yaml"] = kustomization("../base")
    if w.layout == "noprune":
        files[".wave-bot.yaml"] = NO_PRUNE
    return files


NO_PRUNE = ("kustomization_template:\n  spec:\n    interval: 10m\n    prune: false\n"
            "    sourceRef: {kind: GitRepository, name: flux-system}\n")


ROOT_FILES = {"kustomization.yaml", "platform.yaml", "platform-config.yaml", "apps.yaml"}


def hide_waves(w: World, root: Path) -> None:
    """For a world whose waves' Flux Kustomizations live outside clusters/ (where wave-bot never
    reads), as if kept by hand in another directory: what wave-bot just wrote there moves to flux/,
    and the root lists it from there. Flux (the model) still applies them."""
    if not w.extra.get("hidden"):
        return
    base = root / "clusters/base"
    moved = sorted(p.name for p in base.glob("*.yaml") if p.name not in ROOT_FILES)
    (root / "flux").mkdir(exist_ok=True)
    for name in moved:
        (base / name).replace(root / "flux" / name)
    listed = [line for line in (base / "kustomization.yaml").read_text().splitlines(keepends=True)
              if line.strip().removeprefix("- ").split(" ")[0] not in moved]
    hidden = sorted(p.name for p in (root / "flux").glob("*.yaml"))
    text = "".join(listed)
    text += "".join(f"  - ../../flux/{name}\n" for name in hidden if f"../../flux/{name}" not in text)
    (base / "kustomization.yaml").write_text(text)


def make_base(w: World, root: Path) -> None:
    write_files(root, base_files(w))
    if not w.layout.startswith("legacy"):
        code, _ = cli(root, "apply", "--fix-overlays")
        assert code == 0
        hide_waves(w, root)
    if w.duplicate:
        a, b = w.duplicate
        path = next(iter([*root.glob(f"apps/*/{b}.yaml"), *root.glob(f"platform/{b}.yaml")]))
        path.write_text(path.read_text() + "---\n" + manifest(a, ["Deployment"], a in w.protected))
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    git(root, "checkout", "-q", "-b", "pr")


def make_pr(w: World, root: Path) -> str:
    """Make the pull request's change and commit it; what it did, for the counts."""
    onboarded = [n for n in sorted(w.deps) if n != w.in_platform]
    # New edges that keep the catalog acyclic: o must not depend on t already.
    pairs = [(t, o) for t in onboarded for o in sorted(w.deps) if t != o and o not in closure(w.deps, t)
             and o not in w.deps[t]]
    # Two times in three, the change touches an owner when the world has one (a Kustomization or a
    # HelmRelease in a wave): those are the cases where deleting one object deletes many.
    on_owner = w.pr in ("move-owner", "delete-owner")
    owners = [n for n in onboarded if w.shapes.get(n, "plain") != "plain"] if w.pick % 3 or on_owner else []
    # The other third, a directory unit whose own kustomization transforms what it holds (its
    # namespace, labels and patches decide what Flux deletes), when the world has one.
    focus = owners or ([] if on_owner else [n for n in onboarded if n in w.dressing])
    depth = {n: wave_depth(w.deps, n) for n in w.deps}
    moving = [p for p in pairs if p[0] in focus and depth[p[1]] >= depth[p[0]]]  # it moves up
    pairs = moving if on_owner else moving or pairs
    if on_owner and not (moving if w.pr == "move-owner" else owners):
        w.pr = "nothing"
    candidates = focus or onboarded or sorted(w.deps)
    single = candidates[w.pick % len(candidates)]
    t, o = pairs[w.pick % len(pairs)] if pairs else (single, single)
    if w.pr in ("remove-dependencies", "delete-file", "delete-catalog-entry", "add-service", "delete-owner",
                "regroup-unit"):
        t = single
    catalog = root / "catalog"
    app = unit_at(root, t)
    done = w.pr
    if w.pr in ("add-dependency", "move-owner") and t != o:
        w.deps[t] = sorted({*w.deps[t], o})
        write_files(root, {f"catalog/{t}.yaml": service(t, *w.deps[t])})
    elif w.pr == "remove-dependencies":
        w.deps[t] = []
        write_files(root, {f"catalog/{t}.yaml": service(t)})
    elif w.pr == "add-service":
        write_files(root, {"catalog/new.yaml": service("new", t),
                           "apps/new/new.yaml" if w.pick % 2 else "apps/new.yaml":
                               manifest("new", ["Deployment"], False)})
    elif w.pr in ("delete-file", "delete-owner") and app is not None:
        shutil.rmtree(app) if app.is_dir() else app.unlink()
    elif w.pr == "regroup-unit" and app is not None and (app.parent.name.startswith("wave-") or (
            app.parent.name == "grp" and app.parent.parent.name.startswith("wave-"))):
        # a file becomes a directory of its own; a directory goes into the grouping folder, or out of it
        target = root / ("apps/{0}/{0}.yaml" if app.is_file() else "apps/{0}" if app.parent.name == "grp"
                         else "apps/grp/{0}").format(t)
        target.parent.mkdir(parents=True, exist_ok=True)
        app.rename(target)
        done = f"regroup-unit ({'file' if app.name.endswith('.yaml') else 'directory'})"
    elif w.pr == "delete-catalog-entry":
        (catalog / f"{t}.yaml").unlink()
        for n, d in w.deps.items():
            if t in d:
                write_files(root, {f"catalog/{n}.yaml": service(n, *[x for x in d if x != t])})
    elif w.pr == "annotate-and-move" and app is not None and t != o:
        (app / f"{t}.yaml" if app.is_dir() else app).write_text(unit(w, t, True)[""])
        write_files(root, {f"catalog/{t}.yaml": service(t, *w.deps[t], o)})
    elif w.pr == "remove-platform":
        kust = root / "clusters/base/kustomization.yaml"
        kust.write_text(kust.read_text().replace("  - platform.yaml\n", ""))
        (root / "clusters/base/platform.yaml").unlink()
    elif w.pr == "rename-waves":
        config = root / ".wave-bot.yaml"
        config.write_text((config.read_text() if config.exists() else "") + "wave_name: tier-{n}\n")
    elif w.pr == "move-from-platform" and w.in_platform:
        n = w.in_platform
        (root / f"platform/{n}.yaml").rename(root / f"apps/{n}.yaml")
        kust = root / "platform/kustomization.yaml"
        kust.write_text(kust.read_text().replace(f"  - {n}.yaml\n", ""))
    elif w.pr == "prune-on-and-move" and t != o:
        (root / ".wave-bot.yaml").write_text("")  # back to the built-in template: prune: true
        write_files(root, {f"catalog/{t}.yaml": service(t, *w.deps[t], o)})
    elif w.pr == "prune-off-and-move" and t != o:
        # Flux may still reconcile the wave with its old spec (prune: true) and delete what moved.
        (root / ".wave-bot.yaml").write_text(NO_PRUNE.replace("  spec:", "  metadata: {namespace: flux-system}\n"
                                                                         "  spec:"))  # only prune changes
        write_files(root, {f"catalog/{t}.yaml": service(t, *w.deps[t], o)})
    elif w.pr == "empty-waves" and any(w.deps.values()):
        for n in w.deps:  # every service in wave 0: every deeper wave is emptied at once
            w.deps[n] = []
            write_files(root, {f"catalog/{n}.yaml": service(n)})
    elif w.layout.startswith("legacy"):
        done = f"cutover step {1 if w.layout == 'legacy-prune' else 2}"
    else:
        done = "nothing"
    git(root, "add", "-A")
    git(root, "commit", "-q", "--allow-empty", "-m", "pr")
    return done


def wave_depth(deps: dict[str, list[str]], name: str) -> int:
    """The wave of `name`: its longest dependency path."""
    return 1 + max((wave_depth(deps, d) for d in deps[name]), default=-1)


def closure(deps: dict[str, list[str]], start: str) -> set[str]:
    """`start` and every node that depends on it, directly or not."""
    out, grew = {start}, True
    while grew:
        grew = False
        for n, d in deps.items():
            if n not in out and out & set(d):
                out.add(n)
                grew = True
    return out


def files_of(root: Path) -> dict[str, bytes]:
    return {k: v for k, v in snapshot(root).items() if not k.endswith("/")}


def check_findings(outcome: Outcome, findings: list[dict[str, Any]]) -> None:
    named: dict[str, list[dict[str, Any]]] = {}
    for f in findings:
        if f.get("resource"):
            named.setdefault(f["resource"], []).append(f)
    removed = {f["resource"].rsplit("/", 1)[1] for f in findings
               if f["code"] == "kustomization-removed" and f["severity"] == "error"}

    def by_removal(rid: Rid, seen: frozenset[Rid] = frozenset()) -> bool:
        """Whether every way `rid` is deleted comes from a removed Kustomization's finalizer (the error
        on the removed Kustomization counts what its finalizer deletes, and what is in a Namespace it
        deletes), through nested owners."""
        return all(d.how in ("finalizer", "namespace") and d.by in removed and d.owner is None
                   or d.owner is not None and d.owner not in seen and by_removal(d.owner, seen | {rid})
                   for d in outcome.deletions.get(rid, ()))

    def owners(rid: Rid) -> set[Rid]:
        """The nested owners whose deletion deletes `rid`, directly or not."""
        found: set[Rid] = set()
        todo = [d.owner for d in outcome.deletions[rid] if d.owner is not None]
        while todo:
            owner = todo.pop()
            if owner not in found:
                found.add(owner)
                todo += [d.owner for d in outcome.deletions.get(owner, ()) if d.owner is not None]
        return found

    for rid, how in outcome.deletions.items():
        stateful = (rid.group, rid.kind) in STATEFUL
        if by_removal(rid):
            continue
        if rid in outcome.rendered:  # wave-bot cannot see a chart's objects: the release's finding says it
            release = str(outcome.rendered[rid])
            about = [f for f in named.get(release, []) if "uninstalls the release" in f["message"]]
            assert about, f"Flux uninstalls {release}, deleting {rid}, and no finding says so: {findings}"
            if stateful:
                assert any(f["severity"] == "error" for f in about), f"{rid} is lost without an error: {about}"
            continue
        if owners(rid):
            about = [f for o in owners(rid) for f in named.get(str(o), []) if str(rid) in f["message"]]
            assert about or any(by_removal(o) for o in owners(rid)), (
                f"{rid} goes with {owners(rid)} ({how}) and no finding on them names it: {findings}")
            if stateful and about:
                assert any(f["severity"] == "error" for f in about), f"{rid} is lost without an error: {about}"
            continue
        about = named.get(str(rid), [])
        assert about, f"Flux deletes {rid} ({outcome.deletions[rid]}) and no finding names it: {findings}"
        if stateful:
            assert any(f["severity"] == "error" for f in about), f"{rid} is lost without an error: {about}"
    deleted = {str(rid) for rid in outcome.deletions}
    lost_with = {str(o) for rid in outcome.deletions if (rid.group, rid.kind) in STATEFUL
                 for o in {*owners(rid), *([outcome.rendered[rid]] if rid in outcome.rendered else [])}}
    for f in findings:
        if f["severity"] == "error" and "Data is lost: " in f["message"]:  # an owner's cascade
            assert f["resource"] in lost_with, f"the model loses nothing with {f['resource']}, yet: {f}"
        if f["severity"] != "error" or f["code"] not in MOVE_CODES:
            continue
        if f["code"] == "kustomization-removed":
            assert outcome.finalizer_deleted(f["resource"].rsplit("/", 1)[1]), f"nothing is deleted, yet: {f}"
        else:
            assert f["resource"] in deleted, f"the model deletes nothing here, yet: {f}"


PHASES = [Phase.explicit, Phase.reuse, Phase.generate] + ([] if os.environ.get("FLUXSIM_NO_SHRINK") else [Phase.shrink])
COUNTER = {"cases": 0, "deleting": 0}
OWNERS = {"cases": 0, "cascading": 0}
UNITS = {"cases": 0, "deleting": 0}
KINDS_SEEN: dict[str, int] = {}


@settings(max_examples=CASES, deadline=None, derandomize=True, phases=PHASES,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(worlds())
# Always tried: a unit directory whose kustomization's namespace: renames the Namespace it holds,
# moved to a later wave (apps-wave-0 deletes that Namespace, with the claim in it).
@example(World({"s0": [], "s1": []}, {"s0": ["Deployment", "Namespace", "PersistentVolumeClaim"], "s1": ["Deployment"]},
               set(), "waves", False, None, None, "add-dependency", 0, {"policy": "", "hidden": False},
               {"s0": "plain", "s1": "plain"}, {"s0": "dir-kust", "s1": "file"}, {"s0": (True, 1, "file")}))
def test_every_deletion_flux_performs_has_a_finding_and_no_error_is_a_false_alarm(w: World) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_base(w, root)
        base = files_of(root)
        kind = make_pr(w, root)
        code, report = cli(root, "apply", "--base", "main", "--fix-overlays")
        assert code == 0, report
        hide_waves(w, root)
        head = files_of(root)
        outcome = simulate(base, head)
        COUNTER["cases"] += 1
        COUNTER["deleting"] += bool(outcome.deletions)
        KINDS_SEEN[kind] = KINDS_SEEN.get(kind, 0) + 1
        OWNERS["cases"] += any(shape != "plain" for shape in w.shapes.values())
        OWNERS["cascading"] += any(d.owner is not None for ds in outcome.deletions.values() for d in ds)
        directories = any(layout != "file" for layout in w.dirs.values())
        UNITS["cases"] += directories
        UNITS["deleting"] += directories and bool(outcome.deletions)
        for seen in (["(waves unseen)"] if w.extra.get("hidden") else []) + (
                [f"(deletionPolicy {w.extra['policy']})"] if w.extra.get("policy") else []):
            KINDS_SEEN[seen] = KINDS_SEEN.get(seen, 0) + 1
        check_findings(outcome, report["findings"])
        if kind.startswith("cutover step") or kind == "empty-waves":
            next_pull_request(root, kind, head)


def test_a_child_moved_out_of_flux_system_by_its_units_namespace_deletes_nothing_with_it() -> None:
    # Its sourceRef names flux-system without a namespace: Flux looks in s0-ns and never reconciles it
    # (tests/live/ plays it), so deleting it loses nothing; wave-bot says why, on the child.
    w = World({"s0": []}, {"s0": ["Deployment", "Namespace", "PersistentVolumeClaim"]}, set(), "waves", False,
              None, None, "delete-owner", 0, {"policy": "", "hidden": False}, {"s0": "child"}, {"s0": "dir-kust"},
              {"s0": (True, 0, "file")})
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_base(w, root)
        base = files_of(root)
        _, checked = cli(root, "check")
        assert make_pr(w, root) == "delete-owner"
        code, report = cli(root, "apply", "--base", "main", "--fix-overlays")
        assert code == 0, report
        outcome = simulate(base, files_of(root))
    child = "kustomize.toolkit.fluxcd.io/Kustomization s0-ns/s0"
    assert outcome.deleted == {Rid("kustomize.toolkit.fluxcd.io", "Kustomization", "s0-ns", "s0")}
    check_findings(outcome, report["findings"])
    (removed,) = [f for f in report["findings"] if f["resource"] == child]
    assert "never reconciled" in removed["message"] and "Data is lost" not in removed["message"], removed
    (source,) = [f for f in checked["findings"] if f["code"] == "kustomization-source-namespace"]
    assert (source["severity"], source["resource"]) == ("error", "s0-ns/s0")
    assert "namespace: flux-system" in source["fix"]


def next_pull_request(root: Path, kind: str, before: dict[str, bytes]) -> None:
    """The change merged and reconciled, wave-bot runs on the next pull request (no change of its
    own): the cutover moves on to step 2, the emptied waves go, and neither deletes anything unreported."""
    git(root, "add", "-A")
    git(root, "commit", "-q", "--allow-empty", "-m", "merged and reconciled")
    code, report = cli(root, "apply", "--base", "HEAD", "--fix-overlays")
    assert code == 0, report
    after = files_of(root)
    outcome = simulate(before, after)
    check_findings(outcome, report["findings"])
    if kind.startswith("cutover step"):
        assert "clusters/base/apps.yaml" not in after, f"still no step 2 after {kind}: {report['findings']}"
    else:
        empty = sorted(p for p, data in after.items() if p.startswith("apps/wave-") and b"resources: []" in data)
        assert not empty, f"emptied waves kept after they were reconciled: {empty}"


@pytest.fixture(scope="module", autouse=True)
def _report_counts() -> Any:
    yield
    if COUNTER["cases"]:
        print(f"\nfluxsim: {COUNTER['cases']} cases, {COUNTER['deleting']} where Flux deletes something; "
              + ", ".join(f"{k}: {n}" for k, n in sorted(KINDS_SEEN.items()))
              + f"; {OWNERS['cases']} with owners in the waves, {OWNERS['cascading']} where deleting one deletes more"
              + f"; {UNITS['cases']} with directory units, {UNITS['deleting']} of them where Flux deletes something")
