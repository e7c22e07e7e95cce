"""What a plain YAML scalar is to go-yaml v3, the YAML kustomize reads resources with.

The scanner keeps every scalar as written; where the type matters (an object's identity must be a
string, a namespace may be null) this says what kustomize makes of it. go-yaml v3 resolves the YAML
1.2 core schema plus a few YAML 1.1 forms, checked against `kubectl kustomize` (v5.8) by
tests/yamlio/test_yaml_differential.py: `0755` is the octal 493 and `1_000` is 1000, `2001-12-14` is a
timestamp, while `yes`, `on` and `y` are strings.
"""
from __future__ import annotations

import re

_NULL = frozenset({"", "~", "null", "Null", "NULL"})
_BOOL = frozenset({"true", "True", "TRUE", "false", "False", "FALSE"})
_NUMBER = re.compile(r"""[-+]?(
      0b[01_]+ | 0o?[0-7_]+ | 0x[0-9a-fA-F_]+ | [0-9][0-9_]*      # integers
    | (\.[0-9]+ | [0-9][0-9_]*(\.[0-9_]*)?)([eE][-+]?[0-9]+)?    # floats
    | \.(inf|Inf|INF)
)|\.(nan|NaN|NAN)""", re.VERBOSE)
MAYBE_NOT_STRING = frozenset("~nNtTfF0123456789+-.")
"""The first characters of every plain scalar go-yaml reads as something else than a string."""
_TIMESTAMP = re.compile(r"[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}([Tt ].*)?")


def plain_type(text: str) -> str:
    """'null', 'a boolean', 'a number', 'a timestamp' or 'a string': what go-yaml reads `text` as,
    written as a plain (unquoted, untagged) scalar."""
    if text and text[0] not in MAYBE_NOT_STRING:  # most names: settled by their first character
        return "a string"
    if text in _NULL:
        return "null"
    if text in _BOOL:
        return "a boolean"
    if _NUMBER.fullmatch(text):
        return "a number"
    if _TIMESTAMP.fullmatch(text):
        return "a timestamp"
    return "a string"


# kustomize reads a kustomization's fields with YAML 1.1's booleans besides go-yaml v3's types
# (measured: `namespace: on` and `namespace: 0o17` both fail "cannot unmarshal ... of type string")
YAML_1_1_BOOLEANS = {**dict.fromkeys(("y", "Y", "yes", "Yes", "YES", "on", "On", "ON"), True),
                     **dict.fromkeys(("n", "N", "no", "No", "NO", "off", "Off", "OFF"), False)}
"""The YAML 1.1 boolean words that are strings in YAML 1.2, with the value each means."""


def kustomization_type(text: str) -> str:
    """What kustomize reads the plain scalar `text` of a kustomization as: 'a boolean', 'a number',
    'null' or 'a string' (a timestamp stays its text)."""
    if text in YAML_1_1_BOOLEANS:
        return "a boolean"
    what = plain_type(text)
    return "a string" if what == "a timestamp" else what


__all__ = ["MAYBE_NOT_STRING", "YAML_1_1_BOOLEANS", "kustomization_type", "plain_type"]
