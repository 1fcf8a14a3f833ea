"""Two sequence-to-sequence tasks generated in code: date normalisation and reversal.

**Date normalisation** (character level). Every date from 1950-01-01 to
2049-12-31 is written in one of four formats and must be rewritten as ISO
``YYYY-MM-DD``::

    "25 November 2026"        format "long"
    "nov 25, 2026"            format "short"
    "25/11/26"                format "numeric" (two-digit year: 50-99 is 19xx, 00-49 is 20xx)
    "Wednesday 25 Nov 2026"   format "weekday"
                      -> "2026-11-25"

:class:`DateTask` shuffles all 36,525 dates with a seed and holds out a fraction
(20 % by default): training pairs are drawn only from the other dates, so
every test date is unseen in every format.

**Sequence reversal**: a source of random tokens, the target the same tokens
in reverse order (:func:`reversal_batch`).

Both tasks give a :class:`Seq2SeqBatch`: padded source indices, their valid
lengths, and fixed-length targets. Index 0 of a source vocabulary is the
padding symbol; index 0 of a target vocabulary is the start symbol ``<s>``
that the decoder reads before its first output.
"""

from __future__ import annotations

import datetime
import numbers
from dataclasses import dataclass

import torch

from . import _validate

__all__ = [
    "FORMATS",
    "MONTHS",
    "WEEKDAYS",
    "FIRST_DATE",
    "LAST_DATE",
    "PAD",
    "START",
    "TARGET_LENGTH",
    "format_date",
    "parse_numeric_year",
    "Vocab",
    "SOURCE_VOCAB",
    "TARGET_VOCAB",
    "Seq2SeqBatch",
    "encode_dates",
    "DateTask",
    "reversal_batch",
    "field_spans",
    "alignment_summary",
    "encode_sources",
]

FORMATS = ("long", "short", "numeric", "weekday")
MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
FIRST_DATE = datetime.date(1950, 1, 1)
LAST_DATE = datetime.date(2049, 12, 31)
PAD = "<pad>"
START = "<s>"
TARGET_LENGTH = 10  # "YYYY-MM-DD"


def format_date(date: datetime.date, fmt: str) -> str:
    """``date`` written in format ``fmt`` (one of :data:`FORMATS`)."""
    if not isinstance(date, datetime.date):
        raise TypeError(f"date must be a datetime.date, got {date!r}")
    if fmt not in FORMATS:
        raise ValueError(f"fmt must be one of {FORMATS}, got {fmt!r}")
    if not FIRST_DATE <= date <= LAST_DATE:
        raise ValueError(f"date must lie in {FIRST_DATE}..{LAST_DATE}, got {date}")
    month = MONTHS[date.month - 1]
    if fmt == "long":
        return f"{date.day} {month} {date.year}"
    if fmt == "short":
        return f"{month[:3].lower()} {date.day}, {date.year}"
    if fmt == "numeric":
        return f"{date.day:02d}/{date.month:02d}/{date.year % 100:02d}"
    return f"{WEEKDAYS[date.weekday()]} {date.day} {month[:3]} {date.year}"


def parse_numeric_year(two_digits: int) -> int:
    """The pivot rule of the numeric format: 50-99 -> 19xx, 00-49 -> 20xx."""
    if _validate.nonnegative_int("two_digits", two_digits) > 99:
        raise ValueError(f"two_digits must be in [0, 99], got {two_digits!r}")
    return 1900 + two_digits if two_digits >= 50 else 2000 + two_digits


def _items(name: str, value: object) -> list:
    """A list or tuple as a list (a str or None is not a list of dates, formats or symbols)."""
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"{name} must be a list, got {_validate._describe(value)}")
    return list(value)


class Vocab:
    """Symbols <-> indices. ``symbols[0]`` is the padding or start symbol."""

    def __init__(self, symbols: list[str]) -> None:
        symbols = _items("symbols", symbols)
        if len(set(symbols)) != len(symbols):
            raise ValueError(f"symbols must be distinct, got {symbols!r}")
        self.symbols = list(symbols)
        self.index = {s: i for i, s in enumerate(self.symbols)}

    def __len__(self) -> int:
        return len(self.symbols)

    def encode(self, text) -> list[int]:
        """Indices of the characters (or tokens) of ``text``."""
        if not isinstance(text, (str, list, tuple)):
            raise TypeError(f"text must be a str or a list of symbols, got {text!r}")
        try:
            return [self.index[c] for c in text]
        except KeyError as err:
            raise ValueError(
                f"text holds the symbol {err.args[0]!r}, not in this vocabulary"
            ) from None

    def decode(self, indices) -> str:
        """The characters of ``indices`` (a 1-D tensor or list of ids) joined (index 0 is skipped)."""
        if isinstance(indices, torch.Tensor):
            indices = _validate.ids("indices", indices, upper=len(self.symbols), ndim=1).tolist()
        elif not isinstance(indices, (list, tuple)):
            raise TypeError(f"indices must be a 1-D tensor or a list of ids, got {indices!r}")
        for i in indices:
            if isinstance(i, bool) or not isinstance(i, numbers.Integral):
                raise TypeError(f"indices must hold integer ids, got {i!r}")
            if not 0 <= i < len(self.symbols):
                raise ValueError(f"indices must hold ids in [0, {len(self.symbols) - 1}], got {i}")
        return "".join(self.symbols[i] for i in indices if i != 0)

    def __repr__(self) -> str:
        return f"Vocab({len(self)} symbols)"


def _all_dates() -> list[datetime.date]:
    days = (LAST_DATE - FIRST_DATE).days + 1
    return [FIRST_DATE + datetime.timedelta(days=i) for i in range(days)]


def _source_symbols() -> list[str]:
    chars: set[str] = set()
    for date in (datetime.date(2026, m, 1) for m in range(1, 13)):
        for fmt in FORMATS:
            chars.update(format_date(date, fmt))
    chars.update(WEEKDAYS[0] + "".join(WEEKDAYS))
    chars.update("0123456789")
    return [PAD, *sorted(chars)]


SOURCE_VOCAB = Vocab(_source_symbols())
TARGET_VOCAB = Vocab([START, *"0123456789-"])


@dataclass(frozen=True)
class Seq2SeqBatch:
    """A batch of source and target sequences.

    Attributes:
        source: (batch, n) int64 source indices, padded with 0 beyond each length.
        source_lens: (batch,) int64 valid lengths of the sources.
        target: (batch, m) int64 target indices (no start symbol).
        texts: the source strings (dates) or None (reversal).
        formats: the format of each source (dates) or None.
    """

    source: torch.Tensor
    source_lens: torch.Tensor
    target: torch.Tensor
    texts: tuple[str, ...] | None = None
    formats: tuple[str, ...] | None = None

    def __len__(self) -> int:
        return self.source.shape[0]

    def decoder_input(self) -> torch.Tensor:
        """(batch, m) the teacher-forcing input: the start symbol 0, then target[:, :-1]."""
        start = torch.zeros_like(self.target[:, :1])
        return torch.cat([start, self.target[:, :-1]], dim=1)


def encode_dates(dates, formats) -> Seq2SeqBatch:
    """A batch of ``dates`` written in ``formats`` (one format per date), padded."""
    dates, formats = _items("dates", dates), _items("formats", formats)
    if len(dates) != len(formats) or not dates:
        raise ValueError(
            f"dates and formats must be non-empty and equally long, got {len(dates)} and "
            f"{len(formats)}"
        )
    texts = [format_date(d, f) for d, f in zip(dates, formats)]
    lens = [len(t) for t in texts]
    source = torch.zeros(len(texts), max(lens), dtype=torch.long)
    for row, text in enumerate(texts):
        source[row, : len(text)] = torch.tensor(SOURCE_VOCAB.encode(text))
    target = torch.tensor([TARGET_VOCAB.encode(d.isoformat()) for d in dates])
    return Seq2SeqBatch(source, torch.tensor(lens), target, tuple(texts), tuple(formats))


def encode_sources(texts) -> tuple[torch.Tensor, torch.Tensor]:
    """Source strings (characters of :data:`SOURCE_VOCAB`) as (batch, n) indices padded
    with 0, and their (batch,) lengths."""
    return _encode_sources(texts, "texts")


def _encode_sources(texts, name: str) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`encode_sources`, its errors naming the argument ``name``."""
    if isinstance(texts, str):
        raise TypeError(f"{name} must be a list of strings, not one string: got {texts!r}")
    if not hasattr(texts, "__iter__"):
        raise TypeError(f"{name} must be a list of strings, got {type(texts).__name__} {texts!r}")
    texts = list(texts)
    if not texts or not all(isinstance(t, str) and t for t in texts):
        raise ValueError(f"{name} must be a non-empty list of non-empty strings, got {texts!r}")
    lens = [len(t) for t in texts]
    source = torch.zeros(len(texts), max(lens), dtype=torch.long)
    for row, text in enumerate(texts):
        unknown = sorted({c for c in text if c not in SOURCE_VOCAB.index})
        if unknown:
            raise ValueError(
                f"{name}[{row}] = {text!r} holds characters outside SOURCE_VOCAB: {unknown}"
            )
        source[row, : len(text)] = torch.tensor(SOURCE_VOCAB.encode(text))
    return source, torch.tensor(lens)


class DateTask:
    """All dates 1950-2049 split into training and held-out dates with a seed.

    Args:
        seed: the seed of the shuffle (and of :meth:`test_batch`).
        held_out: the fraction of dates held out for testing, in (0, 1).

    Attributes:
        train_dates, test_dates: disjoint lists of ``datetime.date``.
        source_vocab, target_vocab: the character vocabularies.
    """

    def __init__(self, seed: int = 0, held_out: float = 0.2) -> None:
        if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
            raise TypeError(f"seed must be an integer, got {seed!r}")
        held_out = _validate.real_number("held_out", held_out)
        if not 0.0 < held_out < 1.0:
            raise ValueError(f"held_out must lie strictly between 0 and 1, got {held_out!r}")
        self.seed = int(seed)
        dates = _all_dates()
        g = torch.Generator().manual_seed(self.seed)
        order = torch.randperm(len(dates), generator=g).tolist()
        cut = round(held_out * len(dates))
        self.test_dates = [dates[i] for i in order[:cut]]
        self.train_dates = [dates[i] for i in order[cut:]]
        self.source_vocab = SOURCE_VOCAB
        self.target_vocab = TARGET_VOCAB

    def train_batch(self, batch_size: int, generator: torch.Generator) -> Seq2SeqBatch:
        """``batch_size`` training dates drawn at random, each in a random format."""
        batch_size = _validate.positive_int("batch_size", batch_size)
        _validate.torch_generator("generator", generator)
        picks = torch.randint(len(self.train_dates), (batch_size,), generator=generator)
        kinds = torch.randint(len(FORMATS), (batch_size,), generator=generator)
        return encode_dates(
            [self.train_dates[i] for i in picks.tolist()], [FORMATS[k] for k in kinds.tolist()]
        )

    def test_batch(self, size: int = 1000) -> Seq2SeqBatch:
        """The first ``size`` held-out dates, formats in turn (balanced)."""
        size = _validate.positive_int("size", size)
        if size > len(self.test_dates):
            raise ValueError(f"size must be at most {len(self.test_dates)}, got {size}")
        dates = self.test_dates[:size]
        return encode_dates(dates, [FORMATS[i % len(FORMATS)] for i in range(size)])

    def __repr__(self) -> str:
        return (
            f"DateTask(seed={self.seed}, train_dates={len(self.train_dates)}, "
            f"test_dates={len(self.test_dates)})"
        )


def reversal_batch(
    batch_size: int, length: int = 20, symbols: int = 19, *, generator: torch.Generator
) -> Seq2SeqBatch:
    """Random sources of ``length`` tokens from ``symbols`` symbols, targets reversed.

    Source tokens are 1..symbols (0 is padding); target tokens are the same
    numbers (0 is the start symbol), so a reversed source is the target.
    """
    batch_size = _validate.positive_int("batch_size", batch_size)
    length = _validate.positive_int("length", length)
    symbols = _validate.positive_int("symbols", symbols)
    _validate.torch_generator("generator", generator)
    source = torch.randint(1, symbols + 1, (batch_size, length), generator=generator)
    lens = torch.full((batch_size,), length)
    return Seq2SeqBatch(source, lens, source.flip(1))


def field_spans(text: str, fmt: str) -> dict[str, tuple[int, int]]:
    """Where each field of a formatted date lies: name -> (start, end) character indices.

    Fields are ``"day"``, ``"month"`` (digits or a name), ``"year"`` (4 or 2
    digits) and, in the weekday format, ``"weekday"``.
    """
    if fmt not in FORMATS:
        raise ValueError(f"fmt must be one of {FORMATS}, got {fmt!r}")
    if fmt == "numeric":
        return {"day": (0, 2), "month": (3, 5), "year": (6, 8)}
    words = text.replace(",", "").split(" ")
    names = {
        "long": ("day", "month", "year"),
        "short": ("month", "day", "year"),
        "weekday": ("weekday", "day", "month", "year"),
    }[fmt]
    spans, start = {}, 0
    for name, word in zip(names, words):
        start = text.index(word, start)
        spans[name] = (start, start + len(word))
        start += len(word)
    return spans


# Output positions of "YYYY-MM-DD" and the source field each must be read from.
_OUTPUT_FIELD = {
    0: "year",
    1: "year",
    2: "year",
    3: "year",
    5: "month",
    6: "month",
    8: "day",
    9: "day",
}


def alignment_summary(weights: torch.Tensor, batch: Seq2SeqBatch) -> dict[str, float]:
    """Statistics of a date model's alignment weights on a batch of dates.

    Args:
        weights: (b, 10, n) weights of each output character over the source.
        batch: the dates (with their texts and formats) that produced them.

    Returns a dict of fractions and means over the batch:
        ``max_weight``: the largest weight of each output row, averaged over all rows;
        ``right_field``: digit outputs whose largest weight lies in the field they
        are copied from (year, month or day);
        ``own_digit``: year digits whose largest weight is on the very digit they
        copy (the last two for the two-digit year of the numeric format);
        ``century_on_tens``: in the numeric format, century outputs ("19"/"20")
        whose largest weight is on the year's tens digit;
        ``month_on_name``: weight mass of the month digits on the month's name,
        in the formats that spell it;
        ``weekday_mass``: the weight mass on the weekday word, averaged over the
        output rows of the weekday format.

    A statistic about a format the batch does not hold (``century_on_tens``
    without a numeric date, ``month_on_name`` without a spelled month,
    ``weekday_mass`` without a weekday) has nothing to count and is left out
    of the dict, so that one call serves any mix of formats and every value
    it returns is a number.
    """
    if not isinstance(batch, Seq2SeqBatch) or batch.texts is None:
        raise TypeError("batch must be a Seq2SeqBatch of dates (with texts and formats)")
    weights = _validate.tensor("weights", weights, ndim=3, floating=True)
    b, m, n = weights.shape
    if b != len(batch) or m != TARGET_LENGTH or n != batch.source.shape[1]:
        raise ValueError(
            f"weights must have shape ({len(batch)}, {TARGET_LENGTH}, {batch.source.shape[1]}) "
            f"for this batch, got {tuple(weights.shape)}"
        )
    w = weights.detach().to(torch.float64)
    top = w.argmax(-1).tolist()  # (b, m)
    counts = {k: [0, 0] for k in ("right_field", "own_digit", "century_on_tens")}
    month_mass, weekday_mass = [], []
    for i, (text, fmt) in enumerate(zip(batch.texts, batch.formats)):
        spans = field_spans(text, fmt)
        for t, name in _OUTPUT_FIELD.items():
            start, end = spans[name]
            counts["right_field"][0] += start <= top[i][t] < end
            counts["right_field"][1] += 1
        year = spans["year"][0]
        if fmt == "numeric":
            for t in (2, 3):
                counts["own_digit"][0] += top[i][t] == year + t - 2
                counts["own_digit"][1] += 1
            for t in (0, 1):
                counts["century_on_tens"][0] += top[i][t] == year
                counts["century_on_tens"][1] += 1
        else:
            for t in range(4):
                counts["own_digit"][0] += top[i][t] == year + t
                counts["own_digit"][1] += 1
            start, end = spans["month"]
            month_mass.append(float(w[i, [5, 6], start:end].sum(-1).mean()))
        if fmt == "weekday":
            start, end = spans["weekday"]
            weekday_mass.append(float(w[i, :, start:end].sum(-1).mean()))

    out = {"max_weight": float(w.max(-1).values.mean())}
    for key in ("right_field", "own_digit", "century_on_tens"):
        hits, total = counts[key]
        if total:
            out[key] = hits / total
    if month_mass:
        out["month_on_name"] = sum(month_mass) / len(month_mass)
    if weekday_mass:
        out["weekday_mass"] = sum(weekday_mass) / len(weekday_mass)
    return out
