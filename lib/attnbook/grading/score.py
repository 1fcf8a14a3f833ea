"""A submission's grade, computed where no student code runs.

:func:`questions_from_zip` reads what to grade from the autograder zip that
``make assignments`` builds (its ``tests/*.py``, parsed, never run): each
checked question's points, checker, answer function, number of cases, and the
seeds of its cases (0, the book's; the hidden seed, drawn per build); each
concept question's points, key and its judging data (:mod:`.concepts`). So an
edited master rebuilt with ``otter assign`` is graded as it now stands.

:func:`grade_notebook` runs the notebook in a worker (:mod:`.remote`), asks each
checker about the worker's functions under each seed, and returns a
:class:`Graded`: points per question (a question's points shared evenly among
its cases, as in the autograder's tests; a concept question's points for the
right answer, fetched from the worker as data and judged here), the feedback
lines, and a status,
``graded`` or ``error`` with the reason. An error is the grading's failure (the
notebook's process cannot start, the submission ran past its time limit, the
autograder does not match this attnbook): the grader reports it, never a zero.
"""

from __future__ import annotations

import ast
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from . import concepts, remote
from .concepts import ANSWERS

#: Seconds per submission, all questions together.
TIMEOUT = 120.0


@dataclass
class Question:
    name: str
    points: float
    check: str
    answer: str
    cases: dict[int, int]  # seed -> how many cases of that seed the tests hold


@dataclass
class Concept:
    """A concept question of the assignment (:mod:`.concepts`)."""

    name: str
    points: float
    key: str  # "chapter/id"; the student's answer is answers["id"]
    data: dict  # concepts.spec(question), as the test embeds it

    @property
    def id(self) -> str:
        return self.key.split("/", 1)[1]


@dataclass
class Graded:
    """One submission's outcome."""

    name: str
    status: str = "graded"  # or "error"
    reason: str = ""
    scores: dict[str, float] = field(default_factory=dict)
    lines: dict[str, list[str]] = field(default_factory=dict)
    cell_errors: list[str] = field(default_factory=list)
    seconds: float = 0.0
    # question -> {"book": (passed, cases), "fresh": (passed, cases), "failure":
    # "book", "fresh" or None (where the first failure shown in its lines is)}
    counts: dict[str, dict] = field(default_factory=dict)


def _literal(node: ast.AST):
    try:
        return ast.literal_eval(node)
    except ValueError:
        return None


def _concept(tree: ast.AST, name, points, filename: str) -> Concept | None:
    """The concept question a test file judges (a ``concept_verdict(key, answers, data)``
    call), if any."""
    calls = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "concept_verdict"
    ]
    if not calls:
        return None
    if len(calls) != 1 or len(calls[0].args) != 3:
        raise ValueError(f"{filename}: one concept_verdict(key, answers, data) call expected")
    key, data = _literal(calls[0].args[0]), _literal(calls[0].args[2])
    if not isinstance(key, str) or key.count("/") != 1 or not isinstance(data, dict):
        raise ValueError(f"{filename}: concept_verdict without its key and data")
    if data.get("key") != key:
        raise ValueError(f"{filename}: the concept question's data is not {key}'s")
    problem = concepts.problem(data)
    if problem:
        raise ValueError(f"{filename}: the data of {key}: {problem}")
    if not isinstance(name, str) or not isinstance(points, (int, float)):
        raise ValueError(f"{filename}: not a test file of make assignments (no name or points)")
    return Concept(name, float(points), key, data)


def question_from_test(source: str, filename: str = "test") -> Question | Concept:
    """The question an otter test file of ``make assignments`` grades (read, not run)."""
    tree = ast.parse(source, filename)
    name = points = check = answer = None
    cases: dict[int, set[int]] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name) and target.id == "name":
                name = _literal(node.value)
            if isinstance(target, ast.Name) and target.id == "points":
                points = _literal(node.value)
    concept = _concept(tree, name, points, filename)
    if concept is not None:
        return concept
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "case_verdict"):
            continue
        keywords = {k.arg: _literal(k.value) for k in node.keywords}
        positional = [_literal(a) for a in node.args]
        if len(positional) < 3 or not isinstance(positional[0], str):
            raise ValueError(f"{filename}: a case_verdict call without checker and case")
        if check not in (None, positional[0]) or answer not in (None, keywords.get("answer")):
            raise ValueError(f"{filename}: tests of more than one checker or answer")
        check, answer = positional[0], keywords.get("answer")
        seed = keywords.get("seed", 0)
        cases.setdefault(seed, set()).add(positional[2])
    if not isinstance(name, str) or not isinstance(points, (int, float)) or check is None:
        raise ValueError(
            f"{filename}: not a test file of make assignments (no name, points or case)"
        )
    if not isinstance(answer, str) or not answer.isidentifier():
        raise ValueError(f"{filename}: the answer's name is missing")
    for seed, found in cases.items():
        if found != set(range(len(found))):
            raise ValueError(f"{filename}: the cases of seed {seed} are not 0..{len(found) - 1}")
    return Question(
        name, float(points), check, answer, {s: len(c) for s, c in sorted(cases.items())}
    )


def questions_from_zip(path: Path) -> list[Question | Concept]:
    """The checked questions and concept questions the autograder zip's tests grade."""
    with zipfile.ZipFile(path) as archive:
        names = sorted(
            n for n in archive.namelist() if n.startswith("tests/") and n.endswith(".py")
        )
        return [
            question_from_test(archive.read(n).decode("utf-8"), f"{path.name}:{n}") for n in names
        ]


def questions_from_folder(tests: Path) -> list[Question | Concept]:
    """The checked and concept questions of an unpacked autograder zip's ``tests/`` folder
    (on Gradescope, ``/autograder/source/tests``)."""
    return [
        question_from_test(path.read_text(encoding="utf-8"), f"tests/{path.name}")
        for path in sorted(Path(tests).glob("*.py"))
    ]


def hidden_seeds(questions: list[Question | Concept]) -> set[int]:
    return {s for q in questions if isinstance(q, Question) for s in q.cases if s != 0}


def _passed(report) -> int:
    return sum(line.lstrip().startswith("ok") for line in report.lines)


def grade_question(
    question: Question, fn, question_timeout: float | None, counts: dict | None = None
) -> tuple[float, list[str]]:
    """A question's points and feedback, its checker run on the proxy under each seed;
    ``counts``, when given, receives the cases passed of each half (see Graded.counts)."""
    from attnbook.checks import report_for

    counts = {} if counts is None else counts
    book = question.cases.get(0, 0)
    fresh = sum(n for s, n in question.cases.items() if s != 0)
    counts.update(book=(0, book), fresh=(0, fresh), failure=None)
    if fn is None:
        return 0.0, [
            f"no function {question.answer} found: define {question.answer}(...) in its cell"
        ]
    reports = {}
    for seed, count in question.cases.items():
        report = report_for(question.check, fn, seed, timeout=question_timeout)
        if len(report.lines) != count:
            raise remote.GradingError(
                f"the autograder expects {count} cases of {question.check} but this attnbook's "
                f"checker runs {len(report.lines)}: build the assignment with this attnbook"
            )
        reports[seed] = report
    passed = sum(_passed(r) for r in reports.values())
    total = sum(question.cases.values())
    public = reports.get(0)
    hidden = [r for s, r in reports.items() if s != 0]
    parts = []
    if public is not None:
        parts.append(f"the book's cases: {_passed(public)} of {len(public.lines)} passed")
    if hidden:
        parts.append(
            f"fresh cases: {sum(_passed(r) for r in hidden)} of {sum(len(r.lines) for r in hidden)} passed"
        )
    lines = ["; ".join(parts)]
    counts["book"] = (_passed(public) if public is not None else 0, book)
    counts["fresh"] = (sum(_passed(r) for r in hidden), fresh)
    failing = next((r for r in [public, *hidden] if r is not None and not r.passed), None)
    if failing is not None:
        counts["failure"] = "book" if failing is public else "fresh"
        where = "the book's cases" if failing is public else "fresh cases"
        lines.append(f"first failure ({where}):")
        lines += ["  " + line for line in repr(failing).splitlines() if line.strip()]
    return question.points * passed / total if total else 0.0, lines


def grade_concept(
    question: Concept, replies: dict, why: str, counts: dict
) -> tuple[float, list[str]]:
    """A concept question's points and the book's feedback, judged here on the answer
    the worker sent as data (``replies``: id -> value; ``why``: no answers dict)."""
    if why:
        right, lines = False, [f"not answered: {why}; answer in the cells that set {ANSWERS}[...]"]
    else:
        right, lines = concepts.judge(question.data, replies.get(question.id))
    counts.update(book=(int(right), 1), fresh=(0, 0), failure=None if right else "book")
    return (question.points if right else 0.0), lines


def grade_notebook(
    notebook: Path,
    questions: list[Question | Concept],
    *,
    name: str | None = None,
    sandboxed: bool = True,
    timeout: float = TIMEOUT,
    question_timeout: float | None = None,
    user: str | None = None,
) -> Graded:
    """Grade one notebook (see the module docstring). The notebook runs in a worker;
    this process only compares the worker's answers with the checkers' references.
    ``user``: run the worker as that account (see :class:`.remote.Submission`)."""
    graded = Graded(name=name or Path(notebook).stem)
    started = time.monotonic()
    submission = remote.Submission(
        Path(notebook), sandboxed=sandboxed, deadline=started + timeout, user=user
    )
    try:
        submission.start()
        graded.cell_errors = submission.cell_errors
        concepts = [q for q in questions if isinstance(q, Concept)]
        if concepts:
            replies, why = submission.values(ANSWERS, [q.id for q in concepts])
        for question in questions:
            if isinstance(question, Concept):
                graded.scores[question.name], graded.lines[question.name] = grade_concept(
                    question, replies, why, graded.counts.setdefault(question.name, {})
                )
                continue
            fn = submission.function(question.answer)
            counts = graded.counts.setdefault(question.name, {})
            graded.scores[question.name], graded.lines[question.name] = grade_question(
                question, fn, question_timeout, counts
            )
    except remote.GradingError as err:
        graded.status, graded.reason = "error", str(err)
        graded.scores, graded.counts = {}, {}
    finally:
        submission.stop()
        graded.seconds = time.monotonic() - started
    return graded
