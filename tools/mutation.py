"""Mutation testing of wave-bot's safety modules with mutmut, scoped to a module or to a change.

    .venv/bin/python tools/mutation.py ownership lifecycle     # these modules
    .venv/bin/python tools/mutation.py --changed main          # the safety modules changed since main
    .venv/bin/python tools/mutation.py --changed main --sample 20 --minutes 10
    .venv/bin/python tools/mutation.py kustomize.files --function read_kustomization   # one function

Each run works in a fresh copy of the work tree under .mutation/ (the work tree itself is never
touched). mutmut mutates only the modules in scope and runs only their related tests (RELATED
below): it first records which of those tests reach each function, then runs each mutant against
those tests alone. The score of each module and every surviving mutant are printed at the end;
`.venv/bin/mutmut show <name>` (run in .mutation/run) prints a survivor's diff. Exit code: 0 when
no mutant survived, 1 otherwise, 2 for a usage error.

Not part of .ci/run (minutes per module); run it when finishing a change to these modules.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Sequence
from fnmatch import fnmatch
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / ".mutation" / "run"

# Safety module -> the test files that exercise it through what a user sees. Kept to the fast,
# direct tests: the property suites (fluxsim, differential, properties) take minutes per mutant.
RELATED: dict[str, tuple[str, ...]] = {
    "checks.deletes": ("checks/test_deletes.py", "checks/test_cutover.py", "actions/test_action_ownership.py",
                       "fixes/test_stepping.py", "checks/test_cascade.py"),
    "checks.removal": ("checks/test_cutover.py", "checks/test_deletes.py", "layout/test_side.py",
                       "actions/test_action_cutover.py"),
    "checks.cutover": ("checks/test_cutover.py", "actions/test_action_cutover.py", "layout/test_units.py"),
    "checks.grouping": ("checks/test_grouping.py", "checks/test_cutover.py"),
    "checks.tiers": ("checks/test_tiers.py", "checks/test_registry.py", "report/test_groups.py"),
    "checks.cascade": ("checks/test_cascade.py",),
    "checks.acceptance": ("checks/test_acceptance.py", "checks/test_accept_command.py", "report/test_markdown.py"),
    "checks.crds": ("checks/test_tiers.py",),
    "checks.substitution": ("checks/test_tiers.py",),
    "checks.prune": ("checks/test_deletes.py",),
    "checks.overlays": ("checks/test_overlays.py", "flux/test_decryption.py"),
    "flux.scope": ("flux/test_scope.py", "checks/test_review.py", "flux/test_inventory.py"),
    "checks.review": ("checks/test_review.py", "flux/test_scope.py"),
    "flux.ownership": ("checks/test_deletes.py", "actions/test_action_ownership.py"),
    "flux.stateful": ("checks/test_deletes.py", "checks/test_cascade.py"),
    "flux.decryption": ("flux/test_decryption.py", "checks/test_overlays.py"),
    "flux.evalpaths": ("checks/test_overlays.py",),
    "kustomize.build": ("kustomize/test_kustomize.py", "kustomize/test_kustomizations.py", "checks/test_overlays.py"),
    "kustomize.files": ("kustomize/test_kustomize.py", "checks/test_overlays.py", "kustomize/test_kustomizations.py"),
    "kustomize.select": ("kustomize/test_kustomize.py", "kustomize/test_resid.py"),
    "kustomize.patching": ("checks/test_overlays.py", "kustomize/test_kustomize.py"),
    "kustomize.repository": ("kustomize/test_kustomizations.py", "flux/test_decryption.py"),
    "fixes.overlays": ("checks/test_overlays.py", "fixes/test_fixes.py", "layout/test_side.py"),
    "fixes.stepping": ("fixes/test_stepping.py", "fixes/test_protect.py"),
    "fixes.protect": ("fixes/test_protect.py", "fixes/test_stepping.py"),
    "side": ("layout/test_side.py", "checks/test_gating.py"),
}
"""Safety module (its dotted path under bot/) -> its related tests (paths under tests/)."""
# A sample keeps the mutants whose number ends in one of these digits (spread, so 20% is 0 and 5).
SPREAD = "0516273849"


def changed_modules(since: str) -> list[str]:
    """The safety modules whose file differs from `since` (committed or not) or is new."""
    def lines(*args: str) -> list[str]:
        result = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
        if result.returncode != 0:
            raise SystemExit(f"mutation: git {' '.join(args)}: {result.stderr.strip()}")
        return result.stdout.splitlines()

    paths = set(lines("diff", "--name-only", since, "--", "bot")) | set(
        lines("ls-files", "--others", "--exclude-standard", "--", "bot"))
    return [m for m in RELATED if source(m) in paths]


def source(module: str) -> str:
    """The file of a safety module: `checks.deletes` -> bot/checks/deletes.py."""
    return f"bot/{module.replace('.', '/')}.py"


def patterns(modules: Sequence[str], sample: int, functions: Sequence[str] = ()) -> list[str]:
    """mutmut name globs for the mutants to run: names are bot.<module>.x_<function>__mutmut_<n>, and
    bot.<module>.xǁ<Class>ǁ<method>__mutmut_<n> for a method; `functions` (names of functions or
    methods) narrows each module to those."""
    number = "*" if sample >= 100 else f"*[{SPREAD[:max(1, sample // 10)]}]"
    if not functions:
        return [f"bot.{m}.*__mutmut_{number}" for m in modules]
    return [f"bot.{m}.{prefix}{f}__mutmut_{number}" for m in modules for f in functions
            for prefix in ("x_", "xǁ*ǁ")]


def toml_value(value: object) -> str:
    # JSON strings, numbers and arrays of them are valid TOML; booleans are spelt the same.
    return json.dumps(value)


def prepare(modules: Sequence[str]) -> None:
    """A fresh copy of the work tree (tracked and untracked files, as they are now) with a
    [tool.mutmut] section for this scope."""
    if WORK.exists():
        shutil.rmtree(WORK)
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        origin = ROOT / name
        if origin.is_file() and not name.startswith(".mutation/"):
            target = WORK / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(origin, target, follow_symlinks=False)
    # The tests find the real repositories' archives beside the checkout (../shared): beside the copy
    # too, or every real-repository test would skip there and its mutants survive unseen.
    shared, beside = ROOT.parent / "shared", WORK.parent / "shared"
    if shared.is_dir() and not beside.exists():
        beside.symlink_to(shared)
    pyproject = (ROOT / "pyproject.toml").read_text()
    settings = dict(tomllib.loads(pyproject).get("tool", {}).get("mutmut", {}))
    tests = sorted({f"tests/{t}" for m in modules for t in RELATED[m]})
    settings |= {"only_mutate": [source(m) for m in modules], "pytest_add_cli_args_test_selection": tests}
    head, _, rest = pyproject.partition("[tool.mutmut]\n")
    # Drop the section's own lines (up to the next table) and write the scoped one instead.
    tail = rest[rest.find("\n[") + 1:] if "\n[" in rest else ""
    section = "[tool.mutmut]\n" + "".join(f"{k} = {toml_value(v)}\n" for k, v in settings.items())
    (WORK / "pyproject.toml").write_text(head + tail + "\n" + section)


def results(modules: Sequence[str], globs: Sequence[str]) -> dict[str, tuple[dict[str, int], list[str]]]:
    """Module -> (counts by mutmut status, the mutants not killed)."""
    from mutmut.stats import status_by_exit_code

    out: dict[str, tuple[dict[str, int], list[str]]] = {}
    for m in modules:
        meta = WORK / "mutants" / f"{source(m)}.meta"
        codes = json.loads(meta.read_text())["exit_code_by_key"] if meta.exists() else {}
        counts: dict[str, int] = {}
        survivors: list[str] = []
        for name, code in sorted(codes.items()):
            if not any(fnmatch(name, g) for g in globs):
                continue
            status = status_by_exit_code[code]
            counts[status] = counts.get(status, 0) + 1
            if status in ("survived", "no tests", "timeout", "suspicious", "segfault"):
                survivors.append(f"{name} ({status})")
        out[m] = (counts, survivors)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("modules", nargs="*", metavar="MODULE", help=f"one of: {', '.join(RELATED)}")
    parser.add_argument("--changed", metavar="REV", help="the safety modules changed since REV (e.g. main)")
    parser.add_argument("--all", action="store_true", help="every safety module")
    parser.add_argument("--sample", type=int, default=100, metavar="PERCENT",
                        help="run about PERCENT%% of the mutants (10..100, by mutant number; default 100)")
    parser.add_argument("--function", action="append", default=[], metavar="NAME",
                        help="only the mutants of this function or method (repeat for several): a change's own")
    parser.add_argument("--minutes", type=float, metavar="N", help="stop after N minutes and score what ran")
    parser.add_argument("--max-children", type=int, default=2, help="mutants run in parallel (default 2)")
    args = parser.parse_args(argv)
    unknown = [m for m in args.modules if m not in RELATED]
    if unknown:
        parser.error(f"not a safety module: {', '.join(unknown)} (choose from {', '.join(RELATED)})")
    modules = list(RELATED) if args.all else list(dict.fromkeys(
        [*args.modules, *(changed_modules(args.changed) if args.changed else [])]))
    if not modules:
        print("mutation: no safety module in scope" + (f" (none changed since {args.changed})" if args.changed else ""))
        return 0
    if not 10 <= args.sample <= 100:
        parser.error("--sample takes a percentage from 10 to 100")
    globs = patterns(modules, args.sample, args.function)
    print(f"mutation: {', '.join(modules)}; tests: {', '.join(sorted({t for m in modules for t in RELATED[m]}))}"
          + (f"; sample {args.sample}%" if args.sample < 100 else ""), flush=True)
    prepare(modules)
    mutmut = Path(sys.executable).parent / "mutmut"
    command = [str(mutmut), "run", "--max-children", str(args.max_children), *globs]
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    try:
        subprocess.run(command, cwd=WORK, env=env, timeout=args.minutes * 60 if args.minutes else None,
                       stdout=subprocess.DEVNULL if not os.environ.get("MUTATION_VERBOSE") else None)
    except subprocess.TimeoutExpired:
        print(f"mutation: stopped after {args.minutes} minutes; the mutants not run are counted as 'not checked'")
    scores = results(modules, globs)
    survived = False
    for m, (counts, survivors) in scores.items():
        killed = counts.get("killed", 0) + counts.get("caught by type check", 0)
        tried = sum(v for k, v in counts.items() if k not in ("not checked", "skipped"))
        rest = ", ".join(f"{v} {k}" for k, v in sorted(counts.items()) if k != "killed")
        score = f"{100 * killed / tried:.0f}%" if tried else "n/a"
        print(f"{m:15} {score:>5} killed {killed}/{tried}" + (f" ({rest})" if rest else ""))
        for name in survivors:
            print(f"    {name}")
        survived = survived or bool(survivors)
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
