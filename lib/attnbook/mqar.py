"""Multi-query associative recall (MQAR) and a small causal model to learn it.

A sequence first lists ``num_pairs`` (key, value) pairs, then asks for them
again: each key reappears once, later, and the token after it is its value.
Predicting that value needs recall: find where the key appeared before and copy
what followed. Keys come from the lower half of the vocabulary, values from the
upper half, both distinct within a sequence (as in Zoology's ``multiquery_ar``);
token 0 fills the slots of the query region that hold no query (there are none
when the sequence is exactly 4 * num_pairs long). This is the task on which
Arora et al. (2023) measured the recall gap between softmax attention and its
efficient replacements.

:class:`RecallLM` is a decoder-only model: token and learned position
embeddings, ``num_layers`` pre-LN blocks (causal self-attention and a
feed-forward network, each inside a residual branch behind a LayerNorm), a
final LayerNorm and an output layer. The attention is pluggable: ``"softmax"``
uses ``attnbook.multihead.MultiHeadAttention`` with a causal mask,
``"linear"`` uses ``attnbook.linear_attention.LinearSelfAttention``. Nothing
else differs, except that ``token_shift=True`` adds to every position the
embedding of the token before it (``attnbook.linear_attention.token_shift``). :func:`train_mqar` trains it with AdamW on fresh batches and
records the recall accuracy on a fixed probe batch.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from . import _validate
from .linear_attention import LinearSelfAttention, token_shift
from .multihead import MultiHeadAttention

__all__ = [
    "IGNORE",
    "ATTENTION_KINDS",
    "MQARBatch",
    "make_mqar_batch",
    "guessing_accuracy",
    "recall_accuracy",
    "CausalSoftmaxAttention",
    "PreLNBlock",
    "RecallLM",
    "MQARLog",
    "train_mqar",
]

IGNORE = -100  # target of the positions that are not graded (cross_entropy's ignore_index)
ATTENTION_KINDS = ("softmax", "linear")


@dataclass(frozen=True)
class MQARBatch:
    """One batch of the recall task.

    Attributes:
        tokens: (batch, length) int64 input tokens.
        targets: (batch, length) int64: at a query position, the value that
            follows; ``IGNORE`` (-100) everywhere else.
    """

    tokens: torch.Tensor
    targets: torch.Tensor


def make_mqar_batch(
    batch: int,
    num_pairs: int = 8,
    vocab_size: int = 128,
    length: int = 32,
    seed: int | torch.Generator = 0,
) -> MQARBatch:
    """Draw a batch of multi-query associative recall.

    Positions 0 .. 2 * num_pairs - 1 hold the pairs ``k_0 v_0 k_1 v_1 ...``:
    distinct keys drawn from 1 .. vocab_size / 2 - 1, distinct values drawn
    from vocab_size / 2 .. vocab_size - 1. The rest of the sequence
    is split into two-token slots; ``num_pairs`` of them, chosen at random, each
    hold one key (every key once, in random order) followed by its value, and
    the other slots hold ``0 0``. The target at each repeated key is its value.

    Args:
        batch: number of sequences.
        num_pairs: pairs per sequence, at least 1.
        vocab_size: even, with room for the keys: at least 2 * num_pairs + 2.
        length: tokens per sequence, at least 4 * num_pairs (the query region
            needs a slot per pair).
        seed: an integer seed or a ``torch.Generator`` (it advances).

    Returns:
        An :class:`MQARBatch` on the CPU.
    """
    batch = _validate.positive_int("batch", batch)
    num_pairs = _validate.positive_int("num_pairs", num_pairs)
    vocab_size = _validate.positive_int("vocab_size", vocab_size)
    length = _validate.positive_int("length", length)
    if vocab_size % 2 or vocab_size < 2 * num_pairs + 2:
        raise ValueError(
            f"vocab_size must be even and at least 2 * num_pairs + 2 = {2 * num_pairs + 2}, "
            f"got {vocab_size}"
        )
    if length < 4 * num_pairs:
        raise ValueError(f"length must be at least 4 * num_pairs = {4 * num_pairs}, got {length}")
    g = _validate.generator("seed", seed)
    half = vocab_size // 2
    # Distinct keys: the first num_pairs of a random order of 1 .. half - 1.
    keys = torch.argsort(torch.rand(batch, half - 1, generator=g), dim=1)[:, :num_pairs] + 1
    values = torch.argsort(torch.rand(batch, half, generator=g), dim=1)[:, :num_pairs] + half
    tokens = torch.zeros(batch, length, dtype=torch.long)
    targets = torch.full((batch, length), IGNORE, dtype=torch.long)
    tokens[:, 0 : 2 * num_pairs : 2] = keys
    tokens[:, 1 : 2 * num_pairs : 2] = values
    slots = (length - 2 * num_pairs) // 2
    # Which slots hold a query, and which pair each of them asks for.
    chosen = torch.argsort(torch.rand(batch, slots, generator=g), dim=1)[:, :num_pairs]
    chosen = chosen.sort(dim=1).values  # (batch, num_pairs)
    order = torch.argsort(torch.rand(batch, num_pairs, generator=g), dim=1)
    rows = torch.arange(batch).unsqueeze(1)
    where = 2 * num_pairs + 2 * chosen  # (batch, num_pairs): position of each query key
    tokens[rows, where] = keys.gather(1, order)
    tokens[rows, where + 1] = values.gather(1, order)
    targets[rows, where] = values.gather(1, order)
    return MQARBatch(tokens, targets)


def guessing_accuracy(num_pairs: int, rule_out_asked: bool = False) -> float:
    """The recall accuracy of guessing among the values in the context, without recall.

    A model that has learnt *which* tokens can be answers (the ``num_pairs``
    distinct values of the sequence) but not *which key* each belongs to
    guesses uniformly among them: accuracy ``1 / num_pairs``. With
    ``rule_out_asked``, it also leaves out the values of the keys already asked
    (each key is asked once, and its value follows it in the query region): the
    k-th query then guesses among ``num_pairs - k`` values, and the accuracy is
    the mean of ``1 / (num_pairs - k)`` over k, ``H(num_pairs) / num_pairs``
    (H the harmonic number).
    """
    num_pairs = _validate.positive_int("num_pairs", num_pairs)
    if not isinstance(rule_out_asked, bool):
        raise TypeError(f"rule_out_asked must be True or False, got {rule_out_asked!r}")
    if not rule_out_asked:
        return 1.0 / num_pairs
    return sum(1.0 / (num_pairs - k) for k in range(num_pairs)) / num_pairs


def recall_accuracy(logits: torch.Tensor, targets: torch.Tensor) -> float:
    """Fraction of graded positions whose largest logit is the target.

    Args:
        logits: (batch, length, vocab_size).
        targets: (batch, length), ``IGNORE`` where not graded.
    """
    logits = _validate.tensor("logits", logits, ndim=3, floating=True)
    targets = _validate.ids("targets", targets, ndim=2, upper=logits.shape[-1], allow=(IGNORE,))
    if targets.shape != logits.shape[:2]:
        raise ValueError(
            f"targets must have shape {tuple(logits.shape[:2])}, got {tuple(targets.shape)}"
        )
    graded = targets != IGNORE
    if not bool(graded.any()):
        raise ValueError("targets grade no position (every entry is IGNORE)")
    hits = logits.argmax(dim=-1)[graded] == targets[graded]
    return float(hits.float().mean())


class CausalSoftmaxAttention(nn.Module):
    """Causal multi-head softmax self-attention: X (b, n, D) -> (b, n, D).

    ``attnbook.multihead.MultiHeadAttention`` with 2-D valid lengths
    ``[1, 2, ..., n]`` for every sequence, so that position i sees 0..i.
    """

    def __init__(self, num_hiddens: int, num_heads: int = 1) -> None:
        super().__init__()
        self.attention = MultiHeadAttention(num_hiddens, num_heads)

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        """X (batch, n, num_hiddens) -> (batch, n, num_hiddens), each position seeing 0..i."""
        weight = self.attention.W_q.weight  # (num_hiddens, num_hiddens)
        _validate.model_input("X", X, ndim=3, dtype=weight.dtype, width=weight.shape[1])
        b, n, _ = X.shape
        lens = torch.arange(1, n + 1, device=X.device).expand(b, n)  # (b, n)
        return self.attention(X, X, X, lens)


class PreLNBlock(nn.Module):
    """A pre-LN Transformer block: x + attn(LN(x)), then x + ffn(LN(x)).

    A small block of this chapter's own, with a pluggable causal attention
    (any module mapping (b, n, D) to (b, n, D)); the feed-forward network has
    ``ffn_hiddens`` hidden units and a GELU (``ffn_hiddens=0``: no
    feed-forward sublayer, an attention-only block).
    """

    def __init__(self, num_hiddens: int, attention: nn.Module, ffn_hiddens: int) -> None:
        super().__init__()
        num_hiddens = _validate.positive_int("num_hiddens", num_hiddens)
        ffn_hiddens = _validate.nonnegative_int("ffn_hiddens", ffn_hiddens)
        _validate.module("attention", attention, nn.Module)
        self.norm1 = nn.LayerNorm(num_hiddens)
        self.attention = attention
        if ffn_hiddens:
            self.norm2 = nn.LayerNorm(num_hiddens)
            self.ffn = nn.Sequential(
                nn.Linear(num_hiddens, ffn_hiddens),
                nn.GELU(),
                nn.Linear(ffn_hiddens, num_hiddens),
            )
        else:
            self.norm2 = self.ffn = None

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        """X (batch, n, num_hiddens) -> (batch, n, num_hiddens)."""
        weight = self.norm1.weight  # (num_hiddens,)
        _validate.model_input("X", X, ndim=3, dtype=weight.dtype, width=weight.shape[0])
        X = X + self.attention(self.norm1(X))
        if self.ffn is None:
            return X
        return X + self.ffn(self.norm2(X))


class RecallLM(nn.Module):
    """A small causal language model for MQAR with a choice of attention.

    Args:
        attention: ``"softmax"`` or ``"linear"`` (elu + 1 feature map), causal.
        vocab_size: tokens.
        num_hiddens: D.
        num_layers: pre-LN blocks.
        num_heads: heads per attention layer.
        max_len: longest sequence (learned positions).
        ffn_hiddens: hidden units of each block's feed-forward network
            (default 4 * num_hiddens; 0 for attention-only blocks).
        token_shift: if True, add to each position the embedding of the token
            before it (:func:`attnbook.linear_attention.token_shift`), so that
            the first layer need not find the previous token by attention.
        seed: seed of the initialisation (the global RNG is left alone).

    ``forward(tokens)`` maps (batch, length) int64 to (batch, length,
    vocab_size) logits; the logits at position i predict token i + 1.
    """

    def __init__(
        self,
        attention: str = "softmax",
        vocab_size: int = 128,
        num_hiddens: int = 64,
        num_layers: int = 2,
        num_heads: int = 1,
        max_len: int = 32,
        ffn_hiddens: int | None = None,
        token_shift: bool = False,
        seed: int = 0,
    ) -> None:
        super().__init__()
        if attention not in ATTENTION_KINDS:
            raise ValueError(f"attention must be one of {ATTENTION_KINDS}, got {attention!r}")
        self.kind = attention
        if not isinstance(token_shift, bool):
            raise TypeError(f"token_shift must be True or False, got {token_shift!r}")
        self.token_shift = token_shift
        vocab_size = _validate.positive_int("vocab_size", vocab_size)
        num_hiddens = _validate.positive_int("num_hiddens", num_hiddens)
        num_layers = _validate.positive_int("num_layers", num_layers)
        num_heads = _validate.positive_int("num_heads", num_heads)
        self.max_len = _validate.positive_int("max_len", max_len)
        if ffn_hiddens is None:
            ffn_hiddens = 4 * num_hiddens
        elif ffn_hiddens != 0:
            ffn_hiddens = _validate.positive_int("ffn_hiddens", ffn_hiddens)
        if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
            raise TypeError(f"seed must be an integer, got {seed!r}")
        _validate.heads_divide(num_hiddens, num_heads)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(seed))
            self.embedding = nn.Embedding(vocab_size, num_hiddens)
            self.positions = nn.Parameter(0.02 * torch.randn(self.max_len, num_hiddens))
            layers = []
            for _ in range(num_layers):
                if attention == "softmax":
                    mixer = CausalSoftmaxAttention(num_hiddens, num_heads)
                else:
                    mixer = LinearSelfAttention(num_hiddens, num_heads, causal=True)
                layers.append(PreLNBlock(num_hiddens, mixer, ffn_hiddens))
            self.blocks = nn.ModuleList(layers)
            self.norm = nn.LayerNorm(num_hiddens)
            self.output = nn.Linear(num_hiddens, vocab_size)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        tokens = _validate.tensor("tokens", tokens, ndim=2)
        if tokens.is_floating_point() or tokens.dtype == torch.bool:
            raise TypeError(f"tokens must hold integers, got dtype {tokens.dtype}")
        _validate.ids("tokens", tokens, upper=self.embedding.num_embeddings)
        _validate.some_positions("tokens", tokens)
        n = tokens.shape[1]
        if n > self.max_len:
            raise ValueError(f"tokens must have at most max_len={self.max_len} positions, got {n}")
        embedded = self.embedding(tokens)  # (batch, n, D)
        X = embedded + self.positions[:n]
        if self.token_shift:
            X = X + token_shift(embedded)  # position i also holds token i - 1
        for block in self.blocks:
            X = block(X)
        return self.output(self.norm(X))  # (batch, n, vocab_size)


@dataclass
class MQARLog:
    """What :func:`train_mqar` recorded.

    Attributes:
        losses: training loss (cross-entropy on the graded positions) per step.
        steps: steps at which the probe batch was evaluated (0 = before training).
        accuracies: recall accuracy on the probe batch at each of ``steps``.
    """

    losses: list[float] = field(default_factory=list)
    steps: list[int] = field(default_factory=list)
    accuracies: list[float] = field(default_factory=list)


def train_mqar(
    model: RecallLM,
    steps: int = 400,
    batch: int = 64,
    lr: float = 3e-3,
    eval_every: int = 50,
    num_pairs: int = 8,
    probe_size: int = 256,
    seed: int = 0,
) -> MQARLog:
    """Train ``model`` in place on MQAR with AdamW; return the log.

    Every step draws a fresh batch (from ``seed``) of sequences of the model's
    ``max_len`` tokens with ``num_pairs`` pairs over the model's vocabulary,
    and takes one AdamW step (weight decay 0.01) on the cross-entropy of the
    graded positions. The probe batch (``probe_size`` sequences from
    ``seed + 1``) is evaluated at step 0 and every ``eval_every`` steps, and
    at the last. Runs on one CPU thread (restored afterwards).
    """
    if not isinstance(model, RecallLM):
        raise TypeError(f"model must be a RecallLM, got {type(model).__name__}")
    steps = _validate.positive_int("steps", steps)
    batch = _validate.positive_int("batch", batch)
    eval_every = _validate.positive_int("eval_every", eval_every)
    probe_size = _validate.positive_int("probe_size", probe_size)
    lr = _validate.positive_number("lr", lr)
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"seed must be an integer, got {seed!r}")
    task = {
        "num_pairs": num_pairs,
        "vocab_size": model.output.out_features,
        "length": model.max_len,
    }
    probe = make_mqar_batch(probe_size, seed=int(seed) + 1, **task)  # checks the task args
    device = _validate.device_of(model)  # data drawn on the CPU, moved to the model
    probe = _validate.batch_to(probe, device)
    data = torch.Generator().manual_seed(int(seed))
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    log = MQARLog()

    def evaluate(step: int) -> None:
        model.eval()
        with torch.no_grad():
            log.accuracies.append(recall_accuracy(model(probe.tokens), probe.targets))
        log.steps.append(step)
        model.train()

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    was_training = model.training
    try:
        evaluate(0)
        for step in range(1, steps + 1):
            sample = _validate.batch_to(make_mqar_batch(batch, seed=data, **task), device)
            logits = model(sample.tokens)  # (batch, length, vocab)
            loss = F.cross_entropy(
                logits.flatten(0, 1), sample.targets.flatten(), ignore_index=IGNORE
            )
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            log.losses.append(float(loss.detach()))
            if step % eval_every == 0 or step == steps:
                evaluate(step)
    finally:
        torch.set_num_threads(threads)
        model.train(was_training)
    return log
