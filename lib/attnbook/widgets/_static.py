"""Pieces of an explorer's static HTML fragment (see ``Explorer.to_html`` in ``_core``):
data URLs, the cropped layer of the pixels that differ from the base frame, and
the native control of each explorer control.
"""

from __future__ import annotations

import base64
import html
import io
from typing import Protocol

import numpy as np
from PIL import Image


class Control(Protocol):
    """What a control's static HTML reads (``_core.Control`` has it); a protocol,
    so that this module does not import ``_core``, which imports it."""

    stops: list
    labels: list[str]
    description: str
    kind: str


def _data_url(picture: bytes) -> str:
    kind = "webp" if picture[8:12] == b"WEBP" else "png"
    return f"data:image/{kind};base64," + base64.b64encode(picture).decode("ascii")


def _layer(base: np.ndarray, frame: np.ndarray) -> tuple[bytes, int, int] | None:
    """The pixels of ``frame`` that differ from ``base``, as a cropped picture.

    Returns ``(webp, left, top)``: a lossless WebP of the bounding box of the
    changed pixels, transparent where the frame equals the base, and the box's
    offset; or None when the two frames are identical. Both inputs are
    (height, width, 3) uint8 arrays of the same shape.
    """
    changed = (frame != base).any(axis=2)  # (height, width)
    if not changed.any():
        return None
    rows, cols = np.nonzero(changed)
    top, bottom, left, right = rows.min(), rows.max() + 1, cols.min(), cols.max() + 1
    mask = changed[top:bottom, left:right]
    rgba = np.zeros((bottom - top, right - left, 4), dtype=np.uint8)
    rgba[mask, :3] = frame[top:bottom, left:right][mask]
    rgba[mask, 3] = 255
    # The same 128-colour palette as the PNG frames, then lossless WebP: on our
    # frames it is about a quarter smaller than an optimised palette PNG
    # (measured by `make bench`'s predecessor runs; see tools/bench.py).
    picture = Image.fromarray(rgba, "RGBA").quantize(128, method=Image.Quantize.FASTOCTREE)
    buffer = io.BytesIO()
    picture.convert("RGBA").save(buffer, format="WEBP", lossless=True, method=6)
    return buffer.getvalue(), int(left), int(top)


def _control_html(control: Control, index: int) -> str:
    label = html.escape(control.description.rstrip(": "))
    text = html.escape(control.labels[index])
    style = 'style="display:flex;align-items:center;gap:0.6em;font-family:sans-serif"'
    if control.kind == "menu":
        options = "".join(
            f'<option value="{i}"{" selected" if i == index else ""}>{html.escape(lab)}</option>'
            for i, lab in enumerate(control.labels)
        )
        field = f"<select disabled>{options}</select>"
    else:
        field = (
            f'<input type="range" min="0" max="{len(control.stops) - 1}" step="1" '
            f'value="{index}" aria-valuetext="{text}" style="width:320px" disabled>'
        )
    return f"<label {style}>{label} {field}<output>{text}</output></label>"
