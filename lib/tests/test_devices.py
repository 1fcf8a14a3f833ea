"""Every module with tensors or models on every device the tests can reach.

Each case builds its inputs on ``device`` (the conftest fixture: the CPU, and
CUDA where there is one) and requires that the result lives there too: no
tensor is made on the CPU behind the caller's back. ``test_meta`` runs the
cases whose code has no data-dependent branch on the ``meta`` device, where
an operation mixing a meta tensor with a hidden CPU tensor fails, so a CPU-only
machine catches what a GPU would.
"""

from __future__ import annotations

import pytest
import torch

from attnbook import (
    alibi,
    explain,
    flash,
    induction,
    length_generalisation,
    linear_attention,
    lm,
    mqar,
    multihead,
    norms,
    patches,
    rope,
    sampling,
    transformer,
    vit,
)


def _g():
    return torch.Generator().manual_seed(0)


def _r(*shape, device):
    return torch.rand(*shape, generator=_g()).to(device)


def _mha(device):
    layer = multihead.MultiHeadAttention(8, 2).to(device)
    X = _r(2, 3, 8, device=device)
    return layer(X, X, X, torch.tensor([1, 3], device=device))


def _block(device):
    block = transformer.TransformerBlock(8, 2, 16).to(device)
    return block(_r(2, 3, 8, device=device))


def _tiny_lm(device):
    torch.manual_seed(0)
    return lm.TinyLM(vocab_size=11, num_hiddens=8, num_heads=2, num_layers=1, max_len=16).to(device)


def _generate(device):
    return lm.generate(
        _tiny_lm(device), torch.tensor([1, 2, 3], device=device), 5, temperature=0.8, seed=0
    )


def _train_lm(device):
    model = _tiny_lm(device)
    lm.train_lm(model, torch.arange(40, device=device) % 11, steps=1, batch_size=2, context=8)
    return next(model.parameters())


def _matmul_flops(device):
    flops = lm.matmul_flops(_tiny_lm(device), 3, use_cache=True)
    return torch.tensor(flops, device=device)


def _induction(device):
    model = induction.AttentionOnlyTransformer(
        vocab=16, num_hiddens=8, num_heads=2, num_layers=2, max_len=12
    ).to(device)
    batch = induction.make_repeat_batch(3, length=12, segment=4, vocab=16, max_gap=2)
    batch = induction.RepeatBatch(
        batch.tokens.to(device), batch.first.to(device), batch.second.to(device), batch.segment
    )
    induction.copy_accuracy(model, batch)
    induction.head_scores(model, batch)
    return batch.copy_positions()


def _induction_targets(device):
    first = torch.tensor([0, 1], device=device)
    return induction.induction_targets(first, first + 5, 3)[0]


def _tiled(device):
    q = _r(2, 5, 4, device=device)
    return flash.tiled_attention(q, q, q, block_size=2, causal=True)


def _flash(device):
    q = _r(2, 5, 4, device=device)
    return flash.flash_attention(q, q, q, block_size=2)


def _tile_trace(device):
    return flash.tile_trace(_r(5, 6, device=device), 2, causal=True)[-1].running_max


def _linear(device):
    layer = linear_attention.LinearSelfAttention(8, 2).to(device)
    return layer(_r(2, 3, 8, device=device))


def _recall_lm(device):
    model = mqar.RecallLM(vocab_size=32, num_hiddens=8, num_layers=1, max_len=16).to(device)
    return model(torch.tensor([[1, 2, 3]], device=device))


def _rope(device):
    return rope.apply_rope(_r(2, 3, 4, device=device), torch.arange(3, device=device))


def _position_models(device):
    out = []
    for scheme in length_generalisation.SCHEMES:
        model = length_generalisation.PositionModel(
            scheme, vocab=16, num_hiddens=8, num_heads=2, num_layers=1, max_len=20
        ).to(device)
        out.append(model(torch.tensor([[1, 2, 3]], device=device)))
    return out[-1]


def _vit(device):
    return vit.build_vit(num_hiddens=8, num_heads=2, ffn_hiddens=8, num_layers=1).to(device)


def _vit_forward(device):
    return _vit(device)(_r(3, 1, 8, 8, device=device))


def _vit_eval(device):
    model = _vit(device)
    X, y = _r(3, 1, 8, 8, device=device), torch.tensor([0, 1, 2], device=device)
    vit.train_vit(model, X, y, epochs=1, batch_size=2)
    vit.accuracy(model, X, y)
    return vit.predict_proba(model, X)


def _explain(device):
    model = _vit(device)
    model(_r(2, 1, 8, 8, device=device))
    weights = list(model.attention_weights)
    explain.attention_rollout(weights)
    return explain.cls_attention(weights[-1])


def _occlusion(device):
    model = _vit(device)
    X, y = _r(2, 1, 8, 8, device=device), torch.tensor([0, 1], device=device)
    return explain.occlusion_scores(model, X, y, 2)


def _draw(device):
    probs = torch.softmax(_r(3, 5, device=device), -1)
    return sampling.draw(probs, _g())


def _norms(device):
    X = _r(2, 4, device=device)
    norms.layer_norm(X)
    return norms.LayerNorm(4).to(device)(X)


def _patches(device):
    return patches.unpatchify(patches.patchify(_r(2, 1, 4, 4, device=device), 2), 2, 4, 4)


def _alibi_scores(device):
    scores = _r(2, 3, 3, device=device)
    return scores + alibi.alibi_bias(3, 2).to(device)


def _train_induction(device):
    model = induction.AttentionOnlyTransformer(
        vocab=16, num_hiddens=8, num_heads=2, num_layers=2, max_len=12
    ).to(device)
    task = {"length": 12, "segment": 4, "vocab": 16, "max_gap": 2}
    induction.train_induction(model, steps=1, batch=2, probe_size=2, task=task, copy_only=True)
    batch = induction.make_repeat_batch(3, length=12, segment=4, vocab=16, max_gap=2)
    batch = induction.RepeatBatch(
        batch.tokens.to(device), batch.first.to(device), batch.second.to(device), batch.segment
    )
    induction.ablation_table(model, batch, [(0, 1)])
    return next(model.parameters())


def _train_mqar(device):
    model = mqar.RecallLM(vocab_size=32, num_hiddens=8, num_layers=1, max_len=16).to(device)
    mqar.train_mqar(model, steps=1, batch=2, eval_every=1, num_pairs=2, probe_size=2)
    return next(model.parameters())


def _train_positions(device):
    lg = length_generalisation
    model = lg.PositionModel(
        "alibi", vocab=16, num_hiddens=8, num_heads=2, num_layers=1, max_len=20
    ).to(device)
    lg.train_positions(model, steps=1, batch=2, min_length=4, max_length=6)
    lg.evaluate(model, lengths=(6,), size=2)
    lg.copy_head_score(model, 6, size=2)
    return next(model.parameters())


def _rope_score(device):
    q = _r(4, device=device)
    return rope.rope_score(q, q, 2, 1)


def _seq2seq_models(device):
    from attnbook import decoder, seq2seq

    source = torch.tensor([[1, 2, 3], [4, 5, 0]], device=device)
    lens = torch.tensor([3, 2], device=device)
    target = torch.tensor([[1, 2], [3, 4]], device=device)
    gru = seq2seq.GRUSeq2Seq(10, 10, embed=4, enc_hiddens=4, dec_hiddens=8, attn_hiddens=4)
    gru.to(device)(source, lens, target)
    model = decoder.TransformerSeq2Seq(
        10, 10, num_hiddens=8, num_heads=2, ffn_hiddens=16, max_len=12
    ).to(device)
    model.greedy(source, lens, 3)
    return model(source, lens, target)


CASES = {
    "seq2seq_models": _seq2seq_models,
    "induction.train_induction": _train_induction,
    "mqar.train_mqar": _train_mqar,
    "length_generalisation.train_positions": _train_positions,
    "rope.rope_score": _rope_score,
    "multihead": _mha,
    "transformer": _block,
    "lm.generate": _generate,
    "lm.train_lm": _train_lm,
    "lm.matmul_flops": _matmul_flops,
    "induction": _induction,
    "induction.induction_targets": _induction_targets,
    "flash.tiled_attention": _tiled,
    "flash.flash_attention": _flash,
    "flash.tile_trace": _tile_trace,
    "linear_attention": _linear,
    "mqar": _recall_lm,
    "rope": _rope,
    "alibi": _alibi_scores,
    "length_generalisation": _position_models,
    "vit.forward": _vit_forward,
    "vit.train_and_evaluate": _vit_eval,
    "explain.attention": _explain,
    "explain.occlusion_scores": _occlusion,
    "sampling.draw": _draw,
    "norms": _norms,
    "patches": _patches,
}

# Cases whose code makes no data-dependent decision (no .item(), no check of
# values), so they run on the meta device.
META = [
    "transformer",
    "linear_attention",
    "alibi",
    "flash.flash_attention",
    "vit.forward",
    "norms",
    "patches",
]


@pytest.mark.parametrize("name", sorted(CASES))
def test_result_stays_on_the_device(name, device):
    out = CASES[name](device)
    assert out.device.type == torch.device(device).type


@pytest.mark.parametrize("name", META)
def test_meta(name):
    out = CASES[name]("meta")
    assert out.device.type == "meta"


def test_meta_catches_a_hidden_cpu_tensor():
    """The meta test is not vacuous: an operation with a hidden CPU tensor fails there."""

    def hidden(device):
        X = _r(2, 3, device=device)
        return X * torch.ones(2, 3)  # made on the CPU behind the caller's back

    assert hidden("cpu").device.type == "cpu"
    with pytest.raises(RuntimeError):
        hidden("meta")


def test_generate_draws_the_same_tokens_on_every_device(device):
    """A seeded sample is drawn on a CPU generator: one seed, one text, any device."""
    probs = torch.softmax(torch.rand(4, 7, generator=_g(), dtype=torch.float64), -1)
    cpu = sampling.draw(probs, _g())
    there = sampling.draw(probs.to(device), _g())
    assert there.device.type == torch.device(device).type
    assert torch.equal(there.cpu(), cpu)
