"""Links each chapter's slide deck from the chapter's page, when the deck is built.

``make slides`` (``tools/slides.py``) writes ``_build/html/slides/NAME.html``
and ``NAME.pdf`` for each slide notebook ``slides/NAME.ipynb``. When a chapter
``book/NAME`` has its deck in the output folder as the site is built, a line
"Slides for teaching: deck (HTML) · PDF" goes under the chapter's title. A
plain ``make book`` without ``make slides`` adds no line, so no page links to a
file the site lacks (``tests/test_site.py`` checks every internal link);
``make site`` builds the decks before the site.
"""

from __future__ import annotations

from pathlib import Path

CLASS = "attnbook-slides-link"


def built_decks(outdir: str | Path) -> list[str]:
    """The chapters whose deck and PDF are both in ``outdir/slides``."""
    slides = Path(outdir) / "slides"
    return sorted(p.stem for p in slides.glob("*.html") if p.with_suffix(".pdf").is_file())


def link_line(html_href: str, pdf_href: str) -> str:
    return (
        f'<p class="{CLASS}">Slides for teaching this chapter: '
        f'<a href="{html_href}">the deck (HTML)</a> · <a href="{pdf_href}">PDF</a></p>'
    )


def insert_after_title(body: str, line: str) -> str:
    """``body`` with ``line`` after its first ``</h1>``; unchanged if it has none."""
    end = body.find("</h1>")
    if end < 0:
        return body
    end += len("</h1>")
    return body[:end] + "\n" + line + body[end:]


def _find(app):
    app.config.attnbook_slides_state = built_decks(app.outdir) if app.builder.name == "html" else []


def _every_chapter_when_the_decks_change(app, env, added, changed, removed):
    """An incremental build rewrites only changed pages: when decks appear or
    disappear, the chapters' pages must change too."""
    state = app.config.attnbook_slides_state
    if getattr(env, "attnbook_slides_state", None) == state:
        return []
    env.attnbook_slides_state = state
    return sorted(doc for doc in env.found_docs if doc.startswith("book/"))


def _link(app, pagename, templatename, context, doctree):
    folder, _, name = pagename.rpartition("/")
    if folder != "book" or name not in app.config.attnbook_slides_state or "body" not in context:
        return
    pathto = context["pathto"]
    line = link_line(pathto(f"slides/{name}.html", 1), pathto(f"slides/{name}.pdf", 1))
    context["body"] = insert_after_title(context["body"], line)


def setup(app):
    app.add_config_value("attnbook_slides_state", [], "env")
    app.connect("builder-inited", _find)
    app.connect("env-get-outdated", _every_chapter_when_the_decks_change)
    app.connect("html-page-context", _link)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
