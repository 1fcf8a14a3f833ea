"""The static explorers, every control driven in headless Chromium, offline.

Every request that is not to the local test server (or a data: URL) is aborted
and recorded, so a CDN dependency fails the test loudly. The browser is found by
``tools.browser.find_chromium``; Playwright never downloads one.
"""

from __future__ import annotations

import pytest

from attnbook import seq2seq, widgets
from tools.browser import Offline
from tools.site import require_site, serve

# Every built page with an explorer, and how many it holds.
EXPLORER_PAGES = {
    "book/queries-keys-values.html": 1,
    "book/attention-pooling.html": 1,
    "book/masked-softmax.html": 1,
    "book/scoring-functions.html": 1,
    "book/self-attention-positional-encoding.html": 1,
    "book/attention-learns.html": 1,
    "book/induction-heads.html": 1,
    "book/attention-at-scale.html": 1,
    "book/multi-head-attention.html": 1,
    "book/transformer-block.html": 1,
    "book/causal-language-model.html": 1,
    "book/cross-attention.html": 1,
    "book/positions.html": 1,
    "book/vision-transformer.html": 1,
}


# One offline browser context for every browser test (tools/browser.py).
OfflinePage = Offline


def view_state(explorer):
    """What the explorer shows now: layers visible, alt text, readouts, picture size,
    and the caption under the picture (its text, role, and whether it is visible)."""
    return explorer.evaluate(
        """root => {
            const pic = root.querySelector('.attnbook-view .attnbook-picture');
            const base = pic.querySelector('img.attnbook-base');
            const layers = [...pic.querySelectorAll('img[aria-hidden]')];
            const caps = [...root.querySelectorAll('.attnbook-caption')];
            const cap = caps[0];
            const box = cap ? cap.getBoundingClientRect() : null;
            return {layers: layers.filter(img => !img.hidden).length,
                    captions: caps.length,
                    caption: cap ? cap.textContent : null,
                    captionRole: cap ? cap.getAttribute('role') : null,
                    captionShown: !!box && box.height > 0 && box.width > 0 &&
                        getComputedStyle(cap).visibility === 'visible',
                    captionBelow: !!box && box.top >= pic.getBoundingClientRect().bottom - 1,
                    alt: base.alt, label: pic.getAttribute('aria-label'),
                    outs: [...root.querySelectorAll('output')].map(o => o.textContent),
                    width: base.getBoundingClientRect().width, natural: base.naturalWidth,
                    views: root.querySelectorAll('.attnbook-view').length};
        }"""
    )


def picture(explorer) -> bytes:
    """A screenshot of the explorer's visible picture (base plus the shown layer)."""
    return explorer.locator(".attnbook-view").screenshot()


def check_changed(explorer, before_png, before_state, what):
    after_png, after = picture(explorer), view_state(explorer)
    assert after["layers"] <= 1 and after["views"] == 1
    assert after_png != before_png, f"{what} did not change the picture"
    assert after["outs"] != before_state["outs"], f"{what} did not change the readout"
    assert after["alt"] != before_state["alt"] and after["alt"] == after["label"]
    assert len(after["alt"]) > 40
    # The visible caption moves with the picture: it is the new alt text.
    assert after["captions"] == 1 and after["captionRole"] == "status"
    assert after["caption"] == after["alt"] != before_state["caption"], f"{what}: caption"
    assert after["captionShown"] and after["captionBelow"]
    return after_png, after


def drive_explorers(page, expected: int) -> None:
    """Move every control of every explorer on the page; each move changes the picture."""
    explorers = page.locator(".attnbook-explorer")
    assert explorers.count() == expected
    for index in range(expected):
        explorer = explorers.nth(index)
        explorer.scroll_into_view_if_needed()
        png, state = picture(explorer), view_state(explorer)
        # Natural pixel size, never scaled to the column.
        assert state["width"] == state["natural"] > 100
        assert state["caption"] == state["alt"] and state["captionShown"]
        sliders = explorer.locator("input[type=range]")
        assert sliders.count() >= 1
        for s in range(sliders.count()):
            slider = sliders.nth(s)
            assert slider.is_enabled(), "the inline script did not enable the slider"
            slider.focus()
            page.keyboard.press("Home")
            png, state = picture(explorer), view_state(explorer)
            assert slider.input_value() == "0"
            page.keyboard.press("ArrowRight")
            png, state = check_changed(explorer, png, state, "ArrowRight")
            page.keyboard.press("End")
            png, state = check_changed(explorer, png, state, "End")
            assert slider.input_value() == slider.get_attribute("max")
            assert slider.get_attribute("aria-valuetext") in state["outs"]
        menus = explorer.locator("select")
        for m in range(menus.count()):
            menu = menus.nth(m)
            assert menu.is_enabled()
            options = menu.locator("option")
            for o in range(options.count()):
                value = options.nth(o).get_attribute("value")
                if value == menu.input_value():
                    continue
                menu.select_option(value)
                png, state = check_changed(explorer, png, state, f"menu option {value}")


ALL_EXPLORERS = [
    widgets.kernel_width_explorer,
    lambda: widgets.kernel_width_explorer(kernels="all"),
    widgets.valid_length_explorer,
    widgets.query_position_explorer,
    widgets.dimension_explorer,
    widgets.offset_explorer,
    widgets.tiles_explorer,
    widgets.heads_explorer,
    # Chapter 13's, on a few steps of training (about a second).
    lambda: widgets.alignment_explorer(
        seq2seq.train_dates(
            0, True, 4, record=(0, 2, 4), probe=seq2seq.figure_probe(), test_size=40
        )[1]
    ),
    widgets.rope_dial_explorer,
    lambda: _small_vit_maps(),
]


def _small_vit_maps():
    """Chapter 15's explorer over an untrained ViT and random images (no scikit-learn)."""
    import torch

    from attnbook.vit import build_vit

    g = torch.Generator().manual_seed(0)
    images = torch.rand(4, 1, 8, 8, generator=g)
    labels = torch.tensor([2, 7, 1, 8])
    return widgets.vit_maps_explorer(build_vit(0), images, labels, indices=[0, 3])


def test_fragment_page_explorers_work_offline(browser, tmp_path):
    page_html = (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'><title>explorers</title>"
        "</head><body>" + "".join(make().to_html() for make in ALL_EXPLORERS) + "</body></html>"
    )
    (tmp_path / "index.html").write_text(page_html, encoding="utf-8")
    offline = OfflinePage(browser)
    try:
        with serve(tmp_path) as base:
            offline.page.goto(f"{base}/index.html")
            drive_explorers(offline.page, expected=len(ALL_EXPLORERS))
    finally:
        offline.close()
    assert offline.blocked == []
    assert offline.errors == []


def test_fragment_shows_default_frame_without_javascript(browser, tmp_path):
    explorer = widgets.valid_length_explorer()
    (tmp_path / "index.html").write_text(
        "<!doctype html><html><body>" + explorer.to_html() + "</body></html>", encoding="utf-8"
    )
    context = browser.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        with serve(tmp_path) as base:
            page.goto(f"{base}/index.html")
            root = page.locator(".attnbook-explorer")
            shown = view_state(root)
            assert shown["layers"] == 0 and shown["width"] == shown["natural"] > 100
            assert shown["outs"] == ["6"]
            assert "Valid length 6" in shown["alt"]
            # The caption shows the default state's description without JavaScript.
            assert shown["caption"] == shown["alt"] and shown["captionShown"]
            assert shown["captionRole"] == "status"
            assert root.locator("input[type=range]").is_disabled()
    finally:
        context.close()


@pytest.mark.parametrize("page_path", list(EXPLORER_PAGES))
def test_built_page_explorers_redraw_offline(browser, page_path):
    site = require_site()
    assert (site / page_path).exists(), f"{page_path} was not built"
    offline = OfflinePage(browser)
    try:
        with serve(site) as base:
            offline.page.goto(f"{base}/{page_path}", wait_until="load")
            drive_explorers(offline.page, expected=EXPLORER_PAGES[page_path])
            # MathJax comes from the site itself and typesets the page's maths.
            offline.page.wait_for_function(
                "window.MathJax && MathJax.startup && MathJax.startup.promise"
            )
            offline.page.evaluate("MathJax.startup.promise")
            assert offline.page.locator("mjx-container").count() > 0
    finally:
        offline.close()
    assert offline.blocked == []
    assert offline.errors == []


def test_fragment_composes_every_frame_exactly(browser, tmp_path):
    """Base plus layer, as the browser draws them, is the renderer's frame at each stop."""
    import io

    import numpy as np
    from PIL import Image

    explorer = widgets.kernel_width_explorer(kernels=["gaussian", "boxcar"], widths=[0.1, 0.5, 2])
    (tmp_path / "index.html").write_text(
        "<!doctype html><html><body style='margin:0'>" + explorer.to_html() + "</body></html>",
        encoding="utf-8",
    )
    offline = OfflinePage(browser)
    try:
        with serve(tmp_path) as base:
            page = offline.page
            page.goto(f"{base}/index.html")
            root = page.locator(".attnbook-explorer")
            for width_index, kernel_index in ((0, 0), (2, 1), (1, 1), (0, 1)):
                page.evaluate(
                    """([w, k]) => {
                        const slider = document.querySelector('input[type=range]');
                        const menu = document.querySelector('select');
                        slider.value = String(w); menu.value = String(k);
                        menu.dispatchEvent(new Event('change'));
                    }""",
                    [width_index, kernel_index],
                )
                shot = root.locator(".attnbook-picture").screenshot()
                drawn = np.asarray(Image.open(io.BytesIO(shot)).convert("RGB"), dtype=np.int16)
                state = explorer.states[width_index * 2 + kernel_index]
                frame = explorer._renderer.rgb(state).astype(np.int16)
                assert drawn.shape == frame.shape
                far = np.abs(drawn - frame).max(axis=2) > 48  # a 128-colour palette
                assert far.mean() < 0.002, f"state {state}: {far.mean():.4f} of pixels differ"
    finally:
        offline.close()
    assert offline.errors == []
