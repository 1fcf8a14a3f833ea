"""Checkers of chapter 10: a tiny language model, and decoding with a cache."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from ._core import CheckReport, Mistake, _generator, _Problem, _run, _see, knows
from ._draws import _draws
from ._explain import explainer
from ._stability import UNDERFLOW, far_queries_keys, no_shift_softmax

_LM = "A Tiny Language Model, and Decoding with a Cache"
_MASK_SECTION = _see("Causal self-attention: looking only back", _LM)
_CACHE_SECTION = _see("The key-value cache", _LM)
_SIZE_SECTION = _see("What the cache costs in memory", _LM)


def _ones(steps: int) -> torch.Tensor:
    return torch.ones(steps, steps, dtype=torch.bool)


@knows(
    Mistake(
        "strict triangle",
        lambda steps: _ones(steps).tril(-1),
        "this looks like tril(-1), True strictly below the diagonal: a query must also see "
        "itself (key j = i), or query 0 has nothing to attend to; " + _MASK_SECTION,
    ),
    Mistake(
        "transposed",
        lambda steps: _ones(steps).triu(),
        "this looks like triu(), the transposed mask: True on and above the diagonal lets "
        "each query see itself and every later key, the future it must predict; " + _MASK_SECTION,
    ),
    Mistake(
        "inverted",
        lambda steps: _ones(steps).triu(1),
        "this looks like the inverted mask, True where attention is blocked (the "
        "convention of nn.MultiheadAttention's boolean attn_mask); here True means "
        "'may attend', as for scaled_dot_product_attention; " + _MASK_SECTION,
    ),
    Mistake(
        "no mask",
        lambda steps: _ones(steps),
        "every entry is True: each query sees every key, the future included; keep only "
        "keys j <= i; " + _MASK_SECTION,
    ),
    Mistake(
        "not boolean",
        lambda steps: torch.ones(steps, steps).tril(),
        "the mask is not boolean: a float mask (0/1, or 0/-inf to add to the scores) means "
        "something else to attention functions; return dtype torch.bool, for example a "
        "comparison of positions; " + _MASK_SECTION,
    ),
)
def check_causal_mask(fn: Callable[[int], torch.Tensor]) -> CheckReport:
    """Check ``fn(steps)``: the (steps, steps) boolean mask of causal attention.

    Entry [i, j] is True where query i may attend to key j, that is j <= i (the
    convention of ``scaled_dot_product_attention``'s boolean ``attn_mask``).
    Catches a strict mask (j < i: a query that cannot see itself), the
    transposed mask (j >= i: looking ahead) and the inverted one (True where
    attention is blocked), and answers that are not boolean.
    """

    if not callable(fn):
        raise TypeError(f"fn must be a function, got {fn!r}")

    def probe(mask_fn: Callable) -> Callable:
        def run(steps: int):
            mask = mask_fn(steps)
            if isinstance(mask, torch.Tensor) and mask.dtype != torch.bool:
                raise _Problem(
                    f"expected a boolean tensor (dtype torch.bool), got dtype {mask.dtype}"
                )
            return mask

        return run

    hint = (
        "query i (a row) may see keys 0, ..., i (columns), itself included: True on and "
        "below the diagonal, like torch.ones(steps, steps, dtype=torch.bool).tril(); "
        + _see("Causal self-attention: looking only back", _LM)
    )
    lengths = [1, 2, 4, 7]
    draw = _draws(908)
    if draw is not None:  # a hidden test: other numbers of steps
        lengths = [
            1,
            draw.int(2, 3, avoid=(2,)),
            draw.int(4, 6, avoid=(4,)),
            draw.int(7, 12, avoid=(7,)),
        ]
    cases = [
        (f"steps={steps}", (steps,), torch.ones(steps, steps, dtype=torch.bool).tril(), hint)
        for steps in lengths
    ]
    return _run("check_causal_mask", fn, cases, mistakes=check_causal_mask.mistakes, probe=probe)


def _step(
    scale: Callable[[int, int], float],
    before: bool = False,
    reread: bool = False,
    after: bool = False,
    softmax: bool = True,
    prepend: bool = False,
    query_is_key: bool = False,
    shift: bool = True,
    empty_gives_v: bool = False,
):
    """A cache step that scales scores by ``scale(p, p_v)``; with ``before`` it attends
    before appending; with ``reread`` it appends the whole old cache again; with
    ``after`` it scales the weights after the softmax; without ``softmax`` it uses
    the scaled scores as weights; with ``prepend`` the new key and value go first;
    with ``query_is_key`` it scores with k instead of q; without ``shift`` its softmax
    is exp(s) / sum(exp(s)); with ``before`` and ``empty_gives_v`` a step on an
    empty cache returns v itself (a special case for the first token)."""

    def kv_step(K_cache, V_cache, q, k, v):
        if prepend:
            K_new, V_new = (
                torch.cat([k.unsqueeze(0), K_cache]),
                torch.cat([v.unsqueeze(0), V_cache]),
            )
        else:
            K_new = torch.cat([K_cache, k.unsqueeze(0)])  # (t + 1, d)
            V_new = torch.cat([V_cache, v.unsqueeze(0)])  # (t + 1, p_v)
        K_seen, V_seen = (K_cache, V_cache) if before else (K_new, V_new)
        c = scale(q.shape[0], v.shape[0])
        scores = K_seen @ (k if query_is_key else q)
        if not softmax:
            weights = scores * c
        elif after:
            weights = torch.softmax(scores, dim=0) * c
        elif not shift:
            weights = no_shift_softmax(scores * c, dim=0)
        else:
            weights = torch.softmax(scores * c, dim=0)
        if K_seen.shape[0]:
            out = weights @ V_seen
        else:
            out = v.clone() if empty_gives_v else torch.zeros_like(v)
        if reread:
            return out, torch.cat([K_cache, K_new]), torch.cat([V_cache, V_new])
        return out, K_new, V_new

    return kv_step


def _step_never_reads(K_cache, V_cache, q, k, v):
    return v.clone(), torch.cat([K_cache, k.unsqueeze(0)]), torch.cat([V_cache, v.unsqueeze(0)])


_ROOT_D = lambda d, dv: 1 / math.sqrt(d)  # noqa: E731


@knows(
    Mistake(
        "attends before appending",
        _step(_ROOT_D, before=True),
        "this looks like a step that attends over the old cache before appending the new "
        "key and value: the new token must see itself, so append first, then attend; "
        + _CACHE_SECTION,
    ),
    Mistake(
        "no scaling",
        _step(lambda d, dv: 1.0),
        "this looks like scores q k_j without the 1/sqrt(p) scaling: divide by "
        "math.sqrt(p), p the width of q and k; " + _CACHE_SECTION,
    ),
    Mistake(
        "divides by d",
        _step(lambda d, dv: 1 / d),
        "this looks like scores divided by p instead of sqrt(p); " + _CACHE_SECTION,
    ),
    Mistake(
        "scaled by p_v",
        _step(lambda d, dv: 1 / math.sqrt(dv)),
        "this looks like scores divided by sqrt(p_v), the values' width: the scaling uses "
        "p, the width of the queries and keys; " + _CACHE_SECTION,
    ),
    Mistake(
        "scaled after the softmax",
        _step(_ROOT_D, after=True),
        "this looks like the weights divided by sqrt(p) after the softmax: the scaling "
        "belongs to the scores, softmax(K q / sqrt(p)), so that the weights still sum to 1; "
        + _CACHE_SECTION,
    ),
    Mistake(
        "multiplies by sqrt(p)",
        _step(lambda d, dv: math.sqrt(d)),
        "this looks like scores multiplied by sqrt(p): divide them by it; " + _CACHE_SECTION,
    ),
    Mistake(
        "no softmax",
        _step(_ROOT_D, softmax=False),
        "this looks like the scaled scores used as weights without a softmax: the weights "
        "are softmax(K q / sqrt(p)) over the t + 1 keys; " + _CACHE_SECTION,
    ),
    Mistake(
        "scores with the new key",
        _step(_ROOT_D, query_is_key=True),
        "this looks like scores computed with the new key k instead of the query q: the "
        "new token asks with its query, K_cache q; " + _CACHE_SECTION,
    ),
    Mistake(
        "new key first",
        _step(_ROOT_D, prepend=True),
        "the outputs are right but the caches hold the keys and values newest first: append "
        "at the end, torch.cat([K_cache, k.unsqueeze(0)]), so that row j is token j; "
        + _CACHE_SECTION,
    ),
    Mistake(
        "never reads the cache",
        _step_never_reads,
        "the output is the new token's own value: the step attends to the new key alone "
        "and never reads the cached keys and values; let q attend to every cached key; "
        + _CACHE_SECTION,
    ),
    Mistake(
        "appends the old cache again",
        _step(_ROOT_D, reread=True),
        "the returned caches grow by more than one row per token, or by none: return the "
        "old caches with exactly the new key and value appended (torch.cat([K_cache, "
        "k.unsqueeze(0)])); " + _CACHE_SECTION,
    ),
    Mistake(
        "attends before appending, v when empty",
        _step(_ROOT_D, before=True, empty_gives_v=True),
        "this looks like a step that attends over the old cache before appending the new "
        "key and value, with a special case that returns v when the cache is empty: the "
        "first token is then right, but every later token misses its own key; append "
        "first, then attend (the cache is never empty then, and no special case is "
        "needed); " + _CACHE_SECTION,
    ),
    Mistake(
        "no shift",
        _step(_ROOT_D, shift=False),
        "this looks like a softmax written as exp(s) / exp(s).sum() with no shift: it is "
        "right for small scores, but exp overflows to inf beyond 88.7 and underflows to 0 "
        "below -103 in float32 (0 / 0 is NaN); use torch.softmax, or subtract the largest "
        "score first; " + _CACHE_SECTION,
    ),
)
def check_kv_cache(
    fn: Callable[[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor], tuple],
) -> CheckReport:
    """Check ``fn(K_cache, V_cache, q, k, v)``: one decoding step of one head with a cache.

    ``K_cache`` is (t, p) and ``V_cache`` is (t, p_v): the keys and values of
    the t earlier tokens (t may be 0); ``q`` and ``k`` are (p,) and ``v`` is
    (p_v,) for the new token at position t (p and p_v are the head widths of
    the book's notation). The answer is a tuple ``(output, K_cache, V_cache)``:
    the new token's attention output (p_v,), softmax over the t + 1 keys of
    q k_j / sqrt(p), and the caches extended by the new key and value,
    (t + 1, p) and (t + 1, p_v).

    The checker runs ``fn`` token by token over a whole sequence, starting from
    empty caches, and compares the outputs with the uncached layer (causal
    ``scaled_dot_product_attention`` over the whole sequence at once) and the
    final caches with all the keys and values. Under every seed, two cases hold
    float32 scores that all lie near -200 or between 40 and 95, where a softmax
    with no shift underflows or overflows.
    """

    if not callable(fn):
        raise TypeError(f"fn must be a function, got {fn!r}")

    def probe(step_fn: Callable) -> Callable:
        def run(Q: torch.Tensor, K: torch.Tensor, V: torch.Tensor) -> dict:
            K_cache, V_cache = K[:0], V[:0]  # (0, p) and (0, p_v)
            outputs = []
            for i in range(Q.shape[0]):
                answer = step_fn(K_cache, V_cache, Q[i], K[i], V[i])
                if not isinstance(answer, tuple) or len(answer) != 3:
                    raise _Problem("expected a tuple (output, K_cache, V_cache)")
                output, K_cache, V_cache = answer
                for name, got, want in (
                    ("output", output, (V.shape[1],)),
                    ("K_cache", K_cache, (i + 1, K.shape[1])),
                    ("V_cache", V_cache, (i + 1, V.shape[1])),
                ):
                    if not isinstance(got, torch.Tensor):
                        raise _Problem(f"{name} must be a torch.Tensor, got {type(got).__name__}")
                    if tuple(got.shape) != want:
                        raise _Problem(
                            f"after the token at position {i}, {name} has shape "
                            f"{tuple(got.shape)}, expected {want}"
                        )
                outputs.append(output)
            return {"outputs": torch.stack(outputs), "keys": K_cache, "values": V_cache}

        return run

    g = _generator(10)
    hint = (
        "append the new key and value to the caches first, then let q attend to every "
        "cached key, its own included, with scores scaled by 1/sqrt(p); return the "
        "extended caches, each new key added exactly once; " + _see("The key-value cache", _LM)
    )
    cases = []
    for n, d, dv in ((1, 2, 2), (4, 3, 2), (6, 8, 5), (5, 4, 4)):
        Q, K, V = (torch.randn(n, size, generator=g) for size in (d, d, dv))
        outputs = torch.nn.functional.scaled_dot_product_attention(
            Q[None], K[None], V[None], is_causal=True
        )[0]
        expected = {"outputs": outputs, "keys": K, "values": V}
        cases.append((f"{n} tokens, p={d}, p_v={dv}", (Q, K, V), expected, hint))
    for kind, text in (("negative", "scores near -200"), ("large", "large scores, 40 to 95")):
        Q, K = (t[0] for t in far_queries_keys(g, 1, 6, 6, 4, kind))
        V = torch.randn(6, 3, generator=g)
        outputs = torch.nn.functional.scaled_dot_product_attention(
            Q[None], K[None], V[None], is_causal=True
        )[0]
        cases.append(
            (
                f"{text} (float32), 6 tokens, p=4, p_v=3",
                (Q, K, V),
                {"outputs": outputs, "keys": K, "values": V},
                f"{UNDERFLOW}: use torch.softmax, or subtract the largest score first; "
                + _CACHE_SECTION,
            )
        )
    return _run(
        "check_kv_cache",
        fn,
        cases,
        mistakes=check_kv_cache.mistakes,
        probe=probe,
        explain=explainer(("token", "feature")),
    )


def _size(formula: Callable) -> Callable:
    def cache_size(num_layers, steps, num_hiddens, num_heads, num_kv_heads):
        return formula(num_layers, steps, num_hiddens // num_heads, num_heads, num_kv_heads)

    return cache_size


@knows(
    Mistake(
        "keys only",
        _size(lambda L, t, p, h, g: L * t * p * g),
        "this is half the answer: the cache keeps a key and a value (a factor 2) per "
        "layer, token and kept head; " + _SIZE_SECTION,
    ),
    Mistake(
        "one layer",
        _size(lambda L, t, p, h, g: 2 * t * p * g),
        "this looks like the cache of one layer: every layer keeps its own keys and "
        "values, so multiply by num_layers; " + _SIZE_SECTION,
    ),
    Mistake(
        "ignores the key-value heads",
        _size(lambda L, t, p, h, g: 2 * L * t * p * h),
        "this looks like 2 * layers * t * D, the cache of full multi-head attention: only "
        "num_kv_heads heads keep keys and values, each of width D / num_heads; " + _SIZE_SECTION,
    ),
    Mistake(
        "D per key-value head",
        _size(lambda L, t, p, h, g: 2 * L * t * p * h * g),
        "this looks like D numbers per kept head: each head has width D / num_heads, so "
        "a kept head stores D / num_heads numbers per key; " + _SIZE_SECTION,
    ),
    Mistake(
        "divides by the groups",
        _size(lambda L, t, p, h, g: 2 * L * t * p * h // g),
        "this looks like the full cache divided by num_kv_heads: sharing shrinks it by "
        "num_heads / num_kv_heads, so it is the full cache times num_kv_heads / "
        "num_heads; " + _SIZE_SECTION,
    ),
    Mistake(
        "bytes",
        _size(lambda L, t, p, h, g: 4 * L * t * p * g),
        "this is twice the answer, as if counting bytes of float16: count numbers, "
        "2 * layers * t * (D / heads) * kv_heads; " + _SIZE_SECTION,
    ),
    Mistake(
        "grows like t squared",
        _size(lambda L, t, p, h, g: 2 * L * t * t * p * g),
        "this grows like t^2, like the attention scores: the cache keeps one key and one "
        "value per token, so it grows like t; " + _SIZE_SECTION,
    ),
)
def check_kv_cache_size(fn: Callable[[int, int, int, int, int], int]) -> CheckReport:
    """Check ``fn(num_layers, steps, num_hiddens, num_heads, num_kv_heads)``: how many
    numbers the key-value cache of one sequence holds after ``steps`` tokens.

    Each of ``num_heads`` query heads has width num_hiddens / num_heads; only
    ``num_kv_heads`` of them keep keys and values (all of them in ordinary
    multi-head attention, 1 in multi-query attention, a group count in
    grouped-query attention).
    """

    if not callable(fn):
        raise TypeError(f"fn must be a function, got {fn!r}")

    def counted(*args):
        got = fn(*args)
        if isinstance(got, torch.Tensor) and got.numel() == 1:
            got = got.item()
        if isinstance(got, bool) or not isinstance(got, (int, float)):
            raise _Problem(f"expected a number, got {type(got).__name__}")
        return torch.tensor(float(got), dtype=torch.float64)

    hint = (
        "a key and a value (2) per layer, per token and per kept head, each "
        "num_hiddens / num_heads numbers: 2 * layers * steps * (D / heads) * kv_heads; "
        + _see("What the cache costs in memory", _LM)
    )
    sizes = [
        (2, 128, 64, 4, 4),
        (1, 10, 8, 2, 2),
        (12, 1024, 768, 12, 1),
        (32, 4096, 4096, 32, 8),
    ]
    draw = _draws(909)
    if draw is not None:  # a hidden test: other sizes of the same kinds
        mha, small, mqa, gqa = (draw.choice([2, 4, 8]), 2, draw.choice([8, 12, 16]), 32)
        kept = draw.choice([2, 4, 16])  # grouped-query: a divisor of the 32 heads
        sizes = [
            (draw.int(2, 6), draw.int(16, 512), mha * draw.choice([8, 16, 32]), mha, mha),
            (1, draw.int(2, 20, avoid=(10,)), small * draw.int(2, 8), small, small),
            (draw.int(6, 24), draw.int(256, 2048), mqa * 64, mqa, 1),
            (draw.int(16, 48), draw.int(1024, 8192), gqa * 128, gqa, kept),
        ]
    cases = []
    for layers, steps, hiddens, heads, kv in sizes:
        total = 2 * layers * steps * (hiddens // heads) * kv
        cases.append(
            (
                f"layers={layers}, steps={steps}, D={hiddens}, heads={heads}, kv_heads={kv}",
                (layers, steps, hiddens, heads, kv),
                torch.tensor(float(total), dtype=torch.float64),
                hint,
            )
        )
    return _run("check_kv_cache_size", counted, cases, mistakes=check_kv_cache_size.mistakes)
