"""tools/nbrun.py: the one way the tools run a notebook (kernel, folder, environment)."""

from __future__ import annotations

import os

import nbformat
import pytest

from tools import nbrun

# What the kernel sees: where it runs and its ATTNBOOK_STATIC (or None).
PROBE = 'import os\n\nprint(os.getcwd(), os.environ.get("ATTNBOOK_STATIC"))'


def probe_notebook(*extra: str) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(PROBE), *map(nbformat.v4.new_code_cell, extra)]
    return nb


def printed(nb: nbformat.NotebookNode) -> list[str]:
    return "".join(o.get("text", "") for o in nb.cells[0].outputs).split()


@pytest.mark.parametrize(
    ("static", "outside", "expected"),
    [(True, None, "1"), (False, "1", None), (None, "x", "x"), (None, None, None)],
)
def test_kernel_env_sets_or_unsets_attnbook_static(monkeypatch, static, outside, expected):
    if outside is None:
        monkeypatch.delenv("ATTNBOOK_STATIC", raising=False)
    else:
        monkeypatch.setenv("ATTNBOOK_STATIC", outside)
    monkeypatch.setenv("NBRUN_PROBE", "kept")
    env = nbrun.kernel_env(static)
    assert env.get("ATTNBOOK_STATIC") == expected
    assert env["NBRUN_PROBE"] == "kept"
    assert os.environ.get("ATTNBOOK_STATIC") == outside  # this process's is left alone


def test_bad_arguments_are_refused_before_a_kernel_starts(tmp_path):
    nb = probe_notebook()
    with pytest.raises(TypeError, match="static must be True, False or None, got 'yes'"):
        nbrun.kernel_env("yes")
    with pytest.raises(ValueError, match="timeout must be positive seconds or None, got 0"):
        nbrun.execute(nb, timeout=0)
    missing = tmp_path / "missing"
    with pytest.raises(ValueError, match=f"cwd must be an existing folder, got '{missing}'"):
        nbrun.execute(nb, timeout=60, cwd=missing)
    assert nb.cells[0].outputs == []


# Each starts a kernel (a second or two): the test machinery's tier, `make check`.
@pytest.mark.slow
def test_execute_runs_in_the_folder_with_the_environment_asked_for(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNBOOK_STATIC", "1")
    nb = probe_notebook("from IPython.display import display\n\ndisplay(6 * 7)")
    assert nbrun.execute(nb, timeout=60, cwd=tmp_path, static=False) is nb
    assert printed(nb) == [str(tmp_path), "None"]
    assert nb.cells[1].outputs[0].data["text/plain"] == "42"
    # No timing metadata and no widget state: neither is an output.
    assert "execution" not in nb.cells[0].metadata and "widgets" not in nb.metadata
    assert os.environ["ATTNBOOK_STATIC"] == "1"

    nbrun.execute(nb, timeout=60, static=True)  # a fresh empty folder, removed after
    folder, static = printed(nb)
    assert static == "1" and folder != str(tmp_path) and not os.path.exists(folder)


@pytest.mark.slow
def test_a_failing_cell_raises_and_started_leaves_the_cells_to_the_caller(tmp_path):
    nb = probe_notebook('raise ValueError("on purpose")', "print('not reached')")
    with pytest.raises(nbrun.CellExecutionError, match="on purpose"):
        nbrun.execute(nb, timeout=60, cwd=tmp_path)
    assert nb.cells[2].outputs == []

    nb = probe_notebook()
    with nbrun.started(nb, timeout=60, cwd=tmp_path, static=True) as client:
        assert nb.cells[0].outputs == []  # the kernel is up, nothing has run
        client.execute_cell(nb.cells[0], 0)
    assert printed(nb) == [str(tmp_path), "1"]
