"""The cutover from the monolithic `apps` Kustomization (docs/design.md §4.1) on the flattened example.

The flattened example is examples/homelab as it was before the split: every manifest directly in
apps/ with apps/kustomization.yaml, one Flux Kustomization `apps` (path ./apps, prune: true), one
decryption patch for it per overlay. `kubectl kustomize` proves every intermediate state builds and
that the waves apply exactly what `apps` applied.
"""
from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import responses
from test_action import Scenario

from bot.cli import main

from conftest import EXAMPLE, PROJECT, Kubectl, git, installed_tool, snapshot, write_files
from support.actionkit import BRANCH
from support.fakes import SERVERS
from support.fluxsim import simulate

APPS_ENTRY = "  - apps.yaml # Flux Kustomization -> ./apps (dependsOn platform-config)\n"
DEV_PATCH = """  - patch: |
      apiVersion: kustomize.toolkit.fluxcd.io/v1
      kind: Kustomization
      metadata:
        name: apps
        namespace: flux-system
      spec:
        decryption:
          provider: sops
          secretRef:
            name: sops-age
"""


def flatten(repo: Path) -> None:
    """Turn a copy of examples/homelab into its pre-split state and commit it."""
    names = []
    for wave in sorted((repo / "apps").glob("wave-*")):
        for path in sorted(wave.iterdir()):
            if path.name != "kustomization.yaml":
                git(repo, "mv", str(path.relative_to(repo)), f"apps/{path.name}")
                names.append(path.name)
        git(repo, "rm", "-q", str((wave / "kustomization.yaml").relative_to(repo)))
    (repo / "apps/kustomization.yaml").write_text(
        "# The app tier: everything the `apps` Flux Kustomization applies.\n"
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n"
        + "".join(f"  - {n}\n" for n in sorted(names)))
    wave0 = (repo / "clusters/base/apps-wave-0.yaml").read_text()
    body = wave0.split("apiVersion:", 1)[1]
    (repo / "clusters/base/apps.yaml").write_text(
        "# The app tier: one Kustomization for all of apps/ (health-gated as a whole).\napiVersion:"
        + body.replace("name: apps-wave-0", "name: apps").replace("path: ./apps/wave-0", "path: ./apps"))
    for n in range(3):
        git(repo, "rm", "-q", f"clusters/base/apps-wave-{n}.yaml", f"clusters/prod/patches/apps-wave-{n}-sops.yaml")
    base = (repo / "clusters/base/kustomization.yaml").read_text()
    base = re.sub(r"  - apps-wave-0\.yaml[^\n]*\n  - apps-wave-1\.yaml[^\n]*\n  - apps-wave-2\.yaml[^\n]*\n",
                  APPS_ENTRY, base)
    (repo / "clusters/base/kustomization.yaml").write_text(base)
    dev = (repo / "clusters/dev/kustomization.yaml").read_text()
    (repo / "clusters/dev/kustomization.yaml").write_text(dev[:dev.index("  - patch: |\n      apiVersion")] + DEV_PATCH)
    prod = (repo / "clusters/prod/kustomization.yaml").read_text()
    prod = re.sub(r"  - path: patches/apps-wave-0-sops\.yaml\n.*", "  - path: patches/apps-sops.yaml\n", prod,
                  flags=re.S)
    (repo / "clusters/prod/kustomization.yaml").write_text(prod)
    (repo / "clusters/prod/patches/apps-sops.yaml").write_text(
        (EXAMPLE / "clusters/prod/patches/apps-wave-0-sops.yaml").read_text().replace("apps-wave-0", "apps"))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "the monolithic app tier")


@pytest.fixture
def flat_repo(example_repo: Path) -> Path:
    flatten(example_repo)
    return example_repo


def run(repo: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    capsys.readouterr()
    code = main([args[0], str(repo), *args[1:], "--format", "json"])
    out = capsys.readouterr().out
    return code, json.loads(out) if out else {}


def by_code(out: dict[str, Any], code: str) -> list[dict[str, Any]]:
    return [f for f in out["findings"] if f["code"] == code]


def documents(built: str) -> list[str]:
    return sorted(d.strip() + "\n" for d in built.split("\n---\n") if d.strip())


def build_ok(kubectl: Kubectl, path: Path) -> str:
    result = kubectl(path)
    assert result.returncode == 0, f"{path}: {result.stderr}"
    return result.stdout


def overlays_build(repo: Path, kubectl: Kubectl) -> dict[str, str]:
    return {o: build_ok(kubectl, repo / o) for o in ("clusters/dev", "clusters/prod")}


def files_at(repo: Path, rev: str) -> dict[str, bytes]:
    """Every file of `rev`, as Flux would fetch it."""
    names = git(repo, "ls-tree", "-r", "--name-only", "-z", rev).split("\0")
    return {n: subprocess.run(["git", "show", f"{rev}:{n}"], cwd=repo, capture_output=True, check=True).stdout
            for n in names if n}


def deletes_nothing(repo: Path) -> bool:
    """The merge just made (HEAD~1 deployed), judged by the Flux simulation: no history deletes anything."""
    outcome = simulate(files_at(repo, "HEAD~1"), files_at(repo, "HEAD"))
    assert outcome.histories, "the simulation explored nothing"
    return not outcome.deleted


def test_the_flattened_example_builds_like_the_seed(flat_repo: Path, kubectl: Kubectl) -> None:
    built = overlays_build(flat_repo, kubectl)
    assert "name: apps\n" in built["clusters/dev"] and "apps-wave" not in built["clusters/dev"]
    assert built["clusters/prod"].count("provider: sops") == 1
    # The same objects the example's waves build: the cutover's "nothing lost" check (here 51 objects).
    split = sorted(d for n in range(3) for d in documents(build_ok(kubectl, EXAMPLE / f"apps/wave-{n}")))
    assert documents(build_ok(kubectl, flat_repo / "apps")) == split and len(split) == 51


def test_step_1_only_releases_the_legacy_kustomization(
    flat_repo: Path, capsys: pytest.CaptureFixture[str], kubectl: Kubectl
) -> None:
    code, out = run(flat_repo, capsys, "apply", "--base", "HEAD", "--fix-overlays")
    assert code == 0
    assert out["changes"] == [{"action": "update", "path": "clusters/base/apps.yaml"}]
    diff = git(flat_repo, "diff", "--cached", "-U0", "--", "clusters/base/apps.yaml")  # apply stages it
    assert [line for line in diff.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")] == [
        "-  prune: true", "+  prune: false"]
    assert git(flat_repo, "status", "--porcelain").splitlines() == ["M  clusters/base/apps.yaml"]
    (step,) = by_code(out, "cutover-step-1")
    assert step["severity"] == "warning"
    assert "cutover step 1 of 2" in step["message"] and "according to the base revision" in step["message"]
    assert "step 2 splits the app tier into waves 0 to 2" in step["message"]
    assert "`kubectl -n flux-system get kustomization apps -o jsonpath='{.spec.prune}'` prints false" in step["message"]
    assert "flux get kustomization apps" in step["message"]
    assert ("kubectl -n nextcloud-db annotate cluster.postgresql.cnpg.io/nextcloud-db "
            "kustomize.toolkit.fluxcd.io/prune=disabled") in step["fix"].splitlines()
    assert "kubectl -n pihole annotate persistentvolumeclaim/pihole-data" in step["fix"]
    # The object and file the user acts on, how it is deployed, and what it would delete: the
    # example's 51 objects, of which its 13 Namespaces, 9 PVCs and 2 CNPG clusters hold data.
    assert (step["path"], step["resource"]) == (
        "clusters/base/apps.yaml", "kustomize.toolkit.fluxcd.io/Kustomization flux-system/apps")
    assert "flux-system/apps (clusters/base/apps.yaml:" in step["message"]
    assert "is deployed with prune: true (according to the base revision)" in step["message"]
    assert ("(51 object(s) here; the stateful ones: 13 Namespace, 9 PersistentVolumeClaim, "
            "2 postgresql.cnpg.io/Cluster)") in step["message"]
    assert step["message"].endswith("Optionally protect the stateful objects meanwhile with the commands in the fix")
    assert not [f for f in out["findings"] if f["severity"] == "error"]
    overlays_build(flat_repo, kubectl)
    # The PR already made step 1: nothing more to do, the report still says which step this is.
    code, again = run(flat_repo, capsys, "check", "--base", "HEAD")
    assert code == 0 and again["changes"] == [] and by_code(again, "cutover-step-1")


def test_step_1_shows_the_split_step_2_will_make_in_every_format(
    flat_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from support.rendered import assert_renders_as_intended, headings

    _, out = run(flat_repo, capsys, "plan", "--base", "HEAD")
    assert by_code(out, "cutover-step-1") and out["split"]["waves"] == [0, 1, 2]
    assert out["split"]["placement"]["2"] == ["apps/wave-2/seerr.yaml"]
    assert "apps/wave-0/plex.yaml" in out["split"]["placement"]["0"]
    capsys.readouterr()
    main(["plan", str(flat_repo), "--base", "HEAD"])
    text = capsys.readouterr().out
    assert "No ServiceDefinition" not in text
    table = text.split("The waves step 2 of the cutover will produce (this change moves nothing):\n", 1)[1]
    assert re.search(r"^2 +seerr +seerr.yaml$", table, flags=re.M) and re.search(r"^0 +gitea ", table, flags=re.M)
    main(["plan", str(flat_repo), "--base", "HEAD", "--format", "markdown"])
    markdown = capsys.readouterr().out
    spans = [t.content for t in assert_renders_as_intended(markdown) if t.type == "code_inline"]
    assert {"prune: false", "flux get kustomization apps",
            "kubectl -n flux-system get kustomization apps -o jsonpath='{.spec.prune}'"} <= set(spans)
    assert ("h4", "The waves step 2 of the cutover will produce (this change moves nothing)") in headings(markdown)
    assert "| 2 | `seerr` | `seerr.yaml` |" in markdown and "No ServiceDefinition" not in markdown
    graph = markdown.split("```mermaid\n", 1)[1]
    assert 'subgraph w2["wave 2"]' in graph and "w1 ==> w2" in graph


def test_without_base_the_work_tree_is_taken_as_deployed(flat_repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(flat_repo, capsys, "apply")
    assert code == 0 and out["changes"] == [{"action": "update", "path": "clusters/base/apps.yaml"}]
    (step,) = by_code(out, "cutover-step-1")
    assert "according to the work tree (no --base given, so it is taken as deployed)" in step["message"]


@pytest.mark.parametrize("policy", ["WaitForTermination", "Delete"])
def test_step_1_orphans_a_legacy_kustomization_whose_deletion_policy_always_prunes(
    flat_repo: Path, capsys: pytest.CaptureFixture[str], policy: str
) -> None:
    # With these policies the finalizer deletes everything whatever spec.prune says: only Orphan
    # releases the objects, so step 1 must change that line and tell the user to check that one.
    apps = flat_repo / "clusters/base/apps.yaml"
    apps.write_text(apps.read_text().replace("  prune: true\n", f"  prune: true\n  deletionPolicy: {policy}\n"))
    git(flat_repo, "commit", "-q", "-am", f"apps: deletionPolicy {policy}")
    code, out = run(flat_repo, capsys, "apply", "--base", "HEAD", "--fix-overlays")
    assert code == 0 and out["changes"] == [{"action": "update", "path": "clusters/base/apps.yaml"}]
    diff = git(flat_repo, "diff", "HEAD", "-U0", "--", "clusters/base/apps.yaml")
    # prune: false too: at step 2 the legacy may reconcile the split revision before the root deletes
    # it, and pruning then would delete every unit that moved (real Flux did on a real repository).
    assert [line for line in diff.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")] == [
        "-  prune: true", f"-  deletionPolicy: {policy}", "+  prune: false", "+  deletionPolicy: Orphan"]
    (step,) = by_code(out, "cutover-step-1")
    assert f"is deployed with prune: true and deletionPolicy: {policy}" in step["message"]
    assert "this change only sets `prune: false` and `deletionPolicy: Orphan` on it" in step["message"]
    assert "jsonpath='{.spec.deletionPolicy}'` prints Orphan" in step["message"]
    assert "jsonpath='{.spec.prune}'` prints false" in step["message"]


def test_a_release_line_wave_bot_cannot_edit_alone_is_an_input_error_naming_it(
    flat_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A quoted key is valid YAML, but editing it in place would need more than that line's value.
    apps = flat_repo / "clusters/base/apps.yaml"
    apps.write_text(apps.read_text().replace("  prune: true\n", '  "prune": true\n'))
    git(flat_repo, "commit", "-q", "-am", "apps: a quoted key")
    line = apps.read_text().splitlines().index('  "prune": true') + 1
    capsys.readouterr()
    assert main(["apply", str(flat_repo), "--base", "HEAD"]) == 2
    err = capsys.readouterr().err
    assert (f"clusters/base/apps.yaml:{line}: cannot set spec.prune: false on apps by editing one line\n"
            "  hint: set spec.prune: false by hand") in err, err
    assert git(flat_repo, "status", "--porcelain") == ""


@pytest.mark.parametrize(("released", "patched", "key", "value", "sets"), [
    ("  prune: false\n", "  prune: true\n", "prune", "false", "prune: true"),
    ("  prune: true\n  deletionPolicy: Orphan\n", "  deletionPolicy: Delete\n", "deletionPolicy", "Orphan",
     "its deletionPolicy"),
], ids=["prune", "deletionPolicy"])
def test_a_legacy_kustomization_an_overlay_patch_makes_delete_is_an_input_error_not_an_empty_step_1(
    flat_repo: Path, capsys: pytest.CaptureFixture[str], released: str, patched: str, key: str, value: str, sets: str
) -> None:
    # apps.yaml releases it, prod's patch file makes it delete again: prod deletes everything on
    # removal, and no edit of apps.yaml changes that.
    apps = flat_repo / "clusters/base/apps.yaml"
    apps.write_text(apps.read_text().replace("  prune: true\n", released))
    patch = flat_repo / "clusters/prod/patches/apps-sops.yaml"
    patch.write_text(patch.read_text().replace("spec:\n", "spec:\n" + patched, 1))
    git(flat_repo, "commit", "-q", "-am", "prod deletes apps' objects on removal")
    line = apps.read_text().splitlines().index(f"  {key}: {value}") + 1
    capsys.readouterr()
    assert main(["apply", str(flat_repo), "--base", "HEAD"]) == 2
    err = capsys.readouterr().err
    assert (f"clusters/base/apps.yaml:{line}: spec.{key} is already {value} here, yet apps deletes what it owns on "
            f"removal: an overlay's patch sets {sets} on it, which step 1 cannot release by editing this file\n"
            f"  hint: set spec.{key}: {value} in that patch (or drop spec.{key} from it), then run wave-bot "
            "again") in err
    assert git(flat_repo, "status", "--porcelain") == ""


@pytest.mark.parametrize("shared", [False, True, "outside-clusters"],
                         ids=["only-for-apps", "also-used-elsewhere", "also-used-outside-clusters"])
def test_step_2_deletes_a_patch_file_only_the_legacy_kustomization_used_however_it_is_aimed(
    flat_repo: Path, capsys: pytest.CaptureFixture[str], kubectl: Kubectl, shared: bool
) -> None:
    # prod aims its decryption file at apps with a target: unlisted once its entry goes, it goes too,
    # unless another entry names it (here one aimed at the platform Kustomization).
    entry = "  - path: patches/apps-sops.yaml\n"
    aimed = entry + "    target: {kind: Kustomization, name: apps}\n"
    if shared is True:
        aimed += entry + "    target: {kind: Kustomization, name: platform}\n"
    elif shared:  # a kustomization outside clusters/ (not an overlay's) names it too
        write_files(flat_repo, {"tools/kustomization.yaml": "resources: [../clusters/base]\npatches:\n"
                                "  - path: ../clusters/prod/patches/apps-sops.yaml\n"
                                "    target: {kind: Kustomization, name: platform}\n"})
    prod = flat_repo / "clusters/prod/kustomization.yaml"
    prod.write_text(prod.read_text().replace(entry, aimed))
    overlays_build(flat_repo, kubectl)
    git(flat_repo, "commit", "-q", "-am", "prod aims its patch file at apps")
    run(flat_repo, capsys, "apply", "--base", "HEAD")
    git(flat_repo, "commit", "-q", "-am", "step 1: release apps")
    code, out = run(flat_repo, capsys, "apply", "--base", "HEAD", "--fix-overlays")
    assert code == 0 and by_code(out, "cutover-step-2")
    deleted = [c["path"] for c in out["changes"] if c["action"] == "delete"]
    assert ("clusters/prod/patches/apps-sops.yaml" in deleted) is not bool(shared)
    assert (flat_repo / "clusters/prod/patches/apps-sops.yaml").exists() is bool(shared)
    overlays_build(flat_repo, kubectl)  # both still build: nothing names a file that is gone
    if shared == "outside-clusters":  # as kustomize-controller builds it: any file of the source
        outside = subprocess.run([installed_tool("kubectl"), "kustomize", "--load-restrictor", "LoadRestrictionsNone",
                                  str(flat_repo / "tools")], capture_output=True, text=True)
        assert outside.returncode == 0, outside.stderr


@pytest.mark.parametrize("policy", ["Orphan", "MirrorPrune"])
def test_a_legacy_kustomization_released_by_its_deletion_policy_goes_straight_to_step_2(
    flat_repo: Path, capsys: pytest.CaptureFixture[str], policy: str
) -> None:
    # Orphan releases whatever prune says; MirrorPrune follows prune (true here), so it needs step 1.
    apps = flat_repo / "clusters/base/apps.yaml"
    apps.write_text(apps.read_text().replace("  prune: true\n", f"  prune: true\n  deletionPolicy: {policy}\n"))
    git(flat_repo, "commit", "-q", "-am", f"apps: deletionPolicy {policy}")
    code, out = run(flat_repo, capsys, "apply", "--base", "HEAD", "--fix-overlays")
    assert code == 0
    if policy == "Orphan":
        assert by_code(out, "cutover-step-2") and not by_code(out, "cutover-step-1")
        assert not (flat_repo / "clusters/base/apps.yaml").exists()
    else:
        assert by_code(out, "cutover-step-1")
        assert out["changes"] == [{"action": "update", "path": "clusters/base/apps.yaml"}]
        assert "+  prune: false" in git(flat_repo, "diff", "HEAD", "-U0", "--", "clusters/base/apps.yaml").splitlines()


def test_step_2_splits_everything_once_step_1_is_deployed(
    flat_repo: Path, capsys: pytest.CaptureFixture[str], kubectl: Kubectl
) -> None:
    legacy = documents(build_ok(kubectl, flat_repo / "apps"))
    run(flat_repo, capsys, "apply", "--base", "HEAD")
    git(flat_repo, "commit", "-q", "-am", "step 1: release apps")
    assert deletes_nothing(flat_repo)
    base_before = (flat_repo / "clusters/base/kustomization.yaml").read_text()
    code, out = run(flat_repo, capsys, "apply", "--base", "HEAD", "--fix-overlays")
    assert code == 0
    (step,) = by_code(out, "cutover-step-2")
    assert "cutover step 2 of 2" in step["message"] and "flux get kustomizations" in step["fix"]
    # The verification commands run as written: a namespaced object with -n, a core kind without a
    # group, a cluster-scoped one without -n, and the label that shows a wave adopted the object.
    verify = step["fix"].splitlines()
    assert {"kubectl get cluster.postgresql.cnpg.io -n nextcloud-db nextcloud-db",
            "kubectl get persistentvolumeclaim -n pihole pihole-data", "kubectl get namespace pihole"} <= set(verify)
    assert re.fullmatch(r"kubectl( -n \S+)? get [a-z.]+/\S+ -o jsonpath='\{\.metadata\.labels\.kustomize\\\.toolkit"
                        r"\\\.fluxcd\\\.io/name\}'", verify[-1]), verify[-1]
    # The patch file only `apps` used goes with it (it would patch nothing).
    assert not (flat_repo / "clusters/prod/patches/apps-sops.yaml").exists()
    assert not [f for f in out["findings"] if f["severity"] == "error"], out["findings"]
    for gone in ("clusters/base/apps.yaml", "apps/kustomization.yaml"):
        assert not (flat_repo / gone).exists()
    assert not list((flat_repo / "apps").glob("*.yaml"))
    # The waves apply exactly what `apps` applied, byte for byte.
    waves = sorted((flat_repo / "apps").glob("wave-*"))
    assert [w.name for w in waves] == ["wave-0", "wave-1", "wave-2"]
    assert sorted(d for w in waves for d in documents(build_ok(kubectl, w))) == legacy
    built = overlays_build(flat_repo, kubectl)
    for overlay, text in built.items():
        assert "name: apps\n" not in text, overlay
        for n in range(3):
            wave = text.split(f"name: apps-wave-{n}\n", 1)[1].split("\n---", 1)[0]
            assert "provider: sops" in wave and "prune: true" in wave, (overlay, n)
    base = (flat_repo / "clusters/base/kustomization.yaml").read_text()
    assert "apps.yaml" not in base.replace("apps-wave-", "") and "- apps-wave-2.yaml" in base
    assert "# App tier, split into dependency-ordered WAVES." in base  # comments kept
    # Each wave's line, rewritten from the legacy one, says what that wave really depends on.
    assert [line for line in base.splitlines() if "-> ./apps/" in line] == [
        f"  - apps-wave-{n}.yaml # Flux Kustomization -> ./apps/wave-{n} (dependsOn {dep})"
        for n, dep in enumerate(["platform-config", "apps-wave-0", "apps-wave-1"])]
    # ... in the legacy line's place (cluster-vars.yaml still follows), nothing else changed.
    assert base == base_before.replace(APPS_ENTRY, "".join(
        f"  - apps-wave-{n}.yaml # Flux Kustomization -> ./apps/wave-{n} (dependsOn {dep})\n"
        for n, dep in enumerate(["platform-config", "apps-wave-0", "apps-wave-1"])))
    git(flat_repo, "add", "-A")
    git(flat_repo, "commit", "-q", "-m", "step 2: the split")
    assert deletes_nothing(flat_repo)
    # ... where the split merged over the still pruning `apps` (step 1 skipped) deletes what it applied.
    assert simulate(files_at(flat_repo, "HEAD~2"), files_at(flat_repo, "HEAD")).deleted
    code, after = run(flat_repo, capsys, "check", "--base", "HEAD~1")
    assert code == 0, [f for f in after["findings"] if f["severity"] == "error"]
    code, settled = run(flat_repo, capsys, "check", "--base", "HEAD")
    assert code == 0 and not by_code(settled, "cutover-step-2") and not by_code(settled, "cutover-step-1")


def test_step_2_without_fix_overlays_gives_the_snippets_and_still_builds(
    flat_repo: Path, capsys: pytest.CaptureFixture[str], kubectl: Kubectl
) -> None:
    run(flat_repo, capsys, "apply", "--base", "HEAD")
    git(flat_repo, "commit", "-q", "-am", "step 1: release apps")
    code, out = run(flat_repo, capsys, "apply", "--base", "HEAD")
    assert code == 0
    assert {f["wave"] for f in by_code(out, "missing-base-entry")} == {0, 1, 2}
    assert all("- apps-wave-" in f["fix"] for f in by_code(out, "missing-base-entry"))
    assert by_code(out, "missing-decryption")
    overlays_build(flat_repo, kubectl)


def test_the_split_keeps_what_apps_depended_on_and_writes_its_own_comments(
    flat_repo: Path, capsys: pytest.CaptureFixture[str], kubectl: Kubectl
) -> None:
    """A repository whose `apps` waits for `platform` (not the default root, platform-config), and whose
    base entry describes `apps`: wave 0 keeps waiting for `platform`, through step 2 and after it."""
    legacy = flat_repo / "clusters/base/apps.yaml"
    legacy.write_text(legacy.read_text().replace("- name: platform-config", "- name: platform"))
    base = flat_repo / "clusters/base/kustomization.yaml"
    own = "  - apps.yaml # Flux Kustomization -> ./apps (all app manifests)\n"
    base.write_text(base.read_text().replace(APPS_ENTRY, own))
    git(flat_repo, "commit", "-q", "-am", "apps waits for platform")
    run(flat_repo, capsys, "apply", "--base", "HEAD")
    git(flat_repo, "commit", "-q", "-am", "step 1: release apps")
    code, out = run(flat_repo, capsys, "apply", "--base", "HEAD", "--fix-overlays")
    assert code == 0, [f for f in out["findings"] if f["severity"] == "error"]
    built = build_ok(kubectl, flat_repo / "clusters/dev")
    wave0 = built.split("name: apps-wave-0\n", 1)[1].split("\n---", 1)[0]
    assert "dependsOn:\n  - name: platform\n" in wave0
    lines = [line for line in base.read_text().splitlines() if "apps-wave-" in line and line.startswith("  - ")]
    assert lines == ["  - apps-wave-0.yaml # Flux Kustomization -> ./apps/wave-0 (dependsOn platform)",
                     "  - apps-wave-1.yaml # Flux Kustomization -> ./apps/wave-1 (dependsOn apps-wave-0)",
                     "  - apps-wave-2.yaml # Flux Kustomization -> ./apps/wave-2 (dependsOn apps-wave-1)"]
    git(flat_repo, "add", "-A")
    git(flat_repo, "commit", "-q", "-m", "step 2: the split")
    code, settled = run(flat_repo, capsys, "check", "--base", "HEAD")
    assert code == 0 and settled["status"]["state"] == "up-to-date"
    assert "- name: platform\n" in (flat_repo / "clusters/base/apps-wave-0.yaml").read_text()


def test_a_plain_merge_of_the_split_is_still_an_error(flat_repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    git(flat_repo, "checkout", "-q", "-b", "naive")
    git(flat_repo, "rm", "-q", "clusters/base/apps.yaml")
    git(flat_repo, "commit", "-q", "-m", "drop apps")
    code, out = run(flat_repo, capsys, "plan", "--base", "main")
    (removed,) = by_code(out, "kustomization-removed")
    assert removed["severity"] == "error"


# ---- through the bot: `wave-bot run` on pull requests, as the runner runs it -----------------------


@pytest.fixture(params=["github", "gitea"])
def flat_scenario(request: pytest.FixtureRequest, flat_repo: Path, tmp_path: Path) -> Iterator[Scenario]:
    git(flat_repo, "push", "-q", "origin", "main")
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        server = SERVERS[request.param](rsps)
        yield Scenario(request.param, flat_repo.parent / "homelab-origin.git", flat_repo, tmp_path, server)


def test_the_bot_releases_first_and_splits_once_that_is_deployed(flat_scenario: Scenario, kubectl: Kubectl) -> None:
    s = flat_scenario
    s.pr_branch({"README.md": "Adopting wave-bot.\n"}, message="adopt wave-bot")
    env = {"INPUT_FIX-OVERLAYS": "true"}
    code, log = s.run(s.env(s.checkout("first")) | env)
    assert code == 0, log
    step_1 = git(s.origin, "rev-parse", BRANCH).strip()
    assert git(s.origin, "diff", "--name-only", f"{step_1}~1", step_1).split() == ["clusters/base/apps.yaml"]
    body = s.server.bodies()[-1].replace("\\", "")  # as GitHub renders the markdown's escapes
    assert "cutover step 1 of 2" in body and "then run wave-bot again" in body

    # A push to the PR before step 1 is deployed: still step 1, nothing more to commit.
    s.head_sha = step_1
    s.server.pulls[7]["head"]["sha"] = step_1
    code, log = s.run(s.env(s.checkout("again")) | env)
    assert code == 0, log
    assert git(s.origin, "rev-parse", BRANCH).strip() == step_1

    # Merged and reconciled: the next pull request's base releases `apps`, so the bot makes step 2.
    git(s.work, "fetch", "-q", "origin", BRANCH)
    git(s.work, "checkout", "-q", "main")
    git(s.work, "merge", "-q", "--ff-only", f"origin/{BRANCH}")
    git(s.work, "push", "-q", "origin", "main")
    s.pr_branch({"README.md": "Adopting wave-bot: step 2.\n"}, message="split the app tier")
    code, log = s.run(s.env(s.checkout("second")) | env)
    assert code == 0, log
    step_2 = git(s.origin, "rev-parse", BRANCH).strip()
    changed = git(s.origin, "diff", "--name-status", "--find-renames=100%", f"{step_2}~1", step_2)
    assert "D\tclusters/base/apps.yaml" in changed and "D\tapps/kustomization.yaml" in changed
    assert "R100\tapps/nextcloud-db.yaml\tapps/wave-0/nextcloud-db.yaml" in changed
    body = s.server.bodies()[-1].replace("\\", "")
    assert "cutover step 2 of 2" in body and "flux get kustomizations" in body
    result = s.checkout("built")
    git(result, "checkout", "-q", step_2)
    overlays_build(result, kubectl)


def test_a_dispatch_after_step_1_is_deployed_splits_the_branch(flat_scenario: Scenario) -> None:
    s = flat_scenario
    (s.work / "clusters/base/apps.yaml").write_text(
        (s.work / "clusters/base/apps.yaml").read_text().replace("prune: true", "prune: false"))
    git(s.work, "commit", "-q", "-am", "step 1, merged and deployed")
    git(s.work, "push", "-q", "origin", "HEAD:refs/heads/main")
    code, log = s.run(s.env(s.checkout(), event="workflow_dispatch") | {"INPUT_FIX-OVERLAYS": "true"})
    assert code == 0, log
    assert "Generated-by: flux-wave-bot" in s.origin_log("main")[0]
    tree = git(s.origin, "ls-tree", "-r", "--name-only", "main").split()
    assert "apps/wave-0/nextcloud-db.yaml" in tree and "clusters/base/apps.yaml" not in tree
    assert "cutover step 2 of 2" in (s.tmp / "summary.md").read_text().replace("\\", "")


# ---- the cutover runbook (docs/guides/cutover.md), run as written ------------------------------------


def runbook_commands(page: str) -> list[str]:
    """The shell lines of the docs page `page` (continuations joined, comments dropped)."""
    body = (PROJECT / "docs" / page).read_text()
    lines = []
    for block in re.findall(r"```sh\n(.*?)```", body, flags=re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = re.sub(r"\s+#.*$", "", line.strip())
            if line:
                lines.append(line)
    return lines


def test_the_cutover_runbook_works_as_written(flat_repo: Path, kubectl: Kubectl) -> None:
    """The git, wave-bot and kubectl kustomize lines of the section, on the flattened example with an
    origin; merging each step's branch stands for the pull request. `pip install` and the commands that
    need a live cluster (flux, kubectl get/annotate) are the user's."""
    git(flat_repo, "push", "-q", "origin", "main")
    git(flat_repo, "fetch", "-q", "origin")
    commands = runbook_commands("guides/cutover.md")
    # Installed outside the repository (pipx): nothing the runbook runs leaves a virtualenv in it.
    assert any(c.startswith("pipx install ") for c in commands) and any(c.startswith("flux get") for c in commands)
    assert not [c for c in commands if "venv" in c]
    tools = {"wave-bot": str(installed_tool("wave-bot")), "kubectl": str(installed_tool("kubectl"))}
    ran = []
    for command in commands:
        for part in command.split(" && "):
            argv = part.replace("> /dev/null", "").split()
            if argv[0] == "kubectl" and argv[1] != "kustomize" or argv[0] not in ("git", *tools):
                continue
            if argv[0] == "git" and argv[1] == "switch" and ran:  # the previous step's PR is merged
                git(flat_repo, "commit", "-q", "-am", "the previous step")
                git(flat_repo, "push", "-q", "origin", "HEAD:main")
                git(flat_repo, "fetch", "-q", "origin")
            result = subprocess.run([tools.get(argv[0], argv[0]), *argv[1:]], cwd=flat_repo, capture_output=True,
                                    text=True)
            assert result.returncode == 0, f"{part}: {result.stdout}{result.stderr}"
            ran.append(part)
    assert len([r for r in ran if "wave-bot apply" in r]) == 2 and any("kubectl kustomize" in r for r in ran)
    assert (flat_repo / "apps/wave-2/seerr.yaml").is_file() and not (flat_repo / "clusters/base/apps.yaml").exists()


def test_step_2_goes_ahead_beside_an_overlay_wave_bot_cannot_read(
    flat_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A linked kustomization: wave-bot never follows a link, so it neither reads nor builds staging
    # (overlay-not-checked); the lines for `apps` in the overlays it can read still go.
    (flat_repo / "clusters/staging").mkdir()
    (flat_repo / "clusters/staging/kustomization.yaml").symlink_to("../dev/kustomization.yaml")
    git(flat_repo, "add", "-A")
    git(flat_repo, "commit", "-q", "-m", "a staging overlay linked to dev's")
    run(flat_repo, capsys, "apply", "--base", "HEAD")
    git(flat_repo, "commit", "-q", "-am", "step 1: release apps")
    code, out = run(flat_repo, capsys, "apply", "--base", "HEAD", "--fix-overlays")
    assert code == 0 and by_code(out, "cutover-step-2")
    assert [f["path"] for f in by_code(out, "overlay-not-checked")] == ["clusters/staging/kustomization.yaml"]
    assert not (flat_repo / "clusters/base/apps.yaml").exists()
    assert "name: apps\n" not in (flat_repo / "clusters/dev/kustomization.yaml").read_text()


# ---- the legacy Kustomization as one document among others (issue 28, items 1 and 3) --------------

TIERS_HEAD = """# Both tiers above the platform, in one file.
---
# Cluster CRs whose CRDs `platform` installs.
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: platform-config
  namespace: flux-system
spec:
  dependsOn:
    - name: platform
  interval: 10m
  path: ./platform-config
  prune: true
  sourceRef:
    kind: GitRepository
    name: flux-system
"""
TIERS_APPS = """---
# The app tier: all of apps/.
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: apps
  namespace: flux-system
  labels:
    tier: apps
spec:
  interval: 30m # slower than the platform
  retryInterval: 2m
  timeout: 15m
  dependsOn:
    - name: platform-config
  path: ./apps
  prune: true
  wait: false
  sourceRef:
    kind: GitRepository
    name: flux-system
  healthChecks:
    - apiVersion: apps/v1
      kind: Deployment
      name: plex
      namespace: plex
  patches:
    - patch: |
        - op: add
          path: /metadata/labels/tier
          value: apps
      target:
        kind: Deployment
  postBuild:
    substitute:
      domain: example.org
"""
TIERS_TAIL = """---
# Kept last: a third document after the legacy one.
apiVersion: v1
kind: ConfigMap
metadata:
  name: tiers-note
  namespace: flux-system
data:
  note: the app tier sits between the two
"""


@pytest.fixture
def tiers_repo(flat_repo: Path) -> Path:
    """The flattened example with `apps` as the middle document of clusters/base/tiers.yaml (beside
    platform-config and a ConfigMap), with fields the built-in template does not have."""
    base = flat_repo / "clusters/base"
    (base / "tiers.yaml").write_text(TIERS_HEAD + TIERS_APPS + TIERS_TAIL)
    git(flat_repo, "rm", "-q", "clusters/base/apps.yaml", "clusters/base/platform-config.yaml")
    text = (base / "kustomization.yaml").read_text()
    text = re.sub(r"  - platform-config\.yaml[^\n]*\n", "  - tiers.yaml # platform-config and apps\n", text)
    (base / "kustomization.yaml").write_text(text.replace(APPS_ENTRY, ""))
    git(flat_repo, "add", "-A")
    git(flat_repo, "commit", "-q", "-m", "apps and platform-config in one file")
    return flat_repo


def flux_kustomizations(built: str) -> dict[str, dict[str, Any]]:
    from ruamel.yaml import YAML

    return {d["metadata"]["name"]: d for d in YAML(typ="safe").load_all(built)
            if d and d.get("kind") == "Kustomization" and d["apiVersion"].startswith("kustomize.toolkit")}


def test_the_cutover_edits_only_the_legacy_document_and_the_waves_copy_it(
    tiers_repo: Path, capsys: pytest.CaptureFixture[str], kubectl: Kubectl
) -> None:
    tiers = tiers_repo / "clusters/base/tiers.yaml"
    before = flux_kustomizations(build_ok(kubectl, tiers_repo / "clusters/dev"))
    assert {"apps", "platform-config"} <= set(before)
    code, out = run(tiers_repo, capsys, "apply", "--base", "HEAD", "--fix-overlays")
    assert code == 0 and by_code(out, "cutover-step-1")
    # Step 1: one line of the legacy document, every other byte kept.
    assert tiers.read_text() == TIERS_HEAD + TIERS_APPS.replace("  prune: true\n", "  prune: false\n") + TIERS_TAIL
    git(tiers_repo, "commit", "-q", "-am", "step 1: release apps")
    code, out = run(tiers_repo, capsys, "apply", "--base", "HEAD", "--fix-overlays")
    assert code == 0, [f for f in out["findings"] if f["severity"] == "error"]
    # Step 2: the legacy document goes; the file, its other documents, their comments and its base entry stay.
    assert tiers.read_text() == TIERS_HEAD + TIERS_TAIL
    base = (tiers_repo / "clusters/base/kustomization.yaml").read_text()
    assert "  - tiers.yaml # platform-config and apps\n" in base
    assert not by_code(out, "kustomization-removed")
    (step,) = by_code(out, "cutover-step-2")
    assert "each a copy of apps from clusters/base/tiers.yaml but for name, path and dependsOn" in step["message"]
    after = flux_kustomizations(build_ok(kubectl, tiers_repo / "clusters/dev"))
    assert "apps" not in after and after["platform-config"] == before["platform-config"]
    assert {name for name in before if name != "apps"} <= set(after)
    # Every wave is the legacy Kustomization but for name, path and dependsOn (and prunes again).
    from ruamel.yaml import YAML

    legacy = YAML(typ="safe").load(TIERS_APPS)
    names = [f"apps-wave-{n}" for n in range(3)]
    for n, name in enumerate(names):
        wave = YAML(typ="safe").load((tiers_repo / f"clusters/base/{name}.yaml").read_text())
        assert wave["metadata"] == {**legacy["metadata"], "name": name}
        strip = ("path", "dependsOn")
        assert {k: v for k, v in wave["spec"].items() if k not in strip} == {
            k: v for k, v in legacy["spec"].items() if k not in strip}
        assert wave["spec"]["dependsOn"] == ([{"name": "platform-config"}] if n == 0 else [{"name": names[n - 1]}])
        assert after[name]["spec"]["dependsOn"][0]["name"] in after  # it exists where Flux looks
    # The patch reads as the legacy wrote it: a literal block, not one quoted line.
    assert ("  patches:\n    - patch: |\n        - op: add\n          path: /metadata/labels/tier\n"
            in (tiers_repo / "clusters/base/apps-wave-0.yaml").read_text())
    build_ok(kubectl, tiers_repo / "clusters/prod")


def test_a_wave_that_would_depend_on_a_kustomization_the_repository_lacks_is_an_input_error(
    tiers_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tiers_repo / ".wave-bot.yaml").write_text(
        (tiers_repo / ".wave-bot.yaml").read_text() + "root_depends_on: [platform-configs]\n")
    git(tiers_repo, "commit", "-q", "-am", "a typo in the root")
    run(tiers_repo, capsys, "apply", "--base", "HEAD")
    git(tiers_repo, "commit", "-q", "-am", "step 1: release apps")
    before = snapshot(tiers_repo)
    capsys.readouterr()
    code = main(["apply", str(tiers_repo), "--base", "HEAD", "--fix-overlays"])
    err = capsys.readouterr().err
    assert code == 2 and snapshot(tiers_repo) == before
    assert "clusters/base/tiers.yaml" in err and "wave 0 would depend on platform-configs" in err
    assert "root_depends_on" in err


# ---- nothing the legacy applied is left behind (issue 28, item 2) ----------------------------------


def test_what_no_unit_holds_stays_applied_by_a_remainder_that_wave_0_depends_on(
    flat_repo: Path, capsys: pytest.CaptureFixture[str], kubectl: Kubectl
) -> None:
    # apps/ also applies a directory no declared unit is in (a platform piece living in the app tree).
    write_files(flat_repo, {
        "apps/infra/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
                                         "resources: [issuer.yaml]\n",
        "apps/infra/issuer.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: issuer\n"
                                  "  namespace: flux-system\n",
    })
    listing = flat_repo / "apps/kustomization.yaml"
    listing.write_text(listing.read_text() + "  - infra # the issuer, not an app\n")
    git(flat_repo, "add", "-A")
    git(flat_repo, "commit", "-q", "-m", "apps applies infra/ too")
    legacy = documents(build_ok(kubectl, flat_repo / "apps"))
    code, out = run(flat_repo, capsys, "apply", "--base", "HEAD", "--fix-overlays")
    assert code == 0
    (step_1,) = by_code(out, "cutover-step-1")
    assert "Outside the declared units apps applies 1 object(s): apps/infra/ (1 object(s)). Step 2 keeps them " \
           "applied by one more Flux Kustomization, apps-rest" in step_1["message"]
    git(flat_repo, "commit", "-q", "-am", "step 1: release apps")
    before = overlays_build(flat_repo, kubectl)
    code, out = run(flat_repo, capsys, "apply", "--base", "HEAD", "--fix-overlays")
    assert code == 0, out
    # apps/kustomization.yaml stays, comments and all, without the units that moved into waves.
    assert listing.read_text() == ("# The app tier: everything the `apps` Flux Kustomization applies.\n"
                                   "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n"
                                   "  - infra # the issuer, not an app\n")
    rest = (flat_repo / "clusters/base/apps-rest.yaml").read_text()
    from ruamel.yaml import YAML

    rest_doc, legacy_doc = YAML(typ="safe").load(rest), YAML(typ="safe").load(
        git(flat_repo, "show", "HEAD:clusters/base/apps.yaml"))
    assert rest_doc["metadata"] == {**legacy_doc["metadata"], "name": "apps-rest"}
    assert rest_doc["spec"] == {**legacy_doc["spec"], "prune": True, "path": "./apps"}  # dependsOn: the legacy's
    wave_0 = YAML(typ="safe").load((flat_repo / "clusters/base/apps-wave-0.yaml").read_text())
    assert wave_0["spec"]["dependsOn"] == [{"name": "apps-rest"}]
    base = (flat_repo / "clusters/base/kustomization.yaml").read_text()
    assert "  - apps-rest.yaml # Flux Kustomization -> ./apps (the rest of apps)\n" in base
    # What the remainder builds is what apps built, but the units: the issuer alone.
    built = documents(build_ok(kubectl, flat_repo / "apps"))
    assert built == [d for d in legacy if "name: issuer\n" in d] and len(built) == 1
    (step_2,) = by_code(out, "cutover-step-2")
    assert ("the rest stays applied by apps-rest (clusters/base/apps-rest.yaml, path ./apps, dependsOn what apps "
            "depended on; wave 0 depends on it), which builds apps/kustomization.yaml (apps's own, without the "
            "entries of what moved): infra") in step_2["message"]
    # Every overlay still builds, with apps-rest where apps was, and gives it what it gave apps (its
    # patch for apps aims at apps-rest: SOPS decryption in both); the next run changes nothing.
    after = overlays_build(flat_repo, kubectl)
    for overlay in after:
        assert "name: apps-rest\n" in after[overlay] and "name: apps\n" in before[overlay]
        rest_built = next(d for d in documents(after[overlay]) if "  name: apps-rest\n" in d)
        legacy_built = next(d for d in documents(before[overlay]) if "  name: apps\n" in d)
        assert "decryption:" in legacy_built and "decryption:" in rest_built
    assert "name: apps-rest" in (flat_repo / "clusters/prod/patches/apps-sops.yaml").read_text()
    git(flat_repo, "add", "-A")
    git(flat_repo, "commit", "-q", "-m", "step 2: the split")
    code, again = run(flat_repo, capsys, "apply", "--base", "HEAD", "--fix-overlays")
    assert code == 0 and again["changes"] == [] and not by_code(again, "cutover-step-2")


def test_a_split_that_would_change_what_flux_applies_is_refused_naming_the_first_difference(
    flat_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # apps/kustomization.yaml applies infra/ and patches plex's Deployment: once plex is in its wave,
    # the patch has nothing to patch, and the remainder does not build: what it applied would be
    # applied by nothing. The safety net refuses, naming the line, the tree unchanged.
    write_files(flat_repo, {
        "apps/infra/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
                                         "resources: [issuer.yaml]\n",
        "apps/infra/issuer.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: issuer\n"
                                  "  namespace: flux-system\n",
        "apps/plex-replicas.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: plex\n"
                                   "  namespace: plex\nspec:\n  replicas: 0\n",
    })
    listing = flat_repo / "apps/kustomization.yaml"
    listing.write_text(listing.read_text() + "  - infra\npatches:\n  - path: plex-replicas.yaml\n")
    apps = flat_repo / "clusters/base/apps.yaml"
    apps.write_text(apps.read_text().replace("prune: true", "prune: false"))
    git(flat_repo, "add", "-A")
    git(flat_repo, "commit", "-q", "-m", "apps applies infra/ and scales plex down; step 1 released it")
    before = snapshot(flat_repo)
    capsys.readouterr()
    code = main(["apply", str(flat_repo), "--base", "HEAD", "--fix-overlays"])
    err = capsys.readouterr().err
    assert code == 2 and snapshot(flat_repo) == before
    assert err.startswith("wave-bot: error: apps/plex-replicas.yaml:"), err
    assert ("after the split the Flux Kustomization apps-rest (cluster clusters/dev) would not build: patches[0]: no "
            "object in the build matches the strategic-merge patch for Deployment plex/plex") in err


# ---- never a layout that does not build (issue 28, items 4 and 5) ----------------------------------

DIR_LEGACY = {
    ".wave-bot.yaml": "dependencies:\n  web: []\n",
    "clusters/base/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
                                        "resources:\n  - apps.yaml\n",
    "clusters/base/apps.yaml": "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n"
                               "  name: apps\n  namespace: flux-system\nspec:\n  interval: 10m\n  path: ./apps\n"
                               "  prune: false\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n",
    "apps/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
                               "resources:\n  - web\n",
    "apps/web/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n  namespace: web\n",
    "components/common/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n"
                                            "labels:\n  - pairs:\n      team: web\n",
}


UNIT = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - config.yaml\n"


def test_a_units_reference_out_of_itself_is_rewritten_for_its_new_depth(
    make_repo: Any, capsys: pytest.CaptureFixture[str], kubectl: Kubectl
) -> None:
    # The unit's component is one level further up once the unit is in apps/wave-0/: that line changes.
    files = {**DIR_LEGACY, "apps/web/kustomization.yaml": UNIT + "components:\n  - ../../components/common\n"}
    repo = make_repo(files, name="unit-refers-out")
    before = kubectl(repo / "apps/web")
    assert before.returncode == 0, before.stderr
    capsys.readouterr()
    code = main(["apply", str(repo), "--base", "HEAD", "--fix-overlays"])
    assert code == 0, capsys.readouterr().err
    assert (repo / "apps/wave-0/web/kustomization.yaml").read_text() == (
        UNIT + "components:\n  - ../../../components/common\n")
    after = kubectl(repo / "apps/wave-0/web")
    assert after.returncode == 0 and after.stdout == before.stdout, after.stderr


def test_a_move_that_would_break_a_relative_reference_is_refused_naming_the_line(
    make_repo: Any, capsys: pytest.CaptureFixture[str], kubectl: Kubectl
) -> None:
    # A per-environment overlay of the unit: rewriting it would make the wave apply the unit twice.
    files = {**DIR_LEGACY, "apps/web/kustomization.yaml": UNIT,
             "staging/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
                                           "resources:\n  - ../apps/web\n"}
    repo = make_repo(files, name="overlay-refers-in")
    build_ok(kubectl, repo / "apps")
    before = snapshot(repo)
    capsys.readouterr()
    code = main(["apply", str(repo), "--base", "HEAD", "--fix-overlays"])
    err = capsys.readouterr().err
    assert code == 2 and snapshot(repo) == before, err
    assert err.startswith("wave-bot: error: staging/kustomization.yaml:4: resources entry ../apps/web builds on "
                          "apps/web, which this change moves into a wave (apps/wave-0/web)")
    assert "do not declare web as a unit while staging/ builds on it" in err
