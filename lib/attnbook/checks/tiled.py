"""Checker of chapter 12, Attention at Scale: tiled causal attention.

The exercise forbids shortcuts: a tiled attention that calls
``scaled_dot_product_attention`` or builds the whole n x n matrix computes the
right numbers the wrong way. Its checker runs the reader's function under the
memory tracker of ``attnbook.flash`` and rejects such routes. (Split from
``scale``, which keeps the memory of naive attention and online softmax.)
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F

from ._core import CheckReport, Mistake, _generator, _run, _see, knows
from ._explain import explainer
from ._probes import _watched
from ._source import SOFTMAXES, Shortcut
from ._stability import far_queries_keys

_SCALE = "Attention at Scale"
_TILED = _see("Tiled attention with a causal mask", _SCALE)
#: Caught at run time in this process; read in the source a grader's proxy hands over.
_TILED_SHORTCUT = Shortcut(
    "scaled_dot_product_attention or a softmax",
    SOFTMAXES + ("torch.nn.functional.scaled_dot_product_attention",),
    "which the exercise replaces with tiles and a running maximum",
    methods=("softmax", "log_softmax"),
    remote=True,
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
    guard=True,
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
        if guard:
            out[:, q0:q1] = torch.where(l[..., None] > 0, acc / l.clamp_min(1e-30)[..., None], 0.0)
        else:  # acc / l: a query that sees no key gives 0 / 0 = NaN
            out[:, q0:q1] = acc / l[..., None]
    return out


def _far_scores(g: torch.Generator, kind: str) -> tuple[torch.Tensor, ...]:
    """Queries, keys and values (2, 12, 4) whose scores q . k / 2 lie near -200
    (``"negative"``) or reach about 110 (``"large"``), from whole numbers (see
    :func:`._stability.far_queries_keys`)."""
    q, k = far_queries_keys(g, 2, 12, 12, 4, kind)
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


# The chapter's skip rule, and the slip of skipping one tile more per row block.
_SKIPS_DIAGONAL = (
    "this looks like a key loop that skips the diagonal tiles too: the chapter's rule "
    "skips only a tile whose first key comes after its last query (for the queries "
    "q0 .. q1 - 1, a key tile that starts at k0 > q1 - 1), and a test such as "
    "`if k0 >= q0: break` skips one tile more per row block. The tile that the diagonal "
    "crosses holds each query's own key, so it must be computed and masked inside (key j "
    "kept when j <= i); without it query i misses keys q0 .. i, and the first row block, "
    "whose only tile is its diagonal one, sees no key at all"
)

# A running maximum that is not one: right in exact arithmetic, wrong in float32.
_SHIFTS = (
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
        "off by one, 0 / 0",
        lambda q, k, v, b: _tiled(q, k, v, b, visible=lambda cols, rows: cols < rows, guard=False),
        "this looks like the mask j < i with a plain division u / l (the running output u "
        "over the running sum lambda, l in code): query i sees itself too, keep key j when "
        "j <= i; with j < i query 0 sees no key at all, its running sum stays 0 and u / l "
        "is 0 / 0 = NaN (the NaN is a symptom of the mask, not of the division); " + _TILED,
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
        _SKIPS_DIAGONAL + " (its outputs come out as zeros); " + _TILED,
    ),
    Mistake(
        "skips the diagonal tiles, 0 / 0",
        lambda q, k, v, b: _tiled(q, k, v, b, last=lambda q1: q1 - b, guard=False),
        _SKIPS_DIAGONAL + ": its running sum lambda (l in code) stays 0, and a plain division "
        "u / l of the running output by it gives 0 / 0 = NaN (the NaN is a symptom of the "
        "skipped tiles, not of the division); " + _TILED,
    ),
    Mistake(
        "no mask inside the diagonal tiles",
        lambda q, k, v, b: _tiled(q, k, v, b, visible=lambda cols, rows: cols >= 0),
        "this looks like a loop that skips the right tiles but does not mask inside the "
        "diagonal tiles: a tile that the diagonal crosses holds keys after some of its "
        "queries, so it must be masked inside, key j kept when j <= i (scores of the other "
        "keys set to -inf before the running maximum); only the tiles below the diagonal "
        "need no mask; " + _TILED,
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
        "this looks like the running output u returned without the final division by the "
        "running sum lambda (l in code): the weights of a row must add up to 1, so return "
        "u / l; " + _TILED,
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
    *_SHIFTS,
    # The same three with a plain u / l at the end: 0 / 0 = NaN where the sum underflowed.
    *(
        Mistake(
            f"{m.name}, 0 / 0",
            lambda q, k, v, b, m=m, kw=kw: _tiled(q, k, v, b, guard=False, **kw),
            m.diagnosis.replace("; " + _TILED, "")
            + " (with a plain division u / l of the running output by the running sum, a sum "
            "that underflowed to 0 or overflowed "
            "to inf then gives NaN: a symptom of the shift, not of the division); " + _TILED,
        )
        for m, kw in (
            (_SHIFTS[0], {"start": 0.0}),
            (_SHIFTS[1], {"reduce": "sum"}),
            (_SHIFTS[2], {"reduce": "mean"}),
        )
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
        refuse=(_TILED_SHORTCUT,),
    )
