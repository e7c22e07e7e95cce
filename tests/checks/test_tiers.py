"""Every tier converges: the dependsOn graph, CRD provenance and strict substitution, on copies of
examples/homelab as `wave-bot check` reports them."""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from bot.checks import tiers
from bot.checks.tiers import tier_findings
from bot.cli import main
from bot.config import Config
from bot.flux.applied import DependsOn, FluxKs, FluxModel, read_model
from bot.repo.git import GitTree
from bot.repo.worktree import FsTree
from bot.yamlio import documents as yamlio

from conftest import Kubectl, git, write_files
from support import fluxcrd, realrepos

FLUX = "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\n"


def tier(name: str, path: str, *deps: str, wait: bool = True, post: bool = True) -> str:
    """A Flux Kustomization in the example's shape."""
    text = FLUX + f"metadata:\n  name: {name}\n  namespace: flux-system\nspec:\n"
    if deps:
        text += "  dependsOn:\n" + "".join(f"    - name: {d}\n" for d in deps)
    text += (f"  interval: 10m\n  path: ./{path}\n  prune: true\n  wait: {'true' if wait else 'false'}\n"
             "  sourceRef:\n    kind: GitRepository\n    name: flux-system\n")
    if post:
        text += "  postBuild:\n    substituteFrom:\n      - kind: ConfigMap\n        name: cluster-vars\n"
    return text


def check(capsys: pytest.CaptureFixture[str], repo: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    code = main(["check", str(repo), "--format", "json", *extra])
    return code, json.loads(capsys.readouterr().out)


def found(report: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    return [f for f in report["findings"] if f["code"].startswith(prefix)]


def add_base_entry(repo: Path, name: str) -> None:
    kust = repo / "clusters/base/kustomization.yaml"
    kust.write_text(kust.read_text().replace("  - cluster-vars.yaml", f"  - {name}.yaml\n  - cluster-vars.yaml"))


def _list(repo: Path, directory: str, *files: str) -> None:
    write_files(repo, {f"{directory}/kustomization.yaml": "resources:\n" + "".join(f"  - {f}\n" for f in files)})


def test_the_example_has_nothing_above_info(capsys: pytest.CaptureFixture[str], example_repo: Path) -> None:
    code, report = check(capsys, example_repo)
    assert code == 0
    assert [f for f in report["findings"] if f["severity"] != "info"] == []


# ---- the dependsOn graph ---------------------------------------------------------------------------


def test_a_depends_on_that_names_nothing(capsys: pytest.CaptureFixture[str], example_repo: Path) -> None:
    config = example_repo / "clusters/base/platform-config.yaml"
    config.write_text(config.read_text().replace("- name: platform\n", "- name: platfrom\n"))
    code, report = check(capsys, example_repo)
    assert code == 1
    [finding] = found(report, "depends-on-")
    assert finding["code"] == "depends-on-missing" and finding["severity"] == "error"
    assert finding["path"] == "clusters/base/platform-config.yaml" and finding["line"] == 10
    assert "flux-system/platfrom" in finding["message"] and "did you mean 'platform'" in finding["message"]
    assert finding["fix"] == ("# in clusters/base/platform-config.yaml, the dependsOn entry of platform-config:\n"
                              "- name: platform\n")
    assert finding["message"].endswith("(on every entrypoint)")


def test_a_depends_on_like_no_tier_says_how_to_fix_it_without_a_guess(
        capsys: pytest.CaptureFixture[str], example_repo: Path) -> None:
    config = example_repo / "clusters/base/platform-config.yaml"
    config.write_text(config.read_text().replace("- name: platform\n", "- name: zzz\n"))
    code, report = check(capsys, example_repo)
    assert code == 1
    [finding] = found(report, "depends-on-")
    assert (finding["code"], finding["path"], finding["line"]) == (
        "depends-on-missing", "clusters/base/platform-config.yaml", 10)
    assert "did you mean" not in finding["message"]
    assert finding["fix"] == ("in clusters/base/platform-config.yaml, make the dependsOn entry of platform-config name "
                              "a Flux Kustomization this entrypoint applies, or add the missing one's file to the "
                              "entrypoint's resources")


def test_the_waves_own_chain_is_part_of_the_graph(capsys: pytest.CaptureFixture[str], example_repo: Path) -> None:
    # wave 0 dependsOn platform-config; without it in the base, wave 0 never starts.
    (example_repo / "clusters/base/platform-config.yaml").unlink()
    kust = example_repo / "clusters/base/kustomization.yaml"
    kust.write_text(kust.read_text().replace("  - platform-config.yaml", ""))
    code, report = check(capsys, example_repo)
    assert code == 1
    [finding] = found(report, "depends-on-")
    assert (finding["code"], finding["resource"], finding["wave"]) == ("depends-on-missing", "apps-wave-0", 0)
    assert finding["path"] == "clusters/base/apps-wave-0.yaml"


def test_a_cycle_names_every_edge(capsys: pytest.CaptureFixture[str], example_repo: Path) -> None:
    write_files(example_repo, {"clusters/base/platform.yaml": tier("platform", "platform", "platform-config")})
    code, report = check(capsys, example_repo)
    assert code == 1
    [finding] = found(report, "depends-on-")
    assert finding["code"] == "depends-on-cycle" and finding["severity"] == "error"
    message = finding["message"]
    assert "platform dependsOn platform-config (clusters/base/platform.yaml:8)" in message
    assert "platform-config dependsOn platform (clusters/base/platform-config.yaml:10)" in message
    # The finding sits at the ring's first edge: the first tier's dependsOn entry.
    assert message.startswith("dependsOn cycle platform -> platform-config -> platform: ")
    assert (finding["path"], finding["line"], finding["resource"]) == ("clusters/base/platform.yaml", 8, "platform")


def test_a_tier_that_depends_on_itself_is_a_cycle_of_one_edge(
        capsys: pytest.CaptureFixture[str], example_repo: Path) -> None:
    write_files(example_repo, {"clusters/base/platform.yaml": tier("platform", "platform", "platform")})
    code, report = check(capsys, example_repo)
    assert code == 1
    [finding] = found(report, "depends-on-")
    assert (finding["code"], finding["path"], finding["line"], finding["resource"]) == (
        "depends-on-cycle", "clusters/base/platform.yaml", 8, "platform")
    assert finding["message"].startswith("dependsOn cycle platform -> platform: each waits for the next to be Ready")


def test_a_kustomization_without_a_namespace_fails_the_whole_apply(
        capsys: pytest.CaptureFixture[str], example_repo: Path) -> None:
    platform = example_repo / "clusters/base/platform.yaml"
    platform.write_text(platform.read_text().replace("  namespace: flux-system\n", "", 1))
    code, report = check(capsys, example_repo)
    assert code == 1
    [finding] = found(report, "kustomization-namespace-missing")
    assert (finding["severity"], finding["path"], finding["resource"]) == (
        "error", "clusters/base/platform.yaml", "platform")
    assert finding["line"] == 1 + next(i for i, line in enumerate(platform.read_text().splitlines())
                                       if line.startswith("metadata:"))  # where the namespace goes
    assert "namespace not specified" in finding["message"] and "namespace: flux-system" in finding["fix"]
    # The entrypoint's kustomization setting the namespace is as good: kustomize writes it in.
    kust = example_repo / "clusters/base/kustomization.yaml"
    kust.write_text(kust.read_text() + "namespace: flux-system\n")
    code, report = check(capsys, example_repo)
    assert found(report, "kustomization-namespace-missing") == []


def test_a_depends_on_across_namespaces_must_name_the_namespace(
        capsys: pytest.CaptureFixture[str], example_repo: Path) -> None:
    platform = example_repo / "clusters/base/platform.yaml"
    platform.write_text(platform.read_text().replace("namespace: flux-system", "namespace: infra", 1))
    code, report = check(capsys, example_repo)
    assert code == 1
    [finding] = found(report, "depends-on-")
    assert finding["code"] == "depends-on-namespace" and finding["resource"] == "platform-config"
    assert "name: platform\n  namespace: infra" in finding["fix"]
    # With the namespace named, Flux finds it.
    config = example_repo / "clusters/base/platform-config.yaml"
    config.write_text(config.read_text().replace("- name: platform\n", "- name: platform\n      namespace: infra\n"))
    code, report = check(capsys, example_repo)
    assert found(report, "depends-on-") == []



# ---- CRD provenance --------------------------------------------------------------------------------

CDI_CR = "apiVersion: cdi.kubevirt.io/v1beta1\nkind: CDI\nmetadata:\n  name: cdi\nspec: {}\n"
PROFILE = ("apiVersion: cdi.kubevirt.io/v1beta1\nkind: StorageProfile\nmetadata:\n  name: longhorn\n"
           "spec:\n  claimPropertySets:\n    - accessModes: [ReadWriteMany]\n      volumeMode: Block\n")


def crd(group: str, kind: str) -> str:
    plural = f"{kind.lower()}s"
    return (f"apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n"
            f"  name: {plural}.{group}\nspec:\n  group: {group}\n  names: {{kind: {kind}, plural: {plural}}}\n"
            "  scope: Cluster\n  versions:\n"
            "    - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}\n")


def with_cdi_operator(repo: Path) -> None:
    """platform applies cdi-operator, which registers only cdis.cdi.kubevirt.io."""
    write_files(repo, {"platform/cdi-operator.yaml": crd("cdi.kubevirt.io", "CDI")})
    _list(repo, "platform", "cnpg-system.yaml", "cdi-operator.yaml")


def follow_split(repo: Path, fix: str) -> dict[str, Any]:
    """Do what a crd-same-pass-as-creator fix says, as a user reads it; the new Flux Kustomization."""
    create = re.match(r"# create (\S+) and list it in the resources: beside (\S+):\n", fix)
    assert create is not None, fix
    target, beside = create.groups()
    gate = re.search(r"^# and set spec.wait: true on \S+ \((\S+)\)", fix, flags=re.M)
    if gate is not None:
        gated = repo / gate.group(1)
        gated.write_text(gated.read_text().replace("wait: false", "wait: true"))
    new = fluxcrd.validate(yamlio.load(fix.encode(), "fix")[0].value)
    write_files(repo, {target: yamlio.dump(new).decode()})
    listing = repo / Path(target).parent / "kustomization.yaml"
    listing.write_text(listing.read_text().replace(f"  - {beside}", f"  - {Path(target).name}\n  - {beside}", 1))
    move = re.search(r"^# then move (.+) into \./(\S+)/, listed in a kustomization.yaml there and no longer in "
                     r"the resources: that list them now$", fix, flags=re.M)
    assert move is not None, fix
    files, directory = move.group(1).split(", "), repo / move.group(2)
    directory.mkdir()
    for name in files:
        (repo / name).rename(directory / Path(name).name)
        old = repo / Path(name).parent / "kustomization.yaml"
        old.write_text(old.read_text().replace(f"  - {Path(name).name}\n", ""))
    _list(repo, str(directory.relative_to(repo)), *(Path(n).name for n in files))
    return new


@pytest.mark.parametrize("gated", [True, False])
def test_a_second_order_crd_in_the_pass_of_its_creating_cr(
        capsys: pytest.CaptureFixture[str], example_repo: Path, kubectl: Kubectl, gated: bool) -> None:
    with_cdi_operator(example_repo)
    write_files(example_repo, {"platform-config/cdi.yaml": CDI_CR, "platform-config/cdi-storageprofiles.yaml": PROFILE,
                               "clusters/base/platform-config.yaml": tier("platform-config", "platform-config",
                                                                          "platform", wait=gated)})
    _list(example_repo, "platform-config", "storageclass-longhorn.yaml", "cdi.yaml", "cdi-storageprofiles.yaml")
    config = example_repo / "clusters/base/platform-config.yaml"
    config.write_text(config.read_text().replace("interval: 10m", "interval: 30m"))
    # kustomize itself puts the CR and the profile in one pass:
    built = {(d.value["kind"]) for d in yamlio.load(kubectl(example_repo / "platform-config").stdout.encode(), "out")}
    assert {"CDI", "StorageProfile"} <= built
    code, report = check(capsys, example_repo)
    assert code == 1
    [finding] = found(report, "crd-")
    assert (finding["code"], finding["severity"]) == ("crd-same-pass-as-creator", "error")
    assert finding["resource"] == "cdi.kubevirt.io/StorageProfile"
    assert (finding["path"], finding["line"]) == ("platform-config/cdi-storageprofiles.yaml", 1)
    assert "platform-config/cdi.yaml" in finding["message"]
    main(["check", str(example_repo), "--format", "markdown"])
    assert "platform-config" in tier_graph(capsys.readouterr().out)[2]
    # The fix as the issue describes it, followed as written: the profiles in a tier of their own,
    # Ready-gated after the CR's tier, reconciled as often as it.
    new = follow_split(example_repo, finding["fix"])
    assert new["metadata"]["name"] == "platform-config-cdi"
    assert new["spec"]["dependsOn"] == [{"name": "platform-config"}] and new["spec"]["wait"] is True
    assert (new["spec"]["path"], new["spec"]["interval"]) == ("./platform-config-cdi", "30m")
    assert new["spec"]["sourceRef"] == {"kind": "GitRepository", "name": "flux-system"}
    code, report = check(capsys, example_repo)
    assert found(report, "crd-") == [] and code == 0


@pytest.mark.parametrize(("creator", "created", "resource"), [
    ("apiVersion: kubevirt.io/v1\nkind: KubeVirt\nmetadata:\n  name: kubevirt\n",
     "apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata:\n  name: vm\n", "kubevirt.io/VirtualMachine"),
    ("apiVersion: templates.gatekeeper.sh/v1\nkind: ConstraintTemplate\nmetadata:\n  name: k8srequiredlabels\n"
     "spec:\n  crd:\n    spec:\n      names:\n        kind: K8sRequiredLabels\n",
     "apiVersion: constraints.gatekeeper.sh/v1beta1\nkind: K8sRequiredLabels\nmetadata:\n  name: owner\n",
     "constraints.gatekeeper.sh/K8sRequiredLabels"),
    ("apiVersion: apiextensions.crossplane.io/v1\nkind: CompositeResourceDefinition\nmetadata:\n"
     "  name: xdatabases.db.example.org\nspec:\n  group: db.example.org\n  names:\n    kind: XDatabase\n",
     "apiVersion: db.example.org/v1\nkind: XDatabase\nmetadata:\n  name: db\n", "db.example.org/XDatabase"),
    ("apiVersion: apiextensions.crossplane.io/v1\nkind: CompositeResourceDefinition\nmetadata:\n"
     "  name: xdatabases.db.example.org\nspec:\n  group: db.example.org\n  names:\n    kind: XDatabase\n"
     "  claimNames:\n    kind: Database\n",
     "apiVersion: db.example.org/v1\nkind: Database\nmetadata:\n  name: db\n  namespace: default\n",
     "db.example.org/Database"),
    ("apiVersion: pkg.crossplane.io/v1\nkind: Provider\nmetadata:\n  name: provider-aws-s3\n",
     "apiVersion: s3.aws.upbound.io/v1beta1\nkind: Bucket\nmetadata:\n  name: b\n", "s3.aws.upbound.io/Bucket"),
])
def test_the_built_in_second_order_table(creator: str, created: str, resource: str,
                                         capsys: pytest.CaptureFixture[str], example_repo: Path) -> None:
    kind = yamlio.load(creator.encode(), "creator")[0].value
    group = kind["apiVersion"].split("/")[0]
    write_files(example_repo, {"platform/operator.yaml": crd(group, kind["kind"]),
                               "platform-config/cr.yaml": creator, "platform-config/made.yaml": created})
    _list(example_repo, "platform", "cnpg-system.yaml", "operator.yaml")
    _list(example_repo, "platform-config", "storageclass-longhorn.yaml", "cr.yaml", "made.yaml")
    code, report = check(capsys, example_repo)
    assert [(f["code"], f["resource"]) for f in found(report, "crd-")] == [("crd-same-pass-as-creator", resource)]
    assert code == 1


def test_a_second_order_crd_after_an_ungated_creator_races(
        capsys: pytest.CaptureFixture[str], example_repo: Path) -> None:
    with_cdi_operator(example_repo)
    write_files(example_repo, {"platform-config/cdi.yaml": CDI_CR, "profiles/p.yaml": PROFILE,
                               "clusters/base/profiles.yaml": tier("profiles", "profiles", "platform-config"),
                               "clusters/base/platform-config.yaml": tier("platform-config", "platform-config",
                                                                          "platform", wait=False)})
    _list(example_repo, "platform-config", "storageclass-longhorn.yaml", "cdi.yaml")
    _list(example_repo, "profiles", "p.yaml")
    add_base_entry(example_repo, "profiles")
    code, report = check(capsys, example_repo)
    [finding] = found(report, "crd-")
    assert (finding["code"], finding["severity"]) == ("crd-not-ordered", "error")
    assert "not Ready-gated (no wait: true, no healthChecks)" in finding["message"]
    assert "whose CRD comes from platform-config (whose controller creates it)" in finding["message"]
    assert finding["fix"].endswith("wait: true\n")


WIDGET_CRD = crd("example.com", "Widget")
WIDGET = "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n"


def test_a_crd_from_a_tier_it_does_not_depend_on_races(capsys: pytest.CaptureFixture[str], example_repo: Path) -> None:
    write_files(example_repo, {"extras/crd.yaml": WIDGET_CRD, "platform-config/widget.yaml": WIDGET,
                               "clusters/base/extras.yaml": tier("extras", "extras", "platform")})
    _list(example_repo, "extras", "crd.yaml")
    _list(example_repo, "platform-config", "storageclass-longhorn.yaml", "widget.yaml")
    add_base_entry(example_repo, "extras")
    code, report = check(capsys, example_repo)
    assert code == 1
    [finding] = found(report, "crd-")
    assert (finding["code"], finding["resource"]) == ("crd-not-ordered", "example.com/Widget")
    assert (finding["path"], finding["line"]) == ("platform-config/widget.yaml", 1)
    assert "platform-config does not depend on extras" in finding["message"]
    deps = yamlio.load(finding["fix"].encode(), "fix")[0].value["dependsOn"]
    assert deps == [{"name": "platform"}, {"name": "extras"}]
    # The CRD in the same pass is fine: Flux applies CRDs first.
    write_files(example_repo, {"platform-config/crd.yaml": WIDGET_CRD})
    _list(example_repo, "platform-config", "storageclass-longhorn.yaml", "widget.yaml", "crd.yaml")
    code, report = check(capsys, example_repo)
    assert found(report, "crd-") == []


def test_a_race_fix_followed_as_written_orders_the_tiers(
        capsys: pytest.CaptureFixture[str], example_repo: Path) -> None:
    # The CRD's tier lives in another namespace and is not Ready-gated; the tier that races already
    # names its dependency's namespace.
    extras = tier("extras", "extras", wait=False).replace("namespace: flux-system", "namespace: infra")
    # a sourceRef without a namespace is looked up in the Kustomization's own (Flux's rule): name it
    extras = extras.replace("    name: flux-system\n", "    name: flux-system\n    namespace: flux-system\n")
    config = tier("platform-config", "platform-config").replace(
        "    - name: platform\n", "    - name: platform\n      namespace: flux-system\n")
    config = config.replace("spec:\n", "spec:\n  dependsOn:\n    - name: platform\n      namespace: flux-system\n", 1)
    write_files(example_repo, {"extras/crd.yaml": WIDGET_CRD, "platform-config/widget.yaml": WIDGET,
                               "clusters/base/extras.yaml": extras, "clusters/base/platform-config.yaml": config})
    _list(example_repo, "extras", "crd.yaml")
    _list(example_repo, "platform-config", "storageclass-longhorn.yaml", "widget.yaml")
    add_base_entry(example_repo, "extras")
    code, report = check(capsys, example_repo)
    [finding] = found(report, "crd-")
    fix = finding["fix"]
    head, wait = "# in clusters/base/platform-config.yaml, under spec: of platform-config\n", \
        "# and set spec.wait: true on infra/extras (clusters/base/extras.yaml)\n"
    assert fix.startswith(head) and fix.endswith(wait)
    deps = yamlio.load(fix.encode(), "fix")[0].value["dependsOn"]
    assert deps == [{"name": "platform", "namespace": "flux-system"}, {"name": "extras", "namespace": "infra"}]
    # As written: the dependsOn list replaces the tier's, and extras waits for what it applies.
    (example_repo / "clusters/base/platform-config.yaml").write_text(
        config.replace("  dependsOn:\n    - name: platform\n      namespace: flux-system\n",
                       "".join(f"  {row}\n" for row in yamlio.dump({"dependsOn": deps}).decode().splitlines())))
    (example_repo / "clusters/base/extras.yaml").write_text(extras.replace("wait: false", "wait: true"))
    code, report = check(capsys, example_repo)
    assert [f for f in report["findings"] if f["code"].startswith(("crd-", "depends-on"))] == []


def test_a_kind_without_a_known_source_is_reported_once(capsys: pytest.CaptureFixture[str], example_repo: Path) -> None:
    snapshot_class = ("apiVersion: snapshot.storage.k8s.io/v1\nkind: VolumeSnapshotClass\nmetadata:\n  name: {}\n"
                      "driver: driver.longhorn.io\ndeletionPolicy: Delete\n")
    write_files(example_repo, {"platform-config/a.yaml": snapshot_class.format("a"),
                               "platform-config/b.yaml": snapshot_class.format("b")})
    _list(example_repo, "platform-config", "storageclass-longhorn.yaml", "a.yaml", "b.yaml")
    code, report = check(capsys, example_repo)
    [finding] = found(report, "crd-")  # StorageClass is built in; snapshot.storage.k8s.io is not
    assert (finding["code"], finding["severity"]) == ("crd-source-unknown", "warning")
    assert finding["resource"] == "snapshot.storage.k8s.io/VolumeSnapshotClass"
    assert ("no tier applies a CRD for snapshot.storage.k8s.io/VolumeSnapshotClass (first used in platform-config/"
            "a.yaml)") in finding["message"] and ".wave-bot.yaml declares no source" in finding["message"]
    config = example_repo / ".wave-bot.yaml"
    config.write_text(config.read_text() + "  - kind: snapshot.storage.k8s.io/VolumeSnapshotClass\n"
                      "    kustomization: platform\n")
    code, report = check(capsys, example_repo)
    assert found(report, "crd-") == []


HELMRELEASE = """apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: {name}
  namespace: {name}
spec:
  interval: 1h
  chart:
    spec:
      chart: {chart}
      sourceRef:
        kind: HelmRepository
        name: charts
{install}"""


def _snapshot_classes(repo: Path, *extra: str) -> None:
    write_files(repo, {"platform-config/a.yaml": "apiVersion: snapshot.storage.k8s.io/v1\nkind: VolumeSnapshotClass\n"
                       "metadata:\n  name: a\ndriver: driver.longhorn.io\ndeletionPolicy: Delete\n"})
    _list(repo, "platform-config", "storageclass-longhorn.yaml", "a.yaml", *extra)


@pytest.mark.parametrize("chart", ["snapshot-controller", "oci://registry.example/charts/snapshot-controller"])
def test_a_kind_from_a_chart_a_tier_installs_is_not_unknown(chart: str, capsys: pytest.CaptureFixture[str],
                                                            example_repo: Path) -> None:
    """Git names the chart (a HelmRelease a tier applies), and the chart's name names the group."""
    write_files(example_repo, {"platform-config/hr.yaml": HELMRELEASE.format(name="snap", chart=chart, install="")})
    _snapshot_classes(example_repo, "hr.yaml")
    code, report = check(capsys, example_repo)
    assert found(report, "crd-") == []


def test_a_chart_that_skips_crds_or_names_another_group_serves_nothing(capsys: pytest.CaptureFixture[str],
                                                                       example_repo: Path) -> None:
    write_files(example_repo, {
        "platform-config/skip.yaml": HELMRELEASE.format(name="snap", chart="snapshot-controller",
                                                        install="  install:\n    crds: Skip\n"),
        "platform-config/other.yaml": HELMRELEASE.format(name="other", chart="storage-operator", install=""),
    })
    _snapshot_classes(example_repo, "skip.yaml", "other.yaml")
    code, report = check(capsys, example_repo)
    assert [f["resource"] for f in found(report, "crd-")] == ["snapshot.storage.k8s.io/VolumeSnapshotClass"]


def test_a_release_of_a_bootstrap_helmfile_serves_its_crds(capsys: pytest.CaptureFixture[str],
                                                           example_repo: Path) -> None:
    """A helmfile installs its releases, CRDs included, before Flux starts; a template is never run."""
    _snapshot_classes(example_repo)
    write_files(example_repo, {"bootstrap/helmfile.d/templates/values.yaml.gotmpl": "{{ .Release.Name }}: [\n"})
    code, report = check(capsys, example_repo)
    assert [f["resource"] for f in found(report, "crd-")] == ["snapshot.storage.k8s.io/VolumeSnapshotClass"]
    write_files(example_repo, {"bootstrap/helmfile.d/00-crds.yaml": "releases:\n  - name: snapshot-controller\n"
                               "    namespace: kube-system\n    chart: oci://registry.example/snapshot-controller\n"})
    code, report = check(capsys, example_repo)
    assert found(report, "crd-") == []


@pytest.mark.parametrize(("group", "charts", "served"), [
    ("cert-manager.io", ["cert-manager"], True),
    ("ceph.rook.io", ["rook-ceph"], True),
    ("externaldns.k8s.io", ["external-dns"], True),
    ("monitoring.coreos.com", ["kube-prometheus-stack"], True),
    ("postgresql.cnpg.io", ["cloudnative-pg"], True),
    ("fluxcd.controlplane.io", ["flux-operator"], True),
    ("monitoring.coreos.com", ["prometheus"], False),
    ("example.io", ["app-template"], False),
    ("stack.example.io", ["kube-stack"], False),  # generic words name no group
    ("snapshot.storage.k8s.io", ["storage-operator"], False),  # a word names only the first label
    ("acme.cert-manager.io", ["cert-manager"], True),
])
def test_which_chart_names_a_group(group: str, charts: list[str], served: bool) -> None:
    from bot.checks.crds import charted
    assert charted(group, charts) is served


def test_config_declares_second_order_kinds(capsys: pytest.CaptureFixture[str], example_repo: Path) -> None:
    write_files(example_repo, {"platform-config/op.yaml": "apiVersion: ops.example.com/v1\nkind: Operator\n"
                               "metadata:\n  name: op\n", "platform-config/widget.yaml": WIDGET})
    _list(example_repo, "platform-config", "storageclass-longhorn.yaml", "op.yaml", "widget.yaml")
    config = example_repo / ".wave-bot.yaml"
    config.write_text(config.read_text() + "  - kind: example.com/Widget\n    created_by: ops.example.com/Operator\n"
                      "  - kind: ops.example.com/Operator\n    kustomization: platform\n")
    code, report = check(capsys, example_repo)
    [finding] = found(report, "crd-")
    assert (finding["code"], finding["resource"]) == ("crd-same-pass-as-creator", "example.com/Widget")


@pytest.mark.parametrize(("entry", "message", "line"), [
    ("  - kind: Cluster\n    kustomization: platform\n", "'crd_sources[].kind' must be '<group>/<Kind>'", 20),
    ("  - kind: a.io/B\n", "must set exactly one of kustomization, created_by", 20),
    ("  - kind: a.io/B\n    kustomisation: platform\n", "unknown key 'kustomisation' in crd_sources", 21),
])
def test_a_malformed_crd_source(entry: str, message: str, line: int, capsys: pytest.CaptureFixture[str],
                                example_repo: Path) -> None:
    config = example_repo / ".wave-bot.yaml"
    config.write_text(config.read_text() + entry)
    assert main(["check", str(example_repo)]) == 2
    err = capsys.readouterr().err
    assert message in err and f".wave-bot.yaml:{line}:" in err


# ---- substitution ------------------------------------------------------------------------------------


def _use(repo: Path, expression: str) -> None:
    """Put `expression` in wave 0's pihole manifest."""
    pihole = repo / "apps/wave-0/pihole.yaml"
    pihole.write_text(pihole.read_text().replace('value: "${TIMEZONE}"', f'value: "{expression}"', 1))


def test_a_variable_defined_nowhere(capsys: pytest.CaptureFixture[str], example_repo: Path) -> None:
    _use(example_repo, "${BACKUP_BUCKET}")
    code, report = check(capsys, example_repo)
    assert code == 1
    [finding] = found(report, "substitution-")
    assert (finding["code"], finding["severity"], finding["resource"]) == ("substitution-unresolved", "error",
                                                                          "BACKUP_BUCKET")
    assert finding["path"] == "apps/wave-0/pihole.yaml" and finding["wave"] == 0
    rows = (example_repo / "apps/wave-0/pihole.yaml").read_text().splitlines()
    assert finding["line"] == next(n for n, row in enumerate(rows, 1) if "${BACKUP_BUCKET}" in row)
    assert "(on every entrypoint)" in finding["message"] and "strict mode" in finding["message"]
    assert "${BACKUP_BUCKET} in apps/wave-0/pihole.yaml (Deployment pihole/pihole)" in finding["message"]
    assert finding["fix"] == ("add BACKUP_BUCKET to the ConfigMap cluster-vars (clusters/base/cluster-vars.yaml), "
                              "or give it a default: ${BACKUP_BUCKET:=<value>}")


def cluster_vars(kubectl: Kubectl, root: Path) -> dict[str, str]:
    """The cluster-vars ConfigMap as real kustomize builds `root`."""
    docs = yamlio.load(kubectl(root).stdout.encode(), "kubectl output")
    return next(d.value["data"] for d in docs if d.value["metadata"]["name"] == "cluster-vars")


def test_a_variable_only_the_dev_overlay_defines(capsys: pytest.CaptureFixture[str], example_repo: Path,
                                                 kubectl: Kubectl) -> None:
    _use(example_repo, "${BACKUP_BUCKET}")
    dev = example_repo / "clusters/dev/kustomization.yaml"
    dev.write_text(dev.read_text().replace("        value: dev.home.example\n", "        value: dev.home.example\n"
                                           "      - op: add\n        path: /data/BACKUP_BUCKET\n        value: b\n"))
    assert "BACKUP_BUCKET" in cluster_vars(kubectl, example_repo / "clusters/dev")
    assert "BACKUP_BUCKET" not in cluster_vars(kubectl, example_repo / "clusters/prod")
    code, report = check(capsys, example_repo)
    [finding] = found(report, "substitution-")
    assert finding["overlay"] == "clusters/prod" and finding["message"].endswith("(on clusters/prod)")
    # Defined in the base ConfigMap, every overlay has it.
    base = example_repo / "clusters/base/cluster-vars.yaml"
    base.write_text(base.read_text() + "  BACKUP_BUCKET: b\n")
    code, report = check(capsys, example_repo)
    assert found(report, "substitution-") == [] and code == 0


@pytest.mark.parametrize(("expression", "needs"), [
    ("${BACKUP_BUCKET}", True),
    ("${#BACKUP_BUCKET}", True),
    ("${BACKUP_BUCKET^^}", True),
    ("${BACKUP_BUCKET,}", True),
    ("${BACKUP_BUCKET:1:2}", True),
    ("${BACKUP_BUCKET#s3://}", True),
    ("${BACKUP_BUCKET%/}", True),
    ("${BACKUP_BUCKET/a/b}", True),
    ("${BACKUP_BUCKET:=bucket}", False),
    ("${BACKUP_BUCKET:-bucket}", False),
    ("${BACKUP_BUCKET=bucket}", False),
    ("${BACKUP_BUCKET-bucket}", False),
    ("$BACKUP_BUCKET", False),
    ("$${BACKUP_BUCKET}", False),
    ("$$$${BACKUP_BUCKET}", False),
    ("$$${BACKUP_BUCKET}", True),
])
def test_the_substitution_grammar(expression: str, needs: bool, capsys: pytest.CaptureFixture[str],
                                  example_repo: Path) -> None:
    _use(example_repo, expression + "-${MARKER}")  # MARKER: always needed, so the check ran
    code, report = check(capsys, example_repo)
    assert sorted(f["resource"] for f in found(report, "substitution-")) == (
        ["BACKUP_BUCKET", "MARKER"] if needs else ["MARKER"])


def test_the_disabled_annotation_and_label(capsys: pytest.CaptureFixture[str], example_repo: Path) -> None:
    _use(example_repo, "${BACKUP_BUCKET}")
    pihole = example_repo / "apps/wave-0/pihole.yaml"
    text = pihole.read_text()
    code, report = check(capsys, example_repo)
    assert [f["resource"] for f in found(report, "substitution-")] == ["BACKUP_BUCKET"]
    deployment = "kind: Deployment\nmetadata:\n  name: pihole\n  namespace: pihole\n  labels:\n"
    assert deployment in text  # the label goes beside the ones it has: a second labels: key would be invalid
    disabled = "    kustomize.toolkit.fluxcd.io/substitute: disabled\n"
    annotated = text.replace(deployment, deployment.replace("  labels:\n", f"  annotations:\n{disabled}  labels:\n"))
    labelled = text.replace(deployment, deployment + disabled)
    for key, variant in (("annotations", annotated), ("labels", labelled)):
        pihole.write_text(variant)
        code, report = check(capsys, example_repo)
        assert (code, [f["resource"] for f in found(report, "substitution-")]) == (0, []), key


def test_a_tier_without_post_build_ships_the_variable_literally(
        capsys: pytest.CaptureFixture[str], example_repo: Path) -> None:
    write_files(example_repo, {"clusters/base/platform.yaml": tier("platform", "platform", post=False),
                               "platform/ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: x\n"
                                                   "  labels:\n    domain: ${CLUSTER_DOMAIN}\n"})
    _list(example_repo, "platform", "cnpg-system.yaml", "ns.yaml")
    code, report = check(capsys, example_repo)
    [finding] = found(report, "substitution-")
    assert (finding["code"], finding["severity"]) == ("substitution-without-postbuild", "warning")
    assert (finding["path"], finding["line"]) == ("platform/ns.yaml", 6)
    assert "${CLUSTER_DOMAIN} in platform/ns.yaml (Namespace x) reaches the cluster as written" in finding["message"]
    assert "postBuild:\n  substitute:\n    CLUSTER_DOMAIN: <value>" in finding["fix"]


def test_strict_substitution_off_makes_it_a_warning(capsys: pytest.CaptureFixture[str], example_repo: Path) -> None:
    _use(example_repo, "${BACKUP_BUCKET}")
    config = example_repo / ".wave-bot.yaml"
    config.write_text(config.read_text() + "strict_substitution: false\n")
    code, report = check(capsys, example_repo)
    [finding] = found(report, "substitution-")
    assert finding["severity"] == "warning" and "empty string" in finding["message"] and code == 0


def test_strict_substitution_must_be_a_boolean(capsys: pytest.CaptureFixture[str], example_repo: Path) -> None:
    config = example_repo / ".wave-bot.yaml"
    config.write_text(config.read_text() + "strict_substitution: 'no'\n")
    assert main(["check", str(example_repo)]) == 2
    assert "'strict_substitution' must be true or false" in capsys.readouterr().err


def test_sources_secrets_inline_and_optional(capsys: pytest.CaptureFixture[str], example_repo: Path) -> None:
    _use(example_repo, "${BACKUP_BUCKET}-${INLINE}")
    wave0 = example_repo / "clusters/base/apps-wave-0.yaml"
    text = wave0.read_text()
    # A SOPS-encrypted Secret keeps its key names in clear; an optional source may be absent.
    secret = ("apiVersion: v1\nkind: Secret\nmetadata:\n  name: backup\n  namespace: flux-system\nstringData:\n"
              "  BACKUP_BUCKET: ENC[AES256_GCM,data:abc,type:str]\nsops:\n  version: 3.9.0\n")
    write_files(example_repo, {"clusters/base/backup.sops.yaml": secret})
    add_base_entry(example_repo, "backup.sops")
    wave0.write_text(text.replace("        name: cluster-vars\n", "        name: cluster-vars\n"
                                  "      - kind: Secret\n        name: backup\n"
                                  "      - kind: ConfigMap\n        name: absent\n        optional: true\n"
                                  "    substitute:\n      INLINE: x\n"))
    code, report = check(capsys, example_repo)
    assert found(report, "substitution-") == []
    # A required source git does not hold: wave-bot cannot see its keys, and says so.
    wave0.write_text(wave0.read_text().replace("optional: true", "optional: false"))
    _use(example_repo, "${OTHER}")
    pihole = example_repo / "apps/wave-0/pihole.yaml"
    pihole.write_text(pihole.read_text().replace("${BACKUP_BUCKET}-${INLINE}", "${OTHER}"))
    code, report = check(capsys, example_repo)
    [finding] = found(report, "substitution-")
    assert (finding["code"], finding["severity"]) == ("substitution-source-missing", "warning")
    assert re.search(r"ConfigMap flux-system/absent.*OTHER", finding["message"])
    assert (finding["path"], finding["resource"], finding["wave"]) == (
        "clusters/base/apps-wave-0.yaml", "apps-wave-0", 0)
    main(["check", str(example_repo), "--format", "markdown"])
    assert "apps-wave-0" in tier_graph(capsys.readouterr().out)[2]  # the tier is marked in the comment's graph


def test_every_tier_code_is_in_the_table_of_what_each_finding_means() -> None:
    from bot.checks import crds, substitution, tiers

    readme = (Path(__file__).resolve().parent.parent.parent / "docs" / "explanation" / "checks.md").read_text()
    for code in (*tiers.CODES, *substitution.CODES, *crds.CODES):
        assert f"| `{code}` |" in readme, code


# ---- the reports -------------------------------------------------------------------------------------

TIER_STATEMENTS = [
    re.compile(r"flowchart BT"),
    re.compile(r'  [tm]\d+\["[A-Za-z0-9._/ ()-]+"\]'),
    re.compile(r"  [tm]\d+ --> t\d+"),
    re.compile(r"  classDef broken [a-z-]+:[#\w]+(?:,[a-z-]+:[#\w]+)*"),
    re.compile(r"  class [tm]\d+(?:,[tm]\d+)* broken"),
]


def tier_graph(markdown: str) -> tuple[dict[str, str], set[tuple[str, str]], set[str]]:
    """The tier graph of a report: id -> label, (dependency, dependent) edges, the highlighted ids; every
    line one of the statements the report emits, every id used defined."""
    (block,) = re.findall(r"<summary>Tier graph</summary>\n\n```mermaid\n(.*?)\n```", markdown, flags=re.S)
    for line in block.splitlines():
        assert any(s.fullmatch(line) for s in TIER_STATEMENTS), line
    labels = dict(re.findall(r'  ([tm]\d+)\["([^"]+)"\]', block))
    edges = set(re.findall(r"  ([tm]\d+) --> (t\d+)", block))
    marked = {i for m in re.findall(r"  class (\S+) broken", block) for i in m.split(",")}
    assert {i for e in edges for i in e} | marked <= set(labels)
    return labels, {(labels[a], labels[b]) for a, b in edges}, {labels[i] for i in marked}


def test_the_tiers_have_their_own_section_and_graph(capsys: pytest.CaptureFixture[str], example_repo: Path) -> None:
    assert main(["check", str(example_repo), "--format", "markdown"]) == 0
    assert "Tier graph" not in capsys.readouterr().out  # drawn only when a tier is wrong
    config = example_repo / "clusters/base/platform-config.yaml"
    config.write_text(config.read_text().replace("- name: platform\n", "- name: platfrom\n"))
    assert main(["check", str(example_repo), "--format", "markdown"]) == 1
    markdown = capsys.readouterr().out
    assert "#### Findings" not in markdown  # the only finding is a tier's
    tiers = markdown.split("#### Tiers", 1)[1]
    assert "`depends-on-missing`" in tiers.split("#### Waves", 1)[0]
    labels, edges, marked = tier_graph(markdown)
    assert ("platfrom (applied by no entrypoint)", "platform-config") in edges
    assert ("platform-config", "apps-wave-0") in edges and ("apps-wave-1", "apps-wave-2") in edges
    assert marked == {"platform-config", "platfrom (applied by no entrypoint)", "apps-wave-0"}  # + its CNPG race
    assert main(["check", str(example_repo)]) == 1
    text = capsys.readouterr().out
    assert "\nTiers (every Flux Kustomization each cluster entrypoint applies):\n" in text
    assert "depends-on-missing" in text.split("\nTiers (", 1)[1]


def test_a_tier_finding_says_in_every_format_which_line_to_fix(
        capsys: pytest.CaptureFixture[str], example_repo: Path) -> None:
    # The message names Kustomizations; the reader needs the file and line of the dependsOn entry.
    config = example_repo / "clusters/base/platform-config.yaml"
    text = config.read_text()
    config.write_text(text.replace("- name: platform\n", "- name: platfrom\n"))
    line = text[:text.index("- name: platform\n")].count("\n") + 1
    assert main(["check", str(example_repo)]) == 1
    assert f"depends-on-missing (clusters/base/platform-config.yaml:{line}):" in capsys.readouterr().out
    assert main(["check", str(example_repo), "--format", "markdown"]) == 1
    assert f"`depends-on-missing` in `clusters/base/platform-config.yaml:{line}`:" in capsys.readouterr().out


def test_the_comment_shows_what_the_change_introduces_first(
        capsys: pytest.CaptureFixture[str], example_repo: Path) -> None:
    _use(example_repo, "${OLD_VAR}")  # already broken at base
    git(example_repo, "commit", "-qam", "base with an unresolved variable")
    git(example_repo, "checkout", "-qb", "pr")
    config = example_repo / "clusters/base/platform-config.yaml"
    config.write_text(config.read_text().replace("- name: platform\n", "- name: platfrom\n"))
    git(example_repo, "commit", "-qam", "the PR: a typo")
    assert main(["check", str(example_repo), "--format", "markdown", "--base", "main"]) == 1
    tiers = capsys.readouterr().out.split("#### Tiers", 1)[1].split("#### Waves", 1)[0]
    new, old = tiers.split("**Already there before it**")
    assert "**Introduced by this change**" in new and "`depends-on-missing`" in new and "OLD" not in new
    assert "`substitution-unresolved`" in old and "OLD" in old
    code, report = check(capsys, example_repo, "--base", "main")
    findings = report["findings"]
    assert [findings[i]["code"] for i in report["tiers"]["already_at_base"]] == ["substitution-unresolved"]
    assert "depends-on-missing" in [findings[i]["code"] for i in report["tiers"]["introduced"]]


def test_the_bootstrap_kustomization_always_exists(capsys: pytest.CaptureFixture[str], example_repo: Path) -> None:
    # `flux bootstrap` creates flux-system/flux-system, which applies the entrypoint itself.
    write_files(example_repo, {"clusters/base/platform.yaml": tier("platform", "platform", "flux-system", "flux")})
    code, report = check(capsys, example_repo)
    assert [f["message"].split(",")[0] for f in found(report, "depends-on-")] == [
        "platform dependsOn flux-system/flux"]


def test_a_tier_wave_bot_cannot_build_is_said_not_guessed(
        capsys: pytest.CaptureFixture[str], example_repo: Path) -> None:
    oci = tier("remote", "deploy", "platform").replace("kind: GitRepository", "kind: OCIRepository")
    write_files(example_repo, {"clusters/base/plain.yaml": tier("plain", "plain", "platform"),
                               "plain/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n",
                               "clusters/base/remote.yaml": oci})
    add_base_entry(example_repo, "plain")
    add_base_entry(example_repo, "remote")
    code, report = check(capsys, example_repo)
    assert code == 0
    notes = {f["resource"]: f for f in found(report, "tier-not-checked")}
    assert set(notes) == {"remote"} and notes["remote"]["severity"] == "info"
    assert "its sourceRef is of kind OCIRepository" in notes["remote"]["message"]


def test_a_path_without_kustomization_is_checked_through_the_generated_one(
        capsys: pytest.CaptureFixture[str], example_repo: Path) -> None:
    # kustomize-controller generates a kustomization for ./plain: its pass is checked like any other
    write_files(example_repo, {"clusters/base/plain.yaml": tier("plain", "plain", "platform"),
                               "plain/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n"
                                                "  labels:\n    bucket: ${NOWHERE_DEFINED}\n"})
    add_base_entry(example_repo, "plain")
    code, report = check(capsys, example_repo)
    assert found(report, "tier-not-checked") == []
    assert [(f["code"], f["resource"], f["path"]) for f in found(report, "substitution-")] == [
        ("substitution-unresolved", "NOWHERE_DEFINED", "plain/cm.yaml")]


def test_a_tier_wave_bot_cannot_build_does_not_hide_the_tiers_after_it(
        capsys: pytest.CaptureFixture[str], example_repo: Path) -> None:
    _use(example_repo, "${BACKUP_BUCKET}")
    oci = tier("remote", "deploy").replace("kind: GitRepository", "kind: OCIRepository")
    write_files(example_repo, {"clusters/base/remote.yaml": oci})
    kust = example_repo / "clusters/base/kustomization.yaml"
    kust.write_text(kust.read_text().replace("  - flux-system.yaml", "  - remote.yaml\n  - flux-system.yaml"))
    code, report = check(capsys, example_repo)
    assert [f["resource"] for f in found(report, "tier-not-checked")] == ["remote"]
    assert [(f["code"], f["resource"]) for f in found(report, "substitution-")] == [
        ("substitution-unresolved", "BACKUP_BUCKET")]


def test_a_race_the_other_way_round_is_not_fixed_by_a_cycle(
        capsys: pytest.CaptureFixture[str], example_repo: Path) -> None:
    # platform-config applies Widget's CRD; platform (which platform-config depends on) applies a Widget.
    write_files(example_repo, {"platform-config/crd.yaml": WIDGET_CRD, "platform/widget.yaml": WIDGET})
    _list(example_repo, "platform-config", "storageclass-longhorn.yaml", "crd.yaml")
    _list(example_repo, "platform", "cnpg-system.yaml", "widget.yaml")
    code, report = check(capsys, example_repo)
    [finding] = found(report, "crd-")
    assert finding["code"] == "crd-not-ordered" and "platform-config depends on platform" in finding["message"]
    assert "dependsOn" not in finding["fix"] and finding["fix"].startswith("move what serves example.com/Widget")


# ---- the real repositories: entry directories without a kustomization are read too ---------------


def _real_model(archive: Path | None, tmp_path: Path) -> tuple[Path, FluxModel]:
    repo = realrepos.unpack(realrepos.require(archive), tmp_path / "repo")
    return repo, read_model(FsTree(str(repo)))


def _edge(model: FluxModel) -> tuple[FluxKs, DependsOn] | None:
    """A child Kustomization built from the repository, with a dependsOn entry on a sibling it can see."""
    for cluster in model.clusters:
        for ks in cluster.kustomizations:
            for dep in ks.depends_on:
                target = cluster.get(dep.key)
                if ks.evaluated and ks.parent is not None and target is not None and not ks.synthesized:
                    return ks, dep
    return None


@pytest.mark.parametrize("archive", realrepos.params(), ids=realrepos.archive_ids())
def test_a_depends_on_typo_in_a_real_repository_is_caught(archive: Path | None, tmp_path: Path) -> None:
    repo, model = _real_model(archive, tmp_path)
    found_edge = _edge(model)
    if found_edge is None:
        pytest.skip("no Kustomization built from this repository depends on another")
    ks, dep = found_edge
    lines = (repo / ks.file).read_text().splitlines(keepends=True)
    at = next(i for i in range(dep.line - 1, len(lines)) if f"name: {dep.name}" in lines[i])
    lines[at] = lines[at].replace(f"name: {dep.name}", f"name: {dep.name}x")
    (repo / ks.file).write_text("".join(lines))
    findings = [f for f in tier_findings(FsTree(str(repo)), Config()) if f.code == "depends-on-missing"]
    assert [(f.path, f.severity) for f in findings] == [(ks.file, "error")]
    assert f"did you mean '{dep.name}'?" in findings[0].message


@pytest.mark.parametrize("archive", realrepos.params(), ids=realrepos.archive_ids())
def test_a_renamed_directory_leaves_a_stale_path_that_is_an_error(archive: Path | None, tmp_path: Path) -> None:
    repo, model = _real_model(archive, tmp_path)
    children = [k for k in model.kustomizations() if k.evaluated and k.parent is not None and k.path
                and not any(o.path.startswith(f"{k.path}/") for p in model.kustomizations() if p.key == k.parent
                            for o in p.objects)]
    if not children:
        pytest.skip("no child Kustomization builds a directory its parent does not apply")
    ks = children[0]
    assert ks.path is not None
    realrepos.git(repo, "mv", ks.path, f"{ks.path}-renamed")
    findings = tiers.check(FsTree(str(repo)), Config(), base=GitTree(str(repo), "HEAD")).findings
    moved = [f for f in findings if f.code == "tier-path-moved"]
    assert [(f.path, f.severity, f.resource) for f in moved] == [(ks.file, "error", ks.title)]
    assert f"./{ks.path}" in moved[0].message


@pytest.mark.parametrize(("elsewhere", "fixed"), [(False, True), (True, False)], ids=["one-place", "two-places"])
def test_a_tier_path_moved_into_a_wave_names_where_it_went(
        capsys: pytest.CaptureFixture[str], example_repo: Path, elsewhere: bool, fixed: bool) -> None:
    # A directory of its own tier moves from directly under apps/ into wave 1: the tier's spec.path
    # is stale, and the fix names the one place the directory now is (none when two could be it).
    write_files(example_repo, {
        "clusters/base/tools.yaml": tier("tools", "apps/tools", "platform-config", post=False),
        "apps/tools/kustomization.yaml": "resources:\n  - cm.yaml\n",
        "apps/tools/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: tools\n  namespace: default\n"})
    add_base_entry(example_repo, "tools")
    git(example_repo, "add", "-A")
    git(example_repo, "commit", "-qm", "tools")
    git(example_repo, "mv", "apps/tools", "apps/wave-1/tools")
    if elsewhere:
        write_files(example_repo, {"apps/wave-2/tools/kustomization.yaml": "resources: []\n"})
    code, report = check(capsys, example_repo, "--base", "HEAD")
    assert code == 1
    [finding] = found(report, "tier-path-moved")
    # The error says why the tier's pass is not checked: no second finding says it again.
    assert [f for f in report["findings"] if f["code"] == "tier-not-checked" and f["resource"] == "tools"] == []
    text = (example_repo / "clusters/base/tools.yaml").read_text().splitlines()
    assert (finding["severity"], finding["path"], finding["resource"], finding["line"]) == (
        "error", "clusters/base/tools.yaml", "tools", 1 + text.index("  path: ./apps/tools"))
    assert ("its spec.path ./apps/tools is a directory at base, and this change moves it away"
            + (" (to ./apps/wave-1/tools):" if fixed else ":")) in finding["message"]
    fix = "# in clusters/base/tools.yaml:\nspec:\n  path: ./apps/wave-1/tools\n"
    assert finding.get("fix") == (fix if fixed else None)


@pytest.mark.parametrize(("source", "expected"), [
    ("    kind: GitRepository\n    name: flux-system\n", True),
    ("    kind: GitRepository\n    name: flux-system\n    namespace: flux-system\n", False),
    ("    kind: GitRepository\n    name: nowhere\n", False),
], ids=["in-another-namespace", "namespace-named", "no-such-source"])
def test_a_sourceref_without_a_namespace_is_looked_up_in_the_tiers_own(
        capsys: pytest.CaptureFixture[str], example_repo: Path, source: str, expected: bool) -> None:
    # The tier lives in namespace tools; the only GitRepository flux-system is in flux-system.
    text = tier("tools", "platform-config", "platform-config", post=False).replace(
        "  namespace: flux-system\n", "  namespace: tools\n").replace(
        "    kind: GitRepository\n    name: flux-system\n", source)
    write_files(example_repo, {"clusters/base/tools.yaml": text})
    add_base_entry(example_repo, "tools")
    _, report = check(capsys, example_repo)
    findings = found(report, "kustomization-source-namespace")
    if not expected:
        assert findings == []
        return
    [finding] = findings
    lines = text.splitlines()
    assert (finding["severity"], finding["path"], finding["line"], finding["resource"]) == (
        "error", "clusters/base/tools.yaml", 1 + lines.index("  sourceRef:"), "tools/tools")
    assert finding["message"].startswith(
        "tools/tools names its sourceRef GitRepository flux-system without a namespace, so Flux looks for it in tools, "
        "where there is none (it is in flux-system): tools/tools is never Ready")
    assert finding["fix"].endswith("sourceRef:\n    kind: GitRepository\n    name: flux-system\n    namespace: "
                                   "flux-system\n")
