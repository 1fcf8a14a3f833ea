"""Chapter 13's live explorer (dates): steps ``dates-weights`` and ``dates-fixtures``
of tools/live_export.py.

``dates-weights`` trains the chapter's two GRU date models, with and without
attention (``_pack_dates.CHAPTER_SETUP``), and writes their float16 weights and
architectures beside the explorer. ``dates-fixtures`` runs PyTorch on those
weights over typed dates (training formats, other formats, years outside
1950-2049, nonsense, unknown characters, the empty and the longest input) and
writes ``tests/live/fixtures/dates.json``, and ``runtime_dates.json`` for the
runtime's operations (GRU cell, bidirectional GRU, additive attention).
"""

from __future__ import annotations

import json

import torch

from attnbook.seq2seq import AdditiveCrossAttention
from attnbook.widgets.live import _pack_dates
from attnbook.widgets.live.dates import ARCH_FILE, WEIGHTS_FILES, load_chapter_weights

from .live_export import FIXTURES, LIVE, short


def export_weights() -> None:
    """Chapter 13's two GRU models (``_pack_dates.CHAPTER_SETUP``): dates.f16 and
    dates_no_attention.f16, their architectures in dates.json (about 35 s on one thread)."""
    archs = {}
    for kind, setup in _pack_dates.CHAPTER_SETUP.items():
        weights, arch = _pack_dates.pack_gru_seq2seq(_pack_dates.chapter_model(kind))
        arch["source"] = f"chapter 13 (book/cross-attention.ipynb), trained as {setup}"
        (LIVE / WEIGHTS_FILES[kind]).write_bytes(weights)
        archs[kind] = arch
        print(f"wrote {WEIGHTS_FILES[kind]} ({len(weights)} bytes)")
    (LIVE / ARCH_FILE).write_text(json.dumps(archs, indent=1) + "\n", encoding="utf-8")


def _cases() -> dict[str, str]:
    return {
        "long": "3 March 1999",
        "short": "mar 3, 1999",
        "numeric": "03/03/99",
        "weekday": "Wednesday 3 Mar 1999",
        "slashes, year first": "1999/3/3",
        "lower case, ordinal, two-digit year": "march 3rd 99",
        "year outside 1950-2049": "3 March 2077",
        "no such day": "31/02/99",
        "wrong weekday": "Monday 3 Mar 1999",
        "nonsense": "hello there",
        "one character": "7",
        "unknown characters": "1999-03-03 (Wed.)",
        "only unknown characters": "???",
        "empty": "",
        "blank": "   ",
        "longest": "Wednesday 23 September 1998, Wed 23 Sept",
        "too long": "Wednesday 23 September 1998 or Thursday 24 September 1998",
    }


def export_fixtures() -> None:
    models = {}
    archs = {}
    for kind in _pack_dates.CHAPTER_SETUP:
        weights, arch = load_chapter_weights(kind)
        arch.pop("source", None)
        archs[kind] = arch
        models[kind] = _pack_dates.unpack_gru_seq2seq(weights, arch)
    cases = []
    for name, text in _cases().items():
        read = _pack_dates.read_source(text)
        case = {"name": name, "input": text, **read, **_pack_dates.training_format(read["text"])}
        for kind, model in models.items():
            if read["text"]:
                out = _pack_dates.run(model, read["text"])
                case[kind] = {
                    "tokens": out["tokens"],
                    "answer": out["answer"],
                    "logits": short(out["logits"]),
                    "weights": None if out["weights"] is None else short(out["weights"]),
                }
            else:  # the models are never run on nothing: the page shows a note
                case[kind] = None
        cases.append(case)
    assert len(cases[-2]["text"]) == _pack_dates.MAX_LEN and cases[-1]["dropped"] > 0
    FIXTURES.mkdir(parents=True, exist_ok=True)
    out = {"archs": archs, "cases": cases}
    (FIXTURES / "dates.json").write_text(json.dumps(out) + "\n", encoding="utf-8")

    # The runtime's new operations on their own, against PyTorch.
    g = torch.Generator().manual_seed(13)
    torch.manual_seed(13)
    gru = torch.nn.GRU(5, 4, batch_first=True, bidirectional=True)
    cell = torch.nn.GRUCell(5, 4)
    xs = torch.randn(1, 6, 5, generator=g)
    h = torch.randn(1, 4, generator=g)
    with torch.no_grad():
        states, last = gru(xs)
        cell_out = cell(xs[:, 0], h)
    attention = AdditiveCrossAttention(4, 8, 3)
    query = torch.randn(1, 4, generator=g)
    memory = torch.randn(1, 6, 8, generator=g)
    with torch.no_grad():
        context, weights = attention(query, attention.keys(memory), memory, torch.tensor([6]))

    def flat(t):
        return t.detach().flatten().tolist()

    runtime = {
        "gru_cell": {
            "x": flat(xs[:, 0]), "h": flat(h), "in": 5, "hidden": 4,
            "weight_ih": flat(cell.weight_ih), "weight_hh": flat(cell.weight_hh),
            "bias_ih": flat(cell.bias_ih), "bias_hh": flat(cell.bias_hh),
            "expected": flat(cell_out),
        },
        "bidirectional_gru": {
            "x": flat(xs), "n": 6, "in": 5, "hidden": 4,
            **{name: flat(p) for name, p in gru.named_parameters()},
            "states": flat(states), "final": flat(torch.cat([last[0], last[1]], -1)),
        },
        "additive_attention": {
            "query": flat(query), "states": flat(memory), "n": 6, "query_size": 4,
            "key_size": 8, "hiddens": 3, "W_s": flat(attention.W_s.weight),
            "W_h": flat(attention.W_h.weight), "v": flat(attention.v.weight),
            "context": flat(context), "weights": flat(weights),
        },
    }  # fmt: skip
    (FIXTURES / "runtime_dates.json").write_text(json.dumps(runtime) + "\n", encoding="utf-8")
    print(f"wrote {len(cases)} cases to {FIXTURES / 'dates.json'} and runtime_dates.json")
