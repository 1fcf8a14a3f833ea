"""`make colab` (tools/colab_run.py) holds two guarantees in one run: the
Colab-like environment and strict nbval on the CPU path it forces. Each is
seen failing here on a notebook broken in that dimension alone, and a
notebook that writes beside itself fails too.

Kernels in .venv-colab (`make colab-env`): `make check`'s tier ("slow")."""

from __future__ import annotations

import os
import re
import subprocess

import nbformat
import pytest

from tools.site import ROOT

COLAB_PYTHON = ROOT / ".venv-colab" / "bin" / "python"
# What the Makefile forces for `make colab` (COLAB_CPU_PATH).
COLAB_CPU_PATH = re.search(
    r"^COLAB_CPU_PATH := (.*)$", (ROOT / "Makefile").read_text(), re.M
).group(1)
# A float32 sum of a million numbers: its last digits depend on the kernels'
# vector width and the threads, so the native path's stored value fails on
# the SSE4.2 path with one thread (seen: -1556.698486328125 native and with
# AVX2, -1556.716552734375 there).
SUM_CELL = (
    "import torch\n"
    "x = torch.randn(1000003, generator=torch.Generator().manual_seed(0))\n"
    "print(x.sum().item())"
)


def notebook(path, cells):
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    for count, (source, text) in enumerate(cells, start=1):
        cell = nbformat.v4.new_code_cell(source, execution_count=count)
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)]
        nb.cells.append(cell)
    nbformat.write(nb, path)
    return path


def printed(source: str, forced: bool = False) -> str:
    """What the cell prints in .venv, on this machine's own CPU path or the forced one."""
    env = {
        k: v for k, v in os.environ.items() if k not in ("ATEN_CPU_CAPABILITY", "OMP_NUM_THREADS")
    }
    if forced:
        env.update(word.split("=", 1) for word in COLAB_CPU_PATH.split())
    result = subprocess.run(
        [str(ROOT / ".venv" / "bin" / "python"), "-c", source],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return result.stdout


def colab_run(*paths, forced=True):
    env = {k: v for k, v in os.environ.items() if k != "ATTNBOOK_STATIC"}
    if forced:
        env.update(word.split("=", 1) for word in COLAB_CPU_PATH.split())
    return subprocess.run(
        [str(COLAB_PYTHON), str(ROOT / "tools" / "colab_run.py"), *map(str, paths)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )


@pytest.mark.slow
def test_each_dimension_fails_alone(tmp_path):
    if not COLAB_PYTHON.exists():
        pytest.skip("no .venv-colab here (make colab-env builds it; make check does)")
    native_sum = printed(SUM_CELL)
    if printed(SUM_CELL, forced=True) == native_sum:
        pytest.skip("this machine's own path prints the forced path's sum (no AVX2?)")
    cpu_path = notebook(tmp_path / "cpu-path.ipynb", [(SUM_CELL, native_sum)])
    # A cell that holds with ipywidgets 8 (.venv) and not with Colab's 7.7.
    widgets = notebook(
        tmp_path / "widgets.ipynb",
        [("import ipywidgets\nprint(ipywidgets.__version__.split('.')[0])", "8\n")],
    )
    writes = notebook(
        tmp_path / "writes.ipynb", [("open('left.txt', 'w').close()\nprint('ok')", "ok\n")]
    )
    result = colab_run(cpu_path, widgets, writes)
    log = result.stdout + result.stderr
    assert result.returncode == 1, log
    failed = set(re.findall(r"FAILED \S*?([\w-]+\.ipynb)::Cell (\d+)", log))
    assert failed == {("cpu-path.ipynb", "0"), ("widgets.ipynb", "0")}, log
    assert "writes.ipynb: the notebook wrote files next to itself: ['left.txt']" in log
    assert "`make test-cpus NB=book/NAME.ipynb` runs the path alone" in log
    # The stored sum is right on this machine's own path: unforced, it passes.
    result = colab_run(cpu_path, forced=False)
    assert result.returncode == 0, result.stdout + result.stderr
