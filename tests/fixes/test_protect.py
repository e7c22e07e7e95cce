"""bot.fixes.protect: the prune opt-out added as whole new lines, on exactly the named objects."""
from __future__ import annotations

import pytest

from bot.errors import WaveBotError
from bot.fixes.protect import protect
from bot.resid import ResourceId

PVC = ResourceId("", "PersistentVolumeClaim", "app", "data")
KEY = "kustomize.toolkit.fluxcd.io/prune: disabled"
ADDED = f"{KEY}  # wave-bot: move-held"  # marked: a later run tells it from the user's own


@pytest.mark.parametrize(("source", "expected"), [
    # no annotations yet: a new block, indented as metadata's keys are
    ("apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n    name: data\n    namespace: app\n",
     f"apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n    annotations:\n      {ADDED}\n    name: data\n"
     "    namespace: app\n"),
    # an annotations block: one line, indented as its keys are; comments stay
    ("apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:  # the claim\n  name: data\n  namespace: app\n"
     "  annotations:   # notes\n      a: b\n",
     "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:  # the claim\n  name: data\n  namespace: app\n"
     f"  annotations:   # notes\n      {ADDED}\n      a: b\n"),
    # CRLF line endings are kept
    ("apiVersion: v1\r\nkind: PersistentVolumeClaim\r\nmetadata:\r\n  name: data\r\n  namespace: app\r\n",
     f"apiVersion: v1\r\nkind: PersistentVolumeClaim\r\nmetadata:\r\n  annotations:\r\n    {ADDED}\r\n  name: data\r\n"
     "  namespace: app\r\n"),
    # already annotated: untouched
    (f"apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: data\n  namespace: app\n  annotations:\n"
     f"    {KEY}\n",
     f"apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: data\n  namespace: app\n  annotations:\n"
     f"    {KEY}\n"),
])
def test_protect_inserts_lines_only(source: str, expected: str) -> None:
    assert protect(source.encode(), "a.yaml", [PVC]).decode() == expected


def test_only_the_named_object_of_a_file_gains_the_annotation() -> None:
    other = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: data\n  namespace: app\n"
    pvc = "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: data\n  namespace: app\n"
    out = protect(f"---\n{other}---\n{pvc}".encode(), "a.yaml", [PVC]).decode()
    annotated = pvc.replace("metadata:\n", "metadata:\n  annotations:\n    " + ADDED + "\n")
    assert out == f"---\n{other}---\n{annotated}"


@pytest.mark.parametrize("source", [
    "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data, namespace: app}\n",
    "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: data\n  namespace: app\n  annotations: {a: b}\n",
    "apiVersion: v1\nkind: List\nitems:\n  - apiVersion: v1\n    kind: PersistentVolumeClaim\n    metadata:\n"
    "      name: data\n      namespace: app\n",
    # another value of the annotation: a second line would repeat the key, and wave-bot only adds lines
    "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: data\n  namespace: app\n  annotations:\n"
    "    kustomize.toolkit.fluxcd.io/prune: enabled\n",
])
def test_what_cannot_be_edited_by_inserting_lines_is_refused(source: str) -> None:
    with pytest.raises(WaveBotError) as caught:
        protect(source.encode(), "a.yaml", [PVC])
    assert caught.value.path == "a.yaml"


def test_a_manifest_without_a_final_newline_is_annotated_and_gains_only_the_newline() -> None:
    source = "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: data\n  namespace: app"
    assert protect(source.encode(), "a.yaml", [PVC]).decode() == (
        f"apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  annotations:\n    {ADDED}\n  name: data\n"
        "  namespace: app\n")


def test_the_refusal_says_which_block_cannot_take_a_line() -> None:
    # the reason is quoted in the move-held finding ("wave-bot cannot edit it safely (...)")
    flow = "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data, namespace: app}\n"
    with pytest.raises(WaveBotError) as caught:
        protect(flow.encode(), "a.yaml", [PVC])
    assert caught.value.message == "its metadata is not a block mapping wave-bot can add a line to"


def test_the_inserted_lines_end_as_the_metadata_line_does_in_a_file_of_mixed_endings() -> None:
    # an editor that wrote CRLF from `metadata:` on: the new lines end as the block they join
    source = "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\r\n  name: data\r\n  namespace: app\r\n"
    assert protect(source.encode(), "a.yaml", [PVC]).decode() == (
        f"apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\r\n  annotations:\r\n    {ADDED}\r\n"
        "  name: data\r\n  namespace: app\r\n")


def test_annotations_that_come_from_a_merge_key_are_refused_not_a_crash() -> None:
    # `<<` gives metadata an annotations mapping that has no line of its own to add one to
    merged = ("apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: data\n  namespace: app\n"
              "  <<: {name: other, annotations: {a: b}}\n")
    with pytest.raises(WaveBotError) as caught:
        protect(merged.encode(), "a.yaml", [PVC])
    assert (caught.value.path, caught.value.message) == (
        "a.yaml", "its metadata.annotations is not a block mapping wave-bot can add a line to")
