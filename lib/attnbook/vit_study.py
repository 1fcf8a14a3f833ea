"""Chapter 15's measurements: one training seed of the tiny ViT, its baselines, and the sweep.

* :data:`SETTING`: the training setting the chapter measures.
* :func:`run_seed`: train the ViT with one seed and measure it: test accuracy,
  and, on the first :data:`NUM_EXPLAINED` test images, for each occlusion
  fill in :func:`fills`, how well each explanation agrees with occlusion (see
  :func:`attnbook.explain.agreement`), the same for the maps of the untrained
  model, and the area under each map's deletion curve (see :func:`measure`);
  also the [CLS] maps of the first block and of single heads, and what the
  learned positions encode (:func:`distance_correlation`).
* :func:`baselines`: logistic regression and one-hidden-layer MLPs
  (scikit-learn's, imported here only) on the same split, and a small CNN and
  an MLP trained with the ViT's own recipe.
* :func:`load_sweep`: the stored record of every seed (``vit_data/sweep.json``,
  written by ``make vit-sweep``, i.e. ``tools/vit_sweep.py``).
"""

from __future__ import annotations

import json
import math
from importlib import resources

import torch

from . import _validate
from .digits import DigitsSplit
from .explain import (
    METHODS,
    agreement,
    attention_rollout,
    change_scores,
    cls_attention,
    deletion_area,
    deletion_curve,
    explanation_scores,
    partial_spearman,
    spearman,
)
from .vit import (
    TinyViT,
    _seed,
    accuracy,
    build_cnn,
    build_mlp,
    build_vit,
    position_similarity,
    train_vit,
)

__all__ = [
    "SETTING",
    "NUM_EXPLAINED",
    "MLP_SIZES",
    "ORDERS",
    "fills",
    "DISTANCES",
    "distance_correlation",
    "neighbour_swap",
    "measure",
    "run_seed",
    "baselines",
    "load_sweep",
    "records_agree",
]

SETTING = {"epochs": 40, "batch_size": 64, "lr": 3e-3, "weight_decay": 0.05}
NUM_EXPLAINED = 100
MLP_SIZES = (64, 128)


ORDERS = (*METHODS, "change", "untrained rollout", "occlusion, zero", "occlusion, mean image")


def fills(data: DigitsSplit) -> dict[str, float | torch.Tensor]:
    """The two occlusion fills the chapter compares: ``"zero"`` (blank paper) and
    ``"mean image"`` (each patch replaced by the same patch of the mean training image)."""
    _check_data(data)
    return {"zero": 0.0, "mean image": data.X_train.mean(dim=0)}


DISTANCES = ("straight", "city block")


def distance_correlation(similarity: torch.Tensor, distance: str = "straight") -> float:
    """Do patches near each other on the grid have similar position vectors?

    ``similarity`` is (g, g, g, g), as :func:`attnbook.vit.position_similarity`
    returns it. The result is the Spearman correlation, over every pair of two
    different patches, of their similarity with their distance on the grid:
    ``"straight"`` (the straight-line distance between the patches' centres,
    in patches) or ``"city block"`` (rows apart plus columns apart). Near -1:
    the nearer two patches, the more alike their positions (the pattern of the
    ViT paper's Fig. 7); near 0: no relation; positive: neighbours less alike.
    A ``similarity`` that is the same for every pair (a model whose position
    vectors are all alike) leaves nothing to rank: a ``ValueError``, not NaN.
    """
    _validate.tensor("similarity", similarity, ndim=4, floating=True)
    _validate.no_nan("similarity", similarity)
    g = similarity.shape[0]
    if g < 2 or tuple(similarity.shape) != (g, g, g, g):
        raise ValueError(
            "similarity must have shape (g, g, g, g) with g >= 2, one (g, g) map per patch, "
            f"got {tuple(similarity.shape)}"
        )
    if distance not in DISTANCES:
        raise ValueError(f"distance must be one of {DISTANCES}, got {distance!r}")
    cells = torch.arange(g * g, device=similarity.device)
    rows, cols = cells // g, cells % g
    dr = (rows[:, None] - rows[None]).double()
    dc = (cols[:, None] - cols[None]).double()
    apart = dr.abs() + dc.abs() if distance == "city block" else dr.hypot(dc)
    i, j = torch.triu_indices(g * g, g * g, 1, device=similarity.device)  # each pair once
    flat = similarity.reshape(g * g, g * g).double()
    pairs = flat[i, j]
    if bool((pairs == pairs[0]).all()):
        raise ValueError(
            f"similarity is {float(pairs[0]):g} for every pair of patches: nothing to rank "
            "against the distance (are all the position vectors alike?)"
        )
    return float(spearman(pairs[None], apart[i, j][None])[0])


def _check_data(data: object) -> DigitsSplit:
    if not isinstance(data, DigitsSplit):
        raise TypeError(f"data must be a DigitsSplit, got {type(data).__name__}")
    return data


def measure(model: TinyViT, untrained: TinyViT, data: DigitsSplit, seed: int) -> dict[str, float]:
    """How the maps of a trained ViT agree with occlusion, on the first :data:`NUM_EXPLAINED` test images.

    For each fill of :func:`fills` (keys prefixed ``"zero: "`` or ``"mean image: "``):
    the entries of :func:`attnbook.explain.agreement`; ``"untrained raw
    attention"`` and ``"untrained rollout"``, the mean Spearman correlation
    of the *untrained* model's maps with the trained model's occlusion (a
    model-randomisation control); and ``"deletion <order>"``, the mean area
    under the trained model's deletion curve (:func:`attnbook.explain.deletion_curve`)
    for each order in :data:`ORDERS` (smaller: the order finds what the
    model uses sooner).

    The fill's own trivial baseline, per fill: ``"change"``, the mean Spearman
    correlation of :func:`attnbook.explain.change_scores` (the size of the
    change the fill makes to each patch; the ink, for the zero fill) with
    occlusion, and ``"change, top match"``; ``"<map>, given change"``, the
    mean partial correlation (:func:`attnbook.explain.partial_spearman`) of
    ``"raw attention"``, ``"rollout"`` and ``"untrained rollout"`` with
    occlusion given that map; and ``"rollout vs change"``, the mean Spearman
    correlation of rollout with the change map itself.

    Also ``"fills agree"``: the mean Spearman correlation
    of the two occlusions, and ``"misread"``: how many of the images the
    model misclassifies (each is still explained for its true class).

    The other choices of attention map, per fill: ``"raw attention, block 0"``
    (the first block's [CLS] map, heads averaged) and ``"raw attention, head
    h"`` (one head of the last block alone), each its mean Spearman
    correlation with occlusion. And what the positions encode:
    ``"positions: similarity vs <distance>"``, :func:`distance_correlation`
    of the trained model for each distance in :data:`DISTANCES`, and of the
    untrained one (``"positions: untrained, similarity vs straight"``); and
    ``"accuracy, positions averaged"``, the trained model's test accuracy on
    all of ``data.X_test`` with every patch given the mean of the patches'
    position vectors (no position information left), and ``"accuracy,
    positions swapped with a neighbour"``, the same with the position vectors
    of each two patches side by side in a row (columns 0 and 1, 2 and 3, ...)
    swapped: the same 16 vectors, each one patch away from where it was
    learned (see :func:`neighbour_swap`).
    """
    _validate.module("model", model, TinyViT)
    _validate.module("untrained", untrained, TinyViT)
    _check_data(data)
    _seed(seed)
    shape = ("image_size", "patch_size", "channels", "num_patches")
    if any(getattr(untrained, a) != getattr(model, a) for a in shape):
        described = {
            m: ", ".join(f"{a}={getattr(x, a)}" for a in shape[:3])
            for m, x in (("model", model), ("untrained", untrained))
        }
        raise ValueError(
            f"untrained must cut images as model does (its maps are compared patch by patch), "
            f"got model with {described['model']} and untrained with {described['untrained']}"
        )
    _validate.model_images(model, "data.X_test", data.X_test)
    images, labels = data.X_test[:NUM_EXPLAINED], data.y_test[:NUM_EXPLAINED]
    p = model.patch_size
    with torch.no_grad(), _validate.eval_mode(untrained):
        untrained(images)
        cold_weights = [w.detach() for w in untrained.attention_weights]
        misread = int((model(images).argmax(-1) != labels).sum())
    cold = {
        "untrained raw attention": cls_attention(cold_weights[-1]),
        "untrained rollout": attention_rollout(cold_weights)[:, 0, 1:],
    }
    record: dict[str, float] = {"misread": misread}
    runs = {
        name: explanation_scores(model, images, labels, seed, fill)
        for name, fill in fills(data).items()
    }
    occlusions = {f"occlusion, {name}": run["occlusion"] for name, run in runs.items()}
    for (name, fill), scores in zip(fills(data).items(), runs.values(), strict=True):
        for key, value in agreement(scores).items():
            record[f"{name}: {key}"] = value
        for key, value in cold.items():
            rho = spearman(value, scores["occlusion"])
            record[f"{name}: {key}"] = float(rho[~rho.isnan()].mean())
        change = change_scores(images, p, fill)
        record[f"{name}: change"] = _mean_rho(change, scores["occlusion"])
        top = change.argmax(-1) == scores["occlusion"].argmax(-1)
        record[f"{name}: change, top match"] = float(top.double().mean())
        given = {"raw attention": scores["raw attention"], "rollout": scores["rollout"]}
        given["untrained rollout"] = cold["untrained rollout"]
        for key, value in given.items():
            rho = partial_spearman(value, scores["occlusion"], change)
            record[f"{name}: {key}, given change"] = float(rho[~rho.isnan()].mean())
        record[f"{name}: rollout vs change"] = _mean_rho(scores["rollout"], change)
        orders = {**scores, "change": change, **cold, **occlusions}
        for order in ORDERS:
            curve = deletion_curve(model, images, labels, orders[order], p, fill=fill)
            record[f"{name}: deletion {order}"] = float(deletion_area(curve).mean())
    rho = spearman(*occlusions.values())
    record["fills agree"] = float(rho[~rho.isnan()].mean())
    record.update(_other_maps(model, images, runs))
    record.update(_positions(model, untrained, data))
    return record


def _mean_rho(a: torch.Tensor, b: torch.Tensor) -> float:
    rho = spearman(a, b)
    return float(rho[~rho.isnan()].mean())


def _other_maps(
    model: TinyViT, images: torch.Tensor, runs: dict[str, dict[str, torch.Tensor]]
) -> dict[str, float]:
    """The first block's [CLS] map and each head of the last block, against each occlusion."""
    with torch.no_grad(), _validate.eval_mode(model):
        model(images)
    first, last = model.attention_weights[0].detach(), model.attention_weights[-1].detach()
    maps = {"raw attention, block 0": cls_attention(first)}
    for h in range(last.shape[1]):
        maps[f"raw attention, head {h}"] = cls_attention(last[:, h : h + 1])
    return {
        f"{name}: {key}": _mean_rho(value, run["occlusion"])
        for name, run in runs.items()
        for key, value in maps.items()
    }


def neighbour_swap(grid: int) -> torch.Tensor:
    """The patch order that swaps each two patches side by side: (grid * grid,) indices.

    Patches are numbered row by row on a ``grid`` x ``grid`` grid; entry k is
    the patch whose position vector patch k receives: columns 0 and 1 swap,
    2 and 3, and so on (a last odd column stays). Applying it twice gives
    every patch its own again.
    """
    if isinstance(grid, bool) or not isinstance(grid, int) or grid < 1:
        raise ValueError(f"grid must be a positive int, got {grid!r}")
    if grid >= 2**31:  # grid * grid positions would overflow inside torch
        raise ValueError(f"grid must be below 2**31, got {grid!r}")
    cols = torch.arange(grid)
    partner = torch.where(cols % 2 == 0, cols + 1, cols - 1)
    partner = torch.where(partner < grid, partner, cols)  # an odd last column stays
    return (torch.arange(grid)[:, None] * grid + partner[None]).reshape(-1)


def _positions(model: TinyViT, untrained: TinyViT, data: DigitsSplit) -> dict[str, float]:
    """What the learned positions encode, and what the model loses without them."""
    out = {
        f"positions: similarity vs {d}": distance_correlation(position_similarity(model), d)
        for d in DISTANCES
    }
    cold = position_similarity(untrained)
    out["positions: untrained, similarity vs straight"] = distance_correlation(cold)
    saved = model.positions.detach().clone()
    try:
        with torch.no_grad():
            model.positions[:, 1:] = saved[:, 1:].mean(dim=1, keepdim=True)
        out["accuracy, positions averaged"] = accuracy(model, data.X_test, data.y_test)
        swap = neighbour_swap(math.isqrt(model.num_patches))
        with torch.no_grad():
            model.positions[:, 1:] = saved[:, 1:][:, swap]  # [CLS]'s position stays
        key = "accuracy, positions swapped with a neighbour"
        out[key] = accuracy(model, data.X_test, data.y_test)
    finally:
        with torch.no_grad():
            model.positions.copy_(saved)
    return out


def run_seed(data: DigitsSplit, seed: int) -> tuple[TinyViT, dict[str, float], list[float]]:
    """Train the chapter's ViT with ``seed`` (:data:`SETTING`) and measure it.

    Returns the trained model, a record and each epoch's mean training loss.
    The record holds ``"accuracy"`` (test, a fraction), ``"final loss"`` (the
    last epoch's mean training loss) and the entries of :func:`measure`.
    """
    _validate.module("data", data, DigitsSplit)
    _seed(seed)  # both refused before any training
    model = build_vit(seed)
    losses = train_vit(model, data.X_train, data.y_train, seed=seed, **SETTING)
    record = {"accuracy": accuracy(model, data.X_test, data.y_test), "final loss": losses[-1]}
    record.update(measure(model, build_vit(seed), data, seed))
    return model, record, losses


def baselines(data: DigitsSplit, seed: int) -> dict[str, float]:
    """Test accuracy of other models on the same pixels.

    ``LogisticRegression(max_iter=5000)`` (deterministic: the same for every
    seed) and ``MLPClassifier(hidden_layer_sizes=(h,), max_iter=2000,
    random_state=seed)`` for h in :data:`MLP_SIZES` (ReLU, Adam,
    scikit-learn's defaults otherwise), on the 64 pixels of each image; and
    ``"CNN (ViT recipe)"``, ``"CNN 16 (ViT recipe)"`` (its first layer 16
    filters wide instead of 32) and ``"MLP 128 (ViT recipe)"``,
    :func:`attnbook.vit.build_cnn` and :func:`attnbook.vit.build_mlp` trained
    with :func:`attnbook.vit.train_vit` and :data:`SETTING`, exactly as the ViT.
    """
    _validate.module("data", data, DigitsSplit)
    if _seed(seed) >= 2**32:  # scikit-learn's random_state is 32-bit
        raise ValueError(f"seed must be below 2**32, got {seed!r}")
    from sklearn.linear_model import LogisticRegression
    from sklearn.neural_network import MLPClassifier

    X_train = data.X_train.reshape(len(data.X_train), -1).numpy()
    X_test = data.X_test.reshape(len(data.X_test), -1).numpy()
    y_train, y_test = data.y_train.numpy(), data.y_test.numpy()
    out = {
        "logistic regression": float(
            LogisticRegression(max_iter=5000).fit(X_train, y_train).score(X_test, y_test)
        )
    }
    for h in MLP_SIZES:
        mlp = MLPClassifier(hidden_layer_sizes=(h,), max_iter=2000, random_state=seed)
        out[f"MLP {h}"] = float(mlp.fit(X_train, y_train).score(X_test, y_test))
    nets = {"CNN": build_cnn(seed), "CNN 16": build_cnn(seed, width=16), "MLP 128": build_mlp(seed)}
    for name, net in nets.items():
        train_vit(net, data.X_train, data.y_train, seed=seed, **SETTING)
        out[f"{name} (ViT recipe)"] = accuracy(net, data.X_test, data.y_test)
    return out


def load_sweep() -> dict:
    """The stored sweep: ``{"setting": ..., "seeds": {"0": record, ...}, "baselines": {...}}``.

    ``seeds`` maps each seed (a string) to the record :func:`run_seed` returned;
    ``baselines`` maps each seed to :func:`baselines`' result.
    """
    text = resources.files("attnbook.vit_data").joinpath("sweep.json").read_text("utf-8")
    return json.loads(text)


def records_agree(live: dict[str, float], stored: dict[str, float]) -> list[str]:
    """The entries where a live run of a seed differs from its stored record, as sentences.

    Training is chaotic in its last bits: the same seed on a CPU with other
    vector instructions (``ATEN_CPU_CAPABILITY=default`` against AVX-512, say)
    or another vendor's kernels ends a few test images apart, and its mean
    correlations up to about 0.1 apart. Measured on seed 0 on an Intel Xeon
    with AVX-512 (native, ``avx2`` and ``default``, one thread each): accuracy
    within 3 images, misread images within 1, mean correlations of the head
    average within 0.062, a deletion area within 0.074, a top-patch match
    within 0.12 and a single last-block head's mean correlation within 0.17
    (head 3 under the zero fill: -0.34 to -0.04 across the three, -0.17 in the
    record): one head's map moves more than their average. So accuracy may
    differ by 7 test images in 450 (and the misread explained images by 3),
    each mean correlation by 0.15, a single head's by 0.4, the peak by 0.06, a
    top-patch match by 0.2 and a deletion area by 0.1; anything more is a drift
    between the code and the stored file. The fill's change map
    (:func:`attnbook.explain.change_scores`) and the partial correlations given
    it keep within these (measured on seed 0 on an Intel Xeon with AMX,
    native, ``avx2`` and ``default``: mean and partial correlations within
    0.046, its top-patch match within 0.04, its deletion area within 0.025).
    The accuracies of a crippled model (positions averaged, near 30 %;
    positions swapped with a neighbour, near 10 %) move more, by 0.15
    (measured on seed 0: 0.064 on the first Xeon, 0.093 and 0.049 on the
    second). A single head's mean correlation drifted by 0.30 on the second
    Xeon too (head 3 under the zero fill: -0.34 natively, the value stored,
    and -0.04 with ``avx2`` on four threads), so 0.3 would sit on the edge:
    its tolerance is 0.4. A key's tolerance is that of the first of these names it
    contains (``"zero: rollout, top match"`` is a top-patch match, ``"zero:
    raw attention, head 3"`` a single head).
    """
    tolerance = {
        "accuracy, positions": 0.15,
        "accuracy": 7.5 / 450,
        "final loss": 0.01,
        "misread": 3,
        "peak": 0.06,
        "head": 0.4,
        "top match": 0.2,
        "deletion": 0.1,
    }
    for name, record in (("live", live), ("stored", stored)):
        if not isinstance(record, dict):
            raise TypeError(f"{name} must be a dict of numbers, got {record!r}")
    missing = sorted(set(stored) - set(live))
    if missing:
        raise ValueError(f"live must hold every entry of stored, missing {missing}")
    problems = []
    for key, value in stored.items():
        allowed = next((tolerance[k] for k in tolerance if k in key), 0.15)
        # A NaN compares as "not too far" from anything: name it as a problem.
        if not math.isfinite(live[key]) or abs(live[key] - value) > allowed:
            problems.append(f"{key}: live {live[key]:.4f}, stored {value:.4f}")
    return problems
