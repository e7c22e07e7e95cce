"""The Flux simulation (tests/support/fluxsim.py) judged by real Flux: kustomize-controller on a real
API server (tests/support/liveflux.py) plays each transition, and what the API server deleted must lie
between what every simulated history deletes and what some simulated history deletes.

The simulation explores every interleaving of Kustomizations that `dependsOn` leaves unordered; real
Flux takes one. So, per merge:
- every object that all simulated histories delete, real Flux deletes (the model claims no deletion
  that does not happen: a wrong protecting rule fails here);
- every object real Flux deletes, some simulated history deletes (the model misses no deletion).
Left out of the comparison, and why: what a HelmRelease's chart renders (helm-controller does not
run: the objects never exist), and the top-level Kustomizations the root prunes (the simulation
records what their finalizers delete, not the Kustomization objects themselves).

Skipped with the reason when oracle/build has not made the binaries; required where
WAVE_BOT_REQUIRE_LIVEFLUX=1 (.ci/run). LIVEFLUX_CASES sets how many random scenarios run.
"""
from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import HealthCheck, Phase, given, settings

from support.fluxsim import FLUX_GROUP, Outcome, Rid, kustomizations, simulate
from support.liveflux import Cluster, Ref, cluster

CASES = int(os.environ.get("LIVEFLUX_CASES", "0"))
"""Random scenarios through real Flux (about 20 s each). 0 by default, so not yet in CI: the first
runs found where real Flux and the simulation part, still to be resolved (issue 31):
- a unit kustomization's `namespace:` moves a nested Flux Kustomization out of flux-system, where
  real Flux finds no GitRepository and applies nothing (the simulation reconciles it);
- the `noprune` layout's wave template (NO_PRUNE in tests/flux/test_fluxsim.py) has no
  `metadata.namespace`: real Flux's root fails its apply ("namespace not specified") and so
  prunes nothing (the simulation's root always applies), e.g. `remove-platform` deletes nothing."""
TESTS = Path(__file__).resolve().parents[1]


def _scenarios() -> ModuleType:
    """tests/flux/test_fluxsim.py's random repositories and pull requests (worlds, make_base, make_pr):
    the very scenarios the simulation checks wave-bot on, loaded once under another name."""
    name = "fluxsim_scenarios"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, TESTS / "flux" / "test_fluxsim.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


SCENARIOS = _scenarios()
COUNTS = {"cases": 0, "deleting": 0, "exact": 0, "raced": 0}


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with cluster(tmp_path_factory.mktemp("liveflux")) as c:
        yield c


def _rid(ref: Ref) -> Rid:
    return Rid(ref.group, ref.kind, ref.namespace, ref.name)


def judge(live: Cluster, base: Mapping[str, bytes], head: Mapping[str, bytes]) -> tuple[Outcome, set[Rid]]:
    """Play base then head through real Flux; assert the simulation brackets what it deleted."""
    outcome = simulate(base, head)
    live.reset()
    live.play(base, "base")
    since = live.audit_offset()
    live.play(head, "head")
    top = {Rid(FLUX_GROUP, "Kustomization", "flux-system", name) for name in kustomizations(base)}
    chart = {rid for rid, ds in outcome.deletions.items() if all(d.how == "uninstall" for d in ds)}
    real = {_rid(r) for r in live.deletions(since)} - top - set(outcome.rendered)
    predicted = outcome.deleted - chart
    always = (outcome.always or set()) - chart
    missed = real - predicted
    assert not missed, f"real Flux deleted {sorted(map(str, missed))}, which no simulated history deletes " \
                       f"(simulated: {sorted(map(str, predicted))})"
    phantom = always - real
    assert not phantom, f"every simulated history deletes {sorted(map(str, phantom))}; real Flux did not " \
                        f"(real: {sorted(map(str, real))})"
    COUNTS["cases"] += 1
    COUNTS["deleting"] += bool(real)
    COUNTS["exact"] += real == predicted
    COUNTS["raced"] += always != predicted
    return outcome, real


# ---- hand-made transitions: one rule each -------------------------------------------------------


def flux(name: str, path: str, prune: str = "true", depends: str = "", extra: str = "") -> bytes:
    dep = f"  dependsOn:\n    - name: {depends}\n" if depends else ""
    return (f"apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: {name}\n"
            f"  namespace: flux-system\nspec:\n{dep}  interval: 10m\n  path: ./{path}\n  prune: {prune}\n"
            f"{extra}  sourceRef:\n    kind: GitRepository\n    name: flux-system\n").encode()


def cm(name: str, ns: str = "apps", protected: bool = False) -> bytes:
    notes = "\n  annotations:\n    kustomize.toolkit.fluxcd.io/prune: disabled" if protected else ""
    return f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {ns}{notes}\n".encode()


def waves(w0: bytes, w1: bytes, prune: str = "true", extra: str = "") -> dict[str, bytes]:
    files = {"clusters/base/kustomization.yaml": b"resources: [w0.yaml, w1.yaml]\n",
             "clusters/base/w0.yaml": flux("w0", "apps/w0", prune, extra=extra),
             "clusters/base/w1.yaml": flux("w1", "apps/w1", prune, "w0", extra=extra)}
    files |= {"apps/w0/a.yaml": w0} if w0 else {"apps/w0/.keep.yaml": b""}
    files |= {"apps/w1/a.yaml": w1} if w1 else {"apps/w1/.keep.yaml": b""}
    return files


X = Rid("", "ConfigMap", "apps", "x")


def test_an_object_moved_to_a_later_wave_is_deleted_by_the_earlier_one(live: Cluster) -> None:
    _, real = judge(live, waves(cm("x"), b""), waves(b"", cm("x")))
    assert X in real


def test_prune_disabled_on_the_live_object_keeps_it(live: Cluster) -> None:
    _, real = judge(live, waves(cm("x", protected=True), b""), waves(b"", cm("x")))
    assert X not in real


def test_prune_false_keeps_what_left_the_build(live: Cluster) -> None:
    _, real = judge(live, waves(cm("x"), b"", prune="false"), waves(b"", cm("x"), prune="false"))
    assert X not in real


def test_a_pruned_namespace_takes_what_is_in_it(live: Cluster) -> None:
    ns = b"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: data\n---\n"
    claim = (b"apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: db\n  namespace: data\n"
             b"spec:\n  accessModes: [ReadWriteOnce]\n  resources:\n    requests:\n      storage: 1Gi\n")
    _, real = judge(live, waves(ns + claim, b""), waves(b"", claim))
    assert {Rid("", "Namespace", "", "data"), Rid("", "PersistentVolumeClaim", "data", "db")} <= real


def test_a_removed_kustomization_prunes_its_inventory_unless_orphaned(live: Cluster) -> None:
    base = waves(cm("x"), cm("y"))
    head = {**base, "clusters/base/kustomization.yaml": b"resources: [w0.yaml]\n"}
    del head["clusters/base/w1.yaml"]
    _, real = judge(live, base, head)
    assert Rid("", "ConfigMap", "apps", "y") in real and X not in real
    orphan = waves(cm("x"), cm("y"), extra="  deletionPolicy: Orphan\n")
    head = {**orphan, "clusters/base/kustomization.yaml": b"resources: [w0.yaml]\n"}
    del head["clusters/base/w1.yaml"]
    _, real = judge(live, orphan, head)
    assert Rid("", "ConfigMap", "apps", "y") not in real


# ---- the simulation's random scenarios -----------------------------------------------------------


@settings(max_examples=max(CASES, 1), deadline=None, derandomize=True, phases=[Phase.explicit, Phase.generate],
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(SCENARIOS.worlds())
def test_real_flux_deletes_what_the_simulation_says(live: Cluster, w: object) -> None:
    if not CASES:
        pytest.skip("LIVEFLUX_CASES is 0 (see CASES)")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        SCENARIOS.make_base(w, root)
        base = SCENARIOS.files_of(root)
        SCENARIOS.make_pr(w, root)
        code, report = SCENARIOS.cli(root, "apply", "--base", "main", "--fix-overlays")
        assert code == 0, report
        SCENARIOS.hide_waves(w, root)
        judge(live, base, SCENARIOS.files_of(root))


@pytest.fixture(scope="module", autouse=True)
def _report_counts() -> Iterator[None]:
    yield
    if COUNTS["cases"]:
        print(f"\nliveflux: {COUNTS['cases']} transitions through real Flux, {COUNTS['deleting']} deleting; "
              f"{COUNTS['exact']} where real Flux deleted exactly what the simulation's union says, "
              f"{COUNTS['raced']} where simulated histories differ")
