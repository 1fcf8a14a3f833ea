"""Measure chapter 14's length-generalisation table over seeds, for the book to ship.

Chapter 14 (book/positions.ipynb) trains the same small attention-only model
with five position schemes (attnbook.length_generalisation.SCHEMES) and
several seeds each: too many runs for a notebook that must execute in 45 s.
This program runs them all and writes what they measured to
lib/attnbook/positions_data/sweep.json, which the chapter loads and prints;
the chapter re-runs seed 0 of some schemes live and asserts that it matches
the stored record, so the file cannot drift from the code unnoticed.

    python tools/positions_sweep.py            # `make positions-sweep`

It is not a test. It takes about 4 minutes of CPU time (30 runs on one
thread each, two at a time by default).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import time
from pathlib import Path

import torch

from attnbook import length_generalisation as lg

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "lib" / "attnbook" / "positions_data" / "sweep.json"
SEEDS = (0, 1, 2)
LENGTHS = (32, 64, 128)
COPY = {"task": "copy", "steps": 600}
KBACK = {"task": "kback", "steps": 400, "k": 3}


def run(scheme: str, seed: int, settings: dict) -> dict:
    """Train one model and measure it; the record the chapter compares with."""
    start = time.process_time()
    model = lg.PositionModel(scheme, seed=seed)
    options = {"k": settings["k"]} if "k" in settings else {}
    log = lg.train_positions(
        model, task=settings["task"], steps=settings["steps"], seed=seed, **options
    )
    seconds = time.process_time() - start
    accuracy = lg.evaluate(model, LENGTHS, task=settings["task"], **options)
    record = {
        "scheme": scheme,
        "seed": seed,
        "final_loss": round(log.losses[-1], 4),
        "accuracy": {str(n): round(a, 4) for n, a in accuracy.items()},
        "cpu_seconds": round(seconds, 1),
    }
    if settings["task"] == "copy":
        record["head_score"] = {str(n): round(lg.copy_head_score(model, n), 4) for n in LENGTHS}
    return record


def _job(args: tuple[str, str, int]) -> tuple[str, dict]:
    name, scheme, seed = args
    torch.set_num_threads(1)
    return name, run(scheme, seed, {"copy": COPY, "kback": KBACK}[name])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=list(SEEDS))
    parser.add_argument("--jobs", type=int, default=2, help="runs at a time (one thread each)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    result = {
        "settings": {
            "lengths": list(LENGTHS),
            "seeds": args.seeds,
            "copy": COPY,
            "kback": KBACK,
            "model": {"num_hiddens": 64, "num_heads": 4, "num_layers": 2, "vocab": 64},
            "train": {"batch": 64, "lr": 3e-3, "clip": 1.0, "min_length": 8, "max_length": 32},
        },
        "torch": torch.__version__,
        "copy": [],
        "kback": [],
    }
    jobs = [
        (name, s, seed) for name in ("copy", "kback") for s in lg.SCHEMES for seed in args.seeds
    ]
    # Each run is seeded and single-threaded, so running them side by side
    # gives the same records as running them one after another.
    with multiprocessing.get_context("spawn").Pool(args.jobs) as pool:
        for name, record in pool.imap(_job, jobs):
            print(name, json.dumps(record), flush=True)
            result[name].append(record)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
