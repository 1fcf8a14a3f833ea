"""Alignment explorer: a date model's cross-attention sharpening as it trains.

The slider moves through the training steps at which
:func:`attnbook.seq2seq.train_seq2seq` decoded its probe dates; the menu picks
one probe date. Left: the alignment heatmap, one row per output character (the
model's greedy output at that step, wrong characters in red) and one column
per input character. Right: the held-out exact match against training step,
with the current step marked.
"""

from __future__ import annotations

import numbers

import numpy as np
import torch
from matplotlib.figure import Figure
from matplotlib.transforms import Bbox

from ..dates import SOURCE_VOCAB, TARGET_VOCAB
from ..seq2seq import Seq2SeqLog
from ._core import Explorer, Renderer, menu_control, range_control

__all__ = [
    "AlignmentExplorer",
    "alignment_explorer",
]


def _show(char: str) -> str:
    return "\u00b7" if char == " " else char


class _AlignmentRenderer(Renderer):
    figsize = (8.6, 3.3)

    def __init__(self, log: Seq2SeqLog, steps: list[int]) -> None:
        probe = log.probe
        self.steps = steps
        self._texts = list(probe.texts)
        self._targets = [TARGET_VOCAB.decode(row) for row in probe.target]
        self._n = probe.source.shape[1]
        index = {s: i for i, s in enumerate(log.steps)}
        # (examples, 10, n) float64 weights and the predictions, per shown step.
        self._weights = {s: log.weights[index[s]].to(torch.float64).numpy() for s in steps}
        self._outputs = {
            s: ["".join(TARGET_VOCAB.symbols[t] for t in row) for row in log.predictions[index[s]]]
            for s in steps
        }
        self._exact = {s: log.exact[index[s]] for s in log.steps}
        self._curve = (list(log.steps), list(log.exact))
        # Pixels of drawn tick labels, by what they show (see rgb): the input
        # characters depend on the date only, the output characters repeat once
        # the model is right.
        self._label_cache: dict = {}
        super().__init__((steps[0], 0))

    def _frame(self, state):
        step, example = state
        weights = np.full((10, self._n), np.nan)
        length = len(self._texts[example])
        weights[:, :length] = self._weights[step][example][:, :length]
        return weights

    def _build(self, fig: Figure, state) -> list:
        step, example = state
        ax_map, ax_curve = fig.subplots(1, 2, gridspec_kw={"width_ratios": [2.1, 1]})
        fig.subplots_adjust(left=0.07, right=0.985, bottom=0.2, top=0.8, wspace=0.32)
        image = ax_map.imshow(
            np.ma.masked_invalid(self._frame(state)), cmap="Blues", vmin=0.0, vmax=1.0,
            aspect="auto", interpolation="nearest",
        )  # fmt: skip
        bar = fig.colorbar(image, ax=ax_map, fraction=0.04, pad=0.02)
        bar.set_label("attention weight", fontsize="small")
        bar.ax.tick_params(labelsize="x-small")
        ax_map.set_xticks(range(self._n), [""] * self._n)
        ax_map.set_yticks(range(10), [""] * 10)
        ax_map.tick_params(length=0)
        ax_map.set_xlabel("input character", fontsize="small", labelpad=12)
        ax_map.set_ylabel("output character", fontsize="small", labelpad=12)
        # Tick labels change with the example (inputs) and the step (outputs).
        xlabels = [
            ax_map.text(j, 10.05, "", ha="center", va="top", fontsize="small", family="monospace")
            for j in range(self._n)
        ]
        ylabels = [
            ax_map.text(-0.75, i, "", ha="right", va="center", fontsize="small", family="monospace")
            for i in range(10)
        ]
        steps, exact = self._curve
        ax_curve.plot(steps, exact, "o-", markersize=2.5, color="tab:blue")
        ax_curve.set_ylim(0, 1.02)
        ax_curve.set_xlim(steps[0], steps[-1])
        ax_curve.set_xlabel("training step", fontsize="small")
        ax_curve.set_title("held-out exact match", fontsize="small")
        ax_curve.tick_params(labelsize="x-small")
        ax_curve.grid(alpha=0.3)
        marker = ax_curve.axvline(step, color="0.3", linestyle="--", linewidth=1.2)
        readout = ax_curve.text(0.04, 0.9, "", transform=ax_curve.transAxes, fontsize="small")
        # The title in two parts around a fixed arrow, so that each part can be
        # blitted from the label cache (see rgb): the input, and the output.
        fig.text(0.5, 0.92, "\u2192", ha="center", fontsize="medium")
        left = fig.text(0.485, 0.92, "", ha="right", fontsize="medium")
        right = fig.text(0.515, 0.92, "", ha="left", fontsize="medium")
        dynamic = [image, *xlabels, *ylabels, marker, readout, left, right]
        self._apply(dynamic, state)
        return dynamic

    def _update(self, state) -> None:
        self._apply(self._dynamic, state)

    def rgb(self, state) -> np.ndarray:
        """The frame for ``state``, with the tick labels blitted from a cache.

        Text is the costliest artist to draw; the input characters change only
        with the date and the output characters repeat across steps, so each
        set of labels (and each half of the title) is drawn once and its
        pixels are reused.
        """
        self._update(state)
        step, example = state
        image, *rest = self._dynamic
        xlabels, ylabels = rest[: self._n], rest[self._n : self._n + 10]
        output = self._outputs[step][example]
        marker, readout, left, right = rest[-4:]
        self.canvas.restore_region(self._background)
        for artist in (image, marker, readout):
            self.fig.draw_artist(artist)
        target = self._targets[example]
        groups = (
            (("inputs", example), xlabels),
            (("title input", example), [left]),
            (("outputs", output, target), ylabels),
            (("title output", output, target), [right]),
        )
        for key, labels in groups:
            cached = self._label_cache.get(key)
            if cached is not None:
                self.canvas.restore_region(cached)
                continue
            for label in labels:
                self.fig.draw_artist(label)
            renderer = self.canvas.get_renderer()
            boxes = [label.get_window_extent(renderer) for label in labels if label.get_text()]
            box = Bbox.union(boxes).expanded(1.0, 1.0).padded(2)
            self._label_cache[key] = self.canvas.copy_from_bbox(box)
        return np.array(np.asarray(self.canvas.buffer_rgba())[..., :3])

    def _apply(self, artists: list, state) -> None:
        step, example = state
        image, *rest = artists
        xlabels, ylabels = rest[: self._n], rest[self._n : self._n + 10]
        marker, readout, left, right = rest[-4:]
        image.set_data(np.ma.masked_invalid(self._frame(state)))
        text = self._texts[example]
        for j, label in enumerate(xlabels):
            label.set_text(_show(text[j]) if j < len(text) else "")
        output, target = self._outputs[step][example], self._targets[example]
        for i, label in enumerate(ylabels):
            label.set_text(output[i])
            label.set_color("tab:red" if output[i] != target[i] else "black")
        marker.set_xdata([step, step])
        readout.set_text(f"step {step}: {self._exact[step]:.2f}")
        left.set_text(repr(text))
        verdict = "right" if output == target else "wrong"
        right.set_text(f"{output!r} ({verdict})")

    def alt_text(self, state) -> str:
        step, example = state
        weights = self._weights[step][example]
        text = self._texts[example]
        top = weights.argmax(-1)
        output, target = self._outputs[step][example], self._targets[example]
        wrong = sum(a != b for a, b in zip(output, target))
        year = ", ".join(repr(_show(text[j])) for j in top[:4])
        return (
            f"Training step {step}, input {text!r}. Heatmap of the attention of each of the "
            f"10 output characters over the {len(text)} input characters; the largest weight "
            f"of a row is {weights.max(-1).mean():.2f} on average, and the four year digits "
            f"look hardest at the input characters {year}. The model writes {output!r} "
            f"({wrong} of 10 characters wrong; the answer is {target!r}). Right: held-out "
            f"exact match against training step, {self._exact[step]:.2f} at this step."
        )


class AlignmentExplorer(Explorer):
    """Explorer over the training steps and probe dates of a date model with attention."""


def alignment_explorer(
    log: Seq2SeqLog,
    steps: list[int] | None = None,
    value: int | None = None,
    example: int = 0,
) -> AlignmentExplorer:
    """A slider over training steps and a menu over probe dates, showing the alignment.

    Args:
        log: the :class:`~attnbook.seq2seq.Seq2SeqLog` of a date model with
            attention, trained with a probe of dates and at least two recorded steps.
        steps: the recorded steps to offer (default: all of them).
        value: the starting step (default: the first offered).
        example: the starting probe date (its index).

    Returns:
        An :class:`AlignmentExplorer`; display it to get the slider and the menu.
    """
    if not isinstance(log, Seq2SeqLog):
        raise TypeError(f"log must be a Seq2SeqLog from train_seq2seq, got {type(log).__name__}")
    if log.probe is None or log.probe.texts is None or len(log.steps) < 2:
        raise ValueError("log must come from a date model trained with a probe of dates")
    if any(w is None for w in log.weights):
        raise ValueError("log holds no attention weights: train a model with attention")
    if steps is None:
        steps = list(log.steps)
    steps = list(steps)
    if len(steps) < 2 or any(s not in log.steps for s in steps):
        raise ValueError(
            f"steps must be at least two of the recorded steps {log.steps}, got {steps}"
        )
    if value is None:
        value = steps[0]
    elif value not in steps:
        raise ValueError(f"value must be one of the steps {steps}, got {value!r}")
    count = len(log.probe.texts)
    if isinstance(example, bool) or not isinstance(example, numbers.Integral):
        raise TypeError(f"example must be an integer, got {example!r}")
    if not 0 <= example < count:
        raise ValueError(f"example must lie in [0, {count - 1}], got {example}")
    for text in log.probe.texts:
        SOURCE_VOCAB.encode(text)
    renderer = _AlignmentRenderer(log, steps)
    slider = range_control("training step:", steps, [str(s) for s in steps], value)
    labels = [f"{t} ({f})" for t, f in zip(log.probe.texts, log.probe.formats)]
    menu = menu_control("date:", list(range(count)), labels, int(example))
    return AlignmentExplorer(
        "alignment", renderer, [slider, menu], lambda s: f"step={s[0]}, example={s[1]}"
    )
