"""hazards: what Flux deletes when a change merges, on real git repositories (base = the parent commit)."""
from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from bot.checks.deletes import ORPHAN_SNIPPET, PRUNE_FALSE_SNIPPET, PRUNE_SNIPPET, duplicate_findings, hazard_findings
from bot.checks.removal import FluxReference, removable_waves, wave_references, wave_removed_finding
from bot.config import Config, parse_config
from bot.flux.inventory import Inventory, ResourceId, read_inventory
from bot.flux.manifests import ParseCache
from bot.flux.stateful import is_stateful
from bot.model import Finding
from bot.plan import make_plan
from bot.repo.git import GitTree, mover
from bot.repo.worktree import FsTree, apply_changes
from tests.conftest import TOOLS_KUSTOMIZATION, Kubectl, git, write_files

PVC = "PersistentVolumeClaim gitea/gitea-data"
ANNOTATION = "  annotations:\n    kustomize.toolkit.fluxcd.io/prune: disabled\n"


def config_of(repo: Path) -> Config:
    return parse_config((repo / ".wave-bot.yaml").read_bytes(), ".wave-bot.yaml")


def commit(repo: Path, message: str = "change") -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)


def regenerate(repo: Path) -> None:
    """What `wave-bot apply` does, every move made as it is (none held): move the files into their
    waves, rewrite the wave files."""
    plan = make_plan(FsTree(str(repo)), config_of(repo), hold=False)
    apply_changes(str(repo), plan.changes, mover(str(repo)))


def hazards(repo: Path, config: Config | None = None, base: str = "HEAD~1") -> list[Finding]:
    """The findings for the last commit: its parent is the base, the work tree is now."""
    config = config or config_of(repo)
    cache = ParseCache()
    return hazard_findings(
        read_inventory(GitTree(str(repo), base), config, cache),
        read_inventory(FsTree(str(repo)), config, cache),
        config,
    )


def codes(findings: list[Finding]) -> set[str]:
    return {f.code for f in findings}


def of(findings: list[Finding], resource: str) -> Finding:
    [found] = [f for f in findings if f.resource == resource]
    return found


def edit(repo: Path, path: str, old: str, new: str) -> None:
    file = repo / path
    text = file.read_text()
    assert old in text, f"{old!r} not in {path}"
    file.write_text(text.replace(old, new, 1))


def add_dependency(repo: Path, service: str, target: str) -> None:
    with open(repo / f"catalog/{service}.yaml", "a") as handle:
        handle.write(f"  dependencies:\n    - to: {target}\n")


def drop_dependencies(repo: Path, service: str) -> None:
    file = repo / f"catalog/{service}.yaml"
    file.write_text(file.read_text().split("  dependencies:")[0])


def annotate(repo: Path, path: str, name: str) -> None:
    """Add the prune opt-out to the object named `name` in `path`."""
    edit(repo, path, f"  name: {name}\n", f"  name: {name}\n{ANNOTATION}")


# ---- nothing changes -------------------------------------------------------------------------------


def test_an_unchanged_layout_has_no_hazards(example_repo: Path) -> None:
    edit(example_repo, "apps/wave-0/gitea.yaml", "storage: 20Gi", "storage: 30Gi")  # a content change only
    commit(example_repo)
    assert hazards(example_repo) == []


# ---- later-wave-move: the seed's scenario -----------------------------------------------------------


@pytest.fixture
def gitea_needs_a_db(example_repo: Path) -> Path:
    """The seed's scenario: gitea gains a dependency on gitea-db, so gitea moves 0 -> 1, gitea-actions 1 -> 2."""
    add_dependency(example_repo, "gitea", "gitea-db")
    regenerate(example_repo)
    commit(example_repo, "gitea: use a CNPG database")
    assert (example_repo / "apps/wave-1/gitea.yaml").is_file()
    return example_repo


def test_moving_a_pvc_to_a_later_wave_is_an_error(gitea_needs_a_db: Path) -> None:
    findings = hazards(gitea_needs_a_db)
    assert codes(findings) == {"later-wave-move"}
    pvc = of(findings, PVC)
    # Where the fix goes: the file as deployed, where the annotation must be merged first.
    assert (pvc.severity, pvc.wave, pvc.path, pvc.line) == ("error", 1, "apps/wave-0/gitea.yaml", 9)
    assert pvc.message == (
        "PersistentVolumeClaim gitea/gitea-data moves from wave 0 (apps/wave-0/gitea.yaml) to the later wave 1 "
        "(apps/wave-1/gitea.yaml): apps-wave-0 deletes it as soon as it reconciles this change, and apps-wave-1 "
        "recreates it only after wave 0 is ready, so the claim is deleted and its volume's data with it. "
        "Safe procedure: first merge a change that only adds the annotation `kustomize.toolkit.fluxcd.io/prune: "
        "disabled` to PersistentVolumeClaim gitea/gitea-data in apps/wave-0/gitea.yaml, wait until apps-wave-0 has "
        "reconciled it (`flux get kustomization apps-wave-0`), then make this move"
    )
    assert pvc.fix == "metadata:\n  annotations:\n    kustomize.toolkit.fluxcd.io/prune: disabled\n"


def test_without_a_base_the_work_tree_is_taken_as_deployed(example_repo: Path) -> None:
    # A local `wave-bot plan` before `apply`: the catalog changed, the files have not moved yet.
    add_dependency(example_repo, "gitea", "gitea-db")
    findings = make_plan(FsTree(str(example_repo)), config_of(example_repo), hold=False).findings
    pvc = of([f for f in findings if f.code == "later-wave-move"], PVC)
    assert (pvc.severity, pvc.path, pvc.wave) == ("error", "apps/wave-0/gitea.yaml", 1)
    [assumed] = [f for f in findings if f.code == "base-is-work-tree"]
    assert assumed.severity == "info"
    assert assumed.message.startswith("no deployed revision was given, so the work tree as it is now is taken as "
                                      "what Flux has deployed")
    assert ("and removals are not checked. Pass the deployed branch as --base (for example `--base origin/main`) "
            "to check against what the cluster really runs") in assumed.message
    # Once applied, nothing moves any more, so nothing is judged or assumed.
    regenerate(example_repo)
    after = make_plan(FsTree(str(example_repo)), config_of(example_repo)).findings
    assert not [f for f in after if f.code in ("later-wave-move", "base-is-work-tree")]


def test_every_moved_object_is_reported_by_kind(gitea_needs_a_db: Path) -> None:
    findings = hazards(gitea_needs_a_db)
    assert sorted((f.severity, f.resource, f.wave) for f in findings) == [
        ("error", "Namespace gitea", 1),
        ("error", "Namespace gitea-actions", 2),
        ("error", PVC, 1),
        ("warning", "Secret gitea-actions/gitea-actions-runner", 2),
        ("warning", "Secret gitea/gitea-bootstrap", 1),
        ("warning", "Service gitea/gitea", 1),
        ("warning", "apps/Deployment gitea/gitea", 1),
        ("warning", "apps/StatefulSet gitea-actions/act-runner", 2),
    ]
    assert "so the namespace is deleted and everything in it with it." in of(findings, "Namespace gitea").message
    deployment = of(findings, "apps/Deployment gitea/gitea")
    assert "so it is missing in between (a restart, and an outage of what needs it). Safe procedure" in (
        deployment.message
    )
    assert deployment.fix == PRUNE_SNIPPET
    assert findings == sorted(findings, key=lambda f: (f.sort_key(), f.line or 0))  # errors first, stable


def test_a_cnpg_cluster_moving_later_is_an_error(example_repo: Path) -> None:
    git(example_repo, "mv", "apps/wave-0/nextcloud-db.yaml", "apps/wave-1/nextcloud-db.yaml")
    edit(example_repo, "apps/wave-0/kustomization.yaml", "  - nextcloud-db.yaml\n", "")
    edit(example_repo, "apps/wave-1/kustomization.yaml", "  - nextcloud.yaml\n",
         "  - nextcloud.yaml\n  - nextcloud-db.yaml\n")
    commit(example_repo)
    finding = of(hazards(example_repo), "postgresql.cnpg.io/Cluster nextcloud-db/nextcloud-db")
    assert (finding.code, finding.severity, finding.line) == ("later-wave-move", "error", 10)
    assert "so the CNPG database cluster is deleted and its PVCs with it: the data is lost." in finding.message


@pytest.mark.parametrize(
    ("entry", "severity"),
    [("StatefulSet", "error"), ("apps/StatefulSet", "error"), ("example.com/StatefulSet", "warning"),
     ("apps/v1/StatefulSet", "warning"), ("statefulset", "warning"), ("/StatefulSet", "warning")],
)
def test_stateful_kinds_from_the_config(gitea_needs_a_db: Path, entry: str, severity: str) -> None:
    config = dataclasses.replace(config_of(gitea_needs_a_db), stateful_kinds=(entry,))
    finding = of(hazards(gitea_needs_a_db, config), "apps/StatefulSet gitea-actions/act-runner")
    assert finding.severity == severity
    if severity == "error":
        assert f"so it is deleted and its state is lost ({entry} is listed in stateful_kinds)." in finding.message


@pytest.mark.parametrize(
    ("api_version", "kind", "stateful"),
    [("v1", "PersistentVolumeClaim", True), ("v1", "PersistentVolume", True), ("v1", "Namespace", True),
     ("postgresql.cnpg.io/v1", "Cluster", True), ("v1", "Secret", False), ("example.com/v1", "Cluster", False),
     ("example.com/v1", "PersistentVolumeClaim", False)],
)
def test_built_in_stateful_kinds_are_matched_by_group_and_kind(api_version: str, kind: str, stateful: bool) -> None:
    assert is_stateful(ResourceId.of(api_version, kind, "a", "x"), Config()) is stateful


def test_prune_disabled_at_base_downgrades_the_move_to_info(example_repo: Path) -> None:
    annotate(example_repo, "apps/wave-0/gitea.yaml", "gitea-data")
    annotate(example_repo, "apps/wave-0/gitea.yaml", "gitea")  # its Namespace: deleting it would take the PVC
    commit(example_repo, "protect gitea-data")
    assert hazards(example_repo) == []  # adding the annotation alone is harmless
    add_dependency(example_repo, "gitea", "gitea-db")
    regenerate(example_repo)
    commit(example_repo, "gitea: use a CNPG database")
    findings = hazards(example_repo)
    pvc = of(findings, PVC)
    assert (pvc.code, pvc.severity, pvc.fix, pvc.line) == ("later-wave-move", "info", None, 11)
    assert pvc.message == (
        "PersistentVolumeClaim gitea/gitea-data moves from wave 0 (apps/wave-0/gitea.yaml) to the later wave 1 "
        "(apps/wave-1/gitea.yaml); it carried `kustomize.toolkit.fluxcd.io/prune: disabled` at base, so apps-wave-0 "
        "leaves it in place and apps-wave-1 adopts it. Once apps-wave-1 owns it, remove the annotation in a later "
        "change if Flux should garbage-collect it again"
    )
    assert of(findings, "Namespace gitea").severity == "info"
    assert of(findings, "apps/Deployment gitea/gitea").severity == "warning"  # only annotated objects are protected


def test_a_protected_object_goes_with_its_namespace(example_repo: Path) -> None:
    annotate(example_repo, "apps/wave-0/gitea.yaml", "gitea-data")
    commit(example_repo, "protect gitea-data only")
    add_dependency(example_repo, "gitea", "gitea-db")
    regenerate(example_repo)
    commit(example_repo, "gitea: use a CNPG database")
    findings = hazards(example_repo)
    assert (of(findings, "Namespace gitea").code, of(findings, "Namespace gitea").severity) == (
        "later-wave-move", "error")
    pvc = [f for f in findings if f.resource == PVC]
    assert sorted((f.code, f.severity) for f in pvc) == [("later-wave-move", "info"), ("namespace-deleted", "error")]
    (gone,) = [f for f in pvc if f.code == "namespace-deleted"]
    assert "is in Namespace gitea, which this change deletes (later-wave-move" in gone.message
    deployed = git(example_repo, "show", "HEAD~1:apps/wave-0/gitea.yaml").splitlines()
    start = deployed.index("kind: PersistentVolumeClaim")  # its document's first line is the one above
    assert (gone.path, gone.line, gone.wave) == ("apps/wave-0/gitea.yaml", start, 0)


def test_an_annotation_added_in_the_same_change_does_not_protect(example_repo: Path) -> None:
    annotate(example_repo, "apps/wave-0/gitea.yaml", "gitea-data")
    add_dependency(example_repo, "gitea", "gitea-db")
    regenerate(example_repo)
    commit(example_repo, "protect and move at once")
    pvc = of(hazards(example_repo), PVC)
    assert (pvc.code, pvc.severity) == ("later-wave-move", "error")
    assert ("so the claim is deleted and its volume's data with it. The annotation this change adds comes too "
            "late: the live object does not carry it when apps-wave-0 prunes. Safe procedure:") in pvc.message


# ---- earlier-wave-move ------------------------------------------------------------------------------


def test_moving_to_an_earlier_wave_is_info(example_repo: Path) -> None:
    drop_dependencies(example_repo, "nextcloud")
    regenerate(example_repo)
    commit(example_repo, "nextcloud: no database")
    findings = hazards(example_repo)
    assert codes(findings) == {"earlier-wave-move"}
    assert {f.severity for f in findings} == {"info"}
    pvc = of(findings, "PersistentVolumeClaim nextcloud/nextcloud-data")
    assert (pvc.wave, pvc.path, pvc.line, pvc.fix) == (0, "apps/wave-0/nextcloud.yaml", 9, None)
    assert pvc.message == (
        "PersistentVolumeClaim nextcloud/nextcloud-data moves from wave 1 (apps/wave-1/nextcloud.yaml) to the "
        "earlier wave 0 (apps/wave-0/nextcloud.yaml): apps-wave-0 adopts it before apps-wave-1 reconciles, so "
        "nothing is deleted"
    )


# ---- duplicate-resource -----------------------------------------------------------------------------


def test_one_object_in_two_waves_is_an_error_without_any_base(example_repo: Path) -> None:
    gitea = (example_repo / "apps/wave-0/gitea.yaml").read_text()
    pvc_doc = "---\n" + gitea.split("---\n")[2]
    with open(example_repo / "apps/wave-1/sonarr.yaml", "a") as handle:
        handle.write(pvc_doc)
    commit(example_repo, "copy gitea-data into sonarr.yaml")
    now = read_inventory(FsTree(str(example_repo)), config_of(example_repo))
    [finding] = duplicate_findings(now)
    assert (finding.code, finding.severity, finding.resource, finding.wave, finding.path) == (
        "duplicate-resource", "error", PVC, 1, "apps/wave-1/sonarr.yaml")
    assert finding.line == (example_repo / "apps/wave-1/sonarr.yaml").read_text().count("\n") - 11
    assert finding.message == (
        f"{PVC} is defined 2 times: wave 0 (apps/wave-0/gitea.yaml:9), wave 1 (apps/wave-1/sonarr.yaml:"
        f"{finding.line}); several Flux Kustomizations apply it and fight over it, and each one that later stops "
        "applying it deletes it. Keep exactly one definition"
    )
    assert [f.code for f in hazards(example_repo)] == ["duplicate-resource"]


def test_one_object_twice_in_one_wave_breaks_its_build(example_repo: Path) -> None:
    with open(example_repo / "apps/wave-0/jackett.yaml", "a") as handle:
        handle.write("---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: gitea\n")
    commit(example_repo)
    [finding] = hazards(example_repo)
    assert (finding.code, finding.severity, finding.wave, finding.resource) == (
        "duplicate-resource", "error", 0, "Namespace gitea")
    assert finding.message.endswith(
        "kustomize refuses to build wave 0 with the same object twice. Keep exactly one definition"
    )


def test_the_example_has_no_duplicates(example_repo: Path) -> None:
    assert duplicate_findings(read_inventory(FsTree(str(example_repo)), config_of(example_repo))) == []


# ---- resource-dropped ---------------------------------------------------------------------------------


def test_an_object_removed_from_a_kept_file_is_dropped(example_repo: Path) -> None:
    pihole = (example_repo / "apps/wave-0/pihole.yaml").read_text()
    docs = pihole.split("---\n")
    (example_repo / "apps/wave-0/pihole.yaml").write_text("---\n".join(docs[:2] + docs[3:]))  # drop the PVC
    commit(example_repo, "drop pihole-data")
    [finding] = hazards(example_repo)
    assert (finding.code, finding.severity, finding.wave, finding.path, finding.line, finding.resource) == (
        "resource-dropped", "error", 0, "apps/wave-0/pihole.yaml", None, "PersistentVolumeClaim pihole/pihole-data")
    assert finding.message == (
        "PersistentVolumeClaim pihole/pihole-data (wave 0, apps/wave-0/pihole.yaml:9) is in no wave any more "
        "although its file is kept: apps/wave-0/pihole.yaml (wave 0) no longer defines it. apps-wave-0 deletes it "
        "when it reconciles: the claim is deleted and its volume's data with it. Put it back; if Flux should "
        "delete it, delete it in a change of its own"
    )


def test_a_file_no_wave_lists_any_more_drops_its_objects(example_repo: Path) -> None:
    edit(example_repo, "apps/wave-0/kustomization.yaml", "  - pihole.yaml\n", "")
    commit(example_repo, "unlist pihole")
    findings = hazards(example_repo)
    assert codes(findings) == {"resource-dropped"} and {f.severity for f in findings} == {"error"}
    assert sorted(f.resource or "" for f in findings) == [
        "Namespace pihole", "PersistentVolumeClaim pihole/pihole-data", "Service pihole/pihole",
        "apps/Deployment pihole/pihole",
    ]
    deployment = of(findings, "apps/Deployment pihole/pihole")
    assert deployment.message == (
        "apps/Deployment pihole/pihole (wave 0, apps/wave-0/pihole.yaml:22) is in no wave any more although its "
        "file is kept: apps/wave-0/pihole.yaml is no longer listed in apps/wave-0/kustomization.yaml, so no wave "
        "applies it. apps-wave-0 deletes it when it reconciles: it is deleted. Put it back; if Flux should delete "
        "it, delete it in a change of its own"
    )


def test_a_file_moved_out_of_the_waves_drops_its_objects(example_repo: Path) -> None:
    git(example_repo, "mv", "apps/wave-2/seerr.yaml", "apps/seerr.yaml")
    edit(example_repo, "apps/wave-2/kustomization.yaml", "resources:\n  - seerr.yaml\n", "resources: []\n")
    commit(example_repo)
    findings = hazards(example_repo)
    assert codes(findings) == {"resource-dropped", "wave-emptied"}
    assert "apps/seerr.yaml is outside the wave directories, so no wave applies it. apps-wave-2 deletes it" in (
        of(findings, "apps/Deployment seerr/seerr").message
    )


def test_a_protected_object_that_is_dropped_is_a_warning(example_repo: Path) -> None:
    annotate(example_repo, "apps/wave-0/pihole.yaml", "pihole-data")
    annotate(example_repo, "apps/wave-0/pihole.yaml", "pihole")
    commit(example_repo, "protect")
    edit(example_repo, "apps/wave-0/kustomization.yaml", "  - pihole.yaml\n", "")
    commit(example_repo, "unlist pihole")
    finding = of(hazards(example_repo), "PersistentVolumeClaim pihole/pihole-data")
    assert (finding.code, finding.severity) == ("resource-dropped", "warning")
    assert (finding.path, finding.wave) == ("apps/wave-0/pihole.yaml", 0)
    assert finding.message.endswith(
        "It carries kustomize.toolkit.fluxcd.io/prune: disabled, so Flux leaves it in the cluster, unmanaged. "
        "Put it back in a wave, or delete it by hand"
    )


def test_a_file_moved_between_waves_drops_nothing(example_repo: Path) -> None:
    drop_dependencies(example_repo, "seerr")
    regenerate(example_repo)
    commit(example_repo)
    assert "resource-dropped" not in codes(hazards(example_repo))


# ---- resource-removed ---------------------------------------------------------------------------------


def test_deleting_a_file_removes_its_objects(example_repo: Path) -> None:
    git(example_repo, "rm", "-q", "apps/wave-0/pihole.yaml")
    regenerate(example_repo)
    commit(example_repo, "retire pihole")
    findings = hazards(example_repo)
    assert codes(findings) == {"resource-removed"}
    assert sorted((f.severity, f.resource or "") for f in findings) == [
        ("error", "Namespace pihole"), ("error", "PersistentVolumeClaim pihole/pihole-data"),
        ("info", "Service pihole/pihole"), ("info", "apps/Deployment pihole/pihole"),
    ]
    pvc = of(findings, "PersistentVolumeClaim pihole/pihole-data")
    assert (pvc.wave, pvc.path, pvc.line, pvc.fix) == (0, "apps/wave-0/pihole.yaml", 9, PRUNE_SNIPPET)
    assert pvc.message == (
        "apps/wave-0/pihole.yaml is deleted in this change, so apps-wave-0 deletes PersistentVolumeClaim "
        "pihole/pihole-data when it reconciles: the claim is deleted and its volume's data with it. If the data "
        "must survive, first merge a change that only adds the annotation kustomize.toolkit.fluxcd.io/prune: "
        "disabled to it, wait until apps-wave-0 has reconciled it, then delete the file"
    )
    service = of(findings, "Service pihole/pihole")
    assert service.message == (
        "apps/wave-0/pihole.yaml is deleted in this change, so apps-wave-0 deletes Service pihole/pihole when it "
        "reconciles"
    )
    assert service.fix is None
    assert (service.path, service.line, service.wave) == ("apps/wave-0/pihole.yaml", 62, 0)  # its apiVersion: line


def test_deleting_a_protected_object_leaves_it_in_the_cluster(example_repo: Path) -> None:
    annotate(example_repo, "apps/wave-0/pihole.yaml", "pihole-data")
    annotate(example_repo, "apps/wave-0/pihole.yaml", "pihole")
    commit(example_repo, "protect")
    git(example_repo, "rm", "-q", "apps/wave-0/pihole.yaml")
    regenerate(example_repo)
    commit(example_repo, "retire pihole")
    pvc = of(hazards(example_repo), "PersistentVolumeClaim pihole/pihole-data")
    assert (pvc.code, pvc.severity) == ("resource-removed", "info")
    assert (pvc.path, pvc.line, pvc.wave) == ("apps/wave-0/pihole.yaml", 11, 0)  # below the annotated Namespace
    assert pvc.message == (
        "apps/wave-0/pihole.yaml is deleted in this change; PersistentVolumeClaim pihole/pihole-data carries "
        "kustomize.toolkit.fluxcd.io/prune: disabled, so Flux leaves it in the cluster, unmanaged. Delete it by "
        "hand if it is no longer needed"
    )


# ---- kustomization-removed: the monolithic `apps` cutover ----------------------------------------

LEGACY_APPS = """apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: apps
  namespace: flux-system
spec:
  path: ./apps
  interval: 10m
  sourceRef:
    kind: GitRepository
    name: flux-system
"""


def retire_legacy_apps(example_repo: Path, spec: str) -> Path:
    """Commit the seed's monolithic `apps` Kustomization with `spec`, then a commit removing it."""
    write_files(example_repo, {"clusters/base/apps.yaml": LEGACY_APPS + spec})
    commit(example_repo, "the monolithic apps Kustomization, as before the cutover")
    git(example_repo, "rm", "-q", "clusters/base/apps.yaml")
    commit(example_repo, "cutover: remove apps")
    return example_repo


def test_removing_a_pruning_kustomization_is_an_error_with_the_runbook(example_repo: Path) -> None:
    repo = retire_legacy_apps(example_repo, "  prune: true\n  wait: true\n")
    [finding] = hazards(repo)
    assert (finding.code, finding.severity, finding.path, finding.line, finding.wave) == (
        "kustomization-removed", "error", "clusters/base/apps.yaml", 1, None)
    assert finding.resource == "kustomize.toolkit.fluxcd.io/Kustomization flux-system/apps"
    assert finding.message == (
        "the Flux Kustomization flux-system/apps (clusters/base/apps.yaml:1) has prune: true and this change "
        "removes it: the Kustomization that applies clusters/base deletes it, and its finalizer then deletes "
        "everything it still owns (everything it applies from ./apps), PVCs and CNPG databases included, even "
        "those another Kustomization is about to adopt. Safe procedure: 1. merge a change that only sets "
        "spec.prune: false (or spec.deletionPolicy: Orphan) on apps; 2. wait until it has reconciled "
        "(`kubectl -n flux-system get kustomization apps -o jsonpath='{.spec.prune}'` prints false); 3. then merge "
        "its removal: its objects stay alive and the Kustomizations that now apply them adopt them without a delete"
    )
    assert finding.fix == PRUNE_FALSE_SNIPPET


@pytest.mark.parametrize("spec", ["  prune: false\n", "  prune: true\n  deletionPolicy: Orphan\n"])
def test_removing_a_kustomization_that_orphans_is_safe(example_repo: Path, spec: str) -> None:
    repo = retire_legacy_apps(example_repo, spec)
    assert hazards(repo) == []


def test_removing_a_kustomization_an_overlay_patches_inline_to_prune_is_an_error(example_repo: Path) -> None:
    # apps.yaml says prune: false, but dev's own inline patch turns pruning on: removing apps deletes
    # everything it owns in dev.
    edit(example_repo, "clusters/dev/kustomization.yaml", "patches:\n", "patches:\n  - patch: |\n"
         "      apiVersion: kustomize.toolkit.fluxcd.io/v1\n      kind: Kustomization\n      metadata:\n"
         "        name: apps\n        namespace: flux-system\n      spec:\n        prune: true\n")
    repo = retire_legacy_apps(example_repo, "  prune: false\n")
    [finding] = hazards(repo)
    assert (finding.code, finding.severity, finding.path) == (
        "kustomization-removed", "error", "clusters/base/apps.yaml")


@pytest.mark.parametrize("spec", ["  prune: [false]\n", "  prune:\n    value: false\n"])
def test_removing_a_kustomization_whose_prune_is_a_collection_counts_as_pruning(example_repo: Path, spec: str) -> None:
    # kustomize builds it (the CRD then rejects it): nothing says the live object does not prune
    repo = retire_legacy_apps(example_repo, spec)
    assert [f.code for f in hazards(repo)] == ["kustomization-removed"]


@pytest.mark.parametrize("policy", ["Delete", "WaitForTermination"])
def test_deletion_policy_delete_deletes_even_without_prune(example_repo: Path, policy: str) -> None:
    repo = retire_legacy_apps(example_repo, f"  prune: false\n  deletionPolicy: {policy}\n")
    [finding] = hazards(repo)
    assert finding.code == "kustomization-removed" and finding.fix == ORPHAN_SNIPPET
    assert f"has spec.deletionPolicy: {policy} and this change removes it" in finding.message
    assert ("1. merge a change that only sets spec.deletionPolicy: Orphan on apps; 2. wait until it has reconciled "
            "(`kubectl -n flux-system get kustomization apps -o jsonpath='{.spec.deletionPolicy}'` prints Orphan)"
            ) in finding.message


def test_removing_a_wave_kustomization_counts_what_it_owns(example_repo: Path) -> None:
    # clusters/prod/patches/apps-wave-2-sops.yaml still names it: a patch does not keep it alive.
    git(example_repo, "rm", "-q", "clusters/base/apps-wave-2.yaml")
    commit(example_repo)
    [finding] = hazards(example_repo)
    assert (finding.code, finding.wave, finding.line) == ("kustomization-removed", 2, 3)
    assert "its finalizer then deletes everything it still owns (the 4 object(s) of wave 2 at base)" in (
        finding.message
    )


# ---- wave-emptied, removable waves, wave-removed ----------------------------------------------------


def test_a_wave_emptied_by_the_change_is_kept_with_a_warning(example_repo: Path) -> None:
    drop_dependencies(example_repo, "seerr")
    regenerate(example_repo)
    commit(example_repo, "seerr: no dependencies")
    assert "resources: []" in (example_repo / "apps/wave-2/kustomization.yaml").read_text()
    findings = hazards(example_repo)
    assert codes(findings) == {"earlier-wave-move", "wave-emptied"}
    [emptied] = [f for f in findings if f.code == "wave-emptied"]
    assert (emptied.severity, emptied.wave, emptied.path, emptied.resource) == (
        "warning", 2, "apps/wave-2/kustomization.yaml",
        "kustomize.toolkit.fluxcd.io/Kustomization flux-system/apps-wave-2")
    assert emptied.message == (
        "wave 2 applied 4 object(s) at base and applies none now. wave-bot keeps apps/wave-2/kustomization.yaml "
        "(with resources: []) and apps-wave-2, because deleting a Flux Kustomization with prune: true deletes "
        "everything it still owns. Once apps-wave-2 has reconciled the empty wave it owns nothing, and wave-bot "
        "removes it when it is beyond the deepest wave"
    )


def test_a_wave_that_keeps_objects_is_not_emptied(gitea_needs_a_db: Path) -> None:
    assert "wave-emptied" not in codes(hazards(gitea_needs_a_db))


EMPTY_WAVE = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: []\n"


def add_wave(repo: Path, n: int, files: dict[str, str] | None = None) -> None:
    """Wave `n` with its directory, Flux Kustomization, base entry and overlay patches (dev inline, prod file)."""
    cr = (repo / "clusters/base/apps-wave-2.yaml").read_text()
    cr = cr.replace("name: apps-wave-1", f"name: apps-wave-{n - 1}")
    cr = cr.replace("name: apps-wave-2", f"name: apps-wave-{n}")
    listing = EMPTY_WAVE if not files else EMPTY_WAVE.replace(" []\n", "\n" + "".join(f"  - {f}\n" for f in files))
    write_files(repo, {
        f"apps/wave-{n}/kustomization.yaml": listing,
        f"clusters/base/apps-wave-{n}.yaml": cr.replace("./apps/wave-2", f"./apps/wave-{n}"),
        f"clusters/prod/patches/apps-wave-{n}-sops.yaml": (
            repo / "clusters/prod/patches/apps-wave-2-sops.yaml").read_text().replace("apps-wave-2", f"apps-wave-{n}"),
        **{f"apps/wave-{n}/{name}": content for name, content in (files or {}).items()},
    })
    edit(repo, "clusters/base/kustomization.yaml", "  - cluster-vars.yaml",
         f"  - apps-wave-{n}.yaml\n  - cluster-vars.yaml")
    dev = (repo / "clusters/dev/kustomization.yaml").read_text()
    inline = dev[dev.index("  - patch: |\n      apiVersion: kustomize.toolkit.fluxcd.io/v1\n      kind: Kustomization"
                           "\n      metadata:\n        name: apps-wave-2"):]
    (repo / "clusters/dev/kustomization.yaml").write_text(dev + inline.replace("apps-wave-2", f"apps-wave-{n}"))
    with open(repo / "clusters/prod/kustomization.yaml", "a") as handle:
        handle.write(f"  - path: patches/apps-wave-{n}-sops.yaml\n")


def inventories(repo: Path) -> tuple[Inventory, Inventory]:
    """(base, now) for the last commit."""
    config, cache = config_of(repo), ParseCache()
    return (read_inventory(GitTree(str(repo), "HEAD~1"), config, cache),
            read_inventory(FsTree(str(repo)), config, cache))


def test_waves_already_empty_at_base_beyond_the_deepest_are_removable(example_repo: Path) -> None:
    add_wave(example_repo, 3)
    add_wave(example_repo, 4)
    commit(example_repo, "two empty waves")
    (example_repo / "apps/wave-0/README.md").write_text("a change that moves nothing\n")
    commit(example_repo)
    base, now = inventories(example_repo)
    assert removable_waves(base, now, 2) == (3, 4)
    assert removable_waves(base, now, 3) == (4,)
    assert removable_waves(base, now, 4) == ()


def test_a_wave_that_owned_objects_at_base_is_not_removable(example_repo: Path) -> None:
    add_wave(example_repo, 3, {"extra.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  namespace: a\n"})
    add_wave(example_repo, 4)
    commit(example_repo, "wave 3 holds a ConfigMap")
    git(example_repo, "rm", "-q", "apps/wave-3/extra.yaml")
    (example_repo / "apps/wave-3/kustomization.yaml").write_text(EMPTY_WAVE)
    commit(example_repo, "drop it")
    base, now = inventories(example_repo)
    assert removable_waves(base, now, 2) == (4,)  # wave 3 still owns the ConfigMap until it reconciles
    assert removable_waves(base, now, None) == (4,)  # and a wave below one that stays never goes


def test_a_wave_below_a_wave_that_stays_is_not_removable(example_repo: Path) -> None:
    add_wave(example_repo, 3)
    add_wave(example_repo, 4, {"extra.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  namespace: a\n"})
    commit(example_repo, "wave 4 holds a ConfigMap")
    (example_repo / "apps/wave-0/README.md").write_text("a change that moves nothing\n")
    commit(example_repo)
    base, now = inventories(example_repo)
    assert removable_waves(base, now, 2) == ()


def line_of(repo: Path, path: str, text: str) -> int:
    """1-based number of the last line of `path` that is exactly `text`."""
    lines = (repo / path).read_text().splitlines()
    return len(lines) - lines[::-1].index(text)


def test_wave_removed_names_the_lines_to_delete(example_repo: Path) -> None:
    add_wave(example_repo, 3)
    commit(example_repo, "an empty wave 3")
    tree = FsTree(str(example_repo))
    config = config_of(example_repo)
    references = wave_references(tree, config, 3)
    base_line = line_of(example_repo, "clusters/base/kustomization.yaml", "  - apps-wave-3.yaml")
    dev_line = line_of(example_repo, "clusters/dev/kustomization.yaml", "  - patch: |")  # the last inline patch
    prod_line = line_of(example_repo, "clusters/prod/kustomization.yaml", "  - path: patches/apps-wave-3-sops.yaml")
    assert (base_line, dev_line, prod_line) == (17, 55, 15)
    assert references == (
        FluxReference("clusters/base/kustomization.yaml", 17, "resource apps-wave-3.yaml"),
        FluxReference("clusters/dev/kustomization.yaml", 55, "inline patch for apps-wave-3"),
        FluxReference("clusters/prod/kustomization.yaml", 15, "patch file patches/apps-wave-3-sops.yaml"),
    )
    base = read_inventory(tree, config)
    finding = wave_removed_finding(base, 3, config, references)
    assert (finding.code, finding.severity, finding.wave, finding.path, finding.resource) == (
        "wave-removed", "info", 3, "clusters/base/apps-wave-3.yaml",
        "kustomize.toolkit.fluxcd.io/Kustomization flux-system/apps-wave-3")
    assert finding.message == (
        "wave 3 was already empty at base and is beyond the deepest wave, so wave-bot deletes apps/wave-3/ and "
        "clusters/base/apps-wave-3.yaml: apps-wave-3 owns nothing, so deleting it deletes nothing; also delete "
        "clusters/base/kustomization.yaml:17 (resource apps-wave-3.yaml); clusters/dev/kustomization.yaml:55 "
        "(inline patch for apps-wave-3); clusters/prod/kustomization.yaml:15 (patch file "
        "patches/apps-wave-3-sops.yaml)"
    )
    assert finding.fix == (
        "clusters/base/kustomization.yaml:17\nclusters/dev/kustomization.yaml:55\nclusters/prod/kustomization.yaml:15"
    )
    assert wave_references(tree, config, 5) == ()
    assert wave_removed_finding(base, 5, config).message.endswith("deleting it deletes nothing")


def test_explicit_overlays_and_patch_targets(example_repo: Path) -> None:
    write_files(example_repo, {"clusters/staging/kustomization.yaml": (
        "resources:\n  - ../base\npatches:\n  - target:\n      kind: Kustomization\n      name: apps-wave-1\n"
        "    patch: |\n      - op: add\n        path: /spec/force\n        value: true\n"
    )})
    config = dataclasses.replace(config_of(example_repo), overlays=("clusters/staging",))
    assert wave_references(FsTree(str(example_repo)), config, 1) == (
        FluxReference("clusters/base/kustomization.yaml", 15, "resource apps-wave-1.yaml"),
        FluxReference("clusters/staging/kustomization.yaml", 4, "patch targeting apps-wave-1"),
    )


# ---- invalid manifests and determinism ---------------------------------------------------------------


def test_an_unreadable_manifest_now_is_reported_and_one_at_base_is_not(example_repo: Path) -> None:
    with open(example_repo / "apps/wave-1/sonarr.yaml", "a") as handle:
        handle.write("---\napiVersion: v1\nmetadata:\n  name: nameless-kind\n")
    commit(example_repo, "break sonarr")
    [finding] = hazards(example_repo)
    assert (finding.code, finding.severity, finding.path, finding.wave) == (
        "invalid-manifest", "error", "apps/wave-1/sonarr.yaml", 1)
    assert re.fullmatch(r"apps/wave-1/sonarr\.yaml:\d+: the document has no kind; .*", finding.message)
    edit(example_repo, "apps/wave-1/sonarr.yaml", "metadata:\n  name: nameless-kind\n",
         "kind: ConfigMap\nmetadata:\n  name: nameless-kind\n  namespace: sonarr\n")
    commit(example_repo, "fix sonarr")
    assert hazards(example_repo) == []  # the broken base does not block the fix


def test_findings_are_deterministic(gitea_needs_a_db: Path) -> None:
    assert hazards(gitea_needs_a_db) == hazards(gitea_needs_a_db)


# ---- the rules as kustomize-controller acts (issue 9's classes) ------------------------------------

SHARED = """---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: shared-data
  namespace: shared
spec:
  accessModes: [ReadWriteOnce]
  resources:
    requests:
      storage: 1Gi
"""
SHARED_NS = "---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: shared\n"
SHARED_PVC = "PersistentVolumeClaim shared/shared-data"


def append(repo: Path, path: str, text: str) -> None:
    with open(repo / path, "a") as handle:
        handle.write(text)


@pytest.fixture
def contested(example_repo: Path) -> Path:
    """Waves 0 and 1 both define shared-data at base: each interval, whichever applied last owns it."""
    append(example_repo, "apps/wave-0/pihole.yaml", SHARED)
    append(example_repo, "apps/wave-1/radarr.yaml", SHARED)
    commit(example_repo, "two waves define shared-data")
    return example_repo


def test_removing_the_earlier_copy_of_an_object_two_waves_define_is_an_error(contested: Path) -> None:
    example_repo = contested
    edit(example_repo, "apps/wave-0/pihole.yaml", SHARED, "")
    commit(example_repo, "drop the wave-0 copy")
    found = of(hazards(example_repo), SHARED_PVC)
    assert (found.code, found.severity) == ("copy-removed", "error")
    assert "the copy apps-wave-0 applied (apps/wave-0/pihole.yaml:" in found.message
    assert "whichever applied it last owns it" in found.message


def test_removing_the_later_copy_is_safe(contested: Path) -> None:
    example_repo = contested
    edit(example_repo, "apps/wave-1/radarr.yaml", SHARED, "")
    commit(example_repo, "drop the wave-1 copy: wave 0 relabels it before wave 1 prunes")
    assert [f for f in hazards(example_repo) if f.resource == SHARED_PVC] == []


TEMPLATE_NO_PRUNE = """kustomization_template:
  metadata:
    namespace: flux-system
  spec:
    interval: 10m
    prune: false
    sourceRef:
      kind: GitRepository
      name: flux-system
"""


def no_prune_waves(repo: Path) -> None:
    append(repo, ".wave-bot.yaml", TEMPLATE_NO_PRUNE)
    regenerate(repo)
    commit(repo, "the waves do not prune")


def test_waves_that_do_not_prune_delete_nothing(example_repo: Path) -> None:
    no_prune_waves(example_repo)
    add_dependency(example_repo, "gitea", "gitea-db")
    pihole = (example_repo / "apps/wave-0/pihole.yaml").read_text()
    pvc_doc = pihole[pihole.index("---\napiVersion: v1\nkind: PersistentVolumeClaim"):]
    pvc_doc = pvc_doc[:pvc_doc.index("---", 3)]
    edit(example_repo, "apps/wave-0/pihole.yaml", pvc_doc, "")
    regenerate(example_repo)
    commit(example_repo, "gitea moves later, pihole's PVC leaves its file")
    findings = hazards(example_repo)
    assert not [f for f in findings if f.code == "later-wave-move"]
    dropped = of(findings, "PersistentVolumeClaim pihole/pihole-data")
    assert (dropped.code, dropped.severity) == ("resource-dropped", "warning")
    assert not [f for f in findings if f.severity == "error"]


def test_turning_prune_on_with_a_move_is_an_error(example_repo: Path) -> None:
    no_prune_waves(example_repo)
    edit(example_repo, ".wave-bot.yaml", "    prune: false\n", "    prune: true\n")
    add_dependency(example_repo, "gitea", "gitea-db")
    regenerate(example_repo)
    commit(example_repo, "prune again, and move gitea")
    assert (of(hazards(example_repo), PVC).code, of(hazards(example_repo), PVC).severity) == (
        "later-wave-move", "error")


def test_turning_prune_off_with_a_move_is_still_an_error(example_repo: Path) -> None:
    # Flux may reconcile the wave with its old spec (prune: true) before the root applies the new one.
    append(example_repo, ".wave-bot.yaml", TEMPLATE_NO_PRUNE)
    add_dependency(example_repo, "gitea", "gitea-db")
    regenerate(example_repo)
    assert "prune: false" in (example_repo / "clusters/base/apps-wave-0.yaml").read_text()
    commit(example_repo, "stop pruning, and move gitea")
    pvc = of(hazards(example_repo), PVC)
    assert (pvc.code, pvc.severity) == ("later-wave-move", "error")


def hide_wave_kustomizations(repo: Path) -> None:
    """The waves' Flux Kustomizations defined where wave-bot does not read (another repository, say)."""
    for n in range(3):
        (repo / f"clusters/base/apps-wave-{n}.yaml").unlink()
        edit(repo, "clusters/base/kustomization.yaml", f"  - apps-wave-{n}.yaml", "  # gone")
    commit(repo, "the waves' Flux Kustomizations live elsewhere")


def regenerate_apps_only(repo: Path) -> None:
    """`regenerate`, but the waves' Flux Kustomizations stay out of the repository."""
    regenerate(repo)
    git(repo, "checkout", "-q", "HEAD", "--", "clusters")
    git(repo, "clean", "-qfd", "clusters")
    assert not (repo / "clusters/base/apps-wave-0.yaml").exists()


def test_a_wave_whose_flux_kustomization_wave_bot_cannot_see_is_taken_as_pruning(example_repo: Path) -> None:
    # Nothing says the unseen waves do not prune, so moving the PVC out of wave 0 is still an error.
    hide_wave_kustomizations(example_repo)
    add_dependency(example_repo, "gitea", "gitea-db")
    regenerate_apps_only(example_repo)
    assert (example_repo / "apps/wave-1/gitea.yaml").is_file()
    commit(example_repo, "gitea moves to wave 1")
    pvc = of(hazards(example_repo), PVC)
    assert (pvc.code, pvc.severity) == ("later-wave-move", "error")



def test_a_wave_unseen_at_base_is_taken_as_pruning_whatever_its_new_spec_says(example_repo: Path) -> None:
    # Found by fluxsim: the waves' Kustomizations come into view with prune: false in the same change
    # as the move (wave-bot writes them), but the deployed ones, unseen, may still prune.
    hide_wave_kustomizations(example_repo)
    append(example_repo, ".wave-bot.yaml", TEMPLATE_NO_PRUNE)
    add_dependency(example_repo, "gitea", "gitea-db")
    regenerate(example_repo)
    assert "prune: false" in (example_repo / "clusters/base/apps-wave-0.yaml").read_text()
    commit(example_repo, "the waves come into view, not pruning, and gitea moves")
    pvc = of(hazards(example_repo), PVC)
    assert (pvc.code, pvc.severity) == ("later-wave-move", "error")


def test_a_kustomization_that_only_bears_the_waves_name_does_not_stand_for_it(example_repo: Path) -> None:
    # apps-wave-0 in view applies another directory, without pruning; what applies apps/wave-0 is not
    # in view, and may prune: moving the PVC out of wave 0 is an error all the same.
    hide_wave_kustomizations(example_repo)
    named = LEGACY_APPS.replace("name: apps\n", "name: apps-wave-0\n").replace("path: ./apps\n", "path: ./platform\n")
    write_files(example_repo, {"clusters/base/apps-wave-0.yaml": named + "  prune: false\n"})
    edit(example_repo, "clusters/base/kustomization.yaml", "  # gone", "  - apps-wave-0.yaml")
    commit(example_repo, "a Kustomization named like wave 0, applying something else")
    add_dependency(example_repo, "gitea", "gitea-db")
    regenerate(example_repo)
    git(example_repo, "checkout", "-q", "HEAD", "--", "clusters")  # what is in view stays as it is
    git(example_repo, "clean", "-qfd", "clusters")
    assert (example_repo / "apps/wave-1/gitea.yaml").is_file()
    commit(example_repo, "gitea moves to wave 1")
    pvc = of(hazards(example_repo), PVC)
    assert (pvc.code, pvc.severity) == ("later-wave-move", "error")


@pytest.mark.parametrize("protected", [False, True])
def test_a_move_into_a_wave_wave_bot_cannot_see_races(example_repo: Path, protected: bool) -> None:
    # Nothing orders platform and the unseen apps-wave-0: platform may prune it before wave 0 adopts it.
    hide_wave_kustomizations(example_repo)
    config_map = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: moved\n  namespace: cnpg-system\n" + (
        ANNOTATION if protected else "")
    write_files(example_repo, {"platform/moved.yaml": config_map})
    edit(example_repo, "platform/kustomization.yaml", "  - cnpg-system.yaml\n",
         "  - cnpg-system.yaml\n  - moved.yaml\n")
    commit(example_repo, "a ConfigMap in platform")
    git(example_repo, "mv", "platform/moved.yaml", "apps/wave-0/moved.yaml")
    edit(example_repo, "platform/kustomization.yaml", "  - moved.yaml\n", "")
    edit(example_repo, "apps/wave-0/kustomization.yaml", "resources:\n", "resources:\n  - moved.yaml\n")
    commit(example_repo, "the ConfigMap moves to wave 0")
    moved = of(hazards(example_repo), "ConfigMap cnpg-system/moved")
    assert (moved.code, moved.severity, moved.path, moved.line, moved.wave) == (
        "cross-kustomization-move", "info" if protected else "warning",
        # an unprotected move is reported where its fix (the annotation) goes: the source file
        "apps/wave-0/moved.yaml" if protected else "platform/moved.yaml", 1, 0)
    if protected:
        assert "so platform leaves it in place and apps-wave-0 adopts it" in moved.message and moved.fix is None
    else:
        assert ("platform and apps-wave-0 are not ordered by dependsOn, so they race: if platform reconciles first, "
                "it deletes it before it is adopted") in moved.message
        assert "it is missing in between (a restart" in moved.message and moved.fix == PRUNE_SNIPPET

def test_an_object_wanted_by_wave_0_goes_with_the_namespace_wave_2_prunes(example_repo: Path) -> None:
    append(example_repo, "apps/wave-0/pihole.yaml", SHARED)
    write_files(example_repo, {"apps/wave-2/seerr-app.yaml": SHARED_NS.lstrip("-\n") + SHARED})
    regenerate(example_repo)
    commit(example_repo, "wave 2 holds the shared namespace")
    git(example_repo, "rm", "-q", "apps/wave-2/seerr-app.yaml")
    regenerate(example_repo)
    commit(example_repo, "delete the file")
    findings = hazards(example_repo)
    assert (of(findings, "Namespace shared").code, of(findings, "Namespace shared").severity) == (
        "resource-removed", "error")
    pvc = of(findings, SHARED_PVC)
    assert (pvc.code, pvc.severity, pvc.wave) == ("namespace-deleted", "error", 0)
    assert "is in Namespace shared, which this change deletes (resource-removed" in pvc.message


def test_removing_a_kustomization_that_owns_nothing_is_no_hazard(example_repo: Path) -> None:
    add_wave(example_repo, 3)
    commit(example_repo, "an empty wave 3")
    git(example_repo, "rm", "-q", "-r", "apps/wave-3", "clusters/base/apps-wave-3.yaml")
    edit(example_repo, "clusters/base/kustomization.yaml", "  - apps-wave-3.yaml\n", "")
    commit(example_repo, "drop it by hand")
    assert "kustomization-removed" not in codes(hazards(example_repo))


PLATFORM_TOOLS = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: tools\n" + SHARED.replace(
    "shared", "tools")


def test_a_move_from_platform_into_a_wave_is_a_hazard(example_repo: Path) -> None:
    write_files(example_repo, {"platform/tools.yaml": PLATFORM_TOOLS})
    edit(example_repo, "platform/kustomization.yaml", "  - cnpg-system.yaml\n",
         "  - cnpg-system.yaml\n  - tools.yaml\n")
    commit(example_repo, "platform applies the tools namespace")
    git(example_repo, "mv", "platform/tools.yaml", "apps/pihole-app.yaml")
    edit(example_repo, "platform/kustomization.yaml", "  - tools.yaml\n", "")
    regenerate(example_repo)
    commit(example_repo, "move it to the app tier")
    pvc = of(hazards(example_repo), "PersistentVolumeClaim tools/tools-data")
    assert (pvc.code, pvc.severity, pvc.wave) == ("cross-kustomization-move", "error", 0)
    assert "platform reconciles first (they dependsOn it), deletes it, and apps-wave-0 recreates it" in pvc.message
    assert "recreates it, so the claim is deleted and its volume's data with it. Safe procedure:" in pvc.message


def test_a_move_from_a_wave_into_platform_is_adopted_first(example_repo: Path) -> None:
    append(example_repo, "apps/wave-0/pihole.yaml", SHARED)
    commit(example_repo, "wave 0 applies shared-data")
    edit(example_repo, "apps/wave-0/pihole.yaml", SHARED, "")
    write_files(example_repo, {"platform/shared.yaml": SHARED})
    edit(example_repo, "platform/kustomization.yaml", "  - cnpg-system.yaml\n",
         "  - cnpg-system.yaml\n  - shared.yaml\n")
    commit(example_repo, "platform takes it over")
    assert [f for f in hazards(example_repo) if f.resource == SHARED_PVC] == []


def test_every_old_owner_of_a_moving_object_is_judged_not_only_the_first(example_repo: Path) -> None:
    # At base wave 2 and platform both apply shared-data; now only wave 1 does. Wave 2 reconciles after
    # wave 1 (it dependsOn it), so its copy is adopted first; platform's is not, and platform deletes it.
    append(example_repo, "apps/wave-2/seerr.yaml", SHARED_NS + SHARED)
    write_files(example_repo, {"platform/shared.yaml": SHARED})
    edit(example_repo, "platform/kustomization.yaml", "  - cnpg-system.yaml\n",
         "  - cnpg-system.yaml\n  - shared.yaml\n")
    commit(example_repo, "wave 2 and platform apply shared-data")
    edit(example_repo, "apps/wave-2/seerr.yaml", SHARED_NS + SHARED, "")
    append(example_repo, "apps/wave-1/sonarr.yaml", SHARED_NS + SHARED)
    edit(example_repo, "platform/kustomization.yaml", "  - shared.yaml\n", "")
    git(example_repo, "rm", "-q", "platform/shared.yaml")
    commit(example_repo, "only wave 1 applies it")
    pvc = of(hazards(example_repo), SHARED_PVC)
    assert (pvc.code, pvc.severity, pvc.path) == ("cross-kustomization-move", "error", "platform/shared.yaml")
    assert pvc.message.startswith(f"{SHARED_PVC} moves from platform (platform/shared.yaml:")


def test_an_object_a_wave_and_platform_both_apply_is_an_error(example_repo: Path) -> None:
    copy = "# platform's copy\n" + (example_repo / "apps/wave-0/pihole.yaml").read_text()
    write_files(example_repo, {"platform/pihole.yaml": copy})
    edit(example_repo, "platform/kustomization.yaml", "  - cnpg-system.yaml\n",
         "  - cnpg-system.yaml\n  - pihole.yaml\n")
    commit(example_repo, "platform applies pihole too")
    found = [f for f in hazards(example_repo) if f.resource == "PersistentVolumeClaim pihole/pihole-data"]
    assert [(f.code, f.severity) for f in found] == [("duplicate-resource", "error")]
    assert "applied by 2 Flux Kustomizations: apps-wave-0 (apps/wave-0/pihole.yaml:9), platform" in found[0].message
    assert "kustomize-controller#1724" in found[0].message
    assert found[0].message.endswith(". Keep exactly one definition")
    # The finding points at one definition, on its own line: the copy platform applies (line 10 there).
    assert (found[0].path, found[0].line, found[0].wave) == ("platform/pihole.yaml", 10, None)
    without_base = make_plan(FsTree(str(example_repo)), config_of(example_repo)).findings
    assert [f.code for f in without_base if f.resource == "PersistentVolumeClaim pihole/pihole-data"] == [
        "duplicate-resource"]  # needs no base


@pytest.mark.parametrize(("value", "boolean"), [
    ("yes", False), ("on", False), ("y", False), ('"true"', False), ("'false'", False), ("!!str true", False),
    ("True ", True), ('!!bool "true"', True), ("false", True), ("[false]", False), ("{value: false}", False),
    ("False", True), ("TRUE", True), ("FALSE", True), ("!!str false", False),
])
def test_prune_values_that_are_not_yaml_1_2_booleans_are_invalid(
        example_repo: Path, kubectl: Kubectl, value: str, boolean: bool) -> None:
    edit(example_repo, "clusters/base/platform.yaml", "  prune: true\n", f"  prune: {value}\n")
    commit(example_repo, "a prune value")
    # What kustomize hands Flux: a boolean is printed bare, anything else as a quoted string, which
    # the CRD's boolean field rejects.
    built = kubectl(example_repo / "clusters/base")
    assert built.returncode == 0, built.stderr
    (platform,) = [d for d in YAML(typ="safe").load_all(built.stdout)
                   if d["kind"] == "Kustomization" and d["metadata"]["name"] == "platform"]
    assert isinstance(platform["spec"]["prune"], bool) == boolean
    found = next((f for f in hazards(example_repo) if f.code == "invalid-prune"), None)
    if boolean:
        assert found is None
        return
    assert found is not None
    assert found.severity == "error" and found.path == "clusters/base/platform.yaml"
    assert "the Kustomization CRD rejects it" in found.message
    if value.startswith(("'", '"')):
        assert f"spec.prune: {value.replace(chr(39), chr(34))}, which is written as a string" in found.message
        assert found.fix == f"spec:\n  prune: {value.strip(chr(39) + chr(34))}\n"  # the boolean it spells


QUOTED = "which is written as a string (quoted, or tagged !!str), so a string in every YAML version"
YAML_1_2 = "which kustomize reads as YAML 1.2, where it is a string"
AS_WRITTEN = "which kustomize emits as written"


@pytest.mark.parametrize(("value", "shown", "why", "fix"), [
    # A YAML 1.1 boolean: the value its writer meant (turning `off` into `true` would start pruning).
    ("yes", "yes", YAML_1_2, "true"), ("off", "off", YAML_1_2, "false"), ("n", "n", YAML_1_2, "false"),
    ("On", "On", YAML_1_2, "true"), ("NO", "NO", YAML_1_2, "false"),
    ('"false"', '"false"', QUOTED, "false"), ("'TRUE'", '"TRUE"', QUOTED, "true"),  # the boolean it quotes
    ('"no"', '"no"', QUOTED, "true"), ('"Xfalse"', '"Xfalse"', QUOTED, "true"),  # no boolean quoted: as assumed
    ("!!str false", '"false"', QUOTED, "false"),
    ("fALSE", "fALSE", YAML_1_2, "true"),  # not quoted: no boolean in any YAML, so wave-bot does not guess one
    ("[false]", "a list or mapping", AS_WRITTEN, "true"), ("{value: false}", "a list or mapping", AS_WRITTEN, "true"),
])
def test_an_invalid_prune_says_why_it_is_no_boolean_and_which_boolean_to_write(
        example_repo: Path, value: str, shown: str, why: str, fix: str) -> None:
    edit(example_repo, "clusters/base/platform.yaml", "  prune: true\n", f"  prune: {value}\n")
    commit(example_repo, "a prune value")
    [found] = [f for f in hazards(example_repo) if f.code == "invalid-prune"]
    # the line to edit: prune's own (13), not the Kustomization's first (3)
    assert (found.severity, found.path, found.line, found.resource) == (
        "error", "clusters/base/platform.yaml", 13, "kustomize.toolkit.fluxcd.io/Kustomization flux-system/platform")
    assert found.message == (
        f"clusters/base/platform.yaml:13: the Flux Kustomization platform has spec.prune: {shown}, {why}, not a "
        "boolean: the Kustomization CRD rejects it and Flux cannot apply this revision of the cluster entrypoints. "
        "wave-bot assumes it prunes")
    assert found.fix == f"spec:\n  prune: {fix}\n"


def test_a_kustomization_without_prune_is_not_invalid(example_repo: Path) -> None:
    # Flux's default (false) is a boolean: nothing for the CRD to reject.
    edit(example_repo, "clusters/base/platform.yaml", "  prune: true\n", "")
    commit(example_repo, "platform does not prune")
    assert "invalid-prune" not in codes(hazards(example_repo))


@pytest.mark.parametrize("protected", [False, True])
def test_a_move_from_a_wave_to_an_unordered_kustomization_is_safe_only_when_protected(
    example_repo: Path, protected: bool
) -> None:
    # Nothing orders apps-wave-0 and tools: wave 0 may prune the claim before tools adopts it, unless
    # the copy wave 0 applied carries prune: disabled.
    claim = SHARED.replace("  namespace: shared\n", "  namespace: shared\n" + (ANNOTATION if protected else ""))
    append(example_repo, "apps/wave-0/pihole.yaml", claim)
    write_files(example_repo, {"clusters/base/tools.yaml": TOOLS_KUSTOMIZATION,
                               "tools/kustomization.yaml": "resources: [shared.yaml]\n",
                               "tools/shared.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: tools\n"})
    edit(example_repo, "clusters/base/kustomization.yaml", "  - cluster-vars.yaml",
         "  - tools.yaml\n  - cluster-vars.yaml")
    commit(example_repo, "wave 0 applies shared-data; tools exists")
    edit(example_repo, "apps/wave-0/pihole.yaml", claim, "")
    write_files(example_repo, {"tools/shared.yaml": claim.lstrip("-\n")})
    commit(example_repo, "tools applies shared-data")
    moved = of(hazards(example_repo), SHARED_PVC)
    assert moved.code == "cross-kustomization-move"
    if protected:
        assert moved.severity == "info"
        assert "so apps-wave-0 leaves it in place and tools adopts it" in moved.message
    else:
        assert moved.severity == "error" and "they race" in moved.message
