"""Property tests: on any acyclic catalog the waves obey the longest-path rule and apply is idempotent."""
from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.config import Config
from bot.plan import make_plan
from bot.worktree import FsTree, apply_changes

from conftest import service, write_files


@st.composite
def dags(draw: st.DrawFn) -> tuple[list[str], dict[str, list[str]], set[str]]:
    """Node names, edges (node -> dependencies, always to an earlier node) and the nodes that have files."""
    count = draw(st.integers(min_value=1, max_value=14))
    names = [f"svc{i}" for i in range(count)]
    deps = {
        name: sorted(set(draw(st.lists(st.sampled_from(names[:i]), max_size=4)))) if i else []
        for i, name in enumerate(names)
    }
    onboarded = set(draw(st.lists(st.sampled_from(names), unique=True)))
    return names, deps, onboarded


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dags(), st.booleans())
def test_waves_follow_the_longest_path_and_apply_is_idempotent(
    dag: tuple[list[str], dict[str, list[str]], set[str]], start_flat: bool
) -> None:
    names, deps, onboarded = dag
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        files: dict[str, str | bytes] = {f"catalog/{n}.yaml": service(n, *deps[n]) for n in names}
        for n in onboarded:
            # Start either flat (pre-split) or everything wrongly in wave 5.
            files[f"apps/{n}.yaml" if start_flat else f"apps/wave-5/{n}.yaml"] = f"kind: ConfigMap\nname: {n}\n"
        write_files(root, files)

        plan = make_plan(FsTree(tmp), Config())
        wave = plan.graph.waves()
        for n in names:
            for d in deps[n]:
                assert wave[n] > wave[d]  # every edge goes strictly up
            # a node with dependencies sits exactly one above its highest dependency
            assert wave[n] == (1 + max(wave[d] for d in deps[n]) if deps[n] else 0)
        for f in plan.files:
            assert f.target_wave == wave[f.node]  # type: ignore[index]

        apply_changes(tmp, plan.changes)
        again = make_plan(FsTree(tmp), Config())
        assert again.changes == ()
        assert {f.node: f.target for f in again.files} == {f.node: f.target for f in plan.files}
        for n in onboarded:
            assert (root / f"apps/wave-{wave[n]}/{n}.yaml").read_text() == f"kind: ConfigMap\nname: {n}\n"
