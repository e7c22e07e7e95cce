from __future__ import annotations

import datetime
import json
import subprocess
import sys
from pathlib import Path

import pytest

from bot.errors import WaveBotError
from bot.yamlio import documents as yamlio

from conftest import git

MANIFEST = b"""apiVersion: v1
kind: Namespace
metadata:
  name: gitea
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: gitea-data
  namespace: gitea
  annotations:
    kustomize.toolkit.fluxcd.io/prune: disabled
spec:
  resources: {requests: {storage: 1Gi}}
"""


def test_scan_reports_lines_and_captured_scalars_per_document() -> None:
    docs = yamlio.scan(MANIFEST, "gitea.yaml", capture=lambda p: p[:1] == ("metadata",) or p == ("kind",))
    assert [d.start_line for d in docs] == [1, 5]
    assert docs[0].scalars == {("kind",): "Namespace", ("metadata", "name"): "gitea"}
    assert docs[1].scalars[("metadata", "annotations", "kustomize.toolkit.fluxcd.io/prune")] == "disabled"
    assert docs[1].lines[("metadata", "namespace")] == 10
    assert docs[1].line(("spec", "resources", "requests", "storage", "deeper")) == 14
    assert all(d.is_mapping and not d.empty for d in docs)


def test_scan_marks_empty_and_non_mapping_documents() -> None:
    docs = yamlio.scan(b"---\n---\n- a\n---\nnull\n", "x.yaml")
    assert [(d.empty, d.is_mapping) for d in docs] == [(True, False), (False, False), (True, False)]


def test_load_constructs_with_safe_types_and_keeps_lines() -> None:
    doc = yamlio.load_one(b"a: 1\nb:\n  - x\n  - {to: y}\n", "f.yaml")
    assert doc is not None
    assert doc.value == {"a": 1, "b": ["x", {"to": "y"}]}
    assert doc.info.line(("b", 1, "to")) == 4


def test_load_one_of_an_empty_file_is_none() -> None:
    assert yamlio.load_one(b"# only a comment\n", "f.yaml") is None


@pytest.mark.parametrize(
    "data, message",
    [
        (b"a: [1, 2\nb: 3\n", "f.yaml:2: invalid YAML"),
        (b"a: b: c\n", "f.yaml:1: invalid YAML"),
        (b"a: 1\n\xff\xfe\n", "not a UTF-8 text file"),
        (b"\x00\x01\x02", "not a UTF-8 text file"),
        (b"a: !!python/object/apply:os.system [echo hi]\n",
         "f.yaml:1: unsupported YAML tag !!python/object/apply:os.system"),
        (b"a: *nothing\n", "f.yaml:1: invalid YAML"),
        (b"a: 1\na: 2\n", 'f.yaml:2: mapping key "a" already defined at line 1\n  hint: line 1 gives it "1", '
         'line 2 gives it "2"'),
        (b"x:\n  non_gating:\n  - pihole\n  # keep\n  non_gating: [gitea-actions]\n",
         'f.yaml:5: mapping key "non_gating" already defined at line 2\n  hint: line 2 gives it "- pihole", '
         'line 5 gives it "[gitea-actions]": keep the key once, merge the value of line 5 into line 2\'s '
         '(two lists become one list with the items of both) and delete the key on line 5'),
        (b"{a: 1, a: 2}\n", 'f.yaml:1: mapping key "a" already defined at line 1\n  hint: remove one of the two'),
    ],
)
def test_load_errors_name_file_and_line(data: bytes, message: str) -> None:
    with pytest.raises(WaveBotError) as exc:
        yamlio.load(data, "f.yaml")
    assert message in str(exc.value)


def test_billion_laughs_is_refused_without_expanding() -> None:
    lines = [b"a: &a [x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 10):
        prev, cur = chr(96 + i), chr(97 + i)
        lines.append(f"{cur}: &{cur} [{', '.join(['*' + prev] * 9)}]".encode())
    with pytest.raises(WaveBotError, match="holds more than 100,000 nodes once aliases are expanded"):
        yamlio.scan(b"\n".join(lines) + b"\n", "bomb.yaml")


@pytest.mark.parametrize(
    "data",
    [
        b"[" * 100_000 + b"]" * 100_000,  # libyaml is quadratic here: refused before it parses
        b"- " * 5_000 + b"x\n",  # ruamel's C composer overflows the C stack here
        b"".join(b"  " * i + b"k:\n" for i in range(300)),
    ],
    ids=["flow", "compact-sequence", "block"],
)
def test_deep_nesting_is_refused(data: bytes) -> None:
    with pytest.raises(WaveBotError, match="nested more than 100 levels deep"):
        yamlio.load(data, "deep.yaml")


def test_brackets_inside_ordinary_files_are_fine() -> None:
    data = b"---\nregex: '[a-z]{3}'\nlist: [[1, 2], [3, {a: [4]}]]\n" * 50
    assert yamlio.load(data, "f.yaml")[0].value["list"] == [[1, 2], [3, {"a": [4]}]]


def test_file_over_the_size_cap_is_refused() -> None:
    data = b"a: " + b"x" * yamlio.MAX_FILE_BYTES + b"\n"
    with pytest.raises(WaveBotError, match="big.yaml: file is larger than 1,048,576 bytes, the most wave-bot reads "
                       "of a YAML file"):
        yamlio.scan(data, "big.yaml")


def test_dump_keeps_key_order_quotes_ambiguous_strings_and_is_byte_stable() -> None:
    value = {"kind": "K", "apiVersion": "v1", "spec": {"flag": "true", "zip": "012", "var": "${X}", "n": [1]}}
    out = yamlio.dump(value, "# header\n")
    assert out == yamlio.dump(value, "# header\n")
    assert out.decode().splitlines() == [
        "# header",
        "kind: K",
        "apiVersion: v1",
        "spec:",
        "  flag: 'true'",
        "  zip: '012'",
        "  var: ${X}",
        "  n:",
        "    - 1",
    ]
    assert yamlio.load(out, "f")[0].value == value


def test_files_read_whole_have_a_much_smaller_node_budget() -> None:
    flat = b"[" + b",".join([b"0"] * 30_000) + b"]\n"  # 60 KB, fine to scan, too big to build
    assert len(yamlio.scan(flat, "f.yaml")) == 1
    with pytest.raises(WaveBotError, match="holds more than 20,000 nodes"):
        yamlio.load(flat, "catalog/f.yaml")


def test_too_many_documents_is_refused_early() -> None:
    with pytest.raises(WaveBotError, match="holds more than 1,000 YAML documents") as exc:
        yamlio.scan(b"---\na: 1\n" * 5_000, "m.yaml")
    assert exc.value.line == 2001
    with pytest.raises(WaveBotError, match="holds more than 100 YAML documents"):
        yamlio.load_one(b"---\na: 1\n" * 5_000, "catalog/m.yaml")


def test_long_lists_keep_their_captures_but_not_every_line() -> None:
    data = b"items:\n" + b"".join(b"  - n%d\n" % i for i in range(yamlio.MAX_ITEM_LINES + 50))
    (doc,) = yamlio.scan(data, "f.yaml", capture=lambda p: p[:1] == ("items",))
    assert doc.scalars[("items", yamlio.MAX_ITEM_LINES + 49)] == f"n{yamlio.MAX_ITEM_LINES + 49}"
    assert ("items", 5) in doc.lines and ("items", yamlio.MAX_ITEM_LINES + 1) not in doc.lines


def test_a_loader_is_freed_without_waiting_for_the_cyclic_collector() -> None:
    # ruamel's loader refers to itself; one left to the cyclic GC keeps its file's bytes until the
    # next full collection, thousands of them at once in a large repository.
    import gc

    def live_loaders() -> int:
        return sum(1 for o in gc.get_objects() if isinstance(o, yamlio._Loader))

    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        before = live_loaders()
        for _ in range(20):
            yamlio.load(MANIFEST, "apps/wave-0/gitea.yaml")
        assert live_loaders() == before
    finally:
        if enabled:
            gc.enable()


@pytest.mark.parametrize("data, value, scalars", [
    (b"roles: [os:etcd:backup]\n", {"roles": ["os:etcd:backup"]}, {("roles", 0): "os:etcd:backup"}),
    (b"data: {url: http://a:8080/x}\n", {"data": {"url": "http://a:8080/x"}}, {("data", "url"): "http://a:8080/x"}),
])
def test_yaml_1_2_that_libyaml_refuses_is_read_as_kustomize_reads_it(data: bytes, value: object,
                                                                     scalars: dict[yamlio.Path, str]) -> None:
    # libyaml (YAML 1.1) refuses a ':' inside a flow collection; go-yaml, and kubectl, read it
    assert yamlio.load(data, "f.yaml")[0].value == value
    (doc,) = yamlio.scan(data, "f.yaml", capture=lambda p: True, unique_keys=True)
    assert doc.scalars == scalars


@pytest.mark.parametrize("data, line, first, key", [
    (b"kind: A\nkind: B\n", 2, 1, "kind"),
    (b"a:\n  - b:\n      c: 1\n      d: 2\n      c: 3\n", 5, 3, "c"),
    (b"a: [{x: 1, x: 2}]\n", 1, 1, "x"),
    (b"ok: 1\n---\nk: [os:a:b]\nk: 2\n", 4, 3, "k"),  # in the YAML 1.2 fallback, in a later document
])
def test_a_repeated_key_at_any_depth_is_refused_as_go_yaml_words_it(data: bytes, line: int, first: int,
                                                                    key: str) -> None:
    with pytest.raises(yamlio.RepeatedKey) as exc:
        yamlio.scan(data, "f.yaml", unique_keys=True)
    assert (exc.value.line, exc.value.message) == (line, f'mapping key "{key}" already defined at line {first}')
    yamlio.scan(data, "f.yaml")  # a kustomization is scanned without the check: kustomize keeps one value


def test_load_can_keep_the_last_value_of_a_repeated_key_as_sigs_k8s_io_yaml_does() -> None:
    value = yamlio.load(b"a: 1\nb: {c: 1, c: 2}\na: 3\n", "f.yaml", duplicates="last")[0].value
    assert value == {"a": 3, "b": {"c": 2}}


@pytest.mark.parametrize("data, line, first, key", [
    (b"a: &a k\nm:\n  *a : 1\n  *a : 2\n", 4, 3, "k"),
    (b"a: &a k\nm:\n  *a : 1\n  k: 2\n", 4, 3, "k"),
    (b"a: &a {x: 1}\nm:\n  *a : 1\n  *a : 2\n", 4, 3, ""),
    (b"m:\n  ? [a]\n  : 1\n  ? [b]\n  : 2\n", 4, 2, ""),
])
def test_a_repeated_alias_or_collection_key_is_named_as_go_yaml_names_it(data: bytes, line: int, first: int,
                                                                         key: str) -> None:
    # go-yaml compares an alias key by the scalar it names, and every list or mapping key as ""
    with pytest.raises(yamlio.RepeatedKey) as exc:
        yamlio.scan(data, "f.yaml", unique_keys=True)
    assert (exc.value.line, exc.value.message) == (line, f'mapping key "{key}" already defined at line {first}')


@pytest.mark.parametrize("data, line", [(b"m:\n  ? [a]\n  : 1\n", 2), (b"a: &a {x: 1}\nm:\n  *a : 1\n", 3),
                                        (b"m:\n  ? [a]\n  : 1\n  ? {b: c}\n  : 2\n", 2)])  # not the same kind
def test_a_collection_as_a_key_of_an_object_is_refused(data: bytes, line: int) -> None:
    # kubectl: "invalid map key: []interface {}{"a"}" (an object is read into a map of strings)
    with pytest.raises(WaveBotError) as exc:
        yamlio.scan(data, "f.yaml", unique_keys=True)
    assert (exc.value.line, exc.value.message, exc.value.hint) == (
        line, "invalid map key: a list or mapping used as a mapping key", "write the key as a plain string")
    yamlio.scan(data, "f.yaml")  # a kustomization's: sigs.k8s.io/yaml reads it


def _identity(data: bytes) -> dict[yamlio.Path, str]:
    (doc,) = yamlio.scan(data, "f.yaml", capture=lambda p: p[0] in ("kind", "metadata"), unique_keys=True)
    return dict(doc.scalars)


def test_merge_keys_and_aliases_are_read_as_kustomize_expands_them() -> None:
    # measured with kubectl kustomize: a key written in the mapping wins, in a list the first mapping wins
    assert _identity(b"x: &a {kind: Secret, metadata: {name: s}}\nkind: ConfigMap\n<<: *a\n") == {
        ("kind",): "ConfigMap", ("metadata", "name"): "s"}
    assert _identity(b"a: &a {name: a1}\nb: &b {name: b1, namespace: nb}\nmetadata:\n  <<: [*a, *b]\n") == {
        ("metadata", "name"): "a1", ("metadata", "namespace"): "nb"}
    assert _identity(b"k: &k Secret\nkind: *k\nmetadata: &m {name: s}\n") == {
        ("kind",): "Secret", ("metadata", "name"): "s"}
    assert _identity(b"metadata:\n  !!merge <<: {name: tagged}\n") == {("metadata", "name"): "tagged"}
    assert _identity(b"metadata:\n  '<<': {name: quoted}\n") == {("metadata", "<<", "name"): "quoted"}


@pytest.mark.parametrize("value, line, problem", [
    ("5", 3, "map merge requires map or sequence of maps as the value"),
    ("~", 3, "map merge requires map or sequence of maps as the value"),
    ("*s", 3, "invalid map merge: received alias for a non-map value"),
    ("[{a: 1}, 5]", 3, "map merge requires map or sequence of maps as the value"),
    ("[[{a: 1}]]", 3, "invalid map merge: received a nested sequence"),
])
def test_a_merge_of_anything_but_mappings_is_refused_as_kustomize_words_it(value: str, line: int,
                                                                           problem: str) -> None:
    data = f"s: &s text\nmetadata:\n  <<: {value}\n  name: c\n".encode()
    v2 = "map merge requires map or sequence of maps as the value"  # a kustomization's: one word for all
    for read, expected in [(lambda: yamlio.scan(data, "f.yaml", unique_keys=True), problem),
                           (lambda: yamlio.load(data, "f.yaml"), problem),
                           (lambda: yamlio.scan(data, "f.yaml"), v2),
                           (lambda: yamlio.load(data, "f.yaml", duplicates="last"), v2)]:
        with pytest.raises(WaveBotError) as exc:
            read()
        assert (exc.value.path, exc.value.line, exc.value.message) == ("f.yaml", line, f"invalid YAML: {expected}")
        assert exc.value.hint == "merge a mapping (`<<: {k: v}`, `<<: *anchor` of a mapping) or a list of them"


def test_a_repeated_key_of_a_kustomization_keeps_only_its_last_value() -> None:
    # kustomize reads a kustomization with sigs.k8s.io/yaml: a second `resources:` replaces the first
    (doc,) = yamlio.scan(b"resources:\n- a.yaml\n- b.yaml\nnamespace: x\nresources:\n- c.yaml\n", "k.yaml",
                         capture=lambda p: True)
    assert doc.scalars == {("resources", 0): "c.yaml", ("namespace",): "x"}
    assert doc.line(("resources", 0)) == 6


REUSED_ANCHOR_SERVICE = """apiVersion: catalog.homelab.dev/v1alpha1
kind: ServiceDefinition
metadata:
  name: seerr
spec:
  description: &dep pihole
  image: &dep sonarr
  port: 5055
  dependencies:
    - to: *dep
      reason: TV requests
"""


def test_valid_yaml_reusing_an_anchor_name_is_read_silently_with_the_latest_anchor(example_repo: Path) -> None:
    # YAML lets a later anchor take an earlier one's name; go-yaml (kustomize) and ruamel then resolve
    # an alias to the most recent one. ruamel also warns on stderr with the source lines: noise a user
    # of a valid repository (onedr0p/home-ops) must not see.
    (example_repo / "catalog" / "seerr.yaml").write_text(REUSED_ANCHOR_SERVICE)
    app = example_repo / "apps" / "wave-2" / "seerr.yaml"
    app.write_text(app.read_text().replace("  name: seerr\n  namespace: seerr\n",
                                           "  name: &n seerr\n  namespace: &n seerr\n  annotations: {a: *n}\n", 1))
    git(example_repo, "commit", "-qam", "reuse anchor names")
    done = subprocess.run([sys.executable, "-m", "bot", "plan", "--format", "json", str(example_repo)],
                          capture_output=True, text=True, check=False)
    assert done.stderr == ""
    assert done.returncode == 0, done.stdout
    out = json.loads(done.stdout)
    # through the second anchor seerr depends on sonarr (wave 1) alone: wave 2; the first (pihole,
    # wave 0) would put it in wave 1 and move its file
    assert out["waves"]["seerr"] == 2
    assert out["changes"] == []


def test_files_read_whole_keep_every_core_type_and_refuse_what_ruamel_refuses() -> None:
    # the plain mappings, lists and scalars of small files are built without ruamel's constructor:
    # each type must still come out as the safe loader makes it
    data = b"""s: text
q: "1"
i: 42
f: 1.5
b: true
n: ~
d: 2001-12-14
l: [a, 2, {k: null}]
"""
    (doc,) = yamlio.load(data, "x.yaml")
    assert doc.value == {"s": "text", "q": "1", "i": 42, "f": 1.5, "b": True, "n": None,
                         "d": datetime.date(2001, 12, 14), "l": ["a", 2, {"k": None}]}
    assert [type(v) for v in doc.value.values()] == [str, str, int, float, bool, type(None), datetime.date, list]
    with pytest.raises(yamlio.RepeatedKey, match='mapping key "a" already defined at line 1'):
        yamlio.load(b"a: 1\nb: 2\na: 3\n", "x.yaml")
    with pytest.raises(WaveBotError, match="unsupported YAML tag !thing"):
        yamlio.load(b"a: !thing b\n", "x.yaml")
