"""Tests of attnbook.scoring: DotProductAttention and AdditiveAttention."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from _helpers import assert_unchanged, clones, draw_valid_lens, keep_mask
from hypothesis import given
from hypothesis import strategies as st

from attnbook.scoring import AdditiveAttention, DotProductAttention

# ---------------------------------------------------------------- references


def sdpa(Q, K, V, lens=None):
    """(output, weights) from torch's scaled_dot_product_attention with a bool mask."""
    mask = keep_mask(lens, Q.shape[0], Q.shape[1], K.shape[1])
    out = F.scaled_dot_product_attention(Q, K, V, attn_mask=mask)
    eye = torch.eye(K.shape[1], dtype=V.dtype).expand(K.shape[0], -1, -1)
    weights = F.scaled_dot_product_attention(Q, K, eye, attn_mask=mask)
    return out, weights


def ref_additive(layer: AdditiveAttention, Q, K, V, lens=None):
    """Brute force: score(q, k) = w_v . tanh(W_q q + W_k k), masked softmax, weighted sum."""
    Wq = layer.W_q.weight.detach().double()
    bq = torch.zeros(Wq.shape[0], dtype=torch.float64)
    if layer.W_q.bias is not None:
        bq = layer.W_q.bias.detach().double()
    Wk = layer.W_k.weight.detach().double()
    wv = layer.w_v.weight.detach().double()[0]
    Q, K, V = Q.double(), K.double(), V.double()
    batch, queries, keys = Q.shape[0], Q.shape[1], K.shape[1]
    mask = keep_mask(lens, batch, queries, keys)
    weights = torch.zeros(batch, queries, keys, dtype=torch.float64)
    for b in range(batch):
        for i in range(queries):
            scores = [
                float((wv * torch.tanh(Wq @ Q[b, i] + bq + Wk @ K[b, j])).sum())
                for j in range(keys)
                if mask[b, i, j]
            ]
            if not scores:
                continue
            top = max(scores)
            exps = [math.exp(s - top) for s in scores]
            for j, e in enumerate(exps):
                weights[b, i, j] = e / sum(exps)
    out = torch.zeros(batch, queries, V.shape[2], dtype=torch.float64)
    for b in range(batch):
        for i in range(queries):
            for j in range(keys):
                out[b, i] += weights[b, i, j] * V[b, j]
    return out, weights


# ---------------------------------------------------------------- strategies


@st.composite
def qkv(draw, same_size=True, min_len=0, dtype=torch.float64, lens_kind=None):
    """(Q, K, V, valid_lens) with valid_lens None, (batch,) or (batch, queries)."""
    b, q, k = draw(st.integers(1, 3)), draw(st.integers(1, 4)), draw(st.integers(1, 5))
    d_q, v = draw(st.integers(1, 6)), draw(st.integers(1, 4))
    d_k = d_q if same_size else draw(st.integers(1, 6))
    g = torch.Generator().manual_seed(draw(st.integers(0, 2**31 - 1)))
    Q = torch.randn(b, q, d_q, generator=g, dtype=dtype)
    K = torch.randn(b, k, d_k, generator=g, dtype=dtype)
    V = torch.randn(b, k, v, generator=g, dtype=dtype)
    kind = lens_kind or draw(st.sampled_from(["none", "1d", "2d"]))
    lens = draw_valid_lens(draw, kind, b, q, k, min_len)
    return Q, K, V, lens


def assert_zero_rows_for_empty_lengths(out, weights, lens):
    if lens is None:
        return
    full = lens if lens.dim() == 2 else lens[:, None].expand(weights.shape[:2])
    empty = full == 0
    assert torch.all(weights[empty] == 0) and torch.all(out[empty] == 0)


# ---------------------------------------------------------------- DotProductAttention: references


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@given(data=st.data())
def test_dot_product_matches_sdpa(dtype, data):
    Q, K, V, lens = data.draw(qkv(min_len=1, dtype=dtype))
    attention = DotProductAttention()
    before = clones(Q, K, V, lens)
    got = attention(Q, K, V, lens)
    expected, weights = sdpa(Q, K, V, lens)
    assert got.dtype == dtype and got.shape == expected.shape
    torch.testing.assert_close(got, expected)
    torch.testing.assert_close(attention.attention_weights, weights)
    assert_unchanged(before, [Q, K, V, lens])


@pytest.mark.parametrize("kind", ["1d", "2d"])
@given(data=st.data())
def test_dot_product_valid_lens_match_sdpa(kind, data):
    Q, K, V, lens = data.draw(qkv(min_len=1, lens_kind=kind))
    got = DotProductAttention()(Q, K, V, lens)
    torch.testing.assert_close(got, sdpa(Q, K, V, lens)[0])


def test_dot_product_scales_by_sqrt_d():
    Q = torch.tensor([[[1.0, 1.0, 1.0, 1.0]]])
    K = torch.tensor([[[1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 0.0]]])
    V = torch.tensor([[[1.0], [0.0]]])
    attention = DotProductAttention()
    attention(Q, K, V)
    # scores 4 / sqrt(4) = 2 and 0
    p = math.exp(2) / (math.exp(2) + 1)
    torch.testing.assert_close(attention.attention_weights, torch.tensor([[[p, 1 - p]]]))


@given(qkv())
def test_dot_product_empty_rows_are_zero(inputs):
    Q, K, V, lens = inputs
    attention = DotProductAttention()
    out = attention(Q, K, V, lens)
    weights = attention.attention_weights
    assert torch.isfinite(out).all()
    mask = keep_mask(lens, *weights.shape)
    assert torch.all(weights[~mask] == 0)
    assert_zero_rows_for_empty_lengths(out, weights, lens)


def assert_permutation_invariant(attention, Q, K, V, perm):
    """Permuting keys and values together leaves the output unchanged and
    permutes the weights' key axis the same way."""
    out = attention(Q, K, V)
    weights = attention.attention_weights
    torch.testing.assert_close(attention(Q, K[:, perm], V[:, perm]), out)
    torch.testing.assert_close(attention.attention_weights, weights[:, :, perm])


@given(inputs=qkv(lens_kind="none"), data=st.data())
def test_dot_product_permuting_keys_and_values(inputs, data):
    Q, K, V, _ = inputs
    perm = torch.tensor(data.draw(st.permutations(range(K.shape[1]))))
    assert_permutation_invariant(DotProductAttention(), Q, K, V, perm)


@given(qkv(min_len=0))
def test_dot_product_gradients(inputs):
    Q, K, V, lens = (
        t.clone().requires_grad_(True) if t is not None and t.is_floating_point() else t
        for t in inputs
    )
    out = DotProductAttention()(Q, K, V, lens)
    (out * torch.linspace(-1, 1, out.numel(), dtype=out.dtype).reshape(out.shape)).sum().backward()
    for tensor in (Q, K, V):
        assert tensor.grad is not None and torch.isfinite(tensor.grad).all()
    # Keys and values that no query may see get no gradient.
    seen = keep_mask(lens, Q.shape[0], Q.shape[1], K.shape[1]).any(dim=1)  # (batch, keys)
    assert torch.all(K.grad[~seen] == 0) and torch.all(V.grad[~seen] == 0)


def test_dot_product_dropout_only_in_training():
    g = torch.Generator().manual_seed(0)
    Q, K = torch.randn(2, 3, 4, generator=g), torch.randn(2, 5, 4, generator=g)
    eye = torch.eye(5).expand(2, 5, 5)  # values = identity: the output shows the weights
    attention = DotProductAttention(dropout=0.5)
    _, weights = sdpa(Q, K, eye)
    attention.eval()
    torch.testing.assert_close(attention(Q, K, eye), weights)
    attention.train()
    torch.manual_seed(0)
    dropped = attention(Q, K, eye)
    torch.testing.assert_close(attention.attention_weights, weights)  # kept before dropout
    kept = dropped != 0
    assert kept.any() and (~kept).any()
    torch.testing.assert_close(dropped[kept], 2 * weights[kept])  # survivors scaled by 1/(1-p)


def test_dot_product_zero_dropout_is_deterministic_in_training():
    g = torch.Generator().manual_seed(1)
    Q, K, V = (torch.randn(1, 3, 2, generator=g) for _ in range(3))
    attention = DotProductAttention(dropout=0)
    assert attention.training
    torch.testing.assert_close(attention(Q, K, V), sdpa(Q, K, V)[0])


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_dot_product_low_precision(dtype):
    g = torch.Generator().manual_seed(2)
    Q, K, V = (torch.randn(2, 3, 8, generator=g) for _ in range(3))
    lens = torch.tensor([0, 2])
    out = DotProductAttention()(Q.to(dtype), K.to(dtype), V.to(dtype), lens)
    assert out.dtype == dtype and torch.isfinite(out).all()
    assert torch.all(out[0] == 0)
    torch.testing.assert_close(out[1].float(), sdpa(Q, K, V, lens)[0][1], atol=5e-2, rtol=5e-2)


def test_dot_product_accepts_list_lengths():
    g = torch.Generator().manual_seed(3)
    Q, K, V = (
        torch.randn(2, 1, 3, generator=g),
        torch.randn(2, 4, 3, generator=g),
        torch.randn(2, 4, 2),
    )
    got = DotProductAttention()(Q, K, V, [1, 3])
    torch.testing.assert_close(got, sdpa(Q, K, V, torch.tensor([1, 3]))[0])


def test_dot_product_device(device):
    g = torch.Generator().manual_seed(4)
    Q, K, V = (
        torch.randn(2, 2, 3, generator=g),
        torch.randn(2, 4, 3, generator=g),
        torch.randn(2, 4, 2),
    )
    lens = torch.tensor([[1, 4], [2, 3]])
    got = DotProductAttention()(Q.to(device), K.to(device), V.to(device), lens.to(device))
    assert got.device.type == device
    torch.testing.assert_close(got.cpu(), sdpa(Q, K, V, lens)[0])


# ---------------------------------------------------------------- AdditiveAttention: references


def fresh_additive(num_hiddens: int = 8, seed: int = 0, dtype=torch.float64, **kwargs):
    torch.manual_seed(seed)
    return AdditiveAttention(num_hiddens, **kwargs).to(dtype)


@given(inputs=qkv(same_size=False), num_hiddens=st.integers(1, 6))
def test_additive_matches_loop(inputs, num_hiddens):
    Q, K, V, lens = inputs
    attention = fresh_additive(num_hiddens)
    before = clones(Q, K, V, lens)
    got = attention(Q, K, V, lens)
    assert attention.W_q.weight.shape == (num_hiddens, Q.shape[-1])
    assert attention.W_k.weight.shape == (num_hiddens, K.shape[-1])
    assert attention.w_v.weight.shape == (1, num_hiddens)
    expected, weights = ref_additive(attention, Q, K, V, lens)
    assert got.dtype == torch.float64 and got.shape == expected.shape
    torch.testing.assert_close(got, expected)
    torch.testing.assert_close(attention.attention_weights, weights)
    assert_zero_rows_for_empty_lengths(got, attention.attention_weights, lens)
    assert_unchanged(before, [Q, K, V, lens])


@given(inputs=qkv(same_size=False), num_hiddens=st.integers(1, 6), seed=st.integers(0, 3))
def test_additive_with_bias_matches_loop(inputs, num_hiddens, seed):
    Q, K, V, lens = inputs
    attention = fresh_additive(num_hiddens, seed=seed, bias=True)
    got = attention(Q, K, V, lens)
    assert attention.W_q.bias.shape == (num_hiddens,)
    assert attention.W_k.bias is None and attention.w_v.bias is None
    expected, weights = ref_additive(attention, Q, K, V, lens)
    torch.testing.assert_close(got, expected)
    torch.testing.assert_close(attention.attention_weights, weights)


def _log_weights(attention, Q, K):
    """Log-weights of every key (b, q, k); with identity values the output is the weights."""
    eye = torch.eye(K.shape[1], dtype=K.dtype).expand(K.shape[0], -1, -1)
    return attention(Q, K, eye).log()


def test_additive_score_is_odd_without_bias_and_not_with_one():
    """Without biases tanh(W_q(-q) + W_k(-k)) = -tanh(W_q q + W_k k), so a(-q, -k) = -a(q, k):
    log p(q, K) + log p(-q, -K) is the same for every key of a row (softmax ignores a constant
    per row), and the best key of (q, K) is the worst of (-q, -K). A bias on W_q breaks it."""
    g = torch.Generator().manual_seed(9)
    Q = torch.randn(3, 4, 5, generator=g, dtype=torch.float64)
    K = 2 * torch.randn(3, 6, 3, generator=g, dtype=torch.float64)
    odd = fresh_additive(8)
    both = _log_weights(odd, Q, K) + _log_weights(odd, -Q, -K)  # (b, q, k)
    torch.testing.assert_close(both - both[..., :1], torch.zeros_like(both))
    assert torch.equal(_log_weights(odd, Q, K).argmax(-1), _log_weights(odd, -Q, -K).argmin(-1))
    biased = fresh_additive(8, bias=True)
    _log_weights(biased, Q, K)  # the first call fixes the lazy layers' sizes
    with torch.no_grad():
        biased.W_q.weight.copy_(odd.W_q.weight)
        biased.W_k.weight.copy_(odd.W_k.weight)
        biased.w_v.weight.copy_(odd.w_v.weight)
        biased.W_q.bias.fill_(1.0)
    both = _log_weights(biased, Q, K) + _log_weights(biased, -Q, -K)
    assert (both - both[..., :1]).abs().max() > 0.1


@pytest.mark.parametrize(
    ("bias", "pattern"),
    [("False", r"bias must be True or False, got 'False'"), (1, r"bias.*1"), (None, r"bias.*None")],
)
def test_additive_bad_bias(bias, pattern):
    with pytest.raises(TypeError, match=pattern):
        AdditiveAttention(4, bias=bias)


def test_additive_float32_matches_loop():
    g = torch.Generator().manual_seed(5)
    Q, K, V = (
        torch.randn(2, 3, 5, generator=g),
        torch.randn(2, 4, 2, generator=g),
        torch.randn(2, 4, 3),
    )
    lens = torch.tensor([2, 4])
    attention = fresh_additive(dtype=torch.float32)
    got = attention(Q, K, V, lens)
    assert got.dtype == torch.float32
    expected, _ = ref_additive(attention, Q, K, V, lens)
    torch.testing.assert_close(got, expected.float())


def test_additive_has_no_biases_and_reuses_its_weights():
    attention = fresh_additive(4)
    g = torch.Generator().manual_seed(6)
    Q, K, V = (torch.randn(1, 2, 3, generator=g, dtype=torch.float64) for _ in range(3))
    attention(Q, K, V)
    assert attention.W_q.bias is None and attention.W_k.bias is None and attention.w_v.bias is None
    first = [p.detach().clone() for p in attention.parameters()]
    attention(Q, K, V)
    assert all(torch.equal(a, b) for a, b in zip(first, attention.parameters()))


@given(inputs=qkv(same_size=False, lens_kind="none"), data=st.data())
def test_additive_permuting_keys_and_values(inputs, data):
    Q, K, V, _ = inputs
    perm = torch.tensor(data.draw(st.permutations(range(K.shape[1]))))
    assert_permutation_invariant(fresh_additive(), Q, K, V, perm)


def test_additive_gradients_reach_every_parameter():
    g = torch.Generator().manual_seed(7)
    Q = torch.randn(2, 3, 4, generator=g, dtype=torch.float64, requires_grad=True)
    K = torch.randn(2, 5, 2, generator=g, dtype=torch.float64, requires_grad=True)
    V = torch.randn(2, 5, 3, generator=g, dtype=torch.float64, requires_grad=True)
    attention = fresh_additive()
    (attention(Q, K, V, torch.tensor([3, 0])) ** 2).sum().backward()
    for tensor in (Q, K, V, *attention.parameters()):
        assert tensor.grad is not None and torch.isfinite(tensor.grad).all()
        assert tensor.grad.abs().sum() > 0
    assert torch.all(K.grad[0, 3:] == 0) and torch.all(V.grad[0, 3:] == 0)
    assert torch.all(K.grad[1] == 0) and torch.all(V.grad[1] == 0)


def test_additive_dropout_only_in_training():
    g = torch.Generator().manual_seed(8)
    Q, K = torch.randn(2, 3, 4, generator=g), torch.randn(2, 6, 3, generator=g)
    eye = torch.eye(6).expand(2, 6, 6)
    attention = fresh_additive(dtype=torch.float32, dropout=0.25).eval()
    weights = attention(Q, K, eye)
    attention.train()
    torch.manual_seed(0)
    dropped = attention(Q, K, eye)
    torch.testing.assert_close(attention.attention_weights, weights)
    kept = dropped != 0
    assert (~kept).any()
    torch.testing.assert_close(dropped[kept], weights[kept] / 0.75)


def test_additive_device(device):
    g = torch.Generator().manual_seed(9)
    Q, K, V = (
        torch.randn(2, 2, 3, generator=g),
        torch.randn(2, 4, 5, generator=g),
        torch.randn(2, 4, 2),
    )
    attention = fresh_additive(dtype=torch.float32).to(device)
    got = attention(Q.to(device), K.to(device), V.to(device), torch.tensor([1, 4], device=device))
    assert got.device.type == device
    expected, _ = ref_additive(attention.cpu(), Q, K, V, torch.tensor([1, 4]))
    torch.testing.assert_close(got.cpu(), expected.float())


# ---------------------------------------------------------------- bad input (both layers)


def good_qkv(d_q=4, d_k=4):
    return torch.ones(2, 3, d_q), torch.ones(2, 5, d_k), torch.ones(2, 5, 6)


@pytest.mark.parametrize("layer", [DotProductAttention, lambda **kw: AdditiveAttention(4, **kw)])
@pytest.mark.parametrize(
    ("dropout", "error", "pattern"),
    [
        (-0.1, ValueError, r"dropout must be in \[0, 1\), got -0\.1"),
        (1.0, ValueError, r"dropout.*got 1\.0"),
        (1.5, ValueError, r"dropout.*1\.5"),
        (float("nan"), ValueError, r"dropout.*nan"),
        ("0.1", TypeError, r"dropout must be a real number, got '0\.1'"),
        (True, TypeError, r"dropout.*True"),
        (None, TypeError, r"dropout.*None"),
    ],
)
def test_bad_dropout(layer, dropout, error, pattern):
    with pytest.raises(error, match=pattern):
        layer(dropout=dropout)


@pytest.mark.parametrize(
    ("num_hiddens", "error", "pattern"),
    [
        (0, ValueError, r"num_hiddens must be >= 1, got 0"),
        (-4, ValueError, r"num_hiddens.*-4"),
        (2.5, TypeError, r"num_hiddens must be an integer, got 2\.5"),
        (8.0, TypeError, r"num_hiddens.*8\.0"),
        (True, TypeError, r"num_hiddens.*True"),
        ("8", TypeError, r"num_hiddens.*'8'"),
    ],
)
def test_additive_bad_num_hiddens(num_hiddens, error, pattern):
    with pytest.raises(error, match=pattern):
        AdditiveAttention(num_hiddens)


Q0, K0, V0 = good_qkv()
COMMON_BAD = [
    ((Q0.tolist(), K0, V0), TypeError, r"queries must be a torch\.Tensor"),
    ((Q0, None, V0), TypeError, r"keys must be a torch\.Tensor.*None"),
    ((Q0, K0, 1.0), TypeError, r"values must be a torch\.Tensor.*1\.0"),
    ((Q0[0], K0, V0), ValueError, r"queries must be 3-D.*\(3, 4\)"),
    ((Q0, K0[..., None], V0), ValueError, r"keys must be 3-D.*\(2, 5, 4, 1\)"),
    ((Q0, K0, V0[0]), ValueError, r"values must be 3-D.*\(5, 6\)"),
    ((Q0.long(), K0, V0), TypeError, r"queries must have a floating-point dtype, got torch\.int64"),
    ((Q0, K0.bool(), V0), TypeError, r"keys must have a floating-point dtype.*bool"),
    ((Q0, K0, V0.int()), TypeError, r"values must have a floating-point dtype.*int32"),
    ((Q0[:1], K0, V0), ValueError, r"same batch size.*\(1, 3, 4\), \(2, 5, 4\) and \(2, 5, 6\)"),
    ((Q0, K0, V0[:1]), ValueError, r"same batch size"),
    (
        (Q0, K0[:, :4], V0),
        ValueError,
        r"keys and values must hold the same number.*\(2, 4, 4\).*\(2, 5, 6\)",
    ),
]
BAD_LENS = [
    (torch.tensor([1, 2, 3]), ValueError, r"valid_lens must have shape \(2,\) or \(2, 3\).*\(3,\)"),
    (torch.ones(2, 5, dtype=torch.long), ValueError, r"valid_lens.*\(2, 5\)"),
    (torch.tensor([1, 6]), ValueError, r"valid_lens must lie in \[0, 5\].*got 6"),
    (torch.tensor([-1, 2]), ValueError, r"valid_lens.*\[0, 5\].*-1"),
    (torch.tensor([1.5, 2.0]), ValueError, r"valid_lens must hold whole numbers.*1\.5"),
    (torch.tensor([True, False]), TypeError, r"valid_lens.*bool"),
    ("2", TypeError, r"valid_lens.*'2'"),
]


@pytest.mark.parametrize(("args", "error", "pattern"), COMMON_BAD)
@pytest.mark.parametrize("make", [DotProductAttention, lambda: AdditiveAttention(4)])
def test_bad_queries_keys_values(make, args, error, pattern):
    with pytest.raises(error, match=pattern):
        make()(*args)


@pytest.mark.parametrize(("lens", "error", "pattern"), BAD_LENS)
@pytest.mark.parametrize("make", [DotProductAttention, lambda: AdditiveAttention(4)])
def test_bad_valid_lens(make, lens, error, pattern):
    with pytest.raises(error, match=pattern):
        make()(Q0, K0, V0, lens)


def test_dot_product_feature_size_mismatch():
    with pytest.raises(
        ValueError, match=r"queries and keys must have the same feature size.*3 and 4"
    ):
        DotProductAttention()(*good_qkv(d_q=3, d_k=4))


def test_additive_accepts_different_query_and_key_sizes():
    out = fresh_additive(dtype=torch.float32)(*good_qkv(d_q=3, d_k=7))
    assert out.shape == (2, 3, 6)


@pytest.mark.parametrize(
    ("second", "pattern"),
    [
        (good_qkv(d_q=5, d_k=7), r"queries must have 3 features.*got shape \(2, 3, 5\)"),
        (good_qkv(d_q=3, d_k=2), r"keys must have 7 features.*got shape \(2, 5, 2\)"),
    ],
)
def test_additive_called_again_with_other_feature_sizes(second, pattern):
    attention = fresh_additive(dtype=torch.float32)
    attention(*good_qkv(d_q=3, d_k=7))
    with pytest.raises(ValueError, match=pattern):
        attention(*second)
    # The layer still works with the sizes it was first called with.
    assert attention(*good_qkv(d_q=3, d_k=7)).shape == (2, 3, 6)
