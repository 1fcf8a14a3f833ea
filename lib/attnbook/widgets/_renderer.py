"""The renderer: a persistent Agg figure whose changing artists are blitted per state.

One renderer draws every picture of an explorer (see the module docstring of
``_core`` for how to subclass it). It keeps its figure, updates only the
artists that change between states, blits them onto a saved background and
encodes the canvas as PNG (:func:`encode_png`). The live widget, the static
HTML fragment and ``make bench`` all take their pictures from here.
"""

from __future__ import annotations

import io

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from PIL import Image

DPI = 80


def encode_png(rgb: np.ndarray, compress_level: int = 1) -> bytes:
    """PNG bytes of an (height, width, 3) uint8 picture, on a 128-colour palette.

    The live path uses the fast ``compress_level=1`` (the bytes only travel to
    the front end); the static fragment's base frame is compressed harder.
    """
    buffer = io.BytesIO()
    # A 128-colour palette keeps frames small and encodes faster than full
    # RGB; heatmaps survive it unharmed.
    picture = Image.fromarray(rgb).quantize(128, method=Image.Quantize.FASTOCTREE)
    picture.save(buffer, format="PNG", compress_level=compress_level)
    return buffer.getvalue()


class Renderer:
    """A persistent figure whose changing artists are blitted for each state.

    Subclasses build the figure in ``_build(fig, state)`` (also used, on a fresh
    Figure, by the naive baseline of ``make bench``), return the artists that
    change, update them in ``_update(state)`` and describe a state in
    ``alt_text(state)``. See the module docstring.
    """

    figsize: tuple[float, float] = (8.0, 3.2)

    def __init__(self, first_state) -> None:
        self.fig = Figure(figsize=self.figsize, dpi=DPI)
        self.canvas = FigureCanvasAgg(self.fig)
        self._dynamic = self._build(self.fig, first_state)
        for artist in self._dynamic:
            artist.set_animated(True)
        self.canvas.draw()  # draws everything except the animated artists
        self._background = self.canvas.copy_from_bbox(self.fig.bbox)

    def _build(self, fig: Figure, state) -> list:
        raise NotImplementedError

    def _update(self, state) -> None:
        raise NotImplementedError

    def alt_text(self, state) -> str:
        raise NotImplementedError

    def rgb(self, state) -> np.ndarray:
        """The frame for ``state`` as an (height, width, 3) uint8 array (a copy)."""
        self._update(state)
        self.canvas.restore_region(self._background)
        for artist in self._dynamic:
            self.fig.draw_artist(artist)
        return np.array(np.asarray(self.canvas.buffer_rgba())[..., :3])

    def png(self, state) -> bytes:
        """Update the changing artists for ``state`` and return the frame as PNG."""
        return encode_png(self.rgb(state))

    def naive_png(self, state) -> bytes:
        """The same picture drawn the slow way: a new figure and a full render."""
        fig = Figure(figsize=self.figsize, dpi=DPI)
        self._build(fig, state)
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png")
        return buffer.getvalue()
