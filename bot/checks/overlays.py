"""The findings about the hand-maintained files around the waves: the base's entries, each overlay's
SOPS decryption, and the edits a new deepest wave still needs.

A wave missing from the base is never applied; a wave without decryption applies its `*.sops.yaml`
files still encrypted and corrupts the Secrets they hold (docs/design.md §5.2). Both are checked
on the overlays' kustomize output (`bot.kustomize.build.build`, never kustomize itself).
"""
from __future__ import annotations

from collections.abc import Sequence

from bot.config import Config
from bot.errors import WaveBotError
from bot.fixes.overlays import (
    Edit,
    Work,
    base_edits,
    fix_texts,
    generate_missing_crs,
    ordered,
    overlay_edits,
    regex_item,
    snippet,
)
from bot.flux.decryption import ENCRYPTED, DecryptionRule, rule_for, wave_named, wave_objects, wave_problem
from bot.flux.evalpaths import (
    EvalPath,
    WaveEntry,
    base_kustomization,
    built_waves,
    discover_overlays,
    evaluation_paths,
    wave_entries,
)
from bot.flux.vocabulary import FLUX_GROUP
from bot.kustomize.build import Build, Problem
from bot.kustomize.files import Additions, Kustomization
from bot.kustomize.repository import Builds, Kustomizations, read_kustomizations
from bot.kustomize.select import target_matches
from bot.kustomize.spec import HINT_BY_HAND, BuildError, Unsupported
from bot.model import Finding
from bot.repo.tree import Tree
from bot.side import Side, Slot, order
from bot.yamlio import documents as yamlio

FIX_HINT = "run `wave-bot apply --fix-overlays`, or paste each `---` section of the fix into the file it names"
ONE_COMMAND = "`wave-bot apply --fix-overlays` makes this edit"
"""Said on each finding `--fix-overlays` clears: after a plain `apply` the new wave is no longer new,
so `new-deepest-wave` (with FIX_HINT) is gone and these findings are all that is left."""


def base_findings(tree: Tree, config: Config, waves: Sequence[Slot], builds: Builds | None = None) -> list[Finding]:
    """missing-base-entry: the base does not list a wave's Flux Kustomization, so Flux never creates
    it. stale-base-entry: the base lists an apps-wave-*.yaml that does not exist (no build works)."""
    kust = base_kustomization(tree, config)
    if kust is None:
        return []
    entries = wave_entries(tree, kust, config)
    findings = [_stale_entry(kust, e, config) for e in entries if tree.kind(e.path) is None]
    listed = {e.wave for e in entries}
    builds = builds if builds is not None else Builds()
    built = built_waves(tree, config.base_dir, config, waves, builds) or set()
    missing = [n for n in waves if n not in listed and n not in built]
    if missing:
        work = Work(tree, builds)
        for n in missing:
            edits = base_edits(work, config, [n], require_file=False)
            findings.append(_missing_entry(kust, n, edits, config))
    return findings


def _stale_entry(kust: Kustomization, entry: WaveEntry, config: Config) -> Finding:
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


def _missing_entry(kust: Kustomization, n: Slot, edits: list[Edit], config: Config) -> Finding:
    name = config.wave_cr_name(n)
    return Finding(
        code="missing-base-entry",
        severity="error",
        message=(f"{kust.path} does not list {name}.yaml: Flux never creates the {name} Kustomization, so "
                 f"nothing in {config.wave_dir(n)}/ is ever applied; {ONE_COMMAND}"),
        path=kust.path,
        wave=n,
        resource=name,
        fix=snippet(edits),
    )

# ---- overlays: findings ----------------------------------------------------------------------------


def decryption_findings(
    tree: Tree, config: Config, waves: Sequence[Slot], sops_waves: set[Slot], builds: Builds | None = None
) -> list[Finding]:
    """For every evaluation path (`evalpaths.evaluation_paths`): missing-decryption for each wave whose
    build lacks the SOPS decryption (an error when the wave holds a SOPS file), stale-decryption-patch
    for a patch naming a removed wave that breaks the build, overlay-build-error when kustomize would
    fail, overlay-not-checked when wave-bot cannot evaluate it (an error when the waves hold SOPS
    files). Then decryption-unchecked for each wave holding a SOPS file that no evaluated path builds."""
    findings: list[Finding] = []
    # Judge each path as if the base listed every wave: a wave missing from the base is its own
    # finding (missing-base-entry), and the overlay's decryption for it matters all the same.
    work = Work(tree, builds)
    base_edits(work, config, waves, require_file=True)
    tree = work.tree()
    in_base = built_waves(tree, config.base_dir, config, waves, work.builds)
    secret_waves = sops_waves & set(in_base if in_base is not None else waves)
    models: dict[str, Kustomizations] = {}
    reached: set[Slot] = set()
    failed = False
    for path in evaluation_paths(tree, config):
        if path.cluster_dir not in models:
            models[path.cluster_dir] = read_kustomizations(tree, path.cluster_dir)
        rule = rule_for(config, models[path.cluster_dir], path.cluster_dir)
        try:
            if path.unsupported is not None:
                raise Unsupported(path.unsupported, path=path.file, line=path.line)
            result = work.builds.build(tree, path.directory, path.additions)
        except Unsupported as exc:
            findings.append(_not_checked(path, exc, secret_waves))
            failed = True
            continue
        except BuildError as exc:
            findings.append(_build_error(path.label, exc))
            failed = True
            continue
        reached |= {n for n in waves if wave_objects(result, config, n)}
        findings += [_problem_finding(path.label, p, config, waves) for p in result.problems]
        findings += _wave_findings(tree, config, path, result, waves, sops_waves, in_base, work.builds, rule)
    if not failed:  # (a path that failed is an error finding of its own already)
        reached |= {f.wave for f in findings if f.code == "wave-not-in-overlay" and f.wave is not None}
        findings += [_unchecked(n, config) for n in sorted(secret_waves - reached, key=order)]
    return findings


def _unchecked(n: Slot, config: Config) -> Finding:
    name = config.wave_cr_name(n)
    return Finding(
        code="decryption-unchecked",
        severity="error",
        message=(f"wave {n} holds SOPS-encrypted files, but no overlay and no Flux Kustomization wave-bot found "
                 f"builds {name}, so nothing shows Flux decrypts them: if it does not, {ENCRYPTED}"),
        path=config.wave_cr_path(n),
        wave=n,
        resource=name,
        fix=(f"list the directories Flux builds {config.base_dir} through under `overlays:` in {config.source} "
             f"(the base itself when Flux applies it directly), or add an overlay of {config.base_dir}"),
    )


def _wave_findings(
    tree: Tree, config: Config, path: EvalPath, result: Build, waves: Sequence[Slot], sops_waves: set[Slot],
    in_base: set[Slot] | None, builds: Builds, rule: DecryptionRule,
) -> list[Finding]:
    kfile = path.file or result.kustomizations[0]
    wrong = {n: p for n in waves if (p := wave_problem(result, config, n, rule)) is not None}
    wrong = {n: f"{p}; {miss}" if (miss := _regex_miss(result, config, n)) else p for n, p in wrong.items()}
    if path.file is None:
        fixes = fix_texts(tree, config, path.directory, list(wrong), builds, rule) if wrong else {}
        # No edit of the file could be made (a flow-style patches list, say): the regex item to paste,
        # for the waves it is seen to decrypt.
        rest = [n for n in wrong if n not in fixes]
        header = Edit(kfile, "patches", "").show()
        fallback = _appended_fix(tree, config, path, kfile, header, rest, builds, rule) if rest else {}
    else:
        header = f"# {path.file}: add under spec.patches: of {path.flux}:\n"
        fixes = _appended_fix(tree, config, path, path.file, header, list(wrong), builds, rule) if wrong else {}
        fallback = {}
    findings = [_missing_decryption(path.label, kfile, n, why, n in sops_waves, fixes.get(n, fallback.get(n)),
                                    config, rule, fixable=path.file is None and n in fixes)
                for n, why in wrong.items()]
    for n in waves:
        if not wave_objects(result, config, n) and (in_base is None or n in in_base):
            findings.append(Finding(
                code="wave-not-in-overlay",
                severity="error",
                message=(f"{path.label}: its build has no {config.wave_cr_name(n)} Kustomization although "
                         f"{config.base_dir} has one, so wave {n} is never applied in this cluster"),
                path=kfile,
                wave=n,
                overlay=path.label,
                resource=config.wave_cr_name(n),
            ))
    return findings


_REGEX_CHARS = frozenset("[]()*+?.|^$\\{}")


def _regex_miss(result: Build, config: Config, n: Slot) -> str | None:
    """For a side branch without decryption: the decryption patch whose target name is a regular
    expression that covers waves but not the side branch (kustomize matches the whole name)."""
    if not isinstance(n, Side):
        return None
    name = config.wave_cr_name(n)
    for patch in result.patches:
        pattern = patch.target.fields.get("name") if patch.target is not None else None
        if not pattern or not _REGEX_CHARS & set(pattern) or not patch.applied_to or not patch.touches_decryption:
            continue
        if not target_matches(pattern, name):
            covered = ", ".join(sorted({i.name for i in patch.applied_to}))
            return (f"{patch.file} {patch.where} (line {patch.line}) gives decryption to the target name "
                    f"'{pattern}', which kustomize matches against the whole name: it covers {covered} but not {name}")
    return None


def _appended_fix(tree: Tree, config: Config, path: EvalPath, file: str, header: str, waves: list[Slot],
                  builds: Builds, rule: DecryptionRule) -> dict[Slot, str]:
    """The regex item, under `header`, for each of `waves` that has decryption once it is appended to
    the patches `file` gives the path (its spec.patches on a Flux-level path): wave -> snippet. An item
    that would not decrypt a wave is never offered for it."""
    text = regex_item(config, rule)
    item = yamlio.load(text.encode(), "snippet")[0].value[0]
    value = dict(path.additions.value) if path.additions is not None else {}
    value["patches"] = [*value.get("patches", []), item]
    info = path.additions.info if path.additions is not None else yamlio.scan(b"{}", file)[0]
    try:
        result = builds.build(tree, path.directory, Additions(file, value, info, built=path.directory))
    except WaveBotError:
        return {}
    return {n: header + text for n in waves if wave_problem(result, config, n, rule) is None}


def _missing_decryption(
    label: str, kfile: str, n: Slot, why: str, holds_sops: bool, fix: str | None, config: Config,
    rule: DecryptionRule, fixable: bool,
) -> Finding:
    name = config.wave_cr_name(n)
    if holds_sops:
        consequence = f"wave {n} holds SOPS-encrypted files: {ENCRYPTED}"
    else:
        consequence = f"wave {n} holds no SOPS file yet, but once it does {ENCRYPTED}"
    return Finding(
        code="missing-decryption",
        severity="error" if holds_sops else "warning",
        message=f"{label}: {name} gets no SOPS decryption ({why}; wave-bot expects {rule.describe()}); {consequence}"
                + (f"; {ONE_COMMAND}" if fixable else ""),
        path=kfile,
        wave=n,
        overlay=label,
        resource=name,
        fix=fix,
    )


def _problem_finding(overlay: str, problem: Problem, config: Config, waves: Sequence[Slot]) -> Finding:
    patch, missing = problem.patch, problem.missing
    wave = wave_named(missing.name, config) if missing is not None and missing.group == FLUX_GROUP else None
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


def _not_checked(path: EvalPath, exc: WaveBotError, secret_waves: set[Slot]) -> Finding:
    where = f"{exc.location()}: " if exc.path else ""
    if secret_waves:
        listed = ", ".join(map(str, sorted(secret_waves, key=order)))
        holds = "wave {} holds" if len(secret_waves) == 1 else "waves {} hold"
        severity, stake = "error", f"{holds.format(listed)} SOPS-encrypted files, so nothing shows they are decrypted"
    else:
        severity, stake = "warning", "no wave holds a SOPS file yet"
    if path.file is None:
        how = f"kubectl kustomize {path.directory or '.'}"
    else:
        how = f"kubectl kustomize {path.directory or '.'} with the spec.patches of {path.file} added"
    # What to change, when the refusal says (its generic "check by hand" is the command itself).
    first = f"# {exc.hint}\n" if exc.hint and exc.hint != HINT_BY_HAND else ""
    return Finding(
        code="overlay-not-checked",
        severity=severity,  # type: ignore[arg-type]
        message=f"{path.label}: wave-bot cannot check its SOPS decryption ({stake}): {where}{exc.message}",
        path=exc.path,
        line=exc.line,
        overlay=path.label,
        fix=first + f"{how}  # then check every wave's Flux Kustomization has spec.decryption",
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


# ---- the new deepest wave ---------------------------------------------------------------------------


def new_deepest_wave_findings(
    tree: Tree, config: Config, waves: Sequence[Slot], deepest_before: int | None, builds: Builds | None = None
) -> list[Finding]:
    """new-deepest-wave when the layout grows a deeper wave than `deepest_before` (None: there were no
    waves) and the hand-maintained files still need their edits: the base entry, and decryption in
    each overlay. The fix holds every edit as ready-to-paste YAML; once they are in, it goes away."""
    if not waves or max(waves) <= (-1 if deepest_before is None else deepest_before):
        return []
    new = [n for n in waves if deepest_before is None or n > deepest_before]
    work = Work(tree, builds)
    generate_missing_crs(work, config, new)
    edits = base_edits(work, config, new, require_file=False)
    for overlay in ordered(work, discover_overlays(tree, config)):
        for fixed in overlay_edits(work, config, overlay, new).values():
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




__all__ = ["FIX_HINT", "base_findings", "decryption_findings", "new_deepest_wave_findings"]
