"""Checkers of chapter 14, where position comes from: RoPE scores and ALiBi slopes."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from ._core import CheckReport, Mistake, _generator, _run, _see, knows
from ._draws import _draws
from ._explain import explainer
from ._probes import _refusing
from ._source import Shortcut

#: Caught at run time in this process; read in the source a grader's proxy hands over.
_ROPE_SHORTCUT = Shortcut(
    "apply_rope",
    ("attnbook.rope.apply_rope",),
    "the library's apply_rope, which the exercise replaces",
    remote=True,
)

_POSITIONS = "Where Position Comes From"


# ---------------------------------------------------------------- RoPE from scratch


def _turn(x: torch.Tensor, angles: torch.Tensor, pairs: str, swap: bool = False) -> torch.Tensor:
    """Rotate x (..., n, d) pair by pair by angles (n, d/2); pairs "adjacent" or "half";
    with ``swap`` the cosine and the sine trade places."""
    d = x.shape[-1]
    c, s = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    if swap:
        c, s = s, c
    if pairs == "adjacent":
        a, b = x[..., 0::2], x[..., 1::2]
        return torch.stack([a * c - b * s, a * s + b * c], dim=-1).reshape(x.shape)
    a, b = x[..., : d // 2], x[..., d // 2 :]
    return torch.cat([a * c - b * s, a * s + b * c], dim=-1)


def _angles(n: int, d: int, exponent: Callable[[int, int], float], sign: float = 1.0):
    m = torch.arange(n, dtype=torch.float64)[:, None]
    theta = torch.tensor([10000.0 ** exponent(i, d) for i in range(d // 2)], dtype=torch.float64)
    return sign * m * theta  # (n, d/2)


def _right_exponent(i: int, d: int) -> float:
    return -2 * i / d


def _scores(
    q: torch.Tensor,
    k: torch.Tensor,
    q_pairs: str = "adjacent",
    k_pairs: str | None = "adjacent",
    exponent: Callable[[int, int], float] = _right_exponent,
    sign: float = 1.0,
) -> torch.Tensor:
    n, d = q.shape[-2], q.shape[-1]
    angles = _angles(n, d, exponent, sign)
    qr = _turn(q, angles, q_pairs)
    kr = k if k_pairs is None else _turn(k, angles, k_pairs)
    return qr @ kr.transpose(-1, -2)


def _with_apply_rope(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    from ..rope import apply_rope

    positions = torch.arange(q.shape[-2])
    return apply_rope(q, positions) @ apply_rope(k, positions).transpose(-1, -2)


_SEE_ROPE = _see("RoPE: rotate the queries and keys", _POSITIONS)


@knows(
    Mistake(
        "apply_rope",
        _with_apply_rope,
        "this calls the library's apply_rope, which the exercise asks you to write: build "
        "the angles i * theta_r yourself and rotate each pair with cos and sin; " + _SEE_ROPE,
    ),
    Mistake(
        "k_not_rotated",
        lambda q, k: _scores(q, k, k_pairs=None),
        "the keys were not rotated: only q carries its position, so the scores still depend "
        "on where the query sits, not only on i - j; rotate k by its own positions too; "
        + _SEE_ROPE,
    ),
    Mistake(
        "half_split",
        lambda q, k: _scores(q, k, "half", "half"),
        "these are the half-split pairs (feature r with feature r + d/2); the book's convention "
        "(and apply_rope's) pairs adjacent features 2r and 2r + 1; " + _SEE_ROPE,
    ),
    Mistake(
        "mixed_pairs",
        lambda q, k: _scores(q, k, "adjacent", "half"),
        "q and k were rotated with different pairings (adjacent pairs for one, half-split for "
        "the other), so the rotations do not cancel into one by j - i; pair features the same "
        "way in both; " + _SEE_ROPE,
    ),
    Mistake(
        "exponent_without_2",
        lambda q, k: _scores(q, k, exponent=lambda i, d: -i / d),
        "the frequencies look like 10000^(-r/d): the exponent of pair r is -2r/d (the pair's "
        "first feature index over d), as in chapter 7's sinusoids; " + _SEE_ROPE,
    ),
    Mistake(
        "exponent_doubled",
        lambda q, k: _scores(q, k, exponent=lambda i, d: -4 * i / d),
        "the frequencies look like 10000^(-4r/d), the 2 counted twice: torch.arange(0, d, 2) "
        "already gives each pair's 2r, so the exponent is -arange(0, d, 2) / d, not "
        "-2 * arange(0, d, 2) / d. The rotation itself is right (the scores still depend "
        "only on i - j); only the frequencies turn too slowly; " + _SEE_ROPE,
    ),
    Mistake(
        "exponent_off_by_one",
        lambda q, k: _scores(q, k, exponent=lambda i, d: -2 * (i + 1) / d),
        "the frequencies look like 10000^(-2(r+1)/d): pair r = 0 should turn by one radian per "
        "position, so count pairs from 0; " + _SEE_ROPE,
    ),
    Mistake(
        "positive_exponent",
        lambda q, k: _scores(q, k, exponent=lambda i, d: 2 * i / d),
        "the frequencies grow, 10000^(+2r/d): they must shrink from one radian per position "
        "(pair 0) to nearly nothing (the last pair), theta_r = 10000^(-2r/d); " + _SEE_ROPE,
    ),
    Mistake(
        "scaled",
        lambda q, k: _scores(q, k) / math.sqrt(q.shape[-1]),
        "the scores are divided by sqrt(d): the exercise asks for the plain dot products of "
        "the rotated vectors (the scaling comes later, in attention); " + _SEE_ROPE,
    ),
    Mistake(
        "softmax",
        lambda q, k: torch.softmax(_scores(q, k), dim=-1),
        "these are attention weights, a softmax of the scores: return the scores "
        "themselves; " + _SEE_ROPE,
    ),
    Mistake(
        "transposed",
        lambda q, k: _scores(q, k).transpose(-1, -2),
        "the scores are transposed: entry (i, j) is query i's score for key j, rotated q "
        "times rotated k transposed, not the other way round; " + _SEE_ROPE,
    ),
    Mistake(
        "negative_angle",
        lambda q, k: _scores(q, k, sign=-1.0),
        "the vectors were turned by -i theta_r (clockwise), the opposite rotation "
        "convention (cos and sin swapped gives the same scores). It is a valid one, the "
        "scores still depend only on i - j, but the exercise asks for the book's: the pair "
        "(a, b) at position i becomes (a cos - b sin, a sin + b cos) of the angle "
        "+i theta_r; " + _SEE_ROPE,
    ),
)
def check_rope_scores(fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> CheckReport:
    """Check ``fn(q, k)``: RoPE's attention scores, written from scratch.

    q and k are (..., n, d), d even, rows at positions 0 .. n - 1. The answer
    is (..., n, n): entry (i, j) is the dot product of q's row i rotated to
    position i with k's row j rotated to position j (no scaling, no softmax),
    with adjacent pairs (2r, 2r + 1) turned by i * 10000^(-2r/d), as
    :func:`attnbook.rope.apply_rope` does. A function that calls ``apply_rope``
    is rejected: the exercise writes the rotation from scratch.
    """
    from ..rope import apply_rope

    g = _generator(14)
    cases = []
    for shape in ((6, 8), (2, 9, 16), (3, 4)):
        q = torch.randn(*shape, dtype=torch.float64, generator=g)
        k = torch.randn(*shape, dtype=torch.float64, generator=g)
        positions = torch.arange(shape[-2])
        want = apply_rope(q, positions) @ apply_rope(k, positions).transpose(-1, -2)
        cases.append(
            (
                f"q and k of shape {shape}",
                (q, k),
                want,
                "rotate q's row i and k's row j by their own positions, then take every dot "
                "product; " + _SEE_ROPE,
            )
        )
    return _run(
        "check_rope_scores",
        fn,
        cases,
        mistakes=check_rope_scores.mistakes,
        probe=_refusing([apply_rope], "the library's apply_rope, which the exercise replaces"),
        refuse=(_ROPE_SHORTCUT,),
        explain=explainer(("query position", "key position")),
    )


# ---------------------------------------------------------------- ALiBi slopes


def _geometric(h: int, first: int = 1) -> list[float]:
    return [2.0 ** (-8.0 * k / h) for k in range(first, first + h)]


def _interleaved(h: int, extra: slice) -> list[float]:
    p = 2 ** int(math.floor(math.log2(h)))
    slopes = _geometric(p)
    if p < h:
        slopes += _geometric(2 * p)[extra][: h - p]
    return slopes


def _p(h: int) -> int:
    return 2 ** int(math.floor(math.log2(h)))


def _extras_first(h: int) -> list[float]:
    slopes = _interleaved(h, slice(0, None, 2))
    p = _p(h)
    return slopes[p:] + slopes[:p]


def _as_tensor(fn: Callable[[int], object]) -> Callable[[int], torch.Tensor]:
    """Accept a list or tensor of slopes from the reader; compare as float64."""

    def run(h: int) -> torch.Tensor:
        out = fn(h)
        return torch.as_tensor(out).to(torch.float64).flatten()

    return run


_SEE_ALIBI = _see("ALiBi: a penalty that grows with distance", _POSITIONS)


@knows(
    Mistake(
        "halving",
        lambda h: [2.0**-k for k in range(1, h + 1)],
        "these are 1/2, 1/4, 1/8, ... whatever the number of heads: that is the sequence for 8 "
        "heads only; the ratio is 2^(-8/h), so that the smallest slope is 2^-8; " + _SEE_ALIBI,
    ),
    Mistake(
        "starts_at_one",
        lambda h: _geometric(h, first=0),
        "the first slope is 1 (exponent -8c/h): head c, counted from 0, has slope "
        "2^(-8(c+1)/h), so head 0's is 2^(-8/h); " + _SEE_ALIBI,
    ),
    Mistake(
        "no_power_of_two_rule",
        lambda h: _geometric(h),
        "for a number of heads that is not a power of two these are 2^(-8(c+1)/h): the paper's "
        "rule takes the slopes of the largest power of two below h, then every other slope "
        "of the next power of two; " + _SEE_ALIBI,
    ),
    Mistake(
        "wrong_extra_slopes",
        lambda h: _interleaved(h, slice(1, None, 2)),
        "the extra heads repeat slopes the first heads already have: these are the other "
        "alternate slopes of the 2p-head sequence (the 2nd, 4th, ...), which are exactly the "
        "p-head slopes; take the 1st, 3rd, 5th, ... instead, the ones the p heads do not "
        "have (for 6 heads 1/2 and 1/8); " + _SEE_ALIBI,
    ),
    Mistake(
        "reversed",
        lambda h: _interleaved(h, slice(0, None, 2))[::-1],
        "the slopes come smallest first: head 0 has the steepest slope, 2^(-8/h) for h a "
        "power of two, and each later head a gentler one; " + _SEE_ALIBI,
    ),
    Mistake(
        "truncated_2p",
        lambda h: _geometric(h) if h & (h - 1) == 0 else _geometric(2 * _p(h))[:h],
        "for a number of heads that is not a power of two these are the first h slopes of "
        "the next power of two: take the p slopes of the power of two below h, then every "
        "other slope of the 2p-head sequence; " + _SEE_ALIBI,
    ),
    Mistake(
        "extras_first",
        lambda h: _extras_first(h),
        "the extra slopes come first: the authors' order is the p-head slopes, then the "
        "extra ones (for 6 heads 1/4 .. 1/256, then 1/2 and 1/8); " + _SEE_ALIBI,
    ),
    Mistake(
        "base_e",
        lambda h: [math.exp(-8.0 * (c + 1) / h) for c in range(h)],
        "these are e^(-8(c+1)/h): the slopes are powers of 2, 2^(-8(c+1)/h); " + _SEE_ALIBI,
    ),
    Mistake(
        "sorted",
        lambda h: sorted(_interleaved(h, slice(0, None, 2)), reverse=True),
        "the right slopes, sorted largest first: keep the order of the authors' code, the "
        "p-head slopes first, then the extra ones (for 6 heads 1/4 .. 1/256, then 1/2 and "
        "1/8); " + _SEE_ALIBI,
    ),
    Mistake(
        "negative",
        lambda h: [-m for m in _interleaved(h, slice(0, None, 2))],
        "every slope has the right size but a minus sign: the slopes themselves are "
        "positive, 2^(-8(c+1)/h); the minus sign belongs in the bias, -m |i - j|, which "
        "subtracts the penalty from the scores; " + _SEE_ALIBI,
    ),
)
def check_alibi_slopes(fn: Callable[[int], object]) -> CheckReport:
    """Check ``fn(h)``: ALiBi's h slopes (a list or a 1-D tensor), head 0 first.

    In the order the authors' code produces them: for h a power of two, head
    c (counted from 0) has 2^(-8(c+1)/h), largest first. Otherwise, with p the largest
    power of two below h: the p slopes for p heads, then the first h - p of
    slopes 1, 3, 5, ... (counting from 1) of the sequence for 2p heads, as
    :func:`attnbook.alibi.alibi_slopes` returns them.
    """
    from ..alibi import alibi_slopes

    heads = [8, 4, 16, 1, 6, 12]
    draw = _draws(911)
    if draw is not None:  # a hidden test: other numbers of heads of the same kinds
        powers = draw.permutation([2, 32, 64])  # the powers of two up to 64 the book leaves out
        others = draw.permutation([h for h in range(3, 41) if h & (h - 1) and h not in (6, 12)])
        heads = [powers[0], powers[1], powers[2], 1, others[0], others[1]]
    cases = []
    for h in heads:
        note = (
            "a power of two: 2^(-8(c+1)/h) for head c = 0 .. h-1"
            if (h & (h - 1)) == 0
            else "not a power of two: the p-head slopes, then every other 2p-head slope"
        )
        cases.append(
            (
                f"h = {h} ({note})",
                (h,),
                alibi_slopes(h, dtype=torch.float64),
                "compare your slopes with the rule in the text; " + _SEE_ALIBI,
            )
        )
    return _run(
        "check_alibi_slopes",
        fn,
        cases,
        mistakes=check_alibi_slopes.mistakes,
        probe=_as_tensor,
        explain=explainer(("head",)),
    )
