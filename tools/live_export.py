"""Export the live explorers' models (chapters 10, 11, 13, 15) and the fixtures of the JavaScript tests.

``python -m tools.live_export STEP ...`` (or ``python tools/live_export.py STEP ...``)
runs the named steps; ``make live-weights`` runs every step. Each explorer has
two, in its own module ``tools/live_export_<explorer>.py`` (:data:`EXPLORERS`):

* ``<prefix>weights`` writes the float16 weights and architecture of the model
  the chapter shows beside the explorer (``lib/attnbook/widgets/live/``),
  trained as the chapter trains it or packed from its shipped checkpoint;
* ``<prefix>fixtures`` runs PyTorch on those very weights (float16, read back
  into float32) over a set of inputs, the empty, the longest and bad ones
  among them, and writes ``tests/live/fixtures/*.json``: the inputs, what the
  page must read from them, the logits and attention (and what else the
  explorer shows), plus fixtures of the runtime's operations that the
  explorer brought. The node tests (``tests/live/*.test.mjs``,
  ``make test-live-js``) check the JavaScript against them.

The steps: ``weights``, ``fixtures`` (chapter 11, induction), ``dates-weights``,
``dates-fixtures`` (chapter 13), ``lm-weights``, ``lm-fixtures`` (chapter 10),
``digits-weights``, ``digits-fixtures`` (chapter 15). With no step:
``weights fixtures``.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
LIVE = ROOT / "lib" / "attnbook" / "widgets" / "live"
FIXTURES = ROOT / "tests" / "live" / "fixtures"

# Each explorer's module (tools/live_export_<name>.py, with export_weights()
# and export_fixtures()) and the prefix of its two steps.
EXPLORERS = {"induction": "", "dates": "dates-", "lm": "lm-", "digits": "digits-"}
STEPS = {
    f"{prefix}{what}": (name, f"export_{what}")
    for name, prefix in EXPLORERS.items()
    for what in ("weights", "fixtures")
}


def short(values: torch.Tensor) -> list[float]:
    """float32 values as the shortest decimals that read back to the same float32
    (9 significant digits), so the fixture file stays small."""
    return [float(f"{v:.9g}") for v in values.flatten().tolist()]


def layer_norm_case(x: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor) -> dict:
    """A fixture of the runtime's layer norm: the rows of ``x`` normalised by PyTorch."""
    n, width = x.shape
    return {
        "x": x.flatten().tolist(),
        "n": n,
        "width": width,
        "gamma": gamma.tolist(),
        "beta": beta.tolist(),
        "expected": torch.nn.functional.layer_norm(x, (width,), gamma, beta).flatten().tolist(),
    }


def main(steps: list[str]) -> int:
    unknown = [step for step in steps if step not in STEPS]
    if unknown:
        print(f"unknown step(s) {unknown}; the steps are: {', '.join(STEPS)}", file=sys.stderr)
        return 2
    for step in steps or ["weights", "fixtures"]:
        name, function = STEPS[step]
        getattr(importlib.import_module(f"tools.live_export_{name}"), function)()
    return 0


if __name__ == "__main__":
    if not __package__:  # run as `python tools/live_export.py`: make `tools` importable
        sys.path.insert(0, str(ROOT))
    sys.exit(main(sys.argv[1:]))
