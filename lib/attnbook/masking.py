"""Masking: keep only the first ``valid_len`` positions of each row.

Sequences in a minibatch are padded to a common length. ``sequence_mask``
overwrites the padding positions; ``masked_softmax`` turns scores into
attention weights that are exactly zero on the padding.
"""

from __future__ import annotations

import torch

from . import _validate

__all__ = [
    "sequence_mask",
    "masked_softmax",
]


def _keep(valid_lens: torch.Tensor, positions: int) -> torch.Tensor:
    """Boolean mask, True where the position index is below the length.

    valid_lens: (...,) int64  ->  mask: (..., positions)
    """
    index = torch.arange(positions, device=valid_lens.device)  # (positions,)
    return index < valid_lens.unsqueeze(-1)  # (..., positions)


def _shown(lens: torch.Tensor) -> str:
    """Lengths as the reader passed them: their values when few, else only the shape."""
    if lens.numel() <= 12:
        return f"{lens.tolist()} (shape {tuple(lens.shape)})"
    return f"a tensor of shape {tuple(lens.shape)}"


def _check_lengths(
    valid_lens: object, batch: int, queries: int, keys: int, device: torch.device, of: str
) -> torch.Tensor:
    """Valid lengths as a (batch, queries) int64 tensor, or a ValueError naming
    ``of``, the tensors whose shape fixed batch, queries and keys."""
    lens = _validate.lengths("valid_lens", valid_lens, upper=keys, device=device)
    if lens.shape == (batch,):
        return lens.unsqueeze(1).expand(batch, queries)  # (batch, queries)
    if lens.shape != (batch, queries):
        raise ValueError(
            f"valid_lens must have shape ({batch},) or ({batch}, {queries}) (one length "
            f"per sequence, or one per query) for {of}; got {_shown(lens)}"
        )
    return lens


def sequence_mask(X: torch.Tensor, valid_lens: torch.Tensor, value: float = 0.0) -> torch.Tensor:
    """Replace every position at or beyond each row's valid length by ``value``.

    Args:
        X: (rows, positions) tensor.
        valid_lens: (rows,) integer lengths, each in [0, positions].
        value: what to write into the masked positions.

    Returns:
        A new (rows, positions) tensor; ``X`` is left unchanged.
    """
    X = _validate.tensor("X", X, ndim=2)
    rows, positions = X.shape
    lens = _validate.lengths("valid_lens", valid_lens, upper=positions, device=X.device)
    if lens.shape != (rows,):
        raise ValueError(
            f"valid_lens must have shape ({rows},), one length per row of X "
            f"(X has shape {tuple(X.shape)}), got {_shown(lens)}"
        )
    value = _validate.real_number("value", value)
    if not X.is_floating_point() and not value.is_integer():
        raise ValueError(f"value must be a whole number for X of dtype {X.dtype}, got {value!r}")
    keep = _keep(lens, positions)  # (rows, positions)
    fill = torch.as_tensor(value, dtype=X.dtype, device=X.device)
    return torch.where(keep, X, fill)


def masked_softmax(X: torch.Tensor, valid_lens: torch.Tensor | None = None) -> torch.Tensor:
    """Softmax over the last axis that ignores the positions beyond a valid length.

    Args:
        X: (batch, queries, keys) floating-point scores.
        valid_lens: None (every key is valid), (batch,) one length per batch
            item shared by all its queries, or (batch, queries) one length per
            query. Integer values in [0, keys].

    Returns:
        (batch, queries, keys) weights. Positions at or beyond the valid length
        are exactly 0; a row of length 0 is all zeros; every other row sums to 1.
        No NaN in float16/bfloat16, and gradients flow (zero for masked scores).
    """
    if isinstance(X, torch.Tensor) and X.dim() != 3:
        raise ValueError(
            f"X must be 3-D, the scores (batch, queries, keys), got shape {tuple(X.shape)}"
        )
    X = _validate.tensor("X", X, floating=True)
    batch, queries, keys = X.shape
    if valid_lens is None:
        return torch.softmax(X, dim=-1)
    of = f"scores X of shape (batch, queries, keys) = {tuple(X.shape)}"
    lens = _check_lengths(valid_lens, batch, queries, keys, X.device, of)
    keep = _keep(lens, keys)  # (batch, queries, keys)
    # A large finite fill (not -inf) keeps a fully masked row finite: its softmax
    # is uniform instead of NaN, and the final `where` turns it into zeros.
    lowest = torch.finfo(X.dtype).min
    scores = X.masked_fill(~keep, lowest)  # (batch, queries, keys)
    weights = torch.softmax(scores, dim=-1)
    return torch.where(keep, weights, torch.zeros((), dtype=X.dtype, device=X.device))
