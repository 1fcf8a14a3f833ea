"""Attention scoring functions: scaled dot product and additive (MLP) attention.

Both layers take queries (batch, queries, d_q), keys (batch, keys, d_k) and
values (batch, keys, d_v), score every query against every key, turn the
scores into weights with :func:`attnbook.masking.masked_softmax`, and return
the weighted sums of the values, (batch, queries, d_v).
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn.modules.lazy import LazyModuleMixin

from . import _validate
from .masking import _check_lengths, masked_softmax

__all__ = [
    "DotProductAttention",
    "AdditiveAttention",
]


def _check_qkv(queries: torch.Tensor, keys: torch.Tensor, values: torch.Tensor) -> None:
    # 3-D and floating; no empty axis but the batch (no keys or features: NaN or nothing)
    _validate.model_input("queries", queries, ndim=3)
    _validate.model_input("keys", keys, ndim=3)
    _validate.model_input("values", values, ndim=3)
    _validate.same_dtype(queries=queries, keys=keys, values=values)
    if not queries.shape[0] == keys.shape[0] == values.shape[0]:
        raise ValueError(
            "queries, keys and values must have the same batch size, got shapes "
            f"{tuple(queries.shape)}, {tuple(keys.shape)} and {tuple(values.shape)}"
        )
    if keys.shape[1] != values.shape[1]:
        raise ValueError(
            "keys and values must hold the same number of items, got shapes "
            f"{tuple(keys.shape)} and {tuple(values.shape)}"
        )


def _check_valid_lens(valid_lens, queries: torch.Tensor, keys: torch.Tensor):
    """Check the lengths against the queries and keys the reader passed (not
    against the scores built from them, which the reader never saw)."""
    if valid_lens is None:
        return None
    of = f"queries of shape {tuple(queries.shape)} and keys of shape {tuple(keys.shape)}"
    batch, q, k = queries.shape[0], queries.shape[1], keys.shape[1]
    return _check_lengths(valid_lens, batch, q, k, queries.device, of)


class DotProductAttention(nn.Module):
    """Scaled dot-product attention: a(q, k) = q^T k / sqrt(d).

    Queries and keys must have the same size d. ``dropout`` is applied to the
    attention weights in training mode only.
    """

    def __init__(self, dropout: float = 0.0) -> None:
        super().__init__()
        self.dropout = nn.Dropout(_validate.probability("dropout", dropout))
        self.attention_weights: torch.Tensor | None = None

    def forward(
        self,
        queries: torch.Tensor,
        keys: torch.Tensor,
        values: torch.Tensor,
        valid_lens: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """queries (b, q, d), keys (b, k, d), values (b, k, v) -> (b, q, v).

        ``valid_lens`` is None, (b,) or (b, q), as in ``masked_softmax``.
        ``self.attention_weights`` keeps the (b, q, k) weights before dropout.
        """
        _check_qkv(queries, keys, values)
        d = queries.shape[-1]
        if keys.shape[-1] != d:
            raise ValueError(
                "queries and keys must have the same feature size for a dot product, "
                f"got {d} and {keys.shape[-1]} (use AdditiveAttention for mismatched sizes)"
            )
        _check_valid_lens(valid_lens, queries, keys)
        scores = queries @ keys.transpose(1, 2) / math.sqrt(d)  # (b, q, k)
        self.attention_weights = masked_softmax(scores, valid_lens)
        return self.dropout(self.attention_weights) @ values  # (b, q, v)


class AdditiveAttention(nn.Module):
    """Additive (MLP) attention: a(q, k) = w_v^T tanh(W_q q + W_k k).

    Queries and keys may have different sizes; both are projected to
    ``num_hiddens`` features. The projections are lazy: their input sizes are
    fixed by the first call. By default there are no biases, so the score is
    odd, a(-q, -k) = -a(q, k); ``bias=True`` gives W_q a bias b, making the
    score w_v^T tanh(W_q q + b + W_k k), which breaks that symmetry.
    """

    def __init__(self, num_hiddens: int, dropout: float = 0.0, bias: bool = False) -> None:
        super().__init__()
        num_hiddens = _validate.positive_int("num_hiddens", num_hiddens)
        bias = _validate.flag("bias", bias)
        self.W_q = nn.LazyLinear(num_hiddens, bias=bias)
        self.W_k = nn.LazyLinear(num_hiddens, bias=False)
        self.w_v = nn.Linear(num_hiddens, 1, bias=False)
        self.dropout = nn.Dropout(_validate.probability("dropout", dropout))
        self.attention_weights: torch.Tensor | None = None

    def forward(
        self,
        queries: torch.Tensor,
        keys: torch.Tensor,
        values: torch.Tensor,
        valid_lens: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """queries (b, q, d_q), keys (b, k, d_k), values (b, k, v) -> (b, q, v)."""
        _check_qkv(queries, keys, values)
        if queries.dtype != self.w_v.weight.dtype:
            raise TypeError(
                f"queries, keys and values must have the layer's dtype {self.w_v.weight.dtype}, "
                f"got {queries.dtype} (convert the layer with .to({queries.dtype}))"
            )
        for name, layer, x in (
            ("queries", self.W_q, queries),
            ("keys", self.W_k, keys),
        ):
            if not isinstance(layer, LazyModuleMixin) and layer.in_features != x.shape[-1]:
                raise ValueError(
                    f"{name} must have {layer.in_features} features, the size this "
                    f"layer was first called with, got shape {tuple(x.shape)}"
                )
        _check_valid_lens(valid_lens, queries, keys)
        projected_q = self.W_q(queries).unsqueeze(2)  # (b, q, 1, num_hiddens)
        projected_k = self.W_k(keys).unsqueeze(1)  # (b, 1, k, num_hiddens)
        features = torch.tanh(projected_q + projected_k)  # (b, q, k, num_hiddens)
        scores = self.w_v(features).squeeze(-1)  # (b, q, k)
        self.attention_weights = masked_softmax(scores, valid_lens)
        return self.dropout(self.attention_weights) @ values  # (b, q, v)
