"""The concept questions on the built website, answered in headless Chromium, offline.

For every question of every chapter: each option (or known wrong number, or
any other number) shows its own feedback and verdict, the right answer says
"Right.", a "predict, then look" question locks the prediction, says what to
look at and then reveals the answer. Nothing is fetched from outside the local
server, nothing is logged as an error, axe-core finds no serious or critical
violation with feedback shown (light and dark), and at 390 px no question
scrolls the page sideways. The questions expected on each page are the
library's (``attnbook.quiz``), in the file's order.
"""

from __future__ import annotations

import json

import pytest

from attnbook import quiz
from tests.test_reading import DESKTOP, PHONE, blocking_violations
from tools.browser import Offline
from tools.site import ROOT, require_site, serve


@pytest.fixture(scope="module")
def site_url():
    with serve(require_site()) as base:
        yield base


def shown(root) -> dict:
    """The verdict and which feedback blocks are visible."""
    return root.evaluate(
        """root => ({
            verdict: root.querySelector('.attnbook-quiz-result').textContent,
            notes: [...root.querySelectorAll('.attnbook-quiz-fb')]
                .map((n, i) => n.hidden ? null : i).filter(i => i !== null),
            look: !!root.querySelector('.attnbook-quiz-look') &&
                !root.querySelector('.attnbook-quiz-look').hidden,
        })"""
    )


def pick(root, indices):
    inputs = root.locator(".attnbook-quiz-option input")
    for i in range(inputs.count()):
        if inputs.nth(i).is_checked() != (i in indices):
            inputs.nth(i).click()


def answer_choice(root, q: quiz.Question):
    check = root.locator(".attnbook-quiz-check")
    check.click()
    assert "Pick" in shown(root)["verdict"], f"{q.key}: no pick, no verdict"
    for i in range(len(q.options)):
        pick(root, [i])
        check.click()
        now = shown(root)
        assert now["notes"] == [i], f"{q.key}: option {i} shows feedback {now['notes']}"
        if q.right == (i,):
            assert now["verdict"] == "Right.", f"{q.key}: the key {i} is not called right"
        else:
            assert now["verdict"] != "Right.", f"{q.key}: wrong option {i} called right"
    pick(root, list(q.right))
    check.click()
    assert shown(root)["verdict"] == "Right.", f"{q.key}: the key is not called right"


def answer_numeric(root, q: quiz.Question):
    box = root.locator(".attnbook-quiz-number input")
    notes = 1 + len(q.wrong) + 1  # right, the known wrong numbers, any other
    tries = [(f"{q.answer:.15g}", 0, "Right.")]  # every digit: 16777216 is not 1.67772e+07
    tries += [(f"{w.value:.15g}", 1 + j, "Not quite.") for j, w in enumerate(q.wrong)]
    far = max([abs(q.answer)] + [abs(w.value) for w in q.wrong]) * 7 + 13
    tries.append((f"{far:.15g}", notes - 1, "Not quite."))
    for text, note, verdict in tries:
        box.fill(text)
        box.press("Enter")  # the keyboard path
        now = shown(root)
        assert (now["notes"], now["verdict"]) == ([note], verdict), f"{q.key}: typed {text}: {now}"
    box.fill("many")
    root.locator(".attnbook-quiz-check").click()
    assert "Type a number" in shown(root)["verdict"] and shown(root)["notes"] == []


def answer_predict(root, q: quiz.Question, right: bool):
    picks = list(q.right) if right else [next(i for i in range(len(q.options)) if i not in q.right)]
    pick(root, picks)
    assert not shown(root)["look"]
    root.locator(".attnbook-quiz-check").click()
    now = shown(root)
    assert now["look"] and now["notes"] == [], f"{q.key}: look not shown, or feedback too early"
    assert root.locator(".attnbook-quiz-option input").first.is_disabled()
    root.locator(".attnbook-quiz-reveal").click()
    now = shown(root)
    expected = sorted(set(picks) | set(q.right))
    assert now["notes"] == expected, f"{q.key}: revealed {now['notes']}, expected {expected}"
    assert (now["verdict"] == "Right.") == right, f"{q.key}: {now['verdict']}"


def chapters_with_questions() -> list[str]:
    return quiz.chapters()


@pytest.mark.parametrize("chapter", chapters_with_questions())
def test_every_question_answers_right_and_wrong_offline(browser, site_url, chapter):
    questions = quiz.load(chapter)
    with Offline(browser, viewport=DESKTOP) as offline:
        offline.page.goto(f"{site_url}/book/{chapter}.html", wait_until="load")
        roots = offline.page.locator(".attnbook-quiz")
        keys = [roots.nth(i).get_attribute("data-key") for i in range(roots.count())]
        assert keys == [q.key for q in questions], f"{chapter}: the page's questions {keys}"
        for i, q in enumerate(questions):
            root = roots.nth(i)
            if q.kind == "choice":
                answer_choice(root, q)
            elif q.kind == "numeric":
                answer_numeric(root, q)
            else:
                answer_predict(root, q, right=i % 2 == 0)
        assert offline.blocked == [], f"{chapter}: requests left the page"
        assert offline.errors == [], f"{chapter}: errors {offline.errors}"


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_answered_questions_pass_axe(browser, site_url, scheme):
    """axe on a page whose questions all show feedback (the site-wide axe test sees
    them unanswered)."""
    chapter = "scoring-functions" if "scoring-functions" in quiz.chapters() else quiz.chapters()[0]
    with Offline(browser, viewport=DESKTOP, color_scheme=scheme) as offline:
        offline.page.goto(f"{site_url}/book/{chapter}.html", wait_until="load")
        offline.page.evaluate(
            """() => document.querySelectorAll('.attnbook-quiz').forEach(root => {
                const input = root.querySelector('input');
                if (input.type === 'text') input.value = '12345'; else input.click();
                root.querySelector('.attnbook-quiz-check').click();
                const reveal = root.querySelector('.attnbook-quiz-reveal');
                if (reveal && !reveal.hidden) reveal.click();
            })"""
        )
        assert offline.page.locator(".attnbook-quiz-fb:not([hidden])").count() > 0
        assert blocking_violations(offline.page) == []


@pytest.mark.parametrize("chapter", chapters_with_questions()[:3])
def test_phone_width_answers_without_sideways_scroll(browser, site_url, chapter):
    with Offline(browser, viewport=PHONE, is_mobile=True) as offline:
        offline.page.goto(f"{site_url}/book/{chapter}.html", wait_until="load")
        roots = offline.page.locator(".attnbook-quiz")
        for i in range(roots.count()):
            root = roots.nth(i)
            root.scroll_into_view_if_needed()
            box = root.bounding_box()
            assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"] + 1
            root.locator(".attnbook-quiz-check").click()  # shows "pick first"
        # measured as tests/test_reading.py measures every page at 390 px
        overflow = offline.page.evaluate(
            "document.scrollingElement.scrollWidth - window.innerWidth"
        )
        assert overflow <= 1, f"{chapter} scrolls sideways by {overflow}px at 390 px"


# The concept questions' fixture that both test trees share (lib/tests/quiz_fixture.toml):
# one question of each kind (single and several-answer choice, numeric, predict).
SAMPLE = (ROOT / "lib" / "tests" / "quiz_fixture.toml").read_text(encoding="utf-8")


def sample_page(tmp_path, replace=("", "")) -> list[quiz.Question]:
    questions = quiz.parse("chap", SAMPLE)
    body = "".join(quiz.fragment(q).replace(*replace) for q in questions)
    (tmp_path / "index.html").write_text(
        f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>q</title></head>"
        f"<body><main>{body}</main></body></html>",
        encoding="utf-8",
    )
    return questions


def answer_all(page, questions):
    roots = page.locator(".attnbook-quiz")
    assert roots.count() == len(questions)
    for i, q in enumerate(questions):
        if q.kind == "choice" and q.multiple:
            root = roots.nth(i)
            pick(root, [q.right[0]])
            root.locator(".attnbook-quiz-check").click()
            assert "more option" in shown(root)["verdict"], f"{q.key}: part of the key"
            pick(root, list(q.right))
            root.locator(".attnbook-quiz-check").click()
            assert shown(root)["verdict"] == "Right."
        elif q.kind == "choice":
            answer_choice(roots.nth(i), q)
        elif q.kind == "numeric":
            answer_numeric(roots.nth(i), q)
        else:
            answer_predict(roots.nth(i), q, right=False)


def test_every_kind_works_on_a_page_of_fragments(browser, tmp_path):
    questions = sample_page(tmp_path)
    with Offline(browser, viewport=PHONE) as offline, serve(tmp_path) as base:
        offline.page.goto(f"{base}/index.html")
        answer_all(offline.page, questions)
        # Keyboard only: Tab to the first option, Space to pick it, the arrow down to the
        # key (the radio buttons are one group), Tab, Enter to check.
        offline.page.reload()
        offline.page.keyboard.press("Tab")
        offline.page.keyboard.press("Space")
        for _ in range(questions[0].right[0]):
            offline.page.keyboard.press("ArrowDown")
        offline.page.keyboard.press("Tab")
        offline.page.keyboard.press("Enter")
        assert shown(offline.page.locator(".attnbook-quiz").first)["verdict"] == "Right."
        assert blocking_violations(offline.page) == []
    assert offline.blocked == [] and offline.errors == []


def test_a_broken_script_is_caught(browser, tmp_path):
    """The checks are not blind: a question whose feedback never shows fails them."""
    questions = sample_page(tmp_path, ("optionNote(i).hidden = false", "void 0"))
    with Offline(browser) as offline, serve(tmp_path) as base:
        offline.page.goto(f"{base}/index.html")
        with pytest.raises(AssertionError, match="shows feedback"):
            answer_choice(offline.page.locator(".attnbook-quiz").first, questions[0])


def test_the_anywidget_module_renders_as_jupyter_and_colab_call_it(browser, tmp_path, monkeypatch):
    """Jupyter and Colab import the widget's ``_esm`` and call ``render({model, el})``:
    here with a stand-in model serving the widget's ``html``, in a page without
    MathJax (as Colab's output frame), where the maths must read as text."""
    questions = quiz.parse("chap", SAMPLE)
    monkeypatch.delenv("ATTNBOOK_STATIC", raising=False)
    widgets = [quiz._widget.__getattr__("QuestionWidget")(q) for q in questions]
    (tmp_path / "quiz.js").write_text(widgets[0]._esm, encoding="utf-8")
    states = json.dumps([w.html for w in widgets])
    (tmp_path / "index.html").write_text(
        "<!doctype html><html lang='en'><head><meta charset='utf-8'><title>q</title></head>"
        "<body><main id='out'></main><script type='module'>"
        "import widget from './quiz.js';"
        f"for (const html of {states}) {{"
        "  const el = document.createElement('div'); document.getElementById('out').append(el);"
        "  widget.render({model: {get: name => html, on() {}}, el});"
        "}"
        "document.body.dataset.done = '1';</script></body></html>",
        encoding="utf-8",
    )
    with Offline(browser, viewport=PHONE) as offline, serve(tmp_path) as base:
        offline.page.goto(f"{base}/index.html")
        offline.page.wait_for_selector("body[data-done='1']")
        answer_all(offline.page, questions)
        first = offline.page.locator(".attnbook-quiz-prompt").first.inner_text()
        assert "Why does the variance of qᵀ k grow with d, the length" in first, first
        assert 'href="https://' in widgets[0].html  # links to the website from a notebook
    assert offline.blocked == [] and offline.errors == []
