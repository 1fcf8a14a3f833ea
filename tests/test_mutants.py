"""The mutation test of the checkers (tools/mutants.py): its mutator (attnbook/checks/_mutator.py),
and the whole pass.

Each operator of the mutator makes the slip it names on a tiny function (fast).
The whole pass (slow tier, a few minutes) mutates every checked exercise's
reference solution, runs its checker on each mutant and requires that no
mutant is accepted: a mutant that passes its checker under seeds 0 and 1 must
give the reference's outcome on every case and on stressed copies of them.
It prints the table; the named share is tracked, not required.
"""

from __future__ import annotations

import ast
import textwrap

import pytest
import torch

from attnbook.checks import _mutator as mutator
from attnbook.checks._core import _run
from tools import mutants

TINY = textwrap.dedent(
    """
    def f(X, n):
        e = torch.exp(X - X.amax(dim=-1, keepdim=True))
        keep = torch.arange(n) < n
        s = e.masked_fill(~keep, -math.inf) / math.sqrt(n)
        return s @ X.transpose(-2, -1)[:, 1:n]
    """
)


def _changes(operator: str) -> set[str]:
    """The changed lines of every mutant of TINY that ``operator`` makes, as 'old -> new'."""
    found = mutator.mutants(TINY, {operator: mutator.OPERATORS[operator]})
    assert all(m.operator == operator for m in found)
    return {m.label.split(": ", 2)[2] for m in found}


def test_dim_changes_an_axis():
    assert "X.amax(dim=-1, keepdim=True) -> X.amax(dim=0, keepdim=True)" in _changes("dim")
    assert "X.amax(dim=-1, keepdim=True) -> X.amax(dim=-2, keepdim=True)" in _changes("dim")
    assert "X.transpose(-2, -1) -> X.transpose(-1, -1)" in _changes("dim")


def test_bound_moves_an_end_by_one():
    changes = _changes("bound")
    assert "torch.arange(n) -> torch.arange(n + 1)" in changes
    assert "torch.arange(n) -> torch.arange(n - 1)" in changes
    assert "1:n -> 2:n" in changes and "1:n -> 1:n - 1" in changes


def test_compare_swaps_strictness():
    assert _changes("compare") == {"torch.arange(n) < n -> torch.arange(n) <= n"}


def _sources(source: str, operator: str) -> list[str]:
    return [m.source for m in mutator.mutants(source, {operator: mutator.OPERATORS[operator]})]


def test_sign_swaps_plus_and_minus_and_drops_a_minus():
    changes = _changes("sign")
    assert "X - X.amax(dim=-1, keepdim=True) -> X + X.amax(dim=-1, keepdim=True)" in changes
    assert "-math.inf -> math.inf" in changes
    assert not any(c.startswith("-1 ") for c in changes)  # an axis is the dim slip
    assert _sources("y = a + b", "sign") == ["y = a - b"]


def test_times_swaps_multiply_and_divide():
    assert any(c.endswith("* math.sqrt(n)") for c in _changes("times"))
    assert _sources("y = a * b", "times") == ["y = a / b"]


def test_reduction_swaps_a_reduction():
    changes = _changes("reduction")
    assert "X.amax(dim=-1, keepdim=True) -> X.amin(dim=-1, keepdim=True)" in changes
    assert "X.amax(dim=-1, keepdim=True) -> X.sum(dim=-1, keepdim=True)" in changes


def test_scale_drops_a_scale():
    assert (
        "e.masked_fill(~keep, -math.inf) / math.sqrt(n) -> e.masked_fill(~keep, -math.inf)"
        in _changes("scale")
    )
    assert _sources("y = a * b", "scale") == ["y = a", "y = b"]
    assert _sources("y = a // b", "scale") == ["y = a"]


def test_fill_puts_zero_for_minus_infinity():
    assert _changes("fill") == {"-math.inf -> 0.0"}
    for text in ('float("-inf")', "-float('inf')", "torch.finfo(X.dtype).min"):
        found = mutator.mutants(f"y = x.masked_fill(m, {text})", {"fill": mutator.op_fill})
        assert [m.source for m in found] == ["y = x.masked_fill(m, 0.0)"], text


def test_transpose_drops_a_transpose():
    assert _changes("transpose") == {"X.transpose(-2, -1) -> X"}
    found = mutator.mutants("y = q @ k.T", {"transpose": mutator.op_transpose})
    assert [m.source for m in found] == ["y = q @ k"]


def test_keepdim_drops_keepdim():
    assert _changes("keepdim") == {"X.amax(dim=-1, keepdim=True) -> X.amax(dim=-1)"}


def test_every_mutant_is_one_slip_and_distinct():
    found = mutator.mutants(TINY)
    sources = [m.source for m in found]
    assert len(set(sources)) == len(sources)
    assert ast.unparse(ast.parse(TINY)) not in sources
    for m in found:
        compile(m.source, "<mutant>", "exec")
    assert {m.operator for m in found} == set(mutator.OPERATORS)


def test_each_mutant_says_its_slip_in_words():
    words = {m.words: (m.before, m.after) for m in mutator.mutants(TINY)}
    assert words["`amax` over dim -2 instead of dim -1"] == (
        "X.amax(dim=-1, keepdim=True)",
        "X.amax(dim=-2, keepdim=True)",
    )
    assert words["the slice stopping one earlier"] == (
        "X.transpose(-2, -1)[:, 1:n]",
        "X.transpose(-2, -1)[:, 1:n - 1]",
    )
    assert "`<=` instead of `<`" in words
    assert "the transpose left out" in words
    assert "a fill of 0 where the right answer fills with minus infinity" in words
    assert "keepdim=True left out, so the reduced axis is dropped" in words
    assert all(w and "?" not in w for w in words)
    # A factor of a product is shown in the whole product; a size by its axis.
    product = {m.words: (m.before, m.after) for m in mutator.mutants("y = 2 * D * F")}
    assert product["the factor `D` left out"] == ("2 * D * F", "2 * F")
    shape = {m.words for m in mutator.mutants("n = x.shape[-1]")}
    assert "the size of axis 0 where the right answer takes axis -1" in shape


def test_the_librarys_references_are_the_books_solutions():
    # The checkers mutate attnbook.checks._references (the wheel has no book):
    # each must be the solution cell of its exercise, comments aside.
    from attnbook.checks._references import REFERENCES

    found = {e.check: e for e in mutants.exercises()}
    assert set(REFERENCES) == set(found)
    for check, (answer, source) in REFERENCES.items():
        assert answer == found[check].answer, check
        assert ast.dump(ast.parse(source)) == ast.dump(ast.parse(found[check].source)), check


def _weak_check(fn):
    """A checker with one case, all zeros: blind to most slips."""
    return _run("weak", fn, [("zeros", (torch.zeros(1, 1),), torch.zeros(1))])


def test_the_classifier_tells_accepted_from_equivalent_and_rejected():
    source = "def f(X):\n    return (X * 2).sum(dim=-1)\n"
    exercise = mutants.Exercise("tiny/doubled-sum", _weak_check, "f", source, ["import torch"])
    verdicts = {
        v.mutant.label.split(": ", 2)[2]: v for v in mutants.run_exercise(exercise).verdicts
    }
    # Right on zeros, wrong on their stressed copies (- 200, one row + 1000).
    for slip in ("X * 2 -> X / 2", "X * 2 -> X"):
        assert verdicts[slip].kind == "accepted", slip
        assert "differs on 'zeros (inputs - 200)'" in verdicts[slip].why
    # A (1, 1) tensor summed over its first axis, or averaged, gives the same.
    assert verdicts["(X * 2).sum(dim=-1) -> (X * 2).sum(dim=-2)"].kind == "equivalent"
    assert verdicts["(X * 2).sum(dim=-1) -> (X * 2).mean(dim=-1)"].kind == "equivalent"
    assert verdicts["X * 2 -> 2"].kind == "unnamed"  # (2).sum raises
    lines = mutants.accepted([mutants.Result(exercise, list(verdicts.values()))])
    assert len(lines) == sum(v.kind == "accepted" for v in verdicts.values())


def test_a_run_leaves_torch_as_it_found_it():
    printing = dict(vars(torch._tensor_str.PRINT_OPTS))
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    results = mutants.run({"check_entropy"})  # its chapter's setup seeds torch, sets printing
    assert [r.exercise.check for r in results] == ["check_entropy"]
    assert torch.equal(torch.rand(3), expected)
    assert dict(vars(torch._tensor_str.PRINT_OPTS)) == printing


@pytest.mark.slow
def test_no_checker_accepts_a_mutant_of_its_solution():
    results = mutants.run()
    print("\n" + mutants.table(results))
    from attnbook import checks

    # Every checker is mutation-tested: each has its exercise's solution in the book.
    assert sorted(r.exercise.check for r in results) == sorted(
        name for name in checks.__all__ if name.startswith("check_")
    )
    assert all(r.verdicts for r in results)
    found = mutants.accepted(results)
    assert not found, f"{len(found)} accepted mutants:\n" + "\n".join(found)
