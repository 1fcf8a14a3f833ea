"""The concept questions as data: read from ``attnbook/questions/<chapter>.toml`` and checked.

One file per chapter, questions in reading order (the format is documented in
``attnbook/questions/README.md``). :func:`load` reads and validates a chapter;
every problem is a :class:`QuestionError` that names the file, the question
and the field, so a writer's slip is found when the file is read, not when a
reader clicks.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from importlib import resources

try:  # Python 3.11+
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as tomllib

KINDS = ("choice", "numeric", "predict")
_ID = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_LABEL = re.compile(r"(?:([a-z0-9-]+)#)?([A-Za-z0-9_-]+)")
# A number as printed: optional sign, digits, optional decimals, optional %.
_PRINTED = re.compile(r"[-−]?\d+(?:\.\d+)?%?")


class QuestionError(ValueError):
    """A question file that breaks the format: names the file, question and field."""


@dataclass(frozen=True)
class Option:
    text: str
    correct: bool
    feedback: str
    reread: str  # "page#label": the section that clears up this option's idea


@dataclass(frozen=True)
class Wrong:
    """A common wrong number of a numeric question, and the misconception behind it."""

    value: float
    tolerance: float
    feedback: str
    reread: str


@dataclass(frozen=True)
class Question:
    chapter: str
    id: str
    kind: str
    section: str  # "page#label"
    prompt: str
    options: tuple[Option, ...] = ()
    multiple: bool = False
    look: str = ""  # predict: what to do to see the answer
    answer: float | None = None  # numeric
    tolerance: float = 0.0
    unit: str = ""
    feedback: str = ""  # numeric: why the answer is right
    otherwise: str = ""  # numeric: any number that is neither right nor a known wrong one
    wrong: tuple[Wrong, ...] = ()
    deck: bool = False
    values: dict = field(default_factory=dict)  # name -> the number as printed

    @property
    def key(self) -> str:
        """The full id, ``chapter/id``."""
        return f"{self.chapter}/{self.id}"

    @property
    def right(self) -> tuple[int, ...]:
        """The indices of the right options (choice and predict)."""
        return tuple(i for i, option in enumerate(self.options) if option.correct)

    def texts(self) -> list[str]:
        """Every piece of reader-facing text of the question."""
        out = [self.prompt, self.look, self.feedback, self.otherwise]
        out += [part for option in self.options for part in (option.text, option.feedback)]
        out += [wrong.feedback for wrong in self.wrong]
        return [text for text in out if text]


def chapters() -> list[str]:
    """The chapters that have a question file, in file-name order."""
    folder = resources.files("attnbook.questions")
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".toml"))


def _fail(where: str, message: str) -> QuestionError:
    return QuestionError(f"{where}: {message}")


def _text(table: dict, name: str, where: str, required: bool = True) -> str:
    value = table.get(name, "")
    if not isinstance(value, str):
        raise _fail(where, f"{name} must be a string, got {type(value).__name__}")
    value = value.strip()
    if required and not value:
        raise _fail(where, f"{name} is missing or empty")
    return value


def _label(value, chapter: str, where: str, name: str) -> str:
    if not isinstance(value, str) or not _LABEL.fullmatch(value):
        raise _fail(where, f"{name} must be a section label or 'page#label', got {value!r}")
    return value if "#" in value else f"{chapter}#{value}"


def _number(value, where: str, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _fail(where, f"{name} must be a number, got {value!r}")
    return float(value)


_KNOWN = {
    "id", "kind", "section", "prompt", "option", "multiple", "look", "answer", "tolerance",
    "unit", "feedback", "otherwise", "wrong", "deck", "values", "ordered",
}  # fmt: skip


def shuffled(options: list, key: str) -> list:
    """``options`` in an order fixed by ``key`` alone (SHA-256, Fisher-Yates).

    A writer tends to put the right option first; readers learn that. Every
    surface (page, notebook, PDF, decks, assignments) reads the questions
    through :func:`parse`, so the letters agree everywhere, on every machine.
    """
    out = list(options)
    digest = hashlib.sha256(key.encode()).digest()
    for i in range(len(out) - 1, 0, -1):
        j = int.from_bytes(digest[2 * i : 2 * i + 2], "big") % (i + 1)
        out[i], out[j] = out[j], out[i]
    return out


def _question(chapter: str, table: dict, index: int) -> Question:
    where = f"{chapter}.toml, question {index + 1}"
    qid = table.get("id")
    if not isinstance(qid, str) or not _ID.fullmatch(qid):
        raise _fail(where, f"id must be lowercase words joined by '-', got {qid!r}")
    where = f"{chapter}.toml, question {qid!r}"
    unknown = sorted(set(table) - _KNOWN)
    if unknown:
        raise _fail(where, f"unknown field(s) {unknown}")
    kind = table.get("kind")
    if kind not in KINDS:
        raise _fail(where, f"kind must be one of {KINDS}, got {kind!r}")
    section = _label(table.get("section"), chapter, where, "section")
    common = {
        "chapter": chapter,
        "id": qid,
        "kind": kind,
        "section": section,
        "prompt": _text(table, "prompt", where),
        "deck": bool(table.get("deck", False)),
    }
    values = table.get("values", {})
    if not isinstance(values, dict) or not all(
        isinstance(v, str) and _PRINTED.fullmatch(v) for v in values.values()
    ):
        raise _fail(where, f"values must map names to numbers as printed (strings), got {values!r}")
    common["values"] = dict(values)
    if kind == "numeric":
        for name in ("option", "multiple", "look"):
            if name in table:
                raise _fail(where, f"a numeric question has no {name}")
        answer = _number(table.get("answer"), where, "answer")
        tolerance = _number(table.get("tolerance"), where, "tolerance")
        if tolerance < 0:
            raise _fail(where, f"tolerance must be >= 0, got {tolerance}")
        wrong = []
        for j, entry in enumerate(table.get("wrong", [])):
            at = f"{where}, wrong {j + 1}"
            value = _number(entry.get("value"), at, "value")
            tol = _number(entry.get("tolerance", tolerance), at, "tolerance")
            if abs(value - answer) <= tolerance + tol:
                raise _fail(at, f"value {value} is within the tolerance of the answer {answer}")
            wrong.append(
                Wrong(
                    value,
                    tol,
                    _text(entry, "feedback", at),
                    _label(entry.get("reread", section), chapter, at, "reread"),
                )
            )
        if not wrong:
            raise _fail(where, "a numeric question needs at least one [[question.wrong]]")
        for j, a in enumerate(wrong):
            for b in wrong[j + 1 :]:
                if abs(a.value - b.value) <= a.tolerance + b.tolerance:
                    raise _fail(where, f"wrong values {a.value} and {b.value} overlap")
        return Question(
            **common,
            answer=answer,
            tolerance=tolerance,
            unit=_text(table, "unit", where, required=False),
            feedback=_text(table, "feedback", where),
            otherwise=_text(table, "otherwise", where),
            wrong=tuple(wrong),
        )
    for name in ("answer", "tolerance", "unit", "feedback", "otherwise", "wrong"):
        if name in table:
            raise _fail(where, f"a {kind} question has no {name} (feedback goes on each option)")
    options = []
    for j, entry in enumerate(table.get("option", [])):
        at = f"{where}, option {j + 1}"
        correct = entry.get("correct", False)
        if not isinstance(correct, bool):
            raise _fail(at, f"correct must be true or false, got {correct!r}")
        extra = sorted(set(entry) - {"text", "correct", "feedback", "reread"})
        if extra:
            raise _fail(at, f"unknown field(s) {extra}")
        options.append(
            Option(
                _text(entry, "text", at),
                correct,
                _text(entry, "feedback", at),
                _label(entry.get("reread", section), chapter, at, "reread"),
            )
        )
    if not 3 <= len(options) <= 6:
        raise _fail(where, f"needs 3 to 6 options, has {len(options)}")
    texts = [option.text for option in options]
    if len(set(texts)) != len(texts):
        raise _fail(where, "two options have the same text")
    multiple = table.get("multiple", False)
    if not isinstance(multiple, bool):
        raise _fail(where, f"multiple must be true or false, got {multiple!r}")
    right = sum(option.correct for option in options)
    if not multiple and right != 1:
        raise _fail(where, f"a single-answer question needs exactly one right option, has {right}")
    if multiple and not 1 <= right < len(options):
        raise _fail(where, f"a several-answer question needs 1 to {len(options) - 1} right options")
    ordered = table.get("ordered", False)
    if not isinstance(ordered, bool):
        raise _fail(where, f"ordered must be true or false, got {ordered!r}")
    if not ordered:  # options with no natural order are shown in a fixed shuffle
        options = shuffled(options, f"{chapter}/{qid}")
    look = _text(table, "look", where, required=kind == "predict")
    if kind == "choice" and look:
        raise _fail(where, "only a predict question has look")
    return Question(**common, options=tuple(options), multiple=multiple, look=look)


def parse(chapter: str, text: str) -> list[Question]:
    """The questions of ``chapter`` from the TOML ``text``, validated."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise QuestionError(f"{chapter}.toml is not valid TOML: {error}") from None
    extra = sorted(set(data) - {"question"})
    if extra:
        raise QuestionError(f"{chapter}.toml: unknown top-level key(s) {extra}")
    tables = data.get("question", [])
    questions = [_question(chapter, table, i) for i, table in enumerate(tables)]
    ids = [q.id for q in questions]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise QuestionError(f"{chapter}.toml: repeated id(s) {repeated}")
    decks = [q.id for q in questions if q.deck]
    if len(decks) > 1:
        raise QuestionError(f"{chapter}.toml: deck = true on {decks}, at most one allowed")
    for q in questions:
        text = "\n".join(q.texts())
        letter = re.search(r"\b(?:[Oo]ptions?|[Aa]nswers?|[Cc]hoices?) \(?[A-F]\b\)?", text)
        if (
            letter
            and q.kind != "numeric"
            and not any(o.text.startswith(letter.group(0)) for o in q.options)
        ):
            raise QuestionError(
                f"{chapter}.toml, question {q.id!r}: names an option by letter "
                f"({letter.group(0)!r}); options are shuffled, so name it by its idea"
            )
        for name, printed in q.values.items():
            if printed.replace("−", "-") not in text.replace("−", "-"):
                raise QuestionError(
                    f"{chapter}.toml, question {q.id!r}: value {name} = {printed!r} "
                    "appears nowhere in its text"
                )
    return questions


def load(chapter: str) -> list[Question]:
    """The questions of ``chapter`` (a file name without ``.toml``), validated."""
    if not isinstance(chapter, str) or not _ID.fullmatch(chapter):
        raise ValueError(f"chapter must be a chapter's file name, got {chapter!r}")
    path = resources.files("attnbook.questions").joinpath(f"{chapter}.toml")
    if not path.is_file():
        raise ValueError(f"chapter {chapter!r} has no question file (known: {chapters()})")
    return parse(chapter, path.read_text(encoding="utf-8"))


def find(key: str) -> Question:
    """The question ``chapter/id``."""
    if not isinstance(key, str) or key.count("/") != 1:
        raise ValueError(f"key must be 'chapter/id', got {key!r}")
    chapter, qid = key.split("/")
    for question in load(chapter):
        if question.id == qid:
            return question
    known = [q.id for q in load(chapter)]
    raise ValueError(f"key {key!r}: chapter {chapter!r} has no question {qid!r} (it has {known})")


def check_values(question: Question, computed: dict) -> None:
    """Assert that each number the chapter computed prints as the question prints it.

    ``computed`` maps each name of ``question.values`` to the chapter's number;
    a name missing, an unknown name, or a number that rounds (to the printed
    digits) to something else than the printed string is an ``AssertionError``
    that names the question, the value and both numbers.
    """
    missing = sorted(set(question.values) - set(computed))
    extra = sorted(set(computed) - set(question.values))
    if missing:
        raise TypeError(
            f"ask({question.key!r}) needs the computed value(s) {missing}: the question prints them"
        )
    if extra:
        raise TypeError(
            f"ask({question.key!r}): unknown value name(s) {extra}; "
            f"the question declares {sorted(question.values)}"
        )
    for name, printed in question.values.items():
        number = computed[name]
        if isinstance(number, bool) or not isinstance(number, (int, float)):
            try:
                number = float(number)
            except (TypeError, ValueError):
                raise TypeError(
                    f"ask({question.key!r}): {name} must be a number, got {computed[name]!r}"
                ) from None
        plain = printed.replace("−", "-")
        percent = plain.endswith("%")
        plain = plain.rstrip("%")
        digits = len(plain.split(".")[1]) if "." in plain else 0
        shown = f"{number * (100 if percent else 1):.{digits}f}"
        if shown == f"-{0:.{digits}f}":
            shown = shown[1:]
        if shown != plain:
            raise AssertionError(
                f"{question.key}: {name} is printed {printed!r} but the chapter computes "
                f"{number!r} (which prints {shown!r})"
            )
