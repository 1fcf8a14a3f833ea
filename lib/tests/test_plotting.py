"""Tests of attnbook.plotting: show_heatmaps, heatmap, plot_fit, position_similarity_grid."""

from __future__ import annotations

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from _helpers import assert_unchanged, clones
from hypothesis import given, settings
from hypothesis import strategies as st
from matplotlib.colorbar import Colorbar
from matplotlib.figure import Figure

from attnbook.data import RegressionData, make_regression_data
from attnbook.plotting import heatmap, plot_fit, position_similarity_grid, show_heatmaps


@pytest.fixture(autouse=True)
def no_global_state_changes():
    """Every test: no pyplot figure is created and rcParams stay as they were."""
    figures = plt.get_fignums()
    params = mpl.rcParams.copy()
    yield
    assert plt.get_fignums() == figures, "a pyplot figure was created"
    assert dict(mpl.rcParams) == dict(params), "rcParams changed"


def new_ax():
    """An Axes on a Figure made without pyplot."""
    return Figure().subplots()


def images_of(fig: Figure):
    return [image for ax in fig.axes for image in ax.images]


def colorbars_of(fig: Figure):
    return [ax for ax in fig.axes if isinstance(getattr(ax, "_colorbar", None), Colorbar)]


# ---------------------------------------------------------------- show_heatmaps


@given(
    rows=st.integers(1, 3),
    cols=st.integers(1, 3),
    queries=st.integers(1, 4),
    keys=st.integers(1, 4),
    seed=st.integers(0, 1000),
)
@settings(max_examples=8)
def test_show_heatmaps_draws_every_panel_on_one_scale(rows, cols, queries, keys, seed):
    matrices = torch.rand(rows, cols, queries, keys, generator=torch.Generator().manual_seed(seed))
    before = clones(matrices)
    fig = show_heatmaps(matrices, "Keys", "Queries")
    assert isinstance(fig, Figure)
    images = images_of(fig)
    assert len(images) == rows * cols
    lo, hi = 0.0, float(matrices.max())  # the colour scale starts at 0
    if lo == hi:  # an all-zero input still gets a nonempty colour range
        hi = lo + 1.0
    for image in images:
        assert image.get_clim() == pytest.approx((lo, hi))
    drawn = sorted(tuple(np.asarray(image.get_array()).ravel()) for image in images)
    expected = sorted(tuple(m.ravel()) for m in matrices.reshape(-1, queries, keys).numpy())
    np.testing.assert_allclose(np.array(drawn), np.array(expected), rtol=1e-6)
    assert len(colorbars_of(fig)) == 1
    assert_unchanged(before, [matrices])


def test_show_heatmaps_layout_labels_and_titles():
    matrices = torch.rand(2, 3, 4, 5)
    fig = show_heatmaps(matrices, "Keys", "Queries", titles=["a", "b", "c"], figsize=(2, 1.5))
    panels = [ax for ax in fig.axes if ax.images]
    assert len(panels) == 6
    grid = sorted(
        panels,
        key=lambda ax: (ax.get_subplotspec().rowspan.start, ax.get_subplotspec().colspan.start),
    )
    top, bottom = grid[:3], grid[3:]
    assert [ax.get_title() for ax in top] == ["a", "b", "c"]
    assert all(ax.get_title() == "" for ax in bottom)
    assert [ax.get_xlabel() for ax in bottom] == ["Keys"] * 3
    assert [ax.get_ylabel() for ax in (top[0], bottom[0])] == ["Queries", "Queries"]
    for ax, (i, j) in zip(grid, [(i, j) for i in range(2) for j in range(3)]):
        np.testing.assert_allclose(ax.images[0].get_array(), matrices[i, j].numpy())
    width, height = fig.get_size_inches()
    assert width > 3 * 2 and height == pytest.approx(2 * 1.5)


def test_show_heatmaps_constant_input_and_cmap():
    fig = show_heatmaps(np.full((1, 2, 3, 3), 0.5), "k", "q", cmap="viridis")
    for image in images_of(fig):
        assert image.get_clim() == (0.0, 0.5)
        assert image.get_cmap().name.startswith("viridis")
    fig = show_heatmaps(np.zeros((1, 1, 2, 2)), "k", "q")
    assert images_of(fig)[0].get_clim() == (0.0, 1.0)


def test_show_heatmaps_colour_scale_starts_at_0_unless_data_are_negative():
    weights = torch.tensor([[[[0.2, 0.3], [0.4, 0.1]]]])
    (image,) = images_of(show_heatmaps(weights, "k", "q"))
    assert image.get_clim() == pytest.approx((0.0, 0.4))
    (image,) = images_of(show_heatmaps(weights - 1.0, "k", "q"))
    assert image.get_clim() == pytest.approx((-0.9, -0.6))
    (image,) = images_of(show_heatmaps(weights * 10 - 2, "k", "q"))
    assert image.get_clim() == pytest.approx((-1.0, 2.0))
    (image,) = images_of(show_heatmaps(weights, "k", "q", vmin=0.1))
    assert image.get_clim() == pytest.approx((0.1, 0.4))


def test_show_heatmaps_labels_its_colour_bar():
    fig = show_heatmaps(torch.rand(1, 2, 3, 3), "k", "q")
    (bar,) = colorbars_of(fig)
    assert bar is fig.axes[-1]  # chapters rely on the colour bar coming last
    assert bar.get_ylabel() == "weight"
    fig = show_heatmaps(torch.rand(1, 1, 3, 3), "k", "q", colorbar_label="score")
    assert colorbars_of(fig)[0].get_ylabel() == "score"


def hatched(ax):
    """(x, y, width) of every hatched rectangle, in cell units."""
    return sorted(
        (round(p.get_x() + 0.5), round(p.get_y() + 0.5), round(p.get_width()))
        for p in ax.patches
        if p.get_hatch()
    )


def test_show_heatmaps_hatches_masked_cells():
    weights = torch.rand(1, 2, 3, 4)
    lengths = torch.tensor([[1, 4, 2], [0, 3, 4]])  # (panels, queries)
    mask = torch.arange(4) >= lengths[..., None]  # (panels, queries, keys)
    before = clones(weights, mask)
    fig = show_heatmaps(weights, "k", "q", mask=mask[None])
    left, right = [ax for ax in fig.axes if ax.images]
    # One rectangle per row's run of masked keys, none for a full row.
    assert hatched(left) == [(1, 0, 3), (2, 2, 2)]
    assert hatched(right) == [(0, 0, 4), (3, 1, 1)]
    for ax, panel_mask in zip((left, right), mask):
        shown = ax.images[0].get_array()
        assert np.array_equal(np.ma.getmaskarray(shown), panel_mask.numpy())
    legend = fig.axes[-1].get_legend()
    assert [text.get_text() for text in legend.get_texts()] == ["masked"]
    assert_unchanged(before, [weights, mask])


def test_show_heatmaps_mask_broadcasts_and_can_be_empty():
    keys_mask = np.array([False, False, True])  # the last key, in every panel and row
    fig = show_heatmaps(torch.rand(2, 2, 2, 3), "k", "q", mask=keys_mask)
    panels = [ax for ax in fig.axes if ax.images]
    assert all(hatched(ax) == [(2, 0, 1), (2, 1, 1)] for ax in panels)
    fig = show_heatmaps(torch.rand(1, 1, 2, 3), "k", "q", mask=np.zeros(3, bool))
    assert hatched(fig.axes[0]) == [] and fig.axes[-1].get_legend() is None
    fig = show_heatmaps(torch.rand(1, 1, 2, 3), "k", "q")
    assert hatched(fig.axes[0]) == [] and fig.axes[-1].get_legend() is None


@pytest.mark.parametrize(
    ("mask", "error", "pattern"),
    [
        (np.zeros((2, 2)), TypeError, r"mask must be a boolean array.*float64"),
        (np.zeros(5, bool), ValueError, r"mask must broadcast to .*\(1, 1, 2, 3\).*\(5,\)"),
    ],
)
def test_show_heatmaps_bad_mask(mask, error, pattern):
    with pytest.raises(error, match=pattern):
        show_heatmaps(torch.rand(1, 1, 2, 3), "k", "q", mask=mask)


def test_show_heatmaps_explicit_colour_scale():
    fig = show_heatmaps(torch.rand(2, 2, 3, 3) * 0.5, "k", "q", vmin=0, vmax=1)
    assert all(image.get_clim() == (0.0, 1.0) for image in images_of(fig))


@pytest.mark.parametrize("shape", [(7, 9), (1, 10), (2, 1)])
def test_show_heatmaps_ticks_are_whole_indices(shape):
    fig = show_heatmaps(torch.rand(1, 1, *shape), "k", "q")
    fig.canvas.draw()
    (ax,) = [ax for ax in fig.axes if ax.images]
    for ticks, (low, high) in ((ax.get_xticks(), ax.get_xlim()), (ax.get_yticks(), ax.get_ylim())):
        shown = [t for t in ticks if min(low, high) <= t <= max(low, high)]
        assert len(shown) > 0 and all(float(t).is_integer() for t in shown)


def test_figures_display_themselves_as_png():
    for fig in (
        show_heatmaps(torch.rand(1, 1, 2, 2), "k", "q"),
        heatmap(torch.rand(2, 2)),
        plot_fit(make_regression_data(n_train=3)),
    ):
        png = fig._repr_png_()
        assert isinstance(png, bytes) and png.startswith(b"\x89PNG\r\n\x1a\n")


@pytest.mark.parametrize(
    "matrices",
    [
        torch.rand(1, 2, 3, 3, dtype=torch.float64),
        torch.rand(1, 1, 2, 2).to(torch.bfloat16),
        torch.rand(1, 1, 2, 2, requires_grad=True),
        np.random.default_rng(0).random((2, 1, 3, 2)),
        [[[[0.1, 0.9]]]],
    ],
)
def test_show_heatmaps_accepts_tensors_arrays_lists(matrices):
    fig = show_heatmaps(matrices, "k", "q")
    if torch.is_tensor(matrices):
        array = matrices.detach().double().numpy()
    else:
        array = np.asarray(matrices, dtype=float)
    images = images_of(fig)
    assert len(images) == array.shape[0] * array.shape[1]
    for image in images:
        assert image.get_clim() == pytest.approx((0.0, array.max()), rel=1e-6)


def test_show_heatmaps_device_tensor(device):
    matrices = torch.rand(1, 2, 3, 3, device=device)
    fig = show_heatmaps(matrices, "k", "q")
    for image in images_of(fig):
        assert image.get_clim() == pytest.approx((0.0, matrices.max().item()))


@pytest.mark.parametrize(
    ("matrices", "titles", "error", "pattern"),
    [
        (
            torch.rand(1, 2, 3, 3),
            ["only one"],
            ValueError,
            r"titles must have one entry per panel column \(2\), got 1",
        ),
        (torch.rand(1, 2, 3, 3), ["a", "b", "c"], ValueError, r"titles.*\(2\), got 3"),
        (
            torch.rand(2, 3, 3),
            None,
            ValueError,
            r"matrices must have 4 axes, got shape \(2, 3, 3\)",
        ),
        (torch.rand(1, 1, 1, 2, 2), None, ValueError, r"matrices must have 4 axes"),
        ("weights", None, TypeError, r"matrices must be a tensor or array of numbers.*'weights'"),
        ([[[[0.1, "x"]]]], None, TypeError, r"matrices must be a tensor or array"),
    ],
)
def test_show_heatmaps_bad_input(matrices, titles, error, pattern):
    with pytest.raises(error, match=pattern):
        show_heatmaps(matrices, "k", "q", titles=titles)


# ---------------------------------------------------------------- heatmap


def test_heatmap_new_figure():
    matrix = torch.rand(4, 6)
    before = clones(matrix)
    fig = heatmap(matrix, title="weights")
    assert isinstance(fig, Figure)
    images = images_of(fig)
    assert len(images) == 1
    np.testing.assert_allclose(images[0].get_array(), matrix.numpy())
    ax = images[0].axes
    assert (ax.get_xlabel(), ax.get_ylabel(), ax.get_title()) == ("Keys", "Queries", "weights")
    assert len(colorbars_of(fig)) == 1
    assert_unchanged(before, [matrix])


@given(
    queries=st.integers(1, 6),
    keys=st.integers(1, 6),
    seed=st.integers(0, 1000),
    on_ax=st.booleans(),
)
@settings(max_examples=8)
def test_heatmap_draws_the_matrix(queries, keys, seed, on_ax):
    matrix = torch.rand(queries, keys, generator=torch.Generator().manual_seed(seed))
    ax = new_ax() if on_ax else None
    fig = heatmap(matrix, ax=ax)
    if on_ax:
        assert fig is ax.figure
    (image,) = images_of(fig)
    np.testing.assert_allclose(image.get_array(), matrix.numpy())
    assert image.get_array().shape == (queries, keys)


def test_heatmap_draws_on_a_given_ax():
    ax = new_ax()
    fig = heatmap(np.eye(3), ax=ax, xlabel="x", ylabel="y", vmin=0, vmax=2, colorbar=False)
    assert fig is ax.figure
    assert len(ax.images) == 1
    assert ax.images[0].get_clim() == (0, 2)
    assert (ax.get_xlabel(), ax.get_ylabel(), ax.get_title()) == ("x", "y", "")
    assert colorbars_of(fig) == []


def test_heatmap_extent_and_colorbar_on_given_ax():
    ax = new_ax()
    fig = heatmap(torch.rand(5, 5, dtype=torch.float64), ax=ax, extent=(0, 5, 5, 0))
    assert ax.images[0].get_extent() == [0, 5, 5, 0]
    assert len(colorbars_of(fig)) == 1


def test_heatmap_device_tensor(device):
    matrix = torch.rand(2, 3, device=device, requires_grad=True)
    fig = heatmap(matrix)
    np.testing.assert_allclose(images_of(fig)[0].get_array(), matrix.detach().cpu().numpy())


@pytest.mark.parametrize(
    ("matrix", "error", "pattern"),
    [
        (torch.rand(3), ValueError, r"matrix must have 2 axes, got shape \(3,\)"),
        (torch.rand(1, 2, 3), ValueError, r"matrix must have 2 axes.*\(1, 2, 3\)"),
        (None, ValueError, r"matrix must have 2 axes"),
        ({"a": 1}, TypeError, r"matrix must be a tensor or array of numbers"),
    ],
)
def test_heatmap_bad_input(matrix, error, pattern):
    with pytest.raises(error, match=pattern):
        heatmap(matrix)


# ---------------------------------------------------------------- plot_fit


def lines_by_label(fig: Figure):
    (ax,) = fig.axes
    return {line.get_label(): line for line in ax.get_lines()}


def test_plot_fit_without_predictions():
    data = make_regression_data(n_train=20, seed=1)
    fig = plot_fit(data, title="data")
    assert isinstance(fig, Figure)
    lines = lines_by_label(fig)
    assert set(lines) == {"Training data", "Truth"}
    np.testing.assert_allclose(lines["Training data"].get_xdata(), data.x_train.numpy())
    np.testing.assert_allclose(lines["Training data"].get_ydata(), data.y_train.numpy())
    np.testing.assert_allclose(lines["Truth"].get_xdata(), data.x_query.numpy())
    np.testing.assert_allclose(lines["Truth"].get_ydata(), data.y_query.numpy())
    (ax,) = fig.axes
    assert ax.get_title() == "data"
    assert ax.get_xlim() == pytest.approx((0.0, 4.9))
    assert ax.get_legend() is not None


def test_plot_fit_with_predictions_on_a_given_ax():
    data = make_regression_data(n_train=10, seed=2)
    y_hat = torch.linspace(0, 1, 50, dtype=torch.float64, requires_grad=True)
    before = clones(data.x_train, data.y_train, data.x_query, data.y_query, y_hat.detach())
    ax = new_ax()
    fig = plot_fit(data, y_hat, label="NW", ax=ax)
    assert fig is ax.figure
    lines = lines_by_label(fig)
    assert set(lines) == {"Training data", "Truth", "NW"}
    np.testing.assert_allclose(lines["NW"].get_ydata(), y_hat.detach().numpy())
    np.testing.assert_allclose(lines["NW"].get_xdata(), data.x_query.numpy())
    legend = [text.get_text() for text in ax.get_legend().get_texts()]
    assert legend == ["Training data", "Truth", "NW"]
    assert_unchanged(
        before, [data.x_train, data.y_train, data.x_query, data.y_query, y_hat.detach()]
    )


@given(n_train=st.integers(1, 60), seed=st.integers(0, 1000), offset=st.floats(-3, 3))
@settings(max_examples=8)
def test_plot_fit_draws_the_data_it_is_given(n_train, seed, offset):
    data = make_regression_data(n_train=n_train, seed=seed)
    y_hat = data.y_query + offset
    lines = lines_by_label(plot_fit(data, y_hat))
    np.testing.assert_allclose(lines["Training data"].get_xdata(), data.x_train.numpy())
    np.testing.assert_allclose(lines["Training data"].get_ydata(), data.y_train.numpy())
    np.testing.assert_allclose(lines["Prediction"].get_ydata(), y_hat.numpy())


def test_plot_fit_accepts_any_regression_data():
    x = torch.tensor([0.0, 1.0, 2.0])
    data = RegressionData(x, x**2, torch.tensor([0.5, 1.5]), torch.tensor([0.25, 2.25]))
    fig = plot_fit(data, np.array([0.3, 2.0]))
    assert fig.axes[0].get_xlim() == pytest.approx((0.5, 1.5))


def test_plot_fit_device(device):
    data = make_regression_data(n_train=5)
    moved = RegressionData(
        *(t.to(device) for t in (data.x_train, data.y_train, data.x_query, data.y_query))
    )
    fig = plot_fit(moved, torch.zeros(50, device=device))
    np.testing.assert_allclose(lines_by_label(fig)["Prediction"].get_ydata(), np.zeros(50))


@pytest.mark.parametrize(
    ("y_hat", "error", "pattern"),
    [
        (
            torch.zeros(49),
            ValueError,
            r"y_hat must have one prediction per query \(50,\), got shape \(49,\)",
        ),
        (torch.zeros(50, 1), ValueError, r"y_hat must have 1 axes, got shape \(50, 1\)"),
        ("zeros", TypeError, r"y_hat must be a tensor or array of numbers"),
    ],
)
def test_plot_fit_bad_input(y_hat, error, pattern):
    with pytest.raises(error, match=pattern):
        plot_fit(make_regression_data(n_train=5), y_hat)


# ---------------------------------------------------------------- position_similarity_grid


@pytest.mark.parametrize("g", [2, 3, 4])
def test_position_similarity_grid_puts_each_patch_map_in_its_tile(g):
    # Every entry distinct, so a tile in the wrong place or a transposed one shows.
    similarity = torch.linspace(-1, 1, g**4).reshape(g, g, g, g)
    before = clones(similarity)
    ax = new_ax()
    fig = position_similarity_grid(similarity, ax=ax, title="positions")
    assert fig is ax.figure and ax.get_title() == "positions"
    (image,) = ax.images
    mosaic = np.asarray(image.get_array())
    assert mosaic.shape == (g * g, g * g)
    for r, c, r2, c2 in np.ndindex(g, g, g, g):
        assert mosaic[r * g + r2, c * g + c2] == pytest.approx(float(similarity[r, c, r2, c2]))
    assert image.get_clim() == (-1, 1)  # cosine similarity: 0 is the middle colour
    # each tile's own patch is outlined, at row r * g + r, column c * g + c
    corners = sorted((p.get_y() + 0.5, p.get_x() + 0.5) for p in ax.patches)
    assert corners == sorted((r * g + r, c * g + c) for r, c in np.ndindex(g, g))
    assert [t.get_text() for t in ax.get_xticklabels()] == [str(k) for k in range(g)]
    (bar,) = colorbars_of(fig)
    assert bar.get_ylabel() == "cosine similarity"
    assert_unchanged(before, [similarity])


def test_position_similarity_grid_new_figure_and_bad_shapes():
    fig = position_similarity_grid(np.eye(4).reshape(2, 2, 2, 2))
    assert isinstance(fig, Figure) and len(images_of(fig)) == 1
    with pytest.raises(
        ValueError, match=r"similarity must have shape \(g, g, g, g\).*\(2, 2, 3, 3\)"
    ):
        position_similarity_grid(torch.zeros(2, 2, 3, 3))
    with pytest.raises(ValueError, match=r"similarity must have 4 axes, got shape \(16, 16\)"):
        position_similarity_grid(torch.zeros(16, 16))


def test_plotting_does_not_import_pyplot_state():
    """Drawing many figures leaves pyplot's figure manager empty."""
    for _ in range(3):
        show_heatmaps(torch.rand(1, 1, 2, 2), "k", "q")
        heatmap(torch.rand(2, 2))
        plot_fit(make_regression_data(n_train=3))
    assert plt.get_fignums() == []


# --- issue 53: a bad colour map, figure size, titles or extent is refused by name


@pytest.mark.parametrize(("cmap", "error"), [("no-such-map", ValueError), (3, TypeError)])
def test_a_bad_colour_map_is_refused_by_name(cmap, error):
    with pytest.raises(error, match="cmap must be a matplotlib colour map name"):
        show_heatmaps(torch.rand(1, 1, 2, 3), "k", "q", cmap=cmap)
    with pytest.raises(error, match="cmap must be a matplotlib colour map name"):
        heatmap(torch.rand(2, 3), cmap=cmap)
    with pytest.raises(error, match="cmap must be a matplotlib colour map name"):
        position_similarity_grid(torch.rand(2, 2, 2, 2), cmap=cmap)


def test_a_colour_map_object_still_draws():
    fig = show_heatmaps(torch.rand(1, 1, 2, 3), "k", "q", cmap=mpl.colormaps["Blues"])
    assert fig.axes[0].images[0].get_cmap().name.startswith("Blues")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"titles": "ab"}, "titles must be a list"),
        ({"titles": 3}, "titles must be a list"),
        ({"figsize": 2.5}, "figsize must be a sequence of 2 numbers"),
        ({"figsize": (2.5,)}, "figsize must be a sequence of 2 numbers"),
        ({"figsize": (2.5, -1.0)}, "figsize must hold two sizes > 0"),
        ({"figsize": (2.5, float("nan"))}, r"figsize\[1\] must be a finite number"),
    ],
)
def test_show_heatmaps_names_a_bad_layout(kwargs, match):
    with pytest.raises((TypeError, ValueError), match=match):
        show_heatmaps(torch.rand(1, 2, 2, 3), "k", "q", **kwargs)


@pytest.mark.parametrize("extent", [(0, 1, 2), "0123", (0, 1, 2, "x")])
def test_heatmap_names_a_bad_extent(extent):
    with pytest.raises((TypeError, ValueError), match="extent"):
        heatmap(torch.rand(2, 3), extent=extent)
