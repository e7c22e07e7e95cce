"""The next safe step of a move that would lose data: apply protects first, moves once that is deployed."""
from __future__ import annotations

import dataclasses
import io
import json
import subprocess
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from bot.cli import main
from bot.config import load_config
from bot.fixes.stepping import unsafe_moves
from bot.layout.placement import AppFile
from bot.model import Finding
from bot.plan import make_plan
from bot.repo.worktree import FsTree

from conftest import PROJECT, Kubectl, git
from support.fluxsim import PRUNE, simulate

PLEX = "apps/wave-0/plex.yaml"
PLEX_OBJECTS = {("Namespace", "plex"), ("PersistentVolumeClaim", "plex-data"), ("Deployment", "plex"),
                ("Service", "plex")}


def files_at(repo: Path, rev: str) -> dict[str, bytes]:
    """Every file of `rev`, as Flux would fetch it."""
    names = git(repo, "ls-tree", "-r", "--name-only", "-z", rev).split("\0")
    return {n: subprocess.run(["git", "show", f"{rev}:{n}"], cwd=repo, capture_output=True, check=True).stdout
            for n in names if n}


def apply(repo: Path, *extra: str) -> tuple[int, str]:
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(["apply", str(repo), "--base", "HEAD", *extra])
    return code, out.getvalue()


def plex_depends_on_sonarr(repo: Path) -> None:
    with (repo / "catalog/plex.yaml").open("a") as handle:
        handle.write("  dependencies:\n    - to: sonarr\n")
    git(repo, "commit", "-qam", "plex needs sonarr")


def annotated(build: str) -> set[tuple[str, str]]:
    return {(d["kind"], d["metadata"]["name"]) for d in YAML(typ="safe").load_all(build)
            if d and PRUNE in ((d.get("metadata") or {}).get("annotations") or {})}


def test_a_data_loss_move_is_protected_first_then_made_once_deployed(example_repo: Path, kubectl: Kubectl) -> None:
    repo = example_repo
    plex_depends_on_sonarr(repo)
    before = (repo / PLEX).read_bytes()
    deployed = files_at(repo, "HEAD")

    code, out = apply(repo)

    assert code == 0
    assert "move-held" in out and not (repo / "apps/wave-2/plex.yaml").exists()
    after = (repo / PLEX).read_bytes()
    # Only whole lines were inserted: dropping them gives back every byte of the manifest.
    added = [line for line in after.splitlines(keepends=True) if line not in before.splitlines(keepends=True)]
    assert set(added) == {b"  annotations:\n", f"    {PRUNE}: disabled  # wave-bot: move-held\n".encode()}
    assert b"".join(line for line in after.splitlines(keepends=True)
                    if line not in added) == before
    built = kubectl(repo / "apps/wave-0")
    assert built.returncode == 0, built.stderr
    assert annotated(built.stdout) == PLEX_OBJECTS  # exactly the objects the move deletes, nothing else
    assert git(repo, "diff", "--name-only") == ""  # staged
    git(repo, "commit", "-qm", "wave-bot: step 1")
    assert simulate(deployed, files_at(repo, "HEAD")).deleted == set()

    # Step 2: the annotation is deployed (at --base), so the move is safe and apply makes it.
    deployed = files_at(repo, "HEAD")
    code, out = apply(repo)
    assert code == 0 and "move-held" not in out
    assert not (repo / PLEX).exists() and (repo / "apps/wave-2/plex.yaml").read_bytes() == after
    git(repo, "commit", "-qm", "wave-bot: step 2")
    assert simulate(deployed, files_at(repo, "HEAD")).deleted == set()
    code, _ = apply(repo)
    assert git(repo, "status", "--porcelain") == ""  # converged: nothing more to do


def test_apply_without_a_base_holds_exactly_what_apply_with_base_head_holds(
    example_repo: Path, tmp_path: Path
) -> None:
    """Without --base the work tree is taken as deployed, so the data-loss move is the one to hold:
    plex stays in wave 0 with its objects protected, byte for byte as `--base HEAD` leaves it."""
    plex_depends_on_sonarr(example_repo)
    twin = tmp_path / "twin"
    git(tmp_path, "clone", "-q", str(example_repo), str(twin))
    deployed = files_at(example_repo, "HEAD")
    with redirect_stdout(io.StringIO()) as out:
        code = main(["apply", str(example_repo)])
    assert code == 0
    assert "move-held" in out.getvalue() and not (example_repo / "apps/wave-2/plex.yaml").exists()
    assert apply(twin)[0] == 0
    assert files_at_work(example_repo) == files_at_work(twin)
    git(example_repo, "commit", "-qm", "wave-bot without --base")
    assert simulate(deployed, files_at(example_repo, "HEAD")).deleted == set()


def files_at_work(repo: Path) -> dict[str, bytes]:
    return {str(p.relative_to(repo)): p.read_bytes() for p in sorted(repo.rglob("*"))
            if p.is_file() and ".git" not in p.relative_to(repo).parts}


def test_check_after_the_first_step_passes_and_says_the_move_waits(example_repo: Path) -> None:
    plex_depends_on_sonarr(example_repo)
    apply(example_repo)
    with redirect_stdout(io.StringIO()) as out:
        code = main(["check", str(example_repo), "--base", "HEAD", "--no-fixes"])
    assert code == 0
    assert "warning move-held: wave-bot holds the move of `apps/wave-0/plex.yaml`: moving it now deletes" \
           in " ".join(out.getvalue().split())


def test_a_sops_file_is_never_edited_the_move_is_held_with_commands(example_repo: Path) -> None:
    repo = example_repo
    # Secrets count as stateful here, so moving gitea's SOPS secret later is a data-loss move.
    with (repo / ".wave-bot.yaml").open("a") as handle:
        handle.write("stateful_kinds:\n  - Secret\n")
    with (repo / "catalog/gitea.yaml").open("a") as handle:
        handle.write("  dependencies:\n    - to: sonarr\n")
    git(repo, "commit", "-qam", "gitea needs sonarr")
    secret = "apps/wave-0/gitea-bootstrap-secret.sops.yaml"
    before = (repo / secret).read_bytes()

    code, out = apply(repo)

    assert code == 0
    assert (repo / secret).read_bytes() == before
    assert "SOPS-encrypted" in out
    assert f"kubectl -n gitea annotate secret/gitea-bootstrap {PRUNE}=disabled" in out
    # The fix ends with the command that accepts the move; run as printed (a name filled in), it lets it go.
    command = out.split("wave-bot accept --by '<your name>' \\\n", 1)[1]
    names = [line.strip().rstrip("\\").strip().strip("'") for line in command.splitlines()[:1]]
    assert names == ["Secret gitea/gitea-bootstrap"]
    assert main(["accept", "--by", "alice", *names, "--base", "HEAD", str(repo)]) == 0
    git(repo, "commit", "-qam", "gitea needs sonarr; the secret's move accepted")
    assert apply(repo)[0] == 0
    assert (repo / "apps/wave-2/gitea-bootstrap-secret.sops.yaml").read_bytes() == before


def test_without_a_base_check_advises_the_apply_that_holds_the_data_loss_move(example_repo: Path) -> None:
    # Without --base apply holds the move too (the work tree is taken as deployed), so running the
    # advised plain `wave-bot apply` protects plex's objects and moves nothing.
    plex_depends_on_sonarr(example_repo)
    err = io.StringIO()
    with redirect_stdout(io.StringIO()), redirect_stderr(err):
        code = main(["check", str(example_repo)])
    assert code == 1
    assert err.getvalue().startswith("wave-bot: check failed: the wave layout is out of date: run `wave-bot apply` "
                                     "to make the 1 change(s)")
    deployed = files_at(example_repo, "HEAD")
    with redirect_stdout(io.StringIO()):
        assert main(["apply", str(example_repo)]) == 0
    git(example_repo, "commit", "-qm", "as advised")
    assert simulate(deployed, files_at(example_repo, "HEAD")).deleted == set()


def test_a_held_sops_move_goes_once_accepted(example_repo: Path) -> None:
    repo = example_repo
    with (repo / ".wave-bot.yaml").open("a") as handle:
        handle.write("stateful_kinds:\n  - Secret\n")
    with (repo / "catalog/gitea.yaml").open("a") as handle:
        handle.write("  dependencies:\n    - to: sonarr\n")
    # The live Secret was annotated with the kubectl command; the move is accepted as it is.
    (repo / ".wave-bot-accept.yaml").write_text(
        "accept:\n  - resource: Secret gitea/gitea-bootstrap\n    by: alice\n    reason: annotated live\n")
    git(repo, "commit", "-qam", "gitea needs sonarr")
    git(repo, "add", ".wave-bot-accept.yaml")
    git(repo, "commit", "-qm", "accept the secret's move")
    secret = (repo / "apps/wave-0/gitea-bootstrap-secret.sops.yaml").read_bytes()

    code, _ = apply(repo)

    assert code == 0
    # Its Namespace and PVC are still protected first, and the unit waits whole: the Secret with them.
    assert (repo / "apps/wave-0/gitea.yaml").is_file()
    assert (repo / "apps/wave-0/gitea-bootstrap-secret.sops.yaml").read_bytes() == secret
    git(repo, "commit", "-qm", "wave-bot: step 1")
    code, _ = apply(repo)
    assert code == 0
    assert (repo / "apps/wave-2/gitea-bootstrap-secret.sops.yaml").read_bytes() == secret
    assert (repo / "apps/wave-2/gitea.yaml").is_file()


def findings_of(out: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = json.loads(out)["findings"]
    return found


def test_a_held_unit_waits_whole_its_sops_companion_moves_with_it(example_repo: Path) -> None:
    repo = example_repo
    # gitea.yaml holds a Namespace and a PVC; its SOPS Secret is a companion file of the same unit.
    # gitea-actions (anchored above gitea) moves with it from wave 1 to wave 3, with its runner Secret.
    with (repo / "catalog/gitea.yaml").open("a") as handle:
        handle.write("  dependencies:\n    - to: sonarr\n")
    git(repo, "commit", "-qam", "gitea needs sonarr")
    secret = "apps/wave-0/gitea-bootstrap-secret.sops.yaml"
    sealed = (repo / secret).read_bytes()
    deployed = files_at(repo, "HEAD")

    code, out = apply(repo, "--fix-overlays", "--format", "json")

    assert code == 0
    assert (repo / secret).read_bytes() == sealed  # held beside its app file, never edited
    assert not (repo / "apps/wave-2").joinpath("gitea-bootstrap-secret.sops.yaml").exists()
    assert (repo / "apps/wave-1/gitea-actions-runner-secret.sops.yaml").is_file()
    # One hold per data-loss file; a Secret whose content is in git is no data loss, so the companions
    # get no hold of their own and nobody is asked to accept their move: the gap and its command only.
    held = {f["path"]: f for f in findings_of(out) if f["code"] == "move-held"}
    assert sorted(held) == ["apps/wave-0/gitea.yaml", "apps/wave-1/gitea-actions.yaml"]
    assert not any("accept" in f["message"] for f in held.values())
    assert held["apps/wave-0/gitea.yaml"]["message"].endswith(
        "Its unit's other files wait and then move with it: apps/wave-0/gitea-bootstrap-secret.sops.yaml, which "
        "gets no annotation (it is SOPS-encrypted, and editing it would break its MAC): when it moves, apps-wave-0 "
        "deletes `Secret gitea/gitea-bootstrap` and the new wave recreates it from git, so no data is lost but it is "
        "missing in between; to avoid that, annotate the live object before that merge: "
        f"`kubectl -n gitea annotate secret/gitea-bootstrap {PRUNE}=disabled`")
    git(repo, "commit", "-qm", "wave-bot: step 1")
    assert simulate(deployed, files_at(repo, "HEAD")).deleted == set()

    deployed = files_at(repo, "HEAD")
    code, out = apply(repo, "--fix-overlays", "--format", "json")
    assert code == 0
    assert not (repo / "apps/wave-0/gitea.yaml").exists() and not (repo / secret).exists()
    assert (repo / "apps/wave-2/gitea.yaml").is_file()
    assert (repo / "apps/wave-2/gitea-bootstrap-secret.sops.yaml").read_bytes() == sealed
    git(repo, "commit", "-qm", "wave-bot: step 2")
    # The stateful objects carry the deployed annotation: only the two Secrets are deleted, recreated
    # from git by their new wave, and each is a warning whose fix is the kubectl command, never an error.
    deletions = simulate(deployed, files_at(repo, "HEAD")).deletions
    assert {str(r) for r in deletions} == {"Secret gitea/gitea-bootstrap", "Secret gitea-actions/gitea-actions-runner"}
    assert all(d.recreated for ds in deletions.values() for d in ds)
    moves = {f["resource"]: f for f in findings_of(out) if f["code"] == "later-wave-move" and f["severity"] != "info"}
    assert {r: (f["severity"], f["fix"]) for r, f in moves.items()} == {
        "Secret gitea/gitea-bootstrap": (
            "warning", f"kubectl -n gitea annotate secret/gitea-bootstrap {PRUNE}=disabled"),
        "Secret gitea-actions/gitea-actions-runner": (
            "warning", f"kubectl -n gitea-actions annotate secret/gitea-actions-runner {PRUNE}=disabled"),
    }
    assert all("no data is lost" in f["message"] and "accept" not in f["message"] for f in moves.values())
    code, out = apply(repo, "--fix-overlays")
    assert code == 0 and git(repo, "status", "--porcelain") == ""  # converged


def test_check_holds_only_the_moves_that_lose_data_not_their_companions(example_repo: Path) -> None:
    with (example_repo / "catalog/gitea.yaml").open("a") as handle:
        handle.write("  dependencies:\n    - to: sonarr\n")
    with redirect_stdout(io.StringIO()) as out, redirect_stderr(io.StringIO()):
        code = main(["check", str(example_repo), "--format", "json"])
    assert code == 1
    # gitea.yaml and gitea-actions.yaml; their SOPS Secrets wait with them and lose nothing
    held = [f["path"] for f in findings_of(out.getvalue()) if f["code"] == "move-held"]
    assert sorted(held) == ["apps/wave-0/gitea.yaml", "apps/wave-1/gitea-actions.yaml"]


def test_a_sops_secret_that_is_state_moving_later_is_an_error_whose_fix_is_kubectl(example_repo: Path) -> None:
    repo = example_repo
    with (repo / ".wave-bot.yaml").open("a") as handle:
        handle.write("stateful_kinds:\n  - Secret\n")
    with (repo / "catalog/gitea.yaml").open("a") as handle:
        handle.write("  dependencies:\n    - to: sonarr\n")
    # The move as it is (what `wave-bot accept` judges; apply holds it): its own error and fix.
    plan = make_plan(FsTree(str(repo)), load_config(FsTree(str(repo))), hold=False)
    (found,) = [f.to_json() for f in plan.findings if f.resource == "Secret gitea/gitea-bootstrap"]
    assert (found["code"], found["severity"], found["path"]) == (
        "later-wave-move", "error", "apps/wave-0/gitea-bootstrap-secret.sops.yaml")
    # The command first, then how to accept the move (the Secret is state: its move needs a reviewer's yes).
    assert found["fix"].startswith(f"kubectl -n gitea annotate secret/gitea-bootstrap {PRUNE}=disabled\n"
                                   "# Or, to take the move as it is (deleted, then recreated):\n")
    assert "  - resource: Secret gitea/gitea-bootstrap\n" in found["fix"]
    assert found["message"].endswith(
        "apps/wave-0/gitea-bootstrap-secret.sops.yaml is SOPS-encrypted, so it cannot carry "
        f"`{PRUNE}: disabled` (editing it breaks its MAC). Safe procedure: annotate the live object (the command "
        "in the fix), then accept this move for Secret gitea/gitea-bootstrap in .wave-bot-accept.yaml (resource "
        "and by:, see docs/guides/deleting-on-purpose.md); once apps-wave-2 owns it, remove the annotation "
        f"(the same command with `{PRUNE}-`)")


def check_findings(repo: Path, code: str) -> list[dict[str, object]]:
    import json

    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        main(["check", str(repo), "--base", "HEAD", "--format", "json"])
    return [f for f in json.loads(out.getvalue())["findings"] if f["code"] == code]


def test_once_the_held_move_is_deployed_the_report_names_the_annotation_lines_to_delete(example_repo: Path) -> None:
    repo = example_repo
    plex_depends_on_sonarr(repo)
    assert apply(repo)[0] == 0  # step 1: the annotation only
    git(repo, "commit", "-qam", "protect plex")
    assert check_findings(repo, "annotation-removable") == []  # deployed, but the file has not moved yet
    assert apply(repo)[0] == 0  # step 2: the move
    git(repo, "commit", "-qam", "move plex")
    moved = (repo / "apps/wave-2/plex.yaml").read_text().splitlines()

    (found,) = check_findings(repo, "annotation-removable")

    assert (found["path"], found["line"], found["severity"]) == ("apps/wave-2/plex.yaml", 5, "info")
    marked = f"    {PRUNE}: disabled  # wave-bot: move-held"
    assert [moved[n - 1] for n in (5, 6, 14, 15, 29, 30, 71, 72)] == ["  annotations:", marked] * 4
    assert "delete lines 5, 6, 14, 15, 29, 30, 71, 72 of apps/wave-2/plex.yaml in a change of its own" in str(
        found["message"])
    assert str(found["fix"]).startswith(f"# apps/wave-2/plex.yaml:5, delete:\n  annotations:\n"
                                        f"# apps/wave-2/plex.yaml:6, delete:\n{marked}\n")
    # Deleting them as said gives back the manifest as it was before the held move, byte for byte.
    for line in (72, 71, 30, 29, 15, 14, 6, 5):
        del moved[line - 1]
    assert "\n".join(moved) + "\n" == git(repo, "show", f"HEAD~3:{PLEX}")


def test_an_annotation_the_user_wrote_is_never_reported_removable(example_repo: Path) -> None:
    repo = example_repo
    plex_depends_on_sonarr(repo)
    assert apply(repo)[0] == 0
    # The user keeps the protection for good: deletes the comment that marks it as wave-bot's.
    (repo / PLEX).write_text((repo / PLEX).read_text().replace("  # wave-bot: move-held", ""))
    git(repo, "commit", "-qam", "protect plex for good")
    assert apply(repo)[0] == 0
    git(repo, "commit", "-qam", "move plex")
    assert PRUNE in (repo / "apps/wave-2/plex.yaml").read_text()

    assert check_findings(repo, "annotation-removable") == []


DIR_PER_APP = Path(__file__).resolve().parents[2] / "examples" / "dir-per-app"


def test_a_directory_unit_whose_move_loses_data_waits_whole_until_accepted(
        make_repo: Any, capsys: Any) -> None:
    # redis (a unit directory with its Namespace) comes to need jellyfin: wave 0 -> 2, and jellyseerr
    # (a PVC, below a grouping folder) goes 2 -> 3 with it. Their findings name the files inside them.
    repo = make_repo({str(p.relative_to(DIR_PER_APP)): p.read_bytes() for p in DIR_PER_APP.rglob("*") if p.is_file()})
    config = repo / ".wave-bot.yaml"
    config.write_text(config.read_text().replace("  redis: []\n", "  redis: [jellyfin]\n"))
    git(repo, "commit", "-qam", "redis needs jellyfin")
    deployed = files_at(repo, "HEAD")
    code, out = apply(repo, "--format", "json")
    assert code == 0
    held = {f["path"]: f for f in json.loads(out)["findings"] if f["code"] == "move-held"}
    assert sorted(held) == ["apps/wave-0/redis", "apps/wave-2/media/jellyseerr"]
    assert "kubectl annotate namespace/redis kustomize.toolkit.fluxcd.io/prune=disabled" in held[
        "apps/wave-0/redis"]["fix"]
    assert git(repo, "status", "--porcelain") == ""  # nothing moved, no file inside them edited
    assert simulate(deployed, files_at(repo, "HEAD")).deleted == set()
    # Annotated live and accepted (the fix's commands), the next apply moves each directory whole.
    for path in held:
        names = [line.strip(" \\").strip("'") for line in held[path]["fix"].split("wave-bot accept", 1)[1]
                 .splitlines()[1:]]
        assert main(["accept", "--by", "alice", *names, "--base", "HEAD", str(repo)]) == 0
    git(repo, "commit", "-qm", "accepted: annotated live")
    capsys.readouterr()
    assert apply(repo)[0] == 0
    assert (repo / "apps/wave-2/redis/namespace.yaml").read_bytes() == deployed["apps/wave-0/redis/namespace.yaml"]
    assert (repo / "apps/wave-3/media/jellyseerr/pvc.yaml").is_file()


def held_findings(repo: Path) -> list[dict[str, object]]:
    """The move-held findings of `apply --base HEAD`, as the JSON report gives them."""
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(["apply", str(repo), "--base", "HEAD", "--format", "json"])
    assert code == 0
    return [f for f in json.loads(out.getvalue())["findings"] if f["code"] == "move-held"]


# What moving plex.yaml would delete, as data: its claim and its Namespace lose data, listed first.
PLEX_AT_RISK = [
    {"kind": "Namespace", "group": "", "namespace": "", "name": "plex", "loses_data": True},
    {"kind": "PersistentVolumeClaim", "group": "", "namespace": "plex", "name": "plex-data", "loses_data": True},
    {"kind": "Service", "group": "", "namespace": "plex", "name": "plex", "loses_data": False},
    {"kind": "Deployment", "group": "apps", "namespace": "plex", "name": "plex", "loses_data": False},
]


HELD_HEADLINE = ("wave-bot holds the move of `apps/wave-0/plex.yaml`: moving it now deletes `Namespace plex` "
                 "and 3 more objects")


def test_the_held_finding_names_both_waves_the_objects_and_the_next_step(example_repo: Path) -> None:
    plex_depends_on_sonarr(example_repo)
    objects = ("`Namespace plex`, `PersistentVolumeClaim plex/plex-data`, `Service plex/plex`, "
               "`apps/Deployment plex/plex`")
    assert held_findings(example_repo) == [{
        "code": "move-held", "severity": "warning", "path": PLEX, "wave": 0, "resource": "Namespace plex",
        "message": f"{PLEX} belongs in wave 2 (apps/wave-2/plex.yaml), but moving it now makes apps-wave-0 delete "
                   f"{objects} before apps-wave-2 recreates them (data loss for `Namespace plex`, "
                   "`PersistentVolumeClaim plex/plex-data`). So wave-bot does not move it yet: this change only "
                   f"adds `{PRUNE}: disabled` to {objects} in {PLEX}, and the file stays in wave 0. Next: merge "
                   "it, wait until apps-wave-0 has reconciled it (`flux get kustomization apps-wave-0`), then run "
                   "wave-bot again (`wave-bot apply --base <the deployed revision>`, or push to the pull request): "
                   "the annotation is then deployed and the move is safe. Once apps-wave-2 owns them, remove the "
                   "annotation in a change of its own if Flux should garbage-collect them again (once that move is "
                   "deployed, wave-bot names the lines: annotation-removable)",
        "objects": PLEX_AT_RISK, "headline": HELD_HEADLINE,
    }]


def test_an_object_protected_at_base_is_neither_annotated_again_nor_named_as_deleted(
        example_repo: Path, kubectl: Kubectl) -> None:
    repo = example_repo
    manifest = (repo / PLEX).read_text()
    service = "kind: Service\nmetadata:\n"
    assert manifest.count(service) == 1
    (repo / PLEX).write_text(manifest.replace(service, f"{service}  annotations:\n    {PRUNE}: disabled\n"))
    git(repo, "commit", "-qam", "the Service was protected before")
    plex_depends_on_sonarr(repo)
    protected = (repo / PLEX).read_text()

    [held] = held_findings(repo)

    # Its old wave leaves the Service in place: only the other three are deleted and annotated.
    assert str(held["message"]).startswith(
        f"{PLEX} belongs in wave 2 (apps/wave-2/plex.yaml), but moving it now makes apps-wave-0 delete "
        "`Namespace plex`, `PersistentVolumeClaim plex/plex-data`, `apps/Deployment plex/plex` before apps-wave-2 "
        "recreates them")
    expected = protected
    for kind in ("Namespace", "PersistentVolumeClaim", "Deployment"):
        expected = expected.replace(f"kind: {kind}\nmetadata:\n", f"kind: {kind}\nmetadata:\n  annotations:\n"
                                    f"    {PRUNE}: disabled  # wave-bot: move-held\n")
    assert (repo / PLEX).read_text() == expected
    built = kubectl(repo / "apps/wave-0")
    assert built.returncode == 0, built.stderr
    assert annotated(built.stdout) == PLEX_OBJECTS


def test_a_file_protect_cannot_edit_is_held_with_a_command_per_object(example_repo: Path) -> None:
    repo = example_repo
    manifest = (repo / PLEX).read_text()
    namespace = "kind: Namespace\nmetadata:\n  name: plex\n  labels:\n    app.kubernetes.io/part-of: apps\n"
    assert manifest.count(namespace) == 1
    # A flow mapping takes no inserted line, so wave-bot writes nothing and gives the commands instead.
    (repo / PLEX).write_text(manifest.replace(
        namespace, "kind: Namespace\nmetadata: {name: plex, labels: {app.kubernetes.io/part-of: apps}}\n"))
    git(repo, "commit", "-qam", "plex's Namespace in flow style")
    plex_depends_on_sonarr(repo)
    before = (repo / PLEX).read_bytes()

    held = held_findings(repo)

    objects = ("`Namespace plex`, `PersistentVolumeClaim plex/plex-data`, `Service plex/plex`, "
               "`apps/Deployment plex/plex`")
    assert held == [{
        "code": "move-held", "severity": "warning", "path": PLEX, "wave": 0, "resource": "Namespace plex",
        "message": f"{PLEX} belongs in wave 2 (apps/wave-2/plex.yaml), but moving it now makes apps-wave-0 delete "
                   f"{objects} before apps-wave-2 recreates them (data loss for `Namespace plex`, "
                   "`PersistentVolumeClaim plex/plex-data`). So wave-bot does not move it yet, and adds no "
                   "annotation: wave-bot cannot edit it safely (its metadata is not a block mapping wave-bot can "
                   "add a line to). To go on: annotate the live objects with the commands in the fix, then accept "
                   "the move for each of them in .wave-bot-accept.yaml (the fix's `wave-bot accept` command writes "
                   "the entries) and run wave-bot again: it then moves the file. Once apps-wave-2 owns them, remove "
                   f"the annotation (the same commands with `{PRUNE}-`)",
        # A Namespace is cluster-scoped: its command takes no -n.
        "fix": f"kubectl annotate namespace/plex {PRUNE}=disabled\n"
               f"kubectl -n plex annotate persistentvolumeclaim/plex-data {PRUNE}=disabled\n"
               f"kubectl -n plex annotate service/plex {PRUNE}=disabled\n"
               f"kubectl -n plex annotate deployment.apps/plex {PRUNE}=disabled\n"
               "wave-bot accept --by '<your name>' \\\n  'Namespace plex' \\\n  'PersistentVolumeClaim plex/plex-data' "
               "\\\n  'Service plex/plex' \\\n  'apps/Deployment plex/plex'",
        "objects": PLEX_AT_RISK, "headline": HELD_HEADLINE,
    }]
    assert (repo / PLEX).read_bytes() == before


def test_a_manifest_that_sets_another_prune_value_is_told_to_change_it_not_to_annotate_live(
        example_repo: Path) -> None:
    # The file says prune: enabled on plex's Namespace: Flux reapplies that over a live annotation, so
    # the kubectl route would not protect it; the value in the file is what must change.
    repo = example_repo
    manifest = (repo / PLEX).read_text()
    namespace = "kind: Namespace\nmetadata:\n"
    assert manifest.count(namespace) == 1
    (repo / PLEX).write_text(manifest.replace(namespace, f"{namespace}  annotations:\n    {PRUNE}: enabled\n"))
    git(repo, "commit", "-qam", "plex's Namespace says prune: enabled")
    plex_depends_on_sonarr(repo)
    before = (repo / PLEX).read_bytes()
    line = before.decode().splitlines().index(f"    {PRUNE}: enabled") + 1

    [held] = held_findings(repo)

    assert (repo / PLEX).read_bytes() == before and not (repo / "apps/wave-2/plex.yaml").exists()
    assert (held["path"], held["line"]) == (PLEX, line)
    assert f"it sets {PRUNE}: enabled on Namespace plex, which Flux applies over any live annotation; change " \
           "that value to disabled in the file" in str(held["message"])
    assert "kubectl" not in str(held["fix"]) and "mapping key" not in str(held["message"])
    # Done as said, the next run protects the rest, and the one after moves the file.
    (repo / PLEX).write_text(before.decode().replace(f"{PRUNE}: enabled", f"{PRUNE}: disabled"))
    git(repo, "commit", "-qam", "plex's Namespace protected by hand")
    deployed = files_at(repo, "HEAD")
    assert apply(repo)[0] == 0
    git(repo, "commit", "-qam", "wave-bot: protect the rest")
    assert simulate(deployed, files_at(repo, "HEAD")).deleted == set()
    deployed = files_at(repo, "HEAD")
    assert apply(repo)[0] == 0
    git(repo, "commit", "-qam", "wave-bot: move")
    assert (repo / "apps/wave-2/plex.yaml").is_file()
    assert simulate(deployed, files_at(repo, "HEAD")).deleted == set()


@pytest.mark.parametrize("base", [["--base", "HEAD"], []], ids=["base-head", "no-base"])
@pytest.mark.parametrize("via", ["base", "component"])
def test_a_unit_whose_namespace_comes_from_outside_it_is_held_whole(
    make_repo: Any, capsys: Any, via: str, base: list[str]
) -> None:
    """jellyfin's Namespace is defined outside its directory, in bases/media/ (its kustomization names
    ../../../../bases/media) or in a component, and nothing in its directory loses data: moving
    jellyfin a wave later deletes that Namespace, so the unit is held as a whole, with --base and
    without (the work tree is then deployed)."""
    example = PROJECT / "examples" / "dir-per-app"
    files: dict[str, str | bytes] = {str(p.relative_to(example)): p.read_bytes() for p in example.rglob("*")
                                     if p.is_file()}
    unit = "apps/wave-1/media/jellyfin"
    files[f"{via}s/media/namespace.yaml"] = files.pop(f"{unit}/namespace.yaml")
    files[f"{via}s/media/kustomization.yaml"] = (
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n" if via == "base" else
        "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n") + "resources:\n  - namespace.yaml\n"
    kustomization = files[f"{unit}/kustomization.yaml"]
    assert isinstance(kustomization, bytes)
    # Its claim goes too: the Namespace from outside is all a move would lose.
    del files[f"{unit}/pvc.yaml"]
    kustomization = kustomization.replace(b"  - pvc.yaml\n", b"")
    files[f"{unit}/kustomization.yaml"] = (
        kustomization.replace(b"  - namespace.yaml\n", b"  - ../../../../bases/media\n") if via == "base" else
        kustomization.replace(b"  - namespace.yaml\n", b"") + b"components:\n  - ../../../../components/media\n")
    repo = make_repo(files, name="based")
    config = repo / ".wave-bot.yaml"
    config.write_text(config.read_text().replace("  redis: []\n", "  redis: [postgres]\n")
                      .replace("  jellyfin: [postgres]\n", "  jellyfin: [postgres, redis]\n"))
    git(repo, "commit", "-qam", "jellyfin needs redis, redis needs postgres")
    deployed = files_at(repo, "HEAD")
    capsys.readouterr()
    assert main(["apply", str(repo), *base, "--format", "json"]) == 0
    held = [f for f in findings_of(capsys.readouterr().out) if f["code"] == "move-held"]
    assert unit in [f["path"] for f in held]
    assert (repo / unit).is_dir() and not (repo / "apps/wave-2/media/jellyfin").exists()
    assert "`Namespace media`" in next(f["message"] for f in held if f["path"] == unit)
    # What apply left (redis held too: its own Namespace) deletes nothing once merged.
    assert simulate(deployed, files_at_work(repo)).deleted == set()


def test_a_moving_unit_is_built_only_for_a_data_loss_finding_outside_every_moving_file() -> None:
    """Which unit holds an object defined in a base outside it is known only by building the moving
    units, which on thousands of them is most of `apply`: they are built when such a finding needs it,
    and once."""
    unit = AppFile("apps/db", None, "db", "apps/wave-1/db", 1, is_dir=True)
    inside = Finding("later-wave-move", "error", "PVC db/data is deleted", path="apps/db/pvc.yaml",
                     resource="PersistentVolumeClaim db/data")
    outside = Finding("later-wave-move", "error", "PVC db/base is deleted", path="bases/pvc.yaml",
                      resource="PersistentVolumeClaim db/base")
    calls: list[int] = []

    def built() -> dict[str, frozenset[str]]:
        calls.append(1)
        return {"apps/db": frozenset({"PersistentVolumeClaim db/base"})}

    assert sorted(unsafe_moves([inside], [unit], built)) == ["apps/db"]
    assert calls == []  # the finding stands inside the unit: nothing built
    held = unsafe_moves([outside, dataclasses.replace(outside, message="again")], [unit], built)
    assert held["apps/db"].objects == frozenset({"PersistentVolumeClaim db/base"})
    assert calls == [1]  # built for the outside finding, once for both
