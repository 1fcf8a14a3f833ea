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

Every public checker takes the same ``seed=`` itself (:func:`with_seed` adds it
when ``attnbook.checks`` exports them): ``check_x(fn, seed=1)`` is
``report_for(check_x, fn, seed=1)``, without the cache and the time limit.

**Time limit.** :func:`report_for` runs the checker under a time limit per
question (``timeout``; by default ``ATTNBOOK_QUESTION_TIMEOUT`` seconds from the
environment, else :data:`QUESTION_TIMEOUT`), so that an endless loop in one
student function fails that question alone and the other questions of the
submission are still graded. When the time runs out, every case of the
question fails with a line that says so and on which case; the question's
other seeds are not run again. The limit is a ``SIGALRM`` timer: it exists
only in the main thread of a process on a system with signals (otter runs its
tests in the notebook kernel's main thread). Elsewhere (another thread,
Windows) the checker runs without a limit, and a RuntimeWarning says so. The
timer raises an exception that ``except Exception`` does not catch, and raises
it again every quarter of a second; a function that catches even that
(``except BaseException``) and returns still fails the question. A function
that catches it in an endless loop of its own cannot be stopped from inside
the process: the submission's own time limit (tools/grade.py) stops it.
"""

from __future__ import annotations

import functools
import inspect
import math
import os
import signal
import threading
import time
import warnings
from collections.abc import Callable
from contextlib import contextmanager

from . import _core
from ._core import CheckReport

#: The default time limit per question, in seconds (the slowest checker takes
#: under 2 s on a right answer here, loops included).
QUESTION_TIMEOUT = 30.0
#: The environment variable that overrides it (tools/grade.py sets it from
#: ``make grade QUESTION_TIMEOUT=...``).
TIMEOUT_VARIABLE = "ATTNBOOK_QUESTION_TIMEOUT"
# After the limit, the timer fires again this often, in case the student's code
# caught the first one and went on.
_REFIRE = 0.25
# The mistake name of a report whose function ran past the limit.
_PAST_LIMIT = "ran past the time limit"

# (checker, function, seed) -> report. The key holds the function itself, so its
# id cannot be reused by another function while the report is cached.
_REPORTS: dict[tuple[Callable, Callable, int], CheckReport] = {}
# (checker, function) -> (its cases, the limit, the seed) for a function that ran
# past the limit.
_PAST: dict[tuple[Callable, Callable], tuple[list[str] | None, float, int]] = {}


def _valid_seed(seed: object) -> int:
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0, got {seed!r}")
    return seed


@contextmanager
def _seeded(seed: int):
    """The checkers' random inputs drawn from ``seed`` (``_core._generator``) inside."""
    previous = _core._fresh_seed
    _core._fresh_seed = seed
    try:
        yield
    finally:
        _core._fresh_seed = previous


def with_seed(checker: Callable) -> Callable:
    """``checker`` with a keyword-only ``seed: int = 0``: its random inputs drawn from it.

    ``seed=0`` gives the book's own cases, exactly as ``checker(fn)``; the name,
    docstring and known mistakes (``.mistakes``) are the checker's own.
    """
    signature = inspect.signature(checker)
    if "seed" in signature.parameters:
        raise ValueError(f"checker {checker.__name__} already has a parameter seed")

    @functools.wraps(checker)
    def seeded(*args, seed: int = 0, **kwargs):
        with _seeded(_valid_seed(seed)):
            return checker(*args, **kwargs)

    parameters = list(signature.parameters.values())
    at = next(
        (i for i, p in enumerate(parameters) if p.kind is inspect.Parameter.VAR_KEYWORD),
        len(parameters),
    )
    parameters.insert(
        at, inspect.Parameter("seed", inspect.Parameter.KEYWORD_ONLY, default=0, annotation=int)
    )
    seeded.__signature__ = signature.replace(parameters=parameters)
    seeded.takes_seed = True
    return seeded


def _checker(check: str | Callable) -> Callable:
    if callable(check):
        return check
    from . import __all__ as names

    if not isinstance(check, str) or not check.startswith("check_") or check not in names:
        raise ValueError(f"check must be a checker of attnbook.checks, got {check!r}")
    from importlib import import_module

    return getattr(import_module(__package__), check)


def question_timeout() -> float:
    """The time limit per question: ``ATTNBOOK_QUESTION_TIMEOUT`` seconds if set, else 30."""
    text = os.environ.get(TIMEOUT_VARIABLE, "").strip()
    if not text:
        return QUESTION_TIMEOUT
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{TIMEOUT_VARIABLE} must be a number of seconds > 0, got {text!r}")
    return value


class _PastTheLimit(BaseException):
    """Raised inside the student's function when the question's time runs out: a
    BaseException, so that the checkers' ``except Exception`` lets it through."""


def _where(frame) -> tuple[str | None, list[str] | None]:
    """The case that ``_core._run`` was running when the timer fired (None when the
    student's function was not the one running), and the descriptions of its cases.
    It reads _core._run's locals (cases, case) and knows _core._guarded's wrapper by
    its name, run; test_an_endless_loop_fails_its_question_alone checks the case."""
    inside = False
    while frame is not None:
        code = frame.f_code
        if code.co_filename == _core.__file__ and code.co_name == "run":
            inside = True  # _core._guarded's wrapper: the student's function is running
        if code is _core._run.__code__:
            cases = frame.f_locals.get("cases")
            descriptions = [getattr(c, "description", str(c)) for c in cases or []]
            case = frame.f_locals.get("case") if inside else None
            return getattr(case, "description", None), descriptions or None
        frame = frame.f_back
    return None, None


def _limited(run: Callable[[], CheckReport], limit: float) -> tuple[CheckReport | None, dict]:
    """``run()`` under a time limit of ``limit`` seconds: (its report, or None past the
    limit; what the timer saw). ``limit`` infinite, or no timer here: no limit."""
    seen: dict = {"fired": False, "case": None, "cases": None}
    if math.isinf(limit):
        return run(), seen
    if not hasattr(signal, "setitimer"):
        reason = "this system has no SIGALRM timer"
    elif threading.current_thread() is not threading.main_thread():
        reason = "the checker runs outside the main thread"
    else:
        reason = None
    if reason is not None:
        warnings.warn(f"report_for: no time limit per question ({reason})", RuntimeWarning, 3)
        return run(), seen
    armed = [True]

    def alarm(signum, frame):
        if not armed[0]:
            return
        if not seen["fired"]:
            seen["fired"] = True
            seen["case"], seen["cases"] = _where(frame)
        raise _PastTheLimit

    report = None
    handler = signal.signal(signal.SIGALRM, alarm)
    started = time.monotonic()
    outer = signal.setitimer(signal.ITIMER_REAL, limit, _REFIRE)
    try:
        try:
            report = run()
        finally:
            armed[0] = False  # from here on the timer does nothing
    except _PastTheLimit:
        armed[0] = False
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, handler if handler is not None else signal.SIG_DFL)
        if outer[0] > 0:  # someone else's timer was running: give it back what is left
            left = max(outer[0] - (time.monotonic() - started), 1e-3)
            signal.setitimer(signal.ITIMER_REAL, left, outer[1])
    return (None if seen["fired"] else report), seen


def _past_the_limit(
    name: str, cases: list[str] | None, case: str | None, limit: float, earlier: int | None
) -> CheckReport:
    """The report of a function that ran past ``limit`` seconds: every case fails.

    ``cases`` are the checker's case descriptions, ``case`` the one it was
    running (None when unknown); ``earlier`` is the seed on which it ran past the
    limit when that was another seed's run (this one was then not run at all).
    """
    where = f" on the case {case!r}" if case else ""
    past = f"ran past the time limit of {limit:g} s"
    if earlier is None:
        diagnosis = (
            f"  The function {past}{where} (an endless loop, or far too slow?): "
            "the question's cases were not graded."
        )
    else:
        cases_of = "the book's cases" if earlier == 0 else f"the fresh cases of seed {earlier}"
        diagnosis = f"  Not run: the function {past} on {cases_of}."
    report = CheckReport(name, mistake=_PAST_LIMIT, diagnosis=diagnosis)
    for description in cases or ["every case"]:
        if earlier is not None:
            problem = f"not run: the function {past} on {cases_of}"
        elif description == case:
            problem = f"{past} (an endless loop, or far too slow?)"
        else:
            problem = f"not graded: the function {past}{where}"
        report.lines.append(f"  FAIL  {description}: {problem}")
        report.failures.append(description)
    return report


def report_for(
    check: str | Callable, fn: Callable, seed: int = 0, *, timeout: float | None = None
) -> CheckReport:
    """The report of ``check(fn)`` with the checker's random inputs drawn from ``seed``.

    ``seed=0`` gives the book's own cases (the report ``check(fn)`` prints);
    another seed gives fresh inputs of the same kinds. The report is computed
    once and then returned from a cache, for as long as the process lives.

    The checker runs under a time limit of ``timeout`` seconds (None:
    :func:`question_timeout`; ``math.inf``: no limit). Past it, every case fails with
    a line that names the limit and the case it was running, and the same
    function is not run again on another seed of this checker (its cases fail
    with the same line).
    """
    checker = _checker(check)
    _valid_seed(seed)
    if timeout is None:
        timeout = question_timeout()
    elif isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise ValueError(f"timeout must be a number of seconds > 0 or None, got {timeout!r}")
    key = (checker, fn, seed)
    if key in _REPORTS:
        return _REPORTS[key]
    name = getattr(checker, "__name__", str(checker))
    if (checker, fn) in _PAST:
        cases, limit, earlier = _PAST[(checker, fn)]
        _REPORTS[key] = _past_the_limit(name, cases, None, limit, earlier)
        return _REPORTS[key]

    def run() -> CheckReport:
        if getattr(checker, "takes_seed", False):
            return checker(fn, seed=seed)
        with _seeded(seed):
            return checker(fn)

    report, seen = _limited(run, timeout)
    if report is None:
        report = _past_the_limit(name, seen["cases"], seen["case"], timeout, None)
        _PAST[(checker, fn)] = (seen["cases"], timeout, seed)
    _REPORTS[key] = report
    return report


def case_verdict(
    check: str | Callable, fn: Callable | None, case: int, seed: int = 0, answer: str = "it"
) -> tuple[bool, str]:
    """Whether ``fn`` passes case number ``case`` of ``check`` (from 0), and why not.

    The message of a failing case is the checker's whole report, diagnosis
    included, on the first failing case, and that case's own line on the
    others (the report is shown once). A missing function (``fn`` None, or not
    a function) fails every case with a line that names ``answer``; so does a
    function that ran past the time limit (see :func:`report_for`), with a
    line that says so.
    """
    if not isinstance(case, int) or isinstance(case, bool) or case < 0:
        raise ValueError(f"case must be an integer >= 0, got {case!r}")
    if fn is None or not callable(fn):
        found = "nothing" if fn is None else f"a {type(fn).__name__}"
        return False, f"no function {answer} found ({found}): define {answer}(...) and run its cell"
    report = report_for(check, fn, seed)
    if report.mistake == _PAST_LIMIT and case >= len(report.lines):
        case = len(report.lines) - 1  # the cases it never reached fail alike
    if case >= len(report.lines):
        raise ValueError(f"case must be below {len(report.lines)} for {report.name}, got {case}")
    if report.lines[case].lstrip().startswith("ok"):
        return True, ""
    first = next(i for i, line in enumerate(report.lines) if not line.lstrip().startswith("ok"))
    if case == first:
        return False, "\n" + repr(report)
    return False, report.lines[case].strip() + " (the whole report is under the first failing case)"
