"""A tiny attention model for associative recall, and the loop that trains it.

:class:`RecallAttention` learns only where to look: each head projects the
query and the keys with its own matrices W_q and W_k, scores them with a
(scaled or unscaled) dot product, and averages the *raw* values with the
softmax weights. With one head there is nothing else, so the loss can only
fall if the weights move onto the right key. With several heads a learned
matrix W_o mixes the heads' outputs.

:func:`train_recall` trains it on fresh batches of
:func:`attnbook.recall.make_recall_batch` and records what the chapter plots:
the loss of every step, and at chosen steps the loss, the right-key accuracy
and a snapshot of the attention weights on a fixed probe batch. Training runs
on one CPU thread (restored afterwards) with seeded data and initialisation,
so a run gives the same numbers every time *on the same machine*. Another CPU
(or instruction set, or thread count) may round the last bits of a matrix
product differently; a well-behaved run hardly notices, but a chaotic one (a
large step, saturated softmax rows) amplifies those bits into visibly
different numbers, so quote such runs as ranges over several seeds.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
from torch import nn

from . import _validate
from .recall import RecallBatch, make_recall_batch, right_key_accuracy
from .scoring import _check_qkv

__all__ = [
    "RecallAttention",
    "TrainingLog",
    "train_recall",
]


class RecallAttention(nn.Module):
    """Multi-head dot-product attention whose only job is to choose keys.

    Args:
        d: size of queries and keys.
        d_v: size of values (default ``d``).
        num_heads: number of heads; each projects to ``head_size`` features.
        head_size: size of each head's projected queries and keys (default
            ``d // num_heads``, at least 1).
        scaled: divide the scores by sqrt(head_size) (True) or not (False).
        seed: integer seed (or ``torch.Generator``) for the initialisation.

    The names follow the book's notation: ``d`` is the size of the raw queries
    and keys (the d of the recall task), and each head compares them after
    projecting to ``head_size`` features, the p of the multi-head chapter. The
    scale, when on, is 1/sqrt(head_size): the d of "1/sqrt(d)" is always the
    size of the vectors whose dot product is taken.
    (:class:`~attnbook.multihead.MultiHeadAttention` takes its model width D,
    ``num_hiddens``, instead, because it projects values and outputs too.)

    The projections start with standard normal entries divided by sqrt(d), so a
    query or key with unit-variance entries keeps unit-variance entries after
    projection (the assumption behind the 1/sqrt(d) scale). W_o (only when
    ``num_heads > 1``) starts the same way with fan-in ``num_heads * d_v``.
    """

    def __init__(
        self,
        d: int,
        d_v: int | None = None,
        num_heads: int = 1,
        head_size: int | None = None,
        scaled: bool = True,
        seed: int | torch.Generator = 0,
    ) -> None:
        super().__init__()
        self.d = _validate.positive_int("d", d)
        self.d_v = self.d if d_v is None else _validate.positive_int("d_v", d_v)
        self.num_heads = _validate.positive_int("num_heads", num_heads)
        if head_size is None:
            head_size = max(1, self.d // self.num_heads)
        self.head_size = _validate.positive_int("head_size", head_size)
        if not isinstance(scaled, bool):
            raise TypeError(f"scaled must be True or False, got {scaled!r}")
        self.scaled = scaled
        g = _validate.generator("seed", seed)
        shape = (self.num_heads, self.head_size, self.d)
        self.W_q = nn.Parameter(torch.randn(shape, generator=g) / math.sqrt(self.d))
        self.W_k = nn.Parameter(torch.randn(shape, generator=g) / math.sqrt(self.d))
        if self.num_heads > 1:
            fan_in = self.num_heads * self.d_v
            self.W_o = nn.Parameter(torch.randn(self.d_v, fan_in, generator=g) / math.sqrt(fan_in))
        else:
            self.register_parameter("W_o", None)
        self.attention_weights: torch.Tensor | None = None

    def scores(self, queries: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        """queries (b, m, d), keys (b, n, d) -> scores (b, heads, m, n)."""
        for name, x in (("queries", queries), ("keys", keys)):
            _validate.model_input(name, x, ndim=3, dtype=self.W_q.dtype, width=self.d)
        if queries.shape[0] != keys.shape[0]:
            raise ValueError(
                f"queries and keys must have the same batch size, got shapes "
                f"{tuple(queries.shape)} and {tuple(keys.shape)}"
            )
        h, p = self.num_heads, self.head_size
        b, m, n = queries.shape[0], queries.shape[1], keys.shape[1]
        q = queries @ self.W_q.reshape(h * p, self.d).T  # (b, m, heads * head_size)
        k = keys @ self.W_k.reshape(h * p, self.d).T  # (b, n, heads * head_size)
        q = q.reshape(b, m, h, p).transpose(1, 2)  # (b, heads, m, head_size)
        k = k.reshape(b, n, h, p).transpose(1, 2)  # (b, heads, n, head_size)
        scores = q @ k.transpose(-1, -2)  # (b, heads, m, n)
        return scores / math.sqrt(self.head_size) if self.scaled else scores

    def forward(self, queries: torch.Tensor, keys: torch.Tensor, values: torch.Tensor):
        """queries (b, m, d), keys (b, n, d), values (b, n, d_v) -> (b, m, d_v).

        Keeps the (b, heads, m, n) weights in ``self.attention_weights``.
        """
        _check_qkv(queries, keys, values)  # 3-D, floating, one dtype, matching batch and items
        if values.shape[-1] != self.d_v:
            raise ValueError(
                f"values must have {self.d_v} features, got shape {tuple(values.shape)}"
            )
        b, m, _ = queries.shape
        scores = self.scores(queries, keys)  # (b, heads, m, n); checks their dtype and width
        weights = torch.softmax(scores, dim=-1)  # (b, heads, m, n), nothing is masked
        self.attention_weights = weights
        pooled = weights @ values.unsqueeze(1)  # (b, heads, m, d_v)
        if self.W_o is None:
            return pooled.squeeze(1)  # (b, m, d_v)
        heads = pooled.transpose(1, 2).reshape(b, m, -1)  # (b, m, heads * d_v)
        return heads @ self.W_o.T  # (b, m, d_v)


@dataclass
class TrainingLog:
    """What :func:`train_recall` recorded.

    Attributes:
        losses: the training loss (mean squared error) of every step.
        grad_norms: the norm of the gradient (all parameters together) at
            every step, before the update.
        steps: the steps at which the probe batch was evaluated (0 = before
            training; step s = after s updates).
        probe_losses: the probe batch's loss at each of ``steps``.
        head_accuracies: at each of ``steps``, a (heads, parts) float tensor:
            the right-key accuracy of each head graded against each part's
            right key (``probe.index[:, part]``).
        accuracies: at each of ``steps``, the right-key accuracy of the task:
            for each part, the accuracy of the head that grades best on it,
            averaged over the parts. With one head and one part this is simply
            the fraction of probe queries whose largest weight is on the right
            key; with two parts, two perfectly specialised heads score 1.
        weights: at each of ``steps``, the probe's attention weights,
            (probe batch, heads, n).
        probe: the fixed probe batch.
    """

    losses: list[float] = field(default_factory=list)
    grad_norms: list[float] = field(default_factory=list)
    steps: list[int] = field(default_factory=list)
    probe_losses: list[float] = field(default_factory=list)
    head_accuracies: list[torch.Tensor] = field(default_factory=list)
    accuracies: list[float] = field(default_factory=list)
    weights: list[torch.Tensor] = field(default_factory=list)
    probe: RecallBatch | None = None


def _record_steps(record_at: object, steps: int) -> list[int]:
    if isinstance(record_at, (str, bytes)) or not isinstance(record_at, Sequence):
        raise TypeError(f"record_at must be a sequence of step numbers, got {record_at!r}")
    chosen = set()
    for i, step in enumerate(record_at):
        if isinstance(step, bool) or not isinstance(step, numbers.Integral):
            raise TypeError(f"record_at[{i}] must be an integer, got {step!r}")
        if not 0 <= step <= steps:
            raise ValueError(f"record_at[{i}] must lie in [0, steps={steps}], got {step}")
        chosen.add(int(step))
    return sorted(chosen | {0, steps})


def train_recall(
    model: RecallAttention,
    steps: int = 300,
    batch: int = 64,
    n: int = 8,
    noise: float = 0.1,
    parts: int = 1,
    lr: float = 0.5,
    record_at: Sequence[int] = (),
    probe_size: int = 256,
    seed: int = 0,
    optimizer: str = "gd",
) -> TrainingLog:
    """Train ``model`` in place on associative recall; return the log.

    Every step draws a fresh batch of ``batch`` examples with ``n`` pairs
    (sizes from the model's ``d`` and ``d_v``) and takes one step of plain
    gradient descent (no momentum, learning rate ``lr``) on the mean squared
    error between the model's output and the target values. Plain steps keep
    the size of the gradient visible: an optimizer such as Adam rescales it.
    ``optimizer="adam"`` takes Adam steps instead (``torch.optim.Adam`` with
    its default betas and epsilon, learning rate ``lr``), on the same batches. The
    probe batch (``probe_size`` examples, drawn once from ``seed + 1``) is
    evaluated at step 0, at the last step and at every step in ``record_at``.

    Runs on one CPU thread (the previous thread count is restored), so the same
    arguments give the same log on the same machine. On another CPU a chaotic
    run (large ``lr``, saturated rows) can end with visibly different numbers:
    see the module docstring.
    """
    if not isinstance(model, RecallAttention):
        raise TypeError(f"model must be a RecallAttention, got {type(model).__name__}")
    steps = _validate.positive_int("steps", steps)
    batch = _validate.positive_int("batch", batch)
    probe_size = _validate.positive_int("probe_size", probe_size)
    lr = _validate.positive_number("lr", lr)
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"seed must be an integer, got {seed!r}")
    if optimizer not in ("gd", "adam"):
        raise ValueError(f"optimizer must be 'gd' or 'adam', got {optimizer!r}")
    recorded = _record_steps(record_at, steps)
    task = {"n": n, "d": model.d, "d_v": model.d_v, "noise": noise, "parts": parts}
    probe = make_recall_batch(probe_size, seed=int(seed) + 1, **task)  # checks the task args
    data = torch.Generator().manual_seed(int(seed))
    parameters = [p for p in model.parameters() if p.requires_grad]
    adam = torch.optim.Adam(parameters, lr=lr) if optimizer == "adam" else None
    log = TrainingLog(probe=probe)

    def evaluate(step: int) -> None:
        with torch.no_grad():
            output = model(probe.queries, probe.keys, probe.values)
            weights = model.attention_weights[:, :, 0, :]  # (probe, heads, n)
        log.steps.append(step)
        log.probe_losses.append(float(((output - probe.targets) ** 2).mean()))
        graded = torch.stack(
            [
                torch.stack([right_key_accuracy(weights[:, h], part) for part in probe.index.T])
                for h in range(weights.shape[1])
            ]
        )  # (heads, parts)
        log.head_accuracies.append(graded)
        log.accuracies.append(float(graded.max(dim=0).values.mean()))
        log.weights.append(weights.clone())

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    was_training = model.training
    model.train()
    try:
        evaluate(0)
        for step in range(1, steps + 1):
            sample = make_recall_batch(batch, seed=data, **task)
            output = model(sample.queries, sample.keys, sample.values)
            loss = ((output - sample.targets) ** 2).mean()
            grads = torch.autograd.grad(loss, parameters)
            log.grad_norms.append(float(torch.cat([g.reshape(-1) for g in grads]).norm()))
            if adam is not None:
                for parameter, grad in zip(parameters, grads):
                    parameter.grad = grad
                adam.step()
                adam.zero_grad(set_to_none=True)
            else:
                with torch.no_grad():
                    for parameter, grad in zip(parameters, grads):
                        parameter -= lr * grad  # plain gradient descent
            log.losses.append(float(loss.detach()))
            if step in recorded:
                evaluate(step)
    finally:
        torch.set_num_threads(threads)
        model.train(was_training)
    return log
