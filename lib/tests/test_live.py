"""Tests of the live explorers' Python side (attnbook.widgets.live).

The JavaScript forward pass is checked against PyTorch by `node --test
tests/live/` (make test-live-js) and in headless Chromium by
tests/test_live_browser.py. `make test-widgets-ipyw7` runs this file again
under ipywidgets 7.7.1 (.venv-colab).
"""

import base64
import html
import json
import re
import shutil
import subprocess

import ipywidgets
import numpy as np
import pytest
import torch
from IPython.core.interactiveshell import InteractiveShell

from attnbook import widgets
from attnbook.induction import AttentionOnlyTransformer
from attnbook.widgets import live
from attnbook.widgets.live import _pack
from attnbook.widgets.live.induction import load_chapter_weights, parse_tokens, run


# Trains a model for several seconds: make check's tier (conftest.py, "slow").
@pytest.mark.slow
def test_shipped_weights_match_a_fresh_export_of_the_chapter_model():
    """induction.f16 is chapter 11's model (make live-weights), trained again here."""
    weights, arch = load_chapter_weights()
    fresh, fresh_arch = _pack.pack_attention_only(_pack.chapter_model())
    heads = arch.pop("heads")
    arch.pop("source")
    assert arch == fresh_arch
    stored = np.frombuffer(weights, dtype="<f2").astype(np.float64)
    now = np.frombuffer(fresh, dtype="<f2").astype(np.float64)
    # Equal where the weights were exported; another CPU code path (make
    # test-cpus: ATEN_CPU_CAPABILITY=default) trains the model a few float16
    # steps apart: 2.6% of the weights differ, by at most 1e-3 (measured).
    np.testing.assert_allclose(now, stored, rtol=2**-8, atol=2e-3)
    assert (now == stored).mean() > 0.9
    assert heads == {"previous": [0, 1], "induction": [1, 0]}  # the chapter's heads (seed 0)


def test_pack_and_unpack_round_trip_to_float16():
    model = AttentionOnlyTransformer(vocab=10, num_hiddens=8, num_heads=2, max_len=6, seed=3)
    weights, arch = _pack.pack_attention_only(model)
    assert len(weights) == 2 * sum(p.numel() for p in model.parameters())
    back = _pack.unpack_attention_only(weights, arch)
    for (name, a), (_, b) in zip(model.named_parameters(), back.named_parameters()):
        assert torch.equal(a.detach().half().float(), b.detach()), name
    with pytest.raises(
        ValueError, match=r"weights must hold 720 float16 values for this arch, got 719"
    ):
        _pack.unpack_attention_only(weights[:-2], arch)


def test_pack_refuses_other_models_and_unrepresentable_weights():
    with pytest.raises(TypeError, match="model must be an attnbook.induction"):
        _pack.pack_attention_only(torch.nn.Linear(2, 2))
    model = AttentionOnlyTransformer(vocab=4, num_hiddens=4, num_heads=1, max_len=3)
    with torch.no_grad():
        model.embed.weight[0, 0] = 1e6
    with pytest.raises(ValueError, match="embed exceeds the float16 range"):
        _pack.pack_attention_only(model)
    with torch.no_grad():
        model.embed.weight[0, 0] = float("nan")
    with pytest.raises(ValueError, match="embed holds a NaN"):
        _pack.pack_attention_only(model)
    with pytest.raises(TypeError, match="model must be an attnbook.induction"):
        widgets.live.induction_live("a model")
    with pytest.raises(TypeError, match="text must be a string"):
        live.InductionLive(text=[1, 2])


def test_parse_tokens_reads_like_the_page():
    assert parse_tokens("3, 5;7  9", 64, 40) == {
        "tokens": [3, 5, 7, 9],
        "unknown": [],
        "dropped": 0,
    }
    assert parse_tokens("3 x 64 -1 2.5 63", 64, 40)["unknown"] == ["x", "64", "-1", "2.5"]
    assert parse_tokens("1 2 3", 64, 2) == {"tokens": [1, 2], "unknown": [], "dropped": 1}
    assert parse_tokens("   ", 64, 40)["tokens"] == []


# What each explorer's module must hold besides the shim's localModel: its own
# loader and the runtime's operation its model needs.
MODULE_EXPORTS = {
    "induction": ("loadAttentionOnly", "linear"),
    "lm": ("loadTinyLM", "linear"),
    "dates": ("loadGruSeq2Seq", "gruCell"),
    "digits": ("loadViT", "biasedSelfAttention"),
}


@pytest.mark.parametrize("name", list(MODULE_EXPORTS))
def test_module_source_joins_runtime_and_explorer(name):
    source = live.module_source(name, shim=True)
    assert "./runtime.js" not in source
    assert len(re.findall(r"^export default", source, re.MULTILINE)) == 1
    for function in ("localModel", *MODULE_EXPORTS[name]):
        assert f"export function {function}(" in source
    if name == "digits":
        assert "touch-action:none" in source  # a finger draws instead of scrolling
    assert "</script" not in source.lower()
    # Nothing from the network: no URL, no import left (comments aside).
    code = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith("//"))
    assert not re.search(r"https?://|\bimport\s*[({]|\bimport\s+\w", code)


@pytest.mark.parametrize("name", list(MODULE_EXPORTS))
def test_script_source_is_a_classic_script(name, tmp_path):
    """The website's form of the module: no export or import left, one strict
    scope, and node parses it as a script (a module's syntax would not parse)."""
    script = live.script_source(name, "render({ model: localModel({}), el: null });\n")
    assert script.startswith('(() => {\n"use strict";\n') and script.endswith("})();\n")
    assert not re.search(r"^(export|import)\b", script, re.MULTILINE)
    for function in ("localModel", "render", *MODULE_EXPORTS[name]):
        assert re.search(rf"^(async )?function {function}\(", script, re.MULTILINE)
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    path = tmp_path / f"{name}.cjs"  # .cjs: node reads it as a script, not a module
    path.write_text(script, encoding="utf-8")
    checked = subprocess.run([node, "--check", str(path)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr


def test_script_source_refuses_module_syntax_it_cannot_remove(monkeypatch):
    from attnbook.widgets.live import _source

    monkeypatch.setattr(
        _source, "module_source", lambda name, shim: "export { a as b };\nconst a = 1;\n"
    )
    with pytest.raises(ValueError, match="module syntax a classic script cannot run"):
        _source.script_source("digits", "")


def test_load_float16_refuses_names_and_shapes_that_differ_from_the_model():
    """The loader every explorer's unpacker shares: the same names in the same
    order and the same shapes, or a ValueError naming what differs."""
    a, b = torch.zeros(2, 3), torch.zeros(4)
    packed, tensors = _pack.pack_float16([("a", torch.ones(2, 3)), ("b", torch.arange(4.0))])
    _pack.load_float16(packed, tensors, [("a", a), ("b", b)])
    assert a.eq(1).all() and b.tolist() == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="arch tensors do not match the model's parameters"):
        _pack.load_float16(packed, tensors, [("b", b), ("a", a)])
    with pytest.raises(
        ValueError, match=r"arch tensor a \[2, 3\] does not match the model's \[3, 2\]"
    ):
        _pack.load_float16(packed, tensors, [("a", torch.zeros(3, 2)), ("b", b)])
    with pytest.raises(TypeError, match="weights must be bytes, got str"):
        _pack.load_float16("abc", tensors, [("a", a), ("b", b)])


def test_widget_carries_weights_arch_heads_and_text():
    widget = live.induction_live(text="1 2 3 1 2")
    assert isinstance(widget, ipywidgets.DOMWidget)
    weights, arch = load_chapter_weights()
    assert widget.weights == weights and widget.heads == arch.pop("heads")
    assert widget.arch["num_layers"] == 2 and widget.text == "1 2 3 1 2"
    state = widget.get_state()
    assert {"weights", "arch", "heads", "text", "_esm"} <= set(state)
    assert repr(widget) == "InductionLive(layers=2, heads=2, width=64, vocab=64, 5 tokens)"
    data, _ = widget._repr_mimebundle_()
    assert data["text/plain"] == repr(widget)
    assert data["application/vnd.jupyter.widget-view+json"]["model_id"] == widget.model_id
    assert base64.b64decode(data["image/png"])[:4] == b"\x89PNG"


def test_a_model_the_reader_trains_can_be_handed_over():
    model = AttentionOnlyTransformer(num_layers=1, seed=2)
    widget = live.induction_live(model, text="4 5 6 4 5")
    assert widget.arch["num_layers"] == 1
    assert widget.heads["previous"][0] == 0 and widget.heads["induction"][0] == 0
    tokens, logits, attention = widget.forward()
    with torch.no_grad():
        expected = model(torch.tensor([tokens]))[0]
    assert (logits - expected).abs().max() < 0.05  # float16 weights
    widget.set_model(AttentionOnlyTransformer(seed=5))
    assert widget.arch["num_layers"] == 2


def test_alt_text_and_summary_describe_the_numbers():
    widget = live.induction_live(text="7 21 3 44 9 30 7 21 3 44")
    tokens, logits, attention = widget.forward()
    sentence = widget.alt_text(query=7)
    assert sentence.startswith("Position 7 holds token 21.")
    assert f"predicts token {int(logits[7].argmax())} next" in sentence
    summary = widget.summary()
    assert "sequence of 10 tokens" in summary and "At the 4 positions" in summary
    with pytest.raises(ValueError, match="no token id"):
        live.induction_live(text="x y").png()
    assert "nothing to show" in live.induction_live(text="").alt_text()


# Each explorer with two inputs, to see that the fragment's id follows the state,
# and the most its fragment may weigh (KiB): lm's weights alone are 312 KB of
# base64; every chapter page stays under 1 MiB (make bench).
EXPLORERS = {
    "induction": (lambda: live.induction_live(), lambda: live.induction_live(text="1 2 1 2")),
    "lm": (lambda: live.lm_live(), lambda: live.lm_live(text="Attention")),
    "dates": (lambda: live.dates_live(), lambda: live.dates_live(text="1999/3/3")),
    "digits": (lambda: live.digits_live(), lambda: live.digits_live(fill="mean image")),
}
WEIGHT_KIB = {"induction": 300, "lm": 400, "dates": 400, "digits": 400}


@pytest.mark.parametrize("name", list(EXPLORERS))
def test_every_explorer_has_the_shared_website_form(name, monkeypatch):
    """The four fragments come from one builder (live._fragment): the fallback picture
    with the summary as alt text, the state the shim reads, one classic script."""
    monkeypatch.setenv(widgets.STATIC_ENV, "1")
    fragments = []
    for make in EXPLORERS[name]:
        widget = make()
        data, metadata = widget._repr_mimebundle_()
        assert metadata == {"text/html": {widgets.STATIC_MARKER: True}}
        assert data["text/plain"] == repr(widget) and data["text/html"] == widget.to_html()
        fragments.append(fragment := data["text/html"])
        host = re.match(
            r'<div class="attnbook-live-host" id="(attnbook-live-[0-9a-f]{10})">', fragment
        )
        assert host and fragment.endswith("</script>\n</div>")
        assert len(fragment.encode()) < WEIGHT_KIB[name] * 1024
        assert not re.search(r'(src|href)="(?!data:)', fragment)  # nothing fetched
        assert 'class="attnbook-explorer"' not in fragment  # not a frame explorer
        # Run when parsed, not after the page's deferred scripts (MathJax): one
        # classic script, no module script.
        assert re.findall(r"<script\b[^>]*>", fragment) == [
            '<script type="application/json" class="attnbook-live-state">',
            "<script>",
        ]
        # The script finds its own host (the host's id is shared by two
        # fragments of the same state): the script is the host's last child.
        assert "const host = document.currentScript.parentElement;" in fragment
        img = re.search(
            r'<img class="attnbook-live-fallback" src="data:image/png;base64,([^"]+)" alt="([^"]+)"',
            fragment,
        )
        assert (
            base64.b64decode(img[1]) == widget.png() and html.unescape(img[2]) == widget.summary()
        )
        assert len(img[2]) > 100
        assert fragment.index("attnbook-live-fallback") < fragment.index(
            '<div class="attnbook-live-app"></div>'
        )
        start = fragment.index('class="attnbook-live-state">') + len('class="attnbook-live-state">')
        state = json.loads(fragment[start : fragment.index("</script>", start)])
        assert state == widget._state() and set(state) == set(widget._page_state)
        assert base64.b64decode(state["weights"]) == widget.weights
        assert set(widget._page_state) <= set(widget.get_state())  # traitlets the page syncs
    ids = [re.search(r'id="([^"]+)"', f)[1] for f in fragments]
    assert ids[0] != ids[1]


@pytest.mark.parametrize("name", list(EXPLORERS))
def test_every_explorer_shows_the_widget_and_its_picture_in_a_notebook(name, monkeypatch):
    """The notebook's bundle: ipywidgets 8 asks _repr_mimebundle_, ipywidgets 7
    calls _ipython_display_, which publishes the same bundle. An input with
    nothing to draw (not for the digits: a blank grid is drawn) has no picture."""
    monkeypatch.delenv(widgets.STATIC_ENV, raising=False)
    widget = EXPLORERS[name][0]()
    data, metadata = widget._repr_mimebundle_()
    assert metadata == {} and data["text/plain"] == repr(widget)
    assert data["application/vnd.jupyter.widget-view+json"]["model_id"] == widget.model_id
    assert base64.b64decode(data["image/png"]) == widget.png()
    created = not InteractiveShell.initialized()
    shell = InteractiveShell.instance()
    published = []
    monkeypatch.setattr(
        shell.display_pub,
        "publish",
        lambda data, metadata=None, **_: published.append((data, metadata)),
    )
    try:
        widget._ipython_display_()
    finally:
        if created:
            InteractiveShell.clear_instance()
    assert published == [(data, metadata)]
    if name != "digits":
        widget.text = ""
        assert not widget._drawable() and "image/png" not in widget._repr_mimebundle_()[0]


def test_run_matches_the_model_on_float16_weights():
    weights, arch = load_chapter_weights()
    arch.pop("heads")
    logits, attention = run(weights, arch, [1, 2, 3])
    assert logits.shape == (3, 64) and len(attention) == 2 and attention[0].shape == (2, 3, 3)
    assert torch.allclose(attention[1].sum(-1), torch.ones(2, 3))
