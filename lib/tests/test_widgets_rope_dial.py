"""The RoPE dial: what it draws is what the text says it draws."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnbook import widgets
from attnbook.alibi import alibi_slopes
from attnbook.positional import sinusoidal_encoding
from attnbook.widgets.rope_dial import dial_scores


def test_scores_stay_put_except_for_added_sinusoids():
    data = dial_scores(list(range(0, 21, 2)))
    for scheme in ("RoPE", "ALiBi", "NoPE"):
        score = data[scheme]["score"]
        assert np.ptp(score) < 1e-12, scheme
    assert np.ptp(data["sinusoidal"]["score"]) > 1.0
    # ALiBi's score is NoPE's minus the steepest slope times the distance 3.
    np.testing.assert_allclose(
        data["ALiBi"]["score"], data["NoPE"]["score"] - 3 * float(alibi_slopes(4)[0])
    )


def test_rope_arrows_turn_by_the_shift():
    data = dial_scores([0, 1])["RoPE"]
    for arrow in ("q", "k"):
        a0 = np.arctan2(data[arrow][0, 1], data[arrow][0, 0])
        a1 = np.arctan2(data[arrow][1, 1], data[arrow][1, 0])
        assert np.isclose(np.cos(a1 - a0), np.cos(1.0)) and np.isclose(np.sin(a1 - a0), np.sin(1.0))


def test_distance_curves():
    data = dial_scores([0, 2])
    curve = data["RoPE"]["curves"][0]
    assert curve[0] == pytest.approx(1.0) and curve[-1] < 0.7
    wide = sinusoidal_encoding(65, 64).double()
    np.testing.assert_allclose(data["sinusoidal"]["curves"][0], (wide @ wide[0] / 32).numpy())
    slopes = alibi_slopes(4).tolist()
    for line, slope in zip(data["ALiBi"]["curves"], slopes):
        assert line[10] == pytest.approx(-10 * slope)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"shifts": [0]}, "at least 2 strictly increasing"),
        ({"shifts": [0, -2]}, r"shifts\[1\] must be an integer >= 0, got -2"),
        ({"scheme": "T5"}, "scheme must be one of"),
        ({"value": 3}, "value must be one of shifts"),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        widgets.rope_dial_explorer(**kwargs)


def test_alt_text_reports_the_flat_score():
    explorer = widgets.rope_dial_explorer()
    text = explorer.alt_text(8, "RoPE")
    assert "varies by 0.00" in text and "position 13" in text
    assert "varies by 0.00" not in explorer.alt_text(8, "sinusoidal")
    assert torch.is_tensor(alibi_slopes(4))


def test_panel_titles_and_the_rope_curve_label():
    """The chapter names the panels by these titles; "pair" means pair 0 of features only."""
    explorer = widgets.rope_dial_explorer(scheme="RoPE")
    left, middle, right = explorer._renderer.fig.axes
    assert left.get_title() == "pair 0 of q and k"
    assert middle.get_title() == "the same q and k, both shifted"
    assert right.get_title() == "score against distance"
    # The RoPE curve is the score divided by its value at distance 0, as the text says.
    assert "q = k, d = 64:\nscore / score at distance 0" in [t.get_text() for t in right.texts]
