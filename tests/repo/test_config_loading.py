"""`config.load_config`: the repository's config file, read through a `Tree`."""
from __future__ import annotations

from pathlib import Path

import pytest

from bot.config import Config, load_config
from bot.errors import WaveBotError
from bot.repo.worktree import FsTree

from conftest import write_files


def test_no_config_file_means_the_defaults(tmp_path: Path) -> None:
    assert load_config(FsTree(str(tmp_path))) == Config()


def test_the_default_file_and_a_named_one_are_read(tmp_path: Path) -> None:
    write_files(tmp_path, {".wave-bot.yaml": "apps_dir: workloads\n", "ci/wave-bot.yaml": "apps_dir: other\n"})
    assert load_config(FsTree(str(tmp_path))).apps_dir == "workloads"
    assert load_config(FsTree(str(tmp_path)), "ci/wave-bot.yaml").apps_dir == "other"


def test_a_named_file_that_is_missing_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(WaveBotError, match="config file not found in the repository") as caught:
        load_config(FsTree(str(tmp_path)), "ci/wave-bot.yaml")
    assert caught.value.path == "ci/wave-bot.yaml" and caught.value.exit_code == 2
