"""Inputs that catch stability slips in softmax-like exercises.

A softmax is the same for every shift of its scores in exact arithmetic, so a
shift that is not each row's maximum (0, a sum, a mean, none at all) passes
cases of scores near 0 and fails in float32 only where ``exp`` underflows to 0
(below x = -103) or overflows (beyond x = 88.7). Every softmax-like checker
therefore also runs, under every seed, on scores that all lie near -200 and on
large ones (40 to about 110). Queries and keys hold whole numbers and d is 4 or
16, so that sqrt(d) is exact and every order of summation gives the same scores.
"""

from __future__ import annotations

import math

import torch

#: The hint's first words, shared by the checkers.
UNDERFLOW = "exp underflows to 0 below -103 and overflows beyond 88.7 in float32"


def far_queries_keys(
    g: torch.Generator, batch: int, queries: int, keys: int, d: int, kind: str
) -> tuple[torch.Tensor, torch.Tensor]:
    """(batch, queries, d) queries and (batch, keys, d) keys, float32, whose scores
    q . k / sqrt(d) all lie near -200 (``kind="negative"``, within about 25), or
    (``kind="large"``) between 40 and 95 in example 0 and alternately near +90
    and -90 in the other examples."""
    if d not in (4, 16):
        raise ValueError(f"d must be 4 or 16 (sqrt(d) exact), got {d}")
    if kind not in ("negative", "large"):
        raise ValueError(f"kind must be 'negative' or 'large', got {kind!r}")
    root = math.isqrt(d)
    axis = torch.zeros(d)
    axis[int(torch.randint(d, (1,), generator=g))] = 1.0

    def jitter(n: int, size: int) -> torch.Tensor:
        return torch.randint(-size, size + 1, (batch, n, d), generator=g).float()

    if kind == "negative":  # q . k = -200 sqrt(d) + jitter
        return 20 * axis + jitter(queries, 1), -10 * root * axis + jitter(keys, 1)
    size = torch.randint(8, 19, (batch, keys, 1), generator=g).float()
    if batch > 1:
        size[1:] = torch.randint(16, 20, (batch - 1, keys, 1), generator=g).float()
        size[1:, 1::2] *= -1
    return 10 * axis + jitter(queries, 1), size * (root // 2) * axis + jitter(keys, 1)


def no_shift_softmax(scores: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """exp(scores) / sum(exp(scores)): a softmax with no shift, the slip these cases catch."""
    e = torch.exp(scores)
    return e / e.sum(dim=dim, keepdim=True)
