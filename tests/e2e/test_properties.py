"""Property tests: on any acyclic catalog the waves obey the longest-path rule and apply is idempotent
(files and directory units alike, a directory landing whole in its wave);
side branches (non_gating units) gate nobody and start after everything their units need."""
from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.config import Config, ExtraUnit
from bot.errors import WaveBotError
from bot.plan import make_plan
from bot.repo.worktree import FsTree, apply_changes
from bot.side import Side, number
from bot.yamlio import documents as yamlio

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


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dags(), st.data())
def test_side_branches_gate_nobody_and_every_dependency_is_ready_first(
    dag: tuple[list[str], dict[str, list[str]], set[str]], data: st.DataObject
) -> None:
    names, deps, onboarded = dag
    # Extra units anchored to catalog nodes (or to earlier extra units), beside or above their anchor.
    extras = [(f"ext{i}", data.draw(st.sampled_from(names + [f"ext{j}" for j in range(i)])), data.draw(st.booleans()))
              for i in range(data.draw(st.integers(0, 3)))]
    needs = {**deps, **{name: [anchor] for name, anchor, _ in extras}}
    depended_on = {d for ds in needs.values() for d in ds}
    units = [*names, *(name for name, _, _ in extras)]
    leaves_up = [n for n in units if n not in depended_on]  # units nothing depends on: may be non-gating
    pool = units if data.draw(st.integers(0, 4)) == 0 else leaves_up
    non_gating = data.draw(st.lists(st.sampled_from(pool), unique=True))
    placed = onboarded | {name for name, _, _ in extras}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        files: dict[str, str | bytes] = {f"catalog/{n}.yaml": service(n, *deps[n]) for n in names}
        files.update({f"apps/{n}.yaml": f"kind: ConfigMap\nname: {n}\n" for n in placed})
        write_files(root, files)
        config = Config(non_gating=tuple(non_gating),
                        extra_units=tuple(ExtraUnit(name, anchor, above) for name, anchor, above in extras))
        if set(non_gating) & depended_on:  # a unit others need cannot be non-gating: input error
            with pytest.raises(WaveBotError, match="non_gating lists"):
                make_plan(FsTree(tmp), config)
            return

        plan = make_plan(FsTree(tmp), config)
        apply_changes(tmp, plan.changes)
        # The Flux Kustomizations exactly as written: name -> what it depends on.
        crs = {}
        for path in (root / "clusters/base").glob("*.yaml"):
            doc = yamlio.load_one(path.read_bytes(), str(path))
            assert doc is not None
            crs[doc.value["metadata"]["name"]] = [d["name"] for d in doc.value["spec"]["dependsOn"]]
        sides = {config.wave_cr_name(s) for s in plan.sides}
        assert not {d for ds in crs.values() for d in ds} & sides  # nothing depends on a side branch

        def closure(name: str) -> set[str]:
            found, todo = set(), list(crs.get(name, []))
            while todo:
                current = todo.pop()
                if current not in found:
                    found.add(current)
                    todo += crs.get(current, [])
            return found

        slot = {n: node.slot for n, node in plan.graph.nodes.items()}
        for n in units:
            assert isinstance(slot[n], Side) == (n in non_gating)
            assert number(slot[n]) == plan.graph.nodes[n].wave  # non-gating keeps its wave
            for d in needs[n]:
                # Every dependency edge ends at a gating Kustomization: an earlier wave n's waits for,
                # or (an extra unit beside its anchor) the gating one of n's own wave.
                assert not isinstance(slot[d], Side)
                if n in placed:  # (a unit without files has no Kustomization to check)
                    ready = closure(config.wave_cr_name(slot[n])) | {config.wave_cr_name(number(slot[n]))}
                    assert config.wave_cr_name(slot[d]) in ready
        for n in placed:
            assert (root / config.wave_dir(slot[n]) / f"{n}.yaml").is_file()
        assert make_plan(FsTree(tmp), config).changes == ()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dags(), st.data())
def test_directory_units_land_whole_in_their_wave_and_apply_is_idempotent(
    dag: tuple[list[str], dict[str, list[str]], set[str]], data: st.DataObject
) -> None:
    names, deps, onboarded = dag
    # Each onboarded unit a file or a directory (with or without its own kustomization, under the
    # grouping folder grp/ or not), starting flat or wrongly in wave 5.
    shapes = st.sampled_from(["file", "dir", "dir-kust", "group", "group-kust"])
    layouts = {n: data.draw(shapes) for n in sorted(onboarded)}
    start = data.draw(st.sampled_from(["apps", "apps/wave-5"]))
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        files: dict[str, str | bytes] = {f"catalog/{n}.yaml": service(n, *deps[n]) for n in names}
        expected: dict[str, str] = {}
        for n, layout in layouts.items():
            manifest = f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {n}\n"
            if layout == "file":
                unit = {f"{n}.yaml": manifest}
            else:
                below = f"grp/{n}" if layout.startswith("group") else n
                unit = {f"{below}/{n}.yaml": manifest, f"{below}/sub/{n}-extra.yaml": manifest.replace(n, f"{n}-x")}
                if layout.endswith("-kust"):
                    unit[f"{below}/kustomization.yaml"] = (f"namespace: {n}\nresources:\n  - {n}.yaml\n"
                                                           f"  - sub/{n}-extra.yaml\n")
            files |= {f"{start}/{rel}": text for rel, text in unit.items()}
            expected |= {f"apps/wave-{{}}/{rel}|{n}": text for rel, text in unit.items()}
        write_files(root, files)

        plan = make_plan(FsTree(tmp), Config())
        wave = plan.graph.waves()
        apply_changes(tmp, plan.changes)
        for key, text in expected.items():
            path, n = key.split("|")
            assert (root / path.format(wave[n])).read_text() == text, (path.format(wave[n]), layouts[n])
        assert make_plan(FsTree(tmp), Config()).changes == ()
