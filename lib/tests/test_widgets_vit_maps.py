"""Chapter 15's explorer: its stops, its numbers, and its refusals."""

from __future__ import annotations

import pytest
import torch

from attnbook import widgets
from attnbook.explain import attention_rollout, occlusion_scores, spearman
from attnbook.vit import build_vit


@pytest.fixture(scope="module")
def setup():
    g = torch.Generator().manual_seed(1)
    images = torch.rand(6, 1, 8, 8, generator=g)
    labels = torch.tensor([0, 1, 2, 3, 4, 5])
    return build_vit(0).eval(), images, labels


def test_stops_and_numbers_agree_with_the_library(setup):
    model, images, labels = setup
    explorer = widgets.vit_maps_explorer(model, images, labels, indices=[1, 4])
    assert explorer.stops[-2:] == ["rollout", "occlusion"] and len(explorer.stops) == 12
    # Blocks and heads count from 0, as everywhere in the book, and the stops say
    # "block", the chapter's word for one of the ViT's Transformer blocks.
    assert explorer.stops[:2] == ["block 0, mean of heads", "block 0, head 0"]
    assert explorer.stops[9] == "block 1, head 3"
    assert not any("layer" in stop for stop in explorer.stops)
    assert [v for _, v in explorer.menu.options] == [1, 4]
    model(images[[4]])
    rollout = attention_rollout(model.attention_weights)[:, 0, 1:]
    occlusion = occlusion_scores(model, images[[4]], labels[[4]], 2)
    rho = float(spearman(rollout.double(), occlusion.double())[0])
    assert f"Spearman correlation with occlusion {rho:+.2f}" in explorer.alt_text("rollout", 4)
    assert "Test image 4, a 4" in explorer.alt_text("occlusion", 4)
    assert explorer.frame("block 0, head 1", 1) != explorer.frame("block 1, head 1", 1)


def test_default_images_mix_right_and_wrong(setup):
    model, images, labels = setup
    with torch.no_grad():
        pred = model(images).argmax(-1)
    chosen = widgets.vit_maps.default_images(model, images, labels, right=2, wrong=2)
    right = [i for i in chosen if pred[i] == labels[i]]
    wrong = [i for i in chosen if pred[i] != labels[i]]
    assert len(wrong) == min(2, int((pred != labels).sum())) and len(right) <= 2
    assert chosen == sorted(chosen)


def test_bad_arguments_are_named(setup):
    model, images, labels = setup
    with pytest.raises(TypeError, match="TinyViT"):
        widgets.vit_maps_explorer(torch.nn.Linear(2, 2), images, labels)
    with pytest.raises(ValueError, match="indices must be integers in"):
        widgets.vit_maps_explorer(model, images, labels, indices=[0, 9])
    with pytest.raises(ValueError, match="at least 2 distinct"):
        widgets.vit_maps_explorer(model, images, labels, indices=[1, 1])
    with pytest.raises(ValueError, match="method must be one of"):
        widgets.vit_maps_explorer(model, images, labels, indices=[0, 1], method="saliency")
    with pytest.raises(ValueError, match="as many examples"):
        widgets.vit_maps_explorer(model, images, labels[:3])


def test_the_maps_carry_the_patch_grid_and_numbers(setup):
    model, images, labels = setup
    explorer = widgets.vit_maps_explorer(model, images, labels, indices=[1, 4])
    fig = explorer._renderer.fig
    for ax in fig.axes[:2]:  # the map and occlusion
        numbers = sorted(int(t.get_text()) for t in ax.texts)
        assert numbers == list(range(16))
        assert len(ax.lines) == 6  # 3 inner horizontal and 3 inner vertical lines
    # drawn over the pictures: a frame has the grid's blue where a patch border is
    rgb = explorer._renderer.rgb(("rollout", 1)).astype(int)
    box = fig.axes[0].get_window_extent()  # the map's panel, in pixels from the bottom left
    top, bottom = rgb.shape[0] - int(box.y1), rgb.shape[0] - int(box.y0)
    panel = rgb[top:bottom, int(box.x0) : int(box.x1)]
    assert ((panel[..., 2] - panel[..., 0]) > 60).sum() > 100
    # the alt text counts patches, rows and columns from 0, as the figure does
    text = explorer.alt_text("rollout", 4)
    assert "(row " in text and "from 0)" in text


def test_the_explorer_works_with_a_model_on_any_device(setup, device):
    model, images, labels = setup
    on_cpu = widgets.vit_maps_explorer(model, images, labels, indices=[1, 4])
    moved = build_vit(0).to(device).eval()
    explorer = widgets.vit_maps_explorer(moved, images, labels, indices=[1, 4])
    assert explorer.alt_text("rollout", 4) == on_cpu.alt_text("rollout", 4)
    assert explorer.frame("block 1, head 2", 1)
