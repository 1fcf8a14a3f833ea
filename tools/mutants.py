"""A mutation test of the exercise checkers: does each checker reject the slips a hand makes?

Every checked exercise of the book (a code cell whose ``attnbook`` metadata
names a ``check``) has a reference solution. This tool mutates that solution
once per site with the slips of ``attnbook.checks._mutator.OPERATORS`` (a dim changed, a
bound off by one, ``<`` for ``<=``, ``+`` for ``-``, ``*`` for ``/``, a
reduction swapped, a scale dropped, a fill of 0 for -inf, a transpose or a
``keepdim=True`` dropped), runs the checker on each
mutant under seeds 0 and 1 (:func:`attnbook.checks.report_for`) and sorts it:

* **named**: rejected, with a "Likely mistake" line (``report.mistake`` set):
  a catalogued mistake's, or the diagnosis by matching mutants
  (``attnbook.checks._matching``), which mutates the same solution with the same
  operators and so finds a mutant's own slip unless its answers are the
  reference's on a failing case or a run is cut short by the time budget;
  what this share measures is that the diagnosis is reached and fast, while
  whether its words help a reader is judged by reading them;
* **unnamed**: rejected without a name;
* **equivalent**: passed, and gives the reference's outcome on every case of
  the checker and on stressed copies of them (:data:`STRESSES`: inputs scaled
  by 50, shifted by -200, one row of scores lifted by 1000);
* **accepted**: passed, but not equivalent: a hole in the checker.

The solution is what ``tools.assignments.solution_code`` extracts from its
cell, run after the chapter's cells tagged ``setup``. The mutants come from
attnbook/checks/_mutator.py (Python's own ``ast``, no dependency): one slip each, no two
alike. Seed 1 runs only on a mutant that seed 0 passed: a mutant's name is
the one its first rejection gives.

    python -m tools.mutants [--check check_softmax,...] [--list]

prints the table (per checker: mutants, equivalent, accepted, named, unnamed;
totals, with the named share) and every accepted mutant, and exits 1 when
there is one. tests/test_mutants.py runs it in the slow tier.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from attnbook.checks._mutator import Mutant, mutants

ROOT = Path(__file__).resolve().parent.parent
BOOK = ROOT / "book"
SEEDS = (0, 1)
# A mutant that loops for long is rejected by report_for's time limit.
TIMEOUT = 10.0
KINDS = ("equivalent", "accepted", "named", "unnamed")


# ---------------------------------------------------------------- the exercises


@dataclass
class Exercise:
    """A checked exercise: its checker, the name its function has, the solution's code,
    and the chapter's setup cells that the solution runs after."""

    ident: str
    check: str
    answer: str
    source: str
    setup: list[str]

    def function(self, source: str | None = None, namespace: dict | None = None) -> Callable:
        """The solution (or ``source``, a mutant of it) defined after the setup cells."""
        space = dict(namespace if namespace is not None else self.namespace())
        exec(compile(source or self.source, f"<{self.ident}>", "exec"), space)
        return space[self.answer]

    def namespace(self) -> dict:
        space: dict = {"__name__": "__mutants__"}
        for cell in self.setup:
            exec(compile(cell, f"<setup of {self.ident}>", "exec"), space)
        return space


def exercises(book: Path = BOOK) -> list[Exercise]:
    """The book's checked exercises, chapter by chapter, in the order of their cells."""
    from tools.assignments import _code, solution_code

    found = []
    for path in sorted(book.glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        setup = [
            _code(c.source)
            for c in nb.cells
            if c.cell_type == "code" and "setup" in c.metadata.get("tags", [])
        ]
        for cell in nb.cells:
            meta = cell.metadata.get("attnbook", {})
            if "check" in meta:
                code = solution_code(cell.source, meta["solution"], meta["answer"])
                found.append(Exercise(meta["exercise"], meta["check"], meta["answer"], code, setup))
    return found


# ---------------------------------------------------------------- running the checkers


@dataclass
class _Call:
    """One call of ``_core._run`` by a checker: the function it ran (the reader's, or
    the checker's wrapper around it), the cases and the probe."""

    fn: Callable
    cases: list
    probe: Callable | None


@contextmanager
def _recording() -> Iterator[list[_Call]]:
    """Every ``_run`` call of the checkers while inside, in order: each module that
    imported ``_core._run`` (the checkers' modules, or a test's) calls a recorder."""
    import importlib

    from attnbook.checks import _core

    calls: list[_Call] = []
    real = _core._run

    def run(name, fn, cases, mistakes=(), probe=None, explain=None, **rest):
        calls.append(_Call(fn, [_core._to_case(c) for c in cases], probe))
        return real(name, fn, cases, mistakes=mistakes, probe=probe, explain=explain, **rest)

    for info in sorted(Path(_core.__file__).parent.glob("*.py")):
        importlib.import_module(f"attnbook.checks.{info.stem}")
    modules = [
        m
        for m in list(sys.modules.values())
        if m is not _core and getattr(m, "__dict__", {}).get("_run") is real
    ]
    for module in modules:
        module._run = run
    try:
        yield calls
    finally:
        for module in modules:
            module._run = real


def _stress_tensor(t, how: str):
    import torch

    if not isinstance(t, torch.Tensor) or not t.is_floating_point():
        return t
    x = t.detach().clone()
    if how == "x50":
        x = x * 50
    elif how == "-200":
        x = x - 200
    elif x.dim() >= 2:  # one row of large scores
        x[..., 0, :] += 1000
    else:
        x = x + 1000
    return x.requires_grad_(t.requires_grad)


def _stress(value, how: str):
    if isinstance(value, (list, tuple)):
        return type(value)(_stress(v, how) for v in value)
    if isinstance(value, dict):
        return {k: _stress(v, how) for k, v in value.items()}
    return _stress_tensor(value, how)


#: The stressed copies of a case's inputs (floating-point tensors only): each one's name.
STRESSES = {"x50": "inputs x 50", "-200": "inputs - 200", "+1000": "one row + 1000"}


def _trials(calls: list[_Call]) -> list[tuple[int, str, object]]:
    """(call, what, case) for every case of every call and its stressed copies."""
    from attnbook.checks._core import Case

    found = []
    for i, call in enumerate(calls):
        for case in call.cases:
            found.append((i, case.description, case))
            for how, what in STRESSES.items():
                stressed = Case(
                    f"{case.description} ({what})", _stress(case.args, how), None, probe=case.probe
                )
                found.append((i, stressed.description, stressed))
    return found


@contextmanager
def _deadline(seconds: float):
    """Raise TimeoutError in the main thread after ``seconds`` (no limit elsewhere)."""
    if not hasattr(signal, "setitimer") or os.name == "nt":
        yield
        return

    def alarm(signum, frame):
        raise TimeoutError(f"past {seconds} s")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _outcomes(calls: list[_Call]) -> list:
    from attnbook.checks._core import _attempt, _Outcome

    found = []
    for i, _, case in _trials(calls):
        try:
            with _deadline(TIMEOUT):
                found.append(_attempt(calls[i].fn, case, calls[i].probe))
        except TimeoutError as err:
            found.append(_Outcome(error=err))
    return found


@dataclass
class Verdict:
    mutant: Mutant
    kind: str  # one of KINDS
    why: str = ""  # the mistake named, or where an accepted mutant differs


@dataclass
class Result:
    exercise: Exercise
    verdicts: list[Verdict] = field(default_factory=list)
    seconds: float = 0.0

    def count(self, kind: str) -> int:
        return sum(v.kind == kind for v in self.verdicts)


def run_exercise(exercise: Exercise, operators: dict | None = None) -> Result:
    """Every mutant of the exercise's solution, run through its checker and sorted."""
    from attnbook.checks import _core, report_for
    from attnbook.checks._grading import _PAST_LIMIT

    started = time.perf_counter()
    namespace = exercise.namespace()
    reference = exercise.function(namespace=namespace)
    expected: dict[int, tuple[list[str], list]] = {}
    for seed in SEEDS:
        with _recording() as calls:
            report = report_for(exercise.check, reference, seed=seed, timeout=TIMEOUT * 3)
        if not report.passed:
            raise AssertionError(f"{exercise.ident}: the reference fails its checker\n{report!r}")
        expected[seed] = ([what for _, what, _ in _trials(calls)], _outcomes(calls))
    result = Result(exercise)
    for mutant in mutants(exercise.source, operators):
        try:
            fn = exercise.function(mutant.source, namespace)
        except Exception as err:  # a mutant that does not compile, or defines no function
            result.verdicts.append(Verdict(mutant, "unnamed", f"does not run: {err}"))
            continue
        verdict = None
        recorded = {}
        for seed in SEEDS:
            with _recording() as calls:
                report = report_for(exercise.check, fn, seed=seed, timeout=TIMEOUT)
            if not report.passed:
                named = report.mistake is not None and report.mistake != _PAST_LIMIT
                verdict = Verdict(mutant, "named" if named else "unnamed", report.mistake or "")
                break
            recorded[seed] = calls
        if verdict is None:
            verdict = Verdict(mutant, "equivalent")
            for seed in SEEDS:
                whats, wanted = expected[seed]
                got = _outcomes(recorded[seed])
                differ = [w for w, a, b in zip(whats, wanted, got) if not _core._agree(a, b)]
                if len(got) != len(wanted):
                    differ.append(f"{len(got)} trials, not {len(wanted)}")
                if differ:
                    verdict = Verdict(mutant, "accepted", f"seed {seed}: differs on {differ[0]!r}")
                    break
        result.verdicts.append(verdict)
    result.seconds = time.perf_counter() - started
    return result


def table(results: list[Result]) -> str:
    """The table: per checker mutants, equivalent, accepted, named, unnamed; then totals."""
    head = f"{'checker':32} {'mutants':>7} " + " ".join(f"{k:>10}" for k in KINDS) + f" {'s':>6}"
    lines = [head, "-" * len(head)]
    for r in results:
        counts = " ".join(f"{r.count(k):>10}" for k in KINDS)
        lines.append(f"{r.exercise.check:32} {len(r.verdicts):>7} {counts} {r.seconds:>6.1f}")
    total = sum(len(r.verdicts) for r in results)
    sums = {k: sum(r.count(k) for r in results) for k in KINDS}
    seconds = sum(r.seconds for r in results)
    lines.append("-" * len(head))
    lines.append(
        f"{'total':32} {total:>7} "
        + " ".join(f"{sums[k]:>10}" for k in KINDS)
        + f" {seconds:>6.1f}"
    )
    rejected = sums["named"] + sums["unnamed"]
    share = sums["named"] / total if total else 0.0
    lines.append(
        f"named share: {sums['named']} of {total} mutants ({share:.0%}); "
        f"of the {rejected} rejected, {sums['named'] / rejected if rejected else 0:.0%}"
    )
    return "\n".join(lines)


def accepted(results: list[Result]) -> list[str]:
    """One line per accepted mutant: its exercise, its slip, where it differs."""
    return [
        f"{r.exercise.check} ({r.exercise.ident}): {v.mutant.label}; {v.why}"
        for r in results
        for v in r.verdicts
        if v.kind == "accepted"
    ]


def run(checks: set[str] | None = None, verbose: bool = False) -> list[Result]:
    """Run every exercise (or those whose checker is in ``checks``) on one torch thread.

    The chapters' setup cells seed torch and set its print options: both are put
    back afterwards, as is the number of threads, so that a test run in the same
    process sees no change."""
    import torch
    from torch._tensor_str import PRINT_OPTS

    threads, rng, printing = torch.get_num_threads(), torch.get_rng_state(), dict(vars(PRINT_OPTS))
    torch.set_num_threads(1)
    try:
        results = []
        for exercise in exercises():
            if checks is None or exercise.check in checks:
                results.append(run_exercise(exercise))
                if verbose:
                    r = results[-1]
                    print(
                        f"{exercise.check}: {len(r.verdicts)} mutants, {r.seconds:.1f} s",
                        file=sys.stderr,
                    )
        return results
    finally:
        torch.set_num_threads(threads)
        torch.set_rng_state(rng)
        vars(PRINT_OPTS).update(printing)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", default="", help="checkers, comma-separated (default: all)")
    parser.add_argument("--list", action="store_true", help="print every mutant's verdict")
    args = parser.parse_args(argv)
    checks = {c.strip() for c in args.check.split(",") if c.strip()} or None
    os.environ.setdefault("MPLBACKEND", "Agg")
    started = time.perf_counter()
    results = run(checks, verbose=True)
    if args.list:
        for r in results:
            for v in r.verdicts:
                print(f"{r.exercise.check:28} {v.kind:10} {v.mutant.label}  [{v.why}]")
    print(table(results))
    print(f"{time.perf_counter() - started:.0f} s")
    found = accepted(results)
    if found:
        print(f"\n{len(found)} accepted mutants:")
        print("\n".join(found))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
