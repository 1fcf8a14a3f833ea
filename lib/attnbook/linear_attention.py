"""Linear attention: a feature map in place of the softmax (Katharopoulos et al., 2020).

Softmax attention weighs value j for query i by exp(q_i . k_j / sqrt(d)),
normalised over j. Linear attention replaces the exponential of the dot
product by a dot product of features, phi(q_i) . phi(k_j), with
phi(x) = elu(x) + 1 (positive, so the weights stay positive). Because the
weight now factorises, the sum over keys can be taken *before* the query
arrives:

    out_i = phi(q_i)^T S / (phi(q_i)^T z),  S = sum_j phi(k_j) v_j^T,  z = sum_j phi(k_j),

a (d, d_v) matrix and a d-vector instead of n scores. With a causal mask, S and
z become running sums over j <= i: a recurrent network whose state has a fixed
size, however long the sequence. That fixed state is also the price: whatever
the sequence held must fit into d x d_v numbers.

:func:`linear_attention` computes this with running sums (``cumsum``, which
materialises all n prefix states at once: a (batch, n, d, d_v) tensor; a
recurrent loop would keep one), :func:`linear_attention_weights` builds the
equivalent (queries, keys) weight matrix (the quadratic form, for pictures and
tests), and :class:`LinearSelfAttention` is a multi-head self-attention layer
with learned projections built on it.

:func:`token_shift` adds to each position the vector of the position before
it: the sharp "previous token" step that the flat weights of linear attention
cannot take by themselves, and that recall needs (Based and the Zoology
models of Arora et al. pair linear attention with short convolutions that do
this).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from . import _validate
from .flash import _check_qkv, _flag

__all__ = [
    "elu_feature_map",
    "token_shift",
    "linear_attention_weights",
    "linear_attention",
    "LinearSelfAttention",
]


def elu_feature_map(x: torch.Tensor) -> torch.Tensor:
    """phi(x) = elu(x) + 1, elementwise: x + 1 for x > 0, exp(x) otherwise; always > 0."""
    x = _validate.tensor("x", x, floating=True)
    out = F.elu(x) + 1
    # Below about -17 (float32) elu(x) + 1 rounds to exactly 0, and a query
    # whose features are all 0 divides 0 by 0; exp(x) (at least the smallest
    # normal number) keeps phi > 0 there and leaves every other value as it was.
    tiny = torch.finfo(out.dtype).tiny
    return torch.where(out > 0, out, torch.exp(x).clamp_min(tiny))


def token_shift(X: torch.Tensor) -> torch.Tensor:
    """Each position's vector moved one step later: row i of the result is row i - 1 of X.

    Args:
        X: (batch, n, D) floating point.

    Returns:
        (batch, n, D): position 0 is zero, position i holds ``X[:, i - 1]``.
        Added to a sequence's embeddings, it lets every position see the token
        before it without any attention: a size-2 causal convolution with fixed
        weights.
    """
    X = _validate.tensor("X", X, ndim=3, floating=True)
    return F.pad(X, (0, 0, 1, 0))[:, :-1]  # (batch, n, D)


def linear_attention_weights(
    queries: torch.Tensor, keys: torch.Tensor, causal: bool = False
) -> torch.Tensor:
    """The (batch, queries, keys) weights that linear attention implicitly uses.

    ``w[b, i, j] = phi(q_i) . phi(k_j) / sum_j' phi(q_i) . phi(k_j')``, the sums
    over j <= i when ``causal`` (query i sees keys 0..i). Rows sum to 1. This
    builds the quadratic matrix that :func:`linear_attention` avoids.
    """
    queries = _validate.tensor("queries", queries, ndim=3, floating=True)
    keys = _validate.tensor("keys", keys, ndim=3, floating=True)
    _check_qkv(queries, keys, keys)
    causal = _flag("causal", causal)
    similarity = elu_feature_map(queries) @ elu_feature_map(keys).transpose(1, 2)  # (b, m, n)
    if causal:
        m, n = similarity.shape[1:]
        future = torch.ones(m, n, dtype=torch.bool, device=queries.device).triu(1)
        similarity = similarity.masked_fill(future, 0.0)
    return similarity / similarity.sum(dim=-1, keepdim=True)


def linear_attention(
    queries: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    causal: bool = False,
) -> torch.Tensor:
    """Linear attention with the feature map phi(x) = elu(x) + 1.

    Args:
        queries: (batch, queries, d) floating point.
        keys: (batch, keys, d), same dtype.
        values: (batch, keys, d_v), same dtype.
        causal: if True, query i sees keys 0..i only (needs queries <= keys);
            the sums S and z are then running sums over the keys, the
            recurrent form.

    Returns:
        (batch, queries, d_v): ``phi(q_i)^T S / (phi(q_i)^T z)`` with
        ``S = sum_j phi(k_j) v_j^T`` and ``z = sum_j phi(k_j)`` (running sums
        when causal). Equals ``linear_attention_weights(q, k, causal) @ v`` up
        to rounding, without building that matrix.
    """
    b, m, n, d, d_v = _check_qkv(queries, keys, values)
    causal = _flag("causal", causal)
    if n == 0:  # phi(q)^T z would be 0 / 0: linear attention has no empty-row convention
        raise ValueError(f"keys must hold at least one key, got shape {tuple(keys.shape)}")
    phi_q = elu_feature_map(queries)  # (b, m, d)
    phi_k = elu_feature_map(keys)  # (b, n, d)
    if not causal:
        S = phi_k.transpose(1, 2) @ values  # (b, d, d_v)
        z = phi_k.sum(dim=1)  # (b, d)
        numerator = phi_q @ S  # (b, m, d_v)
        denominator = (phi_q * z.unsqueeze(1)).sum(dim=-1, keepdim=True)  # (b, m, 1)
        return numerator / denominator
    if m > n:
        raise ValueError(
            f"causal linear attention needs at most as many queries as keys, got {m} "
            f"queries and {n} keys"
        )
    # Running sums over the keys: S_i = sum_{j<=i} phi(k_j) v_j^T, z_i likewise.
    # cumsum builds every prefix state at once, (b, m, d, d_v): linear in n, but
    # n times the fixed-size state that a step-by-step recurrence would keep.
    S = torch.cumsum(phi_k[:, :m].unsqueeze(-1) * values[:, :m].unsqueeze(-2), dim=1)
    z = torch.cumsum(phi_k[:, :m], dim=1)  # (b, m, d)
    numerator = (phi_q.unsqueeze(-1) * S).sum(dim=2)  # (b, m, d_v); S is (b, m, d, d_v)
    denominator = (phi_q * z).sum(dim=-1, keepdim=True)  # (b, m, 1)
    return numerator / denominator


class LinearSelfAttention(nn.Module):
    """Multi-head self-attention with linear attention instead of the softmax.

    Args:
        num_hiddens: D, the size of the input and output features.
        num_heads: heads; each sees D / num_heads features.
        causal: position i attends to positions 0..i only (default True).
        recurrent: compute with running sums (:func:`linear_attention`, memory
            linear in n) or, when False (the default), through the (n, n)
            weights of :func:`linear_attention_weights`: the same numbers up to
            rounding, and faster on a CPU for sequences as short as the
            chapter's (the running sums hold a d x d_v matrix per position).

    ``W_q``, ``W_k``, ``W_v`` and ``W_o`` are ``nn.Linear(D, D, bias=False)``
    as in ``attnbook.multihead.MultiHeadAttention``. ``forward(X)`` maps
    (batch, steps, D) to (batch, steps, D).
    """

    def __init__(
        self, num_hiddens: int, num_heads: int = 1, causal: bool = True, recurrent: bool = False
    ) -> None:
        super().__init__()
        self.num_hiddens = _validate.positive_int("num_hiddens", num_hiddens)
        self.num_heads = _validate.positive_int("num_heads", num_heads)
        _validate.heads_divide(self.num_hiddens, self.num_heads)
        self.causal = _flag("causal", causal)
        self.recurrent = _flag("recurrent", recurrent)
        self.W_q = nn.Linear(num_hiddens, num_hiddens, bias=False)
        self.W_k = nn.Linear(num_hiddens, num_hiddens, bias=False)
        self.W_v = nn.Linear(num_hiddens, num_hiddens, bias=False)
        self.W_o = nn.Linear(num_hiddens, num_hiddens, bias=False)

    def _split(self, X: torch.Tensor) -> torch.Tensor:
        b, n, d = X.shape  # (b, n, D) -> (b * heads, n, D / heads)
        X = X.reshape(b, n, self.num_heads, d // self.num_heads).transpose(1, 2)
        return X.reshape(b * self.num_heads, n, d // self.num_heads)

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        X = _validate.model_input(
            "X", X, ndim=3, dtype=self.W_q.weight.dtype, width=self.num_hiddens
        )  # (b, n, D), n >= 1
        b, n, D = X.shape
        q, k, v = (self._split(W(X)) for W in (self.W_q, self.W_k, self.W_v))
        if self.recurrent:
            out = linear_attention(q, k, v, causal=self.causal)  # (b * heads, n, D / heads)
        else:  # the same numbers through the (n, n) weights: faster for short sequences
            out = linear_attention_weights(q, k, causal=self.causal) @ v
        out = (
            out.reshape(b, self.num_heads, n, D // self.num_heads).transpose(1, 2).reshape(b, n, D)
        )
        return self.W_o(out)
