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

import torch

from ...corpus import CharTokenizer
from ...lm import TinyLM
from ._pack import load_float16, pack_float16

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
    packed, tensors = pack_float16(_tensors(model))
    arch = {
        "format": FORMAT,
        "model": "tiny-lm",
        **model.config(),
        "chars": "".join(tokenizer.chars),
        "tensors": tensors,
    }
    return packed, arch


def unpack_tiny_lm(weights: bytes, arch: dict) -> TinyLM:
    """The model that :func:`pack_tiny_lm` packed, float32 (float16-rounded), eval mode."""
    if not isinstance(arch, dict) or arch.get("format") != FORMAT or arch.get("model") != "tiny-lm":
        raise ValueError(f"arch must be a tiny-lm dict with format={FORMAT}, got {arch!r:.80}")
    keys = ("vocab_size", "num_hiddens", "num_heads", "num_layers", "max_len")
    with torch.random.fork_rng(devices=[]):  # building the modules draws weights
        model = TinyLM(**{k: arch[k] for k in keys})
    load_float16(weights, arch["tensors"], _tensors(model))
    return model.eval()
