"""The quiz's small Markdown as one line and as its first sentence: what the
instructor guide's list and the decks' misconception lines print."""

from attnbook import quiz


def test_first_sentence_stops_outside_maths_and_abbreviations():
    assert quiz.first_sentence("A **b**. C.") == "A b."
    assert quiz.first_sentence("Liu et al. say $x. y$ is 0.5! Then.") == (
        "Liu et al. say $x. y$ is 0.5!"
    )
    assert quiz.first_sentence("One `a.b` two?\n\nThree.") == "One `a.b` two?"
    assert quiz.first_sentence("*Why* e.g. this ends.” Next.") == "Why e.g. this ends.”"
    assert quiz.first_sentence("no end") == "no end"


def test_one_line_joins_lines_and_paragraphs():
    assert quiz.one_line("  a\n b\n\n  c ") == "a b c"


def test_spans_keep_code_and_maths_as_written():
    assert quiz.spans("a `x.y` b $z$ c") == ["a ", "`x.y`", " b ", "$z$", " c"]


def test_the_guide_and_the_decks_use_the_quiz_sentence():
    # One definition: the guide's list and the decks' lines cannot drift apart.
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    for relative in ("tools/slides.py", "book/_ext/instructor_guide.py"):
        source = (root / relative).read_text()
        assert "def first_sentence" not in source, relative
        assert "_SENTENCE_END" not in source, relative
        assert "first_sentence" in source, relative
