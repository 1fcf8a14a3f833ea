"""Tests of attnbook.data: true_function, make_regression_data, RegressionData."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch
from _helpers import assert_unchanged, clones
from hypothesis import given, settings
from hypothesis import strategies as st

from attnbook.data import RegressionData, make_regression_data, true_function


def f(x: float) -> float:
    """The closed form 2 sin(x) + x^0.8, in Python floats."""
    return 2 * math.sin(x) + x**0.8


def reference(x: torch.Tensor) -> torch.Tensor:
    return torch.tensor([f(float(v)) for v in x.flatten()], dtype=torch.float64).reshape(x.shape)


# ---------------------------------------------------------------- true_function


@given(st.lists(st.floats(0, 100), min_size=0, max_size=20))
def test_true_function_matches_closed_form(values):
    x = torch.tensor(values, dtype=torch.float64)
    before = clones(x)
    got = true_function(x)
    assert got.dtype == torch.float64 and got.shape == x.shape
    torch.testing.assert_close(got, reference(x), rtol=1e-12, atol=1e-12)
    assert_unchanged(before, [x])


def test_true_function_known_values():
    got = true_function(torch.tensor([0.0, 1.0, math.pi / 2], dtype=torch.float64))
    expected = [0.0, 2 * math.sin(1.0) + 1.0, 2.0 + (math.pi / 2) ** 0.8]
    torch.testing.assert_close(got, torch.tensor(expected, dtype=torch.float64))


def test_true_function_keeps_shape_and_float32():
    x = torch.linspace(0, 5, 12).reshape(3, 4)
    got = true_function(x)
    assert got.shape == (3, 4) and got.dtype == torch.float32
    torch.testing.assert_close(got, reference(x).float())


def test_true_function_promotes_integers():
    got = true_function(torch.arange(4))
    assert got.dtype == torch.get_default_dtype()
    torch.testing.assert_close(got, reference(torch.arange(4)).float())


def test_true_function_device(device):
    x = torch.tensor([0.0, 2.0, 4.5], device=device)
    got = true_function(x)
    assert got.device == x.device
    torch.testing.assert_close(got.cpu().double(), reference(x.cpu()), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(
    ("x", "error", "pattern"),
    [
        ([1.0, 2.0], TypeError, r"x must be a torch\.Tensor"),
        (2.0, TypeError, r"x must be a torch\.Tensor.*2\.0"),
        (torch.tensor([True]), TypeError, r"x must hold real numbers.*bool"),
        (torch.tensor([1.0, -0.5]), ValueError, r"x must be >= 0.*-0\.5"),
        (torch.tensor([-3]), ValueError, r"x must be >= 0.*-3"),
    ],
)
def test_true_function_bad_input(x, error, pattern):
    with pytest.raises(error, match=pattern):
        true_function(x)


# ---------------------------------------------------------------- make_regression_data


def test_default_dataset_layout():
    data = make_regression_data()
    assert isinstance(data, RegressionData)
    assert data.n_train == 50
    assert data.x_train.shape == data.y_train.shape == (50,)
    assert data.x_query.shape == data.y_query.shape == (50,)
    for tensor in (data.x_train, data.y_train, data.x_query, data.y_query):
        assert tensor.dtype == torch.float32


def test_queries_are_the_grid_0_to_4_9():
    data = make_regression_data()
    expected = torch.tensor([i / 10 for i in range(50)])
    torch.testing.assert_close(data.x_query, expected, rtol=0, atol=1e-6)


@given(seed=st.integers(0, 2**32), n_train=st.integers(1, 200))
@settings(max_examples=25)
def test_training_inputs_are_sorted_and_in_range(seed, n_train):
    data = make_regression_data(n_train=n_train, seed=seed)
    assert data.n_train == n_train
    x = data.x_train.tolist()
    assert x == sorted(x)
    assert all(0.0 <= v <= 5.0 for v in x)


@given(seed=st.integers(0, 2**32))
@settings(max_examples=25)
def test_noise_free_targets_are_the_true_function(seed):
    data = make_regression_data(n_train=30, noise=0.0, seed=seed)
    torch.testing.assert_close(data.y_train.double(), reference(data.x_train), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(data.y_query.double(), reference(data.x_query), atol=1e-5, rtol=1e-5)


@given(seed=st.integers(0, 2**32), noise=st.floats(0, 3))
@settings(max_examples=25)
def test_query_targets_never_have_noise(seed, noise):
    data = make_regression_data(noise=noise, seed=seed)
    expected = reference(data.x_query)
    torch.testing.assert_close(data.y_query.double(), expected, atol=1e-5, rtol=1e-5)


@given(seed=st.integers(-(2**40), 2**40), n_train=st.integers(1, 60))
@settings(max_examples=25)
def test_same_seed_same_data(seed, n_train):
    a = make_regression_data(n_train=n_train, seed=seed)
    b = make_regression_data(n_train=n_train, seed=seed)
    for field in ("x_train", "y_train", "x_query", "y_query"):
        assert torch.equal(getattr(a, field), getattr(b, field))


def test_different_seeds_differ():
    a, b = make_regression_data(seed=0), make_regression_data(seed=1)
    assert not torch.equal(a.x_train, b.x_train)
    assert not torch.equal(a.y_train, b.y_train)
    assert torch.equal(a.x_query, b.x_query)


def test_global_rng_is_untouched():
    torch.manual_seed(1234)
    state = torch.random.get_rng_state()
    make_regression_data(n_train=100, noise=1.0, seed=5)
    assert torch.equal(torch.random.get_rng_state(), state)


def test_global_rng_does_not_influence_the_data():
    torch.manual_seed(1)
    a = make_regression_data(seed=3)
    torch.manual_seed(2)
    b = make_regression_data(seed=3)
    assert torch.equal(a.x_train, b.x_train) and torch.equal(a.y_train, b.y_train)


def test_noise_has_the_requested_scale():
    data = make_regression_data(n_train=4000, noise=0.5, seed=0)
    residual = (data.y_train.double() - reference(data.x_train)).tolist()
    mean = sum(residual) / len(residual)
    std = math.sqrt(sum((r - mean) ** 2 for r in residual) / (len(residual) - 1))
    assert abs(mean) < 0.05
    assert abs(std - 0.5) < 0.05


def test_noise_scales_the_residuals_linearly():
    small = make_regression_data(noise=0.1, seed=7)
    large = make_regression_data(noise=1.0, seed=7)
    assert torch.equal(small.x_train, large.x_train)
    r_small = small.y_train.double() - reference(small.x_train)
    r_large = large.y_train.double() - reference(large.x_train)
    torch.testing.assert_close(r_large, 10 * r_small, atol=1e-4, rtol=1e-4)


def test_regression_data_is_frozen():
    data = make_regression_data(n_train=5)
    with pytest.raises(dataclasses.FrozenInstanceError):
        data.x_train = torch.zeros(5)


def test_regression_data_n_train():
    data = RegressionData(torch.zeros(7), torch.zeros(7), torch.zeros(3), torch.zeros(3))
    assert data.n_train == 7


@pytest.mark.parametrize(
    ("kwargs", "error", "pattern"),
    [
        ({"n_train": 0}, ValueError, r"n_train must be >= 1.*got 0"),
        ({"n_train": -3}, ValueError, r"n_train.*-3"),
        ({"n_train": 2.5}, TypeError, r"n_train must be an integer.*2\.5"),
        ({"n_train": True}, TypeError, r"n_train.*True"),
        ({"n_train": "50"}, TypeError, r"n_train.*'50'"),
        ({"noise": -0.1}, ValueError, r"noise must be a finite number >= 0.*-0\.1"),
        ({"noise": float("nan")}, ValueError, r"noise.*nan"),
        ({"noise": float("inf")}, ValueError, r"noise.*inf"),
        ({"noise": "0.5"}, TypeError, r"noise must be a real number.*'0\.5'"),
        ({"noise": None}, TypeError, r"noise.*None"),
        ({"noise": False}, TypeError, r"noise.*False"),
        ({"seed": 1.5}, TypeError, r"seed must be an integer.*1\.5"),
        ({"seed": "0"}, TypeError, r"seed.*'0'"),
        ({"seed": None}, TypeError, r"seed.*None"),
        ({"seed": True}, TypeError, r"seed.*True"),
    ],
)
def test_make_regression_data_bad_input(kwargs, error, pattern):
    with pytest.raises(error, match=pattern):
        make_regression_data(**kwargs)
