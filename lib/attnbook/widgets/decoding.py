"""Decoding explorer: a language model writing one token per step, with its cache.

The slider is the decoding step t. Left: one head's causal attention weights,
one row per step so far (row t is the new token's query; rows below it are not
computed yet), and under the heatmap a strip marking which keys come from the
cache (positions 0..t-1) and which one was just added (position t). Right: the
model's next-token distribution at step t, one bar per vocabulary entry, the
most likely token in a second colour; the title gives its entropy in nats.
"""

from __future__ import annotations

import numbers

import numpy as np
import torch
from matplotlib import colormaps
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from .. import _validate
from ..lm import CharTokenizer, KVCache, TinyLM
from ._core import Explorer, Renderer, bars, range_control, set_bar_heights, text_with_tail

__all__ = [
    "decoding_trace",
    "DecodingExplorer",
    "decoding_explorer",
]

_SHOW = {" ": "\u00b7", "\n": "\u00b6"}  # how a space and a newline are labelled


def _label(char: str) -> str:
    return _SHOW.get(char, char)


@torch.no_grad()
def decoding_trace(
    model: TinyLM, ids: torch.Tensor, layer: int, head: int
) -> tuple[np.ndarray, np.ndarray]:
    """Feed ``ids`` (t,) to ``model`` one token at a time through a :class:`KVCache`.

    Returns (weights, probs): weights (t, t) has in row i the attention of
    ``head`` in block ``layer`` from token i over keys 0..i (zeros beyond), as the
    cached step computed it; probs (t, vocab_size) is the next-token
    distribution after token i.
    """
    steps = ids.shape[0]
    weights = np.zeros((steps, steps))
    probs = np.zeros((steps, model.vocab_size))
    cache = KVCache()
    was_training = model.training
    model.eval()
    for i in range(steps):
        logits = model(ids[i : i + 1].unsqueeze(0), cache)[0, -1]  # (vocab,)
        row = model.blocks[layer].attention.attention_weights[0, head, 0]  # (i + 1,)
        weights[i, : i + 1] = row.double().numpy()
        probs[i] = torch.softmax(logits.double(), -1).numpy()
    model.train(was_training)
    return weights, probs


class _DecodingRenderer(Renderer):
    figsize = (9.6, 3.9)

    def __init__(self, text: str, chars: list[str], weights, probs, layer, head) -> None:
        self.text, self.chars = text, chars
        self.layer, self.head = layer, head
        self._weights, self._probs = weights, probs
        self._best = probs.argmax(axis=1)  # (steps,)
        safe = np.clip(probs, 1e-30, None)
        self._entropy = -(probs * np.log(safe)).sum(axis=1)  # (steps,) nats
        self._vmax = float(weights.max())
        steps = len(text)
        self._tails = [self._tail(t) for t in range(steps)]
        super().__init__(0)

    def _tail(self, t: int) -> str:
        best = int(self._best[t])
        return (
            f"t = {t}, reading {_label(self.text[t])!r}, likeliest next "
            f"{_label(self.chars[best])!r}, entropy {self._entropy[t]:.1f} nats"
        )

    def _masked(self, t: int) -> np.ndarray:
        shown = self._weights.copy()
        shown[t + 1 :] = np.nan  # rows of later steps: not computed yet
        return shown

    @staticmethod
    def _strip(t: int, steps: int) -> np.ndarray:
        strip = np.full((1, steps), 2.0)  # 2: not seen yet
        strip[0, :t] = 0.0  # 0: read from the cache
        strip[0, t] = 1.0  # 1: the new token's key, appended now
        return strip

    def _build(self, fig: Figure, t: int) -> list:
        steps = len(self.text)
        vocab = len(self.chars)
        grid = fig.add_gridspec(
            2, 2, width_ratios=[1, 1.35], height_ratios=[1, 0.06], hspace=0.08, wspace=0.22
        )
        ax_map = fig.add_subplot(grid[0, 0])
        ax_strip = fig.add_subplot(grid[1, 0], sharex=ax_map)
        ax_bars = fig.add_subplot(grid[:, 1])
        fig.subplots_adjust(left=0.06, right=0.98, bottom=0.12, top=0.86)
        image = ax_map.imshow(
            self._masked(t),
            cmap=colormaps["Reds"].with_extremes(bad="0.94"),
            vmin=0.0,
            vmax=self._vmax,
            aspect="auto",
            interpolation="nearest",
        )
        labels = [_label(c) for c in self.text]
        ax_map.set_yticks(range(steps), labels, fontsize=6, family="monospace")
        ax_map.tick_params(axis="x", labelbottom=False)
        ax_map.set_ylabel("queries (step)")
        ax_map.set_title(f"block {self.layer}, head {self.head}: weights", fontsize="medium")
        row = Rectangle((-0.5, t - 0.5), steps, 1, fill=False, edgecolor="tab:blue", linewidth=1.5)
        ax_map.add_patch(row)
        strip_cmap = ListedColormap(["tab:blue", "tab:orange", "white"])
        strip = ax_strip.imshow(
            self._strip(t, steps),
            cmap=strip_cmap,
            vmin=0,
            vmax=2,
            aspect="auto",
            interpolation="nearest",
        )
        ax_strip.set_yticks([0], ["cache"], fontsize=7)
        ax_strip.set_xticks(range(steps), labels, fontsize=6, family="monospace")
        ax_strip.set_xlabel("keys: cached (blue), new (orange)", fontsize="small")
        x = np.arange(vocab)
        probs = self._probs[t]
        others = bars(ax_bars, x, probs, 0.8, "0.55")
        best = int(self._best[t])
        top = bars(ax_bars, x[best : best + 1], probs[best : best + 1], 0.8, "tab:red")
        ax_bars.set_xlim(-0.7, vocab - 0.3)
        ax_bars.set_ylim(0, 1.0)
        ax_bars.set_xticks(x, [_label(c) for c in self.chars], fontsize=5, family="monospace")
        ax_bars.set_ylabel("probability")
        ax_bars.set_title("next-token distribution (likeliest in red)", fontsize="medium")
        title = text_with_tail(
            fig, 0.5, 0.95, "Decoding with a cache:", self._tail(t), self._tails, fontsize="large"
        )
        return [image, row, strip, others, top, title]

    def _update(self, t: int) -> None:
        image, row, strip, others, top, title = self._dynamic
        steps = len(self.text)
        image.set_data(self._masked(t))
        row.set_y(t - 0.5)
        strip.set_data(self._strip(t, steps))
        probs = self._probs[t]
        set_bar_heights(others, np.arange(len(self.chars)), probs, 0.8)
        best = int(self._best[t])
        top.set_verts(
            [
                [
                    (best - 0.4, 0),
                    (best - 0.4, probs[best]),
                    (best + 0.4, probs[best]),
                    (best + 0.4, 0),
                ]
            ]
        )
        title.set_text(self._tails[t])

    def alt_text(self, t: int) -> str:
        steps = len(self.text)
        row = self._weights[t, : t + 1]
        focus = int(row.argmax())
        best = int(self._best[t])
        return (
            f"Decoding step {t} of {steps - 1}. Left: block {self.layer}, head {self.head}'s "
            f"causal attention weights for queries 0 to {t}, later rows blank; the new query "
            f"at position {t} puts its largest weight, {row[focus]:.2f}, on key {focus} "
            f"({_label(self.text[focus])!r}); {t} keys come from the cache and 1 is new. "
            f"Right: the next-token distribution over {len(self.chars)} characters; the "
            f"likeliest is {_label(self.chars[best])!r} with probability "
            f"{self._probs[t, best]:.2f}; the distribution's entropy is "
            f"{self._entropy[t]:.1f} nats."
        )


class DecodingExplorer(Explorer):
    """Explorer over the decoding steps of a :class:`~attnbook.lm.TinyLM`."""


def decoding_explorer(
    model: TinyLM,
    tokenizer: CharTokenizer,
    text: str,
    layer: int = 0,
    head: int = 0,
    value: int | None = None,
) -> DecodingExplorer:
    """A slider over the decoding steps of ``model`` reading ``text``.

    Args:
        model: a :class:`~attnbook.lm.TinyLM`.
        tokenizer: its :class:`~attnbook.lm.CharTokenizer`.
        text: the sequence to step through (2 to ``model.max_len`` characters of
            the vocabulary), e.g. a prompt and what the model wrote after it.
        layer, head: whose attention weights the heatmap shows.
        value: the starting step (default 0).

    Returns:
        A :class:`DecodingExplorer`; display it to get the slider.
    """
    if not isinstance(model, TinyLM):
        raise TypeError(f"model must be a TinyLM, got {type(model).__name__}")
    if not isinstance(tokenizer, CharTokenizer):
        raise TypeError(f"tokenizer must be a CharTokenizer, got {type(tokenizer).__name__}")
    if tokenizer.vocab_size != model.vocab_size:
        raise ValueError(
            f"tokenizer has {tokenizer.vocab_size} characters but the model's vocab_size is "
            f"{model.vocab_size}"
        )
    if not isinstance(text, str) or not 2 <= len(text) <= model.max_len:
        raise ValueError(
            f"text must be a string of 2 to {model.max_len} characters, got "
            f"{_validate._describe(text)}"
        )
    ids = tokenizer.encode(text)
    for name, index, upper in (("layer", layer, model.num_layers), ("head", head, model.num_heads)):
        if isinstance(index, bool) or not isinstance(index, numbers.Integral):
            raise TypeError(f"{name} must be an integer, got {index!r}")
        if not 0 <= index < upper:
            raise ValueError(f"{name} must lie in [0, {upper - 1}], got {index}")
    steps = list(range(len(text)))
    value = 0 if value is None else value
    if value not in steps:
        raise ValueError(f"value must be a step in [0, {len(text) - 1}], got {value!r}")
    weights, probs = decoding_trace(model, ids, int(layer), int(head))
    renderer = _DecodingRenderer(text, tokenizer.chars, weights, probs, int(layer), int(head))
    control = range_control("decoding step t:", steps, [str(s) for s in steps], value, integer=True)
    return DecodingExplorer(
        "decoding",
        renderer,
        [control],
        lambda t: f"t={t}, layer={layer}, head={head}",
    )
