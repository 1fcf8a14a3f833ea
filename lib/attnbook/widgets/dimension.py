"""Dimension explorer: softmax of one query's dot products, unscaled and divided by sqrt(d).

One query and ten keys with independent standard normal entries. The vectors
of size d are the first d entries of fixed vectors of the largest size, so
moving the slider adds coordinates to the same query and keys instead of
drawing new ones. Left: the weights of softmax(q.k); middle: those of
softmax(q.k / sqrt(d)); right: the largest weight against d, the
mean over 2000 random queries, with this query's values at the current d circled.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
from matplotlib.figure import Figure

from .. import _validate
from ._core import Explorer, Renderer, bars, range_control, set_bar_heights

__all__ = [
    "DEFAULT_DIMS",
    "DimensionExplorer",
    "dimension_explorer",
]

DEFAULT_DIMS = (1, 2, 3, 5, 8, 12, 20, 32, 50, 80, 128, 200, 320, 512)
_SAMPLES = 2000  # random queries behind the mean curves of the right panel


class _DimensionRenderer(Renderer):
    """Unscaled beside scaled weights of one query, and the largest weight against d."""

    figsize = (9.0, 3.1)

    def __init__(self, dims: Sequence[int], n_keys: int, seed: int) -> None:
        generator = torch.Generator().manual_seed(int(seed))
        query = torch.randn(max(dims), generator=generator)  # (d_max,)
        keys = torch.randn(n_keys, max(dims), generator=generator)  # (keys, d_max)
        self.dims = list(dims)
        self.n_keys = n_keys
        self._weights = {}
        for d in self.dims:
            raw = keys[:, :d] @ query[:d]  # (keys,)
            self._weights[d] = (torch.softmax(raw, -1), torch.softmax(raw / math.sqrt(d), -1))
        # The background: the mean largest weight over many random queries (each
        # with its own keys), also grown one coordinate at a time.
        many_q = torch.randn(_SAMPLES, 1, max(dims), generator=generator)  # (samples, 1, d_max)
        many_k = torch.randn(_SAMPLES, n_keys, max(dims), generator=generator)
        partial = (many_q * many_k).cumsum(-1)  # (samples, keys, d_max): q.k over d entries
        self._largest = {"unscaled": [], "scaled": []}
        for d in self.dims:
            raw = partial[..., d - 1]  # (samples, keys)
            for name, scores in (("unscaled", raw), ("scaled", raw / math.sqrt(d))):
                top = torch.softmax(scores, -1).max(-1).values.mean()
                self._largest[name].append(float(top))
        super().__init__(self.dims[0])

    def _build(self, fig: Figure, d: int) -> list:
        unscaled, scaled = self._weights[d]
        positions = np.arange(self.n_keys)
        axes = fig.subplots(1, 3, gridspec_kw={"width_ratios": [1, 1, 1.05]})
        fig.subplots_adjust(left=0.06, right=0.98, bottom=0.16, top=0.8, wspace=0.32)
        dynamic = []
        labels = []
        for which, (ax, weights, colour, name) in enumerate(
            (
                (axes[0], unscaled, "tab:orange", "softmax(q\u00b7k)"),
                (axes[1], scaled, "tab:blue", "softmax(q\u00b7k / \u221ad)"),
            )
        ):
            dynamic.append(bars(ax, positions, weights.numpy(), 0.7, colour))
            ax.axhline(1 / self.n_keys, color="0.6", linestyle=":", linewidth=1)
            ax.set_ylim(0, 1.0)
            ax.set_xlim(-0.6, self.n_keys - 0.4)
            ax.set_xticks(positions)
            ax.set_xlabel("key")
            ax.set_title(name, fontsize="medium")
            # Only the number changes: few glyphs to draw per stop.
            labels.append(
                ax.text(
                    0.97,
                    0.95,
                    self._largest_label(d, which),
                    transform=ax.transAxes,
                    ha="right",
                    va="top",
                    fontsize="small",
                )
            )
        axes[0].set_ylabel("attention weight")
        ax = axes[2]
        for name, colour, marker in (
            ("unscaled", "tab:orange", "o-"),
            ("scaled", "tab:blue", "s-"),
        ):
            ax.plot(self.dims, self._largest[name], marker, color=colour, markersize=3, label=name)
        ax.axhline(1 / self.n_keys, color="0.6", linestyle=":", linewidth=1, label="uniform")
        ax.set_xscale("log")
        ticks = [t for t in (1, 10, 100, 1000) if self.dims[0] <= t <= self.dims[-1]]
        ax.set_xticks(ticks, [str(t) for t in ticks])
        ax.set_ylim(0, 1.02)
        ax.set_xlabel("vector size d")
        ax.set_ylabel("largest weight")
        ax.set_title(f"mean of {_SAMPLES} queries; \u25cb this one", fontsize="medium")
        ax.legend(loc="upper left", fontsize="x-small", frameon=False)
        (here,) = ax.plot(
            [d, d],
            [float(unscaled.max()), float(scaled.max())],
            "o",
            color="black",
            markersize=8,
            markerfacecolor="none",
        )
        cursor = ax.axvline(d, color="0.3", linestyle="--", linewidth=1)
        fig.text(
            0.5,
            0.93,
            f"one query, {self.n_keys} keys, vectors of size",
            ha="right",
            va="baseline",
            fontsize="large",
        )
        title = fig.text(0.505, 0.93, self._title(d), ha="left", va="baseline", fontsize="large")
        return [*dynamic, *labels, here, cursor, title]

    def _title(self, d: int) -> str:
        return f"d = {d}"

    def _largest_label(self, d: int, which: int) -> str:
        return f"largest {float(self._weights[d][which].max()):.2f}"

    def _update(self, d: int) -> None:
        bars_u, bars_s, label_u, label_s, here, cursor, title = self._dynamic
        unscaled, scaled = self._weights[d]
        positions = np.arange(self.n_keys)
        set_bar_heights(bars_u, positions, unscaled.numpy(), 0.7)
        set_bar_heights(bars_s, positions, scaled.numpy(), 0.7)
        label_u.set_text(self._largest_label(d, 0))
        label_s.set_text(self._largest_label(d, 1))
        here.set_data([d, d], [float(unscaled.max()), float(scaled.max())])
        cursor.set_xdata([d, d])
        title.set_text(self._title(d))

    def alt_text(self, d: int) -> str:
        unscaled, scaled = self._weights[d]
        top_u, top_s = int(unscaled.argmax()), int(scaled.argmax())
        return (
            f"Vectors of size d = {d}. Left: bars of softmax weights of the unscaled dot "
            f"products of one query with {self.n_keys} keys; key {top_u} has the largest "
            f"weight, {float(unscaled.max()):.2f}. Middle: the same scores divided by the "
            f"square root of d; the largest weight is {float(scaled.max()):.2f}, on key "
            f"{top_s} (uniform weights would give each key {1 / self.n_keys:.2f}). "
            f"Right: the mean largest weight over {_SAMPLES} "
            f"random queries against d from {self.dims[0]} to {self.dims[-1]}: unscaled it "
            f"climbs from {self._largest['unscaled'][0]:.2f} to "
            f"{self._largest['unscaled'][-1]:.2f}, scaled it stays between "
            f"{min(self._largest['scaled']):.2f} and {max(self._largest['scaled']):.2f}; this "
            f"query's two values at d = {d} are circled."
        )


class DimensionExplorer(Explorer):
    """Explorer over the vector size d of dot-product scores, unscaled and scaled."""


def dimension_explorer(
    dims: Sequence[int] | None = None,
    n_keys: int = 10,
    value: int | None = None,
    seed: int = 0,
) -> DimensionExplorer:
    """A slider over the vector size d of one query's dot products with ``n_keys`` keys.

    Args:
        dims: the slider's stops, strictly increasing integers >= 1 (default:
            14 roughly log-spaced sizes from 1 to 512, ``DEFAULT_DIMS``).
        n_keys: the number of keys, >= 2.
        value: the starting size, one of ``dims`` (default 32 if present, else
            the middle stop).
        seed: seeds the query and keys (standard normal entries).

    Returns:
        A :class:`DimensionExplorer`; display it to get the slider.
    """
    dims = list(DEFAULT_DIMS if dims is None else dims)
    dims = [_validate.positive_int(f"dims[{i}]", d) for i, d in enumerate(dims)]
    if len(dims) < 2 or any(b <= a for a, b in zip(dims, dims[1:])):
        raise ValueError(f"dims must hold at least 2 strictly increasing sizes, got {dims!r}")
    n_keys = _validate.positive_int("n_keys", n_keys)
    if n_keys < 2:
        raise ValueError(f"n_keys must be at least 2, got {n_keys!r}")
    if value is None:
        value = 32 if 32 in dims else dims[len(dims) // 2]
    elif value not in dims:
        raise ValueError(f"value must be one of dims {dims}, got {value!r}")
    renderer = _DimensionRenderer(dims, n_keys, seed)
    labels = [str(d) for d in dims]
    control = range_control("vector size d:", dims, labels, int(value))
    return DimensionExplorer(
        "dimension", renderer, [control], lambda d: f"d={d}, keys={n_keys}, seed={seed}"
    )
