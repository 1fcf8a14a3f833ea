"""Tests of chapter 13's checkers: right answers pass, known mistakes are named."""

from __future__ import annotations

import pytest
import torch

from attnbook.checks import check_cross_attention_weights, check_decoder_masks
from attnbook.masking import masked_softmax


def right_weights(s, H, lens, W_s, W_h, v):
    scores = torch.tanh((s @ W_s.T)[:, None, :] + H @ W_h.T) @ v  # (b, n)
    return masked_softmax(scores[:, None, :], lens)[:, 0]


def right_weights_by_loops(s, H, lens, W_s, W_h, v):
    out = torch.zeros(H.shape[0], H.shape[1])
    for i in range(H.shape[0]):
        scores = torch.stack([v @ torch.tanh(W_s @ s[i] + W_h @ H[i, j]) for j in range(lens[i])])
        out[i, : lens[i]] = torch.softmax(scores, 0)
    return out


def right_masks(m, lens, n):
    causal = torch.ones(m, m).triu(1).bool()
    return causal, torch.arange(n)[None, :] >= lens[:, None]


def test_right_answers_pass():
    assert check_cross_attention_weights(right_weights)
    assert check_cross_attention_weights(right_weights_by_loops)
    assert check_decoder_masks(right_masks)


def test_torch_accepts_the_right_masks():
    layer = torch.nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, batch_first=True).eval()
    lens = torch.tensor([5, 2])
    tgt_mask, padding = right_masks(3, lens, 5)
    X, memory = torch.randn(2, 3, 8), torch.randn(2, 5, 8)
    out = layer(X, memory, tgt_mask=tgt_mask, memory_key_padding_mask=padding)
    memory2 = memory.clone()
    memory2[1, 2:] = 9.0  # padding of the second source changes nothing
    torch.testing.assert_close(
        layer(X, memory2, tgt_mask=tgt_mask, memory_key_padding_mask=padding), out
    )


def test_unknown_mistakes_get_plain_failures():
    report = check_decoder_masks(lambda m, lens, n: (torch.zeros(m, m), torch.zeros(2, n)))
    assert not report and "boolean" in repr(report)
    report = check_cross_attention_weights(lambda s, H, lens, W_s, W_h, v: H[..., 0] * 0 + 1)
    assert not report and report.mistake is None
    # No known mistake: the first failing case is read in plain words, not by the recipe.
    assert "the first wrong entry is at example 0, source position 0" in repr(report)
    assert "hint" not in repr(report)


def masks_padding_from_target_length(m, source_lens, n):
    """Cold reader, part 4: the padding mask built over the target's m positions."""
    causal = torch.triu(torch.ones(m, m, dtype=torch.bool), diagonal=1)
    return causal, torch.arange(m) >= source_lens[:, None]


@pytest.mark.parametrize("seed", range(5))
def test_a_padding_mask_built_from_the_target_length_is_named(seed):
    report = check_decoder_masks(masks_padding_from_target_length, seed=seed)
    assert not report.passed and len(report.failures) == len(report.lines)
    assert report.mistake == "padding_from_target_length", repr(report)
    assert "torch.arange(n) >= source_lens[:, None]" in report.diagnosis
