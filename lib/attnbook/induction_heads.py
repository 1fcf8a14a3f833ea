"""Measuring an attention-only model's heads (re-exported by :mod:`attnbook.induction`):
copy accuracy with ablations, previous-token and induction scores, and the
QK and OV circuits of one head.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable

import torch

from . import _validate
from .induction_model import AttentionOnlyTransformer
from .induction_task import RepeatBatch

__all__ = [
    "copy_accuracy",
    "previous_token_score",
    "induction_targets",
    "induction_score",
    "head_scores",
    "qk_circuit",
    "head_output",
    "ov_circuit",
]

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
    _validate.tokens_fit("batch.tokens", batch.tokens, vocab=model.vocab, max_len=model.max_len)
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
    if weights.shape[0] == 0:  # a mean over no sequence is no score (it would be NaN)
        raise ValueError(
            f"weights must hold at least one sequence, got shape {tuple(weights.shape)}"
        )
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
        if value.is_floating_point() or value.is_complex() or value.dtype == torch.bool:
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
    if not isinstance(batch, RepeatBatch):
        raise TypeError(f"batch must be a RepeatBatch, got {type(batch).__name__}")
    _validate.tokens_fit("batch.tokens", batch.tokens, vocab=model.vocab, max_len=model.max_len)
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
    dtype, width = attn.W_q.weight.dtype, model.num_hiddens
    queries = _validate.model_input("queries", queries, ndim=2, dtype=dtype, width=width)
    keys = _validate.model_input("keys", keys, ndim=2, dtype=dtype, width=width)
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
    vectors = _validate.model_input(
        "vectors", vectors, ndim=2, dtype=_validate.param_dtype(model), width=model.num_hiddens
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
