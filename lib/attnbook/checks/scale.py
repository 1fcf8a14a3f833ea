"""Checkers of chapter 12, Attention at Scale: the memory of naive attention,
online softmax and tiled causal attention.

The last two exercises forbid shortcuts: an online softmax that calls
``torch.softmax``, or a tiled attention that calls
``scaled_dot_product_attention`` or builds the whole n x n matrix, computes the
right numbers the wrong way. Their checkers run the reader's function under
the memory tracker of ``attnbook.flash`` and reject such routes.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F

from ._core import CheckReport, Mistake, _generator, _run, _see, knows
from ._draws import _draws
from ._explain import describe, explainer
from ._probes import _watched

_SCALE = "Attention at Scale"
_ONLINE = _see("Online softmax", _SCALE)
_TILED = _see("Tiled attention with a causal mask", _SCALE)
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
    return _run(
        "check_attention_memory",
        fn,
        cases,
        explain=lambda case, got: (
            describe(got, case.expected, ("bytes",))
            + ": a factor is off; compare yours with n * n * num_heads * bytes per number "
            "one factor at a time (n and the heads are the case's, the bytes are 2, 4 or 8)"
        ),
        mistakes=check_attention_memory.mistakes,
        probe=_as_bytes,
    )


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
    )


# ---------------------------------------------------------------- tiled causal attention


def _reference(cases, out: torch.Tensor, is_causal: bool) -> torch.Tensor:
    """SDPA on the inputs of the case whose expected output is ``out``."""
    for case in cases:
        description, (q, k, v, _), expected, *_ = case
        if expected.shape == out.shape and torch.equal(expected.double(), out):
            return F.scaled_dot_product_attention(q, k, v, is_causal=is_causal).double()
    raise ValueError("no case has this output")


def _tiled(
    q,
    k,
    v,
    block_size,
    visible=None,
    last=None,
    rescale=True,
    rescale_acc=True,
    scaled=True,
    first=None,
    normalise=True,
    scale=None,
    start=-math.inf,
    reduce="amax",
):
    """A tiled causal attention with switchable parts, for the known mistakes."""
    visible = visible or (lambda cols, rows: cols <= rows)
    last = last or (lambda q1: q1)
    first = first or (lambda q0: 0)
    b, n, d = q.shape
    scale = scale(d) if scale is not None else 1 / math.sqrt(d) if scaled else 1.0
    out = torch.zeros(b, n, v.shape[-1], dtype=v.dtype)
    for q0 in range(0, n, block_size):
        q1 = min(q0 + block_size, n)
        rows = torch.arange(q0, q1)[:, None]
        m = torch.full((b, q1 - q0), start, dtype=q.dtype)
        l = torch.zeros(b, q1 - q0, dtype=q.dtype)
        acc = torch.zeros(b, q1 - q0, v.shape[-1], dtype=v.dtype)
        for k0 in range(first(q0), max(0, min(last(q1), n)), block_size):
            k1 = min(k0 + block_size, n)
            s = q[:, q0:q1] @ k[:, k0:k1].transpose(1, 2) * scale
            s = s.masked_fill(~visible(torch.arange(k0, k1)[None, :], rows), -math.inf)
            new = torch.maximum(m, getattr(s, reduce)(-1))
            shift = torch.where(torch.isinf(new), torch.zeros_like(new), new)
            p = torch.exp(s - shift[..., None])
            factor = torch.exp(m - shift) if rescale else torch.ones_like(m)
            l = l * factor + p.sum(-1)
            acc_factor = factor if rescale_acc else torch.ones_like(m)
            acc = acc * acc_factor[..., None] + p @ v[:, k0:k1]
            m = new
        if not normalise:
            l = torch.ones_like(l)
        out[:, q0:q1] = torch.where(l[..., None] > 0, acc / l.clamp_min(1e-30)[..., None], 0.0)
    return out


def _far_scores(g: torch.Generator, kind: str) -> tuple[torch.Tensor, ...]:
    """Queries, keys and values (2, 12, 4) whose scores q . k / 2 lie near -200
    (``"negative"``) or between 40 and 100 (``"large"``: all positive in example 0,
    alternately near +90 and -90 in example 1). Queries and keys hold whole
    numbers, so that every order of summation gives the same scores."""
    axis = torch.zeros(4)
    axis[int(torch.randint(4, (1,), generator=g))] = 1.0

    def jitter(size: int) -> torch.Tensor:
        return torch.randint(-size, size + 1, (2, 12, 4), generator=g).float()

    if kind == "negative":
        q, k = 20 * axis + jitter(2), -20 * axis + jitter(2)
    else:
        size = torch.randint(8, 19, (2, 12, 1), generator=g).float()
        size[1] = torch.randint(16, 21, (12, 1), generator=g).float()
        size[1, 1::2] *= -1
        q, k = 10 * axis + jitter(1), size * axis + jitter(1)
    return q, k, torch.randn(2, 12, 4, generator=g)


def _naive_causal(q, k, v, block_size):
    """The whole matrix, masked and normalised by hand (no softmax call)."""
    n = q.shape[1]
    scores = q @ k.transpose(1, 2) / math.sqrt(q.shape[-1])  # (batch, n, n)
    scores = scores.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), -math.inf)
    e = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
    return e / e.sum(dim=-1, keepdim=True) @ v


def _whole_mask(q, k, v, block_size):
    """Tiles of scores, but the causal mask built once for the whole sequence."""
    n = q.shape[1]
    mask = torch.ones(n, n, dtype=torch.bool).tril()
    return _tiled(q, k, v, block_size, visible=lambda cols, rows: mask[rows, cols])


@knows(
    Mistake(
        "SDPA",
        lambda q, k, v, block_size: F.scaled_dot_product_attention(q, k, v, is_causal=True),
        "this calls scaled_dot_product_attention (or a softmax), which the exercise replaces: "
        "walk over the tiles with a running maximum, sum and output per row; " + _TILED,
    ),
    Mistake(
        "the whole matrix",
        _naive_causal,
        "this builds the whole n x n matrix of scores at once: the exercise computes one "
        "block_size x block_size tile at a time and never holds more; " + _TILED,
    ),
    Mistake(
        "the whole mask",
        _whole_mask,
        "this builds the whole n x n boolean mask at once, as large as the matrix the "
        "exercise avoids: build the mask of a diagonal tile from that tile's rows and "
        "columns (cols <= rows), and none for the tiles below the diagonal; " + _TILED,
    ),
    Mistake(
        "off by one",
        lambda q, k, v, b: _tiled(q, k, v, b, visible=lambda cols, rows: cols < rows),
        "this looks like the mask j < i: query i sees itself too, keep key j when j <= i "
        "(query 0 then sees key 0 and is never empty); " + _TILED,
    ),
    Mistake(
        "one key too far",
        lambda q, k, v, b: _tiled(
            q, k, v, b, visible=lambda cols, rows: cols <= rows + 1, last=lambda q1: q1 + 1
        ),
        "this looks like the mask j <= i + 1: each query also sees the next key, the future; "
        "keep key j when j <= i; " + _TILED,
    ),
    Mistake(
        "skips the diagonal tiles",
        lambda q, k, v, b: _tiled(q, k, v, b, last=lambda q1: q1 - b),
        "this looks like a key loop that stops before the diagonal tile: the tile the diagonal "
        "crosses holds each query's own key and must be computed, masked inside; " + _TILED,
    ),
    Mistake(
        "not causal",
        lambda q, k, v, b: _tiled(
            q, k, v, b, visible=lambda cols, rows: cols >= 0, last=lambda q1: 10**9
        ),
        "this looks like attention without the causal mask: query i must not see keys after "
        "i; skip the tiles above the diagonal and mask inside the diagonal ones; " + _TILED,
    ),
    Mistake(
        "no 1/sqrt(d)",
        lambda q, k, v, b: _tiled(q, k, v, b, scaled=False),
        "this looks like scores without the factor 1/sqrt(d): scaled dot-product attention "
        "divides q . k by the square root of the key size; " + _TILED,
    ),
    Mistake(
        "divides by d",
        lambda q, k, v, b: _tiled(q, k, v, b, scale=lambda d: 1 / d),
        "this looks like scores divided by d instead of sqrt(d); " + _TILED,
    ),
    Mistake(
        "multiplies by sqrt(d)",
        lambda q, k, v, b: _tiled(q, k, v, b, scale=lambda d: math.sqrt(d)),
        "this looks like scores multiplied by sqrt(d): the scaling divides, q . k / sqrt(d); "
        + _TILED,
    ),
    Mistake(
        "mask in tile coordinates",
        lambda q, k, v, b: _tiled(
            q, k, v, b, visible=lambda cols, rows: cols - cols[0, 0] <= rows - rows[0, 0]
        ),
        "this looks like the mask built from positions inside the tile (0 .. block_size - 1) "
        "and applied to every tile: compare the absolute positions, key k0 + c against query "
        "q0 + r, and mask only where the diagonal crosses the tile; the tiles below it are "
        "seen whole; " + _TILED,
    ),
    Mistake(
        "starts at the diagonal tile",
        lambda q, k, v, b: _tiled(q, k, v, b, first=lambda q0: q0),
        "this looks like a key loop that starts at the query block's own tile: query i sees "
        "every key 0 .. i, so walk over the key tiles from the first one up to the diagonal; "
        + _TILED,
    ),
    Mistake(
        "values are the keys",
        lambda q, k, v, b: _tiled(q, k, k, b),
        "this looks like the weights multiplied by the keys instead of the values: the "
        "output is the weighted sum of the values, p @ v[:, k0:k1]; " + _TILED,
    ),
    Mistake(
        "not divided by the sum",
        lambda q, k, v, b: _tiled(q, k, v, b, normalise=False),
        "this looks like the running output returned without the final division by the "
        "running sum l: the weights of a row must add up to 1, so return acc / l; " + _TILED,
    ),
    Mistake(
        "no rescale",
        lambda q, k, v, b: _tiled(q, k, v, b, rescale=False),
        "this looks like an update that forgets to rescale: when a tile raises the running "
        "maximum from m to m', multiply both the running sum and the running output by "
        "exp(m - m'); " + _TILED,
    ),
    Mistake(
        "output not rescaled",
        lambda q, k, v, b: _tiled(q, k, v, b, rescale_acc=False),
        "this looks like a running sum that is rescaled but a running output that is not: "
        "multiply both by exp(m - m') when the maximum grows; " + _TILED,
    ),
    Mistake(
        "maximum starts at 0",
        lambda q, k, v, b: _tiled(q, k, v, b, start=0.0),
        "this looks like a running maximum that starts at 0 instead of -inf: it is then "
        "never below 0, so a query whose scores all lie far below 0 (around -200) gets "
        "exp(s - 0) = 0 for every key, a running sum of 0 and no output; start m at -inf "
        "(torch.full(..., -math.inf)); " + _TILED,
    ),
    Mistake(
        "a sum for the maximum",
        lambda q, k, v, b: _tiled(q, k, v, b, reduce="sum"),
        "this looks like a running 'maximum' taken with sum instead of max (scores.sum "
        "for scores.amax): any shift gives the right weights in exact arithmetic, but "
        "only the maximum keeps every exp(s - m) <= 1 without underflowing to 0, and a "
        "masked -inf makes the sum -inf; take scores.amax(dim=-1); " + _TILED,
    ),
    Mistake(
        "a mean for the maximum",
        lambda q, k, v, b: _tiled(q, k, v, b, reduce="mean"),
        "this looks like a running 'maximum' taken with mean instead of max (scores.mean "
        "for scores.amax): scores above the mean still give exp(s - m) > 1, which "
        "overflows to inf for scores 100 above it; take scores.amax(dim=-1); " + _TILED,
    ),
)
def check_tiled_causal(
    fn: Callable[[torch.Tensor, torch.Tensor, torch.Tensor, int], torch.Tensor],
) -> CheckReport:
    """Check ``fn(queries, keys, values, block_size)``: causal scaled dot-product
    attention computed tile by tile, against
    ``torch.nn.functional.scaled_dot_product_attention(..., is_causal=True)``.

    queries, keys and values are (batch, n, d) with as many queries as keys;
    query i sees keys 0..i. Block sizes include 1, sizes that do not divide n
    and a size larger than n; under every seed, float32 cases whose scores all
    lie near -200 (a running maximum started at 0 gives no output) or reach about
    110 (a sum or a mean in place of the maximum underflows or overflows). The
    function must not call SDPA or a softmax,
    and (on a case with n = 256) must not create any tensor as large as an
    n x n boolean mask (n * n bytes), let alone the n x n matrix of scores.
    When no known mistake matches, the first failing case says which query's
    output differs and how.
    """
    g = _generator(13)
    cases = []
    hint = (
        "query i sees keys 0..i, itself included: inside a diagonal tile keep key j "
        "when j <= i, skip only the tiles whose first key lies after the tile's last "
        "query, and scale the scores by 1/sqrt(d); " + _TILED
    )
    for batch, n, d, block in ((1, 8, 4, 4), (2, 10, 8, 3), (1, 6, 2, 1), (2, 5, 4, 8)):
        q, k, v = (torch.randn(batch, n, d, generator=g) for _ in range(3))
        cases.append(
            (
                f"n={n}, d={d}, block_size={block}",
                (q, k, v, block),
                F.scaled_dot_product_attention(q, k, v, is_causal=True),
                hint,
            )
        )
    q, k, v = (torch.randn(1, 256, 8, generator=g) for _ in range(3))
    cases.append(
        (
            "n=256, d=8, block_size=32: no tensor near n x n",
            (q, k, v, 32),
            F.scaled_dot_product_attention(q, k, v, is_causal=True),
            hint,
        )
    )
    for description, (q, k, v), stability in (
        (
            "scores near -200 (float32), n=12, d=4, block_size=4",
            _far_scores(g, "negative"),
            (
                "every score of these queries lies near -200, where exp underflows to 0 in "
                "float32: start the running maximum at -inf, not 0, so that it is each row's "
                "true maximum and its largest term is exp(0) = 1; " + _TILED
            ),
        ),
        (
            "large scores, up to about 110 (float32), n=12, d=4, block_size=4",
            _far_scores(g, "large"),
            (
                "exp(s) overflows beyond s = 88.7 in float32, and exp(s - m) underflows when m "
                "is far above every score: m must be the running maximum (scores.amax), not a "
                "sum or a mean; " + _TILED
            ),
        ),
    ):
        expected = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        cases.append((description, (q, k, v, 4), expected, stability))
    return _run(
        "check_tiled_causal",
        fn,
        cases,
        explain=explainer(
            ("example", "query", "feature"),
            [
                (
                    "is SDPA without the causal mask",
                    lambda out: _reference(cases, out, is_causal=False),
                    "every query saw every key: skip the tiles above the diagonal and mask "
                    "inside the diagonal ones",
                ),
            ],
        ),
        mistakes=check_tiled_causal.mistakes,
        probe=_watched(
            ("scaled_dot_product", "softmax"),
            "scaled_dot_product_attention or a softmax, which the exercise replaces",
            largest=256 * 256,  # an n x n boolean mask
        ),
    )
