"""Tests of attnbook.rope and attnbook.alibi against independent references."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from attnbook.alibi import alibi_bias, alibi_slopes
from attnbook.rope import apply_rope, rope_angles, rope_frequencies, rope_score

# ---------------------------------------------------------------- references


def complex_rope(x: torch.Tensor, positions: torch.Tensor, base: float = 10000.0) -> torch.Tensor:
    """RoPE as complex multiplication: pair i is the number x[2i] + 1j * x[2i + 1],
    multiplied by exp(1j * m * base^(-2i/d)); angles built one at a time in Python."""
    d = x.shape[-1]
    angles = torch.tensor(
        [[float(m) * base ** (-2 * i / d) for i in range(d // 2)] for m in positions.tolist()],
        dtype=torch.float64,
    )  # (n, d/2)
    turn = torch.polar(torch.ones_like(angles), angles)  # (n, d/2) complex128
    z = torch.view_as_complex(x.to(torch.float64).reshape(*x.shape[:-1], d // 2, 2).contiguous())
    return torch.view_as_real(z * turn).reshape(x.shape)


def reference_slopes(n: int) -> list[float]:
    """ALiBi's slopes as the authors' reference code builds them (recursively)."""

    def power_of_2(count: int) -> list[float]:
        start = 2 ** (-(2 ** -(math.log2(count) - 3)))
        return [start * start**i for i in range(count)]

    if math.log2(n).is_integer():
        return power_of_2(n)
    closest = 2 ** math.floor(math.log2(n))
    return power_of_2(closest) + reference_slopes(2 * closest)[0::2][: n - closest]


# ---------------------------------------------------------------- RoPE


@pytest.mark.parametrize("shape", [(5, 2), (7, 8), (3, 4, 16), (2, 3, 6, 64)])
def test_apply_rope_matches_complex_reference(shape):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(*shape, dtype=torch.float64, generator=g)
    positions = torch.randint(0, 500, (shape[-2],), generator=g)
    torch.testing.assert_close(apply_rope(x, positions), complex_rope(x, positions))


def test_apply_rope_other_base_and_float32():
    g = torch.Generator().manual_seed(1)
    x = torch.randn(4, 10, 32, generator=g)
    positions = torch.arange(10) * 7
    got = apply_rope(x, positions, base=500.0)
    assert got.dtype == torch.float32
    want = complex_rope(x, positions, base=500.0).float()
    torch.testing.assert_close(got, want, atol=2e-6, rtol=1e-5)


def test_apply_rope_low_precision_keeps_dtype():
    x = torch.randn(3, 8).to(torch.bfloat16)
    positions = torch.tensor([0, 5, 90])
    got = apply_rope(x, positions)
    assert got.dtype == torch.bfloat16
    want = complex_rope(x.float(), positions).to(torch.bfloat16)
    torch.testing.assert_close(got, want, atol=2e-2, rtol=2e-2)


def test_fractional_positions():
    g = torch.Generator().manual_seed(2)
    x = torch.randn(2, 6, 16, dtype=torch.float64, generator=g)
    positions = torch.tensor([0.0, 0.25, 1.5, 7.75, 31.0, 100.125], dtype=torch.float64)
    torch.testing.assert_close(apply_rope(x, positions), complex_rope(x, positions))
    # Half a position twice is one position; real integers equal integer positions.
    half = torch.full((6,), 0.5)
    torch.testing.assert_close(
        apply_rope(apply_rope(x, half), half), apply_rope(x, torch.ones(6, dtype=torch.long))
    )
    torch.testing.assert_close(
        apply_rope(x, torch.arange(6.0)), apply_rope(x, torch.arange(6)), rtol=0, atol=0
    )


def test_angle_dtype_float32_loses_precision_far_out():
    # The same rotation with angles in float32: fine near 0, worse far out,
    # as float32 rounds m * theta_0 to a few 1e-4 rad near m = 8000.
    g = torch.Generator().manual_seed(3)
    x = torch.randn(4, 32, dtype=torch.float64, generator=g)
    near, far = torch.arange(4), torch.arange(8000, 8004)
    for positions, low, high in ((near, 0, 1e-6), (far, 1e-5, 1e-2)):
        exact = apply_rope(x, positions)
        err = (apply_rope(x, positions, angle_dtype=torch.float32) - exact).abs().max()
        assert low <= err < high, (positions, err)
    angles = rope_angles(far, 32, angle_dtype=torch.bfloat16)
    assert angles.dtype == torch.bfloat16
    assert (angles.double() - rope_angles(far, 32)).abs().max() > 1


def test_position_zero_is_identity_and_norms_are_kept():
    x = torch.randn(6, 12, dtype=torch.float64)
    torch.testing.assert_close(apply_rope(x, torch.zeros(6, dtype=torch.long)), x)
    turned = apply_rope(x, torch.arange(6) * 13)
    torch.testing.assert_close(turned.norm(dim=-1), x.norm(dim=-1))


def test_apply_rope_does_not_modify_input():
    x = torch.randn(2, 4, 8)
    before = x.clone()
    apply_rope(x, torch.arange(4))
    assert torch.equal(x, before)


@given(
    m=st.integers(0, 3000),
    n=st.integers(0, 3000),
    offset=st.integers(0, 3000),
    d=st.sampled_from([2, 8, 64]),
)
def test_scores_depend_only_on_the_offset(m, n, offset, d):
    g = torch.Generator().manual_seed(m + 7 * n + d)
    q = torch.randn(d, dtype=torch.float64, generator=g)
    k = torch.randn(d, dtype=torch.float64, generator=g)
    a = rope_score(q, k, m, n)
    b = rope_score(q, k, m + offset, n + offset)
    assert abs(float(a - b)) < 1e-10 * (1 + float(q.norm() * k.norm()))


def test_score_is_the_closed_form():
    # R(m t)q . R(n t)k = q . R((n - m) t)k, summed pair by pair: (q_a k_a + q_b k_b) cos
    # plus (q_b k_a - q_a k_b) sin of the angle (n - m) theta_i.
    q = torch.tensor([1.0, 2.0, -0.5, 0.25], dtype=torch.float64)
    k = torch.tensor([0.3, -1.0, 2.0, 1.5], dtype=torch.float64)
    m, n = 9, 4
    want = 0.0
    for i in range(2):
        t = (n - m) * 10000 ** (-2 * i / 4)
        qa, qb, ka, kb = q[2 * i], q[2 * i + 1], k[2 * i], k[2 * i + 1]
        want += float((qa * ka + qb * kb) * math.cos(t) + (qb * ka - qa * kb) * math.sin(t))
    assert float(rope_score(q, k, m, n)) == pytest.approx(want, abs=1e-12)


def test_frequencies():
    torch.testing.assert_close(
        rope_frequencies(6, base=100.0),
        torch.tensor([1.0, 100 ** (-1 / 3), 100 ** (-2 / 3)], dtype=torch.float64),
    )


@pytest.mark.parametrize(
    ("x", "positions", "kwargs", "error", "match"),
    [
        (
            torch.randn(3, 5),
            torch.arange(3),
            {},
            ValueError,
            "head size must be even.*5|got head size 5",
        ),
        (
            torch.randn(3, 4),
            torch.tensor([0, -2, 1]),
            {},
            ValueError,
            "positions must be >= 0, got -2",
        ),
        (
            torch.randn(3, 4),
            torch.tensor([True, False, True]),
            {},
            TypeError,
            "positions must hold integers or real numbers.*bool",
        ),
        (
            torch.randn(3, 4),
            torch.tensor([0.0, float("nan"), 2.0]),
            {},
            ValueError,
            "positions must be finite, got nan",
        ),
        (
            torch.randn(3, 4),
            torch.tensor([0.0, float("inf"), 2.0]),
            {},
            ValueError,
            "positions must be finite, got inf",
        ),
        (
            torch.randn(3, 4),
            torch.tensor([0.0, -0.5, 2.0]),
            {},
            ValueError,
            "positions must be >= 0, got -0.5",
        ),
        (
            torch.randn(3, 4),
            torch.arange(3),
            {"angle_dtype": torch.int64},
            TypeError,
            "angle_dtype must be a floating-point torch.dtype, got torch.int64",
        ),
        (
            torch.randn(3, 4),
            [0, 1, 2],
            {},
            TypeError,
            "positions must be a 1-D torch.Tensor",
        ),
        (
            torch.randn(3, 4),
            torch.arange(4),
            {},
            ValueError,
            r"one entry per row of x \(3\), got 4",
        ),
        (
            torch.randn(3, 4),
            torch.zeros(3, 1, dtype=torch.long),
            {},
            ValueError,
            r"positions must be 1-D",
        ),
        (
            torch.arange(12).reshape(3, 4),
            torch.arange(3),
            {},
            TypeError,
            "x must have a floating-point dtype",
        ),
        (torch.randn(4), torch.arange(4), {}, ValueError, "x must be .* at least 2 axes"),
        (
            torch.randn(3, 4),
            torch.arange(3),
            {"base": 1.0},
            ValueError,
            "base must be a finite number > 1, got 1.0",
        ),
        (
            torch.randn(3, 4),
            torch.arange(3),
            {"base": "big"},
            TypeError,
            "base must be a real number",
        ),
    ],
)
def test_apply_rope_bad_input(x, positions, kwargs, error, match):
    with pytest.raises(error, match=match):
        apply_rope(x, positions, **kwargs)


# ---------------------------------------------------------------- ALiBi


def test_slopes_for_eight_heads_are_the_papers():
    # Press, Smith & Lewis (2022), section 3: 1/2^1, 1/2^2, ..., 1/2^8 for 8 heads.
    torch.testing.assert_close(
        alibi_slopes(8, dtype=torch.float64),
        torch.tensor([2.0**-k for k in range(1, 9)], dtype=torch.float64),
    )


@pytest.mark.parametrize("h", [1, 2, 3, 4, 5, 6, 7, 12, 16, 20, 24, 40])
def test_slopes_match_the_reference_code(h):
    got = alibi_slopes(h, dtype=torch.float64)
    torch.testing.assert_close(got, torch.tensor(reference_slopes(h), dtype=torch.float64))


def test_bias_is_minus_slope_times_distance():
    h, n = 3, 6
    slopes = reference_slopes(h)
    want = torch.zeros(h, n, n, dtype=torch.float64)
    for head in range(h):
        for i in range(n):
            for j in range(n):
                want[head, i, j] = -slopes[head] * abs(i - j)
    got = alibi_bias(n, h, dtype=torch.float64)
    torch.testing.assert_close(got, want)
    assert alibi_bias(n, h).dtype == torch.float32
    assert not torch.signbit(got.diagonal(dim1=-2, dim2=-1)).any()  # 0.0, not -0.0


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: alibi_slopes(0), ValueError, "num_heads must be >= 1, got 0"),
        (lambda: alibi_slopes(-3), ValueError, "num_heads must be >= 1, got -3"),
        (lambda: alibi_slopes(2.5), TypeError, "num_heads must be an integer, got 2.5"),
        (lambda: alibi_slopes(True), TypeError, "num_heads must be an integer, got True"),
        (lambda: alibi_slopes(4, dtype=torch.int64), TypeError, "dtype must be a floating-point"),
        (lambda: alibi_bias(0, 4), ValueError, "num_positions must be >= 1, got 0"),
        (lambda: alibi_bias(5, 0), ValueError, "num_heads must be >= 1, got 0"),
    ],
)
def test_alibi_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()
