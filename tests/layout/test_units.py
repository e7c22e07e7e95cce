"""A unit may be a directory: placed as a whole, listed by its wave, judged on its build.

Real git repositories in tmp_path; each directory unit's build is compared with real `kubectl
kustomize` (a directory without a kustomization built as kustomize-controller generates one).
"""
from __future__ import annotations

import json
import posixpath
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.cli import main
from bot.config import Config
from bot.flux.inventory import read_inventory
from bot.repo.worktree import FsTree

from conftest import EXAMPLE, Kubectl, deployment, git, pvc, service, snapshot, write_files

KUSTOMIZE = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
DIR_EXAMPLE = EXAMPLE.parent / "dir-per-app"


def base_without_waves() -> dict[str, str | bytes]:
    """The dir-per-app example's clusters and infrastructure before wave-bot added the waves to them."""
    files: dict[str, str | bytes] = {
        str(p.relative_to(DIR_EXAMPLE)): p.read_bytes() for p in DIR_EXAMPLE.rglob("*")
        if p.is_file() and p.relative_to(DIR_EXAMPLE).parts[0] in ("clusters", "infrastructure")
        and "apps-wave" not in p.name}
    base = (DIR_EXAMPLE / "clusters/base/kustomization.yaml").read_text()
    files["clusters/base/kustomization.yaml"] = "".join(
        line + "\n" for line in base.splitlines() if "apps-wave-" not in line)
    dev = (DIR_EXAMPLE / "clusters/dev/kustomization.yaml").read_text()
    files["clusters/dev/kustomization.yaml"] = dev[:dev.index("patches:")] + "patches: []\n"
    files[".wave-bot.yaml"] = "root_depends_on: [infrastructure]\n"
    return files


def dir_repo(make_repo: Callable[..., Path], extra: dict[str, str] | None = None) -> Path:
    """A directory-per-app repository: a unit with a kustomization (namespace from it), one without,
    one in a grouping folder, and a flat file beside them."""
    return make_repo({
        **base_without_waves(),
        "catalog/postgres.yaml": service("postgres"),
        "catalog/sonarr.yaml": service("sonarr", "postgres"),
        "catalog/radarr.yaml": service("radarr", "sonarr"),
        "catalog/web.yaml": service("web"),
        "apps/postgres/kustomization.yaml": KUSTOMIZE + "namespace: db\nresources:\n  - pvc.yaml\n",
        "apps/postgres/pvc.yaml": pvc("data", "elsewhere"),
        "apps/media/sonarr/app.yaml": deployment("sonarr", "media"),
        "apps/media/sonarr/config/settings.yaml": deployment("sonarr-settings", "media"),
        "apps/media/radarr/kustomization.yaml": KUSTOMIZE + "namespace: media\ncommonLabels:\n  tier: media\n"
                                                "resources:\n  - app.yaml\n",
        "apps/media/radarr/app.yaml": deployment("radarr"),
        "apps/web.yaml": deployment("web"),
        **(extra or {}),
    })


def run(repo: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    capsys.readouterr()
    code = main([args[0], str(repo), *args[1:], "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


def codes(out: dict[str, Any]) -> list[tuple[str, str]]:
    return sorted((f["code"], f["severity"]) for f in out["findings"])


def ids(built: str) -> set[tuple[str, str, str]]:
    return {(d["kind"], (d["metadata"].get("namespace") or ""), d["metadata"]["name"])
            for d in yaml.safe_load_all(built) if d}


def test_apply_moves_each_unit_directory_whole_and_lists_it(
        make_repo: Callable[..., Path], capsys: pytest.CaptureFixture[str], kubectl: Kubectl) -> None:
    repo = dir_repo(make_repo)
    before = snapshot(repo / "apps")
    code, out = run(repo, capsys, "apply", "--fix-overlays")
    assert code == 0, out["findings"]
    moves = [(c["from"], c["path"]) for c in out["changes"] if c["action"] == "move"]
    assert moves == [("apps/postgres", "apps/wave-0/postgres"), ("apps/web.yaml", "apps/wave-0/web.yaml"),
                     ("apps/media/sonarr", "apps/wave-1/media/sonarr"),
                     ("apps/media/radarr", "apps/wave-2/media/radarr")]
    after = snapshot(repo / "apps")
    for old, new in [("postgres/", "wave-0/postgres/"), ("media/sonarr/", "wave-1/media/sonarr/"),
                     ("media/radarr/", "wave-2/media/radarr/")]:
        inside = {k[len(old):]: v for k, v in before.items() if k.startswith(old)}
        assert {k[len(new):]: v for k, v in after.items() if k.startswith(new)} == inside
    # git sees renames with the same bytes: the index moved with the files.
    status = git(repo, "status", "--porcelain").splitlines()
    assert "R  apps/media/sonarr/config/settings.yaml -> apps/wave-1/media/sonarr/config/settings.yaml" in status
    assert "R  apps/postgres/kustomization.yaml -> apps/wave-0/postgres/kustomization.yaml" in status
    # A directory with a kustomization is listed as one entry; one without, file by file (kustomize
    # refuses a listed directory that has none).
    wave = {n: yaml.safe_load((repo / f"apps/wave-{n}/kustomization.yaml").read_text())["resources"]
            for n in range(3)}
    assert wave == {0: ["postgres", "web.yaml"], 1: ["media/sonarr/app.yaml", "media/sonarr/config/settings.yaml"],
                    2: ["media/radarr"]}
    for n in range(3):
        assert kubectl(repo / f"apps/wave-{n}").returncode == 0
    assert kubectl(repo / "clusters/dev").returncode == 0
    code, out = run(repo, capsys, "check")
    assert code == 0 and out["changes"] == []


def test_each_directory_units_build_is_what_kubectl_builds(
        make_repo: Callable[..., Path], capsys: pytest.CaptureFixture[str], kubectl: Kubectl, tmp_path: Path) -> None:
    repo = dir_repo(make_repo)
    assert run(repo, capsys, "apply", "--fix-overlays")[0] == 0
    inventory = read_inventory(FsTree(str(repo)), Config())
    units = {"apps/wave-0/postgres": None, "apps/wave-1/media/sonarr": ["app.yaml", "config/settings.yaml"],
             "apps/wave-2/media/radarr": None}
    for unit, generated in units.items():
        directory = repo / unit
        if generated is not None:  # built as kustomize-controller generates a kustomization for it
            copy = tmp_path / "generated" / unit
            write_files(copy, {rel: (directory / rel).read_text() for rel in generated})
            write_files(copy, {"kustomization.yaml": KUSTOMIZE + "resources:\n"
                               + "".join(f"  - {rel}\n" for rel in generated)})
            directory = copy
        built = kubectl(directory)
        assert built.returncode == 0, built.stderr
        ours = {(r.id.kind, r.id.namespace, r.id.name) for r in inventory.resources if r.path.startswith(unit + "/")}
        assert ours == ids(built.stdout), unit


def test_a_unit_directory_moving_later_is_judged_on_its_build(
        make_repo: Callable[..., Path], capsys: pytest.CaptureFixture[str]) -> None:
    repo = dir_repo(make_repo)
    run(repo, capsys, "apply", "--fix-overlays")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "split")
    (repo / "catalog/postgres.yaml").write_text(service("postgres", "web"))
    # Without --base the work tree is taken as deployed: the move loses the claim, so it is held.
    code, out = run(repo, capsys, "plan")
    (held,) = [f for f in out["findings"] if f["code"] == "move-held"]
    assert held["path"] == "apps/wave-0/postgres" and "belongs in wave 1" in held["message"]
    # The claim is in namespace db (the directory's kustomization), not the one its file names.
    assert "`PersistentVolumeClaim db/data`" in held["message"]
    assert code == 0  # plan reports; check is what fails


def test_a_prune_opt_out_from_the_directorys_kustomization_counts(
        make_repo: Callable[..., Path], capsys: pytest.CaptureFixture[str]) -> None:
    repo = dir_repo(make_repo)
    run(repo, capsys, "apply", "--fix-overlays")
    kustomization = repo / "apps/wave-0/postgres/kustomization.yaml"
    kustomization.write_text(kustomization.read_text() + "commonAnnotations:\n"
                             "  kustomize.toolkit.fluxcd.io/prune: disabled\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "split, the claim protected")
    (repo / "catalog/postgres.yaml").write_text(service("postgres", "web"))
    _, out = run(repo, capsys, "plan", "--base", "HEAD")
    moved = [f for f in out["findings"] if f["code"] == "later-wave-move" and "PersistentVolumeClaim" in f["resource"]]
    assert [f["severity"] for f in moved] == ["info"]  # not a loss: Flux leaves a protected claim alone


@pytest.mark.parametrize("more", ["", "commonLabels:\n  tier: db\n"], ids=["namespace-only", "evaluated"])
def test_a_unit_directorys_namespace_renames_the_namespace_it_holds(
        make_repo: Callable[..., Path], capsys: pytest.CaptureFixture[str], kubectl: Kubectl, more: str) -> None:
    # kustomize's `namespace:` also renames every Namespace object of the build: retiring the unit
    # deletes Namespace db (and all that lives in it), not the `postgres` its file names.
    repo = dir_repo(make_repo, {
        "apps/postgres/kustomization.yaml": KUSTOMIZE + "namespace: db\nresources:\n  - ns.yaml\n  - pvc.yaml\n" + more,
        "apps/postgres/ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: postgres\n"})
    split_and_commit(repo, capsys)
    assert ("Namespace", "", "db") in ids(kubectl(repo / "apps/wave-0/postgres").stdout)
    (repo / "catalog/postgres.yaml").write_text(service("postgres", "web"))
    _, out = run(repo, capsys, "plan", "--base", "HEAD")
    # The move loses data, so it is held; what it would delete is the built Namespace.
    (held,) = [f for f in out["findings"] if f["code"] == "move-held"]
    assert "data loss for `Namespace db`" in held["message"], out["findings"]
    assert "Namespace postgres" not in held["message"]


@pytest.mark.parametrize("more", ["", "commonLabels:\n  tier: db\n"], ids=["namespace-only", "evaluated"])
def test_two_namespaces_renamed_to_one_are_a_build_kustomize_refuses(
        make_repo: Callable[..., Path], capsys: pytest.CaptureFixture[str], kubectl: Kubectl, more: str) -> None:
    ns = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {}\n"
    repo = dir_repo(make_repo, {
        "apps/postgres/kustomization.yaml": KUSTOMIZE + "namespace: db\nresources:\n  - ns.yaml\n  - pvc.yaml\n" + more,
        "apps/postgres/ns.yaml": ns.format("postgres") + "---\n" + ns.format("postgres-backup")})
    built = kubectl(repo / "apps/postgres")
    assert built.returncode == 1 and "namespace transformation produces ID conflict" in built.stderr
    code, out = run(repo, capsys, "apply", "--fix-overlays")
    (refused,) = [f for f in out["findings"] if f["code"] == "invalid-manifest"]
    assert (refused["severity"], refused["path"], refused["line"]) == (
        "error", "apps/wave-0/postgres/kustomization.yaml", 3)
    assert "'namespace: db' gives two objects the id Namespace db (v1)" in refused["message"]
    assert refused["fix"] == "keep one Namespace object per kustomization that sets a namespace"


def split_and_commit(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(repo, capsys, "apply", "--fix-overlays")[0] == 0
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "split")


def test_a_deleted_unit_directory_is_named_not_another_with_the_same_file_name(
        make_repo: Callable[..., Path], capsys: pytest.CaptureFixture[str]) -> None:
    # sonarr and radarr both hold an app.yaml; retiring radarr deletes its objects, whatever sonarr keeps.
    repo = dir_repo(make_repo)
    split_and_commit(repo, capsys)
    (repo / "catalog/radarr.yaml").unlink()
    shutil.rmtree(repo / "apps/wave-2/media/radarr")
    _, out = run(repo, capsys, "plan", "--base", "HEAD")
    [gone] = [f for f in out["findings"] if f.get("resource") == "apps/Deployment media/radarr"]
    assert (gone["code"], gone["severity"], gone["path"]) == (
        "resource-removed", "info", "apps/wave-2/media/radarr/app.yaml")
    assert gone["message"].startswith("apps/wave-2/media/radarr/app.yaml is deleted in this change")


def test_unit_directories_moved_out_of_their_waves_are_the_same_units_moved_back(
        make_repo: Callable[..., Path], capsys: pytest.CaptureFixture[str]) -> None:
    # `git mv` of a unit leaves the folder it was in, empty, on disk (git tracks no empty directory,
    # so no checkout Flux or the bot makes has it): that is no unplaced unit.
    repo = dir_repo(make_repo)
    split_and_commit(repo, capsys)
    deployed = snapshot(repo / "apps")
    (repo / "apps/media").mkdir()
    for name, wave in (("sonarr", 1), ("radarr", 2)):
        git(repo, "mv", f"apps/wave-{wave}/media/{name}", f"apps/media/{name}")
    git(repo, "mv", "apps/wave-0/postgres", "apps/postgres")
    assert (repo / "apps/wave-1/media").is_dir() and not any((repo / "apps/wave-1/media").iterdir())
    code, out = run(repo, capsys, "apply", "--base", "HEAD")
    assert codes(out) == [("chain-gating", "info")]
    assert sorted((c["from"], c["path"]) for c in out["changes"]) == [
        ("apps/media/radarr", "apps/wave-2/media/radarr"), ("apps/media/sonarr", "apps/wave-1/media/sonarr"),
        ("apps/postgres", "apps/wave-0/postgres")]
    assert {k: v for k, v in snapshot(repo / "apps").items()} == deployed  # byte for byte where they were
    assert code == 0 and run(repo, capsys, "check", "--base", "HEAD")[0] == 0


def test_sops_files_inside_a_unit_directory_need_decryption(
        make_repo: Callable[..., Path], capsys: pytest.CaptureFixture[str]) -> None:
    secret = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n  namespace: media\nsops:\n  version: 3.9.0\n"
    repo = dir_repo(make_repo, {"apps/media/sonarr/secret.sops.yaml": secret})
    code, out = run(repo, capsys, "apply")  # without --fix-overlays: no wave gets decryption
    missing = {f["wave"]: f["severity"] for f in out["findings"] if f["code"] == "missing-decryption"}
    assert missing[1] == "error" and missing[0] == "warning"


def test_an_unowned_directory_stays_where_it_is(
        make_repo: Callable[..., Path], capsys: pytest.CaptureFixture[str]) -> None:
    repo = dir_repo(make_repo, {
        "apps/media/mystery/app.yaml": deployment("mystery"),  # in a grouping folder: unplaced
        "apps/vms/vm.yaml": deployment("vm"),  # directly under apps/, no unit inside: another tier
    })
    code, out = run(repo, capsys, "apply", "--fix-overlays")
    unplaced = [f for f in out["findings"] if f["code"] == "unplaced-file"]
    assert [f["path"] for f in unplaced] == ["apps/media/mystery"]
    assert "rename it after the node it belongs to (<node>/)" in unplaced[0]["message"]
    assert (repo / "apps/media/mystery/app.yaml").is_file() and (repo / "apps/vms/vm.yaml").is_file()
    assert code == 0 and run(repo, capsys, "check")[0] == 1


def test_the_dir_per_app_example_is_clean_and_builds(kubectl: Kubectl, capsys: pytest.CaptureFixture[str]) -> None:
    example = DIR_EXAMPLE
    code, out = run(example, capsys, "check")
    assert code == 0 and out["changes"] == [] and [f for f in out["findings"] if f["severity"] == "error"] == []
    built = kubectl(example / "clusters/dev")
    assert built.returncode == 0, built.stderr
    assert {"apps-wave-0", "apps-wave-1", "apps-wave-2"} <= {n for k, _, n in ids(built.stdout)
                                                           if k == "Kustomization"}
    for n in range(3):
        assert kubectl(example / f"apps/wave-{n}").returncode == 0


def example_repo_of(make_repo: Callable[..., Path], extra: dict[str, str]) -> Path:
    return make_repo({**{str(p.relative_to(DIR_EXAMPLE)): p.read_bytes() for p in DIR_EXAMPLE.rglob("*")
                         if p.is_file()}, **extra})


def test_reports_show_directory_units_as_directories_and_name_no_catalog_it_lacks(
        capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["plan", str(DIR_EXAMPLE)]) == 0
    text = capsys.readouterr().out
    assert "0     postgres    postgres/\n      redis       redis/\n1     jellyfin    jellyfin/\n" in text
    assert "the wave layout matches the dependencies in .wave-bot.yaml.\n" in text  # it has no catalog
    assert main(["plan", str(DIR_EXAMPLE), "--format", "markdown"]) == 0
    assert "| 1 | `jellyfin` | `jellyfin/` |" in capsys.readouterr().out


def test_an_unplaced_unit_without_a_catalog_is_declared_in_the_dependencies(
        make_repo: Callable[..., Path], capsys: pytest.CaptureFixture[str]) -> None:
    repo = example_repo_of(make_repo, {"apps/wave-1/media/mystery/app.yaml": deployment("mystery", "media"),
                                       "apps/wave-1/media/notes.yaml": deployment("notes", "media")})
    _, out = run(repo, capsys, "plan")
    unplaced = {f["path"]: f for f in out["findings"] if f["code"] == "unplaced-file"}
    mystery = unplaced["apps/wave-1/media/mystery"]
    assert mystery["message"].startswith("apps/wave-1/media/mystery: no unit in the dependencies of .wave-bot.yaml "
                                         "owns this directory, so wave-bot cannot place it; it stays in wave 1. To "
                                         "place it, declare 'mystery' under dependencies in .wave-bot.yaml")
    assert mystery["fix"] == "# in .wave-bot.yaml: list what it needs\ndependencies:\n  mystery: []\n"
    # A file in a grouping folder is no unit, whatever its name: only moving it into one places it.
    notes = unplaced["apps/wave-1/media/notes.yaml"]
    assert notes["message"].endswith("A file in a grouping folder is no unit: move it into the directory of the unit "
                                     "that needs it (git mv apps/wave-1/media/notes.yaml apps/wave-1/media/<unit>/)")
    assert notes.get("fix") is None


LEGACY = """---
# The app tier: one Kustomization for all of apps/.
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: apps
  namespace: flux-system
spec:
  dependsOn:
    - name: infrastructure
  interval: 10m
  path: ./apps
  prune: true
  wait: true
  sourceRef:
    kind: GitRepository
    name: flux-system
"""


def built_documents(kubectl: Kubectl, directory: Path) -> list[str]:
    built = kubectl(directory)
    assert built.returncode == 0, built.stderr
    return sorted(yaml.safe_dump(d, sort_keys=True) for d in yaml.safe_load_all(built.stdout) if d)


@pytest.mark.parametrize("own", [False, True], ids=["generated-by-flux", "apps-kustomization"])
def test_the_cutover_splits_a_directory_per_app_tier(
        make_repo: Callable[..., Path], capsys: pytest.CaptureFixture[str], kubectl: Kubectl, tmp_path: Path,
        own: bool) -> None:
    files = {"clusters/base/apps.yaml": LEGACY}
    if own:  # the app tier's own kustomization lists the directories (sonarr's files: it has none)
        files["apps/kustomization.yaml"] = KUSTOMIZE + "resources:\n  - postgres\n  - media/radarr\n" \
            "  - media/sonarr/app.yaml\n  - media/sonarr/config/settings.yaml\n  - web.yaml\n"
    repo = dir_repo(make_repo, files)
    base = repo / "clusters/base/kustomization.yaml"
    base.write_text(base.read_text() + "  - apps.yaml\n")
    git(repo, "commit", "-qam", "the monolithic app tier")
    # What `apps` applies: its kustomization's build, or the one kustomize-controller generates.
    legacy_dir = repo / "apps"
    if not own:
        legacy_dir = tmp_path / "legacy"
        shutil.copytree(repo / "apps", legacy_dir)
        listed = ["postgres", "media/radarr", "media/sonarr/app.yaml", "media/sonarr/config/settings.yaml", "web.yaml"]
        write_files(legacy_dir, {"kustomization.yaml": KUSTOMIZE + "resources:\n"
                                 + "".join(f"  - {p}\n" for p in listed)})
    legacy = built_documents(kubectl, legacy_dir)
    code, out = run(repo, capsys, "apply", "--base", "HEAD", "--fix-overlays")
    assert [c["path"] for c in out["changes"]] == ["clusters/base/apps.yaml"]  # step 1: release only
    git(repo, "commit", "-qam", "step 1: release apps")
    code, out = run(repo, capsys, "apply", "--base", "HEAD", "--fix-overlays")
    assert code == 0 and [f["code"] for f in out["findings"] if f["severity"] == "error"] == []
    assert ("apps/media/sonarr", "apps/wave-1/media/sonarr") in [
        (c.get("from"), c["path"]) for c in out["changes"] if c["action"] == "move"]
    assert not (repo / "clusters/base/apps.yaml").exists() and not (repo / "apps/kustomization.yaml").exists()
    after = sorted(d for n in range(3) for d in built_documents(kubectl, repo / f"apps/wave-{n}"))
    assert after == legacy and len(after) == 9  # the waves apply exactly what `apps` applied
    assert kubectl(repo / "clusters/dev").returncode == 0
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "step 2: the split")
    assert run(repo, capsys, "check", "--base", "HEAD~1")[0] == 0


def test_step_2_says_where_the_legacy_kustomization_is_and_how_to_verify_the_split(
        make_repo: Callable[..., Path], capsys: pytest.CaptureFixture[str]) -> None:
    # postgres' kustomization sets no namespace here: the claim is where its file puts it.
    repo = dir_repo(make_repo, {"clusters/base/apps.yaml": LEGACY,
                                "apps/postgres/kustomization.yaml": KUSTOMIZE + "resources:\n  - pvc.yaml\n"})
    base = repo / "clusters/base/kustomization.yaml"
    base.write_text(base.read_text() + "  - apps.yaml\n")
    git(repo, "commit", "-qam", "the monolithic app tier")
    run(repo, capsys, "apply", "--base", "HEAD", "--fix-overlays")
    git(repo, "commit", "-qam", "step 1: release apps")
    code, out = run(repo, capsys, "apply", "--base", "HEAD", "--fix-overlays")
    assert code == 0
    (step,) = [f for f in out["findings"] if f["code"] == "cutover-step-2"]
    start = LEGACY.splitlines().index("apiVersion: kustomize.toolkit.fluxcd.io/v1") + 1
    assert (step["path"], step["line"]) == ("clusters/base/apps.yaml", start)
    assert step["message"].endswith("Next: merge, then verify with the commands in the fix (waves Ready, databases "
                                    "and PVCs with their original age, labels moved to the waves)")
    # The commands run as written, the label one with -n for a namespaced object.
    assert step["fix"].splitlines() == [
        "flux get kustomizations", "kubectl get persistentvolumeclaim -n elsewhere data",
        "kubectl get deploy -A -o wide",
        "kubectl -n elsewhere get persistentvolumeclaim/data -o jsonpath='{.metadata.labels.kustomize\\.toolkit"
        "\\.fluxcd\\.io/name}'"]


@pytest.mark.parametrize("where", ["unit-namespace", "target-namespace"])
def test_the_cutover_commands_name_each_object_in_the_namespace_kustomize_gives_it(
        make_repo: Callable[..., Path], capsys: pytest.CaptureFixture[str], kubectl: Kubectl, where: str) -> None:
    # The PVC's file says `elsewhere`; what is applied (and what kubectl must annotate) is elsewhere.
    if where == "unit-namespace":
        files = {"clusters/base/apps.yaml": LEGACY,
                 "apps/postgres/kustomization.yaml": KUSTOMIZE + "namespace: databases\nresources:\n  - pvc.yaml\n"}
    else:  # Flux sets it as the outermost namespace: over the unit's own
        legacy = LEGACY.replace("  path: ./apps\n", "  path: ./apps\n  targetNamespace: databases\n")
        files = {"clusters/base/apps.yaml": legacy,
                 "apps/postgres/kustomization.yaml": KUSTOMIZE + "namespace: other\nresources:\n  - pvc.yaml\n"}
    repo = dir_repo(make_repo, files)
    built = [d for d in yaml.safe_load_all(kubectl(repo / "apps/postgres").stdout) if d]
    assert [d["metadata"]["namespace"] for d in built] == ["databases" if where == "unit-namespace" else "other"]
    base = repo / "clusters/base/kustomization.yaml"
    base.write_text(base.read_text() + "  - apps.yaml\n")
    git(repo, "commit", "-qam", "the monolithic app tier")
    code, out = run(repo, capsys, "apply", "--base", "HEAD", "--fix-overlays")
    (step,) = [f for f in out["findings"] if f["code"] == "cutover-step-1"]
    assert "kubectl -n databases annotate persistentvolumeclaim/data kustomize.toolkit.fluxcd.io/prune=disabled" in (
        step["fix"].splitlines())
    git(repo, "commit", "-qam", "step 1: release apps")
    code, out = run(repo, capsys, "apply", "--base", "HEAD", "--fix-overlays")
    (step,) = [f for f in out["findings"] if f["code"] == "cutover-step-2"]
    assert "kubectl get persistentvolumeclaim -n databases data" in step["fix"].splitlines()


def child_kustomization(name: str, path: str) -> str:
    return (f"apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: {name}\n"
            f"  namespace: flux-system\nspec:\n  interval: 1h\n  path: {path}\n  prune: true\n"
            "  sourceRef:\n    kind: GitRepository\n    name: flux-system\n")


def grouped_repo(make_repo: Callable[..., Path], files: dict[str, str], without: tuple[str, ...] = ()) -> Path:
    """The cluster-template shape, one grouping folder per namespace, each with its own kustomization:
    `apps/<group>/<name>/` holds a child Flux Kustomization `ks.yaml` and the `app/` it applies.
    Released for the cutover (step 1 deployed), so `apply` makes the split."""
    units = {"media/sonarr": "sonarr", "media/radarr": "radarr", "db/postgres": "postgres"}
    tree: dict[str, str | bytes] = {
        **base_without_waves(), "clusters/base/apps.yaml": LEGACY.replace("prune: true", "prune: false"),
        ".wave-bot.yaml": "root_depends_on: [infrastructure]\n"
                          "dependencies:\n  postgres: []\n  sonarr: [postgres]\n  radarr: [sonarr]\n",
    }
    for unit, name in units.items():
        tree[f"apps/{unit}/ks.yaml"] = child_kustomization(name, f"./apps/{unit}/app")
        tree[f"apps/{unit}/app/kustomization.yaml"] = KUSTOMIZE + "resources:\n  - pvc.yaml\n"
        tree[f"apps/{unit}/app/pvc.yaml"] = pvc(f"{name}-data", unit.split("/")[0])
        tree[f"apps/{unit}/kustomization.yaml"] = KUSTOMIZE + "resources:\n  - ks.yaml\n"
    for group in ("media", "db"):
        tree[f"apps/{group}/kustomization.yaml"] = KUSTOMIZE + "resources:\n" + "".join(
            f"  - ./{unit.split('/')[1]}\n" for unit in sorted(units) if unit.startswith(group))
    base = tree["clusters/base/kustomization.yaml"]
    assert isinstance(base, str)
    tree["clusters/base/kustomization.yaml"] = base + "  - apps.yaml\n"
    return make_repo({k: v for k, v in {**tree, **files}.items() if k not in without})


def split_replaces_the_grouping_kustomization(repo: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """Step 2 on `repo`: it succeeds and deletes apps/media's grouping kustomization; its JSON output."""
    code, out = run(repo, capsys, "apply", "--base", "HEAD", "--fix-overlays")
    assert code == 0
    assert "apps/media/kustomization.yaml" in [c["path"] for c in out["changes"] if c["action"] == "delete"]
    return out


def test_the_cutover_replaces_the_grouping_folders_kustomizations(
        make_repo: Callable[..., Path], capsys: pytest.CaptureFixture[str], kubectl: Kubectl, tmp_path: Path) -> None:
    repo = grouped_repo(make_repo, {})
    # What `apps` applies: Flux generates its kustomization (every group folder, each one entry).
    legacy_dir = tmp_path / "legacy"
    shutil.copytree(repo / "apps", legacy_dir)
    write_files(legacy_dir, {"kustomization.yaml": KUSTOMIZE + "resources:\n  - db\n  - media\n"})
    legacy = built_documents(kubectl, legacy_dir)
    moved_ks = {f"apps/{unit}/ks.yaml": f"apps/wave-{n}/{unit}/ks.yaml"
                for n, unit in ((0, "db/postgres"), (1, "media/sonarr"), (2, "media/radarr"))}
    old_ks = {path: (repo / path).read_text() for path in moved_ks}
    code, out = run(repo, capsys, "apply", "--base", "HEAD", "--fix-overlays")
    deleted = [c["path"] for c in out["changes"] if c["action"] == "delete"]
    assert deleted == ["clusters/base/apps.yaml", "apps/db/kustomization.yaml", "apps/media/kustomization.yaml"]
    # Each child's spec.path named its app/ where the unit was: rewritten to its new place, that line
    # alone, so no error is left to fix by hand.
    assert code == 0 and [f for f in out["findings"] if f["severity"] == "error"] == []
    for old, new in moved_ks.items():
        assert (repo / new).read_text() == old_ks[old].replace(f"path: ./{old.rsplit('/', 1)[0]}/app",
                                                                f"path: ./{new.rsplit('/', 1)[0]}/app")
    # Nothing is left of the grouping folders: no file lists directories that moved away.
    assert [p for p in (repo / "apps").rglob("*")
            if p.is_file() and not p.relative_to(repo / "apps").parts[0].startswith("wave-")] == []
    after = sorted(d for n in range(3) for d in built_documents(kubectl, repo / f"apps/wave-{n}"))
    assert len(after) == 3  # each wave applies its units' child Kustomizations, once: apps' three, repathed
    assert [re.sub(r"path: \S+", "", d) for d in after] == [re.sub(r"path: \S+", "", d) for d in legacy]
    for document in after:  # each repathed child builds what it built before, from the unit's new place
        path = yaml.safe_load(document)["spec"]["path"]
        assert built_documents(kubectl, repo / path) == built_documents(
            kubectl, legacy_dir / path.split("/", 3)[3])
    assert kubectl(repo / "clusters/dev").returncode == 0
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "step 2: the split")
    assert run(repo, capsys, "check", "--base", "HEAD~1")[0] == 0


@pytest.mark.parametrize(("files", "expected"), [
    # radarr has its own kustomization (listing ks.yaml): its wave lists the directory, and only that
    ({"apps/media/kustomization.yaml": KUSTOMIZE + "resources:\n  - ./sonarr\n  - ./radarr\n"
                                       "  - ./radarr/app/pvc.yaml\n"},
     ["apps/media/kustomization.yaml:3: lists the directory, app/pvc.yaml of radarr/, and its wave will list radarr "
      "(what its own kustomization.yaml lists); the split would apply something else",
      "  hint: make apps/media/radarr/kustomization.yaml list exactly what this file applies of radarr/ (what it "
      "lists now, app/pvc.yaml) and list only ./radarr here, then run wave-bot again"]),
    # only a file of it, not the directory: what its own kustomization lists now is not to be kept
    ({"apps/media/kustomization.yaml": KUSTOMIZE + "resources:\n  - ./sonarr\n  - ./radarr/app/pvc.yaml\n"},
     ["apps/media/kustomization.yaml:3: lists app/pvc.yaml of radarr/, and its wave will list radarr (what its own "
      "kustomization.yaml lists)",
      "  hint: make apps/media/radarr/kustomization.yaml list exactly what this file applies of radarr/ "
      "(app/pvc.yaml) and list only ./radarr here, then run wave-bot again"]),
    # a group's patch file: carried along, it would resolve from elsewhere
    ({"apps/media/kustomization.yaml": KUSTOMIZE + "resources:\n  - ./sonarr\n  - ./radarr\npatches:\n"
                                       "  - path: patch.yaml\n",
      "apps/media/patch.yaml": "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: x\n"},
     ["apps/media/kustomization.yaml:6: patches here names files relative to apps/media/",
      "hint: write the patches inline"]),
    ({"apps/media/kustomization.yaml": KUSTOMIZE + "resources: [./sonarr, ./radarr\n"},
     ["apps/media/kustomization.yaml:4: invalid YAML"]),
], ids=["part-of-a-unit-with-its-own", "only-a-file-of-a-unit-with-its-own", "patch-file",
        "invalid-yaml"])
def test_a_grouping_kustomization_the_split_would_change_is_an_input_error(
        make_repo: Callable[..., Path], capsys: pytest.CaptureFixture[str], files: dict[str, str],
        expected: list[str]) -> None:
    files = dict(files)
    without = files.pop("without", "")
    repo = grouped_repo(make_repo, files, (without,))
    before = snapshot(repo)
    capsys.readouterr()
    assert main(["apply", str(repo), "--base", "HEAD", "--fix-overlays"]) == 2
    err = capsys.readouterr().err
    for text in expected:
        assert text in err, err
    assert snapshot(repo) == before


@pytest.mark.parametrize(("files", "without", "fixed"), [
    ({"apps/media/kustomization.yaml": KUSTOMIZE + "resources:\n  - ./sonarr\n  - ./radarr\n"
                                       "  - ./radarr/app/pvc.yaml\n"},
     "",
     {"apps/media/radarr/kustomization.yaml": KUSTOMIZE + "resources:\n  - ks.yaml\n  - app/pvc.yaml\n",
      "apps/media/kustomization.yaml": KUSTOMIZE + "resources:\n  - ./sonarr\n  - ./radarr\n"}),
], ids=["part-of-a-unit-with-its-own"])
def test_the_hint_for_a_grouping_kustomization_the_split_would_change_lets_it_through(
        make_repo: Callable[..., Path], capsys: pytest.CaptureFixture[str], kubectl: Kubectl, files: dict[str, str],
        without: str, fixed: dict[str, str]) -> None:
    # Done as the hint says (the files written here), the same objects apply and the split goes ahead.
    repo = grouped_repo(make_repo, files, (without,))
    before = built_documents(kubectl, repo / "apps/media")
    assert main(["apply", str(repo), "--base", "HEAD", "--fix-overlays"]) == 2
    write_files(repo, fixed)
    assert built_documents(kubectl, repo / "apps/media") == before
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "as the hint says")
    split_replaces_the_grouping_kustomization(repo, capsys)


@pytest.mark.parametrize(("files", "kept"), [
    ({"apps/db/kustomization.yaml": KUSTOMIZE + "resources:\n  - ./postgres  # the database\n"
                                    "  - ../../infrastructure\n"},
     ("apps/db/kustomization.yaml", KUSTOMIZE + "resources:\n  - ../../infrastructure\n")),
    # a folder's file listed from one level further down
    ({"apps/media/kustomization.yaml": KUSTOMIZE + "resources:\n  - ./sonarr\n  - ./radarr\n  - ./x/namespace.yaml\n",
      "apps/media/x/namespace.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: media\n"},
     ("apps/media/kustomization.yaml", KUSTOMIZE + "resources:\n  - ./x/namespace.yaml\n")),
], ids=["outside", "below-the-folder"])
def test_a_grouping_kustomization_keeps_what_is_in_no_unit_and_the_remainder_applies_it(
        make_repo: Callable[..., Path], capsys: pytest.CaptureFixture[str], kubectl: Kubectl,
        files: dict[str, str], kept: tuple[str, str]) -> None:
    # The group lists something besides its units: its entry stays where it is (the units' entries
    # go), and the remainder Kustomization, which wave 0 depends on, applies the folder as before.
    repo = grouped_repo(make_repo, files)
    folder = posixpath.dirname(kept[0])
    before = built_documents(kubectl, repo / folder)
    code, out = run(repo, capsys, "apply", "--base", "HEAD", "--fix-overlays")
    assert code == 0
    path, text = kept
    assert (repo / path).read_text() == text
    assert (repo / "apps/kustomization.yaml").read_text().endswith(
        f"resources:\n  - {posixpath.basename(folder)}\n")
    assert [d for d in before if "kind: Kustomization" not in d] == built_documents(kubectl, repo / folder)
    rest = yaml.safe_load((repo / "clusters/base/apps-rest.yaml").read_text())
    assert rest["spec"]["path"] == "./apps" and rest["spec"]["dependsOn"] == [{"name": "infrastructure"}]
    assert yaml.safe_load((repo / "clusters/base/apps-wave-0.yaml").read_text())["spec"]["dependsOn"] == [
        {"name": "apps-rest"}]
    (step,) = [f for f in out["findings"] if f["code"] == "cutover-step-2"]
    assert "the rest stays applied by apps-rest (clusters/base/apps-rest.yaml, path ./apps" in step["message"]


def test_a_grouping_kustomization_listing_a_file_of_its_own_keeps_it_and_loses_the_units(
        make_repo: Callable[..., Path], capsys: pytest.CaptureFixture[str]) -> None:
    # radarr has no kustomization of its own: listed file by file as its wave will list it, nothing
    # changes. The folder's own Namespace stays listed there, applied by the remainder.
    repo = grouped_repo(make_repo, {
        "apps/media/kustomization.yaml": KUSTOMIZE + "resources:\n  - namespace.yaml\n  - ./sonarr\n"
                                         "  - radarr/ks.yaml\n  - ./radarr/app\n",
        "apps/media/namespace.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: media\n",
    }, ("apps/media/radarr/kustomization.yaml",))
    code, out = run(repo, capsys, "apply", "--base", "HEAD", "--fix-overlays")
    assert code == 0
    assert (repo / "apps/media/kustomization.yaml").read_text() == KUSTOMIZE + "resources:\n  - namespace.yaml\n"
    assert not [f for f in out["findings"] if f["code"] == "unplaced-file" and f["severity"] != "info"]
    git(repo, "reset", "-q", "--hard")
    # Moved into the unit that needs it instead, the group lists nothing else and goes.
    (repo / "apps/media/namespace.yaml").rename(repo / "apps/media/sonarr/namespace.yaml")
    media = repo / "apps/media/kustomization.yaml"
    media.write_text(media.read_text().replace("  - namespace.yaml\n", ""))
    sonarr = repo / "apps/media/sonarr/kustomization.yaml"
    sonarr.write_text(sonarr.read_text() + "  - namespace.yaml\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "the Namespace into the unit that needs it, as the error says")
    out = split_replaces_the_grouping_kustomization(repo, capsys)
    assert not [f for f in out["findings"] if f["code"] == "unplaced-file"]


@pytest.mark.parametrize("text", ["- ./sonarr\n- ./radarr\n", KUSTOMIZE + "resources: ./sonarr\n",
                                  KUSTOMIZE + "resources:\n  - ./sonarr\n  - {path: ./radarr}\n",
                                  KUSTOMIZE + "resources:\n  - ./sonarr\n  - ./radarr\n  - 5\n"],
                         ids=["not-a-mapping", "resources-not-a-list", "a-resource-that-is-a-mapping",
                              "a-resource-that-is-no-path"])
def test_a_grouping_kustomization_kustomize_refuses_goes_with_the_split(
        make_repo: Callable[..., Path], capsys: pytest.CaptureFixture[str], kubectl: Kubectl, text: str) -> None:
    # The legacy build failed on it too, so nothing Flux applied depends on it.
    repo = grouped_repo(make_repo, {"apps/media/kustomization.yaml": text})
    assert kubectl(repo / "apps/media").returncode != 0
    split_replaces_the_grouping_kustomization(repo, capsys)


def test_step_1_of_a_tier_that_fits_in_one_wave_says_so(
        make_repo: Callable[..., Path], capsys: pytest.CaptureFixture[str]) -> None:
    repo = grouped_repo(make_repo, {
        "clusters/base/apps.yaml": LEGACY,  # deployed with prune: true: step 1
        ".wave-bot.yaml": "root_depends_on: [infrastructure]\n"
                          "dependencies:\n  postgres: []\n  sonarr: []\n  radarr: []\n"})
    code, out = run(repo, capsys, "apply", "--base", "HEAD")
    (step,) = [f for f in out["findings"] if f["code"] == "cutover-step-1"]
    assert code == 0 and "step 2 splits the app tier into wave 0. Optionally" in step["message"]


BOTH = {  # a component that adds a ConfigMap and labels everything it is applied to
    "components/both/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n"
                                          "resources:\n  - cm.yaml\ncommonLabels:\n  team: x\n",
    "components/both/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n",
}


def test_step_1_says_what_will_stop_step_2(make_repo: Callable[..., Path], capsys: pytest.CaptureFixture[str]) -> None:
    repo = grouped_repo(make_repo, {
        "clusters/base/apps.yaml": LEGACY,  # deployed with prune: true: step 1
        "apps/media/kustomization.yaml": KUSTOMIZE + "components:\n  - ../../components/both\n"
                                         "resources:\n  - ./sonarr\n  - ./radarr\n", **BOTH})
    code, out = run(repo, capsys, "apply", "--base", "HEAD")
    assert code == 0 and [c["path"] for c in out["changes"]] == ["clusters/base/apps.yaml"]
    (step,) = [f for f in out["findings"] if f["code"] == "cutover-step-1"]
    assert step["message"].endswith(
        "Step 2 will stop at apps/media/kustomization.yaml:4: components entry ../../components/both both adds "
        "objects and transforms the units listed here (commonLabels); once the units move into waves its objects "
        "must stay applied once, here, and its changes must still reach the units, which one component cannot do "
        "from two places; split ../../components/both into a component that adds the objects (keep it listed here) "
        "and one with commonLabels (list it in this file too), then run wave-bot again")


def test_step_1_names_every_grouping_folder_step_2_would_refuse_and_its_own_change_passes_check(
        make_repo: Callable[..., Path], capsys: pytest.CaptureFixture[str]) -> None:
    # Both grouping folders use a component step 2 cannot split between the group and its units, and
    # keep their Namespace beside the units; `apps` still prunes, so this is step 1.
    ns = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {}\n"
    repo = grouped_repo(make_repo, {
        "clusters/base/apps.yaml": LEGACY,
        "apps/media/kustomization.yaml": KUSTOMIZE + "namespace: media\ncomponents:\n  - ../../components/both\n"
                                         "resources:\n  - namespace.yaml\n  - ./sonarr\n  - ./radarr\n",
        "apps/media/namespace.yaml": ns.format("media"),
        "apps/db/kustomization.yaml": KUSTOMIZE + "namespace: db\ncomponents:\n  - ../../components/both\n"
                                      "resources:\n  - namespace.yaml\n  - ./postgres\n",
        "apps/db/namespace.yaml": ns.format("db"),
        **BOTH,
    })
    code, out = run(repo, capsys, "apply", "--base", "HEAD", "--fix-overlays")
    assert code == 0
    (step,) = [f for f in out["findings"] if f["code"] == "cutover-step-1"]
    for folder in ("db", "media"):  # every folder at once, each with its edit
        assert f"apps/{folder}/kustomization.yaml:5: components entry ../../components/both both adds" in step[
            "message"]
        assert f"apps/{folder}/namespace.yaml (1 object(s))" in step["message"]
    git(repo, "commit", "-qam", "step 1")
    # Step 1's own pull request passes check: it only releases `apps`.
    capsys.readouterr()
    assert main(["check", str(repo), "--base", "HEAD~1"]) == 0, capsys.readouterr()
