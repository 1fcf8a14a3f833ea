"""Chapter 11's live explorer: a sequence of your own, run by the model in the page.

:func:`induction_live` (or :class:`InductionLive`) takes an
:class:`attnbook.induction.AttentionOnlyTransformer` (by default the chapter's
model, shipped as ``induction.f16``, made by ``make live-weights``) and shows,
for a token sequence the reader types or draws at random, the previous-token
head's and the induction head's attention and the model's prediction at each
position. The forward pass runs in the browser (``induction.js`` on
``runtime.js``); Python only packs the weights and draws the stored picture.

On the website the fragment inlines the module and the weights (about 120 KB
of base64) rather than serving them once from ``_static/``: each model is used
by one page only, so a shared file would save nothing on other pages but the
runtime (about 8 KB), while an inline fragment keeps a chapter's HTML export
self-contained and works from ``file://``, where a module or ``fetch`` from
``_static/`` is refused. ``make bench`` reports the page weight.
"""

from __future__ import annotations

import io
import json
from importlib import resources

import anywidget
import torch
import traitlets
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from ...induction import AttentionOnlyTransformer, make_repeat_batch
from ._fragment import LiveDisplay
from ._pack import find_heads, pack_attention_only, unpack_attention_only
from ._source import module_source

WEIGHTS_FILE = "induction.f16"
ARCH_FILE = "induction.json"


def load_chapter_weights() -> tuple[bytes, dict]:
    """``(weights, arch)`` of chapter 11's trained model, as shipped (``make live-weights``)."""
    folder = resources.files(__package__)
    weights = folder.joinpath(WEIGHTS_FILE).read_bytes()
    arch = json.loads(folder.joinpath(ARCH_FILE).read_text(encoding="utf-8"))
    return weights, arch


def parse_tokens(text: str, vocab: int, max_len: int) -> dict:
    """The same reading of the text box as ``parseTokens`` in induction.js."""
    import re

    pieces = [p for p in re.split(r"[\s,;]+", str(text)) if p]
    tokens, unknown = [], []
    for piece in pieces:
        if re.fullmatch(r"[0-9]+", piece) and int(piece) < vocab:
            tokens.append(int(piece))
        else:
            unknown.append(piece)
    return {
        "tokens": tokens[:max_len],
        "unknown": unknown,
        "dropped": max(0, len(tokens) - max_len),
    }


def default_text(max_len: int = 40, vocab: int = 64) -> str:
    """The default input: a sequence of the chapter's task (segment 12, gap up to 12)."""
    segment = min(12, max(2, max_len // 3))
    batch = make_repeat_batch(
        1,
        length=max_len,
        segment=segment,
        vocab=vocab,
        max_gap=min(12, max_len - 2 * segment),
        seed=0,
    )
    return " ".join(str(t) for t in batch.tokens[0].tolist())


def run(weights: bytes, arch: dict, tokens: list[int]) -> tuple[torch.Tensor, list]:
    """PyTorch's forward on the packed (float16-rounded) weights: logits (n, vocab)
    and every layer's attention (heads, n, n); what the page computes."""
    model = unpack_attention_only(weights, arch)
    with torch.no_grad():
        logits = model(torch.tensor([tokens], dtype=torch.long))[0]
    return logits, [w[0] for w in model.attention_weights]


def describe(tokens, logits, attention, heads, query) -> str:
    """The sentence the page announces for ``query`` (the status line of induction.js)."""
    n = len(tokens)
    if n == 0:
        return "No tokens: nothing to show."
    prev = attention[heads["previous"][0]][heads["previous"][1]][query]
    ind = attention[heads["induction"][0]][heads["induction"][1]][query]
    probs = torch.softmax(logits, dim=-1)
    predictions = probs.argmax(-1).tolist()
    j, k = int(ind.argmax()), int(prev.argmax())
    right = sum(predictions[i] == tokens[i + 1] for i in range(n - 1))
    text = (
        f"Position {query} holds token {tokens[query]}. The previous-token head puts "
        f"{round(float(prev[k]), 2):g} of its weight on position {k}"
        f"{' (the previous one)' if k == query - 1 else ''}; the induction head puts "
        f"{round(float(ind[j]), 2):g} on position {j} (token {tokens[j]}). The model predicts "
        f"token {predictions[query]} next, with probability {round(float(probs[query].max()), 2):g}. "
    )
    if n > 1:
        text += f"Its prediction is the actual next token at {right} of {n - 1} positions."
    return text


def induction_targets(tokens: list[int]) -> dict[int, list[int]]:
    """query -> keys one step past an earlier copy of the query's token (as induction.js)."""
    targets: dict[int, list[int]] = {}
    for i in range(1, len(tokens)):
        for j in range(i - 1):
            if tokens[j] == tokens[i]:
                targets.setdefault(i, []).append(j + 1)
    return targets


def summary(tokens, logits, attention, heads) -> str:
    """A sentence describing the whole picture (the stored PNG's alt text)."""
    n = len(tokens)
    pl, ph = heads["previous"]
    il, ih = heads["induction"]
    prev = attention[pl][ph]
    ind = attention[il][ih]
    on_previous = float(prev.diagonal(offset=-1).mean()) if n > 1 else 0.0
    targets = induction_targets(tokens)
    text = (
        f"Attention of two heads on a sequence of {n} tokens, and the model's predictions. "
        f"The previous-token head (layer {pl}, head {ph}) puts on average {on_previous:.2f} "
        "of each query's weight on the position just before it. "
    )
    if targets:
        on_target = sum(float(ind[i, keys].sum()) for i, keys in targets.items()) / len(targets)
        text += (
            f"At the {len(targets)} positions whose token appeared before, the induction head "
            f"(layer {il}, head {ih}) puts on average {on_target:.2f} of its weight one step "
            "past the earlier copy. "
        )
    if n > 1:
        probs = torch.softmax(logits[:-1], dim=-1)[torch.arange(n - 1), torch.tensor(tokens[1:])]
        text += (
            f"The model gives the actual next token a probability above 0.5 at "
            f"{int((probs > 0.5).sum())} of {n - 1} positions."
        )
    return text.strip()


def picture(tokens, logits, attention, heads) -> bytes:
    """PNG of the two heads' attention and the probability of each actual next token."""
    fig = Figure(figsize=(10, 3.4), dpi=80, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, 3, width_ratios=[1, 1, 1.4])
    n = len(tokens)
    for ax, key, title in (
        (axes[0], "previous", "previous-token head"),
        (axes[1], "induction", "induction head"),
    ):
        layer, head = heads[key]
        ax.imshow(attention[layer][head].numpy(), cmap="Blues", vmin=0, vmax=1)
        ax.set_title(f"{title} (layer {layer}, head {head})", fontsize="medium")
        ax.set_xlabel("key position")
    axes[0].set_ylabel("query position")
    probs = torch.softmax(logits, dim=-1)
    actual = probs[torch.arange(n - 1), torch.tensor(tokens[1:])] if n > 1 else torch.zeros(0)
    axes[2].bar(range(n - 1), actual.numpy(), color="tab:blue", width=0.8)
    axes[2].set_ylim(0, 1)
    axes[2].set_xlabel("position")
    axes[2].set_title("probability of the actual next token", fontsize="medium")
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


class InductionLive(LiveDisplay, anywidget.AnyWidget):
    """The live explorer of chapter 11 (see the module docstring).

    Traitlets (synced with the page): ``weights`` (float16 bytes), ``arch``
    (sizes and tensor layout), ``heads`` (``{"previous": [layer, head],
    "induction": [layer, head]}``), ``text`` (the token ids typed) and ``seed``
    (of the last random sequence). :meth:`set_model` hands it another model.
    """

    _module = "induction"
    _esm = module_source(_module)
    _page_state = ("weights", "arch", "heads", "text", "seed")
    weights = traitlets.Bytes(b"").tag(sync=True)
    arch = traitlets.Dict().tag(sync=True)
    heads = traitlets.Dict().tag(sync=True)
    text = traitlets.Unicode("").tag(sync=True)
    seed = traitlets.Int(0).tag(sync=True)

    def __init__(self, model: AttentionOnlyTransformer | None = None, text: str | None = None):
        if text is not None and not isinstance(text, str):
            raise TypeError(f"text must be a string of token ids, got {type(text).__name__}")
        super().__init__()
        if model is None:
            weights, arch = load_chapter_weights()
            heads = arch.pop("heads")
        else:
            weights, arch = pack_attention_only(model)
            heads = find_heads(model)
        self.weights, self.arch, self.heads = weights, arch, heads
        self.text = default_text(arch["max_len"], arch["vocab"]) if text is None else text

    def set_model(self, model: AttentionOnlyTransformer) -> None:
        """Show ``model`` (e.g. one the reader trained): its weights and its heads."""
        weights, arch = pack_attention_only(model)
        self.heads = find_heads(model)
        self.arch = arch
        self.weights = weights

    # -- what the page computes, in PyTorch -----------------------------------
    def parsed(self) -> dict:
        return parse_tokens(self.text, self.arch["vocab"], self.arch["max_len"])

    def forward(self) -> tuple[list[int], torch.Tensor, list]:
        tokens = self.parsed()["tokens"]
        logits, attention = run(self.weights, self.arch, tokens) if tokens else (None, [])
        return tokens, logits, attention

    def alt_text(self, query: int = 0) -> str:
        tokens, logits, attention = self.forward()
        return describe(tokens, logits, attention, self.heads, query)

    def summary(self) -> str:
        """The stored picture's description (its alt text on the website)."""
        tokens, logits, attention = self.forward()
        if not tokens:
            return "No token ids in the text: the explorer shows a note and no picture."
        return summary(tokens, logits, attention, self.heads)

    def png(self) -> bytes:
        tokens, logits, attention = self.forward()
        if not tokens:
            raise ValueError("text holds no token id: there is nothing to draw")
        return picture(tokens, logits, attention, self.heads)

    # -- display (LiveDisplay) -----------------------------------------------
    def _drawable(self) -> bool:
        return bool(self.parsed()["tokens"])

    def __repr__(self) -> str:
        a = self.arch
        return (
            f"InductionLive(layers={a['num_layers']}, heads={a['num_heads']}, "
            f"width={a['num_hiddens']}, vocab={a['vocab']}, {len(self.parsed()['tokens'])} tokens)"
        )


def induction_live(
    model: AttentionOnlyTransformer | None = None, text: str | None = None
) -> InductionLive:
    """Chapter 11's live explorer over ``model`` (default: the chapter's, as shipped).

    Args:
        model: an :class:`attnbook.induction.AttentionOnlyTransformer`.
        text: token ids separated by spaces (default: a sequence of the task).
    """
    if model is not None and not isinstance(model, AttentionOnlyTransformer):
        raise TypeError(
            f"model must be an attnbook.induction.AttentionOnlyTransformer, got {type(model).__name__}"
        )
    return InductionLive(model, text)
