"""bot.kustomize.repository: one reading of every kustomization, and the role of each file it names."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from bot.kustomize.files import read_kustomization
from bot.kustomize.repository import Builds, applied_files, applied_files_in_namespaces, read_kustomizations
from bot.kustomize.spec import BuildError
from bot.layout.units import wave_refs
from bot.repo.tree import PlannedTree
from bot.repo.worktree import FsTree
from bot.yamlio import documents as yamlio

from conftest import Kubectl, installed_tool, write_files

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


@pytest.mark.parametrize("kustomization", [
    "resources: [a.yaml]\nresources: [b.yaml]\n",
    "resources:\n- a.yaml\n- b.yaml\nnamespace: x\nresources:\n- c.yaml\n",
    "resources: [a.yaml]\nresources: [b.yaml, c.yaml]\nresources: [c.yaml, a.yaml]\n",
    "resources: [a.yaml, b.yaml]\nresources: [./c.yaml]\n",
])
def test_a_repeated_resources_key_lists_only_what_kustomize_builds(tmp_path: Path, kubectl: Kubectl,
                                                                   kustomization: str) -> None:
    # kustomize reads a kustomization with sigs.k8s.io/yaml: the last `resources:` replaces the others
    files = {f"w/{n}.yaml": f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {n}\n" for n in "abc"}
    write_files(tmp_path, {**files, "w/kustomization.yaml": kustomization})
    built = kubectl(tmp_path / "w")
    assert built.returncode == 0, built.stderr
    names = sorted(re.findall(r"^  name: (\w+)$", built.stdout, re.MULTILINE))
    tree = FsTree(str(tmp_path))
    assert sorted(f.removeprefix("w/").removesuffix(".yaml") for f in applied_files(tree, "w")) == names
    assert sorted(n.removesuffix(".yaml") for n in wave_refs(tree, "w/kustomization.yaml")) == names


KUSTOMIZATION_FIELDS = {
    "namespace": "resources: [a.yaml]\nnamespace: {}\n",
    "resources": "resources: [a.yaml, {}]\n",
    "commonLabels": "resources: [a.yaml]\ncommonLabels: {{a: {}}}\n",
    "labels": "resources: [a.yaml]\nlabels:\n- pairs: {{a: {}}}\n",
    "patch target": "resources: [a.yaml]\npatches:\n- path: p.yaml\n  target: {{name: {}}}\n",
    "kind": "resources: [a.yaml]\nkind: {}\n",
    "patchesStrategicMerge": "resources: [a.yaml]\npatchesStrategicMerge: [{}]\n",
    "commonAnnotations": "resources: [a.yaml]\ncommonAnnotations: {{a: {}}}\n",
}
SPELLINGS = ["yes", "on", "y", "No", "OFF", "0o17", "1e3", "0755", "12", ".5", "null", "2001-12-14", "'on'", '"y"',
             "!!str on", "a:b", "Kustomization"]


def test_a_kustomization_string_field_kustomize_reads_as_a_boolean_or_number_is_refused_as_kustomize_does(
        tmp_path: Path) -> None:
    # kustomize reads a kustomization with YAML 1.1's booleans (`on`, `y`) besides YAML 1.2's numbers;
    # only that refusal is compared (wave-bot's read does not look for the listed files)
    kubectl = str(installed_tool("kubectl"))
    cases = [(field, value) for field in KUSTOMIZATION_FIELDS for value in SPELLINGS]
    for i, (field, value) in enumerate(cases):
        write_files(tmp_path, {
            f"c{i}/kustomization.yaml": KUSTOMIZATION_FIELDS[field].format(value),
            f"c{i}/a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n",
            f"c{i}/p.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  labels: {p: 'y'}\n",
        })
    tree, disagree, refused = FsTree(str(tmp_path)), [], 0
    for start in range(0, len(cases), 8):
        batch = range(start, min(start + 8, len(cases)))
        running = [(i, subprocess.Popen([kubectl, "kustomize", str(tmp_path / f"c{i}")], stdout=subprocess.DEVNULL,
                                        stderr=subprocess.PIPE, text=True)) for i in batch]
        for i, process in running:
            theirs = process.communicate()[1].strip().rpartition("invalid Kustomization: ")[2]
            try:
                read_kustomization(tree, f"c{i}/kustomization.yaml")
                ours = "builds"
            except BuildError as exc:
                ours = exc.message
            refused += "cannot unmarshal" in theirs
            if ("cannot unmarshal" in theirs) != ("cannot unmarshal" in ours) or theirs.startswith("json: ") \
                    and f"({theirs})" not in ours:
                disagree.append(f"{cases[i]}: wave-bot: {ours}; kubectl: {theirs}")
    assert not disagree, "\n".join(disagree)
    assert refused >= 40


@pytest.mark.parametrize("kustomization", [
    "<<: {namespace: m}\n",
    "namespace: w\n<<: {namespace: m}\n",
    "<<: {namespace: m}\nnamespace: w\n",
    "commonLabels: {x: w, <<: {x: one}}\n",
    "commonLabels: {<<: {x: one}, x: w}\n",
    "commonLabels:\n  <<: [{x: one}, {x: two, z: two}]\n",
    "commonLabels:\n  <<: {a: b, x: one}\n  <<: {c: d, x: two}\n",
    "commonAnnotations: &a {x: '1'}\ncommonLabels:\n  <<: [{x: one}, *a]\n",
    "commonLabels:\n  <<: {x: one, <<: {x: nested, z: nested}}\n",
    "commonLabels:\n  <<: 5\n",
    "commonLabels:\n  <<: [[{x: one}]]\n",
    "commonAnnotations: {s: &s str}\ncommonLabels:\n  <<: [*s]\n",
])
def test_a_kustomization_applies_each_merge_key_where_it_stands_as_kustomize_does(
        tmp_path: Path, kubectl: Kubectl, kustomization: str) -> None:
    # go-yaml v2 behind sigs.k8s.io/yaml: unlike in a resource, a merge overrides the keys before it
    write_files(tmp_path, {"k/kustomization.yaml": "resources: [a.yaml]\n" + kustomization,
                           "k/a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n"})
    built = kubectl(tmp_path / "k")
    tree = FsTree(str(tmp_path))
    if built.returncode != 0:
        with pytest.raises(BuildError, match="map merge requires map or sequence of maps as the value"):
            read_kustomization(tree, "k/kustomization.yaml")
        return
    metadata = YAML(typ="safe", pure=True).load(built.stdout)["metadata"]
    value = read_kustomization(tree, "k/kustomization.yaml").value
    assert (value.get("namespace"), value.get("commonLabels")) == (metadata.get("namespace"), metadata.get("labels"))
    (doc,) = yamlio.scan(tree.read("k/kustomization.yaml"), "k.yaml", capture=lambda p: True)
    assert doc.scalars.get(("namespace",)) == metadata.get("namespace")


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


def test_kustomizations_are_read_at_any_depth_in_order(tmp_path: Path) -> None:
    # a patch file of a kustomization too deep to be seen would be a prune: true nobody checks
    deep = "c/" + "/".join("abcdefghijkl") + "/"
    write_files(tmp_path, {f"{deep}kustomization.yaml": "patches:\n  - path: p.yaml\n",
                           f"{deep}p.yaml": flux_kustomization("tools"),
                           "c/a/kustomization.yaml": "resources: [x.yaml]\n",
                           "c/b/kustomization.yaml": "resources: []\n",
                           "c/.hidden/kustomization.yaml": "resources: []\n"})
    model = read_kustomizations(FsTree(str(tmp_path)), "c")
    assert [k.path for k in model.files] == ["c/a/kustomization.yaml", f"{deep}kustomization.yaml",
                                             "c/b/kustomization.yaml"]
    assert model.roles(f"{deep}p.yaml") == {"patch"}


def config_map(name: str) -> str:
    return f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n"


def object_names(paths: list[str]) -> list[str]:
    """The object each file holds (one ConfigMap named after the file)."""
    return sorted(p.rpartition("/")[2].partition(".")[0] for p in paths)


APPLIED_TREE = {
    # every kustomization file name, a listed directory, one reached through `..`, files none lists
    "kustomization.yaml": "resources: [t, top.yaml]\n",
    "top.yaml": config_map("top"),
    "t/Kustomization": "resources: [./a.yaml, sub, ../shared]\n",
    "t/a.yaml": config_map("a"),
    "t/unlisted.yaml": config_map("unlisted"),
    "t/sub/kustomization.yml": "resources:\n  - b.yaml\n",
    "t/sub/b.yaml": config_map("b"),
    "t/sub/other.yaml": config_map("other"),
    "shared/kustomization.yaml": "resources: [s.yaml]\n",
    "shared/s.yaml": config_map("s"),
}


@pytest.mark.parametrize("directory", ["", "t"])
def test_applied_files_are_the_files_kustomize_builds(tmp_path: Path, kubectl: Kubectl, directory: str) -> None:
    # what a tier's Flux Kustomization applies, which the duplicate and cross-Kustomization checks compare
    write_files(tmp_path, APPLIED_TREE)
    built = kubectl(tmp_path / directory)
    assert built.returncode == 0, built.stderr
    names = sorted(re.findall(r"^  name: (\w+)$", built.stdout, re.MULTILINE))
    assert object_names(applied_files(FsTree(str(tmp_path)), directory)) == names


@pytest.mark.parametrize(("top", "sub", "shared"), [
    ("", "", ""), ("outer", "", ""), ("", "inner", ""), ("outer", "inner", "own"), ("", "inner", "own")])
def test_applied_files_carry_the_namespace_kustomize_gives_their_objects(
        tmp_path: Path, kubectl: Kubectl, top: str, sub: str, shared: str) -> None:
    # the outermost `namespace:` wins: an outer transformer runs after the inner ones
    def ns(name: str) -> str:
        return f"namespace: {name}\n" if name else ""
    write_files(tmp_path, {**APPLIED_TREE, "t/Kustomization": ns(top) + "resources: [./a.yaml, sub, ../shared]\n",
                           "t/sub/kustomization.yml": ns(sub) + "resources:\n  - b.yaml\n",
                           "shared/kustomization.yaml": ns(shared) + "resources: [s.yaml]\n"})
    built = kubectl(tmp_path / "t")
    assert built.returncode == 0, built.stderr
    real = {d["metadata"]["name"]: d["metadata"].get("namespace", "") for d in YAML(typ="safe").load_all(built.stdout)}
    ours = {object_names([p])[0]: n for p, n in applied_files_in_namespaces(FsTree(str(tmp_path)), "t")}
    assert ours == real


def test_a_flux_target_namespace_is_the_outermost_one(tmp_path: Path) -> None:
    # also over a directory Flux generates the kustomization of, and the units below it
    write_files(tmp_path, {**APPLIED_TREE, "t/sub/kustomization.yml": "namespace: inner\nresources: [b.yaml]\n",
                           "gen/g.yaml": config_map("g"), "gen/unit/c.yaml": config_map("c"),
                           "gen/unit/kustomization.yaml": "namespace: u\nresources: [c.yaml]\n"})
    tree = FsTree(str(tmp_path))
    assert applied_files_in_namespaces(tree, "t", "target") == [
        ("t/a.yaml", "target"), ("t/sub/b.yaml", "target"), ("shared/s.yaml", "target")]
    assert applied_files_in_namespaces(tree, "gen", "target") == [
        ("gen/g.yaml", "target"), ("gen/unit/c.yaml", "target")]
    assert applied_files_in_namespaces(tree, "gen") == [("gen/g.yaml", ""), ("gen/unit/c.yaml", "u")]


def test_applied_files_are_only_what_resources_lists(tmp_path: Path, kubectl: Kubectl) -> None:
    # other fields name files too (a label value here, a components entry): kustomize applies none of them
    write_files(tmp_path, {**APPLIED_TREE,
                           "t/Kustomization": "commonLabels: {app: unlisted.yaml}\nnamePrefix: x-\n"
                                              "resources: [./a.yaml]\n",
                           "t/empty/kustomization.yaml": "# nothing yet\n"})
    built = kubectl(tmp_path / "t")
    assert built.returncode == 0, built.stderr
    assert re.findall(r"^  name: ([\w-]+)$", built.stdout, re.MULTILINE) == ["x-a"]
    assert applied_files(FsTree(str(tmp_path)), "t") == ["t/a.yaml"]
    assert applied_files(FsTree(str(tmp_path)), "t/empty") == []  # kustomize refuses it; it applies nothing


def test_applied_files_leave_out_remote_and_outside_references(tmp_path: Path) -> None:
    # kustomize would fetch these or refuse them; they are never files of this repository (and `..`
    # above the root is not a path wave-bot may even ask the work tree about)
    refs = ["./a.yaml", "https://github.com/org/repo//deploy?ref=v1", "../..", "../../x.yaml", "missing.yaml", "sub"]
    write_files(tmp_path, {**APPLIED_TREE, "t/Kustomization": "resources:\n" + "".join(f"  - {r}\n" for r in refs)})
    assert applied_files(FsTree(str(tmp_path)), "t") == ["t/a.yaml", "t/sub/b.yaml"]


def test_without_a_kustomization_every_yaml_file_below_is_applied_as_kustomize_controller_generates(
        tmp_path: Path) -> None:
    # kustomize-controller's generator lists each .yaml/.yml file below spec.path and takes a
    # subdirectory holding a kustomization as one unit (its listed files only)
    write_files(tmp_path, {
        "gen/a.yaml": config_map("a"),
        "gen/notes.txt": "not a manifest\n",
        "gen/sub/b.yml": config_map("b"),
        "gen/unit/kustomization.yaml": "resources: [c.yaml]\n",
        "gen/unit/c.yaml": config_map("c"),
        "gen/unit/d.yaml": config_map("d"),
    })
    assert applied_files(FsTree(str(tmp_path)), "gen") == ["gen/a.yaml", "gen/sub/b.yml", "gen/unit/c.yaml"]


def test_directories_that_list_each_other_are_read_once(tmp_path: Path) -> None:
    # kustomize fails on the cycle; wave-bot's inventory still ends, with each file once
    write_files(tmp_path, {
        "gen/a.yaml": config_map("a"),
        "gen/unit/kustomization.yaml": "resources: [c.yaml, .., ../unit]\n",
        "gen/unit/c.yaml": config_map("c"),
    })
    assert applied_files(FsTree(str(tmp_path)), "gen") == ["gen/a.yaml", "gen/unit/c.yaml"]
    assert applied_files(FsTree(str(tmp_path)), "gen/unit") == ["gen/unit/c.yaml", "gen/a.yaml"]
