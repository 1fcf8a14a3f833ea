"""Concept questions ("Check your understanding"): one source, every surface.

The questions are data, ``attnbook/questions/<chapter>.toml`` (the format is
in that folder's README.md), read and validated by :func:`load`. One HTML
form (:func:`question_html`) and one small script (``quiz.js``) draw them:

* in Jupyter, JupyterLab and Colab, :func:`ask` returns a :class:`QuestionWidget`
  (anywidget: the script is its module, the question's HTML its state);
* on the website (``ATTNBOOK_STATIC=1``, as the book build runs), the same
  ``ask`` displays :func:`fragment`: the HTML and the script inline, nothing
  fetched; the prose chapter gets the same fragment from the book's
  ``{concept-question}`` directive (``book/_ext/concept_questions.py``);
* the PDF prints the questions in place and the answers in an appendix
  (:func:`answer_html`), the decks show one per chapter for Peer
  Instruction, the instructor guide lists them, and ``make assignments``
  grades them with the same feedback.

``ask(key, **values)`` also asserts the numbers a question prints that the
chapter's code computed (:func:`check_values`), like every number in the book.
"""

from __future__ import annotations

from ._data import (
    KINDS,
    Option,
    Question,
    QuestionError,
    Wrong,
    chapters,
    check_values,
    find,
    load,
    parse,
)
from ._html import (
    LETTERS,
    SITE,
    answer_html,
    first_sentence,
    key_text,
    markdown,
    one_line,
    plain,
    question_html,
    question_text,
    spans,
)
from ._widget import StaticQuestion, ask, fragment, module_source, script_source

__all__ = [
    "KINDS",
    "LETTERS",
    "SITE",
    "Option",
    "Question",
    "QuestionError",
    "StaticQuestion",
    "Wrong",
    "answer_html",
    "ask",
    "chapters",
    "check_values",
    "find",
    "first_sentence",
    "fragment",
    "key_text",
    "load",
    "markdown",
    "one_line",
    "module_source",
    "parse",
    "plain",
    "question_html",
    "question_text",
    "spans",
    "script_source",
]


def __getattr__(name):
    # QuestionWidget needs anywidget: made on first use (see ._widget).
    if name == "QuestionWidget":
        from . import _widget

        return _widget.QuestionWidget
    raise AttributeError(name)
