#!/usr/bin/env python3
"""Benchmark: `apply`, `plan` and `plan --base` at scale, against a bare parse of the same YAML files.

Generates a git repository of N services in the pre-split layout (each with a ServiceDefinition, an
app manifest, and for a third of them a SOPS-encrypted Secret), then, in one run per size:

- times `apply` of the cutover (every app file moves into its wave) and commits the result;
- times `plan` on the result (the steady state the PR bot meets) and `plan --base HEAD` (what every
  bot run does);
- times a bare parse of the very same YAML files with PyYAML's and ruamel's libyaml loaders;
- measures the peak memory of a `wave-bot plan` process;
- counts the forge API requests of two bot runs on one pull request (the first pushes and
  comments; the second finds nothing to change and must write nothing).

A second repository holds the same services one directory per app (issue 19: `--dirs`, default
4,000), measured the same way.

Targets (issue 12): apply <= 2x plan and linear (largest vs smallest size <= 1.1x the size ratio);
plan --base <= 1.3x plan; plan <= 1.5x the PyYAML parse, memory per added service flat; API requests per
run <= 3 plus comment pages, no write when nothing changed; `wave-bot --help` <= 0.3 s. Issue 29 holds plan
<= 1.5x the PyYAML parse at 4,000 services in both layouts (flat and directory per app) in one run. Each
target says "holds" or "FAILS"; the run ends with the list of the missed ones and exits 1 when any is.

    python bench/plan_bench.py                      # 1,000 / 4,000 / 10,000 services
    python bench/plan_bench.py --quick              # 200 / 800, to iterate
    python bench/plan_bench.py --sizes 2000,4000 --repeat 1
"""
from __future__ import annotations

import argparse
import itertools
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import yaml  # noqa: E402  (PyYAML: the bare libyaml floor)
from ruamel.yaml.cyaml import CSafeLoader  # noqa: E402

from bot.cli import main as cli_main  # noqa: E402

APP = """apiVersion: v1
kind: Namespace
metadata:
  name: {name}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
  namespace: {name}
  labels:
    app.kubernetes.io/name: {name}
spec:
  replicas: 1
  selector:
    matchLabels:
      app.kubernetes.io/name: {name}
  template:
    metadata:
      labels:
        app.kubernetes.io/name: {name}
    spec:
      containers:
        - name: {name}
          image: registry.example/{name}:1.2.3
          ports:
            - name: http
              containerPort: 8080
          env:
            - name: TZ
              value: Etc/UTC
          resources:
            requests:
              cpu: 50m
              memory: 128Mi
---
apiVersion: v1
kind: Service
metadata:
  name: {name}
  namespace: {name}
spec:
  selector:
    app.kubernetes.io/name: {name}
  ports:
    - name: http
      port: 80
      targetPort: http
"""

SECRET = """apiVersion: v1
kind: Secret
metadata:
    name: {name}-bootstrap
    namespace: {name}
type: Opaque
stringData:
    password: ENC[AES256_GCM,data:q83Fh3kV0sZ1Y2xg==,iv:Ukq8X0ZPq0d4sW1k9bB2rXWc8m3t8r=,tag:zV8bq1Xw==,type:str]
sops:
    age:
        - recipient: age1qf4mvx6a7w2u2zyx0m2n9y0v3s7z5nqz8ks9r5l6h0t4xgk3e6dqs8l2hk
          enc: |
            -----BEGIN AGE ENCRYPTED FILE-----
            YWdlLWVuY3J5cHRpb24ub3JnL3YxCi0+IFgyNTUxOSBmYWtlZmFrZWZha2UK
            -----END AGE ENCRYPTED FILE-----
    lastmodified: "2026-08-26T17:19:00Z"
    mac: ENC[AES256_GCM,data:c2lnbmF0dXJl,iv:aXY=,tag:dGFn,type:str]
    version: 3.9.0
"""


def generate(root: Path, count: int, seed: int = 7) -> list[Path]:
    """Write the synthetic repo (flat, pre-split layout); return every YAML file plan will read."""
    rng = random.Random(seed)
    (root / "catalog").mkdir(parents=True)
    (root / "apps").mkdir()
    yaml_files = []
    for i in range(count):
        name = f"svc-{i:05d}"
        # Depend on up to three earlier services: a random DAG whose depth grows slowly with N.
        deps = sorted({f"svc-{rng.randrange(i):05d}" for _ in range(rng.randint(0, 3))}) if i else []
        body = [f"apiVersion: catalog.example.dev/v1alpha1\nkind: ServiceDefinition\nmetadata:\n  name: {name}\n"]
        body.append("spec:\n  dependencies:\n" + "".join(f"    - to: {d}\n" for d in deps) if deps else "spec: {}\n")
        files = {
            root / "catalog" / f"{name}.yaml": "".join(body),
            root / "apps" / f"{name}.yaml": APP.format(name=name),
        }
        if i % 3 == 0:
            files[root / "apps" / f"{name}-bootstrap-secret.sops.yaml"] = SECRET.format(name=name)
        for path, text in files.items():
            path.write_text(text)
            yaml_files.append(path)
    return yaml_files


UNIT_KUSTOMIZATION = """apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: {name}
resources:
{resources}"""


def generate_dirs(root: Path, count: int, seed: int = 7) -> list[Path]:
    """The directory-per-app repository (issue 19): each service a directory `apps/<name>/` (every
    fourth in a grouping folder `apps/team-<k>/<name>/`), with its own kustomization (every fifth
    without one, built as Flux generates it), the same manifests and Secrets, and the same catalog."""
    yaml_files = generate(root, count, seed)
    for path in [p for p in yaml_files if p.parent.name == "apps"]:
        path.unlink()
    yaml_files = [p for p in yaml_files if p.parent.name != "apps"]
    for i in range(count):
        name = f"svc-{i:05d}"
        unit = root / "apps" / (f"team-{i % 7}/{name}" if i % 4 == 0 else name)
        unit.mkdir(parents=True)
        files = {unit / "app.yaml": APP.format(name=name)}
        if i % 3 == 0:
            files[unit / "bootstrap-secret.sops.yaml"] = SECRET.format(name=name)
        if i % 5:
            files[unit / "kustomization.yaml"] = UNIT_KUSTOMIZATION.format(
                name=name, resources="".join(f"  - {p.name}\n" for p in files))
        for path, text in files.items():
            path.write_text(text)
            yaml_files.append(path)
    return yaml_files


def git_env() -> dict[str, str]:
    """A git environment free of the caller's repository, identity, hooks and config."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return env | {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
                  "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid",
                  "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


def run_git(cwd: Path | str, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, env=git_env(), capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"git {' '.join(args)} failed: {done.stderr}")
    return done.stdout


def commit_all(root: Path, message: str) -> None:
    run_git(root, "add", "--all")
    run_git(root, "commit", "--quiet", "--no-verify", "-m", message)


def parse_ruamel(paths: list[Path]) -> None:
    for path in paths:
        loader = CSafeLoader(path.read_bytes())
        try:
            while loader.check_data():
                loader.get_data()
        finally:
            loader.dispose()


def parse_pyyaml(paths: list[Path]) -> None:
    for path in paths:
        for _ in yaml.load_all(path.read_bytes(), Loader=yaml.CSafeLoader):
            pass


def cpu_seconds() -> float:
    """CPU time of this process and of the children it has waited for (git, mostly)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


CLOCK: Callable[[], float] = cpu_seconds


def timed(func: Callable[[], object]) -> float:
    start = CLOCK()
    func()
    return CLOCK() - start


def quiet_cli(*args: str) -> int:
    with open(os.devnull, "w") as sink:
        saved, sys.stdout = sys.stdout, sink
        try:
            return cli_main(list(args))
        finally:
            sys.stdout = saved


def peak_rss_mib(*args: str) -> float:
    """Peak resident memory of `python -m bot ARGS` in its own process (MiB)."""
    proc = subprocess.Popen([sys.executable, "-m", "bot", *args], stdout=subprocess.DEVNULL,
                            cwd=Path(__file__).resolve().parent.parent, env=git_env())
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"wave-bot {' '.join(args)} exited {proc.returncode}")
    return usage.ru_maxrss / 1024  # Linux reports KiB


@dataclass(frozen=True)
class Figures:
    services: int
    files: int
    apply: float
    plan: float
    plan_base: float
    ruamel: float
    pyyaml: float
    peak_mib: float
    renames: int


def layout(root: Path, count: int, generator: Callable[[Path, int], list[Path]] = generate) -> None:
    """The synthetic repository of `count` services, committed in the pre-split layout."""
    generator(root, count)
    run_git(root, "init", "--quiet", "--initial-branch=main")
    commit_all(root, "the pre-split layout")


def idle_plan_mib() -> float:
    """What a `plan` process holds before any service: the interpreter and the imported modules."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "repo"
        layout(root, 1)
        assert quiet_cli("apply", str(root)) == 0
        commit_all(root, "the cutover")
        return peak_rss_mib("plan", "--base", "HEAD", str(root))


def measure(count: int, repeat: int, idle_mib: float,
            generator: Callable[[Path, int], list[Path]] = generate) -> Figures:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "repo"
        layout(root, count, generator)
        pre_split = run_git(root, "rev-parse", "HEAD").strip()

        def apply() -> float:
            codes: list[int] = []
            took = timed(lambda: codes.append(quiet_cli("apply", str(root))))
            assert codes == [0], f"apply exited {codes}"
            return took

        def checkout(rev: str) -> None:  # untimed: apply is destructive, so each run starts over
            run_git(root, "reset", "--quiet", "--hard", rev)
            run_git(root, "clean", "--quiet", "--force", "-d")

        # The cutover: every app file moves. Its result is committed and is what plan then meets.
        first_apply = apply()
        run_git(root, "add", "--all")
        status = run_git(root, "diff", "--cached", "--find-renames", "--name-status", "-z").split("\0")
        renames = sum(1 for field in status if field.startswith("R100"))
        run_git(root, "commit", "--quiet", "--no-verify", "-m", "the cutover")
        cutover = run_git(root, "rev-parse", "HEAD").strip()
        # What plan reads besides what it writes itself (the waves' kustomizations); a unit
        # directory's own kustomization is one of the files parsed.
        yaml_files = [p for p in root.rglob("*.yaml")
                      if not (p.name == "kustomization.yaml" and p.parent.name.startswith("wave-"))
                      and "clusters" not in p.parts and ".git" not in p.parts]

        # Interleaved, one round of each per repeat: a spell of load from elsewhere on a shared machine
        # then slows every figure of that round alike instead of only the one running at the time.
        def again() -> float:
            checkout(pre_split)
            took = apply()
            checkout(cutover)
            return took

        rounds = [(first_apply if i == 0 else again(), timed(lambda: parse_ruamel(yaml_files)),
                   timed(lambda: parse_pyyaml(yaml_files)), timed(lambda: quiet_cli("plan", str(root))),
                   timed(lambda: quiet_cli("plan", "--base", "HEAD", str(root)))) for i in range(repeat)]
        apply_s, ruamel, pyyaml, plan, plan_base = (min(column) for column in zip(*rounds, strict=True))
        peak = peak_rss_mib("plan", "--base", "HEAD", str(root))
        return Figures(count, len(yaml_files), apply_s, plan, plan_base, ruamel, pyyaml, peak - idle_mib, renames)


# ---- the bot's API requests ------------------------------------------------------------------------


def api_requests(platform: str) -> tuple[list[str], list[str]]:
    """The requests of two bot runs on one PR, against the tests' fake of `platform`'s REST API."""
    tests = Path(__file__).resolve().parent.parent / "tests"
    sys.path.insert(0, str(tests))
    import responses

    from support.actionkit import action_env, push_pr_branch, run_action  # type: ignore[import-not-found]
    from support.fakes import SERVERS, TOKEN  # type: ignore[import-not-found]

    def git(cwd: Path | str, *args: str) -> str:
        return run_git(cwd, *args)

    runs = []
    saved_env = dict(os.environ)
    os.environ.clear()
    os.environ.update(git_env())  # the action's git runs in this process
    try:
        with tempfile.TemporaryDirectory() as tmp, responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
            base = Path(tmp)
            work, origin = base / "work", base / "origin.git"
            generate(work, 30)
            git(work, "init", "--quiet", "--initial-branch=main")
            assert quiet_cli("apply", str(work)) == 0
            commit_all(work, "the layout")
            git(base, "clone", "--quiet", "--bare", str(work), str(origin))
            git(work, "remote", "add", "origin", str(origin))
            git(work, "fetch", "--quiet", "origin")
            server = SERVERS[platform](rsps)
            pull = server.pulls[7]
            new = {"catalog/svc-new.yaml": SERVICE_NEW, "apps/svc-new.yaml": APP.format(name="svc-new")}
            _, head = push_pr_branch(work, pull, new, "onboard svc-new", git)
            for name in ("first", "second"):
                workspace = base / name
                git(base, "clone", "--quiet", str(origin), str(workspace))
                git(workspace, "checkout", "--quiet", "--detach", head)
                seen = len(rsps.calls)
                env = action_env(platform, pull, base, workspace, api_url=server.api, token=TOKEN)
                env["INPUT_FAIL-ON"] = "never"  # the synthetic repo has no overlays: requests are counted, not findings
                code, log = run_action(env)
                assert code == 0, log
                runs.append(server.requests()[seen:])
                head = git(origin, "rev-parse", pull["head"]["ref"]).strip()
                pull["head"]["sha"] = head
    finally:
        os.environ.clear()
        os.environ.update(saved_env)
    return runs[0], runs[1]


SERVICE_NEW = ("apiVersion: catalog.example.dev/v1alpha1\nkind: ServiceDefinition\nmetadata:\n  name: svc-new\n"
               "spec:\n  dependencies:\n    - to: svc-00001\n")


# ---- the report ------------------------------------------------------------------------------------


def help_startup(repeat: int) -> float:
    exe = Path(sys.executable).with_name("wave-bot")
    cmd = [str(exe), "--help"] if exe.exists() else [sys.executable, "-m", "bot", "--help"]
    start = time.perf_counter  # a process start is judged by the clock on the wall
    times = []
    for _ in range(repeat):
        begin = start()
        subprocess.run(cmd, check=True, capture_output=True)
        times.append(start() - begin)
    return min(times)


MISSED: list[str] = []
"""The targets this run missed: printed at the end and the exit status (1), so a miss cannot scroll by."""


def verdict(ok: bool, target: str, got: str = "") -> str:
    """"holds", or "FAILS" with the target recorded in MISSED together with what was measured (`got`)."""
    if not ok:
        MISSED.append(f"{target}: {got}" if got else target)
    return "holds" if ok else f"FAILS ({got})" if got else "FAILS"


def worst(rows: list[Figures], ratio: Callable[[Figures], float]) -> str:
    """The worst of a ratio over the sizes, and at which size: what a missed target prints."""
    f = max(rows, key=ratio)
    return f"{ratio(f):.2f}x at {f.services:,} services"


def load() -> str:
    """The load average (1, 5, 15 minutes): the run's ratios are compared within it, and say how busy the
    machine was."""
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,4000,10000", help="services per repository, comma-separated")
    parser.add_argument("--quick", action="store_true", help="small sizes (200,800) and one run each, to iterate")
    parser.add_argument("--repeat", type=int, default=3, help="runs per plan/parse figure (the best is kept)")
    parser.add_argument("--no-api", action="store_true", help="skip counting the bot's API requests")
    parser.add_argument("--dirs", type=int, default=4000,
                        help="services of the directory-per-app repository (0: skip it)")
    parser.add_argument("--wall", action="store_true",
                        help="time by the wall clock (default: CPU seconds of the process and its git children, "
                        "which other load on a shared machine does not inflate)")
    args = parser.parse_args()
    global CLOCK
    if args.wall:
        CLOCK = time.perf_counter
    sizes = [200, 800] if args.quick else [int(s) for s in args.sizes.split(",")]
    repeat = 1 if args.quick else args.repeat
    idle = idle_plan_mib()

    print(f"times: {'wall-clock' if args.wall else 'CPU'} seconds, best of {repeat}; "
          f"load average at the start: {load()} on {os.cpu_count()} CPUs")
    print(f"{'services':>8} {'files':>6} {'apply s':>8} {'plan s':>7} {'base s':>7} {'pyyaml s':>8} "
          f"{'ruamel s':>8} {'apply/plan':>10} {'base/plan':>9} {'plan/pyyaml':>11} {'plan/ruamel':>11} "
          f"{'peak MiB':>8} {'KiB/svc':>7} {'renames':>7}", flush=True)
    rows = []
    for count in sizes:
        f = measure(count, repeat, idle)
        rows.append(f)
        print(f"{f.services:>8} {f.files:>6} {f.apply:>8.2f} {f.plan:>7.2f} {f.plan_base:>7.2f} {f.pyyaml:>8.2f} "
              f"{f.ruamel:>8.2f} {f.apply / f.plan:>10.2f} {f.plan_base / f.plan:>9.2f} {f.plan / f.pyyaml:>11.2f} "
              f"{f.plan / f.ruamel:>11.2f} {f.peak_mib:>8.1f} {1024 * f.peak_mib / f.services:>7.1f} "
              f"{f.renames:>7}", flush=True)
    print(f"(peak MiB: a `wave-bot plan --base HEAD` process less one on a one-service repository, {idle:.1f} MiB)")

    first, last = rows[0], rows[-1]
    size_ratio = last.services / first.services
    growth = last.apply / first.apply
    print("\ntargets (issue 12):")
    said = verdict(all(f.apply <= 2 * f.plan for f in rows), "apply <= 2x plan",
                   worst(rows, lambda f: f.apply / f.plan))
    print(f"  apply <= 2x plan: {max(f.apply / f.plan for f in rows):.2f}x at worst -> {said}")
    if len(rows) > 1:
        print(f"  apply linear: {last.services} vs {first.services} services ({size_ratio:.0f}x) takes {growth:.1f}x "
              f"(target <= {1.1 * size_ratio:.1f}x) -> "
              f"{verdict(growth <= 1.1 * size_ratio, 'apply linear', f'{growth:.1f}x for {size_ratio:.0f}x')}; "
              f"for scale, in the "
              f"same run plan took {last.plan / first.plan:.1f}x and the bare PyYAML parse "
              f"{last.pyyaml / first.pyyaml:.1f}x")
    said = verdict(all(f.plan_base <= 1.3 * f.plan for f in rows), "plan --base <= 1.3x plan",
                   worst(rows, lambda f: f.plan_base / f.plan))
    print(f"  plan --base <= 1.3x plan: {max(f.plan_base / f.plan for f in rows):.2f}x at worst -> {said}")
    said = verdict(all(f.plan <= 1.5 * f.pyyaml for f in rows), "plan <= 1.5x PyYAML (flat)",
                   worst(rows, lambda f: f.plan / f.pyyaml))
    print(f"  plan <= 1.5x a bare PyYAML CSafeLoader parse: {max(f.plan / f.pyyaml for f in rows):.2f}x at worst "
          f"-> {said}")
    # What each added service costs (the slope between sizes): the absolute figure per service also
    # carries what is fixed, and so falls with size.
    slopes = [1024 * (b.peak_mib - a.peak_mib) / (b.services - a.services) for a, b in itertools.pairwise(rows)]
    flat = len(slopes) < 2 or slopes[-1] <= 1.25 * slopes[0]
    got = f"{slopes[-1]:.1f} vs {slopes[0]:.1f} KiB per added service" if slopes else ""
    print(f"  memory per service flat: {', '.join(f'{s:.1f}' for s in slopes) or 'n/a'} KiB per added service "
          f"between sizes (peak {last.peak_mib:.0f} MiB at {last.services}) "
          f"-> {verdict(flat, 'memory per service flat', got)}")
    dirs = 800 if args.quick and args.dirs else args.dirs
    if dirs:
        d = measure(dirs, repeat, idle, generate_dirs)
        print(f"\ndirectory per app (issue 19): {d.services} services, {d.files} files, apply {d.apply:.2f} s, "
              f"plan {d.plan:.2f} s, plan --base {d.plan_base:.2f} s ({d.plan_base / d.plan:.2f}x plan), "
              f"PyYAML {d.pyyaml:.2f} s, {d.renames} renames")
        said = verdict(d.apply <= 2 * d.plan, "apply <= 2x plan (directory per app)", f"{d.apply / d.plan:.2f}x")
        print(f"  apply <= 2x plan: {d.apply / d.plan:.2f}x -> {said}")
        said = verdict(d.plan <= 1.5 * d.pyyaml, "plan <= 1.5x PyYAML (directory per app)", f"{d.plan / d.pyyaml:.2f}x")
        print(f"  plan <= 1.5x a bare PyYAML CSafeLoader parse: {d.plan / d.pyyaml:.2f}x -> {said}")
    if not args.no_api:
        for platform in ("github", "gitea"):
            first_run, second_run = api_requests(platform)
            pages = sum(1 for r in first_run if r.startswith("GET ") and r.endswith("/comments"))
            writes = [r for r in second_run if not r.startswith("GET ")]
            ok = len(first_run) <= 3 + max(pages - 1, 0) and len(second_run) <= 3 + max(pages - 1, 0) and not writes
            methods = ", ".join(r.split()[0] for r in first_run)
            print(f"  {platform} API requests: first run {len(first_run)} ({methods}), "
                  f"unchanged run {len(second_run)} with {len(writes)} writes "
                  f"-> {verdict(ok, f'{platform} API requests', f'{len(first_run)} and {len(second_run)} requests')}")
    startup = help_startup(5)
    print(f"wave-bot --help <= 0.3 s: {startup:.3f} s (best of 5) "
          f"-> {verdict(startup <= 0.3, 'wave-bot --help', f'{startup:.3f} s')}")
    print(f"load average at the end: {load()}")
    if MISSED:
        print(f"\nMISSED {len(MISSED)} target(s): {'; '.join(MISSED)}")
        return 1
    print("\nevery target holds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
