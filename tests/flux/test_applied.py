"""bot.flux.applied: small repositories for each rule of what Flux applies, then the model against kubectl.

The differential test: for every Flux Kustomization the model builds from each real
repository of ../shared/realrepos, its objects (kind, namespace, name) are what `kubectl kustomize`
builds of the same directory, with the kustomization kustomize-controller would write there.

The test writes that kustomization itself, from Flux's documented rules (not from wave-bot's
generator): where the directory has none, every `.yaml`/`.yml` file below it and every
subdirectory holding a kustomization file (not descended); then `spec.targetNamespace` as its
`namespace`, `spec.components` and `spec.patches` appended. kubectl builds it as kustomize-controller
does (no load restriction). Then the test substitutes `${VAR}` itself (the braces forms, with the
values git holds as the model read them) and compares. Where they disagree, kubectl is right.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.flux.applied import FluxKs, FluxModel, read_model
from bot.repo.git import GitTree
from bot.repo.worktree import FsTree
from bot.resid import ResourceId

from conftest import installed_tool
from support import realrepos

# ---- small repositories, one rule each ------------------------------------------------------------

def sync(path: str, name: str = "flux-system") -> str:
    """A `flux bootstrap` sync file: the GitRepository and the root Kustomization of `path`."""
    return f"""---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: flux-system
  namespace: flux-system
spec:
  url: https://example.invalid/repo.git
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: {name}
  namespace: flux-system
spec:
  interval: 10m
  path: ./{path}
  prune: true
  sourceRef:
    kind: GitRepository
    name: flux-system
"""


def ks(name: str, path: str, namespace: str = "flux-system", extra: str = "", source: str = "GitRepository",
       source_name: str = "flux-system") -> str:
    return f"""---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: {name}
  namespace: {namespace}
spec:
  interval: 10m
  path: ./{path}
  prune: true
  sourceRef:
    kind: {source}
    name: {source_name}
    namespace: flux-system
{extra}"""


def cm(name: str, namespace: str = "") -> str:
    ns = f"\n  namespace: {namespace}" if namespace else ""
    return f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}{ns}\n"


NAMESPACE = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: media\n"


def model_of(make_repo: Callable[..., Path], files: dict[str, str]) -> FluxModel:
    repo = make_repo(files)
    return read_model(GitTree(str(repo), "HEAD"))


def ids(flux: FluxKs) -> set[str]:
    return {str(o.id) for o in flux.objects if o.known}


def the(model: FluxModel, name: str, cluster: str | None = None) -> FluxKs:
    found = [k for k in model.kustomizations() if k.name == name and (cluster is None or k.cluster == cluster)]
    assert len(found) == 1, f"{name}: {[(k.cluster, k.key) for k in model.kustomizations()]}"
    return found[0]


def test_a_path_without_kustomization_builds_what_the_controller_generates(make_repo: Callable[..., Path]) -> None:
    model = model_of(make_repo, {
        "clusters/home/flux-system/gotk-sync.yaml": sync("clusters/home"),
        "clusters/home/apps.yaml": ks("apps", "apps"),
        "apps/a.yaml": cm("a", "media"),
        "apps/nested/b.yml": cm("b", "media"),
        "apps/notes.txt": "not yaml, not listed\n",
        "apps/.sops.yaml": "creation_rules: []\n",  # source-controller leaves it out of the artifact
        "apps/whole/kustomization.yaml": "resources: [c.yaml]\n",
        "apps/whole/c.yaml": cm("c", "media"),
        "apps/whole/unlisted.yaml": cm("unlisted", "media"),
    })
    apps = the(model, "apps")
    assert apps.generated and apps.evaluated
    assert ids(apps) == {"ConfigMap media/a", "ConfigMap media/b", "ConfigMap media/c"}
    # the root's own path has no kustomization either: it applies the sync file and apps.yaml
    assert {str(o.id) for o in the(model, "flux-system").objects} >= {
        "kustomize.toolkit.fluxcd.io/Kustomization flux-system/apps",
        "source.toolkit.fluxcd.io/GitRepository flux-system/flux-system"}


def test_two_clusters_are_two_inventories(make_repo: Callable[..., Path]) -> None:
    model = model_of(make_repo, {
        "clusters/a/flux-system/gotk-sync.yaml": sync("clusters/a"),
        "clusters/a/namespace.yaml": NAMESPACE,
        "clusters/b/flux-system/gotk-sync.yaml": sync("clusters/b"),
        "clusters/b/namespace.yaml": NAMESPACE,
    })
    assert [c.name for c in model.clusters] == ["clusters/a", "clusters/b"]
    assert all("clusters/" in c.how and "gotk-sync.yaml" in c.how for c in model.clusters)
    for cluster in model.clusters:
        assert [str(o.id) for _, o in cluster.objects() if o.id.kind == "Namespace"] == ["Namespace media"]
        assert all(k.cluster == cluster.name for k in cluster.kustomizations)


def test_a_flux_instance_names_the_cluster_entry(make_repo: Callable[..., Path]) -> None:
    model = model_of(make_repo, {
        "flux/instance.yaml": """apiVersion: fluxcd.controlplane.io/v1
kind: FluxInstance
metadata:
  name: flux
  namespace: flux-system
spec:
  sync:
    kind: GitRepository
    url: https://example.invalid/repo.git
    ref: refs/heads/main
    path: kubernetes/flux
""",
        "kubernetes/flux/apps.yaml": ks("apps", "kubernetes/apps"),
        "kubernetes/apps/a.yaml": cm("a", "media"),
    })
    (cluster,) = model.clusters
    assert cluster.entry == "kubernetes/flux" and "FluxInstance flux-system/flux" in cluster.how
    assert ids(the(model, "apps")) == {"ConfigMap media/a"}
    assert the(model, "apps").parent == ("flux-system", "flux-system")


def test_without_an_entry_the_kustomizations_no_other_applies_are_the_roots(make_repo: Callable[..., Path]) -> None:
    model = model_of(make_repo, {
        "clusters/dev/cluster-apps.yaml": ks("cluster-apps", "apps/dev"),
        "clusters/prod/cluster-apps.yaml": ks("cluster-apps", "apps/prod"),
        "apps/dev/a.yaml": cm("dev", "media"),
        "apps/prod/a.yaml": cm("prod", "media"),
        "apps/prod/child.yaml": ks("child", "apps/child"),
        "apps/child/c.yaml": cm("child", "media"),
    })
    assert [(c.name, c.roots) for c in model.clusters] == [
        ("clusters/dev", (("flux-system", "cluster-apps"),)), ("clusters/prod", (("flux-system", "cluster-apps"),))]
    assert "no bootstrap sync file" in model.clusters[0].how
    assert ids(the(model, "cluster-apps", "clusters/prod")) == {
        "ConfigMap media/prod", "kustomize.toolkit.fluxcd.io/Kustomization flux-system/child"}
    assert the(model, "child").parent == ("flux-system", "cluster-apps")  # applied by a root: no root itself


def test_the_flux_instance_charts_values_file_names_the_entry(make_repo: Callable[..., Path]) -> None:
    model = model_of(make_repo, {
        "bootstrap/flux-instance/values.yaml": "instance:\n  sync:\n    kind: GitRepository\n"
                                               "    url: https://example.invalid/repo.git\n    path: ./k8s/flux\n",
        "k8s/flux/apps.yaml": ks("apps", "k8s/apps"),
        "k8s/apps/a.yaml": cm("a", "media"),
    })
    (cluster,) = model.clusters
    assert cluster.entry == "k8s/flux" and "values in bootstrap/flux-instance/values.yaml" in cluster.how
    assert ids(the(model, "apps")) == {"ConfigMap media/a"}


def test_another_source_is_external_and_never_built(make_repo: Callable[..., Path]) -> None:
    model = model_of(make_repo, {
        "clusters/home/flux-system/gotk-sync.yaml": sync("clusters/home"),
        "clusters/home/flux.yaml": ks("flux", "", source="OCIRepository", source_name="flux-manifests"),
        "apps/a.yaml": cm("a", "media"),
    })
    flux = the(model, "flux")
    assert flux.external and flux.objects == () and flux.build_failure is None
    assert str(flux.source) == "OCIRepository flux-system/flux-manifests"
    assert not any(o.id.name == "a" for _, o in model.clusters[0].objects())


COMPONENT_PVC = """apiVersion: kustomize.config.k8s.io/v1alpha1
kind: Component
resources: [pvc.yaml]
"""
PVC = """apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: ${VOLSYNC_CLAIM:-${APP}}
spec:
  resources:
    requests:
      storage: 1Gi
"""


def app_ks(app: str, substitute: str | None) -> str:
    post = f"  postBuild:\n    substitute:\n      APP: {app}\n" if substitute is None else substitute
    return ks(app, f"apps/{app}", "media", "  targetNamespace: media\n  components: [../../components/volsync]\n"
              + post)


def test_a_variable_per_child_names_two_objects_and_an_unresolved_one_is_unknown(
        make_repo: Callable[..., Path]) -> None:
    model = model_of(make_repo, {
        "clusters/home/flux-system/gotk-sync.yaml": sync("clusters/home"),
        "clusters/home/apps.yaml": ks("apps", "ks"),
        "ks/plex.yaml": app_ks("plex", None),
        "ks/sonarr.yaml": app_ks("sonarr", None),
        "ks/radarr.yaml": app_ks("radarr", "  postBuild:\n    substituteFrom:\n      - kind: Secret\n"
                                           "        name: not-in-git\n"),
        "components/volsync/kustomization.yaml": COMPONENT_PVC,
        "components/volsync/pvc.yaml": PVC,
        "apps/plex/cm.yaml": cm("plex"),
        "apps/sonarr/cm.yaml": cm("sonarr"),
        "apps/radarr/cm.yaml": cm("radarr"),
    })
    assert "PersistentVolumeClaim media/plex" in ids(the(model, "plex"))
    assert "PersistentVolumeClaim media/sonarr" in ids(the(model, "sonarr"))
    radarr = the(model, "radarr")
    (unknown,) = [o for o in radarr.objects if not o.known]
    # the missing Secret may define VOLSYNC_CLAIM: the claim's name is unknown, not `radarr`
    assert unknown.id.kind == "PersistentVolumeClaim" and unknown.unresolved == ("VOLSYNC_CLAIM",)
    assert radarr.variables is not None and radarr.variables.missing == ("Secret/not-in-git",)


def test_substitute_from_reads_a_config_map_git_holds_and_respects_disabled(make_repo: Callable[..., Path]) -> None:
    model = model_of(make_repo, {
        "clusters/home/flux-system/gotk-sync.yaml": sync("clusters/home"),
        "clusters/home/vars.yaml": cm("cluster-vars", "flux-system") + "data:\n  ENV: prod\n",
        "clusters/home/apps.yaml": ks("apps", "apps", extra="  postBuild:\n    substituteFrom:\n"
                                      "      - kind: ConfigMap\n        name: cluster-vars\n"),
        "apps/a.yaml": cm("a-${ENV}", "media"),
        "apps/b.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b-${ENV}\n  namespace: media\n"
                       "  annotations:\n    kustomize.toolkit.fluxcd.io/substitute: disabled\n",
    })
    apps = the(model, "apps")
    assert "ConfigMap media/a-prod" in ids(apps)
    assert "ConfigMap media/b-${ENV}" in ids(apps)  # not substituted: Flux applies it as written


def test_an_encrypted_secret_defines_a_variable_whose_value_is_unknown(make_repo: Callable[..., Path]) -> None:
    secret = ("apiVersion: v1\nkind: Secret\nmetadata:\n  name: cluster-secrets\n  namespace: flux-system\n"
              "stringData:\n  DOMAIN: ENC[AES256_GCM,data:abc=,type:str]\n  PLAIN: ENC[AES256_GCM,data:def=,type:str]\n"
              "sops:\n  age: []\n")
    model = model_of(make_repo, {
        "clusters/home/flux-system/gotk-sync.yaml": sync("clusters/home"),
        "clusters/home/secret.sops.yaml": secret,
        "clusters/home/apps.yaml": ks("apps", "apps", extra="  postBuild:\n    substitute:\n      PLAIN: clear\n"
                                      "    substituteFrom:\n      - kind: Secret\n        name: cluster-secrets\n"),
        "apps/a.yaml": cm("a-${DOMAIN}", "media"),
        "apps/b.yaml": cm("b-${PLAIN}", "media"),
        "apps/c.yaml": cm("c-${UNSET:=fallback}", "media"),
    })
    apps = the(model, "apps")
    assert apps.variables is not None and apps.variables.unknown == frozenset({"DOMAIN"})
    assert ids(apps) == {"ConfigMap media/b-clear", "ConfigMap media/c-fallback"}  # substitute wins over the Secret
    assert [(o.id.name, o.unresolved) for o in apps.objects if not o.known] == [("a-${DOMAIN}", ("DOMAIN",))]


def test_common_metadata_reaches_every_object(make_repo: Callable[..., Path]) -> None:
    model = model_of(make_repo, {
        "clusters/home/flux-system/gotk-sync.yaml": sync("clusters/home"),
        "clusters/home/apps.yaml": ks("apps", "apps", extra="  commonMetadata:\n    labels:\n"
                                      "      kustomize.toolkit.fluxcd.io/prune: disabled\n"),
        "apps/a.yaml": cm("a", "media"),
    })
    (obj,) = the(model, "apps").objects
    assert obj.prune_disabled and obj.value["metadata"]["labels"] == {"kustomize.toolkit.fluxcd.io/prune": "disabled"}


def test_a_parents_patches_give_the_children_their_spec(make_repo: Callable[..., Path]) -> None:
    model = model_of(make_repo, {
        "clusters/home/flux-system/gotk-sync.yaml": sync("clusters/home"),
        "clusters/home/apps.yaml": ks("apps", "ks", extra="""  patches:
    - patch: |-
        apiVersion: kustomize.toolkit.fluxcd.io/v1
        kind: Kustomization
        metadata:
          name: _
        spec:
          prune: false
          deletionPolicy: Orphan
          decryption:
            provider: sops
      target:
        group: kustomize.toolkit.fluxcd.io
        kind: Kustomization
"""),
        "ks/plex.yaml": ks("plex", "apps/plex", "media"),
        "apps/plex/cm.yaml": cm("plex", "media"),
    })
    plex = the(model, "plex")
    assert (plex.prune, plex.deletion_policy) == (False, "Orphan")
    assert plex.spec["decryption"] == {"provider": "sops"}
    assert the(model, "apps").deletion_policy == "MirrorPrune"


def test_spec_components_add_their_objects(make_repo: Callable[..., Path]) -> None:
    model = model_of(make_repo, {
        "clusters/home/flux-system/gotk-sync.yaml": sync("clusters/home"),
        "clusters/home/plex.yaml": ks("plex", "apps/plex", extra="  components: [../../components/extra]\n"),
        "apps/plex/kustomization.yaml": "resources: [cm.yaml]\n",
        "apps/plex/cm.yaml": cm("plex", "media"),
        "components/extra/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n"
                                               "resources: [extra.yaml]\n",
        "components/extra/extra.yaml": cm("extra", "media"),
    })
    assert ids(the(model, "plex")) == {"ConfigMap media/plex", "ConfigMap media/extra"}


def test_a_missing_path_or_resource_is_a_build_failure_with_no_objects(make_repo: Callable[..., Path]) -> None:
    model = model_of(make_repo, {
        "clusters/home/flux-system/gotk-sync.yaml": sync("clusters/home"),
        "clusters/home/gone.yaml": ks("gone", "apps/renamed"),
        "clusters/home/stale.yaml": ks("stale", "apps/plex"),
        "apps/plex/kustomization.yaml": "resources:\n  - cm.yaml\n  - old-name.yaml\n",
        "apps/plex/cm.yaml": cm("plex", "media"),
    })
    gone, stale = the(model, "gone"), the(model, "stale")
    assert gone.objects == () and gone.build_failure is not None and not gone.build_failure.unsupported
    assert "./apps/renamed" in gone.build_failure.message
    assert (gone.build_failure.path, gone.build_failure.line) == ("clusters/home/gone.yaml", 9)
    assert stale.objects == () and stale.build_failure is not None
    assert "old-name.yaml" in stale.build_failure.message
    assert (stale.build_failure.path, stale.build_failure.line) == ("apps/plex/kustomization.yaml", 3)


def test_an_empty_path_is_a_build_failure(make_repo: Callable[..., Path]) -> None:
    model = model_of(make_repo, {
        "clusters/home/flux-system/gotk-sync.yaml": sync("clusters/home"),
        "clusters/home/empty.yaml": ks("empty", "apps/empty"),
        "apps/empty/README.md": "nothing to apply\n",
    })
    empty = the(model, "empty")
    assert empty.objects == () and empty.build_failure is not None and not empty.build_failure.unsupported
    assert "kustomization.yaml is empty" in empty.build_failure.message


def test_children_recurse_without_a_depth_limit_and_a_cycle_ends(make_repo: Callable[..., Path]) -> None:
    files = {"clusters/home/flux-system/gotk-sync.yaml": sync("clusters/home"),
             "clusters/home/l0.yaml": ks("l0", "levels/0")}
    for level in range(6):
        files[f"levels/{level}/next.yaml"] = ks(f"l{level + 1}", f"levels/{level + 1}")
    files["levels/6/back.yaml"] = ks("l0", "levels/0")  # applies an ancestor again: no loop
    model = model_of(make_repo, files)
    assert the(model, "l6").parent == ("flux-system", "l5")
    assert the(model, "l0").parent == ("flux-system", "flux-system")


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader, reading a plain `=` (YAML 1.1's value key) as the string kubectl prints."""


_Loader.add_constructor("tag:yaml.org,2002:value", lambda loader, node: loader.construct_scalar(node))
KUSTOMIZATION_NAMES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
_IGNORED = {".git", ".github", ".sops.yaml", ".flux.yaml", ".gitlab-ci.yml", ".travis.yml", "cloudbuild.yaml"}


def _has_kustomization(directory: Path) -> bool:
    return any((directory / name).is_file() for name in KUSTOMIZATION_NAMES)


def _listing(directory: Path) -> list[str]:
    """What kustomize-controller's generated kustomization lists, as the Flux docs describe it."""
    out: list[str] = []
    for root, dirs, files in os.walk(directory):
        here = Path(root)
        dirs.sort()
        keep = []
        for name in dirs:
            if name in _IGNORED or (here / name).is_symlink():
                continue
            if _has_kustomization(here / name):
                out.append(str((here / name).relative_to(directory)))
            else:
                keep.append(name)
        dirs[:] = keep
        out += [str((here / f).relative_to(directory)) for f in sorted(files)
                if f.endswith((".yaml", ".yml")) and f not in _IGNORED and not (here / f).is_symlink()]
    return sorted(out)


_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-=])((?:[^{}]|\{[^{}]*\})*))?\}")


def _substitute(text: str, values: dict[str, str]) -> str:
    """`${VAR}`, `${VAR:-d}`, `${VAR:=d}`, `${VAR-d}`, `${VAR=d}` with `values`; unknown ones stay."""
    def one(match: re.Match[str]) -> str:
        name, op, default = match.group(1), match.group(2), match.group(3)
        if name in values and not (op and op.startswith(":") and values[name] == ""):
            return values[name]
        if op is not None:
            return _substitute(default or "", values)
        return match.group(0)

    for _ in range(3):  # nested defaults: `${A:-${B}}`
        text = _VAR.sub(one, text)
    return text


def _kubectl_ids(scratch: Path, ks: FluxKs) -> tuple[set[tuple[str, str, str]], int]:
    """(known identities, how many with an unresolved variable) of kubectl's build of `ks`."""
    assert ks.path is not None
    directory = scratch / ks.path if ks.path else scratch
    existing = next((directory / n for n in KUSTOMIZATION_NAMES if (directory / n).is_file()), None)
    original = existing.read_bytes() if existing is not None else None
    kust: dict[str, Any] = (yaml.safe_load(original) or {}) if original is not None else {
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", "resources": _listing(directory)}
    spec = ks.spec
    if spec.get("targetNamespace"):
        kust["namespace"] = spec["targetNamespace"]
    for key in ("components", "patches"):
        if spec.get(key):
            kust[key] = [*(kust.get(key) or []), *spec[key]]
    target = existing or directory / "kustomization.yaml"
    target.write_text(yaml.safe_dump(kust))
    try:
        result = subprocess.run([str(installed_tool("kubectl")), "kustomize", "--load-restrictor",
                                 "LoadRestrictionsNone", str(directory)], capture_output=True, text=True)
    finally:
        if original is None:
            target.unlink()
        else:
            target.write_bytes(original)
    assert result.returncode == 0, f"kubectl kustomize {ks.path} ({ks.title}): {result.stderr}"
    values = dict(ks.variables.values) if ks.variables is not None else None
    known: set[tuple[str, str, str]] = set()
    unknown = 0
    for doc in yaml.load_all(result.stdout, Loader=_Loader):
        if not isinstance(doc, dict):
            continue
        meta = doc.get("metadata") or {}
        marks = {**(meta.get("labels") or {}), **(meta.get("annotations") or {})}
        ident = (str(doc.get("kind")), str(meta.get("namespace") or ""), str(meta.get("name")))
        if values is not None and marks.get("kustomize.toolkit.fluxcd.io/substitute") != "disabled":
            ident = (ident[0], _substitute(ident[1], values), _substitute(ident[2], values))
        if any("${" in part for part in ident):
            unknown += 1
        else:
            known.add(ident)
    return known, unknown


@pytest.mark.parametrize("archive", realrepos.params(), ids=realrepos.archive_ids())
def test_each_kustomization_builds_what_kubectl_builds(archive: Path | None, tmp_path: Path) -> None:
    repo = realrepos.unpack(realrepos.require(archive), tmp_path / "repo")
    model = read_model(FsTree(str(repo)))
    scratch = tmp_path / "scratch"
    shutil.copytree(repo, scratch, ignore=shutil.ignore_patterns(".git"))
    compared = 0
    differences = []
    for ks in model.kustomizations():
        if not ks.evaluated:
            continue
        expected, expected_unknown = _kubectl_ids(scratch, ks)
        # what the build writes (o.value), not the id the API server gives it (a cluster-scoped custom
        # object loses the namespace kustomize wrote into it: tests/flux/test_scope.py)
        written = [ResourceId.of_object(o.value) for o in ks.objects if o.known]
        got = {(rid.kind, rid.namespace, rid.name) for rid in written}
        got_unknown = sum(1 for o in ks.objects if not o.known)
        if (got, got_unknown) != (expected, expected_unknown):
            differences.append(f"{ks.cluster} {ks.title} (./{ks.path}): only kubectl {sorted(expected - got)}, "
                               f"only wave-bot {sorted(got - expected)}, unknown {expected_unknown} vs {got_unknown}")
        compared += 1
    print(f"{archive.name if archive else ''}: {compared} Flux Kustomizations compared with kubectl")
    assert not differences, "\n".join(differences)
    assert compared >= 1


def test_two_revisions_read_with_shared_plain_blobs_give_the_same_model(make_repo: Callable[..., Path]) -> None:
    """`plan --base` reads the work tree's model and the base's: a base file whose bytes the work tree
    showed to hold no Flux object is not fetched again, and the base's model is the one read alone."""
    repo = make_repo({
        "clusters/home/flux-system/gotk-sync.yaml": sync("clusters/home"),
        "clusters/home/apps.yaml": ks("apps", "apps"),
        "apps/a.yaml": cm("a", "media"),
        "apps/b.yaml": cm("b", "media"),
    })
    (repo / "apps" / "b.yaml").write_text(cm("b", "other"))  # changed in the work tree only
    plain: set[str] = set()
    here = read_model(FsTree(str(repo)), None, plain)
    assert ids(the(here, "apps")) == {"ConfigMap media/a", "ConfigMap other/b"}
    with GitTree(str(repo), "HEAD") as base, GitTree(str(repo), "HEAD") as alone:
        shared = read_model(base, None, plain)
        assert shared == read_model(alone, None)
        assert ids(the(shared, "apps")) == {"ConfigMap media/a", "ConfigMap media/b"}
        assert base.blob_id("apps/a.yaml") in plain and base.blob_id("apps/b.yaml") in plain
