"""The instructor guide (book/instructor-guide.md), as book/_ext/instructor_guide.py
fills it from the sources: it lists exactly the checkers' known mistakes, each
chapter's opening and exercises, a measured run time for every notebook, and
course plans that cover each chapter once, in order. No built site needed."""

from __future__ import annotations

import importlib.util
import re
import sys

import nbformat
import pytest
import yaml

from attnbook import checks
from tools.site import BOOK, NOTEBOOKS, ROOT

PAGE = BOOK / "instructor-guide.md"


def load_guide():
    path = BOOK / "_ext" / "instructor_guide.py"
    spec = importlib.util.spec_from_file_location("instructor_guide", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


guide = load_guide()


@pytest.fixture(scope="module")
def filled() -> str:
    return guide.fill(PAGE.read_text())


def test_the_page_sits_next_to_the_contributors_page_and_is_filled_at_build_time():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [entry["file"] for entry in toc["parts"][-1]["chapters"]]
    assert files[files.index("book/teaching") - 1] == "book/instructor-guide"
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert config["sphinx"]["local_extensions"]["instructor_guide"] == "book/_ext"
    source = PAGE.read_text()
    for marker in ("course-plans", "chapter-tables", "concept-questions", "common-mistakes"):
        assert f"% generated: {marker}\n" in source


def test_nothing_is_left_unfilled(filled):
    assert "{{" not in filled and "% generated:" not in filled


def test_the_page_lists_exactly_the_checkers_known_mistakes(filled):
    # The reference is read from the checkers themselves, not through the extension.
    expected = {
        name: {(m.name, m.diagnosis) for m in getattr(checks, name).mistakes}
        for name in dir(checks)
        if name.startswith("check_")
    }
    listed = guide.parse_mistakes(filled)
    assert listed == expected
    section = filled.split("\n## Common mistakes\n")[1].split("\n## ")[0]
    lines = [line for line in section.splitlines() if re.match(r"^- \*\*.+?\*\*: ", line)]
    total = sum(map(len, expected.values()))
    assert len(lines) == total  # each mistake once
    assert f"every mistake the checkers know, {total} of them" in " ".join(filled.split())


def test_every_chapter_of_the_parts_has_its_table_with_its_own_opening(filled):
    chapters = guide.chapters()
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    in_parts = [
        entry["file"].removeprefix("book/")
        for part in toc["parts"]
        if part.get("caption", "").startswith("Part ")
        for entry in part["chapters"]
    ]
    assert [c.name for c in chapters] == in_parts
    prose = " ".join(filled.split())
    for chapter in chapters:
        if chapter.notebook:
            nb = nbformat.read(BOOK / f"{chapter.name}.ipynb", as_version=4)
            opening = next(c.source for c in nb.cells if c.cell_type == "markdown")
        else:
            opening = (BOOK / f"{chapter.name}.md").read_text().split("\n## ")[0]
        opening = " ".join(opening.split())
        assert f"#### {{doc}}`{chapter.title} <{chapter.name}>`" in filled
        assert chapter.learn, chapter.name
        for item in chapter.learn:
            assert item in opening and item in prose, (chapter.name, item)


def test_each_chapters_exercises_are_numbered_and_starred(filled):
    for chapter in guide.chapters():
        numbers = [int(e.number) for e in chapter.exercises]
        assert numbers == list(range(1, len(numbers) + 1)), chapter.name
        for e in chapter.exercises:
            assert 1 <= e.stars <= 3
            ident = f" (`{e.ident}`)" if e.ident else ""
            assert f"**{e.number}.** {'★' * e.stars} {e.title}{ident}: " in filled
            # Every notebook exercise shows its id, which EXERCISES= takes.
            assert e.ident or not chapter.notebook, (chapter.name, e.number)
            for checker in e.checkers:
                assert hasattr(checks, checker), f"{chapter.name} names {checker}"


def test_every_notebook_has_a_measured_run_time_on_a_named_machine():
    # Each notebook has a time, or the error its measured run stopped at (the
    # guide then says it was not measured), never both, never neither.
    times = guide.notebook_times()
    failed = set(times.get("failed", {}))
    assert set(times["cpu_seconds"]) | failed == {p.stem for p in NOTEBOOKS}
    assert set(times["cpu_seconds"]) & failed == set()
    assert set(times["seconds"]) == set(times["cpu_seconds"])
    assert all(s > 0 for s in times["cpu_seconds"].values())
    assert times["machine"]["cpu"] and times["machine"]["cores"] >= 1


def test_a_missing_time_is_an_error_not_a_blank(tmp_path):
    times = guide.notebook_times()
    times["cpu_seconds"].pop(NOTEBOOKS[0].stem)
    path = tmp_path / "times.json"
    path.write_text(__import__("json").dumps(times))
    with pytest.raises(ValueError, match=NOTEBOOKS[0].stem):
        guide.fill(PAGE.read_text(), times_path=path)


def test_a_failed_run_is_said_on_the_page(tmp_path):
    times = guide.notebook_times()
    name = NOTEBOOKS[0].stem
    for key in ("seconds", "cpu_seconds"):
        times[key].pop(name, None)
    times.setdefault("failed", {})[name] = "AssertionError: x"
    path = tmp_path / "times.json"
    path.write_text(__import__("json").dumps(times))
    page = guide.fill(PAGE.read_text(), times_path=path)
    assert "not measured: its run failed on the measuring machine (AssertionError\\: x)" in page


def test_an_unknown_token_or_marker_is_an_error():
    with pytest.raises(ValueError, match="guide.nonsense"):
        guide.fill("{{ guide.nonsense }}")
    with pytest.raises(ValueError, match="nonsense"):
        guide.fill("% generated: nonsense\n")


def test_a_deck_is_linked_only_when_the_site_holds_it(tmp_path):
    assert guide.decks_in(tmp_path) == set()
    (tmp_path / "slides").mkdir()
    (tmp_path / "slides" / "masked-softmax.html").write_text("")
    assert guide.decks_in(tmp_path) == set()  # no PDF beside it yet
    (tmp_path / "slides" / "masked-softmax.pdf").write_text("")
    assert guide.decks_in(tmp_path) == {"masked-softmax"}
    page = guide.fill(PAGE.read_text(), decks={"masked-softmax"})
    assert page.count("../slides/") == 2
    assert '<a href="../slides/masked-softmax.html">slides (HTML)</a>' in page
    assert "../slides/" not in guide.fill(PAGE.read_text())


def test_course_plans_cover_their_parts_once_in_reading_order(filled):
    chapters = guide.chapters()
    for _key, title, parts, weeks, project in guide.PLANS:
        section = filled.split(f"### {title}: ")[1].split("\n### ")[0].split("\n## ")[0]
        rows = [r for r in section.splitlines() if re.match(r"^\| \d+ \|", r)]
        assert len(rows) == weeks + project, title
        named = re.findall(r"<([a-z-]+)>`", section)
        assert named == [c.name for c in chapters if c.part in parts], title


def test_study_time_adds_reading_and_exercises():
    chapter = next(c for c in guide.chapters() if c.name == "masked-softmax")
    stars = [e.stars for e in chapter.exercises]
    assert chapter.exercise_minutes == sum(guide.EXERCISE_MINUTES[s] for s in stars)
    assert chapter.study_minutes == -(-chapter.words // guide.WORDS_PER_MINUTE) + sum(
        guide.EXERCISE_MINUTES[s] for s in stars
    )


def test_escaped_text_reads_back_unchanged():
    text = "a * b_c `x` $y$ [z](w) <t> {r} 1. -inf \\ done"
    assert guide.unescape(guide.escape(text)) == text
    assert "$y$" not in guide.escape(text)


def test_week_split_keeps_order_and_minimises_the_busiest_week():
    assert guide._weeks([1, 1, 1, 1], 2) == [2, 2]
    assert guide._weeks([5, 1, 1, 1, 1, 1], 2) == [1, 5]
    assert guide._weeks([3, 3], 5) == [1, 1]


def test_reading_time_counts_prose_outside_folded_blocks():
    text = "(chap-x)=\n# One two\n\n````{dropdown} Going deeper\nfour five six\n````\n\nseven\n"
    assert guide._words(text) == 3  # "One", "two", "seven": the label and the aside are left out


def expected_concept_list(questions: dict[str, list]) -> dict[str, list]:
    """What the concept list must say, read from attnbook.quiz itself."""
    from attnbook import quiz

    return {
        chapter: [
            (number, q.kind, q.section.split("#")[1], quiz.key_text(q))
            for number, q in enumerate(own, 1)
        ]
        for chapter, own in questions.items()
        if own
    }


def concept_section(page: str) -> str:
    return page.split("\n## Concept questions in class\n")[1].split("\n## ")[0]


def test_the_concept_list_agrees_with_attnbook_quiz(filled):
    """Every chapter with a question file, each question once, in order, with its kind,
    section and key as attnbook.quiz gives them (none listed while no file exists)."""
    from attnbook import quiz

    questions = {name: quiz.load(name) for name in quiz.chapters()}
    section = concept_section(filled)
    assert guide.parse_concept_list(section) == expected_concept_list(questions)
    for chapter, own in questions.items():
        assert f"<{chapter}>`\n\n{len(own)} question" in section, chapter
    if not any(questions.values()):
        assert "No chapter has concept questions yet." in section
    assert "{cite:p}`crouch2001peer`" in filled
    assert "@article{crouch2001peer," in (BOOK / "references.bib").read_text()


# The concept questions' fixture that both test trees share (lib/tests/quiz_fixture.toml:
# one question of each kind, in the file's order, so the keys are C; A, C; B).
GUIDE_TOML = (ROOT / "lib" / "tests" / "quiz_fixture.toml").read_text(encoding="utf-8")


def test_each_question_is_listed_with_its_number_kind_idea_section_and_key(monkeypatch):
    from attnbook import quiz

    questions = {"masked-softmax": quiz.parse("masked-softmax", GUIDE_TOML)}
    monkeypatch.setattr(guide, "concept_questions", lambda: questions)
    section = concept_section(guide.fill(PAGE.read_text()))
    assert guide.parse_concept_list(section) == expected_concept_list(questions)
    assert guide.parse_concept_list(section)["masked-softmax"] == [
        (1, "choice", "sec-a", "C"),
        (2, "choice", "sec-a", "A, C"),
        (3, "numeric", "sec-b", "0.25 (± 0.005)"),
        (4, "predict", "sec-b", "B"),
    ]
    lines = section.splitlines()
    assert "4 questions; question 1 is the deck's concept test." in lines
    assert (
        r"- **Question 2** (choice, several answers), after {ref}`sec-a`: "
        r"A row of scores is $[0, \ln 3]$ \(e\.g\. two keys\)\. Key: **A, C**."
    ) in lines  # the idea: the prompt's first sentence, plain, its maths kept
    assert "- **Question 1** (choice, in the deck), after {ref}`sec-a`: " in section
    assert "### {doc}`Scoring" not in section  # a chapter without a question file: left out


def test_a_broken_question_file_stops_the_guide(monkeypatch):
    from attnbook import quiz

    broken = GUIDE_TOML.replace(
        'correct = true\nfeedback = "A narrow kernel', 'feedback = "A narrow kernel'
    )
    monkeypatch.setattr(quiz, "chapters", lambda: ["masked-softmax"])
    monkeypatch.setattr(quiz, "load", lambda name: quiz.parse(name, broken))
    with pytest.raises(quiz.QuestionError, match="width-predict.*exactly one right option"):
        guide.fill(PAGE.read_text())
