"""Training-steps explorer: attention weights of a recall model as it trains.

The slider moves through the steps at which :func:`attnbook.training.train_recall`
took snapshots. Left: the weights of a few probe queries over the keys, with
each query's right key outlined, so the colour can be watched moving into the
boxes. Right: the probe loss and the right-key accuracy over training, with the
current step marked.
"""

from __future__ import annotations

import numbers

import numpy as np
import torch
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from ..training import TrainingLog
from ._core import Explorer, Renderer, range_control

__all__ = [
    "TrainingStepsExplorer",
    "training_steps_explorer",
]


class _TrainingStepsRenderer(Renderer):
    figsize = (8.6, 3.4)

    def __init__(self, log: TrainingLog, examples: int, head: int) -> None:
        self.log = log
        self.examples = examples
        self.head = head
        self._right = log.probe.index[:examples, 0].tolist()  # right key of each row
        # (examples, n) weights per recorded step, as float64 numpy arrays.
        self._weights = {
            step: w[:examples, head].detach().to(torch.float64).numpy()
            for step, w in zip(log.steps, log.weights)
        }
        self._loss = dict(zip(log.steps, log.probe_losses))
        self._accuracy = dict(zip(log.steps, log.accuracies))
        super().__init__(log.steps[0])

    def _build(self, fig: Figure, step: int) -> list:
        weights = self._weights[step]
        rows, n = weights.shape
        ax_map, ax_curve = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1, 1.15]})
        fig.subplots_adjust(left=0.07, right=0.98, bottom=0.15, top=0.84, wspace=0.3)
        image = ax_map.imshow(
            weights, cmap="Reds", vmin=0.0, vmax=1.0, aspect="auto", interpolation="nearest"
        )
        # The outlines never move, but they must be drawn over the (blitted) heatmap.
        outlines = [
            ax_map.add_patch(
                Rectangle(
                    (key - 0.5, row - 0.5), 1, 1, fill=False, edgecolor="tab:blue", linewidth=2
                )
            )
            for row, key in enumerate(self._right)
        ]
        bar = fig.colorbar(image, ax=ax_map, fraction=0.05, pad=0.03)
        bar.set_label("weight", fontsize="small")
        ax_map.set_xticks(range(n))
        ax_map.set_yticks(range(rows), [f"q{i}" for i in range(rows)])
        ax_map.set_xlabel("keys (right key outlined)")
        ax_map.set_ylabel("probe queries")
        ax_map.set_title("attention weights", fontsize="medium")
        steps = self.log.steps
        ax_curve.plot(steps, self.log.probe_losses, "o-", markersize=3, label="probe loss")
        ax_curve.plot(steps, self.log.accuracies, "s-", markersize=3, label="right-key accuracy")
        top = max(max(self.log.probe_losses), 1.0)
        ax_curve.set_ylim(0, top * 1.05)
        ax_curve.set_xlim(steps[0], steps[-1])
        ax_curve.set_xlabel("training step")
        ax_curve.legend(loc="center right", fontsize="small", frameon=False)
        probe_size = self.log.probe.queries.shape[0]
        ax_curve.set_title(f"all {probe_size} probe queries", fontsize="medium")
        marker = ax_curve.axvline(step, color="0.3", linestyle="--", linewidth=1.2)
        title = fig.suptitle(self._title(step), fontsize="large")
        return [image, *outlines, marker, title]

    def _title(self, step: int) -> str:
        return (
            f"step {step}: probe loss {self._loss[step]:.2f}, "
            f"right-key accuracy {self._accuracy[step]:.2f}"
        )

    def _update(self, step: int) -> None:
        image, *_, marker, title = self._dynamic
        image.set_data(self._weights[step])
        marker.set_xdata([step, step])
        title.set_text(self._title(step))

    def alt_text(self, step: int) -> str:
        weights = self._weights[step]
        rows, n = weights.shape
        right = np.array(self._right)
        on_right = float(weights[np.arange(rows), right].mean())
        hits = int((weights.argmax(axis=1) == right).sum())
        return (
            f"Training step {step}. Left: heatmap of the attention weights of {rows} probe "
            f"queries over {n} keys, each query's right key outlined; the right key holds "
            f"{on_right:.2f} of the weight on average and is the largest weight for {hits} of "
            f"the {rows} queries. Right: probe loss and right-key accuracy against training "
            f"step, with step {step} marked: loss {self._loss[step]:.2f}, accuracy "
            f"{self._accuracy[step]:.2f}."
        )


class TrainingStepsExplorer(Explorer):
    """Explorer over the recorded steps of a recall model's training."""


def _index(name: str, value: object, upper: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if not 0 <= value < upper:
        raise ValueError(f"{name} must lie in [0, {upper - 1}], got {value}")
    return int(value)


def training_steps_explorer(
    log: TrainingLog,
    examples: int = 8,
    head: int = 0,
    value: int | None = None,
) -> TrainingStepsExplorer:
    """A slider over the snapshots of :func:`attnbook.training.train_recall`.

    Args:
        log: the :class:`~attnbook.training.TrainingLog` of a run with at least
            two recorded steps.
        examples: how many probe queries the heatmap shows (the first ones).
        head: which head's weights to show.
        value: the starting step, one of ``log.steps`` (default: the first, 0).

    Returns:
        A :class:`TrainingStepsExplorer`; display it to get the slider.
    """
    if not isinstance(log, TrainingLog):
        raise TypeError(f"log must be a TrainingLog from train_recall, got {type(log).__name__}")
    if len(log.steps) < 2 or log.probe is None:
        raise ValueError(f"log must hold at least 2 recorded steps, got steps {log.steps}")
    probe_size, heads, _ = log.weights[0].shape
    examples = _index("examples", examples, probe_size + 1)
    if examples == 0:
        raise ValueError("examples must be at least 1, got 0")
    head = _index("head", head, heads)
    steps = list(log.steps)
    if value is None:
        value = steps[0]
    elif value not in steps:
        raise ValueError(f"value must be one of the recorded steps {steps}, got {value!r}")
    renderer = _TrainingStepsRenderer(log, examples, head)
    control = range_control("training step:", steps, [str(s) for s in steps], int(value))
    return TrainingStepsExplorer(
        "training-steps",
        renderer,
        [control],
        lambda s: f"step={s}, examples={examples}, head={head}",
    )
