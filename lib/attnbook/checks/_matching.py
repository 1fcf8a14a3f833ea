"""Diagnosis by matching mutants: when no known mistake matches a failing answer,
the checker compares it with its own reference's mutants.

Each checker's reference is the book's solution of its exercise
(``_references.REFERENCES``). The first time a checker meets a failing answer
that no :class:`._core.Mistake` explains, its reference is mutated the way hands
slip (``_mutator``: a dim changed, a bound off by one, ``<`` for ``<=``, a sign,
``*`` for ``/``, a reduction swapped, a factor or a transpose left out, a fill
of 0, ``keepdim=True`` dropped) and every mutant is compiled, once per process.
A mutant is named only when it agrees with the reader's outcome on every failing
case (an exception only with an exception of the same type and message) and
differs from the reference on each of them; one that also agrees on the cases
the reader passed is preferred, and when two slips give the same answers both
are named. Every mutant is tried, so that the same answer gets the same report
on any machine (a full search of the book's largest checker, tiled attention's
94 mutants, takes about 0.5 s of CPU); :data:`BUDGET` only stops a search that
something made pathologically slow.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence

from ._core import Case, Mistake, _agree, _attempt, _Outcome
from ._mutator import Mutant, mutants
from ._references import REFERENCES, namespace

#: Seconds spent at most on running mutants for one report, a safety net only: no
#: checker of the book comes near it (compiling them, once per checker and
#: process, comes on top: at most a few tenths of a second).
BUDGET = 10.0

_compiled: dict[str, tuple[Callable, list[tuple[Mutant, Callable]]]] = {}


def _define(check: str, answer: str, source: str, space: dict) -> Callable:
    local = dict(space)
    exec(compile(source, f"<the reference of {check}>", "exec"), local)
    return local[answer]


def reference_mutants(check: str) -> tuple[Callable, list[tuple[Mutant, Callable]]] | None:
    """The checker's reference and its mutants, each compiled (cached), or None
    when the checker has no reference."""
    if check in _compiled:
        return _compiled[check]
    if check not in REFERENCES:
        return None
    answer, source = REFERENCES[check]
    space = namespace()
    reference = _define(check, answer, source, space)
    found = []
    for mutant in mutants(source):
        try:
            found.append((mutant, _define(check, answer, mutant.source, space)))
        except Exception:  # a mutant that does not compile: no reader's answer is like it
            continue
    _compiled[check] = (reference, found)
    return _compiled[check]


def _alike(reader: _Outcome, other: _Outcome) -> bool:
    """The checker's agreement, stricter for exceptions: same type and same message."""
    both_raised = reader.error is not None and other.error is not None
    if both_raised and str(reader.error) != str(other.error):
        return False
    return _agree(reader, other)


def describe(mutant: Mutant) -> str:
    """The slip in words a reader understands, with the expression that changed."""
    line = f"your answers equal the right ones with one slip, {mutant.words}"
    if mutant.before and mutant.after and mutant.before != mutant.after:
        line += f": `{mutant.after}` where the right answer has `{mutant.before}`"
    return line


def _pointer(texts: Sequence[str | None]) -> str:
    """The first "see ... in ..." among the checker's hints and diagnoses, or ""."""
    for text in texts:
        found = re.search(r'see "[^"]*" in .*$', text or "")
        if found:
            return found.group(0)
    return ""


def match(
    check: str,
    cases: list[Case],
    outcomes: list[_Outcome],
    failed: list[bool],
    probe: Callable | None,
    texts: Sequence[str | None] = (),
) -> tuple[Mistake, bool] | None:
    """The mutant of the checker's reference that the reader's answers agree with,
    as a :class:`Mistake`, and whether it agrees on every case; None if none does.

    ``texts`` are the checker's hints and diagnoses: the first section they point
    to ends the line."""
    started = time.perf_counter()
    found = reference_mutants(check)
    if found is None:
        return None
    reference, candidates = found
    failing = [i for i, f in enumerate(failed) if f]
    passing = [i for i, f in enumerate(failed) if not f]
    right: dict[int, _Outcome] = {}
    matched: list[tuple[bool, Mutant, Callable]] = []
    for mutant, fn in sorted(candidates, key=lambda c: _PREFERENCE.index(c[0].operator)):
        if time.perf_counter() - started > BUDGET:
            break
        agrees = True
        for i in failing:
            outcome = _attempt(fn, cases[i], probe)
            if not _alike(outcomes[i], outcome):
                agrees = False
                break
            if i not in right:
                right[i] = _attempt(reference, cases[i], probe)
            if _alike(right[i], outcome):  # the reference's answer: no slip shows here
                agrees = False
                break
        if agrees:
            everywhere = all(_alike(outcomes[i], _attempt(fn, cases[i], probe)) for i in passing)
            matched.append((everywhere, mutant, fn))
    if not matched:
        return None
    everywhere = any(e for e, _, _ in matched)
    best = [(m, fn) for e, m, fn in matched if e == everywhere]
    mutant, fn = best[0]
    line = describe(mutant)
    # Another site whose slip gives the same answers (the same site said another
    # way, such as unsqueeze(-1) for unsqueeze(1), is no news).
    other = next((m for m, _ in best[1:] if m.before != mutant.before), None)
    if other is not None:
        also = describe(other).removeprefix("your answers equal the right ones with one slip, ")
        line += f" (or, giving the same answers here, {also})"
    pointer = _pointer(texts)
    diagnosis = line + (f"; {pointer}" if pointer else "")
    return Mistake(f"one slip: {mutant.words}", fn, diagnosis), everywhere


#: When several slips give the reader's answers, the one named first: something
#: left out before something changed, a changed axis or bound last (a transpose
#: of an axis with itself is a transpose left out, not a changed axis).
_PREFERENCE = (
    "transpose", "keepdim", "scale", "fill", "sign", "compare", "times", "reduction",
    "bound", "dim",
)  # fmt: skip
