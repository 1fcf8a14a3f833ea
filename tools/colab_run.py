"""Run every notebook top to bottom in a Colab-like environment (`make colab`).

Run with the Python of .venv-colab: ipywidgets 7.7.1, torch, matplotlib,
ipykernel, and attnbook installed from lib/ as a regular (non-editable)
package. Each notebook is copied ALONE into an empty temporary folder and
executed there, so it cannot read repository files or lean on another
notebook having run first. Two notebooks run at a time (each in its own
kernel and folder; ``--jobs N`` to change). Prints a few lines per notebook
and a closing 'N passed, N failed' line; exits non-zero on any failure.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import ipywidgets
import nbformat

import attnbook

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tools import nbrun


def check_environment() -> None:
    location = Path(attnbook.__file__).resolve()
    if "site-packages" not in location.parts:
        raise SystemExit(
            f"attnbook must be installed non-editable, but it is imported from {location}"
        )
    if not ipywidgets.__version__.startswith("7.7"):
        raise SystemExit(f"expected ipywidgets 7.7 (as in Colab), found {ipywidgets.__version__}")


def run(notebook: Path) -> tuple[str | None, str]:
    """Execute one notebook alone: (None on success, else the reason; what it showed)."""
    with tempfile.TemporaryDirectory(prefix="colab-") as folder:
        copy = Path(folder) / notebook.name
        shutil.copy(notebook, copy)
        nb = nbformat.read(copy, as_version=4)
        try:
            # Colab shows the live widgets: never the static form that `make book` asks for.
            nbrun.execute(nb, timeout=600, cwd=folder, static=False)
        except Exception as error:  # report any failure of the notebook, then go on
            return f"{type(error).__name__}: {str(error).strip().splitlines()[-1][:300]}", ""
        widget_cells = sum(
            "application/vnd.jupyter.widget-view+json" in output.get("data", {})
            for cell in nb.cells
            for output in cell.get("outputs", [])
        )
        left = sorted(p.name for p in Path(folder).iterdir() if p.name != notebook.name)
        if left:
            return f"the notebook wrote files next to itself: {left}", ""
    return None, f"{widget_cells} live widget(s) displayed"


def timed(name: str) -> tuple[str, str | None, str, float]:
    start = time.perf_counter()
    problem, shown = run(Path(name))
    return name, problem, shown, time.perf_counter() - start


def main(args: list[str]) -> int:
    jobs = 2
    if args[:1] == ["--jobs"]:
        jobs, args = int(args[1]), args[2:]
    check_environment()
    passed = failed = 0
    print(
        f"Colab-like run: ipywidgets {ipywidgets.__version__}, attnbook from "
        f"{Path(attnbook.__file__).parent}, {jobs} notebooks at a time"
    )
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for name, problem, shown, seconds in pool.map(timed, args):
            print(f"{name}: ran alone in an empty folder", flush=True)
            if problem is None:
                passed += 1
                print(f"    {shown}\n    ok in {seconds:.1f} s", flush=True)
            else:
                failed += 1
                print(f"    FAILED after {seconds:.1f} s: {problem}", flush=True)
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
