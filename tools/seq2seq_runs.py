"""Train chapter 13's models over several seeds and store what the chapter prints.

Chapter 13 (book/cross-attention.ipynb) trains one GRU with attention live
(seed 0) and prints the seed sweeps from the file this program writes,
``lib/attnbook/seq2seq_data/runs.json``: the held-out exact match over
training of the GRU with and without attention on dates, sequence reversal
with and without attention (and, without, the accuracy at each output
position), the small Transformer encoder-decoder with its symbol embeddings
scaled by sqrt(D) (as shipped) and without that factor (the ablation: exact
match per format and accuracy per output position for both), and two rows
that separate the factor's two effects (both tables times sqrt(D); neither,
with the positions times 1/sqrt(D); chapter 14, book/positions.ipynb, prints
these in its "Going deeper: how loud the positions are"), alignment
statistics, the century swap (which route, the decoder's initial state or
the attended states, carries the century of the numeric dates), and the GRU
with attention started from zeros instead of the encoder's final state (the
ablation of that route). The chapter re-runs seed 0 of the date model and
asserts that it matches the stored record, so the file cannot drift from the
library. It is not a test.

    OMP_NUM_THREADS=1 python tools/seq2seq_runs.py   # or: make seq2seq-runs

About 8 minutes of CPU time on one thread for the three seeds (seeds 0, 1, 2);
``--seed N --part DIR`` runs one seed into DIR and ``--merge DIR`` writes the file
from such parts, so that seeds can run side by side. ``--only PART`` recomputes
one part (a key of a seed's entry: ``zero_start``, ``transformer_both_scaled``
or ``transformer_quiet_positions``) and adds it to the
stored file (or to the seed's file in ``--part DIR``), keeping the rest.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from attnbook.dates import FORMATS, SOURCE_VOCAB, TARGET_VOCAB, DateTask, alignment_summary
from attnbook.decoder import TransformerSeq2Seq
from attnbook.seq2seq import (
    DATE_RECORD,
    NO_ATTENTION_RECORD,
    TRANSFORMER_RECORD,
    anti_diagonal,
    century_swap,
    date_model,
    evaluate,
    figure_probe,
    reversal_test,
    train_dates,
    train_reversal,
)

OUT = Path(__file__).resolve().parents[1] / "lib" / "attnbook" / "seq2seq_data" / "runs.json"


def rounded(values, digits=4):
    return [round(float(v), digits) for v in values]


def summary(weights, test):
    return {k: round(v, 4) for k, v in alignment_summary(weights, test).items()}


def zero_start_run(seed: int, test) -> dict:
    """The GRU with attention whose decoder starts from zeros (no bridge from z)."""
    model, log = train_dates(seed, model=date_model(True, seed, bridge=False), steps=400)
    return {
        "exact": round(log.exact[-1], 4),
        "parameters": sum(p.numel() for p in model.parameters()),
        "alignment": summary(evaluate(model, test)[3], test),
    }


# The two effects of the sqrt(D) factor, separated (chapter 13): the shipped
# model multiplies the symbols by sqrt(D) = 8, which makes the positions 1/8 as
# loud as the symbols AND the input 8 times larger than what each sublayer adds
# at initialisation. Key: (symbols times sqrt(D)?, factor on the positions).
SCALE_ROWS = {
    "transformer_both_scaled": (True, 8.0),  # as loud as the symbols, input large
    "transformer_quiet_positions": (False, 1 / 8),  # 1/8 as loud, input small
}
ONLY = ("zero_start", *SCALE_ROWS)


def one_seed(seed: int, only: str | None = None) -> dict:
    test = DateTask(seed=0).test_batch(1000)
    result = {"seed": seed}
    if only == "zero_start":
        return {"seed": seed, "zero_start": zero_start_run(seed, test)}
    if only in SCALE_ROWS:
        return {"seed": seed, only: transformer_run(seed, *SCALE_ROWS[only], test)}
    if only is not None:
        raise SystemExit(f"--only knows the parts {', '.join(ONLY)}; got {only!r}")
    # GRU with attention on dates, and its alignment before and after training.
    model, log = train_dates(seed, True, DATE_RECORD[-1], record=DATE_RECORD)
    result["attention"] = {
        "exact": rounded(log.exact),
        "token_accuracy": rounded(log.token_accuracy),
        "cpu_seconds": round(log.cpu_seconds, 1),
        "alignment": summary(evaluate(model, test)[3], test),
    }
    fresh = date_model(True, seed)
    result["attention"]["alignment_at_0"] = summary(evaluate(fresh, test)[3], test)
    # Which route carries the century: s_{-1} swapped for the other century's.
    result["attention"]["century_swap"] = century_swap(model, test)
    # The same GRUs without attention, trained twice as long.
    _, log = train_dates(seed, False, NO_ATTENTION_RECORD[-1], record=NO_ATTENTION_RECORD)
    result["no_attention"] = {
        "exact": rounded(log.exact),
        "token_accuracy": rounded(log.token_accuracy),
        "cpu_seconds": round(log.cpu_seconds, 1),
    }
    # Reversal of 20 tokens, with and without attention.
    result["reversal"] = {}
    for name, attention in (("attention", True), ("no_attention", False)):
        model, log = train_reversal(seed, attention)
        entry = {
            "exact": round(log.exact[-1], 4),
            "token_accuracy": round(log.token_accuracy[-1], 4),
            "cpu_seconds": round(log.cpu_seconds, 1),
        }
        _, _, tokens, weights = evaluate(model, reversal_test())
        right = (tokens == reversal_test().target).float().mean(0)  # (20,) per output position
        entry["position_accuracy"] = rounded(right, 3)
        if attention:
            entry["anti_diagonal"] = round(anti_diagonal(weights), 4)
            if seed == 0:
                entry["probe_weights"] = [rounded(r, 3) for r in log.weights[-1][0].tolist()]
                entry["probe_source"] = log.probe.source[0].tolist()
                entry["probe_prediction"] = log.predictions[-1][0]
        result["reversal"][name] = entry
    # The small Transformer encoder-decoder on dates: symbol embeddings times
    # sqrt(D) as shipped, and the ablation without that factor.
    for key, scaled in (("transformer", True), ("transformer_unscaled", False)):
        result[key] = transformer_run(seed, scaled, 1.0, test)
    for key, (scaled, position_scale) in SCALE_ROWS.items():
        result[key] = transformer_run(seed, scaled, position_scale, test)
    # The GRU with attention started from zeros: no route from z to the decoder.
    result["zero_start"] = zero_start_run(seed, test)
    return result


def transformer_run(seed: int, scaled: bool, position_scale: float, test) -> dict:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = TransformerSeq2Seq(
            len(SOURCE_VOCAB),
            len(TARGET_VOCAB),
            scale_embeddings=scaled,
            position_scale=position_scale,
        )
    model, log = train_dates(
        seed,
        model=model,
        steps=TRANSFORMER_RECORD[-1],
        batch_size=128,
        warmup=50,
        record=TRANSFORMER_RECORD,
    )
    _, _, tokens, weights = evaluate(model, test)  # weights (b, heads, m, n)
    right = tokens == test.target  # (b, m)
    heads = weights.shape[1]
    entry = {
        "exact": rounded(log.exact),
        "cpu_seconds": round(log.cpu_seconds, 1),
        "parameters": sum(p.numel() for p in model.parameters()),
        "alignment": summary(weights.mean(1), test),
        "head_max_weight": [
            round(alignment_summary(weights[:, h], test)["max_weight"], 4) for h in range(heads)
        ],
        "format_exact": {
            fmt: round(float(right[[f == fmt for f in test.formats]].all(1).float().mean()), 4)
            for fmt in FORMATS
        },
        "position_accuracy": rounded(right.float().mean(0), 3),
    }
    if seed == 0 and scaled and position_scale == 1.0:
        probe = figure_probe()
        w = evaluate(model, probe)[3]  # (p, heads, m, n)
        entry["probe_texts"] = list(probe.texts)
        entry["probe_weights"] = [
            [[rounded(row, 3) for row in head] for head in example] for example in w.tolist()
        ]
    return entry


def write(runs: list[dict]) -> None:
    data = {
        "date_record": list(DATE_RECORD),
        "no_attention_record": list(NO_ATTENTION_RECORD),
        "transformer_record": list(TRANSFORMER_RECORD),
        "torch": torch.__version__.split("+")[0],
        "runs": sorted(runs, key=lambda run: run["seed"]),
    }
    OUT.write_text(json.dumps(data, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3, help="seeds 0..N-1 (default 3)")
    parser.add_argument("--seed", type=int, help="run this seed only, into --part")
    parser.add_argument("--part", type=Path, help="folder of one-seed files (with --seed)")
    parser.add_argument("--merge", type=Path, help="write runs.json from a folder of parts")
    parser.add_argument("--only", help="recompute this part only and add it to what is stored")
    args = parser.parse_args()
    if args.merge is not None:
        write([json.loads(p.read_text()) for p in sorted(args.merge.glob("seed-*.json"))])
        return
    if args.only is not None:
        seeds = [args.seed] if args.seed is not None else list(range(args.seeds))
        if args.part is not None:
            for seed in seeds:
                path = args.part / f"seed-{seed}.json"
                stored = json.loads(path.read_text())
                stored.update(one_seed(seed, args.only))
                path.write_text(json.dumps(stored), encoding="utf-8")
            return
        runs = {run["seed"]: run for run in json.loads(OUT.read_text())["runs"]}
        for seed in seeds:
            runs[seed].update(one_seed(seed, args.only))
        write(list(runs.values()))
        return
    start = time.process_time()
    seeds = [args.seed] if args.seed is not None else list(range(args.seeds))
    runs = []
    for seed in seeds:
        runs.append(one_seed(seed))
        print(f"seed {seed} done, {time.process_time() - start:.0f} s CPU", flush=True)
        if args.part is not None:
            args.part.mkdir(parents=True, exist_ok=True)
            (args.part / f"seed-{seed}.json").write_text(json.dumps(runs[-1]), encoding="utf-8")
    if args.part is None:
        write(runs)


if __name__ == "__main__":
    main()
