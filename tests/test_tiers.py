"""Every tier converges: the dependsOn graph, CRD provenance and strict substitution, on copies of
examples/homelab as `wave-bot check` reports them."""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from bot import yamlio
from bot.cli import main

from conftest import Kubectl, write_files

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


def _list(repo: Path, directory: str, *files: str) -> None:
    write_files(repo, {f"{directory}/kustomization.yaml": "resources:\n" + "".join(f"  - {f}\n" for f in files)})


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



# ---- substitution ------------------------------------------------------------------------------------


def _use(repo: Path, expression: str) -> None:
    """Put `expression` in wave 0's pihole manifest."""
    pihole = repo / "apps/wave-0/pihole.yaml"
    pihole.write_text(pihole.read_text().replace('value: "${TIMEZONE}"', f'value: "{expression}"', 1))


def test_a_variable_defined_nowhere(capsys: pytest.CaptureFixture[str], example_repo: Path) -> None:
    _use(example_repo, "${BACKUP_BUCKET}")
    code, report = check(capsys, example_repo)
    assert code == 1
    [finding] = found(report, "substitution-")
    assert (finding["code"], finding["severity"], finding["resource"]) == ("substitution-unresolved", "error",
                                                                          "BACKUP_BUCKET")
    assert finding["path"] == "apps/wave-0/pihole.yaml" and finding["wave"] == 0
    assert "(on every entrypoint)" in finding["message"] and "strict mode" in finding["message"]
    assert "${BACKUP_BUCKET:=<value>}" in finding["fix"]


def cluster_vars(kubectl: Kubectl, root: Path) -> dict[str, str]:
    """The cluster-vars ConfigMap as real kustomize builds `root`."""
    docs = yamlio.load(kubectl(root).stdout.encode(), "kubectl output")
    return next(d.value["data"] for d in docs if d.value["metadata"]["name"] == "cluster-vars")


def test_a_variable_only_the_dev_overlay_defines(capsys: pytest.CaptureFixture[str], example_repo: Path,
                                                 kubectl: Kubectl) -> None:
    _use(example_repo, "${BACKUP_BUCKET}")
    dev = example_repo / "clusters/dev/kustomization.yaml"
    dev.write_text(dev.read_text().replace("        value: dev.home.example\n", "        value: dev.home.example\n"
                                           "      - op: add\n        path: /data/BACKUP_BUCKET\n        value: b\n"))
    assert "BACKUP_BUCKET" in cluster_vars(kubectl, example_repo / "clusters/dev")
    assert "BACKUP_BUCKET" not in cluster_vars(kubectl, example_repo / "clusters/prod")
    code, report = check(capsys, example_repo)
    [finding] = found(report, "substitution-")
    assert finding["overlay"] == "clusters/prod" and finding["message"].endswith("(on clusters/prod)")
    # Defined in the base ConfigMap, every overlay has it.
    base = example_repo / "clusters/base/cluster-vars.yaml"
    base.write_text(base.read_text() + "  BACKUP_BUCKET: b\n")
    code, report = check(capsys, example_repo)
    assert found(report, "substitution-") == [] and code == 0


@pytest.mark.parametrize(("expression", "needs"), [
    ("${BACKUP_BUCKET}", True),
    ("${#BACKUP_BUCKET}", True),
    ("${BACKUP_BUCKET^^}", True),
    ("${BACKUP_BUCKET,}", True),
    ("${BACKUP_BUCKET:1:2}", True),
    ("${BACKUP_BUCKET#s3://}", True),
    ("${BACKUP_BUCKET%/}", True),
    ("${BACKUP_BUCKET/a/b}", True),
    ("${BACKUP_BUCKET:=bucket}", False),
    ("${BACKUP_BUCKET:-bucket}", False),
    ("${BACKUP_BUCKET=bucket}", False),
    ("${BACKUP_BUCKET-bucket}", False),
    ("$BACKUP_BUCKET", False),
    ("$${BACKUP_BUCKET}", False),
    ("$$$${BACKUP_BUCKET}", False),
    ("$$${BACKUP_BUCKET}", True),
])
def test_the_substitution_grammar(expression: str, needs: bool, capsys: pytest.CaptureFixture[str],
                                  example_repo: Path) -> None:
    _use(example_repo, expression + "-${MARKER}")  # MARKER: always needed, so the check ran
    code, report = check(capsys, example_repo)
    assert sorted(f["resource"] for f in found(report, "substitution-")) == (
        ["BACKUP_BUCKET", "MARKER"] if needs else ["MARKER"])


def test_the_disabled_annotation_and_label(capsys: pytest.CaptureFixture[str], example_repo: Path) -> None:
    _use(example_repo, "${BACKUP_BUCKET}")
    pihole = example_repo / "apps/wave-0/pihole.yaml"
    text = pihole.read_text()
    assert "kind: Deployment\nmetadata:\n" in text
    code, report = check(capsys, example_repo)
    assert [f["resource"] for f in found(report, "substitution-")] == ["BACKUP_BUCKET"]
    for key in ("annotations", "labels"):
        pihole.write_text(text.replace("kind: Deployment\nmetadata:\n", "kind: Deployment\nmetadata:\n"
                                       f"  {key}:\n    kustomize.toolkit.fluxcd.io/substitute: disabled\n", 1))
        code, report = check(capsys, example_repo)
        assert [f["resource"] for f in found(report, "substitution-")] == [], key


def test_a_tier_without_post_build_ships_the_variable_literally(
        capsys: pytest.CaptureFixture[str], example_repo: Path) -> None:
    write_files(example_repo, {"clusters/base/platform.yaml": tier("platform", "platform", post=False),
                               "platform/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"
                                                   "  namespace: cnpg-system\ndata:\n  a: ${CLUSTER_DOMAIN}\n"})
    _list(example_repo, "platform", "cnpg-system.yaml", "cm.yaml")
    code, report = check(capsys, example_repo)
    [finding] = found(report, "substitution-")
    assert (finding["code"], finding["severity"]) == ("substitution-without-postbuild", "warning")
    assert "postBuild:\n  substitute:\n    CLUSTER_DOMAIN: <value>" in finding["fix"]


def test_strict_substitution_off_makes_it_a_warning(capsys: pytest.CaptureFixture[str], example_repo: Path) -> None:
    _use(example_repo, "${BACKUP_BUCKET}")
    config = example_repo / ".wave-bot.yaml"
    config.write_text(config.read_text() + "strict_substitution: false\n")
    code, report = check(capsys, example_repo)
    [finding] = found(report, "substitution-")
    assert finding["severity"] == "warning" and "empty string" in finding["message"] and code == 0


def test_strict_substitution_must_be_a_boolean(capsys: pytest.CaptureFixture[str], example_repo: Path) -> None:
    config = example_repo / ".wave-bot.yaml"
    config.write_text(config.read_text() + "strict_substitution: 'no'\n")
    assert main(["check", str(example_repo)]) == 2
    assert "'strict_substitution' must be true or false" in capsys.readouterr().err


def test_sources_secrets_inline_and_optional(capsys: pytest.CaptureFixture[str], example_repo: Path) -> None:
    _use(example_repo, "${BACKUP_BUCKET}-${INLINE}")
    wave0 = example_repo / "clusters/base/apps-wave-0.yaml"
    text = wave0.read_text()
    # A SOPS-encrypted Secret keeps its key names in clear; an optional source may be absent.
    secret = ("apiVersion: v1\nkind: Secret\nmetadata:\n  name: backup\n  namespace: flux-system\nstringData:\n"
              "  BACKUP_BUCKET: ENC[AES256_GCM,data:abc,type:str]\nsops:\n  version: 3.9.0\n")
    write_files(example_repo, {"clusters/base/backup.sops.yaml": secret})
    add_base_entry(example_repo, "backup.sops")
    wave0.write_text(text.replace("        name: cluster-vars\n", "        name: cluster-vars\n"
                                  "      - kind: Secret\n        name: backup\n"
                                  "      - kind: ConfigMap\n        name: absent\n        optional: true\n"
                                  "    substitute:\n      INLINE: x\n"))
    code, report = check(capsys, example_repo)
    assert found(report, "substitution-") == []
    # A required source git does not hold: wave-bot cannot see its keys, and says so.
    wave0.write_text(wave0.read_text().replace("optional: true", "optional: false"))
    _use(example_repo, "${OTHER}")
    pihole = example_repo / "apps/wave-0/pihole.yaml"
    pihole.write_text(pihole.read_text().replace("${BACKUP_BUCKET}-${INLINE}", "${OTHER}"))
    code, report = check(capsys, example_repo)
    [finding] = found(report, "substitution-")
    assert (finding["code"], finding["severity"]) == ("substitution-source-missing", "warning")
    assert re.search(r"ConfigMap flux-system/absent.*OTHER", finding["message"])


def test_every_tier_code_is_in_the_readme_table() -> None:
    from bot import substitution, tiers

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    for code in (*tiers.CODES, *substitution.CODES):
        assert f"| `{code}` |" in readme, code
