"""The live explorer of chapter 15 in headless Chromium, offline: a digit drawn into
the page (mouse, keyboard, a finger on a 390 px phone, a test image picked),
read back from the page's data attributes, equals PyTorch's numbers on the same
weights: logits, raw attention, rollout and occlusion under both fills.

The harness and the tests every explorer runs: tests/live_harness.py.
"""

from __future__ import annotations

import torch

from attnbook.widgets import live
from attnbook.widgets.live.digits import fill_image, run
from tests import live_harness as harness
from tests.live_harness import *  # noqa: F403 (the shared tests, collected here)

HOST = ".attnbook-live-digits"


def result(page) -> dict:
    """The numbers and notes the explorer shows, once its occlusion map (drawn
    just after the rest) is there."""
    page.wait_for_function(
        """() => { const ds = document.querySelector('.attnbook-live-digits .attnbook-live-result').dataset;
                   return ds.updates && ds.occluded === ds.updates; }"""
    )
    return page.evaluate(
        """() => {
            const host = document.querySelector('.attnbook-live-digits');
            const ds = host.querySelector('.attnbook-live-result').dataset;
            const note = host.querySelector('.attnbook-live-note');
            const status = host.querySelector('[role=status]');
            const out = {updates: Number(ds.updates), fill: ds.fill, predicted: Number(ds.predicted),
                         note: note.hidden ? '' : note.textContent,
                         noteShown: !note.hidden && note.getBoundingClientRect().height > 0,
                         status: status.textContent, computeMs: Number(ds.computeMs)};
            for (const key of ['pixels', 'logits', 'probs', 'raw', 'rollout', 'occlusion']) {
                out[key] = JSON.parse(ds[key]);
            }
            return out;
        }"""
    )


def check_against_pytorch(shown: dict, weights: bytes, arch: dict, mean_image) -> float:
    """Largest difference between the page's numbers and PyTorch's; asserts the tolerances."""
    expected = run(
        weights, arch, shown["pixels"], fill_image(shown["fill"], {"mean_image": mean_image})
    )
    logit_diff = float((torch.tensor(shown["logits"]) - expected["logits"]).abs().max())
    assert logit_diff < 1e-4, f"logits differ by {logit_diff}"
    worst = logit_diff
    for key in ("raw", "rollout", "occlusion", "probs"):
        diff = float((torch.tensor(shown[key]) - expected[key]).abs().max())
        assert diff < 1e-5, f"{key} differs by {diff}"
        worst = max(worst, diff)
    assert shown["predicted"] == expected["predicted"]
    return worst


def grid_box(page) -> dict:
    return page.locator(f"{HOST} canvas").first.bounding_box()


def cell_centre(box: dict, i: int, j: int) -> tuple[float, float]:
    return box["x"] + (j + 0.5) * box["width"] / 8, box["y"] + (i + 0.5) * box["height"] / 8


def stroke_with_mouse(page, cells: list[tuple[int, int]]) -> None:
    box = grid_box(page)
    page.mouse.move(*cell_centre(box, *cells[0]))
    page.mouse.down()
    for cell in cells[1:]:
        page.mouse.move(*cell_centre(box, *cell), steps=3)
    page.mouse.up()


def drive(page, state: dict) -> float:
    weights, arch, mean_image = state["weights"], state["arch"], state["mean_image"]
    start = result(page)
    assert start["note"] == "" and start["fill"] == "zero" and "reads a" in start["status"]
    worst = check_against_pytorch(start, weights, arch, mean_image)

    # A stroke with the mouse: every cell passed is inked, one redraw per new cell.
    page.locator(f"{HOST} button").click()  # clear the grid
    blank = result(page)
    assert blank["pixels"] == [0] * 64 and blank["noteShown"] and "blank" in blank["note"]
    worst = max(worst, check_against_pytorch(blank, weights, arch, mean_image))
    stroke = [(1, 2), (1, 3), (1, 4), (1, 5), (2, 5), (3, 4), (4, 4), (5, 3), (6, 3)]
    stroke_with_mouse(page, stroke)
    drawn = result(page)
    assert {divmod(i, 8) for i, v in enumerate(drawn["pixels"]) if v} == set(stroke)
    assert drawn["updates"] >= blank["updates"] + len(stroke)
    assert drawn["note"] == "" and drawn["status"] != blank["status"]
    worst = max(worst, check_against_pytorch(drawn, weights, arch, mean_image))

    # The keyboard: arrows move the focus cell, Space inks it, Enter clears it again.
    canvas = page.locator(f"{HOST} canvas").first
    canvas.focus()
    for key in ("ArrowUp", "ArrowUp", "ArrowLeft"):  # from the stroke's end, (6, 3)
        page.keyboard.press(key)
    assert "row 4, column 2" in canvas.get_attribute("aria-label")
    page.keyboard.press("Space")
    keyed = result(page)
    assert keyed["pixels"][4 * 8 + 2] == 1 and keyed["updates"] == drawn["updates"] + 1
    worst = max(worst, check_against_pytorch(keyed, weights, arch, mean_image))
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("Enter")
    assert result(page)["pixels"][4 * 8 + 4] == 0  # (4, 4) was inked by the stroke: cleared

    # The other fill, then a test image from the menu.
    page.locator(f"{HOST} select").nth(2).select_option("mean image")
    mean = result(page)
    assert mean["fill"] == "mean image" and mean["occlusion"] != drawn["occlusion"]
    worst = max(worst, check_against_pytorch(mean, weights, arch, mean_image))
    page.locator(f"{HOST} select").first.select_option("3")
    picked = result(page)
    assert picked["pixels"] == [v / 16 for v in state["examples"][3]["ink"]]
    worst = max(worst, check_against_pytorch(picked, weights, arch, mean_image))
    page.locator(f"{HOST} select").nth(2).select_option("zero")
    return max(worst, check_against_pytorch(result(page), weights, arch, mean_image))


def show_note(page) -> None:
    page.locator(f"{HOST} button").click()  # a blank grid: the note shows


EXPLORER = harness.Explorer(
    host=HOST,
    page="book/vision-transformer.html",
    widget=live.digits_live,
    drive=drive,
    show_note=show_note,
    fits="select, button, canvas",
    pick=lambda state: state.get("arch", {}).get("model") == "tiny-vit",
)


def test_fragment_is_labelled_and_keyboard_reachable(browser, fragment_page):
    with harness.open_fragment(browser, fragment_page, EXPLORER) as offline:
        page = offline.page
        harness.assert_labelled(page, EXPLORER)
        reached = [tag.split(":")[0] for tag in harness.tab_through(page, 5)]
        assert reached == ["SELECT", "BUTTON", "SELECT", "SELECT", "CANVAS"]
        page.keyboard.press("Space")  # ink the focus cell (3, 3) from the keyboard
        assert result(page)["pixels"][3 * 8 + 3] > 0


def test_phone_draws_with_a_finger_and_fits(browser, fragment_page):
    _, widget = fragment_page
    phone = {"height": 844, "has_touch": True, "is_mobile": True}
    with harness.open_at_width(browser, fragment_page, EXPLORER, 390, **phone) as offline:
        page = offline.page
        page.locator(f"{HOST} button").tap()  # clear
        canvas = page.locator(f"{HOST} canvas").first
        canvas.scroll_into_view_if_needed()
        box = grid_box(page)
        cdp = offline.context.new_cdp_session(page)
        path = [(2, 1), (2, 2), (2, 3), (2, 4), (2, 5), (2, 6)]
        points = [cell_centre(box, *cell) for cell in path]
        scroll = page.evaluate("window.scrollY")
        cdp.send(
            "Input.dispatchTouchEvent",
            {"type": "touchStart", "touchPoints": [{"x": points[0][0], "y": points[0][1]}]},
        )
        for x, y in points[1:]:
            cdp.send(
                "Input.dispatchTouchEvent",
                {"type": "touchMove", "touchPoints": [{"x": x, "y": y}]},
            )
        cdp.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})
        shown = result(page)
        assert {divmod(i, 8) for i, v in enumerate(shown["pixels"]) if v} == set(path)
        assert page.evaluate("window.scrollY") == scroll  # the finger drew, it did not scroll
        check_against_pytorch(shown, widget.weights, widget.arch, widget.mean_image)


def test_captions_follow_the_models_patches_and_blocks(browser, tmp_path):
    # A model with 4 x 4 patches and 3 blocks: the captions and legend name its sizes
    # (not the chapter's 2 x 2 and block 1), and the blank-grid note is a polite live region.
    from attnbook.vit import TinyViT

    widget = live.digits_live(TinyViT(patch_size=4, num_layers=3))
    harness.write_page(tmp_path, widget)
    with harness.offline_page(browser, tmp_path, "index.html", EXPLORER) as offline:
        page = offline.page
        captions = page.locator(f"{HOST} figcaption").all_inner_texts()
        assert "your digit (8 x 8 pixels, 4 x 4 patches in orange)" in captions
        assert "raw [CLS] attention, last block (block 2), mean of the heads" in captions
        legend = page.locator(HOST).inner_text()
        assert "one numbered square per 4 x 4 patch" in legend
        note = page.locator(f"{HOST} .attnbook-live-note")
        assert note.get_attribute("aria-live") == "polite"
        check_against_pytorch(result(page), widget.weights, widget.arch, widget.mean_image)
