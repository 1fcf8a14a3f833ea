"""The main text stands without the solutions.

The student edition and Colab's reader's edition fold or remove the solutions,
and a student who has not done an exercise has not read its answer. So the
chapters' Markdown outside a solution may invite the reader to an exercise
("Exercise 3 asks you to write this loop"), but never leave an explanation the
text relies on to a solution or an exercise ("Exercise 5 explains why", "(exercise
2 says why)", "which Exercise 1 takes up", "as the solutions of ... note").
Solutions are the book's dropdowns (```` ```{dropdown} Solution ````) and cells
tagged ``solution``.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
BOOK = ROOT / "book"
# Pages about the book, not chapters: they speak of solutions on purpose.
NOT_CHAPTERS = {"instructor-guide", "teaching", "references", "notation"}
DEFERS = (
    "explains|explain|says why|say why|shows why|shows that|takes up|works out|answers|proves"
    "|derives|finds|measures|note|notes"
)
POINTERS = [
    # "Exercise 5 explains why", "(exercise 2 says why)", "which Exercise 1 takes up",
    # "Exercise 3 scales them down and finds ..."
    re.compile(rf"\b[Ee]xercises? \d+(?:(?:,| and| to) \d+)*\b[^.;:()]{{0,40}}?\b(?:{DEFERS})\b"),
    # "as the solutions of Attention Scoring Functions note"
    re.compile(rf"\b[Ss]olutions?\b[^.;:()]{{0,60}}?\b(?:{DEFERS})\b"),
]
DROPDOWN = re.compile(r"(`{3,}|:{3,})\{dropdown\}[^\n]*\n.*?\n\1", re.S)


def chapters() -> list[Path]:
    paths = sorted(BOOK.glob("*.ipynb")) + sorted(BOOK.glob("*.md"))
    return [p for p in paths if p.stem not in NOT_CHAPTERS]


def main_text(path: Path) -> list[str]:
    """The chapter's Markdown outside its solutions, one string per cell."""
    if path.suffix == ".md":
        cells = [path.read_text()]
    else:
        notebook = nbformat.read(path, as_version=4)
        cells = [
            c.source
            for c in notebook.cells
            if c.cell_type == "markdown" and "solution" not in c.metadata.get("tags", [])
        ]
    return [DROPDOWN.sub("", source) for source in cells]


def pointers(text: str) -> list[str]:
    found = []
    for sentence in re.split(r"(?<=[.!?])\s+", text.replace("\n", " ")):
        if any(p.search(sentence) for p in POINTERS):
            found.append(sentence.strip()[:160])
    return found


@pytest.mark.parametrize("path", chapters(), ids=lambda p: p.stem)
def test_no_explanation_is_left_to_a_solution_or_an_exercise(path):
    found = [s for text in main_text(path) for s in pointers(text)]
    assert not found, f"{path.name}: the main text relies on a solution or exercise:\n" + "\n".join(
        found
    )


@pytest.mark.parametrize(
    "sentence",
    [
        "That matrix need not limit the number of heads: as the solutions of the chapter note, kernels never store it.",
        "The fraction falls to 0.016: Exercise 5 explains why.",
        "We compute the angles in float64 (exercise 2 says why) and round only the result.",
        "Whether training finds one is another matter, which Exercise 1 takes up.",
        "Branches that start small (Exercise 3 scales them down and finds a stack close to the identity).",
        "Float32 is off in the decimals that matter (Exercise 2 measures by how much).",
    ],
)
def test_the_sentences_the_cold_readers_met_are_caught(sentence):
    assert pointers(sentence)


@pytest.mark.parametrize(
    "sentence",
    [
        "Exercise 3 asks you to write this loop.",
        "Exercises 1 and 3 come with a checker from `attnbook.checks`.",
        "Worked solutions are folded away under each exercise: try first, then peek.",
        "Every solution is folded: open the dropdown under the exercise.",
        "Exercise 4 asks what would have to be true for the map itself to be faithful.",
    ],
)
def test_an_invitation_to_an_exercise_is_not_a_pointer(sentence):
    assert not pointers(sentence)


def test_solutions_are_left_out_of_the_main_text():
    text = "Before.\n\n````{dropdown} Solution\nExercise 5 explains why.\n````\n\nAfter."
    assert DROPDOWN.sub("", text) == "Before.\n\n\n\nAfter."


POINTER_LINE = re.compile(r"Solution: open the dropdown( above| below)?\b")


def misplaced_pointers(cells: list[str]) -> list[str]:
    """Pointers that say where the dropdown is, and say it wrong (or not at all).

    A pointer after its dropdown (in the same cell, or the cell just before) must
    say "above"; one before it, "below". A reader scanning down from the
    exercise otherwise looks for a solution that is not where the text sends them.
    """
    wrong = []
    for i, source in enumerate(cells):
        for match in POINTER_LINE.finditer(source):
            before = source[: match.start()]
            after_dropdown = "{dropdown}" in before.split("\n\n**")[-1] or (
                i > 0 and "{dropdown}" in cells[i - 1] and not before.strip()
            )
            want = " above" if after_dropdown else " below"
            if match.group(1) != want:
                wrong.append(f"cell {i}: {match.group(0)!r} (the dropdown is{want})")
    return wrong


@pytest.mark.parametrize(
    "path", [p for p in chapters() if p.suffix == ".ipynb"], ids=lambda p: p.stem
)
def test_each_solution_pointer_says_where_its_dropdown_is(path):
    notebook = nbformat.read(path, as_version=4)
    cells = [c.source if c.cell_type == "markdown" else "" for c in notebook.cells]
    assert not misplaced_pointers(cells), misplaced_pointers(cells)


def test_a_pointer_after_its_dropdown_without_above_is_caught():
    dropdown = "**2. ★ Do it.** Write it.\n\n````{dropdown} Solution\nDone.\n````\n\n"
    assert misplaced_pointers([dropdown + "Solution: open the dropdown, then the cell below it."])
    assert misplaced_pointers([dropdown, "Solution: open the dropdown."])
    assert not misplaced_pointers([dropdown + "Solution: open the dropdown above."])
    assert not misplaced_pointers(["**4. ★★ Say why.** (Solution: open the dropdown below.)"])
