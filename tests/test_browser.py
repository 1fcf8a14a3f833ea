"""The static sliders, driven with the keyboard in headless Chromium, offline.

Every request that is not to the local test server (or a data: URL) is aborted
and recorded, so a CDN dependency fails the test loudly. Chromium is Debian's
package (/usr/bin/chromium); Playwright never downloads a browser here.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlparse

import pytest
from playwright.sync_api import sync_playwright

from attnbook import widgets

from ._site import CHROMIUM, CHROMIUM_ARGS, require_site, serve

SLIDER_PAGES = [
    "book/attention-pooling.html",
    "book/masked-softmax.html",
    "book/attention-learns.html",
]


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        raise AssertionError(f"{CHROMIUM} is missing: install Debian's chromium (see .ci/run)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


class OfflinePage:
    """A page that may only talk to 127.0.0.1; records errors and blocked requests."""

    def __init__(self, browser):
        self.context = browser.new_context()
        self.page = self.context.new_page()
        self.blocked: list[str] = []
        self.errors: list[str] = []
        self.page.on("console", self._on_console)
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))
        self.context.route("**/*", self._route)

    def _route(self, route):
        url = urlparse(route.request.url)
        if url.scheme in ("data", "blob") or url.hostname in ("127.0.0.1", "localhost"):
            route.continue_()
        else:
            self.blocked.append(route.request.url)
            route.abort()

    def _on_console(self, message):
        if message.type == "error":
            self.errors.append(message.text)

    def close(self):
        self.context.close()


def visible_frame(explorer):
    """The src of the one visible frame of an explorer, and the readout text."""
    return explorer.evaluate(
        """root => {
            const shown = [...root.querySelectorAll('img')].filter(img => !img.hidden);
            return {count: shown.length, src: shown.length ? shown[0].src : null,
                    alt: shown.length ? shown[0].alt : null,
                    out: root.querySelector('output').textContent,
                    width: shown.length ? shown[0].getBoundingClientRect().width : 0};
        }"""
    )


def drive_sliders(page, expected: int) -> None:
    """Move every slider on the page with the keyboard; each move swaps the frame."""
    explorers = page.locator(".attnbook-explorer")
    assert explorers.count() == expected
    for index in range(expected):
        explorer = explorers.nth(index)
        slider = explorer.locator("input[type=range]")
        assert slider.is_enabled(), "the inline script did not enable the slider"
        before = visible_frame(explorer)
        assert before["count"] == 1 and before["width"] > 100
        slider.focus()
        page.keyboard.press("ArrowRight")
        after = visible_frame(explorer)
        assert after["count"] == 1
        assert after["src"] != before["src"], "ArrowRight did not change the picture"
        assert after["out"] != before["out"]
        assert after["alt"] != before["alt"]
        page.keyboard.press("Home")
        first = visible_frame(explorer)
        assert slider.input_value() == "0"
        assert first["src"] != after["src"]
        page.keyboard.press("End")
        last = visible_frame(explorer)
        assert slider.input_value() == slider.get_attribute("max")
        assert last["src"] != first["src"]
        assert slider.get_attribute("aria-valuetext") == last["out"]


def test_fragment_page_sliders_work_offline(browser, tmp_path):
    page_html = (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'><title>sliders</title>"
        "</head><body>"
        + widgets.kernel_width_explorer().to_html()
        + widgets.valid_length_explorer().to_html()
        + "</body></html>"
    )
    (tmp_path / "index.html").write_text(page_html, encoding="utf-8")
    offline = OfflinePage(browser)
    try:
        with serve(tmp_path) as base:
            offline.page.goto(f"{base}/index.html")
            drive_sliders(offline.page, expected=2)
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
            shown = visible_frame(page.locator(".attnbook-explorer"))
            assert shown["count"] == 1 and shown["width"] > 100
            assert shown["out"] == "6"
    finally:
        context.close()


@pytest.mark.parametrize("page_path", SLIDER_PAGES)
def test_built_page_slider_redraws_offline(browser, page_path):
    site = require_site()
    assert (site / page_path).exists(), f"{page_path} was not built"
    offline = OfflinePage(browser)
    try:
        with serve(site) as base:
            offline.page.goto(f"{base}/{page_path}", wait_until="load")
            drive_sliders(offline.page, expected=1)
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
