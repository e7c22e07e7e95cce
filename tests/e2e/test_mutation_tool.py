"""tools/mutation.py: its scope (modules, related tests, samples) without running mutmut."""
from __future__ import annotations

import subprocess
import sys
import tomllib
from fnmatch import fnmatch
from pathlib import Path

import pytest

from conftest import PROJECT

sys.path.insert(0, str(PROJECT / "tools"))
import mutation  # noqa: E402


def test_every_safety_module_and_related_test_exists() -> None:
    for module, tests in mutation.RELATED.items():
        assert (PROJECT / mutation.source(module)).is_file(), module
        for test in tests:
            assert (PROJECT / "tests" / test).is_file(), (module, test)


def test_a_sample_keeps_about_that_share_of_mutants_of_the_module_only() -> None:
    names = [f"bot.kustomize.patching.x__apply_op__mutmut_{n}" for n in range(1, 201)]
    for percent in (10, 20, 50, 100):
        globs = mutation.patterns(["kustomize.patching"], percent)
        assert sum(any(fnmatch(n, g) for g in globs) for n in names) == 2 * percent
        assert not any(fnmatch("bot.flux.ownership.x_may_prune__mutmut_10", g) for g in globs)


def test_a_function_scope_keeps_that_function_and_its_namesake_methods_only() -> None:
    names = [f"bot.kustomize.files.{f}__mutmut_{n}" for n in range(1, 21)
             for f in ("x_read_bytes", "x__load", "x_read_kustomization", "xǁKustomizationǁline", "xǁAdditionsǁline",
                       "x_outline")]
    globs = mutation.patterns(["kustomize.files"], 20, ["read_bytes", "line"])
    kept = {n.rsplit("__mutmut_", 1)[0] for n in names if any(fnmatch(n, g) for g in globs)}
    assert kept == {"bot.kustomize.files.x_read_bytes", "bot.kustomize.files.xǁKustomizationǁline",
                    "bot.kustomize.files.xǁAdditionsǁline"}
    assert sum(any(fnmatch(n, g) for g in globs) for n in names if "read_bytes" in n) == 4  # 20% of 20


def test_an_unknown_module_is_a_usage_error_listing_the_modules() -> None:
    result = subprocess.run([sys.executable, str(PROJECT / "tools/mutation.py"), "plan"], capture_output=True,
                            text=True)
    assert result.returncode == 2
    assert "not a safety module: plan (choose from checks.deletes, checks.removal, checks.cutover," in result.stderr


def test_prepare_copies_the_tree_and_scopes_mutmut_to_the_modules_and_their_tests(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mutation, "WORK", tmp_path / "run")
    mutation.prepare(["fixes.protect", "checks.acceptance"])
    assert (tmp_path / "run" / "bot" / "fixes" / "protect.py").is_file()
    settings = tomllib.loads((tmp_path / "run" / "pyproject.toml").read_text())["tool"]["mutmut"]
    assert settings["only_mutate"] == ["bot/fixes/protect.py", "bot/checks/acceptance.py"]
    assert settings["pytest_add_cli_args_test_selection"] == [
        "tests/checks/test_accept_command.py", "tests/checks/test_acceptance.py", "tests/fixes/test_protect.py",
        "tests/fixes/test_stepping.py", "tests/report/test_markdown.py"]
    assert settings["source_paths"] == ["bot"]


def test_the_copy_finds_the_real_repositories_beside_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Without ../shared beside the copy, every real-repository test skips there and its mutants survive.
    if not (PROJECT.parent / "shared" / "realrepos").is_dir():
        pytest.skip("no ../shared/realrepos beside this checkout")
    monkeypatch.setattr(mutation, "WORK", tmp_path / "run")
    mutation.prepare(["checks.tiers"])
    assert sorted(p.name for p in (tmp_path / "shared" / "realrepos").iterdir()) == sorted(
        p.name for p in (PROJECT.parent / "shared" / "realrepos").iterdir())
