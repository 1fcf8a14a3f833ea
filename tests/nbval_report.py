"""A pytest plugin that explains nbval failures in plain words.

Loaded by the Makefile (`-p tests.nbval_report`) next to nbval. For every
notebook cell that failed it prints, at the end of the run, the notebook, the
cell number, the first line of the cell, what went wrong, the stored and the
new text side by side, and what to do next.
"""

from __future__ import annotations

import os

import pytest

_failures: list[dict] = []
_KEY = "nbval_report"


def _text(outputs) -> str:
    """The text a student would see for a cell's outputs (figures and widgets named)."""
    parts = []
    for output in outputs or []:
        if output.get("output_type") == "stream":
            parts.append(output.get("text", ""))
        elif output.get("output_type") == "error":
            parts.append(f"{output.get('ename')}: {output.get('evalue')}")
        else:
            data = output.get("data", {})
            if "text/plain" in data:
                parts.append(data["text/plain"])
            if "image/png" in data:
                parts.append("[a figure]")
    return "".join(part if part.endswith("\n") else part + "\n" for part in parts).rstrip()


def _first_difference(stored: str, new: str) -> tuple[str, str]:
    for old_line, new_line in zip(stored.splitlines(), new.splitlines()):
        if old_line != new_line:
            return old_line, new_line
    old_lines, new_lines = stored.splitlines(), new.splitlines()
    if len(old_lines) != len(new_lines):
        return (
            f"({len(old_lines)} lines of output)",
            f"({len(new_lines)} lines of output)",
        )
    return stored[:200], new[:200]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when != "call" or not report.failed or not hasattr(item, "cell"):
        return
    source = item.cell.get("source", "")
    first_line = next((line for line in source.splitlines() if line.strip()), "")
    message = str(call.excinfo.value) if call.excinfo else ""
    raised = "Error" in message and "output" not in message.lower()
    stored = _text(item.cell.get("outputs"))
    new = _text(getattr(item, "test_outputs", None))
    # Carried on the report, so that it reaches the controller process when
    # pytest-xdist runs the notebooks on several workers (`make test`).
    report.user_properties.append(
        (
            _KEY,
            {
                "notebook": os.path.relpath(item.path),
                "cell": getattr(item, "cell_num", "?"),
                "first_line": first_line[:70],
                "raised": raised,
                "stored": stored,
                "new": new,
            },
        )
    )


def pytest_runtest_logreport(report):
    _failures.extend(value for key, value in report.user_properties if key == _KEY)


def pytest_terminal_summary(terminalreporter):
    if not _failures:
        return
    write = terminalreporter.write_line
    terminalreporter.section("What changed, in plain words")
    notebooks = []
    for failure in _failures:
        if failure["notebook"] not in notebooks:
            notebooks.append(failure["notebook"])
        write(
            f"{failure['notebook']}, code cell {failure['cell']} (nbval's numbering), "
            f"which starts: {failure['first_line']}"
        )
        if failure["raised"]:
            write("    This cell now stops with an error (see the traceback above).")
        else:
            write("    The cell ran, but what it shows is not what the notebook has stored.")
            old, new = _first_difference(failure["stored"], failure["new"])
            write(f"    stored: {old}")
            write(f"    now:    {new}")
    write("")
    write("If you made this change on purpose, store the new outputs:")
    for notebook in notebooks:
        write(f"    make notebooks NB={notebook}")
    write("To throw away your edits and get a notebook back as it was:")
    for notebook in notebooks:
        write(f"    git checkout -- {notebook}")
