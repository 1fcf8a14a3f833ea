"""Edge cases found while testing: mixed dtypes, devices, extreme values, bad arguments.

Each test failed against the library as first written (see the commit that
added this file) and pins the fix.
"""

import pytest
import torch

from attnbook import checks, data, masking, plotting, pooling, scoring


def test_nadaraya_watson_promotes_mixed_dtypes():
    x32 = torch.tensor([0.0, 1.0, 2.5])
    y32 = torch.tensor([1.0, -1.0, 2.0])
    q64 = torch.tensor([0.3, 2.0], dtype=torch.float64)
    y_hat, weights = pooling.nadaraya_watson(x32, y32, q64)
    assert y_hat.dtype == weights.dtype == torch.float64
    expected, _ = pooling.nadaraya_watson(x32.double(), y32.double(), q64)
    torch.testing.assert_close(y_hat, expected)
    y_hat, _ = pooling.nadaraya_watson(x32.double(), y32, q64.float())
    assert y_hat.dtype == torch.float64


def test_loo_cv_error_promotes_mixed_dtypes():
    x = torch.tensor([0.0, 1.0, 2.5, 3.0])
    y = torch.tensor([1.0, -1.0, 2.0, 0.5])
    mixed = pooling.loo_cv_error(x.double(), y, [0.5, 1.0])
    torch.testing.assert_close(mixed, pooling.loo_cv_error(x.double(), y.double(), [0.5, 1.0]))


@pytest.mark.parametrize("which", ["queries", "values"])
def test_dot_product_attention_rejects_mixed_dtypes(which):
    tensors = {
        "queries": torch.rand(1, 2, 3),
        "keys": torch.rand(1, 4, 3),
        "values": torch.rand(1, 4, 2),
    }
    tensors[which] = tensors[which].double()
    with pytest.raises(TypeError, match=r"same dtype.*float64"):
        scoring.DotProductAttention()(**tensors)


def test_additive_attention_names_the_dtype_mismatch():
    layer = scoring.AdditiveAttention(4)
    q = torch.rand(1, 2, 3, dtype=torch.float64)
    with pytest.raises(TypeError, match=r"dtype.*torch.float32.*float64"):
        layer(q, q, q)
    layer = scoring.AdditiveAttention(4).to(torch.float64)
    assert layer(q, q, q).dtype == torch.float64


@pytest.mark.parametrize(
    ("x", "error"),
    [([1.0, 2.0], TypeError), (torch.tensor(1.0), ValueError), (torch.ones(3, 2), ValueError)],
)
def test_leave_one_out_bad_input(x, error):
    with pytest.raises(error, match="x"):
        pooling.leave_one_out(x)


def test_loo_cv_error_builds_its_mask_on_the_data_device():
    x = torch.arange(4.0, device="meta")
    errors = pooling.loo_cv_error(x, x, [1.0])
    assert errors.device.type == "meta"


@pytest.mark.parametrize("value", [None, "a", [1.0]])
def test_sequence_mask_bad_value_names_value(value):
    with pytest.raises(TypeError, match="value"):
        masking.sequence_mask(torch.ones(2, 3), torch.tensor([1, 2]), value)


def test_sequence_mask_does_not_truncate_a_fractional_value_into_integers():
    X = torch.ones(2, 3, dtype=torch.long)
    with pytest.raises(ValueError, match=r"value.*0\.5"):
        masking.sequence_mask(X, torch.tensor([1, 2]), 0.5)
    assert masking.sequence_mask(X, torch.tensor([1, 2]), -1).tolist() == [[1, -1, -1], [1, 1, -1]]


@pytest.mark.parametrize("kernel", ["gaussian", "triangular", "epanechnikov", "boxcar"])
def test_nadaraya_watson_width_that_underflows_is_still_finite(kernel):
    x = torch.tensor([0.0, 1.0, 2.0])
    y = torch.tensor([1.0, 2.0, 3.0])
    y_hat, weights = pooling.nadaraya_watson(x, y, x, kernel=kernel, width=1e-50)
    assert torch.isfinite(weights).all()
    torch.testing.assert_close(y_hat, y)


def test_masked_softmax_reports_a_huge_length_as_given():
    with pytest.raises(ValueError, match=r"valid_lens.*e\+20"):
        masking.masked_softmax(torch.ones(1, 2, 3), torch.tensor([1e20]))


def test_make_regression_data_huge_seed_names_seed():
    with pytest.raises(ValueError, match=r"seed.*1180591620717411303424"):
        data.make_regression_data(seed=2**70)


@pytest.mark.parametrize("matrices", [torch.zeros(0, 1, 2, 2), torch.zeros(1, 1, 0, 0)])
def test_show_heatmaps_empty_matrices_names_matrices(matrices):
    with pytest.raises(ValueError, match="matrices"):
        plotting.show_heatmaps(matrices, "k", "q")


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"vmin": "low"}, TypeError, "vmin"),
        ({"vmax": [1]}, TypeError, "vmax"),
        ({"vmin": 1.0, "vmax": 0.0}, ValueError, "vmin.*vmax"),
    ],
)
def test_show_heatmaps_bad_colour_range(kwargs, error, match):
    with pytest.raises(error, match=match):
        plotting.show_heatmaps(torch.rand(1, 1, 2, 2), "k", "q", **kwargs)


def test_plot_fit_bad_data_names_data():
    with pytest.raises(TypeError, match="data"):
        plotting.plot_fit(None)


def test_nw_model_without_keys_is_rejected():
    with pytest.raises(ValueError, match="keys"):
        pooling.NWKernelRegression()(torch.ones(2), torch.ones(2, 0), torch.ones(2, 0))


def test_checker_reports_results_on_another_device_instead_of_crashing():
    report = checks.check_softmax(lambda X: torch.softmax(X, -1).to("meta"))
    assert not report.passed
    assert "FAIL" in repr(report)


def test_in_colab_follows_the_google_colab_module(monkeypatch):
    import sys
    import types

    from attnbook import colab

    monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    assert colab.in_colab() is False
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    assert colab.in_colab() is True
