"""Chapter 13's live explorer (a date of your own) in headless Chromium, offline:
typed dates, read back from the page's data attributes, give PyTorch's answers,
logits and attention weights on the same float16 weights.

The harness and the tests every explorer runs: tests/live_harness.py.
"""

from __future__ import annotations

import pytest
import torch

from attnbook.widgets import live
from attnbook.widgets.live._pack_dates import run, unpack_gru_seq2seq
from tests import live_harness as harness
from tests.live_harness import *  # noqa: F403 (the shared tests, collected here)

HOST = ".attnbook-live-dates"


def result(page) -> dict:
    """The numbers and notes the explorer shows now."""
    return page.evaluate(
        """(selector) => {
            const host = document.querySelector(selector);
            const ds = host.querySelector('.attnbook-live-result').dataset;
            const note = host.querySelector('.attnbook-live-note');
            return {text: ds.text, answer: ds.answer, plainAnswer: ds.plainAnswer,
                    tokens: JSON.parse(ds.tokens), plainTokens: JSON.parse(ds.plainTokens),
                    logits: JSON.parse(ds.logits), plainLogits: JSON.parse(ds.plainLogits),
                    weights: JSON.parse(ds.weights), reason: ds.reason,
                    updates: Number(ds.updates),
                    note: note.hidden ? '' : note.textContent,
                    noteShown: !note.hidden && note.getBoundingClientRect().height > 0,
                    mapShown: host.querySelector('.attnbook-live-map').getBoundingClientRect().height > 0,
                    verdict: host.querySelector('.attnbook-live-verdict').textContent,
                    answers: [...host.querySelectorAll('.attnbook-live-answer')].map(e => e.textContent),
                    status: host.querySelector('[role=status]').textContent};
        }""",
        HOST,
    )


def type_into(page, text: str) -> dict:
    harness.retype(page, f"{HOST} input[type=text]", text)
    return result(page)


def check_against_pytorch(shown: dict, state: dict) -> float:
    """Largest difference between the page's numbers and PyTorch's; asserts the tolerances."""
    worst = 0.0
    keys = {"tokens": "plainTokens", "answer": "plainAnswer", "logits": "plainLogits"}
    for prefix, weights, arch in (
        ("", state["weights"], state["arch"]),
        ("plain", state["plain_weights"], state["plain_arch"]),
    ):
        out = run(unpack_gru_seq2seq(weights, arch), shown["text"])
        assert shown[keys["tokens"] if prefix else "tokens"] == out["tokens"]
        assert shown[keys["answer"] if prefix else "answer"] == out["answer"]
        diff = (
            torch.tensor(shown[keys["logits"] if prefix else "logits"]).reshape(out["logits"].shape)
            - out["logits"]
        )
        assert diff.abs().max() < 1e-4, (
            f"{prefix or 'attention'} logits differ by {float(diff.abs().max())}"
        )
        worst = max(worst, float(diff.abs().max()))
        if out["weights"] is not None:
            drawn = torch.tensor(shown["weights"]).reshape(out["weights"].shape)
            wdiff = float((drawn - out["weights"]).abs().max())
            assert wdiff < 1e-5, f"attention weights differ by {wdiff}"
            worst = max(worst, wdiff)
    return worst


def drive(page, state: dict) -> float:
    start = result(page)
    assert start["text"] == state["text"] and start["note"] == "" and len(start["status"]) > 80
    worst = check_against_pytorch(start, state)

    typed = "3 March 1999"
    shown = type_into(page, typed)
    assert shown["text"] == typed and shown["reason"] == "ok" and shown["mapShown"]
    assert shown["updates"] > start["updates"] + len(typed) - 2  # one redraw a keystroke
    assert shown["answer"] == shown["plainAnswer"] == "1999-03-03"
    assert "right answer is 1999-03-03" in shown["verdict"]
    assert all("(right)" in a for a in shown["answers"])
    worst = max(worst, check_against_pytorch(shown, state))

    # Outside the training formats: said in plain words, both models still run.
    shown = type_into(page, "1999/3/3")
    assert shown["reason"] == "format" and shown["verdict"].startswith("Outside the training")
    worst = max(worst, check_against_pytorch(shown, state))
    shown = type_into(page, "3 March 2077")
    assert shown["reason"] == "range" and "1950-2049" in shown["verdict"]
    worst = max(worst, check_against_pytorch(shown, state))

    # Bad input: a visible note, never a silent wrong picture.
    shown = type_into(page, "1999-03-03")
    assert shown["text"] == "19990303" and shown["noteShown"] and "“-”" in shown["note"]
    worst = max(worst, check_against_pytorch(shown, state))
    shown = type_into(page, "   ")
    assert shown["text"] == "" and shown["noteShown"] and "Type a date" in shown["note"]
    assert shown["logits"] == [] and shown["status"] == "No input: nothing to show."
    assert not shown["mapShown"]  # no stale picture of the last date
    shown = type_into(page, "Wednesday 23 September 1998 or Thursday 24 September")
    assert len(shown["text"]) == 40 and "at most 40" in shown["note"]
    worst = max(worst, check_against_pytorch(shown, state))
    assert "the longest training date has 21" in shown["note"]
    # A space too many: a spelling of a training date, and both answers marked.
    shown = type_into(page, "3 March 1999 ")
    assert shown["reason"] == "spelling" and all("(right)" in a for a in shown["answers"])
    worst = max(worst, check_against_pytorch(shown, state))
    # A tab is named by its code point (fill: typing a Tab would move the focus).
    page.locator(f"{HOST} input[type=text]").fill("3\tMarch 1999")
    shown = result(page)
    assert shown["text"] == "3March 1999" and "U+0009" in shown["note"]
    note = page.locator(f"{HOST} .attnbook-live-note")
    assert note.get_attribute("aria-live") == "polite"

    # A suggestion button types its date.
    page.locator(f"{HOST} button", has_text="march 3rd 99").click()
    shown = result(page)
    assert shown["text"] == "march 3rd 99" and shown["note"] == ""
    worst = max(worst, check_against_pytorch(shown, state))
    return worst


def show_note(page) -> None:
    type_into(page, "3 Mar 1999 (Wed.)")


EXPLORER = harness.Explorer(
    host=HOST,
    page="book/cross-attention.html",
    widget=live.dates_live,
    drive=drive,
    show_note=show_note,
    fits="input,button,label,[role=status],.attnbook-live-strip",
    fallback_width=300,
)


def test_fragment_is_labelled_and_keyboard_reachable(browser, fragment_page):
    with harness.open_fragment(browser, fragment_page, EXPLORER) as offline:
        page = offline.page
        harness.assert_labelled(page, EXPLORER)
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.type") == "text"
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.textContent") == "3 March 1999"
        page.keyboard.press("Tab")
        page.keyboard.press("Enter")  # the second suggestion, from the keyboard
        assert result(page)["text"] == "1999/3/3"


@pytest.mark.parametrize("width", [1280, 390])
def test_fragment_fits_desktop_and_phone(browser, fragment_page, width):
    with harness.open_at_width(browser, fragment_page, EXPLORER, width) as offline:
        page = offline.page
        box = page.evaluate(
            """(selector) => {
                const host = document.querySelector(selector);
                const rect = el => el.getBoundingClientRect();
                const answers = [...host.querySelectorAll('.attnbook-live-answer')].map(rect);
                return {canvas: rect(host.querySelector('canvas')).width,
                        answers: answers.map(r => [r.left, r.top])};
            }""",
            HOST,
        )
        assert box["canvas"] > 200
        (l0, t0), (l1, t1) = box["answers"]
        if width == 1280:  # the two answers side by side
            assert abs(t0 - t1) < 5 and l1 > l0 + 200
        assert type_into(page, "17/11/72")["answer"] == "1972-11-17"
