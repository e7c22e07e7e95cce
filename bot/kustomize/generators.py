"""configMapGenerator and secretGenerator: the ConfigMaps and Secrets a kustomization makes.

They are objects of the build like any other: Flux applies and prunes them. kustomize (api/kv,
api/hasher) makes each from `literals` (`key=value`), `files` (`path` or `key=path`, relative to the
kustomization) and `envs` (`KEY=VALUE` lines), names it `<name>-<hash>` unless
`disableNameSuffixHash` (in `generatorOptions` or the generator's `options`), and adds the options'
labels and annotations. The hash is the first ten hex digits of the SHA-256 of the object's JSON
(`kind`, `name` -- empty: v5 hashes before it names --, `data`, `binaryData`, and `type` for a
Secret; keys sorted, Go's HTML-safe escaping), with
0, 1, 3, a, e spelled g, h, k, m, t (so it never reads as a number or a word).

`behavior: merge` / `replace` (changing a ConfigMap of a base) is not evaluated: Unsupported.
"""
from __future__ import annotations

import base64
import hashlib
import json
import posixpath
from collections.abc import Callable, Mapping
from typing import Any

from bot.kustomize.spec import HINT_BY_HAND, BuildError, Unsupported

GENERATORS = (("configMapGenerator", "ConfigMap"), ("secretGenerator", "Secret"))
_SPELL = str.maketrans({"0": "g", "1": "h", "3": "k", "a": "m", "e": "t"})


def _go_json(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    for char, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"),
                          ("\u2029", "\\u2029")):
        text = text.replace(char, escaped)
    return text


def name_hash(kind: str, data: Mapping[str, str], binary: Mapping[str, str], secret_type: str) -> str:
    """kustomize's name suffix for a generated ConfigMap or Secret (data values as in the object:
    text for a ConfigMap, base64 for a Secret)."""
    # kustomize v5 hashes the generated object before it names it: the encoded name is empty
    encoded: dict[str, Any] = {"kind": kind, "name": "", "data": dict(data)}
    if kind == "Secret":
        encoded["type"] = secret_type
    elif binary:
        encoded["binaryData"] = dict(binary)
    digest = hashlib.sha256(_go_json(encoded).encode()).hexdigest()
    return digest[:10].translate(_SPELL)


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def generate(kind: str, entry: Any, options: Mapping[str, Any], directory: str, where: str, line: int,
             read: Callable[[str, str, int], bytes]) -> dict[str, Any]:
    """The object one generator entry makes. `read(ref, where, line)` gives a file's bytes."""
    if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or not entry["name"]:
        raise BuildError(f"a {kind} generator needs a name", path=where, line=line)
    behavior = entry.get("behavior") or "create"
    if behavior != "create":
        raise Unsupported(f"{kind} generator '{entry['name']}' has behavior: {behavior}, which wave-bot does not "
                          "evaluate", path=where, line=line, hint=HINT_BY_HAND)
    pairs: list[tuple[str, bytes]] = []
    for literal in _strings(entry.get("literals"), "literals", where, line):
        key, sep, text = literal.partition("=")
        if not sep or not key:
            raise BuildError(f"literal '{literal}' is not key=value", path=where, line=line)
        pairs.append((key, _unquote(text).encode()))
    for ref in _strings(entry.get("files"), "files", where, line):
        key, sep, path = ref.partition("=")
        if not sep:
            key, path = posixpath.basename(ref), ref
        pairs.append((key, read(path, where, line)))
    envs = _strings(entry.get("envs"), "envs", where, line) + ([entry["env"]] if isinstance(entry.get("env"), str)
                                                               else [])
    for ref in envs:
        for number, row in enumerate(read(ref, where, line).decode("utf-8", "replace").splitlines(), 1):
            text = row.strip()
            if not text or text.startswith("#"):
                continue
            key, sep, rest = text.partition("=")
            if not sep:
                raise Unsupported(f"{ref}:{number}: '{key}' takes its value from kustomize's environment, which "
                                  "wave-bot does not read", path=where, line=line, hint=HINT_BY_HAND)
            pairs.append((key, rest.encode()))
    data: dict[str, str] = {}
    binary: dict[str, str] = {}
    for key, raw in pairs:
        if key in data or key in binary:
            raise BuildError(f"{kind} generator '{entry['name']}' sets key '{key}' twice", path=where, line=line)
        if kind == "Secret":
            data[key] = base64.b64encode(raw).decode()
            continue
        try:
            data[key] = raw.decode()
        except UnicodeDecodeError:
            binary[key] = base64.b64encode(raw).decode()
    own: dict[str, Any] = entry["options"] if isinstance(entry.get("options"), dict) else {}
    merged = {**options, **own}
    secret_type = str(entry.get("type") or "Opaque")
    name = entry["name"]
    if merged.get("disableNameSuffixHash") is not True:
        name = f"{name}-{name_hash(kind, data, binary, secret_type)}"
    metadata: dict[str, Any] = {"name": name}
    if entry.get("namespace"):
        metadata["namespace"] = str(entry["namespace"])
    for key in ("labels", "annotations"):
        pairs_of = {**(options.get(key) or {}), **(own.get(key) or {})}
        if pairs_of:
            metadata[key] = {str(k): str(v) for k, v in pairs_of.items()}
    value: dict[str, Any] = {"apiVersion": "v1", "kind": kind, "metadata": metadata}
    if kind == "Secret":
        value["type"] = secret_type
    if data:
        value["data"] = data
    if binary:
        value["binaryData"] = binary
    return value


def _strings(value: Any, key: str, where: str, line: int) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise BuildError(f"a generator's '{key}' must be a list of strings", path=where, line=line)
    return list(value)


__all__ = ["GENERATORS", "generate", "name_hash"]
