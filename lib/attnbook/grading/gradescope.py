"""Gradescope's ``run_autograder`` for the zips that ``make assignments`` builds.

    python -m attnbook.grading.gradescope [--root /autograder]

grades the one notebook of ``ROOT/submission`` (a ``.ipynb``, or the zip that the
notebook's export cell makes) with :mod:`attnbook.grading`: the notebook runs in
a worker process, the grade is computed here from the checkers' verdicts, and
the questions come from the zip's tests (``ROOT/source/tests/*.py``, read, never
run; :func:`.score.questions_from_folder`). ROOT is ``/autograder`` unless
``--root`` or the environment variable ``ATTNBOOK_AUTOGRADER`` says otherwise
(the slow test runs the zip in a folder of its own).

**Every path writes ``ROOT/results/results.json``**, and whenever the score is 0
its ``output`` says why: no notebook, more than one, a file that is not a
notebook, a notebook whose process cannot run, or a failure of the grading
itself, which it calls plainly an error of the grading and not a mark.

**Isolation.** Gradescope gives each submission a container of its own. Inside
it the notebook runs in bubblewrap when bubblewrap works there
(:func:`.sandbox.check`); Docker often forbids the user namespaces it needs, and
then the worker runs as the unprivileged account ``nobody``, with ``ROOT/source``
(the tests, the hidden seed) and ``ROOT/results`` made readable by root alone
(:func:`.sandbox.lock_away`). Which of the two ran is written for the teacher in
``extra_data`` and on standard output, neither of which students see. With
neither (no bubblewrap and not root) nothing is run: an error of the grading.

**The format** is Gradescope's, as documented in "Autograder Specifications",
section "Output format" (https://gradescope-autograders.readthedocs.io/en/latest/specs/):
top-level ``score``, ``execution_time`` (seconds), ``output``,
``output_format`` and ``test_output_format`` (``text``: nothing a student wrote
is rendered as HTML or Markdown), ``stdout_visibility`` and ``extra_data``
("extra data to be stored"); ``tests``, each with ``name``, ``number``,
``score``, ``max_score``, ``output`` and ``visibility``. Visibility takes the
documented values: ``hidden`` (never shown to students), ``after_due_date``,
``after_published`` (shown once the teacher publishes the grades) and
``visible`` (always). :func:`problems` checks a results dict against those
fields. What students see, per checked question:

- "QUESTION: the book's cases" (``visible``): its share of the points, and the
  checker's report of the first failing case, as ``grader.check`` shows it in
  the notebook;
- "QUESTION: fresh cases" (``after_published``): its share and how many passed,
  never their inputs or reports;
- for a concept question, "QUESTION: concept question KEY" (``visible``): its
  point or none, and the book's feedback on the answer given.

The specification says that while tests are hidden from students they cannot
see their total score: so the total shows once the grades are published.
Standard output (``stdout_visibility`` ``hidden``, instructors only) carries
the fresh cases' reports and the isolation used, for the teacher.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path

from . import sandbox, score
from .submission import notebook_in

ROOT_VARIABLE = "ATTNBOOK_AUTOGRADER"
DEFAULT_ROOT = Path("/autograder")
#: Gradescope's documented fields and visibility values ("Autograder Specifications").
TOP_FIELDS = {
    "score",
    "execution_time",
    "output",
    "output_format",
    "test_output_format",
    "test_name_format",
    "visibility",
    "stdout_visibility",
    "extra_data",
    "tests",
    "leaderboard",
}
TEST_FIELDS = {
    "score",
    "max_score",
    "status",
    "name",
    "name_format",
    "number",
    "output",
    "output_format",
    "tags",
    "visibility",
    "extra_data",
}
VISIBILITIES = {"hidden", "after_due_date", "after_published", "visible"}
FORMATS = {"text", "simple_format", "html", "md", "ansi"}
#: Seconds per question, as ``make grade``'s default.
QUESTION_TIMEOUT = 30.0
_GRADING_ERROR = (
    "This is an error of the grading, not a mark of your work: the score of 0 "
    "stands only until your teacher, who sees this message, looks into it."
)


def root_from(argument: str | None = None) -> Path:
    return Path(argument or os.environ.get(ROOT_VARIABLE) or DEFAULT_ROOT)


def isolation(check=sandbox.check, euid=os.geteuid) -> tuple[dict | None, str]:
    """How the worker runs here: ``grade_notebook``'s keyword arguments (None: it
    must not run at all) and a sentence for the teacher."""
    why = check()
    if why is None:
        return {"sandboxed": True}, "the notebook ran in bubblewrap (sandbox.check passed)"
    if euid() == 0:
        try:
            sandbox.account(sandbox.FALLBACK_USER)
        except (KeyError, ValueError) as err:
            return (
                None,
                f"bubblewrap cannot sandbox here ({why}) and no unprivileged account: {err}",
            )
        return {"sandboxed": False, "user": sandbox.FALLBACK_USER}, (
            f"bubblewrap cannot sandbox here ({why}); the notebook ran as the unprivileged "
            f"user {sandbox.FALLBACK_USER}, with the autograder's source and results folders "
            "readable by root alone; it had whatever network the container has"
        )
    return None, (
        f"bubblewrap cannot sandbox here ({why}) and the grader is not root, so it cannot "
        "run the notebook as another user: refusing to run it with the grader's rights"
    )


def _round(x: float) -> float:
    return round(float(x), 4)


def _points(x: float) -> str:
    return f"{x:.2f}"


def results_of(
    graded: score.Graded, questions: list[score.Question], note: str, seconds: float
) -> dict:
    """results.json of a graded notebook (the module docstring says what students see)."""
    import attnbook

    tests, teacher = [], [f"isolation: {note}"]
    total = sum(graded.scores.values())
    possible = sum(q.points for q in questions)
    for i, q in enumerate(questions, 1):
        counts = graded.counts.get(q.name, {})
        lines = graded.lines.get(q.name, [])
        if isinstance(q, score.Concept):  # one visible test: the answer and the book's feedback
            tests.append(
                {
                    "name": f"{q.name}: concept question {q.key}",
                    "number": f"{i}.1",
                    "score": _round(graded.scores.get(q.name, 0.0)),
                    "max_score": _round(q.points),
                    "output": "\n".join(lines),
                    "visibility": "visible",
                }
            )
            teacher += [f"{q.name}: {_points(graded.scores.get(q.name, 0))} of {_points(q.points)}"]
            continue
        (book, book_n), (fresh, fresh_n) = counts.get("book", (0, 0)), counts.get("fresh", (0, 0))
        cases = book_n + fresh_n
        share = q.points / cases if cases else 0.0
        failure = counts.get("failure")
        shown = [f"{book} of {book_n} of the book's cases passed."]
        if failure == "book":
            shown += lines[1:]
        elif book < book_n and failure is None:
            shown += lines  # no such function: the line says which name to define
        tests.append(
            {
                "name": f"{q.name}: the book's cases",
                "number": f"{i}.1",
                "score": _round(share * book),
                "max_score": _round(share * book_n),
                "output": "\n".join(shown),
                "visibility": "visible",
            }
        )
        tests.append(
            {
                "name": f"{q.name}: fresh cases",
                "number": f"{i}.2",
                "score": _round(share * fresh),
                "max_score": _round(share * fresh_n),
                "output": (
                    f"{fresh} of {fresh_n} cases on fresh inputs passed "
                    "(their inputs and reports are not shown)."
                ),
                "visibility": "after_published",
            }
        )
        teacher += [f"{q.name}: {_points(graded.scores.get(q.name, 0))} of {_points(q.points)}"]
        teacher += ["  " + line for line in lines]
    book_points = sum(t["score"] for t in tests if t["visibility"] == "visible")
    book_possible = sum(t["max_score"] for t in tests if t["visibility"] == "visible")
    # The total would give away the fresh cases' scores before they are published.
    summary = [
        f"The book's cases: {_points(book_points)} of {_points(book_possible)} points "
        f"(the checked questions are worth {_points(possible)} in all).",
        "Each question's score on the book's cases shows now; its score on fresh "
        "inputs, and your total, once your teacher publishes the grades. Written "
        "answers are graded by hand.",
    ]
    teacher.insert(0, f"total: {_points(total)} of {_points(possible)}")
    if graded.cell_errors:
        summary.append("Cells that raised an error when your notebook ran:")
        summary += ["  " + e for e in graded.cell_errors[:10]]
    return {
        "score": _round(total),
        "execution_time": round(seconds),
        "output": "\n".join(summary),
        "output_format": "text",
        "test_output_format": "text",
        "stdout_visibility": "hidden",
        "extra_data": {
            "attnbook": attnbook.__version__,
            "status": "graded",
            "isolation": note,
            "for_the_teacher": teacher,
        },
        "tests": tests,
    }


def zero(reason: str, *, grading_error: bool, note: str = "", seconds: float = 0.0) -> dict:
    """results.json of a submission that earns nothing: the reason, said plainly."""
    try:
        import attnbook

        version = attnbook.__version__
    except Exception:  # a broken install is exactly what this may be reporting
        version = "unknown"
    if grading_error:
        output = f"The grading failed: {reason}.\n{_GRADING_ERROR}"
    else:
        output = f"Score 0: {reason}."
    return {
        "score": 0.0,
        "execution_time": round(seconds),
        "output": output,
        "output_format": "text",
        "stdout_visibility": "hidden",
        "extra_data": {
            "attnbook": version,
            "status": "error" if grading_error else "not graded",
            "reason": reason,
            "isolation": note,
        },
        "tests": [],
    }


def problems(results: object) -> list[str]:
    """Where ``results`` departs from Gradescope's documented format (empty: none)."""
    found = []
    if not isinstance(results, dict):
        return ["results is not a JSON object"]
    try:
        json.dumps(results, allow_nan=False)
    except (TypeError, ValueError) as err:
        found.append(f"not JSON: {err}")
    found += [f"unknown top-level field {k!r}" for k in sorted(set(results) - TOP_FIELDS)]
    tests = results.get("tests", [])
    if not isinstance(tests, list):
        return [*found, "tests is not a list"]
    if "score" not in results and not all(isinstance(t, dict) and "score" in t for t in tests):
        found.append("no top-level score and a test without one")
    for key in ("score", "execution_time"):
        if key in results and not isinstance(results[key], (int, float)):
            found.append(f"{key} is not a number")
    for key in ("visibility", "stdout_visibility"):
        if key in results and results[key] not in VISIBILITIES:
            found.append(f"{key} {results[key]!r} is not one of {sorted(VISIBILITIES)}")
    for key in ("output_format", "test_output_format", "test_name_format"):
        if key in results and results[key] not in FORMATS:
            found.append(f"{key} {results[key]!r} is not one of {sorted(FORMATS)}")
    if "output" in results and not isinstance(results["output"], str):
        found.append("output is not a string")
    for i, test in enumerate(tests):
        if not isinstance(test, dict):
            found.append(f"test {i} is not an object")
            continue
        found += [f"test {i}: unknown field {k!r}" for k in sorted(set(test) - TEST_FIELDS)]
        for key in ("score", "max_score"):
            if key in test and not isinstance(test[key], (int, float)):
                found.append(f"test {i}: {key} is not a number")
        for key in ("name", "output", "number"):
            if key in test and not isinstance(test[key], str):
                found.append(f"test {i}: {key} is not a string")
        if "visibility" in test and test["visibility"] not in VISIBILITIES:
            found.append(f"test {i}: visibility {test['visibility']!r}")
        if "status" in test and test["status"] not in ("passed", "failed"):
            found.append(f"test {i}: status {test['status']!r}")
        score_, most = test.get("score"), test.get("max_score")
        numbers = isinstance(score_, (int, float)) and isinstance(most, (int, float))
        if numbers and not 0 <= score_ <= most:
            found.append(f"test {i}: score {score_} outside 0..{most}")
    return found


def grade(root: Path, *, timeout: float, question_timeout: float) -> dict:
    """results.json for the submission under ``root`` (raises only on a bug here)."""
    started = time.monotonic()
    source, submission = root / "source", root / "submission"
    try:
        questions = score.questions_from_folder(source / "tests")
    except (OSError, ValueError, SyntaxError) as err:
        return zero(f"the autograder's tests cannot be read: {err}", grading_error=True)
    if not questions:
        return zero("the autograder holds no checked question", grading_error=True)
    with tempfile.TemporaryDirectory(prefix="attnbook-gradescope-") as scratch:
        notebook, why = notebook_in(submission, Path(scratch))
        if notebook is None:
            return zero(why, grading_error=False)
        options, note = isolation()
        if options is None:
            return zero(note, grading_error=True, note=note)
        if options.get("user"):
            sandbox.lock_away(source, root / "results", root / "submission_metadata.json")
        graded = score.grade_notebook(
            notebook,
            questions,
            timeout=timeout,
            question_timeout=question_timeout,
            **options,
        )
    seconds = time.monotonic() - started
    if graded.status != "graded":
        return zero(
            f"your notebook could not be graded: {graded.reason}",
            grading_error=True,
            note=note,
            seconds=seconds,
        )
    return results_of(graded, questions, note, seconds)


def write(results: dict, root: Path) -> Path:
    folder = root / "results"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "results.json"
    path.write_text(json.dumps(results, indent=1, allow_nan=False) + "\n", encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=None, help=f"default: ${ROOT_VARIABLE} or /autograder")
    parser.add_argument("--timeout", type=float, default=score.TIMEOUT)
    parser.add_argument("--question-timeout", type=float, default=QUESTION_TIMEOUT)
    args = parser.parse_args(argv)
    root = root_from(args.root)
    try:
        results = grade(root, timeout=args.timeout, question_timeout=args.question_timeout)
    except BaseException as err:  # a bug of the grader: still a results.json, and why
        traceback.print_exc()
        results = zero(
            f"the autograder itself failed ({type(err).__name__}: {str(err)[:300]})",
            grading_error=True,
        )
    found = problems(results)
    if found:
        results = zero(
            "the autograder wrote malformed results: " + "; ".join(found), grading_error=True
        )
    path = write(results, root)
    print(f"results.json written to {path}: score {results['score']}")
    print(results["output"])
    extra = results.get("extra_data", {})
    for line in extra.get("for_the_teacher") or [extra.get("isolation", "")]:
        if line:
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
