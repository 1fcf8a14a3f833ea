"""Checks of the built website (_build/html): offline assets, links, alt text, size."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from tools.site import BOOK, NOTEBOOKS, config, page_weight, parse, require_site

PAGE_BUDGET = 1024 * 1024  # an interactive page, HTML and frames together
# Saved ipywidgets models, which myst-nb writes into a page from its notebook's
# metadata; the site loads no widget manager, so nothing would read them.
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def pages(site: Path | None = None) -> list[Path]:
    """Every HTML page of ``site`` (default: the built site, _build/html), the
    book's own: not the slide decks that `make slides` writes into its
    ``slides/`` folder (Jupyter Book's footer is not theirs; tests/test_slides*.py
    check them)."""
    site = site or require_site()
    return sorted(
        p
        for p in site.rglob("*.html")
        if "_static" not in p.parts and p.relative_to(site).parts[0] != "slides"
    )


def test_pages_are_the_books_own(tmp_path):
    """The decks that `make slides` writes into the site are not the book's pages:
    with them counted, the footer test failed after `make slides`."""
    for name in ["book/intro.html", "slides/masked-softmax.html", "_static/x.html"]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("<html></html>")
    assert [p.relative_to(tmp_path).as_posix() for p in pages(tmp_path)] == ["book/intro.html"]


def overweight(site: Path) -> list[str]:
    """The pages of ``site`` heavier than the budget (HTML and its images), with their KiB."""
    return [
        f"{path.relative_to(site)}: {page_weight(path) / 1024:.0f} KiB"
        for path in pages(site)
        if page_weight(path) > PAGE_BUDGET
    ]


def with_widget_state(site: Path) -> list[str]:
    """The pages of ``site`` that carry saved widget models."""
    return [
        str(path.relative_to(site))
        for path in pages(site)
        if WIDGET_STATE in path.read_text(encoding="utf-8")
    ]


def test_every_page_is_within_budget_and_carries_no_widget_state():
    # This site is built from nbval's executed notebooks (make test);
    # tests/test_fresh_site.py checks the site Jupyter Book executes itself.
    site = require_site()
    assert with_widget_state(site) == []
    assert overweight(site) == []


def is_external(url: str) -> bool:
    return url.startswith(("http:", "https:", "//")) or (
        "://" in url and not url.startswith("data:")
    )


def test_the_chapters_are_built():
    built = {p.relative_to(require_site()).as_posix() for p in pages()}
    for name in ["intro", "attention-cues", "references", *(p.stem for p in NOTEBOOKS)]:
        assert f"book/{name}.html" in built


def test_nothing_is_loaded_from_another_host():
    for path in pages():
        external = [url for url in parse(path).loads if is_external(url)]
        assert external == [], f"{path.name} loads {external}"


def test_mathjax_is_served_by_the_site():
    site = require_site()
    page = parse(site / "book" / "scoring-functions.html")
    mathjax = [url for url in page.loads if "mathjax" in url.lower()]
    assert mathjax and all(not is_external(url) for url in mathjax)
    assert (site / "_static" / "mathjax" / "tex-chtml.js").exists()
    # MathJax is Apache 2.0, whose text must travel with it.
    assert "Apache License" in (site / "_static" / "mathjax" / "LICENSE").read_text()
    assert "MathJax" in (site / "_static" / "mathjax" / "NOTICE").read_text()


def test_internal_links_resolve():
    site = require_site()
    parsed = {path: parse(path) for path in pages()}
    broken = []
    for path, page in parsed.items():
        for href in page.links + page.loads:
            url = urlparse(href)
            if url.scheme or href.startswith(("//", "mailto:", "data:")):
                continue
            target = path if not url.path else (path.parent / unquote(url.path)).resolve()
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                broken.append(f"{path.relative_to(site)} -> {href}")
            elif url.fragment and target.suffix == ".html":
                ids = parsed[target].ids if target in parsed else parse(target).ids
                if url.fragment not in ids:
                    broken.append(f"{path.relative_to(site)} -> {href} (no such anchor)")
    assert broken == []


def test_every_image_has_alt_text():
    missing = []
    for path in pages():
        for image in parse(path).images:
            # An explorer's layers are drawn over its base picture, whose alt text
            # describes the current stop; the layers are hidden from screen readers.
            if image.get("aria-hidden") == "true" and image.get("alt") == "":
                continue
            if not (image.get("alt") or "").strip():
                missing.append(f"{path.name}: {image.get('src', '')[:60]}")
    assert missing == []


LICENCES = {
    "https://opensource.org/license/mit": "MIT licence",
    "https://creativecommons.org/licenses/by/4.0/": "CC BY 4.0",
}


def test_every_page_shows_the_licence_in_its_footer():
    """The footer of every page says which licence covers what (_config.yml's
    html.extra_footer; LICENSE at the repository's root has the full terms)."""
    from bs4 import BeautifulSoup  # installed with Jupyter Book

    wrong = []
    for path in pages():
        html = path.read_text(encoding="utf-8")
        if 'http-equiv="refresh"' in html[:2000].lower():  # index.html forwards to the preface
            continue
        notes = BeautifulSoup(html, "html.parser").select("footer p.attnbook-licence")
        if len(notes) != 1:
            wrong.append(f"{path.name}: {len(notes)} licence notes in the footer")
            continue
        text = " ".join(notes[0].get_text().split())
        hrefs = {a["href"]: " ".join(a.get_text().split()) for a in notes[0].find_all("a")}
        for href, name in LICENCES.items():
            if href not in hrefs or name not in hrefs[href]:
                wrong.append(f"{path.name}: no link {name} -> {href}")
        if "code" not in text or "prose" not in text:
            wrong.append(f"{path.name}: the note does not say what each licence covers")
    assert wrong == []


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_pages_have_a_colab_button(notebook):
    # It opens the reader's edition (book/colab/, tools/readers_edition.py), never
    # the MyST source, which Colab would show as raw text.
    repo = config()["repository"]
    slug = urlparse(repo["url"]).path.strip("/")
    colab = f"https://colab.research.google.com/github/{slug}/blob/{repo['branch']}/book/"
    links = parse(require_site() / "book" / f"{notebook.stem}.html").links
    assert f"{colab}colab/{notebook.name}" in links
    assert f"{colab}{notebook.name}" not in links
    assert (BOOK / "colab" / notebook.name).exists()


def test_install_cell_is_hidden_on_the_website():
    for notebook in NOTEBOOKS:
        html = (require_site() / "book" / f"{notebook.stem}.html").read_text(encoding="utf-8")
        assert "google.colab" not in html


@pytest.mark.parametrize(
    "name", ["queries-keys-values", "attention-pooling", "masked-softmax", "scoring-functions"]
)
def test_interactive_pages_hold_a_static_explorer_within_budget(name):
    path = require_site() / "book" / f"{name}.html"
    html = path.read_text(encoding="utf-8")
    assert html.count('class="attnbook-explorer"') == 1
    assert "application/vnd.jupyter.widget-view+json" not in html
    assert not re.search(r"<script[^>]+src=[^>]*(require|widget|embed)", html)
    assert page_weight(path) <= PAGE_BUDGET


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name)
def test_solutions_are_folded_code_and_output(notebook):
    """A solution's code and what it prints sit behind one closed toggle."""
    from bs4 import BeautifulSoup  # installed with Jupyter Book

    html = (require_site() / "book" / f"{notebook.stem}.html").read_text(encoding="utf-8")
    cells = BeautifulSoup(html, "html.parser").select("div.cell.tag_solution")
    assert len(cells) >= 2, f"{notebook.stem}: no folded solution cells on the page"
    for cell in cells:
        children = cell.find_all(recursive=False)
        assert [child.name for child in children] == ["details"], (
            f"{notebook.stem}: a solution cell shows something outside its toggle"
        )
        toggle = children[0]
        assert toggle.get("open") is None, f"{notebook.stem}: a solution toggle starts open"
        assert toggle.select(".cell_input") and toggle.select(".cell_output")


def load_extension(name: str):
    """book/_ext/NAME.py, one of the book's local Sphinx extensions."""
    import importlib.util

    path = Path(__file__).resolve().parent.parent / "book" / "_ext" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_pdf_link():
    """book/_ext/pdf_link.py, the extension that links the printed book."""
    return load_extension("pdf_link")


def test_saved_widget_state_is_dropped_from_every_page():
    """book/_ext/offline_site.py drops the widget-state script that myst-nb adds
    to a page whose notebook kept widget models, and only that script."""
    from sphinx.builders.html._assets import _JavaScript

    offline_site = load_extension("offline_site")
    kept = [
        _JavaScript("_static/documentation_options.js"),
        "_static/doctools.js",  # the old form of an entry: a plain string
        _JavaScript(None, type="application/json", body="{}"),
    ]
    state = _JavaScript(None, type=WIDGET_STATE, body='{"state": {"m": {}}}')
    context = {"script_files": [kept[0], state, kept[1], kept[2]]}
    offline_site._drop_widget_state(None, "book/x", "page.html", context, None)
    assert context["script_files"] == kept
    empty = {"script_files": []}
    offline_site._drop_widget_state(None, "search", "search.html", empty, None)
    assert empty == {"script_files": []}


def test_pdf_link_is_offered_only_for_a_printed_book_and_only_on_the_html_site(tmp_path):
    from types import SimpleNamespace

    pdf_link = load_pdf_link()

    def offered(builder: str) -> dict:
        app = SimpleNamespace(
            srcdir=str(tmp_path),
            builder=SimpleNamespace(name=builder),
            config=SimpleNamespace(html_context={}),
        )
        pdf_link._offer(app)
        return app.config.html_context

    assert offered("html") == {}  # not printed yet
    printed = pdf_link.printed_book(tmp_path)
    printed.parent.mkdir(parents=True)
    printed.write_bytes(b"%PDF" + bytes(3 * 2**20))
    assert offered("html") == {
        "attnbook_pdf": "attention-interactively.pdf",
        "attnbook_pdf_size": "3.0 MiB",
    }
    assert offered("singlehtml") == {}  # the page that is printed links nothing


def test_every_page_links_the_pdf_exactly_when_the_site_has_it():
    """`make site` copies the PDF in and links it from each page; `make book`
    alone (no PDF printed) links it from none, so no link is dead."""
    site = require_site()
    pdf = site / "attention-interactively.pdf"
    label = re.compile(r"Download the book as PDF \((\d+\.\d) MiB\)")
    for path in pages():
        if path.name in ("search.html", "genindex.html") or "_downloads" in path.parts:
            continue
        html = path.read_text(encoding="utf-8")
        if 'http-equiv="refresh"' in html[:2000].lower():  # index.html forwards to the preface
            continue
        links = [
            href
            for href in parse(path).links
            if urlparse(href).path.endswith("attention-interactively.pdf")
        ]
        if not pdf.exists():
            assert not links and not label.search(html), f"{path.name} links a PDF the site lacks"
            continue
        assert len(links) == 1, f"{path.name}: {len(links)} links to the PDF"
        assert (path.parent / unquote(urlparse(links[0]).path)).resolve() == pdf.resolve()
        assert label.search(html)[1] == f"{pdf.stat().st_size / 2**20:.1f}"


def test_readers_edition_numbers_figures_and_cites_as_the_website():
    """The reader's edition (tools/readers_edition.py) computes figure numbers
    the way Sphinx does and author-year text the way sphinxcontrib-bibtex does;
    the built site is the judge: "Fig. N" after each figure's anchor, and the
    text of every citation link to the references page."""
    import html as html_lib

    from tools.readers_edition import scan_book

    book = scan_book()
    figures = {name: t for name, t in book.targets.items() if t.kind == "figure"}
    assert len(figures) >= 40
    for name, target in figures.items():
        page = (require_site() / f"{target.page}.html").read_text(encoding="utf-8")
        start = page.index(f'id="{name}"')
        shown = re.search(r"Fig\. (\d+)", page[start : start + 20000])
        assert shown and int(shown.group(1)) == target.number, (
            f"{name}: the edition says Figure {target.number}, the website "
            f"{shown.group(0) if shown else 'nothing'}"
        )
    known = {f"{authors}, {year}" for authors, year in book.citations.values()}
    cited = set()
    for path in (require_site() / "book").glob("*.html"):
        text = path.read_text(encoding="utf-8")
        for match in re.finditer(r'<a [^>]*href="references\.html#[^"]*"[^>]*>(.*?)</a>', text):
            link = html_lib.unescape(re.sub(r"<[^>]+>", "", match.group(1)))
            if re.fullmatch(r"\d{4}", link):
                # A textual citation ({cite:t}): "Press et al. [2022]", the year
                # alone linked, the authors written just before it.
                before = html_lib.unescape(re.sub(r"<[^>]+>", "", text[: match.start()]))
                before = before[-200:].rstrip(" [")
                found = [f"{a}, {y}" for a, y in book.citations.values() if y == link]
                assert any(before.endswith(a) for a, y in book.citations.values() if y == link), (
                    f"{path.name}: a citation of {link} whose authors are not "
                    f"{found}: ...{before[-60:]}"
                )
                continue
            cited.add(link)
    assert cited, "no citation found on the website"
    assert cited <= known
