"""An explorer's static HTML fragment, the website's form (``Explorer.to_html`` in ``_core``).

:func:`fragment_html` builds it from data URLs, the cropped layer of the
pixels that differ from the base frame, and the native control of each
explorer control.
"""

from __future__ import annotations

import base64
import hashlib
import html
import io
import json
from collections.abc import Sequence
from typing import Protocol

import numpy as np
from PIL import Image

from ._renderer import Renderer, encode_png


class Control(Protocol):
    """What a control's static HTML reads (``_controls.Control`` has it); a
    protocol: the fragment needs no ipywidgets."""

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


def fragment_html(
    name: str, renderer: Renderer, controls: Sequence[Control], states: list, default
) -> str:
    """The static HTML of an explorer called ``name`` showing ``default`` (one of
    ``states``, every state in order): what ``Explorer.to_html`` returns, and
    documents."""
    default_index = states.index(default)
    base = renderer.rgb(states[default_index])
    height, width = base.shape[:2]
    layers, layer_of = [], []
    index_of: dict = {}  # layer -> its index: states with the same picture share it
    for state in states:
        layer = _layer(base, renderer.rgb(state))
        if layer is None:
            layer_of.append(-1)
            continue
        if layer not in index_of:
            index_of[layer] = len(layers)
            layers.append(layer)
        layer_of.append(index_of[layer])
    base_png = encode_png(base, compress_level=9)
    digest = hashlib.sha1(b"".join([base_png, *(png for png, _, _ in layers)])).hexdigest()
    uid = f"attnbook-{name}-{digest[:10]}"
    alts = [renderer.alt_text(state) for state in states]
    default_alt = html.escape(alts[default_index])
    # Each layer is placed by its pixel offset over the base, so every image keeps its
    # natural box whatever the host page's stylesheet says about images (reveal.js's
    # theme, say, has `.reveal img {max-height: 95%; margin: ...}`, which once squeezed
    # the base alone in the decks and drew the layers off it).
    natural = "max-width:none;max-height:none;margin:0;border:0;padding:0"
    pictures = "\n".join(
        [
            f'<img class="attnbook-base" src="{_data_url(base_png)}" alt="{default_alt}" '
            f'width="{width}" height="{height}" style="display:block;{natural}">',
            *(
                f'<img src="{_data_url(png)}" alt="" aria-hidden="true" hidden '
                f'style="position:absolute;left:{left}px;top:{top}px;{natural}">'
                for png, left, top in layers
            ),
        ]
    )
    current = default if len(controls) == 2 else (default,)
    controls_html = "\n".join(
        _control_html(control, control.stops.index(value))
        for control, value in zip(controls, current)
    )
    sizes = [len(c.stops) for c in controls]
    labels = [c.labels for c in controls]
    script = (
        "(function(){"
        f"var root=document.getElementById({json.dumps(uid)});"
        "var inputs=root.querySelectorAll('input,select');"
        "var outs=root.querySelectorAll('output');"
        "var pic=root.querySelector('.attnbook-picture');"
        "var base=pic.querySelector('.attnbook-base');"
        "var layers=pic.querySelectorAll('img[aria-hidden]');"
        "var cap=root.querySelector('.attnbook-caption');"
        f"var labels={json.dumps(labels)},sizes={json.dumps(sizes)};"
        f"var layerOf={json.dumps(layer_of)},alts={json.dumps(alts)};"
        "var shown=-1;"
        "function show(){var k=0;"
        "for(var c=0;c<inputs.length;c++){var i=Number(inputs[c].value);k=k*sizes[c]+i;"
        "outs[c].textContent=labels[c][i];"
        "if(inputs[c].type==='range')inputs[c].setAttribute('aria-valuetext',labels[c][i]);}"
        "var j=layerOf[k];"
        "if(j!==shown){if(shown>=0)layers[shown].hidden=true;if(j>=0)layers[j].hidden=false;"
        "shown=j;}"
        "base.alt=alts[k];pic.setAttribute('aria-label',alts[k]);"
        # Only a real change is written: the live region then speaks once a move.
        "if(cap.textContent!==alts[k])cap.textContent=alts[k];}"
        "for(var c=0;c<inputs.length;c++){inputs[c].addEventListener('input',show);"
        "inputs[c].addEventListener('change',show);inputs[c].disabled=false;}"
        "for(var j=0;j<layers.length;j++){if(layers[j].decode)layers[j].decode().catch("
        "function(){});}"
        "show();"
        "})();"
    )
    label_of_view = "explorer picture (scrolls sideways if the page is narrow)"
    return (
        f'<div class="attnbook-explorer" id="{uid}">\n'
        f"{controls_html}\n"
        # The view scrolls sideways when the page is narrower than the picture;
        # tabindex lets a keyboard reach and scroll it (axe: scrollable-region-focusable).
        f'<div class="attnbook-view" tabindex="0" role="group" '
        f'aria-label="{html.escape(label_of_view)}" style="overflow-x:auto">\n'
        f'<div class="attnbook-picture" role="img" aria-label="{default_alt}" '
        f'style="position:relative;width:{width}px;height:{height}px">\n'
        f"{pictures}\n</div>\n</div>\n"
        # The description that moves with the picture (role="status": a polite
        # live region, announced when the script changes its text).
        f'<p class="attnbook-caption" role="status" style="max-width:{width}px">'
        f"{default_alt}</p>\n"
        f"<script>{script}</script>\n</div>"
    )
