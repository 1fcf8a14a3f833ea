"""ALiBi: attention with linear biases (Press, Smith & Lewis 2022).

No position enters the queries, keys or values. Instead each head c adds
``-s_c * |i - j|`` to the score of query i and key j: a penalty that grows
linearly with distance, steeper in some heads than in others. For h heads
with h a power of two, the slopes are the geometric sequence
``2^(-8/h), 2^(-16/h), ..., 2^(-8)`` (for 8 heads: 1/2, 1/4, ..., 1/256).
For other h, the authors' reference code takes the 2^a slopes of the
largest power of two 2^a below h, then the first h - 2^a of every other
slope of the sequence for 2^(a+1) heads (for h = 6 these are 1/2, above
every slope already taken, and 1/8, between 1/4 and 1/16).
"""

from __future__ import annotations

import math

import torch

from . import _validate

__all__ = [
    "alibi_slopes",
    "alibi_bias",
]


def _power_of_two_slopes(count: int) -> list[float]:
    """2^(-8(c+1)/count) for heads c = 0 .. count - 1."""
    return [2.0 ** (-8.0 * (c + 1) / count) for c in range(count)]


def alibi_slopes(num_heads: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """(num_heads,) the slope s_c of each head c = 0 .. h - 1, in the authors' order.

    For a power of two h: s_c = 2^(-8(c+1)/h), largest first. Otherwise, with
    p = 2^floor(log2 h): the p slopes for p heads, then slopes 1, 3, 5, ...
    (counting from 1) of the sequence for 2p heads, h - p of them; so the
    list is not sorted (for h = 6: 1/4, 1/16, 1/64, 1/256, then 1/2, 1/8).
    """
    num_heads = _validate.positive_int("num_heads", num_heads)
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating-point torch.dtype, got {dtype!r}")
    p = 2 ** int(math.floor(math.log2(num_heads)))
    slopes = _power_of_two_slopes(p)
    if p < num_heads:
        slopes += _power_of_two_slopes(2 * p)[0::2][: num_heads - p]
    return torch.tensor(slopes, dtype=dtype)


def alibi_bias(
    num_positions: int, num_heads: int, dtype: torch.dtype = torch.float32
) -> torch.Tensor:
    """(num_heads, num_positions, num_positions) biases ``-s_c * |i - j|``.

    Row i is the query, column j the key; add it to each head's scores
    before the softmax. A causal model masks j > i anyway, so only the
    lower triangle, ``-s_c * (i - j)``, matters there.
    """
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating-point torch.dtype, got {dtype!r}")
    num_positions = _validate.positive_int("num_positions", num_positions)
    slopes = alibi_slopes(num_heads, dtype=torch.float64)  # (heads,)
    i = torch.arange(num_positions, dtype=torch.float64)
    distance = (i[:, None] - i[None, :]).abs()  # (queries, keys)
    # 0 - x rather than -x, so the diagonal holds 0.0, not -0.0.
    return (0.0 - slopes[:, None, None] * distance[None]).to(dtype)  # (heads, queries, keys)
