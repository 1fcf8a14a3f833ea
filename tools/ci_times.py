"""Print where a CI run's time went: `python tools/ci_times.py FOLDER`.

FOLDER is what ATTNBOOK_TIMES named during the run (.ci/run: _build/times).
It holds `targets.tsv` (tools/timed_shell: one row per make recipe line, with
its target, wall and CPU seconds and exit status), `files.tsv` and `tests.tsv`
(tests/times_report.py: each test file's and the slowest tests' seconds, under
the make target and the CPU path that ran them). Three tables come out:

1. each make target: its recipe's wall and CPU seconds (a target that runs a
   sub-make, `test` and `check`, includes the parts it ran);
2. each notebook: its nbval time (cells and kernel start) in each run;
3. the 25 slowest library tests.
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from pathlib import Path


def _rows(path: Path) -> list[list[str]]:
    if not path.exists():
        return []
    return [line.split("\t") for line in path.read_text().splitlines() if line.strip()]


def target_table(folder: Path) -> list[str]:
    wall: dict[str, float] = defaultdict(float)
    cpu: dict[str, float] = defaultdict(float)
    failed: dict[str, bool] = defaultdict(bool)
    for target, w, c, rc in _rows(folder / "targets.tsv"):
        wall[target] += float(w)
        cpu[target] += float(c)
        failed[target] |= rc != "0"
    lines = ["| make target | wall s | CPU s | |", "| --- | ---: | ---: | --- |"]
    for target in wall:  # in the order they first finished a line
        mark = "failed" if failed[target] else ""
        lines.append(f"| {target} | {wall[target]:.0f} | {cpu[target]:.0f} | {mark} |")
    return lines


# `make colab` runs each reader's edition alone in a temporary folder of its own
# (tools/colab_run.py): .../colab-XXXX/NAME/NAME.ipynb is chapter NAME's.
ROOT = Path(__file__).resolve().parent.parent
COLAB_COPY = re.compile(r"(?:^|/)colab-[^/]+/([^/]+)/\1\.ipynb$")


def notebook_table(folder: Path) -> list[str]:
    runs: list[str] = []
    seconds: dict[str, dict[str, float]] = defaultdict(dict)
    for target, cpu_path, path, s in _rows(folder / "files.tsv"):
        copy = COLAB_COPY.search(path)
        if copy and (ROOT / "book" / f"{copy.group(1)}.ipynb").is_file():
            path = f"book/{copy.group(1)}.ipynb"
        if not path.endswith(".ipynb") or not path.startswith(("book/", "slides/")):
            continue  # the test machinery's own made-up notebooks
        run = target if cpu_path == "native" else f"{target} ({cpu_path})"
        if run not in runs:
            runs.append(run)
        seconds[path][run] = seconds[path].get(run, 0.0) + float(s)
    if not seconds:
        return []
    lines = ["| notebook | " + " | ".join(runs) + " |", "| --- |" + " ---: |" * len(runs)]
    for path in sorted(seconds, key=lambda p: -max(seconds[p].values())):
        cells = [f"{seconds[path][run]:.0f}" if run in seconds[path] else "" for run in runs]
        lines.append(f"| {path} | " + " | ".join(cells) + " |")
    return lines


def slowest_tests(folder: Path, target: str = "test-lib", count: int = 25) -> list[str]:
    """The slowest tests that ``target`` ran (pytest names them from lib/)."""
    tests = [
        (float(s), nodeid) for run, _, nodeid, s in _rows(folder / "tests.tsv") if run == target
    ]
    tests.sort(reverse=True)
    lines = ["| library test | s |", "| --- | ---: |"]
    lines += [f"| {nodeid} | {s:.1f} |" for s, nodeid in tests[:count]]
    return lines if tests else []


def main(argv: list[str]) -> int:
    folder = Path(argv[1] if len(argv) > 1 else "_build/times")
    if not (folder / "targets.tsv").exists():
        print(f"no times in {folder}: set ATTNBOOK_TIMES={folder} for the make run")
        return 1
    for title, table in [
        (
            "Time per make target (a target that runs a sub-make includes its parts)",
            target_table(folder),
        ),
        ("Each notebook's nbval time (cells and kernel start), per run", notebook_table(folder)),
        ("The 25 slowest library tests", slowest_tests(folder)),
    ]:
        if table:
            print(f"\n{title}\n")
            print("\n".join(table))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
