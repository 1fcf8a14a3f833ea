"""otter's ``grader`` in Colab, where otter-grader cannot run an assignment's notebook.

otter 7 looks for its tests in a folder beside the notebook, which Colab does
not have, so in Colab an assignment's ``grader.check("question")`` cells would
fail. ``make assignments`` therefore writes the student notebook's first cell so
that, in Colab only, it installs attnbook and makes ``grader`` a
:class:`Notebook` of this module instead: ``grader.check("question")`` runs the
question's checker on the student's function with the book's cases (the same
report as the public tests otter shows elsewhere; for a concept question, the
book's feedback on the answer), and ``grader.export()`` says
how to hand the notebook in (File, Download, Download .ipynb; ``make grade``
takes the notebook as it is). Outside Colab the cell starts otter as before.

The report is advice, as otter's public tests are: the grade is decided by the
teacher's grader (:mod:`attnbook.grading`), on the book's cases and on fresh
ones.
"""

from __future__ import annotations

from collections.abc import Callable

from attnbook.checks import report_for

from .concepts import ANSWERS

#: The "checker" of a concept question in :class:`Notebook`'s table.
CONCEPT = "concept"

HAND_IN = (
    "To hand in this notebook from Colab: save it (File, Save), then download it "
    "(File, Download, Download .ipynb) and hand in the .ipynb file you downloaded."
)


class Missing:
    """What ``check`` shows when the answer's function is not defined yet."""

    def __init__(self, question: str, answer: str):
        self.question, self.answer = question, answer

    def __repr__(self) -> str:
        return (
            f"{self.question}: no function {self.answer} yet: write {self.answer}(...) in the "
            "answer cell above and run that cell, then this one"
        )


class Advice:
    """What ``check`` shows for a concept question: the book's feedback."""

    def __init__(self, right: bool, message: str):
        self.passed, self.message = right, message

    def __repr__(self) -> str:
        return self.message


def concept_check(key: str, answers) -> Advice:
    """The book's feedback on ``answers[id]`` for the concept question ``key``."""
    from attnbook.quiz import find

    from .concepts import spec, verdict

    try:
        data = spec(find(key))
    except ValueError as err:  # this attnbook has no such question
        return Advice(False, f"{key}: cannot check here ({err})")
    right, why = verdict(key, answers, data)
    return Advice(right, f"{key}: right." if right else why)


class Notebook:
    """``grader`` in Colab: ``questions`` maps each checked question's name to its
    checker's name and the answer function's name, and each concept question's
    name to ``("concept", KEY)``."""

    def __init__(self, questions: dict[str, tuple[str, str]]):
        if not isinstance(questions, dict):
            raise TypeError(f"questions must be a dict, got {type(questions).__name__}")
        self.questions = dict(questions)

    def check(self, question: str, global_env: dict | None = None):
        """The checker's report on the student's function (the book's cases)."""
        if question not in self.questions:
            raise ValueError(f"question must be one of {sorted(self.questions)}, got {question!r}")
        check, answer = self.questions[question]
        if global_env is None:
            import __main__  # the notebook's namespace, in IPython and Colab

            global_env = vars(__main__)
        if check == CONCEPT:  # a concept question: answer is its key, judged as the book does
            return concept_check(answer, global_env.get(ANSWERS))
        fn: Callable | None = global_env.get(answer)
        if not callable(fn):
            return Missing(question, answer)
        return report_for(check, fn, seed=0)

    def check_all(self, global_env: dict | None = None) -> list:
        return [self.check(q, global_env) for q in self.questions]

    def export(self, *args, **kwargs) -> None:
        print(HAND_IN)
