"""Chapter 10's live explorer (lm): steps ``lm-weights`` and ``lm-fixtures`` of
tools/live_export.py.

``lm-weights`` packs the shipped checkpoint (``lm.load_checkpoint()``, which
already stores float16) into ``lm.f16`` and ``lm.json`` beside the explorer.
``lm-fixtures`` writes ``tests/live/fixtures/lm.json`` (PyTorch's logits and
attention over prompts, greedy and sampled continuations, the sampling
filters) and ``runtime_lm.json`` (GELU, erf, layer norm, the seeded numbers).
"""

from __future__ import annotations

import json
import math

import torch

from attnbook import corpus, sampling
from attnbook import lm as lm_module
from attnbook.widgets.live import _pack_lm
from attnbook.widgets.live import lm as live_lm

from .live_export import FIXTURES, LIVE, layer_norm_case, short


def export_weights() -> None:
    """Chapter 10's shipped checkpoint (already float16: packing loses nothing)."""
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


def export_fixtures() -> None:
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
            case["logits"] = short(logits[rows])
            case["attention"] = [[short(h[rows]) for h in layer] for layer in attention]
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
        "layer_norm": layer_norm_case(ln_x, ln_w, ln_b),
        "seeded": {
            str(seed): [1 - u for u in live_lm.seeded_uniforms(seed, 8)]
            for seed in (0, 1, 42, 4294967295)
        },
    }
    (FIXTURES / "runtime_lm.json").write_text(json.dumps(runtime) + "\n", encoding="utf-8")
    print(f"wrote {len(cases)} cases, {len(sampled)} sampled, {len(filters)} filters to lm.json")
