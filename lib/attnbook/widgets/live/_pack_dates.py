"""Chapter 13's GRU date models as float16 bytes, and what the page computes, in PyTorch.

Pure tensor code (no plotting, no widgets). :func:`pack_gru_seq2seq` turns an
:class:`attnbook.seq2seq.GRUSeq2Seq` over the date vocabularies into the bytes
and the architecture that ``dates.js`` reads (``runtime.js``: ``unpack``);
:func:`unpack_gru_seq2seq` turns them back into a float32 model, so PyTorch runs
exactly the weights the page runs. :func:`read_source` reads the text box as
the page does, :func:`training_format` says whether a text is written in one of
the training formats (:func:`verdict_text` says it in the page's words), and
:func:`run` is the page's forward pass and greedy decoding in PyTorch (logits
and attention weights of every output step).
"""

from __future__ import annotations

import datetime
import functools
import re
import unicodedata

import torch

from ...dates import (
    FIRST_DATE,
    FORMATS,
    LAST_DATE,
    MONTHS,
    SOURCE_VOCAB,
    TARGET_LENGTH,
    TARGET_VOCAB,
    WEEKDAYS,
    format_date,
)
from ...seq2seq import GRUSeq2Seq
from ._pack import load_float16, pack_float16

# Version of the byte layout; the JavaScript side refuses any other.
FORMAT = 1
# The longest text the page reads (the longest training date has 21 characters,
# ``longest_training()``).
MAX_LEN = 40

# How chapter 13 (book/cross-attention.ipynb) trains the two models the page shows:
# the attention model as the chapter trains it live (seed 0 of `make seq2seq-runs`),
# the model without attention as `make seq2seq-runs` trains seed 0 (800 steps).
CHAPTER_SETUP = {
    "attention": {"seed": 0, "attention": True, "steps": 400},
    "no_attention": {"seed": 0, "attention": False, "steps": 800},
}


def _sizes(model: GRUSeq2Seq) -> dict:
    return {
        "source_vocab": model.encoder.embedding.num_embeddings,
        "target_vocab": model.embedding.num_embeddings,
        "attention": model.use_attention,
        "bridge": model.bridge is not None,
        "embed": model.embedding.embedding_dim,
        "enc_hiddens": model.encoder.gru.hidden_size,
        "dec_hiddens": model.dec_hiddens,
        "attn_hiddens": model.attention.W_s.out_features if model.use_attention else 0,
    }


@functools.cache
def longest_training() -> int:
    """The length of the longest date of the training data (any format, any day of
    1950-2049): what the page's note on a long input quotes (arch ``longest_training``)."""
    days = (LAST_DATE - FIRST_DATE).days + 1
    dates = (FIRST_DATE + datetime.timedelta(days=i) for i in range(days))
    return max(len(format_date(date, fmt)) for date in dates for fmt in FORMATS)


def pack_gru_seq2seq(model: GRUSeq2Seq) -> tuple[bytes, dict]:
    """``(weights, arch)``: every parameter as little-endian float16, and how to read them.

    ``arch`` holds the sizes, the two vocabularies (``source_symbols``,
    ``target_symbols``), ``max_len`` and ``target_length``, the training data's
    first and last year (``years``) and longest date (``longest_training``), and ``tensors``,
    a list of ``[name, shape]`` (PyTorch's parameter names) in the order of the
    bytes. The model must read and write the date vocabularies of
    :mod:`attnbook.dates`.
    """
    if not isinstance(model, GRUSeq2Seq):
        raise TypeError(f"model must be an attnbook.seq2seq.GRUSeq2Seq, got {type(model).__name__}")
    sizes = _sizes(model)
    if (sizes["source_vocab"], sizes["target_vocab"]) != (len(SOURCE_VOCAB), len(TARGET_VOCAB)):
        raise ValueError(
            f"model must read the date vocabularies ({len(SOURCE_VOCAB)} source and "
            f"{len(TARGET_VOCAB)} target symbols), got {sizes['source_vocab']} and "
            f"{sizes['target_vocab']}"
        )
    packed, tensors = pack_float16(list(model.named_parameters()))
    arch = {
        "format": FORMAT,
        "model": "gru-seq2seq",
        **sizes,
        "max_len": MAX_LEN,
        "target_length": TARGET_LENGTH,
        "years": [FIRST_DATE.year, LAST_DATE.year],
        "longest_training": longest_training(),
        "source_symbols": SOURCE_VOCAB.symbols,
        "target_symbols": TARGET_VOCAB.symbols,
        "tensors": tensors,
    }
    return packed, arch


def unpack_gru_seq2seq(weights: bytes, arch: dict) -> GRUSeq2Seq:
    """The model that :func:`pack_gru_seq2seq` packed, in float32 (float16-rounded weights)."""
    if not isinstance(arch, dict) or arch.get("format") != FORMAT:
        raise ValueError(f"arch must be a dict with format={FORMAT}, got {arch!r:.80}")
    model = GRUSeq2Seq(
        arch["source_vocab"],
        arch["target_vocab"],
        arch["attention"],
        embed=arch["embed"],
        enc_hiddens=arch["enc_hiddens"],
        dec_hiddens=arch["dec_hiddens"],
        attn_hiddens=arch["attn_hiddens"] or 32,
        bridge=arch["bridge"],
    )
    load_float16(weights, arch["tensors"], list(model.named_parameters()))
    return model.eval()


def chapter_model(kind: str) -> GRUSeq2Seq:
    """One of the two models of chapter 13, trained as ``CHAPTER_SETUP[kind]`` says."""
    from ...seq2seq import train_dates

    if kind not in CHAPTER_SETUP:
        raise ValueError(f"kind must be one of {tuple(CHAPTER_SETUP)}, got {kind!r}")
    model, _ = train_dates(**CHAPTER_SETUP[kind], record=())
    return model


# ------------------------------------------------------------------ the input


def read_source(text: str, max_len: int = MAX_LEN) -> dict:
    """The text box as the page reads it (``readSource`` in dates.js).

    The text is read in Unicode's NFC form (an "e" and a combining accent
    are one "é"). Characters outside the source vocabulary are left out (listed, each once,
    in ``unknown``); past ``max_len`` characters the rest is left out and
    counted in ``dropped``. ``text`` is what the model reads (empty when only
    spaces are left).
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a string, got {type(text).__name__}")
    kept, unknown = "", []
    for c in unicodedata.normalize("NFC", text):
        if c in SOURCE_VOCAB.index and c != SOURCE_VOCAB.symbols[0]:
            kept += c
        elif c not in unknown:
            unknown.append(c)
    if not kept.strip(" "):  # nothing but spaces reads as nothing
        return {"text": "", "unknown": unknown, "dropped": 0}
    return {
        "text": kept[:max_len],
        "unknown": unknown,
        "dropped": max(0, len(kept) - max_len),
    }


_MONTH = "|".join(MONTHS)
_SHORT = "|".join(m[:3].lower() for m in MONTHS)
_ABBR = "|".join(m[:3] for m in MONTHS)
_WEEKDAY = "|".join(WEEKDAYS)
# Matched with fullmatch, without regard to case ("Nov 25, 2026" has the short
# format's shape; ASCII case only, as the page's regular expressions); [0-9],
# not \d (which takes other scripts' digits).
_CASE = re.IGNORECASE | re.ASCII
_PATTERNS = {
    "long": re.compile(rf"([0-9]{{1,2}}) ({_MONTH}) ([0-9]{{4}})", _CASE),
    "short": re.compile(rf"({_SHORT}) ([0-9]{{1,2}}), ([0-9]{{4}})", _CASE),
    "numeric": re.compile(r"([0-9]{2})/([0-9]{2})/([0-9]{2})"),
    "weekday": re.compile(rf"({_WEEKDAY}) ([0-9]{{1,2}}) ({_ABBR}) ([0-9]{{4}})", _CASE),
}


def _month(name: str) -> int:
    return [m[:3].lower() for m in MONTHS].index(name[:3].lower()) + 1


def training_format(text: str) -> dict:
    """Is ``text`` a date in one of the four training formats? (``trainingFormat`` in dates.js)

    Returns ``{"format": name or None, "date": "YYYY-MM-DD" or None, "reason":
    ...}``: ``reason`` is ``"ok"`` for a training date, ``"format"`` when the
    text has none of the four shapes, ``"no date"`` when it has one but names
    no real day (31 February), ``"range"`` for a real day outside 1950-2049,
    ``"weekday"`` when the weekday is not that date's, and ``"spelling"`` when
    the shape fits but the training data write it otherwise (a leading zero,
    another case, a space too many or at either end: the shapes are matched on
    the text with runs of spaces made one and trimmed); ``written`` is the date
    as the training data write it (for "ok" and "spelling"), else None.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a string, got {type(text).__name__}")
    plain = re.sub(" +", " ", text).strip(" ")
    for fmt, pattern in _PATTERNS.items():
        found = pattern.fullmatch(plain)
        if not found:
            continue
        parts = found.groups()
        if fmt == "long":
            day, month, year = int(parts[0]), _month(parts[1]), int(parts[2])
        elif fmt == "short":
            day, month, year = int(parts[1]), _month(parts[0]), int(parts[2])
        elif fmt == "numeric":
            day, month, yy = int(parts[0]), int(parts[1]), int(parts[2])
            year = 1900 + yy if yy >= 50 else 2000 + yy
        else:
            day, month, year = int(parts[1]), _month(parts[2]), int(parts[3])
        try:
            date = datetime.date(year, month, day)
        except ValueError:
            return {"format": fmt, "date": None, "reason": "no date", "written": None}
        iso = date.isoformat()
        if not FIRST_DATE <= date <= LAST_DATE:
            return {"format": fmt, "date": iso, "reason": "range", "written": None}
        if fmt == "weekday" and parts[0].lower() != WEEKDAYS[date.weekday()].lower():
            return {"format": fmt, "date": iso, "reason": "weekday", "written": None}
        written = format_date(date, fmt)
        reason = "ok" if written == text else "spelling"
        return {"format": fmt, "date": iso, "reason": reason, "written": written}
    return {"format": None, "date": None, "reason": "format", "written": None}


# Each verdict of :func:`training_format` in plain words: what the page writes
# under the answers (``verdictText`` in dates.js) and the stored picture's alt
# text says. The formats are shown by the date the page's examples write,
# 25 November 2026.
VERDICT_WORDS = {
    "ok": "A date in one of the four training formats ({format}, like “{example}”): "
    "the right answer is {date}.",
    "format": "Outside the training formats: the models only ever saw dates written like "
    "{examples}. Whatever they write here is a guess from familiar-looking pieces, not a reading.",
    "no date": "Shaped like the training's {format} format, but it names no real day: "
    "the models never saw one.",
    "range": "A real date, {date}, but outside the years {first}-{last} the models were trained on.",
    "weekday": "Shaped like the training's weekday format, but the weekday is wrong for {date}: "
    "the training data never had a wrong weekday.",
    "spelling": "Close to the training's {format} format, but the training data write this "
    "date “{written}”.",
}
EXAMPLES = {fmt: format_date(datetime.date(2026, 11, 25), fmt) for fmt in FORMATS}


def verdict_text(verdict: dict) -> str:
    """:func:`training_format`'s ``verdict`` in the page's words (:data:`VERDICT_WORDS`)."""
    if not isinstance(verdict, dict) or verdict.get("reason") not in VERDICT_WORDS:
        raise ValueError(
            f"verdict must be a dict of training_format with a reason in {tuple(VERDICT_WORDS)}, "
            f"got {verdict!r}"
        )
    quoted = [f"“{e}”" for e in EXAMPLES.values()]
    return VERDICT_WORDS[verdict["reason"]].format(
        format=verdict["format"],
        example=EXAMPLES.get(verdict["format"]),
        date=verdict["date"],
        written=verdict["written"],
        first=FIRST_DATE.year,
        last=LAST_DATE.year,
        examples=f"{', '.join(quoted[:-1])} or {quoted[-1]}",
    )


assert set(_PATTERNS) == set(FORMATS)


# ------------------------------------------------------------------ the model


@torch.no_grad()
def run(model: GRUSeq2Seq, text: str) -> dict:
    """The page's forward pass in PyTorch: greedy decoding of ``text`` (characters
    of the source vocabulary, not empty) with ``model``.

    Returns ``tokens`` (the target_length ids written), ``answer`` (their
    characters), ``logits`` (target_length, target vocab) and ``weights``
    (target_length, len(text)), or None without attention.
    """
    if not isinstance(model, GRUSeq2Seq):
        raise TypeError(f"model must be an attnbook.seq2seq.GRUSeq2Seq, got {type(model).__name__}")
    if not isinstance(text, str) or not text:
        raise ValueError(f"text must be a non-empty string, got {text!r}")
    source = torch.tensor([SOURCE_VOCAB.encode(text)])
    lens = torch.tensor([len(text)])
    states, final, projected, lens, s = model._start(source, lens)
    memory = (states, final, projected, lens)
    previous = torch.zeros(1, dtype=torch.long)
    tokens, logits, weights = [], [], []
    for _ in range(TARGET_LENGTH):
        out, s, w = model._step(previous, s, memory)
        previous = out.argmax(-1)
        tokens.append(int(previous))
        logits.append(out[0])
        weights.append(None if w is None else w[0])
    return {
        "tokens": tokens,
        "answer": TARGET_VOCAB.decode(tokens),
        "logits": torch.stack(logits),
        "weights": None if weights[0] is None else torch.stack(weights),
    }
