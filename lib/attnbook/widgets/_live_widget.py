"""The live widget of an explorer: its ipywidgets view in Jupyter, JupyterLab and Colab.

:class:`LiveView` is the part of ``Explorer`` (``_core``) that builds what a
kernel displays: every state rendered once, then, under ipywidgets 8, one
``ipywidgets.Image`` and one caption per state in ``ipywidgets.Stack``s whose
index is ``jsdlink``-ed to the controls (the browser swaps the picture
itself); under ipywidgets 7.7 (no ``Stack``), one Image and one caption that a
kernel observer updates. (The explorers that run a model in the browser are
the other kind, in ``widgets.live``.)
"""

from __future__ import annotations

import html
from collections.abc import Callable

import ipywidgets

from ._static import _data_url
from ._unseen import unseen_widgets

# ipywidgets 8 has Stack, so the browser can swap frames itself; 7.7 has not.
CLIENT_SWAP = hasattr(ipywidgets, "Stack")


class LiveView:
    """The live widget of an explorer, a base class of ``Explorer``.

    It reads what ``Explorer`` sets before calling :meth:`_init_live`:
    ``_renderer``, ``_controls`` (every ``Control``), ``controls`` (their
    widgets), and the ``states`` property and ``_state()`` method.
    """

    def _init_live(self) -> None:
        """Empty caches, the images' shared Layout and, under ipywidgets 7.7,
        the one Image and caption with their observer."""
        self._pngs: dict = {}  # state -> PNG bytes, filled when the live widget is built
        # Natural pixel size: a flex column would otherwise stretch the picture
        # to the cell's width (JupyterLab), which blurs it. One Layout serves
        # every image.
        width, height = self._renderer.canvas.get_width_height()
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

    def _frame_of(self, state) -> bytes:
        png = self._pngs.get(state)
        if png is None:
            png = self._pngs[state] = self._renderer.png(state)
        return png

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
