"""`.wave-bot.yaml`: the repository's layout and conventions, every key defaulting to the seed layout."""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bot.errors import WaveBotError
from bot.naming import did_you_mean, is_dns_label, is_safe_relpath, shown
from bot.side import SIDE_SUFFIX, Side, Slot
from bot.yamlio import documents as yamlio

if TYPE_CHECKING:
    from bot.repo.tree import Tree

CONFIG_FILE = ".wave-bot.yaml"
MODES = ("auto", "review", "waves")
WAVE_DIR_PREFIX = "wave-"


@dataclass(frozen=True)
class ExtraUnit:
    """An app-tier unit without a ServiceDefinition, placed relative to an anchor node."""

    name: str
    anchor: str
    above: bool = False
    files: tuple[str, ...] = ()
    line: int = field(default=0, compare=False)


@dataclass(frozen=True)
class CrdSource:
    """Where the CRD of `kind` (`group/Kind`, or `group/*` for every kind of the group) comes from,
    when git does not say: `kustomization` names the Flux Kustomization that installs it (a
    HelmRelease's chart), `created_by` (`group/Kind`) the CR a controller creates it from at runtime."""

    kind: str
    kustomization: str | None = None
    created_by: str | None = None
    line: int = field(default=0, compare=False)


@dataclass(frozen=True)
class Config:
    """Where things live and how they are named. Paths are repo-relative POSIX paths."""

    catalog_dir: str = "catalog"
    apps_dir: str = "apps"
    base_dir: str = "clusters/base"
    wave_name: str = "apps-wave-{n}"
    root_depends_on: tuple[str, ...] = ("platform-config",)
    leaf_patterns: tuple[str, ...] = ("*-db",)
    file_suffixes: tuple[str, ...] = ("", "-bootstrap-secret", "-app")
    extra_units: tuple[ExtraUnit, ...] = ()
    kustomization_template: Mapping[str, Any] | None = None
    overlays: tuple[str, ...] | None = None
    decryption_secret: str | None = "sops-age"
    """The Secret every wave's secretRef names; None: a controller-level key (no secretRef needed)."""
    stateful_kinds: tuple[str, ...] = ()
    non_gating: tuple[str, ...] = ()
    """Units that go to their wave's side branch: applied after what they need, gating nobody."""
    side_name: str = "{wave_name}-side"
    """The name of wave N's side branch; `{wave_name}` is wave N's name, `{n}` its number."""
    dependencies: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """Units declared here instead of by a ServiceDefinition: (name, what it needs), in file order."""
    strict_substitution: bool = True
    """Flux >= 2.9 fails a reconcile on a `${VAR}` no postBuild source defines; false for older Flux."""
    crd_sources: tuple[CrdSource, ...] = ()
    mode: str = "auto"
    """`waves` (the catalog's layout), `review` (only what a change makes Flux delete and the tier
    checks: no waves, nothing written) or `auto`: review when there is no catalog and no `dependencies`."""
    source: str = field(default=CONFIG_FILE, compare=False)
    non_gating_lines: tuple[int, ...] = field(default=(), compare=False)
    """The line of each `non_gating` entry, for messages."""
    lines: Mapping[str, int] = field(default_factory=dict, compare=False)
    """Key -> its line in `source`, for errors about a value the file sets."""

    def where(self, key: str) -> tuple[str | None, int | None]:
        """(file, line) of `key` when the config file sets it; (None, None) for a default."""
        return (self.source, self.lines[key]) if key in self.lines else (None, None)

    def wave_dir(self, n: Slot) -> str:
        if isinstance(n, Side):
            return f"{self.apps_dir}/{WAVE_DIR_PREFIX}{n.wave}{SIDE_SUFFIX}"
        return f"{self.apps_dir}/{WAVE_DIR_PREFIX}{n}"

    def wave_cr_name(self, n: Slot) -> str:
        if isinstance(n, Side):
            return self.side_pattern().replace("{n}", str(n.wave))
        return self.wave_name.replace("{n}", str(n))

    def wave_cr_path(self, n: Slot) -> str:
        return f"{self.base_dir}/{self.wave_cr_name(n)}.yaml"

    def wave_depends_on(self, n: Slot) -> tuple[str, ...]:
        """What wave n's Flux Kustomization (or its side branch's) depends on: wave N-1, or the root."""
        wave = n.wave if isinstance(n, Side) else n
        return self.root_depends_on if wave == 0 else (self.wave_cr_name(wave - 1),)

    def side_pattern(self) -> str:
        return self.side_name.replace("{wave_name}", self.wave_name)

    def wave_of_dir(self, name: str) -> int | None:
        """`wave-3` -> 3; anything else (including `wave-03` and `wave-3-side`) -> None."""
        digits = name[len(WAVE_DIR_PREFIX):] if name.startswith(WAVE_DIR_PREFIX) else ""
        return _number(digits)

    def slot_of_dir(self, name: str) -> Slot | None:
        """`wave-3` -> 3, `wave-3-side` -> Side(3); anything else -> None."""
        if name.endswith(SIDE_SUFFIX):
            wave = self.wave_of_dir(name[: -len(SIDE_SUFFIX)])
            return Side(wave) if wave is not None else None
        return self.wave_of_dir(name)

    def wave_of_cr_file(self, name: str) -> int | None:
        """`apps-wave-3.yaml` -> 3 for this config's `wave_name`; anything else -> None."""
        return _match(self.wave_name, name)

    def slot_of_cr_file(self, name: str) -> Slot | None:
        """`apps-wave-3.yaml` -> 3, `apps-wave-3-side.yaml` -> Side(3); anything else -> None."""
        wave = _match(self.side_pattern(), name)
        return Side(wave) if wave is not None else self.wave_of_cr_file(name)


def _number(digits: str) -> int | None:
    return int(digits) if digits.isdigit() and str(int(digits)) == digits else None


def _match(pattern: str, name: str) -> int | None:
    """The number `{n}` stands for when `name` is `pattern`.yaml; None when it is not."""
    prefix, _, suffix = pattern.partition("{n}")
    suffix += ".yaml"
    if not (name.startswith(prefix) and name.endswith(suffix)) or len(name) < len(prefix) + len(suffix):
        return None
    return _number(name[len(prefix): len(name) - len(suffix)])


_STR_LISTS = ("root_depends_on", "leaf_patterns", "file_suffixes", "stateful_kinds", "overlays", "non_gating")
_INTERNAL = ("source", "non_gating_lines", "lines")
_PATHS = ("catalog_dir", "apps_dir", "base_dir")
_TEMPLATE_KEYS = {"apiVersion", "kind", "metadata", "spec"}
_BOT_OWNED = {("metadata", "name"), ("spec", "path"), ("spec", "dependsOn")}


def load_config(tree: Tree, path: str | None = None) -> Config:
    """The config at repository path `path` in `tree`, else `.wave-bot.yaml`, else the defaults."""
    path = path or CONFIG_FILE
    if tree.kind(path) is None:
        if path != CONFIG_FILE:
            raise WaveBotError("config file not found in the repository", path=path)
        return Config()
    return parse_config(tree.read(path), path)


def parse_config(data: bytes, path: str) -> Config:
    """Parse `.wave-bot.yaml` bytes; every mistake is a WaveBotError naming the key and line."""
    doc = yamlio.load_one(data, path)
    if doc is None:
        return Config(source=path)
    if not isinstance(doc.value, dict):
        raise WaveBotError("the config must be a mapping of keys", path=path, line=doc.info.start_line)
    known = [f.name for f in dataclasses.fields(Config) if f.name not in _INTERNAL]
    lines: dict[str, int] = {}
    values: dict[str, Any] = {"source": path, "lines": lines}
    for key, value in doc.value.items():
        line = doc.info.line((key,))
        lines[str(key)] = line
        if key not in known:
            raise WaveBotError(
                f"unknown key '{key}'{did_you_mean(str(key), known)}",
                path=path,
                line=line,
                hint=f"valid keys: {', '.join(known)}",
            )
        values[key] = _convert(key, value, path, doc.info)
    if "non_gating" in values:
        values["non_gating_lines"] = tuple(doc.info.line(("non_gating", i)) for i in range(len(values["non_gating"])))
    config = Config(**values)
    _check_wave_name(config, path, doc.info.line(("wave_name",)))
    _check_side_name(config, path, doc.info.line(("side_name",)))
    _check_non_gating(config, path)
    return config


def _bad(key: str, expected: str, path: str, line: int) -> WaveBotError:
    return WaveBotError(f"'{key}' must be {expected}", path=path, line=line)


def _convert(key: str, value: Any, path: str, info: yamlio.DocInfo) -> Any:
    line = info.line((key,))
    if key in _STR_LISTS:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise _bad(key, "a list of strings", path, line)
        # '.' is safe but names the root, which no directory key may be: its files would all be the
        # catalog's, and the wave and overlay paths built from it ('./apps-wave-0.yaml') name nothing
        if key == "overlays" and not all(is_safe_relpath(v) and v != "." for v in value):
            raise _bad(key, "a list of directories inside the repository, below its root", path, line)
        return tuple(value)
    if key in _PATHS:
        if not isinstance(value, str) or not is_safe_relpath(value):
            raise _bad(key, "a relative path inside the repository (no '..', no leading '/')", path, line)
        if value == ".":
            raise _bad(key, "a directory below the repository root, not the root ('.')", path, line)
        return value
    if key == "decryption_secret" and value is None:
        return None  # controller-level key (kustomize-controller --sops-age-secret)
    if key in ("wave_name", "decryption_secret", "side_name"):
        if not isinstance(value, str) or not value:
            raise _bad(key, "a non-empty string", path, line)
        return value
    if key == "extra_units":
        if not isinstance(value, list):
            raise _bad(key, "a list of units (name, anchor, above, files)", path, line)
        return tuple(_extra_unit(item, path, info, i) for i, item in enumerate(value))
    if key == "kustomization_template":
        return _template(value, path, line)
    if key == "dependencies":
        return _dependencies(value, path, info)
    if key == "strict_substitution":
        if not isinstance(value, bool):
            raise _bad(key, "true or false", path, line)
        return value
    if key == "mode":
        if value not in MODES:
            raise WaveBotError(f"'mode' must be one of {', '.join(MODES)}, got {shown(value)}"
                               f"{did_you_mean(str(value), MODES)}", path=path, line=line,
                               hint="review: no waves, only the review of what a change deletes and the tier checks; "
                                    "waves: the catalog's layout; auto (the default): review without a catalog")
        return value
    if key == "crd_sources":
        if not isinstance(value, list):
            raise _bad(key, "a list of sources (kind, and kustomization or created_by)", path, line)
        return tuple(_crd_source(item, path, info, i) for i, item in enumerate(value))
    raise AssertionError(key)  # pragma: no cover - every dataclass field is handled above


_UNIT_KEYS = ("name", "anchor", "above", "files")


def _extra_unit(item: Any, path: str, info: yamlio.DocInfo, index: int) -> ExtraUnit:
    line = info.line(("extra_units", index))
    if not isinstance(item, dict):
        raise _bad("extra_units", "a list of mappings", path, line)
    unknown = sorted(str(k) for k in set(item) - set(_UNIT_KEYS))
    if unknown:
        key = unknown[0]
        raise WaveBotError(f"unknown key '{key}' in extra_units{did_you_mean(key, _UNIT_KEYS)}", path=path,
                           line=info.line(("extra_units", index, key)),
                           hint=f"an extra unit has: {', '.join(_UNIT_KEYS)}")
    name, anchor = item.get("name"), item.get("anchor")
    if not is_dns_label(name):
        raise _bad("extra_units[].name", "a DNS-1123 label (lower-case letters, digits, '-')", path, line)
    if not isinstance(anchor, str) or not anchor:
        raise _bad(f"extra_units[{name}].anchor", "the name of a catalog node", path, line)
    above = item.get("above", False)
    if not isinstance(above, bool):
        raise _bad(f"extra_units[{name}].above", "true or false", path, line)
    files = item.get("files", [])
    if not isinstance(files, list) or not all(
        isinstance(f, str) and "/" not in f and f not in ("", ".", "..") for f in files
    ):
        raise _bad(f"extra_units[{name}].files", "a list of file or directory names, without a path (no '/')",
                   path, line)
    return ExtraUnit(name=str(name), anchor=anchor, above=above, files=tuple(files), line=line)


def _dependencies(value: Any, path: str, info: yamlio.DocInfo) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """`dependencies: {unit: [what it needs, ...]}`, checked as the catalog checks a ServiceDefinition
    (unknown names are left to the wave computation, which knows every unit)."""
    if not isinstance(value, dict):
        raise _bad("dependencies", "a mapping from each unit to the list of units it needs", path,
                   info.line(("dependencies",)))
    out = []
    for name, needs in value.items():
        line = info.line(("dependencies", name))
        if not is_dns_label(name):
            raise WaveBotError(f"dependencies names {shown(name)}, which is not a DNS-1123 label", path=path,
                               line=line, hint="use lower-case letters, digits and '-', at most 63 characters")
        needs = [] if needs is None else needs
        if not isinstance(needs, list):
            raise WaveBotError(f"dependencies of '{name}' must be a list of unit names", path=path, line=line,
                               hint=f"write it as '{name}: [other-unit]'")
        for index, target in enumerate(needs):
            where = info.line(("dependencies", name, index))
            if not is_dns_label(target):
                raise WaveBotError(f"dependency {index + 1} of '{name}' must name a unit (a DNS-1123 label), got "
                                   f"{shown(target)}", path=path, line=where, hint="write each as a plain name")
            if target == name:
                raise WaveBotError(f"'{name}' depends on itself", path=path, line=where,
                                   hint="remove this dependency")
        out.append((name, tuple(needs)))
    return tuple(out)
_CRD_SOURCE_KEYS = ("kind", "kustomization", "created_by")


def _group_kind(value: Any, wildcard: bool) -> bool:
    """`group/Kind` (a CRD's group has a dot); `group/*` too when `wildcard`."""
    if not isinstance(value, str) or value.count("/") != 1:
        return False
    group, kind = value.split("/")
    return "." in group and bool(kind) and (kind.isidentifier() or (wildcard and kind == "*"))


def _crd_source(item: Any, path: str, info: yamlio.DocInfo, index: int) -> CrdSource:
    line = info.line(("crd_sources", index))
    if not isinstance(item, dict):
        raise _bad("crd_sources", "a list of mappings (kind, and kustomization or created_by)", path, line)
    unknown = sorted(str(k) for k in set(item) - set(_CRD_SOURCE_KEYS))
    if unknown:
        key = unknown[0]
        raise WaveBotError(f"unknown key '{key}' in crd_sources{did_you_mean(key, _CRD_SOURCE_KEYS)}", path=path,
                           line=info.line(("crd_sources", index, key)),
                           hint=f"a CRD source has: {', '.join(_CRD_SOURCE_KEYS)}")
    kind = item.get("kind")
    if not _group_kind(kind, wildcard=True):
        raise _bad("crd_sources[].kind", "'<group>/<Kind>' or '<group>/*' (e.g. postgresql.cnpg.io/Cluster)",
                   path, line)
    owner, creator = item.get("kustomization"), item.get("created_by")
    if (owner is None) == (creator is None):
        raise WaveBotError(f"crd_sources entry for {kind} must set exactly one of kustomization, created_by",
                           path=path, line=line,
                           hint="kustomization: the Flux Kustomization whose HelmRelease installs the CRD; "
                                "created_by: '<group>/<Kind>' of the CR a controller creates it from")
    if owner is not None and not is_dns_label(owner):
        raise _bad(f"crd_sources[{kind}].kustomization", "the name of a Flux Kustomization", path, line)
    if creator is not None and not _group_kind(creator, wildcard=False):
        raise _bad(f"crd_sources[{kind}].created_by", "'<group>/<Kind>' of the creating CR", path, line)
    return CrdSource(kind=str(kind), kustomization=owner, created_by=creator, line=line)


def _template(value: Any, path: str, line: int) -> Mapping[str, Any]:
    if not isinstance(value, dict) or set(value) - _TEMPLATE_KEYS:
        raise _bad("kustomization_template", "a Flux Kustomization (apiVersion, kind, metadata, spec)", path, line)
    for section, key in sorted(_BOT_OWNED):
        if isinstance(value.get(section), dict) and key in value[section]:
            raise WaveBotError(
                f"kustomization_template sets {section}.{key}, which wave-bot sets for every wave",
                path=path,
                line=line,
                hint=f"remove {section}.{key} from kustomization_template",
            )
    return value


def _check_wave_name(config: Config, path: str, line: int) -> None:
    if config.wave_name.count("{n}") != 1 or not is_dns_label(config.wave_cr_name(0)):
        raise WaveBotError(
            f"'wave_name' must contain '{{n}}' once and give a DNS-1123 name, got {shown(config.wave_name)}",
            path=path,
            line=line,
        )



def _check_side_name(config: Config, path: str, line: int) -> None:
    pattern = config.side_pattern()
    name = config.wave_cr_name(Side(0))
    if pattern.count("{n}") != 1 or not is_dns_label(name):
        raise WaveBotError(
            f"'side_name' must contain '{{wave_name}}' or '{{n}}' once and give a DNS-1123 name, got "
            f"{shown(config.side_name)}",
            path=path,
            line=line,
            hint="the default is '{wave_name}-side' (apps-wave-1-side for wave 1)",
        )
    if config.wave_of_cr_file(f"{name}.yaml") is not None or _match(pattern, f"{config.wave_cr_name(0)}.yaml") == 0:
        raise WaveBotError(
            f"'side_name' gives {shown(name)} for wave 0's side branch, which is also a wave's name",
            path=path,
            line=line,
            hint="make side branch names differ from wave names, e.g. '{wave_name}-side'",
        )


def _check_non_gating(config: Config, path: str) -> None:
    seen: set[str] = set()
    for name, line in zip(config.non_gating, config.non_gating_lines, strict=False):
        if name in seen:
            raise WaveBotError(f"'non_gating' lists {shown(name)} twice", path=path, line=line,
                               hint="list each unit once")
        seen.add(name)
