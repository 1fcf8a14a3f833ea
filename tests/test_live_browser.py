"""The live explorer of chapter 11 in headless Chromium, offline: typed input, read
back from the page's data attributes, equals PyTorch's forward on the same weights.

The harness and the tests every explorer runs: tests/live_harness.py.
"""

from __future__ import annotations

import pytest
import torch

from attnbook.widgets import live
from attnbook.widgets.live.induction import run
from tests import live_harness as harness
from tests.live_harness import *  # noqa: F403 (the shared tests, collected here)

TYPED = "7 21 3 44 9 30 7 21 3 44"  # a segment of four tokens, repeated


def result(page) -> dict:
    """The numbers and notes the explorer shows now."""
    return page.evaluate(
        """() => {
            const host = document.querySelector('.attnbook-live');
            const ds = host.querySelector('.attnbook-live-result').dataset;
            const note = host.querySelector('.attnbook-live-note');
            const status = host.querySelector('[role=status]');
            return {tokens: JSON.parse(ds.tokens), logits: JSON.parse(ds.logits),
                    previous: JSON.parse(ds.previous), induction: JSON.parse(ds.induction),
                    predictions: JSON.parse(ds.predictions), updates: Number(ds.updates),
                    note: note.hidden ? '' : note.textContent,
                    noteShown: !note.hidden && note.getBoundingClientRect().height > 0,
                    status: status.textContent};
        }"""
    )


def type_into(page, text: str) -> dict:
    harness.retype(page, ".attnbook-live input[type=text]", text)
    return result(page)


def check_against_pytorch(shown: dict, weights: bytes, arch: dict, heads: dict) -> float:
    """Largest difference between the page's numbers and PyTorch's; asserts the tolerances."""
    tokens = shown["tokens"]
    logits, attention = run(weights, arch, tokens)
    logit_diff = (torch.tensor(shown["logits"]).reshape(logits.shape) - logits).abs().max()
    worst = float(logit_diff)
    assert logit_diff < 1e-4, f"logits differ by {logit_diff}"
    for key in ("previous", "induction"):
        layer, head = heads[key]
        drawn = torch.tensor(shown[key]).reshape(len(tokens), len(tokens))
        diff = (drawn - attention[layer][head]).abs().max()
        assert diff < 1e-5, f"{key} head differs by {diff}"
        worst = max(worst, float(diff))
    assert shown["predictions"] == logits.argmax(-1).tolist()
    return worst


def drive(page, state: dict) -> None:
    weights, arch, heads = state["weights"], state["arch"], state["heads"]
    start = result(page)
    assert start["tokens"] and start["note"] == "" and len(start["status"]) > 40
    check_against_pytorch(start, weights, arch, heads)

    shown = type_into(page, TYPED)
    assert shown["tokens"] == [int(t) for t in TYPED.split()]
    assert shown["updates"] > start["updates"] + len(TYPED) - 2  # one redraw a keystroke
    check_against_pytorch(shown, weights, arch, heads)
    assert shown["status"] != start["status"]

    # The query slider moves the announced row.
    slider = page.locator(".attnbook-live input[type=range]")
    slider.focus()
    page.keyboard.press("End")
    assert "Position 9 holds token 44" in result(page)["status"]

    # Bad input: a visible note in plain words, never a silent wrong picture.
    shown = type_into(page, "3 x 99 17")
    assert shown["tokens"] == [3, 17] and shown["noteShown"]
    assert "“x”" in shown["note"] and "“99”" in shown["note"] and "0 to 63" in shown["note"]
    check_against_pytorch(shown, weights, arch, heads)
    shown = type_into(page, "  ")
    assert shown["tokens"] == [] and shown["noteShown"] and "at least one" in shown["note"]
    assert shown["logits"] == [] and shown["status"] == "No tokens: nothing to show."
    shown = type_into(page, " ".join(str(i) for i in range(45)))
    assert len(shown["tokens"]) == 40 and "at most 40" in shown["note"]
    check_against_pytorch(shown, weights, arch, heads)

    # A random sequence with a repeat: 40 tokens, no note.
    page.locator(".attnbook-live button").click()
    shown = result(page)
    assert len(shown["tokens"]) == 40 and shown["note"] == ""
    check_against_pytorch(shown, weights, arch, heads)


EXPLORER = harness.Explorer(
    host=".attnbook-live",
    page="book/induction-heads.html",
    widget=live.induction_live,
    drive=drive,
    show_note=lambda page: type_into(page, "3 x 70 5"),
    fits="input,button,canvas,label,[role=status]",
)


def test_fragment_is_labelled_and_keyboard_reachable(browser, fragment_page):
    with harness.open_fragment(browser, fragment_page, EXPLORER) as offline:
        page = offline.page
        harness.assert_labelled(page, EXPLORER)
        reached = harness.tab_through(page, 5)
        assert reached[:3] == ["INPUT:text", "BUTTON:button", "INPUT:range"]
        for _ in range(4):
            page.keyboard.press("Shift+Tab")
        page.keyboard.press("Enter")  # the random-sequence button, from the keyboard
        assert len(result(page)["tokens"]) == 40


@pytest.mark.parametrize("width", [1280, 390])
def test_fragment_fits_desktop_and_phone(browser, fragment_page, width):
    with harness.open_at_width(browser, fragment_page, EXPLORER, width) as offline:
        page = offline.page
        canvases = page.evaluate(
            """() => [...document.querySelectorAll('.attnbook-live canvas')].map(el => {
                const r = el.getBoundingClientRect();
                return [r.left, r.top, r.width];
            })"""
        )
        assert all(w > 200 for _, _, w in canvases)
        if width == 1280:  # the two heads side by side
            (l0, t0, _), (l1, t1, _) = canvases
            assert abs(t0 - t1) < 40 and l1 > l0 + 200
        # The field is usable: typing still works.
        assert type_into(page, "1 2 3 1 2")["tokens"] == [1, 2, 3, 1, 2]


def test_two_fragments_of_the_same_state_each_run_in_their_own_place(browser, tmp_path):
    """A page showing the same explorer twice (the same state, so the same host
    id): each script starts the explorer in its own host, and each answers."""
    fragment = live.induction_live(text=TYPED).to_html()
    (tmp_path / "index.html").write_text(
        "<!doctype html><html lang='en'><head><meta charset='utf-8'><title>twice</title></head>"
        f"<body>{fragment}<p>between</p>{fragment}</body></html>",
        encoding="utf-8",
    )
    explorer = harness.Explorer(
        host=".attnbook-live", page="", widget=None, drive=None, show_note=None, fits=""
    )
    with harness.offline_page(browser, tmp_path, "index.html", explorer) as offline:
        page = offline.page
        hosts = page.locator(".attnbook-live-host")
        assert hosts.count() == 2
        for k in range(2):
            host = hosts.nth(k)
            assert "attnbook-live-running" in host.get_attribute("class")
            assert host.locator(".attnbook-live").count() == 1, f"host {k} holds no explorer"
        harness.retype(page, ".attnbook-live-host >> nth=1 >> input[type=text]", "5 6 5")
        shown = page.locator(".attnbook-live-result").evaluate_all(
            "(all) => all.map((r) => JSON.parse(r.dataset.tokens))"
        )
        assert shown == [_tokens(TYPED), _tokens("5 6 5")]


def _tokens(text: str) -> list[int]:
    return [int(t) for t in text.split()]
