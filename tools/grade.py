"""Grade a folder of submissions against an assignment, offline and without Docker.

    python -m tools.grade NAME DIR [--timeout SECONDS] [--question-timeout SECONDS]
        (make grade ASSIGNMENT=NAME SUBMISSIONS=DIR [TIMEOUT=...] [QUESTION_TIMEOUT=...])

NAME is an assignment built by `make assignments` (_build/assignments/NAME/).
Every file in DIR is a submission: a notebook, or the zip that the student
notebook's export cell makes. Each one is graded by ``otter run`` with the
assignment's autograder zip, in a process of its own, under a time limit.
The result is

- ``DIR/grades.csv``: ``submission``, one column per question (written
  questions are left empty: they are graded by hand), ``total`` and
  ``possible`` (the points of the checked questions);
- ``DIR/feedback/SUBMISSION.txt``: the score of each question and, where a
  case failed, the checker's report with its diagnosis.

A submission that raises gets zero for what its errors break; one that lacks
an answer's function gets zero for that question, with a line naming the
function; one whose function runs past the time limit per question
(``--question-timeout``, by default attnbook's 30 s; passed to the checkers as
``ATTNBOOK_QUESTION_TIMEOUT``) gets zero for that question, with a line saying
on which case, and the other questions are graded; one that runs past the time
limit per submission (``--timeout``), or that is not a notebook, gets zero,
with a line saying why; grading goes on with the next. This runs the
students' code with your rights: run it in a throwaway container or account.
Runs in .venv-otter (otter-grader is needed to read its results).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
ASSIGNMENTS = ROOT / "_build" / "assignments"
TIMEOUT = 120  # seconds per submission
# The variable that sets attnbook.checks.report_for's time limit per question.
QUESTION_TIMEOUT_VARIABLE = "ATTNBOOK_QUESTION_TIMEOUT"


@dataclass
class Graded:
    """One submission's outcome: points per checked question, and what to tell."""

    name: str
    scores: dict[str, float] = field(default_factory=dict)
    lines: dict[str, list[str]] = field(default_factory=dict)  # question -> feedback lines
    problem: str | None = None  # why the whole submission got zero
    seconds: float = 0.0
    cpu: float = 0.0  # CPU seconds of the grading process and its children


def autograder(folder: Path) -> Path:
    zips = sorted((folder / "autograder").glob("*.zip"))
    if len(zips) != 1:
        raise SystemExit(
            f"{folder}: expected one autograder zip, found {len(zips)}; run make assignments"
        )
    return zips[0]


def not_a_notebook(path: Path) -> str | None:
    """Why ``path`` cannot be graded, or None when it is a notebook or a zip holding one."""
    if path.suffix == ".ipynb":
        try:
            nbformat.validate(nbformat.read(path, as_version=4))
        except Exception as err:  # any unreadable file: JSON, schema, encoding
            return f"not a notebook: {path.name} cannot be read as one ({type(err).__name__})"
        return None
    if path.suffix == ".zip":
        try:
            with zipfile.ZipFile(path) as archive:
                names = archive.namelist()
        except zipfile.BadZipFile:
            return f"not a notebook: {path.name} is not a zip file"
        if not any(n.endswith(".ipynb") for n in names):
            return f"not a notebook: the zip {path.name} holds no .ipynb"
        return None
    return f"not a notebook: {path.name} is neither a .ipynb nor an exported .zip"


def run_otter(
    zip_path: Path,
    submission: Path,
    timeout: float,
    otter: Path | None = None,
    question_timeout: float | None = None,
) -> tuple[object | None, str | None]:
    """otter run on one submission in a process group of its own: (results, problem).
    ``otter`` is the command, by default the one beside this Python.
    ``question_timeout``, when given, is the checkers' time limit per question
    (seconds, in the environment of otter and of the kernel it starts)."""
    otter = otter or Path(sys.executable).parent / "otter"
    env = dict(os.environ)
    if question_timeout is not None:
        env[QUESTION_TIMEOUT_VARIABLE] = f"{question_timeout:g}"
    with tempfile.TemporaryDirectory() as out:
        process = subprocess.Popen(
            [
                str(otter),
                "run",
                "--no-logo",
                "-p",
                "-a",
                str(zip_path.resolve()),
                "-o",
                out,
                str(submission.resolve()),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            cwd=out,  # otter writes its results.pkl (a dill pickle) where it runs
            start_new_session=True,
            env=env,
        )
        try:
            output, _ = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            return None, f"ran past the time limit of {timeout:g} s (an endless loop?)"
        pickled = Path(out) / "results.pkl"
        if process.returncode != 0 or not pickled.exists():
            last = [line for line in output.splitlines() if line.strip()][-1:] or ["no output"]
            return None, f"otter could not grade it (exit {process.returncode}): {last[0].strip()}"
        import dill  # otter's pickle of its GradingResults

        with pickled.open("rb") as f:
            return dill.load(f), None


def _message(result) -> str:
    """A failing test's message: the checker's words, without otter's framing
    (the test's name, its failing line, the exception's type)."""
    text = result.message or ""
    if "AssertionError:" in text:
        text = text.split("AssertionError:", 1)[1]
    return textwrap.dedent("\n".join(line for line in text.splitlines() if line.strip()))


def question_lines(result) -> tuple[float, list[str]]:
    """A question's score and its feedback: cases passed, then the report of the
    first failing case (the book's cases first, then the fresh ones)."""
    cases = result.test_case_results
    public = [c for c in cases if not c.test_case.hidden]
    hidden = [c for c in cases if c.test_case.hidden]
    lines = [
        f"the book's cases: {sum(c.passed for c in public)} of {len(public)} passed; "
        f"fresh cases: {sum(c.passed for c in hidden)} of {len(hidden)} passed"
    ]
    failing = [c for c in public if not c.passed] or [c for c in hidden if not c.passed]
    if failing:
        where = "the book's cases" if not failing[0].test_case.hidden else "fresh cases"
        lines.append(f"first failure ({where}):")
        lines += ["  " + line for line in _message(failing[0]).splitlines() if line.strip()]
    return float(result.score), lines


def grade_one(
    path: Path,
    zip_path: Path,
    checked: list[str],
    timeout: float,
    question_timeout: float | None = None,
) -> Graded:
    graded = Graded(name=path.stem if path.suffix in (".ipynb", ".zip") else path.name)
    started = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    graded.problem = not_a_notebook(path)
    if graded.problem is None:
        results, graded.problem = run_otter(
            zip_path, path, timeout, question_timeout=question_timeout
        )
        if results is not None:
            for question in checked:
                result = results.results.get(question)
                if result is None:
                    graded.scores[question] = 0.0
                    graded.lines[question] = ["no result: the grader did not reach this question"]
                else:
                    graded.scores[question], graded.lines[question] = question_lines(result)
    if graded.problem is not None:
        graded.scores = dict.fromkeys(checked, 0.0)
    graded.seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    graded.cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return graded


def feedback(assignment: str, graded: Graded, questions: list[dict]) -> str:
    possible = sum(q["points"] for q in questions if q["checked"])
    written = [q for q in questions if not q["checked"]]
    total = sum(graded.scores.values())
    out = [f"Assignment {assignment}, submission {graded.name}", ""]
    out.append(f"Score: {total:.2f} of {possible} points for the checked questions")
    if written:
        points = sum(q["points"] for q in written)
        out.append(f"({len(written)} written questions, {points} points, are graded by hand)")
    if graded.problem:
        out += ["", f"Graded zero: {graded.problem}"]
    for q in questions:
        out.append("")
        if not q["checked"]:
            out.append(f"{q['name']} (exercise {q['exercise']}): written, graded by hand")
            continue
        score = graded.scores.get(q["name"], 0.0)
        out.append(f"{q['name']} (exercise {q['exercise']}): {score:.2f} of {q['points']}")
        out += ["  " + line for line in graded.lines.get(q["name"], [])]
    return "\n".join(out) + "\n"


def submissions(folder: Path) -> list[Path]:
    return sorted(
        p
        for p in folder.iterdir()
        if p.is_file() and not p.name.startswith(".") and p.name != "grades.csv"
    )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("assignment")
    parser.add_argument("submissions", type=Path)
    parser.add_argument("--timeout", type=float, default=TIMEOUT, help="seconds per submission")
    parser.add_argument(
        "--question-timeout",
        type=float,
        default=None,
        help="seconds per question (default: attnbook's, 30)",
    )
    parser.add_argument("--assignments", type=Path, default=ASSIGNMENTS)
    args = parser.parse_args(argv)
    if not args.timeout > 0:
        raise SystemExit(f"--timeout must be positive, got {args.timeout}")
    if args.question_timeout is not None and not 0 < args.question_timeout < args.timeout:
        raise SystemExit(
            f"--question-timeout must be positive and below --timeout ({args.timeout:g}), "
            f"got {args.question_timeout:g}"
        )
    folder = args.assignments / args.assignment
    if not (folder / "questions.json").exists():
        raise SystemExit(
            f"no assignment {args.assignment!r} in {args.assignments}: run make assignments"
        )
    if not args.submissions.is_dir():
        raise SystemExit(f"SUBMISSIONS must be a folder, got {str(args.submissions)!r}")
    questions = json.loads((folder / "questions.json").read_text())
    checked = [q["name"] for q in questions if q["checked"]]
    zip_path = autograder(folder)
    (args.submissions / "feedback").mkdir(exist_ok=True)
    rows = []
    for path in submissions(args.submissions):
        graded = grade_one(path, zip_path, checked, args.timeout, args.question_timeout)
        text = feedback(args.assignment, graded, questions)
        (args.submissions / "feedback" / f"{graded.name}.txt").write_text(text)
        row = {"submission": graded.name}
        for q in questions:
            row[q["name"]] = f"{graded.scores[q['name']]:.2f}" if q["checked"] else ""
        row["total"] = f"{sum(graded.scores.values()):.2f}"
        row["possible"] = str(sum(q["points"] for q in questions if q["checked"]))
        rows.append(row)
        note = f" ({graded.problem})" if graded.problem else ""
        print(
            f"{graded.name}: {row['total']} of {row['possible']} in {graded.seconds:.1f} s ({graded.cpu:.1f} s of CPU){note}"
        )
    with (args.submissions / "grades.csv").open("w", newline="") as f:
        writer = csv.DictWriter(
            f, fieldnames=["submission", *[q["name"] for q in questions], "total", "possible"]
        )
        writer.writeheader()
        writer.writerows(rows)
    print(f"{len(rows)} submissions: {args.submissions / 'grades.csv'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
