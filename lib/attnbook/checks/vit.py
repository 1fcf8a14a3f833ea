"""Checkers of chapter 15: patches, attention rollout and the ink baseline."""

from __future__ import annotations

from collections.abc import Callable

import torch

from ..explain import attention_rollout, ink_scores
from ..patches import patchify
from ._core import CheckReport, Mistake, _generator, _run, _see, knows
from ._explain import explainer
from ._probes import _refusing
from ._source import Shortcut

# Caught at run time in this process; read in the source a grader's proxy hands over.
_PATCHIFY_SHORTCUT = Shortcut(
    "patchify",
    ("attnbook.patches.patchify",),
    "the library's patchify, which the exercise replaces",
    remote=True,
)
_ROLLOUT_SHORTCUT = Shortcut(
    "attention_rollout",
    ("attnbook.explain.attention_rollout",),
    "the library's attention_rollout, which the exercise replaces",
    remote=True,
)

_VIT = "Attention over Images"


def _patches_permuted(images: torch.Tensor, p: int, order: tuple[int, ...]) -> torch.Tensor:
    """Cut into patches, then lay the six axes (b, rows, p, cols, p, C) out in ``order``."""
    b, C, H, W = images.shape
    grid = images.reshape(b, C, H // p, p, W // p, p)  # (b, C, rows, i, cols, j)
    return grid.permute(order).reshape(b, (H // p) * (W // p), C * p * p)


def _split_pixels_first(images: torch.Tensor, p: int) -> torch.Tensor:
    """Each axis split as (p, H/p) instead of (H/p, p); the H/p and W/p axes taken as
    the patch grid, the p axes as the pixels of a patch."""
    b, C, H, W = images.shape
    grid = images.reshape(b, C, p, H // p, p, W // p).permute(0, 3, 5, 1, 2, 4)
    return grid.reshape(b, (H // p) * (W // p), C * p * p)


@knows(
    Mistake(
        "library patchify",
        lambda images, p: patchify(images, p),
        "this calls the library's patchify, which the exercise asks you to write with "
        "reshape and permute; " + _see("An image as a sequence", _VIT),
    ),
    Mistake(
        "column by column",
        lambda images, p: _patches_permuted(images, p, (0, 4, 2, 1, 3, 5)),
        "this looks like patches numbered column by column: patch r * (width // p) + c "
        "is the one in patch-row r and patch-column c, so the patch rows must come first; "
        + _see("An image as a sequence", _VIT),
    ),
    Mistake(
        "channels last",
        lambda images, p: _patches_permuted(images, p, (0, 2, 4, 3, 5, 1)),
        "this looks like each patch's features ordered (row, column, channel), channels "
        "last: the ViT paper's convention, which works as well once the embedding is "
        "learned, but the exercise asks for the book's, (channel, row, column), the order "
        "of a Conv2d weight; " + _see("An image as a sequence", _VIT),
    ),
    Mistake(
        "reshape without permute",
        lambda images, p: images.reshape(images.shape[0], -1, images.shape[1] * p * p),
        "this looks like a plain reshape of the image into tokens: it cuts runs of "
        "consecutive pixels (strips of a row), not p x p squares; split the height and "
        "the width, then permute the patch axes before the pixel axes; "
        + _see("An image as a sequence", _VIT),
    ),
    Mistake(
        "channels in the middle",
        lambda images, p: _patches_permuted(images, p, (0, 2, 4, 3, 1, 5)),
        "this looks like each patch's features ordered (row, channel, column): the channel "
        "axis must come first within a patch, (channel, row, column); "
        + _see("An image as a sequence", _VIT),
    ),
    Mistake(
        "image transposed",
        lambda images, p: _patches_permuted(images, p, (0, 4, 2, 1, 5, 3)),
        "this looks like the patchify of the transposed image: patches column by column and "
        "each patch's pixels column by column; keep the height before the width, "
        "(b, C, H/p, p, W/p, p), and permute the patch rows first; "
        + _see("An image as a sequence", _VIT),
    ),
    Mistake(
        "patches and features swapped",
        lambda images, p: _patches_permuted(images, p, (0, 2, 4, 1, 3, 5)).transpose(1, 2),
        "this looks like (batch, C * p * p, patches), the layout of F.unfold: transpose "
        "the last two axes, one row per patch; " + _see("An image as a sequence", _VIT),
    ),
    Mistake(
        "pixels transposed",
        lambda images, p: _patches_permuted(images, p, (0, 2, 4, 1, 5, 3)),
        "this looks like the pixels of each patch read column by column; read them row by "
        "row, as the image is stored; " + _see("An image as a sequence", _VIT),
    ),
    Mistake(
        "split as (p, H/p)",
        _split_pixels_first,
        "this looks like each axis split as (p, H/p) instead of (H/p, p): in "
        "reshape(b, C, H // p, p, W // p, p) the patch index comes first and the pixel "
        "within the patch second (row = patch_row * p + i); with (p, H/p) each token "
        "gathers pixels H/p apart, a strided grid, not a p x p square (on a square image "
        "with p * p = H it looks like a transpose); " + _see("An image as a sequence", _VIT),
    ),
)
def check_patchify(fn: Callable[[torch.Tensor, int], torch.Tensor]) -> CheckReport:
    """Check ``fn(images, patch_size)``: (batch, C, H, W) -> (batch, patches, C * p * p).

    Patches are numbered row by row and each patch's features are ordered
    (channel, row in the patch, column in the patch), as
    :func:`attnbook.patches.patchify` does. A function that calls ``patchify``
    itself is rejected (the exercise writes it with reshape and permute).
    """
    g = _generator(15)
    cases = []

    hint = (
        "patches row by row, each patch's features in the order (channel, row, column): "
        "reshape to (b, C, H/p, p, W/p, p), permute to (b, H/p, W/p, C, p, p), reshape; "
        + _see("An image as a sequence", _VIT)
    )

    def case(description, images, p):
        cases.append((description, (images, p), patchify(images, p), hint))

    case("a 4x4 image of 0..15, 2x2 patches", torch.arange(16.0).reshape(1, 1, 4, 4), 2)
    case("a 4x6 image: 2 rows of 3 patches", torch.randn(1, 1, 4, 6, generator=g), 2)
    case("two 3-channel 6x6 images, 3x3 patches", torch.randn(2, 3, 6, 6, generator=g), 3)
    case("one 2-channel 4x8 image, 2x2 patches", torch.randn(1, 2, 4, 8, generator=g), 2)
    case("1x1 patches: every pixel a token", torch.randn(2, 1, 3, 2, generator=g), 1)
    return _run(
        "check_patchify",
        fn,
        cases,
        mistakes=check_patchify.mistakes,
        probe=_refusing([patchify], "the library's patchify, which the exercise replaces"),
        refuse=(_PATCHIFY_SHORTCUT,),
        explain=explainer(("image", "patch", "feature")),
    )


def _rollout_chain(
    weights: torch.Tensor,
    residual: bool,
    renormalise: bool,
    first_left: bool,
    heads: str = "mean",
):
    n = weights.shape[-1]
    result = torch.eye(n, dtype=weights.dtype).expand(weights.shape[1], n, n)
    for layer in weights:  # (b, heads, n, n)
        A = (
            layer.amax(dim=1)
            if heads == "max"
            else layer.sum(dim=1)
            if heads == "sum"
            else layer.mean(dim=1)
        )
        if residual:
            A = A + torch.eye(n, dtype=A.dtype)
        if renormalise:
            A = A / A.sum(dim=-1, keepdim=True)
        result = result @ A if first_left else A @ result
    return result


def _per_head_rollout(weights: torch.Tensor) -> torch.Tensor:
    L, b, h, n, _ = weights.shape
    per_head = weights.permute(0, 2, 1, 3, 4).reshape(L, h * b, 1, n, n)
    rolled = _rollout_chain(per_head, True, True, False)  # (h * b, n, n)
    return rolled.reshape(h, b, n, n).mean(dim=0)


@knows(
    Mistake(
        "no residual",
        lambda w: _rollout_chain(w, residual=False, renormalise=True, first_left=False),
        "this looks like the attention of each block multiplied as it is, without the "
        "identity for the residual connection: each block's output is its input plus the "
        "attention's, so add I to each block's head average ᾱ_l and halve, A_l = "
        "(ᾱ_l + I) / 2; " + _see("Attention rollout", _VIT),
    ),
    Mistake(
        "no renormalising",
        lambda w: _rollout_chain(w, residual=True, renormalise=False, first_left=False),
        "this looks like ᾱ_l + I used without renormalising (ᾱ_l, the heads' mean): its "
        "rows sum to 2, so the rows of the product sum to 2 ** layers; take "
        "A_l = (ᾱ_l + I) / 2 (or divide each row by its sum); " + _see("Attention rollout", _VIT),
    ),
    Mistake(
        "wrong order",
        lambda w: _rollout_chain(w, residual=True, renormalise=True, first_left=True),
        "this looks like the product taken in reading order, A_0 A_1 ... A_{L-1}: block 0 "
        "acts first, so it stands on the right, R = A_{L-1} ... A_1 A_0; "
        + _see("Attention rollout", _VIT),
    ),
    Mistake(
        "heads maxed",
        lambda w: _rollout_chain(w, True, True, False, heads="max"),
        "this looks like the heads combined by their maximum: rollout averages them, "
        "weights.mean(dim=heads axis); " + _see("Attention rollout", _VIT),
    ),
    Mistake(
        "heads summed",
        lambda w: _rollout_chain(w, True, True, False, heads="sum"),
        "this looks like the heads summed instead of averaged: the sum's rows add up to "
        "the number of heads, so adding I gives the residual too little weight; take the "
        "mean over the heads; " + _see("Attention rollout", _VIT),
    ),
    Mistake(
        "heads averaged last",
        lambda w: _per_head_rollout(w),
        "this looks like a rollout per head, averaged at the end: average the heads inside "
        "each block, before adding I and chaining the blocks; " + _see("Attention rollout", _VIT),
    ),
    Mistake(
        "transposed",
        lambda w: _rollout_chain(w, True, True, False).transpose(-1, -2),
        "this is the rollout transposed: row i says how much token i draws on each input, "
        "so the rows (not the columns) sum to 1; " + _see("Attention rollout", _VIT),
    ),
    Mistake(
        "library rollout",
        lambda w: attention_rollout(w),
        "this calls the library's explain.attention_rollout, which the exercise asks you to "
        "write; " + _see("Attention rollout", _VIT),
    ),
    Mistake(
        "last block only",
        lambda w: _rollout_chain(w[-1:], residual=True, renormalise=True, first_left=False),
        "this looks like the last block's matrix alone: rollout chains every block, "
        "R = A_{L-1} ... A_1 A_0; " + _see("Attention rollout", _VIT),
    ),
)
def check_attention_rollout(fn: Callable[[torch.Tensor], torch.Tensor]) -> CheckReport:
    """Check ``fn(weights)``: attention rollout of (layers, batch, heads, n, n) weights.

    The answer is (batch, n, n): per block l = 0 .. L-1, ``A_l = (ᾱ_l + I) / 2``
    with ``ᾱ_l`` the mean over the heads, rows summing to 1, chained as
    ``R = A_{L-1} ... A_1 A_0``
    (:func:`attnbook.explain.attention_rollout`, which the reader's function
    must not call).
    """
    g = _generator(16)
    cases = []

    hint = (
        "average the heads, add the identity, renormalise the rows, and multiply each "
        "later block on the left, R = A_{L-1} ... A_1 A_0; " + _see("Attention rollout", _VIT)
    )

    def case(description, layers, batch, heads, n):
        weights = torch.softmax(2 * torch.randn(layers, batch, heads, n, n, generator=g), -1)
        cases.append((description, (weights,), attention_rollout(weights), hint))

    case("one block, one head, 4 tokens", 1, 1, 1, 4)
    case("two blocks, two heads, 5 tokens", 2, 1, 2, 5)
    case("three blocks, four heads, a batch of 2", 3, 2, 4, 6)
    uniform = torch.full((2, 1, 1, 3, 3), 1 / 3)
    cases.append(("two blocks of uniform attention", (uniform,), attention_rollout(uniform), hint))
    return _run(
        "check_attention_rollout",
        fn,
        cases,
        mistakes=check_attention_rollout.mistakes,
        probe=_refusing(
            [attention_rollout], "the library's attention_rollout, which the exercise replaces"
        ),
        refuse=(_ROLLOUT_SHORTCUT,),
        explain=explainer(("image", "token", "input token")),
    )


@knows(
    Mistake(
        "mean",
        lambda images, p: patchify(images, p).mean(dim=-1),
        "this looks like the mean of each patch's pixels: the exercise asks for the total "
        "ink, the sum (the ranking is the same, the numbers are p * p times smaller); "
        + _see("A trivial baseline: ink", _VIT),
    ),
    Mistake(
        "inked pixels counted",
        lambda images, p: (patchify(images, p) > 0).sum(dim=-1).to(images.dtype),
        "this looks like a count of the pixels with any ink: sum their values instead, "
        "so a faint pixel counts less than a dark one; " + _see("A trivial baseline: ink", _VIT),
    ),
    Mistake(
        "first channel only",
        lambda images, p: patchify(images[:, :1], p).sum(dim=-1),
        "this looks like the ink of the first channel only: a patch's ink is the sum over "
        "all its channels and pixels, the whole C * p * p features of its token; "
        + _see("A trivial baseline: ink", _VIT),
    ),
    Mistake(
        "channels averaged",
        lambda images, p: patchify(images, p).sum(dim=-1) / images.shape[1],
        "this looks like the channels averaged before summing the pixels: sum over the "
        "channels too, every feature of the patch's token; "
        + _see("A trivial baseline: ink", _VIT),
    ),
    Mistake(
        "ink per channel",
        lambda images, p: (
            patchify(images, p).reshape(images.shape[0], -1, images.shape[1], p * p).sum(dim=-1)
        ),
        "this looks like one ink per channel, (batch, patches, C): sum the channels as well, "
        "one number per patch; " + _see("A trivial baseline: ink", _VIT),
    ),
    Mistake(
        "squared pixels",
        lambda images, p: (patchify(images, p) ** 2).sum(dim=-1),
        "this looks like a sum of squared pixel values: the ink is the plain sum; "
        + _see("A trivial baseline: ink", _VIT),
    ),
    Mistake(
        "patches column by column",
        lambda images, p: patchify(images.transpose(-2, -1), p).sum(dim=-1),
        "this looks like patches numbered column by column: number them row by row, as "
        "patchify does; " + _see("An image as a sequence", _VIT),
    ),
)
def check_ink(fn: Callable[[torch.Tensor, int], torch.Tensor]) -> CheckReport:
    """Check ``fn(images, patch_size)``: (batch, C, H, W) -> the summed pixels of each patch,
    (batch, patches), patches numbered row by row (:func:`attnbook.explain.ink_scores`).

    A patch's ink sums every channel and pixel of it; the first case has three
    channels."""
    g = _generator(17)
    cases = []

    hint = (
        "sum the pixel values of each p x p patch, patches numbered row by row as "
        "patchify numbers them; " + _see("A trivial baseline: ink", _VIT)
    )

    def case(description, images, p):
        cases.append((description, (images, p), ink_scores(images, p), hint))

    # Three channels in the first case (its description predates it, and the
    # chapter's stored output prints it): the ink sums every channel.
    square = torch.rand(2, 3, 4, 4, generator=g) * (torch.rand(2, 3, 4, 4, generator=g) > 0.4)
    case("two 4x4 images with blank pixels, 2x2 patches", square, 2)
    wide = torch.rand(1, 1, 4, 8, generator=g) * (torch.rand(1, 1, 4, 8, generator=g) > 0.5)
    case("a 4x8 image: 2 rows of 4 patches", wide, 2)
    case("an 8x8 digit-like image of 0..1, 4x4 patches", torch.rand(1, 1, 8, 8, generator=g), 4)
    return _run(
        "check_ink",
        fn,
        cases,
        mistakes=check_ink.mistakes,
        explain=explainer(("image", "patch")),
    )
