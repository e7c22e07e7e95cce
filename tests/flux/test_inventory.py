"""inventory: what each wave applies, read from real trees (work tree and git revisions)."""
from __future__ import annotations

import os
import posixpath
from pathlib import Path

import pytest

from bot.config import Config, parse_config
from bot.errors import WaveBotError
from bot.flux.inventory import FluxKustomization, Inventory, Resource, ResourceId, StrayFile, read_inventory
from bot.flux.manifests import ParseCache
from bot.repo.git import GitTree
from bot.repo.worktree import FsTree
from bot.yamlio import documents as yamlio
from tests.conftest import Kubectl, deployment, git, pvc, write_files

KUSTOMIZE = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"


def listing(*names: str) -> str:
    return KUSTOMIZE + "resources:\n" + "".join(f"  - {n}\n" for n in names)


def inventory(root: Path, config: Config | None = None) -> Inventory:
    return read_inventory(FsTree(str(root)), config or Config())


def example_config(repo: Path) -> Config:
    return parse_config((repo / ".wave-bot.yaml").read_bytes(), ".wave-bot.yaml")


# ---- identity ------------------------------------------------------------------------------------


def test_resource_id_reads_like_kubectl() -> None:
    cluster = ResourceId.of("postgresql.cnpg.io/v1", "Cluster", "nextcloud-db", "nextcloud-db")
    assert cluster == ResourceId("postgresql.cnpg.io", "Cluster", "nextcloud-db", "nextcloud-db")
    assert str(cluster) == "postgresql.cnpg.io/Cluster nextcloud-db/nextcloud-db"
    assert str(ResourceId.of("v1", "PersistentVolumeClaim", "gitea", "gitea-data")) == (
        "PersistentVolumeClaim gitea/gitea-data"
    )
    assert str(ResourceId.of("v1", "Namespace", "", "gitea")) == "Namespace gitea"


def test_resource_id_ignores_the_version_and_orders_and_hashes() -> None:
    v1 = ResourceId.of("apps/v1", "Deployment", "a", "x")
    beta = ResourceId.of("apps/v1beta2", "Deployment", "a", "x")
    assert v1 == beta and {v1: 1}[beta] == 1
    assert sorted([ResourceId.of("v1", "Service", "b", "x"), v1]) == [ResourceId("", "Service", "b", "x"), v1]


# ---- the example repository ------------------------------------------------------------------------


def test_example_inventory_counts_sops_waves_and_lines(example_repo: Path) -> None:
    inv = inventory(example_repo, example_config(example_repo))
    assert inv.waves == (0, 1, 2)
    assert inv.counts() == {0: 27, 1: 20, 2: 4}
    assert inv.sops_waves() == frozenset({0, 1})
    assert inv.problems == () and inv.stray == ()
    assert inv.by_id[ResourceId("", "PersistentVolumeClaim", "gitea", "gitea-data")] == (
        Resource(ResourceId("", "PersistentVolumeClaim", "gitea", "gitea-data"), 0, "apps/wave-0/gitea.yaml", 9),
    )
    cnpg = inv.by_id[ResourceId("postgresql.cnpg.io", "Cluster", "nextcloud-db", "nextcloud-db")][0]
    assert (cnpg.path, cnpg.line) == ("apps/wave-0/nextcloud-db.yaml", 10)  # the apiVersion after a comment


def test_a_git_revision_reads_like_the_work_tree(example_repo: Path) -> None:
    config = example_config(example_repo)
    assert read_inventory(GitTree(str(example_repo), "HEAD"), config) == inventory(example_repo, config)


def test_flux_kustomizations_under_the_clusters_directory(example_repo: Path) -> None:
    inv = inventory(example_repo, example_config(example_repo))
    names = [k.id.name for k in inv.flux]
    assert names == ["apps-wave-0", "apps-wave-1", "apps-wave-2", "platform", "platform-config"]
    # clusters/prod/patches/apps-wave-0-sops.yaml patches the same object; the base definition is kept.
    assert inv.flux_by_id[ResourceId("kustomize.toolkit.fluxcd.io", "Kustomization", "flux-system",
                                     "apps-wave-0")] == FluxKustomization(
        ResourceId("kustomize.toolkit.fluxcd.io", "Kustomization", "flux-system", "apps-wave-0"),
        "clusters/base/apps-wave-0.yaml", 3, prune=True, source_path="./apps/wave-0",
        depends_on=("platform-config",), prune_line=15,
    )


def test_a_broken_file_under_clusters_is_a_problem_and_plain_kustomizations_are_not(tmp_path: Path) -> None:
    write_files(tmp_path, {
        "clusters/base/kustomization.yaml": listing("apps.yaml"),  # no metadata.name: fine
        "clusters/base/apps.yaml": "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n"
                                   "  name: apps\n  namespace: flux-system\nspec:\n  prune: true\n  path: ./apps\n",
        "clusters/dev/broken.yaml": "a: [\n",
    })
    inv = inventory(tmp_path)
    assert [(str(k.id), k.prune, k.source_path) for k in inv.flux] == [
        ("kustomize.toolkit.fluxcd.io/Kustomization flux-system/apps", True, "./apps"),
    ]
    [problem] = inv.problems
    assert (problem.path, problem.line, problem.wave) == ("clusters/dev/broken.yaml", 2, None)
    # nothing builds clusters/dev (no kustomization there, no Flux Kustomization with that path)
    assert problem.message == (
        "clusters/dev/broken.yaml:2: invalid YAML: while parsing a flow node: did not find expected node content. "
        "No build wave-bot knows of includes it (the base, an overlay or a Flux Kustomization), but wave-bot "
        "cannot check it for hazards"
    )


FLUX_SYSTEM = ("apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: flux-system\n"
               "  namespace: flux-system\nspec:\n  prune: true\n  path: ./clusters/dev\n")


@pytest.mark.parametrize(("listed_in", "builds"), [
    ("clusters/base/kustomization.yaml",
     "clusters/base, overlay clusters/dev, the Flux Kustomization flux-system/flux-system (./clusters/dev)"),
    ("clusters/dev/kustomization.yaml",
     "overlay clusters/dev, the Flux Kustomization flux-system/flux-system (./clusters/dev)"),
])
def test_a_file_kustomize_refuses_names_the_builds_that_include_it(
    tmp_path: Path, listed_in: str, builds: str
) -> None:
    kustomizations = {"clusters/base/kustomization.yaml": ["cluster-vars.yaml"],
                      "clusters/dev/kustomization.yaml": ["../base", "flux-system.yaml"]}
    kustomizations[listed_in].append("vars.yaml")
    write_files(tmp_path, {
        **{path: listing(*names) for path, names in kustomizations.items()},
        "clusters/base/cluster-vars.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cluster-vars\n",
        "clusters/dev/flux-system.yaml": FLUX_SYSTEM,
        # valid YAML 1.2 (kustomize reads it), but a key is repeated: kustomize refuses the object
        posixpath.join(posixpath.dirname(listed_in), "vars.yaml"):
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: vars\ndata: {url: http://a:8080/x}\n"
            "data:\n  k: v\n",
    })
    [problem] = inventory(tmp_path).problems
    assert problem.message == (
        f"{posixpath.dirname(listed_in)}/vars.yaml:6: mapping key \"data\" already defined at line 5. "
        f"kustomize cannot build {builds} until it is fixed, and wave-bot cannot check it for hazards"
    )


def test_patches_only_make_a_kustomization_more_dangerous(tmp_path: Path) -> None:
    flux = "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: {}\n" \
           "  namespace: flux-system\nspec:\n{}"
    write_files(tmp_path, {
        "clusters/base/kustomization.yaml": listing("a.yaml", "b.yaml"),
        "clusters/base/a.yaml": flux.format("a", "  prune: false\n  path: ./a\n"),
        "clusters/base/b.yaml": flux.format("b", "  prune: true\n  path: ./b\n"),
        "clusters/dev/kustomization.yaml": KUSTOMIZE + "resources: [../base]\npatches:\n  - path: a.yaml\n"
                                          "  - path: b.yaml\n  - path: ghost.yaml\n",
        "clusters/dev/a.yaml": flux.format("a", "  deletionPolicy: Delete\n"),
        "clusters/dev/b.yaml": flux.format("b", "  prune: false\n"),
        "clusters/dev/ghost.yaml": flux.format("ghost", "  prune: true\n"),  # patches nothing defined
    })
    flux_objects = inventory(tmp_path).flux
    assert [(k.id.name, k.path, k.prune, k.deletion_policy, k.deletes_on_removal) for k in flux_objects] == [
        ("a", "clusters/base/a.yaml", False, "Delete", True),
        ("b", "clusters/base/b.yaml", True, "", True),  # another overlay may still prune
    ]


@pytest.mark.parametrize("patch", [
    "  - patch: |\n      apiVersion: kustomize.toolkit.fluxcd.io/v1\n      kind: Kustomization\n"
    "      metadata:\n        name: apps\n        namespace: flux-system\n      spec:\n        prune: true\n",
    "  - target: {kind: Kustomization, name: apps}\n    patch: |\n      - op: replace\n        path: /spec/prune\n"
    "        value: true\n",
    "  - target: {kind: Kustomization, name: 'ap.*'}\n    patch: |\n      - op: add\n"
    "        path: /spec/deletionPolicy\n        value: Delete\n",
])
def test_an_inline_patch_that_makes_a_kustomization_delete_counts(
        tmp_path: Path, kubectl: Kubectl, patch: str) -> None:
    flux = "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: {}\n" \
           "  namespace: flux-system\nspec:\n{}"
    write_files(tmp_path, {
        "clusters/base/kustomization.yaml": listing("apps.yaml", "other.yaml"),
        "clusters/base/apps.yaml": flux.format("apps", "  prune: false\n  path: ./apps\n"),
        "clusters/base/other.yaml": flux.format("other", "  prune: false\n  path: ./other\n"),
        "clusters/dev/kustomization.yaml": KUSTOMIZE + "resources: [../base]\npatches:\n" + patch,
    })
    # What dev's build gives kustomize-controller: apps deletes what leaves it (other is untouched).
    built = {d.value["metadata"]["name"]: d.value["spec"]
             for d in yamlio.load(kubectl(tmp_path / "clusters/dev").stdout.encode(), "dev")}
    assert built["apps"].get("prune") is True or built["apps"].get("deletionPolicy") == "Delete"
    assert built["other"] == {"prune": False, "path": "./other"}
    found = {k.id.name: k for k in inventory(tmp_path).flux}
    assert found["apps"].deletes_on_removal and not found["other"].deletes_on_removal


def test_deletion_policy_decides_whether_removal_deletes() -> None:
    rid = ResourceId("kustomize.toolkit.fluxcd.io", "Kustomization", "flux-system", "apps")
    assert FluxKustomization(rid, "p", 1, prune=True).deletes_on_removal
    assert not FluxKustomization(rid, "p", 1, prune=False).deletes_on_removal
    assert not FluxKustomization(rid, "p", 1, prune=True, deletion_policy="Orphan").deletes_on_removal
    assert FluxKustomization(rid, "p", 1, prune=False, deletion_policy="Delete").deletes_on_removal


# ---- what a wave applies ---------------------------------------------------------------------------


def test_kustomization_yaml_decides_what_a_wave_applies(tmp_path: Path) -> None:
    write_files(tmp_path, {
        "apps/wave-0/kustomization.yaml": listing("./a.yaml", "sub", "https://example.com/x.yaml", "gone.yaml"),
        "apps/wave-0/a.yaml": deployment("a"),
        "apps/wave-0/unlisted.yaml": deployment("u"),
        "apps/wave-0/notes.txt": "not yaml",
        "apps/wave-0/sub/b.yaml": deployment("b"),  # listed, but kustomize refuses a directory without one
        "apps/loose.yaml": deployment("loose"),
    })
    inv = inventory(tmp_path)
    assert [f.path for f in inv.files] == ["apps/wave-0/a.yaml"]
    assert inv.counts() == {0: 2}
    assert [(p.code, p.path) for p in inv.problems] == [("invalid-manifest", "apps/wave-0/sub")]
    assert inv.stray == (StrayFile("apps/loose.yaml", None), StrayFile("apps/wave-0/unlisted.yaml", 0))


def test_without_kustomization_yaml_every_yaml_file_is_applied(tmp_path: Path) -> None:
    write_files(tmp_path, {
        "apps/wave-0/a.yaml": deployment("a"),
        "apps/wave-0/b.yml": pvc("data", "b"),
        "apps/wave-0/README.md": "# not applied",
        "apps/wave-1/kustomization.yaml": KUSTOMIZE + "resources: []\n",
        "apps/wave-x/c.yaml": deployment("c"),  # not a wave directory
    })
    inv = inventory(tmp_path)
    assert [f.path for f in inv.files] == ["apps/wave-0/a.yaml", "apps/wave-0/b.yml"]
    assert inv.waves == (0, 1)
    assert inv.counts() == {0: 3, 1: 0}


def test_a_wave_kustomization_that_is_no_kustomization_is_refused(tmp_path: Path) -> None:
    write_files(tmp_path, {"apps/wave-0/kustomization.yaml": "resources: gitea.yaml\n"})
    with pytest.raises(WaveBotError) as exc:
        inventory(tmp_path)
    assert str(exc.value) == (
        "apps/wave-0/kustomization.yaml:1: is not a kustomization with a list of resources\n"
        "  hint: run `wave-bot apply` to regenerate it"
    )


def test_a_symbolic_link_in_a_wave_is_refused(tmp_path: Path) -> None:
    write_files(tmp_path, {"outside.yaml": deployment("x"), "apps/wave-0/a.yaml": deployment("a")})
    os.symlink(tmp_path / "outside.yaml", tmp_path / "apps/wave-0/link.yaml")
    with pytest.raises(WaveBotError) as exc:
        inventory(tmp_path)
    assert exc.value.path == "apps/wave-0/link.yaml"
    assert "symbolic link" in exc.value.message


# ---- SOPS --------------------------------------------------------------------------------------------

SECRET = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n  namespace: a\n"


@pytest.mark.parametrize(
    ("name", "content", "sops"),
    [
        ("s.sops.yaml", SECRET + "stringData:\n  k: ENC[AES256_GCM,data:x,type:str]\n", True),  # by name
        ("s.yaml", SECRET + "stringData:\n  k: ENC[x]\nsops:\n  version: 3.9.0\n", True),  # by top-level key
        ("s.yaml", SECRET + "stringData:\n  sops: not a sops file\n", False),  # nested key: plain data
        ("s.yaml", SECRET, False),
    ],
)
def test_sops_files_by_name_or_top_level_key(tmp_path: Path, name: str, content: str, sops: bool) -> None:
    write_files(tmp_path, {f"apps/wave-1/{name}": content, "apps/wave-0/a.yaml": deployment("a")})
    inv = inventory(tmp_path)
    assert [f.sops for f in inv.files if f.wave == 1] == [sops]
    assert inv.sops_waves() == (frozenset({1}) if sops else frozenset())
    assert [str(r.id) for r in inv.files[1].resources] == ["Secret a/s"]  # metadata is clear text


def test_fully_encrypted_identity_is_skipped(tmp_path: Path) -> None:
    write_files(tmp_path, {"apps/wave-0/s.sops.yaml": "apiVersion: ENC[a]\nkind: ENC[b]\nmetadata:\n"
                           "  name: ENC[c]\nsops:\n  version: 3.9.0\n"})
    inv = inventory(tmp_path)
    assert inv.files[0].sops and inv.files[0].resources == () and inv.problems == ()


# ---- documents -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("metadata", "disabled"),
    [
        ("  annotations:\n    kustomize.toolkit.fluxcd.io/prune: disabled\n", True),
        ("  labels:\n    kustomize.toolkit.fluxcd.io/prune: Disabled\n", True),  # Flux compares case-blind
        ("  annotations:\n    kustomize.toolkit.fluxcd.io/prune: enabled\n", False),
        ("  annotations:\n    kustomize.toolkit.fluxcd.io/ssa: disabled\n", False),
        ("", False),
    ],
)
def test_prune_disabled_as_annotation_or_label(tmp_path: Path, metadata: str, disabled: bool) -> None:
    write_files(tmp_path, {"apps/wave-0/p.yaml": "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n"
                           f"  name: data\n  namespace: a\n{metadata}spec: {{}}\n"})
    assert [r.prune_disabled for r in inventory(tmp_path).resources] == [disabled]


def test_empty_documents_are_skipped(tmp_path: Path) -> None:
    write_files(tmp_path, {
        "apps/wave-0/a.yaml": "# header\n---\n---\n" + deployment("a") + "---\n# trailing\n",
        "apps/wave-0/empty.yaml": "",
    })
    inv = inventory(tmp_path)
    assert [(str(r.id), r.line) for r in inv.resources] == [("Service a/a", 22), ("apps/Deployment a/a", 4)]
    assert inv.problems == ()


def test_lists_are_expanded_like_kustomize_does(tmp_path: Path) -> None:
    write_files(tmp_path, {"apps/wave-0/list.yaml": (
        "apiVersion: v1\nkind: List\nitems:\n"
        "  - apiVersion: v1\n    kind: ConfigMap\n    metadata:\n      name: one\n      namespace: a\n"
        "  - apiVersion: v1\n    kind: ConfigMap\n    metadata:\n      name: two\n      namespace: a\n"
        "      annotations:\n        kustomize.toolkit.fluxcd.io/prune: disabled\n"
        "---\napiVersion: v1\nkind: ConfigMapList\nitems: []\n"
    )})
    inv = inventory(tmp_path)
    assert [(str(r.id), r.line, r.prune_disabled) for r in inv.resources] == [
        ("ConfigMap a/one", 4, False), ("ConfigMap a/two", 9, True),
    ]


def test_local_config_objects_are_not_applied(tmp_path: Path) -> None:
    write_files(tmp_path, {"apps/wave-0/a.yaml": deployment("a") + "---\napiVersion: v1\nkind: ConfigMap\n"
                           "metadata:\n  name: local\n  annotations:\n"
                           "    config.kubernetes.io/local-config: \"true\"\n"})
    assert [str(r.id) for r in inventory(tmp_path).resources] == ["Service a/a", "apps/Deployment a/a"]


@pytest.mark.parametrize(
    ("content", "line", "message"),
    [
        ("apiVersion: v1\nmetadata:\n  name: x\n", 1,
         "apps/wave-1/bad.yaml:1: the document has no kind; every Kubernetes object needs apiVersion, kind and "
         "metadata.name. kustomize cannot build wave 1 until it is fixed, and wave-bot cannot check it for hazards"),
        ("kind: ConfigMap\nmetadata:\n  namespace: x\n", 1,
         "apps/wave-1/bad.yaml:1: the document has no apiVersion or metadata.name; every Kubernetes object needs "
         "apiVersion, kind and metadata.name. kustomize cannot build wave 1 until it is fixed, and wave-bot "
         "cannot check it for hazards"),
        ("---\n- just\n- a list\n", 1,
         "apps/wave-1/bad.yaml:1: the document is not a Kubernetes object (a mapping with apiVersion, kind and "
         "metadata.name). kustomize cannot build wave 1 until it is fixed, and wave-bot cannot check it for "
         "hazards"),
        ("apiVersion: v1\nkind: List\nitems:\n  - kind: ConfigMap\n", 4,
         "apps/wave-1/bad.yaml:4: item 1 of this list has no apiVersion or metadata.name; every Kubernetes "
         "object needs apiVersion, kind and metadata.name. kustomize cannot build wave 1 until it is fixed, "
         "and wave-bot cannot check it for hazards"),
        ("apiVersion: v1\nkind: List\nitems:\n  - apiVersion: v1\n    kind: List\n    metadata: {name: x}\n", 4,
         "apps/wave-1/bad.yaml:4: item 1 of this List is itself a list; wave-bot expands one level of lists "
         "only. kustomize cannot build wave 1 until it is fixed, and wave-bot cannot check it for hazards"),
    ],
)
def test_unreadable_documents_are_reported_with_file_and_line(
    tmp_path: Path, content: str, line: int, message: str
) -> None:
    write_files(tmp_path, {"apps/wave-1/bad.yaml": deployment("ok") + "---\n" + content})
    inv = inventory(tmp_path)
    offset = deployment("ok").count("\n") + 1
    [problem] = inv.problems
    assert (problem.code, problem.severity, problem.path, problem.wave) == (
        "invalid-manifest", "error", "apps/wave-1/bad.yaml", 1)
    assert problem.line == line + offset
    assert problem.message == message.replace(f"bad.yaml:{line}:", f"bad.yaml:{line + offset}:")
    assert [str(r.id) for r in inv.resources] == ["Service ok/ok", "apps/Deployment ok/ok"]  # the rest is kept


@pytest.mark.parametrize(
    ("content", "message", "fix"),
    [
        (b"apiVersion: v1\nkind: [unclosed\n",
         "apps/wave-0/bad.yaml:3: invalid YAML: while parsing a flow sequence: did not find expected ',' or ']'",
         None),
        (b"apiVersion: v1\nkind: \xff\n",
         "apps/wave-0/bad.yaml:2: not a UTF-8 text file (binary or wrongly encoded bytes)", "save it as UTF-8 text"),
        (b"a: [" * 101, "apps/wave-0/bad.yaml: YAML nested more than 100 levels deep", None),
    ],
)
def test_a_file_that_is_no_yaml_is_one_problem(tmp_path: Path, content: bytes, message: str, fix: str | None) -> None:
    write_files(tmp_path, {"apps/wave-0/bad.yaml": content, "apps/wave-0/good.yaml": deployment("a")})
    inv = inventory(tmp_path)
    [problem] = inv.problems
    assert problem.message == message + (
        ". kustomize cannot build wave 0 until it is fixed, and wave-bot cannot check it for hazards"
    )
    assert problem.fix == fix
    assert [f.path for f in inv.files] == ["apps/wave-0/good.yaml"]


# ---- parsing once ---------------------------------------------------------------------------------------


@pytest.fixture
def scans(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Counts yamlio.scan calls per path."""
    calls: dict[str, int] = {}
    real = yamlio.scan

    def counting(data: bytes, path: str, **kwargs: object) -> list[yamlio.DocInfo]:
        calls[path] = calls.get(path, 0) + 1
        return real(data, path, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(yamlio, "scan", counting)
    return calls


def test_an_unchanged_file_is_parsed_once_across_base_and_now(example_repo: Path, scans: dict[str, int]) -> None:
    config = example_config(example_repo)
    with open(example_repo / "apps/wave-0/pihole.yaml", "a") as handle:
        handle.write("# edited\n")
    git(example_repo, "mv", "apps/wave-2/seerr.yaml", "apps/wave-1/seerr.yaml")  # moved, bytes unchanged
    wave_1 = (example_repo / "apps/wave-1/kustomization.yaml").read_text()
    (example_repo / "apps/wave-1/kustomization.yaml").write_text(wave_1 + "  - seerr.yaml\n")
    (example_repo / "apps/wave-2/kustomization.yaml").write_text(KUSTOMIZE + "resources: []\n")
    git(example_repo, "commit", "-qam", "edit pihole, move seerr")
    cache = ParseCache()
    base = read_inventory(GitTree(str(example_repo), "HEAD~1"), config, cache)
    now = read_inventory(FsTree(str(example_repo)), config, cache)
    assert base.counts()[2] == 4 and now.counts()[1] == 24
    app_scans = {p: n for p, n in scans.items() if p.startswith("apps/") and not p.endswith("/kustomization.yaml")}
    assert app_scans["apps/wave-0/pihole.yaml"] == 2  # changed bytes: once per tree
    assert app_scans["apps/wave-2/seerr.yaml"] == 1 and "apps/wave-1/seerr.yaml" not in app_scans
    assert {n for path, n in app_scans.items() if path != "apps/wave-0/pihole.yaml"} == {1}
    assert all(n == 1 for path, n in scans.items() if path.startswith("clusters/") and "/kustomization" not in path)
    before = cache.parses
    read_inventory(FsTree(str(example_repo)), config, cache)
    assert cache.parses == before  # a third read parses nothing


def test_a_file_of_many_broken_documents_is_a_handful_of_findings(tmp_path: Path) -> None:
    write_files(tmp_path, {"apps/wave-0/junk.yaml": "---\na: 1\n" * 200})
    inventory = read_inventory(FsTree(str(tmp_path)), Config())
    messages = [f.message for f in inventory.problems]
    assert len(messages) == 6
    assert "and 195 more documents that are not Kubernetes objects" in messages[-1]


@pytest.mark.parametrize("namespace", ["on", "y", "0o17"])
def test_a_unit_namespace_kustomize_reads_as_no_string_is_a_problem(tmp_path: Path, kubectl: Kubectl,
                                                                    namespace: str) -> None:
    # kustomize reads a kustomization with YAML 1.1's booleans: `namespace: on` stops the build
    write_files(tmp_path, {
        "apps/wave-0/kustomization.yaml": listing("app"),
        "apps/wave-0/app/kustomization.yaml": f"resources: [d.yaml]\nnamespace: {namespace}\n",
        "apps/wave-0/app/d.yaml": deployment("d"),
    })
    assert "cannot unmarshal" in kubectl(tmp_path / "apps/wave-0").stderr
    inv = inventory(tmp_path)
    assert inv.files == ()
    assert [(p.code, p.path, p.line) for p in inv.problems] == [
        ("invalid-manifest", "apps/wave-0/app/kustomization.yaml", 2)]
    assert "Kustomization.namespace of type string" in inv.problems[0].message


def test_a_cluster_scoped_object_in_a_unit_is_named_as_the_api_server_names_it(tmp_path: Path) -> None:
    """A unit kustomization's `namespace:` is written into a ClusterIssuer too (kustomize knows no CRD);
    the API server drops it, and so does the wave's inventory (bot/flux/scope.py)."""
    write_files(tmp_path, {
        "apps/wave-0/kustomization.yaml": listing("issuers"),
        "apps/wave-0/issuers/kustomization.yaml": KUSTOMIZE + "namespace: cert-manager\nresources: [a.yaml, b.yaml]\n",
        "apps/wave-0/issuers/a.yaml": "apiVersion: cert-manager.io/v1\nkind: ClusterIssuer\nmetadata:\n  name: le\n",
        "apps/wave-0/issuers/b.yaml": "apiVersion: cert-manager.io/v1\nkind: Issuer\nmetadata:\n  name: ca\n",
    })
    ids = {str(r.id) for f in inventory(tmp_path).files for r in f.resources}
    assert ids == {"cert-manager.io/ClusterIssuer le", "cert-manager.io/Issuer cert-manager/ca"}
