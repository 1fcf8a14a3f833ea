"""One chapter's graded assignment, built and graded end to end (slow tier).

`make assignments` builds masked-softmax's assignment with otter-grader
(tools/assignments.py), and `make grade` grades five submissions with its
autograder (tools/grade.py), each notebook in bubblewrap: the solutions (full
marks), the untouched student notebook (zero), the solutions with the classic
off-by-one of causal lengths (fewer points, and the checker's diagnosis in the
feedback), wrong answers with the trial's two-line patch of the verdict (zero)
and a notebook whose process exits (an error, not a zero). The student notebook
must hold no solution code, no rubric and no hidden test, and the hidden seed
differs between two builds. About a minute: otter assign runs the solutions
against every test.
"""

from __future__ import annotations

import csv
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from tools import assignments

ROOT = Path(__file__).resolve().parent.parent
OTTER_VENV = ROOT / ".venv-otter" / "bin"
CHAPTER = ROOT / "book" / "masked-softmax.ipynb"
OFF_BY_ONE = "this looks like lengths 0, 1, ..., queries - 1"

pytestmark = pytest.mark.slow


EXERCISES = ",".join(
    f"masked-softmax/{name}"
    for name in (
        "masked-softmax-without-a-fill-value",
        "causal-lengths",
        "masking-or-cropping",
        "padding-on-the-left",
    )
)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    assert (OTTER_VENV / "otter").exists(), "no .venv-otter: run make otter-env"
    out = tmp_path_factory.mktemp("assignments")
    # The chapter's four exercises alone: the concept questions have their own
    # build and test below (concept_built), so these numbers stay the exercises'.
    code = assignments.main(
        ["--out", str(out), "--otter", str(OTTER_VENV / "otter"), "--exercises", EXERCISES]
        + [str(CHAPTER)]
    )
    assert code == 0
    return out / "masked-softmax"


def _answer_cells(nb):
    return [c for c in nb.cells if "otter_answer_cell" in c.metadata.get("tags", [])]


def test_the_student_notebook_holds_no_solution(built):
    student = nbformat.read(built / "student" / "masked-softmax.ipynb", as_version=4)
    text = "\n".join(c.source for c in student.cells)
    chapter = nbformat.read(CHAPTER, as_version=4)
    solutions = [c.source for c in chapter.cells if "solution" in c.metadata.get("tags", [])]
    code_lines = {
        line.strip()
        for source in solutions
        for line in source.splitlines()
        if len(line.strip()) > 12 and not line.strip().startswith(("#", "def ", "return"))
    }
    assert code_lines  # the chapter has solution code to look for
    assert not [line for line in code_lines if line in text]
    assert "solution_" not in text
    # The written exercises' model answers (the book's dropdowns) are not there either.
    assert "75 scores" not in text and "AND-ed with a lower-triangular" not in text
    # Only the public tests reach the student: the hidden ones run on a seed
    # drawn for this build, found only in the autograder.
    seed = hidden_seed(built)
    assert f"seed={seed}" not in nbformat.writes(student) and str(seed) not in text
    assert "seed=0" in nbformat.writes(student)
    answers = [c.source for c in _answer_cells(student) if c.cell_type == "code"]
    assert answers == [
        "def masked_softmax_renorm(X, valid_lens):\n    ...",
        "def causal_lengths(batch, queries):\n    ...",
        "# Your code here.",  # exercise 4 asks for masked_softmax_bool: a code cell
    ]


def hidden_seed(folder: Path) -> int:
    from attnbook.grading.score import hidden_seeds, questions_from_zip

    (zip_path,) = (folder / "autograder").glob("*.zip")
    (seed,) = hidden_seeds(questions_from_zip(zip_path))
    return seed


def test_the_autograder_has_hidden_tests_on_fresh_inputs(built):
    zips = list((built / "autograder").glob("*.zip"))
    assert len(zips) == 1
    import zipfile

    with zipfile.ZipFile(zips[0]) as archive:
        test = archive.read("tests/causal_lengths.py").decode()
    assert test.count("hidden=True") == test.count("hidden=False") == 5
    assert test.count(f"seed={hidden_seed(built)}") == 5


def test_the_hidden_seed_is_drawn_for_each_build(built, tmp_path):
    """A second build draws another seed; --seed fixes it."""
    otter = str(OTTER_VENV / "otter")
    args = [
        "--out",
        str(tmp_path),
        "--otter",
        otter,
        "--exercises",
        "masked-softmax/causal-lengths",
    ]
    assert assignments.main(args) == 0
    assert hidden_seed(tmp_path / "masked-softmax") != hidden_seed(built)
    assert assignments.main([*args, "--seed", "4242"]) == 0
    assert hidden_seed(tmp_path / "masked-softmax") == 4242


def test_grading_five_submissions(built, tmp_path):
    solved = nbformat.read(built / "autograder" / "masked-softmax.ipynb", as_version=4)
    nbformat.write(solved, tmp_path / "solutions.ipynb")
    untouched = nbformat.read(built / "student" / "masked-softmax.ipynb", as_version=4)
    nbformat.write(untouched, tmp_path / "untouched.ipynb")
    slip = nbformat.read(built / "autograder" / "masked-softmax.ipynb", as_version=4)
    (cell,) = [c for c in slip.cells if "torch.arange(1, queries + 1)" in c.source]
    cell.source = cell.source.replace("torch.arange(1, queries + 1)", "torch.arange(queries)")
    nbformat.write(slip, tmp_path / "off_by_one.ipynb")
    # The teacher's trial: wrong answers and two lines that patch the verdict.
    patched = nbformat.read(built / "student" / "masked-softmax.ipynb", as_version=4)
    for c in _answer_cells(patched):
        c.source = c.source.replace("...", "return torch.zeros(1)")
    patched.cells.insert(
        3,
        nbformat.v4.new_code_cell(
            "import attnbook.checks\nattnbook.checks.case_verdict = lambda *a, **k: (True, '')"
        ),
    )
    nbformat.write(patched, tmp_path / "patched.ipynb")
    exits = nbformat.read(built / "autograder" / "masked-softmax.ipynb", as_version=4)
    exits.cells.insert(3, nbformat.v4.new_code_cell("import os\nos._exit(1)"))
    nbformat.write(exits, tmp_path / "exits.ipynb")

    done = subprocess.run(
        [
            str(OTTER_VENV / "python"),
            "-m",
            "tools.grade",
            "masked-softmax",
            str(tmp_path),
            "--assignments",
            str(built.parent),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1, done.stdout + done.stderr  # one submission errored
    assert "errors (not zeros; see feedback/): exits" in done.stdout
    with (tmp_path / "grades.csv").open() as f:
        rows = {row["submission"]: row for row in csv.DictReader(f)}
    columns = list(next(iter(rows.values())))
    assert columns == [
        "submission",
        "status",
        "masked_softmax_without_a_fill_value",
        "causal_lengths",
        "masking_or_cropping",
        "padding_on_the_left",
        "total",
        "possible",
    ]
    assert sorted(rows) == ["exits", "off_by_one", "patched", "solutions", "untouched"]
    assert all(row["possible"] == "4" for row in rows.values())  # 3 + 1 stars checked
    assert rows["patched"]["total"] == "0.00" and rows["patched"]["status"] == "graded"
    assert rows["exits"]["status"].startswith("error: the notebook could not be run")
    assert rows["exits"]["total"] == "" and rows["exits"]["causal_lengths"] == ""
    assert rows["solutions"]["total"] == "4.00"
    assert rows["untouched"]["total"] == "0.00"
    assert rows["off_by_one"]["masked_softmax_without_a_fill_value"] == "3.00"
    assert rows["off_by_one"]["causal_lengths"] == "0.00"
    assert rows["off_by_one"]["total"] == "3.00"
    assert rows["solutions"]["masking_or_cropping"] == ""  # written: graded by hand
    feedback = (tmp_path / "feedback" / "off_by_one.txt").read_text()
    assert "causal_lengths (exercise masked-softmax/causal-lengths): 0.00 of 1" in feedback
    assert f"Likely mistake: {OFF_BY_ONE}" in feedback
    assert "the book's cases: 0 of 5 passed; fresh cases: 0 of 5 passed" in feedback
    untouched_feedback = (tmp_path / "feedback" / "untouched.txt").read_text()
    assert "Score: 0.00 of 4 points" in untouched_feedback
    assert re.search(r"the book's cases: 0 of 14 passed", untouched_feedback)
    assert "Score: 4.00 of 4 points" in (tmp_path / "feedback" / "solutions.txt").read_text()


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-m", "slow"]))


COLAB_RUN = """
import json, subprocess, sys, types

sys.modules["google.colab"] = types.ModuleType("google.colab")  # as Colab has it
installs = []
subprocess.run = lambda *a, **k: installs.append(a[0])  # no pip here
import __main__

notebook = json.load(open(sys.argv[1]))
shown = []
for cell in notebook["cells"]:
    if cell["cell_type"] != "code":
        continue
    source = "".join(cell["source"])
    if source.lstrip().startswith("grader.check("):
        shown.append(repr(eval(source, vars(__main__))))
    else:
        exec(source, vars(__main__))
assert any("pip" in call for call in installs), installs
print(json.dumps(shown))
"""


def test_the_student_notebook_runs_in_colab(built, tmp_path):
    """In Colab (google.colab imported, otter absent), the student notebook's cells run
    top to bottom: grader.check shows the checker's report, export says how to hand in."""
    solved = nbformat.read(built / "student" / "masked-softmax.ipynb", as_version=4)
    master = nbformat.read(built / "autograder" / "masked-softmax.ipynb", as_version=4)
    answers = {
        c.source.split("(")[0]: c.source
        for c in master.cells
        if c.cell_type == "code" and c.source.startswith("def ")
    }
    for cell in _answer_cells(solved):
        head = cell.source.split("(")[0]
        if head in answers:
            cell.source = answers[head]
    path = tmp_path / "colab.ipynb"
    nbformat.write(solved, path)
    script = tmp_path / "colab_run.py"
    script.write_text(COLAB_RUN)
    done = subprocess.run(
        [str(ROOT / ".venv" / "bin" / "python"), str(script), str(path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    *_, last = done.stdout.strip().splitlines()
    import json

    shown = json.loads(last)
    assert len(shown) == 2 and all("cases passed" in s for s in shown), shown
    assert "Download .ipynb" in done.stdout


def test_the_student_folder_says_how_to_install(built):
    readme = (built / "student" / "README.md").read_text()
    (wheel,) = (built / "student").glob("attnbook-*.whl")
    assert f"pip install ./{wheel.name} otter-grader==7.0.0" in readme
    assert "torch==2.13.0" in readme and "Download .ipynb" in readme
    assert "git+" not in readme  # nothing from a git host


# Concept questions (attnbook.quiz): the fixture that both test trees share
# (lib/tests/quiz_fixture.toml), as masked-softmax's file, given to the build through
# attnbook.quiz's loader (the chapters' own files are not needed). Two of its questions
# are built: the single-answer choice (its key is C, the file's order) and the numeric one.
CONCEPTS = (ROOT / "lib" / "tests" / "quiz_fixture.toml").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def concept_built(tmp_path_factory):
    """masked-softmax's assignment with only the fixture's concept questions."""
    from attnbook import quiz
    from attnbook.quiz import _data

    out = tmp_path_factory.mktemp("concepts")
    keys = "masked-softmax/variance-grows,masked-softmax/far-weight"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_data, "load", lambda chapter: quiz.parse(chapter, CONCEPTS))
        patch.setattr(_data, "chapters", lambda: ["masked-softmax"])
        patch.setattr(quiz, "load", _data.load)
        patch.setattr(quiz, "chapters", _data.chapters)
        args = ["--out", str(out), "--otter", str(OTTER_VENV / "otter"), "--seed", "5"]
        assert assignments.main([*args, "--exercises", keys, str(CHAPTER)]) == 0
    return out / "masked-softmax"


def test_concept_questions_are_graded_with_the_books_feedback(concept_built, tmp_path):
    """The solutions earn both points, the blank student notebook none; wrong answers
    earn nothing and the option's (or the wrong value's) feedback; a str whose ==
    always says yes earns nothing."""
    student = nbformat.read(concept_built / "student" / "masked-softmax.ipynb", as_version=4)
    text = "\n".join(c.source for c in student.cells)
    assert "- **C.** Each of the d products adds variance." in text
    assert 'answers["variance-grows"] = ...' in text and 'answers["far-weight"] = ...' in text
    assert 'answers["variance-grows"] = "C"' not in text
    solved = nbformat.read(concept_built / "autograder" / "masked-softmax.ipynb", as_version=4)
    assert 'answers["variance-grows"] = "C"' in "\n".join(c.source for c in solved.cells)
    nbformat.write(solved, tmp_path / "solutions.ipynb")
    nbformat.write(student, tmp_path / "untouched.ipynb")
    for name, one, two in [
        ("wrong", '"b"', "0.75"),
        ("lying", 'A("Z")', "A(2.0)"),
    ]:
        wrong = nbformat.read(concept_built / "student" / "masked-softmax.ipynb", as_version=4)
        for cell in wrong.cells:
            cell.source = cell.source.replace(
                '["variance-grows"] = ...', f'["variance-grows"] = {one}'
            )
            cell.source = cell.source.replace('["far-weight"] = ...', f'["far-weight"] = {two}')
        lie = "class A(str):\n    def __eq__(self, other):\n        return True\n\n    __hash__ = str.__hash__"
        if name == "lying":
            wrong.cells.insert(3, nbformat.v4.new_code_cell(lie))
        nbformat.write(wrong, tmp_path / f"{name}.ipynb")
    done = subprocess.run(
        [
            str(OTTER_VENV.resolve() / "python"),
            "-m",
            "tools.grade",
            "masked-softmax",
            str(tmp_path),
            "--assignments",
            str(concept_built.parent),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    with (tmp_path / "grades.csv").open() as f:
        rows = {row["submission"]: row for row in csv.DictReader(f)}
    assert [c for c in next(iter(rows.values())) if c.startswith("concept_")] == [
        "concept_variance_grows",
        "concept_far_weight",
    ]
    totals = {name: row["total"] for name, row in rows.items()}
    assert totals == {"solutions": "2.00", "untouched": "0.00", "wrong": "0.00", "lying": "0.00"}
    feedback = (tmp_path / "feedback" / "wrong.txt").read_text()
    assert "B: not right. The scale removes the growth." in feedback
    assert "Not quite. That is the other key's weight. Read the order of the scores again." in (
        feedback
    )
    assert "not answered yet" in (tmp_path / "feedback" / "untouched.txt").read_text()
