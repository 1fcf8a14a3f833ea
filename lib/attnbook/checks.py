"""Checkers for the exercises: run the reader's function on several cases.

Each ``check_*`` function calls your function on a handful of inputs, compares
each answer with the library's reference, and returns a :class:`CheckReport`.
In a notebook the report shows one line per case: which passed, which failed
and why. ``bool(report)`` is True when every case passed.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from . import kernels, masking


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


def _compare(got: object, expected: torch.Tensor, atol: float = 1e-5) -> str | None:
    """None if ``got`` matches ``expected``, else a sentence saying why not."""
    if not isinstance(got, torch.Tensor):
        return f"expected a torch.Tensor, got {type(got).__name__}"
    if got.shape != expected.shape:
        return f"expected shape {tuple(expected.shape)}, got {tuple(got.shape)}"
    got = got.detach().to("cpu", torch.float64)
    expected = expected.detach().to("cpu", torch.float64)
    if bool(torch.isnan(got).any()):
        return "the result contains NaN"
    error = (got - expected).abs()
    if bool((error > atol + 1e-4 * expected.abs()).any()):
        index = tuple(int(i) for i in torch.nonzero(error == error.max())[0])
        return (
            f"at index {index} expected {expected[index].item():.6g}, got {got[index].item():.6g}"
        )
    return None


def _run(
    name: str,
    fn: Callable,
    cases: list[tuple],
) -> CheckReport:
    """Each case is (description, args, expected) or (..., hint on failure)."""
    if not callable(fn):
        raise TypeError(f"fn must be a function, got {fn!r}")
    report = CheckReport(name)
    for description, args, expected, *hint in cases:
        copies = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
        try:
            got = fn(*args)
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


def check_softmax(fn: Callable[[torch.Tensor], torch.Tensor]) -> CheckReport:
    """Check ``fn(X)``: softmax over the last axis of a (rows, columns) tensor."""
    g = _generator(1)
    random = torch.randn(10, 10, generator=g)
    large = torch.tensor([[1000.0, 1001.0, 1002.0], [-1000.0, -1000.0, -999.0]])
    cases = [
        ("a random 10x10 matrix", (random,), torch.softmax(random, -1)),
        ("one row of equal scores", (torch.zeros(1, 4),), torch.full((1, 4), 0.25)),
        ("a single column", (torch.randn(3, 1, generator=g),), torch.ones(3, 1)),
        (
            "very large and very small scores",
            (large,),
            torch.softmax(large, -1),
            "exp(1000) overflows; subtract each row's maximum before exponentiating",
        ),
    ]
    return _run("check_softmax", fn, cases)


def check_normalize(fn: Callable[[torch.Tensor], torch.Tensor]) -> CheckReport:
    """Check ``fn(scores)``: divide nonnegative (rows, columns) scores by each row's sum."""
    g = _generator(2)
    scores = torch.rand(4, 6, generator=g)
    sparse = torch.tensor([[0.0, 3.0, 0.0, 1.0]])
    cases = [
        ("random nonnegative scores", (scores,), scores / scores.sum(-1, keepdim=True)),
        ("a row with zeros", (sparse,), torch.tensor([[0.0, 0.75, 0.0, 0.25]])),
        ("one-hot rows (a database lookup)", (torch.eye(3),), torch.eye(3)),
    ]
    return _run("check_normalize", fn, cases)


def check_epanechnikov(fn: Callable[[torch.Tensor], torch.Tensor]) -> CheckReport:
    """Check ``fn(u)``: the kernel max(0, 1 - |u|), elementwise."""
    grid = torch.linspace(-2.5, 2.5, 51)
    cases = [
        ("u from -2.5 to 2.5", (grid,), kernels.epanechnikov(grid)),
        ("u = 0 gives 1", (torch.zeros(1),), torch.ones(1)),
        ("|u| >= 1 gives exactly 0", (torch.tensor([1.0, -1.5, 3.0]),), torch.zeros(3)),
        (
            "a 2-D tensor of distances",
            (grid.reshape(3, 17),),
            kernels.epanechnikov(grid).reshape(3, 17),
        ),
    ]
    return _run("check_epanechnikov", fn, cases)


def check_gaussian_weights(
    fn: Callable[[torch.Tensor, torch.Tensor, float], torch.Tensor],
) -> CheckReport:
    """Check ``fn(x_query, x_train, width)``: Gaussian Nadaraya-Watson weights.

    The answer is (n_query, n_train) and equals
    softmax over i of -((x - x_i) / width)^2 / 2.
    """
    g = _generator(3)
    x_train = torch.sort(torch.rand(8, generator=g) * 5).values
    x_query = torch.linspace(0, 5, 6)
    cases = []
    for width in (1.0, 0.3, 4.0):
        expected = torch.softmax(
            -(((x_query[:, None] - x_train[None, :]) / width) ** 2) / 2, dim=-1
        )
        cases.append((f"6 queries, 8 keys, width {width}", (x_query, x_train, width), expected))
    return _run("check_gaussian_weights", fn, cases)


def check_masked_softmax(
    fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
) -> CheckReport:
    """Check ``fn(X, valid_lens)``: masked softmax of (batch, queries, keys) scores.

    Lengths may be 1-D (batch,) or 2-D (batch, queries). Rows of length 0 are
    not tested, since a plain implementation may handle them either way.
    """
    g = _generator(4)
    X = torch.randn(2, 2, 4, generator=g)
    wide = torch.randn(3, 5, 7, generator=g)
    cases = []
    for description, scores, lens in (
        ("1-D lengths [2, 3]", X, torch.tensor([2, 3])),
        ("2-D lengths [[1, 3], [2, 4]]", X, torch.tensor([[1, 3], [2, 4]])),
        ("every key valid", X, torch.tensor([4, 4])),
        ("a (3, 5, 7) batch with lengths [7, 1, 4]", wide, torch.tensor([7, 1, 4])),
    ):
        cases.append((description, (scores, lens), masking.masked_softmax(scores, lens)))
    return _run("check_masked_softmax", fn, cases)


def check_causal_lengths(fn: Callable[[int, int], torch.Tensor]) -> CheckReport:
    """Check ``fn(batch, queries)``: 2-D valid lengths for a look-back-only pattern.

    Query i (counting from 0) may see keys 0..i, so its length is i + 1; the
    answer is an integer tensor of shape (batch, queries).
    """
    cases = []
    for batch, queries in ((1, 4), (2, 3), (3, 6)):
        expected = torch.arange(1, queries + 1).expand(batch, queries)
        cases.append((f"batch={batch}, queries={queries}", (batch, queries), expected))
    return _run("check_causal_lengths", fn, cases)


def _reference_attention(Q, K, V):
    return torch.nn.functional.scaled_dot_product_attention(Q, K, V)


def check_scaled_dot_product(
    fn: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor],
) -> CheckReport:
    """Check ``fn(Q, K, V)``: softmax(Q K^T / sqrt(d)) V for (batch, n, d) tensors."""
    g = _generator(5)
    cases = []
    for b, q, k, d, v in ((2, 1, 10, 2, 4), (3, 5, 7, 16, 3), (1, 4, 4, 64, 8)):
        Q = torch.randn(b, q, d, generator=g)
        K = torch.randn(b, k, d, generator=g)
        V = torch.randn(b, k, v, generator=g)
        cases.append(
            (
                f"Q {(b, q, d)}, K {(b, k, d)}, V {(b, k, v)}",
                (Q, K, V),
                _reference_attention(Q, K, V),
            )
        )
    return _run("check_scaled_dot_product", fn, cases)


def check_entropy(fn: Callable[[torch.Tensor], torch.Tensor]) -> CheckReport:
    """Check ``fn(weights)``: entropy -sum p log p (natural log) of each row.

    ``weights`` is (..., keys) with rows summing to 1; the answer drops the last
    axis. A weight of exactly 0 contributes 0.
    """
    g = _generator(6)
    random = torch.softmax(torch.randn(4, 6, generator=g), -1)
    cases = [
        (
            "uniform over 8 keys gives log 8",
            (torch.full((1, 8), 1 / 8),),
            torch.tensor([math.log(8)]),
        ),
        (
            "one-hot rows give 0",
            (torch.eye(3),),
            torch.zeros(3),
            "0 * log(0) is NaN in floating point; treat p = 0 terms as 0, e.g. with torch.xlogy",
        ),
        ("random rows", (random,), -(random * random.log()).sum(-1)),
        (
            "a (2, 3, 5) batch",
            (random.new_full((2, 3, 5), 0.2),),
            torch.full((2, 3), math.log(5)),
        ),
    ]
    return _run("check_entropy", fn, cases)


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
    from .multihead import MultiHeadAttention

    if not callable(fn):
        raise TypeError(f"fn must be a function, got {fn!r}")
    cases = []
    for hiddens, heads, bias in ((40, 5, False), (40, 1, False), (12, 3, True), (48, 8, True)):
        with torch.random.fork_rng(devices=[]):  # building a layer draws random weights
            layer = MultiHeadAttention(hiddens, heads, bias=bias)
        total = sum(p.numel() for p in layer.parameters())
        hint = (
            "each projection is one num_hiddens x num_hiddens matrix shared by all heads, "
            "plus W_o, and a bias vector per projection when bias=True"
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
                "sequence's lengths num_heads times in a row, not the whole list",
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
                "i + offset; sin(a + t) = sin a cos t + cos a sin t",
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
                "query i has valid length i + 1, so it sees keys 0..i (itself included)",
            )
        )
    return _run("check_causal_self_attention", fn, cases)


# ---------------------------------------------------------------- attention that learns


def check_right_key_accuracy(
    fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
) -> CheckReport:
    """Check ``fn(weights, index)``: the fraction of rows whose largest weight is on the right key.

    ``weights`` is (rows, keys) and ``index`` is (rows,) integer; the answer is a
    0-d float tensor in [0, 1]. No case has ties.
    """
    g = _generator(7)
    random = torch.softmax(3 * torch.randn(6, 5, generator=g), -1)  # (rows, keys)
    right = torch.tensor([0, 1, 2, 3, 4, 0])
    square = torch.tensor([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6], [0.5, 0.4, 0.1]])
    cases = [
        (
            "4 rows, the right key largest in 2 of them",
            (
                torch.tensor([[0.6, 0.4], [0.3, 0.7], [0.9, 0.1], [0.2, 0.8]]),
                torch.tensor([0, 0, 1, 1]),
            ),
            torch.tensor(0.5),
            "count the rows whose largest weight is on the right key, then divide by the rows",
        ),
        ("every row right", (torch.eye(4), torch.arange(4)), torch.tensor(1.0)),
        (
            "a square (3, 3) batch",
            (square, torch.tensor([0, 2, 0])),
            torch.tensor(1.0),
            "the largest weight is taken over the keys, the last axis",
        ),
        (
            "random weights, 6 rows over 5 keys",
            (random, right),
            (random.argmax(-1) == right).float().mean(),
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
                "pick one value per example, not every example's value at those keys",
            )
        )
    return _run("check_two_part_targets", fn, cases)
