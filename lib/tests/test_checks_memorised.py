"""A hidden test (seed 1) fails a function that memorised the book's cases.

For every checker, a "memoriser" gives the right answer on exactly the inputs
the book's cases (seed 0) pass it and raises on any other: it passes the
book's report and must fail at least one of the fresh cases; the right
answers pass at seeds 0, 1 and 2, with as many cases under every seed.
"""

from __future__ import annotations

import pytest
import torch
from test_checks_fresh import NAMES, RIGHT

from attnbook.checks import report_for


def _key(value) -> object:
    """What a memoriser remembers of an argument: every number in it, its dtype, its kind."""
    if isinstance(value, torch.Tensor):
        entries = value.detach().to("cpu").reshape(-1).tolist()
        return ("tensor", value.dtype, tuple(value.shape), tuple(entries))
    if isinstance(value, torch.nn.Module):
        return ("module", type(value).__qualname__, _key(list(value.state_dict().values())))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_key(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple((k, _key(v)) for k, v in value.items()))
    if isinstance(value, (int, float, str, bool, torch.dtype, type(None))):
        return value
    return ("object", type(value).__qualname__, id(value))


def _memoriser(name: str):
    """The right answer on the inputs of the book's cases, an error on any other."""
    right, seen = RIGHT[name], set()

    def recording(*args):
        seen.add(_key(args))
        return right(*args)

    report_for(name, recording, seed=0)

    def memorised(*args):
        if _key(args) not in seen:
            raise RuntimeError("these inputs are not among the book's cases")
        return right(*args)

    return memorised


@pytest.mark.parametrize("name", NAMES)
def test_a_memorised_answer_fails_a_hidden_case(name):
    memorised = _memoriser(name)
    public = report_for(name, memorised, seed=0)
    assert public.passed, repr(public)
    hidden = report_for(name, memorised, seed=1)
    assert not hidden.passed, f"{name}: the hidden cases repeat the book's\n{hidden!r}"


@pytest.mark.parametrize("name", NAMES)
def test_the_right_answer_passes_fresh_cases(name):
    counts = set()
    for seed in (0, 1, 2):
        report = report_for(name, RIGHT[name], seed=seed)
        assert report.passed, f"seed {seed}\n{report!r}"
        counts.add(len(report.lines))
    assert len(counts) == 1, f"{name} runs {sorted(counts)} cases under seeds 0, 1 and 2"
