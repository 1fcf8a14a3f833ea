"""Tests of attnbook.length_generalisation: the tasks, the model, training, scores."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from attnbook import length_generalisation as lg
from attnbook.alibi import alibi_bias
from attnbook.rope import apply_rope


def test_copy_batch_repeats_distinct_tokens():
    b = lg.make_copy_batch(5, 12, vocab=20, seed=3)
    assert b.tokens.shape == (5, 12)
    first, second = b.tokens[:, :6], b.tokens[:, 6:]
    assert torch.equal(first, second)
    assert all(len(set(row.tolist())) == 6 for row in first)
    assert b.scored.tolist() == [False] * 6 + [True] * 5 + [False]
    # Every scored answer is the next token, i.e. the token after the earlier copy.
    for i in range(6, 11):
        assert torch.equal(b.targets[:, i], b.tokens[:, i + 1])
        assert torch.equal(b.targets[:, i], b.tokens[:, i - 6 + 1])


def test_kback_batch():
    b = lg.make_kback_batch(4, 10, k=3, vocab=7, seed=0)
    assert torch.equal(b.targets[:, 3:], b.tokens[:, :7])
    assert b.scored.tolist() == [False] * 3 + [True] * 7


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: lg.make_copy_batch(2, 7), ValueError, "length must be even and >= 4, got 7"),
        (lambda: lg.make_copy_batch(2, 40, vocab=10), ValueError, "length / 2 must be <= vocab"),
        (lambda: lg.make_kback_batch(2, 3, k=3), ValueError, "length must exceed k=3, got 3"),
        (lambda: lg.PositionModel("relative"), ValueError, "scheme must be one of"),
        (
            lambda: lg.PositionModel("rope", num_hiddens=6, num_heads=2),
            ValueError,
            "head size .* must be even, got 3",
        ),
        (lambda: lg.PositionModel("nope", seed=1.5), TypeError, "seed must be an integer"),
        (lambda: lg.evaluate(lg.PositionModel("nope"), task="sort"), ValueError, "task must be"),
        (lambda: lg.task_accuracy("model", None), TypeError, "model must be a PositionModel"),
    ],
)
def test_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_learned_table_refuses_longer_inputs():
    model = lg.PositionModel("learned", max_len=16)
    with pytest.raises(ValueError, match="max_len=16 rows, got 20 positions"):
        model(torch.zeros(1, 20, dtype=torch.long))


def reference_layer(layer: lg.PositionAttention, x: torch.Tensor) -> torch.Tensor:
    """The same layer written head by head with explicit loops over queries."""
    b, n, D = x.shape
    h, p = layer.num_heads, layer.head_size
    out = torch.zeros(b, n, D, dtype=x.dtype)
    positions = torch.arange(n, dtype=torch.float64) * layer.position_scale
    for head in range(h):
        cols = slice(head * p, (head + 1) * p)
        q = x @ layer.W_q.weight[cols].T  # (b, n, p)
        k = x @ layer.W_k.weight[cols].T
        v = x @ layer.W_v.weight[cols].T
        if layer.scheme == "rope":
            q = apply_rope(q, positions, layer.rope_base)
            k = apply_rope(k, positions, layer.rope_base)
        for i in range(n):
            s = (k[:, : i + 1] @ q[:, i, :, None]).squeeze(-1) / math.sqrt(p)  # (b, i + 1)
            if layer.scheme == "alibi":
                s = s + alibi_bias(n, h, dtype=x.dtype)[head, i, : i + 1]
            w = torch.softmax(s, dim=-1)
            out[:, i, cols] = (w[:, :, None] * v[:, : i + 1]).sum(1)
    return out @ layer.W_o.weight.T


@pytest.mark.parametrize("scheme", lg.SCHEMES)
def test_attention_layer_matches_loops(scheme):
    torch.manual_seed(0)
    layer = lg.PositionAttention(16, 4, scheme).double()
    x = torch.randn(2, 7, 16, dtype=torch.float64)
    torch.testing.assert_close(layer(x), reference_layer(layer, x))
    assert layer.attention_weights.shape == (2, 4, 7, 7)


def test_rescaled_rope_matches_loops_and_restores():
    torch.manual_seed(0)
    model = lg.PositionModel("rope", num_hiddens=16, num_heads=2).double()
    tokens = torch.randint(64, (2, 9))
    trained = model(tokens)
    for kwargs in ({"position_scale": 0.25}, {"base": 500.0}, {"base": 3e4, "position_scale": 0.5}):
        lg.rescale_rope(model, **kwargs)
        changed = model(tokens)
        assert (changed - trained).abs().max() > 1e-3, kwargs
        layer = model.layers[0]
        x = torch.randn(2, 9, 16, dtype=torch.float64)
        torch.testing.assert_close(layer(x), reference_layer(layer, x))
    # Interpolating by 1/2 turns position 2m by the angle of m: a sequence's
    # even positions then score like a sequence of half its length.
    lg.rescale_rope(model, position_scale=0.5)
    layer = model.layers[0]
    x = torch.randn(1, 8, 16, dtype=torch.float64)
    q = layer.W_q(x).reshape(1, 8, 2, 8).transpose(1, 2)
    half = apply_rope(q[:, :, ::2], torch.arange(4))
    scaled = apply_rope(q, torch.arange(8) * 0.5)[:, :, ::2]
    torch.testing.assert_close(scaled, half)
    lg.rescale_rope(model)
    torch.testing.assert_close(model(tokens), trained, rtol=0, atol=0)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda m: lg.rescale_rope(lg.PositionModel("alibi")), ValueError, "scheme 'rope'"),
        (lambda m: lg.rescale_rope(m, base=1.0), ValueError, "base must be a finite number > 1"),
        (lambda m: lg.rescale_rope(m, base="big"), TypeError, "base must be a real number"),
        (lambda m: lg.rescale_rope(m, position_scale=0), ValueError, "position_scale"),
        (
            lambda m: lg.rescale_rope(m, position_scale=float("inf")),
            ValueError,
            "position_scale must be a finite number > 0, got inf",
        ),
        (lambda m: lg.rescale_rope("model"), TypeError, "model must be a PositionModel"),
        (
            lambda m: lg.accuracy_by_position(m, 16, (0, 8, 12)),
            ValueError,
            r"edges must be increasing integers from 0 to length=16, got \(0, 8, 12\)",
        ),
        (
            lambda m: lg.accuracy_by_position(m, 16, (0, 8, 8, 16)),
            ValueError,
            "edges must be increasing",
        ),
    ],
)
def test_rescale_and_bands_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call(lg.PositionModel("rope"))


@pytest.mark.parametrize("task", ["kback", "copy"])
def test_accuracy_by_position_averages_to_the_accuracy(task):
    model = lg.PositionModel("rope", seed=0)
    lg.train_positions(model, task=task, steps=20, seed=0)
    edges = (0, 5, 16, 30, 40)
    bands = lg.accuracy_by_position(model, 40, edges, task=task, size=16)
    batch = lg.TASKS[task](16, 40, seed=1040)
    counts = [int(batch.scored[lo:hi].sum()) for lo, hi in zip(edges, edges[1:])]
    mean = sum(a * c for a, c in zip(bands, counts) if c) / sum(counts)
    assert mean == pytest.approx(lg.evaluate(model, (40,), task=task, size=16)[40])
    if task == "copy":  # no scored query before L/2 = 20
        assert math.isnan(bands[0]) and math.isnan(bands[1])


def test_rope_and_alibi_layers_see_only_relative_positions():
    # Without content differences (every token the same), a relative scheme gives
    # query i the same weights over the last i + 1 keys, whatever the absolute start:
    # compare the last row of a length-12 run with the last row of a length-8 run.
    for scheme in ("rope", "alibi"):
        torch.manual_seed(1)
        layer = lg.PositionAttention(8, 2, scheme).double()
        x = torch.randn(1, 1, 8, dtype=torch.float64).expand(1, 12, 8)
        layer(x)
        long = layer.attention_weights[0, :, -1, -8:]
        layer(x[:, :8])
        short = layer.attention_weights[0, :, -1, :]
        ratio_long = long / long.sum(-1, keepdim=True)
        torch.testing.assert_close(ratio_long, short / short.sum(-1, keepdim=True))


@pytest.mark.parametrize("scheme", lg.SCHEMES)
def test_model_shapes_and_seeded_init(scheme):
    a, b = lg.PositionModel(scheme, seed=4), lg.PositionModel(scheme, seed=4)
    tokens = torch.randint(64, (3, 40))
    torch.testing.assert_close(a(tokens), b(tokens))
    assert a(tokens).shape == (3, 40, 64)
    assert len(a.attention_weights) == 2


def test_training_is_reproducible_and_learns():
    runs = []
    for _ in range(2):
        model = lg.PositionModel("rope", seed=0)
        log = lg.train_positions(model, steps=30, seed=0)
        runs.append(log.losses)
    assert runs[0] == runs[1]
    assert set(log.lengths) <= set(range(8, 33, 2))
    assert sum(runs[0][-5:]) < sum(runs[0][:5])


def test_scores_of_a_handmade_answer():
    # A model whose forward returns the answers as one-hot logits scores 1.
    class Oracle(lg.PositionModel):
        def forward(self, tokens):
            n = tokens.shape[1]
            shifted = torch.cat([tokens[:, 1:], tokens[:, :1]], dim=1)
            out = torch.nn.functional.one_hot(shifted, self.vocab).double()
            self.layers[-1].attention_weights = torch.zeros(tokens.shape[0], 4, n, n)
            half = n // 2
            j = torch.arange(half - 1)
            self.layers[-1].attention_weights[:, 1, half + j, j + 1] = 1.0
            return out

    oracle = Oracle("nope")
    assert lg.evaluate(oracle, (8, 16), size=4) == {8: 1.0, 16: 1.0}
    assert lg.copy_head_score(oracle, 16, size=4) == 1.0


LIB = Path(__file__).resolve().parents[1]


def test_shipped_sweep_is_package_data_and_complete():
    tomllib = pytest.importorskip("tomllib")
    setuptools = tomllib.loads((LIB / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "attnbook.positions_data" in setuptools["packages"]
    globs = setuptools["package-data"]["attnbook.positions_data"]
    shipped = sorted(p.name for p in (LIB / "attnbook" / "positions_data").iterdir())
    assert shipped == [lg.SWEEP_FILE]
    assert any(Path(lg.SWEEP_FILE).match(pattern) for pattern in globs)
    sweep = lg.load_sweep()
    seeds = sweep["settings"]["seeds"]
    for task in ("copy", "kback"):
        runs = {(r["scheme"], r["seed"]) for r in sweep[task]}
        assert runs == {(s, seed) for s in lg.SCHEMES for seed in seeds}
    bands = sweep["settings"]["bands"]
    assert all(len(r["by_position"]) == len(bands) - 1 for r in sweep["kback"])
    rope = [r for r in sweep["copy"] if r["scheme"] == "rope"]
    assert all(set(r["rescaled"]) == {"interpolation", "ntk"} for r in rope)
    ablations = sweep["settings"]["ablations"]
    runs = sorted(
        (tuple(sorted((k, v) for k, v in r.items() if k in a)), r["seed"])
        for a in ablations
        for r in sweep["ablations"]
        if all(r.get(k) == v for k, v in a.items())
    )
    assert runs == sorted((tuple(sorted(a.items())), seed) for a in ablations for seed in seeds)


def test_sweep_ranges():
    records = [
        {"scheme": "rope", "accuracy": {"32": 0.9, "64": 0.5}},
        {"scheme": "rope", "accuracy": {"32": 0.8, "64": 0.6}},
        {"scheme": "alibi", "accuracy": {"32": 0.7, "64": 0.7}},
    ]
    assert lg.sweep_ranges(records) == {
        "rope": {"32": (0.8, 0.9), "64": (0.5, 0.6)},
        "alibi": {"32": (0.7, 0.7), "64": (0.7, 0.7)},
    }
