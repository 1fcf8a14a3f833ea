"""Tests of attnbook.dates and attnbook.seq2seq: the tasks, the GRU models, training."""

from __future__ import annotations

import datetime
import math
from pathlib import Path

import pytest
import torch

from attnbook.dates import (
    FORMATS,
    SOURCE_VOCAB,
    TARGET_VOCAB,
    DateTask,
    Seq2SeqBatch,
    alignment_summary,
    encode_dates,
    encode_sources,
    field_spans,
    format_date,
    parse_numeric_year,
    reversal_batch,
)
from attnbook.seq2seq import (
    AdditiveCrossAttention,
    GRUSeq2Seq,
    anti_diagonal,
    century_swap,
    evaluate,
    figure_probe,
    load_runs,
    other_century,
    rewrite,
    train_dates,
    train_seq2seq,
)

DAY = datetime.date(2026, 11, 25)


def test_formats_by_hand():
    assert format_date(DAY, "long") == "25 November 2026"
    assert format_date(DAY, "short") == "nov 25, 2026"
    assert format_date(DAY, "numeric") == "25/11/26"
    assert format_date(DAY, "weekday") == "Wednesday 25 Nov 2026"
    assert format_date(datetime.date(1975, 1, 5), "numeric") == "05/01/75"


def test_numeric_pivot_reads_every_date_back():
    task = DateTask(0)
    for date in task.train_dates[:3000:7] + task.test_dates[:3000:7]:
        day, month, year = format_date(date, "numeric").split("/")
        assert datetime.date(parse_numeric_year(int(year)), int(month), int(day)) == date


def test_split_covers_every_date_once_and_holds_out_a_fifth():
    task = DateTask(0)
    every = (datetime.date(2049, 12, 31) - datetime.date(1950, 1, 1)).days + 1
    assert len(task.train_dates) + len(task.test_dates) == every == 36525
    assert not set(task.train_dates) & set(task.test_dates)
    assert len(task.test_dates) == round(0.2 * every)
    assert DateTask(1).test_dates != task.test_dates
    assert DateTask(0).test_dates == task.test_dates


def test_training_batches_never_hold_a_test_date():
    task = DateTask(0)
    held_out = {d.isoformat() for d in task.test_dates}
    g = torch.Generator().manual_seed(0)
    for _ in range(20):
        batch = task.train_batch(64, g)
        for row in batch.target:
            assert TARGET_VOCAB.decode(row) not in held_out


def test_batch_padding_and_lengths():
    batch = encode_dates([DAY, DAY], ["numeric", "weekday"])
    assert batch.source.shape == (2, 21)
    assert batch.source_lens.tolist() == [8, 21]
    assert torch.all(batch.source[0, 8:] == 0) and torch.all(batch.source[0, :8] > 0)
    assert SOURCE_VOCAB.decode(batch.source[0]) == "25/11/26"
    assert TARGET_VOCAB.decode(batch.target[1]) == "2026-11-25"
    assert batch.decoder_input()[:, 0].tolist() == [0, 0]
    assert torch.equal(batch.decoder_input()[:, 1:], batch.target[:, :-1])


def test_vocabularies():
    assert len(SOURCE_VOCAB) == 45 and SOURCE_VOCAB.symbols[0] == "<pad>"
    assert len(TARGET_VOCAB) == 12 and TARGET_VOCAB.symbols[0] == "<s>"
    test = DateTask(0).test_batch(1000)
    assert max(test.source_lens.tolist()) <= 21
    assert [test.formats.count(f) for f in FORMATS] == [250] * 4


def test_field_spans():
    spans = field_spans("Wednesday 25 Nov 2026", "weekday")
    assert spans == {"weekday": (0, 9), "day": (10, 12), "month": (13, 16), "year": (17, 21)}
    assert field_spans("nov 5, 2026", "short") == {"month": (0, 3), "day": (4, 5), "year": (7, 11)}
    assert field_spans("25/11/26", "numeric")["year"] == (6, 8)


def test_reversal_batch():
    batch = reversal_batch(5, 7, 3, generator=torch.Generator().manual_seed(0))
    assert batch.source.shape == (5, 7) and batch.source.min() >= 1 and batch.source.max() <= 3
    assert torch.equal(batch.target, batch.source.flip(1))


def brute_force_attention(module, query, states, lens):
    """Additive attention by loops: one query, one source position at a time."""
    b, n, _ = states.shape
    contexts, weights = torch.zeros(b, states.shape[2]), torch.zeros(b, n)
    for i in range(b):
        scores = []
        for j in range(lens[i]):
            hidden = [
                math.tanh(
                    sum(module.W_s.weight[a, k] * query[i, k] for k in range(query.shape[1]))
                    + sum(module.W_h.weight[a, k] * states[i, j, k] for k in range(states.shape[2]))
                )
                for a in range(module.v.weight.shape[1])
            ]
            scores.append(sum(module.v.weight[0, a] * hidden[a] for a in range(len(hidden))))
        top = max(scores)
        exps = [math.exp(s - top) for s in scores]
        for j, e in enumerate(exps):
            weights[i, j] = e / sum(exps)
            contexts[i] += weights[i, j] * states[i, j]
    return contexts, weights


def test_additive_cross_attention_against_loops():
    torch.manual_seed(0)
    module = AdditiveCrossAttention(3, 4, hiddens=5)
    query, states = torch.randn(3, 3), torch.randn(3, 6, 4)
    lens = torch.tensor([6, 2, 1])
    with torch.no_grad():
        context, weights = module(query, module.keys(states), states, lens)
        expected_context, expected_weights = brute_force_attention(module, query, states, lens)
    torch.testing.assert_close(weights, expected_weights, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(context, expected_context, rtol=1e-5, atol=1e-6)


def test_encoder_ignores_padding():
    torch.manual_seed(0)
    model = GRUSeq2Seq(len(SOURCE_VOCAB), len(TARGET_VOCAB)).eval()
    batch = encode_dates([DAY, DAY], ["numeric", "weekday"])
    alone = encode_dates([DAY], ["numeric"])
    with torch.no_grad():
        states, final = model.encoder(batch.source, batch.source_lens)
        states1, final1 = model.encoder(alone.source, alone.source_lens)
    torch.testing.assert_close(states[0, :8], states1[0])
    torch.testing.assert_close(final[0], final1[0])
    assert torch.all(states[0, 8:] == 0)


def reference_decoder(model, source, lens, decoder_input):
    """The attention decoder by hand, one example and one step at a time."""
    logits, weights = [], []
    for i in range(source.shape[0]):
        n = int(lens[i])
        states, final = model.encoder(source[i : i + 1, :n], lens[i : i + 1])
        s = torch.tanh(model.bridge(final))  # (1, S)
        rows, rows_w = [], []
        for t in range(decoder_input.shape[1]):
            s = model.cell(model.embedding(decoder_input[i : i + 1, t]), s)  # query after reading
            a = model.attention
            scores = torch.stack(
                [a.v(torch.tanh(a.W_s(s) + a.W_h(states[:, j]))).squeeze() for j in range(n)]
            )
            alpha = torch.softmax(scores, 0)
            context = (alpha[:, None] * states[0]).sum(0, keepdim=True)
            rows.append(model.output(torch.cat([s, context], -1))[0])
            rows_w.append(torch.cat([alpha, torch.zeros(source.shape[1] - n)]))
        logits.append(torch.stack(rows))
        weights.append(torch.stack(rows_w))
    return torch.stack(logits), torch.stack(weights)


def test_attention_decoder_against_a_step_by_step_reference():
    torch.manual_seed(1)
    model = GRUSeq2Seq(len(SOURCE_VOCAB), len(TARGET_VOCAB)).eval()
    batch = DateTask(0).test_batch(5)
    with torch.no_grad():
        logits = model(batch.source, batch.source_lens, batch.decoder_input())
        expected, expected_w = reference_decoder(
            model, batch.source, batch.source_lens, batch.decoder_input()
        )
    torch.testing.assert_close(logits, expected, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(model.attention_weights, expected_w, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("attention", [True, False])
def test_greedy_equals_teacher_forcing_on_its_own_outputs(attention):
    torch.manual_seed(2)
    model = GRUSeq2Seq(len(SOURCE_VOCAB), len(TARGET_VOCAB), attention).eval()
    batch = DateTask(0).test_batch(6)
    tokens, weights = model.greedy(batch.source, batch.source_lens, 10)
    start = torch.zeros(6, 1, dtype=torch.long)
    with torch.no_grad():
        again = model(batch.source, batch.source_lens, torch.cat([start, tokens[:, :-1]], 1))
    assert torch.equal(again.argmax(-1), tokens)
    assert (weights is None) == (not attention)
    if attention:
        torch.testing.assert_close(weights, model.attention_weights)


def test_no_attention_sees_the_source_only_through_its_final_state():
    torch.manual_seed(3)
    model = GRUSeq2Seq(len(SOURCE_VOCAB), len(TARGET_VOCAB), attention=False).eval()
    batch = DateTask(0).test_batch(4)
    with torch.no_grad():
        states, final = model.encoder(batch.source, batch.source_lens)
        logits = model(batch.source, batch.source_lens, batch.decoder_input())
        model.encoder.forward = lambda source, lens: (torch.randn_like(states), final)
        same = model(batch.source, batch.source_lens, batch.decoder_input())
    torch.testing.assert_close(same, logits)


def test_training_is_deterministic_and_learns():
    _, log = train_dates(0, True, 30, record=(0, 30), test_size=200)
    _, again = train_dates(0, True, 30, record=(0, 30), test_size=200)
    assert log.exact == again.exact and log.losses == again.losses
    assert log.losses[-1] < 0.7 * log.losses[0]
    assert log.token_accuracy[-1] > log.token_accuracy[0]
    assert log.steps == [0, 30]
    with pytest.raises(ValueError, match="recorded steps"):
        log.exact_at(10)


def test_probe_is_recorded():
    probe = figure_probe()
    assert probe.texts == (
        "10 October 2036", "aug 13, 1988", "05/09/07", "Sunday 23 Feb 1969", "17/11/72",
    )  # fmt: skip
    assert set(probe.texts) & {format_date(d, "numeric") for d in DateTask(0).train_dates} == set()
    _, log = train_dates(0, True, 5, record=(0, 5), probe=probe, test_size=50)
    assert len(log.weights) == 2 and log.weights[0].shape == (5, 10, probe.source.shape[1])
    torch.testing.assert_close(log.weights[1].sum(-1), torch.ones(5, 10))
    assert len(log.predictions[1]) == 5


def test_alignment_summary_by_hand():
    batch = encode_dates([DAY, DAY], ["numeric", "weekday"])  # n = 21
    weights = torch.zeros(2, 10, 21)
    # Every output on the right digit, except output 0 of the numeric one (day).
    own = {0: 0, 1: 1, 2: 2, 3: 3, 5: 0, 6: 1, 8: 0, 9: 1}
    for t, k in own.items():
        weights[1, t, 17 + k if t < 4 else (13 + k if t in (5, 6) else 10 + k)] = 1.0
        weights[0, t, {0: 6, 1: 6, 2: 6, 3: 7}.get(t, 3 + k if t in (5, 6) else k)] = 1.0
    weights[0, 0] = 0.0
    weights[0, 0, 0] = 1.0
    weights[:, 4, 0] = weights[:, 7, 0] = 1.0  # hyphens on the first character
    stats = alignment_summary(weights, batch)
    assert stats["max_weight"] == 1.0
    assert stats["right_field"] == 15 / 16
    assert stats["own_digit"] == 1.0  # 4 of the weekday date + 2 of the numeric
    assert stats["century_on_tens"] == 1 / 2
    assert stats["month_on_name"] == 1.0
    assert stats["weekday_mass"] == 2 / 10  # the two hyphen rows sit on "W"


def test_alignment_summary_leaves_out_what_the_batch_cannot_measure():
    # A statistic about a format that is not in the batch has nothing to count:
    # it is left out (it used to be NaN, issue 53's fuzz); every value is a number.
    batch = encode_dates([DAY, DAY], ["weekday", "weekday"])
    stats = alignment_summary(torch.full((2, 10, 21), 1 / 21), batch)
    assert "century_on_tens" not in stats
    assert {"max_weight", "right_field", "own_digit", "month_on_name", "weekday_mass"} <= set(stats)
    assert not any(math.isnan(v) for v in stats.values())


def test_anti_diagonal():
    weights = torch.eye(4).flip(1).expand(2, 4, 4).clone()
    assert anti_diagonal(weights) == 1.0
    weights[0, 0] = torch.tensor([1.0, 0, 0, 0])
    assert anti_diagonal(weights) == 7 / 8


def test_stored_runs_have_every_seed():
    runs = load_runs()
    assert [r["seed"] for r in runs["runs"]] == list(range(len(runs["runs"])))
    assert len(runs["runs"]) >= 3
    for run in runs["runs"]:
        assert len(run["attention"]["exact"]) == len(runs["date_record"])


def test_package_data_ships_the_runs():
    """A non-editable install (Colab) must carry seq2seq_data/runs.json: a data
    package listed in [tool.setuptools] packages, its file named by a glob."""
    tomllib = pytest.importorskip("tomllib")
    lib = Path(__file__).resolve().parents[1]
    setuptools = tomllib.loads((lib / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "attnbook.seq2seq_data" in setuptools["packages"]
    globs = setuptools["package-data"]["attnbook.seq2seq_data"]
    shipped = sorted(p.name for p in (lib / "attnbook" / "seq2seq_data").iterdir())
    assert shipped == ["runs.json"]
    assert any(Path("runs.json").match(pattern) for pattern in globs)


def test_bad_input():
    with pytest.raises(ValueError, match="fmt must be one of"):
        format_date(DAY, "iso")
    with pytest.raises(ValueError, match="date must lie in"):
        format_date(datetime.date(2050, 1, 1), "long")
    with pytest.raises(TypeError, match="date must be a datetime.date"):
        format_date("2026-11-25", "long")
    with pytest.raises(ValueError, match="held_out must lie strictly between 0 and 1"):
        DateTask(0, held_out=1.0)
    with pytest.raises(TypeError, match="seed must be an integer"):
        DateTask(0.5)
    with pytest.raises(ValueError, match="size must be at most 7305"):
        DateTask(0).test_batch(8000)
    with pytest.raises(ValueError, match="not in this vocabulary"):
        SOURCE_VOCAB.encode("25 Nov. 2026")
    model = GRUSeq2Seq(len(SOURCE_VOCAB), len(TARGET_VOCAB))
    batch = encode_dates([DAY], ["long"])
    with pytest.raises(TypeError, match="source must hold int64"):
        model(batch.source.float(), batch.source_lens, batch.decoder_input())
    with pytest.raises(ValueError, match=r"source_lens must lie in \[0, 16\]"):
        model(batch.source, torch.tensor([17]), batch.decoder_input())
    with pytest.raises(ValueError, match="source_lens must be >= 1"):
        model(batch.source, torch.tensor([0]), batch.decoder_input())
    with pytest.raises(TypeError, match="attention must be True or False"):
        GRUSeq2Seq(45, 12, attention="yes")
    with pytest.raises(TypeError, match="batch must be a Seq2SeqBatch"):
        evaluate(model, batch.source)
    with pytest.raises(ValueError, match="record must hold steps in"):
        train_seq2seq(model, lambda g: batch, batch, 5, record=(6,))
    with pytest.raises(ValueError, match=r"weights must have shape \(1, 10, 16\)"):
        alignment_summary(torch.zeros(1, 10, 5), batch)
    with pytest.raises(TypeError, match="batch must be a Seq2SeqBatch of dates"):
        alignment_summary(
            torch.zeros(1, 10, 5), Seq2SeqBatch(batch.source, batch.source_lens, batch.target)
        )
    with pytest.raises(ValueError, match=r"weights must be \(b, n, n\)"):
        anti_diagonal(torch.zeros(1, 3, 4))


def test_encode_sources_pads_like_encode_dates():
    texts = ["17/11/72", "Sunday 23 Feb 1969"]
    source, lens = encode_sources(texts)
    batch = encode_dates([datetime.date(1972, 11, 17), datetime.date(1969, 2, 23)],
                         ["numeric", "weekday"])  # fmt: skip
    assert torch.equal(source, batch.source) and torch.equal(lens, batch.source_lens)


def test_initial_state_swap_is_an_intervention_on_s0_only():
    torch.manual_seed(4)
    model = GRUSeq2Seq(len(SOURCE_VOCAB), len(TARGET_VOCAB)).eval()
    texts, others = ["17/11/72", "05/09/07"], ["17/11/22", "05/09/57"]
    source, lens = encode_sources(texts)
    # Its own s_{-1} passed explicitly changes nothing.
    own = model.initial_state(source, lens)
    assert own.shape == (2, 64)
    assert torch.equal(
        model.greedy(source, lens, 10)[0], model.greedy(source, lens, 10, initial_state=own)[0]
    )
    assert rewrite(model, texts) == rewrite(model, texts, start_from=texts)
    # Another s_{-1} is exactly the s_{-1} the decoder then starts from: the first step's
    # logits equal a step taken by hand from that state.
    other = model.initial_state(*encode_sources(others))
    assert not torch.allclose(other, own)
    with torch.no_grad():
        states, final, projected, lens_, _ = model._start(source, lens)
        logits, _, _ = model._step(
            torch.zeros(2, dtype=torch.long), other, (states, final, projected, lens_)
        )
    first, _ = model.greedy(source, lens, 1, initial_state=other)
    assert torch.equal(first[:, 0], logits.argmax(-1))


def test_century_swap_counts():
    torch.manual_seed(5)
    model = GRUSeq2Seq(len(SOURCE_VOCAB), len(TARGET_VOCAB)).eval()
    batch = DateTask(0).test_batch(40)
    counts = century_swap(model, batch)
    assert counts["dates"] == 10  # formats in turn: every fourth is numeric
    assert counts["follows_start"] + counts["follows_states"] <= counts["dates"]
    assert other_century("17/11/72") == "17/11/22" and other_century("05/09/49") == "05/09/99"

    class Century(GRUSeq2Seq):
        """Writes the century of the tens digit that s_{-1} (or, with ``by_states``, the source) holds."""

        by_states = False

        def initial_state(self, source, source_lens):
            tens = torch.tensor([int(SOURCE_VOCAB.symbols[i]) for i in source[:, 6].tolist()])
            return tens.float()[:, None].expand(-1, 64).clone()

        def greedy(self, source, source_lens, length, initial_state=None):
            if initial_state is None or self.by_states:
                initial_state = self.initial_state(source, source_lens)
            tens = initial_state[:, 0]
            century = torch.where(tens[:, None] >= 5, torch.tensor([2, 10]), torch.tensor([3, 1]))
            return torch.cat(
                [century, torch.ones(len(tens), length - 2, dtype=torch.long)], 1
            ), None

    fake = Century(len(SOURCE_VOCAB), len(TARGET_VOCAB)).eval()
    assert century_swap(fake, batch) == {"dates": 10, "follows_start": 10, "follows_states": 0}
    fake.by_states = True
    assert century_swap(fake, batch) == {"dates": 10, "follows_start": 0, "follows_states": 10}


def test_bad_input_of_the_interventions():
    model = GRUSeq2Seq(len(SOURCE_VOCAB), len(TARGET_VOCAB))
    source, lens = encode_sources(["17/11/72"])
    with pytest.raises(ValueError, match=r"initial_state must have shape \(1, 64\)"):
        model.greedy(source, lens, 10, initial_state=torch.zeros(1, 32))
    with pytest.raises(ValueError, match="start_from must hold one string per text"):
        rewrite(model, ["17/11/72"], start_from=["17/11/22", "17/11/23"])
    with pytest.raises(TypeError, match="model must be a GRUSeq2Seq"):
        rewrite(torch.nn.Linear(2, 2), ["17/11/72"])
    with pytest.raises(TypeError, match="texts must be a list of strings, not one string"):
        encode_sources("17/11/72")
    with pytest.raises(ValueError, match="texts must be a non-empty list"):
        encode_sources([])
    with pytest.raises(ValueError, match="text must be a numeric date"):
        other_century("17 Nov 72")
    with pytest.raises(ValueError, match="batch holds no numeric date"):
        century_swap(model, encode_dates([DAY], ["long"]))


def test_zero_start_has_no_route_from_the_final_state():
    """bridge=False: s_{-1} is zeros, and with attention the encoder's final state z
    reaches the decoder through nothing (replacing it changes no logit)."""
    torch.manual_seed(6)
    model = GRUSeq2Seq(len(SOURCE_VOCAB), len(TARGET_VOCAB), bridge=False).eval()
    assert model.bridge is None
    batch = DateTask(0).test_batch(4)
    assert torch.equal(model.initial_state(batch.source, batch.source_lens), torch.zeros(4, 64))
    with torch.no_grad():
        states, final = model.encoder(batch.source, batch.source_lens)
        logits = model(batch.source, batch.source_lens, batch.decoder_input())
        model.encoder.forward = lambda source, lens: (states, torch.randn_like(final))
        same = model(batch.source, batch.source_lens, batch.decoder_input())
    torch.testing.assert_close(same, logits)
    with pytest.raises(TypeError, match="bridge must be True or False"):
        GRUSeq2Seq(45, 12, bridge=0)


def test_stored_century_swap_and_unscaled_transformer():
    runs = load_runs()
    for run in runs["runs"]:
        swap = run["attention"]["century_swap"]
        assert swap["follows_start"] + swap["follows_states"] <= swap["dates"] == 250
        for key in ("transformer", "transformer_unscaled"):
            assert len(run[key]["exact"]) == len(runs["transformer_record"])
            assert set(run[key]["format_exact"]) == set(FORMATS)
        assert len(run["reversal"]["no_attention"]["position_accuracy"]) == 20
        assert run["zero_start"]["exact"] >= 0.99
