"""Diagnosis by matching mutants (attnbook.checks._matching), and the slips that
readers met which it and the catalogued mistakes now name.

A failing answer that no known mistake explains is compared with the mutants
of the checker's reference (the book's solution); the one it equals is named,
in words, with the expression that changed. A name is given only when the
mutant agrees with the reader on every failing case.
"""

from __future__ import annotations

import time

import pytest
import torch

from attnbook import checks
from attnbook.checks import _core, _matching
from attnbook.checks._references import REFERENCES


def test_every_checker_has_a_reference_that_passes_it():
    names = {n for n in checks.__all__ if n.startswith("check_")}
    assert set(REFERENCES) == names
    for name in REFERENCES:
        reference, found = _matching.reference_mutants(name)
        assert getattr(checks, name)(reference), name
        assert found, f"{name}: no mutant"


def softmax_summed_over_columns(X):
    e = (X - X.max(dim=-1, keepdim=True).values).exp()
    return e / e.sum(dim=0, keepdim=True)


def test_a_slip_is_named_by_the_mutant_it_equals():
    report = checks.check_softmax(softmax_summed_over_columns)
    assert not report
    assert report.mistake.startswith("one slip")
    assert "`sum` over dim 0 instead of dim -1" in report.diagnosis
    assert "`exps.sum(dim=0, keepdim=True)` where the right answer has" in report.diagnosis
    assert 'see "' in report.diagnosis  # the section to read, as every diagnosis


def test_a_slice_one_short_is_named():
    def previous_token_one_short(weights):
        batch, heads, n, _ = weights.shape
        total = torch.zeros(heads, dtype=weights.dtype)
        for i in range(1, n - 1):
            total = total + weights[:, :, i, i - 1].sum(0)
        return total / (batch * (n - 1))

    report = checks.check_previous_token_score(previous_token_one_short)
    assert "`range` with its end one lower" in str(report.diagnosis), report


def test_an_answer_like_no_mutant_gets_no_name():
    def stretched(X):
        e = (X - X.amax(dim=-1, keepdim=True)).exp()
        return e / e.sum(dim=-1, keepdim=True) * 1.5 + 0.25

    report = checks.check_softmax(stretched)
    assert not report
    assert report.mistake is None


def test_the_named_mutant_agrees_on_every_failing_case():
    report = checks.check_softmax(softmax_summed_over_columns)
    words = report.mistake.removeprefix("one slip: ")
    reference, found = _matching.reference_mutants("check_softmax")
    fns = [fn for m, fn in found if m.words == words]
    assert fns
    X = torch.randn(4, 5)
    assert all(torch.allclose(fn(X), softmax_summed_over_columns(X)) for fn in fns)
    assert not torch.allclose(reference(X), softmax_summed_over_columns(X))


def test_an_exception_matches_only_the_same_exception():
    raised = _core._Outcome(error=RuntimeError("shapes (2x3) and (2x3)"))
    assert _matching._alike(raised, _core._Outcome(error=RuntimeError("shapes (2x3) and (2x3)")))
    assert not _matching._alike(raised, _core._Outcome(error=RuntimeError("other")))
    assert not _matching._alike(raised, _core._Outcome(error=ValueError("shapes (2x3) and (2x3)")))
    assert not _matching._alike(raised, _core._Outcome(value=torch.zeros(2)))


def test_a_mutant_giving_the_right_answer_on_a_case_cannot_match():
    # The reader is a hair off on every case (the checker's tolerance is tighter
    # than the matching's); RoPE's mutants that give the reference's answers
    # agree with it within the matching's tolerance, but name no slip.
    reference, _ = _matching.reference_mutants("check_rope_scores")
    report = checks.check_rope_scores(lambda q, k: reference(q, k) * (1 + 3e-4))
    assert not report
    assert report.mistake is None


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_matching_a_wrong_answer_takes_under_two_seconds(name, monkeypatch):
    # Compiling the mutants (the first wrong answer of a process) included; CPU
    # time of this process, so that other work on the machine does not count.
    reference, _ = _matching.reference_mutants(name)

    def wrong(*args):
        out = reference(*args)
        if isinstance(out, torch.Tensor) and out.is_floating_point():
            return out * 1.37 + 0.11
        raise ValueError("not this")

    spent = []
    real = _matching.match

    def timed(*args, **kwargs):
        started = time.process_time()
        try:
            return real(*args, **kwargs)
        finally:
            spent.append(time.process_time() - started)

    monkeypatch.setattr(_matching, "match", timed)
    monkeypatch.delitem(_matching._compiled, name)
    report = getattr(checks, name)(wrong)
    assert not report
    assert spent and sum(spent) < 2.0


# ---------------------------------------------------------------- two slips readers met
# (named by catalogued mistakes, which main gained too while this branch was open)


def test_two_part_targets_every_examples_keys_with_unsqueeze():
    # Attention That Learns, Ex 3: values[:, first] written the natural way, with
    # .unsqueeze(1) to reach (batch, 1, d_v), was read as "a reshape in the wrong order".
    def every_example(values, first, second):
        half = values.shape[-1] // 2
        return torch.cat([values[:, first, :half], values[:, second, half:]], dim=-1).unsqueeze(1)

    report = checks.check_two_part_targets(every_example)
    assert report.mistake == "every example's keys, unsqueezed"
    assert "values[:, first]" in report.diagnosis
    assert "reshape" not in repr(report)


def test_mha_count_with_projections_per_head_is_named():
    # A reader's count: W_q, W_k, W_v of full size for every head, one W_o.
    report = checks.check_mha_parameter_count(
        lambda D, h, bias: 3 * h * D * D + D * D + ((3 * h + 1) * D if bias else 0)
    )
    assert report.mistake == "every head its own W_q, W_k, W_v"
    assert "4 times" not in repr(report)


def test_a_count_is_not_said_to_be_off_by_a_factor_that_one_case_made():
    # 2 times the right number for 40 hiddens and 5 heads, 1.5 times for 12 and 3:
    # the factor of 2 is a coincidence of the first case's sizes.
    report = checks.check_mha_parameter_count(
        lambda D, h, bias: (h + 3) * D * D + (4 * D if bias else 0)
    )
    assert report.mistake is None
    text = repr(report)
    assert "yours is 2 times the right number here but" in text
    assert "no single factor is off" in text
    assert "yours is 2 times the right number;" not in text


def test_a_block_count_off_by_varying_ratios_says_so():
    # W_2 counted as F x F: the error grows with F, no constant factor.
    report = checks.check_block_parameter_count(
        lambda D, F: 4 * D * D + 4 * D + D * F + F * F + F + D + 4 * D
    )
    assert report.mistake is None
    assert "no single factor is off" in repr(report)


def test_a_count_off_by_the_same_factor_in_every_case_says_the_factor():
    report = checks.check_mha_parameter_count(
        lambda D, h, bias: 7 * (4 * D * D + (4 * D if bias else 0))
    )
    assert report.mistake is None
    assert "yours is 7 times the right number" in repr(report)
    assert "no single factor" not in repr(report)
