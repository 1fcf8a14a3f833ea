"""`nbtools.py install-cell --write`: a fork's notebooks follow its _config.yml."""

from __future__ import annotations

import nbformat
import pytest

from tools import nbtools
from tools.nbtools import INSTALL_TAG, install_cell_notebooks, install_cell_source, main


def notebook(first_source: str, tags: list[str]) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# A chapter"),
        nbformat.v4.new_code_cell(first_source, metadata={"tags": tags}),
        nbformat.v4.new_code_cell("x = 1", metadata={"tags": ["setup"]}),
    ]
    return nb


def test_write_rewrites_a_stale_install_cell_and_nothing_else(tmp_path, capsys):
    stale = install_cell_source().replace("#subdirectory=lib", "-old#subdirectory=lib")
    assert stale != install_cell_source()
    path = tmp_path / "chapter.ipynb"
    nbformat.write(notebook(stale, [INSTALL_TAG]), path)
    assert main(["install-cell", "--write", str(path)]) == 0
    cells = nbformat.read(path, as_version=4).cells
    assert cells[1].source == install_cell_source()
    assert [cells[0].source, cells[2].source] == ["# A chapter", "x = 1"]
    assert "rewritten in 1 of 1" in capsys.readouterr().out
    # A second run finds nothing to do and leaves the file as it is.
    before = path.read_bytes()
    assert main(["install-cell", "--write", str(path)]) == 0
    assert path.read_bytes() == before
    assert "rewritten in 0 of 1" in capsys.readouterr().out


def test_write_refuses_a_notebook_without_an_install_cell(tmp_path):
    path = tmp_path / "chapter.ipynb"
    nbformat.write(notebook("import torch", ["setup"]), path)
    before = path.read_bytes()
    with pytest.raises(ValueError, match="chapter.ipynb: the first code cell is not the install"):
        main(["install-cell", "--write", str(path)])
    assert path.read_bytes() == before


def test_write_covers_the_chapters_and_the_slide_notebooks(tmp_path, monkeypatch):
    stale = install_cell_source().replace("#subdirectory=lib", "-old#subdirectory=lib")
    paths = [tmp_path / "book" / "chapter.ipynb", tmp_path / "slides" / "chapter.ipynb"]
    for path in paths:
        path.parent.mkdir()
        nbformat.write(notebook(stale, [INSTALL_TAG]), path)
    assert install_cell_notebooks(tmp_path) == paths
    monkeypatch.setattr(nbtools, "ROOT", tmp_path)
    assert main(["install-cell", "--write"]) == 0
    for path in paths:
        assert nbformat.read(path, as_version=4).cells[1].source == install_cell_source()


@pytest.mark.parametrize(
    "path", install_cell_notebooks(), ids=lambda p: p.parent.name + "/" + p.name
)
def test_every_notebook_that_write_rewrites_carries_the_current_install_cell(path):
    """A slide notebook too: `install-cell --write` keeps it current (see install_cell_notebooks)."""
    nb = nbformat.read(path, as_version=4)
    first = next(cell for cell in nb.cells if cell.cell_type == "code")
    assert first.source == install_cell_source(), (
        f"{path}: run tools/nbtools.py install-cell --write"
    )
    assert INSTALL_TAG in first.metadata.get("tags", [])
