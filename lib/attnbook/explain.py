"""Explanations of an image classifier's decision, one score per patch, and how to compare them.

Each function scores the patches of each image; a higher score claims the
patch mattered more for the prediction.

* :func:`cls_attention`: the weights with which the [CLS] token's query reads
  the patches in one block (averaged over heads, renormalised over the patches).
* :func:`attention_rollout`: attention rollout (Abnar & Zuidema, 2020), the
  weights of every block chained through the residual stream.
* :func:`occlusion_scores`: the ground truth of this chapter: how much the
  probability of the true class drops when a patch is blacked out (zeroed).
* :func:`ink_scores`: a trivial baseline, the amount of ink in each patch.
* :func:`spearman`: the Spearman rank correlation of two scorings, one per image.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from . import _validate
from .patches import patchify, unpatchify

__all__ = [
    "cls_attention",
    "attention_rollout",
    "occlusion_scores",
    "ink_scores",
    "spearman",
    "METHODS",
    "explanation_scores",
    "agreement",
]


def _stack(weights: Sequence[torch.Tensor] | torch.Tensor) -> torch.Tensor:
    """Weights as one (layers, batch, heads, n, n) tensor."""
    if isinstance(weights, torch.Tensor):
        stacked = weights
    else:
        if isinstance(weights, (str, bytes)) or not isinstance(weights, Sequence) or not weights:
            raise TypeError(
                "weights must be a non-empty list of (batch, heads, n, n) tensors or a "
                f"(layers, batch, heads, n, n) tensor, got {weights!r}"
            )
        for i, w in enumerate(weights):
            _validate.tensor(f"weights[{i}]", w, ndim=4, floating=True)
        shapes = {tuple(w.shape) for w in weights}
        if len(shapes) > 1:
            raise ValueError(f"weights must all have one shape, got {sorted(shapes)}")
        stacked = torch.stack(list(weights))
    _validate.tensor("weights", stacked, ndim=5, floating=True)
    if stacked.shape[-1] != stacked.shape[-2]:
        raise ValueError(
            f"weights must be square (queries = keys, self-attention), got shape "
            f"{tuple(stacked.shape)}"
        )
    return stacked


def cls_attention(weights: torch.Tensor) -> torch.Tensor:
    """How the [CLS] query (token 0) of one block weighs the patches (tokens 1 to n - 1).

    ``weights`` is (batch, heads, n, n); the result (batch, n - 1) is the [CLS]
    row averaged over the heads, without its weight on [CLS] itself, and
    renormalised to sum to 1 over the patches (so a uniform row is 1 / (n - 1)).
    """
    _validate.tensor("weights", weights, ndim=4, floating=True)
    row = weights[:, :, 0, 1:].mean(dim=1)  # (batch, patches)
    return row / row.sum(dim=-1, keepdim=True)


def attention_rollout(weights: Sequence[torch.Tensor] | torch.Tensor) -> torch.Tensor:
    """Attention rollout (Abnar & Zuidema, 2020): how much each token's output draws on each input.

    ``weights`` holds one (batch, heads, n, n) tensor per block, the first
    block first (a list, or a (layers, batch, heads, n, n) tensor). For each
    block the heads are averaged, the identity is added for the residual
    connection and every row is renormalised to sum to 1:
    ``A_l = (mean_heads W_l + I) / 2``. The blocks are then chained, the first
    block applied first: ``R = A_L ... A_2 A_1``. Returns R (batch, n, n); row 0
    (``R[:, 0, 1:]``) is how much the [CLS] output draws on each patch.
    """
    stacked = _stack(weights)  # (layers, b, heads, n, n)
    n = stacked.shape[-1]
    eye = torch.eye(n, dtype=stacked.dtype, device=stacked.device)
    rollout = None
    for layer in stacked:
        A = layer.mean(dim=1) + eye  # (b, n, n): attention plus the residual path
        A = A / A.sum(dim=-1, keepdim=True)
        rollout = A if rollout is None else A @ rollout  # later blocks on the left
    return rollout


@torch.no_grad()
def occlusion_scores(
    model: nn.Module,
    images: torch.Tensor,
    labels: torch.Tensor,
    patch_size: int,
    fill: float = 0.0,
) -> torch.Tensor:
    """The drop in the true class's probability when each patch is set to ``fill``.

    images (batch, C, H, W), labels (batch,) -> scores (batch, patches), the
    patches numbered as :func:`attnbook.patches.patchify` numbers them. Entry
    (i, j) is p(labels[i] | image i) - p(labels[i] | image i with patch j
    filled); it is negative where hiding the patch makes the true class more
    probable. The model runs in eval mode on every occluded copy.
    """
    _validate.module("model", model, nn.Module)
    _validate.tensor("images", images, ndim=4, floating=True)
    _validate.tensor("labels", labels, ndim=1)
    if len(images) != len(labels):
        raise ValueError(
            f"images and labels must hold as many examples, got {len(images)} and {len(labels)}"
        )
    _check_labels(model, labels)
    fill = _validate.finite_number("fill", fill)
    model.eval()
    b, C, H, W = images.shape
    patches = patchify(images, patch_size)  # (b, P, C p p)
    P = patches.shape[1]
    hide = torch.eye(P, dtype=torch.bool).reshape(1, P, P, 1)  # copy j hides patch j
    occluded = torch.where(hide, torch.full_like(patches[:, None], fill), patches[:, None])
    copies = unpatchify(occluded.reshape(b * P, P, -1), patch_size, H, W)  # (b P, C, H, W)
    base = torch.softmax(model(images), -1).gather(1, labels[:, None])  # (b, 1)
    probs = torch.softmax(model(copies), -1).reshape(b, P, -1)  # (b, P, classes)
    hidden = probs.gather(2, labels[:, None, None].expand(b, P, 1))[..., 0]  # (b, P)
    return base - hidden


def _check_labels(model: nn.Module, labels: torch.Tensor) -> None:
    """Labels must be integer class ids the model can score."""
    classes = getattr(getattr(model, "head", None), "out_features", None)
    _validate.ids("labels", labels, upper=classes if isinstance(classes, int) else 2**62)


def ink_scores(images: torch.Tensor, patch_size: int) -> torch.Tensor:
    """The ink in each patch: images (batch, C, H, W) -> the sum of each patch's pixels (batch, patches)."""
    _validate.tensor("images", images, ndim=4, floating=True)
    return patchify(images, patch_size).sum(dim=-1)


def _ranks(x: torch.Tensor) -> torch.Tensor:
    """Ranks 1..n along the last axis, ties given the mean of the ranks they share."""
    below = (x[..., :, None] > x[..., None, :]).sum(-1)  # (..., n): entries smaller
    equal = (x[..., :, None] == x[..., None, :]).sum(-1)  # (..., n): itself included
    return below.to(torch.float64) + (equal.to(torch.float64) + 1) / 2


def spearman(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Spearman rank correlation of a and b (batch, n), one value per row (batch,), float64.

    The Pearson correlation of the ranks, ties ranked by their mean rank (as
    ``scipy.stats.spearmanr`` does). A row that is constant in a or b has no
    correlation: its value is NaN.
    """
    _validate.as_float_tensor("a", a, ndim=2)
    _validate.as_float_tensor("b", b, ndim=2)
    if a.shape != b.shape:
        raise ValueError(f"a and b must have one shape, got {tuple(a.shape)} and {tuple(b.shape)}")
    if a.shape[1] < 2:
        raise ValueError(f"a and b need at least 2 entries per row, got shape {tuple(a.shape)}")
    ra, rb = _ranks(a), _ranks(b)
    ra = ra - ra.mean(-1, keepdim=True)
    rb = rb - rb.mean(-1, keepdim=True)
    scale = (ra.square().sum(-1) * rb.square().sum(-1)).sqrt()
    out = (ra * rb).sum(-1) / scale
    return torch.where(scale > 0, out, torch.full_like(out, float("nan")))


METHODS = ("raw attention", "rollout", "ink", "random")


@torch.no_grad()
def explanation_scores(
    model: nn.Module, images: torch.Tensor, labels: torch.Tensor, seed: int = 0
) -> dict[str, torch.Tensor]:
    """Every explanation of the chapter for each image, as (batch, patches) scores.

    ``model`` is a :class:`attnbook.vit.TinyViT`. Keys: ``"raw attention"``
    (:func:`cls_attention` of the last block), ``"rollout"`` (row 0 of
    :func:`attention_rollout` over the patches), ``"ink"``, ``"random"``
    (uniform random numbers drawn from ``seed``) and ``"occlusion"``.
    """
    _validate.module("model", model, nn.Module)
    _validate.tensor("images", images, ndim=4, floating=True)
    _check_labels(model, _validate.tensor("labels", labels, ndim=1))
    model.eval()
    model(images)
    weights = [w.detach() for w in model.attention_weights]
    generator = torch.Generator().manual_seed(seed)
    return {
        "raw attention": cls_attention(weights[-1]),
        "rollout": attention_rollout(weights)[:, 0, 1:],
        "ink": ink_scores(images, model.patch_size),
        "random": torch.rand(images.shape[0], model.num_patches, generator=generator),
        "occlusion": occlusion_scores(model, images, labels, model.patch_size),
    }


def agreement(scores: dict[str, torch.Tensor]) -> dict[str, float]:
    """What the chapter measures of :func:`explanation_scores`' result.

    For each method in :data:`METHODS`, the mean over images of its Spearman
    correlation with occlusion (images where either scoring is constant are
    left out); ``"peak"``, the mean over images of the largest raw attention
    weight on a patch (1 / patches if uniform); ``"top match"``, the fraction
    of images whose most attended patch is occlusion's most important patch.
    """
    truth = scores["occlusion"]
    out = {}
    for method in METHODS:
        rho = spearman(scores[method], truth)
        out[method] = float(rho[~rho.isnan()].mean())
    raw = scores["raw attention"]
    out["peak"] = float(raw.max(dim=-1).values.mean())
    out["top match"] = float((raw.argmax(-1) == truth.argmax(-1)).double().mean())
    return out
