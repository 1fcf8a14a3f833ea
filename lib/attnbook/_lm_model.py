"""The model of chapter 10: a decoder-only character model with a key-value cache.

:class:`KVCache`, :class:`CausalSelfAttention`, :class:`DecoderBlock` and
:class:`TinyLM`; :mod:`attnbook.lm` exports them with what trains, decodes
and measures them (import them from there).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
from torch import nn

from . import _validate
from .masking import masked_softmax

# ---------------------------------------------------------------- the model


@dataclass
class KVCache:
    """The keys and values of every token seen so far, one pair per layer.

    ``keys[l]`` and ``values[l]`` are (batch, num_heads, t, head_dim) for the
    first t tokens; a forward pass with this cache appends the new tokens'.
    One cache serves one batch of sequences: reusing it at another batch size
    is a ``ValueError``. Each append copies the whole cache (``torch.cat``),
    O(t) work per step; production caches preallocate room for ``max_len``
    positions and write into it instead.
    """

    keys: list[torch.Tensor] = field(default_factory=list)
    values: list[torch.Tensor] = field(default_factory=list)

    @property
    def length(self) -> int:
        """t, the number of tokens whose keys and values are stored."""
        return self.keys[0].shape[2] if self.keys else 0

    def numel(self) -> int:
        """How many numbers the cache holds (every layer, keys and values)."""
        return sum(t.numel() for t in (*self.keys, *self.values))


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention that can read and extend a key-value cache.

    After a forward, ``attention_weights`` is (batch, num_heads, queries, keys).
    """

    def __init__(self, num_hiddens: int, num_heads: int) -> None:
        super().__init__()
        num_hiddens = _validate.positive_int("num_hiddens", num_hiddens)
        num_heads = _validate.positive_int("num_heads", num_heads)
        _validate.heads_divide(num_hiddens, num_heads)
        self.num_heads = num_heads
        self.W_q = nn.Linear(num_hiddens, num_hiddens, bias=False)
        self.W_k = nn.Linear(num_hiddens, num_hiddens, bias=False)
        self.W_v = nn.Linear(num_hiddens, num_hiddens, bias=False)
        self.W_o = nn.Linear(num_hiddens, num_hiddens, bias=False)
        self.attention_weights: torch.Tensor | None = None

    def _heads(self, X: torch.Tensor) -> torch.Tensor:
        batch, steps, hiddens = X.shape  # (batch, steps, num_hiddens)
        p = hiddens // self.num_heads  # named, not -1: an empty batch has no size to infer
        return X.reshape(batch, steps, self.num_heads, p).transpose(1, 2)  # (b, h, s, p)

    def _check_past(self, past: object, batch: int, head_dim: int, weight: torch.Tensor) -> None:
        """past must be (keys, values) of one shape (batch, num_heads, t, head_dim)."""
        if not isinstance(past, tuple | list) or len(past) != 2:
            raise TypeError(
                f"past must be None or a (keys, values) pair, got {type(past).__name__}"
            )
        want = (batch, self.num_heads, "t", head_dim)
        for name, part in zip(("past keys", "past values"), past):
            if not isinstance(part, torch.Tensor):
                raise TypeError(f"{name} must be a torch.Tensor, got {type(part).__name__}")
            shape = tuple(part.shape)
            if part.dim() != 4 or shape[:2] + shape[3:] != (batch, self.num_heads, head_dim):
                raise ValueError(
                    f"{name} must be shaped (batch, heads, t, head_dim) = {want} for this "
                    f"layer and input, got {shape}"
                )
            if part.dtype != weight.dtype or part.device != weight.device:
                raise TypeError(
                    f"{name} must be {weight.dtype} on {weight.device} like the layer, "
                    f"got {part.dtype} on {part.device}"
                )
        if past[0].shape[2] != past[1].shape[2]:
            raise ValueError(
                f"past keys hold {past[0].shape[2]} positions but past values {past[1].shape[2]}"
            )

    def forward(self, X: torch.Tensor, past: tuple | None = None) -> tuple:
        """X: (batch, new, num_hiddens), the new tokens only; past: None or the
        (keys, values) of the earlier tokens, each (batch, heads, t, head_dim).

        Returns (output (batch, new, num_hiddens), (keys, values) of all t + new tokens).
        """
        weight = self.W_q.weight  # (num_hiddens, num_hiddens)
        _validate.model_input("X", X, ndim=3, dtype=weight.dtype, width=weight.shape[1])
        batch, new, hiddens = X.shape
        if past is not None:
            self._check_past(past, batch, hiddens // self.num_heads, weight)
        Q = self._heads(self.W_q(X))  # (batch, heads, new, head_dim)
        K = self._heads(self.W_k(X))
        V = self._heads(self.W_v(X))
        if past is not None:
            K = torch.cat([past[0], K], dim=2)  # (batch, heads, t + new, head_dim)
            V = torch.cat([past[1], V], dim=2)
        heads, keys, head_dim = Q.shape[1], K.shape[2], Q.shape[3]
        start = keys - new  # absolute position of the first new token
        scores = Q @ K.transpose(2, 3) / math.sqrt(head_dim)  # (batch, heads, new, keys)
        # Chapter 4's 2-D valid lengths: the query at position i sees keys 0..i.
        lens = torch.arange(start + 1, keys + 1, device=X.device).expand(batch * heads, new)
        weights = masked_softmax(scores.reshape(batch * heads, new, keys), lens)
        weights = weights.reshape(batch, heads, new, keys)
        self.attention_weights = weights
        out = (weights @ V).transpose(1, 2).reshape(batch, new, hiddens)  # (batch, new, D)
        return self.W_o(out), (K, V)


class DecoderBlock(nn.Module):
    """Pre-LN block: X + attention(LN(X)), then X + FFN(LN(X)), FFN width 4 D."""

    def __init__(self, num_hiddens: int, num_heads: int) -> None:
        super().__init__()
        num_hiddens = _validate.positive_int("num_hiddens", num_hiddens)
        num_heads = _validate.positive_int("num_heads", num_heads)
        self.norm1 = nn.LayerNorm(num_hiddens)
        self.attention = CausalSelfAttention(num_hiddens, num_heads)
        self.norm2 = nn.LayerNorm(num_hiddens)
        self.ffn = nn.Sequential(
            nn.Linear(num_hiddens, 4 * num_hiddens),
            nn.GELU(),
            nn.Linear(4 * num_hiddens, num_hiddens),
        )

    def forward(self, X: torch.Tensor, past: tuple | None = None) -> tuple:
        """X (batch, new, num_hiddens) -> (the same shape, the attention's present)."""
        weight = self.norm1.weight  # (num_hiddens,)
        _validate.model_input("X", X, ndim=3, dtype=weight.dtype, width=weight.shape[0])
        attended, present = self.attention(self.norm1(X), past)
        X = X + attended
        return X + self.ffn(self.norm2(X)), present


class TinyLM(nn.Module):
    """A decoder-only character model.

    Args:
        vocab_size: number of distinct tokens.
        num_hiddens: D, the width of the residual stream.
        num_heads: attention heads per block (must divide num_hiddens).
        num_layers: number of decoder blocks.
        max_len: the most positions the model can see (learned position embeddings).
    """

    def __init__(
        self, vocab_size: int, num_hiddens: int, num_heads: int, num_layers: int, max_len: int
    ) -> None:
        super().__init__()
        self.vocab_size = _validate.positive_int("vocab_size", vocab_size)
        self.num_hiddens = _validate.positive_int("num_hiddens", num_hiddens)
        self.num_heads = _validate.positive_int("num_heads", num_heads)
        self.num_layers = _validate.positive_int("num_layers", num_layers)
        self.max_len = _validate.positive_int("max_len", max_len)
        self.token_embedding = nn.Embedding(vocab_size, num_hiddens)
        self.position_embedding = nn.Embedding(max_len, num_hiddens)
        nn.init.normal_(self.token_embedding.weight, std=0.1)
        nn.init.normal_(self.position_embedding.weight, std=0.1)
        self.blocks = nn.ModuleList(DecoderBlock(num_hiddens, num_heads) for _ in range(num_layers))
        self.norm = nn.LayerNorm(num_hiddens)
        self.output = nn.Linear(num_hiddens, vocab_size)

    def config(self) -> dict:
        """The constructor's arguments."""
        return {
            "vocab_size": self.vocab_size,
            "num_hiddens": self.num_hiddens,
            "num_heads": self.num_heads,
            "num_layers": self.num_layers,
            "max_len": self.max_len,
        }

    def check_ids(self, ids: object, name: str = "ids") -> torch.Tensor:
        """Validate a (batch, t) int64 tensor of token ids in [0, vocab_size)."""
        ids = _validate.tensor(name, ids, ndim=2)
        if ids.dtype != torch.long:
            raise TypeError(f"{name} must have dtype torch.int64 (token ids), got {ids.dtype}")
        if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= self.vocab_size):
            raise ValueError(
                f"{name} must hold ids in [0, {self.vocab_size - 1}], got values from "
                f"{int(ids.min())} to {int(ids.max())} (the model has vocab_size="
                f"{self.vocab_size})"
            )
        return ids

    def forward(self, ids: torch.Tensor, cache: KVCache | None = None) -> torch.Tensor:
        """Next-token logits.

        Args:
            ids: (batch, new) int64 token ids. Without a cache they are the whole
                sequence; with one they are the tokens after the cache's t.
            cache: None, or a :class:`KVCache` (``KVCache()`` to start) that this
                call extends with the new tokens' keys and values, layer by layer.

        Returns:
            (batch, new, vocab_size) logits: row i scores the token after position
            t + i, having seen tokens 0..t + i only.
        """
        ids = self.check_ids(ids)
        if cache is not None and not isinstance(cache, KVCache):
            raise TypeError(f"cache must be a KVCache or None, got {type(cache).__name__}")
        start = cache.length if cache is not None else 0
        if start > 0 and not len(cache.keys) == len(cache.values) == self.num_layers:
            raise ValueError(
                f"cache holds keys of {len(cache.keys)} and values of {len(cache.values)} "
                f"layers, but this model has num_layers={self.num_layers}: a cache belongs to "
                "the model that filled it; start a new lm.KVCache()"
            )
        if start > 0 and cache.keys[0].shape[0] != ids.shape[0]:
            raise ValueError(
                f"cache holds the keys of a batch of {cache.keys[0].shape[0]} sequences, "
                f"but ids has a batch of {ids.shape[0]}; start a new lm.KVCache() for a "
                "new batch"
            )
        new = ids.shape[1]
        if new == 0:
            raise ValueError(f"ids must hold at least one token, got shape {tuple(ids.shape)}")
        if start + new > self.max_len:
            raise ValueError(
                f"ids would reach position {start + new - 1}, beyond max_len={self.max_len} "
                f"(cache holds {start} tokens, ids adds {new})"
            )
        positions = torch.arange(start, start + new, device=ids.device)  # (new,)
        X = self.token_embedding(ids) + self.position_embedding(positions)  # (batch, new, D)
        for layer, block in enumerate(self.blocks):
            past = None
            if cache is not None and start > 0:
                past = (cache.keys[layer], cache.values[layer])
            X, (K, V) = block(X, past)
            if cache is not None:
                if start > 0:
                    cache.keys[layer], cache.values[layer] = K, V
                else:
                    cache.keys.append(K)
                    cache.values.append(V)
        return self.output(self.norm(X))  # (batch, new, vocab_size)
