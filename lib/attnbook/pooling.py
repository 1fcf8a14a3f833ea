"""Attention pooling by similarity: Nadaraya-Watson kernel regression.

The query is an input x, the keys are the training inputs x_i and the values
are the training targets y_i. Each query's prediction is a weighted average of
the values, with weights from a kernel of the distance between query and key.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import nn

from . import _validate
from .kernels import gaussian, get_kernel

__all__ = [
    "average_pooling",
    "nadaraya_watson",
    "loo_cv_error",
    "leave_one_out",
    "NWKernelRegression",
    "train_nw",
]


def _pair(x_train: object, y_train: object) -> tuple[torch.Tensor, torch.Tensor]:
    x_train = _validate.as_float_tensor("x_train", x_train, ndim=1)
    y_train = _validate.as_float_tensor("y_train", y_train, ndim=1)
    if x_train.shape != y_train.shape:
        raise ValueError(
            "x_train and y_train must have the same length, got "
            f"{x_train.shape[0]} and {y_train.shape[0]}"
        )
    if x_train.shape[0] == 0:
        raise ValueError("x_train must hold at least one training example, got 0")
    dtype = torch.promote_types(x_train.dtype, y_train.dtype)
    return x_train.to(dtype), y_train.to(dtype)


def average_pooling(y_train: torch.Tensor, x_query: torch.Tensor) -> torch.Tensor:
    """Predict the mean of all training targets for every query.

    Args:
        y_train: (n_train,) training targets (the values).
        x_query: (n_query,) queries; only their number matters.

    Returns:
        (n_query,) predictions, all equal to ``y_train.mean()``.
    """
    y_train = _validate.as_float_tensor("y_train", y_train, ndim=1)
    x_query = _validate.tensor("x_query", x_query, ndim=1)
    if y_train.shape[0] == 0:
        raise ValueError("y_train must hold at least one value, got 0")
    return y_train.mean().expand(x_query.shape[0]).clone()


def _kernel_weights(
    x_query: torch.Tensor,
    x_train: torch.Tensor,
    kernel: str | Callable[[torch.Tensor], torch.Tensor],
    width: float,
    exclude_self: bool = False,
) -> torch.Tensor:
    """Normalised kernel weights, (n_query, n_train), rows summing to 1.

    With ``exclude_self`` (leave-one-out), query i never attends to key i.
    """
    kernel_fn = get_kernel(kernel)
    diff = x_query.unsqueeze(1) - x_train.unsqueeze(0)  # (queries, keys)
    sq = diff**2
    self_mask = torch.eye(len(x_train), dtype=torch.bool, device=x_train.device)
    if exclude_self:
        sq = sq.masked_fill(self_mask, float("inf"))
    sq_min = sq.min(dim=1, keepdim=True).values  # (queries, 1)
    zero = torch.zeros((), dtype=diff.dtype, device=diff.device)
    if kernel_fn is gaussian:
        # Shifting by each row's smallest squared distance leaves the softmax
        # unchanged and keeps the nearest keys' scores at 0 (even when the width
        # underflows to 0 and 0 / 0 appears there), so the weights stay finite.
        scores = -((sq - sq_min) / width / width) / 2
        return torch.softmax(torch.where(torch.isnan(scores), zero, scores), dim=1)
    # A zero distance stays 0 after scaling, even when the width underflows.
    u = diff / width
    similarity = kernel_fn(torch.where(torch.isnan(u), zero, u))
    if not isinstance(similarity, torch.Tensor) or similarity.shape != diff.shape:
        raise ValueError(
            f"kernel must return a tensor of the same shape as its input "
            f"{tuple(diff.shape)}, got {_validate._describe(similarity)}"
        )
    if not bool(torch.isfinite(similarity).all()) or bool((similarity < 0).any()):
        raise ValueError(
            f"kernel {getattr(kernel, '__name__', kernel)!r} must return finite, "
            "nonnegative similarities"
        )
    similarity = similarity.to(diff.dtype)
    if exclude_self:
        similarity = similarity.masked_fill(self_mask, 0)
    total = similarity.sum(dim=1, keepdim=True)  # (queries, 1)
    empty = total == 0
    if bool(empty.any()):
        # No key lies inside a compact kernel's window (narrow width): fall back
        # to the nearest key(s), the limit that the Gaussian kernel reaches too.
        nearest = (sq == sq_min).to(diff.dtype)  # (queries, keys)
        similarity = torch.where(empty, nearest, similarity)
        total = similarity.sum(dim=1, keepdim=True)
    return similarity / total


def nadaraya_watson(
    x_train: torch.Tensor,
    y_train: torch.Tensor,
    x_query: torch.Tensor,
    kernel: str | Callable[[torch.Tensor], torch.Tensor] = "gaussian",
    width: float = 1.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Nadaraya-Watson regression: attention pooling with a distance kernel.

    f_hat(x) = sum_i K((x - x_i) / width) y_i / sum_j K((x - x_j) / width)

    Args:
        x_train: (n_train,) training inputs (keys).
        y_train: (n_train,) training targets (values).
        x_query: (n_query,) query inputs.
        kernel: a name from ``attnbook.kernels.KERNELS`` or a function of
            scaled distances.
        width: the kernel width sigma, a finite number > 0.

    Returns:
        ``(y_hat, weights)``: predictions (n_query,) and attention weights
        (n_query, n_train) whose rows sum to 1. A query with no training input
        inside a compact kernel's window attends to its nearest training
        input(s), so the result is finite for every width > 0.
    """
    x_train, y_train = _pair(x_train, y_train)
    x_query = _validate.as_float_tensor("x_query", x_query, ndim=1)
    _validate.no_nan("x_train", x_train)
    _validate.no_nan("x_query", x_query)
    dtype = torch.promote_types(x_train.dtype, x_query.dtype)
    x_train, y_train, x_query = x_train.to(dtype), y_train.to(dtype), x_query.to(dtype)
    width = _validate.positive_number("width", width)
    weights = _kernel_weights(x_query, x_train, kernel, width)  # (queries, keys)
    return weights @ y_train, weights


def loo_cv_error(
    x_train: torch.Tensor,
    y_train: torch.Tensor,
    widths: Sequence[float] | torch.Tensor,
    kernel: str | Callable[[torch.Tensor], torch.Tensor] = "gaussian",
) -> torch.Tensor:
    """Leave-one-out cross-validation error of Nadaraya-Watson for each width.

    Each training input is predicted from all the *other* training pairs.

    Args:
        x_train, y_train: (n_train,) training pairs, n_train >= 2.
        widths: (n_widths,) candidate kernel widths, each finite and > 0.
        kernel: as in :func:`nadaraya_watson`.

    Returns:
        (n_widths,) mean squared leave-one-out error for each width.
    """
    x_train, y_train = _pair(x_train, y_train)
    _validate.no_nan("x_train", x_train)
    if x_train.shape[0] < 2:
        raise ValueError(
            f"leave-one-out needs at least 2 training examples, got {x_train.shape[0]}"
        )
    if isinstance(widths, torch.Tensor):
        widths = _validate.tensor("widths", widths, ndim=(0, 1)).flatten().tolist()
    elif not isinstance(widths, Sequence) or isinstance(widths, str):
        raise TypeError(f"widths must be a sequence of numbers, got {widths!r}")
    if len(widths) == 0:
        raise ValueError("widths must hold at least one width, got none")
    errors = []
    for i, width in enumerate(widths):
        width = _validate.positive_number(f"widths[{i}]", width)
        weights = _kernel_weights(x_train, x_train, kernel, width, exclude_self=True)
        errors.append(((weights @ y_train - y_train) ** 2).mean())
    return torch.stack(errors)


def leave_one_out(x: torch.Tensor) -> torch.Tensor:
    """Row i holds every entry of x except x[i]: (n,) -> (n, n - 1), n >= 1 (n = 1 gives (1, 0))."""
    x = _validate.tensor("x", x, ndim=1)
    n = x.shape[0]
    if n == 0:
        raise ValueError("x must hold at least one entry, got shape (0,)")
    keep = ~torch.eye(n, dtype=torch.bool, device=x.device)  # (n, n)
    return x.unsqueeze(0).expand(n, n)[keep].reshape(n, n - 1)


class NWKernelRegression(nn.Module):
    """Parametric attention pooling: a Gaussian kernel with a learnable width.

    alpha(x, x_i) = softmax_i(-((x - x_i) w)^2 / 2), so w plays the part of
    1 / sigma. ``w`` starts at a random value in [0, 1) drawn from torch's
    global generator (seed it with ``torch.manual_seed`` for repeatable runs).
    """

    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.rand(1))
        self.attention_weights: torch.Tensor | None = None

    def forward(
        self, queries: torch.Tensor, keys: torch.Tensor, values: torch.Tensor
    ) -> torch.Tensor:
        """Pool the values for each query.

        Args:
            queries: (n,) query inputs.
            keys: (n, m) keys for each query, or (m,) keys shared by all queries.
            values: the same shape as ``keys``.

        Returns:
            (n,) predictions. ``self.attention_weights`` keeps the (n, m)
            weights (detached) for plotting.
        """
        queries = _validate.as_float_tensor("queries", queries, ndim=1)
        keys = _validate.as_float_tensor("keys", keys, ndim=(1, 2))
        values = _validate.as_float_tensor("values", values, ndim=(1, 2))
        if keys.shape != values.shape:
            raise ValueError(
                f"keys and values must have the same shape, got {tuple(keys.shape)} "
                f"and {tuple(values.shape)}"
            )
        n = queries.shape[0]
        if keys.shape[-1] == 0:
            raise ValueError(
                f"keys must hold at least one key per query, got shape {tuple(keys.shape)}"
            )
        if keys.dim() == 1:
            keys = keys.expand(n, -1)  # (n, m)
            values = values.expand(n, -1)
        elif keys.shape[0] != n:
            raise ValueError(
                f"keys must have one row per query ({n}), got shape {tuple(keys.shape)}"
            )
        scores = -(((queries.unsqueeze(1) - keys) * self.w) ** 2) / 2  # (n, m)
        weights = torch.softmax(scores, dim=1)
        self.attention_weights = weights.detach()
        return (weights * values).sum(dim=1)  # (n,)


def train_nw(
    model: NWKernelRegression,
    x_train: torch.Tensor,
    y_train: torch.Tensor,
    lr: float = 0.5,
    epochs: int = 5,
) -> list[float]:
    """Fit ``model.w`` by full-batch SGD with leave-one-out keys.

    Each training input is a query that attends to the other n - 1 training
    inputs (keys of shape (n, n - 1)), so the model cannot just copy its own
    target. The objective is the mean squared error over the training set,
    which is exactly the leave-one-out cross-validation error of a Gaussian
    kernel of width 1 / |w| (see :func:`loo_cv_error`; w enters squared).

    Returns:
        The objective before each of the ``epochs`` updates, as Python floats.
    """
    if not isinstance(model, NWKernelRegression):
        raise TypeError(f"model must be an NWKernelRegression, got {model!r}")
    x_train, y_train = _pair(x_train, y_train)
    _validate.no_nan("x_train", x_train)
    if x_train.shape[0] < 2:
        raise ValueError(
            f"leave-one-out needs at least 2 training examples, got {x_train.shape[0]}"
        )
    lr = _validate.positive_number("lr", lr)
    epochs = _validate.positive_int("epochs", epochs)
    keys = leave_one_out(x_train)  # (n, n - 1)
    values = leave_one_out(y_train)  # (n, n - 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for _ in range(epochs):
        optimizer.zero_grad()
        loss = ((model(x_train, keys, values) - y_train) ** 2).mean()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses
