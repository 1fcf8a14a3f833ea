"""What the browser tests of the four live explorers share (chapters 10, 11, 13, 15).

Each ``tests/test_live_browser*.py`` describes its explorer in a module-level
:class:`Explorer` named ``EXPLORER`` (what it types or draws, what it compares
with PyTorch) and imports the shared tests below, which pytest then collects in
that module (``from tests.live_harness import *``): the fixtures ``explorer``
and ``fragment_page`` (tests/conftest.py) read its ``EXPLORER``.

The harness: a page holding only the explorer's fragment (no site needed) or
the built chapter page (``make book``), served on 127.0.0.1 and opened in an
:class:`tools.browser.Offline` context: every request to another host is
aborted and recorded, and so is every console error; both lists must be empty.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tools.browser import Offline
from tools.site import page_weight, require_site, serve

DESKTOP = {"width": 1280, "height": 900}
PAGE_BUDGET = 1024 * 1024  # bytes: the page with the runtime and the weights
STATE = 'class="attnbook-live-state">'

# The tests every explorer runs: ``from tests.live_harness import *`` puts them
# in a test module, where pytest collects them with that module's EXPLORER.
__all__ = [
    "test_built_page_runs_the_chapter_model_offline",
    "test_fragment_passes_axe_with_a_note_shown",
    "test_fragment_runs_pytorch_forward_offline",
    "test_fragment_shows_stored_picture_without_javascript",
]


@dataclass(frozen=True)
class Explorer:
    """One live explorer, as its browser tests drive it."""

    host: str  # the explorer's root element, e.g. ".attnbook-live-dates"
    page: str  # its built chapter page, relative to the site
    widget: Callable[[], object]  # the widget of the fragment page (its default input)
    # Types or draws into the page and compares what it shows with PyTorch on
    # ``state`` (the page's state: weights as bytes); may return the largest difference.
    drive: Callable[[object, dict], float | None]
    show_note: Callable[[object], None]  # bad input: the note in plain words shows
    fits: str  # the parts that must lie within a phone's width
    controls: str = "input, select, textarea"  # the form controls that need a label
    fallback_width: int = 400  # the stored picture's least natural width, in pixels
    # On a built page with several live explorers: which state is this one's.
    pick: Callable[[dict], bool] | None = None


def write_page(folder: Path, widget) -> Path:
    """A page holding only ``widget``'s website fragment."""
    path = folder / "index.html"
    path.write_text(
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width'><title>live</title></head>"
        f"<body>{widget.to_html()}</body></html>",
        encoding="utf-8",
    )
    return path


def widget_state(widget) -> dict:
    """The state the widget hands its page (its synced traits), from Python."""
    return {name: getattr(widget, name) for name in widget.trait_names(sync=True)}


def page_state(html: str, explorer: Explorer) -> dict:
    """The state a page carries for ``explorer``: its JSON, weights decoded to bytes."""
    states = []
    start = html.find(STATE)
    while start >= 0:
        start += len(STATE)
        states.append(json.loads(html[start : html.index("</script>", start)]))
        start = html.find(STATE, start)
    if explorer.pick is None:
        assert html.count('class="attnbook-live-host"') == 1
        (state,) = states
    else:
        state = next(s for s in states if explorer.pick(s))
    return {
        key: base64.b64decode(value) if key.endswith("weights") else value
        for key, value in state.items()
    }


@contextmanager
def offline_page(
    browser, root: Path, path: str, explorer: Explorer, scroll: bool = False, **context
) -> Iterator[Offline]:
    """``root/path`` served and opened offline, the explorer's first result drawn.

    ``context`` goes to the browser context (default: a 1280 px desktop). On
    leaving, no request may have gone to another host and no console error
    may have been logged."""
    context.setdefault("viewport", DESKTOP)
    offline = Offline(browser, **context)
    try:
        with serve(root) as base:
            offline.page.goto(f"{base}/{path}", wait_until="load")
            if scroll:  # a long chapter page: the explorer is far down
                offline.page.locator(explorer.host).scroll_into_view_if_needed()
            offline.page.wait_for_selector(
                f"{explorer.host} .attnbook-live-result[data-updates]", state="attached"
            )
            yield offline
    finally:
        offline.close()
    assert offline.blocked == [], f"requests to other hosts: {offline.blocked}"
    assert offline.errors == [], f"console errors: {offline.errors}"


def open_fragment(browser, fragment_page, explorer: Explorer, **context):
    """:func:`offline_page` on the fragment page (fixture ``fragment_page``)."""
    folder, _ = fragment_page
    return offline_page(browser, folder, "index.html", explorer, **context)


@contextmanager
def open_at_width(browser, fragment_page, explorer: Explorer, width: int, **context):
    """:func:`open_fragment` ``width`` px wide, its page checked to fit
    (:func:`assert_fits`); yields the page."""
    viewport = {"width": width, "height": context.pop("height", 900)}
    with open_fragment(browser, fragment_page, explorer, viewport=viewport, **context) as offline:
        assert_fits(offline.page, explorer, width)
        yield offline


def retype(page, field: str, text: str) -> None:
    """Empty the field ``field`` (a selector), then type ``text`` a key at a time."""
    locator = page.locator(field)
    locator.fill("")
    locator.press_sequentially(text)


def assert_labelled(page, explorer: Explorer) -> None:
    """Every form control has a label; one ``role=status`` announces the result."""
    unlabelled = page.evaluate(
        """([host, controls]) => [...document.querySelector(host).querySelectorAll(controls)]
               .filter(el => !el.labels.length).map(el => el.outerHTML)""",
        [explorer.host, explorer.controls],
    )
    assert unlabelled == []
    assert page.locator(f"{explorer.host} [role=status]").count() == 1


def tab_through(page, presses: int) -> list[str]:
    """The elements Tab reaches from the top of the page, as ``TAG:type``."""
    reached = []
    page.keyboard.press("Tab")
    for _ in range(presses):
        reached.append(
            page.evaluate(
                "document.activeElement.tagName + ':' + (document.activeElement.type || '')"
            )
        )
        page.keyboard.press("Tab")
    return reached


def assert_fits(page, explorer: Explorer, width: int) -> None:
    """No sideways scrolling at ``width`` px, and the explorer's parts within it."""
    box = page.evaluate(
        """([host, parts]) => ({page: document.documentElement.scrollWidth,
               right: Math.max(...[...document.querySelector(host).querySelectorAll(parts)]
                   .map(el => el.getBoundingClientRect().right))})""",
        [explorer.host, explorer.fits],
    )
    assert box["page"] <= width, f"the page scrolls sideways at {width} px"
    assert box["right"] <= width


# ---- the tests every explorer runs (imported into each test module) ----


def test_fragment_runs_pytorch_forward_offline(browser, explorer, fragment_page):
    _, widget = fragment_page
    with open_fragment(browser, fragment_page, explorer) as offline:
        worst = explorer.drive(offline.page, widget_state(widget))
    if worst is not None:
        print(f"largest difference from PyTorch: {worst:.1e}")


def test_fragment_shows_stored_picture_without_javascript(browser, explorer, fragment_page):
    folder, widget = fragment_page
    context = browser.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        with serve(folder) as base:
            page.goto(f"{base}/index.html")
            img = page.locator(".attnbook-live-fallback")
            assert img.is_visible()
            assert img.evaluate("el => el.naturalWidth") > explorer.fallback_width
            assert img.get_attribute("alt") == widget.summary()
            assert page.locator(explorer.host).count() == 0
    finally:
        context.close()


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_fragment_passes_axe_with_a_note_shown(browser, explorer, fragment_page, scheme):
    from tests.test_reading import blocking_violations

    with open_fragment(browser, fragment_page, explorer, color_scheme=scheme) as offline:
        page = offline.page
        dark = page.evaluate("matchMedia('(prefers-color-scheme: dark)').matches")
        assert dark == (scheme == "dark"), f"the page is not in {scheme} mode"
        explorer.show_note(page)
        assert page.locator(f"{explorer.host} .attnbook-live-note").is_visible()
        assert blocking_violations(page) == []


def test_built_page_runs_the_chapter_model_offline(browser, explorer):
    site = require_site()
    path = site / explorer.page
    assert page_weight(path) <= PAGE_BUDGET
    state = page_state(path.read_text(encoding="utf-8"), explorer)
    with offline_page(browser, site, explorer.page, explorer, scroll=True) as offline:
        explorer.drive(offline.page, state)
