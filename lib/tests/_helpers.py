"""Helpers shared by the test modules (imported as ``_helpers``)."""

from __future__ import annotations

import torch
from hypothesis import strategies as st


def clones(*args):
    """Copies of the tensor arguments (other arguments pass through)."""
    return [a.clone() if isinstance(a, torch.Tensor) else a for a in args]


def assert_unchanged(before, after) -> None:
    """Every tensor in ``after`` still equals its copy in ``before``."""
    for old, new in zip(before, after):
        if isinstance(new, torch.Tensor):
            assert torch.equal(old, new), "the function modified its input"


def draw_valid_lens(draw, kind: str, batch: int, queries: int, keys: int, min_len: int):
    """Valid lengths in [min_len, keys] drawn by hypothesis: None for kind "none",
    (batch,) for "1d", (batch, queries) for "2d"."""
    lengths = st.integers(min_len, keys)
    if kind == "none":
        return None
    if kind == "1d":
        return torch.tensor(draw(st.lists(lengths, min_size=batch, max_size=batch)))
    size = batch * queries
    return torch.tensor(draw(st.lists(lengths, min_size=size, max_size=size))).reshape(
        batch, queries
    )


def keep_mask(lens, batch: int, queries: int, keys: int) -> torch.Tensor:
    """Boolean (batch, queries, keys) mask, True for the keys a query may see,
    built with loops from valid lengths (None, (batch,) or (batch, queries))."""
    mask = torch.ones(batch, queries, keys, dtype=torch.bool)
    if lens is None:
        return mask
    for b in range(batch):
        for q in range(queries):
            n = int(lens[b]) if lens.dim() == 1 else int(lens[b, q])
            mask[b, q, n:] = False
    return mask
