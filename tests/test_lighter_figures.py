"""book/_ext/lighter_figures.py: a figure becomes a palette PNG only where no pixel moves visibly."""

from __future__ import annotations

import io
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from PIL import Image

from tools.site import ROOT

sys.path.insert(0, str(ROOT / "book" / "_ext"))
import lighter_figures


def png(fig) -> bytes:
    out = io.BytesIO()
    fig.savefig(out, format="png", dpi=100)
    plt.close(fig)
    return out.getvalue()


def test_a_plot_gets_lighter_and_looks_the_same():
    fig, ax = plt.subplots(figsize=(5, 3))
    x = np.linspace(0, 6, 200)
    for k in range(4):
        ax.plot(x, np.sin(x + k), label=f"curve {k}")
    ax.legend()
    data = png(fig)
    smaller = lighter_figures.lighter(data)
    assert smaller is not None and len(smaller) < 0.8 * len(data)
    a = np.asarray(Image.open(io.BytesIO(data)).convert("RGB"), dtype=float)
    b = np.asarray(Image.open(io.BytesIO(smaller)).convert("RGB"), dtype=float)
    assert a.shape == b.shape and np.abs(a - b).mean() < 1.0


def test_a_picture_with_many_colours_is_left_alone():
    # Smooth noise in every channel: 256 colours cannot hold it within the limits.
    rng = np.random.default_rng(0)
    pixels = rng.integers(0, 256, size=(120, 160, 3), dtype=np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, "PNG")
    assert lighter_figures.lighter(out.getvalue()) is None


def test_transparency_is_left_alone():
    image = Image.new("RGBA", (40, 30), (255, 0, 0, 128))
    out = io.BytesIO()
    image.save(out, "PNG")
    assert lighter_figures.lighter(out.getvalue()) is None


def test_the_limits_are_what_keep_a_picture_whole(monkeypatch):
    # Seen failing: with no limit, the noise above would be "lightened" too.
    monkeypatch.setattr(lighter_figures, "MEAN_LIMIT", 1e9)
    monkeypatch.setattr(lighter_figures, "MAX_LIMIT", 1e9)
    rng = np.random.default_rng(0)
    pixels = rng.integers(0, 256, size=(120, 160, 3), dtype=np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, "PNG", compress_level=0)
    assert lighter_figures.lighter(out.getvalue()) is not None
