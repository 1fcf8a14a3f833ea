"""Tests of attnbook.transformer: the block against torch.nn.TransformerEncoderLayer."""

from __future__ import annotations

import pytest
import torch
from _helpers import draw_valid_lens
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from attnbook.transformer import TransformerBlock, gradient_norms_at_init


def torch_layer(D=8, heads=2, ffn=16, norm_first=True, seed=0, dtype=torch.float64, **kwargs):
    torch.manual_seed(seed)
    layer = nn.TransformerEncoderLayer(
        D,
        heads,
        ffn,
        dropout=0.0,
        activation="relu",
        batch_first=True,
        norm_first=norm_first,
        dtype=dtype,
        **kwargs,
    )
    with torch.no_grad():  # non-trivial norms and biases, so that copying them matters
        for norm in (layer.norm1, layer.norm2):
            norm.weight.uniform_(0.5, 1.5)
            norm.bias.normal_()
        layer.self_attn.in_proj_bias.normal_()
        layer.self_attn.out_proj.bias.normal_()
    return layer.eval()


def padding_mask(lens, n):
    return torch.arange(n) >= lens[:, None]  # (batch, n): True = padding


@st.composite
def setups(draw):
    heads, width = draw(st.integers(1, 3)), draw(st.integers(1, 4))
    D = heads * width
    ffn = draw(st.integers(1, 12))
    b, n = draw(st.integers(1, 3)), draw(st.integers(1, 5))
    g = torch.Generator().manual_seed(draw(st.integers(0, 2**31 - 1)))
    X = torch.randn(b, n, D, generator=g, dtype=torch.float64)
    lens = draw_valid_lens(draw, draw(st.sampled_from(["none", "1d"])), b, n, n, 1)
    return D, heads, ffn, X, lens, draw(st.booleans()), draw(st.integers(0, 1000))


@given(setups())
@settings(max_examples=60, deadline=None)
def test_matches_torch_encoder_layer(setup):
    D, heads, ffn, X, lens, norm_first, seed = setup
    layer = torch_layer(D, heads, ffn, norm_first, seed)
    block = TransformerBlock.from_torch(layer).eval()
    mask = None if lens is None else padding_mask(lens, X.shape[1])
    with torch.no_grad():
        expected = layer(X, src_key_padding_mask=mask)
        got = block(X, lens)
    torch.testing.assert_close(got, expected)


@pytest.mark.parametrize("norm_first", [True, False])
def test_matches_torch_in_float32_with_gradients(norm_first):
    layer = torch_layer(16, 4, 64, norm_first, dtype=torch.float32).train()
    block = TransformerBlock.from_torch(layer)
    assert block.training and block.norm_first is norm_first
    X = torch.randn(3, 7, 16)
    lens = torch.tensor([7, 3, 1])
    expected = layer(X, src_key_padding_mask=padding_mask(lens, 7))
    got = block(X, lens)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-4)
    (got * expected.detach()).sum().backward()
    (expected * expected.detach()).sum().backward()
    torch.testing.assert_close(
        block.ffn.linear1.weight.grad, layer.linear1.weight.grad, atol=1e-4, rtol=1e-4
    )
    torch.testing.assert_close(
        block.norm1.weight.grad, layer.norm1.weight.grad, atol=1e-4, rtol=1e-4
    )


def test_by_hand_pre_and_post_ln():
    torch.manual_seed(1)
    X = torch.randn(2, 5, 8, dtype=torch.float64)
    for norm_first in (True, False):
        block = TransformerBlock(8, 2, 32, norm_first=norm_first).double()
        att, ffn, n1, n2 = block.attention, block.ffn, block.norm1, block.norm2
        if norm_first:
            H = X + att(n1(X), n1(X), n1(X))
            expected = H + ffn(n2(H))
        else:
            H = n1(X + att(X, X, X))
            expected = n2(H + ffn(H))
        torch.testing.assert_close(block(X), expected)


def test_keeps_attention_weights_and_masks_padding():
    block = TransformerBlock(8, 2, 16)
    X = torch.randn(2, 5, 8)
    block(X, torch.tensor([5, 2]))
    w = block.attention_weights
    assert w.shape == (2, 2, 5, 5)
    assert torch.all(w[1, :, :, 2:] == 0)
    torch.testing.assert_close(w.sum(-1), torch.ones(2, 2, 5))


def test_causal_lengths_make_outputs_ignore_the_future():
    block = TransformerBlock(8, 2, 16).double()
    X = torch.randn(1, 6, 8, dtype=torch.float64)
    causal = torch.arange(1, 7)[None]  # (1, 6): query i sees keys 0..i
    Y = block(X, causal)
    X2 = X.clone()
    X2[0, 4:] += 1.0
    torch.testing.assert_close(block(X2, causal)[0, :4], Y[0, :4])


def test_length_zero_is_finite():
    block = TransformerBlock(8, 2, 16)
    assert block(torch.randn(2, 3, 8), torch.tensor([0, 3])).isfinite().all()


def test_parameter_count_is_12_d_squared_plus_13_d():
    for D in (8, 64, 512):
        block = TransformerBlock(D, 8 if D >= 8 else 1, 4 * D)
        assert sum(p.numel() for p in block.parameters()) == 12 * D * D + 13 * D
        layer = nn.TransformerEncoderLayer(D, 8, 4 * D, batch_first=True)
        assert sum(p.numel() for p in layer.parameters()) == 12 * D * D + 13 * D


def test_does_not_modify_input_and_dropout_only_in_training():
    block = TransformerBlock(8, 2, 16, dropout=0.5)
    X = torch.randn(2, 4, 8)
    before = X.clone()
    block.eval()
    torch.testing.assert_close(block(X), block(X))
    block.train()
    assert not torch.equal(block(X), block(X))
    assert torch.equal(X, before)


def test_from_torch_copies_eps_dtype_and_dropout():
    layer = torch_layer(8, 2, 16, dtype=torch.float32, layer_norm_eps=1e-3)
    layer.dropout.p = 0.25
    block = TransformerBlock.from_torch(layer)
    assert block.norm1.eps == block.norm2.eps == 1e-3
    assert block.ffn.dropout.p == 0.25
    assert block.ffn.linear1.weight.dtype == torch.float32
    assert not block.training


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"batch_first": False}, r"batch_first=False: its inputs are \(n, batch, D\)"),
        ({"activation": "gelu"}, r"activation 'gelu'.*uses ReLU"),
        ({"bias": False}, r"bias=False: a TransformerBlock has biases"),
    ],
)
def test_from_torch_refuses_layers_it_cannot_copy(kwargs, match):
    args = {"batch_first": True, "activation": "relu", **kwargs}
    layer = nn.TransformerEncoderLayer(8, 2, 16, **args)
    with pytest.raises(ValueError, match=match):
        TransformerBlock.from_torch(layer)


def test_from_torch_refuses_other_layouts():
    with pytest.raises(TypeError, match=r"layer must be a torch.nn.TransformerEncoderLayer"):
        TransformerBlock.from_torch(nn.Linear(3, 3))
    layer = nn.TransformerEncoderLayer(8, 2, 16, batch_first=True)
    layer.norm2 = nn.LayerNorm(8, eps=1e-3)
    with pytest.raises(ValueError, match=r"different epsilons, 1e-05 and 0.001"):
        TransformerBlock.from_torch(layer)
    layer.norm2 = nn.RMSNorm(8)
    with pytest.raises(ValueError, match=r"norm1 and norm2 must be affine torch.nn.LayerNorm"):
        TransformerBlock.from_torch(layer)


def test_bad_input():
    with pytest.raises(ValueError, match=r"num_heads=3 must divide num_hiddens=8"):
        TransformerBlock(8, 3, 16)
    with pytest.raises(ValueError, match=r"ffn_hiddens must be >= 1, got 0"):
        TransformerBlock(8, 2, 0)
    with pytest.raises(TypeError, match=r"norm_first must be True or False, got 'pre'"):
        TransformerBlock(8, 2, 16, norm_first="pre")
    with pytest.raises(ValueError, match=r"dropout must be in \[0, 1\), got 1.5"):
        TransformerBlock(8, 2, 16, dropout=1.5)
    block = TransformerBlock(8, 2, 16)
    with pytest.raises(
        ValueError, match=r"X must have num_hiddens=8 features, got shape \(2, 3, 4\)"
    ):
        block(torch.randn(2, 3, 4))
    with pytest.raises(ValueError, match=r"X must be 3-D, got shape \(3, 8\)"):
        block(torch.randn(3, 8))
    with pytest.raises(ValueError, match=r"valid_lens must lie in \[0, 3\].*got 4"):
        block(torch.randn(2, 3, 8), torch.tensor([4, 1]))


def test_gradient_norms_are_deterministic_and_leave_the_rng_alone():
    torch.manual_seed(0)
    state = torch.random.get_rng_state()
    a = gradient_norms_at_init(3, True, num_hiddens=8, num_heads=2, seeds=(0, 1))
    assert torch.equal(torch.random.get_rng_state(), state)
    b = gradient_norms_at_init(3, True, num_hiddens=8, num_heads=2, seeds=(0, 1))
    assert a.shape == (3,) and a.dtype == torch.float64 and torch.equal(a, b)
    assert bool((a > 0).all())
    # Block i is the same whatever the depth: a one-block stack of the same seed
    # has the same first block (its gradient differs, its weights do not).
    deeper = gradient_norms_at_init(4, False, num_hiddens=8, num_heads=2, seeds=(0,))
    assert deeper.shape == (4,)


@pytest.mark.parametrize("input_std", [1.0, 0.3])
def test_gradient_norms_against_a_brute_force_loss(input_std):
    """The norm of one seed's block gradient, recomputed through torch's own layers."""
    got = gradient_norms_at_init(
        2, False, num_hiddens=8, num_heads=2, seeds=(3,), input_std=input_std
    )
    torch.manual_seed(3)
    blocks = [TransformerBlock(8, 2, 32, norm_first=False) for _ in range(2)]
    g = torch.Generator().manual_seed(10_003)
    with torch.no_grad():
        for block in blocks:
            for m in block.modules():
                if isinstance(m, nn.Linear):
                    bound = (6.0 / sum(m.weight.shape)) ** 0.5
                    m.weight.uniform_(-bound, bound, generator=g)
                    m.bias.zero_()
    layers = [TransformerBlock.from_torch(torch_layer(8, 2, 32, False)) for _ in range(2)]
    for mine, block in zip(layers, blocks):
        mine.load_state_dict(block.state_dict())
    X = input_std * torch.randn(4, 8, 8, generator=g)
    readout = torch.randn(8, 64, generator=g) / 8**0.5
    targets = torch.randint(0, 64, (32,), generator=g)
    H = X
    for layer in layers:
        H = layer.float()(H)
    loss = nn.functional.cross_entropy((H @ readout).reshape(-1, 64), targets)
    loss.backward()
    for i, layer in enumerate(layers):
        norm = torch.cat([p.grad.flatten() for p in layer.parameters()]).double().norm()
        torch.testing.assert_close(got[i], norm, rtol=1e-5, atol=0)


def test_gradient_norms_bad_input():
    with pytest.raises(ValueError, match=r"depth must be >= 1, got 0"):
        gradient_norms_at_init(0, True)
    with pytest.raises(TypeError, match=r"norm_first must be True or False, got 1"):
        gradient_norms_at_init(2, 1)
    with pytest.raises(ValueError, match=r"seeds must be a non-empty tuple"):
        gradient_norms_at_init(2, True, seeds=())
    with pytest.raises(ValueError, match=r"input_std must be a finite number > 0, got 0.0"):
        gradient_norms_at_init(2, True, input_std=0)
    with pytest.raises(TypeError, match=r"input_std must be a real number"):
        gradient_norms_at_init(2, True, input_std="1")


def test_gradient_norms_input_std_changes_the_pre_ln_profile():
    """A large input (std sqrt(D)) flattens the pre-LN profile; post-LN's top stays O(1)."""
    kwargs = {"num_hiddens": 8, "num_heads": 2, "seeds": (0, 1)}
    small = gradient_norms_at_init(6, True, input_std=1.0, **kwargs)
    large = gradient_norms_at_init(6, True, input_std=8**0.5 * 3, **kwargs)
    assert small[0] / small[-1] > large[0] / large[-1]
    assert not torch.equal(small, large)
