"""The concept questions' sources: enough of them, each where its chapter asks it.

* Every chapter of the table of contents has a question file that
  ``attnbook.quiz`` reads without a problem (one unambiguous key, feedback on
  every option, known wrong numbers apart from the answer: ``lib/tests/test_quiz.py``
  shows each rule refusing a broken file), with at least
  ``MIN_PER_NOTEBOOK`` questions per notebook chapter, ``MIN_PER_PROSE`` per
  prose chapter and ``MIN_TOTAL`` in all, exactly one of them for the deck.
* Every section a question links is a label of the page it names.
* A notebook asks each of its questions once, in the file's order, in a code
  cell of its own whose input the website hides (``ask("chapter/id", ...)``),
  after the label of the section it tests; a prose chapter does the same with
  the ``{concept-question}`` directive.

Each check is a function of its inputs, and is seen failing on a broken copy.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from attnbook import quiz
from attnbook.quiz.__main__ import problems
from tools.site import BOOK as BOOK_DIR

ROOT = Path(__file__).resolve().parent.parent
MIN_PER_NOTEBOOK = 6
MIN_PER_PROSE = 3
MIN_TOTAL = 90
ASK = re.compile(r"""^ask\(\s*["']([a-z0-9-]+/[a-z0-9-]+)["']""", re.M)
DIRECTIVE = re.compile(r"^```\{concept-question\}\s+(\S+)\s*$", re.M)
LABEL = re.compile(r"^\(([A-Za-z0-9_-]+)\)=\s*$", re.M)


def chapter_names() -> list[str]:
    """The chapters of the table of contents (pages under Parts I-IV)."""
    import yaml

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    return [
        entry["file"].split("/")[-1]
        for part in toc["parts"]
        if part.get("caption", "").startswith("Part ")
        for entry in part["chapters"]
    ]


def blocks(path: Path) -> list[tuple[str, str, dict]]:
    """A chapter as (kind, text, metadata) blocks in reading order."""
    if path.suffix == ".md":
        return [("markdown", path.read_text(encoding="utf-8"), {})]
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return [
        (cell["cell_type"], "".join(cell["source"]), cell.get("metadata", {})) for cell in cells
    ]


def placement_problems(chapter: str, questions, chapter_blocks) -> list[str]:
    """Where ``chapter_blocks`` asks ``questions`` against the rules in the docstring."""
    found = []
    asked: list[tuple[str, int]] = []  # (key, position)
    labels: dict[str, int] = {}
    position = 0
    for kind, text, metadata in chapter_blocks:
        for line in text.splitlines():
            position += 1
            if kind == "markdown":
                label = LABEL.match(line)
                if label:
                    labels[label.group(1)] = position
                directive = DIRECTIVE.match(line)
                if directive:
                    asked.append((directive.group(1), position))
        if kind == "code":
            keys = ASK.findall(text)
            if keys:
                asked += [(key, position) for key in keys]
                if len(keys) > 1 or "remove-input" not in metadata.get("tags", []):
                    found.append(f"{keys}: one ask per cell, tagged remove-input")
    want = [q.key for q in questions]
    got = [key for key, _ in asked]
    if got != want:
        found.append(f"{chapter} asks {got}, its file holds {want} (in this order)")
    where = dict(asked)
    for q in questions:
        label = q.section.split("#")[1]
        if q.key in where and label in labels and labels[label] > where[q.key]:
            found.append(f"{q.key} is asked before its section {label}")
    return found


def test_every_chapter_has_enough_questions_and_one_for_the_deck():
    names = chapter_names()
    assert len(names) == 15
    have = set(quiz.chapters())
    missing = [name for name in names if name not in have]
    assert missing == [], f"chapters without questions: {missing}"
    short = {}
    for name in names:
        count = len(quiz.load(name))
        least = MIN_PER_PROSE if (BOOK_DIR / f"{name}.md").exists() else MIN_PER_NOTEBOOK
        if count < least:
            short[name] = count
        assert sum(q.deck for q in quiz.load(name)) == 1, f"{name}: one deck question"
    assert short == {}, f"too few questions: {short}"
    total = sum(len(quiz.load(name)) for name in names)
    assert total >= MIN_TOTAL, f"{total} questions in all, {MIN_TOTAL} wanted"


def test_every_question_file_reads_and_every_link_resolves():
    assert problems(ROOT / "book") == []


def test_a_link_to_a_missing_section_is_found(monkeypatch):
    question = quiz.parse(
        "queries-keys-values",
        """
[[question]]
id = "x"
kind = "choice"
section = "sec-no-such-section"
prompt = "?"
[[question.option]]
text = "a"
correct = true
feedback = "a"
[[question.option]]
text = "b"
feedback = "b"
[[question.option]]
text = "c"
feedback = "c"
""",
    )
    monkeypatch.setattr("attnbook.quiz.__main__.chapters", lambda: ["queries-keys-values"])
    monkeypatch.setattr("attnbook.quiz.__main__.load", lambda chapter: question)
    found = problems(ROOT / "book")
    assert found and "sec-no-such-section" in found[0]


@pytest.mark.parametrize("name", chapter_names())
def test_each_question_is_asked_once_in_order_after_its_section(name):
    if name not in quiz.chapters():
        pytest.fail(f"{name} has no questions")
    path = next(p for p in (BOOK_DIR / f"{name}.ipynb", BOOK_DIR / f"{name}.md") if p.exists())
    assert placement_problems(name, quiz.load(name), blocks(path)) == []


def test_placement_check_catches_each_slip():
    name = next(n for n in chapter_names() if (BOOK_DIR / f"{n}.ipynb").exists())
    if name not in quiz.chapters():
        pytest.skip("no questions yet")
    questions = quiz.load(name)
    good = blocks(BOOK_DIR / f"{name}.ipynb")
    assert placement_problems(name, questions, good) == []
    cells = [i for i, (kind, text, _) in enumerate(good) if kind == "code" and ASK.search(text)]
    # one question dropped
    dropped = [b for i, b in enumerate(good) if i != cells[-1]]
    assert placement_problems(name, questions, dropped)
    # two swapped
    swapped = list(good)
    swapped[cells[0]], swapped[cells[1]] = swapped[cells[1]], swapped[cells[0]]
    assert placement_problems(name, questions, swapped)
    # the input shown on the website
    shown = list(good)
    kind, text, _ = shown[cells[0]]
    shown[cells[0]] = (kind, text, {})
    assert placement_problems(name, questions, shown)
    # asked before its section: the first question moved to the top
    early = [good[cells[0]]] + [b for i, b in enumerate(good) if i != cells[0]]
    assert any("before its section" in p for p in placement_problems(name, questions, early))


def test_a_page_carries_the_quiz_script_once():
    import sys

    sys.path.insert(0, str(ROOT / "book" / "_ext"))
    import concept_questions

    parts = [quiz.fragment(q) for q in quiz.load("masked-softmax")[:3]]
    shared = concept_questions.share_scripts(["<p>text</p>", *parts])
    assert shared[0] == "<p>text</p>" and shared[1] == parts[0]
    assert all("function wire(" not in part for part in shared[2:])
    assert all(part.count(quiz._widget.SHARED_CALL) == 1 for part in shared[2:])
    assert sum(map(len, shared)) < sum(map(len, parts)) - 15_000
