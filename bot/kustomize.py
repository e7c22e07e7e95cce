"""A small, static evaluator for the kustomize features Flux cluster overlays use.

wave-bot must know what `kustomize build clusters/<env>` gives each wave's Flux Kustomization (does
it carry `spec.decryption`?), but it never runs kustomize: the bot must not execute anything from
the repository, and kubectl is not in its container. So this module re-implements, over a `Tree`,
exactly the part of kustomize v5 those overlays rely on:

- `resources` / `bases` (files and directories), `components` (kind: Component);
- `patches` (inline or `path:`, strategic-merge or JSON6902, with or without `target:`), the legacy
  `patchesStrategicMerge` (paths or inline strings) and `patchesJson6902`;
- `namespace`, `commonLabels`, `labels`, `commonAnnotations` (they change what later selectors match);

applied in kustomize's order: resources, then components, then patchesStrategicMerge, patches,
namespace, labels, annotations, patchesJson6902 (api/internal/target/kusttarget_configplugin.go).
Fields that cannot touch a Flux Kustomization's spec (images, replicas, generators of ConfigMaps
and Secrets, ...) are skipped. Anything that could, and that this module does not evaluate
(namePrefix, replacements, plugins, helm, remote bases, paths outside the repository), raises
`Unsupported` rather than guessing. What kustomize itself would reject raises `BuildError`; a patch
that kustomize would fail on is recorded as a `Problem` and skipped, so one stale patch does not
hide what the rest of the overlay does.
"""
from __future__ import annotations

import copy
import functools
import posixpath
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import re2

from bot import yamlio
from bot.errors import WaveBotError
from bot.naming import shown
from bot.patching import PatchFailed, apply_json_patch, merge_patch
from bot.resid import ResourceId
from bot.tree import Tree

KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
KUSTOMIZATION_API = "kustomize.config.k8s.io/v1beta1"
COMPONENT_API = "kustomize.config.k8s.io/v1alpha1"
MAX_FILES = 2000
"""Most files one build reads; a cluster overlay reads a few dozen."""

# Kustomization fields, by what this evaluator does with them (api/types/kustomization.go).
EVALUATED = frozenset({
    "apiVersion", "kind", "resources", "bases", "components", "patches", "patchesStrategicMerge",
    "patchesJson6902", "namespace", "commonLabels", "labels", "commonAnnotations",
})
# These never change a Flux Kustomization's spec (images/replicas touch workloads, generators add
# ConfigMaps/Secrets, the rest is metadata about the build itself).
IGNORED = frozenset({
    "metadata", "openapi", "images", "imageTags", "replicas", "sortOptions", "crds",
    "configMapGenerator", "secretGenerator", "generatorOptions", "configurations", "buildMetadata",
})
# These could rename objects or rewrite any field; wave-bot does not guess what they do.
UNSUPPORTED = frozenset({
    "namePrefix", "nameSuffix", "replacements", "vars", "generators", "transformers", "validators",
    "helmCharts", "helmGlobals", "helmChartInflationGenerator", "inventory",
})
PATCH_KEYS = frozenset({"path", "patch", "target", "options"})
SELECTOR_KEYS = frozenset({"group", "version", "kind", "name", "namespace", "labelSelector", "annotationSelector"})
JSON_OPS = frozenset({"add", "remove", "replace", "move", "copy", "test"})

# Built-in kinds the namespace transformer leaves alone; kustomize treats any other kind
# (every custom resource included) as namespaced.
CLUSTER_SCOPED = frozenset({
    "APIService", "CSIDriver", "CSINode", "CertificateSigningRequest", "ClusterRole",
    "ClusterRoleBinding", "ComponentStatus", "CustomResourceDefinition", "FlowSchema", "IngressClass",
    "MutatingWebhookConfiguration", "Namespace", "Node", "PersistentVolume", "PodSecurityPolicy",
    "PriorityClass", "PriorityLevelConfiguration", "RuntimeClass", "StorageClass",
    "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "ValidatingWebhookConfiguration",
    "VolumeAttachment",
})

_REMOTE = re.compile(r"^([a-z][a-z0-9+.-]*://|git@|git::)|\?ref=|^(github\.com|gitlab\.com|bitbucket\.org)/")
_HOST_LIKE = re.compile(r"^[a-z0-9-]+(\.[a-z0-9-]+)+/")
HINT_BY_HAND = "check this overlay by hand: kubectl kustomize <overlay>"


class BuildError(WaveBotError):
    """kustomize itself would refuse to build this, so Flux applies nothing from the overlay."""


class Unsupported(WaveBotError):
    """What kustomize would do here is beyond this evaluator (or would mean following a reference
    wave-bot refuses to follow), so the result is unknown rather than guessed."""


# ---- identities and selectors -----------------------------------------------------------------


ResId = ResourceId
"""The same identity under the name kustomize gives it (one record for one concept)."""


@dataclass(frozen=True)
class Selector:
    """A patch `target:`. Every field is an anchored regular expression (empty: anything)."""

    fields: Mapping[str, str]
    """The fields as written (group, version, kind, name, namespace, labelSelector, annotationSelector)."""

    def matches(self, value: Mapping[str, Any], ids: Sequence[ResId]) -> bool:
        """kustomize's resWrangler.Select: name and namespace match the original or the current id."""
        original, current = ids[0], ids[-1]
        checks = (
            ("namespace", (original.effective_namespace, current.effective_namespace)),
            ("name", (original.name, current.name)),
            ("group", (current.group,)),
            ("version", (current.version,)),
            ("kind", (current.kind,)),
        )
        for key, candidates in checks:
            pattern = self.fields.get(key)
            if pattern and not any(_full_match(pattern, c) for c in candidates):
                return False
        metadata: Mapping[str, Any] = value["metadata"] if isinstance(value.get("metadata"), dict) else {}
        for key, meta in (("labelSelector", "labels"), ("annotationSelector", "annotations")):
            expression = self.fields.get(key)
            pairs: Mapping[str, Any] = metadata[meta] if isinstance(metadata.get(meta), dict) else {}
            if expression and not label_selector_matches(expression, {str(k): str(v) for k, v in pairs.items()}):
                return False
        return True

    def describe(self) -> str:
        return ", ".join(f"{k}: {v}" for k, v in self.fields.items())


@functools.lru_cache(maxsize=512)
def _regex(pattern: str) -> Any:
    """A target field as kustomize compiles it: Go's RE2 syntax, anchored as `^(?:pattern)$`
    (api/types/selector.go). google-re2 is the same engine, so what RE2 accepts (POSIX classes such
    as `[[:digit:]]`) and refuses (look-arounds, back-references) is what kustomize does; Python's
    `re` differs on both."""
    options = re2.Options()
    options.log_errors = False  # the error is raised, and reported once, as a BuildError
    return re2.compile(f"^(?:{pattern})$", options=options)


def target_matches(pattern: str, value: str) -> bool:
    """Whether a patch target field `pattern` matches `value` the way kustomize matches it."""
    return _regex(pattern).search(value) is not None


_full_match = target_matches


def _compile(pattern: str, where: str, line: int | None) -> None:
    """Refuse a target regex kustomize refuses (`error parsing regexp`: it does not build at all)."""
    try:
        _regex(pattern)
    except re2.error as exc:
        reason = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise BuildError(f"target regular expression '{pattern}' does not parse (kustomize uses Go's RE2: "
                         f"{reason})", path=where, line=line) from None


_REQUIREMENT = re.compile(
    r"^\s*(?P<neg>!)?\s*(?P<key>[A-Za-z0-9_./-]+)\s*"
    r"(?:(?P<op>==|=|!=)\s*(?P<value>[A-Za-z0-9_.-]*)"
    r"|\s(?P<setop>in|notin)\s*\((?P<values>[^)]*)\))?\s*$"
)


def _split_selector(expression: str) -> list[str]:
    """Split on the commas that are not inside `(a, b)` sets."""
    parts, depth, current = [], 0, ""
    for char in expression:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    return [*parts, current]


def label_selector_matches(expression: str, labels: Mapping[str, str]) -> bool:
    """A Kubernetes label selector (`a=b`, `a!=b`, `a in (x,y)`, `a notin (x)`, `a`, `!a`) over `labels`."""
    for requirement in _split_selector(expression):
        found = _REQUIREMENT.match(requirement)
        if found is None or (found["neg"] and (found["op"] or found["setop"])):
            raise Unsupported(f"label selector '{expression}' is not one wave-bot understands",
                              hint=HINT_BY_HAND)
        key, present = found["key"], found["key"] in labels
        if found["op"] in ("=", "=="):
            ok = labels.get(key) == found["value"]
        elif found["op"] == "!=":
            ok = labels.get(key) != found["value"]
        elif found["setop"]:
            values = {v.strip() for v in found["values"].split(",")}
            ok = present and labels[key] in values if found["setop"] == "in" else labels.get(key) not in values
        else:
            ok = present != bool(found["neg"])
        if not ok:
            return False
    return True


# ---- what a build returns -----------------------------------------------------------------------


@dataclass(frozen=True)
class Object:
    """One object of a build's output."""

    value: Mapping[str, Any]
    id: ResId
    original: ResId
    """Its id as first loaded (before a namespace transformer moved it)."""
    source: str


PatchField = Literal["patches", "patchesStrategicMerge", "patchesJson6902"]


@dataclass(frozen=True)
class PatchUse:
    """One patch a build applied (or tried to), and where it is written."""

    file: str
    """The kustomization file that declares it."""
    field: PatchField
    index: int
    line: int
    form: Literal["smp", "json6902"]
    path: str | None
    """The patch file (repo-relative) when the patch is not inline."""
    target: Selector | None
    documents: tuple[Any, ...]
    """The patch: strategic-merge documents, or one list of JSON6902 operations."""
    applied_to: tuple[ResId, ...]
    """The objects it changed (their ids at that moment)."""
    depth: int
    """0 for the built directory itself, 1 for what it lists, and so on."""
    options: frozenset[str] = frozenset()
    """The `options` set to true (allowNameChange, allowKindChange)."""

    @property
    def where(self) -> str:
        return f"{self.field}[{self.index}]"

    @property
    def touches_decryption(self) -> bool:
        """Whether it writes spec.decryption (or something inside it)."""
        if self.form == "smp":
            return any(isinstance(d.get("spec"), dict) and "decryption" in d["spec"] for d in self.documents)
        ops = self.documents[0] if self.documents else []
        for op in ops:
            for key in ("path", "from"):
                pointer = str(op.get(key, "")) if isinstance(op, dict) else ""
                if pointer == "/spec/decryption" or pointer.startswith("/spec/decryption/"):
                    return True
                if pointer in ("/spec", "") and key == "path" and "decryption" in str(op.get("value")):
                    return True
        return False


@dataclass(frozen=True)
class Problem:
    """A patch kustomize would fail on. The build carried on without it."""

    message: str
    patch: PatchUse
    missing: ResId | None = None
    """For a strategic-merge patch without `target:`: the object it names, which is not there."""


@dataclass(frozen=True)
class Build:
    """What `kustomize build <directory>` gives, as far as this evaluator can tell."""

    directory: str
    objects: tuple[Object, ...]
    patches: tuple[PatchUse, ...]
    problems: tuple[Problem, ...]
    kustomizations: tuple[str, ...]
    """Kustomization files read, in the order they were read (the built directory's first)."""
    files: tuple[str, ...]
    """Every file read (kustomizations, resources, patch files)."""

    def find(self, kind: str, group: str, name: str) -> list[Object]:
        return [o for o in self.objects if (o.id.kind, o.id.group, o.id.name) == (kind, group, name)]


def build(tree: Tree, directory: str, additions: Additions | None = None) -> Build:
    """Evaluate `kustomize build directory` over `tree`, with a Flux Kustomization's `additions`
    (None: none) as kustomize-controller applies them. Raises BuildError or Unsupported."""
    builder = _Builder(tree, additions)
    resources = builder.target(directory, 0, None, [])
    return Build(
        directory=directory,
        objects=tuple(
            Object(value=r.value, id=r.ids[-1], original=r.ids[0], source=r.source) for r in resources
        ),
        patches=tuple(builder.patches),
        problems=tuple(builder.problems),
        kustomizations=tuple(builder.kustomizations),
        files=tuple(builder.files),
    )


# ---- reading kustomization files ----------------------------------------------------------------


def kind_of(tree: Tree, path: str) -> str | None:
    """`tree.kind`, with the tree's refusals (a link among the parents, ...) as Unsupported."""
    try:
        return tree.kind(path)
    except WaveBotError as exc:
        raise Unsupported(exc.message, path=exc.path, line=exc.line, hint=exc.hint) from None


def find_kustomization(tree: Tree, directory: str) -> str | None:
    """The kustomization file of `directory`; BuildError when it has several (kustomize refuses)."""
    prefix = f"{directory}/" if directory else ""
    found = [prefix + name for name in KUSTOMIZATION_FILES if kind_of(tree, prefix + name) in ("file", "link")]
    if len(found) > 1:
        raise BuildError(f"has several kustomization files ({', '.join(found)}); kustomize accepts one",
                         path=directory)
    return found[0] if found else None


@dataclass(frozen=True)
class Kustomization:
    """A parsed kustomization file and where its keys are."""

    path: str
    value: Mapping[str, Any]
    info: yamlio.DocInfo

    @property
    def directory(self) -> str:
        return posixpath.dirname(self.path)

    @property
    def kind(self) -> str:
        return str(self.value.get("kind") or "Kustomization")

    def line(self, *keys: str | int) -> int:
        return self.info.line(tuple(keys))

    def strings(self, key: str) -> list[str]:
        """A list-of-strings field (`resources`, `components`, ...); BuildError when it is not one."""
        value = self.value.get(key)
        if value is None:
            return []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise BuildError(f"'{key}' must be a list of strings", path=self.path, line=self.line(key))
        return list(value)


@dataclass(frozen=True)
class Additions(Kustomization):
    """A Flux Kustomization's `spec.patches` and `spec.components`: kustomize-controller appends them
    to the kustomization of the directory it builds (`spec.path`) before it runs kustomize, so they
    resolve against that directory and apply after its own components and patches. `path` is the
    file defining the Flux Kustomization, `value` holds `patches` and `components`."""

    built: str = ""
    """The directory kustomize-controller builds."""

    @property
    def directory(self) -> str:
        return self.built

    def line(self, *keys: str | int) -> int:
        return self.info.line(("spec", *keys))


def read_bytes(tree: Tree, path: str) -> bytes:
    """A file's bytes; a link, or a file too large to read, is Unsupported (never followed or guessed)."""
    kind = kind_of(tree, path)
    if kind == "link":
        raise Unsupported("is a symbolic link; wave-bot never follows links", path=path,
                          hint="replace the link with the file itself")
    if kind != "file":
        raise BuildError("does not exist (kustomize fails to build without it)", path=path)
    try:
        data = tree.read(path)
    except WaveBotError as exc:  # the tree refused it
        raise Unsupported(exc.message, path=exc.path, line=exc.line, hint=exc.hint) from None
    if len(data) > yamlio.MAX_FILE_BYTES:
        raise Unsupported(f"file is {len(data):,} bytes; wave-bot reads YAML files of at most "
                          f"{yamlio.MAX_FILE_BYTES:,}", path=path, hint=HINT_BY_HAND)
    return data


def _load(data: bytes, path: str, duplicates: Literal["error", "last", "patch"] = "error") -> list[yamlio.Document]:
    """YAML documents through yamlio (its limits), with a YAML mistake as a BuildError. A repeated key
    is what kustomize (v5.8) makes of it: the last value in a kustomization (`"last"`), an error in a
    resource (`"error"`); in a patch (`"patch"`) the last value for a JSON6902 one, and Unsupported
    for a strategic-merge one: kustomize refuses it for a built-in kind, and for a custom resource
    (a Flux Kustomization) keeps the first value, or fails when the key sits in a part the patch adds
    whole; wave-bot does not guess which."""
    try:
        try:
            return [d for d in yamlio.load(data, path, duplicates="last" if duplicates == "last" else "error")
                    if d.value is not None]
        except yamlio.RepeatedKey as exc:
            if duplicates != "patch":
                raise
            docs = [d for d in yamlio.load(data, path, duplicates="last") if d.value is not None]
            if len(docs) == 1 and isinstance(docs[0].value, list):
                return docs
            raise Unsupported(f"{exc.message} in a strategic-merge patch; kustomize keeps the first value or "
                              "fails, depending on the object's kind and where the key is, so wave-bot does not "
                              "evaluate it", path=exc.path, line=exc.line, hint=exc.hint) from None
    except Unsupported:
        raise
    except WaveBotError as exc:
        raise BuildError(exc.message, path=exc.path, line=exc.line, hint=exc.hint) from None


def read_kustomization(tree: Tree, path: str, *, check: bool = True) -> Kustomization:
    """Parse a kustomization file and (with `check`) vet its fields the way kustomize does: an
    unknown field is a BuildError, one this evaluator does not follow is Unsupported."""
    docs = _load(read_bytes(tree, path), path, duplicates="last")
    if not docs:
        raise BuildError("kustomization file is empty", path=path)
    if len(docs) > 1:
        raise BuildError("kustomization file holds several YAML documents", path=path,
                         line=docs[1].info.start_line)
    doc = docs[0]
    if not isinstance(doc.value, dict):
        raise BuildError("kustomization file is not a mapping of fields", path=path, line=doc.info.start_line)
    kust = Kustomization(path, doc.value, doc.info)
    if check:
        _check_fields(kust)
        if all(v is None for k, v in kust.value.items() if k not in ("apiVersion", "kind")):
            raise BuildError("kustomization file is empty: it sets no field but apiVersion and kind (kustomize: "
                             "kustomization.yaml is empty)", path=path)
    return kust


def _check_fields(kust: Kustomization) -> None:
    for key in kust.value:
        if key in UNSUPPORTED and kust.value[key] not in (None, "", [], {}):
            raise Unsupported(f"uses '{key}', which wave-bot does not evaluate (it can rename objects or "
                              "rewrite any field)", path=kust.path, line=kust.line(key), hint=HINT_BY_HAND)
        if key not in EVALUATED | IGNORED | UNSUPPORTED:
            raise BuildError(f"unknown field '{key}': kustomize rejects this kustomization", path=kust.path,
                             line=kust.line(key))
    kind, api = kust.kind, kust.value.get("apiVersion")
    if kind not in ("Kustomization", "Component"):
        raise BuildError(f"kind is {shown(kind)}; kustomize expects Kustomization or Component", path=kust.path,
                         line=kust.line("kind"))
    expected = COMPONENT_API if kind == "Component" else KUSTOMIZATION_API
    if api is not None and api != expected:
        raise BuildError(f"apiVersion for {kind} must be {expected}, not {shown(api)}", path=kust.path,
                         line=kust.line("apiVersion"))


def is_remote(ref: str) -> bool:
    """A URL or go-getter style reference (kustomize would fetch it over the network)."""
    return _REMOTE.search(ref) is not None


def resolve(directory: str, ref: str, where: str, line: int | None, *, tree: Tree) -> str:
    """`ref` (relative to `directory`) as a repo-relative path. A remote reference, an absolute
    path or one leaving the repository is Unsupported: wave-bot never fetches or follows those."""
    remote = Unsupported(f"'{ref}' is a remote reference; wave-bot never fetches anything", path=where,
                         line=line, hint=HINT_BY_HAND)
    if is_remote(ref):
        raise remote
    if ref.startswith("/"):
        raise Unsupported(f"'{ref}' is an absolute path; wave-bot reads only files inside the repository",
                          path=where, line=line, hint="use a path relative to the kustomization")
    joined = _join(directory, ref)
    if joined == ".." or joined.startswith("../"):
        raise Unsupported(f"'{ref}' points outside the repository; wave-bot does not follow it", path=where,
                          line=line, hint="keep every kustomize reference inside the repository")
    if _HOST_LIKE.match(ref) and kind_of(tree, joined) is None:  # github.com/org/repo/... without a scheme
        raise remote
    return joined


def _join(directory: str, ref: str) -> str:
    joined = posixpath.normpath(posixpath.join(directory, ref)) if ref else directory
    return "" if joined == "." else joined


# ---- reading patches -------------------------------------------------------------------------


def read_patch(tree: Tree, kust: Kustomization, key: PatchField, i: int, entry: Any, depth: int = 0,
               count: Callable[[str], None] | None = None) -> PatchUse:
    """Entry `i` of the patch field `key` of `kust`, read (its file too) but not applied: the one
    reading of a patch entry the evaluator and `bot.kustomizations` share. BuildError when
    kustomize would refuse the entry; `count` is told each file read."""
    line = kust.line(key, i)
    if key == "patchesStrategicMerge":
        return _read_legacy_smp(tree, kust, i, entry, depth, line, count)
    _mapping_of(entry, PATCH_KEYS, f"{key}[{i}]", "a mapping (path/patch, target)", kust, line)
    if ("path" in entry) == ("patch" in entry):
        raise BuildError(f"{key}[{i}] needs exactly one of 'path' and 'patch'", path=kust.path, line=line)
    target = _selector(entry.get("target"), f"{key}[{i}]", kust, line)
    if key == "patchesJson6902" and (target is None or "name" not in target.fields):
        raise BuildError(f"{key}[{i}] needs a target with a name (kustomize: must specify the target name)",
                         path=kust.path, line=line)
    path = None
    if "path" in entry:
        if not isinstance(entry["path"], str):
            raise BuildError(f"{key}[{i}].path must be a string", path=kust.path, line=line)
        path = resolve(kust.directory, entry["path"], kust.path, line, tree=tree)
    elif not isinstance(entry["patch"], str):
        raise BuildError(f"{key}[{i}].patch must be a string (use `patch: |`)", path=kust.path, line=line)
    docs = _patch_documents(tree, kust, key, i, path, entry.get("patch"), count)
    if len(docs) == 1 and isinstance(docs[0], list):
        form: Literal["smp", "json6902"] = "json6902"
    elif docs and all(isinstance(d, dict) for d in docs) and key != "patchesJson6902":
        form = "smp"
    else:
        raise BuildError(f"{key}[{i}] is neither a strategic-merge nor a JSON6902 patch", path=kust.path,
                         line=line)
    options = _options(entry.get("options"), f"{key}[{i}]", kust, line)
    return PatchUse(kust.path, key, i, line, form, path, target, tuple(docs), (), depth, options)


def _read_legacy_smp(tree: Tree, kust: Kustomization, i: int, entry: Any, depth: int, line: int,
                     count: Callable[[str], None] | None) -> PatchUse:
    """A patchesStrategicMerge entry: a file when one exists at that path, else inline YAML."""
    if not isinstance(entry, str):
        raise BuildError(f"patchesStrategicMerge[{i}] must be a string (a path or an inline patch)",
                         path=kust.path, line=line)
    path: str | None = None
    if "\n" not in entry.strip():
        candidate = resolve(kust.directory, entry.strip(), kust.path, line, tree=tree)
        path = candidate if kind_of(tree, candidate) in ("file", "link") else None
    docs = _patch_documents(tree, kust, "patchesStrategicMerge", i, path, entry, count)
    if not all(isinstance(d, dict) for d in docs):
        raise BuildError(f"patchesStrategicMerge[{i}]: '{entry.strip()[:80]}' is neither a file nor a "
                         "strategic-merge patch", path=kust.path, line=line)
    return PatchUse(kust.path, "patchesStrategicMerge", i, line, "smp", path, None, tuple(docs), (), depth)


def _patch_documents(tree: Tree, kust: Kustomization, key: str, i: int, path: str | None, inline: Any,
                     count: Callable[[str], None] | None) -> list[Any]:
    if path is not None:
        if count is not None:
            count(path)
        data, label = read_bytes(tree, path), path
    else:
        data, label = str(inline).encode(), f"{kust.path} ({key}[{i}])"
    docs = [d.value for d in _load(data, label, duplicates="patch")]
    if not docs:
        raise BuildError(f"{key}[{i}] is an empty patch", path=kust.path, line=kust.line(key, i))
    for doc in docs:
        if isinstance(doc, dict) and not (doc.get("kind") and _name(doc)):
            raise BuildError(f"{key}[{i}]: a strategic-merge patch needs kind and metadata.name "
                             "(kustomize cannot parse it otherwise)", path=path or kust.path,
                             line=kust.line(key, i))
    return docs


# ---- the builder --------------------------------------------------------------------------------


@dataclass
class _Res:
    """An object while a build transforms it."""

    value: dict[str, Any]
    ids: list[ResId]
    source: str

    @property
    def id(self) -> ResId:
        return self.ids[-1]

    def note_id(self) -> None:
        new = ResId.of_object(self.value)
        if not new.identical(self.ids[-1]):
            self.ids.append(new)


@dataclass
class _Builder:
    tree: Tree
    additions: Additions | None = None
    patches: list[PatchUse] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    kustomizations: list[str] = field(default_factory=list)
    stack: list[str] = field(default_factory=list)

    def _count(self, path: str) -> None:
        self.files.append(path)
        if len(self.files) > MAX_FILES:
            raise Unsupported(f"the build reads more than {MAX_FILES} files; wave-bot stops there", path=path,
                              hint=HINT_BY_HAND)

    def target(self, directory: str, depth: int, expect: str | None, acc: list[_Res]) -> list[_Res]:
        """Build `directory` on top of `acc` (empty, except for a component)."""
        if directory in self.stack:
            raise BuildError(f"kustomizations include each other in a cycle: {' -> '.join([*self.stack, directory])}",
                             path=directory)
        kfile = find_kustomization(self.tree, directory)
        if kfile is None:
            raise BuildError("has no kustomization.yaml; kustomize cannot build it", path=directory or ".")
        self._count(kfile)
        self.kustomizations.append(kfile)
        kust = read_kustomization(self.tree, kfile)
        if expect is not None and kust.kind != expect:
            raise BuildError(f"is a {kust.kind}, but it is listed under "
                             f"{'components' if expect == 'Component' else 'resources'}", path=kfile,
                             hint="list a Component under components:, anything else under resources:")
        self.stack.append(directory)
        try:
            acc = list(acc)
            for key in ("resources", "bases"):  # kustomize appends `bases` after `resources`
                for i, ref in enumerate(kust.strings(key)):
                    self._add(acc, self._resource(kust, key, i, ref, depth), kust, kust.line(key, i))
            extra = self.additions if depth == 0 else None
            for source in (kust, extra) if extra is not None else (kust,):
                for i, ref in enumerate(source.strings("components")):
                    path = resolve(source.directory, ref, source.path, source.line("components", i), tree=self.tree)
                    acc = self.target(path, depth + 1, "Component", acc)
            self._transform(kust, acc, depth, extra)
        finally:
            self.stack.pop()
        return acc

    def _resource(self, kust: Kustomization, key: str, i: int, ref: str, depth: int) -> list[_Res]:
        line = kust.line(key, i)
        path = resolve(kust.directory, ref, kust.path, line, tree=self.tree)
        kind = kind_of(self.tree, path)
        if kind == "dir":
            return self.target(path, depth + 1, "Kustomization", [])
        if kind is None:
            raise BuildError(f"{key} lists '{ref}', which does not exist; kustomize fails to build", path=kust.path,
                             line=line)
        self._count(path)
        return [r for doc in _load(read_bytes(self.tree, path), path) for r in _objects(doc, path)]

    @staticmethod
    def _add(acc: list[_Res], new: list[_Res], kust: Kustomization, line: int) -> None:
        for res in new:
            if any(res.id.same(other.id) for other in acc):
                raise BuildError(f"{res.id.full} is added twice (kustomize: may not add resource with an already "
                                 "registered id)", path=kust.path, line=line)
            acc.append(res)

    # -- transformers, in kustomize's order

    def _transform(self, kust: Kustomization, acc: list[_Res], depth: int, extra: Additions | None) -> None:
        for i, entry in enumerate(_list(kust, "patchesStrategicMerge")):
            self._legacy_smp(kust, i, entry, acc, depth)
        for source in (kust, extra) if extra is not None else (kust,):
            for i, entry in enumerate(_list(source, "patches")):
                self._patch(source, "patches", i, entry, acc, depth)
        self._namespace(kust, acc)
        self._metadata(kust, acc)
        for i, entry in enumerate(_list(kust, "patchesJson6902")):
            self._patch(kust, "patchesJson6902", i, entry, acc, depth)

    def _namespace(self, kust: Kustomization, acc: list[_Res]) -> None:
        namespace = kust.value.get("namespace")
        if not namespace:
            return
        if not isinstance(namespace, str):
            raise BuildError("'namespace' must be a string", path=kust.path, line=kust.line("namespace"))
        for res in acc:
            if res.id.kind not in CLUSTER_SCOPED:
                res.value.setdefault("metadata", {})["namespace"] = namespace
                res.note_id()

    def _metadata(self, kust: Kustomization, acc: list[_Res]) -> None:
        """commonLabels, labels and commonAnnotations: they change what label selectors match later."""
        labels = _string_map(kust, "commonLabels")
        for item in _list(kust, "labels"):
            pairs = item.get("pairs") if isinstance(item, dict) else None
            if not isinstance(pairs, dict):
                raise BuildError("'labels' entries need 'pairs'", path=kust.path, line=kust.line("labels"))
            labels.update({str(k): str(v) for k, v in pairs.items()})
        annotations = _string_map(kust, "commonAnnotations")
        for res in acc:
            metadata = res.value.setdefault("metadata", {})
            if labels:
                metadata["labels"] = {**(metadata.get("labels") or {}), **labels}
            if annotations:
                metadata["annotations"] = {**(metadata.get("annotations") or {}), **annotations}

    # -- patches

    def _legacy_smp(self, kust: Kustomization, i: int, entry: Any, acc: list[_Res], depth: int) -> None:
        self._smp_by_id(read_patch(self.tree, kust, "patchesStrategicMerge", i, entry, depth, self._count), acc)

    def _patch(self, kust: Kustomization, key: PatchField, i: int, entry: Any, acc: list[_Res], depth: int) -> None:
        use = read_patch(self.tree, kust, key, i, entry, depth, self._count)
        if use.form == "json6902":
            self._json(use, acc, kust)
        elif use.target is None:
            self._smp_by_id(use, acc)
        else:
            self._smp_by_target(use, acc, kust)

    def _record(self, use: PatchUse, applied: list[ResId]) -> PatchUse:
        done = replace(use, applied_to=tuple(applied))
        self.patches.append(done)
        return done

    def _smp_by_id(self, use: PatchUse, acc: list[_Res]) -> None:
        """No target: each document patches the one object its own apiVersion/kind/name/namespace names."""
        applied: list[ResId] = []
        failed: list[tuple[str, ResId]] = []
        for doc in use.documents:
            wanted = ResId.of_object(doc)
            matches = [r for r in acc if any(wanted.same(i) for i in r.ids)]
            if len(matches) != 1:
                why = "no object in the build matches" if not matches else "several objects match"
                failed.append((f"{why} the strategic-merge patch for {wanted.full}", wanted))
                continue
            applied.append(matches[0].id)
            _merge_into(acc, matches[0], doc, use.options)
        done = self._record(use, applied)
        for message, wanted in failed:
            self.problems.append(Problem(message, done, wanted))

    def _smp_by_target(self, use: PatchUse, acc: list[_Res], kust: Kustomization) -> None:
        if len(use.documents) > 1:
            raise BuildError(f"{use.where}: several strategic-merge patches in one entry cannot have a target",
                             path=kust.path, line=use.line)
        assert use.target is not None
        selected = [r for r in acc if use.target.matches(r.value, r.ids)]
        for res in selected:
            _merge_into(acc, res, use.documents[0], use.options)
        self._record(use, [r.id for r in selected])

    def _json(self, use: PatchUse, acc: list[_Res], kust: Kustomization) -> None:
        if use.target is None:
            raise BuildError(f"{use.where}: a JSON6902 patch needs a target", path=kust.path, line=use.line)
        ops = _json_ops(use, kust)
        selected = [r for r in acc if use.target.matches(r.value, r.ids)]
        applied: list[ResId] = []
        errors: list[str] = []
        for res in selected:
            try:
                res.value = apply_json_patch(res.value, ops)
            except PatchFailed as exc:
                errors.append(f"JSON6902 patch on {res.id.full} fails: {exc}")
                continue
            applied.append(res.id)
            res.note_id()
        done = self._record(use, applied)
        self.problems.extend(Problem(message, done) for message in errors)


def _list(kust: Kustomization, key: str) -> list[Any]:
    value = kust.value.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise BuildError(f"'{key}' must be a list", path=kust.path, line=kust.line(key))
    return value


def _string_map(kust: Kustomization, key: str) -> dict[str, str]:
    value = kust.value.get(key) or {}
    if not isinstance(value, dict):
        raise BuildError(f"'{key}' must be a mapping", path=kust.path, line=kust.line(key))
    return {str(k): str(v) for k, v in value.items()}


def _mapping_of(value: Any, allowed: frozenset[str], where: str, shape: str, kust: Kustomization,
                line: int) -> None:
    """`value` must be a mapping of `allowed` keys only, as kustomize insists."""
    if not isinstance(value, dict):
        raise BuildError(f"{where} must be {shape}", path=kust.path, line=line)
    unknown = sorted(set(value) - allowed)
    if unknown:
        raise BuildError(f"{where} has unknown field '{unknown[0]}' (kustomize rejects it)", path=kust.path,
                         line=line)


def _selector(value: Any, where: str, kust: Kustomization, line: int) -> Selector | None:
    if value is None:
        return None
    _mapping_of(value, SELECTOR_KEYS, f"{where}.target", "a mapping", kust, line)
    fields = {str(k): str(v) for k, v in value.items() if v not in (None, "")}
    for key in ("group", "version", "kind", "name", "namespace"):
        if key in fields:
            _compile(fields[key], kust.path, line)
    return Selector(fields)


def _options(value: Any, where: str, kust: Kustomization, line: int) -> frozenset[str]:
    """A patch's `options`: kustomize reads a map of booleans and acts on allowNameChange and
    allowKindChange (anything else it ignores, and so does wave-bot)."""
    if value is None:
        return frozenset()
    if not isinstance(value, dict) or not all(isinstance(v, bool) for v in value.values()):
        raise BuildError(f"{where}.options must be a mapping of booleans (allowNameChange, allowKindChange)",
                         path=kust.path, line=line)
    return frozenset(str(k) for k, v in value.items() if v)


def _name(doc: Mapping[str, Any]) -> str:
    metadata = doc.get("metadata")
    return str(metadata.get("name") or "") if isinstance(metadata, dict) else ""


def _objects(doc: yamlio.Document, path: str) -> list[_Res]:
    """The objects one resource document holds (a `kind: List` holds several)."""
    value = doc.value
    if not isinstance(value, dict):
        raise BuildError("a resource document must be a mapping (an object)", path=path, line=doc.info.start_line)
    if str(value.get("kind", "")).endswith("List") and isinstance(value.get("items"), list):
        items = value["items"]
    else:
        items = [value]
    out = []
    for item in items:
        if not isinstance(item, dict) or not item.get("kind") or not _name(item):
            raise BuildError("a resource needs kind and metadata.name (kustomize refuses it otherwise)", path=path,
                             line=doc.info.start_line)
        item = copy.deepcopy(item)
        out.append(_Res(item, [ResId.of_object(item)], path))
    return out


def _merge_into(acc: list[_Res], res: _Res, patch: Mapping[str, Any], options: frozenset[str]) -> None:
    """Apply one strategic-merge document to `res` the way Resource.ApplySmPatch does: the object
    keeps its apiVersion and namespace, and its kind and name unless the patch's options allow a
    change; `$patch: delete` at the top removes it from the build."""
    before = res.id
    merged = merge_patch(res.value, patch)
    if merged is None:
        acc.remove(res)
        return
    if "allowKindChange" not in options or not merged.get("kind"):
        merged["kind"] = before.kind
    merged["apiVersion"] = before.api_version
    metadata = merged.setdefault("metadata", {})
    if "allowNameChange" not in options or not metadata.get("name"):
        metadata["name"] = before.name
    if before.namespace:
        metadata["namespace"] = before.namespace
    else:
        metadata.pop("namespace", None)
    res.value = merged
    res.note_id()


# ---- JSON patch operations, as kustomize checks them ---------------------------------------


def _json_ops(use: PatchUse, kust: Kustomization) -> list[dict[str, Any]]:
    ops: list[dict[str, Any]] = use.documents[0]
    for op in ops:
        if not isinstance(op, dict) or op.get("op") not in JSON_OPS:
            kind = op.get("op", "unknown") if isinstance(op, dict) else "unknown"
            raise BuildError(f"{use.where}: {shown(kind)} is not a JSON6902 operation (add, remove, replace, move, "
                             "copy, test)", path=use.path or kust.path, line=use.line)
        for key in ("path", *(("from",) if op["op"] in ("move", "copy") else ())):
            if not isinstance(op.get(key), str):
                raise BuildError(f"{use.where}: a '{op['op']}' operation needs '{key}'", path=use.path or kust.path,
                                 line=use.line)
    return ops


__all__ = [
    "Additions", "Build", "BuildError", "Kustomization", "Object", "PatchFailed", "PatchUse", "Problem", "ResId",
    "Selector", "Unsupported",
    "apply_json_patch", "build", "find_kustomization", "is_remote", "label_selector_matches", "merge_patch",
    "read_kustomization", "resolve", "target_matches",
]
