#!/usr/bin/env python3
"""Benchmark: `wave-bot plan` against hostile YAML, each run in a fresh subprocess.

Every hostile input is placed (a) as a catalog file `catalog/evil.yaml` next to a valid service and
(b) as an app manifest `apps/wave-0/evil.yaml` next to a valid tiny catalog. `wave-bot plan --format
json` then runs in its own child process, so one case cannot poison another and a crash (segfault,
memory error, traceback) shows as an exit code. For each run the table gives the exit code, the
child's CPU seconds (user+sys, from os.wait4) and that minus the control's, its peak RSS (ru_maxrss),
the size of what it printed, and its message: the first line of stderr, or for a run that exits 0
the finding about evil.yaml.

The children are started by a small launcher process (a bare `python -I -S`), not by this script:
Linux counts the RSS a child inherits at fork (and, with vfork, the parent's peak) in the child's
ru_maxrss, so forking from a parent holding a 50 MiB test input would report 50 MiB too many.
The launcher's own RSS (printed) is the floor under every RSS figure.

Expectations: every run exits 2 (a clear input error) or 0 (handled: for a manifest, an
invalid-manifest finding); none costs more than 0.5 s of CPU over the control, or 200 MiB; the tag
cases never run code (checked via a marker file they would create). The `control` row is a valid
tiny repository (best of 3): start-up and the plan pipeline, included in every other row.

    python bench/hostile_bench.py [--only SUBSTRING] [--timeout 60]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.yamlio.documents import MAX_DEPTH, MAX_FILE_BYTES, MAX_NODES  # noqa: E402

CPU_LIMIT_S = 0.5  # over the control's CPU time
RSS_LIMIT_MIB = 200
CHILD_AS_LIMIT = 4 << 30  # address-space cap for each child, so a blow-up cannot take the machine down
CHILD_CPU_LIMIT_S = 60  # RLIMIT_CPU for each child (SIGXCPU, shown as a signal)

# Runs each request (one JSON line on stdin) in a child, answers with its wait status and rusage.
LAUNCHER = r"""
import json, os, resource, signal, subprocess, sys, threading
def limits(address_space, cpu):
    resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
for line in sys.stdin:
    req = json.loads(line)
    with open(req["out"], "wb") as out, open(req["err"], "wb") as err:
        proc = subprocess.Popen(req["argv"], stdout=out, stderr=err, stdin=subprocess.DEVNULL, cwd=req["cwd"],
                                env=req["env"], preexec_fn=lambda: limits(req["as"], req["cpu"]))
        timer = threading.Timer(req["timeout"], os.kill, (proc.pid, signal.SIGKILL))
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
            timer.join()
        proc.returncode = 0  # reaped above; keep Popen from waiting again
    try:  # what a child inherits at fork is the launcher's current RSS, not its (inflated) peak
        with open("/proc/self/statm") as statm:
            own_kib = int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024
    except OSError:
        own_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    sys.stdout.write(json.dumps({"status": status, "cpu": usage.ru_utime + usage.ru_stime,
                                 "maxrss_kib": usage.ru_maxrss, "launcher_kib": own_kib}) + "\n")
    sys.stdout.flush()
"""

PWNED = Path(tempfile.gettempdir()) / f"wave-bot-pwned-{os.getpid()}-{uuid.uuid4().hex}"

SERVICE = "apiVersion: catalog.example.dev/v1alpha1\nkind: ServiceDefinition\nmetadata:\n  name: {name}\n"
APP = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {name}\n"


# ---- the hostile inputs ---------------------------------------------------------------------------


def billion_laughs() -> bytes:
    """9 levels of 9 aliases: 9**9 (387 million) leaves once expanded, 1 KiB on disk."""
    lines = ["l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for i in range(1, 9):
        lines.append(f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]")
    return ("\n".join(lines) + "\n").encode()


def quadratic_blowup() -> bytes:
    """One 100 KiB anchored string referenced ~90,000 times: under MAX_NODES, ~9 GB if expanded."""
    head = SERVICE.format(name="evil") + f"spec:\n  blob: &s \"{'x' * 100 * 1024}\"\n  copies:\n"
    refs = (MAX_FILE_BYTES - len(head) - 64) // len("    - *s\n")
    return (head + "    - *s\n" * refs).encode()


def deep_flow(levels: int = 100_000) -> bytes:
    return b"[" * levels + b"]" * levels + b"\n"


def deep_flow_quoted(levels: int = 100_000) -> bytes:
    """Each level's `[` is followed by two `]` inside a quoted scalar: the byte-level bracket count
    in yamlio._check_bytes clamps at 0 and never sees the nesting; only the event-level check does."""
    return b"[']'," * levels + b"0" + b"]" * levels + b"\n"


def flat_list() -> bytes:
    """As many nodes as 1 MiB holds without any alias or nesting: one flow list of 524,287 zeros."""
    return b"[" + b"0," * ((MAX_FILE_BYTES - 3) // 2) + b"]\n"


def deep_compact_seq(levels: int = 200_000) -> bytes:
    return b"- " * levels + b"x\n"


def deep_block_map(levels: int) -> bytes:
    """`k:` nested by indentation, one more space a level: quadratic in size (5,000 levels: 12 MiB)."""
    return "".join(f"{' ' * i}k:\n" for i in range(levels - 1)).encode() + b" " * (levels - 1) + b"k: v\n"


def one_byte_over() -> bytes:
    head = (SERVICE.format(name="evil") + "# ").encode()
    return head + b"x" * (MAX_FILE_BYTES + 1 - len(head) - 1) + b"\n"


def fifty_mib() -> bytes:
    """50 MiB of valid YAML: the bot must read at most MAX_FILE_BYTES + 1 of it."""
    head = SERVICE.format(name="evil") + "spec:\n  padding:\n"
    line = b"    - padding-padding-padding-padding-padding-padding-padding-pad\n"  # 64 bytes
    return head.encode() + line * ((50 << 20) // len(line))


def garbage() -> bytes:
    return random.Random(1).randbytes(64 * 1024)


def invalid_utf8() -> bytes:
    return SERVICE.format(name="evil").encode() + b"spec:\n  note: caf\xc3\x28 \xff\xfe\x80\n"


def utf16_bom() -> bytes:
    return (SERVICE.format(name="evil") + "spec: {}\n").encode("utf-16")  # BOM + UTF-16-LE


def nul_bytes() -> bytes:
    return SERVICE.format(name="ev\x00il").encode() + b"spec: {}\n\x00\x00\x00\n"


def tag_apply() -> bytes:
    return (SERVICE.format(name="evil") + f"spec:\n  x: !!python/object/apply:os.system [\"touch {PWNED}\"]\n"
            f"--- !!python/object/apply:os.system [\"touch {PWNED}\"]\n").encode()


def tag_root_apply() -> bytes:
    """The whole (single) document is the tagged node, and the name is one too."""
    return (f"!!python/object/apply:subprocess.check_output\nargs: [[touch, \"{PWNED}\"]]\n").encode()


def tag_name() -> bytes:
    return (SERVICE.format(name="evil") + "spec:\n  x: !!python/name:os.system ''\n").encode()


def tag_custom() -> bytes:
    return (SERVICE.format(name="evil") + "spec:\n  dependencies:\n    - to: !Ref svc-a\n").encode()


def multi_doc() -> bytes:
    return (SERVICE.format(name="evil") + "---\n" + SERVICE.format(name="evil-two")).encode()


def many_docs(count: int = 100_000) -> bytes:
    return b"---\na: 1\n" * count


def long_line() -> bytes:
    """A 900 KiB plain scalar, as metadata.name: it ends up in whatever message names the service."""
    return (SERVICE.format(name="n" * (900 * 1024)) + "spec: {}\n").encode()


def long_key(explicit: bool) -> bytes:
    key = "\u00fc\u20ac\U0001f600" * (100_000 // 3 + 1)  # 100,002 characters, 300 KiB of UTF-8
    key = key[:100_000]
    entry = f"? {key}\n: 1\n" if explicit else f"{key}: 1\n"
    return (SERVICE.format(name="evil") + "spec:\n  labels:\n" + "".join(
        "    " + line + "\n" for line in entry.splitlines())).encode()


def merge_keys(copies: int) -> bytes:
    """A 1,000-key anchored mapping merged (`<<: *a`) into `copies` dependency entries."""
    keys = "".join(f"    k{i}: v{i}\n" for i in range(999))
    head = SERVICE.format(name="evil") + f"base: &a\n    to: svc-a\n{keys}spec:\n  dependencies:\n"
    return (head + "    - <<: *a\n" * copies).encode()


@dataclass(frozen=True)
class Case:
    name: str
    make: Callable[[], bytes]


CASES = [
    Case("billion laughs (9x9 aliases)", billion_laughs),
    Case("quadratic blowup (100 KiB string x 105k aliases)", quadratic_blowup),
    Case("deep flow [[[ 100,000 levels", deep_flow),
    Case("deep compact seq '- - -' 200,000 levels", deep_compact_seq),
    Case("deep block map 5,000 levels (12 MiB)", lambda: deep_block_map(5000)),
    Case("deep block map 1,400 levels (<1 MiB)", lambda: deep_block_map(1400)),
    Case("deep flow just over limit (101 levels)", lambda: deep_flow(MAX_DEPTH + 1)),
    Case("deep flow 100,000 levels as [']', (hides from byte pre-check)", deep_flow_quoted),
    Case("1 MiB flat flow list [0,0,...] (524k nodes)", flat_list),
    Case("file of 1 MiB + 1 byte", one_byte_over),
    Case("file of 50 MiB", fifty_mib),
    Case("binary garbage (64 KiB random)", garbage),
    Case("invalid UTF-8", invalid_utf8),
    Case("UTF-16 with BOM", utf16_bom),
    Case("NUL bytes", nul_bytes),
    Case("!!python/object/apply:os.system", tag_apply),
    Case("!!python/object/apply as document root", tag_root_apply),
    Case("!!python/name:os.system", tag_name),
    Case("custom tag !Ref", tag_custom),
    Case("multi-document catalog file", multi_doc),
    Case("100,000 tiny documents", many_docs),
    Case("900 KiB single line (as metadata.name)", long_line),
    Case("key of 100,000 chars (implicit key)", lambda: long_key(False)),
    Case("key of 100,000 chars (explicit '? ' key)", lambda: long_key(True)),
    Case("merge keys <<: *a (1,000 keys) x 450", lambda: merge_keys(450)),
    Case("merge keys <<: *a (1,000 keys) x 60,000", lambda: merge_keys(60_000)),
]

WHERES = {"catalog": "catalog/evil.yaml", "manifest": "apps/wave-0/evil.yaml"}


# ---- running ---------------------------------------------------------------------------------------


@dataclass
class Result:
    case: str
    where: str
    size: int
    code: int | None
    signal: int | None
    cpu: float
    rss_mib: float
    out_bytes: int
    message: str
    extra_cpu: float = 0.0

    @property
    def status(self) -> str:
        if self.signal is None:
            return str(self.code)
        try:
            return signal.Signals(self.signal).name
        except ValueError:
            return f"sig{self.signal}"

    @property
    def clean(self) -> bool:
        return self.signal is None and self.code in (0, 2)

    @property
    def flags(self) -> list[str]:
        flags = [] if self.clean else ["EXIT"]
        if self.extra_cpu > CPU_LIMIT_S:
            flags.append("CPU")
        if self.rss_mib > RSS_LIMIT_MIB:
            flags.append("RSS")
        return flags


class Launcher:
    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-I", "-S", "-c", LAUNCHER], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        self.rss_kib = 0

    def run(self, argv: list[str], cwd: Path, out: Path, err: Path, timeout: float) -> tuple[int, float, float]:
        """(wait status, CPU seconds, peak RSS in MiB) of `argv` run to completion in a fresh process."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        env = {k: v for k, v in os.environ.items() if k not in ("GITHUB_ACTIONS", "GITEA_ACTIONS")}
        request = {"argv": argv, "cwd": str(cwd), "out": str(out), "err": str(err), "env": env,
                   "timeout": timeout, "as": CHILD_AS_LIMIT, "cpu": CHILD_CPU_LIMIT_S}
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        reply = json.loads(self.proc.stdout.readline())
        self.rss_kib = reply["launcher_kib"]
        return reply["status"], reply["cpu"], reply["maxrss_kib"] / 1024

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait()


def write_repo(root: Path, where: str | None, data: bytes | None) -> None:
    """A tiny valid repository (service svc-a, already placed in wave 0), plus the hostile file."""
    (root / "catalog").mkdir(parents=True)
    (root / "apps" / "wave-0").mkdir(parents=True)
    (root / "catalog" / "svc-a.yaml").write_text(SERVICE.format(name="svc-a") + "spec: {}\n")
    (root / "apps" / "wave-0" / "svc-a.yaml").write_text(APP.format(name="svc-a"))
    if where is not None and data is not None:
        (root / WHERES[where]).write_bytes(data)


def command(repo: Path) -> list[str]:
    exe = Path(sys.executable).with_name("wave-bot")
    base = [str(exe)] if exe.exists() else [sys.executable, "-m", "bot"]
    return [*base, "plan", "--format", "json", str(repo)]


def trim(text: str, width: int = 96) -> str:
    text = text.replace("\t", " ").strip()
    return text if len(text) <= width else text[: width - 3] + "..."


def describe(where: str, code: int | None, stdout: bytes, stderr: bytes) -> str:
    """The error the user sees: stderr's first line, or for exit 0 the finding about evil.yaml."""
    if code != 0:
        lines = stderr.decode("utf-8", "replace").splitlines()
        if code == 3:  # a traceback: its last line says what went wrong
            tail = [ln for ln in lines if ln.strip() and not ln.startswith("wave-bot: internal error")]
            return "TRACEBACK: " + (tail[-1] if tail else "")
        return lines[0] if lines else "(no stderr)"
    try:
        findings = json.loads(stdout).get("findings", [])
    except ValueError:
        return "(stdout is not JSON)"
    evil = [f for f in findings if f.get("path") == WHERES.get(where) and f.get("code") != "unplaced-file"]
    if evil:
        more = f" (+{len(evil) - 1} more)" if len(evil) > 1 else ""
        return f"finding {evil[0]['code']}{more}: {evil[0]['message']}"
    if where == "catalog":
        return "accepted as a service: no finding about evil.yaml"
    return "read as valid: no finding" if where else "ok"


def measure(launcher: Launcher, case: str, where: str | None, data: bytes | None, timeout: float) -> Result:
    with tempfile.TemporaryDirectory(prefix="hostile-bench-") as tmp:
        repo, out, err = Path(tmp) / "repo", Path(tmp) / "stdout", Path(tmp) / "stderr"
        write_repo(repo, where, data)
        status, cpu, rss = launcher.run(command(repo), repo, out, err, timeout)
        stdout, stderr = out.read_bytes(), err.read_bytes()
    sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
    message = describe(where or "", code, stdout, stderr) if sig is None else f"killed by signal {sig}"
    return Result(case, where or "-", len(data or b""), code, sig, cpu, rss, len(stdout) + len(stderr), message)


def fmt_size(n: int) -> str:
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):.1f}{unit}"
    return f"{n}B"


def show(r: Result) -> None:
    mark = f"  <-- !!! {'/'.join(r.flags)}" if r.flags else ""
    print(f"{r.case[:58]:<58} {r.where:<8} {fmt_size(r.size):>8} {r.status:>7} {r.cpu:>6.2f} {r.extra_cpu:>+6.2f} "
          f"{r.rss_mib:>7.1f} {fmt_size(r.out_bytes):>8}  {trim(r.message)}{mark}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="run the cases whose name contains this substring")
    parser.add_argument("--timeout", type=float, default=60.0, help="wall-clock seconds before a child is killed")
    args = parser.parse_args()

    started = time.perf_counter()
    print(f"limits: MAX_FILE_BYTES={MAX_FILE_BYTES:,} MAX_DEPTH={MAX_DEPTH} MAX_NODES={MAX_NODES:,}; flagged: "
          f"CPU over the control > {CPU_LIMIT_S} s, peak RSS > {RSS_LIMIT_MIB} MiB, exit not 0/2")
    header = (f"{'case':<58} {'where':<8} {'size':>8} {'exit':>7} {'cpu s':>6} {'+ctl':>6} {'rss MiB':>7} "
              f"{'out':>8}  message (stderr line 1; for exit 0, the finding)")
    print(header)
    print("-" * len(header))
    launcher = Launcher()
    results: list[Result] = []
    try:
        control = min((measure(launcher, "control (valid tiny repo, best of 3)", None, None, args.timeout)
                       for _ in range(3)), key=lambda r: r.cpu)
        show(control)
        for case in CASES:
            if args.only and args.only.lower() not in case.name.lower():
                continue
            data = case.make()
            for where in WHERES:
                result = measure(launcher, case.name, where, data, args.timeout)
                result.extra_cpu = result.cpu - control.cpu
                results.append(result)
                show(result)
            del data
    finally:
        launcher.close()

    print()
    pwned = PWNED.exists()
    print(f"tag check: {PWNED} {'EXISTS -- !!! A TAG RAN CODE !!!' if pwned else 'does not exist (no tag ran code)'}")
    if pwned:
        PWNED.unlink()
    print(f"control: {control.cpu:.2f} s CPU, {control.rss_mib:.1f} MiB peak RSS (start-up + plan of one service)"
          f"{f' -- alone over the {CPU_LIMIT_S} s budget' if control.cpu > CPU_LIMIT_S else ''}; "
          f"launcher RSS (floor of every RSS figure): {launcher.rss_kib / 1024:.1f} MiB")
    if not results:
        return 0
    worst_cpu = max(results, key=lambda r: r.cpu)
    worst_rss = max(results, key=lambda r: r.rss_mib)
    unclean = [r for r in results if not r.clean]
    over = [r for r in results if "CPU" in r.flags or "RSS" in r.flags]
    raw_over = [r for r in results if r.cpu > CPU_LIMIT_S and r not in over]
    for r in over:
        print(f"!!! OVER BUDGET: {r.case} / {r.where}: {r.cpu:.2f} s CPU ({r.extra_cpu:+.2f} s over the control), "
              f"{r.rss_mib:.1f} MiB peak RSS, {fmt_size(r.out_bytes)} of output")
    if raw_over:
        print(f"(another {len(raw_over)} runs exceed {CPU_LIMIT_S} s of raw CPU, but by no more than the "
              f"control does: start-up cost, not the hostile input)")
    for r in unclean:
        print(f"!!! NOT A CLEAN EXIT: {r.case} / {r.where}: exit {r.status}: {trim(r.message, 200)}")
    print(f"worst CPU: {worst_cpu.cpu:.2f} s ({worst_cpu.case} / {worst_cpu.where}); "
          f"worst peak RSS: {worst_rss.rss_mib:.1f} MiB ({worst_rss.case} / {worst_rss.where}); "
          f"wall time {time.perf_counter() - started:.1f} s")
    exits = sorted({r.status for r in results})
    if unclean or pwned:
        print(f"RESULT: FAIL -- {len(unclean)} of {len(results)} runs did not exit 0 or 2"
              f"{'; a tag executed code' if pwned else ''}")
        return 1
    print(f"RESULT: all {len(results)} runs exited 0 (handled) or 2 (clear input error) (exit codes seen: "
          f"{', '.join(exits)}); {len(over)} over the CPU/RSS budget")
    return 0


if __name__ == "__main__":
    sys.exit(main())
