"""report_for and case_verdict: the checkers as an autograder's tests."""

from __future__ import annotations

import inspect
import math
import re
import signal
import threading
import time
import warnings
from importlib import import_module

import pytest
import torch

from attnbook import checks
from attnbook.checks import _grading, case_verdict, check_masked_softmax, check_softmax, report_for


def _softmax(X, dim=-1):
    """A softmax written from scratch, as the exercise asks (PyTorch's is refused)."""
    e = torch.exp(X - X.amax(dim=dim, keepdim=True))
    return e / e.sum(dim=dim, keepdim=True)


def masked_softmax(X, valid_lens):
    """The masked softmax of exercise 1, without a fill value (the book's own is refused)."""
    batch, queries, keys = X.shape
    lens = valid_lens if valid_lens.dim() == 2 else valid_lens[:, None].expand(batch, queries)
    keep = torch.arange(keys) < lens[..., None]
    shift = torch.where(keep, X, X.amin(dim=-1, keepdim=True)).amax(dim=-1, keepdim=True)
    e = torch.exp(torch.where(keep, X - shift, 0.0)) * keep
    return e / e.sum(dim=-1, keepdim=True).clamp_min(torch.finfo(X.dtype).tiny)


def _softmax_rows(X):
    return _softmax(X)


def test_seed_0_is_the_books_report():
    assert repr(report_for(check_softmax, _softmax_rows)) == repr(check_softmax(_softmax_rows))
    assert report_for("check_softmax", _softmax_rows).passed


def test_the_checker_runs_once_per_function_and_seed():
    calls = []

    def counted(X):
        calls.append(1)
        return _softmax(X)

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
    report_for(check_softmax, lambda X: recorded.append(_softmax(X)) or recorded[-1])
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
    wrong = lambda X: _softmax(X, dim=0)  # noqa: E731  (a classic mistake: dim=0)
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


# ---------------------------------------------------------------- seed= on every checker

NAMES = [name for name in checks.__all__ if name.startswith("check_")]


def _recording(right, seen: list):
    """``right``, noting every tensor it receives (to compare two runs' inputs)."""

    def recorder(*args):
        seen.extend(a.detach().clone() for a in args if isinstance(a, torch.Tensor))
        return right(*args)

    return recorder


def _same_inputs(a: list, b: list) -> bool:
    return len(a) == len(b) and all(
        x.shape == y.shape and x.dtype == y.dtype and torch.equal(x, y) for x, y in zip(a, b)
    )


@pytest.mark.parametrize("name", NAMES)
def test_every_checker_takes_seed_as_report_for_does(name):
    """check_x(fn, seed=s) runs on the inputs report_for(check_x, fn, seed=s) runs on,
    and gives its report; seed=0 (the default) gives the book's cases, unchanged."""
    from test_checks_fresh import RIGHT

    checker = getattr(checks, name)
    raw = getattr(import_module(checker.__module__), name)  # the checker as its module defines it
    parameter = inspect.signature(checker).parameters["seed"]
    assert parameter.kind is inspect.Parameter.KEYWORD_ONLY
    assert (parameter.default, parameter.annotation) == (0, int)
    assert (checker.__name__, checker.__doc__) == (name, raw.__doc__)
    assert getattr(checker, "mistakes", ()) == getattr(raw, "mistakes", ())
    inputs = {}
    for seed in (0, 2):
        by_checker, by_report = [], []
        mine = checker(_recording(RIGHT[name], by_checker), seed=seed)
        graded = report_for(name, _recording(RIGHT[name], by_report), seed=seed)
        assert repr(mine) == repr(graded)
        assert _same_inputs(by_checker, by_report)
        inputs[seed] = by_checker
    book = []
    assert repr(raw(_recording(RIGHT[name], book))) == repr(checker(RIGHT[name]))
    assert _same_inputs(book, inputs[0])


def test_a_fresh_seed_draws_fresh_inputs_in_the_checker_itself():
    seen = {0: [], 1: []}
    for seed in seen:
        check_softmax(_recording(_softmax_rows, seen[seed]), seed=seed)
    assert not _same_inputs(seen[0], seen[1])
    assert checks._core._fresh_seed == 0


@pytest.mark.parametrize("seed", [-1, True, 1.0, "1", None])
def test_a_bad_seed_is_refused_by_name(seed):
    with pytest.raises(
        ValueError, match=rf"seed must be an integer >= 0, got {re.escape(repr(seed))}"
    ):
        check_softmax(_softmax_rows, seed=seed)
    with pytest.raises(TypeError):
        check_softmax(_softmax_rows, 1)  # keyword-only
    assert checks._core._fresh_seed == 0


# ---------------------------------------------------------------- the time limit per question


def _looping(X):
    while True:
        pass


def _first_case() -> str:
    return report_for(check_softmax, _softmax_rows).lines[0].split("ok", 1)[1].strip()


def test_an_endless_loop_fails_its_question_alone():
    cases = len(report_for(check_softmax, _softmax_rows).lines)
    handler = signal.getsignal(signal.SIGALRM)
    started = time.monotonic()
    report = report_for(check_softmax, _looping, timeout=1)
    assert time.monotonic() - started < 5
    assert not report.passed and len(report.lines) == cases
    first = _first_case()
    assert report.lines[0] == (
        f"  FAIL  {first}: ran past the time limit of 1 s (an endless loop, or far too slow?)"
    )
    assert all(
        line.endswith(
            f"not graded: the function ran past the time limit of 1 s on the case {first!r}"
        )
        for line in report.lines[1:]
    )
    assert f"The function ran past the time limit of 1 s on the case {first!r}" in repr(report)
    verdicts = [case_verdict(check_softmax, _looping, i) for i in range(cases)]
    assert not any(ok for ok, _ in verdicts)
    assert "ran past the time limit of 1 s" in verdicts[0][1]
    # The fresh cases are not run again (no second wait), and fail alike.
    started = time.monotonic()
    hidden = [case_verdict(check_softmax, _looping, i, seed=1) for i in range(cases)]
    assert time.monotonic() - started < 0.5
    assert not any(ok for ok, _ in hidden)
    assert (
        "Not run: the function ran past the time limit of 1 s on the book's cases" in hidden[0][1]
    )
    assert hidden[1][1].startswith("FAIL") and "not run" in hidden[1][1]
    # The next question is graded as usual, with no timer left behind.
    assert signal.getsignal(signal.SIGALRM) is handler
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert report_for(check_masked_softmax, masked_softmax, timeout=1).passed
    assert checks._core._fresh_seed == 0


@pytest.mark.parametrize("caught", [Exception, BaseException])
def test_a_function_that_catches_the_timeout_still_fails(caught):
    def stubborn(X):
        try:
            while True:
                pass
        except caught:
            return _softmax(X)  # a right answer, but too late

    started = time.monotonic()
    report = report_for(check_softmax, stubborn, timeout=0.5)
    assert time.monotonic() - started < 5
    assert not report.passed
    assert "ran past the time limit of 0.5 s" in repr(report)


def test_the_limit_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("ATTNBOOK_QUESTION_TIMEOUT", "0.5")
    assert _grading.question_timeout() == 0.5
    assert "time limit of 0.5 s" in repr(report_for(check_softmax, lambda X: _looping(X)))
    monkeypatch.setenv("ATTNBOOK_QUESTION_TIMEOUT", "soon")
    with pytest.raises(ValueError, match="ATTNBOOK_QUESTION_TIMEOUT must be .* got 'soon'"):
        report_for(check_softmax, lambda X: X)
    monkeypatch.delenv("ATTNBOOK_QUESTION_TIMEOUT")
    assert _grading.question_timeout() == _grading.QUESTION_TIMEOUT
    for bad in (0, -1.0, float("nan"), True, "5"):
        with pytest.raises(ValueError, match=f"timeout must be .* got {re.escape(repr(bad))}"):
            report_for(check_softmax, lambda X: X, timeout=bad)
    handler = signal.getsignal(signal.SIGALRM)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no limit asked for: no timer, and no warning
        assert report_for(check_softmax, _softmax_rows, seed=3, timeout=math.inf).passed
    assert signal.getsignal(signal.SIGALRM) is handler


def test_someone_elses_timer_is_given_back():
    signal.setitimer(signal.ITIMER_REAL, 100)
    try:
        assert report_for(check_softmax, lambda X: _softmax(X), timeout=5).passed
        left, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 90 < left < 100
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def test_outside_the_main_thread_there_is_no_limit_and_a_warning():
    out = {}

    def grade():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out["report"] = report_for(check_softmax, lambda X: _softmax(X))
        out["warnings"] = [str(w.message) for w in caught]

    worker = threading.Thread(target=grade)
    worker.start()
    worker.join()
    assert out["report"].passed
    assert out["warnings"] == [
        "report_for: no time limit per question (the checker runs outside the main thread)"
    ]


def test_a_function_that_raises_is_named_in_the_feedback():
    def raising(X):
        raise KeyError("the key 'Q' is missing")

    ok, message = case_verdict(check_softmax, raising, 0, answer="softmax_rows")
    assert not ok
    assert "raised KeyError: \"the key 'Q' is missing\"" in message
    ok, message = case_verdict(check_softmax, raising, 1, seed=1)
    assert not ok and message.startswith("FAIL") and "raised KeyError" in message
