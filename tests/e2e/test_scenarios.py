"""The safety checks end to end on the bundled example: a PR changes the catalog, `plan --base` explains it."""
from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bot.cli import main

from conftest import deployment, git, service, write_files
from support.sopskit import encrypt


def plan(repo: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, Any]:
    capsys.readouterr()
    code = main(["plan", str(repo), "--base", "main", "--format", "json", *extra])
    out = capsys.readouterr()
    assert code == 0, out.err
    return json.loads(out.out)


def by_code(out: dict[str, Any], code: str) -> list[dict[str, Any]]:
    return [f for f in out["findings"] if f["code"] == code]


def pr(repo: Path, files: dict[str, str | bytes]) -> None:
    git(repo, "checkout", "-q", "-b", "pr")
    write_files(repo, files)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "the PR's change")


def test_a_new_dependent_of_seerr_creates_wave_3(example_repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pr(example_repo, {"catalog/overseerr.yaml": service("overseerr", "seerr"),
                      "apps/overseerr.yaml": deployment("overseerr")})
    out = plan(example_repo, capsys)
    assert out["waves"]["overseerr"] == 3
    (deepest,) = by_code(out, "new-deepest-wave")
    assert deepest["severity"] == "warning" and deepest["wave"] == 3
    assert "- apps-wave-3.yaml" in deepest["fix"] and "name: apps-wave-3" in deepest["fix"]
    (entry,) = by_code(out, "missing-base-entry")
    assert entry["severity"] == "error" and entry["wave"] == 3 and entry["path"] == "clusters/base/kustomization.yaml"
    missing = by_code(out, "missing-decryption")
    assert {(f["overlay"], f["wave"], f["severity"]) for f in missing} == {
        ("clusters/dev", 3, "warning"), ("clusters/prod", 3, "warning")}  # no SOPS file in wave 3: warning


def test_a_new_wave_holding_a_sops_file_makes_missing_decryption_an_error(
    example_repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    secret = encrypt(tmp_path / "overseerr-bootstrap-secret.sops.yaml",
                     "apiVersion: v1\nkind: Secret\nmetadata:\n  name: overseerr-bootstrap\n  namespace: overseerr\n"
                     "stringData:\n  api-key: 5b0d7c1e9a2f4836\n")
    pr(example_repo, {"catalog/overseerr.yaml": service("overseerr", "seerr"),
                      "apps/overseerr.yaml": deployment("overseerr"),
                      "apps/overseerr-bootstrap-secret.sops.yaml": secret})
    out = plan(example_repo, capsys)
    assert {(f["overlay"], f["severity"]) for f in by_code(out, "missing-decryption")} == {
        ("clusters/dev", "error"), ("clusters/prod", "error")}


def test_b_gitea_gains_a_database_and_its_pvc_would_be_deleted(
    example_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pr(example_repo, {"catalog/gitea.yaml": service("gitea", "gitea-db")})
    out = plan(example_repo, capsys)
    # Moving gitea.yaml now would delete its PVC: the first step only protects it, the file stays.
    assert {"action": "update", "path": "apps/wave-0/gitea.yaml"} in out["changes"]
    assert not any(c.get("from") == "apps/wave-0/gitea.yaml" for c in out["changes"])
    (held,) = [f for f in by_code(out, "move-held") if f["path"] == "apps/wave-0/gitea.yaml"]
    assert held["severity"] == "warning"
    assert "`PersistentVolumeClaim gitea/gitea-data`" in held["message"]
    assert "`Namespace gitea`" in held["message"]
    assert not [f for f in by_code(out, "later-wave-move") if f["severity"] == "error"]
    assert main(["check", str(example_repo), "--base", "main"]) == 1  # out of date: the annotation to write


def test_b_is_safe_once_the_annotation_is_deployed_first(
    example_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gitea = example_repo / "apps/wave-0/gitea.yaml"
    annotated = gitea.read_text().replace(
        "  name: gitea-data\n  namespace: gitea\n",
        "  name: gitea-data\n  namespace: gitea\n  annotations:\n    kustomize.toolkit.fluxcd.io/prune: disabled\n")
    assert annotated != gitea.read_text()
    gitea.write_text(annotated)
    git(example_repo, "commit", "-q", "-am", "first: protect gitea's data from pruning")
    pr(example_repo, {"catalog/gitea.yaml": service("gitea", "gitea-db")})
    # The PVC is protected; its Namespace is not, so the move still waits, protecting only the rest.
    (held,) = [f for f in by_code(plan(example_repo, capsys), "move-held") if f["path"] == "apps/wave-0/gitea.yaml"]
    assert "`Namespace gitea`" in held["message"] and "PersistentVolumeClaim" not in held["message"]


REGEX_PATCH = """  - target:
      group: kustomize.toolkit.fluxcd.io
      kind: Kustomization
      name: apps-wave-[0-9]+
    patch: |
      - op: add
        path: /spec/decryption
        value:
          provider: sops
          secretRef:
            name: sops-age
"""
"""One patch that decrypts every wave by a regex target (scenario c; test_identity plans it too)."""


def test_c_a_regex_targeted_decryption_patch_covers_a_new_wave(
    example_repo: Path, capsys: pytest.CaptureFixture[str], kubectl: Callable[..., Any]
) -> None:
    dev = example_repo / "clusters/dev/kustomization.yaml"
    text = dev.read_text()
    per_wave = text[text.index("  - patch: |\n      apiVersion: kustomize.toolkit.fluxcd.io/v1"):]
    dev.write_text(text.replace(per_wave, REGEX_PATCH))
    git(example_repo, "commit", "-q", "-am", "dev: one regex patch decrypts every wave")
    base = (example_repo / "clusters/base/kustomization.yaml").read_text()
    pr(example_repo, {"catalog/overseerr.yaml": service("overseerr", "seerr"),
                      "apps/overseerr.yaml": deployment("overseerr"),
                      "clusters/base/kustomization.yaml": base.replace(
                          "  - cluster-vars.yaml", "  - apps-wave-3.yaml\n  - cluster-vars.yaml")})
    out = plan(example_repo, capsys)
    assert {f["overlay"] for f in by_code(out, "missing-decryption")} == {"clusters/prod"}
    assert main(["apply", str(example_repo), "--base", "main"]) == 0
    built = kubectl(example_repo / "clusters/dev")
    assert built.returncode == 0, built.stderr
    wave3 = built.stdout.split("name: apps-wave-3\n", 1)[1].split("---", 1)[0]
    assert "decryption:\n    provider: sops\n    secretRef:\n      name: sops-age" in wave3


def test_d_fix_overlays_builds_and_keeps_every_comment(
    example_repo: Path, capsys: pytest.CaptureFixture[str], kubectl: Callable[..., Any]
) -> None:
    pr(example_repo, {"catalog/overseerr.yaml": service("overseerr", "seerr"),
                      "apps/overseerr.yaml": deployment("overseerr")})
    hand_kept = ["clusters/base/kustomization.yaml", "clusters/dev/kustomization.yaml",
                 "clusters/prod/kustomization.yaml"]
    comments = {p: [line for line in (example_repo / p).read_text().splitlines() if line.lstrip().startswith("#")]
                for p in hand_kept}
    capsys.readouterr()
    assert main(["apply", str(example_repo), "--base", "main", "--fix-overlays"]) == 0
    for path, lines in comments.items():
        text = (example_repo / path).read_text()
        assert all(line in text.splitlines() for line in lines), path
    assert "- apps-wave-3.yaml" in (example_repo / "clusters/base/kustomization.yaml").read_text()
    for overlay in ("clusters/dev", "clusters/prod"):
        built = kubectl(example_repo / overlay)
        assert built.returncode == 0, built.stderr
        wave3 = built.stdout.split("name: apps-wave-3\n", 1)[1].split("---", 1)[0]
        assert "provider: sops" in wave3 and "name: sops-age" in wave3
    out = plan(example_repo, capsys)
    assert not by_code(out, "missing-decryption") and not by_code(out, "missing-base-entry")
    assert not by_code(out, "new-deepest-wave")
    assert main(["check", str(example_repo), "--base", "main"]) == 0


def test_the_seed_cutover_flags_removing_the_monolithic_apps_kustomization(
    example_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Turn the example back into the pre-split repo: one `apps` Kustomization with prune: true.
    base_k = (example_repo / "clusters/base/kustomization.yaml").read_text()
    git(example_repo, "mv", "clusters/base/apps-wave-0.yaml", "clusters/base/apps.yaml")
    apps = (example_repo / "clusters/base/apps.yaml").read_text()
    (example_repo / "clusters/base/apps.yaml").write_text(
        apps.replace("name: apps-wave-0", "name: apps").replace("path: ./apps/wave-0", "path: ./apps"))
    git(example_repo, "rm", "-q", "clusters/base/apps-wave-1.yaml", "clusters/base/apps-wave-2.yaml")
    (example_repo / "clusters/base/kustomization.yaml").write_text(
        base_k.replace("  - apps-wave-0.yaml", "  - apps.yaml").replace("  - apps-wave-1.yaml", "")
        .replace("  - apps-wave-2.yaml", ""))
    git(example_repo, "commit", "-q", "-am", "pre-split")
    git(example_repo, "checkout", "-q", "-b", "pr")
    git(example_repo, "rm", "-q", "clusters/base/apps.yaml")
    git(example_repo, "commit", "-q", "-m", "remove the monolithic apps Kustomization")
    out = plan(example_repo, capsys)
    (removed,) = by_code(out, "kustomization-removed")
    assert removed["severity"] == "error"
    assert removed["resource"] == "kustomize.toolkit.fluxcd.io/Kustomization flux-system/apps"
    assert "prune: false" in removed["message"] and "prune: false" in removed["fix"]
