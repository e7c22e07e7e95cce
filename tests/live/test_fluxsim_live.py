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

And wave-bot's findings on each random scenario pass test_fluxsim.check_findings against the
simulated union, which holds everything real Flux deleted: each object real Flux deletes is named
(on its own finding, its owner's, or its removed Kustomization's), at error severity where data is
lost, and no error claims a deletion no history performs.

Skipped with the reason when oracle/build has not made the binaries; required where
WAVE_BOT_REQUIRE_LIVEFLUX=1 (.ci/run). LIVEFLUX_CASES sets how many random scenarios run (100),
LIVEFLUX_CLUSTERS on how many control planes at once (3); the counts are printed at the end.
"""
from __future__ import annotations

import contextlib
import copy
import importlib.util
import os
import queue
import resource
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings

from support.fluxsim import FLUX_GROUP, Outcome, Rid, kustomizations, simulate
from support.liveflux import Cluster, Ref, cluster, served

CASES = int(os.environ.get("LIVEFLUX_CASES", "100"))
"""Random scenarios through real Flux: the first CASES worlds `worlds()` draws with a fixed seed (0
skips them), every one of them (those that hold a wave on a never-Ready child too: `stalls`,
HEALTH_TIMEOUT). The first runs found two places where real Flux and the simulation parted, both
fixed in the simulation and in wave-bot (tests/flux/test_fluxsim.py, and the two hand transitions
above the random lane here): a unit kustomization's `namespace:` moving a nested Flux Kustomization
out of flux-system, where it finds no GitRepository and applies nothing; a wave template without
`metadata.namespace`, which fails the root's whole apply ("namespace not specified")."""
HEALTH_TIMEOUT = "15s"
"""What every transition serves as the health-check timeout of a Flux Kustomization that waits on what
it applies (liveflux's `play(health_timeout=...)`): the random worlds' waves say `timeout: 5m`, and a
wave holding a child that never becomes Ready (`stalls`) fails its health check only then. A timeout
changes no deletion (judge checks that the simulation, which never reads it, says the same of what
is served); it only bounds how long real Flux holds the wave before its dependents are left waiting."""
CLUSTERS = max(1, int(os.environ.get("LIVEFLUX_CLUSTERS", "3")))
"""Control planes playing scenarios at once (each about 0.5 GB; mostly waiting on Flux)."""
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
COUNTS = {"cases": 0, "deleting": 0, "exact": 0, "raced": 0, "stalling": 0, "held": 0}
KINDS: dict[str, int] = {}
TIMES: list[float] = []
"""Seconds each random scenario took on its control plane (reset, base, head, the judgement)."""
PREPARED: list[float] = []
"""Seconds wave-bot took on each (make_base, make_pr, apply)."""
LOCK = threading.Lock()


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with cluster(tmp_path_factory.mktemp("liveflux")) as c:
        yield c


def _rid(ref: Ref) -> Rid:
    return Rid(ref.group, ref.kind, ref.namespace, ref.name)


def judge(live: Cluster, base: Mapping[str, bytes], head: Mapping[str, bytes]) -> tuple[Outcome, set[Rid]]:
    """Play base then head through real Flux (health checks capped at HEALTH_TIMEOUT); assert the
    simulation brackets what it deleted."""
    outcome = simulate(base, head)
    shown = served(base, HEALTH_TIMEOUT), served(head, HEALTH_TIMEOUT)
    if shown != (served(base), served(head)):  # the cap changed a timeout: the simulation sees no difference
        assert simulate(*shown) == outcome, "a health-check timeout changed what the simulation deletes"
    live.reset()
    live.play(base, "base", health_timeout=HEALTH_TIMEOUT)
    held = bool(waves_held(live))
    since = live.audit_offset()
    live.play(head, "head", health_timeout=HEALTH_TIMEOUT)
    held = held or bool(waves_held(live))
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
    with LOCK:
        COUNTS["cases"] += 1
        COUNTS["deleting"] += bool(real)
        COUNTS["exact"] += real == predicted
        COUNTS["raced"] += always != predicted
        COUNTS["held"] += held
    return outcome, real


def waves_held(live: Cluster) -> set[str]:
    """The Flux Kustomizations whose health check failed on the revision just played (those waiting
    on them say DependencyNotReady)."""
    out = set()
    for k in live.list(FLUX_GROUP, "Kustomization"):
        ready = next((c for c in (k.get("status") or {}).get("conditions") or [] if c["type"] == "Ready"), {})
        if ready.get("reason") == "HealthCheckFailed":
            out.add(k["metadata"]["name"])
    return out


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


def test_a_nested_kustomization_moved_out_of_flux_system_finds_no_source(live: Cluster) -> None:
    """A unit kustomization's `namespace:` moves the Flux Kustomization `child` to `elsewhere`, where
    its sourceRef (no namespace: its own) names no GitRepository: it is not Ready, applies nothing
    and prunes nothing, so removing it deletes only the Kustomization object."""
    base = {**waves(b"", b""), "apps/w0/kustomization.yaml": b"resources: [child]\n",
            "apps/w0/child/kustomization.yaml": b"namespace: elsewhere\nresources: [child.yaml]\n",
            "apps/w0/child/child.yaml": flux("child", "kubernetes/child"), "kubernetes/child/x.yaml": cm("x")}
    live.reset()
    live.play(base, "base")
    (child,) = [k for k in live.list(FLUX_GROUP, "Kustomization") if k["metadata"]["name"] == "child"]
    ready = next(c for c in child["status"]["conditions"] if c["type"] == "Ready")
    assert child["metadata"]["namespace"] == "elsewhere" and ready["status"] == "False", ready
    assert "GitRepository.source.toolkit.fluxcd.io \"flux-system\" not found" in ready["message"], ready
    head = {k: v for k, v in base.items() if not k.startswith("apps/w0/")} | {"apps/w0/.keep.yaml": b""}
    _, real = judge(live, base, head)
    assert real == {Rid(FLUX_GROUP, "Kustomization", "elsewhere", "child")}


def test_a_waiting_wave_holding_a_never_ready_child_holds_back_the_next_wave(live: Cluster) -> None:
    """Wave 0 (`wait: true`, wave-bot's `timeout: 5m`, served capped at HEALTH_TIMEOUT) applies a
    Flux Kustomization its unit kustomization moves out of flux-system, which never becomes Ready:
    wave 0's health check times out, so wave 1 never reconciles the revision that removes `y`, and
    nothing is deleted (the rule behind `stalls()`; the simulation models it: Spec.wait)."""
    base = waves(b"", cm("y"), extra="  wait: true\n  timeout: 5m\n")
    head = {**base, "apps/w0/kustomization.yaml": b"resources: [child]\n",
            "apps/w0/child/kustomization.yaml": b"namespace: elsewhere\nresources: [child.yaml]\n",
            "apps/w0/child/child.yaml": flux("child", "kubernetes/child"), "kubernetes/child/x.yaml": cm("x"),
            "apps/w1/.keep.yaml": b""}
    del head["apps/w0/.keep.yaml"], head["apps/w1/a.yaml"]
    _, real = judge(live, base, head)
    assert real == set()  # y stays: wave 1 waits on wave 0
    assert waves_held(live) == {"w0"}
    (w1,) = [k for k in live.list(FLUX_GROUP, "Kustomization") if k["metadata"]["name"] == "w1"]
    ready = next(c for c in w1["status"]["conditions"] if c["type"] == "Ready")
    assert ready["reason"] == "DependencyNotReady", ready


def test_a_wave_held_back_at_base_never_applied_so_removing_it_deletes_nothing(live: Cluster) -> None:
    """At base already wave 0 holds a never-Ready child (as above): wave 1 waits on it and never
    applies, so `y` never exists, and the root removing wave 1 deletes nothing (its finalizer's
    inventory is empty). The simulation took the base cluster to hold every Kustomization's build and
    said every history deletes `y`; it now applies at base only what gets to apply (`applied_at`)."""
    base = {**waves(b"", cm("y"), extra="  wait: true\n  timeout: 5m\n"),
            "apps/w0/kustomization.yaml": b"resources: [child]\n",
            "apps/w0/child/kustomization.yaml": b"namespace: elsewhere\nresources: [child.yaml]\n",
            "apps/w0/child/child.yaml": flux("child", "kubernetes/child"), "kubernetes/child/x.yaml": cm("x")}
    del base["apps/w0/.keep.yaml"]
    head = {k: v for k, v in base.items() if k != "clusters/base/w1.yaml"} | {
        "clusters/base/kustomization.yaml": b"resources: [w0.yaml]\n"}
    live.reset()
    live.play(base, "base", health_timeout=HEALTH_TIMEOUT)
    assert waves_held(live) == {"w0"}
    assert not [c for c in live.list("", "ConfigMap") if c["metadata"]["name"] == "y"]  # wave 1 never applied
    _, real = judge(live, base, head)
    assert real == set()


def test_a_kustomization_without_a_namespace_fails_the_roots_apply(live: Cluster) -> None:
    """A Flux Kustomization in the root's build without metadata.namespace: the API server refuses
    it, the root's apply fails, and the root applies nothing of the revision and deletes nothing."""
    base = waves(cm("x"), cm("y"))
    head = {k: v for k, v in base.items() if k != "clusters/base/w1.yaml"} | {
        "clusters/base/kustomization.yaml": b"resources: [w0.yaml, w2.yaml]\n",
        "clusters/base/w2.yaml": flux("w2", "apps/w2").replace(b"  namespace: flux-system\n", b""),
        "apps/w2/a.yaml": cm("z")}
    _, real = judge(live, base, head)
    assert real == set()  # w1 is not pruned: its finalizer would delete y
    (root,) = [k for k in live.list(FLUX_GROUP, "Kustomization") if k["metadata"]["name"] == "flux-system"]
    ready = next(c for c in root["status"]["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "False" and "namespace not specified" in ready["message"], ready
    assert "w2" not in {k["metadata"]["name"] for k in live.list(FLUX_GROUP, "Kustomization")}
    # From an empty cluster, that revision applies nothing at all: the fixed one deletes nothing.
    _, real = judge(live, head, base)
    assert real == set()


# ---- the simulation's random scenarios -----------------------------------------------------------


def stalls(w: Any) -> bool:
    """Whether the world holds a child Kustomization its unit's kustomization moves out of
    flux-system (its sourceRef then finds no GitRepository, and it is never Ready). Where the wave
    applying it health-checks what it applies (`wait: true`: wave-bot's default template; not the
    noprune worlds' template, nor the legacy `apps` Kustomization), real Flux holds that wave at
    "Running health checks" for its whole `timeout` (the worlds' 5m; HEALTH_TIMEOUT as played here),
    then fails it, and every later wave waits on it for good (at base already: they never apply):
    the simulation models that (Spec.wait). The lane's summary counts these worlds, and the
    transitions in which real Flux held a wave."""
    return any(shape.startswith("child") and w.dressing.get(name, (False,))[0] for name, shape in w.shapes.items())


def drawn(n: int) -> list[object]:
    """The first `n` worlds `worlds()` draws with a fixed seed (the same ones on every machine)."""
    out: list[object] = []

    @settings(max_examples=3 * n, deadline=None, derandomize=True, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(SCENARIOS.worlds())
    def collect(w: object) -> None:
        out.append(copy.deepcopy(w))

    collect()
    assert len(out) >= n, f"only {len(out)} worlds drawn"
    return out[:n]


@dataclass(frozen=True)
class Scenario:
    """A random world's transition as wave-bot left it: what real Flux plays, and what wave-bot said."""

    number: int
    world: str
    """repr() of the world before its pull request: paste it into an @example to replay it."""
    kind: str
    base: Mapping[str, bytes]
    head: Mapping[str, bytes]
    findings: list[dict[str, object]]
    stalling: bool
    """`stalls(world)`: a child Kustomization in it is never Ready."""


def prepare(number: int, w: object) -> Scenario:
    """make_base, make_pr and `wave-bot apply` on a real git repository, as tests/flux/test_fluxsim.py does."""
    world, stalling = repr(w), stalls(w)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        SCENARIOS.make_base(w, root)
        base = SCENARIOS.files_of(root)
        kind = SCENARIOS.make_pr(w, root)
        code, report = SCENARIOS.cli(root, "apply", "--base", "main", "--fix-overlays")
        assert code == 0, report
        SCENARIOS.hide_waves(w, root)
        return Scenario(number, world, kind, base, SCENARIOS.files_of(root), report["findings"], stalling)


def play(live: Cluster, scenario: Scenario) -> None:
    """Judge one scenario on `live`: the simulation brackets what real Flux deleted, and wave-bot's
    findings name each deletion at the right severity (an error where data is lost) and claim none
    that no history performs: check_findings over the simulated union, which holds every object
    real Flux deleted (judge asserts it)."""
    outcome, _ = judge(live, scenario.base, scenario.head)
    SCENARIOS.check_findings(outcome, scenario.findings)


def test_real_flux_deletes_what_the_simulation_says(live: Cluster, tmp_path_factory: pytest.TempPathFactory) -> None:
    """CASES random scenarios, CLUSTERS control planes playing them at once while this thread makes
    the next ones (wave-bot's work is CPU; a control plane mostly waits on Flux)."""
    if not CASES:
        pytest.skip("LIVEFLUX_CASES is 0")
    worlds = drawn(CASES)
    todo: queue.Queue[Scenario | None] = queue.Queue(maxsize=2 * CLUSTERS)
    failures: list[str] = []

    def worker(cluster_: Cluster) -> None:
        while (scenario := todo.get()) is not None:
            started = time.monotonic()
            try:
                play(cluster_, scenario)
            except Exception as e:  # noqa: BLE001 - each scenario's failure is reported, the rest go on
                with LOCK:
                    failures.append(f"scenario {scenario.number} ({scenario.kind}): {type(e).__name__}: {e}\n"
                                    f"  world: {scenario.world}")
            with LOCK:
                TIMES.append(time.monotonic() - started)

    with contextlib.ExitStack() as stack:
        more = [stack.enter_context(cluster(tmp_path_factory.mktemp("liveflux"))) for _ in range(CLUSTERS - 1)]
        threads = [threading.Thread(target=worker, args=(c,), daemon=True) for c in [live, *more]]
        for t in threads:
            t.start()
        try:
            for number, w in enumerate(worlds):
                started = time.monotonic()
                scenario = prepare(number, w)
                PREPARED.append(time.monotonic() - started)
                with LOCK:
                    KINDS[scenario.kind] = KINDS.get(scenario.kind, 0) + 1
                    COUNTS["stalling"] += scenario.stalling
                todo.put(scenario)
        finally:
            for _ in threads:
                todo.put(None)
            for t in threads:
                t.join()
    assert len(TIMES) == len(worlds), "a scenario was not played"
    assert not failures, f"{len(failures)} of {len(worlds)} scenarios disagree:\n" + "\n".join(failures)


def cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


@pytest.fixture(scope="module", autouse=True)
def _report_counts(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    capture = request.config.pluginmanager.getplugin("capturemanager")
    if COUNTS["cases"] and capture is not None:
        times = sorted(TIMES) or [0.0]
        with capture.global_and_fixture_disabled():  # in the CI log, not only with -s
                print(f"\nliveflux: {COUNTS['cases']} transitions through real Flux, {COUNTS['deleting']} deleting; "
                  f"{COUNTS['exact']} where real Flux deleted exactly what the simulation's union says, "
                  f"{COUNTS['raced']} where simulated histories differ, {COUNTS['held']} where a wave's health "
                  f"check failed (timeout {HEALTH_TIMEOUT}); random scenarios: "
                  + ", ".join(f"{k}: {n}" for k, n in sorted(KINDS.items()))
                  + f"; {COUNTS['stalling']} of {len(TIMES)} stalling worlds (a child Kustomization never Ready)"
                  + f"; {CLUSTERS} control planes, a scenario {times[len(times) // 2]:.1f} s (median), "
                  f"{times[-1]:.1f} s at most, wave-bot's part {sum(PREPARED) / max(1, len(PREPARED)):.1f} s (mean); "
                  f"CPU: {cpu(resource.RUSAGE_SELF):.0f} s this process, {cpu(resource.RUSAGE_CHILDREN):.0f} s the "
                  "control planes and kubectl")
