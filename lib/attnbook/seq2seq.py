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
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from . import _validate
from .dates import Seq2SeqBatch
from .masking import masked_softmax

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


def _check_source(source: object, source_lens: object) -> tuple[torch.Tensor, torch.Tensor]:
    source = _validate.tensor("source", source, ndim=2)
    if source.dtype != torch.long:
        raise TypeError(f"source must hold int64 symbol indices, got dtype {source.dtype}")
    if source.shape[0] == 0:
        raise ValueError("source must hold at least one sequence, got an empty batch")
    lens = _validate.lengths(
        "source_lens", source_lens, upper=source.shape[1], device=source.device
    )
    if lens.shape != (source.shape[0],):
        raise ValueError(
            f"source_lens must have shape ({source.shape[0]},), one length per source, "
            f"got shape {tuple(lens.shape)}"
        )
    if bool((lens < 1).any()):
        raise ValueError("source_lens must be >= 1: an empty source has nothing to encode")
    return source, lens


class GRUEncoder(nn.Module):
    """Embedding and a bidirectional GRU over the valid part of each source.

    ``forward(source (b, n), source_lens (b,))`` returns the states (b, n, 2H)
    (zeros at padded positions) and the final state (b, 2H): the forward GRU's
    state after the last valid symbol beside the backward GRU's after the first.
    """

    def __init__(self, vocab_size: int, embed: int = 32, hiddens: int = 32) -> None:
        super().__init__()
        vocab_size = _validate.positive_int("vocab_size", vocab_size)
        embed = _validate.positive_int("embed", embed)
        hiddens = _validate.positive_int("hiddens", hiddens)
        self.embedding = nn.Embedding(vocab_size, embed, padding_idx=0)
        self.gru = nn.GRU(embed, hiddens, batch_first=True, bidirectional=True)

    def forward(
        self, source: torch.Tensor, source_lens: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        source, lens = _check_source(source, source_lens)
        _validate.ids("source", source, upper=self.embedding.num_embeddings)
        n = source.shape[1]
        packed = pack_padded_sequence(
            self.embedding(source), lens.cpu(), batch_first=True, enforce_sorted=False
        )
        out, last = self.gru(packed)  # last: (2, b, H)
        states, _ = pad_packed_sequence(out, batch_first=True, total_length=n)  # (b, n, 2H)
        return states, torch.cat([last[0], last[1]], dim=-1)  # (b, n, 2H), (b, 2H)


class AdditiveCrossAttention(nn.Module):
    """a(s, h_j) = v^T tanh(W_s s + W_h h_j), softmax over the valid source positions.

    ``keys(states)`` projects the encoder states once per source;
    ``forward(query (b, d_s), projected (b, n, A), states (b, n, d_h), lens (b,))``
    returns the context (b, d_h) and the weights (b, n).
    """

    def __init__(self, query_size: int, key_size: int, hiddens: int = 32) -> None:
        super().__init__()
        hiddens = _validate.positive_int("hiddens", hiddens)
        self.W_s = nn.Linear(_validate.positive_int("query_size", query_size), hiddens, bias=False)
        self.W_h = nn.Linear(_validate.positive_int("key_size", key_size), hiddens, bias=False)
        self.v = nn.Linear(_validate.positive_int("hiddens", hiddens), 1, bias=False)

    def keys(self, states: torch.Tensor) -> torch.Tensor:
        """(b, n, d_h) -> (b, n, A): the part of the score that does not depend on the query."""
        return self.W_h(states)

    def forward(self, query, projected, states, lens):
        dtype = self.W_s.weight.dtype
        hiddens, query_size = self.W_s.weight.shape
        query = _validate.model_input("query", query, ndim=2, dtype=dtype, width=query_size)
        projected = _validate.model_input(
            "projected", projected, ndim=3, dtype=dtype, width=hiddens
        )
        states = _validate.model_input(
            "states", states, ndim=3, dtype=dtype, width=self.W_h.weight.shape[1]
        )
        if not query.shape[0] == projected.shape[0] == states.shape[0]:
            raise ValueError(
                "query, projected and states must have the same batch size, got shapes "
                f"{tuple(query.shape)}, {tuple(projected.shape)} and {tuple(states.shape)}"
            )
        if projected.shape[1] != states.shape[1]:
            raise ValueError(
                "projected and states must hold the same number of source positions, got "
                f"shapes {tuple(projected.shape)} and {tuple(states.shape)}"
            )
        # metadata only (a step of decoding); masked_softmax checks the lengths' values
        lens = _validate.tensor("lens", lens, ndim=1)
        if lens.shape != (states.shape[0],):
            raise ValueError(
                f"lens must have shape ({states.shape[0]},), one length per source, "
                f"got shape {tuple(lens.shape)}"
            )
        features = torch.tanh(self.W_s(query).unsqueeze(1) + projected)  # (b, n, A)
        scores = self.v(features).squeeze(-1)  # (b, n)
        weights = masked_softmax(scores.unsqueeze(1), lens).squeeze(1)  # (b, n)
        context = torch.bmm(weights.unsqueeze(1), states).squeeze(1)  # (b, d_h)
        return context, weights


class GRUSeq2Seq(nn.Module):
    """A GRU encoder-decoder, with additive cross-attention or without.

    Args:
        source_vocab: the number of source symbols (index 0 is padding).
        target_vocab: the number of target symbols (index 0 is the start symbol).
        attention: True for cross-attention, False for the fixed-vector baseline.
        embed: embedding size of source and target symbols.
        enc_hiddens: the size of each direction of the encoder GRU (states are 2x).
        dec_hiddens: the size of the decoder's GRU cell.
        attn_hiddens: the size A of the additive score's hidden layer.
        bridge: True (the default) to start the decoder from s_{-1} = tanh(W_b z + b_b),
            made from the encoder's final state z; False to start it from zeros,
            so that with attention the source reaches the decoder only through
            the attended states (an ablation).

    After ``forward`` or ``greedy``, ``attention_weights`` holds the (b, m, n)
    weights of every output step over the source (None without attention).
    """

    def __init__(
        self,
        source_vocab: int,
        target_vocab: int,
        attention: bool = True,
        *,
        embed: int = 32,
        enc_hiddens: int = 32,
        dec_hiddens: int = 64,
        attn_hiddens: int = 32,
        bridge: bool = True,
    ) -> None:
        super().__init__()
        if not isinstance(attention, bool):
            raise TypeError(f"attention must be True or False, got {attention!r}")
        if not isinstance(bridge, bool):
            raise TypeError(f"bridge must be True or False, got {bridge!r}")
        source_vocab = _validate.positive_int("source_vocab", source_vocab)
        target_vocab = _validate.positive_int("target_vocab", target_vocab)
        embed = _validate.positive_int("embed", embed)
        enc_hiddens = _validate.positive_int("enc_hiddens", enc_hiddens)
        dec_hiddens = _validate.positive_int("dec_hiddens", dec_hiddens)
        attn_hiddens = _validate.positive_int("attn_hiddens", attn_hiddens)
        self.use_attention = attention
        self.encoder = GRUEncoder(source_vocab, embed, enc_hiddens)
        context = 2 * enc_hiddens
        self.bridge = nn.Linear(context, dec_hiddens) if bridge else None
        self.dec_hiddens = dec_hiddens
        self.embedding = nn.Embedding(target_vocab, embed)
        self.cell = nn.GRUCell(embed if attention else embed + context, dec_hiddens)
        self.attention = (
            AdditiveCrossAttention(dec_hiddens, context, attn_hiddens) if attention else None
        )
        self.output = nn.Linear(dec_hiddens + context, target_vocab)
        self.attention_weights: torch.Tensor | None = None

    def _start(self, source, source_lens):
        states, final = self.encoder(source, source_lens)  # (b, n, 2H), (b, 2H)
        lens = source_lens.to(device=source.device, dtype=torch.long)
        projected = self.attention.keys(states) if self.use_attention else None
        if self.bridge is None:
            s = final.new_zeros(final.shape[0], self.dec_hiddens)  # (b, S)
        else:
            s = torch.tanh(self.bridge(final))  # (b, S)
        return states, final, projected, lens, s

    @torch.no_grad()
    def initial_state(self, source: torch.Tensor, source_lens: torch.Tensor) -> torch.Tensor:
        """The decoder's first state s_{-1} = tanh(W_b z + b_b) for these sources: (b, dec_hiddens)."""
        return self._start(source, source_lens)[-1]

    def _step(self, previous, s, memory):
        states, final, projected, lens = memory
        y = self.embedding(previous)  # (b, E)
        if not self.use_attention:
            s = self.cell(torch.cat([y, final], dim=-1), s)  # (b, S)
            return self.output(torch.cat([s, final], dim=-1)), s, None
        s = self.cell(y, s)  # the query: the state after reading y_{t-1}
        context, weights = self.attention(s, projected, states, lens)  # (b, 2H), (b, n)
        return self.output(torch.cat([s, context], dim=-1)), s, weights

    def forward(
        self, source: torch.Tensor, source_lens: torch.Tensor, decoder_input: torch.Tensor
    ) -> torch.Tensor:
        """Teacher forcing: source (b, n), source_lens (b,), decoder_input (b, m) -> logits (b, m, V)."""
        source, _ = _check_source(source, source_lens)
        decoder_input = _validate.ids(
            "decoder_input", decoder_input, ndim=2, upper=self.embedding.num_embeddings
        )
        _validate.some_positions("decoder_input", decoder_input)
        if decoder_input.shape[0] != source.shape[0]:
            raise ValueError(
                f"decoder_input must have {source.shape[0]} rows like source, "
                f"got shape {tuple(decoder_input.shape)}"
            )
        states, final, projected, lens, s = self._start(source, source_lens)
        memory = (states, final, projected, lens)
        logits, weights = [], []
        for t in range(decoder_input.shape[1]):
            out, s, w = self._step(decoder_input[:, t], s, memory)
            logits.append(out)
            weights.append(w)
        self.attention_weights = (
            torch.stack(weights, 1).detach() if self.use_attention else None
        )  # (b, m, n)
        return torch.stack(logits, 1)  # (b, m, V)

    @torch.no_grad()
    def greedy(
        self,
        source: torch.Tensor,
        source_lens: torch.Tensor,
        length: int,
        initial_state: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Greedy decoding of ``length`` symbols: tokens (b, length), weights (b, length, n) or None.

        ``initial_state`` (b, dec_hiddens), if given, replaces the s_{-1} made from
        this source (an intervention: the rest of the decoding still reads
        this source's encoder states).
        """
        length = _validate.positive_int("length", length)
        states, final, projected, lens, s = self._start(source, source_lens)
        if initial_state is not None:
            initial_state = _validate.tensor("initial_state", initial_state, ndim=2, floating=True)
            if initial_state.shape != s.shape:
                raise ValueError(
                    f"initial_state must have shape {tuple(s.shape)} (batch, dec_hiddens), "
                    f"got {tuple(initial_state.shape)}"
                )
            s = initial_state.to(s)
        memory = (states, final, projected, lens)
        previous = torch.zeros(source.shape[0], dtype=torch.long, device=source.device)
        tokens, weights = [], []
        for _ in range(length):
            out, s, w = self._step(previous, s, memory)
            previous = out.argmax(-1)
            tokens.append(previous)
            weights.append(w)
        self.attention_weights = torch.stack(weights, 1) if self.use_attention else None
        return torch.stack(tokens, 1), self.attention_weights


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
    if m != n:
        raise ValueError(
            f"weights must be (b, n, n) for reversal, got shape {tuple(weights.shape)}"
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
