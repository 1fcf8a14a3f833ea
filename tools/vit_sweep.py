"""Measure chapter 15's tiny ViT over seeds, and store the record the chapter prints.

Chapter 15 (book/vision-transformer.ipynb) quotes test accuracy and the
agreement of attention maps with occlusion (two occlusion fills, deletion
curves, an untrained-model control) as ranges over seeds, beside baselines
(logistic regression, MLPs, and a CNN and an MLP trained with the ViT's
recipe). One seed takes about half a minute of CPU, too long to repeat eight
times in the notebook, so this program trains every seed once and writes the record to
lib/attnbook/vit_data/sweep.json (package data). The notebook loads it, prints
the tables from it, re-runs one seed live and checks that the live run agrees
with the stored record (so the file cannot drift from the code). It is not a
test.

    python tools/vit_sweep.py            # seeds 0-7 (`make vit-sweep`)
    python tools/vit_sweep.py --seeds 3  # seeds 0-2
    python tools/vit_sweep.py --keep-baselines  # re-measure the ViT only

The baselines (scikit-learn's models, the CNNs and the MLP trained with the
ViT's recipe) take longer than the ViT and do not depend on the ViT's code or
on what is measured of it: --keep-baselines copies them from the stored record.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from attnbook.digits import load_digits_split
from attnbook.vit_study import NUM_EXPLAINED, SETTING, baselines, run_seed

OUT = Path(__file__).resolve().parents[1] / "lib" / "attnbook" / "vit_data" / "sweep.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=8, help="seeds 0 .. N-1 (default 8)")
    parser.add_argument(
        "--keep-baselines",
        action="store_true",
        help="copy the baselines from the stored record instead of training them again",
    )
    args = parser.parse_args()
    kept = json.loads(OUT.read_text("utf-8"))["baselines"] if args.keep_baselines else {}
    torch.set_num_threads(1)
    data = load_digits_split()
    record = {
        "setting": {**SETTING, "explained test images": NUM_EXPLAINED},
        "seeds": {},
        "baselines": {},
    }
    for seed in range(args.seeds):
        start = time.process_time()
        _, result, _ = run_seed(data, seed)
        seconds = time.process_time() - start
        record["seeds"][str(seed)] = {k: round(v, 6) for k, v in result.items()}
        if args.keep_baselines:
            if str(seed) not in kept:
                raise SystemExit(f"--keep-baselines: no stored baselines for seed {seed}")
            record["baselines"][str(seed)] = kept[str(seed)]
        else:
            base = baselines(data, seed)
            record["baselines"][str(seed)] = {k: round(v, 6) for k, v in base.items()}
        print(f"seed {seed}: {seconds:.1f} s CPU, {result}", flush=True)
    OUT.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
