"""Tests of attnbook.positional: sinusoidal_encoding and PositionalEncoding."""

from __future__ import annotations

import math

import pytest
import torch
from _helpers import assert_unchanged, clones
from hypothesis import given
from hypothesis import strategies as st

from attnbook.multihead import MultiHeadAttention
from attnbook.positional import PositionalEncoding, sinusoidal_encoding
from attnbook.scoring import DotProductAttention

# ---------------------------------------------------------------- references


def closed_form(num_positions: int, num_hiddens: int) -> torch.Tensor:
    """P[i, 2j] = sin(i / 10000^(2j/d)), P[i, 2j+1] = cos(...), one entry at a time."""
    P = torch.zeros(num_positions, num_hiddens, dtype=torch.float64)
    for i in range(num_positions):
        for col in range(num_hiddens):
            j = col // 2
            angle = i / 10000 ** (2 * j / num_hiddens)
            P[i, col] = math.sin(angle) if col % 2 == 0 else math.cos(angle)
    return P


def rotation(offset: int, num_hiddens: int) -> torch.Tensor:
    """Block-diagonal (d, d) matrix that rotates each (sin, cos) pair by offset * w_j."""
    M = torch.zeros(num_hiddens, num_hiddens, dtype=torch.float64)
    for j in range(num_hiddens // 2):
        t = offset / 10000 ** (2 * j / num_hiddens)
        c, s = math.cos(t), math.sin(t)
        # sin(a + t) = sin a cos t + cos a sin t;  cos(a + t) = cos a cos t - sin a sin t
        M[2 * j, 2 * j], M[2 * j, 2 * j + 1] = c, s
        M[2 * j + 1, 2 * j], M[2 * j + 1, 2 * j + 1] = -s, c
    return M


sizes = st.tuples(st.integers(1, 40), st.integers(1, 12).map(lambda h: 2 * h))


# ---------------------------------------------------------------- sinusoidal_encoding


@given(sizes)
def test_matches_closed_form(size):
    positions, d = size
    P = sinusoidal_encoding(positions, d)
    assert P.shape == (positions, d) and P.dtype == torch.float32
    torch.testing.assert_close(P.double(), closed_form(positions, d), atol=1e-6, rtol=0)


def test_chapter_matrix():
    """d = 32, 60 positions: row 0 alternates 0, 1; column 6 is sin(i / 10000^(6/32))."""
    P = sinusoidal_encoding(60, 32)
    assert P.shape == (60, 32)
    torch.testing.assert_close(P[0], torch.tensor([0.0, 1.0] * 16))
    expected = torch.tensor([math.sin(i / 10000 ** (6 / 32)) for i in range(60)])
    torch.testing.assert_close(P[:, 6], expected)
    assert P.abs().max() <= 1


@given(sizes, st.integers(0, 30))
def test_rotation_identity(size, offset):
    positions, d = size
    P = closed_form(positions + offset, d)
    Q = sinusoidal_encoding(positions + offset, d).double()
    M = rotation(offset, d)
    # p_{i + offset} = M p_i for every position i, with M independent of i.
    torch.testing.assert_close(Q[offset:], Q[:positions] @ M.T, atol=1e-5, rtol=0)
    torch.testing.assert_close(P[offset:], P[:positions] @ M.T)


@given(st.integers(1, 12).map(lambda h: 2 * h), st.integers(0, 20))
def test_dot_products_depend_only_on_the_offset(d, offset):
    P = sinusoidal_encoding(40 + offset, d).double()
    dots = (P[:40] * P[offset : 40 + offset]).sum(-1)  # p_i . p_{i + offset}, i = 0..39
    expected = sum(math.cos(offset / 10000 ** (2 * j / d)) for j in range(d // 2))
    torch.testing.assert_close(dots, torch.full_like(dots, expected), atol=1e-5, rtol=0)


def test_every_row_has_norm_sqrt_half_d():
    P = sinusoidal_encoding(50, 16)
    torch.testing.assert_close(P.norm(dim=-1), torch.full((50,), math.sqrt(8)))


@pytest.mark.parametrize(
    ("args", "error", "match"),
    [
        ((10, 7), ValueError, "num_hiddens must be even.*got 7"),
        ((10, 0), ValueError, "num_hiddens must be >= 1"),
        ((0, 4), ValueError, "num_positions must be >= 1"),
        ((10.0, 4), TypeError, "num_positions must be an integer"),
        ((10, "4"), TypeError, "num_hiddens must be an integer"),
    ],
)
def test_encoding_bad_input(args, error, match):
    with pytest.raises(error, match=match):
        sinusoidal_encoding(*args)


# ---------------------------------------------------------------- PositionalEncoding


@given(
    st.integers(1, 3),
    st.integers(1, 20),
    st.integers(1, 6).map(lambda h: 2 * h),
    st.sampled_from([torch.float32, torch.float64]),
)
def test_module_adds_the_encoding(batch, steps, d, dtype):
    X = torch.randn(batch, steps, d, generator=torch.Generator().manual_seed(steps), dtype=dtype)
    before = clones(X)
    out = PositionalEncoding(d, max_len=20)(X)
    assert out.shape == X.shape and out.dtype == dtype
    torch.testing.assert_close(out.double(), X.double() + closed_form(steps, d), atol=1e-6, rtol=0)
    assert_unchanged(before, [X])


def test_module_accepts_exactly_max_len_and_rejects_more():
    encode = PositionalEncoding(4, max_len=5)
    assert encode(torch.zeros(1, 5, 4)).shape == (1, 5, 4)
    with pytest.raises(ValueError, match=r"6 positions, more than max_len=5"):
        encode(torch.zeros(1, 6, 4))


def test_module_bad_input():
    with pytest.raises(ValueError, match="num_hiddens must be even"):
        PositionalEncoding(5)
    with pytest.raises(ValueError, match="max_len must be >= 1"):
        PositionalEncoding(4, max_len=0)
    with pytest.raises(ValueError, match="dropout"):
        PositionalEncoding(4, dropout=-0.1)
    encode = PositionalEncoding(4)
    with pytest.raises(
        ValueError, match=r"X must have num_hiddens=4 features, got shape \(1, 3, 6\)"
    ):
        encode(torch.zeros(1, 3, 6))
    with pytest.raises(ValueError, match="X must be 3-D"):
        encode(torch.zeros(3, 4))
    with pytest.raises(TypeError, match="X must have a floating-point dtype"):
        encode(torch.zeros(1, 3, 4, dtype=torch.long))
    with pytest.raises(TypeError, match="X must be a torch.Tensor"):
        encode([[[0.0] * 4]])


def test_module_dropout_only_in_training():
    encode = PositionalEncoding(8, dropout=0.5)
    X = torch.ones(2, 6, 8)
    encode.eval()
    torch.testing.assert_close(encode(X), X + sinusoidal_encoding(6, 8))
    encode.train()
    torch.manual_seed(0)
    dropped = encode(X)
    kept = dropped != 0
    assert kept.any() and (~kept).any()
    torch.testing.assert_close(dropped[kept], 2 * (X + sinusoidal_encoding(6, 8))[kept])


def test_module_gradient_and_no_parameters():
    encode = PositionalEncoding(6)
    assert list(encode.parameters()) == []
    assert "P" not in encode.state_dict()  # rebuilt from the formula, not stored
    X = torch.randn(2, 3, 6, requires_grad=True)
    encode(X).sum().backward()
    torch.testing.assert_close(X.grad, torch.ones_like(X))


def test_module_device(device):
    encode = PositionalEncoding(4, max_len=10).to(device)
    X = torch.zeros(1, 7, 4, device=device)
    out = encode(X)
    assert out.device.type == device
    torch.testing.assert_close(out.cpu()[0], sinusoidal_encoding(7, 4))


# ---------------------------------------------------------------- self-attention and order


def self_attention_layers():
    torch.manual_seed(0)
    return [DotProductAttention(), MultiHeadAttention(8, 2).double()]


@given(st.integers(2, 7), st.data())
def test_self_attention_is_permutation_equivariant(steps, data):
    """Without positional encoding, permuting the tokens permutes the outputs."""
    perm = torch.tensor(data.draw(st.permutations(range(steps))))
    X = torch.randn(
        2, steps, 8, generator=torch.Generator().manual_seed(steps), dtype=torch.float64
    )
    for layer in self_attention_layers():
        out = layer(X, X, X)
        Xp = X[:, perm]
        torch.testing.assert_close(layer(Xp, Xp, Xp), out[:, perm])


def test_positional_encoding_breaks_the_symmetry():
    """With the encoding added, swapping two tokens changes more than the order of the outputs."""
    X = torch.randn(1, 5, 8, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    perm = torch.tensor([1, 0, 2, 3, 4])
    encode = PositionalEncoding(8)
    for layer in self_attention_layers():
        E, Ep = encode(X), encode(X[:, perm])
        out, out_p = layer(E, E, E), layer(Ep, Ep, Ep)
        assert not torch.allclose(out_p, out[:, perm])
