"""Sinusoidal positional encoding: tell attention where each token sits.

Self-attention treats its input as a set: permute the tokens and the outputs
are permuted the same way. Adding a position-dependent vector to each token
breaks that symmetry. The sinusoidal encoding pairs feature columns 2j and
2j + 1 into a sine and a cosine of the position at the frequency
w_j = 1 / 10000^(2j / d), from fast (j = 0) to slow (j = d/2 - 1).
"""

from __future__ import annotations

import torch
from torch import nn

from . import _validate

__all__ = [
    "sinusoidal_encoding",
    "PositionalEncoding",
]


def sinusoidal_encoding(num_positions: int, num_hiddens: int) -> torch.Tensor:
    """The (num_positions, num_hiddens) float32 matrix P of sinusoidal encodings.

    P[i, 2j] = sin(i * w_j) and P[i, 2j + 1] = cos(i * w_j) with
    w_j = 1 / 10000^(2j / num_hiddens), for positions i = 0 .. num_positions - 1.
    ``num_hiddens`` must be even (one sine and one cosine per frequency).
    """
    num_positions = _validate.positive_int("num_positions", num_positions)
    num_hiddens = _validate.positive_int("num_hiddens", num_hiddens)
    if num_hiddens % 2:
        raise ValueError(
            f"num_hiddens must be even (a sine and a cosine per frequency), got {num_hiddens}"
        )
    # Computed in float64, then rounded once to float32.
    positions = torch.arange(num_positions, dtype=torch.float64)  # (positions,)
    exponents = torch.arange(0, num_hiddens, 2, dtype=torch.float64) / num_hiddens  # (d/2,)
    frequencies = 10000.0**-exponents  # (d/2,)
    angles = positions[:, None] * frequencies[None, :]  # (positions, d/2)
    P = torch.stack([angles.sin(), angles.cos()], dim=-1)  # (positions, d/2, 2)
    return P.reshape(num_positions, num_hiddens).to(torch.float32)


class PositionalEncoding(nn.Module):
    """Add the sinusoidal encoding of each position to a batch of sequences.

    Args:
        num_hiddens: d, the feature size of the inputs (even).
        dropout: dropout probability applied to the sum (training only).
        max_len: the longest sequence the module accepts.

    ``forward(X)`` takes X of shape (batch, steps, num_hiddens) with
    steps <= max_len and returns X + P[:steps] (then dropout), in X's dtype.
    """

    def __init__(self, num_hiddens: int, dropout: float = 0.0, max_len: int = 1000) -> None:
        super().__init__()
        max_len = _validate.positive_int("max_len", max_len)
        self.num_hiddens = _validate.positive_int("num_hiddens", num_hiddens)
        self.max_len = max_len
        self.dropout = nn.Dropout(_validate.probability("dropout", dropout))
        P = sinusoidal_encoding(max_len, num_hiddens)  # (max_len, d)
        self.register_buffer("P", P, persistent=False)

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        """X (batch, steps, num_hiddens) -> (batch, steps, num_hiddens)."""
        # any floating dtype: the table is cast to X's
        X = _validate.model_input("X", X, ndim=3, width=self.num_hiddens, width_name="num_hiddens")
        _, steps, _ = X.shape
        if steps > self.max_len:
            raise ValueError(
                f"X has {steps} positions, more than max_len={self.max_len}; "
                "build the module with a larger max_len"
            )
        P = self.P[:steps].to(device=X.device, dtype=X.dtype)  # (steps, d)
        return self.dropout(X + P)  # (batch, steps, d)

    def extra_repr(self) -> str:
        return f"num_hiddens={self.num_hiddens}, max_len={self.max_len}"
