"""Checkers of Attention That Learns: the right-key accuracy and the two-part targets."""

from __future__ import annotations

from collections.abc import Callable

import torch

from ._core import CheckReport, Mistake, _generator, _run, _see, knows
from ._explain import describe, explainer

_LEARNS = "Attention That Learns"

# ---------------------------------------------------------------- attention that learns


_TRAINING = _see("Training", _LEARNS)


@knows(
    Mistake(
        "mean of booleans",
        lambda w, index: (w.argmax(dim=-1) == index).mean(),
        "this looks like .mean() on the booleans of ==: torch averages only "
        "floating-point tensors, so convert first, (...).float().mean(); " + _TRAINING,
    ),
    Mistake(
        "wrong axis",
        lambda w, index: (w.argmax(dim=0) == index).float().mean(),
        "this looks like argmax over the first axis (dim=0), the rows: each row is one "
        "query's weights over the keys, so take the argmax over the last axis, dim=-1; "
        + _TRAINING,
    ),
    Mistake(
        "a count",
        lambda w, index: (w.argmax(dim=-1) == index).float().sum(),
        "this looks like the number of right rows, not the fraction: divide by the "
        "number of rows (a .mean() does both); " + _TRAINING,
    ),
    Mistake(
        "per row",
        lambda w, index: (w.argmax(dim=-1) == index).float(),
        "this looks like one 0 or 1 per row: the answer is a single number, the mean "
        "over the rows, as a 0-d tensor; " + _TRAINING,
    ),
    Mistake(
        "smallest weight",
        lambda w, index: (w.argmin(dim=-1) == index).float().mean(),
        "this looks like argmin: a row is right when its largest weight, argmax, is on "
        "the right key; " + _TRAINING,
    ),
    Mistake(
        "mean weight on the right key",
        lambda w, index: w[torch.arange(w.shape[0]), index].mean(),
        "this looks like the mean weight on the right key: the accuracy is the share of "
        "rows whose largest weight is on the right key, each row counting 1 or 0 however "
        "sure it is, (w.argmax(dim=-1) == index).float().mean(); " + _TRAINING,
    ),
    Mistake(
        "a Python number",
        lambda w, index: (w.argmax(dim=-1) == index).float().mean().item(),
        "the value is right but it is a Python float (.item() or float(...)): the answer "
        "is a 0-d tensor, (...).float().mean() as it is; " + _TRAINING,
    ),
)
def check_right_key_accuracy(
    fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
) -> CheckReport:
    """Check ``fn(weights, index)``: the fraction of rows whose largest weight is on the right key.

    ``weights`` is (rows, keys) and ``index`` is (rows,) integer; the answer is a
    0-d float tensor in [0, 1], the contract of
    :func:`attnbook.recall.right_key_accuracy`. No case has ties.
    """
    # Seed 16 gives random rows whose largest weight is on the right key in 3 of
    # the 6 rows, so the case tests counting, not only "no row is right".
    g = _generator(16)
    random = torch.softmax(3 * torch.randn(6, 5, generator=g), -1)  # (rows, keys)
    right = torch.tensor([0, 1, 2, 3, 4, 0])
    random_hits = [
        row.tolist().index(max(row.tolist())) == key for row, key in zip(random, right.tolist())
    ]
    square = torch.tensor([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6], [0.5, 0.4, 0.1]])
    cases = [
        (
            "4 rows, the right key largest in 2 of them",
            (
                torch.tensor([[0.6, 0.4], [0.3, 0.7], [0.9, 0.1], [0.2, 0.8]]),
                torch.tensor([0, 0, 1, 1]),
            ),
            torch.tensor(0.5),
            "count the rows whose largest weight is on the right key, then divide by the rows; "
            + _see("Training", _LEARNS),
        ),
        (
            "every row right",
            (torch.eye(4), torch.arange(4)),
            torch.tensor(1.0),
            "one-hot rows on the right keys score 1; " + _see("Training", _LEARNS),
        ),
        (
            "a square (3, 3) batch",
            (square, torch.tensor([0, 2, 0])),
            torch.tensor(1.0),
            "the largest weight is taken over the keys, the last axis; "
            + _see("Training", _LEARNS),
        ),
        (
            f"random weights, 6 rows over 5 keys, {sum(random_hits)} of them right",
            (random, right),
            torch.tensor(sum(random_hits) / len(random_hits)),
            "argmax over the last axis, compared with index, as a float mean; "
            + _see("Training", _LEARNS),
        ),
    ]
    return _run(
        "check_right_key_accuracy",
        fn,
        cases,
        mistakes=check_right_key_accuracy.mistakes,
        explain=_one_case_at_a_time,
    )


def _one_case_at_a_time(case, got, others=()):
    """Read a wrong accuracy on its own case. The explainer's comparison of cases ("no
    single factor is off ... count each part again") is written for counting exercises
    and misleads here, where a wrong number is a wrong notion of accuracy, not a count."""
    return describe(got, case.expected, ())


def _two_part(values, first, second):
    half = values.shape[-1] // 2
    rows = torch.arange(values.shape[0])
    both = torch.cat([values[rows, first, :half], values[rows, second, half:]], dim=-1)
    return both[:, None, :]  # (batch, 1, d_v)


_TWO_PART = _see("Several heads", _LEARNS)
_EVERY_EXAMPLE = (
    "this looks like values[:, first]: it picks, for every example, the values at "
    "all the examples' keys; take one row per example with a batch index, "
    "values[torch.arange(batch), first]; " + _TWO_PART
)


def _every_example(values, first, second):
    """values[:, first] without the batch index: (batch, batch, d_v), every example's keys."""
    half = values.shape[-1] // 2
    return torch.cat([values[:, first, :half], values[:, second, half:]], -1)


@knows(
    Mistake(
        "every example's keys",
        lambda values, first, second: _every_example(values, first, second)[:, :1],
        _EVERY_EXAMPLE,
    ),
    Mistake(
        "every example's keys, unsqueezed",
        lambda values, first, second: _every_example(values, first, second).unsqueeze(1),
        _EVERY_EXAMPLE,
    ),
    Mistake(
        "halves swapped",
        lambda values, first, second: _two_part(values, second, first),
        "this looks like the halves swapped: the first half comes from the key at "
        "`first`, the second half from the key at `second`; " + _TWO_PART,
    ),
    Mistake(
        "whole value at first",
        lambda values, first, second: values[torch.arange(values.shape[0]), first][:, None],
        "this looks like the whole value at `first`: its second half must come from "
        "the key at `second`; " + _TWO_PART,
    ),
    Mistake(
        "no query axis",
        lambda values, first, second: _two_part(values, first, second)[:, 0],
        "the values are right but the shape is (batch, d_v): the targets have one query "
        "per example, shape (batch, 1, d_v); add the axis with [:, None] or "
        ".unsqueeze(1); " + _TWO_PART,
    ),
)
def check_two_part_targets(
    fn: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor],
) -> CheckReport:
    """Check ``fn(values, first, second)``: targets of the two-part recall task.

    ``values`` is (batch, n, d_v) with d_v even, ``first`` and ``second`` are
    (batch,) key indices; the answer is (batch, 1, d_v): the first half of the
    value at ``first`` followed by the second half of the value at ``second``.
    """
    g = _generator(8)
    cases = []
    for batch, n, d_v in ((1, 3, 2), (4, 5, 6), (3, 8, 16)):
        values = torch.randn(batch, n, d_v, generator=g)
        first = torch.randint(n, (batch,), generator=g)
        second = (first + 1 + torch.randint(n - 1, (batch,), generator=g)) % n
        half = d_v // 2
        expected = torch.stack(
            [
                torch.cat([values[b, int(first[b]), :half], values[b, int(second[b]), half:]])
                for b in range(batch)
            ]
        ).unsqueeze(1)
        cases.append(
            (
                f"values {(batch, n, d_v)}",
                (values, first, second),
                expected,
                "the first half comes from the key at `first`, the second half from `second`; "
                "pick one value per example, not every example's value at those keys; " + _TWO_PART,
            )
        )
    return _run(
        "check_two_part_targets",
        fn,
        cases,
        mistakes=check_two_part_targets.mistakes,
        explain=explainer(("example", "query", "feature")),
    )
