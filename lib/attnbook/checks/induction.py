"""Checkers of chapter 11, induction heads: the two head scores."""

from __future__ import annotations

from collections.abc import Callable

import torch

from ._core import CheckReport, Mistake, _generator, _run, _see, knows
from ._source import Shortcut

#: Exercise 2 (a) writes the score "without calling induction.previous_token_score".
_SCORE_SHORTCUT = Shortcut(
    "the book's previous_token_score",
    ("attnbook.induction.previous_token_score", "attnbook.induction_heads.previous_token_score"),
    "the book's own induction.previous_token_score, which the exercise asks you not to call",
)

_INDUCTION = "Induction Heads: Attention That Copies"
_PATTERNS = _see("Finding heads by their patterns", _INDUCTION)


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


def _diagonal_mean(weights: torch.Tensor, offset: int) -> torch.Tensor:
    return weights.diagonal(offset=offset, dim1=-2, dim2=-1).mean(dim=(0, 2))


def _previous_with_query_0(weights: torch.Tensor) -> torch.Tensor:
    n = weights.shape[-1]
    return weights.diagonal(offset=-1, dim1=-2, dim2=-1).sum(dim=-1).mean(0) / n


def _previous_wrapping_round(weights: torch.Tensor) -> torch.Tensor:
    batch, _, n, _ = weights.shape
    total = weights.diagonal(offset=-1, dim1=-2, dim2=-1).sum(dim=(0, 2))
    return (total + weights[:, :, 0, -1].sum(0)) / (batch * (n - 1))


@knows(
    Mistake(
        "the diagonal",
        lambda w: _diagonal_mean(w, 0),
        "this looks like the weight of each query on itself (the main diagonal, offset 0); "
        "the previous token of query i is key i - 1, one below the diagonal (offset=-1); "
        + _PATTERNS,
    ),
    Mistake(
        "the next token",
        lambda w: _diagonal_mean(w, 1),
        "this looks like the weight on key i + 1 (offset=+1), above the diagonal, where a "
        "causal head puts nothing; the previous token is key i - 1 (offset=-1); " + _PATTERNS,
    ),
    Mistake(
        "counts query 0",
        _previous_with_query_0,
        "this looks like an average over all n queries: query 0 has no previous token, so "
        "divide by the n - 1 queries 1 .. n - 1 only; " + _PATTERNS,
    ),
    Mistake(
        "per sequence",
        lambda w: w.diagonal(offset=-1, dim1=-2, dim2=-1).mean(dim=-1),
        "this looks like one score per sequence and head, (batch, heads): average over the "
        "batch too, one number per head; " + _PATTERNS,
    ),
    Mistake(
        "a sum",
        lambda w: w.diagonal(offset=-1, dim1=-2, dim2=-1).sum(dim=(0, 2)),
        "this looks like a sum over the queries and the batch: the score is their average, "
        "so that a perfect previous-token head scores 1; " + _PATTERNS,
    ),
    Mistake(
        "wraps round",
        _previous_wrapping_round,
        "this looks like a loop that starts at query 0: its key 0 - 1 is key -1, which "
        "Python reads as the last key, so query 0's weight on the last key is counted; "
        "query 0 has no previous token, so start at query 1; " + _PATTERNS,
    ),
)
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
    # Query 0 has no previous token, so where it looks does not count: here on the
    # last key, where a loop from query 0 (key 0 - 1 wraps round to key n - 1) finds it.
    perfect = previous.clone()
    perfect[0] = 0.0
    perfect[0, -1] = 1.0
    hint_diag = (
        "the previous token of query i is key i - 1, one below the diagonal (the diagonal is "
        "the query itself); " + _PATTERNS
    )
    hint_zero = (
        "query 0 has no previous token: average over queries 1 .. n - 1 only, and over the "
        "batch, one number per head; " + _PATTERNS
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
            (perfect.reshape(1, 1, 6, 6),),
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
    return _run(
        "check_previous_token_score",
        fn,
        cases,
        mistakes=check_previous_token_score.mistakes,
        refuse=(_SCORE_SHORTCUT,),
    )


def _picked(weights, first, second, segment, query_shift=0, key_shift=1, steps=None):
    """Mean over j and the batch of the weight at (second + j + query_shift, first + j + key_shift)."""
    steps = segment if steps is None else steps
    offsets = torch.arange(steps)
    queries = second.unsqueeze(1) + offsets + query_shift  # (batch, steps)
    keys = first.unsqueeze(1) + offsets + key_shift  # (batch, steps)
    rows = torch.arange(weights.shape[0]).unsqueeze(1)
    return weights.permute(0, 2, 3, 1)[rows, queries, keys].mean(dim=(0, 1))  # (heads,)


@knows(
    Mistake(
        "the copy itself",
        lambda w, f, s, n: _picked(w, f, s, n, key_shift=0),
        "this looks like the weight on first + j, the earlier copy of the query's own token; "
        "an induction head looks one step past it, at first + j + 1, the token to copy; "
        + _PATTERNS,
    ),
    Mistake(
        "two steps past",
        lambda w, f, s, n: _picked(w, f, s, n, key_shift=2),
        "this looks like the weight on first + j + 2, one step too far: the token to copy "
        "stands at first + j + 1; " + _PATTERNS,
    ),
    Mistake(
        "the previous-token score",
        lambda w, f, s, n: _diagonal_mean(w, -1),
        "this looks like the previous-token score (weight on key i - 1): the induction score "
        "reads only the queries of the second copy, second + j, at key first + j + 1; " + _PATTERNS,
    ),
    Mistake(
        "the first sequence's copies",
        lambda w, f, s, n: _picked(w, f[:1].expand_as(f), s[:1].expand_as(s), n),
        "this looks like the copies of sequence 0 used for every sequence: each sequence "
        "has its own first[b] and second[b]; " + _PATTERNS,
    ),
    Mistake(
        "one query short",
        lambda w, f, s, n: _picked(w, f, s, n, steps=n - 1),
        "this looks like an average over j = 0 .. segment - 2 only: the score reads every "
        "query of the second copy, j = 0 .. segment - 1; " + _PATTERNS,
    ),
)
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
        "the previous position); " + _PATTERNS
    )
    hint_batch = (
        "each sequence has its own first and second; average over j = 0 .. segment - 1 and "
        "the batch, one number per head; " + _PATTERNS
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
    return _run("check_induction_score", fn, cases, mistakes=check_induction_score.mistakes)
