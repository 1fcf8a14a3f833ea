"""The built decks (``make slides``, tools/slides.py), opened offline in Chromium.

Every deck: within 1 MiB (its HTML; what it loads besides is shared by every
deck in _build/html/slides/_static), no request leaves the page, no console
error, the mathematics typeset, no slide taller than the slide, every explorer
answers its keyboard and draws each new frame exactly over its picture, every
live explorer answers the reader's own input, and a PDF with one page per slide
whose links lead to the published website and whose title page carries the
book's credit and licences.
"""

from __future__ import annotations

import re

import pytest

from tools import slides
from tools.book_index import site_url
from tools.browser import Offline, controls, picture, step_control
from tools.site import config, serve

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
def test_pdf_links_lead_to_the_published_book_not_the_print_server(name):
    """The decks are printed from a local server; a link in the PDF must lead to the
    published website (the title slide's to the chapter), never to 127.0.0.1."""
    pdf = slides.OUT / f"{name}.pdf"
    links = slides.pdf_links(pdf)
    assert slides.local_links(pdf) == [], f"{name}.pdf links to this machine: {links}"
    chapter = site_url(config()) + f"book/{name}.html"
    assert (1, chapter) in links, f"{name}.pdf: the title slide does not link {chapter}: {links}"


@pytest.mark.parametrize("name", NAMES)
def test_pdf_title_page_carries_the_credit_and_licences(name):
    """The printed deck, shared alone, still says whose it is and under which licences
    (tools.slides.credit_html on the title slide), with working links to both."""
    from pypdf import PdfReader

    pdf = slides.OUT / f"{name}.pdf"
    text = " ".join(PdfReader(pdf).pages[0].extract_text().split())
    book = config()
    for wanted in (book["title"], book["author"], "licensed under CC BY 4.0", "and MIT"):
        assert wanted in text, f"{name}.pdf, title page: no {wanted!r} in {text!r}"
    links = [uri for page, uri in slides.pdf_links(pdf) if page == 1]
    for wanted in (site_url(book), slides.CC_BY, slides.MIT):
        assert wanted in links, f"{name}.pdf, title page: no link to {wanted}: {links}"


def test_printing_refuses_a_pdf_that_links_the_print_server(tmp_path, monkeypatch):
    """The links left as the page has them (relative), the print comes out linking
    127.0.0.1, and tools.slides refuses it by name rather than write it."""
    import shutil

    name = "masked-softmax"
    shutil.copytree(slides.OUT / "_static", tmp_path / "_static")
    shutil.copyfile(built(name), tmp_path / f"{name}.html")
    monkeypatch.setattr(slides, "PUBLISH_LINKS_JS", "() => {}")
    with pytest.raises(RuntimeError, match=r"links \(page, address\) to the print server"):
        slides.print_pdfs([name], out=tmp_path)


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


# Where an explorer's picture is drawn: the base frame and the one layer shown (the pixels
# that differ from the base at this stop, placed by their left/top inside the picture), as
# drawn on screen (reveal.js scales the whole slide, so the scale is measured too).
FRAME_JS = """root => {
    const box = el => { const b = el.getBoundingClientRect();
        return {left: b.left, top: b.top, width: b.width, height: b.height}; };
    const pic = root.querySelector('.attnbook-picture');
    const base = pic.querySelector('img.attnbook-base');
    const shown = [...pic.querySelectorAll('img[aria-hidden]')].filter(el => !el.hidden);
    return {picture: box(pic), base: box(base),
            natural: [base.naturalWidth, base.naturalHeight],
            loaded: base.complete && shown.every(el => el.complete && el.naturalWidth > 0),
            layers: shown.map(el => ({box: box(el), at: [el.style.left, el.style.top],
                                      natural: [el.naturalWidth, el.naturalHeight]}))};
}"""


def _frame(page, explorer) -> dict:
    for _ in range(40):  # up to 2 s for the frames to decode
        frame = explorer.evaluate(FRAME_JS)
        if frame["loaded"]:
            return frame
        page.wait_for_timeout(50)
    raise AssertionError(f"the explorer's frames did not load: {frame}")


def _misdrawn(frame: dict, tolerance: float = 0.5) -> list[str]:
    """How the frame is drawn wrong: a base picture not at its own proportions or not
    filling the picture's box, or a shown layer not exactly over the part of the base
    picture it replaces (its left/top and size in the base's pixels, as the base is drawn)."""
    base, natural = frame["base"], frame["natural"]
    across, down = base["width"] / natural[0], base["height"] / natural[1]
    wrong = []
    if abs(down - across) * natural[1] > tolerance:
        wrong.append(
            f"base picture {natural[0]}x{natural[1]} drawn {base['width']:.1f}x"
            f"{base['height']:.1f}: squeezed (its height should be {natural[1] * across:.1f})"
        )
    for key in ("left", "top", "width", "height"):
        if abs(base[key] - frame["picture"][key]) > tolerance:
            wrong.append(
                f"base picture's {key} {base[key]:.1f}, its box's {frame['picture'][key]:.1f}"
            )
    for layer in frame["layers"]:
        left, top = (float(at.removesuffix("px")) for at in layer["at"])
        want = {
            "left": base["left"] + left * across,
            "top": base["top"] + top * down,
            "width": layer["natural"][0] * across,
            "height": layer["natural"][1] * down,
        }
        for key, value in want.items():
            if abs(layer["box"][key] - value) > tolerance:
                wrong.append(
                    f"the new frame for pixels ({left:g}, {top:g}) has {key} "
                    f"{layer['box'][key]:.1f}, where the base picture has them at {value:.1f}"
                )
    return wrong


@pytest.mark.parametrize("name", NAMES)
def test_deck_slider_frames_sit_exactly_over_the_base_picture(name, browser, base):
    """Each slider demo moved stop by stop: the picture stays where and as large as it was,
    drawn at its own proportions, and each new frame (a layer of the pixels that change)
    covers exactly its place on the base picture. The theme's ``.reveal img {max-height:
    95%}`` once squeezed the base picture alone, so old and new frames overlapped."""
    built(name)
    with Offline(browser, viewport={"width": 1280, "height": 720}) as tab:
        page = tab.page
        page.goto(f"{base}/{name}.html", wait_until="load")
        page.wait_for_function("window.Reveal && Reveal.isReady()")
        page.evaluate("MathJax.startup.promise")
        explorers = page.locator(".attnbook-explorer")
        if explorers.count() == 0:
            pytest.skip(f"{name}: no slider demo")
        wrong = []
        for index in range(explorers.count()):
            explorer = explorers.nth(index)
            show_slide_of(page, explorer)
            control = controls(explorer)[0]
            before = _frame(page, explorer)
            wrong += [f"explorer {index}, before a move: {w}" for w in _misdrawn(before)]
            layered = 0
            stops = control.evaluate("el => el.options ? el.options.length : Number(el.max) + 1")
            for stop in range(min(stops, 6)):
                step_control(page, control)
                after = _frame(page, explorer)
                where = f"explorer {index}, after {stop + 1} moves"
                moved = [
                    k for k in after["base"] if abs(after["base"][k] - before["base"][k]) > 0.5
                ]
                if moved:
                    wrong.append(
                        f"{where}: the picture's {moved} changed: {before['base']} -> {after['base']}"
                    )
                if len(after["layers"]) > 1:
                    wrong.append(f"{where}: {len(after['layers'])} frames shown at once")
                wrong += [f"{where}: {w}" for w in _misdrawn(after)]
                layered += len(after["layers"])
            assert layered, f"{name}, explorer {index}: no move showed a new frame"
        kinds = list(dict.fromkeys(w.split(": ", 1)[1] for w in wrong))  # without the where
        assert wrong == [], f"{name}: {len(wrong)} misdrawn, among them: " + "; ".join(kinds[:4])
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


# The concept test (tools.slides.concept_slides): the question for a vote, then the revote
# slide whose answer is one fragment, revealed by the presenter's next press.
CONCEPT_STATE_JS = """() => {
    const slide = Reveal.getCurrentSlide();
    const parts = [...slide.querySelectorAll('.fragment')];
    return {concept: slide.dataset.concept || null, index: Reveal.getIndices().h,
            shown: parts.map(el => getComputedStyle(el).visibility === 'visible'
                                   && el.classList.contains('visible')),
            text: slide.innerText, height: slide.scrollHeight, width: slide.scrollWidth,
            maths: slide.querySelectorAll('mjx-container').length};
}"""


def check_concept_test(page, name: str) -> None:
    """Turn to the deck's concept test with the presenter's key, vote slide then answer."""
    asked = page.evaluate(
        "[...document.querySelectorAll('.slides > section')]"
        ".findIndex(s => s.dataset.concept === 'question')"
    )
    assert asked > 0, f"{name}: no concept test"
    page.evaluate(f"Reveal.slide({asked - 1})")
    page.keyboard.press("ArrowRight")  # to the question, as a presenter's clicker does
    state = page.evaluate(CONCEPT_STATE_JS)
    assert (state["concept"], state["index"], state["shown"]) == ("question", asked, [])
    assert "A. " in state["text"] and "Vote, then discuss with your neighbour" in state["text"]
    page.keyboard.press("ArrowRight")  # to the revote: the answer still hidden
    state = page.evaluate(CONCEPT_STATE_JS)
    assert state["concept"] == "answer" and state["index"] == asked + 1
    assert state["shown"] and not any(state["shown"]), f"{name}: the answer shows before the revote"
    page.keyboard.press("ArrowRight")  # the answer, on the same slide
    page.wait_for_timeout(400)  # reveal.js fades a fragment in
    state = page.evaluate(CONCEPT_STATE_JS)
    assert state["index"] == asked + 1, f"{name}: the press turned the slide, not the answer"
    assert all(state["shown"]), f"{name}: the answer was not revealed: {state['shown']}"
    assert re.search(r"Answer: [A-F]", state["text"]) and "Misconception" in state["text"]
    assert state["height"] <= slides.SLIDE_HEIGHT and state["width"] <= slides.SLIDE_WIDTH, (
        f"{name}: the revealed answer overflows the slide ({state['width']}x{state['height']})"
    )
    assert "\\(" not in page.locator(".slides").inner_text(), f"{name}: maths not typeset"


def test_concept_test_reveals_its_answer_on_the_next_press(browser, tmp_path, monkeypatch):
    """A deck built here with the fixture's long deck question (maths, key C): the vote
    slide, then the revote slide with the answer hidden until the next press, typeset,
    and fitting the slide once shown."""
    from tests.test_slides import CONCEPT_TOML, concept_questions, three_slides

    concept_questions(monkeypatch, {"a-deck": CONCEPT_TOML})
    slides.copy_assets(tmp_path)
    (tmp_path / "a-deck.html").write_text(slides.deck_html(three_slides(), "a-deck"))
    with serve(tmp_path) as url, Offline(browser, viewport={"width": 1280, "height": 720}) as tab:
        page = tab.page
        page.goto(f"{url}/a-deck.html", wait_until="load")
        page.wait_for_function("window.Reveal && Reveal.isReady()")
        page.evaluate("MathJax.startup.promise")
        check_concept_test(page, "a-deck")
        state = page.evaluate(CONCEPT_STATE_JS)
        assert "Answer: C" in state["text"] and state["maths"] > 0
        assert tab.blocked == [] and tab.errors == [], (tab.blocked, tab.errors)


@pytest.mark.parametrize("name", NAMES)
def test_built_deck_concept_test_reveals_its_answer(name, browser, base):
    if 'data-concept="question"' not in built(name).read_text(encoding="utf-8"):
        pytest.skip(f"{name}: no concept test (its chapter has no deck question yet)")
    with Offline(browser, viewport={"width": 1280, "height": 720}) as tab:
        page = tab.page
        page.goto(f"{base}/{name}.html", wait_until="load")
        page.wait_for_function("window.Reveal && Reveal.isReady()")
        page.evaluate("MathJax.startup.promise")
        check_concept_test(page, name)
        assert tab.errors == [], f"{name}: console errors: {tab.errors}"
