"""A small model of kustomize-controller, the oracle for wave-bot's prune-hazard rules.

Written from Flux's documented behaviour, not from `bot/checks/deletes.py`, so that the two can disagree:

- The cluster entrypoint (the root Kustomization, `flux-system`) builds `clusters/base` and applies
  every Flux Kustomization in it; one that left the build is deleted (the root prunes).
- Each Flux Kustomization builds its `spec.path` (a kustomization.yaml's `resources`, or, without
  one, every YAML file below the path, a subdirectory holding a kustomization.yaml taken as one
  unit), server-side applies every object, labelling it as its own (owner labels), and records the
  objects as its inventory. A kustomization's transformers are applied as kustomize documents them,
  as far as the simulated repositories use them: `patches` (a target by kind and group; strategic
  merge of metadata labels and annotations, or JSON6902 `add` of either map), then `namespace`
  (which also renames every Namespace object to it; cluster-scoped kinds keep none; two objects
  ending with one id fail the build), then `commonLabels` / `labels` and `commonAnnotations`.
- After applying, with `prune: true` it deletes every object of its previous inventory that left its
  build, but only when the live object still carries its owner labels and does not carry
  `kustomize.toolkit.fluxcd.io/prune: disabled` (on the live object: as applied last).
- `dependsOn` is Ready- and revision-gated: a Kustomization reconciles a revision only after every
  Kustomization it depends on has applied that revision. Kustomizations not ordered by `dependsOn`
  race: every interleaving is possible. A dependency that does not exist never becomes ready. So at
  base too: the cluster holds nothing of a Kustomization that waits on one that never became Ready.
- Whether a Kustomization reconciles the new revision with its old spec or the new one is a race
  with the root applying it, so both are explored.
- Deleting a Flux Kustomization runs its finalizer: it prunes its inventory (same label and
  annotation rules) unless `prune: false` or `deletionPolicy: Orphan` (`Delete` and
  `WaitForTermination` always prune). The finalizer races with everything else.
- A Kustomization the root deletes may still reconcile the new revision with its old spec first.
- An object defined by several Kustomizations at once is labelled by whichever applied it last, so
  at the base revision either may own it and its live annotations are that copy's.
- Deleting a Namespace deletes every object in it (the namespace controller ignores Flux's
  annotations).
- Owners inside what a Kustomization applies: a Flux Kustomization it applies is a nested
  Kustomization, and a HelmRelease it applies is a Helm release.
  - A nested Kustomization reconciles (builds its path, applies, prunes with its own spec) right
    after the Kustomization applying it applied it: modelled as one step, since nothing in the
    simulated repositories changes what a nested Kustomization builds between the two.
  - Deleting a nested Kustomization (pruned, by a finalizer, with its namespace) runs its finalizer
    with its live spec, by the same rules as above, so its own nested owners go too.
  - A nested Kustomization new to the cluster (a rename, a namespace change) reconciles on its own
    schedule: before or after the Kustomization that applied it prunes (and so before or after the
    finalizer of the one it replaces runs). Both are explored.
  - A Kustomization's own `spec.patches` patch the objects of its build, so a patch targeting
    `kind: Kustomization` (all of them, or one by `name`) sets the nested Kustomizations' `prune` and
    `deletionPolicy`, later patches over earlier ones: what the child's own file says is overridden.
  - A HelmRelease owns what its chart renders. The simulation has one chart (`render`): a
    Deployment named after the release, and a PersistentVolumeClaim `<name>-data` when
    `values.persistence.enabled` is true without `existingClaim` (what most charts do; this chart
    marks nothing `helm.sh/resource-policy: keep`). Deleting the HelmRelease uninstalls the
    release: helm-controller deletes every object it rendered, whatever Flux's annotations say.

- The entry: the root Kustomization builds `clusters/base` unless told another directory (`entry`, e.g. the
  directory holding a real repository's top Kustomizations), with its kustomization or, without one,
  the kustomization Flux generates; a file it cannot read fails the simulation (AssertionError), as
  a root that applies nothing would make every Kustomization look removed.
- What a Flux Kustomization builds: its `spec.path` (kustomization.yaml, .yml or `Kustomization`, or
  the generated one), with `spec.components` (relative to the path) and `spec.targetNamespace`
  added to that kustomization as the controller does, then postBuild substitution of
  `spec.postBuild.substitute` (`${VAR}`, `${VAR:=default}`; with a `substituteFrom` the sim cannot
  read, a variable it does not set stays as written), except on objects annotated
  `kustomize.toolkit.fluxcd.io/substitute: disabled`.
- kustomize's `components` (a Component's resources are added and its transformers run over
  everything accumulated so far, before the including kustomization's own), and `configMapGenerator`
  / `secretGenerator` (one ConfigMap / Secret of the given name: the content hash suffix is left out,
  the same on both sides of a transition that does not change the generator). Fields that do not
  change what an object is or whether Flux may prune it (`images`, `replicas`, `generatorOptions`,
  `configurations`, `openapi`, `sortOptions`, `buildMetadata`) are ignored; anything else is refused.

YAML is read as YAML 1.2 (ruamel's safe loader), as kustomize's kyaml reads it: `prune: yes` is
the string "yes", which the CRD's boolean field rejects; this model treats only `true` as true.

`simulate(base, head)` returns every object that is deleted in some possible history, with how.
"""
from __future__ import annotations

import copy
import dataclasses
import functools
import itertools
import posixpath
import re
import threading
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ruamel.yaml import YAML, YAMLError
from ruamel.yaml.constructor import SafeConstructor

FLUX_GROUP = "kustomize.toolkit.fluxcd.io"
HELM_GROUP = "helm.toolkit.fluxcd.io"
PRUNE = f"{FLUX_GROUP}/prune"
ENTRY = "clusters/base"
BOOTSTRAP_SOURCE = ("GitRepository", "flux-system", "flux-system")
MAX_HISTORIES = 20_000

class _Constructor(SafeConstructor):
    """YAML 1.2 as kyaml reads it: `=` is a string (YAML 1.1's value tag is no tag here)."""


_Constructor.add_constructor("tag:yaml.org,2002:value", SafeConstructor.construct_yaml_str)
_local = threading.local()


def _readers() -> tuple[YAML, YAML]:
    """This thread's readers, (libyaml's parser, the pure one), with the same resolver and
    constructor: ruamel keeps a parser's state on the instance, and tests/live/ plays several
    scenarios at once."""
    found: tuple[YAML, YAML] | None = getattr(_local, "readers", None)
    if found is None:
        fast, pure = YAML(typ="safe"), YAML(typ="safe", pure=True)
        fast.Constructor = pure.Constructor = _Constructor
        found = _local.readers = (fast, pure)
    return found


def _yaml() -> YAML:
    return _readers()[1]


@dataclass(frozen=True, order=True)
class Rid:
    group: str
    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:  # the `resource` spelling of wave-bot's findings
        kind = f"{self.group}/{self.kind}" if self.group else self.kind
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{kind} {where}"


@dataclass(frozen=True)
class Spec:
    name: str
    path: str
    prune: bool
    deletion_policy: str
    depends_on: tuple[str, ...]
    child_patches: tuple[tuple[str | None, tuple[tuple[str, Any], ...]], ...] = ()
    """Its spec.patches that target Flux Kustomizations: (the target's name or None for all, the
    `prune` / `deletionPolicy` values the patch sets), in order."""
    components: tuple[str, ...] = ()
    """spec.components, relative to spec.path."""
    target_namespace: str = ""
    substitute: tuple[tuple[str, str], ...] = ()
    """spec.postBuild.substitute."""
    substitute_from: bool = False
    """spec.postBuild.substituteFrom is set: variables the sim cannot read may be set there."""
    source: tuple[str, str, str] | None = None
    wait: bool = False
    """spec.wait: it is Ready only once what it applied is; a nested Kustomization among that which
    never becomes Ready holds it not Ready (after its apply and prune), and its dependents wait."""
    """Its sourceRef (kind, namespace, name), the namespace defaulting to the Kustomization's own as
    applied; None: no sourceRef written (the bootstrap source, as the hand-made cases abbreviate)."""

    @property
    def has_source(self) -> bool:
        """Whether its source is there: the bootstrap GitRepository flux-system/flux-system is the one
        source the simulated cluster has (source-controller serves it). Without it the Kustomization
        is not Ready: it applies nothing, prunes nothing, and its finalizer has an empty inventory."""
        return self.source is None or self.source == BOOTSTRAP_SOURCE

    @property
    def finalizer_prunes(self) -> bool:
        if self.deletion_policy in ("Delete", "WaitForTermination"):
            return True
        return self.prune and self.deletion_policy in ("", "MirrorPrune")


@dataclass(frozen=True)
class Manifest:
    rid: Rid
    prune_disabled: bool
    child: Spec | None = None
    """For a Flux Kustomization applied by another: its spec (a nested Kustomization)."""
    chart: tuple[Manifest, ...] = ()
    """For a HelmRelease: what its chart renders."""


Files = Mapping[str, bytes]


@functools.lru_cache(maxsize=4096)
def _parsed(data: bytes) -> tuple[Any, ...]:
    try:  # libyaml refuses some YAML 1.2 (`[a:b]`, an anchor defined again): then the pure parser
        return tuple(d for d in _readers()[0].load_all(data) if d is not None)
    except YAMLError:
        pass
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an anchor defined again (valid YAML 1.2): ruamel warns
        return tuple(d for d in _readers()[1].load_all(data) if d is not None)


def _docs(data: bytes) -> list[Any]:
    """The documents of a file (a fresh copy: builds transform them in place)."""
    return copy.deepcopy(list(_parsed(data)))


def _objects(data: bytes) -> list[dict[str, Any]]:
    """The objects of one file: a `*List`'s items, without local-config documents (kustomize drops them)."""
    out = []
    for doc in _docs(data):
        if not isinstance(doc, dict):
            continue
        items = doc.get("items") if str(doc.get("kind", "")).endswith("List") else None
        for obj in items if isinstance(items, list) else [doc]:
            meta = obj.get("metadata") or {}
            if str((meta.get("annotations") or {}).get("config.kubernetes.io/local-config", "")).lower() == "true":
                continue
            out.append(obj)
    return out


def _manifest(obj: Mapping[str, Any]) -> Manifest:
    meta = obj.get("metadata") or {}
    api = str(obj.get("apiVersion", ""))
    rid = Rid(api.rpartition("/")[0], str(obj.get("kind")), str(meta.get("namespace") or ""), str(meta.get("name")))
    # Flux's prune opt-out is honoured as a label or an annotation, in any case.
    marks = {**(meta.get("labels") or {}), **(meta.get("annotations") or {})}
    disabled = str(marks.get(PRUNE, "")).lower() == "disabled"
    spec = obj.get("spec") or {}
    if rid.group == FLUX_GROUP and rid.kind == "Kustomization":
        return Manifest(rid, disabled, child=_spec(rid.name, spec, rid.namespace))
    if rid.group == HELM_GROUP and rid.kind == "HelmRelease":
        return Manifest(rid, disabled, chart=render(rid, spec))
    return Manifest(rid, disabled)


def _manifests(data: bytes) -> list[Manifest]:
    return [_manifest(obj) for obj in _objects(data)]


def _spec(name: str, spec: Mapping[str, Any], namespace: str) -> Spec:
    patches = []
    for entry in spec.get("patches") or []:
        target = entry.get("target") or {}
        if target.get("kind") != "Kustomization" or target.get("group", FLUX_GROUP) != FLUX_GROUP:
            continue
        body = (_yaml().load(entry["patch"]) or {}).get("spec") or {}
        fields = tuple((k, body[k]) for k in ("prune", "deletionPolicy") if k in body)
        if fields:
            patches.append((target.get("name"), fields))
    post = spec.get("postBuild") or {}
    return Spec(
        name=name,
        path=str(spec.get("path", "")).removeprefix("./") or ".",
        prune=spec.get("prune") is True,
        wait=spec.get("wait") is True,
        deletion_policy=str(spec.get("deletionPolicy") or ""),
        depends_on=tuple(str(d.get("name")) for d in spec.get("dependsOn") or []),
        child_patches=tuple(patches),
        components=tuple(str(c) for c in spec.get("components") or []),
        target_namespace=str(spec.get("targetNamespace") or ""),
        substitute=tuple((str(k), str(v)) for k, v in (post.get("substitute") or {}).items()),
        substitute_from=bool(post.get("substituteFrom")),
        source=_source(spec, namespace),
    )


def _source(spec: Mapping[str, Any], namespace: str) -> tuple[str, str, str] | None:
    ref = spec.get("sourceRef")
    if not isinstance(ref, dict):
        return None
    return (str(ref.get("kind") or ""), str(ref.get("namespace") or namespace or "default"), str(ref.get("name") or ""))


def flux_build(files: Files, spec: Spec) -> list[Manifest] | None:
    """What the Flux Kustomization `spec` applies: its path built with its components and target
    namespace, substituted, its patches for nested Kustomizations applied; None when it fails."""
    directory = posixpath.normpath(spec.path)
    if not _children(files, directory):
        return None
    extra: dict[str, Any] = {}
    if spec.components:
        extra["components"] = list(spec.components)
    if spec.target_namespace:
        extra["namespace"] = spec.target_namespace
    try:
        objects = _build(files, directory, extra)
        values = dict(spec.substitute)
        manifests = [_manifest(_substitute(obj, values, spec.substitute_from)) for obj in objects]
    except (KeyError, ValueError, TypeError, AttributeError):
        return None
    return patched(manifests, spec)


_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?[=-]([^}]*))?\}")


def _substitute(obj: Any, values: Mapping[str, str], more: bool) -> Any:
    """postBuild substitution (`${VAR}`, `${VAR:=default}`) of every string of `obj`."""
    if not values and not more:
        return obj
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    notes = (meta or {}).get("annotations") or {} if isinstance(meta, dict) else {}
    if str(notes.get(f"{FLUX_GROUP}/substitute", "")).lower() == "disabled":
        return obj

    def one(text: str) -> str:
        def var(m: re.Match[str]) -> str:
            if m.group(1) in values:
                return values[m.group(1)]
            if more:
                return m.group(0)  # perhaps set by a substituteFrom source the sim cannot read
            return m.group(2) if m.group(2) is not None else ""
        return _VAR.sub(var, text)

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            return one(value)
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value

    return walk(obj)


def patched(manifests: list[Manifest] | None, spec: Spec) -> list[Manifest] | None:
    """`manifests` (a build of `spec`'s path) with `spec`'s patches applied to the nested Kustomizations."""
    if manifests is None or not spec.child_patches:
        return manifests
    out = []
    for m in manifests:
        child = m.child
        if child is not None:
            for name, fields in spec.child_patches:
                if name is None or name == child.name:
                    values = dict(fields)
                    child = dataclasses.replace(
                        child, prune=values.get("prune", child.prune) is True,
                        deletion_policy=str(values.get("deletionPolicy", child.deletion_policy) or ""))
            m = dataclasses.replace(m, child=child)
        out.append(m)
    return out


def render(release: Rid, spec: Mapping[str, Any]) -> tuple[Manifest, ...]:
    """The simulation's one chart: a Deployment, and a claim when persistence is enabled."""
    namespace = str(spec.get("targetNamespace") or release.namespace)
    out = [Manifest(Rid("apps", "Deployment", namespace, release.name), False)]
    persistence = (spec.get("values") or {}).get("persistence") or {}
    if persistence.get("enabled") is True and not persistence.get("existingClaim"):
        out.append(Manifest(Rid("", "PersistentVolumeClaim", namespace, f"{release.name}-data"), False))
    return tuple(out)


def helm_owner(release: Rid) -> str:
    """The owner name the release's objects are recorded under."""
    return f"helm:{release.namespace}/{release.name}"


def _is_yaml(name: str) -> bool:
    return name.endswith((".yaml", ".yml"))


def _children(files: Files, directory: str) -> set[str]:
    prefix = f"{directory}/"
    return {p[len(prefix):].split("/", 1)[0] for p in files if p.startswith(prefix)}


def build(files: Files, directory: str) -> list[Manifest] | None:
    """What kustomize (or Flux's generated kustomization) makes of `directory`; None when it fails."""
    directory = posixpath.normpath(directory)
    if not _children(files, directory):
        return None  # Flux: the path does not exist
    try:
        return [_manifest(obj) for obj in _build(files, directory)]
    except (KeyError, ValueError, TypeError, AttributeError):
        return None


KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")


def _kustomization(files: Files, directory: str) -> dict[str, Any] | None:
    """`directory`'s own kustomization (None: it has none, and Flux generates one)."""
    for name in KUSTOMIZATION_FILES:
        if f"{directory}/{name}" in files:
            docs = _docs(files[f"{directory}/{name}"])
            if len(docs) > 1 or docs and not isinstance(docs[0], dict):
                raise ValueError(f"{directory}/{name}: not one mapping")
            return docs[0] if docs else {}
    return None


def _build(files: Files, directory: str, extra: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """`directory` built (its kustomization, or the generated one), `extra` added to that
    kustomization as kustomize-controller adds a Flux Kustomization's components and namespace."""
    kust = _kustomization(files, directory)
    out: list[dict[str, Any]] = []
    if kust is None:
        for name in sorted(_children(files, directory)):
            path = f"{directory}/{name}"
            if path in files:
                if _is_yaml(name):
                    out += _objects(files[path])
            else:
                out += _build(files, path)
        if not extra:
            return out
        kust = {}
    else:
        for entry in kust.get("resources") or []:
            out += _resource(files, directory, entry)
    if extra:
        kust = {**kust, **{k: v for k, v in extra.items() if k != "components"},
                "components": [*(kust.get("components") or []), *(extra.get("components") or [])]}
    out += _generated(kust)
    for entry in kust.get("components") or []:
        path = posixpath.normpath(f"{directory}/{entry}")
        component = _kustomization(files, path)
        if component is None:
            raise KeyError(path)  # kustomize fails on a missing component
        for resource in component.get("resources") or []:
            out += _resource(files, path, resource)
        out += _generated(component)
        out = _transform({k: v for k, v in component.items() if k != "components"}, out)
        if component.get("components"):
            raise KeyError(f"the simulation does not model nested components ({path})")
    return _transform(kust, out)


def _resource(files: Files, directory: str, entry: Any) -> list[dict[str, Any]]:
    path = posixpath.normpath(f"{directory}/{entry}")
    if path in files:
        return _objects(files[path])
    if _children(files, path):
        return _build(files, path)
    raise KeyError(path)  # kustomize fails on a missing (or remote) resource


def _generated(kust: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The ConfigMaps and Secrets a kustomization generates (named without the content hash)."""
    out = []
    for key, kind in (("configMapGenerator", "ConfigMap"), ("secretGenerator", "Secret")):
        for gen in kust.get(key) or []:
            meta = {"name": str(gen["name"]), **({"namespace": gen["namespace"]} if gen.get("namespace") else {})}
            out.append({"apiVersion": "v1", "kind": kind, "metadata": meta})
    return out


IDENTITY_NEUTRAL = ("images", "replicas", "generatorOptions", "configurations", "openapi", "sortOptions",
                    "buildMetadata")
"""kustomization fields that change neither what an object is nor whether Flux may prune it."""
CLUSTER_SCOPED = {"Namespace", "PersistentVolume", "ClusterRole", "ClusterRoleBinding", "StorageClass"}


def _transform(kust: Mapping[str, Any], objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The transformers of a kustomization the simulated repositories use, in kustomize's order
    (patches, namespace, labels and annotations); anything else it holds is refused (KeyError)."""
    unknown = set(kust) - {"apiVersion", "kind", "resources", "patches", "namespace", "commonLabels", "labels",
                           "commonAnnotations", "components", "configMapGenerator", "secretGenerator",
                           *IDENTITY_NEUTRAL}
    if unknown:
        raise KeyError(f"the simulation does not model {sorted(unknown)}")
    for entry in kust.get("patches") or []:
        target, patch = entry["target"], _yaml().load(entry["patch"])
        for obj in objects:
            if obj["kind"] == target["kind"] and str(obj["apiVersion"]).rpartition("/")[0] == target.get(
                    "group", str(obj["apiVersion"]).rpartition("/")[0]):
                _patch(obj, patch)
    namespace = kust.get("namespace")
    ids = set()
    for obj in objects:
        meta = obj.setdefault("metadata", {})
        if namespace and obj["kind"] == "Namespace":
            meta["name"] = namespace  # kustomize's namespace field specs rename a Namespace
        elif namespace and obj["kind"] not in CLUSTER_SCOPED:
            meta["namespace"] = namespace
        rid = (obj["apiVersion"], obj["kind"], meta.get("namespace") or "default", meta["name"])
        if rid in ids:
            raise ValueError(f"kustomize: ID conflict on {rid}")
        ids.add(rid)
    labels = {**(kust.get("commonLabels") or {}),
              **{k: v for item in kust.get("labels") or [] for k, v in item["pairs"].items()}}
    for obj in objects:
        for key, values in (("labels", labels), ("annotations", kust.get("commonAnnotations") or {})):
            if values:
                obj["metadata"][key] = {**(obj["metadata"].get(key) or {}), **values}
    return objects


def _patch(obj: dict[str, Any], patch: Any) -> None:
    """A strategic-merge patch of metadata labels and annotations (merged), or JSON6902 `add`s of
    a whole `/metadata/labels` or `/metadata/annotations` map (replaced): the patches generated."""
    meta = obj.setdefault("metadata", {})
    if isinstance(patch, list):
        for op in patch:
            key = op["path"].removeprefix("/metadata/")
            if op["op"] != "add" or key not in ("labels", "annotations"):
                raise KeyError(f"the simulation does not model {op}")
            meta[key] = dict(op["value"])
        return
    for key in ("labels", "annotations"):
        if (patch.get("metadata") or {}).get(key):
            meta[key] = {**(meta.get(key) or {}), **patch["metadata"][key]}


def kustomizations(files: Files, entry: str = ENTRY) -> dict[str, Spec]:
    """The Flux Kustomizations the root applies (what `entry`, `clusters/base` by default, builds)."""
    out = {}
    for m, doc in _flux_docs(files, entry):
        out[m.rid.name] = _spec(m.rid.name, doc.get("spec") or {}, m.rid.namespace or "flux-system")
    return out


def _flux_docs(files: Files, entry: str = ENTRY) -> Iterator[tuple[Manifest, dict[str, Any]]]:
    kfile = f"{entry}/kustomization.yaml"
    if kfile not in files:
        if _children(files, entry):  # no kustomization: the one Flux generates
            try:
                built = _build(files, entry)
            except (KeyError, ValueError, TypeError, AttributeError) as exc:
                raise AssertionError(f"the simulation cannot read the entry {entry}: {exc!r}") from exc
            for doc in built:
                if doc.get("kind") == "Kustomization" and str(doc.get("apiVersion", "")).startswith(FLUX_GROUP + "/"):
                    meta = doc.get("metadata") or {}
                    yield Manifest(Rid(FLUX_GROUP, "Kustomization", str(meta.get("namespace") or ""),
                                       str(meta.get("name"))), False), doc
        return
    (kust,) = _docs(files[kfile])
    for entry_file in kust.get("resources") or []:
        path = posixpath.normpath(f"{entry}/{entry_file}")
        if path not in files:
            continue
        for doc in _docs(files[path]):
            if isinstance(doc, dict) and doc.get("kind") == "Kustomization" and \
                    str(doc.get("apiVersion", "")).startswith(FLUX_GROUP + "/"):
                meta = doc.get("metadata") or {}
                yield Manifest(Rid(FLUX_GROUP, "Kustomization", str(meta.get("namespace") or ""),
                                   str(meta.get("name"))), False), doc


@dataclass
class Live:
    owner: str
    prune_disabled: bool


@dataclass(frozen=True)
class Deletion:
    rid: Rid
    by: str
    """The Kustomization whose garbage collection (or finalizer, or namespace) deleted it."""
    how: str
    """'pruned', 'finalizer', 'namespace' or 'uninstall'."""
    recreated: bool = False
    owner: Rid | None = None
    """The nested owner whose deletion deleted it (its finalizer, its uninstall, or a namespace it
    deleted); None when a Kustomization the root applies did."""


@dataclass
class Outcome:
    deletions: dict[Rid, set[Deletion]] = field(default_factory=dict)
    histories: int = 0
    rendered: dict[Rid, Rid] = field(default_factory=dict)
    """Object -> the HelmRelease whose chart rendered it (at base)."""
    always: set[Rid] | None = None
    """What every history deletes (None before the first): what real Flux must delete, whichever
    history it takes (tests/live/ holds it to that)."""

    @property
    def deleted(self) -> set[Rid]:
        return set(self.deletions)

    def finalizer_deleted(self, name: str) -> bool:
        return any(d.how == "finalizer" and d.by == name for ds in self.deletions.values() for d in ds)


def _orders(actors: list[str], after: Mapping[str, set[str]]) -> Iterator[list[str]]:
    """Every order of `actors` in which each actor comes after the ones in `after[actor]`."""
    if not actors:
        yield []
        return
    for i, actor in enumerate(actors):
        rest = actors[:i] + actors[i + 1:]
        if after.get(actor, set()) & set(rest):
            continue
        for tail in _orders(rest, after):
            yield [actor, *tail]


def root_fails(files: Files, entry: str = ENTRY) -> bool:
    """Whether the root's apply fails: a Flux Kustomization in its build has no metadata.namespace
    (and the entrypoint's kustomization sets none), which the API server refuses ("namespace not
    specified"), so the root applies nothing of the revision and prunes nothing."""
    kfile = f"{entry}/kustomization.yaml"
    if kfile in files and ((_docs(files[kfile]) or [{}])[0] or {}).get("namespace"):
        return False
    return any(not m.rid.namespace for m, _ in _flux_docs(files, entry))


def holds(files: Files, spec: Spec, manifests: list[Manifest]) -> bool:
    """Whether `spec`, having applied `manifests` (its build of `files`), stays not Ready: it waits
    on what it applied (`wait: true`) and a nested Kustomization among that never becomes Ready (its
    source is not there, or its build fails): the health check times out."""
    return spec.wait and any(m.child is not None and (not m.child.has_source or flux_build(files, m.child) is None)
                             for m in manifests)


def applied_at(files: Files, ks: Mapping[str, Spec]) -> set[str]:
    """The Kustomizations of `ks` that apply `files` on an empty cluster: each whose dependencies all
    became Ready (applied, and not held: `holds`). One whose source is missing or whose build fails
    applies nothing and is not Ready; whoever depends on it (directly or not) never applies."""
    applied: set[str] = set()
    ready: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, spec in sorted(ks.items()):
            if name in applied or not all(d in ready for d in spec.depends_on):
                continue
            applied.add(name)
            changed = True
            found = flux_build(files, spec) if spec.has_source else None
            if found is not None and not holds(files, spec, found):
                ready.add(name)
    return applied


def simulate(base: Files, head: Files, entry: str = ENTRY) -> Outcome:
    """Every object deleted in some history of Flux reconciling `head` over a cluster at `base`
    (`entry`: the directory the cluster's root Kustomization builds).

    The cluster at `base` is what Flux makes of `base` on an empty cluster: nothing when the root's
    apply fails there (`root_fails`), and nothing of a Kustomization that never got to apply there
    (`applied_at`: one waiting on a dependency that never became Ready). When it fails at `head`,
    the root applies no Kustomization of `head` and deletes none; the ones the cluster has reconcile
    `head` with the specs they have."""
    base_ks = {} if root_fails(base, entry) else kustomizations(base, entry)
    head_ks = base_ks if root_fails(head, entry) else kustomizations(head, entry)
    at_base = applied_at(base, base_ks)
    base_builds = {name: flux_build(base, spec) or [] if name in at_base else [] for name, spec in base_ks.items()}
    for owner, m in list(_nested(base, [m for ms in base_builds.values() for m in ms])):
        base_builds.setdefault(owner, []).append(m)
    # Who may own each object at base: every Kustomization defining it (the last applier wins).
    definers: dict[Rid, list[tuple[str, Manifest]]] = {}
    for name, manifests in sorted(base_builds.items()):
        for m in manifests:
            definers.setdefault(m.rid, []).append((name, m))
    contested = [rid for rid, found in definers.items() if len({n for n, _ in found}) > 1]
    removed = sorted(set(base_ks) - set(head_ks))
    # Kustomizations whose dependencies never become ready at head never reconcile.
    runnable: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, spec in head_ks.items():
            if name not in runnable and all(d in runnable for d in spec.depends_on):
                runnable.add(name)
                changed = True
    after = {name: set(head_ks[name].depends_on) for name in runnable}
    # Both specs for a Kustomization the change edits (the root and the Kustomization itself race).
    spec_choices = [
        [(name, s) for s in {base_ks[name], head_ks[name]}] if name in base_ks else [(name, head_ks[name])]
        for name in sorted(runnable)
    ]
    outcome = Outcome(rendered={r.rid: m.rid for ms in base_builds.values() for m in ms for r in m.chart})
    owner_choices = [[(rid, n, m) for n, m in definers[rid]] for rid in contested]
    # A removed Kustomization may still reconcile the new revision (with its old spec) before the
    # root deletes it, or not; its finalizer runs after that.
    variants = []
    for late in itertools.product((False, True), repeat=len(removed)):
        extra = [name for name, runs in zip(removed, late, strict=True) if runs]
        if any(set(base_ks[n].depends_on) - runnable - set(extra) for n in extra):
            continue
        order_after = {**after, **{n: set(base_ks[n].depends_on) for n in extra},
                       **{f"finalize:{n}": {n} for n in extra}}
        variants.append(([*sorted(runnable), *extra, *(f"finalize:{n}" for n in removed)], order_after, extra))
    for owners in itertools.product(*owner_choices):
        for specs, (actors, order_after, extra) in itertools.product(itertools.product(*spec_choices), variants):
            chosen = {**dict(specs), **{n: base_ks[n] for n in extra}}
            for order, late_new in itertools.product(_orders(actors, order_after), (False, True)):
                outcome.histories += 1
                if outcome.histories > MAX_HISTORIES:
                    raise AssertionError("too many histories to explore; make the case smaller")
                _history(base, head, base_ks, base_builds, definers, dict(((r, (n, m)) for r, n, m in owners)),
                         chosen, order, outcome, late_new)
    return outcome


def _nested(files: Files, manifests: list[Manifest], seen: tuple[str, ...] = ()) -> Iterator[tuple[str, Manifest]]:
    """(owner, object) for everything the nested owners among `manifests` apply, recursively."""
    for m in manifests:
        if m.child is not None and m.child.name not in seen and m.child.has_source:
            found = flux_build(files, m.child) or []
            yield from ((m.child.name, c) for c in found)
            yield from _nested(files, found, (*seen, m.child.name))
        yield from ((helm_owner(m.rid), r) for r in m.chart)


def _history(
    base: Files, head: Files, base_ks: Mapping[str, Spec], base_builds: Mapping[str, list[Manifest]],
    definers: Mapping[Rid, list[tuple[str, Manifest]]], owners: Mapping[Rid, tuple[str, Manifest]],
    specs: Mapping[str, Spec], order: list[str], outcome: Outcome, late_new: bool = False,
) -> None:
    live: dict[Rid, Live] = {}
    for rid, found in definers.items():
        name, m = owners.get(rid, found[0])
        live[rid] = Live(name, m.prune_disabled)
    inventory = {name: {m.rid for m in ms} for name, ms in base_builds.items()}
    deleted: dict[Rid, Deletion] = {}
    # The live spec of every nested Kustomization (its finalizer runs with it).
    nested_specs = {m.rid: m.child for ms in base_builds.values() for m in ms if m.child is not None}

    def delete(rid: Rid, by: str, how: str, owner: Rid | None = None) -> None:
        live.pop(rid, None)
        deleted[rid] = Deletion(rid, by, how, owner=owner)
        if rid.group == "" and rid.kind == "Namespace":
            for other in [r for r in live if r.namespace == rid.name]:
                if other in live:
                    delete(other, by, "namespace", owner)
        spec = nested_specs.pop(rid, None)
        if spec is not None and spec.finalizer_prunes:
            collect(spec.name, inventory.get(spec.name, set()), "finalizer", rid)
        if rid.group == HELM_GROUP and rid.kind == "HelmRelease":  # helm-controller uninstalls
            name = helm_owner(rid)
            for r in sorted(inventory.get(name, set())):
                if r in live and live[r].owner == name:
                    delete(r, name, "uninstall", rid)

    def collect(name: str, stale: set[Rid], how: str, owner: Rid | None = None) -> None:
        for rid in sorted(stale):
            obj = live.get(rid)
            if obj is not None and obj.owner == name and not obj.prune_disabled:
                delete(rid, name, how, owner)

    deferred: list[tuple[Manifest, int]] = []

    def apply(m: Manifest, owner: str, depth: int = 0, late: bool = False) -> None:
        if not late:
            live[m.rid] = Live(owner, m.prune_disabled)
            if m.rid in deleted:
                deleted[m.rid] = dataclasses.replace(deleted[m.rid], recreated=True)
        if m.child is not None and depth < 8 and late_new and not late and m.child.name not in inventory:
            nested_specs[m.rid] = m.child
            deferred.append((m, depth))  # new to the cluster: reconciles after its applier prunes
            return
        if m.child is not None and depth < 8:  # a nested Kustomization reconciles in the same step
            nested_specs[m.rid] = m.child
            found = flux_build(head, m.child) if m.child.has_source else None
            if found is not None:
                for c in found:
                    apply(c, m.child.name, depth + 1)
                now = {c.rid for c in found}
                if m.child.prune:
                    collect(m.child.name, inventory.get(m.child.name, set()) - now, "pruned", m.rid)
                inventory[m.child.name] = now
        if m.chart:  # helm-controller installs (or upgrades) the release
            for r in m.chart:
                apply(r, helm_owner(m.rid), depth + 1)
            inventory[helm_owner(m.rid)] = {r.rid for r in m.chart}

    failed: set[str] = set()
    for actor in order:
        if actor.startswith("finalize:"):
            name = actor.removeprefix("finalize:")
            if base_ks[name].finalizer_prunes:
                collect(name, inventory.get(name, set()), "finalizer")
            continue
        spec = specs[actor]
        found = flux_build(head, spec) if spec.has_source else None
        if found is None or set(spec.depends_on) & failed:
            failed.add(actor)  # not Ready: applies nothing, prunes nothing, blocks its dependents
            continue
        manifests = found
        for m in manifests:
            apply(m, actor)
        now = {m.rid for m in manifests}
        if spec.prune:
            collect(actor, inventory.get(actor, set()) - now, "pruned")
        inventory[actor] = now
        while deferred:
            m, depth = deferred.pop(0)
            apply(m, actor, depth, late=True)
        if holds(head, spec, manifests):
            failed.add(actor)  # its health check times out on the child: applied and pruned, never Ready
    for rid, d in deleted.items():
        outcome.deletions.setdefault(rid, set()).add(d)
    outcome.always = set(deleted) if outcome.always is None else outcome.always & set(deleted)
