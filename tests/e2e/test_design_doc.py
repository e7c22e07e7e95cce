"""docs/design.md: every section a module or test cites exists."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent


def test_every_cited_section_of_the_design_doc_exists() -> None:
    sections = set(re.findall(r"^#{2,3} (\d+(?:\.\d+)?)\.? ", (ROOT / "docs" / "design.md").read_text(), re.M))
    cited = {}
    for path in [*(ROOT / "bot").rglob("*.py"), *(ROOT / "tests").rglob("*.py")]:
        for section in re.findall(r"docs/design\.md §(\d+(?:\.\d+)?)", path.read_text()):
            cited.setdefault(section, path.relative_to(ROOT))
    assert cited, "no module cites docs/design.md"
    assert {s: p for s, p in cited.items() if s not in sections} == {}
