"""Measure chapter 14's length-generalisation table over seeds, for the book to ship.

Chapter 14 (book/positions.ipynb) trains the same small attention-only model
with five position schemes (attnbook.length_generalisation.SCHEMES) and
several seeds each: too many runs for a notebook that must execute in 45 s.
This program runs them all and writes what they measured to
lib/attnbook/positions_data/sweep.json, which the chapter loads and prints;
the chapter re-runs seed 0 of some schemes live and asserts that it matches
the stored record, so the file cannot drift from the code unnoticed.

    python tools/positions_sweep.py            # `make positions-sweep`

It is not a test. It takes about 13 minutes of CPU time (72 runs on one
thread each, two at a time by default); ``--parts ablations`` re-measures
only the ablations (42 runs) and keeps the rest of the record, and
``--missing`` runs only the ablations the record does not hold yet (after a
row was added to ABLATIONS), keeping every stored run as it is.
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
# k-back accuracy at L = 128 in bands of query positions (the first band is
# the training range).
BANDS = (0, 32, 64, 96, 128)
# The "ablations" part: the same model with one setting changed, to see which
# conclusions of the chapter depend on the 2-layer design, the number of
# steps, or the vocabulary of 64.
ABLATIONS = (
    {"task": "kback", "scheme": "alibi", "steps": 800, "k": 3, "num_layers": 2},
    {"task": "kback", "scheme": "alibi", "steps": 800, "k": 3, "num_layers": 3},
    {"task": "kback", "scheme": "alibi", "steps": 800, "k": 3, "num_layers": 4},
    {"task": "copy", "scheme": "nope", "steps": 600, "num_layers": 3},
    {"task": "copy", "scheme": "nope", "steps": 600, "num_layers": 4},
    {"task": "copy", "scheme": "rope", "steps": 600, "num_layers": 4},
    {"task": "copy", "scheme": "rope", "steps": 600, "num_layers": 2, "vocab": 128},
    {"task": "copy", "scheme": "rope", "steps": 600, "num_layers": 2, "rope_base": 500.0},
    {"task": "copy", "scheme": "rope", "steps": 600, "num_layers": 2, "rope_base": 1e6},
    {"task": "copy", "scheme": "alibi", "steps": 600, "num_layers": 2, "vocab": 128},
    # Like with like: RoPE at ALiBi's 4 layers and 800 steps on "3 back", and
    # the copy task at 4 layers for the schemes not yet run there.
    {"task": "kback", "scheme": "rope", "steps": 800, "k": 3, "num_layers": 4},
    {"task": "copy", "scheme": "alibi", "steps": 600, "num_layers": 4},
    {"task": "copy", "scheme": "sinusoidal", "steps": 600, "num_layers": 4},
    {"task": "copy", "scheme": "learned", "steps": 600, "num_layers": 4},
)
PARTS = ("copy", "kback", "ablations")


def rescaled_accuracy(model: lg.PositionModel) -> dict:
    """Zero-shot copy accuracy of a trained RoPE model with its rotation changed.

    "interpolation": positions times 32 / L (Chen et al. 2023); "ntk": base
    10000 * s^(d / (d - 2)) with s = L / 32 (NTK-aware scaling).
    """
    d, out = model.num_hiddens // model.num_heads, {"interpolation": {}, "ntk": {}}
    for n in LENGTHS[1:]:
        s = n / LENGTHS[0]
        for name, kwargs in (
            ("interpolation", {"position_scale": 1 / s}),
            ("ntk", {"base": 10000.0 * s ** (d / (d - 2))}),
        ):
            lg.rescale_rope(model, **kwargs)
            out[name][str(n)] = round(lg.evaluate(model, (n,))[n], 4)
    lg.rescale_rope(model)
    return out


def run(scheme: str, seed: int, settings: dict) -> dict:
    """Train one model and measure it; the record the chapter compares with."""
    start = time.process_time()
    shape = {key: settings[key] for key in ("num_layers", "vocab") if key in settings}
    model = lg.PositionModel(scheme, seed=seed, **shape)
    if "rope_base" in settings:  # trained with another base from the start
        lg.rescale_rope(model, base=settings["rope_base"])
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
        if scheme == "rope" and not shape and "rope_base" not in settings:
            record["rescaled"] = rescaled_accuracy(model)
    else:
        by_band = lg.accuracy_by_position(model, LENGTHS[-1], BANDS, task="kback", **options)
        record["by_position"] = [round(a, 4) for a in by_band]
    return record


def _settings_key(entry: dict) -> tuple:
    """An ablation's settings (an ABLATIONS row, or a stored record of one)."""
    return tuple(sorted((k, entry[k]) for k in ABLATION_KEYS if k in entry))


ABLATION_KEYS = ("task", "scheme", "steps", "k", "num_layers", "vocab", "rope_base")


def _job(args: tuple[str, str, int, dict]) -> tuple[str, dict]:
    part, scheme, seed, settings = args
    torch.set_num_threads(1)
    record = run(scheme, seed, settings)
    if part == "ablations":
        record = {**{k: v for k, v in settings.items() if k != "scheme"}, **record}
    return part, record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=list(SEEDS))
    parser.add_argument("--jobs", type=int, default=2, help="runs at a time (one thread each)")
    parser.add_argument(
        "--parts",
        nargs="+",
        choices=PARTS,
        default=list(PARTS),
        help="re-measure only these parts and keep the others from the existing record",
    )
    parser.add_argument(
        "--missing",
        action="store_true",
        help="run only the ablations (and seeds) that the stored record lacks; keep the rest",
    )
    args = parser.parse_args()
    torch.set_num_threads(1)
    old = json.loads(OUT.read_text(encoding="utf-8")) if OUT.exists() else {}
    if args.missing:
        args.parts = []  # every stored part is kept; only the absent ablations run
    if set(args.parts) != set(PARTS) and old.get("settings", {}).get("seeds") != args.seeds:
        raise SystemExit("re-measuring some parts needs the seeds of the existing record")
    # Runs kept from an earlier record were measured with that record's torch.
    kept = old.get("torch_kept", old.get("torch")) if args.parts != list(PARTS) else None
    kept_torch = {"torch_kept": kept} if kept not in (None, torch.__version__) else {}
    result = {
        "settings": {
            "lengths": list(LENGTHS),
            "seeds": args.seeds,
            "copy": COPY,
            "kback": KBACK,
            "bands": list(BANDS),
            "ablations": list(ABLATIONS),
            "model": {"num_hiddens": 64, "num_heads": 4, "num_layers": 2, "vocab": 64},
            "train": {"batch": 64, "lr": 3e-3, "clip": 1.0, "min_length": 8, "max_length": 32},
        },
        "torch": torch.__version__,
        **kept_torch,
        **{part: ([] if part in args.parts else old[part]) for part in PARTS},
    }
    jobs = []
    if args.missing:
        stored = {(_settings_key(r), r["seed"]) for r in old["ablations"]}
        jobs += [
            ("ablations", a["scheme"], seed, a)
            for a in ABLATIONS
            for seed in args.seeds
            if (_settings_key(a), seed) not in stored
        ]
        print(f"{len(jobs)} ablation runs missing from the record", flush=True)
    for part in args.parts:
        if part == "ablations":
            jobs += [(part, a["scheme"], seed, a) for a in ABLATIONS for seed in args.seeds]
        else:
            settings = {"copy": COPY, "kback": KBACK}[part]
            jobs += [(part, s, seed, settings) for s in lg.SCHEMES for seed in args.seeds]
    # Each run is seeded and single-threaded, so running them side by side
    # gives the same records as running them one after another.
    with multiprocessing.get_context("spawn").Pool(args.jobs) as pool:
        for part, record in pool.imap(_job, jobs):
            print(part, json.dumps(record), flush=True)
            result[part].append(record)
    # The record lists the ablations in ABLATIONS' order, seed by seed.
    order = {
        (_settings_key(a), seed): i
        for i, (a, seed) in enumerate((a, seed) for a in ABLATIONS for seed in args.seeds)
    }
    result["ablations"].sort(key=lambda r: order[(_settings_key(r), r["seed"])])
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
