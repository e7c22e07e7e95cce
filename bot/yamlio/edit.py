"""Line-preserving edits of hand-maintained YAML files (kustomizations, patch files).

wave-bot adds to and removes from files people maintain by hand, full of comments: an edit only
inserts or deletes whole lines of one item of a top-level block list, every other byte stays, and
each result is parsed again and compared with what the edit meant (else WaveBotError, and the
caller shows a snippet instead). Also renders new items in the style these files use (`|` block
scalars for inline patches, two-space indentation).
"""
from __future__ import annotations

import io
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bot.errors import WaveBotError
from bot.yamlio import documents as yamlio

_NEW = object()
"""Stands for the inserted item in the list `insert_item` expects to get."""


class Literal(str):
    """A string to write as a `|` block scalar."""


def literal(value: Any) -> Literal:
    """`value` dumped as YAML, to be written as a `|` block scalar (an inline patch)."""
    return Literal(dump_text(value))


def _yaml() -> Any:
    from ruamel.yaml import YAML

    yaml = YAML(typ="rt")
    yaml.indent(mapping=2, sequence=2, offset=0)
    yaml.width = 4096
    return yaml


def _plain(value: Any) -> Any:
    from ruamel.yaml.scalarstring import LiteralScalarString

    if isinstance(value, Literal):
        return LiteralScalarString(str(value))
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def dump_text(value: Any) -> str:
    stream = io.StringIO()
    _yaml().dump(_plain(value), stream)
    return stream.getvalue()


def render_item(value: Any) -> str:
    """`value` as one block-sequence item, dash at column 0."""
    return dump_text([value]).rstrip("\n") + "\n"


def substitute(text: str, mapping: Mapping[str, str]) -> str:
    """Replace whole names (`apps-wave-2`, not the start of `apps-wave-20`) in one pass."""
    if not mapping:
        return text
    alternatives = "|".join(re.escape(k) for k in sorted(mapping, key=len, reverse=True))
    pattern = re.compile(rf"(?<![A-Za-z0-9_-])(?:{alternatives})(?![0-9])")
    return pattern.sub(lambda m: mapping[m.group(0)], text)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _is_comment_or_blank(line: str) -> bool:
    stripped = line.strip()
    return not stripped or stripped.startswith("#")


@dataclass(frozen=True)
class _ListLayout:
    """Where a top-level block list's items are: [start, end) line ranges, 0-based."""

    dash: int
    items: tuple[tuple[int, int], ...]


def _layout(lines: list[str], info: yamlio.DocInfo, key: str, count: int, path: str) -> _ListLayout:
    starts = []
    for i in range(count):
        start = info.lines[(key, i)] - 1
        while start > 0 and not lines[start].lstrip().startswith("-"):
            start -= 1  # the dash sits alone on a line above the item's content
        starts.append(start)
    if not starts:
        raise WaveBotError(f"'{key}' is an empty list", path=path)
    dash = _indent(lines[starts[0]])
    items = []
    for i, start in enumerate(starts):
        last = i + 1 == len(starts)
        end = _list_end(lines, start, dash) if last else starts[i + 1]
        while end - 1 > start and _belongs_to_next(lines[end - 1], dash, last):
            end -= 1
        items.append((start, end))
    return _ListLayout(dash, tuple(items))


def _belongs_to_next(line: str, dash: int, last: bool) -> bool:
    """Whether a blank or comment line after an item introduces what follows rather than ending the
    item: a comment at the dash's column heads the next item; after the last item, a comment still
    indented like the items stays with the list (it usually heads items yet to come)."""
    if not line.strip():
        return True
    if not line.lstrip().startswith("#"):
        return False
    indent = _indent(line)
    return indent < dash or (indent == dash and (not last or dash == 0))


def _list_end(lines: list[str], start: int, dash: int) -> int:
    for j in range(start + 1, len(lines)):
        line = lines[j]
        if _is_comment_or_blank(line):
            continue
        indent, stripped = _indent(line), line.strip()
        if indent < dash or (indent == dash and not (stripped.startswith("- ") or stripped == "-")):
            return j
    return len(lines)


def _lines(data: bytes) -> list[str]:
    text = data.decode()
    if text and not text.endswith("\n"):
        text += "\n"
    return text.splitlines(keepends=True)


def item_text(data: bytes, path: str, key: str, index: int) -> str:
    """The text of item `index` of the top-level list `key`, dedented to put its dash at column 0."""
    doc = yamlio.load_one(data, path)
    assert doc is not None and isinstance(doc.value, dict)
    lines = _lines(data)
    layout = _layout(lines, doc.info, key, len(doc.value[key]), path)
    start, end = layout.items[index]
    return "".join(line[layout.dash:] if line.strip() else line for line in lines[start:end])


def insert_item(data: bytes, path: str, key: str, item: str, after: int | None) -> bytes:
    """`data` with `item` (dash at column 0) added to the top-level list `key`, after item `after`
    (None: at the end). Only lines are inserted; the result is checked by parsing it again."""
    doc = yamlio.load_one(data, path)
    if doc is None or not isinstance(doc.value, dict):
        raise WaveBotError("is not a mapping; wave-bot cannot add to it", path=path)
    lines = _lines(data)
    value = doc.value.get(key)
    if key in doc.value and isinstance(value, list) and value:
        if "[" in lines[doc.info.line((key,)) - 1].split("#")[0]:
            raise WaveBotError(f"'{key}' is a flow-style list ([...]); wave-bot adds only to block lists",
                               path=path, line=doc.info.line((key,)), hint="add the snippet by hand")
        layout = _layout(lines, doc.info, key, len(value), path)
        at = layout.items[after if after is not None and after < len(value) else -1][1]
        position, dash = at, layout.dash
        cut = after + 1 if after is not None and after < len(value) else len(value)
        expected = [*value[:cut], _NEW, *value[cut:]]
    else:
        position, dash = _open_list(lines, doc, key, path)
        expected = [_NEW]
    new_lines = [(" " * dash + line) if line.strip() else line for line in item.splitlines(keepends=True)]
    out = "".join(lines[:position] + new_lines + lines[position:]).encode()
    _check_insert(out, path, doc.value, key, item, expected)
    return out


def _open_list(lines: list[str], doc: yamlio.Document, key: str, path: str) -> tuple[int, int]:
    """Where a list that is missing, null or `[]` gets its first item (lines may be rewritten)."""
    dash = _dash_of_any_list(lines, doc)
    if key not in doc.value:
        while lines and lines[-1].strip() in ("", "..."):
            lines.pop()
        lines.append(f"{key}:\n")
        return len(lines), dash
    index = doc.info.line((key,)) - 1
    line = lines[index]
    if doc.value[key] == []:
        lines[index] = re.sub(r":\s*\[\s*\]", ":", line, count=1)
    elif doc.value[key] is not None:
        raise WaveBotError(f"'{key}' is not a list", path=path, line=index + 1)
    return index + 1, dash


def _dash_of_any_list(lines: list[str], doc: yamlio.Document) -> int:
    for key, value in doc.value.items():
        if isinstance(value, list) and value and (key, 0) in doc.info.lines:
            line = lines[doc.info.lines[(key, 0)] - 1]
            if line.lstrip().startswith("-"):
                return _indent(line)
    return 2


def _check_insert(out: bytes, path: str, before: Mapping[str, Any], key: str, item: str, expected: list[Any]) -> None:
    """The edited file must parse to the old one with exactly `item` added where intended."""
    new = yamlio.load_one(out, path)
    parsed = yamlio.load_one(item.encode(), path)
    assert parsed is not None
    expected = [parsed.value[0] if v is _NEW else v for v in expected]
    rest_same = new is not None and isinstance(new.value, dict) and all(
        new.value.get(k) == v for k, v in before.items() if k != key)
    if not rest_same or new.value.get(key) != expected:  # type: ignore[union-attr]
        raise WaveBotError(f"cannot add to '{key}' without changing what is already there", path=path,
                           hint="add the snippet by hand")


def remove_item(data: bytes, path: str, key: str, index: int) -> bytes:
    """`data` without item `index` of the top-level block list `key`: the item's own lines go (its
    dash line, its content, comments inside it); comments above it and every other byte stay. An
    emptied list becomes `key: []`. The result is checked by parsing it again."""
    doc = yamlio.load_one(data, path)
    if doc is None or not isinstance(doc.value, dict):
        raise WaveBotError("is not a mapping; wave-bot cannot remove from it", path=path)
    value = doc.value.get(key)
    if not isinstance(value, list) or not 0 <= index < len(value):
        raise WaveBotError(f"'{key}' has no item {index}", path=path)
    lines = _lines(data)
    if "[" in lines[doc.info.line((key,)) - 1].split("#")[0]:
        raise WaveBotError(f"'{key}' is a flow-style list ([...]); wave-bot removes only from block lists",
                           path=path, line=doc.info.line((key,)), hint="remove the item by hand")
    layout = _layout(lines, doc.info, key, len(value), path)
    start, end = layout.items[index]
    kept = lines[:start] + lines[end:]
    if len(value) == 1:
        at = doc.info.line((key,)) - 1
        kept[at] = re.sub(rf"^({re.escape(key)}:)", r"\1 []", kept[at], count=1)
    out = "".join(kept).encode()
    new = yamlio.load_one(out, path)
    expected = [*value[:index], *value[index + 1:]]
    rest_same = new is not None and isinstance(new.value, dict) and all(
        new.value.get(k) == v for k, v in doc.value.items() if k != key) and set(new.value) == set(doc.value)
    if not rest_same or new.value.get(key) != expected:  # type: ignore[union-attr]
        raise WaveBotError(f"cannot remove item {index} of '{key}' without changing anything else", path=path,
                           hint="remove the item by hand")
    return out


_MARKER = re.compile(r"---(\s|$)")


def remove_document(data: bytes, path: str, index: int) -> bytes | None:
    """`data` without its document `index` (as `yamlio.load` counts them): the lines from that
    document's `---` (or the file's start) to the next `---` go, every other byte stays. None when no
    other document holds anything (the file itself can go). The result is checked by parsing it again.
    """
    docs = yamlio.load(data, path)
    if not 0 <= index < len(docs):
        raise WaveBotError(f"has no document {index + 1}", path=path)
    lines = _lines(data)
    markers = [i for i, line in enumerate(lines) if _MARKER.match(line)]
    start = docs[index].info.start_line - 1
    # A document's first line is its `---` or its first node; its chunk starts at the marker.
    begin = max((m for m in markers if m <= start), default=0)
    end = min((m for m in markers if m > start), default=len(lines))
    kept = lines[:begin] + lines[end:]
    others = [d.value for i, d in enumerate(docs) if i != index and d.value is not None]
    if not others:
        return None
    out = "".join(kept).encode()
    again = [d.value for d in yamlio.load(out, path) if d.value is not None]
    if again != others:
        raise WaveBotError(f"cannot remove document {index + 1} (line {start + 1}) without changing the others",
                           path=path, line=start + 1, hint="move that document into a file of its own, then run "
                                                            "wave-bot again")
    return out


__all__ = ["Literal", "dump_text", "insert_item", "item_text", "literal", "remove_document", "remove_item",
           "render_item", "substitute"]


def _bounded(text: str, written: str, start: int) -> int:
    """Where `written` stands on `text` (from `start`) as a whole scalar: not inside a longer one."""
    at = text.find(written, start)
    while at >= 0:
        before, after = text[at - 1:at] or " ", text[at + len(written):at + len(written) + 1] or "\n"
        if before in " \t[,-" and after in " \t,]#\r\n":
            return at
        at = text.find(written, at + 1)
    return -1


def replace_scalar(data: bytes, path: str, index: int, key_path: tuple[str | int, ...], value: str) -> bytes:
    """`data` with the string at `key_path` of document `index` set to `value`: only the scalar on its
    line changes (its quotes kept), every other byte stays. The result is parsed again and must differ
    from the input exactly there, else WaveBotError (the caller names the line to edit by hand)."""
    docs = yamlio.load(data, path)
    doc = docs[index]
    old: Any = doc.value
    for part in key_path:
        old = old[part]
    line = doc.info.line(key_path)
    if not isinstance(old, str) or line == doc.info.start_line and key_path:
        raise WaveBotError(f"cannot find {'.'.join(map(str, key_path))} on a line of its own", path=path,
                           line=line, hint=f"write {value} there by hand")
    lines = _lines(data)
    text = lines[line - 1]
    start = text.find(f"{key_path[-1]}:") + len(f"{key_path[-1]}:") if isinstance(key_path[-1], str) else 0
    for quote in ('"', "'", ""):
        written = f"{quote}{old}{quote}"
        at = _bounded(text, written, start)
        if at >= 0 and (quote or "#" not in text[:at]):
            lines[line - 1] = text[:at] + f"{quote}{value}{quote}" + text[at + len(written):]
            break
    out = "".join(lines).encode()
    try:
        new = yamlio.load(out, path)
    except WaveBotError:
        new = []
    expected: Any = new[index].value if len(new) == len(docs) else None
    for part in key_path[:-1]:
        expected = expected[part] if expected is not None else None
    same_elsewhere = len(new) == len(docs) and all(
        a.value == b.value for i, (a, b) in enumerate(zip(docs, new, strict=True)) if i != index)
    if out == data or expected is None or expected[key_path[-1]] != value or not same_elsewhere:
        raise WaveBotError(f"cannot set {'.'.join(map(str, key_path))} to {value} by editing its line",
                           path=path, line=line, hint=f"write {value} there by hand")
    return out
