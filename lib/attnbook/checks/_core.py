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
...", and the case hints are left out, since they were written for whatever
bug a case was built to catch, not for the reader's. When no known mistake
agrees, each failing case says in plain words what differs (shape, dtype, the
first wrong entry) and adds its hint, if it has one. An exception raised by
the reader's code is reported with its message and a one-line reading of it.
A hint or diagnosis ends with :func:`_see`, the section of the chapter that
explains the mistake, and never recommends what its exercise forbids.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

# The chapters, by the titles the reader sees.
_QKV = "Queries, Keys and Values"
_POOLING = "Attention Pooling by Similarity"
_MASKED = "Masked Softmax and Batched Attention"
_SCORING = "Attention Scoring Functions"

# float16 and bfloat16 answers are compared with a tolerance of a few units in
# their last place, and must keep the input's dtype.
_LOW_PRECISION = (torch.float16, torch.bfloat16)


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


def _compare(got: object, expected: torch.Tensor | dict[str, torch.Tensor]) -> str | None:
    """Compare a tensor, or each named part of a dict of tensors (e.g. output and gradient)."""
    if not isinstance(expected, dict):
        return _compare_tensor(got, expected)
    for part, want in expected.items():
        problem = _compare_tensor(got[part], want)
        if problem is not None:
            return f"{part}: {problem}"
    return None


# Readings of the messages that torch raises most often in the exercises: a
# pattern of the message and what it usually means in the reader's code.
_READINGS: tuple[tuple[str, str], ...] = (
    (
        r"Expected size for first two dimensions of batch2 tensor|batch1 and batch2 must",
        "torch.bmm multiplies (batch, n, m) by (batch, m, p): the batch sizes or the inner "
        "sizes of your two tensors disagree; on a batch, K.T reverses all three axes, "
        "while K.transpose(-2, -1) swaps only the last two",
    ),
    (
        r"mat1 and mat2 shapes cannot be multiplied|size mismatch, got input|"
        r"shapes cannot be multiplied",
        "the two matrices of a product do not fit: the last size of the first must equal "
        "the first size of the second; print the shapes of both",
    ),
    (
        r"The size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\)",
        "two tensors were combined elementwise but their shapes do not broadcast: line up "
        "their shapes from the right; a reduction without keepdim=True drops an axis",
    ),
    (
        r"Dimension out of range|dimension specified as .* but tensor has no dimensions",
        "an axis index is larger than the tensor has axes; the last axis is dim=-1",
    ),
    (
        r"expected scalar type|expected .*dtype|result type .* can't be cast|"
        r"must have the same dtype|Found dtype",
        "two tensors of different dtypes met in one operation (for example float32 and "
        "float64, or a float and an integer tensor); convert one with .to(other.dtype)",
    ),
    (
        r"a leaf Variable that requires grad|modified by an inplace operation",
        "an in-place operation (a method ending in _, or x[...] = ...) changed a tensor "
        "that autograd still needs; build a new tensor instead",
    ),
    (
        r"not implemented for 'Half'|not implemented for 'BFloat16'",
        "this operation has no float16/bfloat16 version on the CPU; compute in float32 "
        "and convert the result back with .to(X.dtype)",
    ),
    (
        r"index .* is out of bounds|out of bounds for dimension|index out of range",
        "an index reached past the end of an axis: positions run from 0 to size - 1",
    ),
    (
        r"torch\.return_types",
        "X.max(dim=...) and X.min(dim=...) return a pair (values, indices), not a tensor: "
        "take its .values",
    ),
    (
        r"could not infer output dtype|Got: Bool|Got: Long",
        "mean() needs a floating-point tensor, and a comparison such as a == b gives a "
        "tensor of booleans: convert it first with .float()",
    ),
    (
        r"can't convert|Can't call numpy\(\) on Tensor that requires grad",
        "the tensor went through NumPy or Python numbers; stay with torch operations",
    ),
)


def _read_exception(err: BaseException) -> str:
    """The reader's exception, as its type, its first line and a one-line reading."""
    message = str(err).strip().splitlines()[0] if str(err).strip() else ""
    line = f"raised {type(err).__name__}: {message}" if message else f"raised {type(err).__name__}"
    for pattern, reading in _READINGS:
        if re.search(pattern, str(err)):
            return f"{line} (this usually means: {reading})"
    return line


def _to_case(case: Case | tuple) -> Case:
    if isinstance(case, Case):
        return case
    description, args, expected, *hint = case
    return Case(description, args, expected, hint[0] if hint else None)


@dataclass
class _Outcome:
    """What one function did on one case: a value, or an exception."""

    value: Any = None
    error: BaseException | None = None


def _attempt(fn: Callable, case: Case, probe: Callable | None) -> _Outcome:
    """Run ``fn`` (wrapped by the checker's and the case's probes) on a copy of the case."""
    wrapped = probe(fn) if probe is not None else fn
    if case.probe is not None:
        wrapped = case.probe(wrapped)
    args = [a.clone() if isinstance(a, torch.Tensor) else a for a in case.args]
    try:
        return _Outcome(value=wrapped(*args))
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
) -> tuple[Mistake, bool] | None:
    """The known mistake the reader's answers agree with, and whether on every case.

    A mistake that agrees on every case wins; otherwise the first that agrees on
    every case the reader failed (it then explains the failures, if not all of
    the answers).
    """
    partial = None
    for mistake in mistakes:
        agree = [
            _agree(outcome, _attempt(mistake.fn, case, probe))
            for case, outcome in zip(cases, outcomes)
        ]
        if all(agree):
            return mistake, True
        if partial is None and all(a for a, f in zip(agree, failed) if f):
            partial = mistake
    return (partial, False) if partial is not None else None


def _run(
    name: str,
    fn: Callable,
    cases: list[tuple | Case],
    mistakes: Sequence[Mistake] = (),
    probe: Callable[[Callable], Callable] | None = None,
) -> CheckReport:
    """Run ``fn`` on every case and report, one line per case, then the likely mistake.

    Each case is a :class:`Case` or a tuple (description, args, expected) or
    (description, args, expected, hint). ``fn(*args)`` must match ``expected``,
    a tensor, within a small tolerance (a few units in the last place for
    float16 and bfloat16 answers, which must also keep that dtype), without
    modifying its arguments. ``expected`` may also be a dict of named tensors
    when ``fn`` is a probe that returns such a dict (see ``_with_gradient``).

    ``probe`` wraps every function run, the reader's and each known mistake's
    (e.g. to turn a returned number into a tensor). ``mistakes`` are the known
    wrong versions (see :class:`Mistake` and the module docstring).
    """
    if not callable(fn):
        raise TypeError(f"fn must be a function, got {fn!r}")
    cases = [_to_case(case) for case in cases]
    report = CheckReport(name)
    outcomes, problems = [], []
    for case in cases:
        wrapped = probe(fn) if probe is not None else fn
        if case.probe is not None:
            wrapped = case.probe(wrapped)
        copies = [a.clone() if isinstance(a, torch.Tensor) else a for a in case.args]
        try:
            got = wrapped(*case.args)
        except _Problem as found:
            outcomes.append(_Outcome(error=found))
            problem = str(found)
        except Exception as err:  # the reader's code may raise anything
            outcomes.append(_Outcome(error=err))
            problem = _read_exception(err)
        else:
            outcomes.append(_Outcome(value=got))
            try:
                problem = _compare(got, case.expected)
            except Exception as err:  # e.g. a tensor that cannot be copied to the CPU
                problem = f"could not compare the result: {type(err).__name__}: {err}"
            if problem is None:
                for before, after in zip(copies, case.args):
                    if isinstance(after, torch.Tensor) and not torch.equal(before, after):
                        problem = "the function modified its input in place"
                        break
        problems.append(problem)
    failed = [problem is not None for problem in problems]
    found = _diagnose(fn, cases, outcomes, failed, mistakes, probe) if any(failed) else None
    for case, problem in zip(cases, problems):
        if problem is None:
            report.lines.append(f"  ok    {case.description}")
            continue
        if case.hint and found is None:
            problem = f"{problem} (hint: {case.hint})"
        report.lines.append(f"  FAIL  {case.description}: {problem}")
        report.failures.append(case.description)
    if found is not None:
        mistake, everywhere = found
        report.mistake = mistake.name
        lead = "Likely mistake" if everywhere else "Likely mistake (in the failing cases)"
        report.diagnosis = f"  {lead}: {mistake.diagnosis}"
    return report


def _generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


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
