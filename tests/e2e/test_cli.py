from __future__ import annotations

import gc
from pathlib import Path

import pytest

from bot.cli import main

EXAMPLE = Path(__file__).resolve().parent.parent.parent / "examples" / "homelab"


def test_main_gives_back_the_garbage_collector_schedule_it_found(capsys: pytest.CaptureFixture[str]) -> None:
    # main() runs in-process for pre-commit-style callers and the benchmark: the sparser collection
    # schedule it uses for a plan must not outlive the call, whether it succeeds or fails.
    saved = gc.get_threshold()
    gc.set_threshold(900, 11, 12)
    try:
        assert main(["plan", str(EXAMPLE)]) in (0, 1)
        assert gc.get_threshold() == (900, 11, 12)
        assert main(["plan", str(EXAMPLE / "no-such-dir")]) == 2
        assert gc.get_threshold() == (900, 11, 12)
    finally:
        gc.set_threshold(*saved)
    capsys.readouterr()
