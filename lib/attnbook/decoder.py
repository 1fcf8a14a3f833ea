"""The Transformer decoder layer: causal self-attention, cross-attention, FFN.

A decoder layer reads the target's residual stream X (batch, m, D) three times:

1. **masked self-attention**: each target position attends to itself and the
   positions before it (the causal mask of chapter 10), so that training on a
   whole target at once cannot peek at the symbols it must predict;
2. **cross-attention**: queries come from X, keys and values from the
   encoder's output ``memory`` (batch, n, D), with no causal mask (the whole
   source is known before decoding starts) and the source's padding masked by
   its valid lengths ``memory_lens`` (batch,);
3. the position-wise **feed-forward network**.

Each sublayer sits on a residual branch, with the layer normalisation inside
the branch (pre-LN, ``norm_first=True``) or after the sum (post-LN), as in
:class:`attnbook.transformer.TransformerBlock`. :class:`TransformerDecoderLayer`
agrees with ``torch.nn.TransformerDecoderLayer(batch_first=True)`` given the
same weights (:meth:`TransformerDecoderLayer.from_torch`), a causal
``tgt_mask`` and a ``memory_key_padding_mask``. :class:`TransformerSeq2Seq`
is a small encoder-decoder built from one encoder block and one decoder layer.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from . import _validate
from .multihead import MultiHeadAttention
from .norms import LayerNorm
from .transformer import PositionWiseFFN, TransformerBlock, _check_block_args

__all__ = [
    "causal_lens",
    "TransformerDecoderLayer",
    "TransformerSeq2Seq",
]


def causal_lens(batch: int, m: int, device=None) -> torch.Tensor:
    """(batch, m) valid lengths of a causal mask: query i may see keys 0..i, so i + 1."""
    batch = _validate.positive_int("batch", batch)
    m = _validate.positive_int("m", m)
    device = _validate.device("device", device)
    return torch.arange(1, m + 1, device=device).expand(batch, m)


class TransformerDecoderLayer(nn.Module):
    """One Transformer decoder layer (self-attention, cross-attention, FFN).

    Args:
        num_hiddens: D, the width of the residual stream (and of the memory).
        num_heads: h, heads of both attentions; it must divide D.
        ffn_hiddens: the hidden width of the feed-forward network.
        dropout: dropout on attention weights, branch outputs and the FFN's
            hidden layer (training mode only).
        norm_first: True for pre-LN, False for post-LN.
        eps: the epsilon of the three layer normalisations (keyword only).

    After a forward call, ``self_attention_weights`` (batch, heads, m, m) and
    ``cross_attention_weights`` (batch, heads, m, n) hold the weights.
    """

    def __init__(
        self,
        num_hiddens: int,
        num_heads: int,
        ffn_hiddens: int,
        dropout: float = 0.0,
        norm_first: bool = True,
        *,
        eps: float = 1e-5,
    ) -> None:
        super().__init__()
        num_hiddens, num_heads, ffn_hiddens, dropout, norm_first = _check_block_args(
            num_hiddens, num_heads, ffn_hiddens, dropout, norm_first
        )
        self.num_hiddens = num_hiddens
        self.num_heads = num_heads
        self.ffn_hiddens = ffn_hiddens
        self.norm_first = norm_first
        self.self_attention = MultiHeadAttention(num_hiddens, num_heads, dropout, bias=True)
        self.cross_attention = MultiHeadAttention(num_hiddens, num_heads, dropout, bias=True)
        self.ffn = PositionWiseFFN(num_hiddens, ffn_hiddens, dropout)
        self.norm1 = LayerNorm(num_hiddens, eps)
        self.norm2 = LayerNorm(num_hiddens, eps)
        self.norm3 = LayerNorm(num_hiddens, eps)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)
        self.dropout3 = nn.Dropout(dropout)

    @property
    def self_attention_weights(self) -> torch.Tensor | None:
        """The (batch, heads, m, m) causal self-attention weights of the last call."""
        return self.self_attention.attention_weights

    @property
    def cross_attention_weights(self) -> torch.Tensor | None:
        """The (batch, heads, m, n) cross-attention weights of the last call."""
        return self.cross_attention.attention_weights

    def _self(self, X, causal):
        lens = causal_lens(X.shape[0], X.shape[1], X.device) if causal else None
        return self.dropout1(self.self_attention(X, X, X, lens))  # (b, m, D)

    def _cross(self, X, memory, memory_lens):
        return self.dropout2(self.cross_attention(X, memory, memory, memory_lens))  # (b, m, D)

    def forward(
        self,
        X: torch.Tensor,
        memory: torch.Tensor,
        memory_lens: torch.Tensor | None = None,
        causal: bool = True,
    ) -> torch.Tensor:
        """X (batch, m, D), memory (batch, n, D) -> (batch, m, D).

        ``memory_lens`` is None or (batch,): source positions at or beyond the
        length are padding (like ``memory_key_padding_mask``). ``causal=True``
        masks the self-attention as ``tgt_mask`` from
        ``nn.Transformer.generate_square_subsequent_mask`` does.
        """
        for name, value in (("X", X), ("memory", memory)):  # (b, m, D) and (b, n, D)
            _validate.model_input(
                name, value, ndim=3, dtype=self.norm1.weight.dtype, width=self.num_hiddens,
                width_name="num_hiddens",
            )  # fmt: skip
        if not isinstance(causal, bool):
            raise TypeError(f"causal must be True or False, got {causal!r}")
        if X.shape[0] == 0:  # as TransformerSeq2Seq.encode: the causal lengths need a batch
            raise ValueError(f"X must hold at least one sequence, got shape {tuple(X.shape)}")
        if memory.shape[0] != X.shape[0]:
            raise ValueError(
                f"X and memory must have the same batch size, got shapes {tuple(X.shape)} "
                f"and {tuple(memory.shape)}"
            )
        if memory_lens is not None:
            memory_lens = _validate.sequence_lengths(
                "memory_lens",
                memory_lens,
                batch=X.shape[0],
                upper=memory.shape[1],
                device=X.device,
            )
        if self.norm_first:
            X = X + self._self(self.norm1(X), causal)
            X = X + self._cross(self.norm2(X), memory, memory_lens)
            return X + self.dropout3(self.ffn(self.norm3(X)))
        X = self.norm1(X + self._self(X, causal))
        X = self.norm2(X + self._cross(X, memory, memory_lens))
        return self.norm3(X + self.dropout3(self.ffn(X)))

    def extra_repr(self) -> str:
        return (
            f"num_hiddens={self.num_hiddens}, num_heads={self.num_heads}, "
            f"ffn_hiddens={self.ffn_hiddens}, norm_first={self.norm_first}"
        )

    @classmethod
    def from_torch(cls, layer: nn.TransformerDecoderLayer) -> TransformerDecoderLayer:
        """A layer holding a copy of the weights of a ``torch.nn.TransformerDecoderLayer``.

        The layer must be ``batch_first=True`` with ``activation="relu"``,
        biases, packed in-projections and affine LayerNorms with one epsilon;
        anything else is refused with a ``ValueError`` saying what differs. The
        copy gets the layer's ``norm_first``, dropout, dtype, device and mode.
        """
        if not isinstance(layer, nn.TransformerDecoderLayer):
            raise TypeError(
                f"layer must be a torch.nn.TransformerDecoderLayer, got {type(layer).__name__}"
            )
        attentions = (layer.self_attn, layer.multihead_attn)
        if not all(a.batch_first for a in attentions):
            raise ValueError(
                "layer has batch_first=False: its inputs are (m, batch, D), while a "
                "TransformerDecoderLayer here takes (batch, m, D); build it with batch_first=True"
            )
        activation = layer.activation
        if not (activation is F.relu or isinstance(activation, nn.ReLU)):
            name = getattr(activation, "__name__", type(activation).__name__)
            raise ValueError(
                f'layer has activation {name!r}: the FFN here uses ReLU; build it with activation="relu"'
            )
        D = layer.self_attn.embed_dim
        norms = (layer.norm1, layer.norm2, layer.norm3)
        if not all(
            isinstance(n, nn.LayerNorm)
            and n.elementwise_affine
            and getattr(n, "bias", None) is not None
            and tuple(n.normalized_shape) == (D,)
            for n in norms
        ):
            raise ValueError(
                f"layer's norm1, norm2 and norm3 must be affine torch.nn.LayerNorm with biases "
                f"over the last axis of size {D}"
            )
        if len({n.eps for n in norms}) != 1:
            raise ValueError(
                f"layer's norms have different epsilons {[n.eps for n in norms]}; one is used here"
            )
        for a in attentions:
            if not a._qkv_same_embed_dim or a.in_proj_weight is None or a.in_proj_bias is None:
                raise ValueError(
                    "layer's attentions must have one packed (3D, D) in-projection with a bias "
                    "(no kdim/vdim, bias=True)"
                )
        if layer.linear1.bias is None or layer.linear2.bias is None:
            raise ValueError("layer has bias=False: build it with bias=True")
        weight = layer.linear1.weight
        mine = cls(
            D,
            layer.self_attn.num_heads,
            layer.linear1.out_features,
            dropout=float(layer.dropout.p),
            norm_first=bool(layer.norm_first),
            eps=float(layer.norm1.eps),
        ).to(device=weight.device, dtype=weight.dtype)
        pairs = []
        for ours, theirs in (
            (mine.self_attention, layer.self_attn),
            (mine.cross_attention, layer.multihead_attn),
        ):
            W_q, W_k, W_v = theirs.in_proj_weight.chunk(3)  # each (D, D)
            b_q, b_k, b_v = theirs.in_proj_bias.chunk(3)  # each (D,)
            pairs += [
                (ours.W_q.weight, W_q), (ours.W_k.weight, W_k), (ours.W_v.weight, W_v),
                (ours.W_q.bias, b_q), (ours.W_k.bias, b_k), (ours.W_v.bias, b_v),
                (ours.W_o.weight, theirs.out_proj.weight), (ours.W_o.bias, theirs.out_proj.bias),
            ]  # fmt: skip
        pairs += [
            (mine.ffn.linear1.weight, layer.linear1.weight),
            (mine.ffn.linear1.bias, layer.linear1.bias),
            (mine.ffn.linear2.weight, layer.linear2.weight),
            (mine.ffn.linear2.bias, layer.linear2.bias),
        ]
        for ours, theirs in zip((mine.norm1, mine.norm2, mine.norm3), norms):
            pairs += [(ours.weight, theirs.weight), (ours.bias, theirs.bias)]
        with torch.no_grad():
            for a, b in pairs:
                a.copy_(b)
        return mine.train(layer.training)


class TransformerSeq2Seq(nn.Module):
    """A 1 + 1 layer Transformer encoder-decoder with learned positions.

    Source and target symbols are embedded and added to learned position
    embeddings. With ``scale_embeddings=True`` (the default, as in Vaswani et
    al.) the symbol embeddings are multiplied by sqrt(D) first; both tables are
    initialised N(0, 1), so the positions then enter at 1/sqrt(D) of the
    symbols' size. ``scale_embeddings=False`` adds the two at the same size.
    ``position_scale`` multiplies the position embeddings (default 1): with
    ``scale_embeddings=True, position_scale=sqrt(D)`` both tables enter
    sqrt(D) times larger and equally loud; with ``scale_embeddings=False,
    position_scale=1/sqrt(D)`` the positions are as quiet as with the factor
    but the input stays small (about the symbols' size alone). With entries of
    size 1 the factor alone makes the input about sqrt((D + 1) / 2) times
    larger, not sqrt(D) (chapter 14 separates the two effects).
    One :class:`~attnbook.transformer.TransformerBlock` encodes the source (padding masked by ``source_lens``); one
    :class:`TransformerDecoderLayer` reads the target causally and the encoder's
    output through cross-attention; a final LayerNorm (pre-LN) and a linear map
    give the logits. Same interface as :class:`attnbook.seq2seq.GRUSeq2Seq`;
    ``attention_weights`` is the (b, heads, m, n) cross-attention of the last call.
    """

    def __init__(
        self,
        source_vocab: int,
        target_vocab: int,
        *,
        num_hiddens: int = 64,
        num_heads: int = 4,
        ffn_hiddens: int = 128,
        max_len: int = 32,
        norm_first: bool = True,
        scale_embeddings: bool = True,
        position_scale: float = 1.0,
    ) -> None:
        super().__init__()
        source_vocab = _validate.positive_int("source_vocab", source_vocab)
        target_vocab = _validate.positive_int("target_vocab", target_vocab)
        D = _validate.positive_int("num_hiddens", num_hiddens)
        max_len = _validate.positive_int("max_len", max_len)
        if not isinstance(scale_embeddings, bool):
            raise TypeError(f"scale_embeddings must be True or False, got {scale_embeddings!r}")
        self.max_len = max_len
        self.scale = D**0.5 if scale_embeddings else 1.0
        self.position_scale = _validate.positive_number("position_scale", position_scale)
        self.source_embedding = nn.Embedding(source_vocab, D, padding_idx=0)
        self.target_embedding = nn.Embedding(target_vocab, D)
        self.source_positions = nn.Embedding(max_len, D)
        self.target_positions = nn.Embedding(max_len, D)
        self.encoder = TransformerBlock(D, num_heads, ffn_hiddens, norm_first=norm_first)
        self.decoder = TransformerDecoderLayer(D, num_heads, ffn_hiddens, norm_first=norm_first)
        self.encoder_norm = LayerNorm(D) if norm_first else nn.Identity()
        self.decoder_norm = LayerNorm(D) if norm_first else nn.Identity()
        self.output = nn.Linear(D, target_vocab)
        self.attention_weights: torch.Tensor | None = None

    def _embed(self, tokens, embedding, positions):
        if tokens.shape[1] > self.max_len:
            raise ValueError(f"sequences must have at most max_len={self.max_len} symbols")
        index = torch.arange(tokens.shape[1], device=tokens.device)
        # (b, len, D)
        return embedding(tokens) * self.scale + positions(index) * self.position_scale

    def encode(self, source: torch.Tensor, source_lens: torch.Tensor) -> torch.Tensor:
        """source (b, n), source_lens (b,) -> memory (b, n, D)."""
        _validate.ids("source", source, ndim=2, upper=self.source_embedding.num_embeddings)
        if source.shape[0] == 0:
            raise ValueError("source must hold at least one sequence, got an empty batch")
        lens = _validate.sequence_lengths(
            "source_lens",
            source_lens,
            batch=source.shape[0],
            upper=source.shape[1],
            device=source.device,
        )
        X = self._embed(source, self.source_embedding, self.source_positions)
        return self.encoder_norm(self.encoder(X, lens))

    def decode(self, decoder_input, memory, source_lens):
        """decoder_input (b, m), memory (b, n, D) -> logits (b, m, V)."""
        _validate.ids(
            "decoder_input", decoder_input, ndim=2, upper=self.target_embedding.num_embeddings
        )
        _validate.some_positions("decoder_input", decoder_input)
        if decoder_input.shape[0] == 0:
            raise ValueError("decoder_input must hold at least one sequence, got an empty batch")
        width = self.source_embedding.embedding_dim
        dtype = self.output.weight.dtype
        memory = _validate.model_input("memory", memory, ndim=3, dtype=dtype, width=width)
        _validate.sequence_lengths(
            "source_lens",
            source_lens,
            batch=memory.shape[0],
            upper=memory.shape[1],
            device=memory.device,
        )
        if decoder_input.shape[0] != memory.shape[0]:
            raise ValueError(
                f"decoder_input must have {memory.shape[0]} rows like source, "
                f"got shape {tuple(decoder_input.shape)}"
            )
        Y = self._embed(decoder_input, self.target_embedding, self.target_positions)
        Y = self.decoder(Y, memory, source_lens)
        self.attention_weights = self.decoder.cross_attention_weights  # (b, h, m, n)
        return self.output(self.decoder_norm(Y))

    def forward(self, source, source_lens, decoder_input):
        """Teacher forcing: (b, n), (b,), (b, m) -> logits (b, m, V)."""
        return self.decode(decoder_input, self.encode(source, source_lens), source_lens)

    @torch.no_grad()
    def greedy(self, source, source_lens, length: int):
        """Greedy decoding: tokens (b, length), cross-attention weights (b, heads, length, n)."""
        length = _validate.positive_int("length", length)
        memory = self.encode(source, source_lens)
        tokens = torch.zeros(source.shape[0], 1, dtype=torch.long, device=source.device)
        for _ in range(length):
            logits = self.decode(tokens, memory, source_lens)  # (b, t, V)
            tokens = torch.cat([tokens, logits[:, -1].argmax(-1, keepdim=True)], dim=1)
        return tokens[:, 1:], self.attention_weights
