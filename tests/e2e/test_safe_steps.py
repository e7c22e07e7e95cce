"""Property: on random catalog changes to examples/homelab, what `apply --base` leaves deletes no
stateful object that was not accepted, judged by tests/support/fluxsim.py against the revision deployed
before it, and repeated apply + merge reaches the catalog's layout within 3 merges. Every other
object Flux deletes is named by a finding of that step's `check`, and one that moves is recreated
(a SOPS Secret, which cannot carry the annotation, comes back from git: a gap, not data loss).

The changes: units with volumes gaining a dependency on a later unit (a later-wave move of a
Namespace and PVC; gitea and semaphore with a SOPS companion, gitea with gitea-actions moving after
it), services decommissioned with or without `.wave-bot-accept.yaml` (seerr's removal empties wave
2), and a new service above everything (a new deepest wave). A change whose `check` fails (an
unaccepted deletion) is not merged: the user accepts the deletion first. The explicit examples pin
one of each, whatever the random draw.
"""
from __future__ import annotations

import io
import json
import shutil
import subprocess
import tempfile
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from bot.cli import main

from conftest import EXAMPLE, git, write_files
from support.fluxsim import build, kustomizations, simulate

MOVERS = ("pihole", "plex", "gitea", "semaphore")
LATER = ("sonarr", "radarr", "seerr", "nextcloud")
RETIRABLE = ("pihole", "plex", "seerr")
STATEFUL_KINDS = {"Namespace", "PersistentVolumeClaim", "Cluster"}
EXTRA = ("apiVersion: catalog.homelab.dev/v1alpha1\nkind: ServiceDefinition\nmetadata:\n  name: extra\n"
         "spec:\n  dependencies:\n    - to: {to}\n")
CONFIGMAP = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n  namespace: default\n"


def files_at(repo: Path, rev: str) -> dict[str, bytes]:
    names = git(repo, "ls-tree", "-r", "--name-only", "-z", rev).split("\0")
    return {n: subprocess.run(["git", "show", f"{rev}:{n}"], cwd=repo, capture_output=True, check=True).stdout
            for n in names if n}


def cli(*argv: str) -> tuple[int, dict[str, Any]]:
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        code = main([*argv, "--format", "json"])
    return code, json.loads(out.getvalue())


def stateful(data: bytes) -> list[str]:
    """The findings' names of the stateful objects a manifest defines."""
    out = []
    for doc in YAML(typ="safe").load_all(data):
        if isinstance(doc, dict) and doc.get("kind") in STATEFUL_KINDS:
            group = doc["apiVersion"].rpartition("/")[0]
            kind = f"{group}/{doc['kind']}" if group else doc["kind"]
            ns = doc["metadata"].get("namespace")
            out.append(f"{kind} {ns + '/' if ns else ''}{doc['metadata']['name']}")
    return out


def accept(repo: Path, resources: list[str]) -> None:
    lines = ["accept:"] + [f"  - resource: {r}\n    by: tester" for r in resources]
    (repo / ".wave-bot-accept.yaml").write_text("\n".join(lines) + "\n" if resources else "accept: []\n")


def advice(findings: list[dict[str, Any]]) -> None:
    """What the user is told: an acceptance is asked for state only (a Secret whose content is in
    git comes back), and a SOPS file is never to be edited (its MAC): its fix is a kubectl command."""
    for f in findings:
        if f["severity"] != "info" and ".wave-bot-accept.yaml" in f["message"]:
            assert (f.get("resource") or "").split(" ")[0].rpartition("/")[2] in STATEFUL_KINDS, f["message"]
        if ".sops." in (f.get("path") or "") and f.get("fix"):
            assert f["fix"].startswith("kubectl "), f
    held = [f["path"] for f in findings if f["code"] == "move-held"]
    assert not [p for p in held if ".sops." in p], held  # no SOPS file of this example holds state


@st.composite
def changes(draw: st.DrawFn) -> tuple[dict[str, list[str]], dict[str, bool], bool]:
    retired = draw(st.dictionaries(st.sampled_from(RETIRABLE), st.booleans(), max_size=2))
    later = [t for t in LATER if t not in retired]
    moves = {m: sorted(set(draw(st.lists(st.sampled_from(later), min_size=1, max_size=2))))
             for m in draw(st.lists(st.sampled_from(MOVERS), unique=True, max_size=2)) if m not in retired and later}
    return moves, retired, draw(st.booleans())


def setup(root: Path) -> Path:
    repo = root / "repo"
    shutil.copytree(EXAMPLE, repo)
    git(root, "init", "-q", "-b", "main", str(repo))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "deployed")
    return repo


Change = tuple[dict[str, list[str]], dict[str, bool], bool]


@settings(max_examples=16, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(changes())
@example(({"gitea": ["sonarr"]}, {}, False))  # SOPS companion; gitea-actions knocked on to a new wave 3
@example(({"semaphore": ["seerr"], "plex": ["radarr"]}, {"pihole": True}, False))  # new wave 3, accepted loss
@example(({}, {"seerr": False}, True))  # wave 2 emptied after an unaccepted deletion; a new wave above
@example(({"plex": ["nextcloud"]}, {"seerr": True}, False))  # wave 2 emptied, then refilled by plex
def test_apply_never_deletes_unaccepted_state_and_converges(change: Change) -> None:
    moves, retired, new_wave = change
    with tempfile.TemporaryDirectory() as tmp:
        repo = setup(Path(tmp))
        git(repo, "checkout", "-qb", "pr")
        for unit, targets in moves.items():
            catalog = repo / f"catalog/{unit}.yaml"
            # semaphore's list of dependencies (its database) ends its file: the new ones join it
            key = "" if "dependencies:" in catalog.read_text() else "  dependencies:\n"
            with catalog.open("a") as handle:
                handle.write(key + "".join(f"    - to: {t}\n" for t in targets))
        accepted: list[str] = []
        waiting: list[str] = []
        for unit, acknowledged in retired.items():
            manifest = next(repo.glob(f"apps/wave-*/{unit}.yaml"))
            (accepted if acknowledged else waiting).extend(stateful(manifest.read_bytes()))
            git(repo, "rm", "-q", f"catalog/{unit}.yaml", str(manifest.relative_to(repo)))
        if new_wave:
            top = "seerr" if "seerr" not in retired else "sonarr"
            write_files(repo, {"catalog/extra.yaml": EXTRA.format(to=top), "apps/extra.yaml": CONFIGMAP})
        if accepted:
            accept(repo, accepted)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "--allow-empty", "-m", "the pull request")

        for merge in range(1, 4):
            code, plan = cli("apply", str(repo), "--base", "main", "--fix-overlays")
            assert code == 0
            git(repo, "add", "-A")
            if git(repo, "status", "--porcelain"):
                git(repo, "commit", "-qm", f"wave-bot, step {merge}")
            code, report = cli("check", str(repo), "--base", "main", "--fix-overlays")
            if waiting:
                # An unaccepted deletion of state is an error naming each object; it is not merged.
                errors = {f.get("resource") for f in report["findings"] if f["severity"] == "error"}
                assert code == 1 and set(waiting) <= errors
                accepted += waiting
                waiting = []
                accept(repo, accepted)
                git(repo, "add", "-A")
                git(repo, "commit", "-qm", "accept the deletions")
                code, report = cli("check", str(repo), "--base", "main", "--fix-overlays")
            assert code == 0, [f["message"] for f in report["findings"] if f["severity"] == "error"]
            head = files_at(repo, "HEAD")
            deletions = simulate(files_at(repo, "main"), head).deletions
            lost = {str(r) for r in deletions if r.kind in STATEFUL_KINDS}
            assert lost <= set(accepted), f"merge {merge} deletes {sorted(lost - set(accepted))}"
            named = {f.get("resource") for f in report["findings"]}
            unsaid = sorted(str(r) for r in deletions if str(r) not in named)
            assert not unsaid, f"merge {merge} deletes {unsaid}, which its check does not name"
            defined = {m.rid for spec in kustomizations(head).values() for m in build(head, spec.path) or []}
            assert all(d.recreated for r, ds in deletions.items() if r in defined for d in ds), merge
            advice(plan["findings"] + report["findings"])
            git(repo, "checkout", "-q", "main")
            git(repo, "merge", "-q", "--ff-only", "pr")
            git(repo, "checkout", "-q", "pr")
            if not any(f["code"] == "move-held" for f in plan["findings"]) and not report["changes"]:
                break
        else:
            raise AssertionError("apply + merge did not converge within 3 merges")
        code, final = cli("plan", str(repo), "--base", "main")
        assert final["changes"] == [] and not any(f["code"] == "move-held" for f in final["findings"])
        assert all(f"wave-{wave}/" in path for wave, paths in final["placement"].items() for path in paths)

