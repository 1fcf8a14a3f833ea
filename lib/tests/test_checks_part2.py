"""Tests of the Part II checkers (chapters 6 and 7) in attnbook.checks.

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
from attnbook.positional import sinusoidal_encoding

# ---------------------------------------------------------------- reader solutions


def count_ok(num_hiddens, num_heads, bias):
    return 4 * num_hiddens * num_hiddens + (4 * num_hiddens if bias else 0)


def count_per_head(num_hiddens, num_heads, bias):  # thinks every head has full-size matrices
    return num_heads * count_ok(num_hiddens, num_heads, bias)


def count_without_output(num_hiddens, num_heads, bias):  # forgets W_o
    return 3 * num_hiddens * num_hiddens + (3 * num_hiddens if bias else 0)


def count_without_bias(num_hiddens, num_heads, bias):
    return 4 * num_hiddens * num_hiddens


def count_small_heads_output(num_hiddens, num_heads, bias):  # W_o sized for one head
    p = num_hiddens // num_heads
    return 3 * num_hiddens * num_hiddens + num_hiddens * p + (4 * num_hiddens if bias else 0)


def head_lengths_ok(valid_lens, num_heads):
    return torch.stack([row for row in valid_lens for _ in range(num_heads)])


def head_lengths_tiled(valid_lens, num_heads):  # whole list repeated: wrong order
    return torch.cat([valid_lens] * num_heads)


def head_lengths_unrepeated(valid_lens, num_heads):
    return valid_lens.clone()


def head_lengths_flat(valid_lens, num_heads):  # loses the query axis of 2-D lengths
    return valid_lens.flatten().repeat_interleave(num_heads)


def rotation_ok(offset, num_hiddens):
    M = torch.zeros(num_hiddens, num_hiddens)
    for j in range(num_hiddens // 2):
        w = 1 / 10000 ** (2 * j / num_hiddens)
        c, s = math.cos(offset * w), math.sin(offset * w)
        M[2 * j, 2 * j], M[2 * j, 2 * j + 1], M[2 * j + 1, 2 * j], M[2 * j + 1, 2 * j + 1] = (
            c,
            s,
            -s,
            c,
        )
    return M


def rotation_backwards(offset, num_hiddens):  # rotates by -offset
    return rotation_ok(offset, num_hiddens).T


def rotation_wrong_frequency(offset, num_hiddens):  # 10000^(-j/D) instead of 10000^(-2j/D)
    M = torch.zeros(num_hiddens, num_hiddens)
    for j in range(num_hiddens // 2):
        t = offset / 10000 ** (j / num_hiddens)
        M[2 * j : 2 * j + 2, 2 * j : 2 * j + 2] = torch.tensor(
            [[math.cos(t), math.sin(t)], [-math.sin(t), math.cos(t)]]
        )
    return M


def rotation_identity_only(offset, num_hiddens):
    return torch.eye(num_hiddens)


def causal_ok(X):
    n, d = X.shape[1], X.shape[2]
    scores = X @ X.transpose(1, 2) / math.sqrt(d)
    future = torch.ones(n, n, dtype=torch.bool).triu(1)
    return torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1) @ X


def causal_unmasked(X):
    return torch.softmax(X @ X.transpose(1, 2) / math.sqrt(X.shape[2]), dim=-1) @ X


def causal_excludes_itself(X):  # query i sees keys 0..i-1: lengths off by one
    n, d = X.shape[1], X.shape[2]
    scores = X @ X.transpose(1, 2) / math.sqrt(d)
    blocked = torch.ones(n, n, dtype=torch.bool).triu(0)
    weights = torch.softmax(scores.masked_fill(blocked, -1e9), dim=-1)
    weights = weights.masked_fill(blocked.all(-1, keepdim=True), 0.0)
    return weights @ X


def causal_looks_ahead(X):  # masks the past instead of the future
    n, d = X.shape[1], X.shape[2]
    scores = X @ X.transpose(1, 2) / math.sqrt(d)
    past = torch.ones(n, n, dtype=torch.bool).tril(-1)
    return torch.softmax(scores.masked_fill(past, float("-inf")), dim=-1) @ X


def causal_unscaled(X):
    n = X.shape[1]
    future = torch.ones(n, n, dtype=torch.bool).triu(1)
    return torch.softmax((X @ X.transpose(1, 2)).masked_fill(future, float("-inf")), dim=-1) @ X


# name -> (correct answer, [(known mistake, a case it must fail)])
CHECKERS = {
    "check_mha_parameter_count": (
        count_ok,
        [
            (count_per_head, "num_hiddens=40, num_heads=5, bias=False"),
            (count_without_output, "num_hiddens=40, num_heads=1, bias=False"),
            (count_without_bias, "num_hiddens=12, num_heads=3, bias=True"),
            (count_small_heads_output, "num_hiddens=40, num_heads=5, bias=False"),
        ],
    ),
    "check_head_lengths": (
        head_lengths_ok,
        [
            (head_lengths_tiled, "lengths [3, 2], 5 heads"),
            (head_lengths_unrepeated, "lengths [4, 0, 2], 3 heads"),
            (head_lengths_flat, "2-D lengths [[1, 2], [3, 4]], 2 heads"),
        ],
    ),
    "check_rotation": (
        rotation_ok,
        [
            (rotation_backwards, "offset 3, num_hiddens 8"),
            (rotation_wrong_frequency, "offset 10, num_hiddens 32"),
            (rotation_identity_only, "offset 1, num_hiddens 2"),
        ],
    ),
    "check_causal_self_attention": (
        causal_ok,
        [
            (causal_unmasked, "X of shape (2, 6, 8)"),
            (causal_excludes_itself, "X of shape (1, 4, 2)"),
            (causal_looks_ahead, "X of shape (2, 6, 8)"),
            (causal_unscaled, "X of shape (2, 6, 8)"),
        ],
    ),
}

MISTAKES = [
    pytest.param(name, broken, case, id=f"{name}-{broken.__name__}")
    for name, (_, wrongs) in CHECKERS.items()
    for broken, case in wrongs
]


# ---------------------------------------------------------------- every checker


@pytest.mark.parametrize("name", sorted(CHECKERS))
def test_checker_passes_a_correct_answer(name):
    correct, _ = CHECKERS[name]
    report = getattr(checks, name)(correct)
    assert report.passed and report.failures == []
    assert len(report.lines) >= 3
    assert repr(report).splitlines()[0] == f"{name}: all {len(report.lines)} cases passed."


@pytest.mark.parametrize(("name", "broken", "case"), MISTAKES)
def test_checker_rejects_a_known_mistake_and_names_the_case(name, broken, case):
    report = getattr(checks, name)(broken)
    assert not report.passed
    assert case in report.failures
    assert any(line.startswith("  FAIL  ") and case in line for line in repr(report).splitlines())
    # The report names the known mistake (and drops the case hints), or keeps the hints.
    if report.mistake is None:
        assert "hint:" in repr(report)
    else:
        assert 'see "' in report.diagnosis and "hint:" not in repr(report)


def test_every_checker_has_a_table():
    # test_checks.py runs its table-free tests (exceptions, non-callables) over
    # every checker; the other shared tests need a checker in one of the tables.
    # Chapter 8's two checkers have their own tests in test_checks.py instead.
    import importlib

    from test_checks import CHECKERS as PART_ONE
    from test_checks import EVERY_CHECKER

    # One table module per later chapter's checkers, each with its CHECKERS.
    later = [
        importlib.import_module(name).CHECKERS
        for name in (
            "test_checks_part3",
            "test_checks_lm",
            "test_checks_induction",
            "test_checks_scale",
        )
    ]
    # Chapter 8's two, and Part IV's (test_checks_seq2seq.py, test_checks_positions.py,
    # test_checks_vit.py test their right answers; test_checks_diagnosis.py their mistakes).
    own_tests = {
        "check_right_key_accuracy",
        "check_two_part_targets",
        "check_cross_attention_weights",
        "check_decoder_masks",
        "check_rope_scores",
        "check_alibi_slopes",
        "check_patchify",
        "check_attention_rollout",
        "check_ink",
    }
    tabled = {*PART_ONE, *CHECKERS, *own_tests}.union(*later)
    assert sorted(tabled) == EVERY_CHECKER


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
@settings(max_examples=10)
def test_checker_rejects_any_visible_error(name, error):
    correct, _ = CHECKERS[name]
    if name == "check_mha_parameter_count":  # a count is off by a whole number
        error = math.copysign(max(1, round(abs(error))), error)
    report = getattr(checks, name)(lambda *args: correct(*args) + error)
    assert len(report.failures) == len(report.lines)


@pytest.mark.parametrize("name", sorted(CHECKERS))
@given(error=st.floats(-1e-7, 1e-7))
@settings(max_examples=10)
def test_checker_accepts_rounding_errors(name, error):
    correct, _ = CHECKERS[name]
    if name == "check_head_lengths":  # lengths are integers: floats fail, even exact ones
        report = getattr(checks, name)(lambda *args: correct(*args).double() + error)
        assert len(report.failures) == len(report.lines)
        assert "expected an integer tensor" in report.lines[0]
    else:
        assert getattr(checks, name)(lambda *args: correct(*args) + error)


# ---------------------------------------------------------------- specific behaviour


def test_causal_checker_catches_in_place_modification():
    def sneaky(X):
        out = causal_ok(X.clone())
        X.mul_(2)
        return out

    report = checks.check_causal_self_attention(sneaky)
    assert "the function modified its input in place" in repr(report)


def test_parameter_count_accepts_tensors_and_rejects_non_numbers():
    assert checks.check_mha_parameter_count(lambda *a: torch.tensor(count_ok(*a)))
    report = checks.check_mha_parameter_count(lambda *a: str(count_ok(*a)))
    assert "expected a number, got str" in repr(report)
    assert not checks.check_mha_parameter_count(lambda *a: True)


def test_rotation_checker_agrees_with_the_encoding():
    """The checker's matrices really map p_i to p_{i + offset}."""
    P = sinusoidal_encoding(50, 32).double()
    M = rotation_ok(10, 32).double()
    torch.testing.assert_close(P[:40] @ M.T, P[10:50], atol=1e-5, rtol=0)
    assert checks.check_rotation(rotation_ok)


def test_head_lengths_checker_needs_the_right_order():
    report = checks.check_head_lengths(head_lengths_tiled)
    # One sequence: tiling and repeating agree, so only the multi-sequence cases fail.
    assert "one sequence, lengths [5], 4 heads" not in report.failures
    assert len(report.failures) == 3


def test_the_issue_30_slips_are_named():
    """The frequency 10000^(-j/D) gets its own diagnosis, not a generic hint."""
    report = checks.check_rotation(rotation_wrong_frequency)
    assert report.mistake == "frequency 10000^(-j/D)", repr(report)
    assert "10000^(-2j/D)" in repr(report)
