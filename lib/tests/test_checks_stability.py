"""Softmax-like checkers catch stability slips under every seed.

A softmax is the same for every shift of its scores in exact arithmetic, so a
softmax written as exp(s) / sum(exp(s)) passes cases of small scores and breaks
in float32 only where exp underflows (below -103) or overflows (beyond 88.7).
Each slip here is the book's solution of its exercise with torch.softmax
replaced by that unshifted softmax; the old checkers accepted every one under
every seed. (Online softmax, tiled attention and masked softmax have their own
tests in test_checks_scale.py and test_checks_slips.py.)
"""

from __future__ import annotations

import math

import pytest
import torch

from attnbook import checks, scoring


def unshifted(scores, dim=-1):
    e = torch.exp(scores)
    return e / e.sum(dim=dim, keepdim=True)


# The book's solutions (scoring-functions, self-attention-positional-encoding,
# causal-language-model and cross-attention notebooks), and each with the slip.


def one_line_attention(Q, K, V, softmax=torch.softmax):
    return softmax(Q @ K.transpose(-2, -1) / Q.shape[-1] ** 0.5, dim=-1) @ V


def causal_self_attention(X):
    batch, n, _ = X.shape
    lengths = torch.arange(1, n + 1).repeat(batch, 1)  # (batch, queries)
    return scoring.DotProductAttention()(X, X, X, lengths)


def causal_self_attention_unshifted(X):
    n = X.shape[1]
    scores = X @ X.transpose(1, 2) / math.sqrt(X.shape[-1])
    future = torch.ones(n, n, dtype=torch.bool).triu(1)
    return unshifted(scores.masked_fill(future, -math.inf)) @ X


def kv_step(K_cache, V_cache, q, k, v, softmax=torch.softmax):
    K_cache = torch.cat([K_cache, k.unsqueeze(0)])  # (t + 1, p)
    V_cache = torch.cat([V_cache, v.unsqueeze(0)])  # (t + 1, p_v)
    weights = softmax(K_cache @ q / math.sqrt(q.shape[0]), dim=0)  # (t + 1,)
    return weights @ V_cache, K_cache, V_cache


def cross_attention_weights(s, H, source_lens, W_s, W_h, v, softmax=torch.softmax):
    features = torch.tanh((s @ W_s.T).unsqueeze(1) + H @ W_h.T)  # (b, n, d_a)
    scores = features @ v  # (b, n)
    padding = torch.arange(H.shape[1]) >= source_lens[:, None]  # (b, n)
    return softmax(scores.masked_fill(padding, float("-inf")), dim=-1)


CASES = [
    (
        "check_scaled_dot_product",
        one_line_attention,
        lambda Q, K, V: one_line_attention(Q, K, V, softmax=unshifted),
        "no shift",
    ),
    (
        "check_causal_self_attention",
        causal_self_attention,
        causal_self_attention_unshifted,
        "no shift",
    ),
    ("check_kv_cache", kv_step, lambda *a: kv_step(*a, softmax=unshifted), "no shift"),
    (
        "check_cross_attention_weights",
        cross_attention_weights,
        lambda *a: cross_attention_weights(*a, softmax=unshifted),
        "no_shift",
    ),
]
IDS = [name for name, *_ in CASES]


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize(("name", "right", "slip", "mistake"), CASES, ids=IDS)
def test_an_unshifted_softmax_is_rejected_and_named_under_every_seed(
    name, right, slip, mistake, seed
):
    report = getattr(checks, name)(slip, seed=seed)
    assert not report.passed
    assert report.mistake == mistake, repr(report)
    assert all("(float32)" in failure for failure in report.failures)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize(("name", "right", "slip", "mistake"), CASES, ids=IDS)
def test_the_books_solution_passes_the_far_scores_under_every_seed(
    name, right, slip, mistake, seed
):
    report = getattr(checks, name)(right, seed=seed)
    assert report.passed, repr(report)
    assert any("large scores" in line or "near 100" in line for line in report.lines)
    if name != "check_causal_self_attention":  # there a token's score with itself is >= 0
        assert any("near -200" in line for line in report.lines)


def test_far_scores_refuse_a_size_or_kind_they_cannot_make_exact():
    from attnbook.checks._stability import far_queries_keys

    g = torch.Generator().manual_seed(0)
    with pytest.raises(ValueError, match="d must be 4 or 16"):
        far_queries_keys(g, 1, 2, 2, 8, "negative")
    with pytest.raises(ValueError, match="kind must be"):
        far_queries_keys(g, 1, 2, 2, 4, "small")
    for d in (4, 16):
        for kind, low, high in (("negative", -230, -170), ("large", -110, 115)):
            q, k = far_queries_keys(g, 2, 3, 5, d, kind)
            scores = q @ k.mT / math.sqrt(d)
            assert low <= scores.min() and scores.max() <= high
            assert torch.equal(q, q.round()) and torch.equal(k, k.round())
