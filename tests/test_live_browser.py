"""The live explorer of chapter 11 in headless Chromium, offline: typed input, read
back from the page's data attributes, equals PyTorch's forward on the same weights.

Runs on a page holding only the explorer's fragment (no site needed) and on the
built chapter page (`make book`). Every request that is not to the local test
server is aborted and recorded (tools.browser.Offline); so are console errors.
"""

from __future__ import annotations

import json

import pytest
import torch

from attnbook.widgets import live
from attnbook.widgets.live.induction import run
from tools.browser import Offline
from tools.site import page_weight, require_site, serve

LIVE_PAGE = "book/induction-heads.html"
TYPED = "7 21 3 44 9 30 7 21 3 44"  # a segment of four tokens, repeated


def result(page) -> dict:
    """The numbers and notes the explorer shows now."""
    return page.evaluate(
        """() => {
            const host = document.querySelector('.attnbook-live');
            const ds = host.querySelector('.attnbook-live-result').dataset;
            const note = host.querySelector('.attnbook-live-note');
            const status = host.querySelector('[role=status]');
            return {tokens: JSON.parse(ds.tokens), logits: JSON.parse(ds.logits),
                    previous: JSON.parse(ds.previous), induction: JSON.parse(ds.induction),
                    predictions: JSON.parse(ds.predictions), updates: Number(ds.updates),
                    note: note.hidden ? '' : note.textContent,
                    noteShown: !note.hidden && note.getBoundingClientRect().height > 0,
                    status: status.textContent};
        }"""
    )


def type_into(page, text: str) -> dict:
    field = page.locator(".attnbook-live input[type=text]")
    field.fill("")
    field.press_sequentially(text)
    return result(page)


def check_against_pytorch(shown: dict, weights: bytes, arch: dict, heads: dict) -> float:
    """Largest difference between the page's numbers and PyTorch's; asserts the tolerances."""
    tokens = shown["tokens"]
    logits, attention = run(weights, arch, tokens)
    logit_diff = (torch.tensor(shown["logits"]).reshape(logits.shape) - logits).abs().max()
    worst = float(logit_diff)
    assert logit_diff < 1e-4, f"logits differ by {logit_diff}"
    for key in ("previous", "induction"):
        layer, head = heads[key]
        drawn = torch.tensor(shown[key]).reshape(len(tokens), len(tokens))
        diff = (drawn - attention[layer][head]).abs().max()
        assert diff < 1e-5, f"{key} head differs by {diff}"
        worst = max(worst, float(diff))
    assert shown["predictions"] == logits.argmax(-1).tolist()
    return worst


def drive(page, weights: bytes, arch: dict, heads: dict) -> None:
    page.wait_for_selector(".attnbook-live-result[data-updates]", state="attached")
    start = result(page)
    assert start["tokens"] and start["note"] == "" and len(start["status"]) > 40
    check_against_pytorch(start, weights, arch, heads)

    shown = type_into(page, TYPED)
    assert shown["tokens"] == [int(t) for t in TYPED.split()]
    assert shown["updates"] > start["updates"] + len(TYPED) - 2  # one redraw a keystroke
    check_against_pytorch(shown, weights, arch, heads)
    assert shown["status"] != start["status"]

    # The query slider moves the announced row.
    slider = page.locator(".attnbook-live input[type=range]")
    slider.focus()
    page.keyboard.press("End")
    assert "Position 9 holds token 44" in result(page)["status"]

    # Bad input: a visible note in plain words, never a silent wrong picture.
    shown = type_into(page, "3 x 99 17")
    assert shown["tokens"] == [3, 17] and shown["noteShown"]
    assert "“x”" in shown["note"] and "“99”" in shown["note"] and "0 to 63" in shown["note"]
    check_against_pytorch(shown, weights, arch, heads)
    shown = type_into(page, "  ")
    assert shown["tokens"] == [] and shown["noteShown"] and "at least one" in shown["note"]
    assert shown["logits"] == [] and shown["status"] == "No tokens: nothing to show."
    shown = type_into(page, " ".join(str(i) for i in range(45)))
    assert len(shown["tokens"]) == 40 and "at most 40" in shown["note"]
    check_against_pytorch(shown, weights, arch, heads)

    # A random sequence with a repeat: 40 tokens, no note.
    page.locator(".attnbook-live button").click()
    shown = result(page)
    assert len(shown["tokens"]) == 40 and shown["note"] == ""
    check_against_pytorch(shown, weights, arch, heads)


@pytest.fixture(scope="module")
def fragment_page(tmp_path_factory):
    widget = live.induction_live()
    folder = tmp_path_factory.mktemp("live")
    (folder / "index.html").write_text(
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width'><title>live</title></head>"
        f"<body>{widget.to_html()}</body></html>",
        encoding="utf-8",
    )
    return folder, widget


def test_fragment_runs_pytorch_forward_offline(browser, fragment_page):
    folder, widget = fragment_page
    offline = Offline(browser, viewport={"width": 1280, "height": 900})
    try:
        with serve(folder) as base:
            offline.page.goto(f"{base}/index.html")
            drive(offline.page, widget.weights, widget.arch, widget.heads)
    finally:
        offline.close()
    assert offline.blocked == []
    assert offline.errors == []


def test_fragment_is_labelled_and_keyboard_reachable(browser, fragment_page):
    folder, _ = fragment_page
    offline = Offline(browser, viewport={"width": 1280, "height": 900})
    try:
        with serve(folder) as base:
            page = offline.page
            page.goto(f"{base}/index.html")
            page.wait_for_selector(".attnbook-live-result[data-updates]", state="attached")
            unlabelled = page.evaluate(
                """() => [...document.querySelectorAll('.attnbook-live input')]
                       .filter(el => !el.labels.length).map(el => el.outerHTML)"""
            )
            assert unlabelled == []
            assert page.locator(".attnbook-live [role=status]").count() == 1
            reached = []
            page.keyboard.press("Tab")
            for _ in range(5):
                reached.append(
                    page.evaluate(
                        "document.activeElement.tagName + ':' + (document.activeElement.type || '')"
                    )
                )
                page.keyboard.press("Tab")
            assert reached[:3] == ["INPUT:text", "BUTTON:button", "INPUT:range"]
            page.keyboard.press("Shift+Tab")
            page.keyboard.press("Shift+Tab")
            page.keyboard.press("Shift+Tab")
            page.keyboard.press("Shift+Tab")
            page.keyboard.press("Enter")  # the random-sequence button, from the keyboard
            assert len(result(page)["tokens"]) == 40
    finally:
        offline.close()
    assert offline.errors == []


@pytest.mark.parametrize("width", [1280, 390])
def test_fragment_fits_desktop_and_phone(browser, fragment_page, width):
    folder, _ = fragment_page
    offline = Offline(browser, viewport={"width": width, "height": 900})
    try:
        with serve(folder) as base:
            page = offline.page
            page.goto(f"{base}/index.html")
            page.wait_for_selector(".attnbook-live-result[data-updates]", state="attached")
            box = page.evaluate(
                """() => {
                    const host = document.querySelector('.attnbook-live');
                    const rect = el => el.getBoundingClientRect();
                    const canvases = [...host.querySelectorAll('canvas')].map(rect);
                    return {page: document.documentElement.scrollWidth,
                            right: Math.max(...[...host.querySelectorAll('input,button,canvas,label,[role=status]')]
                                .map(el => rect(el).right)),
                            canvases: canvases.map(r => [r.left, r.top, r.width])};
                }"""
            )
            assert box["page"] <= width, f"the page scrolls sideways at {width} px"
            assert box["right"] <= width
            assert all(w > 200 for _, _, w in box["canvases"])
            if width == 1280:  # the two heads side by side
                (l0, t0, _), (l1, t1, _) = box["canvases"]
                assert abs(t0 - t1) < 40 and l1 > l0 + 200
            # The field is usable: typing still works.
            assert type_into(page, "1 2 3 1 2")["tokens"] == [1, 2, 3, 1, 2]
    finally:
        offline.close()
    assert offline.errors == []


def test_fragment_shows_stored_picture_without_javascript(browser, fragment_page):
    folder, widget = fragment_page
    context = browser.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        with serve(folder) as base:
            page.goto(f"{base}/index.html")
            img = page.locator(".attnbook-live-fallback")
            assert img.is_visible()
            assert img.evaluate("el => el.naturalWidth") > 400
            assert img.get_attribute("alt") == widget.summary()
            assert page.locator(".attnbook-live").count() == 0
    finally:
        context.close()


def test_built_page_runs_the_chapter_model_offline(browser):
    site = require_site()
    path = site / LIVE_PAGE
    assert page_weight(path) <= 1024 * 1024
    html = path.read_text(encoding="utf-8")
    assert html.count('class="attnbook-live-host"') == 1
    # The state the page carries: the notebook's model, packed.
    start = html.index('class="attnbook-live-state">') + len('class="attnbook-live-state">')
    state = json.loads(html[start : html.index("</script>", start)])
    import base64

    weights = base64.b64decode(state["weights"])
    offline = Offline(browser, viewport={"width": 1280, "height": 900})
    try:
        with serve(site) as base:
            offline.page.goto(f"{base}/{LIVE_PAGE}", wait_until="load")
            offline.page.locator(".attnbook-live").scroll_into_view_if_needed()
            drive(offline.page, weights, state["arch"], state["heads"])
    finally:
        offline.close()
    assert offline.blocked == []
    assert offline.errors == []


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_fragment_passes_axe_with_a_note_shown(browser, fragment_page, scheme):
    from tests.test_reading import blocking_violations

    folder, _ = fragment_page
    offline = Offline(browser, color_scheme=scheme, viewport={"width": 1280, "height": 900})
    try:
        with serve(folder) as base:
            page = offline.page
            page.goto(f"{base}/index.html")
            page.wait_for_selector(".attnbook-live-result[data-updates]", state="attached")
            assert type_into(page, "3 x 70 5")["noteShown"]
            assert blocking_violations(page) == []
    finally:
        offline.close()
    assert offline.errors == []
