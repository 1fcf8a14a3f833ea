"""Plots for the chapters: attention heatmaps and regression fits.

Every function draws on a given Axes or on a new ``matplotlib.figure.Figure``
(never through pyplot, so nothing global changes and nothing is shown as a
side effect) and returns the Figure it drew on. In a notebook, a returned
Figure is displayed as a PNG.
"""

from __future__ import annotations

import io
from collections.abc import Sequence

import numpy as np
import torch
from matplotlib import figure as _mpl_figure
from matplotlib.axes import Axes
from matplotlib.ticker import MaxNLocator

from . import _validate


class Figure(_mpl_figure.Figure):
    """A matplotlib Figure that a notebook displays as PNG by itself.

    Figures made without pyplot are not shown by Jupyter until pyplot's inline
    backend has been activated; ``_repr_png_`` makes them display anyway,
    without touching any global setting.
    """

    def _repr_png_(self) -> bytes:
        buffer = io.BytesIO()
        self.savefig(buffer, format="png", bbox_inches="tight")
        return buffer.getvalue()


def _to_numpy(name: str, value: object, ndim: int) -> np.ndarray:
    if isinstance(value, torch.Tensor):
        value = value.detach().to("cpu", torch.float32).numpy()
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{name} must be a tensor or array of numbers, got {value!r}") from err
    if array.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} axes, got shape {array.shape}")
    return array


def show_heatmaps(
    matrices: torch.Tensor | np.ndarray,
    xlabel: str,
    ylabel: str,
    titles: Sequence[str] | None = None,
    figsize: tuple[float, float] = (2.5, 2.5),
    cmap: str = "Reds",
    vmin: float | None = None,
    vmax: float | None = None,
) -> Figure:
    """Draw a grid of attention-weight heatmaps with one shared colour scale.

    Args:
        matrices: (panel rows, panel columns, queries, keys) weights.
        xlabel, ylabel: axis labels (shown on the bottom row / first column).
        titles: one title per panel column, or None.
        figsize: size of one panel in inches; the figure grows with the grid.
        cmap: a matplotlib colour map name.
        vmin, vmax: ends of the shared colour scale (default: the smallest and
            largest entries), e.g. 0 and 1 to compare with other figures.

    Returns:
        The new Figure, with a colour bar.
    """
    array = _to_numpy("matrices", matrices, 4)
    if array.size == 0:
        raise ValueError(f"matrices must not be empty, got shape {array.shape}")
    nrows, ncols = array.shape[:2]
    if titles is not None and len(titles) != ncols:
        raise ValueError(
            f"titles must have one entry per panel column ({ncols}), got {len(titles)}"
        )
    fig = Figure(figsize=(figsize[0] * ncols + 0.8, figsize[1] * nrows), layout="constrained")
    axes = fig.subplots(nrows, ncols, sharex=True, sharey=True, squeeze=False)
    vmin = float(array.min()) if vmin is None else _validate.real_number("vmin", vmin)
    vmax = float(array.max()) if vmax is None else _validate.real_number("vmax", vmax)
    if vmin > vmax:
        raise ValueError(f"vmin must not exceed vmax, got vmin={vmin} and vmax={vmax}")
    if vmin == vmax:
        vmax = vmin + 1.0
    for i in range(nrows):
        for j in range(ncols):
            ax = axes[i, j]
            image = ax.imshow(array[i, j], cmap=cmap, vmin=vmin, vmax=vmax)
            # Rows and columns are queries and keys: label whole indices only.
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.yaxis.set_major_locator(MaxNLocator(integer=True))
            if i == nrows - 1:
                ax.set_xlabel(xlabel)
            if j == 0:
                ax.set_ylabel(ylabel)
            if titles is not None and i == 0:
                ax.set_title(titles[j])
    fig.colorbar(image, ax=axes, shrink=0.6)
    return fig


def heatmap(
    matrix: torch.Tensor | np.ndarray,
    *,
    ax: Axes | None = None,
    xlabel: str = "Keys",
    ylabel: str = "Queries",
    title: str | None = None,
    cmap: str = "Reds",
    vmin: float | None = None,
    vmax: float | None = None,
    extent: Sequence[float] | None = None,
    colorbar: bool = True,
) -> Figure:
    """Draw one (queries, keys) weight matrix; returns the Figure drawn on."""
    array = _to_numpy("matrix", matrix, 2)
    if ax is None:
        ax = Figure(figsize=(4, 3.2), layout="constrained").subplots()
    image = ax.imshow(
        array,
        cmap=cmap,
        vmin=vmin,
        vmax=vmax,
        extent=extent,
        aspect="auto",
        interpolation="nearest",
    )
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title is not None:
        ax.set_title(title)
    if colorbar:
        ax.figure.colorbar(image, ax=ax)
    return ax.figure


def plot_fit(
    data,
    y_hat: torch.Tensor | None = None,
    *,
    label: str = "Prediction",
    ax: Axes | None = None,
    title: str | None = None,
) -> Figure:
    """Plot the truth, the training data and (optionally) predictions.

    Args:
        data: a :class:`attnbook.data.RegressionData` (x_train, y_train,
            x_query, y_query).
        y_hat: (n_query,) predictions at ``data.x_query``, or None.
        label: legend label for the predictions.
        ax: Axes to draw on; a new Figure when None.

    Returns:
        The Figure drawn on.
    """
    missing = [f for f in ("x_train", "y_train", "x_query", "y_query") if not hasattr(data, f)]
    if missing:
        raise TypeError(
            f"data must be a RegressionData (see make_regression_data), got {data!r} "
            f"without {', '.join(missing)}"
        )
    x_query = _to_numpy("data.x_query", data.x_query, 1)
    if ax is None:
        ax = Figure(figsize=(4.5, 3), layout="constrained").subplots()
    ax.plot(
        _to_numpy("data.x_train", data.x_train, 1),
        _to_numpy("data.y_train", data.y_train, 1),
        "o",
        color="0.55",
        markersize=4,
        alpha=0.7,
        label="Training data",
    )
    ax.plot(x_query, _to_numpy("data.y_query", data.y_query, 1), "k-", label="Truth")
    if y_hat is not None:
        predictions = _to_numpy("y_hat", y_hat, 1)
        if predictions.shape != x_query.shape:
            raise ValueError(
                f"y_hat must have one prediction per query {x_query.shape}, "
                f"got shape {predictions.shape}"
            )
        ax.plot(x_query, predictions, "-", color="tab:red", linewidth=2, label=label)
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    ax.set_xlim(float(x_query.min()), float(x_query.max()))
    if title is not None:
        ax.set_title(title)
    ax.legend(loc="upper right", fontsize="small")
    return ax.figure
