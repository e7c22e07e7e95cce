"""`.wave-bot.yaml`: the repository's layout and conventions, every key defaulting to the seed layout."""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bot import yamlio
from bot.errors import WaveBotError
from bot.naming import did_you_mean, is_dns_label, is_safe_relpath, shown

if TYPE_CHECKING:
    from bot.tree import Tree

CONFIG_FILE = ".wave-bot.yaml"
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
    decryption_secret: str = "sops-age"
    stateful_kinds: tuple[str, ...] = ()
    source: str = field(default=CONFIG_FILE, compare=False)

    def wave_dir(self, n: int) -> str:
        return f"{self.apps_dir}/{WAVE_DIR_PREFIX}{n}"

    def wave_cr_name(self, n: int) -> str:
        return self.wave_name.replace("{n}", str(n))

    def wave_cr_path(self, n: int) -> str:
        return f"{self.base_dir}/{self.wave_cr_name(n)}.yaml"

    def wave_of_dir(self, name: str) -> int | None:
        """`wave-3` -> 3; anything else (including `wave-03`) -> None."""
        digits = name[len(WAVE_DIR_PREFIX):] if name.startswith(WAVE_DIR_PREFIX) else ""
        return int(digits) if digits.isdigit() and str(int(digits)) == digits else None

    def wave_of_cr_file(self, name: str) -> int | None:
        """`apps-wave-3.yaml` -> 3 for this config's `wave_name`; anything else -> None."""
        prefix, _, suffix = self.wave_name.partition("{n}")
        suffix += ".yaml"
        if not (name.startswith(prefix) and name.endswith(suffix)):
            return None
        digits = name[len(prefix): len(name) - len(suffix)]
        return int(digits) if digits.isdigit() and str(int(digits)) == digits else None


_STR_LISTS = ("root_depends_on", "leaf_patterns", "file_suffixes", "stateful_kinds", "overlays")
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
    known = [f.name for f in dataclasses.fields(Config) if f.name != "source"]
    values: dict[str, Any] = {"source": path}
    for key, value in doc.value.items():
        line = doc.info.line((key,))
        if key not in known:
            raise WaveBotError(
                f"unknown key '{key}'{did_you_mean(str(key), known)}",
                path=path,
                line=line,
                hint=f"valid keys: {', '.join(known)}",
            )
        values[key] = _convert(key, value, path, doc.info)
    config = Config(**values)
    _check_wave_name(config, path, doc.info.line(("wave_name",)))
    return config


def _bad(key: str, expected: str, path: str, line: int) -> WaveBotError:
    return WaveBotError(f"'{key}' must be {expected}", path=path, line=line)


def _convert(key: str, value: Any, path: str, info: yamlio.DocInfo) -> Any:
    line = info.line((key,))
    if key in _STR_LISTS:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise _bad(key, "a list of strings", path, line)
        if key == "overlays" and not all(is_safe_relpath(v) for v in value):
            raise _bad(key, "a list of relative paths inside the repository", path, line)
        return tuple(value)
    if key in _PATHS:
        if not isinstance(value, str) or not is_safe_relpath(value):
            raise _bad(key, "a relative path inside the repository (no '..', no leading '/')", path, line)
        return value
    if key in ("wave_name", "decryption_secret"):
        if not isinstance(value, str) or not value:
            raise _bad(key, "a non-empty string", path, line)
        return value
    if key == "extra_units":
        if not isinstance(value, list):
            raise _bad(key, "a list of units (name, anchor, above, files)", path, line)
        return tuple(_extra_unit(item, path, info.line((key, i))) for i, item in enumerate(value))
    if key == "kustomization_template":
        return _template(value, path, line)
    raise AssertionError(key)  # pragma: no cover - every dataclass field is handled above


def _extra_unit(item: Any, path: str, line: int) -> ExtraUnit:
    if not isinstance(item, dict):
        raise _bad("extra_units", "a list of mappings", path, line)
    unknown = set(item) - {"name", "anchor", "above", "files"}
    if unknown:
        raise WaveBotError(f"unknown key '{sorted(unknown)[0]}' in extra_units", path=path, line=line,
                           hint="an extra unit has: name, anchor, above, files")
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
        raise _bad(f"extra_units[{name}].files", "a list of file names (no directories)", path, line)
    return ExtraUnit(name=str(name), anchor=anchor, above=above, files=tuple(files), line=line)


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

