"""The attention-only model of the induction-heads chapter (re-exported by
:mod:`attnbook.induction`): :func:`causal_mask`, :class:`CausalAttentionLayer`,
:class:`AttentionOnlyTransformer`.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable

import torch
from torch import nn

from . import _validate

__all__ = [
    "causal_mask",
    "CausalAttentionLayer",
    "AttentionOnlyTransformer",
]

# ---------------------------------------------------------------- the model


def causal_mask(n: int, device: torch.device | None = None) -> torch.Tensor:
    """(n, n) boolean mask, True where query i may see key j (j <= i)."""
    n = _validate.positive_int("n", n)
    device = _validate.device("device", device)
    return torch.ones(n, n, dtype=torch.bool, device=device).tril()


class CausalAttentionLayer(nn.Module):
    """Causal multi-head self-attention whose heads can be switched off.

    Same layout as :class:`attnbook.multihead.MultiHeadAttention`: ``nn.Linear``
    projections ``W_q``, ``W_k``, ``W_v``, ``W_o`` (num_hiddens -> num_hiddens,
    no bias); head j uses features ``j * head_size`` to ``(j + 1) * head_size - 1``
    of the projected queries, keys and values, and the columns of ``W_o`` with
    the same indices.
    """

    def __init__(self, num_hiddens: int, num_heads: int) -> None:
        super().__init__()
        num_hiddens = _validate.positive_int("num_hiddens", num_hiddens)
        num_heads = _validate.positive_int("num_heads", num_heads)
        _validate.heads_divide(num_hiddens, num_heads)
        self.num_hiddens, self.num_heads = num_hiddens, num_heads
        self.head_size = num_hiddens // num_heads
        self.W_q = nn.Linear(num_hiddens, num_hiddens, bias=False)
        self.W_k = nn.Linear(num_hiddens, num_hiddens, bias=False)
        self.W_v = nn.Linear(num_hiddens, num_hiddens, bias=False)
        self.W_o = nn.Linear(num_hiddens, num_hiddens, bias=False)
        self.attention_weights: torch.Tensor | None = None

    def _split(self, x: torch.Tensor) -> torch.Tensor:
        b, n, _ = x.shape  # (batch, n, num_hiddens) -> (batch, heads, n, head_size)
        return x.reshape(b, n, self.num_heads, self.head_size).transpose(1, 2)

    def forward(self, x: torch.Tensor, keep: torch.Tensor | None = None) -> torch.Tensor:
        """x (batch, n, num_hiddens) -> what the layer adds to the stream, same shape.

        ``keep`` is an optional (num_heads,) float tensor multiplying each head's
        output before ``W_o`` (0 switches a head off). The weights, (batch,
        heads, queries, keys), are kept in ``self.attention_weights``.
        """
        _validate.model_input(
            "x", x, ndim=3, dtype=self.W_q.weight.dtype, width=self.num_hiddens,
            width_name="num_hiddens",
        )  # fmt: skip
        if keep is not None:
            keep = _validate.as_float_tensor("keep", keep, ndim=1)
            if keep.shape[0] != self.num_heads or not bool(torch.isfinite(keep).all()):
                raise ValueError(
                    f"keep must hold one finite factor per head ({self.num_heads}), got "
                    f"{_validate._describe(keep)}"
                )
        b, n, _ = x.shape
        q, k, v = self._split(self.W_q(x)), self._split(self.W_k(x)), self._split(self.W_v(x))
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_size)  # (b, heads, n, n)
        scores = scores.masked_fill(~causal_mask(n, x.device), float("-inf"))
        weights = torch.softmax(scores, dim=-1)  # (batch, heads, queries, keys)
        self.attention_weights = weights
        heads = weights @ v  # (b, heads, n, head_size)
        if keep is not None:
            heads = heads * keep.to(heads.dtype).reshape(1, -1, 1, 1)
        return self.W_o(heads.transpose(1, 2).reshape(b, n, self.num_hiddens))


class AttentionOnlyTransformer(nn.Module):
    """Token + learned position embeddings, causal attention layers, unembedding.

    Args:
        vocab: number of token ids.
        num_hiddens: width D of the residual stream.
        num_heads: heads per layer.
        num_layers: attention layers (2 for induction heads, 1 for the control).
        max_len: longest sequence (positions 0 .. max_len - 1 are learned).
        seed: integer seed for the initialisation (the global RNG is untouched).

    ``forward(tokens)`` maps (batch, n) int64 tokens to (batch, n, vocab)
    logits; position i predicts token i + 1. After a forward,
    ``attention_weights`` holds each layer's (batch, heads, queries, keys)
    weights.
    """

    def __init__(
        self,
        vocab: int = 64,
        num_hiddens: int = 64,
        num_heads: int = 2,
        num_layers: int = 2,
        max_len: int = 40,
        seed: int = 0,
    ) -> None:
        super().__init__()
        self.vocab = _validate.positive_int("vocab", vocab)
        num_hiddens = _validate.positive_int("num_hiddens", num_hiddens)
        num_heads = _validate.positive_int("num_heads", num_heads)
        self.num_layers = _validate.positive_int("num_layers", num_layers)
        self.max_len = _validate.positive_int("max_len", max_len)
        if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
            raise TypeError(f"seed must be an integer, got {seed!r}")
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(seed))
            self.embed = nn.Embedding(vocab, num_hiddens)
            self.position = nn.Embedding(max_len, num_hiddens)
            self.layers = nn.ModuleList(
                CausalAttentionLayer(num_hiddens, num_heads) for _ in range(num_layers)
            )
            self.unembed = nn.Linear(num_hiddens, vocab, bias=False)
            for table in (self.embed, self.position):
                nn.init.normal_(table.weight, std=1.0)
        self.num_hiddens, self.num_heads = num_hiddens, num_heads

    @property
    def attention_weights(self) -> list[torch.Tensor | None]:
        return [layer.attention_weights for layer in self.layers]

    def _keep(self, ablate: Iterable[tuple[int, int]] | None) -> list[torch.Tensor | None]:
        keep: list[torch.Tensor | None] = [None] * self.num_layers
        if ablate is None:
            return keep
        if isinstance(ablate, tuple) and len(ablate) == 2 and isinstance(ablate[0], int):
            ablate = [ablate]  # one (layer, head) pair
        for item in ablate:
            if not (isinstance(item, tuple) and len(item) == 2):
                raise TypeError(f"ablate must hold (layer, head) pairs, got {item!r}")
            layer, head = item
            for name, value, upper in (
                ("layer", layer, self.num_layers),
                ("head", head, self.num_heads),
            ):
                if isinstance(value, bool) or not isinstance(value, numbers.Integral):
                    raise TypeError(f"ablate {name} must be an integer, got {value!r}")
                if not 0 <= value < upper:
                    raise ValueError(f"ablate {name} must lie in [0, {upper - 1}], got {value}")
            if keep[layer] is None:
                keep[layer] = torch.ones(self.num_heads, device=_validate.device_of(self))
            keep[layer][head] = 0.0
        return keep

    def forward(
        self, tokens: torch.Tensor, ablate: Iterable[tuple[int, int]] | None = None
    ) -> torch.Tensor:
        """tokens (batch, n) int64 -> logits (batch, n, vocab).

        ``ablate``: (layer, head) pairs (or one pair) whose output is set to zero.
        """
        tokens = _validate.tensor("tokens", tokens, ndim=2)
        if tokens.dtype not in (torch.int64, torch.int32):
            raise TypeError(f"tokens must hold integer ids, got dtype {tokens.dtype}")
        _validate.some_positions("tokens", tokens)
        n = tokens.shape[1]
        if n > self.max_len:
            raise ValueError(f"tokens may have at most max_len={self.max_len} positions, got {n}")
        if tokens.numel() and (int(tokens.min()) < 0 or int(tokens.max()) >= self.vocab):
            raise ValueError(f"tokens must lie in [0, {self.vocab - 1}] (the vocabulary)")
        keep = self._keep(ablate)
        x = self.embed(tokens) + self.position.weight[:n]  # (batch, n, D): the residual stream
        for layer, mask in zip(self.layers, keep):
            x = x + layer(x, mask)
        return self.unembed(x)  # (batch, n, vocab)
