"""Train short, test long: five ways to give a model positions, measured.

The *copy task* (:func:`make_copy_batch`): a sequence of even length L whose
first half is L/2 distinct random tokens and whose second half repeats them.
From the middle on, every next token can be found by looking back L/2
positions, i.e. by an induction head. Each training batch has its own random
length, so no model can learn "exactly 16 back"; tests use longer sequences
than any seen in training.

The *k-back task* (:func:`make_kback_batch`): random tokens, and at every
position i >= k the answer is the token at i - k. It needs an exact offset.

:class:`PositionModel` is a small attention-only Transformer (pre-LN, no MLP)
whose only difference between runs is where position comes from
(``SCHEMES``): nothing but the causal mask ("nope"), sinusoids added to the
input ("sinusoidal"), a learned table added to the input ("learned"),
rotated queries and keys ("rope") or a linear distance penalty on the scores
("alibi").
"""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import resources

import torch
from torch import nn
from torch.nn import functional as F

from . import _validate
from .alibi import alibi_bias
from .positional import sinusoidal_encoding
from .rope import apply_rope

__all__ = [
    "SCHEMES",
    "SCHEME_NAMES",
    "TaskBatch",
    "make_copy_batch",
    "make_kback_batch",
    "TASKS",
    "SWEEP_FILE",
    "PositionAttention",
    "PositionModel",
    "task_accuracy",
    "evaluate",
    "copy_head_score",
    "TrainLog",
    "train_positions",
    "load_sweep",
    "sweep_ranges",
    "rescale_rope",
    "accuracy_by_position",
]

SCHEMES = ("nope", "sinusoidal", "learned", "rope", "alibi")
SCHEME_NAMES = {
    "nope": "NoPE",
    "sinusoidal": "sinusoidal",
    "learned": "learned",
    "rope": "RoPE",
    "alibi": "ALiBi",
}


@dataclass
class TaskBatch:
    """Tokens, the answer at each position, and which positions are scored.

    Attributes:
        tokens: (batch, n) int64 inputs.
        targets: (batch, n) int64 answer at each position (0 where not scored).
        scored: (n,) bool, the positions whose answers count.
    """

    tokens: torch.Tensor
    targets: torch.Tensor
    scored: torch.Tensor


def make_copy_batch(
    batch: int, length: int, vocab: int = 64, seed: int | torch.Generator = 0
) -> TaskBatch:
    """The copy task: L/2 distinct random tokens, then the same tokens again.

    The answer at position i is the next token, ``tokens[i + 1]``; positions
    L/2 .. L - 2 are scored (each answer there is the token L/2 - 1 positions
    back from i, the one after the earlier copy of ``tokens[i]``).
    """
    batch = _validate.positive_int("batch", batch)
    length = _validate.positive_int("length", length)
    vocab = _validate.positive_int("vocab", vocab)
    if length % 2 or length < 4:
        raise ValueError(f"length must be even and >= 4, got {length}")
    half = length // 2
    if half > vocab:
        raise ValueError(
            f"length / 2 must be <= vocab (the first half is distinct tokens), got "
            f"length={length}, vocab={vocab}"
        )
    g = _validate.generator("seed", seed)
    first = torch.rand(batch, vocab, generator=g).argsort(dim=1)[:, :half]  # (batch, L/2)
    tokens = torch.cat([first, first], dim=1)  # (batch, L)
    targets = torch.zeros_like(tokens)
    targets[:, :-1] = tokens[:, 1:]
    scored = torch.zeros(length, dtype=torch.bool)
    scored[half : length - 1] = True
    return TaskBatch(tokens, targets, scored)


def make_kback_batch(
    batch: int, length: int, k: int = 3, vocab: int = 64, seed: int | torch.Generator = 0
) -> TaskBatch:
    """The k-back task: uniform random tokens; the answer at i >= k is ``tokens[i - k]``."""
    batch = _validate.positive_int("batch", batch)
    length = _validate.positive_int("length", length)
    vocab = _validate.positive_int("vocab", vocab)
    k = _validate.positive_int("k", k)
    if length <= k:
        raise ValueError(f"length must exceed k={k}, got {length}")
    g = _validate.generator("seed", seed)
    tokens = torch.randint(vocab, (batch, length), generator=g)
    targets = torch.zeros_like(tokens)
    targets[:, k:] = tokens[:, :-k]
    scored = torch.zeros(length, dtype=torch.bool)
    scored[k:] = True
    return TaskBatch(tokens, targets, scored)


TASKS = {"copy": make_copy_batch, "kback": make_kback_batch}
SWEEP_FILE = "sweep.json"


class PositionAttention(nn.Module):
    """Causal multi-head self-attention with one of the five position schemes.

    Projections ``W_q``, ``W_k``, ``W_v``, ``W_o`` (``nn.Linear``, no bias);
    with ``scheme="rope"`` every head's queries and keys are rotated by
    :func:`attnbook.rope.apply_rope`, with ``"alibi"`` the scores get
    :func:`attnbook.alibi.alibi_bias`; the other schemes act on the input.
    After a forward, ``attention_weights`` is (batch, heads, queries, keys).
    """

    def __init__(self, num_hiddens: int, num_heads: int, scheme: str) -> None:
        super().__init__()
        num_hiddens = _validate.positive_int("num_hiddens", num_hiddens)
        num_heads = _validate.positive_int("num_heads", num_heads)
        if scheme not in SCHEMES:
            raise ValueError(f"scheme must be one of {SCHEMES}, got {scheme!r}")
        _validate.heads_divide(num_hiddens, num_heads)
        self.num_heads, self.head_size, self.scheme = num_heads, num_hiddens // num_heads, scheme
        if scheme == "rope" and self.head_size % 2:
            raise ValueError(
                f"RoPE rotates pairs of features: the head size num_hiddens / num_heads must "
                f"be even, got {self.head_size}"
            )
        self.W_q = nn.Linear(num_hiddens, num_hiddens, bias=False)
        self.W_k = nn.Linear(num_hiddens, num_hiddens, bias=False)
        self.W_v = nn.Linear(num_hiddens, num_hiddens, bias=False)
        self.W_o = nn.Linear(num_hiddens, num_hiddens, bias=False)
        self.attention_weights: torch.Tensor | None = None
        # RoPE only (see rescale_rope): the frequencies' base, and a factor on
        # the positions (below 1 for position interpolation).
        self.rope_base, self.position_scale = 10000.0, 1.0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x (batch, n, num_hiddens) -> (batch, n, num_hiddens)."""
        weight = self.W_q.weight  # (num_hiddens, num_hiddens)
        _validate.model_input("x", x, ndim=3, dtype=weight.dtype, width=weight.shape[1])
        b, n, D = x.shape
        split = lambda t: t.reshape(b, n, self.num_heads, self.head_size).transpose(1, 2)  # noqa: E731
        q, k, v = split(self.W_q(x)), split(self.W_k(x)), split(self.W_v(x))  # (b, h, n, p)
        if self.scheme == "rope":
            positions = torch.arange(n, device=x.device)
            if self.position_scale != 1.0:
                positions = positions * self.position_scale  # real positions
            q = apply_rope(q, positions, self.rope_base)
            k = apply_rope(k, positions, self.rope_base)
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_size)  # (b, h, n, n)
        if self.scheme == "alibi":
            scores = scores + alibi_bias(n, self.num_heads, dtype=x.dtype).to(x.device)
        future = torch.ones(n, n, dtype=torch.bool, device=x.device).triu(1)
        weights = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
        self.attention_weights = weights.detach()
        out = (weights @ v).transpose(1, 2).reshape(b, n, D)
        return self.W_o(out)


class PositionModel(nn.Module):
    """Token embedding, pre-LN attention-only layers, final norm, unembedding.

    Args:
        scheme: one of ``SCHEMES``.
        vocab: number of token ids.
        num_hiddens: width D of the residual stream.
        num_heads: heads per layer.
        num_layers: attention layers.
        max_len: rows of the learned table (``scheme="learned"`` only; the
            model then accepts at most ``max_len`` positions). The other
            schemes accept any length.
        seed: integer seed of the initialisation (the global RNG is untouched).

    ``forward(tokens)`` maps (batch, n) int64 tokens to (batch, n, vocab) logits.
    """

    def __init__(
        self,
        scheme: str,
        vocab: int = 64,
        num_hiddens: int = 64,
        num_heads: int = 4,
        num_layers: int = 2,
        max_len: int = 129,
        seed: int = 0,
    ) -> None:
        super().__init__()
        if scheme not in SCHEMES:
            raise ValueError(f"scheme must be one of {SCHEMES}, got {scheme!r}")
        self.scheme = scheme
        self.vocab = _validate.positive_int("vocab", vocab)
        self.num_hiddens = _validate.positive_int("num_hiddens", num_hiddens)
        self.num_heads = _validate.positive_int("num_heads", num_heads)
        self.max_len = _validate.positive_int("max_len", max_len)
        num_layers = _validate.positive_int("num_layers", num_layers)
        if scheme in ("sinusoidal", "rope") and num_hiddens % 2:
            raise ValueError(f"num_hiddens must be even for scheme {scheme!r}, got {num_hiddens}")
        if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
            raise TypeError(f"seed must be an integer, got {seed!r}")
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(seed))
            self.embed = nn.Embedding(vocab, num_hiddens)
            self.position = nn.Embedding(max_len, num_hiddens) if scheme == "learned" else None
            self.norms = nn.ModuleList(nn.LayerNorm(num_hiddens) for _ in range(num_layers))
            self.layers = nn.ModuleList(
                PositionAttention(num_hiddens, num_heads, scheme) for _ in range(num_layers)
            )
            self.final_norm = nn.LayerNorm(num_hiddens)
            self.unembed = nn.Linear(num_hiddens, vocab, bias=False)

    @property
    def attention_weights(self) -> list[torch.Tensor | None]:
        """Each layer's (batch, heads, queries, keys) weights from the last forward."""
        return [layer.attention_weights for layer in self.layers]

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """tokens (batch, n) int64 -> logits (batch, n, vocab)."""
        tokens = _validate.tensor("tokens", tokens, ndim=2)
        if tokens.dtype not in (torch.int64, torch.int32):
            raise TypeError(f"tokens must hold integer ids, got dtype {tokens.dtype}")
        _validate.ids("tokens", tokens, upper=self.vocab)
        _validate.some_positions("tokens", tokens)
        n = tokens.shape[1]
        if self.scheme == "learned" and n > self.max_len:
            raise ValueError(f"a learned table has max_len={self.max_len} rows, got {n} positions")
        x = self.embed(tokens)  # (batch, n, D): the residual stream
        if self.scheme == "sinusoidal":
            x = x + sinusoidal_encoding(n, self.num_hiddens).to(x)
        elif self.scheme == "learned":
            x = x + self.position.weight[:n]
        for norm, layer in zip(self.norms, self.layers):
            x = x + layer(norm(x))
        return self.unembed(self.final_norm(x))  # (batch, n, vocab)


def rescale_rope(model: PositionModel, base: float = 10000.0, position_scale: float = 1.0) -> None:
    """Change a trained RoPE model's rotation in place, without training.

    Every layer then rotates the query or key at position m by
    ``m * position_scale * theta_i`` with ``theta_i = base^(-2i / d)``. With
    ``position_scale = L_train / L`` (< 1) this is *position interpolation*
    (Chen et al. 2023): a sequence of L positions is squeezed into the angles
    of L_train. A larger ``base`` slows every pair except pair 0; NTK-aware
    scaling uses ``base * s^(d / (d - 2))`` for a length s times the
    training length. ``rescale_rope(model)`` restores the trained rotation.
    """
    _check_model(model)
    if model.scheme != "rope":
        raise ValueError(f"rescale_rope needs a model with scheme 'rope', got {model.scheme!r}")
    if isinstance(base, bool) or not isinstance(base, numbers.Real):
        raise TypeError(f"base must be a real number, got {base!r}")
    if not 1.0 < float(base) < float("inf"):
        raise ValueError(f"base must be a finite number > 1, got {base!r}")
    position_scale = _validate.positive_number("position_scale", position_scale)
    for layer in model.layers:
        layer.rope_base, layer.position_scale = float(base), float(position_scale)


def _check_model(model: object) -> PositionModel:
    if not isinstance(model, PositionModel):
        raise TypeError(f"model must be a PositionModel, got {type(model).__name__}")
    return model


def _task(task: object) -> str:
    if task not in TASKS:
        raise ValueError(f"task must be one of {tuple(TASKS)}, got {task!r}")
    return task


def task_accuracy(model: PositionModel, batch: TaskBatch) -> float:
    """Fraction of the scored positions whose largest logit is the answer."""
    _check_model(model)
    if not isinstance(batch, TaskBatch):
        raise TypeError(f"batch must be a TaskBatch, got {type(batch).__name__}")
    max_len = model.max_len if model.scheme == "learned" else None
    _validate.tokens_fit("batch.tokens", batch.tokens, vocab=model.vocab, max_len=max_len)
    if batch.tokens.shape[0] == 0 or not bool(batch.scored.any()):
        raise ValueError(
            f"batch must score at least one position of one sequence (an accuracy over nothing "
            f"is undefined), got tokens of shape {tuple(batch.tokens.shape)} and "
            f"{int(batch.scored.sum())} scored positions"
        )
    batch = _validate.batch_to(batch, _validate.device_of(model))
    with torch.no_grad():
        logits = model(batch.tokens)  # (batch, n, vocab)
    right = logits.argmax(-1) == batch.targets  # (batch, n)
    return float(right[:, batch.scored].double().mean())


def evaluate(
    model: PositionModel,
    lengths: tuple[int, ...] = (32, 64, 128),
    task: str = "copy",
    size: int = 256,
    seed: int = 1000,
    **options,
) -> dict[int, float]:
    """Held-out accuracy at each length: ``size`` fresh sequences from ``seed + length``."""
    _check_model(model)
    size = _validate.positive_int("size", size)
    make = TASKS[_task(task)]
    seed = _validate.seed_int("seed", seed, negative=True)
    if isinstance(lengths, (str, bytes)) or not isinstance(lengths, Iterable):
        raise TypeError(f"lengths must be a sequence of integers, got {lengths!r}")
    lengths = [_validate.positive_int(f"lengths[{i}]", n) for i, n in enumerate(lengths)]
    return {
        int(n): task_accuracy(model, make(size, n, vocab=model.vocab, seed=seed + n, **options))
        for n in lengths
    }


def accuracy_by_position(
    model: PositionModel,
    length: int,
    edges: tuple[int, ...],
    task: str = "kback",
    size: int = 256,
    seed: int = 1000,
    **options,
) -> list[float]:
    """Held-out accuracy of the scored queries in each band of query positions.

    ``edges`` (increasing, from 0 to ``length``) cut the positions into bands
    ``[edges[b], edges[b + 1])``; the batch is the one :func:`evaluate` uses
    at this length, so the bands' accuracies average (weighted by their
    scored positions) to its accuracy. A band with no scored position is nan.
    """
    _check_model(model)
    make = TASKS[_task(task)]
    length = _validate.positive_int("length", length)
    size = _validate.positive_int("size", size)
    seed = _validate.seed_int("seed", seed, negative=True)
    if isinstance(edges, (str, bytes)) or not hasattr(edges, "__iter__"):
        raise TypeError(f"edges must be a sequence of integers, got {edges!r}")
    edges = tuple(edges)
    if (
        len(edges) < 2
        or any(isinstance(e, bool) or not isinstance(e, numbers.Integral) for e in edges)
        or edges[0] != 0
        or edges[-1] != length
        or any(a >= b for a, b in zip(edges, edges[1:]))
    ):
        raise ValueError(
            f"edges must be increasing integers from 0 to length={length}, got {edges!r}"
        )
    batch = make(size, length, vocab=model.vocab, seed=seed + length, **options)
    with torch.no_grad():
        right = model(batch.tokens).argmax(-1) == batch.targets  # (size, length)
    out = []
    for lo, hi in zip(edges, edges[1:]):
        band = batch.scored.clone()
        band[:lo], band[hi:] = False, False
        out.append(float(right[:, band].double().mean()) if band.any() else float("nan"))
    return out


def copy_head_score(model: PositionModel, length: int, size: int = 64, seed: int = 2000) -> float:
    """The best last-layer head's weight on the induction target of the copy task.

    On copy sequences of ``length``, the query at L/2 + j (holding the same
    token as position j) should attend to j + 1, the token that came after
    the earlier copy. Each head of the last layer gets the mean weight it
    puts there (over j = 0 .. L/2 - 2 and the batch); the largest is returned.
    """
    _check_model(model)
    length = _validate.positive_int("length", length)
    size = _validate.positive_int("size", size)
    seed = _validate.seed_int("seed", seed, negative=True)
    batch = make_copy_batch(size, length, vocab=model.vocab, seed=seed + length)
    with torch.no_grad():
        model(batch.tokens.to(_validate.device_of(model)))
    weights = model.attention_weights[-1]  # (batch, heads, n, n)
    half = length // 2
    j = torch.arange(half - 1)
    picked = weights[:, :, half + j, j + 1]  # (batch, heads, half - 1)
    return float(picked.mean(dim=(0, 2)).max())


@dataclass
class TrainLog:
    """Loss of every step, and the lengths the batches had."""

    losses: list[float]
    lengths: list[int]


def train_positions(
    model: PositionModel,
    task: str = "copy",
    steps: int = 600,
    batch: int = 64,
    lr: float = 3e-3,
    min_length: int = 8,
    max_length: int = 32,
    clip: float = 1.0,
    seed: int = 0,
    **options,
) -> TrainLog:
    """Train ``model`` in place; each step's batch has its own random even length.

    Lengths are drawn uniformly from the even numbers in [min_length,
    max_length]; the loss is the cross-entropy over the scored positions;
    AdamW (learning rate ``lr``), gradients clipped to norm ``clip``. Runs on
    one CPU thread (restored afterwards), with seeded data, so the same
    arguments give the same model on the same machine.
    """
    _check_model(model)
    make = TASKS[_task(task)]
    steps = _validate.positive_int("steps", steps)
    batch = _validate.positive_int("batch", batch)
    lr = _validate.positive_number("lr", lr)
    clip = _validate.positive_number("clip", clip)
    min_length = _validate.positive_int("min_length", min_length)
    max_length = _validate.positive_int("max_length", max_length)
    if min_length > max_length:
        raise ValueError(
            f"min_length must be <= max_length, got min_length={min_length}, "
            f"max_length={max_length}"
        )
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"seed must be an integer, got {seed!r}")
    choices = [n for n in range(min_length, max_length + 1) if n % 2 == 0]
    if not choices:
        raise ValueError(f"no even length in [{min_length}, {max_length}]")
    data = torch.Generator().manual_seed(int(seed))
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    log = TrainLog([], [])
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    was_training = model.training
    model.train()
    try:
        for _ in range(steps):
            n = choices[int(torch.randint(len(choices), (1,), generator=data))]
            sample = make(batch, n, vocab=model.vocab, seed=data, **options)
            sample = _validate.batch_to(sample, _validate.device_of(model))
            logits = model(sample.tokens)[:, sample.scored]  # (batch, scored, vocab)
            loss = F.cross_entropy(logits.flatten(0, 1), sample.targets[:, sample.scored].flatten())
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
            optimizer.step()
            log.losses.append(float(loss.detach()))
            log.lengths.append(n)
    finally:
        torch.set_num_threads(threads)
        model.train(was_training)
    return log


def load_sweep() -> dict:
    """The shipped sweep (``positions_data/sweep.json``, made by ``make positions-sweep``).

    ``{"settings": ..., "copy": [record, ...], "kback": [record, ...]}``, one
    record per (scheme, seed) with its ``accuracy`` at each test length (keys
    are strings) and, for the copy task, its ``head_score``
    (:func:`copy_head_score`).
    """
    text = (resources.files("attnbook") / "positions_data" / SWEEP_FILE).read_text("utf-8")
    return json.loads(text)


def sweep_ranges(records: list[dict], field: str = "accuracy") -> dict[str, dict[str, tuple]]:
    """{scheme: {length: (lowest, highest)}} of ``field`` over the records' seeds."""
    if not isinstance(field, str):
        raise TypeError(f"field must be a str, got {field!r}")
    if isinstance(records, (str, bytes, Mapping)) or not isinstance(records, Iterable):
        raise TypeError(f"records must be a list of records (dicts), got {records!r}")
    out: dict[str, dict[str, tuple]] = {}
    for i, record in enumerate(records):
        if not isinstance(record, Mapping) or "scheme" not in record:
            raise TypeError(f"records[{i}] must be a record (a dict with a scheme), got {record!r}")
        if field not in record:
            raise ValueError(f"field must name an entry of every record, got {field!r}")
        for n, value in record[field].items():
            low, high = out.setdefault(record["scheme"], {}).get(n, (value, value))
            out[record["scheme"]][n] = (min(low, value), max(high, value))
    return out
