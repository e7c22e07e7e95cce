"""The import-layer contract of bot/: arrows point down only (docs/design.md §6).

Every top-level module and package of `bot/` sits in one layer; a module may import from its own
layer and the ones below it, never from one above. Every import counts, including those inside
functions and under `TYPE_CHECKING`: a type-only arrow upward is still an arrow upward.

    python tools/layers.py            # prints each upward import (file:line), exit 1 if any

Run by `.ci/run` and `.github/workflows/ci.yml`; tests/e2e/test_layers.py shows it failing on an
upward import.
"""
from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

# Top to bottom. The table of docs/design.md §6 lists the same layers in the same order
# (tests/e2e/test_layers.py checks it).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("cli", "__main__", "actions"),
    ("report",),
    ("plan",),
    ("checks",),
    ("fixes",),
    ("layout",),
    ("flux",),
    ("kustomize",),
    ("config", "repo"),
    ("yamlio",),
    ("model", "side", "resid", "naming", "errors", "__init__"),
)
RANK = {part: rank for rank, layer in enumerate(LAYERS) for part in layer}


@dataclass(frozen=True)
class Violation:
    path: str  # relative to the package's parent directory
    line: int
    importer: str  # the importing module's top-level part (`flux`)
    imported: str  # the imported module (`bot.layout.units`)

    def __str__(self) -> str:
        return (f"{self.path}:{self.line}: {self.importer} imports {self.imported}, a layer above it "
                "(arrows point down only: move the shared piece down, into the lower layer)")


def part_of(module: str) -> str:
    """`bot.flux.inventory` -> `flux`; `bot` -> `__init__`."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def unplaced(package: Path) -> list[str]:
    """Top-level modules and packages of `package` that no layer names."""
    found = {p.stem for p in package.glob("*.py")} | {p.name for p in package.iterdir()
                                                       if p.is_dir() and (p / "__init__.py").is_file()}
    return sorted(found - set(RANK))


def _absolute(module: str, node: ast.ImportFrom) -> str:
    """The module an `import from` names, relative ones (`from ..layout import units`) resolved."""
    if node.level == 0:
        return node.module or ""
    here = module.split(".")[:-1]  # the package `module` is in (`bot.flux` for bot/flux/__init__.py too)
    base = here[: len(here) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def upward_imports(package: Path) -> list[Violation]:
    """Every import in `package` (a directory named like the package, `bot`) of a higher layer."""
    name = package.name
    out = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package.parent)
        module = ".".join(rel.with_suffix("").parts)
        importer = part_of(module)  # bot/__init__.py is `bot.__init__`: its part is `__init__`
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom):
                source = _absolute(module, node)  # `from bot import layout` imports bot.layout too
                targets = [source, *(f"{source}.{alias.name}" for alias in node.names)]
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                continue
            for target in targets:
                if target != name and not target.startswith(name + "."):
                    continue
                imported = part_of(target)
                if imported in RANK and importer in RANK and RANK[imported] < RANK[importer]:
                    out.append(Violation(rel.as_posix(), node.lineno, importer, target))
                    break  # one line, one violation
    return out


def main(argv: list[str]) -> int:
    package = Path(argv[0]) if argv else Path(__file__).resolve().parent.parent / "bot"
    problems = [str(v) for v in upward_imports(package)]
    problems += [f"{package.name}/{m}: in no layer of tools/layers.py: add it to LAYERS (and to the design's table)"
                 for m in unplaced(package)]
    for problem in problems:
        print(problem, file=sys.stderr)
    if not problems:
        print(f"tools/layers.py: {package.name}/ imports only down ({len(LAYERS)} layers)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
