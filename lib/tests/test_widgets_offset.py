"""Tests of the offset explorer (chapter 7) beyond the shared explorer tests.

The shared tests in test_widgets.py (live widget, distinct frames, blitting,
static HTML, budgets) run over this explorer too; here: its data and input.
"""

from __future__ import annotations

import math
import re

import ipywidgets
import numpy as np
import pytest

from attnbook import widgets
from attnbook.positional import sinusoidal_encoding
from attnbook.widgets.offset import offset_dot_product


@pytest.fixture(scope="module")
def explorer():
    return widgets.offset_explorer()


def test_default_stops_and_value(explorer):
    assert explorer.stops == list(range(21))
    assert explorer.value == 5
    assert isinstance(explorer.slider, ipywidgets.IntSlider)
    assert repr(explorer) == "OffsetExplorer(offset=5, positions=60, d=32, pair=2, 21 stops)"


@pytest.mark.parametrize("delta", [0, 1, 5, 13, 20])
def test_diagonals_are_flat_at_the_closed_form(explorer, delta):
    """Every start i gives the same dot product, sum_j cos(delta w_j)."""
    P = sinusoidal_encoding(60, 32).double()
    brute = [float(P[i] @ P[i + delta]) for i in range(60 - delta)]  # a loop, not the matrix
    values = explorer._renderer.diagonals[delta]
    np.testing.assert_allclose(values, brute, atol=1e-9)
    np.testing.assert_allclose(values, offset_dot_product(delta, 32), atol=1e-5)


@pytest.mark.parametrize("delta", [3, 17])
def test_alt_text_quotes_the_data(explorer, delta):
    text = explorer.alt_text(delta)
    value = offset_dot_product(delta, 32)
    assert f"flat line at {value:.2f}" in text
    assert f"smallest {value:.2f}, largest {value:.2f}" in text
    angle = delta / 10000 ** (4 / 32)
    assert f"same angle, {angle:.2f} radians" in text
    assert f"joined to positions {delta}, {15 + delta}, {30 + delta}" in text


def test_circle_points_turn_by_the_same_angle(explorer):
    renderer = explorer._renderer
    for delta in (1, 8, 20):
        turns = []
        for start in renderer.starts:
            x0, y0 = renderer._circle_point(start)
            x1, y1 = renderer._circle_point(start + delta)
            turns.append((math.atan2(y1, x1) - math.atan2(y0, x0)) % (2 * math.pi))
        expected = (delta * renderer.omega) % (2 * math.pi)
        np.testing.assert_allclose(turns, expected, atol=1e-6)


def test_frames_differ_only_where_the_offset_shows(explorer):
    a, b = explorer.frame(4), explorer.frame(12)
    assert a != b
    assert explorer.frame(4) == a  # the same stop gives the same bytes


def test_custom_arguments():
    small = widgets.offset_explorer(offsets=[0, 2, 4], num_positions=12, num_hiddens=8, pair=0)
    assert small.stops == [0, 2, 4] and small.value == 0
    assert isinstance(small.slider, ipywidgets.SelectionSlider)
    assert len(re.findall(r"<img ", small.to_html())) == 3


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"num_hiddens": 7}, "num_hiddens must be even, got 7"),
        ({"num_positions": 3}, "num_positions must be at least 4, got 3"),
        ({"pair": 16}, r"pair must be an integer in \[0, 16\), got 16"),
        ({"pair": True}, "pair must be an integer"),
        ({"offsets": [0, 3, 2]}, "strictly increasing"),
        ({"offsets": [0]}, "at least 2"),
        ({"offsets": [-1, 0]}, r"offsets\[0\] must be an integer >= 0, got -1"),
        ({"offsets": [0, 1.5]}, r"offsets\[1\] must be an integer"),
        ({"offsets": [0, 30]}, "offsets must not exceed 29 for num_positions=60"),
        ({"value": 21}, "value must be one of offsets"),
    ],
)
def test_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        widgets.offset_explorer(**kwargs)


def test_bad_types():
    with pytest.raises(TypeError, match="num_positions must be an integer"):
        widgets.offset_explorer(num_positions=60.0)
