"""The Transformer block: self-attention and a feed-forward network on a residual stream.

A block reads the residual stream X (batch, n, D) twice and adds to it twice:
once the output of multi-head self-attention, once the output of a
position-wise feed-forward network (two linear maps with a ReLU between, hidden
width ``ffn_hiddens``, usually 4 D). Where the layer normalisation sits is the
one design choice:

* **pre-LN** (``norm_first=True``, what current models use)::

      X = X + Attention(LN_1(X))
      X = X + FFN(LN_2(X))

* **post-LN** (``norm_first=False``, the original Transformer)::

      X = LN_1(X + Attention(X))
      X = LN_2(X + FFN(X))

:class:`TransformerBlock` is built from the book's own parts
(:class:`attnbook.multihead.MultiHeadAttention` with biases and
:class:`attnbook.norms.LayerNorm`) and agrees with
``torch.nn.TransformerEncoderLayer(batch_first=True, activation="relu")`` given
the same weights (:meth:`TransformerBlock.from_torch` copies them), in both
placements, with valid lengths in place of a key padding mask.
:func:`gradient_norms_at_init` measures the gradient of each block of a freshly
initialised stack, the experiment behind post-LN versus pre-LN.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from . import _validate
from .multihead import MultiHeadAttention
from .norms import LayerNorm

__all__ = [
    "PositionWiseFFN",
    "TransformerBlock",
    "gradient_norms_at_init",
]


class PositionWiseFFN(nn.Module):
    """Two linear maps with a ReLU between, applied to every position on its own.

    (..., num_hiddens) -> (..., ffn_hiddens) -> (..., num_hiddens). ``linear1``
    and ``linear2`` have biases; ``dropout`` acts on the hidden layer in
    training mode only.
    """

    def __init__(self, num_hiddens: int, ffn_hiddens: int, dropout: float = 0.0) -> None:
        super().__init__()
        num_hiddens = _validate.positive_int("num_hiddens", num_hiddens)
        ffn_hiddens = _validate.positive_int("ffn_hiddens", ffn_hiddens)
        self.linear1 = nn.Linear(num_hiddens, ffn_hiddens)
        self.linear2 = nn.Linear(ffn_hiddens, num_hiddens)
        self.dropout = nn.Dropout(_validate.probability("dropout", dropout))

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        """X (..., num_hiddens) -> (..., num_hiddens)."""
        weight = self.linear1.weight  # (ffn_hiddens, num_hiddens)
        _validate.model_input(
            "X", X, dtype=weight.dtype, width=weight.shape[1], width_name="num_hiddens",
            batch_axes=None,
        )  # fmt: skip
        return self.linear2(self.dropout(torch.relu(self.linear1(X))))


def _check_block_args(
    num_hiddens: object, num_heads: object, ffn_hiddens: object, dropout: object, norm_first: object
) -> tuple[int, int, int, float, bool]:
    """The checks every Transformer block makes of its sizes (internal; shared by
    :class:`TransformerBlock` and :class:`attnbook.decoder.TransformerDecoderLayer`)."""
    return (
        _validate.positive_int("num_hiddens", num_hiddens),
        _validate.positive_int("num_heads", num_heads),
        _validate.positive_int("ffn_hiddens", ffn_hiddens),
        _validate.probability("dropout", dropout),
        _validate.flag("norm_first", norm_first),
    )


class TransformerBlock(nn.Module):
    """One Transformer encoder block: self-attention and an FFN, each on a residual branch.

    Args:
        num_hiddens: D, the width of the residual stream.
        num_heads: h, the number of attention heads; it must divide D.
        ffn_hiddens: the hidden width of the feed-forward network (usually 4 D).
        dropout: dropout probability on the attention weights, on each branch's
            output and on the FFN's hidden layer (training mode only).
        norm_first: True for pre-LN (normalise inside each branch), False for
            post-LN (normalise after each residual sum).
        eps: the epsilon of both layer normalisations (keyword only).

    After a forward call, ``attention_weights`` holds the (batch, heads, n, n)
    weights of the self-attention.
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
        self.attention = MultiHeadAttention(num_hiddens, num_heads, dropout, bias=True)
        self.ffn = PositionWiseFFN(num_hiddens, ffn_hiddens, dropout)
        self.norm1 = LayerNorm(num_hiddens, eps)
        self.norm2 = LayerNorm(num_hiddens, eps)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)

    @property
    def attention_weights(self) -> torch.Tensor | None:
        """The (batch, heads, n, n) self-attention weights of the last forward call."""
        return self.attention.attention_weights

    def _attend(self, X: torch.Tensor, valid_lens) -> torch.Tensor:
        return self.dropout1(self.attention(X, X, X, valid_lens))  # (b, n, D)

    def forward(self, X: torch.Tensor, valid_lens: torch.Tensor | None = None) -> torch.Tensor:
        """X (batch, n, D) -> (batch, n, D).

        ``valid_lens`` is None, (batch,) (keys at or beyond the length are
        padding, like a key padding mask) or (batch, n) (one length per query,
        e.g. a causal pattern); see :func:`attnbook.masking.masked_softmax`.
        """
        _validate.model_input(
            "X", X, ndim=3, dtype=self.norm1.weight.dtype, width=self.num_hiddens,
            width_name="num_hiddens",
        )  # fmt: skip
        if self.norm_first:
            X = X + self._attend(self.norm1(X), valid_lens)  # (b, n, D)
            return X + self.dropout2(self.ffn(self.norm2(X)))
        X = self.norm1(X + self._attend(X, valid_lens))
        return self.norm2(X + self.dropout2(self.ffn(X)))

    def extra_repr(self) -> str:
        return (
            f"num_hiddens={self.num_hiddens}, num_heads={self.num_heads}, "
            f"ffn_hiddens={self.ffn_hiddens}, norm_first={self.norm_first}"
        )

    @classmethod
    def from_torch(cls, layer: nn.TransformerEncoderLayer) -> TransformerBlock:
        """A block holding a copy of the weights of a ``torch.nn.TransformerEncoderLayer``.

        The layer must have the layout this block has: ``batch_first=True``,
        ``activation="relu"``, biases (``bias=True``), one in-projection for
        queries, keys and values, and affine ``LayerNorm``s over the last axis
        with one shared epsilon. Anything else is refused with a ``ValueError``
        that says what differs (a copy would silently compute something else).
        The block gets the layer's ``norm_first``, dropout, dtype and device; in
        eval mode the two then agree to float tolerance.
        """
        if not isinstance(layer, nn.TransformerEncoderLayer):
            raise TypeError(
                f"layer must be a torch.nn.TransformerEncoderLayer, got {type(layer).__name__}"
            )
        attention = layer.self_attn
        if not attention.batch_first:
            raise ValueError(
                "layer has batch_first=False: its inputs are (n, batch, D), while a "
                "TransformerBlock takes (batch, n, D); build it with batch_first=True"
            )
        activation = layer.activation
        if not (activation is F.relu or isinstance(activation, nn.ReLU)):
            name = getattr(activation, "__name__", type(activation).__name__)
            raise ValueError(
                f"layer has activation {name!r}: a TransformerBlock's feed-forward network "
                'uses ReLU; build the layer with activation="relu"'
            )
        D = attention.embed_dim
        norms = (layer.norm1, layer.norm2)
        if not all(
            isinstance(norm, nn.LayerNorm)
            and norm.elementwise_affine
            and tuple(norm.normalized_shape) == (D,)
            for norm in norms
        ):
            raise ValueError(
                "layer's norm1 and norm2 must be affine torch.nn.LayerNorm over the last "
                f"axis of size {D}, got {layer.norm1!r} and {layer.norm2!r}"
            )
        if (
            attention.in_proj_bias is None
            or attention.out_proj.bias is None
            or layer.linear1.bias is None
            or layer.linear2.bias is None
            or getattr(layer.norm1, "bias", None) is None
            or getattr(layer.norm2, "bias", None) is None
        ):
            raise ValueError(
                "layer has bias=False: a TransformerBlock has biases in every projection, "
                "linear map and LayerNorm; build the layer with bias=True"
            )
        if not attention._qkv_same_embed_dim or attention.in_proj_weight is None:
            raise ValueError(
                "layer's attention has separate kdim/vdim projections; a TransformerBlock "
                "needs one (3D, D) in-projection for queries, keys and values"
            )
        if layer.norm1.eps != layer.norm2.eps:
            raise ValueError(
                f"layer's norms have different epsilons, {layer.norm1.eps} and "
                f"{layer.norm2.eps}; a TransformerBlock uses one"
            )
        weight = layer.linear1.weight
        block = cls(
            D,
            attention.num_heads,
            layer.linear1.out_features,
            dropout=float(layer.dropout.p),
            norm_first=bool(layer.norm_first),
            eps=float(layer.norm1.eps),
        ).to(device=weight.device, dtype=weight.dtype)
        W_q, W_k, W_v = attention.in_proj_weight.chunk(3)  # each (D, D)
        b_q, b_k, b_v = attention.in_proj_bias.chunk(3)  # each (D,)
        pairs = [
            (block.attention.W_q.weight, W_q),
            (block.attention.W_k.weight, W_k),
            (block.attention.W_v.weight, W_v),
            (block.attention.W_q.bias, b_q),
            (block.attention.W_k.bias, b_k),
            (block.attention.W_v.bias, b_v),
            (block.attention.W_o.weight, attention.out_proj.weight),
            (block.attention.W_o.bias, attention.out_proj.bias),
            (block.ffn.linear1.weight, layer.linear1.weight),
            (block.ffn.linear1.bias, layer.linear1.bias),
            (block.ffn.linear2.weight, layer.linear2.weight),
            (block.ffn.linear2.bias, layer.linear2.bias),
            (block.norm1.weight, layer.norm1.weight),
            (block.norm1.bias, layer.norm1.bias),
            (block.norm2.weight, layer.norm2.weight),
            (block.norm2.bias, layer.norm2.bias),
        ]
        with torch.no_grad():
            for mine, theirs in pairs:
                mine.copy_(theirs)
        return block.train(layer.training)


def gradient_norms_at_init(
    depth: int,
    norm_first: bool,
    num_hiddens: int = 32,
    num_heads: int = 4,
    num_steps: int = 8,
    batch: int = 4,
    vocab: int = 64,
    seeds: tuple[int, ...] = (0, 1, 2, 3),
    input_std: float = 1.0,
) -> torch.Tensor:
    """The gradient norm of each block's parameters in fresh stacks of ``depth`` blocks.

    For each seed, a stack of ``depth`` freshly initialised :class:`TransformerBlock` s
    (no dropout, FFN width 4 D) is built with every weight matrix
    Xavier-uniform and every bias zero (what ``torch.nn.Transformer`` applies to
    its weight matrices), followed by a final :class:`~attnbook.norms.LayerNorm` when
    ``norm_first`` is True (a pre-LN stack's output is otherwise never
    normalised). Its input is (batch, num_steps, num_hiddens) normal numbers
    of standard deviation ``input_std`` (1 by default; the scale of the
    embeddings that a real model would feed in, 0.02 in GPT-2 and about
    sqrt(num_hiddens) for N(0, 1) tables scaled by sqrt(D)); a fixed random readout maps the output to ``vocab`` logits, and the
    loss is the cross-entropy against random target tokens, as for a language
    model at its first step. Block i is the same block whatever the depth.
    Everything random comes from the seeds; the global random state is left alone.

    Returns:
        A float64 tensor (depth,): entry i is the root mean square over the
        seeds of the Euclidean norm of the gradient of the loss with respect to
        all parameters of block i, block 0 being the one nearest the input.
    """
    depth = _validate.positive_int("depth", depth)
    if not isinstance(norm_first, bool):
        raise TypeError(f"norm_first must be True or False, got {norm_first!r}")
    num_hiddens = _validate.positive_int("num_hiddens", num_hiddens)
    num_steps = _validate.positive_int("num_steps", num_steps)
    batch = _validate.positive_int("batch", batch)
    vocab = _validate.positive_int("vocab", vocab)
    input_std = _validate.positive_number("input_std", input_std)
    if not isinstance(seeds, (tuple, list)) or not seeds:
        raise ValueError(f"seeds must be a non-empty tuple of integers, got {seeds!r}")
    threads = torch.get_num_threads()
    # Tensors this small run fastest on one thread (and the result is the same).
    torch.set_num_threads(1)
    try:
        return _gradient_norms(
            depth, norm_first, num_hiddens, num_heads, num_steps, batch, vocab, seeds, input_std
        )
    finally:
        torch.set_num_threads(threads)


def _gradient_norms(
    depth, norm_first, num_hiddens, num_heads, num_steps, batch, vocab, seeds, input_std=1.0
):
    squares = torch.zeros(depth, dtype=torch.float64)
    for seed in seeds:
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise TypeError(f"seeds must hold integers, got {seed!r}")
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            blocks = [
                TransformerBlock(num_hiddens, num_heads, 4 * num_hiddens, norm_first=norm_first)
                for _ in range(depth)
            ]
        # Xavier-uniform weights and zero biases, drawn from a generator of our own.
        g = torch.Generator().manual_seed(10_000 + seed)
        with torch.no_grad():
            for block in blocks:
                for module in block.modules():
                    if isinstance(module, nn.Linear):
                        fan_out, fan_in = module.weight.shape
                        bound = (6.0 / (fan_in + fan_out)) ** 0.5
                        module.weight.uniform_(-bound, bound, generator=g)
                        module.bias.zero_()
        X = input_std * torch.randn(batch, num_steps, num_hiddens, generator=g)  # (b, n, D)
        readout = torch.randn(num_hiddens, vocab, generator=g) / num_hiddens**0.5  # (D, V)
        targets = torch.randint(0, vocab, (batch * num_steps,), generator=g)
        H = X
        for block in blocks:
            H = block(H)  # (b, n, D)
        if norm_first:
            H = LayerNorm(num_hiddens)(H)
        loss = F.cross_entropy((H @ readout).reshape(-1, vocab), targets)
        params = [list(block.parameters()) for block in blocks]
        grads = torch.autograd.grad(loss, [p for group in params for p in group])
        start = 0
        for i, group in enumerate(params):
            for grad in grads[start : start + len(group)]:
                squares[i] += (grad.double() ** 2).sum()
            start += len(group)
    return (squares / len(seeds)).sqrt()
