"""Widget models that the website never shows open no channel to a front end.

While the book is built (``ATTNBOOK_STATIC=1``), an explorer displays its
static HTML, yet it still *has* its ipywidgets controls (``.slider``,
``.menu``) and, for a live explorer, is itself an ``anywidget.AnyWidget``.
An ipywidget opens a comm when it is made, and the comm's first message
carries the model's whole state. Whatever executes the notebook and keeps
widget state (nbclient does by default, and so Jupyter Book's own execution
on a fresh clone) files every such state in the notebook's ``widgets``
metadata, and myst-nb writes it into the page as an
``application/vnd.jupyter.widget-state+json`` script. A live explorer's state
holds its weights, so chapter 13's page carried 3.8 MiB of models that
nothing on the site reads (the explorers run from their static fragment; the
site loads no widget manager). nbval keeps no widget state, which is why the
built site differed with the way its notebooks were executed.

:func:`unseen_widgets` makes every widget created inside it, in static mode
only, hold an :class:`UnseenComm`: a comm that sends nothing and registers
with no comm manager. Its models behave as before in Python (values can be
read and set, observers fire), but no kernel message, and so no state, leaves
the kernel. Outside static mode (Jupyter, JupyterLab, Colab) it does nothing,
and the widgets are live as always.

It works through ``comm.create_comm``, the hook through which ipywidgets 8
(the lock's, with which the website is built) opens every comm. ipywidgets
7.7 (Colab's) makes its comms directly, so there it changes nothing; Colab
never sets ``ATTNBOOK_STATIC``. ``book/_ext/offline_site.py`` drops any
widget state that still reaches a page, whatever made it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import comm
from comm import DummyComm

STATIC_ENV = "ATTNBOOK_STATIC"


def static_mode() -> bool:
    """True while the book build asks for static HTML (``ATTNBOOK_STATIC=1``)."""
    return os.environ.get(STATIC_ENV, "") == "1"


class UnseenComm(DummyComm):
    """A comm that publishes nothing and joins no comm manager.

    ``DummyComm`` already publishes nothing, but it registers with the kernel's
    comm manager when opened; this one keeps to itself, so closing it (when its
    widget is garbage-collected) needs no manager either.
    """

    def open(self, data=None, metadata=None, buffers=None) -> None:
        self._closed = False

    def close(self, data=None, metadata=None, buffers=None, deleting=False) -> None:
        self._closed = True


def _unseen_comm(*args, **kwargs) -> UnseenComm:
    return UnseenComm(*args, **kwargs)


@contextmanager
def unseen_widgets() -> Iterator[None]:
    """In static mode, widgets made inside the block open an :class:`UnseenComm`."""
    if not static_mode():
        yield
        return
    previous = comm.create_comm
    comm.create_comm = _unseen_comm
    try:
        yield
    finally:
        comm.create_comm = previous
