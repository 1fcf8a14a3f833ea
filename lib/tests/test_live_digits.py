"""Tests of chapter 15's live explorer, Python side (attnbook.widgets.live.digits).

The JavaScript forward pass, rollout and occlusion are checked against PyTorch
by `node --test tests/live/` (digits.test.mjs, runtime_digits.test.mjs) and in
headless Chromium by tests/test_live_browser_digits.py. `make
test-widgets-ipyw7` can run this file under ipywidgets 7.7.1 (.venv-colab).
"""

import base64
import re

import ipywidgets
import pytest
import torch

from attnbook import explain
from attnbook.vit import TinyViT, build_vit
from attnbook.widgets import live
from attnbook.widgets.live import _pack_digits
from attnbook.widgets.live.digits import (
    FILLS,
    describe,
    fill_image,
    fixture_images,
    load_chapter_weights,
    run,
)


def test_shipped_extras_are_the_chapters_mean_image_and_test_digits():
    pytest.importorskip("sklearn")
    from attnbook.digits import load_digits_split
    from attnbook.vit_study import fills

    _, arch, extras = load_chapter_weights()
    data = load_digits_split()
    assert extras == _pack_digits.chapter_extras(data.X_train, data.X_test, data.y_test)
    mean = fills(data)["mean image"].reshape(-1)
    assert torch.equal(torch.tensor(extras["mean_image"], dtype=torch.float32), mean)
    for example in extras["examples"]:
        assert int(data.y_test[example["index"]]) == example["label"]
    assert arch["num_hiddens"] == 64 and arch["num_layers"] == 2 and arch["num_heads"] == 4


def test_pack_and_unpack_round_trip_to_float16():
    model = build_vit(3, num_hiddens=8, num_heads=2, ffn_hiddens=8, num_layers=1)
    weights, arch = _pack_digits.pack_vit(model)
    assert len(weights) == 2 * sum(p.numel() for p in model.parameters())
    back = _pack_digits.unpack_vit(weights, arch)
    for (name, a), (_, b) in zip(model.named_parameters(), back.named_parameters(), strict=True):
        assert torch.equal(a.detach().half().float(), b.detach()), name
    with pytest.raises(ValueError, match=r"weights must hold \d+ float16 values for this arch"):
        _pack_digits.unpack_vit(weights[:-2], arch)
    with pytest.raises(ValueError, match="arch must be a tiny-vit arch"):
        _pack_digits.unpack_vit(weights, {**arch, "model": "attention-only"})


def test_bad_models_and_inputs_are_refused_by_name():
    with pytest.raises(TypeError, match="model must be an attnbook.vit.TinyViT"):
        _pack_digits.pack_vit(torch.nn.Linear(2, 2))
    with pytest.raises(TypeError, match="model must be an attnbook.vit.TinyViT"):
        live.digits_live("a model")
    with pytest.raises(ValueError, match="model must read 8x8 one-channel images"):
        live.digits_live(TinyViT(image_size=4))
    model = build_vit(0, num_layers=1)
    with torch.no_grad():
        model.embed.weight[0, 0] = 1e6
    with pytest.raises(ValueError, match="embed.weight exceeds the float16 range"):
        _pack_digits.pack_vit(model)
    with pytest.raises(ValueError, match="fill must be one of"):
        live.digits_live(fill="grey")
    with pytest.raises(ValueError, match="pixels must hold 64 numbers"):
        live.digits_live(pixels=[0.0] * 63)
    with pytest.raises(ValueError, match=r"pixels must be numbers in \[0, 1\], got 2"):
        live.digits_live(pixels=[2] + [0] * 63)
    with pytest.raises(TypeError, match="pixels must be 64 numbers"):
        live.digits_live(pixels="0" * 64)
    with pytest.raises(ValueError, match="ink levels"):
        _pack_digits.ink_levels(torch.full((1, 8, 8), 0.3))


def test_run_is_the_libraries_explanations_on_the_float16_model():
    weights, arch, extras = load_chapter_weights()
    model = _pack_digits.unpack_vit(weights, arch)
    pixels = fixture_images(extras)["test digit"]
    image = torch.tensor(pixels).reshape(1, 1, 8, 8)
    for fill in FILLS:
        out = run(weights, arch, pixels, fill_image(fill, extras))
        label = torch.tensor([out["predicted"]])
        scores = explain.explanation_scores(
            model, image, label, fill=torch.tensor(fill_image(fill, extras)).reshape(1, 8, 8)
        )
        for key in ("raw attention", "rollout", "occlusion"):
            mine = out["raw" if key == "raw attention" else key]
            assert torch.allclose(mine, scores[key][0], atol=1e-7), key
    assert out["predicted"] == 3  # the test digit is examples[3], a 3, read right


def test_widget_carries_weights_pixels_and_fill():
    widget = live.digits_live(fill="mean image")
    assert isinstance(widget, ipywidgets.DOMWidget)
    weights, arch, extras = load_chapter_weights()
    assert widget.weights == weights and widget.arch == arch
    assert widget.mean_image == extras["mean_image"] and len(widget.examples) == 10
    assert widget.pixels == [v / 16 for v in extras["examples"][7]["ink"]]
    state = widget.get_state()
    assert {"weights", "arch", "pixels", "fill", "examples", "mean_image", "_esm"} <= set(state)
    assert repr(widget).startswith("DigitsLive(blocks=2, heads=4, width=64, fill='mean image', ")
    data, _ = widget._repr_mimebundle_()
    assert data["application/vnd.jupyter.widget-view+json"]["model_id"] == widget.model_id
    assert base64.b64decode(data["image/png"])[:4] == b"\x89PNG"


def test_a_model_the_reader_trains_can_be_handed_over():
    model = build_vit(4, num_layers=1)
    widget = live.digits_live(model, pixels=torch.zeros(1, 8, 8))
    assert widget.arch["num_layers"] == 1
    out = widget.forward()
    with torch.no_grad():
        expected = model(torch.zeros(1, 1, 8, 8))[0]
    assert (out["logits"] - expected).abs().max() < 0.05  # float16 weights
    widget.set_model(build_vit(5))
    assert widget.arch["num_layers"] == 2


def test_status_sentence_and_blank_note():
    widget = live.digits_live()
    out = widget.forward()
    sentence = widget.alt_text()
    assert sentence.startswith(f"The model reads a {out['predicted']}, with probability ")
    assert "fill: zero (blank paper)" in sentence
    blank = live.digits_live(pixels=[0.0] * 64)
    # Zero fill on a blank page: hiding a patch changes nothing, and the page says so.
    assert "by less than 0.005." in blank.alt_text()
    assert "The grid is blank" in blank.summary()
    out["occlusion"] = -out["occlusion"]
    assert "it rises by" in describe(out, "zero")


def test_the_page_starts_from_the_drawing_and_the_fill():
    # The fragment carries widget._state() (test_live.py checks that for the four).
    widget = live.digits_live()
    state = widget._state()
    assert base64.b64decode(state["weights"]) == widget.weights
    assert state["pixels"] == widget.pixels and state["fill"] == "zero"
    assert len(state["mean_image"]) == 64 and "The model reads a" in widget.summary()


def test_another_patch_size_and_depth_render_with_their_own_sizes():
    # The picture, the fragment and its alt text follow the model's patches (4 x 4: 4 of
    # them) and blocks (3), as the page's captions do (tests/test_live_browser_digits.py).
    widget = live.digits_live(TinyViT(patch_size=4, num_layers=3))
    out = widget.forward()
    assert out["raw"].shape == out["occlusion"].shape == (4,)
    assert base64.b64decode(widget._repr_mimebundle_()[0]["image/png"])[:4] == b"\x89PNG"
    assert re.search(r"on patch [0-3]; rollout on patch [0-3]\.", widget.alt_text())
    assert '"patch_size":4' in widget.to_html() and '"num_layers":3' in widget.to_html()
