"""Every exercise knows what it is (tools/exercise_metadata.py writes it).

Each exercise's markdown cell carries its id and stars; each solution cell that
calls a checker on its own solution carries the exercise's id, the answer's
name, the solution's name, the checker and the stars. tools/assignments.py
builds graded assignments from this metadata alone, so it must be there
wherever a checker is called and agree with the chapter's text and code. The
checks below read the text and code with their own patterns, not the tool's.
After adding or editing an exercise: `python -m tools.exercise_metadata book/NAME.ipynb`.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path

import nbformat
import pytest

import attnbook.checks
from tools import exercise_metadata

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = sorted((ROOT / "book").glob("*.ipynb"))
HEADING = re.compile(r"\*\*(?:\d+\.\s+)?(★+)\s")
CALL = re.compile(r"(?:checks\.)?(check_[a-z0-9_]+)\(\s*(solution_[A-Za-z0-9_]+)\b")
ID = re.compile(r"^[a-z0-9-]+/[a-z0-9]+(?:-[a-z0-9]+)*$")
CHECKERS = {name for name in attnbook.checks.__all__ if name.startswith("check_")}


def problems(nb: nbformat.NotebookNode, chapter: str) -> list[str]:
    """Every way the notebook's exercise metadata is missing or disagrees with it."""
    found: list[str] = []
    stated: dict[str, tuple[int, str]] = {}  # id -> (stars, the cell's text)
    last_id = None
    for index, cell in enumerate(nb.cells):
        where = f"{chapter} cell {index}"
        meta = cell.metadata.get("attnbook")
        if cell.cell_type == "markdown":
            stars = [len(s) for s in HEADING.findall(cell.source)]
            listed = (meta or {}).get("exercises", [])
            if stars and [e.get("stars") for e in listed] != stars:
                found.append(f"{where}: exercises with stars {stars}, metadata says {listed}")
            if listed and not stars:
                found.append(f"{where}: exercise metadata on a cell that states no exercise")
            for entry in listed:
                ident = entry.get("exercise", "")
                if not ID.match(ident) or not ident.startswith(chapter + "/"):
                    found.append(
                        f"{where}: exercise id {ident!r} is not '{chapter}/words-like-this'"
                    )
                if ident in stated:
                    found.append(f"{where}: exercise id {ident!r} used twice")
                stated[ident] = (entry.get("stars"), cell.source)
                last_id = ident
            continue
        if cell.cell_type != "code" or "remove-cell" in cell.metadata.get("tags", []):
            continue
        calls = CALL.findall(cell.source)
        if not calls:
            if meta is not None:
                found.append(f"{where}: checker metadata on a cell that calls no checker")
            continue
        if meta is None:
            found.append(
                f"{where}: calls {calls[0][0]}({calls[0][1]}) but has no attnbook metadata"
            )
            continue
        check, solution = calls[0]
        if (meta.get("check"), meta.get("solution")) != (check, solution):
            found.append(
                f"{where}: calls {check}({solution}), metadata says "
                f"{meta.get('check')}({meta.get('solution')})"
            )
        if meta.get("check") not in CHECKERS:
            found.append(f"{where}: {meta.get('check')!r} is not a checker of attnbook.checks")
        if not re.search(rf"^def {re.escape(solution)}\(", cell.source, re.M):
            found.append(f"{where}: the cell does not define {solution}")
        if meta.get("exercise") != last_id:
            found.append(
                f"{where}: exercise {meta.get('exercise')!r}, but the one above is {last_id!r}"
            )
            continue
        stars, text = stated[last_id]
        if meta.get("stars") != stars:
            found.append(f"{where}: {meta.get('stars')} stars, the exercise has {stars}")
        answer = meta.get("answer", "")
        if not answer.isidentifier() or answer.startswith("solution_"):
            found.append(f"{where}: answer {answer!r} is no name a student would give")
        elif f"`{answer}(" not in text:
            found.append(f"{where}: the exercise never asks for `{answer}(...)`")
    return found


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_exercise_metadata_is_there_and_agrees(path):
    nb = nbformat.read(path, as_version=4)
    found = problems(nb, path.stem)
    assert not found, (
        "\n".join(found) + f"\nrun: python -m tools.exercise_metadata book/{path.name}"
    )


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_the_tool_would_change_nothing(path):
    nb = nbformat.read(path, as_version=4)
    again = copy.deepcopy(nb)
    exercise_metadata.annotate(again, path.stem)
    assert nbformat.writes(again) == nbformat.writes(nb), (
        f"run: python -m tools.exercise_metadata book/{path.name}"
    )


def test_every_checker_is_some_exercises_check():
    checked = set()
    for path in CHAPTERS:
        for cell in nbformat.read(path, as_version=4).cells:
            checked.add(cell.metadata.get("attnbook", {}).get("check"))
    assert checked >= CHECKERS, f"checkers no solution cell names: {sorted(CHECKERS - checked)}"


def test_a_broken_notebook_is_caught():
    """The checks above bite: each kind of damage is named."""
    nb = nbformat.read(ROOT / "book" / "masked-softmax.ipynb", as_version=4)
    assert problems(nb, "masked-softmax") == []
    solutions = [c for c in nb.cells if "check" in c.metadata.get("attnbook", {})]
    markdown = [c for c in nb.cells if "exercises" in c.metadata.get("attnbook", {})]
    broken = copy.deepcopy(nb)
    del broken.cells[nb.cells.index(solutions[0])].metadata["attnbook"]
    assert any("has no attnbook metadata" in p for p in problems(broken, "masked-softmax"))
    for field, value, complaint in [
        ("stars", 2, "2 stars, the exercise has 3"),
        ("answer", "masked_softmax", "never asks for `masked_softmax(...)`"),
        ("check", "check_causal_lengths", "metadata says check_causal_lengths"),
        ("exercise", "masked-softmax/causal-lengths", "but the one above is"),
    ]:
        broken = copy.deepcopy(nb)
        broken.cells[nb.cells.index(solutions[0])].metadata["attnbook"][field] = value
        assert any(complaint in p for p in problems(broken, "masked-softmax")), field
    broken = copy.deepcopy(nb)
    broken.cells[nb.cells.index(markdown[1])].metadata["attnbook"]["exercises"][0]["stars"] = 3
    assert any("metadata says" in p for p in problems(broken, "masked-softmax"))
    broken = copy.deepcopy(nb)
    broken.cells[nb.cells.index(markdown[2])].metadata["attnbook"]["exercises"][0]["exercise"] = (
        "masked-softmax/causal-lengths"
    )
    assert any("used twice" in p for p in problems(broken, "masked-softmax"))
