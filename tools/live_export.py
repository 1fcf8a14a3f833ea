"""Export chapter 11's model for its live explorer, and the fixtures of the JavaScript tests.

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

``make live-weights`` runs both, then the same two steps for chapter 15's
explorer (``digits-weights``: the tiny ViT trained as chapter 15 trains seed 0,
about 10 s on one thread, with the mean training image and one test image per
digit; ``digits-fixtures``: PyTorch's logits, attention, rollout and occlusion
on a blank, a saturated, a test and a scribbled image, under both fills).
"""

from __future__ import annotations

import json
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
    what = sys.argv[1:] or ["weights", "fixtures", "digits-weights", "digits-fixtures"]
    steps = {
        "weights": export_weights,
        "fixtures": export_fixtures,
        "digits-weights": export_digits_weights,
        "digits-fixtures": export_digits_fixtures,
    }
    for step in what:
        steps[step]()
