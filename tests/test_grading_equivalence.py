"""A checker judges a function alike in the student's process and through the grader (slow tier).

`make grade` runs each student's notebook in a worker process and the checkers
in its own, on proxies (attnbook.grading.remote). For every chapter with
checked exercises, a notebook of the chapter's setup cells and its reference
solutions (tools.assignments.solution_code) runs in a worker in bubblewrap,
and each checker's report on the proxy, under the book's seed and a fresh one,
must equal its report on the same function run here, line for line: gradient
probes, in-place checks, dtypes, tuples and integers cross the boundary intact.
A wrong answer is compared too: each solution with its first ``dim=-1`` made
``dim=0`` (or its first ``+ 1`` dropped), whose report (failures and diagnosis)
must also be the same. About a minute.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from attnbook.checks import report_for
from attnbook.grading import remote
from tools.assignments import _code, solution_code

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow
MARKERS = re.compile(r"^\s*# (BEGIN|END) SOLUTION.*$", re.M)


def chapters():
    out = []
    for path in sorted((ROOT / "book").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        if any("check" in c.metadata.get("attnbook", {}) for c in nb.cells):
            out.append(pytest.param(path, id=path.stem))
    return out


def slip(source: str) -> str | None:
    """The solution with one slip of the hand, or None when neither pattern occurs."""
    for old, new in (("dim=-1", "dim=0"), (" + 1", "")):
        if old in source:
            return source.replace(old, new, 1)
    return None


@pytest.mark.parametrize("path", chapters())
def test_reports_are_the_same_through_the_grader(path, tmp_path):
    nb = nbformat.read(path, as_version=4)
    setup = [
        _code(c.source)
        for c in nb.cells
        if c.cell_type == "code" and "setup" in c.metadata.get("tags", [])
    ]
    metas = [c.metadata["attnbook"] for c in nb.cells if "check" in c.metadata.get("attnbook", {})]
    sources = {
        m["answer"]: MARKERS.sub("", solution_code(c.source, m["solution"], m["answer"]))
        for c, m in ((c, c.metadata.get("attnbook", {})) for c in nb.cells)
        if "check" in m
    }
    slips = {f"slipped_{a}": slip(s) for a, s in sources.items()}
    slips = {a: s.replace(a.removeprefix("slipped_"), a) for a, s in slips.items() if s}
    cells = [*setup, *sources.values(), *slips.values()]
    notebook = tmp_path / f"{path.stem}.ipynb"
    nbformat.write(new_notebook(cells=[new_code_cell(c) for c in cells]), notebook)
    here: dict = {"__name__": "__main__"}
    for cell in cells:
        exec(cell, here)
    compared = 0
    with remote.Submission(notebook, deadline=time.monotonic() + 600) as submission:
        submission.start()
        assert submission.cell_errors == []
        for meta in metas:
            names = [meta["answer"]] + [n for n in slips if n == f"slipped_{meta['answer']}"]
            for name in names:
                proxy = submission.function(name)
                for seed in (0, 3):
                    there = report_for(meta["check"], proxy, seed)
                    local = report_for(meta["check"], here[name], seed)
                    assert there.lines == local.lines, (name, seed)
                    assert (there.mistake, there.diagnosis) == (local.mistake, local.diagnosis)
                    if name == meta["answer"]:
                        assert there.passed, (name, seed, repr(there))
                    compared += 1
    assert compared == 2 * (len(metas) + len(slips))
