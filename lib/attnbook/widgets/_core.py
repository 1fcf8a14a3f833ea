"""The explorer: the machinery every explorer shares, and how to write a new one.

The pieces live in modules of their own, one idea each: the renderer
(``_renderer``), the controls (``_controls``), the live widget
(``_live_widget``), the static HTML fragment (``_static``), static mode and
its comm-less widgets (``_unseen``) and the drawing helpers (``_drawing``).
:class:`Explorer` puts them together; every name an explorer module needs is
importable from here.

An *explorer* is one or two controls (a slider, optionally a menu) over
precomputed stops, and the picture they select. One *renderer* draws every
picture. It keeps a persistent Agg figure, and for a stop it updates only the
artists that change (``set_data``, ``set_ydata``, ...), blits them onto a saved
background and encodes the canvas as PNG. The same bytes serve three modes:

* **Live** (Jupyter, JupyterLab, Colab): displaying an explorer shows its
  ``ipywidgets`` controls above the picture, and under the picture a caption:
  the renderer's ``alt_text(state)``, the description that moves with the
  picture. Every state is rendered once, when
  the widget is built. Under ipywidgets 8 each state gets its own
  ``ipywidgets.Image`` (holding the PNG as a data URL) inside an
  ``ipywidgets.Stack`` (one Stack per control, nested for two), and each
  control's index is ``jsdlink``-ed to its Stack's ``selected_index``: the
  browser swaps the picture itself, with no round trip to the kernel. The
  captions are ``ipywidgets.HTML``s in Stacks of the same shape, linked the
  same way. ipywidgets 7.7 (Colab) has no ``Stack``, so there one
  ``ipywidgets.Image`` and one caption are shown and an observer in the kernel
  sets the Image's ``value`` to the stored PNG bytes of the new state and the
  caption to its description. The display also carries
  an ``image/png`` of the current frame, the fallback that GitHub, nbviewer and
  Colab show before the notebook runs.
* **Static** (the website): when the environment variable ``ATTNBOOK_STATIC``
  is ``1`` (``make book`` sets it while Jupyter Book executes the chapters),
  displaying an explorer emits :meth:`Explorer.to_html` instead: native form
  controls, every stop pre-rendered and embedded, a visible caption under the
  picture (a ``role="status"`` element, so screen readers announce each new
  description) and a few lines of inline JavaScript. No kernel, server or
  network is needed, and without JavaScript the default frame and its caption
  still show. The PDF (``tools/print_book.py``) prints each small multiple
  with that caption under it. The explorer's controls still exist in Python
  but open no comm (:mod:`._unseen`), so no widget state reaches the page.
* **nbval**: the text a cell stores (``text/plain``) is the explorer's repr,
  the same on every run; nbval skips the widget view and PNGs, so explorer
  cells pass strict nbval without being ignored.

How to write a new explorer module
----------------------------------
1. Subclass :class:`Renderer`. Set ``figsize`` (inches at 80 dpi). A *state*
   is the value of the explorer's one control, or the tuple ``(value, other)``
   when it has two controls. Implement

   * ``_build(fig, state) -> list``: draw the whole picture for ``state`` on
     ``fig`` and return the artists that change between states (they are
     blitted; everything else is drawn once). It must work on a fresh Figure
     too: the naive baseline of ``make bench`` calls it.
   * ``_update(state)``: set the data of ``self._dynamic`` (the list
     ``_build`` returned) for ``state``. Do no drawing here.
   * ``alt_text(state) -> str``: a sentence of at least 40 characters,
     computed from the data, describing what the picture shows at ``state``.
     It is the picture's alt text and also its visible caption, on the website
     and in Jupyter alike, so write it for every reader: what changed, in
     numbers, not how the picture is drawn. Nothing else is needed for the
     caption: :class:`Explorer` shows it in every mode.

   Keep the changing artists few and cheap to draw: text is the costliest
   (matplotlib rasterises every glyph each time), so keep the changing part of
   a title short beside a static part (:func:`text_with_tail`), and draw bars
   as one collection with :func:`bars` / :func:`set_bar_heights` rather than
   ``ax.bar``.
   Compute every state's numbers up front in ``__init__`` (before calling
   ``super().__init__(first_state)``), so the colour scales can be fixed over
   all states and a redraw does no tensor work.
2. Write a factory function ``something_explorer(..., value=None)`` that
   validates its arguments (clear ``ValueError``/``TypeError`` naming the
   argument), builds the renderer and the controls with :func:`range_control`
   (a slider) and optionally :func:`menu_control` (a dropdown), and returns
   ``Explorer(name, renderer, [control, ...], summary)`` or a subclass of it.
   ``summary(state)`` returns the text inside the repr, e.g.
   ``"kernel='gaussian', width=0.5"``; keep it free of run-dependent numbers.
3. Re-export the factory and the subclass from ``widgets/__init__.py`` and
   add the explorer to ``lib/tests/test_widgets.py``'s fixture, ``tools/bench.py``
   and the pages list of ``tests/test_browser.py``.

The :class:`Explorer` API (stable): ``.slider`` (the main control),
``.controls`` (every control; a second one is also an attribute, by default
``.menu``), ``.image`` (the ``ipywidgets.Image`` of the current state),
``.caption`` (the ``ipywidgets.HTML`` describing it),
``.stops`` (the main control's values), ``.states``
(every state, row-major over the controls), ``.value``, ``.frame(value)`` or
``.frame(value, other)``, ``.alt_text(...)``, ``.naive_frame(...)``,
``.widget``, ``.to_html()``.
"""

from __future__ import annotations

import base64
import itertools
from collections.abc import Callable, Sequence

# Every name explorer modules, tools and tests import from here, where they
# have always been imported from (``from ._core import bars, text_with_tail``).
from ._controls import Control as Control
from ._controls import _find
from ._controls import menu_control as menu_control
from ._controls import range_control as range_control
from ._drawing import bars as bars
from ._drawing import set_bar_heights as set_bar_heights
from ._drawing import text_with_tail as text_with_tail
from ._live_widget import CLIENT_SWAP as CLIENT_SWAP
from ._live_widget import LiveView
from ._renderer import DPI as DPI
from ._renderer import Renderer as Renderer
from ._renderer import encode_png as encode_png
from ._static import fragment_html
from ._unseen import STATIC_ENV as STATIC_ENV
from ._unseen import static_mode as static_mode

# Output metadata key on an explorer's static fragment (see _repr_mimebundle_).
STATIC_MARKER = "attnbook_explorer"


class Explorer(LiveView):
    """One or two controls over precomputed stops, and the picture they select.

    Attributes:
        slider: the main control (an ipywidgets slider).
        controls: every control's widget, the main one first; a second control
            is also an attribute (``menu`` unless its factory says otherwise).
        image: the ``ipywidgets.Image`` showing the current frame (see the property).
    """

    def __init__(
        self,
        name: str,
        renderer: Renderer,
        controls: Sequence[Control],
        summary: Callable[[object], str],
    ) -> None:
        controls = list(controls)
        if not 1 <= len(controls) <= 2:
            raise ValueError(f"controls must hold one or two controls, got {len(controls)}")
        self._name = name
        self._renderer = renderer
        self._controls = controls
        self._summary = summary
        self.controls = [c.widget for c in controls]
        for control in controls:
            setattr(self, control.attr, control.widget)
        self.slider = controls[0].widget
        self._init_live()

    # -- states ------------------------------------------------------------
    @property
    def stops(self) -> list:
        """The main control's values, in order."""
        return list(self._controls[0].stops)

    @property
    def states(self) -> list:
        """Every state in order: values of the main control, or (value, other) tuples."""
        if len(self._controls) == 1:
            return self.stops
        return list(itertools.product(*(c.stops for c in self._controls)))

    @property
    def value(self):
        """The main control's current value."""
        return self.slider.value

    def _state(self):
        if len(self._controls) == 1:
            return self.slider.value
        return tuple(w.value for w in self.controls)

    def _as_state(self, value, other):
        main = _find(self._controls[0].stops, value, "value")
        if len(self._controls) == 1:
            if other is not None:
                raise TypeError(f"this explorer has one control; got a second value {other!r}")
            return main
        second = self._controls[1]
        if other is None:
            other = second.widget.value
        return (main, _find(second.stops, other, "other"))

    def frame(self, value, other=None) -> bytes:
        """PNG bytes of the picture for one stop (``other``: the second control's
        value, default its current value), drawn now by the renderer: the bytes
        that the live image shows and the static page is built from."""
        return self._renderer.png(self._as_state(value, other))

    def naive_frame(self, value, other=None) -> bytes:
        """The same picture drawn from scratch in a new figure (benchmark baseline)."""
        return self._renderer.naive_png(self._as_state(value, other))

    def alt_text(self, value, other=None) -> str:
        """A sentence describing the picture for a stop, for screen readers."""
        return self._renderer.alt_text(self._as_state(value, other))

    # -- static HTML ---------------------------------------------------------
    def to_html(self) -> str:
        """A self-contained HTML fragment: native controls, every frame, inline JS.

        The root has class ``attnbook-explorer``; each control is a native
        ``<input type="range">`` or ``<select>`` with an ``<output>`` showing its
        label; the picture lives in the one element of class ``attnbook-view``
        and keeps its natural pixel size (the view scrolls sideways on narrow
        pages).

        Under the view, a caption (class ``attnbook-caption``, ``role="status"``)
        shows the current state's description, the renderer's ``alt_text``: it
        holds the default state's text from the start, and the script replaces
        it when a control moves, so screen readers announce each new state.

        Frame economy: the default state's frame is embedded once, as the base
        picture. Every other state is a small *layer*: only the pixels that
        differ from the base, cropped to their bounding box, transparent
        elsewhere, and placed over the base at their offset; states whose
        pictures are identical share one layer. Moving a control
        shows one layer and hides the previous one, and sets the base picture's
        alt text (and the view's label) and the caption to the new state's
        description. No
        external URL is used, and without JavaScript the default frame shows
        (the controls stay disabled).
        """
        return fragment_html(self._name, self._renderer, self._controls, self.states, self._state())

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._summary(self._state())}, {len(self.states)} stops)"

    def _repr_mimebundle_(self, include=None, exclude=None):
        """Static HTML for the book build; else the live widget plus a PNG fallback.

        Front ends that can show the widget do; GitHub, nbviewer and Colab before
        running show the ``image/png`` of the current frame, at its pixel size.
        """
        if static_mode():
            # The marker tells tests/nbval_executed.py that this text/html is the
            # website's form of an explorer, which no stored notebook holds.
            data = {"text/plain": repr(self), "text/html": self.to_html()}
            return data, {"text/html": {STATIC_MARKER: True}}
        width, height = self._renderer.canvas.get_width_height()
        data = {
            "text/plain": repr(self),
            "image/png": base64.b64encode(self._frame_of(self._state())).decode("ascii"),
            "application/vnd.jupyter.widget-view+json": {
                "version_major": 2,
                "version_minor": 0,
                "model_id": self.widget.model_id,
            },
        }
        return data, {"image/png": {"width": width, "height": height}}
