"""A student's misuses named in issue 41, each pinned (each failed before its fix)."""

from __future__ import annotations

import math

import pytest
import torch

from attnbook import alibi, induction, linear_attention, lm, pooling, sampling, vit, vit_study


def _vit():
    return vit.build_vit(num_hiddens=8, num_heads=2, ffn_hiddens=8, num_layers=1)


def test_accuracy_refuses_labels_that_would_broadcast():
    model = _vit()
    X = torch.rand(6, 1, 8, 8, generator=torch.Generator().manual_seed(0))
    y = vit.predict_proba(model, X).argmax(-1)
    assert vit.accuracy(model, X, y) == 1.0
    with pytest.raises(ValueError, match=r"y must be 1-D"):
        vit.accuracy(model, X, y[:, None])
    with pytest.raises(ValueError, match=r"y must hold ids in \[0, 9\]"):
        vit.accuracy(model, X, y + 10)


@pytest.mark.parametrize("train", [True, False])
def test_evaluating_keeps_the_callers_mode(train):
    model = _vit().train(train)
    X = torch.rand(4, 1, 8, 8)
    vit.predict_proba(model, X)
    vit.accuracy(model, X, torch.zeros(4, dtype=torch.long))
    assert all(m.training == train for m in model.modules())


def test_train_lm_keeps_the_callers_mode():
    model = lm.TinyLM(5, 8, 2, 1, 8).eval()
    lm.train_lm(model, torch.arange(30) % 5, 1, batch_size=2)
    assert not model.training


def test_corpus_loss_reads_a_short_text_and_refuses_an_empty_one():
    model, _ = lm.load_checkpoint()
    short = "The query attends to the keys."
    assert len(short) < model.max_len + 1
    loss = lm.corpus_loss(model, short)
    assert math.isfinite(loss) and loss > 0
    with pytest.raises(ValueError, match="text must hold at least 2 characters"):
        lm.corpus_loss(model, "")


def test_draw_refuses_logits_and_empty_rows():
    with pytest.raises(ValueError, match="probs"):
        sampling.draw(torch.tensor([[2.0, -1.0, 0.5]]))
    with pytest.raises(ValueError, match="probs"):
        sampling.draw(torch.zeros(1, 3))
    with pytest.raises(ValueError, match="probs"):
        sampling.draw(torch.tensor([[0.5, math.nan, 0.5]]))


def test_elu_feature_map_is_never_zero_and_linear_attention_stays_finite():
    x = torch.tensor([-200.0, -30.0, -17.5, -1.0, 0.0, 2.0])
    phi = linear_attention.elu_feature_map(x)
    assert bool((phi > 0).all())
    # Unchanged wherever elu(x) + 1 was already positive.
    assert torch.equal(phi[3:], torch.nn.functional.elu(x[3:]) + 1)
    q = torch.full((1, 2, 3), -40.0)
    k = torch.full((1, 4, 3), -40.0)
    v = torch.rand(1, 4, 2)
    assert torch.isfinite(linear_attention.linear_attention(q, k, v)).all()


def test_induction_targets_refuses_negative_starts():
    with pytest.raises(ValueError, match="first must hold positions >= 0"):
        induction.induction_targets(torch.tensor([-3]), torch.tensor([5]), 3)


def test_alibi_bias_refuses_an_integer_dtype():
    with pytest.raises(TypeError, match="dtype"):
        alibi.alibi_bias(4, 2, dtype=torch.int64)


def test_records_agree_names_a_nan():
    assert vit_study.records_agree({"accuracy": 0.9}, {"accuracy": 0.9}) == []
    assert vit_study.records_agree({"accuracy": math.nan}, {"accuracy": 0.9}) != []


def test_nadaraya_watson_refuses_a_nan_key():
    x = torch.tensor([0.0, math.nan, 2.0])
    with pytest.raises(ValueError, match="x_train must not contain NaN"):
        pooling.nadaraya_watson(x, torch.ones(3), torch.tensor([1.0]))


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda m: lm.generate(m, torch.tensor([1]), 1, return_logits="False"), "return_logits"),
        (lambda m: lm.matmul_flops(m, 1, use_cache="False"), "use_cache"),
    ],
)
def test_string_flags_are_refused(call, name):
    with pytest.raises(TypeError, match=name):
        call(lm.TinyLM(5, 8, 2, 1, 8))


@pytest.mark.parametrize("train", [True, False])
def test_explanations_keep_the_callers_mode(train):
    from attnbook import explain

    model = _vit().train(train)
    X = torch.rand(2, 1, 8, 8, generator=torch.Generator().manual_seed(0))
    y = torch.tensor([1, 2])
    explain.occlusion_scores(model, X, y, 2)
    assert all(m.training == train for m in model.modules())
    explain.deletion_curve(model, X, y, torch.rand(2, 16), 2)
    assert all(m.training == train for m in model.modules())
    explain.explanation_scores(model, X, y)
    assert all(m.training == train for m in model.modules())


def test_deletion_curve_refuses_nan_scores():
    from attnbook import explain

    X = torch.rand(2, 1, 8, 8)
    scores = torch.rand(2, 16)
    scores[0, 3] = math.nan
    with pytest.raises(ValueError, match="scores must not contain NaN"):
        explain.deletion_curve(_vit(), X, torch.tensor([1, 2]), scores, 2)


def test_date_strings_are_refused_by_the_argument_that_holds_them():
    from attnbook import dates, seq2seq

    with pytest.raises(ValueError, match=r"texts\[1\] = 'x\?' holds characters outside"):
        dates.encode_sources(["3 Feb 2001", "x?"])
    with pytest.raises(TypeError, match="texts must be a list of strings"):
        dates.encode_sources(5)
    model = seq2seq.GRUSeq2Seq(
        len(dates.SOURCE_VOCAB.symbols),
        len(dates.TARGET_VOCAB.symbols),
        embed=4,
        enc_hiddens=4,
        dec_hiddens=8,
        attn_hiddens=4,
    )
    with pytest.raises(ValueError, match="start_from must be a non-empty list"):
        seq2seq.rewrite(model, ["03/02/01"], start_from=[""])
    with pytest.raises(ValueError, match="text must be a numeric date"):
        seq2seq.other_century("03/02/ab")


def test_path_ablation_refuses_tokens_the_model_cannot_embed():
    from attnbook import composition

    model = induction.AttentionOnlyTransformer(
        vocab=16, num_hiddens=8, num_heads=2, num_layers=2, max_len=12
    )
    wide = induction.make_repeat_batch(2, length=12, segment=4, vocab=40, max_gap=2, seed=0)
    with pytest.raises(
        ValueError, match=r"ids 0 to 15\), got batch.tokens holding the id 39 \(a model of"
    ):
        composition.path_ablation_accuracy(model, wide, ())
    long = induction.make_repeat_batch(2, length=20, segment=8, vocab=16, max_gap=2, seed=0)
    with pytest.raises(ValueError, match="max_len=12"):
        composition.path_ablation_accuracy(model, long, ())


def test_accuracy_by_position_refuses_edges_that_are_not_a_sequence():
    from attnbook import length_generalisation as lg

    model = lg.PositionModel("rope", vocab=16, num_hiddens=8, num_heads=2, num_layers=1)
    with pytest.raises(TypeError, match="edges must be a sequence"):
        lg.accuracy_by_position(model, 6, 6, task="copy", size=2)


def test_vit_study_refuses_data_that_is_not_a_split():
    with pytest.raises(TypeError, match="data must be a DigitsSplit"):
        vit_study.fills({"X_train": torch.rand(3, 1, 8, 8)})
