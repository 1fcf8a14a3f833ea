"""Time each chapter notebook's run on this machine's CPU, for the instructor guide.

    python -m tools.time_notebooks [book/a.ipynb ...]   # all chapters by default

Each notebook runs top to bottom as a student's Jupyter runs it (live
explorers, ATTNBOOK_STATIC unset, an empty working folder, a fresh kernel),
one after another, and the wall-clock seconds from its first request to its
last cell are stored in book/_ext/notebook_times.json, with the kernel's
CPU seconds (user + system, all its threads) over the same span, and the
machine they were measured on (CPU model, cores, torch version, the highest
load average seen before a run). book/_ext/instructor_guide.py reads that file; the
instructor guide prints the CPU seconds, rounded up. Outputs are
discarded: nothing in book/ is rewritten except the JSON (only the notebooks
named on the command line are replaced in it). A notebook whose run fails gets
its error, under "failed", instead of a time; the guide says it was not measured.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from pathlib import Path

import nbformat
import psutil

from tools import nbrun

ROOT = Path(__file__).resolve().parent.parent
TIMES = ROOT / "book" / "_ext" / "notebook_times.json"


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo, or platform's guess elsewhere."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def run_seconds(path: Path) -> tuple[float, float]:
    """Wall-clock and kernel CPU seconds to run the notebook at ``path`` in a fresh kernel."""
    nb = nbformat.read(path, as_version=4)
    with nbrun.started(nb, timeout=900, static=False) as client:
        kernel = psutil.Process(client.km.provisioner.process.pid)
        start, cpu_start = time.perf_counter(), kernel.cpu_times()
        client.wait_for_reply(client.kc.kernel_info())
        for index, cell in enumerate(nb.cells):
            client.execute_cell(cell, index, execution_count=client.code_cells_executed + 1)
        wall, cpu = time.perf_counter() - start, kernel.cpu_times()
    busy = (cpu.user - cpu_start.user) + (cpu.system - cpu_start.system)
    return wall, busy


def main(argv: list[str]) -> int:
    import torch

    paths = [Path(name) for name in argv] or sorted((ROOT / "book").glob("*.ipynb"))
    machine = {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "torch": torch.__version__,
        "load_average_before": round(os.getloadavg()[0], 2),
        "measured": time.strftime("%Y-%m-%d", time.gmtime()),
    }
    # A run over every notebook the record holds measures it afresh: the load
    # seen before an earlier run describes none of its times any more.
    if TIMES.is_file():
        record = json.loads(TIMES.read_text())
        measured = set(record.get("cpu_seconds", {})) | set(record.get("failed", {}))
        if measured <= {path.stem for path in paths}:
            record.get("machine", {}).pop("load_average_before", None)
            TIMES.write_text(json.dumps(record, indent=2) + "\n")
    for path in paths:
        try:
            seconds, cpu_seconds = run_seconds(path)
            failure = None
            print(f"{path.stem}: {seconds:.1f} s wall, {cpu_seconds:.1f} s CPU", flush=True)
        except nbrun.CellExecutionError as error:
            failure = f"{error.ename}: {error.evalue}"[:200]
            print(f"{path.stem}: the run failed, {failure}", flush=True)
        # Read, update and write after each notebook, so that two runs on
        # different notebooks (or an interrupted run) keep what they measured.
        # A run that fails records its error instead of a time.
        record = json.loads(TIMES.read_text()) if TIMES.is_file() else {}
        record.setdefault("failed", {}).pop(path.stem, None)
        for key in ("seconds", "cpu_seconds"):
            record.setdefault(key, {}).pop(path.stem, None)
        if failure is None:
            record["seconds"][path.stem] = round(seconds, 1)
            record["cpu_seconds"][path.stem] = round(cpu_seconds, 1)
        else:
            record["failed"][path.stem] = failure
        for key in ("seconds", "cpu_seconds", "failed"):
            record[key] = dict(sorted(record[key].items()))
        old = record.get("machine", {})
        load = max(old.get("load_average_before", 0), machine["load_average_before"])
        record["machine"] = {**machine, "load_average_before": load}
        TIMES.write_text(json.dumps(record, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
