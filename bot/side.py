"""Side branches: a wave's non-gating Flux Kustomization (docs/design.md §5.1).

Wave N's side branch (`apps-wave-<N>-side`, directory `apps/wave-<N>-side`) holds the units listed
in `non_gating`. It has the same template and the same `dependsOn` as wave N, so it starts after
everything its units need, but no Kustomization depends on it: its health gates nobody.

A `Slot` says which of the app tier's Flux Kustomizations applies something: an `int` for a
(gating) wave, a `Side` for a side branch. A `Side` orders right after its wave and before the
next one, also against plain ints, so sorted slots read 0, 1, 1-side, 2.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

SIDE_SUFFIX = "-side"
"""What a side branch's directory adds to its wave's directory name: `wave-1` -> `wave-1-side`."""


@dataclass(frozen=True, eq=True)
class Side:
    """Wave `wave`'s side branch."""

    wave: int

    def __str__(self) -> str:
        return f"{self.wave}{SIDE_SUFFIX}"

    def _cmp(self, other: object) -> tuple[tuple[int, int], tuple[int, int]] | None:
        if isinstance(other, (int, Side)) and not isinstance(other, bool):
            return (self.wave, 1), order(other)
        return None

    def __lt__(self, other: object) -> bool:
        pair = self._cmp(other)
        return NotImplemented if pair is None else pair[0] < pair[1]

    def __le__(self, other: object) -> bool:
        pair = self._cmp(other)
        return NotImplemented if pair is None else pair[0] <= pair[1]

    def __gt__(self, other: object) -> bool:
        pair = self._cmp(other)
        return NotImplemented if pair is None else pair[0] > pair[1]

    def __ge__(self, other: object) -> bool:
        pair = self._cmp(other)
        return NotImplemented if pair is None else pair[0] >= pair[1]


Slot: TypeAlias = int | Side


def order(slot: Slot) -> tuple[int, int]:
    """Sort key: wave N, then its side branch, then wave N+1."""
    return (slot.wave, 1) if isinstance(slot, Side) else (slot, 0)


def number(slot: Slot) -> int:
    """The wave number: a side branch shares its wave's."""
    return slot.wave if isinstance(slot, Side) else slot


def is_side(slot: Slot | None) -> bool:
    return isinstance(slot, Side)


def label(slot: Slot) -> str:
    """`wave 2`, `wave 1-side`: how messages name a slot."""
    return f"wave {slot}"


def ready_before(new: Slot, old: Slot) -> bool:
    """Whether `new`'s Kustomization is ready at a revision before `old`'s reconciles it.

    That holds when `old` depends on `new` through the dependsOn chain: wave N and its side branch
    both depend on wave N-1, hence on every gating wave below N; nothing depends on a side branch.
    So an object moving from `old` to `new` is adopted before `old` prunes it exactly when this holds.
    """
    return not isinstance(new, Side) and new < number(old)
