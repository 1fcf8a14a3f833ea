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


# The same cases as tests/live/quiz.test.mjs's "every macro the questions use".
MACROS = {
    r"$\bar{\boldsymbol\alpha}_l$": "\u03b1\u0304_l",
    r"$\tfrac12 (x + y)$": "1/2 (x + y)",
    r"$e / \sqrt d$": "e / \u221ad",
    r"$\log_2 n \ne \ln n$": "log_2 n \u2260 ln n",
    r"$x_0, \dots, x_{n-1}$": "x_0, \u2026, x_n-1",
    r"$\cos(i\omega) \big(\sin \phi\big) \pi$": "cos(i\u03c9) (sin \u03c6) \u03c0",
}


def test_the_macros_the_questions_use_read_as_text():
    for tex, text in MACROS.items():
        assert quiz.plain(tex) == text, tex


def test_no_question_keeps_a_tex_macro_in_its_plain_text():
    # Where no MathJax is at hand (Colab, JupyterLab, the text fallback), a
    # question's TeX is read as text: a macro left as written (\sqrt d) is noise.
    import re

    left = set()
    for chapter in quiz.chapters():
        for q in quiz.load(chapter):
            texts = [q.prompt, q.feedback or "", q.look or "", q.otherwise or ""]
            texts += [o.text for o in q.options] + [o.feedback for o in q.options]
            texts += [w.feedback for w in q.wrong]
            for text in texts:
                left |= {(chapter, m) for m in re.findall(r"\\[a-zA-Z]+", quiz.plain(text))}
    assert not left, sorted(left)


def test_functions_keep_their_spaces_and_grouped_exponents_their_brackets():
    # The same cases as tests/live/quiz.test.mjs; "2^-8/4" would read as 2^-8 divided by 4.
    assert quiz.plain(r"$(a\cos\phi - b\sin\phi,\ a\sin\phi + b\cos\phi)$") == (
        "(a cos φ - b sin φ, a sin φ + b cos φ)"
    )
    assert quiz.plain(r"$s_0 = 2^{-8/4} = 1/4$") == "s_0 = 2^(-8/4) = 1/4"
