"""Export the live explorers' models (chapters 10, 11, 13, 15) and the fixtures of the JavaScript tests.

``python tools/live_export.py weights`` trains the model as chapter 11 does
(``attnbook.widgets.live._pack.chapter_model``: seed 0, 250 steps, about 5 s on
one thread) and writes its float16 weights and architecture beside the
explorer (``lib/attnbook/widgets/live/induction.f16`` and ``induction.json``).

``python tools/live_export.py fixtures`` runs PyTorch on those very weights
(float16, read back into float32) over a set of inputs (a repeat, the longest
input, one token, the empty input, unknown and too many tokens) and writes
``tests/live/fixtures/*.json``: the inputs, the tokens the page must read from
them, the logits and every attention matrix, plus fixtures of the runtime's
own operations (float16 decoding, layer norm, masked softmax). The node tests
(``tests/live/*.test.mjs``, ``make test-live-js``) check the JavaScript against them.

``dates-weights`` and ``dates-fixtures`` do the same for chapter 13's explorer
(the GRU date models with and without attention, ``_pack_dates.CHAPTER_SETUP``).
``python tools/live_export.py lm-weights lm-fixtures`` does the same for chapter
10's explorer (``lm.f16``/``lm.json``, packed from the shipped checkpoint
``lm.load_checkpoint()``, which already stores float16; and
``tests/live/fixtures/lm.json``, ``runtime_lm.json``).

``digits-weights`` and ``digits-fixtures`` do the same for chapter 15's
explorer (the tiny ViT trained as chapter 15 trains seed 0, about 10 s on one
thread, with the mean training image and one test image per digit; PyTorch's
logits, attention, rollout and occlusion on a blank, a saturated, a test and a
scribbled image, under both fills).

``make live-weights`` runs every step.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import torch

from attnbook.widgets.live import _pack
from attnbook.widgets.live.induction import (
    ARCH_FILE,
    WEIGHTS_FILE,
    default_text,
    load_chapter_weights,
    parse_tokens,
    run,
)

ROOT = Path(__file__).resolve().parent.parent
LIVE = ROOT / "lib" / "attnbook" / "widgets" / "live"
FIXTURES = ROOT / "tests" / "live" / "fixtures"


def export_weights() -> None:
    model = _pack.chapter_model()
    weights, arch = _pack.pack_attention_only(model)
    arch["heads"] = _pack.find_heads(model)
    arch["source"] = "chapter 11 (book/induction-heads.ipynb), trained as _pack.CHAPTER_SETUP"
    (LIVE / WEIGHTS_FILE).write_bytes(weights)
    (LIVE / ARCH_FILE).write_text(json.dumps(arch, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {WEIGHTS_FILE} ({len(weights)} bytes) and {ARCH_FILE}; heads {arch['heads']}")


def _short(values: torch.Tensor) -> list[float]:
    """float32 values as the shortest decimals that read back to the same float32
    (9 significant digits), so the fixture file stays small."""
    return [float(f"{v:.9g}") for v in values.flatten().tolist()]


def _cases(vocab: int, max_len: int) -> dict[str, str]:
    g = torch.Generator().manual_seed(7)
    longest = " ".join(str(t) for t in torch.randint(vocab, (max_len,), generator=g).tolist())
    return {
        "default": default_text(max_len, vocab),
        "longest": longest,
        "one token": "5",
        "empty": "",
        "blank": "   ",
        "unknown tokens": "3 x 64 17, -2 3 17 9.5 40",
        "too long": " ".join(str(i % vocab) for i in range(max_len + 5)),
    }


def export_fixtures() -> None:
    weights, arch = load_chapter_weights()
    heads = arch.pop("heads")
    arch.pop("source", None)
    cases = []
    for name, text in _cases(arch["vocab"], arch["max_len"]).items():
        parsed = parse_tokens(text, arch["vocab"], arch["max_len"])
        tokens = parsed["tokens"]
        if tokens:
            logits, attention = run(weights, arch, tokens)
            logits_list = _short(logits)
            attention_list = [[_short(h) for h in layer] for layer in attention]
        else:  # the model is never run on nothing: the page shows a note
            logits_list, attention_list = [], []
        cases.append(
            {
                "name": name,
                "text": text,
                **parsed,
                "logits": logits_list,
                "attention": attention_list,
            }
        )
    FIXTURES.mkdir(parents=True, exist_ok=True)
    out = {"weights": WEIGHTS_FILE, "arch": arch, "heads": heads, "cases": cases}
    (FIXTURES / "induction.json").write_text(json.dumps(out) + "\n", encoding="utf-8")

    # The runtime's operations on their own, against PyTorch and numpy.
    g = torch.Generator().manual_seed(3)
    # Small variance, so that eps matters: 1e-6 instead of 1e-5 moves the result by ~5%.
    x = torch.randn(5, 16, generator=g) * 0.01
    gamma, beta = torch.randn(16, generator=g), torch.randn(16, generator=g)
    scores = torch.randn(6, 6, generator=g) * 4
    causal = torch.ones(6, 6, dtype=torch.bool).tril()
    halves = np.array(
        [0.0, -0.0, 1.0, -2.5, 65504.0, 6.1e-5, 5.96e-8, 3.0e-6, np.inf, -np.inf, 0.1, 1 / 3],
        dtype="<f2",
    )
    runtime = {
        "float16": {
            "bytes": list(halves.tobytes()),
            "values": [v if np.isfinite(v) else str(v) for v in halves.astype(float).tolist()],
        },
        "layer_norm": {
            "x": x.flatten().tolist(),
            "n": 5,
            "width": 16,
            "gamma": gamma.tolist(),
            "beta": beta.tolist(),
            "expected": torch.nn.functional.layer_norm(x, (16,), gamma, beta).flatten().tolist(),
        },
        "causal_softmax": {
            "scores": scores.flatten().tolist(),
            "n": 6,
            "expected": torch.softmax(scores.masked_fill(~causal, float("-inf")), -1)
            .flatten()
            .tolist(),
        },
    }
    (FIXTURES / "runtime.json").write_text(json.dumps(runtime) + "\n", encoding="utf-8")
    print(f"wrote {len(cases)} cases to {FIXTURES / 'induction.json'} and runtime.json")


# ---- chapter 13's explorer (dates) ----


def export_dates_weights() -> None:
    """Chapter 13's two GRU models (``_pack_dates.CHAPTER_SETUP``): dates.f16 and
    dates_no_attention.f16, their architectures in dates.json (about 35 s on one thread)."""
    from attnbook.widgets.live import _pack_dates
    from attnbook.widgets.live.dates import ARCH_FILE as DATES_ARCH
    from attnbook.widgets.live.dates import WEIGHTS_FILES

    archs = {}
    for kind, setup in _pack_dates.CHAPTER_SETUP.items():
        weights, arch = _pack_dates.pack_gru_seq2seq(_pack_dates.chapter_model(kind))
        arch["source"] = f"chapter 13 (book/cross-attention.ipynb), trained as {setup}"
        (LIVE / WEIGHTS_FILES[kind]).write_bytes(weights)
        archs[kind] = arch
        print(f"wrote {WEIGHTS_FILES[kind]} ({len(weights)} bytes)")
    (LIVE / DATES_ARCH).write_text(json.dumps(archs, indent=1) + "\n", encoding="utf-8")


def _dates_cases() -> dict[str, str]:
    return {
        "long": "3 March 1999",
        "short": "mar 3, 1999",
        "numeric": "03/03/99",
        "weekday": "Wednesday 3 Mar 1999",
        "slashes, year first": "1999/3/3",
        "lower case, ordinal, two-digit year": "march 3rd 99",
        "year outside 1950-2049": "3 March 2077",
        "no such day": "31/02/99",
        "wrong weekday": "Monday 3 Mar 1999",
        "nonsense": "hello there",
        "one character": "7",
        "unknown characters": "1999-03-03 (Wed.)",
        "only unknown characters": "???",
        "empty": "",
        "blank": "   ",
        "longest": "Wednesday 23 September 1998, Wed 23 Sept",
        "too long": "Wednesday 23 September 1998 or Thursday 24 September 1998",
    }


def export_dates_fixtures() -> None:
    from attnbook.widgets.live import _pack_dates
    from attnbook.widgets.live.dates import load_chapter_weights as load_dates

    models = {}
    archs = {}
    for kind in _pack_dates.CHAPTER_SETUP:
        weights, arch = load_dates(kind)
        arch.pop("source", None)
        archs[kind] = arch
        models[kind] = _pack_dates.unpack_gru_seq2seq(weights, arch)
    cases = []
    for name, text in _dates_cases().items():
        read = _pack_dates.read_source(text)
        case = {"name": name, "input": text, **read, **_pack_dates.training_format(read["text"])}
        for kind, model in models.items():
            if read["text"]:
                out = _pack_dates.run(model, read["text"])
                case[kind] = {
                    "tokens": out["tokens"],
                    "answer": out["answer"],
                    "logits": _short(out["logits"]),
                    "weights": None if out["weights"] is None else _short(out["weights"]),
                }
            else:  # the models are never run on nothing: the page shows a note
                case[kind] = None
        cases.append(case)
    assert len(cases[-2]["text"]) == _pack_dates.MAX_LEN and cases[-1]["dropped"] > 0
    FIXTURES.mkdir(parents=True, exist_ok=True)
    out = {"archs": archs, "cases": cases}
    (FIXTURES / "dates.json").write_text(json.dumps(out) + "\n", encoding="utf-8")

    # The runtime's new operations on their own, against PyTorch.
    g = torch.Generator().manual_seed(13)
    torch.manual_seed(13)
    gru = torch.nn.GRU(5, 4, batch_first=True, bidirectional=True)
    cell = torch.nn.GRUCell(5, 4)
    xs = torch.randn(1, 6, 5, generator=g)
    h = torch.randn(1, 4, generator=g)
    with torch.no_grad():
        states, last = gru(xs)
        cell_out = cell(xs[:, 0], h)
    from attnbook.seq2seq import AdditiveCrossAttention

    attention = AdditiveCrossAttention(4, 8, 3)
    query = torch.randn(1, 4, generator=g)
    memory = torch.randn(1, 6, 8, generator=g)
    with torch.no_grad():
        context, weights = attention(query, attention.keys(memory), memory, torch.tensor([6]))

    def flat(t):
        return t.detach().flatten().tolist()

    runtime = {
        "gru_cell": {
            "x": flat(xs[:, 0]), "h": flat(h), "in": 5, "hidden": 4,
            "weight_ih": flat(cell.weight_ih), "weight_hh": flat(cell.weight_hh),
            "bias_ih": flat(cell.bias_ih), "bias_hh": flat(cell.bias_hh),
            "expected": flat(cell_out),
        },
        "bidirectional_gru": {
            "x": flat(xs), "n": 6, "in": 5, "hidden": 4,
            **{name: flat(p) for name, p in gru.named_parameters()},
            "states": flat(states), "final": flat(torch.cat([last[0], last[1]], -1)),
        },
        "additive_attention": {
            "query": flat(query), "states": flat(memory), "n": 6, "query_size": 4,
            "key_size": 8, "hiddens": 3, "W_s": flat(attention.W_s.weight),
            "W_h": flat(attention.W_h.weight), "v": flat(attention.v.weight),
            "context": flat(context), "weights": flat(weights),
        },
    }  # fmt: skip
    (FIXTURES / "runtime_dates.json").write_text(json.dumps(runtime) + "\n", encoding="utf-8")
    print(f"wrote {len(cases)} cases to {FIXTURES / 'dates.json'} and runtime_dates.json")


# ---- chapter 10's explorer (lm): `lm-weights`, `lm-fixtures` ----


def export_lm_weights() -> None:
    """Chapter 10's shipped checkpoint (already float16: packing loses nothing)."""
    from attnbook import lm as lm_module
    from attnbook.widgets.live import _pack_lm
    from attnbook.widgets.live import lm as live_lm

    model, tokenizer = lm_module.load_checkpoint()
    weights, arch = _pack_lm.pack_tiny_lm(model, tokenizer)
    arch["source"] = "chapter 10 (book/causal-language-model.ipynb): lm.load_checkpoint()"
    (LIVE / live_lm.WEIGHTS_FILE).write_bytes(weights)
    (LIVE / live_lm.ARCH_FILE).write_text(json.dumps(arch, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {live_lm.WEIGHTS_FILE} ({len(weights)} bytes) and {live_lm.ARCH_FILE}")


def _rows(n: int) -> list[int]:
    """The query rows a fixture stores: all of a short prompt, five of a long one."""
    return list(range(n)) if n <= 16 else sorted({0, 1, n // 2, n - 2, n - 1})


def _greedy_margin(logits: torch.Tensor) -> float:
    """The smallest lead of the best logit over the second along a greedy path."""
    top = logits.topk(2, dim=-1).values
    return float((top[:, 0] - top[:, 1]).min()) if len(logits) else float("inf")


def export_lm_fixtures() -> None:
    from attnbook import corpus, sampling
    from attnbook.widgets.live import lm as live_lm

    weights, arch = live_lm.load_lm_weights()
    arch.pop("source", None)
    chars, max_len = arch["chars"], arch["max_len"]
    held_out = corpus.load_corpus("held-out")
    texts = {
        "default": live_lm.DEFAULT_TEXT,
        "attention": "Attention is ",
        "one character": "T",
        "empty": "",
        "only unknown": "\u00e9\u00e9\u2014",
        "unknown": "Na\u00efve caf\u00e9 \u2014 \u201cquoted\u201d text \u263a and more",
        "near the end": held_out[:100],
        "longest": held_out[:max_len],
        "beyond the context": held_out[:200],
    }
    cases = []
    for name, text in texts.items():
        parsed = live_lm.encode_prompt(text, chars, max_len)
        ids = parsed["ids"]
        case = {"name": name, "text": text, **parsed, "rows": [], "logits": [], "attention": []}
        if ids:
            logits, attention = live_lm.run(weights, arch, ids)
            rows = _rows(len(ids))
            case["rows"] = rows
            case["logits"] = _short(logits[rows])
            case["attention"] = [[_short(h[rows]) for h in layer] for layer in attention]
            steps = min(live_lm.CONTINUE, max_len - len(ids))
            greedy = live_lm.continuation(weights, arch, ids, steps)
            assert _greedy_margin(greedy["logits"]) > 1e-3, name  # far above rounding
            case["greedy"] = greedy["ids"]
        cases.append(case)

    # Sampled continuations: the page's seeded numbers, attnbook's distributions.
    sampled = []
    for text, settings in (
        ("The query ", {"temperature": 1.0, "top_k": None, "top_p": None, "seed": 0}),
        ("The query ", {"temperature": 1.5, "top_k": 5, "top_p": None, "seed": 7}),
        ("Attention is ", {"temperature": 0.8, "top_k": None, "top_p": 0.9, "seed": 3}),
        ("Each query ", {"temperature": 2.0, "top_k": 10, "top_p": 0.6, "seed": 12345}),
    ):
        ids = live_lm.encode_prompt(text, chars, max_len)["ids"]
        out = live_lm.continuation(weights, arch, ids, live_lm.CONTINUE, greedy=False, **settings)
        assert out["margin"] > 1e-6, (text, settings, out["margin"])
        sampled.append(
            {
                "text": text,
                "ids": ids,
                **settings,
                "expected": out["ids"],
                "uniforms": out["uniforms"],
                "margin": out["margin"],
            }
        )

    # The filters alone, on PyTorch's logits of the next character.
    ids = live_lm.encode_prompt("Attention is ", chars, max_len)["ids"]
    last = live_lm.run(weights, arch, ids)[0][-1]
    filters = []
    for temperature, top_k, top_p in (
        (1.0, None, None),
        (0.5, None, None),
        (2.0, None, None),
        (1.0, 1, None),
        (1.0, 5, None),
        (1.0, None, 0.5),
        (1.0, None, 0.9),
        (0.7, 8, 0.8),
        (3.0, 20, 0.95),
        (0.05, None, 0.01),
    ):
        probs = sampling.next_token_probs(last, temperature, top_k, top_p)
        filters.append(
            {"temperature": temperature, "top_k": top_k, "top_p": top_p, "expected": probs.tolist()}
        )
    out = {
        "weights": live_lm.WEIGHTS_FILE,
        "arch": arch,
        "continue": live_lm.CONTINUE,
        "cases": cases,
        "sampled": sampled,
        "filters": {"logits": last.tolist(), "cases": filters},
    }
    (FIXTURES / "lm.json").write_text(json.dumps(out) + "\n", encoding="utf-8")

    # The runtime's new operations (runtime.js, chapter 10's block).
    x = torch.linspace(-12, 12, 241, dtype=torch.float64)
    g = torch.Generator().manual_seed(5)
    ln_x = torch.randn(4, 64, generator=g) * 0.02 + 0.3
    ln_w, ln_b = torch.randn(64, generator=g), torch.randn(64, generator=g)
    runtime = {
        "gelu": {"x": x.tolist(), "expected": torch.nn.functional.gelu(x).tolist()},
        "erf": {"x": x.tolist(), "expected": [math.erf(v) for v in x.tolist()]},
        "layer_norm": {
            "x": ln_x.flatten().tolist(),
            "n": 4,
            "width": 64,
            "gamma": ln_w.tolist(),
            "beta": ln_b.tolist(),
            "expected": torch.nn.functional.layer_norm(ln_x, (64,), ln_w, ln_b).flatten().tolist(),
        },
        "seeded": {
            str(seed): [1 - u for u in live_lm.seeded_uniforms(seed, 8)]
            for seed in (0, 1, 42, 4294967295)
        },
    }
    (FIXTURES / "runtime_lm.json").write_text(json.dumps(runtime) + "\n", encoding="utf-8")
    print(f"wrote {len(cases)} cases, {len(sampled)} sampled, {len(filters)} filters to lm.json")


# ---- chapter 15's explorer (digits): `digits-weights`, `digits-fixtures` ----


def export_digits_weights() -> None:
    from attnbook.digits import load_digits_split
    from attnbook.widgets.live import _pack_digits
    from attnbook.widgets.live.digits import ARCH_FILE as DIGITS_ARCH
    from attnbook.widgets.live.digits import WEIGHTS_FILE as DIGITS_WEIGHTS

    weights, arch = _pack_digits.pack_vit(_pack_digits.chapter_model())
    data = load_digits_split()
    arch.update(_pack_digits.chapter_extras(data.X_train, data.X_test, data.y_test))
    arch["source"] = (
        "chapter 15 (book/vision-transformer.ipynb): build_vit(0) trained with "
        "vit_study.SETTING, seed 0 (make vit-sweep's seed 0)"
    )
    (LIVE / DIGITS_WEIGHTS).write_bytes(weights)
    (LIVE / DIGITS_ARCH).write_text(json.dumps(arch, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {DIGITS_WEIGHTS} ({len(weights)} bytes) and {DIGITS_ARCH}")


def export_digits_fixtures() -> None:
    from attnbook.widgets.live import digits as live_digits

    weights, arch, extras = live_digits.load_chapter_weights()
    cases = []
    for name, pixels in live_digits.fixture_images(extras).items():
        for fill in live_digits.FILLS:
            out = live_digits.run(weights, arch, pixels, live_digits.fill_image(fill, extras))
            cases.append(
                {
                    "name": name,
                    "fill": fill,
                    "pixels": pixels,
                    "logits": _short(out["logits"]),
                    "probs": _short(out["probs"]),
                    "predicted": out["predicted"],
                    "attention": [[_short(h) for h in block] for block in out["attention"]],
                    "raw": _short(out["raw"]),
                    "rollout": _short(out["rollout"]),
                    "occlusion": _short(out["occlusion"]),
                }
            )
    out = {"weights": live_digits.WEIGHTS_FILE, "arch": live_digits.ARCH_FILE, "cases": cases}
    (FIXTURES / "digits.json").write_text(json.dumps(out) + "\n", encoding="utf-8")

    # The runtime's new operations on their own, against PyTorch.
    from attnbook.explain import attention_rollout, cls_attention
    from attnbook.multihead import MultiHeadAttention
    from attnbook.patches import patchify

    g = torch.Generator().manual_seed(5)
    image = torch.randn(2, 6, 4, generator=g)
    torch.manual_seed(5)
    mha = MultiHeadAttention(8, 2, bias=True).eval()
    x = torch.randn(1, 5, 8, generator=g)
    with torch.no_grad():
        attended = mha(x, x, x)
    weights4 = torch.softmax(torch.randn(2, 1, 3, 5, 5, generator=g) * 2, -1)
    relu_in = torch.randn(12, generator=g)
    runtime = {
        "relu": {"x": relu_in.tolist(), "expected": torch.relu(relu_in).tolist()},
        "patchify": {
            "pixels": image.flatten().tolist(),
            "channels": 2,
            "height": 6,
            "width": 4,
            "p": 2,
            "expected": patchify(image[None], 2).flatten().tolist(),
        },
        "attention": {
            "x": x.flatten().tolist(),
            "n": 5,
            "width": 8,
            "heads": 2,
            **{
                key: getattr(mha, f"W_{key}").weight.detach().flatten().tolist()
                for key in ("q", "k", "v", "o")
            },
            **{
                f"b{key}": getattr(mha, f"W_{key}").bias.detach().tolist()
                for key in ("q", "k", "v", "o")
            },
            "out": attended.flatten().tolist(),
            "weights": [w.flatten().tolist() for w in mha.attention_weights[0]],
        },
        "rollout": {
            "layers": [[h.flatten().tolist() for h in layer[0]] for layer in weights4],
            "n": 5,
            "expected": attention_rollout(weights4)[0].flatten().tolist(),
            "cls": cls_attention(weights4[-1])[0].tolist(),
        },
    }
    (FIXTURES / "runtime_digits.json").write_text(json.dumps(runtime) + "\n", encoding="utf-8")
    print(f"wrote {len(cases)} cases to {FIXTURES / 'digits.json'} and runtime_digits.json")


if __name__ == "__main__":
    what = sys.argv[1:] or ["weights", "fixtures"]
    steps = {
        "weights": export_weights,
        "fixtures": export_fixtures,
        "dates-weights": export_dates_weights,
        "dates-fixtures": export_dates_fixtures,
        "lm-weights": export_lm_weights,
        "lm-fixtures": export_lm_fixtures,
        "digits-weights": export_digits_weights,
        "digits-fixtures": export_digits_fixtures,
    }
    for step in what:
        steps[step]()
