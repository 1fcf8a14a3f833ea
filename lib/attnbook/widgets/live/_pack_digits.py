"""Weights of chapter 15's tiny ViT as float16 bytes, and the digits its explorer starts from.

Pure tensor code (no plotting, no widgets): :func:`pack_vit` turns an
:class:`attnbook.vit.TinyViT` into the bytes and the architecture the
JavaScript runtime reads (``runtime.js``: ``unpack``), and :func:`unpack_vit`
turns them back into a model, so that PyTorch runs exactly the weights the
page runs. :func:`chapter_model` trains the model chapter 15 shows (seed 0 of
``make vit-sweep``, :data:`attnbook.vit_study.SETTING`), and
:func:`chapter_extras` the two things the page needs beside the weights: the
mean training image (the chapter's second occlusion fill) and one test image
of each digit to start from.
"""

from __future__ import annotations

import torch

from ...vit import TinyViT
from ._pack import load_float16, pack_float16

# Version of the byte layout below; the JavaScript side refuses any other.
FORMAT = 1

# What TinyViT's constructor takes, and the arch keys that hold them.
_SIZES = ("image_size", "patch_size", "channels", "num_classes", "num_hiddens", "num_layers")


def _tensors(model: TinyViT) -> list[tuple[str, torch.Tensor]]:
    named = [
        ("embed.weight", model.embed.weight),
        ("embed.bias", model.embed.bias),
        ("cls", model.cls),
        ("positions", model.positions),
    ]
    for i, block in enumerate(model.blocks):
        a = block.attention
        for part, module in (
            ("norm1", block.norm1),
            ("W_q", a.W_q),
            ("W_k", a.W_k),
            ("W_v", a.W_v),
            ("W_o", a.W_o),
            ("norm2", block.norm2),
            ("linear1", block.ffn.linear1),
            ("linear2", block.ffn.linear2),
        ):
            named.append((f"blocks.{i}.{part}.weight", module.weight))
            named.append((f"blocks.{i}.{part}.bias", module.bias))
    named += [
        ("norm.weight", model.norm.weight),
        ("norm.bias", model.norm.bias),
        ("head.weight", model.head.weight),
        ("head.bias", model.head.bias),
    ]
    return named


def _check_model(model: object) -> TinyViT:
    if not isinstance(model, TinyViT):
        raise TypeError(f"model must be an attnbook.vit.TinyViT, got {type(model).__name__}")
    block = model.blocks[0]
    if not block.norm_first or block.norm1.eps != 1e-5:
        raise ValueError("model's blocks must be pre-LN with eps 1e-5, as build_vit makes them")
    return model


def pack_vit(model: TinyViT) -> tuple[bytes, dict]:
    """``(weights, arch)``: every weight as little-endian float16, and how to read them.

    ``arch`` holds the sizes (image_size, patch_size, channels, num_classes,
    num_hiddens, num_heads, ffn_hiddens, num_layers) and ``tensors``, a list of
    ``[name, shape]`` in the order of the bytes. Linear weights keep
    PyTorch's (out, in) layout.
    """
    _check_model(model)
    packed, tensors = pack_float16(_tensors(model))
    block = model.blocks[0]
    arch = {
        "format": FORMAT,
        "model": "tiny-vit",
        **{key: getattr(model, key) for key in ("image_size", "patch_size", "channels")},
        "num_classes": model.head.out_features,
        "num_hiddens": model.embed.out_features,
        "num_heads": block.num_heads,
        "ffn_hiddens": block.ffn_hiddens,
        "num_layers": len(model.blocks),
        "tensors": tensors,
    }
    return packed, arch


def unpack_vit(weights: bytes, arch: dict) -> TinyViT:
    """The model that :func:`pack_vit` packed, in float32 (float16-rounded weights), in eval mode."""
    if (
        not isinstance(arch, dict)
        or arch.get("format") != FORMAT
        or arch.get("model") != "tiny-vit"
    ):
        raise ValueError(
            f"arch must be a tiny-vit arch dict with format={FORMAT}, got {arch!r:.80}"
        )
    model = TinyViT(
        **{key: arch[key] for key in _SIZES},
        num_heads=arch["num_heads"],
        ffn_hiddens=arch["ffn_hiddens"],
    )
    load_float16(weights, arch["tensors"], _tensors(model))
    return model.eval()


def chapter_model() -> TinyViT:
    """Chapter 15's ViT, trained as the chapter trains it (seed 0, ``vit_study.SETTING``).

    The same computation as ``vit_study.run_seed(data, 0)``'s model (about 20 s
    of CPU on one thread), without the measurements.
    """
    from ...digits import load_digits_split
    from ...vit import build_vit, train_vit
    from ...vit_study import SETTING

    data = load_digits_split()
    model = build_vit(0)
    train_vit(model, data.X_train, data.y_train, seed=0, **SETTING)
    return model


def ink_levels(image: torch.Tensor) -> list[int]:
    """A (1, 8, 8) digit of the chapter (ink / 16) as its 64 ink levels 0-16, row by row."""
    levels = (image.reshape(-1) * 16).round()
    if not torch.equal(levels / 16, image.reshape(-1).to(levels.dtype)):
        raise ValueError(
            "image must hold ink levels k / 16 (k = 0..16), as the chapter's digits do"
        )
    return [int(v) for v in levels.tolist()]


def chapter_extras(X_train: torch.Tensor, X_test: torch.Tensor, y_test: torch.Tensor) -> dict:
    """``{"mean_image": 64 floats, "examples": [...]}`` for the explorer.

    ``mean_image`` is the mean training image (the chapter's mean-image fill,
    ``vit_study.fills``), row by row, as float32 values; ``examples`` holds,
    for each digit 0-9, the first test image of that digit: ``{"index": i,
    "label": d, "ink": 64 ink levels 0-16}``.
    """
    mean = X_train.mean(dim=0).reshape(-1).to(torch.float32)
    examples = []
    for digit in range(10):
        index = int((y_test == digit).nonzero()[0, 0])
        examples.append({"index": index, "label": digit, "ink": ink_levels(X_test[index])})
    return {"mean_image": [float(f"{v:.9g}") for v in mean.tolist()], "examples": examples}
