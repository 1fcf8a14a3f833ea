"""An explorer's controls: a slider or a menu over a list of stops.

:func:`range_control` and :func:`menu_control` build a :class:`Control` (the
ipywidget, its stops and their labels); ``Explorer`` shows it live as an
ipywidget and on the website as a native ``<input type="range">`` or
``<select>`` (``_static``). In static mode the widgets open no comm
(``_unseen``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import ipywidgets

from ._unseen import unseen_widgets


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
