"""Cutting images into square patches, and putting them back.

A Vision Transformer reads an image as a sequence: ``patchify`` cuts a batch
of images (batch, channels, height, width) into non-overlapping ``p x p``
patches and flattens each into one token of ``channels * p * p`` features.
Patches are numbered row by row (patch ``r * (width // p) + c`` is the one in
patch-row r, patch-column c), and the features of a patch are ordered
(channel, row in the patch, column in the patch): the order in which a
``Conv2d`` with kernel and stride ``p`` flattens its weights, so a linear map
of the patches is that convolution. ``unpatchify`` is the exact inverse.
"""

from __future__ import annotations

import torch

from . import _validate

__all__ = [
    "patchify",
    "unpatchify",
]


def _patch_size(patch_size: object) -> int:
    return _validate.positive_int("patch_size", patch_size)


def patchify(images: torch.Tensor, patch_size: int) -> torch.Tensor:
    """Cut (batch, channels, height, width) images into (batch, patches, channels * p * p).

    ``height`` and ``width`` must be multiples of ``patch_size`` (p); there are
    ``(height // p) * (width // p)`` patches, numbered row by row.
    """
    p = _patch_size(patch_size)
    _validate.tensor("images", images, ndim=4)
    b, C, H, W = images.shape
    if H % p or W % p:
        raise ValueError(
            f"images of shape {tuple(images.shape)} cannot be cut into {p}x{p} patches: "
            f"height {H} and width {W} must be multiples of patch_size={p}"
        )
    grid = images.reshape(b, C, H // p, p, W // p, p)  # (b, C, rows, p, cols, p)
    grid = grid.permute(0, 2, 4, 1, 3, 5)  # (b, rows, cols, C, p, p)
    return grid.reshape(b, (H // p) * (W // p), C * p * p)


def unpatchify(patches: torch.Tensor, patch_size: int, height: int, width: int) -> torch.Tensor:
    """Put (batch, patches, channels * p * p) back into (batch, channels, height, width).

    The inverse of :func:`patchify`: ``unpatchify(patchify(x, p), p, H, W)``
    equals ``x`` exactly.
    """
    p = _patch_size(patch_size)
    H = _validate.positive_int("height", height)
    W = _validate.positive_int("width", width)
    _validate.tensor("patches", patches, ndim=3)
    if H % p or W % p:
        raise ValueError(
            f"height {H} and width {W} must be multiples of patch_size={p}, got an image of {H}x{W}"
        )
    b, n, features = patches.shape
    rows, cols = H // p, W // p
    if n != rows * cols or features % (p * p):
        raise ValueError(
            f"patches of shape {tuple(patches.shape)} do not make {H}x{W} images with "
            f"patch_size={p}: expected {rows * cols} patches of channels * {p * p} features"
        )
    C = features // (p * p)
    grid = patches.reshape(b, rows, cols, C, p, p).permute(0, 3, 1, 4, 2, 5)
    return grid.reshape(b, C, H, W)  # (b, C, H, W)
