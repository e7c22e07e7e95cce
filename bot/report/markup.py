"""Markdown's escaping, code spans and fences, as GitHub's renderer reads them."""
from __future__ import annotations

import re

# Punctuation that means something anywhere in a line; what only means something at a line's start
# (lists, headings, quotes) is escaped there alone, so the comment's source stays readable.
_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~<>&])")
_LINE_START = re.compile(r"^([-+#>=!]|\d+[.)])")


def escape(text: str) -> str:
    """Repository text as inert markdown: punctuation escaped, no HTML, no @-mentions, one line."""
    text = " ".join(text.split())
    text = _MD_SPECIAL.sub(lambda m: {"<": "&lt;", ">": "&gt;", "&": "&amp;"}.get(m.group(1), "\\" + m.group(1)), text)
    text = _LINE_START.sub(lambda m: m.group(1)[:-1] + "\\" + m.group(1)[-1], text)
    return text.replace("@", "@\u200b")  # a zero-width space after @ stops mentions and team pings


def code(text: str) -> str:
    """`text` as an inline code span when that is safe, else escaped plain text."""
    if "`" in text or "\n" in text or not text.strip():
        return escape(text)
    return f"`{text}`".replace("|", "\\|")  # a pipe would split a table cell even inside a code span


def fence(text: str, lang: str = "") -> str:
    """A fenced block that no backtick run inside `text` can close early."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{lang}\n{text.rstrip()}\n{ticks}"


_CODE_SPAN = re.compile(r"`([^`\n]+)`")


def inline(text: str) -> str:
    """A message as markdown: its `quoted` commands and keys as code spans, everything else escaped."""
    out, at = [], 0
    for m in _CODE_SPAN.finditer(text):
        out += [_spaced(text[at:m.start()]), code(m.group(1))]
        at = m.end()
    return "".join(out) + _spaced(text[at:])


def _spaced(text: str) -> str:
    """`escape(text)` keeping one space where `text` began or ended with one: between words and a
    code span the space is all that separates them (`or `x`` must not render as `or`x``)."""
    inner = escape(text)
    lead = " " if text[:1].isspace() and inner else ""
    trail = " " if text[-1:].isspace() else ""
    return lead + inner + trail if inner else trail
