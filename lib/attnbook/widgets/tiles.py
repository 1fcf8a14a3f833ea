"""Tile explorer: tiled attention one tile at a time.

A slider over the tiles that :func:`attnbook.flash.tiled_attention` computes,
in its order, on one small score matrix. Left: the score matrix, with the tiles
computed so far in colour, the current tile outlined, the tiles not reached yet
pale and (causal) the skipped tiles above the diagonal hatched. Middle: each
query row's running maximum m so far (dots), against the row's true maximum
(grey ticks). Right: each row's running sum l so far (bars), against its final
value (grey outlines); a row's bar turns green once its output is final.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
import torch
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from ..flash import tile_trace
from ._core import Explorer, Renderer, range_control, text_with_tail

__all__ = [
    "TilesExplorer",
    "tiles_explorer",
]

_PENDING = (0.8, 0.8, 0.8, 1.0)  # a row not reached yet (its bar has height 0 anyway)
_WORKING = (0.95, 0.55, 0.15, 1.0)  # running: more tiles to come
_FINAL = (0.2, 0.6, 0.3, 1.0)  # output row final


def _hbar_verts(rows: np.ndarray, widths: np.ndarray, height: float) -> np.ndarray:
    top, bottom = rows - height / 2, rows + height / 2
    zero = np.zeros_like(widths, dtype=float)
    corners = [(zero, top), (widths, top), (widths, bottom), (zero, bottom)]
    return np.stack([np.stack(c, axis=-1) for c in corners], axis=1)  # (rows, 4, 2)


class _TilesRenderer(Renderer):
    figsize = (9.6, 3.9)

    def __init__(self, scores: torch.Tensor, block_size: int, causal: bool) -> None:
        self.scores = scores.to(torch.float64)
        self.block_size = block_size
        self.causal = causal
        self.steps = tile_trace(self.scores, block_size, causal)
        self.m, self.n = self.scores.shape
        S = self.scores.numpy()
        if causal:
            future = np.triu(np.ones((self.m, self.n), dtype=bool), 1)
            S = np.where(future, -np.inf, S)
        self.final_max = S.max(axis=1)  # (m,)
        self.final_sum = np.exp(S - self.final_max[:, None]).sum(axis=1)  # (m,)
        self.S = S
        self.lo = float(np.min(self.scores.numpy()))
        self.hi = float(np.max(self.scores.numpy()))
        # What each stop shows, computed once: the visible scores, m, l, done.
        self.frames = []
        covered = np.zeros((self.m, self.n), dtype=bool)
        for step in self.steps:
            (q0, q1), (k0, k1) = step.rows, step.cols
            covered[q0:q1, k0:k1] = True
            shown = np.where(covered & np.isfinite(S), self.scores.numpy(), np.nan)
            m = step.running_max.numpy().copy()
            self.frames.append(
                (shown, np.where(np.isfinite(m), m, np.nan), step.running_sum.numpy().copy(),
                 step.done.numpy().copy())
            )  # fmt: skip
        super().__init__(1)

    def _build(self, fig: Figure, index: int) -> list:
        shown, m, l, done = self.frames[index - 1]
        step = self.steps[index - 1]
        rows = np.arange(self.m)
        ax_s, ax_m, ax_l = fig.subplots(1, 3, gridspec_kw={"width_ratios": [1.25, 0.8, 0.8]})
        fig.subplots_adjust(left=0.06, right=0.98, bottom=0.14, top=0.82, wspace=0.12)
        # The whole matrix, faint, under the tiles computed so far.
        faint = np.where(np.isfinite(self.S), self.scores.numpy(), np.nan)
        ax_s.imshow(
            faint, cmap="Blues", vmin=self.lo, vmax=self.hi, alpha=0.18, interpolation="nearest"
        )
        B = self.block_size
        for q0 in range(0, self.m, B):
            for k0 in range(0, self.n, B):
                skipped = self.causal and k0 > min(q0 + B, self.m) - 1
                ax_s.add_patch(
                    Rectangle(
                        (k0 - 0.5, q0 - 0.5),
                        min(B, self.n - k0),
                        min(B, self.m - q0),
                        fill=False,
                        edgecolor="0.55",
                        linewidth=0.8,
                        hatch="///" if skipped else None,
                    )
                )
        image = ax_s.imshow(
            shown, cmap="Blues", vmin=self.lo, vmax=self.hi, interpolation="nearest"
        )
        (q0, q1), (k0, k1) = step.rows, step.cols
        outline = ax_s.add_patch(
            Rectangle(
                (k0 - 0.5, q0 - 0.5),
                k1 - k0,
                q1 - q0,
                fill=False,
                edgecolor="tab:red",
                linewidth=2.5,
            )
        )
        ax_s.set_xticks(range(0, self.n, B))
        ax_s.set_yticks(range(0, self.m, B))
        ax_s.set_xlabel("key j")
        ax_s.set_ylabel("query i")
        where = "hatched: skipped (above the diagonal)" if self.causal else "every tile is computed"
        ax_s.set_title(f"scores, block {B}; {where}", fontsize="small")

        # Middle: running maximum per row.
        ax_m.plot(self.final_max, rows, "|", color="0.6", markersize=12, markeredgewidth=2)
        (dots,) = ax_m.plot(m, rows, "o", color="tab:red", markersize=5)
        pad = 0.1 * (self.hi - self.lo)
        ax_m.set_xlim(self.lo - pad, self.hi + pad)
        ax_m.set_ylim(self.m - 0.5, -0.5)
        ax_m.set_yticks([])
        ax_m.set_xlabel("running max m")
        ax_m.set_title("m so far (grey: final)", fontsize="small")
        ax_m.grid(axis="x", color="0.9")

        # Right: running sum per row, relative to the running max.
        outlines = PolyCollection(
            _hbar_verts(rows, self.final_sum, 0.7), facecolors="none", edgecolors="0.6"
        )
        ax_l.add_collection(outlines)
        bars = PolyCollection(
            _hbar_verts(rows, l, 0.7), facecolors=self._colours(l, done), edgecolors="none"
        )
        ax_l.add_collection(bars)
        ax_l.set_xlim(
            0, 1.08 * max(float(self.final_sum.max()), max(float(f[2].max()) for f in self.frames))
        )
        ax_l.set_ylim(self.m - 0.5, -0.5)
        ax_l.set_yticks([])
        ax_l.set_xlabel("running sum λ")
        ax_l.set_title("λ so far (green: row final)", fontsize="small")
        tails = [self._tail(i) for i in range(1, len(self.steps) + 1)]
        title = text_with_tail(
            fig,
            0.5,
            0.97,
            "tiled attention, one tile at a time:",
            self._tail(index),
            tails,
            fontsize="large",
            va="top",
        )
        return [image, outline, dots, bars, title]

    def _colours(self, l: np.ndarray, done: np.ndarray) -> list:
        return [_FINAL if d else (_WORKING if s > 0 else _PENDING) for s, d in zip(l, done)]

    def _tail(self, index: int) -> str:
        step = self.steps[index - 1]
        finished = int(step.done.sum())
        return f"tile {index} of {len(self.steps)}, {finished} rows final"

    def _update(self, index: int) -> None:
        image, outline, dots, bars, title = self._dynamic
        shown, m, l, done = self.frames[index - 1]
        step = self.steps[index - 1]
        (q0, q1), (k0, k1) = step.rows, step.cols
        image.set_data(shown)
        outline.set_xy((k0 - 0.5, q0 - 0.5))
        outline.set_width(k1 - k0)
        outline.set_height(q1 - q0)
        dots.set_xdata(m)
        bars.set_verts(_hbar_verts(np.arange(self.m), l, 0.7))
        bars.set_facecolors(self._colours(l, done))
        title.set_text(self._tail(index))

    def alt_text(self, index: int) -> str:
        step = self.steps[index - 1]
        (q0, q1), (k0, k1) = step.rows, step.cols
        _, m, l, done = self.frames[index - 1]
        reached = int(np.isfinite(m).sum())
        finished = int(done.sum())
        at_final = int(np.isclose(m, self.final_max).sum())
        skipped = "; tiles above the diagonal are hatched and never computed" if self.causal else ""
        return (
            f"Tile {index} of {len(self.steps)}: the red box marks queries {q0} to {q1 - 1} "
            f"against keys {k0} to {k1 - 1} of the {self.m} by {self.n} score matrix; the tiles "
            f"computed so far are coloured{skipped}. Middle: {reached} of {self.m} rows have a "
            f"running maximum so far, {at_final} of them already equal to the row's final "
            f"maximum. Right: the running sums of those rows as bars; {finished} rows are final "
            f"(green) and their outputs can be written."
        )


class TilesExplorer(Explorer):
    """Explorer over the tiles of tiled attention on one small score matrix."""


def tiles_explorer(
    n: int = 12,
    block_size: int = 3,
    causal: bool = True,
    d: int = 4,
    seed: int = 0,
    value: int | None = None,
) -> TilesExplorer:
    """A slider over the tiles of :func:`attnbook.flash.tiled_attention` on n x n scores.

    Args:
        n: queries and keys (the score matrix is n x n), 2 to 32.
        block_size: rows and columns of a tile, 1 to n.
        causal: skip the tiles above the diagonal (query i sees keys 0..i).
        d: size of the random queries and keys behind the scores.
        seed: seed of those queries and keys.
        value: the starting tile, counted from 1 (default 1).

    Returns:
        A :class:`TilesExplorer`; display it to get the slider.
    """
    for name, number in (("n", n), ("block_size", block_size), ("d", d), ("seed", seed)):
        if isinstance(number, bool) or not isinstance(number, numbers.Integral):
            raise TypeError(f"{name} must be an integer, got {number!r}")
    if not 2 <= n <= 32:
        raise ValueError(f"n must lie in [2, 32], got {n}")
    if not 1 <= block_size <= n:
        raise ValueError(f"block_size must lie in [1, n={n}], got {block_size}")
    if d < 1:
        raise ValueError(f"d must be >= 1, got {d}")
    if not isinstance(causal, bool):
        raise TypeError(f"causal must be True or False, got {causal!r}")
    g = torch.Generator().manual_seed(int(seed))
    q = torch.randn(n, d, generator=g, dtype=torch.float64)
    k = torch.randn(n, d, generator=g, dtype=torch.float64)
    scores = q @ k.T / math.sqrt(d)  # (queries, keys)
    renderer = _TilesRenderer(scores, int(block_size), causal)
    stops = list(range(1, len(renderer.steps) + 1))
    if value is None:
        value = 1
    elif value not in stops:
        raise ValueError(f"value must be a tile number in [1, {stops[-1]}], got {value!r}")
    control = range_control("tile:", stops, [str(s) for s in stops], int(value), integer=True)
    return TilesExplorer(
        "tiles",
        renderer,
        [control],
        lambda t: f"tile={t}, n={n}, block_size={block_size}, causal={causal}",
    )
