"""The printed book (`make pdf` writes it, then runs this file).

Every chapter title is in the PDF, no raw TeX is left in its text (a ``$`` or
a TeX command is allowed only inside a line of the book's own code), the
notebooks' figures and the explorers' small multiples are there as images,
the SVG figures' captions are there, and the heading outline exists.
"""

from __future__ import annotations

import re
import unicodedata

import pytest

from tools.print_book import OUTPUT, STOPS, squash
from tools.site import BOOK, ROOT, read_notebook, toc_files

TEX = re.compile(r"\$|\\[A-Za-z]+")


def normal(text: str) -> str:
    """NFKC (ligatures such as 'fi' back to letters) and single spaces."""
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text)).strip()


@pytest.fixture(scope="module")
def pdf():
    from pypdf import PdfReader

    if not OUTPUT.exists():
        raise AssertionError(f"no {OUTPUT.relative_to(ROOT)}: run `make pdf`")
    reader = PdfReader(str(OUTPUT))
    texts = [page.extract_text() or "" for page in reader.pages]
    return reader, texts


def chapter_title(name: str) -> str:
    path = ROOT / f"{name}.md"
    if path.exists():
        lines = path.read_text(encoding="utf-8").splitlines()
    else:
        notebook = read_notebook(ROOT / f"{name}.ipynb")
        lines = [
            line
            for cell in notebook.cells
            if cell.cell_type == "markdown"
            for line in cell.source.splitlines()
        ]
    return next(line[2:].strip() for line in lines if line.startswith("# "))


def code_lines() -> set[str]:
    """Every line of code the book shows (code cells, fenced code in the prose)."""
    lines = set()
    for name in toc_files():
        path = ROOT / f"{name}.ipynb"
        if path.exists():
            for cell in read_notebook(path).cells:
                if cell.cell_type == "code":
                    lines.update(normal(line) for line in cell.source.splitlines())
        else:
            text = (ROOT / f"{name}.md").read_text(encoding="utf-8")
            for block in re.findall(r"```[^\n]*\n(.*?)```", text, flags=re.S):
                lines.update(normal(line) for line in block.splitlines())
    return {line for line in lines if line}


def is_code(line: str, code: set[str]) -> bool:
    line = normal(line)
    return any(line in source or source in line for source in code if len(source) >= 8)


def test_every_chapter_title_is_printed(pdf):
    _, texts = pdf
    whole = normal(" ".join(texts))
    missing = [title for title in map(chapter_title, toc_files()) if normal(title) not in whole]
    assert missing == []


def test_no_raw_tex_outside_code(pdf):
    _, texts = pdf
    code = code_lines()
    leaks = [
        f"page {number}: {line.strip()[:100]}"
        for number, text in enumerate(texts, start=1)
        for line in text.splitlines()
        if TEX.search(line) and not is_code(line, code)
    ]
    assert leaks == [], "raw TeX in the printed text"


def test_figures_are_printed(pdf):
    reader, texts = pdf
    pngs = sum(
        "image/png" in output.get("data", {})
        for path in sorted(BOOK.glob("*.ipynb"))
        for cell in read_notebook(path).cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
        # an explorer's stored PNG is its fallback, printed as small multiples instead
        if "application/vnd.jupyter.widget-view+json" not in output.get("data", {})
    )
    explorers = sum(
        "_explorer(" in cell.source
        for path in sorted(BOOK.glob("*.ipynb"))
        for cell in read_notebook(path).cells
        if cell.cell_type == "code"
    )
    images = sum(len(page.images) for page in reader.pages)
    assert images >= pngs + explorers * STOPS, (images, pngs, explorers)
    whole = normal(" ".join(texts))
    for name in toc_files():
        path = ROOT / f"{name}.md"
        if not path.exists():
            continue
        for caption in re.findall(
            r"```\{figure\}[^\n]*\n(?::[^\n]*\n)*\n([^\n]+)", path.read_text(encoding="utf-8")
        ):
            assert normal(caption)[:40] in whole, f"figure caption missing: {caption[:60]}"


def squash_tex(text: str) -> str:
    """print_book's squash (letters and digits, lower case) with TeX commands gone."""
    return squash(re.sub(r"\\[A-Za-z]+", "", unicodedata.normalize("NFKC", text)))


def source_headings() -> list[str]:
    """Every heading the book's sources write (``#`` to ``####``, outside code)."""
    headings = []
    for name in toc_files():
        path = ROOT / f"{name}.md"
        if path.exists():
            texts = [path.read_text(encoding="utf-8")]
        else:
            notebook = read_notebook(ROOT / f"{name}.ipynb")
            texts = [c.source for c in notebook.cells if c.cell_type == "markdown"]
        for text in texts:
            # Fenced blocks (code, and directives such as solutions) hold no
            # headings; a fence closes only on a line of its own length.
            text = re.sub(
                r"^(`{3,}|~{3,})[^\n]*\n.*?^\1[ \t]*$", "", text, flags=re.MULTILINE | re.DOTALL
            )
            headings += re.findall(r"^#{1,4} (.+)$", text, flags=re.MULTILINE)
    return headings


def test_outline_names_every_heading_once_and_readably(pdf):
    # The outline is written from the headings (print_book.fix_outline):
    # Chromium's own titles repeated some headings ("NotationNotation"),
    # dropped the maths ("Grow  yourself") and ran wrapped words together.
    reader, _ = pdf

    def titles(items):
        for item in items:
            if isinstance(item, list):
                yield from titles(item)
            else:
                yield normal(item.title)

    found = list(titles(reader.outline))
    for title in found:
        half = len(title) // 2
        assert title[:half].strip() != title[half:].strip(), f"repeated title {title!r}"
        assert not TEX.search(title), f"raw TeX in outline title {title!r}"
    squashed = {squash_tex(title) for title in found}
    missing = [h for h in source_headings() if squash_tex(h) not in squashed]
    assert not missing, f"headings missing from the outline: {missing[:5]}"
    assert normal(chapter_title(toc_files()[1])) in found


def test_small_multiples_carry_their_descriptions(pdf):
    """Each printed stop has the state's description under it (the explorer's caption).

    The first stop printed for the kernel-width slider is its smallest width,
    with the menu on its default kernel (print_book picks both ends of a control).
    """
    from attnbook.widgets import kernel_width_explorer

    _, texts = pdf
    whole = squash(" ".join(texts))
    explorer = kernel_width_explorer(kernels="all")
    for width in (explorer.stops[0], explorer.stops[-1]):
        text = explorer.alt_text(width, "gaussian")
        assert squash(text)[:120] in whole, f"description missing from the PDF: {text[:80]}"


def test_concept_questions_print_in_place_and_answer_in_the_appendix(pdf):
    """Every question is printed where the chapter asks it (its options, no
    buttons), and the appendix gives every key: one "Answer:" per question."""
    from attnbook import quiz

    _, texts = pdf
    pages = [normal(text) for text in texts]
    total = sum(len(quiz.load(chapter)) for chapter in quiz.chapters())
    start = next((i for i, text in enumerate(pages) if "retrieval, not rereading" in text), None)
    assert start is not None, "the appendix 'Answers to the concept questions' is not printed"
    asked = sum(len(re.findall(r"Check your understanding \d+", text)) for text in pages[:start])
    answers = sum(text.count("Answer:") for text in pages[start:])
    assert asked >= total, f"{asked} questions printed in the chapters, {total} written"
    assert answers >= total, f"{answers} answers in the appendix, {total} questions"
    assert not any("Show the answer" in text or "I predict this" in text for text in pages)
