"""The built decks (``make slides``, tools/slides.py), opened offline in Chromium.

Every deck: within 1 MiB (its HTML; what it loads besides is shared by every
deck in _build/html/slides/_static), no request leaves the page, no console
error, the mathematics typeset, no slide taller than the slide, every explorer
answers its keyboard, every live explorer answers the reader's own input, and a
PDF with one page per slide.
"""

from __future__ import annotations

import re

import pytest

from tools import slides
from tools.browser import Offline, controls, picture, step_control
from tools.site import serve

NAMES = slides.deck_names()


def built(name: str):
    deck = slides.OUT / f"{name}.html"
    if not deck.is_file():
        raise AssertionError(f"no deck {deck}: run `make slides` first")
    return deck


def show_slide_of(page, element) -> int:
    """Turn the deck to the slide that holds ``element``; its index."""
    slide = element.evaluate(
        "el => [...document.querySelectorAll('.slides > section')].indexOf(el.closest('section'))"
    )
    page.evaluate(f"Reveal.slide({slide})")
    return slide


@pytest.fixture(scope="module")
def base():
    with serve(slides.OUT) as url:
        yield url


@pytest.mark.parametrize("name", NAMES)
def test_deck_within_budget(name):
    size = built(name).stat().st_size
    assert size <= slides.MAX_DECK_BYTES, f"{name}.html: {size} bytes"


def test_vendored_licences_travel_with_the_decks():
    static = slides.OUT / "_static"
    assert "Permission is hereby granted" in (static / "reveal" / "LICENSE").read_text(
        encoding="utf-8"
    )
    assert "Apache License" in (static / "mathjax" / "LICENSE").read_text(encoding="utf-8")
    assert "MathJax" in (static / "mathjax" / "NOTICE").read_text(encoding="utf-8")


@pytest.mark.parametrize("name", NAMES)
def test_pdf_has_a_page_per_slide(name):
    from pypdf import PdfReader

    pages = len(PdfReader(slides.OUT / f"{name}.pdf").pages)
    sections = built(name).read_text(encoding="utf-8").count("<section")
    assert pages == sections, f"{name}.pdf: {pages} pages for {sections} slides"


@pytest.mark.parametrize("name", NAMES)
def test_deck_offline_typeset_fitting_and_live(name, browser, base):
    built(name)
    with Offline(browser, viewport={"width": 1280, "height": 720}) as tab:
        page = tab.page
        page.goto(f"{base}/{name}.html", wait_until="load")
        page.wait_for_function("window.Reveal && Reveal.isReady()")
        page.evaluate("MathJax.startup.promise")
        total = page.evaluate("Reveal.getTotalSlides()")
        assert 10 <= total <= 15
        html = built(name).read_text(encoding="utf-8")
        if re.search(r"\\\(|\\\[", html):
            assert page.locator("mjx-container").count() > 0, "mathematics not typeset"
            assert "\\(" not in page.locator(".slides").inner_text()
        tall = page.evaluate(
            f"""[...document.querySelectorAll('.slides > section')]
                .map((s, i) => [i + 1, s.scrollHeight, s.scrollWidth])
                .filter(([, h, w]) => h > {slides.SLIDE_HEIGHT} || w > {slides.SLIDE_WIDTH})"""
        )
        assert tall == [], f"{name}: slides (number, height, width) overflow: {tall}"
        explorers = page.locator(".attnbook-explorer")
        for index in range(explorers.count()):
            explorer = explorers.nth(index)
            slide = show_slide_of(page, explorer)
            control = controls(explorer)[0]
            before = picture(explorer)["key"]
            step_control(page, control)
            for _ in range(40):  # up to 2 s for the picture to change
                if picture(explorer)["key"] != before:
                    break
                page.wait_for_timeout(50)
            assert picture(explorer)["key"] != before, f"{name}: explorer {index} did not answer"
            assert page.evaluate("Reveal.getIndices().h") == slide, "the arrow key turned the slide"
        assert tab.blocked == [], f"{name}: requests left the page: {tab.blocked}"
        assert tab.errors == [], f"{name}: console errors: {tab.errors}"


# The live explorers (chapters 10, 11, 13 and 15): the reader's own input, answered in the deck,
# offline. Each kind with a driver is driven as its site test drives it and compared with PyTorch
# on the deck's own weights; any other live explorer gets a typed key and must redraw.
def _deck_state(host) -> dict:
    """The state a live explorer's fragment carries, weights decoded to bytes."""
    import base64
    import json

    state = json.loads(host.locator(".attnbook-live-state").text_content())
    return {k: base64.b64decode(v) if k.endswith("weights") else v for k, v in state.items()}


def _drive_dates(page, host) -> None:
    from tests.test_live_browser_dates import check_against_pytorch, type_into

    shown = type_into(page, "1999/3/3")
    assert shown["text"] == "1999/3/3" and shown["mapShown"], shown["text"]
    check_against_pytorch(shown, _deck_state(host))


def _drive_digits(page, host) -> None:
    from tests.test_live_browser_digits import check_against_pytorch, result, stroke_with_mouse

    state = _deck_state(host)
    host.locator("button").click()  # clear the grid
    stroke = [(1, 2), (1, 3), (1, 4), (1, 5), (2, 5), (3, 4), (4, 4), (5, 3), (6, 3)]
    stroke_with_mouse(page, stroke)
    drawn = result(page)
    assert {divmod(i, 8) for i, v in enumerate(drawn["pixels"]) if v} == set(stroke)
    check_against_pytorch(drawn, state["weights"], state["arch"], state["mean_image"])
    canvas = host.locator("canvas").first
    canvas.focus()
    page.keyboard.press("ArrowRight")  # the focus cell: from (6, 3) to (6, 4)
    page.keyboard.press("Space")  # ink it; in the deck, neither key may turn the slide
    keyed = result(page)
    assert keyed["pixels"][6 * 8 + 4] > 0 and keyed["updates"] == drawn["updates"] + 1
    check_against_pytorch(keyed, state["weights"], state["arch"], state["mean_image"])


def _typed(field: str, typed: str, answer: str):
    """A driver that types into the explorer's text field, a key at a time as a reader types,
    and waits for its status line to say ``answer`` (the numbers themselves are checked
    against PyTorch in tests/test_live_browser_lm.py and tests/test_live_browser.py)."""

    def drive(page, host) -> None:
        box = host.locator(field)
        box.fill("")
        box.press_sequentially(typed)
        status = host.locator("[role=status]")
        for _ in range(40):  # up to 2 s for the explorer to answer
            if answer in status.text_content():
                break
            page.wait_for_timeout(50)
        assert answer in status.text_content(), f"no answer to {typed!r}: {status.text_content()}"

    return drive


def _drive_any(page, host) -> None:
    updates = "el => Number(el.querySelector('.attnbook-live-result').dataset.updates)"
    before = host.evaluate(updates)
    host.locator("input[type=text], textarea").first.press_sequentially(" ab")
    page.wait_for_function(f"([el, n]) => ({updates})(el) > n", arg=[host.element_handle(), before])


LIVE_DRIVERS = {
    ".attnbook-live-dates": _drive_dates,
    ".attnbook-live-digits": _drive_digits,
    ".attnbook-live-lm": _typed("textarea", "The key ", "After 8 characters the likeliest"),
    ".attnbook-live-induction": _typed("input[type=text]", "5 6 7 8 5 6 7", "of 6 positions."),
}


@pytest.mark.parametrize("name", NAMES)
def test_deck_live_explorers_answer_the_readers_input(name, browser, base):
    built(name)
    with Offline(browser, viewport={"width": 1280, "height": 720}) as tab:
        page = tab.page
        page.goto(f"{base}/{name}.html", wait_until="load")
        page.wait_for_function("window.Reveal && Reveal.isReady()")
        hosts = page.locator(".attnbook-live-host")
        for index in range(hosts.count()):
            host = hosts.nth(index)
            slide = show_slide_of(page, host)
            page.wait_for_function(
                "el => el.querySelector('.attnbook-live-result[data-updates]')",
                arg=host.element_handle(),
            )
            kind = next((k for k in LIVE_DRIVERS if host.locator(k).count()), None)
            LIVE_DRIVERS.get(kind, _drive_any)(page, host)
            assert page.evaluate("Reveal.getIndices().h") == slide, "a key turned the slide"
        assert tab.blocked == [], f"{name}: requests left the page: {tab.blocked}"
        assert tab.errors == [], f"{name}: console errors: {tab.errors}"
