"""What differs in a failing case, in plain words, when no known mistake matches.

:func:`explainer` builds the ``explain`` argument of :func:`._core._run` from
the names of the answer's axes and, optionally, a checker's own patterns: a
transformation of the expected answer and what it means when the reader's
answer equals it. It names the first wrong entry by its axes, expected against
got, and the first pattern that fits (a constant factor, a transpose, a
reversed axis, errors confined to some rows, NaN where the answer is finite).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

#: A checker's own pattern: (what the answer looks like, the expected answer
#: transformed that way, what that usually means).
Pattern = tuple[str, Callable[[torch.Tensor], torch.Tensor], str]


def _close(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.shape != b.shape:
        return False
    a, b = a.double(), b.double()
    if not torch.equal(torch.isfinite(a), torch.isfinite(b)):
        return False
    finite = torch.isfinite(b)
    return bool(((a[finite] - b[finite]).abs() <= 1e-4 + 1e-3 * b[finite].abs()).all())


def _where(index: tuple[int, ...], axes: Sequence[str]) -> str:
    names = list(axes)[-len(index) :] if len(axes) >= len(index) else list(axes)
    names = [f"axis {i}" for i in range(len(index) - len(names))] + names
    return ", ".join(f"{name} {i}" for name, i in zip(names, index))


def describe(
    got: Any,
    expected: Any,
    axes: Sequence[str],
    patterns: Sequence[Pattern] = (),
    others: Sequence[tuple[str, Any, Any]] = (),
) -> str | None:
    """The first differing entry and the pattern of the difference, or None.

    ``others`` are the other failing cases, (description, answer, expected): a
    number that is k times the right one is said to be so only when it is k
    times in each of them too (a factor of 4 in one case may be a coincidence of
    its sizes)."""
    if isinstance(expected, dict):
        if not isinstance(got, dict):
            return None
        for part, want in expected.items():
            if (
                part in got
                and isinstance(got[part], torch.Tensor)
                and not _close(got[part].detach().cpu(), want.cpu())
            ):
                reading = describe(got[part], want, axes, patterns)
                return f"in {part}: {reading}" if reading else None
        return None
    if not isinstance(got, torch.Tensor) or not isinstance(expected, torch.Tensor):
        return None
    got = got.detach().to("cpu", torch.float64)
    want = expected.detach().to("cpu", torch.float64)
    for looks, transform, meaning in patterns:
        try:
            if _close(got, transform(want)):
                return f"your answer {looks}, which usually means {meaning}"
        except Exception:  # a pattern that does not apply to this case's shapes
            continue
    if got.shape != want.shape:
        return _shapes(got, want, axes)
    if want.dim() == 0:
        ratio = got.item() / want.item() if want.item() else float("nan")
        for what, other, right in others:
            try:
                theirs = float(other) / float(right)
            except Exception:  # not a number: nothing to compare
                continue
            if not abs(theirs - ratio) <= 1e-9 * abs(ratio):
                return (
                    f"yours is {ratio:.4g} times the right number here but {theirs:.4g} times "
                    f"in the case {what}: no single factor is off, so some part of your count grows "
                    "with the sizes differently from the right one; count each part again"
                )
        return f"yours is {ratio:.4g} times the right number"
    bad = ~((got - want).abs() <= 1e-4 + 1e-3 * want.abs())
    bad |= torch.isnan(got) != torch.isnan(want)
    if not bool(bad.any()):
        return None
    first = tuple(int(i) for i in torch.nonzero(bad)[0])
    line = (
        f"the first wrong entry is at {_where(first, axes)}: expected {want[first].item():.6g}, "
        f"got {got[first].item():.6g}"
    )
    return f"{line}; {_pattern(got, want, bad, axes)}"


def _shapes(got: torch.Tensor, want: torch.Tensor, axes: Sequence[str]) -> str:
    named = ", ".join(f"{a} {s}" for a, s in zip(axes, want.shape))
    line = (
        f"the answer should have shape {tuple(want.shape)} ({named}), yours is {tuple(got.shape)}"
    )
    if got.numel() == want.numel():
        return (
            f"{line}: the same entries laid out differently, a reshape or view in the wrong order"
        )
    if got.dim() == want.dim() - 1:
        return f"{line}: one axis too few, usually a sum or mean over an axis that must stay"
    if got.dim() == want.dim() + 1:
        return f"{line}: one axis too many, usually a missing sum or a broadcast that went wrong"
    return line


def _pattern(got: torch.Tensor, want: torch.Tensor, bad: torch.Tensor, axes: Sequence[str]) -> str:
    names = (
        list(axes)[-want.dim() :]
        if len(axes) >= want.dim()
        else [f"axis {i}" for i in range(want.dim())]
    )
    if bool(torch.isnan(got).any() | torch.isinf(got).any()) and bool(torch.isfinite(want).all()):
        return (
            "your answer has NaN or inf where the right one is finite, usually a division "
            "by zero (an empty row, a sum of 0) or exp of a large number"
        )
    if want.dim() >= 2 and want.shape[-1] == want.shape[-2] and _close(got, want.transpose(-1, -2)):
        return (
            f"your answer is the right one transposed ({names[-2]} and {names[-1]} swapped), "
            "usually an index order or a .T in the wrong place"
        )
    nonzero = want.abs() > 1e-6
    if bool(nonzero.any()):
        ratios = got[nonzero] / want[nonzero]
        c = ratios.median().item()
        if abs(c) < 1e-6 and bool((got.abs() <= 1e-6).all()):
            return (
                "your answer is all zeros where the right one is not: a whole row or "
                "tensor was zeroed or masked out, or every entry underflowed"
            )
        if abs(c - 1) > 1e-3 and _close(got, c * want):
            return (
                f"every entry is {c:.4g} times the right one: a constant factor is off, "
                "usually a scale or a normalisation forgotten, applied twice or the wrong one"
            )
    offset = (got - want).median().item()
    if abs(offset) > 1e-6 and _close(got, want + offset):
        return f"every entry is off by the same {offset:+.4g}: a constant term is off"
    for d in range(want.dim()):
        if want.shape[d] > 1 and _close(got, want.flip(d)):
            return f"your answer is the right one reversed along {names[d]}, an order confused"
    for d in range(want.dim()):
        if want.shape[d] < 2:
            continue
        rows = bad.movedim(d, 0).reshape(want.shape[d], -1).any(dim=1)
        if bool(rows.all()):
            continue
        wrong = [int(i) for i in torch.nonzero(rows).flatten()]
        if len(wrong) == 1:
            which = f"{names[d]} {wrong[0]}"
        else:
            which = (
                f"{names[d]} " + ", ".join(map(str, wrong[:6])) + (" ..." if len(wrong) > 6 else "")
            )
        return (
            f"only {which} (of {want.shape[d]}) {'is' if len(wrong) == 1 else 'are'} wrong, the "
            f"rest is right: look at what is special about {'it' if len(wrong) == 1 else 'them'} "
            "(a first or last position, a boundary, a length, an edge of a mask)"
        )
    return "the entries differ throughout, with no simple pattern: check each step on this case"


def explainer(axes: Sequence[str], patterns: Sequence[Pattern] = ()) -> Callable:
    """The ``explain`` argument of ``_run``: describes a case's answer against the expected."""

    def explain(case, got, others=()):
        compared = [(c.description, g, c.expected) for c, g in others if c is not case]
        return describe(got, case.expected, axes, patterns, compared)

    explain.compares_cases = True  # _run hands it the other failing answers
    return explain
