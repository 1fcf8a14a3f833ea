"""Tests of chapter 13's live explorer, Python side (attnbook.widgets.live.dates).

The JavaScript forward pass is checked against PyTorch by `node --test
tests/live/` (dates.test.mjs, runtime_dates.test.mjs) and in headless Chromium
by tests/test_live_browser_dates.py. `make test-widgets-ipyw7` can run this
file under ipywidgets 7.7.1 (.venv-colab): nothing here needs ipywidgets 8.
"""

import base64
import json
import shutil
import subprocess
from pathlib import Path

import ipywidgets
import numpy as np
import pytest
import torch

from attnbook import dates, seq2seq
from attnbook.widgets import live
from attnbook.widgets.live import _pack_dates
from attnbook.widgets.live.dates import load_chapter_weights

DATES_JS = Path(live.__file__).with_name("dates.js")


def test_shipped_weights_are_the_chapters_seed_0_models():
    """dates.f16 / dates_no_attention.f16 are seed 0 of `make seq2seq-runs` (400 and
    800 steps): on the 1,000 held-out dates they score what the record says."""
    runs = seq2seq.load_runs()
    record = runs["runs"][0]
    test = dates.DateTask(seed=0).test_batch(1000)
    for kind, steps in (("attention", 400), ("no_attention", 800)):
        weights, arch = load_chapter_weights(kind)
        assert arch["source"].endswith(str(_pack_dates.CHAPTER_SETUP[kind]))
        assert len(weights) == 2 * sum(int(np.prod(s)) for _, s in arch["tensors"])
        model = _pack_dates.unpack_gru_seq2seq(weights, arch)
        exact = seq2seq.evaluate(model, test)[0]
        key = "date_record" if kind == "attention" else "no_attention_record"
        stored = record[kind]["exact"][runs[key].index(steps)]
        # float16 rounding may flip a held-out date or two (measured: equal).
        assert abs(exact - stored) <= 0.003, (kind, exact, stored)


def test_pack_and_unpack_round_trip_to_float16():
    model = seq2seq.date_model(attention=True, seed=3)
    weights, arch = _pack_dates.pack_gru_seq2seq(model)
    assert len(weights) == 2 * sum(p.numel() for p in model.parameters())
    assert arch["source_symbols"] == dates.SOURCE_VOCAB.symbols and arch["max_len"] == 40
    back = _pack_dates.unpack_gru_seq2seq(weights, arch)
    for (name, a), (_, b) in zip(model.named_parameters(), back.named_parameters()):
        assert torch.equal(a.detach().half().float(), b.detach()), name
    with pytest.raises(ValueError, match=r"weights must hold 43148 float16 values"):
        _pack_dates.unpack_gru_seq2seq(weights[:-2], arch)
    plain = seq2seq.date_model(attention=False, seed=3)
    _, plain_arch = _pack_dates.pack_gru_seq2seq(plain)
    assert plain_arch["attention"] is False and plain_arch["attn_hiddens"] == 0


def test_pack_refuses_other_models_and_vocabularies():
    with pytest.raises(TypeError, match="model must be an attnbook.seq2seq.GRUSeq2Seq"):
        _pack_dates.pack_gru_seq2seq(torch.nn.Linear(2, 2))
    with pytest.raises(ValueError, match="model must read the date vocabularies"):
        _pack_dates.pack_gru_seq2seq(seq2seq.GRUSeq2Seq(20, 20))
    model = seq2seq.date_model(seed=1)
    with torch.no_grad():
        model.output.bias[0] = float("nan")
    with pytest.raises(ValueError, match="output.bias holds a NaN"):
        _pack_dates.pack_gru_seq2seq(model)
    with pytest.raises(ValueError, match="model must be a GRUSeq2Seq with attention"):
        live.dates_live(seq2seq.date_model(attention=False))
    with pytest.raises(ValueError, match="baseline must be a GRUSeq2Seq without attention"):
        live.dates_live(baseline=seq2seq.date_model(attention=True))
    with pytest.raises(TypeError, match="text must be a string"):
        live.dates_live(text=1999)
    with pytest.raises(ValueError, match="kind must be one of"):
        load_chapter_weights("transformer")


def test_read_source_keeps_the_vocabulary_and_max_len():
    assert _pack_dates.read_source("1999-03-03 (Wed.)") == {
        "text": "19990303 Wed",
        "unknown": ["-", "(", ".", ")"],
        "dropped": 0,
    }
    assert _pack_dates.read_source("   ")["text"] == ""
    assert _pack_dates.read_source("")["text"] == ""
    long = _pack_dates.read_source("1" * 45)
    assert long["text"] == "1" * 40 and long["dropped"] == 5
    with pytest.raises(TypeError, match="text must be a string"):
        _pack_dates.read_source(None)


@pytest.mark.parametrize(
    ("text", "fmt", "reason"),
    [
        ("25 November 2026", "long", "ok"),
        ("nov 25, 2026", "short", "ok"),
        ("25/11/26", "numeric", "ok"),
        ("Wednesday 25 Nov 2026", "weekday", "ok"),
        ("Tuesday 25 Nov 2026", "weekday", "weekday"),
        ("25 November 2077", "long", "range"),
        ("30/02/26", "numeric", "no date"),
        ("05 November 2026", "long", "spelling"),
        ("1999/3/3", None, "format"),
        ("march 3rd 99", None, "format"),
        ("25 november 2026", "long", "spelling"),
        ("Nov 25, 2026", "short", "spelling"),
        ("WEDNESDAY 25 nov 2026", "weekday", "spelling"),
        ("monday 25 Nov 2026", "weekday", "weekday"),
        ("3 March 1999 ", "long", "spelling"),
        (" 3 March 1999", "long", "spelling"),
        ("3  March 1999", "long", "spelling"),
        ("  3 March   2077 ", "long", "range"),
        ("3March 1999", None, "format"),
    ],
)
def test_training_format(text, fmt, reason):
    verdict = _pack_dates.training_format(text)
    assert (verdict["format"], verdict["reason"]) == (fmt, reason)


def test_spaces_and_case_give_the_spelling_verdict_with_the_date():
    """Both models read "3 March 1999 " as 1999-03-03: the verdict names the date
    (so the page marks the answers) and how the training data write it."""
    for text in ("3 March 1999 ", " 3 March 1999", "3  March 1999", "3 march 1999"):
        assert _pack_dates.training_format(text) == {
            "format": "long",
            "date": "1999-03-03",
            "reason": "spelling",
            "written": "3 March 1999",
        }
    # ASCII case only: the Kelvin sign is no "k", the long s no "s".
    assert _pack_dates.training_format("Wednesday 25 Nov 2026".replace("s", "\u017f"))[
        "reason"
    ] == ("format")
    with pytest.raises(TypeError, match="text must be a string"):
        _pack_dates.training_format(None)


def test_arch_carries_the_training_years_and_longest_date():
    for kind in _pack_dates.CHAPTER_SETUP:
        _, arch = load_chapter_weights(kind)
        assert arch["years"] == [dates.FIRST_DATE.year, dates.LAST_DATE.year] == [1950, 2049]
        assert arch["longest_training"] == _pack_dates.longest_training() == 21
        # dates.json is what pack_gru_seq2seq writes for the shipped weights.
        weights, arch = load_chapter_weights(kind)
        repacked, fresh = _pack_dates.pack_gru_seq2seq(
            _pack_dates.unpack_gru_seq2seq(weights, arch)
        )
        assert repacked == weights and fresh == {k: v for k, v in arch.items() if k != "source"}


def test_read_source_reads_nfc():
    # "e" + combining acute is one "é" (not in the vocabulary): left out whole.
    assert _pack_dates.read_source("3 Marche\u0301 1999") == {
        "text": "3 March 1999",
        "unknown": ["\u00e9"],
        "dropped": 0,
    }


def test_every_training_format_of_every_test_date_is_recognised():
    task = dates.DateTask(seed=0)
    test = task.test_batch(400)
    for date, text, fmt in zip(task.test_dates, test.texts, test.formats):
        assert _pack_dates.training_format(text) == {
            "format": fmt,
            "date": date.isoformat(),
            "reason": "ok",
            "written": text,
        }


def test_run_is_the_models_greedy_decoding():
    model = seq2seq.date_model(seed=4)
    out = _pack_dates.run(model, "17/11/72")
    assert out["answer"] == seq2seq.rewrite(model, ["17/11/72"])[0]
    tokens, weights = model.greedy(*dates.encode_sources(["17/11/72"]), 10)
    assert out["tokens"] == tokens[0].tolist()
    assert torch.allclose(out["weights"], weights[0])
    assert out["logits"].shape == (10, 12)
    with pytest.raises(ValueError, match="text must be a non-empty string"):
        _pack_dates.run(model, "")


def test_widget_carries_both_models_and_the_text():
    widget = live.dates_live(text="3 March 1999")
    assert isinstance(widget, ipywidgets.DOMWidget)
    weights, arch = load_chapter_weights("attention")
    plain, _ = load_chapter_weights("no_attention")
    assert widget.weights == weights and widget.plain_weights == plain
    assert widget.arch["attention"] and not widget.plain_arch["attention"]
    assert "source" not in widget.arch
    state = widget.get_state()
    assert {"weights", "arch", "plain_weights", "plain_arch", "text", "_esm"} <= set(state)
    out, base = widget.forward()
    assert out["answer"] == base["answer"] == "1999-03-03"
    assert widget.verdict()["reason"] == "ok"
    data, _ = widget._repr_mimebundle_()
    assert data["text/plain"] == "DatesLive(text='3 March 1999', read='3 March 1999')"
    assert data["application/vnd.jupyter.widget-view+json"]["model_id"] == widget.model_id
    assert base64.b64decode(data["image/png"])[:4] == b"\x89PNG"
    assert live.dates_live().text == "Sunday 23 Feb 1969"


def test_a_model_the_reader_trains_can_be_handed_over():
    model = seq2seq.date_model(seed=2)
    widget = live.dates_live(model, text="17/11/72")
    out, _ = widget.forward()
    assert out["answer"] == seq2seq.rewrite(model, ["17/11/72"])[0]  # untrained, float16
    zero_start = seq2seq.date_model(seed=2, bridge=False)
    widget.set_model(zero_start, baseline=seq2seq.date_model(attention=False, seed=2))
    assert widget.arch["bridge"] is False and widget.plain_arch["attention"] is False


def test_summary_and_bad_input():
    widget = live.dates_live(text="3 March 1999")
    summary = widget.summary()
    assert "training formats (long, like" in summary and "writes 1999-03-03" in summary
    assert "Largest weight of each output character: 1 on" in summary
    odd = live.dates_live(text="1999/3/3").summary()
    assert "Outside the training formats" in odd
    for text in ("", "   ", "???"):
        blank = live.dates_live(text=text)
        assert blank.forward() == (None, None)
        assert "no picture" in blank.summary()
        with pytest.raises(ValueError, match="nothing to draw"):
            blank.png()
        assert "image/png" not in blank._repr_mimebundle_()[0]


# One input for each verdict, and words that only its sentence has.
VERDICT_INPUTS = {
    "ok": ("3 March 1999", "training formats (long, like “25 November 2026”)"),
    "format": ("1999/3/3", "Outside the training formats: the models only ever saw"),
    "no date": ("31 February 1999", "names no real day"),
    "range": ("3 March 2077", "outside the years 1950-2049"),
    "weekday": ("Monday 23 Feb 1969", "the weekday is wrong for 1969-02-23"),
    "spelling": ("3 march 1999", "the training data write this date “3 March 1999”"),
}


@pytest.mark.parametrize("reason", list(VERDICT_INPUTS))
def test_the_alt_text_names_each_verdict_as_the_page_does(reason):
    text, words = VERDICT_INPUTS[reason]
    widget = live.dates_live(text=text)
    assert widget.verdict()["reason"] == reason
    sentence = _pack_dates.verdict_text(widget.verdict())
    assert words in sentence
    assert sentence in widget.summary()
    others = [
        _pack_dates.verdict_text(live.dates_live(text=t).verdict())
        for t, _ in VERDICT_INPUTS.values()
    ]
    assert sum(other in widget.summary() for other in others) == 1
    with pytest.raises(ValueError, match="verdict must be"):
        _pack_dates.verdict_text({"reason": "empty"})


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node (Debian's nodejs)")
def test_the_verdict_words_are_the_pages():
    """verdict_text says what dates.js's verdictText writes, for every verdict."""
    texts = [text for text, _ in VERDICT_INPUTS.values()] + ["Tuesday 25 Nov 2026", "30/02/26"]
    script = (
        f"import {{ trainingFormat, verdictText }} from {json.dumps(DATES_JS.as_uri())};\n"
        "const years = JSON.parse(process.argv[1]);\n"
        "const texts = JSON.parse(process.argv[2]);\n"
        "console.log(JSON.stringify(texts.map((t) => verdictText(t, trainingFormat(t, years), years))));\n"
    )
    years = json.dumps(live.dates_live().arch["years"])
    done = subprocess.run(
        ["node", "--input-type=module", "-e", script, years, json.dumps(texts)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    page = json.loads(done.stdout)
    assert page == [_pack_dates.verdict_text(_pack_dates.training_format(t)) for t in texts]


def test_the_page_starts_from_both_models_and_the_text():
    # The fragment carries widget._state() (test_live.py checks that for the four).
    widget = live.dates_live()
    state = widget._state()
    assert base64.b64decode(state["weights"]) == widget.weights
    assert base64.b64decode(state["plain_weights"]) == widget.plain_weights
    assert state["plain_arch"]["attention"] is False and state["text"] == "Sunday 23 Feb 1969"
