"""Chapter 11's live explorer (induction): steps ``weights`` and ``fixtures`` of
tools/live_export.py.

``weights`` trains the model as chapter 11 does
(``attnbook.widgets.live._pack.chapter_model``: seed 0, 250 steps, about 5 s on
one thread) and writes its float16 weights and architecture beside the
explorer (``lib/attnbook/widgets/live/induction.f16`` and ``induction.json``).

``fixtures`` runs PyTorch on those very weights (float16, read back into
float32) over a set of inputs (a repeat, the longest input, one token, the
empty input, unknown and too many tokens) and writes
``tests/live/fixtures/induction.json``: the inputs, the tokens the page must
read from them, the logits and every attention matrix; and ``runtime.json``,
fixtures of the runtime's own operations (float16 decoding, layer norm, masked
softmax).
"""

from __future__ import annotations

import json

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

from .live_export import FIXTURES, LIVE, layer_norm_case, short


def export_weights() -> None:
    model = _pack.chapter_model()
    weights, arch = _pack.pack_attention_only(model)
    arch["heads"] = _pack.find_heads(model)
    arch["source"] = "chapter 11 (book/induction-heads.ipynb), trained as _pack.CHAPTER_SETUP"
    (LIVE / WEIGHTS_FILE).write_bytes(weights)
    (LIVE / ARCH_FILE).write_text(json.dumps(arch, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {WEIGHTS_FILE} ({len(weights)} bytes) and {ARCH_FILE}; heads {arch['heads']}")


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
            logits_list = short(logits)
            attention_list = [[short(h) for h in layer] for layer in attention]
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
        "layer_norm": layer_norm_case(x, gamma, beta),
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
