"""Fresh cases for checkers whose book cases are fixed numbers, not random tensors.

A hidden test (``report_for(check, fn, seed=k)`` with k > 0) must not repeat the
book's cases, or a function that returns their expected values passes it. A
checker whose cases are sizes, lengths or dtypes asks :func:`_draws` for a
:class:`_Draw`: None under seed 0, so the book's cases stay as they are, and
otherwise a source of small random choices from ``_core._generator``. The
checker keeps the number, order and kind of its cases and computes each
expected value with its own reference, as for the book's cases.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import torch

from . import _core

T = TypeVar("T")


class _Draw:
    """Random whole numbers and choices from one generator."""

    def __init__(self, generator: torch.Generator):
        self.generator = generator

    def int(self, low: int, high: int, avoid: Sequence[int] = ()) -> int:
        """A whole number from low to high, both included, that is not in ``avoid``."""
        allowed = [k for k in range(low, high + 1) if k not in avoid]
        return self.choice(allowed)

    def choice(self, options: Sequence[T]) -> T:
        """One of ``options``."""
        if not options:
            raise ValueError("options must not be empty")
        return options[int(torch.randint(len(options), (1,), generator=self.generator))]

    def ints(self, count: int, low: int, high: int) -> list[int]:
        """``count`` whole numbers from low to high, both included."""
        return [self.int(low, high) for _ in range(count)]

    def permutation(self, items: Sequence[T]) -> list[T]:
        """``items`` in a random order."""
        order = torch.randperm(len(items), generator=self.generator).tolist()
        return [items[i] for i in order]

    def uniform(self, low: float, high: float, shape: tuple[int, ...]) -> torch.Tensor:
        """A float32 tensor of numbers drawn uniformly from [low, high)."""
        return low + (high - low) * torch.rand(shape, generator=self.generator)


def _draws(salt: int) -> _Draw | None:
    """None for the book's cases (seed 0), else a :class:`_Draw` for the fresh ones.

    ``salt`` tells one checker's draws from another's under the same seed.
    """
    return None if _core._fresh_seed == 0 else _Draw(_core._generator(salt))
