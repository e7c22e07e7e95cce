"""Every input error: a clear message naming file and line, exit 2, and a work tree left exactly as it was."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from bot.cli import main

from conftest import EXAMPLE, deployment, service, snapshot

BASE = {
    "catalog/web.yaml": service("web", "api"),
    "catalog/api.yaml": service("api", "api-db"),
    "apps/web.yaml": deployment("web"),
    "apps/api.yaml": deployment("api"),
}

CASES: dict[str, tuple[dict[str, str], list[str]]] = {
    "yaml-syntax": (
        {"catalog/api.yaml": "metadata:\n  name: api\nspec:\n  dependencies: [api-db\n"},
        ["catalog/api.yaml:5:", "invalid YAML", "flow sequence"],
    ),
    "not-a-mapping": (
        {"catalog/api.yaml": "- api\n- api-db\n"},
        ["catalog/api.yaml:1:", "is not a mapping"],
    ),
    "missing-name": (
        {"catalog/api.yaml": "kind: ServiceDefinition\nspec:\n  dependencies: [{to: api-db}]\n"},
        ["catalog/api.yaml:1:", "has no name", "metadata.name"],
    ),
    "duplicate-name": (
        {"catalog/api-copy.yaml": service("api")},
        ["catalog/api.yaml:4:", "declares 'api', already declared in catalog/api-copy.yaml:4"],
    ),
    "name-not-dns": (
        {"catalog/api.yaml": "metadata:\n  name: API_Server\n"},
        ["catalog/api.yaml:2:", "'API_Server' is not a DNS-1123 label"],
    ),
    "name-path-trick": (
        {"catalog/api.yaml": "metadata:\n  name: ../../etc/x\n"},
        ["catalog/api.yaml:2:", "'../../etc/x' is not a DNS-1123 label"],
    ),
    "self-dependency": (
        {"catalog/api.yaml": service("api", "api-db", "api")},
        ["catalog/api.yaml:8:", "'api' depends on itself"],
    ),
    "unknown-dependency": (
        {"catalog/web.yaml": service("web", "apii")},
        ["catalog/web.yaml:7:", "'web' depends on 'apii', which has no ServiceDefinition", "did you mean 'api'?",
         "leaf_patterns"],
    ),
    "leaf-typo": (
        {"catalog/web.yaml": service("web", "web-dbb")},
        ["catalog/web.yaml:7:", "'web' depends on 'web-dbb', which has no ServiceDefinition (did you mean 'web-db'?)"],
    ),
    "nested-config-key": (
        {".wave-bot.yaml": "extra_units:\n  - name: cron\n    anchor: web\n    abov: true\n"},
        [".wave-bot.yaml:4:", "unknown key 'abov' in extra_units (did you mean 'above'?)"],
    ),
    "config-dir-value": (
        {".wave-bot.yaml": "# layout\ncatalog_dir: catalogue\n"},
        [".wave-bot.yaml:2:", "catalog_dir is 'catalogue', and there is no such directory (did you mean 'catalog'?)",
         "hint: fix catalog_dir in .wave-bot.yaml, or create catalogue/"],
    ),
    "config-base-dir-value": (
        {".wave-bot.yaml": "base_dir: clusters/bse\n", "clusters/base/kustomization.yaml": "resources: []\n"},
        [".wave-bot.yaml:1:",
         "base_dir is 'clusters/bse', and there is no such directory (did you mean 'clusters/base'?)"],
    ),
    "cycle": (
        {"catalog/api.yaml": service("api", "worker"), "catalog/worker.yaml": service("worker", "web")},
        ["catalog/api.yaml:7:", "dependency cycle: api -> worker -> web -> api; its dependencies: "
         "api -> worker (catalog/api.yaml:7), worker -> web (catalog/worker.yaml:7), web -> api (catalog/web.yaml:7)"],
    ),
    "repeated-config-key": (
        {".wave-bot.yaml": "non_gating:\n  - web\nnon_gating: [cron]\n"},
        [".wave-bot.yaml:3:", 'mapping key "non_gating" already defined at line 1',
         'hint: line 1 gives it "- web", line 3 gives it "[cron]": keep the key once, merge the value of line 3 '
         "into line 1's"],
    ),
    "bad-dependency-item": (
        {"catalog/web.yaml": "metadata:\n  name: web\nspec:\n  dependencies:\n    - to: [api]\n"},
        ["catalog/web.yaml:5:", "dependency 1 of 'web' must name a service"],
    ),
    "multi-document-catalog-file": (
        {"catalog/web.yaml": service("web") + "---\n" + service("web2")},
        ["catalog/web.yaml:6:", "holds 2 YAML documents; expected one"],
    ),
    "python-tag": (
        {"catalog/web.yaml": "metadata:\n  name: !!python/object:os.system web\n"},
        ["catalog/web.yaml:2:", "unsupported YAML tag"],
    ),
    "binary-file": (
        {"catalog/web.yaml": "metadata:\n  name: web\n\udcff\n"},
        ["catalog/web.yaml", "not a UTF-8 text file"],
    ),
    "config-unknown-key": (
        {".wave-bot.yaml": "catalog_dir: catalog\nleaf_pattern: ['*-db']\n"},
        [".wave-bot.yaml:2:", "unknown key 'leaf_pattern' (did you mean 'leaf_patterns'?)"],
    ),
    "config-wrong-type": (
        {".wave-bot.yaml": "leaf_patterns: '*-db'\n"},
        [".wave-bot.yaml:1:", "'leaf_patterns' must be a list of strings"],
    ),
    "config-path-outside": (
        {".wave-bot.yaml": "apps_dir: ../elsewhere\n"},
        [".wave-bot.yaml:1:", "'apps_dir' must be a relative path inside the repository"],
    ),
    "config-path-root": (
        {".wave-bot.yaml": "apps_dir: apps\nbase_dir: .\n"},
        [".wave-bot.yaml:2:", "'base_dir' must be a directory below the repository root, not the root ('.')"],
    ),
    "config-overlay-root": (
        {".wave-bot.yaml": "overlays: [clusters/dev, .]\n"},
        [".wave-bot.yaml:1:", "'overlays' must be a list of directories inside the repository, below its root"],
    ),
    "config-bad-wave-name": (
        {".wave-bot.yaml": "wave_name: 'Apps_{n}'\n"},
        [".wave-bot.yaml:1:", "'wave_name' must contain '{n}' once and give a DNS-1123 name"],
    ),
    "extra-unit-unknown-anchor": (
        {".wave-bot.yaml": "extra_units:\n  - name: runner\n    anchor: wbe\n"},
        [".wave-bot.yaml:2:", "extra unit 'runner' is anchored to 'wbe', which is no node", "did you mean 'web'?"],
    ),
    "extra-unit-files-path": (  # a unit may be a directory, named as it is: no path
        {".wave-bot.yaml": "extra_units:\n  - name: runner\n    anchor: web\n    files: [runner.yaml, ci/runner]\n"},
        [".wave-bot.yaml:2:", "'extra_units[runner].files' must be a list of file or directory names, without a path "
         "(no '/')"],
    ),
    "non-gating-unit-others-need": (
        {".wave-bot.yaml": "non_gating:\n  - api\n"},
        [".wave-bot.yaml:2:", "non_gating lists 'api', but 1 unit(s) depend on it (dependency paths: web -> api)"],
    ),
    "non-gating-unknown-unit": (
        {".wave-bot.yaml": "non_gating: [wbe]\n"},
        [".wave-bot.yaml:1:", "non_gating lists 'wbe', which is no unit (did you mean 'web'?)"],
    ),
    "template-lacks-source": (
        {".wave-bot.yaml": "kustomization_template:\n  spec:\n    interval: 5m\n    prune: true\n"},
        [".wave-bot.yaml", "lacks spec.sourceRef"],
    ),
    "template-sets-path": (
        {".wave-bot.yaml": "kustomization_template:\n  spec:\n    path: ./apps\n"},
        [".wave-bot.yaml:1:", "kustomization_template sets spec.path"],
    ),
    "two-files-one-target": (
        {"apps/wave-1/web.yaml": deployment("web")},
        ["both apps/web.yaml and apps/wave-1/web.yaml belong at apps/wave-2/web.yaml"],
    ),
}


def _encode(files: dict[str, str]) -> dict[str, str | bytes]:
    # Lone surrogates stand for raw bytes that are not UTF-8.
    return {k: v.encode("utf-8", "surrogateescape") if "\udcff" in v else v for k, v in files.items()}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("command", ["plan", "apply", "check"])
def test_input_error_is_clear_exits_2_and_changes_nothing(
    case: str, command: str, make_repo: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    files, expected = CASES[case]
    repo = make_repo(_encode({**BASE, **files}))
    before = snapshot(repo)

    code = main([command, str(repo)])

    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith("wave-bot: error: ")
    for text in expected:
        assert text in err
    assert "Traceback" not in err
    assert snapshot(repo) == before


def test_missing_catalog_directory_in_waves_mode_says_where_to_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / ".wave-bot.yaml").write_text("mode: waves\n")
    assert main(["plan", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "no catalog directory 'catalog'" in err
    assert "set catalog_dir in .wave-bot.yaml" in err


def test_path_that_is_not_a_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", str(tmp_path / "nope")]) == 2
    assert "is not a directory" in capsys.readouterr().err


@pytest.mark.parametrize("case", sorted(CASES))
def test_json_input_error_is_one_json_document_on_stdout(
    case: str, make_repo: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    files, expected = CASES[case]
    repo = make_repo(_encode({**BASE, **files}))
    code = main(["check", str(repo), "--format", "json"])
    out = capsys.readouterr()
    assert code == 2
    error = json.loads(out.out)["error"]
    assert set(error) == {"message", "path", "line", "hint"}
    assert out.err.startswith("wave-bot: error: ")  # the person at the terminal still reads text
    where = f"{error['path']}:{error['line']}: " if error["line"] else f"{error['path']}: " if error["path"] else ""
    assert out.err.splitlines()[0] == f"wave-bot: error: {where}{error['message']}"
    assert error["hint"] is None or f"hint: {error['hint']}" in out.err
    for text in expected:
        assert text in out.err


def test_a_cycle_in_json_names_file_and_line(
    make_repo: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_repo(_encode({**BASE, **CASES["cycle"][0]}))
    assert main(["plan", str(repo), "--format", "json"]) == 2
    error = json.loads(capsys.readouterr().out)["error"]
    assert (error["path"], error["line"]) == ("catalog/api.yaml", 7)
    assert error["message"].startswith("dependency cycle: api -> worker -> web -> api")


def test_run_outside_actions_says_what_it_is_and_what_to_run(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("GITHUB_ACTIONS", "GITEA_ACTIONS", "GITHUB_EVENT_PATH"):
        monkeypatch.delenv(name, raising=False)
    assert main(["run"]) == 2
    err = capsys.readouterr().err
    assert "`wave-bot run` is the GitHub/Gitea Actions entrypoint" in err
    assert "run `wave-bot plan`" in err and "`wave-bot check`" in err
    assert "no token" not in err


def test_a_reader_that_goes_away_is_not_an_internal_error(tmp_path: Path) -> None:
    """`wave-bot plan | head -1`: the pipe closes before wave-bot writes; that is no bug report."""
    read, write = os.pipe()
    os.close(read)  # the reader is gone before wave-bot writes anything
    result = subprocess.run([sys.executable, "-m", "bot", "plan", str(EXAMPLE)], stdout=write,
                            stderr=subprocess.PIPE, text=True)
    os.close(write)
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 141
