"""Grade a folder of submissions against an assignment, offline and without Docker.

    python -m tools.grade ASSIGNMENT DIR [--timeout S] [--question-timeout S]
                          [--only NAME,NAME] [--unsandboxed]
        (make grade ASSIGNMENT=NAME|PATH SUBMISSIONS=DIR [TIMEOUT= QUESTION_TIMEOUT=
                    ONLY= UNSANDBOXED=1])

ASSIGNMENT is an assignment built by ``make assignments``: its name (the folder
_build/assignments/NAME/) or the path of such a folder, wherever the teacher
keeps it. DIR is the submissions, as a plain folder of notebooks or exported
zips, or as Moodle's or Canvas's download (tools/lms.py reads each layout and
says which files it could not match; two files of one student are refused).

**Where the grade is decided.** Each submission's notebook runs in a worker
process of its own, inside bubblewrap (attnbook.grading.sandbox): a scratch
folder with a copy of the notebook is all it can read or write, beside what
Python needs; no other submission, no autograder, no solutions, no network,
limits on memory and time. This process runs the checkers and asks the
worker's functions for their answers, which come back as data
(attnbook.grading): nothing a student wrote runs here, so no patch of the
checkers, of torch or of the report from a notebook changes a grade. What
otter's ``grader.check`` shows a student in their own notebook is advice only.

Without bubblewrap (``apt-get install bubblewrap``), or where it cannot start a
sandbox, grading stops: ``--unsandboxed`` (``UNSANDBOXED=1``) grades anyway,
the verdict still outside the students' processes, but each notebook then runs
with your rights and can read and write what you can.

**What to grade.** The checked questions, their points, checkers, answer
functions, cases and the hidden seed, and the concept questions (their key and
the book's feedback, attnbook.grading.concepts), are read from the autograder zip's tests
(attnbook.grading.score.questions_from_zip), so an edited master rebuilt with
``otter assign`` is graded as it stands; questions.json adds the written
questions (graded by hand), and a disagreement between the two is named.

**What comes out.**

- ``DIR/grades.csv``: ``submission``, ``status`` (``graded``, or ``error:
  REASON``), one column per question (written ones empty), ``total`` and
  ``possible`` (the checked questions' points). An error is never a zero: its
  marks are empty.
- ``DIR/feedback/NAME.txt``: the score of each question and, where a case
  failed, the checker's report with its diagnosis.
- A summary; the exit status is 1 when a submission errored (2 when nothing
  could be graded at all).

``--only`` re-grades the submissions named and keeps the other rows of an
earlier grades.csv. A question whose function runs past ``--question-timeout``
(by default attnbook's 30 s) gets zero for that question alone; a submission
past ``--timeout`` (120 s) is an error. Runs in .venv-otter, where attnbook is
installed as the autograder installs it.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import tempfile
from pathlib import Path

from tools import lms

ROOT = Path(__file__).resolve().parent.parent
ASSIGNMENTS = ROOT / "_build" / "assignments"
TIMEOUT = 120.0  # seconds per submission


def assignment_folder(assignment: str, assignments: Path = ASSIGNMENTS) -> Path:
    """The assignment's folder: a name under ``assignments``, or a path."""
    path = Path(assignment)
    if (path / "autograder").is_dir():
        return path
    folder = assignments / assignment
    if (folder / "autograder").is_dir():
        return folder
    raise SystemExit(
        f"no assignment {assignment!r}: neither a folder with autograder/ nor a name in "
        f"{assignments} (run make assignments)"
    )


def autograder(folder: Path) -> Path:
    zips = sorted((folder / "autograder").glob("*.zip"))
    if len(zips) != 1:
        raise SystemExit(
            f"{folder}: expected one autograder zip, found {len(zips)}; run make assignments"
        )
    return zips[0]


def questions(folder: Path, zip_path: Path) -> tuple[list[dict], list, list[str]]:
    """The assignment's questions (for the columns and the feedback), the checked ones
    as the zip's tests grade them, and any disagreement with questions.json."""
    from attnbook.grading.score import Concept, questions_from_zip

    checked = questions_from_zip(zip_path)
    listed = []
    if (folder / "questions.json").exists():
        listed = json.loads((folder / "questions.json").read_text())
    notes = []
    by_name = {q.name: q for q in checked}
    for q in listed:
        if q["checked"] and q["name"] not in by_name:
            notes.append(f"questions.json lists {q['name']}, which the autograder does not test")
        elif q["checked"] and float(q["points"]) != by_name[q["name"]].points:
            notes.append(
                f"questions.json gives {q['name']} {q['points']} points, the autograder "
                f"{by_name[q['name']].points:g}: the autograder's are used"
            )
    columns = [
        {
            "name": q.name,
            "exercise": next((x["exercise"] for x in listed if x["name"] == q.name), q.name),
            "points": q.points,
            "checked": True,
            "concept": isinstance(q, Concept),
        }
        for q in checked
    ]
    written = [q for q in listed if not q["checked"]]
    # The master's order: questions.json's, with any question it lacks at the end.
    order = {q["name"]: i for i, q in enumerate(listed)}
    all_questions = sorted(columns + written, key=lambda q: order.get(q["name"], len(order)))
    return all_questions, checked, notes


def _points(value: float) -> str:
    return f"{value:g}"


def feedback(assignment: str, graded, all_questions: list[dict]) -> str:
    possible = sum(q["points"] for q in all_questions if q["checked"])
    written = [q for q in all_questions if not q["checked"]]
    out = [f"Assignment {assignment}, submission {graded.name}", ""]
    if graded.status != "graded":
        out += [
            f"Not graded: {graded.reason}.",
            "This is an error of the grading, not a score: the teacher will look at it.",
        ]
        return "\n".join(out) + "\n"
    total = sum(graded.scores.values())
    out.append(f"Score: {total:.2f} of {_points(possible)} points for the checked questions")
    if written:
        points = sum(q["points"] for q in written)
        out.append(
            f"({len(written)} written questions, {_points(points)} points, are graded by hand)"
        )
    if graded.cell_errors:
        out += ["", "Cells that raised an error when the notebook was run from the top:"]
        out += ["  " + e for e in graded.cell_errors]
    for q in all_questions:
        out.append("")
        if not q["checked"]:
            out.append(f"{q['name']} (exercise {q['exercise']}): written, graded by hand")
            continue
        score = graded.scores.get(q["name"], 0.0)
        what = "concept question" if q.get("concept") else "exercise"
        out.append(f"{q['name']} ({what} {q['exercise']}): {score:.2f} of {_points(q['points'])}")
        out += ["  " + line for line in graded.lines.get(q["name"], [])]
    return "\n".join(out) + "\n"


def row_of(graded, all_questions: list[dict]) -> dict:
    row = {"submission": graded.name, "status": "graded"}
    if graded.status != "graded":
        row["status"] = f"error: {graded.reason}"
    for q in all_questions:
        ok = q["checked"] and graded.status == "graded"
        row[q["name"]] = f"{graded.scores.get(q['name'], 0.0):.2f}" if ok else ""
    row["total"] = f"{sum(graded.scores.values()):.2f}" if graded.status == "graded" else ""
    row["possible"] = _points(sum(q["points"] for q in all_questions if q["checked"]))
    return row


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("assignment", help="a name under _build/assignments, or a folder")
    parser.add_argument("submissions", type=Path)
    parser.add_argument("--timeout", type=float, default=TIMEOUT, help="seconds per submission")
    parser.add_argument(
        "--question-timeout", type=float, default=None, help="seconds per question (default 30)"
    )
    parser.add_argument("--only", default="", help="re-grade these submissions (comma-separated)")
    parser.add_argument(
        "--unsandboxed",
        action="store_true",
        help="grade without bubblewrap: each notebook runs with your rights",
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
    folder = assignment_folder(args.assignment, args.assignments)
    if not args.submissions.is_dir():
        raise SystemExit(f"SUBMISSIONS must be a folder, got {str(args.submissions)!r}")
    from attnbook.grading import sandbox
    from attnbook.grading.score import Graded, grade_notebook
    from attnbook.grading.submission import notebook_from

    if not args.unsandboxed:
        why = sandbox.check()
        if why is not None:
            print(
                f"cannot sandbox the submissions: {why}.\nInstall bubblewrap, or pass "
                "UNSANDBOXED=1 (--unsandboxed) to run each notebook with your own rights.",
                file=sys.stderr,
            )
            return 2
    else:
        print("warning: grading without a sandbox: each notebook runs with your rights")
    zip_path = autograder(folder)
    all_questions, checked, notes = questions(folder, zip_path)
    for note in notes:
        print(f"note: {note}")
    found, problems = lms.collect(args.submissions)
    for problem in problems:
        print(f"not graded: {problem}")
    only = {n.strip() for n in args.only.split(",") if n.strip()}
    unknown = only - {f.name for f in found}
    if unknown:
        raise SystemExit(f"--only: no submission named {sorted(unknown)}")
    grades_csv = args.submissions / "grades.csv"
    fields = ["submission", "status", *[q["name"] for q in all_questions], "total", "possible"]
    rows: dict[str, dict] = {}
    if only and grades_csv.exists():
        with grades_csv.open(newline="") as f:
            rows = {r["submission"]: r for r in csv.DictReader(f)}
    (args.submissions / "feedback").mkdir(exist_ok=True)
    for submission in found:
        if only and submission.name not in only:
            continue
        with tempfile.TemporaryDirectory() as scratch:
            notebook, problem = notebook_from(submission.path, Path(scratch))
            if notebook is None:
                graded = Graded(submission.name, status="error", reason=problem)
            else:
                graded = grade_notebook(
                    notebook,
                    checked,
                    name=submission.name,
                    sandboxed=not args.unsandboxed,
                    timeout=args.timeout,
                    question_timeout=args.question_timeout,
                )
        text = feedback(folder.name, graded, all_questions)
        (args.submissions / "feedback" / f"{graded.name}.txt").write_text(text)
        rows[graded.name] = row_of(graded, all_questions)
        if graded.status == "graded":
            line = f"{rows[graded.name]['total']} of {rows[graded.name]['possible']}"
        else:
            line = f"ERROR ({graded.reason})"
        print(f"{graded.name}: {line} in {graded.seconds:.1f} s", flush=True)
    with grades_csv.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore", restval="")
        writer.writeheader()
        writer.writerows(rows[name] for name in sorted(rows))
    graded_count = sum(1 for r in rows.values() if r["status"] == "graded")
    print(
        f"{len(rows)} submissions in {grades_csv}: {graded_count} graded, "
        f"{len(rows) - graded_count} errors, {len(problems)} files not matched"
    )
    errors = sorted(name for name, r in rows.items() if r["status"] != "graded")
    if errors:
        print(f"errors (not zeros; see feedback/): {', '.join(errors)}; re-grade them with ONLY=")
    if not found:
        return 2
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
