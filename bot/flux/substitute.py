"""postBuild substitution as kustomize-controller runs it, over the values git holds.

After the build, for a Flux Kustomization with `spec.postBuild`, the controller substitutes each
object's YAML with Flux's envsubst grammar (fluxcd/pkg `kustomize_varsub.go`): variables come from
`substituteFrom` ConfigMaps and Secrets (in the Kustomization's namespace, in order, later ones
overriding), then `substitute` (overriding those); newlines are dropped from values. An object
labelled or annotated `kustomize.toolkit.fluxcd.io/substitute: disabled` is left as it is.

Grammar (the fork of drone/envsubst Flux uses):
- `${var}` takes the value; `${var:-d}` / `${var:=d}` take `d` when var is unset or empty,
  `${var-d}` / `${var=d}` when it is unset (`d` may itself hold `${...}`);
- `${var^^}`, `${var,,}`, `${var^}`, `${var,}` change the case; other operators are not evaluated
  here (the expression is unresolved);
- `$var` without braces is left alone, and `$$` is an escaped `$` (`$${var}` ships `${var}`).

wave-bot knows a value only where git holds it in clear: a variable whose source is missing from
git, or encrypted (SOPS), is unknown, and an expression that needs it is left as written and
reported unresolved, never guessed (Flux would substitute an empty string, or fail in strict mode).
"""
from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from bot.flux.vocabulary import SUBSTITUTE_DISABLED, SUBSTITUTE_KEY

_FIRST = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")
_REST = _FIRST | frozenset("0123456789")
def _first_upper(value: str) -> str:
    return value[:1].upper() + value[1:]


def _first_lower(value: str) -> str:
    return value[:1].lower() + value[1:]


_CASE: dict[str, Callable[[str], str]] = {"^^": str.upper, ",,": str.lower, "^": _first_upper, ",": _first_lower}


@dataclass(frozen=True)
class Variables:
    """What postBuild gives one Flux Kustomization, as far as git tells."""

    values: Mapping[str, str]
    """Variables whose value git holds."""
    unknown: frozenset[str] = frozenset()
    """Variables a source defines with a value git does not hold in clear (SOPS-encrypted)."""
    missing: tuple[str, ...] = ()
    """substituteFrom sources git does not hold (`ConfigMap/name`): any variable may come from them."""

    @property
    def complete(self) -> bool:
        """Every source was found: a variable none defines is unset (not merely unknown)."""
        return not self.missing


def substitute_text(text: str, variables: Variables, unresolved: set[str]) -> str:
    """`text` substituted; the names of variables an expression needed and could not get are added
    to `unresolved` (that expression is kept as written)."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c != "$" or i + 1 >= n:
            out.append(c)
            i += 1
        elif text[i + 1] == "$":
            out.append("$")
            i += 2
        elif text[i + 1] != "{":
            out.append(c)
            i += 1
        else:
            end = _closing(text, i + 2)
            if end < 0:
                out.append(text[i:])
                unresolved.add(text[i:])
                break
            out.append(_expression(text[i + 2:end], text[i:end + 1], variables, unresolved))
            i = end + 1
    return "".join(out)


def _closing(text: str, start: int) -> int:
    depth = 1
    j = start
    while j < len(text):
        if text.startswith("${", j):
            depth += 1
            j += 2
            continue
        if text[j] == "}":
            depth -= 1
            if depth == 0:
                return j
        j += 1
    return -1


def _expression(body: str, whole: str, variables: Variables, unresolved: set[str]) -> str:
    j = 0
    while j < len(body) and (body[j] in _REST if j else body[j] in _FIRST):
        j += 1
    name, rest = body[:j], body[j:]
    if not name:
        unresolved.add(whole)
        return whole
    known = name in variables.values
    value = variables.values.get(name, "")
    if not known and name in variables.unknown or not known and not variables.complete:
        state = "unknown"
    else:
        state = "set" if known else "unset"
    for op in (":-", ":=", "-", "="):
        if rest.startswith(op):
            empty_counts = op.startswith(":")
            if state == "unknown":
                unresolved.add(name)
                return whole
            if state == "unset" or (empty_counts and value == ""):
                return substitute_text(rest[len(op):], variables, unresolved)
            return value
    if rest and rest not in _CASE:
        unresolved.add(name)
        return whole
    if state != "set":
        unresolved.add(name)
        return whole
    return _CASE[rest](value) if rest else value


def substitute_value(value: Any, variables: Variables, unresolved: set[str]) -> Any:
    """`value` (a parsed object) with every string substituted."""
    if isinstance(value, str):
        return substitute_text(value, variables, unresolved) if "$" in value else value
    if isinstance(value, list):
        return [substitute_value(v, variables, unresolved) for v in value]
    if isinstance(value, dict):
        return {k: substitute_value(v, variables, unresolved) for k, v in value.items()}
    return value


def disabled(value: Mapping[str, Any]) -> bool:
    """Labelled or annotated `kustomize.toolkit.fluxcd.io/substitute: disabled`."""
    metadata = value.get("metadata") if isinstance(value.get("metadata"), dict) else {}
    assert isinstance(metadata, dict)
    for key in ("labels", "annotations"):
        pairs = metadata.get(key)
        if isinstance(pairs, dict) and pairs.get(SUBSTITUTE_KEY) == SUBSTITUTE_DISABLED:
            return True
    return False


def source_data(value: Mapping[str, Any]) -> tuple[dict[str, str], frozenset[str]]:
    """(values in clear, keys whose value is not) of a ConfigMap's or Secret's data, as the controller
    reads them (a Secret's `data` base64-decoded; `stringData` is what the API server merges in)."""
    clear: dict[str, str] = {}
    hidden: set[str] = set()
    encrypted = isinstance(value.get("sops"), dict)
    secret = value.get("kind") == "Secret"
    for field in ("data", "stringData") if secret else ("data",):
        data = value.get(field)
        for key, raw in (data.items() if isinstance(data, dict) else []):
            text = "" if raw is None else str(raw)
            if encrypted and text.startswith("ENC["):
                hidden.add(str(key))
                continue
            if secret and field == "data":
                try:
                    text = base64.b64decode(text, validate=True).decode()
                except (binascii.Error, UnicodeDecodeError):
                    hidden.add(str(key))
                    continue
            clear[str(key)] = text.replace("\n", "")
    return clear, frozenset(hidden)


__all__ = ["Variables", "disabled", "source_data", "substitute_text", "substitute_value"]
