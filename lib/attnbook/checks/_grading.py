"""The checkers as an autograder's tests: one report per question, a verdict per case.

An assignment (tools/assignments.py) gives each case of a checker its own test,
so that a student earns the points of the cases their function passes. Every
test of a question asks :func:`case_verdict` about its case; the checker runs
once per (checker, function, seed), in :func:`report_for`, and the tests share
its report. A hidden test passes ``seed=1`` (or any other): the checker then
draws its random inputs afresh (``_core._generator``), so a function that
returns the public cases' expected values does not pass. Checkers whose cases
are sizes or numbers, not random tensors, draw other ones of the same kinds
(``_draws``), as many as the book's, so each seed runs the same number of cases.
"""

from __future__ import annotations

from collections.abc import Callable

from . import _core
from ._core import CheckReport

# (checker, function, seed) -> report. The key holds the function itself, so its
# id cannot be reused by another function while the report is cached.
_REPORTS: dict[tuple[Callable, Callable, int], CheckReport] = {}


def _checker(check: str | Callable) -> Callable:
    if callable(check):
        return check
    from . import __all__ as names

    if not isinstance(check, str) or not check.startswith("check_") or check not in names:
        raise ValueError(f"check must be a checker of attnbook.checks, got {check!r}")
    from importlib import import_module

    return getattr(import_module(__package__), check)


def report_for(check: str | Callable, fn: Callable, seed: int = 0) -> CheckReport:
    """The report of ``check(fn)`` with the checker's random inputs drawn from ``seed``.

    ``seed=0`` gives the book's own cases (the report ``check(fn)`` prints);
    another seed gives fresh inputs of the same kinds. The report is computed
    once and then returned from a cache, for as long as the process lives.
    """
    checker = _checker(check)
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0, got {seed!r}")
    key = (checker, fn, seed)
    if key not in _REPORTS:
        previous = _core._fresh_seed
        _core._fresh_seed = seed
        try:
            _REPORTS[key] = checker(fn)
        finally:
            _core._fresh_seed = previous
    return _REPORTS[key]


def case_verdict(
    check: str | Callable, fn: Callable | None, case: int, seed: int = 0, answer: str = "it"
) -> tuple[bool, str]:
    """Whether ``fn`` passes case number ``case`` of ``check`` (from 0), and why not.

    The message of a failing case is the checker's whole report, diagnosis
    included, on the first failing case, and that case's own line on the
    others (the report is shown once). A missing function (``fn`` None, or not
    a function) fails every case with a line that names ``answer``.
    """
    if not isinstance(case, int) or isinstance(case, bool) or case < 0:
        raise ValueError(f"case must be an integer >= 0, got {case!r}")
    if fn is None or not callable(fn):
        found = "nothing" if fn is None else f"a {type(fn).__name__}"
        return False, f"no function {answer} found ({found}): define {answer}(...) and run its cell"
    report = report_for(check, fn, seed)
    if case >= len(report.lines):
        raise ValueError(f"case must be below {len(report.lines)} for {report.name}, got {case}")
    if report.lines[case].lstrip().startswith("ok"):
        return True, ""
    first = next(i for i, line in enumerate(report.lines) if not line.lstrip().startswith("ok"))
    if case == first:
        return False, "\n" + repr(report)
    return False, report.lines[case].strip() + " (the whole report is under the first failing case)"
