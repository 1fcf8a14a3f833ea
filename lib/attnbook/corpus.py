"""The tiny language model's text: the shipped corpus, its split, its tokenizer,
and what counting alone predicts.

* :func:`load_corpus`: the text that ships with the library, a frozen plain-text
  copy of the book's preface and Part I prose (``lm_data/corpus.txt``), whole or
  split into a training part and a held-out part (every tenth paragraph).
* :class:`CharTokenizer`: characters to integer ids and back.
* :func:`ngram_loss`: the cross-entropy of a unigram or bigram model counted on
  one text and scored on another, the baseline a trained model must beat.
"""

from __future__ import annotations

from collections import Counter
from importlib import resources

import torch

from . import _validate

__all__ = [
    "CORPUS_FILE",
    "HELD_OUT_EVERY",
    "load_corpus",
    "CharTokenizer",
    "ngram_loss",
]

CORPUS_FILE = "corpus.txt"
#: Every HELD_OUT_EVERY-th paragraph (the 10th, 20th, ...) is held out of training.
HELD_OUT_EVERY = 10
_PARTS = ("all", "train", "held-out")


def _data_file(name: str):
    return resources.files("attnbook") / "lm_data" / name


def load_corpus(part: str = "all") -> str:
    """The text that ships with the library (plain ASCII prose, about 90 KB).

    Paragraphs are separated by a newline; the text is a frozen copy of the
    book's preface and Part I prose, made by ``python tools/tiny_lm.py corpus``.

    Args:
        part: ``"all"``; ``"held-out"``, every :data:`HELD_OUT_EVERY`-th
            paragraph (paragraphs 9, 19, 29, ... counted from 0, except one
            that occurs more than once in the corpus), which the shipped model
            never trains on; or ``"train"``, the other paragraphs.
            Each part keeps the paragraphs' order and ends with a newline.
    """
    if part not in _PARTS:
        raise ValueError(f"part must be one of {_PARTS}, got {part!r}")
    text = _data_file(CORPUS_FILE).read_text(encoding="utf-8")
    if part == "all":
        return text
    paragraphs = text.splitlines()
    copies = Counter(paragraphs)
    # A paragraph that occurs more than once (a repeated line of boilerplate)
    # always trains, so that no held-out paragraph was seen in training.
    held = [(i + 1) % HELD_OUT_EVERY == 0 and copies[p] == 1 for i, p in enumerate(paragraphs)]
    kept = [p for p, h in zip(paragraphs, held) if h == (part == "held-out")]
    return "\n".join(kept) + "\n"


# ---------------------------------------------------------------- tokenizer


class CharTokenizer:
    """Characters to ids and back: id i is the i-th character of ``chars``.

    Args:
        text: the text whose distinct characters form the vocabulary (sorted).
    """

    def __init__(self, text: str) -> None:
        if not isinstance(text, str) or not text:
            raise ValueError(f"text must be a non-empty string, got {_validate._describe(text)}")
        self.chars = sorted(set(text))
        self._index = {c: i for i, c in enumerate(self.chars)}

    @property
    def vocab_size(self) -> int:
        return len(self.chars)

    def encode(self, text: str, errors: str = "strict") -> torch.Tensor:
        """The ids of ``text`` as a (len(text),) int64 tensor.

        A character outside the vocabulary is a ``ValueError`` naming it and
        its position (``errors="strict"``), or is left out (``errors="skip"``).
        """
        if not isinstance(text, str):
            raise TypeError(f"text must be a string, got {_validate._describe(text)}")
        if errors not in ("strict", "skip"):
            raise ValueError(f"errors must be 'strict' or 'skip', got {errors!r}")
        ids = []
        for position, char in enumerate(text):
            if char in self._index:
                ids.append(self._index[char])
            elif errors == "strict":
                raise ValueError(
                    f"text holds the character {char!r} at position {position}, which is not "
                    f"in the vocabulary of {self.vocab_size} characters (pass errors='skip' "
                    "to leave such characters out)"
                )
        return torch.tensor(ids, dtype=torch.long)

    def decode(self, ids) -> str:
        """The text of a 1-D sequence of ids (a tensor or a list of ints)."""
        if not isinstance(ids, (torch.Tensor, list, tuple)):
            raise TypeError(
                f"ids must be a tensor or a list of ids, got {_validate._describe(ids)}"
            )
        try:
            ids = torch.as_tensor(ids)
        except (TypeError, ValueError, RuntimeError) as err:
            raise TypeError(f"ids must be a list of integer ids, got {ids!r}") from err
        bad_dtype = ids.is_floating_point() or ids.is_complex() or ids.dtype == torch.bool
        if ids.dim() != 1 or bad_dtype:
            raise ValueError(
                f"ids must be a 1-D sequence of integer ids, got {_validate._describe(ids)}"
            )
        if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= self.vocab_size):
            raise ValueError(
                f"ids must lie in [0, {self.vocab_size - 1}], got values from "
                f"{int(ids.min())} to {int(ids.max())}"
            )
        return "".join(self.chars[i] for i in ids.tolist())

    def __repr__(self) -> str:
        return f"CharTokenizer(vocab_size={self.vocab_size})"


# ---------------------------------------------------------------- baselines


def ngram_loss(
    train_ids: torch.Tensor,
    eval_ids: torch.Tensor,
    vocab_size: int,
    order: int = 2,
    alpha: float = 1.0,
) -> float:
    """Mean cross-entropy (nats per token) of a count-based model on ``eval_ids``.

    ``order=1`` (unigram) predicts every token from the token frequencies of
    ``train_ids``; ``order=2`` (bigram) predicts token i + 1 from the counts of
    what followed token i in ``train_ids``. Counts get ``alpha`` added (add-one,
    Laplace, smoothing for ``alpha=1``), so a pair never seen in training costs
    a finite loss. With ``eval_ids`` equal to ``train_ids`` this is the model's
    loss on its own training text.

    Args:
        train_ids, eval_ids: (n,) int64 ids in [0, vocab_size).
    """
    vocab_size = _validate.positive_int("vocab_size", vocab_size)
    if order not in (1, 2):
        raise ValueError(f"order must be 1 (unigram) or 2 (bigram), got {order!r}")
    alpha = _validate.positive_number("alpha", alpha)
    for name, ids in (("train_ids", train_ids), ("eval_ids", eval_ids)):
        _validate.tensor(name, ids, ndim=1)
        if ids.dtype != torch.long or ids.numel() < 2:
            raise ValueError(
                f"{name} must hold at least 2 int64 ids, got {_validate._describe(ids)}"
            )
        if int(ids.min()) < 0 or int(ids.max()) >= vocab_size:
            raise ValueError(f"{name} must hold ids in [0, {vocab_size - 1}]")
    if order == 1:
        counts = torch.bincount(train_ids, minlength=vocab_size).double() + alpha  # (V,)
        log_probs = (counts / counts.sum()).log()
        return float(-log_probs[eval_ids[1:]].mean())
    pairs = train_ids[:-1] * vocab_size + train_ids[1:]  # one index per (previous, next)
    counts = torch.bincount(pairs, minlength=vocab_size * vocab_size).double()
    counts = counts.reshape(vocab_size, vocab_size) + alpha  # (previous, next)
    log_probs = (counts / counts.sum(dim=1, keepdim=True)).log()
    return float(-log_probs[eval_ids[:-1], eval_ids[1:]].mean())
