"""`wave-bot accept`: the acceptance written from the command line, valid for `check`, staged; every
refusal leaves the tree as it was. And the report's fix says how to accept from the pull request."""
from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from bot.cli import main

from conftest import git

ACCEPT_FILE = ".wave-bot-accept.yaml"
NS, PVC = "Namespace pihole", "PersistentVolumeClaim pihole/pihole-data"


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def removed(repo: Path) -> dict[str, dict[str, str]]:
    """`check --base HEAD`'s resource-removed findings, by resource."""
    _, out, _ = run("check", str(repo), "--base", "HEAD", "--format", "json")
    return {f["resource"]: f for f in json.loads(out)["findings"] if f["code"] == "resource-removed"}


def decommission_pihole(repo: Path) -> None:
    git(repo, "rm", "-q", "catalog/pihole.yaml", "apps/wave-0/pihole.yaml")
    kustomization = repo / "apps/wave-0/kustomization.yaml"
    kustomization.write_text(kustomization.read_text().replace("  - pihole.yaml\n", ""))
    git(repo, "add", "apps/wave-0/kustomization.yaml")


def test_accept_writes_a_staged_file_that_check_then_honours(example_repo: Path) -> None:
    decommission_pihole(example_repo)
    assert run("check", str(example_repo), "--base", "HEAD")[0] == 1

    code, out, err = run("accept", NS, PVC, "--by", "alice", "--reason", "pihole is retired", "--base", "HEAD",
                         str(example_repo))

    assert (code, err) == (0, "")
    assert (example_repo / ACCEPT_FILE).read_text() == (
        "# Deletions Flux performs on purpose, one entry per object, named exactly as wave-bot's findings\n"
        "# name it: see docs/guides/deleting-on-purpose.md. Reviewed and merged with the change that deletes.\n"
        "accept:\n"
        "  - resource: Namespace pihole\n    by: alice\n    reason: pihole is retired\n"
        "  - resource: PersistentVolumeClaim pihole/pihole-data\n    by: alice\n    reason: pihole is retired\n")
    assert git(example_repo, "diff", "--cached", "--name-status", "--", ACCEPT_FILE) == f"A\t{ACCEPT_FILE}\n"
    assert git(example_repo, "status", "--porcelain", "--", ACCEPT_FILE) == f"A  {ACCEPT_FILE}\n"
    assert out == (
        "wave-bot: added 2 entries to .wave-bot-accept.yaml and staged it, accepting (by alice) the deletion of:\n"
        "  - Namespace pihole\n  - PersistentVolumeClaim pihole/pihole-data\n"
        "Each is deleted by this change against HEAD. Commit it with the change that deletes them: reviewers "
        "approve the entries with the pull request, and git history keeps who accepted what.\n")
    found = removed(example_repo)
    assert found[PVC]["severity"] == "info"
    assert found[PVC]["message"].startswith("accepted by alice (.wave-bot-accept.yaml:7: pihole is retired), ")
    assert run("check", str(example_repo), "--base", "HEAD")[0] == 0


def test_accept_appends_to_an_existing_file_in_its_style_keeping_every_byte(example_repo: Path) -> None:
    decommission_pihole(example_repo)
    kept = ("# reviewed by the platform team\n"
            "accept:\n"
            "- resource: Service pihole/pihole   # no data in it\n"
            "  by: bob\n"
            "\n"
            "# keep this comment\n")
    (example_repo / ACCEPT_FILE).write_text(kept)

    code, _, _ = run("accept", PVC, "--by", "alice", "--base", "HEAD", str(example_repo))

    assert code == 0
    # After the last item, before the closing comment (it ends the file, not the item).
    head, tail = kept.split("\n\n")
    assert (example_repo / ACCEPT_FILE).read_text() == (
        head + "\n- resource: PersistentVolumeClaim pihole/pihole-data\n  by: alice\n\n" + tail)
    assert removed(example_repo)[PVC]["message"].startswith("accepted by alice (.wave-bot-accept.yaml:5), ")


def test_resources_may_follow_the_options(example_repo: Path) -> None:
    decommission_pihole(example_repo)
    code, _, err = run("accept", NS, "--by", "alice", PVC, str(example_repo))
    assert (code, err) == (0, "")
    assert {f["severity"] for f in removed(example_repo).values()} == {"info"}


@pytest.mark.parametrize(("existing", "argv", "message"), [
    (None, [NS, "--by", " "], "wave-bot: error: --by is empty: an acceptance says who accepts the deletion\n"
                               "  hint: pass your name or handle, e.g. --by alice\n"),
    ("accept:\n  - resource: Namespace pihole\n    by: bob\n", [NS, "--by", "alice"],
     "wave-bot: error: .wave-bot-accept.yaml:2: already accepts the deletion of Namespace pihole (by bob)\n"
     "  hint: leave the entry as it is, or edit it by hand\n"),
    (None, ["PersistentVolumeClaim pihole/pihole-dat", "--by", "alice", "--base", "HEAD"],
     "wave-bot: error: this change does not delete PersistentVolumeClaim pihole/pihole-dat (against HEAD); did you "
     "mean PersistentVolumeClaim pihole/pihole-data? It deletes Namespace pihole, PersistentVolumeClaim "
     "pihole/pihole-data, Service pihole/pihole, apps/Deployment pihole/pihole\n"
     "  hint: name each object exactly as the findings do\n"),
    (None, ["pihole", "--by", "alice"],
     "wave-bot: error: 'pihole' does not name one object as the findings do (`[group/]Kind [namespace/]name`)\n"
     "  hint: quote each object as one argument, e.g. 'PersistentVolumeClaim pihole/pihole-data'\n"),
    ("accept: [{resource: Service pihole/pihole, by: bob}]\n", [PVC, "--by", "alice", "--reason", "retired"],
     "wave-bot: error: .wave-bot-accept.yaml:1: 'accept' is a flow-style list ([...]); wave-bot adds only to block "
     "lists\n  hint: add them by hand, under accept: as a block list:\n"
     "  - resource: PersistentVolumeClaim pihole/pihole-data\n    by: alice\n    reason: retired\n"),
    ("accept:\n  - resource: Namespace pihole\n", [PVC, "--by", "alice"],
     "wave-bot: error: .wave-bot-accept.yaml:2: accept item 1 (Namespace pihole) has no by: say who accepts this "
     "deletion\n"),
])
def test_a_refused_acceptance_leaves_the_tree_untouched(
        example_repo: Path, existing: str | None, argv: list[str], message: str) -> None:
    decommission_pihole(example_repo)
    if existing is not None:
        (example_repo / ACCEPT_FILE).write_text(existing)
    before = git(example_repo, "status", "--porcelain", "--untracked-files=all")

    code, out, err = run("accept", *argv, str(example_repo))

    assert code == 2 and out == ""
    assert err.startswith(message)
    assert git(example_repo, "status", "--porcelain", "--untracked-files=all") == before
    if existing is None:
        assert not (example_repo / ACCEPT_FILE).exists()
    else:
        assert (example_repo / ACCEPT_FILE).read_text() == existing


def test_a_change_that_deletes_nothing_has_nothing_to_accept(example_repo: Path) -> None:
    code, _, err = run("accept", NS, "--by", "alice", "--base", "HEAD", str(example_repo))
    assert code == 2
    assert err.startswith("wave-bot: error: this change deletes nothing (against HEAD), so there is no deletion of "
                          "Namespace pihole to accept\n"
                          "  hint: make the change first (delete or move the files), then accept what "
                          "`wave-bot check --base` reports as deleted\n")
    assert not (example_repo / ACCEPT_FILE).exists()


def test_a_move_that_would_lose_data_can_be_accepted_as_it_is(example_repo: Path) -> None:
    # plex gains a dependency on sonarr: its file belongs in wave 2, and the move deletes its PVC.
    catalog = example_repo / "catalog/plex.yaml"
    catalog.write_text(catalog.read_text() + "  dependencies:\n    - to: sonarr\n")
    plex_pvc = "PersistentVolumeClaim plex/plex-data"

    code, _, err = run("accept", plex_pvc, "Namespace plex", "--by", "alice", "--base", "HEAD", str(example_repo))

    assert (code, err) == (0, "")
    _, out, _ = run("check", str(example_repo), "--base", "HEAD", "--format", "json")
    moves = {f["resource"]: f for f in json.loads(out)["findings"] if f["code"] == "later-wave-move"}
    assert moves[plex_pvc]["severity"] == "info" and moves[plex_pvc]["message"].startswith("accepted by alice")


def test_the_pull_request_comment_says_how_to_accept_each_deletion(example_repo: Path) -> None:
    decommission_pihole(example_repo)

    _, markdown, _ = run("check", str(example_repo), "--base", "HEAD", "--format", "markdown")

    assert (
        "    # Or, if Flux should delete them:\n"
        "    # accept that in this pull request, with the command\n"
        "    #   wave-bot accept --by '<your name>' \\\n"
        "    #     'Namespace pihole' \\\n"
        "    #     'PersistentVolumeClaim pihole/pihole-data'\n"
        "    # or these entries in .wave-bot-accept.yaml (reason: optional):\n"
        "    accept:\n"
        "      - resource: Namespace pihole\n"
        "        by: <your name>\n"
        "      - resource: PersistentVolumeClaim pihole/pihole-data\n"
        "        by: <your name>\n"
        "    ```\n") in markdown
    # The entries the comment offers, pasted as they are (a name filled in), are what check honours.
    entries = "    # or these entries in .wave-bot-accept.yaml (reason: optional):\n"
    fix = markdown.split(entries, 1)[1].split("    ```")[0]
    (example_repo / ACCEPT_FILE).write_text(
        "".join(line[4:] + "\n" for line in fix.splitlines()).replace("<your name>", "carol"))
    assert run("check", str(example_repo), "--base", "HEAD")[0] == 0


@pytest.mark.parametrize(("existing", "written"), [
    # A file written on Windows: the new lines end as the file's own do (a mixed file shows every
    # line as changed in some diffs and editors).
    (b"accept:\r\n  - resource: Service pihole/pihole\r\n    by: bob\r\n",
     b"accept:\r\n  - resource: Service pihole/pihole\r\n    by: bob\r\n"
     b"  - resource: PersistentVolumeClaim pihole/pihole-data\r\n    by: alice\r\n"),
    (b"accept:\r\n- resource: Service pihole/pihole\r\n  by: bob",
     b"accept:\r\n- resource: Service pihole/pihole\r\n  by: bob\r\n"
     b"- resource: PersistentVolumeClaim pihole/pihole-data\r\n  by: alice\r\n"),
    (b"# reviewed by the platform team\r\n",
     b"# reviewed by the platform team\r\naccept:\r\n  - resource: PersistentVolumeClaim pihole/pihole-data\r\n"
     b"    by: alice\r\n"),
    # Mixed endings: the first line's decides.
    (b"# reviewed by the platform team\r\naccept:\n- resource: Service pihole/pihole\n  by: bob\n",
     b"# reviewed by the platform team\r\naccept:\n- resource: Service pihole/pihole\n  by: bob\n"
     b"- resource: PersistentVolumeClaim pihole/pihole-data\r\n  by: alice\r\n"),
    # No final newline: the comment stays a line of its own, above the list.
    (b"# reviewed by the platform team",
     b"# reviewed by the platform team\naccept:\n  - resource: PersistentVolumeClaim pihole/pihole-data\n"
     b"    by: alice\n"),
])
def test_accept_keeps_the_files_line_endings(example_repo: Path, existing: bytes, written: bytes) -> None:
    decommission_pihole(example_repo)
    (example_repo / ACCEPT_FILE).write_bytes(existing)

    code, _, err = run("accept", PVC, "--by", "alice", "--base", "HEAD", str(example_repo))

    assert (code, err) == (0, "")
    assert (example_repo / ACCEPT_FILE).read_bytes() == written
    assert removed(example_repo)[PVC]["severity"] == "info"


def test_a_big_deletion_is_listed_in_part_when_the_name_is_not_one_of_it(example_repo: Path) -> None:
    pihole = example_repo / "apps/wave-0/pihole.yaml"
    pihole.write_text(pihole.read_text() + "".join(
        f"---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-{i}\n  namespace: pihole\n" for i in range(8)))
    git(example_repo, "commit", "-qam", "pihole has eight ConfigMaps")
    decommission_pihole(example_repo)

    code, _, err = run("accept", "Secret gitea/admin", "--by", "alice", "--base", "HEAD", str(example_repo))

    # 12 objects deleted: the first 10 by name, the count of the rest (`check` lists them all).
    assert code == 2
    assert err.startswith(
        "wave-bot: error: this change does not delete Secret gitea/admin (against HEAD). It deletes "
        + "".join(f"ConfigMap pihole/cm-{i}, " for i in range(8))
        + "Namespace pihole, PersistentVolumeClaim pihole/pihole-data and 2 more\n"
        "  hint: name each object exactly as the findings do\n")
    assert not (example_repo / ACCEPT_FILE).exists()


def test_only_the_deletions_that_lose_data_are_offered_the_acceptance(example_repo: Path) -> None:
    # One file deletes four objects; the Service and the Deployment lose nothing (info): no offer.
    decommission_pihole(example_repo)
    found = removed(example_repo)
    assert "wave-bot accept --by '<your name>'" in found[PVC]["fix"]
    assert {r: found[r].get("fix") for r in ("Service pihole/pihole", "apps/Deployment pihole/pihole")} == {
        "Service pihole/pihole": None, "apps/Deployment pihole/pihole": None}


def test_the_offer_for_one_object_names_it(example_repo: Path) -> None:
    pihole = example_repo / "apps/wave-0/pihole.yaml"
    claim = pihole.read_text().split("---\n")[2]
    assert claim.startswith("apiVersion: v1\nkind: PersistentVolumeClaim\n")
    pihole.write_text(pihole.read_text().replace("---\n" + claim, ""))

    _, out, _ = run("check", str(example_repo), "--base", "HEAD", "--format", "json")
    (fix,) = [f["fix"] for f in json.loads(out)["findings"] if f.get("resource") == PVC]  # resource-dropped

    assert ("# Or, if Flux should delete it:\n"
            "# accept that in this pull request, with the command\n"
            "#   wave-bot accept --by '<your name>' \\\n"
            "#     'PersistentVolumeClaim pihole/pihole-data'\n") in fix
