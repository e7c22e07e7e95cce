"""The comment as GitHub renders it: CommonMark with raw HTML and GFM tables (markdown-it-py), and the
rules every report must keep once rendered. Shared by the report, markdown and cutover tests."""
from __future__ import annotations

import re

from markdown_it import MarkdownIt
from markdown_it.token import Token
from mdit_py_plugins.tasklists import tasklists_plugin

# What GitHub does with a comment: CommonMark, raw HTML allowed (then sanitised), GFM tables.
RENDERER = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"]).use(tasklists_plugin)
OUR_HTML = re.compile(r"^\s*(<details><summary>[A-Za-z0-9 ()-]+</summary>|</details>)\s*$")


def tokens(markdown: str) -> list[Token]:
    """Every token, inline children flattened in order."""
    out: list[Token] = []
    for token in RENDERER.parse(markdown):
        out.append(token)
        out += token.children or []
    return out


def headings(markdown: str) -> list[tuple[str, str]]:
    toks = RENDERER.parse(markdown)
    return [(t.tag, toks[i + 1].content) for i, t in enumerate(toks) if t.type == "heading_open"]


def assert_renders_as_intended(markdown: str) -> list[Token]:
    toks = tokens(markdown)
    html = [t.content for t in toks if t.type in ("html_block", "html_inline")]
    assert all(OUR_HTML.match(block) for block in html), html  # only the report's own <details>
    opened = sum("<details>" in b for b in html)
    assert opened == sum("</details>" in b for b in html)  # every collapsed block is closed
    assert not [t for t in toks if t.type in ("link_open", "image")]
    for t in toks:
        if t.type == "text":
            assert "\\`" not in t.content and not re.search(r"@[A-Za-z0-9]", t.content), t.content
    # A table row never gains or loses a cell, whatever the names in it hold.
    rendered = RENDERER.parse(markdown)
    for i, t in enumerate(rendered):
        if t.type == "table_open":
            end = next(j for j in range(i, len(rendered)) if rendered[j].type == "table_close")
            rows: list[list[str]] = []
            for tok in rendered[i:end]:
                if tok.type == "tr_open":
                    rows.append([])
                elif tok.type in ("th_open", "td_open"):
                    rows[-1].append(tok.type)
            assert len({len(r) for r in rows}) == 1, rows
    return toks
