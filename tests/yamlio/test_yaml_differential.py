"""The YAML layer against real kustomize, on a generated corpus of YAML syntax edges.

Each case is one app manifest file (one or more documents) exercising one edge: flow scalars with
`:` `#` `,` `?`, URLs and ports in flow mappings, anchors, aliases and merge keys, block scalars
with every chomping and indentation indicator, CRLF, a BOM, tabs, document markers, YAML 1.1
spellings in every value wave-bot reads, repeated keys at every level, empty and comment-only
documents, several documents. For each case wave-bot's reading (`ParseCache`, as `plan` reads a
wave) must agree with `kubectl kustomize`: it fails exactly when kubectl fails, and otherwise the
objects (group, kind, namespace, name), the prune opt-out and, for Flux Kustomizations, spec.prune
(boolean or not) and spec.decryption are the same.

To stay fast, every case wave-bot reads is built by one kubectl process (each case a directory of
the same kustomization, labelled with its index); only the cases wave-bot refuses are built one by
one, a few processes at a time.
"""
from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML
from ruamel.yaml.constructor import SafeConstructor

from bot.errors import WaveBotError
from bot.flux.manifests import ParseCache
from bot.flux.vocabulary import FLUX_GROUP, PRUNE_KEY
from bot.yamlio import documents as yamlio

from conftest import installed_tool, write_files

LABEL = "wave-bot.test/case"
BOOLEANS = ("true", "false", "True", "False", "TRUE", "FALSE")
TIMESTAMP = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T")  # how kustomize prints a name it read as a timestamp
KNOWN = {
    # a merged mapping's own `<<`: kyaml leaves it in place, so kustomize finds no metadata.name given
    # only through it (and refuses the file) while its output has the name; wave-bot reads the output
    "merge 11", "merge 12",
}
"""Cases where wave-bot knowingly reads otherwise than kubectl: each must still disagree."""
FLUX = f"{FLUX_GROUP}/v1"

# Plain, quoted and tagged spellings whose reading differs between YAML 1.1 and 1.2, or that libyaml
# and go-yaml scan differently; each is written where wave-bot reads a value.
SPELLINGS = [
    "yes", "no", "on", "off", "y", "n", "Yes", "ON", "0755", "0o17", "0x1f", "1_000", "1e3", "+12", "-0",
    ".inf", "-.inf", ".NaN", "~", "null", "Null", "=", "true", "True", "TRUE", "false", "FALSE", "tRue",
    "'true'", '"false"', "!!str true", "!!bool true", "''", '""', "a:b", "os:etcd:backup", "a#b", "a #b",
    "'a: b'", "http://a:8080/x", "a,b", "x?", "?x", "-x", "a b", "'it''s'", '"a\\tb"', '"\\u00e9"', "é",
    "@x", "`x`", "%x", "*nope", "&anchor v", "!custom v", "[a]", "{a: b}", "|\n    v", ">-\n    v",
    "|2\n     v", "'multi\n    line'", "plain\n    continued", "x # comment", '"x" # c', "0", "1.0",
    "2001-12-14", "<<", "a\tb", "'\t'",
]
# Where a spelling goes: the name, the namespace, the prune opt-out, an unrelated annotation, and
# the spec.prune of a Flux Kustomization.
POSITIONS = ["name", "namespace", "prune-annotation", "annotation", "flux-prune"]


def _object(i: int, where: str, value: str) -> str:
    name = value if where == "name" else f"c{i}"
    namespace = value if where == "namespace" else f"n{i}"
    annotations = {"prune-annotation": f"    {PRUNE_KEY}: {value}\n", "annotation": f"    note: {value}\n"}
    head = (f"apiVersion: {FLUX}\nkind: Kustomization\n" if where == "flux-prune" else
            "apiVersion: v1\nkind: ConfigMap\n")
    text = f"{head}metadata:\n  name: {name}\n  namespace: {namespace}\n"
    if where in annotations:
        text += "  annotations:\n" + annotations[where]
    if where == "flux-prune":
        text += f"spec:\n  prune: {value}\n  path: ./x\n  interval: 1m\n"
    return text


def _structures(i: int) -> Iterator[str | bytes]:
    """Whole-file edges; each names its objects c<i>[...] in namespace n<i>."""
    meta = f"metadata:\n  name: c{i}\n  namespace: n{i}\n"
    cm = "apiVersion: v1\nkind: ConfigMap\n" + meta
    yield cm + "data: {url: http://a:8080/x, port: '8080', host: a:1}\n"
    yield cm + "roles: [os:etcd:backup, a#b, 'c,d', ?e, f?, g: h]\n"
    yield cm + "data: {a: b#c, d: e # comment\n  }\n"
    yield cm + "data: {? a : b, ? c}\n"
    yield cm + "data: [a, b]#no comment\n"
    yield cm + "data: {a: [1, {b: c:d}], e: http://f/g?h=i#j}\n"
    yield cm + "data:\n  a: {b: 1,\n    c: 2}\n"
    yield f"apiVersion: v1\nkind: ConfigMap\nmetadata: &m\n  name: c{i}\n  namespace: n{i}\ndata: *m\n"
    yield f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  <<: {{name: c{i}, namespace: n{i}}}\n"
    yield f"x: &base {{name: c{i}}}\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  <<: *base\n  namespace: n{i}\n"
    yield f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  <<: [{{name: c{i}}}, {{namespace: n{i}}}]\n"
    yield f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c{i}\n  <<: {{name: other, namespace: n{i}}}\n"
    yield f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: &n c{i}\n  namespace: n{i}\n  labels: {{a: *n}}\n"
    yield f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: *undefined\n  namespace: n{i}\n"
    for indicator in ["|", "|-", "|+", ">", ">-", ">+", "|2", "|2-", "|1+", ">2", "|-2", ">+1"]:
        yield cm + f"data:\n  k: {indicator}\n    line one\n\n     indented\n    last\n\n\n  after: x\n"
    yield cm + "data:\n  k: |\n  bad: indentation\n"
    yield cm.replace("\n", "\r\n") + "data:\r\n  k: |\r\n    a\r\n    b\r\n"
    yield b"\xef\xbb\xbf" + cm.encode()
    yield cm + "data:\n  k: \"a\tb\"\n  j: 'c\td'\n  l: e\t# comment\n"
    yield cm + "data:\n\tk: v\n"
    yield cm.replace("  name:", "\tname:")
    yield "---\n" + cm + "...\n"
    yield "--- # c\n" + cm + "---\n...\n---\n"
    yield "%YAML 1.2\n---\n" + cm
    yield "%YAML 1.1\n---\n" + cm
    yield f"--- {{apiVersion: v1, kind: ConfigMap, metadata: {{name: c{i}, namespace: n{i}}}}}\n"
    yield f"--- !!map\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c{i}, namespace: n{i}}}\n"
    yield "# only a comment\n"
    yield "---\n---\n# nothing\n---\n"
    yield ""
    yield "\n\n"
    yield cm + "---\n---\n" + cm.replace(f"c{i}", f"c{i}b")
    yield cm + "--- # second\n" + cm.replace(f"c{i}", f"c{i}b") + "...\n"
    yield cm + "---\n- a list\n"
    yield cm + "---\njust a scalar\n"
    yield f"apiVersion: v1\nkind: List\nitems:\n  - {{apiVersion: v1, kind: ConfigMap, metadata: {{name: c{i}, " \
          f"namespace: n{i}}}}}\n"
    yield cm + "  annotations:\n    config.kubernetes.io/local-config: 'true'\n"
    yield cm + "sops:\n  age: []\n"
    yield f"apiVersion: {FLUX}\nkind: Kustomization\n{meta}spec:\n  prune: true\n  decryption: {{provider: sops, " \
          "secretRef: {name: sops-age}}\n"
    yield f"apiVersion: {FLUX}\nkind: Kustomization\n{meta}spec:\n  prune: on\n  decryption:\n    provider: >-\n" \
          "      sops\n    secretRef: {name: 'sops-age'}\n"
    yield f"apiVersion: {FLUX}\nkind: Kustomization\n{meta}spec: &s\n  prune: false\n  decryption: &d " \
          "{provider: sops}\n  x: *d\n"


def _merges(i: int) -> Iterator[str]:
    """Merge keys (`<<`) wherever wave-bot reads a value: what wins, what kustomize refuses."""
    head = "apiVersion: v1\nkind: ConfigMap\n"
    flux = f"apiVersion: {FLUX}\nkind: Kustomization\nmetadata:\n  name: c{i}\n  namespace: n{i}\n"
    yield f"x: &a {{kind: Secret, metadata: {{name: c{i}, namespace: n{i}}}}}\napiVersion: v1\n<<: *a\n"
    yield f"x: &a {{kind: Secret, metadata: {{name: other}}}}\n{head}<<: *a\n" \
          f"metadata: {{name: c{i}, namespace: n{i}}}\n"
    yield f"a: &a {{name: c{i}, namespace: n{i}}}\nb: &b {{name: other, namespace: other}}\n{head}metadata:\n" \
          "  <<: [*a, *b]\n"
    yield f"{head}metadata:\n  <<: [{{namespace: n{i}}}, {{namespace: other, name: c{i}}}]\n"
    yield f"a: &a {{namespace: n{i}}}\n{head}metadata:\n  <<: [*a, {{namespace: other}}]\n  name: c{i}\n"
    yield f"{head}metadata:\n  !!merge <<: {{name: c{i}, namespace: n{i}}}\n"
    yield f"{head}metadata:\n  '<<': {{name: other}}\n  name: c{i}\n  namespace: n{i}\n"
    yield f"{head}metadata:\n  <<: []\n  name: c{i}\n  namespace: n{i}\n"
    yield f"{head}metadata:\n  name: c{i}\n  namespace: n{i}\n  annotations:\n    <<: {{{PRUNE_KEY}: disabled}}\n"
    yield f"{head}metadata:\n  name: c{i}\n  namespace: n{i}\n  labels:\n    <<: {{{PRUNE_KEY}: Disabled}}\n"
    yield f"{head}metadata:\n  <<: {{<<: {{name: c{i}, namespace: other}}, namespace: n{i}}}\n  name: c{i}\n"
    yield f"{head}metadata:\n  <<: {{<<: {{name: c{i}, namespace: other}}, namespace: n{i}}}\n"
    yield f"x: &a {{<<: {{name: c{i}}}, namespace: n{i}}}\n{head}metadata:\n  <<: *a\n"
    yield f"{head}metadata:\n  <<: {{<<: {{namespace: n{i}}}}}\n  name: c{i}\n"
    yield f"{flux}spec:\n  <<: {{prune: true, path: ./x}}\n  prune: false\n  interval: 1m\n"
    yield f"s: &s {{prune: on, decryption: {{provider: sops}}}}\n{flux}spec:\n  <<: *s\n  path: ./x\n"
    yield f"{flux}spec:\n  <<: [{{prune: false}}, {{prune: true}}]\n  path: ./x\n"
    for value in ["5", "~", "*s", "[{namespace: a}, 5]", "[[{namespace: a}]]", "[*s]", "x", "!!str a"]:
        yield f"s: &s str\n{head}metadata:\n  name: c{i}\n  namespace: n{i}\n  <<: {value}\n"
    yield f"{head}metadata:\n  name: c{i}\n  namespace: n{i}\ndata:\n  x:\n    y:\n      <<: 5\n"
    yield f"{head}metadata:\n  name: c{i}\n  namespace: n{i}\n  <<: {{a: 1}}\n  <<: {{b: 2}}\n"


def _aliases(i: int) -> Iterator[str]:
    """Aliases wherever wave-bot reads a value, and as mapping keys (go-yaml names them by what they name)."""
    head = "apiVersion: v1\nkind: ConfigMap\n"
    meta = f"metadata:\n  name: c{i}\n  namespace: n{i}\n"
    yield f"k: &k ConfigMap\napiVersion: v1\nkind: *k\n{meta}"
    yield f"m: &m {{name: c{i}, namespace: n{i}}}\n{head}metadata: *m\n"
    yield f"n: &n c{i}\n{head}metadata:\n  name: *n\n  namespace: n{i}\n"
    yield f"{head}{meta}  annotations: &a {{{PRUNE_KEY}: disabled}}\n  labels: *a\n"
    yield f"a: &a k\n{head}{meta}data:\n  *a : 1\n  *a : 2\n"
    yield f"a: &a k\n{head}{meta}data:\n  *a : 1\n  k: 2\n"
    yield f"a: &a k\n{head}{meta}data:\n  k: 1\n  *a : 2\n"
    yield f"a: &a k\n{head}{meta}*a : 1\nk: 2\n"
    yield f"a: &a {{x: 1}}\n{head}{meta}data:\n  *a : 1\n  *a : 2\n"
    yield f"a: &a [x]\n{head}{meta}data:\n  *a : 1\n"
    yield f"{head}{meta}data:\n  ? [a]\n  : 1\n"
    yield f"{head}{meta}data:\n  ? [a]\n  : 1\n  ? [b]\n  : 2\n"
    yield f"{head}{meta}data:\n  ? [a]\n  : 1\n  ? {{b: c}}\n  : 2\n"
    yield f"{head}{meta}data:\n  '': 1\n  ? [b]\n  : 2\n"
    yield f"{head}metadata:\n  name: &a c{i}\n  namespace: n{i}\n  *a : 2\n"
    yield f"a: &a name\n{head}metadata:\n  *a : c{i}\n  namespace: n{i}\n"
    yield f"a: &a name\n{head}metadata:\n  *a : c{i}\n  name: other\n  namespace: n{i}\n"


def _repeated(i: int) -> Iterator[str]:
    """A key repeated at every level: kustomize refuses each (go-yaml: already defined)."""
    meta = f"metadata:\n  name: c{i}\n  namespace: n{i}\n"
    cm = "apiVersion: v1\nkind: ConfigMap\n" + meta
    yield cm + "kind: ConfigMap\n"
    yield cm + f"  name: c{i}\n"
    yield cm + "  labels: {a: b, a: b}\n"
    yield cm + "data:\n  k: v\n  k: w\n"
    yield cm + "data:\n  x:\n    - a: 1\n      b: 2\n      a: 3\n"
    yield cm + "data: [{a: 1}, {b: 1, b: 2}]\n"
    yield cm + "data:\n  'k': 1\n  \"k\": 2\n"
    yield cm + "data:\n  <<: {a: 1}\n  <<: {b: 2}\n"
    yield cm + "x: 1\n---\n" + cm.replace(f"c{i}", f"c{i}b") + "y: 1\ny: 2\n"
    yield cm + "roles: [os:etcd:backup]\nroles: []\n"  # in a file libyaml refuses
    flux = f"apiVersion: {FLUX}\nkind: Kustomization\n{meta}spec:\n  path: ./x\n"
    yield flux + "  prune: true\n  prune: false\n"
    yield flux + "  decryption: {provider: sops}\n  decryption: {provider: sops}\n"
    yield flux + "  prune: true\n  'prune': true\n"
    yield f"a: &a prune\n{flux}  prune: false\n  *a : true\n"


def corpus() -> list[tuple[str, bytes]]:
    cases: list[tuple[str, bytes]] = []

    def add(label: str, text: str | bytes) -> None:
        cases.append((label, text if isinstance(text, bytes) else text.encode()))

    for where in POSITIONS:
        for value in SPELLINGS:
            add(f"{where}: {value}", _object(len(cases), where, value))
    for n, text in enumerate(_structures(0)):
        i = len(cases)
        structure = text.replace(b"c0", f"c{i}".encode()).replace(b"n0", f"n{i}".encode()) if isinstance(text, bytes) \
            else text.replace("c0", f"c{i}").replace("n0", f"n{i}")
        add(f"structure {n}", structure)
    for family, generated in (("merge", _merges(0)), ("alias", _aliases(0))):
        for n, text in enumerate(generated):
            add(f"{family} {n}", text.replace("c0", f"c{len(cases)}").replace("n0", f"n{len(cases)}"))
    for n, text in enumerate(_repeated(0)):
        add(f"repeated key {n}", text.replace("c0", f"c{len(cases)}").replace("n0", f"n{len(cases)}"))
    return cases


# ---- the two readings -------------------------------------------------------------------------


Reading = list[tuple[Any, ...]]
"""One tuple per object, sorted: (group, kind, namespace, name, prune disabled, spec.prune, decryption)."""


def _flux_spec(value: Any) -> tuple[str, Any]:
    """(spec.prune: 'true'/'false' for a boolean, else 'not a boolean'; spec.decryption as given)."""
    spec = value.get("spec") if isinstance(value, dict) else None
    spec = spec if isinstance(spec, dict) else {}
    prune = spec.get("prune")
    shown = str(prune).lower() if isinstance(prune, bool) else "not a boolean" if "prune" in spec else ""
    return shown, spec.get("decryption")


def wave_bot(label: str, data: bytes) -> Reading | str:
    """What `plan` reads of the file (the error message when it refuses it)."""
    try:
        parsed = ParseCache().parse(data, f"apps/wave-0/{label}.yaml")
    except WaveBotError as exc:
        return exc.message
    bad = [o.problem for o in parsed.objects if o.id is None]
    if bad:
        return str(bad[0])
    # spec.decryption is read whole (bot.kustomize.build, bot.flux.evalpaths) where a build patches it
    flux = [d.value for d in yamlio.load(data, "f.yaml")] if b"decryption" in data else []
    out = []
    for obj in parsed.objects:
        assert obj.id is not None
        prune, decryption = "", None
        if obj.id.group == FLUX_GROUP:
            value: dict[str, Any] = next((v for v in flux if (v.get("metadata") or {}).get("name") == obj.id.name), {})
            _, decryption = _flux_spec(value)
            # hazards.invalid_prune_findings: YAML 1.2's spellings of the two booleans
            prune = obj.prune_value.lower() if obj.prune_value in BOOLEANS else "not a boolean" \
                if obj.prune_value else ""
        out.append((obj.id.group, obj.id.kind, obj.id.namespace, obj.id.name, obj.prune_disabled, prune, decryption))
    return sorted(out, key=repr)


class _Constructor(SafeConstructor):
    """kubectl prints the strings `=` and `<<` plain, which YAML 1.1 (ruamel's resolver) tags."""


_Constructor.add_constructor("tag:yaml.org,2002:value", SafeConstructor.construct_yaml_str)
_Constructor.add_constructor("tag:yaml.org,2002:merge", SafeConstructor.construct_yaml_str)
_KUBECTL_OUTPUT = YAML(typ="safe", pure=True)
_KUBECTL_OUTPUT.Constructor = _Constructor


def kubectl_objects(stdout: str) -> dict[str, Reading | str]:
    """Case index -> what kubectl built of it."""
    out: dict[str, Reading] = {}
    refused: set[str] = set()
    for value in _KUBECTL_OUTPUT.load_all(stdout):
        if not isinstance(value, dict):
            continue
        metadata = value.get("metadata") or {}
        labels = dict(metadata.get("labels") or {})
        case = labels.pop(LABEL)
        api = str(value.get("apiVersion", ""))
        annotations = metadata.get("annotations") or {}
        disabled = "disabled" in (str(annotations.get(PRUNE_KEY, "")).casefold(),
                                  str(labels.get(PRUNE_KEY, "")).casefold())
        prune, decryption = _flux_spec(value) if api.startswith(FLUX_GROUP + "/") else ("", None)
        namespace = metadata.get("namespace")
        identity = (value.get("kind"), "" if namespace is None else namespace, metadata.get("name"))
        if not all(isinstance(v, str) for v in identity) or any(TIMESTAMP.match(str(v)) for v in identity):
            # built, but no object the API server takes (a name 493 for `name: 0755`, a namespace
            # true): wave-bot must refuse it
            refused.add(case)
        out.setdefault(case, []).append((api.rpartition("/")[0], *identity, disabled, prune, decryption))
    return {case: "not a valid object" if case in refused else sorted(objects, key=repr)
            for case, objects in out.items()}


def _lay_out(root: Path, cases: list[tuple[str, bytes]], indexes: list[int]) -> None:
    files: dict[str, str | bytes] = {}
    for i in indexes:
        # `labels` (not commonLabels) touches metadata.labels only: the case's objects stay as written
        files[f"c{i}/kustomization.yaml"] = f"resources: [m.yaml]\nlabels:\n- pairs: {{{LABEL}: '{i}'}}\n"
        files[f"c{i}/m.yaml"] = cases[i][1]
    files["kustomization.yaml"] = "resources:\n" + "".join(f"- c{i}\n" for i in indexes)
    write_files(root, files)


def test_wave_bot_reads_every_yaml_edge_as_kubectl_does(tmp_path: Path) -> None:
    kubectl = str(installed_tool("kubectl"))
    cases = corpus()
    assert len(cases) >= 400
    ours = {i: wave_bot(label, data) for i, (label, data) in enumerate(cases)}
    read = [i for i, verdict in ours.items() if not isinstance(verdict, str)]
    refused = [i for i, verdict in ours.items() if isinstance(verdict, str)]
    _lay_out(tmp_path, cases, list(range(len(cases))))
    disagree: dict[int, str] = {}
    # kustomize stops at the first file it refuses: the batch is halved until each refused case
    # stands alone (in the agreeing state, one build)
    pending, good, failed = [read], list[str](), set[int]()
    while pending:
        part = pending.pop()
        batch = tmp_path / f"batch{len(good)}-{len(pending)}-{part[0]}-{len(part)}"
        _lay_out(batch, cases, part)
        built = subprocess.run([kubectl, "kustomize", str(batch)], capture_output=True, text=True)
        if built.returncode == 0:
            good.append(built.stdout)
        elif len(part) == 1:
            i = part[0]
            failed.add(i)
            disagree[i] = f"{cases[i][0]!r}: {cases[i][1]!r}\n  wave-bot: {ours[i]}\n  kubectl: {built.stderr[-300:]}"
        else:
            pending += [part[:len(part) // 2], part[len(part) // 2:]]
    real = kubectl_objects("\n---\n".join(good))
    for i in read:
        if i not in failed:
            theirs = real.get(str(i), [])
            if isinstance(theirs, str) or ours[i] != theirs:
                disagree[i] = f"{cases[i][0]!r}: {cases[i][1]!r}\n  wave-bot: {ours[i]}\n  kubectl:  {theirs}"
    # every file wave-bot refuses, kubectl refuses too, or builds into no valid object: built alone,
    # eight processes at a time
    for start in range(0, len(refused), 8):
        running = [(i, subprocess.Popen([kubectl, "kustomize", str(tmp_path / f"c{i}")], stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, text=True)) for i in refused[start:start + 8]]
        for i, process in running:
            stdout, _ = process.communicate()
            if process.returncode == 0 and not isinstance(kubectl_objects(stdout).get(str(i)), str):
                disagree[i] = f"{cases[i][0]!r}: {cases[i][1]!r}\n  wave-bot: {ours[i]}\n  kubectl builds it"
    known = {cases[i][0] for i in disagree} & KNOWN
    unknown = [text for i, text in disagree.items() if cases[i][0] not in KNOWN]
    assert not unknown, f"{len(unknown)} of {len(cases)} cases disagree:\n" + "\n".join(unknown)
    assert known == KNOWN, f"no longer a known difference: {sorted(KNOWN - known)}"


@pytest.mark.parametrize("label, data", [c for c in corpus() if c[0].startswith("repeated key")],
                         ids=lambda v: v if isinstance(v, str) else "")
def test_a_repeated_key_is_refused_with_kustomizes_reason(label: str, data: bytes) -> None:
    verdict = wave_bot(label, data)
    assert isinstance(verdict, str) and " already defined at line " in verdict, verdict
