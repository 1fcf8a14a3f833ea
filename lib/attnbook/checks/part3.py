"""Checkers of Part III: the Transformer block."""

from __future__ import annotations

from collections.abc import Callable

import torch

from ._core import CheckReport, _generator, _run, _see
from .part2 import _count

_BLOCK = "The Transformer Block"


def check_layer_norm(
    fn: Callable[[torch.Tensor, torch.Tensor, torch.Tensor, float], torch.Tensor],
) -> CheckReport:
    """Check ``fn(X, gamma, beta, eps)``: layer normalisation of X (..., D) over its last axis.

    ``gamma`` and ``beta`` are (D,); the answer is
    ``gamma * (X - mean) / sqrt(var + eps) + beta`` with the mean and the
    biased variance (divided by D) taken over the last axis, as
    ``torch.nn.functional.layer_norm`` computes it.
    """
    g = _generator(9)
    where = _see("Layer normalisation from scratch", _BLOCK)
    cases = []

    def case(description, X, gamma, beta, eps, hint):
        expected = torch.nn.functional.layer_norm(X, (X.shape[-1],), gamma, beta, eps)
        cases.append((description, (X, gamma, beta, eps), expected, hint + "; " + where))

    D = 6
    case(
        "X (4, 6), gain 1 and shift 0",
        3 * torch.randn(4, D, generator=g) + 2,
        torch.ones(D),
        torch.zeros(D),
        1e-5,
        "each row (one token's features) gets mean 0 and variance 1: mean and variance "
        "over the last axis, keepdim=True",
    )
    case(
        "X (5, 5), square: the axis matters",
        torch.randn(5, 5, generator=g) * torch.arange(1.0, 6.0),
        torch.ones(5),
        torch.zeros(5),
        1e-5,
        "normalise over the last axis (the features of one token), not over the rows",
    )
    case(
        "X (2, 3, 6) with a gain and a shift",
        torch.randn(2, 3, D, generator=g),
        torch.randn(D, generator=g),
        torch.randn(D, generator=g),
        1e-5,
        "multiply by gamma and add beta after normalising, feature by feature",
    )
    case(
        "X (3, 2), rows of two features",
        torch.randn(3, 2, generator=g),
        torch.ones(2),
        torch.zeros(2),
        1e-5,
        "the variance divides by D, not D - 1 (torch.var defaults to D - 1: pass "
        "unbiased=False, or correction=0)",
    )
    case(
        "a constant row: variance 0",
        torch.tensor([[2.0, 2.0, 2.0, 2.0], [1.0, -1.0, 0.5, 0.0]]),
        torch.ones(4),
        torch.full((4,), 0.5),
        1e-5,
        "add eps to the variance inside the square root, so a constant row gives beta "
        "instead of 0/0",
    )
    case(
        "tiny features, eps = 0.01",
        0.05 * torch.randn(3, D, generator=g),
        torch.ones(D),
        torch.zeros(D),
        1e-2,
        "eps goes inside the square root, sqrt(var + eps), not after it",
    )
    return _run("check_layer_norm", fn, cases)


def check_block_parameter_count(fn: Callable[[int, int], int]) -> CheckReport:
    """Check ``fn(num_hiddens, ffn_hiddens)``: the number of learnable parameters of
    ``attnbook.transformer.TransformerBlock(num_hiddens, num_heads, ffn_hiddens)``.

    The expected answers come from building the block and counting its entries
    (the number of heads does not change the count). Every case has fewer than
    10,000 parameters, so any wrong count fails.
    """
    from ..transformer import TransformerBlock

    if not callable(fn):
        raise TypeError(f"fn must be a function, got {fn!r}")
    cases = []
    for hiddens, heads, ffn in ((8, 2, 32), (12, 3, 48), (16, 4, 24), (10, 1, 10)):
        with torch.random.fork_rng(devices=[]):  # building a block draws random weights
            block = TransformerBlock(hiddens, heads, ffn)
        total = sum(p.numel() for p in block.parameters())
        hint = (
            "attention: four D x D matrices and four bias vectors; FFN: D x F and F x D "
            "matrices with biases of F and D; two LayerNorms, each with a gain and a shift "
            "of D; " + _see("What a block costs", _BLOCK)
        )
        cases.append(
            (
                f"num_hiddens={hiddens}, ffn_hiddens={ffn}",
                (hiddens, ffn),
                torch.tensor(float(total), dtype=torch.float64),
                hint,
            )
        )
    return _run("check_block_parameter_count", _count(fn), cases)
