"""Tests of chapter 12's checkers (Attention at Scale) in attnbook.checks.

Each checker must accept a correct answer written independently of the library
and reject every answer in its list of known mistakes, naming a failing case.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from attnbook import checks

# ---------------------------------------------------------------- reader solutions


def memory_ok(n, num_heads, dtype):
    return n * n * num_heads * torch.tensor([], dtype=dtype).element_size()


def memory_in_bits(n, num_heads, dtype):
    return 8 * memory_ok(n, num_heads, dtype)


def memory_one_head(n, num_heads, dtype):
    return memory_ok(n, 1, dtype)


def memory_always_float32(n, num_heads, dtype):
    return n * n * num_heads * 4


def online_ok(X, block_size):
    m = torch.full(X.shape[:-1], -math.inf, dtype=X.dtype)
    l = torch.zeros(X.shape[:-1], dtype=X.dtype)
    for start in range(0, X.shape[-1], block_size):
        block = X[..., start : start + block_size]
        new = torch.maximum(m, block.amax(-1))
        shift = torch.where(torch.isinf(new), torch.zeros_like(new), new)
        l = l * torch.exp(m - shift) + torch.exp(block - shift[..., None]).sum(-1)
        m = new
    return torch.exp(X - m[..., None]) / l[..., None]


def online_no_rescale(X, block_size):  # forgets exp(m_old - m_new)
    m = torch.full(X.shape[:-1], -math.inf, dtype=X.dtype)
    l = torch.zeros(X.shape[:-1], dtype=X.dtype)
    for start in range(0, X.shape[-1], block_size):
        block = X[..., start : start + block_size]
        m = torch.maximum(m, block.amax(-1))
        l = l + torch.exp(block - m[..., None]).sum(-1)
    return torch.exp(X - m[..., None]) / l[..., None]


def online_no_max(X, block_size):  # plain exp: overflows
    l = torch.zeros(X.shape[:-1], dtype=X.dtype)
    for start in range(0, X.shape[-1], block_size):
        l = l + torch.exp(X[..., start : start + block_size]).sum(-1)
    return torch.exp(X) / l[..., None]


def online_nan_on_masked_block(X, block_size):  # exp(-inf - (-inf)) = NaN
    m = torch.full(X.shape[:-1], -math.inf, dtype=X.dtype)
    l = torch.zeros(X.shape[:-1], dtype=X.dtype)
    for start in range(0, X.shape[-1], block_size):
        block = X[..., start : start + block_size]
        new = torch.maximum(m, block.amax(-1))
        l = l * torch.exp(m - new) + torch.exp(block - new[..., None]).sum(-1)
        m = new
    return torch.exp(X - m[..., None]) / l[..., None]


def tiled(q, k, v, block_size, visible=lambda cols, rows: cols <= rows, last=lambda q1: q1):
    b, n, d = q.shape
    out = torch.zeros(b, n, v.shape[-1], dtype=v.dtype)
    for q0 in range(0, n, block_size):
        q1 = min(q0 + block_size, n)
        rows = torch.arange(q0, q1)[:, None]
        m = torch.full((b, q1 - q0), -math.inf, dtype=q.dtype)
        l = torch.zeros(b, q1 - q0, dtype=q.dtype)
        acc = torch.zeros(b, q1 - q0, v.shape[-1], dtype=v.dtype)
        for k0 in range(0, min(last(q1), n), block_size):
            k1 = min(k0 + block_size, n)
            s = q[:, q0:q1] @ k[:, k0:k1].transpose(1, 2) / math.sqrt(d)
            s = s.masked_fill(~visible(torch.arange(k0, k1)[None, :], rows), -math.inf)
            new = torch.maximum(m, s.amax(-1))
            shift = torch.where(torch.isinf(new), torch.zeros_like(new), new)
            p = torch.exp(s - shift[..., None])
            scale = torch.exp(m - shift)
            l = l * scale + p.sum(-1)
            acc = acc * scale[..., None] + p @ v[:, k0:k1]
            m = new
        out[:, q0:q1] = torch.where(l[..., None] > 0, acc / l.clamp_min(1e-30)[..., None], 0.0)
    return out


def tiled_ok(q, k, v, block_size):
    return tiled(q, k, v, block_size)


def tiled_off_by_one(q, k, v, block_size):  # j < i: a query does not see itself
    return tiled(q, k, v, block_size, visible=lambda cols, rows: cols < rows)


def tiled_one_too_far(q, k, v, block_size):  # j <= i + 1: sees the next key too
    return tiled(
        q, k, v, block_size, visible=lambda cols, rows: cols <= rows + 1, last=lambda q1: q1 + 1
    )


def tiled_skips_diagonal_tiles(q, k, v, block_size):  # stops before the diagonal tile
    return tiled(q, k, v, block_size, last=lambda q1: q1 - block_size)


def tiled_not_causal(q, k, v, block_size):
    return F.scaled_dot_product_attention(q, k, v)


# name -> (correct answer, [(known mistake, a case it must fail)])
CHECKERS = {
    "check_attention_memory": (
        memory_ok,
        [
            (memory_in_bits, "n=8192, num_heads=32, torch.float16"),
            (memory_one_head, "n=4096, num_heads=16, torch.bfloat16"),
            (memory_always_float32, "n=2048, num_heads=8, torch.float64"),
        ],
    ),
    "check_online_softmax": (
        online_ok,
        [
            (online_no_rescale, "rows whose maximum grows in every block, block_size 3"),
            (online_no_max, "scores of size 1000 in float64, block_size 2"),
            (online_nan_on_masked_block, "masked entries (-inf), block_size 3"),
        ],
    ),
    "check_tiled_causal": (
        tiled_ok,
        [
            (tiled_off_by_one, "n=8, d=4, block_size=4"),
            (tiled_one_too_far, "n=10, d=8, block_size=3"),
            (tiled_skips_diagonal_tiles, "n=6, d=2, block_size=1"),
            (tiled_not_causal, "n=5, d=4, block_size=8"),
        ],
    ),
}

MISTAKES = [
    pytest.param(name, broken, case, id=f"{name}-{broken.__name__}")
    for name, (_, wrongs) in CHECKERS.items()
    for broken, case in wrongs
]


@pytest.mark.parametrize("name", sorted(CHECKERS))
def test_checker_passes_a_correct_answer(name):
    correct, _ = CHECKERS[name]
    report = getattr(checks, name)(correct)
    assert report.passed and report.failures == [], repr(report)
    assert len(report.lines) >= 4
    assert repr(report).splitlines()[0] == f"{name}: all {len(report.lines)} cases passed."


@pytest.mark.parametrize(("name", "broken", "case"), MISTAKES)
def test_checker_rejects_a_known_mistake_and_names_the_case(name, broken, case):
    report = getattr(checks, name)(broken)
    assert not report.passed
    assert case in report.failures, repr(report)
    line = next(
        line for line in repr(report).splitlines() if line.startswith("  FAIL  ") and case in line
    )
    # Each of these independently written mistakes is one the checker knows: it is
    # named in one line (in place of the case hints), with the section to read.
    text = repr(report)
    assert "(hint: " not in line and "Likely mistake" in text
    assert text.rstrip().endswith("in Attention at Scale")


def test_the_checkers_are_in_the_package():
    assert {*CHECKERS} <= set(checks.__all__)


def test_online_softmax_without_rescaling_passes_only_the_single_block_case():
    report = checks.check_online_softmax(online_no_rescale)
    assert [line for line in report.lines if line.startswith("  ok")] == [
        "  ok    block_size larger than the row"
    ]


def test_online_softmax_rejects_torch_softmax():
    report = checks.check_online_softmax(lambda X, block_size: F.softmax(X, dim=-1))
    assert len(report.failures) == len(report.lines)
    assert report.mistake == "torch.softmax"
    assert "it calls torch.softmax" in repr(report)


@pytest.mark.parametrize(
    "shortcut",
    [
        lambda q, k, v, b: F.scaled_dot_product_attention(q, k, v, is_causal=True),
        lambda q, k, v, b: F.scaled_dot_product_attention(
            q[:, None], k[:, None], v[:, None], is_causal=True
        )[:, 0],  # 4-D: the fused CPU kernel, whose scratch memory the tracker cannot see
        lambda q, k, v, b: (
            torch.softmax(
                (q @ k.transpose(1, 2) / math.sqrt(q.shape[-1])).masked_fill(
                    torch.ones(q.shape[1], q.shape[1], dtype=torch.bool).triu(1), -math.inf
                ),
                dim=-1,
            )
            @ v
        ),
    ],
    ids=["sdpa", "sdpa-4d", "softmax"],
)
def test_tiled_causal_rejects_sdpa_and_softmax(shortcut):
    report = checks.check_tiled_causal(shortcut)
    assert len(report.failures) == len(report.lines)
    assert report.mistake == "SDPA"


def test_tiled_causal_rejects_the_whole_matrix_built_by_hand():
    def by_hand(q, k, v, block_size):
        n = q.shape[1]
        scores = q @ k.transpose(1, 2) / math.sqrt(q.shape[-1])
        scores = scores.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), -math.inf)
        weights = torch.exp(scores - scores.amax(-1, keepdim=True))
        return (weights / weights.sum(-1, keepdim=True)) @ v

    report = checks.check_tiled_causal(by_hand)
    assert report.failures == ["n=256, d=8, block_size=32: no tensor near n x n"]
    assert report.mistake == "the whole matrix"


def test_tiled_causal_off_by_one_fails_every_case():
    report = checks.check_tiled_causal(tiled_off_by_one)
    assert len(report.failures) == len(report.lines)


@pytest.mark.parametrize("name", sorted(CHECKERS))
def test_checker_reports_wrong_types(name):
    report = getattr(checks, name)(lambda *args: [[0.0]])
    assert len(report.failures) == len(report.lines)


@pytest.mark.parametrize("name", sorted(CHECKERS))
def test_checker_leaves_the_global_rng_alone(name):
    correct, _ = CHECKERS[name]
    torch.manual_seed(0)
    state = torch.random.get_rng_state()
    getattr(checks, name)(correct)
    assert torch.equal(torch.random.get_rng_state(), state)


@pytest.mark.parametrize("name", sorted(CHECKERS))
@given(error=st.floats(1e-2, 1e3) | st.floats(-1e3, -1e-2))
@settings(max_examples=10, deadline=None)
def test_checker_rejects_any_visible_error(name, error):
    correct, _ = CHECKERS[name]
    if name == "check_attention_memory":  # a relative error of at least 1 %
        report = getattr(checks, name)(lambda *a: correct(*a) * (1 + abs(error) / 10))
    else:
        report = getattr(checks, name)(lambda *args: correct(*args) + error)
    assert len(report.failures) == len(report.lines)


@pytest.mark.parametrize("name", sorted(CHECKERS))
@given(error=st.floats(-1e-7, 1e-7))
@settings(max_examples=10, deadline=None)
def test_checker_accepts_rounding_errors(name, error):
    correct, _ = CHECKERS[name]
    if name == "check_attention_memory":
        assert getattr(checks, name)(lambda *a: correct(*a) * (1 + error))
    else:
        assert getattr(checks, name)(lambda *args: correct(*args).double() + error)


def test_checkers_catch_in_place_modification():
    def sneaky(X, block_size):
        out = online_ok(X.clone(), block_size)
        X.mul_(2)
        return out

    assert "modified its input in place" in repr(checks.check_online_softmax(sneaky))


def test_attention_memory_accepts_tensors_and_rejects_non_numbers():
    assert checks.check_attention_memory(lambda *a: torch.tensor(memory_ok(*a)))
    report = checks.check_attention_memory(lambda *a: str(memory_ok(*a)))
    assert "expected a number of bytes, got str" in repr(report)


# ---------------------------------------------------------------- stability slips, every seed
# Each is the book's solution with one slip a mutation test found the old cases
# accepted: they are right in exact arithmetic (any shift cancels), wrong in float32.


def online_slip(start=-math.inf, reduce=lambda block: block.amax(dim=-1)):
    def online_softmax(X, block_size):
        m = torch.full(X.shape[:-1], start, dtype=X.dtype)
        l = torch.zeros(X.shape[:-1], dtype=X.dtype)
        for i in range(0, X.shape[-1], block_size):
            block = X[..., i : i + block_size]
            m_new = torch.maximum(m, reduce(block))
            safe = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)
            l = l * torch.exp(m - safe) + torch.exp(block - safe.unsqueeze(-1)).sum(dim=-1)
            m = m_new
        return torch.exp(X - m.unsqueeze(-1)) / l.unsqueeze(-1)

    return online_softmax


def tiled_slip(start=-math.inf, reduce=lambda s: s.amax(dim=-1), guard=True):
    def tiled_causal(queries, keys, values, block_size):
        b, n, d = queries.shape
        out = torch.zeros(b, n, values.shape[-1], dtype=values.dtype)
        for q0 in range(0, n, block_size):
            q1 = min(q0 + block_size, n)
            rows = torch.arange(q0, q1).unsqueeze(1)
            m = torch.full((b, q1 - q0), start, dtype=queries.dtype)
            l = torch.zeros(b, q1 - q0, dtype=queries.dtype)
            acc = torch.zeros(b, q1 - q0, values.shape[-1], dtype=values.dtype)
            for k0 in range(0, q1, block_size):
                k1 = min(k0 + block_size, n)
                cols = torch.arange(k0, k1).unsqueeze(0)
                s = queries[:, q0:q1] @ keys[:, k0:k1].transpose(1, 2) / math.sqrt(d)
                s = s.masked_fill(cols > rows, -math.inf)
                m_new = torch.maximum(m, reduce(s))
                safe = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)
                p = torch.exp(s - safe.unsqueeze(-1))
                rescale = torch.exp(m - safe)
                l = l * rescale + p.sum(dim=-1)
                acc = acc * rescale.unsqueeze(-1) + p @ values[:, k0:k1]
                m = m_new
            if guard:
                out[:, q0:q1] = torch.where(
                    l.unsqueeze(-1) > 0, acc / l.clamp_min(1e-30).unsqueeze(-1), 0.0
                )
            else:  # a plain acc / l, as a reader may well write it
                out[:, q0:q1] = acc / l.unsqueeze(-1)
        return out

    return tiled_causal


STABILITY_SLIPS = [
    ("check_online_softmax", online_slip(start=0.0), "maximum starts at 0"),
    ("check_online_softmax", online_slip(reduce=lambda b: b.sum(-1)), "a sum for the maximum"),
    ("check_online_softmax", online_slip(reduce=lambda b: b.mean(-1)), "a mean for the maximum"),
    ("check_tiled_causal", tiled_slip(start=0.0), "maximum starts at 0"),
    ("check_tiled_causal", tiled_slip(reduce=lambda s: s.sum(-1)), "a sum for the maximum"),
    ("check_tiled_causal", tiled_slip(reduce=lambda s: s.mean(-1)), "a mean for the maximum"),
    ("check_tiled_causal", tiled_slip(start=0.0, guard=False), "maximum starts at 0, 0 / 0"),
    (
        "check_tiled_causal",
        tiled_slip(reduce=lambda s: s.sum(-1), guard=False),
        "a sum for the maximum, 0 / 0",
    ),
    (
        "check_tiled_causal",
        tiled_slip(reduce=lambda s: s.mean(-1), guard=False),
        "a mean for the maximum, 0 / 0",
    ),
]


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize(
    ("name", "slip", "mistake"), STABILITY_SLIPS, ids=[f"{n}-{m}" for n, _, m in STABILITY_SLIPS]
)
def test_a_running_maximum_that_is_not_one_is_rejected_and_named_under_every_seed(
    name, slip, mistake, seed
):
    report = getattr(checks, name)(slip, seed=seed)
    assert not report.passed, repr(report)
    assert report.mistake == mistake, repr(report)


@pytest.mark.parametrize("seed", range(5))
def test_the_slips_break_on_the_stability_rows_which_the_right_answers_pass(seed):
    # What the slips get wrong: a row near -200 (m = 0: 0 / 0) and large scores.
    negative = -200 + torch.randn(2, 9)
    assert torch.isnan(online_slip(start=0.0)(negative, 4)).all()
    forties = torch.full((1, 12), 40.0)
    assert torch.isnan(online_slip(reduce=lambda b: b.sum(-1))(forties, 4)).all()
    for name in ("check_online_softmax", "check_tiled_causal"):
        report = getattr(checks, name)(CHECKERS[name][0], seed=seed)
        assert report.passed, repr(report)
        assert sum("-200" in line for line in report.lines) == 1
        assert sum("large scores" in line for line in report.lines) == 1


def tiled_off_by_one_unguarded(queries, keys, values, block_size):
    """The book's solution with strict=True (j < i) and a plain acc / l at the end."""
    b, n, d = queries.shape
    out = torch.zeros(b, n, values.shape[-1], dtype=values.dtype)
    for q0 in range(0, n, block_size):
        q1 = min(q0 + block_size, n)
        rows = torch.arange(q0, q1).unsqueeze(1)
        m = torch.full((b, q1 - q0), -math.inf, dtype=queries.dtype)
        l = torch.zeros(b, q1 - q0, dtype=queries.dtype)
        acc = torch.zeros(b, q1 - q0, values.shape[-1], dtype=values.dtype)
        for k0 in range(0, q1, block_size):
            k1 = min(k0 + block_size, n)
            cols = torch.arange(k0, k1).unsqueeze(0)
            scores = queries[:, q0:q1] @ keys[:, k0:k1].transpose(1, 2) / math.sqrt(d)
            scores = scores.masked_fill(~(cols < rows), -math.inf)
            m_new = torch.maximum(m, scores.amax(dim=-1))
            safe = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)
            p = torch.exp(scores - safe.unsqueeze(-1))
            rescale = torch.exp(m - safe)
            l = l * rescale + p.sum(dim=-1)
            acc = acc * rescale.unsqueeze(-1) + p @ values[:, k0:k1]
            m = m_new
        out[:, q0:q1] = acc / l.unsqueeze(-1)
    return out


def test_the_off_by_one_mask_is_named_even_with_an_unguarded_division():
    """Cold reader, part 3: j < i with acc / l gave only "the result contains NaN"."""
    report = checks.check_tiled_causal(tiled_off_by_one_unguarded)
    assert not report.passed
    assert report.mistake == "off by one, 0 / 0", repr(report)
    assert "keep key j when j <= i" in report.diagnosis


def test_tiled_causal_hints_use_the_chapters_names():
    """Cold reader: a hint said ``acc / l`` where the chapter writes the running
    output u and the running sum lambda (``l`` in its code)."""
    diagnoses = [m.diagnosis for m in checks.check_tiled_causal.mistakes]
    assert not [text for text in diagnoses if "acc" in text]
    named = {m.name: m.diagnosis for m in checks.check_tiled_causal.mistakes}
    assert "return u / l" in named["not divided by the sum"]
    assert "u / l (the running output u over the running sum lambda" in named["off by one, 0 / 0"]
    for name in ("maximum starts at 0", "a sum for the maximum", "a mean for the maximum"):
        assert "u / l of the running output by the running sum" in named[f"{name}, 0 / 0"]


# ---------------------------------------------------------------- two slips a cold reader made


def tiled_by_a_reader(skip_diagonal=False, mask_diagonal=True, guard=False):
    """Tiled causal attention written from the chapter's words, not from the book's
    solution: its own names, no unsqueeze, a plain u / lambda at the end unless
    ``guard``. ``skip_diagonal`` breaks at the diagonal tile (``if c0 >= r0``);
    ``mask_diagonal=False`` skips the right tiles but masks nothing inside them."""

    def tiled_causal(queries, keys, values, block_size):
        b, n, d = queries.shape
        out = torch.empty(b, n, values.shape[-1], dtype=values.dtype)
        for r0 in range(0, n, block_size):
            r1 = min(r0 + block_size, n)
            m = torch.full((b, r1 - r0), -math.inf, dtype=queries.dtype)
            lam = torch.zeros(b, r1 - r0, dtype=queries.dtype)
            u = torch.zeros(b, r1 - r0, values.shape[-1], dtype=values.dtype)
            for c0 in range(0, n, block_size):
                if skip_diagonal:
                    if c0 >= r0:
                        break
                elif c0 > r1 - 1:  # the tile's first key comes after its last query
                    break
                c1 = min(c0 + block_size, n)
                s = queries[:, r0:r1] @ keys[:, c0:c1].transpose(1, 2) / math.sqrt(d)
                if mask_diagonal:
                    i = torch.arange(r0, r1).view(-1, 1)
                    j = torch.arange(c0, c1).view(1, -1)
                    s = s.masked_fill(j > i, -math.inf)
                m_new = torch.maximum(m, s.amax(dim=-1))
                safe = torch.where(torch.isinf(m_new), 0.0, m_new)
                p = torch.exp(s - safe[..., None])
                f = torch.exp(m - safe)
                lam = lam * f + p.sum(dim=-1)
                u = u * f[..., None] + p @ values[:, c0:c1]
                m = m_new
            if guard:
                out[:, r0:r1] = torch.where(
                    lam[..., None] > 0, u / lam.clamp_min(1e-30)[..., None], 0.0
                )
            else:
                out[:, r0:r1] = u / lam[..., None]
        return out

    return tiled_causal


def test_the_readers_tiled_attention_passes():
    assert checks.check_tiled_causal(tiled_by_a_reader()).passed


@pytest.mark.parametrize(
    ("slip", "mistake", "words"),
    [
        (
            {"mask_diagonal": False},
            "no mask inside the diagonal tiles",
            "does not mask inside the diagonal tiles",
        ),
        (
            {"skip_diagonal": True},
            "skips the diagonal tiles, 0 / 0",
            "a tile whose first key comes after its last query",
        ),
        (
            {"skip_diagonal": True, "guard": True},
            "skips the diagonal tiles",
            "a tile whose first key comes after its last query",
        ),
    ],
    ids=["no-mask-in-diagonal-tiles", "skips-diagonal-nan", "skips-diagonal-zeros"],
)
def test_a_readers_slip_in_the_diagonal_tiles_is_named_in_the_chapters_words(slip, mistake, words):
    # A cold reader's two slips: the first was named by a mutant of the book's
    # solution ("`unsqueeze` at dim 0 ..."), names the reader's code never used;
    # the second only by a generic reading of NaN.
    report = checks.check_tiled_causal(tiled_by_a_reader(**slip))
    assert not report.passed
    assert report.mistake == mistake, repr(report)
    assert words in report.diagnosis and "unsqueeze" not in report.diagnosis


def test_attention_memory_prints_whole_numbers_of_bytes_in_full():
    report = checks.check_attention_memory(memory_one_head)
    text = repr(report)
    assert "expected 4,294,967,296 bytes, got 134,217,728" in text, text
    assert "e+" not in text
    # A fraction stays a fraction, and an explainer's reading still follows its "; ".
    report = checks.check_attention_memory(lambda *a: memory_ok(*a) * 1.25 + 0.5)
    assert "expected 4,294,967,296 bytes, got 5,368,709,120.5; yours is" in repr(report)
