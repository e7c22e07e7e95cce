"""Reading kustomization files and their patches: the evaluator's input, checked field by field."""
from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from bot.errors import WaveBotError
from bot.kustomize.select import ResId, Selector, validate_pattern
from bot.kustomize.spec import (
    COMPONENT_API,
    EVALUATED,
    HINT_BY_HAND,
    IGNORED,
    KUSTOMIZATION_API,
    KUSTOMIZATION_FILES,
    PATCH_KEYS,
    SELECTOR_KEYS,
    UNSUPPORTED,
    BuildError,
    Unsupported,
)
from bot.naming import shown
from bot.repo.tree import Tree
from bot.yamlio import documents as yamlio
from bot.yamlio.goyaml import kustomization_type

_REMOTE = re.compile(r"^([a-z][a-z0-9+.-]*://|git@|git::)|\?ref=|^(github\.com|gitlab\.com|bitbucket\.org)/")
_HOST_LIKE = re.compile(r"^[a-z0-9-]+(\.[a-z0-9-]+)+/")
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
    file defining the Flux Kustomization, `value` holds `patches` and `components`, and `namespace`
    for its `spec.targetNamespace` (which replaces the kustomization's own `namespace:`)."""

    built: str = ""
    """The directory kustomize-controller builds."""

    @property
    def directory(self) -> str:
        return self.built

    def line(self, *keys: str | int) -> int:
        if keys[:1] == ("namespace",):
            keys = ("targetNamespace", *keys[1:])
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
        raise Unsupported(yamlio.too_large(), path=path, hint=HINT_BY_HAND)
    return data


def _load(data: bytes, path: str, duplicates: Literal["error", "last", "patch"] = "error", *,
          empty: bool = False) -> list[yamlio.Document]:
    """YAML documents through yamlio (its limits), with a YAML mistake as a BuildError; an empty
    document (`---` with nothing after it) only with `empty`. A repeated key
    is what kustomize (v5.8) makes of it: the last value in a kustomization (`"last"`), an error in a
    resource (`"error"`); in a patch (`"patch"`) the last value for a JSON6902 one, and Unsupported
    for a strategic-merge one: kustomize refuses it for a built-in kind, and for a custom resource
    (a Flux Kustomization) keeps the first value, or fails when the key sits in a part the patch adds
    whole; wave-bot does not guess which."""
    try:
        try:
            return [d for d in yamlio.load(data, path, duplicates="last" if duplicates == "last" else "error")
                    if empty or d.value is not None]
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
    data = read_bytes(tree, path)
    # kustomize unmarshals the first document alone: an empty one (`---` twice) is an empty file to
    # it, and what follows is never read, so a resource listed there is silently not applied
    docs = _load(data, path, duplicates="last", empty=True)
    later = [d for d in docs[1:] if d.value is not None]
    if not docs or docs[0].value is None:
        if not later:
            raise BuildError("kustomization file is empty", path=path)
        raise BuildError("kustomization file is empty: its first YAML document, the only one kustomize reads, is "
                         "empty", path=path, line=docs[0].info.start_line,
                         hint=f"delete the `---` lines above line {later[0].info.start_line}")
    if later:
        at = later[0].info.start_line  # its `---` line
        raise Unsupported("kustomization file holds several YAML documents; kustomize reads only the first and "
                          "ignores the rest, so nothing listed from here on is applied", path=path, line=at,
                          hint=f"delete the `---` on line {at} to make one document, or delete what follows it")
    doc = docs[0]
    if not isinstance(doc.value, dict):
        raise BuildError("kustomization file is not a mapping of fields", path=path, line=doc.info.start_line)
    kust = Kustomization(path, doc.value, doc.info)
    if check:
        _check_strings(data, path)  # first: kustomize fails on the type before it looks at a value
        _check_fields(kust)
        if all(v is None for k, v in kust.value.items() if k not in ("apiVersion", "kind")):
            raise BuildError("kustomization file is empty: it sets no field but apiVersion and kind (kustomize: "
                             "kustomization.yaml is empty)", path=path)
    return kust


_SELECTOR_FIELDS = {"name": "ResId.name", "namespace": "ResId.namespace", "kind": "ResId.Gvk.kind",
                    "group": "ResId.Gvk.group", "version": "ResId.Gvk.version", "labelSelector": "labelSelector",
                    "annotationSelector": "annotationSelector"}


def _go_field(key: yamlio.Path) -> tuple[str, str] | None:
    """(Go field, its type) of a string field wave-bot evaluates, as kustomize names it in its error."""
    head, rest = key[0], key[1:]
    if not rest and head in ("apiVersion", "kind"):
        return f"Kustomization.TypeMeta.{head}", "string"
    if not rest and head == "namespace":
        return "Kustomization.namespace", "string"
    if len(rest) == 1 and isinstance(rest[0], int) and head in ("resources", "components", "bases"):
        return f"Kustomization.{head}", "string"
    if len(rest) == 1 and isinstance(rest[0], int) and head == "patchesStrategicMerge":
        return "Kustomization.patchesStrategicMerge", "types.PatchStrategicMerge"
    if len(rest) == 1 and isinstance(rest[0], str) and head in ("commonLabels", "commonAnnotations"):
        return f"Kustomization.{head}", "string"
    if len(rest) == 3 and head == "labels" and rest[1] == "pairs":
        return "Label.labels.pairs", "string"
    if len(rest) == 2 and head in ("patches", "patchesJson6902") and rest[1] in ("path", "patch"):
        return f"Patch.{head}.{rest[1]}", "string"
    if len(rest) == 3 and head in ("patches", "patchesJson6902") and rest[1] == "target" \
            and rest[2] in _SELECTOR_FIELDS:
        return f"Selector.{head}.target.{_SELECTOR_FIELDS[str(rest[2])]}", "string"
    return None


def _check_strings(data: bytes, path: str) -> None:
    """Refuse, as kustomize does, a string field written as a plain scalar kustomize reads as a
    boolean or a number: it reads a kustomization with YAML 1.1's `yes`/`on`/`y` booleans, so
    `namespace: on` stops the build where wave-bot would have read the namespace "on"."""
    (doc,) = [d for d in yamlio.scan(data, path, capture=lambda key: _go_field(key) is not None) if not d.empty]
    for key, text in doc.scalars.items():
        what = kustomization_type(text) if key not in doc.strings else "a string"
        field = _go_field(key)
        if field is not None and what in ("a boolean", "a number"):
            shown_key = ".".join(str(k) if isinstance(k, str) else f"[{k}]" for k in key).replace(".[", "[")
            raise BuildError(f"{shown_key} is {text}, which kustomize reads in a kustomization as {what} (json: "
                             f"cannot unmarshal {'bool' if what == 'a boolean' else 'number'} into Go struct "
                             f"field {field[0]} of type {field[1]})", path=path, line=doc.line(key),
                             hint=f"quote it: '{text}'")


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


def read_patch(tree: Tree, kust: Kustomization, key: PatchField, i: int, entry: Any, depth: int = 0,
               count: Callable[[str], None] | None = None) -> PatchUse:
    """Entry `i` of the patch field `key` of `kust`, read (its file too) but not applied: the one
    reading of a patch entry the evaluator and `bot.kustomize.repository` share. BuildError when
    kustomize would refuse the entry; `count` is told each file read."""
    line = kust.line(key, i)
    if key == "patchesStrategicMerge":
        return _read_legacy_smp(tree, kust, i, entry, depth, line, count)
    _mapping_of(entry, PATCH_KEYS, f"{key}[{i}]", "a mapping (path/patch, target)", kust, line)
    given = [k for k in ("path", "patch") if entry.get(k) not in (None, "")]  # kustomize: '' or null is unset
    if len(given) != 1:
        raise BuildError(f"{key}[{i}] needs exactly one of 'path' and 'patch'", path=kust.path, line=line)
    target = _selector(entry.get("target"), f"{key}[{i}]", kust, line)
    if key == "patchesJson6902" and (target is None or "name" not in target.fields):
        raise BuildError(f"{key}[{i}] needs a target with a name (kustomize: must specify the target name)",
                         path=kust.path, line=line)
    path = None
    if given == ["path"]:
        if not isinstance(entry["path"], str):
            raise BuildError(f"{key}[{i}].path must be a string", path=kust.path, line=line)
        path = resolve(kust.directory, entry["path"], kust.path, line, tree=tree)
    elif not isinstance(entry["patch"], str):
        raise BuildError(f"{key}[{i}].patch must be a string (use `patch: |`)", path=kust.path, line=line)
    docs = _patch_documents(tree, kust, key, i, path, entry.get("patch"), count)
    if len(docs) == 1 and isinstance(docs[0], list):
        form: Literal["smp", "json6902"] = "json6902"
    elif all(isinstance(d, dict) for d in docs) and key != "patchesJson6902":
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
    if not docs and key != "patches":  # kustomize applies a `patches` entry of comments only as nothing
        raise BuildError(f"{key}[{i}] is an empty patch", path=kust.path, line=kust.line(key, i))
    for doc in docs:
        if isinstance(doc, dict) and not (doc.get("kind") and _name(doc)):
            raise BuildError(f"{key}[{i}]: a strategic-merge patch needs kind and metadata.name "
                             "(kustomize cannot parse it otherwise)", path=path or kust.path,
                             line=kust.line(key, i))
    return docs


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
            validate_pattern(fields[key], kust.path, line)
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


__all__ = [
    "Additions", "Kustomization", "PatchUse", "find_kustomization", "is_remote", "read_kustomization",
    "resolve",
]
