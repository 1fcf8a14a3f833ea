"""The display shared by the four live explorers: the website's fragment and the notebook's bundle.

:func:`static_fragment` writes what the website shows (``ATTNBOOK_STATIC=1``):
one ``<div class="attnbook-live-host">`` with an id made from the explorer's
name and state (sha1), holding

* a ``<style>`` that hides the fallback once the module runs (and, in print,
  shows it again in place of the live view),
* the fallback ``<img class="attnbook-live-fallback">``: the PNG of the
  current input drawn by Python, with the explorer's summary as alt text, which
  is what shows without JavaScript, on GitHub and in the PDF,
* an empty ``<div class="attnbook-live-app">`` the module renders into,
* the state as JSON in ``<script type="application/json"
  class="attnbook-live-state">`` (weights as base64), read by ``shim.js``'s
  ``localModel``,
* the explorer as one classic ``<script>`` (:func:`script_source`): the
  runtime, the explorer and the shim inline, then the lines that start it. A
  classic script runs when the parser reaches it, so the first result is drawn
  before the rest of the page is parsed. A module script (``async`` or not)
  waits for a task of its own, and on chapter 15's page that came after the
  page's deferred scripts (MathJax) in 3 of 5 loads, 0.2 s after the page
  became interactive (the budget is 100 ms).

:class:`LiveDisplay` gives an explorer (an ``anywidget.AnyWidget``)
``to_html``, ``_repr_mimebundle_`` and ``_ipython_display_`` from what it
supplies: ``_module`` (its ``.js`` name), ``_page_state`` (the traitlets the
page starts from), ``summary()``, ``png()`` and ``_drawable()``. In static mode
its model opens no comm (:meth:`LiveDisplay.open`).
"""

from __future__ import annotations

import base64
import hashlib
import html
import json

from .._core import STATIC_MARKER, static_mode
from .._unseen import unseen_widgets
from ._source import script_source

STYLE = (
    "<style>.attnbook-live-running>.attnbook-live-fallback{display:none}"
    "@media print{.attnbook-live-running>.attnbook-live-fallback{display:block}"
    ".attnbook-live-running>.attnbook-live-app{display:none}}</style>"
)


def static_fragment(name: str, state: dict, png: bytes, alt: str) -> str:
    """The website's fragment of explorer ``name`` (``name.js``) started from
    ``state`` (JSON-able, what ``localModel`` serves the module), with ``png``
    and its ``alt`` text as the no-JavaScript fallback (see the module docstring)."""
    state_json = json.dumps(state, separators=(",", ":")).replace("</", "<\\/")
    uid = "attnbook-live-" + hashlib.sha1(f"{name}\n{state_json}".encode()).hexdigest()[:10]
    script = script_source(
        name,
        # the script's own host: two fragments of the same state share an id
        "const host = document.currentScript.parentElement;\n"
        "const state = JSON.parse(host.querySelector('.attnbook-live-state').textContent);\n"
        "host.classList.add('attnbook-live-running');\n"
        "render({ model: localModel(state), el: host.querySelector('.attnbook-live-app') });\n",
    )
    if "</script" in script.lower():
        raise ValueError(f"the script of {name}.js must not contain '</script'")
    return (
        f'<div class="attnbook-live-host" id="{uid}">{STYLE}\n'
        f'<img class="attnbook-live-fallback" src="data:image/png;base64,'
        f'{base64.b64encode(png).decode("ascii")}" alt="{html.escape(alt)}" '
        'style="max-width:100%;height:auto">\n'
        '<div class="attnbook-live-app"></div>\n'
        f'<script type="application/json" class="attnbook-live-state">{state_json}</script>\n'
        f"<script>{script}</script>\n</div>"
    )


class LiveDisplay:
    """Display of a live explorer; put it before ``anywidget.AnyWidget`` in the bases.

    The explorer supplies ``_module`` (its ``.js`` name), ``_page_state``
    (the names of the traitlets the page starts from), ``summary()`` (the alt
    text), ``png()`` and ``_drawable()`` (whether the input has a picture).
    """

    _module: str
    _page_state: tuple[str, ...]

    def _state(self) -> dict:
        """The traitlets the page starts from, bytes (the weights) as base64."""
        state = {}
        for name in self._page_state:
            value = getattr(self, name)
            if isinstance(value, bytes):
                value = base64.b64encode(value).decode("ascii")
            state[name] = value
        return state

    def open(self) -> None:
        """Open the widget's comm, one that sends nothing in static mode.

        ipywidgets calls this once, from the constructor; on the website the
        explorer shows its static fragment, and its model (weights included,
        chapter 13's about 293 KiB each) would otherwise be filed as widget
        state in the executed notebook and written into the page
        (:mod:`attnbook.widgets._unseen`).
        """
        with unseen_widgets():
            super().open()

    def _drawable(self) -> bool:
        return True

    def to_html(self) -> str:
        """The website's fragment: module, shim and weights inline, the PNG without JavaScript."""
        return static_fragment(self._module, self._state(), self.png(), self.summary())

    def _repr_mimebundle_(self, include=None, exclude=None):
        if static_mode():
            data = {"text/plain": repr(self), "text/html": self.to_html()}
            return data, {"text/html": {STATIC_MARKER: True}}
        data = {
            "text/plain": repr(self),
            "application/vnd.jupyter.widget-view+json": {
                "version_major": 2,
                "version_minor": 0,
                "model_id": self.model_id,
            },
        }
        if self._drawable():
            data["image/png"] = base64.b64encode(self.png()).decode("ascii")
        return data, {}

    def _ipython_display_(self):
        # ipywidgets 7 displays a widget through this method, before any
        # _repr_mimebundle_: the same bundle, with its PNG fallback.
        from IPython.display import display

        data, metadata = self._repr_mimebundle_()
        display(data, metadata=metadata, raw=True)
