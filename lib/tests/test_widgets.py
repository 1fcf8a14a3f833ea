"""Tests of the slider explorers: live widget, frames, static HTML fragment.

`make test` runs this file twice: with ipywidgets 8 (.venv) and with
ipywidgets 7.7.1 (.venv-colab, the Colab-like environment).
"""

import base64
import html
import io
import json
import math
import re

import ipywidgets
import numpy as np
import pytest
import torch
from PIL import Image

from attnbook import lm, widgets
from attnbook.data import make_regression_data
from attnbook.masking import masked_softmax
from attnbook.pooling import nadaraya_watson
from attnbook.training import RecallAttention, train_recall

EXPLORERS = {
    "kernel_width": widgets.kernel_width_explorer,
    "kernel_and_width": lambda: widgets.kernel_width_explorer(kernels="all"),
    "valid_length": widgets.valid_length_explorer,
    "query_position": widgets.query_position_explorer,
    "dimension": widgets.dimension_explorer,
    "offset": widgets.offset_explorer,
    "training_steps": lambda: widgets.training_steps_explorer(small_training_log()),
    "induction_steps": lambda: widgets.induction_steps_explorer(small_induction_log()),
    "tiles": widgets.tiles_explorer,
    "norm_placement": lambda: widgets.norm_placement_explorer(depths=[1, 2, 4], value=2),
    "heads": widgets.heads_explorer,
    "decoding": lambda: widgets.decoding_explorer(*lm.load_checkpoint(), "The query sees"),
    "alignment": lambda: widgets.alignment_explorer(small_alignment_log()),
    "rope_dial": widgets.rope_dial_explorer,
    "vit_maps": lambda: small_vit_maps(),
}


def small_alignment_log():
    from attnbook import seq2seq

    probe = seq2seq.figure_probe()
    return seq2seq.train_dates(0, True, 6, record=(0, 3, 6), probe=probe, test_size=40)[1]


def small_vit_maps():
    """Chapter 15's explorer over an untrained ViT and random images (no scikit-learn)."""
    from attnbook.vit import build_vit

    g = torch.Generator().manual_seed(0)
    images = torch.rand(5, 1, 8, 8, generator=g)
    labels = torch.tensor([3, 1, 4, 1, 5])
    return widgets.vit_maps_explorer(build_vit(0), images, labels, indices=[0, 2, 4])


def small_induction_log():
    from attnbook.induction import AttentionOnlyTransformer, train_induction

    model = AttentionOnlyTransformer(vocab=16, num_hiddens=16, num_layers=2, max_len=20, seed=0)
    task = {"segment": 5, "max_gap": 4}
    return train_induction(
        model, steps=20, batch=8, record_every=5, probe_size=8, copy_only=True, task=task
    )


def small_training_log():
    model = RecallAttention(8, seed=0)
    return train_recall(
        model, steps=40, batch=16, n=5, lr=1.0, record_at=[5, 10, 20], probe_size=32
    )


@pytest.fixture(scope="module", params=list(EXPLORERS))
def explorer(request):
    return EXPLORERS[request.param]()


# explorer.to_html() encodes every frame (a second or more for the larger
# explorers): made once per explorer and state, and shared by the tests below.
_FRAGMENTS: dict = {}


def fragment_of(explorer) -> str:
    """``explorer.to_html()`` for its current state, made once."""
    key = (id(explorer), explorer._state())
    if key not in _FRAGMENTS:
        _FRAGMENTS[key] = (explorer, explorer.to_html())  # keeps the id in use
    return _FRAGMENTS[key][1]


def decode(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=np.int16)


def png_of(image: ipywidgets.Image) -> bytes:
    """The PNG an Image shows: its bytes (ipywidgets 7.7) or its data URL's (8)."""
    value = bytes(image.value)
    if image.format == "png":
        return value
    assert image.format == "url"
    prefix = b"data:image/png;base64,"
    assert value.startswith(prefix)
    return base64.b64decode(value[len(prefix) :])


def test_slider_and_image_are_ipywidgets(explorer):
    assert isinstance(explorer.slider, ipywidgets.ValueWidget)
    assert isinstance(explorer.image, ipywidgets.Image)
    assert explorer.image.format == ("url" if hasattr(ipywidgets, "Stack") else "png")
    assert png_of(explorer.image).startswith(b"\x89PNG\r\n\x1a\n")


def test_slider_change_produces_new_frame_equal_to_frame(explorer):
    stops = explorer.stops
    start = explorer.slider.value
    before = png_of(explorer.image)
    other = stops[0] if start != stops[0] else stops[-1]
    explorer.slider.value = other
    try:
        assert png_of(explorer.image) != before
        assert png_of(explorer.image) == explorer.frame(other)
    finally:
        explorer.slider.value = start
    assert png_of(explorer.image) == before


def test_every_stop_renders_a_distinct_png(explorer):
    frames = [explorer.frame(stop) for stop in explorer.stops]
    assert all(png.startswith(b"\x89PNG\r\n\x1a\n") for png in frames)
    shapes = {decode(png).shape for png in frames}
    assert len(shapes) == 1
    assert len(set(frames)) == len(frames)


def test_live_widget_sends_stored_frames_without_redrawing(explorer, monkeypatch):
    # Building the live widget renders every state once; a control change then
    # only sends stored bytes (the key-press latency is the message round trip).
    _ = explorer.widget
    start = explorer.slider.value

    def no_redraw(state):
        raise AssertionError(f"redrew {state!r} on a control change")

    monkeypatch.setattr(explorer._renderer, "png", no_redraw)
    try:
        for stop in explorer.stops:
            explorer.slider.value = stop
    finally:
        explorer.slider.value = start


def shown_image(explorer, child: int = 1) -> ipywidgets.Widget:
    """The Image (``child=1``) or caption (``child=2``) that the front end shows
    for the controls' current values.

    Under ipywidgets 8 this follows each ``jsdlink`` the way the browser does
    (the Stack's ``selected_index`` takes the control's linked trait) down the
    nested Stacks; under 7.7 it is the one widget the kernel updates.
    """
    node = explorer.widget.children[child]
    links = {link.target[0].model_id: link.source for link in explorer._links}
    while isinstance(node, getattr(ipywidgets, "Stack", ())):
        source, trait = links[node.model_id]
        assert link_target_trait(explorer, node) == "selected_index"
        node = node.children[getattr(source, trait)]
    return node


def link_target_trait(explorer, stack) -> str:
    (link,) = [link for link in explorer._links if link.target[0] is stack]
    return link.target[1]


def test_live_widget_shows_the_frame_of_every_state(explorer):
    # What the reader sees after moving the controls to any state is that
    # state's frame: through the browser-side Stack swap (ipywidgets 8) or the
    # kernel's observer (7.7).
    start = tuple(control.value for control in explorer.controls)
    states = explorer.states
    _ = explorer.widget
    for link in explorer._links:
        # Before any move, each Stack already shows what its link will select.
        (source, trait), (stack, _) = link.source, link.target
        assert stack.selected_index == getattr(source, trait)
    try:
        for state in states:
            values = state if len(explorer.controls) == 2 else (state,)
            for control, value in zip(explorer.controls, values):
                control.value = value
            shown = shown_image(explorer)
            assert shown is explorer.image
            assert png_of(shown) == explorer.frame(*values), f"state {state!r}"
    finally:
        for control, value in zip(explorer.controls, start):
            control.value = value
    if hasattr(ipywidgets, "Stack"):
        # One Image per state, and no observer left in the kernel: the
        # browser swaps frames alone.
        images = {id(image) for image in explorer._images.values()}
        assert len(images) == len(states)
        for control in explorer.controls:
            handlers = control._trait_notifiers.get("value", {}).get("change", [])
            assert explorer._on_change not in handlers


def caption_text(caption: ipywidgets.HTML) -> str:
    """The text a caption widget shows (its HTML, tags dropped, entities decoded)."""
    return html.unescape(re.sub(r"<[^>]+>", "", caption.value))


def test_live_caption_follows_every_state(explorer):
    # Under the picture, the caption shows the state's description (its alt
    # text), swapped with it: by jsdlink-ed Stacks (ipywidgets 8) or by the
    # kernel's observer (7.7).
    start = tuple(control.value for control in explorer.controls)
    box = explorer.widget
    assert len(box.children) == 3
    seen = set()
    try:
        for state in explorer.states:
            values = state if len(explorer.controls) == 2 else (state,)
            for control, value in zip(explorer.controls, values):
                control.value = value
            shown = shown_image(explorer, child=2)
            assert isinstance(shown, ipywidgets.HTML)
            assert shown is explorer.caption
            text = caption_text(shown)
            assert text == explorer.alt_text(*values), f"state {state!r}"
            assert 'class="attnbook-caption"' in shown.value
            seen.add(text)
    finally:
        for control, value in zip(explorer.controls, start):
            control.value = value
    assert caption_text(shown_image(explorer, child=2)) == explorer.alt_text(*start)
    assert len(seen) > 1  # the caption does move
    if hasattr(ipywidgets, "Stack"):
        captions = {id(caption) for caption in explorer._captions.values()}
        assert len(captions) == len(explorer.states)
        # One link per Stack: the captions' Stacks mirror the images' exactly.
        stacks = [link.target[0] for link in explorer._links]
        assert len(stacks) == len(set(map(id, stacks)))
        assert len(stacks) % 2 == 0


def test_frame_does_not_depend_on_the_previous_stop(explorer):
    stops = explorer.stops
    first = explorer.frame(stops[1])
    for stop in reversed(stops):
        explorer.frame(stop)
    assert explorer.frame(stops[1]) == first


def test_blitted_frame_matches_a_full_redraw(explorer):
    # The blitting shortcut must draw the same picture as a from-scratch render
    # (up to the frame's 128-colour palette).
    for stop in (explorer.stops[0], explorer.stops[-1]):
        fast = decode(explorer.frame(stop))
        full = decode(explorer.naive_frame(stop))
        assert fast.shape == full.shape
        far = np.abs(fast - full).max(axis=2) > 48
        assert far.mean() < 0.01


def test_kernel_width_frames_follow_the_model():
    # A stop's picture must change with the width: compare the prediction line
    # drawn in the figure with nadaraya_watson itself.
    explorer = widgets.kernel_width_explorer()
    data = make_regression_data()
    renderer = explorer._renderer
    for width in (0.1, 1):
        explorer.frame(width)
        _, line, title = renderer._dynamic
        y_hat, _ = nadaraya_watson(data.x_train, data.y_train, data.x_query, "gaussian", width)
        np.testing.assert_allclose(line.get_ydata(), y_hat.numpy(), rtol=1e-6)
        assert f"{width:g}" in title.get_text()


def test_valid_length_frames_follow_masked_softmax():
    explorer = widgets.valid_length_explorer()
    renderer = explorer._renderer
    scores = renderer.scores
    for length in (1, 4, 10):
        explorer.frame(length)
        image = renderer._dynamic[0]
        expected = masked_softmax(scores.unsqueeze(0), torch.tensor([length]))[0]
        np.testing.assert_allclose(image.get_array(), expected.numpy(), rtol=1e-6)
        mask = renderer._dynamic[1]
        assert mask.get_x() == length - 0.5
        assert mask.get_width() == 10 - length


def test_default_slider_ranges():
    width = widgets.kernel_width_explorer()
    assert len(width.stops) >= 12
    assert min(width.stops) <= 0.05 and max(width.stops) >= 5
    ratios = np.diff(np.log(width.stops))
    assert ratios.max() < 3 * ratios.min()  # roughly log-spaced
    length = widgets.valid_length_explorer()
    assert length.stops == list(range(1, 11))
    assert isinstance(length.slider, ipywidgets.IntSlider)
    assert (length.slider.min, length.slider.max) == (1, 10)


DATA_URL = r"data:image/(?:png|webp);base64,[A-Za-z0-9+/=]+"


def fragment_pictures(fragment: str) -> tuple[np.ndarray, list]:
    """The base frame and the layers ((height, width, 4) RGBA, left, top) of a fragment."""
    base_url = re.search(
        r'<img class="attnbook-base" src="data:image/png;base64,([^"]+)"', fragment
    )
    base = decode(base64.b64decode(base_url.group(1)))
    layers = []
    for payload, left, top in re.findall(
        r'<img src="data:image/webp;base64,([^"]+)" alt="" aria-hidden="true" hidden '
        r'style="position:absolute;left:(\d+)px;top:(\d+)px',
        fragment,
    ):
        picture = Image.open(io.BytesIO(base64.b64decode(payload))).convert("RGBA")
        layers.append((np.asarray(picture, dtype=np.int16), int(left), int(top)))
    return base, layers


def test_html_fragment_is_self_contained(explorer):
    fragment = fragment_of(explorer)
    outside_images = re.sub(DATA_URL, "DATA", fragment)
    assert "http" not in outside_images
    assert "//" not in outside_images
    assert re.search(r"\bsrc=\"(?!data:)", fragment) is None
    # The reading contract: one root, native controls with outputs, one view.
    assert fragment.startswith('<div class="attnbook-explorer"')
    assert fragment.count('class="attnbook-view"') == 1
    assert fragment.count('type="range"') == 1
    assert fragment.count("<select") == len(explorer.controls) - 1
    assert fragment.count("<output>") == len(explorer.controls)
    assert f'max="{len(explorer.stops) - 1}"' in fragment
    assert fragment.count("<script>") == 1
    assert "max-width:100%" not in fragment  # natural size; the view scrolls sideways
    images = re.findall(r"<img [^>]*>", fragment)
    visible = [img for img in images if " hidden" not in img]
    assert len(visible) == 1  # the default frame shows without JavaScript
    default = explorer.states.index(explorer._state())
    assert html.escape(explorer._renderer.alt_text(explorer.states[default])) in visible[0]
    assert re.search(r'alt="[^"]{40,}"', visible[0])
    assert 1 <= len(images) <= len(explorer.states)
    alts = json.loads(re.search(r"alts=(\[.*?\]);", fragment).group(1))
    assert alts == [explorer._renderer.alt_text(state) for state in explorer.states]


def test_html_fragment_caption_holds_the_default_description(explorer):
    # A visible caption under the view, a live region from the start (so a
    # screen reader announces its updates), holding the default state's text;
    # the script rewrites it from the same list as the alt text.
    fragment = fragment_of(explorer)
    captions = re.findall(r'<p class="attnbook-caption" role="status"[^>]*>([^<]*)</p>', fragment)
    default = explorer.states.index(explorer._state())
    assert captions == [html.escape(explorer._renderer.alt_text(explorer.states[default]))]
    assert fragment.index('class="attnbook-view"') < fragment.index('class="attnbook-caption"')
    assert fragment.index('class="attnbook-caption"') < fragment.index("<script>")
    script = re.search(r"<script>(.*)</script>", fragment, re.S).group(1)
    assert "cap.textContent=alts[k]" in script


def test_html_fragment_layers_rebuild_every_frame(explorer):
    # Base plus a state's layer must give that state's frame (up to the palette).
    fragment = fragment_of(explorer)
    base, layers = fragment_pictures(fragment)
    layer_of = json.loads(re.search(r"layerOf=(\[.*?\])", fragment).group(1))
    assert len(layer_of) == len(explorer.states)
    # Every layer is used; states with the same picture may share one.
    assert sorted({j for j in layer_of if j >= 0}) == list(range(len(layers)))
    for state, j in zip(explorer.states, layer_of):
        picture = base.copy()
        if j >= 0:
            rgba, left, top = layers[j]
            height, width = rgba.shape[:2]
            region = picture[top : top + height, left : left + width]
            opaque = rgba[..., 3] > 0
            region[opaque] = rgba[..., :3][opaque]
        frame = explorer._renderer.rgb(state).astype(np.int16)
        far = np.abs(picture - frame).max(axis=2) > 48
        assert far.mean() < 0.002, f"state {state}"


def test_html_fragment_spends_bytes_only_on_what_changes(explorer):
    # Each layer is much smaller than a full frame would be.
    fragment = fragment_of(explorer)
    base, layers = fragment_pictures(fragment)
    full = base.shape[0] * base.shape[1]
    for rgba, _, _ in layers:
        assert (rgba[..., 3] > 0).sum() < 0.6 * full


def test_fragment_size_budget(explorer):
    assert len(fragment_of(explorer).encode()) <= 1024 * 1024


def test_mime_bundle_live_and_static(explorer, monkeypatch):
    monkeypatch.delenv(widgets.STATIC_ENV, raising=False)
    live, metadata = explorer._repr_mimebundle_()
    # The PNG fallback (GitHub, nbviewer, Colab before running) is the current frame.
    assert base64.b64decode(live["image/png"]) == png_of(explorer.image)
    height, width = decode(png_of(explorer.image)).shape[:2]
    assert metadata["image/png"] == {"width": width, "height": height}
    view = live["application/vnd.jupyter.widget-view+json"]
    assert view["model_id"] == explorer.widget.model_id
    assert "text/html" not in live
    monkeypatch.setenv(widgets.STATIC_ENV, "1")
    static, static_metadata = explorer._repr_mimebundle_()
    assert static_metadata == {"text/html": {widgets.STATIC_MARKER: True}}
    assert "application/vnd.jupyter.widget-view+json" not in static
    assert static["text/html"] == fragment_of(explorer)
    assert static["text/plain"] == live["text/plain"] == repr(explorer)


def test_repr_is_stable():
    assert repr(widgets.kernel_width_explorer()) == (
        "KernelWidthExplorer(kernel='gaussian', width=0.5, 12 stops)"
    )
    assert repr(widgets.valid_length_explorer()) == (
        "ValidLengthExplorer(valid_length=6, keys=10, 10 stops)"
    )


def test_custom_arguments():
    explorer = widgets.kernel_width_explorer(kernel="boxcar", widths=[0.2, 0.4, 0.8], value=0.4)
    assert explorer.stops == [0.2, 0.4, 0.8]
    assert explorer.slider.value == 0.4
    scores = torch.randn(3, 6, generator=torch.Generator().manual_seed(1))
    lengths = widgets.valid_length_explorer(scores=scores, valid_lens=[2, 3, 4], value=2)
    assert lengths.stops == [2, 3, 4]
    assert lengths.frame(4).startswith(b"\x89PNG")


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"widths": [0.5, 0.2]}, ValueError, "increasing"),
        ({"widths": [0.1, -1.0]}, ValueError, r"widths\[1\].*-1"),
        ({"widths": [0.1]}, ValueError, "at least 2"),
        ({"widths": [0.1, 0.2], "value": 0.3}, ValueError, "value.*0.3"),
        ({"kernel": "triangle"}, ValueError, "triangle"),
        ({"data": [1, 2, 3]}, TypeError, "data"),
    ],
)
def test_kernel_width_explorer_bad_input(kwargs, error, match):
    with pytest.raises(error, match=match):
        widgets.kernel_width_explorer(**kwargs)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"scores": torch.zeros(2, 3, 4)}, ValueError, "scores"),
        ({"scores": [[1.0, 2.0]]}, TypeError, "scores"),
        ({"valid_lens": [1, 3]}, ValueError, "consecutive"),
        ({"valid_lens": [0, 1, 2]}, ValueError, "valid_lens"),
        ({"valid_lens": [9, 10, 11]}, ValueError, "valid_lens.*11"),
        ({"value": 12}, ValueError, "value.*12"),
    ],
)
def test_valid_length_explorer_bad_input(kwargs, error, match):
    with pytest.raises(error, match=match):
        widgets.valid_length_explorer(**kwargs)


def test_frame_rejects_values_off_the_slider(explorer):
    with pytest.raises(ValueError, match="stops"):
        explorer.frame(123.456)


def test_live_image_keeps_its_natural_pixel_size(explorer):
    # JupyterLab stretches an image in a flex column to the cell's width unless
    # told otherwise; a stretched frame looks soft.
    height, width = decode(png_of(explorer.image)).shape[:2]
    layout = explorer.image.layout
    assert (layout.width, layout.height) == (f"{width}px", f"{height}px")
    assert layout.align_self == "flex-start"
    assert layout.max_width == "none"


def test_valid_length_counts_keys_and_queries_from_0():
    explorer = widgets.valid_length_explorer()
    renderer = explorer._renderer
    explorer.frame(6)
    assert renderer._dynamic[-1].get_text() == "6: keys 0-5 share the weight"
    assert [line.get_label() for line in renderer._dynamic[3:-1]] == ["q0", "q1", "q2", "q3"]
    assert "Keys 0 to 5 share" in explorer.alt_text(6)
    assert "keys 6 to 9 are hatched" in explorer.alt_text(6)
    assert "key 9 is hatched" in explorer.alt_text(9)
    assert "Key 0 takes all" in explorer.alt_text(1)


def test_two_controls_kernel_menu_beside_the_width_slider():
    explorer = widgets.kernel_width_explorer(kernels="all")
    assert isinstance(explorer.menu, ipywidgets.Dropdown)
    assert explorer.controls == [explorer.slider, explorer.menu]
    assert explorer.states[:2] == [(0.05, "gaussian"), (0.05, "boxcar")]
    assert len(explorer.states) == len(explorer.stops) * 5
    # frame(value) uses the menu's current kernel; frame(value, other) picks one.
    assert explorer.frame(0.5) == explorer.frame(0.5, "gaussian")
    assert explorer.frame(0.5, "boxcar") != explorer.frame(0.5, "gaussian")
    before = png_of(explorer.image)
    assert explorer.menu.options == tuple(
        (name, name) for name in ["gaussian", "boxcar", "constant", "triangular", "epanechnikov"]
    )
    explorer.menu.value = "epanechnikov"
    try:
        assert png_of(explorer.image) == explorer.frame(0.5, "epanechnikov") != before
        assert explorer.frame(0.5, "triangular") != explorer.frame(0.5, "epanechnikov")
        assert "epanechnikov" in explorer._renderer._dynamic[-1].get_text()
        n = len(explorer.states)
        assert repr(explorer) == f"KernelWidthExplorer(kernel='epanechnikov', width=0.5, {n} stops)"
    finally:
        explorer.menu.value = "gaussian"
    with pytest.raises(ValueError, match="other.*triangle"):
        explorer.frame(0.5, "triangle")
    single = widgets.kernel_width_explorer()
    with pytest.raises(TypeError, match="one control"):
        single.frame(0.5, "boxcar")


def test_identical_pictures_share_one_layer():
    # The constant kernel ignores the width (its title says so), so its pictures
    # are one picture: the static fragment stores it once for every width.
    explorer = widgets.kernel_width_explorer(kernels="all")
    fragment = explorer.to_html()
    layer_of = json.loads(re.search(r"layerOf=(\[.*?\])", fragment).group(1))
    constant = {layer_of[i] for i, s in enumerate(explorer.states) if s[1] == "constant"}
    assert len(constant) == 1 and constant != {-1}
    others = [layer_of[i] for i, s in enumerate(explorer.states) if s[1] != "constant"]
    assert not constant & set(others)
    payloads = re.findall(r'<img src="data:image/webp;base64,([^"]+)"', fragment)
    assert len(payloads) == len(set(payloads))  # no layer is stored twice
    assert explorer.frame(0.05, "constant") == explorer.frame(5, "constant")
    assert "has no effect" in explorer._renderer._dynamic[-1].get_text()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"kernels": ["gaussian"]}, "at least 2"),
        ({"kernels": ["gaussian", "triangle"]}, r"kernels\[1\].*triangle"),
        ({"kernels": ["gaussian", "gaussian"]}, "repeat"),
        ({"kernels": ["boxcar", "constant"]}, "kernel must be one of kernels"),
        ({"kernels": "gaussian"}, "'all' or at least 2"),
    ],
)
def test_kernel_menu_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        widgets.kernel_width_explorer(**kwargs)


@pytest.mark.parametrize(
    ("make", "kwargs", "error", "match"),
    [
        (widgets.query_position_explorer, {"values": [1.0]}, ValueError, "at least 2"),
        (widgets.query_position_explorer, {"values": ["a", 2]}, TypeError, r"values\[0\]"),
        (widgets.query_position_explorer, {"width": 0}, ValueError, "width"),
        (widgets.query_position_explorer, {"step": 0.3}, ValueError, "step.*0.3"),
        (widgets.query_position_explorer, {"value": 0.1}, ValueError, "value.*0.1"),
        (widgets.dimension_explorer, {"dims": [4, 2]}, ValueError, "increasing"),
        (widgets.dimension_explorer, {"dims": [0, 2]}, ValueError, r"dims\[0\]"),
        (widgets.dimension_explorer, {"n_keys": 1}, ValueError, "n_keys"),
        (widgets.dimension_explorer, {"value": 7}, ValueError, "value.*7"),
    ],
)
def test_new_explorers_bad_input(make, kwargs, error, match):
    with pytest.raises(error, match=match):
        make(**kwargs)


def test_query_position_frames_follow_nadaraya_watson():
    explorer = widgets.query_position_explorer()
    renderer = explorer._renderer
    keys = torch.arange(10.0)
    values = torch.tensor(widgets.DEFAULT_VALUES)
    for x in (0.0, 3.5, 9.0):
        explorer.frame(x)
        outputs, weights = nadaraya_watson(keys, values, torch.tensor([x]), "gaussian", 1.0)
        tops = [path.vertices[2][1] for path in renderer._dynamic[0].get_paths()]
        np.testing.assert_allclose(tops, weights[0].numpy(), rtol=1e-6)
        assert renderer._dynamic[2].get_ydata()[0] == pytest.approx(float(outputs[0]))


def test_dimension_frames_follow_the_scores():
    explorer = widgets.dimension_explorer(dims=[1, 4, 64], value=4)
    generator = torch.Generator().manual_seed(0)
    query = torch.randn(64, generator=generator)
    keys = torch.randn(10, 64, generator=generator)
    renderer = explorer._renderer
    for d in (1, 4, 64):
        explorer.frame(d)
        raw = keys[:, :d] @ query[:d]
        for collection, scores in zip(renderer._dynamic[:2], (raw, raw / d**0.5)):
            tops = [p.vertices[2][1] for p in collection.get_paths()]
            np.testing.assert_allclose(tops, torch.softmax(scores, -1).numpy(), rtol=1e-5)


def test_training_steps_frames_follow_the_log():
    log = small_training_log()
    explorer = widgets.training_steps_explorer(log, examples=6)
    renderer = explorer._renderer
    assert explorer.stops == [0, 5, 10, 20, 40]
    for i, step in enumerate(explorer.stops):
        explorer.frame(step)
        image, *outlines, marker, title = renderer._dynamic
        np.testing.assert_allclose(image.get_array(), log.weights[i][:6, 0].numpy(), rtol=1e-6)
        assert list(marker.get_xdata()) == [step, step]
        assert title.get_text().startswith(f"step {step}: probe loss {log.probe_losses[i]:.2f}")
        assert [o.get_x() + 0.5 for o in outlines] == log.probe.index[:6, 0].tolist()
        assert [o.get_y() + 0.5 for o in outlines] == list(range(6))


def test_training_steps_alt_text_counts_from_the_weights():
    log = small_training_log()
    explorer = widgets.training_steps_explorer(log, examples=4)
    weights = log.weights[-1][:4, 0]
    right = log.probe.index[:4, 0]
    hits = int((weights.argmax(-1) == right).sum())
    on_right = float(weights[torch.arange(4), right].mean())
    text = explorer.alt_text(40)
    assert f"is the largest weight for {hits} of the 4 queries" in text
    assert f"holds {on_right:.2f} of the weight" in text
    assert f"loss {log.probe_losses[-1]:.2f}" in text
    assert repr(explorer) == "TrainingStepsExplorer(step=0, examples=4, head=0, 5 stops)"


def test_training_steps_shows_the_chosen_head():
    log = train_recall(RecallAttention(8, num_heads=2, seed=0), steps=5, n=4, parts=2, probe_size=8)
    explorer = widgets.training_steps_explorer(log, head=1, value=5)
    image = explorer._renderer._dynamic[0]
    explorer.frame(5)
    np.testing.assert_allclose(image.get_array(), log.weights[-1][:8, 1].numpy(), rtol=1e-6)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"log": "log"}, TypeError, "log must be a TrainingLog"),
        ({"examples": 0}, ValueError, "examples must be at least 1"),
        ({"examples": 33}, ValueError, r"examples must lie in \[0, 32\], got 33"),
        ({"head": 1}, ValueError, r"head must lie in \[0, 0\], got 1"),
        ({"head": 0.0}, TypeError, "head must be an integer"),
        ({"value": 7}, ValueError, "value must be one of the recorded steps"),
    ],
)
def test_training_steps_explorer_bad_input(kwargs, error, match):
    args = {"log": small_training_log()} | kwargs
    with pytest.raises(error, match=match):
        widgets.training_steps_explorer(**args)


def small_decoding_explorer(**kwargs):
    """A random model: the explorer must not depend on the shipped checkpoint."""
    torch.manual_seed(0)
    model = lm.TinyLM(6, 8, 2, 2, 16)
    tokenizer = lm.CharTokenizer("abc de")
    return model, tokenizer, widgets.decoding_explorer(model, tokenizer, "abcd ea", **kwargs)


def test_decoding_frames_follow_the_uncached_model():
    """The explorer steps with the cache; its rows and bars must equal one
    uncached forward pass over the whole text (causal: row t sees keys 0..t)."""
    model, tokenizer, explorer = small_decoding_explorer(layer=1, head=1)
    ids = tokenizer.encode("abcd ea").unsqueeze(0)
    with torch.no_grad():
        probs = torch.softmax(model(ids)[0].double(), -1).numpy()
    weights = model.blocks[1].attention.attention_weights[0, 1].double().numpy()
    renderer = explorer._renderer
    assert explorer.stops == list(range(7))
    for t in explorer.stops:
        explorer.frame(t)
        image, row, strip, others, top, title = renderer._dynamic
        shown = image.get_array()
        np.testing.assert_allclose(np.ma.getdata(shown)[: t + 1], weights[: t + 1], atol=1e-6)
        assert np.isnan(np.ma.getdata(shown)[t + 1 :]).all()  # later rows: not computed yet
        assert strip.get_array().tolist() == [[0.0] * t + [1.0] + [2.0] * (6 - t)]
        assert row.get_y() == t - 0.5
        heights = [p.vertices[2][1] for p in others.get_paths()]
        np.testing.assert_allclose(heights, probs[t], atol=1e-6)
        best = int(probs[t].argmax())
        assert top.get_paths()[0].vertices[1][0] == pytest.approx(best - 0.4)
        assert title.get_text().startswith(f"t = {t}, reading")
        entropy = -sum(float(q) * math.log(float(q)) for q in probs[t] if q > 0)
        assert title.get_text().endswith(f"entropy {entropy:.1f} nats")


def test_decoding_alt_text_and_repr():
    model, tokenizer, explorer = small_decoding_explorer()
    text = explorer.alt_text(3)
    assert "Decoding step 3 of 6" in text and "3 keys come from the cache and 1 is new" in text
    assert "over 6 characters" in text
    assert repr(explorer) == "DecodingExplorer(t=0, layer=0, head=0, 7 stops)"


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"model": "model"}, TypeError, "model must be a TinyLM"),
        ({"tokenizer": None}, TypeError, "tokenizer must be a CharTokenizer"),
        ({"tokenizer": lm.CharTokenizer("ab")}, ValueError, "tokenizer has 2 characters"),
        ({"text": "a"}, ValueError, "text must be a string of 2 to 16 characters"),
        ({"text": "abz"}, ValueError, "character 'z' at position 2"),
        ({"layer": 2}, ValueError, r"layer must lie in \[0, 1\], got 2"),
        ({"head": 1.0}, TypeError, "head must be an integer"),
        ({"value": 9}, ValueError, r"value must be a step in \[0, 6\], got 9"),
    ],
)
def test_decoding_explorer_bad_input(kwargs, error, match):
    model, tokenizer, _ = small_decoding_explorer()
    args = {"model": model, "tokenizer": tokenizer, "text": "abcd ea"} | kwargs
    with pytest.raises(error, match=match):
        widgets.decoding_explorer(**args)


def test_text_with_tail_sits_right_after_its_fixed_words_and_stays_centred():
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from attnbook.widgets._core import text_with_tail

    fig = Figure(figsize=(8, 2), dpi=80)
    renderer = FigureCanvasAgg(fig).get_renderer()
    tails = ["1.5 rad", "12.25 rad"]
    tail = text_with_tail(fig, 0.5, 0.5, "each turns", tails[0], tails, fontsize="large")
    (fixed,) = [t for t in fig.texts if t is not tail]
    left, right = fixed.get_window_extent(renderer), tail.get_window_extent(renderer)
    assert fixed.get_text() == "each turns" and tail.get_text() == "1.5 rad"
    gap = right.x0 - left.x1
    assert 2 <= gap <= 8, gap  # about one space at 80 dpi, never overlapping
    tail.set_text(tails[1])  # the widest tail: the whole line is centred on x
    right = tail.get_window_extent(renderer)
    assert abs((left.x0 + right.x1) / 2 - 0.5 * fig.bbox.width) <= 1.5


def test_heads_explorer_weights_are_the_chapters_layer_cut_into_h_heads():
    from attnbook.widgets.heads import hand_made_layer, hand_made_tokens

    explorer = widgets.heads_explorer()
    renderer = explorer._renderer
    tokens = hand_made_tokens()
    for h in explorer.stops:
        layer = hand_made_layer(h)
        layer(tokens, tokens, tokens)
        weights = renderer.weights[h]  # (h, queries, keys)
        assert weights.shape == (h, 8, 8)
        np.testing.assert_allclose(weights, layer.attention_weights[0].numpy())
        # Independent reference: head j softmaxes the dot products of features j*p..(j+1)*p-1.
        p = 16 // h
        Q, K = layer.W_q(tokens)[0].detach(), layer.W_k(tokens)[0].detach()
        for j in range(h):
            scores = Q[:, j * p : (j + 1) * p] @ K[:, j * p : (j + 1) * p].T / p**0.5
            np.testing.assert_allclose(weights[j], torch.softmax(scores, -1).numpy(), atol=1e-6)
    roles = renderer.roles
    assert roles(2)["previous"] == [[1, 2, 3, 4, 5, 6, 7], []]
    assert roles(2)["symbol"] == [[], list(range(8))]
    assert roles(1)["blend"] == [[1, 2, 3, 4, 5, 6, 7]]
    assert "head 0 for queries 1-7" in explorer.alt_text(2)
    assert "7 of the 8 rows blend" in explorer.alt_text(1)


def test_heads_explorer_pastes_the_pixels_the_naive_figure_draws():
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    renderer = widgets.heads_explorer()._renderer
    for h in (1, 4, 16):
        fig = Figure(figsize=renderer.figsize, dpi=80)
        canvas = FigureCanvasAgg(fig)
        renderer._build(fig, h)
        canvas.draw()
        naive = np.asarray(canvas.buffer_rgba())[..., :3]
        np.testing.assert_array_equal(renderer.rgb(h), naive)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"heads": [1, 3]}, ValueError, r"divisors of 16.*\[1, 3\]"),
        ({"heads": [2]}, ValueError, "at least 2"),
        ({"heads": [4, 2]}, ValueError, "increasing"),
        ({"heads": "124"}, TypeError, "heads"),
        ({"heads": [1, True]}, ValueError, "divisors"),
        ({"value": 3}, ValueError, "value.*3"),
    ],
)
def test_heads_explorer_bad_input(kwargs, error, match):
    with pytest.raises(error, match=match):
        widgets.heads_explorer(**kwargs)


# ---------------------------------------------------------------- norm placement


def test_norm_placement_frames_follow_the_gradient_norms():
    from attnbook.transformer import gradient_norms_at_init

    norms = {
        (d, name): gradient_norms_at_init(d, name == "pre-LN", num_hiddens=8, seeds=(0,))
        for d in (1, 3)
        for name in ("post-LN", "pre-LN")
    }
    explorer = widgets.norm_placement_explorer(depths=[1, 3], norms=norms, placement="pre-LN")
    assert explorer.controls == [explorer.slider, explorer.menu]
    assert explorer.states == [(1, "post-LN"), (1, "pre-LN"), (3, "post-LN"), (3, "pre-LN")]
    pre = norms[(3, "pre-LN")]
    text = explorer.alt_text(3, "pre-LN")
    assert f"{pre[0]:.2f} at block 0" in text and f"{pre[-1]:.2f} at block 2" in text
    assert f"{norms[(3, 'post-LN')][-1]:.2f}." in text
    assert explorer.frame(3, "pre-LN") != explorer.frame(3, "post-LN")
    assert "single block" in explorer.alt_text(1, "post-LN")


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"depths": [2, 1]}, ValueError, r"depths must hold at least 2 strictly increasing"),
        ({"depths": [0, 1]}, ValueError, r"depths\[0\] must be >= 1, got 0"),
        ({"placement": "middle"}, ValueError, r"placement must be one of .*got 'middle'"),
        ({"value": 5}, ValueError, r"value must be one of depths \[1, 2\], got 5"),
        ({"norms": {}}, ValueError, r"norms has no entry for \(1, 'post-LN'\)"),
        (
            {"norms": {(d, p): [1.0] for d in (1, 2) for p in ("post-LN", "pre-LN")}},
            ValueError,
            r"norms\[\(2, 'post-LN'\)\] must hold 2 numbers",
        ),
    ],
)
def test_norm_placement_explorer_bad_input(kwargs, error, match):
    args = {"depths": [1, 2], **kwargs}
    with pytest.raises(error, match=match):
        widgets.norm_placement_explorer(**args)
