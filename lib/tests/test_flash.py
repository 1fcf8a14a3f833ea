"""Tests of attnbook.flash: online softmax, tiled attention, memory accounting.

References: torch.softmax, torch.nn.functional.scaled_dot_product_attention
(with a boolean mask for valid lengths and causal masks) and closed forms.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from attnbook import flash


def sdpa(q, k, v, causal=False, lens=None):
    """SDPA with the book's masks: query i sees keys j < lens[b, i] (and j <= i if causal)."""
    b, m, n = q.shape[0], q.shape[1], k.shape[1]
    keep = torch.ones(b, m, n, dtype=torch.bool)
    if causal:
        keep &= torch.ones(m, n, dtype=torch.bool).tril()
    if lens is not None:
        lens = torch.as_tensor(lens)
        if lens.dim() == 1:
            lens = lens[:, None].expand(b, m)
        keep &= torch.arange(n)[None, None, :] < lens[:, :, None]
    return F.scaled_dot_product_attention(q, k, v, attn_mask=keep)


def test_sdpa_gives_zero_rows_for_fully_masked_queries():
    # The reference above relies on this (torch 2.13 on the CPU): check it.
    q = torch.randn(1, 3, 4)
    keep = torch.zeros(1, 3, 5, dtype=torch.bool)
    keep[0, 1, :2] = True
    out = F.scaled_dot_product_attention(q, torch.randn(1, 5, 4), torch.randn(1, 5, 2), keep)
    assert torch.equal(out[0, 0], torch.zeros(2)) and torch.equal(out[0, 2], torch.zeros(2))


@st.composite
def problems(draw):
    b = draw(st.integers(1, 3))
    m = draw(st.integers(1, 17))
    n = draw(st.integers(1, 17))
    d = draw(st.integers(1, 8))
    d_v = draw(st.integers(1, 5))
    block = draw(st.integers(1, 20))
    causal = draw(st.booleans())
    dtype = draw(st.sampled_from([torch.float32, torch.float64]))
    kind = draw(st.sampled_from(["none", "1d", "2d"]))
    seed = draw(st.integers(0, 2**16))
    g = torch.Generator().manual_seed(seed)
    q = 2 * torch.randn(b, m, d, generator=g, dtype=dtype)
    k = 2 * torch.randn(b, n, d, generator=g, dtype=dtype)
    v = torch.randn(b, n, d_v, generator=g, dtype=dtype)
    lens = None
    if kind == "1d":
        lens = torch.randint(0, n + 1, (b,), generator=g)
    elif kind == "2d":
        lens = torch.randint(0, n + 1, (b, m), generator=g)
    return q, k, v, block, causal, lens


def tolerance(dtype):
    return {"atol": 1e-5, "rtol": 1e-4} if dtype == torch.float32 else {"atol": 1e-12, "rtol": 0}


@given(problems())
@settings(max_examples=50, deadline=None)
def test_tiled_attention_matches_sdpa(problem):
    q, k, v, block, causal, lens = problem
    copies = [t.clone() for t in (q, k, v)]
    got = flash.tiled_attention(q, k, v, block_size=block, causal=causal, valid_lens=lens)
    torch.testing.assert_close(got, sdpa(q, k, v, causal, lens), **tolerance(q.dtype))
    assert got.dtype == q.dtype and got.shape == (q.shape[0], q.shape[1], v.shape[2])
    assert all(torch.equal(a, b) for a, b in zip(copies, (q, k, v)))


@given(problems())
@settings(max_examples=25, deadline=None)
def test_naive_attention_matches_sdpa(problem):
    q, k, v, _, causal, lens = problem
    got = flash.naive_attention(q, k, v, causal=causal, valid_lens=lens)
    torch.testing.assert_close(got, sdpa(q, k, v, causal, lens), **tolerance(q.dtype))


def test_tiled_attention_block_size_does_not_change_the_answer_beyond_rounding():
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(2, 23, 6, generator=g, dtype=torch.float64) for _ in range(3))
    answers = [flash.tiled_attention(q, k, v, block_size=s, causal=True) for s in (1, 4, 7, 23, 64)]
    for other in answers[1:]:
        torch.testing.assert_close(other, answers[0], atol=1e-13, rtol=0)


def test_tiled_attention_length_zero_gives_zero_rows():
    q, k, v = torch.randn(2, 5, 3), torch.randn(2, 6, 3), torch.randn(2, 6, 4)
    out = flash.tiled_attention(q, k, v, block_size=2, valid_lens=torch.tensor([0, 6]))
    assert torch.equal(out[0], torch.zeros(5, 4))
    assert bool(torch.isfinite(out).all())
    lens = torch.tensor([[0, 1, 2, 0, 6], [3, 0, 0, 0, 1]])
    out = flash.tiled_attention(q, k, v, block_size=4, causal=True, valid_lens=lens)
    assert torch.equal(out[1, 1:4], torch.zeros(3, 4)) and torch.equal(out[0, 0], torch.zeros(4))


def test_tiled_attention_survives_large_scores():
    q = 300 * torch.randn(1, 9, 4)
    out = flash.tiled_attention(q, q, torch.randn(1, 9, 2), block_size=4)
    assert bool(torch.isfinite(out).all())


def test_tiled_attention_skips_the_tiles_above_the_diagonal():
    scores = torch.randn(10, 10)
    steps = flash.tile_trace(scores, block_size=3, causal=True)
    assert len(steps) == 1 + 2 + 3 + 4  # 4 row blocks, 1..4 key blocks each
    assert all(s.cols[0] <= s.rows[1] - 1 for s in steps)
    assert len(flash.tile_trace(scores, block_size=3)) == 16


def test_tile_trace_ends_with_the_row_maximum_and_sum():
    g = torch.Generator().manual_seed(3)
    scores = torch.randn(7, 9, generator=g, dtype=torch.float64)
    for causal in (False, True):
        steps = flash.tile_trace(scores, block_size=2, causal=causal)
        masked = scores.masked_fill(torch.ones(7, 9, dtype=torch.bool).triu(1), -math.inf)
        masked = masked if causal else scores
        last = steps[-1]
        torch.testing.assert_close(last.running_max, masked.amax(-1))
        expected = torch.exp(masked - masked.amax(-1, keepdim=True)).sum(-1)
        torch.testing.assert_close(last.running_sum, expected)
        assert bool(last.done.all())
        # A row is final exactly after the last tile of its row block.
        assert not bool(steps[0].done[2:].any())


@given(
    shape=st.lists(st.integers(1, 9), min_size=1, max_size=3),
    block=st.integers(1, 12),
    scale=st.sampled_from([1.0, 30.0, 500.0]),
    seed=st.integers(0, 2**16),
)
@settings(max_examples=40, deadline=None)
def test_online_softmax_matches_softmax(shape, block, scale, seed):
    g = torch.Generator().manual_seed(seed)
    X = scale * torch.randn(*shape, generator=g, dtype=torch.float64)
    copy = X.clone()
    torch.testing.assert_close(flash.online_softmax(X, block), torch.softmax(X, -1))
    assert torch.equal(X, copy)
    m, l = flash.online_normalizer(X, block)
    torch.testing.assert_close(m, X.amax(-1))
    torch.testing.assert_close(l, torch.exp(X - X.amax(-1, keepdim=True)).sum(-1))


def test_online_softmax_with_masked_entries():
    X = torch.tensor([[float("-inf"), float("-inf"), float("-inf"), 1.0, 2.0]])
    torch.testing.assert_close(flash.online_softmax(X, 2), torch.softmax(X, -1))


def test_naive_attention_bytes():
    assert flash.naive_attention_bytes(8192, 32, torch.float16) == 4 * 2**30
    assert flash.naive_attention_bytes(1024, 1, torch.float32) == 4 * 2**20
    assert flash.naive_attention_bytes(10, 3, torch.float64) == 2400
    with pytest.raises(ValueError, match="dtype must be one of"):
        flash.naive_attention_bytes(10, 1, torch.int8)
    with pytest.raises(ValueError, match="n must be >= 1, got 0"):
        flash.naive_attention_bytes(0)


def test_peak_memory_counts_what_a_function_allocates():
    x = torch.zeros(1000)  # 4000 bytes, not counted: it exists before

    def two_at_once(t):
        a = t + 1  # 4000 bytes
        b = t * 2  # 4000 more, both alive
        return (a + b).sum()

    report = flash.peak_memory(two_at_once, x)
    assert report.largest == 4000
    assert 8000 <= report.peak <= 12004  # a, b, and a + b briefly


def test_peak_memory_naive_is_quadratic_and_tiled_linear():
    g = torch.Generator().manual_seed(0)
    naive, tiled = [], []
    for n in (128, 256, 512):
        q = torch.randn(1, n, 16, generator=g)
        naive.append(flash.peak_memory(flash.naive_attention, q, q, q))
        tiled.append(flash.peak_memory(flash.tiled_attention, q, q, q, block_size=32))
    # The naive layer holds at least the n x n scores; its largest tensor is exactly that.
    for n, report in zip((128, 256, 512), naive):
        assert report.largest == n * n * 4 and report.peak >= n * n * 4
    assert naive[2].peak / naive[1].peak > 3.5  # doubling n: about 4x
    assert tiled[2].peak / tiled[1].peak < 2.2  # doubling n: about 2x
    assert max(r.largest for r in tiled) == 512 * 16 * 4  # the output, not the scores


def test_bad_input():
    q = torch.randn(2, 4, 3)
    with pytest.raises(ValueError, match="block_size must be >= 1, got 0"):
        flash.tiled_attention(q, q, q, block_size=0)
    with pytest.raises(TypeError, match="causal must be True or False, got 1"):
        flash.tiled_attention(q, q, q, causal=1)
    with pytest.raises(ValueError, match=r"valid_lens must have shape \(2,\) or \(2, 4\)"):
        flash.tiled_attention(q, q, q, valid_lens=torch.tensor([1, 2, 3]))
    with pytest.raises(ValueError, match=r"valid_lens must lie in \[0, 4\]"):
        flash.tiled_attention(q, q, q, valid_lens=torch.tensor([1, 5]))
    with pytest.raises(ValueError, match="keys must have as many features as queries"):
        flash.tiled_attention(q, torch.randn(2, 4, 5), q)
    with pytest.raises(ValueError, match="values must have one row per key"):
        flash.tiled_attention(q, q, torch.randn(2, 3, 3))
    with pytest.raises(TypeError, match="must have the same dtype"):
        flash.tiled_attention(q, q, q.double())
    with pytest.raises(TypeError, match="queries must be a torch.Tensor"):
        flash.tiled_attention([[1.0]], q, q)
    with pytest.raises(ValueError, match="X must have at least one axis"):
        flash.online_softmax(torch.tensor(1.0))
    with pytest.raises(TypeError, match="X must have a floating-point dtype"):
        flash.online_softmax(torch.arange(4))
    with pytest.raises(TypeError, match="fn must be callable"):
        flash.peak_memory(3)


# ---------------------------------------------------------------- the FlashAttention backward


@st.composite
def small_problems(draw):
    b = draw(st.integers(1, 2))
    m = draw(st.integers(1, 9))
    n = draw(st.integers(m, 11))  # causal needs every query to see key 0 at least
    d = draw(st.integers(1, 5))
    d_v = draw(st.integers(1, 4))
    block = draw(st.integers(1, 12))
    causal = draw(st.booleans())
    seed = draw(st.integers(0, 2**16))
    g = torch.Generator().manual_seed(seed)
    q, k = (2 * torch.randn(b, size, d, generator=g, dtype=torch.float64) for size in (m, n))
    v = torch.randn(b, n, d_v, generator=g, dtype=torch.float64)
    return q, k, v, block, causal


@given(small_problems())
@settings(max_examples=10, deadline=None)  # the gradients are also checked against sdpa below
def test_flash_attention_passes_gradcheck(problem):
    q, k, v, block, causal = problem
    leaves = [t.clone().requires_grad_(True) for t in (q, k, v)]
    assert torch.autograd.gradcheck(
        lambda a, b, c: flash.flash_attention(a, b, c, block_size=block, causal=causal), leaves
    )


@given(small_problems(), st.integers(0, 2**16))
@settings(max_examples=30, deadline=None)
def test_flash_attention_gradients_match_autograd_of_sdpa(problem, seed):
    q, k, v, block, causal = problem
    upstream = torch.randn(
        q.shape[0],
        q.shape[1],
        v.shape[2],
        dtype=q.dtype,
        generator=torch.Generator().manual_seed(seed),
    )
    results = []
    for fn in (
        lambda a, b, c: flash.flash_attention(a, b, c, block_size=block, causal=causal),
        lambda a, b, c: sdpa(a, b, c, causal=causal),
    ):
        leaves = [t.clone().requires_grad_(True) for t in (q, k, v)]
        out = fn(*leaves)
        results.append((out, *torch.autograd.grad((out * upstream).sum(), leaves)))
    for got, want in zip(*results):
        torch.testing.assert_close(got, want, atol=1e-10, rtol=1e-8)


def test_flash_attention_forward_is_tiled_attention():
    g = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(2, 37, 8, generator=g) for _ in range(3))
    for causal in (False, True):
        torch.testing.assert_close(
            flash.flash_attention(q, k, v, block_size=8, causal=causal),
            flash.tiled_attention(q, k, v, block_size=8, causal=causal),
            atol=0,
            rtol=0,
        )


def test_flash_attention_training_memory_is_linear_and_autograd_through_tiles_is_not():
    g = torch.Generator().manual_seed(0)
    naive, tiled, fa = [], [], []
    for n in (256, 512, 1024):
        q, k, v = (torch.randn(1, n, 16, generator=g) for _ in range(3))
        naive.append(flash.peak_training_memory(flash.naive_attention, q, k, v).peak)
        # Tiles of 128 (up to 8 x 8 of them): every tile is tracked, forward and
        # backward, so fewer tiles keep this test quick.
        tiled.append(
            flash.peak_training_memory(flash.tiled_attention, q, k, v, block_size=128).peak
        )
        fa.append(flash.peak_training_memory(flash.flash_attention, q, k, v, block_size=128).peak)
    # Autograd saves the n x n weights of the naive layer and every tile of the loop:
    # both at least one n x n float32 matrix, fourfold per doubling.
    for n, a, b in zip((256, 512, 1024), naive, tiled):
        assert a >= n * n * 4 and b >= n * n * 4
    assert naive[2] / naive[1] > 3.5 and tiled[2] / tiled[1] > 3.5
    # The recomputing backward keeps O(n) numbers beside its tiles: the part that
    # grows with n about doubles per doubling, and the whole is far below one
    # n x n matrix at n = 1024.
    assert fa[2] / fa[1] < 2.2 and fa[2] - fa[1] < 2.2 * (fa[1] - fa[0])
    assert fa[2] < 1024 * 1024 * 4 / 4


def test_peak_training_memory_counts_the_backward_pass():
    x = torch.ones(1000)  # 4000 bytes

    def square(t):
        return t * t  # saves t (an input, not counted); the gradient is 4000 bytes

    forward_only = flash.peak_memory(square, x)
    training = flash.peak_training_memory(square, x)
    assert forward_only.peak == 4000
    assert training.peak >= 8000  # the output and the input's gradient, at least
    assert "mul" in training.operators
    with pytest.raises(ValueError, match="depends on its floating-point inputs"):
        flash.peak_training_memory(lambda t: torch.ones(3), x)


def test_peak_memory_names_the_operators():
    x = torch.randn(4, 5)
    assert "_softmax" in flash.peak_memory(torch.softmax, x, -1).operators
    assert "_softmax" not in flash.peak_memory(flash.online_softmax, x, 2).operators


def test_flash_attention_bad_input():
    q = torch.randn(2, 4, 3)
    with pytest.raises(ValueError, match="block_size must be >= 1, got 0"):
        flash.flash_attention(q, q, q, block_size=0)
    with pytest.raises(TypeError, match="causal must be True or False, got 1"):
        flash.flash_attention(q, q, q, causal=1)
    with pytest.raises(ValueError, match="keys must have as many features as queries"):
        flash.flash_attention(q, torch.randn(2, 4, 5), q)
    with pytest.raises(TypeError, match="fn must be callable"):
        flash.peak_training_memory(3)
