"""The reader's edition (book/colab/, tools/readers_edition.py) reads right
where Colab, GitHub, nbviewer and a plain JupyterLab open it, and is in sync
with the chapters it comes from.

Those front ends render notebook Markdown as CommonMark with HTML. Each
edition is rendered here with markdown-it-py's CommonMark preset (HTML on),
and what a reader would see is measured independently of the converter:

* raw MyST in the visible text: roles (``{ref}`` rendered as ``{ref}<code>``),
  label lines ``(name)=``, directive fences (a code block whose language is
  ``{dropdown}``, or ``:::{...}`` as text);
* dropdowns shown open: every dropdown of the source must be a closed
  ``<details>`` whose body Markdown is rendered (a blank line after the
  summary), so "try first, then look" holds;
* solution code not folded: JupyterLab folds ``jupyter.source_hidden``, Colab
  only a form (``cellView: form`` and a ``# @title`` first line);
* captions that never appear: a caption kept in cell metadata must be the text
  of the Markdown cell right after its figure, with the website's number.

``python -m tests.test_readers_edition`` prints these counts for the sources
and for the editions (the table in CONTRIBUTING.md, "The reader's edition").
"""

from __future__ import annotations

import html
import re
import sys
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest
from markdown_it import MarkdownIt

from tools import readers_edition
from tools.site import BOOK, NOTEBOOKS

EDITIONS = BOOK / "colab"
RENDER = MarkdownIt("commonmark", {"html": True})
ROLE_SHOWN = re.compile(r"\{[a-zA-Z][\w:+-]*\}(<code>|`)")
LABEL_SHOWN = re.compile(r"(^|\n)\s*\([^()\s]+\)=\s*(\n|$)")
FENCE_SHOWN = re.compile(r'class="language-\{|:{3,}\{')
SOURCE_DROPDOWN = re.compile(r"^\s*(`{3,}|:{3,})\{(dropdown|admonition)\}(.*)$", re.M)
TITLE_LINE = re.compile(r"^#\s?@title\s+\S")


class _Text(HTMLParser):
    """Visible text of rendered Markdown, outside code blocks and closed <details>."""

    def __init__(self):
        super().__init__()
        self.parts: list[str] = []
        self.hidden = 0  # depth inside a closed <details>, its <summary> aside
        self.summary = False
        self.pre = 0

    def handle_starttag(self, tag, attrs):
        if tag == "details" and ("open" not in dict(attrs) or self.hidden):
            self.hidden += 1
        elif tag == "summary":
            self.summary = True
        elif tag == "pre":
            self.pre += 1

    def handle_endtag(self, tag):
        if tag == "details" and self.hidden:
            self.hidden -= 1
        elif tag == "summary":
            self.summary = False
        elif tag == "pre":
            self.pre -= 1

    def handle_data(self, data):
        if (not self.hidden or (self.summary and self.hidden == 1)) and not self.pre:
            self.parts.append(data)


def visible_text(markdown: str) -> str:
    parser = _Text()
    parser.feed(RENDER.render(markdown))
    return re.sub(r"\s+", " ", "".join(parser.parts)).strip()


def _closed_details(rendered: str) -> list[str]:
    """The closed <details> blocks of rendered HTML whose body Markdown was rendered."""
    blocks = re.findall(r"<details>\s*<summary>(.*?)</summary>(.*?)</details>", rendered, re.S)
    return [summary for summary, body in blocks if re.search(r"<(p|ul|ol|pre)\b", body)]


def measure(nb: nbformat.NotebookNode, source: nbformat.NotebookNode) -> dict[str, int]:
    """What a CommonMark reader of ``nb`` meets; ``source`` is the chapter it shows."""
    markdown = [c.source for c in nb.cells if c.cell_type == "markdown"]
    rendered = [RENDER.render(text) for text in markdown]
    roles = fences = 0
    for shown in rendered:
        roles += len(ROLE_SHOWN.findall(shown))
        roles += len(LABEL_SHOWN.findall(html.unescape(re.sub(r"<[^>]+>", "\n", shown))))
        fences += len(FENCE_SHOWN.findall(shown))
    dropdowns = sum(
        len(SOURCE_DROPDOWN.findall(c.source))
        for c in source.cells
        if c.cell_type == "markdown"
        and ("{dropdown}" in c.source or ":class: dropdown" in c.source)
    )
    closed = sum(len(_closed_details(text)) for text in rendered)
    unfolded = 0
    for cell in nb.cells:
        if cell.cell_type == "code" and "solution" in cell.metadata.get("tags", []):
            lab = cell.metadata.get("jupyter", {}).get("source_hidden") is True
            colab = cell.metadata.get("cellView") == "form" and TITLE_LINE.match(cell.source)
            unfolded += not (lab and colab)
    return {
        "MyST roles and labels": roles,
        "directive fences": fences,
        "dropdowns": dropdowns,
        "shown open": max(dropdowns - closed, 0),
        "solution code": sum(
            "solution" in c.metadata.get("tags", []) for c in nb.cells if c.cell_type == "code"
        ),
        "not folded in Colab": unfolded,
        "captions": len(_captions(source)),
        "captions unseen": len(_unseen_captions(nb, source)),
    }


def _captions(nb: nbformat.NotebookNode) -> list[str]:
    return [
        c.metadata["mystnb"]["figure"]["caption"]
        for c in nb.cells
        if c.cell_type == "code" and c.metadata.get("mystnb", {}).get("figure", {}).get("caption")
    ]


def _unseen_captions(nb: nbformat.NotebookNode, source: nbformat.NotebookNode) -> list[str]:
    """Captions of ``source`` that no Markdown cell right after the figure shows."""
    numbers = _website_numbers()
    unseen = []
    for index, cell in enumerate(nb.cells):
        figure = (
            cell.metadata.get("mystnb", {}).get("figure", {}) if cell.cell_type == "code" else {}
        )
        if not figure.get("caption"):
            continue
        after = nb.cells[index + 1] if index + 1 < len(nb.cells) else None
        shown = visible_text(after.source) if after and after.cell_type == "markdown" else ""
        # The caption's words up to its first MyST role, as the website prints them.
        words = visible_text(re.split(r"\{[a-z][\w:+-]*\}`", figure["caption"])[0])[:60]
        number = numbers.get(figure.get("name"))
        if words not in shown or (number and not shown.startswith(f"Figure {number}.")):
            unseen.append(figure["caption"])
    return unseen


def _website_numbers() -> dict[str, int]:
    """Figure numbers as the website shows them ("Fig. N"), from the built
    site when there is one; otherwise as Sphinx assigns them (one counter
    through the book in reading order; tests/test_site.py checks the built
    site agrees)."""
    book = readers_edition.scan_book()
    return {name: t.number for name, t in book.targets.items() if t.kind == "figure"}


def table(paths: list[Path]) -> dict[str, dict[str, int]]:
    counts = {}
    for path in paths:
        source = nbformat.read(BOOK / path.name, as_version=4)
        counts[path.name] = measure(nbformat.read(path, as_version=4), source)
    return counts


def test_every_chapter_has_a_readers_edition_in_sync():
    stale = readers_edition.stale()
    assert not stale, (
        "the reader's edition is out of date with its source: "
        + ", ".join(str(p.relative_to(BOOK.parent)) for p in stale)
        + "; run `make readers-edition` and commit book/colab/"
    )
    assert sorted(p.name for p in EDITIONS.glob("*.ipynb")) == [p.name for p in NOTEBOOKS]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_edition_reads_right_in_commonmark(path):
    edition = EDITIONS / path.name
    counts = measure(nbformat.read(edition, as_version=4), nbformat.read(path, as_version=4))
    assert counts["MyST roles and labels"] == 0, f"{edition.name}: raw MyST shows: {counts}"
    assert counts["directive fences"] == 0, f"{edition.name}: directive fences show: {counts}"
    assert counts["shown open"] == 0, f"{edition.name}: dropdowns shown open: {counts}"
    assert counts["not folded in Colab"] == 0, f"{edition.name}: solution code unfolded: {counts}"
    assert counts["captions unseen"] == 0, f"{edition.name}: captions unseen: {counts}"
    assert counts["solution code"] >= 2 and counts["dropdowns"] >= 3 and counts["captions"] >= 1


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_edition_keeps_the_install_cell_first_and_every_check(path):
    source = nbformat.read(path, as_version=4)
    edition = nbformat.read(EDITIONS / path.name, as_version=4)
    code = [c for c in source.cells if c.cell_type == "code"]
    code_edition = [c for c in edition.cells if c.cell_type == "code"]
    # Same code cells in the same order (only a '# @title' line added), same outputs.
    assert len(code) == len(code_edition)
    for before, after in zip(code, code_edition):
        assert after.source.endswith(before.source)
        assert after.outputs == before.outputs
        if "remove-cell" in before.metadata.get("tags", []):  # install cell, hidden checks
            assert after.metadata.get("cellView") == "form" and TITLE_LINE.match(after.source)
    assert "google.colab" in code_edition[0].source
    # Maths: every $$ opens and closes inside its cell, as MathJax needs.
    for cell in edition.cells:
        if cell.cell_type == "markdown":
            assert cell.source.count("$$") % 2 == 0, cell.source[:200]
            assert not re.search(r"\$\$\s*\([^()\s]+\)", cell.source), "equation label left"


def test_measure_sees_what_the_sources_get_wrong():
    """The checks above fail on the chapters as written (MyST): measured on
    the sources, every count is what the issue found, not zero."""
    counts = table(NOTEBOOKS)
    total = {key: sum(c[key] for c in counts.values()) for key in next(iter(counts.values()))}
    assert total["MyST roles and labels"] > 0 and total["directive fences"] > 0
    assert total["shown open"] == total["dropdowns"] > 0
    assert total["not folded in Colab"] == total["solution code"] > 0
    assert total["captions unseen"] == total["captions"] > 0


def test_converter_on_a_handmade_cell():
    """Each MyST construct the chapters use, converted and rendered."""
    book = readers_edition.scan_book()
    convert = readers_edition.Converter(book, "book/masked-softmax").markdown
    text = convert(
        "(sec-x)=\n## Title\n\nSee {ref}`chap-attention-pooling`, {numref}`fig-qkv-pooling` "
        "and {cite}`vaswani2017attention`; {cite:t}`vaswani2017attention` said so.\n\n"
        "````{dropdown} Solution\nThe answer is $x$.\n\n```python\nx = 1\n```\n````\n\n"
        ":::{note}\nA note.\n:::\n\n$$\na = b\n$$ (eq-a)\n"
    )
    shown = visible_text(text)
    assert "(sec-x)=" not in text and "{" not in shown
    assert f"[Attention Pooling by Similarity: Nadaraya-Watson Kernel Regression]({book.site}" in (
        text
    )
    assert "[Figure 2](" in text and "attention-cues.html#fig-qkv-pooling" in text
    assert "([Vaswani et al., 2017](" in text and "[Vaswani et al. (2017)](" in text
    assert _closed_details(RENDER.render(text)) == ["Solution"]
    assert "The answer is" not in shown and "A note." in shown
    assert "$$ (eq-a)" not in text


def test_converter_on_the_rarer_directives():
    """Constructs no chapter uses yet, as a new chapter might: an admonition
    dropdown, a figure directive, an equation reference, {math}, {doc}, amsmath."""
    book = readers_edition.scan_book()
    book.targets["eq-b"] = readers_edition.Target(
        "book/masked-softmax", "equation-eq-b", "", "equation", 3
    )
    convert = readers_edition.Converter(book, "book/masked-softmax").markdown
    text = convert(
        ":::{admonition} Going deeper: why\n:class: dropdown\nHidden {math}`x^2`.\n:::\n\n"
        "```{figure} img/desk-cues.svg\n:name: fig-desk-cues\n:alt: A desk\n\nThe desk.\n```\n\n"
        "By {eq}`eq-b`, see {doc}`intro`.\n\n\\begin{align}\na &= b\n\\end{align}\n"
    )
    rendered = RENDER.render(text)
    assert _closed_details(rendered) == ["Going deeper: why"]
    assert "$x^2$" in text
    assert (
        "![A desk](https://raw.githubusercontent.com/" in text and "book/img/desk-cues.svg)" in text
    )
    assert "**Figure 1.** The desk." in text
    assert "By (3), see [Attention, Interactively](" in text
    assert "$$\n\\begin{align}\na &= b\n\\end{align}\n$$" in text
    assert not FENCE_SHOWN.search(rendered) and not ROLE_SHOWN.search(rendered)


if __name__ == "__main__":
    for title, paths in (
        ("sources (book/*.ipynb)", NOTEBOOKS),
        ("reader's edition (book/colab/*.ipynb)", sorted(EDITIONS.glob("*.ipynb"))),
    ):
        counts = table(paths)
        keys = list(next(iter(counts.values())))
        print(f"\n{title}\n| chapter | " + " | ".join(keys) + " |")
        print("|---" * (len(keys) + 1) + "|")
        for name, row in counts.items():
            print(f"| {name.removesuffix('.ipynb')} | " + " | ".join(map(str, row.values())) + " |")
        print("| **total** | " + " | ".join(str(sum(r[k] for r in counts.values())) for k in keys))
    sys.exit(0)
