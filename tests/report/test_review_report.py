"""The review-mode report: what the change deletes first (one line per object at risk, then its safe
step), then the tier problems; no wave table, no wave graph, no gating advice about waves."""
from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

from bot.cli import main

from conftest import git, write_files
from support.ksrepo import CHILD, ks_repo_files


def test_the_comment_puts_the_claim_and_its_step_before_the_tier_problems(make_repo: Any) -> None:
    repo: Path = make_repo(ks_repo_files())
    typo = CHILD.format(name="radarr", app="radarr") + "  dependsOn:\n    - name: plexx\n"
    write_files(repo, {"kubernetes/apps/plex.yaml": CHILD.format(name="plex-app", app="plex"),
                       "kubernetes/apps/radarr.yaml": typo})
    git(repo, "commit", "-qam", "rename plex, and a typo")
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        code = main(["check", str(repo), "--base", "HEAD~1", "--format", "markdown"])
    body = out.getvalue()

    assert code == 1
    claim = body.index("`PersistentVolumeClaim media/plex-config`")
    step = body.index("deletionPolicy: Orphan", claim)
    tiers = body.index("#### Tiers")
    assert claim < step < tiers
    assert body.index("depends-on-missing") > tiers
    for wave_part in ("#### Waves", "Wave graph", "Gating worth knowing about", "wave 0"):
        assert wave_part not in body
