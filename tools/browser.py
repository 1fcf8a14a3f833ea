"""Headless Chromium for the tests and tools: finding it, offline pages, explorers
found in the DOM.

The browser is found, never downloaded (:func:`find_chromium`): the
``CHROMIUM`` environment variable, else Debian's ``/usr/bin/chromium``, else a
``chromium`` or ``google-chrome`` on ``PATH`` (GitHub's Ubuntu runners ship
Google Chrome and no Debian package). Every request that is not to 127.0.0.1 (or a data:/blob: URL) is
aborted and recorded, and console errors are recorded too.

Explorers are found by the fragment contract that every explorer keeps: the
root element has the class ``attnbook-explorer``; its controls are native
``<input type="range">`` and ``<select>`` elements, each with an ``<output>``;
the current picture is inside one element of class ``attnbook-view`` (older
fragments without it: the explorer's visible images).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlparse

DEBIAN_CHROMIUM = Path("/usr/bin/chromium")
ON_PATH = ("chromium", "google-chrome")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--headless=new",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


class NoBrowserError(RuntimeError):
    """No Chromium or Chrome was found where :func:`find_chromium` looks."""


def find_chromium(
    environ: Mapping[str, str] | None = None,
    debian: Path = DEBIAN_CHROMIUM,
    which: Callable[[str], str | None] = shutil.which,
) -> str:
    """The path of the browser to drive: ``$CHROMIUM``, else ``/usr/bin/chromium``,
    else ``chromium`` or ``google-chrome`` on ``PATH``.

    A ``CHROMIUM`` that names no executable file is an error (it was asked for);
    so is finding nothing, and the message names all three places.
    """
    environ = os.environ if environ is None else environ
    asked = environ.get("CHROMIUM", "")
    if asked:
        if not (os.path.isfile(asked) and os.access(asked, os.X_OK)):
            raise NoBrowserError(f"CHROMIUM={asked!r} is not an executable file")
        return asked
    if debian.is_file() and os.access(debian, os.X_OK):
        return str(debian)
    for name in ON_PATH:
        found = which(name)
        if found:
            return found
    raise NoBrowserError(
        "no browser found: set CHROMIUM to a Chromium or Chrome executable, install "
        f"Debian's chromium ({debian}), or put {' or '.join(ON_PATH)} on PATH"
    )


def launch(playwright):
    """Launch the found browser headless with :data:`CHROMIUM_ARGS` through Playwright."""
    return playwright.chromium.launch(executable_path=find_chromium(), args=CHROMIUM_ARGS)


@contextmanager
def chromium() -> Iterator:
    """A headless Chromium (:func:`find_chromium`), closed afterwards."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = launch(playwright)
        try:
            yield browser
        finally:
            browser.close()


class Offline:
    """A browser context that may only talk to 127.0.0.1; records errors and blocked requests.

    ``context_args`` go to ``browser.new_context`` (viewport, color_scheme, ...).
    """

    def __init__(self, browser, **context_args):
        self.context = browser.new_context(**context_args)
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

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# The picture an explorer shows now: the one visible <img> (or <canvas>) inside
# its .attnbook-view, else inside the explorer. Returns a string that changes
# whenever the picture does (its source, or its pixels for a canvas).
PICTURE_JS = """root => {
    const view = root.querySelector('.attnbook-view') || root;
    const visible = el => {
        const box = el.getBoundingClientRect();
        return !el.hidden && box.width > 0 && box.height > 0;
    };
    const base = view.querySelector('img.attnbook-base');
    if (base) {
        // A layered picture (attnbook.widgets): the base frame, and at most one
        // visible layer of the pixels that differ from it for the current stop.
        const layers = [...view.querySelectorAll('img[aria-hidden]')].filter(visible);
        if (!visible(base) || layers.length > 1)
            return {count: layers.length + (visible(base) ? 1 : 0), key: null, width: 0, natural: 0};
        return {count: 1, key: base.alt + '|' + (layers.length ? layers[0].src : ''),
                width: base.getBoundingClientRect().width, natural: base.naturalWidth,
                complete: base.complete && layers.every(el => el.complete)};
    }
    const shown = [...view.querySelectorAll('img, canvas')].filter(visible);
    if (shown.length !== 1) return {count: shown.length, key: null, width: 0, natural: 0};
    const el = shown[0];
    const key = el.tagName === 'IMG' ? el.currentSrc || el.src : el.toDataURL();
    return {count: 1, key, width: el.getBoundingClientRect().width,
            natural: el.tagName === 'IMG' ? el.naturalWidth : el.width,
            complete: el.tagName === 'IMG' ? el.complete : true};
}"""


def picture(explorer) -> dict:
    """What ``explorer`` (a Locator of one .attnbook-explorer) shows now."""
    return explorer.evaluate(PICTURE_JS)


def controls(explorer) -> list:
    """The explorer's native controls (range inputs and selects), in DOM order."""
    found = explorer.locator("input[type=range], select")
    return [found.nth(i) for i in range(found.count())]


def step_control(page, control) -> None:
    """Move one control one stop with the keyboard (wrapping back at the end)."""
    control.focus()
    tag = control.evaluate("el => el.tagName")
    if tag == "SELECT":
        last = control.evaluate("el => el.selectedIndex === el.options.length - 1")
        page.keyboard.press("Home" if last else "ArrowDown")
    else:
        at_max = control.evaluate("el => Number(el.value) >= Number(el.max)")
        page.keyboard.press("Home" if at_max else "ArrowRight")
