"""Shortcuts refused: an exercise that says "from scratch", or forbids a trick,
fails every case of a function that takes it, whatever the cases would say.

The teacher trial found four that earned full marks: ``return
masking.masked_softmax(X, valid_lens)`` on the three-star masked softmax, a
fill of ``torch.finfo(...).min`` where that exercise "never writes a large
negative number", float lengths where causal lengths ask for an integer
tensor, and (the same gap) ``torch.softmax`` on "softmax from scratch", the
book's ``online_softmax`` and ``previous_token_score`` on theirs. The
refusals read the reader's source with ``ast``: comments, strings and a
function of the reader's own that shares the book's name do not count.

Also here, two "Likely mistake" lines the trial found wrong: an in-place edit
named as a fill of -1e6, and a missing max shift named as one too.
"""

from __future__ import annotations

import json
import pathlib
import textwrap

import pytest
import torch
import torch.nn.functional as F

import attnbook
from attnbook import checks, flash, masking
from attnbook.induction import previous_token_score as book_previous_token_score

ROOT = pathlib.Path(__file__).resolve().parents[2]
_BOOK_SOFTMAX = "refused: the book's masked_softmax"
_EXTREME_FILL = "refused: a fill of the dtype's extreme value"


def _keep(X, valid_lens):
    batch, queries, keys = X.shape
    lens = valid_lens if valid_lens.dim() == 2 else valid_lens[:, None].expand(batch, queries)
    return torch.arange(keys) < lens[..., None]  # (batch, queries, keys)


def masked_softmax(X, valid_lens):
    """A reader's own masked softmax that happens to share the book's name."""
    keep = _keep(X, valid_lens)
    shift = torch.where(keep, X, X.amin(dim=-1, keepdim=True)).amax(dim=-1, keepdim=True)
    e = torch.exp(torch.where(keep, X - shift, 0.0)) * keep
    return e / e.sum(dim=-1, keepdim=True).clamp_min(torch.finfo(X.dtype).tiny)


def _book_call(X, valid_lens):
    return masking.masked_softmax(X, valid_lens)


def _book_call_by_package(X, valid_lens):
    return attnbook.masking.masked_softmax(X, valid_lens)


def _book_call_imported_inside(X, valid_lens):
    from attnbook.masking import masked_softmax as renamed

    return renamed(X, valid_lens)


def _book_call_through_a_helper(X, valid_lens):
    return _book_call(X, valid_lens)


def _own_function_with_the_books_name(X, valid_lens):
    # Not masking.masked_softmax: the reader's own, defined above.
    """Calls masked_softmax, its own; a string naming masking.masked_softmax is no call."""
    return masked_softmax(X, valid_lens)


def _fill_finfo_min(X, valid_lens):  # the chapter's own route, forbidden in exercise 1
    keep = _keep(X, valid_lens)
    weights = torch.softmax(X.masked_fill(~keep, torch.finfo(X.dtype).min), dim=-1)
    return torch.where(keep, weights, 0.0)


def _fill_finfo_through_a_name(X, valid_lens):
    keep = _keep(X, valid_lens)
    info = torch.finfo(X.dtype)
    lowest = info.min
    return torch.where(keep, torch.softmax(X.masked_fill(~keep, lowest), dim=-1), 0.0)


def _fill_minus_finfo_max(X, valid_lens):
    keep = _keep(X, valid_lens)
    weights = torch.softmax(X.masked_fill(~keep, -torch.finfo(X.dtype).max), dim=-1)
    return torch.where(keep, weights, 0.0)


@pytest.mark.parametrize(
    ("fn", "written"),
    [
        (lambda X, lens: masking.masked_softmax(X, lens), "masking.masked_softmax"),
        (masking.masked_softmax, "attnbook.masking.masked_softmax itself"),
        (_book_call, "masking.masked_softmax"),
        (_book_call_by_package, "attnbook.masking.masked_softmax"),
        (_book_call_imported_inside, "renamed"),
        (_book_call_through_a_helper, "masking.masked_softmax"),
    ],
)
def test_the_books_masked_softmax_is_refused_however_it_is_reached(fn, written):
    report = checks.check_masked_softmax(fn)
    assert report.mistake == _BOOK_SOFTMAX, repr(report)
    assert report.failures == [line.split(": ")[0][8:] for line in report.lines]
    assert all(f"refused: it uses {written}" in line for line in report.lines), repr(report)
    assert "write it yourself" in report.lines[0]
    assert report.diagnosis.startswith("  Refused: your function uses ")
    assert "no case earns a point" in report.diagnosis


def test_a_readers_own_function_of_the_books_name_and_comments_are_not_refused():
    assert checks.check_masked_softmax(masked_softmax).passed
    assert checks.check_masked_softmax(_own_function_with_the_books_name).passed


@pytest.mark.parametrize(
    ("fn", "written"),
    [
        (_fill_finfo_min, "torch.finfo(X.dtype).min"),
        (_fill_finfo_through_a_name, "info.min (torch.finfo(...).min)"),
        (_fill_minus_finfo_max, "torch.finfo(X.dtype).max"),
    ],
)
def test_a_fill_of_the_dtypes_extreme_value_is_refused(fn, written):
    report = checks.check_masked_softmax(fn)
    assert report.mistake == _EXTREME_FILL, repr(report)
    assert len(report.failures) == len(report.lines)
    assert f"refused: it uses {written}" in report.lines[0], report.lines[0]
    assert "never writes a large negative number" in report.diagnosis
    # The refusal says how to take the maximum over the valid keys instead.
    assert "torch.where(keep, X, other).amax(dim=-1, keepdim=True)" in report.diagnosis
    assert "X.amin(dim=-1, keepdim=True), or float('-inf')" in report.diagnosis
    assert 'see "Exercises" in Masked Softmax and Batched Attention' in report.diagnosis


def test_a_refused_function_is_not_run():
    calls = []

    def shortcut(X, valid_lens):
        calls.append(1)
        return masking.masked_softmax(X, valid_lens)

    assert not checks.check_masked_softmax(shortcut).passed
    assert calls == []


def test_a_graders_proxy_hands_over_the_source():
    """A grader that runs the function in another process sets __attnbook_source__
    on its proxy; the refusal reads that, not the proxy's own code."""

    class Proxy:
        __attnbook_source__ = textwrap.dedent(
            """\
            def masked_softmax_renorm(X, valid_lens):
                return masking.masked_softmax(X, valid_lens)
            """
        )

        def __call__(self, X, valid_lens):
            return masked_softmax(X, valid_lens)

    report = checks.check_masked_softmax(Proxy())
    assert report.mistake == _BOOK_SOFTMAX, repr(report)
    Proxy.__attnbook_source__ = "def masked_softmax_renorm(X, valid_lens):\n    return 0\n"
    assert checks.check_masked_softmax(Proxy()).passed
    for odd in ("def broken(:", "(" * 500 + ")" * 500):  # nothing to read: checked on its cases
        Proxy.__attnbook_source__ = odd
        assert checks.check_masked_softmax(Proxy()).passed


def test_a_function_without_source_is_checked_on_its_cases_alone():
    scope = {"masking": masking}
    exec("def made(X, valid_lens):\n    return masking.masked_softmax(X, valid_lens)\n", scope)
    from attnbook.checks._core import source_of

    assert source_of(scope["made"]) is None
    assert checks.check_masked_softmax(scope["made"]).passed  # nothing to read: not refused


def test_source_of_follows_the_definitions_of_the_functions_module():
    from attnbook.checks._core import source_of

    text = source_of(_book_call_through_a_helper)
    assert "def _book_call_through_a_helper(" in text and "def _book_call(" in text
    assert "def masked_softmax(" not in text  # not used
    assert "def _keep(" in source_of(masked_softmax)  # used by it
    assert source_of(len) is None

    def proxy(X):
        return X

    proxy.__attnbook_source__ = "def f(X):\n    return X\n"
    assert source_of(proxy) == "def f(X):\n    return X\n"


def _softmax_by_module(X):
    return torch.nn.Softmax(dim=-1)(X)


def _softmax_imported(X):
    from torch.nn.functional import softmax as normalise

    return normalise(X, dim=-1)


def _softmax_from_scratch(X):
    # torch.softmax(X, dim=-1) would be refused; so is X.softmax(-1)
    e = torch.exp(X - X.amax(dim=-1, keepdim=True))
    return e / e.sum(dim=-1, keepdim=True)


@pytest.mark.parametrize(
    "fn",
    [
        lambda X: torch.softmax(X, dim=-1),
        lambda X: F.softmax(X, dim=-1),
        lambda X: X.softmax(dim=-1),
        lambda X: torch.log_softmax(X, dim=-1).exp(),
        _softmax_by_module,
        _softmax_imported,
    ],
)
def test_softmax_from_scratch_refuses_pytorchs(fn):
    report = checks.check_softmax(fn)
    assert report.mistake == "refused: torch.softmax", repr(report)
    assert len(report.failures) == len(report.lines)
    assert "from scratch" in report.lines[0]
    assert checks.check_softmax(_softmax_from_scratch).passed


def test_online_softmax_from_scratch_refuses_the_books():
    report = checks.check_online_softmax(lambda X, b: flash.online_softmax(X, b))
    assert report.mistake == "refused: the book's online_softmax", repr(report)
    assert len(report.failures) == len(report.lines)


def test_previous_token_score_refuses_the_books():
    report = checks.check_previous_token_score(lambda w: book_previous_token_score(w))
    assert report.mistake == "refused: the book's previous_token_score", repr(report)
    assert len(report.failures) == len(report.lines)
    assert "asks you not to call" in report.lines[0]


def test_a_refusal_fails_every_case_of_a_graded_question():
    from attnbook.checks import case_verdict, report_for

    def shortcut(X, valid_lens):
        return masking.masked_softmax(X, valid_lens)

    for seed in (0, 1):
        report = report_for(checks.check_masked_softmax, shortcut, seed=seed)
        assert report.mistake == _BOOK_SOFTMAX
        for case in range(len(report.lines)):
            passed, line = case_verdict("check_masked_softmax", shortcut, case, seed=seed)
            assert not passed and "refused" in line


def _solutions_of(checker: str) -> list[tuple[str, str]]:
    """(notebook, source) of every book solution cell checked by ``checker``."""
    found = []
    for path in sorted((ROOT / "book").glob("*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            meta = cell.get("metadata", {}).get("attnbook", {})
            if cell["cell_type"] == "code" and meta.get("check") == checker:
                found.append((path.name, "".join(cell["source"])))
    return found


@pytest.mark.parametrize(
    "checker",
    ["check_masked_softmax", "check_softmax", "check_online_softmax", "check_previous_token_score"],
)
def test_the_books_own_solutions_take_no_refused_shortcut(checker):
    from attnbook.checks import induction, masked, qkv, scale
    from attnbook.checks._source import _scan

    refused = {
        "check_masked_softmax": masked._RENORM_SHORTCUTS,
        "check_softmax": (qkv._SOFTMAX_SHORTCUT,),
        "check_online_softmax": (scale._ONLINE_SHORTCUT,),
        "check_previous_token_score": (induction._SCORE_SHORTCUT,),
    }[checker]
    solutions = _solutions_of(checker)
    assert solutions, f"no solution cell is checked by {checker}"
    for notebook, source in solutions:
        assert _scan(source, None, refused) is None, (notebook, source)


# ---------------------------------------------------------------- float lengths


def test_float_causal_lengths_fail_every_case():
    report = checks.check_causal_lengths(lambda b, q: torch.arange(1.0, q + 1).repeat(b, 1))
    assert len(report.failures) == len(report.lines), repr(report)
    wanted = "expected an integer tensor (dtype torch.int64), got dtype torch.float32"
    assert wanted in report.lines[0]


# ---------------------------------------------------------------- two wrong "Likely mistake" lines


def _no_shift(X, valid_lens):  # the trial's s17: masked zeroed first, no maximum subtracted
    keep = _keep(X, valid_lens)
    e = torch.exp(X.masked_fill(~keep, 0.0)) * keep
    return e / e.sum(dim=-1, keepdim=True).clamp_min(torch.finfo(X.dtype).tiny)


def _in_place_no_shift(X, valid_lens):  # an in-place edit on top of the missing shift
    keep = _keep(X, valid_lens)
    X.masked_fill_(~keep, 0.0)
    e = torch.exp(X) * keep
    return e / e.sum(dim=-1, keepdim=True).clamp_min(torch.finfo(X.dtype).tiny)


def _in_place_masked_as_zero(X, valid_lens):  # X[~keep] = 0, in place, then the maximum
    keep = _keep(X, valid_lens)
    X[~keep] = 0
    e = torch.exp(X - X.amax(dim=-1, keepdim=True)) * keep
    return e / e.sum(dim=-1, keepdim=True).clamp_min(torch.finfo(X.dtype).tiny)


def _in_place_two_slips(X, valid_lens):
    """In place, a shift by the maximum over all keys, and no clamp: no known mistake
    explains every case, so the edit, which was seen, is the line."""
    keep = _keep(X, valid_lens)
    X -= X.amax(dim=-1, keepdim=True)
    e = torch.exp(torch.where(keep, X, 0.0)) * keep
    return e / e.sum(dim=-1, keepdim=True)


def test_a_missing_max_shift_is_named_as_such_not_as_a_fill():
    report = checks.check_masked_softmax(_no_shift)
    assert report.mistake == "no shift, masked zeroed first", repr(report)
    assert "fill" not in report.diagnosis
    assert "subtract each row's maximum over its valid keys" in report.diagnosis


@pytest.mark.parametrize(
    ("fn", "mistake"),
    [
        (_in_place_no_shift, "no shift, masked zeroed first"),
        (_in_place_masked_as_zero, "masked as 0 in the maximum"),
        (_in_place_two_slips, "modified its input in place"),
    ],
)
def test_an_in_place_edit_is_named_and_never_as_a_fill(fn, mistake):
    report = checks.check_masked_softmax(fn)
    assert report.mistake == mistake, repr(report)
    assert "in place" in report.diagnosis
    assert "fill of" not in report.diagnosis


# ---------------------------------------------------------------- a grader's proxy, other exercises

# (checker, the source a proxy hands over, the refusal's name). In this process a
# runtime probe catches these calls under its own name (test_checks_fresh.py); a
# function that runs in another process is out of its sight, so its source is read.
REMOTE = [
    ("check_layer_norm", "return F.layer_norm(X, X.shape[-1:], g, b, eps)", "a library layer norm"),
    ("check_layer_norm", "return norms.LayerNorm(X.shape[-1])(X)", "a library layer norm"),
    ("check_rope_scores", "return apply_rope(q, p) @ apply_rope(k, p).mT", "apply_rope"),
    ("check_patchify", "return patches.patchify(images, p)", "patchify"),
    ("check_attention_rollout", "return explain.attention_rollout(w)", "attention_rollout"),
    (
        "check_decoder_masks",
        "return nn.Transformer.generate_square_subsequent_mask(m) < 0, pad",
        "generate_square_subsequent_mask",
    ),
    (
        "check_mha_parameter_count",
        "return multihead.MultiHeadAttention(D, h).numel()",
        "MultiHeadAttention(...)",
    ),
    ("check_online_softmax", "return torch.softmax(X, dim=-1)", "torch.softmax"),
    (
        "check_tiled_causal",
        "return F.scaled_dot_product_attention(q, k, v, is_causal=True)",
        "scaled_dot_product_attention or a softmax",
    ),
]


def _proxy(right, source: str):
    """What a grader that runs the answer in another process hands the checker."""

    def proxy(*args):
        return right(*args)

    proxy.__attnbook_source__ = source
    return proxy


@pytest.mark.parametrize(("checker", "body", "name"), REMOTE)
def test_a_proxys_source_is_read_where_a_runtime_probe_cannot_see(checker, body, name):
    from test_checks_fresh import RIGHT

    if checker == "check_rope_scores":
        body = "from attnbook.rope import apply_rope\n    " + body
    source = f"def answer(*args):\n    {body}\n"
    report = getattr(checks, checker)(_proxy(RIGHT[checker], source))
    assert report.mistake == f"refused: {name}", repr(report)
    assert len(report.failures) == len(report.lines)
    clean = getattr(checks, checker)(_proxy(RIGHT[checker], "def answer(*args):\n    pass\n"))
    assert clean.passed, repr(clean)


class _CallableShortcut:
    def __call__(self, X, valid_lens):
        return masking.masked_softmax(X, valid_lens)


def test_a_callable_object_is_read_through_its_class():
    from attnbook.checks._core import source_of

    assert "class _CallableShortcut" in source_of(_CallableShortcut())
    report = checks.check_masked_softmax(_CallableShortcut())
    assert report.mistake == _BOOK_SOFTMAX, repr(report)
