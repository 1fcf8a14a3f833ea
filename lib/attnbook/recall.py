"""Associative recall: a synthetic task whose right attention pattern is known.

Each example holds ``n`` random (key, value) pairs and one query. The query is
a copy of one key (the *right* key) plus a little Gaussian noise, and the
target is that key's value. A model that attends has solved the task exactly
when each query puts (almost) all of its weight on the right key, so its
attention weights can be graded against the index of that key.

With ``parts=2`` the task needs two lookups at once: every key is split into
two halves of ``d / 2`` features, the query's first half copies the first half
of key ``i`` and its second half copies the second half of a different key
``j``, and the target is the first half of value ``i`` followed by the second
half of value ``j``. One attention pattern cannot serve both halves.

Everything is drawn from a ``torch.Generator``, so a seed fixes the data.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from . import _validate

__all__ = [
    "RecallBatch",
    "make_recall_batch",
    "right_key_accuracy",
]


@dataclass(frozen=True)
class RecallBatch:
    """One batch of the recall task.

    Attributes:
        queries: (batch, 1, d) float32.
        keys: (batch, n, d) float32, entries standard normal.
        values: (batch, n, d_v) float32, entries standard normal.
        targets: (batch, 1, d_v) float32, the value (or values) to recall.
        index: (batch, parts) int64, the right key for each part of the query.
    """

    queries: torch.Tensor
    keys: torch.Tensor
    values: torch.Tensor
    targets: torch.Tensor
    index: torch.Tensor


def _noise(value: object) -> float:
    noise = _validate.real_number("noise", value)
    if not noise >= 0 or noise == float("inf"):
        raise ValueError(f"noise must be a finite number >= 0, got {value!r}")
    return noise


def make_recall_batch(
    batch: int,
    n: int,
    d: int,
    d_v: int | None = None,
    noise: float = 0.1,
    parts: int = 1,
    seed: int | torch.Generator = 0,
) -> RecallBatch:
    """Draw a batch of the associative-recall task.

    Args:
        batch: number of examples.
        n: number of (key, value) pairs per example (at least ``parts``).
        d: size of keys and queries (divisible by ``parts``).
        d_v: size of values (default ``d``; divisible by ``parts``).
        noise: standard deviation of the Gaussian noise added to the query.
        parts: 1 (the query copies one key) or 2 (each half of the query
            copies the same half of a different key; see the module docstring).
        seed: an integer seed, or a ``torch.Generator`` to draw from (it
            advances, so consecutive calls give fresh batches).

    Returns:
        A :class:`RecallBatch` of float32 tensors on the CPU.
    """
    batch = _validate.positive_int("batch", batch)
    n = _validate.positive_int("n", n)
    d = _validate.positive_int("d", d)
    d_v = d if d_v is None else _validate.positive_int("d_v", d_v)
    noise = _noise(noise)
    parts = _validate.positive_int("parts", parts)
    if parts > 2:
        raise ValueError(f"parts must be 1 or 2, got {parts}")
    if n < parts:
        raise ValueError(f"n must be at least parts={parts} (one key per part), got n={n}")
    for name, size in (("d", d), ("d_v", d_v)):
        if size % parts:
            raise ValueError(f"{name} must be divisible by parts={parts}, got {name}={size}")
    g = _validate.generator("seed", seed)
    keys = torch.randn(batch, n, d, generator=g)  # (batch, n, d)
    values = torch.randn(batch, n, d_v, generator=g)  # (batch, n, d_v)
    if parts == 1:
        index = torch.randint(n, (batch, 1), generator=g)  # (batch, 1)
    else:
        # Two different keys per example: the second is shifted by 1..n-1 places.
        first = torch.randint(n, (batch,), generator=g)
        shift = torch.randint(1, n, (batch,), generator=g)
        index = torch.stack([first, (first + shift) % n], dim=1)  # (batch, 2)
    rows = torch.arange(batch)
    half, half_v = d // parts, d_v // parts
    query_parts, target_parts = [], []
    for part in range(parts):
        chosen = index[:, part]  # (batch,)
        query_parts.append(keys[rows, chosen, part * half : (part + 1) * half])
        target_parts.append(values[rows, chosen, part * half_v : (part + 1) * half_v])
    clean = torch.cat(query_parts, dim=-1)  # (batch, d)
    queries = (clean + noise * torch.randn(batch, d, generator=g)).unsqueeze(1)  # (batch, 1, d)
    targets = torch.cat(target_parts, dim=-1).unsqueeze(1)  # (batch, 1, d_v)
    return RecallBatch(queries, keys, values, targets, index)


def right_key_accuracy(weights: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """Fraction of rows whose largest weight sits on the right key.

    Args:
        weights: (rows, keys) attention weights, one row per query; any
            leading axes are allowed, e.g. (batch, heads, keys): every row is
            graded.
        index: the right key of every row, integer, of shape
            ``weights.shape[:-1]`` (e.g. (rows,)).

    Returns:
        A 0-d float tensor (the dtype of ``weights``) in [0, 1]: the mean over
        the rows of ``argmax(weights) == index``.
    """
    weights = _validate.tensor("weights", weights, floating=True)
    index = _validate.tensor("index", index)
    if weights.dim() < 1:
        raise ValueError(f"weights must have a keys axis, got shape {tuple(weights.shape)}")
    if index.is_floating_point() or index.dtype == torch.bool or index.is_complex():
        raise TypeError(f"index must hold integers, got dtype {index.dtype}")
    if index.shape != weights.shape[:-1]:
        raise ValueError(
            f"index must have one entry per row of weights, shape {tuple(weights.shape[:-1])}, "
            f"got shape {tuple(index.shape)}"
        )
    n = weights.shape[-1]
    if n == 0 or index.numel() == 0:
        raise ValueError(
            f"weights must have at least one row and one key, got shape {tuple(weights.shape)}"
        )
    outside = index[(index < 0) | (index >= n)]
    if outside.numel():
        raise ValueError(
            f"index must lie in [0, {n - 1}] (the keys), got {outside[:5].tolist()} among others"
            if outside.numel() > 5
            else f"index must lie in [0, {n - 1}] (the keys), got {outside.tolist()}"
        )
    hits = weights.argmax(dim=-1) == index.to(weights.device)  # (rows,)
    return hits.to(weights.dtype).mean()
