"""bot.checks.imageauto: every wave and side directory stays under some ImageUpdateAutomation's update path."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.checks.imageauto import automations
from bot.cli import main
from bot.config import Config
from bot.model import Finding
from bot.plan import make_plan
from bot.repo.worktree import FsTree

from conftest import deployment, service, write_files


def automation(path: str | None, name: str = "apps", api: str = "image.toolkit.fluxcd.io/v1beta2") -> str:
    update = f"  update:\n    strategy: Setters\n    path: {path}\n" if path is not None else ""
    return (f"apiVersion: {api}\nkind: ImageUpdateAutomation\nmetadata:\n  name: {name}\n  namespace: flux-system\n"
            "spec:\n  interval: 30m\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n"
            "  git:\n    commit:\n      author:\n        email: flux@example.com\n        name: flux\n" + update)


IUA = "platform/image-automation/image-update-automation.yaml"


def _repo(tmp_path: Path, files: dict[str, str], config: str = "") -> Path:
    write_files(tmp_path, {
        ".wave-bot.yaml": config,
        "catalog/web.yaml": service("web", "api"),
        "catalog/api.yaml": service("api"),
        "catalog/runner.yaml": service("runner"),
        "apps/web.yaml": deployment("web"),
        "apps/api.yaml": deployment("api"),
        "apps/runner.yaml": deployment("runner"),
        **files,
    })
    return tmp_path


def _findings(repo: Path, config: Config | None = None) -> list[Finding]:
    plan = make_plan(FsTree(str(repo)), config or Config())
    return [f for f in plan.findings if f.code == "image-automation-uncovered"]


@pytest.mark.parametrize("path", ["./apps", "apps", "./apps/", "./", ".", None])
def test_a_path_above_every_wave_directory_is_fine(tmp_path: Path, path: str | None) -> None:
    assert _findings(_repo(tmp_path, {IUA: automation(path)})) == []


def test_a_path_naming_one_wave_misses_the_others_and_says_how_to_fix(tmp_path: Path) -> None:
    found = _findings(_repo(tmp_path, {IUA: automation("./apps/wave-0")}))
    assert len(found) == 1
    assert found[0].severity == "warning" and found[0].path == IUA and found[0].line == 18
    assert found[0].message == (
        f"{IUA}:18: the ImageUpdateAutomation flux-system/apps updates only what is under spec.update.path: "
        "./apps/wave-0, which does not cover apps/wave-1/: the $imagepolicy markers of the manifests there are "
        "never updated. Set spec.update.path to ./apps, which holds every wave directory")
    assert found[0].fix == f"# {IUA}: ImageUpdateAutomation flux-system/apps\nspec:\n  update:\n    path: ./apps\n"
    assert found[0].resource == "image.toolkit.fluxcd.io/ImageUpdateAutomation flux-system/apps"


def test_side_directories_count_too(tmp_path: Path) -> None:
    # web (wave 1) is the only unit above wave 0, so the layout is wave 0 and wave 1's side branch;
    # a second automation scanning apps/wave-1 does not cover apps/wave-1-side
    files = {IUA: automation("./apps/wave-0"), "platform/more.yaml": automation("./apps/wave-1", name="more")}
    found = _findings(_repo(tmp_path, files, "non_gating: [web]\n"), Config(non_gating=("web",)))
    assert {f.resource.rsplit(" ", 1)[1]: f.message.split("does not cover ", 1)[1].split(":", 1)[0]  # type: ignore[union-attr]
            for f in found} == {"flux-system/apps": "apps/wave-1-side/",
                                "flux-system/more": "apps/wave-0/, apps/wave-1-side/"}


def test_apps_dir_moved_away_from_the_scanned_path(tmp_path: Path) -> None:
    write_files(tmp_path, {
        "catalog/web.yaml": service("web"),
        "workloads/web.yaml": deployment("web"),
        IUA: automation("./apps"),
    })
    found = _findings(tmp_path, Config(apps_dir="workloads"))
    assert len(found) == 1 and "does not cover workloads/wave-0/" in found[0].message
    assert "Set spec.update.path to ./, which" in found[0].message  # the old scope kept, the new one added


def test_no_finding_when_another_automation_covers_the_apps(tmp_path: Path) -> None:
    files = {IUA: automation("./apps"), "platform/platform-images.yaml": automation("./platform", name="platform")}
    assert _findings(_repo(tmp_path, files)) == []


def test_only_flux_image_automations_count(tmp_path: Path) -> None:
    files = {
        "platform/other.yaml": automation("./apps/wave-0", api="example.com/v1"),  # another group's kind
        "platform/notes.yaml": "# ImageUpdateAutomation is mentioned here\nkey: value\n",
        "platform/broken.yaml": "kind: ImageUpdateAutomation\n  bad: [\n",
        "apps/iua.yaml": automation("./apps/wave-0"),  # app files are not searched
    }
    repo = _repo(tmp_path, files)
    assert automations(FsTree(str(repo)), Config()) == []


def test_check_reports_it_in_json_and_passes_once_fixed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = _repo(tmp_path, {IUA: automation("./apps/wave-0")})
    assert main(["apply", str(repo)]) == 0
    capsys.readouterr()
    assert main(["check", "--format", "json", str(repo)]) == 0  # a warning does not fail check
    findings = json.loads(capsys.readouterr().out)["findings"]
    assert [f["code"] for f in findings if f["severity"] == "warning"] == ["image-automation-uncovered"]
    (repo / IUA).write_text(automation("./apps"))
    assert main(["check", "--format", "json", str(repo)]) == 0
    assert "image-automation-uncovered" not in capsys.readouterr().out
