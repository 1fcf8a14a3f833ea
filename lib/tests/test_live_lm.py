"""Tests of chapter 10's live explorer, Python side (attnbook.widgets.live.lm).

The JavaScript forward pass, filters and sampler are checked against PyTorch
by `node --test tests/live/` (make test-live-js) and in headless Chromium by
tests/test_live_browser_lm.py. `make test-widgets-ipyw7` runs this file again
under ipywidgets 7.7.1 (.venv-colab).
"""

import base64

import ipywidgets
import numpy as np
import pytest
import torch

from attnbook import lm, sampling
from attnbook.widgets import live
from attnbook.widgets.live import _pack_lm
from attnbook.widgets.live.lm import (
    CONTINUE,
    continuation,
    encode_prompt,
    knobs,
    load_lm_weights,
    run,
    seeded_uniforms,
)


@pytest.fixture(scope="module")
def shipped():
    weights, arch = load_lm_weights()
    arch.pop("source")
    return weights, arch


def test_shipped_weights_are_the_checkpoint_exactly(shipped):
    """lm.f16 is the chapter's checkpoint (make live-weights), bit for bit: the
    checkpoint stores float16, so packing it loses nothing."""
    weights, arch = shipped
    model, tokenizer = lm.load_checkpoint()
    fresh, fresh_arch = _pack_lm.pack_tiny_lm(model, tokenizer)
    assert fresh == weights and fresh_arch == arch
    assert len(weights) == 2 * 117064 and arch["chars"] == "".join(tokenizer.chars)


def test_pack_and_unpack_round_trip_to_float16():
    tokenizer = lm.CharTokenizer("abcab ")
    torch.manual_seed(1)
    model = lm.TinyLM(tokenizer.vocab_size, num_hiddens=8, num_heads=2, num_layers=1, max_len=6)
    weights, arch = _pack_lm.pack_tiny_lm(model, tokenizer)
    assert len(weights) == 2 * sum(p.numel() for p in model.parameters())
    back = _pack_lm.unpack_tiny_lm(weights, arch)
    for (name, a), (_, b) in zip(model.state_dict().items(), back.state_dict().items()):
        assert torch.equal(a.half().float(), b), name
    with pytest.raises(ValueError, match=r"weights must hold \d+ float16 values for this arch"):
        _pack_lm.unpack_tiny_lm(weights[:-2], arch)
    with pytest.raises(ValueError, match="arch must be a tiny-lm dict"):
        _pack_lm.unpack_tiny_lm(weights, {**arch, "model": "attention-only"})


def test_pack_refuses_other_models_and_mismatched_tokenizers():
    tokenizer = lm.CharTokenizer("abc")
    with pytest.raises(TypeError, match="model must be an attnbook.lm.TinyLM"):
        _pack_lm.pack_tiny_lm(torch.nn.Linear(2, 2), tokenizer)
    model = lm.TinyLM(4, num_hiddens=4, num_heads=1, num_layers=1, max_len=3)
    with pytest.raises(TypeError, match="tokenizer must be an attnbook.lm.CharTokenizer"):
        _pack_lm.pack_tiny_lm(model, "abcd")
    with pytest.raises(
        ValueError, match="tokenizer has 3 characters but the model's vocab_size is 4"
    ):
        _pack_lm.pack_tiny_lm(model, tokenizer)
    with torch.no_grad():
        model.output.bias[0] = float("inf")
    with pytest.raises(ValueError, match="output.bias holds a NaN or an infinity"):
        _pack_lm.pack_tiny_lm(model, lm.CharTokenizer("abcd"))


def test_encode_prompt_reads_like_the_page():
    chars = "\n abc"
    assert encode_prompt("ab c", chars, 10) == {"ids": [2, 3, 1, 4], "unknown": [], "dropped": 0}
    assert encode_prompt("aéb—éc", chars, 10) == {
        "ids": [2, 3, 4],
        "unknown": ["é", "—"],
        "dropped": 0,
    }
    assert encode_prompt("abcabc", chars, 4) == {"ids": [4, 2, 3, 4], "unknown": [], "dropped": 2}
    assert encode_prompt("", chars, 4) == {"ids": [], "unknown": [], "dropped": 0}


def test_encode_prompt_reads_the_composed_form_as_the_page_does():
    # "e" + a combining acute accent (U+0301) is one "é", as String.normalize("NFC") reads it
    chars = "\n abcef"
    expected = {"ids": [4, 2, 1], "unknown": ["\u00e9"], "dropped": 0}
    assert encode_prompt("ce\u0301a ", chars, 10) == expected
    assert encode_prompt("c\u00e9a ", chars, 10) == expected


def test_seeded_uniforms_lie_in_the_half_open_unit_interval():
    u = seeded_uniforms(0, 1000)
    assert all(0 < x <= 1 for x in u) and len(set(u)) == 1000
    assert seeded_uniforms(7, 5) == seeded_uniforms(7, 5) != seeded_uniforms(8, 5)
    # mulberry32's first number for seed 1 (Tommy Ettinger's reference output * 2**-32).
    assert abs((1 - seeded_uniforms(1, 1)[0]) - 0.6270739405881613) < 1e-16


def test_knobs_turn_the_page_controls_into_sampling_arguments():
    assert knobs(72, 72, 1.0) == (None, None)
    assert knobs(72, 5, 0.9) == (5, 0.9)
    assert knobs(72, None, None) == (None, None)
    with pytest.raises(ValueError, match="top_k must be an integer >= 1"):
        knobs(72, 0, None)


def test_greedy_continuation_is_lm_generate(shipped):
    weights, arch = shipped
    model, tokenizer = lm.load_checkpoint()
    ids = tokenizer.encode("Attention is ")
    expected = lm.generate(model, ids, CONTINUE)[len(ids) :].tolist()
    assert continuation(weights, arch, ids.tolist(), CONTINUE)["ids"] == expected


def test_sampled_continuation_draws_from_next_token_probs(shipped):
    """Each sampled character is the inverse of the cumulative distribution of
    sampling.next_token_probs, at the page's seeded number."""
    weights, arch = shipped
    model = _pack_lm.unpack_tiny_lm(weights, arch)
    ids = encode_prompt("The query ", arch["chars"], arch["max_len"])["ids"]
    out = continuation(
        weights, arch, ids, 12, greedy=False, temperature=1.3, top_k=8, top_p=0.9, seed=4
    )
    assert out["uniforms"] == seeded_uniforms(4, 12) and out["margin"] > 1e-6
    seq = list(ids)
    for token, u in zip(out["ids"], out["uniforms"]):
        with torch.no_grad():
            logits = model(torch.tensor([seq]))[0, -1]
        probs = sampling.next_token_probs(logits, 1.3, 8, 0.9)
        assert probs[token] > 0
        cdf = probs.cumsum(0)
        assert int((cdf < u * cdf[-1]).sum()) == token
        seq.append(token)


def test_widget_carries_weights_arch_text_and_settings(shipped):
    widget = live.lm_live(text="Each query ", temperature=0.7, top_k=5, block=1, head=2)
    assert isinstance(widget, ipywidgets.DOMWidget)
    weights, arch = shipped
    assert widget.weights == weights and widget.arch == arch
    assert (widget.temperature, widget.top_k, widget.top_p, widget.block, widget.head) == (
        0.7,
        5,
        None,
        1,
        2,
    )
    state = widget.get_state()
    assert {"weights", "arch", "text", "temperature", "top_k", "top_p", "_esm"} <= set(state)
    assert repr(widget) == "LMLive(layers=2, heads=4, width=64, vocab=72, 11 characters)"
    data, _ = widget._repr_mimebundle_()
    assert data["application/vnd.jupyter.widget-view+json"]["model_id"] == widget.model_id
    assert base64.b64decode(data["image/png"])[:4] == b"\x89PNG"


def test_settings_are_checked_with_clear_errors():
    with pytest.raises(TypeError, match="text must be a string"):
        live.lm_live(text=3)
    with pytest.raises(TypeError, match="model must be an attnbook.lm.TinyLM"):
        live.lm_live("a model")
    with pytest.raises(ValueError, match="model is given without its tokenizer"):
        live.LMLive(lm.load_checkpoint()[0])
    with pytest.raises(ValueError, match="temperature must be one of the slider's values"):
        live.lm_live(temperature=0)
    with pytest.raises(ValueError, match="temperature must be one of the slider's values"):
        live.lm_live(temperature=0.333)
    with pytest.raises(ValueError, match=r"top_p must lie in \(0, 1\]"):
        live.lm_live(top_p=1.5)
    with pytest.raises(ValueError, match="top_p must be a multiple of 0.01"):
        live.lm_live(top_p=0.905)
    with pytest.raises(ValueError, match=r"head must lie in \[0, 3\], got 4"):
        live.lm_live(head=4)
    with pytest.raises(TypeError, match="block must be an integer"):
        live.lm_live(block=0.5)
    with pytest.raises(ValueError, match="seed must be an integer >= 0"):
        live.lm_live(seed=-1)
    with pytest.raises(TypeError, match="unknown setting 'top'"):
        live.lm_live(top=3)


def test_next_probs_and_continuation_follow_the_settings():
    widget = live.lm_live(text="Attention is ")
    model, tokenizer = lm.load_checkpoint()
    with torch.no_grad():
        logits = model(tokenizer.encode("Attention is ")[None])[0, -1]
    assert torch.allclose(widget.next_probs(), torch.softmax(logits.double(), -1))
    widget.configure(temperature=0.5, top_k=3)
    probs = widget.next_probs()
    assert int((probs > 0).sum()) == 3
    assert torch.allclose(probs, sampling.next_token_probs(logits, 0.5, 3))
    greedy = widget.continuation()
    assert len(greedy["text"]) == CONTINUE and greedy["uniforms"] == []
    widget.configure(greedy=False, seed=11)
    sampled = widget.continuation()
    assert sampled["uniforms"] == seeded_uniforms(11, CONTINUE)
    # No room past max_len: a prompt of 100 known characters gets 28 more.
    widget.text = "a" * 100
    assert len(widget.continuation()["ids"]) == 28
    widget.text = "a" * 300
    assert widget.parsed()["dropped"] == 172 and widget.continuation()["ids"] == []


def test_empty_or_unknown_prompt_draws_no_picture():
    widget = live.lm_live(text="éé")
    assert widget.parsed() == {"ids": [], "unknown": ["é"], "dropped": 0}
    with pytest.raises(ValueError, match="no character the model knows"):
        widget.png()
    assert "shows a note" in widget.summary()
    data, _ = widget._repr_mimebundle_()
    assert "image/png" not in data


def test_a_model_the_reader_trains_can_be_handed_over():
    tokenizer = lm.CharTokenizer("abc ")
    torch.manual_seed(0)
    model = lm.TinyLM(tokenizer.vocab_size, num_hiddens=16, num_heads=2, num_layers=1, max_len=12)
    widget = live.lm_live(model, tokenizer, text="abc ab", head=1)
    assert widget.arch["num_layers"] == 1 and widget.arch["chars"] == " abc"
    logits, _ = run(widget.weights, widget.arch, widget.parsed()["ids"])
    with torch.no_grad():
        expected = model(tokenizer.encode("abc ab")[None])[0]
    assert (logits - expected).abs().max() < 0.05  # float16 weights
    widget.set_model(*lm.load_checkpoint())
    assert widget.arch["num_layers"] == 2 and widget.head == 1


def test_summary_describes_the_numbers():
    widget = live.lm_live(text="The query ", block=0, head=2)
    probs = widget.next_probs()
    best = widget.arch["chars"][int(probs.argmax())]
    text = widget.summary()
    assert text.startswith("The next-character distribution after a prompt of 10 characters")
    assert f"{best!r} {float(probs.max()):.2f}" in text and "Block 0, head 2" in text


def test_the_page_starts_from_the_settings_and_the_prompt():
    # The fragment carries widget._state() (test_live.py checks that for the four).
    widget = live.lm_live()
    state = widget._state()
    assert base64.b64decode(state["weights"]) == widget.weights
    assert state["text"] == widget.text and state["arch"] == widget.arch
    assert state["top_k"] is None and state["greedy"] is True


def test_run_gives_every_block_and_head(shipped):
    weights, arch = shipped
    logits, attention = run(weights, arch, [1, 2, 3])
    assert logits.shape == (3, 72) and len(attention) == 2 and attention[0].shape == (4, 3, 3)
    assert torch.allclose(attention[1].sum(-1), torch.ones(4, 3))
    assert np.isfinite(logits.numpy()).all()
