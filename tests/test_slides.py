"""The slide notebooks and the deck builder (tools/slides.py), read from the sources.

The built decks are checked in a browser by tests/test_slides_browser.py
(``make slides``).
"""

from __future__ import annotations

import re

import nbformat
import pytest

from tools import slides
from tools.book_index import site_url
from tools.site import BOOK, ROOT, config, read_notebook

SLIDE_NOTEBOOKS = sorted(slides.SOURCES.glob("*.ipynb"))


def cell(kind: str, source: str = "", slide_type: str | None = "-", tags=()):
    made = (
        nbformat.v4.new_markdown_cell(source) if kind == "md" else nbformat.v4.new_code_cell(source)
    )
    if slide_type is not None:
        made.metadata["slideshow"] = {"slide_type": slide_type}
    if tags:
        made.metadata["tags"] = list(tags)
    return made


def notebook(*cells):
    nb = nbformat.v4.new_notebook()
    nb.cells = list(cells)
    return nb


def test_cells_are_grouped_into_slides_with_notes():
    nb = notebook(
        cell("code", "import torch", "skip"),
        cell("code", "# install", "slide", tags=["remove-cell"]),
        cell("md", "# Title", "slide"),
        cell("md", "sub", "-"),
        cell("md", "## Two", "slide"),
        cell("md", "said aloud", "notes"),
        cell("md", "more", "fragment"),
    )
    grouped = slides.group_slides(nb)
    assert [[c.source for c in s["cells"]] for s in grouped] == [
        ["# Title", "sub"],
        ["## Two", "more"],
    ]
    assert [[c.source for c in s["notes"]] for s in grouped] == [[], ["said aloud"]]


def test_a_deck_must_start_with_a_slide():
    with pytest.raises(ValueError, match="first shown cell must start a slide"):
        slides.group_slides(notebook(cell("md", "orphan", "-")), "deck")
    with pytest.raises(ValueError, match="no cell starts a slide"):
        slides.group_slides(notebook(cell("md", "x", "skip")), "deck")


def test_an_unknown_slide_type_is_named():
    with pytest.raises(ValueError, match=r"slide_type must be one of .* got 'slid'"):
        slides.group_slides(notebook(cell("md", "# A", "slid")), "deck")


def test_markdown_keeps_mathematics_for_mathjax():
    html = slides.markdown("weights $a_{ij} < 1$ and\n\n$$\\sum_j a_{ij} = 1$$")
    assert r"\(a_{ij} &lt; 1\)" in html
    assert r"\[\sum_j a_{ij} = 1\]" in html
    assert "$" not in html


def test_outputs_are_rendered_and_failures_refused():
    png = {"output_type": "display_data", "data": {"image/png": "iVBO\nRw==", "text/plain": "x"}}
    assert 'alt="a &quot;figure&quot;"' in slides.render_output(png, "here", 'a "figure"')
    assert "data:image/png;base64,iVBORw==" in slides.render_output(png, "here")
    text = {"output_type": "stream", "name": "stdout", "text": "a < b"}
    assert slides.render_output(text, "here") == '<pre class="attnbook-text">a &lt; b</pre>'
    with pytest.raises(ValueError, match="here: raised KeyError"):
        slides.render_output({"output_type": "error", "ename": "KeyError", "evalue": "1"}, "here")
    with pytest.raises(ValueError, match="here: wrote to stderr"):
        slides.render_output({"output_type": "stream", "name": "stderr", "text": "!"}, "here")


def test_unknown_deck_names_are_refused():
    with pytest.raises(ValueError, match="no-such-chapter"):
        slides.main(["no-such-chapter"])


def test_the_deck_page_loads_only_the_shared_assets():
    nb = notebook(cell("md", "# A title", "slide"), cell("md", "## B\n\n$x$", "slide"))
    page = slides.deck_html(nb, "a-deck")
    # What the page loads (a link's href, <a>, is followed only when clicked).
    loads = re.findall(r'<(?!a\b)\w+\b[^>]*?\b(?:src|href)="([^"]+)"', page)
    assert loads == [
        "_static/reveal/reveal.css",
        "_static/reveal/theme/white.css",
        "_static/mathjax/tex-chtml.js",
        "_static/reveal/reveal.js",
    ]
    assert page.count("<section") == 2


def test_every_deck_carries_the_books_credit_and_licences_on_its_title_slide():
    """The decks are shared on their own (LICENSE: CC BY 4.0 for them, MIT for code):
    the title slide names the book, its authors and its published address, and links
    the licences every page of the website names in its footer."""
    nb = notebook(cell("md", "# A title", "slide"), cell("md", "## B", "slide"))
    sections = re.findall(r"<section.*?</section>", slides.deck_html(nb, "a-deck"), re.S)
    book = config()
    credit = re.findall(r'<p class="attnbook-deck-credit">.*?</p>', sections[0], re.S)
    assert len(credit) == 1, f"the title slide has {len(credit)} credit lines: {sections[0]}"
    assert "attnbook-deck-credit" not in "".join(sections[1:]), "the credit is on the title slide"
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", credit[0]))
    for wanted in (book["title"], book["author"], site_url(book), "CC BY 4.0", "MIT"):
        assert wanted in text, f"the credit line lacks {wanted!r}: {text}"
    footer_licences = re.findall(r'href="([^"]+)"', book["html"]["extra_footer"])
    assert len(footer_licences) == 2
    links = re.findall(r'href="([^"]+)"', credit[0])
    for wanted in (site_url(book), *footer_licences):
        assert wanted in links and wanted in text, f"the credit line lacks a link to {wanted}"


def test_there_are_slide_notebooks():
    assert len(SLIDE_NOTEBOOKS) >= 2


@pytest.mark.parametrize("path", SLIDE_NOTEBOOKS, ids=lambda p: p.name)
def test_a_deck_belongs_to_a_chapter_and_is_a_lesson(path):
    chapter = BOOK / path.name
    assert chapter.is_file(), f"{path.name}: no chapter {chapter}"
    nb = read_notebook(path)
    grouped = slides.group_slides(nb, path.name)
    assert 10 <= len(grouped) <= 15, f"{path.name}: {len(grouped)} slides, not 10-15"
    headings = [s["cells"][0].source.splitlines()[0] for s in grouped]
    title = next(
        line
        for line in read_notebook(chapter).cells[0].source.splitlines()
        if line.startswith("# ")
    )
    assert headings[0] == title, (
        f"{path.name} opens with {headings[0]!r}, the chapter with {title!r}"
    )
    assert f"](../book/{path.stem}.html)" in grouped[0]["cells"][0].source
    assert headings[1] == "## Today"
    assert "## Checkpoint" in headings and headings[-1] == "## Exercises to set"
    checkpoint = grouped[headings.index("## Checkpoint")]
    assert checkpoint["notes"], f"{path.name}: the checkpoint's answers belong in its notes"
    exercises = grouped[-1]["cells"][0].source
    assert re.search(r"★", exercises), f"{path.name}: exercises carry a difficulty"


@pytest.mark.parametrize("path", SLIDE_NOTEBOOKS, ids=lambda p: p.name)
def test_shown_pictures_come_from_attnbook_and_have_alt_text(path):
    nb = read_notebook(path)
    shown = [c for s in slides.group_slides(nb, path.name) for c in s["cells"]]
    code = [c for c in shown if c.cell_type == "code"]
    assert any("attnbook" in c.source or "explorer(" in c.source for c in nb.cells)
    for c in code:
        if any("image/png" in o.get("data", {}) for o in c.outputs):
            explorer = any("widget-view" in k for o in c.outputs for k in o.get("data", {}))
            alt = c.metadata.get("mystnb", {}).get("image", {}).get("alt", "")
            assert explorer or len(alt) >= 40, f"{path.name}: a figure without alt text"


@pytest.mark.parametrize("path", SLIDE_NOTEBOOKS, ids=lambda p: p.name)
def test_a_slide_notebook_shows_no_code_input_nor_solutions(path):
    for c in read_notebook(path).cells:
        assert "solution" not in c.metadata.get("tags", []), f"{path.name}: slides set exercises"
        if c.cell_type == "code":
            assert not c.source.lstrip().startswith("# @title Solution")


def build_tiny_site(tmp_path, decks: list[str]) -> str:
    """A two-page Sphinx site with book/_ext/slide_links; decks built beforehand."""
    import sys

    from sphinx.application import Sphinx

    from tools.site import ROOT

    src, out = tmp_path / "src", tmp_path / "out"
    (src / "book").mkdir(parents=True)
    (src / "conf.py").write_text(
        f"import sys\nsys.path.insert(0, {str(ROOT / 'book' / '_ext')!r})\n"
        "extensions = ['slide_links']\nroot_doc = 'index'\n"
    )
    (src / "index.rst").write_text("Home\n====\n\n.. toctree::\n\n   book/a\n   book/b\n")
    for name in ("a", "b"):
        (src / "book" / f"{name}.rst").write_text(f"Chapter {name}\n=========\n\nText.\n")
    (out / "slides").mkdir(parents=True)
    for name in decks:
        (out / "slides" / f"{name}.html").write_text("<html></html>")
        (out / "slides" / f"{name}.pdf").write_bytes(b"%PDF-1.4")
    app = Sphinx(src, src, out, tmp_path / "doctrees", "html", status=None, warning=sys.stderr)
    app.build()
    return out


def test_a_chapter_links_its_deck_only_when_built(tmp_path):
    out = build_tiny_site(tmp_path, decks=["a"])
    page_a = (out / "book" / "a.html").read_text(encoding="utf-8")
    page_b = (out / "book" / "b.html").read_text(encoding="utf-8")
    assert 'href="../slides/a.html"' in page_a and 'href="../slides/a.pdf"' in page_a
    assert page_a.index("</h1>") < page_a.index("attnbook-slides-link")
    assert "attnbook-slides-link" not in page_b


def test_a_deck_reuses_nbvals_executed_copy_only_when_its_cells_are_the_notebooks(tmp_path):
    """`make check` writes the decks from `make test`'s executed slide notebooks
    (tools.slides --executed); a copy whose cells differ from the source (an
    edit since) is executed afresh instead. Seen: both decks byte-identical."""
    source = slides.SOURCES / "masked-softmax.ipynb"
    nb = nbformat.read(source, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = [nbformat.v4.new_output("stream", text="ran by nbval\n")]
    nbformat.write(nb, tmp_path / source.name)
    reused = slides.executed_copy(source, tmp_path)
    assert reused is not None and reused.cells[-1].source == nb.cells[-1].source
    assert slides.executed_copy(source, None) is None
    assert slides.executed_copy(slides.SOURCES / "positions.ipynb", tmp_path) is None  # no copy
    nb.cells[0].source += "\n"  # the source was edited since nbval ran
    nbformat.write(nb, tmp_path / source.name)
    assert slides.executed_copy(source, tmp_path) is None


# A chapter's concept questions, for the decks' concept test: the fixture that both test
# trees share (lib/tests/quiz_fixture.toml). Its deck question is the first: its key is C
# (the file's order), one wrong option's feedback has two sentences (only the first,
# naming the misconception, goes on the slide), and it writes maths and bold.
CONCEPT_TOML = (ROOT / "lib" / "tests" / "quiz_fixture.toml").read_text(encoding="utf-8")


def concept_questions(monkeypatch, chapters: dict[str, str]) -> None:
    """attnbook.quiz reads ``chapters`` (name -> TOML text) instead of the question files."""
    from attnbook import quiz

    monkeypatch.setattr(quiz, "chapters", lambda: sorted(chapters))
    monkeypatch.setattr(quiz, "load", lambda name: quiz.parse(name, chapters[name]))


def sections_of(page: str) -> list[str]:
    return re.findall(r"<section\b.*?</section>", page, re.S)


def text_of(fragment: str) -> str:
    import html as html_module

    return " ".join(html_module.unescape(re.sub(r"<[^>]+>", " ", fragment)).split())


def three_slides():
    return notebook(
        cell("md", "# A title", "slide"),
        cell("md", "## Two", "slide"),
        cell("md", "## Last", "slide"),
    )


def check_concept_slides(sections: list[str], question) -> None:
    """The two concept-test slides just before the last: the question, lettered options and
    the vote; then the answer as one fragment: the key's letters, why it is right, one
    misconception line per wrong option; every option's full feedback in the notes."""
    from attnbook import quiz

    asked, answer = sections[-3], sections[-2]
    assert 'data-concept="question"' in asked and 'data-concept="answer"' in answer
    assert f'data-key="{question.key}"' in asked and f'data-key="{question.key}"' in answer
    assert "data-concept" not in "".join(sections[:-3] + sections[-1:])
    shown = text_of(asked.split('<aside class="notes">')[0])
    assert quiz.plain(question.prompt).split()[0] in shown
    assert slides.VOTE in shown
    options = re.findall(r'<span class="attnbook-concept-letter">([A-F])\.</span>', asked)
    assert options == list(quiz.LETTERS[: len(question.options)])
    body, notes = answer.split('<aside class="notes">')
    fragments = re.findall(r'class="fragment[^"]*" data-fragment-index="0"', body)
    assert len(fragments) == 1 + len(question.options)  # the key, and one line per option
    assert f"Answer: {quiz.key_text(question)}" in text_of(body)
    right = re.findall(r"<strong>Right</strong>", body)
    wrong = re.findall(r"<strong>Misconception</strong>: (.*?)</span>", body)
    assert len(right) == len(question.right)
    assert len(wrong) == len(question.options) - len(question.right)
    for i, option in enumerate(question.options):
        verdict = "right" if option.correct else "wrong"
        assert f"<strong>{quiz.LETTERS[i]} ({verdict})</strong>" in notes
        assert quiz.markdown(option.feedback) in notes
    assert "$" not in text_of(asked + answer)  # maths handed to MathJax, as \( \)


def test_a_deck_question_makes_two_concept_slides_before_the_last(monkeypatch):
    from attnbook import quiz

    concept_questions(monkeypatch, {"a-deck": CONCEPT_TOML})
    question = next(q for q in quiz.load("a-deck") if q.deck)
    sections = sections_of(slides.deck_html(three_slides(), "a-deck"))
    assert len(sections) == 5
    check_concept_slides(sections, question)
    answer = sections[-2].split('<aside class="notes">')[0]
    assert "Answer: C" in text_of(answer)
    assert '<li data-correct="1"><span class="attnbook-concept-letter">C.</span>' in answer
    # The misconception is the feedback's first sentence; the rest is in the notes only.
    assert "That is a consequence, not the cause." in answer
    assert "The softmax comes after" not in answer and "The softmax comes after" in sections[-2]
    assert r"Right : Each of the \(d\) products adds variance 1, so their sum" in text_of(answer)
    assert "Right. Each" not in answer
    assert r'<span class="math notranslate nohighlight">\(q^\top k\)</span>' in sections[-3]
    assert "<strong>length</strong>" in sections[-3]


def test_a_numeric_deck_question_shows_its_number_as_the_answer(monkeypatch):
    # The fixture with its numeric question as the deck's.
    numeric = CONCEPT_TOML.replace("deck = true\n", "").replace(
        'kind = "numeric"', 'kind = "numeric"\ndeck = true'
    )
    concept_questions(monkeypatch, {"a-deck": numeric})
    sections = sections_of(slides.deck_html(three_slides(), "a-deck"))
    answer = sections[-2].split('<aside class="notes">')[0]
    assert 'data-concept="question"' in sections[-3] and "Your answer" in sections[-3]
    assert "Answer: 0.25 (± 0.005)" in text_of(answer)
    assert "0.75: That is the other key's weight." in text_of(answer)
    assert "fragment" in answer and "Read the order of the scores again" in sections[-2]


def test_a_chapter_without_a_deck_question_gets_no_concept_slides(monkeypatch):
    concept_questions(monkeypatch, {})  # no question file yet
    assert "data-concept" not in slides.deck_html(three_slides(), "a-deck")
    undecked = CONCEPT_TOML.replace("deck = true\n", "")
    concept_questions(monkeypatch, {"a-deck": undecked})  # a file, no deck = true
    assert "data-concept" not in slides.deck_html(three_slides(), "a-deck")


@pytest.mark.parametrize("path", SLIDE_NOTEBOOKS, ids=lambda p: p.name)
def test_every_deck_whose_chapter_has_a_deck_question_shows_it(path):
    """The deck of each chapter with a ``deck = true`` question (attnbook.quiz; the deck's
    file name is the chapter's) carries its concept test, from the slide notebook as saved."""
    question = slides.deck_question(path.stem)
    if question is None:
        pytest.skip(f"{path.stem}: no deck question (no question file yet)")
    page = slides.deck_html(read_notebook(path), path.stem)
    check_concept_slides(sections_of(page), question)
