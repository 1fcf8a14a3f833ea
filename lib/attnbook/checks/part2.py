"""Checkers of Part II: multi-head attention, self-attention and positional encoding
(the checkers of Attention That Learns are in ``learns``)."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from ._core import CheckReport, Mistake, _generator, _run, _see, knows
from ._draws import _draws
from ._explain import describe, explainer
from ._probes import _chain, _refusing
from ._source import Shortcut
from ._stability import no_shift_softmax

_MULTIHEAD = "Multi-Head Attention"
_SELF = "Self-Attention and Positional Encoding"

# ---------------------------------------------------------------- Part II checkers
# Chapters 6 (multi-head attention) and 7 (self-attention and positional encoding).


def _count(fn: Callable) -> Callable:
    """Wrap a function that returns a number so that its answer compares as a tensor."""

    def wrapped(*args):
        got = fn(*args)
        if isinstance(got, torch.Tensor) and got.numel() == 1:
            got = got.item()
        if isinstance(got, bool) or not isinstance(got, (int, float)):
            raise TypeError(f"expected a number, got {type(got).__name__}")
        return torch.tensor(float(got), dtype=torch.float64)

    return wrapped


_COST = _see("What several heads cost", _MULTIHEAD)
_OWN_QKV = (
    "this looks like every head with its own num_hiddens x num_hiddens query, key and "
    "value projections and one shared W_o: the heads share each projection, every "
    "head using its own slice of num_hiddens / num_heads rows, so the count is the "
    "same for every num_heads; " + _COST
)


def _built(num_hiddens: int, num_heads: int, bias: bool) -> int:
    from ..multihead import MultiHeadAttention

    layer = MultiHeadAttention(num_hiddens, num_heads, bias=bias)
    return sum(p.numel() for p in layer.parameters())


@knows(
    Mistake(
        "builds the layer",
        _built,
        "this builds MultiHeadAttention and counts its parameters: the exercise asks for "
        "the formula, from the shapes of the four projections; " + _COST,
    ),
    Mistake(
        "every head full size",
        lambda D, h, bias: h * (4 * D * D + (4 * D if bias else 0)),
        "this looks like every head with its own num_hiddens x num_hiddens projections "
        "(the count times num_heads): the heads share each projection, every head using "
        "its own slice of num_hiddens / num_heads columns; " + _COST,
    ),
    Mistake(
        "every head its own W_q, W_k, W_v",
        lambda D, h, bias: 3 * h * D * D + D * D + ((3 * h + 1) * D if bias else 0),
        _OWN_QKV,
    ),
    Mistake(
        "every head its own W_q, W_k, W_v, four biases",
        lambda D, h, bias: 3 * h * D * D + D * D + (4 * D if bias else 0),
        _OWN_QKV,
    ),
    Mistake(
        "no W_o",
        lambda D, h, bias: 3 * D * D + (3 * D if bias else 0),
        "this looks like the query, key and value projections alone: the output "
        "projection W_o, one more num_hiddens x num_hiddens matrix, counts too; " + _COST,
    ),
    Mistake(
        "bias ignored",
        lambda D, h, bias: 4 * D * D,
        "this looks like a count that ignores bias: with bias=True each of the four "
        "projections also has a bias vector of num_hiddens entries; " + _COST,
    ),
    Mistake(
        "W_o for one head",
        lambda D, h, bias: 3 * D * D + D * (D // h) + (4 * D if bias else 0),
        "this looks like W_o sized for a single head (num_hiddens x num_hiddens / "
        "num_heads): W_o maps the concatenation of all heads, num_hiddens features, "
        "back to num_hiddens; " + _COST,
    ),
    Mistake(
        "three biases",
        lambda D, h, bias: 4 * D * D + (3 * D if bias else 0),
        "this looks like bias vectors on the query, key and value projections only: "
        "with bias=True the output projection W_o has one too; " + _COST,
    ),
    Mistake(
        "one bias vector",
        lambda D, h, bias: 4 * D * D + (D if bias else 0),
        "this looks like a single bias vector of num_hiddens entries: with bias=True each "
        "of the four projections (W_q, W_k, W_v and W_o) has its own; " + _COST,
    ),
    Mistake(
        "one head's slice",
        lambda D, h, bias: 4 * D * (D // h) + (4 * D if bias else 0),
        "this looks like each projection counted as one head's slice, num_hiddens x "
        "(num_hiddens / num_heads): the heads' slices side by side make one full "
        "num_hiddens x num_hiddens matrix per projection; " + _COST,
    ),
)
def check_mha_parameter_count(fn: Callable[[int, int, bool], int]) -> CheckReport:
    """Check ``fn(num_hiddens, num_heads, bias)``: the number of learnable parameters
    of ``attnbook.multihead.MultiHeadAttention(num_hiddens, num_heads, bias=bias)``.

    The expected answers come from building the layer and counting its entries.
    Every case has fewer than 10,000 parameters, so the tolerance of the
    comparison is below 1 and any wrong count fails.
    """
    from ..multihead import MultiHeadAttention

    if not callable(fn):
        raise TypeError(f"fn must be a function, got {fn!r}")
    sizes = [(40, 5, False), (40, 1, False), (12, 3, True), (48, 8, True)]
    draw = _draws(903)
    if draw is not None:  # a hidden test: other widths and heads, num_hiddens <= 48
        heads = [draw.int(2, 8, avoid=(5,)), 1, draw.int(2, 8, avoid=(3,)), draw.int(2, 7)]
        sizes = [
            (h * draw.int(-(-4 // h), 48 // h), h, bias)  # 4 <= num_hiddens <= 48
            for h, bias in zip(heads, (False, False, True, True))
        ]
        sizes[1] = (draw.int(4, 48, avoid=(40,)), 1, False)
    cases = []
    for hiddens, heads, bias in sizes:
        with torch.random.fork_rng(devices=[]):  # building a layer draws random weights
            layer = MultiHeadAttention(hiddens, heads, bias=bias)
        total = sum(p.numel() for p in layer.parameters())
        hint = (
            "each projection is one num_hiddens x num_hiddens matrix shared by all heads, "
            "plus W_o, and a bias vector per projection when bias=True; " + _COST
        )
        cases.append(
            (
                f"num_hiddens={hiddens}, num_heads={heads}, bias={bias}",
                (hiddens, heads, bias),
                torch.tensor(float(total), dtype=torch.float64),
                hint,
            )
        )
    return _run(
        "check_mha_parameter_count",
        fn,
        cases,
        mistakes=check_mha_parameter_count.mistakes,
        probe=_chain(
            _count,
            _refusing(
                [MultiHeadAttention.__init__],
                "MultiHeadAttention(...) to count its parameters; the exercise asks for a "
                "formula, without building the layer",
            ),
        ),
        explain=explainer(()),
        refuse=(_BUILDING_SHORTCUT,),
    )


# Caught at run time in this process; read in the source a grader's proxy hands over.
_BUILDING_SHORTCUT = Shortcut(
    "MultiHeadAttention(...)",
    ("attnbook.multihead.MultiHeadAttention",),
    "the layer built to count its parameters: the exercise asks for a formula",
    remote=True,
)

_SHAPES = _see("The parallel implementation, shape by shape", _MULTIHEAD)


@knows(
    Mistake(
        "whole list repeated",
        lambda lens, h: torch.cat([lens] * h),
        "this looks like the whole list repeated num_heads times (torch.cat or "
        ".repeat): the heads of sequence b sit next to each other, in rows "
        "b * num_heads to (b + 1) * num_heads - 1, so repeat each sequence's lengths in "
        "place, with repeat_interleave(num_heads, dim=0); " + _SHAPES,
    ),
    Mistake(
        "not repeated",
        lambda lens, h: lens.clone(),
        "this looks like the lengths returned as they came: after the heads are folded "
        "into the batch there are batch * num_heads rows, one per head of each "
        "sequence; " + _SHAPES,
    ),
    Mistake(
        "2-D lengths flattened",
        lambda lens, h: lens.flatten().repeat_interleave(h),
        "this looks like repeat_interleave without dim=0: on 2-D lengths it flattens "
        "them first and loses the query axis; " + _SHAPES,
    ),
    Mistake(
        "repeat",
        lambda lens, h: lens.repeat(h),
        "this looks like lens.repeat(num_heads): it repeats the whole list (row b * "
        "num_heads + j must hold sequence b's length, the heads of one sequence side by "
        "side), and on 2-D lengths it raises, since .repeat needs a count for every axis; "
        "repeat each sequence's lengths in place with repeat_interleave(num_heads, "
        "dim=0); " + _SHAPES,
    ),
    Mistake(
        "2-D repeated along the queries",
        lambda lens, h: lens.repeat_interleave(h, dim=-1),
        "this looks like repeat_interleave(num_heads, dim=-1): 1-D lengths come out "
        "right, but 2-D lengths are repeated along the queries, (batch, queries * "
        "num_heads); the heads are folded into the batch, the first axis, dim=0; " + _SHAPES,
    ),
)
def check_head_lengths(fn: Callable[[torch.Tensor, int], torch.Tensor]) -> CheckReport:
    """Check ``fn(valid_lens, num_heads)``: valid lengths for the heads folded into the batch.

    ``valid_lens`` is (batch,) or (batch, queries); the answer is (batch * num_heads,)
    or (batch * num_heads, queries), where rows b * num_heads .. (b + 1) * num_heads - 1
    all hold the lengths of sequence b (the order ``split_heads`` uses).
    """
    examples = [
        ("lengths [3, 2], 5 heads", torch.tensor([3, 2]), 5),
        ("lengths [4, 0, 2], 3 heads", torch.tensor([4, 0, 2]), 3),
        ("one sequence, lengths [5], 4 heads", torch.tensor([5]), 4),
        ("2-D lengths [[1, 2], [3, 4]], 2 heads", torch.tensor([[1, 2], [3, 4]]), 2),
    ]
    draw = _draws(904)
    if draw is not None:  # a hidden test: other lengths and numbers of heads
        two = torch.tensor(draw.ints(2, 1, 6))
        three = torch.tensor(draw.ints(3, 0, 6))
        three[draw.int(0, 2)] = 0  # a sequence with no valid key
        one = torch.tensor([draw.int(1, 6, avoid=(5,))])
        queries = draw.int(2, 4)
        rows = torch.tensor([draw.ints(queries, 1, 6) for _ in range(draw.int(2, 3))])
        heads = [draw.int(2, 6), draw.int(2, 6), draw.int(2, 6), draw.int(2, 4)]
        examples = [
            (f"lengths {two.tolist()}, {heads[0]} heads", two, heads[0]),
            (f"lengths {three.tolist()}, {heads[1]} heads", three, heads[1]),
            (f"one sequence, lengths {one.tolist()}, {heads[2]} heads", one, heads[2]),
            (f"2-D lengths {rows.tolist()}, {heads[3]} heads", rows, heads[3]),
        ]
    cases = []
    for description, lens, heads in examples:
        rows = [lens[b] for b in range(lens.shape[0]) for _ in range(heads)]
        cases.append(
            (
                description,
                (lens, heads),
                torch.stack(rows),
                "head j of sequence b sits in row b * num_heads + j: repeat each "
                "sequence's lengths num_heads times in a row, not the whole list; " + _SHAPES,
            )
        )
    return _run(
        "check_head_lengths",
        fn,
        cases,
        mistakes=check_head_lengths.mistakes,
        explain=lambda case, got: describe(
            got, case.expected, ("sequence x head row", "query")[: case.expected.dim()]
        ),
    )


def _rotation(offset: int, D: int, frequency: Callable[[int, int], float]) -> torch.Tensor:
    """The block-diagonal rotation by offset * frequency(j, D) in pair j."""
    M = torch.zeros(D, D, dtype=torch.float64)
    for j in range(D // 2):
        angle = offset * frequency(j, D)
        c, s = math.cos(angle), math.sin(angle)
        M[2 * j : 2 * j + 2, 2 * j : 2 * j + 2] = torch.tensor([[c, s], [-s, c]])
    return M


def _omega(j: int, D: int) -> float:
    return 1 / 10000 ** (2 * j / D)


_ROTATIONS = _see("Relative positions are rotations", _SELF)


@knows(
    Mistake(
        "backwards",
        lambda offset, D: _rotation(offset, D, _omega).T,
        "this looks like the rotation by -offset (each 2 x 2 block transposed): with "
        "sin(a + t) = sin a cos t + cos a sin t, block j is [[cos t, sin t], "
        "[-sin t, cos t]] for t = offset * w_j; " + _ROTATIONS,
    ),
    Mistake(
        "frequency 10000^(-j/D)",
        lambda offset, D: _rotation(offset, D, lambda j, D: 1 / 10000 ** (j / D)),
        "this looks like the frequency 10000^(-j/D): pair j uses w_j = 10000^(-2j/D), "
        "the 2j counting the pair's first feature; " + _ROTATIONS,
    ),
    Mistake(
        "frequency not inverted",
        lambda offset, D: _rotation(offset, D, lambda j, D: 10000 ** (2 * j / D)),
        "this looks like the frequency 10000^(2j/D), without the minus sign: the "
        "frequencies fall from 1 for pair 0 to nearly 1/10000 for the last pair; " + _ROTATIONS,
    ),
    Mistake(
        "offset left out",
        lambda offset, D: _rotation(1, D, _omega),
        "this looks like the rotation for an offset of 1 whatever the offset: block j "
        "rotates by offset * w_j; " + _ROTATIONS,
    ),
    Mistake(
        "identity",
        lambda offset, D: torch.eye(D, dtype=torch.float64),
        "this looks like the identity matrix: it is right for offset 0 only; block j "
        "rotates by offset * w_j; " + _ROTATIONS,
    ),
)
def check_rotation(fn: Callable[[int, int], torch.Tensor]) -> CheckReport:
    """Check ``fn(offset, num_hiddens)``: the (num_hiddens, num_hiddens) matrix M with
    p_{i + offset} = M p_i for every row p_i of ``sinusoidal_encoding``.

    M is block diagonal, one 2 x 2 rotation by offset * w_j per (sin, cos) pair.
    """
    sizes = [(1, 2), (3, 8), (10, 32), (0, 6)]
    draw = _draws(905)
    if draw is not None:  # a hidden test: other offsets and (even) widths
        sizes = [
            (draw.int(2, 9), 2),
            (draw.int(2, 9), draw.choice([4, 6, 10, 12])),
            (draw.int(11, 40), draw.choice([16, 20, 24, 28])),
            (0, draw.choice([2, 4, 8, 10])),
        ]
    cases = []
    for offset, D in sizes:
        cases.append(
            (
                f"offset {offset}, num_hiddens {D}",
                (offset, D),
                _rotation(offset, D, _omega),
                "apply your matrix to row i of sinusoidal_encoding and compare with row "
                "i + offset; sin(a + t) = sin a cos t + cos a sin t; " + _ROTATIONS,
            )
        )
    return _run(
        "check_rotation",
        fn,
        cases,
        mistakes=check_rotation.mistakes,
        explain=explainer(("row", "column")),
    )


def _self_attention(
    X: torch.Tensor,
    blocked: Callable[[int], torch.Tensor],
    scale: bool | float = True,
    dim: int = -1,
    fill: float = -1e9,
    output: bool = True,
):
    """Self-attention of X (batch, n, d) with the (n, n) positions ``blocked(n)`` masked;
    a row with every key masked gives zeros."""
    n, d = X.shape[1], X.shape[2]
    scores = X @ X.transpose(1, 2)  # (batch, n, n)
    if scale is True:
        scores = scores / math.sqrt(d)
    elif scale:
        scores = scores / scale
    hidden = blocked(n)
    weights = torch.softmax(scores.masked_fill(hidden, fill), dim=dim)
    weights = weights.masked_fill(hidden.all(-1, keepdim=True), 0.0)
    return weights @ X if output else weights


def _future(n: int) -> torch.Tensor:
    return torch.ones(n, n, dtype=torch.bool).triu(1)


_CAUSAL_MASKS = _see("Causal masks: looking only backwards", _SELF)


@knows(
    Mistake(
        "no mask",
        lambda X: _self_attention(X, lambda n: torch.zeros(n, n, dtype=torch.bool)),
        "this looks like self-attention with no mask: every token sees the whole "
        "sequence, the future included; give token i the valid length i + 1; " + _CAUSAL_MASKS,
    ),
    Mistake(
        "itself hidden",
        lambda X: _self_attention(X, lambda n: torch.ones(n, n, dtype=torch.bool).triu(0)),
        "this looks like lengths 0, 1, ..., n - 1 (torch.arange(n)): token i then sees "
        "tokens 0..i-1 but not itself, and token 0 sees nothing; its length is i + 1; "
        + _CAUSAL_MASKS,
    ),
    Mistake(
        "looks ahead",
        lambda X: _self_attention(X, lambda n: torch.ones(n, n, dtype=torch.bool).tril(-1)),
        "this looks like a mask that hides the past instead of the future: token i must "
        "see tokens 0..i, the ones before it; " + _CAUSAL_MASKS,
    ),
    Mistake(
        "no scale",
        lambda X: _self_attention(X, _future, scale=False),
        "the mask is right but the scores are not divided by sqrt(d), d = X.shape[-1]; "
        + _see("Scaled dot-product attention", "Attention Scoring Functions"),
    ),
    Mistake(
        "divided by d",
        lambda X: _self_attention(X, _future, scale=X.shape[-1]),
        "the mask is right but the scores are divided by d instead of sqrt(d), "
        "d = X.shape[-1]; " + _see("Scaled dot-product attention", "Attention Scoring Functions"),
    ),
    Mistake(
        "softmax over the queries",
        lambda X: _self_attention(X, _future, dim=-2),
        "this looks like a softmax over the queries (dim=1 or dim=-2): each query's "
        "weights must sum to 1 over the keys, the last axis, dim=-1; " + _CAUSAL_MASKS,
    ),
    Mistake(
        "future scored 0",
        lambda X: _self_attention(X, _future, fill=0.0),
        "this looks like the future's scores set to 0 before the softmax: a score of 0 "
        "is an ordinary score, exp(0) = 1, so every future token still gets weight; a "
        "masked key must get weight 0, which masked_softmax with the valid lengths "
        "i + 1 gives; " + _CAUSAL_MASKS,
    ),
    Mistake(
        "masked after the softmax",
        lambda X: (
            (
                torch.softmax(X @ X.transpose(1, 2) / math.sqrt(X.shape[-1]), dim=-1)
                * torch.ones(X.shape[1], X.shape[1]).tril()
            )
            @ X
        ),
        "this looks like a softmax over every key, then zeros on the future ones: the "
        "future still took part in the softmax, and each row's remaining weights sum to "
        "less than 1; mask before the softmax (masked_softmax with lengths i + 1); "
        + _CAUSAL_MASKS,
    ),
    Mistake(
        "the weights, not the output",
        lambda X: _self_attention(X, _future, output=False),
        "this looks like the attention weights, (batch, steps, steps): the answer is "
        "those weights applied to the values, weights @ X, of shape (batch, steps, d); "
        + _CAUSAL_MASKS,
    ),
    Mistake(
        "no shift",
        lambda X: (
            no_shift_softmax(
                (X @ X.transpose(1, 2) / math.sqrt(X.shape[-1])).masked_fill(
                    _future(X.shape[1]), -math.inf
                )
            )
            @ X
        ),
        "this looks like a softmax written as exp(S) / exp(S).sum(...) with no shift: it "
        "is right for small scores, but exp overflows to inf beyond 88.7 in float32 "
        "(inf / inf is NaN); use torch.softmax or masked_softmax, or subtract each row's "
        "maximum first; " + _CAUSAL_MASKS,
    ),
)
def check_causal_self_attention(fn: Callable[[torch.Tensor], torch.Tensor]) -> CheckReport:
    """Check ``fn(X)``: causal scaled dot-product self-attention, X (batch, steps, d) ->
    (batch, steps, d), where X supplies queries, keys and values and position i
    attends to positions 0..i only. Under every seed, one case holds float32
    scores of about +-100, where a softmax with no shift overflows (a row far
    below 0 cannot happen here: a token's score with itself is |x|^2 / sqrt(d)).
    """
    g = _generator(7)
    cases = []
    for b, n, d in ((1, 4, 2), (2, 6, 8), (3, 1, 4)):
        X = torch.randn(b, n, d, generator=g)
        expected = torch.nn.functional.scaled_dot_product_attention(X, X, X, is_causal=True)
        cases.append(
            (
                f"X of shape {(b, n, d)}",
                (X,),
                expected,
                "query i has valid length i + 1, so it sees keys 0..i (itself included); "
                + _CAUSAL_MASKS,
            )
        )
    # Scores of about +-100: x_i = +-14 along one axis, plus whole-number jitter.
    axis = torch.zeros(4)
    axis[int(torch.randint(4, (1,), generator=g))] = 14.0
    sign = torch.randint(2, (2, 6, 1), generator=g).float() * 2 - 1
    X = sign * axis + torch.randint(-1, 2, (2, 6, 4), generator=g).float()
    cases.append(
        (
            "large scores, about +-100 (float32), X of shape (2, 6, 4)",
            (X,),
            torch.nn.functional.scaled_dot_product_attention(X, X, X, is_causal=True),
            "exp overflows beyond 88.7 in float32: use torch.softmax or masked_softmax, or "
            "subtract each row's maximum first; " + _CAUSAL_MASKS,
        )
    )
    return _run(
        "check_causal_self_attention",
        fn,
        cases,
        mistakes=check_causal_self_attention.mistakes,
        explain=explainer(("sequence", "query", "feature")),
    )
