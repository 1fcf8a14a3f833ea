"""Chapter 15's live explorer (digits): steps ``digits-weights`` and
``digits-fixtures`` of tools/live_export.py.

``digits-weights`` trains the tiny ViT as chapter 15 trains seed 0 (about 10 s
on one thread) and writes it beside the explorer, with the mean training
image and one test image per digit. ``digits-fixtures`` writes
``tests/live/fixtures/digits.json`` (PyTorch's logits, attention, rollout and
occlusion on a blank, a saturated, a test and a scribbled image, under both
fills) and ``runtime_digits.json`` (ReLU, patchify, attention with biases,
rollout).
"""

from __future__ import annotations

import json

import torch

from attnbook.digits import load_digits_split
from attnbook.explain import attention_rollout, cls_attention
from attnbook.multihead import MultiHeadAttention
from attnbook.patches import patchify
from attnbook.widgets.live import _pack_digits
from attnbook.widgets.live import digits as live_digits

from .live_export import FIXTURES, LIVE, short


def export_weights() -> None:
    weights, arch = _pack_digits.pack_vit(_pack_digits.chapter_model())
    data = load_digits_split()
    arch.update(_pack_digits.chapter_extras(data.X_train, data.X_test, data.y_test))
    arch["source"] = (
        "chapter 15 (book/vision-transformer.ipynb): build_vit(0) trained with "
        "vit_study.SETTING, seed 0 (make vit-sweep's seed 0)"
    )
    (LIVE / live_digits.WEIGHTS_FILE).write_bytes(weights)
    (LIVE / live_digits.ARCH_FILE).write_text(json.dumps(arch, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {live_digits.WEIGHTS_FILE} ({len(weights)} bytes) and {live_digits.ARCH_FILE}")


def export_fixtures() -> None:
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
                    "logits": short(out["logits"]),
                    "probs": short(out["probs"]),
                    "predicted": out["predicted"],
                    "attention": [[short(h) for h in block] for block in out["attention"]],
                    "raw": short(out["raw"]),
                    "rollout": short(out["rollout"]),
                    "occlusion": short(out["occlusion"]),
                }
            )
    out = {"weights": live_digits.WEIGHTS_FILE, "arch": live_digits.ARCH_FILE, "cases": cases}
    (FIXTURES / "digits.json").write_text(json.dumps(out) + "\n", encoding="utf-8")

    # The runtime's new operations on their own, against PyTorch.
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
