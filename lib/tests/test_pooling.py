"""Tests of attnbook.pooling: average pooling, Nadaraya-Watson, LOO-CV, training."""

from __future__ import annotations

import math

import pytest
import torch
from _helpers import assert_unchanged, clones
from hypothesis import given, settings
from hypothesis import strategies as st

from attnbook.data import make_regression_data
from attnbook.pooling import (
    NWKernelRegression,
    average_pooling,
    leave_one_out,
    loo_cv_error,
    nadaraya_watson,
    train_nw,
)

KERNEL_NAMES = ["gaussian", "boxcar", "constant", "triangular", "epanechnikov"]
COMPACT = ["boxcar", "triangular", "epanechnikov"]
PY_KERNELS = {
    "gaussian": lambda u: math.exp(-u * u / 2),
    "boxcar": lambda u: 1.0 if abs(u) < 1 else 0.0,
    "constant": lambda u: 1.0,
    "triangular": lambda u: max(0.0, 1.0 - abs(u)),
    "epanechnikov": lambda u: 0.75 * (1.0 - u * u) if abs(u) <= 1 else 0.0,
}

# ---------------------------------------------------------------- references


def ref_nw(x_train, y_train, x_query, kernel, width):
    """Brute-force Nadaraya-Watson in Python floats.

    A query whose kernel weights are all zero attends equally to its nearest
    training input(s), the documented fallback. Returns (y_hat, weights) as lists.
    """
    k = PY_KERNELS[kernel] if isinstance(kernel, str) else kernel
    xs, ys = [float(v) for v in x_train], [float(v) for v in y_train]
    preds, rows = [], []
    for q in (float(v) for v in x_query):
        sims = [k((q - x) / width) for x in xs]
        if sum(sims) == 0:
            nearest = min(abs(q - x) for x in xs)
            sims = [1.0 if abs(q - x) == nearest else 0.0 for x in xs]
        total = sum(sims)
        row = [s / total for s in sims]
        rows.append(row)
        preds.append(sum(w * y for w, y in zip(row, ys)))
    return preds, rows


def ref_loo(x_train, y_train, width, kernel="gaussian"):
    """Brute-force leave-one-out MSE in Python floats."""
    xs, ys = [float(v) for v in x_train], [float(v) for v in y_train]
    errors = []
    for i in range(len(xs)):
        rest_x, rest_y = xs[:i] + xs[i + 1 :], ys[:i] + ys[i + 1 :]
        (pred,), _ = ref_nw(rest_x, rest_y, [xs[i]], kernel, width)
        errors.append((pred - ys[i]) ** 2)
    return sum(errors) / len(errors)


def ref_nw_model(w, queries, keys, values):
    """Parametric NW with Gaussian scores -((q - k) w)^2 / 2, per-query keys."""
    preds, rows = [], []
    for q, ks, vs in zip(queries, keys, values):
        scores = [-(((float(q) - float(k)) * w) ** 2) / 2 for k in ks]
        top = max(scores)
        exps = [math.exp(s - top) for s in scores]
        row = [e / sum(exps) for e in exps]
        rows.append(row)
        preds.append(sum(a * float(v) for a, v in zip(row, vs)))
    return preds, rows


# ---------------------------------------------------------------- strategies


@st.composite
def regression_sets(draw, min_train=1, max_train=12, max_query=6, dtype=torch.float64):
    n_train = draw(st.integers(min_train, max_train))
    n_query = draw(st.integers(0, max_query))
    g = torch.Generator().manual_seed(draw(st.integers(0, 2**31 - 1)))
    x_train = torch.rand(n_train, generator=g, dtype=dtype) * 5
    y_train = torch.randn(n_train, generator=g, dtype=dtype) * 2
    x_query = torch.rand(n_query, generator=g, dtype=dtype) * 6 - 0.5
    return x_train, y_train, x_query


log_widths = st.floats(-3, 3).map(lambda e: 10.0**e)  # widths in [1e-3, 1e3]


# ---------------------------------------------------------------- average_pooling


@given(regression_sets(max_query=8))
def test_average_pooling_is_the_mean(sets):
    _, y_train, x_query = sets
    before = clones(y_train, x_query)
    got = average_pooling(y_train, x_query)
    mean = sum(float(v) for v in y_train) / len(y_train)
    assert got.shape == x_query.shape and got.dtype == torch.float64
    torch.testing.assert_close(got, torch.full(x_query.shape, mean, dtype=torch.float64))
    assert_unchanged(before, [y_train, x_query])


def test_average_pooling_ignores_query_values_and_dtype():
    y = torch.tensor([1.0, 2.0, 6.0])
    assert average_pooling(y, torch.tensor([0, 5, -9])).tolist() == [3.0, 3.0, 3.0]
    assert average_pooling(y, torch.zeros(0)).shape == (0,)


def test_average_pooling_promotes_integer_targets():
    got = average_pooling(torch.tensor([1, 2]), torch.zeros(2))
    assert got.dtype == torch.get_default_dtype() and got.tolist() == [1.5, 1.5]


def test_average_pooling_returns_a_writable_new_tensor():
    y = torch.tensor([1.0, 3.0])
    got = average_pooling(y, torch.zeros(3))
    got[0] = 10.0  # not an expanded view: writing one entry changes only that entry
    assert got.tolist() == [10.0, 2.0, 2.0]
    assert y.tolist() == [1.0, 3.0]


def test_average_pooling_gradient():
    y = torch.tensor([1.0, 2.0, 4.0, 8.0], dtype=torch.float64, requires_grad=True)
    average_pooling(y, torch.zeros(5)).sum().backward()
    torch.testing.assert_close(y.grad, torch.full((4,), 5 / 4, dtype=torch.float64))


def test_average_pooling_device(device):
    got = average_pooling(torch.tensor([1.0, 3.0], device=device), torch.zeros(2, device=device))
    assert got.device.type == device and got.cpu().tolist() == [2.0, 2.0]


@pytest.mark.parametrize(
    ("y", "x", "error", "pattern"),
    [
        ([1.0, 2.0], torch.zeros(2), TypeError, r"y_train must be a torch\.Tensor"),
        (torch.ones(2, 2), torch.zeros(2), ValueError, r"y_train must be 1-D.*\(2, 2\)"),
        (torch.zeros(0), torch.zeros(2), ValueError, r"y_train must hold at least one.*0"),
        (torch.tensor([True]), torch.zeros(2), TypeError, r"y_train.*bool"),
        (torch.ones(2), [0.0, 1.0], TypeError, r"x_query must be a torch\.Tensor"),
        (torch.ones(2), torch.zeros(2, 1), ValueError, r"x_query must be 1-D.*\(2, 1\)"),
        (torch.ones(2), 3, TypeError, r"x_query.*3"),
    ],
)
def test_average_pooling_bad_input(y, x, error, pattern):
    with pytest.raises(error, match=pattern):
        average_pooling(y, x)


# ---------------------------------------------------------------- nadaraya_watson: references


@pytest.mark.parametrize("kernel", KERNEL_NAMES)
@given(sets=regression_sets(), width=st.floats(0.05, 20))
def test_nadaraya_watson_matches_loop(kernel, sets, width):
    x_train, y_train, x_query = sets
    before = clones(x_train, y_train, x_query)
    y_hat, weights = nadaraya_watson(x_train, y_train, x_query, kernel=kernel, width=width)
    preds, rows = ref_nw(x_train, y_train, x_query, kernel, width)
    assert y_hat.dtype == weights.dtype == torch.float64
    assert weights.shape == (len(x_query), len(x_train))
    torch.testing.assert_close(y_hat, torch.tensor(preds, dtype=torch.float64).reshape(-1))
    expected_rows = torch.tensor(rows, dtype=torch.float64).reshape(weights.shape)
    torch.testing.assert_close(weights, expected_rows)
    assert_unchanged(before, [x_train, y_train, x_query])


@pytest.mark.parametrize("kernel", KERNEL_NAMES)
def test_nadaraya_watson_float32_default_width(kernel):
    data = make_regression_data(n_train=20, seed=3)
    y_hat, weights = nadaraya_watson(data.x_train, data.y_train, data.x_query, kernel)
    preds, rows = ref_nw(data.x_train, data.y_train, data.x_query, kernel, 1.0)
    assert y_hat.dtype == weights.dtype == torch.float32
    torch.testing.assert_close(y_hat, torch.tensor(preds), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(weights, torch.tensor(rows), rtol=1e-5, atol=1e-6)


def test_nadaraya_watson_boxcar_is_a_window_average():
    x = torch.tensor([0.0, 1.0, 2.0, 3.0, 4.0])
    y = torch.tensor([10.0, 20.0, 30.0, 40.0, 50.0])
    y_hat, weights = nadaraya_watson(x, y, torch.tensor([2.2]), kernel="boxcar", width=1.5)
    # keys 1, 2, 3 lie within |2.2 - x| < 1.5
    torch.testing.assert_close(weights, torch.tensor([[0.0, 1 / 3, 1 / 3, 1 / 3, 0.0]]))
    torch.testing.assert_close(y_hat, torch.tensor([30.0]))


def test_nadaraya_watson_custom_kernel():
    def cauchy(u):
        return 1 / (1 + u**2)

    g = torch.Generator().manual_seed(11)
    x, y, q = (
        torch.rand(7, generator=g) * 5,
        torch.randn(7, generator=g),
        torch.rand(4, generator=g),
    )
    y_hat, weights = nadaraya_watson(x, y, q, kernel=cauchy, width=0.7)
    preds, rows = ref_nw(x, y, q, lambda u: 1 / (1 + u * u), 0.7)
    torch.testing.assert_close(y_hat, torch.tensor(preds), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(weights, torch.tensor(rows), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kernel", KERNEL_NAMES)
def test_nadaraya_watson_accepts_integer_inputs_and_tensor_width(kernel):
    x, y, q = torch.tensor([0, 1, 2, 4]), torch.tensor([1, 0, 3, 2]), torch.tensor([1, 3])
    y_hat, weights = nadaraya_watson(x, y, q, kernel=kernel, width=torch.tensor(2))
    assert y_hat.dtype == torch.get_default_dtype()
    preds, rows = ref_nw(x, y, q, kernel, 2.0)
    torch.testing.assert_close(y_hat, torch.tensor(preds))
    torch.testing.assert_close(weights, torch.tensor(rows))


def test_nadaraya_watson_gradients():
    x = torch.tensor([0.0, 1.0, 3.0], dtype=torch.float64)
    y = torch.tensor([1.0, -1.0, 2.0], dtype=torch.float64, requires_grad=True)
    q = torch.tensor([0.5, 2.0], dtype=torch.float64, requires_grad=True)
    y_hat, _ = nadaraya_watson(x, y, q, width=0.8)
    y_hat.sum().backward()
    _, rows = ref_nw(x, y.detach(), q.detach(), "gaussian", 0.8)
    # d sum(y_hat) / d y_j is the total weight that key j receives.
    expected = [sum(row[j] for row in rows) for j in range(3)]
    torch.testing.assert_close(y.grad, torch.tensor(expected, dtype=torch.float64))
    # d y_hat(q) / d q by central differences of the reference.
    h = 1e-6
    fd = []
    for i in range(2):
        up, down = q.detach().clone(), q.detach().clone()
        up[i] += h
        down[i] -= h
        plus, _ = ref_nw(x, y.detach(), up, "gaussian", 0.8)
        minus, _ = ref_nw(x, y.detach(), down, "gaussian", 0.8)
        fd.append((plus[i] - minus[i]) / (2 * h))
    torch.testing.assert_close(q.grad, torch.tensor(fd, dtype=torch.float64), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kernel", KERNEL_NAMES)
def test_nadaraya_watson_device(kernel, device):
    x = torch.tensor([0.0, 1.0, 2.5], device=device)
    y = torch.tensor([1.0, 2.0, 0.0], device=device)
    q = torch.tensor([0.4, 3.0], device=device)
    y_hat, weights = nadaraya_watson(x, y, q, kernel=kernel, width=0.8)
    assert y_hat.device == weights.device == x.device
    preds, rows = ref_nw(x.cpu(), y.cpu(), q.cpu(), kernel, 0.8)
    torch.testing.assert_close(y_hat.cpu(), torch.tensor(preds))
    torch.testing.assert_close(weights.cpu(), torch.tensor(rows))


# ---------------------------------------------------------------- nadaraya_watson: properties


@pytest.mark.parametrize("kernel", KERNEL_NAMES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@given(sets=regression_sets(dtype=torch.float64), width=log_widths)
def test_weights_rows_sum_to_one_for_every_width(kernel, dtype, sets, width):
    x_train, y_train, x_query = (t.to(dtype) for t in sets)
    y_hat, weights = nadaraya_watson(x_train, y_train, x_query, kernel=kernel, width=width)
    assert torch.isfinite(weights).all() and torch.isfinite(y_hat).all()
    assert torch.all(weights >= 0)
    torch.testing.assert_close(weights.sum(dim=1), torch.ones(len(x_query), dtype=dtype))
    # Predictions are convex combinations of the targets.
    assert torch.all(y_hat >= y_train.min() - 1e-5) and torch.all(y_hat <= y_train.max() + 1e-5)


@pytest.mark.parametrize("kernel", KERNEL_NAMES)
@given(sets=regression_sets(), width=st.floats(0.01, 100), data=st.data())
def test_permuting_keys_and_values_together(kernel, sets, width, data):
    x_train, y_train, x_query = sets
    perm = torch.tensor(data.draw(st.permutations(range(len(x_train)))))
    y_hat, weights = nadaraya_watson(x_train, y_train, x_query, kernel=kernel, width=width)
    y_perm, w_perm = nadaraya_watson(
        x_train[perm], y_train[perm], x_query, kernel=kernel, width=width
    )
    torch.testing.assert_close(y_perm, y_hat)
    torch.testing.assert_close(w_perm, weights[:, perm])


@pytest.mark.parametrize(
    ("kernel", "tolerance"),
    [
        ("gaussian", 1e-4),
        ("boxcar", 1e-6),
        ("constant", 1e-6),
        ("triangular", 3e-2),
        ("epanechnikov", 3e-2),
    ],
)
@given(sets=regression_sets(min_train=1))
def test_wide_kernel_is_average_pooling(kernel, tolerance, sets):
    x_train, y_train, x_query = sets
    y_hat, weights = nadaraya_watson(x_train, y_train, x_query, kernel=kernel, width=1e3)
    mean = y_train.mean()
    torch.testing.assert_close(y_hat, mean.expand(len(x_query)), rtol=0, atol=tolerance)
    uniform = torch.full(weights.shape, 1 / len(x_train), dtype=weights.dtype)
    torch.testing.assert_close(weights, uniform, rtol=0, atol=tolerance)


@given(sets=regression_sets(), width=log_widths)
def test_constant_kernel_is_average_pooling_for_any_width(sets, width):
    x_train, y_train, x_query = sets
    y_hat, _ = nadaraya_watson(x_train, y_train, x_query, kernel="constant", width=width)
    torch.testing.assert_close(y_hat, y_train.mean().expand(len(x_query)))


@st.composite
def separated_sets(draw):
    """Distinct training inputs at least 0.1 apart; each query within 0.04 of one of them."""
    n_train = draw(st.integers(1, 10))
    grid = draw(st.lists(st.integers(0, 50), min_size=n_train, max_size=n_train, unique=True))
    x_train = torch.tensor(grid, dtype=torch.float64) / 10
    y_train = torch.tensor(
        draw(st.lists(st.floats(-5, 5), min_size=n_train, max_size=n_train)), dtype=torch.float64
    )
    picks = draw(st.lists(st.integers(0, n_train - 1), min_size=1, max_size=6))
    offsets = draw(st.lists(st.floats(-0.04, 0.04), min_size=len(picks), max_size=len(picks)))
    x_query = torch.tensor([grid[i] / 10 + o for i, o in zip(picks, offsets)], dtype=torch.float64)
    return x_train, y_train, x_query, picks


@pytest.mark.parametrize("kernel", ["gaussian", *COMPACT])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@given(separated_sets())
def test_narrow_kernel_is_nearest_neighbour(kernel, dtype, sets):
    x_train, y_train, x_query, picks = (t.to(dtype) if torch.is_tensor(t) else t for t in sets)
    y_hat, weights = nadaraya_watson(x_train, y_train, x_query, kernel=kernel, width=1e-3)
    torch.testing.assert_close(y_hat, y_train[picks])
    one_hot = torch.zeros(len(picks), len(x_train), dtype=dtype)
    one_hot[range(len(picks)), picks] = 1
    torch.testing.assert_close(weights, one_hot)


@pytest.mark.parametrize("kernel", ["gaussian", *COMPACT])
def test_narrow_kernel_splits_ties_between_nearest_keys(kernel):
    x = torch.tensor([0.0, 1.0, 2.0, 3.0])
    y = torch.tensor([4.0, 8.0, 0.0, 7.0])
    y_hat, weights = nadaraya_watson(x, y, torch.tensor([0.5]), kernel=kernel, width=1e-3)
    torch.testing.assert_close(weights, torch.tensor([[0.5, 0.5, 0.0, 0.0]]))
    torch.testing.assert_close(y_hat, torch.tensor([6.0]))


# ---------------------------------------------------------------- nadaraya_watson: bad input

X3, Y3, Q2 = torch.tensor([0.0, 1.0, 2.0]), torch.tensor([1.0, 2.0, 3.0]), torch.tensor([0.5, 1.5])


@pytest.mark.parametrize(
    ("width", "error", "pattern"),
    [
        (0, ValueError, r"width must be a finite number > 0, got 0\.0"),
        (0.0, ValueError, r"width.*got 0\.0"),
        (-1.5, ValueError, r"width.*-1\.5"),
        (float("inf"), ValueError, r"width.*inf"),
        (float("-inf"), ValueError, r"width.*-inf"),
        (float("nan"), ValueError, r"width.*nan"),
        (torch.tensor(-2.0), ValueError, r"width.*-2\.0"),
        (True, TypeError, r"width must be a real number, got True"),
        ("1.0", TypeError, r"width must be a real number, got '1\.0'"),
        (None, TypeError, r"width.*None"),
        (torch.tensor([1.0]), TypeError, r"width.*shape \(1,\)"),
        (1 + 2j, TypeError, r"width.*\(1\+2j\)"),
    ],
)
def test_nadaraya_watson_bad_width(width, error, pattern):
    with pytest.raises(error, match=pattern):
        nadaraya_watson(X3, Y3, Q2, width=width)


@pytest.mark.parametrize(
    ("kernel", "error", "pattern"),
    [
        ("triangle", ValueError, r"kernel must be one of .*'triangle'"),
        ("Gaussian", ValueError, r"kernel.*'Gaussian'"),
        ("", ValueError, r"kernel.*''"),
        (3, TypeError, r"kernel must be one of .*got 3"),
        (None, TypeError, r"kernel.*None"),
        (lambda u: u[:, :1], ValueError, r"kernel must return a tensor of the same shape"),
        (lambda u: 1.0, ValueError, r"kernel must return a tensor.*1\.0"),
        (lambda u: -u.abs(), ValueError, r"kernel '<lambda>' must return finite, nonnegative"),
        (lambda u: u.abs() / 0, ValueError, r"kernel.*finite"),
    ],
)
def test_nadaraya_watson_bad_kernel(kernel, error, pattern):
    with pytest.raises(error, match=pattern):
        nadaraya_watson(X3, Y3, Q2, kernel=kernel)


@pytest.mark.parametrize(
    ("x", "y", "q", "error", "pattern"),
    [
        (X3, Y3[:2], Q2, ValueError, r"x_train and y_train must have the same length, got 3 and 2"),
        (X3[:1], Y3, Q2, ValueError, r"x_train and y_train.*1 and 3"),
        (X3[:0], Y3[:0], Q2, ValueError, r"x_train must hold at least one.*0"),
        ([0.0, 1.0, 2.0], Y3, Q2, TypeError, r"x_train must be a torch\.Tensor"),
        (X3, (1.0, 2.0, 3.0), Q2, TypeError, r"y_train must be a torch\.Tensor"),
        (X3, Y3, 0.5, TypeError, r"x_query must be a torch\.Tensor.*0\.5"),
        (X3[None], Y3, Q2, ValueError, r"x_train must be 1-D.*\(1, 3\)"),
        (X3, Y3[:, None], Q2, ValueError, r"y_train must be 1-D.*\(3, 1\)"),
        (X3, Y3, torch.tensor(0.5), ValueError, r"x_query must be 1-D.*\(\)"),
        (X3, Y3, Q2[:, None], ValueError, r"x_query must be 1-D.*\(2, 1\)"),
        (X3 > 0, Y3, Q2, TypeError, r"x_train must hold real numbers.*bool"),
        (X3, Y3.to(torch.complex64), Q2, TypeError, r"y_train.*complex64"),
    ],
)
def test_nadaraya_watson_bad_data(x, y, q, error, pattern):
    with pytest.raises(error, match=pattern):
        nadaraya_watson(x, y, q)


# ---------------------------------------------------------------- loo_cv_error


@pytest.mark.parametrize("kernel", KERNEL_NAMES)
@given(
    sets=regression_sets(min_train=2, max_train=9),
    widths=st.lists(st.floats(0.05, 20), min_size=1, max_size=3),
)
@settings(max_examples=20)
def test_loo_cv_error_matches_dropping_each_point(kernel, sets, widths):
    """The brute-force loop from the book: drop point i, fit on the rest, predict x_i."""
    x, y, _ = sets
    before = clones(x, y)
    got = loo_cv_error(x, y, widths, kernel=kernel)
    expected = []
    for width in widths:
        errors = []
        for i in range(len(x)):
            rest = [j for j in range(len(x)) if j != i]
            pred, _ = nadaraya_watson(x[rest], y[rest], x[i : i + 1], kernel=kernel, width=width)
            errors.append(float((pred[0] - y[i]) ** 2))
        expected.append(sum(errors) / len(errors))
    assert got.shape == (len(widths),) and got.dtype == torch.float64
    torch.testing.assert_close(got, torch.tensor(expected, dtype=torch.float64))
    assert_unchanged(before, [x, y])


@pytest.mark.parametrize("kernel", KERNEL_NAMES)
def test_loo_cv_error_matches_python_reference(kernel):
    data = make_regression_data(n_train=15, seed=4)
    widths = [0.05, 0.3, 1.0, 4.0]
    got = loo_cv_error(data.x_train, data.y_train, widths, kernel=kernel)
    expected = [ref_loo(data.x_train, data.y_train, w, kernel) for w in widths]
    assert got.dtype == torch.float32
    torch.testing.assert_close(got, torch.tensor(expected), rtol=1e-5, atol=1e-5)


@given(sets=regression_sets(min_train=2), width=log_widths)
@settings(max_examples=20)
def test_loo_cv_error_is_finite_for_extreme_widths(sets, width):
    x, y, _ = sets
    for kernel in KERNEL_NAMES:
        assert torch.isfinite(loo_cv_error(x, y, [width], kernel=kernel)).all()


def test_loo_cv_error_never_uses_the_held_out_point():
    # Two far-apart clusters with a lonely middle point: leaving it out, it is
    # predicted from its neighbours only, never from its own target.
    x = torch.tensor([0.0, 5.0, 10.0], dtype=torch.float64)
    y = torch.tensor([0.0, 100.0, 0.0], dtype=torch.float64)
    got = loo_cv_error(x, y, [1e-3, 1.0])
    # Narrow: 0 -> nearest is 5 (100), 5 -> tie 0 and 10 (0), 10 -> 5 (100).
    torch.testing.assert_close(got[0], torch.tensor((100**2 + 100**2 + 100**2) / 3).double())


@pytest.mark.parametrize(
    "widths", [[0.5, 2.0], (0.5, 2.0), torch.tensor([0.5, 2.0]), torch.tensor([0.5, 2.0]).double()]
)
def test_loo_cv_error_accepts_width_sequences(widths):
    data = make_regression_data(n_train=10, seed=1)
    got = loo_cv_error(data.x_train, data.y_train, widths)
    expected = [ref_loo(data.x_train, data.y_train, w) for w in (0.5, 2.0)]
    torch.testing.assert_close(got, torch.tensor(expected), rtol=1e-5, atol=1e-5)


def test_loo_cv_error_scalar_tensor_width():
    data = make_regression_data(n_train=10, seed=1)
    got = loo_cv_error(data.x_train, data.y_train, torch.tensor(0.5))
    assert got.shape == (1,)
    torch.testing.assert_close(got[0], torch.tensor(ref_loo(data.x_train, data.y_train, 0.5)))


def test_loo_cv_error_device(device):
    x = torch.tensor([0.0, 1.0, 2.5, 4.0], device=device)
    y = torch.tensor([1.0, 2.0, 0.0, 3.0], device=device)
    for kernel in KERNEL_NAMES:
        got = loo_cv_error(x, y, [0.3, 2.0], kernel=kernel)
        assert got.device == x.device
        expected = [ref_loo(x.cpu(), y.cpu(), w, kernel) for w in (0.3, 2.0)]
        torch.testing.assert_close(got.cpu(), torch.tensor(expected))


@pytest.mark.parametrize(
    ("x", "y", "widths", "kwargs", "error", "pattern"),
    [
        (X3[:1], Y3[:1], [1.0], {}, ValueError, r"leave-one-out needs at least 2.*got 1"),
        (X3, Y3[:2], [1.0], {}, ValueError, r"x_train and y_train.*3 and 2"),
        (X3, Y3, [], {}, ValueError, r"widths must hold at least one"),
        (X3, Y3, torch.zeros(0), {}, ValueError, r"widths must hold at least one"),
        (X3, Y3, [1.0, 0.0], {}, ValueError, r"widths\[1\] must be a finite number > 0, got 0\.0"),
        (X3, Y3, [-2.0], {}, ValueError, r"widths\[0\].*-2\.0"),
        (X3, Y3, [1.0, float("nan")], {}, ValueError, r"widths\[1\].*nan"),
        (X3, Y3, [float("inf")], {}, ValueError, r"widths\[0\].*inf"),
        (X3, Y3, [True], {}, TypeError, r"widths\[0\] must be a real number, got True"),
        (X3, Y3, ["1"], {}, TypeError, r"widths\[0\].*'1'"),
        (X3, Y3, 1.0, {}, TypeError, r"widths must be a sequence of numbers, got 1\.0"),
        (X3, Y3, "1.0", {}, TypeError, r"widths must be a sequence.*'1\.0'"),
        (X3, Y3, torch.ones(2, 2), {}, ValueError, r"widths must be 0-D or 1-D.*\(2, 2\)"),
        (X3, Y3, [1.0], {"kernel": "box"}, ValueError, r"kernel.*'box'"),
        ([0.0, 1.0], Y3[:2], [1.0], {}, TypeError, r"x_train must be a torch\.Tensor"),
    ],
)
def test_loo_cv_error_bad_input(x, y, widths, kwargs, error, pattern):
    with pytest.raises(error, match=pattern):
        loo_cv_error(x, y, widths, **kwargs)


# ---------------------------------------------------------------- leave_one_out


@given(n=st.integers(1, 12), seed=st.integers(0, 1000))
def test_leave_one_out_matches_loop(n, seed):
    x = torch.randn(n, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    before = clones(x)
    got = leave_one_out(x)
    expected = [[float(x[j]) for j in range(n) if j != i] for i in range(n)]
    assert got.shape == (n, n - 1) and got.dtype == torch.float64
    assert got.tolist() == expected
    assert_unchanged(before, [x])


def test_leave_one_out_example_and_integer_dtype():
    got = leave_one_out(torch.tensor([1, 2, 3]))
    assert got.dtype == torch.int64
    assert got.tolist() == [[2, 3], [1, 3], [1, 2]]


def test_leave_one_out_is_a_copy():
    x = torch.tensor([1.0, 2.0, 3.0])
    got = leave_one_out(x)
    got[0, 0] = 9.0
    assert x.tolist() == [1.0, 2.0, 3.0]


def test_leave_one_out_gradient():
    x = torch.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    leave_one_out(x).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0, 3.0, 3.0]  # each entry appears in n - 1 rows


def test_leave_one_out_device(device):
    got = leave_one_out(torch.tensor([1.0, 2.0, 3.0], device=device))
    assert got.device.type == device and got.cpu().tolist() == [[2, 3], [1, 3], [1, 2]]


# ---------------------------------------------------------------- NWKernelRegression


def test_nw_model_parameter():
    torch.manual_seed(0)
    model = NWKernelRegression()
    params = dict(model.named_parameters())
    assert list(params) == ["w"]
    assert model.w.shape == (1,) and model.w.requires_grad
    assert 0 <= model.w.item() < 1
    assert model.attention_weights is None


def test_nw_model_init_follows_the_global_seed():
    torch.manual_seed(42)
    a = NWKernelRegression().w.item()
    torch.manual_seed(42)
    b = NWKernelRegression().w.item()
    c = NWKernelRegression().w.item()
    assert a == b and b != c


@given(
    w=st.floats(0.05, 5) | st.floats(-5, -0.05),
    n=st.integers(1, 6),
    m=st.integers(1, 6),
    seed=st.integers(0, 1000),
)
@settings(max_examples=30)
def test_nw_model_forward_matches_loop_with_per_query_keys(w, n, m, seed):
    g = torch.Generator().manual_seed(seed)
    queries = torch.rand(n, generator=g) * 5
    keys = torch.rand(n, m, generator=g) * 5
    values = torch.randn(n, m, generator=g)
    model = NWKernelRegression()
    with torch.no_grad():
        model.w.fill_(w)
    before = clones(queries, keys, values)
    got = model(queries, keys, values)
    preds, rows = ref_nw_model(w, queries, keys, values)
    assert got.shape == (n,)
    torch.testing.assert_close(got, torch.tensor(preds), rtol=1e-4, atol=1e-5)
    assert model.attention_weights.shape == (n, m)
    assert not model.attention_weights.requires_grad
    torch.testing.assert_close(model.attention_weights, torch.tensor(rows), rtol=1e-4, atol=1e-6)
    assert_unchanged(before, [queries, keys, values])


def test_nw_model_shared_keys_equal_expanded_keys():
    g = torch.Generator().manual_seed(5)
    queries, keys, values = torch.rand(4, generator=g), torch.rand(7, generator=g), torch.randn(7)
    model = NWKernelRegression()
    shared = model(queries, keys, values)
    expanded = model(queries, keys.expand(4, 7), values.expand(4, 7))
    torch.testing.assert_close(shared, expanded)
    preds, _ = ref_nw_model(model.w.item(), queries, [keys] * 4, [values] * 4)
    torch.testing.assert_close(shared, torch.tensor(preds), rtol=1e-4, atol=1e-5)


def test_nw_model_is_gaussian_nadaraya_watson_with_width_one_over_w():
    data = make_regression_data(n_train=12, seed=2)
    model = NWKernelRegression()
    with torch.no_grad():
        model.w.fill_(2.5)
    got = model(data.x_query, data.x_train, data.y_train)
    preds, _ = ref_nw(data.x_train, data.y_train, data.x_query, "gaussian", 1 / 2.5)
    torch.testing.assert_close(got.detach(), torch.tensor(preds), rtol=1e-4, atol=1e-5)


def test_nw_model_gradient_matches_finite_differences():
    g = torch.Generator().manual_seed(9)
    queries = torch.rand(5, generator=g, dtype=torch.float64) * 5
    keys = torch.rand(5, 4, generator=g, dtype=torch.float64) * 5
    values = torch.randn(5, 4, generator=g, dtype=torch.float64)
    targets = torch.randn(5, generator=g, dtype=torch.float64)
    model = NWKernelRegression().double()
    with torch.no_grad():
        model.w.fill_(0.7)
    ((model(queries, keys, values) - targets) ** 2).mean().backward()

    def loss(w):
        preds, _ = ref_nw_model(w, queries, keys, values)
        return sum((p - float(t)) ** 2 for p, t in zip(preds, targets)) / 5

    fd = (loss(0.7 + 1e-6) - loss(0.7 - 1e-6)) / 2e-6
    assert math.isclose(float(model.w.grad), fd, rel_tol=1e-5, abs_tol=1e-8)


def test_nw_model_float64_inputs():
    model = NWKernelRegression()
    got = model(torch.zeros(2, dtype=torch.float64), torch.ones(3).double(), torch.ones(3).double())
    assert got.dtype == torch.float64
    torch.testing.assert_close(got, torch.ones(2, dtype=torch.float64))


def test_nw_model_device(device):
    model = NWKernelRegression().to(device)
    q = torch.tensor([0.0, 1.0], device=device)
    got = model(q, torch.tensor([0.0, 2.0], device=device), torch.tensor([1.0, 3.0], device=device))
    assert got.device == q.device
    preds, _ = ref_nw_model(model.w.item(), q.cpu(), [[0.0, 2.0]] * 2, [[1.0, 3.0]] * 2)
    torch.testing.assert_close(got.detach().cpu(), torch.tensor(preds))


@pytest.mark.parametrize(
    ("q", "k", "v", "error", "pattern"),
    [
        ([0.0], torch.ones(2), torch.ones(2), TypeError, r"queries must be a torch\.Tensor"),
        (torch.ones(2), [1.0], torch.ones(2), TypeError, r"keys must be a torch\.Tensor"),
        (torch.ones(2), torch.ones(2), None, TypeError, r"values must be a torch\.Tensor"),
        (torch.ones(2, 1), torch.ones(2), torch.ones(2), ValueError, r"queries must be 1-D"),
        (torch.ones(2), torch.ones(2, 2, 2), torch.ones(2, 2, 2), ValueError, r"keys must be"),
        (
            torch.ones(2),
            torch.ones(3),
            torch.ones(4),
            ValueError,
            r"keys and values.*\(3,\).*\(4,\)",
        ),
        (torch.ones(2), torch.ones(2, 3), torch.ones(3), ValueError, r"keys and values"),
        (
            torch.ones(2),
            torch.ones(3, 4),
            torch.ones(3, 4),
            ValueError,
            r"keys must have one row per query \(2\)",
        ),
        (torch.ones(2) > 0, torch.ones(2), torch.ones(2), TypeError, r"queries.*bool"),
    ],
)
def test_nw_model_bad_input(q, k, v, error, pattern):
    with pytest.raises(error, match=pattern):
        NWKernelRegression()(q, k, v)


# ---------------------------------------------------------------- train_nw


def hooked_model(seed: int = 0):
    """A seeded model that records w at the start of every forward pass."""
    torch.manual_seed(seed)
    model = NWKernelRegression()
    seen: list[float] = []
    model.register_forward_pre_hook(lambda module, args: seen.append(module.w.item()))
    return model, seen


def test_train_nw_losses_decrease_and_w_changes():
    data = make_regression_data()
    model, _ = hooked_model(0)
    w0 = model.w.item()
    before = clones(data.x_train, data.y_train)
    losses = train_nw(model, data.x_train, data.y_train, epochs=5)
    assert len(losses) == 5 and all(isinstance(loss, float) for loss in losses)
    assert all(b < a for a, b in zip(losses, losses[1:]))
    assert model.w.item() != w0
    assert_unchanged(before, [data.x_train, data.y_train])


@given(seed=st.integers(0, 50), data_seed=st.integers(0, 50), epochs=st.integers(1, 4))
@settings(max_examples=10)
def test_train_nw_loss_is_the_loo_cv_error_at_width_one_over_w(seed, data_seed, epochs):
    """The docstring's claim: each loss is the LOO-CV error of a Gaussian of width 1/w."""
    data = make_regression_data(n_train=20, seed=data_seed)
    model, seen = hooked_model(seed)
    losses = train_nw(model, data.x_train, data.y_train, epochs=epochs)
    assert len(seen) == epochs
    for w, loss in zip(seen, losses):
        expected = loo_cv_error(data.x_train, data.y_train, [1 / abs(w)])
        assert math.isclose(loss, float(expected[0]), rel_tol=1e-4, abs_tol=1e-6)
        assert math.isclose(loss, ref_loo(data.x_train, data.y_train, 1 / abs(w)), rel_tol=1e-4)


def test_train_nw_takes_sgd_steps_on_the_loo_objective():
    data = make_regression_data(n_train=15, seed=6)
    model, seen = hooked_model(3)
    with torch.no_grad():
        model.w.fill_(0.8)
    train_nw(model, data.x_train.double(), data.y_train.double(), lr=0.2, epochs=2)

    def objective(w):  # LOO MSE of the Gaussian kernel with width 1 / w
        return ref_loo(data.x_train.double(), data.y_train.double(), 1 / w)

    w0 = seen[0]
    gradient = (objective(w0 + 1e-5) - objective(w0 - 1e-5)) / 2e-5
    assert math.isclose(seen[1], w0 - 0.2 * gradient, rel_tol=1e-4)


def test_train_nw_float64_data():
    data = make_regression_data(n_train=10, seed=2)
    model, _ = hooked_model(1)
    losses = train_nw(model, data.x_train.double(), data.y_train.double(), epochs=3)
    assert len(losses) == 3 and all(math.isfinite(loss) for loss in losses)


def test_train_nw_device(device):
    data = make_regression_data(n_train=10, seed=2)
    model, seen = hooked_model(1)
    model.to(device)
    losses = train_nw(model, data.x_train.to(device), data.y_train.to(device), epochs=2)
    assert model.w.device.type == device
    assert math.isclose(losses[0], ref_loo(data.x_train, data.y_train, 1 / seen[0]), rel_tol=1e-4)


@pytest.mark.parametrize(
    ("model", "x", "y", "kwargs", "error", "pattern"),
    [
        ("model", X3, Y3, {}, TypeError, r"model must be an NWKernelRegression.*'model'"),
        (torch.nn.Linear(1, 1), X3, Y3, {}, TypeError, r"model must be an NWKernelRegression"),
        (None, X3, Y3[:2], {}, ValueError, r"x_train and y_train.*3 and 2"),
        (None, X3[:1], Y3[:1], {}, ValueError, r"at least 2 training examples, got 1"),
        (None, [0.0, 1.0], Y3[:2], {}, TypeError, r"x_train must be a torch\.Tensor"),
        (None, X3, Y3, {"lr": 0}, ValueError, r"lr must be a finite number > 0, got 0\.0"),
        (None, X3, Y3, {"lr": -0.1}, ValueError, r"lr.*-0\.1"),
        (None, X3, Y3, {"lr": float("nan")}, ValueError, r"lr.*nan"),
        (None, X3, Y3, {"lr": "0.5"}, TypeError, r"lr.*'0\.5'"),
        (None, X3, Y3, {"epochs": 0}, ValueError, r"epochs must be >= 1, got 0"),
        (None, X3, Y3, {"epochs": -2}, ValueError, r"epochs.*-2"),
        (None, X3, Y3, {"epochs": 2.0}, TypeError, r"epochs must be an integer.*2\.0"),
        (None, X3, Y3, {"epochs": True}, TypeError, r"epochs.*True"),
    ],
)
def test_train_nw_bad_input(model, x, y, kwargs, error, pattern):
    model = NWKernelRegression() if model is None else model
    with pytest.raises(error, match=pattern):
        train_nw(model, x, y, **kwargs)
