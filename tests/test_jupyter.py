"""`make test-jupyter`: every explorer driven with the keyboard in a real JupyterLab.

A throwaway JupyterLab (tools/jupyter_lab.py) serves copies of the chapters
that show explorers; headless Chromium opens each one, runs every cell, and
moves every control of every explorer, twice round: sliders with the keyboard,
menus by choosing the next option (a closed menu ignores keys in JupyterLab in
headless Chromium). Each move must load a new picture and change the one
visible caption under it; no widget error ("Error displaying widget",
"model not found"), no console error, no request to another host.
"""

from __future__ import annotations

import pytest

from tools.browser import Offline, chromium
from tools.jupyter_lab import LabNotebook, explorer_notebooks, lab_server

NOTEBOOKS = explorer_notebooks()
STEPS = 3  # key presses per control


@pytest.fixture(scope="module")
def lab():
    with lab_server(NOTEBOOKS) as (base, root), chromium() as browser:
        yield base, browser


def test_chapters_with_explorers_are_found():
    names = [path.name for path in NOTEBOOKS]
    assert "attention-pooling.ipynb" in names and "masked-softmax.ipynb" in names


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
        assert lab_page.widget_errors() == []
    assert offline.blocked == [], f"requests to other hosts: {offline.blocked}"
    assert offline.errors == [], f"console errors: {offline.errors}"
