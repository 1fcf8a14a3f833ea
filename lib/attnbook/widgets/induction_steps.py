"""Induction-steps explorer: every head of an attention-only model as it trains.

The slider moves through the steps at which
:func:`attnbook.induction.train_induction` took snapshots. Left: each head's
attention weights on probe sequence 0 (one panel per layer and head), with the
cells an induction head should use outlined in the layer-1 panels (query
``second + j``, key ``first + j + 1``). Right: against training step, the
probe's copy accuracy, the best previous-token score in layer 0 and the best
induction score in the last layer, with the current step marked.
"""

from __future__ import annotations

import numbers

import numpy as np
import torch
from matplotlib.figure import Figure

from ..induction import InductionLog, induction_targets
from ._core import Explorer, Renderer, range_control, text_with_tail

__all__ = [
    "InductionStepsExplorer",
    "induction_steps_explorer",
]


class _InductionStepsRenderer(Renderer):
    figsize = (10.4, 3.3)

    def __init__(self, log: InductionLog) -> None:
        self.log = log
        # (layers, heads, n, n) float64 numpy per recorded step.
        self._patterns = {
            step: p.detach().to(torch.float64).numpy() for step, p in zip(log.steps, log.patterns)
        }
        self._accuracy = dict(zip(log.steps, log.accuracies))
        self._induction = {
            step: s.detach().to(torch.float64).numpy()
            for step, s in zip(log.steps, log.induction_scores)
        }
        self._previous = {
            step: s.detach().to(torch.float64).numpy()
            for step, s in zip(log.steps, log.previous_scores)
        }
        probe = log.probe
        queries, keys = induction_targets(probe.first[:1], probe.second[:1], probe.segment)
        self._targets = (keys[0].numpy(), queries[0].numpy())  # (x = keys, y = queries)
        self._tails = [f"{s}" for s in log.steps]
        super().__init__(log.steps[0])

    def _build(self, fig: Figure, step: int) -> list:
        patterns = self._patterns[step]
        layers, heads, n, _ = patterns.shape
        panels = layers * heads
        grid = fig.add_gridspec(
            1, panels + 1, width_ratios=[1] * panels + [1.5], left=0.04, right=0.985, wspace=0.35
        )
        fig.subplots_adjust(bottom=0.17, top=0.8)
        dynamic, marks = [], []
        ticks = list(range(0, n, 10))
        for index in range(panels):
            layer, head = divmod(index, heads)
            ax = fig.add_subplot(grid[0, index])
            image = ax.imshow(
                patterns[layer, head],
                cmap="Blues",
                vmin=0.0,
                vmax=1.0,
                interpolation="nearest",
            )
            dynamic.append(image)
            if layer == layers - 1:
                (outline,) = ax.plot(
                    *self._targets, "s", markersize=3.2, markerfacecolor="none",
                    markeredgecolor="tab:orange", markeredgewidth=0.8,
                )  # fmt: skip
                marks.append(outline)
            ax.set_title(f"layer {layer}, head {head}", fontsize="small")
            ax.set_xticks(ticks)
            ax.set_yticks(ticks)
            ax.tick_params(labelsize="x-small")
            ax.set_xlabel("key", fontsize="small")
            if index == 0:
                ax.set_ylabel("query", fontsize="small")
        ax_curve = fig.add_subplot(grid[0, panels])
        steps = self.log.steps
        best_previous = [float(self._previous[s][0].max()) for s in steps]
        best_induction = [float(self._induction[s][layers - 1].max()) for s in steps]
        ax_curve.plot(
            steps,
            self.log.accuracies,
            "o-",
            markersize=2.5,
            color="tab:blue",
            label="copy accuracy",
        )
        ax_curve.plot(
            steps, best_previous, "-", color="tab:red", linewidth=1.2,
            label="previous-token score, layer 0",
        )  # fmt: skip
        ax_curve.plot(
            steps, best_induction, "--", color="tab:green", linewidth=1.2,
            label=f"induction score, layer {layers - 1}",
        )  # fmt: skip
        ax_curve.set_ylim(0, 1.02)
        # A margin on the left, so that the marker at step 0 is not hidden by the axis.
        margin = 0.03 * (steps[-1] - steps[0])
        ax_curve.set_xlim(steps[0] - margin, steps[-1] + margin)
        ax_curve.set_xlabel("training step", fontsize="small")
        ax_curve.set_ylabel("accuracy, best head score", fontsize="small")
        ax_curve.legend(fontsize="x-small", loc="lower right")
        ax_curve.tick_params(labelsize="x-small")
        ax_curve.grid(alpha=0.3)
        marker = ax_curve.axvline(step, color="0.3", linestyle="--", linewidth=1.2)
        # The outlines never move, but they must be drawn over the (blitted) heatmaps.
        dynamic += [*marks, marker]
        tail = text_with_tail(
            fig, 0.5, 0.93, "Attention on probe sequence 0 at training step", str(step),
            self._tails, fontsize="medium",
        )  # fmt: skip
        dynamic.append(tail)
        return dynamic

    def _update(self, step: int) -> None:
        patterns = self._patterns[step]
        layers, heads = patterns.shape[:2]
        for index, image in enumerate(self._dynamic[: layers * heads]):
            layer, head = divmod(index, heads)
            image.set_data(patterns[layer, head])
        self._dynamic[-2].set_xdata([step, step])
        self._dynamic[-1].set_text(str(step))

    def alt_text(self, step: int) -> str:
        patterns = self._patterns[step]
        layers, heads, n, _ = patterns.shape
        previous, induction = self._previous[step], self._induction[step]
        best_prev = np.unravel_index(previous[0].argmax(), previous[0].shape)
        best_ind = induction[layers - 1].argmax()
        return (
            f"Training step {step}. {layers * heads} heatmaps of attention weights over "
            f"{n} positions of one probe sequence, one per layer and head, with the cells "
            f"an induction head uses outlined in layer {layers - 1}. Over the probe batch, "
            f"the best previous-token score in layer 0 is {previous[0].max():.1f} "
            f"(head {int(best_prev[0])}) and the best induction score in layer {layers - 1} "
            f"is {induction[layers - 1].max():.1f} (head {int(best_ind)}). Right: copy "
            f"accuracy and the two best scores against training step; the accuracy is "
            f"{self._accuracy[step]:.1f} at this step."
        )


class InductionStepsExplorer(Explorer):
    """Explorer over the recorded steps of an attention-only model's training."""


def induction_steps_explorer(log: InductionLog, value: int | None = None) -> InductionStepsExplorer:
    """A slider over the snapshots of :func:`attnbook.induction.train_induction`.

    Args:
        log: the :class:`~attnbook.induction.InductionLog` of a run with at least
            two recorded steps.
        value: the starting step, one of ``log.steps`` (default: the first, 0).

    Returns:
        An :class:`InductionStepsExplorer`; display it to get the slider.
    """
    if not isinstance(log, InductionLog):
        raise TypeError(
            f"log must be an InductionLog from train_induction, got {type(log).__name__}"
        )
    if len(log.steps) < 2 or log.probe is None:
        raise ValueError(f"log must hold at least 2 recorded steps, got steps {log.steps}")
    steps = list(log.steps)
    if value is None:
        value = steps[0]
    elif isinstance(value, bool) or not isinstance(value, numbers.Integral) or value not in steps:
        raise ValueError(f"value must be one of the recorded steps {steps}, got {value!r}")
    renderer = _InductionStepsRenderer(log)
    control = range_control("training step:", steps, [str(s) for s in steps], int(value))
    return InductionStepsExplorer("induction-steps", renderer, [control], lambda s: f"step={s}")
