"""Plots for the chapters: attention heatmaps, regression fits, position similarity.

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
from matplotlib import colormaps
from matplotlib import figure as _mpl_figure
from matplotlib.axes import Axes
from matplotlib.cm import ScalarMappable
from matplotlib.colors import Colormap, Normalize
from matplotlib.patches import Patch, Rectangle
from matplotlib.ticker import MaxNLocator

from . import _validate

__all__ = [
    "Figure",
    "show_heatmaps",
    "heatmap",
    "plot_fit",
    "position_similarity_grid",
]


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


def _colormap(cmap: object) -> Colormap:
    """A colour map given by name (or a ``Colormap``); an unknown name is refused by name."""
    if isinstance(cmap, Colormap):
        return cmap
    if not isinstance(cmap, str):
        raise TypeError(f"cmap must be a matplotlib colour map name, got {cmap!r}")
    try:
        return colormaps[cmap]
    except KeyError:
        raise ValueError(
            f"cmap must be a matplotlib colour map name (such as 'Reds' or 'viridis'), got {cmap!r}"
        ) from None


def _numbers(name: str, value: object, count: int) -> tuple[float, ...]:
    """``count`` finite numbers (a tuple or list), such as a figure size or an extent."""
    sized = isinstance(value, (Sequence, np.ndarray)) and not isinstance(value, (str, bytes))
    if not sized or len(value) != count:
        raise TypeError(f"{name} must be a sequence of {count} numbers, got {value!r}")
    return tuple(_validate.finite_number(f"{name}[{i}]", v) for i, v in enumerate(value))


def _colour_range(array: np.ndarray, vmin: object, vmax: object) -> tuple[float, float]:
    """The ends of a shared colour scale: from 0 (or below, for negative data) to the top."""
    low = min(0.0, float(array.min())) if vmin is None else _validate.real_number("vmin", vmin)
    high = float(array.max()) if vmax is None else _validate.real_number("vmax", vmax)
    if low > high:
        raise ValueError(f"vmin must not exceed vmax, got vmin={low} and vmax={high}")
    return (low, high) if high > low else (low, low + 1.0)


def _masked_cells(mask: object, shape: tuple[int, ...]) -> np.ndarray | None:
    """``mask`` as a boolean array of ``shape`` (True = masked), or None for no mask."""
    if mask is None:
        return None
    if isinstance(mask, torch.Tensor):
        mask = mask.detach().cpu().numpy()
    hidden = np.asarray(mask)
    if hidden.dtype != bool:
        raise TypeError(f"mask must be a boolean array (True = masked), got dtype {hidden.dtype}")
    try:
        return np.broadcast_to(hidden, shape)
    except ValueError as err:
        raise ValueError(
            f"mask must broadcast to the matrices' shape {shape}, got shape {hidden.shape}"
        ) from err


def _hatch(ax: Axes, hidden: np.ndarray) -> None:
    """Cover each row's runs of masked cells with one hatched, unfilled rectangle."""
    for row, cells in enumerate(hidden):
        edges = np.flatnonzero(np.diff(np.concatenate(([0], cells.astype(int), [0]))))
        for first, stop in zip(edges[::2], edges[1::2]):
            ax.add_patch(
                Rectangle(
                    (first - 0.5, row - 0.5),
                    stop - first,
                    1.0,
                    fill=False,
                    hatch=_HATCH,
                    edgecolor=_HATCH_COLOUR,
                    linewidth=0.0,
                )
            )


_HATCH = "////"
_HATCH_COLOUR = "0.45"


def show_heatmaps(
    matrices: torch.Tensor | np.ndarray,
    xlabel: str,
    ylabel: str,
    titles: Sequence[str] | None = None,
    figsize: tuple[float, float] = (2.5, 2.5),
    cmap: str = "Reds",
    vmin: float | None = None,
    vmax: float | None = None,
    *,
    mask: torch.Tensor | np.ndarray | None = None,
    colorbar_label: str = "weight",
) -> Figure:
    """Draw a grid of (queries, keys) heatmaps that share one labelled colour scale.

    Args:
        matrices: (panel rows, panel columns, queries, keys) weights.
        xlabel, ylabel: axis labels, written once along the bottom row and the
            first column.
        titles: one title per panel column, or None.
        figsize: size of one panel in inches; the figure grows with the grid.
        cmap: a matplotlib colour map name.
        vmin, vmax: ends of the shared colour scale. By default it runs from 0
            (or from the smallest entry, if some entry is negative) to the
            largest entry, so that pale always means "near 0".
        mask: None, or a boolean array that broadcasts to the shape of
            ``matrices``, True where a cell is masked. Masked cells are left
            uncoloured and hatched, so "masked" is told apart from "small";
            a legend entry says what the hatching means.
        colorbar_label: the label of the colour bar.

    Returns:
        The new Figure; its last Axes is the colour bar.
    """
    values = _to_numpy("matrices", matrices, 4)
    if values.size == 0:
        raise ValueError(f"matrices must not be empty, got shape {values.shape}")
    grid_rows, grid_cols = values.shape[:2]
    if titles is not None and (isinstance(titles, str) or not isinstance(titles, Sequence)):
        raise TypeError(f"titles must be a list of one title per panel column, got {titles!r}")
    if titles is not None and len(titles) != grid_cols:
        raise ValueError(
            f"titles must have one entry per panel column ({grid_cols}), got {len(titles)}"
        )
    width, height = _numbers("figsize", figsize, 2)
    if width <= 0 or height <= 0:
        raise ValueError(f"figsize must hold two sizes > 0 (inches), got {figsize!r}")
    hidden = _masked_cells(mask, values.shape)
    low, high = _colour_range(values, vmin, vmax)
    scale = ScalarMappable(Normalize(low, high), _colormap(cmap).with_extremes(bad="white"))

    fig = Figure(figsize=(width * grid_cols + 0.8, height * grid_rows), layout="constrained")
    layout = fig.add_gridspec(grid_rows, grid_cols)
    panels: list[Axes] = []
    for index in np.ndindex(grid_rows, grid_cols):
        first = panels[0] if panels else None
        ax = fig.add_subplot(layout[index], sharex=first, sharey=first)
        shown = values[index]
        if hidden is not None:
            shown = np.ma.masked_array(shown, mask=hidden[index])
            _hatch(ax, hidden[index])
        ax.imshow(shown, cmap=scale.get_cmap(), norm=scale.norm, interpolation="nearest")
        row, column = index
        if titles is not None and row == 0:
            ax.set_title(titles[column])
        panels.append(ax)
    for ax in panels:
        # Queries and keys are counted in whole steps from 0.
        ax.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
        ax.yaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.label_outer()
    # A short grid gets a longer bar, so that its label fits beside it.
    bar = fig.colorbar(scale, ax=panels, shrink=0.6 if height * grid_rows >= 3 else 0.9)
    bar.set_label(colorbar_label)
    if hidden is not None and hidden.any():
        key = Patch(facecolor="white", edgecolor=_HATCH_COLOUR, hatch=_HATCH, label="masked")
        bar.ax.legend(
            handles=[key],
            loc="upper left",
            bbox_to_anchor=(0.0, -0.04),
            frameon=False,
            handlelength=1.4,
            borderaxespad=0.0,
            fontsize="small",
        )
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
    cmap = _colormap(cmap)
    extent = None if extent is None else _numbers("extent", extent, 4)
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


def position_similarity_grid(
    similarity: torch.Tensor | np.ndarray,
    *,
    ax: Axes | None = None,
    title: str | None = None,
    cmap: str = "RdBu_r",
) -> Figure:
    """Draw every patch's position similarity map as one tile of a grid of tiles.

    Args:
        similarity: (g, g, g, g); ``similarity[r, c]`` is the (g, g) map of the
            patch in row r, column c (as :func:`attnbook.vit.position_similarity`
            returns it). It is drawn as the tile in row r, column c of a g x g
            grid of tiles, each tile a g x g map laid out like the patches.
        ax: the Axes to draw on; a new Figure when None.
        title: the Axes title, or None.
        cmap: a diverging colour map; the scale runs from -1 to 1 (cosine
            similarity), so its middle colour is 0.

    Returns:
        The Figure drawn on (with a labelled colour bar). Each tile's own patch
        is outlined in black; white lines part the tiles.
    """
    values = _to_numpy("similarity", similarity, 4)
    g = values.shape[0]
    if g < 1 or values.shape != (g, g, g, g):
        raise ValueError(
            f"similarity must have shape (g, g, g, g), one (g, g) map per patch, got {values.shape}"
        )
    # Tile (r, c) holds map similarity[r, c]: rows of the mosaic run over (r, r2).
    mosaic = values.transpose(0, 2, 1, 3).reshape(g * g, g * g)
    cmap = _colormap(cmap)
    if ax is None:
        ax = Figure(figsize=(4.2, 3.6), layout="constrained").subplots()
    image = ax.imshow(mosaic, cmap=cmap, vmin=-1, vmax=1, interpolation="nearest")
    for k in range(1, g):
        ax.axhline(k * g - 0.5, color="white", linewidth=2.5)
        ax.axvline(k * g - 0.5, color="white", linewidth=2.5)
    for r, c in np.ndindex(g, g):
        own = (r * g + r - 0.5, c * g + c - 0.5)  # the tile's own patch: (row, column) corner
        ax.add_patch(Rectangle((own[1], own[0]), 1, 1, fill=False, edgecolor="black", lw=1))
    centres = [k * g + (g - 1) / 2 for k in range(g)]
    ax.set_xticks(centres, [str(k) for k in range(g)])
    ax.set_yticks(centres, [str(k) for k in range(g)])
    ax.tick_params(length=0)
    ax.set_xlabel("patch column")
    ax.set_ylabel("patch row")
    if title is not None:
        ax.set_title(title)
    ax.figure.colorbar(image, ax=ax, label="cosine similarity")
    return ax.figure
