"""Checkers of Attention Scoring Functions: scaled dot-product attention
and the entropy of the weights."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from ._core import (
    _SCORING,
    CheckReport,
    Mistake,
    _generator,
    _run,
    _see,
    knows,
)
from ._explain import explainer
from ._stability import UNDERFLOW, far_queries_keys, no_shift_softmax

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
    Mistake(
        "multiplied by sqrt(d)",
        lambda Q, K, V: _sdp(Q, K, V, 1 / math.sqrt(Q.shape[-1])),
        "this looks like the scores multiplied by sqrt(d) instead of divided: the scale "
        "makes the scores smaller, Q K^T / sqrt(d), d = Q.shape[-1]; " + _SDP,
    ),
    Mistake(
        "no softmax",
        lambda Q, K, V: Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]) @ V,
        "this looks like the scaled scores multiplied by V with no softmax: the scores "
        "become weights, each query's row summing to 1 over the keys, through a softmax "
        "(dim=-1) before they weight the values; " + _SDP,
    ),
    Mistake(
        "the weights, not the output",
        lambda Q, K, V: torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]), dim=-1),
        "this looks like the attention weights, (batch, queries, keys): the answer is "
        "those weights applied to the values, weights @ V, of shape (batch, queries, "
        "value size); " + _SDP,
    ),
    Mistake(
        "no shift",
        lambda Q, K, V: no_shift_softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])) @ V,
        "this looks like a softmax written as exp(S) / exp(S).sum(...) with no shift: it "
        "is right for small scores, but exp overflows to inf beyond 88.7 and underflows "
        "to 0 below -103 in float32 (0 / 0 is NaN); use torch.softmax, or subtract each "
        "row's maximum first; " + _SDP,
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
    softmax, and a softmax over the queries instead of the keys. Under every
    seed, two cases hold float32 scores that all lie near -200 or reach about
    110, where a softmax with no shift underflows or overflows.
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
    for kind, text in (("negative", "scores near -200"), ("large", "large scores, up to 110")):
        Q, K = far_queries_keys(g, 2, 3, 5, 4, kind)
        V = torch.randn(2, 5, 3, generator=g)
        cases.append(
            (
                f"{text} (float32), Q (2, 3, 4), K (2, 5, 4), V (2, 5, 3)",
                (Q, K, V),
                _reference_attention(Q, K, V),
                f"{UNDERFLOW}: use torch.softmax, or subtract each row's maximum first; " + _SDP,
            )
        )
    return _run(
        "check_scaled_dot_product",
        fn,
        cases,
        mistakes=check_scaled_dot_product.mistakes,
        explain=explainer(("batch", "query", "value feature")),
    )


# The exercise states the formula; this section teaches what it measures, a row
# of weights going from even (log n) to one-hot (0) as the scores spread.
_ENTROPY = _see("What an unscaled score does to softmax", _SCORING)


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
    Mistake(
        "keepdim",
        lambda p: -torch.xlogy(p, p).sum(dim=-1, keepdim=True),
        "the values are right but the sum kept its axis (keepdim=True): the answer has "
        "one entropy per row, the weights' shape without the last axis; " + _ENTROPY,
    ),
    Mistake(
        "one number",
        lambda p: -torch.xlogy(p, p).sum(),
        "this looks like one sum over the whole tensor (.sum() with no dim): the answer "
        "is one entropy per row, a sum over the last axis, dim=-1; " + _ENTROPY,
    ),
    Mistake(
        "log base 10",
        lambda p: -torch.xlogy(p, p).sum(dim=-1) / math.log(10),
        "this looks like log base 10 (torch.log10): the exercise uses the natural log, "
        "torch.log, so 8 equal weights give log 8 = 2.079, not 0.903; " + _ENTROPY,
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
    return _run(
        "check_entropy",
        fn,
        cases,
        mistakes=check_entropy.mistakes,
        explain=explainer(("batch", "row")),
    )
