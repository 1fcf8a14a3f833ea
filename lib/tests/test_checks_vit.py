"""Chapter 15's checkers accept right answers written another way and reject wrong ones."""

from __future__ import annotations

import torch

from attnbook import checks


def loop_patchify(images, p):
    b, C, H, W = images.shape
    tokens = []
    for r in range(0, H, p):
        for c in range(0, W, p):
            tokens.append(images[:, :, r : r + p, c : c + p].reshape(b, -1))
    return torch.stack(tokens, dim=1)


def unfold_patchify(images, p):
    return torch.nn.functional.unfold(images, kernel_size=p, stride=p).transpose(1, 2)


def loop_rollout(weights):
    n = weights.shape[-1]
    R = torch.eye(n).expand(weights.shape[1], n, n)
    for W in weights:
        A = 0.5 * W.mean(1) + 0.5 * torch.eye(n)
        R = A @ R
    return R


def test_right_answers_pass():
    assert checks.check_patchify(loop_patchify).passed
    assert checks.check_patchify(unfold_patchify).passed
    assert checks.check_attention_rollout(loop_rollout).passed
    assert checks.check_ink(lambda x, p: loop_patchify(x, p).sum(-1)).passed


def test_an_unknown_mistake_fails_without_a_diagnosis():
    report = checks.check_ink(lambda x, p: loop_patchify(x, p).std(-1))
    assert not report.passed and report.mistake is None
    report = checks.check_attention_rollout(lambda w: loop_rollout(w) ** 2)
    assert not report.passed and report.mistake is None
    assert "the first wrong entry is at image 0, token 0, input token" in repr(report)
    # One place per line: not also the comparison's "at index" of the largest error.
    first = next(line for line in report.lines if "FAIL" in line)
    assert "first wrong entry" in first and "at index" not in first, first


def test_a_slip_no_catalogued_mistake_knows_is_named_by_its_mutant():
    report = checks.check_ink(lambda x, p: loop_patchify(x, p).amax(-1))
    assert report.mistake == "one slip: `amax` instead of `sum`"
    assert "`(...).amax(dim=-1)` where the right answer has `(...).sum(dim=-1)`" in repr(report)


def test_a_transposed_rollout_is_named():
    report = checks.check_attention_rollout(lambda w: loop_rollout(w).transpose(-2, -1))
    assert report.mistake == "transposed"


def test_rollout_messages_use_the_chapters_notation():
    # Chapter 15 counts blocks from 0, R = A_{L-1} ... A_1 A_0, and writes the
    # heads' mean as alpha-bar: A_l = (alpha-bar_l + I) / 2.
    texts = [m.diagnosis for m in checks.check_attention_rollout.mistakes]
    report = checks.check_attention_rollout(lambda w: w.mean(dim=2)[-1])  # an unknown slip
    assert not report.passed and report.mistake is None, repr(report)
    texts.append(repr(report))
    for text in texts:
        assert "A_L ..." not in text and "W + I" not in text and "A_1 A_2" not in text, text
    whole = " ".join(texts)
    assert "R = A_{L-1} ... A_1 A_0" in whole and "(\u1fb1_l + I) / 2" in whole


def test_channels_last_is_called_a_convention():
    text = next(m.diagnosis for m in checks.check_patchify.mistakes if m.name == "channels last")
    assert "convention" in text, text


def patchify_split_pixels_first(images, p):
    """Cold reader, part 4: each axis split as (p, H/p), the H/p axes taken as the grid."""
    b, C, H, W = images.shape
    grid = images.reshape(b, C, p, H // p, p, W // p).permute(0, 3, 5, 1, 2, 4)
    return grid.reshape(b, (H // p) * (W // p), C * p * p)


def test_patchify_split_as_p_then_h_over_p_is_named_not_called_a_transpose():
    report = checks.check_patchify(patchify_split_pixels_first)
    assert not report.passed
    assert report.mistake == "split as (p, H/p)", repr(report)
    assert ".T in the wrong place" not in repr(report)
