"""Every checker names each of its known mistakes, and only the right one.

A checker lists the classic wrong versions of its exercise (``check_x.mistakes``,
see ``attnbook.checks._core``). Run on a mistake, the checker must fail and
name that very mistake; run on a right answer it names none. The diagnosis
machinery itself is tested on a toy checker whose cases and mistakes are
written here.
"""

from __future__ import annotations

import pytest
import torch

from attnbook import checks
from attnbook.checks._core import Case, Mistake, _read_exception, _run, knows

CHECKERS = [getattr(checks, name) for name in checks.__all__ if name.startswith("check_")]
WITH_MISTAKES = [c for c in CHECKERS if getattr(c, "mistakes", ())]


@pytest.mark.parametrize(
    ("checker", "mistake"),
    [(c, m) for c in WITH_MISTAKES for m in c.mistakes],
    ids=lambda x: getattr(x, "__name__", None) or getattr(x, "name", None),
)
def test_each_known_mistake_gets_its_own_diagnosis(checker, mistake):
    report = checker(mistake.fn)
    assert not report.passed, f"{checker.__name__} accepts the mistake {mistake.name!r}"
    assert report.mistake == mistake.name, repr(report)
    assert mistake.diagnosis in repr(report)


# ---------------------------------------------------------------- the machinery, on a toy checker


def _double(x):
    return 2 * x


@knows(
    Mistake("adds", lambda x: x + 2, "this looks like x + 2, not 2 * x"),
    Mistake("squares", lambda x: x * x, "this looks like x squared"),
    Mistake("product", lambda x: x @ torch.ones(5, 5), "this looks like a product"),
)
def _check_double(fn):
    cases = [
        ("two", (torch.tensor([2.0]),), torch.tensor([4.0]), "the case's own hint"),
        ("three", (torch.tensor([3.0]),), torch.tensor([6.0]), "the case's own hint"),
        Case("a matrix", (torch.ones(2, 3),), 2 * torch.ones(2, 3), "the case's own hint"),
    ]
    return _run("_check_double", fn, cases, mistakes=_check_double.mistakes)


def test_a_right_answer_names_no_mistake():
    report = _check_double(_double)
    assert report.passed and report.mistake is None
    assert "Likely mistake" not in repr(report)


@pytest.mark.parametrize("name", ["adds", "squares"])
def test_a_matching_mistake_is_named_and_case_hints_are_dropped(name):
    mistake = next(m for m in _check_double.mistakes if m.name == name)
    report = _check_double(mistake.fn)
    assert report.mistake == name
    assert f"Likely mistake: {mistake.diagnosis}" in repr(report)
    assert "the case's own hint" not in repr(report)


def test_an_exception_matches_a_mistake_that_raises_the_same_way():
    def reader(x):
        return x @ torch.eye(5)  # raises on every case, as the "product" mistake does

    report = _check_double(reader)
    assert report.mistake == "product"
    assert "raised RuntimeError" in repr(report)
    assert "3 of 3 cases failed" in repr(report)


def test_an_unknown_mistake_says_what_differs_and_keeps_the_hint():
    report = _check_double(lambda x: 3 * x)
    assert report.mistake is None
    text = repr(report)
    assert "expected 4, got 6" in text and "the case's own hint" in text
    assert "Likely mistake" not in text


def test_a_mistake_that_explains_only_the_failures_is_named_as_such():
    def reader(x):  # squares vectors, right on the matrix
        return x * x if x.dim() == 1 else 2 * x

    report = _check_double(reader)
    assert report.mistake == "squares"
    assert "Likely mistake (in the failing cases)" in repr(report)


def test_knows_rejects_two_mistakes_with_one_name():
    with pytest.raises(ValueError, match="distinct"):
        knows(Mistake("a", _double, "x"), Mistake("a", _double, "y"))


def test_torch_messages_are_read_in_plain_words():
    batch = torch.ones(2, 3, 4)
    try:
        torch.bmm(batch, batch.T)
    except RuntimeError as err:
        reading = _read_exception(err)
    assert reading.startswith("raised RuntimeError:")
    assert "K.transpose(-2, -1)" in reading
    try:
        torch.ones(3, 1) + torch.ones(4)[:, None].expand(4, 2)
    except RuntimeError as err:
        reading = _read_exception(err)
    assert "broadcast" in reading
    assert _read_exception(ValueError("something odd")) == "raised ValueError: something odd"


def test_known_mistakes_lists_every_checker_and_each_mistake_once():
    # An independent count: every check_* attribute of the package, read directly.
    table = checks.known_mistakes()
    names = sorted(n for n in dir(checks) if n.startswith("check_"))
    assert sorted(table) == names
    for name, listed in table.items():
        own = getattr(checks, name).mistakes
        assert listed == tuple((m.name, m.diagnosis) for m in own), name
        assert all(isinstance(a, str) and isinstance(b, str) and b for a, b in listed)
    assert sum(map(len, table.values())) == sum(len(getattr(checks, n).mistakes) for n in names)
