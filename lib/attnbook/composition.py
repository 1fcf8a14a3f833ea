"""Path ablation: remove layer 0's output from only some of layer 1's inputs.

A head of layer 1 reads the residual stream three times: once for its queries,
once for its keys and once for its values, and the stream also reaches the
unembedding directly. :func:`path_ablation_accuracy` runs a two-layer
:class:`~attnbook.induction.AttentionOnlyTransformer` with everything layer 0
wrote taken out of the chosen reads only; every other read sees the full
stream. If removing layer 0 from the keys alone breaks copying while removing it
from the queries, the values or the direct path does not, the two layers
compose through the keys (K-composition).
"""

from __future__ import annotations

import math

import torch

from . import _validate
from .induction import AttentionOnlyTransformer, CausalAttentionLayer, RepeatBatch, causal_mask

__all__ = ["PATHS", "path_ablation_accuracy"]

PATHS = ("queries", "keys", "values", "direct")


def _layer_from(layer: CausalAttentionLayer, xq, xk, xv) -> torch.Tensor:
    """What ``layer`` adds to the stream when its queries, keys and values read different streams."""
    b, n, _ = xq.shape
    q, k, v = layer._split(layer.W_q(xq)), layer._split(layer.W_k(xk)), layer._split(layer.W_v(xv))
    scores = q @ k.transpose(-1, -2) / math.sqrt(layer.head_size)  # (b, heads, n, n)
    scores = scores.masked_fill(~causal_mask(n, xq.device), float("-inf"))
    heads = torch.softmax(scores, dim=-1) @ v  # (b, heads, n, head_size)
    return layer.W_o(heads.transpose(1, 2).reshape(b, n, layer.num_hiddens))


def path_ablation_accuracy(
    model: AttentionOnlyTransformer, batch: RepeatBatch, paths: tuple[str, ...] | list[str]
) -> float:
    """Copy accuracy of a two-layer model with layer 0 removed from some reads only.

    Args:
        model: a two-layer :class:`~attnbook.induction.AttentionOnlyTransformer`.
        batch: the :class:`~attnbook.induction.RepeatBatch` to score, as in
            :func:`attnbook.induction.copy_accuracy`.
        paths: which reads lose layer 0's output (set to zero), any of
            ``"queries"``, ``"keys"``, ``"values"`` (layer 1's three reads) and
            ``"direct"`` (the stream that reaches the unembedding). An empty
            tuple removes nothing; all four remove layer 0 entirely.

    Returns:
        The fraction of the second copy's predictable tokens predicted right.
    """
    if not isinstance(model, AttentionOnlyTransformer):
        raise TypeError(f"model must be an AttentionOnlyTransformer, got {type(model).__name__}")
    if model.num_layers != 2:
        raise ValueError(f"model must have num_layers=2, got num_layers={model.num_layers}")
    if not isinstance(batch, RepeatBatch):
        raise TypeError(f"batch must be a RepeatBatch, got {type(batch).__name__}")
    _validate.tokens_fit("batch.tokens", batch.tokens, vocab=model.vocab, max_len=model.max_len)
    if isinstance(paths, str) or not isinstance(paths, (tuple, list)):
        raise TypeError(f"paths must be a tuple or list of names from {PATHS}, got {paths!r}")
    unknown = [p for p in paths if p not in PATHS]
    if unknown:
        raise ValueError(f"paths may only hold names from {PATHS}, got {unknown}")
    tokens = _validate.ids("batch.tokens", batch.tokens, upper=model.embed.num_embeddings, ndim=2)
    if tokens.shape[1] > model.position.num_embeddings:
        raise ValueError(
            f"batch.tokens has {tokens.shape[1]} positions, more than the model's "
            f"max_len={model.position.num_embeddings}"
        )
    with torch.no_grad():
        without = model.embed(tokens) + model.position.weight[: tokens.shape[1]]  # (b, n, D)
        full = without + model.layers[0](without)
        xq, xk, xv = (without if name in paths else full for name in PATHS[:3])
        final = (without if "direct" in paths else full) + _layer_from(model.layers[1], xq, xk, xv)
        logits = model.unembed(final)  # (batch, n, vocab)
    positions = batch.copy_positions()  # (batch, segment - 1)
    rows = torch.arange(positions.shape[0]).unsqueeze(1)
    predicted = logits[rows, positions].argmax(dim=-1)
    return float((predicted == tokens[rows, positions + 1]).double().mean())
