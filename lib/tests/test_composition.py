"""Path ablation (attnbook.composition): layer 0 removed from some of layer 1's reads."""

import math

import pytest
import torch

from attnbook import composition, induction


def _model_and_batch(seed=0):
    model = induction.AttentionOnlyTransformer(
        vocab=16, num_hiddens=8, num_heads=2, max_len=20, seed=seed
    )
    batch = induction.make_repeat_batch(32, length=20, segment=6, vocab=16, max_gap=4, seed=seed)
    return model, batch


def test_no_path_is_the_plain_model_and_all_paths_remove_layer_0():
    model, batch = _model_and_batch()
    assert composition.path_ablation_accuracy(model, batch, ()) == induction.copy_accuracy(
        model, batch
    )
    everything = composition.path_ablation_accuracy(model, batch, composition.PATHS)
    assert everything == induction.copy_accuracy(model, batch, ablate=[(0, 0), (0, 1)])


def test_each_read_takes_its_own_stream():
    # A reference written out by hand: queries from xq, keys from xk, values from xv.
    torch.manual_seed(0)
    layer = induction.CausalAttentionLayer(8, 2)
    xq, xk, xv = (torch.randn(3, 5, 8) for _ in range(3))
    p = layer.head_size
    q = (xq @ layer.W_q.weight.T).reshape(3, 5, 2, p).transpose(1, 2)
    k = (xk @ layer.W_k.weight.T).reshape(3, 5, 2, p).transpose(1, 2)
    v = (xv @ layer.W_v.weight.T).reshape(3, 5, 2, p).transpose(1, 2)
    scores = (q @ k.transpose(-1, -2) / math.sqrt(p)).masked_fill(
        ~torch.ones(5, 5, dtype=torch.bool).tril(), float("-inf")
    )
    heads = (torch.softmax(scores, -1) @ v).transpose(1, 2).reshape(3, 5, 8)
    expected = heads @ layer.W_o.weight.T
    with torch.no_grad():
        got = composition._layer_from(layer, xq, xk, xv)
        assert torch.allclose(got, expected, atol=1e-6)
        assert torch.allclose(composition._layer_from(layer, xq, xq, xq), layer(xq), atol=1e-6)
        assert not torch.allclose(composition._layer_from(layer, xk, xq, xv), expected, atol=1e-3)


# Trains a model for several seconds: make check's tier (conftest.py, "slow").
@pytest.mark.slow
def test_a_trained_model_composes_through_its_keys():
    model = induction.AttentionOnlyTransformer(seed=0)
    log = induction.train_induction(
        model, steps=160, batch=64, lr=3e-3, record_every=160, seed=0, copy_only=True
    )
    full = composition.path_ablation_accuracy(model, log.probe, ())
    assert full > 0.8
    assert composition.path_ablation_accuracy(model, log.probe, ("keys",)) < 0.2
    for path in ("queries", "values", "direct"):
        assert composition.path_ablation_accuracy(model, log.probe, (path,)) > full - 0.05


def test_bad_arguments_are_named():
    model, batch = _model_and_batch()
    with pytest.raises(TypeError, match="model"):
        composition.path_ablation_accuracy(torch.nn.Linear(2, 2), batch, ())
    with pytest.raises(ValueError, match="num_layers=1"):
        composition.path_ablation_accuracy(
            induction.AttentionOnlyTransformer(vocab=16, num_hiddens=8, num_layers=1, max_len=20),
            batch,
            (),
        )
    with pytest.raises(TypeError, match="batch"):
        composition.path_ablation_accuracy(model, batch.tokens, ())
    with pytest.raises(TypeError, match="paths"):
        composition.path_ablation_accuracy(model, batch, "keys")
    with pytest.raises(ValueError, match="'key'"):
        composition.path_ablation_accuracy(model, batch, ("key",))
