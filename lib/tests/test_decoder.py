"""Tests of attnbook.decoder: the decoder layer against torch.nn.TransformerDecoderLayer."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from attnbook.dates import SOURCE_VOCAB, TARGET_VOCAB, DateTask
from attnbook.decoder import TransformerDecoderLayer, TransformerSeq2Seq, causal_lens


def torch_layer(D=8, heads=2, ffn=16, norm_first=True, seed=0, dtype=torch.float64, **kwargs):
    torch.manual_seed(seed)
    layer = nn.TransformerDecoderLayer(
        D, heads, ffn, dropout=0.0, activation="relu", batch_first=True,
        norm_first=norm_first, dtype=dtype, **kwargs,
    )  # fmt: skip
    # Every parameter randomised (norm weights near 1), so that a missed or
    # swapped copy (norm2 for norm3, self- for cross-attention) shows.
    with torch.no_grad():
        for name, p in layer.named_parameters():
            if name.startswith("norm") and name.endswith("weight"):
                p.uniform_(0.5, 1.5)
            else:
                p.normal_(0.0, 0.5)
    return layer.eval()


def inputs(b=3, m=5, n=7, D=8, seed=1):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(b, m, D, generator=g, dtype=torch.float64)
    memory = torch.randn(b, n, D, generator=g, dtype=torch.float64)
    lens = torch.tensor([n, 1, 4])[:b]
    return X, memory, lens


@pytest.mark.parametrize("norm_first", [True, False])
@pytest.mark.parametrize("heads", [1, 2, 4])
def test_matches_torch_decoder_layer_with_both_masks(norm_first, heads):
    layer = torch_layer(8, heads, 16, norm_first, seed=heads)
    mine = TransformerDecoderLayer.from_torch(layer).eval()
    X, memory, lens = inputs()
    m, n = X.shape[1], memory.shape[1]
    causal = nn.Transformer.generate_square_subsequent_mask(m, dtype=torch.float64)
    padding = torch.arange(n) >= lens[:, None]  # (b, n), True = padding
    with torch.no_grad():
        expected = layer(X, memory, tgt_mask=causal, memory_key_padding_mask=padding)
        got = mine(X, memory, lens)
    torch.testing.assert_close(got, expected, rtol=1e-10, atol=1e-10)
    # And without masks.
    with torch.no_grad():
        torch.testing.assert_close(
            mine(X, memory, causal=False), layer(X, memory), rtol=1e-10, atol=1e-10
        )


@pytest.mark.parametrize("norm_first", [True, False])
def test_matches_torch_in_float32_with_gradients(norm_first):
    layer = torch_layer(16, 4, 32, norm_first, seed=3, dtype=torch.float32)
    mine = TransformerDecoderLayer.from_torch(layer).eval()
    X, memory, lens = (t.float() if t.is_floating_point() else t for t in inputs(D=16))
    X1, X2 = X.clone().requires_grad_(), X.clone().requires_grad_()
    causal = nn.Transformer.generate_square_subsequent_mask(X.shape[1])
    padding = torch.arange(memory.shape[1]) >= lens[:, None]
    expected = layer(X1, memory, tgt_mask=causal, memory_key_padding_mask=padding)
    got = mine(X2, memory, lens)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
    expected.square().sum().backward()
    got.square().sum().backward()
    scale = X1.grad.abs().max()
    torch.testing.assert_close(X2.grad / scale, X1.grad / scale, rtol=1e-4, atol=1e-4)


def test_weights_causal_and_padding():
    layer = TransformerDecoderLayer(8, 2, 16).double().eval()
    X, memory, lens = inputs()
    layer(X, memory, lens)
    self_w, cross_w = layer.self_attention_weights, layer.cross_attention_weights
    assert self_w.shape == (3, 2, 5, 5) and cross_w.shape == (3, 2, 5, 7)
    assert torch.all(self_w.triu(1) == 0)  # no query sees a later target position
    for i, length in enumerate(lens.tolist()):
        assert torch.all(cross_w[i, :, :, length:] == 0)  # padding gets nothing
    torch.testing.assert_close(cross_w.sum(-1), torch.ones(3, 2, 5, dtype=torch.float64))


def test_outputs_ignore_later_targets_and_padded_memory():
    layer = TransformerDecoderLayer(8, 2, 16).double().eval()
    X, memory, lens = inputs()
    out = layer(X, memory, lens)
    X2, memory2 = X.clone(), memory.clone()
    X2[:, 3:] += 5.0  # change later targets
    memory2[1, 1:] = -7.0  # change source 1's padding (its length is 1)
    out2 = layer(X2, memory2, lens)
    torch.testing.assert_close(out2[:, :3], out[:, :3])
    torch.testing.assert_close(layer(X, memory2, lens), out)


def test_causal_lens():
    assert causal_lens(2, 3).tolist() == [[1, 2, 3], [1, 2, 3]]


def test_does_not_modify_inputs():
    layer = TransformerDecoderLayer(8, 2, 16).double()
    X, memory, lens = inputs()
    copies = X.clone(), memory.clone(), lens.clone()
    layer(X, memory, lens)
    for a, b in zip((X, memory, lens), copies):
        assert torch.equal(a, b)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"batch_first": False}, "batch_first"),
        ({"activation": "gelu"}, "activation"),
        ({"bias": False}, "bias"),
    ],
)
def test_from_torch_refuses_layers_it_cannot_copy(kwargs, match):
    base = {"dropout": 0.0, "batch_first": True}
    base.update(kwargs)
    layer = nn.TransformerDecoderLayer(8, 2, 16, **base)
    with pytest.raises(ValueError, match=match):
        TransformerDecoderLayer.from_torch(layer)
    with pytest.raises(TypeError, match="TransformerDecoderLayer"):
        TransformerDecoderLayer.from_torch(nn.TransformerEncoderLayer(8, 2, 16, batch_first=True))


def test_bad_input():
    layer = TransformerDecoderLayer(8, 2, 16)
    X, memory = torch.randn(2, 3, 8), torch.randn(2, 4, 8)
    with pytest.raises(ValueError, match="num_heads=3 must divide num_hiddens=8"):
        TransformerDecoderLayer(8, 3, 16)
    with pytest.raises(TypeError, match="norm_first"):
        TransformerDecoderLayer(8, 2, 16, norm_first="yes")
    with pytest.raises(ValueError, match="memory must have num_hiddens=8"):
        layer(X, torch.randn(2, 4, 6))
    with pytest.raises(ValueError, match="same batch size"):
        layer(X, torch.randn(3, 4, 8))
    with pytest.raises(ValueError, match=r"memory_lens must lie in \[0, 4\]"):
        layer(X, memory, torch.tensor([5, 1]))
    with pytest.raises(ValueError, match=r"memory_lens must have shape \(2,\)"):
        layer(X, memory, torch.tensor([1, 2, 3]))
    with pytest.raises(TypeError, match="X must be a torch.Tensor"):
        layer([[1.0]], memory)
    with pytest.raises(TypeError, match="causal"):
        layer(X, memory, causal=1)
    with pytest.raises(TypeError, match="scale_embeddings must be True or False"):
        TransformerSeq2Seq(45, 12, scale_embeddings=1)
    for bad in (0.0, -1.0, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="position_scale must be"):
            TransformerSeq2Seq(45, 12, position_scale=bad)
    with pytest.raises(TypeError, match="position_scale must be"):
        TransformerSeq2Seq(45, 12, position_scale="8")


def test_seq2seq_transformer_embedding_scale():
    """With the scale, symbols enter at sqrt(D) times their table; without, as they are."""
    tokens = torch.tensor([[1, 2, 3]])
    for flag, factor in ((True, 4.0), (False, 1.0)):
        torch.manual_seed(0)
        model = TransformerSeq2Seq(45, 12, num_hiddens=16, num_heads=2, scale_embeddings=flag)
        X = model._embed(tokens, model.source_embedding, model.source_positions)
        expected = model.source_embedding(tokens) * factor + model.source_positions.weight[:3]
        torch.testing.assert_close(X, expected)


def test_seq2seq_transformer_position_scale():
    """position_scale multiplies the position table only, on both sides, and
    leaves the initial weights unchanged (same seed, same tables)."""
    source, target = torch.tensor([[1, 2, 3]]), torch.tensor([[0, 4, 5, 6]])
    for flag, factor, pos in ((True, 4.0, 4.0), (False, 1.0, 0.25)):
        torch.manual_seed(0)
        plain = TransformerSeq2Seq(45, 12, num_hiddens=16, num_heads=2, scale_embeddings=flag)
        torch.manual_seed(0)
        model = TransformerSeq2Seq(
            45, 12, num_hiddens=16, num_heads=2, scale_embeddings=flag, position_scale=pos
        )
        for a, b in zip(plain.parameters(), model.parameters(), strict=True):
            assert torch.equal(a, b)
        X = model._embed(source, model.source_embedding, model.source_positions)
        expected = model.source_embedding(source) * factor + model.source_positions.weight[:3] * pos
        torch.testing.assert_close(X, expected)
        Y = model._embed(target, model.target_embedding, model.target_positions)
        expected = model.target_embedding(target) * factor + model.target_positions.weight[:4] * pos
        torch.testing.assert_close(Y, expected)


def test_seq2seq_transformer_trains_and_decodes():
    torch.manual_seed(0)
    model = TransformerSeq2Seq(len(SOURCE_VOCAB), len(TARGET_VOCAB), num_hiddens=16, num_heads=2)
    batch = DateTask(0).test_batch(6)
    logits = model(batch.source, batch.source_lens, batch.decoder_input())
    assert logits.shape == (6, 10, len(TARGET_VOCAB))
    tokens, weights = model.greedy(batch.source, batch.source_lens, 10)
    assert tokens.shape == (6, 10) and weights.shape == (6, 2, 10, batch.source.shape[1])
    # Greedy decoding equals teacher forcing on its own outputs.
    start = torch.zeros(6, 1, dtype=torch.long)
    again = model(batch.source, batch.source_lens, torch.cat([start, tokens[:, :-1]], 1))
    assert torch.equal(again.argmax(-1), tokens)
    for i, length in enumerate(batch.source_lens.tolist()):
        assert torch.all(weights[i, :, :, length:] == 0)
