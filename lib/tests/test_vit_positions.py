"""Tests of what chapter 15 measures of the ViT's learned positions and of its other [CLS] maps."""

from __future__ import annotations

import math

import pytest
import torch
from torch.nn import functional as F

from attnbook import digits, explain, vit, vit_study


def _with_positions(patch_vectors: torch.Tensor, cls_vector: torch.Tensor | None = None):
    """The chapter's model with its patch position vectors set to ``patch_vectors`` (16, 64)."""
    model = vit.build_vit(0)
    with torch.no_grad():
        model.positions[0, 1:] = patch_vectors
        if cls_vector is not None:
            model.positions[0, 0] = cls_vector
    return model


def test_position_similarity_is_the_cosine_of_every_pair_on_the_grid():
    vectors = torch.randn(16, 64, generator=torch.Generator().manual_seed(1))
    S = vit.position_similarity(_with_positions(vectors))
    assert S.shape == (4, 4, 4, 4)
    for a in range(16):
        for b in range(16):
            want = F.cosine_similarity(vectors[a], vectors[b], dim=0)
            assert torch.allclose(S[a // 4, a % 4, b // 4, b % 4], want, atol=1e-6)
    # [CLS]'s position is not a patch: changing it changes nothing
    other = vit.position_similarity(_with_positions(vectors, cls_vector=torch.ones(64)))
    assert torch.equal(S, other)


def test_position_similarity_lays_the_maps_out_row_by_row():
    # Patch (r, c) gets the r-th unit vector: alike exactly when in one row.
    rows = torch.arange(16) // 4
    S = vit.position_similarity(_with_positions(F.one_hot(rows, 64).float()))
    same_row = (
        torch.arange(4)[:, None, None, None] == torch.arange(4)[None, None, :, None]
    ).expand(4, 4, 4, 4)
    assert torch.equal(S, same_row.float())


def test_position_similarity_refuses_another_model():
    with pytest.raises(TypeError, match="model"):
        vit.position_similarity(vit.build_mlp(0))


def _grid_distance(g: int, kind: str) -> torch.Tensor:
    cells = torch.arange(g * g)
    dr = (cells[:, None] // g - cells[None] // g).double()
    dc = (cells[:, None] % g - cells[None] % g).double()
    return (dr.abs() + dc.abs() if kind == "city block" else dr.hypot(dc)).reshape(g, g, g, g)


@pytest.mark.parametrize("distance", vit_study.DISTANCES)
def test_distance_correlation_is_minus_one_when_similarity_falls_with_distance(distance):
    d = _grid_distance(4, distance)
    assert math.isclose(vit_study.distance_correlation(torch.exp(-d), distance), -1.0)
    assert math.isclose(vit_study.distance_correlation(d.float(), distance), 1.0)


def test_distance_correlation_matches_scipy_over_the_pairs():
    stats = pytest.importorskip("scipy.stats")
    raw = torch.randn(9, 9, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    S = ((raw + raw.T) / 2).reshape(3, 3, 3, 3)
    d = _grid_distance(3, "straight").reshape(9, 9)
    pairs = [(i, j) for i in range(9) for j in range(i + 1, 9)]
    want = stats.spearmanr([float(S.reshape(9, 9)[p]) for p in pairs], [float(d[p]) for p in pairs])
    assert math.isclose(vit_study.distance_correlation(S), want.statistic, abs_tol=1e-12)


def test_distance_correlation_names_bad_input():
    with pytest.raises(ValueError, match=r"similarity must be 4-D.*\(4, 4, 16\)"):
        vit_study.distance_correlation(torch.zeros(4, 4, 16))
    with pytest.raises(ValueError, match=r"\(4, 4, 3, 3\)"):
        vit_study.distance_correlation(torch.zeros(4, 4, 3, 3))
    with pytest.raises(ValueError, match="distance must be one of .*'diagonal'"):
        vit_study.distance_correlation(torch.zeros(2, 2, 2, 2), "diagonal")


def test_averaging_the_positions_is_measured_and_undone():
    pytest.importorskip("sklearn")
    data = digits.load_digits_split()
    model = vit.build_vit(3)
    before = model.positions.detach().clone()
    out = vit_study._positions(model, vit.build_vit(4), data)
    assert torch.equal(model.positions, before)  # the model is given back as it came
    averaged = vit.build_vit(3)
    with torch.no_grad():
        averaged.positions[0, 1:] = before[0, 1:].mean(dim=0)
    assert out["accuracy, positions averaged"] == vit.accuracy(averaged, data.X_test, data.y_test)
    swapped = vit.build_vit(3)
    with torch.no_grad():
        for k in range(16):  # patch k takes the position of the patch beside it in its row
            swapped.positions[0, 1 + k] = before[0, 1 + (k + 1 if k % 2 == 0 else k - 1)]
    key = "accuracy, positions swapped with a neighbour"
    assert out[key] == vit.accuracy(swapped, data.X_test, data.y_test)
    S = vit.position_similarity(vit.build_vit(4))
    assert out["positions: untrained, similarity vs straight"] == vit_study.distance_correlation(S)


def test_neighbour_swap_swaps_each_two_patches_side_by_side():
    assert vit_study.neighbour_swap(4).tolist() == [
        1,
        0,
        3,
        2,
        5,
        4,
        7,
        6,
        9,
        8,
        11,
        10,
        13,
        12,
        15,
        14,
    ]
    assert vit_study.neighbour_swap(3).tolist() == [1, 0, 2, 4, 3, 5, 7, 6, 8]  # last column stays
    assert vit_study.neighbour_swap(1).tolist() == [0]
    for g in (2, 3, 5):
        swap = vit_study.neighbour_swap(g)
        assert torch.equal(swap[swap], torch.arange(g * g))  # twice: every patch its own again
        rows, cols = swap // g, swap % g
        assert torch.equal(rows, torch.arange(g * g) // g)  # a patch stays in its row
        assert ((cols - torch.arange(g * g) % g).abs() <= 1).all()  # and moves one column at most
    for bad in (0, -2, 2.0, True):
        with pytest.raises(ValueError, match=f"grid must be a positive int, got {bad!r}"):
            vit_study.neighbour_swap(bad)


def test_the_other_maps_are_the_first_block_and_single_heads():
    model = vit.build_vit(5)
    images = torch.rand(6, 1, 8, 8, generator=torch.Generator().manual_seed(3))
    truth = torch.rand(6, 16, generator=torch.Generator().manual_seed(4))
    out = vit_study._other_maps(model, images, {"zero": {"occlusion": truth}})
    model(images)
    first, last = model.attention_weights
    rho = explain.spearman(explain.cls_attention(first), truth)
    assert math.isclose(out["zero: raw attention, block 0"], float(rho.mean()))
    for h in range(4):
        one = explain.spearman(last[:, h, 0, 1:], truth)  # one head: no averaging to undo
        assert math.isclose(out[f"zero: raw attention, head {h}"], float(one.mean()))
    assert len(out) == 5


def test_distance_correlation_refuses_a_constant_similarity():
    # Nothing to rank: refused (it used to return NaN, issue 53's fuzz).
    with pytest.raises(ValueError, match=r"similarity is 0.5 for every pair of patches"):
        vit_study.distance_correlation(torch.full((3, 3, 3, 3), 0.5))
    # One pair different is enough to rank.
    s = torch.full((3, 3, 3, 3), 0.5)
    s[0, 0, 0, 1] = s[0, 1, 0, 0] = 0.9
    assert vit_study.distance_correlation(s) < 0
