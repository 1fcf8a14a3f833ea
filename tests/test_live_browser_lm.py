"""Chapter 10's live explorer in headless Chromium, offline: a typed prompt, read back
from the page's data attributes, equals PyTorch on the same weights: the logits
and attention of the last position, the filtered next-character distribution
(attnbook.sampling.next_token_probs), the greedy continuation (lm.generate) and
the sampled one (PyTorch's distributions at the page's seeded numbers).

The harness and the tests every explorer runs: tests/live_harness.py.
"""

from __future__ import annotations

import pytest
import torch

from attnbook import sampling
from attnbook.widgets import live
from attnbook.widgets.live.lm import CONTINUE, continuation, knobs, run
from tests import live_harness as harness
from tests.live_harness import *  # noqa: F403 (the shared tests, collected here)

TYPED = "Attention is "


def result(page) -> dict:
    """The numbers, notes and settings the explorer shows, once its continuation
    (written in a task after each redraw of the next-character view) is there."""
    page.wait_for_function(
        """() => { const ds = document.querySelector('.attnbook-live-lm .attnbook-live-result').dataset;
                   return ds.updates && ds.continued === ds.updates; }"""
    )
    return page.evaluate(
        """() => {
            const host = document.querySelector('.attnbook-live-lm');
            const ds = host.querySelector('.attnbook-live-result').dataset;
            const note = host.querySelector('.attnbook-live-note');
            const out = {};
            for (const k of ['ids', 'logits', 'probs', 'attention', 'continuation', 'uniforms', 'settings'])
                out[k] = JSON.parse(ds[k]);
            return {...out, updates: Number(ds.updates),
                    note: note.hidden ? '' : note.textContent,
                    noteShown: !note.hidden && note.getBoundingClientRect().height > 0,
                    status: host.querySelector('[role=status]').textContent,
                    shown: host.querySelector('.attnbook-live-continuation').textContent};
        }"""
    )


def type_into(page, text: str) -> dict:
    harness.retype(page, ".attnbook-live-lm textarea", text)
    return result(page)


def set_control(page, name: str, value) -> dict:
    """Set the control whose id ends in ``name`` as a reader would, with its event."""
    page.evaluate(
        """([name, value]) => {
            const el = document.querySelector(`.attnbook-live-lm [id$="-${name}"]`);
            el.value = String(value);
            el.dispatchEvent(new Event(el.tagName === 'SELECT' ? 'change' : 'input'));
        }""",
        [name, value],
    )
    return result(page)


def check_against_pytorch(shown: dict, weights: bytes, arch: dict) -> float:
    """Largest difference between the page's numbers and PyTorch's; asserts the tolerances
    and that the continuation is the one PyTorch computes."""
    ids = shown["ids"]
    logits, attention = run(weights, arch, ids)
    worst = float((torch.tensor(shown["logits"]) - logits[-1]).abs().max())
    assert worst < 1e-4, f"logits differ by {worst}"
    for block in range(arch["num_layers"]):
        for head in range(arch["num_heads"]):
            drawn = torch.tensor(shown["attention"][block][head])
            diff = float((drawn - attention[block][head][-1]).abs().max())
            assert diff < 1e-5, f"block {block} head {head} differs by {diff}"
    s = shown["settings"]
    top_k, top_p = knobs(arch["vocab_size"], s["topK"], s["topP"])
    probs = sampling.next_token_probs(logits[-1], s["temperature"], top_k, top_p)
    page_probs = torch.tensor(shown["probs"], dtype=torch.float64)
    assert torch.equal(page_probs > 0, probs > 0), "the kept characters differ"
    assert float((page_probs - probs).abs().max()) < 1e-4
    steps = min(CONTINUE, arch["max_len"] - len(ids))
    expected = continuation(
        weights,
        arch,
        ids,
        steps,
        greedy=s["greedy"],
        temperature=s["temperature"],
        top_k=s["topK"],
        top_p=s["topP"],
        seed=s["seed"],
    )
    if not s["greedy"]:
        assert shown["uniforms"] == pytest.approx(expected["uniforms"], abs=1e-15)
        assert expected["margin"] > 1e-6  # a draw this far from a boundary is exact
    assert shown["continuation"] == expected["ids"]
    assert shown["shown"] == "".join(arch["chars"][i] for i in expected["ids"])
    return worst


def drive(page, state: dict) -> None:
    weights, arch = state["weights"], state["arch"]
    assert weights == live.load_lm_weights()[0]  # the chapter's model is the checkpoint
    start = result(page)
    assert start["ids"] and start["note"] == "" and len(start["status"]) > 60
    check_against_pytorch(start, weights, arch)

    shown = type_into(page, TYPED)
    assert shown["ids"] == [arch["chars"].index(c) for c in TYPED]
    assert shown["updates"] >= start["updates"] + len(TYPED)  # one redraw a keystroke
    check_against_pytorch(shown, weights, arch)

    # The controls: temperature, top-k, top-p, block and head, a sampled continuation.
    shown = set_control(page, "temperature", 0.5)
    assert shown["settings"]["temperature"] == 0.5
    check_against_pytorch(shown, weights, arch)
    shown = set_control(page, "topk", 5)
    assert sum(p > 0 for p in shown["probs"]) == 5 and "keeps 5 characters" in shown["status"]
    shown = set_control(page, "topk", "")  # an empty box: no top-k, not k = 1
    assert shown["settings"]["topK"] is None and all(p > 0 for p in shown["probs"])
    shown = set_control(page, "topk", 5)
    shown = set_control(page, "topp", 0.6)
    check_against_pytorch(shown, weights, arch)
    set_control(page, "block", 1)
    shown = set_control(page, "head", 3)
    assert "Block 1, head 3" in shown["status"]
    set_control(page, "mode", "sample")
    shown = set_control(page, "seed", 7)
    assert shown["settings"]["greedy"] is False and "seed 7" in shown["status"]
    check_against_pytorch(shown, weights, arch)
    shown = set_control(page, "temperature", 1.3)
    check_against_pytorch(shown, weights, arch)
    set_control(page, "mode", "greedy")
    set_control(page, "topk", arch["vocab_size"])
    set_control(page, "topp", 1)
    shown = set_control(page, "temperature", 1)
    assert shown["settings"]["topK"] is None and shown["settings"]["topP"] is None

    # Bad input: a visible note in plain words, never a silent wrong picture.
    shown = type_into(page, "café — ok")
    assert shown["noteShown"] and "“é”" in shown["note"] and "“—”" in shown["note"]
    assert shown["ids"] == [arch["chars"].index(c) for c in "caf  ok"]
    check_against_pytorch(shown, weights, arch)
    page.locator(".attnbook-live-lm textarea").fill("cafe\u0301\tok")  # NFC: one "é"; a tab
    shown = result(page)
    assert "“é”" in shown["note"] and "U+0009" in shown["note"] and "U+0301" not in shown["note"]
    assert shown["ids"] == [arch["chars"].index(c) for c in "cafok"]
    shown = type_into(page, "éé")
    assert shown["ids"] == [] and shown["noteShown"] and "at least one character" in shown["note"]
    assert shown["logits"] == [] and shown["status"] == "No prompt: nothing to show."
    page.locator(".attnbook-live-lm textarea").fill("")  # empty, by deletion
    shown = result(page)
    assert shown["ids"] == [] and "at least one character" in shown["note"]
    long_text = "the keys and values " * 8  # 160 characters
    page.locator(".attnbook-live-lm textarea").fill(long_text)
    page.locator(".attnbook-live-lm textarea").press("End")
    page.keyboard.type("a")
    shown = result(page)
    assert len(shown["ids"]) == arch["max_len"] and "the last 128" in shown["note"]
    assert shown["continuation"] == [] and "no continuation" in shown["note"]
    check_against_pytorch(shown, weights, arch)
    shown = type_into(page, "The query ")
    assert shown["note"] == ""
    check_against_pytorch(shown, weights, arch)


def show_note(page) -> None:
    type_into(page, "naïve")
    assert page.locator(".attnbook-live-note").get_attribute("aria-live") == "polite"


EXPLORER = harness.Explorer(
    host=".attnbook-live-lm",
    page="book/causal-language-model.html",
    widget=live.lm_live,
    drive=drive,
    show_note=show_note,
    fits="input,select,textarea,label,table,[role=status]",
)


def test_fragment_is_labelled_and_keyboard_reachable(browser, fragment_page):
    with harness.open_fragment(browser, fragment_page, EXPLORER) as offline:
        page = offline.page
        harness.assert_labelled(page, EXPLORER)
        assert harness.tab_through(page, 8) == [
            "TEXTAREA:textarea",
            "INPUT:range",
            "INPUT:number",
            "INPUT:range",
            "SELECT:select-one",
            "SELECT:select-one",
            "SELECT:select-one",
            "INPUT:number",
        ]
        # The temperature from the keyboard: one step of 0.01 a key press.
        page.locator(".attnbook-live-lm input[type=range]").first.focus()
        page.keyboard.press("ArrowRight")
        assert result(page)["settings"]["temperature"] == pytest.approx(1.01)


@pytest.mark.parametrize("width", [1280, 390])
def test_fragment_fits_desktop_and_phone(browser, fragment_page, width):
    with harness.open_at_width(browser, fragment_page, EXPLORER, width) as offline:
        page = offline.page
        table = page.evaluate(
            "document.querySelector('.attnbook-live-lm table').getBoundingClientRect().width"
        )
        assert table > 250
        assert type_into(page, "The key")["ids"]  # the field is usable
