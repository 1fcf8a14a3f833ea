"""Tests of attnbook.training: the recall model against references, and the training loop."""

from __future__ import annotations

import math

import pytest
import torch
from _helpers import assert_unchanged, clones

from attnbook.recall import make_recall_batch, right_key_accuracy
from attnbook.scoring import DotProductAttention
from attnbook.training import RecallAttention, TrainingLog, train_recall


def sample(b=3, m=2, n=5, d=8, d_v=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (
        torch.randn(b, m, d, generator=g),
        torch.randn(b, n, d, generator=g),
        torch.randn(b, n, d_v, generator=g),
    )


def test_one_scaled_head_is_dot_product_attention_on_the_projections():
    model = RecallAttention(8, d_v=4, seed=1)
    queries, keys, values = sample()
    before = clones(queries, keys, values)
    output = model(queries, keys, values)
    reference = DotProductAttention()
    expected = reference(queries @ model.W_q[0].T, keys @ model.W_k[0].T, values)
    torch.testing.assert_close(output, expected)
    torch.testing.assert_close(model.attention_weights[:, 0], reference.attention_weights)
    assert_unchanged(before, (queries, keys, values))


def test_unscaled_head_skips_the_square_root():
    model = RecallAttention(8, d_v=4, scaled=False, seed=1)
    queries, keys, values = sample()
    output = model(queries, keys, values)
    scores = (queries @ model.W_q[0].T) @ (keys @ model.W_k[0].T).transpose(1, 2)
    torch.testing.assert_close(output, torch.softmax(scores, -1) @ values)
    scaled = RecallAttention(8, d_v=4, scaled=True, seed=1)
    torch.testing.assert_close(
        model.scores(queries, keys), scaled.scores(queries, keys) * math.sqrt(8)
    )


def test_heads_by_a_loop_and_concatenation():
    model = RecallAttention(8, d_v=4, num_heads=2, head_size=3, seed=2)
    queries, keys, values = sample()
    output = model(queries, keys, values)
    pooled = []
    for h in range(2):
        q = queries @ model.W_q[h].T  # (b, m, 3)
        k = keys @ model.W_k[h].T  # (b, n, 3)
        weights = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(3), -1)
        torch.testing.assert_close(model.attention_weights[:, h], weights)
        pooled.append(weights @ values)
    torch.testing.assert_close(output, torch.cat(pooled, -1) @ model.W_o.T)
    assert output.shape == (3, 2, 4)
    assert model.attention_weights.shape == (3, 2, 2, 5)
    torch.testing.assert_close(model.attention_weights.sum(-1), torch.ones(3, 2, 2))


def test_initialisation_is_seeded_and_keeps_unit_variance():
    a, b = RecallAttention(64, seed=3), RecallAttention(64, seed=3)
    assert torch.equal(a.W_q, b.W_q) and torch.equal(a.W_k, b.W_k)
    assert not torch.equal(a.W_q, RecallAttention(64, seed=4).W_q)
    x = torch.randn(4000, 64, generator=torch.Generator().manual_seed(0))
    projected = x @ a.W_q[0].T
    assert abs(projected.var().item() - 1) < 0.2
    assert a.W_o is None and RecallAttention(8, num_heads=2).W_o.shape == (8, 16)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"d": 0}, ValueError, "d must be >= 1"),
        ({"d": 4, "num_heads": 1.0}, TypeError, "num_heads must be an integer"),
        ({"d": 4, "scaled": 1}, TypeError, "scaled must be True or False"),
        ({"d": 4, "head_size": 0}, ValueError, "head_size"),
        ({"d": 4, "seed": "x"}, TypeError, "seed"),
    ],
)
def test_constructor_bad_input(kwargs, error, match):
    with pytest.raises(error, match=match):
        RecallAttention(**kwargs)


@pytest.mark.parametrize(
    ("shapes", "error", "match"),
    [
        (((3, 1, 5), (3, 4, 8), (3, 4, 8)), ValueError, "queries must have 8 features"),
        (((3, 1, 8), (3, 4, 8), (3, 4, 5)), ValueError, "values must have 8 features"),
        (((2, 1, 8), (3, 4, 8), (3, 4, 8)), ValueError, "same batch size"),
        (((3, 1, 8), (3, 4, 8), (3, 5, 8)), ValueError, "same number of items"),
        (((3, 8), (3, 4, 8), (3, 4, 8)), ValueError, "queries must be 3-D"),
    ],
)
def test_forward_bad_input(shapes, error, match):
    model = RecallAttention(8)
    with pytest.raises(error, match=match):
        model(*(torch.zeros(s) for s in shapes))


def test_forward_rejects_integer_tensors():
    with pytest.raises(TypeError, match="keys must have a floating-point dtype"):
        RecallAttention(2)(
            torch.zeros(1, 1, 2), torch.zeros(1, 3, 2, dtype=torch.long), torch.zeros(1, 3, 2)
        )


def quick_run(**kwargs):
    args = {"steps": 60, "batch": 16, "n": 4, "record_at": [10, 30], "probe_size": 64} | kwargs
    return train_recall(RecallAttention(8, seed=0), **args)


def test_training_learns_to_look_at_the_right_key():
    log = quick_run(steps=150, lr=1.0)
    assert isinstance(log, TrainingLog)
    assert log.accuracies[0] < 0.5
    assert log.accuracies[-1] > 0.9
    assert log.probe_losses[-1] < 0.3 * log.probe_losses[0]


def test_log_structure():
    log = quick_run()
    assert log.steps == [0, 10, 30, 60]
    assert len(log.losses) == len(log.grad_norms) == 60
    assert len(log.probe_losses) == len(log.accuracies) == len(log.weights) == 4
    assert all(w.shape == (64, 1, 4) for w in log.weights)
    torch.testing.assert_close(log.weights[-1].sum(-1), torch.ones(64, 1))
    assert log.probe.queries.shape == (64, 1, 8)
    # The probe is the batch drawn from seed + 1.
    assert torch.equal(log.probe.keys, make_recall_batch(64, 4, 8, seed=1).keys)


def test_training_is_repeatable_and_restores_threads_and_mode():
    threads = torch.get_num_threads()
    model = RecallAttention(8, seed=0)
    model.eval()
    first = train_recall(model, steps=20, batch=8, n=4, probe_size=16)
    assert torch.get_num_threads() == threads
    assert not model.training
    second = quick_run(steps=20, batch=8, probe_size=16, record_at=[])
    assert first.losses == second.losses
    assert first.probe_losses == second.probe_losses
    third = quick_run(steps=20, batch=8, probe_size=16, record_at=[], seed=5)
    assert third.losses != first.losses


def test_first_probe_evaluation_is_the_untrained_model():
    model = RecallAttention(8, seed=0)
    probe = make_recall_batch(64, 4, 8, seed=1)
    with torch.no_grad():
        output = model(probe.queries, probe.keys, probe.values)
    log = train_recall(model, steps=5, batch=8, n=4, probe_size=64)
    assert log.probe_losses[0] == pytest.approx(float(((output - probe.targets) ** 2).mean()))


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"model": torch.nn.Linear(2, 2)}, TypeError, "model must be a RecallAttention"),
        ({"steps": 0}, ValueError, "steps must be >= 1"),
        ({"lr": -1.0}, ValueError, "lr must be a finite number > 0"),
        ({"record_at": [5, 99]}, ValueError, r"record_at\[1\] must lie in \[0, steps=10\]"),
        ({"record_at": 5}, TypeError, "record_at must be a sequence"),
        ({"record_at": [2.5]}, TypeError, r"record_at\[0\] must be an integer"),
        ({"n": 0}, ValueError, "n must be >= 1"),
        ({"noise": -1}, ValueError, "noise"),
        ({"seed": 0.5}, TypeError, "seed must be an integer"),
        ({"optimizer": "sgd"}, ValueError, "optimizer must be 'gd' or 'adam', got 'sgd'"),
    ],
)
def test_train_bad_input(kwargs, error, match):
    args = {"model": RecallAttention(4), "steps": 10} | kwargs
    with pytest.raises(error, match=match):
        train_recall(**args)


def test_adam_steps_are_torch_adam_on_the_same_batches():
    """optimizer="adam": the weights after training are torch.optim.Adam's, step for step."""
    model = RecallAttention(8, seed=0)
    log = train_recall(model, steps=5, batch=8, n=4, lr=0.01, probe_size=16, optimizer="adam")
    reference = RecallAttention(8, seed=0)
    adam = torch.optim.Adam(reference.parameters(), lr=0.01)
    data = torch.Generator().manual_seed(0)
    losses = []
    for _ in range(5):
        batch = make_recall_batch(8, 4, 8, seed=data)
        loss = ((reference(batch.queries, batch.keys, batch.values) - batch.targets) ** 2).mean()
        adam.zero_grad()
        loss.backward()
        adam.step()
        losses.append(loss.item())
    assert log.losses == pytest.approx(losses, rel=1e-6)
    torch.testing.assert_close(model.W_q, reference.W_q)
    torch.testing.assert_close(model.W_k, reference.W_k)
    # Not plain gradient descent: the same run with the default optimizer differs.
    plain = train_recall(RecallAttention(8, seed=0), steps=5, batch=8, n=4, lr=0.01, probe_size=16)
    assert plain.losses[1:] != pytest.approx(log.losses[1:], rel=1e-3)


def test_adam_unscaled_is_scaled_with_larger_weights_and_fourth_root_lr():
    """Adam ignores the gradient's scale: the factor is d^(1/4) for the weights and the lr."""
    d = 16
    unscaled = RecallAttention(d, scaled=False, seed=1)
    rescaled = RecallAttention(d, scaled=True, seed=1)
    with torch.no_grad():
        rescaled.W_q *= d**0.25
        rescaled.W_k *= d**0.25
    args = {"steps": 4, "batch": 8, "n": 4, "probe_size": 16, "optimizer": "adam"}
    first = train_recall(unscaled, lr=0.01, **args)
    second = train_recall(rescaled, lr=0.01 * d**0.25, **args)
    torch.testing.assert_close(torch.tensor(first.losses), torch.tensor(second.losses))
    torch.testing.assert_close(rescaled.W_q / d**0.25, unscaled.W_q)
    # With the plain-descent factor sqrt(d) instead, the runs part ways.
    third = train_recall(
        RecallAttention(d, scaled=True, seed=1), lr=0.01 * d**0.5, **args
    )  # (weights not rescaled either: a different model)
    assert third.losses[1:] != pytest.approx(first.losses[1:], rel=1e-3)


def specialised_heads(c=3.0):
    """Two heads of size 8 on d = 16: head 0 compares the first halves, head 1 the second."""
    model = RecallAttention(16, num_heads=2, head_size=8, seed=0)
    with torch.no_grad():
        model.W_q.zero_()
        model.W_k.zero_()
        for head in range(2):
            block = c * torch.eye(8)
            model.W_q[head, :, head * 8 : (head + 1) * 8] = block
            model.W_k[head, :, head * 8 : (head + 1) * 8] = block
    return model


def test_two_part_accuracy_grades_each_head_against_each_part():
    log = train_recall(specialised_heads(), steps=1, batch=8, n=8, parts=2, lr=1e-6)
    graded = log.head_accuracies[0]  # (heads, parts), before any step
    assert graded.shape == (2, 2)
    weights, index = log.weights[0], log.probe.index  # (probe, heads, n), (probe, 2)
    for head in range(2):
        for part in range(2):
            hits = (weights[:, head].argmax(-1) == index[:, part]).double().mean()
            assert graded[head, part].item() == pytest.approx(hits.item())
    # Each head finds its own part's key (a bilinear score on 8 features is
    # right about 9 times in 10): the task accuracy is high, where grading every
    # head against the first part alone would give about one half.
    assert graded[0, 0] > 0.85 and graded[1, 1] > 0.85
    assert graded[0, 1] < 0.2 and graded[1, 0] < 0.2
    assert log.accuracies[0] == pytest.approx(float((graded[0, 0] + graded[1, 1]) / 2))
    assert log.accuracies[0] > 0.85


def test_one_part_accuracy_is_the_right_key_accuracy():
    log = quick_run(steps=30)
    for weights, accuracy, graded in zip(log.weights, log.accuracies, log.head_accuracies):
        assert graded.shape == (1, 1)
        expected = right_key_accuracy(weights[:, 0], log.probe.index[:, 0])
        assert accuracy == pytest.approx(expected.item())
