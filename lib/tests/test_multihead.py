"""Tests of attnbook.multihead.MultiHeadAttention."""

from __future__ import annotations

import pytest
import torch
from _helpers import assert_unchanged, clones, draw_valid_lens, keep_mask
from hypothesis import given
from hypothesis import strategies as st
from torch import nn

from attnbook.multihead import MultiHeadAttention

# ---------------------------------------------------------------- reference


def fresh(num_hiddens=8, num_heads=2, seed=0, dtype=torch.float64, **kwargs):
    torch.manual_seed(seed)
    return MultiHeadAttention(num_hiddens, num_heads, **kwargs).to(dtype)


def torch_twin(layer: MultiHeadAttention, bias: bool) -> nn.MultiheadAttention:
    """A torch.nn.MultiheadAttention holding the same weights as ``layer``."""
    dtype = layer.W_q.weight.dtype
    ref = nn.MultiheadAttention(
        layer.num_hiddens, layer.num_heads, bias=bias, batch_first=True, dtype=dtype
    )
    with torch.no_grad():
        ref.in_proj_weight.copy_(torch.cat([layer.W_q.weight, layer.W_k.weight, layer.W_v.weight]))
        ref.out_proj.weight.copy_(layer.W_o.weight)
        if bias:
            ref.in_proj_bias.copy_(torch.cat([layer.W_q.bias, layer.W_k.bias, layer.W_v.bias]))
            ref.out_proj.bias.copy_(layer.W_o.bias)
    return ref.eval()


def reference(layer, Q, K, V, lens, bias):
    """(output, weights (b, h, n, m)) from torch.nn.MultiheadAttention.

    1-D lengths become a key padding mask; 2-D lengths (one per query) become
    a per-head boolean attention mask (True = not allowed).
    """
    ref = torch_twin(layer, bias)
    b, n, m = Q.shape[0], Q.shape[1], K.shape[1]
    if lens is None or lens.dim() == 1:
        padding = None if lens is None else ~keep_mask(lens, b, 1, m)[:, 0]  # (b, m)
        out, weights = ref(
            Q, K, V, key_padding_mask=padding, need_weights=True, average_attn_weights=False
        )
    else:
        blocked = ~keep_mask(lens, b, n, m)  # (b, n, m)
        blocked = blocked.repeat_interleave(layer.num_heads, dim=0)  # (b*h, n, m)
        out, weights = ref(
            Q, K, V, attn_mask=blocked, need_weights=True, average_attn_weights=False
        )
    return out, weights


# ---------------------------------------------------------------- strategies


@st.composite
def setups(draw, min_len=1, lens_kind=None, dtype=torch.float64):
    """(num_hiddens, num_heads, Q, K, V, valid_lens)."""
    heads, width = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    D = heads * width
    b, n, m = draw(st.integers(1, 3)), draw(st.integers(1, 4)), draw(st.integers(1, 5))
    g = torch.Generator().manual_seed(draw(st.integers(0, 2**31 - 1)))
    Q = torch.randn(b, n, D, generator=g, dtype=dtype)
    K = torch.randn(b, m, D, generator=g, dtype=dtype)
    V = torch.randn(b, m, D, generator=g, dtype=dtype)
    kind = lens_kind or draw(st.sampled_from(["none", "1d", "2d"]))
    lens = draw_valid_lens(draw, kind, b, n, m, min_len)
    return D, heads, Q, K, V, lens


# ---------------------------------------------------------------- agreement with torch


@pytest.mark.parametrize("bias", [False, True])
@given(setup=setups(), seed=st.integers(0, 100))
def test_matches_torch_multihead_attention(bias, setup, seed):
    D, heads, Q, K, V, lens = setup
    layer = fresh(D, heads, seed=seed, bias=bias).eval()
    got = layer(Q, K, V, lens)
    expected, weights = reference(layer, Q, K, V, lens, bias)
    assert got.shape == Q.shape and got.dtype == Q.dtype
    torch.testing.assert_close(got, expected)
    torch.testing.assert_close(layer.attention_weights, weights)


@pytest.mark.parametrize("kind", ["1d", "2d"])
@given(data=st.data())
def test_valid_lengths_match_torch(kind, data):
    D, heads, Q, K, V, lens = data.draw(setups(lens_kind=kind))
    layer = fresh(D, heads)
    torch.testing.assert_close(layer(Q, K, V, lens), reference(layer, Q, K, V, lens, False)[0])


def test_chapter_experiment_matches_torch():
    """The chapter's numbers: D=100, 5 heads, batch 2, 4 queries, 6 keys, lengths [3, 2]."""
    layer = fresh(100, 5, dtype=torch.float32).eval()
    g = torch.Generator().manual_seed(0)
    X = torch.randn(2, 4, 100, generator=g)
    Y = torch.randn(2, 6, 100, generator=g)
    lens = torch.tensor([3, 2])
    out = layer(X, Y, Y, lens)
    assert out.shape == (2, 4, 100)
    assert layer.attention_weights.shape == (2, 5, 4, 6)
    expected, weights = reference(layer, X, Y, Y, lens, False)
    torch.testing.assert_close(out, expected)
    torch.testing.assert_close(layer.attention_weights, weights)
    assert torch.all(layer.attention_weights[0, :, :, 3:] == 0)
    assert torch.all(layer.attention_weights[1, :, :, 2:] == 0)


def test_one_head_is_projected_dot_product_attention():
    """With one head the layer is W_o(softmax(Q K^T / sqrt(D)) V) of the projections."""
    layer = fresh(6, 1)
    g = torch.Generator().manual_seed(5)
    Q = torch.randn(2, 3, 6, generator=g, dtype=torch.float64)
    K = torch.randn(2, 4, 6, generator=g, dtype=torch.float64)
    V = torch.randn(2, 4, 6, generator=g, dtype=torch.float64)
    q, k, v = layer.W_q(Q), layer.W_k(K), layer.W_v(V)
    weights = torch.softmax(q @ k.transpose(1, 2) / 6**0.5, dim=-1)
    torch.testing.assert_close(layer(Q, K, V), layer.W_o(weights @ v))


# ---------------------------------------------------------------- properties


@given(setups(min_len=0))
def test_rows_sum_to_one_and_masked_weights_are_zero(setup):
    D, heads, Q, K, V, lens = setup
    layer = fresh(D, heads)
    out = layer(Q, K, V, lens)
    weights = layer.attention_weights  # (b, h, n, m)
    b, n, m = Q.shape[0], Q.shape[1], K.shape[1]
    assert weights.shape == (b, heads, n, m)
    assert torch.isfinite(out).all()
    mask = keep_mask(lens, b, n, m).unsqueeze(1).expand_as(weights)
    assert torch.all(weights[~mask] == 0)
    sums = weights.sum(-1)  # (b, h, n)
    nonempty = mask.any(-1)
    torch.testing.assert_close(sums[nonempty], torch.ones_like(sums[nonempty]))
    assert torch.all(sums[~nonempty] == 0)


@pytest.mark.parametrize("bias", [False, True])
def test_length_zero_gives_zero_weights_and_finite_output(bias):
    layer = fresh(8, 4, bias=bias)
    g = torch.Generator().manual_seed(1)
    X = torch.randn(2, 3, 8, generator=g, dtype=torch.float64)
    out = layer(X, X, X, torch.tensor([0, 3]))
    assert torch.isfinite(out).all()
    assert torch.all(layer.attention_weights[0] == 0)
    # Nothing to attend to: the heads output zeros, and W_o maps them to its bias.
    expected = layer.W_o.bias.expand(3, 8) if bias else torch.zeros(3, 8, dtype=torch.float64)
    torch.testing.assert_close(out[0], expected)


@given(setups(lens_kind="none"), st.data())
def test_permuting_keys_and_values_together(setup, data):
    D, heads, Q, K, V, _ = setup
    perm = torch.tensor(data.draw(st.permutations(range(K.shape[1]))))
    layer = fresh(D, heads)
    out = layer(Q, K, V)
    weights = layer.attention_weights
    torch.testing.assert_close(layer(Q, K[:, perm], V[:, perm]), out)
    torch.testing.assert_close(layer.attention_weights, weights[..., perm])


def test_heads_are_independent():
    """Changing head 1's query projection changes head 1's weights only."""
    layer = fresh(8, 4)
    g = torch.Generator().manual_seed(2)
    X = torch.randn(1, 5, 8, generator=g, dtype=torch.float64)
    layer(X, X, X)
    before = layer.attention_weights.clone()
    with torch.no_grad():
        layer.W_q.weight[2:4] *= 3.0  # rows 2, 3 feed head 1 (width 2)
    layer(X, X, X)
    after = layer.attention_weights
    assert not torch.allclose(after[:, 1], before[:, 1])
    for head in (0, 2, 3):
        torch.testing.assert_close(after[:, head], before[:, head])


def test_split_and_merge_heads_round_trip():
    layer = fresh(12, 3)
    X = torch.arange(2 * 5 * 12, dtype=torch.float64).reshape(2, 5, 12)
    split = layer.split_heads(X)
    assert split.shape == (6, 5, 4)
    # Batch item 1, head 2 holds features 8..11 of batch item 1.
    torch.testing.assert_close(split[1 * 3 + 2], X[1, :, 8:12])
    torch.testing.assert_close(layer.merge_heads(split), X)


@given(setups(min_len=0))
def test_does_not_modify_inputs(setup):
    D, heads, Q, K, V, lens = setup
    before = clones(Q, K, V, lens)
    fresh(D, heads)(Q, K, V, lens)
    assert_unchanged(before, [Q, K, V, lens])


@given(setups(min_len=0))
def test_gradients_flow(setup):
    D, heads, Q, K, V, lens = setup
    Q, K, V = (t.clone().requires_grad_(True) for t in (Q, K, V))
    layer = fresh(D, heads)
    out = layer(Q, K, V, lens)
    (out * torch.linspace(-1, 1, out.numel(), dtype=out.dtype).reshape(out.shape)).sum().backward()
    for t in (Q, K, V, *layer.parameters()):
        assert t.grad is not None and torch.isfinite(t.grad).all()
    # Keys and values that no query may see get no gradient.
    seen = keep_mask(lens, Q.shape[0], Q.shape[1], K.shape[1]).any(dim=1)  # (b, m)
    assert torch.all(K.grad[~seen] == 0) and torch.all(V.grad[~seen] == 0)


def test_stored_weights_are_detached_and_outputs_keep_gradients():
    X = torch.randn(2, 3, 8, dtype=torch.float64, requires_grad=True)
    layer = fresh(8, 2)
    out = layer(X, X, X, torch.tensor([3, 1]))
    # The stored weights hold no graph (neither the layer's nor its inner module's) ...
    assert layer.attention_weights.grad_fn is None
    assert not layer.attention_weights.requires_grad
    assert layer.attention.attention_weights.grad_fn is None
    # ... while the output still carries gradients to the input and every parameter.
    assert out.grad_fn is not None
    out.sum().backward()
    assert X.grad is not None and torch.isfinite(X.grad).all() and X.grad.abs().sum() > 0
    assert all(p.grad is not None for p in layer.parameters())


def test_dropout_only_in_training():
    layer = fresh(8, 2, dropout=0.5)
    g = torch.Generator().manual_seed(3)
    X = torch.randn(2, 4, 8, generator=g, dtype=torch.float64)
    layer.eval()
    out_eval = layer(X, X, X)
    torch.testing.assert_close(layer(X, X, X), out_eval)
    torch.testing.assert_close(out_eval, reference(layer, X, X, X, None, False)[0])
    layer.train()
    torch.manual_seed(0)
    out_train = layer(X, X, X)
    assert not torch.allclose(out_train, out_eval)
    # The stored weights are the ones before dropout.
    torch.testing.assert_close(layer.attention_weights, reference(layer, X, X, X, None, False)[1])


def test_float32_and_list_lengths():
    layer = fresh(6, 3, dtype=torch.float32)
    g = torch.Generator().manual_seed(4)
    Q, K = torch.randn(2, 2, 6, generator=g), torch.randn(2, 3, 6, generator=g)
    got = layer(Q, K, K, [1, 3])
    assert got.dtype == torch.float32
    torch.testing.assert_close(got, reference(layer, Q, K, K, torch.tensor([1, 3]), False)[0])


def test_device(device):
    layer = fresh(8, 2, dtype=torch.float32)
    g = torch.Generator().manual_seed(6)
    Q, K = torch.randn(2, 3, 8, generator=g), torch.randn(2, 4, 8, generator=g)
    lens = torch.tensor([[1, 4, 2], [3, 0, 4]])
    expected = layer(Q, K, K, lens)
    got = layer.to(device)(Q.to(device), K.to(device), K.to(device), lens.to(device))
    assert got.device.type == device
    torch.testing.assert_close(got.cpu(), expected)


# ---------------------------------------------------------------- bad input


def test_heads_must_divide_hiddens():
    with pytest.raises(ValueError, match=r"num_heads=3.*num_hiddens=10"):
        MultiHeadAttention(10, 3)


@pytest.mark.parametrize(
    ("args", "error", "match"),
    [
        ((0, 1), ValueError, "num_hiddens"),
        ((8, 0), ValueError, "num_heads"),
        ((8.0, 2), TypeError, "num_hiddens"),
        ((8, True), TypeError, "num_heads"),
    ],
)
def test_bad_sizes(args, error, match):
    with pytest.raises(error, match=match):
        MultiHeadAttention(*args)


def test_bad_dropout_and_bias():
    with pytest.raises(ValueError, match="dropout"):
        MultiHeadAttention(8, 2, dropout=1.0)
    with pytest.raises(TypeError, match="bias"):
        MultiHeadAttention(8, 2, bias=1)


def test_mismatched_feature_sizes():
    layer = fresh(8, 2)
    good = torch.zeros(1, 3, 8, dtype=torch.float64)
    bad = torch.zeros(1, 3, 6, dtype=torch.float64)
    with pytest.raises(ValueError, match=r"queries must have num_hiddens=8 features.*\(1, 3, 6\)"):
        layer(bad, good, good)
    with pytest.raises(ValueError, match="keys must have num_hiddens=8"):
        layer(good, bad, bad)
    with pytest.raises(ValueError, match="values must have num_hiddens=8"):
        layer(good, good, bad)


def test_bad_shapes_and_dtypes():
    layer = fresh(4, 2)
    X = torch.zeros(2, 3, 4, dtype=torch.float64)
    with pytest.raises(ValueError, match="queries must be 3-D"):
        layer(X[0], X, X)
    with pytest.raises(ValueError, match="same number of items"):
        layer(X, X, X[:, :2])
    with pytest.raises(ValueError, match="same batch size"):
        layer(X[:1], X, X)
    with pytest.raises(TypeError, match="queries must be a torch.Tensor"):
        layer([[0.0]], X, X)
    with pytest.raises(TypeError, match="layer's dtype"):
        layer(X.float(), X.float(), X.float())
    with pytest.raises(TypeError, match="same dtype"):
        layer(X, X.float(), X)


def test_bad_valid_lengths():
    layer = fresh(4, 2)
    X = torch.zeros(2, 3, 4, dtype=torch.float64)
    with pytest.raises(ValueError, match=r"valid_lens must have shape \(2,\) or \(2, 3\)"):
        layer(X, X, X, torch.tensor([1, 2, 3]))
    with pytest.raises(ValueError, match=r"valid_lens must lie in \[0, 3\].*got 4"):
        layer(X, X, X, torch.tensor([1, 4]))
    with pytest.raises(ValueError, match="valid_lens must lie in"):
        layer(X, X, X, torch.tensor([-1, 2]))
    with pytest.raises(ValueError, match="whole numbers"):
        layer(X, X, X, torch.tensor([1.5, 2.0]))
