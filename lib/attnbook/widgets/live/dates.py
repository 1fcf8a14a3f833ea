"""Chapter 13's live explorer: a date of your own, rewritten by the models in the page.

:func:`dates_live` (or :class:`DatesLive`) takes the chapter's GRU
encoder-decoder with attention (:class:`attnbook.seq2seq.GRUSeq2Seq`; by
default the chapter's seed-0 model as shipped in ``dates.f16``) and the one
without attention (by default seed 0 of ``make seq2seq-runs``, 800 steps, in
``dates_no_attention.f16``), both made by ``make live-weights``. For a date the
reader types in any format, the page shows both models' answers side by side,
the cross-attention heatmap of the model with attention, and whether the input
is written in one of the four training formats (in the words of
:func:`~attnbook.widgets.live._pack_dates.verdict_text`, which the alt text
uses too). The forward passes and the greedy decoding run in the browser
(``dates.js`` on ``runtime.js``); Python packs the weights and draws the
stored picture.

On the website the fragment inlines the module and both models' weights
(about 250 KB of base64), for the reasons given in
:mod:`attnbook.widgets.live.induction`.
"""

from __future__ import annotations

import io
import json
from importlib import resources

import anywidget
import traitlets
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from ...seq2seq import GRUSeq2Seq
from ._fragment import LiveDisplay
from ._pack_dates import (
    pack_gru_seq2seq,
    read_source,
    run,
    training_format,
    unpack_gru_seq2seq,
    verdict_text,
)
from ._source import module_source

WEIGHTS_FILES = {"attention": "dates.f16", "no_attention": "dates_no_attention.f16"}
ARCH_FILE = "dates.json"
DEFAULT_TEXT = "Sunday 23 Feb 1969"


def load_chapter_weights(kind: str = "attention") -> tuple[bytes, dict]:
    """``(weights, arch)`` of one of chapter 13's models as shipped (``make live-weights``):
    ``kind`` is ``"attention"`` or ``"no_attention"``."""
    if kind not in WEIGHTS_FILES:
        raise ValueError(f"kind must be one of {tuple(WEIGHTS_FILES)}, got {kind!r}")
    folder = resources.files(__package__)
    weights = folder.joinpath(WEIGHTS_FILES[kind]).read_bytes()
    arch = json.loads(folder.joinpath(ARCH_FILE).read_text(encoding="utf-8"))[kind]
    return weights, arch


def _packed(model, kind: str, attention: bool) -> tuple[bytes, dict]:
    if model is None:
        weights, arch = load_chapter_weights(kind)
        arch.pop("source", None)
        return weights, arch
    return pack_gru_seq2seq(_checked(model, attention))


def picture(text: str, out: dict, plain: dict) -> bytes:
    """PNG of the cross-attention heatmap, both answers in its title."""
    n = len(text)
    fig = Figure(figsize=(max(3.2, 0.3 * n + 1.4), 3.6), dpi=80, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    image = ax.imshow(out["weights"].numpy(), cmap="Blues", vmin=0, vmax=1, aspect="auto")
    ax.set_xticks(range(n), [c if c != " " else "\u00b7" for c in text])
    ax.set_yticks(range(len(out["tokens"])), list(_characters(out["tokens"])))
    ax.tick_params(length=0)
    ax.set_xlabel("input character")
    ax.set_ylabel("output character")
    ax.set_title(f"with attention: {out['answer']}   without: {plain['answer']}", fontsize="medium")
    fig.colorbar(image, ax=ax, fraction=0.04).set_label("attention weight")
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


def _characters(tokens) -> str:
    from ...dates import TARGET_VOCAB

    return "".join("\u2205" if t == 0 else TARGET_VOCAB.symbols[t] for t in tokens)


class DatesLive(LiveDisplay, anywidget.AnyWidget):
    """The live explorer of chapter 13 (see the module docstring).

    Traitlets (synced with the page): ``weights`` and ``arch`` of the model
    with attention, ``plain_weights`` and ``plain_arch`` of the model without,
    and ``text`` (what the reader typed). :meth:`set_model` hands it others.
    """

    _module = "dates"
    _esm = module_source(_module)
    _page_state = ("weights", "arch", "plain_weights", "plain_arch", "text")
    weights = traitlets.Bytes(b"").tag(sync=True)
    arch = traitlets.Dict().tag(sync=True)
    plain_weights = traitlets.Bytes(b"").tag(sync=True)
    plain_arch = traitlets.Dict().tag(sync=True)
    text = traitlets.Unicode("").tag(sync=True)

    def __init__(
        self,
        model: GRUSeq2Seq | None = None,
        baseline: GRUSeq2Seq | None = None,
        text: str | None = None,
    ):
        if text is not None and not isinstance(text, str):
            raise TypeError(f"text must be a string, got {type(text).__name__}")
        super().__init__()
        self.weights, self.arch = _packed(model, "attention", True)
        self.plain_weights, self.plain_arch = _packed(baseline, "no_attention", False)
        self.text = DEFAULT_TEXT if text is None else text

    def set_model(
        self, model: GRUSeq2Seq | None = None, baseline: GRUSeq2Seq | None = None
    ) -> None:
        """Show ``model`` (with attention) and/or ``baseline`` (without), e.g. ones the reader trained."""
        # The arch first: the page reloads a model when its weights change.
        if model is not None:
            weights, self.arch = pack_gru_seq2seq(_checked(model, True))
            self.weights = weights
        if baseline is not None:
            weights, self.plain_arch = pack_gru_seq2seq(_checked(baseline, False))
            self.plain_weights = weights

    # -- what the page computes, in PyTorch -----------------------------------
    def read(self) -> dict:
        """The text box as the page reads it: ``text``, ``unknown``, ``dropped``."""
        return read_source(self.text, self.arch["max_len"])

    def verdict(self) -> dict:
        """Whether the text read is a date in a training format (``training_format``)."""
        return training_format(self.read()["text"])

    def forward(self) -> tuple[dict | None, dict | None]:
        """Both models on the text read (PyTorch on the float16 weights the page runs):
        ``run``'s dicts (tokens, answer, logits, weights), or ``(None, None)`` if empty."""
        text = self.read()["text"]
        if not text:
            return None, None
        out = run(unpack_gru_seq2seq(self.weights, self.arch), text)
        plain = run(unpack_gru_seq2seq(self.plain_weights, self.plain_arch), text)
        return out, plain

    def summary(self) -> str:
        """The stored picture's description (its alt text on the website)."""
        out, plain = self.forward()
        if out is None:
            return "No date in the text box: the explorer shows a note and no picture."
        text = self.read()["text"]
        looks = []
        for t, c in enumerate(_characters(out["tokens"])):
            j = int(out["weights"][t].argmax())
            looks.append(f"{c} on {text[j] if text[j] != ' ' else 'a space'}")
        return (
            f"Cross-attention heatmap for {text!r}: one row per output character, one column "
            f"per input character. {verdict_text(self.verdict())} With attention the model writes "
            f"{out['answer']}, without attention {plain['answer']}. Largest weight of each "
            f"output character: {', '.join(looks)}."
        )

    def png(self) -> bytes:
        out, plain = self.forward()
        if out is None:
            raise ValueError("text holds no character of the date vocabulary: nothing to draw")
        return picture(self.read()["text"], out, plain)

    # -- display (LiveDisplay) -----------------------------------------------
    def _drawable(self) -> bool:
        return bool(self.read()["text"])

    def __repr__(self) -> str:
        return f"DatesLive(text={self.text!r}, read={self.read()['text']!r})"


def _checked(model, attention: bool) -> GRUSeq2Seq:
    if not isinstance(model, GRUSeq2Seq):
        raise TypeError(f"model must be an attnbook.seq2seq.GRUSeq2Seq, got {type(model).__name__}")
    if model.use_attention is not attention:
        which = "with" if attention else "without"
        raise ValueError(
            f"{'model' if attention else 'baseline'} must be a GRUSeq2Seq {which} attention"
        )
    return model


def dates_live(
    model: GRUSeq2Seq | None = None, baseline: GRUSeq2Seq | None = None, text: str | None = None
) -> DatesLive:
    """Chapter 13's live explorer (default: the chapter's two models, as shipped).

    Args:
        model: a :class:`attnbook.seq2seq.GRUSeq2Seq` with attention over the date vocabularies.
        baseline: one without attention, whose answer is shown beside it.
        text: the date in the text box (default: "Sunday 23 Feb 1969").
    """
    return DatesLive(model, baseline, text)
