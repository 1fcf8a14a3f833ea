"""Links the printed book from every page of the website, when it has been printed.

``make pdf`` prints the book to ``_build/pdf/attention-interactively.pdf``
(``tools/print_book.py``). When that file exists as the HTML site is built
(``make site`` prints first, then builds), this extension copies it into the
site's root and the primary sidebar of every page ends with "Download the book
as PDF (N MiB)". Without the file (a plain ``make book``) nothing is added,
so no page links to a file the site lacks.
"""

from __future__ import annotations

import shutil
from pathlib import Path

TEMPLATES = Path(__file__).resolve().parent / "templates"
NAME = "attention-interactively.pdf"


def printed_book(srcdir: str | Path) -> Path:
    """Where ``make pdf`` leaves the book, for a project rooted at ``srcdir``."""
    return Path(srcdir) / "_build" / "pdf" / NAME


def size_label(size: int) -> str:
    """A file size as the link shows it, e.g. ``8.7 MiB``."""
    return f"{size / 2**20:.1f} MiB"


def _templates(app, config):
    config.templates_path = [*config.templates_path, str(TEMPLATES)]
    options = dict(config.html_theme_options or {})
    options["primary_sidebar_end"] = ["attnbook-pdf.html"]
    config.html_theme_options = options


def _offer(app):
    pdf = printed_book(app.srcdir)
    app.config.attnbook_pdf_state = None
    if app.builder.name != "html" or not pdf.is_file():
        return
    context = dict(app.config.html_context or {})
    context["attnbook_pdf"] = NAME
    context["attnbook_pdf_size"] = size_label(pdf.stat().st_size)
    app.config.html_context = context
    app.config.attnbook_pdf_state = context["attnbook_pdf_size"]


def _every_page_when_the_link_changes(app, env, added, changed, removed):
    """An incremental build rewrites only changed pages: when the PDF appears,
    disappears or changes size, every page's sidebar must change too."""
    state = app.config.attnbook_pdf_state
    if getattr(env, "attnbook_pdf_state", None) == state:
        return []
    env.attnbook_pdf_state = state
    return sorted(env.found_docs)


def _copy(app, exception):
    if exception is None and app.config.html_context.get("attnbook_pdf"):
        shutil.copyfile(printed_book(app.srcdir), Path(app.outdir) / NAME)


def setup(app):
    app.connect("config-inited", _templates)
    app.add_config_value("attnbook_pdf_state", None, "env")
    app.connect("builder-inited", _offer)
    app.connect("env-get-outdated", _every_page_when_the_link_changes)
    app.connect("build-finished", _copy)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
