"""Valid-length explorer: masked-softmax weights as the valid length changes."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from .. import _validate
from ..masking import masked_softmax
from ._core import Explorer, Renderer, range_control

__all__ = [
    "ValidLengthExplorer",
    "valid_length_explorer",
]


class _ValidLengthRenderer(Renderer):
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
            (length - 0.5, bottom),
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
        positions = np.arange(keys)  # keys counted from 0
        image = ax_map.imshow(
            weights,
            cmap="Reds",
            vmin=0.0,
            vmax=1.0,
            aspect="auto",
            interpolation="nearest",
            extent=(-0.5, keys - 0.5, queries - 0.5, -0.5),
        )
        bar = fig.colorbar(image, ax=ax_map, fraction=0.05, pad=0.03)
        bar.set_label("weight", fontsize="small")
        ax_map.set_xticks(positions)
        ax_map.set_yticks(range(queries), [f"q{i}" for i in range(queries)])
        ax_map.set_xlabel("keys (position in the sequence)")
        ax_map.set_ylabel("queries")
        ax_map.set_title("masked softmax weights", fontsize="medium")
        map_mask = self._hatch(ax_map, length, keys, -0.5, queries)
        lines = [
            ax_lines.plot(positions, row, "o-", markersize=4, linewidth=1.5, label=f"q{i}")[0]
            for i, row in enumerate(weights)
        ]
        ax_lines.set_xlim(-0.5, keys - 0.5)
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
        # A static start and a short changing end: fewer glyphs to draw per stop.
        fig.text(0.45, 0.92, "valid length", ha="right", va="baseline", fontsize="large")
        title = fig.text(
            0.455, 0.92, self._title(length), ha="left", va="baseline", fontsize="large"
        )
        return [image, map_mask, line_mask, *lines, title]

    def _title(self, length: int) -> str:
        keys = self.scores.shape[1]
        if length == keys:
            return f"{length}: all {keys} keys share the weight"
        shared = "key 0 takes all" if length == 1 else f"keys 0-{length - 1} share"
        return f"{length}: {shared} the weight"

    def _update(self, length: int) -> None:
        image, map_mask, line_mask, *lines, title = self._dynamic
        keys = self.scores.shape[1]
        weights = self._weights[length].numpy()
        image.set_data(weights)
        for patch in (map_mask, line_mask):
            patch.set_x(length - 0.5)
            patch.set_width(keys - length)
        for line, row in zip(lines, weights):
            line.set_ydata(row)
        title.set_text(self._title(length))

    def alt_text(self, length: int) -> str:
        queries, keys = self.scores.shape
        weights = self._weights[length]
        top = float(weights.max(dim=1).values.mean())
        shared = "Key 0 takes all of" if length == 1 else f"Keys 0 to {length - 1} share"
        if length == keys:
            masked = "no key is masked"
        elif length == keys - 1:
            masked = f"key {length} is hatched and gets weight 0"
        else:
            masked = f"keys {length} to {keys - 1} are hatched and get weight 0"
        return (
            f"Valid length {length}. Left: heatmap of masked softmax weights for {queries} "
            f"queries over {keys} keys; right: the same weights as one line per query. "
            f"{shared} each row's weight, and {masked}. "
            f"The largest weight in a row is {top:.2f} on average."
        )


class ValidLengthExplorer(Explorer):
    """Explorer over the valid length of a masked softmax."""


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
    control = range_control(
        "valid length:", lengths, [str(n) for n in lengths], int(value), integer=True
    )
    return ValidLengthExplorer(
        "valid-length",
        renderer,
        [control],
        lambda n: f"valid_length={n}, keys={keys}",
    )
