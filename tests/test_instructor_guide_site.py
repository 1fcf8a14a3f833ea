"""The built instructor guide (_build/html/book/instructor-guide.html): what a
teacher reads lists exactly the checkers' known mistakes, and its links to
slide decks point only at decks the site holds."""

from __future__ import annotations

import html
import re

from attnbook import checks
from tools.site import parse, require_site

# Sphinx's smart quotes turn quotes, dashes and "..." into typographic ones on the page.
TYPOGRAPHY = str.maketrans(
    {"“": '"', "”": '"', "‘": "'", "’": "'", "–": "--", "—": "---", "…": "..."}
)


def normal(text: str) -> str:
    return " ".join(text.translate(TYPOGRAPHY).split())


def plain(fragment: str) -> str:
    """The text of an HTML fragment."""
    return normal(html.unescape(re.sub(r"<[^>]+>", "", fragment)))


def page_text() -> str:
    return (require_site() / "book" / "instructor-guide.html").read_text(encoding="utf-8")


def listed_mistakes(page: str) -> dict[str, set[tuple[str, str]]]:
    """checker -> {(name, diagnosis)} as the "Common mistakes" section shows them."""
    start = page.index('id="common-mistakes"')
    end = page.index('id="assignments-and-grading"')
    listed: dict[str, set[tuple[str, str]]] = {}
    checker = None
    pattern = (
        r'<span class="pre">(check_\w+)</span></code> knows \d+:'
        r"|<li><p><strong>(.*?)</strong>: (.*?)</p>\s*</li>"
    )
    for match in re.finditer(pattern, page[start:end], re.S):
        if match.group(1):
            checker = match.group(1)
            listed[checker] = set()
        else:
            listed[checker].add((plain(match.group(2)), plain(match.group(3))))
    return listed


def test_the_built_page_lists_exactly_the_checkers_known_mistakes():
    expected = {
        name: {(normal(m.name), normal(m.diagnosis)) for m in getattr(checks, name).mistakes}
        for name in dir(checks)
        if name.startswith("check_")
    }
    page = page_text()
    assert listed_mistakes(page) == expected
    total = sum(len(getattr(checks, name).mistakes) for name in expected)
    assert f"{total} of them across {len(expected)} checkers" in plain(page)


def test_deck_links_point_at_decks_the_site_holds():
    site = require_site()
    page = parse(site / "book" / "instructor-guide.html")
    decks = [href for href in page.links if "slides/" in href]
    for href in decks:
        assert (site / "book" / href).resolve().is_file(), href
