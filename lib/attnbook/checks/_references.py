"""The book's own solution of each checked exercise, as source, for the diagnosis by
matching mutants (``_matching``): the reference a checker mutates the way hands slip.

Each entry is the solution cell's code of the exercise (its ``attnbook`` metadata
names the checker), as a reader writes it; tests/test_mutants.py requires that
it equals what ``tools.assignments.solution_code`` extracts from the chapter.
The names a solution uses (``torch``, ``math``, ``scoring``, ``patches``) come
from :func:`namespace`.
"""

from __future__ import annotations

#: checker name -> (the function's name, its source)
REFERENCES: dict[str, tuple[str, str]] = {
    "check_online_softmax": (
        "online_softmax",
        """\
def online_softmax(X, block_size):
    m = torch.full(X.shape[:-1], -math.inf, dtype=X.dtype)
    l = torch.zeros(X.shape[:-1], dtype=X.dtype)
    for start in range(0, X.shape[-1], block_size):
        block = X[..., start : start + block_size]
        m_new = torch.maximum(m, block.amax(dim=-1))
        safe = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)
        l = l * torch.exp(m - safe) + torch.exp(block - safe.unsqueeze(-1)).sum(dim=-1)
        m = m_new
    return torch.exp(X - m.unsqueeze(-1)) / l.unsqueeze(-1)
""",
    ),
    "check_attention_memory": (
        "attention_memory",
        """\
def attention_memory(n, num_heads, dtype):
    return n * n * num_heads * (torch.finfo(dtype).bits // 8)
""",
    ),
    "check_tiled_causal": (
        "tiled_causal",
        """\
def tiled_causal(queries, keys, values, block_size, strict=False):
    b, n, d = queries.shape
    out = torch.zeros(b, n, values.shape[-1], dtype=values.dtype)
    for q0 in range(0, n, block_size):
        q1 = min(q0 + block_size, n)
        rows = torch.arange(q0, q1).unsqueeze(1)  # (bq, 1)
        m = torch.full((b, q1 - q0), -math.inf, dtype=queries.dtype)
        l = torch.zeros(b, q1 - q0, dtype=queries.dtype)  # the running sum lambda
        u = torch.zeros(b, q1 - q0, values.shape[-1], dtype=values.dtype)
        for k0 in range(0, q1, block_size):  # tiles right of the diagonal are skipped
            k1 = min(k0 + block_size, n)
            cols = torch.arange(k0, k1).unsqueeze(0)  # (1, bk)
            scores = queries[:, q0:q1] @ keys[:, k0:k1].transpose(1, 2) / math.sqrt(d)
            visible = cols < rows if strict else cols <= rows
            scores = scores.masked_fill(~visible, -math.inf)
            m_new = torch.maximum(m, scores.amax(dim=-1))
            safe = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)
            p = torch.exp(scores - safe.unsqueeze(-1))
            rescale = torch.exp(m - safe)
            l = l * rescale + p.sum(dim=-1)
            u = u * rescale.unsqueeze(-1) + p @ values[:, k0:k1]
            m = m_new
        out[:, q0:q1] = torch.where(l.unsqueeze(-1) > 0, u / l.clamp_min(1e-30).unsqueeze(-1), 0.0)
    return out
""",
    ),
    "check_right_key_accuracy": (
        "right_key_accuracy",
        """\
def right_key_accuracy(weights, index):
    return (weights.argmax(dim=-1) == index).float().mean()
""",
    ),
    "check_two_part_targets": (
        "two_part_targets",
        """\
def two_part_targets(values, first, second):
    half = values.shape[-1] // 2
    rows = torch.arange(values.shape[0])
    first_half = values[rows, first, :half]  # (batch, d_v / 2)
    second_half = values[rows, second, half:]  # (batch, d_v / 2)
    return torch.cat([first_half, second_half], dim=-1).unsqueeze(1)  # (batch, 1, d_v)
""",
    ),
    "check_epanechnikov": (
        "my_epanechnikov",
        """\
def my_epanechnikov(u):
    return 0.75 * torch.clamp(1 - u**2, min=0)
""",
    ),
    "check_gaussian_weights": (
        "gaussian_weights",
        """\
def gaussian_weights(x_query, x_train, width):
    scores = -(((x_query[:, None] - x_train[None, :]) / width) ** 2) / 2
    return torch.softmax(scores, dim=1)  # (n_query, n_train)
""",
    ),
    "check_causal_mask": (
        "causal_mask",
        """\
def causal_mask(steps):
    queries = torch.arange(steps).unsqueeze(1)  # (steps, 1)
    keys = torch.arange(steps).unsqueeze(0)  # (1, steps)
    return keys <= queries  # (queries, keys)
""",
    ),
    "check_kv_cache": (
        "kv_step",
        """\
def kv_step(K_cache, V_cache, q, k, v):
    K_cache = torch.cat([K_cache, k.unsqueeze(0)])  # (t + 1, p)
    V_cache = torch.cat([V_cache, v.unsqueeze(0)])  # (t + 1, p_v)
    weights = torch.softmax(K_cache @ q / math.sqrt(q.shape[0]), dim=0)  # (t + 1,)
    return weights @ V_cache, K_cache, V_cache
""",
    ),
    "check_kv_cache_size": (
        "cache_size",
        """\
def cache_size(num_layers, steps, num_hiddens, num_heads, num_kv_heads):
    return 2 * num_layers * steps * (num_hiddens // num_heads) * num_kv_heads
""",
    ),
    "check_cross_attention_weights": (
        "cross_attention_weights",
        """\
def cross_attention_weights(s, H, source_lens, W_s, W_h, v):
    features = torch.tanh((s @ W_s.T).unsqueeze(1) + H @ W_h.T)  # (b, n, d_a)
    scores = features @ v  # (b, n)
    padding = torch.arange(H.shape[1]) >= source_lens[:, None]  # (b, n)
    return torch.softmax(scores.masked_fill(padding, float("-inf")), dim=-1)
""",
    ),
    "check_decoder_masks": (
        "decoder_masks",
        """\
def decoder_masks(m, source_lens, n):
    causal = torch.triu(torch.ones(m, m, dtype=torch.bool), diagonal=1)
    padding = torch.arange(n) >= source_lens[:, None]
    return causal, padding
""",
    ),
    "check_previous_token_score": (
        "previous_token_score",
        """\
def previous_token_score(weights):
    batch, heads, n, _ = weights.shape
    total = torch.zeros(heads, dtype=weights.dtype)
    for i in range(1, n):
        total = total + weights[:, :, i, i - 1].sum(0)
    return total / (batch * (n - 1))
""",
    ),
    "check_induction_score": (
        "induction_score",
        """\
def induction_score(weights, first, second, segment):
    offsets = torch.arange(segment)
    queries = second.unsqueeze(1) + offsets  # (batch, segment)
    keys = first.unsqueeze(1) + offsets + 1  # (batch, segment)
    rows = torch.arange(weights.shape[0]).unsqueeze(1)
    picked = weights.permute(0, 2, 3, 1)[rows, queries, keys]  # (batch, segment, heads)
    return picked.mean(dim=(0, 1))
""",
    ),
    "check_masked_softmax": (
        "masked_softmax_renorm",
        """\
def masked_softmax_renorm(X, valid_lens):
    batch, n_queries, n_keys = X.shape
    if valid_lens.dim() == 1:
        valid_lens = valid_lens[:, None].expand(batch, n_queries)
    keep = torch.arange(n_keys) < valid_lens[..., None]  # (batch, queries, keys)
    row_min = X.amin(dim=-1, keepdim=True)
    shift = torch.where(keep, X, row_min).amax(dim=-1, keepdim=True)
    z = torch.where(keep, X - shift, 0.0)  # no overflow on masked keys
    e = torch.exp(z) * keep  # (batch, queries, keys), zero on masked keys
    total = e.sum(dim=-1, keepdim=True)
    return e / total.clamp_min(torch.finfo(X.dtype).tiny)
""",
    ),
    "check_causal_lengths": (
        "causal_lengths",
        """\
def causal_lengths(batch, queries):
    return torch.arange(1, queries + 1).repeat(batch, 1)  # (batch, queries)
""",
    ),
    "check_mha_parameter_count": (
        "parameter_count",
        """\
def parameter_count(num_hiddens, num_heads, bias):
    return 4 * num_hiddens**2 + (4 * num_hiddens if bias else 0)
""",
    ),
    "check_head_lengths": (
        "head_lengths",
        """\
def head_lengths(valid_lens, num_heads):
    return torch.repeat_interleave(valid_lens, num_heads, dim=0)
""",
    ),
    "check_rope_scores": (
        "rope_scores",
        """\
def rope_scores(q, k):
    n, d = q.shape[-2], q.shape[-1]
    theta = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)  # (d/2,)
    angles = torch.arange(n, dtype=torch.float64)[:, None] * theta  # (n, d/2)
    cos, sin = angles.cos().to(q.dtype), angles.sin().to(q.dtype)

    def solution_turn(x):
        a, b = x[..., 0::2], x[..., 1::2]
        return torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).reshape(x.shape)

    return solution_turn(q) @ solution_turn(k).transpose(-1, -2)
""",
    ),
    "check_alibi_slopes": (
        "slopes",
        """\
def slopes(h):
    def solution_power_of_two(count):
        return [2.0 ** (-8.0 * (c + 1) / count) for c in range(count)]

    p = 2 ** int(math.log2(h))
    return solution_power_of_two(p) + solution_power_of_two(2 * p)[::2][: h - p]
""",
    ),
    "check_softmax": (
        "softmax_rows",
        """\
def softmax_rows(X):
    exps = (X - X.max(dim=-1, keepdim=True).values).exp()  # (rows, cols)
    return exps / exps.sum(dim=-1, keepdim=True)
""",
    ),
    "check_normalize": (
        "normalize_rows",
        """\
def normalize_rows(S):
    return S / S.sum(dim=-1, keepdim=True)  # (rows, cols)
""",
    ),
    "check_scaled_dot_product": (
        "fn",
        """\
def fn(Q, K, V):
    return torch.softmax(Q @ K.transpose(-2, -1) / Q.shape[-1] ** 0.5, dim=-1) @ V
""",
    ),
    "check_entropy": (
        "entropy",
        """\
def entropy(weights):
    return -torch.xlogy(weights, weights).sum(-1)
""",
    ),
    "check_rotation": (
        "rotation_matrix",
        """\
def rotation_matrix(offset, num_hiddens):
    R = torch.zeros(num_hiddens, num_hiddens)
    for pair in range(num_hiddens // 2):
        t = offset / 10000 ** (2 * pair / num_hiddens)
        R[2 * pair : 2 * pair + 2, 2 * pair : 2 * pair + 2] = torch.tensor(
            [[math.cos(t), math.sin(t)], [-math.sin(t), math.cos(t)]]
        )
    return R
""",
    ),
    "check_causal_self_attention": (
        "causal_self_attention",
        """\
def causal_self_attention(X):
    batch, n, _ = X.shape
    lengths = torch.arange(1, n + 1).repeat(batch, 1)  # (batch, queries)
    return scoring.DotProductAttention()(X, X, X, lengths)
""",
    ),
    "check_layer_norm": (
        "my_layer_norm",
        """\
def my_layer_norm(X, gamma, beta, eps):
    mean = X.mean(dim=-1, keepdim=True)
    var = ((X - mean) ** 2).mean(dim=-1, keepdim=True)
    return gamma * (X - mean) / torch.sqrt(var + eps) + beta
""",
    ),
    "check_block_parameter_count": (
        "block_parameters",
        """\
def block_parameters(num_hiddens, ffn_hiddens):
    D, F = num_hiddens, ffn_hiddens
    return 4 * D * D + 4 * D + 2 * D * F + F + D + 4 * D
""",
    ),
    "check_patchify": (
        "my_patchify",
        """\
def my_patchify(images, p):
    b, C, H, W = images.shape
    solution_grid = images.reshape(b, C, H // p, p, W // p, p).permute(0, 2, 4, 1, 3, 5)
    return solution_grid.reshape(b, (H // p) * (W // p), C * p * p)
""",
    ),
    "check_attention_rollout": (
        "my_rollout",
        """\
def my_rollout(weights):
    n = weights.shape[-1]
    solution_eye = torch.eye(n, dtype=weights.dtype, device=weights.device)
    solution_R = solution_eye.expand(weights.shape[1], n, n)
    for solution_W in weights:  # (batch, heads, n, n), block 0 first
        solution_A = 0.5 * solution_W.mean(dim=1) + 0.5 * solution_eye
        solution_R = solution_A @ solution_R
    return solution_R
""",
    ),
    "check_ink": (
        "my_ink",
        """\
def my_ink(images, p):
    return patches.patchify(images, p).sum(dim=-1)
""",
    ),
}


def namespace() -> dict:
    """The names the references use, as the chapters' setup cells define them."""
    import math

    import torch
    import torch.nn.functional as F
    from torch import nn

    from .. import patches, scoring

    return {"math": math, "torch": torch, "F": F, "nn": nn, "patches": patches, "scoring": scoring}
