"""bot.yamlio.edit: edits of hand-maintained YAML that insert or delete whole lines and nothing else."""
from __future__ import annotations

import pytest

from bot.errors import WaveBotError
from bot.yamlio.edit import insert_item, item_text, remove_item, substitute


@pytest.mark.parametrize(("source", "after", "expected"), [
    ("a: 1\nlist:\n- x\n- y\nb: 2\n", None, "a: 1\nlist:\n- x\n- y\n- new\nb: 2\n"),
    ("list:\n  - x # c\n  # about y\n  - y\n", 0, "list:\n  - x # c\n  - new\n  # about y\n  - y\n"),
    ("list:\n  -\n    k: v\n  - y\n", 0, "list:\n  -\n    k: v\n  - new\n  - y\n"),
    ("list: []\nz: 1\n", None, "list:\n  - new\nz: 1\n"),
    ("list:\nz: 1\n", None, "list:\n  - new\nz: 1\n"),
    ("other:\n    - a\n", None, "other:\n    - a\nlist:\n    - new\n"),
    ("x: 1", None, "x: 1\nlist:\n  - new\n"),
    ("list:\n  - x\n\n  # more to come\nz: 1\n", None, "list:\n  - x\n\n  # more to come\n  - new\nz: 1\n"),
    ("list:\n- x\n# about z\nz: 1\n", None, "list:\n- x\n- new\n# about z\nz: 1\n"),
])
def test_insert_item(source: str, after: int | None, expected: str) -> None:
    assert insert_item(source.encode(), "f.yaml", "list", "- new\n", after).decode() == expected


def test_insert_item_refuses_a_flow_list() -> None:
    with pytest.raises(WaveBotError, match=r"'patches' is a flow-style list \(\[...\]\); wave-bot adds only to "
                                           r"block lists") as caught:
        insert_item(b"patches: [{path: a.yaml}]\n", "k.yaml", "patches", "- path: b.yaml\n", None)
    assert caught.value.hint == "add the snippet by hand"


def test_insert_item_refuses_what_would_change_existing_content() -> None:
    with pytest.raises(WaveBotError, match="cannot add to 'list' without changing what is already there"):
        insert_item(b"list:\n  - |+\n    keep\n\n", "k.yaml", "list", "- new\n", None)


def test_substitute_replaces_whole_names_once() -> None:
    mapping = {"apps-wave-2": "apps-wave-3", "apps-wave-1": "apps-wave-2"}
    assert substitute("apps-wave-2 apps-wave-1 apps-wave-20 xapps-wave-1 ./apps-wave-2-sops", mapping) == (
        "apps-wave-3 apps-wave-2 apps-wave-20 xapps-wave-1 ./apps-wave-3-sops")


@pytest.mark.parametrize(("source", "index", "expected"), [
    ("a: 1\nlist:\n  - x # c\n  # about y\n  - y\nb: 2\n", 0, "a: 1\nlist:\n  # about y\n  - y\nb: 2\n"),
    ("list:\n  - x\n  - patch: |\n      a: b\n    target: {name: x}\n  - z\n", 1, "list:\n  - x\n  - z\n"),
    ("list:\n- x\n# about z\nz: 1\n", 0, "list: []\n# about z\nz: 1\n"),
    ("list:\n  -\n    k: v\n  - y\n", 0, "list:\n  - y\n"),
    ("list: # the list\n  - only\n", 0, "list: [] # the list\n"),
])
def test_remove_item(source: str, index: int, expected: str) -> None:
    assert remove_item(source.encode(), "f.yaml", "list", index).decode() == expected


def test_remove_item_then_insert_item_gives_the_file_back() -> None:
    source = b"resources:\n  - a.yaml # first\n  - b.yaml # second\n  - c.yaml\n"
    item = item_text(source, "k.yaml", "resources", 1)
    removed = remove_item(source, "k.yaml", "resources", 1)
    assert insert_item(removed, "k.yaml", "resources", item, 0) == source


@pytest.mark.parametrize(("source", "index", "message"), [
    (b"list: [a, b]\n", 0, r"'list' is a flow-style list"),
    (b"list:\n  - a\n", 1, r"'list' has no item 1"),
    (b"other: 1\n", 0, r"'list' has no item 0"),
])
def test_remove_item_refuses(source: bytes, index: int, message: str) -> None:
    with pytest.raises(WaveBotError, match=message):
        remove_item(source, "k.yaml", "list", index)
