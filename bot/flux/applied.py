"""The one model of what Flux applies: every cluster of a repository, each Flux Kustomization it
reconciles, and the objects each one's build gives, read from a `Tree` as kustomize-controller reads it.

1. Clusters. Each cluster has one entry, its root Kustomization:
   - a bootstrap sync file (`flux bootstrap`'s `gotk-sync.yaml`, or any file holding a Flux
     Kustomization together with the GitRepository it takes as its source): that Kustomization; a
     `gotk-sync.yaml` holding no Kustomization names its path by its place (`<path>/flux-system/`);
   - a FluxInstance's `spec.sync`, or the flux-instance chart's `instance.sync` in a HelmRelease's
     values or in a values file: the `flux-system` Kustomization the Flux Operator makes for `sync.path`;
   - else the configured or discovered environment overlays (`overlays:`, `clusters/<env>`); a
     repository of the configured layout (it has `base_dir`) without one has no cluster to read;
   - else one cluster per directory holding Flux Kustomizations no other Kustomization applies.
   Entries with the same path are one cluster. Objects of two clusters are two objects.
2. Each Flux Kustomization's build as the controller makes it: `spec.path` with its own
   kustomization or the generated one (`bot.flux.generator`), then `spec.components`,
   `spec.patches` and `spec.targetNamespace` (appended to that kustomization by the controller),
   `spec.commonMetadata`, then postBuild substitution (`bot.flux.substitute`) with the values git
   holds. An unresolved variable in an object's kind, namespace or name makes its identity
   unknown (`Applied.known`): two unknown identities are never the same object.
3. The Flux Kustomizations a build outputs are its children, with the spec the parent's build
   gives them (its `spec.patches` included). Recursion is breadth first and cycle-safe, unbounded.
4. A Kustomization whose source is not the cluster's own GitRepository is external: never built
   from this tree.
5. A build kustomize would refuse is a `BuildFailure` (the controller applies and prunes nothing):
   no object is concluded from it. One wave-bot cannot evaluate is a failure marked `unsupported`:
   its objects are unknown, not absent.
"""
from __future__ import annotations

import base64
import binascii
import dataclasses
import json
import posixpath
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from bot.config import Config
from bot.errors import WaveBotError
from bot.flux.generator import GeneratedTree, generated_resources, has_kustomization
from bot.flux.scope import Scopes
from bot.flux.substitute import Variables, disabled, source_data, substitute_text, substitute_value
from bot.flux.vocabulary import (
    BOOTSTRAP_DIR,
    BOOTSTRAP_FILE,
    BOOTSTRAP_NAME,
    DEFAULT_DELETION_POLICY,
    DEFAULT_NAMESPACE,
    FLUX_API,
    GIT_REPOSITORY,
    PRUNE_DISABLED,
    PRUNE_KEY,
    is_encrypted_secret,
    is_flux_instance,
    is_flux_kustomization,
    is_git_repository,
    is_helm_release,
)
from bot.kustomize.build import Build, Object, build
from bot.kustomize.files import Additions
from bot.kustomize.spec import BuildError, Unsupported
from bot.naming import is_yaml_name
from bot.repo.tree import Tree, blob_id, known_blob_id, walk
from bot.resid import ResourceId
from bot.yamlio import documents as yamlio

Key = tuple[str, str]
"""A Flux Kustomization's (namespace, name)."""

# Flux spec fields that rename objects and that the evaluator does not follow
_UNEVALUATED = ("namePrefix", "nameSuffix")


@dataclass(frozen=True)
class Applied:
    """One object a Flux Kustomization applies."""

    id: ResourceId
    """Its identity after the build and substitution (an unresolved `${VAR}` stays as written)."""
    known: bool
    """False when an unresolved variable is in its kind, namespace or name: then it is no object
    wave-bot can name, and never the same object as another."""
    path: str
    """The file it is written in (for a generated ConfigMap or Secret: the kustomization generating it)."""
    value: Mapping[str, Any]
    """The object as applied (patched, substituted, with commonMetadata)."""
    prune_disabled: bool
    """Labelled or annotated `kustomize.toolkit.fluxcd.io/prune: disabled`: Flux never deletes it."""
    unresolved: tuple[str, ...] = ()
    """The variables substitution left unresolved anywhere in it."""
    document: yamlio.Document | None = field(default=None, compare=False, repr=False)

    @property
    def line(self) -> int:
        """The line its YAML document starts on (0 when it was not read from a document); found on
        first use, as most objects are never reported."""
        return self.document.info.start_line if self.document is not None else 0

    @property
    def identity(self) -> ResourceId | None:
        """Its id when known; None when an unresolved variable hides it (never equal to another)."""
        return self.id if self.known else None

    @property
    def info(self) -> yamlio.DocInfo | None:
        """Where its keys are written (None when the evaluator did not read it from a file)."""
        return self.document.info if self.document is not None else None


@dataclass(frozen=True)
class BuildFailure:
    """Why a Flux Kustomization's build gives nothing wave-bot can use."""

    message: str
    path: str | None
    """The file (or directory) at fault: the kustomization naming a missing path, the Flux Kustomization."""
    line: int | None
    hint: str | None = None
    unsupported: bool = False
    """True: kustomize may well build it, wave-bot cannot evaluate it (its objects are unknown).
    False: kustomize-controller fails the build, and applies and prunes nothing."""
    refused: ResourceId | None = None
    """For an apply failure (`FluxKs.apply_failure`): the object the controller or the API server refuses."""
    undecrypted: bool = False
    """For an apply failure: the refused object is a Secret still SOPS-encrypted (else: it has no namespace)."""

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.path and self.line else (self.path or "")
        return f"{where}: {self.message}" if where else self.message


@dataclass(frozen=True)
class SourceRef:
    kind: str
    name: str
    namespace: str

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"


@dataclass(frozen=True)
class DependsOn:
    name: str
    namespace: str
    """Effective: the dependent's own namespace when not written."""
    written_namespace: str | None
    line: int
    ready_expr: str | None = None

    @property
    def key(self) -> Key:
        return (self.namespace, self.name)


@dataclass(frozen=True)
class FluxKs:
    """One Flux Kustomization a cluster reconciles, with its effective spec and what it applies."""

    key: Key
    cluster: str
    parent: Key | None
    """The Kustomization whose build applies it (None for the cluster's root)."""
    file: str
    line: int
    spec: Mapping[str, Any]
    """Its spec as its parent's build outputs it (the parent's spec.patches and substitution applied)."""
    source: SourceRef
    path: str | None
    """spec.path as a repository directory ('' for the root); None when it leaves the repository."""
    prune: bool
    deletion_policy: str
    wait: bool
    """spec.wait: true (dependents wait until everything it applied is Ready)."""
    health_checks: tuple[Mapping[str, Any], ...]
    depends_on: tuple[DependsOn, ...]
    objects: tuple[Applied, ...]
    build_failure: BuildFailure | None
    external: bool
    """Its source is not the cluster's own GitRepository: never built from this tree."""
    generated: bool = False
    """spec.path has no kustomization file: kustomize-controller generated one."""
    variables: Variables | None = None
    """What postBuild substitutes (None: it substitutes nothing)."""
    value: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)
    """The whole object as applied."""
    document: yamlio.Document | None = field(default=None, compare=False, repr=False)
    suspend: bool = False
    """spec.suspend: true: the controller does not reconcile it (nothing applied or pruned until resumed)."""
    synthesized: bool = False
    """Made by `flux bootstrap` or the Flux Operator for a sync path (no file holds it as an object)."""
    built: tuple[Object, ...] = field(default=(), compare=False, repr=False)
    """The build's objects before postBuild substitution and commonMetadata (what the files say)."""
    apply_failure: BuildFailure | None = None
    """The build succeeds but kustomize-controller's apply of it fails (`_apply_failure`): it prunes
    nothing of this revision, and creates none of the Kustomizations only this revision lists."""
    refused: tuple[ResourceId, ...] = ()
    """With `apply_failure`: every object the apply refuses (none of them ever reaches the cluster)."""

    @property
    def namespace(self) -> str:
        return self.key[0]

    @property
    def name(self) -> str:
        return self.key[1]

    @property
    def title(self) -> str:
        return self.name if self.namespace == DEFAULT_NAMESPACE else f"{self.namespace}/{self.name}"

    @property
    def evaluated(self) -> bool:
        """Built from this tree and its objects known."""
        return not self.external and self.build_failure is None

    @property
    def info(self) -> yamlio.DocInfo | None:
        return self.document.info if self.document is not None and not self.synthesized else None

    def line_of(self, *keys: str | int) -> int:
        """The line of a key of its document (or its nearest written parent), else its own line."""
        info = self.info
        return info.line(tuple(keys)) if info is not None else self.line

    def children(self) -> list[Applied]:
        return [o for o in self.objects if o.known and is_flux_kustomization(o.value)]


@dataclass(frozen=True)
class Cluster:
    name: str
    entry: str
    """The root's path (the bootstrap path); '' for the repository root."""
    how: str
    """How the entry was found, for the report."""
    root: Key | None
    kustomizations: tuple[FluxKs, ...]
    source: SourceRef
    """The cluster's own GitRepository: Kustomizations taking it are built from this tree."""
    roots: tuple[Key, ...] = ()
    """Its roots (one, but for a cluster found as the Kustomizations no other applies)."""

    def get(self, key: Key) -> FluxKs | None:
        return next((k for k in self.kustomizations if k.key == key), None)

    def children(self, key: Key) -> list[FluxKs]:
        return [k for k in self.kustomizations if k.parent == key]

    def objects(self) -> Iterator[tuple[FluxKs, Applied]]:
        """Every object the cluster applies, with the Kustomization applying it."""
        for ks in self.kustomizations:
            for obj in ks.objects:
                yield ks, obj


@dataclass(frozen=True)
class FluxModel:
    clusters: tuple[Cluster, ...]
    yaml_files: tuple[str, ...] = ()
    """Every YAML file of the tree the model was read from, in walk order: the one walk of that tree,
    for a consumer looking for files by name (the helmfiles a bootstrap installs) without walking again."""

    def kustomizations(self) -> Iterator[FluxKs]:
        for cluster in self.clusters:
            yield from cluster.kustomizations

    def cluster(self, name: str) -> Cluster | None:
        return next((c for c in self.clusters if c.name == name), None)

    def describe(self) -> list[str]:
        """One line per cluster: its name, how it was found, how many Kustomizations it reconciles."""
        return [f"{c.name}: {c.how}; {len(c.kustomizations)} Flux Kustomizations" for c in self.clusters]


def read_model(tree: Tree, config: Config | None = None, plain: set[str] | None = None) -> FluxModel:
    """What Flux applies from `tree`, cluster by cluster.

    `plain`: blob ids of files known to hold no Flux object the model starts from, shared by the
    reads of two revisions of one repository (the work tree's and the base's): a base file whose
    blob the other read found plain is not fetched again. Filled in as this read goes."""
    return _Reader(tree, config or Config(), plain).model()


# ---- reading ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Found:
    file: str
    document: yamlio.Document

    @property
    def value(self) -> dict[str, Any]:
        value = self.document.value
        assert isinstance(value, dict)
        return value


@dataclass
class _Entry:
    path: str
    how: list[str]
    roots: list[_Node]
    source: SourceRef


@dataclass(frozen=True)
class _Node:
    value: Mapping[str, Any]
    file: str
    line: int
    document: yamlio.Document | None
    parent: Key | None
    synthesized: bool = False


def _may_hold_entry(data: bytes) -> bool:
    """Whether a file may hold what `_entries` reads: a Flux Kustomization or GitRepository, a
    FluxInstance, or a HelmRelease with the flux-instance chart's `instance.sync` values."""
    return (b"kustomize.toolkit.fluxcd.io" in data or b"GitRepository" in data
            or b"fluxcd.controlplane.io" in data or (b"instance" in data and b"sync" in data))


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _meta(value: Mapping[str, Any]) -> dict[str, Any]:
    return _mapping(value.get("metadata"))


def ks_key(value: Mapping[str, Any]) -> Key:
    """A Flux Kustomization's (namespace, name); a Kustomization written without a namespace is taken
    in flux-system, where Flux's own Kustomizations live."""
    meta = _meta(value)
    return (str(meta.get("namespace") or DEFAULT_NAMESPACE), str(meta.get("name") or ""))


def source_ref(value: Mapping[str, Any]) -> SourceRef:
    ref = _mapping(_mapping(value.get("spec")).get("sourceRef"))
    namespace = ref.get("namespace") or ks_key(value)[0]
    return SourceRef(str(ref.get("kind") or ""), str(ref.get("name") or ""), str(namespace))


def spec_path(value: Any) -> str | None:
    """spec.path as a repo-relative directory ('' for the root); None when it leaves the repository."""
    if value is None:
        return ""
    if not isinstance(value, str):
        return None
    joined = posixpath.normpath(value.lstrip("/")) if value.strip() else "."
    if joined == ".." or joined.startswith("../"):
        return None
    return "" if joined == "." else joined


def _synthesized_root(path: str, source: SourceRef, name: str = BOOTSTRAP_NAME) -> dict[str, Any]:
    """The root Kustomization `flux bootstrap` or the Flux Operator makes for a sync path."""
    return {"apiVersion": FLUX_API, "kind": "Kustomization",
            "metadata": {"name": name, "namespace": source.namespace},
            "spec": {"path": f"./{path}", "prune": True, "interval": "10m",
                     "sourceRef": {"kind": source.kind, "name": source.name}}}


_SYNC_PATH: dict[str, tuple[str, ...]] = {"FluxInstance": ("spec", "sync", "path"),
                                          "HelmRelease": ("spec", "values", "instance", "sync", "path")}
_BLANK = yamlio.DocInfo(start_line=1, lines={}, scalars={}, is_mapping=True, empty=False)


class _Reader:
    def __init__(self, tree: Tree, config: Config, plain: set[str] | None = None) -> None:
        self.tree = tree
        self.config = config
        self.plain = plain
        self._builds: dict[tuple[str, str], tuple[Build | WaveBotError, bool]] = {}
        self.yaml_files: list[str] = []
        self.found = self._scan()

    # -- the Flux objects of the tree

    def _scan(self) -> list[_Found]:
        """The Flux objects of the tree, in one walk that also lists its YAML files (`yaml_files`)."""
        out = []
        for path, entry in walk(self.tree, ""):
            if entry.kind != "file" or not is_yaml_name(entry.name):
                continue
            self.yaml_files.append(path)
            known = known_blob_id(self.tree, path) if self.plain is not None else None
            if known is not None and self.plain is not None and known in self.plain:
                continue  # the same bytes were read plain in the other revision
            try:
                data = self.tree.read(path)
                if not _may_hold_entry(data):
                    if self.plain is not None:
                        self.plain.add(known or blob_id(data))
                    continue  # cheap: most files hold no Kustomization, GitRepository or sync
                docs = yamlio.load(data, path)
            except WaveBotError:
                continue  # a build that reads it reports it
            out += [_Found(path, d) for d in docs if isinstance(d.value, dict)]
        return out

    # -- clusters

    def model(self) -> FluxModel:
        entries = self._entries()
        clusters = []
        names = _cluster_names([e.path for e in entries])
        for entry in entries:
            # substituteFrom names ConfigMaps and Secrets the cluster applies: read them all, then walk
            # again with them (only when some Kustomization substitutes from one)
            kustomizations = self._walk(entry, names[entry.path], None)
            if any(k.variables is not None and k.variables.missing for k in kustomizations):
                index = {(o.id.kind, o.id.namespace, o.id.name): o.value for ks in kustomizations for o in ks.objects
                         if o.known and o.id.kind in ("ConfigMap", "Secret") and not o.id.group}
                kustomizations = self._walk(entry, names[entry.path], index)
            scopes = Scopes.of(o.value for ks in kustomizations for o in ks.objects if o.known)
            kustomizations = [_as_served(ks, scopes) for ks in kustomizations]
            roots = tuple(ks_key(n.value) for n in entry.roots)
            clusters.append(Cluster(names[entry.path], entry.path, "; ".join(entry.how),
                                    roots[0] if len(roots) == 1 else None, tuple(kustomizations), entry.source,
                                    roots))
        return FluxModel(tuple(clusters), tuple(self.yaml_files))

    def _entries(self) -> list[_Entry]:
        entries: dict[str, _Entry] = {}

        def add(path: str | None, how: str, node: _Node, source: SourceRef) -> None:
            if path is None:
                return
            if path in entries:
                entries[path].how.append(how)
            else:
                entries[path] = _Entry(path, [how], [node], source)

        own = SourceRef(GIT_REPOSITORY, BOOTSTRAP_NAME, DEFAULT_NAMESPACE)
        by_file: dict[str, list[_Found]] = {}
        for found in self.found:
            by_file.setdefault(found.file, []).append(found)
        for file, docs in by_file.items():
            repos = {(str(_meta(d.value).get("namespace") or DEFAULT_NAMESPACE), str(_meta(d.value).get("name")))
                     for d in docs if is_git_repository(d.value)}
            for d in docs:
                if not is_flux_kustomization(d.value):
                    continue
                ref = source_ref(d.value)
                if ref.kind == GIT_REPOSITORY and (posixpath.basename(file) == BOOTSTRAP_FILE
                                                    or (ref.namespace, ref.name) in repos):
                    path = spec_path(_mapping(d.value.get("spec")).get("path"))
                    key = ks_key(d.value)
                    add(path, f"bootstrap Kustomization {key[0]}/{key[1]} in {file} (path ./{path})",
                        _Node(d.value, file, d.document.info.start_line, d.document, None), ref)
        for file in self._bootstrap_files():
            if file in by_file and any(is_flux_kustomization(d.value) for d in by_file[file]):
                continue
            directory = posixpath.dirname(file)
            if posixpath.basename(directory) == BOOTSTRAP_DIR:
                path = posixpath.dirname(directory)
                add(path, f"{file} (flux bootstrap's sync file) holds no Kustomization: by its place, the "
                    f"bootstrap path is ./{path}", _Node(_synthesized_root(path, own), file, 1, None, None, True), own)
        for found in self.found:
            sync, what = self._sync(found.value)
            if sync is None:
                continue
            path = spec_path(sync.get("path"))
            if path is None or sync.get("kind", GIT_REPOSITORY) != GIT_REPOSITORY:
                continue
            key = (str(_meta(found.value).get("namespace") or DEFAULT_NAMESPACE),
                   str(_meta(found.value).get("name") or ""))
            at = _SYNC_PATH.get(what, ("instance", "sync", "path"))
            source = SourceRef(GIT_REPOSITORY, str(sync.get("name") or BOOTSTRAP_NAME), DEFAULT_NAMESPACE)
            named = f"{what} {key[0]}/{key[1]}" if what else "the flux-instance chart's values"
            add(path, f"{named} in {found.file} (sync.path ./{path})",
                _Node(_synthesized_root(path, source, source.name), found.file, found.document.info.line(at),
                      found.document, None, True), source)
        if not entries:
            for overlay in self._overlays():
                add(overlay, f"overlay ./{overlay} (configured or found beside {self.config.base_dir})",
                    _Node(_synthesized_root(overlay, own), overlay, 1, None, None, True), own)
        if not entries and self.tree.kind(self.config.base_dir) == "dir":
            return []  # the configured layout names its clusters (the overlays of base_dir): none, none guessed
        if not entries:
            # `flux bootstrap --path` points at the directory holding the roots: one cluster per directory
            by_dir: dict[str, list[_Node]] = {}
            for node in self._orphans():
                by_dir.setdefault(posixpath.dirname(node.file), []).append(node)
            for directory, nodes in by_dir.items():
                names = ", ".join(f"{ks_key(n.value)[1]} ({n.file})" for n in nodes)
                entries[directory] = _Entry(directory, [f"no bootstrap sync file, FluxInstance or overlay names it: "
                                                        f"the Flux Kustomizations no other applies, {names}"],
                                            nodes, own)
        return sorted(entries.values(), key=lambda e: e.path)

    def _bootstrap_files(self) -> list[str]:
        return [path for path in self.yaml_files if posixpath.basename(path) == BOOTSTRAP_FILE]

    @staticmethod
    def _sync(value: Mapping[str, Any]) -> tuple[dict[str, Any] | None, str]:
        if is_flux_instance(value):
            sync = _mapping(value.get("spec")).get("sync")
            return (sync if isinstance(sync, dict) and "path" in sync else None), "FluxInstance"
        if is_helm_release(value):
            values = _mapping(_mapping(value.get("spec")).get("values"))
            sync = _mapping(values.get("instance")).get("sync")
            return (sync if isinstance(sync, dict) and "path" in sync else None), "HelmRelease"
        if "kind" not in value and "apiVersion" not in value:  # a values file (a valuesFrom ConfigMap's source)
            sync = _mapping(value.get("instance")).get("sync")
            return (sync if isinstance(sync, dict) and "path" in sync else None), ""
        return None, ""

    def _overlays(self) -> list[str]:
        from bot.flux.evalpaths import discover_overlays  # the seed layout's environment overlays

        if self.config.overlays is None and self.tree.kind(self.config.base_dir) != "dir":
            return []
        try:
            return discover_overlays(self.tree, self.config)
        except WaveBotError:
            return []

    def _orphans(self) -> list[_Node]:
        """Flux Kustomizations of the tree that no Flux Kustomization's build applies."""
        nodes = [_Node(f.value, f.file, f.document.info.start_line, f.document, None)
                 for f in self.found if is_flux_kustomization(f.value)]
        applied: set[tuple[str, str, str]] = set()
        for node in nodes:
            spec = _mapping(node.value.get("spec"))
            path = spec_path(spec.get("path"))
            if source_ref(node.value).kind != GIT_REPOSITORY or path is None or self.tree.kind(path) != "dir":
                continue
            result, _ = self._build(path, self._additions(node, spec, path))
            if isinstance(result, Build):
                applied |= {(o.source, o.original.namespace, o.original.name) for o in result.objects
                            if is_flux_kustomization(o.value)}
        return [n for n in nodes if (n.file, str(_meta(n.value).get("namespace") or ""),
                                     str(_meta(n.value).get("name") or "")) not in applied]

    # -- one cluster

    def _walk(self, entry: _Entry, cluster: str, index: dict[tuple[str, str, str], Any] | None) -> list[FluxKs]:
        queue = deque(entry.roots)
        seen: dict[Key, FluxKs] = {}
        while queue:
            node = queue.popleft()
            key = ks_key(node.value)
            if key in seen:
                continue  # applied twice (the root applies itself), or a cycle
            ks = self._flux_ks(node, cluster, entry.source, index)
            seen[key] = ks
            for child in ks.children():
                queue.append(_Node(child.value, child.path, child.line, child.document, key))
        return list(seen.values())

    def _flux_ks(self, node: _Node, cluster: str, own: SourceRef,
                 index: dict[tuple[str, str, str], Any] | None) -> FluxKs:
        value = node.value
        spec = _mapping(value.get("spec"))
        key = ks_key(value)
        source = source_ref(value)
        external = not (source.kind == GIT_REPOSITORY and (source.namespace, source.name) == (own.namespace, own.name))
        path = spec_path(spec.get("path"))
        info = node.document.info if node.document is not None and not node.synthesized else None

        def line(*keys: str | int) -> int:
            return info.line(tuple(keys)) if info is not None else node.line

        depends = []
        entries = spec.get("dependsOn")
        for i, dep in enumerate(entries if isinstance(entries, list) else []):
            if isinstance(dep, dict) and isinstance(dep.get("name"), str):
                written = str(dep["namespace"]) if dep.get("namespace") else None
                ready = dep.get("readyExpr")
                depends.append(DependsOn(dep["name"], written or key[0], written, line("spec", "dependsOn", i),
                                         str(ready) if ready is not None else None))
        health = spec.get("healthChecks")
        failure: BuildFailure | None = None
        objects: tuple[Applied, ...] = ()
        built: tuple[Object, ...] = ()
        generated = False
        variables = self._variables(key, spec, index)
        if not external:
            if path is None:
                failure = BuildFailure(f"spec.path {spec.get('path')!r} leaves the repository", node.file,
                                       line("spec", "path"))
            elif self.tree.kind(path) != "dir":
                failure = BuildFailure(f"spec.path ./{path} is not a directory of the repository; "
                                       "kustomize-controller fails the build (kustomization path not found) and "
                                       "applies and prunes nothing", node.file, line("spec", "path"),
                                       "point spec.path at the directory that holds the manifests now")
            elif any(spec.get(k) not in (None, "") for k in _UNEVALUATED):
                which = next(k for k in _UNEVALUATED if spec.get(k) not in (None, ""))
                failure = BuildFailure(f"spec.{which} renames what it applies; wave-bot does not evaluate it",
                                       node.file, line("spec", which), unsupported=True)
            elif not has_kustomization(self.tree, path) and not generated_resources(self.tree, path):
                generated = True
                failure = BuildFailure(f"spec.path ./{path} holds no manifest: the kustomization kustomize-controller "
                                       "generates lists nothing, and kustomize refuses it ('kustomization.yaml is "
                                       "empty'), so the controller applies and prunes nothing", node.file,
                                       line("spec", "path"), "point spec.path at the directory of the manifests")
            else:
                generated = not has_kustomization(self.tree, path)
                result, _ = self._build(path, self._additions(node, spec, path, info))
                if isinstance(result, WaveBotError):
                    failure = BuildFailure(result.message, result.path, result.line, result.hint,
                                           unsupported=isinstance(result, Unsupported)
                                           or not isinstance(result, BuildError))
                elif result.problems:
                    problem = result.problems[0]
                    failure = BuildFailure(f"{problem.patch.where}: {problem.message}; kustomize fails the build",
                                           problem.patch.path or problem.patch.file, problem.patch.line)
                else:
                    built = result.objects
                    objects = tuple(self._applied(o, spec, variables) for o in built)
        return FluxKs(
            key=key, cluster=cluster, parent=node.parent, file=node.file, line=node.line, spec=spec, source=source,
            path=path, prune=spec.get("prune") is True,
            deletion_policy=str(spec.get("deletionPolicy") or DEFAULT_DELETION_POLICY),
            wait=spec.get("wait") is True,
            health_checks=tuple(h for h in health if isinstance(h, dict)) if isinstance(health, list) else (),
            depends_on=tuple(depends), objects=objects, build_failure=failure, external=external,
            generated=generated, variables=variables, value=value, document=node.document,
            suspend=spec.get("suspend") is True,
            synthesized=node.synthesized, built=built,
        )

    def _additions(self, node: _Node, spec: Mapping[str, Any], path: str,
                   info: yamlio.DocInfo | None = None) -> Additions | None:
        adds = {k: spec.get(k) for k in ("patches", "components") if spec.get(k) not in (None, [])}
        if isinstance(spec.get("components"), list) and spec.get("ignoreMissingComponents") is True:
            prefix = f"{path}/" if path else ""
            adds["components"] = [c for c in spec["components"]
                                  if not isinstance(c, str) or self.tree.kind(posixpath.normpath(prefix + c))]
        if spec.get("targetNamespace"):
            adds["namespace"] = str(spec["targetNamespace"])
        if not adds:
            return None
        return Additions(node.file, adds, info or _BLANK, built=path)

    def _build(self, path: str, additions: Additions | None) -> tuple[Build | WaveBotError, bool]:
        key = (path, json.dumps(additions.value if additions is not None else None, sort_keys=True, default=str)
               + (additions.path if additions is not None else ""))
        found = self._builds.get(key)
        if found is None:
            generated = not has_kustomization(self.tree, path)
            tree: Tree = GeneratedTree(self.tree, [path]) if generated else self.tree
            try:
                result: Build | WaveBotError = build(tree, path, additions)
            except WaveBotError as exc:
                result = exc
            found = (result, generated)
            self._builds[key] = found
        return found

    # -- substitution

    def _variables(self, key: Key, spec: Mapping[str, Any],
                   index: dict[tuple[str, str, str], Any] | None) -> Variables | None:
        post = spec.get("postBuild")
        if not isinstance(post, dict):
            return None
        inline = _mapping(post.get("substitute"))
        listed = post.get("substituteFrom")
        refs: list[Any] = listed if isinstance(listed, list) else []
        if not inline and not refs:
            return None
        values: dict[str, str] = {}
        unknown: set[str] = set()
        missing: list[str] = []
        for ref in refs:
            if not isinstance(ref, dict):
                continue
            kind, name = str(ref.get("kind") or ""), str(ref.get("name") or "")
            found = index.get((kind, key[0], name)) if index is not None else None
            if found is None:
                if ref.get("optional") is not True:
                    missing.append(f"{kind}/{name}")
                continue
            clear, hidden = source_data(found)
            for k, v in clear.items():
                values[k] = v
                unknown.discard(k)
            for k in hidden:
                values.pop(k, None)
                unknown.add(k)
        for k, v in inline.items():
            values[str(k)] = str(v).replace("\n", "") if v is not None else ""
            unknown.discard(str(k))
        return Variables(values, frozenset(unknown), tuple(missing))

    def _applied(self, obj: Object, spec: Mapping[str, Any], variables: Variables | None) -> Applied:
        value: dict[str, Any] = dict(obj.value)
        common = _mapping(spec.get("commonMetadata"))
        if common:
            meta = dict(_meta(value))
            for field_name in ("labels", "annotations"):
                extra = _mapping(common.get(field_name))
                if extra:
                    meta[field_name] = {**_mapping(meta.get(field_name)), **{str(k): str(v) for k, v in extra.items()}}
            value["metadata"] = meta
        unresolved: set[str] = set()
        identity_unresolved: set[str] = set()
        if variables is not None and not disabled(value):
            meta = _meta(value)
            for text in (value.get("apiVersion"), value.get("kind"), meta.get("name"), meta.get("namespace")):
                if isinstance(text, str) and "$" in text:
                    substitute_text(text, variables, identity_unresolved)
            value = substitute_value(value, variables, unresolved)
        rid = ResourceId.of_object(value)
        literal = any("${" in part for part in (rid.kind, rid.namespace, rid.name, rid.group))
        known = not identity_unresolved and not (variables is None and literal)
        meta = _meta(value)
        prune = PRUNE_DISABLED.casefold()
        off = any(str(_mapping(meta.get(k)).get(PRUNE_KEY, "")).casefold() == prune for k in ("labels", "annotations"))
        return Applied(rid, known, obj.source, value, off, tuple(sorted(unresolved | identity_unresolved)),
                       obj.document)


def _as_served(ks: FluxKs, scopes: Scopes) -> FluxKs:
    """`ks` as the API server takes what it applies: its cluster-scoped objects named without the
    namespace kustomize wrote into them, and the apply failure, if any."""
    objects = tuple(dataclasses.replace(o, id=served) if o.known and (served := scopes.served(o.id)) != o.id else o
                    for o in ks.objects)
    failure, refused = _apply_failure(ks, objects, scopes)
    if objects == ks.objects and failure is None:
        return ks
    return dataclasses.replace(ks, objects=objects, apply_failure=failure, refused=refused)


def _apply_failure(ks: FluxKs, objects: tuple[Applied, ...],
                   scopes: Scopes) -> tuple[BuildFailure | None, tuple[ResourceId, ...]]:
    """Why kustomize-controller's apply of a build that succeeds fails, before it prunes anything, and
    every object it refuses:
    - a Secret still SOPS-encrypted in its `data` while `ks` has no spec.decryption (the controller
      refuses the whole revision before applying: "is SOPS encrypted, configuring decryption is
      required"; see `_refused_encrypted`);
    - an object of a kind known to be namespaced with no namespace, even as built (the server-side
      dry-run finds no such resource: "namespace not specified"). A kind of unknown scope proves nothing.
    (None, ()) when neither holds (or the build already failed). The failure names the first."""
    if ks.external or ks.build_failure is not None or ks.suspend:
        return None, ()
    decrypts = isinstance(ks.spec.get("decryption"), dict)
    failure: BuildFailure | None = None
    refused: list[ResourceId] = []
    for o in objects:
        undecrypted = o.known and not decrypts and _refused_encrypted(o.value)
        if not o.known or not (undecrypted or scopes.refused(o.id)):
            continue
        refused.append(o.id)
        if failure is not None:
            continue
        where = f"{o.path}:{o.line}" if o.line else o.path
        if undecrypted:
            failure = BuildFailure(
                f"{o.id} ({where}) is SOPS-encrypted and {ks.title} has no spec.decryption: kustomize-controller "
                "refuses the revision ('is SOPS encrypted, configuring decryption is required'), so it applies "
                "and prunes nothing of it", o.path, o.line or None,
                "spec:\n  decryption:\n    provider: sops\n    secretRef:\n      name: sops-age\n",
                refused=o.id, undecrypted=True)
        else:
            failure = BuildFailure(
                f"{o.id} ({where}) has no metadata.namespace, even as built: the API server refuses it "
                "('namespace not specified'), so kustomize-controller's apply fails and it prunes nothing of "
                "this revision", o.path, o.line or None,
                f"give it a namespace: metadata.namespace in {o.path}, a `namespace:` in its kustomization, "
                f"or spec.targetNamespace on {ks.title}", refused=o.id)
    return failure, tuple(refused)


def _refused_encrypted(value: Mapping[str, Any]) -> bool:
    """Whether kustomize-controller refuses a revision for this SOPS-encrypted Secret. It checks for
    the `sops` field after normalising each object through its typed Kubernetes struct, which drops
    that field: only a Secret whose conversion fails keeps it, and so fails the apply, which is one
    whose `data` holds a value that is not base64 (`ENC[...]` never is). One encrypted only in
    `stringData` is applied with the ciphertext as its value (real kustomize-controller v1.9.6 does
    both: tests/live/test_review_live.py)."""
    data = value.get("data")
    return is_encrypted_secret(value) and isinstance(data, dict) and any(not _base64(v) for v in data.values())


def _base64(text: Any) -> bool:
    if not isinstance(text, str):
        return False
    try:
        base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def _cluster_names(paths: list[str]) -> dict[str, str]:
    """A cluster's name: its entry path ('.' for the repository root)."""
    return {p: p or "." for p in paths}


__all__ = [
    "Applied", "BuildFailure", "Cluster", "DependsOn", "FluxKs", "FluxModel", "Key", "SourceRef", "ks_key",
    "read_model", "source_ref", "spec_path",
]
