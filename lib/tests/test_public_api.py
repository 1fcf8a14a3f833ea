"""The whole public API against a student's bad input.

Every module lists its public names in ``__all__``. For each public callable
that takes arguments, ``CASES`` holds one valid call; the test then spoils one
argument at a time in each way that applies to it (wrong type, a flag given as
the string "False", a fractional or negative integer, NaN, an extra or a
missing axis, the wrong dtype, an id out of range, an empty batch) and
requires either a ``TypeError``/``ValueError`` whose message names the
argument, or, for an empty batch, a result without a crash (the documented
degenerate result). A spoiled call that returns is a silently wrong result.

``test_every_public_callable_has_a_case`` keeps ``CASES`` complete: a new
public function needs a valid call here before it can be merged.
"""

from __future__ import annotations

import datetime
import importlib
import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
import torch
from torch import nn

import attnbook

# Modules whose callables take tensors or numbers (the widgets and checkers
# have their own suites; ``plotting`` draws and is checked in test_plotting).
# The grading package runs notebooks in processes of its own: lib/tests/test_grading*.py.
MODULES = [
    m
    for m in attnbook._SUBMODULES
    if m not in ("checks", "widgets", "plotting", "colab", "grading")
]


@dataclass
class Case:
    """One valid call and what may legitimately be done to its arguments."""

    make: Callable[[], dict]  # returns the valid keyword arguments
    # kinds of spoiling that a documented behaviour accepts, per argument
    # (for example a tensor argument that takes any number of leading axes)
    accepts: dict[str, set[str]] = field(default_factory=dict)
    # arguments not to spoil at all (seeds, callables, documented free text)
    skip: set[str] = field(default_factory=set)
    # id-like integer tensors and their exclusive upper bound
    ids: dict[str, int] = field(default_factory=dict)
    # tensor arguments where a NaN must be refused
    nan: set[str] = field(default_factory=set)
    # tensor arguments whose first axis is a batch that may be empty
    batch: set[str] = field(default_factory=set)
    # a method to call on the constructed object (for modules: "forward")
    call: tuple[Callable[[], object], str] | None = None
    # floating tensor arguments whose dtype must be the model's parameters'
    typed: set[str] = field(default_factory=set)
    # floating tensor arguments whose last-axis width the model fixes
    width: set[str] = field(default_factory=set)
    # tensor arguments and their axes that must not be empty (no keys, no features)
    nonempty: dict[str, tuple[int, ...]] = field(default_factory=dict)
    # model arguments and a model of the same kind but another shape
    other: dict[str, Callable[[], nn.Module]] = field(default_factory=dict)


def _g(seed=0):
    return torch.Generator().manual_seed(seed)


def _rand(*shape, seed=0):
    return torch.rand(*shape, generator=_g(seed))


# --- small models, built once per call so that no case sees another's state


def _tiny_lm():
    from attnbook import lm

    torch.manual_seed(0)
    return lm.TinyLM(vocab_size=11, num_hiddens=8, num_heads=2, num_layers=1, max_len=16)


def _tiny_lm3():
    """A TinyLM with a vocabulary of 3 (the cases' prompts hold the id 3)."""
    from attnbook import lm

    torch.manual_seed(0)
    return lm.TinyLM(vocab_size=3, num_hiddens=8, num_heads=2, num_layers=1, max_len=16)


def _induction_model():
    from attnbook import induction

    return induction.AttentionOnlyTransformer(
        vocab=16, num_hiddens=8, num_heads=2, num_layers=2, max_len=12
    )


def _induction_model8():
    """An induction model for 8 tokens (the cases' batches use 16)."""
    from attnbook import induction

    return induction.AttentionOnlyTransformer(
        vocab=8, num_hiddens=8, num_heads=2, num_layers=2, max_len=12
    )


def _repeat_batch():
    from attnbook import induction

    return induction.make_repeat_batch(3, length=12, segment=4, vocab=16, max_gap=2)


def _vit():
    from attnbook import vit

    return vit.build_vit(seed=0, num_hiddens=8, num_heads=2, ffn_hiddens=8, num_layers=1)


def _additive():
    """AdditiveAttention(4) after one call with queries of 4 and keys of 3 features."""
    from attnbook import scoring

    layer = scoring.AdditiveAttention(4)
    layer(torch.zeros(1, 1, 4), torch.zeros(1, 1, 3), torch.zeros(1, 1, 2))
    return layer


def _vit16():
    """A ViT for 16 x 16 images (the cases' images are 8 x 8)."""
    from attnbook import vit

    return vit.build_vit(
        seed=0, image_size=16, num_hiddens=8, num_heads=2, ffn_hiddens=8, num_layers=1
    )


def _vit_p4():
    """A ViT that cuts the 8 x 8 images into 4 x 4 patches (the cases' ViT cuts 2 x 2)."""
    from attnbook import vit

    return vit.build_vit(
        seed=0, patch_size=4, num_hiddens=8, num_heads=2, ffn_hiddens=8, num_layers=1
    )


def _images(n=4):
    return _rand(n, 1, 8, 8)


def _labels(n=4):
    return torch.arange(n) % 10


def _position_model():
    from attnbook import length_generalisation as lg

    return lg.PositionModel("rope", vocab=16, num_hiddens=8, num_heads=2, num_layers=1, max_len=20)


def _recall_lm():
    from attnbook import mqar

    return mqar.RecallLM(vocab_size=32, num_hiddens=8, num_layers=1, max_len=16)


def _seq2seq_batch():
    from attnbook import dates

    return dates.reversal_batch(3, length=5, symbols=6, generator=_g())


def _gru():
    from attnbook import dates, seq2seq

    return seq2seq.GRUSeq2Seq(
        len(dates.SOURCE_VOCAB.symbols) if hasattr(dates.SOURCE_VOCAB, "symbols") else 64,
        len(dates.TARGET_VOCAB.symbols) if hasattr(dates.TARGET_VOCAB, "symbols") else 64,
        embed=4,
        enc_hiddens=4,
        dec_hiddens=8,
        attn_hiddens=4,
    )


def _digits():
    from attnbook import digits

    return digits.load_digits_split()


def _forward(make_obj):
    return (make_obj, "forward")


# --- one valid call per public callable


def _cases() -> dict[str, Case]:
    from attnbook import (
        dates,
        decoder,
        explain,
        induction,
        length_generalisation,
        linear_attention,
        lm,
        mqar,
        multihead,
        norms,
        pooling,
        positional,
        scoring,
        seq2seq,
        training,
        transformer,
    )

    x3 = _rand(5)
    c: dict[str, Case] = {}
    c["data.true_function"] = Case(lambda: {"x": _rand(4)}, accepts={"x": {"axes+", "axes-"}})
    c["data.make_regression_data"] = Case(
        lambda: {"n_train": 5, "noise": 0.5, "seed": 0}, skip={"seed"}
    )
    for k in ("gaussian", "boxcar", "constant", "triangular", "epanechnikov"):
        c[f"kernels.{k}"] = Case(lambda: {"u": _rand(4)}, accepts={"u": {"axes+", "axes-"}})
    c["kernels.get_kernel"] = Case(lambda: {"kernel": "gaussian"})
    c["masking.sequence_mask"] = Case(
        lambda: {"X": _rand(2, 3), "valid_lens": torch.tensor([1, 2]), "value": 0.0},
        ids={"valid_lens": 4},
        batch={"X", "valid_lens"},
        accepts={
            "X": {"axes+", "dtype"},
            "valid_lens": {"axes+", "wrong type", "float ids"},
            "value": {"nan"},
        },
    )
    c["masking.masked_softmax"] = Case(
        lambda: {"X": _rand(2, 2, 3), "valid_lens": torch.tensor([1, 2])},
        ids={"valid_lens": 4},
        batch={"X", "valid_lens"},
        accepts={"X": {"axes+"}, "valid_lens": {"axes+", "wrong type", "float ids"}},
    )
    c["multihead.MultiHeadAttention"] = Case(
        lambda: {"num_hiddens": 8, "num_heads": 2, "dropout": 0.0, "bias": False}
    )
    c["multihead.MultiHeadAttention.forward"] = Case(
        lambda: {
            "queries": _rand(2, 3, 8),
            "keys": _rand(2, 4, 8),
            "values": _rand(2, 4, 8),
            "valid_lens": torch.tensor([1, 4]),
        },
        ids={"valid_lens": 5},
        batch={"queries", "keys", "values", "valid_lens"},
        accepts={"valid_lens": {"axes+", "wrong type", "float ids"}},
        typed={"queries", "keys", "values"},
        width={"queries", "keys", "values"},
        nonempty={"queries": (1,), "keys": (1,), "values": (1,)},
        call=_forward(lambda: multihead.MultiHeadAttention(8, 2)),
    )
    c["positional.sinusoidal_encoding"] = Case(lambda: {"num_positions": 4, "num_hiddens": 6})
    c["positional.PositionalEncoding"] = Case(
        lambda: {"num_hiddens": 6, "dropout": 0.0, "max_len": 10}
    )
    c["positional.PositionalEncoding.forward"] = Case(
        lambda: {"X": _rand(2, 3, 6)},
        batch={"X"},
        width={"X"},
        nonempty={"X": (1,)},
        call=_forward(lambda: positional.PositionalEncoding(6, max_len=10)),
    )
    c["recall.make_recall_batch"] = Case(
        lambda: {"batch": 2, "n": 3, "d": 4, "d_v": 2, "noise": 0.1, "parts": 1, "seed": 0},
        skip={"seed"},
    )
    c["recall.right_key_accuracy"] = Case(
        lambda: {"weights": torch.softmax(_rand(2, 3), -1), "index": torch.tensor([0, 2])},
        ids={"index": 3},
        batch={"weights", "index"},
    )
    c["pooling.average_pooling"] = Case(
        lambda: {"y_train": x3, "x_query": _rand(3)},
        batch={"x_query"},
        accepts={"x_query": {"dtype"}},
    )
    c["pooling.nadaraya_watson"] = Case(
        lambda: {
            "x_train": _rand(5),
            "y_train": _rand(5, seed=1),
            "x_query": _rand(3),
            "kernel": "gaussian",
            "width": 1.0,
        },
        nan={"x_train", "x_query"},
        batch={"x_query"},
    )
    c["pooling.loo_cv_error"] = Case(
        lambda: {
            "x_train": _rand(5),
            "y_train": _rand(5, seed=1),
            "widths": [0.5, 1.0],
            "kernel": "gaussian",
        },
        nan={"x_train"},
    )
    c["pooling.leave_one_out"] = Case(lambda: {"x": _rand(4)}, accepts={"x": {"dtype"}})
    c["pooling.train_nw"] = Case(
        lambda: {
            "model": pooling.NWKernelRegression(),
            "x_train": _rand(5),
            "y_train": _rand(5, seed=1),
            "lr": 0.5,
            "epochs": 1,
        }
    )
    c["scoring.DotProductAttention"] = Case(lambda: {"dropout": 0.0})
    c["scoring.DotProductAttention.forward"] = Case(
        lambda: {
            "queries": _rand(2, 3, 4),
            "keys": _rand(2, 5, 4),
            "values": _rand(2, 5, 2),
            "valid_lens": torch.tensor([1, 5]),
        },
        ids={"valid_lens": 6},
        batch={"queries", "keys", "values", "valid_lens"},
        accepts={"valid_lens": {"axes+", "wrong type", "float ids"}},
        nonempty={"queries": (1, 2), "keys": (1, 2), "values": (1, 2)},
        call=_forward(lambda: scoring.DotProductAttention()),
    )
    c["scoring.AdditiveAttention"] = Case(lambda: {"num_hiddens": 4, "dropout": 0.0, "bias": False})
    c["scoring.AdditiveAttention.forward"] = Case(
        lambda: {
            "queries": _rand(2, 3, 4),
            "keys": _rand(2, 5, 3),
            "values": _rand(2, 5, 2),
            "valid_lens": torch.tensor([1, 5]),
        },
        ids={"valid_lens": 6},
        batch={"queries", "keys", "values", "valid_lens"},
        accepts={"valid_lens": {"axes+", "wrong type", "float ids"}},
        typed={"queries", "keys", "values"},
        width={"queries", "keys"},
        nonempty={"queries": (1, 2), "keys": (1, 2), "values": (1, 2)},
        call=_forward(_additive),  # called once: its lazy widths are fixed
    )
    c["training.RecallAttention"] = Case(
        lambda: {"d": 4, "d_v": 2, "num_heads": 1, "head_size": 4, "scaled": True, "seed": 0},
        skip={"seed"},
    )
    c["training.train_recall"] = Case(
        lambda: {
            "model": training.RecallAttention(4),
            "steps": 1,
            "batch": 2,
            "n": 3,
            "noise": 0.1,
            "parts": 1,
            "lr": 0.5,
            "record_at": (),
            "probe_size": 2,
            "seed": 0,
        },
        skip={"seed", "record_at"},
    )
    c["induction.make_repeat_batch"] = Case(
        lambda: {
            "batch": 2,
            "length": 12,
            "segment": 4,
            "vocab": 16,
            "max_gap": 2,
            "min_gap": 0,
            "seed": 0,
        },
        skip={"seed", "min_gap"},
    )
    c["induction.causal_mask"] = Case(lambda: {"n": 3, "device": "cpu"})
    c["induction.CausalAttentionLayer"] = Case(lambda: {"num_hiddens": 8, "num_heads": 2})
    c["induction.AttentionOnlyTransformer"] = Case(
        lambda: {
            "vocab": 16,
            "num_hiddens": 8,
            "num_heads": 2,
            "num_layers": 1,
            "max_len": 12,
            "seed": 0,
        },
        skip={"seed"},
    )
    c["induction.AttentionOnlyTransformer.forward"] = Case(
        lambda: {"tokens": torch.tensor([[1, 2, 3], [4, 5, 6]])},
        ids={"tokens": 16},
        batch={"tokens"},
        nonempty={"tokens": (1,)},
        call=_forward(_induction_model),
    )
    c["induction.copy_accuracy"] = Case(
        lambda: {"model": _induction_model(), "batch": _repeat_batch(), "ablate": None},
        other={"model": _induction_model8},
    )
    c["induction.previous_token_score"] = Case(
        lambda: {"weights": torch.softmax(_rand(2, 2, 5, 5), -1)},
        batch={"weights"},
        accepts={"weights": {"axes+", "axes-"}},
    )
    c["induction.induction_targets"] = Case(
        lambda: {"first": torch.tensor([0, 1]), "second": torch.tensor([5, 6]), "segment": 3},
        ids={"first": 100, "second": 100},
        batch={"first", "second"},
        # no upper bound: the positions' sequence is not an argument
        accepts={"first": {"id out of range"}, "second": {"id out of range"}},
    )
    c["induction.induction_score"] = Case(
        lambda: {
            "weights": torch.softmax(_rand(2, 2, 12, 12), -1),
            "first": torch.tensor([0, 1]),
            "second": torch.tensor([5, 6]),
            "segment": 3,
        },
        ids={"first": 12, "second": 12},
        accepts={"weights": {"axes-"}},
    )
    c["induction.head_scores"] = Case(
        lambda: {"model": _induction_model(), "batch": _repeat_batch()},
        other={"model": _induction_model8},
    )
    c["induction.qk_circuit"] = Case(
        lambda: {
            "model": _induction_model(),
            "layer": 0,
            "head": 1,
            "queries": _rand(3, 8),
            "keys": _rand(4, 8),
        },
        typed={"queries", "keys"},
        width={"queries", "keys"},
        nonempty={"queries": (1,), "keys": (1,)},
        accepts={"queries": {"axes-"}, "keys": {"axes-"}},
    )
    c["induction.head_output"] = Case(
        lambda: {"model": _induction_model(), "layer": 1, "head": 0, "vectors": _rand(3, 8)},
        accepts={"vectors": {"axes-", "axes+"}},
    )
    c["induction.ov_circuit"] = Case(lambda: {"model": _induction_model(), "layer": 0, "head": 0})
    c["induction.train_induction"] = Case(
        lambda: {
            "model": _induction_model(),
            "steps": 1,
            "batch": 2,
            "lr": 0.01,
            "record_every": 1,
            "probe_size": 2,
            "seed": 0,
            "task": {"length": 12, "segment": 4, "vocab": 16, "max_gap": 2},
            "copy_only": False,
        },
        skip={"seed", "task"},
    )
    c["induction.ablation_table"] = Case(
        lambda: {"model": _induction_model(), "batch": _repeat_batch(), "heads": [(0, 1)]},
        other={"model": _induction_model8},
    )
    c["flash.online_softmax"] = Case(
        lambda: {"X": _rand(2, 6), "block_size": 4}, accepts={"X": {"axes+", "axes-"}}
    )
    c["flash.online_normalizer"] = Case(
        lambda: {"X": _rand(2, 6), "block_size": 4}, accepts={"X": {"axes+", "axes-"}}
    )
    qkv = {"queries": _rand(2, 5, 4), "keys": _rand(2, 6, 4), "values": _rand(2, 6, 3)}
    c["flash.tiled_attention"] = Case(
        lambda: {**qkv, "block_size": 2, "causal": False, "valid_lens": torch.tensor([2, 6])},
        ids={"valid_lens": 7},
        batch={"queries", "keys", "values", "valid_lens"},
        accepts={
            **{k: {"axes+"} for k in ("queries", "keys", "values")},
            "valid_lens": {"axes+", "wrong type", "float ids"},
        },
    )
    c["flash.flash_attention"] = Case(
        lambda: {**qkv, "block_size": 2, "causal": False},
        batch={"queries", "keys", "values"},
        accepts={k: {"axes+"} for k in ("queries", "keys", "values")},
    )
    c["flash.naive_attention"] = Case(
        lambda: {**qkv, "causal": False, "valid_lens": torch.tensor([2, 6])},
        ids={"valid_lens": 7},
        batch={"queries", "keys", "values", "valid_lens"},
        accepts={
            **{k: {"axes+"} for k in ("queries", "keys", "values")},
            "valid_lens": {"axes+", "wrong type", "float ids"},
        },
    )
    c["flash.naive_attention_bytes"] = Case(
        lambda: {"n": 8, "num_heads": 2, "dtype": torch.float16}
    )
    c["flash.tile_trace"] = Case(lambda: {"scores": _rand(5, 6), "block_size": 2, "causal": False})
    c["flash.peak_memory"] = Case(lambda: {"fn": torch.sin, "input": _rand(3)}, skip={"input"})
    c["linear_attention.elu_feature_map"] = Case(
        lambda: {"x": _rand(2, 3)}, accepts={"x": {"axes+", "axes-"}}
    )
    c["linear_attention.token_shift"] = Case(
        lambda: {"X": _rand(2, 3, 4)}, batch={"X"}, accepts={"X": {"axes+"}}
    )
    c["linear_attention.linear_attention_weights"] = Case(
        lambda: {"queries": _rand(2, 3, 4), "keys": _rand(2, 5, 4), "causal": False},
        batch={"queries", "keys"},
        accepts={"queries": {"axes+"}, "keys": {"axes+"}},
    )
    c["linear_attention.linear_attention"] = Case(
        lambda: {
            "queries": _rand(2, 3, 4),
            "keys": _rand(2, 5, 4),
            "values": _rand(2, 5, 2),
            "causal": False,
        },
        batch={"queries", "keys", "values"},
        accepts={k: {"axes+"} for k in ("queries", "keys", "values")},
    )
    c["linear_attention.LinearSelfAttention"] = Case(
        lambda: {"num_hiddens": 8, "num_heads": 2, "causal": True, "recurrent": False}
    )
    c["linear_attention.LinearSelfAttention.forward"] = Case(
        lambda: {"X": _rand(2, 3, 8)},
        batch={"X"},
        typed={"X"},
        width={"X"},
        nonempty={"X": (1,)},
        call=_forward(lambda: linear_attention.LinearSelfAttention(8, 2)),
    )
    c["mqar.make_mqar_batch"] = Case(
        lambda: {"batch": 2, "num_pairs": 2, "vocab_size": 32, "length": 8, "seed": 0},
        skip={"seed"},
    )
    c["mqar.guessing_accuracy"] = Case(lambda: {"num_pairs": 4, "rule_out_asked": False})
    c["mqar.recall_accuracy"] = Case(
        lambda: {"logits": _rand(2, 4, 5), "targets": torch.tensor([[0, -100, 4, 1]] * 2)},
        ids={"targets": 5},
    )
    c["mqar.CausalSoftmaxAttention"] = Case(lambda: {"num_hiddens": 8, "num_heads": 2})
    c["mqar.PreLNBlock"] = Case(
        lambda: {
            "num_hiddens": 8,
            "attention": mqar.CausalSoftmaxAttention(8),
            "ffn_hiddens": 16,
        },
        accepts={"attention": {"wrong module"}},  # any attention module
    )
    c["mqar.RecallLM"] = Case(
        lambda: {
            "attention": "softmax",
            "vocab_size": 32,
            "num_hiddens": 8,
            "num_layers": 1,
            "num_heads": 1,
            "max_len": 16,
            "ffn_hiddens": None,
            "token_shift": False,
            "seed": 0,
        },
        skip={"seed"},
    )
    c["mqar.RecallLM.forward"] = Case(
        lambda: {"tokens": torch.tensor([[1, 2, 3], [4, 5, 6]])},
        ids={"tokens": 32},
        batch={"tokens"},
        nonempty={"tokens": (1,)},
        call=_forward(_recall_lm),
    )
    c["mqar.train_mqar"] = Case(
        lambda: {
            "model": _recall_lm(),
            "steps": 1,
            "batch": 2,
            "lr": 0.01,
            "eval_every": 1,
            "num_pairs": 2,
            "probe_size": 2,
            "seed": 0,
        },
        skip={"seed"},
    )
    c["norms.layer_norm"] = Case(
        lambda: {"X": _rand(2, 4), "gamma": torch.ones(4), "beta": torch.zeros(4), "eps": 1e-5},
        accepts={"X": {"axes+", "axes-"}},
        batch={"X"},
    )
    c["norms.rms_norm"] = Case(
        lambda: {"X": _rand(2, 4), "gamma": torch.ones(4), "eps": 1e-5},
        accepts={"X": {"axes+", "axes-"}},
        batch={"X"},
    )
    c["norms.LayerNorm"] = Case(lambda: {"num_hiddens": 4, "eps": 1e-5})
    c["norms.RMSNorm"] = Case(lambda: {"num_hiddens": 4, "eps": 1e-5})
    c["transformer.PositionWiseFFN"] = Case(
        lambda: {"num_hiddens": 4, "ffn_hiddens": 8, "dropout": 0.0}
    )
    c["transformer.TransformerBlock"] = Case(
        lambda: {
            "num_hiddens": 8,
            "num_heads": 2,
            "ffn_hiddens": 16,
            "dropout": 0.0,
            "norm_first": True,
            "eps": 1e-5,
        }
    )
    c["transformer.TransformerBlock.forward"] = Case(
        lambda: {"X": _rand(2, 3, 8), "valid_lens": torch.tensor([1, 3])},
        ids={"valid_lens": 4},
        batch={"X", "valid_lens"},
        accepts={"valid_lens": {"axes+", "wrong type", "float ids"}},
        typed={"X"},
        width={"X"},
        nonempty={"X": (1,)},
        call=_forward(lambda: transformer.TransformerBlock(8, 2, 16)),
    )
    c["transformer.gradient_norms_at_init"] = Case(
        lambda: {
            "depth": 1,
            "norm_first": True,
            "num_hiddens": 8,
            "num_heads": 2,
            "num_steps": 1,
            "batch": 2,
            "vocab": 8,
            "seeds": (0,),
        }
    )
    c["lm.CausalSelfAttention"] = Case(lambda: {"num_hiddens": 8, "num_heads": 2})
    c["lm.DecoderBlock"] = Case(lambda: {"num_hiddens": 8, "num_heads": 2})
    c["lm.TinyLM"] = Case(
        lambda: {
            "vocab_size": 11,
            "num_hiddens": 8,
            "num_heads": 2,
            "num_layers": 1,
            "max_len": 16,
        }
    )
    c["lm.TinyLM.forward"] = Case(
        lambda: {"ids": torch.tensor([[1, 2, 3], [4, 5, 6]])},
        ids={"ids": 11},
        batch={"ids"},
        nonempty={"ids": (1,)},
        call=_forward(_tiny_lm),
    )
    c["lm.CharTokenizer"] = Case(lambda: {"text": "abcab"})
    c["corpus.CharTokenizer"] = c["lm.CharTokenizer"]
    c["lm.corpus_loss"] = Case(
        lambda: {"model": lm.load_checkpoint()[0], "text": "the keys."},
        other={"model": _tiny_lm},  # its vocabulary of 11 is not the corpus's
    )
    c["lm.generate"] = Case(
        lambda: {
            "model": _tiny_lm(),
            "ids": torch.tensor([1, 2, 3]),
            "steps": 2,
            "temperature": 0.8,
            "use_cache": True,
            "seed": 0,
            "return_logits": False,
            "top_k": None,
            "top_p": None,
        },
        ids={"ids": 11},
        skip={"seed"},
        accepts={"ids": {"axes+"}},
        nonempty={"ids": (0,)},
        other={"model": _tiny_lm3},
    )
    c["lm.kv_cache_numbers"] = Case(
        lambda: {"num_layers": 2, "steps": 4, "num_hiddens": 8, "num_heads": 2, "num_kv_heads": 1}
    )
    c["lm.load_corpus"] = Case(lambda: {"part": "all"})
    c["corpus.load_corpus"] = c["lm.load_corpus"]
    c["lm.matmul_flops"] = Case(lambda: {"model": _tiny_lm(), "t": 4, "use_cache": True})
    c["lm.train_lm"] = Case(
        lambda: {
            "model": _tiny_lm(),
            "ids": torch.arange(40) % 11,
            "steps": 1,
            "batch_size": 2,
            "lr": 0.01,
            "seed": 0,
            "context": 8,
            "callback": None,
        },
        ids={"ids": 11},
        skip={"callback"},
    )
    c["lm.train_checkpoint_recipe"] = Case(lambda: {"steps": 1})
    c["corpus.ngram_loss"] = Case(
        lambda: {
            "train_ids": torch.arange(20) % 5,
            "eval_ids": torch.arange(10) % 5,
            "vocab_size": 5,
            "order": 2,
            "alpha": 1.0,
        },
        ids={"train_ids": 5, "eval_ids": 5},
    )
    c["sampling.check_top_k"] = Case(lambda: {"top_k": 3})
    c["sampling.check_top_p"] = Case(lambda: {"top_p": 0.9})
    c["sampling.top_k_filter"] = Case(
        lambda: {"logits": _rand(2, 5), "top_k": 2}, accepts={"logits": {"axes+", "axes-"}}
    )
    c["sampling.top_p_filter"] = Case(
        lambda: {"logits": _rand(2, 5), "top_p": 0.9}, accepts={"logits": {"axes+", "axes-"}}
    )
    c["sampling.next_token_probs"] = Case(
        lambda: {"logits": _rand(2, 5), "temperature": 1.0, "top_k": None, "top_p": None},
        accepts={"logits": {"axes+", "axes-"}},
    )
    probs = lambda: torch.softmax(_rand(2, 5), -1)  # noqa: E731
    c["sampling.draw"] = Case(
        lambda: {"probs": probs(), "generator": _g()},
        nan={"probs"},
        accepts={"probs": {"axes-"}},
    )
    c["sampling.draw_margin"] = Case(
        lambda: {"probs": probs(), "generator": _g()},
        nan={"probs"},
        accepts={"probs": {"axes-"}},
    )
    c["rope.rope_frequencies"] = Case(lambda: {"head_size": 4, "base": 10000.0})
    c["rope.rope_angles"] = Case(
        lambda: {"positions": torch.arange(3), "head_size": 4, "base": 10000.0},
        accepts={"positions": {"axes+"}},
    )
    c["rope.apply_rope"] = Case(
        lambda: {"x": _rand(2, 3, 4), "positions": torch.arange(3), "base": 10000.0},
        accepts={"x": {"axes+", "axes-"}},
        batch={"x"},
    )
    c["rope.rope_score"] = Case(
        lambda: {"q": _rand(4), "k": _rand(4, seed=1), "m": 2, "n": 1, "base": 10000.0},
        accepts={"m": {"fractional"}, "n": {"fractional"}},  # real positions interpolate
    )
    c["alibi.alibi_slopes"] = Case(lambda: {"num_heads": 4, "dtype": torch.float32})
    c["alibi.alibi_bias"] = Case(
        lambda: {"num_positions": 3, "num_heads": 2, "dtype": torch.float32}
    )
    lg = length_generalisation
    c["length_generalisation.make_copy_batch"] = Case(
        lambda: {"batch": 2, "length": 6, "vocab": 16, "seed": 0}, skip={"seed"}
    )
    c["length_generalisation.make_kback_batch"] = Case(
        lambda: {"batch": 2, "length": 6, "k": 2, "vocab": 16, "seed": 0}, skip={"seed"}
    )
    c["length_generalisation.PositionAttention"] = Case(
        lambda: {"num_hiddens": 8, "num_heads": 2, "scheme": "rope"}
    )
    c["length_generalisation.PositionModel"] = Case(
        lambda: {
            "scheme": "rope",
            "vocab": 16,
            "num_hiddens": 8,
            "num_heads": 2,
            "num_layers": 1,
            "max_len": 20,
            "seed": 0,
        },
        skip={"seed"},
    )
    c["length_generalisation.PositionModel.forward"] = Case(
        lambda: {"tokens": torch.tensor([[1, 2, 3], [4, 5, 6]])},
        ids={"tokens": 16},
        batch={"tokens"},
        nonempty={"tokens": (1,)},
        call=_forward(_position_model),
    )
    c["length_generalisation.task_accuracy"] = Case(
        lambda: {"model": _position_model(), "batch": lg.make_copy_batch(2, 4, vocab=16)},
        other={
            "model": lambda: length_generalisation.PositionModel(
                "rope", vocab=8, num_hiddens=8, num_heads=2, num_layers=1
            )
        },
    )
    c["length_generalisation.evaluate"] = Case(
        lambda: {"model": _position_model(), "lengths": (4,), "task": "copy", "size": 2},
        skip={"seed", "lengths"},
    )
    c["length_generalisation.copy_head_score"] = Case(
        lambda: {"model": _position_model(), "length": 4, "size": 2, "seed": 0}, skip={"seed"}
    )
    c["length_generalisation.train_positions"] = Case(
        lambda: {
            "model": _position_model(),
            "task": "copy",
            "steps": 1,
            "batch": 2,
            "lr": 0.01,
            "min_length": 4,
            "max_length": 6,
            "clip": 1.0,
            "seed": 0,
        },
        skip={"seed"},
    )
    c["length_generalisation.sweep_ranges"] = Case(
        lambda: {"records": lg.load_sweep()["copy"], "field": "accuracy"}
    )
    c["patches.patchify"] = Case(
        lambda: {"images": _images(), "patch_size": 2},
        batch={"images"},
        accepts={"images": {"axes-", "dtype"}},
    )
    c["patches.unpatchify"] = Case(
        lambda: {"patches": _rand(4, 16, 4), "patch_size": 2, "height": 8, "width": 8},
        batch={"patches"},
        accepts={"patches": {"dtype"}},
    )
    c["vit.TinyViT"] = Case(
        lambda: {
            "image_size": 8,
            "patch_size": 2,
            "channels": 1,
            "num_classes": 10,
            "num_hiddens": 8,
            "num_heads": 2,
            "ffn_hiddens": 8,
            "num_layers": 1,
        }
    )
    c["vit.TinyViT.forward"] = Case(
        lambda: {"images": _images()},
        batch={"images"},
        typed={"images"},
        call=_forward(_vit),
    )
    c["vit.build_vit"] = Case(lambda: {"seed": 0}, skip={"seed"})
    c["vit.train_vit"] = Case(
        lambda: {
            "model": _vit(),
            "X": _images(),
            "y": _labels(),
            "epochs": 1,
            "batch_size": 2,
            "lr": 0.003,
            "weight_decay": 0.05,
            "seed": 0,
        },
        ids={"y": 10},
        skip={"seed"},
        other={"model": _vit16},
        nan={"X"},
        typed={"X"},
        nonempty={"X": (1, 2, 3)},
        batch={"X", "y"},
    )
    c["vit.predict_proba"] = Case(
        lambda: {"model": _vit(), "X": _images(), "batch_size": 2},
        batch={"X"},
        other={"model": _vit16},
        nan={"X"},
        typed={"X"},
        nonempty={"X": (1, 2, 3)},
    )
    c["vit.accuracy"] = Case(
        lambda: {"model": _vit(), "X": _images(), "y": _labels()},
        ids={"y": 10},
        other={"model": _vit16},
        nan={"X"},
        typed={"X"},
        nonempty={"X": (1, 2, 3)},
        batch={"X", "y"},
    )
    c["explain.cls_attention"] = Case(
        lambda: {"weights": torch.softmax(_rand(2, 2, 5, 5), -1)}, batch={"weights"}
    )
    c["explain.attention_rollout"] = Case(
        lambda: {"weights": [torch.softmax(_rand(2, 2, 5, 5), -1)] * 2}
    )
    c["explain.occlusion_scores"] = Case(
        lambda: {
            "model": _vit(),
            "images": _images(2),
            "labels": _labels(2),
            "patch_size": 2,
            "fill": 0.0,
        },
        ids={"labels": 10},
        other={"model": _vit16},
        nan={"images"},
        typed={"images"},
        nonempty={"images": (1, 2, 3)},
        batch={"images", "labels"},
    )
    c["explain.ink_scores"] = Case(
        lambda: {"images": _images(2), "patch_size": 2},
        batch={"images"},
        nan={"images"},
        nonempty={"images": (1, 2, 3)},
    )
    c["explain.change_scores"] = Case(
        lambda: {"images": _images(2), "patch_size": 2, "fill": 0.5},
        batch={"images"},
        nan={"images"},
        nonempty={"images": (1, 2, 3)},
    )
    c["explain.spearman"] = Case(lambda: {"a": _rand(2, 5), "b": _rand(2, 5, seed=1)})
    c["explain.explanation_scores"] = Case(
        lambda: {"model": _vit(), "images": _images(2), "labels": _labels(2), "seed": 0},
        ids={"labels": 10},
        other={"model": _vit16},
        nan={"images"},
        typed={"images"},
        nonempty={"images": (1, 2, 3)},
        batch={"images", "labels"},
    )
    c["explain.agreement"] = Case(
        lambda: {"scores": explain.explanation_scores(_vit(), _images(2), _labels(2))}
    )
    c["vit_study.records_agree"] = Case(
        lambda: {"live": {"accuracy": 0.9}, "stored": {"accuracy": 0.9}}
    )
    c["decoder.causal_lens"] = Case(lambda: {"batch": 2, "m": 3, "device": "cpu"})
    c["decoder.TransformerDecoderLayer"] = Case(
        lambda: {
            "num_hiddens": 8,
            "num_heads": 2,
            "ffn_hiddens": 16,
            "dropout": 0.0,
            "norm_first": True,
            "eps": 1e-5,
        }
    )
    c["decoder.TransformerSeq2Seq"] = Case(
        lambda: {
            "source_vocab": 10,
            "target_vocab": 10,
            "num_hiddens": 8,
            "num_heads": 2,
            "ffn_hiddens": 16,
            "max_len": 12,
            "norm_first": True,
            "position_scale": 0.5,
        }
    )
    c["seq2seq.GRUEncoder"] = Case(lambda: {"vocab_size": 10, "embed": 4, "hiddens": 4})
    c["seq2seq.AdditiveCrossAttention"] = Case(
        lambda: {"query_size": 4, "key_size": 4, "hiddens": 4}
    )
    c["seq2seq.GRUSeq2Seq"] = Case(
        lambda: {
            "source_vocab": 10,
            "target_vocab": 10,
            "attention": True,
            "embed": 4,
            "enc_hiddens": 4,
            "dec_hiddens": 8,
            "attn_hiddens": 4,
        }
    )
    c["seq2seq.date_model"] = Case(lambda: {"attention": True, "seed": 0}, skip={"seed"})
    c["seq2seq.anti_diagonal"] = Case(
        lambda: {"weights": torch.softmax(_rand(2, 4, 4), -1)}, batch={"weights"}
    )
    c["seq2seq.reversal_test"] = Case(lambda: {"size": 2, "length": 5, "symbols": 6})
    c["dates.format_date"] = Case(
        lambda: {"date": datetime.date(2001, 2, 3), "fmt": dates.FORMATS[0]}
    )
    c["dates.parse_numeric_year"] = Case(lambda: {"two_digits": 7})
    c["dates.Vocab"] = Case(lambda: {"symbols": ["a", "b"]})
    c["dates.DateTask"] = Case(lambda: {"seed": 0, "held_out": 0.2}, skip={"seed"})
    c["dates.reversal_batch"] = Case(
        lambda: {"batch_size": 2, "length": 5, "symbols": 6, "generator": _g()}
    )
    c["dates.field_spans"] = Case(
        lambda: {
            "text": dates.format_date(datetime.date(2001, 2, 3), dates.FORMATS[0]),
            "fmt": dates.FORMATS[0],
        },
        skip={"text"},
    )
    c["dates.encode_dates"] = Case(
        lambda: {"dates": [datetime.date(2001, 2, 3)], "formats": [dates.FORMATS[0]]}
    )
    c["dates.alignment_summary"] = Case(
        lambda: {
            "weights": torch.softmax(_rand(2, 10, 19), -1),
            "batch": dates.encode_dates([datetime.date(2001, 2, 3)] * 2, ["numeric", "weekday"]),
        },
    )
    c["seq2seq.GRUSeq2Seq.forward"] = Case(
        lambda: {
            "source": torch.tensor([[1, 2, 3], [4, 5, 0]]),
            "source_lens": torch.tensor([3, 2]),
            "decoder_input": torch.tensor([[1, 2], [3, 4]]),
        },
        ids={"source": 10, "decoder_input": 10, "source_lens": 4},
        accepts={"source_lens": {"wrong type", "float ids"}},
        batch={"source", "source_lens", "decoder_input"},
        nonempty={"source": (1,), "decoder_input": (1,)},
        call=_forward(
            lambda: seq2seq.GRUSeq2Seq(
                10, 10, embed=4, enc_hiddens=4, dec_hiddens=8, attn_hiddens=4
            )
        ),
    )
    c["decoder.TransformerSeq2Seq.forward"] = Case(
        lambda: {
            "source": torch.tensor([[1, 2, 3], [4, 5, 0]]),
            "source_lens": torch.tensor([3, 2]),
            "decoder_input": torch.tensor([[1, 2], [3, 4]]),
        },
        ids={"source": 10, "decoder_input": 10, "source_lens": 4},
        accepts={"source_lens": {"wrong type", "float ids"}},
        batch={"source", "source_lens", "decoder_input"},
        nonempty={"source": (1,), "decoder_input": (1,)},
        call=_forward(
            lambda: decoder.TransformerSeq2Seq(
                10, 10, num_hiddens=8, num_heads=2, ffn_hiddens=16, max_len=12
            )
        ),
    )
    c["length_generalisation.rescale_rope"] = Case(
        lambda: {"model": _position_model(), "base": 10000.0, "position_scale": 0.5}
    )
    c["length_generalisation.accuracy_by_position"] = Case(
        lambda: {
            "model": _position_model(),
            "length": 6,
            "edges": (0, 3, 6),
            "task": "copy",
            "size": 2,
            "seed": 0,
        },
        skip={"seed"},
    )
    c["vit.build_cnn"] = Case(lambda: {"seed": 0, "width": 4}, skip={"seed"})
    c["vit.build_mlp"] = Case(lambda: {"seed": 0, "hidden": 4}, skip={"seed"})
    c["explain.deletion_curve"] = Case(
        lambda: {
            "model": _vit(),
            "images": _images(2),
            "labels": _labels(2),
            "scores": _rand(2, 16, seed=1),
            "patch_size": 2,
            "fill": 0.0,
        },
        ids={"labels": 10},
        other={"model": _vit16},
        nan={"images", "scores"},
        typed={"images"},
        nonempty={"images": (1, 2, 3)},
        batch={"images", "labels", "scores"},
    )
    c["explain.deletion_area"] = Case(lambda: {"curve": _rand(2, 5)}, batch={"curve"})
    c["explain.partial_spearman"] = Case(
        lambda: {"a": _rand(2, 5), "b": _rand(2, 5, seed=1), "given": _rand(2, 5, seed=2)}
    )
    c["vit_study.fills"] = Case(lambda: {"data": _digits()})
    c["vit_study.measure"] = Case(
        lambda: {"model": _vit(), "untrained": _vit(), "data": _digits(), "seed": 0},
        skip={"seed"},
        other={"model": _vit16, "untrained": _vit_p4},
    )
    c["vit.position_similarity"] = Case(lambda: {"model": _vit()})
    c["vit_study.neighbour_swap"] = Case(lambda: {"grid": 4})
    c["vit_study.distance_correlation"] = Case(
        lambda: {"similarity": _rand(3, 3, 3, 3), "distance": "city block"}, nan={"similarity"}
    )
    c["composition.path_ablation_accuracy"] = Case(
        lambda: {"model": _induction_model(), "batch": _repeat_batch(), "paths": ("queries",)},
        other={"model": _induction_model8},
    )
    c["seq2seq.rewrite"] = Case(
        lambda: {"model": _gru(), "texts": ["03/02/01"], "start_from": None}
    )
    c["seq2seq.other_century"] = Case(lambda: {"text": "03/02/01"})
    c["seq2seq.century_swap"] = Case(
        lambda: {
            "model": _gru(),
            "batch": dates.encode_dates([datetime.date(2001, 2, 3)] * 2, ["numeric"] * 2),
        }
    )
    c["dates.encode_sources"] = Case(lambda: {"texts": ["03/02/01", "3 Feb 2001"]})
    c["pooling.NWKernelRegression.forward"] = Case(
        lambda: {"queries": _rand(3), "keys": _rand(5), "values": _rand(5, seed=1)},
        accepts={"keys": {"axes+"}, "values": {"axes+"}},
        batch={"queries"},
        call=_forward(pooling.NWKernelRegression),
    )
    # --- the forward of every public module not covered above
    stream = {"typed": {"X"}, "width": {"X"}, "nonempty": {"X": (1,)}, "batch": {"X"}}
    c["induction.CausalAttentionLayer.forward"] = Case(
        lambda: {"x": _rand(2, 3, 8), "keep": torch.tensor([1.0, 0.0])},
        nan={"keep"},
        accepts={"keep": {"dtype"}},  # an integer or a float64 keep is a factor too
        typed={"x"},
        width={"x"},
        nonempty={"x": (1,)},
        batch={"x"},
        call=_forward(lambda: induction.CausalAttentionLayer(8, 2)),
    )
    c["length_generalisation.PositionAttention.forward"] = Case(
        lambda: {"x": _rand(2, 3, 8)},
        typed={"x"},
        width={"x"},
        nonempty={"x": (1,)},
        batch={"x"},
        call=_forward(lambda: length_generalisation.PositionAttention(8, 2, "rope")),
    )
    c["lm.CausalSelfAttention.forward"] = Case(
        lambda: {"X": _rand(2, 3, 8)}, **stream, call=_forward(lambda: lm.CausalSelfAttention(8, 2))
    )
    c["lm.DecoderBlock.forward"] = Case(
        lambda: {"X": _rand(2, 3, 8)}, **stream, call=_forward(lambda: lm.DecoderBlock(8, 2))
    )
    c["mqar.CausalSoftmaxAttention.forward"] = Case(
        lambda: {"X": _rand(2, 3, 8)},
        **stream,
        call=_forward(lambda: mqar.CausalSoftmaxAttention(8, 2)),
    )
    c["mqar.PreLNBlock.forward"] = Case(
        lambda: {"X": _rand(2, 3, 8)},
        **stream,
        call=_forward(lambda: mqar.PreLNBlock(8, mqar.CausalSoftmaxAttention(8), 16)),
    )
    for norm in ("LayerNorm", "RMSNorm"):
        c[f"norms.{norm}.forward"] = Case(
            lambda: {"X": _rand(2, 4)},
            accepts={"X": {"axes+", "axes-"}},  # any leading axes
            typed={"X"},
            width={"X"},
            batch={"X"},
            call=_forward(lambda norm=norm: getattr(norms, norm)(4)),
        )
    c["transformer.PositionWiseFFN.forward"] = Case(
        lambda: {"X": _rand(2, 3, 4)},
        accepts={"X": {"axes+", "axes-"}},  # any leading axes
        typed={"X"},
        width={"X"},
        batch={"X"},
        call=_forward(lambda: transformer.PositionWiseFFN(4, 8)),
    )
    c["training.RecallAttention.forward"] = Case(
        lambda: {"queries": _rand(2, 3, 4), "keys": _rand(2, 5, 4), "values": _rand(2, 5, 2)},
        typed={"queries", "keys", "values"},
        width={"queries", "keys", "values"},
        nonempty={"queries": (1,), "keys": (1,)},
        batch={"queries", "keys", "values"},
        call=_forward(lambda: training.RecallAttention(4, 2)),
    )
    c["decoder.TransformerDecoderLayer.forward"] = Case(
        lambda: {
            "X": _rand(2, 3, 8),
            "memory": _rand(2, 4, 8, seed=1),
            "memory_lens": torch.tensor([2, 4]),
            "causal": True,
        },
        ids={"memory_lens": 5},
        accepts={"memory_lens": {"wrong type", "float ids"}},
        typed={"X", "memory"},
        width={"X", "memory"},
        nonempty={"X": (1,), "memory": (1,)},
        batch={"X", "memory", "memory_lens"},
        call=_forward(lambda: decoder.TransformerDecoderLayer(8, 2, 16)),
    )
    c["seq2seq.GRUEncoder.forward"] = Case(
        lambda: {
            "source": torch.tensor([[1, 2, 3], [4, 5, 0]]),
            "source_lens": torch.tensor([3, 2]),
        },
        ids={"source": 10, "source_lens": 4},
        accepts={"source_lens": {"wrong type", "float ids"}},
        nonempty={"source": (1,)},
        batch={"source", "source_lens"},
        call=_forward(lambda: seq2seq.GRUEncoder(10, 4, 4)),
    )
    c["seq2seq.AdditiveCrossAttention.forward"] = Case(
        lambda: {
            "query": _rand(2, 6),
            "projected": _rand(2, 3, 4, seed=1),
            "states": _rand(2, 3, 5, seed=2),
            "lens": torch.tensor([3, 2]),
        },
        ids={"lens": 4},
        accepts={"lens": {"wrong type", "float ids"}},
        typed={"query", "projected", "states"},
        width={"query", "projected", "states"},
        nonempty={"projected": (1,), "states": (1,)},
        batch={"query", "projected", "states", "lens"},
        call=_forward(lambda: seq2seq.AdditiveCrossAttention(6, 5, 4)),
    )
    _method_cases(c)
    return c


def _method_cases(c: dict[str, Case]) -> None:
    """One valid call per public method (besides the forwards above) of a public class."""
    from attnbook import dates, decoder, induction, lm, multihead, seq2seq, training, transformer

    c["multihead.MultiHeadAttention.split_heads"] = Case(
        lambda: {"X": _rand(2, 3, 8)},
        width={"X"},
        batch={"X"},
        accepts={"X": {"dtype"}},  # a reshape: any dtype
        call=(lambda: multihead.MultiHeadAttention(8, 2), "split_heads"),
    )
    c["multihead.MultiHeadAttention.merge_heads"] = Case(
        lambda: {"X": _rand(4, 3, 4)},
        width={"X"},
        batch={"X"},
        accepts={"X": {"dtype"}},
        call=(lambda: multihead.MultiHeadAttention(8, 2), "merge_heads"),
    )
    c["training.RecallAttention.scores"] = Case(
        lambda: {"queries": _rand(2, 3, 4), "keys": _rand(2, 5, 4, seed=1)},
        typed={"queries", "keys"},
        width={"queries", "keys"},
        nonempty={"queries": (1,), "keys": (1,)},
        batch={"queries", "keys"},
        call=(lambda: training.RecallAttention(4, num_heads=2), "scores"),
    )
    c["induction.InductionLog.first_step_above"] = Case(
        lambda: {"accuracy": 0.5},
        call=(
            lambda: induction.InductionLog(steps=[0, 10], accuracies=[0.1, 0.9]),
            "first_step_above",
        ),
    )
    c["transformer.TransformerBlock.from_torch"] = Case(
        lambda: {"layer": nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)},
        call=(lambda: transformer.TransformerBlock, "from_torch"),
    )
    c["decoder.TransformerDecoderLayer.from_torch"] = Case(
        lambda: {"layer": nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, batch_first=True)},
        call=(lambda: decoder.TransformerDecoderLayer, "from_torch"),
    )
    for module in ("lm", "corpus"):
        c[f"{module}.CharTokenizer.encode"] = Case(
            lambda: {"text": "abc", "errors": "strict"},
            call=(lambda: lm.CharTokenizer("abcab"), "encode"),
        )
        c[f"{module}.CharTokenizer.decode"] = Case(
            lambda: {"ids": torch.tensor([0, 1, 2])},
            ids={"ids": 3},
            accepts={"ids": {"wrong type"}},  # a list of ids is decoded too
            call=(lambda: lm.CharTokenizer("abcab"), "decode"),
        )
    c["lm.TinyLM.check_ids"] = Case(
        lambda: {"ids": torch.tensor([[1, 2, 3]]), "name": "ids"},
        ids={"ids": 11},
        batch={"ids"},
        skip={"name"},
        call=(_tiny_lm, "check_ids"),
    )

    def seq2seq_model():
        return decoder.TransformerSeq2Seq(
            10, 10, num_hiddens=8, num_heads=2, ffn_hiddens=16, max_len=12
        )

    source = {"source": torch.tensor([[1, 2, 3], [4, 5, 0]]), "source_lens": torch.tensor([3, 2])}
    sourced = {
        "ids": {"source": 10, "source_lens": 4},
        "accepts": {"source_lens": {"wrong type", "float ids"}},
        "nonempty": {"source": (1,)},
        "batch": {"source", "source_lens"},
    }
    c["decoder.TransformerSeq2Seq.encode"] = Case(
        lambda: dict(source), **sourced, call=(seq2seq_model, "encode")
    )
    c["decoder.TransformerSeq2Seq.greedy"] = Case(
        lambda: {**source, "length": 2}, **sourced, call=(seq2seq_model, "greedy")
    )
    c["decoder.TransformerSeq2Seq.decode"] = Case(
        lambda: {
            "decoder_input": torch.tensor([[1, 2], [3, 4]]),
            "memory": _rand(2, 3, 8),
            "source_lens": torch.tensor([3, 2]),
        },
        ids={"decoder_input": 10, "source_lens": 4},
        accepts={"source_lens": {"wrong type", "float ids"}},
        typed={"memory"},
        width={"memory"},
        nonempty={"decoder_input": (1,), "memory": (1,)},
        batch={"decoder_input", "memory", "source_lens"},
        call=(seq2seq_model, "decode"),
    )

    def gru():
        return seq2seq.GRUSeq2Seq(10, 10, embed=4, enc_hiddens=4, dec_hiddens=8, attn_hiddens=4)

    c["seq2seq.GRUSeq2Seq.initial_state"] = Case(
        lambda: dict(source), **sourced, call=(gru, "initial_state")
    )
    c["seq2seq.GRUSeq2Seq.greedy"] = Case(
        lambda: {**source, "length": 2, "initial_state": _rand(2, 8)},
        ids=sourced["ids"],
        nonempty=sourced["nonempty"],
        batch={"source", "source_lens", "initial_state"},
        width={"initial_state"},
        accepts={
            "source_lens": {"wrong type", "float ids"},
            "initial_state": {"float16", "float64"},  # converted to the model's dtype
        },
        call=(gru, "greedy"),
    )
    c["seq2seq.AdditiveCrossAttention.keys"] = Case(
        lambda: {"states": _rand(2, 3, 5)},
        typed={"states"},
        width={"states"},
        nonempty={"states": (1,)},
        batch={"states"},
        call=(lambda: seq2seq.AdditiveCrossAttention(6, 5, 4), "keys"),
    )
    c["seq2seq.Seq2SeqLog.exact_at"] = Case(
        lambda: {"step": 5},
        call=(lambda: seq2seq.Seq2SeqLog(steps=[0, 5], exact=[0.1, 0.5]), "exact_at"),
    )
    c["dates.Vocab.encode"] = Case(
        lambda: {"text": "ab"}, call=(lambda: dates.Vocab(["a", "b"]), "encode")
    )
    c["dates.Vocab.decode"] = Case(
        lambda: {"indices": torch.tensor([0, 1])},
        ids={"indices": 2},
        accepts={"indices": {"wrong type"}},  # a list of indices is decoded too
        call=(lambda: dates.Vocab(["a", "b"]), "decode"),
    )
    c["dates.DateTask.train_batch"] = Case(
        lambda: {"batch_size": 2, "generator": _g()},
        call=(lambda: dates.DateTask(seed=0), "train_batch"),
    )
    c["dates.DateTask.test_batch"] = Case(
        lambda: {"size": 2}, call=(lambda: dates.DateTask(seed=0), "test_batch")
    )


# Public callables that take no argument a student could spoil, or whose run
# is a full training (their arguments are checked by the functions they call,
# which have cases above).
NO_CASE = {
    "lm.load_checkpoint": "no arguments",
    "lm.checkpoint_info": "no arguments",
    "length_generalisation.load_sweep": "no arguments",
    "vit_study.load_sweep": "no arguments",
    "seq2seq.load_runs": "no arguments",
    "seq2seq.figure_probe": "no arguments",
    "digits.load_digits_split": "no arguments",
    "vit_study.run_seed": "a full training run (vit.train_vit has a case)",
    "vit_study.baselines": "fits scikit-learn models on the whole split",
    "seq2seq.train_dates": "a full training run (train_seq2seq's parts have cases)",
    "seq2seq.train_reversal": "a full training run",
    "seq2seq.train_seq2seq": "takes a batch-making callable; tested in test_seq2seq",
    "seq2seq.evaluate": "takes a trained model; tested in test_seq2seq",
    "flash.peak_training_memory": "its inputs are positional (*args); tested in test_flash",
    "lm.save_checkpoint": "writes a file; tested in test_lm",
    "pooling.NWKernelRegression": "no arguments (its forward has a case)",
}

_CASES = _cases()


def _is_record(obj) -> bool:
    """A dataclass used as a plain record (its fields are not validated inputs)."""
    return isinstance(obj, type) and hasattr(obj, "__dataclass_fields__")


def _public_callables() -> list[str]:
    names = []
    for module in MODULES:
        mod = importlib.import_module(f"attnbook.{module}")
        assert hasattr(mod, "__all__"), f"attnbook.{module} has no __all__"
        for name in mod.__all__:
            obj = getattr(mod, name)
            if callable(obj) and not _is_record(obj) and not isinstance(obj, torch.dtype):
                names.append(f"{module}.{name}")
    return names


def _public_methods() -> list[str]:
    """``module.Class.method`` for each public method of a public class that takes an
    argument (a function, classmethod or staticmethod defined in attnbook; not a
    property or a dataclass field)."""
    names = []
    for module in MODULES:
        mod = importlib.import_module(f"attnbook.{module}")
        for cname in mod.__all__:
            cls = getattr(mod, cname)
            if not isinstance(cls, type) or not cls.__module__.startswith("attnbook"):
                continue
            seen: set[str] = set()
            for klass in cls.__mro__:
                if not klass.__module__.startswith("attnbook"):
                    continue
                for attr, raw in vars(klass).items():
                    if attr.startswith("_") or attr in seen:
                        continue
                    seen.add(attr)
                    wrapped = isinstance(raw, (classmethod, staticmethod))
                    fn = raw.__func__ if wrapped else raw
                    if not inspect.isfunction(fn):
                        continue
                    params = list(inspect.signature(fn).parameters)
                    if not isinstance(raw, staticmethod):
                        params = params[1:]  # self or cls
                    if params:
                        names.append(f"{module}.{cname}.{attr}")
    return names


def test_public_methods_are_found():
    methods = _public_methods()
    assert "multihead.MultiHeadAttention.split_heads" in methods
    assert "transformer.TransformerBlock.from_torch" in methods  # a classmethod
    assert "lm.TinyLM.config" not in methods  # no argument to spoil
    assert "induction.AttentionOnlyTransformer.attention_weights" not in methods  # a property


def test_every_public_method_has_a_case():
    missing = [n for n in _public_methods() if n not in _CASES and n not in NO_CASE]
    assert not missing, f"add a valid call to CASES for: {missing}"


def test_every_public_callable_has_a_case():
    missing = [n for n in _public_callables() if n not in _CASES and n not in NO_CASE]
    assert not missing, f"add a valid call to CASES for: {missing}"


def test_every_module_lists_its_public_names():
    import pkgutil

    for info in pkgutil.iter_modules(attnbook.__path__):
        if info.name.startswith("_"):
            continue
        mod = importlib.import_module(f"attnbook.{info.name}")
        assert isinstance(getattr(mod, "__all__", None), list), info.name
        for name in mod.__all__:
            assert hasattr(mod, name), f"attnbook.{info.name}.__all__ names missing {name}"


# --- spoiling


def _spoilings(case: Case, valid: dict):
    """Yield (argument, kind, spoiled value) for every applicable bad input."""
    for arg, value in valid.items():
        if arg in case.skip:
            continue
        ok = case.accepts.get(arg, set())

        def want(kind, bad, arg=arg, ok=ok):
            return None if kind in ok else (arg, kind, bad)

        out = []
        if isinstance(value, bool):
            out.append(want("flag string", "False"))
            out.append(want("wrong type", 1.5))
        elif isinstance(value, int):
            out.append(want("wrong type", "3"))
            out.append(want("fractional", 2.5))
            out.append(want("negative", -1))
        elif isinstance(value, float):
            out.append(want("wrong type", "0.5"))
            out.append(want("nan", math.nan))
        elif isinstance(value, str):
            out.append(want("wrong type", 3))
        elif isinstance(value, nn.Module):
            out.append(want("wrong type", "model"))
            out.append(want("wrong module", nn.Linear(2, 2)))
            if arg in case.other:
                out.append(want("model shape", case.other[arg]()))
        elif isinstance(value, torch.dtype):
            out.append(want("wrong type", "float32"))
        elif isinstance(value, torch.Generator):
            out.append(want("wrong type", "generator"))
        elif isinstance(value, torch.Tensor):
            out.append(want("wrong type", value.tolist() if value.dim() else "x"))
            out.append(want("axes+", value.unsqueeze(0)))
            if value.dim() >= 1:
                out.append(want("axes-", value[0]))
            if value.is_floating_point():
                out.append(want("dtype", value.to(torch.complex64)))
                if arg in case.nan:
                    bad = value.clone()
                    bad.view(-1)[0] = math.nan
                    out.append(want("nan", bad))
            else:
                out.append(want("dtype", value.to(torch.bool)))
            if arg in case.ids:
                bad = value.clone()
                bad.view(-1)[-1] = case.ids[arg] + 1000
                out.append(want("id out of range", bad))
                bad = value.clone()
                bad.view(-1)[0] = -5
                out.append(want("negative id", bad))
                out.append(want("float ids", value.to(torch.float32)))
            if arg in case.typed:
                out.append(want("float16", value.to(torch.float16)))
                out.append(want("float64", value.to(torch.float64)))
            if arg in case.width:
                out.append(want("width", torch.cat([value, value[..., :1]], dim=-1)))
            for axis in case.nonempty.get(arg, ()):
                out.append(want(f"empty axis {axis}", value.narrow(axis, 0, 0)))
        yield from (o for o in out if o is not None)


def _empties(case: Case, valid: dict):
    """The valid call with every batch argument emptied along axis 0."""
    if not case.batch:
        return None
    return {k: (v[:0] if k in case.batch else v) for k, v in valid.items()}


def _invoke(name: str, case: Case, kwargs: dict):
    if case.call is not None:
        make, method = case.call
        return getattr(make(), method)(**kwargs)
    module, attr = name.split(".", 1)
    target = importlib.import_module(f"attnbook.{module}")
    for part in attr.split("."):
        target = getattr(target, part)
    return target(**kwargs)


def _outcome(name, case, arg, kwargs) -> str:
    try:
        _invoke(name, case, kwargs)
    except (TypeError, ValueError) as err:
        return "clear" if arg in str(err) else f"unclear: {type(err).__name__}: {err}"
    except Exception as err:
        return f"crash: {type(err).__name__}: {err}"
    return "silent"


SPOILED = [
    (name, arg, kind)
    for name, case in _CASES.items()
    for arg, kind, _ in _spoilings(case, case.make())
]

# A gap found later goes here as a strict xfail until it is fixed (none today).
KNOWN_GAPS: set[tuple[str, str, str]] = set()
EMPTY_GAPS: set[str] = set()


@pytest.mark.parametrize(
    ("name", "arg", "kind"),
    [
        pytest.param(*s, marks=pytest.mark.xfail(strict=True, reason="known gap"))
        if s in KNOWN_GAPS
        else s
        for s in SPOILED
    ],
    ids=[f"{n}-{a}-{k}" for n, a, k in SPOILED],
)
def test_bad_argument_is_refused_by_name(name, arg, kind):
    case = _CASES[name]
    valid = case.make()
    bad = next(b for a, k, b in _spoilings(case, valid) if (a, k) == (arg, kind))
    outcome = _outcome(name, case, arg, {**valid, arg: bad})
    assert outcome == "clear", f"{name}({arg}=<{kind}>): {outcome}"


@pytest.mark.parametrize("name", sorted(_CASES))
def test_valid_call_works(name):
    case = _CASES[name]
    _invoke(name, case, case.make())


EMPTY = sorted(n for n, c in _CASES.items() if c.batch)


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.xfail(strict=True, reason="known gap"))
        if n in EMPTY_GAPS
        else n
        for n in EMPTY
    ],
)
def test_empty_batch_is_handled_or_refused(name):
    case = _CASES[name]
    kwargs = _empties(case, case.make())
    try:
        result = _invoke(name, case, kwargs)
    except (TypeError, ValueError) as err:
        assert any(a in str(err) for a in case.batch), f"{name}: unclear error {err}"
        return
    # any other exception propagates and fails the test; a NaN is no documented result
    assert not _holds_nan(result), f"{name}: an empty batch gave NaN: {result!r}"


def _holds_nan(value) -> bool:
    """Whether a result (a tensor, a number, or a tuple, list or dict of them) holds NaN."""
    if isinstance(value, torch.Tensor):
        return value.is_floating_point() and bool(value.isnan().any())
    if isinstance(value, float):
        return math.isnan(value)
    if isinstance(value, dict):
        value = list(value.values())
    return isinstance(value, (tuple, list)) and any(_holds_nan(v) for v in value)


def census() -> dict[str, int]:
    """Counts over every spoiled call (used for the closing note)."""
    counts = {"calls": 0, "clear": 0, "unclear": 0, "crash": 0, "silent": 0}
    for name, arg, kind in SPOILED:
        case = _CASES[name]
        valid = case.make()
        bad = next(b for a, k, b in _spoilings(case, valid) if (a, k) == (arg, kind))
        outcome = _outcome(name, case, arg, {**valid, arg: bad})
        counts["calls"] += 1
        counts[outcome.split(":")[0]] += 1
    return counts


def test_the_library_has_no_import_circle():
    """attnbook's modules import one another without a circle (type-checking
    imports included); found by reading every ``from . import`` statement."""
    import ast
    import pathlib

    root = pathlib.Path(attnbook.__file__).parent
    graph = {}
    for path in root.rglob("*.py"):
        name = ".".join(path.relative_to(root).with_suffix("").parts)
        name = name.removesuffix(".__init__").removesuffix("__init__") or "attnbook"
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                base = package.split(".") if package else []
                base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
                target = ".".join([*base, node.module] if node.module else base)
                for alias in node.names if not node.module else [None]:
                    full = f"{target}.{alias.name}".strip(".") if alias else target
                    edges.add(full)
        graph[name] = edges
    graph = {k: {e for e in v if e in graph and e != k} for k, v in graph.items()}
    state: dict[str, int] = {}

    def visit(node, trail):
        state[node] = 1
        for nxt in graph[node]:
            if state.get(nxt) == 1:
                pytest.fail(f"import circle: {' -> '.join([*trail, node, nxt])}")
            if nxt not in state:
                visit(nxt, [*trail, node])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [])
