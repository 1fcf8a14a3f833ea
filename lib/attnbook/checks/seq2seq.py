"""Checkers of chapter 13: cross-attention weights and the decoder's two masks."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from ..masking import masked_softmax
from ._core import Case, CheckReport, Mistake, _generator, _Problem, _run, _see, knows
from ._draws import _draws
from ._explain import describe
from ._probes import _chain, _refusing
from ._source import Shortcut
from ._stability import UNDERFLOW, no_shift_softmax

_CROSS = "Attention Between Two Sequences"
_DECODER_ENCODER = "Attention between the decoder and the encoder"
_TRANSFORMER = "The Transformer's cross-attention"


def _additive(s, H, lens, W_s, W_h, v):
    features = torch.tanh((s @ W_s.T).unsqueeze(1) + H @ W_h.T)  # (b, n, d_a)
    return masked_softmax((features @ v).unsqueeze(1), lens).squeeze(1)  # (b, n)


def _dot(s, H, lens, W_s, W_h, v):
    scores = ((s @ W_s.T).unsqueeze(1) * (H @ W_h.T)).sum(-1)  # (b, n)
    return masked_softmax(scores.unsqueeze(1), lens).squeeze(1)


def _no_tanh(s, H, lens, W_s, W_h, v):
    features = (s @ W_s.T).unsqueeze(1) + H @ W_h.T
    return masked_softmax((features @ v).unsqueeze(1), lens).squeeze(1)


def _tanh_outside(s, H, lens, W_s, W_h, v):
    features = (s @ W_s.T).unsqueeze(1) + H @ W_h.T
    return masked_softmax(torch.tanh(features @ v).unsqueeze(1), lens).squeeze(1)


def _no_mask(s, H, lens, W_s, W_h, v):
    features = torch.tanh((s @ W_s.T).unsqueeze(1) + H @ W_h.T)
    return torch.softmax(features @ v, dim=-1)


def _over_batch(s, H, lens, W_s, W_h, v):
    features = torch.tanh((s @ W_s.T).unsqueeze(1) + H @ W_h.T)
    scores = (features @ v).masked_fill(torch.arange(H.shape[1]) >= lens[:, None], -1e9)
    return torch.softmax(scores, dim=0)


def _additive_with(
    s, H, lens, W_s, W_h, v, *, after=False, fill=None, late=False, scale=1.0, shift=True
):
    """Additive weights with one slip: the mask applied after the softmax, the padding
    filled with ``fill`` instead of -inf, the mask starting one position late, the
    scores multiplied by ``scale``, or (without ``shift``) exp(s) / sum(exp(s))."""
    features = torch.tanh((s @ W_s.T).unsqueeze(1) + H @ W_h.T)
    scores = (features @ v) * scale  # (b, n)
    positions = torch.arange(H.shape[1])
    padding = positions > lens[:, None] if late else positions >= lens[:, None]
    if after:
        return torch.softmax(scores, dim=-1).masked_fill(padding, 0.0)
    if fill is not None:
        return torch.softmax(scores.masked_fill(padding, fill), dim=-1)
    if not shift:
        return no_shift_softmax(scores.masked_fill(padding, float("-inf")))
    return torch.softmax(scores.masked_fill(padding, float("-inf")), dim=-1)


@knows(
    Mistake(
        "dot_product",
        _dot,
        "these are dot-product weights, (W_s s) . (W_h h_j): the additive score adds the "
        "two projections, passes the sum through tanh and reads it with v; "
        + _see(_DECODER_ENCODER, _CROSS),
    ),
    Mistake(
        "no_tanh",
        _no_tanh,
        "the tanh is missing: without it v . (W_s s + W_h h_j) gives every source position "
        "the same query term, the softmax cancels it, and the weights no longer depend on "
        "the decoder state; " + _see(_DECODER_ENCODER, _CROSS),
    ),
    Mistake(
        "tanh_outside",
        _tanh_outside,
        "the tanh sits outside v: the score is v . tanh(W_s s + W_h h_j), with the tanh on "
        "the d_a hidden features before v reads them; " + _see(_DECODER_ENCODER, _CROSS),
    ),
    Mistake(
        "no_mask",
        _no_mask,
        "the padding is not masked: source positions at or beyond source_lens get weight "
        "(use masked_softmax with the lengths); " + _see(_DECODER_ENCODER, _CROSS),
    ),
    Mistake(
        "mask_after_softmax",
        lambda *a: _additive_with(*a, after=True),
        "the padding is zeroed after the softmax: the weights of the real positions then sum "
        "to less than 1; mask the scores before the softmax (masked_softmax does), so the "
        "real positions share all the weight; " + _see(_DECODER_ENCODER, _CROSS),
    ),
    Mistake(
        "padding_scored_zero",
        lambda *a: _additive_with(*a, fill=0.0),
        "the padding's scores were set to 0 instead of a very negative number: a score of 0 "
        "still gets weight exp(0) = 1 after the softmax; fill with -inf (or use "
        "masked_softmax); " + _see(_DECODER_ENCODER, _CROSS),
    ),
    Mistake(
        "padding_off_by_one",
        lambda *a: _additive_with(*a, late=True),
        "the padding starts one position late: position j is padding when j >= length "
        "(positions count from 0), not j > length; " + _see(_DECODER_ENCODER, _CROSS),
    ),
    Mistake(
        "scaled_by_sqrt_d_a",
        lambda *a: _additive_with(*a, scale=1 / math.sqrt(a[5].shape[0])),
        "the scores look divided by sqrt(d_a): that scaling belongs to the scaled dot "
        "product; the additive score is v . tanh(W_s s + W_h h_j) as it is; "
        + _see(_DECODER_ENCODER, _CROSS),
    ),
    Mistake(
        "softmax_over_batch",
        _over_batch,
        "the softmax runs over the batch (dim=0): each decoder state's weights must sum to "
        "1 over its own source positions, the last axis; " + _see(_DECODER_ENCODER, _CROSS),
    ),
    Mistake(
        "no_shift",
        lambda *a: _additive_with(*a, shift=False),
        "this looks like a softmax written as exp(e) / exp(e).sum(...) with no shift: it is "
        "right for small scores, but exp overflows to inf beyond 88.7 and underflows to 0 "
        "below -103 in float32 (0 / 0 is NaN); use torch.softmax or masked_softmax, or "
        "subtract each row's largest score first; " + _see(_DECODER_ENCODER, _CROSS),
    ),
)
def check_cross_attention_weights(fn: Callable) -> CheckReport:
    """Check ``fn(s, H, source_lens, W_s, W_h, v)``: additive cross-attention weights.

    ``s`` (b, d_s) holds one decoder state per example, ``H`` (b, n, d_h) the
    encoder states, ``source_lens`` (b,) the valid lengths, ``W_s`` (d_a, d_s),
    ``W_h`` (d_a, d_h) and ``v`` (d_a,) the score's parameters. The answer is the
    (b, n) weights softmax_j(v . tanh(W_s s + W_h h_j)) over the valid positions,
    exactly 0 on the padding. Under every seed, two cases hold float32 scores
    near -200 or near 100, where a softmax with no shift underflows or overflows.
    """
    g = _generator(13)
    cases = []
    for b, n, d_s, d_h, d_a, lens in (
        (3, 6, 5, 4, 7, [6, 2, 4]),
        (2, 4, 3, 6, 2, [4, 4]),
        (4, 5, 4, 4, 3, [1, 5, 3, 2]),
    ):
        args = (
            torch.randn(b, d_s, generator=g),
            torch.randn(b, n, d_h, generator=g),
            torch.tensor(lens),
            torch.randn(d_a, d_s, generator=g),
            torch.randn(d_a, d_h, generator=g),
            torch.randn(d_a, generator=g),
        )
        cases.append(
            Case(
                f"b={b}, n={n}, d_s={d_s}, d_h={d_h}, d_a={d_a}, lengths {lens}",
                args,
                _additive(*args),
                "the weights are the masked softmax over j of v . tanh(W_s s + W_h h_j); "
                + _see(_DECODER_ENCODER, _CROSS),
            )
        )
    # Under every seed: tanh near -1 or +1 read by a long v, scores near -200 or 100.
    for sign, size, lens in ((-1, 52.0, [5, 3]), (1, 25.0, [5, 5])):
        args = (
            sign * 3 + 0.1 * torch.randn(2, 4, generator=g),
            2 * torch.rand(2, 5, 4, generator=g) - 1,
            torch.tensor(lens),
            torch.eye(4),
            torch.eye(4),
            torch.full((4,), size),
        )
        cases.append(
            Case(
                f"scores near {-200 if sign < 0 else 100} (float32), b=2, n=5, "
                f"d_s=d_h=d_a=4, lengths {lens}",
                args,
                _additive(*args),
                f"{UNDERFLOW}: use torch.softmax or masked_softmax, or subtract each "
                "row's largest score first; " + _see(_DECODER_ENCODER, _CROSS),
            )
        )
    return _run(
        "check_cross_attention_weights",
        fn,
        cases,
        mistakes=check_cross_attention_weights.mistakes,
        explain=_weights_reading,
    )


def _weights_reading(case: Case, got: object) -> str | None:
    """The first difference, and what the weights break: the padding, or sums of 1."""
    reading = describe(got, case.expected, ("example", "source position"))
    if not isinstance(got, torch.Tensor) or got.shape != case.expected.shape or not reading:
        return reading
    got = got.detach().double()
    lens = case.args[2]
    padding = torch.arange(got.shape[1]) >= lens[:, None]
    sums = got.sum(dim=-1)
    if bool((got[padding].abs() > 1e-6).any()):
        example = int(torch.nonzero((got.abs() > 1e-6) & padding)[0, 0])
        return (
            f"{reading}; example {example} puts weight on its padding (positions from "
            f"{int(lens[example])} on), which must get exactly 0"
        )
    if bool(((sums - 1).abs() > 1e-4).any()):
        example = int(torch.nonzero((sums - 1).abs() > 1e-4)[0, 0])
        return (
            f"{reading}; the weights of example {example} sum to {sums[example].item():.4g}, "
            "not 1: the softmax must run over the source positions (the last axis), after "
            "masking"
        )
    return f"{reading}; the weights sum to 1 and skip the padding, so the scores themselves differ"


def _masks(m, source_lens, n):
    causal = torch.triu(torch.ones(m, m, dtype=torch.bool), diagonal=1)
    padding = torch.arange(n) >= source_lens[:, None]
    return causal, padding


class _NotBoolean(_Problem):
    """A mask that is not a boolean tensor."""


def _as_parts(fn: Callable) -> Callable:
    """A probe: the two masks, checked to be boolean, as a dict of float tensors."""

    def probe(m, source_lens, n):
        out = fn(m, source_lens, n)
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise _Problem("expected a pair (tgt_mask, memory_key_padding_mask)")
        for name, mask in zip(("tgt_mask", "memory_key_padding_mask"), out):
            if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
                got = mask.dtype if isinstance(mask, torch.Tensor) else type(mask).__name__
                raise _NotBoolean(
                    f"{name} must be a boolean tensor (True = may not attend), got {got}"
                )
        return {"tgt_mask": out[0].double(), "memory_key_padding_mask": out[1].double()}

    return probe


def _float_masks(m, lens, n):
    causal, padding = _masks(m, lens, n)
    return (
        torch.zeros(m, m).masked_fill(causal, float("-inf")),
        torch.zeros(len(lens), n).masked_fill(padding, float("-inf")),
    )


# Caught at run time in this process; read in the source a grader's proxy hands over.
_CAUSAL_MASK_SHORTCUT = Shortcut(
    "generate_square_subsequent_mask",
    ("torch.nn.Transformer.generate_square_subsequent_mask",),
    "PyTorch's ready-made causal mask, which the exercise asks you not to use",
    methods=("generate_square_subsequent_mask", "_generate_square_subsequent_mask"),
    remote=True,
)


def _torch_causal_masks() -> list[Callable]:
    """PyTorch's ready-made causal mask, which exercise 2 forbids: the public
    static method and the module function behind it (where this torch has one)."""
    from torch.nn.modules import transformer

    found = [torch.nn.Transformer.generate_square_subsequent_mask]
    inner = getattr(transformer, "_generate_square_subsequent_mask", None)
    return found + ([inner] if callable(inner) else [])


def _masks_from_torch(m, lens, n):
    causal = torch.nn.Transformer.generate_square_subsequent_mask(m) == -math.inf
    return causal, _masks(m, lens, n)[1]


@knows(
    Mistake(
        "generate_square_subsequent_mask",
        _masks_from_torch,
        "this calls torch.nn.Transformer.generate_square_subsequent_mask, which the exercise "
        "asks you not to use: build the boolean causal mask yourself from m, True strictly "
        "above the diagonal (the future); " + _see(_TRANSFORMER, _CROSS),
    ),
    Mistake(
        "both_inverted",
        lambda m, lens, n: (~_masks(m, lens, n)[0], ~_masks(m, lens, n)[1]),
        "both masks are inverted, True where attention is allowed: in PyTorch's boolean "
        "masks True means 'may not attend', so tgt_mask is True above the diagonal (the "
        "future) and memory_key_padding_mask True at the padding; " + _see(_TRANSFORMER, _CROSS),
    ),
    Mistake(
        "causal_inverted",
        lambda m, lens, n: (~_masks(m, lens, n)[0], _masks(m, lens, n)[1]),
        "tgt_mask is inverted: in PyTorch's boolean masks True means 'may not attend', so "
        "the future (above the diagonal) is True and the past False; " + _see(_TRANSFORMER, _CROSS),
    ),
    Mistake(
        "diagonal_blocked",
        lambda m, lens, n: (
            torch.triu(torch.ones(m, m, dtype=torch.bool)),
            _masks(m, lens, n)[1],
        ),
        "tgt_mask also blocks the diagonal: a target position may attend to itself (and the "
        "first one to nothing else), so mask only j > i (triu with diagonal=1); "
        + _see(_TRANSFORMER, _CROSS),
    ),
    Mistake(
        "padding_inverted",
        lambda m, lens, n: (_masks(m, lens, n)[0], ~_masks(m, lens, n)[1]),
        "memory_key_padding_mask is inverted: it is True at the padding (positions at or "
        "beyond the source length), False on the real symbols; " + _see(_TRANSFORMER, _CROSS),
    ),
    Mistake(
        "padding_off_by_one",
        lambda m, lens, n: (_masks(m, lens, n)[0], torch.arange(n) > lens[:, None]),
        "memory_key_padding_mask starts one position late: position j is padding when "
        "j >= length (positions run from 0), not j > length; " + _see(_TRANSFORMER, _CROSS),
    ),
    Mistake(
        "causal_transposed",
        lambda m, lens, n: (_masks(m, lens, n)[0].T, _masks(m, lens, n)[1]),
        "tgt_mask is True below the diagonal: that blocks the past and lets every position "
        "see the future; rows are queries and columns keys, so block j > i, triu(diagonal=1); "
        + _see(_TRANSFORMER, _CROSS),
    ),
    Mistake(
        "padding_transposed",
        lambda m, lens, n: (_masks(m, lens, n)[0], _masks(m, lens, n)[1].T),
        "memory_key_padding_mask is (n, b), one column per example: PyTorch wants (b, n), "
        "one row per example (batch first); " + _see(_TRANSFORMER, _CROSS),
    ),
    Mistake(
        "float_masks",
        _float_masks,
        "these are float masks (0 and -inf, to add to the scores): the exercise asks for "
        "boolean masks, True where attention is not allowed; " + _see(_TRANSFORMER, _CROSS),
    ),
    Mistake(
        "padding_from_target_length",
        lambda m, lens, n: (_masks(m, lens, n)[0], torch.arange(m) >= lens[:, None]),
        "memory_key_padding_mask is built over the target's m positions, "
        "torch.arange(m) >= source_lens[:, None]: it masks the source, so it has one "
        "column per source position, torch.arange(n) >= source_lens[:, None], shape (b, n); "
        + _see(_TRANSFORMER, _CROSS),
    ),
    Mistake(
        "swapped",
        lambda m, lens, n: (_masks(m, lens, n)[1], _masks(m, lens, n)[0]),
        "the two masks are swapped: first the (m, m) causal tgt_mask, then the (b, n) "
        "memory_key_padding_mask; " + _see(_TRANSFORMER, _CROSS),
    ),
)
def check_decoder_masks(fn: Callable) -> CheckReport:
    """Check ``fn(m, source_lens, n)``: the two masks of ``nn.TransformerDecoderLayer``.

    ``m`` is the target length, ``source_lens`` (b,) the source lengths and ``n``
    the padded source length. The answer is the pair ``(tgt_mask,
    memory_key_padding_mask)``: a boolean (m, m) causal mask, True above the
    diagonal, and a boolean (b, n) mask, True at the source padding (PyTorch's
    convention: True means "may not attend"). Either mask inverted, or both,
    is named; otherwise the first failing case says which mask differs and where.
    A function that calls ``torch.nn.Transformer.generate_square_subsequent_mask``
    (however it was reached) is rejected: the exercise builds the masks from the
    lengths alone.
    """
    sizes = [(4, [5, 2, 3], 5), (3, [1, 3], 4), (5, [6, 6, 1, 4], 6)]
    draw = _draws(910)
    if draw is not None:  # a hidden test: other lengths; one source in each is unpadded
        sizes = []
        for batch in (3, 2, 4):
            n = draw.int(3, 8)
            lens = draw.ints(batch, 1, n)
            lens[draw.int(0, batch - 1)] = n
            sizes.append((draw.int(2, 7, avoid=(n,)), lens, n))  # m != n, as in the book
    cases = []
    for m, lens, n in sizes:
        lens = torch.tensor(lens)
        causal, padding = _masks(m, lens, n)
        cases.append(
            Case(
                f"m={m} target positions, source lengths {lens.tolist()} padded to n={n}",
                (m, lens, n),
                {"tgt_mask": causal.double(), "memory_key_padding_mask": padding.double()},
                "True means 'may not attend': the future in tgt_mask, the padding in "
                "memory_key_padding_mask; " + _see(_TRANSFORMER, _CROSS),
            )
        )
    return _run(
        "check_decoder_masks",
        fn,
        cases,
        mistakes=check_decoder_masks.mistakes,
        probe=_chain(
            _as_parts,
            _refusing(
                _torch_causal_masks(),
                "torch.nn.Transformer.generate_square_subsequent_mask, which the exercise "
                "asks you not to use",
            ),
        ),
        explain=lambda case, got: _mask_reading(case.expected, got),
        refuse=(_CAUSAL_MASK_SHORTCUT,),
    )


def _mask_reading(expected: dict, got: dict) -> str | None:
    """Which mask differs, and where, in the words of the two masks."""
    for name, axes in (
        ("tgt_mask", ("target query", "target key")),
        ("memory_key_padding_mask", ("example", "source position")),
    ):
        want, mine = expected[name], got[name]
        if mine.shape != want.shape or not torch.equal(mine, want):
            reading = describe(mine, want, axes)
            if reading and mine.shape == want.shape:
                flipped = int((mine != want).sum())
                reading = (
                    f"{reading}; {flipped} of {want.numel()} entries differ (True means "
                    "'may not attend': the future, and the padding)"
                )
            return f"{name}: {reading}"
    return None
