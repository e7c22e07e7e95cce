"""Fuzzing the engine with malformed catalogs and manifests: the only failure allowed is WaveBotError."""
from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.config import Config
from bot.errors import WaveBotError
from bot.plan import make_plan
from bot.repo.worktree import FsTree

from conftest import snapshot, write_files

NAMES = st.sampled_from(["api", "web", "db", "api-db", "Web", "../x", "", "a" * 70, "-x", "web-app"])
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), NAMES, st.text(max_size=6))
KEYS = st.sampled_from(["to", "name", "x"])
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(KEYS, inner, max_size=3)),
    max_leaves=12,
)


@st.composite
def service_docs(draw: st.DrawFn) -> Any:
    """Documents that look like ServiceDefinitions, with any part of them wrong."""
    deps = draw(st.one_of(st.lists(st.one_of(NAMES, st.fixed_dictionaries({"to": NAMES}), VALUES), max_size=4), VALUES))
    shape = draw(st.sampled_from(["metadata", "top", "broken"]))
    if shape == "metadata":
        return {"kind": "ServiceDefinition", "metadata": {"name": draw(NAMES)}, "spec": {"dependencies": deps}}
    if shape == "top":
        return {"name": draw(NAMES), "dependencies": deps}
    return draw(VALUES)


RAW = st.one_of(
    st.binary(max_size=60),
    st.text(alphabet="ab:-[]{}&*!|>'\"#%@`\n\t ", max_size=80).map(str.encode),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.one_of(service_docs().map(lambda d: json.dumps(d).encode()), RAW), min_size=1, max_size=5),
    st.lists(st.one_of(RAW, st.just(b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")), max_size=3),
)
def test_malformed_input_never_crashes_the_engine(catalog: list[bytes], manifests: list[bytes]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        files: dict[str, str | bytes] = {f"catalog/c{i}.yaml": data for i, data in enumerate(catalog)}
        files |= {f"apps/wave-0/m{i}.yaml": data for i, data in enumerate(manifests)}
        write_files(Path(tmp), files)
        before = snapshot(Path(tmp))
        try:
            plan = make_plan(FsTree(tmp), Config())
        except WaveBotError as exc:
            assert exc.message and exc.exit_code == 2
        else:
            assert plan.graph is not None
        assert snapshot(Path(tmp)) == before
