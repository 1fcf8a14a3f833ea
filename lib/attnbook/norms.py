"""Normalisation over the feature axis: layer normalisation and RMSNorm, from scratch.

Both act on the last axis of a tensor (..., D), one token's features at a time,
so a token's result never depends on another token or on the batch.

* :func:`layer_norm` (Ba, Kiros & Hinton 2016) centres the D features on their
  mean, divides by the square root of their (biased, 1/D) variance plus a small
  ``eps``, then applies a learned gain ``gamma`` and shift ``beta``, both (D,):
  ``gamma * (x - mean) / sqrt(var + eps) + beta``.
* :func:`rms_norm` (Zhang & Sennrich 2019) skips the centring and the shift: it
  divides by the root mean square of the features, ``sqrt(mean(x^2) + eps)``,
  and applies the gain.

:class:`LayerNorm` and :class:`RMSNorm` are the learnable modules. Their
parameters are called ``weight`` (gamma) and ``bias`` (beta), as in
``torch.nn.LayerNorm`` and ``torch.nn.RMSNorm``, so that weights copy across by
name.

**Half precision.** For float16 and bfloat16 inputs both functions compute in
float32 and round the result once, back to the input's dtype, as PyTorch's own
kernels do. Squaring in float16 would overflow (float16 stops at 65,504, so a
feature 256 away from its row's mean already squares to infinity) and silently
turn the output into zeros.
"""

from __future__ import annotations

import torch
from torch import nn

from . import _validate

__all__ = [
    "layer_norm",
    "rms_norm",
    "LayerNorm",
    "RMSNorm",
]


def _check(X: object, gamma: object, beta: object, eps: object) -> float:
    _validate.tensor("X", X, floating=True)
    if X.dim() < 1:
        raise ValueError(
            f"X must have at least one axis (the features), got shape {tuple(X.shape)}"
        )
    D = X.shape[-1]
    for name, p in (("gamma", gamma), ("beta", beta)):
        if p is None:
            continue
        _validate.tensor(name, p, ndim=1, floating=True)
        if p.shape[0] != D:
            raise ValueError(
                f"{name} must have shape ({D},) to match X's last axis, got {tuple(p.shape)}"
            )
    return _validate.positive_number("eps", eps)


# Inputs of these dtypes are normalised in float32 and rounded back once.
_LOW_PRECISION = (torch.float16, torch.bfloat16)


def _compute_dtype(X: torch.Tensor) -> torch.dtype:
    return torch.float32 if X.dtype in _LOW_PRECISION else X.dtype


def layer_norm(
    X: torch.Tensor,
    gamma: torch.Tensor | None = None,
    beta: torch.Tensor | None = None,
    eps: float = 1e-5,
) -> torch.Tensor:
    """Layer normalisation of X (..., D) over its last axis -> (..., D).

    ``gamma`` and ``beta`` are (D,) or None (gain 1, shift 0). The variance is
    the biased one (divided by D, not D - 1), and ``eps`` sits inside the square
    root, as in ``torch.nn.functional.layer_norm``. A float16 or bfloat16 X
    is normalised in float32 and the result rounded back to X's dtype.
    """
    eps = _check(X, gamma, beta, eps)
    work = _compute_dtype(X)
    Xw = X.to(work)
    mean = Xw.mean(dim=-1, keepdim=True)  # (..., 1)
    centred = Xw - mean  # (..., D)
    var = (centred * centred).mean(dim=-1, keepdim=True)  # (..., 1), biased: / D
    out = centred / torch.sqrt(var + eps)  # (..., D): mean 0, variance about 1
    if gamma is not None:
        out = out * gamma.to(work)
    if beta is not None:
        out = out + beta.to(work)
    return out.to(X.dtype)


def rms_norm(X: torch.Tensor, gamma: torch.Tensor | None = None, eps: float = 1e-5) -> torch.Tensor:
    """RMSNorm of X (..., D) over its last axis -> (..., D): ``gamma * x / sqrt(mean(x^2) + eps)``.

    No centring and no shift; ``gamma`` is (D,) or None (gain 1). A float16
    or bfloat16 X is normalised in float32 and the result rounded back to X's dtype.
    """
    eps = _check(X, gamma, None, eps)
    work = _compute_dtype(X)
    Xw = X.to(work)
    mean_square = (Xw * Xw).mean(dim=-1, keepdim=True)  # (..., 1)
    out = Xw / torch.sqrt(mean_square + eps)  # (..., D)
    if gamma is not None:
        out = out * gamma.to(work)
    return out.to(X.dtype)


class LayerNorm(nn.Module):
    """Learnable layer normalisation over the last axis of size ``num_hiddens``.

    Parameters ``weight`` (gamma, initialised to ones) and ``bias`` (beta,
    zeros), both (num_hiddens,): ``2 * num_hiddens`` numbers.
    """

    def __init__(self, num_hiddens: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.num_hiddens = _validate.positive_int("num_hiddens", num_hiddens)
        self.eps = _validate.positive_number("eps", eps)
        self.weight = nn.Parameter(torch.ones(self.num_hiddens))
        self.bias = nn.Parameter(torch.zeros(self.num_hiddens))

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        """X (..., num_hiddens) -> (..., num_hiddens)."""
        _validate.model_input(
            "X", X, dtype=self.weight.dtype, width=self.num_hiddens, width_name="num_hiddens",
            batch_axes=None,
        )  # fmt: skip
        return layer_norm(X, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.num_hiddens}, eps={self.eps:g}"


class RMSNorm(nn.Module):
    """Learnable RMSNorm over the last axis: parameter ``weight`` (gamma, ones), (num_hiddens,)."""

    def __init__(self, num_hiddens: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.num_hiddens = _validate.positive_int("num_hiddens", num_hiddens)
        self.eps = _validate.positive_number("eps", eps)
        self.weight = nn.Parameter(torch.ones(self.num_hiddens))

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        """X (..., num_hiddens) -> (..., num_hiddens)."""
        _validate.model_input(
            "X", X, dtype=self.weight.dtype, width=self.num_hiddens, width_name="num_hiddens",
            batch_axes=None,
        )  # fmt: skip
        return rms_norm(X, self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.num_hiddens}, eps={self.eps:g}"
