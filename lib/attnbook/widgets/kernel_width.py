"""Kernel-width explorer: Nadaraya-Watson weights and fit as the width changes."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from matplotlib.colors import PowerNorm
from matplotlib.figure import Figure

from .. import _validate
from ..data import RegressionData, make_regression_data
from ..kernels import KERNELS, get_kernel
from ..pooling import nadaraya_watson
from ._core import Explorer, Renderer, menu_control, range_control

__all__ = [
    "DEFAULT_WIDTHS",
    "KernelWidthExplorer",
    "kernel_width_explorer",
]

# Twelve stops, roughly log-spaced from 0.05 to 5 (each step a factor 1.3 to 2),
# keeping each kernel's best width on this data (0.25, 0.5, 0.7). Every stop
# costs a row of pictures on the static page (one per kernel), within its 1 MiB.
DEFAULT_WIDTHS = (0.05, 0.07, 0.1, 0.15, 0.25, 0.35, 0.5, 0.7, 1, 1.5, 2.5, 5)


class _KernelWidthRenderer(Renderer):
    """Heatmap of Nadaraya-Watson weights beside the fitted curve.

    A state is a width (one kernel) or a tuple ``(width, kernel name)``.
    """

    figsize = (8.4, 3.3)

    def __init__(self, data: RegressionData, kernels: dict, widths: Sequence[float]) -> None:
        self.data = data
        self.kernels = dict(kernels)  # name -> kernel function or name
        self.kernel_name = next(iter(self.kernels))
        # Every stop computed up front: a few microseconds each, and it lets the
        # colour scale be fixed over all widths and kernels.
        self._results = {
            (w, name): nadaraya_watson(data.x_train, data.y_train, data.x_query, kernel, w)
            for name, kernel in self.kernels.items()
            for w in widths
        }
        self._vmax = max(float(weights.max()) for _, weights in self._results.values())
        super().__init__(widths[0])

    def _key(self, state) -> tuple[float, str]:
        return state if isinstance(state, tuple) else (state, self.kernel_name)

    def _build(self, fig: Figure, state) -> list:
        data = self.data
        y_hat, weights = self._results[self._key(state)]
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
        title = fig.suptitle(self._title(state), fontsize="large")
        return [image, line, title]

    def _title(self, state) -> str:
        width, name = self._key(state)
        if name == "constant":
            # True at every width; and with one title for every width the static
            # page stores the constant kernel's picture once, not once per stop.
            return "constant kernel: the width has no effect"
        return f"{name} kernel, width \u03c3 = {width:g}"

    def _update(self, state) -> None:
        image, line, title = self._dynamic
        y_hat, weights = self._results[self._key(state)]
        image.set_data(weights.numpy())
        line.set_ydata(y_hat.numpy())
        title.set_text(self._title(state))

    def alt_text(self, state) -> str:
        width, name = self._key(state)
        y_hat, weights = self._results[(width, name)]
        rmse = float(((y_hat - self.data.y_query) ** 2).mean().sqrt())
        top = float(weights.max(dim=1).values.mean())
        return (
            f"{name.capitalize()} kernel, width {width:g}. Left: heatmap of attention weights, "
            f"queries by sorted training inputs; each query's largest weight is {top:.2f} on "
            f"average, so the band along the diagonal is {'narrow' if top > 0.2 else 'wide'}. "
            f"Right: the Nadaraya-Watson prediction against the true function and the training "
            f"data; root mean squared error against the truth {rmse:.2f}."
        )


class KernelWidthExplorer(Explorer):
    """Explorer over the kernel width of Nadaraya-Watson regression."""


def kernel_width_explorer(
    data: RegressionData | None = None,
    kernel: str | Callable[[torch.Tensor], torch.Tensor] = "gaussian",
    widths: Sequence[float] | None = None,
    value: float | None = None,
    kernels: Sequence[str] | None = None,
) -> KernelWidthExplorer:
    """A slider over the kernel width of Nadaraya-Watson regression, and a kernel menu.

    Args:
        data: the regression data (``make_regression_data()`` by default).
        kernel: a kernel name or function, as in ``nadaraya_watson``; with
            ``kernels``, the name the menu starts on.
        widths: the slider's stops, increasing, each > 0 (default: 12 roughly
            log-spaced widths from 0.05 to 5).
        value: the starting width, one of ``widths`` (default 0.5 if present,
            else the middle stop).
        kernels: kernel names for a menu beside the slider (``"all"``: every
            name in ``attnbook.kernels.KERNELS``); ``None`` (default): no menu,
            the slider alone over ``kernel``.

    Returns:
        A :class:`KernelWidthExplorer`; display it to get the controls. With a
        menu it is ``.menu`` and a state is ``(width, kernel name)``.
    """
    if data is None:
        data = make_regression_data()
    elif not isinstance(data, RegressionData):
        raise TypeError(f"data must be a RegressionData from make_regression_data(), got {data!r}")
    get_kernel(kernel)  # an unknown name fails here, with the known names listed
    if kernels is not None:
        if kernels == "all":
            kernels = list(KERNELS)
        if isinstance(kernels, str) or not isinstance(kernels, Sequence) or len(kernels) < 2:
            raise ValueError(f"kernels must be 'all' or at least 2 kernel names, got {kernels!r}")
        for i, name in enumerate(kernels):
            if not isinstance(name, str) or name not in KERNELS:
                raise ValueError(f"kernels[{i}] must be one of {sorted(KERNELS)}, got {name!r}")
        if len(set(kernels)) != len(kernels):
            raise ValueError(f"kernels must not repeat a name, got {list(kernels)!r}")
        if kernel not in kernels:
            raise ValueError(f"kernel must be one of kernels {list(kernels)}, got {kernel!r}")
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
    labels = [f"{w:g}" for w in widths]
    slider = range_control("kernel width \u03c3:", widths, labels, float(value))
    if kernels is None:
        name = getattr(kernel, "__name__", str(kernel))
        renderer = _KernelWidthRenderer(data, {name: kernel}, widths)
        return KernelWidthExplorer(
            "kernel-width", renderer, [slider], lambda w: f"kernel={name!r}, width={w:g}"
        )
    ordered = [kernel, *(k for k in kernels if k != kernel)]  # the renderer starts on `kernel`
    renderer = _KernelWidthRenderer(data, {k: k for k in ordered}, widths)
    menu = menu_control("kernel:", list(kernels), list(kernels), kernel)
    return KernelWidthExplorer(
        "kernel-width",
        renderer,
        [slider, menu],
        lambda state: f"kernel={state[1]!r}, width={state[0]:g}",
    )
