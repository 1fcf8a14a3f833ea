"""Tests of attnbook.lm: corpus, tokenizer, causal attention, the model, decoding
with and without the key-value cache, its size and cost, the shipped checkpoint."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnbook import corpus, lm, sampling
from attnbook.masking import masked_softmax

LIB = Path(__file__).resolve().parents[1]


def small_model(seed=0, vocab=11, hiddens=16, heads=4, layers=2, max_len=24):
    torch.manual_seed(seed)
    return lm.TinyLM(vocab, hiddens, heads, layers, max_len).eval()


# ---------------------------------------------------------------- corpus and tokenizer


def test_corpus_is_plain_prose_of_a_few_tens_of_kb():
    text = lm.load_corpus()
    assert 20_000 < len(text) < 200_000
    assert text.isascii() and text.endswith("\n")
    assert "attention" in text and "```" not in text and "$" not in text


def test_package_data_lists_every_shipped_file():
    """A non-editable install (Colab, `make colab`) must carry lm_data: its files
    is a data package listed in [tool.setuptools] packages, its files named by
    [tool.setuptools.package-data]. test_widgets.py, which `make
    test-widgets-ipyw7` runs against such an install, loads both."""
    tomllib = pytest.importorskip("tomllib")
    setuptools = tomllib.loads((LIB / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "attnbook.lm_data" in setuptools["packages"]
    globs = setuptools["package-data"]["attnbook.lm_data"]
    shipped = sorted(p.name for p in (LIB / "attnbook" / "lm_data").iterdir())
    assert shipped == [lm.CORPUS_FILE, lm.CHECKPOINT_FILE]
    for name in shipped:
        assert any(Path(name).match(pattern) for pattern in globs), name


def test_tokenizer_round_trip_and_vocabulary():
    tokenizer = lm.CharTokenizer("hello world")
    assert tokenizer.chars == [" ", "d", "e", "h", "l", "o", "r", "w"]
    ids = tokenizer.encode("hold low")
    assert ids.dtype == torch.long and ids.tolist() == [3, 5, 4, 1, 0, 4, 5, 7]
    assert tokenizer.decode(ids) == "hold low"
    assert tokenizer.decode([7, 5]) == "wo"


def test_tokenizer_unknown_characters():
    tokenizer = lm.CharTokenizer("abc")
    with pytest.raises(ValueError, match=r"character 'z' at position 2, which is not in"):
        tokenizer.encode("abz")
    assert tokenizer.encode("azb", errors="skip").tolist() == [0, 1]
    with pytest.raises(ValueError, match="errors must be 'strict' or 'skip'"):
        tokenizer.encode("a", errors="ignore")
    with pytest.raises(ValueError, match=r"ids must lie in \[0, 2\]"):
        tokenizer.decode([0, 3])
    with pytest.raises(ValueError, match="ids must be a 1-D sequence of integer ids"):
        tokenizer.decode(torch.zeros(2, 2, dtype=torch.long))
    with pytest.raises(TypeError, match="text must be a string"):
        tokenizer.encode(5)
    with pytest.raises(ValueError, match="text must be a non-empty string"):
        lm.CharTokenizer("")


# ---------------------------------------------------------------- causal attention


@settings(max_examples=25, deadline=None)
@given(
    batch=st.integers(1, 3),
    steps=st.integers(1, 9),
    d=st.integers(1, 6),
    seed=st.integers(0, 2**16),
)
def test_chapter_4_lengths_equal_is_causal(batch, steps, d, seed):
    """masked_softmax with 2-D valid lengths i + 1 is causal attention."""
    g = torch.Generator().manual_seed(seed)
    Q, K, V = (torch.randn(batch, steps, d, generator=g) for _ in range(3))
    lens = torch.arange(1, steps + 1).expand(batch, steps)  # (batch, queries)
    weights = masked_softmax(Q @ K.transpose(1, 2) / d**0.5, lens)
    reference = torch.nn.functional.scaled_dot_product_attention(Q, K, V, is_causal=True)
    torch.testing.assert_close(weights @ V, reference, atol=1e-5, rtol=1e-5)
    assert torch.equal(
        weights > 0, torch.ones(steps, steps, dtype=torch.bool).tril().expand_as(weights)
    )


def test_attention_layer_equals_sdpa_with_the_same_weights():
    torch.manual_seed(1)
    layer = lm.CausalSelfAttention(12, 3)
    X = torch.randn(2, 7, 12)
    out, (K, V) = layer(X)

    def heads(Y):
        return Y.reshape(2, 7, 3, 4).transpose(1, 2)

    Q = heads(X @ layer.W_q.weight.T)
    reference = torch.nn.functional.scaled_dot_product_attention(
        Q, heads(X @ layer.W_k.weight.T), heads(X @ layer.W_v.weight.T), is_causal=True
    )
    reference = reference.transpose(1, 2).reshape(2, 7, 12) @ layer.W_o.weight.T
    torch.testing.assert_close(out, reference, atol=1e-5, rtol=1e-5)
    assert layer.attention_weights.shape == (2, 3, 7, 7)
    assert K.shape == V.shape == (2, 3, 7, 4)
    with pytest.raises(ValueError, match="num_heads must divide num_hiddens, got num_hiddens=10"):
        lm.CausalSelfAttention(10, 3)


# ---------------------------------------------------------------- the model


def test_forward_shape_and_causality():
    model = small_model()
    ids = torch.randint(0, 11, (3, 10), generator=torch.Generator().manual_seed(0))
    logits = model(ids)
    assert logits.shape == (3, 10, 11)
    changed = ids.clone()
    changed[:, 6] = (changed[:, 6] + 1) % 11  # a later token changes ...
    after = model(changed)
    torch.testing.assert_close(after[:, :6], logits[:, :6])  # ... the earlier logits do not
    assert not torch.allclose(after[:, 6:], logits[:, 6:])


def test_forward_bad_input():
    model = small_model()
    with pytest.raises(TypeError, match="ids must have dtype torch.int64"):
        model(torch.zeros(1, 3))
    with pytest.raises(ValueError, match="ids must be 2-D, got shape"):
        model(torch.zeros(3, dtype=torch.long))
    with pytest.raises(
        ValueError, match=r"ids must hold ids in \[0, 10\], got values from 0 to 11"
    ):
        model(torch.tensor([[0, 11]]))
    with pytest.raises(ValueError, match="beyond max_len=24"):
        model(torch.zeros(1, 25, dtype=torch.long))
    with pytest.raises(TypeError, match="cache must be a KVCache or None"):
        model(torch.zeros(1, 2, dtype=torch.long), cache=[])


def test_a_cache_from_another_model_is_refused_by_name():
    model = small_model()  # 2 layers, width 16, 4 heads of width 4
    for other, message in (
        (lm.TinyLM(11, 16, 4, 1, 24), "cache holds keys of 1 and values of 1 layers, but"),
        (lm.TinyLM(11, 8, 4, 2, 24), r"past keys must be shaped .* got \(1, 4, 3, 2\)"),
        (lm.TinyLM(11, 16, 2, 2, 24), r"= \(1, 4, 't', 4\) for this layer and input"),
    ):
        cache = lm.KVCache()
        other(torch.zeros(1, 3, dtype=torch.long), cache)
        with pytest.raises(ValueError, match=message):
            model(torch.zeros(1, 2, dtype=torch.long), cache)
    attention = model.blocks[0].attention
    X = torch.zeros(1, 2, 16)
    keys = torch.zeros(1, 4, 3, 4)
    with pytest.raises(TypeError, match="past must be None or a"):
        attention(X, past=keys)
    with pytest.raises(TypeError, match="past values must be a torch.Tensor"):
        attention(X, past=(keys, None))
    with pytest.raises(TypeError, match="past keys must be torch.float32 on cpu like the layer"):
        attention(X, past=(keys.double(), keys))
    with pytest.raises(ValueError, match="past keys hold 3 positions but past values 2"):
        attention(X, past=(keys, keys[:, :, :2]))
    output, (K, V) = attention(X, past=(keys, keys))  # a well-formed past is used
    assert output.shape == (1, 2, 16) and K.shape == V.shape == (1, 4, 5, 4)


def test_cached_forward_equals_the_full_forward_chunk_by_chunk():
    model = small_model(seed=2)
    ids = torch.randint(0, 11, (2, 15), generator=torch.Generator().manual_seed(3))
    full = model(ids)
    cache = lm.KVCache()
    parts = [model(ids[:, a:b], cache) for a, b in ((0, 4), (4, 5), (5, 11), (11, 15))]
    torch.testing.assert_close(torch.cat(parts, 1), full, atol=1e-5, rtol=1e-5)
    assert cache.length == 15


# ---------------------------------------------------------------- decoding


@pytest.mark.parametrize("temperature", [0.0, 0.8, 2.0])
def test_cached_and_uncached_decoding_agree(temperature):
    model = small_model(seed=4)
    prompt = torch.tensor([[1, 2, 3], [4, 5, 6]])
    with_cache, logits_a = lm.generate(
        model, prompt, 12, temperature, use_cache=True, seed=5, return_logits=True
    )
    without, logits_b = lm.generate(
        model, prompt, 12, temperature, use_cache=False, seed=5, return_logits=True
    )
    assert with_cache.shape == (2, 15) and torch.equal(with_cache[:, :3], prompt)
    assert logits_a.shape == (2, 12, 11)
    torch.testing.assert_close(logits_a, logits_b, atol=1e-5, rtol=1e-5)
    assert torch.equal(with_cache, without)


def test_greedy_picks_the_argmax_of_the_full_forward():
    model = small_model(seed=6)
    out = lm.generate(model, torch.tensor([3, 1]), 8)
    assert out.shape == (10,)
    logits = model(out.unsqueeze(0))[0]  # (10, vocab)
    assert torch.equal(out[2:], logits[1:-1].argmax(-1))


def test_sampling_is_reproducible_and_leaves_the_global_rng_alone():
    model = small_model(seed=7)
    prompt = torch.tensor([0, 1])
    torch.manual_seed(123)
    state = torch.get_rng_state()
    a = lm.generate(model, prompt, 15, temperature=1.5, seed=9)
    assert torch.equal(torch.get_rng_state(), state)
    b = lm.generate(model, prompt, 15, temperature=1.5, seed=9)
    c = lm.generate(model, prompt, 15, temperature=1.5, seed=10)
    assert torch.equal(a, b) and not torch.equal(a, c)


def test_low_temperature_sampling_is_greedy():
    model = small_model(seed=8)
    prompt = torch.tensor([2])
    greedy = lm.generate(model, prompt, 10)
    assert torch.equal(lm.generate(model, prompt, 10, temperature=1e-4, seed=0), greedy)


def test_generate_zero_steps_and_bad_input():
    model = small_model()
    ids = torch.tensor([1, 2])
    assert torch.equal(lm.generate(model, ids, 0), ids)
    with pytest.raises(ValueError, match=r"steps=23 would take the sequence to 25 tokens, beyond"):
        lm.generate(model, ids, 23)
    with pytest.raises(ValueError, match="steps must be an integer >= 0, got -1"):
        lm.generate(model, ids, -1)
    with pytest.raises(ValueError, match="temperature must be a finite number >= 0, got -0.5"):
        lm.generate(model, ids, 3, temperature=-0.5)
    with pytest.raises(TypeError, match="temperature must be a real number"):
        lm.generate(model, ids, 3, temperature="hot")
    with pytest.raises(TypeError, match="ids must have dtype torch.int64"):
        lm.generate(model, ids.float(), 3)
    with pytest.raises(ValueError, match="ids must be 1-D or 2-D, got shape"):
        lm.generate(model, ids.reshape(1, 1, 2), 3)
    with pytest.raises(ValueError, match="ids must hold at least one token"):
        lm.generate(model, torch.zeros(0, dtype=torch.long), 3)
    with pytest.raises(TypeError, match="seed must be an integer or None, got True"):
        lm.generate(model, ids, 3, temperature=1.0, seed=True)
    with pytest.raises(TypeError, match="model must be a TinyLM"):
        lm.generate(torch.nn.Linear(2, 2), ids, 3)


def test_generate_does_not_modify_its_input_or_training_mode():
    model = small_model().train()
    ids = torch.tensor([[1, 2, 3]])
    copy = ids.clone()
    lm.generate(model, ids, 4)
    assert torch.equal(ids, copy) and model.training


# ---------------------------------------------------------------- cache size and cost


@pytest.mark.parametrize(("layers", "hiddens", "heads"), [(1, 8, 2), (2, 16, 4), (3, 24, 3)])
def test_cache_size_formula_matches_the_cache_tensors(layers, hiddens, heads):
    torch.manual_seed(0)
    model = lm.TinyLM(7, hiddens, heads, layers, 32).eval()
    cache = lm.KVCache()
    with torch.no_grad():
        model(torch.zeros(2, 13, dtype=torch.long), cache)
    per_sequence = lm.kv_cache_numbers(layers, 13, hiddens, heads)
    assert per_sequence == 2 * layers * 13 * hiddens
    assert cache.numel() == 2 * per_sequence  # a batch of 2 sequences


def test_grouped_and_multi_query_cache_sizes():
    full = lm.kv_cache_numbers(32, 4096, 4096, 32)
    assert lm.kv_cache_numbers(32, 4096, 4096, 32, 8) * 4 == full  # grouped-query, 8 groups
    assert lm.kv_cache_numbers(32, 4096, 4096, 32, 1) * 32 == full  # multi-query
    assert lm.kv_cache_numbers(2, 0, 8, 2) == 0
    with pytest.raises(ValueError, match="num_kv_heads must divide num_heads"):
        lm.kv_cache_numbers(2, 4, 8, 4, 3)
    with pytest.raises(ValueError, match="steps must be an integer >= 0, got -2"):
        lm.kv_cache_numbers(2, -2, 8)


def test_matmul_flops_follow_the_closed_form():
    """Per layer: 4 projections and the 4D-wide FFN are 24 D^2 operations per token,
    scores and pooling 4 D per (query, key) pair; the output layer 2 D V per token."""
    layers, D, V = 2, 16, 11
    model = small_model(vocab=V, hiddens=D, layers=layers)
    for t in (0, 1, 5, 20):
        n = t + 1
        cached = layers * (24 * D * D + 4 * n * D) + 2 * D * V
        full = layers * (24 * D * D * n + 4 * n * n * D) + 2 * D * V * n
        assert lm.matmul_flops(model, t, use_cache=True) == cached
        assert lm.matmul_flops(model, t, use_cache=False) == full
    with pytest.raises(ValueError, match=r"t must be an integer in \[0, 23\], got 24"):
        lm.matmul_flops(model, 24, True)


# ---------------------------------------------------------------- training and checkpoint


def test_train_lm_lowers_the_loss_and_checks_its_arguments():
    text = "abcabcabdabcabcabd" * 20
    tokenizer = lm.CharTokenizer(text)
    torch.manual_seed(0)
    model = lm.TinyLM(tokenizer.vocab_size, 16, 2, 1, 12)
    losses = lm.train_lm(model, tokenizer.encode(text), 60, batch_size=8, lr=1e-2)
    assert len(losses) == 60 and sum(losses[-10:]) / 10 < 0.5 * losses[0]
    assert model.training  # the caller's mode (a new model trains) is kept
    model.eval()
    lm.train_lm(model, tokenizer.encode(text), 1)
    assert not model.training
    with pytest.raises(ValueError, match="context must be at most max_len=12, got 13"):
        lm.train_lm(model, tokenizer.encode(text), 1, context=13)
    with pytest.raises(ValueError, match="steps must be >= 1, got 0"):
        lm.train_lm(model, tokenizer.encode(text), 0)
    with pytest.raises(ValueError, match="ids must hold more than context"):
        lm.train_lm(model, tokenizer.encode("abcab"), 1)


def test_shipped_checkpoint_loads_small_and_keeps_its_loss():
    info = lm.checkpoint_info()
    assert 20_000 < info["bytes"] < 500_000
    model, tokenizer = lm.load_checkpoint()
    assert model.config() == {
        "vocab_size": tokenizer.vocab_size,
        **{
            k: lm.CHECKPOINT_RECIPE[k]
            for k in ("num_hiddens", "num_heads", "num_layers", "max_len")
        },
    }
    # Trained on the training part only: the held-out part is harder, and both
    # are far below the bigram baseline (about 2.4 nats).
    assert info["train_loss"] < info["held_out_loss"] < 2.0
    train, held_out = corpus.load_corpus("train"), corpus.load_corpus("held-out")
    assert abs(lm.corpus_loss(model, train) - info["train_loss"]) < 0.01
    assert abs(lm.corpus_loss(model, held_out) - info["held_out_loss"]) < 0.01


# Trains a model for several seconds: make check's tier (conftest.py, "slow").
@pytest.mark.slow
def test_checkpoint_recipe_still_learns():
    """A quick partial check of `make lm-checkpoint`'s recipe: its first 60 steps
    (a few seconds) take the loss from about log(vocab) to well below it. The
    full recipe's corpus loss is stored in the checkpoint (test above)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # one thread is fastest for a model this small
    try:
        model, losses, samples = lm.train_checkpoint_recipe(steps=60)
    finally:
        torch.set_num_threads(threads)
    assert losses[0] > 3.8
    assert sum(losses[-10:]) / 10 < 3.1
    assert not model.training  # returned in eval mode, as documented
    assert re.fullmatch(r"[ -~\n]*", lm.load_corpus())


# ---------------------------------------------------------------- top-k, top-p, cache misuse


def test_generate_samples_only_from_the_top_k_and_the_nucleus():
    model = small_model(seed=9)
    prompt = torch.tensor([[1, 2], [3, 4], [5, 6], [7, 8]])
    for kwargs in ({"top_k": 2}, {"top_p": 0.5}, {"top_k": 3, "top_p": 0.9}):
        out, logits = lm.generate(
            model, prompt, 12, temperature=1.3, seed=1, return_logits=True, **kwargs
        )
        allowed = sampling.next_token_probs(logits, 1.3, **kwargs) > 0  # (batch, steps, vocab)
        chosen = out[:, 2:]  # (batch, steps)
        assert bool(allowed.gather(-1, chosen.unsqueeze(-1)).all()), kwargs
    # top_k=1 and a tiny nucleus are greedy decoding.
    greedy = lm.generate(model, prompt, 12)
    assert torch.equal(lm.generate(model, prompt, 12, temperature=1.0, seed=3, top_k=1), greedy)
    assert torch.equal(lm.generate(model, prompt, 12, temperature=1.0, seed=3, top_p=1e-9), greedy)


def test_generate_rejects_a_use_cache_that_is_not_a_bool_and_bad_top_k_top_p():
    model = small_model()
    ids = torch.tensor([1, 2])
    with pytest.raises(TypeError, match="use_cache must be True or False, got 'no'"):
        lm.generate(model, ids, 3, use_cache="no")
    with pytest.raises(ValueError, match="top_k must be an integer >= 1 or None, got 0"):
        lm.generate(model, ids, 3, temperature=1.0, top_k=0)
    with pytest.raises(ValueError, match=r"top_p must lie in \(0, 1\] or be None, got 2"):
        lm.generate(model, ids, 3, temperature=1.0, top_p=2)


def test_a_cache_reused_at_another_batch_size_is_a_clear_error():
    model = small_model()
    cache = lm.KVCache()
    with torch.no_grad():
        model(torch.tensor([[1, 2, 3], [4, 5, 6]]), cache)
        with pytest.raises(ValueError, match="batch of 2 sequences, but ids has a batch of 3"):
            model(torch.tensor([[1], [2], [3]]), cache)
        model(torch.tensor([[1], [2]]), cache)  # the same batch size goes on
    assert cache.length == 4


# ---------------------------------------------------------------- the split and the baselines


def test_the_split_partitions_the_paragraphs():
    paragraphs = lm.load_corpus().splitlines()
    train = corpus.load_corpus("train").splitlines()
    held_out = corpus.load_corpus("held-out").splitlines()
    every_tenth = paragraphs[corpus.HELD_OUT_EVERY - 1 :: corpus.HELD_OUT_EVERY]
    assert held_out == [p for p in every_tenth if paragraphs.count(p) == 1]
    assert len(train) + len(held_out) == len(paragraphs)
    assert not set(train) & set(held_out)
    assert sorted(train + held_out) == sorted(paragraphs)
    with pytest.raises(ValueError, match="part must be one of"):
        corpus.load_corpus("test")


def test_ngram_losses_match_a_counting_loop():
    text = "abracadabra, a cab"
    tokenizer = lm.CharTokenizer(text)
    train, other = tokenizer.encode(text), tokenizer.encode("a bad cab, abra")
    V, alpha = tokenizer.vocab_size, 0.5
    counts: dict[tuple[str, str], int] = {}
    for a, b in zip(text, text[1:]):
        counts[a, b] = counts.get((a, b), 0) + 1
    follows = {a: sum(n for (x, _), n in counts.items() if x == a) for a in tokenizer.chars}
    evaluated = "a bad cab, abra"
    nll = [
        -math.log((counts.get((a, b), 0) + alpha) / (follows[a] + alpha * V))
        for a, b in zip(evaluated, evaluated[1:])
    ]
    got = corpus.ngram_loss(train, other, V, order=2, alpha=alpha)
    assert abs(got - sum(nll) / len(nll)) < 1e-12
    nll1 = [-math.log((text.count(b) + alpha) / (len(text) + alpha * V)) for b in evaluated[1:]]
    got1 = corpus.ngram_loss(train, other, V, order=1, alpha=alpha)
    assert abs(got1 - sum(nll1) / len(nll1)) < 1e-12
    with pytest.raises(ValueError, match="order must be 1"):
        corpus.ngram_loss(train, other, V, order=3)
