"""The next safe step of a move that would lose data: apply protects first, moves once that is deployed."""
from __future__ import annotations

import io
import json
import subprocess
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

from ruamel.yaml import YAML

from bot.cli import main

from conftest import Kubectl, git
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
    assert set(added) == {b"  annotations:\n", f"    {PRUNE}: disabled\n".encode()}
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


def test_check_after_the_first_step_passes_and_says_the_move_waits(example_repo: Path) -> None:
    plex_depends_on_sonarr(example_repo)
    apply(example_repo)
    with redirect_stdout(io.StringIO()) as out:
        code = main(["check", str(example_repo), "--base", "HEAD", "--no-fixes"])
    assert code == 0
    assert "warning move-held: apps/wave-0/plex.yaml belongs in wave 2" in out.getvalue()


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


def test_without_a_base_check_does_not_advise_a_plain_apply_that_would_lose_data(example_repo: Path) -> None:
    plex_depends_on_sonarr(example_repo)
    err = io.StringIO()
    with redirect_stdout(io.StringIO()), redirect_stderr(err):
        code = main(["check", str(example_repo)])
    assert code == 1
    assert err.getvalue().startswith(
        "wave-bot: check failed: the wave layout is out of date, and 1 of its moves would lose data: run "
        "`wave-bot apply --base <the deployed revision, e.g. origin/main>`, which protects their objects first "
        "and moves them once that is deployed; fix the 2 error(s) listed above as each one says\n")


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
    assert (repo / "apps/wave-2/gitea-bootstrap-secret.sops.yaml").read_bytes() == secret
    assert (repo / "apps/wave-0/gitea.yaml").is_file()  # its Namespace and PVC are still protected first


def held_findings(repo: Path) -> list[dict[str, object]]:
    """The move-held findings of `apply --base HEAD`, as the JSON report gives them."""
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(["apply", str(repo), "--base", "HEAD", "--format", "json"])
    assert code == 0
    return [f for f in json.loads(out.getvalue())["findings"] if f["code"] == "move-held"]


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
                   "annotation in a change of its own if Flux should garbage-collect them again",
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
        expected = expected.replace(f"kind: {kind}\nmetadata:\n",
                                    f"kind: {kind}\nmetadata:\n  annotations:\n    {PRUNE}: disabled\n")
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
                   "the move for each of them in .wave-bot-accept.yaml (resource and by:, see README) and run "
                   "wave-bot again: it then moves the file. Once apps-wave-2 owns them, remove the annotation (the "
                   f"same commands with `{PRUNE}-`)",
        # A Namespace is cluster-scoped: its command takes no -n.
        "fix": f"kubectl annotate namespace/plex {PRUNE}=disabled\n"
               f"kubectl -n plex annotate persistentvolumeclaim/plex-data {PRUNE}=disabled\n"
               f"kubectl -n plex annotate service/plex {PRUNE}=disabled\n"
               f"kubectl -n plex annotate deployment.apps/plex {PRUNE}=disabled",
    }]
    assert (repo / PLEX).read_bytes() == before
