"""Multi-head attention: several scaled dot-product attentions side by side.

Each head sees its own slice of learned projections of the queries, keys and
values. All heads run as one batched :class:`attnbook.scoring.DotProductAttention`
call: the heads are folded into the batch axis, attended, unfolded, then the
concatenated head outputs are mixed by one output projection.

Shapes, with b = batch, q = queries, n = keys (the book's n), h = heads, D = num_hiddens and
p = D / h (the width of one head)::

    queries (b, q, D) --W_q--> (b, q, D) --split--> (b*h, q, p)
    keys    (b, n, D) --W_k--> (b, n, D) --split--> (b*h, n, p)
    values  (b, n, D) --W_v--> (b, n, D) --split--> (b*h, n, p)
    attention over each of the b*h (query, key) sets  -> (b*h, q, p)
    merge the heads back: (b, q, h*p) = (b, q, D) --W_o--> (b, q, D)
"""

from __future__ import annotations

import torch
from torch import nn

from . import _validate
from .masking import _check_lengths
from .scoring import DotProductAttention, _check_qkv

__all__ = [
    "MultiHeadAttention",
]


class MultiHeadAttention(nn.Module):
    """Multi-head scaled dot-product attention.

    Args:
        num_hiddens: D, the feature size of queries, keys, values and output.
        num_heads: h, the number of heads; it must divide ``num_hiddens``.
        dropout: dropout probability on the attention weights (training only).
        bias: whether the four projections ``W_q``, ``W_k``, ``W_v`` and
            ``W_o`` (each ``nn.Linear(D, D)``) have biases.

    Head i uses features ``i*p .. (i+1)*p - 1`` of each projection, the same
    layout as ``torch.nn.MultiheadAttention``. After a forward call,
    ``attention_weights`` holds the (batch, heads, queries, keys) weights
    (before dropout), detached from the autograd graph.
    """

    def __init__(
        self, num_hiddens: int, num_heads: int, dropout: float = 0.0, bias: bool = False
    ) -> None:
        super().__init__()
        num_hiddens = _validate.positive_int("num_hiddens", num_hiddens)
        num_heads = _validate.positive_int("num_heads", num_heads)
        if num_hiddens % num_heads:
            raise ValueError(
                f"num_heads={num_heads} must divide num_hiddens={num_hiddens} "
                "(every head gets num_hiddens / num_heads features)"
            )
        if not isinstance(bias, bool):
            raise TypeError(f"bias must be True or False, got {bias!r}")
        self.num_hiddens = num_hiddens
        self.num_heads = num_heads
        self.W_q = nn.Linear(num_hiddens, num_hiddens, bias=bias)
        self.W_k = nn.Linear(num_hiddens, num_hiddens, bias=bias)
        self.W_v = nn.Linear(num_hiddens, num_hiddens, bias=bias)
        self.W_o = nn.Linear(num_hiddens, num_hiddens, bias=bias)
        self.attention = DotProductAttention(dropout)
        self.attention_weights: torch.Tensor | None = None

    def split_heads(self, X: torch.Tensor) -> torch.Tensor:
        """(batch, items, num_hiddens) -> (batch * num_heads, items, num_hiddens / num_heads)."""
        _validate.tensor("X", X, ndim=3)
        if X.shape[-1] != self.num_hiddens:
            raise ValueError(
                f"X must have num_hiddens={self.num_hiddens} features, got shape {tuple(X.shape)}"
            )
        b, n, d = X.shape
        p = d // self.num_heads  # named, not -1: an empty batch has no size to infer
        X = X.reshape(b, n, self.num_heads, p)  # (b, n, h, p)
        return X.transpose(1, 2).reshape(b * self.num_heads, n, p)  # (b*h, n, p)

    def merge_heads(self, X: torch.Tensor) -> torch.Tensor:
        """(batch * num_heads, items, p) -> (batch, items, num_heads * p): undoes ``split_heads``."""
        _validate.tensor("X", X, ndim=3)
        p = self.num_hiddens // self.num_heads
        if X.shape[0] % self.num_heads or X.shape[-1] != p:
            raise ValueError(
                f"X must be (batch * num_heads, items, {p}) with num_heads={self.num_heads}, "
                f"got shape {tuple(X.shape)}"
            )
        bh, n, p = X.shape
        X = X.reshape(bh // self.num_heads, self.num_heads, n, p)  # (b, h, n, p)
        return X.transpose(1, 2).reshape(bh // self.num_heads, n, self.num_heads * p)

    def _check(self, queries, keys, values, valid_lens) -> torch.Tensor | None:
        _check_qkv(queries, keys, values)
        for name, x in (("queries", queries), ("keys", keys), ("values", values)):
            if x.shape[-1] != self.num_hiddens:
                raise ValueError(
                    f"{name} must have num_hiddens={self.num_hiddens} features, "
                    f"got shape {tuple(x.shape)}"
                )
        if queries.dtype != self.W_q.weight.dtype:
            raise TypeError(
                f"queries, keys and values must have the layer's dtype {self.W_q.weight.dtype}, "
                f"got {queries.dtype} (convert the layer with .to({queries.dtype}))"
            )
        if valid_lens is None:
            return None
        batch, q, n = queries.shape[0], queries.shape[1], keys.shape[1]
        lens = _validate.lengths("valid_lens", valid_lens, upper=n, device=queries.device)
        of = f"queries of shape {tuple(queries.shape)} and keys of shape {tuple(keys.shape)}"
        _check_lengths(lens, batch, q, n, queries.device, of)  # the same message as elsewhere
        return lens

    def forward(
        self,
        queries: torch.Tensor,
        keys: torch.Tensor,
        values: torch.Tensor,
        valid_lens: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """queries (b, q, D), keys (b, n, D), values (b, n, D) -> (b, q, D).

        ``valid_lens`` is None, (b,) or (b, q), as in
        :func:`attnbook.masking.masked_softmax`; every head uses the same lengths.
        A query with valid length 0 gets all-zero weights in every head, so its
        output is ``W_o`` applied to zeros (its bias, or zeros without biases).
        """
        lens = self._check(queries, keys, values, valid_lens)
        Q = self.split_heads(self.W_q(queries))  # (b*h, q, p)
        K = self.split_heads(self.W_k(keys))  # (b*h, n, p)
        V = self.split_heads(self.W_v(values))  # (b*h, n, p)
        if lens is not None:
            # Copy each sequence's lengths once per head: (b*h,) or (b*h, q).
            lens = lens.repeat_interleave(self.num_heads, dim=0)
        heads = self.attention(Q, K, V, lens)  # (b*h, q, p)
        b, q, n = queries.shape[0], queries.shape[1], keys.shape[1]
        # Kept detached, here and in the inner attention module: a stored copy
        # must not keep the forward pass's autograd graph alive.
        weights = self.attention.attention_weights.detach()  # (b*h, q, n)
        self.attention.attention_weights = weights
        self.attention_weights = weights.reshape(b, self.num_heads, q, n)  # (b, h, q, n)
        return self.W_o(self.merge_heads(heads))  # (b, q, D)

    def extra_repr(self) -> str:
        return f"num_hiddens={self.num_hiddens}, num_heads={self.num_heads}"
