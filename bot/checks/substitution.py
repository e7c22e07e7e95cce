"""Strict post-build substitution: every `${VAR}` a tier's pass ships must be defined for it.

kustomize-controller substitutes after the build, in each object's YAML, with Flux's envsubst
grammar (fluxcd/pkg envsubst, a fork of drone/envsubst):
- `${var}` and the forms that only transform it (`${#var}`, `${var^}`, `${var,,}`, `${var:1:2}`,
  `${var#p}`, `${var%p}`, `${var/p/r}`, ...) need `var`;
- `${var:-default}`, `${var:=default}`, `${var-default}`, `${var=default}` fall back to their default;
- `$var` (no braces) is left alone, and `$${var}` is the escape that ships `${var}` literally.
An object annotated or labelled `kustomize.toolkit.fluxcd.io/substitute: disabled` is not substituted.
Since Flux 2.9 (kustomize-controller v1.9, `StrictPostBuildSubstitutions`) a `var` that no
`postBuild.substitute` key or `substituteFrom` ConfigMap/Secret defines fails the reconcile
("variable not set (strict mode)"); before, it became an empty string. A Kustomization without
`postBuild` substitutes nothing: the `${var}` reaches the cluster as written.
"""
from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

from bot.config import Config
from bot.flux.tiers import Entrypoint, Issue, Tier, locate
from bot.kustomize.build import Object
from bot.model import Severity
from bot.repo.tree import Tree

DISABLED = "kustomize.toolkit.fluxcd.io/substitute"
_NAME = re.compile(r"[_a-zA-Z][_a-zA-Z0-9]*")
_DEFAULTS = (":-", ":=", "-", "=")
CODES = ("substitution-unresolved", "substitution-without-postbuild", "substitution-source-missing")


@dataclass(frozen=True)
class VariableUse:
    """One `${...}` expression in a string."""

    name: str
    text: str
    """The expression as written (`${BACKUP_BUCKET}`)."""
    required: bool
    """False when it carries a default."""
    at: tuple[str | int, ...] = ()
    """The key path, in its object, of the string it is in (from `required`)."""


def references(text: str) -> Iterator[VariableUse]:
    """The variable expressions of `text` as Flux's envsubst reads them."""
    i = 0
    while i < len(text) - 1:
        if text[i] != "$":
            i += 1
        elif text[i + 1] == "$":
            i += 2  # `$$` is an escaped `$`: `$${var}` ships `${var}`
        elif text[i + 1] != "{":
            i += 1  # `$var`: not substituted
        else:
            end = _closing(text, i + 2)
            if end < 0:
                return  # an unclosed `${`: envsubst rejects the whole object, kustomize-controller says so
            body = text[i + 2:end]
            ref = _reference(body, text[i:end + 1])
            if ref is not None:
                yield ref
            i = end + 1


def _closing(text: str, start: int) -> int:
    depth = 1
    for j in range(start, len(text)):
        if text.startswith("${", j):
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return -1


def _reference(body: str, whole: str) -> VariableUse | None:
    body = body[1:] if body.startswith("#") else body  # ${#var}: its length
    match = _NAME.match(body)
    if match is None:
        return None
    rest = body[match.end():]
    has_default = any(rest.startswith(op) for op in _DEFAULTS)
    return VariableUse(match.group(0), whole, not has_default)


def _strings(value: Any, at: tuple[str | int, ...] = ()) -> Iterator[tuple[tuple[str | int, ...], str]]:
    """Every string in `value` (keys included), with its key path."""
    if isinstance(value, str):
        yield at, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield (*at, str(key)), str(key)
            yield from _strings(item, (*at, str(key)))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _strings(item, (*at, i))


def _disabled(obj: Object) -> bool:
    meta = obj.value.get("metadata")
    if not isinstance(meta, dict):
        return False
    return any(isinstance(meta.get(k), dict) and meta[k].get(DISABLED) == "disabled" for k in ("annotations", "labels"))


def required(obj: Object) -> list[VariableUse]:
    """The variables `obj` needs defined (first use of each), unless substitution is disabled on it."""
    if _disabled(obj):
        return []
    seen: dict[str, VariableUse] = {}
    for at, text in _strings(obj.value):
        if "${" not in text:
            continue  # most strings: no expression, and the scan below walks every character
        for ref in references(text):
            if ref.required and ref.name not in seen:
                seen[ref.name] = replace(ref, at=at)
    return list(seen.values())


@dataclass(frozen=True)
class Sources:
    """What a tier's postBuild defines, as far as git says."""

    names: frozenset[str]
    missing: tuple[str, ...]
    """Required substituteFrom sources git does not hold (created out of band, or forgotten)."""
    first: str | None = None
    """The first substituteFrom source found in git, as `<Kind> <name> (<file>)`: where to add a variable."""


def sources(entry: Entrypoint, tier: Tier) -> Sources | None:
    """The variables the tier's postBuild defines; None without postBuild."""
    post = tier.spec().get("postBuild")
    if not isinstance(post, dict):
        return None
    names: set[str] = set()
    inline = post.get("substitute")
    if isinstance(inline, dict):
        names |= {str(k) for k in inline}
    missing = []
    first = None
    refs = post.get("substituteFrom")
    objects = entry.all_objects()
    for ref in refs if isinstance(refs, list) else []:
        if not isinstance(ref, dict):
            continue
        kind, name = ref.get("kind"), ref.get("name")
        found = [o for o in objects if (o.id.kind, o.id.group, o.id.name) == (kind, "", name)
                 and (o.id.namespace or tier.namespace) == tier.namespace]
        for obj in found:
            names |= _keys(obj.value)
            first = first or f"{kind} {name} ({obj.source})"
        if not found and ref.get("optional") is not True:
            missing.append(f"{kind} {tier.namespace}/{name}")
    return Sources(frozenset(names), tuple(missing), first)


def _keys(value: Mapping[str, Any]) -> set[str]:
    """A ConfigMap's or Secret's key names: `data`, `stringData` (a SOPS file keeps them in clear)."""
    out: set[str] = set()
    for field in ("data", "stringData", "binaryData"):
        section = value.get(field)
        if isinstance(section, dict):
            out |= {str(k) for k in section}
    return out


def issues(entry: Entrypoint, config: Config, seen: dict[int, list[VariableUse]] | None = None,
           tree: Tree | None = None) -> list[Issue]:
    """The substitution findings of one entrypoint. `seen` (object id -> its variables) lets the
    entrypoints that share a tier's pass (the same build) scan its objects once; with the `tree` the
    objects come from, each finding has the line of its `${VAR}`."""
    seen = seen if seen is not None else {}

    def line(obj: Object, ref: VariableUse) -> int | None:
        return locate(tree, obj, ref.at, ref.text) if tree is not None else None

    out = []
    for tier in entry.tiers:
        tier_pass = entry.passes.get(tier.key)
        if tier_pass is None:
            continue
        uses = []
        for obj in tier_pass.objects:
            if id(obj) not in seen:
                seen[id(obj)] = required(obj)
            uses += [(obj, ref) for ref in seen[id(obj)]]
        if not uses:
            continue
        defined = sources(entry, tier)
        if defined is None:
            out += [_literal(tier, obj, ref, line(obj, ref)) for obj, ref in uses]
            continue
        unresolved = [(obj, ref) for obj, ref in uses if ref.name not in defined.names]
        if unresolved and defined.missing:
            out.append(_source_missing(tier, defined, unresolved))
        elif unresolved:
            out += [_unresolved(tier, obj, ref, config, defined.first, line(obj, ref)) for obj, ref in unresolved]
    return out


def _what(obj: Object) -> str:
    return f"{obj.id.kind} {obj.id.namespace + '/' if obj.id.namespace else ''}{obj.id.name}"


def _unresolved(tier: Tier, obj: Object, ref: VariableUse, config: Config, first: str | None,
                line: int | None) -> Issue:
    severity: Severity
    if config.strict_substitution:
        severity, effect = "error", ("the reconcile fails ('variable not set (strict mode)'), so the tier never "
                                     f"becomes Ready and every tier after {tier.title} stalls")
    else:
        severity, effect = "warning", "it is applied as an empty string (strict_substitution is off)"
    where = (f"add {ref.name} to the {first}" if first
             else f"add {ref.name} under spec.postBuild.substitute of {tier.title} ({tier.file})")
    return Issue(
        code="substitution-unresolved", severity=severity,
        message=(f"{ref.text} in {obj.source} ({_what(obj)}) is defined by no postBuild source of {tier.title}: "
                 f"{effect}"),
        path=obj.source, line=line, resource=ref.name,
        fix=f"{where}, or give it a default: ${{{ref.name}:=<value>}}", tier=tier.name,
    )


def _literal(tier: Tier, obj: Object, ref: VariableUse, line: int | None) -> Issue:
    return Issue(
        code="substitution-without-postbuild", severity="warning",
        message=(f"{ref.text} in {obj.source} ({_what(obj)}) reaches the cluster as written: {tier.title} "
                 f"({tier.file}) has no spec.postBuild, so Flux substitutes nothing in its pass"),
        path=obj.source, line=line, resource=ref.name,
        fix=(f"# in {tier.file}, under spec: of {tier.title}\npostBuild:\n  substitute:\n    {ref.name}: <value>\n"),
        tier=tier.name,
    )


def _source_missing(tier: Tier, defined: Sources, unresolved: list[tuple[Object, VariableUse]]) -> Issue:
    names = ", ".join(sorted({ref.name for _, ref in unresolved}))
    return Issue(
        code="substitution-source-missing", severity="warning",
        message=(f"{tier.title} substitutes from {', '.join(defined.missing)}, which is not in git, so wave-bot "
                 f"cannot tell whether it defines {names}; Flux fails the reconcile if it does not exist"),
        path=tier.file, line=tier.line, resource=tier.title,
        fix="commit the source (a SOPS-encrypted Secret keeps its key names readable), or mark it optional: true",
        tier=tier.name,
    )


__all__ = ["CODES", "DISABLED", "VariableUse", "Sources", "issues", "references", "required", "sources"]
