"""Every tier converges: the dependsOn graph, CRD provenance and strict substitution, on copies of
examples/homelab as `wave-bot check` reports them."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bot.cli import main

from conftest import write_files

FLUX = "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\n"


def tier(name: str, path: str, *deps: str, wait: bool = True, post: bool = True) -> str:
    """A Flux Kustomization in the example's shape."""
    text = FLUX + f"metadata:\n  name: {name}\n  namespace: flux-system\nspec:\n"
    if deps:
        text += "  dependsOn:\n" + "".join(f"    - name: {d}\n" for d in deps)
    text += (f"  interval: 10m\n  path: ./{path}\n  prune: true\n  wait: {'true' if wait else 'false'}\n"
             "  sourceRef:\n    kind: GitRepository\n    name: flux-system\n")
    if post:
        text += "  postBuild:\n    substituteFrom:\n      - kind: ConfigMap\n        name: cluster-vars\n"
    return text


def check(capsys: pytest.CaptureFixture[str], repo: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    code = main(["check", str(repo), "--format", "json", *extra])
    return code, json.loads(capsys.readouterr().out)


def found(report: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    return [f for f in report["findings"] if f["code"].startswith(prefix)]


def add_base_entry(repo: Path, name: str) -> None:
    kust = repo / "clusters/base/kustomization.yaml"
    kust.write_text(kust.read_text().replace("  - cluster-vars.yaml", f"  - {name}.yaml\n  - cluster-vars.yaml"))


def test_the_example_has_nothing_above_info(capsys: pytest.CaptureFixture[str], example_repo: Path) -> None:
    code, report = check(capsys, example_repo)
    assert code == 0
    assert [f for f in report["findings"] if f["severity"] != "info"] == []


# ---- the dependsOn graph ---------------------------------------------------------------------------


def test_a_depends_on_that_names_nothing(capsys: pytest.CaptureFixture[str], example_repo: Path) -> None:
    config = example_repo / "clusters/base/platform-config.yaml"
    config.write_text(config.read_text().replace("- name: platform\n", "- name: platfrom\n"))
    code, report = check(capsys, example_repo)
    assert code == 1
    [finding] = found(report, "depends-on-")
    assert finding["code"] == "depends-on-missing" and finding["severity"] == "error"
    assert finding["path"] == "clusters/base/platform-config.yaml" and finding["line"] == 10
    assert "flux-system/platfrom" in finding["message"] and "did you mean 'platform'" in finding["message"]
    assert finding["message"].endswith("(on every entrypoint)")


def test_the_waves_own_chain_is_part_of_the_graph(capsys: pytest.CaptureFixture[str], example_repo: Path) -> None:
    # wave 0 dependsOn platform-config; without it in the base, wave 0 never starts.
    (example_repo / "clusters/base/platform-config.yaml").unlink()
    kust = example_repo / "clusters/base/kustomization.yaml"
    kust.write_text(kust.read_text().replace("  - platform-config.yaml", ""))
    code, report = check(capsys, example_repo)
    assert code == 1
    [finding] = found(report, "depends-on-")
    assert (finding["code"], finding["resource"], finding["wave"]) == ("depends-on-missing", "apps-wave-0", 0)
    assert finding["path"] == "clusters/base/apps-wave-0.yaml"


def test_a_cycle_names_every_edge(capsys: pytest.CaptureFixture[str], example_repo: Path) -> None:
    write_files(example_repo, {"clusters/base/platform.yaml": tier("platform", "platform", "platform-config")})
    code, report = check(capsys, example_repo)
    assert code == 1
    [finding] = found(report, "depends-on-")
    assert finding["code"] == "depends-on-cycle" and finding["severity"] == "error"
    message = finding["message"]
    assert "platform dependsOn platform-config (clusters/base/platform.yaml:8)" in message
    assert "platform-config dependsOn platform (clusters/base/platform-config.yaml:10)" in message


def test_a_depends_on_across_namespaces_must_name_the_namespace(
        capsys: pytest.CaptureFixture[str], example_repo: Path) -> None:
    platform = example_repo / "clusters/base/platform.yaml"
    platform.write_text(platform.read_text().replace("namespace: flux-system", "namespace: infra", 1))
    code, report = check(capsys, example_repo)
    assert code == 1
    [finding] = found(report, "depends-on-")
    assert finding["code"] == "depends-on-namespace" and finding["resource"] == "platform-config"
    assert "name: platform\n  namespace: infra" in finding["fix"]
    # With the namespace named, Flux finds it.
    config = example_repo / "clusters/base/platform-config.yaml"
    config.write_text(config.read_text().replace("- name: platform\n", "- name: platform\n      namespace: infra\n"))
    code, report = check(capsys, example_repo)
    assert found(report, "depends-on-") == []


def test_every_tier_code_is_in_the_readme_table() -> None:
    from bot import tiers

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    for code in tiers.CODES:
        assert f"| `{code}` |" in readme, code
