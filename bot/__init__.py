"""flux-wave-bot: keeps a Flux GitOps repository's app tier in dependency-ordered waves."""

__version__ = "0.1.0"
__all__ = ["__version__"]
