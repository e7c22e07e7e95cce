"""Grouping findings into what a reviewer acts on, from the keys on the records alone."""
from __future__ import annotations

from bot.model import Finding
from bot.report.groups import group_findings

PROCEDURE = "Safe procedure: annotate it first, wait, then move it"


def moved(resource: str, severity: str, cost: str, path: str = "apps/wave-2/plex.yaml") -> Finding:
    return Finding(code="some-new-code", severity=severity,  # type: ignore[arg-type]
                   message=f"{resource} moves from wave 0 to wave 2: wave 0 deletes it first, so {cost}. {PROCEDURE}",
                   path=path, wave=2, resource=resource, fix="metadata: {}\n")


def test_one_file_s_objects_share_the_procedure_and_keep_their_own_consequence() -> None:
    findings = [moved("Service web", "warning", "it is missing in between"),
                moved("PersistentVolumeClaim web/data", "error", "the data is lost")]
    (group,) = group_findings(findings)
    assert (group.by, group.key, group.severity) == ("file", "apps/wave-2/plex.yaml", "error")
    assert group.lead == "Each of these 2 objects moves from wave 0 to wave 2: wave 0 deletes it first, so:"
    # Data loss first, whatever order the findings came in.
    assert [(i.label, i.text) for i in group.items] == [
        ("PersistentVolumeClaim web/data", "the data is lost."), ("Service web", "it is missing in between.")]
    assert group.tail == PROCEDURE and group.fix == "metadata: {}\n"
    assert all(i.fix is None for i in group.items)  # the shared fix is shown once, on the group


def test_a_wave_wide_finding_gathers_the_wave_s_edits_and_shows_its_fix_once() -> None:
    head = Finding("new-deepest-wave", "warning", "wave 3 is new; 2 edits needed", wave=3, resource="apps-wave-3",
                   fix="# base: add\n- apps-wave-3.yaml\n---\n# dev: add\n- patch: x\n")
    base = Finding("missing-base-entry", "error", "base lacks apps-wave-3.yaml", path="clusters/base/k.yaml",
                   wave=3, resource="apps-wave-3", fix="# base: add\n- apps-wave-3.yaml\n")
    dev = Finding("missing-decryption", "warning", "dev: no decryption", path="clusters/dev/k.yaml", wave=3,
                  overlay="clusters/dev", resource="apps-wave-3", fix="something the head's fix lacks")
    other = Finding("missing-decryption", "warning", "dev: wave 1 too", path="clusters/dev/k.yaml", wave=1,
                    overlay="clusters/dev", resource="apps-wave-1")
    groups = group_findings([base, dev, head, other])
    assert [(g.by, g.key) for g in groups] == [("wave", "3"), ("finding", "missing-decryption")]
    wave = groups[0]
    assert wave.severity == "error" and wave.lead == head.message and wave.fix == head.fix
    assert [(i.finding.code, i.fix) for i in wave.items] == [
        ("missing-base-entry", None), ("missing-decryption", "something the head's fix lacks")]


def test_an_overlay_s_findings_are_one_group() -> None:
    findings = [Finding("missing-decryption", "error", f"clusters/staging: apps-wave-{n} gets no SOPS decryption; "
                        f"wave {n} holds {n + 1} SOPS files", path="clusters/staging/kustomization.yaml", wave=n,
                        overlay="clusters/staging", resource=f"apps-wave-{n}", fix=f"patch {n}") for n in range(3)]
    (group,) = group_findings(findings)
    assert (group.by, group.key) == ("overlay", "clusters/staging")
    assert group.lead == "clusters/staging: each of these 3 objects gets no SOPS decryption:"
    assert [(i.label, i.text, i.fix) for i in group.items] == [
        (f"apps-wave-{n}", f"wave {n} holds {n + 1} SOPS files", f"patch {n}") for n in range(3)]


def test_messages_with_little_in_common_are_kept_whole() -> None:
    a = Finding("dup", "error", "x is defined twice: here and there; keep one", path="a.yaml", resource="x")
    b = Finding("dup", "error", "y clashes with something else entirely, in another way", path="a.yaml", resource="y")
    (group,) = group_findings([a, b])
    assert [i.text for i in group.items] == [a.message, b.message] and group.tail == ""


def test_every_finding_is_in_exactly_one_group() -> None:
    findings = [moved(f"Service s{i}", "warning", "gone", path=f"apps/wave-1/s{i % 3}.yaml") for i in range(9)]
    findings.append(Finding("lonely", "info", "just me"))
    groups = group_findings(findings)
    held = [f for g in groups for f in g.findings]
    assert sorted(held, key=findings.index) == findings and len(groups) == 4
    assert groups[-1].by == "finding" and groups[-1].lead == "just me"


def test_an_object_s_name_inside_a_path_stays_in_the_path() -> None:
    # cluster-template's children live in the namespace their folder is named after:
    # `db/postgres: ./apps/db/postgres/app ...`
    findings = [Finding("tier-not-checked", "info", f"{group}/{name}: ./apps/{group}/{name}/app is not a directory of "
                        "this repository, so its pass is not checked", path=f"apps/{group}/{name}/ks.yaml",
                        overlay="dev", resource=f"{group}/{name}") for name, group in (("postgres", "db"),
                                                                                      ("jellyfin", "media"))]
    (group,) = group_findings(findings)
    texts = [group.lead, *(i.text for i in group.items), group.tail]
    assert "each of these" not in " ".join(texts[1:]).lower() and "./apps/db/postgres/app" in " ".join(texts), texts
