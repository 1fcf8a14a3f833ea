"""Checkers of Masked Softmax and Batched Attention: the masked softmax
and the causal lengths."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from .. import masking
from ._core import (
    _MASKED,
    Case,
    CheckReport,
    Mistake,
    _generator,
    _run,
    _see,
    _with_gradient,
    knows,
)
from ._draws import _draws
from ._explain import explainer
from ._source import Shortcut

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


def _renorm(
    X,
    valid_lens,
    *,
    shift="valid",
    zero_before=True,
    where=False,
    clamp=True,
    sum_dim=-1,
    empty="clamp",
):
    """The exercise's recipe with its classic slips: the shift (over the valid keys,
    over all keys, over the valid keys with a fixed -1e6 for the masked ones, or
    none), masked differences zeroed before or after exp (or discarded with
    torch.where), and the sum clamped away from 0 or not. ``empty`` is how a row
    whose sum is 0 escapes 0 / 0: the sum clamped to tiny ("clamp"), the quotient
    replaced by 0 where the sum is 0 ("where"; torch.nan_to_num gives the same),
    a sum of 0 replaced by 1 ("divide by 1"), or the sum clamped to at least 1
    ("at least 1", exact for a row shifted by its valid maximum, whose sum is at
    least e^0 = 1)."""
    keep = _keep_of(X, valid_lens)
    if shift == "valid":
        row_min = X.amin(dim=-1, keepdim=True)
        z = X - torch.where(keep, X, row_min).amax(dim=-1, keepdim=True)
    elif shift == "fixed other":
        z = X - torch.where(keep, X, -1e6).amax(dim=-1, keepdim=True)
    elif shift == "-inf fill":
        z = X - X.masked_fill(~keep, float("-inf")).amax(dim=-1, keepdim=True)
    elif shift == "masked as 0":
        z = X - torch.where(keep, X, 0.0).amax(dim=-1, keepdim=True)
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
    total = e.sum(dim=sum_dim, keepdim=True)
    if empty == "where":
        return torch.where(total > 0, e / total, 0.0)
    if empty == "divide by 1":
        return e / torch.where(total == 0, 1.0, total)
    if empty == "at least 1":
        return e / total.clamp_min(1.0)
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


#: How to take the maximum over the valid keys (exercise 1's "What is allowed").
_OTHER = (
    "choose other so that it can never win: the row's own minimum, "
    "X.amin(dim=-1, keepdim=True), or float('-inf') (exercise 1's paragraph "
    '"What is allowed"); ' + _see("Exercises", _MASKED)
)

_ALL_KEYS = (
    "this looks like a shift by the maximum over all keys, masked ones included "
    "(X.amax(dim=-1, keepdim=True)): a masked score far above the valid ones (1e30 "
    "or 200 here) becomes the shift, every valid exponential underflows to 0, and the "
    "row comes out as zeros; take the maximum over the valid keys only, with a masked "
    "maximum, torch.where(keep, X, other).amax(dim=-1, keepdim=True), and " + _OTHER
)

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
        "fill 0",
        lambda X, lens: _fill_softmax(X, lens, 0.0, zero=False),
        "this looks like the masked scores set to 0 before a softmax: a score of 0 is an "
        "ordinary score, exp(0) = 1, so every masked key still gets as much weight as a "
        "valid key scoring 0, and the valid weights sum to less than 1; a masked key must "
        "get weight exactly 0; "
        + _NO_FILL
        + _see("Building a masked softmax, step by step", _MASKED),
    ),
    Mistake(
        "fill 0, then zeros",
        lambda X, lens: _fill_softmax(X, lens, 0.0),
        "this looks like the masked scores set to 0, a softmax, then zeros on the masked "
        "keys: the zeroed scores still took exp(0) = 1 each in the softmax's sum, so the "
        "valid weights sum to less than 1; "
        + _NO_FILL
        + _see("Building a masked softmax, step by step", _MASKED),
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
        _ALL_KEYS,
    ),
    Mistake(
        "max over all keys, 0 / 0 replaced by 0",
        lambda X, lens: _renorm(X, lens, shift="all", empty="where"),
        _ALL_KEYS,
    ),
    Mistake(
        "max over all keys, a sum of 0 replaced by 1",
        lambda X, lens: _renorm(X, lens, shift="all", empty="divide by 1"),
        _ALL_KEYS,
    ),
    Mistake(
        "max over all keys, the sum clamped to at least 1",
        lambda X, lens: _renorm(X, lens, shift="all", empty="at least 1"),
        _ALL_KEYS,
    ),
    Mistake(
        "a fixed number in the masked maximum",
        lambda X, lens: _renorm(X, lens, shift="fixed other"),
        "this looks like a masked maximum, torch.where(keep, X, other).amax(...), whose "
        "other is a fixed number such as -1e6: real scores can lie below any fixed "
        "number (here near -1e7), and then other wins the maximum, every valid "
        "exponential underflows to 0 and the row comes out as zeros; " + _OTHER,
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
        "no shift, masked zeroed first",
        lambda X, lens: _renorm(X, lens, shift=None),
        "this looks like no shift: the masked scores are zeroed before exp, as they should "
        "be, but no row's maximum is subtracted, so real scores around -1e7 underflow to "
        "exp(...) = 0 (a row of zeros) and scores near 100 overflow float32's exp "
        "(inf / inf = NaN); subtract each row's maximum over its valid keys first, so "
        "that the largest exponent is exp(0) = 1; "
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
        "summed over the queries",
        lambda X, lens: _renorm(X, lens, sum_dim=-2),
        "this looks like a division by a sum over the queries (dim=1 or dim=-2): each "
        "query's weights must sum to 1 over the keys, the last axis, "
        "e.sum(dim=-1, keepdim=True); " + _see("Building a masked softmax, step by step", _MASKED),
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
    Mistake(
        "where after exp, -inf in the maximum",
        lambda X, lens: _renorm(X, lens, shift="-inf fill", where=True),
        "the values are right but the gradient is NaN: the mask is applied after "
        "exponentiating, torch.where(keep, torch.exp(X - shift), 0), which discards an "
        "infinite exponential only in the forward pass (a row with no valid key has a "
        "maximum of -inf, and X - (-inf) = inf); backpropagation still multiplies 0 by "
        "inf there; zero the masked differences before exponentiating, "
        "torch.exp(torch.where(keep, X - shift, 0.0)) * keep; " + _see("Edge cases", _MASKED),
    ),
    Mistake(
        "zeroing after exp, -inf in the maximum",
        lambda X, lens: _renorm(X, lens, shift="-inf fill", zero_before=False),
        "this looks like the mask applied after exponentiating, torch.exp(X - shift) * keep: "
        "a huge masked score, or any score of a row with no valid key (its maximum is "
        "-inf, and X - (-inf) = inf), gives exp(...) = inf first, and inf * 0 is NaN; zero "
        "the masked differences before exponentiating, torch.where(keep, X - shift, 0.0); "
        + _see("Edge cases", _MASKED),
    ),
    Mistake(
        "masked as 0 in the maximum",
        lambda X, lens: _renorm(X, lens, shift="masked as 0"),
        "this looks like a shift by a maximum taken with the masked scores replaced by 0 "
        "(torch.where(keep, X, 0).amax(...)): the shift is then never below 0, so a row "
        "whose valid scores all lie far below 0 (around -200) has exp(x - 0) = 0 for every "
        "key and a sum of 0; replace the masked scores by the row's minimum before taking "
        "the maximum; " + _see("Building a masked softmax, step by step", _MASKED),
    ),
)
def check_masked_softmax(
    fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
) -> CheckReport:
    """Check ``fn(X, valid_lens)``: masked softmax of (batch, queries, keys) scores.

    Lengths may be 1-D (batch,) or 2-D (batch, queries). A row of length 0 must
    be all zeros; float16 and bfloat16 scores must work and keep their dtype;
    masked scores of any size (even huge ones) must not matter; gradients must
    be finite and equal to the library's (the last case). Under every seed one
    case holds float32 rows whose valid scores all lie near -200 and rows of large
    ones (40s, 80s, +-100), with -inf or 200 on the masked keys. Knows the slips of
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
            "is NaN); " + _see("Why not zero the padding afterwards?", _MASKED),
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
    # Under every seed: valid scores near -200 and large ones (40s, 80s, +-100), in
    # float32, with -inf or 200 on the masked keys (padding may hold anything).
    far = torch.stack(
        [
            -205 + torch.arange(6.0) + torch.randn(3, 6, generator=g),
            torch.stack(
                [
                    40 + 0.5 * torch.randn(6, generator=g),  # a row of 40s
                    80 + 10 * torch.randn(6, generator=g),  # near exp's overflow at 88.7
                    100 * torch.tensor([1.0, -1.0]).repeat(3) + torch.randn(6, generator=g),
                ]
            ),
        ]
    )
    far_lens, padding = torch.tensor([5, 4]), torch.tensor([-math.inf, 200.0])[:, None, None]
    cases.append(
        case(
            "valid scores near -200 and up to 100 (float32), masked keys -inf or 200",
            torch.where(_keep_of(far, far_lens), far, padding),
            far_lens,
            "exp underflows to 0 below -103 and overflows beyond 88.7 in float32: shift "
            "each row by the maximum over its valid keys (not 0, a mean or a sum), and "
            "zero the masked differences before exponentiating (a masked 200 overflows "
            "exp, and a masked -inf times 0 is NaN); " + steps,
        )
    )
    return _run(
        "check_masked_softmax",
        fn,
        cases,
        mistakes=check_masked_softmax.mistakes,
        explain=explainer(("sequence", "query", "key"), _ALL_ZERO),
        refuse=_RENORM_SHORTCUTS,
    )


#: An answer of zeros where the right one has weights is no constant factor off:
#: every exponential underflowed, or was masked away.
_ALL_ZERO = (
    (
        "is 0 everywhere",
        torch.zeros_like,
        "that every valid exponential underflowed to 0: the shift was far above the "
        "valid scores, usually because a masked score (or a fixed number standing in "
        "for one) won the maximum; the shift must be the maximum over the valid keys",
    ),
)

#: What exercise 1 forbids: the book's own answer, and the dtype's extreme value as a
#: fill ("never writes a large negative number"), found in the reader's source.
_RENORM_SHORTCUTS = (
    Shortcut(
        "the book's masked_softmax",
        ("attnbook.masking.masked_softmax",),
        "the book's own masked softmax: the exercise asks you to write it yourself",
    ),
    Shortcut(
        "a fill of the dtype's extreme value",
        ("torch.finfo().min", "torch.finfo().max", "numpy.finfo().min", "numpy.finfo().max"),
        "the dtype's extreme value, a large negative number: the exercise never writes a "
        "large negative number, not even as the other of a masked maximum (a reading of "
        "the source cannot tell that use from a fill); take the maximum over the valid "
        "keys as torch.where(keep, X, other).amax(dim=-1, keepdim=True) with other the "
        "row's own minimum, X.amin(dim=-1, keepdim=True), or float('-inf'), then zero the "
        "masked differences, exponentiate, and divide by the row sum; "
        + _see("Exercises", _MASKED),
    ),
)

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
    Mistake(
        "the mask itself",
        lambda batch, queries: (
            torch.ones(queries, queries, dtype=torch.long).tril().expand(batch, queries, queries)
        ),
        "this looks like the (queries, keys) causal mask itself, a lower triangle of ones: "
        "the exercise asks for the lengths from which masked_softmax builds that mask, "
        "one integer per query, shape (batch, queries); " + _CAUSAL,
    ),
    Mistake(
        "one length too many",
        lambda batch, queries: torch.arange(queries + 1).expand(batch, queries + 1),
        "this looks like torch.arange(queries + 1), the lengths 0, 1, ..., queries: that "
        "is queries + 1 entries, and query 0 would see no key; query i has length i + 1, "
        "torch.arange(1, queries + 1); " + _CAUSAL,
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
    sizes = [(1, 4), (2, 3), (3, 6), (4, 4), (1, 1)]
    draw = _draws(901)
    if draw is not None:  # a hidden test: other sizes of the same kinds
        square = draw.int(2, 7, avoid=(4,))
        sizes = [
            (1, draw.int(2, 8, avoid=(4,))),  # one sequence
            (draw.int(2, 5), draw.int(2, 8, avoid=(3,))),  # a batch
            (draw.int(2, 5), draw.int(5, 9, avoid=(6,))),  # a batch of longer sequences
            (square, square),  # as many sequences as queries
            (draw.int(2, 5), 1),  # a single query
        ]
    cases = []
    for batch, queries in sizes:
        expected = torch.arange(1, queries + 1).expand(batch, queries)
        cases.append((f"batch={batch}, queries={queries}", (batch, queries), expected, hint))
    return _run(
        "check_causal_lengths",
        fn,
        cases,
        mistakes=check_causal_lengths.mistakes,
        explain=explainer(("sequence", "query")),
    )
