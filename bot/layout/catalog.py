"""The catalog: one ServiceDefinition per file, read into names and dependency edges."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bot.config import CONFIG_FILE, Config
from bot.errors import WaveBotError
from bot.naming import did_you_mean, is_dns_label, is_yaml_name, shown
from bot.repo.tree import Tree, refuse_link
from bot.yamlio import documents as yamlio

SERVICE_KIND = "ServiceDefinition"


@dataclass(frozen=True)
class Where:
    """A key in a catalog file. Its line is looked up only when a message needs it: finding lines
    means scanning the file a second time, which 10,000-service catalogs should not pay for."""

    doc: yamlio.Document = field(compare=False, repr=False)
    key: yamlio.Path = ()

    @property
    def line(self) -> int:
        return self.doc.info.line(self.key)


@dataclass(frozen=True)
class Dependency:
    target: str
    where: Where

    @property
    def line(self) -> int:
        return self.where.line


@dataclass(frozen=True)
class Service:
    """One ServiceDefinition: its name, what it depends on, and where it was declared."""

    name: str
    dependencies: tuple[Dependency, ...]
    path: str
    where: Where

    @property
    def line(self) -> int:
        return self.where.line


def missing_dir(tree: Tree, config: Config, key: str, value: str, what: str) -> WaveBotError:
    """The error for a configured directory that is not there: the config's line when it sets it."""
    path, line = config.where(key)
    parent = value.rpartition("/")[0]
    siblings = [f"{parent}/{e.name}" if parent else e.name for e in tree.entries(parent) if e.kind == "dir"]
    guess = did_you_mean(value, siblings)
    if path is not None:
        return WaveBotError(f"{key} is '{value}', and there is no such directory{guess}", path=path, line=line,
                            hint=f"fix {key} in {path}, or create {value}/")
    return WaveBotError(f"no {what} '{value}' (the default {key}){guess}",
                        hint=f"run wave-bot in the repository root, or set {key} in {CONFIG_FILE}")


def load_catalog(tree: Tree, config: Config) -> list[Service]:
    """Every ServiceDefinition under `config.catalog_dir`, sorted by name.

    Raises WaveBotError (file and line) for anything that is not a well-formed definition, and for
    two files declaring the same name.
    """
    if tree.kind(config.catalog_dir) == "link":
        raise refuse_link(config.catalog_dir)
    services: dict[str, Service] = {}
    if tree.kind(config.catalog_dir) != "dir":
        # A repository adopting wave-bot may declare every unit in the config instead.
        if not config.dependencies or config.where("catalog_dir")[0] is not None:
            raise missing_dir(tree, config, "catalog_dir", config.catalog_dir, "catalog directory")
        return declared_services(tree, config, services)
    for entry in tree.entries(config.catalog_dir):
        if not is_yaml_name(entry.name) or entry.kind == "dir":
            continue
        path = f"{config.catalog_dir}/{entry.name}"
        if entry.kind != "file":
            raise refuse_link(path) if entry.kind == "link" else WaveBotError("is not a regular file", path=path)
        service = parse_service(tree.read(path), path)
        if service.name in services:
            first = services[service.name]
            raise WaveBotError(
                f"declares '{service.name}', already declared in {first.path}:{first.line}",
                path=path,
                line=service.line,
                hint="every service needs its own name; rename or delete one of the two",
            )
        services[service.name] = service
    return declared_services(tree, config, services) if config.dependencies else sorted(
        services.values(), key=lambda s: s.name)


def declared_services(tree: Tree, config: Config, catalog: dict[str, Service]) -> list[Service]:
    """`catalog` with the units `.wave-bot.yaml` declares under `dependencies`; a unit both define is
    an error naming both places (the catalog stays the primary source: one place per unit)."""
    doc = yamlio.load_one(tree.read(config.source), config.source)
    assert doc is not None  # the config parsed, with dependencies in it
    services = dict(catalog)
    for name, needs in config.dependencies:
        where = Where(doc, ("dependencies", name))
        if name in catalog:
            first = catalog[name]
            raise WaveBotError(
                f"dependencies declares '{name}', which {first.path}:{first.line} already defines",
                path=config.source, line=where.line,
                hint=f"keep one of the two: remove '{name}' from dependencies, or delete {first.path}",
            )
        found: dict[str, Dependency] = {}
        for i, target in enumerate(needs):
            found.setdefault(target, Dependency(target, Where(doc, ("dependencies", name, i))))
        deps = tuple(found.values())
        services[name] = Service(name=name, dependencies=deps, path=config.source, where=where)
    return sorted(services.values(), key=lambda s: s.name)


def _field(value: dict[str, Any], parent: str, key: str) -> tuple[Any, tuple[str, ...]]:
    """`parent.key` (e.g. metadata.name) when set, else the top-level `key`; with its key path."""
    nested = value.get(parent)
    if isinstance(nested, dict) and nested.get(key) is not None:
        return nested[key], (parent, key)
    return value.get(key), (key,)


def parse_service(data: bytes, path: str) -> Service:
    """One ServiceDefinition from the bytes of `path`."""
    doc = yamlio.load_one(data, path)
    if doc is None:
        raise WaveBotError("is empty; expected a ServiceDefinition", path=path,
                           hint="delete the file or give it metadata.name")
    value = doc.value
    if not isinstance(value, dict):
        raise WaveBotError("is not a mapping; expected a ServiceDefinition", path=path, line=doc.info.start_line)
    kind = value.get("kind")
    if kind is not None and kind != SERVICE_KIND:
        raise WaveBotError(
            f"has kind {shown(kind)}; every file in the catalog must be a {SERVICE_KIND}",
            path=path, line=doc.info.line(("kind",)), hint="move it out of the catalog directory",
        )
    name, name_path = _field(value, "metadata", "name")
    if name is None:
        raise WaveBotError("has no name", path=path, line=doc.info.start_line,
                           hint="add metadata.name: <service>")
    where = Where(doc, name_path)
    if not is_dns_label(name):
        raise WaveBotError(
            f"name {shown(name)} is not a DNS-1123 label", path=path, line=where.line,
            hint="use lower-case letters, digits and '-', at most 63 characters",
        )
    return Service(name=name, dependencies=_dependencies(doc, name, path), path=path, where=where)


def _dependencies(doc: yamlio.Document, name: str, path: str) -> tuple[Dependency, ...]:
    items, base = _field(doc.value, "spec", "dependencies")
    if items is None:
        return ()
    if not isinstance(items, list):
        raise WaveBotError("dependencies must be a list", path=path, line=doc.info.line(base),
                           hint="write each dependency as '- to: <service>'")
    found: dict[str, Dependency] = {}
    for index, item in enumerate(items):
        target = item.get("to") if isinstance(item, dict) else item
        where = Where(doc, (*base, index, "to") if isinstance(item, dict) else (*base, index))
        if not is_dns_label(target):
            raise WaveBotError(
                f"dependency {index + 1} of '{name}' must name a service (a DNS-1123 label), got {shown(target)}",
                path=path, line=where.line, hint="write it as '- to: <service>'",
            )
        if target == name:
            raise WaveBotError(f"'{name}' depends on itself", path=path, line=where.line,
                               hint="remove this dependency")
        found.setdefault(target, Dependency(target, where))
    return tuple(found.values())
