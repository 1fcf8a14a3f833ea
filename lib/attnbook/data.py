"""The regression dataset used throughout the attention-pooling chapter."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import torch

from . import _validate

__all__ = [
    "true_function",
    "RegressionData",
    "make_regression_data",
]


def true_function(x: torch.Tensor) -> torch.Tensor:
    """f(x) = 2 sin(x) + x^0.8, elementwise, for x >= 0. Same shape as ``x``."""
    x = _validate.as_float_tensor("x", x)
    if bool((x < 0).any()):
        raise ValueError(f"x must be >= 0 (x^0.8 is not real below 0), got {x.min().item()}")
    return 2 * torch.sin(x) + x**0.8


@dataclass(frozen=True)
class RegressionData:
    """Training pairs and query points for Nadaraya-Watson regression.

    x_train: (n_train,) sorted inputs in [0, 5]; y_train: (n_train,) noisy targets;
    x_query: (50,) the grid 0, 0.1, ..., 4.9; y_query: (50,) noise-free targets.
    """

    x_train: torch.Tensor
    y_train: torch.Tensor
    x_query: torch.Tensor
    y_query: torch.Tensor

    @property
    def n_train(self) -> int:
        return self.x_train.shape[0]


def make_regression_data(n_train: int = 50, noise: float = 0.5, seed: int = 0) -> RegressionData:
    """Draw the chapter's dataset: y = f(x) + Normal(0, noise^2) noise.

    Inputs are drawn uniformly from [0, 5] and sorted, so that attention
    heatmaps over the training inputs show structure. The same ``seed`` always
    gives the same data, and the global random state is left untouched.
    """
    n_train = _validate.positive_int("n_train", n_train)
    if isinstance(noise, bool) or not isinstance(noise, numbers.Real):
        raise TypeError(f"noise must be a real number, got {noise!r}")
    if not math.isfinite(noise) or noise < 0:
        raise ValueError(f"noise must be a finite number >= 0, got {noise!r}")
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"seed must be an integer, got {seed!r}")
    if not -(2**63) <= seed < 2**64:
        raise ValueError(f"seed must lie in [-2**63, 2**64), got {seed}")
    generator = torch.Generator().manual_seed(int(seed))
    x_train, _ = torch.sort(torch.rand(n_train, generator=generator) * 5)
    eps = torch.randn(n_train, generator=generator) * noise
    y_train = true_function(x_train) + eps
    x_query = torch.arange(50, dtype=torch.float32) / 10  # 0.0, 0.1, ..., 4.9
    return RegressionData(x_train, y_train, x_query, true_function(x_query))
