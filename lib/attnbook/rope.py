"""Rotary position embedding (RoPE): turn queries and keys by their position.

Su et al. (2021) give a position to a query or key by *rotating* it. The
features of a head vector of even size d are taken two at a time: pair i is
features (2i, 2i + 1), read as the point (x[2i], x[2i + 1]) of a plane, and
the vector at position m has pair i turned counter-clockwise by the angle
m * theta_i with theta_i = base^(-2i / d), from fast (i = 0, one radian per
position) to slow. This is the "adjacent pairs" convention of the RoFormer
paper; some code bases rotate the pairs (i, i + d/2) instead ("half-split"),
which is the same idea applied to a permuted vector: one model must use one
convention for both queries and keys.

Because a rotation by m * theta followed by the transpose of one by
n * theta is a rotation by (m - n) * theta, the score of a rotated query at
position m with a rotated key at position n depends on the positions only
through m - n (:func:`rope_score`).
"""

from __future__ import annotations

import numbers

import torch

from . import _validate

__all__ = [
    "rope_frequencies",
    "rope_angles",
    "apply_rope",
    "rope_score",
]


def _positions(positions: object, n: int | None = None) -> torch.Tensor:
    """Check a 1-D tensor of integer positions >= 0 (and of length n, if given)."""
    if not isinstance(positions, torch.Tensor):
        raise TypeError(
            f"positions must be a 1-D integer torch.Tensor, got {_validate._describe(positions)}"
        )
    if positions.dtype == torch.bool or positions.is_floating_point() or positions.is_complex():
        raise TypeError(f"positions must hold integers, got dtype {positions.dtype}")
    if positions.dim() != 1:
        raise ValueError(f"positions must be 1-D, got shape {tuple(positions.shape)}")
    if n is not None and positions.shape[0] != n:
        raise ValueError(
            f"positions must have one entry per row of x ({n}), got {positions.shape[0]}"
        )
    if positions.numel() and bool((positions < 0).any()):
        bad = int(positions[positions < 0][0])
        raise ValueError(f"positions must be >= 0, got {bad}")
    return positions


def _base(base: object) -> float:
    if isinstance(base, bool) or not isinstance(base, numbers.Real):
        raise TypeError(f"base must be a real number, got {base!r}")
    if not float(base) > 1.0 or float(base) == float("inf"):
        raise ValueError(f"base must be a finite number > 1, got {base!r}")
    return float(base)


def rope_frequencies(head_size: int, base: float = 10000.0) -> torch.Tensor:
    """(head_size / 2,) float64 angles per position: theta_i = base^(-2i / head_size)."""
    head_size = _validate.positive_int("head_size", head_size)
    if head_size % 2:
        raise ValueError(f"head_size must be even (features are rotated in pairs), got {head_size}")
    base = _base(base)
    exponents = torch.arange(0, head_size, 2, dtype=torch.float64) / head_size  # (d/2,)
    return base**-exponents


def rope_angles(positions: torch.Tensor, head_size: int, base: float = 10000.0) -> torch.Tensor:
    """(n, head_size / 2) float64 angles m * theta_i for each position m and pair i."""
    positions = _positions(positions)
    theta = rope_frequencies(head_size, base)  # (d/2,)
    return positions.to(torch.float64)[:, None] * theta[None, :]  # (n, d/2)


def apply_rope(x: torch.Tensor, positions: torch.Tensor, base: float = 10000.0) -> torch.Tensor:
    """Rotate each pair of features of x by its position's angle; a new tensor.

    Args:
        x: (..., n, d) floating-point queries or keys, d even (one head's size).
        positions: (n,) integer tensor, the position m >= 0 of each row of x.
        base: the base of the frequencies theta_i = base^(-2i / d) (10000 in
            the RoFormer paper).

    Returns:
        (..., n, d), same dtype and device as x: for each row at position m and
        each pair i, ``out[2i] = x[2i] cos(m theta_i) - x[2i+1] sin(m theta_i)``
        and ``out[2i+1] = x[2i] sin(m theta_i) + x[2i+1] cos(m theta_i)``.
        The angles are computed in float64 and rounded once; float16 and
        bfloat16 inputs are rotated in float32 and rounded back.
    """
    x = _validate.tensor("x", x, floating=True)
    if x.dim() < 2:
        raise ValueError(f"x must be (..., n, d) with at least 2 axes, got shape {tuple(x.shape)}")
    n, d = x.shape[-2], x.shape[-1]
    if d % 2:
        raise ValueError(
            f"x's last axis (the head size) must be even, features are rotated in pairs; "
            f"got head size {d}"
        )
    positions = _positions(positions, n)
    if d == 0:
        return x.clone()
    work = torch.float32 if x.dtype in (torch.float16, torch.bfloat16) else x.dtype
    angles = rope_angles(positions.cpu(), d, base).to(device=x.device)  # (n, d/2)
    cos, sin = angles.cos().to(work), angles.sin().to(work)  # (n, d/2) each
    pairs = x.to(work).reshape(*x.shape[:-1], d // 2, 2)  # (..., n, d/2, 2)
    a, b = pairs[..., 0], pairs[..., 1]  # (..., n, d/2) each
    turned = torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1)  # (..., n, d/2, 2)
    return turned.reshape(x.shape).to(x.dtype)


def rope_score(
    q: torch.Tensor, k: torch.Tensor, m: int, n: int, base: float = 10000.0
) -> torch.Tensor:
    """The dot product of q rotated to position m with k rotated to position n.

    q and k are (d,) vectors (d even); the result is a 0-d tensor that depends
    on m and n only through m - n.
    """
    q = _validate.tensor("q", q, ndim=1, floating=True)
    k = _validate.tensor("k", k, ndim=1, floating=True)
    _validate.same_dtype(q=q, k=k)
    if q.shape != k.shape:
        raise ValueError(
            f"q and k must have the same shape, got {tuple(q.shape)} and {tuple(k.shape)}"
        )
    qm = apply_rope(q[None], torch.tensor([m], device=q.device), base)[0]
    kn = apply_rope(k[None], torch.tensor([n], device=k.device), base)[0]
    return qm @ kn
