"""Proof that the notebooks' regression tests bite.

For every notebook, a temporary copy has one digit of one stored text output
changed; strict nbval must then fail on exactly that cell, while an untouched
copy passes. Both copies stop right after the chosen cell, to keep this quick.
"""

from __future__ import annotations

import re
import subprocess
import sys

import nbformat
import pytest

from tools.site import NOTEBOOKS, ROOT, read_notebook


def first_numeric_output(nb) -> tuple[int, int, dict, str]:
    """(cell index, code-cell number, output, key) of the first text output with a digit."""
    code_number = -1
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        code_number += 1
        for output in cell.outputs:
            if output.output_type == "stream" and re.search(r"\d", output.text):
                return index, code_number, output, "text"
            if re.search(r"\d", output.get("data", {}).get("text/plain", "")):
                return index, code_number, output, "text/plain"
    raise AssertionError("no stored text output with a digit")


def bump_first_digit(text: str) -> str:
    return re.sub(r"\d", lambda m: str((int(m.group()) + 1) % 10), text, count=1)


# A kernel per chapter: `make check`'s tier (tests/conftest.py, "slow").
@pytest.mark.slow
def test_changing_one_stored_digit_makes_nbval_fail(tmp_path):
    expected_failures = {}
    files = []
    for path in NOTEBOOKS:
        nb = read_notebook(path)
        index, code_number, output, key = first_numeric_output(nb)
        nb.cells = nb.cells[: index + 1]
        if key == "text":
            output.text = bump_first_digit(output.text)
        else:
            output.data["text/plain"] = bump_first_digit(output.data["text/plain"])
        mutated = tmp_path / f"mutated-{path.name}"
        nbformat.write(nb, mutated)
        files.append(mutated)
        expected_failures[mutated.name] = code_number
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-p",
            "tests.nbval_report",
            "--nbval",
            "--nbval-sanitize-with",
            str(ROOT / "tests" / "nbval-sanitize.cfg"),
            "-rA",
            # As `make test` runs them: a notebook per worker, the report
            # gathered from the workers (tests/nbval_report.py).
            "-n",
            "2",
            "--dist",
            "loadfile",
            *map(str, files),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    log = result.stdout + result.stderr
    assert result.returncode == 1, log
    failed = set(re.findall(r"^FAILED \S*?([\w.-]+\.ipynb)::Cell (\d+)", log, re.MULTILINE))
    assert failed == {(name, str(number)) for name, number in expected_failures.items()}, log
    passed = re.findall(r"^PASSED \S*?([\w.-]+\.ipynb)::Cell (\d+)", log, re.MULTILINE)
    for name, number in expected_failures.items():  # every earlier cell still passes
        assert sorted(int(n) for f, n in passed if f == name) == list(range(number)), log
    assert "The cell ran, but what it shows is not what the notebook has stored." in log
    for name in expected_failures:
        assert "make notebooks NB=" in log and name in log
