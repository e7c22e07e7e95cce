"""Reading YAML from a hostile repository safely and fast, and writing the files the bot generates.

Every YAML byte the bot reads goes through `scan()` first: one pass over libyaml's event stream
(no composing, no constructing) that enforces the limits below, records the line of every key
near the top of each document, and captures the few scalars the caller asks for. App manifests
need nothing more (their identity and `sops:` key), which keeps `plan` cheaper than a full parse.
Small files the bot must understand whole (catalog, config, kustomizations) are then constructed
by ruamel's C safe loader, which knows only the YAML core tags.
"""
from __future__ import annotations

import io
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.events import (
    AliasEvent,
    CollectionStartEvent,
    DocumentStartEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceStartEvent,
)
from ruamel.yaml.reader import ReaderError

from bot.errors import WaveBotError

try:  # the C extension is a declared dependency; the fallback only keeps a broken install usable
    from ruamel.yaml.cyaml import CParser as _Parser
    from ruamel.yaml.cyaml import CSafeLoader as _Loader
except ImportError:  # pragma: no cover
    from ruamel.yaml.loader import SafeLoader as _Loader  # type: ignore[assignment]

    def _Parser(data: bytes) -> Any:  # type: ignore[no-redef]
        return _Loader(data)


_NOT_BRACKETS = bytes(range(256)).translate(None, b"[]{}")

MAX_FILE_BYTES = 1 << 20
"""Largest YAML file read (1 MiB, the size of the largest object etcd stores)."""
MAX_DEPTH = 100
"""Deepest nesting accepted; real manifests stay far below, hostile ones crash parsers."""
MAX_NODES = 1_000_000
"""Most nodes a file may hold once every alias is expanded (stops "billion laughs")."""
LINE_DEPTH = 4
"""How deep key paths get their line recorded (enough for `spec.dependencies[i].to`)."""

Path = tuple[str | int, ...]


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

    def line(self, path: Path) -> int:
        """Line of `path`, else of its nearest recorded parent, else of the document."""
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return self.start_line


@dataclass(frozen=True)
class Document:
    """A fully loaded YAML document and where its keys are."""

    value: Any
    info: DocInfo


def _error(path: str, message: str, line: int | None = None, hint: str | None = None) -> WaveBotError:
    return WaveBotError(message, path=path, line=line, hint=hint)


def _check_bytes(data: bytes, path: str) -> None:
    if len(data) > MAX_FILE_BYTES:
        raise _error(
            path,
            f"file is {len(data):,} bytes; wave-bot reads YAML files of at most {MAX_FILE_BYTES:,}",
            hint="split it into several files",
        )
    # libyaml spends time quadratic in flow nesting ([[[[...) before any limit of ours could
    # see it, so bound that nesting on the raw bytes first. Brackets inside quoted strings are
    # counted too; that only errs towards refusing absurd files.
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


@dataclass
class _Node:
    """An open collection while scanning."""

    is_map: bool
    path: Path
    anchor: str | None
    nodes: int = 1
    index: int = 0
    key: str | int | None = None
    key_line: int = 0
    expect_key: bool = True


class _Scan:
    """State of one scan; split out of `scan()` only to keep each step small."""

    def __init__(self, path: str, capture: Callable[[Path], bool] | None, line_depth: int) -> None:
        self.file = path
        self.capture = capture
        self.line_depth = line_depth
        self.anchors: dict[str, int] = {}
        self.total = 0
        self.docs: list[DocInfo] = []
        self.stack: list[_Node] = []
        self.lines: dict[Path, int] = {}
        self.scalars: dict[Path, str] = {}
        self.root_kind: str | None = None
        self.start_line = 1

    def _count(self, n: int, line: int) -> None:
        self.total += n
        if self.total > MAX_NODES:
            raise _error(
                self.file,
                f"YAML expands to more than {MAX_NODES:,} nodes (aliases nested like a 'billion laughs' bomb?)",
                line,
            )

    def _slot(self) -> tuple[Path, bool]:
        """Where the next node goes: (its path, whether it is a mapping key)."""
        if not self.stack:
            return (), False
        top = self.stack[-1]
        if top.is_map:
            if top.expect_key:
                return top.path + ("?",), True
            return top.path + (top.key if top.key is not None else "?",), False
        return top.path + (top.index,), False

    def _placed(self, value: str | None, line: int, was_key: bool) -> None:
        """Bookkeeping after a node has been completely read."""
        if not self.stack:
            return
        top = self.stack[-1]
        if top.is_map and was_key:
            top.key = value if value is not None else "?"
            top.key_line = line
            top.expect_key = False
            return
        if top.is_map:
            top.expect_key = True
        else:
            top.index += 1

    def _record_line(self, path: Path, line: int, was_key: bool) -> None:
        if was_key or not path or len(path) > self.line_depth:
            return
        top = self.stack[-1] if self.stack else None
        self.lines.setdefault(path, top.key_line if top is not None and top.is_map else line)

    def scalar(self, event: ScalarEvent, line: int) -> None:
        path, was_key = self._slot()
        self._count(1, line)
        if self.stack:
            self.stack[-1].nodes += 1
        else:
            null = event.implicit[0] and event.value in ("", "~", "null", "Null", "NULL")
            self.root_kind = "empty" if null else "scalar"
        self._record_line(path, line, was_key)
        if not was_key and self.capture is not None and self.capture(path):
            self.scalars[path] = event.value
        if event.anchor:
            self.anchors[event.anchor] = 1
        self._placed(event.value, line, was_key)

    def alias(self, event: AliasEvent, line: int) -> None:
        path, was_key = self._slot()
        size = self.anchors.get(event.anchor)
        if size is None:
            raise _error(self.file, f"invalid YAML: unknown alias *{event.anchor}", line)
        self._count(size, line)
        if self.stack:
            self.stack[-1].nodes += size
        self._record_line(path, line, was_key)
        self._placed(None, line, was_key)

    def start(self, event: CollectionStartEvent, line: int) -> None:
        path, was_key = self._slot()
        if len(self.stack) >= MAX_DEPTH:
            raise _error(self.file, f"YAML nested more than {MAX_DEPTH} levels deep", line)
        self._count(1, line)
        if not self.stack:
            self.root_kind = "map" if isinstance(event, MappingStartEvent) else "seq"
        self._record_line(path, line, was_key)
        self.stack.append(_Node(isinstance(event, MappingStartEvent), path, event.anchor))
        self.stack[-1].key_line = line

    def end(self, line: int) -> None:
        node = self.stack.pop()
        if node.anchor:
            self.anchors[node.anchor] = node.nodes
        if self.stack:
            self.stack[-1].nodes += node.nodes
            # A collection used as a mapping key is legal YAML; it just has no usable name.
            was_key = self.stack[-1].is_map and self.stack[-1].expect_key
            self._placed(None, line, was_key)

    def begin_document(self, line: int) -> None:
        self.lines, self.scalars, self.root_kind = {}, {}, None
        self.anchors = {}
        self.start_line = line

    def end_document(self) -> None:
        self.docs.append(
            DocInfo(
                start_line=self.start_line,
                lines=self.lines,
                scalars=self.scalars,
                is_mapping=self.root_kind == "map",
                empty=self.root_kind in (None, "empty"),
            )
        )


def scan(
    data: bytes,
    path: str,
    *,
    capture: Callable[[Path], bool] | None = None,
    line_depth: int = LINE_DEPTH,
) -> list[DocInfo]:
    """Check `data` against the limits and describe each of its documents.

    Raises WaveBotError naming `path` and the line for invalid YAML, non-UTF-8 bytes, files over
    MAX_FILE_BYTES, nesting over MAX_DEPTH and alias bombs. Never constructs a Python object, so
    tags are not interpreted here.
    """
    _check_bytes(data, path)
    state = _Scan(path, capture, line_depth)
    parser = _Parser(data)
    try:
        while parser.check_event():
            event = parser.get_event()
            line = int(event.start_mark.line) + 1
            if isinstance(event, ScalarEvent):
                state.scalar(event, line)
            elif isinstance(event, CollectionStartEvent):
                state.start(event, line)
            elif isinstance(event, AliasEvent):
                state.alias(event, line)
            elif isinstance(event, DocumentStartEvent):
                state.begin_document(line)
            elif type(event).__name__ in ("MappingEndEvent", "SequenceEndEvent"):
                state.end(line)
            elif type(event).__name__ == "DocumentEndEvent":
                state.end_document()
    except YAMLError as exc:
        raise _yaml_error(exc, data, path) from None
    finally:
        _dispose(parser)
    return state.docs


def _dispose(parser: Any) -> None:
    dispose = getattr(parser, "dispose", None)
    if dispose is not None:
        dispose()


def load(data: bytes, path: str) -> list[Document]:
    """Every document of `data`, constructed with the safe loader (core tags only), after `scan()`."""
    infos = scan(data, path)
    loader = _Loader(data)
    values: list[Any] = []
    try:
        while loader.check_data():
            values.append(loader.get_data())
    except MarkedYAMLError as exc:
        problem = str(exc.problem or str(exc).splitlines()[0])
        tag = re.search(r"tag '([^']*)'", problem)
        if "could not determine a constructor" in problem and tag:
            name = tag.group(1).replace("tag:yaml.org,2002:", "!!")
            problem = f"unsupported YAML tag {name}; wave-bot reads plain YAML only"
        else:
            problem = f"invalid YAML: {problem}"
        raise _error(path, problem, _mark_line(exc, data)) from None
    except YAMLError as exc:
        raise _yaml_error(exc, data, path) from None
    except RecursionError:  # pragma: no cover - MAX_DEPTH keeps us far from it
        raise _error(path, f"YAML nested more than {MAX_DEPTH} levels deep") from None
    finally:
        _dispose(loader)
    return [Document(value, info) for value, info in zip(values, infos)]


def load_one(data: bytes, path: str) -> Document | None:
    """The single document of `data` (None when the file is empty); several documents are an error."""
    docs = [doc for doc in load(data, path) if not doc.info.empty]
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

    yaml = YAML(typ="safe", pure=True)
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


__all__ = ["DocInfo", "Document", "MAX_DEPTH", "MAX_FILE_BYTES", "MAX_NODES", "dump", "load", "load_one", "scan"]
