"""Tests of attnbook.kernels: the five distance kernels and KERNELS."""

from __future__ import annotations

import math

import pytest
import torch
from _helpers import assert_unchanged, clones
from hypothesis import given
from hypothesis import strategies as st

from attnbook import kernels
from attnbook.kernels import KERNELS, boxcar, constant, epanechnikov, gaussian, triangular

# Closed forms, one Python float at a time.
REFERENCES = {
    "gaussian": lambda u: math.exp(-u * u / 2),
    "boxcar": lambda u: 1.0 if abs(u) < 1 else 0.0,
    "constant": lambda u: 1.0,
    "triangular": lambda u: max(0.0, 1.0 - abs(u)),
    "epanechnikov": lambda u: 0.75 * (1.0 - u * u) if abs(u) <= 1 else 0.0,
}
# Each kernel's value at u = 0, its largest.
PEAKS = {"gaussian": 1.0, "boxcar": 1.0, "constant": 1.0, "triangular": 1.0, "epanechnikov": 0.75}
FUNCTIONS = {
    "gaussian": gaussian,
    "boxcar": boxcar,
    "constant": constant,
    "triangular": triangular,
    "epanechnikov": epanechnikov,
}
NAMES = sorted(REFERENCES)

distances = st.lists(st.floats(-50, 50, allow_subnormal=False), min_size=0, max_size=24)
shapes = st.sampled_from([None, (-1,), (1, -1), (-1, 1)])


def reference(name: str, u: torch.Tensor) -> torch.Tensor:
    values = [REFERENCES[name](float(v)) for v in u.flatten()]
    return torch.tensor(values, dtype=torch.float64).reshape(u.shape)


@pytest.mark.parametrize("name", NAMES)
@given(values=distances, shape=shapes)
def test_kernel_matches_closed_form(name, values, shape):
    u = torch.tensor(values, dtype=torch.float64)
    if shape is not None:
        u = u.reshape(shape)
    before = clones(u)
    got = FUNCTIONS[name](u)
    assert got.shape == u.shape
    assert got.dtype == torch.float64
    torch.testing.assert_close(got, reference(name, u), rtol=1e-12, atol=1e-300)
    assert_unchanged(before, [u])


@pytest.mark.parametrize("name", NAMES)
def test_kernel_on_scalar_and_float32(name):
    u = torch.tensor(0.5)
    got = FUNCTIONS[name](u)
    assert got.shape == () and got.dtype == torch.float32
    assert math.isclose(float(got), REFERENCES[name](0.5), rel_tol=1e-6)


@pytest.mark.parametrize("name", NAMES)
def test_kernel_promotes_integers_to_default_float(name):
    u = torch.tensor([-2, -1, 0, 1, 2])
    got = FUNCTIONS[name](u)
    assert got.dtype == torch.get_default_dtype()
    torch.testing.assert_close(got, reference(name, u).float())


@pytest.mark.parametrize("name", NAMES)
@given(values=distances)
def test_kernel_properties(name, values):
    """Nonnegative, symmetric, largest at 0 (1, or 3/4 for Epanechnikov), nonincreasing in |u|."""
    u = torch.tensor(values, dtype=torch.float64)
    k = FUNCTIONS[name](u)
    assert torch.all(k >= 0) and torch.all(k <= PEAKS[name])
    torch.testing.assert_close(FUNCTIONS[name](-u), k, rtol=0, atol=0)
    assert float(FUNCTIONS[name](torch.zeros(()))) == PEAKS[name]
    order = torch.argsort(u.abs())
    assert torch.all(k[order][1:] <= k[order][:-1])


@pytest.mark.parametrize("name", ["boxcar", "triangular", "epanechnikov"])
@given(u=st.floats(1, 1e6) | st.floats(-1e6, -1))
def test_compact_kernels_vanish_outside_the_window(name, u):
    assert float(FUNCTIONS[name](torch.tensor([u], dtype=torch.float64))) == 0.0


@given(u=st.floats(-30, 30))
def test_gaussian_is_positive_where_it_does_not_underflow(u):
    assert float(gaussian(torch.tensor([u], dtype=torch.float64))) > 0


def test_boxcar_edge_is_excluded():
    got = boxcar(torch.tensor([-1.0, -0.999, 0.999, 1.0]))
    assert got.tolist() == [0.0, 1.0, 1.0, 0.0]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
@pytest.mark.parametrize("name", NAMES)
def test_kernel_keeps_floating_dtype(name, dtype):
    u = torch.linspace(-2, 2, 9, dtype=dtype)
    got = FUNCTIONS[name](u)
    assert got.dtype == dtype
    torch.testing.assert_close(got.double(), reference(name, u), atol=1e-2, rtol=1e-2)


def test_gaussian_gradient_is_closed_form():
    u = torch.linspace(-3, 3, 13, dtype=torch.float64, requires_grad=True)
    gaussian(u).sum().backward()
    expected = [-float(v) * math.exp(-(float(v) ** 2) / 2) for v in u.detach()]
    torch.testing.assert_close(u.grad, torch.tensor(expected, dtype=torch.float64))


def test_triangular_gradient_is_closed_form():
    u = torch.tensor([-2.0, -0.5, 0.25, 0.75, 3.0], dtype=torch.float64, requires_grad=True)
    triangular(u).sum().backward()
    assert u.grad.tolist() == [0.0, 1.0, -1.0, -1.0, 0.0]


def test_epanechnikov_gradient_is_closed_form():
    # d/du (3/4)(1 - u^2) = -(3/2) u inside the window, 0 outside.
    u = torch.tensor([-2.0, -0.5, 0.25, 0.75, 3.0], dtype=torch.float64, requires_grad=True)
    epanechnikov(u).sum().backward()
    assert u.grad.tolist() == [0.0, 0.75, -0.375, -1.125, 0.0]


def test_epanechnikov_and_triangular_differ():
    """The two compact kernels are different functions (some texts confuse the names)."""
    u = torch.tensor([0.0, 0.5, 0.9])
    assert epanechnikov(u).tolist() == [0.75, 0.5625, pytest.approx(0.1425)]
    assert triangular(u).tolist() == [1.0, 0.5, pytest.approx(0.1)]


@pytest.mark.parametrize(
    ("name", "area"),
    [("epanechnikov", 1.0), ("triangular", 1.0), ("gaussian", math.sqrt(2 * math.pi))],
)
def test_kernel_integrates_to_closed_form(name, area):
    """Epanechnikov and triangular are densities (area 1); the Gaussian's area is sqrt(2 pi).

    Simpson's rule on a grid with knots at -1, 0 and 1 is exact for the piecewise
    quadratic Epanechnikov and piecewise linear triangular kernels.
    """
    u = torch.linspace(-8, 8, 16 * 1000 + 1, dtype=torch.float64)  # spacing 1e-3, knots on it
    k = FUNCTIONS[name](u)
    h = float(u[1] - u[0])
    simpson = h / 3 * (k[0] + k[-1] + 4 * k[1:-1:2].sum() + 2 * k[2:-1:2].sum())
    assert math.isclose(float(simpson), area, rel_tol=1e-9), (name, float(simpson))


@pytest.mark.parametrize("name", NAMES)
def test_kernel_device(name, device):
    u = torch.tensor([-1.5, -0.5, 0.0, 0.5], device=device)
    got = FUNCTIONS[name](u)
    assert got.device == u.device
    torch.testing.assert_close(got.cpu().double(), reference(name, u.cpu()))


def test_kernels_registry():
    assert set(KERNELS) == {"gaussian", "boxcar", "constant", "triangular", "epanechnikov"}
    for name, fn in KERNELS.items():
        assert fn is FUNCTIONS[name]
        assert getattr(kernels, name) is fn


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(
    ("u", "error", "pattern"),
    [
        ([0.5, 1.0], TypeError, r"u must be a torch\.Tensor.*\[0\.5, 1\.0\]"),
        (0.5, TypeError, r"u must be a torch\.Tensor.*0\.5"),
        (None, TypeError, r"u must be a torch\.Tensor.*None"),
        (torch.tensor([True, False]), TypeError, r"u must hold real numbers.*bool"),
        (torch.tensor([1 + 1j]), TypeError, r"u must hold real numbers.*complex"),
    ],
)
def test_kernel_bad_input(name, u, error, pattern):
    with pytest.raises(error, match=pattern):
        FUNCTIONS[name](u)
