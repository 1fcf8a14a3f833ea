"""`make test-jupyter`: the live explorers of chapters 11 and 15 in a real JupyterLab (anywidget).

A throwaway JupyterLab (tools/jupyter_lab.py) runs a two-cell notebook that
shows the explorer over the shipped chapter model; headless Chromium types a
sequence into it and reads the numbers the page computed, which must equal
PyTorch's on the same weights (tests/test_live_browser.py's check). No widget
error, no console error, no request to another host.
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
            extra={"live.ipynb": notebook, "digits.ipynb": DIGITS_NOTEBOOK},
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
