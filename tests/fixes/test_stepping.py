"""The next safe step of a move that would lose data: apply protects first, moves once that is deployed."""
from __future__ import annotations

import io
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
    # The fix ends with the command that accepts the move; run as printed (a name filled in), it lets it go.
    command = out.split("wave-bot accept --by '<your name>' \\\n", 1)[1]
    names = [line.strip().rstrip("\\").strip().strip("'") for line in command.splitlines()[:1]]
    assert names == ["Secret gitea/gitea-bootstrap"]
    assert main(["accept", "--by", "alice", *names, "--base", "HEAD", str(repo)]) == 0
    git(repo, "commit", "-qam", "gitea needs sonarr; the secret's move accepted")
    assert apply(repo)[0] == 0
    assert (repo / "apps/wave-2/gitea-bootstrap-secret.sops.yaml").read_bytes() == before


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


def findings_of(repo: Path, code: str) -> list[dict[str, object]]:
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
    assert findings_of(repo, "annotation-removable") == []  # deployed, but the file has not moved yet
    assert apply(repo)[0] == 0  # step 2: the move
    git(repo, "commit", "-qam", "move plex")
    moved = (repo / "apps/wave-2/plex.yaml").read_text().splitlines()

    (found,) = findings_of(repo, "annotation-removable")

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

    assert findings_of(repo, "annotation-removable") == []
