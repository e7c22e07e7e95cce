"""Which pipeline runs: review mode without a catalog, the waves with one, `mode:` to choose."""
from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from bot.cli import main

from conftest import snapshot

FLUX_KS = """\
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: apps
  namespace: flux-system
spec:
  interval: 10m
  path: ./kubernetes/apps
  prune: true
  sourceRef:
    kind: GitRepository
    name: flux-system
"""
CONFIGMAP = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: default\n"
NO_CATALOG = {"kubernetes/flux/apps.yaml": FLUX_KS, "kubernetes/apps/settings.yaml": CONFIGMAP}


def _json(capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    data = json.loads(capsys.readouterr().out)
    assert isinstance(data, dict)
    return data


@pytest.mark.parametrize("command", ["plan", "check", "apply"])
def test_without_catalog_or_dependencies_every_command_runs_in_review_mode_and_writes_nothing(
    command: str, make_repo: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_repo(NO_CATALOG)
    before = snapshot(repo)

    code = main([command, str(repo), "--base", "HEAD", "--format", "json"])

    data = _json(capsys)
    assert code == 0
    assert data["mode"] == "review"
    assert "no catalog directory 'catalog'" in str(data["mode_reason"])
    assert data["changes"] == []
    assert snapshot(repo) == before


def test_review_mode_is_said_in_text_and_apply_says_it_wrote_nothing(
    make_repo: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_repo(NO_CATALOG)
    assert main(["apply", str(repo)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("wave-bot: reviewed: no deployed revision given (--base), so deletions are not checked\n")
    assert main(["check", str(repo), "--base", "HEAD"]) == 0
    assert capsys.readouterr().out.startswith("wave-bot: reviewed: nothing this change makes Flux delete\n")
    assert "Review mode (no catalog directory 'catalog'" in out
    assert "`apply` wrote nothing" in out
    assert main(["check", str(repo), "--format", "markdown"]) == 0
    assert "Review mode (" in capsys.readouterr().out


def test_empty_dependencies_map_is_review_mode_too(
    make_repo: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_repo({**NO_CATALOG, ".wave-bot.yaml": "dependencies: {}\n"})
    assert main(["check", str(repo), "--format", "json"]) == 0
    data = _json(capsys)
    assert data["mode"] == "review"
    assert "dependencies: in .wave-bot.yaml declares none" in str(data["mode_reason"])


def test_mode_review_skips_an_existing_catalog(
    make_repo: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    # The catalog names a dependency nobody declares: waves mode would refuse it (exit 2).
    catalog = ("apiVersion: catalog.homelab.dev/v1alpha1\nkind: ServiceDefinition\nmetadata:\n  name: a\n"
               "spec:\n  dependencies: [nowhere]\n")
    files = {**NO_CATALOG, "catalog/a.yaml": catalog}
    repo = make_repo({**files, ".wave-bot.yaml": "mode: review\n"})
    assert main(["check", str(repo), "--format", "json"]) == 0
    data = _json(capsys)
    assert data["mode"] == "review"
    assert data["mode_reason"] == "mode: review in .wave-bot.yaml"
    (repo / ".wave-bot.yaml").write_text("mode: auto\n")
    assert main(["check", str(repo)]) == 2


def test_a_configured_catalog_dir_that_is_missing_stays_an_error(
    make_repo: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_repo({**NO_CATALOG, ".wave-bot.yaml": "catalog_dir: catalg\n"})
    assert main(["check", str(repo)]) == 2
    assert "catalog_dir is 'catalg', and there is no such directory" in capsys.readouterr().err


def test_an_unknown_mode_is_refused_with_its_line_and_a_did_you_mean(
    make_repo: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_repo({**NO_CATALOG, ".wave-bot.yaml": "apps_dir: apps\nmode: reviw\n"})
    before = snapshot(repo)
    assert main(["apply", str(repo)]) == 2
    err = capsys.readouterr().err
    assert ".wave-bot.yaml:2" in err
    assert "'mode' must be one of auto, review, waves, got 'reviw' (did you mean 'review'?)" in err
    assert snapshot(repo) == before


SOPS_SECRET = """\
apiVersion: v1
kind: Secret
metadata:
  name: token
  namespace: default
stringData:
  token: ENC[AES256_GCM,data:abc=,iv:x=,tag:y=,type:str]
sops:
  age:
    - recipient: age1example
      enc: x
  lastmodified: "2026-01-01T00:00:00Z"
  mac: ENC[AES256_GCM,data:m=,iv:i=,tag:t=,type:str]
  version: 3.9.0
"""


@pytest.mark.parametrize("decrypts", [False, True])
def test_review_mode_says_when_a_kustomization_applies_a_sops_secret_without_decryption(
    decrypts: bool, make_repo: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    ks = FLUX_KS + ("  decryption:\n    provider: sops\n" if decrypts else "")
    repo = make_repo({"kubernetes/flux/apps.yaml": ks, "kubernetes/apps/token.sops.yaml": SOPS_SECRET})
    code = main(["check", str(repo), "--format", "json"])
    found = [f for f in _json(capsys)["findings"] if f["code"] == "sops-not-decrypted"]  # type: ignore[attr-defined]
    if decrypts:
        assert (code, found) == (0, [])
    else:
        assert code == 1
        assert [(f["severity"], f["resource"]) for f in found] == [("error", "Secret default/token")]
        assert "spec.decryption" in found[0]["message"] and "provider: sops" in found[0]["fix"]
