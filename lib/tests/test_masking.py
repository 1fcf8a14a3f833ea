"""Tests of attnbook.masking: sequence_mask and masked_softmax."""

from __future__ import annotations

import math

import pytest
import torch
from _helpers import assert_unchanged, clones
from hypothesis import given
from hypothesis import strategies as st

from attnbook.masking import masked_softmax, sequence_mask

# ---------------------------------------------------------------- references


def ref_sequence_mask(X: torch.Tensor, lens: list[int], value: float) -> list[list[float]]:
    """Brute force: copy each row, overwriting positions >= its length."""
    return [
        [float(X[r, p]) if p < lens[r] else value for p in range(X.shape[1])]
        for r in range(X.shape[0])
    ]


def ref_masked_softmax(X: torch.Tensor, lens: list[list[int]]) -> torch.Tensor:
    """Brute force in float64: softmax of the first lens[b][q] scores of each row."""
    batch, queries, keys = X.shape
    out = torch.zeros(batch, queries, keys, dtype=torch.float64)
    for b in range(batch):
        for q in range(queries):
            n = lens[b][q]
            if n == 0:
                continue
            row = [float(X[b, q, k]) for k in range(n)]
            top = max(row)
            exps = [math.exp(s - top) for s in row]
            total = sum(exps)
            for k in range(n):
                out[b, q, k] = exps[k] / total
    return out


def per_query(lens: torch.Tensor, queries: int) -> list[list[int]]:
    """(batch,) or (batch, queries) lengths as a nested list, one per query."""
    if lens.dim() == 1:
        return [[int(n)] * queries for n in lens]
    return [[int(n) for n in row] for row in lens]


# ---------------------------------------------------------------- strategies


@st.composite
def masked_inputs(draw, max_batch=3, max_queries=4, max_keys=6, scale=5.0):
    """(X float64, valid_lens) with 1-D or 2-D lengths, including 0 and keys."""
    batch = draw(st.integers(1, max_batch))
    queries = draw(st.integers(1, max_queries))
    keys = draw(st.integers(1, max_keys))
    seed = draw(st.integers(0, 2**31 - 1))
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(batch, queries, keys, generator=g, dtype=torch.float64) * scale
    shape = draw(st.sampled_from([(batch,), (batch, queries)]))
    lens = torch.tensor(
        draw(st.lists(st.integers(0, keys), min_size=math.prod(shape), max_size=math.prod(shape)))
    ).reshape(shape)
    return X, lens


# ---------------------------------------------------------------- sequence_mask


@given(
    rows=st.integers(1, 5),
    positions=st.integers(0, 6),
    value=st.floats(-1e6, 1e6),
    seed=st.integers(0, 1000),
    data=st.data(),
)
def test_sequence_mask_matches_loop(rows, positions, value, seed, data):
    X = torch.randn(rows, positions, generator=torch.Generator().manual_seed(seed))
    lens = data.draw(st.lists(st.integers(0, positions), min_size=rows, max_size=rows))
    before = clones(X)
    got = sequence_mask(X, torch.tensor(lens), value)
    expected = torch.tensor(ref_sequence_mask(X, lens, value), dtype=X.dtype).reshape(X.shape)
    torch.testing.assert_close(got, expected, rtol=0, atol=0)
    assert_unchanged(before, [X])


def test_sequence_mask_example():
    X = torch.arange(1.0, 7.0).reshape(2, 3)
    got = sequence_mask(X, torch.tensor([1, 2]), value=-1.0)
    assert got.tolist() == [[1.0, -1.0, -1.0], [4.0, 5.0, -1.0]]


def test_sequence_mask_returns_new_tensor():
    X = torch.ones(2, 3)
    got = sequence_mask(X, torch.tensor([3, 3]))
    assert got.data_ptr() != X.data_ptr()
    got[0, 0] = 5.0
    assert X[0, 0] == 1.0


@pytest.mark.parametrize("dtype", [torch.float64, torch.float16, torch.int64])
def test_sequence_mask_keeps_dtype(dtype):
    X = torch.arange(6).reshape(2, 3).to(dtype)
    got = sequence_mask(X, torch.tensor([2, 0]))
    assert got.dtype == dtype
    assert got.tolist() == [[0, 1, 0], [0, 0, 0]]


@pytest.mark.parametrize(
    "lens", [[1, 3], (1, 3), torch.tensor([1.0, 3.0]), torch.tensor([1, 3], dtype=torch.int32)]
)
def test_sequence_mask_accepts_lists_and_whole_floats(lens):
    got = sequence_mask(torch.ones(2, 3), lens)
    assert got.tolist() == [[1, 0, 0], [1, 1, 1]]


def test_sequence_mask_device(device):
    X = torch.ones(2, 4, device=device)
    got = sequence_mask(X, torch.tensor([1, 3], device=device), value=7.0)
    assert got.device == X.device
    assert got.cpu().tolist() == [[1, 7, 7, 7], [1, 1, 1, 7]]


def test_sequence_mask_lengths_on_cpu_for_device_input(device):
    got = sequence_mask(torch.zeros(1, 2, device=device), torch.tensor([1]), value=1.0)
    assert got.cpu().tolist() == [[0, 1]]


@pytest.mark.parametrize(
    ("X", "lens", "error", "pattern"),
    [
        ([[1.0, 2.0]], torch.tensor([1]), TypeError, r"X must be a torch\.Tensor"),
        (torch.ones(3), torch.tensor([1, 1, 1]), ValueError, r"X must be 2-D.*\(3,\)"),
        (torch.ones(1, 2, 3), torch.tensor([1]), ValueError, r"X must be 2-D.*\(1, 2, 3\)"),
        (torch.ones(2, 3), torch.tensor([1, 2, 3]), ValueError, r"valid_lens.*\(2,\).*\(3,\)"),
        (torch.ones(2, 3), torch.tensor([[1, 2]]), ValueError, r"valid_lens.*\(1, 2\)"),
        (torch.ones(2, 3), torch.tensor([[1, 2], [0, 3]]), ValueError, r"valid_lens.*\(2, 2\)"),
        (torch.ones(2, 3), torch.tensor(1), ValueError, r"valid_lens.*\(2,\).*shape \(\)"),
        (torch.ones(2, 3), torch.tensor([1, -1]), ValueError, r"valid_lens.*\[0, 3\].*-1"),
        (torch.ones(2, 3), torch.tensor([4, 1]), ValueError, r"valid_lens.*\[0, 3\].*got 4"),
        (torch.ones(2, 3), torch.tensor([1.5, 1.0]), ValueError, r"valid_lens.*whole.*1\.5"),
        (torch.ones(2, 3), torch.tensor([float("nan"), 1]), ValueError, r"valid_lens.*nan"),
        (torch.ones(2, 3), torch.tensor([True, False]), TypeError, r"valid_lens.*bool"),
        (torch.ones(2, 3), "12", TypeError, r"valid_lens.*'12'"),
        (torch.ones(2, 3), None, TypeError, r"valid_lens.*None"),
        (torch.ones(2, 3), [[1], [1, 2]], TypeError, r"valid_lens"),
    ],
)
def test_sequence_mask_bad_input(X, lens, error, pattern):
    with pytest.raises(error, match=pattern):
        sequence_mask(X, lens)


# ---------------------------------------------------------------- masked_softmax: references


@given(masked_inputs())
def test_masked_softmax_matches_loop(inputs):
    X, lens = inputs
    before = clones(X, lens)
    got = masked_softmax(X, lens)
    assert got.dtype == torch.float64
    torch.testing.assert_close(got, ref_masked_softmax(X, per_query(lens, X.shape[1])))
    assert_unchanged(before, [X, lens])


@given(masked_inputs())
def test_masked_softmax_float32_matches_loop(inputs):
    X, lens = inputs
    got = masked_softmax(X.float(), lens)
    assert got.dtype == torch.float32
    expected = ref_masked_softmax(X.float(), per_query(lens, X.shape[1]))
    torch.testing.assert_close(got, expected.float())


@given(masked_inputs())
def test_masked_softmax_without_lengths_is_plain_softmax(inputs):
    X, _ = inputs
    batch, queries, keys = X.shape
    expected = ref_masked_softmax(X, [[keys] * queries] * batch)
    torch.testing.assert_close(masked_softmax(X), expected)
    torch.testing.assert_close(masked_softmax(X, None), expected)


def test_masked_softmax_example():
    X = torch.tensor([[[0.0, 0.0, 0.0, 5.0]], [[1.0, 2.0, 3.0, 4.0]]])
    got = masked_softmax(X, torch.tensor([2, 0]))
    assert got.tolist() == [[[0.5, 0.5, 0.0, 0.0]], [[0.0, 0.0, 0.0, 0.0]]]


def test_masked_softmax_2d_lengths_example():
    X = torch.zeros(1, 3, 4)
    got = masked_softmax(X, torch.tensor([[1, 2, 4]]))
    expected = [[[1.0, 0, 0, 0], [0.5, 0.5, 0, 0], [0.25, 0.25, 0.25, 0.25]]]
    assert got.tolist() == expected


@pytest.mark.parametrize(
    "lens", [[2, 3], (2, 3), torch.tensor([2.0, 3.0]), torch.tensor([2, 3], dtype=torch.int8)]
)
def test_masked_softmax_accepts_lists_and_whole_floats(lens):
    X = torch.randn(2, 2, 4, generator=torch.Generator().manual_seed(0))
    expected = ref_masked_softmax(X, [[2, 2], [3, 3]]).float()
    torch.testing.assert_close(masked_softmax(X, lens), expected)


# ---------------------------------------------------------------- masked_softmax: properties


@given(masked_inputs(scale=30.0))
def test_masked_softmax_rows_sum_to_one_and_zero_beyond(inputs):
    X, lens = inputs
    got = masked_softmax(X, lens)
    lengths = per_query(lens, X.shape[1])
    for b in range(X.shape[0]):
        for q in range(X.shape[1]):
            n = lengths[b][q]
            assert torch.all(got[b, q, n:] == 0)  # exact zeros beyond the length
            if n == 0:
                assert torch.all(got[b, q] == 0)
            else:
                assert math.isclose(float(got[b, q, :n].sum()), 1.0, rel_tol=1e-9)
                assert torch.all(got[b, q, :n] >= 0)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@given(inputs=masked_inputs(), scale=st.sampled_from([1.0, 1e2, 1e4, 6e4]))
def test_masked_softmax_low_precision_has_no_nan(dtype, inputs, scale):
    X, lens = inputs
    low = (X.clamp(-1, 1) * scale).to(dtype)  # up to the float16 maximum (65504)
    got = masked_softmax(low, lens)
    assert got.dtype == dtype
    assert torch.isfinite(got).all()
    expected = ref_masked_softmax(low.double(), per_query(lens, X.shape[1]))
    torch.testing.assert_close(got.double(), expected, atol=1e-2, rtol=1e-2)
    # Exact zeros beyond the length, even in low precision.
    lengths = per_query(lens, X.shape[1])
    for b in range(X.shape[0]):
        for q in range(X.shape[1]):
            assert torch.all(got[b, q, lengths[b][q] :] == 0)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_masked_softmax_extreme_scores_and_empty_rows(dtype):
    big = torch.finfo(dtype).max
    X = torch.tensor([[[big, -big, big, 0.0]], [[-big, -big, -big, -big]]], dtype=dtype)
    got = masked_softmax(X, torch.tensor([3, 0]))
    assert torch.isfinite(got).all()
    assert got.double().tolist() == [[[0.5, 0.0, 0.5, 0.0]], [[0.0, 0.0, 0.0, 0.0]]]


@pytest.mark.parametrize("lens", [None, torch.tensor([3, 3])])
def test_masked_softmax_large_scores_do_not_overflow(lens):
    X = torch.tensor([[[1000.0, 1001.0, 1002.0]], [[-1000.0, -1000.0, -999.0]]])
    got = masked_softmax(X, lens)
    expected = ref_masked_softmax(X, [[3], [3]]).float()
    torch.testing.assert_close(got, expected)


@given(masked_inputs())
def test_masked_softmax_gradients_flow(inputs):
    X, lens = inputs
    X = X.clone().requires_grad_(True)
    upstream = torch.randn(X.shape, dtype=X.dtype, generator=torch.Generator().manual_seed(1))
    (masked_softmax(X, lens) * upstream).sum().backward()
    assert X.grad is not None
    assert torch.isfinite(X.grad).all()
    lengths = per_query(lens, X.shape[1])
    for b in range(X.shape[0]):
        for q in range(X.shape[1]):
            n = lengths[b][q]
            assert torch.all(X.grad[b, q, n:] == 0)  # masked scores get no gradient
            if n >= 2:
                assert X.grad[b, q, :n].abs().sum() > 0


def test_masked_softmax_gradient_matches_finite_differences():
    X = torch.randn(2, 3, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    X.requires_grad_(True)
    lens = torch.tensor([[1, 3, 5], [0, 2, 4]])
    assert torch.autograd.gradcheck(lambda s: masked_softmax(s, lens), (X,), fast_mode=True)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_masked_softmax_low_precision_gradients_are_finite(dtype):
    X = torch.tensor([[[6e4, -6e4, 1.0]], [[1.0, 2.0, 3.0]]], dtype=dtype, requires_grad=True)
    masked_softmax(X, torch.tensor([2, 0])).sum().backward()
    assert torch.isfinite(X.grad).all()
    assert torch.all(X.grad[0, 0, 2:] == 0) and torch.all(X.grad[1] == 0)


def test_masked_softmax_does_not_modify_inputs_with_nan_padding():
    # Padding positions may hold anything, even NaN: they are ignored.
    X = torch.tensor([[[1.0, 2.0, float("nan")]]])
    got = masked_softmax(X, torch.tensor([2]))
    assert torch.isfinite(got).all()
    assert torch.isnan(X[0, 0, 2])


def test_masked_softmax_device(device):
    X = torch.zeros(2, 1, 4, device=device)
    lens = torch.tensor([[2], [4]], device=device)
    got = masked_softmax(X, lens)
    assert got.device == X.device
    assert got.cpu().tolist() == [[[0.5, 0.5, 0, 0]], [[0.25] * 4]]


def test_masked_softmax_cpu_lengths_for_device_scores(device):
    got = masked_softmax(torch.zeros(1, 1, 2, device=device), torch.tensor([1]))
    assert got.cpu().tolist() == [[[1.0, 0.0]]]


# ---------------------------------------------------------------- masked_softmax: bad input


@pytest.mark.parametrize(
    ("X", "lens", "error", "pattern"),
    [
        ([[[1.0]]], None, TypeError, r"X must be a torch\.Tensor"),
        (torch.ones(2, 3), None, ValueError, r"X must be 3-D.*\(2, 3\)"),
        (torch.ones(1, 2, 3, 4), None, ValueError, r"X must be 3-D.*\(1, 2, 3, 4\)"),
        (torch.ones(2, 2, 3, dtype=torch.long), None, TypeError, r"X.*floating.*int64"),
        (torch.ones(2, 2, 3), torch.tensor([1, 2, 3]), ValueError, r"valid_lens.*\(3,\)"),
        (torch.ones(2, 2, 3), torch.tensor([[1, 2, 3]] * 2), ValueError, r"valid_lens.*\(2, 3\)"),
        (torch.ones(2, 2, 3), torch.ones(2, 2, 1), ValueError, r"valid_lens.*\(2, 2, 1\)"),
        (torch.ones(2, 2, 3), torch.tensor(2), ValueError, r"valid_lens.*shape \(\)"),
        (torch.ones(2, 2, 3), torch.tensor([1, -2]), ValueError, r"valid_lens.*\[0, 3\].*-2"),
        (torch.ones(2, 2, 3), torch.tensor([1, 4]), ValueError, r"valid_lens.*\[0, 3\].*got 4"),
        (torch.ones(2, 2, 3), torch.tensor([[1, 0], [3, 5]]), ValueError, r"valid_lens.*got 5"),
        (torch.ones(2, 2, 3), torch.tensor([1.0, 2.5]), ValueError, r"valid_lens.*whole.*2\.5"),
        (torch.ones(2, 2, 3), torch.tensor([1.0, float("inf")]), ValueError, r"valid_lens.*inf"),
        (torch.ones(2, 2, 3), [1, 2.5], ValueError, r"valid_lens.*2\.5"),
        (torch.ones(2, 2, 3), torch.tensor([True, True]), TypeError, r"valid_lens.*bool"),
        (torch.ones(2, 2, 3), torch.tensor([1j, 1j]), TypeError, r"valid_lens.*complex"),
        (torch.ones(2, 2, 3), 2, TypeError, r"valid_lens.*got 2"),
        (torch.ones(2, 2, 3), "23", TypeError, r"valid_lens.*'23'"),
        (torch.ones(2, 2, 3), [[1], [1, 2]], TypeError, r"valid_lens"),
    ],
)
def test_masked_softmax_bad_input(X, lens, error, pattern):
    with pytest.raises(error, match=pattern):
        masked_softmax(X, lens)


def test_wrongly_shaped_lengths_are_reported_against_what_the_reader_passed():
    """Issue 30: the message talks about the scores, or about the queries and keys
    the reader passed to an attention layer, and shows the lengths as passed."""
    from attnbook import masking, scoring

    X = torch.randn(1, 4, 2)  # the reader's tokens; their scores are (1, 4, 4)
    with pytest.raises(ValueError) as caught:
        scoring.DotProductAttention()(X, X, X, torch.tensor([[1, 2]]))
    message = str(caught.value)
    assert "queries of shape (1, 4, 2) and keys of shape (1, 4, 2)" in message
    assert "got [[1, 2]] (shape (1, 2))" in message
    assert "(1, 4, 4)" not in message
    with pytest.raises(
        ValueError, match=r"scores X of shape \(batch, queries, keys\) = \(1, 4, 4\)"
    ):
        masking.masked_softmax(torch.randn(1, 4, 4), torch.tensor([[1, 2]]))
    with pytest.raises(ValueError, match=r"X must be 3-D, the scores"):
        masking.masked_softmax(torch.randn(4, 4), torch.tensor([1]))
    with pytest.raises(ValueError, match=r"one length per row of X \(X has shape \(3, 4\)\)"):
        masking.sequence_mask(torch.randn(3, 4), torch.tensor([1, 2]))
