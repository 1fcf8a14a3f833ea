"""Checkers of chapter 12, Attention at Scale: the memory of naive attention,
online softmax and tiled causal attention."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from ._core import CheckReport, _generator, _run, _see

_SCALE = "Attention at Scale"


def check_attention_memory(fn: Callable[[int, int, torch.dtype], int]) -> CheckReport:
    """Check ``fn(n, num_heads, dtype)``: the bytes of the attention weights that
    naive attention stores for one sequence in one layer (n x n per head).

    ``dtype`` is one of torch.float16, torch.bfloat16, torch.float32 and
    torch.float64. The answer is a number of bytes (an int, a float or a
    one-element tensor); every case is checked to within 0.01 %.
    """
    if not callable(fn):
        raise TypeError(f"fn must be a function, got {fn!r}")

    def wrapped(*args):
        got = fn(*args)
        if isinstance(got, torch.Tensor) and got.numel() == 1:
            got = got.item()
        if isinstance(got, bool) or not isinstance(got, (int, float)):
            raise TypeError(f"expected a number of bytes, got {type(got).__name__}")
        return torch.tensor(float(got), dtype=torch.float64)

    sizes = {torch.float16: 2, torch.bfloat16: 2, torch.float32: 4, torch.float64: 8}
    cases = []
    for n, heads, dtype in (
        (8192, 32, torch.float16),
        (1024, 1, torch.float32),
        (4096, 16, torch.bfloat16),
        (2048, 8, torch.float64),
    ):
        cases.append(
            (
                f"n={n}, num_heads={heads}, {dtype}",
                (n, heads, dtype),
                torch.tensor(float(n * n * heads * sizes[dtype]), dtype=torch.float64),
                "each head stores an n x n matrix, and each entry takes the dtype's size in "
                "bytes (2 for float16 and bfloat16, 4 for float32, 8 for float64), not bits; "
                + _see("How much memory naive attention needs", _SCALE),
            )
        )
    return _run("check_attention_memory", wrapped, cases)


def check_online_softmax(fn: Callable[[torch.Tensor, int], torch.Tensor]) -> CheckReport:
    """Check ``fn(X, block_size)``: the softmax of X over its last axis, computed
    block by block with a running maximum and a running sum.

    The cases include rows whose maximum grows from block to block (the running
    sum must be rescaled each time), scores large enough to overflow ``exp``
    without the maximum subtracted, masked entries (-inf), and block sizes that
    do not divide the row.
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
    hints = {
        "basic": "the result is exp(x - m) / l with the final m and l of each row; "
        + _see("Online softmax", _SCALE),
        "rescale": "when a block raises the running maximum from m to m', multiply the sum so "
        "far by exp(m - m') before adding the block's terms; " + _see("Online softmax", _SCALE),
        "overflow": "subtract the running maximum before exponentiating, in the sum as in the "
        "result; " + _see("Online softmax", _SCALE),
        "masked": "exp(-inf - m) is 0, but a block that is all -inf must not turn m into NaN; "
        + _see("Online softmax", _SCALE),
    }
    return _run(
        "check_online_softmax",
        fn,
        [(text, args, torch.softmax(args[0], dim=-1), hints[kind]) for text, args, kind in cases],
    )


def check_tiled_causal(
    fn: Callable[[torch.Tensor, torch.Tensor, torch.Tensor, int], torch.Tensor],
) -> CheckReport:
    """Check ``fn(queries, keys, values, block_size)``: causal scaled dot-product
    attention computed tile by tile, against
    ``torch.nn.functional.scaled_dot_product_attention(..., is_causal=True)``.

    queries, keys and values are (batch, n, d) with as many queries as keys;
    query i sees keys 0..i. Block sizes include 1, sizes that do not divide n
    and a size larger than n.
    """
    g = _generator(13)
    cases = []
    for batch, n, d, block in ((1, 8, 4, 4), (2, 10, 8, 3), (1, 6, 2, 1), (2, 5, 4, 8)):
        q, k, v = (torch.randn(batch, n, d, generator=g) for _ in range(3))
        cases.append(
            (
                f"n={n}, d={d}, block_size={block}",
                (q, k, v, block),
                F.scaled_dot_product_attention(q, k, v, is_causal=True),
                "query i sees keys 0..i, itself included: inside a diagonal tile keep key j "
                "when j <= i, skip only the tiles whose first key lies after the tile's last "
                "query, and scale the scores by 1/sqrt(d); "
                + _see("Tiled attention with a causal mask", _SCALE),
            )
        )
    return _run("check_tiled_causal", fn, cases)
