#!/usr/bin/env python3
"""Benchmark: `plan` on a synthetic repository against a bare parse of the same YAML files.

Generates a repository of N services (each with a ServiceDefinition, an app manifest, and for a
third of them a SOPS-encrypted Secret), lays it out with `apply`, then times `plan` (the steady
state the PR bot meets) next to the time ruamel's C loader needs merely to read and parse the very
same YAML files in this process. Also times `wave-bot --help` start-up.

Targets: plan <= 1.5x the parse time at 10,000 services, growing linearly; --help <= 0.3 s.

    python bench/plan_bench.py [--services 10000] [--steps 4] [--repeat 3]
"""
from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

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


def parse_all(paths: list[Path]) -> None:
    for path in paths:
        loader = CSafeLoader(path.read_bytes())
        try:
            while loader.check_data():
                loader.get_data()
        finally:
            loader.dispose()


def best_of(repeat: int, func: Callable[[], object]) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return min(times)


def quiet_cli(*args: str) -> int:
    with open(os.devnull, "w") as sink:
        saved, sys.stdout = sys.stdout, sink
        try:
            return cli_main(list(args))
        finally:
            sys.stdout = saved


def measure(count: int, repeat: int) -> tuple[float, float, int]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        generate(root, count)
        assert quiet_cli("apply", tmp) == 0
        yaml_files = [p for p in root.rglob("*.yaml") if p.name != "kustomization.yaml" and "clusters" not in p.parts]
        parse = best_of(repeat, lambda: parse_all(yaml_files))
        plan = best_of(repeat, lambda: quiet_cli("plan", tmp))
        return plan, parse, len(yaml_files)


def help_startup(repeat: int) -> float:
    exe = Path(sys.executable).with_name("wave-bot")
    cmd = [str(exe), "--help"] if exe.exists() else [sys.executable, "-m", "bot", "--help"]
    return best_of(repeat, lambda: subprocess.run(cmd, check=True, capture_output=True))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--services", type=int, default=10_000)
    parser.add_argument("--steps", type=int, default=4, help="sizes measured: N/steps, 2N/steps, ..., N")
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure (the best is kept)")
    args = parser.parse_args()

    print(f"{'services':>8} {'yaml files':>10} {'plan s':>8} {'parse s':>8} {'plan/parse':>10} {'plan ms/svc':>11}")
    for step in range(1, args.steps + 1):
        count = args.services * step // args.steps
        plan, parse, files = measure(count, args.repeat)
        print(f"{count:>8} {files:>10} {plan:>8.2f} {parse:>8.2f} {plan / parse:>10.2f} {1000 * plan / count:>11.3f}")
    print(f"wave-bot --help: {help_startup(5):.3f} s (best of 5)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
