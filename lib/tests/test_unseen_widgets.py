"""In static mode (the website build) an explorer's widget models open no comm.

A comm's opening message carries the model's state, which whatever executes
the notebook files as widget state and myst-nb writes into the page
(attnbook/widgets/_unseen.py). Every comm ipywidgets 8 opens goes through
``comm.create_comm``; the tests put a recorder there.
"""

from __future__ import annotations

import comm
import ipywidgets
import pytest

from attnbook import widgets
from attnbook.kernels import KERNELS
from attnbook.widgets import live
from attnbook.widgets._unseen import UnseenComm, unseen_widgets

pytestmark = pytest.mark.skipif(
    not hasattr(ipywidgets, "Stack"), reason="ipywidgets 7.7 opens its comms itself"
)


@pytest.fixture
def opened(monkeypatch):
    """The target names of the comms opened through ``comm.create_comm``."""
    names: list[str] = []

    def record(*args, **kwargs):
        names.append(kwargs.get("target_name", "comm"))
        return comm.DummyComm(*args, **kwargs)

    monkeypatch.setattr(comm, "create_comm", record)
    return names


def build_both():
    """A frame explorer with two controls and a live explorer (chapter 13's)."""
    return widgets.kernel_width_explorer(kernels=list(KERNELS)), live.dates_live()


def test_outside_static_mode_every_model_opens_a_comm(monkeypatch, opened):
    # The recorder sees the comms: without this the test below could not fail.
    monkeypatch.delenv(widgets.STATIC_ENV, raising=False)
    frames, dates = build_both()
    assert opened.count("jupyter.widget") >= 4  # two controls, their layouts, the live model
    assert not isinstance(frames.slider.comm, UnseenComm)
    assert not isinstance(dates.comm, UnseenComm)


def test_in_static_mode_no_model_opens_a_comm(monkeypatch, opened):
    monkeypatch.setenv(widgets.STATIC_ENV, "1")
    frames, dates = build_both()
    assert opened == []
    for model in [frames.slider, frames.menu, frames.slider.layout, frames.menu.style, dates]:
        assert isinstance(model.comm, UnseenComm)
    # The models still work in Python, and the page is the explorers' fragments.
    frames.slider.value = frames.slider.value
    dates.text = "1 Jan 2000"
    assert 'class="attnbook-explorer"' in frames._repr_mimebundle_()[0]["text/html"]
    assert "attnbook-live-host" in dates._repr_mimebundle_()[0]["text/html"]
    assert comm.create_comm.__name__ == "record"  # put back after each build
    frames.slider.close()  # closing needs no comm manager
    assert frames.slider.comm is None


def test_unseen_widgets_does_nothing_outside_static_mode(monkeypatch, opened):
    monkeypatch.delenv(widgets.STATIC_ENV, raising=False)
    with unseen_widgets():
        slider = ipywidgets.IntSlider()
    assert "jupyter.widget" in opened
    assert not isinstance(slider.comm, UnseenComm)
