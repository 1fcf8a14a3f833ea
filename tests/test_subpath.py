"""The built site served under a sub-path, as GitHub Pages serves a fork's copy.

GitHub Pages publishes a project site at ``https://<owner>.github.io/<repository>/``,
so a page must never reach for the server's root: an absolute ``/_static/...``
works with ``make serve`` and breaks there. Here ``_build/html`` is served at
PREFIX on 127.0.0.1 by a server that answers 404 outside it, and headless
Chromium, cut off from every other host, visits every page: each one loads
without errors, every internal link resolves, MathJax typesets every formula,
and every control of every explorer changes the picture when moved.
"""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from urllib.parse import urldefrag, urlsplit

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from tools.site import require_site, serve

from . import test_browser
from .test_site import pages

PREFIX = "/attention-interactively/"

# Shared with the browser test: a page that may only talk to 127.0.0.1,
# recording console errors and blocked requests (the browser is conftest's).
OfflinePage = test_browser.OfflinePage

PAGE_FACTS = """() => ({
    links: [...document.querySelectorAll('a[href]')].map(a => a.href),
    ids: [...document.querySelectorAll('[id]')].map(e => e.id),
    explorers: document.querySelectorAll('.attnbook-explorer').length,
})"""

MATH_FACTS = """() => {
    const math = [...document.querySelectorAll('.math')];
    return {math: math.length,
            untypeset: math.filter(m => !m.querySelector('mjx-container'))
                           .map(m => m.textContent.slice(0, 60)),
            errors: [...document.querySelectorAll('mjx-merror')]
                        .map(e => e.getAttribute('data-mjx-error') || e.textContent)};
}"""


@pytest.fixture(scope="module")
def base():
    """The site's root URL under PREFIX, served for the whole module."""
    with serve(require_site(), prefix=PREFIX) as url:
        yield url


# The slide decks (`make slides`, which `make check` may run before this test)
# are reveal.js pages with their own routes (#/3); tests/test_slides_browser.py
# checks them offline. The book's pages are what this test visits.
DECKS = "slides/"


def page_paths() -> dict[str, bool]:
    """Every built page, relative to PREFIX (the root instead of index.html),
    and whether it only redirects (a meta refresh) to another page."""
    site = require_site()
    found = {}
    for path in pages():
        relative = path.relative_to(site).as_posix()
        if relative.startswith(DECKS):
            continue
        found["" if relative == "index.html" else relative] = 'http-equiv="Refresh"' in (
            path.read_text(encoding="utf-8")
        )
    return found


@pytest.fixture(scope="module")
def visits(browser, base):
    """Visit every page once; what each one loaded, linked to and typeset."""
    results = {}
    for path, redirects in page_paths().items():
        offline = OfflinePage(browser)
        failed: list[str] = []

        def record(response, failed=failed):
            if response.status >= 400:
                failed.append(f"{response.status} {response.url}")

        offline.page.on("response", record)
        try:
            response = offline.page.goto(f"{base}/{path}", wait_until="load")
            if redirects:  # e.g. the root: its meta refresh leads on to a chapter
                start = f"{base}/{path}"
                offline.page.wait_for_url(lambda url, start=start: url != start, wait_until="load")
            facts = offline.page.evaluate(PAGE_FACTS)
            math = offline.page.evaluate(MATH_FACTS)
            if math["math"]:
                try:
                    offline.page.wait_for_function(
                        "window.MathJax && MathJax.startup && MathJax.startup.promise",
                        timeout=15_000,
                    )
                except PlaywrightTimeoutError:
                    math["errors"].append("MathJax never started")
                else:
                    offline.page.evaluate("MathJax.startup.promise")
                    math = offline.page.evaluate(MATH_FACTS)
            final_url = urldefrag(offline.page.url)[0]
        finally:
            offline.close()
        results[path] = {
            "status": response.status if response else None,
            "url": final_url,
            "failed": failed,
            "errors": offline.errors,
            "blocked": offline.blocked,
            **facts,
            **math,
        }
    return results


def test_the_server_answers_only_under_the_prefix(base):
    """The checks below would prove nothing if the root still served the site."""
    root = base[: -len(PREFIX.rstrip("/"))]
    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # no proxy
    with direct.open(f"{base}/book/intro.html") as response:
        assert response.status == 200
    for outside in ("/index.html", "/book/intro.html", "/_static/mathjax/tex-chtml.js"):
        with pytest.raises(urllib.error.HTTPError) as error:
            direct.open(root + outside)
        assert error.value.code == 404


def test_every_page_loads_under_the_prefix(visits, base):
    problems = {
        path or "(root)": {key: seen[key] for key in ("status", "failed", "errors", "blocked")}
        for path, seen in visits.items()
        if seen["status"] != 200 or seen["failed"] or seen["errors"] or seen["blocked"]
    }
    assert problems == {}
    # The root's redirect lands on the first chapter, still under the prefix.
    assert visits[""]["url"].startswith(f"{base}/book/")


def test_every_internal_link_resolves_under_the_prefix(visits, base, browser):
    origin = "{0.scheme}://{0.netloc}".format(urlsplit(base))
    ids_by_url = {seen["url"]: set(seen["ids"]) for seen in visits.values()}
    broken: list[str] = []
    unvisited: dict[str, list[str]] = {}
    checked = 0
    for path, seen in visits.items():
        for link in seen["links"]:
            if not link.startswith(origin + "/"):
                continue  # another host: never followed (and not loaded)
            checked += 1
            url, fragment = urldefrag(link)
            if not url.startswith(f"{base}/"):
                broken.append(f"{path} -> {link} (outside {PREFIX})")
            elif url in ids_by_url:
                if fragment and fragment not in ids_by_url[url]:
                    broken.append(f"{path} -> {link} (no such anchor)")
            else:
                unvisited.setdefault(url, []).append(path)
    # Links to what is not a page (notebook sources, figures): fetched, not visited.
    context = browser.new_context()
    try:
        for url, sources in unvisited.items():
            status = context.request.get(url).status
            if status != 200:
                broken.append(f"{sources[0]} -> {url} ({status})")
    finally:
        context.close()
    assert broken == []
    assert checked >= len(visits), "too few internal links were found to check"


def test_mathjax_typesets_every_formula(visits):
    with_math = {path: seen for path, seen in visits.items() if seen["math"]}
    assert len(with_math) >= 3, "expected maths on several chapters"
    assert {path: seen["untypeset"] for path, seen in with_math.items() if seen["untypeset"]} == {}
    assert {path: seen["errors"] for path, seen in with_math.items() if seen["errors"]} == {}


def picture(explorer):
    """The explorer's picture: its `.attnbook-view`, else its visible image."""
    view = explorer.locator(".attnbook-view")
    if view.count():
        return view.first
    return explorer.locator("img:visible").first


def wait_for_new_picture(explorer, before: bytes, what: str) -> bytes:
    """Poll the picture's pixels until they differ from ``before`` (at most 5 s)."""
    deadline = time.monotonic() + 5
    while True:
        after = picture(explorer).screenshot()
        if after != before:
            return after
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not change the picture")
        time.sleep(0.1)


def move(page, control, what: str) -> None:
    """Move one control by one step with the keyboard; its value must change."""
    before = control.input_value()
    control.focus()
    if control.evaluate("c => c.type === 'range' && c.value === c.max"):
        page.keyboard.press("ArrowLeft")
    else:
        page.keyboard.press(
            "ArrowRight" if control.evaluate("c => c.type === 'range'") else "ArrowDown"
        )
    if control.evaluate("c => c.tagName === 'SELECT'") and control.input_value() == before:
        # A closed <select> ignores arrow keys on some platforms: pick the next option.
        values = control.evaluate("c => [...c.options].map(o => o.value)")
        control.select_option(values[(values.index(before) + 1) % len(values)])
    assert control.input_value() != before, f"{what}: the keyboard did not move it"


def test_explorers_respond_under_the_prefix(visits, base, browser):
    explorer_pages = [path for path, seen in visits.items() if seen["explorers"]]
    site = require_site()
    built = sorted(
        p.relative_to(site).as_posix()
        for p in pages()
        if 'class="attnbook-explorer' in p.read_text(encoding="utf-8")
        and not p.relative_to(site).as_posix().startswith(DECKS)
    )
    assert explorer_pages == built and built, "explorers missing from the visited pages"
    for path in explorer_pages:
        offline = OfflinePage(browser)
        try:
            offline.page.goto(f"{base}/{path}", wait_until="load")
            explorers = offline.page.locator(".attnbook-explorer")
            for index in range(explorers.count()):
                explorer = explorers.nth(index)
                controls = explorer.locator("input[type=range], select")
                assert controls.count() >= 1, f"{path}: explorer {index} has no control"
                shown = picture(explorer)
                assert shown.bounding_box()["width"] > 100, f"{path}: no visible picture"
                pixels = shown.screenshot()
                for number in range(controls.count()):
                    what = f"{path}, explorer {index}, control {number}"
                    control = controls.nth(number)
                    assert control.is_enabled(), f"{what}: the inline script did not enable it"
                    move(offline.page, control, what)
                    pixels = wait_for_new_picture(explorer, pixels, what)
        finally:
            offline.close()
        assert offline.blocked == [] and offline.errors == [], path
