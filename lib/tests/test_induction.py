"""Tests of attnbook.induction: task, model, head scores, ablation, circuits, training."""

from __future__ import annotations

import copy

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnbook import induction
from attnbook.induction import (
    AttentionOnlyTransformer,
    CausalAttentionLayer,
    copy_accuracy,
    induction_score,
    make_repeat_batch,
    previous_token_score,
)

# ---------------------------------------------------------------- the task


@given(
    batch=st.integers(1, 6),
    segment=st.integers(2, 8),
    max_gap=st.integers(0, 6),
    extra=st.integers(0, 6),
    vocab=st.integers(8, 40),
    seed=st.integers(0, 2**31),
)
@settings(max_examples=40, deadline=None)
def test_repeat_batch_invariants(batch, segment, max_gap, extra, vocab, seed):
    length = 2 * segment + max_gap + extra
    data = make_repeat_batch(batch, length, segment, vocab, max_gap, seed=seed)
    assert data.tokens.shape == (batch, length) and data.tokens.dtype == torch.int64
    assert int(data.tokens.min()) >= 0 and int(data.tokens.max()) < vocab
    assert bool((data.first >= 0).all()) and bool((data.second + segment <= length).all())
    gap = data.second - data.first - segment
    assert torch.equal(gap, data.gap) and bool((gap >= 0).all()) and bool((gap <= max_gap).all())
    for b in range(batch):
        f, s = int(data.first[b]), int(data.second[b])
        seg = data.tokens[b, f : f + segment]
        assert torch.equal(seg, data.tokens[b, s : s + segment])
        assert len(set(seg.tolist())) == segment  # distinct tokens in the segment
    positions = data.copy_positions()
    assert positions.shape == (batch, segment - 1)
    rows = torch.arange(batch).unsqueeze(1)
    source = data.first.unsqueeze(1) + torch.arange(1, segment)
    assert torch.equal(data.tokens[rows, positions + 1], data.tokens[rows, source])


def test_repeat_batch_is_seeded_and_gaps_vary():
    a = make_repeat_batch(64, seed=3)
    b = make_repeat_batch(64, seed=3)
    assert torch.equal(a.tokens, b.tokens) and torch.equal(a.second, b.second)
    assert not torch.equal(a.tokens, make_repeat_batch(64, seed=4).tokens)
    assert set(a.gap.tolist()) == set(range(13)) or len(set(a.gap.tolist())) > 8
    fixed = make_repeat_batch(16, min_gap=4, max_gap=4, seed=0)
    assert fixed.gap.tolist() == [4] * 16
    g = torch.Generator().manual_seed(0)
    assert not torch.equal(make_repeat_batch(8, seed=g).tokens, make_repeat_batch(8, seed=g).tokens)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"batch": 0}, ValueError, r"batch must be >= 1, got 0"),
        ({"batch": 2.0}, TypeError, r"batch must be an integer"),
        ({"segment": 1}, ValueError, r"segment must be >= 2"),
        ({"segment": 20, "vocab": 10}, ValueError, r"segment must be <= vocab"),
        ({"length": 30}, ValueError, r"length must hold both copies .* got length=30"),
        ({"min_gap": 5, "max_gap": 2}, ValueError, r"min_gap must be <= max_gap"),
        ({"max_gap": -1}, ValueError, r"max_gap must be >= 0, got -1"),
        ({"min_gap": 1.5}, TypeError, r"min_gap must be an integer, got 1.5"),
        ({"seed": "x"}, TypeError, r"seed must be an integer seed or a torch.Generator"),
    ],
)
def test_repeat_batch_bad_input(kwargs, error, match):
    args = {"batch": 2, **kwargs}
    with pytest.raises(error, match=match):
        make_repeat_batch(**args)


# ---------------------------------------------------------------- the model


def test_attention_is_causal_and_rows_sum_to_one():
    model = AttentionOnlyTransformer(vocab=20, num_hiddens=16, num_heads=2, max_len=12, seed=1)
    tokens = make_repeat_batch(3, length=12, segment=4, vocab=20, max_gap=2, seed=0).tokens
    logits = model(tokens)
    assert logits.shape == (3, 12, 20)
    future = torch.ones(12, 12, dtype=torch.bool).triu(1)
    for weights in model.attention_weights:
        assert weights.shape == (3, 2, 12, 12)
        assert bool((weights[..., future] == 0).all())
        torch.testing.assert_close(weights.sum(-1), torch.ones(3, 2, 12))


def test_changing_a_future_token_leaves_earlier_logits_alone():
    model = AttentionOnlyTransformer(vocab=20, num_hiddens=16, max_len=10, seed=2)
    tokens = torch.randint(20, (2, 10), generator=torch.Generator().manual_seed(0))
    changed = tokens.clone()
    changed[:, 6] = (changed[:, 6] + 1) % 20
    with torch.no_grad():
        a, b = model(tokens), model(changed)
    torch.testing.assert_close(a[:, :6], b[:, :6])
    assert not torch.allclose(a[:, 6:], b[:, 6:])


def test_layer_agrees_with_torch_multihead_attention():
    layer = CausalAttentionLayer(16, 4)
    reference = torch.nn.MultiheadAttention(16, 4, bias=False, batch_first=True)
    with torch.no_grad():
        reference.in_proj_weight.copy_(
            torch.cat([layer.W_q.weight, layer.W_k.weight, layer.W_v.weight])
        )
        reference.out_proj.weight.copy_(layer.W_o.weight)
    x = torch.randn(2, 7, 16, generator=torch.Generator().manual_seed(0))
    mask = torch.ones(7, 7, dtype=torch.bool).triu(1)  # True = not allowed
    expected, weights = reference(x, x, x, attn_mask=mask, average_attn_weights=False)
    torch.testing.assert_close(layer(x), expected)
    torch.testing.assert_close(layer.attention_weights, weights)


def test_model_is_seeded_and_leaves_the_global_rng_alone():
    torch.manual_seed(0)
    state = torch.random.get_rng_state()
    a, b = AttentionOnlyTransformer(seed=5), AttentionOnlyTransformer(seed=5)
    assert torch.equal(torch.random.get_rng_state(), state)
    for p, q in zip(a.parameters(), b.parameters()):
        assert torch.equal(p, q)


def test_model_does_not_modify_tokens():
    model = AttentionOnlyTransformer(seed=0)
    tokens = make_repeat_batch(2, seed=0).tokens
    before = tokens.clone()
    model(tokens, ablate=[(0, 1)])
    assert torch.equal(tokens, before)


@pytest.mark.parametrize(
    ("tokens", "error", "match"),
    [
        (torch.zeros(2, 41, dtype=torch.long), ValueError, r"at most max_len=40 positions, got 41"),
        (torch.full((1, 5), 64), ValueError, r"tokens must lie in \[0, 63\]"),
        (torch.zeros(2, 5), TypeError, r"tokens must hold integer ids, got dtype torch.float32"),
        (torch.zeros(5, dtype=torch.long), ValueError, r"tokens must be 2-D, got shape \(5,\)"),
    ],
)
def test_model_bad_tokens(tokens, error, match):
    with pytest.raises(error, match=match):
        AttentionOnlyTransformer(seed=0)(tokens)


def test_model_bad_arguments():
    with pytest.raises(ValueError, match=r"num_heads must divide num_hiddens"):
        AttentionOnlyTransformer(num_hiddens=10, num_heads=3)
    with pytest.raises(TypeError, match=r"seed must be an integer, got 'a'"):
        AttentionOnlyTransformer(seed="a")
    model = AttentionOnlyTransformer(seed=0)
    tokens = torch.zeros(1, 4, dtype=torch.long)
    with pytest.raises(ValueError, match=r"ablate layer must lie in \[0, 1\], got 2"):
        model(tokens, ablate=[(2, 0)])
    with pytest.raises(ValueError, match=r"ablate head must lie in \[0, 1\], got 5"):
        model(tokens, ablate=(0, 5))
    with pytest.raises(TypeError, match=r"ablate must hold \(layer, head\) pairs"):
        model(tokens, ablate=[3])


# ---------------------------------------------------------------- ablation


def test_ablation_equals_zeroing_the_heads_columns_of_w_o():
    model = AttentionOnlyTransformer(vocab=20, num_hiddens=16, num_heads=2, max_len=12, seed=3)
    tokens = torch.randint(20, (3, 12), generator=torch.Generator().manual_seed(1))
    for layer in range(2):
        for head in range(2):
            clone = copy.deepcopy(model)
            with torch.no_grad():
                clone.layers[layer].W_o.weight[:, head * 8 : (head + 1) * 8] = 0
                torch.testing.assert_close(
                    model(tokens, ablate=[(layer, head)]), clone(tokens), rtol=0, atol=1e-6
                )
    # Ablating nothing changes nothing; ablating every head leaves embeddings only.
    with torch.no_grad():
        torch.testing.assert_close(model(tokens, ablate=[]), model(tokens))
        everything = [(i, j) for i in range(2) for j in range(2)]
        direct = model.unembed(model.embed(tokens) + model.position.weight[:12])
        torch.testing.assert_close(model(tokens, ablate=everything), direct)


def test_copy_accuracy_counts_right_predictions():
    batch = make_repeat_batch(4, length=20, segment=5, vocab=16, max_gap=3, seed=0)

    class Oracle(AttentionOnlyTransformer):
        def forward(self, tokens, ablate=None):  # the true next token, everywhere
            nxt = torch.cat([tokens[:, 1:], tokens[:, :1]], dim=1)
            return torch.nn.functional.one_hot(nxt, 16).float()

    oracle = Oracle(vocab=16, num_hiddens=8, max_len=20)
    assert copy_accuracy(oracle, batch) == 1.0
    with pytest.raises(TypeError, match=r"batch must be a RepeatBatch"):
        copy_accuracy(oracle, batch.tokens)
    with pytest.raises(TypeError, match=r"model must be an AttentionOnlyTransformer"):
        copy_accuracy(torch.nn.Linear(2, 2), batch)


# ---------------------------------------------------------------- head scores


def test_previous_token_score_on_hand_made_patterns():
    n = 8
    previous = torch.zeros(n, n)
    previous[0, 0] = 1
    previous[torch.arange(1, n), torch.arange(n - 1)] = 1
    uniform = torch.ones(n, n).tril()
    uniform = uniform / uniform.sum(-1, keepdim=True)
    weights = torch.stack([previous, uniform, torch.eye(n)]).unsqueeze(0)
    scores = previous_token_score(weights)
    expected_uniform = sum(1 / (i + 1) for i in range(1, n)) / (n - 1)
    torch.testing.assert_close(scores, torch.tensor([1.0, expected_uniform, 0.0]))
    assert scores[1] < 0.4


@given(seed=st.integers(0, 1000), n=st.integers(2, 9), batch=st.integers(1, 3))
@settings(max_examples=20, deadline=None)
def test_previous_token_score_matches_a_loop(seed, n, batch):
    g = torch.Generator().manual_seed(seed)
    weights = torch.softmax(torch.randn(batch, 2, n, n, generator=g), -1)
    expected = torch.stack(
        [sum(weights[b, h, i, i - 1] for b in range(batch) for i in range(1, n)) for h in range(2)]
    ) / (batch * (n - 1))
    torch.testing.assert_close(previous_token_score(weights), expected)


def test_induction_score_on_hand_made_patterns():
    batch = make_repeat_batch(3, length=30, segment=6, vocab=20, max_gap=5, seed=2)
    n = 30
    perfect = torch.eye(n).repeat(3, 1, 1)
    on_copy = perfect.clone()
    for b in range(3):
        for j in range(6):
            q = int(batch.second[b]) + j
            perfect[b, q] = 0
            perfect[b, q, int(batch.first[b]) + j + 1] = 1
            on_copy[b, q] = 0
            on_copy[b, q, int(batch.first[b]) + j] = 1
    uniform = torch.ones(n, n).tril()
    uniform = (uniform / uniform.sum(-1, keepdim=True)).repeat(3, 1, 1)
    weights = torch.stack([perfect, on_copy, uniform], dim=1)  # (batch, heads, n, n)
    scores = induction_score(weights, batch.first, batch.second, batch.segment)
    assert scores[0] == 1.0 and scores[1] == 0.0 and scores[2] < 0.1


def test_score_bad_input():
    with pytest.raises(ValueError, match=r"weights must be 4-D"):
        previous_token_score(torch.ones(3, 3))
    with pytest.raises(ValueError, match=r"queries == keys"):
        previous_token_score(torch.ones(1, 1, 3, 4))
    with pytest.raises(TypeError, match=r"floating-point"):
        previous_token_score(torch.ones(1, 1, 3, 3, dtype=torch.long))
    w = torch.ones(2, 1, 10, 10) / 10
    with pytest.raises(ValueError, match=r"second must start at least `segment` positions"):
        induction_score(w, torch.tensor([0, 0]), torch.tensor([2, 5]), 3)
    with pytest.raises(ValueError, match=r"one entry per sequence of weights \(2\), got 1"):
        induction_score(w, torch.tensor([0]), torch.tensor([4]), 3)
    with pytest.raises(ValueError, match=r"must end inside the 10 positions"):
        induction_score(w, torch.tensor([0, 0]), torch.tensor([8, 4]), 3)
    with pytest.raises(TypeError, match=r"first must hold integer positions"):
        induction_score(w, torch.tensor([0.0, 0.0]), torch.tensor([4, 4]), 3)


# ---------------------------------------------------------------- circuits


def test_circuits_agree_with_the_model():
    model = AttentionOnlyTransformer(vocab=12, num_hiddens=8, num_heads=2, max_len=6, seed=4)
    x = torch.randn(5, 8, generator=torch.Generator().manual_seed(0))
    layer = model.layers[1]
    with torch.no_grad():
        q = layer._split(layer.W_q(x.unsqueeze(0)))[0, 1]  # (5, head_size)
        k = layer._split(layer.W_k(x.unsqueeze(0)))[0, 1]
        expected = q @ k.T / 2.0  # sqrt(head_size = 4)
    torch.testing.assert_close(induction.qk_circuit(model, 1, 1, x, x), expected)
    # OV: a head attending to a single position (query 0 can only see key 0)
    # adds W_o W_v x_0 to the stream; through the unembedding, the OV circuit's row.
    tokens = torch.arange(12).unsqueeze(1)  # 12 sequences of one token
    with torch.no_grad():
        x0 = model.embed(tokens)[:, 0]  # (12, D)
        other = model.layers[0]
        other_keep = torch.tensor([0.0, 1.0])
        written = other(model.embed(tokens), other_keep)[:, 0]
    torch.testing.assert_close(written, induction.head_output(model, 0, 1, x0))
    ov = induction.ov_circuit(model, 0, 1)
    with torch.no_grad():
        torch.testing.assert_close(ov, model.unembed(written))
    with pytest.raises(ValueError, match=r"head must lie in \[0, 1\], got 2"):
        induction.ov_circuit(model, 0, 2)
    with pytest.raises(ValueError, match=r"vectors must have 8 features"):
        induction.head_output(model, 0, 0, torch.ones(3, 5))


# ---------------------------------------------------------------- training


def test_training_smoke_records_and_restores_threads():
    threads = torch.get_num_threads()
    model = AttentionOnlyTransformer(vocab=16, num_hiddens=16, max_len=20, seed=0)
    task = {"segment": 5, "max_gap": 4}
    log = induction.train_induction(
        model, steps=12, batch=8, record_every=5, probe_size=6, copy_only=True, task=task
    )
    assert torch.get_num_threads() == threads
    assert log.steps == [0, 5, 10, 12] and len(log.losses) == 12
    assert len(log.accuracies) == len(log.patterns) == len(log.induction_scores) == 4
    assert log.patterns[0].shape == (2, 2, 20, 20)
    assert log.previous_scores[0].shape == log.induction_scores[0].shape == (2, 2)
    assert all(0 <= a <= 1 for a in log.accuracies)
    # Same arguments, same log.
    again = induction.train_induction(
        AttentionOnlyTransformer(vocab=16, num_hiddens=16, max_len=20, seed=0),
        steps=12, batch=8, record_every=5, probe_size=6, copy_only=True, task=task,
    )  # fmt: skip
    assert again.losses == log.losses
    with pytest.raises(TypeError, match=r"model must be an AttentionOnlyTransformer"):
        induction.train_induction(torch.nn.Linear(2, 2))
    with pytest.raises(ValueError, match=r"record_every must be >= 1"):
        induction.train_induction(model, record_every=0)


# Trains a model for several seconds: make check's tier (conftest.py, "slow").
@pytest.mark.slow
def test_two_layers_learn_to_copy_and_one_layer_does_not():
    """A shortened version of the chapter's run: the jump happens by step 200."""
    two = AttentionOnlyTransformer(seed=0)
    log = induction.train_induction(two, steps=200, record_every=100, copy_only=True)
    assert log.accuracies[1] < 0.3 and log.accuracies[-1] > 0.8
    scores = induction.head_scores(two, log.probe)
    assert scores["induction"][1].max() > 0.7 and scores["previous"][0].max() > 0.4
    table = induction.ablation_table(two, log.probe)
    prev = int(scores["previous"][0].argmax())
    assert table[(0, prev)] < table[None] - 0.4
