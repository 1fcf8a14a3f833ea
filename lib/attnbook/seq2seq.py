"""A GRU encoder-decoder, with or without additive cross-attention, its training and decoding.

The **encoder** embeds the source characters and reads them with a
bidirectional GRU: one state h_j (2 x ``enc_hiddens`` features) per source
position, and a final state (the forward GRU's last state beside the backward
GRU's first) that summarises the whole source.

The **decoder** writes the target one symbol at a time. Its GRU cell starts
from s_{-1} = tanh(W_b z + b_b) (the state before the first
output; s_t writes y_t), made from the encoder's final state z by the
``bridge`` layer (with and without attention), and at step t reads the
embedding of the previous output y_{t-1} (the start symbol at t = 0):

* **with attention** (:class:`GRUSeq2Seq` with ``attention=True``), the new
  decoder state s_t is the query. It scores every encoder state with the
  additive score a(s_t, h_j) = v^T tanh(W_s s_t + W_h h_j), turns the scores of
  the valid source positions into weights alpha_tj with a masked softmax, and
  reads the context c_t = sum_j alpha_tj h_j. The output layer sees [s_t; c_t].
  (The query is the state *after* reading y_{t-1}, the ordering of Luong et
  al.; Bahdanau et al. score with the state before it. The context is not fed
  back into the cell: neither Bahdanau's recurrence nor Luong's input feeding.)
* **without attention** (``attention=False``), the encoder's final state z is
  the only view of the source: it is fed to the cell at every step beside
  y_{t-1}, and the output layer sees [s_t; z].

:func:`train_seq2seq` trains any model with the interface
``forward(source, source_lens, decoder_input) -> logits`` and
``greedy(source, source_lens, length) -> (tokens, weights)`` (this module's
GRU models and :class:`attnbook.decoder.TransformerSeq2Seq`) with teacher
forcing, Adam and gradient clipping, and records the held-out exact match and
the alignment weights of a few probe examples as it goes. :func:`rewrite`
decodes date strings, optionally starting the decoder from the s_{-1} of other
strings, and :func:`century_swap` measures which of the two routes (s_{-1} or the
attended states) carries the century of the numeric dates.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch
from torch import nn
from torch.nn import functional as F

from . import _validate
from ._seq2seq_model import AdditiveCrossAttention, GRUEncoder, GRUSeq2Seq
from .dates import Seq2SeqBatch

__all__ = [
    "GRUEncoder",
    "AdditiveCrossAttention",
    "GRUSeq2Seq",
    "Seq2SeqLog",
    "evaluate",
    "train_seq2seq",
    "date_model",
    "train_dates",
    "train_reversal",
    "anti_diagonal",
    "DATE_RECORD",
    "NO_ATTENTION_RECORD",
    "TRANSFORMER_RECORD",
    "PROBE_INDICES",
    "figure_probe",
    "reversal_test",
    "load_runs",
    "rewrite",
    "other_century",
    "century_swap",
]

# The models themselves are in _seq2seq_model (GRUEncoder, AdditiveCrossAttention, GRUSeq2Seq).


@dataclass
class Seq2SeqLog:
    """What :func:`train_seq2seq` recorded.

    Attributes:
        steps: the recorded training steps (0 = before training).
        exact: held-out exact match (every output symbol right) at each step.
        token_accuracy: held-out fraction of right output symbols at each step.
        probe: the probe batch whose decoding is kept, or None.
        predictions: per recorded step, the probe's greedy outputs as token lists.
        weights: per recorded step, the probe's (probe, m, n) alignment weights
            (heads averaged for a multi-head model), or None without attention.
        losses: the training loss at every step (1..steps).
        cpu_seconds: CPU time of the run (``time.process_time``).
    """

    steps: list[int] = field(default_factory=list)
    exact: list[float] = field(default_factory=list)
    token_accuracy: list[float] = field(default_factory=list)
    probe: Seq2SeqBatch | None = None
    predictions: list[list[list[int]]] = field(default_factory=list)
    weights: list[torch.Tensor | None] = field(default_factory=list)
    losses: list[float] = field(default_factory=list)
    cpu_seconds: float = 0.0

    def exact_at(self, step: int) -> float:
        """The held-out exact match at a recorded ``step``."""
        if step not in self.steps:
            raise ValueError(f"step must be one of the recorded steps {self.steps}, got {step!r}")
        return self.exact[self.steps.index(step)]


def evaluate(model: nn.Module, batch: Seq2SeqBatch) -> tuple[float, float, torch.Tensor, object]:
    """Greedy decoding of ``batch``: (exact match, token accuracy, tokens (b, m), weights)."""
    if not isinstance(batch, Seq2SeqBatch):
        raise TypeError(f"batch must be a Seq2SeqBatch, got {type(batch).__name__}")
    was_training = model.training
    model.eval()
    try:
        tokens, weights = model.greedy(batch.source, batch.source_lens, batch.target.shape[1])
    finally:
        model.train(was_training)
    right = tokens == batch.target  # (b, m)
    return float(right.all(1).float().mean()), float(right.float().mean()), tokens, weights


def _mean_heads(weights):
    if weights is None:
        return None
    return weights.mean(1) if weights.dim() == 4 else weights  # (b, m, n)


def train_seq2seq(
    model: nn.Module,
    next_batch: Callable[[torch.Generator], Seq2SeqBatch],
    test: Seq2SeqBatch,
    steps: int,
    *,
    seed: int = 0,
    lr: float = 3e-3,
    clip: float = 1.0,
    warmup: int = 0,
    record: Sequence[int] = (),
    probe: Seq2SeqBatch | None = None,
) -> Seq2SeqLog:
    """Train ``model`` with teacher forcing, Adam and gradient clipping.

    Args:
        model: a sequence-to-sequence model (see the module docstring).
        next_batch: called with a ``torch.Generator`` (seeded with ``seed``) at
            every step; returns the training batch.
        test: the held-out batch scored at the recorded steps (greedy decoding).
        steps: the number of training steps.
        seed: the seed of the training batches.
        lr, clip: Adam's learning rate and the gradient-norm clip.
        warmup: steps of linear learning-rate warm-up (0: none).
        record: the steps (0..steps) at which the test batch is scored and the
            probe decoded.
        probe: a few examples whose predictions and alignment weights are kept.

    The model's own initialisation is the caller's (seed the global generator
    before building it). Runs on one thread (these tensors are small; the
    result does not depend on the machine's thread count).
    """
    steps = _validate.positive_int("steps", steps)
    lr = _validate.positive_number("lr", lr)
    clip = _validate.positive_number("clip", clip)
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
        raise ValueError(f"warmup must be an integer >= 0, got {warmup!r}")
    record = sorted(set(record))
    if any(isinstance(s, bool) or not isinstance(s, int) or not 0 <= s <= steps for s in record):
        raise ValueError(f"record must hold steps in [0, {steps}], got {record}")
    if not isinstance(test, Seq2SeqBatch):
        raise TypeError(f"test must be a Seq2SeqBatch, got {type(test).__name__}")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _train(model, next_batch, test, steps, seed, lr, clip, warmup, record, probe)
    finally:
        torch.set_num_threads(threads)


def _train(model, next_batch, test, steps, seed, lr, clip, warmup, record, probe):
    start = time.process_time()
    log = Seq2SeqLog(probe=probe)
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda i: min(1.0, (i + 1) / warmup) if warmup else 1.0
    )

    def snapshot(step: int) -> None:
        exact, accuracy, _, _ = evaluate(model, test)
        log.steps.append(step)
        log.exact.append(exact)
        log.token_accuracy.append(accuracy)
        if probe is not None:
            tokens, weights = evaluate(model, probe)[2:]
            log.predictions.append(tokens.tolist())
            weights = _mean_heads(weights)
            log.weights.append(None if weights is None else weights.clone())

    model.train()
    if 0 in record:
        snapshot(0)
    for step in range(1, steps + 1):
        batch = next_batch(generator)
        logits = model(batch.source, batch.source_lens, batch.decoder_input())  # (b, m, V)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), batch.target.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), clip)
        optimizer.step()
        schedule.step()
        log.losses.append(loss.item())
        if step in record:
            snapshot(step)
    model.eval()
    log.cpu_seconds = time.process_time() - start
    return log


def date_model(attention: bool = True, seed: int = 0, *, bridge: bool = True) -> GRUSeq2Seq:
    """The chapter's GRU model for dates (embedding 32, encoder 2 x 32, decoder 64, A 32)."""
    from .dates import SOURCE_VOCAB, TARGET_VOCAB

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return GRUSeq2Seq(len(SOURCE_VOCAB), len(TARGET_VOCAB), attention, bridge=bridge)


def train_dates(
    seed: int = 0,
    attention: bool = True,
    steps: int = 400,
    *,
    record: Sequence[int] = (0, 100, 200, 300, 400),
    probe: Seq2SeqBatch | None = None,
    batch_size: int = 64,
    test_size: int = 1000,
    model: nn.Module | None = None,
    **options,
) -> tuple[nn.Module, Seq2SeqLog]:
    """Train the chapter's date model (or ``model``) with ``seed``; returns (model, log).

    The dates are split with the fixed seed 0 (one held-out set for every run);
    ``seed`` sets the model's initialisation and the training batches. The
    test batch is the first ``test_size`` held-out dates, formats in turn.
    ``options`` go to :func:`train_seq2seq` (``lr``, ``clip``, ``warmup``).
    """
    from .dates import DateTask

    task = DateTask(seed=0)
    if model is None:
        model = date_model(attention, seed)
    log = train_seq2seq(
        model,
        lambda g: task.train_batch(batch_size, g),
        task.test_batch(test_size),
        steps,
        seed=seed,
        record=record,
        probe=probe,
        **options,
    )
    return model, log


def train_reversal(
    seed: int = 0,
    attention: bool = True,
    steps: int = 600,
    *,
    length: int = 20,
    symbols: int = 19,
    batch_size: int = 64,
    test_size: int = 1000,
    record: Sequence[int] = (0, 600),
) -> tuple[GRUSeq2Seq, Seq2SeqLog]:
    """Train the date model's sizes on reversal of ``length`` tokens; returns (model, log).

    The test batch (``test_size`` sequences) comes from its own generator
    (seed 12345), the training batches from ``seed``; the last test sequence
    is kept as the probe.
    """
    from .dates import reversal_batch

    test = reversal_test(test_size, length, symbols)
    probe = Seq2SeqBatch(test.source[-1:], test.source_lens[-1:], test.target[-1:])
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = GRUSeq2Seq(symbols + 1, symbols + 1, attention)
    log = train_seq2seq(
        model,
        lambda g: reversal_batch(batch_size, length, symbols, generator=g),
        test,
        steps,
        seed=seed,
        record=record,
        probe=probe,
    )
    return model, log


def anti_diagonal(weights: torch.Tensor) -> float:
    """For reversal: the fraction of output rows whose largest weight is on source n - 1 - t.

    ``weights`` is (b, n, n): output t should read source position n - 1 - t.
    """
    weights = _validate.tensor("weights", weights, ndim=3, floating=True)
    b, m, n = weights.shape
    if m != n or weights.numel() == 0:  # a fraction of no rows is no fraction (it was NaN)
        raise ValueError(
            f"weights must be (b, n, n) for reversal, b and n >= 1, got shape "
            f"{tuple(weights.shape)}"
        )
    expected = torch.arange(n - 1, -1, -1, device=weights.device)  # (n,)
    return float((weights.argmax(-1) == expected).float().mean())


def rewrite(model: GRUSeq2Seq, texts, *, start_from=None) -> list[str]:
    """Greedy decoding of date strings ``texts`` (any characters of the source vocabulary).

    With ``start_from`` (as many strings as ``texts``), the decoder reads the
    encoder states of ``texts`` but starts from the initial state s_{-1} made from
    ``start_from``: the swap that separates the two routes from the source.
    """
    from .dates import TARGET_LENGTH, TARGET_VOCAB, _encode_sources

    if not isinstance(model, GRUSeq2Seq):
        raise TypeError(f"model must be a GRUSeq2Seq, got {type(model).__name__}")
    source, lens = _encode_sources(texts, "texts")
    initial = None
    if start_from is not None:
        other, other_lens = _encode_sources(start_from, "start_from")
        if other.shape[0] != source.shape[0]:
            raise ValueError(
                f"start_from must hold one string per text ({source.shape[0]}), "
                f"got {other.shape[0]}"
            )
        initial = model.initial_state(other, other_lens)
    was_training = model.training
    model.eval()
    try:
        tokens, _ = model.greedy(source, lens, TARGET_LENGTH, initial_state=initial)
    finally:
        model.train(was_training)
    return [TARGET_VOCAB.decode(row) for row in tokens]


def other_century(text: str) -> str:
    """A numeric date "dd/mm/yy" with its year moved to the other century (yy + 50 mod 100)."""
    if (
        not isinstance(text, str)
        or len(text) != 8
        or text[2] != "/"
        or text[5] != "/"
        or not all(p.isascii() and p.isdigit() for p in (text[:2], text[3:5], text[6:]))
    ):
        raise ValueError(f"text must be a numeric date 'dd/mm/yy', got {text!r}")
    return f"{text[:6]}{(int(text[6:]) + 50) % 100:02d}"


def century_swap(model: GRUSeq2Seq, batch: Seq2SeqBatch) -> dict[str, int]:
    """Which route carries the century of the numeric dates of ``batch``.

    Each numeric date is decoded with its own encoder states (keys and values)
    but with the s_{-1} of the same date moved to the other century
    (:func:`other_century`). Returns counts: ``dates`` (numeric dates tried),
    ``follows_start`` (the century written is that of s_{-1}'s date) and
    ``follows_states`` (it is that of the attended states' date).
    """
    if not isinstance(batch, Seq2SeqBatch) or batch.formats is None:
        raise TypeError("batch must be a Seq2SeqBatch of dates (with texts and formats)")
    texts = [t for t, f in zip(batch.texts, batch.formats) if f == "numeric"]
    if not texts:
        raise ValueError("batch holds no numeric date")
    swapped = [other_century(t) for t in texts]
    outputs = rewrite(model, texts, start_from=swapped)

    def century(text):
        return "19" if int(text[6:]) >= 50 else "20"

    return {
        "dates": len(texts),
        "follows_start": sum(o[:2] == century(s) for o, s in zip(outputs, swapped)),
        "follows_states": sum(o[:2] == century(t) for o, t in zip(outputs, texts)),
    }


# The steps at which the chapter's runs score the held-out dates.
DATE_RECORD = tuple(range(0, 401, 25))
NO_ATTENTION_RECORD = tuple(range(0, 801, 50))
TRANSFORMER_RECORD = tuple(range(0, 601, 50))
# Held-out examples of the chapter's figures and explorer: positions in the test batch.
PROBE_INDICES = (0, 1, 2, 3, 6)


def figure_probe() -> Seq2SeqBatch:
    """Five held-out dates of the chapter's figures, one per format plus a 19xx numeric one.

    They are test examples 0, 1, 2, 3 and 6 of ``DateTask(0).test_batch()``:
    "10 October 2036", "aug 13, 1988", "05/09/07", "Sunday 23 Feb 1969", "17/11/72".
    """
    from .dates import DateTask, encode_dates

    task = DateTask(seed=0)
    test = task.test_batch(max(PROBE_INDICES) + 1)
    return encode_dates(
        [task.test_dates[i] for i in PROBE_INDICES], [test.formats[i] for i in PROBE_INDICES]
    )


def reversal_test(size: int = 1000, length: int = 20, symbols: int = 19) -> Seq2SeqBatch:
    """The held-out reversal sequences of :func:`train_reversal` (their own seed, 12345)."""
    from .dates import reversal_batch

    return reversal_batch(size, length, symbols, generator=torch.Generator().manual_seed(12345))


def load_runs() -> dict:
    """The stored seed sweeps of chapter 13 (``seq2seq_data/runs.json``, made by
    ``make seq2seq-runs``): a dict with the record steps and one entry per seed."""
    import json
    from importlib import resources

    path = resources.files("attnbook") / "seq2seq_data" / "runs.json"
    return json.loads(path.read_text(encoding="utf-8"))
