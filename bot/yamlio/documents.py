"""Reading YAML from a hostile repository safely and fast, and writing the files the bot generates.

Every YAML byte the bot reads goes through `scan()` first: one pass over libyaml's event stream
(no composing, no constructing) that enforces the limits below, records the line of every key
near the top of each document, and captures the few scalars the caller asks for. App manifests
need nothing more (their identity and `sops:` key), which keeps `plan` cheaper than a full parse.
Small files the bot must understand whole (catalog, config, kustomizations) are then constructed
by ruamel's C safe loader, which knows only the YAML core tags.

What is valid is what kustomize (Go: go-yaml v3 behind kyaml and sigs.k8s.io/yaml, YAML 1.2) says.
libyaml scans YAML 1.1 and refuses some YAML 1.2 that Go reads (`[os:etcd:backup]`,
`{url: http://a:8080/x}`: a ':' inside a flow collection). When it refuses a file, that file alone
is read again by ruamel's pure-Python YAML 1.2 parser, and only its verdict counts; the fast path
keeps its speed for the files libyaml reads. A repeated mapping key is kept as Go keeps it: an
object kustomize builds (a resource, a strategic-merge patch) refuses it at any depth (go-yaml:
`mapping key "k" already defined at line N`), a kustomization or a JSON6902 patch keeps the last
value (sigs.k8s.io/yaml), so callers say which (`unique_keys`, `duplicates`); an alias key is the
scalar it names. A file with an alias or a merge key (`<<`) has its values read a second time with
both expanded as kustomize expands them (`_Expanded`): the scan alone would miss a name given only
through one.
"""
from __future__ import annotations

import io
import re
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ruamel.yaml.constructor import ConstructorError, DuplicateKeyError
from ruamel.yaml.error import MarkedYAMLError, YAMLError, YAMLFutureWarning, YAMLWarning
from ruamel.yaml.events import (
    AliasEvent,
    DocumentEndEvent,
    DocumentStartEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
)
from ruamel.yaml.nodes import MappingNode, ScalarNode, SequenceNode
from ruamel.yaml.reader import ReaderError

from bot.errors import WaveBotError

try:  # the C extension is a declared dependency; the fallback only keeps a broken install usable
    from ruamel.yaml.cyaml import CParser as _Parser  # type: ignore[attr-defined]
    from ruamel.yaml.cyaml import CSafeLoader as _Loader
except ImportError:  # pragma: no cover
    from ruamel.yaml.loader import SafeLoader as _Loader  # type: ignore[assignment]

    def _Parser(data: bytes) -> Any:
        return _Loader(data)


class RepeatedKey(WaveBotError):
    """A mapping key written twice in one mapping, worded as go-yaml (and so kustomize) words it."""

    def __init__(self, key: str, first: int, line: int, path: str, hint: str = "remove one of the two") -> None:
        shown = '"' + key.replace("\\", "\\\\").replace('"', '\\"') + '"'
        super().__init__(f"mapping key {shown} already defined at line {first}", path=path, line=line, hint=hint)
        self.key, self.first = key, first


_NOT_BRACKETS = bytes(range(256)).translate(None, b"[]{}")

MAX_FILE_BYTES = 1 << 20
"""Largest YAML file read (1 MiB, the size of the largest object etcd stores)."""
MAX_DEPTH = 100
"""Deepest nesting accepted; real manifests stay far below, hostile ones crash parsers."""
MAX_NODES = 100_000
"""Most nodes a file may hold once every alias is expanded (stops "billion laughs"); bounds a scan to
well under a second (bench/hostile_bench.py)."""
MAX_LOAD_NODES = 20_000
"""Most nodes of a file read whole into Python objects (catalog, config, kustomizations, patches):
building objects costs ten times more than scanning."""
MAX_DOCUMENTS = 1_000
"""Most YAML documents in one file."""
MAX_ITEM_LINES = 10_000
"""List items past this index get no line recorded (a huge flat list would otherwise fill memory)."""
TINY_FILE = 4096
"""A file this small without aliases is built straight away: it cannot hold more than ~2,000 nodes."""
LINE_DEPTH = 4
"""How deep key paths get their line recorded (enough for `spec.dependencies[i].to`)."""

Path = tuple[str | int, ...]
_STR_TAG = "tag:yaml.org,2002:str"


@dataclass(frozen=True)
class DocInfo:
    """What `scan()` learned about one YAML document."""

    start_line: int
    lines: Mapping[Path, int]
    """1-based line of each key path down to LINE_DEPTH (for a key: the line the key is on)."""
    scalars: Mapping[Path, str]
    """Scalar values at the paths the caller asked to capture."""
    is_mapping: bool
    empty: bool
    strings: frozenset[Path] = frozenset()
    """Captured paths whose scalar is a YAML string whatever it spells: quoted, or tagged !!str."""

    def line(self, path: Path) -> int:
        """Line of `path`, else of its nearest recorded parent, else of the document."""
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return self.start_line


class _Lines:
    """The scan of one file for its key lines: done at most once, and for small files only on demand."""

    def __init__(self, data: bytes, path: str, infos: list[DocInfo] | None) -> None:
        self._data, self._path, self._infos = data, path, infos

    def get(self) -> list[DocInfo]:
        if self._infos is None:
            self._infos = scan(self._data, self._path)
        return self._infos


class Document:
    """A fully loaded YAML document, and (`info`) where its keys are."""

    def __init__(self, value: Any, lines: _Lines, index: int) -> None:
        self.value = value
        self._lines = lines
        self._index = index

    @property
    def info(self) -> DocInfo:
        return self._lines.get()[self._index]


def _error(path: str, message: str, line: int | None = None, hint: str | None = None) -> WaveBotError:
    return WaveBotError(message, path=path, line=line, hint=hint)


def too_large() -> str:
    """The refusal of a file over MAX_FILE_BYTES. Not its size: a tree reads one byte past the cap."""
    return f"file is larger than {MAX_FILE_BYTES:,} bytes, the most wave-bot reads of a YAML file"


def _check_bytes(data: bytes, path: str) -> None:
    if len(data) > MAX_FILE_BYTES:
        raise _error(path, too_large(), hint="split it into several files")
    # libyaml's time grows quadratically with flow nesting ([[[[...); refuse the obvious case on the
    # raw bytes before parsing. Brackets inside strings skew this count either way, so the real
    # guard is the depth check in the scan, which stops at the first level too deep.
    if data.count(b"[") + data.count(b"{") <= MAX_DEPTH:
        return
    depth = 0
    for char in data.translate(None, _NOT_BRACKETS):
        depth = depth + 1 if char in b"[{" else max(depth - 1, 0)
        if depth > MAX_DEPTH:
            raise _error(path, f"YAML nested more than {MAX_DEPTH} levels deep")


def _mark_line(exc: YAMLError, data: bytes) -> int | None:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    if mark is not None:
        return int(mark.line) + 1
    position = getattr(exc, "position", None)
    if isinstance(position, int):
        return data.count(b"\n", 0, position) + 1
    return None


def _yaml_error(exc: YAMLError, data: bytes, path: str) -> WaveBotError:
    if isinstance(exc, ReaderError):
        return _error(
            path,
            "not a UTF-8 text file (binary or wrongly encoded bytes)",
            _mark_line(exc, data),
            "save it as UTF-8 text",
        )
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    context = getattr(exc, "context", None)
    text = f"{context}: {problem}" if context else str(problem)
    return _error(path, f"invalid YAML: {text}", _mark_line(exc, data))


def _with_values(exc: RepeatedKey, data: bytes) -> RepeatedKey:
    """The repeated key with both values as written and how to merge them: "remove one of the two"
    would lose one of them (a pasted `non_gating` snippet beside an existing one, say)."""
    lines = data.decode("utf-8", "replace").splitlines()
    first, again = exc.first - 1, (exc.line or 0) - 1
    if not (0 <= first < again < len(lines)) or exc.path is None:
        return exc
    column = _indent(lines[again])
    key = re.escape(exc.key)
    block_key = re.compile(rf"\s{{{column}}}(?:\"{key}\"|'{key}'|{key})\s*:(?:\s|$)")
    if not (block_key.match(lines[first]) and block_key.match(lines[again])):
        return exc  # a flow mapping, or a key after a list dash: no value to show on its own line
    return RepeatedKey(
        exc.key, exc.first, exc.line or 0, exc.path,
        hint=f"line {first + 1} gives it {_value_text(lines, first, column)}, line {again + 1} gives it "
             f"{_value_text(lines, again, column)}: keep the key once, merge the value of line {again + 1} into "
             f"line {first + 1}'s (two lists become one list with the items of both) and delete the key on line "
             f"{again + 1}",
    )


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _value_text(lines: list[str], at: int, column: int) -> str:
    """The value of the block mapping key on line `at` (at `column`), as written, on one line."""
    parts = [lines[at].split(":", 1)[1].strip()]
    for line in lines[at + 1:]:
        if line.strip() and (_indent(line) < column or _indent(line) == column and not line.lstrip().startswith("- ")):
            break
        parts.append(line.strip())
    text = " ".join(p for p in parts if p and not p.startswith("#"))
    shown = text if len(text) <= 80 else text[:77] + "..."
    return f'"{shown}"' if text else "no value"


class _Frame:
    """A collection still open while scanning."""

    __slots__ = ("is_map", "path", "anchor", "line", "is_key", "first", "index", "key", "key_line", "expect_key",
                 "keys", "bad_key", "child_paths", "child_lines")

    def __init__(self, is_map: bool, path: Path | None, anchor: str | None, line: int, is_key: bool, first: int,
                 path_depth: int, line_depth: int) -> None:
        self.is_map = is_map
        self.path = path  # None once deeper than anyone looks
        self.anchor = anchor
        self.line = line
        self.is_key = is_key  # a collection used as a mapping key (legal YAML, no usable name)
        self.first = first  # nodes counted before this one: it holds (count at its end) - first, aliases expanded
        self.index = 0
        self.key: str | int = "?"
        self.key_line = line
        self.expect_key = True
        self.keys: dict[str, int] | None = None  # scalar key -> its line, when repeated keys are refused
        self.bad_key = 0  # line of the first list or mapping used as a key
        # whether a child has a path (deep enough for anyone to look), and one whose line is recorded
        self.child_paths = path is not None and len(path) < path_depth
        self.child_lines = path is not None and len(path) < line_depth


_COLLECTION_KEYS = {True: "\0{}", False: "\0[]"}
"""How `_Scanner` tracks a mapping (True) or list used as a key: go-yaml compares a key by its kind
and text, and a collection's text is "" (so two lists as keys are a repeated key "", a list and a
mapping are not)."""


class _Scanner:
    """One pass over a file's events. The loop is written flat because it runs once per YAML node
    of every manifest in the repository: it is what `plan` spends most of its time in."""

    def __init__(self, file: str, capture: Callable[[Path], bool] | None, line_depth: int, capture_depth: int,
                 max_nodes: int, max_documents: int, unique_keys: bool = False) -> None:
        self.file = file
        self.unique_keys = unique_keys
        self.capture = capture
        self.line_depth = line_depth
        self.path_depth = max(line_depth, capture_depth if capture is not None else 0)
        self.max_nodes = max_nodes
        self.max_documents = max_documents
        self.expand = False
        """Whether an alias was met: its values are then read again from the file with every alias
        expanded (`_expanded`), as kustomize reads them."""

    def too_many(self, line: int) -> WaveBotError:
        return _error(self.file, f"YAML holds more than {self.max_nodes:,} nodes once aliases are expanded "
                      "(a 'billion laughs' bomb, or far too big a file)", line, "split the file")

    def repeated(self, key: str, first: int, line: int) -> RepeatedKey:
        return RepeatedKey("" if key in _COLLECTION_KEYS.values() else key, first, line, self.file)

    def again(self, top: _Frame, key: str, line: int,
              recorded: tuple[dict[Path, int], dict[Path, str], set[Path]]) -> None:
        """`key` is written a second time in the mapping `top`: refused (unique_keys, as kustomize
        reads an object), else what was recorded below its earlier value is forgotten, as
        sigs.k8s.io/yaml keeps only the last value (a kustomization's second `resources:` replaces the first)."""
        assert top.keys is not None
        if self.unique_keys:
            raise self.repeated(key, top.keys[key], line)
        if top.path is not None:
            prefix = (*top.path, key)
            lines, scalars, strings = recorded
            for table in (lines, scalars):
                for gone in [p for p in table if p[:len(prefix)] == prefix]:
                    del table[gone]
            strings.difference_update([p for p in strings if p[:len(prefix)] == prefix])

    def run(self, parser: Any) -> list[DocInfo]:
        # Written for speed, as it runs once per node of every manifest: the common events first, the
        # open collection in a local (`top`), a line read from its event only where it is recorded.
        capture, line_depth, path_depth, unique_keys = self.capture, self.line_depth, self.path_depth, self.unique_keys
        max_nodes = self.max_nodes
        docs: list[DocInfo] = []
        stack: list[_Frame] = []
        top: _Frame | None = None
        anchors: dict[str, int] = {}
        anchored: dict[str, str] = {}  # anchor -> its scalar's value, or a collection's _COLLECTION_KEYS
        lines: dict[Path, int] = {}
        scalars: dict[Path, str] = {}
        strings: set[Path] = set()
        root: str | None = None
        start_line = total = 0
        get_event = parser.get_event  # one call per event (not check_event and get_event): the hot loop
        scalar_event, mapping_start, sequence_start = ScalarEvent, MappingStartEvent, SequenceStartEvent
        mapping_end, sequence_end = MappingEndEvent, SequenceEndEvent
        while True:
            event = get_event()
            cls = type(event)
            if cls is scalar_event and top is not None:
                total += 1
                if total > max_nodes:
                    raise self.too_many(event.start_mark.line + 1)
                if event.anchor:
                    anchors[event.anchor] = 1
                    anchored[event.anchor] = event.value
                if top.expect_key and top.is_map:
                    value = event.value
                    top.key = value
                    keys = top.keys
                    if keys is not None:
                        line = top.key_line = event.start_mark.line + 1
                        if value in keys:
                            self.again(top, value, line, (lines, scalars, strings))
                        keys[value] = line
                    elif top.child_lines:
                        top.key_line = event.start_mark.line + 1
                    top.expect_key = False
                    continue
                if top.child_paths:
                    if top.is_map:
                        at = (*top.path, top.key)  # type: ignore[misc]
                        if top.child_lines:
                            lines.setdefault(at, top.key_line)
                    else:
                        at = (*top.path, top.index)  # type: ignore[misc]
                        if top.child_lines and top.index < MAX_ITEM_LINES:
                            lines.setdefault(at, event.start_mark.line + 1)
                    if capture is not None and capture(at):
                        scalars[at] = event.value
                        if event.implicit == (False, True) or event.tag == _STR_TAG:
                            strings.add(at)
                if top.is_map:
                    top.expect_key = True
                else:
                    top.index += 1
            elif cls is mapping_end or cls is sequence_end:
                frame = stack.pop()
                top = stack[-1] if stack else None
                if frame.bad_key and unique_keys:
                    # kustomize reads an object into a map[string]interface{}, after the repeated keys
                    raise _error(self.file, "invalid map key: a list or mapping used as a mapping key",
                                 frame.bad_key, "write the key as a plain string")
                if frame.anchor:
                    anchors[frame.anchor] = total - frame.first
                    anchored[frame.anchor] = _COLLECTION_KEYS[frame.is_map]
                if top is not None:
                    if frame.is_key:
                        top.key, top.key_line = "?", frame.line
                        if top.keys is not None:  # to go-yaml, two lists (or mappings) as keys are the same
                            key = _COLLECTION_KEYS[frame.is_map]
                            if key in top.keys:
                                self.again(top, key, frame.line, (lines, scalars, strings))
                            top.keys[key] = frame.line
                            top.bad_key = top.bad_key or frame.line
                    if top.is_map:
                        top.expect_key = not frame.is_key
                    else:
                        top.index += 1
            elif cls is scalar_event or cls is AliasEvent or cls is mapping_start or cls is sequence_start:
                line = event.start_mark.line + 1
                is_key = top is not None and top.is_map and top.expect_key
                path: Path | None = ()
                if top is not None:
                    if is_key or not top.child_paths:
                        path = None
                    else:
                        path = (*top.path, top.key if top.is_map else top.index)  # type: ignore[misc]
                        if top.child_lines and (top.is_map or top.index < MAX_ITEM_LINES):
                            lines.setdefault(path, top.key_line if top.is_map else line)
                if cls is mapping_start or cls is sequence_start:
                    if len(stack) >= MAX_DEPTH:
                        raise _error(self.file, f"YAML nested more than {MAX_DEPTH} levels deep", line)
                    if total + 1 > max_nodes:
                        raise self.too_many(line)
                    if top is None:
                        root = "map" if cls is mapping_start else "seq"
                    frame = _Frame(cls is mapping_start, path, event.anchor, line, is_key, total, path_depth,
                                   line_depth)
                    total += 1
                    # keys are tracked to refuse a repeat (unique_keys) or, where values are recorded,
                    # to keep the last value of one as sigs.k8s.io/yaml does (a kustomization)
                    if frame.is_map and (unique_keys or frame.child_paths):
                        frame.keys = {}
                    stack.append(frame)
                    top = frame
                    continue
                if cls is scalar_event:  # a document that is a scalar
                    size = 1
                    if event.anchor:
                        anchors[event.anchor] = 1
                        anchored[event.anchor] = event.value
                    null = event.implicit[0] and event.value in ("", "~", "null", "Null", "NULL")
                    root = ("nothing" if event.value == "" and not event.style else "empty") if null else "scalar"
                else:
                    found = anchors.get(event.anchor)
                    if found is None:
                        raise _error(self.file, f"invalid YAML: unknown alias *{event.anchor}", line)
                    size = found
                    self.expand = True
                    if is_key and top is not None:  # go-yaml names an alias key by its scalar, a collection ""
                        key = anchored.get(event.anchor, "")
                        collection = key in _COLLECTION_KEYS.values()
                        top.key, top.key_line = "?" if collection else key, line
                        if top.keys is not None:
                            if key in top.keys:
                                self.again(top, key, line, (lines, scalars, strings))
                            top.keys[key] = line
                            if collection:
                                top.bad_key = top.bad_key or line
                total += size
                if total > max_nodes:
                    raise self.too_many(line)
                if top is not None:
                    if top.is_map:
                        top.expect_key = not is_key
                    else:
                        top.index += 1
            elif cls is StreamEndEvent or event is None:
                break
            elif cls is DocumentStartEvent:
                lines, scalars, strings, anchors, anchored, root = {}, {}, set(), {}, {}, None
                start_line = event.start_mark.line + 1
                if len(docs) >= self.max_documents:
                    raise _error(self.file, f"holds more than {self.max_documents:,} YAML documents",
                                 start_line, "split the file")
                if getattr(event, "version", None) or getattr(event, "tags", None):
                    # kustomize splits a file at its '---' lines itself: a directive ends up alone
                    raise _error(self.file, "invalid YAML: did not find expected <document start> (kustomize "
                                 "refuses a %YAML or %TAG directive)", start_line, "remove the directive line")
            elif cls is DocumentEndEvent:
                if root == "nothing" and getattr(event, "explicit", False):
                    # split at '---' by kustomize, the '...' stands alone, which go-yaml refuses
                    raise _error(self.file, "invalid YAML: did not find expected node content (a '...' "
                                 "document end after an empty document)", event.start_mark.line + 1,
                                 "remove the '...' line")
                docs.append(DocInfo(start_line, lines, scalars, root == "map", root in (None, "empty", "nothing"),
                                    frozenset(strings)))
        return docs


def scan(
    data: bytes,
    path: str,
    *,
    capture: Callable[[Path], bool] | None = None,
    line_depth: int = LINE_DEPTH,
    capture_depth: int = 6,
    max_nodes: int = MAX_NODES,
    max_documents: int = MAX_DOCUMENTS,
    unique_keys: bool = False,
) -> list[DocInfo]:
    """Check `data` against the limits and describe each of its documents.

    Lines are recorded for key paths down to `line_depth`; `capture(path)` is asked for scalars down
    to `capture_depth`. Raises WaveBotError naming `path` and the line for invalid YAML, non-UTF-8
    bytes, files over MAX_FILE_BYTES, nesting over MAX_DEPTH and alias bombs, and (`unique_keys`, as
    kustomize reads an object) RepeatedKey for a key repeated in any mapping. Never constructs a
    Python object, so tags are not interpreted here.
    """
    _check_bytes(data, path)
    scanner = _Scanner(path, capture, line_depth, capture_depth, max_nodes, max_documents, unique_keys)
    events: Callable[[], Any] = lambda: _Parser(data)  # noqa: E731
    parser = events()
    try:
        docs = scanner.run(parser)
    except RepeatedKey as exc:
        raise _with_values(exc, data) from None
    except YAMLError as exc:
        if not _go_reads_more(exc):
            raise _yaml_error(exc, data, path) from None
        # a ':' in a flow collection: the YAML 1.2 parser decides, below
        docs = None
    finally:
        _dispose(parser)
    if docs is None:
        events = lambda: _PureEvents(data)  # noqa: E731
        try:
            docs = scanner.run(events())
        except RepeatedKey as exc:
            raise _with_values(exc, data) from None
        except YAMLError as exc:  # go-yaml refuses it too, and says what the YAML 1.2 parser says
            raise _yaml_error(exc, data, path) from None
    if not scanner.expand and not (b"<<" in data and _MERGE_KEY.search(data)) and b"!!merge" not in data:
        return docs  # (a shell heredoc `cat <<EOF` in a ConfigMap is no merge key)
    # Aliases and merge keys, rare in manifests: the values read again with both expanded, as
    # kustomize reads them; the first pass has refused what it refuses and counted every node.
    again = _Scanner(path, capture, line_depth, capture_depth, max_nodes, max_documents)
    parser = events()
    try:
        return again.run(_Expanded(parser, path, in_order=not unique_keys))
    finally:
        _dispose(parser)


_MERGE_KEY = re.compile(rb"<<[ \t]*:")


def _go_reads_more(exc: YAMLError) -> bool:
    """Whether go-yaml v3 may read what libyaml refused. go-yaml is a port of libyaml and refuses what
    it refuses, but for a ':' inside a plain scalar of a flow collection (`[os:etcd:backup]`)."""
    return getattr(exc, "problem", None) == "found unexpected ':'"


class _PureEvents:
    """ruamel's pure-Python YAML 1.2 parser behind the one method `_Scanner.run` calls. ~20 times
    slower than libyaml, so it reads only the files libyaml refuses.

    go-yaml ends a plain scalar of a flow collection at a '?' (`[f?]`, `{u: http://h/p?q}` are
    errors to kustomize); the YAML 1.2 parser reads on, so such a scalar is refused here."""

    def __init__(self, data: bytes) -> None:
        from ruamel.yaml import YAML

        self._events = YAML(typ="safe", pure=True).parse(data)
        self._open: list[tuple[bool, str]] = []  # (in a flow collection, its closing bracket)

    def get_event(self) -> Any:
        event = next(self._events)
        cls = type(event)
        if cls is MappingStartEvent or cls is SequenceStartEvent:
            flow = bool(event.flow_style) or bool(self._open and self._open[-1][0])
            self._open.append((flow, "}" if cls is MappingStartEvent else "]"))
        elif cls is MappingEndEvent or cls is SequenceEndEvent:
            self._open.pop()
        elif cls is ScalarEvent and self._open and self._open[-1][0] and event.style is None and "?" in event.value:
            raise MarkedYAMLError("while parsing a flow collection", None,
                                  f"did not find expected ',' or '{self._open[-1][1]}'", event.start_mark)
        return event


MERGE_TAG = "tag:yaml.org,2002:merge"


class _Node:
    """A node of one document, composed from its events for `_Expanded` (no Python value built)."""

    __slots__ = ("event", "children", "end", "merged")

    def __init__(self, event: Any, children: list[_Node | _Alias] | None = None, end: Any = None) -> None:
        self.event, self.children, self.end = event, children, end
        self.merged: list[tuple[_Node | _Alias, _Node | _Alias]] | None = None


class _Alias:
    __slots__ = ("event", "target")

    def __init__(self, event: Any, target: _Node) -> None:
        self.event, self.target = event, target


def _target(node: _Node | _Alias) -> _Node:
    return node.target if isinstance(node, _Alias) else node


class _Expanded:
    """The events of a file as kustomize sees them: every alias replaced by the node it names, every
    merge key (`<<`) replaced by the keys it merges (kyaml's DeAnchor, then go-yaml's decoding).

    Measured with `kubectl kustomize` (tests/yamlio/test_yaml_differential.py): in an object a key
    written in the mapping wins over a merged one, in `<<: [*a, *b]` the first mapping wins, a merged
    mapping's own `<<` counts below both, and a merge of anything but a mapping or a list of mappings
    is refused. A kustomization (`in_order`, go-yaml v2 behind sigs.k8s.io/yaml) applies each merge
    key where it stands instead: what follows it overrides it, it overrides what precedes it.
    """

    def __init__(self, parser: Any, file: str, in_order: bool = False) -> None:
        self._file, self._in_order = file, in_order
        self._out = self._replay(parser)

    def get_event(self) -> Any:
        return next(self._out, None)

    def _replay(self, parser: Any) -> Iterator[Any]:
        def source() -> Iterator[Any]:
            while (event := parser.get_event()) is not None:
                yield event
                if type(event) is StreamEndEvent:
                    return

        events = source()
        anchors: dict[str, _Node] = {}
        for event in events:
            cls = type(event)
            if cls is ScalarEvent or cls is MappingStartEvent or cls is SequenceStartEvent or cls is AliasEvent:
                yield from self._emit(self._compose(event, events, anchors))
            else:
                if cls is DocumentStartEvent:
                    anchors = {}
                yield event

    def _compose(self, first: Any, events: Iterator[Any], anchors: dict[str, _Node]) -> _Node | _Alias:
        cls = type(first)
        if cls is AliasEvent:
            return _Alias(first, anchors[first.anchor])  # the first pass refused an unknown alias
        node = _Node(first)
        if cls is MappingStartEvent or cls is SequenceStartEvent:
            node.children = []
            for event in events:
                if type(event) is MappingEndEvent or type(event) is SequenceEndEvent:
                    node.end = event
                    break
                node.children.append(self._compose(event, events, anchors))
        if first.anchor:
            anchors[first.anchor] = node
        return node

    def _emit(self, root: _Node | _Alias) -> Iterator[Any]:
        # a stack, not nested generators: each event would otherwise pass through one per level
        stack: list[_Node | _Alias | Any] = [root]
        while stack:
            item = stack.pop()
            if not isinstance(item, _Node | _Alias):
                yield item  # a collection's end
                continue
            node = _target(item)
            yield node.event
            if node.children is None:
                continue
            stack.append(node.end)
            if type(node.event) is MappingStartEvent:
                stack.extend(child for pair in reversed(self._merged(node)) for child in reversed(pair))
            else:
                stack.extend(reversed(node.children))

    def _merged(self, node: _Node) -> list[tuple[_Node | _Alias, _Node | _Alias]]:
        """The entries of the mapping `node` once its merge key is applied."""
        if node.merged is not None:
            return node.merged
        children = node.children or []
        pairs = list(zip(children[::2], children[1::2], strict=True))
        merges = [(key, value) for key, value in pairs if _is_merge(_target(key))]
        if merges and self._in_order:
            in_order: dict[object, tuple[_Node | _Alias, _Node | _Alias]] = {}
            for key, value in pairs:
                merged = [p for s in reversed(self._sources(value)) for p in self._merged(s)] \
                    if _is_merge(_target(key)) else [(key, value)]
                in_order.update((_key_of(k), (k, v)) for k, v in merged)
            node.merged = list(in_order.values())
            return node.merged
        if len(merges) > 1:
            raise self._refuse("duplicate merge key", merges[1][0])
        if not merges:
            node.merged = pairs
            return pairs
        entries: dict[object, tuple[_Node | _Alias, _Node | _Alias]] = {}
        for source in reversed(self._sources(merges[0][1])):  # the first source is applied last: it wins
            for key, value in self._merged(source):
                entries[_key_of(key)] = (key, value)
        for key, value in pairs:  # a key written in the mapping wins over every merged one
            if not _is_merge(_target(key)):
                entries[_key_of(key)] = (key, value)
        node.merged = list(entries.values())
        return node.merged

    def _sources(self, value: _Node | _Alias) -> list[_Node]:
        """The mappings a merge key's value merges, first the one that wins (kyaml's words for what it refuses)."""
        target = _target(value)
        if type(target.event) is MappingStartEvent:
            return [target]
        if isinstance(value, _Alias):
            raise self._refuse("invalid map merge: received alias for a non-map value", value)
        if type(target.event) is not SequenceStartEvent:
            raise self._refuse("map merge requires map or sequence of maps as the value", value)
        out = []
        for item in target.children or []:
            if type(_target(item).event) is MappingStartEvent:
                out.append(_target(item))
            elif isinstance(item, _Alias):
                raise self._refuse("invalid map merge: received alias for a non-map value", item)
            elif type(item.event) is SequenceStartEvent:
                raise self._refuse("invalid map merge: received a nested sequence", item)
            else:
                raise self._refuse("map merge requires map or sequence of maps as the value", item)
        return out

    def _refuse(self, problem: str, at: _Node | _Alias) -> WaveBotError:
        if self._in_order:  # go-yaml v2 has one word for every such merge
            problem = "map merge requires map or sequence of maps as the value"
        return _error(self._file, f"invalid YAML: {problem}", at.event.start_mark.line + 1,
                      "merge a mapping (`<<: {k: v}`, `<<: *anchor` of a mapping) or a list of them")


def _is_merge(key: _Node) -> bool:
    event = key.event
    if type(event) is not ScalarEvent:
        return False
    return bool(event.tag == MERGE_TAG or event.value == "<<" and event.implicit[0] and not event.style)


def _key_of(key: _Node | _Alias) -> object:
    """What makes two keys the same key: a scalar's text; a collection (kustomize refuses it as a key
    of an object) is only ever itself."""
    target = _target(key)
    return target.event.value if target.children is None else target


def _dispose(parser: Any) -> None:
    dispose = getattr(parser, "dispose", None)
    if dispose is not None:
        dispose()
    # ruamel's loaders refer to themselves (loader._parser is the loader): without this, each one,
    # with the file it read, waits for a cyclic collection instead of being freed here.
    attributes = getattr(parser, "__dict__", None)
    if attributes is not None:
        attributes.clear()


_SEPARATORS = (b" ", b"\t", b"\r", b"\n")
_INDICATORS = [c + sep for c in (b"-", b":", b"?") for sep in _SEPARATORS]


def _plainly_bounded(data: bytes) -> bool:
    """Whether `data` is within every limit judged from its bytes alone: tiny, no alias, shallow.

    Every block collection starts at a '- ', 'key: ' or '? ' indicator and every flow one at a
    bracket, so fewer indicators than MAX_DEPTH bound the nesting. Such a file (most catalog files)
    is constructed straight away and scanned for its key lines only if an error needs them.
    """
    if len(data) > TINY_FILE or b"*" in data or b"&" in data:
        return False
    return sum(data.count(i) for i in _INDICATORS) + data.count(b"[") + data.count(b"{") < MAX_DEPTH


class _LastWins:
    """A constructor mixin reading a mapping as sigs.k8s.io/yaml (go-yaml v2) does: the last value of
    a repeated key counts, and each merge key is applied where it stands (several are allowed)."""

    def check_mapping_key(self, node: Any, key_node: Any, mapping: Any, key: Any, value: Any) -> bool:
        return True

    def flatten_mapping(self, node: Any) -> None:
        entries = []
        for key_node, value_node in node.value:
            if key_node.tag != MERGE_TAG:
                entries.append((key_node, value_node))
                continue
            # in a list the first mapping wins: it is applied last
            for source in reversed(value_node.value) if isinstance(value_node, SequenceNode) else [value_node]:
                if not isinstance(source, MappingNode):
                    raise ConstructorError("while constructing a mapping", node.start_mark,
                                           "map merge requires map or sequence of maps as the value",
                                           source.start_mark)
                self.flatten_mapping(source)
                entries.extend(source.value)
        node.value = entries


# YAML 1.1's value key `=` is a plain string to go-yaml; ruamel resolves it to a tag it cannot construct.
_VALUE_TAG = "tag:yaml.org,2002:value"


class _GoLoader(_Loader):
    pass


_GoLoader.add_constructor(_VALUE_TAG, _GoLoader.construct_yaml_str)


class _LastWinsLoader(_LastWins, _GoLoader):
    pass


_DEFAULT_STR, _DEFAULT_MAP, _DEFAULT_SEQ = (_GoLoader.DEFAULT_SCALAR_TAG, _GoLoader.DEFAULT_MAPPING_TAG,
                                            _GoLoader.DEFAULT_SEQUENCE_TAG)


def _pure_yaml(last_wins: bool) -> Any:
    from ruamel.yaml import YAML
    from ruamel.yaml.constructor import SafeConstructor

    constructor: Any = type("GoConstructor", (_LastWins, SafeConstructor) if last_wins else (SafeConstructor,), {})
    constructor.add_constructor(_VALUE_TAG, SafeConstructor.construct_yaml_str)
    yaml = YAML(typ="safe", pure=True)
    yaml.Constructor = constructor
    return yaml


_LEAN_SCALARS = frozenset(f"tag:yaml.org,2002:{t}" for t in ("null", "bool", "int", "float", "timestamp", "value"))
_MAP_TAG, _SEQ_TAG = "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"


class _NotLean(Exception):
    """A node `_lean` leaves to ruamel's constructor."""


def _lean(loader: Any, node: Any) -> Any:
    """The value ruamel's safe constructor builds from `node`, built directly: plain mappings, lists and
    scalars of the core tags, which is what the files read whole hold. Anything else (a merge key, a
    key repeated or not a scalar, another tag) raises _NotLean and the file is constructed by ruamel.
    Each scalar but a string goes through ruamel's own constructor for its tag, so values are the same."""
    tag = node.ctag
    cls = type(node)
    if cls is ScalarNode:
        if tag is _DEFAULT_STR:  # the resolver's own object for a plain or quoted string: no text to compare
            return node.value
        tag = node.tag
        if tag == _STR_TAG:
            return node.value
        if tag in _LEAN_SCALARS:
            return loader.yaml_constructors[tag](loader, node)
    elif cls is MappingNode and (tag is _DEFAULT_MAP or node.tag == _MAP_TAG):
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            if type(key_node) is not ScalarNode:
                raise _NotLean
            key = _lean(loader, key_node)
            if key in out:  # ruamel's check (Python equality: `1` and `true` are one key), then go-yaml's
                raise _NotLean
            out[key] = _lean(loader, value_node)
        return out
    elif cls is SequenceNode and (tag is _DEFAULT_SEQ or node.tag == _SEQ_TAG):
        return [_lean(loader, item) for item in node.value]
    raise _NotLean


def _construct(data: bytes, last_wins: bool, pure: bool) -> list[Any]:
    with warnings.catch_warnings():
        # ruamel warns, with source lines on stderr, about YAML that is valid to go-yaml: an anchor name
        # used again (a later anchor overrides, and ruamel's aliases, like go-yaml's, refer to the most
        # recent one), `1e3` without YAML 1.1's dot (YAML 1.2 needs none). What is wrong is an error.
        warnings.simplefilter("ignore", YAMLWarning)
        warnings.simplefilter("ignore", YAMLFutureWarning)
        if pure:
            return list(_pure_yaml(last_wins).load_all(data))
        loader = (_LastWinsLoader if last_wins else _GoLoader)(data)
        try:
            if b"*" not in data:  # without an alias no node is shared, none refers to itself
                try:
                    values = []
                    while loader.check_node():
                        values.append(_lean(loader, loader.get_node()))
                    return values
                except _NotLean:
                    _dispose(loader)
                    loader = (_LastWinsLoader if last_wins else _GoLoader)(data)
            values = []
            while loader.check_data():
                values.append(loader.get_data())
            return values
        finally:
            _dispose(loader)


def load(data: bytes, path: str, *, duplicates: Literal["error", "last"] = "error") -> list[Document]:
    """Every document of `data`, constructed with the safe loader (core tags only), within the limits.

    A repeated key is a RepeatedKey error (as kustomize reads an object), or with `duplicates="last"`
    keeps its last value (as kustomize reads a kustomization or a JSON6902 patch).
    """
    _check_bytes(data, path)
    # a tiny file is not scanned first, unless it holds what the scan refuses as kustomize does
    bounded = _plainly_bounded(data) and b"%" not in data and b"..." not in data
    last_wins, pure = duplicates == "last", False
    # a resource is read by go-yaml v3, a kustomization by v2: they differ on merge keys too (`scan`)
    unique = not last_wins
    lines = _Lines(data, path, None if bounded else scan(data, path, max_nodes=MAX_LOAD_NODES, max_documents=100,
                                                        unique_keys=unique))
    while True:
        try:
            values = _construct(data, last_wins, pure)
            break
        except DuplicateKeyError:
            # go-yaml compares keys as written ("1" and "01" differ): the scan words the error as it
            # does, and only when it finds none does the file load keeping the last value.
            scan(data, path, max_nodes=MAX_LOAD_NODES, max_documents=100, unique_keys=True)
            last_wins = True
        except MarkedYAMLError as exc:
            problem = str(exc.problem or "")
            tag = re.search(r"tag '([^']*)'", problem)
            if "could not determine a constructor" in problem and tag:
                name = tag.group(1).replace("tag:yaml.org,2002:", "!!")
                message = f"unsupported YAML tag {name}; wave-bot reads plain YAML only"
                raise _error(path, message, _mark_line(exc, data)) from None
            if pure:
                raise _yaml_error(exc, data, path) from None
            scan(data, path, max_nodes=MAX_LOAD_NODES, max_documents=100, unique_keys=unique)  # as go-yaml
            pure = True  # a ':' in a flow collection: the YAML 1.2 parser decides
        except YAMLError as exc:
            if pure:
                raise _yaml_error(exc, data, path) from None
            scan(data, path, max_nodes=MAX_LOAD_NODES, max_documents=100, unique_keys=unique)
            pure = True
        except RecursionError:  # pragma: no cover - MAX_DEPTH keeps us far from it
            raise _error(path, f"YAML nested more than {MAX_DEPTH} levels deep") from None
    return [Document(value, lines, i) for i, value in enumerate(values)]


def load_one(data: bytes, path: str) -> Document | None:
    """The single document of `data` (None when the file is empty); several documents are an error."""
    docs = [doc for doc in load(data, path) if doc.value is not None]
    if len(docs) > 1:
        raise _error(
            path,
            f"holds {len(docs)} YAML documents; expected one",
            docs[1].info.start_line,
            "keep one document per file",
        )
    return docs[0] if docs else None


# ---- writing ----------------------------------------------------------------------------------


def _dumper() -> Any:
    from ruamel.yaml import YAML
    from ruamel.yaml.representer import SafeRepresenter

    class _Representer(SafeRepresenter):
        """A string of several lines (a patch copied from a template) as a literal block, as written."""

    def _text(representer: Any, value: str) -> Any:
        style = "|" if "\n" in value.rstrip("\n") and not value.startswith(" ") and all(
            line == line.rstrip() for line in value.split("\n")) else None
        return representer.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    _Representer.add_representer(str, _text)
    yaml = YAML(typ="safe", pure=True)
    yaml.Representer = _Representer
    yaml.default_flow_style = False
    yaml.indent(mapping=2, sequence=4, offset=2)
    yaml.width = 4096
    yaml.representer.sort_base_mapping_type_on_output = False
    return yaml


def dump(value: Any, header: str = "") -> bytes:
    """`value` as block-style YAML in key order, after `header` (comment lines); byte-stable."""
    stream = io.StringIO()
    stream.write(header)
    _dumper().dump(value, stream)
    return stream.getvalue().encode()


__all__ = ["DocInfo", "Document", "MAX_DEPTH", "MAX_DOCUMENTS", "MAX_FILE_BYTES", "MAX_LOAD_NODES", "MAX_NODES",
           "RepeatedKey", "dump", "load", "load_one", "scan", "too_large"]
