"""The website as a fresh clone builds it: Jupyter Book executes every chapter.

`make test-fresh-site` builds the site into _build/fresh (its own, empty
execution cache, never nbval's executed notebooks), as `make book` and the
Pages workflow's `make site` do on a fresh clone, then runs this file. The
site `make test` checks (tests/test_site.py) is built from nbval's run, which
keeps no widget state; Jupyter Book's execution (nbclient) keeps the state
of every widget a chapter makes, and myst-nb writes it into the page. Chapter
13's page once weighed 4486 KiB that way, 3838 of them saved widget models.
"""

from __future__ import annotations

import os
from pathlib import Path

from tests.test_site import overweight, pages, with_widget_state
from tools.site import NOTEBOOKS, ROOT

FRESH = Path(os.environ.get("ATTNBOOK_FRESH_BUILD", ROOT / "_build" / "fresh" / "_build"))


def fresh_site() -> Path:
    site = FRESH / "html"
    if not (site / "index.html").exists():
        raise AssertionError(f"no fresh build in {site}: run `make test-fresh-site`")
    return site


def test_every_chapter_was_executed_by_jupyter_book():
    # The build's own execution cache holds every chapter, and none of them is
    # one of nbval's notebooks (tools/book_cache.py marks those): the pages
    # below are what a fresh clone gets.
    from jupyter_cache import get_cache

    site = fresh_site()
    cache = FRESH / ".jupyter_cache"
    assert cache.is_dir(), f"{cache}: Jupyter Book executed nothing"
    records = get_cache(str(cache)).list_cache_records()
    assert {Path(r.uri).name for r in records} == {p.name for p in NOTEBOOKS}
    assert [r.uri for r in records if (r.data or {}).get("executed_by") == "nbval"] == []
    built = {p.relative_to(site).as_posix() for p in pages(site)}
    assert {f"book/{p.stem}.html" for p in NOTEBOOKS} <= built


def test_no_page_carries_widget_state():
    assert with_widget_state(fresh_site()) == []


def test_every_page_is_within_budget():
    assert overweight(fresh_site()) == []
