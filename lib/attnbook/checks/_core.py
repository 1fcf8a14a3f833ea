"""What every checker shares: the report, the comparison, the case runner.

A checker builds a list of cases, each ``(description, args, expected[, hint])``,
and hands it to :func:`_run` with the reader's function. ``expected`` is a
tensor, or a dict of tensors when a probe such as :func:`_with_gradient`
returns several parts. A hint ends with :func:`_see`, the section of the chapter
that explains the mistake.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

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


@dataclass
class CheckReport:
    """The outcome of one checker: a line per case."""

    name: str
    lines: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

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
        return "\n".join([head, *self.lines])


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


def _run(
    name: str,
    fn: Callable,
    cases: list[tuple],
) -> CheckReport:
    """Run ``fn`` on every case and report, one line per case.

    Each case is a tuple (description, args, expected) or (description, args,
    expected, hint). ``fn(*args)`` must match ``expected``, a tensor, within a
    small tolerance (a few units in the last place for float16 and bfloat16
    answers, which must also keep that dtype), without modifying its arguments.
    ``expected`` may also be a dict of named tensors when ``fn`` is a probe that
    returns such a dict (see ``_with_gradient``). The hint, when given, is added
    to a failing case's line: say what the likely mistake is and end with
    ``_see(section, chapter)``.
    """
    if not callable(fn):
        raise TypeError(f"fn must be a function, got {fn!r}")
    report = CheckReport(name)
    for description, args, expected, *hint in cases:
        copies = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
        try:
            got = fn(*args)
        except _Problem as found:
            problem = str(found)
        except Exception as err:  # the reader's code may raise anything
            problem = f"raised {type(err).__name__}: {err}"
        else:
            try:
                problem = _compare(got, expected)
            except Exception as err:  # e.g. a tensor that cannot be copied to the CPU
                problem = f"could not compare the result: {type(err).__name__}: {err}"
            if problem is None:
                for before, after in zip(copies, args):
                    if isinstance(after, torch.Tensor) and not torch.equal(before, after):
                        problem = "the function modified its input in place"
                        break
        if problem is None:
            report.lines.append(f"  ok    {description}")
        else:
            if hint:
                problem = f"{problem} (hint: {hint[0]})"
            report.lines.append(f"  FAIL  {description}: {problem}")
            report.failures.append(description)
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
