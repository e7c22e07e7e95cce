"""bot.kustomize.repository: one reading of every kustomization, and the role of each file it names."""
from __future__ import annotations

from pathlib import Path

import pytest

from bot.kustomize.repository import Builds, read_kustomizations
from bot.kustomize.spec import BuildError
from bot.repo.tree import PlannedTree
from bot.repo.worktree import FsTree

from conftest import write_files

FLUX = "kustomize.toolkit.fluxcd.io"


def flux_kustomization(name: str) -> str:
    return (f"apiVersion: {FLUX}/v1\nkind: Kustomization\nmetadata:\n  name: {name}\n  namespace: flux-system\n"
            "spec:\n  path: ./x\n")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    write_files(tmp_path, {
        "clusters/base/kustomization.yaml": "resources: [tools.yaml, apps.yaml]\n",
        "clusters/base/tools.yaml": flux_kustomization("tools"),
        "clusters/base/apps.yaml": flux_kustomization("apps"),
        "clusters/prod/kustomization.yml": (
            "resources: [../base]\ncomponents: [../sops]\n"
            "patches:\n"
            "  - path: patches/tools.yaml\n    target: {kind: Kustomization, name: tools}\n"
            "  - path: patches/any.yaml\n    target: {kind: Kustomization, name: 'app.*'}\n"
            "  - patch: |\n" + "".join(f"      {line}\n" for line in flux_kustomization("apps").splitlines())
            + "patchesStrategicMerge: [legacy.yaml]\n"
            "configMapGenerator:\n  - name: vars\n    files: [vars.env, key=other.txt]\n"),
        "clusters/prod/patches/tools.yaml": flux_kustomization("tools"),
        "clusters/prod/patches/any.yaml": flux_kustomization("ignored"),
        "clusters/prod/legacy.yaml": flux_kustomization("tools"),
        "clusters/prod/vars.env": "A=1\n",
        "clusters/prod/other.txt": "x\n",
        "clusters/sops/Kustomization": (
            "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n"
            "patches:\n  - target: {group: kustomize.toolkit.fluxcd.io, kind: Kustomization, name: tools}\n"
            "    patch: '[{op: add, path: /spec/force, value: true}]'\n"),
    })
    return tmp_path


def test_every_kustomization_file_name_is_read_and_each_file_gets_its_role(repo: Path) -> None:
    model = read_kustomizations(FsTree(str(repo)), "clusters")
    assert sorted(k.path for k in model.files) == [
        "clusters/base/kustomization.yaml", "clusters/prod/kustomization.yml", "clusters/sops/Kustomization"]
    assert model.roles("clusters/base/tools.yaml") == {"resource"}
    assert model.roles("clusters/base") == {"directory"}
    assert model.roles("clusters/sops") == {"component"}
    assert model.patch_files() == {"clusters/prod/patches/tools.yaml", "clusters/prod/patches/any.yaml",
                                   "clusters/prod/legacy.yaml"}
    assert model.roles("clusters/prod/vars.env") == model.roles("clusters/prod/other.txt") == {"generator-input"}
    assert "clusters/base/tools.yaml" not in model.not_objects()
    assert {"clusters/prod/kustomization.yml", "clusters/prod/vars.env"} <= model.not_objects()


def test_the_patches_aimed_at_one_object_only(repo: Path) -> None:
    model = read_kustomizations(FsTree(str(repo)), "clusters")
    tools = [(p.kustomization, p.use.where) for p in model.patches_aimed_only_at(FLUX, "Kustomization", "tools")]
    assert tools == [("clusters/prod/kustomization.yml", "patchesStrategicMerge[0]"),
                     ("clusters/prod/kustomization.yml", "patches[0]"),
                     ("clusters/sops/Kustomization", "patches[0]")]
    apps = [p.use.where for p in model.patches_aimed_only_at(FLUX, "Kustomization", "apps")]
    assert apps == ["patches[2]"]  # the regex target `app.*` may match others: not aimed at apps alone
    assert model.patches_aimed_only_at(FLUX, "Kustomization", "ignored") == []  # a target decides, not the name


def test_a_patch_of_a_file_named_kustomization_yml_is_a_patch(repo: Path) -> None:
    """Repro 1 of issue 8: the inventory read such a patch file as a definition."""
    from bot.config import Config
    from bot.flux.inventory import read_inventory

    write_files(repo, {"apps/wave-0/kustomization.yml": "resources: [a.yaml]\n",
                       "apps/wave-0/a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
                       "apps/wave-0/b.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n"})
    (repo / "clusters/base/tools.yaml").unlink()
    inventory = read_inventory(FsTree(str(repo)), Config())
    assert [k.id.name for k in inventory.flux] == ["apps"]
    assert [f.path for f in inventory.files] == ["apps/wave-0/a.yaml"]
    assert [f.path for f in inventory.stray] == ["apps/wave-0/b.yaml"]
    assert not inventory.problems


def test_builds_are_evaluated_once_per_tree_and_directory(repo: Path) -> None:
    tree = FsTree(str(repo))
    builds = Builds()
    first = builds.build(tree, "clusters/base")
    assert builds.build(tree, "clusters/base") is first and builds.evaluations == 1
    other = PlannedTree(tree, [])
    assert builds.build(other, "clusters/base") is not first and builds.evaluations == 2
    write_files(repo, {"clusters/broken/kustomization.yaml": "resources: [missing.yaml]\n"})
    for _ in range(2):
        with pytest.raises(BuildError, match="does not exist"):
            builds.build(tree, "clusters/broken")
    assert builds.evaluations == 3


def test_each_reference_records_its_field_item_line_and_words(tmp_path: Path) -> None:
    # what a finding quotes when it names the line that still refers to a file (wave-removable, ...)
    files = ("p1.yaml", "p2.yaml", "p3.yaml", "crd.yaml", "conf.yaml", "schema.json")
    write_files(tmp_path, {
        "k/kustomization.yaml": (
            "resources: [example.org/team/app]\n"  # a host: remote, no reference
            "patchesStrategicMerge: [p1.yaml]\n"
            "patches:\n  - path: p2.yaml\n"
            "patchesJson6902:\n  - path: p3.yaml\n    target: {kind: X, name: x}\n"
            "crds: [crd.yaml]\n"
            "configurations: [conf.yaml]\n"
            "openapi:\n  path: ' schema.json'\n"),
        **{f"k/{name}": "{}\n" for name in files},
    })
    model = read_kustomizations(FsTree(str(tmp_path)), "k")
    assert [(r.path, r.role, r.line, r.key, r.index, r.written) for r in model.references] == [
        ("k/p1.yaml", "patch", 2, "patchesStrategicMerge", 0, "p1.yaml"),
        ("k/p2.yaml", "patch", 4, "patches", 0, "p2.yaml"),
        ("k/p3.yaml", "patch", 6, "patchesJson6902", 0, "p3.yaml"),
        ("k/crd.yaml", "configuration", 8, "crds", 0, "crd.yaml"),
        ("k/conf.yaml", "configuration", 9, "configurations", 0, "conf.yaml"),
        ("k/schema.json", "configuration", 10, "openapi", -1, "schema.json"),  # the field's line
    ]


def test_from_the_repository_root_every_kustomization_is_read_even_one_kustomize_would_vet(tmp_path: Path) -> None:
    write_files(tmp_path, {
        # a field kustomize rejects: the file is still read for what it names
        "k/kustomization.yaml": "bogus: 1\npatches:\n  - path: p.yaml\n    target: {group: apps, kind: Kustomization,"
                                " name: tools}\n",
        "k/p.yaml": flux_kustomization("tools"),
    })
    model = read_kustomizations(FsTree(str(tmp_path)), "")
    assert [k.path for k in model.files] == ["k/kustomization.yaml"]
    assert model.roles("k/p.yaml") == {"patch"}
    # a target of another group aims at another object, whatever its kind and name
    assert model.patches_aimed_only_at(FLUX, "Kustomization", "tools") == []
