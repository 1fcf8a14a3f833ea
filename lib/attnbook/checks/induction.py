"""Checkers of chapter 11, induction heads: the two head scores."""

from __future__ import annotations

from collections.abc import Callable

import torch

from ._core import CheckReport, _generator, _run, _see

_INDUCTION = "Induction Heads: Attention That Copies"


def _causal_random(batch: int, heads: int, n: int, g: torch.Generator) -> torch.Tensor:
    """(batch, heads, n, n) random causal attention weights, rows summing to 1."""
    scores = 2 * torch.randn(batch, heads, n, n, generator=g)
    future = torch.ones(n, n, dtype=torch.bool).triu(1)
    return torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)


def _shifted(n: int, offset: int) -> torch.Tensor:
    """(n, n) causal pattern: query i puts all its weight on key max(i - offset, 0)."""
    pattern = torch.zeros(n, n)
    for i in range(n):
        pattern[i, max(i - offset, 0)] = 1.0
    return pattern


def check_previous_token_score(fn: Callable[[torch.Tensor], torch.Tensor]) -> CheckReport:
    """Check ``fn(weights)``: each head's previous-token score.

    ``weights`` is (batch, heads, n, n) (rows are queries); the answer is
    (heads,): the weight that query i puts on key i - 1, averaged over queries
    1 .. n - 1 and the batch (query 0 has no previous token).
    """
    from ..induction import previous_token_score

    g = _generator(11)
    previous = _shifted(6, 1)
    uniform = torch.ones(6, 6).tril()
    uniform = uniform / uniform.sum(-1, keepdim=True)
    itself = torch.eye(6)
    hands = torch.stack([previous, uniform, itself]).unsqueeze(0)  # (1, 3, 6, 6)
    random = _causal_random(3, 2, 7, g)
    hint_diag = (
        "the previous token of query i is key i - 1, one below the diagonal (the diagonal is "
        "the query itself); " + _see("Finding heads by their patterns", _INDUCTION)
    )
    hint_zero = (
        "query 0 has no previous token: average over queries 1 .. n - 1 only, and over the "
        "batch, one number per head; " + _see("Finding heads by their patterns", _INDUCTION)
    )
    cases = [
        (
            "three hand-made heads: previous token, uniform causal, attend to itself",
            (hands,),
            previous_token_score(hands),
            hint_diag,
        ),
        (
            "a perfect previous-token head scores 1",
            (previous.reshape(1, 1, 6, 6),),
            torch.ones(1),
            hint_zero,
        ),
        (
            "random causal weights, batch 3, 2 heads, 7 positions",
            (random,),
            previous_token_score(random),
            hint_zero,
        ),
    ]
    return _run("check_previous_token_score", fn, cases)


def check_induction_score(
    fn: Callable[[torch.Tensor, torch.Tensor, torch.Tensor, int], torch.Tensor],
) -> CheckReport:
    """Check ``fn(weights, first, second, segment)``: each head's induction score.

    ``weights`` is (batch, heads, n, n); ``first`` and ``second`` are (batch,)
    starts of the two copies of a segment of length ``segment``. The answer is
    (heads,): the weight that the query at ``second + j`` puts on key
    ``first + j + 1`` (the token after the earlier copy of the query's token),
    averaged over j = 0 .. segment - 1 and the batch.
    """
    from ..induction import induction_score

    g = _generator(12)
    n, segment = 12, 4
    first, second = torch.tensor([1]), torch.tensor([6])  # copies at 1..4 and 6..9
    induction = torch.zeros(n, n)
    copied = torch.zeros(n, n)
    for i in range(n):
        induction[i, i] = copied[i, i] = 1.0
    for j in range(segment):
        q = int(second[0]) + j
        induction[q] = 0.0
        induction[q, int(first[0]) + j + 1] = 1.0
        copied[q] = 0.0
        copied[q, int(first[0]) + j] = 1.0
    hands = torch.stack([induction, copied, _shifted(n, 1)]).unsqueeze(0)  # (1, 3, n, n)
    batch_first = torch.tensor([0, 3, 2])
    batch_second = torch.tensor([5, 8, 10])
    random = _causal_random(3, 2, 16, g)
    hint = (
        "an induction head at the query second + j looks at first + j + 1, the token AFTER "
        "the earlier copy of the current token (not first + j, the copy itself, and not "
        "the previous position); " + _see("Finding heads by their patterns", _INDUCTION)
    )
    hint_batch = (
        "each sequence has its own first and second; average over j = 0 .. segment - 1 and "
        "the batch, one number per head; " + _see("Finding heads by their patterns", _INDUCTION)
    )
    cases = [
        (
            "three hand-made heads: induction, attend to the earlier copy, previous token",
            (hands, first, second, segment),
            torch.tensor([1.0, 0.0, 0.0]),
            hint,
        ),
        (
            "random causal weights, batch 3 with different copies, 2 heads",
            (random, batch_first, batch_second, 5),
            induction_score(random, batch_first, batch_second, 5),
            hint_batch,
        ),
    ]
    return _run("check_induction_score", fn, cases)
