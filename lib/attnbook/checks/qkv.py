"""Checkers of Queries, Keys and Values: softmax and row normalisation."""

from __future__ import annotations

from collections.abc import Callable

import torch

from ._core import (
    _QKV,
    Case,
    CheckReport,
    Mistake,
    _generator,
    _run,
    _see,
    knows,
)
from ._explain import explainer
from ._source import SOFTMAXES, Shortcut

#: Exercise 2 writes the softmax "from scratch (no torch.softmax)".
_SOFTMAX_SHORTCUT = Shortcut(
    "torch.softmax",
    SOFTMAXES,
    "PyTorch's softmax: the exercise asks you to write the softmax from scratch",
    methods=("softmax", "log_softmax"),
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
    Mistake(
        "one sum for the whole tensor",
        lambda X: torch.exp(X) / torch.exp(X).sum(),
        "this looks like exp(X) / exp(X).sum(): a sum with no dim adds up the whole "
        "tensor, so all rows together sum to 1, not each row, and with no shift exp "
        "overflows beyond x = 88.7; subtract each row's maximum, then divide by "
        "e.sum(dim=-1, keepdim=True); " + _see("From scores to weights", _QKV),
    ),
    Mistake(
        "log-softmax",
        lambda X: (
            X
            - X.max(dim=-1, keepdim=True).values
            - torch.log(torch.exp(X - X.max(dim=-1, keepdim=True).values).sum(dim=-1, keepdim=True))
        ),
        "this looks like the log of the softmax (every answer <= 0, log_softmax or "
        "X - logsumexp): the weights are the exponentials divided by their row's sum, "
        "not their logarithm; " + _see("From scores to weights", _QKV),
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
    return _run(
        "check_softmax",
        fn,
        cases,
        mistakes=check_softmax.mistakes,
        explain=explainer(("row", "column")),
        refuse=(_SOFTMAX_SHORTCUT,),
    )


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
    Mistake(
        "divides by the mean",
        lambda S: S / S.mean(dim=-1, keepdim=True),
        "this looks like a division by each row's mean, not its sum: every row then "
        "sums to its number of columns, not to 1; " + _see("From scores to weights", _QKV),
    ),
    Mistake(
        "divides by the length",
        lambda S: S / S.norm(dim=-1, keepdim=True),
        "this looks like a division by each row's length (S.norm(dim=-1), the square root "
        "of the sum of squares): each row then has length 1, but weights must sum to 1, "
        "so divide by the plain sum; " + _see("From scores to weights", _QKV),
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
    return _run(
        "check_normalize",
        fn,
        cases,
        mistakes=check_normalize.mistakes,
        explain=explainer(("row", "column")),
    )
