"""Tests of attnbook.linear_attention and attnbook.mqar (the recall task and its model)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from attnbook import linear_attention as la
from attnbook import mqar


def brute_force(q, k, v, causal):
    """Linear attention by loops over queries and keys, the definition written out."""
    b, m, _ = q.shape
    out = torch.zeros(b, m, v.shape[-1], dtype=q.dtype)
    phi = lambda x: torch.where(x > 0, x + 1, torch.exp(x))  # noqa: E731
    for i in range(b):
        for r in range(m):
            last = r + 1 if causal else k.shape[1]
            w = torch.stack([phi(q[i, r]) @ phi(k[i, j]) for j in range(last)])
            out[i, r] = (w / w.sum()) @ v[i, :last]
    return out


@given(
    b=st.integers(1, 2),
    n=st.integers(1, 9),
    d=st.integers(1, 5),
    d_v=st.integers(1, 4),
    causal=st.booleans(),
    seed=st.integers(0, 2**16),
)
@settings(max_examples=30, deadline=None)
def test_linear_attention_matches_brute_force_and_the_weights(b, n, d, d_v, causal, seed):
    g = torch.Generator().manual_seed(seed)
    q, k = (torch.randn(b, n, d, generator=g, dtype=torch.float64) for _ in range(2))
    v = torch.randn(b, n, d_v, generator=g, dtype=torch.float64)
    copies = [t.clone() for t in (q, k, v)]
    out = la.linear_attention(q, k, v, causal=causal)
    torch.testing.assert_close(out, brute_force(q, k, v, causal))
    weights = la.linear_attention_weights(q, k, causal=causal)
    torch.testing.assert_close(weights @ v, out)
    torch.testing.assert_close(weights.sum(-1), torch.ones(b, n, dtype=torch.float64))
    assert bool((weights >= 0).all())
    if causal:
        assert bool((weights.triu(1) == 0).all())
    assert all(torch.equal(a, c) for a, c in zip(copies, (q, k, v)))


def test_elu_feature_map_is_positive_and_continuous():
    x = torch.linspace(-30, 5, 1001, dtype=torch.float64)
    phi = la.elu_feature_map(x)
    assert bool((phi > 0).all())
    torch.testing.assert_close(
        la.elu_feature_map(torch.tensor([0.0, 2.0])), torch.tensor([1.0, 3.0])
    )


def test_causal_linear_attention_ignores_the_future():
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 8, 4, generator=g) for _ in range(3))
    out = la.linear_attention(q, k, v, causal=True)
    k2, v2 = k.clone(), v.clone()
    k2[:, 5:] += 3.0
    v2[:, 5:] -= 2.0
    torch.testing.assert_close(la.linear_attention(q, k2, v2, causal=True)[:, :5], out[:, :5])


def test_linear_self_attention_recurrent_and_quadratic_agree():
    torch.manual_seed(0)
    layer = la.LinearSelfAttention(8, num_heads=2)
    X = torch.randn(3, 7, 8)
    quadratic = layer(X)
    layer.recurrent = True
    torch.testing.assert_close(layer(X), quadratic)
    assert quadratic.shape == (3, 7, 8)


def test_linear_attention_bad_input():
    q = torch.randn(1, 4, 3)
    with pytest.raises(ValueError, match="at most as many queries as keys"):
        la.linear_attention(torch.randn(1, 5, 3), q, q, causal=True)
    with pytest.raises(TypeError, match="causal must be True or False"):
        la.linear_attention(q, q, q, causal="yes")
    with pytest.raises(ValueError, match="num_heads must divide num_hiddens"):
        la.LinearSelfAttention(6, num_heads=4)
    with pytest.raises(ValueError, match="X must have 8 features"):
        la.LinearSelfAttention(8)(torch.randn(1, 2, 3))


# ---------------------------------------------------------------- MQAR


def test_mqar_batch_structure():
    batch = mqar.make_mqar_batch(50, num_pairs=8, vocab_size=128, length=32, seed=3)
    tokens, targets = batch.tokens, batch.targets
    assert tokens.shape == targets.shape == (50, 32)
    for row, target in zip(tokens, targets):
        keys, values = row[0:16:2], row[1:16:2]
        assert len(set(keys.tolist())) == 8 and bool((keys >= 1).all() & (keys < 64).all())
        assert bool((values >= 64).all() & (values < 128).all())
        assert len(set(values.tolist())) == 8
        graded = (target != mqar.IGNORE).nonzero().flatten()
        assert len(graded) == 8 and bool((graded >= 16).all())
        for position in graded.tolist():
            key = row[position]
            first = (keys == key).nonzero().item()
            assert target[position] == values[first] == row[position + 1]
        rest = torch.ones(32, dtype=torch.bool)
        rest[:16] = False
        rest[graded] = False
        rest[graded + 1] = False
        assert bool((row[rest] == 0).all())
    again = mqar.make_mqar_batch(50, seed=3)
    assert torch.equal(again.tokens, tokens) and torch.equal(again.targets, targets)


def test_token_shift_moves_each_row_one_step_later():
    X = torch.randn(2, 5, 3)
    shifted = la.token_shift(X)
    for i in range(5):  # the loop reference
        expected = torch.zeros(2, 3) if i == 0 else X[:, i - 1]
        assert torch.equal(shifted[:, i], expected)
    assert torch.equal(la.token_shift(torch.randn(1, 1, 4)), torch.zeros(1, 1, 4))
    with pytest.raises(ValueError, match="X must be 3-D"):
        la.token_shift(torch.randn(4, 3))


def test_recall_lm_with_token_shift_adds_the_previous_embedding():
    tokens = torch.randint(16, (2, 6), generator=torch.Generator().manual_seed(1))
    plain = mqar.RecallLM("linear", vocab_size=16, num_hiddens=8, max_len=6, seed=2)
    shifted = mqar.RecallLM(
        "linear", vocab_size=16, num_hiddens=8, max_len=6, token_shift=True, seed=2
    )
    shifted.load_state_dict(plain.state_dict())  # the same parameters: no new ones
    embedded = plain.embedding(tokens)
    previous = torch.cat([torch.zeros(2, 1, 8), embedded[:, :-1]], dim=1)
    captured = []
    hook = plain.blocks[0].register_forward_pre_hook(lambda m, args: captured.append(args[0]))
    plain(tokens)
    hook.remove()
    hook = shifted.blocks[0].register_forward_pre_hook(lambda m, args: captured.append(args[0]))
    shifted(tokens)
    hook.remove()
    torch.testing.assert_close(captured[1], captured[0] + previous)
    with pytest.raises(TypeError, match="token_shift must be True or False"):
        mqar.RecallLM(token_shift=1)


def test_guessing_accuracy_matches_a_simulation_of_the_strategy():
    batch = mqar.make_mqar_batch(4000, num_pairs=4, vocab_size=32, length=16, seed=5)
    g = torch.Generator().manual_seed(6)
    hits = {False: 0, True: 0}
    total = 0
    for row, target in zip(batch.tokens, batch.targets):
        values = row[1:8:2].tolist()
        asked = []
        for position in (target != mqar.IGNORE).nonzero().flatten().tolist():
            for rule_out in (False, True):
                pool = [v for v in values if not (rule_out and v in asked)]
                guess = pool[int(torch.randint(len(pool), (1,), generator=g))]
                hits[rule_out] += guess == int(target[position])
            asked.append(int(target[position]))
            total += 1
    assert abs(hits[False] / total - mqar.guessing_accuracy(4)) < 0.01
    assert abs(hits[True] / total - mqar.guessing_accuracy(4, rule_out_asked=True)) < 0.01
    assert mqar.guessing_accuracy(4, rule_out_asked=True) == pytest.approx(
        (1 + 1 / 2 + 1 / 3 + 1 / 4) / 4, abs=1e-12
    )
    with pytest.raises(TypeError, match="rule_out_asked must be True or False"):
        mqar.guessing_accuracy(4, rule_out_asked="yes")


def test_recall_accuracy():
    targets = torch.full((1, 4), mqar.IGNORE)
    targets[0, 1], targets[0, 3] = 2, 0
    logits = torch.zeros(1, 4, 3)
    logits[0, 1, 2] = 1.0  # right
    logits[0, 3, 1] = 1.0  # wrong
    assert mqar.recall_accuracy(logits, targets) == 0.5
    with pytest.raises(ValueError, match="grade no position"):
        mqar.recall_accuracy(logits, torch.full((1, 4), mqar.IGNORE))


@pytest.mark.parametrize("kind", mqar.ATTENTION_KINDS)
def test_recall_lm_is_causal_and_seeded(kind):
    model = mqar.RecallLM(kind, vocab_size=16, num_hiddens=8, num_heads=2, max_len=10, seed=1)
    tokens = torch.randint(16, (2, 10), generator=torch.Generator().manual_seed(0))
    logits = model(tokens)
    assert logits.shape == (2, 10, 16)
    changed = tokens.clone()
    changed[:, 6:] = (changed[:, 6:] + 1) % 16
    torch.testing.assert_close(model(changed)[:, :6], logits[:, :6])
    twin = mqar.RecallLM(kind, vocab_size=16, num_hiddens=8, num_heads=2, max_len=10, seed=1)
    torch.testing.assert_close(twin(tokens), logits)
    assert mqar.RecallLM(kind, ffn_hiddens=0).blocks[0].ffn is None


def test_softmax_attention_of_the_model_matches_sdpa():
    layer = mqar.CausalSoftmaxAttention(8, num_heads=2)
    X = torch.randn(2, 5, 8)
    mha = layer.attention

    def split(t):
        return t.reshape(2, 5, 2, 4).transpose(1, 2)

    heads = F.scaled_dot_product_attention(
        split(mha.W_q(X)), split(mha.W_k(X)), split(mha.W_v(X)), is_causal=True
    )
    expected = mha.W_o(heads.transpose(1, 2).reshape(2, 5, 8))
    torch.testing.assert_close(layer(X), expected)


def test_train_mqar_learns_something_and_repeats():
    def run():
        model = mqar.RecallLM("softmax", vocab_size=16, num_hiddens=16, max_len=8, seed=0)
        return mqar.train_mqar(model, steps=30, batch=16, eval_every=10, num_pairs=2, seed=0)

    log = run()
    assert log.steps == [0, 10, 20, 30] and len(log.losses) == 30
    assert log.losses[-1] < log.losses[0]
    assert run().accuracies == log.accuracies


def test_mqar_bad_input():
    with pytest.raises(ValueError, match="length must be at least 4 \\* num_pairs = 32"):
        mqar.make_mqar_batch(2, length=30)
    with pytest.raises(ValueError, match="vocab_size must be even"):
        mqar.make_mqar_batch(2, vocab_size=15)
    with pytest.raises(ValueError, match="attention must be one of"):
        mqar.RecallLM("cosine")
    with pytest.raises(TypeError, match="seed must be an integer"):
        mqar.make_mqar_batch(2, seed=1.5)
    with pytest.raises(ValueError, match="at most max_len=32 positions, got 33"):
        mqar.RecallLM()(torch.zeros(1, 33, dtype=torch.long))
    with pytest.raises(TypeError, match="model must be a RecallLM"):
        mqar.train_mqar(torch.nn.Linear(2, 2))
