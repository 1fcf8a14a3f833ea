"""A pytest plugin that keeps the notebooks nbval executed, for the book build.

`make test` runs every chapter twice over if nbval and Jupyter Book each
execute it. With this plugin (``-p tests.nbval_executed --nbval-executed-into
DIR``) nbval's run is the only one: for every notebook whose code cells all
ran and passed, it writes the notebook with the outputs of that run to
``DIR/FOLDER/NAME.ipynb`` (FOLDER: the notebook's own, ``book`` or
``slides``), and ``tools/book_cache.py`` files ``DIR/book`` in Jupyter Book's
execution cache, which matches a notebook by its code; ``make slides`` writes
`make check`'s decks from ``DIR/slides``. The book build then
renders them instead of running them again.

The run is made with ``ATTNBOOK_STATIC=1``, as the book build's is, so each
explorer displays its website form: the same ``text/plain`` as in the stored
notebook plus a ``text/html`` fragment that no stored notebook holds (it
carries the marker ``attnbook.widgets.STATIC_MARKER`` in its metadata). Only
that marked ``text/html`` is left out of nbval's comparison; every other
output is compared as strictly as ever.

The outputs are written in the order the kernel sent them (nbval merges all
of a cell's stream outputs into one before comparing, which would move text
printed after a figure above it on the website), with consecutive pieces of
one stream joined as Jupyter's own clients join them, and the kernel counts the
cells it runs, as it does for Jupyter Book (nbval's own run would number every
cell 1, and every traceback on the website would say ``Cell In[1]``).
"""

from __future__ import annotations

import copy
from pathlib import Path

import nbformat
import nbval.kernel
import nbval.plugin
import pytest

# Per notebook path: {index in notebook.cells: outputs in the kernel's order}
# for every code cell that ran and passed; notebooks with a cell that failed.
_passed: dict[Path, dict[int, list]] = {}
_notebooks: dict[Path, nbformat.NotebookNode] = {}
_failed: set[Path] = set()
_running: list = [None]  # the nbval cell now running


def pytest_addoption(parser):
    parser.addoption(
        "--nbval-executed-into",
        metavar="DIR",
        default=None,
        help="write each notebook whose cells all passed, with the new outputs, into DIR",
    )


def _without_static_explorers(outputs):
    from attnbook.widgets import STATIC_MARKER

    kept = []
    for output in outputs:
        if STATIC_MARKER in output.get("metadata", {}).get("text/html", {}):
            output = copy.deepcopy(output)
            del output["data"]["text/html"]
        kept.append(output)
    return kept


def pytest_configure(config):
    if not config.getoption("nbval_executed_into"):
        return
    compare = nbval.plugin.IPyNbCell.compare_outputs
    coalesce = nbval.plugin.coalesce_streams

    def compare_outputs(self, test, ref, skip_compare=None):
        return compare(self, _without_static_explorers(test), ref, skip_compare)

    def coalesce_streams(outputs):
        # runtest's first call is on the outputs it has just collected.
        item = _running[0]
        if item is not None and outputs is getattr(item, "test_outputs", None):
            item.kernel_order_outputs = copy.deepcopy(outputs)
        return coalesce(outputs)

    def execute_cell_input(self, cell_input, allow_stdin=None):
        # nbval runs cells with store_history=False, so every traceback would
        # say "Cell In[1]"; the book's run counts cells as a notebook does.
        return self.kc.execute(
            cell_input, store_history=True, allow_stdin=allow_stdin, stop_on_error=False
        )

    nbval.plugin.IPyNbCell.compare_outputs = compare_outputs
    nbval.kernel.RunningKernel.execute_cell_input = execute_cell_input
    nbval.plugin.coalesce_streams = coalesce_streams


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    _running[0] = item
    try:
        yield
    finally:
        _running[0] = None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if not item.config.getoption("nbval_executed_into") or not hasattr(item, "cell"):
        return
    path = Path(item.path).resolve()
    notebook = item.parent.nb
    _notebooks[path] = notebook
    if report.failed or report.skipped:
        _failed.add(path)
    elif report.when == "call":
        index = next(i for i, cell in enumerate(notebook.cells) if cell is item.cell)
        _passed.setdefault(path, {})[index] = getattr(item, "kernel_order_outputs", None)


def _joined_streams(outputs: list) -> list:
    """Consecutive stream outputs of one name joined, as Jupyter's clients store them."""
    joined = []
    for output in outputs:
        previous = joined[-1] if joined else None
        if (
            output.output_type == "stream"
            and previous is not None
            and previous.output_type == "stream"
            and previous.name == output.name
        ):
            previous.text += output.text
        else:
            joined.append(output)
    return joined


def _executed(notebook: nbformat.NotebookNode, outputs: dict[int, list]):
    """A copy of ``notebook`` holding ``outputs``, or None if a code cell lacks them."""
    executed = copy.deepcopy(notebook)
    count = 0
    for index, cell in enumerate(executed.cells):
        if cell.cell_type != "code":
            continue
        if outputs.get(index) is None:
            return None
        count += 1
        cell.execution_count = count
        cell.outputs = _joined_streams(
            [nbformat.from_dict(copy.deepcopy(dict(output))) for output in outputs[index]]
        )
        for output in cell.outputs:
            if output.output_type == "execute_result":
                output.execution_count = count
    nbformat.validate(executed)
    return executed


def pytest_sessionfinish(session):
    into = session.config.getoption("nbval_executed_into")
    if not into:
        return
    for path, outputs in _passed.items():
        if path in _failed:
            continue
        executed = _executed(_notebooks[path], outputs)
        if executed is not None:
            # DIR/book/NAME.ipynb, DIR/slides/NAME.ipynb: one run keeps the
            # chapters and the slide notebooks, whose names are the same.
            folder = Path(into) / path.parent.name
            folder.mkdir(parents=True, exist_ok=True)
            nbformat.write(executed, folder / path.name)
