"""Explanations of an image classifier's decision, one score per patch, and how to compare them.

Each function scores the patches of each image; a higher score claims the
patch mattered more for the prediction.

* :func:`cls_attention`: the weights with which the [CLS] token's query reads
  the patches in one block (averaged over heads, renormalised over the patches).
* :func:`attention_rollout`: attention rollout (Abnar & Zuidema, 2020), the
  weights of every block chained through the residual stream.
* :func:`occlusion_scores`: an intervention: how much the probability of the
  true class drops when a patch is replaced by ``fill`` (0, erased to blank
  paper, by default; a number or a whole image such as the training mean).
  Its answer depends on that choice of counterfactual.
* :func:`ink_scores`: a trivial baseline, the amount of ink in each patch.
* :func:`change_scores`: its generalisation to any fill, the size of the
  change that replacing each patch by ``fill`` makes to the image (for the
  zero fill, the ink); a map that never looks at the model.
* :func:`deletion_curve` and :func:`deletion_area`: a second test of a map:
  fill the patches in the map's order, most relevant first, and follow the
  true class's probability; a faithful order makes it fall fast (small area).
* :func:`spearman` and :func:`partial_spearman`: the Spearman rank correlation
  of two scorings, one per image, and the same with a third scoring held fixed.

Every function works on the device of its inputs (CPU, CUDA, ``meta``).
Images with NaN pixels, an empty channel or side, and (for the functions that
run a model) an empty batch or a model that cannot classify them are refused
by name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch
from torch import nn

from . import _validate
from .patches import patchify, unpatchify
from .vit import TinyViT, _seed

__all__ = [
    "cls_attention",
    "attention_rollout",
    "occlusion_scores",
    "deletion_curve",
    "deletion_area",
    "ink_scores",
    "change_scores",
    "spearman",
    "partial_spearman",
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
    A [CLS] row that puts no weight at all on the patches has no such map: it
    is refused by name, as is a NaN in ``weights``.
    """
    _validate.tensor("weights", weights, ndim=4, floating=True)
    if weights.shape[-1] < 2 or weights.shape[-2] != weights.shape[-1] or weights.shape[1] == 0:
        raise ValueError(
            "weights must be (batch, heads, n, n) with a head and n >= 2 ([CLS] and a patch), "
            f"got shape {tuple(weights.shape)}"
        )
    _validate.no_nan("weights", weights)
    row = weights[:, :, 0, 1:].mean(dim=1)  # (batch, patches)
    total = row.sum(dim=-1, keepdim=True)
    if total.device.type != "meta" and bool((total <= 0).any()):  # meta: no values
        first = int((total[:, 0] <= 0).nonzero()[0, 0])
        raise ValueError(
            f"weights: the [CLS] row of example {first} puts no weight on any patch, "
            "so its map over the patches is undefined"
        )
    return row / total


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


def _check_images(images: object) -> torch.Tensor:
    """(batch, C, H, W) floating images without an empty channel or side, and without NaN."""
    _validate.model_input("images", images, ndim=4)
    return _validate.no_nan("images", images)


def _check_batch(model: object, images: object, labels: object) -> None:
    """A classifier, a non-empty batch of images it takes, and one label per image that it scores."""
    _validate.module("model", model, nn.Module)
    _check_images(images)
    _validate.tensor("labels", labels, ndim=1)
    if len(images) != len(labels):
        raise ValueError(
            f"images and labels must hold as many examples, got {len(images)} and {len(labels)}"
        )
    if len(images) == 0:  # nothing to explain: refused rather than an empty or NaN result
        raise ValueError(f"images must hold at least one image, got shape {tuple(images.shape)}")
    classes = _validate.classifier_classes(model, "images", images)
    _validate.ids("labels", labels, upper=2**62 if classes is None else classes)


def _fill_patches(
    fill: float | torch.Tensor, images: torch.Tensor, patch_size: int
) -> torch.Tensor:
    """``fill`` as (1, patches, C p p) on the images' device and dtype."""
    if isinstance(fill, torch.Tensor):
        expected = tuple(images.shape[1:])
        if fill.ndim != 3 or tuple(fill.shape) != expected:
            raise ValueError(
                f"fill must be a number or one (C, H, W) image of shape {expected}, "
                f"got a tensor of shape {tuple(fill.shape)}"
            )
        if not (fill.is_floating_point() or fill.dtype in (torch.int32, torch.int64)):
            raise TypeError(f"fill must hold real numbers, got dtype {fill.dtype}")
        fill = fill.to(device=images.device, dtype=images.dtype)
        return patchify(fill[None], patch_size)
    if isinstance(fill, bool) or not isinstance(fill, (int, float)):
        raise TypeError(
            f"fill must be a number or a (C, H, W) image tensor, got {type(fill).__name__} {fill!r}"
        )
    if fill != fill or fill in (float("inf"), float("-inf")):
        raise ValueError(f"fill must be finite, got {fill!r}")
    patches = patchify(images[:1], patch_size)
    return torch.full_like(patches, float(fill))


def _true_class_probability(model: nn.Module, images: torch.Tensor, labels: torch.Tensor):
    """p(labels | images) for images (b, k, C, H, W) and labels (b,) -> (b, k)."""
    b, k = images.shape[:2]
    probs = torch.softmax(model(images.reshape(b * k, *images.shape[2:])), -1)
    probs = probs.reshape(b, k, -1)
    return probs.gather(2, labels[:, None, None].expand(b, k, 1))[..., 0]


@torch.no_grad()
def occlusion_scores(
    model: nn.Module,
    images: torch.Tensor,
    labels: torch.Tensor,
    patch_size: int,
    fill: float | torch.Tensor = 0.0,
) -> torch.Tensor:
    """The drop in the true class's probability when each patch is replaced by ``fill``.

    images (batch, C, H, W), labels (batch,) -> scores (batch, patches), the
    patches numbered as :func:`attnbook.patches.patchify` numbers them. Entry
    (i, j) is p(labels[i] | image i) - p(labels[i] | image i with patch j
    filled); it is negative where hiding the patch makes the true class more
    probable. ``fill`` is a number (0, the default, erases a digit's patch to
    blank paper) or one (C, H, W) image whose patch j replaces patch j (the
    mean training image, say): each asks a different counterfactual question,
    and the scores depend on it. The model runs in eval mode on every
    occluded copy (its own mode is restored after); all of them (batch x
    patches) go through it in one batch.
    """
    _check_batch(model, images, labels)
    b, C, H, W = images.shape
    patches = patchify(images, patch_size)  # (b, P, C p p)
    filler = _fill_patches(fill, images, patch_size)  # (1, P, C p p)
    P = patches.shape[1]
    hide = torch.eye(P, dtype=torch.bool, device=images.device).reshape(1, P, P, 1)
    occluded = torch.where(hide, filler[:, None], patches[:, None])  # copy j hides patch j
    copies = unpatchify(occluded.reshape(b * P, P, -1), patch_size, H, W)  # (b P, C, H, W)
    with _validate.eval_mode(model):
        base = _true_class_probability(model, images[:, None], labels)  # (b, 1)
        hidden = _true_class_probability(model, copies.reshape(b, P, C, H, W), labels)  # (b, P)
    return base - hidden


@torch.no_grad()
def deletion_curve(
    model: nn.Module,
    images: torch.Tensor,
    labels: torch.Tensor,
    scores: torch.Tensor,
    patch_size: int,
    fill: float | torch.Tensor = 0.0,
) -> torch.Tensor:
    """The true class's probability as the patches are filled, most relevant first.

    ``scores`` (batch, patches) is any map; entry (i, k) of the result
    (batch, patches + 1) is p(labels[i] | image i with its k highest-scoring
    patches replaced by ``fill``), so column 0 is the untouched image and the
    last column the image wholly filled. Ties in a map are broken by patch
    number (the lower first). An order that finds what the model uses makes
    the curve fall fast: the "deletion" test of a saliency map (Petsiuk et al.,
    2018). ``fill`` is as in :func:`occlusion_scores`. The model runs in eval
    mode; its own mode is restored after.
    """
    _check_batch(model, images, labels)
    patches = patchify(images, patch_size)  # (b, P, C p p)
    b, P = patches.shape[:2]
    _validate.no_nan("scores", _validate.as_float_tensor("scores", scores, ndim=2))
    if tuple(scores.shape) != (b, P):
        raise ValueError(
            f"scores must be (batch, patches) = {(b, P)} for these images, "
            f"got {tuple(scores.shape)}"
        )
    filler = _fill_patches(fill, images, patch_size)  # (1, P, C p p)
    order = scores.to(images.device).argsort(dim=-1, descending=True, stable=True)
    place = order.argsort(dim=-1)  # (b, P): where each patch comes in the order
    steps = torch.arange(P + 1, device=images.device)
    hide = (place[:, None, :] < steps[None, :, None])[..., None]  # (b, P + 1, P, 1)
    filled = torch.where(hide, filler[:, None], patches[:, None])  # (b, P + 1, P, C p p)
    _, C, H, W = images.shape
    copies = unpatchify(filled.reshape(b * (P + 1), P, -1), patch_size, H, W)
    with _validate.eval_mode(model):
        return _true_class_probability(model, copies.reshape(b, P + 1, C, H, W), labels)


def deletion_area(curve: torch.Tensor) -> torch.Tensor:
    """The area under each deletion curve (batch, steps) -> (batch,), x running from 0 to 1.

    The trapezoid rule over equally spaced steps: 1 for a probability that
    stays at 1 until everything is filled, near 0 when the first patch kills
    it. Smaller is a better order.
    """
    _validate.tensor("curve", curve, ndim=2, floating=True)
    if curve.shape[1] < 2:
        raise ValueError(f"curve needs at least 2 steps per row, got shape {tuple(curve.shape)}")
    return ((curve[:, 1:] + curve[:, :-1]) / 2).mean(dim=-1)


def ink_scores(images: torch.Tensor, patch_size: int) -> torch.Tensor:
    """The ink in each patch: images (batch, C, H, W) -> the sum of each patch's pixels (batch, patches)."""
    _check_images(images)
    return patchify(images, patch_size).sum(dim=-1)


def change_scores(
    images: torch.Tensor, patch_size: int, fill: float | torch.Tensor = 0.0
) -> torch.Tensor:
    """How much replacing each patch by ``fill`` changes it: (batch, C, H, W) -> (batch, patches).

    Entry (i, j) is the sum over patch j's pixels of |image i - fill|: the size
    of the change that occlusion with this fill makes to the image, computed
    without the model. ``fill`` is as in :func:`occlusion_scores` (a number,
    or one (C, H, W) image whose patch j replaces patch j). For the zero fill
    and images without negative pixels it is :func:`ink_scores`: ink is the
    trivial baseline of the zero fill, and this map the trivial baseline of
    any fill. A patch that already equals the fill scores 0.
    """
    _check_images(images)
    tokens = patchify(images, patch_size)  # (b, P, C p p)
    filler = _fill_patches(fill, images, patch_size)  # (1, P, C p p)
    return (tokens - filler).abs().sum(dim=-1)


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
    defined = (scale > 0) & ~a.isnan().any(-1) & ~b.isnan().any(-1)  # NaN cannot be ranked
    return torch.where(defined, out, torch.full_like(out, float("nan")))


def partial_spearman(a: torch.Tensor, b: torch.Tensor, given: torch.Tensor) -> torch.Tensor:
    """The Spearman correlation of a and b (batch, n) with ``given`` held fixed, per row.

    The partial correlation of the ranks: (r_ab - r_ag r_bg) / sqrt((1 - r_ag^2)(1 - r_bg^2)),
    where r is :func:`spearman`. It is what is left of the agreement of a and b
    once what each shares with ``given`` is taken out (the correlation of the
    parts of their ranks that a straight line in ``given``'s ranks cannot
    predict). NaN where either correlation with ``given`` is +-1 or undefined.
    """
    _validate.as_float_tensor("given", given, ndim=2)
    r_ab = spearman(a, b)
    if given.shape != a.shape:
        raise ValueError(
            f"given must have the shape of a and b, got {tuple(given.shape)} and {tuple(a.shape)}"
        )
    r_ag, r_bg = spearman(a, given), spearman(b, given)
    scale = ((1 - r_ag.square()) * (1 - r_bg.square())).sqrt()
    out = (r_ab - r_ag * r_bg) / scale
    return torch.where(scale > 1e-12, out, torch.full_like(out, float("nan")))


METHODS = ("raw attention", "rollout", "ink", "random")


@torch.no_grad()
def explanation_scores(
    model: nn.Module,
    images: torch.Tensor,
    labels: torch.Tensor,
    seed: int = 0,
    fill: float | torch.Tensor = 0.0,
) -> dict[str, torch.Tensor]:
    """Every explanation of the chapter for each image, as (batch, patches) scores.

    ``model`` is a :class:`attnbook.vit.TinyViT` and ``seed`` an integer >= 0. Keys: ``"raw attention"``
    (:func:`cls_attention` of the last block), ``"rollout"`` (row 0 of
    :func:`attention_rollout` over the patches), ``"ink"``, ``"random"``
    (uniform random numbers drawn from ``seed``, the chance level) and
    ``"occlusion"`` (:func:`occlusion_scores` with ``fill``). Every score is
    on the images' device. The model runs in eval mode; its own mode is restored after.
    """
    _validate.module("model", model, TinyViT)
    _check_batch(model, images, labels)
    generator = torch.Generator().manual_seed(_seed(seed))
    with _validate.eval_mode(model):
        model(images)
    weights = [w.detach() for w in model.attention_weights]
    random = torch.rand(images.shape[0], model.num_patches, generator=generator)
    return {
        "raw attention": cls_attention(weights[-1]),
        "rollout": attention_rollout(weights)[:, 0, 1:],
        "ink": ink_scores(images, model.patch_size),
        "random": random.to(device=images.device, dtype=images.dtype),
        "occlusion": occlusion_scores(model, images, labels, model.patch_size, fill=fill),
    }


def _check_scores(scores: object) -> dict[str, torch.Tensor]:
    """:func:`explanation_scores`' result: a (images, patches >= 2) tensor per scoring."""
    if not isinstance(scores, Mapping):
        raise TypeError(
            f"scores must be a dict as explanation_scores returns, got {_validate._describe(scores)}"
        )
    missing = [k for k in ("occlusion", *METHODS) if k not in scores]
    if missing:
        raise ValueError(f"scores must hold 'occlusion' and each of {METHODS}, missing {missing}")
    out = {
        k: _validate.as_float_tensor(f"scores[{k!r}]", scores[k], ndim=2)
        for k in ("occlusion", *METHODS)
    }
    shape = out["occlusion"].shape
    for k in ("occlusion", *METHODS):
        if out[k].shape != shape or shape[1] < 2:
            raise ValueError(
                f"scores[{k!r}] must be (images, patches) with patches >= 2 and the shape of "
                f"scores['occlusion'] {tuple(shape)}, got shape {tuple(out[k].shape)}"
            )
    return out


def _mean_defined(rho: torch.Tensor, what: str) -> float:
    """The mean of the defined (not NaN) correlations; refused when no image has one."""
    defined = rho[~rho.isnan()]
    if defined.numel() == 0:
        raise ValueError(
            f"scores: the {what!r} correlation with occlusion is undefined on every image "
            f"(a constant scoring has no rank correlation), over {rho.numel()} images"
        )
    return float(defined.mean())


def agreement(scores: dict[str, torch.Tensor]) -> dict[str, float]:
    """What the chapter measures of :func:`explanation_scores`' result.

    For each method in :data:`METHODS`: its mean Spearman correlation with
    occlusion over the images (``method``; images where either scoring is
    constant are left out), the same with ink held fixed (``"method, given
    ink"``, :func:`partial_spearman`; not for ink itself), and the fraction of
    images whose top patch is occlusion's top patch (``"method, top match"``;
    chance is 1 / patches). ``"peak"``: the mean over images of the largest
    raw attention weight on a patch (1 / patches if uniform).

    ``scores`` must hold a (images, patches) tensor, patches >= 2, for
    occlusion and each method. A mean over no image (every image left out, as
    when occlusion's scores are constant) is refused by name, not returned as NaN.
    """
    scores = _check_scores(scores)
    truth = scores["occlusion"]
    out = {}
    for method in METHODS:
        out[method] = _mean_defined(spearman(scores[method], truth), method)
    for method in METHODS:
        if method != "ink":
            rho = partial_spearman(scores[method], truth, scores["ink"])
            out[f"{method}, given ink"] = _mean_defined(rho, f"{method}, given ink")
    for method in METHODS:
        match = scores[method].argmax(-1) == truth.argmax(-1)
        out[f"{method}, top match"] = float(match.double().mean())
    out["peak"] = float(scores["raw attention"].max(dim=-1).values.mean())
    return out
