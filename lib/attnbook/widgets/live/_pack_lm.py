"""Weights of chapter 10's language model (attnbook.lm.TinyLM) as float16 bytes.

Pure tensor code (no plotting, no widgets): :func:`pack_tiny_lm` turns a
:class:`attnbook.lm.TinyLM` and its tokenizer into the bytes and the
architecture that ``lm.js`` reads (``runtime.js``: ``unpack``), and
:func:`unpack_tiny_lm` turns them back into a model, so that PyTorch runs
exactly the weights the page runs. The shipped checkpoint
(``attnbook/lm_data/tiny_lm.pt``) already stores float16 weights, so packing
it loses nothing.
"""

from __future__ import annotations

import numpy as np
import torch

from ...corpus import CharTokenizer
from ...lm import TinyLM

# Version of the byte layout below; the JavaScript side refuses any other.
FORMAT = 1


def _tensors(model: TinyLM) -> list[tuple[str, torch.Tensor]]:
    """Every parameter, in the order of ``state_dict`` (PyTorch's names)."""
    return list(model.state_dict().items())


def pack_tiny_lm(model: TinyLM, tokenizer: CharTokenizer) -> tuple[bytes, dict]:
    """``(weights, arch)``: every weight as little-endian float16, and how to read them.

    ``arch`` holds the sizes (vocab_size, num_hiddens, num_heads, num_layers,
    max_len), ``chars`` (the tokenizer's characters: id i is chars[i]) and
    ``tensors``, a list of ``[name, shape]`` in the order of the bytes.
    Linear weights keep PyTorch's (out, in) layout.
    """
    if not isinstance(model, TinyLM):
        raise TypeError(f"model must be an attnbook.lm.TinyLM, got {type(model).__name__}")
    if not isinstance(tokenizer, CharTokenizer):
        raise TypeError(
            f"tokenizer must be an attnbook.lm.CharTokenizer, got {type(tokenizer).__name__}"
        )
    if tokenizer.vocab_size != model.vocab_size:
        raise ValueError(
            f"tokenizer has {tokenizer.vocab_size} characters but the model's vocab_size is "
            f"{model.vocab_size}"
        )
    parts, tensors = [], []
    for name, weight in _tensors(model):
        array = weight.detach().to("cpu", torch.float32).numpy()
        if not np.isfinite(array).all():
            raise ValueError(f"model weight {name} holds a NaN or an infinity")
        if np.abs(array).max() > 65504:
            raise ValueError(f"model weight {name} exceeds the float16 range (65504)")
        parts.append(array.astype("<f2").tobytes())
        tensors.append([name, list(array.shape)])
    arch = {
        "format": FORMAT,
        "model": "tiny-lm",
        **model.config(),
        "chars": "".join(tokenizer.chars),
        "tensors": tensors,
    }
    return b"".join(parts), arch


def unpack_tiny_lm(weights: bytes, arch: dict) -> TinyLM:
    """The model that :func:`pack_tiny_lm` packed, float32 (float16-rounded), eval mode."""
    if not isinstance(weights, (bytes, bytearray)):
        raise TypeError(f"weights must be bytes, got {type(weights).__name__}")
    if not isinstance(arch, dict) or arch.get("format") != FORMAT or arch.get("model") != "tiny-lm":
        raise ValueError(f"arch must be a tiny-lm dict with format={FORMAT}, got {arch!r:.80}")
    keys = ("vocab_size", "num_hiddens", "num_heads", "num_layers", "max_len")
    with torch.random.fork_rng(devices=[]):  # building the modules draws weights
        model = TinyLM(**{k: arch[k] for k in keys})
    values = np.frombuffer(weights, dtype="<f2")
    expected = sum(int(np.prod(shape)) for _, shape in arch["tensors"])
    if values.size != expected:
        raise ValueError(
            f"weights must hold {expected} float16 values for this arch, got {values.size}"
        )
    state, offset = {}, 0
    own = dict(_tensors(model))
    for name, shape in arch["tensors"]:
        if name not in own or list(own[name].shape) != list(shape):
            raise ValueError(f"arch tensor {name} {shape} does not match the model")
        size = int(np.prod(shape))
        chunk = values[offset : offset + size].astype(np.float32).reshape(shape)
        state[name] = torch.from_numpy(chunk.copy())
        offset += size
    model.load_state_dict(state)
    return model.eval()
