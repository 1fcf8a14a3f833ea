"""Concept questions in a graded assignment: a student's answer judged as the book judges it.

``make assignments`` gives each chapter's concept questions (:mod:`attnbook.quiz`)
to its assignment. The student answers in a cell, into the dict ``answers``::

    answers["variance-grows"] = "B"      # one letter
    answers["which-masks"] = "AC"        # several letters, when several are right
    answers["far-weight"] = 0.25         # a number

(lower or upper case, with or without spaces or commas between letters, or a
list or set of letters; a number
may also be a string such as ``"1/4"`` or ``"25%"``, as the book's box reads it).

:func:`spec` turns a question into plain data (its key and each piece of
feedback, no code), which the assignment's test embeds; :func:`judge` takes that
data and an answer and returns whether it is right and the book's feedback for
it: each picked option's feedback, the numeric wrong value's, or ``otherwise``.
The same function gives the advice of ``grader.check`` in the student's notebook
(:func:`verdict`) and the grade, in the grader's process, from the answer fetched
from the student's process as data (:meth:`.remote.Submission.values`). Only a
plain ``str``, ``int``, ``float``, or ``list`` (``set``, ``tuple``) of ``str`` is an
answer (exactly those types; the worker sends a set or tuple as a list): anything
else (an object of the student's own class, whatever its ``__eq__`` says) earns
nothing, and the reason says so.
"""

from __future__ import annotations

import math
import re
from typing import Any

#: Points of one concept question (an exercise earns one point per star).
POINTS = 1
LETTERS = "ABCDEF"
#: The dict a student's answers go into.
ANSWERS = "answers"


def spec(question) -> dict:
    """``question`` (an :class:`attnbook.quiz.Question`) as plain data for judging."""
    from attnbook.quiz import SITE, plain
    from attnbook.quiz._html import link

    out: dict[str, Any] = {"key": question.key, "kind": question.kind}
    if question.kind == "numeric":
        out.update(
            answer=question.answer,
            tolerance=question.tolerance,
            feedback=plain(question.feedback),
            otherwise=plain(question.otherwise),
            reread=link(question.section, SITE),
            wrong=[
                {
                    "value": w.value,
                    "tolerance": w.tolerance,
                    "feedback": plain(w.feedback),
                    "reread": link(w.reread, SITE),
                }
                for w in question.wrong
            ],
        )
    else:
        out["multiple"] = question.multiple
        out["options"] = [
            {"correct": o.correct, "feedback": plain(o.feedback), "reread": link(o.reread, SITE)}
            for o in question.options
        ]
    return out


def problem(data: Any) -> str:
    """What is wrong with judging data read from a test file ("" when nothing)."""

    def number(x) -> bool:
        return _is(x, int, float) and math.isfinite(x)

    if not isinstance(data, dict) or data.get("kind") not in ("choice", "numeric", "predict"):
        return "not a question's data"
    if data["kind"] == "numeric":
        fine = (
            number(data.get("answer"))
            and number(data.get("tolerance"))
            and all(_is(data.get(k), str) for k in ("feedback", "otherwise", "reread"))
            and _is(data.get("wrong"), list)
            and all(
                _is(w, dict)
                and number(w.get("value"))
                and number(w.get("tolerance"))
                and _is(w.get("feedback"), str)
                and _is(w.get("reread"), str)
                for w in data["wrong"]
            )
        )
        return "" if fine else "a numeric question needs answer, tolerance, feedback and wrong"
    options = data.get("options")
    fine = (
        _is(data.get("multiple"), bool)
        and _is(options, list)
        and 1 <= len(options) <= len(LETTERS)
        and all(
            _is(o, dict)
            and _is(o.get("correct"), bool)
            and _is(o.get("feedback"), str)
            and _is(o.get("reread"), str)
            for o in options
        )
        and any(o["correct"] for o in options)
    )
    return "" if fine else "a choice needs multiple and options, each with correct and feedback"


def solution(data: dict) -> str:
    """The right answer as the Python a student would write (the solutions' cell)."""
    if data["kind"] == "numeric":
        return repr(data["answer"])
    return '"' + "".join(LETTERS[i] for i, o in enumerate(data["options"]) if o["correct"]) + '"'


def how_to_answer(data: dict) -> str:
    """The comment above a student's answer line."""
    if data["kind"] == "numeric":
        return '# Your answer: a number, for example 0.25 (or a fraction in quotes, "1/4").'
    if data["multiple"]:
        return '# Your answer: every right letter in one string, for example "AC".'
    return '# Your answer: one letter in quotes, for example "B".'


def _number(text: str) -> float | None:
    """A number as the book's box reads it: "0.25", "0,25", "−0.5", "1/4", "25%"."""
    t = re.sub(r"\s+", "", text.strip().replace("\u2212", "-"))
    if re.fullmatch(r"-?\d*,\d+", t):
        t = t.replace(",", ".")
    scale = 1.0
    if t.endswith("%"):
        t, scale = t[:-1], 0.01
    fraction = re.fullmatch(r"(-?\d+(?:\.\d+)?)/(\d+(?:\.\d+)?)", t)
    if fraction:
        d = float(fraction.group(2))
        return None if d == 0 else float(fraction.group(1)) / d * scale
    if not re.fullmatch(r"-?(\d+\.?\d*|\.\d+)(e-?\d+)?", t, re.I):
        return None
    return float(t) * scale


def _near(x: float, target: float, tolerance: float) -> bool:
    return abs(x - target) <= tolerance + 1e-9 * max(1.0, abs(target))


def _is(value: Any, *types: type) -> bool:
    return type(value) in types  # exactly these types: no subclass, whatever it overrides


def _reread(url: str) -> str:
    return f"Reread the section: {url}"


def _letters(value: Any, count: int) -> tuple[list[int] | None, str]:
    """The options picked (indices), or None and why the answer cannot be read."""
    if _is(value, list, tuple, set, frozenset) and all(_is(v, str) for v in value):
        value = " ".join(sorted(value))
    if not _is(value, str):
        kind = type(value).__name__
        return None, f'an answer is letters in a string, such as "B", not a {kind} object'
    text = re.sub(r"\bAND\b", " ", value.upper())
    text = re.sub(r"[\s,;/&+.()]+", "", text)
    if not text:
        return None, "no letter given"
    valid = LETTERS[:count]
    if any(c not in valid for c in text):
        return None, f"{value!r} is not option letters ({', '.join(valid)})"
    return sorted({valid.index(c) for c in text}), ""


def judge(data: dict, value: Any) -> tuple[bool, list[str]]:
    """Whether ``value`` answers the question of ``data`` (see :func:`spec`), and the
    book's feedback for it, one line per piece."""
    # ``...``, the blank, comes back from the worker as a stand-in named "ellipsis".
    if value is None or value is Ellipsis or type(value).__name__ == "ellipsis":
        return False, ["not answered yet: write your answer in its cell and run the cell"]
    if data["kind"] == "numeric":
        if _is(value, int, float):
            x = float(value)
        elif _is(value, str):
            x = _number(value)
            if x is None:
                return False, [f'{value!r} is not a number (write, for example, 0.25 or "1/4")']
        else:
            kind = type(value).__name__
            return False, [f"a numeric answer is a number, such as 0.25, not a {kind} object"]
        if not math.isfinite(x):
            return False, [f"{value!r} is not a finite number"]
        if _near(x, data["answer"], data["tolerance"]):
            return True, [f"Right. {data['feedback']}"]
        for wrong in data["wrong"]:
            if _near(x, wrong["value"], wrong["tolerance"]):
                return False, [f"Not quite. {wrong['feedback']}", _reread(wrong["reread"])]
        return False, [f"Not quite. {data['otherwise']}", _reread(data["reread"])]
    options = data["options"]
    picks, why = _letters(value, len(options))
    if picks is None:
        return False, [why]
    right = [i for i, o in enumerate(options) if o["correct"]]
    if not data["multiple"] and len(picks) > 1:
        return False, ["this question has one right answer: give one letter"]
    if picks == right:
        head = "Right."
    elif set(picks) <= set(right):
        left = len(right) - len(picks)
        head = f"Right so far, but {left} more option{'s are' if left > 1 else ' is'} right too."
    else:
        head = "Not quite: look at the feedback of each pick." if len(right) > 1 else "Not quite."
    lines = [head]
    for i in picks:
        option = options[i]
        verdict = "right" if option["correct"] else "not right"
        lines.append(f"{LETTERS[i]}: {verdict}. {option['feedback']}")
        if not option["correct"]:
            lines.append("   " + _reread(option["reread"]))
    return picks == right, lines


def verdict(key: str, answers: Any, data: dict) -> tuple[bool, str]:
    """The otter test's check in the student's notebook (advice, not the grade):
    ``answers[id]`` judged against ``data``; the message is the book's feedback."""
    if not isinstance(answers, dict):
        return False, f"{ANSWERS} is not a dict: run the cell that sets {ANSWERS} = {{}}"
    qid = key.split("/", 1)[1]
    right, lines = judge(data, answers.get(qid))
    return right, "\n".join([f"{key}:", *lines])


def answer_of(raw: Any) -> Any:
    """What the worker sends of one answer: sets and tuples of letters as lists
    (the grader still accepts only plain values: :func:`judge`)."""
    if isinstance(raw, (set, frozenset, tuple)):
        return sorted(raw, key=str)
    return raw
