"""Checkers for the exercises: run the reader's function on several cases.

Each ``check_*`` function calls your function on a handful of inputs, compares
each answer with the library's reference, and returns a :class:`CheckReport`.
In a notebook the report shows one line per case: which passed, which failed
and why. ``bool(report)`` is True when every case passed.

The cases include the classic mistakes each chapter warns about (overflow,
``0 * log(0)``, a fill value that does not fit the dtype, ...). Each checker also
knows the classic wrong versions of its exercise (``check_x.mistakes``): when your
answers agree with one of them, the report names it in one line ("Likely
mistake: ...") and points at the section of the chapter that explains it.
Otherwise the report reads the first failing case in plain words (which
entry, expected against got, and what that pattern usually means), and each
failing case points at the section that explains it.

Your function and every known mistake run on fresh copies of each case's
inputs: a function that edits its input in place is told so ("modified its
input in place"), and the edit changes neither the next case nor the
diagnosis. Where an exercise forbids a shortcut (the library's own answer,
``F.layer_norm``, ``torch.softmax``, a fill of ``torch.finfo(...).min``, an
n x n tensor), the checker rejects it: what runs is watched, and the source of
your function is read (comments and strings do not count, nor does a function
of your own that shares the library's name).

The checkers live in one module per chapter (``qkv``, ``pooling``,
``masked``, ``scoring``, ``part2``, ``learns``, ``part3``, ``lm``, ``induction``,
``scale`` with ``tiled``, ``seq2seq``, ``positions``, ``vit``); import them
from here.
:func:`known_mistakes` lists every checker's known mistakes and their
diagnoses (the instructor guide's "Common mistakes" is generated from it).
:func:`report_for` and :func:`case_verdict` serve graded assignments
(tools/assignments.py): one report per checker, function and seed, and a
verdict per case.

Every checker takes a keyword-only ``seed`` (0 by default, the book's cases):
``check_softmax(fn, seed=1)`` runs the same kinds of cases on other random
inputs, as the hidden tests of an assignment do.
"""

from . import _core, _matching
from ._core import CheckReport
from ._core import _compare as _compare  # the library's tests use these two
from ._core import _run as _run
from ._grading import case_verdict, report_for, with_seed
from .induction import check_induction_score, check_previous_token_score
from .learns import check_right_key_accuracy, check_two_part_targets
from .lm import check_causal_mask, check_kv_cache, check_kv_cache_size
from .masked import check_causal_lengths, check_masked_softmax
from .part2 import (
    check_causal_self_attention,
    check_head_lengths,
    check_mha_parameter_count,
    check_rotation,
)
from .part3 import check_block_parameter_count, check_layer_norm
from .pooling import check_epanechnikov, check_gaussian_weights
from .positions import check_alibi_slopes, check_rope_scores
from .qkv import check_normalize, check_softmax
from .scale import check_attention_memory, check_online_softmax
from .scoring import check_entropy, check_scaled_dot_product
from .seq2seq import check_cross_attention_weights, check_decoder_masks
from .tiled import check_tiled_causal
from .vit import check_attention_rollout, check_ink, check_patchify

__all__ = [
    "CheckReport",
    "known_mistakes",
    "report_for",
    "case_verdict",
    "check_causal_lengths",
    "check_causal_self_attention",
    "check_entropy",
    "check_epanechnikov",
    "check_gaussian_weights",
    "check_head_lengths",
    "check_induction_score",
    "check_masked_softmax",
    "check_mha_parameter_count",
    "check_normalize",
    "check_previous_token_score",
    "check_right_key_accuracy",
    "check_rotation",
    "check_scaled_dot_product",
    "check_softmax",
    "check_two_part_targets",
    "check_attention_memory",
    "check_online_softmax",
    "check_tiled_causal",
    "check_block_parameter_count",
    "check_layer_norm",
    "check_causal_mask",
    "check_kv_cache",
    "check_kv_cache_size",
    "check_cross_attention_weights",
    "check_decoder_masks",
    "check_rope_scores",
    "check_alibi_slopes",
    "check_patchify",
    "check_attention_rollout",
    "check_ink",
]

# One place gives every checker its seed= (see _grading.with_seed).
for _name in __all__:
    if _name.startswith("check_"):
        globals()[_name] = with_seed(globals()[_name])
del _name


def known_mistakes() -> dict[str, tuple[tuple[str, str], ...]]:
    """Every checker's known mistakes: checker name -> ((mistake name, diagnosis), ...).

    The checkers come in the order of ``__all__``, each mistake in the order its
    checker lists it (the order in which a diagnosis is tried). A checker that
    knows no mistake maps to an empty tuple.
    """
    table = {}
    for name in __all__:
        if name.startswith("check_"):
            mistakes = getattr(globals()[name], "mistakes", ())
            table[name] = tuple((m.name, m.diagnosis) for m in mistakes)
    return table


def _match(*args):
    """The diagnosis by mutants (_matching.match, looked up at each call)."""
    return _matching.match(*args)


_core._MATCH = _match  # the diagnosis by mutants, for every checker
