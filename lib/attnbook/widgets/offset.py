"""Offset explorer: dot products of sinusoidal encodings depend only on the offset.

A slider over the offset delta between two positions. Left: one (sin, cos)
column pair of the encoding drawn as points on the unit circle; three starting
positions and the positions delta later are joined, and every one of them has
turned by the same angle delta * w_j. Middle: the matrix of all dot products
p_i . p_k with the diagonal k = i + delta marked. Right: p_i . p_(i + delta)
against the start i, a flat line, drawn over the faint flat lines of the other
offsets.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from matplotlib.figure import Figure

from .. import _validate
from ..positional import sinusoidal_encoding
from ._core import Explorer, Renderer, range_control, text_with_tail

__all__ = [
    "DEFAULT_OFFSETS",
    "OffsetExplorer",
    "offset_explorer",
    "offset_dot_product",
]

DEFAULT_OFFSETS = tuple(range(21))


class _OffsetRenderer(Renderer):
    """The rotation of one column pair, the dot-product matrix, and one of its diagonals."""

    figsize = (9.6, 3.3)

    def __init__(
        self, offsets: Sequence[int], num_positions: int, num_hiddens: int, pair: int
    ) -> None:
        P = sinusoidal_encoding(num_positions, num_hiddens).double().numpy()  # (n, d)
        self.P = P
        self.G = P @ P.T  # (n, n): G[i, k] = p_i . p_k
        self.offsets = list(offsets)
        self.n = num_positions
        self.d = num_hiddens
        self.pair = pair
        self.omega = 10000.0 ** (-2 * pair / num_hiddens)
        self.starts = (0, num_positions // 4, num_positions // 2)
        # The dot products along each offered diagonal, computed once.
        self.diagonals = {delta: np.diagonal(self.G, delta).copy() for delta in self.offsets}
        super().__init__(self.offsets[0])

    def _circle_point(self, i: int) -> tuple[float, float]:
        """(cos, sin) of position i's angle in the chosen pair: (p_{i,2j+1}, p_{i,2j})."""
        return float(self.P[i, 2 * self.pair + 1]), float(self.P[i, 2 * self.pair])

    def _build(self, fig: Figure, delta: int) -> list:
        ax_c, ax_g, ax_d = fig.subplots(1, 3, gridspec_kw={"width_ratios": [1, 1, 1.35]})
        fig.subplots_adjust(left=0.04, right=0.98, bottom=0.15, top=0.78, wspace=0.32)
        dynamic: list = []

        # Left: the chosen pair on the unit circle.
        theta = np.linspace(0, 2 * np.pi, 200)
        ax_c.plot(np.cos(theta), np.sin(theta), color="0.85", linewidth=1)
        ax_c.plot(
            self.P[:, 2 * self.pair + 1], self.P[:, 2 * self.pair], ".", color="0.7", markersize=3
        )
        colours = ("tab:blue", "tab:orange", "tab:green")
        for start, colour in zip(self.starts, colours):
            x0, y0 = self._circle_point(start)
            ax_c.plot([x0], [y0], "o", color=colour, markersize=6)
            x1, y1 = self._circle_point(start + delta)
            (chord,) = ax_c.plot([x0, x1], [y0, y1], "-", color=colour, linewidth=1.5)
            (later,) = ax_c.plot(
                [x1], [y1], "o", color=colour, markersize=8, markerfacecolor="white"
            )
            dynamic.extend([chord, later])
        ax_c.set_aspect("equal")
        ax_c.set_xlim(-1.25, 1.25)
        ax_c.set_ylim(-1.25, 1.25)
        ax_c.set_xticks([])
        ax_c.set_yticks([])
        ax_c.set_xlabel(f"column {2 * self.pair + 1} (cos)")
        ax_c.set_ylabel(f"column {2 * self.pair} (sin)")
        # Only the angle changes in the circle's title (see text_with_tail).
        ax_c.apply_aspect()  # the square box that the circle is drawn in
        box = ax_c.get_position()
        circle_title = text_with_tail(
            fig,
            (box.x0 + box.x1) / 2,
            box.y1 + 6 / 72 / fig.get_figheight(),  # the 6-point pad of an axes title
            f"pair j = {self.pair}: each turns",
            self._circle_title(delta),
            [self._circle_title(d) for d in self.offsets],
            fontsize="medium",
            va="baseline",
        )

        # Middle: every dot product, with the diagonal of this offset marked.
        top = float(self.d // 2)
        ax_g.imshow(self.G, cmap="Reds", vmin=0, vmax=top)
        ax_g.set_xlabel("position k")
        ax_g.set_ylabel("position i")
        ax_g.set_title("all dot products p_i \u00b7 p_k", fontsize="medium")
        (diagonal,) = ax_g.plot(*self._diagonal_xy(delta), color="black", linewidth=2)
        dynamic.append(diagonal)

        # Right: the marked diagonal against its start, over the other offsets' lines.
        for other in self.offsets:
            values = self.diagonals[other]
            ax_d.plot(np.arange(len(values)), values, color="0.85", linewidth=1)
        values = self.diagonals[delta]
        (line,) = ax_d.plot(np.arange(len(values)), values, "o-", color="black", markersize=2.5)
        dynamic.append(line)
        ax_d.set_xlim(-1, self.n)
        ax_d.set_ylim(0, top + 0.8)
        ax_d.set_xlabel("start position i")
        ax_d.set_ylabel("p_i \u00b7 p_(i+\u03b4)")
        ax_d.set_title("grey: the other offsets", fontsize="medium")
        title = text_with_tail(
            fig,
            0.5,
            0.98,
            "p_i \u00b7 p_(i+\u03b4) is the same for every start i:",
            self._title(delta),
            [self._title(d) for d in self.offsets],
            fontsize="large",
            va="top",
        )
        return [*dynamic, circle_title, title]

    def _diagonal_xy(self, delta: int) -> tuple[list[float], list[float]]:
        # Entry (i, i + delta) sits at x = i + delta, y = i.
        return [delta, self.n - 1], [0, self.n - 1 - delta]

    def _value(self, delta: int) -> float:
        return float(self.diagonals[delta].mean())

    def _title(self, delta: int) -> str:
        return f"\u03b4 = {delta} gives {self._value(delta):.2f}"

    def _circle_title(self, delta: int) -> str:
        return f"{delta * self.omega:.2f} rad"

    def _update(self, delta: int) -> None:
        pieces = self._dynamic
        for k, start in enumerate(self.starts):
            chord, later = pieces[2 * k], pieces[2 * k + 1]
            x0, y0 = self._circle_point(start)
            x1, y1 = self._circle_point(start + delta)
            chord.set_data([x0, x1], [y0, y1])
            later.set_data([x1], [y1])
        diagonal, line, circle_title, title = pieces[2 * len(self.starts) :]
        diagonal.set_data(*self._diagonal_xy(delta))
        values = self.diagonals[delta]
        line.set_data(np.arange(len(values)), values)
        circle_title.set_text(self._circle_title(delta))
        title.set_text(self._title(delta))

    def alt_text(self, delta: int) -> str:
        values = self.diagonals[delta]
        starts = ", ".join(str(s) for s in self.starts)
        laters = ", ".join(str(s + delta) for s in self.starts)
        return (
            f"Offset {delta}. Left: columns {2 * self.pair} and {2 * self.pair + 1} of the "
            f"encoding as points on a circle; positions {starts} are joined to positions "
            f"{laters}, and each has turned by the same angle, {delta * self.omega:.2f} "
            f"radians. Middle: the {self.n} by {self.n} matrix of dot products of the "
            f"encodings (d = {self.d}), with the diagonal of offset {delta} marked. Right: "
            f"the dot products along that diagonal for start positions 0 to {len(values) - 1} "
            f"form a flat line at {values.mean():.2f} (smallest {values.min():.2f}, largest "
            f"{values.max():.2f}), drawn over the flat grey lines of the other offsets."
        )


class OffsetExplorer(Explorer):
    """Explorer over the offset between two positions of the sinusoidal encoding."""


def offset_explorer(
    offsets: Sequence[int] | None = None,
    num_positions: int = 60,
    num_hiddens: int = 32,
    pair: int = 2,
    value: int | None = None,
) -> OffsetExplorer:
    """A slider over the offset delta between positions of ``sinusoidal_encoding``.

    Args:
        offsets: the slider's stops, strictly increasing integers >= 0 (default
            0 to 20, ``DEFAULT_OFFSETS``); the largest must leave room for the
            three starting positions 0, n // 4 and n // 2, so it is at most
            ``num_positions - 1 - num_positions // 2``.
        num_positions: n, the number of positions (rows of the encoding), >= 4.
        num_hiddens: d, the even encoding size.
        pair: j, the (sin, cos) column pair drawn on the circle, in [0, d/2).
        value: the starting offset, one of ``offsets`` (default 5 if present,
            else the first stop).

    Returns:
        An :class:`OffsetExplorer`; display it to get the slider.
    """
    num_positions = _validate.positive_int("num_positions", num_positions)
    if num_positions < 4:
        raise ValueError(f"num_positions must be at least 4, got {num_positions}")
    num_hiddens = _validate.positive_int("num_hiddens", num_hiddens)
    if num_hiddens % 2:
        raise ValueError(f"num_hiddens must be even, got {num_hiddens}")
    if isinstance(pair, bool) or not isinstance(pair, int) or not 0 <= pair < num_hiddens // 2:
        raise ValueError(f"pair must be an integer in [0, {num_hiddens // 2}), got {pair!r}")
    offsets = list(DEFAULT_OFFSETS if offsets is None else offsets)
    for i, delta in enumerate(offsets):
        if isinstance(delta, bool) or not isinstance(delta, int) or delta < 0:
            raise ValueError(f"offsets[{i}] must be an integer >= 0, got {delta!r}")
    if len(offsets) < 2 or any(b <= a for a, b in zip(offsets, offsets[1:])):
        raise ValueError(
            f"offsets must hold at least 2 strictly increasing values, got {offsets!r}"
        )
    largest = num_positions - 1 - num_positions // 2
    if offsets[-1] > largest:
        raise ValueError(
            f"offsets must not exceed {largest} for num_positions={num_positions} "
            f"(room for the starting positions), got {offsets[-1]}"
        )
    if value is None:
        value = 5 if 5 in offsets else offsets[0]
    elif value not in offsets:
        raise ValueError(f"value must be one of offsets {offsets}, got {value!r}")
    renderer = _OffsetRenderer(offsets, num_positions, num_hiddens, pair)
    integer = offsets == list(range(offsets[0], offsets[-1] + 1))
    control = range_control(
        "offset \u03b4:", offsets, [str(o) for o in offsets], int(value), integer=integer
    )
    return OffsetExplorer(
        "offset",
        renderer,
        [control],
        lambda delta: f"offset={delta}, positions={num_positions}, d={num_hiddens}, pair={pair}",
    )


# The closed form behind the flat lines, for tests and readers:
def offset_dot_product(offset: int, num_hiddens: int) -> float:
    """sum over pairs j of cos(offset * w_j): the dot product p_i . p_(i + offset)."""
    return sum(math.cos(offset / 10000 ** (2 * j / num_hiddens)) for j in range(num_hiddens // 2))
