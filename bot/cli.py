"""`wave-bot`: argument parsing, one handler for user-facing errors, exit codes.

Imports of the engine happen inside the commands so that `wave-bot --help` starts fast.
"""
from __future__ import annotations

import argparse
import contextlib
import gc
import os
import shutil
import sys
import traceback
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

from bot import __version__
from bot.errors import BUG_EXIT, WaveBotError

if TYPE_CHECKING:
    from bot.config import Config
    from bot.plan import Plan
    from bot.repo.tree import Tree


def _load(args: argparse.Namespace) -> tuple[Tree, Config]:
    """The work tree at PATH and the config: `--config` (a file anywhere), else the repository's."""
    from bot.config import load_config, parse_config
    from bot.repo.worktree import FsTree, read_user_file

    tree = FsTree(args.path)
    if args.config:
        return tree, parse_config(read_user_file(args.config), args.config)
    return tree, load_config(tree)


def _plan(args: argparse.Namespace) -> Plan:
    from bot.plan import make_plan

    tree, config = _load(args)
    if not args.base:
        return make_plan(tree, config, fix_overlays=args.fix_overlays)
    from bot.repo.git import GitTree

    with GitTree(args.path, args.base) as base:
        return make_plan(tree, config, base=base, fix_overlays=args.fix_overlays)


def _width() -> int:
    """The terminal's width; 80 columns when the output goes to a file, a pipe or pre-commit."""
    from bot.report.formats import TEXT_WIDTH

    if not sys.stdout.isatty():
        return TEXT_WIDTH
    return max(40, shutil.get_terminal_size((TEXT_WIDTH, 24)).columns - 1)


def _print(plan: Plan, args: argparse.Namespace, applied: bool = False) -> None:
    from bot.report.formats import render

    sys.stdout.write(render(plan, args.format, applied, width=_width(), fixes=not args.no_fixes, gating=args.gating))


def cmd_plan(args: argparse.Namespace) -> int:
    _print(_plan(args), args)
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    plan = _plan(args)
    _print(plan, args)
    errors = sum(f.severity == "error" for f in plan.findings)
    fix_them = f"fix the {errors} error(s) listed above as each one says" if errors else ""
    if plan.changes:
        also = f"; {fix_them} (`wave-bot apply` does not clear them)" if errors else ""
        sys.stderr.write(f"wave-bot: check failed: the wave layout is out of date: run `wave-bot apply` to make the "
                         f"{len(plan.changes)} change(s){also}\n")
    elif errors:
        sys.stderr.write(f"wave-bot: check failed: {fix_them}\n")
    failed = bool(plan.changes or plan.has_errors())
    if failed:
        _say_unstaged(args, plan)
    return 1 if failed else 0


def _say_unstaged(args: argparse.Namespace, plan: Plan) -> None:
    """Name the layout's files that are not staged: pre-commit checks the staged files only, so an
    `apply` whose result is not staged would otherwise loop ("run apply", "up to date", ...)."""
    from bot.flux.inventory import clusters_dir
    from bot.repo import git

    c = plan.config
    dirs = {c.apps_dir, c.base_dir, c.catalog_dir, clusters_dir(c)}
    found = [p for p in git.unstaged(args.path) or [] if any(p.startswith(d.rstrip("/") + "/") for d in dirs)]
    if found:
        import shlex

        listed = " ".join(shlex.quote(p) for p in found)
        sys.stderr.write(f"wave-bot: {len(found)} file(s) of the layout have changes that are not staged, and a "
                         f"commit (and pre-commit) sees only what is staged: {listed}. Stage them: "
                         f"git add -A -- {listed}\n")


def cmd_apply(args: argparse.Namespace) -> int:
    from bot.repo import git
    from bot.repo.worktree import apply_changes

    plan = _plan(args)
    if plan.changes:
        apply_changes(args.path, plan.changes, git.mover(args.path))
        # Staged, so that a plain `git commit` records the whole layout (moves are staged above).
        stage = git.stager(args.path)
        if stage is not None:
            stage([c.path for c in plan.changes if c.action != "move"])
    _print(plan, args, applied=True)
    return 0


def _accept_args(args: argparse.Namespace) -> tuple[list[str], str]:
    """RESOURCE... [REPO]: the last argument is the repository when it is a directory and not an
    object's name (an object's name always has a space: `Kind name`)."""
    from bot.checks.acceptance import looks_like_resource

    names = list(args.resources)
    if len(names) > 1 and not looks_like_resource(names[-1]) and os.path.isdir(names[-1]):
        return list(dict.fromkeys(names[:-1])), names[-1]
    return list(dict.fromkeys(names)), "."


def cmd_accept(args: argparse.Namespace) -> int:
    from bot.checks import acceptance
    from bot.model import Change
    from bot.repo import git
    from bot.repo.worktree import apply_changes

    resources, args.path = _accept_args(args)
    tree, config = _load(args)
    kind = tree.kind(acceptance.ACCEPT_FILE)
    accepted = acceptance.read_accepted(tree)  # an invalid file is refused here, before anything is written
    acceptance.refuse_new(resources, args.by, accepted, None)
    deleted: set[str] | None = None
    if args.base:
        from bot.plan import make_plan
        from bot.repo.git import GitTree

        with GitTree(args.path, args.base) as base:
            # Every move as it is (no hold): accepting a move takes it as it is, deleted and recreated.
            plan = make_plan(tree, config, base=base, hold=False)
        deleted = {f.resource for f in plan.findings if f.code in acceptance.DELETING and f.resource}
        acceptance.refuse_new(resources, args.by, accepted, deleted, args.base)
    old = tree.read(acceptance.ACCEPT_FILE) if kind is not None else None
    content = acceptance.add(old, resources, args.by, args.reason)
    apply_changes(args.path, [Change("create" if old is None else "update", acceptance.ACCEPT_FILE, content=content)])
    stage = git.stager(args.path)
    if stage is not None:
        stage([acceptance.ACCEPT_FILE])
    staged = " and staged it" if stage is not None else ""
    checked = (f"Each is deleted by this change against {args.base}." if args.base else
               "Not checked against a deployed revision: `check --base <it>` reports an entry that matches no "
               "deletion as stale-acceptance.")
    listed = "".join(f"  - {r}\n" for r in resources)
    sys.stdout.write(f"wave-bot: added {len(resources)} entr{'y' if len(resources) == 1 else 'ies'} to "
                     f"{acceptance.ACCEPT_FILE}{staged}, accepting (by {args.by.strip()}) the deletion of:\n{listed}"
                     f"{checked} Commit it with the change that deletes them: reviewers approve the entries "
                     "with the pull request, and git history keeps who accepted what.\n")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from bot.actions.forge.platforms import in_actions

    if not in_actions(os.environ):
        raise WaveBotError(
            "`wave-bot run` is the GitHub/Gitea Actions entrypoint: it reads the event, token and inputs a runner "
            "provides (GITHUB_ACTIONS, GITHUB_EVENT_PATH, INPUT_TOKEN), and none are set here",
            hint="on your machine run `wave-bot plan` to see the waves and findings, `wave-bot apply` to "
                 "regenerate them, or `wave-bot check` in CI and pre-commit",
        )
    from bot.actions.run import run

    return run(os.environ, sys.stdout)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="wave-bot",
        description="Keep a Flux GitOps repository's app tier in dependency-ordered waves.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    specs: list[tuple[str, str, Callable[[argparse.Namespace], int]]] = [
        ("plan", "show the wave layout and what apply would change (writes nothing)", cmd_plan),
        ("apply", "move app files into their waves and regenerate the wave files", cmd_apply),
        ("check", "exit 1 when the layout is out of date or has errors (for CI and pre-commit)", cmd_check),
    ]
    for name, help_text, func in specs:
        sub = commands.add_parser(name, help=help_text, description=help_text)
        sub.add_argument("path", nargs="?", default=".", metavar="PATH", help="repository root (default: .)")
        sub.add_argument("--config", metavar="FILE", help="config file (default: PATH/.wave-bot.yaml)")
        sub.add_argument("--format", choices=("text", "json", "markdown"), default="text", help="output format")
        sub.add_argument("--base", metavar="REV",
                         help="the deployed revision (e.g. origin/main) to check Flux prune hazards against")
        sub.add_argument("--fix-overlays", action="store_true",
                         help="also add missing base entries and SOPS decryption patches for the waves")
        sub.add_argument("--no-fixes", action="store_true",
                         help="text output: list the findings without the fix under each")
        sub.add_argument("--gating", action="store_true",
                         help="show the chain-gating advice for every wave boundary, not only the boundaries whose "
                              "membership this change touches")
        sub.set_defaults(func=func)
    accept_help = "accept that Flux deletes the named objects: add them to .wave-bot-accept.yaml (and stage it)"
    accept = commands.add_parser("accept", help=accept_help, description=accept_help + ". Review the entry and "
                                 "merge it with the change that deletes them.",
                                 usage="wave-bot accept RESOURCE... --by NAME [--reason TEXT] [--base REV] "
                                       "[--config FILE] [PATH]")
    accept.add_argument("resources", nargs="+", metavar="RESOURCE",
                        help="one object as the findings name it, quoted: 'PersistentVolumeClaim pihole/pihole-data'; "
                             "a last argument that is a directory is the repository root (default: .)")
    accept.add_argument("--by", required=True, metavar="NAME", help="who accepts the deletion (required)")
    accept.add_argument("--reason", default="", metavar="TEXT", help="why the data need not survive")
    accept.add_argument("--base", metavar="REV",
                        help="the deployed revision: refuse an object this change does not delete against it")
    accept.add_argument("--config", metavar="FILE", help="config file (default: PATH/.wave-bot.yaml)")
    accept.set_defaults(func=cmd_accept, format="text")
    run = commands.add_parser("run", help="the GitHub/Gitea Actions entrypoint (reads GITHUB_* variables); "
                              "not for local use")
    run.set_defaults(func=cmd_run)
    return parser


def _report_error(exc: WaveBotError, fmt: str = "text") -> None:
    sys.stderr.write(f"wave-bot: error: {exc}\n")
    if fmt == "json":  # stdout stays one JSON document, for the script that reads it
        from bot.report.formats import error_json

        sys.stdout.write(error_json(exc))
    else:
        from bot.actions.forge.platforms import in_actions
        from bot.actions.workflow_commands import error_annotation

        if not in_actions(os.environ):
            return

        sys.stdout.write(error_annotation(exc))


@contextlib.contextmanager
def _sparse_collections() -> Iterator[None]:
    """Run the cyclic garbage collector every 50,000 allocations instead of every 700, then restore.

    A plan builds one large model that lives until the end and holds no garbage cycles (yamlio frees
    each YAML loader at once), so CPython's default schedule only re-traverses it: at 10,000 services
    that was a fifth of `plan --base`'s CPU time, for no memory back.
    """
    saved = gc.get_threshold()
    gc.set_threshold(50_000, *saved[1:])
    try:
        yield
    finally:
        gc.set_threshold(*saved)


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args, extra = parser.parse_known_args(argv)
    if extra and args.command == "accept" and not any(e.startswith("-") for e in extra):
        args.resources += extra  # `accept A --by x B [REPO]`: argparse takes positionals only before options
    elif extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        with _sparse_collections():
            code = int(args.func(args))
        sys.stdout.flush()  # inside the try: a closed pipe is reported here, not at interpreter exit
        return code
    except WaveBotError as exc:
        _report_error(exc, getattr(args, "format", "text"))
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`wave-bot plan | head`): not a bug. Point stdout at devnull so the
        # interpreter's final flush does not raise again (Python's documented SIGPIPE recipe).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except Exception:
        traceback.print_exc()
        sys.stderr.write("wave-bot: internal error (a bug): please report it with the traceback above\n")
        return BUG_EXIT


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
