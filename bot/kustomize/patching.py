"""The two patch algorithms kustomize applies to objects it has no schema for (every custom
resource, Flux's Kustomization included): strategic merge without a schema, and RFC 6902 JSON patch.

Pure functions over plain YAML values; `bot.kustomize.build` decides which patch applies to which object.
"""
from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

# Strategic-merge directives (`$patch`, `$retainKeys`, ...) only make sense with a schema; without
# one (custom resources) only `$patch: replace|delete` changes the result.
_DIRECTIVE = "$"


def merge_patch(target: Any, patch: Any) -> Any:
    """Strategic merge of `patch` into `target` for an object kustomize has no schema for (every
    custom resource): mappings merge key by key, `null` deletes a key, `$patch: replace` replaces a
    mapping, `$patch: delete` removes it (None is returned), anything else (lists too) replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    directive = patch.get("$patch")
    if directive == "delete":
        return None
    body = {k: v for k, v in patch.items() if not str(k).startswith(_DIRECTIVE)}
    if directive == "replace" or not isinstance(target, dict):
        return {k: merge_patch(None, v) for k, v in body.items() if v is not None}
    out = copy.deepcopy(target)
    for key, value in body.items():
        if value is None:
            out.pop(key, None)
            continue
        merged = merge_patch(out.get(key), value)
        if merged is None:
            out.pop(key, None)
        else:
            out[key] = merged
    return out


# ---- JSON patch (RFC 6902) ---------------------------------------------------------------------


class PatchFailed(Exception):
    """A JSON6902 operation that does not apply to this document."""


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchFailed(f"'{path}' is not a JSON pointer")
    return [part.replace("~1", "/").replace("~0", "~") for part in path[1:].split("/")]


def _parent(doc: Any, parts: list[str], path: str) -> Any:
    node = doc
    for part in parts[:-1]:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise PatchFailed(f"doc is missing path: {path}")
    if not isinstance(node, (dict, list)):
        raise PatchFailed(f"doc is missing path: {path}")
    return node


def _index(node: list[Any], part: str, path: str, *, insert: bool) -> int:
    if insert and part == "-":
        return len(node)
    if not part.isdigit() or int(part) > len(node) - (0 if insert else 1):
        raise PatchFailed(f"index out of range in {path}")
    return int(part)


def _get(doc: Any, path: str) -> Any:
    parts = _pointer(path)
    if not parts:
        return doc
    node, last = _parent(doc, parts, path), parts[-1]
    if isinstance(node, dict):
        if last not in node:
            raise PatchFailed(f"doc is missing path: {path}")
        return node[last]
    return node[_index(node, last, path, insert=False)]


def _add(doc: Any, path: str, value: Any, *, replace: bool = False) -> Any:
    parts = _pointer(path)
    if not parts:
        return copy.deepcopy(value)
    node, last = _parent(doc, parts, path), parts[-1]
    if isinstance(node, dict):
        node[last] = copy.deepcopy(value)  # kustomize's `replace` of a missing key adds it too
    elif replace:
        node[_index(node, last, path, insert=False)] = copy.deepcopy(value)
    else:
        node.insert(_index(node, last, path, insert=True), copy.deepcopy(value))
    return doc


def _remove(doc: Any, path: str) -> Any:
    parts = _pointer(path)
    if not parts:
        raise PatchFailed("cannot remove the whole document")
    node, last = _parent(doc, parts, path), parts[-1]
    if isinstance(node, dict):
        if last not in node:
            raise PatchFailed(f"Unable to remove nonexistent key: {last}")
        del node[last]
    else:
        del node[_index(node, last, path, insert=False)]
    return doc


def _apply_op(doc: Any, op: Mapping[str, Any]) -> Any:
    name, path = op["op"], op["path"]
    if name == "add":
        return _add(doc, path, op.get("value"))
    if name == "replace":
        _get_parent(doc, path)  # the parent must exist; a missing last key is added (as kustomize does)
        return _add(doc, path, op.get("value"), replace=True)
    if name == "remove":
        return _remove(doc, path)
    if name == "copy":
        return _add(doc, path, _get(doc, op["from"]))
    if name == "move":
        value = _get(doc, op["from"])
        return _add(_remove(doc, op["from"]), path, value)
    if _get(doc, path) != op.get("value"):  # test
        raise PatchFailed(f"testing value {path} failed")
    return doc


def _get_parent(doc: Any, path: str) -> None:
    parts = _pointer(path)
    if parts:
        _parent(doc, parts, path)


def apply_json_patch(doc: Any, ops: Sequence[Mapping[str, Any]]) -> Any:
    """Apply RFC 6902 operations to a copy of `doc`; PatchFailed when one does not apply."""
    out = copy.deepcopy(doc)
    for op in ops:
        out = _apply_op(out, op)
    return out


__all__ = ["PatchFailed", "apply_json_patch", "merge_patch"]
