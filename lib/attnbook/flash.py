"""Attention without the n x n matrix: online softmax and tiled attention.

Naive attention builds every score of a (queries, keys) matrix before it takes
a softmax over each row. The functions here never do. :func:`online_softmax`
walks over a row in blocks and keeps two numbers per row, the running maximum
``m`` and the running sum ``l`` of ``exp(x - m)``, rescaling ``l`` whenever
``m`` grows (Milakov and Gimelshein, 2018). :func:`tiled_attention` does the
same for attention, in the style of FlashAttention (Dao et al., 2022): it takes
one block of queries against one block of keys at a time, so it never holds
more than ``block_size x block_size`` scores per sequence, and keeps a running
maximum, sum and output per query row.

:func:`flash_attention` is the same forward with a backward pass of its own
(a ``torch.autograd.Function``) that recomputes each tile instead of keeping
the tiles, as FlashAttention does (Dao et al., 2022, section 3.1). That paper
saves two statistics per row, ``m`` and ``l``; we save their combination, the
row's logsumexp ``m + log(l)``, as FlashAttention-2 does (Dao, 2024).

:func:`tile_trace` records what the tiled loop knows after each tile (for the
chapter's explorer), :func:`naive_attention` is the reference that does build
the whole matrix, :func:`naive_attention_bytes` counts its memory, and
:func:`peak_memory` (forward only) and :func:`peak_training_memory` (forward
and backward), written in ``_memory`` and re-exported here, measure the most
memory that a function's own tensors occupy at once. Everything is plain
PyTorch; on a CPU the tiled loop is slower than a fused kernel, and its point
is the algorithm and the memory.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from . import _validate

# The memory measurement (its own module), re-exported where the book and checks find it.
from ._memory import MemoryReport as MemoryReport
from ._memory import _Tracker as _Tracker
from ._memory import peak_memory as peak_memory
from ._memory import peak_training_memory as peak_training_memory
from .masking import masked_softmax

__all__ = [
    "online_softmax",
    "online_normalizer",
    "tiled_attention",
    "flash_attention",
    "naive_attention",
    "naive_attention_bytes",
    "TileStep",
    "tile_trace",
    "MemoryReport",
    "peak_memory",
    "peak_training_memory",
]


def _block_size(value: object) -> int:
    return _validate.positive_int("block_size", value)


def online_softmax(X: torch.Tensor, block_size: int = 4) -> torch.Tensor:
    """Softmax over the last axis, with the normaliser found in one blocked pass.

    The first pass walks over the last axis ``block_size`` entries at a time and
    keeps, for every row, the running maximum ``m`` and the running sum
    ``l = sum exp(x - m)``. When a block raises the maximum from ``m`` to
    ``m'``, the sum so far is rescaled by ``exp(m - m')`` before the block's
    own terms are added. The second pass writes ``exp(x - m) / l``. No entry is
    exponentiated before its row's maximum so far has been subtracted, so
    nothing overflows.

    Args:
        X: (..., positions) floating-point tensor, at least 1-D; a row may hold
            ``-inf`` (a masked position, weight 0) but not only ``-inf``.
        block_size: how many entries of a row the first pass reads at a time.

    Returns:
        A new tensor of X's shape and dtype, equal to ``torch.softmax(X, -1)``
        up to rounding.
    """
    X = _validate.tensor("X", X, floating=True)
    if X.dim() == 0:
        raise ValueError(f"X must have at least one axis, got shape {tuple(X.shape)}")
    block_size = _block_size(block_size)
    m, l = online_normalizer(X, block_size)  # (...,) each
    return torch.exp(X - m.unsqueeze(-1)) / l.unsqueeze(-1)


def online_normalizer(X: torch.Tensor, block_size: int = 4) -> tuple[torch.Tensor, torch.Tensor]:
    """The running maximum and running sum of :func:`online_softmax` after the last block.

    Args:
        X: (..., positions) floating-point tensor.
        block_size: entries read per step.

    Returns:
        ``(m, l)``, each of shape (...,): the row maximum and
        ``sum(exp(X - m))`` over the row, found block by block.
    """
    X = _validate.tensor("X", X, floating=True)
    if X.dim() == 0:
        raise ValueError(f"X must have at least one axis, got shape {tuple(X.shape)}")
    block_size = _block_size(block_size)
    positions = X.shape[-1]
    m = torch.full(X.shape[:-1], -math.inf, dtype=X.dtype, device=X.device)  # (...,)
    l = torch.zeros(X.shape[:-1], dtype=X.dtype, device=X.device)  # (...,)
    for start in range(0, positions, block_size):
        block = X[..., start : start + block_size]  # (..., block)
        m_new = torch.maximum(m, block.amax(dim=-1))
        # A row that has seen only -inf so far keeps m = -inf; shift by 0 there
        # so that exp(-inf - (-inf)) never turns into NaN.
        shift = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)
        l = l * torch.exp(m - shift) + torch.exp(block - shift.unsqueeze(-1)).sum(dim=-1)
        m = m_new
    return m, l


def _check_qkv(queries: object, keys: object, values: object) -> tuple[int, int, int, int, int]:
    """Validate (batch, m, d), (batch, n, d), (batch, n, d_v); return b, m, n, d, d_v."""
    queries = _validate.tensor("queries", queries, ndim=3, floating=True)
    keys = _validate.tensor("keys", keys, ndim=3, floating=True)
    values = _validate.tensor("values", values, ndim=3, floating=True)
    _validate.same_dtype(queries=queries, keys=keys, values=values)
    b, m, d = queries.shape
    if keys.shape[0] != b or values.shape[0] != b:
        raise ValueError(
            f"queries, keys and values must share the batch size, got shapes "
            f"{tuple(queries.shape)}, {tuple(keys.shape)} and {tuple(values.shape)}"
        )
    if keys.shape[2] != d:
        raise ValueError(
            f"keys must have as many features as queries ({d}), got shape {tuple(keys.shape)}"
        )
    if d == 0:  # the scale 1/sqrt(d) is undefined: NaN or a division by zero
        raise ValueError("queries and keys must have at least one feature, got d = 0")
    if values.shape[1] != keys.shape[1]:
        raise ValueError(
            f"values must have one row per key: keys of shape {tuple(keys.shape)}, "
            f"values of shape {tuple(values.shape)}"
        )
    return b, m, keys.shape[1], d, values.shape[2]


def _query_lengths(valid_lens: object, batch: int, queries: int, keys: int, device) -> torch.Tensor:
    """valid_lens as (batch, queries) int64, as in ``masking.masked_softmax``."""
    lens = _validate.lengths("valid_lens", valid_lens, upper=keys, device=device)
    if lens.shape == (batch,):
        return lens.unsqueeze(1).expand(batch, queries)
    if lens.shape != (batch, queries):
        raise ValueError(
            f"valid_lens must have shape ({batch},) or ({batch}, {queries}), got shape "
            f"{tuple(lens.shape)}"
        )
    return lens


def _keep(
    rows: torch.Tensor, cols: torch.Tensor, causal: bool, lens: torch.Tensor | None
) -> torch.Tensor | None:
    """Which (query, key) pairs of a tile count; None when all of them do.

    rows: (block_q,) query positions; cols: (block_k,) key positions;
    lens: (batch, block_q) valid lengths or None. Returns (block_q, block_k) or
    (batch, block_q, block_k) booleans.
    """
    keep = None
    if causal and int(cols[-1]) > int(rows[0]):  # some key lies right of the diagonal
        keep = cols.unsqueeze(0) <= rows.unsqueeze(1)  # (block_q, block_k)
    if (
        lens is not None and lens.numel() and int(cols[-1]) >= int(lens.min())
    ):  # some key beyond a length
        within = cols.view(1, 1, -1) < lens.unsqueeze(-1)  # (batch, block_q, block_k)
        keep = within if keep is None else keep & within
    return keep


def _flag(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return value


def _tiled_forward(
    queries: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    block_size: int,
    causal: bool,
    lens: torch.Tensor | None,
    with_lse: bool = False,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The tile loop of :func:`tiled_attention`: ``(output, logsumexp)``.

    ``output`` is (batch, m, d_v); ``logsumexp`` (only ``with_lse``, else
    None) is (batch, m), each row's ``m + log(l)`` (``-inf`` for a row that
    sees no key): all a backward pass needs to rebuild any tile of weights
    (see :func:`flash_attention`).
    """
    b, m, n = queries.shape[0], queries.shape[1], keys.shape[1]
    d_v = values.shape[2]
    scale = 1.0 / math.sqrt(queries.shape[2])
    out = torch.zeros(b, m, d_v, dtype=values.dtype, device=values.device)  # (batch, m, d_v)
    lse = None
    if with_lse:
        lse = torch.full((b, m), -math.inf, dtype=queries.dtype, device=queries.device)  # (b, m)
    for q0 in range(0, m, block_size):
        q1 = min(q0 + block_size, m)
        q_block = queries[:, q0:q1] * scale  # (batch, bq, d)
        rows = torch.arange(q0, q1, device=queries.device)
        row_lens = None if lens is None else lens[:, q0:q1]  # (batch, bq)
        # Keys this row block can see at all: none right of its last row if
        # causal, none at or beyond its longest valid length.
        stop = min(n, q1) if causal else n
        if row_lens is not None and row_lens.numel():  # an empty batch has no lengths
            stop = min(stop, int(row_lens.max()))
        m_run = torch.full((b, q1 - q0), -math.inf, dtype=queries.dtype, device=queries.device)
        l_run = torch.zeros(b, q1 - q0, dtype=queries.dtype, device=queries.device)
        u_run = torch.zeros(b, q1 - q0, d_v, dtype=values.dtype, device=values.device)
        for k0 in range(0, stop, block_size):
            k1 = min(k0 + block_size, n)
            cols = torch.arange(k0, k1, device=queries.device)
            scores = q_block @ keys[:, k0:k1].transpose(1, 2)  # (batch, bq, bk)
            keep = _keep(rows, cols, causal, row_lens)
            if keep is not None:
                scores = scores.masked_fill(~keep, -math.inf)
            m_new = torch.maximum(m_run, scores.amax(dim=-1))  # (batch, bq)
            shift = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)
            p = torch.exp(scores - shift.unsqueeze(-1))  # (batch, bq, bk); masked -> 0
            rescale = torch.exp(m_run - shift)  # (batch, bq); 0 while m_run = -inf
            l_run = l_run * rescale + p.sum(dim=-1)
            u_run = u_run * rescale.unsqueeze(-1) + p @ values[:, k0:k1]  # (batch, bq, d_v)
            m_run = m_new
        seen = l_run > 0  # (batch, bq): False for a row with no visible key
        safe = torch.where(seen, l_run, torch.ones_like(l_run))
        out[:, q0:q1] = torch.where(seen.unsqueeze(-1), u_run / safe.unsqueeze(-1), 0.0)
        if lse is not None:
            lse[:, q0:q1] = torch.where(seen, m_run + torch.log(safe), -math.inf)
    return out, lse


def tiled_attention(
    queries: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    block_size: int = 16,
    causal: bool = False,
    valid_lens: torch.Tensor | None = None,
) -> torch.Tensor:
    """Scaled dot-product attention computed tile by tile, never holding all scores.

    For each block of ``block_size`` queries the function walks over the keys
    ``block_size`` at a time. For each tile it computes the (batch, block,
    block) scores, and updates three running quantities per query row: the
    maximum score ``m`` seen so far, the sum ``l`` of ``exp(score - m)``, and
    the unnormalised output ``u = sum exp(score - m) v`` (the chapter's
    λ and u; ``l_run`` and ``u_run`` in the code).
    When ``m`` grows, ``l`` and ``u`` are first multiplied by
    ``exp(m_old - m_new)``. After the last tile of a row block the output is
    ``u / l``. With ``causal=True``
    tiles that lie wholly above the diagonal are skipped, and tiles wholly
    beyond every row's valid length are skipped too.

    Autograd differentiates through the loop as written, so it keeps every
    tile for the backward pass: memory quadratic in n again when training.
    :func:`flash_attention` computes the same forward with a backward pass
    that recomputes the tiles instead.

    Args:
        queries: (batch, queries, d) floating point.
        keys: (batch, keys, d), same dtype.
        values: (batch, keys, d_v), same dtype.
        block_size: rows and columns of a tile (any integer >= 1; it need not
            divide the number of queries or keys).
        causal: if True, query i sees only keys 0..i (the top-left aligned
            mask of ``scaled_dot_product_attention(..., is_causal=True)``).
        valid_lens: None, (batch,) or (batch, queries) integer lengths in
            [0, keys], as in ``masking.masked_softmax``: query i of example b
            sees keys below ``valid_lens[b]`` (or ``valid_lens[b, i]``). A
            query that sees no key at all gets an output row of zeros.

    Returns:
        (batch, queries, d_v), equal to softmax(Q K^T / sqrt(d)) V with the
        masks applied, up to rounding.
    """
    b, m, n, d, d_v = _check_qkv(queries, keys, values)
    block_size = _block_size(block_size)
    causal = _flag("causal", causal)
    lens = None if valid_lens is None else _query_lengths(valid_lens, b, m, n, queries.device)
    return _tiled_forward(queries, keys, values, block_size, causal, lens)[0]


class _FlashAttention(torch.autograd.Function):
    """Tiled attention whose backward pass recomputes the tiles (Dao et al. 2022, sec. 3.1).

    The forward saves only the inputs, the output and each row's logsumexp
    ``L = m + log(l)`` (one number per row, as in FlashAttention-2, Dao 2024;
    FlashAttention-1 saves ``m`` and ``l`` separately); the (n, n) weights are
    never stored. The backward
    rebuilds each tile of weights as ``P = exp(S - L)`` and accumulates, with
    ``D_i = dO_i . O_i`` (one number per row):

        dV += P^T dO,   dP = dO V^T,   dS = P * (dP - D),
        dQ += dS K / sqrt(d),   dK += dS^T Q / sqrt(d).
    """

    @staticmethod
    def forward(ctx, queries, keys, values, block_size, causal):
        out, lse = _tiled_forward(queries, keys, values, block_size, causal, None, with_lse=True)
        ctx.save_for_backward(queries, keys, values, out, lse)
        ctx.block_size, ctx.causal = block_size, causal
        return out

    @staticmethod
    def backward(ctx, grad_out):
        queries, keys, values, out, lse = ctx.saved_tensors
        block_size, causal = ctx.block_size, ctx.causal
        m, n = queries.shape[1], keys.shape[1]
        scale = 1.0 / math.sqrt(queries.shape[2])
        grad_q = torch.zeros_like(queries)
        grad_k = torch.zeros_like(keys)
        grad_v = torch.zeros_like(values)
        D = (grad_out * out).sum(dim=-1)  # (batch, m): dO_i . O_i
        for q0 in range(0, m, block_size):
            q1 = min(q0 + block_size, m)
            rows = torch.arange(q0, q1, device=queries.device)
            q_block = queries[:, q0:q1]  # (batch, bq, d)
            dO = grad_out[:, q0:q1]  # (batch, bq, d_v)
            L = lse[:, q0:q1].unsqueeze(-1)  # (batch, bq, 1)
            stop = min(n, q1) if causal else n
            for k0 in range(0, stop, block_size):
                k1 = min(k0 + block_size, n)
                cols = torch.arange(k0, k1, device=queries.device)
                scores = q_block @ keys[:, k0:k1].transpose(1, 2) * scale  # (batch, bq, bk)
                keep = _keep(rows, cols, causal, None)
                if keep is not None:
                    scores = scores.masked_fill(~keep, -math.inf)
                P = torch.exp(scores - L)  # (batch, bq, bk): the tile of weights, rebuilt
                grad_v[:, k0:k1] += P.transpose(1, 2) @ dO
                dP = dO @ values[:, k0:k1].transpose(1, 2)  # (batch, bq, bk)
                dS = P * (dP - D[:, q0:q1].unsqueeze(-1))
                grad_q[:, q0:q1] += dS @ keys[:, k0:k1] * scale
                grad_k[:, k0:k1] += dS.transpose(1, 2) @ q_block * scale
        return grad_q, grad_k, grad_v, None, None


def flash_attention(
    queries: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    block_size: int = 16,
    causal: bool = False,
) -> torch.Tensor:
    """:func:`tiled_attention` with a backward pass that keeps no tile (FlashAttention).

    The forward is the tile loop of :func:`tiled_attention`; it saves the
    inputs, the output and one number per query row, the logsumexp
    ``m + log(l)``. The backward pass walks over the tiles again, recomputes
    each tile of weights from the saved logsumexp and accumulates the
    gradients of the queries, keys and values tile by tile (Dao et al. 2022,
    section 3.1). Training memory therefore stays linear in n, where autograd
    through :func:`tiled_attention` keeps every tile.

    Args:
        queries: (batch, queries, d) floating point.
        keys: (batch, keys, d), same dtype.
        values: (batch, keys, d_v), same dtype.
        block_size: rows and columns of a tile.
        causal: if True, query i sees only keys 0..i.

    Returns:
        (batch, queries, d_v), equal to :func:`tiled_attention`'s output.
    """
    _check_qkv(queries, keys, values)
    block_size = _block_size(block_size)
    causal = _flag("causal", causal)
    return _FlashAttention.apply(queries, keys, values, block_size, causal)


def naive_attention(
    queries: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    causal: bool = False,
    valid_lens: torch.Tensor | None = None,
) -> torch.Tensor:
    """Scaled dot-product attention that builds the whole (batch, queries, keys) matrix.

    The reference for :func:`tiled_attention` (same arguments, same masks, a
    row with no visible key gives zeros, as do all rows when there are no keys;
    queries and keys without features, d = 0, are refused), written the direct way: scores,
    ``masking.masked_softmax``, then the weighted sum of the values.
    """
    b, m, n, d, _ = _check_qkv(queries, keys, values)
    causal = _flag("causal", causal)
    lens = None if valid_lens is None else _query_lengths(valid_lens, b, m, n, queries.device)
    if causal:
        positions = torch.arange(m, device=queries.device).unsqueeze(0).expand(b, m)
        causal_lens = torch.clamp(positions + 1, max=n)  # (batch, m): query i sees 0..i
        lens = causal_lens if lens is None else torch.minimum(lens, causal_lens)
    scores = queries @ keys.transpose(1, 2) / math.sqrt(d)  # (batch, queries, keys)
    return masked_softmax(scores, lens) @ values  # (batch, queries, d_v)


_BYTES = {
    torch.float64: 8,
    torch.float32: 4,
    torch.float16: 2,
    torch.bfloat16: 2,
}


def naive_attention_bytes(n: int, num_heads: int = 1, dtype: torch.dtype = torch.float16) -> int:
    """Bytes of the n x n attention weights of every head of one layer, for one sequence.

    ``n * n * num_heads * (bytes per element of dtype)``: for n = 8192, 32
    heads and float16 that is 2**32 bytes, 4 GiB.
    """
    n = _validate.positive_int("n", n)
    num_heads = _validate.positive_int("num_heads", num_heads)
    if not isinstance(dtype, torch.dtype) or dtype not in _BYTES:
        raise ValueError(f"dtype must be one of {sorted(map(str, _BYTES))}, got {dtype!r}")
    return n * n * num_heads * _BYTES[dtype]


@dataclass(frozen=True)
class TileStep:
    """What the tiled loop knows after one tile (see :func:`tile_trace`).

    Attributes:
        query_block: index of the block of queries (rows of the score matrix).
        key_block: index of the block of keys (columns).
        rows: (start, stop) query positions of the tile.
        cols: (start, stop) key positions of the tile.
        running_max: (queries,) the running maximum m of every row so far
            (-inf where a row has seen nothing yet).
        running_sum: (queries,) the running sum l, relative to running_max.
        done: (queries,) bool, True for rows whose output is final.
    """

    query_block: int
    key_block: int
    rows: tuple[int, int]
    cols: tuple[int, int]
    running_max: torch.Tensor
    running_sum: torch.Tensor
    done: torch.Tensor


def tile_trace(scores: torch.Tensor, block_size: int, causal: bool = False) -> list[TileStep]:
    """Replay the tile loop of :func:`tiled_attention` on one score matrix.

    Args:
        scores: (queries, keys) already scaled scores of one sequence.
        block_size: rows and columns of a tile.
        causal: skip the tiles above the diagonal, and mask within the
            diagonal tiles, as :func:`tiled_attention` does.

    Returns:
        One :class:`TileStep` per tile computed, in the loop's order (row
        blocks in order, key blocks left to right within each).
    """
    scores = _validate.tensor("scores", scores, ndim=2, floating=True)
    block_size = _block_size(block_size)
    causal = _flag("causal", causal)
    m, n = scores.shape
    running_max = torch.full((m,), -math.inf, dtype=scores.dtype, device=scores.device)
    running_sum = torch.zeros(m, dtype=scores.dtype, device=scores.device)
    done = torch.zeros(m, dtype=torch.bool, device=scores.device)
    steps = []
    for qi, q0 in enumerate(range(0, m, block_size)):
        q1 = min(q0 + block_size, m)
        rows = torch.arange(q0, q1, device=scores.device)
        stop = min(n, q1) if causal else n
        key_starts = list(range(0, stop, block_size))
        for ki, k0 in enumerate(key_starts):
            k1 = min(k0 + block_size, n)
            tile = scores[q0:q1, k0:k1]
            keep = _keep(rows, torch.arange(k0, k1, device=scores.device), causal, None)
            if keep is not None:
                tile = tile.masked_fill(~keep, -math.inf)
            m_old = running_max[q0:q1]
            m_new = torch.maximum(m_old, tile.amax(dim=-1))
            shift = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)
            running_sum[q0:q1] = running_sum[q0:q1] * torch.exp(m_old - shift) + torch.exp(
                tile - shift.unsqueeze(-1)
            ).sum(dim=-1)
            running_max[q0:q1] = m_new
            if ki == len(key_starts) - 1:
                done[q0:q1] = True
            steps.append(
                TileStep(
                    qi,
                    k0 // block_size,
                    (q0, q1),
                    (k0, k1),
                    running_max.clone(),
                    running_sum.clone(),
                    done.clone(),
                )  # fmt: skip
            )
    return steps
