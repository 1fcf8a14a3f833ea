"""Run every notebook alone in a Colab-like environment, under strict nbval (`make colab`).

Run with the Python of .venv-colab: ipywidgets 7.7.1, torch, matplotlib,
ipykernel, nbval, and attnbook installed from lib/ as a regular
(non-editable) package. Each notebook is copied ALONE into an empty temporary
folder and executed there, so it cannot read repository files or lean on
another notebook having run first; afterwards nothing may lie beside it.
The explorers are live widgets, as in Colab (ATTNBOOK_STATIC must be unset).

The run is strict nbval (two notebooks at a time, pytest-xdist, nbval's
kernel in this very environment): every output is compared with the one
stored in the notebook, through tests/nbval-sanitize.cfg as in `make test`.
The Makefile forces a CPU code path for it (COLAB_CPU_PATH: PyTorch's
default kernels, SSE4.2 for MKL, one thread), so the same run is also the
strict nbval of every chapter on that path, which `make check`'s test-cpus
then leaves out. A failure here is either the environment or the path:
`make test-cpus NB=book/NAME.ipynb` runs the path alone, in .venv.

Ends with pytest's 'N passed, N failed' line; exits non-zero on any failure.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import ipywidgets

import attnbook

ROOT = Path(__file__).resolve().parent.parent
CPU_PATH_VARIABLES = ("ATEN_CPU_CAPABILITY", "MKL_ENABLE_INSTRUCTIONS", "OMP_NUM_THREADS")


def check_environment() -> None:
    location = Path(attnbook.__file__).resolve()
    if "site-packages" not in location.parts:
        raise SystemExit(
            f"attnbook must be installed non-editable, but it is imported from {location}"
        )
    if not ipywidgets.__version__.startswith("7.7"):
        raise SystemExit(f"expected ipywidgets 7.7 (as in Colab), found {ipywidgets.__version__}")
    if os.environ.get("ATTNBOOK_STATIC"):
        raise SystemExit("ATTNBOOK_STATIC is set: Colab shows the live widgets, unset it")


def copies_alone(notebooks: list[Path], root: Path) -> list[Path]:
    """Each notebook copied into an empty folder of its own under ``root``."""
    copies = []
    for notebook in notebooks:
        folder = root / notebook.stem
        folder.mkdir()
        copies.append(Path(shutil.copy(notebook, folder)))
    return copies


def left_beside(copies: list[Path]) -> dict[str, list[str]]:
    """The files each notebook wrote next to itself (none is allowed)."""
    left = {}
    for copy in copies:
        extra = sorted(p.name for p in copy.parent.iterdir() if p.name != copy.name)
        if extra:
            left[copy.name] = extra
    return left


def nbval_command(copies: list[Path], jobs: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "--nbval",
        # The kernel runs in this environment, whatever kernels Jupyter knows.
        "--nbval-current-env",
        "--nbval-sanitize-with",
        str(ROOT / "tests" / "nbval-sanitize.cfg"),
        "-p",
        "tests.nbval_report",
        "-p",
        "tests.times_report",
        "-q",
        "-n",
        str(jobs),
        "--dist",
        "loadfile",
        *map(str, copies),
    ]


def main(args: list[str]) -> int:
    jobs = 2
    if args[:1] == ["--jobs"]:
        jobs, args = int(args[1]), args[2:]
    if not args:
        raise SystemExit("usage: colab_run.py [--jobs N] NOTEBOOK.ipynb ...")
    check_environment()
    forced = " ".join(
        f"{name}={os.environ[name]}" for name in CPU_PATH_VARIABLES if name in os.environ
    )
    print(
        f"Colab-like run: ipywidgets {ipywidgets.__version__}, attnbook from "
        f"{Path(attnbook.__file__).parent}, each notebook alone in an empty folder, "
        f"strict nbval, {jobs} at a time, CPU path: {forced or 'this machine’s own'}",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="colab-") as root:
        copies = copies_alone([Path(name) for name in args], Path(root))
        result = subprocess.run(nbval_command(copies, jobs), cwd=ROOT)
        left = left_beside(copies)
    for name, files in left.items():
        print(f"{name}: the notebook wrote files next to itself: {files}")
    if result.returncode != 0:
        print(
            f"A difference in the Colab-like run is the environment (ipywidgets 7.7, attnbook "
            f"installed) or the CPU path ({forced or 'none forced'}): "
            "`make test-cpus NB=book/NAME.ipynb` runs the path alone, in .venv."
        )
    return 1 if left or result.returncode != 0 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
