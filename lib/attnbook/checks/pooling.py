"""Checkers of Attention Pooling by Similarity: the Epanechnikov kernel
and the Gaussian weights."""

from __future__ import annotations

from collections.abc import Callable

import torch

from .. import kernels
from ._core import (
    _POOLING,
    CheckReport,
    Mistake,
    _generator,
    _run,
    _see,
    knows,
)
from ._draws import _draws
from ._explain import explainer

# ---------------------------------------------------------------- Attention Pooling

_KERNEL = _see("Kernels: turning distance into similarity", _POOLING)


def _epanechnikov_cases() -> list[tuple]:
    """The book's cases of check_epanechnikov."""
    grid = torch.linspace(-2.5, 2.5, 51)
    return [
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


def _fresh_epanechnikov_cases(draw) -> list[tuple]:
    """Cases of the same kinds as the book's, on distances drawn afresh (a hidden test)."""
    K = kernels.epanechnikov
    inside = draw.uniform(0.05, 0.95, (3,)) * torch.tensor([1.0, 1.0, -1.0])  # |u| < 1
    outside = draw.uniform(1.05, 10.0, (4,)) * torch.tensor([1.0, -1.0, 1.0, -1.0])  # |u| > 1
    edges = torch.tensor([1.0, -1.0])[torch.randint(2, (draw.int(3, 5),), generator=draw.generator)]
    negative = -draw.uniform(0.05, 2.5, (draw.int(2, 5),))  # u < 0
    rows, columns = draw.int(2, 5), draw.int(3, 9)
    plane = draw.uniform(-2.5, 2.5, (rows, columns))
    spread = draw.uniform(-2.5, 2.5, (51,))
    zeros = torch.zeros(draw.int(2, 5))
    return [
        (
            "51 random u from -2.5 to 2.5",
            (spread,),
            K(spread),
            "K(u) = (3/4) max(0, 1 - u^2); " + _KERNEL,
        ),
        (
            f"u = 0 ({zeros.numel()} of them) gives 3/4",
            (zeros,),
            torch.full_like(zeros, 0.75),
            "the factor 3/4 makes the kernel integrate to 1, so its peak is 3/4, not 1; " + _KERNEL,
        ),
        (
            f"a parabola inside the window, u = {[round(v, 3) for v in inside.tolist()]}",
            (inside,),
            K(inside),
            "1 - u^2, not 1 - |u|: max(0, 1 - |u|) is the triangular kernel, which some "
            'texts call "Epanechnikov"; ' + _KERNEL,
        ),
        (
            "|u| > 1 gives exactly 0",
            (outside,),
            torch.zeros(4),
            "clip at |u| = 1: beyond it 1 - u^2 is negative, and a weight must not be; " + _KERNEL,
        ),
        (
            "|u| = 1 gives 0",
            (edges,),
            torch.zeros_like(edges),
            "the parabola reaches 0 at the window's edge; " + _KERNEL,
        ),
        (
            "negative u: the kernel is symmetric",
            (negative,),
            K(negative),
            "the window is |u| <= 1, on the distance |u|, not on u; " + _KERNEL,
        ),
        (
            f"a {rows}x{columns} tensor of distances",
            (plane,),
            K(plane),
            "work elementwise and keep the input's shape; " + _KERNEL,
        ),
    ]


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
    draw = _draws(902)  # None: the book's cases; else a hidden test's, of the same kinds
    cases = _epanechnikov_cases() if draw is None else _fresh_epanechnikov_cases(draw)
    return _run(
        "check_epanechnikov",
        fn,
        cases,
        mistakes=check_epanechnikov.mistakes,
        explain=explainer(("entry",)),
    )


def _gaussian_reference(x_query: torch.Tensor, x_train: torch.Tensor, width: float):
    scores = -(((x_query[:, None] - x_train[None, :]) / width) ** 2) / 2  # (queries, n)
    return torch.softmax(scores.double(), dim=-1).float()


def _differences(x_query: torch.Tensor, x_train: torch.Tensor) -> torch.Tensor:
    return x_query[:, None] - x_train[None, :]  # (queries, n)


_WEIGHTS = _see("The Gaussian weights are a softmax", _POOLING)
_WIDTH = _see("The kernel width", _POOLING)  # where the score with sigma is written


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
        "kernel is then as narrow as one of width sigma / sqrt(2); " + _WIDTH,
    ),
    Mistake(
        "no width",
        lambda x, xs, w: torch.softmax(-(_differences(x, xs) ** 2) / 2, dim=-1),
        "this looks like the score -(x - x_i)^2 / 2 with the width left out: it is right "
        "at width 1 only; divide the distance by sigma before squaring; " + _WIDTH,
    ),
    Mistake(
        "width not squared",
        lambda x, xs, w: torch.softmax(-(_differences(x, xs) ** 2) / (2 * w), dim=-1),
        "this looks like -(x - x_i)^2 / (2 sigma), with sigma not squared: divide the "
        "distance by sigma before squaring, -((x - x_i) / sigma)^2 / 2; " + _WIDTH,
    ),
    Mistake(
        "width as inverse",
        lambda x, xs, w: torch.softmax(-((_differences(x, xs) * w) ** 2) / 2, dim=-1),
        "this looks like the distance multiplied by the width instead of divided: a "
        "larger width must give a wider, flatter kernel; " + _WIDTH,
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
    Mistake(
        "not normalised",
        lambda x, xs, w: torch.exp(-((_differences(x, xs) / w) ** 2) / 2),
        "this looks like the kernel values exp(-((x - x_i) / sigma)^2 / 2) themselves: "
        "the weights are those values divided by their row's sum, so that each query's "
        "weights sum to 1; torch.softmax of the scores does both; " + _WEIGHTS,
    ),
    Mistake(
        "softmax over every entry",
        lambda x, xs, w: torch.softmax(
            (-((_differences(x, xs) / w) ** 2) / 2).flatten(), dim=0
        ).reshape(len(x), len(xs)),
        "this looks like one softmax over the whole (n_query, n_train) matrix: all "
        "entries together sum to 1, not each query's row; softmax over the last axis, "
        "dim=-1; " + _WEIGHTS,
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
    return _run(
        "check_gaussian_weights",
        fn,
        cases,
        mistakes=check_gaussian_weights.mistakes,
        explain=explainer(("query", "key")),
    )
