"""Induction heads: the repeated-segment task, an attention-only model, and its heads.

:func:`make_repeat_batch` draws sequences of random tokens in which one segment
appears twice, the second copy after a random gap. Predicting the second copy
needs two steps: find where the current token appeared before, and copy the
token that came after it.

:class:`AttentionOnlyTransformer` is the smallest model that can do that: token
and learned position embeddings, a stack of causal multi-head attention layers
(each adds its output to the residual stream; no MLP, no normalisation) and a
linear unembedding. With no MLP and no normalisation its circuits are plain
matrix products (:func:`qk_circuit`, :func:`ov_circuit`).

:func:`train_induction` trains it on fresh batches and records the loss, the
copy accuracy and snapshots of every head's attention on a probe sequence.
:func:`previous_token_score` and :func:`induction_score` find the two kinds of
head from their attention patterns, and :func:`copy_accuracy` with ``ablate=``
measures what the model loses without a head.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import torch
from torch import nn
from torch.nn import functional as F

from . import _validate

__all__ = [
    "RepeatBatch",
    "make_repeat_batch",
    "causal_mask",
    "CausalAttentionLayer",
    "AttentionOnlyTransformer",
    "copy_accuracy",
    "previous_token_score",
    "induction_targets",
    "induction_score",
    "head_scores",
    "qk_circuit",
    "head_output",
    "ov_circuit",
    "InductionLog",
    "train_induction",
    "ablation_table",
]


def _generator(name: str, value: object) -> torch.Generator:
    if isinstance(value, torch.Generator):
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer seed or a torch.Generator, got {value!r}")
    return torch.Generator().manual_seed(int(value))


def _nonnegative_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value!r}")
    return int(value)


# ---------------------------------------------------------------- the task


@dataclass
class RepeatBatch:
    """A batch of the repeated-segment task.

    Attributes:
        tokens: (batch, length) int64 token ids.
        first: (batch,) start of the first copy of the segment.
        second: (batch,) start of the second copy (``first + segment + gap``).
        segment: the segment's length.
    """

    tokens: torch.Tensor
    first: torch.Tensor
    second: torch.Tensor
    segment: int

    @property
    def gap(self) -> torch.Tensor:
        """(batch,) tokens between the end of the first copy and the second."""
        return self.second - self.first - self.segment

    def copy_positions(self) -> torch.Tensor:
        """(batch, segment - 1) positions whose *next* token is predictable by copying.

        The query at ``second + j`` (j = 0 .. segment - 2) predicts the token at
        ``second + j + 1``, which equals the token at ``first + j + 1``. (The
        first token of the second copy cannot be known in advance.)
        """
        offsets = torch.arange(self.segment - 1, device=self.tokens.device)
        return self.second.unsqueeze(1) + offsets  # (batch, segment - 1)


def make_repeat_batch(
    batch: int,
    length: int = 40,
    segment: int = 12,
    vocab: int = 64,
    max_gap: int = 12,
    min_gap: int = 0,
    seed: int | torch.Generator = 0,
) -> RepeatBatch:
    """Draw ``batch`` sequences of ``length`` random tokens with one segment repeated.

    Each sequence is uniform random tokens from ``range(vocab)``; a segment of
    ``segment`` distinct tokens is written at a random start ``first`` and again
    at ``second = first + segment + gap``, with ``gap`` uniform in
    ``[min_gap, max_gap]`` and ``first`` uniform over the starts that fit. A
    fixed gap (``min_gap == max_gap``) puts the source of every copied token at
    a fixed distance, which a single layer can find by position alone.

    Args:
        seed: an integer seed or a ``torch.Generator`` (advanced in place).

    Returns:
        A :class:`RepeatBatch` (tokens (batch, length) int64).
    """
    batch = _validate.positive_int("batch", batch)
    length = _validate.positive_int("length", length)
    vocab = _validate.positive_int("vocab", vocab)
    segment = _validate.positive_int("segment", segment)
    if segment < 2:
        raise ValueError(f"segment must be >= 2 (one token to cue, one to copy), got {segment}")
    if segment > vocab:
        raise ValueError(
            f"segment must be <= vocab (its tokens are distinct), got segment={segment}, "
            f"vocab={vocab}"
        )
    min_gap = _nonnegative_int("min_gap", min_gap)
    max_gap = _nonnegative_int("max_gap", max_gap)
    if min_gap > max_gap:
        raise ValueError(f"min_gap must be <= max_gap, got min_gap={min_gap}, max_gap={max_gap}")
    if 2 * segment + max_gap > length:
        raise ValueError(
            f"length must hold both copies and the largest gap (2 * segment + max_gap = "
            f"{2 * segment + max_gap}), got length={length}"
        )
    g = _generator("seed", seed)
    tokens = torch.randint(vocab, (batch, length), generator=g)
    gaps = torch.randint(min_gap, max_gap + 1, (batch,), generator=g)
    room = length - 2 * segment - gaps + 1  # number of possible starts, >= 1
    first = (torch.rand(batch, generator=g) * room).long().clamp(max=room - 1)
    # Distinct tokens in the segment: the first k of a random permutation.
    segments = torch.rand(batch, vocab, generator=g).argsort(dim=1)[:, :segment]
    second = first + segment + gaps
    rows = torch.arange(batch).unsqueeze(1)
    offsets = torch.arange(segment)
    tokens[rows, first.unsqueeze(1) + offsets] = segments
    tokens[rows, second.unsqueeze(1) + offsets] = segments
    return RepeatBatch(tokens=tokens, first=first, second=second, segment=segment)


# ---------------------------------------------------------------- the model


def causal_mask(n: int, device: torch.device | None = None) -> torch.Tensor:
    """(n, n) boolean mask, True where query i may see key j (j <= i)."""
    n = _validate.positive_int("n", n)
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
        if num_hiddens % num_heads:
            raise ValueError(
                f"num_heads must divide num_hiddens, got num_hiddens={num_hiddens}, "
                f"num_heads={num_heads}"
            )
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


# ---------------------------------------------------------------- measuring


def copy_accuracy(
    model: AttentionOnlyTransformer,
    batch: RepeatBatch,
    ablate: Iterable[tuple[int, int]] | None = None,
) -> float:
    """Fraction of the second copy's predictable tokens that ``model`` predicts right.

    Uses :meth:`RepeatBatch.copy_positions`: the query at ``second + j``
    must put its largest logit on the token at ``second + j + 1``.
    ``ablate`` switches (layer, head) pairs off, as in the model's forward.
    """
    if not isinstance(model, AttentionOnlyTransformer):
        raise TypeError(f"model must be an AttentionOnlyTransformer, got {type(model).__name__}")
    if not isinstance(batch, RepeatBatch):
        raise TypeError(f"batch must be a RepeatBatch, got {type(batch).__name__}")
    with torch.no_grad():
        logits = model(batch.tokens, ablate=ablate)  # (batch, n, vocab)
    positions = batch.copy_positions()  # (batch, segment - 1)
    rows = torch.arange(positions.shape[0]).unsqueeze(1)
    predicted = logits[rows, positions].argmax(dim=-1)
    return float((predicted == batch.tokens[rows, positions + 1]).double().mean())


def _weights(name: str, weights: object) -> torch.Tensor:
    weights = _validate.tensor(name, weights, ndim=4, floating=True)
    if weights.shape[-1] != weights.shape[-2]:
        raise ValueError(
            f"{name} must be (batch, heads, queries, keys) self-attention weights with "
            f"queries == keys, got shape {tuple(weights.shape)}"
        )
    if weights.shape[-1] < 2:
        raise ValueError(f"{name} must have at least 2 positions, got shape {tuple(weights.shape)}")
    return weights


def previous_token_score(weights: torch.Tensor) -> torch.Tensor:
    """How much each head attends to the position just before the query.

    Args:
        weights: (batch, heads, n, n) attention weights (rows are queries).

    Returns:
        (heads,) the weight on key ``i - 1`` averaged over queries ``i = 1 ..
        n - 1`` and the batch (query 0 has no previous token). 1 for a perfect
        previous-token head; 1/(i + 1) at query i for uniform causal attention.
    """
    weights = _weights("weights", weights)
    diagonal = weights.diagonal(offset=-1, dim1=-2, dim2=-1)  # (batch, heads, n - 1)
    return diagonal.mean(dim=(0, 2))


def induction_targets(
    first: torch.Tensor, second: torch.Tensor, segment: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """(queries, keys), each (batch, segment): where an induction head looks.

    The query at ``second + j`` (the token that also stands at ``first + j``)
    should attend to ``first + j + 1``, the token that came *after* the earlier
    occurrence of the current token. Queries run over the whole second copy,
    j = 0 .. segment - 1.
    """
    segment = _validate.positive_int("segment", segment)
    for name, value in (("first", first), ("second", second)):
        _validate.tensor(name, value, ndim=1)
        if value.is_floating_point() or value.dtype == torch.bool:
            raise TypeError(f"{name} must hold integer positions, got dtype {value.dtype}")
    if first.shape != second.shape:
        raise ValueError(
            f"first and second must have the same shape, got {tuple(first.shape)} and "
            f"{tuple(second.shape)}"
        )
    for name, value in (("first", first), ("second", second)):
        if value.numel() and bool((value < 0).any()):
            raise ValueError(f"{name} must hold positions >= 0, got {value.min().item()}")
    if bool((second < first + segment).any()):
        raise ValueError("second must start at least `segment` positions after first")
    offsets = torch.arange(segment, device=first.device)
    queries = second.long().unsqueeze(1) + offsets
    keys = first.long().unsqueeze(1) + offsets + 1
    return queries, keys


def induction_score(
    weights: torch.Tensor, first: torch.Tensor, second: torch.Tensor, segment: int
) -> torch.Tensor:
    """How much each head attends to the token after the earlier copy of the query's token.

    Args:
        weights: (batch, heads, n, n) attention weights on sequences of the task.
        first, second: (batch,) starts of the two copies (``RepeatBatch.first``,
            ``RepeatBatch.second``).
        segment: the segment's length.

    Returns:
        (heads,) the weight on ``first + j + 1`` from the query at ``second + j``,
        averaged over j = 0 .. segment - 1 and the batch (see
        :func:`induction_targets`). 1 for a perfect induction head.
    """
    weights = _weights("weights", weights)
    queries, keys = induction_targets(first, second, segment)  # (batch, segment) each
    b, _, n, _ = weights.shape
    if queries.shape[0] != b:
        raise ValueError(
            f"first and second must have one entry per sequence of weights ({b}), "
            f"got {queries.shape[0]}"
        )
    if int(queries.max()) >= n:
        raise ValueError(
            f"the second copy must end inside the {n} positions of weights, "
            f"got it ending at {int(queries.max())}"
        )
    rows = torch.arange(b).unsqueeze(1)
    picked = weights.permute(0, 2, 3, 1)[rows, queries, keys]  # (batch, segment, heads)
    return picked.mean(dim=(0, 1))


def _copies(batch: RepeatBatch) -> tuple[torch.Tensor, torch.Tensor, int]:
    return batch.first, batch.second, batch.segment


def head_scores(model: AttentionOnlyTransformer, batch: RepeatBatch) -> dict[str, torch.Tensor]:
    """Both scores for every head: ``{"previous": (layers, heads), "induction": ...}``."""
    if not isinstance(model, AttentionOnlyTransformer):
        raise TypeError(f"model must be an AttentionOnlyTransformer, got {type(model).__name__}")
    with torch.no_grad():
        model(batch.tokens)
    weights = model.attention_weights
    return {
        "previous": torch.stack([previous_token_score(w) for w in weights]),
        "induction": torch.stack([induction_score(w, *_copies(batch)) for w in weights]),
    }


# ---------------------------------------------------------------- circuits


def _head(model: AttentionOnlyTransformer, layer: int, head: int) -> slice:
    if not isinstance(model, AttentionOnlyTransformer):
        raise TypeError(f"model must be an AttentionOnlyTransformer, got {type(model).__name__}")
    for name, value, upper in (("layer", layer, model.num_layers), ("head", head, model.num_heads)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise TypeError(f"{name} must be an integer, got {value!r}")
        if not 0 <= value < upper:
            raise ValueError(f"{name} must lie in [0, {upper - 1}], got {value}")
    p = model.layers[layer].head_size
    return slice(head * p, (head + 1) * p)


def qk_circuit(
    model: AttentionOnlyTransformer,
    layer: int,
    head: int,
    queries: torch.Tensor,
    keys: torch.Tensor,
) -> torch.Tensor:
    """The bilinear score of one head: ``queries W_q^T W_k keys^T / sqrt(head_size)``.

    Args:
        queries: (m, D) residual-stream vectors the queries are read from.
        keys: (n, D) residual-stream vectors the keys are read from.

    Returns:
        (m, n) scores before the softmax (rows are queries). With
        ``queries = keys = model.embed.weight`` this is the head's token-to-token
        QK circuit; with position embeddings, its position-to-position one.
    """
    h = _head(model, layer, head)
    attn = model.layers[layer]
    queries = _validate.tensor("queries", queries, ndim=2, floating=True)
    keys = _validate.tensor("keys", keys, ndim=2, floating=True)
    with torch.no_grad():
        q = queries @ attn.W_q.weight[h].T  # (m, head_size)
        k = keys @ attn.W_k.weight[h].T  # (n, head_size)
        return q @ k.T / math.sqrt(attn.head_size)  # (m, n)


def head_output(
    model: AttentionOnlyTransformer, layer: int, head: int, vectors: torch.Tensor
) -> torch.Tensor:
    """(m, D) what one head adds to the stream when it attends fully to each of ``vectors``.

    ``vectors`` is (m, D): residual-stream contents of the attended position.
    The result is ``vectors W_v[head]^T W_o[:, head]^T``, the head's OV map.
    """
    h = _head(model, layer, head)
    attn = model.layers[layer]
    vectors = _validate.tensor("vectors", vectors, ndim=2, floating=True)
    if vectors.shape[1] != model.num_hiddens:
        raise ValueError(
            f"vectors must have {model.num_hiddens} features, got shape {tuple(vectors.shape)}"
        )
    with torch.no_grad():
        return vectors @ attn.W_v.weight[h].T @ attn.W_o.weight[:, h].T  # (m, D)


def ov_circuit(model: AttentionOnlyTransformer, layer: int, head: int) -> torch.Tensor:
    """(vocab, vocab) logits that one head writes for each token it attends to.

    Row t is ``W_U W_o[:, head] W_v[head] e_t``: the logits added when the head
    puts all its weight on a position holding token t (read directly from the
    token embedding). A copying head has a large diagonal.
    """
    _validate.module("model", model, AttentionOnlyTransformer)
    out = head_output(model, layer, head, model.embed.weight.detach())  # (vocab, D)
    with torch.no_grad():
        return model.unembed(out)  # (vocab, vocab): rows are attended tokens


# ---------------------------------------------------------------- training


@dataclass
class InductionLog:
    """What :func:`train_induction` recorded.

    Attributes:
        losses: training loss of every step: the cross-entropy over every
            position, or over the second copy's predictable tokens only when
            trained with ``copy_only=True``.
        steps: steps at which the probe batch was evaluated (0 = before training).
        probe_losses: the probe's loss on the second copy's predictable tokens.
        accuracies: the probe's copy accuracy (:func:`copy_accuracy`).
        patterns: at each of ``steps``, every layer's weights on probe sequence
            0, a (layers, heads, n, n) tensor.
        previous_scores, induction_scores: at each of ``steps``, (layers, heads)
            head scores on the whole probe batch.
        probe: the fixed probe batch.
    """

    losses: list[float] = field(default_factory=list)
    steps: list[int] = field(default_factory=list)
    probe_losses: list[float] = field(default_factory=list)
    accuracies: list[float] = field(default_factory=list)
    patterns: list[torch.Tensor] = field(default_factory=list)
    previous_scores: list[torch.Tensor] = field(default_factory=list)
    induction_scores: list[torch.Tensor] = field(default_factory=list)
    probe: RepeatBatch | None = None

    def first_step_above(self, accuracy: float) -> int | None:
        """The first recorded step whose copy accuracy exceeds ``accuracy`` (None if never)."""
        for step, value in zip(self.steps, self.accuracies):
            if value > accuracy:
                return step
        return None


def _record_steps(record_every: int, steps: int) -> list[int]:
    every = _validate.positive_int("record_every", record_every)
    return sorted(set(range(0, steps + 1, every)) | {steps})


def train_induction(
    model: AttentionOnlyTransformer,
    steps: int = 400,
    batch: int = 64,
    lr: float = 3e-3,
    record_every: int = 25,
    probe_size: int = 128,
    seed: int = 0,
    task: dict | None = None,
    copy_only: bool = False,
) -> InductionLog:
    """Train ``model`` in place on the repeated-segment task; return the log.

    Every step draws a fresh batch (:func:`make_repeat_batch` with the model's
    vocabulary and length and the options in ``task``) and takes one AdamW step
    (learning rate ``lr``, PyTorch's default weight decay) on the next-token
    cross-entropy of every position (``copy_only=True``: of the second copy's
    predictable tokens only, :meth:`RepeatBatch.copy_positions`). Every ``record_every`` steps (and at step
    0 and the last step) the probe batch (``probe_size`` sequences drawn from
    ``seed + 1``) is evaluated.

    Runs on one CPU thread (the previous thread count is restored), with seeded
    data, so the same arguments give the same log on the same machine.
    """
    if not isinstance(model, AttentionOnlyTransformer):
        raise TypeError(f"model must be an AttentionOnlyTransformer, got {type(model).__name__}")
    steps = _validate.positive_int("steps", steps)
    batch = _validate.positive_int("batch", batch)
    probe_size = _validate.positive_int("probe_size", probe_size)
    lr = _validate.positive_number("lr", lr)
    copy_only = _validate.flag("copy_only", copy_only)
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"seed must be an integer, got {seed!r}")
    options = {"length": model.max_len, "vocab": model.vocab, **(task or {})}
    recorded = set(_record_steps(record_every, steps))
    probe = make_repeat_batch(probe_size, seed=int(seed) + 1, **options)  # checks the options
    device = _validate.device_of(model)  # data drawn on the CPU, moved to the model
    probe = _validate.batch_to(probe, device)
    data = torch.Generator().manual_seed(int(seed))
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    log = InductionLog(probe=probe)
    positions = probe.copy_positions()
    rows = torch.arange(probe_size).unsqueeze(1)

    def evaluate(step: int) -> None:
        with torch.no_grad():
            logits = model(probe.tokens)
            weights = model.attention_weights
            picked = logits[rows, positions]  # (probe, segment - 1, vocab)
            targets = probe.tokens[rows, positions + 1]
            log.probe_losses.append(float(F.cross_entropy(picked.flatten(0, 1), targets.flatten())))
            log.accuracies.append(float((picked.argmax(-1) == targets).double().mean()))
            log.patterns.append(torch.stack([w[0] for w in weights]).clone())
            log.previous_scores.append(torch.stack([previous_token_score(w) for w in weights]))
            log.induction_scores.append(
                torch.stack([induction_score(w, *_copies(probe)) for w in weights])
            )
        log.steps.append(step)

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    was_training = model.training
    model.train()
    try:
        evaluate(0)
        for step in range(1, steps + 1):
            sample = _validate.batch_to(make_repeat_batch(batch, seed=data, **options), device)
            logits = model(sample.tokens[:, :-1])  # (batch, n - 1, vocab)
            if copy_only:
                where = sample.copy_positions()  # (batch, segment - 1)
                picked = logits[torch.arange(batch).unsqueeze(1), where]
                loss = F.cross_entropy(
                    picked.flatten(0, 1), sample.tokens.gather(1, where + 1).flatten()
                )
            else:
                loss = F.cross_entropy(logits.flatten(0, 1), sample.tokens[:, 1:].flatten())
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            log.losses.append(float(loss.detach()))
            if step in recorded:
                evaluate(step)
    finally:
        torch.set_num_threads(threads)
        model.train(was_training)
    return log


def ablation_table(
    model: AttentionOnlyTransformer, batch: RepeatBatch, heads: Sequence[tuple[int, int]] = ()
) -> dict[tuple[int, int] | None, float]:
    """Copy accuracy with nothing removed (key None) and with each head removed alone.

    ``heads`` defaults to every (layer, head) pair of the model.
    """
    if not isinstance(model, AttentionOnlyTransformer):
        raise TypeError(f"model must be an AttentionOnlyTransformer, got {type(model).__name__}")
    pairs = list(heads) or [(i, j) for i in range(model.num_layers) for j in range(model.num_heads)]
    table: dict[tuple[int, int] | None, float] = {None: copy_accuracy(model, batch)}
    for pair in pairs:
        table[pair] = copy_accuracy(model, batch, ablate=[pair])
    return table
