"""report_for and case_verdict: the checkers as an autograder's tests."""

from __future__ import annotations

import pytest
import torch

from attnbook import checks
from attnbook.checks import case_verdict, check_masked_softmax, check_softmax, report_for
from attnbook.masking import masked_softmax


def _softmax_rows(X):
    return torch.softmax(X, dim=-1)


def test_seed_0_is_the_books_report():
    assert repr(report_for(check_softmax, _softmax_rows)) == repr(check_softmax(_softmax_rows))
    assert report_for("check_softmax", _softmax_rows).passed


def test_the_checker_runs_once_per_function_and_seed():
    calls = []

    def counted(X):
        calls.append(1)
        return torch.softmax(X, dim=-1)

    first = report_for(check_softmax, counted)
    ran = len(calls)
    assert ran >= len(first.lines)
    for case in range(len(first.lines)):
        assert case_verdict("check_softmax", counted, case) == (True, "")
    assert report_for(check_softmax, counted) is first
    assert len(calls) == ran
    report_for(check_softmax, counted, seed=1)
    assert len(calls) == 2 * ran


def test_a_fresh_seed_defeats_replayed_answers():
    """A function that replays the public cases' expected answers passes seed 0
    and fails the fresh cases of seed 1 (the hidden tests)."""
    recorded = []
    report_for(check_softmax, lambda X: recorded.append(torch.softmax(X, -1)) or recorded[-1])
    replay = iter(list(recorded))

    def replayed(X):
        return next(replay)

    assert report_for(check_softmax, replayed).passed
    replay = iter(list(recorded))
    fresh = report_for(check_softmax, replayed, seed=1)
    assert not fresh.passed
    assert "a random 10x10 matrix" in fresh.failures[0]


@pytest.mark.parametrize("seed", [1, 2])
def test_the_books_solution_passes_fresh_cases(seed):
    assert report_for(check_masked_softmax, masked_softmax, seed=seed).passed


def test_a_failing_function_shows_its_report_once():
    wrong = lambda X: torch.softmax(X, dim=0)  # noqa: E731  (a classic mistake: dim=0)
    report = report_for(check_softmax, wrong)
    verdicts = [case_verdict(check_softmax, wrong, i) for i in range(len(report.lines))]
    assert not any(ok for ok, _ in verdicts)
    assert verdicts[0][1] == "\n" + repr(report)
    assert "Likely mistake" in verdicts[0][1]
    assert all("Likely mistake" not in message for _, message in verdicts[1:])
    assert verdicts[1][1].startswith("FAIL  one row of equal scores")


def test_a_missing_function_fails_with_its_name():
    ok, message = case_verdict("check_softmax", None, 0, answer="softmax_rows")
    assert not ok
    assert "define softmax_rows(...)" in message
    ok, message = case_verdict("check_softmax", 3, 0, answer="softmax_rows")
    assert not ok and "(a int)" in message


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="check must be a checker.*'softmax'"):
        report_for("softmax", _softmax_rows)
    with pytest.raises(ValueError, match="seed must be an integer >= 0, got -1"):
        report_for(check_softmax, _softmax_rows, seed=-1)
    with pytest.raises(ValueError, match="case must be an integer >= 0, got 'a'"):
        case_verdict(check_softmax, _softmax_rows, "a")
    with pytest.raises(ValueError, match="case must be below 5 for check_softmax, got 9"):
        case_verdict(check_softmax, _softmax_rows, 9)


def test_the_seed_is_restored_when_the_checker_raises():
    def broken(fn):
        raise RuntimeError("a checker that fails")

    with pytest.raises(RuntimeError):
        report_for(broken, _softmax_rows, seed=3)
    assert checks._core._fresh_seed == 0
