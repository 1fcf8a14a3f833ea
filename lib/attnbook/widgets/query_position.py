"""Query-position explorer: one query slides along a row of keys and pools their values.

The running example of the queries-keys-values chapter: ten keys at positions
0, 1, ..., 9 on a line (cafés along one street), each with a value (its price),
and a query at position x scoring every key by closeness,
a(x, k) = -(x - k)^2 / (2 sigma^2). Left: the query's softmax weights over the
keys. Right: the values, the nearest-key lookup (a staircase) and the attention
output (a smooth curve) over every x, with the current query's output marked.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from matplotlib.figure import Figure

from .. import _validate
from ..pooling import nadaraya_watson
from ._core import Explorer, Renderer, bars, range_control, set_bar_heights

__all__ = [
    "DEFAULT_VALUES",
    "QueryPositionExplorer",
    "query_position_explorer",
]

# Flat-white prices (euros) of ten cafés along one street, at positions 0 to 9;
# the first five are the town's cafés of the chapter.
DEFAULT_VALUES = (3.10, 3.60, 2.80, 4.20, 3.30, 2.90, 3.80, 3.40, 4.00, 3.20)


class _QueryPositionRenderer(Renderer):
    """Weights of one query over the keys, beside the values it pools."""

    figsize = (8.4, 3.2)

    def __init__(self, values: torch.Tensor, width: float, positions: Sequence[float]) -> None:
        self.values = values  # (keys,)
        self.width = width
        self.keys = torch.arange(len(values), dtype=torch.float32)  # (keys,) at 0, 1, ...
        x = torch.tensor(list(positions), dtype=torch.float32)  # (stops,)
        outputs, weights = nadaraya_watson(self.keys, values, x, "gaussian", width)
        self._weights = dict(zip(positions, weights))  # each (keys,)
        self._outputs = {p: float(o) for p, o in zip(positions, outputs)}
        # The background curves, on a fine grid over the whole line.
        self._grid = torch.linspace(-0.5, len(values) - 0.5, 401)  # (points,)
        self._soft, _ = nadaraya_watson(self.keys, values, self._grid, "gaussian", width)
        nearest = (self._grid[:, None] - self.keys[None, :]).abs().argmin(dim=1)  # (points,)
        self._lookup = values[nearest]  # (points,)
        super().__init__(positions[0])

    def _nearest(self, x: float) -> int:
        return int((self.keys - x).abs().argmin())

    def _build(self, fig: Figure, x: float) -> list:
        n = len(self.values)
        keys = self.keys.numpy()
        ax_w, ax_v = fig.subplots(1, 2)
        fig.subplots_adjust(left=0.07, right=0.98, bottom=0.15, top=0.84, wspace=0.25)
        weights = bars(ax_w, keys, self._weights[x].numpy(), 0.7, "tab:red")
        query_w = ax_w.axvline(x, color="tab:blue", linestyle="--", linewidth=1.5)
        ax_w.set_xlim(-0.5, n - 0.5)
        ax_w.set_ylim(0, 1.0)
        ax_w.set_xticks(keys)
        ax_w.set_xlabel("key position")
        ax_w.set_ylabel("attention weight")
        ax_w.set_title("weights of the query", fontsize="medium")
        grid = self._grid.numpy()
        ax_v.plot(
            grid, self._lookup.numpy(), color="0.55", linewidth=1.2, label="nearest-key lookup"
        )
        ax_v.plot(
            grid, self._soft.numpy(), color="tab:red", linewidth=1.5, label="attention output"
        )
        ax_v.plot(keys, self.values.numpy(), "ko", markersize=4, label="values")
        (point,) = ax_v.plot([x], [self._outputs[x]], "o", color="tab:red", markersize=9)
        query_v = ax_v.axvline(x, color="tab:blue", linestyle="--", linewidth=1.5)
        low, high = float(self.values.min()), float(self.values.max())
        ax_v.set_xlim(-0.5, n - 0.5)
        ax_v.set_ylim(low - 0.25, high + 0.25)
        ax_v.set_xticks(keys)
        ax_v.set_xlabel("query position x")
        ax_v.set_ylabel("value")
        ax_v.set_title("values and what the query gets back", fontsize="medium")
        ax_v.legend(loc="lower center", ncols=3, fontsize="x-small", frameon=False)
        # A static start and a short changing end: fewer glyphs to draw per stop.
        fig.text(
            0.36, 0.93, "one query on a line of keys:", ha="right", va="baseline", fontsize="large"
        )
        title = fig.text(0.365, 0.93, self._title(x), ha="left", va="baseline", fontsize="large")
        return [weights, query_w, point, query_v, title]

    def _title(self, x: float) -> str:
        lookup = float(self.values[self._nearest(x)])
        return f"x = {x:g}, attention {self._outputs[x]:.2f}, lookup {lookup:.2f}"

    def _update(self, x: float) -> None:
        weights, query_w, point, query_v, title = self._dynamic
        set_bar_heights(weights, self.keys.numpy(), self._weights[x].numpy(), 0.7)
        query_w.set_xdata([x, x])
        query_v.set_xdata([x, x])
        point.set_data([x], [self._outputs[x]])
        title.set_text(self._title(x))

    def alt_text(self, x: float) -> str:
        weights = self._weights[x]
        order = weights.argsort(descending=True).tolist()
        first, second = order[0], order[1]
        nearest = self._nearest(x)
        return (
            f"Query at position {x:g}, width \u03c3 = {self.width:g}. Left: bars of its "
            f"attention weights over keys 0 to {len(weights) - 1}; the tallest is key {first} "
            f"with {float(weights[first]):.2f}, then key {second} with "
            f"{float(weights[second]):.2f}. Right: the values as dots, the staircase of a "
            f"nearest-key lookup and the smooth curve of the attention output; here attention "
            f"returns {self._outputs[x]:.2f} where the lookup returns key {nearest}'s value "
            f"{float(self.values[nearest]):.2f}."
        )


class QueryPositionExplorer(Explorer):
    """Explorer over the position of one query among keys on a line."""


def query_position_explorer(
    values: Sequence[float] | torch.Tensor | None = None,
    width: float = 1.0,
    step: float = 0.25,
    value: float | None = None,
) -> QueryPositionExplorer:
    """A slider that moves one query along a row of keys at positions 0, 1, ..., n - 1.

    Args:
        values: (n,) the value of each key, n >= 2 (default: ten café prices,
            ``DEFAULT_VALUES``).
        width: the Gaussian width sigma of the score -(x - k)^2 / (2 sigma^2), > 0.
        step: the distance between the slider's stops, > 0, dividing 1 into a
            whole number of steps (the stops run from 0 to n - 1).
        value: the starting position, one of the stops (default: 3.5 if it is
            a stop, else the middle one).

    Returns:
        A :class:`QueryPositionExplorer`; display it to get the slider.
    """
    if values is None:
        values = DEFAULT_VALUES
    if isinstance(values, torch.Tensor):
        values = _validate.tensor("values", values, ndim=1, floating=True)
        values = values.detach().to("cpu", torch.float32)
    else:
        values = torch.tensor(
            [_validate.real_number(f"values[{i}]", v) for i, v in enumerate(values)],
            dtype=torch.float32,
        )
    if len(values) < 2 or not torch.isfinite(values).all():
        raise ValueError(f"values must hold at least 2 finite numbers, got {values.tolist()}")
    width = _validate.positive_number("width", width)
    step = _validate.positive_number("step", step)
    per_key = round(1 / step)
    if per_key < 1 or abs(per_key * step - 1) > 1e-9:
        raise ValueError(f"step must divide 1 into a whole number of steps, got {step!r}")
    positions = [round(i / per_key, 6) for i in range((len(values) - 1) * per_key + 1)]
    if value is None:
        value = 3.5 if 3.5 in positions else positions[len(positions) // 2]
    elif value not in positions:
        raise ValueError(f"value must be one of the positions 0, {step:g}, ..., got {value!r}")
    value = positions[positions.index(value)]
    renderer = _QueryPositionRenderer(values, width, positions)
    labels = [f"{p:g}" for p in positions]
    control = range_control("query position x:", positions, labels, value)
    return QueryPositionExplorer(
        "query-position",
        renderer,
        [control],
        lambda x: f"x={x:g}, width={width:g}, keys={len(values)}",
    )
