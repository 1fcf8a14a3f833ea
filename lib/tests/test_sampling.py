"""Tests of attnbook.sampling: temperature, top-k and top-p (nucleus) sampling,
against brute-force references written from the definitions on explicit
distributions."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from attnbook import sampling


def brute_top_k(probs: list[float], k: int) -> list[float]:
    """Keep a token when fewer than k tokens are strictly more likely; renormalise."""
    kept = [p if sum(q > p for q in probs) < k else 0.0 for p in probs]
    return [p / sum(kept) for p in kept]


def brute_top_p(probs: list, p) -> list:
    """The nucleus by its definition (Holtzman et al. 2020): among all sets of
    tokens whose mass reaches p, those with the fewest tokens; of these the one
    with the largest mass. Renormalise over it. Exact with Fraction inputs."""
    n = len(probs)
    for size in range(1, n + 1):
        reaching = [
            s for s in itertools.combinations(range(n), size) if sum(probs[i] for i in s) >= p
        ]
        if reaching:
            best = max(reaching, key=lambda s: sum(probs[i] for i in s))
            mass = sum(probs[i] for i in best)
            return [probs[i] / mass if i in best else 0.0 for i in range(n)]
    raise AssertionError("unreachable: the whole vocabulary has mass 1")


@st.composite
def distributions(draw):
    n = draw(st.integers(1, 7))
    weights = draw(
        st.lists(st.integers(1, 1000), min_size=n, max_size=n, unique=True)
    )  # distinct probabilities: the nucleus is then unique
    total = sum(weights)
    return [Fraction(w, total) for w in weights]  # exact, so the reference is exact


@given(distributions(), st.integers(1, 8))
@settings(max_examples=80, deadline=None)
def test_top_k_matches_the_brute_force_reference(probs, k):
    logits = torch.tensor([float(q) for q in probs], dtype=torch.float64).log()
    got = sampling.next_token_probs(logits, top_k=k)
    expected = [float(q) for q in brute_top_k(probs, k)]
    torch.testing.assert_close(got, torch.tensor(expected, dtype=torch.float64))


@given(distributions(), st.sampled_from([0.05, 0.3, 0.5, 0.75, 0.9, 0.99, 1.0]))
@settings(max_examples=80, deadline=None)
def test_top_p_matches_the_brute_force_reference(probs, p):
    p = Fraction(p).limit_denominator(1000)
    # A set of tokens whose mass is exactly p is a boundary that float sums
    # may round either way; leave such draws out.
    assume(all(sum(s) != p for r in range(1, len(probs)) for s in itertools.combinations(probs, r)))
    logits = torch.tensor([float(q) for q in probs], dtype=torch.float64).log()
    got = sampling.next_token_probs(logits, top_p=float(p))
    expected = [float(q) for q in brute_top_p(probs, p)]
    torch.testing.assert_close(got, torch.tensor(expected, dtype=torch.float64))


def test_an_explicit_nucleus():
    # 0.5 + 0.3 = 0.8 >= 0.75: the nucleus is the two most likely tokens.
    logits = torch.tensor([0.1, 0.5, 0.05, 0.3, 0.05]).log()
    got = sampling.next_token_probs(logits, top_p=0.75)
    torch.testing.assert_close(got, torch.tensor([0, 0.625, 0, 0.375, 0], dtype=torch.float64))
    # At exactly 0.8 the same two suffice; just above it, the third joins.
    assert int((sampling.next_token_probs(logits, top_p=0.8) > 0).sum()) == 2
    assert int((sampling.next_token_probs(logits, top_p=0.81) > 0).sum()) == 3


def test_a_tie_at_the_nucleus_boundary_keeps_the_lower_indices():
    # Four equal tokens and p = 0.5: two are kept, and they are tokens 0 and 1
    # (the live explorer of chapter 10 takes ties in the same order).
    for vocab, p, kept in [(4, 0.5, [0, 1]), (6, 0.4, [0, 1, 2]), (64, 0.1, list(range(7)))]:
        got = sampling.next_token_probs(torch.zeros(vocab), top_p=p)
        assert torch.nonzero(got).flatten().tolist() == kept, (vocab, p)


def test_temperature_comes_first_and_rows_are_independent():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 4, 9, generator=g)
    T, k, p = 0.7, 4, 0.8
    got = sampling.next_token_probs(logits, T, top_k=k, top_p=p)
    assert got.shape == (3, 4, 9)
    for row, out in zip(logits.reshape(-1, 9), got.reshape(-1, 9)):
        probs = torch.softmax(row.double() / T, -1).tolist()
        expected = brute_top_p(brute_top_k(probs, k), p)
        torch.testing.assert_close(out, torch.tensor(expected, dtype=torch.float64))


def test_ties_with_the_kth_token_are_kept():
    logits = torch.tensor([2.0, 1.0, 1.0, 0.0])
    assert (sampling.top_k_filter(logits, 2) > -math.inf).tolist() == [True, True, True, False]


def test_filters_do_not_modify_their_input():
    logits = torch.tensor([[0.3, -1.0, 2.0]])
    copy = logits.clone()
    sampling.top_k_filter(logits, 1)
    sampling.top_p_filter(logits, 0.5)
    sampling.next_token_probs(logits, 0.5, 1, 0.5)
    assert torch.equal(logits, copy)


def test_bad_arguments():
    logits = torch.zeros(4)
    with pytest.raises(ValueError, match="top_k must be an integer >= 1 or None, got 0"):
        sampling.top_k_filter(logits, 0)
    with pytest.raises(TypeError, match="top_k must be an integer >= 1 or None, got 2.5"):
        sampling.next_token_probs(logits, top_k=2.5)
    with pytest.raises(ValueError, match=r"top_p must lie in \(0, 1\] or be None, got 0.0"):
        sampling.top_p_filter(logits, 0.0)
    with pytest.raises(ValueError, match=r"top_p must lie in \(0, 1\] or be None, got 1.5"):
        sampling.next_token_probs(logits, top_p=1.5)
    with pytest.raises(ValueError, match="temperature must be a finite number > 0, got 0"):
        sampling.next_token_probs(logits, temperature=0)


def test_draw_follows_the_distribution_and_never_picks_probability_zero():
    probs = torch.tensor([[0.0, 0.5, 0.0, 0.3, 0.2, 0.0]], dtype=torch.float64)
    g = torch.Generator().manual_seed(0)
    draws = torch.cat([sampling.draw(probs, g) for _ in range(20_000)])[:, 0]
    counts = torch.bincount(draws, minlength=6).double() / 20_000
    assert counts[[0, 2, 5]].sum() == 0
    # Each frequency within 4 standard errors of its probability.
    torch.testing.assert_close(counts, probs[0], atol=4 * (0.25 / 20_000) ** 0.5, rtol=0)


def test_draw_inverts_the_cumulative_distribution_and_the_margin_sees_the_same_numbers():
    probs = torch.tensor([[0.1, 0.2, 0.3, 0.4], [0.25, 0.25, 0.25, 0.25]], dtype=torch.float64)
    tokens = sampling.draw(probs, torch.Generator().manual_seed(5))
    u = 1.0 - torch.rand(2, 1, dtype=torch.float64, generator=torch.Generator().manual_seed(5))
    cdf = probs.cumsum(-1)
    expected = [[next(i for i in range(4) if cdf[r, i] >= u[r, 0])] for r in range(2)]
    assert tokens.tolist() == expected
    margin = sampling.draw_margin(probs, torch.Generator().manual_seed(5))
    torch.testing.assert_close(margin, (cdf - u).abs().min(-1).values)
