"""ViT maps explorer: what each attention map of a tiny ViT says, beside occlusion.

Chapter 15 trains a tiny Vision Transformer on 8x8 digits. A slider picks a
map, a menu a test image. Left: the digit with the map laid over it in red
(raw [CLS] attention of one head or of the mean of a block's heads, attention
rollout, or occlusion itself); middle: occlusion, the drop in the true class's
probability when a patch is erased (set to 0, white paper: one counterfactual
among several, the reference the maps are compared with here); right: the
model's class probabilities. Both pictures carry the patch grid and the patch
numbers. Above the left panel: the Spearman rank correlation of that map with
occlusion on this image. Each map is shown as a share of its own largest score
(negative scores as 0). The model may sit on any device; the explorer copies
what it draws to the CPU.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from matplotlib import colormaps
from matplotlib.cm import ScalarMappable
from matplotlib.colors import Normalize
from matplotlib.figure import Figure

from .. import _validate
from ..explain import attention_rollout, cls_attention, occlusion_scores, spearman
from ..vit import TinyViT
from ._core import Explorer, Renderer, bars, menu_control, range_control, set_bar_heights

__all__ = [
    "OVERLAY",
    "VitMapsExplorer",
    "default_images",
    "vit_maps_explorer",
]

OVERLAY = 0.7  # the top of the colour scale used: the darkest red leaves the ink visible


def _methods(blocks: int, heads: int) -> list[str]:
    names = []
    for block in range(blocks):  # blocks and heads count from 0, as in the book
        names.append(f"block {block}, mean of heads")
        names.extend(f"block {block}, head {h}" for h in range(heads))
    return [*names, "rollout", "occlusion"]


class _VitMapsRenderer(Renderer):
    """Two 8x8 pictures (the chosen map, occlusion) and ten probability bars."""

    figsize = (8.4, 2.9)

    def __init__(self, model: TinyViT, images, labels, indices, methods, first) -> None:
        p = model.patch_size
        side = model.image_size // p
        chosen = torch.tensor(indices)
        X, y = images[chosen], labels[chosen]
        model.eval()
        X, y = X.to(_device(model)), y.to(_device(model))
        with torch.no_grad():
            probs = torch.softmax(model(X), -1)  # (k, classes)
        weights = [w.detach() for w in model.attention_weights]  # each (k, heads, n, n)
        maps = {}
        for block, w in enumerate(weights):
            maps[f"block {block}, mean of heads"] = cls_attention(w)
            for h in range(w.shape[1]):
                maps[f"block {block}, head {h}"] = cls_attention(w[:, h : h + 1])
        maps["rollout"] = attention_rollout(weights)[:, 0, 1:]
        maps["occlusion"] = occlusion_scores(model, X, y, p)
        self.methods, self.indices, self.side, self.p = list(methods), list(indices), side, p
        self.truth = y.tolist()
        self.probs = probs.cpu().numpy()
        self.pred = probs.argmax(-1).tolist()
        self.digits = X[:, 0].cpu().numpy()  # (k, H, W)
        maps = {m: maps[m].detach().double().cpu() for m in self.methods}  # each (k, patches)
        self.maps = {m: maps[m].numpy() for m in self.methods}
        self.rho = {m: spearman(maps[m], maps["occlusion"]).numpy() for m in self.methods}
        self.cmap = colormaps["Reds"]
        self.row = {i: k for k, i in enumerate(self.indices)}
        super().__init__(first)

    def _picture(self, method: str, index: int) -> np.ndarray:
        """The digit (grey ink on white) with the map laid over it: (H, W, 3) floats."""
        k = self.row[index]
        scores = self.maps[method][k]
        top = scores.max()
        share = np.clip(scores / top, 0, 1) if top > 0 else np.zeros_like(scores)
        patch = share.reshape(self.side, self.side)
        pixels = np.kron(patch, np.ones((self.p, self.p)))  # (H, W): each patch's share
        paper = self.cmap(OVERLAY * pixels)[..., :3]  # (H, W, 3): the map's colour
        ink = 1.0 - 0.8 * self.digits[k][..., None]  # (H, W, 1): ink darkens the paper
        return np.clip(paper * ink, 0.0, 1.0)

    def _title(self, state) -> str:
        method, index = state
        k = self.row[index]
        if method == "occlusion":
            return "occlusion itself\n\u03c1 = +1.00"
        return f"{method}\n\u03c1 = {self.rho[method][k]:+.2f} with occlusion"

    def _headline(self, index: int) -> str:
        k = self.row[index]
        verdict = "right" if self.pred[k] == self.truth[k] else "WRONG"
        return (
            f"test image {index}, a {self.truth[k]}: predicted {self.pred[k]} "
            f"(p = {self.probs[k, self.pred[k]]:.2f}, {verdict})"
        )

    def _bar_colours(self, index: int) -> list:
        k = self.row[index]
        colours = ["0.7"] * self.probs.shape[1]
        colours[self.truth[k]] = "tab:blue"
        if self.pred[k] != self.truth[k]:
            colours[self.pred[k]] = "tab:red"
        return colours

    def _build(self, fig: Figure, state) -> list:
        method, index = state
        ax_map = fig.add_axes((0.01, 0.05, 0.23, 0.72))
        ax_occ = fig.add_axes((0.27, 0.05, 0.23, 0.72))
        ax_cb = fig.add_axes((0.515, 0.08, 0.013, 0.66))
        ax_bar = fig.add_axes((0.70, 0.2, 0.285, 0.57))
        extent = (-0.5, self.side * self.p - 0.5, self.side * self.p - 0.5, -0.5)
        left = ax_map.imshow(self._picture(method, index), interpolation="nearest", extent=extent)
        middle = ax_occ.imshow(
            self._picture("occlusion", index), interpolation="nearest", extent=extent
        )
        grid = []
        for ax in (ax_map, ax_occ):
            ax.set_xticks([])
            ax.set_yticks([])
            grid.extend(self._grid(ax))
        ax_occ.set_title("occlusion\n(patch erased to 0)", fontsize="small")
        map_title = ax_map.set_title(self._title(state), fontsize="small")
        x = np.arange(self.probs.shape[1])
        k = self.row[index]
        probability = bars(ax_bar, x, self.probs[k], 0.7, self._bar_colours(index))
        ax_bar.set_xlim(-0.6, len(x) - 0.4)
        ax_bar.set_ylim(0, 1)
        ax_bar.set_xticks(x)
        ax_bar.set_xlabel("class (blue: true, red: predicted if wrong)", fontsize="small")
        ax_bar.set_ylabel("probability")
        scale = ScalarMappable(Normalize(0, 1 / OVERLAY), self.cmap)
        bar = fig.colorbar(scale, cax=ax_cb)
        bar.set_label("share of the map's top score", fontsize="small")
        ax_cb.set_ylim(0, 1)
        headline = fig.text(0.5, 0.97, self._headline(index), ha="center", va="top")
        # The grid is drawn after the pictures, which would otherwise cover it.
        return [left, middle, probability, map_title, headline, *grid]

    def _update(self, state) -> None:
        method, index = state
        left, middle, probability, map_title, headline = self._dynamic[:5]
        left.set_data(self._picture(method, index))
        middle.set_data(self._picture("occlusion", index))
        k = self.row[index]
        x = np.arange(self.probs.shape[1])
        set_bar_heights(probability, x, self.probs[k], 0.7)
        probability.set_facecolors(self._bar_colours(index))
        map_title.set_text(self._title(state))
        headline.set_text(self._headline(index))

    def _grid(self, ax) -> list:
        """The patch grid, and each patch's number in its top-left corner (white box)."""
        artists = []
        for k in range(1, self.side):
            artists.append(ax.axhline(k * self.p - 0.5, color="tab:blue", lw=0.8, alpha=0.7))
            artists.append(ax.axvline(k * self.p - 0.5, color="tab:blue", lw=0.8, alpha=0.7))
        for patch in range(self.side**2):
            row, col = divmod(patch, self.side)
            text = ax.text(
                col * self.p - 0.4,
                row * self.p - 0.4,
                str(patch),
                fontsize=6,
                ha="left",
                va="top",
                color="tab:blue",
                bbox={"facecolor": "white", "edgecolor": "none", "pad": 0.5, "alpha": 0.8},
            )
            artists.append(text)
        return artists

    def _top(self, method: str, index: int) -> str:
        patch = int(self.maps[method][self.row[index]].argmax())
        return f"patch {patch} (row {patch // self.side}, column {patch % self.side}, from 0)"

    def alt_text(self, state) -> str:
        method, index = state
        k = self.row[index]
        head = (
            f"Test image {index}, a {self.truth[k]}; the model predicts {self.pred[k]} with "
            f"probability {self.probs[k, self.pred[k]]:.2f} "
            f"({'right' if self.pred[k] == self.truth[k] else 'wrong'}). "
        )
        occ = f"occlusion (patches erased to 0) scores highest {self._top('occlusion', index)}"
        if method == "occlusion":
            return head + f"Left and middle: occlusion itself; {occ}."
        return head + (
            f"Left: {method} laid over the digit, its largest score on "
            f"{self._top(method, index)}; Spearman correlation with occlusion "
            f"{self.rho[method][k]:+.2f}. Middle: {occ}."
        )


def _device(model: torch.nn.Module) -> torch.device:
    return next(model.parameters()).device


class VitMapsExplorer(Explorer):
    """Explorer over the maps of a trained :class:`attnbook.vit.TinyViT`, image by image."""


def default_images(model: TinyViT, images, labels, right: int = 4, wrong: int = 2) -> list[int]:
    """Indices of the first ``right`` correctly classified images (distinct digits) and
    the first ``wrong`` misclassified ones, in index order."""
    device = _device(model)
    with torch.no_grad():
        pred = torch.cat(
            [
                model(images[i : i + 500].to(device)).argmax(-1).cpu()
                for i in range(0, len(images), 500)
            ]
        )
    labels = labels.cpu()
    good, bad, seen = [], [], set()
    for i in range(len(images)):
        if pred[i] != labels[i] and len(bad) < wrong:
            bad.append(i)
        elif pred[i] == labels[i] and int(labels[i]) not in seen and len(good) < right:
            good.append(i)
            seen.add(int(labels[i]))
    return sorted(good + bad)


def vit_maps_explorer(
    model: TinyViT,
    images: torch.Tensor,
    labels: torch.Tensor,
    indices: Sequence[int] | None = None,
    method: str = "rollout",
) -> VitMapsExplorer:
    """A slider over the maps of ``model`` and a menu over test images.

    Args:
        model: a trained :class:`attnbook.vit.TinyViT` (it is run in eval mode),
            on any device.
        images: (n, C, H, W) test images; labels: (n,) their classes (moved
            to the model's device as needed).
        indices: the images the menu offers, at least 2 distinct indices into
            ``images`` (default :func:`default_images`: four read right, of
            different digits, and two read wrong).
        method: the starting map, one of the slider's stops ("block 0, mean of
            heads", "block 0, head 0", ..., "rollout", "occlusion"; blocks and
            heads count from 0, as the chapter counts them).

    Returns:
        A :class:`VitMapsExplorer`; display it to get the controls. A state is
        ``(method, image index)``.
    """
    if not isinstance(model, TinyViT):
        raise TypeError(f"model must be an attnbook.vit.TinyViT, got {type(model).__name__}")
    _validate.tensor("images", images, ndim=4, floating=True)
    _validate.tensor("labels", labels, ndim=1)
    if len(images) != len(labels):
        raise ValueError(
            f"images and labels must hold as many examples, got {len(images)} and {len(labels)}"
        )
    if indices is None:
        indices = default_images(model, images, labels)
    indices = list(indices)
    for i in indices:
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < len(images):
            raise ValueError(f"indices must be integers in [0, {len(images)}), got {i!r}")
    if len(indices) < 2 or len(set(indices)) != len(indices):
        raise ValueError(f"indices must hold at least 2 distinct images, got {indices!r}")
    blocks = len(model.blocks)
    heads = model.blocks[0].num_heads
    methods = _methods(blocks, heads)
    if method not in methods:
        raise ValueError(f"method must be one of {methods}, got {method!r}")
    renderer = _VitMapsRenderer(model, images, labels, indices, methods, (method, indices[0]))
    slider = range_control("map:", methods, methods, method)
    menu_labels = [
        f"image {i}: a {renderer.truth[k]}"
        + ("" if renderer.pred[k] == renderer.truth[k] else f", read as {renderer.pred[k]}")
        for k, i in enumerate(indices)
    ]
    menu = menu_control("test image:", indices, menu_labels, indices[0])
    count = len(indices)
    return VitMapsExplorer(
        "vit-maps",
        renderer,
        [slider, menu],
        lambda state: f"map={state[0]!r}, {count} test images, {len(methods)} maps",
    )
