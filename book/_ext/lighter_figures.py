"""The website's figures as palette PNGs where that changes no pixel visibly.

Matplotlib writes a figure as a true-colour PNG, though a plot has few
colours besides the anti-aliased edges. When the site is built, every PNG in
``_images`` is re-encoded with an adaptive palette of 256 colours, and the
new file is kept only if it is smaller and close to the original: a mean
absolute difference under ``MEAN_LIMIT`` (of 255) in every channel and no pixel
off by more than ``MAX_LIMIT`` in its worst channel at the 99.9th percentile
(an edge pixel may move a few levels; a flat area never does). Figures with
transparency are left alone. On the chapters' pages this takes 40-60 % off
the figures' bytes, which is what lets a page hold its explorer, its figures
and its concept questions within 1 MiB (tests/test_site.py's page budget).
"""

from __future__ import annotations

import io
from itertools import accumulate
from pathlib import Path

MEAN_LIMIT = 1.0
MAX_LIMIT = 24


def lighter(data: bytes) -> bytes | None:
    """``data`` (a PNG) as a palette PNG, or None if that is not smaller and close."""
    from PIL import Image, ImageChops, ImageStat

    image = Image.open(io.BytesIO(data))
    if image.mode == "P":
        return None
    if image.mode == "RGBA":
        if image.getchannel("A").getextrema() != (255, 255):
            return None  # transparent pixels: left alone
        image = image.convert("RGB")
    elif image.mode != "RGB":
        return None
    palette = image.quantize(256, method=Image.Quantize.MEDIANCUT)
    out = io.BytesIO()
    palette.save(out, "PNG", optimize=True)
    if out.tell() >= len(data):
        return None
    diff = ImageChops.difference(image, palette.convert("RGB"))
    if max(ImageStat.Stat(diff).mean) > MEAN_LIMIT:
        return None
    counts = list(accumulate(diff.convert("L").histogram()))
    level = next(i for i, seen in enumerate(counts) if seen >= 0.999 * counts[-1])
    if level > MAX_LIMIT:
        return None
    return out.getvalue()


def lighten_folder(folder: Path) -> tuple[int, int]:
    """Re-encode the PNGs of ``folder`` in place; returns (bytes before, bytes after)."""
    before = after = 0
    for path in sorted(folder.glob("*.png")):
        data = path.read_bytes()
        smaller = lighter(data)
        before += len(data)
        if smaller is not None:
            path.write_bytes(smaller)
            data = smaller
        after += len(data)
    return before, after


def _lighten(app, exception):
    if exception is not None:
        return
    folder = Path(app.outdir) / "_images"
    if folder.is_dir():
        before, after = lighten_folder(folder)
        if before:
            print(f"lighter_figures: {before / 1024:.0f} KiB of figures -> {after / 1024:.0f} KiB")


def setup(app):
    app.connect("build-finished", _lighten)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
