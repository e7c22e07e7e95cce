"""Removing a wave end to end on the example: every intermediate state builds with `kubectl kustomize`."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bot.cli import main

from conftest import Kubectl, cluster_apps, git, service, snapshot, write_files


def run(repo: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    capsys.readouterr()
    code = main([args[0], str(repo), *args[1:], "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


def codes(out: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    for f in out["findings"]:
        found.setdefault(f["code"], []).append(f)
    return found


def builds(repo: Path, kubectl: Kubectl) -> None:
    for overlay in ("clusters/dev", "clusters/prod"):
        result = kubectl(repo / overlay)
        assert result.returncode == 0, result.stderr


def empty_wave_2(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The issue's flow: seerr drops its dependencies, is applied and merged: wave 2 is empty, still deployed."""
    (repo / "catalog/seerr.yaml").write_text(service("seerr"))
    code, out = run(repo, capsys, "apply", "--base", "HEAD", "--fix-overlays")
    assert code == 0
    (emptied,) = codes(out)["wave-emptied"]
    assert emptied["wave"] == 2 and emptied["severity"] == "warning"
    assert "resources: []" in (repo / "apps/wave-2/kustomization.yaml").read_text()
    assert "kustomization-removed" not in codes(out)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "seerr: no dependencies")


def test_an_emptied_wave_goes_with_its_base_entry_and_overlay_patches(
    example_repo: Path, capsys: pytest.CaptureFixture[str], kubectl: Kubectl
) -> None:
    empty_wave_2(example_repo, capsys)
    builds(example_repo, kubectl)
    # Deployed: now the empty wave goes, and every line that refers to it.
    code, out = run(example_repo, capsys, "apply", "--base", "HEAD", "--fix-overlays")
    assert code == 0
    (removed,) = codes(out)["wave-removed"]
    assert "removes the lines that refer to it: clusters/base/kustomization.yaml:16" in removed["message"]
    for path in ("apps/wave-2/kustomization.yaml", "clusters/base/apps-wave-2.yaml"):
        assert not (example_repo / path).exists()
    assert "apps-wave-2" not in (example_repo / "clusters/base/kustomization.yaml").read_text()
    assert "name: apps-wave-2" not in (example_repo / "clusters/dev/kustomization.yaml").read_text()
    assert "apps-wave-2-sops.yaml" not in (example_repo / "clusters/prod/kustomization.yaml").read_text()
    assert (example_repo / "clusters/prod/patches/apps-wave-2-sops.yaml").exists()  # not wave-bot's file
    assert removed["message"].endswith("clusters/prod/patches/apps-wave-2-sops.yaml is no longer used; wave-bot did "
                                       "not write it, so delete it yourself")
    # The comment above the wave entries stays, so do the other waves' patches.
    assert "# a new deepest wave appears (wave-bot flags it)." in (
        example_repo / "clusters/base/kustomization.yaml").read_text()
    assert "name: apps-wave-1" in (example_repo / "clusters/dev/kustomization.yaml").read_text()
    builds(example_repo, kubectl)
    git(example_repo, "add", "-A")
    git(example_repo, "commit", "-q", "-m", "remove wave 2")
    # The PR as a whole (base: before wave 2 was removed) has no error and no contradiction.
    code, out = run(example_repo, capsys, "check", "--base", "HEAD~1")
    assert code == 0, [f for f in out["findings"] if f["severity"] == "error"]
    assert "kustomization-removed" not in codes(out)


def test_the_patch_files_a_removed_wave_leaves_unused_are_named_for_the_user_to_delete(
    example_repo: Path, capsys: pytest.CaptureFixture[str], kubectl: Kubectl
) -> None:
    # prod patches wave 2 from two files: their lines go with the wave, the files (not wave-bot's) stay.
    timeout = example_repo / "clusters/prod/patches/apps-wave-2-timeout.yaml"
    timeout.write_text("apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n"
                       "  name: apps-wave-2\n  namespace: flux-system\nspec:\n  timeout: 10m\n")
    prod = example_repo / "clusters/prod/kustomization.yaml"
    prod.write_text(prod.read_text() + "  - path: patches/apps-wave-2-timeout.yaml\n")
    git(example_repo, "add", "-A")
    git(example_repo, "commit", "-q", "-m", "prod: a second patch file for wave 2")
    empty_wave_2(example_repo, capsys)
    code, out = run(example_repo, capsys, "apply", "--base", "HEAD", "--fix-overlays")
    assert code == 0
    (removed,) = codes(out)["wave-removed"]
    assert removed["message"].endswith(
        "clusters/prod/patches/apps-wave-2-sops.yaml, clusters/prod/patches/apps-wave-2-timeout.yaml are no longer "
        "used; wave-bot did not write them, so delete them yourself")
    assert "apps-wave-2" not in prod.read_text() and timeout.exists()
    builds(example_repo, kubectl)


def test_a_wave_that_holds_a_manifest_again_is_kept(
    example_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Empty at base, but the change puts a manifest of no service in it: deleting the wave would
    # leave that file in a directory nothing applies.
    empty_wave_2(example_repo, capsys)
    write_files(example_repo, {"apps/wave-2/extra.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n"
                                                         "  name: extra\n  namespace: default\n"})
    code, out = run(example_repo, capsys, "apply", "--base", "HEAD", "--fix-overlays")
    assert code == 0 and "wave-removed" not in codes(out)
    assert (example_repo / "clusters/base/apps-wave-2.yaml").exists()
    assert "extra.yaml" in (example_repo / "apps/wave-2/kustomization.yaml").read_text()


def test_without_fix_overlays_the_wave_stays_until_its_lines_are_deleted(
    example_repo: Path, capsys: pytest.CaptureFixture[str], kubectl: Kubectl
) -> None:
    empty_wave_2(example_repo, capsys)
    before = snapshot(example_repo)
    code, out = run(example_repo, capsys, "apply", "--base", "HEAD")
    assert code == 0 and snapshot(example_repo) == before  # nothing half-removed
    (removable,) = codes(out)["wave-removable"]
    assert "clusters/base/kustomization.yaml:16 `- apps-wave-2.yaml # Flux Kustomization" in removable["message"]
    assert "clusters/prod/kustomization.yaml:" in removable["fix"]
    # It points at the first line to delete (the base entry), names the Flux Kustomization kept, and
    # says the two ways out: delete the lines, or let --fix-overlays delete them.
    assert (removable["path"], removable["line"]) == ("clusters/base/kustomization.yaml", 16)
    assert removable["resource"] == "kustomize.toolkit.fluxcd.io/Kustomization flux-system/apps-wave-2"
    assert ("Delete those items (or run `wave-bot apply --fix-overlays`); the next apply then deletes apps/wave-2/ "
            "and clusters/base/apps-wave-2.yaml") in removable["message"]
    assert "wave-removed" not in codes(out) and "kustomization-removed" not in codes(out)
    builds(example_repo, kubectl)


def test_the_contradiction_check_catches_what_it_claims() -> None:
    from bot.model import Change, Finding

    from support.contradictions import contradictions

    removed = Finding("wave-removed", "info", "owns nothing", wave=3, resource="K apps-wave-3")
    assert contradictions([removed, Finding("kustomization-removed", "error", "deletes", resource="K apps-wave-3")])
    assert contradictions([removed, Finding("wave-emptied", "warning", "kept", wave=3)])
    assert not contradictions([removed, Finding("wave-emptied", "warning", "kept", wave=2)])
    step1 = Finding("cutover-step-1", "warning", "nothing moves")
    assert contradictions([step1], [Change("move", "apps/wave-0/a.yaml", source="apps/a.yaml")])
    import bot.plan

    assert bot.plan.make_plan.__name__ == "checked"  # every plan of the suite goes through the check


CLUSTER_APPS = cluster_apps("""    - patch: |
        apiVersion: kustomize.toolkit.fluxcd.io/v1
        kind: Kustomization
        metadata:
          name: apps-wave-2
          namespace: flux-system
        spec:
          timeout: 10m
""")


def flux_build(repo: Path, kubectl: Kubectl) -> Any:
    """What kustomize-controller builds for cluster-apps: ./clusters/base with its spec.patches appended."""
    emulated = repo / "emulated"
    emulated.mkdir(exist_ok=True)
    patches = CLUSTER_APPS.split("  patches:\n", 1)[1]
    (emulated / "kustomization.yaml").write_text("resources:\n  - ../clusters/base\npatches:\n" + patches)
    try:
        return kubectl(emulated)
    finally:
        (emulated / "kustomization.yaml").unlink()
        emulated.rmdir()


@pytest.mark.parametrize("fix", [[], ["--fix-overlays"]])
def test_a_flux_kustomizations_own_patch_for_the_wave_keeps_it_and_is_quoted(
    example_repo: Path, capsys: pytest.CaptureFixture[str], kubectl: Kubectl, fix: list[str]
) -> None:
    # kustomize-controller appends cluster-apps' spec.patches to the base's build: with apps-wave-2
    # gone, its inline patch names nothing and the build of cluster-apps fails, so the wave stays.
    (example_repo / "clusters/dev/cluster-apps.yaml").write_text(CLUSTER_APPS)
    dev = example_repo / "clusters/dev/kustomization.yaml"
    dev.write_text(dev.read_text().replace("  - ../base\n", "  - ../base\n  - cluster-apps.yaml\n", 1))
    git(example_repo, "add", "-A")
    git(example_repo, "commit", "-q", "-m", "a Flux Kustomization patching apps-wave-2 itself")
    empty_wave_2(example_repo, capsys)
    before = snapshot(example_repo)
    code, out = run(example_repo, capsys, "apply", "--base", "HEAD", *fix)
    assert code == 0 and "wave-removed" not in codes(out)
    assert snapshot(example_repo) == before  # nothing half-removed
    (removable,) = codes(out)["wave-removable"]
    line = CLUSTER_APPS.splitlines().index("    - patch: |") + 1
    assert (f"clusters/dev/cluster-apps.yaml:{line} `- patch: |` (spec.patches[0] of the Flux Kustomization "
            "cluster-apps)") in removable["message"]
    assert ("Delete those items (wave-bot does not edit a Flux Kustomization's own spec.patches, so `--fix-overlays` "
            "leaves the wave in place); the next apply then deletes apps/wave-2/") in removable["message"]
    assert "clusters/base/kustomization.yaml:16" in removable["message"]  # the other lines are still quoted
    # Why it must stay: without apps-wave-2 in the base, kustomize refuses cluster-apps' patch.
    assert flux_build(example_repo, kubectl).returncode == 0
    base = example_repo / "clusters/base/kustomization.yaml"
    base.write_text("".join(line for line in base.read_text().splitlines(keepends=True) if "apps-wave-2" not in line))
    failed = flux_build(example_repo, kubectl)
    assert failed.returncode != 0 and "apps-wave-2" in failed.stderr


REGEX_PATCH = """  - target:
      kind: Kustomization
      name: apps-wave-.*
    patch: |
      - op: add
        path: /spec/decryption
        value: {provider: sops, secretRef: {name: sops-age}}
"""


@pytest.mark.parametrize("dev", ["a patch per wave", "one regex patch"])
def test_two_empty_waves_go_in_one_change_with_exactly_their_lines(
    example_repo: Path, capsys: pytest.CaptureFixture[str], kubectl: Kubectl, dev: str
) -> None:
    # Several items leave the same list in one change: each removal must not shift the next one
    # onto a neighbour (base kustomization: cluster-vars.yaml follows the wave entries).
    from test_deletes import add_wave

    def one_regex_patch() -> None:
        path = example_repo / "clusters/dev/kustomization.yaml"
        text = path.read_text()
        path.write_text(text[:text.index("  # SOPS decryption")] + REGEX_PATCH)

    wired = ("clusters/base/kustomization.yaml", "clusters/dev/kustomization.yaml", "clusters/prod/kustomization.yaml")
    before = {path: (example_repo / path).read_text() for path in wired}
    add_wave(example_repo, 3)
    add_wave(example_repo, 4)
    if dev == "one regex patch":
        one_regex_patch()
        before["clusters/dev/kustomization.yaml"] = (example_repo / "clusters/dev/kustomization.yaml").read_text()
    git(example_repo, "add", "-A")
    git(example_repo, "commit", "-q", "-m", "two empty waves, deployed")
    code, out = run(example_repo, capsys, "apply", "--base", "HEAD", "--fix-overlays")
    assert code == 0
    assert sorted(f["wave"] for f in codes(out)["wave-removed"]) == [3, 4]
    assert {path: (example_repo / path).read_text() for path in wired} == before
    for n in (3, 4):
        assert not (example_repo / f"apps/wave-{n}").exists()
        assert not (example_repo / f"clusters/base/apps-wave-{n}.yaml").exists()
    builds(example_repo, kubectl)


def test_an_overlay_wave_bot_cannot_read_does_not_stop_the_wave_removal(
    example_repo: Path, capsys: pytest.CaptureFixture[str], kubectl: Kubectl
) -> None:
    # A linked kustomization: wave-bot never follows a link, so it neither reads nor builds staging,
    # yet staging may build the base: an overlay it cannot check. The wave still goes with the lines
    # of the overlays wave-bot can read.
    (example_repo / "clusters/staging").mkdir()
    (example_repo / "clusters/staging/kustomization.yaml").symlink_to("../dev/kustomization.yaml")
    git(example_repo, "add", "-A")
    git(example_repo, "commit", "-q", "-m", "a staging overlay linked to dev's")
    empty_wave_2(example_repo, capsys)
    code, out = run(example_repo, capsys, "apply", "--base", "HEAD", "--fix-overlays")
    assert code == 0
    (removed,) = codes(out)["wave-removed"]
    assert "removes the lines that refer to it: clusters/base/kustomization.yaml:16" in removed["message"]
    assert not (example_repo / "apps/wave-2").exists()
    (unchecked,) = codes(out)["overlay-not-checked"]
    assert unchecked["path"] == "clusters/staging/kustomization.yaml"
    builds(example_repo, kubectl)


def test_a_flux_kustomizations_patch_for_the_wave_after_one_it_cannot_read_still_keeps_it(
    example_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # spec.patches[0] is no patch kustomize-controller accepts (the overlay checks report it): the
    # patch after it, for apps-wave-2, still refers to the wave, which must stay.
    broken = "    - target:\n        kind: Deployment\n      patch: 5\n"
    (example_repo / "clusters/dev/cluster-apps.yaml").write_text(
        cluster_apps(broken + CLUSTER_APPS.split("  patches:\n")[1]))
    dev = example_repo / "clusters/dev/kustomization.yaml"
    dev.write_text(dev.read_text().replace("  - ../base\n", "  - ../base\n  - cluster-apps.yaml\n", 1))
    git(example_repo, "add", "-A")
    git(example_repo, "commit", "-q", "-m", "a broken patch, then one for apps-wave-2")
    empty_wave_2(example_repo, capsys)
    before = snapshot(example_repo)
    code, out = run(example_repo, capsys, "apply", "--base", "HEAD", "--fix-overlays")
    assert code == 0 and "wave-removed" not in codes(out) and snapshot(example_repo) == before
    (removable,) = codes(out)["wave-removable"]
    assert ("clusters/dev/cluster-apps.yaml:17 `- patch: |` (spec.patches[1] of the Flux Kustomization cluster-apps)"
            in removable["message"])


FLOW_BASE = ("resources: [flux-system.yaml, platform.yaml, platform-config.yaml, apps-wave-0.yaml, apps-wave-1.yaml, "
             "apps-wave-2.yaml, cluster-vars.yaml]")


@pytest.mark.parametrize("fix", [[], ["--fix-overlays"]])
def test_a_wave_in_a_flow_style_list_on_the_first_line_is_quoted_as_written(
    example_repo: Path, capsys: pytest.CaptureFixture[str], fix: list[str]
) -> None:
    # wave-bot removes no item of a flow-style list, so the wave stays and the line is quoted, even
    # the file's very first one.
    (example_repo / "clusters/base/kustomization.yaml").write_text(FLOW_BASE + "\n")
    git(example_repo, "commit", "-q", "-am", "the base in flow style")
    empty_wave_2(example_repo, capsys)
    before = snapshot(example_repo)
    code, out = run(example_repo, capsys, "apply", "--base", "HEAD", *fix)
    assert code == 0 and snapshot(example_repo) == before
    (removable,) = codes(out)["wave-removable"]
    assert (removable["path"], removable["line"]) == ("clusters/base/kustomization.yaml", 1)
    assert f"clusters/base/kustomization.yaml:1 `{FLOW_BASE}` (resource apps-wave-2.yaml)" in removable["message"]
    assert removable["fix"].splitlines()[0] == f"clusters/base/kustomization.yaml:1: {FLOW_BASE}"
    # the way out it names is one that works: not the --fix-overlays that just left the line
    assert ("Delete those items by hand (`--fix-overlays` removes no item of a flow-style list, `[a, b]`)" if fix
            else "Delete those items (or run `wave-bot apply --fix-overlays`)") in removable["message"]


def test_a_wave_the_change_deletes_outright_is_not_said_to_be_kept(
    example_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # seerr leaves the repository with wave 2's files: nothing keeps wave 2, so the finding is the
    # deletion of its Flux Kustomization (which prunes), not wave-emptied's "wave-bot keeps it".
    git(example_repo, "rm", "-rq", "apps/wave-2", "catalog/seerr.yaml", "clusters/base/apps-wave-2.yaml")
    base = example_repo / "clusters/base/kustomization.yaml"
    base.write_text("".join(line for line in base.read_text().splitlines(keepends=True) if "apps-wave-2" not in line))
    code, out = run(example_repo, capsys, "apply", "--base", "HEAD")
    assert code == 0 and not (example_repo / "apps/wave-2").exists()
    assert [f["resource"] for f in codes(out)["kustomization-removed"]] == [
        "kustomize.toolkit.fluxcd.io/Kustomization flux-system/apps-wave-2"]
    assert "wave-emptied" not in codes(out)


def test_once_the_app_tier_is_empty_and_deployed_every_wave_goes(
    example_repo: Path, capsys: pytest.CaptureFixture[str], kubectl: Kubectl
) -> None:
    # No unit is left, so no wave is the deepest: all three are beyond it, and each owns nothing.
    git(example_repo, "rm", "-rq", "catalog", *(str(p.relative_to(example_repo))
                                                 for p in (example_repo / "apps").glob("wave-*/*")))
    for n in range(3):
        (example_repo / f"apps/wave-{n}").mkdir(parents=True, exist_ok=True)
        (example_repo / f"apps/wave-{n}/kustomization.yaml").write_text("resources: []\n")
    (example_repo / "catalog").mkdir()
    (example_repo / "catalog/.keep").write_text("")
    (example_repo / ".wave-bot.yaml").write_text("root_depends_on: [platform-config]\n")
    git(example_repo, "add", "-A")
    git(example_repo, "commit", "-q", "-m", "an empty app tier, deployed")
    code, out = run(example_repo, capsys, "apply", "--base", "HEAD", "--fix-overlays")
    assert code == 0
    assert sorted(f["wave"] for f in codes(out)["wave-removed"]) == [0, 1, 2]
    assert not list((example_repo / "apps").glob("wave-*")) and "- apps-wave-" not in (
        example_repo / "clusters/base/kustomization.yaml").read_text()
    builds(example_repo, kubectl)


# ---- cutover step 2 leaves nothing behind: the remainder and the safety net (issue 28, 2 and 3) -------

MONOLITH_KS = (
    "# The whole cluster: one Kustomization for ./kubernetes.\n"
    "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: repositories\n"
    "  namespace: flux-system\nspec:\n  interval: 1h\n  path: ./repositories\n  prune: true\n"
    "  sourceRef:\n    kind: GitRepository\n    name: flux-system\n"
    "---\n"
    "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: cluster-apps\n"
    "  namespace: flux-system\n  labels:\n    tier: apps\nspec:\n  interval: 30m\n  path: ./kubernetes\n"
    "  prune: false  # released: step 1 is deployed\n  wait: true\n  dependsOn:\n    - name: repositories\n"
    "  sourceRef:\n    kind: GitRepository\n    name: flux-system\n"
)


def configmap(name: str, namespace: str) -> str:
    return f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {namespace}\n"


def monolith_repo(make_repo: Any, extra: dict[str, str] | None = None) -> Path:
    """A billimek-shaped monolith: `cluster-apps` (beside another document in its file) applies all of
    ./kubernetes, which has no kustomization (Flux generates one). Two apps in a grouping folder are
    declared; a loose file, the folder's Namespace and an infrastructure directory with its own
    kustomization are in no unit."""
    return make_repo({
        ".wave-bot.yaml": "apps_dir: kubernetes\nbase_dir: cluster\ndependencies:\n  plex: []\n  sonarr: [plex]\n",
        "cluster/cluster.yaml": MONOLITH_KS,
        "repositories/helm.yaml": configmap("charts", "flux-system"),
        "kubernetes/default/plex/plex.yaml": configmap("plex", "default"),
        "kubernetes/default/plex/config/settings.yaml": configmap("plex-settings", "default"),
        "kubernetes/default/sonarr/sonarr.yaml": configmap("sonarr", "default"),
        "kubernetes/default/namespace.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: default\n",
        "kubernetes/cluster-settings.yaml": configmap("cluster-settings", "flux-system"),
        "kubernetes/infra/cert-manager/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\n"
                                                            "kind: Kustomization\nresources:\n  - issuer.yaml\n",
        "kubernetes/infra/cert-manager/issuer.yaml": configmap("issuer", "cert-manager"),
        "kubernetes/infra/cert-manager/unlisted.yaml": configmap("unlisted", "cert-manager"),
        **(extra or {}),
    })


def ids(built: str) -> list[tuple[str, str, str]]:
    import yaml

    return sorted((d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"])
                  for d in yaml.safe_load_all(built) if d)


def test_step_2_keeps_what_no_unit_holds_applied_by_a_remainder_that_wave_0_depends_on(
    make_repo: Any, capsys: pytest.CaptureFixture[str], kubectl: Kubectl, tmp_path: Path
) -> None:
    repo = monolith_repo(make_repo)
    # What cluster-apps applies, as the controller builds ./kubernetes without a kustomization:
    # every YAML file, infra/cert-manager/ as its own build (so unlisted.yaml is not applied).
    generated = tmp_path / "generated"
    import shutil

    shutil.copytree(repo / "kubernetes", generated)
    write_files(generated, {"kustomization.yaml": "resources:\n  - cluster-settings.yaml\n  - default/namespace.yaml\n"
                            "  - default/plex/config/settings.yaml\n  - default/plex/plex.yaml\n"
                            "  - default/sonarr/sonarr.yaml\n  - infra/cert-manager\n"})
    legacy = ids(kubectl(generated).stdout)
    assert len(legacy) == 6
    code, out = run(repo, capsys, "apply", "--base", "HEAD", "--fix-overlays")
    assert code == 0
    # The remainder's listing: the rest of what the controller generated, the units and waves left out.
    assert (repo / "kubernetes/kustomization.yaml").read_text().endswith(
        "resources:\n  - cluster-settings.yaml\n  - default/namespace.yaml\n  - infra/cert-manager\n")
    rest = kubectl(repo / "kubernetes")
    assert rest.returncode == 0, rest.stderr
    units = [("ConfigMap", "default", "plex"), ("ConfigMap", "default", "plex-settings"),
             ("ConfigMap", "default", "sonarr")]
    assert ids(rest.stdout) == [i for i in legacy if i not in units]
    waves = [i for n in (0, 1) for i in ids(kubectl(repo / f"kubernetes/wave-{n}").stdout)]
    assert sorted(waves + ids(rest.stdout)) == legacy  # every object once
    # Its Flux Kustomization: cluster-apps's document but for name and path (its own) and dependsOn.
    import yaml

    old = list(yaml.safe_load_all(MONOLITH_KS))[1]
    doc = yaml.safe_load((repo / "cluster/cluster-apps-rest.yaml").read_text())
    assert doc["metadata"] == {**old["metadata"], "name": "cluster-apps-rest"}
    assert doc["spec"] == {**old["spec"], "prune": True}
    wave_0 = yaml.safe_load((repo / "cluster/apps-wave-0.yaml").read_text())
    assert wave_0["spec"]["dependsOn"] == [{"name": "cluster-apps-rest"}]
    # The legacy's file keeps its other document, byte for byte.
    assert (repo / "cluster/cluster.yaml").read_text() == MONOLITH_KS.split("---\n")[0]
    (step,) = codes(out)["cutover-step-2"]
    assert ("into kubernetes/wave-0/ (apps-wave-0): plex; into kubernetes/wave-1/ (apps-wave-1): sonarr; the rest "
            "stays applied by cluster-apps-rest (cluster/cluster-apps-rest.yaml, path ./kubernetes") in step["message"]
    assert "cluster-settings.yaml, default/namespace.yaml, infra/cert-manager" in step["message"]
    assert not [f for f in out["findings"] if f["severity"] == "error"]
    # Merged, the next run is the steady state: the remainder is no legacy to cut over again.
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "step 2")
    code, again = run(repo, capsys, "apply", "--base", "HEAD", "--fix-overlays")
    assert code == 0 and again["changes"] == [] and "cutover-step-2" not in codes(again)
    assert run(repo, capsys, "check", "--base", "HEAD")[0] == 0


def test_the_remainder_never_takes_a_name_the_repository_uses(
    make_repo: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    taken = MONOLITH_KS.split("---\n")[0].replace("name: repositories", "name: cluster-apps-rest")
    repo = monolith_repo(make_repo, {"cluster/cluster.yaml": MONOLITH_KS.replace(
        "name: repositories", "name: cluster-apps-rest")})
    code, _ = run(repo, capsys, "apply", "--base", "HEAD", "--fix-overlays")
    assert code == 0
    import yaml

    doc = yaml.safe_load((repo / "cluster/cluster-apps-rest-2.yaml").read_text())
    assert doc["metadata"]["name"] == "cluster-apps-rest-2"
    assert doc["spec"]["dependsOn"] == [{"name": "cluster-apps-rest"}]
    assert (repo / "cluster/cluster.yaml").read_text() == taken


def test_without_anything_outside_the_units_there_is_no_remainder(
    make_repo: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = monolith_repo(make_repo)
    git(repo, "rm", "-rq", "kubernetes/infra", "kubernetes/cluster-settings.yaml", "kubernetes/default/namespace.yaml")
    git(repo, "commit", "-qm", "only the apps")
    code, out = run(repo, capsys, "apply", "--base", "HEAD", "--fix-overlays")
    assert code == 0
    assert not (repo / "kubernetes/kustomization.yaml").exists() and not (repo / "cluster/cluster-apps-rest.yaml"
                                                                          ).exists()
    assert "dependsOn:\n    - name: repositories\n" in (repo / "cluster/apps-wave-0.yaml").read_text()
    (step,) = codes(out)["cutover-step-2"]
    assert "nothing else: every part of cluster-apps's tree is in a unit" in step["message"]


def test_a_split_that_would_change_what_flux_applies_is_refused_naming_the_first_difference(
    make_repo: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    # kubernetes/kustomization.yaml puts everything it lists into `media`: once plex and sonarr are in
    # their waves nothing does, so Flux would apply other objects (default/plex, not media/plex).
    repo = monolith_repo(make_repo, {
        "kubernetes/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
                                         "namespace: media\nresources:\n  - cluster-settings.yaml\n"
                                         "  - default/plex/plex.yaml\n  - default/plex/config/settings.yaml\n"
                                         "  - default/sonarr/sonarr.yaml\n",
    })
    before = snapshot(repo)
    capsys.readouterr()
    code = main(["apply", str(repo), "--base", "HEAD", "--fix-overlays"])
    err = capsys.readouterr().err
    assert code == 2 and snapshot(repo) == before
    assert err.startswith("wave-bot: error: kubernetes/wave-0/default/plex/plex.yaml:1: the split would apply "
                          "ConfigMap default/plex (cluster cluster) 1 time(s), 0 before"), err
