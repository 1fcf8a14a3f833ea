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
    Case,
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
        "max without keepdim",
        lambda X: _softmax_shifted(X, X.max(dim=-1).values),
        "this looks like X.max(dim=-1) without keepdim=True: the maxima come back as a "
        "(rows,) vector, which broadcasting lines up with the columns, so row i is shifted "
        "by the maximum of row j; keep the axis with X.max(dim=-1, keepdim=True).values; "
        + _see("Softmax without overflow", _QKV),
    ),
    Mistake(
        "sum without keepdim",
        lambda X: (
            torch.exp(X - X.max(dim=-1, keepdim=True).values)
            / torch.exp(X - X.max(dim=-1, keepdim=True).values).sum(dim=-1)
        ),
        "this looks like a division by e.sum(dim=-1) without keepdim=True: the sums come "
        "back as a (rows,) vector, which broadcasting lines up with the columns, so entry "
        "(i, j) is divided by the sum of row j; keep the axis with "
        "e.sum(dim=-1, keepdim=True); " + _see("From scores to weights", _QKV),
    ),
    Mistake(
        "max without .values",
        lambda X: _softmax_shifted(X, X.max(dim=-1, keepdim=True)),
        "this looks like X.max(dim=-1, keepdim=True) used as a tensor: with a dim, max "
        "returns a pair (values, indices), and the maxima are its .values; "
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


def _normalized(S: torch.Tensor) -> torch.Tensor:
    return S / S.sum(dim=-1, keepdim=True)


def _without_row(row: int) -> Callable[[Callable], Callable]:
    """A probe that drops one row of a (rows, columns) answer, the row whose answer
    the exercise leaves to the reader (an answer of the wrong shape is kept whole)."""

    def probe(fn: Callable) -> Callable:
        def wrapped(S: torch.Tensor) -> object:
            out = fn(S)
            if isinstance(out, torch.Tensor) and out.shape == S.shape:
                return torch.cat([out[:row], out[row + 1 :]])
            return out

        return wrapped

    return probe


@knows(
    Mistake(
        "divides by the maximum",
        lambda S: S / S.max(dim=-1, keepdim=True).values,
        "this looks like a division by each row's largest score, not its sum: the top "
        "weight is then 1 and the row sums to more than 1; " + _see("From scores to weights", _QKV),
    ),
    Mistake(
        "divides by the total",
        lambda S: S / S.sum(),
        "this looks like a division by the sum of the whole tensor (S.sum() with no dim): "
        "then all rows together sum to 1, not each row; sum over the last axis, "
        "S.sum(dim=-1, keepdim=True); " + _see("From scores to weights", _QKV),
    ),
    Mistake(
        "over the columns",
        lambda S: S / S.sum(dim=0, keepdim=True),
        "this looks like a sum over the first axis (dim=0): each column sums to 1, but "
        "each row is one query's and must sum to 1 over the last axis, dim=-1; "
        + _see("From scores to weights", _QKV),
    ),
    Mistake(
        "softmax",
        lambda S: torch.softmax(S, dim=-1),
        "this looks like a softmax: the exercise divides the scores themselves by their "
        "sum, with no exponential, so a score of 0 keeps weight 0; "
        + _see("From scores to weights", _QKV),
    ),
    Mistake(
        "sum without keepdim",
        lambda S: S / S.sum(dim=-1),
        "this looks like S.sum(dim=-1) without keepdim=True: the sums come back as a "
        "(rows,) vector, which broadcasting lines up with the columns, so entry (i, j) is "
        "divided by the sum of row j; keep the axis with S.sum(dim=-1, keepdim=True); "
        + _see("From scores to weights", _QKV),
    ),
)
def check_normalize(fn: Callable[[torch.Tensor], torch.Tensor]) -> CheckReport:
    """Check ``fn(scores)``: divide nonnegative (rows, columns) scores by each row's sum.

    Catches dividing by the maximum or by the sum of the whole tensor, summing
    over the wrong axis, a softmax in place of the plain division, and a sum
    without ``keepdim=True`` that broadcasts along the wrong axis. What a row
    of zeros should give is a question the exercise leaves open, so in the case
    with an all-zero row only the other rows are checked.
    """
    g = _generator(2)
    scores = torch.rand(4, 6, generator=g)
    square = torch.tensor([[1.0, 3.0, 0.0], [2.0, 2.0, 4.0], [0.0, 0.0, 5.0]])
    sparse = torch.tensor([[0.0, 3.0, 0.0, 1.0]])
    zero_row = torch.tensor([[1.0, 3.0, 4.0], [0.0, 0.0, 0.0], [2.0, 0.0, 2.0]])
    by_row = "divide every row by its own sum, S.sum(dim=-1, keepdim=True); " + _see(
        "From scores to weights", _QKV
    )
    cases = [
        ("random nonnegative scores", (scores,), _normalized(scores), by_row),
        (
            "a 3x3 matrix whose rows have different sums",
            (square,),
            _normalized(square),
            by_row,
        ),
        ("a row with some zero scores", (sparse,), torch.tensor([[0.0, 0.75, 0.0, 0.25]]), by_row),
        (
            "one-hot rows (a database lookup)",
            (torch.eye(3),),
            torch.eye(3),
            "a plain division keeps a one-hot row one-hot (a softmax would not); "
            + _see("From scores to weights", _QKV),
        ),
        Case(
            "an all-zero row (its answer is yours to choose; the other rows are checked)",
            (zero_row,),
            _normalized(zero_row[[0, 2]]),
            "a row of zeros must not change the other rows' answers; " + by_row,
            probe=_without_row(1),
        ),
    ]
    return _run("check_normalize", fn, cases, mistakes=check_normalize.mistakes)


# ---------------------------------------------------------------- Attention Pooling

_KERNEL = _see("Kernels: turning distance into similarity", _POOLING)


@knows(
    Mistake(
        "triangular",
        lambda u: torch.clamp(1 - u.abs(), min=0),
        "this looks like the triangular kernel max(0, 1 - |u|), which some texts call "
        '"Epanechnikov": the Epanechnikov kernel is the parabola (3/4) max(0, 1 - u^2); ' + _KERNEL,
    ),
    Mistake(
        "triangular times 3/4",
        lambda u: 0.75 * torch.clamp(1 - u.abs(), min=0),
        "this looks like (3/4) max(0, 1 - |u|), a triangle: square the distance, "
        "1 - u^2, for the Epanechnikov parabola; " + _KERNEL,
    ),
    Mistake(
        "no 3/4",
        lambda u: torch.clamp(1 - u**2, min=0),
        "this looks like max(0, 1 - u^2) without the factor 3/4: the factor makes the "
        "kernel integrate to 1, so its peak at u = 0 is 3/4; " + _KERNEL,
    ),
    Mistake(
        "not clipped",
        lambda u: 0.75 * (1 - u**2),
        "this looks like (3/4)(1 - u^2) without the clipping: beyond |u| = 1 it is "
        "negative, and a weight must not be; cut it off at 0 with torch.clamp(..., min=0); "
        + _KERNEL,
    ),
    Mistake(
        "window on u",
        lambda u: torch.where(u < 1, 0.75 * (1 - u**2), torch.zeros_like(u)),
        "this looks like a window tested on u (u < 1) instead of on the distance |u|: "
        "far negative u then gets a negative weight; " + _KERNEL,
    ),
    Mistake(
        "flat window",
        lambda u: 0.75 * (u.abs() <= 1).to(u.dtype),
        "this looks like a flat window of height 3/4 (the boxcar): inside |u| <= 1 the "
        "Epanechnikov kernel is the parabola (3/4)(1 - u^2), which falls to 0 at the edge; "
        + _KERNEL,
    ),
    Mistake(
        "flattened",
        lambda u: (0.75 * torch.clamp(1 - u**2, min=0)).flatten(),
        "the values are right but flattened to one axis: work elementwise and return the "
        "input's shape; " + _KERNEL,
    ),
)
def check_epanechnikov(fn: Callable[[torch.Tensor], torch.Tensor]) -> CheckReport:
    """Check ``fn(u)``: the Epanechnikov kernel (3/4) max(0, 1 - u^2), elementwise.

    Catches the triangular kernel max(0, 1 - |u|) (which some texts call
    "Epanechnikov"), with or without the 3/4; a missing 3/4 (the peak is 3/4, so
    that the kernel integrates to 1); no clipping beyond |u| = 1 (negative
    weights); a window tested on u instead of |u|; a flat window; and a result
    of the wrong shape. Whether the window is |u| < 1 or |u| <= 1 does not
    matter here (the parabola is 0 at |u| = 1), so both are accepted.
    """
    grid = torch.linspace(-2.5, 2.5, 51)
    cases = [
        (
            "u from -2.5 to 2.5",
            (grid,),
            kernels.epanechnikov(grid),
            "K(u) = (3/4) max(0, 1 - u^2); " + _KERNEL,
        ),
        (
            "u = 0 gives 3/4",
            (torch.zeros(1),),
            torch.full((1,), 0.75),
            "the factor 3/4 makes the kernel integrate to 1, so its peak is 3/4, not 1; " + _KERNEL,
        ),
        (
            "a parabola: 0.5625 at u = 0.5, 0.1425 at u = 0.9",
            (torch.tensor([0.5, 0.9, 0.25]),),
            torch.tensor([0.5625, 0.1425, 0.703125]),
            "1 - u^2, not 1 - |u|: max(0, 1 - |u|) is the triangular kernel, which some "
            'texts call "Epanechnikov"; ' + _KERNEL,
        ),
        (
            "|u| > 1 gives exactly 0",
            (torch.tensor([1.5, -1.5, 3.0, -10.0]),),
            torch.zeros(4),
            "clip at |u| = 1: beyond it 1 - u^2 is negative, and a weight must not be; " + _KERNEL,
        ),
        (
            "|u| = 1 gives 0",
            (torch.tensor([1.0, -1.0]),),
            torch.zeros(2),
            "the parabola reaches 0 at the window's edge; " + _KERNEL,
        ),
        (
            "negative u: the kernel is symmetric",
            (torch.tensor([-0.5, -0.9, -2.0]),),
            torch.tensor([0.5625, 0.1425, 0.0]),
            "the window is |u| <= 1, on the distance |u|, not on u; " + _KERNEL,
        ),
        (
            "a 2-D tensor of distances",
            (grid.reshape(3, 17),),
            kernels.epanechnikov(grid).reshape(3, 17),
            "work elementwise and keep the input's shape; " + _KERNEL,
        ),
    ]
    return _run("check_epanechnikov", fn, cases, mistakes=check_epanechnikov.mistakes)


def _gaussian_reference(x_query: torch.Tensor, x_train: torch.Tensor, width: float):
    scores = -(((x_query[:, None] - x_train[None, :]) / width) ** 2) / 2  # (queries, n)
    return torch.softmax(scores.double(), dim=-1).float()


def _differences(x_query: torch.Tensor, x_train: torch.Tensor) -> torch.Tensor:
    return x_query[:, None] - x_train[None, :]  # (queries, n)


_WEIGHTS = _see("The Gaussian weights are a softmax", _POOLING)


@knows(
    Mistake(
        "over the queries",
        lambda x, xs, w: torch.softmax(-((_differences(x, xs) / w) ** 2) / 2, dim=0),
        "this looks like a softmax over the queries (dim=0): each column sums to 1; "
        "attention normalises each query's row over the keys, the last axis (dim=-1); " + _WEIGHTS,
    ),
    Mistake(
        "no 1/2",
        lambda x, xs, w: torch.softmax(-((_differences(x, xs) / w) ** 2), dim=-1),
        "this looks like the score -((x - x_i) / sigma)^2 without the factor 1/2: the "
        "kernel is then as narrow as one of width sigma / sqrt(2); " + _WEIGHTS,
    ),
    Mistake(
        "no width",
        lambda x, xs, w: torch.softmax(-(_differences(x, xs) ** 2) / 2, dim=-1),
        "this looks like the score -(x - x_i)^2 / 2 with the width left out: it is right "
        "at width 1 only; divide the distance by sigma before squaring; " + _WEIGHTS,
    ),
    Mistake(
        "width not squared",
        lambda x, xs, w: torch.softmax(-(_differences(x, xs) ** 2) / (2 * w), dim=-1),
        "this looks like -(x - x_i)^2 / (2 sigma), with sigma not squared: divide the "
        "distance by sigma before squaring, -((x - x_i) / sigma)^2 / 2; " + _WEIGHTS,
    ),
    Mistake(
        "width as inverse",
        lambda x, xs, w: torch.softmax(-((_differences(x, xs) * w) ** 2) / 2, dim=-1),
        "this looks like the distance multiplied by the width instead of divided: a "
        "larger width must give a wider, flatter kernel; " + _WEIGHTS,
    ),
    Mistake(
        "no minus sign",
        lambda x, xs, w: torch.softmax(((_differences(x, xs) / w) ** 2) / 2, dim=-1),
        "this looks like the score +((x - x_i) / sigma)^2 / 2, without the minus sign: "
        "the farthest key then gets the most weight; " + _WEIGHTS,
    ),
    Mistake(
        "exp over the sum",
        lambda x, xs, w: (
            torch.exp(-((_differences(x, xs) / w) ** 2) / 2)
            / torch.exp(-((_differences(x, xs) / w) ** 2) / 2).sum(dim=-1, keepdim=True)
        ),
        "this looks like exp(score) / sum(exp(score)): far from every key all the "
        "exponentials underflow to 0, and 0 / 0 is NaN; the exercise asks for "
        "torch.softmax, which subtracts each row's largest score first; " + _WEIGHTS,
    ),
    Mistake(
        "transposed",
        lambda x, xs, w: _gaussian_reference(x, xs, w).T,
        "the weights are right but transposed, (n_train, n_query): the answer has one "
        "row per query and one column per key; " + _WEIGHTS,
    ),
)
def check_gaussian_weights(
    fn: Callable[[torch.Tensor, torch.Tensor, float], torch.Tensor],
) -> CheckReport:
    """Check ``fn(x_query, x_train, width)``: Gaussian Nadaraya-Watson weights.

    The answer is (n_query, n) for n training inputs (the keys) and equals
    softmax over i of -((x - x_i) / width)^2 / 2. Catches a missing 1/2, the
    width left out, not squared or used as an inverse width, a missing minus
    sign, a softmax over the queries instead of the keys, a transposed answer,
    and exp(...) / sum(exp(...)) without the softmax's shift, which divides 0 by
    0 for a narrow kernel far from the data.
    """
    g = _generator(3)
    x_train = torch.sort(torch.rand(8, generator=g) * 5).values
    x_query = torch.linspace(0, 5, 6)
    cases = [
        (
            "6 queries, 8 keys, width 1.0",
            (x_query, x_train, 1.0),
            _gaussian_reference(x_query, x_train, 1.0),
            "the score is -(x - x_i)^2 / 2 at width 1, a softmax over the keys (the last axis); "
            + _WEIGHTS,
        ),
    ]
    for width in (0.3, 4.0):
        cases.append(
            (
                f"6 queries, 8 keys, width {width}",
                (x_query, x_train, width),
                _gaussian_reference(x_query, x_train, width),
                "divide the distance by the width sigma before squaring: "
                "-((x - x_i) / sigma)^2 / 2; " + _WEIGHTS,
            )
        )
    far = torch.tensor([-3.0, 2.5, 9.0])
    cases.append(
        (
            "width 0.05, queries far from every key",
            (far, x_train, 0.05),
            _gaussian_reference(far, x_train, 0.05),
            "far from every key exp(score) underflows to 0, and 0 / 0 is NaN; "
            "torch.softmax subtracts the largest score first; " + _WEIGHTS,
        )
    )
    return _run("check_gaussian_weights", fn, cases, mistakes=check_gaussian_weights.mistakes)


# ---------------------------------------------------------------- Masked Softmax


def _keep_of(X: torch.Tensor, valid_lens: torch.Tensor) -> torch.Tensor:
    """The (batch, queries, keys) mask of 1-D or 2-D valid lengths."""
    batch, queries, keys = X.shape
    lens = valid_lens if valid_lens.dim() == 2 else valid_lens[:, None].expand(batch, queries)
    return torch.arange(keys) < lens[..., None]  # (batch, queries, keys)


def _fill_softmax(X, valid_lens, fill, zero=True, add=False):
    """A softmax after a fill (or an added mask), then optionally zeros on masked keys."""
    keep = _keep_of(X, valid_lens)
    scores = X + (~keep) * fill if add else X.masked_fill(~keep, fill)
    weights = torch.softmax(scores, dim=-1)
    return torch.where(keep, weights, 0.0) if zero else weights


def _renorm(X, valid_lens, *, shift="valid", zero_before=True, where=False, clamp=True):
    """The exercise's recipe with its classic slips: the shift (over the valid keys,
    over all keys, or none), masked differences zeroed before or after exp (or
    discarded with torch.where), and the sum clamped away from 0 or not."""
    keep = _keep_of(X, valid_lens)
    if shift == "valid":
        row_min = X.amin(dim=-1, keepdim=True)
        z = X - torch.where(keep, X, row_min).amax(dim=-1, keepdim=True)
    elif shift == "all":
        z = X - X.amax(dim=-1, keepdim=True)
    else:
        z = X
    if where:
        e = torch.where(keep, torch.exp(z), 0.0)
    elif zero_before:
        e = torch.exp(torch.where(keep, z, 0.0)) * keep
    else:
        e = torch.exp(z) * keep
    total = e.sum(dim=-1, keepdim=True)
    return e / (total.clamp_min(torch.finfo(X.dtype).tiny) if clamp else total)


def _off_by_one(X, valid_lens):
    keep = torch.arange(X.shape[-1]) <= _keep_of(X, valid_lens).sum(-1, keepdim=True)
    e = torch.exp(torch.where(keep, X - torch.where(keep, X, -1e30).amax(-1, keepdim=True), 0.0))
    e = e * keep
    return e / e.sum(dim=-1, keepdim=True)


def _one_dim_only(X, valid_lens):
    keep = torch.arange(X.shape[-1])[None, None, :] < valid_lens[:, None, None]
    e = torch.exp(X - X.amax(dim=-1, keepdim=True)) * keep
    return e / e.sum(dim=-1, keepdim=True).clamp_min(torch.finfo(X.dtype).tiny)


_NO_FILL = (
    "exercise 1 writes no fill value at all: shift by the maximum over the valid keys, "
    "zero the masked differences, exponentiate, divide by the row sum; "
)


@knows(
    Mistake(
        "fill -1e6",
        lambda X, lens: _fill_softmax(X, lens, -1e6, zero=False),
        "this looks like the chapter's first version, a fill of -1e6 before a softmax: a "
        "row with no valid key comes out uniform instead of zeros, and -1e6 does not fit "
        "in float16; " + _NO_FILL + _see("A sequence of length 0", _MASKED),
    ),
    Mistake(
        "fill -inf",
        lambda X, lens: _fill_softmax(X, lens, float("-inf"), zero=False),
        "this looks like a fill of -inf before a softmax: a row with no valid key is "
        "exp(-inf) / 0 = 0 / 0 = NaN; " + _NO_FILL + _see("A sequence of length 0", _MASKED),
    ),
    Mistake(
        "fill -1e6, then zeros",
        lambda X, lens: _fill_softmax(X, lens, -1e6),
        "this looks like a fill of -1e6, a softmax, then zeros on the masked keys: "
        "-1e6 is not below a real score of -1e7, and float16 cannot store it; "
        + _NO_FILL
        + _see("Half precision", _MASKED),
    ),
    Mistake(
        "fill -1e4, then zeros",
        lambda X, lens: _fill_softmax(X, lens, -1e4),
        "this looks like a fixed fill such as -1e4, a softmax, then zeros: real scores "
        "can lie below any fixed number (here -1e7), and then the masked keys win; "
        + _NO_FILL
        + _see("Half precision", _MASKED),
    ),
    Mistake(
        "fill, no zeros",
        lambda X, lens: _fill_softmax(X, lens, torch.finfo(X.dtype).min, zero=False),
        "this looks like a fill of the dtype's lowest number and a softmax, with nothing "
        "after it: a row with no valid key comes out uniform instead of zeros; "
        + _NO_FILL
        + _see("A sequence of length 0", _MASKED),
    ),
    Mistake(
        "added mask",
        lambda X, lens: _fill_softmax(X, lens, -1e9, add=True),
        "this looks like a mask added to the scores (X + (-1e9 on masked keys)): a masked "
        "score of 1e30 plus -1e9 is still 1e30 and wins the softmax; "
        + _NO_FILL
        + _see("Building a masked softmax, step by step", _MASKED),
    ),
    Mistake(
        "softmax, then zeros",
        lambda X, lens: torch.softmax(X, dim=-1) * _keep_of(X, lens),
        "this looks like a softmax over every key, then zeros on the masked ones: the "
        "valid weights no longer sum to 1, and the masked scores still took part in the "
        "softmax; " + _NO_FILL + _see("Building a masked softmax, step by step", _MASKED),
    ),
    Mistake(
        "softmax, zeros, renormalised",
        lambda X, lens: (
            (torch.softmax(X, dim=-1) * _keep_of(X, lens))
            / (torch.softmax(X, dim=-1) * _keep_of(X, lens)).sum(dim=-1, keepdim=True)
        ),
        "this looks like a softmax over every key, zeros on the masked ones, then a new "
        "division by the sum: a huge masked score takes all the weight before it is "
        "zeroed (0 / 0 = NaN), and so does a row with no valid key; "
        + _NO_FILL
        + _see("Building a masked softmax, step by step", _MASKED),
    ),
    Mistake(
        "max over all keys",
        lambda X, lens: _renorm(X, lens, shift="all"),
        "this looks like a shift by the maximum over all keys, masked ones included: a "
        "huge masked score then pushes every valid exponential down to 0; take the "
        "maximum over the valid keys only (replace the masked scores by the row's minimum "
        "before taking it); " + _see("Building a masked softmax, step by step", _MASKED),
    ),
    Mistake(
        "zeroing after exp",
        lambda X, lens: _renorm(X, lens, zero_before=False),
        "this looks like exponentiating every difference and zeroing the masked entries "
        "afterwards: a huge masked score gives exp(...) = inf first, and inf * 0 is NaN; "
        "zero the masked differences before exponentiating, "
        "torch.where(keep, X - shift, 0.0); " + _see("Edge cases", _MASKED),
    ),
    Mistake(
        "no shift",
        lambda X, lens: _renorm(X, lens, shift=None, zero_before=False),
        "this looks like exp(X) times the mask with no shift: a huge masked score "
        "overflows to inf (inf * 0 = NaN), and scores around -1e7 underflow to 0; "
        "subtract the maximum over the valid keys first; "
        + _see("Building a masked softmax, step by step", _MASKED),
    ),
    Mistake(
        "where after exp",
        lambda X, lens: _renorm(X, lens, where=True),
        "the values are right but the gradient is NaN: torch.where(keep, torch.exp(...), 0) "
        "discards an infinite exponential only in the forward pass; backpropagation still "
        "multiplies 0 by inf there; zero the masked differences before exponentiating; "
        + _see("Edge cases", _MASKED),
    ),
    Mistake(
        "sum not kept from 0",
        lambda X, lens: _renorm(X, lens, clamp=False),
        "this looks like a division by a row sum that is 0 when no key is valid: 0 / 0 "
        "is NaN; divide by total.clamp_min(torch.finfo(X.dtype).tiny), so that such a row "
        "is 0 / tiny = 0; " + _see("A sequence of length 0", _MASKED),
    ),
    Mistake(
        "float32 result",
        lambda X, lens: masking.masked_softmax(X.float(), lens),
        "the values are right but float16 and bfloat16 scores come back as float32: "
        "return the scores' dtype, for example with .to(X.dtype); "
        + _see("Half precision", _MASKED),
    ),
    Mistake(
        "detached",
        lambda X, lens: masking.masked_softmax(X.detach(), lens),
        "the values are right but no gradient reaches the scores: compute with torch "
        "operations on X itself, with no .detach(), torch.no_grad() or NumPy; "
        + _see("Edge cases", _MASKED),
    ),
    Mistake(
        "one key too many",
        _off_by_one,
        "this looks like a mask that keeps key number `length` as well (<= instead of <): "
        "a length of 2 keeps keys 0 and 1 only; "
        + _see("Building a masked softmax, step by step", _MASKED),
    ),
    Mistake(
        "1-D lengths only",
        _one_dim_only,
        "this looks like a mask built for 1-D lengths only: a 2-D valid_lens of shape "
        "(batch, queries) gives each query its own length, so expand a 1-D one to "
        "(batch, queries) first; " + _see("Building a masked softmax, step by step", _MASKED),
    ),
    Mistake(
        "lengths ignored",
        lambda X, lens: torch.softmax(X, dim=-1),
        "this looks like a plain softmax that ignores valid_lens: the keys at or beyond "
        "each length must get weight 0; "
        + _see("Building a masked softmax, step by step", _MASKED),
    ),
)
def check_masked_softmax(
    fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
) -> CheckReport:
    """Check ``fn(X, valid_lens)``: masked softmax of (batch, queries, keys) scores.

    Lengths may be 1-D (batch,) or 2-D (batch, queries). A row of length 0 must
    be all zeros; float16 and bfloat16 scores must work and keep their dtype;
    masked scores of any size (even huge ones) must not matter; gradients must
    be finite and equal to the library's (the last case). Knows the slips of
    exercise 1 (a shift by the maximum over all keys, zeroing after exp, a
    ``torch.where`` after exp, 0 / 0 for a row of length 0) and the fill
    values that exercise does without (-1e6, -inf, a fixed fill, an added mask).
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
            "a row with no valid key must come out as zeros, neither uniform nor NaN: once "
            "its masked entries are zeroed its sum is 0, so divide by a sum kept away "
            "from 0; " + length_0,
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
            "a masked score must never take part, however large: leave it out of the "
            "maximum, and zero it before exponentiating (exp(1e30) is inf, and inf * 0 "
            "is NaN); " + steps,
        ),
        case(
            "real scores around -1e7 (below a fill of -1e6)",
            low,
            torch.tensor([2, 3]),
            "the valid scores lie far below -1e6 here; a shift by the maximum over the "
            "valid keys works at any scale; " + steps,
        ),
    ]
    storage = {
        "float16": "float16 stores numbers only up to 65504, with about 3 significant digits",
        "bfloat16": "bfloat16 has float32's range but only 2 to 3 significant digits",
    }
    for dtype, name in ((torch.float16, "float16"), (torch.bfloat16, "bfloat16")):
        scores = X.to(dtype)
        for lens in (torch.tensor([2, 3]), empty):
            reference = masking.masked_softmax(scores.float(), lens).to(dtype)
            cases.append(
                (
                    f"{name} scores, lengths {lens.tolist()}",
                    (scores, lens),
                    reference,
                    f"compute in the scores' dtype and return it ({storage[name]}), and "
                    "keep a row of length 0 all zeros; " + half,
                )
            )

    # Gradients: masked scores, huge ones included, get exactly 0; nothing is NaN.
    lens_2d = torch.tensor([[0, 2], [4, 1]])
    keep = torch.arange(4) < lens_2d[..., None]  # (batch, queries, keys)
    scores = torch.where(keep, X, torch.tensor(1e30))
    upstream = torch.randn(2, 2, 4, generator=g)
    leaf = scores.clone().requires_grad_(True)
    reference = masking.masked_softmax(leaf, lens_2d)
    (gradient,) = torch.autograd.grad((reference * upstream).sum(), leaf)
    cases.append(
        Case(
            "gradients with lengths [[0, 2], [4, 1]] and masked scores of 1e30",
            (scores, lens_2d),
            {"output": reference.detach(), "gradient": gradient},
            "torch.where(keep, torch.exp(...), 0) still backpropagates 0 * inf = NaN "
            "through the discarded exponentials, and a detached result backpropagates "
            "nothing; zero the masked differences before exponentiating; "
            + _see("Edge cases", _MASKED),
            probe=lambda f: _with_gradient(f, upstream),
        )
    )
    return _run("check_masked_softmax", fn, cases, mistakes=check_masked_softmax.mistakes)


_CAUSAL = _see("Building a masked softmax, step by step", _MASKED)


@knows(
    Mistake(
        "off by one",
        lambda batch, queries: torch.arange(queries).repeat(batch, 1),
        "this looks like lengths 0, 1, ..., queries - 1: query 0 would see no key at all; "
        "query i sees keys 0..i, which is i + 1 keys; " + _CAUSAL,
    ),
    Mistake(
        "transposed",
        lambda batch, queries: torch.arange(1, queries + 1)[:, None].expand(queries, batch),
        "this looks like a (queries, batch) answer: the lengths are right but the axes are "
        "swapped; one row per batch item, one column per query; " + _CAUSAL,
    ),
    Mistake(
        "counting down",
        lambda batch, queries: torch.arange(queries, 0, -1).expand(batch, queries),
        "this looks like lengths that count down: in a causal pattern the first query "
        "sees the fewest keys (1) and the last sees them all; " + _CAUSAL,
    ),
    Mistake(
        "every key",
        lambda batch, queries: torch.full((batch, queries), queries),
        "this looks like every query seeing every key: a causal query i sees only keys "
        "0..i; " + _CAUSAL,
    ),
    Mistake(
        "one row",
        lambda batch, queries: torch.arange(1, queries + 1),
        "this looks like one (queries,) row for the whole batch: the answer is 2-D, "
        "(batch, queries), the same row repeated for every batch item; " + _CAUSAL,
    ),
)
def check_causal_lengths(fn: Callable[[int, int], torch.Tensor]) -> CheckReport:
    """Check ``fn(batch, queries)``: 2-D valid lengths for a look-back-only pattern.

    Query i (counting from 0) may see keys 0..i, so its length is i + 1; the
    answer is an integer tensor of shape (batch, queries). Catches lengths
    0..queries-1 (query 0 would see nothing), a transposed (queries, batch)
    answer, lengths that count down, every key for every query, and a single
    row for the whole batch.
    """
    hint = (
        "query i, counting from 0, sees keys 0, ..., i: that is i + 1 keys, so row "
        "[1, 2, ..., queries], one row per batch item; " + _CAUSAL
    )
    cases = []
    for batch, queries in ((1, 4), (2, 3), (3, 6), (4, 4), (1, 1)):
        expected = torch.arange(1, queries + 1).expand(batch, queries)
        cases.append((f"batch={batch}, queries={queries}", (batch, queries), expected, hint))
    return _run("check_causal_lengths", fn, cases, mistakes=check_causal_lengths.mistakes)


# ---------------------------------------------------------------- Scoring Functions


def _reference_attention(Q, K, V):
    return torch.nn.functional.scaled_dot_product_attention(Q, K, V)


def _sdp(Q, K, V, scale, dim=-1, after=False):
    """softmax(Q K^T / scale) V over axis ``dim``, or the scale applied after the softmax."""
    scores = Q @ K.transpose(-2, -1)  # (batch, queries, keys)
    if after:
        return torch.softmax(scores, dim=-1) @ V / scale
    return torch.softmax(scores / scale, dim=dim) @ V


_SDP = _see("Scaled dot-product attention", _SCORING)


@knows(
    Mistake(
        "K.T on a batch",
        lambda Q, K, V: torch.softmax(Q @ K.permute(2, 1, 0) / Q.shape[-1] ** 0.5, -1) @ V,
        "this looks like K.T on a batch: on a (batch, keys, d) tensor .T reverses all "
        "three axes, giving (d, keys, batch); K.transpose(-2, -1) (or K.mT) swaps only "
        "the last two, giving (batch, d, keys); " + _SDP,
    ),
    Mistake(
        "no scale",
        lambda Q, K, V: _sdp(Q, K, V, 1.0),
        "this looks like softmax(Q K^T) V with no scale: divide the scores by sqrt(d), "
        "d = Q.shape[-1], the size of a query; " + _SDP,
    ),
    Mistake(
        "divided by d",
        lambda Q, K, V: _sdp(Q, K, V, Q.shape[-1]),
        "this looks like a division by d instead of sqrt(d): the scale is the square "
        "root of the query size; " + _SDP,
    ),
    Mistake(
        "sqrt of the keys",
        lambda Q, K, V: _sdp(Q, K, V, math.sqrt(K.shape[-2])),
        "this looks like a division by the square root of the number of keys: the d in "
        "sqrt(d) is the size of a query and a key vector, Q.shape[-1]; " + _SDP,
    ),
    Mistake(
        "sqrt of the queries",
        lambda Q, K, V: _sdp(Q, K, V, math.sqrt(Q.shape[-2])),
        "this looks like a division by the square root of the number of queries: the d "
        "in sqrt(d) is the size of a query vector, Q.shape[-1]; " + _SDP,
    ),
    Mistake(
        "sqrt of the value size",
        lambda Q, K, V: _sdp(Q, K, V, math.sqrt(V.shape[-1])),
        "this looks like a division by the square root of the values' size: the d in "
        "sqrt(d) is the size of the queries and keys, Q.shape[-1]; " + _SDP,
    ),
    Mistake(
        "scaled after the softmax",
        lambda Q, K, V: _sdp(Q, K, V, math.sqrt(Q.shape[-1]), after=True),
        "this looks like the scale applied after the softmax: divide the scores by "
        "sqrt(d) before the softmax, which is where the scale tames them; " + _SDP,
    ),
    Mistake(
        "over the queries",
        lambda Q, K, V: _sdp(Q, K, V, math.sqrt(Q.shape[-1]), dim=1),
        "this looks like a softmax over the queries (dim=1): each query's weights must "
        "sum to 1 over the keys, the last axis (dim=-1); " + _SDP,
    ),
)
def check_scaled_dot_product(
    fn: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor],
) -> CheckReport:
    """Check ``fn(Q, K, V)``: softmax(Q K^T / sqrt(d)) V.

    Q is (batch, queries, d), K is (batch, n, d) and V is (batch, n, v) for n
    keys; the answer is (batch, queries, v). Catches ``K.T`` on a batch, a
    missing scale, a scale of 1 / d, a square root of the wrong size (the number
    of queries, of keys, or the values' size), the scale applied after the
    softmax, and a softmax over the queries instead of the keys.
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
                sizes + _SDP,
            )
        )
    return _run("check_scaled_dot_product", fn, cases, mistakes=check_scaled_dot_product.mistakes)


_ENTROPY = _see("Exercises", _SCORING)


@knows(
    Mistake(
        "0 log 0",
        lambda p: -(p * p.log()).sum(dim=-1),
        "this looks like -(p * p.log()).sum(-1): a weight of 0 gives 0 * log(0) = "
        "0 * (-inf) = NaN in floating point; the convention 0 log 0 = 0 needs "
        "torch.xlogy(p, p), which is exactly 0 there; " + _ENTROPY,
    ),
    Mistake(
        "log base 2",
        lambda p: -torch.xlogy(p, p).sum(dim=-1) / math.log(2),
        "this looks like the entropy in bits (log base 2): the exercise uses the natural "
        "log, torch.log, so 8 equal weights give log 8 = 2.079, not 3; " + _ENTROPY,
    ),
    Mistake(
        "no minus",
        lambda p: torch.xlogy(p, p).sum(dim=-1),
        "this looks like sum p log p without the minus sign: log p <= 0, so the entropy "
        "-sum p log p is >= 0; " + _ENTROPY,
    ),
    Mistake(
        "mean",
        lambda p: -torch.xlogy(p, p).mean(dim=-1),
        "this looks like a mean over the keys instead of a sum: the entropy adds up "
        "-p log p over every key; " + _ENTROPY,
    ),
    Mistake(
        "first axis",
        lambda p: -torch.xlogy(p, p).sum(dim=0),
        "this looks like a sum over the first axis (dim=0): each row is one query's "
        "weights, so sum over the last axis, dim=-1; " + _ENTROPY,
    ),
)
def check_entropy(fn: Callable[[torch.Tensor], torch.Tensor]) -> CheckReport:
    """Check ``fn(weights)``: entropy -sum p log p (natural log) of each row.

    ``weights`` is (..., keys) with rows summing to 1; the answer drops the last
    axis. A weight of exactly 0 contributes 0. Catches 0 * log(0) = NaN, log2
    in place of the natural log, a missing minus sign, a mean in place of the
    sum and a sum over the wrong axis.
    """
    g = _generator(6)
    random = torch.softmax(torch.randn(4, 6, generator=g), -1)
    formula = "-sum p log p over the last axis, natural log; " + _ENTROPY
    zero_log_zero = (
        "0 * log(0) is NaN in floating point; treat p = 0 terms as 0, e.g. with torch.xlogy; "
        + _ENTROPY
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
    return _run("check_entropy", fn, cases, mistakes=check_entropy.mistakes)
