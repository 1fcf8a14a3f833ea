"""Tests of chapter 13's alignment explorer (the shared widget tests run it too)."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from attnbook import seq2seq, widgets


@pytest.fixture(scope="module")
def log():
    probe = seq2seq.figure_probe()
    return seq2seq.train_dates(0, True, 8, record=(0, 4, 8), probe=probe, test_size=40)[1]


def pixels(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(int)


def test_states_are_steps_by_dates(log):
    explorer = widgets.alignment_explorer(log, value=8, example=2)
    assert explorer.stops == [0, 4, 8]
    assert len(explorer.states) == 3 * 5
    assert explorer.slider.value == 8 and explorer.menu.value == 2
    assert "step=8, example=2" in repr(explorer)


def test_frames_change_with_step_and_date(log):
    explorer = widgets.alignment_explorer(log)
    a, b, c = (pixels(explorer.frame(s, e)) for s, e in ((0, 0), (8, 0), (8, 3)))
    assert a.shape == b.shape == c.shape
    assert (a != b).any() and (b != c).any()
    # Frames are reproducible (blitting leaves nothing behind).
    assert (pixels(explorer.frame(0, 0)) == a).all()


def test_alt_text_counts_from_the_log(log):
    explorer = widgets.alignment_explorer(log)
    text = explorer.alt_text(8, 3)
    assert "'Sunday 23 Feb 1969'" in text and "step 8" in text
    weights = log.weights[2][3].numpy()
    assert f"{weights.max(-1).mean():.2f} on average" in text
    assert f"{log.exact[2]:.2f} at this step" in text
    from attnbook.dates import TARGET_VOCAB

    assert TARGET_VOCAB.decode(log.predictions[2][3]) in text


def test_steps_subset(log):
    explorer = widgets.alignment_explorer(log, steps=[0, 8])
    assert explorer.stops == [0, 8] and explorer.value == 0


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"log": "log"}, TypeError, "log must be a Seq2SeqLog"),
        ({"steps": [0, 5]}, ValueError, "steps must be at least two of the recorded steps"),
        ({"value": 3}, ValueError, "value must be one of the steps"),
        ({"example": 5}, ValueError, r"example must lie in \[0, 4\]"),
        ({"example": 1.0}, TypeError, "example must be an integer"),
    ],
)
def test_bad_input(log, kwargs, error, match):
    args = {"log": log, **kwargs}
    with pytest.raises(error, match=match):
        widgets.alignment_explorer(**args)


def test_refuses_a_log_without_attention():
    probe = seq2seq.figure_probe()
    _, log = seq2seq.train_dates(0, False, 2, record=(0, 2), probe=probe, test_size=20)
    with pytest.raises(ValueError, match="holds no attention weights"):
        widgets.alignment_explorer(log)


def test_cached_labels_give_the_frames_of_a_fresh_renderer(log):
    # The tick labels and title halves are blitted from a cache keyed by what
    # they show; a frame must not depend on the order the states were drawn in.
    explorer = widgets.alignment_explorer(log)
    for state in explorer.states:
        explorer.frame(*state)
    for step, example in [(8, 4), (0, 1), (4, 3), (8, 0)]:
        fresh = widgets.alignment_explorer(log, value=step, example=example)
        assert (pixels(explorer.frame(step, example)) == pixels(fresh.frame(step, example))).all()
