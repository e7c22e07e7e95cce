"""report/headline.py: a finding's headline, its objects at risk and its step, as a reader gets them."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.checks.codes import BY_NAME, HEADLINES
from bot.cli import main
from bot.model import Finding, FindingObject
from bot.report.headline import headline, objects_of, split_step, why, words
from bot.resid import ResourceId

from conftest import deployment, git, pvc, service, write_files
from support.glance import HEADLINE_LIMIT

PVC = FindingObject.of(ResourceId("", "PersistentVolumeClaim", "media", "plex-data"), loses_data=True)
SERVICE = FindingObject.of(ResourceId("", "Service", "media", "plex"))


def test_a_deleting_finding_s_headline_names_the_object_that_loses_data_first() -> None:
    f = Finding("later-wave-move", "error", "a long message that the headline does not need", wave=2,
                path="apps/wave-0/plex.yaml", resource="Service media/plex", objects=(SERVICE, PVC))
    assert headline([f]) == ("Moving to wave 2 deletes `PersistentVolumeClaim media/plex-data` and "
                             "`Service media/plex` before the new wave recreates them")
    assert objects_of([f]) == (PVC, SERVICE)


def test_a_group_s_headline_counts_what_it_does_not_name() -> None:
    many = [Finding("resource-removed", "error", "gone", objects=(FindingObject.of(
        ResourceId("", "ConfigMap", "media", f"c{i}")),)) for i in range(3)]
    many.append(Finding("resource-removed", "error", "gone", objects=(PVC,)))
    assert headline(many) == "Flux deletes `PersistentVolumeClaim media/plex-data` and 3 more objects: this change " \
                             "removes them"


def test_an_object_named_twice_is_listed_once_losing_data_if_either_says_so() -> None:
    plain = FindingObject.of(ResourceId("", "PersistentVolumeClaim", "media", "plex-data"))
    findings = [Finding("x", "info", "m", objects=(SERVICE, plain)), Finding("x", "info", "m", objects=(PVC,))]
    assert objects_of(findings) == (PVC, SERVICE)


def test_a_safe_move_is_said_from_its_message_not_as_a_deletion() -> None:
    f = Finding("earlier-wave-move", "info", "Service media/plex moves from wave 2 (apps/wave-2/plex.yaml) to the "
                "earlier wave 0 (apps/wave-0/plex.yaml): apps-wave-0 adopts it before apps-wave-2 reconciles, so "
                "nothing is deleted", objects=(SERVICE,))
    assert headline([f]) == ("`Service media/plex` moves from wave 2 (apps/wave-2/plex.yaml) to the earlier wave 0 "
                             "(apps/wave-0/plex.yaml)")


def test_a_short_first_sentence_is_the_headline_and_leaves_the_why() -> None:
    f = Finding("unplaced-file", "error", "apps/x.yaml: no catalog node owns this file. To place it, add one",
                path="apps/x.yaml")
    assert headline([f]) == "`apps/x.yaml`: no catalog node owns this file"
    assert why(f) == "To place it, add one"


def test_a_long_message_without_a_short_clause_falls_back_to_the_code_s_meaning() -> None:
    long = " ".join(["word"] * 30)
    f = Finding("chain-gating", "info", f"{long}: {long}")
    assert headline([f]) == "Units that wait for others only because the waves form one chain"
    assert why(f) == f"{long}: {long}"  # nothing of it said yet


def test_the_step_is_lifted_out_of_the_why() -> None:
    assert split_step("It is deleted, so the data is lost. Safe procedure: annotate it first, then move it. "
                      "Once moved, drop the annotation") == (
        "It is deleted, so the data is lost. Once moved, drop the annotation", "Annotate it first, then move it")
    assert split_step("Nothing to do here") == ("Nothing to do here", "")


def test_every_headline_template_is_a_declared_code_and_short() -> None:
    assert set(HEADLINES) <= set(BY_NAME)
    for code, template in HEADLINES.items():
        filled = template.format(objects="`PersistentVolumeClaim media/plex-data` and 3 more objects", them="them",
                                 path="`apps/wave-0/media/plex/helmrelease.yaml`", wave=12)
        assert words(filled) < 20, code


def test_every_code_s_meaning_serves_as_a_headline() -> None:
    assert max(words(c.meaning) for c in BY_NAME.values()) < HEADLINE_LIMIT


# ---- measured on what the bundled example and its scenarios produce -----------------------------------------


def _json(repo: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, object]:
    capsys.readouterr()
    main(["plan", str(repo), "--base", "main", "--format", "json", *extra])
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


@pytest.mark.parametrize("change", ["plex depends on sonarr", "plex moved by hand", "gitea gains a database",
                                    "plex's file deleted"])
def test_the_example_s_findings_have_short_headlines_and_their_objects(
    example_repo: Path, capsys: pytest.CaptureFixture[str], change: str
) -> None:
    git(example_repo, "checkout", "-q", "-b", "pr")
    if change.startswith("plex"):
        with open(example_repo / "catalog/plex.yaml", "a") as catalog:
            catalog.write("  dependencies:\n    - to: sonarr\n")
    if change == "plex moved by hand":
        git(example_repo, "mv", "apps/wave-0/plex.yaml", "apps/wave-2/plex.yaml")
    if change == "plex's file deleted":
        git(example_repo, "rm", "-q", "apps/wave-0/plex.yaml")
    if change == "gitea gains a database":
        write_files(example_repo, {"catalog/gitea-db.yaml": service("gitea-db"),
                                   "apps/gitea-db.yaml": deployment("gitea-db") + "---\n" + pvc("gitea-db-data",
                                                                                                  "gitea"),
                                   "catalog/gitea.yaml": service("gitea", "gitea-db")})
    git(example_repo, "add", "-A")
    git(example_repo, "commit", "-qm", change)
    out = _json(example_repo, capsys)
    findings = out["findings"]
    assert isinstance(findings, list) and findings
    assert max(words(f["headline"]) for f in findings) < HEADLINE_LIMIT
    losing = [f for f in findings if any(o["loses_data"] for o in f.get("objects", []))]
    assert losing, "each change puts data at risk"
    for f in losing:
        assert f["objects"][0]["loses_data"], f  # data loss first
        if f["severity"] != "info":  # what the change does to it, the object in code format
            assert f"`{_name(f['objects'][0])}`" in f["headline"], f


def _name(o: dict[str, object]) -> str:
    kind = f"{o['group']}/{o['kind']}" if o["group"] else str(o["kind"])
    return f"{kind} {o['namespace']}/{o['name']}" if o["namespace"] else f"{kind} {o['name']}"
