"""What each wave's Flux Kustomization applies, read from a `Tree`: the input of the hazard checks.

A wave's content is what `apps/wave-<N>/kustomization.yaml` (or `.yml`, or `Kustomization`) lists as
plain files of that directory (entries naming a subdirectory, another directory or a URL are not
followed), or, without such a file, every YAML file in the directory. Each document of each such file is one
object. App manifests are read with `yamlio.scan` only (no objects constructed): 10,000-service
repositories must stay cheap, and a `ParseCache` shared by the base tree and the current tree parses
identical bytes once.

Besides the waves, the inventory records every Flux Kustomization found under the clusters
directory (the parent of `config.base_dir`), because removing one that prunes deletes what it owns.
What the kustomizations there use as patches, generator inputs or configuration (whatever their
file is named, read by `bot.kustomize.repository`) is not a definition.

Decisions:
- A document without apiVersion, kind or metadata.name (or not a mapping at all), and a file that is
  not valid YAML, become `invalid-manifest` error findings in `Inventory.problems` rather than a
  WaveBotError: the base revision may hold such a file, and a PR fixing it must not be blocked.
- A `kind: <Foo>List` document with `items` is expanded into its items, as kustomize does
  (one level; a list nested in a list is reported as a problem).
- Documents annotated `config.kubernetes.io/local-config: "true"` are skipped: kustomize drops them.
- SOPS documents whose identity fields are themselves encrypted (`ENC[...]`, no encrypted_regex)
  are skipped: their identity is unknowable without the key.
"""
from __future__ import annotations

import dataclasses
import posixpath
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property

from bot.config import Config
from bot.errors import WaveBotError
from bot.flux.manifests import ParseCache, ParsedFile
from bot.flux.scope import Scopes
from bot.flux.vocabulary import FLUX_GROUP, PRUNE_DISABLED, PRUNE_KEY
from bot.kustomize import build as kustomize
from bot.kustomize import spec
from bot.kustomize.breaks import builds_including
from bot.kustomize.files import PatchUse
from bot.kustomize.listing import generated_listing, wave_refs
from bot.kustomize.repository import applied_files_in_namespaces, is_kustomization_file, read_kustomizations
from bot.kustomize.select import target_matches
from bot.kustomize.spec import CLUSTER_SCOPED, KUSTOMIZATION
from bot.model import Finding
from bot.naming import is_yaml_name
from bot.repo.tree import Tree, refuse_link
from bot.resid import ResourceId
from bot.side import Slot
from bot.yamlio import documents as yamlio
from bot.yamlio.goyaml import kustomization_type

INVALID_MANIFEST = "invalid-manifest"
PROBLEMS_PER_FILE = 5


@dataclass(frozen=True, order=True)
class Resource:
    """One object a wave applies, and where it is defined."""

    id: ResourceId
    wave: Slot
    path: str
    line: int
    """Line of the document's `apiVersion` (of the item, for a List)."""
    prune_disabled: bool = False
    """Carries `kustomize.toolkit.fluxcd.io/prune: disabled`, so Flux never garbage-collects it."""


def _resource_order(r: Resource) -> tuple[str, str, str, str, Slot, str, int, bool]:
    return (r.id.group, r.id.kind, r.id.namespace, r.id.name, r.wave, r.path, r.line, r.prune_disabled)


@dataclass(frozen=True, order=True)
class WaveFile:
    """A file a wave applies."""

    path: str
    wave: Slot
    sops: bool
    """A `.sops.` name or a top-level `sops:` key: Flux must decrypt it."""
    resources: tuple[Resource, ...] = ()

    @property
    def name(self) -> str:
        return posixpath.basename(self.path)


@dataclass(frozen=True, order=True)
class StrayFile:
    """A YAML file under the apps directory that no wave applies."""

    path: str
    wave: Slot | None
    """The wave directory it sits in without being listed; None directly under the apps directory."""

    @property
    def name(self) -> str:
        return posixpath.basename(self.path)


@dataclass(frozen=True, order=True)
class FluxKustomization:
    """A Flux Kustomization (kustomize.toolkit.fluxcd.io) found under the clusters directory."""

    id: ResourceId
    path: str
    line: int
    prune: bool
    deletion_policy: str = ""
    """spec.deletionPolicy; '' when unset (Flux's default, MirrorPrune)."""
    source_path: str = ""
    """spec.path: what it applies."""
    depends_on: tuple[str, ...] = ()
    """The names in spec.dependsOn (same namespace assumed, as wave-bot generates them)."""
    prune_value: str = "true"
    """spec.prune as written (in double quotes when the YAML quotes it), for `invalid-prune`."""
    target_namespace: str = ""
    """spec.targetNamespace: the namespace of every namespaced object it applies ('' for as built)."""
    prune_line: int = 0
    """The line of spec.prune (of the object when it has none)."""

    @property
    def name(self) -> str:
        return self.id.name

    @property
    def deletes_on_removal(self) -> bool:
        """Whether deleting this object garbage-collects everything it owns.

        MirrorPrune (the default) follows spec.prune; Delete and WaitForTermination always delete;
        Orphan never does.
        """
        if self.deletion_policy in ("Delete", "WaitForTermination"):
            return True
        return self.prune and self.deletion_policy in ("", "MirrorPrune")


@dataclass(frozen=True, order=True)
class OwnedResource:
    """One object a Flux Kustomization other than a wave applies."""

    id: ResourceId
    owner: str
    """The Flux Kustomization's name."""
    path: str
    line: int
    prune_disabled: bool = False


@dataclass(frozen=True)
class Inventory:
    """Everything the app tier's Flux Kustomizations apply at one revision."""

    waves: tuple[Slot, ...]
    """Wave (and side branch) directories present, ascending."""
    files: tuple[WaveFile, ...]
    """Every file a wave applies, sorted by path."""
    stray: tuple[StrayFile, ...] = ()
    flux: tuple[FluxKustomization, ...] = ()
    others: tuple[OwnedResource, ...] = ()
    """What the Flux Kustomizations that are not waves apply (platform, a legacy `apps`, ...)."""
    problems: tuple[Finding, ...] = ()
    """`invalid-manifest` findings for what could not be read (those objects are not listed)."""

    @cached_property
    def resources(self) -> tuple[Resource, ...]:
        # The dataclass order, by a key: comparing frozen dataclasses builds two tuples per comparison.
        return tuple(sorted((r for f in self.files for r in f.resources), key=_resource_order))

    @cached_property
    def by_id(self) -> dict[ResourceId, tuple[Resource, ...]]:
        """Every definition of each object (more than one is a duplicate)."""
        out: dict[ResourceId, list[Resource]] = {}
        for resource in self.resources:
            out.setdefault(resource.id, []).append(resource)
        return {rid: tuple(found) for rid, found in out.items()}

    @cached_property
    def flux_by_id(self) -> dict[ResourceId, FluxKustomization]:
        return {k.id: k for k in self.flux}

    @cached_property
    def _by_path(self) -> dict[str, WaveFile | StrayFile]:
        items: list[WaveFile | StrayFile] = [*self.files, *self.stray]
        return {f.path: f for f in items}

    def file(self, path: str) -> WaveFile | StrayFile | None:
        """The applied or stray file at `path`."""
        return self._by_path.get(path)

    def counts(self) -> dict[Slot, int]:
        """Wave -> number of objects it applies; every wave directory is listed, empty ones with 0."""
        out = dict.fromkeys(self.waves, 0)
        for file in self.files:
            out[file.wave] = out.get(file.wave, 0) + len(file.resources)
        return dict(sorted(out.items()))

    def sops_waves(self) -> frozenset[Slot]:
        """Waves applying at least one SOPS file: their Flux Kustomization needs decryption."""
        return frozenset(f.wave for f in self.files if f.sops)


@dataclass
class _Reader:
    tree: Tree
    config: Config
    cache: ParseCache
    problems: list[Finding] = field(default_factory=list)

    pending: list[tuple[str, int | None, str, str | None]] = field(default_factory=list)
    """Problems of files outside the waves, until `settle` knows which builds include them."""

    def parse(self, path: str, wave: Slot | None, *, patch: bool = False) -> ParsedFile | None:
        try:
            try:
                return self.cache.parse_at(self.tree, path)
            except yamlio.RepeatedKey:
                # kustomize keeps the last value of a key repeated in a JSON6902 patch (a list)
                parsed = self.cache.parse_at(self.tree, path, unique_keys=False) if patch else None
                if parsed is None or not parsed.json_patch:
                    raise
                return parsed
        except WaveBotError as exc:
            if wave is None:
                self.pending.append((path, exc.line, exc.message, exc.hint))
            else:
                self.problem(path, exc.line, exc.message, wave, exc.hint)
            return None

    def settle(self, flux: tuple[FluxKustomization, ...]) -> None:
        """Report the problems of files outside the waves, each naming the builds it breaks."""
        if not self.pending:
            return
        kustomizations = read_kustomizations(self.tree, clusters_dir(self.config))
        labels = [(f"the Flux Kustomization {k.id.namespace}/{k.name} (./{d})", d)
                  for k in flux if (d := source_dir(k)) is not None]
        for path, line, what, hint in dict.fromkeys(self.pending):  # a file read twice is one problem
            builds = builds_including(self.tree, self.config, kustomizations, path, labels)
            self.problem(path, line, what, None, hint, builds)
        self.pending.clear()

    def problem(self, path: str, line: int | None, what: str, wave: Slot | None, hint: str | None = None,
                builds: list[str] | None = None) -> None:
        if wave is not None:
            consequence = f"kustomize cannot build wave {wave} until it is fixed, and"
        elif builds:
            consequence = f"kustomize cannot build {', '.join(builds)} until it is fixed, and"
        else:
            consequence = "No build wave-bot knows of includes it (the base, an overlay or a Flux Kustomization), but"
        self.problems.append(Finding(
            code=INVALID_MANIFEST,
            severity="error",
            message=f"{path}{f':{line}' if line else ''}: {what}. {consequence} wave-bot cannot check it for hazards",
            path=path,
            line=line,
            wave=wave,
            fix=hint,
        ))


def read_flux_kustomizations(tree: Tree, config: Config, cache: ParseCache | None = None,
                             ) -> tuple[FluxKustomization, ...]:
    """Only the Flux Kustomizations of `tree` (what `read_inventory` puts in `flux`), without the app tier."""
    return _flux_kustomizations(_Reader(tree, config, cache if cache is not None else ParseCache()))


def read_inventory(tree: Tree, config: Config, cache: ParseCache | None = None) -> Inventory:
    """The inventory of `tree`. Pass the same `cache` for the base tree and the current tree.

    Raises WaveBotError for a symbolic link in the app tier and for a wave kustomization.yaml that is
    not a kustomization; unreadable app manifests become `problems` instead.
    """
    reader = _Reader(tree, config, cache if cache is not None else ParseCache())
    waves: list[Slot] = []
    files: list[WaveFile] = []
    stray: list[StrayFile] = []
    for wave, directory in _wave_dirs(tree, config):
        waves.append(wave)
        applied, unlisted = _wave_content(tree, directory)
        files += _applied(reader, wave, [(f"{directory}/{n}", is_dir) for n, is_dir in applied])
        stray += (StrayFile(f"{directory}/{name}", wave) for name in unlisted)
    for entry in tree.entries(config.apps_dir):
        if entry.kind == "file" and is_yaml_name(entry.name) and not is_kustomization_file(entry.name):
            stray.append(StrayFile(f"{config.apps_dir}/{entry.name}", None))
    flux = _flux_kustomizations(reader)
    others = _other_resources(reader, flux)
    reader.settle(flux)
    return Inventory(
        waves=tuple(sorted(waves)),
        files=tuple(sorted(files)),
        stray=tuple(sorted(stray)),
        flux=flux,
        others=others,
        problems=tuple(sorted(reader.problems, key=lambda f: (f.path or "", f.line or 0))),
    )


def _wave_dirs(tree: Tree, config: Config) -> list[tuple[Slot, str]]:
    found = []
    for entry in tree.entries(config.apps_dir):
        wave = config.slot_of_dir(entry.name)
        if wave is None:
            continue
        path = f"{config.apps_dir}/{entry.name}"
        if entry.kind == "link":
            raise refuse_link(path)
        if entry.kind == "dir":
            found.append((wave, path))
    return found


def _wave_content(tree: Tree, directory: str) -> tuple[list[tuple[str, bool]], list[str]]:
    """((path below the wave, is a directory) of each file and unit directory it applies, names of its
    YAML files and directories it does not apply)."""
    names: list[str] = []
    dirs: list[str] = []
    kustomizations: list[str] = []
    for entry in tree.entries(directory):
        if entry.kind == "link":
            raise refuse_link(f"{directory}/{entry.name}")
        if entry.kind == "file":
            (kustomizations if is_kustomization_file(entry.name) else names).append(entry.name)
        elif entry.kind == "dir":
            dirs.append(entry.name)
    if not kustomizations:
        return [(rel, "/" not in rel and rel in dirs) for rel in generated_listing(tree, directory)], []
    if len(kustomizations) > 1:
        raise WaveBotError(f"has several kustomization files ({', '.join(kustomizations)}); kustomize accepts one",
                           path=directory, hint=f"keep {KUSTOMIZATION} (wave-bot generates it) and delete the others")
    refs = wave_refs(tree, f"{directory}/{kustomizations[0]}")
    # One look at the directory answers for the entries directly in it (nearly all, and thousands).
    here = {**dict.fromkeys(names, "file"), **dict.fromkeys(dirs, "dir")}
    kinds = [(r, here.get(r) if "/" not in r else tree.kind(f"{directory}/{r}")) for r in refs]
    applied = [(r, kind == "dir") for r, kind in kinds if kind in ("file", "dir")]
    tops = {r.split("/", 1)[0] for r, _ in applied}
    return applied, [n for n in names if n not in tops and is_yaml_name(n)] + [d for d in dirs if d not in tops]


def _applied(reader: _Reader, wave: Slot, paths: list[tuple[str, bool]]) -> list[WaveFile]:
    """The files a wave applies through `paths` (path, is a directory): plain files, and unit
    directories read as built."""
    out: list[WaveFile] = []
    for path, is_dir in paths:
        if is_dir:
            out += _unit_dir(reader, wave, path)
        else:
            found = _wave_file(reader, wave, path)
            if found is not None:
                out.append(found)
    return out


# A unit directory's kustomization with only these keys is read with the scanner (its namespace set
# by hand); any other key goes through the kustomize evaluator. Most app directories are just that,
# and a 4,000-directory repository must stay near the cost of parsing its files.
_PLAIN_UNIT_KEYS = frozenset({"apiVersion", "kind", "resources", "namespace"})


def _unit_dir(reader: _Reader, wave: Slot, directory: str) -> list[WaveFile]:
    """What a wave applies through a unit directory: its kustomization's build (patches, namespace and
    labels applied), or without one every manifest below it, as kustomize-controller generates it."""
    tree = reader.tree
    here: dict[str, str] = {}
    for entry in tree.entries(directory):
        if entry.kind == "link":
            raise refuse_link(f"{directory}/{entry.name}")
        here[entry.name] = entry.kind
    kfile = next((f"{directory}/{n}" for n in spec.KUSTOMIZATION_FILES if here.get(n) == "file"), None)
    if kfile is None:
        if any(here.get(n) == "dir" for n in spec.KUSTOMIZATION_FILES):
            return _built_unit(reader, wave, directory)  # let the evaluator say what is wrong
        # Listed by hand: wave-bot lists such a directory's files instead.
        reader.problem(directory, None, "is listed as a resource but has no kustomization.yaml, and kustomize "
                       "refuses such a directory", wave, "run `wave-bot apply` to list its files instead")
        return []
    try:
        docs = [d for d in yamlio.scan(tree.read(kfile), kfile, capture=_unit_field, line_depth=2) if not d.empty]
    except WaveBotError as exc:
        reader.problem(kfile, exc.line, exc.message, wave, exc.hint)
        return []
    doc = docs[0] if len(docs) == 1 and docs[0].is_mapping else None
    keys = {p[0] for p in doc.lines if len(p) == 1} if doc is not None else set()
    refs = [doc.scalars.get(p, "") for p in doc.lines if len(p) == 2 and p[0] == "resources"] if doc else []
    plain = [r.removeprefix("./") for r in refs]
    if doc is not None and keys <= _PLAIN_UNIT_KEYS and ("resources",) not in doc.scalars and all(
            p in doc.strings or kustomization_type(v) == "a string" for p, v in doc.scalars.items()) and (
            "namespace" not in keys or ("namespace",) in doc.scalars) and all(
            r and "/" not in r and here.get(r) == "file" and ("resources", i) in doc.scalars
            for i, r in enumerate(plain)):
        namespace, reported = doc.scalars.get(("namespace",), ""), len(reader.problems)
        found = [f for f in (_wave_file(reader, wave, f"{directory}/{r}", namespace) for r in plain) if f is not None]
        ids = [r.id for f in found for r in f.resources]
        if len(set(ids)) == len(ids) or len(reader.problems) > reported:
            return found
        # kustomize refuses the build (an id added twice, or two Namespaces renamed to one): the
        # evaluator says how.
    return _built_unit(reader, wave, directory)


def _unit_field(path: yamlio.Path) -> bool:
    return len(path) <= 2 and path[0] in ("resources", "namespace")


def _built_unit(reader: _Reader, wave: Slot, directory: str) -> list[WaveFile]:
    """A unit directory through the kustomize evaluator; each object keeps the file and line it
    comes from, and its prune opt-out as the build leaves it (commonAnnotations and labels count)."""
    try:
        built = kustomize.build(reader.tree, directory)
    except WaveBotError as exc:
        reader.problem(exc.path or directory, exc.line, exc.message, wave, exc.hint or spec.HINT_BY_HAND)
        return []
    by_source: dict[str, list[Resource]] = {}
    lines: dict[str, dict[ResourceId, int]] = {}
    for obj in built.objects:
        if obj.source not in lines:
            parsed = reader.parse(obj.source, wave)
            lines[obj.source] = {o.id: o.line for o in (parsed.objects if parsed else ()) if o.id is not None}
        metadata = obj.value.get("metadata") or {}
        flags = [str(v).casefold() for key in ("annotations", "labels")
                 if isinstance(metadata.get(key), dict) for k, v in metadata[key].items() if k == PRUNE_KEY]
        by_source.setdefault(obj.source, []).append(Resource(
            obj.id, wave, obj.source, lines[obj.source].get(obj.original, 1), PRUNE_DISABLED.casefold() in flags))
    out = []
    for source, resources in by_source.items():
        parsed = reader.parse(source, wave)
        sops = ".sops." in posixpath.basename(source) or bool(parsed and parsed.sops_key)
        out.append(WaveFile(source, wave, sops, tuple(resources)))
    return out


SERVED = Scopes()
"""The scopes wave-bot knows without the cluster's CRDs: a wave's object is named as the API server
names it (a cluster-scoped custom object without the namespace kustomize wrote into it)."""


def _in_namespace(rid: ResourceId, namespace: str) -> ResourceId:
    """`rid` after a kustomization's `namespace:` (or a Flux targetNamespace); '' leaves it."""
    # Built directly, and only when it changes: a unit directory's kustomization names the namespace
    # its manifests already say, and this runs for every object of thousands of them.
    if not namespace:
        return rid
    if rid.kind == "Namespace":  # kustomize renames it (see kustomize.build)
        return rid if rid.name == namespace else ResourceId(rid.group, rid.kind, rid.namespace, namespace, rid.version)
    if rid.namespace != namespace and rid.kind not in CLUSTER_SCOPED:
        return ResourceId(rid.group, rid.kind, namespace, rid.name, rid.version)
    return rid


def _wave_file(reader: _Reader, wave: Slot, path: str, namespace: str = "") -> WaveFile | None:
    """The file at `path`; `namespace`: its objects as a kustomization's `namespace:` leaves them."""
    parsed = reader.parse(path, wave)
    if parsed is None:
        return None
    resources = []
    bad = [obj for obj in parsed.objects if obj.id is None]
    for obj in bad[:PROBLEMS_PER_FILE]:  # a file of 1,000 broken documents is one problem, not 1,000
        reader.problem(path, obj.line, obj.problem or "unreadable document", wave)
    if len(bad) > PROBLEMS_PER_FILE:
        reader.problem(path, bad[PROBLEMS_PER_FILE].line,
                       f"and {len(bad) - PROBLEMS_PER_FILE} more documents that are not Kubernetes objects", wave)
    for obj in parsed.objects:
        if obj.id is not None:
            rid = SERVED.served(_in_namespace(obj.id, namespace))
            resources.append(Resource(rid, wave, path, obj.line, obj.prune_disabled))
    sops = ".sops." in posixpath.basename(path) or parsed.sops_key
    return WaveFile(path, wave, sops, tuple(resources))


def clusters_dir(config: Config) -> str:
    """Where the Flux entrypoints live: the parent of base_dir (base_dir itself at the top level)."""
    return posixpath.dirname(config.base_dir) or config.base_dir


def _yaml_files_under(tree: Tree, directory: str) -> Iterator[str]:
    """Every YAML file below `directory`; links are skipped (never followed)."""
    for entry in tree.entries(directory):
        path = f"{directory}/{entry.name}"
        if entry.kind == "dir":
            yield from _yaml_files_under(tree, path)
        elif entry.kind == "file" and is_yaml_name(entry.name):
            yield path


def _flux_kustomizations(reader: _Reader) -> tuple[FluxKustomization, ...]:
    """Every Flux Kustomization defined under the clusters directory.

    Only resources define one: a patch file naming a removed Kustomization does not keep it alive
    (kustomize fails on it, then deletes the object once the patch goes too). Patches can only make
    it more dangerous: one setting prune: true or a deletionPolicy counts, one setting prune: false
    does not, since another overlay may still prune.
    """
    root = clusters_dir(reader.config)
    files = list(_yaml_files_under(reader.tree, root))
    kustomizations = read_kustomizations(reader.tree, root)
    patch_files, not_objects = kustomizations.patch_files(), kustomizations.not_objects()
    definitions: dict[ResourceId, FluxKustomization] = {}
    patched: list[FluxKustomization] = []
    for path in files:
        if path in not_objects and path not in patch_files:
            continue  # kustomize's own configuration and generator inputs, never a Flux object
        parsed = reader.parse(path, None, patch=path in patch_files)
        for obj in parsed.objects if parsed is not None else ():
            if obj.id is None or obj.id.group != FLUX_GROUP or obj.id.kind != "Kustomization":
                continue
            record = FluxKustomization(obj.id, path, obj.line, obj.flux_prune, obj.deletion_policy, obj.source_path,
                                       obj.depends_on, obj.prune_value, obj.target_namespace,
                                       obj.prune_line)
            if path in patch_files:
                patched.append(record)
            else:
                definitions.setdefault(obj.id, record)
    for patch in patched:
        found = definitions.get(patch.id)
        if found is not None:
            definitions[patch.id] = dataclasses.replace(
                found,
                prune=found.prune or patch.prune,
                deletion_policy=patch.deletion_policy or found.deletion_policy,
            )
    # Inline patches (`patches: - patch: |`) are as common as patch files in overlays, and one setting
    # prune: true on a Kustomization written with prune: false makes that cluster delete what it drops.
    for entry in kustomizations.patches:
        if entry.use.path is not None:
            continue  # a patch file: read above
        for rid, prunes, policy in _inline_effects(entry.use, definitions):
            found = definitions[rid]
            definitions[rid] = dataclasses.replace(found, prune=found.prune or prunes,
                                                   deletion_policy=policy or found.deletion_policy)
    return tuple(sorted(definitions.values()))


def _inline_effects(use: PatchUse, definitions: dict[ResourceId, FluxKustomization]
                    ) -> Iterator[tuple[ResourceId, bool, str]]:
    """What an inline patch does to the Flux Kustomizations it can reach: (id, sets pruning, deletionPolicy).

    Any value of spec.prune but false counts as pruning (Flux rejects a non-boolean, and wave-bot
    assumes the worse). A target selects as kustomize selects (RE2, anchored; read_kustomizations
    has already left out a pattern kustomize refuses); without one, a strategic-merge document
    reaches the Kustomization of its name (every one when it names none)."""
    fields = use.target.fields if use.target is not None else {}

    def fits(key: str, value: str) -> bool:
        pattern = fields.get(key)
        return not pattern or target_matches(pattern, value)

    def reached(doc_name: str | None) -> list[ResourceId]:
        if not (fits("kind", "Kustomization") and fits("group", FLUX_GROUP)):
            return []
        return [rid for rid in definitions if fits("name", rid.name) and fits("namespace", rid.namespace)
                and (use.target is not None or doc_name is None or rid.name == doc_name)]

    if use.form == "json6902":
        ops = use.documents[0] if use.documents and isinstance(use.documents[0], list) else []
        prunes, policy = False, ""
        for op in ops:
            if not isinstance(op, dict) or op.get("op") not in ("add", "replace"):
                continue
            if op.get("path") == "/spec/prune":
                prunes = prunes or op.get("value") is not False
            elif op.get("path") == "/spec/deletionPolicy" and isinstance(op.get("value"), str):
                policy = op["value"]
        if prunes or policy:
            yield from ((rid, prunes, policy) for rid in reached(None))
        return
    for doc in use.documents:
        if not isinstance(doc, dict) or not isinstance(doc.get("spec"), dict):
            continue
        if doc.get("kind") not in (None, "Kustomization"):
            continue
        spec_ = doc["spec"]
        prunes = "prune" in spec_ and spec_["prune"] is not False
        policy = spec_["deletionPolicy"] if isinstance(spec_.get("deletionPolicy"), str) else ""
        meta = doc.get("metadata")
        name = meta.get("name") if isinstance(meta, dict) and isinstance(meta.get("name"), str) else None
        if prunes or policy:
            yield from ((rid, prunes, policy) for rid in reached(name))


def source_dir(k: FluxKustomization) -> str | None:
    """The repository directory `k` applies ('' for the root); None for a path leaving the repository."""
    path = posixpath.normpath(k.source_path.lstrip("/") or ".")
    return None if path == ".." or path.startswith("../") else ("" if path == "." else path)


def _other_resources(reader: _Reader, flux: tuple[FluxKustomization, ...]) -> tuple[OwnedResource, ...]:
    """What each Flux Kustomization that is not a wave applies, read like `kustomize build` would list it.

    A directory with a kustomization.yaml applies its `resources` (files, and directories
    recursively); without one, Flux generates a kustomization of every YAML file below it, a
    subdirectory holding a kustomization.yaml taken as one unit. Remote and out-of-repo entries are
    not followed; the Flux Kustomizations defined under the clusters directory are left to the checks
    on Kustomizations, while one defined elsewhere (a child a tier applies) is an object it owns.
    """
    config = reader.config
    defined = {k.id for k in flux}
    out: list[OwnedResource] = []
    for k in flux:
        directory = source_dir(k) if k.source_path else None  # no path: a patch file, not a definition
        if directory is None or (posixpath.dirname(directory) == config.apps_dir
                                 and config.slot_of_dir(posixpath.basename(directory)) is not None):
            continue
        # as they are built and applied: the commands the cutover gives name the live objects
        for path, namespace in applied_files_in_namespaces(reader.tree, directory, k.target_namespace):
            parsed = reader.parse(path, None)
            for obj in parsed.objects if parsed is not None else ():
                if obj.id is not None and not (obj.id.group == FLUX_GROUP and obj.id.kind == "Kustomization"
                                               and obj.id in defined):
                    out.append(OwnedResource(_in_namespace(obj.id, namespace), k.name, path, obj.line,
                                             obj.prune_disabled))
    return tuple(sorted(out))


__all__ = [
    "FluxKustomization", "Inventory", "OwnedResource", "Resource", "ResourceId", "StrayFile", "WaveFile",
    "clusters_dir", "read_flux_kustomizations", "read_inventory", "source_dir",
]
