"""Weights of an attention-only model as float16 bytes, and the heads to show.

Pure tensor code (no plotting, no widgets): :func:`pack_attention_only` turns an
:class:`attnbook.induction.AttentionOnlyTransformer` into the bytes and the
architecture the JavaScript runtime reads (``runtime.js``: ``unpack``), and
:func:`unpack_attention_only` turns them back into a model, so that PyTorch can
run exactly the weights the page runs. :func:`find_heads` picks the
previous-token head of layer 0 and the induction head of the last layer by
their scores on a seeded batch of the chapter's task.
"""

from __future__ import annotations

import numpy as np
import torch

from ...induction import AttentionOnlyTransformer, head_scores, make_repeat_batch

# Version of the byte layout below; the JavaScript side refuses any other.
FORMAT = 1


def _tensors(model: AttentionOnlyTransformer) -> list[tuple[str, torch.Tensor]]:
    named = [("embed", model.embed.weight), ("position", model.position.weight)]
    for i, layer in enumerate(model.layers):
        for name in ("W_q", "W_k", "W_v", "W_o"):
            named.append((f"layers.{i}.{name}", getattr(layer, name).weight))
    named.append(("unembed", model.unembed.weight))
    return named


def pack_float16(named: list[tuple[str, torch.Tensor]]) -> tuple[bytes, list]:
    """Named weights as little-endian float16 bytes, one after another, and the
    ``[name, shape]`` list an arch carries to read them back. Refuses a NaN, an
    infinity or a value beyond float16's range (65504), naming the weight.
    Every explorer's packer uses it."""
    parts, tensors = [], []
    for name, weight in named:
        array = weight.detach().to("cpu", torch.float32).numpy()
        if not np.isfinite(array).all():
            raise ValueError(f"model weight {name} holds a NaN or an infinity")
        if np.abs(array).max() > 65504:
            raise ValueError(f"model weight {name} exceeds the float16 range (65504)")
        parts.append(array.astype("<f2").tobytes())
        tensors.append([name, list(array.shape)])
    return b"".join(parts), tensors


def load_float16(weights: bytes, tensors: list, named: list[tuple[str, torch.Tensor]]) -> None:
    """Copy ``weights`` (from :func:`pack_float16`, described by ``tensors``) into
    the model's tensors ``named``, which must have the same names, in the same
    order, and the same shapes."""
    if not isinstance(weights, (bytes, bytearray)):
        raise TypeError(f"weights must be bytes, got {type(weights).__name__}")
    values = np.frombuffer(weights, dtype="<f2")
    expected = sum(int(np.prod(shape)) for _, shape in tensors)
    if values.size != expected:
        raise ValueError(
            f"weights must hold {expected} float16 values for this arch, got {values.size}"
        )
    if [name for name, _ in tensors] != [name for name, _ in named]:
        raise ValueError("arch tensors do not match the model's parameters")
    offset = 0
    with torch.no_grad():
        for (name, shape), (_, weight) in zip(tensors, named, strict=True):
            if list(weight.shape) != list(shape):
                raise ValueError(
                    f"arch tensor {name} {shape} does not match the model's {list(weight.shape)}"
                )
            size = int(np.prod(shape))
            chunk = values[offset : offset + size].astype(np.float32).reshape(shape)
            weight.copy_(torch.from_numpy(chunk))
            offset += size


def pack_attention_only(model: AttentionOnlyTransformer) -> tuple[bytes, dict]:
    """``(weights, arch)``: every weight as little-endian float16, and how to read them.

    ``arch`` holds the sizes (vocab, num_hiddens, num_heads, num_layers,
    max_len) and ``tensors``, a list of ``[name, shape]`` in the order of the
    bytes. Linear weights keep PyTorch's (out, in) layout.
    """
    if not isinstance(model, AttentionOnlyTransformer):
        raise TypeError(
            f"model must be an attnbook.induction.AttentionOnlyTransformer, got {type(model).__name__}"
        )
    packed, tensors = pack_float16(_tensors(model))
    arch = {
        "format": FORMAT,
        "model": "attention-only",
        "vocab": model.vocab,
        "num_hiddens": model.num_hiddens,
        "num_heads": model.num_heads,
        "num_layers": model.num_layers,
        "max_len": model.max_len,
        "tensors": tensors,
    }
    return packed, arch


def unpack_attention_only(weights: bytes, arch: dict) -> AttentionOnlyTransformer:
    """The model that ``pack_attention_only`` packed, in float32 (float16-rounded weights)."""
    if not isinstance(arch, dict) or arch.get("format") != FORMAT:
        raise ValueError(f"arch must be a dict with format={FORMAT}, got {arch!r:.80}")
    model = AttentionOnlyTransformer(
        vocab=arch["vocab"],
        num_hiddens=arch["num_hiddens"],
        num_heads=arch["num_heads"],
        num_layers=arch["num_layers"],
        max_len=arch["max_len"],
    )
    load_float16(weights, arch["tensors"], _tensors(model))
    return model


def find_heads(model: AttentionOnlyTransformer, seed: int = 1) -> dict:
    """``{"previous": [0, h], "induction": [last, h]}``: the heads with the best scores.

    Scores are ``induction.head_scores`` on 128 sequences of the chapter's task
    (segment 12, gaps 0 to 12, or shorter when ``max_len`` is under 36) drawn
    with ``seed``.
    """
    length = model.max_len
    segment = min(12, max(2, length // 3))
    max_gap = min(12, length - 2 * segment)
    batch = make_repeat_batch(
        128, length=length, segment=segment, vocab=model.vocab, max_gap=max_gap, seed=seed
    )
    scores = head_scores(model, batch)
    last = model.num_layers - 1
    return {
        "previous": [0, int(scores["previous"][0].argmax())],
        "induction": [last, int(scores["induction"][last].argmax())],
    }


# How chapter 11 (book/induction-heads.ipynb) trains the model it shows.
CHAPTER_SETUP = {
    "model": {"vocab": 64, "num_hiddens": 64, "num_heads": 2, "num_layers": 2, "max_len": 40},
    "seed": 0,
    "train": {"steps": 250, "batch": 64, "lr": 3e-3, "record_every": 10, "copy_only": True},
}


def chapter_model() -> AttentionOnlyTransformer:
    """Chapter 11's two-layer model, trained as the chapter trains it (seed 0, 250 steps)."""
    from ...induction import train_induction

    seed = CHAPTER_SETUP["seed"]
    model = AttentionOnlyTransformer(**CHAPTER_SETUP["model"], seed=seed)
    train_induction(model, seed=seed, **CHAPTER_SETUP["train"])
    return model
