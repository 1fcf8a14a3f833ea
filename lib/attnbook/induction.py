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

import numbers
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import torch
from torch.nn import functional as F

from . import _validate
from .induction_heads import (
    _copies,
    copy_accuracy,
    head_output,
    head_scores,
    induction_score,
    induction_targets,
    ov_circuit,
    previous_token_score,
    qk_circuit,
)
from .induction_model import AttentionOnlyTransformer, CausalAttentionLayer, causal_mask
from .induction_task import RepeatBatch, make_repeat_batch

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
        accuracy = _validate.finite_number("accuracy", accuracy)
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
    if isinstance(heads, (str, bytes)) or not isinstance(heads, Iterable):
        raise TypeError(f"heads must be a list of (layer, head) pairs, got {heads!r}")
    heads = list(heads)
    for pair in heads:
        if not (isinstance(pair, tuple) and len(pair) == 2):
            raise TypeError(f"heads must hold (layer, head) pairs, got {pair!r}")
        for value, upper in zip(pair, (model.num_layers, model.num_heads)):
            if isinstance(value, bool) or not isinstance(value, numbers.Integral):
                raise TypeError(f"heads must hold integer (layer, head) pairs, got {pair!r}")
            if not 0 <= value < upper:
                raise ValueError(
                    f"heads must hold pairs in [0, {model.num_layers - 1}] x "
                    f"[0, {model.num_heads - 1}], got {pair!r}"
                )
    pairs = heads or [(i, j) for i in range(model.num_layers) for j in range(model.num_heads)]
    table: dict[tuple[int, int] | None, float] = {None: copy_accuracy(model, batch)}
    for pair in pairs:
        table[pair] = copy_accuracy(model, batch, ablate=[pair])
    return table
