"""The repeated-segment task of the induction-heads chapter (re-exported by
:mod:`attnbook.induction`): :class:`RepeatBatch` and :func:`make_repeat_batch`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from . import _validate

__all__ = [
    "RepeatBatch",
    "make_repeat_batch",
]


# ---------------------------------------------------------------- the task


@dataclass
class RepeatBatch:
    """A batch of the repeated-segment task.

    Attributes:
        tokens: (batch, length) int64 token ids.
        first: (batch,) start of the first copy of the segment.
        second: (batch,) start of the second copy (``first + segment + gap``).
        segment: the segment's length.
    """

    tokens: torch.Tensor
    first: torch.Tensor
    second: torch.Tensor
    segment: int

    @property
    def gap(self) -> torch.Tensor:
        """(batch,) tokens between the end of the first copy and the second."""
        return self.second - self.first - self.segment

    def copy_positions(self) -> torch.Tensor:
        """(batch, segment - 1) positions whose *next* token is predictable by copying.

        The query at ``second + j`` (j = 0 .. segment - 2) predicts the token at
        ``second + j + 1``, which equals the token at ``first + j + 1``. (The
        first token of the second copy cannot be known in advance.)
        """
        offsets = torch.arange(self.segment - 1, device=self.tokens.device)
        return self.second.unsqueeze(1) + offsets  # (batch, segment - 1)


def make_repeat_batch(
    batch: int,
    length: int = 40,
    segment: int = 12,
    vocab: int = 64,
    max_gap: int = 12,
    min_gap: int = 0,
    seed: int | torch.Generator = 0,
) -> RepeatBatch:
    """Draw ``batch`` sequences of ``length`` random tokens with one segment repeated.

    Each sequence is uniform random tokens from ``range(vocab)``; a segment of
    ``segment`` distinct tokens is written at a random start ``first`` and again
    at ``second = first + segment + gap``, with ``gap`` uniform in
    ``[min_gap, max_gap]`` and ``first`` uniform over the starts that fit. A
    fixed gap (``min_gap == max_gap``) puts the source of every copied token at
    a fixed distance, which a single layer can find by position alone.

    Args:
        seed: an integer seed or a ``torch.Generator`` (advanced in place).

    Returns:
        A :class:`RepeatBatch` (tokens (batch, length) int64).
    """
    batch = _validate.positive_int("batch", batch)
    length = _validate.positive_int("length", length)
    vocab = _validate.positive_int("vocab", vocab)
    segment = _validate.positive_int("segment", segment)
    if segment < 2:
        raise ValueError(f"segment must be >= 2 (one token to cue, one to copy), got {segment}")
    if segment > vocab:
        raise ValueError(
            f"segment must be <= vocab (its tokens are distinct), got segment={segment}, "
            f"vocab={vocab}"
        )
    min_gap = _validate.nonnegative_int("min_gap", min_gap)
    max_gap = _validate.nonnegative_int("max_gap", max_gap)
    if min_gap > max_gap:
        raise ValueError(f"min_gap must be <= max_gap, got min_gap={min_gap}, max_gap={max_gap}")
    if 2 * segment + max_gap > length:
        raise ValueError(
            f"length must hold both copies and the largest gap (2 * segment + max_gap = "
            f"{2 * segment + max_gap}), got length={length}"
        )
    g = _validate.generator("seed", seed)
    tokens = torch.randint(vocab, (batch, length), generator=g)
    gaps = torch.randint(min_gap, max_gap + 1, (batch,), generator=g)
    room = length - 2 * segment - gaps + 1  # number of possible starts, >= 1
    first = (torch.rand(batch, generator=g) * room).long().clamp(max=room - 1)
    # Distinct tokens in the segment: the first k of a random permutation.
    segments = torch.rand(batch, vocab, generator=g).argsort(dim=1)[:, :segment]
    second = first + segment + gaps
    rows = torch.arange(batch).unsqueeze(1)
    offsets = torch.arange(segment)
    tokens[rows, first.unsqueeze(1) + offsets] = segments
    tokens[rows, second.unsqueeze(1) + offsets] = segments
    return RepeatBatch(tokens=tokens, first=first, second=second, segment=segment)
