"""Patch targets and label selectors, matched the way kustomize matches them (RE2)."""
from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import re2

from bot.kustomize.spec import HINT_BY_HAND, BuildError, Unsupported
from bot.resid import ResourceId

ResId = ResourceId


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


def validate_pattern(pattern: str, where: str, line: int | None) -> None:
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


__all__ = ["ResId", "Selector", "label_selector_matches", "target_matches"]
