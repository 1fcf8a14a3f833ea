"""Chapter 14's checkers: answers written here, independently of attnbook.rope and
attnbook.alibi, pass; a near miss fails. (Each known mistake gets its own
diagnosis in test_checks_diagnosis.py.)"""

from __future__ import annotations

import math

import torch

from attnbook.checks import check_alibi_slopes, check_rope_scores


def rope_scores_by_loops(q, k):
    """Every pair (2i, 2i+1) of row m turned by m * 10000^(-2i/d), one scalar at a time."""
    n, d = q.shape[-2], q.shape[-1]

    def rotate(x):
        out = x.clone()
        for m in range(n):
            for i in range(d // 2):
                angle = m * 10000.0 ** (-2 * i / d)
                c, s = math.cos(angle), math.sin(angle)
                a, b = x[..., m, 2 * i], x[..., m, 2 * i + 1]
                out[..., m, 2 * i] = c * a - s * b
                out[..., m, 2 * i + 1] = s * a + c * b
        return out

    return rotate(q) @ rotate(k).transpose(-1, -2)


def alibi_slopes_by_rule(h):
    """Press et al.'s rule: the geometric slopes of the largest power of two below h,
    then every other slope of twice that many heads."""

    def power_of_two(n):
        return [2.0 ** (-8.0 * k / n) for k in range(1, n + 1)]

    p = 2 ** int(math.floor(math.log2(h)))
    if p == h:
        return power_of_two(h)
    return power_of_two(p) + power_of_two(2 * p)[0::2][: h - p]


def test_right_answers_pass():
    assert check_rope_scores(rope_scores_by_loops)
    assert check_alibi_slopes(alibi_slopes_by_rule)
    assert check_alibi_slopes(lambda h: torch.tensor(alibi_slopes_by_rule(h)))


def test_near_misses_fail():
    assert not check_rope_scores(lambda q, k: 1.001 * rope_scores_by_loops(q, k))
    assert not check_alibi_slopes(lambda h: [1.001 * s for s in alibi_slopes_by_rule(h)])


def _diagnosis(checker, name):
    return next(m.diagnosis for m in checker.mistakes if m.name == name)


def test_the_other_alternate_slopes_are_described_as_the_exercise_does():
    # For h = 6 the right extra slope 1/2 lies above every 4-head slope, so the
    # diagnosis must not say the extra slopes fall between them.
    text = _diagnosis(check_alibi_slopes, "wrong_extra_slopes")
    assert "fall between" not in text
    assert "the other alternate slopes" in text and "2nd, 4th" in text


def test_turning_the_other_way_is_named_a_convention_not_an_error():
    # Turning by -i theta_r is a valid convention (the exercise says so): the
    # diagnosis says it is the opposite one, not that the rotation is wrong.
    text = _diagnosis(check_rope_scores, "negative_angle")
    assert "opposite rotation convention" in text
    assert "valid" in text


# Cold reader, part 4: two slips that the checkers read as "no simple pattern" and
# as "a scale or a normalisation forgotten".


def rope_scores_exponent_doubled(q, k):
    """The book's solution with the 2 of the exponent written twice."""
    n, d = q.shape[-2], q.shape[-1]
    theta = 10000.0 ** (-2 * torch.arange(0, d, 2, dtype=torch.float64) / d)  # (d/2,)
    angles = torch.arange(n, dtype=torch.float64)[:, None] * theta  # (n, d/2)
    cos, sin = angles.cos().to(q.dtype), angles.sin().to(q.dtype)

    def turn(x):
        a, b = x[..., 0::2], x[..., 1::2]
        return torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).reshape(x.shape)

    return turn(q) @ turn(k).transpose(-1, -2)


def test_a_doubled_2_in_the_rope_exponent_is_named():
    report = check_rope_scores(rope_scores_exponent_doubled)
    assert not report.passed
    assert report.mistake == "exponent_doubled", repr(report)
    assert "the 2 counted twice" in report.diagnosis


def test_negative_alibi_slopes_are_named_with_the_sign_in_the_bias():
    report = check_alibi_slopes(lambda h: [-m for m in alibi_slopes_by_rule(h)])
    assert not report.passed
    assert report.mistake == "negative", repr(report)
    assert "belongs in the bias" in report.diagnosis
    assert "a scale or a normalisation" not in repr(report)


def test_a_wrong_slope_is_named_at_one_place():
    # Cold reader, part 4: the failing line said "at index (1,) expected ..." (the
    # largest error) and then "the first wrong entry is at head 0" (the first
    # wrong one), two places for one mistake. The reading's place replaces the index.
    report = check_alibi_slopes(lambda h: [2.0 ** (-7.0 * c / h) for c in range(1, h + 1)])
    assert not report.passed and report.mistake is None, repr(report)
    first = next(line for line in report.lines if "FAIL" in line)
    assert "the first wrong entry is at head 0: expected 0.5, got " in first, first
    assert "at index" not in first, first
