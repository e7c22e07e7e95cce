"""The README's cutover and the held moves, merge by merge, judged by real Flux (kustomize-controller on
a real API server, tests/support/liveflux.py): after each merge, real Flux deletes nothing the findings
did not accept (`.wave-bot-accept.yaml`) but the retired legacy Kustomization object itself (step 1
left it `prune: false` or `deletionPolicy: Orphan`, so its finalizer deletes nothing).

- The bundled dir-per-app example flattened back to its pre-wave shape (one `apps` Kustomization),
  and every archive of ../shared/realrepos with a monolithic pruning app tier (the shape found as
  tests/e2e/test_cutover_realrepos.py finds it, never by name; its config written the same way):
  the deployed tree, then step 1, then step 2 (`apply --base main --fix-overlays`, as the README
  says). Where wave-bot refuses a step (exit 2, the tree unchanged), the cutover is played as far
  as it goes and the output says which step was refused and why; once a step succeeds, it is played.
- The held move on examples/homelab: plex gains `- to: sonarr`, so its file would move from wave 0
  to wave 2 and wave 0 would prune its claim. `apply` holds the move (it annotates what would be
  lost); real Flux deletes nothing. Once that is deployed, `apply` moves it; real Flux deletes
  nothing again. The example's Secrets are encrypted to its published DEMO key: the cluster is
  bootstrapped on the overlay that gives the waves decryption, with that key
  (tests/support/liveplay.py).

A repository with more child Kustomizations (`ks.yaml`) than liveplay.HEAVY is played with one group
folder's children and what they depend on (liveplay.sample), and the output says which.

Skipped with the reason without the binaries (oracle/build); required under WAVE_BOT_REQUIRE_LIVEFLUX=1.
"""
from __future__ import annotations

import posixpath
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e.test_cutover_realrepos import (
    apply,
    flattened_example,
    flux_kustomizations,
    merge,
    monolith,
    refused,
    write_config,
)
from ruamel.yaml import YAML

from conftest import EXAMPLE, git, snapshot, write_files
from support import liveplay, realrepos
from support.liveflux import FLUX_GROUP, Cluster, Ref, cluster, require_binaries

TIMES: dict[str, float] = {}


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    require_binaries()
    with cluster(tmp_path_factory.mktemp("liveflux")) as c:
        yield c


def accepted(repo: Path) -> set[str]:
    """The resources `.wave-bot-accept.yaml` accepts (`Kind namespace/name`)."""
    path = repo / ".wave-bot-accept.yaml"
    if not path.is_file():
        return set()
    doc = YAML(typ="safe").load(path.read_text()) or {}
    return {str(entry.get("resource")) for entry in doc.get("accept") or [] if isinstance(entry, dict)}


def play_merge(live: Cluster, repo: Path, label: str, legacy: set[str], root: str | None = None,
               keep: set[str] | None = None) -> set[Ref]:
    """Play HEAD through real Flux; assert it deleted nothing but what the findings accepted and the
    legacy Kustomization objects named in `legacy`; return what it deleted."""
    started = time.monotonic()
    since = live.audit_offset()
    liveplay.play(live, repo, label, root=root, keep=keep)
    deleted = live.deletions(since)
    assert not liveplay.stalled(live), f"{label}: not applied, so its verdict would prove nothing: " \
                                       f"{liveplay.stalled(live)}"
    TIMES[f"{repo.parent.name}/{repo.name}: {label}"] = time.monotonic() - started
    allowed = accepted(repo)
    unaccepted = {r for r in deleted if liveplay.named(r) not in allowed and not (
        (r.group, r.kind) == (FLUX_GROUP, "Kustomization") and r.name in legacy)}
    assert not unaccepted, f"{label}: real Flux deleted {sorted(map(liveplay.named, unaccepted))}, " \
                           f"which no finding accepted"
    return deleted


def cutover(live: Cluster, repo: Path, legacy: str, capsys: pytest.CaptureFixture[str]) -> str:
    """Deployed, step 1, step 2, each merged and played; returns how far it went."""
    live.reset()
    keep = liveplay.sample(liveplay.tree(repo))
    note = "" if keep is None else (f" (too heavy to play whole: played {', '.join(sorted(keep))} and the "
                                    f"Kustomizations outside ks.yaml files)")
    play_merge(live, repo, "deployed", set(), keep=keep)
    for step in (1, 2):
        before = snapshot(repo)
        code, err = apply(repo, capsys)
        if refused(repo, before, code, err):
            return f"step {step} refused{note}: {err.splitlines()[0][:300]}"
        assert code == 0, err
        merge(repo, f"wave-bot step {step}")
        deleted = play_merge(live, repo, f"step {step}", {legacy}, keep=keep)
        if step == 2:
            assert legacy not in flux_kustomizations(repo)
            print(f"{repo.name}: step 2 deleted {sorted(map(liveplay.named, deleted))}")
    return "split" + note


def test_the_cutover_through_real_flux_on_the_flattened_dir_per_app_example(
    live: Cluster, make_repo: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    repo, legacy = flattened_example(make_repo)
    assert cutover(live, repo, legacy, capsys) == "split"


@pytest.mark.parametrize("archive", realrepos.params(), ids=realrepos.archive_ids())
def test_the_cutover_through_real_flux_on_a_real_monolith(
    archive: Path | None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = realrepos.unpack(realrepos.require(archive), tmp_path / "repo")
    require_binaries()
    shape = monolith(repo)
    if shape is None:
        pytest.skip("no monolithic pruning app tier: not this shape")
    legacy, apps, units = shape
    file, _ = flux_kustomizations(repo)[legacy]
    assert write_config(repo, apps, posixpath.dirname(file), units)
    merge(repo, "adopt wave-bot")
    (tmp_path / "liveflux").mkdir()
    with cluster(tmp_path / "liveflux") as own:  # its own: a custom kind's scope, once served, is fixed
        outcome = cutover(own, repo, legacy, capsys)
    print(f"{archive.name if archive else ''}: the cutover through real Flux: {outcome}")


def _moved(report: dict[str, Any], path: str) -> bool:
    return any(c.get("from") == path for c in report["changes"])


def test_the_held_move_deletes_nothing_through_real_flux_and_its_follow_up_neither(
    live: Cluster, make_repo: Callable[..., Path]
) -> None:
    repo = make_repo({str(p.relative_to(EXAMPLE)): p.read_bytes() for p in EXAMPLE.rglob("*") if p.is_file()},
                     name="homelab")
    live.reset()
    root = liveplay.play(live, repo, "deployed")
    assert not liveplay.stalled(live), liveplay.stalled(live)
    assert root != "./clusters/base", "the waves decrypt only through a cluster overlay"
    deployed = git(repo, "rev-parse", "HEAD").strip()
    plex = (repo / "catalog/plex.yaml").read_text()
    write_files(repo, {"catalog/plex.yaml": plex + "  dependencies:\n    - to: sonarr\n"})
    merges = []
    for step in range(1, 4):
        code, report = liveplay.cli("apply", str(repo), "--base", deployed, "--fix-overlays")
        assert code == 0, [f["message"] for f in report["findings"] if f["severity"] == "error"]
        held = [f for f in report["findings"] if f["code"] == "move-held"]
        merges.append((bool(held), _moved(report, "apps/wave-0/plex.yaml")))
        git(repo, "add", "-A")
        if not git(repo, "status", "--porcelain"):
            break
        git(repo, "commit", "-qm", f"plex after sonarr, merge {step}")
        play_merge(live, repo, f"merge {step}", set(), root=root)
        deployed = git(repo, "rev-parse", "HEAD").strip()
    # The first merge held the move (the claim would be lost), a later one made it.
    assert merges[0] == (True, False), merges
    assert (False, True) in merges[1:], merges
    assert (repo / "apps/wave-2/plex.yaml").is_file() and not (repo / "apps/wave-0/plex.yaml").exists()


def test_the_same_move_made_unheld_deletes_the_claim_through_real_flux_as_wave_bot_says(
    live: Cluster, make_repo: Callable[..., Path]
) -> None:
    """The control: plex's file moved to wave 2 by hand, nothing annotated first. Real Flux deletes its
    claim (wave 0 prunes it before wave 2 applies it again, empty), and wave-bot's errors name it."""
    repo = make_repo({str(p.relative_to(EXAMPLE)): p.read_bytes() for p in EXAMPLE.rglob("*") if p.is_file()},
                     name="homelab-unheld")
    live.reset()
    root = liveplay.play(live, repo, "deployed")
    assert not liveplay.stalled(live), liveplay.stalled(live)
    deployed = git(repo, "rev-parse", "HEAD").strip()
    plex = (repo / "catalog/plex.yaml").read_text()
    write_files(repo, {"catalog/plex.yaml": plex + "  dependencies:\n    - to: sonarr\n"})
    git(repo, "mv", "apps/wave-0/plex.yaml", "apps/wave-2/plex.yaml")
    for wave, edit in (("wave-0", lambda t: t.replace("  - plex.yaml\n", "")),
                       ("wave-2", lambda t: t + "  - plex.yaml\n")):
        path = repo / "apps" / wave / "kustomization.yaml"
        path.write_text(edit(path.read_text()))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "plex after sonarr, moved by hand")
    code, report = liveplay.cli("check", str(repo), "--base", deployed)
    errors = {str(f.get("resource")) for f in report["findings"] if f["severity"] == "error"}
    since = live.audit_offset()
    liveplay.play(live, repo, "moved by hand", root=root)
    real = {liveplay.named(r) for r in live.deletions(since)}
    assert "PersistentVolumeClaim plex/plex-data" in real
    assert code == 1 and "PersistentVolumeClaim plex/plex-data" in errors and errors <= real, (errors, real)


@pytest.fixture(scope="module", autouse=True)
def _report_times() -> Iterator[None]:
    yield
    if TIMES:
        print("\nthe cutover and held moves through real Flux:")
        for what, seconds in TIMES.items():
            print(f"  {what}: {seconds:.0f} s")
