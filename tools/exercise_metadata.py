"""Write each exercise's identity into the chapters' cell metadata.

Every exercise of a chapter (a markdown paragraph opening ``**N. ★★ Title.**``)
gets a stable id and its difficulty, in its markdown cell's metadata::

    "attnbook": {"exercises": [{"exercise": "masked-softmax/masking-or-cropping", "stars": 2}]}

(a list, since one cell may hold several exercises). Every solution cell that
calls a checker on its solution gets, in its own metadata::

    "attnbook": {"exercise": "masked-softmax/masked-softmax-renorm",
                 "answer": "masked_softmax_renorm", "solution": "solution_masked_softmax_renorm",
                 "check": "check_masked_softmax", "stars": 3}

``answer`` is the name the exercise asks the student's function to have,
``solution`` the function the cell hands to the checker, ``check`` the checker,
``stars`` the difficulty (the points of an assignment, tools/assignments.py).

An id is made once, from the chapter's file name and the exercise's title,
and kept from then on: running
the tool again changes nothing (it is idempotent), and an exercise that is
renumbered or retitled keeps its id. ``stars`` and the checked fields follow
the chapter's text and code on every run. tests/test_exercise_metadata.py
checks that the metadata is there and agrees with the code.

    python -m tools.exercise_metadata [book/NAME.ipynb ...]   # default: every chapter
    python -m tools.exercise_metadata --check [...]            # exit 1 if a file would change
"""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
BOOK = ROOT / "book"
KEY = "attnbook"
# "**2. ★★ Title.**", also inside a numbered list item ("2. **★★ Title.**").
EXERCISE = re.compile(r"^(?:\d+\.\s+)?\*\*(?:(\d+)\.\s+)?(★+)\s+(.+?)\*\*", re.M)
DROPDOWN = re.compile(r"^(`{3,}|:{3,})\{dropdown\}.*?^\1[ \t]*$", re.M | re.S)
# A function the exercise asks for, as its text writes it: `name(...)`.
ASKED = re.compile(r"`([A-Za-z_][A-Za-z0-9_]*)\(")


@dataclass
class Exercise:
    """One exercise as the chapter's text states it."""

    cell: int
    number: str
    stars: int
    title: str
    text: str  # its own paragraphs, without the folded solution
    raw: str  # its own paragraphs, folded solution included

    def asked(self) -> list[str]:
        return ASKED.findall(self.text)


def slug(text: str) -> str:
    """Lower case, words joined by hyphens: 'Masking or cropping?' -> 'masking-or-cropping'."""
    text = re.sub(r"\([^)]*\)", "", text)  # an aside such as "(checkable)"
    text = re.sub(r"['’]", "", text)  # "The decoder's" -> "the-decoders"
    text = re.sub(r"\\[A-Za-z]+", "", text)  # TeX commands: "$\\mathbf W_o$" -> "W_o"
    words = re.findall(r"[a-z0-9]+", text.lower())
    return "-".join(words)


def exercises(nb: nbformat.NotebookNode) -> list[Exercise]:
    """The chapter's exercises, in order, each with its own text."""
    found = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown":
            continue
        matches = list(EXERCISE.finditer(cell.source))
        for k, match in enumerate(matches):
            end = matches[k + 1].start() if k + 1 < len(matches) else len(cell.source)
            raw = cell.source[match.start() : end]
            found.append(
                Exercise(
                    cell=index,
                    number=match.group(1) or str(len(found) + 1),
                    stars=len(match.group(2)),
                    title=match.group(3).strip().rstrip("."),
                    text=DROPDOWN.sub("", raw),
                    raw=raw,
                )
            )
    return found


def checked_call(source: str) -> tuple[str, str] | None:
    """(checker, solution function) of a solution cell: the first call of a
    ``check_*`` (bare or as ``checks.check_*``) whose first argument is a
    function the cell defines; None if the cell checks nothing."""
    tree = ast.parse("\n".join(line for line in source.splitlines() if not line.startswith("%")))
    defined = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        first = node.args[0]
        if name.startswith("check_") and isinstance(first, ast.Name) and first.id in defined:
            return name, first.id
    return None


def answer_name(exercise: Exercise, solution: str) -> str:
    """The name the exercise asks for: the solution's name without ``solution_``
    when the text asks for that, else the first function the text asks for."""
    asked = exercise.asked()
    plain = solution.removeprefix("solution_")
    if plain in asked or not asked:
        return plain
    return asked[0]


def solution_cells(nb: nbformat.NotebookNode, found: list[Exercise]) -> dict[int, Exercise]:
    """Each solution cell's exercise: the last exercise stated above it."""
    owner = {}
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "code" and "solution" in cell.metadata.get("tags", []):
            above = [e for e in found if e.cell < index]
            if above:
                owner[index] = above[-1]
    return owner


def annotate(nb: nbformat.NotebookNode, chapter: str) -> None:
    """Write (or refresh) the metadata of every exercise and checked solution cell."""
    found = exercises(nb)
    owner = solution_cells(nb, found)
    # The answer of each checked exercise, so that its id can be made from it.
    answers: dict[int, tuple[str, str, str]] = {}  # id(exercise) -> (answer, solution, check)
    for index, exercise in owner.items():
        call = checked_call(nb.cells[index].source)
        if call is not None and id(exercise) not in answers:
            check, solution = call
            answers[id(exercise)] = (answer_name(exercise, solution), solution, check)
    # Ids already written are kept, by the exercise's position among the cell's exercises.
    ids: dict[int, str] = {}
    for index in sorted({e.cell for e in found}):
        in_cell = [e for e in found if e.cell == index]
        old = nb.cells[index].metadata.get(KEY, {}).get("exercises", [])
        for k, exercise in enumerate(in_cell):
            if k < len(old) and old[k].get("exercise"):
                ids[id(exercise)] = old[k]["exercise"]
    taken = set(ids.values())
    for exercise in found:
        if id(exercise) in ids:
            continue
        made = f"{chapter}/{slug(exercise.title)}"
        while made in taken:
            made += "-" + exercise.number
        ids[id(exercise)] = made
        taken.add(made)
    for index in sorted({e.cell for e in found}):
        nb.cells[index].metadata[KEY] = {
            "exercises": [
                {"exercise": ids[id(e)], "stars": e.stars} for e in found if e.cell == index
            ]
        }
    for index, exercise in owner.items():
        cell = nb.cells[index]
        if id(exercise) in answers and checked_call(cell.source) is not None:
            answer, solution, check = answers[id(exercise)]
            cell.metadata[KEY] = {
                "exercise": ids[id(exercise)],
                "answer": answer,
                "solution": solution,
                "check": check,
                "stars": exercise.stars,
            }
        else:
            cell.metadata.pop(KEY, None)


def chapters() -> list[Path]:
    return sorted(BOOK.glob("*.ipynb"))


def main(argv: list[str]) -> int:
    check = "--check" in argv
    paths = [Path(a) for a in argv if a != "--check"] or chapters()
    stale = []
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        before = nbformat.writes(nb)
        annotate(nb, path.stem)
        if nbformat.writes(nb) != before:
            stale.append(path)
            if not check:
                nbformat.write(nb, path)
    for path in stale:
        print(f"{path}: {'metadata out of date' if check else 'metadata written'}")
    return 1 if check and stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
