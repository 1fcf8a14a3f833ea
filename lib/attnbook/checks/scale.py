"""Checkers of chapter 12, Attention at Scale: the memory of naive attention,
online softmax and (in ``tiled``, re-exported here) tiled causal attention.

The online softmax exercise forbids a shortcut: a function that calls
``torch.softmax`` computes the right numbers the wrong way. Its checker runs
the reader's function under the memory tracker of ``attnbook.flash`` and
rejects that route.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

import torch

from ._core import CheckReport, Mistake, _generator, _run, _see, knows
from ._draws import _draws
from ._explain import describe
from ._probes import _watched
from ._source import SOFTMAXES, Shortcut
from .tiled import check_tiled_causal as check_tiled_causal  # re-exported: it lived here

#: Exercise 1 writes the online softmax from scratch: the book's own is refused.
_ONLINE_SHORTCUT = Shortcut(
    "the book's online_softmax",
    ("attnbook.flash.online_softmax", "attnbook.flash.online_normalizer"),
    "the book's own online softmax: the exercise asks you to write it from scratch",
)
#: ... and PyTorch's softmax, which the runtime probe catches in this process.
_ONLINE_TORCH = Shortcut(
    "torch.softmax",
    SOFTMAXES,
    "PyTorch's softmax, which the exercise replaces",
    methods=("softmax", "log_softmax"),
    remote=True,
)

_SCALE = "Attention at Scale"
_ONLINE = _see("Online softmax", _SCALE)
_MEMORY = _see("How much memory naive attention needs", _SCALE)


# ---------------------------------------------------------------- the memory of naive attention


def _bytes_of(dtype: torch.dtype) -> int:
    return torch.tensor([], dtype=dtype).element_size()


def _as_bytes(fn: Callable) -> Callable:
    """A probe turning the reader's answer (int, float or one-element tensor) into a tensor."""

    def run(*args):
        got = fn(*args)
        if isinstance(got, torch.Tensor) and got.numel() == 1:
            got = got.item()
        if isinstance(got, bool) or not isinstance(got, (int, float)):
            raise TypeError(f"expected a number of bytes, got {type(got).__name__}")
        return torch.tensor(float(got), dtype=torch.float64)

    return run


@knows(
    Mistake(
        "bits",
        lambda n, h, dtype: 8 * n * n * h * _bytes_of(dtype),
        "this looks like bits, 8 times too many: torch.finfo(dtype).bits counts bits, and a "
        "byte holds 8 of them; " + _MEMORY,
    ),
    Mistake(
        "one head",
        lambda n, h, dtype: n * n * _bytes_of(dtype),
        "this looks like the weights of one head: each of the num_heads heads keeps its own "
        "n x n matrix; " + _MEMORY,
    ),
    Mistake(
        "always float32",
        lambda n, h, dtype: n * n * h * 4,
        "this looks like 4 bytes per number whatever the dtype: float16 and bfloat16 take 2, "
        "float64 takes 8; " + _MEMORY,
    ),
    Mistake(
        "n, not n squared",
        lambda n, h, dtype: n * h * _bytes_of(dtype),
        "this looks like n numbers per head: the weights are an n x n matrix, n * n numbers "
        "per head; " + _MEMORY,
    ),
    Mistake(
        "scores and weights",
        lambda n, h, dtype: 2 * n * n * h * _bytes_of(dtype),
        "this is twice the answer, as if counting the scores and the weights: the question "
        "is the weights alone, one n x n matrix per head; " + _MEMORY,
    ),
    Mistake(
        "causal half",
        lambda n, h, dtype: n * (n + 1) // 2 * h * _bytes_of(dtype),
        "this looks like n (n + 1) / 2 numbers per head, the entries a causal mask keeps: "
        "naive attention stores the whole n x n matrix, the masked zeros included; " + _MEMORY,
    ),
    Mistake(
        "bfloat16 as 4 bytes",
        lambda n, h, dtype: n * n * h * {torch.float16: 2, torch.float64: 8}.get(dtype, 4),
        "this counts bfloat16 as 4 bytes: bfloat16 has 16 bits like float16 (2 bytes), with "
        "float32's range and fewer digits; torch.finfo(dtype).bits // 8 gives every size; "
        + _MEMORY,
    ),
    Mistake(
        "in GB",
        lambda n, h, dtype: n * n * h * _bytes_of(dtype) / 10**9,
        "this looks like the answer in GB (divided by 10**9): the checker wants bytes; " + _MEMORY,
    ),
    Mistake(
        "in MiB",
        lambda n, h, dtype: n * n * h * _bytes_of(dtype) / 2**20,
        "this looks like the answer in MiB (divided by 2**20): the checker wants bytes; " + _MEMORY,
    ),
    Mistake(
        "in GiB",
        lambda n, h, dtype: n * n * h * _bytes_of(dtype) / 2**30,
        "this looks like the answer in GiB (divided by 2**30): the checker wants bytes; " + _MEMORY,
    ),
)
def check_attention_memory(fn: Callable[[int, int, torch.dtype], int]) -> CheckReport:
    """Check ``fn(n, num_heads, dtype)``: the bytes of the attention weights that
    naive attention stores for one sequence in one layer (n x n per head).

    ``dtype`` is one of torch.float16, torch.bfloat16, torch.float32 and
    torch.float64. The answer is a number of bytes (an int, a float or a
    one-element tensor); every case is checked to within 0.01 %.
    """
    if not callable(fn):
        raise TypeError(f"fn must be a function, got {fn!r}")
    sizes = {torch.float16: 2, torch.bfloat16: 2, torch.float32: 4, torch.float64: 8}
    settings = [
        (8192, 32, torch.float16),
        (1024, 1, torch.float32),
        (4096, 16, torch.bfloat16),
        (2048, 8, torch.float64),
    ]
    draw = _draws(906)
    if draw is not None:  # a hidden test: other lengths and heads, the four dtypes reordered
        dtypes = draw.permutation([dtype for _, _, dtype in settings])
        settings = [
            (draw.int(4097, 16384), draw.int(2, 64), dtypes[0]),
            (draw.int(100, 4096), 1, dtypes[1]),  # one head
            (draw.int(1025, 8192), draw.int(2, 32), dtypes[2]),
            (draw.int(100, 4096), draw.int(2, 16), dtypes[3]),
        ]
    cases = []
    answers: dict[tuple, object] = {}  # the reader's own answers, for the failing lines
    for n, heads, dtype in settings:
        cases.append(
            (
                f"n={n}, num_heads={heads}, {dtype}",
                (n, heads, dtype),
                torch.tensor(float(n * n * heads * sizes[dtype]), dtype=torch.float64),
                "each head stores an n x n matrix, and each entry takes the dtype's size in "
                "bytes (2 for float16 and bfloat16, 4 for float32, 8 for float64), not bits; "
                + _MEMORY,
            )
        )

    def reader(n, num_heads, dtype):
        got = fn(n, num_heads, dtype)
        answers[n, num_heads, dtype] = got
        return got

    reader.__name__ = getattr(fn, "__name__", "fn")
    report = _run(
        "check_attention_memory",
        reader,
        cases,
        explain=lambda case, got: (
            describe(got, case.expected, ("bytes",))
            + ": a factor is off; compare yours with n * n * num_heads * bytes per number "
            "one factor at a time (n and the heads are the case's, the bytes are 2, 4 or 8)"
        ),
        mistakes=check_attention_memory.mistakes,
        probe=_as_bytes,
    )
    _whole_numbers(report, settings, sizes, answers)
    return report


def _count(value: object) -> str:
    """A number of bytes as a reader writes it: a whole number in full, with thousands
    separators (4,294,967,296, not 4.29497e+09); any other to 6 decimals, zeros dropped."""
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return repr(value)
    if math.isfinite(value) and float(value).is_integer():
        return f"{int(value):,}"
    if math.isfinite(value):
        return f"{value:,.6f}".rstrip("0").rstrip(".")
    return str(value)


def _whole_numbers(report: CheckReport, settings, sizes, answers) -> None:
    """Rewrite the comparison's "at index () expected 4.29497e+09, got 1.34218e+08" of
    each failing case as "expected 4,294,967,296 bytes, got 134,217,728"."""
    for (n, heads, dtype), i in zip(settings, range(len(report.lines))):
        line = report.lines[i]
        found = re.search(r"at index \(\) expected [^\s;]+, got [^\s;]+", line)
        if not line.startswith("  FAIL  ") or found is None or (n, heads, dtype) not in answers:
            continue
        exact = n * n * heads * sizes[dtype]
        words = f"expected {_count(exact)} bytes, got {_count(answers[n, heads, dtype])}"
        report.lines[i] = line[: found.start()] + words + line[found.end() :]


# ---------------------------------------------------------------- online softmax


def _online(X: torch.Tensor, block_size: int, rescale: bool = True, guard: bool = True, sign=1):
    """An online softmax with switchable parts, for the known mistakes."""
    m = torch.full(X.shape[:-1], -math.inf, dtype=X.dtype)
    l = torch.zeros(X.shape[:-1], dtype=X.dtype)
    for start in range(0, X.shape[-1], block_size):
        block = X[..., start : start + block_size]
        m_new = torch.maximum(m, block.amax(dim=-1))
        shift = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new) if guard else m_new
        factor = torch.exp(sign * (m - shift)) if rescale else 1.0
        if not guard and not rescale:
            factor = 1.0
        l = l * factor + torch.exp(block - shift.unsqueeze(-1)).sum(dim=-1)
        m = m_new
    return torch.exp(X - m.unsqueeze(-1)) / l.unsqueeze(-1)


def _online_running(X: torch.Tensor, block_size: int, start=-math.inf, reduce="amax"):
    """The book's online softmax with its running maximum started at ``start`` or
    taken with another reduction of each block (``"sum"``, ``"mean"``)."""
    m = torch.full(X.shape[:-1], start, dtype=X.dtype)
    l = torch.zeros(X.shape[:-1], dtype=X.dtype)
    for first in range(0, X.shape[-1], block_size):
        block = X[..., first : first + block_size]
        m_new = torch.maximum(m, getattr(block, reduce)(dim=-1))
        shift = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)
        l = l * torch.exp(m - shift) + torch.exp(block - shift.unsqueeze(-1)).sum(dim=-1)
        m = m_new
    return torch.exp(X - m.unsqueeze(-1)) / l.unsqueeze(-1)


def _online_no_max(X: torch.Tensor, block_size: int) -> torch.Tensor:
    l = torch.zeros(X.shape[:-1], dtype=X.dtype)
    for start in range(0, X.shape[-1], block_size):
        l = l + torch.exp(X[..., start : start + block_size]).sum(dim=-1)
    return torch.exp(X) / l.unsqueeze(-1)


@knows(
    Mistake(
        "torch.softmax",
        lambda X, block_size: torch.softmax(X, dim=-1),
        "this calls torch.softmax (or F.softmax), which the exercise replaces: keep a running "
        "maximum m and a running sum l per row, block by block; " + _ONLINE,
    ),
    Mistake(
        "no rescale",
        lambda X, block_size: _online(X, block_size, rescale=False),
        "this looks like an update that forgets to rescale: when a block raises the maximum "
        "from m to m', multiply the sum so far by exp(m - m') before adding the block's "
        "terms; " + _ONLINE,
    ),
    Mistake(
        "no rescale, no guard",
        lambda X, block_size: _online(X, block_size, rescale=False, guard=False),
        "this looks like an update that forgets to rescale (multiply the sum by exp(m - m') "
        "when the maximum grows) and also subtracts m while it is still -inf, which turns a "
        "fully masked block into NaN; " + _ONLINE,
    ),
    Mistake(
        "rescaled the wrong way",
        lambda X, block_size: _online(X, block_size, sign=-1),
        "this looks like the factor exp(m' - m) instead of exp(m - m'): the old terms must "
        "shrink, by a factor at most 1, when the maximum grows; " + _ONLINE,
    ),
    Mistake(
        "no guard for -inf",
        lambda X, block_size: _online(X, block_size, guard=False),
        "exp(-inf - (-inf)) is NaN: while a row has seen only -inf (masked entries), its "
        "running maximum is -inf; subtract 0 there instead (torch.where on torch.isinf); "
        + _ONLINE,
    ),
    Mistake(
        "no maximum",
        _online_no_max,
        "this looks like exp(x) with no maximum subtracted: exp overflows beyond x = 88.7 "
        "(709.8 in float64); subtract the running maximum before exponentiating; " + _ONLINE,
    ),
    Mistake(
        "maximum starts at 0",
        lambda X, block_size: _online_running(X, block_size, start=0.0),
        "this looks like a running maximum that starts at 0 instead of -inf: it is then "
        "never below 0, so a row whose scores all lie far below 0 (around -200) has "
        "exp(x - 0) = 0 for every term, a sum of 0 and 0 / 0 = NaN; start m at -inf "
        "(torch.full(..., -math.inf)); " + _ONLINE,
    ),
    Mistake(
        "a sum for the maximum",
        lambda X, block_size: _online_running(X, block_size, reduce="sum"),
        "this looks like a running 'maximum' taken with sum instead of max (block.sum "
        "for block.amax): any shift gives the right weights in exact arithmetic, but only "
        "the maximum keeps every exp(x - m) <= 1 without underflowing to 0; a row of 40s "
        "has a block sum far above its scores, every term underflows and 0 / 0 is NaN, "
        "and a very negative row overflows; take block.amax(dim=-1); " + _ONLINE,
    ),
    Mistake(
        "a mean for the maximum",
        lambda X, block_size: _online_running(X, block_size, reduce="mean"),
        "this looks like a running 'maximum' taken with mean instead of max (block.mean "
        "for block.amax): scores above the mean still give exp(x - m) > 1, which "
        "overflows to inf for scores 100 above it; only the maximum keeps every "
        "exponent <= 0; take block.amax(dim=-1); " + _ONLINE,
    ),
)
def check_online_softmax(fn: Callable[[torch.Tensor, int], torch.Tensor]) -> CheckReport:
    """Check ``fn(X, block_size)``: the softmax of X over its last axis, computed
    block by block with a running maximum and a running sum.

    The cases include rows whose maximum grows from block to block (the running
    sum must be rescaled each time), scores large enough to overflow ``exp``
    without the maximum subtracted, masked entries (-inf), and block sizes that
    do not divide the row; under every seed, also float32 rows whose scores all lie
    near -200 (a running maximum started at 0 gives 0 / 0) and rows of large scores,
    from 40 to about 100 (a sum or a mean in place of the maximum underflows or
    overflows). A function that calls ``torch.softmax`` is rejected.
    """
    g = _generator(12)
    rising = torch.arange(12, dtype=torch.float32).repeat(2, 1) + torch.randn(2, 12, generator=g)
    large = 400 * torch.randn(3, 9, generator=g, dtype=torch.float64)
    masked = torch.randn(2, 8, generator=g)
    masked[0, 5:] = float("-inf")
    masked[1, :3] = float("-inf")
    cases = [
        (
            "a (3, 10) batch, block_size 4",
            (torch.randn(3, 10, generator=g), 4),
            "basic",
        ),
        ("rows whose maximum grows in every block, block_size 3", (rising, 3), "rescale"),
        ("scores of size 1000 in float64, block_size 2", (large, 2), "overflow"),
        ("masked entries (-inf), block_size 3", (masked, 3), "masked"),
        ("a (2, 3, 7) tensor, block_size 1", (torch.randn(2, 3, 7, generator=g), 1), "basic"),
        ("block_size larger than the row", (torch.randn(4, 5, generator=g), 8), "basic"),
    ]
    # Under every seed: rows far below 0 and rows of large scores, in float32,
    # where a running maximum that starts at 0 or is not a maximum breaks down.
    negative = -205 + torch.arange(10.0) + torch.randn(2, 10, generator=g)  # rising, too
    big = torch.stack(
        [
            40 + 0.5 * torch.randn(10, generator=g),  # a row of 40s
            80 + 10 * torch.randn(10, generator=g),  # near exp's overflow at 88.7
            100 * torch.tensor([1.0, -1.0]).repeat(5) + torch.randn(10, generator=g),
        ]
    )
    cases += [
        ("rows of scores near -200 (float32), block_size 4", (negative, 4), "negative"),
        ("rows of large scores (40s, 80s and ±100, float32), block_size 4", (big, 4), "large"),
    ]
    hints = {
        "basic": "the result is exp(x - m) / l with the final m and l of each row; " + _ONLINE,
        "rescale": "when a block raises the running maximum from m to m', multiply the sum so "
        "far by exp(m - m') before adding the block's terms; " + _ONLINE,
        "overflow": "these rows' maxima change by hundreds from block to block: inf or NaN "
        "means exp overflowed (subtract the running maximum first), a wrong finite value means "
        "the sum was not rescaled when the maximum grew; " + _ONLINE,
        "masked": "exp(-inf - m) is 0, but a block that is all -inf must not turn m into NaN; "
        + _ONLINE,
        "negative": "exp(x) underflows to 0 below x = -103 in float32: start the running "
        "maximum at -inf, not 0, so that it is each row's true maximum and its largest "
        "term is exp(0) = 1; " + _ONLINE,
        "large": "exp(x) overflows beyond x = 88.7 in float32, and exp(x - m) underflows "
        "when m is far above every score: m must be the running maximum (block.amax), not "
        "a sum or a mean; " + _ONLINE,
    }
    return _run(
        "check_online_softmax",
        fn,
        [(text, args, torch.softmax(args[0], dim=-1), hints[kind]) for text, args, kind in cases],
        mistakes=check_online_softmax.mistakes,
        probe=_watched(("softmax",), "torch.softmax, which the exercise replaces"),
        refuse=(_ONLINE_SHORTCUT, _ONLINE_TORCH),
    )
