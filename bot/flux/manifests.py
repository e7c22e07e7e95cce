"""The objects of one manifest file, parsed once per blob: identity, prune opt-out, Flux's spec fields."""
from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

from bot.flux.vocabulary import PRUNE_DISABLED, PRUNE_KEY
from bot.repo.tree import Tree, blob_id, known_blob_id
from bot.resid import ResourceId
from bot.yamlio import documents as yamlio
from bot.yamlio.goyaml import MAYBE_NOT_STRING, plain_type

LOCAL_CONFIG_KEY = "config.kubernetes.io/local-config"

# The scalars captured from every document: identity, the prune opt-out (Flux honours it as a label
# or an annotation, case-insensitively), kustomize's local-config marker, and the three spec fields
# that decide whether deleting a Flux Kustomization deletes what it owns.
_OBJECT_PATHS: frozenset[tuple[str, ...]] = frozenset({
    ("apiVersion",),
    ("kind",),
    ("metadata", "name"),
    ("metadata", "namespace"),
    ("metadata", "annotations", PRUNE_KEY),
    ("metadata", "labels", PRUNE_KEY),
    ("metadata", "annotations", LOCAL_CONFIG_KEY),
    ("spec", "prune"),
    ("spec", "deletionPolicy"),
    ("spec", "path"),
    ("spec", "targetNamespace"),
})

# Flux reads `prune` as kustomize's kyaml emits it: YAML 1.2, where only true/True/TRUE is true.
# `yes`, `on` and `y` are strings there (kustomize prints them quoted), which the CRD's boolean field
# rejects, so the root Kustomization cannot apply that revision at all: the live object keeps the
# spec it had. So does a quoted `"true"` or `"false"`: a string in every YAML version. Such a value
# is reported (`invalid-prune`) and, for the hazard checks, taken as pruning, the side that loses
# nothing if it is wrong.
_TRUE = frozenset({"true"})
_FALSE = frozenset({"false"})
NOT_A_SCALAR = "a list or mapping"
"""prune_value of a spec.prune written as a list or mapping: kustomize emits it as written, the CRD
rejects it, so it is reported and taken as pruning like any other non-boolean."""
# go-yaml reads these as floats that kustomize cannot print as JSON: it refuses the file, with this
_NOT_JSON = {".inf": "+Inf", ".Inf": "+Inf", ".INF": "+Inf", "+.inf": "+Inf", "+.Inf": "+Inf", "+.INF": "+Inf",
             "-.inf": "-Inf", "-.Inf": "-Inf", "-.INF": "-Inf", ".nan": "NaN", ".NaN": "NaN", ".NAN": "NaN"}


def _capture(path: yamlio.Path) -> bool:
    """Whether `scan` keeps the scalar at `path`; called for every scalar, so kept cheap."""
    if len(path) == 4 and path[1] == "dependsOn" and path[0] == "spec" and path[3] == "name":
        return True
    if path and path[0] == "items":  # the items of a List: ("items", i, *one of the paths above)
        return 3 <= len(path) <= 5 and path[2:] in _OBJECT_PATHS
    return len(path) <= 3 and path in _OBJECT_PATHS


@dataclass(frozen=True)
class _Object:
    """One object (or one unreadable document) of a file, independent of the file's path."""

    line: int
    id: ResourceId | None
    problem: str | None = None
    prune_disabled: bool = False
    flux_prune: bool = False
    deletion_policy: str = ""
    source_path: str = ""
    depends_on: tuple[str, ...] = ()
    prune_value: str = ""
    target_namespace: str = ""
    prune_line: int = 0


@dataclass(frozen=True)
class ParsedFile:
    objects: tuple[_Object, ...]
    sops_key: bool
    json_patch: bool = False
    """Every document is a list, as in a JSON6902 patch."""


class ParseCache:
    """Parsed files keyed by git's blob id of their bytes: a file unchanged between two trees is
    parsed once, and (`parse_at`) not even read again from a git revision that lists the same id.

    Share one cache between the base tree's inventory and the current tree's.
    """

    def __init__(self) -> None:
        self._parsed: dict[str, ParsedFile] = {}
        self.parses = 0
        """How many times bytes were actually parsed (the rest were cache hits)."""

    def parse(self, data: bytes, path: str) -> ParsedFile:
        """The objects in `data`; WaveBotError (naming `path`) when it is not YAML wave-bot accepts."""
        return self._parse(blob_id(data), data, path)

    def parse_at(self, tree: Tree, path: str, *, unique_keys: bool = True) -> ParsedFile:
        """The objects in the file at `path`, read only when no parse of the same blob is at hand.
        A repeated key is refused (kustomize refuses it in a resource) unless not `unique_keys`."""
        known = known_blob_id(tree, path)
        key = known if unique_keys or known is None else f"{known} keys"
        if key is not None and key in self._parsed:
            return self._parsed[key]
        data = tree.read(path)
        return self._parse(known or blob_id(data), data, path, unique_keys)

    def _parse(self, key: str, data: bytes, path: str, unique_keys: bool = True) -> ParsedFile:
        key = key if unique_keys else f"{key} keys"  # a patch file may repeat a key: kept apart
        parsed = self._parsed.get(key)
        if parsed is None:
            self.parses += 1
            docs = yamlio.scan(data, path, capture=_capture, unique_keys=unique_keys)
            parsed = ParsedFile(
                objects=tuple(obj for doc in docs if not doc.empty for obj in _objects(doc)),
                sops_key=any(("sops",) in doc.lines for doc in docs if doc.is_mapping),
                json_patch=bool(docs) and all(not d.is_mapping and not d.empty for d in docs),
            )
            self._parsed[key] = parsed
        return parsed


def _objects(doc: yamlio.DocInfo) -> Iterator[_Object]:
    if not doc.is_mapping:
        yield _Object(doc.start_line, None, "the document is not a Kubernetes object (a mapping with "
                      "apiVersion, kind and metadata.name)")
        return
    kind = doc.scalars.get(("kind",), "")
    if not (kind.endswith("List") and ("items",) in doc.lines):
        obj = _object(doc, ())
        if obj is not None:
            yield obj
        return
    index = 0
    while ("items", index) in doc.lines:
        item = _object(doc, ("items", index))
        if item is not None and item.id is not None and item.id.kind.endswith("List"):
            item = _Object(item.line, None, f"item {index + 1} of this {kind} is itself a list; "
                           "wave-bot expands one level of lists only")
        if item is not None:
            yield item
        index += 1


def _object(doc: yamlio.DocInfo, at: tuple[str | int, ...]) -> _Object | None:
    """The object at `at` (() for the document itself); None for one kustomize or wave-bot skips."""
    def get(*key: str) -> str:
        return doc.scalars.get((*at, *key), "")

    line = doc.lines.get((*at, "apiVersion")) or doc.line(at or ("kind",))
    for key in _IDENTITY:  # kustomize (go-yaml) reads `name: 0755` as the number 493: no Kubernetes name
        path = (*at, *key) if at else key
        value = doc.scalars.get(path)
        if value and value[0] not in MAYBE_NOT_STRING:
            continue  # a string whatever its style: most identities, settled without a lookup more
        what = _go_type(doc, path)
        if what == "null" and key != ("metadata", "namespace") and value is not None:
            return _Object(line, None, f"{'.'.join(key)} is null to kustomize (YAML 1.2); every Kubernetes object "
                           "needs apiVersion, kind and metadata.name")
        if what not in ("a string", "null"):
            shown = f"'{value}'" if value is not None else "a list or mapping"
            return _Object(doc.line(path), None, f"{'.'.join(key)} is {shown}, which kustomize (YAML 1.2) "
                           f"reads as {what}, not a string; quote it")
    identity = {"apiVersion": get("apiVersion"), "kind": get("kind"), "metadata.name": get("metadata", "name")}
    if any(v.startswith("ENC[") for v in [*identity.values(), get("metadata", "namespace")]):
        return None  # encrypted by SOPS without an encrypted_regex: identity unknowable
    if get("metadata", "annotations", LOCAL_CONFIG_KEY).lower() == "true":
        return None  # kustomize drops local-config objects from its output
    missing = [key for key, value in identity.items() if not value]
    if missing:
        what = f"item {int(at[1]) + 1} of this list" if at else "the document"
        return _Object(line, None, f"{what} has no {' or '.join(missing)}; every Kubernetes object needs "
                       "apiVersion, kind and metadata.name")
    prune = PRUNE_DISABLED.casefold()
    depends: list[str] = []
    while (name := doc.scalars.get((*at, "spec", "dependsOn", len(depends), "name"))) is not None:
        depends.append(name)
    prune_value = get("spec", "prune")
    prune_path = (*at, "spec", "prune")
    if prune_path in doc.strings:
        prune_value = json.dumps(prune_value)  # `"true"` is a string to every YAML reader: shown quoted
    elif prune_value in _NOT_JSON:
        return _Object(doc.line(prune_path), None, f"spec.prune is {prune_value}, which kustomize (YAML 1.2) reads "
                       f"as a float it cannot print (json: unsupported value: {_NOT_JSON[prune_value]}), so it "
                       "refuses the file; write true or false")
    elif prune_path not in doc.scalars and prune_path in doc.lines:
        prune_value = NOT_A_SCALAR
    namespace = get("metadata", "namespace") if _go_type(doc, (*at, "metadata", "namespace")) != "null" else ""
    return _Object(
        line=line,
        id=ResourceId.of(identity["apiVersion"], identity["kind"], namespace,
                         identity["metadata.name"]),
        prune_disabled=prune in (get("metadata", "annotations", PRUNE_KEY).casefold(),
                                 get("metadata", "labels", PRUNE_KEY).casefold()),
        flux_prune=prune_value.lower() not in _FALSE if prune_value else False,
        deletion_policy=get("spec", "deletionPolicy"),
        source_path=get("spec", "path"),
        depends_on=tuple(depends),
        prune_value=prune_value,
        target_namespace=get("spec", "targetNamespace"),
        prune_line=doc.line(prune_path) if prune_path in doc.lines else line,
    )


_IDENTITY = (("apiVersion",), ("kind",), ("metadata", "name"), ("metadata", "namespace"))


def _go_type(doc: yamlio.DocInfo, path: yamlio.Path) -> str:
    """What kustomize reads at `path`: a string, null (absent too), a number, ... or a collection."""
    value = doc.scalars.get(path)
    if value is None:
        return "a list or mapping" if path in doc.lines else "null"
    return "a string" if path in doc.strings else plain_type(value)


__all__ = ["NOT_A_SCALAR", "ParseCache", "ParsedFile"]
