"""Kernels for Nadaraya-Watson regression: similarity as a function of distance.

Each kernel maps a tensor of (already scaled) distances ``u`` to nonnegative
similarities of the same shape, elementwise. Integer tensors are promoted to
the default floating dtype.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from . import _validate

__all__ = [
    "gaussian",
    "boxcar",
    "constant",
    "triangular",
    "epanechnikov",
    "KERNELS",
    "get_kernel",
]


def gaussian(u: torch.Tensor) -> torch.Tensor:
    """exp(-u^2 / 2): smooth, never exactly zero. Same shape as ``u``."""
    u = _validate.as_float_tensor("u", u)
    return torch.exp(-(u**2) / 2)


def boxcar(u: torch.Tensor) -> torch.Tensor:
    """1 where |u| < 1, else 0: every neighbour inside the window counts equally."""
    u = _validate.as_float_tensor("u", u)
    return (u.abs() < 1).to(u.dtype)


def constant(u: torch.Tensor) -> torch.Tensor:
    """1 everywhere: ignores the distance, so pooling becomes a plain average."""
    u = _validate.as_float_tensor("u", u)
    return torch.ones_like(u)


def triangular(u: torch.Tensor) -> torch.Tensor:
    """max(0, 1 - |u|): falls linearly to zero at |u| = 1.

    Some texts call this kernel "Epanechnikov"; it is not (see :func:`epanechnikov`).
    """
    u = _validate.as_float_tensor("u", u)
    return torch.clamp(1 - u.abs(), min=0)


def epanechnikov(u: torch.Tensor) -> torch.Tensor:
    """(3/4) max(0, 1 - u^2): a parabola on |u| <= 1, zero outside; integrates to 1.

    Its peak is 3/4, not 1: the factor makes it a probability density.
    """
    u = _validate.as_float_tensor("u", u)
    return 0.75 * torch.clamp(1 - u**2, min=0)


KERNELS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "gaussian": gaussian,
    "boxcar": boxcar,
    "constant": constant,
    "triangular": triangular,
    "epanechnikov": epanechnikov,
}


def get_kernel(kernel: str | Callable[[torch.Tensor], torch.Tensor]):
    """Look a kernel up by name, or pass a callable through unchanged."""
    if callable(kernel):
        return kernel
    if not isinstance(kernel, str):
        raise TypeError(f"kernel must be one of {sorted(KERNELS)} or a function, got {kernel!r}")
    if kernel not in KERNELS:
        raise ValueError(f"kernel must be one of {sorted(KERNELS)} or a function, got {kernel!r}")
    return KERNELS[kernel]
