"""Tests of attnbook.norms: layer normalisation and RMSNorm from scratch."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from attnbook.norms import LayerNorm, RMSNorm, layer_norm, rms_norm


@st.composite
def inputs(draw):
    shape = draw(st.lists(st.integers(1, 4), min_size=0, max_size=2))
    D = draw(st.integers(1, 9))
    g = torch.Generator().manual_seed(draw(st.integers(0, 2**31 - 1)))
    scale = draw(st.sampled_from([1e-3, 1.0, 1e3]))
    X = scale * torch.randn(*shape, D, generator=g, dtype=torch.float64)
    gamma = torch.randn(D, generator=g, dtype=torch.float64)
    beta = torch.randn(D, generator=g, dtype=torch.float64)
    eps = draw(st.sampled_from([1e-5, 1e-2, 1.0]))
    return X, gamma, beta, eps


@given(inputs())
@settings(max_examples=60, deadline=None)
def test_layer_norm_matches_torch(setup):
    X, gamma, beta, eps = setup
    expected = nn.functional.layer_norm(X, (X.shape[-1],), gamma, beta, eps)
    torch.testing.assert_close(layer_norm(X, gamma, beta, eps), expected)


@given(inputs())
@settings(max_examples=60, deadline=None)
def test_rms_norm_matches_torch(setup):
    X, gamma, _, eps = setup
    expected = nn.functional.rms_norm(X, (X.shape[-1],), gamma, eps)
    torch.testing.assert_close(rms_norm(X, gamma, eps), expected)


def test_layer_norm_gives_mean_zero_variance_one():
    X = 5 * torch.randn(3, 7, 16, dtype=torch.float64) + 3
    Y = layer_norm(X)
    torch.testing.assert_close(Y.mean(-1), torch.zeros(3, 7, dtype=torch.float64))
    var = Y.var(-1, unbiased=False)
    torch.testing.assert_close(var, torch.ones(3, 7, dtype=torch.float64), atol=1e-5, rtol=0)


def test_constant_row_gives_beta_not_nan():
    X = torch.full((2, 4), 3.0)
    beta = torch.arange(4.0)
    assert torch.equal(layer_norm(X, torch.ones(4), beta), beta.expand(2, 4))


def test_rms_norm_is_layer_norm_of_centred_input():
    X = torch.randn(5, 8, dtype=torch.float64)
    centred = X - X.mean(-1, keepdim=True)
    torch.testing.assert_close(rms_norm(centred), layer_norm(X))


@pytest.mark.parametrize("eps", [1e-5, 1e-3])
def test_modules_match_torch_modules(eps):
    torch.manual_seed(0)
    X = torch.randn(2, 3, 6)
    ours, theirs = LayerNorm(6, eps), nn.LayerNorm(6, eps=eps)
    rms_ours, rms_theirs = RMSNorm(6, eps), nn.RMSNorm(6, eps=eps)
    with torch.no_grad():
        for p in (ours.weight, ours.bias, rms_ours.weight):
            p.normal_()
    theirs.load_state_dict(ours.state_dict())
    rms_theirs.load_state_dict(rms_ours.state_dict())
    torch.testing.assert_close(ours(X), theirs(X))
    torch.testing.assert_close(rms_ours(X), rms_theirs(X))
    assert sum(p.numel() for p in ours.parameters()) == 12
    assert sum(p.numel() for p in rms_ours.parameters()) == 6


def test_does_not_modify_input_and_gradients_flow():
    X = torch.randn(4, 5, requires_grad=True)
    before = X.detach().clone()
    layer = LayerNorm(5)
    (layer(X) * torch.randn(4, 5)).sum().backward()
    assert torch.equal(X.detach(), before)
    assert X.grad is not None and layer.weight.grad is not None and layer.bias.grad is not None


def test_bad_input():
    with pytest.raises(TypeError, match=r"X must be a torch.Tensor, got \[1, 2\]"):
        layer_norm([1, 2])
    with pytest.raises(TypeError, match=r"X must have a floating-point dtype, got torch.int64"):
        layer_norm(torch.arange(4))
    with pytest.raises(ValueError, match=r"gamma must have shape \(3,\).*got \(4,\)"):
        layer_norm(torch.randn(2, 3), torch.ones(4))
    with pytest.raises(ValueError, match=r"eps must be a finite number > 0, got 0.0"):
        rms_norm(torch.randn(2, 3), eps=0)
    with pytest.raises(ValueError, match=r"X must have num_hiddens=5 features.*got shape \(2, 4\)"):
        LayerNorm(5)(torch.randn(2, 4))
    with pytest.raises(ValueError, match=r"num_hiddens must be >= 1, got 0"):
        RMSNorm(0)


# ---------------------------------------------------------------- half precision


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("scale", [1.0, 300.0, 3000.0])
def test_low_precision_layer_norm_matches_torch(dtype, scale):
    # At scale 300 a float16 square overflows (300**2 > 65,504): a version that
    # squares in float16 returns zeros there, while PyTorch accumulates in float32.
    g = torch.Generator().manual_seed(3)
    X = (scale * torch.randn(5, 7, 16, generator=g)).to(dtype)
    gamma = torch.randn(16, generator=g).to(dtype)
    beta = torch.randn(16, generator=g).to(dtype)
    got = layer_norm(X, gamma, beta)
    expected = nn.functional.layer_norm(X, (16,), gamma, beta, 1e-5)
    assert got.dtype == dtype
    # One rounding to the dtype: the two may differ by one unit in the last place.
    torch.testing.assert_close(got, expected, atol=2e-2, rtol=1e-2)
    assert float(got.float().abs().max()) > 1.0  # not the silent zeros of an overflow


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("scale", [1.0, 300.0, 3000.0])
def test_low_precision_rms_norm_matches_torch(dtype, scale):
    g = torch.Generator().manual_seed(4)
    X = (scale * torch.randn(5, 7, 16, generator=g)).to(dtype)
    gamma = torch.randn(16, generator=g).to(dtype)
    got = rms_norm(X, gamma)
    expected = nn.functional.rms_norm(X, (16,), gamma, 1e-5)
    assert got.dtype == dtype
    torch.testing.assert_close(got, expected, atol=2e-2, rtol=1e-2)
    assert float(got.float().abs().max()) > 1.0


def test_half_precision_block_adds_what_torch_adds():
    # A pre-LN block on a residual stream of scale 300: its norms must not
    # overflow, so the update it adds matches PyTorch's float16 layer.
    from attnbook.transformer import TransformerBlock

    torch.manual_seed(2)
    layer = nn.TransformerEncoderLayer(16, 4, 64, dropout=0.0, batch_first=True, norm_first=True)
    layer = layer.eval().half()
    ours = TransformerBlock.from_torch(layer)
    X = (300 * torch.randn(2, 6, 16)).half()
    with torch.no_grad():
        update_ours = (ours(X).float() - X.float()).norm()
        update_torch = (layer(X).float() - X.float()).norm()
    assert abs(float(update_ours) / float(update_torch) - 1) < 0.05
