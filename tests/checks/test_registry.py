"""checks/registry.py: the checks of the planned layout, each naming only declared codes."""
from __future__ import annotations

import re

from bot.checks.codes import BY_NAME
from bot.checks.registry import CHECKS


def test_every_registered_check_names_the_codes_it_emits_and_each_is_declared() -> None:
    for name, check in CHECKS.items():
        codes = re.findall(r"[a-z]+(?:-[a-z]+)+", check.__doc__ or "")
        assert codes, f"{name}: its docstring names no code"
        assert set(codes) <= set(BY_NAME), (name, sorted(set(codes) - set(BY_NAME)))
