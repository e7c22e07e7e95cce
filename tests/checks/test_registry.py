"""checks/registry.py: the checks of the planned layout, each naming only declared codes."""
from __future__ import annotations

import re

from bot.checks.codes import BY_NAME
from bot.checks.registry import CHECKS
from bot.config import Config
from bot.resid import ResourceId


def test_every_registered_check_names_the_codes_it_emits_and_each_is_declared() -> None:
    for name, check in CHECKS.items():
        codes = re.findall(r"[a-z]+(?:-[a-z]+)+", check.__doc__ or "")
        assert codes, f"{name}: its docstring names no code"
        assert set(codes) <= set(BY_NAME), (name, sorted(set(codes) - set(BY_NAME)))


def test_each_review_producer_emits_only_the_codes_it_registers() -> None:
    from bot.checks import review
    from bot.checks.codes import BY_NAME
    from bot.checks.registry import REVIEW, ReviewContext
    from bot.flux.applied import FluxModel

    plex_pvc = review.Built(ResourceId("", "PersistentVolumeClaim", "media", "plex", "v1"), "a.yaml", 1)
    parent = review.Unit("c", "flux-system", "apps", "apps.yaml", 1)
    plex = review.Unit("c", "flux-system", "plex", "plex.yaml", 1, parent="flux-system/apps", objects=(plex_pvc,),
                       depends_on=("flux-system/apps", "flux-system/nope"), ready_exprs=("flux-system/apps",))
    ctx = ReviewContext(Config(), FluxModel(()), [parent], False, FluxModel(()), [parent, plex], False)
    emitted = set()
    for name, producer in REVIEW.items():
        assert set(producer.codes) <= set(BY_NAME), name
        for context in (ctx, ReviewContext(Config(), FluxModel(()), [parent, plex], False)):
            found = {f.code for f in producer(context)}
            assert found <= set(producer.codes), name
            emitted |= found
    assert {"resource-removed", "depends-on-missing", "depends-on-not-gating", "ready-expr-replaces-readiness"} \
        <= emitted
