"""Every finding code, declared once: its severity rule and what it means in one line.

docs/reference/findings.md is generated from `CODES` (python tools/reference.py), the table of
docs/explanation/checks.md is tested against it (tests/checks/test_codes.py), and two lists below are
derived from it: `DELETING` (the hazard findings that say Flux deletes an object, which a deleted
Namespace makes worse) and `OWN_SECTION` (info the reports show in a section of their own). The
severity rule is written the way the docs state it; the check that emits a finding applies it.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Code:
    name: str
    severity: str  # the rule, as the docs' tables state it
    meaning: str  # one line
    deletes: bool = False  # a finding of this code says Flux deletes the object
    own_section: bool = False  # the reports show it in a section of its own, not among the findings
    tier: bool = False  # a problem of the Flux Kustomizations: the reports show it with the tier checks


_STATEFUL = "error for PVC, PV, Namespace, CNPG `Cluster` and `stateful_kinds`; warning otherwise; " \
            "info if `prune: disabled` was already deployed on every copy"

CODES: tuple[Code, ...] = (
    # what Flux deletes when the change merges (checks/deletes.py)
    Code("later-wave-move", _STATEFUL, "an object moves to a later wave or a side branch: the old wave prunes it first",
         deletes=True),
    Code("earlier-wave-move", "info", "an object moves to an earlier wave, which adopts it first: safe"),
    Code("cross-kustomization-move", "as `later-wave-move`",
         "an object moves between a wave and another Flux Kustomization that does not adopt it first", deletes=True),
    Code("copy-removed", "as `later-wave-move`",
         "an object two Kustomizations applied loses the copy of the one that reconciles first", deletes=True),
    Code("duplicate-resource", "error", "one object in two Flux Kustomizations, which relabel it in turn"),
    Code("resource-dropped", "error; warning if protected at base or its wave does not prune",
         "an applied object is in no wave now although its file still exists", deletes=True),
    Code("resource-removed", "error for the kinds above, info otherwise (info if protected at base)",
         "the change deletes the file, so Flux deletes the object", deletes=True),
    Code("namespace-deleted", "error for the kinds above, warning otherwise",
         "the object's Namespace is deleted, and Kubernetes deletes everything in it"),
    Code("kustomization-removed", "error",
         "a pruning Flux Kustomization that owned objects disappears: its finalizer deletes them"),
    # what a change makes Flux delete, Kustomization by Kustomization (checks/review.py, review mode)
    Code("kustomization-renamed", "error for the kinds above and a chart's claims; warning otherwise",
         "a Flux Kustomization is renamed or changes namespace: the old one's finalizer deletes what the new "
         "one recreates", deletes=True),
    Code("build-failed", "error",
         "a Flux Kustomization's build fails at the head (a missing path): Flux applies and prunes nothing of it"),
    Code("apply-failed", "error",
         "a Flux Kustomization's build gives an object of a namespaced kind with no namespace: its apply fails, "
         "and Flux prunes nothing of it"),
    Code("base-not-applied", "warning",
         "a Flux Kustomization failed at the base and applies again: the cluster holds an older revision's objects, "
         "which it now prunes unseen"),
    Code("depends-on-not-gating", "info",
         "a dependsOn target neither waits nor has health checks: the edge orders the apply only", tier=True),
    Code("sops-not-decrypted", "error",
         "a Flux Kustomization applies a SOPS-encrypted object without `spec.decryption`", tier=True),
    Code("ready-expr-replaces-readiness", "warning",
         "a `dependsOn[].readyExpr` without the AdditiveCELDependencyCheck gate: no revision check", tier=True),
    # checks/prune.py
    Code("invalid-prune", "error", "`spec.prune` is not a YAML 1.2 boolean: the CRD rejects it"),
    # checks/cutover.py
    Code("cutover-step-1", "warning", "adopting waves, step 1: release the monolithic `apps` Kustomization"),
    Code("cutover-step-2", "info", "adopting waves, step 2: the split into waves"),
    # checks/removal.py
    Code("wave-emptied", "warning", "a wave had objects and has none: kept, because deleting it would prune"),
    Code("wave-removed", "info", "a wave beyond the deepest, already empty at base, is deleted"),
    Code("wave-removable", "info", "an empty wave could go, but lines outside its files still refer to it"),
    # checks/overlays.py
    Code("missing-base-entry", "error", "the base's kustomization misses a wave: Flux never creates it"),
    Code("stale-base-entry", "error", "the base's kustomization lists a wave that does not exist"),
    Code("new-deepest-wave", "warning", "a deeper wave than before: its base entry and decryption patches, to paste"),
    Code("missing-decryption", "error when the wave holds a SOPS file, else warning",
         "an evaluation path gives the wave no `spec.decryption` Flux accepts"),
    Code("decryption-unchecked", "error", "a wave holds SOPS files but no evaluation path wave-bot found builds it"),
    Code("stale-decryption-patch", "error", "a patch without `target:` names a wave that no longer exists"),
    Code("wave-not-in-overlay", "error", "the overlay drops a wave"),
    Code("overlay-build-error", "error", "the overlay does not build"),
    Code("overlay-not-checked", "error when the waves hold SOPS files, else warning",
         "the evaluation path uses something wave-bot does not evaluate"),
    # the layout (plan.py, flux/inventory.py, checks/restored.py)
    Code("unplaced-file", "error", "no catalog node owns an app file; it stays where it is"),
    Code("invalid-manifest", "error", "a document in a wave is not a Kubernetes object"),
    Code("generated-file-restored", "info",
         "a generated file has an edit wave-bot never makes; regeneration undoes it"),
    Code("wave-template-changed", "info", "a wave's Flux Kustomization differs from the wave template"),
    Code("not-onboarded", "info", "a catalog node has no app files yet", own_section=True),
    # checks/gating.py, checks/imageauto.py
    Code("chain-gating", "info", "units that wait for others only because the waves form one chain", own_section=True),
    Code("image-automation-uncovered", "warning", "an ImageUpdateAutomation's update path misses a wave directory"),
    # the next safe step and acceptances (fixes/stepping.py, checks/acceptance.py)
    Code("move-held", "warning",
         "a data-loss move is held: `apply` protects the objects it would delete first, and moves once deployed"),
    Code("annotation-removable", "info",
         "the `prune: disabled` a `move-held` step added is deployed with the moved file: its lines can go"),
    Code("stale-acceptance", "warning", "an entry of `.wave-bot-accept.yaml` names no object this change deletes"),
    # the tiers around the waves (checks/tiers.py, checks/crds.py, checks/substitution.py)
    Code("depends-on-missing", "error", "a Flux Kustomization `dependsOn` one no entrypoint applies: never Ready"),
    Code("depends-on-cycle", "error", "a `dependsOn` cycle: none of its tiers ever starts"),
    Code("tier-not-checked", "info", "wave-bot cannot build a tier's pass: its CRDs and substitutions are not checked"),
    Code("tier-path-moved", "error",
         "(with `--base`) a Flux Kustomization's `spec.path` names a directory this change moves away: never Ready"),
    Code("depends-on-namespace", "error",
         "a `dependsOn` entry without `namespace` names a Kustomization only another namespace has"),
    Code("kustomization-namespace-missing", "error",
         "a Flux Kustomization an entrypoint applies has no `metadata.namespace`: the whole apply fails"),
    Code("kustomization-source-namespace", "error",
         "a Flux Kustomization's `sourceRef` without `namespace` names a source only another namespace has"),
    Code("crd-same-pass-as-creator", "error",
         "a second-order kind in the same pass as the CR whose controller creates its CRD: a deadlock"),
    Code("crd-not-ordered", "error", "a kind whose CRD another tier serves, with no Ready-gated ordering: a race"),
    Code("crd-source-unknown", "warning", "once per kind: nothing known serves its CRD, and wave-bot does not guess"),
    Code("substitution-unresolved", "error (warning with `strict_substitution: false`)",
         "a `${VAR}` without a default that no `postBuild` source of the tier defines"),
    Code("substitution-without-postbuild", "warning",
         "a `${VAR}` in a tier without `spec.postBuild`: it reaches the cluster as written"),
    Code("substitution-source-missing", "warning",
         "a tier needs variables, and one of its non-optional `substituteFrom` sources is not in git"),
    # the run (actions/run.py) and the plan without a base
    Code("hazards-skipped", "warning", "(bot) the base revision could not be fetched: prune hazards not checked"),
    Code("base-is-work-tree", "info", "no `--base`: the work tree is taken as deployed to judge the moves"),
)

# The headline of a finding that deletes (or holds, or loses) objects, when it is an error or a
# warning: what the change does to which objects, under 20 words. `{objects}` is the first object at
# risk in code format (data loss first) and how many more; `{them}` it or them; `{path}` and `{wave}`
# the finding's. Every other finding's headline is its message's first sentence or clause when that
# is short, else the code's `meaning` (bot/report/headline.py).
HEADLINES: dict[str, str] = {
    "later-wave-move": "Moving to wave {wave} deletes {objects} before the new wave recreates {them}",
    "cross-kustomization-move": "Changing Flux Kustomization deletes {objects} before the new one applies {them}",
    "copy-removed": "Dropping one copy lets its Flux Kustomization delete {objects}",
    "duplicate-resource": "{objects} is defined more than once: whichever Flux Kustomization stops applying it "
                          "deletes it",
    "resource-dropped": "{objects} is in no wave any more, though its file stays",
    "resource-removed": "Flux deletes {objects}: this change removes {them}",
    "namespace-deleted": "Deleting its Namespace deletes {objects}",
    "kustomization-removed": "Removing Flux Kustomization {objects} makes its finalizer delete everything it owns",
    "kustomization-renamed": "The renamed Flux Kustomization's finalizer deletes {objects}; the new one recreates "
                             "{them}",
    "move-held": "wave-bot holds the move of {path}: moving it now deletes {objects}",
    "cutover-step-1": "Splitting the app tier now would delete {objects}: this step only releases it first",
}

BY_NAME: dict[str, Code] = {c.name: c for c in CODES}
DELETING = frozenset(c.name for c in CODES if c.deletes)
OWN_SECTION = frozenset(c.name for c in CODES if c.own_section)
TIER = frozenset(c.name for c in CODES if c.tier)

__all__ = ["BY_NAME", "CODES", "DELETING", "HEADLINES", "OWN_SECTION", "TIER", "Code"]
