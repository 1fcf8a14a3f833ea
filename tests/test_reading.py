"""The built site as different readers meet it: a screen reader, a phone, dark mode.

* Accessibility: axe-core (bundled in axe-playwright-python, nothing from a CDN)
  audits every built page in the theme's light and dark mode; no serious or
  critical violation is allowed.
* Phones: at 390 CSS px, figures and explorer pictures keep their natural size
  (they scroll sideways in their own box), so the text inside them stays at
  its drawn size; the SVG figures' smallest text is measured; the page itself
  never scrolls sideways.
* Dark mode: pictures are not dimmed, sit on a white card, and the explorer is
  not wrapped in the theme's grey output box. Screenshots of the checked
  elements are written to _build/screenshots/ for a person to look at.
* The page header: at 1280 and 390 px a page opens with one search control in
  view and no empty header band above it (screenshots header-*.png).
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from PIL import Image, ImageStat

from tests.test_site import pages
from tools.browser import Offline, picture
from tools.site import ROOT, SITE, require_site, serve

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 900}
MIN_TEXT_PX = 9.0
SCREENSHOTS = ROOT / "_build" / "screenshots"
BLOCKING = ("serious", "critical")


def built_pages() -> list[str]:
    """Every page of the book (tests.test_site.pages: not the decks that `make
    slides` may be writing beside it, which tests/test_slides_browser.py
    checks), less redirects (index.html forwards to the preface)."""
    site = require_site()
    return sorted(
        p.relative_to(site).as_posix()
        for p in pages(site)
        if not {"_sources", "_images"} & set(p.parts)
        and 'http-equiv="refresh"' not in p.read_text(encoding="utf-8")[:2000].lower()
    )


@pytest.fixture(scope="module")
def site_url():
    with serve(require_site()) as base:
        yield base


# Resolves when every finite animation and CSS transition on the page has run:
# the theme fades colours in after load, and axe's contrast rule must see the
# colours the page settles on, not a frame of the fade.
SETTLED_JS = """() => Promise.all(document.getAnimations()
    .filter(a => a.effect && a.effect.getComputedTiming().endTime !== Infinity)
    .map(a => a.finished.catch(() => null)))"""


def blocking_violations(page) -> list[str]:
    from axe_playwright_python.sync_playwright import Axe

    page.evaluate(SETTLED_JS)
    response = Axe().run(page).response
    return [
        f"{v['id']} ({v['impact']}): {v['help']}; e.g. {v['nodes'][0]['html'][:160]}"
        for v in response["violations"]
        if v["impact"] in BLOCKING
    ]


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_every_page_passes_axe(browser, site_url, scheme):
    failures = {}
    for path in built_pages():
        with Offline(browser, color_scheme=scheme, viewport=DESKTOP) as offline:
            offline.page.goto(f"{site_url}/{path}", wait_until="load")
            assert offline.page.evaluate("document.documentElement.dataset.theme") == scheme
            found = blocking_violations(offline.page)
            if found:
                failures[path] = found
    assert failures == {}, f"axe-core, {scheme} mode: {failures}"


def test_axe_catches_a_critical_violation(browser, site_url):
    """The audit is not blind: the references page's old markup fails it."""
    with Offline(browser) as offline:
        offline.page.goto(f"{site_url}/book/references.html", wait_until="load")
        offline.page.evaluate(
            """() => document.querySelectorAll('.citation-list > [role=listitem]')
                .forEach(el => el.setAttribute('role', 'doc-biblioentry'))"""
        )
        assert any("aria-required-children" in v for v in blocking_violations(offline.page))


def svg_min_font(path: Path) -> float:
    """The smallest font-size (user units) written in an SVG file."""
    sizes = re.findall(r'font-size[=:]\s*"?([0-9.]+)', path.read_text(encoding="utf-8"))
    assert sizes, f"{path} has no font-size"
    return min(float(size) for size in sizes)


# Every picture of a page's content: figures, cell outputs, explorer pictures.
PICTURES_JS = """() => [...document.querySelectorAll(
        '.bd-content figure img, .bd-content .cell_output img')]
    .filter(img => !img.hidden && img.getBoundingClientRect().width > 0)
    .map(img => ({src: img.getAttribute('src'), shown: img.getBoundingClientRect().width,
                  natural: img.naturalWidth}))"""


def phone_report(page, page_path: str) -> list[dict]:
    """Each picture's displayed scale and smallest text (SVG) at phone width."""
    rows = []
    for img in page.evaluate(PICTURES_JS):
        row = {"page": page_path, "src": img["src"][:60], "scale": img["shown"] / img["natural"]}
        if img["src"].endswith(".svg"):
            source = (SITE / Path(page_path).parent / img["src"]).resolve()
            row["text_px"] = svg_min_font(source) * row["scale"]
        rows.append(row)
    return rows


def test_phone_keeps_figures_legible(browser, site_url):
    too_small = []
    measured = []
    for path in built_pages():
        with Offline(browser, viewport=PHONE, is_mobile=True) as offline:
            offline.page.goto(f"{site_url}/{path}", wait_until="load")
            overflow = offline.page.evaluate(
                "document.scrollingElement.scrollWidth - window.innerWidth"
            )
            assert overflow <= 1, f"{path} scrolls sideways by {overflow}px at 390px"
            for row in phone_report(offline.page, path):
                measured.append(row)
                if row["scale"] < 0.99 or row.get("text_px", MIN_TEXT_PX) < MIN_TEXT_PX:
                    too_small.append(row)
            explorers = offline.page.locator(".attnbook-explorer")
            if explorers.count():
                SCREENSHOTS.mkdir(parents=True, exist_ok=True)
                explorers.first.scroll_into_view_if_needed()
                offline.page.screenshot(path=str(SCREENSHOTS / f"{Path(path).stem}-phone.png"))
            for i in range(explorers.count()):
                shown = picture(explorers.nth(i))
                row = {"page": path, "src": "explorer", "scale": shown["width"] / shown["natural"]}
                measured.append(row)
                if row["scale"] < 0.99:
                    too_small.append(row)
    assert measured, "no picture found on any page"
    assert too_small == [], f"shrunk below natural size at 390px: {too_small}"


def mean_luminance(png: bytes) -> float:
    picture_ = Image.open(io.BytesIO(png)).convert("L")
    box = picture_.size
    centre = picture_.crop((box[0] // 4, box[1] // 4, 3 * box[0] // 4, 3 * box[1] // 4))
    return ImageStat.Stat(centre).mean[0]


def dark_mode_checks(page) -> dict:
    return page.evaluate(
        """() => {
            const imgs = [...document.querySelectorAll(
                '.bd-content figure img, .bd-content .cell_output img')]
                .filter(img => !img.hidden && img.getBoundingClientRect().width > 0);
            const boxes = [...document.querySelectorAll('.attnbook-explorer')]
                .map(el => el.closest('.text_html, .output') || el);
            return {
                filters: imgs.map(img => getComputedStyle(img).filter),
                cards: imgs.map(img => getComputedStyle(img).backgroundColor),
                boxes: boxes.map(el => getComputedStyle(el).backgroundColor),
                // The readouts and the caption under the picture.
                labels: [...document.querySelectorAll(
                    '.attnbook-explorer output, .attnbook-explorer .attnbook-caption')]
                    .map(el => getComputedStyle(el).color),
            };
        }"""
    )


@pytest.mark.parametrize("page_path", ["book/attention-pooling.html", "book/attention-cues.html"])
def test_dark_mode_pictures_are_not_dimmed(browser, site_url, page_path):
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    shots = {}
    for scheme in ("light", "dark"):
        with Offline(browser, color_scheme=scheme, viewport=DESKTOP) as offline:
            page = offline.page
            page.goto(f"{site_url}/{page_path}", wait_until="load")
            page.evaluate(SETTLED_JS)  # the theme's colour fade has run
            target = page.locator(".bd-content .attnbook-explorer")
            if target.count() == 0:
                target = page.locator(".bd-content figure")
            target = target.first
            target.scroll_into_view_if_needed()
            name = f"{Path(page_path).stem}-{scheme}"
            target.screenshot(path=str(SCREENSHOTS / f"{name}-element.png"))
            page.screenshot(path=str(SCREENSHOTS / f"{name}-page.png"))
            shots[scheme] = target.locator("img:not([hidden])").first.screenshot()
            if scheme == "dark":
                checks = dark_mode_checks(page)
                assert checks["filters"], "no picture found"
                assert set(checks["filters"]) == {"none"}, checks["filters"]
                assert set(checks["cards"]) == {"rgb(255, 255, 255)"}, checks["cards"]
                # The theme's grey box (#ced6dd) must not wrap the explorer.
                assert "rgb(206, 214, 221)" not in checks["boxes"], checks["boxes"]
                for colour in checks["labels"]:
                    red, green, blue = map(int, re.findall(r"\d+", colour)[:3])
                    assert red + green + blue > 3 * 150, f"dark text on a dark page: {colour}"
    light, dark = mean_luminance(shots["light"]), mean_luminance(shots["dark"])
    assert dark >= 0.97 * light, f"picture dimmed in dark mode: {dark:.0f} vs {light:.0f}"


# Each explorer on a desktop: the width its picture needs, the width its box
# shows, whether the box scrolls sideways, whether the picture's right edge is
# on screen and not covered (the theme's in-page table of contents sits in the
# margin that a wide explorer grows into, and must give way), and how far the
# page itself scrolls sideways.
EXPLORER_FIT_JS = """el => {
    const view = el.querySelector('.attnbook-view');
    const stage = view.firstElementChild;
    const box = stage.getBoundingClientRect();
    const probe = document.elementFromPoint(box.right - 3, box.top + box.height / 2);
    return {needed: stage.offsetWidth, visible: view.clientWidth,
            scrolls: view.scrollWidth - view.clientWidth,
            right: box.right, screen: window.innerWidth,
            covered: !(probe && el.contains(probe)),
            page_scroll: document.scrollingElement.scrollWidth - window.innerWidth};
}"""
DESKTOP_WIDTHS = (1280, 1536, 1920)


def explorer_fits(page) -> list[dict]:
    """EXPLORER_FIT_JS for every explorer of the open page, each scrolled into view."""
    rows = []
    explorers = page.locator(".bd-content .attnbook-explorer")
    for i in range(explorers.count()):
        explorer = explorers.nth(i)
        explorer.scroll_into_view_if_needed()
        page.evaluate(SETTLED_JS)  # the table of contents' fade has run
        page.wait_for_timeout(300)
        rows.append(explorer.evaluate(EXPLORER_FIT_JS))
    return rows


def explorer_pages() -> list[str]:
    return [
        path
        for path in built_pages()
        if "attnbook-explorer" in (SITE / path).read_text(encoding="utf-8")
    ]


@pytest.mark.parametrize("width", DESKTOP_WIDTHS)
def test_every_explorer_is_whole_on_a_desktop(browser, site_url, width):
    """At 1280, 1536 and 1920 px no explorer is cut off or scrolls sideways
    (book/_ext/wide_explorers.py lets the wide ones use the page margin)."""
    cut = []
    measured = 0
    for path in explorer_pages():
        viewport = {"width": width, "height": 900}
        with Offline(browser, viewport=viewport) as offline:
            offline.page.goto(f"{site_url}/{path}", wait_until="load")
            for row in explorer_fits(offline.page):
                measured += 1
                whole = (
                    row["visible"] >= row["needed"]
                    and row["scrolls"] <= 1
                    and row["right"] <= row["screen"]
                    and not row["covered"]
                    and row["page_scroll"] <= 1
                )
                if not whole:
                    cut.append({"page": path, **row})
    assert measured >= 11, f"only {measured} explorers found"
    assert cut == [], f"explorers not whole at {width}px: {cut}"


# The page's search controls: the "Search Ctrl+K" field, the magnifier button
# and any search input, each counted once (not the parts inside a button).
SEARCH_CONTROLS_JS = """() => [...document.querySelectorAll(
        'input[type=search], .search-button-field, .search-button')]
    .filter(el => !el.parentElement.closest('.search-button-field, .search-button'))
    .filter(el => {
        const box = el.getBoundingClientRect();
        const style = getComputedStyle(el);
        return box.width > 0 && box.height > 0 && style.visibility !== 'hidden'
            && box.bottom > 0 && box.top < window.innerHeight
            && box.right > 0 && box.left < window.innerWidth;
    })
    .map(el => el.outerHTML.slice(0, 120))"""

# The theme's site-wide header band (pydata-sphinx-theme's .bd-header) and
# the band itself: its height and the text of what shows in it.
HEADER_BAND_JS = """() => {
    const band = document.querySelector('header.bd-header');
    if (!band) return {height: 0, text: ''};
    return {height: band.getBoundingClientRect().height, text: band.innerText.trim()};
}"""


@pytest.mark.parametrize(
    ("width", "viewport"), [("desktop", DESKTOP), ("phone", PHONE)], ids=["1280px", "390px"]
)
@pytest.mark.parametrize("page_path", ["book/intro.html", "book/attention-pooling.html"])
def test_header_has_one_search_and_no_empty_band(browser, site_url, page_path, width, viewport):
    """The top of a page: one search control in view, no empty band above the page.

    pydata-sphinx-theme 0.17 adds a 64 px header band holding only a "Search
    Ctrl+K" field unless the book says otherwise (_config.yml:
    navbar_persistent); the sidebar has its own search field under the title.
    """
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    with Offline(browser, viewport=viewport, is_mobile=width == "phone") as offline:
        page = offline.page
        page.goto(f"{site_url}/{page_path}", wait_until="load")
        page.evaluate(SETTLED_JS)
        page.screenshot(path=str(SCREENSHOTS / f"header-{Path(page_path).stem}-{width}.png"))
        band = page.evaluate(HEADER_BAND_JS)
        assert band["height"] == 0, (
            f"{page_path} at {viewport['width']}px opens with a {band['height']:.0f}px header"
            f" band holding only {band['text']!r}"
        )
        searches = page.evaluate(SEARCH_CONTROLS_JS)
        assert len(searches) == 1, f"{len(searches)} search controls in view: {searches}"
        if width == "desktop":
            # The book's title, top left in the sidebar, in the first screenful's top.
            title = page.get_by_text("Attention, Interactively", exact=True).first
            box = title.bounding_box()
            assert box is not None and box["y"] < 80 and box["x"] < 320, box
