"""What the Gradescope zip pins (tools/assignments.py), checked without building one.

The zip's requirements are attnbook's dependencies and theirs, each pinned as
tools/requirements-otter.txt pins it, and nothing of otter's; the student
notebook's install cell names a commit when given one. The slow tier installs
them offline and grades with them (tests/test_gradescope_zip.py).
"""

from __future__ import annotations

import re

from tools import assignments, nbtools


def _pins(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        if line and not line.startswith(("#", "-", " ")):
            name, rest = line.split("==", 1)
            out.setdefault(re.sub(r"[-_.]+", "-", name).lower(), rest.split(";")[0].strip())
    return out


def test_the_requirements_are_attnbooks_closure_pinned_by_the_lock():
    pins = _pins(assignments.requirements())
    lock = _pins(assignments.OTTER_LOCK.read_text())
    assert assignments.attnbook_dependencies() <= set(pins)
    # torch's and matplotlib's own dependencies come along
    assert {"typing-extensions", "sympy", "pyparsing", "kiwisolver"} <= set(pins)
    assert not {"otter-grader", "ipykernel", "nbconvert", "sphinx", "pip"} & set(pins)
    assert all(lock[name] == version for name, version in pins.items())
    assert "git+" not in assignments.requirements()


def test_a_missing_dependency_of_the_lock_is_refused(tmp_path):
    lock = tmp_path / "lock.txt"
    text = assignments.OTTER_LOCK.read_text()
    lock.write_text(re.sub(r"(?m)^numpy==.*\n(    #.*\n)*", "", text))
    try:
        assignments.requirements(lock)
    except ValueError as err:
        assert "numpy" in str(err)
    else:
        raise AssertionError("a lock without numpy was accepted")


def test_the_install_cell_names_the_ref_it_is_given():
    sha = "0123456789abcdef0123456789abcdef01234567"
    cell = nbtools.install_cell_source(ref=sha)
    assert f"@{sha}#subdirectory=lib" in cell
    _, branch = nbtools.repository()
    assert f"@{branch}#subdirectory=lib" in nbtools.install_cell_source()


def test_run_autograder_writes_results_even_without_its_environment(tmp_path):
    """A broken image (setup.sh failed, no attnbook) still gives the student a reason."""
    import json
    import subprocess

    from attnbook.grading import gradescope

    script = assignments.GRADESCOPE / "run_autograder"
    env = {
        "PATH": "/usr/bin:/bin",
        "ATTNBOOK_AUTOGRADER": str(tmp_path),
        "ATTNBOOK_VENV": str(tmp_path / "no-such-venv"),
    }
    done = subprocess.run([str(script)], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    results = json.loads((tmp_path / "results" / "results.json").read_text())
    assert gradescope.problems(results) == []
    assert results["score"] == 0.0 and "error of the grading" in results["output"]
