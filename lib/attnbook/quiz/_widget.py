"""Showing a question: the website's fragment, and :func:`ask` for a notebook.

The website (``ATTNBOOK_STATIC=1``) gets :func:`fragment`: the question's
HTML and ``quiz.js`` as one classic inline script that wires that question
and nothing else (its ``export`` keywords dropped, in a function scope so
nothing reaches the page's globals). A kernel without ``ATTNBOOK_STATIC`` gets
a :class:`QuestionWidget`, whose module is the same ``quiz.js``.

Both display the same ``text/plain`` (the question and its options), which is
what a viewer without JavaScript shows and what nbval compares.
"""

from __future__ import annotations

import os
import re
from importlib import resources

from ._data import Question, check_values, find
from ._html import SITE, question_html, question_text

STATIC_ENV = "ATTNBOOK_STATIC"
# The output metadata that marks a website-only text/html (tests/nbval_executed.py
# leaves it out of nbval's comparison); the explorers' marker, repeated here so
# that this module needs neither matplotlib nor ipywidgets.
STATIC_MARKER = "attnbook_explorer"

# A page with several questions needs the script once: the first fragment
# leaves `wire` at this name, and the website's build (book/_ext/concept_questions.py)
# replaces the script of every later fragment by SHARED_CALL.
GLOBAL = "attnbookQuizWire"
SHARED_CALL = (
    f"window.{GLOBAL}(document.currentScript.parentElement.querySelector('.attnbook-quiz'));"
)

_EXPORT = re.compile(r"^export (?=(?:async )?function |const |let |class )", re.MULTILINE)
_DEFAULT = re.compile(r"^export default \{[^}]*\};?\n", re.MULTILINE)


def module_source() -> str:
    """``quiz.js``: the anywidget module."""
    return resources.files(__package__).joinpath("quiz.js").read_text(encoding="utf-8")


def script_source(call: str) -> str:
    """``quiz.js`` as a classic script in its own function scope, then ``call``."""
    source = _DEFAULT.sub("", _EXPORT.sub("", module_source()))
    left = re.findall(r"^(?:export|import)\b.*", source, re.MULTILINE)
    if left:
        raise ValueError(f"quiz.js: module syntax a classic script cannot run: {left[0]!r}")
    return f'(() => {{\n"use strict";\n{source}\n{call}\n}})();\n'


def fragment(question: Question | str, site: str | None = None) -> str:
    """The website's HTML of ``question`` (a :class:`Question` or ``chapter/id``).

    Links are relative (``site=None``: the page is on the website) or on ``site``.
    """
    if isinstance(question, str):
        question = find(question)
    # The page's later questions can call the first one's `wire` (SHARED_CALL):
    # book/_ext/concept_questions.py keeps one copy of the script per page.
    script = script_source(f"window.{GLOBAL} = wire;\n{SHARED_CALL}")
    if "</script" in script.lower():
        raise ValueError("quiz.js must not contain '</script'")
    return (
        f'<div class="attnbook-quiz-host">{question_html(question, site)}'
        f"<script>{script}</script></div>"
    )


class StaticQuestion:
    """What :func:`ask` returns on the website: the fragment, displayed as HTML."""

    def __init__(self, question: Question):
        self.question = question

    def __repr__(self) -> str:
        return question_text(self.question)

    def _repr_mimebundle_(self, include=None, exclude=None):
        data = {"text/plain": repr(self), "text/html": fragment(self.question)}
        return data, {"text/html": {STATIC_MARKER: True}}


def _widget_class():
    import anywidget
    import traitlets

    class QuestionWidget(anywidget.AnyWidget):
        """A concept question in Jupyter, JupyterLab or Colab (``quiz.js`` as its module)."""

        _esm = module_source()
        html = traitlets.Unicode("").tag(sync=True)

        def __init__(self, question: Question):
            super().__init__(html=question_html(question, SITE))
            self.question = question

        def __repr__(self) -> str:
            return question_text(self.question)

        def _repr_mimebundle_(self, include=None, exclude=None):
            data = {
                "text/plain": repr(self),
                "application/vnd.jupyter.widget-view+json": {
                    "version_major": 2,
                    "version_minor": 0,
                    "model_id": self.model_id,
                },
            }
            return data, {}

        def _ipython_display_(self):
            # ipywidgets 7 displays a widget through this method: the same bundle.
            from IPython.display import display

            data, metadata = self._repr_mimebundle_()
            display(data, metadata=metadata, raw=True)

    return QuestionWidget


_CLASS = None


def __getattr__(name):
    # QuestionWidget is made on first use, so that the website's build (fragment)
    # needs neither anywidget nor traitlets.
    global _CLASS
    if name == "QuestionWidget":
        if _CLASS is None:
            _CLASS = _widget_class()
        return _CLASS
    raise AttributeError(name)


def ask(key: str, **values):
    """Show the question ``chapter/id`` where the chapter asks it.

    ``values`` are the numbers the chapter computed that the question prints
    (its ``values`` table): each must print as the question prints it, or this
    raises (:func:`attnbook.quiz.check_values`). Returns a
    :class:`QuestionWidget` in a kernel, the website's fragment when
    ``ATTNBOOK_STATIC=1``.
    """
    question = find(key)
    check_values(question, values)
    if os.environ.get(STATIC_ENV, "") == "1":
        return StaticQuestion(question)
    return __getattr__("QuestionWidget")(question)
