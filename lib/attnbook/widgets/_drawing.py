"""Drawing helpers for explorer renderers: bars as one collection, text with a changing tail.

Explorer modules import them from ``._core`` (which re-exports them).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.backends.backend_agg import RendererAgg
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.text import Text


def bars(ax, x: np.ndarray, heights: np.ndarray, width: float, color) -> PolyCollection:
    """Vertical bars as ONE collection (one draw call when blitted, unlike ``ax.bar``)."""
    collection = PolyCollection(
        _bar_verts(x, heights, width), facecolors=color, edgecolors="none", antialiased=False
    )
    ax.add_collection(collection)
    return collection


def set_bar_heights(collection: PolyCollection, x: np.ndarray, heights, width: float) -> None:
    """Give the bars of :func:`bars` new heights (same x and width)."""
    collection.set_verts(_bar_verts(x, np.asarray(heights), width))


def _bar_verts(x: np.ndarray, heights: np.ndarray, width: float) -> np.ndarray:
    left, right = x - width / 2, x + width / 2
    zero = np.zeros_like(heights, dtype=float)
    corners = [(left, zero), (left, heights), (right, heights), (right, zero)]
    return np.stack([np.stack(c, axis=-1) for c in corners], axis=1)  # (bars, 4, 2)


def text_with_tail(
    fig: Figure, x: float, y: float, fixed: str, tail: str, tails: Sequence[str], **text_kw
) -> Text:
    """A line of text whose fixed words are drawn once and whose tail changes.

    Matplotlib rasterises every glyph of a Text each time it is blitted (about
    0.1 ms a character), so a long title that differs from state to state costs
    more than the rest of a frame. This draws ``fixed`` as ordinary, static
    text and returns a separate Text for the changing ``tail``, set right after
    it (the caller puts it among the renderer's changing artists and sets its
    text in ``_update``). ``tails`` lists every tail the explorer will show: the
    whole line is centred on ``x`` (figure fraction) at the widest tail, so it
    does not move between states. ``text_kw`` (fontsize, va, ...) goes to both.
    """
    prop = FontProperties(size=text_kw.get("fontsize"))
    pixels = fig.get_figwidth() * fig.dpi
    # Measured as Agg draws it (hinting included), on a throwaway renderer.
    renderer = RendererAgg(1, 1, fig.dpi)

    def width(text: str) -> float:  # in figure fraction
        return renderer.get_text_width_height_descent(text, prop, ismath=False)[0] / pixels

    gap = width("n") / 2  # about one space
    start = x - (width(fixed) + gap + max(width(t) for t in tails)) / 2
    fig.text(start, y, fixed, ha="left", **text_kw)
    return fig.text(start + width(fixed) + gap, y, tail, ha="left", **text_kw)
