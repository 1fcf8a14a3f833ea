"""Tests of chapter 10's checkers (attnbook.checks.lm).

Each checker must accept a correct answer written independently of the library
and reject every answer in its list of known mistakes, naming a failing case.
"""

from __future__ import annotations

import math

import pytest
import torch

from attnbook import checks

# ---------------------------------------------------------------- reader solutions


def mask_ok(steps):
    rows = torch.arange(steps).unsqueeze(1)
    cols = torch.arange(steps).unsqueeze(0)
    return cols <= rows


def mask_strict(steps):  # j < i: a query cannot see itself (off by one)
    return torch.ones(steps, steps, dtype=torch.bool).tril(-1)


def mask_transposed(steps):  # j >= i: every query looks ahead
    return torch.ones(steps, steps, dtype=torch.bool).triu()


def mask_inverted(steps):  # True where attention is blocked
    return torch.ones(steps, steps, dtype=torch.bool).triu(1)


def mask_float(steps):  # right pattern, but 0/1 floats
    return torch.ones(steps, steps).tril()


def cache_ok(K_cache, V_cache, q, k, v):
    K_cache = torch.cat([K_cache, k.unsqueeze(0)])
    V_cache = torch.cat([V_cache, v.unsqueeze(0)])
    scores = K_cache @ q / math.sqrt(q.shape[0])  # (t + 1,)
    return torch.softmax(scores, 0) @ V_cache, K_cache, V_cache


def cache_reappends(K_cache, V_cache, q, k, v):  # adds the whole history again each step
    K_all = torch.cat([K_cache, k.unsqueeze(0)])
    V_all = torch.cat([V_cache, v.unsqueeze(0)])
    out = torch.softmax(K_all @ q / math.sqrt(q.shape[0]), 0) @ V_all
    return out, torch.cat([K_cache, K_all]), torch.cat([V_cache, V_all])


def cache_attends_before_appending(K_cache, V_cache, q, k, v):  # the token misses itself
    if K_cache.shape[0] == 0:
        out = torch.zeros_like(v)
    else:
        out = torch.softmax(K_cache @ q / math.sqrt(q.shape[0]), 0) @ V_cache
    return out, torch.cat([K_cache, k.unsqueeze(0)]), torch.cat([V_cache, v.unsqueeze(0)])


def cache_unscaled(K_cache, V_cache, q, k, v):
    K_cache = torch.cat([K_cache, k.unsqueeze(0)])
    V_cache = torch.cat([V_cache, v.unsqueeze(0)])
    return torch.softmax(K_cache @ q, 0) @ V_cache, K_cache, V_cache


def cache_never_read(K_cache, V_cache, q, k, v):  # attends to the new token only
    return v.clone(), torch.cat([K_cache, k.unsqueeze(0)]), torch.cat([V_cache, v.unsqueeze(0)])


def size_ok(num_layers, steps, num_hiddens, num_heads, num_kv_heads):
    return 2 * num_layers * steps * num_hiddens * num_kv_heads // num_heads


def size_keys_only(num_layers, steps, num_hiddens, num_heads, num_kv_heads):
    return num_layers * steps * num_hiddens * num_kv_heads // num_heads


def size_one_layer(num_layers, steps, num_hiddens, num_heads, num_kv_heads):
    return 2 * steps * num_hiddens * num_kv_heads // num_heads


def size_ignores_kv_heads(num_layers, steps, num_hiddens, num_heads, num_kv_heads):
    return 2 * num_layers * steps * num_hiddens


def size_quadratic(num_layers, steps, num_hiddens, num_heads, num_kv_heads):  # t^2 like scores
    return 2 * num_layers * steps * steps * num_hiddens * num_kv_heads // num_heads


# name -> (correct answer, [(known mistake, a case it must fail)])
CHECKERS = {
    "check_causal_mask": (
        mask_ok,
        [
            (mask_strict, "steps=1"),
            (mask_transposed, "steps=4"),
            (mask_inverted, "steps=2"),
            (mask_float, "steps=7"),
        ],
    ),
    "check_kv_cache": (
        cache_ok,
        [
            (cache_reappends, "4 tokens, p=3, p_v=2"),
            (cache_attends_before_appending, "1 tokens, p=2, p_v=2"),
            (cache_unscaled, "6 tokens, p=8, p_v=5"),
            (cache_never_read, "5 tokens, p=4, p_v=4"),
        ],
    ),
    "check_kv_cache_size": (
        size_ok,
        [
            (size_keys_only, "layers=2, steps=128, D=64, heads=4, kv_heads=4"),
            (size_one_layer, "layers=12, steps=1024, D=768, heads=12, kv_heads=1"),
            (size_ignores_kv_heads, "layers=32, steps=4096, D=4096, heads=32, kv_heads=8"),
            (size_quadratic, "layers=1, steps=10, D=8, heads=2, kv_heads=2"),
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
    line = next(l for l in repr(report).splitlines() if l.startswith("  FAIL  ") and case in l)
    if report.mistake is None:
        assert "(hint: " in line and "A Tiny Language Model" in line
    else:
        assert "(hint: " not in line and "A Tiny Language Model" in report.diagnosis


def test_causal_mask_checker_names_the_dtype():
    report = checks.check_causal_mask(mask_float)
    assert "expected a boolean tensor (dtype torch.bool), got dtype torch.float32" in repr(report)


def test_kv_cache_checker_names_the_growing_cache():
    report = checks.check_kv_cache(cache_reappends)
    assert "after the token at position 1, K_cache has shape (3, 3), expected (2, 3)" in repr(
        report
    )


def test_kv_cache_checker_matches_the_library_model_cache():
    """The checker's notion of a cache is the library's: one head of TinyLM's
    cached keys equals the keys its layer computes for the whole sequence."""
    from attnbook import lm

    torch.manual_seed(0)
    model = lm.TinyLM(10, 8, 2, 1, 16).eval()
    ids = torch.randint(0, 10, (1, 6))
    cache = lm.KVCache()
    with torch.no_grad():
        for i in range(6):
            model(ids[:, i : i + 1], cache)
        X = model.token_embedding(ids) + model.position_embedding(torch.arange(6))
        attention = model.blocks[0].attention
        K = attention._heads(attention.W_k(model.blocks[0].norm1(X)))
    torch.testing.assert_close(cache.keys[0], K)


def test_kv_cache_size_agrees_with_the_library():
    from attnbook.lm import kv_cache_numbers

    for args in ((2, 128, 64, 4, 4), (3, 7, 96, 6, 2), (32, 4096, 4096, 32, 8)):
        assert size_ok(*args) == kv_cache_numbers(*args)


def cache_attends_before_appending_with_a_first_token_case(K_cache, V_cache, q, k, v):
    """Cold reader, part 3: attend over the old cache, then append; an empty cache
    (the first token) returns v, so only the later tokens are wrong."""
    if K_cache.shape[0] == 0:
        out = v
    else:
        weights = torch.softmax(K_cache @ q / math.sqrt(q.shape[0]), dim=0)
        out = weights @ V_cache
    return out, torch.cat([K_cache, k.unsqueeze(0)]), torch.cat([V_cache, v.unsqueeze(0)])


@pytest.mark.parametrize("seed", [0, 1])
def test_attend_before_append_is_named_with_a_special_case_for_an_empty_cache(seed):
    report = checks.check_kv_cache(
        cache_attends_before_appending_with_a_first_token_case, seed=seed
    )
    assert not report.passed
    assert report.mistake == "attends before appending, v when empty", repr(report)
    assert "append first, then attend" in report.diagnosis
