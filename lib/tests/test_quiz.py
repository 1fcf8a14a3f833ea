"""attnbook.quiz: the question format's checks, the HTML, and ask's asserted numbers.

The book's own question files are checked in tests/test_concept_questions.py;
here each rule of the format is shown to refuse a file that breaks it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from attnbook import quiz

# The concept questions' fixture that both test trees share (one question of each kind;
# its header says what each holds). Each rule below breaks it in one place.
GOOD = (Path(__file__).with_name("quiz_fixture.toml")).read_text(encoding="utf-8")


def parse(text=GOOD):
    return quiz.parse("chap", text)


def test_a_good_file_reads_with_every_field():
    grows, row, weight, look = parse()
    by_text = {o.text: o for o in grows.options}
    assert grows.key == "chap/variance-grows" and grows.deck
    assert [grows.options[i].text for i in grows.right] == ["Each of the d products adds variance."]
    assert by_text["Because the softmax sharpens."].reread == "other-page#sec-b"
    # the reread defaults to the question's section
    assert by_text["Because of the scale `1/√d`."].reread == "chap#sec-a"
    assert weight.answer == 0.25 and weight.wrong[0].tolerance == 0.005
    assert row.multiple and row.right == (0, 2)  # ordered: the file's order
    assert look.right == (1,) and look.look.startswith("Move")
    assert quiz.key_text(weight) == "0.25 (± 0.005)" and quiz.key_text(row) == "A, C"
    assert quiz.key_text(grows) == "C" and quiz.key_text(look) == "B"


def test_options_are_shuffled_by_key_alone_unless_ordered():
    texts = [f"option {i}" for i in range(4)]
    once = quiz._data.shuffled(texts, "chap/q")
    assert once == quiz._data.shuffled(texts, "chap/q") and sorted(once) == texts
    # Over many questions the right option (written first) lands anywhere.
    firsts = [quiz._data.shuffled(texts, f"chap/q{i}").index("option 0") for i in range(400)]
    assert all(70 <= firsts.count(p) <= 130 for p in range(4)), [firsts.count(p) for p in range(4)]
    look = parse()[3]
    assert look.right == (1,)  # ordered = true: the file's order
    unordered = parse(GOOD.replace('ordered = true\nprompt = "Move', 'prompt = "Move'))[3]
    assert unordered.options == tuple(quiz._data.shuffled(list(look.options), look.key))


BREAKS = [
    ('id = "variance-grows"', 'id = "Grows Big"', "id must be lowercase"),
    ('kind = "choice"', 'kind = "essay"', "kind must be one of"),
    ('section = "sec-a"\ndeck', 'section = "sec a"\ndeck', "section must be a section label"),
    ('feedback = "The scale removes the growth."', 'feedback = ""', "feedback is missing"),
    (
        'text = "Because the softmax sharpens."',
        'text = "Because the softmax sharpens."\ncorrect = true',
        "exactly one right option",
    ),
    (
        'text = "Because the softmax sharpens."',
        'text = "Each of the d products adds variance."',
        "same text",
    ),
    ('values = { ratio = "3.4" }', 'values = { ratio = "3.9" }', "appears nowhere"),
    ('values = { ratio = "3.4" }', "values = { ratio = 3.4 }", "values must map names"),
    ("value = 0.75", "value = 0.252", "within the tolerance of the answer"),
    (
        "[[question.wrong]]\nvalue = 0.75\nfeedback = \"That is the other key's weight. "
        'Read the order of the scores again."',
        "",
        "at least one",
    ),
    ('look = "Move the slider to 0.1."', "", "look is missing"),
    ('id = "width-predict"', 'id = "variance-grows"', "repeated id"),
    ('kind = "numeric"', 'kind = "numeric"\ndeck = true', "at most one allowed"),
    ('kind = "choice"', 'kind = "choice"\nanswer = 1', "has no answer"),
    ("tolerance = 0.005", "tolerance = -1", "tolerance must be >= 0"),
    (
        'feedback = "That is a consequence',
        'feedback = "Unlike option B, that is a consequence',
        "by letter",
    ),
    ("ordered = true\nvalues", "ordered = 1\nvalues", "ordered must be true or false"),
    (
        'text = "The first key gets the larger weight."',
        'text = "The first key gets the larger weight."\ncorrect = true',
        "1 to 2 right options",
    ),
    (
        'correct = true\nfeedback = "The softmax normalises',
        'correct = "yes"\nfeedback = "The softmax normalises',
        "correct must be true or false",
    ),
    ('prompt = "Softmax', 'hint = "x"\nprompt = "Softmax', "unknown field"),
    (
        '[[question]]\nid = "variance-grows"',
        'title = 1\n[[question]]\nid = "variance-grows"',
        "unknown top-level",
    ),
    ('[[question]]\nid = "variance-grows"', '[[question]\nid = "variance-grows"', "not valid TOML"),
]


@pytest.mark.parametrize("old, new, message", BREAKS, ids=[b[2] for b in BREAKS])
def test_each_rule_refuses_a_file_that_breaks_it(old, new, message):
    assert old in GOOD
    with pytest.raises(quiz.QuestionError, match=re.escape(message)):
        parse(GOOD.replace(old, new, 1))


def test_too_few_options_is_refused():
    two = GOOD.replace(
        '[[question.option]]\ntext = "Because of the scale `1/√d`."\nfeedback = "The scale removes the growth."\n',
        "",
    )
    with pytest.raises(quiz.QuestionError, match="needs 3 to 6 options, has 2"):
        parse(two)


def test_check_values_asserts_the_printed_number():
    grows = parse()[0]
    quiz.check_values(grows, {"ratio": 3.43})
    with pytest.raises(AssertionError, match=r"printed '3.4' but the chapter computes 3.46"):
        quiz.check_values(grows, {"ratio": 3.46})
    with pytest.raises(TypeError, match=r"needs the computed value\(s\) \['ratio'\]"):
        quiz.check_values(grows, {})
    with pytest.raises(TypeError, match=r"unknown value name\(s\) \['ratios'\]"):
        quiz.check_values(grows, {"ratio": 3.4, "ratios": 1})
    with pytest.raises(TypeError, match="ratio must be a number"):
        quiz.check_values(grows, {"ratio": "many"})


def test_a_percentage_is_checked_as_printed():
    q = parse(
        GOOD.replace('ratio = "3.4"', 'share = "41%"').replace("ratio is 3.4", "share is 41%")
    )[0]
    quiz.check_values(q, {"share": 0.412})
    with pytest.raises(AssertionError):
        quiz.check_values(q, {"share": 0.416})


def test_the_html_holds_every_feedback_hidden_and_the_maths_for_mathjax():
    grows, row, weight, look = parse()
    page = quiz.question_html(grows)
    assert page.count('class="attnbook-quiz-fb"') == 3 and page.count(" hidden>") >= 3
    assert '<span class="math notranslate nohighlight">\\(q^\\top k\\)</span>' in page
    assert "<em>d</em>" in page and "<code>1/√d</code>" in page
    assert 'href="other-page.html#sec-b"' in page  # relative on the website
    assert 'href="https://' in quiz.question_html(grows, quiz.SITE)  # absolute from a notebook
    assert 'type="radio"' in page and 'type="checkbox"' in quiz.question_html(row)
    numeric = quiz.question_html(weight)
    assert 'data-answer="0.25"' in numeric and 'data-value="0.75"' in numeric
    assert 'data-fb="otherwise"' in numeric and 'inputmode="decimal"' in numeric


def test_text_is_escaped_not_trusted():
    q = parse(GOOD.replace("Because the softmax sharpens.", "<script>alert(1)</script> sharpens"))[
        0
    ]
    page = quiz.question_html(q)
    assert "<script>alert" not in page and "&lt;script&gt;" in page


def test_the_websites_fragment_carries_its_script_and_fetches_nothing():
    grows = parse()[0]
    html = quiz.fragment(grows)
    assert html.count("<script>") == 1 and "function wire(" in html
    assert not re.search(r"^export ", html.split("<script>")[1], re.M)
    assert not re.search(r"""(?:src|href)=["']?(?:https?:)?//""", html.split("<script>")[0])
    assert "fetch(" not in html and "import(" not in html


def test_ask_checks_its_key_and_values(monkeypatch):
    questions = parse()
    monkeypatch.setattr(quiz._data, "load", lambda chapter: questions)
    monkeypatch.setenv("ATTNBOOK_STATIC", "1")
    shown = quiz.ask("chap/far-weight")
    data, metadata = shown._repr_mimebundle_()
    assert data["text/plain"].startswith("Check your understanding")
    assert "attnbook-quiz" in data["text/html"] and metadata["text/html"]["attnbook_explorer"]
    with pytest.raises(ValueError, match="has no question 'nope'"):
        quiz.ask("chap/nope")
    with pytest.raises(ValueError, match="key must be 'chapter/id'"):
        quiz.ask("weight")
    with pytest.raises(TypeError, match="needs the computed value"):
        quiz.ask("chap/variance-grows")


def test_ask_in_a_kernel_is_a_widget_with_the_same_text(monkeypatch):
    questions = parse()
    monkeypatch.setattr(quiz._data, "load", lambda chapter: questions)
    monkeypatch.delenv("ATTNBOOK_STATIC", raising=False)
    widget = quiz.ask("chap/far-weight")
    data, _ = widget._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in data
    assert data["text/plain"] == quiz.question_text(questions[2])
    assert "attnbook-quiz" in widget.html and "export default" in widget._esm


def test_unknown_chapter_is_named():
    with pytest.raises(ValueError, match="has no question file"):
        quiz.load("no-such-chapter")
    with pytest.raises(ValueError, match="chapter must be"):
        quiz.load("../etc")


def test_plain_text_makes_tex_readable_like_the_script():
    # The same cases as tests/live/quiz.test.mjs's readableTex.
    assert quiz.plain(r"$\mathbf q^\top \mathbf k / \sqrt{d}$") == "qᵀ k / √d"
    assert quiz.plain(r"$\frac{1}{\sqrt{d}}$") == "(1)/(√d)"
    assert quiz.plain(r"$a \le b \cdot c \to \infty$") == "a ≤ b · c → ∞"
    assert quiz.plain(r"**Big** $\mathrm{softmax}(x)_i$") == "Big softmax(x)_i"
