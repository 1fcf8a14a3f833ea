"""Tests of attnbook.checks: each checker passes a correct answer and names the failing case."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnbook import checks
from attnbook.checks import CheckReport

# ---------------------------------------------------------------- reader solutions
# Correct answers, written independently of the library, and typical mistakes.


def softmax_ok(X):
    e = torch.exp(X - X.max(dim=-1, keepdim=True).values)
    return e / e.sum(dim=-1, keepdim=True)


def softmax_overflows(X):  # forgets to subtract the maximum
    return torch.exp(X) / torch.exp(X).sum(dim=-1, keepdim=True)


def softmax_wrong_axis(X):
    e = torch.exp(X - X.max())
    return e / e.sum(dim=0, keepdim=True)


def normalize_ok(scores):
    return scores / scores.sum(dim=-1, keepdim=True)


def normalize_by_max(scores):
    return scores / scores.max(dim=-1, keepdim=True).values


def epanechnikov_ok(u):
    return torch.clamp(1 - u.abs(), min=0)


def epanechnikov_unclamped(u):
    return 1 - u.abs()


def gaussian_weights_ok(x_query, x_train, width):
    rows = []
    for q in x_query.tolist():
        sims = [math.exp(-(((q - x) / width) ** 2) / 2) for x in x_train.tolist()]
        rows.append([s / sum(sims) for s in sims])
    return torch.tensor(rows)


def gaussian_weights_no_half(x_query, x_train, width):
    scores = -(((x_query[:, None] - x_train[None, :]) / width) ** 2)
    return torch.softmax(scores, dim=-1)


def masked_softmax_ok(X, valid_lens):
    keys = X.shape[-1]
    lens = valid_lens if valid_lens.dim() == 2 else valid_lens[:, None].expand(X.shape[:2])
    mask = torch.arange(keys)[None, None, :] < lens[..., None]
    return torch.softmax(X.masked_fill(~mask, float("-inf")), dim=-1)


def masked_softmax_1d_only(X, valid_lens):
    mask = torch.arange(X.shape[-1])[None, None, :] < valid_lens[:, None, None]
    return torch.softmax(X.masked_fill(~mask, float("-inf")), dim=-1)


def masked_softmax_ignores_lengths(X, valid_lens):
    return torch.softmax(X, dim=-1)


def causal_ok(batch, queries):
    return torch.tensor([[i + 1 for i in range(queries)] for _ in range(batch)])


def causal_off_by_one(batch, queries):
    return torch.tensor([list(range(queries))] * batch)


def sdp_ok(Q, K, V):
    scores = Q @ K.transpose(1, 2) / math.sqrt(Q.shape[-1])
    return torch.softmax(scores, dim=-1) @ V


def sdp_unscaled(Q, K, V):
    return torch.softmax(Q @ K.transpose(1, 2), dim=-1) @ V


def entropy_ok(p):
    return -torch.xlogy(p, p).sum(dim=-1)


def entropy_naive(p):
    return -(p * p.log()).sum(dim=-1)


CHECKERS = {
    "check_softmax": (softmax_ok, softmax_overflows, "very large and very small scores"),
    "check_normalize": (normalize_ok, normalize_by_max, "random nonnegative scores"),
    "check_epanechnikov": (epanechnikov_ok, epanechnikov_unclamped, "|u| >= 1 gives exactly 0"),
    "check_gaussian_weights": (gaussian_weights_ok, gaussian_weights_no_half, "width 1.0"),
    "check_masked_softmax": (
        masked_softmax_ok,
        masked_softmax_ignores_lengths,
        "1-D lengths [2, 3]",
    ),
    "check_causal_lengths": (causal_ok, causal_off_by_one, "batch=1, queries=4"),
    "check_scaled_dot_product": (sdp_ok, sdp_unscaled, "Q (3, 5, 16)"),
    "check_entropy": (entropy_ok, entropy_naive, "one-hot rows give 0"),
}


# ---------------------------------------------------------------- every checker


@pytest.mark.parametrize("name", sorted(CHECKERS))
def test_checker_passes_a_correct_answer(name):
    correct, _, _ = CHECKERS[name]
    report = getattr(checks, name)(correct)
    assert isinstance(report, CheckReport)
    assert report.passed and bool(report)
    assert report.failures == []
    assert len(report.lines) >= 3
    assert all(line.startswith("  ok    ") for line in report.lines)
    assert repr(report).splitlines()[0] == f"{name}: all {len(report.lines)} cases passed."


@pytest.mark.parametrize("name", sorted(CHECKERS))
def test_checker_fails_a_broken_answer_and_names_the_case(name):
    _, broken, case = CHECKERS[name]
    report = getattr(checks, name)(broken)
    assert not report.passed and not bool(report)
    assert any(case in failure for failure in report.failures)
    text = repr(report)
    head = f"{name}: {len(report.failures)} of {len(report.lines)} cases failed."
    assert text.splitlines()[0] == head
    assert any(line.startswith("  FAIL  ") and case in line for line in text.splitlines())


@pytest.mark.parametrize("name", sorted(CHECKERS))
def test_checker_reports_exceptions_wrong_types_and_shapes(name):
    checker = getattr(checks, name)

    def raises(*args):
        raise ZeroDivisionError("oops")

    report = checker(raises)
    assert len(report.failures) == len(report.lines)
    assert all("raised ZeroDivisionError: oops" in line for line in report.lines)

    report = checker(lambda *args: [[0.0]])
    assert all("expected a torch.Tensor, got list" in line for line in report.lines)

    report = checker(lambda *args: torch.zeros(17, 1, 3))
    assert all("expected shape" in line and "got (17, 1, 3)" in line for line in report.lines)


@pytest.mark.parametrize("name", sorted(CHECKERS))
def test_checker_catches_in_place_modification(name):
    correct, _, _ = CHECKERS[name]

    def sneaky(*args):
        result = correct(*[a.clone() if torch.is_tensor(a) else a for a in args])
        for a in args:
            if torch.is_tensor(a) and a.is_floating_point():
                a.add_(1.0)
        return result

    report = getattr(checks, name)(sneaky)
    if name == "check_causal_lengths":  # takes only integers: nothing to modify
        assert report.passed
        return
    assert not report.passed
    assert "the function modified its input in place" in repr(report)


@pytest.mark.parametrize("name", sorted(CHECKERS))
def test_checker_rejects_non_callables(name):
    with pytest.raises(TypeError, match=r"fn must be a function, got 42"):
        getattr(checks, name)(42)


@pytest.mark.parametrize("name", sorted(CHECKERS))
def test_checker_leaves_the_global_rng_alone(name):
    correct, _, _ = CHECKERS[name]
    torch.manual_seed(0)
    state = torch.random.get_rng_state()
    getattr(checks, name)(correct)
    assert torch.equal(torch.random.get_rng_state(), state)


@pytest.mark.parametrize("name", sorted(CHECKERS))
@given(error=st.floats(1e-3, 1e3) | st.floats(-1e3, -1e-3))
@settings(max_examples=10)
def test_checker_rejects_any_visible_error(name, error):
    correct, _, _ = CHECKERS[name]
    report = getattr(checks, name)(lambda *args: correct(*args) + error)
    assert len(report.failures) == len(report.lines)
    assert all("expected" in line and "at index" in line for line in report.lines)


@pytest.mark.parametrize("name", sorted(CHECKERS))
@given(error=st.floats(-1e-7, 1e-7))
@settings(max_examples=10)
def test_checker_accepts_rounding_errors(name, error):
    correct, _, _ = CHECKERS[name]
    assert getattr(checks, name)(lambda *args: correct(*args).double() + error)


# ---------------------------------------------------------------- specific mistakes


def test_check_softmax_hint_on_overflow():
    report = checks.check_softmax(softmax_overflows)
    assert report.failures == ["very large and very small scores"]
    assert "the result contains NaN" in repr(report)
    assert "hint: exp(1000) overflows" in repr(report)


def test_check_softmax_wrong_axis():
    report = checks.check_softmax(softmax_wrong_axis)
    assert "a random 10x10 matrix" in report.failures
    assert "expected" in repr(report) and "at index" in repr(report)


def test_check_masked_softmax_needs_2d_lengths():
    report = checks.check_masked_softmax(masked_softmax_1d_only)
    assert report.failures == ["2-D lengths [[1, 3], [2, 4]]"]


def test_check_masked_softmax_ignoring_lengths_only_passes_full_rows():
    report = checks.check_masked_softmax(masked_softmax_ignores_lengths)
    assert "every key valid" not in report.failures
    assert len(report.failures) == 3


def test_check_epanechnikov_unclamped_names_both_cases():
    report = checks.check_epanechnikov(epanechnikov_unclamped)
    assert "|u| >= 1 gives exactly 0" in report.failures
    assert "u from -2.5 to 2.5" in report.failures
    assert "u = 0 gives 1" not in report.failures


def test_check_causal_lengths_accepts_floats_of_the_right_values():
    assert checks.check_causal_lengths(lambda b, q: causal_ok(b, q).float())


def test_check_entropy_hint():
    report = checks.check_entropy(entropy_naive)
    assert report.failures == ["one-hot rows give 0"]
    assert "torch.xlogy" in repr(report)


def test_check_scaled_dot_product_unscaled_fails_every_case():
    report = checks.check_scaled_dot_product(sdp_unscaled)
    assert len(report.failures) == 3


def test_checker_reports_the_index_of_the_largest_error():
    def off_at_one_entry(X):
        out = softmax_ok(X)
        if X.shape == (10, 10):
            out = out.clone()
            out[3, 7] += 0.5
        return out

    report = checks.check_softmax(off_at_one_entry)
    assert report.failures == ["a random 10x10 matrix"]
    assert "at index (3, 7)" in repr(report)


@given(error=st.floats(1e-3, 10))
def test_checker_tolerance_rejects_visible_errors(error):
    report = checks.check_normalize(lambda s: normalize_ok(s) + error)
    assert len(report.failures) == 3


@given(error=st.floats(0, 1e-6))
def test_checker_tolerance_accepts_rounding(error):
    assert checks.check_normalize(lambda s: normalize_ok(s).double() + error)


# ---------------------------------------------------------------- CheckReport


def test_check_report_passed():
    report = CheckReport("check_demo", ["  ok    first", "  ok    second"])
    assert report.passed and bool(report)
    assert repr(report) == "check_demo: all 2 cases passed.\n  ok    first\n  ok    second"


def test_check_report_failed():
    report = CheckReport(
        "check_demo", ["  ok    first", "  FAIL  second: wrong"], failures=["second"]
    )
    assert not report.passed and not bool(report)
    assert repr(report) == "check_demo: 1 of 2 cases failed.\n  ok    first\n  FAIL  second: wrong"


@given(
    outcomes=st.lists(st.booleans(), max_size=8),
    name=st.from_regex(r"check_[a-z_]{1,12}", fullmatch=True),
)
def test_check_report_header_counts(outcomes, name):
    lines = [f"  {'ok   ' if ok else 'FAIL '} case {i}" for i, ok in enumerate(outcomes)]
    failures = [f"case {i}" for i, ok in enumerate(outcomes) if not ok]
    report = CheckReport(name, lines, failures)
    assert bool(report) == report.passed == all(outcomes)
    text = repr(report).splitlines()
    assert text[1:] == lines
    if all(outcomes):
        assert text[0] == f"{name}: all {len(outcomes)} cases passed."
    else:
        assert text[0] == f"{name}: {len(failures)} of {len(outcomes)} cases failed."


def test_check_report_defaults_are_not_shared():
    a, b = CheckReport("a"), CheckReport("b")
    a.lines.append("x")
    a.failures.append("x")
    assert b.lines == [] and b.failures == []
    assert repr(b) == "b: all 0 cases passed."


# ---------------------------------------------------------------- attention that learns


def accuracy_ok(weights, index):
    hits = [row.tolist().index(max(row.tolist())) == int(i) for row, i in zip(weights, index)]
    return torch.tensor(sum(hits) / len(hits))


def accuracy_wrong_axis(weights, index):
    return (weights.argmax(0) == index).float().mean()


def accuracy_counts(weights, index):
    return (weights.argmax(-1) == index).float().sum()


def accuracy_smallest(weights, index):
    return (weights.argmin(-1) == index).float().mean()


def test_check_right_key_accuracy_accepts_a_loop():
    report = checks.check_right_key_accuracy(accuracy_ok)
    assert report.passed, repr(report)
    assert len(report.lines) == 4


@pytest.mark.parametrize(
    ("wrong", "failing", "hint"),
    [
        (accuracy_wrong_axis, "a square (3, 3) batch", "last axis"),
        (accuracy_counts, "4 rows, the right key largest in 2 of them", "divide by the rows"),
        (accuracy_smallest, "every row right", None),
    ],
)
def test_check_right_key_accuracy_rejects_mistakes(wrong, failing, hint):
    report = checks.check_right_key_accuracy(wrong)
    assert not report.passed
    assert failing in report.failures
    if hint:
        assert hint in repr(report)


def two_part_ok(values, first, second):
    half = values.shape[-1] // 2
    rows = []
    for b in range(values.shape[0]):
        rows.append(torch.cat([values[b, first[b], :half], values[b, second[b], half:]]))
    return torch.stack(rows)[:, None, :]


def two_part_swapped(values, first, second):
    return two_part_ok(values, second, first)


def two_part_whole_first(values, first, second):
    return values[torch.arange(values.shape[0]), first][:, None, :]


def two_part_every_example(values, first, second):  # fancy indexing without the batch index
    half = values.shape[-1] // 2
    return torch.cat([values[:, first, :half], values[:, second, half:]], -1)[:, :1]


def test_check_two_part_targets_accepts_a_loop():
    report = checks.check_two_part_targets(two_part_ok)
    assert report.passed, repr(report)
    assert len(report.lines) == 3


@pytest.mark.parametrize("wrong", [two_part_swapped, two_part_whole_first, two_part_every_example])
def test_check_two_part_targets_rejects_mistakes(wrong):
    report = checks.check_two_part_targets(wrong)
    assert not report.passed
    assert "values (4, 5, 6)" in report.failures
    assert "hint:" in repr(report)
