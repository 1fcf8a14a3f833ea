"""The models of chapter 13: a GRU encoder-decoder, with additive cross-attention or without.

:class:`GRUEncoder`, :class:`AdditiveCrossAttention` and :class:`GRUSeq2Seq`;
:mod:`attnbook.seq2seq` describes them and exports them with what trains,
decodes and measures them (import them from there).
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from . import _validate
from .masking import masked_softmax


def _check_source(source: object, source_lens: object) -> tuple[torch.Tensor, torch.Tensor]:
    source = _validate.tensor("source", source, ndim=2)
    if source.dtype != torch.long:
        raise TypeError(f"source must hold int64 symbol indices, got dtype {source.dtype}")
    if source.shape[0] == 0:
        raise ValueError("source must hold at least one sequence, got an empty batch")
    lens = _validate.sequence_lengths(
        "source_lens",
        source_lens,
        batch=source.shape[0],
        upper=source.shape[1],
        device=source.device,
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
        states = _validate.model_input(
            "states", states, ndim=3, dtype=self.W_h.weight.dtype, width=self.W_h.in_features
        )
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
        source, lens = _check_source(source, source_lens)  # lens: a list of lengths, too
        states, final = self.encoder(source, lens)  # (b, n, 2H), (b, 2H)
        lens = lens.to(device=source.device, dtype=torch.long)
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
        this source's encoder states); another floating dtype is converted to the model's.
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
