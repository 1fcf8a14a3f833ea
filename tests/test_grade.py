"""tools/grade.py's handling of submissions it cannot grade (no otter needed).

The grading itself, with otter, is tests/test_assignments.py (slow tier).
"""

from __future__ import annotations

import json
import stat
import sys
import time
import zipfile

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from tools import grade

QUESTIONS = [
    {
        "name": "causal_lengths",
        "exercise": "masked-softmax/causal-lengths",
        "points": 1,
        "checked": True,
    },
    {"name": "masking", "exercise": "masked-softmax/masking", "points": 2, "checked": False},
]


def test_what_is_not_a_notebook_is_named(tmp_path):
    good = tmp_path / "good.ipynb"
    nbformat.write(new_notebook(cells=[new_code_cell("x = 1")]), good)
    assert grade.not_a_notebook(good) is None
    (tmp_path / "answers.txt").write_text("see my e-mail")
    assert "neither a .ipynb nor an exported .zip" in grade.not_a_notebook(tmp_path / "answers.txt")
    (tmp_path / "broken.ipynb").write_text("{not json")
    assert "broken.ipynb cannot be read as one" in grade.not_a_notebook(tmp_path / "broken.ipynb")
    (tmp_path / "fake.zip").write_text("not a zip")
    assert "fake.zip is not a zip file" in grade.not_a_notebook(tmp_path / "fake.zip")
    with zipfile.ZipFile(tmp_path / "empty.zip", "w") as archive:
        archive.writestr("notes.md", "nothing")
    assert "holds no .ipynb" in grade.not_a_notebook(tmp_path / "empty.zip")
    with zipfile.ZipFile(tmp_path / "export.zip", "w") as archive:
        archive.write(good, "good.ipynb")
    assert grade.not_a_notebook(tmp_path / "export.zip") is None


def test_a_submission_past_the_time_limit_is_stopped(tmp_path):
    """A stand-in for otter that never ends: stopped at the limit, with its children."""
    marker = tmp_path / "child-alive"
    child = tmp_path / "child.py"
    child.write_text(f"import time\ntime.sleep(3)\nopen({str(marker)!r}, 'w').close()\n")
    fake = tmp_path / "otter"
    fake.write_text(
        f"#!{sys.executable}\n"
        "import subprocess, sys, time\n"
        f"subprocess.Popen([sys.executable, {str(child)!r}])\n"
        "time.sleep(60)\n"
    )
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    started = time.perf_counter()
    results, problem = grade.run_otter(tmp_path / "a.zip", tmp_path / "s.ipynb", 1.0, otter=fake)
    assert time.perf_counter() - started < 10
    assert results is None
    assert problem == "ran past the time limit of 1 s (an endless loop?)"
    time.sleep(4)
    assert not marker.exists(), "the submission's child process outlived the time limit"


def test_a_failing_otter_is_a_line_not_a_crash(tmp_path):
    fake = tmp_path / "otter"
    fake.write_text(
        f"#!{sys.executable}\nprint('Error: something went wrong')\nraise SystemExit(2)\n"
    )
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    results, problem = grade.run_otter(tmp_path / "a.zip", tmp_path / "s.ipynb", 30, otter=fake)
    assert results is None
    assert problem == "otter could not grade it (exit 2): Error: something went wrong"


def test_feedback_of_a_zero():
    graded = grade.Graded(name="s1", scores={"causal_lengths": 0.0}, problem="not a notebook: x")
    text = grade.feedback("masked-softmax", graded, QUESTIONS)
    assert "Score: 0.00 of 1 points for the checked questions" in text
    assert "(1 written questions, 2 points, are graded by hand)" in text
    assert "Graded zero: not a notebook: x" in text
    assert "causal_lengths (exercise masked-softmax/causal-lengths): 0.00 of 1" in text
    assert "masking (exercise masked-softmax/masking): written, graded by hand" in text


def test_the_question_time_limit_reaches_otters_environment(tmp_path, monkeypatch):
    """--question-timeout is passed to otter (and the kernel it starts) as the
    variable that attnbook.checks.report_for reads."""
    from attnbook.checks import _grading

    assert grade.QUESTION_TIMEOUT_VARIABLE == _grading.TIMEOUT_VARIABLE
    seen = tmp_path / "seen.txt"
    fake = tmp_path / "otter"
    fake.write_text(
        f"#!{sys.executable}\nimport os\n"
        f"open({str(seen)!r}, 'w').write(os.environ.get({grade.QUESTION_TIMEOUT_VARIABLE!r}, 'unset'))\n"
        "raise SystemExit(2)\n"
    )
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.delenv(grade.QUESTION_TIMEOUT_VARIABLE, raising=False)
    grade.run_otter(tmp_path / "a.zip", tmp_path / "s.ipynb", 30, otter=fake)
    assert seen.read_text() == "unset"
    grade.run_otter(tmp_path / "a.zip", tmp_path / "s.ipynb", 30, otter=fake, question_timeout=7.5)
    assert seen.read_text() == "7.5"


def test_make_grade_passes_the_question_time_limit_down(tmp_path, monkeypatch):
    """main -> grade_one -> run_otter carries --question-timeout; a bad one is refused."""
    folder = tmp_path / "assignments" / "masked-softmax"
    (folder / "autograder").mkdir(parents=True)
    (folder / "autograder" / "masked-softmax-autograder.zip").write_bytes(b"")
    (folder / "questions.json").write_text(json.dumps(QUESTIONS))
    submissions = tmp_path / "submissions"
    submissions.mkdir()
    nbformat.write(new_notebook(cells=[new_code_cell("x = 1")]), submissions / "s1.ipynb")
    calls = []

    def fake_run_otter(zip_path, submission, timeout, otter=None, question_timeout=None):
        calls.append((timeout, question_timeout))
        return None, "not graded here"

    monkeypatch.setattr(grade, "run_otter", fake_run_otter)
    common = ["masked-softmax", str(submissions), "--assignments", str(folder.parent)]
    assert grade.main([*common, "--timeout", "90", "--question-timeout", "12"]) == 0
    assert grade.main(common) == 0
    assert calls == [(90.0, 12.0), (grade.TIMEOUT, None)]
    for bad in ("0", "-1", "nan", "120"):
        with pytest.raises(SystemExit, match="--question-timeout must be positive and below"):
            grade.main([*common, "--question-timeout", bad])
    assert len(calls) == 2
