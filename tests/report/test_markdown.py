"""The comment as GitHub and Gitea render it: parsed by a CommonMark renderer with GFM tables.

markdown-it-py follows the CommonMark spec GitHub's renderer extends; tables and strikethrough are
the GFM extensions the report could trip over. These tests read the token stream a renderer builds,
not the markdown's bytes: headings, tables with every row's cells, the <details> blocks, code spans
holding exactly what they should, and nothing from the repository turned into HTML, a link or a
mention.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from test_report import HOSTILE_NAMES

from bot.config import Config, load_config
from bot.errors import WaveBotError
from bot.plan import make_plan
from bot.repo.git import GitTree
from bot.repo.worktree import FsTree
from bot.report import formats as report
from bot.report import markup

from conftest import deployment, git, service, write_files
from support.rendered import RENDERER, assert_renders_as_intended, headings, tokens


@pytest.fixture
def plex_comment(example_repo: Path) -> str:
    git(example_repo, "checkout", "-q", "-b", "pr")
    with open(example_repo / "catalog/plex.yaml", "a") as catalog:
        catalog.write("  dependencies:\n    - to: sonarr\n")
    # Moved by hand: wave-bot itself would hold the move and protect the objects first.
    git(example_repo, "mv", "apps/wave-0/plex.yaml", "apps/wave-2/plex.yaml")
    git(example_repo, "commit", "-qam", "plex depends on sonarr")
    tree = FsTree(str(example_repo))
    plan = make_plan(tree, load_config(tree, None), base=GitTree(str(example_repo), "main"))
    return report.to_markdown(plan, report.Context(applied=True, commit="0123456789abcdef0123"))


def test_the_plex_comment_has_its_structure(plex_comment: str) -> None:
    toks = assert_renders_as_intended(plex_comment)
    assert headings(plex_comment) == [("h3", "🌊 flux-wave-bot"), ("h4", "Findings"), ("h4", "Waves"),
                                      ("h4", "Moves"), ("h4", "Files wave-bot writes"),
                                      ("h4", "Gating worth knowing about"), ("h4", "Computed, not onboarded")]
    spans = [t.content for t in toks if t.type == "code_inline"]
    assert spans.count("later-wave-move") == 1
    # One headline for the file: what the move does to which object, the first that loses data named.
    first = plex_comment.split("\n- ", 1)[1].split("\n", 1)[0]
    assert "`later-wave-move` in `apps/wave-0/plex.yaml`: Moving to wave 2 deletes `Namespace plex` and 3 more " \
           "objects" in first and len(first.split(":", 1)[1].split()) < 25
    # Under it the objects at risk, a nested list, data loss first and marked.
    assert _nested_items(plex_comment)[0] == [
        "💾 Namespace plex (data loss)", "💾 PersistentVolumeClaim plex/plex-data (data loss)", "Service plex/plex",
        "apps/Deployment plex/plex"]
    fences = [(t.info, t.content) for t in toks if t.type == "fence"]
    assert [info for info, _ in fences] == ["yaml", "yaml", "mermaid"]  # the fix, the one non_gating snippet
    # Once, for the whole file: the annotation, or how to accept the move as it is, every object whose
    # deletion loses data named (the Deployment and Service restart: nothing to accept).
    assert fences[0][1] == (
        "metadata:\n  annotations:\n    kustomize.toolkit.fluxcd.io/prune: disabled\n"
        "# Or, to take the move as it is (deleted, then recreated):\n"
        "# accept that in this pull request, with the command\n"
        "#   wave-bot accept --by '<your name>' \\\n"
        "#     'Namespace plex' \\\n#     'PersistentVolumeClaim plex/plex-data'\n"
        "# or these entries in .wave-bot-accept.yaml (reason: optional):\n"
        "accept:\n"
        "  - resource: Namespace plex\n    by: <your name>\n"
        "  - resource: PersistentVolumeClaim plex/plex-data\n    by: <your name>\n")
    # The nested lists are real nested lists, inside the finding's list item.
    kinds = [t.type for t in RENDERER.parse(plex_comment)]
    assert kinds.count("bullet_list_open") == 4  # the findings, the objects inside, each one's cost, the gating
    text = "".join(t.content for t in toks if t.type == "text")
    # The safe step once, visible; the why (each object's cost) in a collapsed section.
    assert text.count("Safe step:") == 1 and "First merge a change that only adds the annotation" in text
    why = plex_comment.split("<summary>Why</summary>", 1)[1].split("</details>", 1)[0]
    assert "apps-wave-0 deletes it as soon as it reconciles this change" in why
    assert "`PersistentVolumeClaim plex/plex-data`: the claim is deleted and its volume's data with it" in why
    # The annotation and the command to run are code, as a reader copies them.
    assert "kustomize.toolkit.fluxcd.io/prune: disabled" in spans and "flux get kustomization apps-wave-0" in spans


def _nested_items(markdown: str) -> list[list[str]]:
    """The items of every list nested in another one, as rendered text (code spans unquoted)."""
    out: list[list[str]] = []
    depth, items, item = 0, [], []
    for t in RENDERER.parse(markdown):
        if t.type == "bullet_list_open":
            depth += 1
            if depth == 2:
                items = []
        elif t.type == "bullet_list_close":
            if depth == 2:
                out.append(items)
            depth -= 1
        elif depth == 2 and t.type == "list_item_open":
            item = []
        elif depth == 2 and t.type == "list_item_close":
            items.append("".join(item).strip())
        elif depth == 2 and t.type == "inline":
            item += [c.content for c in t.children or [] if c.type in ("text", "code_inline")]
    return out


def test_commands_in_messages_are_code_spans_not_escaped_backticks(example_repo: Path) -> None:
    write_files(example_repo, {"catalog/tautulli.yaml": service("tautulli", "seerr"),
                               "apps/tautulli.yaml": deployment("tautulli")})
    tree = FsTree(str(example_repo))
    plan = make_plan(tree, load_config(tree, None), base=GitTree(str(example_repo), "HEAD"))
    markdown = report.to_markdown(plan)
    toks = assert_renders_as_intended(markdown)
    spans = [t.content for t in toks if t.type == "code_inline"]
    assert "wave-bot apply --fix-overlays" in spans and "---" in spans
    assert not any("`" in t.content for t in toks if t.type == "text")


def test_hostile_names_stay_text(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = {"catalog/web.yaml": service("web"), "apps/wave-0/web.yaml": deployment("web")}
    files |= {f"apps/wave-0/{name}": deployment("x") for name in HOSTILE_NAMES}
    write_files(tmp_path, files)
    markdown = report.to_markdown(make_plan(FsTree(str(tmp_path)), Config()))
    toks = assert_renders_as_intended(markdown)
    shown = "".join(t.content for t in toks if t.type in ("text", "code_inline"))
    for name in HOSTILE_NAMES:  # each name reads as itself (mentions carry a zero-width space)
        assert name.replace("@", "@\u200b") in shown or name in shown


def test_the_input_error_report_renders(tmp_path: Path) -> None:
    exc = WaveBotError("dependency cycle: a -> b -> a", path="catalog/a.yaml", line=7,
                       hint="remove one of the `dependencies` entries")
    markdown = report.error_markdown(exc)
    toks = assert_renders_as_intended(markdown)
    assert headings(markdown) == [("h3", "🌊 flux-wave-bot")]
    assert [t.content for t in toks if t.type == "code_inline"] == ["catalog/a.yaml:7", "dependencies"]


def test_the_up_to_date_example_renders(example_repo: Path) -> None:
    tree = FsTree(str(example_repo))
    plan = make_plan(tree, load_config(tree, None))
    markdown = report.to_markdown(plan)
    assert_renders_as_intended(markdown)
    # Nothing changes wave: the standing gating advice is not repeated on every plan ...
    assert headings(markdown) == [("h3", "🌊 flux-wave-bot"), ("h4", "Waves"), ("h4", "Computed, not onboarded")]
    # ... but it is there when asked (`--gating`).
    asked = report.to_markdown(plan, report.Context(gating=True))
    assert_renders_as_intended(asked)
    assert headings(asked) == [("h3", "🌊 flux-wave-bot"), ("h4", "Waves"), ("h4", "Gating worth knowing about"),
                               ("h4", "Computed, not onboarded")]


def test_a_code_span_keeps_the_spaces_around_it_as_rendered() -> None:
    rendered = tokens(markup.inline("push to this branch, or `wave-bot apply` now; `a` `b`: done"))
    parts = [(t.type, t.content) for t in rendered if t.type in ("text", "code_inline")]
    assert parts == [("text", "push to this branch, or "), ("code_inline", "wave-bot apply"), ("text", " now; "),
                     ("code_inline", "a"), ("text", " "), ("code_inline", "b"), ("text", ": done")]
