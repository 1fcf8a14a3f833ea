"""Every checker runs the reader's function on fresh copies and names an in-place
edit; every forbidden shortcut is rejected; an unknown slip is read in plain words.

The right answers come from the per-part test modules (pytest puts this
folder on ``sys.path``).
"""

from __future__ import annotations

import math

import pytest
import test_checks as part12
import test_checks_induction as induction_tests
import test_checks_lm as lm_tests
import test_checks_part2 as part2_tests
import test_checks_part3 as part3_tests
import test_checks_positions as positions_tests
import test_checks_scale as scale_tests
import test_checks_seq2seq as seq2seq_tests
import test_checks_vit as vit_tests
import torch
import torch.nn.functional as F

from attnbook import checks, explain, norms, patches, rope
from attnbook.checks._core import Case, _run
from attnbook.checks._explain import describe


def _right_answers() -> dict:
    right = {name: rights[0] for name, (rights, _) in part12.CHECKERS.items()}
    right["check_right_key_accuracy"] = part12.accuracy_ok
    right["check_two_part_targets"] = part12.two_part_ok
    for module in (induction_tests, lm_tests, part2_tests, part3_tests, scale_tests):
        right.update({name: entry[0] for name, entry in module.CHECKERS.items()})
    right["check_cross_attention_weights"] = seq2seq_tests.right_weights
    right["check_decoder_masks"] = seq2seq_tests.right_masks
    right["check_rope_scores"] = positions_tests.rope_scores_by_loops
    right["check_alibi_slopes"] = positions_tests.alibi_slopes_by_rule
    right["check_patchify"] = vit_tests.loop_patchify
    right["check_attention_rollout"] = vit_tests.loop_rollout
    right["check_ink"] = lambda images, p: vit_tests.loop_patchify(images, p).sum(-1)
    return right


RIGHT = _right_answers()
NAMES = [name for name in checks.__all__ if name.startswith("check_")]

# The checkers whose exercise takes no tensor at all (numbers, a dtype): there is
# nothing to modify in place. A checker that gains a tensor argument must leave
# this list, and then the in-place test covers it.
NO_TENSOR_INPUT = {
    "check_attention_memory",
    "check_alibi_slopes",
    "check_block_parameter_count",
    "check_causal_lengths",
    "check_causal_mask",
    "check_kv_cache_size",
    "check_mha_parameter_count",
    "check_rotation",
}


def test_every_checker_has_a_right_answer_here():
    assert sorted(RIGHT) == sorted(NAMES)


def _edit_in_place(value) -> bool:
    """Change a tensor (or the tensors in a list) in place; True if there was one."""
    if isinstance(value, (list, tuple)):
        edited = [_edit_in_place(v) for v in value]  # every one, no short cut
        return any(edited)
    if not isinstance(value, torch.Tensor) or value.numel() == 0:
        return False
    if value.dtype == torch.bool:
        value.logical_not_()
    else:
        value.add_(1)  # raises for a tensor that tracks gradients: that is an edit too
    return True


def _in_place_variant(right, touched: list):
    """The right answer, computed on copies, that then edits every input in place."""

    def variant(*args):
        answer = right(*[a.clone() if isinstance(a, torch.Tensor) else a for a in args])
        edited = [_edit_in_place(a) for a in args]  # every one, no short cut
        touched.append(any(edited))
        return answer

    return variant


@pytest.mark.parametrize("name", NAMES)
def test_every_checker_names_an_in_place_edit_of_a_right_answer(name):
    checker = getattr(checks, name)
    assert checker(RIGHT[name]).passed
    touched: list[bool] = []
    report = checker(_in_place_variant(RIGHT[name], touched))
    if name in NO_TENSOR_INPUT:
        assert not any(touched), f"{name} passes tensors: take it off NO_TENSOR_INPUT"
        assert report.passed
        return
    assert any(touched), f"{name} passes no tensor: put it on NO_TENSOR_INPUT"
    assert not report.passed
    assert report.mistake == "modified its input in place", repr(report)
    assert "modified its input in place" in repr(report)
    # Only the edit is reported: no known mistake, no case hint.
    assert "hint:" not in repr(report)


def test_an_in_place_layer_norm_is_named_as_such_not_as_rmsnorm():
    def layer_norm_in_place(X, gamma, beta, eps):
        X -= X.mean(dim=-1, keepdim=True)
        X /= torch.sqrt((X * X).mean(dim=-1, keepdim=True) + eps)
        return gamma * X + beta

    report = checks.check_layer_norm(layer_norm_in_place)
    assert report.mistake == "modified its input in place"
    assert "RMSNorm" not in repr(report)
    assert "argument 1 (X) changed" in repr(report)


def test_each_case_and_each_mistake_gets_fresh_inputs():
    seen = []

    def spoils(x):
        seen.append(x.clone())
        x.mul_(0)
        return 2 * seen[-1]

    X = torch.tensor([1.0, 2.0])
    cases = [Case("one", (X,), 2 * X), Case("again", (X,), 2 * X)]
    report = _run("toy", spoils, cases)
    assert torch.equal(X, torch.tensor([1.0, 2.0]))
    assert all(torch.equal(s, X) for s in seen)
    assert report.mistake == "modified its input in place"


def test_a_wrong_answer_that_also_edits_its_input_says_both():
    def wrong_and_in_place(X, gamma, beta, eps):
        X -= X.mean(dim=-1, keepdim=True)
        return gamma * X / torch.sqrt(X.var(dim=-1, keepdim=True) + eps) + beta

    report = checks.check_layer_norm(wrong_and_in_place)
    assert report.mistake == "divides by D - 1"
    assert "it also modified its input in place" in repr(report)


# ---------------------------------------------------------------- forbidden shortcuts


def _rope_with_library(q, k):
    positions = torch.arange(q.shape[-2])
    return rope.apply_rope(q, positions) @ rope.apply_rope(k, positions).transpose(-1, -2)


def _tiled_with_whole_mask(q, k, v, block_size):
    n = q.shape[1]
    mask = torch.ones(n, n, dtype=torch.bool).tril()  # the whole n x n mask
    return scale_tests.tiled(q, k, v, block_size, visible=lambda cols, rows: mask[rows, cols])


def _mha_count_by_building(num_hiddens, num_heads, bias):
    from attnbook.multihead import MultiHeadAttention

    layer = MultiHeadAttention(num_hiddens, num_heads, bias=bias)
    return sum(p.numel() for p in layer.parameters())


def _block_count_by_building(num_hiddens, ffn_hiddens):
    from attnbook.transformer import TransformerBlock

    return sum(p.numel() for p in TransformerBlock(num_hiddens, 1, ffn_hiddens).parameters())


def _masks_with_torch(m, source_lens, n):
    causal = torch.nn.Transformer.generate_square_subsequent_mask(m) == -math.inf
    return causal, torch.arange(n) >= source_lens[:, None]


SHORTCUTS = [
    (
        "check_layer_norm",
        lambda X, g, b, eps: F.layer_norm(X, (X.shape[-1],), g, b, eps),
        "nn.functional.layer_norm",
    ),
    (
        "check_layer_norm",
        lambda X, g, b, eps: torch.nn.LayerNorm(X.shape[-1], eps=eps)(X) * g + b,
        "nn.functional.layer_norm",
    ),
    (
        "check_layer_norm",
        lambda X, g, b, eps: norms.layer_norm(X, g, b, eps),
        "attnbook.norms.layer_norm",
    ),
    ("check_rope_scores", _rope_with_library, "apply_rope"),
    ("check_decoder_masks", _masks_with_torch, "generate_square_subsequent_mask"),
    ("check_tiled_causal", _tiled_with_whole_mask, "the whole n x n mask"),
    ("check_patchify", lambda images, p: patches.patchify(images, p), "patchify"),
    ("check_attention_rollout", lambda w: explain.attention_rollout(w), "attention_rollout"),
    ("check_mha_parameter_count", _mha_count_by_building, "MultiHeadAttention(...)"),
    ("check_block_parameter_count", _block_count_by_building, "TransformerBlock(...)"),
    ("check_online_softmax", lambda X, b: torch.softmax(X, dim=-1), "torch.softmax"),
    (
        "check_tiled_causal",
        lambda q, k, v, b: F.scaled_dot_product_attention(q, k, v, is_causal=True),
        "scaled_dot_product_attention",
    ),
]


@pytest.mark.parametrize(("name", "shortcut", "named"), SHORTCUTS)
def test_each_forbidden_shortcut_is_rejected_and_named(name, shortcut, named):
    report = getattr(checks, name)(shortcut)
    assert not report.passed
    assert named in repr(report), repr(report)


def test_the_tiled_limit_rejects_a_mask_exactly_n_by_n_and_accepts_the_tiles():
    assert checks.check_tiled_causal(scale_tests.tiled_ok).passed
    report = checks.check_tiled_causal(_tiled_with_whole_mask)
    assert report.failures == ["n=256, d=8, block_size=32: no tensor near n x n"]
    assert report.mistake == "the whole mask"


def test_a_forbidden_library_function_is_caught_however_it_was_imported():
    from attnbook.rope import apply_rope as renamed

    def rope_scores(q, k):
        p = torch.arange(q.shape[-2])
        return renamed(q, p) @ renamed(k, p).transpose(-1, -2)

    assert checks.check_rope_scores(rope_scores).mistake == "apply_rope"


def test_the_library_layer_norm_is_caught_however_it_was_imported():
    from attnbook.norms import LayerNorm
    from attnbook.norms import layer_norm as renamed

    def by_function(X, gamma, beta, eps):
        return renamed(X, gamma, beta, eps)

    def by_module(X, gamma, beta, eps):
        return LayerNorm(X.shape[-1], eps=eps)(X) * gamma + beta

    for shortcut in (by_function, by_module):
        report = checks.check_layer_norm(shortcut)
        assert report.mistake == "attnbook.norms.layer_norm", repr(report)
        assert "attnbook.norms.layer_norm" in report.diagnosis
    # nn.functional.layer_norm keeps its own diagnosis.
    report = checks.check_layer_norm(lambda X, g, b, eps: F.layer_norm(X, X.shape[-1:], g, b, eps))
    assert report.mistake == "F.layer_norm", repr(report)


def test_torch_causal_mask_is_caught_however_it_was_reached():
    from torch.nn import Transformer

    square = Transformer.generate_square_subsequent_mask

    def decoder_masks(m, source_lens, n):
        causal = square(m, dtype=torch.float32).isinf()
        return causal, torch.arange(n) >= source_lens[:, None]

    report = checks.check_decoder_masks(decoder_masks)
    assert report.mistake == "generate_square_subsequent_mask", repr(report)
    assert "generate_square_subsequent_mask" in report.diagnosis
    # The check leaves the torch function as it was, and working.
    assert Transformer.generate_square_subsequent_mask is square
    assert square(3).isinf().sum().item() == 3


def test_ink_of_the_first_channel_only_is_rejected():
    report = checks.check_ink(lambda images, p: vit_tests.loop_patchify(images[:, :1], p).sum(-1))
    assert not report.passed
    assert report.mistake == "first channel only"


# ---------------------------------------------------------------- unknown slips in plain words

FALLBACK = [
    # Parts I and II (check_causal_lengths and check_head_lengths answer integers,
    # which the slip below leaves alone: test_checks_slips.py has theirs)
    "check_softmax",
    "check_normalize",
    "check_epanechnikov",
    "check_gaussian_weights",
    "check_masked_softmax",
    "check_scaled_dot_product",
    "check_entropy",
    "check_mha_parameter_count",
    "check_rotation",
    "check_causal_self_attention",
    "check_right_key_accuracy",
    "check_two_part_targets",
    # Parts III and IV
    "check_kv_cache",
    "check_attention_memory",
    "check_tiled_causal",
    "check_cross_attention_weights",
    "check_decoder_masks",
    "check_rope_scores",
    "check_alibi_slopes",
    "check_patchify",
    "check_attention_rollout",
    "check_ink",
]


def _scale_tensors(value, factor):
    if isinstance(value, torch.Tensor) and value.is_floating_point():
        return value * factor
    if isinstance(value, (tuple, list)):
        return type(value)(_scale_tensors(v, factor) for v in value)
    if isinstance(value, torch.Tensor) and value.dtype == torch.bool:
        flipped = value.clone()
        if flipped.numel():
            flipped.view(-1)[-1] = ~flipped.view(-1)[-1]  # one entry off: no known mistake
        return flipped
    if isinstance(value, list) and value:
        return [v * factor for v in value]
    return value * factor if isinstance(value, (int, float)) else value


def _unknown_slip(right):
    """A right answer off by a factor of 1.37 (or one mask entry): a slip no checker knows."""

    def slip(*args):
        out = right(*args)
        if isinstance(out, list):
            return [v * 1.37 for v in out]
        if isinstance(out, tuple) and len(out) == 3 and out[0].dim() == 1:  # a cache step
            return (out[0] * 1.37, out[1], out[2])
        return _scale_tensors(out, 1.37)

    return slip


@pytest.mark.parametrize("name", FALLBACK)
def test_an_unknown_slip_is_read_in_plain_words_not_by_the_recipe(name):
    checker = getattr(checks, name)
    report = checker(_unknown_slip(RIGHT[name]))
    text = repr(report)
    assert not report.passed and report.mistake is None, text
    assert "hint:" not in text  # the recipe is not repeated under every case
    first = next(line for line in report.lines if line.startswith("  FAIL"))
    assert any(
        words in first
        for words in ("times the right", "the first wrong entry", "entries differ", "only ")
    ), first


def test_describe_names_the_pattern_of_a_difference():
    want = torch.arange(12.0).reshape(3, 4) + 1
    assert "2 times the right one" in describe(2 * want, want, ("row", "column"))
    zeros = describe(torch.zeros_like(want), want, ("row", "column"))
    assert "all zeros" in zeros and "constant factor" not in zeros, zeros
    assert "off by the same +0.5" in describe(want + 0.5, want, ("row", "column"))
    square = torch.randn(3, 3, generator=torch.Generator().manual_seed(0))
    assert "transposed" in describe(square.T, square, ("query", "key"))
    assert "reversed along column" in describe(want.flip(1), want, ("row", "column"))
    one_row = want.clone()
    one_row[2] = -1
    assert "only row 2 (of 3) is wrong" in describe(one_row, want, ("row", "column"))
    assert "one axis too few" in describe(want.sum(0), want, ("row", "column"))
    assert "first wrong entry is at row 0, column 0" in describe(
        one_row * 0, want, ("row", "column")
    )
    assert describe(want.clone(), want, ("row", "column")) is None
    assert "1.5 times the right number" in describe(torch.tensor(3.0), torch.tensor(2.0), ("n",))
    assert "NaN or inf" in describe(want / 0 * 0, want, ("row", "column"))
    assert math.isfinite(want.sum().item())
