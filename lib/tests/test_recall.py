"""Tests of attnbook.recall: the associative-recall task and the right-key accuracy."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from attnbook.recall import RecallBatch, make_recall_batch, right_key_accuracy


def test_shapes_and_dtypes():
    batch = make_recall_batch(5, n=7, d=6, d_v=4)
    assert isinstance(batch, RecallBatch)
    assert batch.queries.shape == (5, 1, 6)
    assert batch.keys.shape == (5, 7, 6)
    assert batch.values.shape == (5, 7, 4)
    assert batch.targets.shape == (5, 1, 4)
    assert batch.index.shape == (5, 1)
    assert batch.index.dtype == torch.long
    assert batch.queries.dtype == torch.float32


@given(st.integers(1, 6), st.integers(1, 9), st.integers(1, 8), st.integers(0, 10_000))
def test_query_is_the_right_key_and_target_its_value(b, n, d, seed):
    # Without noise the query equals the right key exactly; the target is its value.
    batch = make_recall_batch(b, n=n, d=d, noise=0.0, seed=seed)
    for i in range(b):
        j = int(batch.index[i, 0])
        assert 0 <= j < n
        assert torch.equal(batch.queries[i, 0], batch.keys[i, j])
        assert torch.equal(batch.targets[i, 0], batch.values[i, j])


def test_noise_has_the_requested_size():
    clean = make_recall_batch(2000, n=4, d=8, noise=0.0, seed=3)
    noisy = make_recall_batch(2000, n=4, d=8, noise=0.3, seed=3)
    assert torch.equal(clean.keys, noisy.keys)  # the noise is drawn last
    rows = torch.arange(2000)
    difference = noisy.queries[:, 0] - noisy.keys[rows, noisy.index[:, 0]]
    assert abs(difference.std().item() - 0.3) < 0.01


def test_two_parts_pick_two_different_keys():
    batch = make_recall_batch(300, n=5, d=6, d_v=4, noise=0.0, parts=2, seed=1)
    assert batch.index.shape == (300, 2)
    assert bool((batch.index[:, 0] != batch.index[:, 1]).all())
    for i in range(300):
        a, b = batch.index[i].tolist()
        assert torch.equal(batch.queries[i, 0, :3], batch.keys[i, a, :3])
        assert torch.equal(batch.queries[i, 0, 3:], batch.keys[i, b, 3:])
        assert torch.equal(batch.targets[i, 0, :2], batch.values[i, a, :2])
        assert torch.equal(batch.targets[i, 0, 2:], batch.values[i, b, 2:])
    # The second key is uniform over the other keys: every shift appears.
    shifts = set(((batch.index[:, 1] - batch.index[:, 0]) % 5).tolist())
    assert shifts == {1, 2, 3, 4}


def test_seed_fixes_the_batch_and_a_generator_advances():
    a = make_recall_batch(3, n=4, d=2, seed=11)
    b = make_recall_batch(3, n=4, d=2, seed=11)
    assert torch.equal(a.queries, b.queries) and torch.equal(a.index, b.index)
    g = torch.Generator().manual_seed(11)
    first = make_recall_batch(3, n=4, d=2, seed=g)
    second = make_recall_batch(3, n=4, d=2, seed=g)
    assert torch.equal(first.keys, a.keys)
    assert not torch.equal(second.keys, first.keys)


def test_index_is_roughly_uniform():
    batch = make_recall_batch(8000, n=8, d=2, seed=5)
    counts = torch.bincount(batch.index[:, 0], minlength=8).float()
    assert counts.min() > 800 and counts.max() < 1200


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"batch": 0}, ValueError, "batch.*0"),
        ({"n": 2.5}, TypeError, "n must be an integer"),
        ({"d": -1}, ValueError, "d must be >= 1"),
        ({"noise": -0.1}, ValueError, "noise.*-0.1"),
        ({"noise": "a"}, TypeError, "noise"),
        ({"parts": 3}, ValueError, "parts must be 1 or 2"),
        ({"parts": 2, "d": 5}, ValueError, "d must be divisible by parts=2, got d=5"),
        ({"parts": 2, "d_v": 3}, ValueError, "d_v must be divisible"),
        ({"parts": 2, "n": 1}, ValueError, "n must be at least parts=2"),
        ({"seed": 1.5}, TypeError, "seed"),
    ],
)
def test_bad_input(kwargs, error, match):
    args = {"batch": 2, "n": 4, "d": 4} | kwargs
    with pytest.raises(error, match=match):
        make_recall_batch(**args)


def accuracy_by_loop(weights, index):
    rows = weights.reshape(-1, weights.shape[-1]).tolist()
    right = index.reshape(-1).tolist()
    hits = sum(row.index(max(row)) == key for row, key in zip(rows, right))
    return hits / len(rows)


@given(st.integers(1, 5), st.integers(1, 3), st.integers(2, 6), st.integers(0, 1000))
def test_accuracy_matches_a_loop(b, h, n, seed):
    g = torch.Generator().manual_seed(seed)
    weights = torch.softmax(torch.randn(b, n, generator=g) * 3, -1)  # (rows, keys)
    index = torch.randint(n, (b,), generator=g)
    before = weights.clone()
    got = right_key_accuracy(weights, index)
    assert got.shape == () and got.dtype == torch.float32
    assert got.item() == pytest.approx(accuracy_by_loop(weights, index))
    assert torch.equal(weights, before)
    # Leading axes: (rows, heads, keys) with one index per (row, head).
    heads = torch.softmax(torch.randn(b, h, n, generator=g) * 3, -1)
    per_head = torch.randint(n, (b, h), generator=g)
    assert right_key_accuracy(heads, per_head).item() == pytest.approx(
        accuracy_by_loop(heads, per_head)
    )


def test_accuracy_known_values():
    weights = torch.tensor([[0.7, 0.3], [0.4, 0.6]])
    assert right_key_accuracy(weights, torch.tensor([0, 0])).item() == 0.5
    assert right_key_accuracy(weights, torch.tensor([0, 1])).item() == 1.0
    assert right_key_accuracy(weights, torch.tensor([1, 0])).item() == 0.0
    assert right_key_accuracy(weights.double(), torch.tensor([0, 1])).dtype == torch.float64


@pytest.mark.parametrize(
    ("weights", "index", "error", "match"),
    [
        (torch.ones(()), torch.zeros((), dtype=torch.long), ValueError, "weights must have a keys"),
        (torch.ones(2, 3), torch.zeros(2), TypeError, "index must hold integers"),
        (torch.ones(2, 3, dtype=torch.long), torch.zeros(2), TypeError, "floating-point"),
        (torch.ones(2, 3), torch.zeros(3, dtype=torch.long), ValueError, r"shape \(2,\), got"),
        (torch.ones(2, 3), torch.zeros(2, 1, dtype=torch.long), ValueError, "one entry per row"),
        (torch.ones(2, 3), torch.tensor([0, 3]), ValueError, r"index must lie in \[0, 2\]"),
        (torch.ones(2, 3), torch.tensor([-1, 0]), ValueError, r"got \[-1\]"),
        (torch.ones(0, 3), torch.zeros(0, dtype=torch.long), ValueError, "at least one row"),
        ([[0.5, 0.5]], torch.zeros(1, dtype=torch.long), TypeError, "weights must be a torch"),
    ],
)
def test_accuracy_bad_input(weights, index, error, match):
    with pytest.raises(error, match=match):
        right_key_accuracy(weights, index)
