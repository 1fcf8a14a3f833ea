"""Tests of the Part III checkers (chapter 9, the Transformer block) in attnbook.checks.

Each checker must accept a correct answer written independently of the library
and reject every answer in its list of known mistakes, naming a failing case.
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnbook import checks

# ---------------------------------------------------------------- reader solutions


def layer_norm_ok(X, gamma, beta, eps):
    mean = X.mean(dim=-1, keepdim=True)
    var = ((X - mean) ** 2).mean(dim=-1, keepdim=True)
    return gamma * (X - mean) / torch.sqrt(var + eps) + beta


def layer_norm_unbiased(X, gamma, beta, eps):  # torch.var's default divides by D - 1
    mean = X.mean(dim=-1, keepdim=True)
    return gamma * (X - mean) / torch.sqrt(X.var(dim=-1, keepdim=True) + eps) + beta


def layer_norm_first_axis(X, gamma, beta, eps):  # normalises over the rows
    mean = X.mean(dim=0, keepdim=True)
    var = X.var(dim=0, unbiased=False, keepdim=True)
    return gamma * (X - mean) / torch.sqrt(var + eps) + beta


def layer_norm_no_eps(X, gamma, beta, eps):
    mean = X.mean(dim=-1, keepdim=True)
    return gamma * (X - mean) / X.std(dim=-1, unbiased=False, keepdim=True) + beta


def layer_norm_eps_outside(X, gamma, beta, eps):  # (x - mean) / (std + eps)
    mean = X.mean(dim=-1, keepdim=True)
    std = X.std(dim=-1, unbiased=False, keepdim=True)
    return gamma * (X - mean) / (std + eps) + beta


def layer_norm_no_affine(X, gamma, beta, eps):
    return torch.nn.functional.layer_norm(X, X.shape[-1:], eps=eps)


def layer_norm_rms(X, gamma, beta, eps):  # RMSNorm: forgets to centre
    return gamma * X / torch.sqrt((X * X).mean(-1, keepdim=True) + eps) + beta


def count_ok(num_hiddens, ffn_hiddens):
    D, F = num_hiddens, ffn_hiddens
    return 4 * D * D + 4 * D + 2 * D * F + F + D + 4 * D


def count_no_norms(num_hiddens, ffn_hiddens):
    return count_ok(num_hiddens, ffn_hiddens) - 4 * num_hiddens


def count_no_biases(num_hiddens, ffn_hiddens):
    D, F = num_hiddens, ffn_hiddens
    return 4 * D * D + 2 * D * F + 4 * D


def count_twelve_d_squared(num_hiddens, ffn_hiddens):  # assumes F = 4 D and no vectors
    return 12 * num_hiddens**2


def count_assumes_four_d(num_hiddens, ffn_hiddens):  # ignores ffn_hiddens
    return count_ok(num_hiddens, 4 * num_hiddens)


def count_norm_without_shift(num_hiddens, ffn_hiddens):  # a gain but no beta
    return count_ok(num_hiddens, ffn_hiddens) - 2 * num_hiddens


# name -> (correct answer, [(known mistake, a case it must fail)])
CHECKERS = {
    "check_layer_norm": (
        layer_norm_ok,
        [
            (layer_norm_unbiased, "X (3, 2), rows of two features"),
            (layer_norm_first_axis, "X (5, 5), square: the axis matters"),
            (layer_norm_no_eps, "a constant row: variance 0"),
            (layer_norm_eps_outside, "tiny features, eps = 0.01"),
            (layer_norm_no_affine, "X (2, 3, 6) with a gain and a shift"),
            (layer_norm_rms, "X (4, 6), gain 1 and shift 0"),
        ],
    ),
    "check_block_parameter_count": (
        count_ok,
        [
            (count_no_norms, "num_hiddens=8, ffn_hiddens=32"),
            (count_no_biases, "num_hiddens=8, ffn_hiddens=32"),
            (count_twelve_d_squared, "num_hiddens=12, ffn_hiddens=48"),
            (count_assumes_four_d, "num_hiddens=16, ffn_hiddens=24"),
            (count_norm_without_shift, "num_hiddens=10, ffn_hiddens=10"),
        ],
    ),
}

MISTAKES = [
    pytest.param(name, broken, case, id=f"{name}-{broken.__name__}")
    for name, (_, wrongs) in CHECKERS.items()
    for broken, case in wrongs
]


@pytest.mark.parametrize("name", sorted(CHECKERS))
def test_checker_passes_a_correct_answer(name):
    correct, _ = CHECKERS[name]
    report = getattr(checks, name)(correct)
    assert report.passed and report.failures == [], repr(report)
    assert len(report.lines) >= 4
    assert repr(report).splitlines()[0] == f"{name}: all {len(report.lines)} cases passed."


@pytest.mark.parametrize(("name", "broken", "case"), MISTAKES)
def test_checker_rejects_a_known_mistake_and_names_the_case(name, broken, case):
    report = getattr(checks, name)(broken)
    assert not report.passed
    assert case in report.failures, repr(report)
    line = next(
        line for line in repr(report).splitlines() if line.startswith("  FAIL  ") and case in line
    )
    # A known mistake is named in one line pointing back to the chapter; an
    # unknown one gets the case's hint, pointing there too.
    if report.mistake is None:
        assert "(hint: " in line and line.rstrip(")").endswith("The Transformer Block")
    else:
        assert "(hint: " not in line and report.diagnosis.endswith("The Transformer Block")


def test_layer_norm_checker_rejects_torchs_layer_norm_which_the_exercise_forbids():
    report = checks.check_layer_norm(
        lambda X, g, b, eps: torch.nn.functional.layer_norm(X, X.shape[-1:], g, b, eps)
    )
    assert not report.passed and report.mistake == "F.layer_norm"
    assert "native_layer_norm" in repr(report)


def test_parameter_count_matches_the_closed_form():
    assert checks.check_block_parameter_count(
        lambda D, F: 4 * D**2 + 2 * D * F + 9 * D + F  # 12 D^2 + 13 D when F = 4 D
    )


@pytest.mark.parametrize("name", sorted(CHECKERS))
def test_checker_reports_wrong_types(name):
    report = getattr(checks, name)(lambda *args: [[0.0]])
    assert len(report.failures) == len(report.lines)


@pytest.mark.parametrize("name", sorted(CHECKERS))
def test_checker_leaves_the_global_rng_alone(name):
    correct, _ = CHECKERS[name]
    torch.manual_seed(0)
    state = torch.random.get_rng_state()
    getattr(checks, name)(correct)
    assert torch.equal(torch.random.get_rng_state(), state)


@pytest.mark.parametrize("name", sorted(CHECKERS))
@given(error=st.floats(1e-2, 1e3) | st.floats(-1e3, -1e-2))
@settings(max_examples=10, deadline=None)
def test_checker_rejects_any_visible_error(name, error):
    correct, _ = CHECKERS[name]
    if name == "check_block_parameter_count":  # a count is off by a whole number
        error = math.copysign(max(1, round(abs(error))), error)
    report = getattr(checks, name)(lambda *args: correct(*args) + error)
    assert len(report.failures) == len(report.lines)


@pytest.mark.parametrize("name", sorted(CHECKERS))
@given(error=st.floats(-1e-7, 1e-7))
@settings(max_examples=10, deadline=None)
def test_checker_accepts_rounding_errors(name, error):
    correct, _ = CHECKERS[name]
    assert getattr(checks, name)(lambda *args: correct(*args) + error)


def test_layer_norm_checker_catches_in_place_modification():
    def sneaky(X, gamma, beta, eps):
        out = layer_norm_ok(X.clone(), gamma, beta, eps)
        X.mul_(2)
        return out

    assert "the function modified its input in place" in repr(checks.check_layer_norm(sneaky))
