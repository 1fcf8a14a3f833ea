"""Checkers of Part II: multi-head attention, self-attention and positional encoding,
attention that learns."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from ._core import CheckReport, _generator, _run, _see

_MULTIHEAD = "Multi-Head Attention"
_SELF = "Self-Attention and Positional Encoding"
_LEARNS = "Attention That Learns"

# ---------------------------------------------------------------- Part II checkers
# Chapters 6 (multi-head attention) and 7 (self-attention and positional encoding).


def _count(fn: Callable) -> Callable:
    """Wrap a function that returns a number so that its answer compares as a tensor."""

    def wrapped(*args):
        got = fn(*args)
        if isinstance(got, torch.Tensor) and got.numel() == 1:
            got = got.item()
        if isinstance(got, bool) or not isinstance(got, (int, float)):
            raise TypeError(f"expected a number, got {type(got).__name__}")
        return torch.tensor(float(got), dtype=torch.float64)

    return wrapped


def check_mha_parameter_count(fn: Callable[[int, int, bool], int]) -> CheckReport:
    """Check ``fn(num_hiddens, num_heads, bias)``: the number of learnable parameters
    of ``attnbook.multihead.MultiHeadAttention(num_hiddens, num_heads, bias=bias)``.

    The expected answers come from building the layer and counting its entries.
    Every case has fewer than 10,000 parameters, so the tolerance of the
    comparison is below 1 and any wrong count fails.
    """
    from ..multihead import MultiHeadAttention

    if not callable(fn):
        raise TypeError(f"fn must be a function, got {fn!r}")
    cases = []
    for hiddens, heads, bias in ((40, 5, False), (40, 1, False), (12, 3, True), (48, 8, True)):
        with torch.random.fork_rng(devices=[]):  # building a layer draws random weights
            layer = MultiHeadAttention(hiddens, heads, bias=bias)
        total = sum(p.numel() for p in layer.parameters())
        hint = (
            "each projection is one num_hiddens x num_hiddens matrix shared by all heads, "
            "plus W_o, and a bias vector per projection when bias=True; "
            + _see("What several heads cost", _MULTIHEAD)
        )
        cases.append(
            (
                f"num_hiddens={hiddens}, num_heads={heads}, bias={bias}",
                (hiddens, heads, bias),
                torch.tensor(float(total), dtype=torch.float64),
                hint,
            )
        )
    return _run("check_mha_parameter_count", _count(fn), cases)


def check_head_lengths(fn: Callable[[torch.Tensor, int], torch.Tensor]) -> CheckReport:
    """Check ``fn(valid_lens, num_heads)``: valid lengths for the heads folded into the batch.

    ``valid_lens`` is (batch,) or (batch, queries); the answer is (batch * num_heads,)
    or (batch * num_heads, queries), where rows b * num_heads .. (b + 1) * num_heads - 1
    all hold the lengths of sequence b (the order ``split_heads`` uses).
    """
    cases = []
    for description, lens, heads in (
        ("lengths [3, 2], 5 heads", torch.tensor([3, 2]), 5),
        ("lengths [4, 0, 2], 3 heads", torch.tensor([4, 0, 2]), 3),
        ("one sequence, lengths [5], 4 heads", torch.tensor([5]), 4),
        ("2-D lengths [[1, 2], [3, 4]], 2 heads", torch.tensor([[1, 2], [3, 4]]), 2),
    ):
        rows = [lens[b] for b in range(lens.shape[0]) for _ in range(heads)]
        cases.append(
            (
                description,
                (lens, heads),
                torch.stack(rows),
                "head h of sequence b sits in row b * num_heads + h: repeat each "
                "sequence's lengths num_heads times in a row, not the whole list; "
                + _see("The parallel implementation, shape by shape", _MULTIHEAD),
            )
        )
    return _run("check_head_lengths", fn, cases)


def check_rotation(fn: Callable[[int, int], torch.Tensor]) -> CheckReport:
    """Check ``fn(offset, num_hiddens)``: the (num_hiddens, num_hiddens) matrix M with
    p_{i + offset} = M p_i for every row p_i of ``sinusoidal_encoding``.

    M is block diagonal, one 2 x 2 rotation by offset * w_j per (sin, cos) pair.
    """
    cases = []
    for offset, d in ((1, 2), (3, 8), (10, 32), (0, 6)):
        M = torch.zeros(d, d, dtype=torch.float64)
        for j in range(d // 2):
            angle = offset / 10000 ** (2 * j / d)
            c, s = math.cos(angle), math.sin(angle)
            M[2 * j : 2 * j + 2, 2 * j : 2 * j + 2] = torch.tensor([[c, s], [-s, c]])
        cases.append(
            (
                f"offset {offset}, num_hiddens {d}",
                (offset, d),
                M,
                "apply your matrix to row i of sinusoidal_encoding and compare with row "
                "i + offset; sin(a + t) = sin a cos t + cos a sin t; "
                + _see("Relative positions are rotations", _SELF),
            )
        )
    return _run("check_rotation", fn, cases)


def check_causal_self_attention(fn: Callable[[torch.Tensor], torch.Tensor]) -> CheckReport:
    """Check ``fn(X)``: causal scaled dot-product self-attention, X (batch, steps, d) ->
    (batch, steps, d), where X supplies queries, keys and values and position i
    attends to positions 0..i only.
    """
    g = _generator(7)
    cases = []
    for b, n, d in ((1, 4, 2), (2, 6, 8), (3, 1, 4)):
        X = torch.randn(b, n, d, generator=g)
        expected = torch.nn.functional.scaled_dot_product_attention(X, X, X, is_causal=True)
        cases.append(
            (
                f"X of shape {(b, n, d)}",
                (X,),
                expected,
                "query i has valid length i + 1, so it sees keys 0..i (itself included); "
                + _see("Causal masks: looking only backwards", _SELF),
            )
        )
    return _run("check_causal_self_attention", fn, cases)


# ---------------------------------------------------------------- attention that learns


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
    return _run("check_right_key_accuracy", fn, cases)


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
                "pick one value per example, not every example's value at those keys; "
                + _see("Exercises", _LEARNS),
            )
        )
    return _run("check_two_part_targets", fn, cases)
