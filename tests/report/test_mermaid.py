"""The report's wave graph: what it highlights, and that mermaid can parse it.

Two checks of the syntax. A grammar test (always) holds every line to the few statement forms the
report emits, with balanced subgraphs and only defined ids. mermaid's own parser (npm `mermaid`
under node, with jsdom for the DOM it wants) runs when WAVE_BOT_MERMAID_DIR names a directory
where tests/mermaid/package.json was installed; .ci/run installs it when npm is reachable and then
sets WAVE_BOT_REQUIRE_MERMAID=1, so CI cannot skip it silently. Nothing is installed at test time.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from bot.config import Config, load_config
from bot.plan import make_plan
from bot.repo.git import GitTree
from bot.repo.worktree import FsTree
from bot.report import formats as report

from conftest import EXAMPLE, deployment, git, service, write_files

PARSER = Path(__file__).parent.parent / "mermaid" / "parse.mjs"

_ID = r"[wse]\d+|u\d+"
_LABEL = r'\["[^"\n]*"\]'
STATEMENTS = [
    re.compile(r"flowchart BT"),
    re.compile(rf'  subgraph [ws]\d+{_LABEL}'),
    re.compile(rf"    (?:u|e|es)\d+{_LABEL}"),
    re.compile(r"  end"),
    re.compile(rf"  [ws]\d+{_LABEL}"),
    re.compile(r"  w\d+ -\.-> s\d+"),
    re.compile(rf"  (?:{_ID}) --> (?:{_ID})"),
    re.compile(rf"  (?:{_ID}) ==> (?:{_ID})"),
    re.compile(r"  classDef moved [a-z-]+:[#\w]+(?:,[a-z-]+:[#\w ]+)*"),
    re.compile(r"  class u\d+(?:,u\d+)* moved"),
    re.compile(r"  style [ws]\d+ [a-z-]+:[#\w]+(?:,[a-z-]+:[#\w ]+)*"),
]


def mermaid_blocks(markdown: str) -> list[str]:
    return re.findall(r"```mermaid\n(.*?)\n```", markdown, flags=re.S)


def check_grammar(diagram: str) -> None:
    defined: set[str] = set()
    depth = 0
    for line in diagram.splitlines():
        assert any(s.fullmatch(line) for s in STATEMENTS), f"not a statement the report emits: {line!r}"
        if line.startswith("  subgraph"):
            depth += 1
        elif line == "  end":
            depth -= 1
            assert depth >= 0
        defined |= set(re.findall(rf"\b({_ID})\[", line))
    assert depth == 0, "a subgraph is left open"
    for line in diagram.splitlines():
        if "-->" in line or "==>" in line or "-.->" in line or line.startswith(("  class ", "  style ")):
            used = re.findall(r"\b(?:[uwse]\d+)\b", line.split(" moved")[0] if "class " in line else line)
            assert set(used) <= defined, line


def _plex_markdown(repo: Path) -> str:
    git(repo, "checkout", "-q", "-b", "pr")
    with open(repo / "catalog/plex.yaml", "a") as catalog:
        catalog.write("  dependencies:\n    - to: sonarr\n")
    write_files(repo, {"catalog/tautulli.yaml": service("tautulli", "plex"),
                       "apps/tautulli.yaml": deployment("tautulli")})
    git(repo, "mv", "apps/wave-0/plex.yaml", "apps/wave-2/plex.yaml")  # by hand: apply would hold it
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "plex depends on sonarr; tautulli on plex")
    tree = FsTree(str(repo))
    return report.to_markdown(make_plan(tree, load_config(tree, None), base=GitTree(str(repo), "main")))


def _diagrams(repo: Path, tmp_path: Path) -> list[str]:
    """The plex PR (a moved unit, a new app, a new wave), keywords as names, and a repository too big
    to draw unit by unit."""
    out = mermaid_blocks(_plex_markdown(repo))
    small = tmp_path / "small"
    write_files(small, {"catalog/end.yaml": service("end"), "catalog/graph.yaml": service("graph", "end"),
                        "catalog/subgraph.yaml": service("subgraph", "graph"),
                        "apps/end.yaml": deployment("end"), "apps/graph.yaml": deployment("graph"),
                        "apps/subgraph.yaml": deployment("subgraph"),
                        ".wave-bot.yaml": "non_gating:\n  - subgraph\n"})  # a side branch, drawn dotted
    small_tree = FsTree(str(small))
    out += mermaid_blocks(report.to_markdown(make_plan(small_tree, load_config(small_tree))))
    assert "  w1 -.-> s2" in out[-1]
    big = tmp_path / "big"
    files: dict[str, str | bytes] = {}
    for i in range(report.MERMAID_NODE_LIMIT + 10):
        files[f"catalog/s{i:03d}.yaml"] = service(f"s{i:03d}", *([f"s{i - 1:03d}"] if i % 2 else []))
        files[f"apps/s{i:03d}.yaml"] = deployment(f"s{i:03d}")
    write_files(big, files)
    out += mermaid_blocks(report.to_markdown(make_plan(FsTree(str(big)), Config())))
    assert len(out) == 3
    return out


def _tier_diagram(tmp_path: Path) -> str:
    """The tier graph of the example where `platform` depends on a tier no entrypoint applies and on
    wave 0 (a cycle through platform-config); its own grammar is held by tests/checks/test_tiers.py."""
    tiers = tmp_path / "tiers"
    shutil.copytree(EXAMPLE, tiers)
    platform = tiers / "clusters/base/platform.yaml"
    platform.write_text(platform.read_text().replace(
        "  interval:", "  dependsOn:\n    - name: apps-wave-0\n    - name: infra\n  interval:", 1))
    tier_markdown = report.to_markdown(make_plan(FsTree(str(tiers)), load_config(FsTree(str(tiers)))))
    assert "<summary>Tier graph</summary>" in tier_markdown
    (diagram,) = mermaid_blocks(tier_markdown.split("<summary>Tier graph</summary>", 1)[1])
    return diagram


def test_the_graph_highlights_moved_units_and_new_waves(example_repo: Path) -> None:
    (diagram,) = mermaid_blocks(_plex_markdown(example_repo))
    ids = dict(re.findall(r'    (u\d+)\["([^"]+)"\]', diagram))
    moved = {ids[i] for i in re.search(r"  class (\S+) moved", diagram).group(1).split(",")}  # type: ignore[union-attr]
    assert moved == {"plex (from wave 0)", "tautulli (new)"}
    assert '  subgraph w3["wave 3 (new)"]' in diagram and "  style w3 stroke:" in diagram
    assert '  subgraph w2["wave 2"]' in diagram and "style w2" not in diagram  # only what changed stands out
    check_grammar(diagram)


def test_every_graph_keeps_to_the_grammar(example_repo: Path, tmp_path: Path) -> None:
    for diagram in _diagrams(example_repo, tmp_path):
        check_grammar(diagram)


def test_the_grammar_check_rejects_what_mermaid_rejects() -> None:
    with pytest.raises(AssertionError):
        check_grammar('flowchart BT\n  subgraph w0["wave 0"]\n    u0["a"]\n')  # subgraph not closed
    with pytest.raises(AssertionError):
        check_grammar("flowchart BT\n  u0 --> end")  # `end` as a node


def _mermaid_dir() -> Path | None:
    found = os.environ.get("WAVE_BOT_MERMAID_DIR")
    if found and (Path(found) / "node_modules" / "mermaid").is_dir() and shutil.which("node"):
        return Path(found)
    if os.environ.get("WAVE_BOT_REQUIRE_MERMAID") == "1":
        pytest.fail("WAVE_BOT_REQUIRE_MERMAID=1 but WAVE_BOT_MERMAID_DIR has no mermaid install (or no node)")
    pytest.skip("mermaid's parser is not installed: set WAVE_BOT_MERMAID_DIR (see tests/mermaid/package.json)")
    return None


def test_mermaid_itself_parses_every_graph(example_repo: Path, tmp_path: Path) -> None:
    where = _mermaid_dir()
    diagrams = [*_diagrams(example_repo, tmp_path), _tier_diagram(tmp_path)]
    broken = 'flowchart BT\n  subgraph w0["wave 0"]\n    u0["a"]\n  u0 --> end\n'
    result = subprocess.run(["node", str(PARSER), str(where)], input=json.dumps([*diagrams, broken]),
                            capture_output=True, text=True, check=True, timeout=300)
    *ours, control = json.loads(result.stdout)
    assert ours == [{"ok": True, "type": "flowchart-v2"}] * len(diagrams)
    assert control["ok"] is False  # the parser is real: it rejects a broken graph
