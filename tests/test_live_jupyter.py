"""`make test-jupyter`: the live explorers in a real JupyterLab (anywidget).

A throwaway JupyterLab (tools/jupyter_lab.py) runs a two-cell notebook that
shows the explorer over the shipped chapter model; headless Chromium types a
sequence into it and reads the numbers the page computed, which must equal
PyTorch's on the same weights (tests/test_live_browser.py's check). No widget
error, no console error, no request to another host. Chapters 10's, 13's and
15's explorers (lm_live, dates_live, digits_live) run in the same JupyterLab,
checked with the helpers of tests/test_live_browser_{lm,dates,digits}.py.
"""

from __future__ import annotations

import nbformat
import pytest

from attnbook.widgets.live import load_chapter_weights
from tests.test_live_browser import TYPED, check_against_pytorch, type_into
from tools.browser import Offline, chromium
from tools.jupyter_lab import LabNotebook, lab_server

# Chapter 15's explorer (tests/test_live_browser_digits.py draws into it on the website).
DIGITS_NOTEBOOK = nbformat.v4.new_notebook(
    cells=[
        nbformat.v4.new_code_cell("from attnbook.widgets.live import digits_live"),
        nbformat.v4.new_code_cell("digits_live()"),
    ],
    metadata={"kernelspec": {"name": "python3", "display_name": "Python 3"}},
)


def _dates_notebook():
    """Chapter 13's live explorer over the shipped date models (test below)."""
    return nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell("from attnbook.widgets.live import dates_live"),
            nbformat.v4.new_code_cell('dates_live(text="17/11/72")'),
        ],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3"}},
    )


def _lm_notebook():
    """Chapter 10's live explorer over the shipped checkpoint (test below)."""
    return nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell("from attnbook.widgets.live import lm_live"),
            nbformat.v4.new_code_cell('lm_live(text="The ")'),
        ],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3"}},
    )


@pytest.fixture(scope="module")
def lab():
    notebook = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell("from attnbook.widgets.live import induction_live"),
            nbformat.v4.new_code_cell('induction_live(text="1 2 3 1 2")'),
        ],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3"}},
    )
    with (
        chromium() as browser,
        lab_server(
            [],
            extra={
                "live.ipynb": notebook,
                "live_lm.ipynb": _lm_notebook(),
                "dates.ipynb": _dates_notebook(),
                "digits.ipynb": DIGITS_NOTEBOOK,
            },
            disabled_extensions=("jupyterlab-myst",),
        ) as (base, _),
    ):
        yield base, browser


def test_live_explorer_answers_typed_input_in_jupyterlab(lab):
    base, browser = lab
    weights, arch = load_chapter_weights()
    heads = arch.pop("heads")
    arch.pop("source")
    with Offline(browser, viewport={"width": 1400, "height": 1000}) as offline:
        notebook = LabNotebook(offline, base, "live.ipynb")
        notebook.run_all()
        page = offline.page
        page.wait_for_selector(".attnbook-live-result[data-updates]", state="attached")
        assert notebook.widget_errors() == [] and notebook.cell_errors() == []
        shown = type_into(page, TYPED)
        assert shown["tokens"] == [int(t) for t in TYPED.split()]
        check_against_pytorch(shown, weights, arch, heads)
        shown = type_into(page, "5 x 99")
        assert shown["tokens"] == [5] and shown["noteShown"]
        assert notebook.widget_errors() == []
    assert offline.blocked == [], f"requests to other hosts: {offline.blocked}"
    assert offline.errors == [], f"console errors: {offline.errors}"


# ---- chapter 13's explorer (dates) ----


def test_dates_explorer_answers_typed_input_in_jupyterlab(lab):
    from attnbook.widgets.live.dates import load_chapter_weights as load_dates
    from tests.test_live_browser_dates import check_against_pytorch as check_dates
    from tests.test_live_browser_dates import type_into as type_date

    base, browser = lab
    state = {}
    for prefix, kind in (("", "attention"), ("plain_", "no_attention")):
        state[f"{prefix}weights"], state[f"{prefix}arch"] = load_dates(kind)
    with Offline(browser, viewport={"width": 1400, "height": 1000}) as offline:
        notebook = LabNotebook(offline, base, "dates.ipynb")
        notebook.run_all()
        page = offline.page
        page.wait_for_selector(
            ".attnbook-live-dates .attnbook-live-result[data-updates]", state="attached"
        )
        assert notebook.widget_errors() == [] and notebook.cell_errors() == []
        shown = type_date(page, "3 March 1999")
        assert shown["answer"] == shown["plainAnswer"] == "1999-03-03"
        check_dates(shown, state)
        shown = type_date(page, "1999/3/3")
        assert shown["reason"] == "format"
        check_dates(shown, state)
        shown = type_date(page, "???")
        assert shown["text"] == "" and shown["noteShown"]
        assert notebook.widget_errors() == []
    assert offline.blocked == [], f"requests to other hosts: {offline.blocked}"
    assert offline.errors == [], f"console errors: {offline.errors}"


# ---- chapter 10's explorer (lm) ----


def test_lm_live_explorer_answers_a_typed_prompt_in_jupyterlab(lab):
    """Chapter 10's explorer: a typed prompt and a control, PyTorch's numbers."""
    from attnbook.widgets.live import load_lm_weights
    from tests.test_live_browser_lm import check_against_pytorch as check_lm
    from tests.test_live_browser_lm import set_control
    from tests.test_live_browser_lm import type_into as type_prompt

    base, browser = lab
    weights, arch = load_lm_weights()
    arch.pop("source")
    with Offline(browser, viewport={"width": 1400, "height": 1000}) as offline:
        notebook = LabNotebook(offline, base, "live_lm.ipynb")
        notebook.run_all()
        page = offline.page
        page.wait_for_selector(
            ".attnbook-live-lm .attnbook-live-result[data-updates]", state="attached"
        )
        assert notebook.widget_errors() == [] and notebook.cell_errors() == []
        shown = type_prompt(page, "Attention is ")
        assert shown["ids"] == [arch["chars"].index(c) for c in "Attention is "]
        check_lm(shown, weights, arch)
        shown = set_control(page, "topk", 3)
        assert sum(p > 0 for p in shown["probs"]) == 3
        check_lm(shown, weights, arch)
        shown = type_prompt(page, "naïve")
        assert shown["noteShown"] and "“ï”" in shown["note"]
        assert notebook.widget_errors() == []
    assert offline.blocked == [], f"requests to other hosts: {offline.blocked}"
    assert offline.errors == [], f"console errors: {offline.errors}"


# ---- chapter 15's explorer (digits) ----


def test_live_digit_explorer_answers_a_drawing_in_jupyterlab(lab):
    from attnbook.widgets.live.digits import load_chapter_weights as digits_weights
    from tests.test_live_browser_digits import (
        HOST,
        check_against_pytorch,
        result,
        stroke_with_mouse,
    )

    base, browser = lab
    weights, arch, extras = digits_weights()
    with Offline(browser, viewport={"width": 1400, "height": 1000}) as offline:
        notebook = LabNotebook(offline, base, "digits.ipynb")
        notebook.run_all()
        page = offline.page
        page.wait_for_selector(f"{HOST} .attnbook-live-result[data-updates]", state="attached")
        assert notebook.widget_errors() == [] and notebook.cell_errors() == []
        page.locator(f"{HOST} canvas").first.scroll_into_view_if_needed()
        page.locator(f"{HOST} button").click()  # clear: the blank-grid note
        assert result(page)["noteShown"]
        stroke = [(1, 3), (2, 3), (3, 3), (4, 3), (5, 3), (6, 3)]
        stroke_with_mouse(page, stroke)
        shown = result(page)
        assert {divmod(i, 8) for i, v in enumerate(shown["pixels"]) if v} == set(stroke)
        check_against_pytorch(shown, weights, arch, extras["mean_image"])
        page.locator(f"{HOST} select").nth(2).select_option("mean image")
        check_against_pytorch(result(page), weights, arch, extras["mean_image"])
        assert notebook.widget_errors() == []
    assert offline.blocked == [], f"requests to other hosts: {offline.blocked}"
    assert offline.errors == [], f"console errors: {offline.errors}"
