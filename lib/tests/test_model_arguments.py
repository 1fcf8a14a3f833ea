"""Functions that take a model refuse a model of another kind, and degenerate input, by name.

The cases here need a model or an input that the spoilings of
``test_public_api`` do not make: a working classifier of another kind (a CNN
where a TinyViT is needed, a CNN whose 10 classes the labels exceed), a model
that cannot take the images at all, seeds beyond torch's 64 bits.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from attnbook import explain, lm, vit


def _images(n=2, side=8):
    return torch.rand(n, 1, side, side, generator=torch.Generator().manual_seed(0))


def _vit():
    return vit.build_vit(seed=0, num_hiddens=8, num_heads=2, ffn_hiddens=8, num_layers=1)


def _tiny_lm():
    torch.manual_seed(0)
    return lm.TinyLM(vocab_size=11, num_hiddens=8, num_heads=2, num_layers=1, max_len=16)


def test_explanation_scores_needs_a_vit_not_any_classifier():
    # a CNN classifies the images but has no attention to explain
    with pytest.raises(TypeError, match="model must be a TinyViT, got Sequential"):
        explain.explanation_scores(vit.build_cnn(0, 4), _images(), torch.tensor([1, 2]))


@pytest.mark.parametrize(
    "call",
    [
        lambda m, x, y: explain.occlusion_scores(m, x, y, 2),
        lambda m, x, y: explain.deletion_curve(m, x, y, torch.rand(2, 64), 2),
        lambda m, x, y: vit.train_vit(m, x, y, epochs=1),
        lambda m, x, y: vit.predict_proba(m, x),
        lambda m, x, y: vit.accuracy(m, x, y),
    ],
    ids=["occlusion_scores", "deletion_curve", "train_vit", "predict_proba", "accuracy"],
)
def test_a_model_that_cannot_take_the_images_is_named(call):
    # build_mlp reads 64 pixels; 16 x 16 images have 256
    with pytest.raises(ValueError, match=r"model cannot classify .* of shape \(2, 1, 16, 16\)"):
        call(vit.build_mlp(0, 4), _images(side=16), torch.tensor([1, 2]))


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda m, y: explain.occlusion_scores(m, _images(), y, 2), "labels"),
        (lambda m, y: vit.train_vit(m, _images(), y, epochs=1), "y"),
    ],
    ids=["occlusion_scores", "train_vit"],
)
def test_labels_beyond_a_cnns_classes_are_refused(call, name):
    # the CNN has 10 classes but no `head` to read them from: they are found by running it
    with pytest.raises(ValueError, match=rf"{name} must hold ids in \[0, 9\], got 12"):
        call(vit.build_cnn(0, 4), torch.tensor([1, 12]))


def test_running_a_classifier_to_check_it_changes_nothing():
    # in train mode, batch norm would update its running statistics and dropout
    # would draw from the global random state: the check runs it in eval mode
    torch.manual_seed(0)
    net = nn.Sequential(nn.BatchNorm2d(1), nn.Flatten(), nn.Dropout(0.5), nn.Linear(64, 10))
    net.train()
    before = {k: v.clone() for k, v in net.state_dict().items()}
    state = torch.random.get_rng_state()
    with pytest.raises(ValueError, match=r"y must hold ids in \[0, 9\], got 12"):
        vit.train_vit(net, _images(), torch.tensor([1, 12]), epochs=1)
    assert net.training and all(m.training for m in net.modules())
    assert all(torch.equal(before[k], v) for k, v in net.state_dict().items())
    assert torch.equal(state, torch.random.get_rng_state())


def test_a_model_that_returns_no_logits_is_refused():
    pools = nn.Sequential(nn.AdaptiveAvgPool2d(1))  # (batch, 1, 1, 1): not (batch, classes)
    with pytest.raises(ValueError, match=r"model must return \(batch, classes\) logits"):
        vit.predict_proba(pools, _images())


def test_accuracy_of_no_images_is_refused_not_nan():
    with pytest.raises(ValueError, match=r"X must hold at least one image"):
        vit.accuracy(_vit(), _images(0), torch.zeros(0, dtype=torch.long))


def test_train_lm_refuses_a_callback_that_is_not_a_function_before_training():
    model = _tiny_lm()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    with pytest.raises(TypeError, match="callback must be a function or None, got 3"):
        lm.train_lm(model, torch.arange(40) % 11, 1, batch_size=2, callback=3)
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


@pytest.mark.parametrize(
    "call",
    [
        lambda s: vit.build_vit(s),
        lambda s: vit.build_cnn(s),
        lambda s: lm.generate(_tiny_lm(), torch.tensor([1, 2]), 1, temperature=1.0, seed=s),
        lambda s: lm.train_lm(_tiny_lm(), torch.arange(40) % 11, 1, batch_size=2, seed=s),
    ],
    ids=["build_vit", "build_cnn", "generate", "train_lm"],
)
def test_a_seed_beyond_64_bits_is_named(call):
    with pytest.raises(ValueError, match=r"seed must .*2\*\*64"):
        call(2**64)


def test_generate_names_the_model_when_the_prompt_is_beyond_its_vocabulary():
    small = lm.TinyLM(vocab_size=3, num_hiddens=8, num_heads=2, num_layers=1, max_len=16)
    with pytest.raises(ValueError, match=r"ids must hold ids in \[0, 2\].*model has vocab_size=3"):
        lm.generate(small, torch.tensor([1, 2, 3]), 1)


def test_corpus_loss_names_a_model_of_another_vocabulary():
    with pytest.raises(ValueError, match="model has a vocabulary of 11 tokens"):
        lm.corpus_loss(_tiny_lm(), "the keys.")
