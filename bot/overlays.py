"""The overlay checks and fixer under their first name; they live in smaller modules now:
`bot.evalpaths` (which directories are evaluated), `bot.decryption` (what counts as decrypted),
`bot.overlaycheck` (the findings), `bot.overlayfix` (`--fix-overlays`) and `bot.yamledit` (the
line-preserving YAML editor)."""
from __future__ import annotations

from bot.decryption import decryption_problem
from bot.evalpaths import discover_overlays
from bot.overlaycheck import base_findings, decryption_findings, new_deepest_wave_findings
from bot.overlayfix import Edit, fix_overlays, snippet
from bot.yamledit import insert_item, item_text, substitute

__all__ = [
    "Edit", "base_findings", "decryption_findings", "decryption_problem", "discover_overlays", "fix_overlays",
    "insert_item", "item_text", "new_deepest_wave_findings", "snippet", "substitute",
]
