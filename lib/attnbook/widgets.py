"""Sliders that redraw attention heatmaps: live in a kernel, static on the website.

One renderer draws every picture. It keeps a persistent Agg figure, and for a
slider value it updates only the artists that change (``set_data``,
``set_ydata``, ...), blits them onto a saved background and encodes the canvas
as PNG. The same bytes serve three modes:

* **Live** (Jupyter, JupyterLab, Colab): displaying an explorer shows an
  ``ipywidgets`` slider above an ``ipywidgets.Image``; moving the slider sets
  ``image.value`` to the new PNG bytes. Works with ipywidgets 7.7 and 8.
* **Static** (the website): when the environment variable ``ATTNBOOK_STATIC``
  is ``1`` (``make book`` sets it while Jupyter Book executes the chapters),
  displaying an explorer emits :meth:`Explorer.to_html` instead: a native range
  input, every stop pre-rendered as an ``<img>``, and a few lines of inline
  JavaScript. No kernel, server or network is needed, and without JavaScript the
  default frame still shows.
* **nbval**: the text a cell stores (``text/plain``) is the explorer's repr,
  the same on every run; nbval skips the widget view, so widget cells pass
  strict nbval without being ignored.
"""

from __future__ import annotations

import base64
import hashlib
import html
import io
import json
import os
from collections.abc import Callable, Sequence

import ipywidgets
import numpy as np
import torch
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import PowerNorm
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from PIL import Image

from . import _validate
from .data import RegressionData, make_regression_data
from .kernels import get_kernel
from .masking import masked_softmax
from .pooling import nadaraya_watson

STATIC_ENV = "ATTNBOOK_STATIC"
DEFAULT_WIDTHS = (0.05, 0.07, 0.1, 0.15, 0.2, 0.25, 0.35, 0.5, 0.7, 1, 1.5, 2, 3, 5)
_DPI = 80


def static_mode() -> bool:
    """True while the book build asks for static HTML (``ATTNBOOK_STATIC=1``)."""
    return os.environ.get(STATIC_ENV, "") == "1"


def _encode_png(canvas: FigureCanvasAgg) -> bytes:
    """PNG bytes of what the canvas buffer holds now (no redraw)."""
    rgba = np.asarray(canvas.buffer_rgba())
    buffer = io.BytesIO()
    # A 128-colour palette keeps frames small (the static page holds every
    # stop) and encodes faster than full RGB; heatmaps survive it unharmed.
    picture = Image.fromarray(rgba[..., :3]).quantize(128, method=Image.Quantize.FASTOCTREE)
    picture.save(buffer, format="PNG", compress_level=6)
    return buffer.getvalue()


class _Renderer:
    """A persistent figure whose changing artists are blitted for each value.

    Subclasses build the figure in ``_build(fig, value)`` (also used, on a fresh
    Figure, by the naive baseline of ``make bench``), return the artists that
    change, and update them in ``_update(value)``.
    """

    figsize: tuple[float, float] = (8.0, 3.2)

    def __init__(self, first_value) -> None:
        self.fig = Figure(figsize=self.figsize, dpi=_DPI)
        self.canvas = FigureCanvasAgg(self.fig)
        self._dynamic = self._build(self.fig, first_value)
        for artist in self._dynamic:
            artist.set_animated(True)
        self.canvas.draw()  # draws everything except the animated artists
        self._background = self.canvas.copy_from_bbox(self.fig.bbox)

    def _build(self, fig: Figure, value) -> list:
        raise NotImplementedError

    def _update(self, value) -> None:
        raise NotImplementedError

    def alt_text(self, value) -> str:
        raise NotImplementedError

    def png(self, value) -> bytes:
        """Update the changing artists for ``value`` and return the frame as PNG."""
        self._update(value)
        self.canvas.restore_region(self._background)
        for artist in self._dynamic:
            self.fig.draw_artist(artist)
        return _encode_png(self.canvas)

    def naive_png(self, value) -> bytes:
        """The same picture drawn the slow way: a new figure and a full render."""
        fig = Figure(figsize=self.figsize, dpi=_DPI)
        self._build(fig, value)
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png")
        return buffer.getvalue()


class _KernelWidthRenderer(_Renderer):
    """Heatmap of Nadaraya-Watson weights beside the fitted curve."""

    figsize = (8.4, 3.3)

    def __init__(self, data: RegressionData, kernel, widths: Sequence[float]) -> None:
        self.data = data
        self.kernel = kernel
        self.kernel_name = getattr(kernel, "__name__", str(kernel))
        # Every stop computed up front: a few microseconds each, and it lets the
        # colour scale be fixed over all widths.
        self._results = {
            w: nadaraya_watson(data.x_train, data.y_train, data.x_query, kernel, w) for w in widths
        }
        self._vmax = max(float(weights.max()) for _, weights in self._results.values())
        super().__init__(widths[0])

    def _build(self, fig: Figure, width: float) -> list:
        data = self.data
        y_hat, weights = self._results[width]
        ax_map, ax_fit = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1, 1.25]})
        fig.subplots_adjust(left=0.07, right=0.98, bottom=0.15, top=0.86, wspace=0.32)
        image = ax_map.imshow(
            weights.numpy(),
            cmap="Reds",
            norm=PowerNorm(0.5, vmin=0.0, vmax=self._vmax),
            aspect="auto",
            interpolation="nearest",
        )
        ax_map.set_xlabel("training inputs (keys), sorted")
        ax_map.set_ylabel("queries x = 0.0 ... 4.9")
        ax_map.set_title("attention weights", fontsize="medium")
        bar = fig.colorbar(image, ax=ax_map, fraction=0.05, pad=0.03)
        bar.set_label("weight (square-root scale)", fontsize="small")
        x_query = data.x_query.numpy()
        ax_fit.plot(
            data.x_train.numpy(),
            data.y_train.numpy(),
            "o",
            color="0.6",
            markersize=3.5,
            label="training data",
        )
        ax_fit.plot(x_query, data.y_query.numpy(), "k-", linewidth=1.2, label="truth f(x)")
        (line,) = ax_fit.plot(
            x_query,
            y_hat.numpy(),
            "-",
            color="tab:red",
            linewidth=2,
            label="prediction",
        )
        lows = float(min(data.y_train.min(), data.y_query.min()))
        highs = float(max(data.y_train.max(), data.y_query.max()))
        ax_fit.set_ylim(lows - 0.5, highs + 0.5)
        ax_fit.set_xlim(0, 5)
        ax_fit.set_xlabel("x")
        ax_fit.set_ylabel("y")
        ax_fit.set_title("Nadaraya-Watson fit", fontsize="medium")
        ax_fit.legend(loc="lower left", fontsize="small", frameon=False)
        title = fig.suptitle(self._title(width), fontsize="large")
        return [image, line, title]

    def _title(self, width: float) -> str:
        return f"{self.kernel_name} kernel, width \u03c3 = {width:g}"

    def _update(self, width: float) -> None:
        image, line, title = self._dynamic
        y_hat, weights = self._results[width]
        image.set_data(weights.numpy())
        line.set_ydata(y_hat.numpy())
        title.set_text(self._title(width))

    def alt_text(self, width: float) -> str:
        y_hat, weights = self._results[width]
        rmse = float(((y_hat - self.data.y_query) ** 2).mean().sqrt())
        top = float(weights.max(dim=1).values.mean())
        return (
            f"Kernel width {width:g}. Left: heatmap of attention weights, queries by sorted "
            f"training inputs; each query's largest weight is {top:.2f} on average, so the "
            f"band along the diagonal is {'narrow' if top > 0.2 else 'wide'}. Right: the "
            f"Nadaraya-Watson prediction against the true function and the training data; "
            f"root mean squared error against the truth {rmse:.2f}."
        )


class _ValidLengthRenderer(_Renderer):
    """Masked-softmax weights for each valid length, with the masked keys hatched.

    Left: the (queries, keys) heatmap on a fixed [0, 1] colour scale. Right: the
    same weights as one line per query, so the numbers can be read off.
    """

    figsize = (8.4, 3.1)

    def __init__(self, scores: torch.Tensor, lengths: Sequence[int]) -> None:
        self.scores = scores  # (queries, keys)
        queries, keys = scores.shape
        batch = scores.unsqueeze(0).expand(len(lengths), queries, keys)
        lens = torch.tensor(list(lengths))
        weights = masked_softmax(batch, lens)  # (stops, queries, keys)
        self._weights = {int(n): w for n, w in zip(lengths, weights)}
        super().__init__(lengths[0])

    @staticmethod
    def _hatch(ax, length: int, keys: int, bottom: float, height: float) -> Rectangle:
        patch = Rectangle(
            (length + 0.5, bottom),
            keys - length,
            height,
            facecolor="0.93",
            edgecolor="0.3",
            hatch="///",
            linewidth=1.2,
        )
        ax.add_patch(patch)
        return patch

    def _build(self, fig: Figure, length: int) -> list:
        queries, keys = self.scores.shape
        weights = self._weights[length].numpy()
        ax_map, ax_lines = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.1, 1]})
        fig.subplots_adjust(left=0.08, right=0.98, bottom=0.17, top=0.8, wspace=0.38)
        positions = np.arange(1, keys + 1)
        image = ax_map.imshow(
            weights,
            cmap="Reds",
            vmin=0.0,
            vmax=1.0,
            aspect="auto",
            interpolation="nearest",
            extent=(0.5, keys + 0.5, queries + 0.5, 0.5),
        )
        bar = fig.colorbar(image, ax=ax_map, fraction=0.05, pad=0.03)
        bar.set_label("weight", fontsize="small")
        ax_map.set_xticks(positions)
        ax_map.set_yticks(range(1, queries + 1), [f"q{i}" for i in range(1, queries + 1)])
        ax_map.set_xlabel("keys (position in the sequence)")
        ax_map.set_ylabel("queries")
        ax_map.set_title("masked softmax weights", fontsize="medium")
        map_mask = self._hatch(ax_map, length, keys, 0.5, queries)
        lines = [
            ax_lines.plot(positions, row, "o-", markersize=4, linewidth=1.5, label=f"q{i + 1}")[0]
            for i, row in enumerate(weights)
        ]
        ax_lines.set_xlim(0.5, keys + 0.5)
        ax_lines.set_ylim(-0.02, 1.02)
        ax_lines.set_xticks(positions)
        ax_lines.set_xlabel("keys (position in the sequence)")
        ax_lines.set_ylabel("weight of each query")
        ax_lines.legend(
            loc="lower center",
            bbox_to_anchor=(0.5, 1.0),
            ncols=queries,
            fontsize="small",
            frameon=False,
        )
        line_mask = self._hatch(ax_lines, length, keys, -0.02, 1.04)
        title = fig.suptitle(self._title(length), fontsize="large")
        return [image, map_mask, line_mask, *lines, title]

    def _title(self, length: int) -> str:
        keys = self.scores.shape[1]
        if length == keys:
            return f"valid length {length}: all {keys} keys share the weight"
        return f"valid length {length}: keys 1-{length} share the weight, {keys - length} masked"

    def _update(self, length: int) -> None:
        image, map_mask, line_mask, *lines, title = self._dynamic
        keys = self.scores.shape[1]
        weights = self._weights[length].numpy()
        image.set_data(weights)
        for patch in (map_mask, line_mask):
            patch.set_x(length + 0.5)
            patch.set_width(keys - length)
        for line, row in zip(lines, weights):
            line.set_ydata(row)
        title.set_text(self._title(length))

    def alt_text(self, length: int) -> str:
        queries, keys = self.scores.shape
        weights = self._weights[length]
        top = float(weights.max(dim=1).values.mean())
        masked = (
            f"keys {length + 1} to {keys} are hatched and get weight 0"
            if length < keys
            else "no key is masked"
        )
        return (
            f"Valid length {length}. Left: heatmap of masked softmax weights for {queries} "
            f"queries over {keys} keys; right: the same weights as one line per query. "
            f"Keys 1 to {length} share each row's weight, and {masked}. "
            f"The largest weight in a row is {top:.2f} on average."
        )


def _slider_look() -> dict:
    """Arguments shared by both explorers' sliders (a fresh Layout each time)."""
    return {
        "continuous_update": True,
        "style": {"description_width": "initial"},
        "layout": ipywidgets.Layout(width="480px"),
    }


class Explorer:
    """A slider over precomputed stops and the picture it selects.

    Attributes:
        slider: the ipywidgets slider.
        image: the ``ipywidgets.Image`` showing the current frame (PNG).
    """

    def __init__(
        self,
        name: str,
        renderer: _Renderer,
        slider: ipywidgets.ValueWidget,
        stops: Sequence,
        labels: Sequence[str],
        summary: Callable[[object], str],
    ) -> None:
        self._name = name
        self._renderer = renderer
        self._stops = list(stops)
        self._labels = list(labels)
        self._description = slider.description
        self._summary = summary
        self.slider = slider
        self.image = ipywidgets.Image(value=self.frame(slider.value), format="png")
        self.slider.observe(self._on_change, names="value")
        self._box: ipywidgets.VBox | None = None

    @property
    def stops(self) -> list:
        """The slider's values, in order."""
        return list(self._stops)

    @property
    def value(self):
        """The slider's current value."""
        return self.slider.value

    def _check_stop(self, value):
        for stop in self._stops:
            if stop == value:
                return stop
        raise ValueError(f"value must be one of the slider's stops {self._stops}, got {value!r}")

    def frame(self, value) -> bytes:
        """PNG bytes of the picture for one slider stop (live and static alike)."""
        return self._renderer.png(self._check_stop(value))

    def naive_frame(self, value) -> bytes:
        """The same picture drawn from scratch in a new figure (benchmark baseline)."""
        return self._renderer.naive_png(self._check_stop(value))

    def alt_text(self, value) -> str:
        """A sentence describing the picture for ``value``, for screen readers."""
        return self._renderer.alt_text(self._check_stop(value))

    def _on_change(self, change) -> None:
        self.image.value = self.frame(change["new"])

    @property
    def widget(self) -> ipywidgets.VBox:
        """The live widget: the slider above the image."""
        if self._box is None:
            self._box = ipywidgets.VBox([self.slider, self.image])
        return self._box

    def to_html(self) -> str:
        """A self-contained HTML fragment: range input, every frame, inline JS.

        Every stop is an ``<img>`` with a data URL and alt text; only the
        current one is visible. No external URL is used, and without
        JavaScript the default frame shows (the range input stays disabled).
        """
        default_index = self._stops.index(self.slider.value)
        frames = [self._renderer.png(stop) for stop in self._stops]
        digest = hashlib.sha1(b"".join(frames)).hexdigest()[:10]
        uid = f"attnbook-{self._name}-{digest}"
        label = html.escape(self._description.rstrip(": "))
        images = "\n".join(
            f'<img src="data:image/png;base64,{base64.b64encode(png).decode("ascii")}" '
            f'alt="{html.escape(self.alt_text(stop))}" style="max-width:100%;height:auto"'
            f"{'' if i == default_index else ' hidden'}>"
            for i, (stop, png) in enumerate(zip(self._stops, frames))
        )
        script = (
            "(function(){"
            f"var root=document.getElementById({json.dumps(uid)});"
            "var input=root.querySelector('input');"
            "var out=root.querySelector('output');"
            "var frames=root.querySelectorAll('img');"
            f"var labels={json.dumps(self._labels)};"
            "function show(){var i=Number(input.value);"
            "for(var j=0;j<frames.length;j++){frames[j].hidden=(j!==i);}"
            "out.textContent=labels[i];input.setAttribute('aria-valuetext',labels[i]);}"
            "input.addEventListener('input',show);input.disabled=false;show();"
            "})();"
        )
        return (
            f'<div class="attnbook-explorer" id="{uid}">\n'
            f'<label style="display:flex;align-items:center;gap:0.6em;font-family:sans-serif">'
            f"{label} "
            f'<input type="range" min="0" max="{len(frames) - 1}" step="1" value="{default_index}" '
            f'aria-valuetext="{html.escape(self._labels[default_index])}" style="width:320px" disabled>'
            f"<output>{html.escape(self._labels[default_index])}</output></label>\n"
            f"{images}\n<script>{script}</script>\n</div>"
        )

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self._summary(self.slider.value)}, {len(self._stops)} stops)"
        )

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        if static_mode():
            return {"text/plain": repr(self), "text/html": self.to_html()}
        return {
            "text/plain": repr(self),
            "application/vnd.jupyter.widget-view+json": {
                "version_major": 2,
                "version_minor": 0,
                "model_id": self.widget.model_id,
            },
        }


class KernelWidthExplorer(Explorer):
    """Explorer over the kernel width of Nadaraya-Watson regression."""


class ValidLengthExplorer(Explorer):
    """Explorer over the valid length of a masked softmax."""


def kernel_width_explorer(
    data: RegressionData | None = None,
    kernel: str | Callable[[torch.Tensor], torch.Tensor] = "gaussian",
    widths: Sequence[float] | None = None,
    value: float | None = None,
) -> KernelWidthExplorer:
    """A slider over the kernel width of Nadaraya-Watson regression.

    Args:
        data: the regression data (``make_regression_data()`` by default).
        kernel: a kernel name or function, as in ``nadaraya_watson``.
        widths: the slider's stops, increasing, each > 0 (default: 14 roughly
            log-spaced widths from 0.05 to 5).
        value: the starting width, one of ``widths`` (default 0.5 if present,
            else the middle stop).

    Returns:
        A :class:`KernelWidthExplorer`; display it to get the slider.
    """
    if data is None:
        data = make_regression_data()
    elif not isinstance(data, RegressionData):
        raise TypeError(f"data must be a RegressionData from make_regression_data(), got {data!r}")
    get_kernel(kernel)  # an unknown name fails here, with the known names listed
    widths = list(DEFAULT_WIDTHS if widths is None else widths)
    if len(widths) < 2:
        raise ValueError(f"widths must hold at least 2 stops, got {widths!r}")
    widths = [_validate.positive_number(f"widths[{i}]", w) for i, w in enumerate(widths)]
    if any(b <= a for a, b in zip(widths, widths[1:])):
        raise ValueError(f"widths must be strictly increasing, got {widths!r}")
    if value is None:
        value = 0.5 if 0.5 in widths else widths[len(widths) // 2]
    elif value not in widths:
        raise ValueError(f"value must be one of widths {widths}, got {value!r}")
    renderer = _KernelWidthRenderer(data, kernel, widths)
    name = renderer.kernel_name
    labels = [f"{w:g}" for w in widths]
    slider = ipywidgets.SelectionSlider(
        options=list(zip(labels, widths)),
        value=float(value),
        description="kernel width \u03c3:",
        **_slider_look(),
    )
    return KernelWidthExplorer(
        "kernel-width",
        renderer,
        slider,
        widths,
        labels,
        lambda w: f"kernel={name!r}, width={w:g}",
    )


def valid_length_explorer(
    scores: torch.Tensor | None = None,
    valid_lens: Sequence[int] | None = None,
    value: int | None = None,
    seed: int = 0,
) -> ValidLengthExplorer:
    """A slider over the valid length of a masked softmax.

    Args:
        scores: (queries, keys) attention scores (default: a seeded 4 x 10
            standard normal matrix, from ``seed``).
        valid_lens: the lengths the slider offers, consecutive integers in
            [1, keys] (default 1, 2, ..., keys).
        value: the starting length, one of ``valid_lens`` (default: the middle).

    Returns:
        A :class:`ValidLengthExplorer`; display it to get the slider.
    """
    if scores is None:
        generator = torch.Generator().manual_seed(int(seed))
        scores = torch.randn(4, 10, generator=generator)
    scores = (
        _validate.tensor("scores", scores, ndim=2, floating=True).detach().to("cpu", torch.float32)
    )
    queries, keys = scores.shape
    if queries == 0 or keys == 0:
        raise ValueError(
            f"scores must have at least one query and one key, got shape {tuple(scores.shape)}"
        )
    if valid_lens is None:
        valid_lens = list(range(1, keys + 1))
    lens = _validate.lengths("valid_lens", valid_lens, upper=keys, device=torch.device("cpu"))
    if lens.dim() != 1 or len(lens) < 2:
        raise ValueError(f"valid_lens must be a list of at least 2 lengths, got {valid_lens!r}")
    lengths = [int(n) for n in lens]
    if lengths[0] < 1 or any(b != a + 1 for a, b in zip(lengths, lengths[1:])):
        raise ValueError(f"valid_lens must be consecutive increasing lengths >= 1, got {lengths}")
    if value is None:
        value = lengths[len(lengths) // 2]
    elif value not in lengths:
        raise ValueError(f"value must be one of valid_lens {lengths}, got {value!r}")
    renderer = _ValidLengthRenderer(scores, lengths)
    slider = ipywidgets.IntSlider(
        value=int(value),
        min=lengths[0],
        max=lengths[-1],
        step=1,
        description="valid length:",
        **_slider_look(),
    )
    return ValidLengthExplorer(
        "valid-length",
        renderer,
        slider,
        lengths,
        [str(n) for n in lengths],
        lambda n: f"valid_length={n}, keys={keys}",
    )
