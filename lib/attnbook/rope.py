"""Rotary position embedding (RoPE): turn queries and keys by their position.

Su et al. (2021) give a position to a query or key by *rotating* it. The
features of a head vector of even size d are taken two at a time: pair r is
features (2r, 2r + 1), read as the point (x[2r], x[2r + 1]) of a plane, and
the vector at position i has pair r turned counter-clockwise by the angle
i * theta_r with theta_r = base^(-2r / d), from fast (r = 0, one radian per
position) to slow. (These are chapter 14's symbols: i and j for positions,
r for the pair.) This is the "adjacent pairs" convention of the RoFormer
paper; some code bases rotate the pairs (r, r + d/2) instead ("half-split"),
which is the same idea applied to a permuted vector: one model must use one
convention for both queries and keys.

Because a rotation by i * theta followed by the transpose of one by
j * theta is a rotation by (j - i) * theta, the score of a rotated query at
position i with a rotated key at position j depends on the positions only
through i - j (:func:`rope_score`).
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
    """Check a 1-D tensor of positions >= 0 (and of length n, if given).

    Integer positions are the usual case; real (floating-point) positions are
    accepted too, for position interpolation, which squeezes a long sequence
    into the range of positions seen in training (position i becomes i * s).
    """
    if not isinstance(positions, torch.Tensor):
        raise TypeError(
            f"positions must be a 1-D torch.Tensor of integer or real positions, got "
            f"{_validate._describe(positions)}"
        )
    if positions.dtype == torch.bool or positions.is_complex():
        raise TypeError(
            f"positions must hold integers or real numbers, got dtype {positions.dtype}"
        )
    if positions.dim() != 1:
        raise ValueError(f"positions must be 1-D, got shape {tuple(positions.shape)}")
    if n is not None and positions.shape[0] != n:
        raise ValueError(
            f"positions must have one entry per row of x ({n}), got {positions.shape[0]}"
        )
    if positions.is_floating_point() and positions.numel():
        finite = torch.isfinite(positions)
        if not bool(finite.all()):
            raise ValueError(f"positions must be finite, got {float(positions[~finite][0])}")
    if positions.numel() and bool((positions < 0).any()):
        bad = positions[positions < 0][0]
        bad = float(bad) if positions.is_floating_point() else int(bad)
        raise ValueError(f"positions must be >= 0, got {bad}")
    return positions


def _position(name: str, value: object, device: torch.device) -> torch.Tensor:
    """One position >= 0 (an integer, or a real number for interpolation) as a (1,) tensor."""
    if isinstance(value, torch.Tensor) and value.dim() == 0 and not value.is_complex():
        value = value.item()
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        value = _validate.nonnegative_int(name, value)  # below 2**63 too
    elif _validate.finite_number(name, value) < 0:
        raise ValueError(f"{name} must be >= 0, got {value!r}")
    return torch.tensor([value], device=device)


def _angle_dtype(dtype: object) -> torch.dtype:
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"angle_dtype must be a floating-point torch.dtype, got {dtype!r}")
    return dtype


def _base(base: object) -> float:
    if isinstance(base, bool) or not isinstance(base, numbers.Real):
        raise TypeError(f"base must be a real number, got {base!r}")
    if not float(base) > 1.0 or float(base) == float("inf"):
        raise ValueError(f"base must be a finite number > 1, got {base!r}")
    return float(base)


def rope_frequencies(head_size: int, base: float = 10000.0) -> torch.Tensor:
    """(head_size / 2,) float64 angles per position: theta_r = base^(-2r / head_size)."""
    head_size = _validate.positive_int("head_size", head_size)
    if head_size % 2:
        raise ValueError(f"head_size must be even (features are rotated in pairs), got {head_size}")
    base = _base(base)
    exponents = torch.arange(0, head_size, 2, dtype=torch.float64) / head_size  # (d/2,)
    return base**-exponents


def rope_angles(
    positions: torch.Tensor,
    head_size: int,
    base: float = 10000.0,
    angle_dtype: torch.dtype = torch.float64,
) -> torch.Tensor:
    """(n, head_size / 2) angles i * theta_r for each position i and pair r.

    By default in float64. ``angle_dtype=torch.float32`` (or bfloat16) computes
    them as much code does: the positions and the frequencies are rounded to
    that dtype and multiplied there, so large i * theta_r carry that dtype's
    rounding error.
    """
    positions = _positions(positions)
    angle_dtype = _angle_dtype(angle_dtype)
    theta = rope_frequencies(head_size, base).to(angle_dtype)  # (d/2,)
    return positions.to(angle_dtype)[:, None] * theta[None, :]  # (n, d/2)


def apply_rope(
    x: torch.Tensor,
    positions: torch.Tensor,
    base: float = 10000.0,
    angle_dtype: torch.dtype = torch.float64,
) -> torch.Tensor:
    """Rotate each pair of features of x by its position's angle; a new tensor.

    Args:
        x: (..., n, d) floating-point queries or keys, d even (one head's size).
        positions: (n,) tensor, the position i >= 0 of each row of x: integers,
            or finite real numbers (position interpolation uses i * s).
        base: the base of the frequencies theta_r = base^(-2r / d) (10000 in
            the RoFormer paper).
        angle_dtype: the dtype the angles i * theta_r are computed in
            (:func:`rope_angles`); float64 unless you want to measure what a
            lower precision does.

    Returns:
        (..., n, d), same dtype and device as x: for each row at position i and
        each pair r, ``out[2r] = x[2r] cos(i theta_r) - x[2r+1] sin(i theta_r)``
        and ``out[2r+1] = x[2r] sin(i theta_r) + x[2r+1] cos(i theta_r)``.
        The angles are computed in ``angle_dtype`` (float64 by default) and
        their cosines and sines rounded once; float16 and bfloat16 inputs are
        rotated in float32 and rounded back.
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
    angles = rope_angles(positions.cpu(), d, base, angle_dtype).to(device=x.device)  # (n, d/2)
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
    qm = apply_rope(q[None], _position("m", m, q.device), base)[0]
    kn = apply_rope(k[None], _position("n", n, k.device), base)[0]
    return qm @ kn
