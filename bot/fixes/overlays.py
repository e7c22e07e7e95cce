"""`--fix-overlays`: the edits that give every wave its base entry and its decryption in every overlay.

The files edited are maintained by hand and full of comments, so every edit is an insertion of one
list item (`bot.yamlio.edit`), written in the style the file already uses, and verified by evaluating
the overlay again (`bot.kustomize.build.build`) before it is kept.
"""
from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bot.config import Config
from bot.errors import WaveBotError
from bot.flux.decryption import SOPS, DecryptionRule, configured_rule, wave_named, wave_objects, wave_problem
from bot.flux.evalpaths import WaveEntry, base_kustomization, built_waves, discover_overlays, wave_entries
from bot.flux.vocabulary import FLUX_GROUP
from bot.kustomize.build import Build
from bot.kustomize.files import Kustomization, PatchUse
from bot.kustomize.repository import Builds
from bot.kustomize.spec import BuildError, Unsupported
from bot.layout import render
from bot.model import Change
from bot.repo.tree import PlannedTree, Tree
from bot.side import SIDE_SUFFIX, Side, Slot, order
from bot.yamlio.edit import dump_text, insert_item, item_text, literal, render_item, substitute


def fix_overlays(tree: Tree, config: Config, waves: Sequence[Slot], builds: Builds | None = None) -> list[Change]:
    """The edits that give every wave its base entry and its decryption in every overlay.

    Base entries go after the last wave entry, in its comment style. An overlay with no decryption
    patch gets ONE patch targeting every wave by regex; one that has some gets one more per missing
    wave in the style it uses (inline or `path:` file, strategic-merge or JSON6902, legacy fields),
    next to the last one. Every edit is an insertion: existing bytes, comments included, stay; each
    is verified by evaluating the overlay again. A wave whose Flux Kustomization file is not in the
    tree gets no base entry (listing it would break every build).
    """
    work = Work(tree, builds)
    base_edits(work, config, waves, require_file=True)
    for overlay in ordered(work, discover_overlays(tree, config)):
        overlay_edits(work, config, overlay, list(waves))
    return work.changes()


def ordered(work: Work, overlays: list[str]) -> list[str]:
    """Overlays others build on first, so their fixes are inherited rather than repeated."""
    def depth(overlay: str) -> tuple[int, str]:
        try:
            return len(work.build(overlay).kustomizations), overlay
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


class Work:
    """The tree with the edits made so far."""

    def __init__(self, tree: Tree, builds: Builds | None = None) -> None:
        self.base = tree
        self.pending: dict[str, bytes] = {}
        self.builds = builds if builds is not None else Builds()
        self._trees: dict[tuple[tuple[str, bytes], ...], Tree] = {}

    def tree(self, pending: Mapping[str, bytes] | None = None) -> Tree:
        """The tree with `pending` (default: the edits kept so far) made; the same object for the same
        edits, so that `builds` evaluates each overlay once per state of the files."""
        files = self.pending if pending is None else pending
        if not files:
            return self.base
        key = tuple(sorted(files.items()))
        if key not in self._trees:
            self._trees[key] = PlannedTree(self.base, [Change("update", p, content=c) for p, c in files.items()])
        return self._trees[key]

    def build(self, directory: str, pending: Mapping[str, bytes] | None = None) -> Build:
        return self.builds.build(self.tree(pending), directory)

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


def base_edits(work: Work, config: Config, waves: Sequence[Slot], *, require_file: bool) -> list[Edit]:
    """Add `- apps-wave-N.yaml` for each wave the base does not list, cloning the last entry's style."""
    edits: list[Edit] = []
    for n in sorted(waves):
        tree = work.tree()
        kust = base_kustomization(tree, config)
        if kust is None or (require_file and tree.kind(config.wave_cr_path(n)) != "file"):
            continue
        entries = wave_entries(tree, kust, config)
        built = built_waves(tree, config.base_dir, config, [n], work.builds) or set()
        if n in {e.wave for e in entries} or n in built:
            continue
        edit = _base_entry(work, kust, entries, n, config)
        try:
            work.pending = work.trial([edit])
        except WaveBotError:
            if require_file:
                raise
        edits.append(edit)
    return edits


def _base_entry(work: Work, kust: Kustomization, entries: list[WaveEntry], n: Slot, config: Config) -> Edit:
    # copy an entry of the same kind (a wave's for a wave, a side branch's for a side branch)
    alike = [e for e in entries if isinstance(e.wave, Side) == isinstance(n, Side)]
    below = [e for e in alike if e.wave < n] or [e for e in entries if e.wave < n] or entries
    if not below:
        return Edit(kust.path, "resources", f"- {config.wave_cr_name(n)}.yaml\n")
    template = max(below, key=lambda e: (order(e.wave), e.index))
    text = item_text(work.read(kust.path), kust.path, template.key, template.index)
    m = template.wave
    mapping = {config.wave_cr_name(m): config.wave_cr_name(n), config.wave_dir(m): config.wave_dir(n)}
    # the entry's comment may name what the wave depends on: wave N-1, or the root for wave 0
    before_m = list(config.wave_depends_on(m))
    before_n = next(iter(config.wave_depends_on(n)), None)
    if before_n is not None:
        mapping.update({name: before_n for name in before_m if name not in mapping})
    return Edit(kust.path, template.key, substitute(text, mapping), after=template.index)


# -- overlay decryption


def overlay_edits(work: Work, config: Config, overlay: str, waves: Sequence[Slot], rule: DecryptionRule | None = None
                  ) -> dict[Slot, list[Edit]]:
    """Make the edits that give `overlay` decryption for `waves` (by `rule`, default: the configured
    one); wave -> the edits that fixed it."""
    rule = rule if rule is not None else configured_rule(config)
    fixed: dict[Slot, list[Edit]] = {}
    for n in waves:
        if n in fixed:
            continue
        try:
            result = work.build(overlay)
        except (BuildError, Unsupported):
            return fixed
        if wave_problem(result, config, n, rule) is None:
            continue
        for candidate in _candidates(work, result, config, overlay, n, rule):
            pending = _verified(work, candidate, overlay, result, config, n, rule)
            if pending is not None:
                work.pending = pending
                after = work.build(overlay)
                for m in waves:
                    was, now = wave_problem(result, config, m, rule), wave_problem(after, config, m, rule)
                    if m not in fixed and was and not now:
                        fixed[m] = candidate
                break
    return fixed


def _verified(
    work: Work, candidate: list[Edit], overlay: str, before: Build, config: Config, n: Slot, rule: DecryptionRule
) -> dict[str, bytes] | None:
    """The pending files with `candidate` made, if it gives wave n decryption and breaks nothing."""
    try:
        pending = work.trial(candidate)
        result = work.build(overlay, pending)
    except WaveBotError:
        return None
    if wave_problem(result, config, n, rule) is not None or not wave_objects(result, config, n):
        return None
    if len(result.problems) > len(before.problems):
        return None
    return pending


def _candidates(work: Work, result: Build, config: Config, overlay: str, n: Slot, rule: DecryptionRule
                ) -> Iterator[list[Edit]]:
    """Ways to give wave n decryption, best first; each is verified before it is kept."""
    template = _template(result, config)
    kfile = result.kustomizations[0]
    if template is None:
        yield [Edit(kfile, "patches", regex_item(config, rule))]
    else:
        clone = _clone(work, template, result, config, n)
        if clone is not None:
            yield clone
        fresh = _fresh(work, template, result, config, n, rule)
        if fresh is not None:
            yield fresh
    yield [Edit(kfile, "patches", render_item(_targeted_smp(result, config, n, rule)))]


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


def _decryption(rule: DecryptionRule, merged: bool = False) -> dict[str, Any]:
    """spec.decryption as the rule wants it. `merged` (a strategic-merge patch, which keeps what it
    does not name): with a controller-level key, `secretRef: null`, which removes a Secret a wave
    names instead of leaving the wave pointed at it."""
    secret = rule.secrets[0] if rule.secrets else None
    if secret is None:
        return {"provider": SOPS, **({"secretRef": None} if merged else {})}
    return {"provider": SOPS, "secretRef": {"name": secret}}


def _name_regex(pattern: str) -> str:
    prefix, _, suffix = pattern.partition("{n}")
    return f"{re.escape(prefix)}[0-9]+{re.escape(suffix)}".replace("\\-", "-")


def regex_item(config: Config, rule: DecryptionRule | None = None) -> str:
    rule = rule if rule is not None else configured_rule(config)
    pattern = _name_regex(config.wave_name)
    if config.non_gating:  # the side branches too: kustomize matches the whole name
        side = config.side_pattern()
        pattern += f"({SIDE_SUFFIX})?" if side == config.wave_name + SIDE_SUFFIX else f"|{_name_regex(side)}"
    item = {
        "target": {"group": FLUX_GROUP, "kind": "Kustomization", "name": pattern},
        "patch": literal({
            "apiVersion": f"{FLUX_GROUP}/v1",
            "kind": "Kustomization",
            "metadata": {"name": config.wave_name.replace("{n}", "all")},  # ignored: the target decides
            "spec": {"decryption": _decryption(rule, merged=True)},
        }),
    }
    key = (f"The key is the out-of-band {rule.secrets[0]} Secret." if rule.secrets
           else "The key is kustomize-controller's own (--sops-age-secret):\n# the empty `secretRef:` (null) "
                "drops a Secret a wave names.")
    comment = (
        "# SOPS decryption for every app wave (added by wave-bot). LOAD-BEARING: a wave without it applies\n"
        f"# its *.sops.yaml files still encrypted. {key}\n"
    )
    return comment + render_item(item)


def _targeted_smp(result: Build, config: Config, n: Slot, rule: DecryptionRule) -> dict[str, Any]:
    obj = wave_objects(result, config, n)[0].original
    return {
        "target": {"group": obj.group, "kind": obj.kind, "name": obj.name},
        "patch": literal(_smp_doc(result, config, n, rule)),
    }


def _smp_doc(result: Build, config: Config, n: Slot, rule: DecryptionRule) -> dict[str, Any]:
    """A strategic-merge patch naming wave n as the overlay's patches first see it."""
    obj = wave_objects(result, config, n)[0].original
    metadata = {"name": obj.name, **({"namespace": obj.namespace} if obj.namespace else {})}
    return {"apiVersion": obj.api_version, "kind": obj.kind, "metadata": metadata,
            "spec": {"decryption": _decryption(rule, merged=True)}}


def _clone(work: Work, template: PatchUse, result: Build, config: Config, n: Slot) -> list[Edit] | None:
    """The template patch copied for wave n, when it is a patch for exactly one other wave."""
    waves = {wave_named(i.name, config) for i in template.applied_to if i.group == FLUX_GROUP}
    if len(template.applied_to) != 1 or len(waves) != 1 or None in waves:
        return None  # a patch of something else than one wave (a ConfigMap, several waves) is no template
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


def _fresh(work: Work, template: PatchUse, result: Build, config: Config, n: Slot, rule: DecryptionRule
           ) -> list[Edit] | None:
    """A new patch for wave n written the way the template is (same field, form, inline or file)."""
    obj = wave_objects(result, config, n)[0].original
    ops = [{"op": "add", "path": "/spec/decryption", "value": _decryption(rule)}]
    content: Any = ops if template.form == "json6902" else _smp_doc(result, config, n, rule)
    target = {"group": obj.group, "version": obj.version, "kind": obj.kind, "name": obj.name}
    edits: list[Edit] = []
    reference: Any = literal(content)
    if template.path is not None:
        path = _fresh_path(work, template.path, config, n)
        if path is None:
            return None
        header = f"# SOPS decryption for {config.wave_cr_name(n)} (added by wave-bot).\n"
        edits.append(Edit(path, None, header + dump_text(content)))
        reference = posixpath.relpath(path, posixpath.dirname(template.file))
    if template.field == "patchesStrategicMerge":
        item: Any = reference
    else:
        item = {"path" if template.path is not None else "patch": reference}
        if template.form == "json6902" or template.target is not None:
            if template.field == "patches":
                del target["version"]  # a regex over every version is the more robust target
            item = {"target": target, **item}
    edits.append(Edit(template.file, template.field, render_item(item), after=template.index))
    return edits


def _fresh_path(work: Work, template_path: str, config: Config, n: Slot) -> str | None:
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


def fix_texts(tree: Tree, config: Config, overlay: str, waves: list[Slot], builds: Builds | None = None,
              rule: DecryptionRule | None = None) -> dict[Slot, str]:
    """Wave -> the snippet that fixes it (what --fix-overlays would add)."""
    fixed = overlay_edits(Work(tree, builds), config, overlay, waves, rule)
    return {n: snippet(edits) for n, edits in fixed.items()}


def generate_missing_crs(work: Work, config: Config, waves: Sequence[Slot]) -> None:
    """Look at the layout as `apply` leaves it: a new wave's Flux Kustomization file exists then."""
    missing = [n for n in waves if work.base.kind(config.wave_cr_path(n)) is None]
    if missing:
        template, _ = render.resolve_template(work.base, config)
        for n in missing:
            work.pending[config.wave_cr_path(n)] = render.wave_cr(n, template, config)


__all__ = ["Edit", "Work", "base_edits", "fix_overlays", "fix_texts", "generate_missing_crs", "ordered",
           "overlay_edits", "regex_item", "snippet"]
