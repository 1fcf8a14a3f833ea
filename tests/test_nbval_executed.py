"""`make test` executes each chapter once: nbval's run is filed for the book build.

tests/nbval_executed.py keeps the notebooks nbval executed (explorers in their
website form, outputs in the kernel's order) and tools/book_cache.py files them
in Jupyter Book's execution cache. These tests run both on a small notebook.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import nbformat
import pytest
from jupyter_cache import get_cache

from tools import nbrun
from tools.book_cache import file_executed
from tools.site import ROOT

# Text printed on both sides of a displayed object: nbval merges the two
# prints into one output before comparing; the website must keep the order.
ORDERED = """import time

from IPython.display import Markdown, display

print("printed before")
display(Markdown("**shown between**"))
print("printed after")
print("sent on its own", flush=True)
time.sleep(0.3)  # the kernel sends the next line in a message of its own
print("and joined to it")"""
EXPLORER = "from attnbook.widgets import valid_length_explorer\n\nvalid_length_explorer()"


def stored_notebook(folder: str) -> nbformat.NotebookNode:
    """A notebook executed as `make notebooks` stores chapters (live widgets)."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.cells = [
        nbformat.v4.new_markdown_cell("# A chapter"),
        nbformat.v4.new_code_cell(ORDERED),
        nbformat.v4.new_code_cell(EXPLORER),
        nbformat.v4.new_code_cell("print(6 * 7)"),
        nbformat.v4.new_code_cell('def broken():\n    raise ValueError("on purpose")'),
        nbformat.v4.new_code_cell("broken()", metadata={"tags": ["raises-exception"]}),
    ]
    return nbrun.execute(nb, timeout=None, cwd=folder, static=False)


def run_nbval(notebook_path, into):
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "--nbval",
            "-p",
            "tests.nbval_executed",
            "--nbval-executed-into",
            str(into),
            str(notebook_path),
        ],
        cwd=ROOT,
        env={**os.environ, "ATTNBOOK_STATIC": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )


# Two nbval runs and a notebook execution (three kernels): `make check`'s tier
# (tests/conftest.py, "slow"); `make test` itself runs this plugin on every chapter.
@pytest.mark.slow
def test_nbval_keeps_what_it_executed_and_fails_on_a_changed_output(tmp_path, monkeypatch):
    monkeypatch.delenv("ATTNBOOK_STATIC", raising=False)
    folder = tmp_path / "book"
    folder.mkdir()
    stored = stored_notebook(str(folder))
    explorer_output = stored.cells[2].outputs[0]
    assert "text/html" not in explorer_output.data  # the notebook holds the live form
    path = folder / "chapter.ipynb"
    nbformat.write(stored, path)

    into = tmp_path / "executed"
    result = run_nbval(path, into)
    assert result.returncode == 0, result.stdout + result.stderr
    executed = nbformat.read(into / "book" / "chapter.ipynb", as_version=4)
    ordered = executed.cells[1].outputs
    assert [o.output_type for o in ordered] == ["stream", "display_data", "stream"]
    assert ordered[0].text == "printed before\n"
    assert ordered[2].text == "printed after\nsent on its own\nand joined to it\n"
    (explorer,) = executed.cells[2].outputs
    assert '<div class="attnbook-explorer' in explorer.data["text/html"]
    assert explorer.data["text/plain"] == explorer_output.data["text/plain"]
    assert executed.cells[3].outputs[0].text == "42\n"
    assert [c.execution_count for c in executed.cells if c.cell_type == "code"] == [1, 2, 3, 4, 5]
    # The traceback names the cell that defined the function by its number.
    traceback = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(executed.cells[5].outputs[0].traceback))
    assert "Cell In[4], line 2" in traceback, traceback

    # One changed stored digit: nbval fails, and that notebook is not kept.
    stored.cells[3].outputs[0].text = "43\n"
    nbformat.write(stored, path)
    into = tmp_path / "executed-again"
    result = run_nbval(path, into)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "chapter.ipynb::Cell 2" in result.stdout  # nbval counts code cells from 0
    assert not (into / "book" / "chapter.ipynb").exists()


def test_the_cache_serves_an_executed_notebook_only_for_the_same_code(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.cells = [nbformat.v4.new_code_cell("print(6 * 7)")]
    executed = nbformat.from_dict(nb)
    executed.cells[0].outputs = [nbformat.v4.new_output("stream", name="stdout", text="42\n")]
    executed.cells[0].execution_count = 1
    folder = tmp_path / "executed"
    folder.mkdir()
    nbformat.write(executed, folder / "masked-softmax.ipynb")  # a chapter's name
    cache_path = tmp_path / "cache"
    assert file_executed(folder, cache_path) == ["masked-softmax.ipynb"]

    cache = get_cache(str(cache_path))
    _, merged = cache.merge_match_into_notebook(nb)
    assert merged.cells[0].outputs[0].text == "42\n"
    changed = nbformat.from_dict(nb)
    changed.cells[0].source = "print(6 * 8)"
    try:
        cache.match_cache_notebook(changed)
    except KeyError:
        pass
    else:
        raise AssertionError("a notebook with other code was served from the cache")
