"""Every move made as it is, none held: what a pull request's author did by hand (or with a wave-bot
from before plain `apply` held data-loss moves), for the tests that judge such a move."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from bot.config import load_config
from bot.plan import make_plan
from bot.repo.git import mover
from bot.repo.worktree import FsTree, apply_changes


def apply_as_is(repo: Path, fix_overlays: bool = False) -> None:
    """`wave-bot apply` on `repo`, making every move (the work tree taken as deployed)."""
    tree = FsTree(str(repo))
    plan = make_plan(tree, load_config(tree), fix_overlays=fix_overlays, hold=False)
    apply_changes(str(repo), plan.changes, mover(str(repo)))


def plan_as_is(repo: Path) -> Any:
    """`wave-bot plan`'s Plan for the moves as they are, none held."""
    tree = FsTree(str(repo))
    return make_plan(tree, load_config(tree), hold=False)


def findings_as_is(repo: Path) -> list[dict[str, Any]]:
    """`wave-bot plan`'s findings (JSON) for the moves as they are, none held."""
    tree = FsTree(str(repo))
    return [f.to_json() for f in make_plan(tree, load_config(tree), hold=False).findings]


__all__ = ["apply_as_is", "findings_as_is", "plan_as_is"]
