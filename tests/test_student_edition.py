"""The student edition (tools/student_edition.py, `make student-edition`): every
chapter's reader's edition without its solutions, and it still runs.

What counts as solution code is read from the chapter itself, independently of
the tool: the source of every cell tagged ``solution``, the body of every
dropdown titled "Solution", and the names those cells define. The fast tests
require that none of it reaches the student edition, on every chapter, and
that the same measure finds it in the reader's edition (so that the measure
can fail). The slow test runs two student editions top to bottom.
"""

from __future__ import annotations

import ast
import re

import nbformat
import pytest

from tools import nbrun, readers_edition, student_edition
from tools.site import NOTEBOOKS

BOOK = readers_edition.scan_book()
SOLUTION_DROPDOWN = re.compile(r"^(\s*)(`{3,}|:{3,})\{dropdown\}\s*Solution\b.*$", re.MULTILINE)


def _split_dropdowns(markdown: str) -> tuple[list[str], list[str]]:
    """The lines inside the "Solution" dropdowns of a MyST Markdown cell, and the rest."""
    inside, outside = [], []
    lines = markdown.split("\n")
    index = 0
    while index < len(lines):
        match = SOLUTION_DROPDOWN.match(lines[index])
        if not match:
            outside.append(lines[index])
            index += 1
            continue
        fence = match.group(2)
        end = next(
            (j for j in range(index + 1, len(lines)) if lines[j].strip() == fence),
            len(lines),
        )
        inside.extend(lines[index + 1 : end])
        index = end + 1
    return inside, outside


def _defined(source: str) -> set[str]:
    """Top-level functions and names a solution cell defines."""
    tree = ast.parse("\n".join(line for line in source.split("\n") if not line.startswith("%")))
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def _solution_text(source: nbformat.NotebookNode) -> tuple[set[str], set[str]]:
    """Lines found only in the chapter's solutions (code and written), and the
    names of the solution functions (``solution_*``)."""
    lines, names, elsewhere = set(), set(), set()
    for cell in source.cells:
        if cell.cell_type == "code" and "solution" in cell.metadata.get("tags", []):
            names |= {n for n in _defined(cell.source) if n.startswith("solution")}
            body = cell.source.split("\n")
            lines |= {line.strip() for line in body if not line.lstrip().startswith("#")}
        elif cell.cell_type == "markdown":
            inside, outside = _split_dropdowns(cell.source)
            lines |= {line.strip() for line in inside}
            elsewhere |= {line.strip() for line in outside}
        else:
            elsewhere |= {line.strip() for line in cell.source.split("\n")}
    # A solution may repeat a line of the chapter's own code, and short lines
    # ("return out", "```python") occur anywhere; prose lines of a dropdown may
    # carry MyST roles, which the edition rewrites: so only the plain lines of at
    # least 30 characters that occur nowhere else in the chapter are compared.
    distinctive = {line for line in lines - elsewhere if len(line) >= 30 and "{" not in line}
    return distinctive, names


def leftovers(edition: nbformat.NotebookNode, source: nbformat.NotebookNode) -> list[str]:
    """What of the chapter's solutions the edition still holds, one line per finding."""
    lines, names = _solution_text(source)
    found = []
    for index, cell in enumerate(edition.cells):
        if "solution" in cell.metadata.get("tags", []):
            found.append(f"cell {index}: a cell tagged 'solution'")
        text = cell.source
        own = {line.strip() for line in text.split("\n")}
        found += [f"cell {index}: {line[:60]!r}" for line in sorted(lines & own)]
        used = sorted(n for n in names if re.search(rf"\b{re.escape(n)}\b", text))
        if used:
            found.append(f"cell {index}: uses {', '.join(used)}")
        if re.search(r"<summary>Solution|Solution: open the dropdown", text):
            found.append(f"cell {index}: a solution dropdown or a pointer to one")
    return found


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_no_solution_remains_in_the_student_edition(path):
    source = nbformat.read(path, as_version=4)
    edition, removed = student_edition.edition(path, BOOK)
    assert leftovers(edition, source) == []
    # The exercises themselves stay: every starred exercise of the reader's edition.
    reader = readers_edition.edition(path, BOOK)
    stars = [c.source.split("\n")[0] for c in reader.cells if "★" in c.source]
    assert [c.source.split("\n")[0] for c in edition.cells if "★" in c.source] == stars
    nbformat.validate(edition)
    assert edition.cells[1].id == "student-edition-note"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_checked_exercise_has_an_empty_answer_cell(path):
    """A workbook: where a checked exercise's solution cell was, an answer cell with the
    answer's signature, an empty body, and its checker called on it."""
    source = nbformat.read(path, as_version=4)
    checked = [
        c.metadata["attnbook"] for c in source.cells if "check" in c.metadata.get("attnbook", {})
    ]
    edition, _ = student_edition.edition(path, BOOK)
    answers = [c for c in edition.cells if c.cell_type == "code" and c.id.startswith("answer-")]
    assert len(answers) == len(checked)
    for meta, cell in zip(checked, answers):
        tree = ast.parse(cell.source)
        (function,) = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
        assert function.name == meta["answer"]
        assert ast.unparse(function.body[0]) == "..."
        assert cell.source.rstrip().endswith(f"{meta['check']}({meta['answer']})")
        assert "solution" not in cell.source


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_the_measure_finds_the_solutions_in_the_readers_edition(path):
    """The same measure, on the reader's edition, finds the solutions (it can fail)."""
    source = nbformat.read(path, as_version=4)
    if not any("solution" in c.metadata.get("tags", []) for c in source.cells):
        pytest.skip("no solution cell in this chapter")
    found = leftovers(readers_edition.edition(path, BOOK), source)
    assert any("tagged 'solution'" in f for f in found)
    assert any("a solution dropdown" in f for f in found)


def test_a_cell_that_needs_a_solution_goes_with_it():
    """A later cell that uses what a solution defined is left out, and the name is
    available again once a kept cell defines it anew."""
    cells = [
        nbformat.v4.new_code_cell("import torch\nX = torch.ones(3)"),
        nbformat.v4.new_code_cell(
            "def solution_f(x):\n    return 2 * x\n\n\ny = solution_f(X)",
            metadata={"tags": ["solution"]},
        ),
        nbformat.v4.new_code_cell("assert y.sum() == 6", metadata={"tags": ["remove-cell"]}),
        nbformat.v4.new_code_cell("z = y + 1"),  # needs y, which a removed cell made
        nbformat.v4.new_code_cell("print(z)"),  # needs z, made by a removed cell
        nbformat.v4.new_code_cell("y = X * 3\nprint(y)"),  # y defined anew: kept
        nbformat.v4.new_code_cell("print(y, X)"),
        nbformat.v4.new_code_cell(
            "# The solution quotes these (hidden on the website).\nassert X.sum() == 3",
            metadata={"tags": ["remove-cell"]},
        ),
        nbformat.v4.new_code_cell("%matplotlib inline\nprint(X)"),
    ]
    nb = nbformat.v4.new_notebook(cells=cells)
    removed = student_edition.Removed()
    kept = student_edition.without_solutions(nb, removed)
    assert [c.source.split("\n")[-1] for c in kept.cells] == [
        "X = torch.ones(3)",
        "print(y)",
        "print(y, X)",
        "print(X)",
    ]
    assert removed.solution_cells == 1 and len(removed.dependent_cells) == 4


def test_pointers_and_solution_dropdowns_are_left_out_and_other_dropdowns_stay():
    converter = student_edition.StudentConverter(
        BOOK, "book/masked-softmax", student_edition.Removed()
    )
    text = converter.markdown(
        "**1. ★ Exercise.** Write it. (No checker.\nSolution: open the dropdown below.)\n\n"
        "Solution: open the dropdown, then the folded code cell below it.\n\n"
        ":::{dropdown} Solution\nThe answer is 42.\n:::\n\n"
        ":::{dropdown} Going deeper: why\nBecause.\n:::\n\n"
        "Every exercise has a solution in a dropdown; exercises 1 and 2\nalso have code. "
        "The end."
    )
    assert "42" not in text and "Solution" not in text
    assert "Write it. (No checker.)" in text
    assert "<summary>Going deeper: why</summary>" in text and "Because." in text
    assert "Every exercise" not in text and "The end." in text
    assert converter.removed.dropdowns == 1 and converter.removed.pointers == 3


def test_the_student_edition_is_deterministic():
    path = next(p for p in NOTEBOOKS if p.stem == "masked-softmax")
    first, _ = student_edition.edition(path, BOOK)
    second, _ = student_edition.edition(path, BOOK)
    assert readers_edition.dumps(first) == readers_edition.dumps(second)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["masked-softmax", "scoring-functions"])
def test_a_student_edition_runs_top_to_bottom(name):
    path = next(p for p in NOTEBOOKS if p.stem == name)
    edition, removed = student_edition.edition(path, BOOK)
    assert removed.solution_cells > 0
    nbrun.execute(edition, timeout=600)  # raises CellExecutionError on the first cell that fails
    # Only the cells the chapter shows raising on purpose (tag raises-exception) may raise.
    errors = [
        f"{cell.get('id')}: {output.ename}: {output.evalue}"
        for cell in edition.cells
        if cell.cell_type == "code" and "raises-exception" not in cell.metadata.get("tags", [])
        for output in cell.outputs
        if output.output_type == "error"
    ]
    assert errors == []
