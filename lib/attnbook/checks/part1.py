"""Checkers of Part I: queries, keys and values; pooling; masked softmax; scoring."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from .. import kernels, masking
from ._core import (
    _MASKED,
    _POOLING,
    _QKV,
    _SCORING,
    CheckReport,
    Mistake,
    _generator,
    _run,
    _see,
    _with_gradient,
    knows,
)

# ---------------------------------------------------------------- Queries, Keys and Values


def _softmax_shifted(X: torch.Tensor, shift: torch.Tensor, dim: int = -1) -> torch.Tensor:
    e = torch.exp(X - shift)
    return e / e.sum(dim=dim, keepdim=True)


@knows(
    Mistake(
        "no shift",
        lambda X: torch.exp(X) / torch.exp(X).sum(dim=-1, keepdim=True),
        "this looks like exp(X) / sum(exp(X)) with no shift: exp overflows to inf beyond "
        "x = 88.7, and inf / inf is NaN; subtract each row's maximum first; "
        + _see("Softmax without overflow", _QKV),
    ),
    Mistake(
        "over the columns",
        lambda X: _softmax_shifted(X, X.max(dim=0, keepdim=True).values, dim=0),
        "this looks like a softmax over the first axis (dim=0): each column sums to 1, "
        "but each row of scores is one query's and must sum to 1 over the last axis, "
        "dim=-1; " + _see("From scores to weights", _QKV),
    ),
    Mistake(
        "global maximum",
        lambda X: _softmax_shifted(X, X.max()),
        "this looks like one shift for the whole tensor (X.max()): rows far below the "
        "largest score underflow to 0 / 0; shift each row by its own maximum, "
        "X.max(dim=-1, keepdim=True).values; " + _see("Softmax without overflow", _QKV),
    ),
    Mistake(
        "row minimum",
        lambda X: _softmax_shifted(X, X.min(dim=-1, keepdim=True).values),
        "this looks like a shift by each row's minimum: the other exponents are then "
        "positive and overflow; only the row's maximum makes every exponent <= 0; "
        + _see("Softmax without overflow", _QKV),
    ),
    Mistake(
        "row mean",
        lambda X: _softmax_shifted(X, X.mean(dim=-1, keepdim=True)),
        "this looks like a shift by each row's mean: scores above the mean still "
        "overflow; only the row's maximum makes every exponent <= 0; "
        + _see("Softmax without overflow", _QKV),
    ),
    Mistake(
        "divides by the maximum",
        lambda X: (
            torch.exp(X - X.max(dim=-1, keepdim=True).values)
            / torch.exp(X - X.max(dim=-1, keepdim=True).values).max(dim=-1, keepdim=True).values
        ),
        "this looks like a division by the largest exponential instead of the sum: the "
        "top weight is then 1 and the row sums to more than 1; "
        + _see("From scores to weights", _QKV),
    ),
)
def check_softmax(fn: Callable[[torch.Tensor], torch.Tensor]) -> CheckReport:
    """Check ``fn(X)``: softmax over the last axis of a (rows, columns) tensor.

    Catches a softmax over the wrong axis, one that forgets to subtract each
    row's maximum (it overflows), and one that shifts by something other than
    each row's maximum (the whole tensor's maximum, the row's minimum or mean).
    """
    g = _generator(1)
    random = torch.randn(10, 10, generator=g)
    large = torch.tensor([[1000.0, 1001.0, 1002.0], [-1000.0, -1000.0, -999.0]])
    spread = torch.tensor([[100.0, -100.0, -100.0, -99.0], [3.0, -200.0, 2.0, 1.0]])
    overflow = "exp(x) overflows beyond x = 88.7 and underflows below -104"
    cases = [
        (
            "a random 10x10 matrix",
            (random,),
            torch.softmax(random, -1),
            "each row sums to 1 over the last axis, dim=-1; "
            + _see("From scores to weights", _QKV),
        ),
        (
            "one row of equal scores",
            (torch.zeros(1, 4),),
            torch.full((1, 4), 0.25),
            "equal scores share the weight equally, 1/4 each here; "
            + _see("From scores to weights", _QKV),
        ),
        (
            "a single column",
            (torch.randn(3, 1, generator=g),),
            torch.ones(3, 1),
            "a row with a single score gives it weight 1, whatever the score; "
            + _see("From scores to weights", _QKV),
        ),
        (
            "very large and very small scores",
            (large,),
            torch.softmax(large, -1),
            f"{overflow}: subtract each row's own maximum before exponentiating; "
            + _see("Softmax without overflow", _QKV),
        ),
        (
            "rows whose scores lie 200 apart",
            (spread,),
            torch.softmax(spread, -1),
            f"{overflow}: only each row's maximum makes every exponent <= 0 "
            "(not its minimum or mean); " + _see("Softmax without overflow", _QKV),
        ),
    ]
    return _run("check_softmax", fn, cases, mistakes=check_softmax.mistakes)


def check_normalize(fn: Callable[[torch.Tensor], torch.Tensor]) -> CheckReport:
    """Check ``fn(scores)``: divide nonnegative (rows, columns) scores by each row's sum.

    Catches dividing by the maximum or by the sum of the whole tensor, summing
    over the wrong axis, a softmax in place of the plain division, and a sum
    without ``keepdim=True`` that broadcasts along the wrong axis.
    """
    g = _generator(2)
    scores = torch.rand(4, 6, generator=g)
    square = torch.tensor([[1.0, 3.0, 0.0], [2.0, 2.0, 4.0], [0.0, 0.0, 5.0]])
    sparse = torch.tensor([[0.0, 3.0, 0.0, 1.0]])
    by_row = "divide every row by its own sum, S.sum(dim=-1, keepdim=True); " + _see(
        "From scores to weights", _QKV
    )
    cases = [
        ("random nonnegative scores", (scores,), scores / scores.sum(-1, keepdim=True), by_row),
        (
            "a 3x3 matrix whose rows have different sums",
            (square,),
            square / square.sum(-1, keepdim=True),
            by_row,
        ),
        ("a row with zeros", (sparse,), torch.tensor([[0.0, 0.75, 0.0, 0.25]]), by_row),
        (
            "one-hot rows (a database lookup)",
            (torch.eye(3),),
            torch.eye(3),
            "a plain division keeps a one-hot row one-hot (a softmax would not); "
            + _see("From scores to weights", _QKV),
        ),
    ]
    return _run("check_normalize", fn, cases)


# ---------------------------------------------------------------- Attention Pooling


def check_epanechnikov(fn: Callable[[torch.Tensor], torch.Tensor]) -> CheckReport:
    """Check ``fn(u)``: the Epanechnikov kernel (3/4) max(0, 1 - u^2), elementwise.

    Catches the triangular kernel max(0, 1 - |u|) (which some texts call
    "Epanechnikov"), with or without the 3/4; a missing 3/4 (the peak is 3/4, so
    that the kernel integrates to 1); no clipping beyond |u| = 1 (negative
    weights); a window tested on u instead of |u|; and a result of the wrong
    shape. Whether the window is |u| < 1 or |u| <= 1 does not matter here (the
    parabola is 0 at |u| = 1), so both are accepted.
    """
    grid = torch.linspace(-2.5, 2.5, 51)
    kernel_section = _see("Kernels: turning distance into similarity", _POOLING)
    cases = [
        (
            "u from -2.5 to 2.5",
            (grid,),
            kernels.epanechnikov(grid),
            "K(u) = (3/4) max(0, 1 - u^2); " + kernel_section,
        ),
        (
            "u = 0 gives 3/4",
            (torch.zeros(1),),
            torch.full((1,), 0.75),
            "the factor 3/4 makes the kernel integrate to 1, so its peak is 3/4, not 1; "
            + kernel_section,
        ),
        (
            "a parabola: 0.5625 at u = 0.5, 0.1425 at u = 0.9",
            (torch.tensor([0.5, 0.9, 0.25]),),
            torch.tensor([0.5625, 0.1425, 0.703125]),
            "1 - u^2, not 1 - |u|: max(0, 1 - |u|) is the triangular kernel, which some "
            'texts call "Epanechnikov"; ' + kernel_section,
        ),
        (
            "|u| > 1 gives exactly 0",
            (torch.tensor([1.5, -1.5, 3.0, -10.0]),),
            torch.zeros(4),
            "clip at |u| = 1: beyond it 1 - u^2 is negative, and a weight must not be; "
            + kernel_section,
        ),
        (
            "|u| = 1 gives 0",
            (torch.tensor([1.0, -1.0]),),
            torch.zeros(2),
            "the parabola reaches 0 at the window's edge; " + kernel_section,
        ),
        (
            "negative u: the kernel is symmetric",
            (torch.tensor([-0.5, -0.9, -2.0]),),
            torch.tensor([0.5625, 0.1425, 0.0]),
            "the window is |u| <= 1, on the distance |u|, not on u; " + kernel_section,
        ),
        (
            "a 2-D tensor of distances",
            (grid.reshape(3, 17),),
            kernels.epanechnikov(grid).reshape(3, 17),
            "work elementwise and keep the input's shape; " + kernel_section,
        ),
    ]
    return _run("check_epanechnikov", fn, cases)


def _gaussian_reference(x_query: torch.Tensor, x_train: torch.Tensor, width: float):
    scores = -(((x_query[:, None] - x_train[None, :]) / width) ** 2) / 2  # (queries, n)
    return torch.softmax(scores.double(), dim=-1).float()


def check_gaussian_weights(
    fn: Callable[[torch.Tensor, torch.Tensor, float], torch.Tensor],
) -> CheckReport:
    """Check ``fn(x_query, x_train, width)``: Gaussian Nadaraya-Watson weights.

    The answer is (n_query, n) for n training inputs (the keys) and equals
    softmax over i of -((x - x_i) / width)^2 / 2. Catches a missing 1/2, the
    width not squared (or used as an inverse width), a softmax over the
    queries instead of the keys, and exp(...) / sum(exp(...)) without the
    softmax's shift, which divides 0 by 0 for a narrow kernel far from the data.
    """
    g = _generator(3)
    x_train = torch.sort(torch.rand(8, generator=g) * 5).values
    x_query = torch.linspace(0, 5, 6)
    formula = _see("The Gaussian weights are a softmax", _POOLING)
    cases = [
        (
            "6 queries, 8 keys, width 1.0",
            (x_query, x_train, 1.0),
            _gaussian_reference(x_query, x_train, 1.0),
            "the score is -(x - x_i)^2 / 2 at width 1, a softmax over the keys (the last axis); "
            + formula,
        ),
    ]
    for width in (0.3, 4.0):
        cases.append(
            (
                f"6 queries, 8 keys, width {width}",
                (x_query, x_train, width),
                _gaussian_reference(x_query, x_train, width),
                "divide the distance by the width sigma before squaring: "
                "-((x - x_i) / sigma)^2 / 2; " + formula,
            )
        )
    far = torch.tensor([-3.0, 2.5, 9.0])
    cases.append(
        (
            "width 0.05, queries far from every key",
            (far, x_train, 0.05),
            _gaussian_reference(far, x_train, 0.05),
            "exp(score) underflows to 0 for every key, and 0 / 0 is NaN; "
            "torch.softmax subtracts the largest score first; " + formula,
        )
    )
    return _run("check_gaussian_weights", fn, cases)


# ---------------------------------------------------------------- Masked Softmax


def check_masked_softmax(
    fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
) -> CheckReport:
    """Check ``fn(X, valid_lens)``: masked softmax of (batch, queries, keys) scores.

    Lengths may be 1-D (batch,) or 2-D (batch, queries). A row of length 0 must
    be all zeros; float16 and bfloat16 scores must work and keep their dtype;
    masked scores of any size (even huge ones) must not matter; gradients must
    be finite and equal to the library's. Catches a fill of -1e6 (a uniform row
    at length 0, not storable in float16), a fill of -inf (NaN at length 0),
    zeroing the weights after an unmasked softmax, and masking by
    ``torch.where`` after exponentiating (NaN gradients for huge masked scores).
    """
    g = _generator(4)
    X = torch.randn(2, 2, 4, generator=g)
    wide = torch.randn(3, 5, 7, generator=g)
    length_0 = _see("A sequence of length 0", _MASKED)
    half = _see("Half precision", _MASKED)
    steps = _see("Building a masked softmax, step by step", _MASKED)

    def case(description: str, scores: torch.Tensor, lens: torch.Tensor, hint: str) -> tuple:
        """A case whose expected answer is the library's masked softmax of its arguments."""
        return (description, (scores, lens), masking.masked_softmax(scores, lens), hint)

    lengths_hint = "a 1-D length covers every query of its sequence, a 2-D one a single query; "
    cases = [
        case(description, scores, lens, lengths_hint + steps)
        for description, scores, lens in (
            ("1-D lengths [2, 3]", X, torch.tensor([2, 3])),
            ("2-D lengths [[1, 3], [2, 4]]", X, torch.tensor([[1, 3], [2, 4]])),
            ("every key valid", X, torch.tensor([4, 4])),
            ("a (3, 5, 7) batch with lengths [7, 1, 4]", wide, torch.tensor([7, 1, 4])),
        )
    ]
    empty = torch.tensor([0, 3])
    huge = X.masked_fill(torch.arange(4) >= 2, 1e30)  # keys 2 and 3 masked below
    low = X * 1e3 - 1e7  # real scores far below -1e6
    cases += [
        case(
            "a sequence of length 0 gives a row of zeros",
            X,
            empty,
            "a fill of -1e6 makes the row uniform and -inf makes it NaN; "
            "write zeros into the masked positions after the softmax; " + length_0,
        ),
        case(
            "a 2-D length of 0 for one query",
            X,
            torch.tensor([[0, 2], [4, 0]]),
            "rows with no valid key are all zeros; " + length_0,
        ),
        case(
            "masked scores of 1e30 (padding may hold anything)",
            huge,
            torch.tensor([2, 1]),
            "replace masked scores before the softmax: a masked score must never "
            "take part, however large; " + steps,
        ),
        case(
            "real scores around -1e7 (below a fill of -1e6)",
            low,
            torch.tensor([2, 3]),
            "a fixed fill such as -1e6 is not below every real score; fill with "
            "torch.finfo(X.dtype).min; " + half,
        ),
    ]
    for dtype, name in ((torch.float16, "float16"), (torch.bfloat16, "bfloat16")):
        scores = X.to(dtype)
        for lens in (torch.tensor([2, 3]), empty):
            reference = masking.masked_softmax(scores.float(), lens).to(dtype)
            cases.append(
                (
                    f"{name} scores, lengths {lens.tolist()}",
                    (scores, lens),
                    reference,
                    "-1e6 does not fit float16, and a length-0 row must stay zeros; fill "
                    "with torch.finfo(X.dtype).min and return the scores' dtype; " + half,
                )
            )
    report = _run("check_masked_softmax", fn, cases)

    # Gradients: masked scores, huge ones included, get exactly 0; nothing is NaN.
    lens_2d = torch.tensor([[0, 2], [4, 1]])
    keep = torch.arange(4) < lens_2d[..., None]  # (batch, queries, keys)
    scores = torch.where(keep, X, torch.tensor(1e30))
    upstream = torch.randn(2, 2, 4, generator=g)
    leaf = scores.clone().requires_grad_(True)
    reference = masking.masked_softmax(leaf, lens_2d)
    (gradient,) = torch.autograd.grad((reference * upstream).sum(), leaf)
    gradient_case = (
        "gradients with lengths [[0, 2], [4, 1]] and masked scores of 1e30",
        (scores, lens_2d),
        {"output": reference.detach(), "gradient": gradient},
        "torch.where(keep, torch.exp(...), 0) still backpropagates 0 * inf = NaN through "
        "the discarded exponentials, and a detached result backpropagates nothing; "
        "replace masked scores before exponentiating; " + _see("Edge cases", _MASKED),
    )
    extra = _run("check_masked_softmax", _with_gradient(fn, upstream), [gradient_case])
    report.lines += extra.lines
    report.failures += extra.failures
    return report


def check_causal_lengths(fn: Callable[[int, int], torch.Tensor]) -> CheckReport:
    """Check ``fn(batch, queries)``: 2-D valid lengths for a look-back-only pattern.

    Query i (counting from 0) may see keys 0..i, so its length is i + 1; the
    answer is an integer tensor of shape (batch, queries). Catches lengths
    0..queries-1 (query 0 would see nothing), a transposed (queries, batch)
    answer and lengths that count down.
    """
    hint = (
        "query i, counting from 0, sees keys 0, ..., i: that is i + 1 keys, so row "
        "[1, 2, ..., queries], one row per batch item; "
        + _see("Building a masked softmax, step by step", _MASKED)
    )
    cases = []
    for batch, queries in ((1, 4), (2, 3), (3, 6), (4, 4), (1, 1)):
        expected = torch.arange(1, queries + 1).expand(batch, queries)
        cases.append((f"batch={batch}, queries={queries}", (batch, queries), expected, hint))
    return _run("check_causal_lengths", fn, cases)


# ---------------------------------------------------------------- Scoring Functions


def _reference_attention(Q, K, V):
    return torch.nn.functional.scaled_dot_product_attention(Q, K, V)


def check_scaled_dot_product(
    fn: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor],
) -> CheckReport:
    """Check ``fn(Q, K, V)``: softmax(Q K^T / sqrt(d)) V.

    Q is (batch, queries, d), K is (batch, n, d) and V is (batch, n, v) for n
    keys; the answer is (batch, queries, v). Catches a missing scale, a scale of
    1 / d, a square root of the wrong size (the number of queries, of keys, or
    the values' size), the scale applied after the softmax, and a softmax over
    the queries instead of the keys.
    """
    g = _generator(5)
    cases = []
    sizes = "divide Q K^T by sqrt(d), d = Q.shape[-1], before a softmax over the keys (dim=-1); "
    for b, q, k, d, v in ((2, 1, 10, 2, 4), (3, 5, 7, 16, 3), (1, 4, 4, 64, 8), (2, 3, 5, 9, 6)):
        Q = torch.randn(b, q, d, generator=g)
        K = torch.randn(b, k, d, generator=g)
        V = torch.randn(b, k, v, generator=g)
        cases.append(
            (
                f"Q {(b, q, d)}, K {(b, k, d)}, V {(b, k, v)}",
                (Q, K, V),
                _reference_attention(Q, K, V),
                sizes + _see("Scaled dot-product attention", _SCORING),
            )
        )
    return _run("check_scaled_dot_product", fn, cases)


def check_entropy(fn: Callable[[torch.Tensor], torch.Tensor]) -> CheckReport:
    """Check ``fn(weights)``: entropy -sum p log p (natural log) of each row.

    ``weights`` is (..., keys) with rows summing to 1; the answer drops the last
    axis. A weight of exactly 0 contributes 0. Catches 0 * log(0) = NaN, log2
    in place of the natural log, a missing minus sign, a mean in place of the
    sum and a sum over the wrong axis.
    """
    g = _generator(6)
    random = torch.softmax(torch.randn(4, 6, generator=g), -1)
    formula = "-sum p log p over the last axis, natural log; " + _see("Exercises", _SCORING)
    zero_log_zero = (
        "0 * log(0) is NaN in floating point; treat p = 0 terms as 0, e.g. with torch.xlogy; "
        + _see("Exercises", _SCORING)
    )
    cases = [
        (
            "uniform over 8 keys gives log 8",
            (torch.full((1, 8), 1 / 8),),
            torch.tensor([math.log(8)]),
            formula,
        ),
        ("one-hot rows give 0", (torch.eye(3),), torch.zeros(3), zero_log_zero),
        (
            "two keys of 1/2 and two zeros give log 2",
            (torch.tensor([[0.5, 0.0, 0.5, 0.0]]),),
            torch.tensor([math.log(2)]),
            zero_log_zero,
        ),
        ("random rows", (random,), -(random * random.log()).sum(-1), formula),
        (
            "a (2, 3, 5) batch",
            (random.new_full((2, 3, 5), 0.2),),
            torch.full((2, 3), math.log(5)),
            formula,
        ),
    ]
    return _run("check_entropy", fn, cases)
