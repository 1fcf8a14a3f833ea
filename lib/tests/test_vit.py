"""Tests of chapter 15's library: the digits, patches, the tiny ViT, explanations, the sweep."""

from __future__ import annotations

import builtins
import importlib
import json
import math
import sys
from itertools import permutations
from pathlib import Path

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from attnbook import digits, explain, patches, vit, vit_study

LIB = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------- digits and scikit-learn


def test_the_split_has_the_documented_sizes_and_range():
    pytest.importorskip("sklearn")
    data = digits.load_digits_split()
    assert data.X_train.shape == (1347, 1, 8, 8) and data.X_test.shape == (450, 1, 8, 8)
    assert data.X_train.dtype == torch.float32 and data.y_test.dtype == torch.int64
    assert float(data.X_train.min()) == 0.0 and float(data.X_train.max()) == 1.0
    # Stratified: every digit has the same share (to one image) in both parts.
    train = torch.bincount(data.y_train, minlength=10) / 1347
    test = torch.bincount(data.y_test, minlength=10) / 450
    assert float((train - test).abs().max()) < 1.5 / 450


def _without_sklearn(monkeypatch):
    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name == "sklearn" or name.startswith("sklearn."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return real_import(name, *args, **kwargs)

    for name in list(sys.modules):
        if name == "sklearn" or name.startswith("sklearn."):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(builtins, "__import__", fake_import)


def test_the_library_imports_without_sklearn_and_says_how_to_install_it(monkeypatch):
    import attnbook

    _without_sklearn(monkeypatch)
    for name in ("attnbook.digits", "attnbook.vit", "attnbook.explain", "attnbook.vit_study"):
        monkeypatch.delitem(sys.modules, name, raising=False)
        # the import below rebinds attnbook.<module>: restore it too, or later tests
        # would mix the fresh module's classes (a fresh TinyViT) with the old ones
        short = name.split(".")[1]
        monkeypatch.setattr(attnbook, short, getattr(attnbook, short), raising=False)
        importlib.import_module(name)
    fresh = sys.modules["attnbook.digits"]
    with pytest.raises(ModuleNotFoundError, match=r"scikit-learn.*pip install scikit-learn"):
        fresh.load_digits_split()


# ---------------------------------------------------------------- patches


def _reference_patchify(images, p):
    """A loop over patch rows, patch columns, channels and pixels."""
    b, C, H, W = images.shape
    out = torch.empty(b, (H // p) * (W // p), C * p * p, dtype=images.dtype)
    for r in range(H // p):
        for c in range(W // p):
            k = 0
            for ch in range(C):
                for i in range(p):
                    for j in range(p):
                        out[:, r * (W // p) + c, k] = images[:, ch, r * p + i, c * p + j]
                        k += 1
    return out


@given(
    st.integers(1, 3), st.integers(1, 3), st.integers(1, 3), st.integers(1, 3), st.integers(1, 3)
)
def test_patchify_matches_a_loop_and_unpatchify_inverts_it(batch, channels, rows, cols, p):
    g = torch.Generator().manual_seed(batch * 100 + channels * 10 + p)
    images = torch.randn(batch, channels, rows * p, cols * p, generator=g)
    before = images.clone()
    out = patches.patchify(images, p)
    assert torch.equal(out, _reference_patchify(images, p))
    assert torch.equal(patches.unpatchify(out, p, rows * p, cols * p), images)
    assert torch.equal(images, before)


def test_a_linear_map_of_the_patches_is_a_strided_convolution():
    g = torch.Generator().manual_seed(0)
    images = torch.randn(2, 3, 8, 6, generator=g)
    conv = torch.nn.Conv2d(3, 5, kernel_size=2, stride=2)
    expected = conv(images).flatten(2).transpose(1, 2)  # (b, patches, 5)
    got = patches.patchify(images, 2) @ conv.weight.reshape(5, -1).T + conv.bias
    torch.testing.assert_close(got, expected)


def test_bad_shapes_name_the_shape_and_the_patch_size():
    with pytest.raises(ValueError, match=r"\(1, 1, 8, 7\).*patch_size=2"):
        patches.patchify(torch.zeros(1, 1, 8, 7), 2)
    with pytest.raises(ValueError, match=r"4-D, got shape \(8, 8\)"):
        patches.patchify(torch.zeros(8, 8), 2)
    with pytest.raises(ValueError, match="patch_size"):
        patches.patchify(torch.zeros(1, 1, 8, 8), 0)
    with pytest.raises(ValueError, match=r"\(1, 15, 4\).*patch_size=2"):
        patches.unpatchify(torch.zeros(1, 15, 4), 2, 8, 8)
    with pytest.raises(ValueError, match="multiples of patch_size=3"):
        patches.unpatchify(torch.zeros(1, 4, 9), 3, 8, 8)
    with pytest.raises(TypeError, match="images must be a torch.Tensor"):
        patches.patchify([[1.0]], 1)


# ---------------------------------------------------------------- the model


def test_the_chapter_model_has_69k_parameters_and_keeps_its_weights():
    model = vit.build_vit(0)
    assert sum(p.numel() for p in model.parameters()) == 69_194
    logits = model(torch.rand(3, 1, 8, 8))
    assert logits.shape == (3, 10)
    weights = model.attention_weights
    assert len(weights) == 2 and all(w.shape == (3, 4, 17, 17) for w in weights)
    torch.testing.assert_close(weights[0].sum(-1), torch.ones(3, 4, 17))


def test_the_baseline_networks_have_their_documented_sizes_and_seeds():
    cnn, mlp = vit.build_cnn(0), vit.build_mlp(0)
    assert sum(p.numel() for p in cnn.parameters()) == 28_714
    assert sum(p.numel() for p in vit.build_cnn(0, width=16).parameters()) == 23_946
    assert sum(p.numel() for p in mlp.parameters()) == 64 * 128 + 128 + 128 * 10 + 10
    images = torch.rand(5, 1, 8, 8)
    assert cnn(images).shape == (5, 10) and mlp(images).shape == (5, 10)
    state = torch.random.get_rng_state()
    assert torch.equal(vit.build_cnn(2)[0].weight, vit.build_cnn(2)[0].weight)
    assert not torch.equal(vit.build_cnn(2)[0].weight, vit.build_cnn(3)[0].weight)
    assert torch.equal(torch.random.get_rng_state(), state)
    with pytest.raises(ValueError, match="seed must be an integer"):
        vit.build_cnn(-1)
    with pytest.raises(ValueError, match="hidden"):
        vit.build_mlp(0, hidden=0)


def test_build_vit_is_deterministic_and_leaves_the_global_random_state_alone():
    state = torch.random.get_rng_state()
    a, b = vit.build_vit(3), vit.build_vit(3)
    assert torch.equal(torch.random.get_rng_state(), state)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    assert not torch.equal(a.positions, vit.build_vit(4).positions)


def test_the_model_is_the_transformer_blocks_on_embedded_patches():
    """The forward pass, rebuilt from its parts by hand."""
    model = vit.build_vit(1, num_layers=1).eval()
    images = torch.rand(2, 1, 8, 8)
    tokens = patches.patchify(images, 2) @ model.embed.weight.T + model.embed.bias
    X = torch.cat([model.cls.expand(2, 1, 64), tokens], 1) + model.positions
    X = model.blocks[0](X)  # the final LayerNorm is still at its initial gain 1, shift 0
    expected = model.head(torch.nn.functional.layer_norm(X[:, 0], (64,), eps=1e-5))
    torch.testing.assert_close(model(images), expected)


def test_bad_model_arguments_and_inputs_are_named():
    with pytest.raises(ValueError, match="patch_size=3 must divide image_size=8"):
        vit.TinyViT(patch_size=3)
    with pytest.raises(ValueError, match=r"\(batch, 1, 8, 8\), got \(2, 1, 6, 6\)"):
        vit.build_vit(0)(torch.zeros(2, 1, 6, 6))
    with pytest.raises(ValueError, match="seed must be an integer >= 0"):
        vit.build_vit(-1)
    with pytest.raises(ValueError, match="as many examples"):
        vit.train_vit(vit.build_vit(0), torch.zeros(3, 1, 8, 8), torch.zeros(2, dtype=torch.long))


def test_training_reduces_the_loss_and_is_reproducible():
    g = torch.Generator().manual_seed(0)
    # Class 1: a bright 2x2 patch somewhere; class 0: faint noise only.
    y = torch.arange(64) % 2
    where = torch.randint(0, 16, (64,), generator=g)
    bright = torch.nn.functional.one_hot(where, 16)[..., None].float().expand(64, 16, 4)
    X = 0.1 * torch.rand(64, 1, 8, 8, generator=g)
    X = X + y[:, None, None, None] * patches.unpatchify(bright, 2, 8, 8)
    runs = []
    for _ in range(2):
        model = vit.build_vit(0, num_classes=2, num_layers=1)
        runs.append(vit.train_vit(model, X, y, epochs=20, batch_size=16, seed=0))
    assert runs[0] == runs[1]
    assert runs[0][-1] < 0.5 * runs[0][0]
    assert not model.training
    assert vit.accuracy(model, X, y) > 0.9


# ---------------------------------------------------------------- explanations


def _brute_force_rollout(weights):
    """Rollout written out entry by entry: residual mix, row sums, product in order."""
    L, b, h, n, _ = weights.shape
    out = torch.zeros(b, n, n, dtype=torch.float64)
    for image in range(b):
        chain = [[float(i == j) for j in range(n)] for i in range(n)]  # before any block
        for layer in range(L):
            mixed = []
            for i in range(n):
                row = [
                    sum(float(weights[layer, image, head, i, j]) for head in range(h)) / h
                    + (1.0 if i == j else 0.0)
                    for j in range(n)
                ]
                total = sum(row)
                mixed.append([x / total for x in row])
            # token i after this block draws mixed[i][k] on token k, which drew chain[k][j] on j
            chain = [
                [sum(mixed[i][k] * chain[k][j] for k in range(n)) for j in range(n)]
                for i in range(n)
            ]
        out[image] = torch.tensor(chain, dtype=torch.float64)
    return out


@pytest.mark.parametrize("layers", [1, 2, 3])
def test_rollout_agrees_with_a_brute_force_reference(layers):
    g = torch.Generator().manual_seed(layers)
    weights = torch.softmax(3 * torch.randn(layers, 2, 3, 5, 5, generator=g), -1)
    got = explain.attention_rollout(weights)
    torch.testing.assert_close(got.double(), _brute_force_rollout(weights))
    torch.testing.assert_close(explain.attention_rollout(list(weights)), got)
    torch.testing.assert_close(got.sum(-1), torch.ones(2, 5))


def test_rollout_of_uniform_attention_and_bad_weights():
    n = 4
    weights = torch.full((2, 1, 1, n, n), 1 / n)
    half = 0.5 * torch.eye(n) + 0.5 / n
    torch.testing.assert_close(explain.attention_rollout(weights)[0], half @ half)
    with pytest.raises(ValueError, match="square"):
        explain.attention_rollout(torch.ones(1, 1, 1, 3, 4))
    with pytest.raises(ValueError, match="one shape"):
        explain.attention_rollout([torch.ones(1, 1, 3, 3), torch.ones(1, 1, 4, 4)])
    with pytest.raises(TypeError, match="non-empty list"):
        explain.attention_rollout([])


def test_cls_attention_drops_cls_and_renormalises():
    w = torch.tensor([[[[0.5, 0.25, 0.25, 0.0]] * 4, [[0.0, 0.5, 0.0, 0.5]] * 4]])  # (1, 2, 4, 4)
    torch.testing.assert_close(explain.cls_attention(w), torch.tensor([[0.75, 0.25, 0.5]]) / 1.5)


def test_cls_attention_refuses_a_row_with_no_patch_weight_and_nan():
    # Renormalising a [CLS] row that puts all its weight on [CLS] divides 0 by 0:
    # the map is undefined, and it is refused by name rather than returned as NaN.
    w = torch.zeros(2, 1, 3, 3)
    w[:, :, :, 0] = 1.0
    w[1, 0, 0] = torch.tensor([0.5, 0.25, 0.25])
    with pytest.raises(ValueError, match="example 0 puts no weight on any patch"):
        explain.cls_attention(w)
    bad = torch.full((1, 1, 3, 3), 1 / 3)
    bad[0, 0, 1, 2] = float("nan")
    with pytest.raises(ValueError, match="NaN"):
        explain.cls_attention(bad)


def test_occlusion_scores_match_one_forward_per_occluded_copy():
    model = vit.build_vit(2).eval()
    g = torch.Generator().manual_seed(0)
    images, labels = torch.rand(3, 1, 8, 8, generator=g), torch.tensor([1, 4, 7])
    got = explain.occlusion_scores(model, images, labels, 2)
    assert got.shape == (3, 16)
    with torch.no_grad():
        for i in range(3):
            p = torch.softmax(model(images[i : i + 1]), -1)[0, labels[i]]
            for r in range(4):
                for c in range(4):
                    copy = images[i : i + 1].clone()
                    copy[..., 2 * r : 2 * r + 2, 2 * c : 2 * c + 2] = 0
                    q = torch.softmax(model(copy), -1)[0, labels[i]]
                    assert abs(float(got[i, 4 * r + c]) - float(p - q)) < 1e-5


def test_ink_is_the_sum_of_each_patch():
    images = torch.arange(16.0).reshape(1, 1, 4, 4)
    assert explain.ink_scores(images, 2).tolist() == [[10.0, 18.0, 42.0, 50.0]]


def test_change_scores_are_the_size_of_each_patch_change():
    g = torch.Generator().manual_seed(0)
    images = torch.rand(3, 2, 4, 6, generator=g)  # two channels, not square
    fill = torch.rand(2, 4, 6, generator=g)
    got = explain.change_scores(images, 2, fill)
    assert got.shape == (3, 6)
    for i in range(3):  # an entry-by-entry loop over the pixels of each patch
        for r in range(2):
            for c in range(3):
                total = 0.0
                for ch in range(2):
                    for y in range(2 * r, 2 * r + 2):
                        for x in range(2 * c, 2 * c + 2):
                            total += abs(float(images[i, ch, y, x] - fill[ch, y, x]))
                assert float(got[i, 3 * r + c]) == pytest.approx(total, abs=1e-5)
    # a number fills every pixel; zero fill on images without negative pixels is ink
    assert torch.allclose(
        explain.change_scores(images, 2, 0.5),
        (images - 0.5).abs().sum((1,)).reshape(3, 2, 2, 3, 2).sum((2, 4)).reshape(3, 6),
    )
    assert torch.equal(explain.change_scores(images, 2), explain.ink_scores(images, 2))
    assert not torch.equal(
        explain.change_scores(images - 0.5, 2), explain.ink_scores(images - 0.5, 2)
    )
    # a patch that equals the fill scores 0
    same = images.clone()
    same[0, :, :2, :2] = fill[:, :2, :2]
    assert float(explain.change_scores(same, 2, fill)[0, 0]) == 0.0
    with pytest.raises(ValueError, match=r"fill must be a number or one \(C, H, W\) image"):
        explain.change_scores(images, 2, fill[:1])
    with pytest.raises(TypeError, match="fill must be a number"):
        explain.change_scores(images, 2, "mean")


def _brute_force_spearman(a, b):
    """1 - 6 sum d^2 / (n (n^2 - 1)) on ranks from sorting (valid without ties)."""
    n = len(a)
    rank_a = {i: r for r, i in enumerate(sorted(range(n), key=lambda i: a[i]))}
    rank_b = {i: r for r, i in enumerate(sorted(range(n), key=lambda i: b[i]))}
    d2 = sum((rank_a[i] - rank_b[i]) ** 2 for i in range(n))
    return 1 - 6 * d2 / (n * (n * n - 1))


def test_spearman_agrees_with_a_reference():
    g = torch.Generator().manual_seed(0)
    a = torch.randn(20, 16, generator=g)
    b = a + torch.randn(20, 16, generator=g)
    b[:5] = torch.round(b[:5])  # ties in some rows
    a[5:8] = torch.round(a[5:8] * 0.5)
    got = explain.spearman(a, b)
    try:
        from scipy.stats import spearmanr
    except ImportError:  # scipy comes with scikit-learn; without it, rows without ties
        for i in range(8, 20):
            assert abs(float(got[i]) - _brute_force_spearman(a[i].tolist(), b[i].tolist())) < 1e-9
    else:
        for i in range(20):
            assert abs(float(got[i]) - spearmanr(a[i], b[i]).statistic) < 1e-9
    for i in range(8, 20):  # the closed form of untied ranks, whether scipy is here or not
        assert abs(float(got[i]) - _brute_force_spearman(a[i].tolist(), b[i].tolist())) < 1e-9


def test_spearman_of_orderings_constant_rows_and_bad_shapes():
    x = torch.tensor([[1.0, 2.0, 3.0, 4.0]])
    assert float(explain.spearman(x, 10 * x)) == pytest.approx(1.0)
    assert float(explain.spearman(x, -x)) == pytest.approx(-1.0)
    assert math.isnan(float(explain.spearman(x, torch.ones(1, 4))))
    # every ordering of four: the mean correlation with a fixed one is 0
    values = [float(explain.spearman(x, torch.tensor([p]))) for p in permutations(range(4))]
    assert sum(values) == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(ValueError, match="one shape"):
        explain.spearman(x, torch.ones(1, 3))
    with pytest.raises(ValueError, match="at least 2 entries"):
        explain.spearman(torch.ones(3, 1), torch.ones(3, 1))


def test_agreement_on_hand_made_scores():
    truth = torch.tensor([[0.0, 1.0, 2.0, 3.0], [3.0, 2.0, 1.0, 0.0]])
    raw = torch.tensor([[0.1, 0.2, 0.3, 0.4], [0.25, 0.25, 0.25, 0.25]])
    scores = {"occlusion": truth, "raw attention": raw, "rollout": -truth}
    scores["ink"] = torch.tensor([[0.0, 2.0, 1.0, 3.0], [3.0, 1.0, 2.0, 0.0]])
    scores["random"] = torch.tensor([[0.0, 1.0, 3.0, 2.0], [0.0, 1.0, 3.0, 2.0]])
    got = explain.agreement(scores)
    assert got["raw attention"] == pytest.approx(1.0)  # the constant row is left out
    assert got["rollout"] == pytest.approx(-1.0) and got["ink"] == pytest.approx(0.8)
    assert got["random"] == pytest.approx((0.8 - 0.8) / 2)
    assert got["peak"] == pytest.approx((0.4 + 0.25) / 2)
    assert got["raw attention, top match"] == pytest.approx(1.0)  # a tie's argmax: patch 0
    assert got["rollout, top match"] == 0.0 and got["ink, top match"] == 1.0
    assert got["random, top match"] == 0.0
    given = explain.partial_spearman(scores["rollout"], truth, scores["ink"])
    assert got["rollout, given ink"] == pytest.approx(float(given.mean()))
    assert "ink, given ink" not in got


def _reference_partial(a, b, c):
    """Correlate what a straight line in c's ranks leaves of a's and b's ranks."""
    ra, rb, rc = (explain._ranks(x[None])[0] for x in (a, b, c))
    rc = rc - rc.mean()

    def residual(r):
        r = r - r.mean()
        return r - (r @ rc) / (rc @ rc) * rc

    ea, eb = residual(ra), residual(rb)
    return float((ea @ eb) / (ea.norm() * eb.norm()))


def test_partial_spearman_is_the_correlation_of_residual_ranks():
    g = torch.Generator().manual_seed(3)
    c = torch.randn(12, 16, generator=g)
    a = c + torch.randn(12, 16, generator=g)
    b = c + torch.randn(12, 16, generator=g)
    got = explain.partial_spearman(a, b, c)
    for i in range(12):
        assert float(got[i]) == pytest.approx(_reference_partial(a[i], b[i], c[i]), abs=1e-9)
    # a and b that agree only through c: nothing is left once c is held fixed
    x = torch.tensor([[1.0, 2.0, 3.0, 4.0]])
    assert math.isnan(float(explain.partial_spearman(x, x, x)))
    with pytest.raises(ValueError, match="given must have the shape"):
        explain.partial_spearman(x, x, torch.ones(1, 3))


def test_spearman_of_nan_is_nan():
    x = torch.tensor([[float("nan"), 1.0, 2.0, 3.0], [0.0, 1.0, 2.0, 3.0]])
    got = explain.spearman(x, torch.tensor([[1.0, 2.0, 3.0, 4.0]] * 2))
    assert math.isnan(float(got[0])) and float(got[1]) == pytest.approx(1.0)


def test_occlusion_with_an_image_fill_matches_a_loop():
    model = vit.build_vit(1).eval()
    g = torch.Generator().manual_seed(2)
    images, labels = torch.rand(2, 1, 8, 8, generator=g), torch.tensor([3, 8])
    fill = torch.rand(1, 8, 8, generator=g)
    got = explain.occlusion_scores(model, images, labels, 2, fill=fill)
    constant = explain.occlusion_scores(model, images, labels, 2, fill=0.5)
    with torch.no_grad():
        for i in range(2):
            p = torch.softmax(model(images[i : i + 1]), -1)[0, labels[i]]
            for j in range(16):
                r, c = divmod(j, 4)
                rows, cols = slice(2 * r, 2 * r + 2), slice(2 * c, 2 * c + 2)
                for value, scores in ((fill[..., rows, cols], got), (0.5, constant)):
                    copy = images[i : i + 1].clone()
                    copy[..., rows, cols] = value
                    q = torch.softmax(model(copy), -1)[0, labels[i]]
                    assert abs(float(scores[i, j]) - float(p - q)) < 1e-5


def test_a_bad_fill_is_named():
    model, images, labels = vit.build_vit(0), torch.rand(2, 1, 8, 8), torch.tensor([0, 1])
    with pytest.raises(ValueError, match=r"fill must be a number or one \(C, H, W\) image"):
        explain.occlusion_scores(model, images, labels, 2, fill=torch.zeros(8, 8))
    with pytest.raises(TypeError, match="fill must be a number.*str 'mean'"):
        explain.occlusion_scores(model, images, labels, 2, fill="mean")
    with pytest.raises(TypeError, match="fill must be a number"):
        explain.occlusion_scores(model, images, labels, 2, fill=True)
    with pytest.raises(ValueError, match="fill must be finite, got nan"):
        explain.occlusion_scores(model, images, labels, 2, fill=float("nan"))
    with pytest.raises(TypeError, match="fill must hold real numbers"):
        explain.occlusion_scores(model, images, labels, 2, fill=torch.zeros(1, 8, 8).bool())
    with pytest.raises(ValueError, match="fill must be a number"):
        explain.deletion_curve(model, images, labels, torch.rand(2, 16), 2, fill=torch.zeros(3))


def _reference_deletion(model, image, label, scores, fill):
    """Fill the patches one by one, highest score first (ties: lower number first)."""
    order = sorted(range(16), key=lambda j: (-float(scores[j]), j))
    copy, out = image.clone(), []
    with torch.no_grad():
        out.append(float(torch.softmax(model(copy[None]), -1)[0, label]))
        for j in order:
            r, c = divmod(j, 4)
            rows, cols = slice(2 * r, 2 * r + 2), slice(2 * c, 2 * c + 2)
            copy[..., rows, cols] = fill[..., rows, cols] if torch.is_tensor(fill) else fill
            out.append(float(torch.softmax(model(copy[None]), -1)[0, label]))
    return out


@pytest.mark.parametrize("fill", ["zero", "image"])
def test_deletion_curve_matches_a_loop(fill):
    model = vit.build_vit(4).eval()
    g = torch.Generator().manual_seed(5)
    images, labels = torch.rand(3, 1, 8, 8, generator=g), torch.tensor([2, 5, 9])
    fill = 0.0 if fill == "zero" else torch.rand(1, 8, 8, generator=g)
    scores = torch.rand(3, 16, generator=g)
    scores[1, :8] = 0.5  # ties, broken by patch number
    got = explain.deletion_curve(model, images, labels, scores, 2, fill=fill)
    assert got.shape == (3, 17)
    for i in range(3):
        want = _reference_deletion(model, images[i], int(labels[i]), scores[i], fill)
        assert got[i].tolist() == pytest.approx(want, abs=1e-5)
    with pytest.raises(ValueError, match=r"scores must be \(batch, patches\) = \(3, 16\)"):
        explain.deletion_curve(model, images, labels, scores[:, :15], 2)


def test_deletion_area_is_the_trapezoid_rule():
    curve = torch.tensor([[1.0, 1.0, 1.0], [1.0, 0.0, 0.0], [1.0, 0.5, 0.0]])
    assert explain.deletion_area(curve).tolist() == pytest.approx([1.0, 0.25, 0.5])
    with pytest.raises(ValueError, match="at least 2 steps"):
        explain.deletion_area(torch.ones(2, 1))


def test_explanations_stay_on_the_meta_device():
    """No CPU mask, no CPU random scores: shapes and devices are checked without data."""
    model = vit.build_vit(0).to("meta")
    images = torch.empty(3, 1, 8, 8, device="meta")
    labels = torch.empty(3, dtype=torch.int64, device="meta")
    fill = torch.empty(1, 8, 8, device="meta")
    scores = explain.explanation_scores(model, images, labels, fill=fill)
    for name, value in scores.items():
        assert value.device.type == "meta" and value.shape == (3, 16), name
    assert explain.occlusion_scores(model, images, labels, 2, fill=0.3).device.type == "meta"
    curve = explain.deletion_curve(model, images, labels, scores["rollout"], 2, fill=fill)
    assert curve.device.type == "meta" and curve.shape == (3, 17)
    # a fill on another device than the images is moved to theirs
    cpu_fill = torch.zeros(1, 8, 8)
    assert explain.occlusion_scores(model, images, labels, 2, fill=cpu_fill).device.type == "meta"


def test_explanations_on_a_device_match_the_cpu(device):
    model = vit.build_vit(0).eval()
    g = torch.Generator().manual_seed(0)
    images, labels = torch.rand(4, 1, 8, 8, generator=g), torch.tensor([0, 3, 6, 9])
    fill = images.mean(0)
    want = explain.explanation_scores(model, images, labels, seed=1, fill=fill)
    moved = model.to(device)
    got = explain.explanation_scores(moved, images.to(device), labels.to(device), 1, fill)
    for name in want:
        assert got[name].device.type == device
        torch.testing.assert_close(got[name].cpu(), want[name], atol=1e-5, rtol=1e-4)
    curve = explain.deletion_curve(moved, images.to(device), labels.to(device), got["ink"], 2)
    torch.testing.assert_close(
        curve.cpu(),
        explain.deletion_curve(model.cpu(), images, labels, want["ink"], 2),
        atol=1e-5,
        rtol=1e-4,
    )


# ---------------------------------------------------------------- the stored sweep


def test_the_sweep_is_package_data_and_holds_every_seed():
    tomllib = pytest.importorskip("tomllib")
    setuptools = tomllib.loads((LIB / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "attnbook.vit_data" in setuptools["packages"]
    assert setuptools["package-data"]["attnbook.vit_data"] == ["*.json"]
    sweep = vit_study.load_sweep()
    assert sweep == json.loads((LIB / "attnbook" / "vit_data" / "sweep.json").read_text())
    assert sweep["setting"]["epochs"] == vit_study.SETTING["epochs"]
    assert list(sweep["seeds"]) == [str(s) for s in range(len(sweep["seeds"]))]
    assert len(sweep["seeds"]) >= 3 and sweep["baselines"].keys() == sweep["seeds"].keys()
    for seed, record in sweep["seeds"].items():
        assert 0.9 < record["accuracy"] <= 1.0
        for fill in ("zero", "mean image"):
            assert {f"{fill}: {m}" for m in explain.METHODS} <= record.keys()
            assert {f"{fill}: deletion {o}" for o in vit_study.ORDERS} <= record.keys()
            assert {f"{fill}: untrained rollout", f"{fill}: rollout, given ink"} <= record.keys()
            change = {"change", "change, top match", "rollout vs change"}
            change |= {f"{m}, given change" for m in ("raw attention", "rollout")}
            assert {
                f"{fill}: {k}" for k in change | {"untrained rollout, given change"}
            } <= record.keys()
        # the zero fill's change is the ink of these images (no negative pixels)
        assert record["zero: change"] == record["zero: ink"]
        assert record["zero: deletion change"] == record["zero: deletion ink"]
        assert {"fills agree", "misread"} <= record.keys()
        other_maps = {"raw attention, block 0", *(f"raw attention, head {h}" for h in range(4))}
        assert {f"{f}: {m}" for f in ("zero", "mean image") for m in other_maps} <= record.keys()
        assert {f"positions: similarity vs {d}" for d in vit_study.DISTANCES} <= record.keys()
        assert "accuracy, positions averaged" in record
        assert "accuracy, positions swapped with a neighbour" in record
        nets = {"CNN (ViT recipe)", "CNN 16 (ViT recipe)", "MLP 128 (ViT recipe)"}
        assert nets <= sweep["baselines"][seed].keys()


def test_records_agree_names_what_drifted():
    stored = {"accuracy": 0.96, "rollout": 0.3}
    assert vit_study.records_agree({"accuracy": 0.97, "rollout": 0.4}, stored) == []
    problems = vit_study.records_agree({"accuracy": 0.94, "rollout": 0.5}, stored)
    assert [p.split(":")[0] for p in problems] == ["accuracy", "rollout"]
    # each kind of entry has its own tolerance, found by name
    stored = {"zero: rollout, top match": 0.2, "mean image: deletion ink": 0.3, "misread": 4}
    live = {"zero: rollout, top match": 0.42, "mean image: deletion ink": 0.35, "misread": 6}
    assert vit_study.records_agree(live, stored) == [
        "zero: rollout, top match: live 0.4200, stored 0.2000"
    ]
    assert vit_study.records_agree({**live, "zero: rollout, top match": 0.38}, stored) == []
    # a single head's map moves more between CPUs than the heads' average
    stored = {"zero: raw attention, head 3": -0.17, "zero: raw attention": 0.32}
    live = {"zero: raw attention, head 3": -0.34, "zero: raw attention": 0.26}
    assert vit_study.records_agree(live, stored) == []
    # the drift measured between two CPU paths of one machine: -0.34 and -0.04
    stored = {"zero: raw attention, head 3": -0.34, "zero: raw attention": 0.32}
    live = {"zero: raw attention, head 3": -0.04, "zero: raw attention": 0.26}
    assert vit_study.records_agree(live, stored) == []
    live = {"zero: raw attention, head 3": -0.77, "zero: raw attention": 0.5}
    assert [p.split(": live")[0] for p in vit_study.records_agree(live, stored)] == [
        "zero: raw attention, head 3",
        "zero: raw attention",
    ]
    # the crippled model's accuracy has its own, wider tolerance than accuracy's
    stored = {"accuracy, positions averaged": 0.30}
    assert vit_study.records_agree({"accuracy, positions averaged": 0.44}, stored) == []
    assert vit_study.records_agree({"accuracy, positions averaged": 0.46}, stored) != []
    key = "accuracy, positions swapped with a neighbour"
    assert vit_study.records_agree({key: 0.24}, {key: 0.10}) == []
    assert vit_study.records_agree({key: 0.26}, {key: 0.10}) != []


# Trains a model for several seconds: make check's tier (conftest.py, "slow").
@pytest.mark.slow
def test_measure_scores_each_fill_against_its_own_change():
    pytest.importorskip("sklearn")
    data = digits.load_digits_split()
    model = vit.build_vit(1)
    record = vit_study.measure(model, vit.build_vit(2), data, 0)
    images, labels = data.X_test[: vit_study.NUM_EXPLAINED], data.y_test[: vit_study.NUM_EXPLAINED]
    for name, fill in vit_study.fills(data).items():
        scores = explain.explanation_scores(model, images, labels, 0, fill)
        occlusion = scores["occlusion"]
        change = patches.patchify((images - fill).abs(), 2).sum(-1)  # (100, 16)
        rho = explain.spearman(change, occlusion)
        assert record[f"{name}: change"] == pytest.approx(float(rho.nanmean()), abs=1e-12)
        top = (change.argmax(-1) == occlusion.argmax(-1)).double().mean()
        assert record[f"{name}: change, top match"] == pytest.approx(float(top))
        partial = explain.partial_spearman(scores["rollout"], occlusion, change)
        assert record[f"{name}: rollout, given change"] == pytest.approx(float(partial.nanmean()))
        rho = explain.spearman(scores["rollout"], change)
        assert record[f"{name}: rollout vs change"] == pytest.approx(float(rho.nanmean()))
        curve = explain.deletion_curve(model, images, labels, change, 2, fill=fill)
        area = float(explain.deletion_area(curve).mean())
        assert record[f"{name}: deletion change"] == pytest.approx(area, abs=1e-6)
    assert record["zero: change"] == record["zero: ink"]
    assert record["mean image: change"] != record["mean image: ink"]
