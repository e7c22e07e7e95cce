"""Cutover step 2 through grouping folders and relative references (bot/checks/grouping.py).

Each repository is small and real: a git repository in tmp_path whose legacy `apps` Kustomization
step 1 has released (`prune: false`), so `apply --base HEAD` makes the split; what Flux applies
before and after is built with `kubectl kustomize`, never taken from wave-bot.
"""
from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.cli import main

from conftest import Kubectl, deployment, git, snapshot

KUSTOMIZE = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
COMPONENT = "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n"
FLUX = "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\n"


def legacy(path: str) -> str:
    return (f"{FLUX}metadata:\n  name: apps\n  namespace: flux-system\nspec:\n  interval: 1h\n  path: {path}\n"
            "  prune: false\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n")


def child(name: str, path: str, extra: str = "") -> str:
    """A child Flux Kustomization without metadata.namespace (its group's kustomization gives it one)."""
    return (f"---\n# {name}: the app's own Kustomization\n{FLUX}metadata:\n  name: {name}\nspec:\n{extra}"
            f"  interval: 1h\n  path: {path}  # where the app is\n  prune: true\n  sourceRef:\n"
            "    kind: GitRepository\n    name: flux-system\n    namespace: flux-system\n  targetNamespace: team\n")


def base(config: str, apps: str = "./apps") -> dict[str, str]:
    return {
        ".wave-bot.yaml": config,
        "clusters/base/kustomization.yaml": KUSTOMIZE + "resources:\n  - apps.yaml\n",
        "clusters/base/apps.yaml": legacy(apps),
    }


def run(repo: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any], str]:
    capsys.readouterr()
    code = main(["apply", str(repo), "--base", "HEAD", "--fix-overlays", "--format", "json"])
    captured = capsys.readouterr()
    return code, json.loads(captured.out) if code == 0 else {}, captured.err


def built(kubectl: Kubectl, directory: Path) -> list[dict[str, Any]]:
    out = kubectl(directory)
    assert out.returncode == 0, out.stderr
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def applied(repo: Path, kubectl: Kubectl, roots: list[str]) -> Counter[str]:
    """Every object (as built, in full) that `roots` and the Flux Kustomizations they build apply, once per
    application: what the cluster gets from these entry points, children followed through spec.path."""
    seen: Counter[str] = Counter()
    todo = list(roots)
    while todo:
        for doc in built(kubectl, repo / todo.pop()):
            if doc["kind"] == "Kustomization" and doc["apiVersion"].startswith("kustomize.toolkit"):
                todo.append(doc["spec"]["path"])
                doc = {**doc, "spec": {k: v for k, v in doc["spec"].items() if k not in ("path", "components")}}
            seen[yaml.safe_dump(doc, sort_keys=True)] += 1
    return seen


def flux_roots(repo: Path) -> list[str]:
    """The spec.path of every Flux Kustomization in clusters/base: the waves and what else applies the tier."""
    out = []
    for path in sorted((repo / "clusters/base").glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and doc.get("kind") == "Kustomization" and doc["apiVersion"].startswith("kustomize.toolkit"):
                out.append(doc["spec"]["path"])
    return out


GROUPED = {
    "apps/team/kustomization.yaml": KUSTOMIZE + "namespace: team\n\ncomponents:\n  - ../../components/shared\n"
                                    "  - ../../components/labels\n\nresources:\n  - ./namespace.yaml\n"
                                    "  - ./web/ks.yaml\n  - ./api/ks.yaml\n",
    "apps/team/namespace.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team\n",
    "apps/team/web/ks.yaml": child("web", "./apps/team/web/app"),
    "apps/team/web/app/kustomization.yaml": KUSTOMIZE + "resources:\n  - deploy.yaml\n",
    "apps/team/web/app/deploy.yaml": deployment("web", "team"),
    # Flux's spec.components are relative to spec.path: the move makes them one level deeper too
    "apps/team/api/ks.yaml": child("api", "./apps/team/api/app",
                                   "  components:\n    - ../../../../components/extra\n"),
    "apps/team/api/app/kustomization.yaml": KUSTOMIZE + "resources:\n  - deploy.yaml\n",
    "apps/team/api/app/deploy.yaml": deployment("api", "team"),
    # adds a Secret to the group: it must stay applied once, where it is
    "components/shared/kustomization.yaml": COMPONENT + "resources:\n  - secret.yaml\n",
    "components/shared/secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: shared\n",
    # only transforms: it must still reach the units
    "components/labels/kustomization.yaml": COMPONENT + "commonLabels:\n  team: team\n",
    "components/extra/kustomization.yaml": COMPONENT + "resources:\n  - cm.yaml\n",
    "components/extra/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n",
}


def test_units_leave_a_group_with_its_namespace_and_the_group_keeps_what_it_adds(
        make_repo: Callable[..., Path], capsys: pytest.CaptureFixture[str], kubectl: Kubectl) -> None:
    repo = make_repo({**base("dependencies:\n  web: []\n  api: [web]\n"), **GROUPED})
    before = applied(repo, kubectl, ["apps/team"])
    originals = {p: (repo / p).read_text() for p in ("apps/team/web/ks.yaml", "apps/team/api/ks.yaml")}
    code, out, err = run(repo, capsys)
    assert code == 0, err
    assert [f for f in out["findings"] if f["severity"] == "error"] == []
    # Each unit got a kustomization of its own: the group's namespace and transforming component,
    # exactly what the group listed of it (its ks.yaml, not its app/, which the child applies).
    web = yaml.safe_load((repo / "apps/wave-0/team/web/kustomization.yaml").read_text())
    assert {k: web[k] for k in ("namespace", "components", "resources")} == {
        "namespace": "team", "components": ["../../../../components/labels"], "resources": ["ks.yaml"]}
    # The moved ks.yaml files: byte for byte but the line that names where the app now is.
    for old, n in (("apps/team/web/ks.yaml", 0), ("apps/team/api/ks.yaml", 1)):
        new = (repo / old.replace("apps/team", f"apps/wave-{n}/team")).read_text()
        expected = originals[old].replace(f"path: ./{old[:-8]}/app", f"path: ./apps/wave-{n}/team/{old[10:-8]}/app")
        assert new == expected.replace("- ../../../../components/extra", "- ../../../../../components/extra")
    # The group keeps its Namespace and the component that adds a Secret, and lists no unit.
    group = yaml.safe_load((repo / "apps/team/kustomization.yaml").read_text())
    assert group["resources"] == ["./namespace.yaml"] and group["components"][0] == "../../components/shared"
    # What the waves and the group apply is what apps applied, each object once, the child
    # Kustomizations the same objects (namespace team, name), their spec.path building the same.
    after = applied(repo, kubectl, flux_roots(repo))
    assert sorted(flux_roots(repo)) == ["./apps", "./apps/wave-0", "./apps/wave-1"]  # the rest, and the waves
    assert after == before and max(after.values()) == 1


def test_a_unit_with_its_own_kustomization_takes_the_groups_namespace_into_it(
        make_repo: Callable[..., Path], capsys: pytest.CaptureFixture[str], kubectl: Kubectl) -> None:
    # Nothing stays in the group: it only sets a namespace and a transforming component for its units.
    files = {**base("dependencies:\n  web: []\n  api: [web]\n"), **GROUPED}
    files["apps/team/kustomization.yaml"] = (KUSTOMIZE + "namespace: team\ncomponents:\n  - ../../components/labels\n"
                                             "resources:\n  - ./web/ks.yaml\n  - ./api\n")
    files["apps/team/api/kustomization.yaml"] = "# api's own list\n" + KUSTOMIZE + "resources:\n  - ks.yaml\n"
    del files["apps/team/namespace.yaml"]
    repo = make_repo(files)
    before = applied(repo, kubectl, ["apps/team"])
    own = (repo / "apps/team/api/kustomization.yaml").read_text()
    code, out, err = run(repo, capsys)
    assert code == 0, err
    assert [f for f in out["findings"] if f["severity"] == "error"] == []
    assert "apps/team/kustomization.yaml" in [c["path"] for c in out["changes"] if c["action"] == "delete"]
    # api's own kustomization keeps every byte and gains the group's fields at its end.
    assert (repo / "apps/wave-1/team/api/kustomization.yaml").read_text() == (
        own + "namespace: team\ncomponents:\n  - ../../../../components/labels\n")
    assert applied(repo, kubectl, flux_roots(repo)) == before
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "step 2")
    capsys.readouterr()
    assert main(["check", str(repo), "--base", "HEAD~1"]) == 0, capsys.readouterr()


def test_a_units_reference_out_of_itself_is_rewritten_one_level_deeper(
        make_repo: Callable[..., Path], capsys: pytest.CaptureFixture[str], kubectl: Kubectl) -> None:
    # The per-app overlay shape: apps/prod/<app>/ builds on ../../base/<app> (outside the app tier).
    files = {**base("apps_dir: apps/prod\ndependencies:\n  web: []\n  api: [web]\n", "./apps/prod")}
    for app in ("web", "api"):
        files[f"apps/base/{app}/kustomization.yaml"] = KUSTOMIZE + "resources:\n  - deploy.yaml\n"
        files[f"apps/base/{app}/deploy.yaml"] = deployment(app, "prod")
        files[f"apps/prod/{app}/kustomization.yaml"] = (
            KUSTOMIZE + f"resources:\n  # the shared base\n  - ../../base/{app}\ncommonLabels:\n  env: prod\n")
    repo = make_repo(files)
    before = [built(kubectl, repo / f"apps/prod/{app}") for app in ("web", "api")]
    originals = {app: (repo / f"apps/prod/{app}/kustomization.yaml").read_text() for app in ("web", "api")}
    code, out, err = run(repo, capsys)
    assert code == 0, err
    for n, app in enumerate(("web", "api")):
        moved = repo / f"apps/prod/wave-{n}/{app}"
        assert (moved / "kustomization.yaml").read_text() == originals[app].replace(
            f"  - ../../base/{app}\n", f"  - ../../../base/{app}\n")
        assert built(kubectl, moved) == before[n]
    assert (repo / "apps/base/web/deploy.yaml").is_file()  # the base is no unit and stays


def test_a_reference_that_cannot_be_rewritten_is_refused_with_the_path_to_write(
        make_repo: Callable[..., Path], capsys: pytest.CaptureFixture[str]) -> None:
    # A folded scalar: the path is not on the entry's line, so no one-line edit can change it.
    files = {**base("apps_dir: apps/prod\ndependencies:\n  web: []\n", "./apps/prod")}
    files["apps/base/web/kustomization.yaml"] = KUSTOMIZE + "resources:\n  - deploy.yaml\n"
    files["apps/base/web/deploy.yaml"] = deployment("web", "prod")
    files["apps/prod/web/kustomization.yaml"] = KUSTOMIZE + "resources:\n  - >-\n    ../../base/web\n"
    repo = make_repo(files)
    tree = snapshot(repo)
    code, _, err = run(repo, capsys)
    assert code == 2 and snapshot(repo) == tree
    assert err.startswith("wave-bot: error: apps/prod/web/kustomization.yaml:4: "), err
    assert "the entry must read ../../../base/web," in err and "hint: write each entry of resources on a line" in err


def test_a_group_component_that_adds_and_transforms_is_refused_naming_its_line(
        make_repo: Callable[..., Path], capsys: pytest.CaptureFixture[str]) -> None:
    files = {**base("dependencies:\n  web: []\n  api: [web]\n"), **GROUPED}
    files["components/shared/kustomization.yaml"] = COMPONENT + "resources:\n  - secret.yaml\nnamePrefix: x-\n"
    repo = make_repo(files)
    tree = snapshot(repo)
    code, _, err = run(repo, capsys)
    assert code == 2 and snapshot(repo) == tree
    assert err.startswith("wave-bot: error: apps/team/kustomization.yaml:6: components entry ../../components/shared "
                          "both adds objects and transforms the units listed here (namePrefix)"), err
    assert "split ../../components/shared into a component that adds the objects" in err


def test_a_directory_used_as_a_component_is_never_a_unit(
        make_repo: Callable[..., Path], capsys: pytest.CaptureFixture[str], kubectl: Kubectl) -> None:
    # The group's own component lives in the group folder: no unit, no unplaced directory.
    files = {**base("dependencies:\n  web: []\n  api: [web]\n"), **GROUPED}
    del files["components/labels/kustomization.yaml"]
    files["apps/team/labels/kustomization.yaml"] = COMPONENT + "commonLabels:\n  team: team\n"
    files["apps/team/kustomization.yaml"] = (KUSTOMIZE + "namespace: team\ncomponents:\n  - ./labels\n"
                                             "resources:\n  - ./web/ks.yaml\n  - ./api/ks.yaml\n")
    del files["apps/team/namespace.yaml"]
    repo = make_repo(files)
    before = applied(repo, kubectl, ["apps/team"])
    code, out, err = run(repo, capsys)
    assert code == 0, err
    assert not [f for f in out["findings"] if f["code"] == "unplaced-file"]
    assert (repo / "apps/team/labels/kustomization.yaml").is_file()
    # The group keeps its kustomization, listing nothing now: the folder still holds the component.
    assert yaml.safe_load((repo / "apps/team/kustomization.yaml").read_text())["resources"] == []
    assert yaml.safe_load((repo / "apps/wave-0/team/web/kustomization.yaml").read_text())["components"] == [
        "../../../team/labels"]
    assert applied(repo, kubectl, flux_roots(repo)) == before


def test_a_child_kustomization_follows_its_unit_into_another_wave(
        make_repo: Callable[..., Path], capsys: pytest.CaptureFixture[str], kubectl: Kubectl) -> None:
    # After the split, the order changes: web now needs api. Each unit moves to the other wave, and
    # its child's spec.path with it (it was a `tier-path-moved` error to fix by hand).
    files = {**base("dependencies:\n  web: []\n  api: [web]\n"), **GROUPED}
    files["apps/team/kustomization.yaml"] = (KUSTOMIZE + "namespace: team\nresources:\n  - ./web/ks.yaml\n"
                                             "  - ./api/ks.yaml\n")
    del files["apps/team/namespace.yaml"]
    repo = make_repo(files)
    before = applied(repo, kubectl, ["apps/team"])
    assert run(repo, capsys)[0] == 0
    (repo / ".wave-bot.yaml").write_text("dependencies:\n  api: []\n  web: [api]\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "step 2, and web now needs api")
    code, out, err = run(repo, capsys)
    assert code == 0, err
    assert [f for f in out["findings"] if f["severity"] == "error"] == []
    for name, n in (("api", 0), ("web", 1)):
        ks = yaml.safe_load((repo / f"apps/wave-{n}/team/{name}/ks.yaml").read_text())
        assert ks["spec"]["path"] == f"./apps/wave-{n}/team/{name}/app"
    assert applied(repo, kubectl, flux_roots(repo)) == before


def test_a_units_own_namespace_becomes_the_groups_as_the_group_overrode_it(
        make_repo: Callable[..., Path], capsys: pytest.CaptureFixture[str], kubectl: Kubectl) -> None:
    # kustomize applies the group's namespace after the unit's own: the unit's objects were in team.
    files = {**base("dependencies:\n  web: []\n  api: [web]\n"), **GROUPED}
    files["apps/team/kustomization.yaml"] = KUSTOMIZE + "namespace: team\nresources:\n  - ./web/ks.yaml\n  - ./api\n"
    files["apps/team/api/kustomization.yaml"] = (KUSTOMIZE + "namespace: elsewhere  # before the group\n"
                                                 "resources:\n  - ks.yaml\n")
    del files["apps/team/namespace.yaml"]
    repo = make_repo(files)
    before = applied(repo, kubectl, ["apps/team"])
    own = (repo / "apps/team/api/kustomization.yaml").read_text()
    code, _, err = run(repo, capsys)
    assert code == 0, err
    assert (repo / "apps/wave-1/team/api/kustomization.yaml").read_text() == own.replace(
        "namespace: elsewhere", "namespace: team")
    assert applied(repo, kubectl, flux_roots(repo)) == before



def test_every_grouping_folder_whose_patches_name_files_is_refused_in_one_error(
        make_repo: Callable[..., Path], capsys: pytest.CaptureFixture[str]) -> None:
    # Two folders, two fixes: one run names both, each at its own line.
    files = {**base("dependencies:\n  web: []\n  api: [web]\n  db: []\n"), **GROUPED}
    files["apps/team/kustomization.yaml"] = (KUSTOMIZE + "namespace: team\nresources:\n  - ./web/ks.yaml\n"
                                             "  - ./api/ks.yaml\npatchesStrategicMerge:\n  - interval.yaml\n")
    files["apps/team/interval.yaml"] = FLUX + "metadata:\n  name: web\nspec:\n  interval: 5m\n"
    del files["apps/team/namespace.yaml"]
    files["apps/ops/kustomization.yaml"] = (KUSTOMIZE + "namespace: ops\nresources:\n  - ./db/ks.yaml\npatches:\n"
                                            "  - path: interval.yaml\n    target:\n      kind: Kustomization\n")
    files["apps/ops/interval.yaml"] = "- op: replace\n  path: /spec/interval\n  value: 5m\n"
    files["apps/ops/db/ks.yaml"] = child("db", "./apps/ops/db/app")
    files["apps/ops/db/app/kustomization.yaml"] = KUSTOMIZE + "resources:\n  - deploy.yaml\n"
    files["apps/ops/db/app/deploy.yaml"] = deployment("db", "ops")
    repo = make_repo(files)
    tree = snapshot(repo)
    code, _, err = run(repo, capsys)
    assert code == 2 and snapshot(repo) == tree
    assert err.startswith("wave-bot: error: apps/ops/kustomization.yaml:6: patches here names files relative to "
                          "apps/ops/ and transforms every unit listed here"), err
    assert ("1 more grouping folder(s) to change the same way: apps/team/kustomization.yaml:7: patchesStrategicMerge "
            "here names files relative to apps/team/ and transforms every unit listed here") in err
    assert "(fix: write the patches inline (patches: - patch: |-) or move patchesStrategicMerge into each" in err
    assert "hint: write the patches inline (patches: - patch: |-) or move patches into each unit's own" in err


def test_a_field_both_the_group_and_the_units_own_kustomization_set_is_refused_at_the_groups_line(
        make_repo: Callable[..., Path], capsys: pytest.CaptureFixture[str]) -> None:
    files = {**base("dependencies:\n  web: []\n  api: [web]\n"), **GROUPED}
    files["apps/team/kustomization.yaml"] = (KUSTOMIZE + "namespace: team\ncommonLabels:\n  team: team\n"
                                             "resources:\n  - ./web/ks.yaml\n  - ./api\n")
    files["apps/team/api/kustomization.yaml"] = KUSTOMIZE + "commonLabels:\n  app: api\nresources:\n  - ks.yaml\n"
    del files["apps/team/namespace.yaml"]
    repo = make_repo(files)
    tree = snapshot(repo)
    code, _, err = run(repo, capsys)
    assert code == 2 and snapshot(repo) == tree
    assert err.startswith("wave-bot: error: apps/team/kustomization.yaml:4: sets commonLabels for api/, whose own "
                          "kustomization (apps/team/api/kustomization.yaml) sets commonLabels too; once the unit "
                          "moves into its wave this file no longer applies to it, and wave-bot does not merge the "
                          "two\n"), err
    assert "hint: merge this commonLabels into apps/team/api/kustomization.yaml yourself" in err


def test_a_group_generator_its_units_refer_to_is_refused_before_they_leave(
        make_repo: Callable[..., Path], capsys: pytest.CaptureFixture[str], kubectl: Kubectl) -> None:
    # The group generates settings-<hash> and rewrites the unit's reference to it; the unit's own
    # kustomization at its wave would not, so its Deployment would mount a ConfigMap no one makes.
    files = {**base("dependencies:\n  web: []\n  api: [web]\n"), **GROUPED}
    files["apps/team/kustomization.yaml"] = (
        KUSTOMIZE + "namespace: team\nconfigMapGenerator:\n  - name: settings\n    literals:\n      - mode=fast\n"
        "resources:\n  - ./web/deploy.yaml\n  - ./api/ks.yaml\n")
    for name in ("namespace.yaml", "web/ks.yaml", "web/app/kustomization.yaml", "web/app/deploy.yaml"):
        del files[f"apps/team/{name}"]
    files["apps/team/web/deploy.yaml"] = deployment("web", "team").replace(
        "      containers:\n", "      volumes:\n        - name: settings\n          configMap:\n"
        "            name: settings\n      containers:\n")
    repo = make_repo(files)
    assert any(d["kind"] == "Deployment" and d["spec"]["template"]["spec"]["volumes"][0]["configMap"]["name"]
               .startswith("settings-") for d in built(kubectl, repo / "apps/team"))
    tree = snapshot(repo)
    code, _, err = run(repo, capsys)
    assert code == 2 and snapshot(repo) == tree
    assert err.startswith("wave-bot: error: apps/team/kustomization.yaml:5: configMapGenerator entry settings makes "
                          "settings-<hash>, and kustomize renames the references to settings in what this file builds "
                          "to it; apps/team/web refer(s) to settings, and once the units move into waves "), err
    assert "hint: move the settings generator into the kustomization of each unit that uses it" in err


def test_a_group_patch_naming_one_unit_is_refused_at_the_patch_as_the_group_would_not_build(
        make_repo: Callable[..., Path], capsys: pytest.CaptureFixture[str]) -> None:
    # The group's inline patch names web's Kustomization: the group keeps it (it transforms) and so
    # would each unit's new kustomization; the group, left with its Namespace, has nothing to patch.
    files = {**base("dependencies:\n  web: []\n  api: [web]\n"), **GROUPED}
    files["apps/team/kustomization.yaml"] = (
        KUSTOMIZE + "namespace: team\nresources:\n  - ./namespace.yaml\n  - ./web/ks.yaml\n  - ./api/ks.yaml\n"
        "patches:\n  - patch: |-\n" + "".join(f"      {line}\n" for line in FLUX.splitlines())
        + "      metadata:\n        name: web\n      spec:\n        interval: 5m\n")
    repo = make_repo(files)
    tree = snapshot(repo)
    code, _, err = run(repo, capsys)
    assert code == 2 and snapshot(repo) == tree
    assert err.startswith("wave-bot: error: apps/team/kustomization.yaml:7: after the split the Flux Kustomization "
                          "apps-rest (cluster clusters/base) would not build: "), err


def test_a_group_listing_part_of_a_unit_with_its_own_kustomization_is_refused_naming_both_lists(
        make_repo: Callable[..., Path], capsys: pytest.CaptureFixture[str]) -> None:
    # The group applies api/ (its own list) and a file below it besides; the wave would apply only api/.
    files = {**base("dependencies:\n  web: []\n  api: [web]\n"), **GROUPED}
    files["apps/team/kustomization.yaml"] = (KUSTOMIZE + "namespace: team\nresources:\n  - ./web/ks.yaml\n  - ./api\n"
                                             "  - ./api/app/deploy.yaml\n")
    files["apps/team/api/kustomization.yaml"] = KUSTOMIZE + "resources:\n  - ks.yaml\n"
    del files["apps/team/namespace.yaml"]
    repo = make_repo(files)
    tree = snapshot(repo)
    code, _, err = run(repo, capsys)
    assert code == 2 and snapshot(repo) == tree
    assert err.startswith("wave-bot: error: apps/team/kustomization.yaml:4: lists the directory, app/deploy.yaml of "
                          "api/, and its wave will list api (what its own kustomization.yaml lists); the split would "
                          "apply something else than the legacy Kustomization did"), err
    assert ("hint: make apps/team/api/kustomization.yaml list exactly what this file applies of api/ (what it lists "
            "now, app/deploy.yaml) and list only ./api here, then run wave-bot again") in err


def test_a_group_listing_part_of_its_units_gives_each_a_list_of_that_part_and_keeps_what_it_adds(
        make_repo: Callable[..., Path], capsys: pytest.CaptureFixture[str], kubectl: Kubectl) -> None:
    # Nothing transforms: the group lists each unit's ks.yaml (not its app/, the child's) and adds a
    # Secret through a component. web's ks.yaml holds a Namespace (no spec) before its Kustomization.
    files = {**base("dependencies:\n  web: []\n  api: [web]\n"), **GROUPED}
    files["apps/team/kustomization.yaml"] = (KUSTOMIZE + "components:\n  - ../../components/shared\n"
                                             "resources:\n  - ./web/ks.yaml\n  - ./api/ks.yaml\n")
    files["apps/team/web/ks.yaml"] = ("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: web-data\n"
                                      + files["apps/team/web/ks.yaml"].replace("metadata:\n", "metadata:\n  namespace: "
                                                                               "flux-system\n"))
    files["apps/team/api/ks.yaml"] = files["apps/team/api/ks.yaml"].replace("metadata:\n",
                                                                            "metadata:\n  namespace: flux-system\n")
    del files["apps/team/namespace.yaml"]
    repo = make_repo(files)
    before = applied(repo, kubectl, ["apps/team"])
    code, _, err = run(repo, capsys)
    assert code == 0, err
    for name, n in (("web", 0), ("api", 1)):
        written = (repo / f"apps/wave-{n}/team/{name}/kustomization.yaml").read_text()
        assert yaml.safe_load(written)["resources"] == ["ks.yaml"]
        # It says where it comes from, and that it is the user's now.
        assert written.startswith("# Written by wave-bot's cutover (step 2): what apps/team/kustomization.yaml "
                                  "applied of this unit and did to it,\n# kept now that the unit's wave applies it. "
                                  "Yours to edit from here on.\n")
    # The group stays for its Secret, listing no unit.
    assert yaml.safe_load((repo / "apps/team/kustomization.yaml").read_text()) == {
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "components": ["../../components/shared"], "resources": []}
    after = applied(repo, kubectl, flux_roots(repo))
    assert after == before and max(after.values()) == 1


def test_a_units_own_kustomization_without_a_final_newline_gains_the_groups_fields_on_lines_of_their_own(
        make_repo: Callable[..., Path], capsys: pytest.CaptureFixture[str], kubectl: Kubectl) -> None:
    files = {**base("dependencies:\n  web: []\n  api: [web]\n"), **GROUPED}
    files["apps/team/kustomization.yaml"] = (KUSTOMIZE + "namespace: team\ncommonLabels:\n  team: team\n"
                                             "resources:\n  - ./web/ks.yaml\n  - ./api\n")
    files["apps/team/api/kustomization.yaml"] = KUSTOMIZE + "resources:\n  - ks.yaml"
    del files["apps/team/namespace.yaml"]
    repo = make_repo(files)
    before = applied(repo, kubectl, ["apps/team"])
    code, _, err = run(repo, capsys)
    assert code == 0, err
    assert (repo / "apps/wave-1/team/api/kustomization.yaml").read_text() == (
        KUSTOMIZE + "resources:\n  - ks.yaml\nnamespace: team\ncommonLabels:\n  team: team\n")
    assert applied(repo, kubectl, flux_roots(repo)) == before


def test_a_units_own_components_are_rewritten_and_gain_the_groups_transforming_component(
        make_repo: Callable[..., Path], capsys: pytest.CaptureFixture[str], kubectl: Kubectl) -> None:
    files = {**base("dependencies:\n  web: []\n  api: [web]\n"), **GROUPED}
    files["apps/team/kustomization.yaml"] = (KUSTOMIZE + "namespace: team\ncomponents:\n  - ../../components/labels\n"
                                             "resources:\n  - ./web/ks.yaml\n  - ./api\n")
    files["apps/team/api/kustomization.yaml"] = (KUSTOMIZE + "resources:\n  - ks.yaml\ncomponents:\n"
                                                 "  - ../../../components/tag\n")
    files["components/tag/kustomization.yaml"] = COMPONENT + "commonAnnotations:\n  owner: api\n"
    del files["apps/team/namespace.yaml"]
    repo = make_repo(files)
    before = applied(repo, kubectl, ["apps/team"])
    code, _, err = run(repo, capsys)
    assert code == 0, err
    assert (repo / "apps/wave-1/team/api/kustomization.yaml").read_text() == (
        KUSTOMIZE + "resources:\n  - ks.yaml\ncomponents:\n  - ../../../../components/tag\n"
        "  - ../../../../components/labels\nnamespace: team\n")
    assert applied(repo, kubectl, flux_roots(repo)) == before


def test_every_moving_units_reference_is_rewritten_whatever_else_refers_to_the_same_bases(
        make_repo: Callable[..., Path], capsys: pytest.CaptureFixture[str], kubectl: Kubectl) -> None:
    # apps/base/all (no unit, never moved) lists the same bases: its entries stay, the units' change.
    files = {**base("apps_dir: apps/prod\ndependencies:\n  web: []\n  api: [web]\n", "./apps/prod")}
    files["apps/base/all/kustomization.yaml"] = KUSTOMIZE + "resources:\n  - ../web\n  - ../api\n"
    for app in ("web", "api"):
        files[f"apps/base/{app}/kustomization.yaml"] = KUSTOMIZE + "resources:\n  - deploy.yaml\n"
        files[f"apps/base/{app}/deploy.yaml"] = deployment(app, "prod")
        files[f"apps/prod/{app}/kustomization.yaml"] = KUSTOMIZE + f"resources:\n  - ../../base/{app}\n"
    repo = make_repo(files)
    before = [built(kubectl, repo / f"apps/prod/{app}") for app in ("web", "api")]
    code, _, err = run(repo, capsys)
    assert code == 0, err
    for n, app in enumerate(("web", "api")):
        moved = repo / f"apps/prod/wave-{n}/{app}"
        assert (moved / "kustomization.yaml").read_text() == KUSTOMIZE + f"resources:\n  - ../../../base/{app}\n"
        assert built(kubectl, moved) == before[n]
    assert (repo / "apps/base/all/kustomization.yaml").read_text() == files["apps/base/all/kustomization.yaml"]


@pytest.mark.parametrize(("generator", "refused"), [
    ("secretGenerator:\n  - name: settings\n    literals:\n      - mode=fast\n", True),
    ("generatorOptions:\n  disableNameSuffixHash: true\nconfigMapGenerator:\n  - name: settings\n    literals:\n"
     "      - mode=fast\n", False),
    ("configMapGenerator:\n  - name: settings\n    literals:\n      - mode=fast\n    options:\n"
     "      disableNameSuffixHash: true\n", False),
], ids=["secret-hashed", "options-for-all", "options-of-its-own"])
def test_a_group_generator_keeps_units_that_refer_to_it_only_while_it_renames(
        make_repo: Callable[..., Path], capsys: pytest.CaptureFixture[str], kubectl: Kubectl, generator: str,
        refused: bool) -> None:
    # Without a hash the name the unit refers to is the generated object's own: the unit can leave.
    files = {**base("dependencies:\n  web: []\n  api: [web]\n"), **GROUPED}
    files["apps/team/kustomization.yaml"] = (KUSTOMIZE + "namespace: team\n" + generator
                                             + "resources:\n  - ./web/deploy.yaml\n  - ./api/ks.yaml\n")
    for name in ("namespace.yaml", "web/ks.yaml", "web/app/kustomization.yaml", "web/app/deploy.yaml"):
        del files[f"apps/team/{name}"]
    volume = "secret:\n            secretName" if generator.startswith("secret") else "configMap:\n            name"
    files["apps/team/web/deploy.yaml"] = deployment("web", "team").replace(
        "      containers:\n",
        f"      volumes:\n        - name: data\n          {volume}: settings\n      containers:\n")
    repo = make_repo(files)
    before = applied(repo, kubectl, ["apps/team"])
    tree = snapshot(repo)
    code, _, err = run(repo, capsys)
    if refused:
        assert code == 2 and snapshot(repo) == tree
        assert err.startswith("wave-bot: error: apps/team/kustomization.yaml:5: secretGenerator entry settings makes "
                              "settings-<hash>"), err
        return
    assert code == 0, err
    assert applied(repo, kubectl, flux_roots(repo)) == before
