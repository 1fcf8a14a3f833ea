"""Explorers wider than the content column use the page margin on wide screens.

The content column of sphinx-book-theme is 688 CSS px wide on a desktop
(1280 px and up), and some explorers need more (up to 832 px): their
``.attnbook-view`` box would scroll sideways and cut the picture off. This
extension tags each notebook cell whose explorer is wider than the column
``tag_full-width``, the theme's own full-width content: on screens of at least
992 px the cell grows by the margin (to 136% of the column, 935 px) over the
in-page table of contents, which the theme's script hides while such content
is in view. On narrower screens nothing changes: the explorer keeps its
natural size and scrolls in its own box (the phone rule, tests/test_reading.py).
tests/test_reading.py measures every explorer at 1280, 1536 and 1920 px.
"""

from __future__ import annotations

import re

from docutils import nodes

COLUMN_PX = 688
WIDTH = re.compile(r'class="attnbook-view".*?style="position:relative;width:(\d+)px', re.S)


def explorer_width(cell: nodes.Element) -> int:
    """The widest explorer picture (CSS px) in a cell's HTML outputs; 0 if none."""
    widths = [
        int(width)
        for raw in cell.findall(nodes.raw)
        if "html" in raw.get("format", "")
        for width in WIDTH.findall(raw.astext())
    ]
    return max(widths, default=0)


def _widen(app, doctree, docname):
    if app.builder.name == "singlehtml":
        # The printed book (make pdf) lays each explorer out as small
        # multiples; there, the theme's script that hides the table of
        # contents while full-width content is in view kept moving the
        # explorer, and Chromium never found it still enough to photograph.
        return
    for cell in doctree.findall(nodes.container):
        if "cell" in cell["classes"] and explorer_width(cell) > COLUMN_PX:
            cell["classes"].append("tag_full-width")


def setup(app):
    app.connect("doctree-resolved", _widen)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
