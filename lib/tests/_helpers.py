"""Helpers shared by the test modules (imported as ``_helpers``)."""

from __future__ import annotations

import torch


def clones(*args):
    """Copies of the tensor arguments (other arguments pass through)."""
    return [a.clone() if isinstance(a, torch.Tensor) else a for a in args]


def assert_unchanged(before, after) -> None:
    """Every tensor in ``after`` still equals its copy in ``before``."""
    for old, new in zip(before, after):
        if isinstance(new, torch.Tensor):
            assert torch.equal(old, new), "the function modified its input"
