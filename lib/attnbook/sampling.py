"""Choosing the next token from a model's logits: temperature, top-k and top-p.

A language model gives one logit per token of the vocabulary; decoding turns
them into a distribution and draws from it. Three knobs reshape that
distribution, applied in this order (the order Hugging Face's ``generate``
uses too):

* **temperature** T > 0 divides the logits: ``softmax(z / T)``. T < 1 sharpens
  the distribution toward its most likely token, T > 1 flattens it.
* **top-k** keeps the k most likely tokens and gives every other token
  probability 0 (Fan, Lewis & Dauphin 2018). Tokens tied with the k-th are kept.
* **top-p**, or *nucleus* sampling (Holtzman et al. 2020), keeps the smallest
  set of most likely tokens whose probabilities add up to at least p, and gives
  the rest probability 0. Unlike top-k, the number kept adapts: one token when
  the model is sure, many when it is not.

The kept probabilities are renormalised to sum to 1. All functions work on
(..., vocab_size) logits, one distribution per row, and never modify their input.
:func:`draw` then picks a token by inverting the cumulative distribution at a
uniform random number, so a caller can see how far each draw fell from the
boundary between two tokens (:func:`draw_margin`).
"""

from __future__ import annotations

import math
import numbers

import torch

from . import _validate

__all__ = [
    "check_top_k",
    "check_top_p",
    "top_k_filter",
    "top_p_filter",
    "next_token_probs",
    "draw",
    "draw_margin",
]


def check_top_k(top_k: object) -> int | None:
    """``top_k`` as an int >= 1, or None (keep every token)."""
    if top_k is None:
        return None
    if isinstance(top_k, bool) or not isinstance(top_k, numbers.Integral):
        raise TypeError(f"top_k must be an integer >= 1 or None, got {top_k!r}")
    if top_k < 1:
        raise ValueError(f"top_k must be an integer >= 1 or None, got {top_k!r}")
    return int(top_k)


def check_top_p(top_p: object) -> float | None:
    """``top_p`` as a float in (0, 1], or None (keep every token)."""
    if top_p is None:
        return None
    top_p = _validate.real_number("top_p", top_p)
    if not 0 < top_p <= 1:
        raise ValueError(f"top_p must lie in (0, 1] or be None, got {top_p!r}")
    return top_p


def _logits(logits: object) -> torch.Tensor:
    """logits: a floating tensor (..., vocab) with at least the vocabulary axis."""
    logits = _validate.tensor("logits", logits, floating=True)
    if logits.dim() == 0:
        raise ValueError("logits must have a vocabulary axis (..., vocab), got a 0-d tensor")
    return logits


def top_k_filter(logits: torch.Tensor, top_k: int) -> torch.Tensor:
    """Logits (..., vocab) with every token outside each row's ``top_k`` largest set
    to -inf (ties with the k-th largest are kept) -> (..., vocab)."""
    _logits(logits)
    top_k = check_top_k(top_k)
    if top_k is None:
        raise TypeError("top_k must be an integer >= 1, got None (next_token_probs takes None)")
    if top_k >= logits.shape[-1]:
        return logits.clone()
    kth = logits.topk(top_k, dim=-1).values[..., -1:]  # (..., 1): the k-th largest logit
    return logits.masked_fill(logits < kth, -math.inf)


def top_p_filter(logits: torch.Tensor, top_p: float) -> torch.Tensor:
    """Logits (..., vocab) with every token outside each row's nucleus set to -inf.

    The nucleus is the smallest set of most likely tokens whose probabilities
    (the softmax of the logits) add up to at least ``top_p``: sorted from the
    most likely down, a token is kept if the tokens before it add up to less
    than ``top_p``. The most likely token is always kept. Tokens of equal
    probability are taken in order of index, the lower first (as the live
    explorer of chapter 10 takes them), so a tie at the boundary keeps the
    lower index.
    """
    _logits(logits)
    top_p = check_top_p(top_p)
    if top_p is None:
        raise TypeError("top_p must be a number in (0, 1], got None (next_token_probs takes None)")
    probs = torch.softmax(logits.double(), dim=-1)  # (..., vocab)
    sorted_probs, order = probs.sort(dim=-1, descending=True, stable=True)
    before = sorted_probs.cumsum(dim=-1) - sorted_probs  # (..., vocab): mass ahead of each
    keep_sorted = before < top_p
    keep = torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)
    return logits.masked_fill(~keep, -math.inf)


def next_token_probs(
    logits: torch.Tensor,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
) -> torch.Tensor:
    """The distribution to sample the next token from, (..., vocab) float64.

    Divides ``logits`` (..., vocab) by ``temperature`` (> 0), keeps the
    ``top_k`` most likely tokens and then the nucleus of mass ``top_p`` (None
    skips either), and renormalises with a softmax. Each row sums to 1.
    """
    _logits(logits)
    temperature = _validate.real_number("temperature", temperature)
    if not math.isfinite(temperature) or temperature <= 0:
        raise ValueError(f"temperature must be a finite number > 0, got {temperature!r}")
    scaled = logits.double() / temperature  # (..., vocab)
    if top_k is not None:
        scaled = top_k_filter(scaled, top_k)
    if top_p is not None:
        scaled = top_p_filter(scaled, top_p)
    return torch.softmax(scaled, dim=-1)


def _uniforms(
    rows: int, generator: torch.Generator | None, device: torch.device | None = None
) -> torch.Tensor:
    """(rows, 1) float64 numbers in (0, 1] on ``device``.

    Drawn on the generator's own device (the CPU for None, the global
    generator) and then moved, so one seed gives the same numbers whatever
    the device of the probabilities."""
    source = generator.device if generator is not None else torch.device("cpu")
    u = 1.0 - torch.rand(rows, 1, dtype=torch.float64, generator=generator, device=source)
    return u.to(device) if device is not None else u


def _check_probs(probs: object) -> torch.Tensor:
    """probs: (batch, vocab) floating, finite, >= 0, each row with a positive total."""
    probs = _validate.tensor("probs", probs, ndim=2, floating=True)
    if probs.shape[-1] == 0:
        raise ValueError(
            f"probs must hold at least one token per row, got shape {tuple(probs.shape)}"
        )
    if probs.numel():
        if not bool(torch.isfinite(probs).all()) or bool((probs < 0).any()):
            raise ValueError(
                "probs must hold finite probabilities >= 0 (logits? pass them through "
                "next_token_probs first)"
            )
        if bool((probs.sum(-1) <= 0).any()):
            raise ValueError("probs must give every row a positive total, got a row of zeros")
    return probs


def draw(probs: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """One token per row of ``probs`` (batch, vocab) -> (batch, 1) int64 ids.

    Draws u uniform in (0, 1] from ``generator`` (None: the global generator)
    and returns, for each row, the first token whose cumulative probability
    reaches u times the row's total: token i with probability probs[i]. A token
    of probability 0 is never drawn.
    """
    probs = _check_probs(probs)
    generator = _validate.torch_generator("generator", generator, optional=True)
    cdf = probs.double().cumsum(dim=-1)  # (batch, vocab)
    u = _uniforms(probs.shape[0], generator, probs.device) * cdf[:, -1:]  # (batch, 1)
    return torch.searchsorted(cdf, u).clamp_max(probs.shape[-1] - 1)


def draw_margin(probs: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """How far the uniform numbers that :func:`draw` would use fall from the nearest
    boundary between two tokens, per row: (batch,) float64.

    Called with a generator in the same state as :func:`draw`'s, it sees the
    same numbers. A draw whose margin exceeds the rounding error of the
    probabilities picks the same token on every machine.
    """
    probs = _check_probs(probs)
    generator = _validate.torch_generator("generator", generator, optional=True)
    cdf = probs.double().cumsum(dim=-1)  # (batch, vocab)
    u = _uniforms(probs.shape[0], generator, probs.device) * cdf[:, -1:]  # (batch, 1)
    return (cdf - u).abs().min(dim=-1).values
