"""Tests of attnbook.checks: each checker passes a correct answer and names the failing case."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnbook import checks, recall
from attnbook.checks import CheckReport

# ---------------------------------------------------------------- reader solutions
# Right answers, written independently of the library, and for every checker a
# list of known-wrong ones: the classic mistakes its chapter warns about. Each
# wrong one names the case that must catch it.


def softmax_ok(X):
    e = torch.exp(X - X.max(dim=-1, keepdim=True).values)
    return e / e.sum(dim=-1, keepdim=True)


def softmax_overflows(X):  # forgets to subtract the maximum
    return torch.exp(X) / torch.exp(X).sum(dim=-1, keepdim=True)


def softmax_wrong_axis(X):
    e = torch.exp(X - X.max())
    return e / e.sum(dim=0, keepdim=True)


def softmax_global_max(X):  # one shift for the whole tensor
    e = torch.exp(X - X.max())
    return e / e.sum(dim=-1, keepdim=True)


def softmax_row_min(X):
    e = torch.exp(X - X.min(dim=-1, keepdim=True).values)
    return e / e.sum(dim=-1, keepdim=True)


def softmax_row_mean(X):
    e = torch.exp(X - X.mean(dim=-1, keepdim=True))
    return e / e.sum(dim=-1, keepdim=True)


def softmax_by_max(X):  # divides by the largest exponential, not the sum
    e = torch.exp(X - X.max(dim=-1, keepdim=True).values)
    return e / e.max(dim=-1, keepdim=True).values


def normalize_ok(scores):
    return scores / scores.sum(dim=-1, keepdim=True)


def normalize_by_max(scores):
    return scores / scores.max(dim=-1, keepdim=True).values


def normalize_total(scores):  # the sum of the whole tensor
    return scores / scores.sum()


def normalize_columns(scores):
    return scores / scores.sum(dim=0, keepdim=True)


def normalize_softmax(scores):
    return torch.softmax(scores, dim=-1)


def normalize_no_keepdim(scores):  # broadcasts the sums along the wrong axis
    return scores / scores.sum(dim=-1)


def epanechnikov_ok(u):
    return 0.75 * torch.clamp(1 - u**2, min=0)


def epanechnikov_open_window(u):  # |u| < 1: the same kernel (0 at the edge either way)
    return torch.where(u.abs() < 1, 0.75 * (1 - u**2), torch.zeros_like(u))


def epanechnikov_closed_window(u):  # |u| <= 1
    return torch.where(u.abs() <= 1, 0.75 * (1 - u**2), torch.zeros_like(u))


def epanechnikov_triangular(u):  # the kernel some texts call Epanechnikov
    return torch.clamp(1 - u.abs(), min=0)


def epanechnikov_triangular_scaled(u):
    return 0.75 * torch.clamp(1 - u.abs(), min=0)


def epanechnikov_no_three_quarters(u):
    return torch.clamp(1 - u**2, min=0)


def epanechnikov_unclipped(u):
    return 0.75 * (1 - u**2)


def epanechnikov_window_on_u(u):  # tests u < 1, not |u| < 1
    return torch.where(u < 1, 0.75 * (1 - u**2), torch.zeros_like(u))


def epanechnikov_closed_boxcar(u):  # a flat window of height 3/4, edges included
    return 0.75 * (u.abs() <= 1).to(u.dtype)


def epanechnikov_flattened(u):  # a 1-D answer whatever the input's shape
    return (0.75 * torch.clamp(1 - u**2, min=0)).flatten()


def gaussian_weights_ok(x_query, x_train, width):
    rows = []
    for q in x_query.tolist():
        scores = [-(((q - x) / width) ** 2) / 2 for x in x_train.tolist()]
        top = max(scores)
        sims = [math.exp(s - top) for s in scores]
        rows.append([s / sum(sims) for s in sims])
    return torch.tensor(rows)


def gaussian_weights_no_half(x_query, x_train, width):
    scores = -(((x_query[:, None] - x_train[None, :]) / width) ** 2)
    return torch.softmax(scores, dim=-1)


def gaussian_weights_sigma_not_squared(x_query, x_train, width):
    scores = -((x_query[:, None] - x_train[None, :]) ** 2) / (2 * width)
    return torch.softmax(scores, dim=-1)


def gaussian_weights_inverse_width(x_query, x_train, width):  # w = 1/sigma confused
    scores = -(((x_query[:, None] - x_train[None, :]) * width) ** 2) / 2
    return torch.softmax(scores, dim=-1)


def gaussian_weights_over_queries(x_query, x_train, width):
    scores = -(((x_query[:, None] - x_train[None, :]) / width) ** 2) / 2
    return torch.softmax(scores, dim=0)


def gaussian_weights_exp_over_sum(x_query, x_train, width):  # no shift: 0 / 0
    sims = torch.exp(-(((x_query[:, None] - x_train[None, :]) / width) ** 2) / 2)
    return sims / sims.sum(dim=-1, keepdim=True)


def gaussian_weights_transposed(x_query, x_train, width):
    return gaussian_weights_ok(x_query, x_train, width).T


def _keep(X, valid_lens):
    batch, queries, keys = X.shape
    lens = valid_lens if valid_lens.dim() == 2 else valid_lens[:, None].expand(batch, queries)
    return torch.arange(keys) < lens[..., None]  # (batch, queries, keys)


def masked_softmax_ok(X, valid_lens):
    keep = _keep(X, valid_lens)
    weights = torch.softmax(X.masked_fill(~keep, torch.finfo(X.dtype).min), dim=-1)
    return torch.where(keep, weights, 0.0)


def masked_softmax_renorm_ok(X, valid_lens):  # the chapter's exercise 1, another right answer
    keep = _keep(X, valid_lens)
    shift = torch.where(keep, X, X.amin(dim=-1, keepdim=True)).amax(dim=-1, keepdim=True)
    e = torch.exp(torch.where(keep, X - shift, 0.0)) * keep
    return e / e.sum(dim=-1, keepdim=True).clamp_min(torch.finfo(X.dtype).tiny)


def masked_softmax_minus_1e6(X, valid_lens):  # the chapter's naive version
    return torch.softmax(X.masked_fill(~_keep(X, valid_lens), -1e6), dim=-1)


def masked_softmax_minus_inf(X, valid_lens):
    return torch.softmax(X.masked_fill(~_keep(X, valid_lens), float("-inf")), dim=-1)


def masked_softmax_minus_1e6_then_zero(X, valid_lens):  # right at length 0, not in float16
    keep = _keep(X, valid_lens)
    return torch.where(keep, torch.softmax(X.masked_fill(~keep, -1e6), dim=-1), 0.0)


def masked_softmax_minus_1e4_then_zero(X, valid_lens):  # fits float16, but not below all scores
    keep = _keep(X, valid_lens)
    return torch.where(keep, torch.softmax(X.masked_fill(~keep, -1e4), dim=-1), 0.0)


def masked_softmax_finfo_no_zeroing(X, valid_lens):  # uniform rows at length 0
    keep = _keep(X, valid_lens)
    return torch.softmax(X.masked_fill(~keep, torch.finfo(X.dtype).min), dim=-1)


def masked_softmax_minus_inf_nan_to_zero(X, valid_lens):  # right too: masked_fill stops the NaN
    keep = _keep(X, valid_lens)
    return torch.softmax(X.masked_fill(~keep, float("-inf")), dim=-1).nan_to_num(0.0)


def masked_softmax_zero_after(X, valid_lens):  # rows no longer sum to 1
    return torch.softmax(X, dim=-1) * _keep(X, valid_lens)


def masked_softmax_zero_after_renorm(X, valid_lens):  # 0 / 0, and huge masked scores win
    w = torch.softmax(X, dim=-1) * _keep(X, valid_lens)
    return w / w.sum(dim=-1, keepdim=True)


def masked_softmax_exp_times_mask(X, valid_lens):  # no shift: overflow, inf * 0
    e = torch.exp(X) * _keep(X, valid_lens)
    return e / e.sum(dim=-1, keepdim=True).clamp_min(torch.finfo(X.dtype).tiny)


def masked_softmax_where_after_exp(X, valid_lens):  # right values, NaN gradients
    keep = _keep(X, valid_lens)
    shift = torch.where(keep, X, X.amin(dim=-1, keepdim=True)).amax(dim=-1, keepdim=True)
    e = torch.where(keep, torch.exp(X - shift), 0.0)
    return e / e.sum(dim=-1, keepdim=True).clamp_min(torch.finfo(X.dtype).tiny)


def masked_softmax_additive_mask(X, valid_lens):  # X + (-1e9 on masked keys)
    keep = _keep(X, valid_lens)
    weights = torch.softmax(X + (~keep) * -1e9, dim=-1)
    return torch.where(keep, weights, 0.0)


def masked_softmax_upcast(X, valid_lens):  # right values, but float32 for float16 scores
    return masked_softmax_renorm_ok(X.float(), valid_lens)


def masked_softmax_detached(X, valid_lens):  # no gradient reaches the scores
    return masked_softmax_renorm_ok(X.detach(), valid_lens)


def masked_softmax_off_by_one(X, valid_lens):  # keeps key `length` as well
    keep = torch.arange(X.shape[-1]) <= _keep(X, valid_lens).sum(-1, keepdim=True)
    shift = torch.where(keep, X, X.amin(dim=-1, keepdim=True)).amax(dim=-1, keepdim=True)
    e = torch.exp(torch.where(keep, X - shift, 0.0)) * keep
    return e / e.sum(dim=-1, keepdim=True)


def masked_softmax_1d_only(X, valid_lens):
    mask = torch.arange(X.shape[-1])[None, None, :] < valid_lens[:, None, None]
    return torch.softmax(X.masked_fill(~mask, float("-inf")), dim=-1)


def masked_softmax_ignores_lengths(X, valid_lens):
    return torch.softmax(X, dim=-1)


def masked_softmax_in_place(X, valid_lens):
    keep = _keep(X, valid_lens)
    X.masked_fill_(~keep, 0.0)  # into the caller's tensor
    shift = torch.where(keep, X, X.amin(dim=-1, keepdim=True)).amax(dim=-1, keepdim=True)
    e = torch.exp(torch.where(keep, X - shift, 0.0)) * keep
    return e / e.sum(dim=-1, keepdim=True).clamp_min(torch.finfo(X.dtype).tiny)


def causal_ok(batch, queries):
    return torch.tensor([[i + 1 for i in range(queries)] for _ in range(batch)])


def causal_off_by_one(batch, queries):
    return torch.tensor([list(range(queries))] * batch)


def causal_transposed(batch, queries):
    return torch.arange(1, queries + 1)[:, None].expand(queries, batch)


def causal_counting_down(batch, queries):
    return torch.arange(queries, 0, -1).expand(batch, queries)


def causal_all_keys(batch, queries):
    return torch.full((batch, queries), queries)


def causal_one_dim(batch, queries):
    return torch.arange(1, queries + 1)


def sdp_ok(Q, K, V):
    scores = Q @ K.transpose(1, 2) / math.sqrt(Q.shape[-1])
    return torch.softmax(scores, dim=-1) @ V


def sdp_unscaled(Q, K, V):
    return torch.softmax(Q @ K.transpose(1, 2), dim=-1) @ V


def sdp_divided_by_d(Q, K, V):
    return torch.softmax(Q @ K.transpose(1, 2) / Q.shape[-1], dim=-1) @ V


def sdp_sqrt_of_keys(Q, K, V):  # the square root of the number of keys
    return torch.softmax(Q @ K.transpose(1, 2) / math.sqrt(K.shape[1]), dim=-1) @ V


def sdp_sqrt_of_queries(Q, K, V):
    return torch.softmax(Q @ K.transpose(1, 2) / math.sqrt(Q.shape[1]), dim=-1) @ V


def sdp_sqrt_of_value_size(Q, K, V):
    return torch.softmax(Q @ K.transpose(1, 2) / math.sqrt(V.shape[-1]), dim=-1) @ V


def sdp_scaled_after_softmax(Q, K, V):
    return torch.softmax(Q @ K.transpose(1, 2), dim=-1) @ V / math.sqrt(Q.shape[-1])


def sdp_softmax_over_queries(Q, K, V):
    return torch.softmax(Q @ K.transpose(1, 2) / math.sqrt(Q.shape[-1]), dim=1) @ V


def entropy_ok(p):
    return -torch.xlogy(p, p).sum(dim=-1)


def entropy_naive(p):
    return -(p * p.log()).sum(dim=-1)


def entropy_log2(p):
    return -torch.xlogy(p, p).sum(dim=-1) / math.log(2)


def entropy_no_minus(p):
    return torch.xlogy(p, p).sum(dim=-1)


def entropy_mean(p):
    return -torch.xlogy(p, p).mean(dim=-1)


def entropy_first_axis(p):
    return -torch.xlogy(p, p).sum(dim=0)


# checker: (right answers, {wrong answer: a case that must fail})
CHECKERS = {
    "check_softmax": (
        [softmax_ok],  # PyTorch's softmax is refused: see test_checks_shortcuts.py
        {
            softmax_overflows: "very large and very small scores",
            softmax_wrong_axis: "a random 10x10 matrix",
            softmax_global_max: "very large and very small scores",
            softmax_row_min: "rows whose scores lie 200 apart",
            softmax_row_mean: "rows whose scores lie 200 apart",
            softmax_by_max: "a random 10x10 matrix",
        },
    ),
    "check_normalize": (
        [normalize_ok],
        {
            normalize_by_max: "random nonnegative scores",
            normalize_total: "random nonnegative scores",
            normalize_columns: "random nonnegative scores",
            normalize_softmax: "one-hot rows (a database lookup)",
            normalize_no_keepdim: "a 3x3 matrix whose rows have different sums",
        },
    ),
    "check_epanechnikov": (
        [
            epanechnikov_ok,
            epanechnikov_open_window,
            epanechnikov_closed_window,
            lambda u: 3 / 4 * torch.relu(1 - u * u),
        ],
        {
            epanechnikov_triangular: "u = 0 gives 3/4",
            epanechnikov_triangular_scaled: "a parabola: 0.5625 at u = 0.5, 0.1425 at u = 0.9",
            epanechnikov_no_three_quarters: "u = 0 gives 3/4",
            epanechnikov_unclipped: "|u| > 1 gives exactly 0",
            epanechnikov_window_on_u: "|u| > 1 gives exactly 0",
            epanechnikov_closed_boxcar: "|u| = 1 gives 0",
            epanechnikov_flattened: "a 2-D tensor of distances",
        },
    ),
    "check_gaussian_weights": (
        [gaussian_weights_ok],
        {
            gaussian_weights_no_half: "width 1.0",
            gaussian_weights_sigma_not_squared: "width 0.3",
            gaussian_weights_inverse_width: "width 4.0",
            gaussian_weights_over_queries: "width 1.0",
            gaussian_weights_exp_over_sum: "width 0.05, queries far from every key",
            gaussian_weights_transposed: "width 1.0",
        },
    ),
    "check_masked_softmax": (
        # masked_softmax_ok fills with finfo.min, which exercise 1 refuses.
        [masked_softmax_renorm_ok, masked_softmax_minus_inf_nan_to_zero],
        {
            masked_softmax_minus_1e6: "a sequence of length 0 gives a row of zeros",
            masked_softmax_minus_inf: "a sequence of length 0 gives a row of zeros",
            masked_softmax_minus_1e6_then_zero: "float16 scores, lengths [2, 3]",
            masked_softmax_minus_1e4_then_zero: "real scores around -1e7",
            masked_softmax_zero_after: "1-D lengths [2, 3]",
            masked_softmax_zero_after_renorm: "masked scores of 1e30",
            masked_softmax_exp_times_mask: "masked scores of 1e30",
            masked_softmax_where_after_exp: "gradients with lengths",
            masked_softmax_additive_mask: "masked scores of 1e30",
            masked_softmax_upcast: "float16 scores, lengths [2, 3]",
            masked_softmax_detached: "gradients with lengths",
            masked_softmax_off_by_one: "1-D lengths [2, 3]",
            masked_softmax_1d_only: "2-D lengths [[1, 3], [2, 4]]",
            masked_softmax_ignores_lengths: "1-D lengths [2, 3]",
            masked_softmax_in_place: "1-D lengths [2, 3]",
        },
    ),
    "check_causal_lengths": (
        [causal_ok, lambda b, q: torch.arange(1, q + 1).repeat(b, 1)],
        {
            causal_off_by_one: "batch=1, queries=4",
            causal_transposed: "batch=4, queries=4",
            causal_counting_down: "batch=1, queries=4",
            causal_all_keys: "batch=1, queries=4",
            causal_one_dim: "batch=2, queries=3",
        },
    ),
    "check_scaled_dot_product": (
        [sdp_ok, lambda Q, K, V: torch.softmax(Q @ K.mT / Q.shape[-1] ** 0.5, dim=-1) @ V],
        {
            sdp_unscaled: "Q (3, 5, 16)",
            sdp_divided_by_d: "Q (2, 1, 2)",
            sdp_sqrt_of_keys: "Q (2, 1, 2)",
            sdp_sqrt_of_queries: "Q (1, 4, 64)",
            sdp_sqrt_of_value_size: "Q (2, 1, 2)",
            sdp_scaled_after_softmax: "Q (2, 1, 2)",
            sdp_softmax_over_queries: "Q (2, 1, 2)",
        },
    ),
    "check_entropy": (
        [entropy_ok, lambda p: torch.distributions.Categorical(probs=p).entropy()],
        {
            entropy_naive: "one-hot rows give 0",
            entropy_log2: "uniform over 8 keys gives log 8",
            entropy_no_minus: "uniform over 8 keys gives log 8",
            entropy_mean: "uniform over 8 keys gives log 8",
            entropy_first_axis: "uniform over 8 keys gives log 8",
        },
    ),
}

RIGHT = [(name, fn) for name, (rights, _) in CHECKERS.items() for fn in rights]
WRONG = [
    pytest.param(name, fn, case, id=f"{name}-{fn.__name__}")
    for name, (_, wrongs) in CHECKERS.items()
    for fn, case in wrongs.items()
]


def correct(name):
    return CHECKERS[name][0][0]


# ---------------------------------------------------------------- every checker


@pytest.mark.parametrize(("name", "fn"), RIGHT)
def test_checker_passes_a_correct_answer(name, fn):
    report = getattr(checks, name)(fn)
    assert isinstance(report, CheckReport)
    assert report.passed and bool(report), repr(report)
    assert report.failures == []
    assert len(report.lines) >= 4
    assert all(line.startswith("  ok    ") for line in report.lines)
    assert repr(report).splitlines()[0] == f"{name}: all {len(report.lines)} cases passed."


@pytest.mark.parametrize(("name", "fn", "case"), WRONG)
def test_checker_rejects_a_known_wrong_answer_and_names_the_case(name, fn, case):
    report = getattr(checks, name)(fn)
    assert not report.passed and not bool(report)
    assert any(case in failure for failure in report.failures), repr(report)
    text = repr(report)
    head = f"{name}: {len(report.failures)} of {len(report.lines)} cases failed."
    assert text.splitlines()[0] == head
    line = next(line for line in text.splitlines() if line.startswith("  FAIL  ") and case in line)
    # Every failing line of these checkers points back to the chapter, or the
    # report names the known mistake, pointing back to the chapter. (A checker
    # that reads the first failing case in plain words keeps only the pointer
    # of the case's hint.)
    if report.mistake is None:
        assert 'see "' in line
    else:
        assert 'see "' in report.diagnosis


@pytest.mark.parametrize("name", sorted(CHECKERS))
def test_every_case_of_a_checker_catches_some_wrong_answer_or_is_a_basic_case(name):
    """No case is dead weight: each fails for at least one known-wrong answer or
    for the answer that ignores its input entirely."""
    _, wrongs = CHECKERS[name]
    caught = set()
    for fn in wrongs:
        caught.update(getattr(checks, name)(fn).failures)
    total = len(getattr(checks, name)(correct(name)).lines)
    assert len(caught) >= total - 2, sorted(caught)


# Every checker of the package, Part II's included (test_checks_part2.py has
# their tables); the tests below that need no correct answer run over all of them.
EVERY_CHECKER = sorted(name for name in checks.__all__ if name.startswith("check_"))


@pytest.mark.parametrize("name", EVERY_CHECKER)
def test_checker_reports_exceptions(name):
    def raises(*args):
        raise ZeroDivisionError("oops")

    report = getattr(checks, name)(raises)
    assert len(report.failures) == len(report.lines)
    assert all("raised ZeroDivisionError: oops" in line for line in report.lines)


@pytest.mark.parametrize("name", EVERY_CHECKER)
def test_checker_rejects_non_callables(name):
    with pytest.raises(TypeError, match=r"fn must be a function, got 42"):
        getattr(checks, name)(42)


@pytest.mark.parametrize("name", sorted(CHECKERS))
def test_checker_reports_wrong_types_and_shapes(name):
    checker = getattr(checks, name)
    report = checker(lambda *args: [[0.0]])
    assert all("expected a torch.Tensor, got list" in line for line in report.lines)

    report = checker(lambda *args: torch.zeros(17, 1, 3))
    assert all("expected shape" in line and "got (17, 1, 3)" in line for line in report.lines)


@pytest.mark.parametrize("name", sorted(CHECKERS))
def test_every_case_points_to_the_section_that_explains_it(name):
    def raises(*args):
        raise ZeroDivisionError("oops")

    report = getattr(checks, name)(raises)
    chapters = (
        "Queries, Keys and Values",
        "Attention Pooling by Similarity",
        "Masked Softmax and Batched Attention",
        "Attention Scoring Functions",
    )
    for line in report.lines:
        assert 'see "' in line, line
        assert line.rstrip(")").endswith(chapters), line
    # Nothing to read in an exception's answer: the first failing case's hint
    # comes once, after the cases, with its pointer.
    assert report.diagnosis.startswith("  Hint: "), repr(report)
    assert report.diagnosis.rstrip(")").endswith(chapters), report.diagnosis


@pytest.mark.parametrize("name", sorted(CHECKERS))
def test_checker_catches_in_place_modification(name):
    def sneaky(*args):
        result = correct(name)(*[a.clone() if torch.is_tensor(a) else a for a in args])
        for a in args:
            if torch.is_tensor(a) and a.is_floating_point():
                a.add_(1.0)
        return result

    report = getattr(checks, name)(sneaky)
    if name == "check_causal_lengths":  # takes only integers: nothing to modify
        assert report.passed
        return
    assert not report.passed
    assert "the function modified its input in place" in repr(report)


@pytest.mark.parametrize("name", sorted(CHECKERS))
def test_checker_leaves_the_global_rng_alone(name):
    torch.manual_seed(0)
    state = torch.random.get_rng_state()
    getattr(checks, name)(correct(name))
    assert torch.equal(torch.random.get_rng_state(), state)


def _low_precision(line: str) -> bool:
    return "float16" in line  # also matches bfloat16


@pytest.mark.parametrize("name", sorted(CHECKERS))
@given(error=st.floats(1e-3, 1e3) | st.floats(-1e3, -1e-3))
@settings(max_examples=10)
def test_checker_rejects_any_visible_error(name, error):
    report = getattr(checks, name)(lambda *args: correct(name)(*args) + error)
    # float16 and bfloat16 answers are compared to a few units in their last place.
    lines = [line for line in report.lines if abs(error) >= 0.1 or not _low_precision(line)]
    assert lines and all(line.startswith("  FAIL  ") for line in lines)
    # An integer answer (lengths) that turns into floats is told its dtype first.
    # Other wrong values are placed by index, or, in the one line an explainer
    # reads, by the first wrong entry's axes (one place per line, not both).
    if name == "check_causal_lengths":
        wanted = ("expected an integer tensor",)
    else:
        wanted = ("at index", "the first wrong entry is at")
    assert all("expected" in line and any(w in line for w in wanted) for line in lines)
    assert not any("at index" in line and "the first wrong entry" in line for line in lines)


@pytest.mark.parametrize("name", sorted(CHECKERS))
@given(error=st.floats(-1e-7, 1e-7))
@settings(max_examples=10)
def test_checker_accepts_rounding_errors(name, error):
    if name == "check_causal_lengths":  # integers: no rounding, and floats are refused
        return

    def rounded(*args):
        out = correct(name)(*args)
        if out.dtype in (torch.float16, torch.bfloat16):
            return out
        return out.double() + error

    assert getattr(checks, name)(rounded)


# ---------------------------------------------------------------- specific mistakes


def test_check_softmax_hint_on_overflow():
    report = checks.check_softmax(softmax_overflows)
    assert report.failures == [
        "very large and very small scores",
        "rows whose scores lie 200 apart",
    ]
    assert "the result contains NaN" in repr(report)
    assert report.mistake == "no shift"
    assert "Likely mistake: this looks like exp(X) / sum(exp(X)) with no shift" in repr(report)
    assert 'see "Softmax without overflow" in Queries, Keys and Values' in repr(report)


def test_check_softmax_wrong_axis():
    report = checks.check_softmax(softmax_wrong_axis)
    assert "a random 10x10 matrix" in report.failures
    assert "expected" in repr(report) and "at index" in repr(report)


def test_check_masked_softmax_needs_2d_lengths():
    report = checks.check_masked_softmax(masked_softmax_1d_only)
    assert report.failures[0] == "2-D lengths [[1, 3], [2, 4]]"


def test_check_masked_softmax_ignoring_lengths_only_passes_full_rows():
    report = checks.check_masked_softmax(masked_softmax_ignores_lengths)
    assert "every key valid" not in report.failures
    assert len(report.failures) == len(report.lines) - 1


def test_check_masked_softmax_minus_1e6_fails_length_0_and_float16_only():
    report = checks.check_masked_softmax(masked_softmax_minus_1e6)
    text = repr(report)
    assert "a sequence of length 0 gives a row of zeros" in report.failures
    assert "float16 scores, lengths [2, 3]" in report.failures
    assert "bfloat16 scores, lengths [0, 3]" in report.failures
    assert "1-D lengths [2, 3]" not in report.failures
    assert 'see "A sequence of length 0" in Masked Softmax and Batched Attention' in text
    assert report.mistake == "fill -1e6"
    assert "Likely mistake: this looks like the chapter's first version" in text


def test_check_masked_softmax_never_recommends_a_fill():
    """Exercise 1 forbids a fill value: no hint and no diagnosis may suggest one."""

    def raises(*args):
        raise ZeroDivisionError("oops")

    texts = [repr(checks.check_masked_softmax(raises))]  # every case's hint
    texts += [m.diagnosis for m in checks.check_masked_softmax.mistakes]
    for text in texts:
        assert "fill with" not in text and "masked_fill" not in text, text
        assert "finfo(X.dtype).min" not in text, text


def test_check_masked_softmax_names_the_exercise_1_slips():
    """A maximum over all keys and zeroing after exp each get their own diagnosis."""

    def max_over_all_keys(X, valid_lens):  # the maximum includes the masked keys
        keep = _keep(X, valid_lens)
        e = torch.exp(X - X.max(dim=-1, keepdim=True).values) * keep
        return e / e.sum(dim=-1, keepdim=True).clamp_min(torch.finfo(X.dtype).tiny)

    def zero_after_exp(X, valid_lens):  # exp first, then the mask: inf * 0
        keep = _keep(X, valid_lens)
        shift = torch.where(keep, X, X.amin(dim=-1, keepdim=True)).amax(dim=-1, keepdim=True)
        e = torch.exp(X - shift) * keep
        return e / e.sum(dim=-1, keepdim=True).clamp_min(torch.finfo(X.dtype).tiny)

    report = checks.check_masked_softmax(max_over_all_keys)
    assert report.mistake == "max over all keys", repr(report)
    assert "(hint: " not in repr(report)
    report = checks.check_masked_softmax(zero_after_exp)
    assert report.mistake == "zeroing after exp", repr(report)
    assert "inf * 0 is NaN" in repr(report)


def _renorm_with(shift, divide):
    """Exercise 1's recipe with the shift and the last division given as functions."""

    def fn(X, valid_lens):
        keep = _keep(X, valid_lens)
        e = torch.exp(torch.where(keep, X - shift(X, keep), 0.0)) * keep
        return divide(e, e.sum(dim=-1, keepdim=True))

    return fn


def _over_all_keys(X, keep):
    return X.amax(dim=-1, keepdim=True)


_DIVISIONS = {
    "clamped": lambda e, total: e / total.clamp_min(torch.finfo(e.dtype).tiny),
    "nan_to_num": lambda e, total: torch.nan_to_num(e / total),
    "where": lambda e, total: torch.where(total > 0, e / total, 0.0),
    "a sum of 0 made 1": lambda e, total: e / torch.where(total == 0, 1.0, total),
    "a sum of 0 plus 1": lambda e, total: e / (total + (total == 0)),
    # Exact with the valid maximum (a valid row sums to at least e^0 = 1); a second
    # cold reader's guard, under which the slip went unnamed.
    "the sum clamped to at least 1": lambda e, total: e / total.clamp(min=1),
}


@pytest.mark.parametrize("division", list(_DIVISIONS))
def test_a_maximum_over_all_keys_is_named_however_a_length_0_row_is_handled(division):
    """The cold reader's slip: X.amax over all keys, with a length-0 row handled
    another way than the book's clamp; the report names it, says how to take the
    masked maximum, and points to exercise 1's "What is allowed"."""
    report = checks.check_masked_softmax(_renorm_with(_over_all_keys, _DIVISIONS[division]))
    text = repr(report)
    assert report.mistake.startswith("max over all keys"), text
    assert "  Likely mistake: this looks like a shift by the maximum over all keys" in text
    assert "torch.where(keep, X, other).amax(dim=-1, keepdim=True)" in report.diagnosis
    assert "float('-inf')" in report.diagnosis and "What is allowed" in report.diagnosis
    assert report.diagnosis.endswith('see "Exercises" in Masked Softmax and Batched Attention')
    assert "constant factor" not in text and "0 times the right one" not in text, text


@pytest.mark.parametrize("other", [-1e6, -1e4, -1000.0])
def test_a_fixed_number_as_other_of_the_masked_maximum_is_named_as_such(other):
    def shift(X, keep):
        return torch.where(keep, X, other).amax(dim=-1, keepdim=True)

    report = checks.check_masked_softmax(_renorm_with(shift, _DIVISIONS["clamped"]))
    assert report.failures == ["real scores around -1e7 (below a fill of -1e6)"], repr(report)
    assert report.mistake == "a fixed number in the masked maximum", repr(report)
    assert report.diagnosis.startswith("  Likely mistake: this looks like a masked maximum")
    assert "softmax" not in report.diagnosis and "Half precision" not in report.diagnosis
    assert 'see "Exercises" in Masked Softmax' in report.diagnosis


@pytest.mark.parametrize("division", list(_DIVISIONS))
@pytest.mark.parametrize("other", ["the row's minimum", "-inf"])
def test_both_allowed_others_of_the_masked_maximum_pass(other, division):
    """Exercise 1's "What is allowed" allows the row's minimum and -inf as other."""

    def shift(X, keep):
        fill = X.amin(dim=-1, keepdim=True) if other == "the row's minimum" else float("-inf")
        return torch.where(keep, X, fill).amax(dim=-1, keepdim=True)

    report = checks.check_masked_softmax(_renorm_with(shift, _DIVISIONS[division]))
    assert report.passed, repr(report)


def test_an_answer_of_zeros_is_not_read_as_a_constant_factor():
    """Two slips (a maximum over all keys, a clamp at 1e-12 that float16 rounds to
    0): no known mistake explains them, and the all-zero answer of the 1e30 case is
    read as underflow, not as "0 times the right one"."""
    fn = _renorm_with(_over_all_keys, lambda e, total: e / total.clamp(min=1e-12))
    report = checks.check_masked_softmax(fn)
    line = next(line for line in report.lines if "masked scores of 1e30" in line)
    assert report.mistake is None, repr(report)
    assert "your answer is 0 everywhere" in line and "won the maximum" in line, line
    assert "constant factor" not in repr(report), repr(report)
    assert not any("at index" in x and "first wrong entry" in x for x in report.lines)


def test_check_masked_softmax_minus_inf_reports_nan():
    report = checks.check_masked_softmax(masked_softmax_minus_inf)
    line = next(line for line in report.lines if "length 0 gives a row of zeros" in line)
    assert "the result contains NaN" in line


def test_check_masked_softmax_gradient_case_names_the_gradient():
    report = checks.check_masked_softmax(masked_softmax_where_after_exp)
    assert report.failures == ["gradients with lengths [[0, 2], [4, 1]] and masked scores of 1e30"]
    assert "gradient: the result contains NaN" in repr(report)
    report = checks.check_masked_softmax(masked_softmax_detached)
    assert report.failures[-1].startswith("gradients with lengths")
    assert "no gradient reaches the scores" in repr(report)


def test_check_masked_softmax_float16_dtype_is_kept():
    report = checks.check_masked_softmax(masked_softmax_upcast)
    assert "expected dtype torch.float16 (the input's dtype), got torch.float32" in repr(report)


def test_check_epanechnikov_names_each_classic_mistake():
    unclipped = checks.check_epanechnikov(epanechnikov_unclipped)
    assert unclipped.failures == [
        "u from -2.5 to 2.5",
        "|u| > 1 gives exactly 0",
        "negative u: the kernel is symmetric",  # it holds u = -2
        "a 2-D tensor of distances",
    ]
    triangular = checks.check_epanechnikov(epanechnikov_triangular)
    assert "u = 0 gives 3/4" in triangular.failures
    assert "a parabola: 0.5625 at u = 0.5, 0.1425 at u = 0.9" in triangular.failures
    assert "the triangular kernel" in repr(triangular)
    on_u = checks.check_epanechnikov(epanechnikov_window_on_u)
    assert "negative u: the kernel is symmetric" in on_u.failures
    assert "u = 0 gives 3/4" not in on_u.failures
    assert "integrate to 1" in repr(checks.check_epanechnikov(epanechnikov_no_three_quarters))


def test_check_causal_lengths_refuses_floats_of_the_right_values():
    """The exercise asks for an integer tensor (the teacher trial's float lengths
    passed): every case fails, saying which dtype was expected."""
    report = checks.check_causal_lengths(lambda b, q: causal_ok(b, q).float())
    assert not report.passed and len(report.failures) == len(report.lines)
    assert "expected an integer tensor (dtype torch.int64), got dtype torch.float32" in repr(report)
    assert checks.check_causal_lengths(lambda b, q: causal_ok(b, q).int())  # int32 is an integer


def test_check_entropy_hint():
    report = checks.check_entropy(entropy_naive)
    assert report.failures == ["one-hot rows give 0", "two keys of 1/2 and two zeros give log 2"]
    assert "torch.xlogy" in repr(report)


def test_check_entropy_points_to_the_section_on_how_sharp_a_row_is():
    """The entropy hints send the reader to the section that teaches how a softmax
    row goes from even to one-hot (what its entropy measures), not to "Exercises"."""
    section = 'see "What an unscaled score does to softmax" in Attention Scoring Functions'
    report = checks.check_entropy(entropy_naive)
    assert section in repr(report) and '"Exercises"' not in repr(report)
    for mistake in checks.check_entropy.mistakes:
        assert mistake.diagnosis.endswith(section), mistake.name


def test_check_scaled_dot_product_unscaled_fails_every_case():
    report = checks.check_scaled_dot_product(sdp_unscaled)
    assert len(report.failures) == len(report.lines)


def test_checker_reports_the_index_of_the_largest_error():
    def off_at_one_entry(X):
        out = softmax_ok(X)
        if X.shape == (10, 10):
            out = out.clone()
            out[3, 7] += 0.5
        return out

    report = checks.check_softmax(off_at_one_entry)
    assert report.failures == ["a random 10x10 matrix"]
    # The comparison names the entry with the largest error by its index ...
    X = torch.randn(10, 10)
    assert "at index (3, 7)" in checks._compare(off_at_one_entry(X), softmax_ok(X))
    # ... and the failing line, which the explainer reads, names it once, by its axes.
    assert "the first wrong entry is at row 3, column 7" in repr(report)
    assert "at index" not in repr(report)


@given(error=st.floats(1e-3, 10))
def test_checker_tolerance_rejects_visible_errors(error):
    report = checks.check_normalize(lambda s: normalize_ok(s) + error)
    assert len(report.failures) == len(report.lines)


@given(error=st.floats(0, 1e-6))
def test_checker_tolerance_accepts_rounding(error):
    assert checks.check_normalize(lambda s: normalize_ok(s).double() + error)


def test_run_accepts_cases_with_and_without_hints():
    """The tuple format that later chapters' checkers build on."""
    report = checks._run(
        "check_demo",
        lambda x: x * 2,
        [
            ("doubles", (torch.ones(2),), torch.full((2,), 2.0)),
            ("wrong on purpose", (torch.ones(2),), torch.zeros(2), "a hint"),
            ("plain", (torch.ones(2),), torch.zeros(2)),
        ],
    )
    assert report.failures == ["wrong on purpose", "plain"]
    assert report.lines[0] == "  ok    doubles"
    assert report.lines[1].endswith("(hint: a hint)")
    assert report.lines[2] == "  FAIL  plain: at index (0,) expected 0, got 2"


def test_low_precision_answers_use_a_dtype_tolerance():
    expected = torch.tensor([0.3333, 0.6667], dtype=torch.float16)
    close = torch.tensor([0.3330, 0.6670], dtype=torch.float16)
    assert checks._compare(close, expected) is None
    assert "at index" in checks._compare(close + 0.05, expected)
    assert "expected dtype torch.float16" in checks._compare(close.float(), expected)


# ---------------------------------------------------------------- CheckReport


def test_check_report_passed():
    report = CheckReport("check_demo", ["  ok    first", "  ok    second"])
    assert report.passed and bool(report)
    assert repr(report) == "check_demo: all 2 cases passed.\n  ok    first\n  ok    second"


def test_check_report_failed():
    report = CheckReport(
        "check_demo", ["  ok    first", "  FAIL  second: wrong"], failures=["second"]
    )
    assert not report.passed and not bool(report)
    assert repr(report) == "check_demo: 1 of 2 cases failed.\n  ok    first\n  FAIL  second: wrong"


@given(
    outcomes=st.lists(st.booleans(), max_size=8),
    name=st.from_regex(r"check_[a-z_]{1,12}", fullmatch=True),
)
def test_check_report_header_counts(outcomes, name):
    lines = [f"  {'ok   ' if ok else 'FAIL '} case {i}" for i, ok in enumerate(outcomes)]
    failures = [f"case {i}" for i, ok in enumerate(outcomes) if not ok]
    report = CheckReport(name, lines, failures)
    assert bool(report) == report.passed == all(outcomes)
    text = repr(report).splitlines()
    assert text[1:] == lines
    if all(outcomes):
        assert text[0] == f"{name}: all {len(outcomes)} cases passed."
    else:
        assert text[0] == f"{name}: {len(failures)} of {len(outcomes)} cases failed."


def test_check_report_defaults_are_not_shared():
    a, b = CheckReport("a"), CheckReport("b")
    a.lines.append("x")
    a.failures.append("x")
    assert b.lines == [] and b.failures == []
    assert repr(b) == "b: all 0 cases passed."


# ---------------------------------------------------------------- attention that learns


def accuracy_ok(weights, index):
    hits = [row.tolist().index(max(row.tolist())) == int(i) for row, i in zip(weights, index)]
    return torch.tensor(sum(hits) / len(hits))


def accuracy_wrong_axis(weights, index):
    return (weights.argmax(0) == index).float().mean()


def accuracy_counts(weights, index):
    return (weights.argmax(-1) == index).float().sum()


def accuracy_only_key_0(weights, index):  # all-or-nothing would pass a case with 0 hits
    return ((weights.argmax(-1) == index) & (index == 0)).float().mean()


def accuracy_smallest(weights, index):
    return (weights.argmin(-1) == index).float().mean()


def test_check_right_key_accuracy_accepts_a_loop_and_the_library():
    report = checks.check_right_key_accuracy(accuracy_ok)
    assert report.passed, repr(report)
    assert len(report.lines) == 4
    # One contract: the library's function is a right answer to the exercise.
    assert checks.check_right_key_accuracy(recall.right_key_accuracy)


def test_check_right_key_accuracy_random_case_counts():
    """The random case has some right rows and some wrong ones (not 0 hits)."""
    report = checks.check_right_key_accuracy(accuracy_ok)
    (line,) = [line for line in report.lines if "random weights" in line]
    hits = int(line.split(", ")[-1].split(" of them")[0])
    assert 2 <= hits <= 4
    # A function that counts only the rows with the right key at index 0 fails it.
    assert "random weights" in " ".join(
        checks.check_right_key_accuracy(accuracy_only_key_0).failures
    )


@pytest.mark.parametrize(
    ("wrong", "failing", "hint"),
    [
        (accuracy_wrong_axis, "a square (3, 3) batch", "last axis"),
        (
            accuracy_counts,
            "4 rows, the right key largest in 2 of them",
            "divide by the number of rows",
        ),
        (accuracy_smallest, "every row right", None),
    ],
)
def test_check_right_key_accuracy_rejects_mistakes(wrong, failing, hint):
    report = checks.check_right_key_accuracy(wrong)
    assert not report.passed
    assert failing in report.failures
    if hint:
        assert hint in repr(report)


def accuracy_mean_weight(weights, index):  # the right key's mean weight, not the share of rows
    return weights[torch.arange(len(index)), index].mean()


def accuracy_mean_weight_gathered(weights, index):
    return weights.gather(-1, index[:, None]).mean()


@pytest.mark.parametrize("wrong", [accuracy_mean_weight, accuracy_mean_weight_gathered])
def test_check_right_key_accuracy_names_the_mean_weight_on_the_right_key(wrong):
    """A reader averaged the right key's weight and was told to count each part again."""
    report = checks.check_right_key_accuracy(wrong)
    assert not report.passed
    text = repr(report)
    assert "mean weight on the right key" in text and "largest weight" in text
    assert "count each part again" not in text  # the counting fallback does not apply here


def test_check_right_key_accuracy_never_uses_the_counting_fallback():
    """An unknown slip whose factor differs by case is read case by case, not as a miscount."""
    report = checks.check_right_key_accuracy(
        lambda w, index: (w.argmax(-1) == index).float().mean() * w.shape[0] / (w.shape[0] + 1)
    )
    assert not report.passed and report.mistake is None
    text = repr(report)
    assert "count each part again" not in text and "no single factor" not in text
    assert "0.8 times the right number" in text  # 4 rows: 4 / 5 of the right 0.5


def two_part_ok(values, first, second):
    half = values.shape[-1] // 2
    rows = []
    for b in range(values.shape[0]):
        rows.append(torch.cat([values[b, first[b], :half], values[b, second[b], half:]]))
    return torch.stack(rows)[:, None, :]


def two_part_swapped(values, first, second):
    return two_part_ok(values, second, first)


def two_part_whole_first(values, first, second):
    return values[torch.arange(values.shape[0]), first][:, None, :]


def two_part_every_example(values, first, second):  # fancy indexing without the batch index
    half = values.shape[-1] // 2
    return torch.cat([values[:, first, :half], values[:, second, half:]], -1)[:, :1]


def two_part_every_example_unsqueezed(values, first, second):  # the same slip, (b, 1, b, d_v)
    half = values.shape[-1] // 2
    return torch.cat([values[:, first, :half], values[:, second, half:]], -1).unsqueeze(1)


def test_check_two_part_targets_names_the_missing_batch_index_however_it_is_shaped():
    """A student reached (batch, 1, d_v) with .unsqueeze(1) and was told of a reshape."""
    for wrong in (two_part_every_example, two_part_every_example_unsqueezed):
        report = checks.check_two_part_targets(wrong)
        assert report.mistake is not None and report.mistake.startswith("every example's keys")
        assert "values[torch.arange(batch), first]" in report.diagnosis, repr(report)
        assert 'see "Several heads"' in report.diagnosis, repr(report)


def test_check_two_part_targets_accepts_a_loop():
    report = checks.check_two_part_targets(two_part_ok)
    assert report.passed, repr(report)
    assert len(report.lines) == 3


@pytest.mark.parametrize("wrong", [two_part_swapped, two_part_whole_first, two_part_every_example])
def test_check_two_part_targets_rejects_mistakes(wrong):
    report = checks.check_two_part_targets(wrong)
    assert not report.passed
    assert "values (4, 5, 6)" in report.failures
    assert report.mistake is not None and 'see "' in report.diagnosis, repr(report)


def test_check_right_key_accuracy_names_a_mean_of_booleans():
    """(argmax == index).mean() raises in torch; the report reads the error and names it."""
    report = checks.check_right_key_accuracy(lambda w, i: (w.argmax(-1) == i).mean())
    assert report.mistake == "mean of booleans", repr(report)
    assert all(".float()" in line for line in report.lines), repr(report)
    assert "Likely mistake: this looks like .mean() on the booleans" in repr(report)
