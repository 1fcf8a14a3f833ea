"""Parts I and II: the slips a student plausibly makes in each checked exercise get
their own diagnosis, and a slip no checker knows is read in plain words.

Each slip is written here as a student would write it, independently of the
checkers' own ``Mistake`` functions (test_checks_diagnosis.py runs those), and
must be named by the checker as the mistake it is. A slip that matches no known
mistake must get a report that names the first failing case's first wrong
entry by its axes, expected against got, and no hint written for another case.
"""

from __future__ import annotations

import math

import pytest
import torch

from attnbook import checks


def _keep(X, valid_lens):
    """The (batch, queries, keys) mask of 1-D or 2-D valid lengths."""
    batch, queries, keys = X.shape
    lens = valid_lens if valid_lens.dim() == 2 else valid_lens[:, None].expand(batch, queries)
    return torch.arange(keys) < lens[..., None]


def _renorm(X, valid_lens, sum_dim=-1):
    keep = _keep(X, valid_lens)
    shift = torch.where(keep, X, X.amin(dim=-1, keepdim=True)).amax(dim=-1, keepdim=True)
    e = torch.exp(torch.where(keep, X - shift, 0.0)) * keep
    return e / e.sum(dim=sum_dim, keepdim=True).clamp_min(torch.finfo(X.dtype).tiny)


def _causal_scores(X):
    n = X.shape[1]
    return X @ X.transpose(1, 2), torch.ones(n, n).tril().bool()  # (batch, n, n), (n, n)


def masked_fill_zero(X, valid_lens):
    return torch.softmax(X.masked_fill(~_keep(X, valid_lens), 0), dim=-1)


def masked_fill_zero_then_zeros(X, valid_lens):
    keep = _keep(X, valid_lens)
    return torch.softmax(torch.where(keep, X, torch.zeros_like(X)), dim=-1) * keep


def csa_future_zero(X):
    scores, past = _causal_scores(X)
    weights = torch.softmax(torch.where(past, scores / math.sqrt(X.shape[-1]), 0.0), dim=-1)
    return weights @ X


def csa_softmax_dim1(X):
    scores, past = _causal_scores(X)
    return torch.softmax((scores / X.shape[-1] ** 0.5).masked_fill(~past, -1e9), dim=1) @ X


def csa_mask_after(X):
    scores, past = _causal_scores(X)
    return (torch.softmax(scores / math.sqrt(X.shape[-1]), dim=-1) * past) @ X


def csa_over_d(X):
    scores, past = _causal_scores(X)
    return torch.softmax((scores / X.shape[-1]).masked_fill(~past, float("-inf")), dim=-1) @ X


def csa_weights(X):
    scores, past = _causal_scores(X)
    return torch.softmax((scores / math.sqrt(X.shape[-1])).masked_fill(~past, -1e9), dim=-1)


SLIPS = [
    # Queries, Keys and Values
    ("check_softmax", "one sum for the whole tensor", lambda X: X.exp() / X.exp().sum()),
    # The log of the softmax, written out: torch.log_softmax itself is refused.
    ("check_softmax", "log-softmax", lambda X: X - torch.logsumexp(X, dim=-1, keepdim=True)),
    ("check_normalize", "divides by the mean", lambda S: S / S.mean(-1, keepdim=True)),
    ("check_normalize", "divides by the length", lambda S: S / S.norm(dim=1, keepdim=True)),
    # Attention Pooling by Similarity
    (
        "check_gaussian_weights",
        "not normalised",
        lambda xq, xt, w: torch.exp(-0.5 * ((xq.unsqueeze(1) - xt.unsqueeze(0)) / w) ** 2),
    ),
    (
        "check_gaussian_weights",
        "softmax over every entry",
        lambda xq, xt, w: (
            torch.exp(-0.5 * ((xq[:, None] - xt[None]) / w) ** 2)
            / torch.exp(-0.5 * ((xq[:, None] - xt[None]) / w) ** 2).sum()
        ),
    ),
    # Masked Softmax and Batched Attention
    ("check_masked_softmax", "fill 0", masked_fill_zero),
    ("check_masked_softmax", "fill 0, then zeros", masked_fill_zero_then_zeros),
    (
        "check_masked_softmax",
        "summed over the queries",
        lambda X, lens: _renorm(X, lens, sum_dim=1),
    ),
    ("check_causal_lengths", "the mask itself", lambda b, q: torch.tril(torch.ones(b, q, q))),
    (
        "check_causal_lengths",
        "one length too many",
        lambda b, q: torch.stack([torch.arange(q + 1)] * b),
    ),
    # Attention Scoring Functions
    (
        "check_scaled_dot_product",
        "multiplied by sqrt(d)",
        lambda Q, K, V: torch.softmax(Q @ K.mT * Q.shape[-1] ** 0.5, dim=-1) @ V,
    ),
    (
        "check_scaled_dot_product",
        "no softmax",
        lambda Q, K, V: (Q @ K.mT / math.sqrt(K.shape[-1])) @ V,
    ),
    (
        "check_scaled_dot_product",
        "the weights, not the output",
        lambda Q, K, V: torch.softmax(Q @ K.mT / math.sqrt(Q.shape[-1]), dim=2),
    ),
    ("check_entropy", "keepdim", lambda p: -(torch.xlogy(p, p)).sum(-1, keepdim=True)),
    ("check_entropy", "one number", lambda p: -torch.xlogy(p, p).sum()),
    (
        "check_entropy",
        "log base 10",
        lambda p: -(p * torch.log10(p.clamp_min(1e-30))).sum(-1),
    ),
    # Multi-Head Attention
    ("check_mha_parameter_count", "one bias vector", lambda D, h, b: 4 * D * D + b * D),
    (  # a student's count: 4 times the answer at h = 5, with no diagnosis line
        "check_mha_parameter_count",
        "every head its own W_q, W_k, W_v",
        lambda D, h, b: 3 * h * D * D + D * D + ((3 * h + 1) * D if b else 0),
    ),
    (
        "check_mha_parameter_count",
        "every head its own W_q, W_k, W_v, four biases",
        lambda D, h, b: 3 * h * D * D + D * D + (4 * D if b else 0),
    ),
    (
        "check_mha_parameter_count",
        "one head's slice",
        lambda D, h, b: 4 * (D * (D // h) + (D if b else 0)),
    ),
    ("check_head_lengths", "repeat", lambda lens, h: lens.repeat(h)),
    (
        "check_head_lengths",
        "2-D repeated along the queries",
        lambda lens, h: torch.repeat_interleave(lens, h, dim=lens.dim() - 1),
    ),
    # Self-Attention and Positional Encoding
    ("check_causal_self_attention", "divided by d", csa_over_d),
    ("check_causal_self_attention", "softmax over the queries", csa_softmax_dim1),
    ("check_causal_self_attention", "future scored 0", csa_future_zero),
    ("check_causal_self_attention", "masked after the softmax", csa_mask_after),
    ("check_causal_self_attention", "the weights, not the output", csa_weights),
    # Attention That Learns
    (
        "check_right_key_accuracy",
        "a Python number",
        lambda w, i: float((w.argmax(-1) == i).sum()) / len(i),
    ),
]


@pytest.mark.parametrize(
    ("checker", "mistake", "slip"), SLIPS, ids=[f"{c}-{m}" for c, m, _ in SLIPS]
)
def test_a_plausible_slip_gets_its_own_diagnosis(checker, mistake, slip):
    report = getattr(checks, checker)(slip)
    assert not report.passed
    assert report.mistake == mistake, repr(report)
    diagnosis = dict(checks.known_mistakes()[checker])[mistake]
    assert diagnosis in report.diagnosis


def test_a_masked_softmax_that_fills_with_0_is_not_told_about_2d_lengths():
    """The classic slip of the chapter (issue 47): the report names the fill of 0,
    not the 1-D versus 2-D lengths of the first case's hint."""
    text = repr(checks.check_masked_softmax(masked_fill_zero))
    assert "exp(0) = 1" in text
    assert "2-D one a single query" not in text and "1-D lengths only" not in text


# Slips that no checker knows: what differs in the first failing case is read.
UNKNOWN = [
    (
        "check_softmax",
        lambda X: torch.exp(X - X.max()) / torch.exp(X - X.max()).sum(0, keepdim=True),
        "row 0, column 0",
    ),
    (
        "check_gaussian_weights",  # a Laplace kernel
        lambda xq, xt, w: torch.softmax(-(xq[:, None] - xt[None]).abs() / w, dim=-1),
        "query 0, key 0",
    ),
    (
        "check_masked_softmax",  # the lengths counted from the end
        lambda X, lens: _renorm(X.flip(-1), lens).flip(-1),
        "sequence 0, query 0, key 0",
    ),
    (
        "check_causal_lengths",  # lengths counted from 3
        lambda b, q: torch.arange(3, q + 3).repeat(b, 1),
        "sequence 0, query 0",
    ),
    (
        "check_head_lengths",  # the lengths shared out among the heads
        lambda lens, h: torch.repeat_interleave(lens // h, h, dim=0),
        "sequence x head row 0",
    ),
    (
        "check_two_part_targets",  # the halves split one feature late
        lambda v, f, s: torch.cat(
            [
                v[torch.arange(len(f)), f, : v.shape[-1] // 2 + 1],
                v[torch.arange(len(f)), s, v.shape[-1] // 2 + 1 :],
            ],
            -1,
        )[:, None],
        "example 0, query 0, feature 1",
    ),
]


@pytest.mark.parametrize(("checker", "slip", "where"), UNKNOWN, ids=[c for c, _, _ in UNKNOWN])
def test_an_unknown_slip_is_read_in_the_first_failing_case(checker, slip, where):
    report = getattr(checks, checker)(slip)
    assert not report.passed and report.mistake is None
    text = repr(report)
    first = next(line for line in report.lines if line.startswith("  FAIL  "))
    assert f"the first wrong entry is at {where}: expected " in first, text
    # The case hints restate the method for whatever bug a case was built to
    # catch: they are left out, and only their pointer to the chapter stays.
    assert "(hint: " not in text
    assert 'see "' in first


# ---------------------------------------------------------------- stability, every seed


def masked_shift_from_0(X, valid_lens):
    """The exercise's recipe with the masked scores set to 0 before the maximum."""
    keep = _keep(X, valid_lens)
    shift = torch.where(keep, X, torch.zeros_like(X)).amax(dim=-1, keepdim=True)
    e = torch.exp(torch.where(keep, X - shift, 0.0)) * keep
    return e / e.sum(dim=-1, keepdim=True).clamp_min(torch.finfo(X.dtype).tiny)


@pytest.mark.parametrize("seed", range(5))
def test_a_masked_softmax_shift_that_never_drops_below_0_is_named_under_every_seed(seed):
    report = checks.check_masked_softmax(masked_shift_from_0, seed=seed)
    assert not report.passed
    assert report.mistake == "masked as 0 in the maximum", repr(report)
    assert "near -200" in " ".join(report.failures)


@pytest.mark.parametrize("seed", range(5))
def test_masked_softmax_has_rows_near_minus_200_and_large_ones_under_every_seed(seed):
    report = checks.check_masked_softmax(_renorm, seed=seed)
    assert report.passed, repr(report)
    stability = [
        line for line in report.lines if "near -200 and up to 100" in line and "ok" in line
    ]
    assert len(stability) == 1


# ---------------------------------------------------------------- the mask applied after exp
# Cold reader, parts 1-2: the shift taken over a -inf fill, then the mask applied
# after exponentiating; named only when the shift was the solution's own.


def _shift_over_minus_inf(X, valid_lens):
    keep = _keep(X, valid_lens)
    return keep, X.masked_fill(~keep, float("-inf")).amax(dim=-1, keepdim=True)


def masked_where_after_exp(X, valid_lens):
    keep, shift = _shift_over_minus_inf(X, valid_lens)
    e = torch.where(keep, torch.exp(X - shift), 0.0)
    return e / e.sum(dim=-1, keepdim=True).clamp_min(torch.finfo(X.dtype).tiny)


def masked_times_keep_after_exp(X, valid_lens):
    keep, shift = _shift_over_minus_inf(X, valid_lens)
    e = torch.exp(X - shift) * keep
    return e / e.sum(dim=-1, keepdim=True).clamp_min(torch.finfo(X.dtype).tiny)


@pytest.mark.parametrize(
    ("slip", "mistake", "failures"),
    [
        (masked_where_after_exp, "where after exp, -inf in the maximum", 1),
        (masked_times_keep_after_exp, "zeroing after exp, -inf in the maximum", None),
    ],
    ids=["torch.where", "times keep"],
)
def test_a_mask_applied_after_exp_is_named_whatever_the_shift(slip, mistake, failures):
    report = checks.check_masked_softmax(slip)
    assert report.mistake == mistake, repr(report)
    assert "after exponentiating" in report.diagnosis
    if failures is not None:  # the values are right: only the gradient case fails
        assert len(report.failures) == failures and "gradients" in report.failures[0]
