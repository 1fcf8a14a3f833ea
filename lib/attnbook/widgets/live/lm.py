"""Chapter 10's live explorer: a prompt of your own, run by the model in the page.

:func:`lm_live` (or :class:`LMLive`) takes an :class:`attnbook.lm.TinyLM` and
its tokenizer (by default the chapter's shipped checkpoint, packed as
``lm.f16``, made by ``make live-weights``) and shows, for a prompt the reader
types, the next-character distribution under temperature, top-k and top-p
(exactly as :func:`attnbook.sampling.next_token_probs` computes it), the
attention of a chosen block and head over the prompt, and a continuation of
:data:`CONTINUE` characters, greedy or sampled from a shown seed. The forward
pass runs in the browser (``lm.js`` on ``runtime.js``); Python packs the
weights, draws the stored picture and, here, computes in PyTorch what the page
computes, for the tests.

The page samples with its own seeded generator (``seededRandom`` in
runtime.js, mirrored by :func:`seeded_uniforms`), not torch's, so a sampled
continuation differs from ``lm.generate(..., seed=s)``; it draws from the same
distributions. Greedy continuations equal ``lm.generate``'s.

On the website the fragment inlines the module and the weights (about 312 KB
of base64), as chapter 11's does (see :mod:`attnbook.widgets.live.induction`
for why): the chapter's page stays under 1 MiB with them (``make bench``).
"""

from __future__ import annotations

import io
import json
import math
import numbers
import unicodedata
from importlib import resources

import anywidget
import torch
import traitlets
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from ... import _validate, sampling
from ...corpus import CharTokenizer
from ...lm import KVCache, TinyLM, generate
from ._fragment import LiveDisplay
from ._pack_lm import pack_tiny_lm, unpack_tiny_lm
from ._source import module_source

WEIGHTS_FILE = "lm.f16"
ARCH_FILE = "lm.json"
CONTINUE = 40  # characters of continuation the page writes (CONTINUE in lm.js)
DEFAULT_TEXT = "The query "
# The page's temperature slider: 0.05 to 3 in steps of 0.01 (top-p: 0.01 to 1).
TEMPERATURES = (0.05, 3.0)


def _on_grid(value: float) -> bool:
    return abs(value * 100 - round(value * 100)) < 1e-9


def load_lm_weights() -> tuple[bytes, dict]:
    """``(weights, arch)`` of chapter 10's shipped checkpoint, packed (``make live-weights``)."""
    folder = resources.files(__package__)
    weights = folder.joinpath(WEIGHTS_FILE).read_bytes()
    arch = json.loads(folder.joinpath(ARCH_FILE).read_text(encoding="utf-8"))
    return weights, arch


def encode_prompt(text: str, chars: str, max_len: int) -> dict:
    """The same reading of the text box as ``encodePrompt`` in lm.js: the text in
    Unicode's composed form (NFC), then ``ids`` of the known characters (the last
    ``max_len``), ``unknown`` (each unknown character once, in order) and
    ``dropped`` (known characters before the last ``max_len``)."""
    index = {c: i for i, c in enumerate(chars)}
    ids, unknown = [], []
    for c in unicodedata.normalize("NFC", str(text)):
        if c in index:
            ids.append(index[c])
        elif c not in unknown:
            unknown.append(c)
    dropped = max(0, len(ids) - max_len)
    return {"ids": ids[dropped:], "unknown": unknown, "dropped": dropped}


def seeded_uniforms(seed: int, count: int) -> list[float]:
    """The page's random numbers in (0, 1]: ``1 - r`` for the first ``count``
    numbers r of mulberry32 (``seededRandom`` in runtime.js) seeded with ``seed``."""
    mask = 0xFFFFFFFF
    a = seed & mask
    out = []
    for _ in range(count):
        a = (a + 0x6D2B79F5) & mask
        t = a
        t = ((t ^ (t >> 15)) * (t | 1)) & mask
        t ^= (t + (((t ^ (t >> 7)) * (t | 61)) & mask)) & mask
        out.append(1 - ((t ^ (t >> 14)) & mask) / 4294967296)
    return out


def knobs(vocab_size: int, top_k, top_p) -> tuple[int | None, float | None]:
    """The page's controls as attnbook.sampling's arguments: top-k of the whole
    vocabulary and top-p = 1 mean "no filter" (None)."""
    top_k = sampling.check_top_k(top_k)
    top_p = sampling.check_top_p(top_p)
    return (None if top_k is None or top_k >= vocab_size else top_k), (
        None if top_p is None or top_p >= 1 else top_p
    )


def run(weights: bytes, arch: dict, ids: list[int]) -> tuple[torch.Tensor, list]:
    """PyTorch's forward on the packed (float16-rounded) weights: logits (n, vocab)
    and every block's attention (heads, n, n); what the page computes."""
    model = unpack_tiny_lm(weights, arch)
    with torch.no_grad():
        logits = model(torch.tensor([ids], dtype=torch.long))[0]
    return logits, [block.attention.attention_weights[0] for block in model.blocks]


@torch.no_grad()
def continuation(
    weights: bytes,
    arch: dict,
    ids: list[int],
    steps: int,
    *,
    greedy: bool = True,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    seed: int = 0,
) -> dict:
    """What the page continues ``ids`` with, computed in PyTorch.

    Greedy: ``lm.generate`` at temperature 0. Sampled: at each step the
    distribution ``sampling.next_token_probs(logits, temperature, top_k, top_p)``
    and, as ``sampling.draw`` does, the first token whose cumulative
    probability reaches u times the total, u from :func:`seeded_uniforms`.
    Returns ``ids`` (the new tokens), ``probs`` (the distribution of each
    step), ``uniforms`` and ``margin`` (the smallest distance of a draw from a
    boundary between two tokens; a draw with a margin above float rounding
    picks the same token in the page).
    """
    model = unpack_tiny_lm(weights, arch)
    prompt = torch.tensor(ids, dtype=torch.long)
    if greedy:
        out, logits = generate(model, prompt, steps, return_logits=True)
        return {"ids": out[len(ids) :].tolist(), "logits": logits, "uniforms": [], "margin": None}
    top_k, top_p = knobs(model.vocab_size, top_k, top_p)
    uniforms = seeded_uniforms(seed, steps)
    cache, feed, new, seen, margin = KVCache(), prompt[None], [], [], math.inf
    for u in uniforms:
        logits = model(feed, cache)[0, -1]
        probs = sampling.next_token_probs(logits, temperature, top_k, top_p)
        cdf = probs.cumsum(0)
        target = u * float(cdf[-1])
        token = min(
            int(torch.searchsorted(cdf, torch.tensor([target], dtype=cdf.dtype))), len(cdf) - 1
        )
        margin = min(margin, float((cdf - target).abs().min()))
        new.append(token)
        seen.append(probs)
        feed = torch.tensor([[token]])
    return {"ids": new, "probs": seen, "uniforms": uniforms, "margin": margin}


def _char(c: str) -> str:
    return {" ": "␣", "\n": "⏎"}.get(c, c)


def summary(chars, ids, probs, weights, block, head) -> str:
    """A sentence describing the stored picture (its alt text)."""
    top = probs.topk(3)
    listed = ", ".join(
        f"{_char(chars[int(i)])!r} {float(p):.2f}" for p, i in zip(top.values, top.indices)
    )
    j = int(weights.argmax())
    return (
        f"The next-character distribution after a prompt of {len(ids)} characters: the "
        f"likeliest are {listed}. Block {block}, head {head} puts {float(weights[j]):.2f} of "
        f"the last position's weight on position {j} ({_char(chars[ids[j]])!r})."
    )


def picture(chars, ids, probs, weights, block, head) -> bytes:
    """PNG: the ten likeliest next characters, and the chosen head's weights over the prompt."""
    fig = Figure(figsize=(10, 3.0), dpi=80, layout="constrained")
    FigureCanvasAgg(fig)
    left, right = fig.subplots(1, 2, width_ratios=[1, 2])
    top = probs.topk(min(10, len(probs)))
    left.barh(range(len(top.values)), top.values.numpy(), color="tab:blue")
    left.set_yticks(range(len(top.values)), [_char(chars[int(i)]) for i in top.indices])
    left.invert_yaxis()
    left.set_xlim(0, 1)
    left.set_xlabel("probability")
    left.set_title("the next character", fontsize="medium")
    n = len(ids)
    right.bar(range(n), weights.numpy(), color="tab:blue", width=0.8)
    right.set_xticks(range(n), [_char(chars[i]) for i in ids], fontsize="small")
    right.set_ylim(0, 1)
    right.set_ylabel("weight")
    right.set_title(
        f"block {block}, head {head}: the last position's weights over the prompt",
        fontsize="medium",
    )
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


class LMLive(LiveDisplay, anywidget.AnyWidget):
    """The live explorer of chapter 10 (see the module docstring).

    Traitlets (synced with the page): ``weights`` (float16 bytes), ``arch``
    (sizes, characters, tensor layout), ``text`` (the prompt), ``temperature``,
    ``top_k`` and ``top_p`` (None: no filter), ``block`` and ``head`` (whose
    attention shows), ``greedy`` (the continuation's kind) and ``seed`` (of a
    sampled continuation). :meth:`set_model` hands it another model.
    """

    _module = "lm"
    _esm = module_source(_module)
    _page_state = (
        "arch",
        "text",
        "temperature",
        "top_k",
        "top_p",
        "block",
        "head",
        "greedy",
        "seed",
        "weights",
    )
    weights = traitlets.Bytes(b"").tag(sync=True)
    arch = traitlets.Dict().tag(sync=True)
    text = traitlets.Unicode("").tag(sync=True)
    temperature = traitlets.Float(1.0).tag(sync=True)
    top_k = traitlets.Int(None, allow_none=True).tag(sync=True)
    top_p = traitlets.Float(None, allow_none=True).tag(sync=True)
    block = traitlets.Int(0).tag(sync=True)
    head = traitlets.Int(0).tag(sync=True)
    greedy = traitlets.Bool(True).tag(sync=True)
    seed = traitlets.Int(0).tag(sync=True)

    def __init__(
        self,
        model: TinyLM | None = None,
        tokenizer: CharTokenizer | None = None,
        text: str = DEFAULT_TEXT,
        **settings,
    ):
        if not isinstance(text, str):
            raise TypeError(f"text must be a string (the prompt), got {type(text).__name__}")
        super().__init__()
        if model is None:
            if tokenizer is not None:
                raise ValueError("tokenizer is given without a model: pass both, or neither")
            weights, arch = load_lm_weights()
            arch.pop("source", None)
        else:
            if tokenizer is None:
                raise ValueError("model is given without its tokenizer: pass both")
            weights, arch = pack_tiny_lm(model, tokenizer)
        self.weights, self.arch, self.text = weights, arch, text
        self.configure(**settings)

    def configure(self, **settings) -> None:
        """Set ``temperature``, ``top_k``, ``top_p``, ``block``, ``head``, ``greedy``
        and ``seed`` (checked as attnbook.sampling and lm.generate check them)."""
        allowed = ("temperature", "top_k", "top_p", "block", "head", "greedy", "seed")
        for name in settings:
            if name not in allowed:
                raise TypeError(f"unknown setting {name!r}; the settings are {', '.join(allowed)}")
        if "temperature" in settings:
            t = _validate.real_number("temperature", settings["temperature"])
            if not (TEMPERATURES[0] <= t <= TEMPERATURES[1] and _on_grid(t)):
                raise ValueError(
                    f"temperature must be one of the slider's values, {TEMPERATURES[0]} to "
                    f"{TEMPERATURES[1]} in steps of 0.01, got {t!r}"
                )
            self.temperature = t
        if "top_k" in settings:
            self.top_k = sampling.check_top_k(settings["top_k"])
        if "top_p" in settings:
            p = sampling.check_top_p(settings["top_p"])
            if p is not None and not _on_grid(p):
                raise ValueError(f"top_p must be a multiple of 0.01 (the slider's step), got {p!r}")
            self.top_p = p
        for name, limit in (("block", self.arch["num_layers"]), ("head", self.arch["num_heads"])):
            if name in settings:
                value = settings[name]
                if isinstance(value, bool) or not isinstance(value, numbers.Integral):
                    raise TypeError(f"{name} must be an integer, got {value!r}")
                if not 0 <= value < limit:
                    raise ValueError(f"{name} must lie in [0, {limit - 1}], got {value}")
                setattr(self, name, int(value))
        if "greedy" in settings:
            self.greedy = _validate.flag("greedy", settings["greedy"])
        if "seed" in settings:
            seed = settings["seed"]
            if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
                raise ValueError(f"seed must be an integer >= 0, got {seed!r}")
            self.seed = int(seed)

    def set_model(self, model: TinyLM, tokenizer: CharTokenizer) -> None:
        """Show ``model`` (e.g. one the reader trained), read with ``tokenizer``."""
        weights, arch = pack_tiny_lm(model, tokenizer)
        self.block = min(self.block, arch["num_layers"] - 1)
        self.head = min(self.head, arch["num_heads"] - 1)
        self.arch = arch
        self.weights = weights

    # -- what the page computes, in PyTorch -----------------------------------
    def parsed(self) -> dict:
        return encode_prompt(self.text, self.arch["chars"], self.arch["max_len"])

    def next_probs(self) -> torch.Tensor:
        """The distribution the page shows and samples the next character from (vocab,)."""
        ids = self.parsed()["ids"]
        if not ids:
            raise ValueError("text holds no character the model knows: there is no next one")
        logits, _ = run(self.weights, self.arch, ids)
        top_k, top_p = knobs(self.arch["vocab_size"], self.top_k, self.top_p)
        return sampling.next_token_probs(logits[-1], self.temperature, top_k, top_p)

    def continuation(self) -> dict:
        """The page's continuation (see :func:`continuation`), with ``text``."""
        ids = self.parsed()["ids"]
        steps = min(CONTINUE, self.arch["max_len"] - len(ids))
        if not ids or steps == 0:
            return {"ids": [], "text": "", "uniforms": [], "margin": None}
        out = continuation(
            self.weights,
            self.arch,
            ids,
            steps,
            greedy=self.greedy,
            temperature=self.temperature,
            top_k=self.top_k,
            top_p=self.top_p,
            seed=self.seed,
        )
        out["text"] = "".join(self.arch["chars"][i] for i in out["ids"])
        return out

    def _view(self):
        ids = self.parsed()["ids"]
        if not ids:
            return None
        _, attention = run(self.weights, self.arch, ids)
        weights = attention[self.block][self.head][-1]
        return self.arch["chars"], ids, self.next_probs(), weights, self.block, self.head

    def summary(self) -> str:
        """The stored picture's description (its alt text on the website)."""
        view = self._view()
        if view is None:
            return "No character of the prompt is in the model's vocabulary: the explorer shows a note."
        return summary(*view)

    def png(self) -> bytes:
        view = self._view()
        if view is None:
            raise ValueError("text holds no character the model knows: there is nothing to draw")
        return picture(*view)

    # -- display (LiveDisplay) -----------------------------------------------
    def _drawable(self) -> bool:
        return bool(self.parsed()["ids"])

    def __repr__(self) -> str:
        a = self.arch
        return (
            f"LMLive(layers={a['num_layers']}, heads={a['num_heads']}, width={a['num_hiddens']}, "
            f"vocab={a['vocab_size']}, {len(self.parsed()['ids'])} characters)"
        )


def lm_live(
    model: TinyLM | None = None,
    tokenizer: CharTokenizer | None = None,
    text: str = DEFAULT_TEXT,
    **settings,
) -> LMLive:
    """Chapter 10's live explorer over ``model`` (default: the shipped checkpoint).

    Args:
        model: an :class:`attnbook.lm.TinyLM`, with its ``tokenizer``.
        text: the prompt.
        settings: ``temperature``, ``top_k``, ``top_p``, ``block``, ``head``,
            ``greedy``, ``seed`` (see :meth:`LMLive.configure`).
    """
    if model is not None and not isinstance(model, TinyLM):
        raise TypeError(f"model must be an attnbook.lm.TinyLM, got {type(model).__name__}")
    return LMLive(model, tokenizer, text, **settings)
