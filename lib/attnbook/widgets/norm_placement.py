"""Norm-placement explorer: each block's gradient norm at initialisation, post-LN or pre-LN.

A slider over the depth of a freshly initialised stack of Transformer blocks
and a menu over where the layer normalisation sits (post-LN or pre-LN). The
picture plots the gradient norm of every block's parameters against the
block's index (0 nearest the input), from
:func:`attnbook.transformer.gradient_norms_at_init`, with the other placement
at the same depth drawn as a grey dashed line for comparison.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import torch
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from .. import _validate
from ..transformer import gradient_norms_at_init
from ._core import Explorer, Renderer, menu_control, range_control, text_with_tail

__all__ = [
    "DEFAULT_DEPTHS",
    "PLACEMENTS",
    "placement_gradient_norms",
    "NormPlacementExplorer",
    "norm_placement_explorer",
]

DEFAULT_DEPTHS = (1, 2, 3, 4, 6, 8, 12, 16, 20, 24)
PLACEMENTS = ("post-LN", "pre-LN")
_COLOURS = {"post-LN": "tab:red", "pre-LN": "tab:blue"}


def placement_gradient_norms(depths: Sequence[int] = DEFAULT_DEPTHS, **kwargs) -> dict:
    """{(depth, placement): (depth,) float64 numpy array} for every depth and placement.

    ``kwargs`` go to :func:`~attnbook.transformer.gradient_norms_at_init`.
    """
    return {
        (depth, name): gradient_norms_at_init(depth, name == "pre-LN", **kwargs).numpy()
        for depth in depths
        for name in PLACEMENTS
    }


class _NormPlacementRenderer(Renderer):
    """Per-block gradient norms of one placement, the other one dashed in grey."""

    figsize = (8.0, 3.3)

    def __init__(self, norms: Mapping, depths: Sequence[int]) -> None:
        self.norms = dict(norms)
        self.depths = list(depths)
        self.top = max(float(v.max()) for v in self.norms.values())
        self._tails = [self._tail((d, p)) for d in self.depths for p in PLACEMENTS]
        super().__init__((self.depths[-1], PLACEMENTS[0]))

    @staticmethod
    def _other(name: str) -> str:
        return PLACEMENTS[1 - PLACEMENTS.index(name)]

    def _xy(self, depth: int, name: str) -> tuple[np.ndarray, np.ndarray]:
        values = self.norms[(depth, name)]
        return np.arange(len(values)), values

    def _tail(self, state) -> str:
        depth, name = state
        return f"{name}, {depth} block{'s' if depth > 1 else ''}"

    def _build(self, fig: Figure, state) -> list:
        depth, name = state
        ax = fig.subplots()
        fig.subplots_adjust(left=0.08, right=0.98, bottom=0.15, top=0.86)
        (other,) = ax.plot(
            *self._xy(depth, self._other(name)), "--", color="0.6", linewidth=1.5, marker="."
        )
        (line,) = ax.plot(
            *self._xy(depth, name), "o-", color=_COLOURS[name], linewidth=2, markersize=5
        )
        ax.set_xlim(-0.7, self.depths[-1] - 0.3)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylim(0, self.top * 1.08)
        ax.set_xlabel("block (0 = nearest the input)")
        ax.set_ylabel("gradient norm of the block")
        ax.grid(axis="y", color="0.9")
        ax.text(
            0.99,
            0.97,
            "colour: chosen placement; grey dashes: the other",
            transform=ax.transAxes,
            ha="right",
            va="top",
            fontsize="small",
            color="0.3",
        )
        title = text_with_tail(
            fig,
            0.5,
            0.95,
            "Gradient norm of every block at initialisation:",
            self._tail(state),
            self._tails,
            fontsize="large",
            va="top",
        )
        return [other, line, title]

    def _update(self, state) -> None:
        depth, name = state
        other, line, title = self._dynamic
        other.set_data(*self._xy(depth, self._other(name)))
        line.set_data(*self._xy(depth, name))
        line.set_color(_COLOURS[name])
        title.set_text(self._tail(state))

    def alt_text(self, state) -> str:
        depth, name = state
        values = self.norms[(depth, name)]
        others = self.norms[(depth, self._other(name))]
        if depth == 1:
            shape = f"The single block's gradient norm is {values[0]:.2f}"
        else:
            shape = (
                f"The gradient norm is {values[0]:.2f} at block 0 (nearest the input) and "
                f"{values[-1]:.2f} at block {depth - 1} (nearest the output), between "
                f"{values.min():.2f} and {values.max():.2f} in all"
            )
        return (
            f"{name} stack of {depth} freshly initialised Transformer "
            f"block{'s' if depth > 1 else ''}. {shape}; the grey dashed line shows "
            f"{self._other(name)} at the same depth, whose block nearest the output has "
            f"{others[-1]:.2f}."
        )


class NormPlacementExplorer(Explorer):
    """Explorer over the depth and the norm placement of a fresh Transformer stack."""


def norm_placement_explorer(
    depths: Sequence[int] | None = None,
    placement: str = "post-LN",
    value: int | None = None,
    norms: Mapping | None = None,
) -> NormPlacementExplorer:
    """A depth slider and a post-LN / pre-LN menu over per-block gradient norms.

    Args:
        depths: the slider's stops, strictly increasing integers >= 1 (default
            ``DEFAULT_DEPTHS``, 1 to 24).
        placement: the menu's starting entry, ``"post-LN"`` or ``"pre-LN"``.
        value: the starting depth, one of ``depths`` (default the largest).
        norms: precomputed gradient norms, as :func:`placement_gradient_norms`
            returns them for these depths (default: computed here, a few
            seconds on one core).

    Returns:
        A :class:`NormPlacementExplorer`; ``.slider`` is the depth and ``.menu``
        the placement, and a state is ``(depth, placement)``.
    """
    depths = list(DEFAULT_DEPTHS if depths is None else depths)
    for i, depth in enumerate(depths):
        _validate.positive_int(f"depths[{i}]", depth)
    if len(depths) < 2 or any(b <= a for a, b in zip(depths, depths[1:])):
        raise ValueError(f"depths must hold at least 2 strictly increasing values, got {depths!r}")
    if placement not in PLACEMENTS:
        raise ValueError(f"placement must be one of {list(PLACEMENTS)}, got {placement!r}")
    if value is None:
        value = depths[-1]
    elif value not in depths:
        raise ValueError(f"value must be one of depths {depths}, got {value!r}")
    if norms is None:
        norms = placement_gradient_norms(depths)
    else:
        norms = dict(norms)
        for depth in depths:
            for name in PLACEMENTS:
                got = norms.get((depth, name))
                if got is None:
                    raise ValueError(f"norms has no entry for ({depth}, {name!r})")
                if isinstance(got, torch.Tensor):
                    got = got.detach().double().numpy()
                got = np.asarray(got, dtype=float)
                if got.shape != (depth,):
                    raise ValueError(
                        f"norms[({depth}, {name!r})] must hold {depth} numbers, got shape "
                        f"{got.shape}"
                    )
                norms[(depth, name)] = got
    renderer = _NormPlacementRenderer(norms, depths)
    integer = depths == list(range(depths[0], depths[-1] + 1))
    slider = range_control("depth:", depths, [str(d) for d in depths], int(value), integer=integer)
    menu = menu_control("placement:", list(PLACEMENTS), list(PLACEMENTS), placement)
    return NormPlacementExplorer(
        "norm-placement",
        renderer,
        [slider, menu],
        lambda state: f"depth={state[0]}, placement={state[1]!r}",
    )
