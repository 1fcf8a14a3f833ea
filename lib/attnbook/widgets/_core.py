"""The machinery every explorer shares: renderer, controls, live widget, static HTML.

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
import hashlib
import html
import io
import itertools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import ipywidgets
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from PIL import Image

# The drawing helpers of explorer modules, re-exported here where they have
# always been imported from (``from ._core import bars, text_with_tail``).
from ._drawing import bars as bars
from ._drawing import set_bar_heights as set_bar_heights
from ._drawing import text_with_tail as text_with_tail
from ._static import _control_html, _data_url, _layer
from ._unseen import STATIC_ENV as STATIC_ENV
from ._unseen import static_mode as static_mode
from ._unseen import unseen_widgets

# Output metadata key on an explorer's static fragment (see _repr_mimebundle_).
STATIC_MARKER = "attnbook_explorer"
DPI = 80
# ipywidgets 8 has Stack, so the browser can swap frames itself; 7.7 has not.
CLIENT_SWAP = hasattr(ipywidgets, "Stack")


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


@dataclass
class Control:
    """One control of an explorer: an ipywidget over a list of stops.

    ``kind`` is ``"range"`` (a slider; a native range input on the website) or
    ``"menu"`` (a dropdown; a native ``<select>`` on the website). ``attr`` is
    the Explorer attribute that holds the widget.
    """

    widget: ipywidgets.ValueWidget
    stops: list
    labels: list[str]
    description: str
    kind: str = "range"
    attr: str = "slider"


def _look(width: str) -> dict:
    """Arguments shared by every control (a fresh Layout each time)."""
    return {
        "style": {"description_width": "initial"},
        "layout": ipywidgets.Layout(width=width),
    }


def range_control(
    description: str,
    stops: Sequence,
    labels: Sequence[str],
    value,
    *,
    integer: bool = False,
    attr: str = "slider",
) -> Control:
    """A slider over ``stops`` (an ``IntSlider`` for consecutive integers).

    In static mode its models open no comm (:func:`unseen_widgets`)."""
    stops, labels = list(stops), list(labels)
    with unseen_widgets():
        if integer:
            widget = ipywidgets.IntSlider(
                value=int(value),
                min=stops[0],
                max=stops[-1],
                step=1,
                description=description,
                continuous_update=True,
                **_look("480px"),
            )
        else:
            widget = ipywidgets.SelectionSlider(
                options=list(zip(labels, stops)),
                value=value,
                description=description,
                continuous_update=True,
                **_look("480px"),
            )
    return Control(widget, stops, labels, description, "range", attr)


def menu_control(
    description: str, stops: Sequence, labels: Sequence[str], value, *, attr: str = "menu"
) -> Control:
    """A dropdown menu over ``stops`` (no comm in static mode: :func:`unseen_widgets`)."""
    stops, labels = list(stops), list(labels)
    with unseen_widgets():
        widget = ipywidgets.Dropdown(
            options=list(zip(labels, stops)), value=value, description=description, **_look("260px")
        )
    return Control(widget, stops, labels, description, "menu", attr)


def _find(stops: list, value, what: str):
    for stop in stops:
        if stop == value:
            return stop
    raise ValueError(f"{what} must be one of the stops {stops}, got {value!r}")


class Explorer:
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
        self._pngs: dict = {}  # state -> PNG bytes, filled when the live widget is built
        # Natural pixel size: a flex column would otherwise stretch the picture
        # to the cell's width (JupyterLab), which blurs it. One Layout serves
        # every image.
        width, height = renderer.canvas.get_width_height()
        with unseen_widgets():  # static mode: the page never shows it
            self._layout = ipywidgets.Layout(
                width=f"{width}px", height=f"{height}px", max_width="none", align_self="flex-start"
            )
        self._images: dict = {}  # state -> Image, one per state (ipywidgets 8)
        self._captions: dict = {}  # state -> HTML caption, one per state (ipywidgets 8)
        self._links: list = []
        self._image: ipywidgets.Image | None = None  # the one Image (ipywidgets 7.7)
        self._caption: ipywidgets.HTML | None = None  # the one caption (ipywidgets 7.7)
        if not CLIENT_SWAP:
            self._image = self._new_image(self._state())
            self._caption = self._new_caption(self._state())
            for widget in self.controls:
                widget.observe(self._on_change, names="value")
        self._box: ipywidgets.VBox | None = None

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

    def _frame_of(self, state) -> bytes:
        png = self._pngs.get(state)
        if png is None:
            png = self._pngs[state] = self._renderer.png(state)
        return png

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

    # -- live widget -----------------------------------------------------------
    def _new_image(self, state) -> ipywidgets.Image:
        png = self._frame_of(state)
        if not CLIENT_SWAP:
            return ipywidgets.Image(value=png, format="png", layout=self._layout)
        # A data URL, not PNG bytes: the front end turns PNG bytes into a new
        # blob URL for every view it creates, and Chromium loads a blob URL
        # through its browser process (5-25 ms, measured); a data URL loads in
        # the page in 1-5 ms, and at once when that URL was shown before.
        # (No tooltip: ipywidgets 8.1's ImageView fails on an Image with one.)
        return ipywidgets.Image(value=_data_url(png).encode(), format="url", layout=self._layout)

    @property
    def image(self) -> ipywidgets.Image:
        """The ``ipywidgets.Image`` that shows the current state's frame.

        Its ``format`` is ``"png"`` and its ``value`` the PNG bytes under
        ipywidgets 7.7; under ipywidgets 8 (one Image per state) its format is
        ``"url"`` and its value the ``data:image/png;base64,...`` URL of the PNG.
        """
        if not CLIENT_SWAP:
            return self._image
        return self._image_of(self._state())

    def _caption_html(self, state) -> str:
        text = html.escape(self._renderer.alt_text(state))
        return f'<div class="attnbook-caption" style="line-height:1.4">{text}</div>'

    def _new_caption(self, state) -> ipywidgets.HTML:
        # The width of the picture, so that the text wraps under it.
        width = self._renderer.canvas.get_width_height()[0]
        return ipywidgets.HTML(
            value=self._caption_html(state),
            layout=ipywidgets.Layout(width=f"{width}px", max_width="100%"),
        )

    @property
    def caption(self) -> ipywidgets.HTML:
        """The ``ipywidgets.HTML`` under the picture: the current state's description.

        Its value is ``alt_text`` of the state (HTML-escaped) in a ``<div>`` of
        class ``attnbook-caption``. Under ipywidgets 8 there is one per state,
        swapped by the browser like the Images; under 7.7 there is one, whose
        value the kernel updates.
        """
        if not CLIENT_SWAP:
            return self._caption
        return self._caption_of(self._state())

    def _on_change(self, change) -> None:
        # ipywidgets 7.7 only: the kernel sends the new state's stored bytes and text.
        state = self._state()
        self.image.value = self._frame_of(state)
        self._caption.value = self._caption_html(state)

    def _image_of(self, state) -> ipywidgets.Image:
        if state not in self._images:
            self._images[state] = self._new_image(state)
        return self._images[state]

    def _caption_of(self, state) -> ipywidgets.HTML:
        if state not in self._captions:
            self._captions[state] = self._new_caption(state)
        return self._captions[state]

    def _stack(self, level: int, prefix: tuple, leaf: Callable) -> ipywidgets.Widget:
        """The Stack over control ``level``'s stops (nested Stacks for the next
        control, ``leaf(state)`` at the last: an Image or a caption), its index
        linked to the control in the browser."""
        control = self._controls[level]
        children = []
        for stop in control.stops:
            key = (*prefix, stop)
            if level + 1 < len(self._controls):
                children.append(self._stack(level + 1, key, leaf))
            else:
                children.append(leaf(key if len(key) > 1 else key[0]))
        widget = control.widget
        if isinstance(widget, ipywidgets.IntSlider):
            # An IntSlider has no index: its value is the index into a Stack
            # padded with copies of the first child below the slider's minimum.
            source, pad = "value", widget.min
        else:
            source, pad = "index", 0
        stack = ipywidgets.Stack(
            [children[0]] * pad + children,
            selected_index=pad + control.stops.index(widget.value),
        )
        self._links.append(ipywidgets.jsdlink((widget, source), (stack, "selected_index")))
        return stack

    @property
    def widget(self) -> ipywidgets.VBox:
        """The live widget: the controls, the picture, and its caption under it."""
        if self._box is None:
            # Render every state once, up front: a key press then needs no
            # drawing, and `make bench` measures what remains of its latency.
            for state in self.states:
                self._frame_of(state)
            top = self.controls[0] if len(self.controls) == 1 else ipywidgets.HBox(self.controls)
            if CLIENT_SWAP:
                picture = self._stack(0, (), self._image_of)
                caption = self._stack(0, (), self._caption_of)
            else:
                picture, caption = self.image, self.caption
            self._box = ipywidgets.VBox([top, picture, caption])
        return self._box

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
        states = self.states
        default_index = states.index(self._state())
        base = self._renderer.rgb(states[default_index])
        height, width = base.shape[:2]
        layers, layer_of = [], []
        index_of: dict = {}  # layer -> its index: states with the same picture share it
        for state in states:
            layer = _layer(base, self._renderer.rgb(state))
            if layer is None:
                layer_of.append(-1)
                continue
            if layer not in index_of:
                index_of[layer] = len(layers)
                layers.append(layer)
            layer_of.append(index_of[layer])
        base_png = encode_png(base, compress_level=9)
        digest = hashlib.sha1(b"".join([base_png, *(png for png, _, _ in layers)])).hexdigest()
        uid = f"attnbook-{self._name}-{digest[:10]}"
        alts = [self._renderer.alt_text(state) for state in states]
        default_alt = html.escape(alts[default_index])
        pictures = "\n".join(
            [
                f'<img class="attnbook-base" src="{_data_url(base_png)}" alt="{default_alt}" '
                f'width="{width}" height="{height}" style="display:block;max-width:none">',
                *(
                    f'<img src="{_data_url(png)}" alt="" aria-hidden="true" hidden '
                    f'style="position:absolute;left:{left}px;top:{top}px;max-width:none">'
                    for png, left, top in layers
                ),
            ]
        )
        current = self._state() if len(self._controls) == 2 else (self._state(),)
        controls_html = "\n".join(
            _control_html(control, control.stops.index(value))
            for control, value in zip(self._controls, current)
        )
        sizes = [len(c.stops) for c in self._controls]
        labels = [c.labels for c in self._controls]
        script = (
            "(function(){"
            f"var root=document.getElementById({json.dumps(uid)});"
            "var inputs=root.querySelectorAll('input,select');"
            "var outs=root.querySelectorAll('output');"
            "var pic=root.querySelector('.attnbook-picture');"
            "var base=pic.querySelector('.attnbook-base');"
            "var layers=pic.querySelectorAll('img[aria-hidden]');"
            "var cap=root.querySelector('.attnbook-caption');"
            f"var labels={json.dumps(labels)},sizes={json.dumps(sizes)};"
            f"var layerOf={json.dumps(layer_of)},alts={json.dumps(alts)};"
            "var shown=-1;"
            "function show(){var k=0;"
            "for(var c=0;c<inputs.length;c++){var i=Number(inputs[c].value);k=k*sizes[c]+i;"
            "outs[c].textContent=labels[c][i];"
            "if(inputs[c].type==='range')inputs[c].setAttribute('aria-valuetext',labels[c][i]);}"
            "var j=layerOf[k];"
            "if(j!==shown){if(shown>=0)layers[shown].hidden=true;if(j>=0)layers[j].hidden=false;"
            "shown=j;}"
            "base.alt=alts[k];pic.setAttribute('aria-label',alts[k]);"
            # Only a real change is written: the live region then speaks once a move.
            "if(cap.textContent!==alts[k])cap.textContent=alts[k];}"
            "for(var c=0;c<inputs.length;c++){inputs[c].addEventListener('input',show);"
            "inputs[c].addEventListener('change',show);inputs[c].disabled=false;}"
            "for(var j=0;j<layers.length;j++){if(layers[j].decode)layers[j].decode().catch("
            "function(){});}"
            "show();"
            "})();"
        )
        label_of_view = "explorer picture (scrolls sideways if the page is narrow)"
        return (
            f'<div class="attnbook-explorer" id="{uid}">\n'
            f"{controls_html}\n"
            # The view scrolls sideways when the page is narrower than the picture;
            # tabindex lets a keyboard reach and scroll it (axe: scrollable-region-focusable).
            f'<div class="attnbook-view" tabindex="0" role="group" '
            f'aria-label="{html.escape(label_of_view)}" style="overflow-x:auto">\n'
            f'<div class="attnbook-picture" role="img" aria-label="{default_alt}" '
            f'style="position:relative;width:{width}px;height:{height}px">\n'
            f"{pictures}\n</div>\n</div>\n"
            # The description that moves with the picture (role="status": a polite
            # live region, announced when the script changes its text).
            f'<p class="attnbook-caption" role="status" style="max-width:{width}px">'
            f"{default_alt}</p>\n"
            f"<script>{script}</script>\n</div>"
        )

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
