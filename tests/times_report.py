"""A pytest plugin that files how long each test file and each test took.

Loaded by the Makefile (`-p tests.times_report`) for the library tests and
every strict nbval run. When ATTNBOOK_TIMES names a folder (`.ci/run` sets
it), the controlling process appends one row per file (a notebook, under
nbval: the sum of its cells, kernel start included) to `files.tsv` and its 25
slowest tests to `tests.tsv`, each row under the make target that ran it and
the CPU path forced (ATEN_CPU_CAPABILITY). `tools/ci_times.py` prints them.
"""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path

_files: dict[str, float] = defaultdict(float)
_tests: dict[str, float] = defaultdict(float)


def pytest_runtest_logreport(report):
    path = report.nodeid.split("::", 1)[0]
    _files[path] += report.duration
    _tests[report.nodeid] += report.duration


def pytest_sessionfinish(session):
    folder = os.environ.get("ATTNBOOK_TIMES")
    if not folder or hasattr(session.config, "workerinput") or not _files:
        return
    label = "\t".join(
        [
            os.environ.get("ATTNBOOK_TARGET", "pytest"),
            os.environ.get("ATEN_CPU_CAPABILITY", "native"),
        ]
    )
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "files.tsv", "a") as rows:
        for path, seconds in _files.items():
            rows.write(f"{label}\t{path}\t{seconds:.1f}\n")
    slowest = sorted(_tests.items(), key=lambda item: -item[1])[:25]
    with open(out / "tests.tsv", "a") as rows:
        for nodeid, seconds in slowest:
            rows.write(f"{label}\t{nodeid}\t{seconds:.2f}\n")
