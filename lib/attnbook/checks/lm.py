"""Checkers of chapter 10: a tiny language model, and decoding with a cache."""

from __future__ import annotations

from collections.abc import Callable

import torch

from ._core import CheckReport, _generator, _Problem, _run, _see

_LM = "A Tiny Language Model, and Decoding with a Cache"


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

    def probe(steps: int):
        mask = fn(steps)
        if isinstance(mask, torch.Tensor) and mask.dtype != torch.bool:
            raise _Problem(f"expected a boolean tensor (dtype torch.bool), got dtype {mask.dtype}")
        return mask

    hint = (
        "query i (a row) may see keys 0, ..., i (columns), itself included: True on and "
        "below the diagonal, like torch.ones(steps, steps, dtype=torch.bool).tril(); "
        + _see("Causal self-attention: looking only back", _LM)
    )
    cases = [
        (f"steps={steps}", (steps,), torch.ones(steps, steps, dtype=torch.bool).tril(), hint)
        for steps in (1, 2, 4, 7)
    ]
    return _run("check_causal_mask", probe, cases)


def check_kv_cache(
    fn: Callable[[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor], tuple],
) -> CheckReport:
    """Check ``fn(K_cache, V_cache, q, k, v)``: one decoding step of one head with a cache.

    ``K_cache`` is (t, d) and ``V_cache`` is (t, d_v): the keys and values of
    the t earlier tokens (t may be 0); ``q`` and ``k`` are (d,) and ``v`` is
    (d_v,) for the new token at position t. The answer is a tuple
    ``(output, K_cache, V_cache)``: the new token's attention output (d_v,),
    softmax over the t + 1 keys of q k_j / sqrt(d), and the caches extended by
    the new key and value, (t + 1, d) and (t + 1, d_v).

    The checker runs ``fn`` token by token over a whole sequence, starting from
    empty caches, and compares the outputs with the uncached layer (causal
    ``scaled_dot_product_attention`` over the whole sequence at once) and the
    final caches with all the keys and values.
    """

    if not callable(fn):
        raise TypeError(f"fn must be a function, got {fn!r}")

    def probe(Q: torch.Tensor, K: torch.Tensor, V: torch.Tensor) -> dict:
        K_cache, V_cache = K[:0], V[:0]  # (0, d) and (0, d_v)
        outputs = []
        for i in range(Q.shape[0]):
            answer = fn(K_cache, V_cache, Q[i], K[i], V[i])
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

    g = _generator(10)
    hint = (
        "append the new key and value to the caches first, then let q attend to every "
        "cached key, its own included, with scores scaled by 1/sqrt(d); return the "
        "extended caches, each new key added exactly once; " + _see("The key-value cache", _LM)
    )
    cases = []
    for n, d, dv in ((1, 2, 2), (4, 3, 2), (6, 8, 5), (5, 4, 4)):
        Q, K, V = (torch.randn(n, size, generator=g) for size in (d, d, dv))
        outputs = torch.nn.functional.scaled_dot_product_attention(
            Q[None], K[None], V[None], is_causal=True
        )[0]
        expected = {"outputs": outputs, "keys": K, "values": V}
        cases.append((f"{n} tokens, d={d}, d_v={dv}", (Q, K, V), expected, hint))
    return _run("check_kv_cache", probe, cases)


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
    cases = []
    for layers, steps, hiddens, heads, kv in (
        (2, 128, 64, 4, 4),
        (1, 10, 8, 2, 2),
        (12, 1024, 768, 12, 1),
        (32, 4096, 4096, 32, 8),
    ):
        total = 2 * layers * steps * (hiddens // heads) * kv
        cases.append(
            (
                f"layers={layers}, steps={steps}, D={hiddens}, heads={heads}, kv_heads={kv}",
                (layers, steps, hiddens, heads, kv),
                torch.tensor(float(total), dtype=torch.float64),
                hint,
            )
        )
    return _run("check_kv_cache_size", counted, cases)
