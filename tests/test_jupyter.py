"""`make test-jupyter`: every explorer driven with the keyboard in a real JupyterLab.

A throwaway JupyterLab (tools/jupyter_lab.py) serves copies of the chapters
that show explorers, each cut after the cell that makes its last explorer
(what follows shows none, and strict nbval runs it); headless Chromium opens
each one, runs every cell, and
moves every control of every explorer, twice round: sliders with the keyboard,
menus by choosing the next option (a closed menu ignores keys in JupyterLab in
headless Chromium). Each move must load a new picture and change the one
visible caption under it; no widget error ("Error displaying widget",
"model not found"), no console error, no request to another host. That
JupyterLab runs without jupyterlab-myst (see the fixture).

One chapter is also read as a student meets it: its reader's edition
(book/colab/, what Colab opens) in a JupyterLab with jupyterlab-myst switched
off, and its MyST source with jupyterlab-myst (what `make lab` shows). Neither
may show raw MyST, and a solution stays hidden until its summary is clicked.
"""

from __future__ import annotations

import re

import pytest

from tools.browser import Offline, chromium
from tools.jupyter_lab import LabNotebook, explorer_notebooks, lab_server, through_last_explorer
from tools.site import BOOK, read_notebook

NOTEBOOKS = explorer_notebooks()
STEPS = 3  # key presses per control


@pytest.fixture(scope="module")
def browser():
    """One headless Chromium for the module (Playwright's sync API allows one at a time)."""
    with chromium() as browser:
        yield browser


@pytest.fixture(scope="module")
def lab(browser):
    # The explorers are driven in a JupyterLab with no extension beyond the
    # widgets (as Colab, Notebook 7 and a plain JupyterLab show them).
    # jupyterlab-myst (`make lab`) logs a console error for every {ref} to
    # another chapter (it sees one notebook at a time) and, after cells run,
    # "Cannot read properties of undefined (reading 'node')"; the reading test
    # below covers what it renders.
    # Each chapter up to its last explorer (tools.jupyter_lab.through_last_explorer):
    # the cells after it show no explorer, and strict nbval runs them.
    chapters = {path.name: through_last_explorer(path) for path in NOTEBOOKS}
    with lab_server([], extra=chapters, disabled_extensions=("jupyterlab-myst",)) as (base, root):
        yield base, browser


def test_chapters_with_explorers_are_found():
    names = [path.name for path in NOTEBOOKS]
    assert "attention-pooling.ipynb" in names and "masked-softmax.ipynb" in names


def test_each_chapter_is_cut_after_its_last_explorer():
    for path in NOTEBOOKS:
        full = read_notebook(path).cells
        cut = through_last_explorer(path).cells
        assert [c.source for c in cut] == [c.source for c in full[: len(cut)]]
        assert "_explorer(" in cut[-1].source or "widget-view" in str(cut[-1].outputs)
        assert not any("_explorer(" in c.source for c in full[len(cut) :]), path.name
    # Most chapters end in exercises and checks that show no explorer.
    assert sum(len(through_last_explorer(p).cells) for p in NOTEBOOKS) < 0.8 * sum(
        len(read_notebook(p).cells) for p in NOTEBOOKS
    )


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_explorers_redraw_in_jupyterlab(lab, notebook):
    base, browser = lab
    with Offline(browser, viewport={"width": 1400, "height": 1000}) as offline:
        lab_page = LabNotebook(offline, base, notebook.name)
        lab_page.run_all()
        assert lab_page.widget_errors() == []
        assert lab_page.cell_errors() == []
        explorers = lab_page.explorers()
        assert explorers, f"no explorer rendered in {notebook.name}"
        for explorer in explorers:
            controls = lab_page.controls(explorer)
            assert controls, "an explorer without a control"
            # One description under the picture, shown from the start.
            (caption,) = lab_page.captions(explorer)
            assert len(caption) > 40
            for control in controls:
                seen = set()
                # A menu of k options comes back to a picture it showed after k steps.
                stops = control.evaluate(
                    "el => el.tagName === 'SELECT' ? el.options.length : Infinity"
                )
                for _ in range(min(STEPS, stops)):
                    result = lab_page.step(explorer, control)
                    assert result["src"] not in seen, "the picture did not change"
                    seen.add(result["src"])
                    # The caption moves with the picture.
                    caption = lab_page.wait_caption_change(explorer, caption)
        # The concept questions run before the last explorer render (anywidget)
        # and answer: one option picked and checked gives a verdict.
        asked = sum(
            cell.source.startswith("ask(") for cell in through_last_explorer(notebook).cells
        )
        quizzes = offline.page.locator(".attnbook-quiz")
        assert quizzes.count() == asked, f"{quizzes.count()} questions shown, {asked} asked"
        if asked:
            first = quizzes.first
            first.scroll_into_view_if_needed()
            box = first.locator(".attnbook-quiz-option input, .attnbook-quiz-number input").first
            if box.get_attribute("type") == "text":
                box.fill("12345")
            else:
                box.click()
            first.locator(".attnbook-quiz-check").click()
            verdict = first.locator(".attnbook-quiz-result").inner_text()
            assert verdict.strip(), "a question in JupyterLab gave no verdict"
        assert lab_page.widget_errors() == []
    assert offline.blocked == [], f"requests to other hosts: {offline.blocked}"
    assert offline.errors == [], f"console errors: {offline.errors}"


# What raw MyST looks like in rendered text: a role or directive name in
# braces, a label line, a directive fence.
MYST_SHOWN = re.compile(
    r"\{(?:ref|numref|eq|doc|cite(?::\w+)?|dropdown|admonition|note|figure)\}"
    r"|^\s*\([\w:.-]+\)=\s*$|(?:`{3,}|:{3,})\{",
    re.M,
)
# A Markdown cell's rendering: JupyterLab's own (.jp-MarkdownOutput) or jupyterlab-myst's (.myst).
MARKDOWN_TEXT_JS = """() => [...document.querySelectorAll(
        '.jp-MarkdownCell .jp-MarkdownOutput, .jp-MarkdownCell .myst')]
    .map(el => el.textContent).join('\\n')"""
# jupyterlab-myst sees one notebook at a time: a {ref} to another chapter's
# label shows the label's name and logs this (the reader's edition links it).
UNRESOLVED_REF = "Cross reference target was not found: chap-"
HAS_MYST_JS = "() => window.jupyterapp.listPlugins().some(id => id.startsWith('jupyterlab-myst'))"


@pytest.mark.parametrize(
    ("notebook", "myst"),
    [(BOOK / "colab" / "masked-softmax.ipynb", False), (BOOK / "masked-softmax.ipynb", True)],
    ids=["readers-edition-without-jupyterlab-myst", "source-with-jupyterlab-myst"],
)
def test_chapter_reads_as_the_book(browser, notebook, myst):
    """A chapter shows no raw MyST and keeps each solution closed until its
    summary is clicked: the reader's edition (what Colab opens) in a JupyterLab
    without jupyterlab-myst, the source with it (what `make lab` shows)."""
    disabled = () if myst else ("jupyterlab-myst",)
    with (
        lab_server([notebook], disabled_extensions=disabled, render_all=True) as (base, _),
        Offline(browser, viewport={"width": 1400, "height": 1000}) as offline,
    ):
        lab_page = LabNotebook(offline, base, notebook.name)
        page = lab_page.page
        assert page.evaluate(HAS_MYST_JS) is myst
        page.wait_for_timeout(2000)  # every Markdown cell rendered
        text = page.evaluate(MARKDOWN_TEXT_JS)
        assert len(text) > 3000, "the chapter's Markdown did not render"
        raw = [m.group(0) for m in MYST_SHOWN.finditer(text)]
        assert raw == [], f"raw MyST shown in {notebook.name}: {raw[:10]}"
        solutions = page.locator(".jp-MarkdownCell details").filter(
            has=page.locator("summary", has_text="Solution")
        )
        assert solutions.count() >= 3
        first = solutions.first
        body = first.locator("p").first
        first.scroll_into_view_if_needed()
        assert not body.is_visible(), "a solution is open before its summary is clicked"
        first.locator("summary").first.click()
        body.wait_for(state="visible", timeout=5000)
    errors = [e for e in offline.errors if not (myst and e.startswith(UNRESOLVED_REF))]
    assert errors == [], f"console errors: {errors}"
