"""A tiny character-level language model, and decoding with a key-value cache.

The pieces of chapter 10, in the order it uses them:

* :func:`load_corpus` and :class:`CharTokenizer`, from :mod:`attnbook.corpus`:
  the training text that ships with the library (whole, or its training and
  held-out parts), and characters to integer ids and back.
* :class:`TinyLM`: a decoder-only model (token and learned position
  embeddings, pre-LN blocks with causal self-attention, a final LayerNorm and
  an output projection). ``forward(ids)`` returns next-token logits of shape
  (batch, t, vocab_size); ``forward(ids, cache)`` processes only new tokens and
  reads the keys and values of earlier ones from a :class:`KVCache`.
* :func:`train_lm`: next-token training on random windows of the corpus.
* :func:`generate`: greedy (temperature 0) or sampled decoding (temperature,
  top-k, top-p; see :mod:`attnbook.sampling`), with or without the cache, which
  give the same logits up to float rounding.
* :func:`load_checkpoint`: the small trained model that ships with the library
  (``lm_data/tiny_lm.pt``, made by ``make lm-checkpoint``).
* :func:`kv_cache_numbers` and :func:`matmul_flops`: what the cache costs in
  memory and saves in arithmetic.

The decoder block here is deliberately small and self-contained (its own
attention with a cache); it is not the library's general Transformer block.
"""

from __future__ import annotations

import io
import math
import numbers
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import torch
from torch import nn

from . import _validate, sampling
from ._lm_model import CausalSelfAttention, DecoderBlock, KVCache, TinyLM
from .corpus import CORPUS_FILE, CharTokenizer, _data_file, load_corpus

__all__ = [
    "CHECKPOINT_FILE",
    "CHECKPOINT_RECIPE",
    "CORPUS_FILE",
    "SAMPLE_LENGTH",
    "SAMPLE_PROMPT",
    "SAMPLE_STEPS",
    "CausalSelfAttention",
    "CharTokenizer",
    "DecoderBlock",
    "KVCache",
    "TinyLM",
    "checkpoint_info",
    "corpus_loss",
    "generate",
    "kv_cache_numbers",
    "load_checkpoint",
    "load_corpus",
    "matmul_flops",
    "save_checkpoint",
    "train_checkpoint_recipe",
    "train_lm",
]

CHECKPOINT_FILE = "tiny_lm.pt"
# How the shipped checkpoint was trained (tools/tiny_lm.py, `make lm-checkpoint`).
CHECKPOINT_RECIPE = {
    "num_hiddens": 64,
    "num_heads": 4,
    "num_layers": 2,
    "max_len": 128,
    "steps": 2000,
    "batch_size": 16,
    "lr": 3e-3,
    "seed": 0,
}
# The run that made the checkpoint wrote a greedy sample from this prompt at
# these steps; the checkpoint stores them (see checkpoint_info).
SAMPLE_PROMPT = "The query "
SAMPLE_STEPS = (0, 100, 300, 1000, 2000)
SAMPLE_LENGTH = 70


# The model itself is in _lm_model (KVCache, CausalSelfAttention, DecoderBlock, TinyLM).


# ---------------------------------------------------------------- training


def train_lm(
    model: TinyLM,
    ids: torch.Tensor,
    steps: int,
    batch_size: int = 16,
    lr: float = 3e-3,
    seed: int = 0,
    context: int | None = None,
    callback: Callable[[int, TinyLM], None] | None = None,
) -> list[float]:
    """Train ``model`` to predict each next token of random windows of ``ids``.

    Each step draws ``batch_size`` windows of ``context + 1`` consecutive ids
    (``context`` defaults to ``model.max_len``) with a generator seeded by
    ``seed``, and takes one AdamW step on the mean cross-entropy of predicting
    ids 1..context from ids 0..context-1. The learning rate decays linearly to
    a tenth of ``lr``. ``callback(step, model)``, if given, runs after each
    step (counted from 1), e.g. to take samples along the way.

    Args:
        ids: (n,) int64 token ids of the corpus.

    Returns:
        The training loss of every step (a list of floats).
    """
    if not isinstance(model, TinyLM):
        raise TypeError(f"model must be a TinyLM, got {type(model).__name__}")
    steps = _validate.positive_int("steps", steps)
    batch_size = _validate.positive_int("batch_size", batch_size)
    lr = _validate.positive_number("lr", lr)
    context = model.max_len if context is None else _validate.positive_int("context", context)
    if context > model.max_len:
        raise ValueError(f"context must be at most max_len={model.max_len}, got {context}")
    ids = model.check_ids(_validate.tensor("ids", ids, ndim=1).unsqueeze(0), "ids")[0]
    if ids.numel() < context + 2:
        raise ValueError(f"ids must hold more than context + 1 = {context + 1} tokens")
    seed = _validate.seed_int("seed", seed)
    if callback is not None and not callable(callback):
        raise TypeError(f"callback must be a function or None, got {_validate._describe(callback)}")
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: 1 - 0.9 * s / steps)
    offsets = torch.arange(context + 1, device=ids.device)  # (context + 1,)
    losses = []
    was_training = model.training
    model.train()
    for _ in range(steps):
        # Drawn on the CPU generator and moved: the same windows on every device.
        starts = torch.randint(0, ids.numel() - context, (batch_size,), generator=generator)
        starts = starts.to(ids.device)
        windows = ids[starts.unsqueeze(1) + offsets]  # (batch, context + 1)
        logits = model(windows[:, :-1])  # (batch, context, vocab)
        loss = nn.functional.cross_entropy(logits.flatten(0, 1), windows[:, 1:].flatten())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        schedule.step()
        losses.append(loss.item())
        if callback is not None:
            callback(len(losses), model)
    model.train(was_training)
    return losses


@torch.no_grad()
def corpus_loss(model: TinyLM, text: str | None = None) -> float:
    """Mean next-token cross-entropy (nats) over ``text`` (default: the corpus),
    read in consecutive windows of ``max_len + 1`` characters (a text shorter
    than that is one window). The text needs at least 2 characters."""
    _validate.module("model", model, TinyLM)
    text = load_corpus() if text is None else text
    if not isinstance(text, str):
        raise TypeError(f"text must be a str or None, got {_validate._describe(text)}")
    if len(text) < 2:
        raise ValueError(f"text must hold at least 2 characters (one to predict), got {text!r}")
    ids = CharTokenizer(load_corpus()).encode(text)
    _validate.tokens_fit("text", ids[None], vocab=model.vocab_size, max_len=None)
    width = model.max_len + 1
    if ids.numel() <= width:
        windows = ids[None]  # (1, len(text)): the whole text is one window
    else:
        usable = (ids.numel() - 1) // model.max_len * model.max_len + 1
        starts = torch.arange(0, usable - 1, model.max_len)
        windows = ids[starts.unsqueeze(1) + torch.arange(width)]  # (windows, max_len + 1)
    windows = windows.to(next(model.parameters()).device)
    total, count = 0.0, 0
    for chunk in windows.split(64):
        logits = model(chunk[:, :-1])
        loss = nn.functional.cross_entropy(
            logits.flatten(0, 1), chunk[:, 1:].flatten(), reduction="sum"
        )
        total, count = total + loss.item(), count + chunk[:, 1:].numel()
    return total / count


# ---------------------------------------------------------------- decoding


def _ids_for_decoding(ids: object) -> tuple[torch.Tensor, bool]:
    ids = _validate.tensor("ids", ids, ndim=(1, 2))
    return (ids.unsqueeze(0), True) if ids.dim() == 1 else (ids, False)


@torch.no_grad()
def generate(
    model: TinyLM,
    ids: torch.Tensor,
    steps: int,
    temperature: float = 0.0,
    use_cache: bool = True,
    seed: int | None = None,
    return_logits: bool = False,
    top_k: int | None = None,
    top_p: float | None = None,
):
    """Extend ``ids`` by ``steps`` tokens, one at a time.

    Args:
        model: a :class:`TinyLM`.
        ids: (t,) or (batch, t) int64 prompt, t >= 1.
        steps: how many tokens to add; t + steps may not exceed ``model.max_len``.
        temperature: 0 picks the most likely token (greedy); > 0 samples from
            softmax(logits / temperature), restricted by ``top_k`` and ``top_p``.
        use_cache: True (a bool) keeps every layer's keys and values (a
            :class:`KVCache`) and feeds the model only the newest token; False
            recomputes the whole sequence each step. Both give the same logits
            up to float rounding.
        seed: with temperature > 0, seeds a private ``torch.Generator`` (the
            global random state is left alone); None draws from the global one.
        return_logits: also return the logits of each new token.
        top_k: when sampling, draw only from the ``top_k`` most likely tokens
            (None: all of them); see :mod:`attnbook.sampling`.
        top_p: when sampling, draw only from the nucleus, the fewest most
            likely tokens whose probabilities add up to at least ``top_p``
            (None: all of them). Greedy decoding ignores both.

    Returns:
        The ids extended by ``steps`` tokens, shaped like ``ids``: (t + steps,) or
        (batch, t + steps); with ``return_logits``, also the logits,
        (steps, vocab_size) or (batch, steps, vocab_size).
    """
    if not isinstance(model, TinyLM):
        raise TypeError(f"model must be a TinyLM, got {type(model).__name__}")
    batch_ids, flat = _ids_for_decoding(ids)
    batch_ids = model.check_ids(batch_ids)
    if isinstance(steps, bool) or not isinstance(steps, numbers.Integral) or steps < 0:
        raise ValueError(f"steps must be an integer >= 0, got {steps!r}")
    t = batch_ids.shape[1]
    if t == 0:
        raise ValueError("ids must hold at least one token (a prompt), got an empty sequence")
    if t + steps > model.max_len:
        raise ValueError(
            f"steps={steps} would take the sequence to {t + steps} tokens, beyond the "
            f"model's max_len={model.max_len} (the prompt has {t})"
        )
    temperature = _validate.real_number("temperature", temperature)
    if not math.isfinite(temperature) or temperature < 0:
        raise ValueError(f"temperature must be a finite number >= 0, got {temperature!r}")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, numbers.Integral)):
        raise TypeError(f"seed must be an integer or None, got {seed!r}")
    if seed is not None:
        seed = _validate.seed_int("seed", seed, negative=True)
    if not isinstance(use_cache, bool):
        raise TypeError(f"use_cache must be True or False, got {use_cache!r}")
    return_logits = _validate.flag("return_logits", return_logits)
    top_k, top_p = sampling.check_top_k(top_k), sampling.check_top_p(top_p)
    generator = None
    if temperature > 0 and seed is not None:
        # A CPU generator on every device: sampling.draw draws its uniform
        # numbers on it and moves them, so a seed gives the same text anywhere.
        generator = torch.Generator().manual_seed(int(seed))
    was_training = model.training
    model.eval()
    out, logits_seen = batch_ids, []
    cache = KVCache() if use_cache else None
    feed = batch_ids
    for _ in range(steps):
        logits = model(feed, cache)[:, -1]  # (batch, vocab): scores of the next token
        logits_seen.append(logits)
        if temperature == 0:
            token = logits.argmax(dim=-1, keepdim=True)  # (batch, 1)
        else:
            probs = sampling.next_token_probs(logits, temperature, top_k, top_p)
            token = sampling.draw(probs, generator)  # (batch, 1)
        out = torch.cat([out, token], dim=1)
        feed = token if use_cache else out
    model.train(was_training)
    if logits_seen:
        logits = torch.stack(logits_seen, 1)  # (batch, steps, vocab)
    else:
        logits = torch.zeros(batch_ids.shape[0], 0, model.vocab_size, device=batch_ids.device)
    if flat:
        out, logits = out[0], logits[0]
    return (out, logits) if return_logits else out


# ---------------------------------------------------------------- checkpoint


def train_checkpoint_recipe(
    steps: int | None = None,
) -> tuple[TinyLM, list[float], dict[int, str]]:
    """Train the shipped checkpoint's model from scratch by :data:`CHECKPOINT_RECIPE`
    (``steps`` overrides its number of steps, e.g. for a quick partial check).

    The model trains on ``load_corpus("train")`` only, with the vocabulary of
    the whole corpus; ``load_corpus("held-out")`` stays unseen, to measure how
    well it predicts text it never trained on.

    Returns the model (float32, eval mode), its training losses, and the greedy
    samples (:data:`SAMPLE_LENGTH` characters after :data:`SAMPLE_PROMPT`) it
    wrote at each of :data:`SAMPLE_STEPS` that the run reached.
    """
    if steps is not None:  # refused before the model is built and sampled
        steps = _validate.positive_int("steps", steps)
    recipe = CHECKPOINT_RECIPE
    tokenizer = CharTokenizer(load_corpus())
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(recipe["seed"])
        model = TinyLM(
            tokenizer.vocab_size,
            recipe["num_hiddens"],
            recipe["num_heads"],
            recipe["num_layers"],
            recipe["max_len"],
        )
    prompt = tokenizer.encode(SAMPLE_PROMPT)
    samples = {}

    def sample(step: int, model: TinyLM) -> None:
        if step in SAMPLE_STEPS:
            ids = generate(model, prompt, SAMPLE_LENGTH)
            samples[step] = tokenizer.decode(ids[len(prompt) :])

    sample(0, model)
    losses = train_lm(
        model,
        tokenizer.encode(load_corpus("train")),
        recipe["steps"] if steps is None else steps,
        batch_size=recipe["batch_size"],
        lr=recipe["lr"],
        seed=recipe["seed"],
        callback=sample,
    )
    return model.eval(), losses, samples


def save_checkpoint(
    model: TinyLM, path: str | Path, losses: list[float], samples: dict[int, str]
) -> None:
    """Save ``model`` as a float16 state dict, with its config, its losses on the
    training and the held-out parts of the corpus, its training losses and the
    samples it wrote while training.

    ``path`` is a file name (str or path) or a binary file object; ``losses``
    a list of finite numbers; ``samples`` maps training steps (integers >= 0)
    to text.
    """
    _validate.module("model", model, TinyLM)
    if not isinstance(path, (str, os.PathLike)) and not hasattr(path, "write"):
        raise TypeError(
            f"path must be a file name or a binary file, got {_validate._describe(path)}"
        )
    if isinstance(losses, (str, bytes)) or not isinstance(losses, Sequence):
        raise TypeError(f"losses must be a list of numbers, got {_validate._describe(losses)}")
    for i, loss in enumerate(losses):
        _validate.finite_number(f"losses[{i}]", loss)
    if not isinstance(samples, Mapping):
        raise TypeError(
            f"samples must be a dict of step -> text, got {_validate._describe(samples)}"
        )
    for step, text in samples.items():
        _validate.nonnegative_int(f"samples key {step!r}", step)
        if not isinstance(text, str):
            raise TypeError(f"samples[{step!r}] must be a str, got {_validate._describe(text)}")
    state = {k: v.detach().to(torch.float16) for k, v in model.state_dict().items()}
    saved = {
        "config": model.config(),
        "state": state,
        "train_loss": corpus_loss(model, load_corpus("train")),
        "held_out_loss": corpus_loss(model, load_corpus("held-out")),
        "losses": torch.tensor(losses, dtype=torch.float32),
        "samples": dict(samples),
    }
    torch.save(saved, path)


def load_checkpoint() -> tuple[TinyLM, CharTokenizer]:
    """The model that ships with the library (float32, eval mode) and its tokenizer.

    The weights are stored in float16, so every machine loads the very same
    numbers. Its mean losses on the training and the held-out text are
    ``checkpoint_info()["train_loss"]`` and ``["held_out_loss"]``.
    """
    with _data_file(CHECKPOINT_FILE).open("rb") as handle:
        saved = torch.load(handle, weights_only=True)
    with torch.random.fork_rng(devices=[]):  # building the modules draws weights
        model = TinyLM(**saved["config"])
    model.load_state_dict({k: v.to(torch.float32) for k, v in saved["state"].items()})
    return model.eval(), CharTokenizer(load_corpus())


def checkpoint_info() -> dict:
    """What the shipped checkpoint records besides its weights: ``config``,
    ``train_loss`` and ``held_out_loss`` (its mean loss in nats per character
    on ``load_corpus("train")`` and on ``load_corpus("held-out")``), ``losses`` (a tensor, the
    training loss of every step), ``samples`` (step -> the greedy sample of
    :data:`SAMPLE_LENGTH` characters after :data:`SAMPLE_PROMPT` written at that
    step of training) and ``bytes`` (the file's size)."""
    with _data_file(CHECKPOINT_FILE).open("rb") as handle:
        raw = handle.read()
    saved = torch.load(io.BytesIO(raw), weights_only=True)
    keep = ("config", "train_loss", "held_out_loss", "losses", "samples")
    return {**{k: saved[k] for k in keep}, "bytes": len(raw)}


# ---------------------------------------------------------------- cost


def kv_cache_numbers(
    num_layers: int,
    steps: int,
    num_hiddens: int,
    num_heads: int = 1,
    num_kv_heads: int | None = None,
) -> int:
    """How many numbers a key-value cache holds for one sequence of ``steps`` tokens.

    Keys and values (2) for every layer and token: 2 * layers * t * D. With
    grouped-query attention ``num_kv_heads`` of the ``num_heads`` heads keep
    keys and values (multi-query: 1), which scales the count by
    num_kv_heads / num_heads.
    """
    num_layers = _validate.positive_int("num_layers", num_layers)
    num_hiddens = _validate.positive_int("num_hiddens", num_hiddens)
    num_heads = _validate.positive_int("num_heads", num_heads)
    if isinstance(steps, bool) or not isinstance(steps, numbers.Integral) or steps < 0:
        raise ValueError(f"steps must be an integer >= 0, got {steps!r}")
    kv = num_heads if num_kv_heads is None else _validate.positive_int("num_kv_heads", num_kv_heads)
    if num_hiddens % num_heads or num_heads % kv:
        raise ValueError(
            f"num_heads must divide num_hiddens and num_kv_heads must divide num_heads, got "
            f"num_hiddens={num_hiddens}, num_heads={num_heads}, num_kv_heads={kv}"
        )
    return 2 * num_layers * int(steps) * (num_hiddens // num_heads) * kv


def matmul_flops(model: TinyLM, t: int, use_cache: bool) -> int:
    """Floating-point operations in matrix products to produce the logits of
    position t (0-based) given tokens 0..t.

    With the cache, the model runs on token t alone against the stored keys and
    values of tokens 0..t-1; without it, it reruns all t + 1 tokens. Counted
    with ``torch.utils.flop_counter.FlopCounterMode`` (torch >= 2.1): every
    matrix multiplication, 2 operations per multiply-add.
    """
    from torch.utils.flop_counter import FlopCounterMode

    if not isinstance(model, TinyLM):
        raise TypeError(f"model must be a TinyLM, got {type(model).__name__}")
    if isinstance(t, bool) or not isinstance(t, numbers.Integral) or not 0 <= t < model.max_len:
        raise ValueError(f"t must be an integer in [0, {model.max_len - 1}], got {t!r}")
    use_cache = _validate.flag("use_cache", use_cache)
    ids = torch.zeros(1, t + 1, dtype=torch.long, device=next(model.parameters()).device)
    with torch.no_grad():
        cache = None
        if use_cache:
            cache = KVCache()
            if t > 0:
                model(ids[:, :t], cache)
        counter = FlopCounterMode(display=False)
        with counter:
            model(ids[:, t:] if use_cache else ids, cache)
    return int(counter.get_total_flops())
