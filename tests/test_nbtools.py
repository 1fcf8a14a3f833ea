"""`nbtools.py install-cell --write`: a fork's notebooks follow its _config.yml."""

from __future__ import annotations

import nbformat
import pytest

from tools.nbtools import INSTALL_TAG, install_cell_source, main


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
