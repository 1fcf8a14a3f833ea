"""Tests of chapter 11's checkers (induction heads) in attnbook.checks.

Each checker must accept a correct answer written independently of the library
(loops over queries) and reject every answer in its list of known mistakes,
naming a failing case.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnbook import checks

# ---------------------------------------------------------------- reader solutions


def previous_ok(weights):
    batch, heads, n, _ = weights.shape
    total = torch.zeros(heads, dtype=weights.dtype)
    for i in range(1, n):
        total += weights[:, :, i, i - 1].sum(0)
    return total / (batch * (n - 1))


def previous_diagonal(weights):  # scores attention to the query itself
    return weights.diagonal(dim1=-2, dim2=-1).mean(dim=(0, 2))


def previous_with_query_0(weights):  # counts query 0, which has no previous token
    batch, heads, n, _ = weights.shape
    return previous_ok(weights) * (n - 1) / n


def previous_from_query_0(weights):  # key 0 - 1 of query 0 is key -1, the last key
    batch, heads, n, _ = weights.shape
    total = torch.zeros(heads, dtype=weights.dtype)
    for i in range(n):
        total += weights[:, :, i, i - 1].sum(0)
    return total / (batch * (n - 1))


def previous_per_sequence(weights):  # forgets to average over the batch
    return weights.diagonal(offset=-1, dim1=-2, dim2=-1).mean(-1)


def induction_ok(weights, first, second, segment):
    batch, heads = weights.shape[:2]
    total = torch.zeros(heads, dtype=weights.dtype)
    for b in range(batch):
        for j in range(segment):
            total += weights[b, :, int(second[b]) + j, int(first[b]) + j + 1]
    return total / (batch * segment)


def induction_on_copy(weights, first, second, segment):  # looks at the earlier copy itself
    batch, heads = weights.shape[:2]
    total = torch.zeros(heads, dtype=weights.dtype)
    for b in range(batch):
        for j in range(segment):
            total += weights[b, :, int(second[b]) + j, int(first[b]) + j]
    return total / (batch * segment)


def induction_previous_diagonal(weights, first, second, segment):  # the previous-token score
    return weights.diagonal(offset=-1, dim1=-2, dim2=-1).mean(dim=(0, 2))


def induction_first_sequence(weights, first, second, segment):  # uses sequence 0's copies
    batch = weights.shape[0]
    return induction_ok(weights, first[:1].repeat(batch), second[:1].repeat(batch), segment)


# name -> (correct answer, [(known mistake, a case it must fail)])
CHECKERS = {
    "check_previous_token_score": (
        previous_ok,
        [
            (previous_diagonal, "a perfect previous-token head scores 1"),
            (previous_with_query_0, "a perfect previous-token head scores 1"),
            (previous_from_query_0, "a perfect previous-token head scores 1"),
            (previous_per_sequence, "random causal weights, batch 3, 2 heads, 7 positions"),
        ],
    ),
    "check_induction_score": (
        induction_ok,
        [
            (
                induction_on_copy,
                "three hand-made heads: induction, attend to the earlier copy, previous token",
            ),
            (
                induction_previous_diagonal,
                "three hand-made heads: induction, attend to the earlier copy, previous token",
            ),
            (
                induction_first_sequence,
                "random causal weights, batch 3 with different copies, 2 heads",
            ),
        ],
    ),
}

MISTAKES = [
    pytest.param(name, broken, case, id=f"{name}-{broken.__name__}")
    for name, (_, wrongs) in CHECKERS.items()
    for broken, case in wrongs
]


@pytest.mark.parametrize("name", sorted(CHECKERS))
def test_checker_passes_a_correct_answer(name):
    correct, _ = CHECKERS[name]
    report = getattr(checks, name)(correct)
    assert report.passed and report.failures == []
    assert repr(report).splitlines()[0] == f"{name}: all {len(report.lines)} cases passed."


@pytest.mark.parametrize(("name", "broken", "case"), MISTAKES)
def test_checker_rejects_a_known_mistake_and_names_the_case(name, broken, case):
    report = getattr(checks, name)(broken)
    assert not report.passed
    assert case in report.failures
    assert any(line.startswith("  FAIL  ") and case in line for line in repr(report).splitlines())
    # Each of these independently written mistakes is one the checker knows: it is
    # named in one line (in place of the case hints), with the section to read.
    assert "Likely mistake" in repr(report) and "hint:" not in repr(report)
    assert 'see "Finding heads by their patterns" in Induction Heads' in repr(report)


@pytest.mark.parametrize("name", sorted(CHECKERS))
def test_checker_reports_wrong_types_and_shapes(name):
    report = getattr(checks, name)(lambda *args: [[0.0]])
    assert all("expected a torch.Tensor, got list" in line for line in report.lines)
    report = getattr(checks, name)(lambda *args: torch.zeros(17, 1, 3))
    assert all("expected shape" in line for line in report.lines)


@pytest.mark.parametrize("name", sorted(CHECKERS))
def test_checker_catches_in_place_modification(name):
    correct, _ = CHECKERS[name]

    def sneaky(weights, *rest):
        result = correct(weights.clone(), *rest)
        weights.mul_(0.5)
        return result

    report = getattr(checks, name)(sneaky)
    assert "the function modified its input in place" in repr(report)


@pytest.mark.parametrize("name", sorted(CHECKERS))
def test_checker_leaves_the_global_rng_alone(name):
    correct, _ = CHECKERS[name]
    torch.manual_seed(0)
    state = torch.random.get_rng_state()
    getattr(checks, name)(correct)
    assert torch.equal(torch.random.get_rng_state(), state)


@pytest.mark.parametrize("name", sorted(CHECKERS))
@given(error=st.floats(1e-2, 1e3) | st.floats(-1e3, -1e-2))
@settings(max_examples=10, deadline=None)
def test_checker_rejects_any_visible_error(name, error):
    correct, _ = CHECKERS[name]
    report = getattr(checks, name)(lambda *args: correct(*args) + error)
    assert len(report.failures) == len(report.lines)


@pytest.mark.parametrize("name", sorted(CHECKERS))
@given(error=st.floats(-1e-7, 1e-7))
@settings(max_examples=10, deadline=None)
def test_checker_accepts_rounding_errors(name, error):
    correct, _ = CHECKERS[name]
    assert getattr(checks, name)(lambda *args: correct(*args) + error)
