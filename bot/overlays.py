"""Every app wave must reach every cluster with SOPS decryption.

The base lists one Flux Kustomization per wave (`clusters/base/apps-wave-<N>.yaml`); each
environment overlay (`clusters/dev`, ...) builds on the base and gives those Kustomizations
`spec.decryption`. A wave missing from the base is never applied; a wave without decryption applies
its `*.sops.yaml` files still encrypted and corrupts the Secrets they hold (design doc §5.2, §6.5).
Both edits are by hand in hand-maintained, comment-carrying files, so this module checks them on the
overlays' kustomize output (`kustomize.build`, never kustomize itself) and, for `--fix-overlays`,
makes them: as small insertions into those files, in the style each file already uses, every
existing byte kept.
"""
from __future__ import annotations

import io
import posixpath
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bot import render, yamlio
from bot.config import Config
from bot.errors import WaveBotError
from bot.kustomize import (
    Build,
    BuildError,
    Kustomization,
    Object,
    PatchUse,
    Problem,
    Unsupported,
    build,
    find_kustomization,
    read_kustomization,
    resolve,
)
from bot.model import Change, Finding
from bot.render import FLUX_GROUP
from bot.tree import PlannedTree, Tree

SOPS = "sops"
MAX_DISCOVERY_DEPTH = 4
"""How deep under clusters/ overlays are looked for (clusters/<env>/<region>/... is plenty)."""
FIX_HINT = "run `wave-bot apply --fix-overlays`, or paste each `---` section of the fix into the file it names"
ENCRYPTED = "its *.sops.yaml files would be applied still encrypted, corrupting the Secrets they hold"


# ---- which directories are overlays -------------------------------------------------------------


def discover_overlays(tree: Tree, config: Config) -> list[str]:
    """The overlays to check: `config.overlays` when set; else every directory under the base's
    parent (clusters/) whose kustomization refers to the base, directly or through another overlay."""
    if config.overlays is not None:
        for overlay in config.overlays:
            if find_kustomization(tree, overlay) is None:
                raise WaveBotError(f"overlays lists '{overlay}', which has no kustomization.yaml",
                                   path=config.source, hint="list the directories Flux bootstraps (clusters/<env>)")
        return list(config.overlays)
    refs = {d: _references(tree, d) for d in _candidate_dirs(tree, config)}
    overlays = {d for d, targets in refs.items() if any(_within(t, config.base_dir) for t in targets)}
    while True:  # an overlay of an overlay is an overlay too
        more = {d for d, targets in refs.items() if d not in overlays and targets & overlays}
        if not more:
            return sorted(overlays)
        overlays |= more


def _within(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory + "/")


def _candidate_dirs(tree: Tree, config: Config) -> list[str]:
    """Directories under the base's parent (hidden ones, links and the base itself left out)."""
    found, frontier = [], [posixpath.dirname(config.base_dir)]
    for _ in range(MAX_DISCOVERY_DEPTH):
        next_frontier = []
        for directory in frontier:
            prefix = f"{directory}/" if directory else ""
            for entry in tree.entries(directory):
                path = prefix + entry.name
                if entry.kind == "dir" and not entry.name.startswith(".") and not _within(path, config.base_dir):
                    found.append(path)
                    next_frontier.append(path)
        frontier = next_frontier
    return found


def _references(tree: Tree, directory: str) -> set[str]:
    """The repo paths a directory's kustomization lists under resources, bases and components."""
    kfile = find_kustomization(tree, directory)
    if kfile is None:
        return set()
    kust = read_kustomization(tree, kfile, check=False)
    out = set()
    for key in ("resources", "bases", "components"):
        values = kust.value.get(key)
        for ref in values if isinstance(values, list) else []:
            try:
                out.add(resolve(directory, str(ref), kfile, None, tree=tree))
            except Unsupported:  # remote or outside the repository: cannot be the base
                continue
    return out


# ---- what a build gives each wave ---------------------------------------------------------------


def decryption_problem(value: Mapping[str, Any], config: Config) -> str | None:
    """Why this Flux Kustomization does not decrypt with the SOPS key; None when it does."""
    spec: Mapping[str, Any] = value["spec"] if isinstance(value.get("spec"), dict) else {}
    decryption = spec.get("decryption")
    if not isinstance(decryption, dict):
        return "no spec.decryption"
    provider = decryption.get("provider")
    if provider is None:
        return "spec.decryption has no provider"
    if provider != SOPS:
        return f"spec.decryption.provider is '{provider}', not '{SOPS}'"
    ref = decryption.get("secretRef")
    name = ref.get("name") if isinstance(ref, dict) else None
    if name is None:
        return f"spec.decryption has no secretRef.name (expected '{config.decryption_secret}')"
    if name != config.decryption_secret:
        return f"spec.decryption.secretRef.name is '{name}', not '{config.decryption_secret}'"
    return None


def wave_objects(result: Build, config: Config, n: int) -> list[Object]:
    return result.find("Kustomization", FLUX_GROUP, config.wave_cr_name(n))


def wave_problem(result: Build, config: Config, n: int) -> str | None:
    """Why wave `n` lacks decryption in `result`; None when it has it or is not in the build."""
    for obj in wave_objects(result, config, n):
        problem = decryption_problem(obj.value, config)
        if problem is not None:
            return problem
    return None


def _wave_of(name: str, config: Config) -> int | None:
    return config.wave_of_cr_file(f"{name}.yaml")


# ---- the base ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Entry:
    """A base `resources:` (or `bases:`) entry that names a wave's Flux Kustomization file."""

    key: str
    index: int
    ref: str
    path: str
    wave: int
    line: int


def _wave_entries(tree: Tree, kust: Kustomization, config: Config) -> list[_Entry]:
    out = []
    for key in ("resources", "bases"):
        values = kust.value.get(key)
        for i, ref in enumerate(values if isinstance(values, list) else []):
            if not isinstance(ref, str):
                continue
            try:
                path = resolve(kust.directory, ref, kust.path, None, tree=tree)
            except Unsupported:
                continue
            wave = config.wave_of_cr_file(posixpath.basename(path))
            if wave is not None and posixpath.dirname(path) == config.base_dir:
                out.append(_Entry(key, i, ref, path, wave, kust.line(key, i)))
    return out


def _base_kustomization(tree: Tree, config: Config) -> Kustomization | None:
    kfile = find_kustomization(tree, config.base_dir)
    return read_kustomization(tree, kfile, check=False) if kfile is not None else None


def _built_waves(tree: Tree, directory: str, config: Config, waves: Sequence[int]) -> set[int] | None:
    """The waves whose Flux Kustomization `directory` builds; None when it cannot be evaluated."""
    try:
        result = build(tree, directory)
    except (BuildError, Unsupported):
        return None
    return {n for n in waves if wave_objects(result, config, n)}


def base_findings(tree: Tree, config: Config, waves: Sequence[int]) -> list[Finding]:
    """missing-base-entry: the base does not list a wave's Flux Kustomization, so Flux never creates
    it. stale-base-entry: the base lists an apps-wave-*.yaml that does not exist (no build works)."""
    kust = _base_kustomization(tree, config)
    if kust is None:
        return []
    entries = _wave_entries(tree, kust, config)
    findings = [_stale_entry(kust, e, config) for e in entries if tree.kind(e.path) is None]
    listed = {e.wave for e in entries}
    built = _built_waves(tree, config.base_dir, config, waves) or set()
    missing = [n for n in waves if n not in listed and n not in built]
    if missing:
        work = _Work(tree)
        for n in missing:
            edits = _base_edits(work, config, [n], require_file=False)
            findings.append(_missing_entry(kust, n, edits, config))
    return findings


def _stale_entry(kust: Kustomization, entry: _Entry, config: Config) -> Finding:
    return Finding(
        code="stale-base-entry",
        severity="error",
        message=(f"{kust.path} lists {entry.ref}, which does not exist: kustomize fails on it, so no overlay "
                 f"built on {config.base_dir} applies at all"),
        path=kust.path,
        line=entry.line,
        wave=entry.wave,
        resource=config.wave_cr_name(entry.wave),
        fix=f"delete the line `- {entry.ref}` from {entry.key}: in {kust.path}",
    )


def _missing_entry(kust: Kustomization, n: int, edits: list[Edit], config: Config) -> Finding:
    name = config.wave_cr_name(n)
    return Finding(
        code="missing-base-entry",
        severity="error",
        message=(f"{kust.path} does not list {name}.yaml: Flux never creates the {name} Kustomization, so "
                 f"nothing in {config.wave_dir(n)}/ is ever applied"),
        path=kust.path,
        wave=n,
        resource=name,
        fix=snippet(edits),
    )


# ---- overlays: findings ----------------------------------------------------------------------------


def decryption_findings(
    tree: Tree, config: Config, waves: Sequence[int], sops_waves: set[int]
) -> list[Finding]:
    """missing-decryption for each (overlay, wave) whose build lacks the SOPS decryption (an error
    when the wave holds a SOPS file), stale-decryption-patch for a patch naming a removed wave that
    breaks the build, and overlay-build-error / overlay-not-checked when the overlay cannot be read."""
    findings: list[Finding] = []
    # Judge each overlay as if the base listed every wave: a wave missing from the base is its own
    # finding (missing-base-entry), and the overlay's decryption for it matters all the same.
    work = _Work(tree)
    _base_edits(work, config, waves, require_file=True)
    tree = work.tree()
    in_base = _built_waves(tree, config.base_dir, config, waves)
    for overlay in discover_overlays(tree, config):
        try:
            result = build(tree, overlay)
        except Unsupported as exc:
            findings.append(_not_checked(overlay, exc))
            continue
        except BuildError as exc:
            findings.append(_build_error(overlay, exc))
            continue
        findings += [_problem_finding(overlay, p, config, waves) for p in result.problems]
        findings += _wave_findings(tree, config, overlay, result, waves, sops_waves, in_base)
    return findings


def _wave_findings(
    tree: Tree, config: Config, overlay: str, result: Build, waves: Sequence[int], sops_waves: set[int],
    in_base: set[int] | None,
) -> list[Finding]:
    kfile = result.kustomizations[0]
    wrong = {n: p for n in waves if (p := wave_problem(result, config, n)) is not None}
    fixes = _fix_texts(tree, config, overlay, list(wrong)) if wrong else {}
    unverified = snippet([Edit(kfile, "patches", _regex_item(config))])  # when no edit could be checked
    findings = [_missing_decryption(overlay, kfile, n, why, n in sops_waves, fixes.get(n, unverified), config)
                for n, why in wrong.items()]
    for n in waves:
        if not wave_objects(result, config, n) and (in_base is None or n in in_base):
            findings.append(Finding(
                code="wave-not-in-overlay",
                severity="error",
                message=(f"{overlay}: its build has no {config.wave_cr_name(n)} Kustomization although "
                         f"{config.base_dir} has one, so wave {n} is never applied in this cluster"),
                path=kfile,
                wave=n,
                overlay=overlay,
                resource=config.wave_cr_name(n),
            ))
    return findings


def _missing_decryption(
    overlay: str, kfile: str, n: int, why: str, holds_sops: bool, fix: str | None, config: Config
) -> Finding:
    name = config.wave_cr_name(n)
    if holds_sops:
        consequence = f"wave {n} holds SOPS-encrypted files: {ENCRYPTED}"
    else:
        consequence = f"wave {n} holds no SOPS file yet, but once it does {ENCRYPTED}"
    return Finding(
        code="missing-decryption",
        severity="error" if holds_sops else "warning",
        message=f"{overlay}: {name} gets no SOPS decryption ({why}); {consequence}",
        path=kfile,
        wave=n,
        overlay=overlay,
        resource=name,
        fix=fix,
    )


def _problem_finding(overlay: str, problem: Problem, config: Config, waves: Sequence[int]) -> Finding:
    patch, missing = problem.patch, problem.missing
    wave = _wave_of(missing.name, config) if missing is not None and missing.group == FLUX_GROUP else None
    if missing is not None and wave is not None and wave not in waves and patch.touches_decryption:
        also = f", and delete {patch.path}" if patch.path else ""
        return Finding(
            code="stale-decryption-patch",
            severity="error",
            message=(f"{overlay}: {patch.file} {patch.where} gives decryption to {missing.name}, but wave {wave} "
                     f"no longer exists; kustomize fails on a patch without a target that names a missing "
                     f"object, so Flux applies nothing from {overlay}"),
            path=patch.file,
            line=patch.line,
            wave=wave,
            overlay=overlay,
            resource=missing.name,
            fix=f"delete {patch.where} (line {patch.line}) from {patch.file}{also}",
        )
    return Finding(
        code="overlay-build-error",
        severity="error",
        message=f"{overlay}: kustomize cannot build it: {patch.file} {patch.where}: {problem.message}",
        path=patch.file,
        line=patch.line,
        wave=wave,
        overlay=overlay,
    )


def _not_checked(overlay: str, exc: WaveBotError) -> Finding:
    where = f"{exc.location()}: " if exc.path else ""
    return Finding(
        code="overlay-not-checked",
        severity="warning",
        message=f"{overlay}: wave-bot cannot check its SOPS decryption: {where}{exc.message}",
        path=exc.path,
        line=exc.line,
        overlay=overlay,
        fix=f"kubectl kustomize {overlay}  # then check every wave's Flux Kustomization has spec.decryption",
    )


def _build_error(overlay: str, exc: WaveBotError) -> Finding:
    where = f"{exc.location()}: " if exc.path else ""
    return Finding(
        code="overlay-build-error",
        severity="error",
        message=f"{overlay}: kustomize cannot build it, so Flux applies nothing from it: {where}{exc.message}",
        path=exc.path,
        line=exc.line,
        overlay=overlay,
        fix=exc.hint,
    )


def _fix_texts(tree: Tree, config: Config, overlay: str, waves: list[int]) -> dict[int, str]:
    """Wave -> the snippet that fixes it (what --fix-overlays would add)."""
    fixed = _overlay_edits(_Work(tree), config, overlay, waves)
    return {n: snippet(edits) for n, edits in fixed.items()}


# ---- the new deepest wave ---------------------------------------------------------------------------


def new_deepest_wave_findings(
    tree: Tree, config: Config, waves: Sequence[int], deepest_before: int | None
) -> list[Finding]:
    """new-deepest-wave when the layout grows a deeper wave than `deepest_before` (None: there were no
    waves) and the hand-maintained files still need their edits: the base entry, and decryption in
    each overlay. The fix holds every edit as ready-to-paste YAML; once they are in, it goes away."""
    if not waves or max(waves) <= (-1 if deepest_before is None else deepest_before):
        return []
    new = [n for n in waves if deepest_before is None or n > deepest_before]
    work = _Work(tree)
    _generate_missing_crs(work, config, new)
    edits = _base_edits(work, config, new, require_file=False)
    for overlay in _ordered(work.tree(), discover_overlays(tree, config)):
        for fixed in _overlay_edits(work, config, overlay, new).values():
            edits += [e for e in fixed if e not in edits]
    if not edits:
        return []
    deepest = max(waves)
    places = sorted({e.path if e.key is not None else f"new file {e.path}" for e in edits})
    return [Finding(
        code="new-deepest-wave",
        severity="warning",
        message=(f"wave {deepest} is a new deepest wave: {config.wave_cr_name(deepest)} must be listed in the base "
                 f"and get SOPS decryption in every overlay; {len(edits)} edit(s) are still needed in: "
                 f"{', '.join(places)}; {FIX_HINT}"),
        wave=deepest,
        resource=config.wave_cr_name(deepest),
        fix=snippet(edits),
    )]


def _generate_missing_crs(work: _Work, config: Config, waves: Sequence[int]) -> None:
    """Look at the layout as `apply` leaves it: a new wave's Flux Kustomization file exists then."""
    missing = [n for n in waves if work.base.kind(config.wave_cr_path(n)) is None]
    if missing:
        template, _ = render.resolve_template(work.base, config)
        for n in missing:
            work.pending[config.wave_cr_path(n)] = render.wave_cr(n, template, config)


# ---- --fix-overlays --------------------------------------------------------------------------------


def fix_overlays(tree: Tree, config: Config, waves: Sequence[int]) -> list[Change]:
    """The edits that give every wave its base entry and its decryption in every overlay.

    Base entries go after the last wave entry, in its comment style. An overlay with no decryption
    patch gets ONE patch targeting every wave by regex; one that has some gets one more per missing
    wave in the style it uses (inline or `path:` file, strategic-merge or JSON6902, legacy fields),
    next to the last one. Every edit is an insertion: existing bytes, comments included, stay; each
    is verified by evaluating the overlay again. A wave whose Flux Kustomization file is not in the
    tree gets no base entry (listing it would break every build).
    """
    work = _Work(tree)
    _base_edits(work, config, waves, require_file=True)
    for overlay in _ordered(work.tree(), discover_overlays(tree, config)):
        _overlay_edits(work, config, overlay, list(waves))
    return work.changes()


def _ordered(tree: Tree, overlays: list[str]) -> list[str]:
    """Overlays others build on first, so their fixes are inherited rather than repeated."""
    def depth(overlay: str) -> tuple[int, str]:
        try:
            return len(build(tree, overlay).kustomizations), overlay
        except (BuildError, Unsupported):
            return 1 << 30, overlay
    return sorted(overlays, key=depth)


@dataclass(frozen=True)
class Edit:
    """One addition to a hand-maintained file, as the fixer makes it and as a snippet shows it."""

    path: str
    key: str | None
    """The top-level list the item joins (resources, patches, ...); None: `text` is a new file."""
    text: str
    """The list item with its dash at column 0 (comments above it allowed), or the new file's content."""
    after: int | None = None
    """Index of the item it goes after; None: the end of the list."""

    def show(self) -> str:
        if self.key is None:
            body = self.text[4:] if self.text.startswith("---\n") else self.text
            return f"# create {self.path}:\n{body}"
        return f"# {self.path}: add under {self.key}:\n{self.text}"


def snippet(edits: Sequence[Edit]) -> str:
    """Edits as one YAML stream: a `---` document per edit, each headed by where it goes."""
    return "---\n".join(e.show() for e in edits)


class _Work:
    """The tree with the edits made so far."""

    def __init__(self, tree: Tree) -> None:
        self.base = tree
        self.pending: dict[str, bytes] = {}

    def tree(self, pending: Mapping[str, bytes] | None = None) -> Tree:
        files = self.pending if pending is None else pending
        return PlannedTree(self.base, [Change("update", p, content=c) for p, c in files.items()])

    def read(self, path: str) -> bytes:
        return self.pending[path] if path in self.pending else self.base.read(path)

    def trial(self, edits: Sequence[Edit]) -> dict[str, bytes]:
        """The pending files once `edits` are made; WaveBotError when one cannot be made safely."""
        pending = dict(self.pending)
        for edit in edits:
            if edit.key is None:
                pending[edit.path] = edit.text.encode()
            else:
                current = pending[edit.path] if edit.path in pending else self.base.read(edit.path)
                pending[edit.path] = insert_item(current, edit.path, edit.key, edit.text, edit.after)
        return pending

    def changes(self) -> list[Change]:
        return [
            Change("create" if self.base.kind(path) is None else "update", path, content=content)
            for path, content in sorted(self.pending.items())
        ]


# -- base entries


def _base_edits(work: _Work, config: Config, waves: Sequence[int], *, require_file: bool) -> list[Edit]:
    """Add `- apps-wave-N.yaml` for each wave the base does not list, cloning the last entry's style."""
    edits: list[Edit] = []
    for n in sorted(waves):
        tree = work.tree()
        kust = _base_kustomization(tree, config)
        if kust is None or (require_file and tree.kind(config.wave_cr_path(n)) != "file"):
            continue
        entries = _wave_entries(tree, kust, config)
        if n in {e.wave for e in entries} or n in (_built_waves(tree, config.base_dir, config, [n]) or set()):
            continue
        edit = _base_entry(work, kust, entries, n, config)
        try:
            work.pending = work.trial([edit])
        except WaveBotError:
            if require_file:
                raise
        edits.append(edit)
    return edits


def _base_entry(work: _Work, kust: Kustomization, entries: list[_Entry], n: int, config: Config) -> Edit:
    below = [e for e in entries if e.wave < n] or entries
    if not below:
        return Edit(kust.path, "resources", f"- {config.wave_cr_name(n)}.yaml\n")
    template = max(below, key=lambda e: (e.wave, e.index))
    text = item_text(work.read(kust.path), kust.path, template.key, template.index)
    m = template.wave
    mapping = {config.wave_cr_name(m): config.wave_cr_name(n), config.wave_dir(m): config.wave_dir(n)}
    # the entry's comment may name what the wave depends on: wave N-1, or the root for wave 0
    before_m = [config.wave_cr_name(m - 1)] if m > 0 else list(config.root_depends_on)
    before_n = config.wave_cr_name(n - 1) if n > 0 else next(iter(config.root_depends_on), None)
    if before_n is not None:
        mapping.update({name: before_n for name in before_m if name not in mapping})
    return Edit(kust.path, template.key, substitute(text, mapping), after=template.index)


# -- overlay decryption


def _overlay_edits(work: _Work, config: Config, overlay: str, waves: Sequence[int]) -> dict[int, list[Edit]]:
    """Make the edits that give `overlay` decryption for `waves`; wave -> the edits that fixed it."""
    fixed: dict[int, list[Edit]] = {}
    for n in waves:
        if n in fixed:
            continue
        try:
            result = build(work.tree(), overlay)
        except (BuildError, Unsupported):
            return fixed
        if wave_problem(result, config, n) is None:
            continue
        for candidate in _candidates(work, result, config, overlay, n):
            pending = _verified(work, candidate, overlay, result, config, n)
            if pending is not None:
                work.pending = pending
                after = build(work.tree(), overlay)
                for m in waves:
                    if m not in fixed and wave_problem(result, config, m) and not wave_problem(after, config, m):
                        fixed[m] = candidate
                break
    return fixed


def _verified(
    work: _Work, candidate: list[Edit], overlay: str, before: Build, config: Config, n: int
) -> dict[str, bytes] | None:
    """The pending files with `candidate` made, if it gives wave n decryption and breaks nothing."""
    try:
        pending = work.trial(candidate)
        result = build(work.tree(pending), overlay)
    except WaveBotError:
        return None
    if wave_problem(result, config, n) is not None or not wave_objects(result, config, n):
        return None
    if len(result.problems) > len(before.problems):
        return None
    return pending


def _candidates(work: _Work, result: Build, config: Config, overlay: str, n: int) -> Iterator[list[Edit]]:
    """Ways to give wave n decryption, best first; each is verified before it is kept."""
    template = _template(result, config)
    kfile = result.kustomizations[0]
    if template is None:
        yield [Edit(kfile, "patches", _regex_item(config))]
    else:
        clone = _clone(work, template, result, config, n)
        if clone is not None:
            yield clone
        fresh = _fresh(work, template, result, config, n)
        if fresh is not None:
            yield fresh
    yield [Edit(kfile, "patches", _render_item(_targeted_smp(result, config, n)))]


def _template(result: Build, config: Config) -> PatchUse | None:
    """The decryption patch whose style new ones copy: the last one in the kustomization closest to
    the overlay (its own first, then its components and parents; the base's only as a last resort)."""
    patches = [p for p in result.patches if p.touches_decryption]
    patches = [p for p in patches if _gives_decryption(p)] or patches  # not one that removes it
    outside_base = [p for p in patches if posixpath.dirname(p.file) != config.base_dir]
    patches = outside_base or patches
    if not patches:
        return None
    nearest = min(patches, key=lambda p: p.depth)
    return [p for p in patches if p.file == nearest.file][-1]


def _gives_decryption(patch: PatchUse) -> bool:
    if patch.form == "smp":
        return any(isinstance((d.get("spec") or {}).get("decryption"), dict) for d in patch.documents)
    return any(isinstance(op, dict) and op.get("op") in ("add", "replace") for op in patch.documents[0])


def _decryption(config: Config) -> dict[str, Any]:
    return {"provider": SOPS, "secretRef": {"name": config.decryption_secret}}


def _regex_item(config: Config) -> str:
    prefix, _, suffix = config.wave_name.partition("{n}")
    pattern = f"{re.escape(prefix)}[0-9]+{re.escape(suffix)}".replace("\\-", "-")
    item = {
        "target": {"group": FLUX_GROUP, "kind": "Kustomization", "name": pattern},
        "patch": _literal({
            "apiVersion": f"{FLUX_GROUP}/v1",
            "kind": "Kustomization",
            "metadata": {"name": config.wave_name.replace("{n}", "all")},  # ignored: the target decides
            "spec": {"decryption": _decryption(config)},
        }),
    }
    comment = (
        "# SOPS decryption for every app wave (added by wave-bot). LOAD-BEARING: a wave without it applies\n"
        f"# its *.sops.yaml files still encrypted. The key is the out-of-band {config.decryption_secret} Secret.\n"
    )
    return comment + _render_item(item)


def _targeted_smp(result: Build, config: Config, n: int) -> dict[str, Any]:
    obj = wave_objects(result, config, n)[0].original
    return {
        "target": {"group": obj.group, "kind": obj.kind, "name": obj.name},
        "patch": _literal(_smp_doc(result, config, n)),
    }


def _smp_doc(result: Build, config: Config, n: int) -> dict[str, Any]:
    """A strategic-merge patch naming wave n as the overlay's patches first see it."""
    obj = wave_objects(result, config, n)[0].original
    metadata = {"name": obj.name, **({"namespace": obj.namespace} if obj.namespace else {})}
    return {"apiVersion": obj.api_version, "kind": obj.kind, "metadata": metadata,
            "spec": {"decryption": _decryption(config)}}


def _clone(work: _Work, template: PatchUse, result: Build, config: Config, n: int) -> list[Edit] | None:
    """The template patch copied for wave n, when it is a patch for exactly one other wave."""
    waves = {_wave_of(i.name, config) for i in template.applied_to if i.group == FLUX_GROUP}
    if len(template.applied_to) != 1 or None in waves:
        return None
    (m,) = waves
    assert m is not None
    mapping = {config.wave_cr_name(m): config.wave_cr_name(n), config.wave_dir(m): config.wave_dir(n)}
    text = item_text(work.read(template.file), template.file, template.field, template.index)
    cloned = substitute(text, mapping)
    if cloned == text:
        return None
    edits = [Edit(template.file, template.field, cloned, after=template.index)]
    if template.path is not None:
        new_path = substitute(template.path, mapping)
        if new_path == template.path or work.tree().kind(new_path) is not None:
            return None
        content = substitute(work.read(template.path).decode(), mapping)
        edits.insert(0, Edit(new_path, None, content))
    return edits


def _fresh(work: _Work, template: PatchUse, result: Build, config: Config, n: int) -> list[Edit] | None:
    """A new patch for wave n written the way the template is (same field, form, inline or file)."""
    obj = wave_objects(result, config, n)[0].original
    ops = [{"op": "add", "path": "/spec/decryption", "value": _decryption(config)}]
    content: Any = ops if template.form == "json6902" else _smp_doc(result, config, n)
    target = {"group": obj.group, "version": obj.version, "kind": obj.kind, "name": obj.name}
    edits: list[Edit] = []
    reference: Any = _literal(content)
    if template.path is not None:
        path = _fresh_path(work, template.path, config, n)
        if path is None:
            return None
        header = f"# SOPS decryption for {config.wave_cr_name(n)} (added by wave-bot).\n"
        edits.append(Edit(path, None, header + _dump(content)))
        reference = posixpath.relpath(path, posixpath.dirname(template.file))
    if template.field == "patchesStrategicMerge":
        item: Any = reference
    else:
        item = {"path" if template.path is not None else "patch": reference}
        if template.form == "json6902" or template.target is not None:
            if template.field == "patches":
                del target["version"]  # a regex over every version is the more robust target
            item = {"target": target, **item}
    edits.append(Edit(template.file, template.field, _render_item(item), after=template.index))
    return edits


def _fresh_path(work: _Work, template_path: str, config: Config, n: int) -> str | None:
    """A name for wave n's patch file beside the template's: its name with the wave changed."""
    directory, name = posixpath.split(template_path)
    prefix, _, suffix = config.wave_name.partition("{n}")
    found = re.search(rf"(?<![A-Za-z0-9_-]){re.escape(prefix)}([0-9]+){re.escape(suffix)}(?![0-9])", name)
    if found is not None:
        new = substitute(name, {found.group(0): config.wave_cr_name(n)})
    else:
        new = f"{config.wave_cr_name(n)}-decryption.yaml"
    path = posixpath.join(directory, new)
    return None if work.tree().kind(path) is not None else path


# ---- rendering and inserting YAML text ---------------------------------------------------------------


_NEW = object()
"""Stands for the inserted item in the list `insert_item` expects to get."""


class _Literal(str):
    """A string to write as a `|` block scalar."""


def _literal(value: Any) -> _Literal:
    return _Literal(_dump(value))


def _yaml() -> Any:
    from ruamel.yaml import YAML

    yaml = YAML(typ="rt")
    yaml.indent(mapping=2, sequence=2, offset=0)
    yaml.width = 4096
    return yaml


def _plain(value: Any) -> Any:
    from ruamel.yaml.scalarstring import LiteralScalarString

    if isinstance(value, _Literal):
        return LiteralScalarString(str(value))
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _dump(value: Any) -> str:
    stream = io.StringIO()
    _yaml().dump(_plain(value), stream)
    return stream.getvalue()


def _render_item(value: Any) -> str:
    """`value` as one block-sequence item, dash at column 0."""
    return _dump([value]).rstrip("\n") + "\n"


def substitute(text: str, mapping: Mapping[str, str]) -> str:
    """Replace whole names (`apps-wave-2`, not the start of `apps-wave-20`) in one pass."""
    if not mapping:
        return text
    alternatives = "|".join(re.escape(k) for k in sorted(mapping, key=len, reverse=True))
    pattern = re.compile(rf"(?<![A-Za-z0-9_-])(?:{alternatives})(?![0-9])")
    return pattern.sub(lambda m: mapping[m.group(0)], text)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _is_comment_or_blank(line: str) -> bool:
    stripped = line.strip()
    return not stripped or stripped.startswith("#")


@dataclass(frozen=True)
class _ListLayout:
    """Where a top-level block list's items are: [start, end) line ranges, 0-based."""

    dash: int
    items: tuple[tuple[int, int], ...]


def _layout(lines: list[str], info: yamlio.DocInfo, key: str, count: int, path: str) -> _ListLayout:
    starts = []
    for i in range(count):
        start = info.lines[(key, i)] - 1
        while start > 0 and not lines[start].lstrip().startswith("-"):
            start -= 1  # the dash sits alone on a line above the item's content
        starts.append(start)
    if not starts:
        raise WaveBotError(f"'{key}' is an empty list", path=path)
    dash = _indent(lines[starts[0]])
    items = []
    for i, start in enumerate(starts):
        last = i + 1 == len(starts)
        end = _list_end(lines, start, dash) if last else starts[i + 1]
        while end - 1 > start and _belongs_to_next(lines[end - 1], dash, last):
            end -= 1
        items.append((start, end))
    return _ListLayout(dash, tuple(items))


def _belongs_to_next(line: str, dash: int, last: bool) -> bool:
    """Whether a blank or comment line after an item introduces what follows rather than ending the
    item: a comment at the dash's column heads the next item; after the last item, a comment still
    indented like the items stays with the list (it usually heads items yet to come)."""
    if not line.strip():
        return True
    if not line.lstrip().startswith("#"):
        return False
    indent = _indent(line)
    return indent < dash or (indent == dash and (not last or dash == 0))


def _list_end(lines: list[str], start: int, dash: int) -> int:
    for j in range(start + 1, len(lines)):
        line = lines[j]
        if _is_comment_or_blank(line):
            continue
        indent, stripped = _indent(line), line.strip()
        if indent < dash or (indent == dash and not (stripped.startswith("- ") or stripped == "-")):
            return j
    return len(lines)


def _lines(data: bytes) -> list[str]:
    text = data.decode()
    if text and not text.endswith("\n"):
        text += "\n"
    return text.splitlines(keepends=True)


def item_text(data: bytes, path: str, key: str, index: int) -> str:
    """The text of item `index` of the top-level list `key`, dedented to put its dash at column 0."""
    doc = yamlio.load_one(data, path)
    assert doc is not None and isinstance(doc.value, dict)
    lines = _lines(data)
    layout = _layout(lines, doc.info, key, len(doc.value[key]), path)
    start, end = layout.items[index]
    return "".join(line[layout.dash:] if line.strip() else line for line in lines[start:end])


def insert_item(data: bytes, path: str, key: str, item: str, after: int | None) -> bytes:
    """`data` with `item` (dash at column 0) added to the top-level list `key`, after item `after`
    (None: at the end). Only lines are inserted; the result is checked by parsing it again."""
    doc = yamlio.load_one(data, path)
    if doc is None or not isinstance(doc.value, dict):
        raise WaveBotError("is not a mapping; wave-bot cannot add to it", path=path)
    lines = _lines(data)
    value = doc.value.get(key)
    if key in doc.value and isinstance(value, list) and value:
        if "[" in lines[doc.info.line((key,)) - 1].split("#")[0]:
            raise WaveBotError(f"'{key}' is a flow-style list ([...]); wave-bot adds only to block lists",
                               path=path, line=doc.info.line((key,)), hint="add the snippet by hand")
        layout = _layout(lines, doc.info, key, len(value), path)
        at = layout.items[after if after is not None and after < len(value) else -1][1]
        position, dash = at, layout.dash
        cut = after + 1 if after is not None and after < len(value) else len(value)
        expected = [*value[:cut], _NEW, *value[cut:]]
    else:
        position, dash = _open_list(lines, doc, key, path)
        expected = [_NEW]
    new_lines = [(" " * dash + line) if line.strip() else line for line in item.splitlines(keepends=True)]
    out = "".join(lines[:position] + new_lines + lines[position:]).encode()
    _check_insert(out, path, doc.value, key, item, expected)
    return out


def _open_list(lines: list[str], doc: yamlio.Document, key: str, path: str) -> tuple[int, int]:
    """Where a list that is missing, null or `[]` gets its first item (lines may be rewritten)."""
    dash = _dash_of_any_list(lines, doc)
    if key not in doc.value:
        while lines and lines[-1].strip() in ("", "..."):
            lines.pop()
        lines.append(f"{key}:\n")
        return len(lines), dash
    index = doc.info.line((key,)) - 1
    line = lines[index]
    if doc.value[key] == []:
        lines[index] = re.sub(r":\s*\[\s*\]", ":", line, count=1)
    elif doc.value[key] is not None:
        raise WaveBotError(f"'{key}' is not a list", path=path, line=index + 1)
    return index + 1, dash


def _dash_of_any_list(lines: list[str], doc: yamlio.Document) -> int:
    for key, value in doc.value.items():
        if isinstance(value, list) and value and (key, 0) in doc.info.lines:
            line = lines[doc.info.lines[(key, 0)] - 1]
            if line.lstrip().startswith("-"):
                return _indent(line)
    return 2


def _check_insert(out: bytes, path: str, before: Mapping[str, Any], key: str, item: str, expected: list[Any]) -> None:
    """The edited file must parse to the old one with exactly `item` added where intended."""
    new = yamlio.load_one(out, path)
    parsed = yamlio.load_one(item.encode(), path)
    assert parsed is not None
    expected = [parsed.value[0] if v is _NEW else v for v in expected]
    rest_same = new is not None and isinstance(new.value, dict) and all(
        new.value.get(k) == v for k, v in before.items() if k != key)
    if not rest_same or new.value.get(key) != expected:  # type: ignore[union-attr]
        raise WaveBotError(f"cannot add to '{key}' without changing what is already there", path=path,
                           hint="add the snippet by hand")


__all__ = [
    "Edit", "base_findings", "decryption_findings", "decryption_problem", "discover_overlays", "fix_overlays",
    "insert_item", "item_text", "new_deepest_wave_findings", "snippet", "substitute",
]
