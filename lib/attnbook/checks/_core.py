"""What every checker shares: the report, the comparison, the case runner,
and the diagnosis of known mistakes.

A checker builds a list of cases, each ``(description, args, expected[, hint])``
or a :class:`Case`, and hands it to :func:`_run` with the reader's function.
``expected`` is a tensor, or a dict of tensors when a probe such as
:func:`_with_gradient` returns several parts.

**Diagnosis.** Each checker also knows the classic wrong versions of its
exercise, as :class:`Mistake` objects attached with :func:`knows`. When the
reader's function fails, :func:`_run` runs every known mistake on the same
cases; the first one whose answers agree with the reader's on every case (or,
failing that, on every failing case) is named in one line, "Likely mistake:
...". When none does, the reference's mutants are tried the same way
(``_matching``): the one the reader's answers equal is named as a slip, "your
answers equal the right ones with one slip, ...". Either way the case hints
are left out, since they were written for whatever
bug a case was built to catch, not for the reader's. When no known mistake
agrees, each failing case says in plain words what differs (shape, dtype, the
first wrong entry) and adds its hint, if it has one. An exception raised by
the reader's code is reported with its message and a one-line reading of it.
A hint or diagnosis ends with :func:`_see`, the section of the chapter that
explains the mistake, and never recommends what its exercise forbids.

**Refusals.** A checker whose exercise forbids a shortcut passes its
:class:`~._source.Shortcut` list as ``_run(..., refuse=...)``: a function whose
source (:func:`source_of`) takes one is not run, and every case fails with a
line that names what was refused and why; the report's ``mistake`` is
``"refused: ..."``. An in-place edit that was seen outranks a known mistake
that explains only the failing cases.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils._python_dispatch import _disable_current_modes

from ._readings import _read_exception as _read_exception  # the tests read it here
from ._source import Shortcut, shortcut_taken
from ._source import source_of as source_of  # the source a refusal reads

# The chapters, by the titles the reader sees.
_QKV = "Queries, Keys and Values"
_POOLING = "Attention Pooling by Similarity"
_MASKED = "Masked Softmax and Batched Attention"
_SCORING = "Attention Scoring Functions"

# float16 and bfloat16 answers are compared with a tolerance of a few units in
# their last place, and must keep the input's dtype.
_LOW_PRECISION = (torch.float16, torch.bfloat16)


# The diagnosis by the reference's mutants (_matching.match), set by the package's
# __init__ once _matching is imported: _matching builds on this module, so this
# module does not import it (no import circle).
_MATCH: Callable | None = None


def _see(section: str, chapter: str) -> str:
    """The pointer a hint ends with, e.g. see "Half precision" in Masked Softmax."""
    return f'see "{section}" in {chapter}'


class _Problem(Exception):
    """A problem found while probing the reader's function, reported as it is."""


@dataclass(frozen=True)
class Mistake:
    """A known wrong version of an exercise, and the one line that names it.

    ``fn`` takes the same arguments as the reader's function. ``diagnosis``
    is shown to a reader whose answers agree with ``fn``'s: it names the
    mistake in plain words ("this looks like a softmax over the queries,
    dim=0; ...") and ends with :func:`_see`.
    """

    name: str
    fn: Callable
    diagnosis: str


def knows(*mistakes: Mistake) -> Callable[[Callable], Callable]:
    """Attach the known mistakes of an exercise to its checker as ``.mistakes``.

    The checker passes ``mistakes=check_x.mistakes`` to :func:`_run`; the
    library's tests run every checker on each of its mistakes and require that
    mistake's own diagnosis.
    """
    names = [m.name for m in mistakes]
    if len(set(names)) != len(names):
        raise ValueError(f"mistake names must be distinct, got {names}")

    def attach(checker: Callable) -> Callable:
        checker.mistakes = tuple(mistakes)
        return checker

    return attach


@dataclass
class Case:
    """One case of a checker: ``fn(*args)`` must match ``expected``.

    ``probe``, when given, wraps the function under test for this case alone
    (the reader's and every known mistake alike), e.g. to check a gradient.
    """

    description: str
    args: tuple
    expected: Any
    hint: str | None = None
    probe: Callable[[Callable], Callable] | None = None


@dataclass
class CheckReport:
    """The outcome of one checker: a line per case, and the likely mistake."""

    name: str
    lines: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    #: The name of the known :class:`Mistake` the reader's answers agree with, if any,
    #: and the line that names it (shown after the cases).
    mistake: str | None = None
    diagnosis: str | None = None

    @property
    def passed(self) -> bool:
        return not self.failures

    def __bool__(self) -> bool:
        return self.passed

    def __repr__(self) -> str:
        total = len(self.lines)
        if self.passed:
            head = f"{self.name}: all {total} cases passed."
        else:
            head = f"{self.name}: {len(self.failures)} of {total} cases failed."
        tail = [self.diagnosis] if self.diagnosis else []
        return "\n".join([head, *self.lines, *tail])


def _compare_tensor(got: object, expected: torch.Tensor, atol: float = 1e-5) -> str | None:
    """None if the tensor ``got`` matches ``expected``, else a sentence saying why not."""
    if not isinstance(got, torch.Tensor):
        return f"expected a torch.Tensor, got {type(got).__name__}"
    if got.shape != expected.shape:
        return f"expected shape {tuple(expected.shape)}, got {tuple(got.shape)}"
    if _integer(expected) and not _integer(got):
        return (
            f"expected an integer tensor (dtype {expected.dtype}), got dtype {got.dtype}: "
            "lengths and counts are whole numbers; build them with integer arguments "
            "(torch.arange(1, n + 1), not torch.arange(1.0, n + 1)) or convert with .long()"
        )
    rtol = 1e-4
    if expected.dtype in _LOW_PRECISION:
        if got.dtype != expected.dtype:
            return f"expected dtype {expected.dtype} (the input's dtype), got {got.dtype}"
        atol = rtol = 4 * torch.finfo(expected.dtype).eps
    got = got.detach().to("cpu", torch.float64)
    expected = expected.detach().to("cpu", torch.float64)
    if bool(torch.isnan(got).any()):
        return "the result contains NaN"
    error = (got - expected).abs()
    if bool((error > atol + rtol * expected.abs()).any()):
        index = tuple(int(i) for i in torch.nonzero(error == error.max())[0])
        return (
            f"at index {index} expected {expected[index].item():.6g}, got {got[index].item():.6g}"
        )
    return None


# _compare_tensor's sentence for wrong values: the entry with the largest error.
_LARGEST_ERROR = re.compile(r"(?:[^:;]+: )?at index \([0-9, ]*\) expected \S+, got \S+")


def _with_reading(problem: str, reading: str) -> str:
    """A failing case's problem with the explainer's reading added. A reading that
    names the first wrong entry replaces the comparison's own "at index ...", which
    names the entry with the largest error: one wrong place per line, not two."""
    if "the first wrong entry is at" in reading and _LARGEST_ERROR.fullmatch(problem):
        return reading
    return f"{problem}; {reading}"


def _integer(t: torch.Tensor) -> bool:
    return not (t.is_floating_point() or t.is_complex() or t.dtype == torch.bool)


def _compare(got: object, expected: torch.Tensor | dict[str, torch.Tensor]) -> str | None:
    """Compare a tensor, or each named part of a dict of tensors (e.g. output and gradient)."""
    if not isinstance(expected, dict):
        return _compare_tensor(got, expected)
    for part, want in expected.items():
        problem = _compare_tensor(got[part], want)
        if problem is not None:
            return f"{part}: {problem}"
    return None


def _to_case(case: Case | tuple) -> Case:
    if isinstance(case, Case):
        return case
    description, args, expected, *hint = case
    return Case(description, args, expected, hint[0] if hint else None)


# ---------------------------------------------------------------- fresh copies, in-place edits


def _fresh(value: Any) -> Any:
    """A copy of a case's argument that the function under test may not share with
    anything else: tensors cloned (keeping ``requires_grad``), lists, tuples and
    dicts copied entry by entry, anything else (numbers, dtypes) as it is."""
    if isinstance(value, torch.Tensor):
        return value.detach().clone().requires_grad_(value.requires_grad)
    if isinstance(value, (list, tuple)):
        return type(value)(_fresh(v) for v in value)
    if isinstance(value, dict):
        return {k: _fresh(v) for k, v in value.items()}
    return value


def _tensors(value: Any, where: str) -> list[tuple[str, torch.Tensor]]:
    """The tensors inside an argument, each with where it sits ("argument 1", "argument 2[0]")."""
    if isinstance(value, torch.Tensor):
        return [(where, value)]
    if isinstance(value, (list, tuple)):
        return [t for i, v in enumerate(value) for t in _tensors(v, f"{where}[{i}]")]
    if isinstance(value, dict):
        return [t for k, v in value.items() for t in _tensors(v, f"{where}[{k!r}]")]
    return []


def _arguments(args: Sequence, names: Sequence[str] = ()) -> list[tuple[str, torch.Tensor]]:
    """The tensors among a call's arguments, named "argument 2 (K_cache)" where the name is known."""
    return [
        t
        for i, a in enumerate(args)
        for t in _tensors(a, f"argument {i + 1}" + (f" ({names[i]})" if i < len(names) else ""))
    ]


def _equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Same shape, dtype and entries, NaN equal to NaN."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.is_floating_point() or a.is_complex():
        return bool(torch.equal(torch.isnan(a), torch.isnan(b))) and bool(
            torch.equal(torch.nan_to_num(a, nan=0.0), torch.nan_to_num(b, nan=0.0))
        )
    return bool(torch.equal(a, b))


def _names(fn: Callable) -> list[str]:
    try:
        return list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):  # a builtin or a callable without a signature
        return []


_LEAF_IN_PLACE = "a leaf Variable that requires grad is being used in an in-place operation"


def _guarded(fn: Callable, modified: list[str]) -> Callable:
    """``fn``, watched: every argument it receives is compared after the call with
    a snapshot taken before, and each one it changed is appended to ``modified``
    (also when an in-place edit of a tensor that tracks gradients raises)."""
    names = _names(fn)

    def run(*args):
        with _disable_current_modes():  # the snapshots are not the function's tensors
            before = [(where, t, t.detach().clone()) for where, t in _arguments(args, names)]
        try:
            return fn(*args)
        except RuntimeError as err:
            if _LEAF_IN_PLACE in str(err) and before:
                modified.append(before[0][0])
            raise
        finally:
            with _disable_current_modes():
                for where, tensor, snapshot in before:
                    if not _equal(tensor.detach(), snapshot) and where not in modified:
                        modified.append(where)

    return run


def _in_place(modified: list[str]) -> str:
    return f"modified its input in place ({', '.join(modified)} changed)"


_IN_PLACE_DIAGNOSIS = (
    "the function modified its input in place: an operation such as X -= m, X /= s, "
    "X[...] = ... or a method ending in _ (X.sub_, X.masked_fill_) writes into the "
    "caller's tensor, which the caller may still need (and which then no longer holds "
    "what it did); compute into a new tensor instead, X = X - m"
)


@dataclass
class _Outcome:
    """What one function did on one case: a value, or an exception."""

    value: Any = None
    error: BaseException | None = None


def _attempt(fn: Callable, case: Case, probe: Callable | None) -> _Outcome:
    """Run ``fn`` (wrapped by the checker's and the case's probes) on fresh copies of the case."""
    wrapped = probe(fn) if probe is not None else fn
    if case.probe is not None:
        wrapped = case.probe(wrapped)
    try:
        return _Outcome(value=wrapped(*_fresh(case.args)))
    except Exception as err:  # a known mistake may raise anything, as the reader's code may
        return _Outcome(error=err)


def _agree(reader: _Outcome, mistake: _Outcome) -> bool:
    """True when the reader's outcome and a mistake's are the same, to the checker's tolerance."""
    if reader.error is not None or mistake.error is not None:
        return (
            reader.error is not None
            and mistake.error is not None
            and type(reader.error) is type(mistake.error)
        )
    got, want = reader.value, mistake.value
    if isinstance(want, dict) and isinstance(got, dict):
        return got.keys() == want.keys() and all(_same(got[k], want[k]) for k in want)
    return _same(got, want)


def _same(got: object, want: object) -> bool:
    """Two answers alike: equal shapes, NaN and infinities in the same places,
    the finite entries within the comparison's tolerance."""
    if not isinstance(want, torch.Tensor):
        try:
            return bool(got == want)
        except Exception:  # e.g. a tensor compared with a number of another shape
            return False
    if not isinstance(got, torch.Tensor) or got.shape != want.shape:
        return False
    try:
        got = got.detach().to("cpu", torch.float64)
        want = want.detach().to("cpu", torch.float64)
    except Exception:  # e.g. a complex tensor
        return False
    if not torch.equal(torch.isnan(got), torch.isnan(want)):
        return False
    finite = torch.isfinite(want)
    if not torch.equal(finite, torch.isfinite(got)):
        return False
    if not torch.equal(got[~finite & ~torch.isnan(want)], want[~finite & ~torch.isnan(want)]):
        return False
    tolerance = 1e-4 + 1e-3 * want[finite].abs()
    return bool(((got[finite] - want[finite]).abs() <= tolerance).all())


def _diagnose(
    fn: Callable,
    cases: list[Case],
    outcomes: list[_Outcome],
    failed: list[bool],
    mistakes: Sequence[Mistake],
    probe: Callable | None,
    unknown: Sequence[bool] = (),
) -> tuple[Mistake, bool] | None:
    """The known mistake the reader's answers agree with, and whether on every case.

    A mistake that agrees on every case wins; otherwise the first that agrees on
    every case the reader failed (it then explains the failures, if not all of
    the answers). Each mistake runs on fresh copies of the cases' inputs.

    A mistake that disagrees on a case the reader failed can be neither, so the
    failed cases are tried first and a mistake is dropped at its first
    disagreement: the rest of its cases (a large one can take a second under
    a probe) are not run.

    Cases marked ``unknown`` (where the reader's function stopped on its own
    in-place edit of a tensor that tracks gradients, which no mistake makes)
    say nothing either way and are left out.
    """
    skip = {i for i, u in enumerate(unknown) if u}
    order = [i for i, f in enumerate(failed) if f and i not in skip]
    order += [i for i, f in enumerate(failed) if not f and i not in skip]
    partial = None
    for mistake in mistakes:
        agrees_on_failed = True
        for i in order:
            if _agree(outcomes[i], _attempt(mistake.fn, cases[i], probe)):
                continue
            agrees_on_failed = not failed[i]
            break
        else:
            return mistake, True
        if partial is None and agrees_on_failed:
            partial = mistake
    return (partial, False) if partial is not None else None


def _run(
    name: str,
    fn: Callable,
    cases: list[tuple | Case],
    mistakes: Sequence[Mistake] = (),
    probe: Callable[[Callable], Callable] | None = None,
    explain: Callable[[Case, Any], str | None] | None = None,
    refuse: Sequence[Shortcut] = (),
) -> CheckReport:
    """Run ``fn`` on every case and report, one line per case, then the likely mistake.

    Each case is a :class:`Case` or a tuple (description, args, expected) or
    (description, args, expected, hint). ``fn(*args)`` must match ``expected``,
    a tensor, within a small tolerance (a few units in the last place for
    float16 and bfloat16 answers, which must also keep that dtype), without
    modifying its arguments. ``expected`` may also be a dict of named tensors
    when ``fn`` is a probe that returns such a dict (see ``_with_gradient``).

    ``fn`` and every known mistake run on fresh copies of each case's inputs,
    so that a function that edits its input in place changes neither the next
    case nor the diagnosis; such an edit is reported as "modified its input in
    place", and when it is the only thing wrong it is the likely mistake.

    ``probe`` wraps every function run, the reader's and each known mistake's
    (e.g. to turn a returned number into a tensor). ``mistakes`` are the known
    wrong versions (see :class:`Mistake` and the module docstring).
    ``explain(case, got)``, when given, says in plain words what differs in
    the first failing case whose answer no known mistake explains (which
    entries, and what that pattern usually means); it then replaces the
    case hints, which restate the method.

    ``refuse`` lists the shortcuts the exercise forbids (see :mod:`._source`):
    a function whose source takes one is not run, and fails every case.
    """
    if not callable(fn):
        raise TypeError(f"fn must be a function, got {fn!r}")
    cases = [_to_case(case) for case in cases]
    taken = shortcut_taken(fn, refuse)
    if taken is not None:
        return _refused(name, cases, *taken)
    report = CheckReport(name)
    outcomes, problems, wrong, edits = [], [], [], []
    for case in cases:
        modified: list[str] = []
        wrapped = _guarded(fn, modified)
        wrapped = probe(wrapped) if probe is not None else wrapped
        if case.probe is not None:
            wrapped = case.probe(wrapped)
        args = _fresh(case.args)
        try:
            got = wrapped(*args)
        except _Problem as found:
            outcomes.append(_Outcome(error=found))
            problem = str(found)
        except Exception as err:  # the reader's code may raise anything
            outcomes.append(_Outcome(error=err))
            in_place = _LEAF_IN_PLACE in str(err) and modified
            problem = None if in_place else _read_exception(err)
        else:
            outcomes.append(_Outcome(value=got))
            try:
                problem = _compare(got, case.expected)
            except Exception as err:  # e.g. a tensor that cannot be copied to the CPU
                problem = f"could not compare the result: {type(err).__name__}: {err}"
        for (where, after), (_, before) in zip(_arguments(args), _arguments(case.args)):
            if not modified and not _equal(after.detach(), before.detach()):
                modified.append(where)  # e.g. an edit made by a probe around the function
        wrong.append(problem is not None)
        edits.append(list(modified))
        problems.append(problem)
    unknown = [
        bool(m) and o.error is not None and _LEAF_IN_PLACE in str(o.error)
        for o, m in zip(outcomes, edits)
    ]
    found = _diagnose(fn, cases, outcomes, wrong, mistakes, probe, unknown) if any(wrong) else None
    if found is None and any(wrong) and _MATCH is not None:
        texts = [c.hint for c, w in zip(cases, wrong) if w] + [m.diagnosis for m in mistakes]
        found = _MATCH(name, cases, outcomes, wrong, probe, texts)
    if found is not None and not found[1] and any(edits):
        found = None  # an in-place edit seen beats a mistake that explains only the failures
    explained = found is not None or explain is None or not any(wrong)
    # The failing answers, for an explain that compares cases (is a count's ratio
    # to the right one the same in every case, or a coincidence of one case's sizes?).
    answers = [(c, o.value) for c, o, w in zip(cases, outcomes, wrong) if w and o.error is None]
    for case, outcome, problem, modified in zip(cases, outcomes, problems, edits):
        if problem is None and not modified:
            report.lines.append(f"  ok    {case.description}")
            continue
        if problem is None:
            problem = f"the function {_in_place(modified)}"
        else:
            if not explained and outcome.error is None:
                try:
                    reading = (
                        explain(case, outcome.value, others=answers)
                        if getattr(explain, "compares_cases", False)
                        else explain(case, outcome.value)
                    )
                except Exception:  # the reading is a courtesy: never let it break a report
                    reading = None
                if reading:
                    problem = _with_reading(problem, reading)
                    explained = True
            elif case.hint and found is None and explain is None:
                problem = f"{problem} (hint: {case.hint})"
            if explain is not None and found is None and case.hint:
                # The recipe is not repeated; the section to read still is.
                pointer = re.search(r'see "[^"]*" in .*$', case.hint)
                if pointer:
                    problem = f"{problem} ({pointer.group(0)})"
            if modified:
                problem = f"{problem}; it also {_in_place(modified)}"
        report.lines.append(f"  FAIL  {case.description}: {problem}")
        report.failures.append(case.description)
    if found is not None:
        mistake, everywhere = found
        report.mistake = mistake.name
        lead = "Likely mistake" if everywhere else "Likely mistake (in the failing cases)"
        report.diagnosis = f"  {lead}: {mistake.diagnosis}"
        if any(edits):
            report.diagnosis += (
                "; besides, the function modified its input in place (X -= m, X[...] = ..., "
                "a method ending in _): compute into a new tensor instead"
            )
    elif any(edits):
        report.mistake = "modified its input in place"
        texts = [m.diagnosis for m in mistakes] + [c.hint for c in cases if c.hint]
        pointer = next(
            (m.group(0) for t in texts if (m := re.search(r'see "[^"]*" in .*$', t))), ""
        )
        report.diagnosis = f"  Likely mistake: {_IN_PLACE_DIAGNOSIS}" + (
            f"; {pointer}" if pointer else ""
        )
    elif explain is not None and any(wrong) and not explained:
        hint = next((c.hint for c, w in zip(cases, wrong) if w and c.hint), None)
        if hint:
            report.diagnosis = f"  Hint: {hint}"
    return report


def _refused(name: str, cases: list[Case], shortcut: Shortcut, where: str) -> CheckReport:
    """The report of a function that takes a shortcut its exercise forbids: every
    case fails, each saying what was refused and why."""
    report = CheckReport(name, mistake=f"refused: {shortcut.name}")
    reason = f"refused: it uses {where}, {shortcut.why}"
    for case in cases:
        report.lines.append(f"  FAIL  {case.description}: {reason}")
        report.failures.append(case.description)
    report.diagnosis = (
        f"  Refused: your function uses {where}, {shortcut.why}; no case earns a point "
        "until it is gone (comments and strings do not count)"
    )
    return report


# Fresh cases: attnbook.checks.report_for(check, fn, seed=k) sets this to k while
# the checker runs, so that each checker's random inputs come from another draw.
_fresh_seed = 0


def _generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed + 1000 * _fresh_seed)


def _with_gradient(fn: Callable, upstream: torch.Tensor) -> Callable:
    """A probe that runs ``fn(X, *rest)`` on a copy of X that tracks gradients.

    It returns {"output": fn's result, "gradient": d(sum(output * upstream))/dX},
    so that one case checks both the values and what backpropagation makes of them.
    """

    def probe(X: torch.Tensor, *rest):
        leaf = X.detach().clone().requires_grad_(True)
        out = fn(leaf, *rest)
        if not isinstance(out, torch.Tensor):
            raise _Problem(f"expected a torch.Tensor, got {type(out).__name__}")
        if out.shape != upstream.shape:
            raise _Problem(f"expected shape {tuple(upstream.shape)}, got {tuple(out.shape)}")
        if out.grad_fn is None:
            raise _Problem(
                "no gradient reaches the scores: compute the result with torch operations "
                "on X itself (no .detach(), no torch.no_grad(), no detour through NumPy)"
            )
        (gradient,) = torch.autograd.grad((out * upstream.to(out.dtype)).sum(), leaf)
        return {"output": out, "gradient": gradient}

    return probe
