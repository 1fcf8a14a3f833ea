"""Issue 53, item 5: the rest of the public surface against bad input.

Methods and helpers that the API test (test_public_api) cannot spoil by type
alone: degenerate sizes that gave NaN, arguments it skips (a generator, a
device, a position), and functions whose valid call is a training run, whose
bad input must be refused before any training. Each test failed against the
library before its fix (see the commit that added it), except the ones marked
as pinning a result that was already defined.
"""

from __future__ import annotations

import pytest
import torch

from attnbook import (
    digits,
    explain,
    flash,
    induction,
    linear_attention,
    lm,
    pooling,
    rope,
    sampling,
    seq2seq,
    vit,
    vit_study,
)
from attnbook import length_generalisation as lg


def _r(*shape, seed=0):
    return torch.rand(*shape, generator=torch.Generator().manual_seed(seed))


# --- degenerate sizes that returned NaN


@pytest.mark.parametrize(
    "fn", [flash.naive_attention, flash.tiled_attention, flash.flash_attention]
)
def test_attention_without_features_is_refused(fn):
    with pytest.raises(ValueError, match="at least one feature"):
        fn(_r(2, 3, 0), _r(2, 4, 0), _r(2, 4, 2))


@pytest.mark.parametrize(
    "fn", [flash.naive_attention, flash.tiled_attention, flash.flash_attention]
)
def test_attention_without_keys_gives_zeros(fn):
    """Pins a defined result (not a fix): no key visible, so each row is zeros."""
    out = fn(_r(2, 3, 4), _r(2, 0, 4), _r(2, 0, 2))
    assert out.shape == (2, 3, 2) and bool((out == 0).all())


def test_linear_attention_without_features_or_keys_is_refused():
    with pytest.raises(ValueError, match="at least one feature"):
        linear_attention.linear_attention(_r(2, 3, 0), _r(2, 4, 0), _r(2, 4, 2))
    with pytest.raises(ValueError, match="at least one feature"):
        linear_attention.linear_attention_weights(_r(2, 3, 0), _r(2, 4, 0))
    with pytest.raises(ValueError, match="keys must hold at least one key"):
        linear_attention.linear_attention(_r(2, 3, 4), _r(2, 0, 4), _r(2, 0, 2))


def test_previous_token_score_refuses_an_empty_batch():
    with pytest.raises(ValueError, match="weights must hold at least one sequence"):
        induction.previous_token_score(torch.zeros(0, 2, 5, 5))


def test_cls_attention_refuses_no_heads():
    with pytest.raises(ValueError, match=r"weights must be .*with a head"):
        explain.cls_attention(torch.zeros(2, 0, 5, 5))


def _scores():
    model = vit.build_vit(seed=0, num_hiddens=8, num_heads=2, ffn_hiddens=8, num_layers=1)
    return explain.explanation_scores(model, _r(2, 1, 8, 8), torch.arange(2))


def test_agreement_refuses_a_constant_occlusion():
    scores = {**_scores(), "occlusion": torch.zeros(2, 16)}
    with pytest.raises(ValueError, match=r"scores: the 'raw attention' correlation .* undefined"):
        explain.agreement(scores)


def test_agreement_refuses_malformed_scores():
    scores = _scores()
    with pytest.raises(TypeError, match="scores must be a dict"):
        explain.agreement(list(scores.values()))
    with pytest.raises(ValueError, match=r"scores must hold .*missing \['ink'\]"):
        explain.agreement({k: v for k, v in scores.items() if k != "ink"})
    with pytest.raises(ValueError, match=r"scores\['rollout'\] must be \(images, patches\)"):
        explain.agreement({**scores, "rollout": scores["rollout"][:, :4]})


def _position_model():
    return lg.PositionModel("rope", vocab=16, num_hiddens=8, num_heads=2, num_layers=1)


def test_task_accuracy_refuses_nothing_scored():
    batch = lg.make_copy_batch(2, 4, vocab=16)
    unscored = lg.TaskBatch(batch.tokens, batch.targets, torch.zeros_like(batch.scored))
    with pytest.raises(ValueError, match="batch must score at least one position"):
        lg.task_accuracy(_position_model(), unscored)
    empty = lg.TaskBatch(batch.tokens[:0], batch.targets[:0], batch.scored)
    with pytest.raises(ValueError, match="batch must score at least one position"):
        lg.task_accuracy(_position_model(), empty)


def test_leave_one_out_edges():
    with pytest.raises(ValueError, match="x must hold at least one entry"):
        pooling.leave_one_out(torch.zeros(0))
    assert pooling.leave_one_out(torch.ones(1)).shape == (1, 0)  # defined: nothing left


# --- length_generalisation: seeds, lengths and records


@pytest.mark.parametrize("seed", ["3", None, 2**64])
def test_length_generalisation_seeds_are_checked(seed):
    with pytest.raises((TypeError, ValueError), match="seed"):
        lg.make_copy_batch(2, 4, vocab=16, seed=seed)
    with pytest.raises((TypeError, ValueError), match="seed"):
        lg.evaluate(_position_model(), (4,), size=2, seed=seed)
    with pytest.raises((TypeError, ValueError), match="seed"):
        lg.copy_head_score(_position_model(), 4, size=2, seed=seed)


@pytest.mark.parametrize("lengths", [None, "48", ["x"], (0,)])
def test_evaluate_checks_its_lengths(lengths):
    with pytest.raises((TypeError, ValueError), match="lengths"):
        lg.evaluate(_position_model(), lengths, size=2)


@pytest.mark.parametrize("records", [None, "copy", ["x"], {"scheme": "rope"}])
def test_sweep_ranges_checks_its_records(records):
    with pytest.raises(TypeError, match="records"):
        lg.sweep_ranges(records)


# --- arguments the API test does not spoil


@pytest.mark.parametrize("fn", [sampling.draw, sampling.draw_margin])
@pytest.mark.parametrize("generator", [3, "g"])
def test_draw_names_a_bad_generator(fn, generator):
    with pytest.raises(TypeError, match="generator must be a torch.Generator or None"):
        fn(torch.softmax(_r(2, 5), -1), generator)


def test_filters_need_a_vocabulary_axis_and_a_number():
    with pytest.raises(ValueError, match="logits must have a vocabulary axis"):
        sampling.top_k_filter(torch.tensor(1.0), 2)
    with pytest.raises(TypeError, match="top_k must be an integer"):
        sampling.top_k_filter(_r(2, 5), None)
    with pytest.raises(TypeError, match="top_p must be a number"):
        sampling.top_p_filter(_r(2, 5), None)


@pytest.mark.parametrize(("m", "error"), [(None, TypeError), (-1, ValueError), (2**70, ValueError)])
def test_rope_score_checks_its_positions(m, error):
    with pytest.raises(error, match="m must"):
        rope.rope_score(_r(4), _r(4, seed=1), m, 1)
    with pytest.raises(error, match="n must"):
        rope.rope_score(_r(4), _r(4, seed=1), 1, m)


def test_rope_score_keeps_its_positions():
    """Pins valid calls (not a fix): int and 0-d tensor positions give what they gave."""
    q, k = _r(4), _r(4, seed=1)
    want = (
        rope.apply_rope(q[None], torch.tensor([3]))[0]
        @ rope.apply_rope(k[None], torch.tensor([1]))[0]
    )
    assert rope.rope_score(q, k, 3, 1) == want
    assert rope.rope_score(q, k, torch.tensor(3), torch.tensor(1)) == want


@pytest.mark.parametrize("device", ["gpu", 3, "no-such-device"])
def test_causal_mask_names_a_bad_device(device):
    with pytest.raises((TypeError, ValueError), match="device"):
        induction.causal_mask(3, device)


@pytest.mark.parametrize(
    "keep", [[1.0, 0.0], torch.ones(3), torch.tensor([1.0, float("nan")]), torch.ones(1, 2)]
)
def test_causal_attention_layer_checks_keep(keep):
    layer = induction.CausalAttentionLayer(8, 2)
    with pytest.raises((TypeError, ValueError), match="keep"):
        layer(_r(2, 3, 8), keep)


# --- functions whose valid call trains: bad input refused before any training


@pytest.fixture
def no_training(monkeypatch):
    def train(*args, **kwargs):
        raise AssertionError("training started")

    monkeypatch.setattr(vit_study, "train_vit", train)


def _split():
    """A tiny split of the right kind (the arguments are refused before it is read)."""
    X, y = _r(4, 1, 8, 8), torch.arange(4)
    return digits.DigitsSplit(X, y, X, y)


@pytest.mark.parametrize("fn", [vit_study.run_seed, vit_study.baselines])
@pytest.mark.parametrize(
    ("data", "seed", "match"),
    [("digits", 0, "data must be a DigitsSplit"), (None, 0, "data"), ("split", -1, "seed"),
     ("split", "0", "seed"), ("split", 2.5, "seed"), ("split", True, "seed")],
)  # fmt: skip
def test_study_runs_refuse_bad_input_before_training(fn, data, seed, match, no_training):
    data = _split() if data == "split" else data
    with pytest.raises((TypeError, ValueError), match=match):
        fn(data, seed)


def test_baselines_refuses_a_seed_that_scikit_learn_cannot_take(no_training):
    with pytest.raises(ValueError, match=r"seed must be below 2\*\*32"):
        vit_study.baselines(_split(), 2**32)


def _tiny_lm():
    return lm.TinyLM(vocab_size=11, num_hiddens=8, num_heads=2, num_layers=1, max_len=16)


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        ({"model": "model"}, "model must be a TinyLM"),
        ({"path": None}, "path must be a file name"),
        ({"losses": "1.0"}, "losses must be a list"),
        ({"losses": [1.0, float("nan")]}, r"losses\[1\] must be a finite number"),
        ({"samples": None}, "samples must be a dict"),
        ({"samples": {"x": "ab"}}, "samples key 'x'"),
        ({"samples": {1: 2}}, r"samples\[1\] must be a str"),
    ],
)
def test_save_checkpoint_refuses_bad_input_before_writing(tmp_path, changes, match):
    path = tmp_path / "checkpoint.pt"
    args = {"model": _tiny_lm(), "path": path, "losses": [1.0, 0.5], "samples": {1: "ab"}}
    with pytest.raises((TypeError, ValueError), match=match):
        lm.save_checkpoint(**{**args, **changes})
    assert not path.exists()


@pytest.mark.parametrize("arg", ["batch", "length", "vocab"])
def test_a_size_torch_cannot_hold_is_refused_by_name(arg):
    sizes = {"batch": 2, "length": 6, "vocab": 16, arg: 2**70}
    with pytest.raises(ValueError, match=rf"{arg} must be below 2\*\*63"):
        lg.make_kback_batch(**sizes)


# --- found by a wider fuzz of every public callable and method


@pytest.mark.parametrize("which", ["first", "second"])
def test_induction_targets_refuse_complex_positions(which):
    args = {"first": torch.tensor([0, 1]), "second": torch.tensor([5, 6])}
    args[which] = args[which].to(torch.complex64)
    with pytest.raises(TypeError, match=f"{which} must hold integer positions"):
        induction.induction_targets(**args, segment=3)


def _gru():
    return seq2seq.GRUSeq2Seq(10, 10, embed=4, enc_hiddens=4, dec_hiddens=8, attn_hiddens=4)


def test_gru_seq2seq_takes_a_list_of_lengths():
    """The lengths may be a list (as the encoder documents); the model crashed on one."""
    source, lens = torch.tensor([[1, 2, 3], [4, 5, 0]]), torch.tensor([3, 2])
    model = _gru()
    decoder_input = torch.tensor([[1, 2], [3, 4]])
    assert torch.equal(model(source, [3, 2], decoder_input), model(source, lens, decoder_input))
    assert torch.equal(model.initial_state(source, [3, 2]), model.initial_state(source, lens))
    assert torch.equal(model.greedy(source, [3, 2], 2)[0], model.greedy(source, lens, 2)[0])


@pytest.mark.parametrize(
    ("ids", "error"),
    [(None, TypeError), ("ab", TypeError), (torch.ones(2, dtype=torch.complex64), ValueError)],
)
def test_char_tokenizer_decode_names_bad_ids(ids, error):
    with pytest.raises(error, match="ids must"):
        lm.CharTokenizer("abcab").decode(ids)


@pytest.mark.parametrize("heads", [None, "x", ["x"], [(0,)], [(0, 5)], [(0.0, 1)]])
def test_ablation_table_names_bad_heads(heads):
    model = induction.AttentionOnlyTransformer(vocab=16, num_hiddens=8, num_heads=2, num_layers=2)
    batch = induction.make_repeat_batch(2, length=12, segment=4, vocab=16, max_gap=2)
    with pytest.raises((TypeError, ValueError), match="heads must"):
        induction.ablation_table(model, batch, heads)


@pytest.mark.parametrize(("dates_", "formats"), [(None, ["long"]), ("x", ["long"]), ([], None)])
def test_encode_dates_names_a_list_that_is_not_one(dates_, formats):
    import datetime

    from attnbook import dates

    dates_ = [datetime.date(2001, 2, 3)] if dates_ == [] else dates_
    with pytest.raises(TypeError, match="dates must be a list" if formats else "formats must"):
        dates.encode_dates(dates_, formats)
    with pytest.raises(TypeError, match="symbols must be a list"):
        dates.Vocab(None)


def test_neighbour_swap_refuses_a_grid_torch_cannot_hold():
    with pytest.raises(ValueError, match=r"grid must be below 2\*\*31"):
        vit_study.neighbour_swap(10**30)
