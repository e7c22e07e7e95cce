"""What wave 0 depends on when the config does not say: the repository's own wiring.

`root_depends_on` defaults to `platform-config`, the tier `examples/homelab` has. A repository adopting waves has
its own: the legacy `apps` Kustomization depends on what its platform tier is called there
(`infrastructure`, say). Rewiring wave 0 to a Kustomization the repository does not have would
leave it never Ready, and every later wave stalled behind it; so while the wave template comes
from the repository (its `apps-wave-0.yaml`, or the legacy Kustomization during the cutover),
wave 0 keeps what that one depends on.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from bot.config import Config
from bot.flux.inventory import FluxKustomization


def keep_root(config: Config, flux: Sequence[FluxKustomization], template_source: str) -> Config:
    """`config` with `root_depends_on` taken from the Flux Kustomization the wave template comes
    from, when the config sets neither `root_depends_on` nor `kustomization_template`."""
    if config.where("root_depends_on")[0] is not None or config.kustomization_template is not None:
        return config
    source = next((k for k in flux if k.path == template_source), None)
    if source is None or source.depends_on == config.root_depends_on:
        return config
    return dataclasses.replace(config, root_depends_on=source.depends_on)
