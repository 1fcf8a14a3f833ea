"""tools/grade.py's bookkeeping: what it cannot grade, statuses, options (no worker runs).

The grading itself (a worker in bubblewrap per submission) is lib/tests/test_grading.py,
and end to end with an assignment otter built, tests/test_assignments.py (slow tier).
"""

from __future__ import annotations

import csv
import json
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


def assignment(tmp_path, questions=QUESTIONS, points=1):
    """An assignment folder whose autograder zip tests causal_lengths for ``points``."""
    folder = tmp_path / "assignments" / "masked-softmax"
    (folder / "autograder").mkdir(parents=True)
    test = f"name = 'causal_lengths'\npoints = {points}\n" + "".join(
        f"def test_{h}{i}(causal_lengths):\n"
        f"    passed, why = case_verdict('check_causal_lengths', causal_lengths, {i}, "
        f"seed={s}, answer='causal_lengths')\n"
        for h, s in (("case", 0), ("hidden", 99))
        for i in range(5)
    )
    with zipfile.ZipFile(folder / "autograder" / "masked-softmax-autograder.zip", "w") as z:
        z.writestr("tests/causal_lengths.py", test)
    (folder / "questions.json").write_text(json.dumps(questions))
    return folder


def submissions(tmp_path, *names):
    folder = tmp_path / "submissions"
    folder.mkdir(exist_ok=True)
    for name in names:
        nbformat.write(new_notebook(cells=[new_code_cell("x = 1")]), folder / f"{name}.ipynb")
    return folder


@pytest.fixture
def fake_grading(monkeypatch):
    """grade_notebook replaced: s1 scores 1, a name with 'err' is an error; calls recorded."""
    from attnbook.grading import sandbox, score

    calls = []

    def fake(notebook, questions, *, name, sandboxed, timeout, question_timeout):
        calls.append((name, sandboxed, timeout, question_timeout, [q.check for q in questions]))
        if "err" in name:
            return score.Graded(name, status="error", reason="the notebook could not be run: x")
        return score.Graded(name, scores={"causal_lengths": 1.0}, lines={"causal_lengths": ["ok"]})

    monkeypatch.setattr(score, "grade_notebook", fake)
    monkeypatch.setattr(sandbox, "check", lambda: None)
    return calls


def read(folder):
    with (folder / "grades.csv").open() as f:
        return {r["submission"]: r for r in csv.DictReader(f)}


def test_statuses_errors_and_exit_status(tmp_path, fake_grading, capsys):
    folder = assignment(tmp_path)
    subs = submissions(tmp_path, "s1", "s2_err")
    (subs / "s3.zip").write_text("not a zip")
    code = grade.main(["masked-softmax", str(subs), "--assignments", str(folder.parent)])
    assert code == 1
    rows = read(subs)
    assert list(rows["s1"]) == [
        "submission",
        "status",
        "causal_lengths",
        "masking",
        "total",
        "possible",
    ]
    assert rows["s1"]["status"] == "graded" and rows["s1"]["total"] == "1.00"
    assert rows["s2_err"]["status"] == "error: the notebook could not be run: x"
    assert rows["s2_err"]["total"] == rows["s2_err"]["causal_lengths"] == ""
    assert rows["s3"]["status"].startswith("error: not a notebook")
    out = capsys.readouterr().out
    assert "3 submissions" in out and "1 graded, 2 errors" in out
    assert "errors (not zeros; see feedback/): s2_err, s3" in out
    text = (subs / "feedback" / "s2_err.txt").read_text()
    assert "Not graded: the notebook could not be run: x." in text and "Score" not in text
    assert [c[4] for c in fake_grading] == [["check_causal_lengths"]] * 2


def test_only_regrades_the_names_given_and_keeps_the_rest(tmp_path, fake_grading):
    folder = assignment(tmp_path)
    subs = submissions(tmp_path, "s1", "s2_err")
    common = ["masked-softmax", str(subs), "--assignments", str(folder.parent)]
    grade.main(common)
    (subs / "s2_err.ipynb").rename(subs / "s2.ipynb")
    assert grade.main([*common, "--only", "s2"]) == 1  # s2_err's old error row is kept
    assert sorted(read(subs)) == ["s1", "s2", "s2_err"]
    assert [c[0] for c in fake_grading] == ["s1", "s2_err", "s2"]
    with pytest.raises(SystemExit, match="--only: no submission named"):
        grade.main([*common, "--only", "nobody"])


def test_options_reach_the_grading(tmp_path, fake_grading):
    folder = assignment(tmp_path)
    subs = submissions(tmp_path, "s1")
    common = [str(folder), str(subs)]  # the assignment given as a path
    assert grade.main([*common, "--timeout", "90", "--question-timeout", "12"]) == 0
    assert grade.main([*common, "--unsandboxed"]) == 0
    assert [c[1:4] for c in fake_grading] == [(True, 90.0, 12.0), (False, grade.TIMEOUT, None)]
    for bad in ("0", "-1", "nan", "120"):
        with pytest.raises(SystemExit, match="--question-timeout must be positive and below"):
            grade.main([*common, "--question-timeout", bad])


def test_no_sandbox_no_grading_unless_asked(tmp_path, monkeypatch, capsys):
    from attnbook.grading import sandbox

    folder = assignment(tmp_path)
    subs = submissions(tmp_path, "s1")
    monkeypatch.setattr(sandbox, "check", lambda: "bwrap (bubblewrap) is not installed")
    assert grade.main([str(folder), str(subs)]) == 2
    assert "UNSANDBOXED=1" in capsys.readouterr().err
    assert not (subs / "grades.csv").exists()


def test_points_come_from_the_autograder_and_a_stale_list_is_named(tmp_path, fake_grading, capsys):
    """An edited master rebuilt with otter assign: questions.json says 1 point, the tests 2."""
    folder = assignment(tmp_path, points=2)
    subs = submissions(tmp_path, "s1")
    assert grade.main([str(folder), str(subs)]) == 0
    assert (
        "questions.json gives causal_lengths 1 points, the autograder 2" in capsys.readouterr().out
    )
    assert read(subs)["s1"]["possible"] == "2"
