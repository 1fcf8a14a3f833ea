"""Colab buttons that open the reader's edition, not the MyST source.

sphinx-book-theme builds each page's Colab link from the page's own path
(``.../blob/BRANCH/book/NAME.ipynb``). That notebook is written in MyST,
which Colab shows as raw text; ``tools/readers_edition.py`` writes a reader's
edition of it to ``book/colab/NAME.ipynb``. After the theme has made its
launch buttons, this extension points every Colab link at the edition, when
the edition exists (it always does for a chapter: tests/test_readers_edition.py).
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath


def edition_path(pagename: str) -> str:
    """``book/NAME`` -> ``book/colab/NAME.ipynb`` (the reader's edition's path)."""
    page = PurePosixPath(pagename)
    return str(page.parent / "colab" / f"{page.name}.ipynb")


def _retarget(buttons: list, old: str, new: str) -> int:
    changed = 0
    for button in buttons:
        if button.get("type") == "group":
            changed += _retarget(button.get("buttons", []), old, new)
        elif button.get("text") == "Colab" and button.get("url", "").endswith(old):
            button["url"] = button["url"][: -len(old)] + new
            changed += 1
    return changed


def _colab_edition(app, pagename, templatename, context, doctree):
    buttons = context.get("header_buttons")
    source = Path(app.srcdir) / f"{pagename}.ipynb"
    edition = edition_path(pagename)
    if not buttons or not source.exists() or not (Path(app.srcdir) / edition).exists():
        return
    _retarget(buttons, f"/{pagename}.ipynb", f"/{edition}")


def setup(app):
    # The theme adds its launch buttons at priority 501; this runs after it.
    app.connect("html-page-context", _colab_edition, priority=600)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
