"""Chapter 15's live explorer: a digit of your own, read by the tiny ViT in the page.

:func:`digits_live` (or :class:`DigitsLive`) takes an :class:`attnbook.vit.TinyViT`
(by default the chapter's seed 0, shipped as ``digits.f16``, made by ``make
live-weights``) and shows, for an 8x8 digit the reader draws (mouse, finger or
keyboard) or picks among the test images, the class probabilities, the [CLS]
query's raw attention in the last block, attention rollout and occlusion of the
predicted class (16 more forward passes) with the fill the reader picks: zero
(blank paper, as the chapter's frame explorer) or the mean training image. The
forward passes run in the browser (``digits.js`` on ``runtime.js``); Python
only packs the weights and draws the stored picture.

On the website the fragment inlines the module and the weights, for the
reasons given in :mod:`attnbook.widgets.live.induction`, the weights as plain
base64 of their float16 bytes (185 KB; chapter 15's page, with its frame
explorer beside this one, weighs about 807 KiB). Deflating them saved 25 KB
but cost the first result 110-180 ms in Chromium (the browser's
DecompressionStream), which the 100 ms budget cannot afford.
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

from ...explain import attention_rollout, cls_attention, occlusion_scores
from ...vit import TinyViT
from ._fragment import LiveDisplay
from ._pack_digits import pack_vit, unpack_vit
from ._source import module_source

WEIGHTS_FILE = "digits.f16"
ARCH_FILE = "digits.json"
# The occlusion fills the page offers, as the chapter names them (vit_study.fills).
FILLS = ("zero", "mean image")
FILL_WORDS = {"zero": "zero (blank paper)", "mean image": "the mean training image"}
SIDE = 8


def load_chapter_weights() -> tuple[bytes, dict, dict]:
    """``(weights, arch, extras)`` of chapter 15's seed-0 ViT, as shipped (``make live-weights``).

    ``extras`` holds ``mean_image`` (64 floats) and ``examples`` (one test
    image per digit, see :func:`attnbook.widgets.live._pack_digits.chapter_extras`).
    """
    folder = resources.files(__package__)
    weights = folder.joinpath(WEIGHTS_FILE).read_bytes()
    arch = json.loads(folder.joinpath(ARCH_FILE).read_text(encoding="utf-8"))
    extras = {key: arch.pop(key) for key in ("mean_image", "examples")}
    arch.pop("source", None)
    return weights, arch, extras


def fill_image(fill: str, extras: dict) -> list[float]:
    """The 64 pixels that replace a hidden patch's: zeros, or the mean training image."""
    if fill not in FILLS:
        raise ValueError(f"fill must be one of {FILLS}, got {fill!r}")
    return [0.0] * SIDE * SIDE if fill == "zero" else list(extras["mean_image"])


def check_pixels(pixels: object) -> list[float]:
    """``pixels`` as a list of 64 floats in [0, 1] (an 8x8 digit, row by row)."""
    if isinstance(pixels, torch.Tensor):
        pixels = pixels.reshape(-1).tolist()
    if isinstance(pixels, (str, bytes)) or not hasattr(pixels, "__len__"):
        raise TypeError(f"pixels must be 64 numbers in [0, 1], got {type(pixels).__name__}")
    values = list(pixels)
    if len(values) != SIDE * SIDE:
        raise ValueError(f"pixels must hold 64 numbers (8x8, row by row), got {len(values)}")
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1:
            raise ValueError(f"pixels must be numbers in [0, 1], got {v!r}")
    return [float(v) for v in values]


def fixture_images(extras: dict) -> dict[str, list[float]]:
    """The images the exactness fixtures cover: blank, saturated, two test digits, a scribble."""
    g = torch.Generator().manual_seed(11)
    scribble = (torch.rand(SIDE * SIDE, generator=g) > 0.7).float() * 0.5
    examples = extras["examples"]
    return {
        "blank": [0.0] * SIDE * SIDE,
        "saturated": [1.0] * SIDE * SIDE,
        "test digit": [v / 16 for v in examples[3]["ink"]],
        "test digit 8": [v / 16 for v in examples[8]["ink"]],
        "scribble": scribble.tolist(),
    }


@torch.no_grad()
def run(weights: bytes, arch: dict, pixels: list[float], fill: list[float]) -> dict:
    """PyTorch on the packed (float16-rounded) weights: what the page computes.

    Returns ``logits`` (10), ``probs``, ``predicted``, ``attention`` (per
    block, (heads, 17, 17)), ``raw`` (:func:`attnbook.explain.cls_attention`
    of the last block), ``rollout`` (row 0 of :func:`attnbook.explain.attention_rollout`
    over the patches) and ``occlusion`` (:func:`attnbook.explain.occlusion_scores`
    of the predicted class with ``fill``), each over the 16 patches.
    """
    model = unpack_vit(weights, arch)
    return explain_image(model, pixels, fill)


@torch.no_grad()
def explain_image(model: TinyViT, pixels: list[float], fill: list[float]) -> dict:
    """:func:`run` for a model already built."""
    image = torch.tensor(check_pixels(pixels), dtype=torch.float32).reshape(1, 1, SIDE, SIDE)
    filler = torch.tensor(fill, dtype=torch.float32).reshape(1, SIDE, SIDE)
    model.eval()
    logits = model(image)[0]
    weights = [w.detach() for w in model.attention_weights]
    probs = torch.softmax(logits, -1)
    predicted = int(probs.argmax())
    label = torch.tensor([predicted])
    return {
        "logits": logits,
        "probs": probs,
        "predicted": predicted,
        "attention": [w[0] for w in weights],
        "raw": cls_attention(weights[-1])[0],
        "rollout": attention_rollout(weights)[0, 0, 1:],
        "occlusion": occlusion_scores(model, image, label, model.patch_size, fill=filler)[0],
    }


def _round(x: float) -> float:
    return round(float(x), 2) + 0.0  # no "-0"


def describe(out: dict, fill: str) -> str:
    """The sentence the page announces (the status line of digits.js)."""
    p, d = out["probs"], out["predicted"]
    raw, rollout, occ = out["raw"], out["rollout"], out["occlusion"]
    r, k = int(raw.argmax()), int(rollout.argmax())
    j = int(occ.abs().argmax())
    text = (
        f"The model reads a {d}, with probability {_round(p[d]):g}. Raw attention puts most "
        f"weight ({_round(raw[r]):g}) on patch {r}; rollout on patch {k}. "
    )
    if float(occ.abs().max()) < 0.005:
        return text + (
            f"Hiding any one patch (fill: {FILL_WORDS[fill]}) changes the probability of {d} "
            "by less than 0.005."
        )
    direction = "drops" if float(occ[j]) >= 0 else "rises"
    return text + (
        f"Hiding patch {j} (fill: {FILL_WORDS[fill]}) changes the probability of {d} most: it "
        f"{direction} by {_round(abs(float(occ[j]))):g}."
    )


def picture(pixels: list[float], out: dict, fill: str) -> bytes:
    """PNG of the digit, its class probabilities and the three maps."""
    fig = Figure(figsize=(10, 2.4), dpi=64, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, 5)
    image = torch.tensor(pixels).reshape(SIDE, SIDE).numpy()
    axes[0].imshow(image, cmap="gray_r", vmin=0, vmax=1)
    axes[0].set_title("the digit", fontsize="medium")
    axes[1].barh(range(10), out["probs"].numpy(), color="tab:blue")
    axes[1].set_yticks(range(10))
    axes[1].invert_yaxis()
    axes[1].set_xlim(0, 1)
    axes[1].set_title(f"reads a {out['predicted']}", fontsize="medium")
    maps = (
        ("raw [CLS] attention", out["raw"], "Blues"),
        ("rollout", out["rollout"], "Blues"),
        (f"occlusion, {fill} fill", out["occlusion"], "RdBu_r"),
    )
    for ax, (title, scores, cmap) in zip(axes[2:], maps, strict=True):
        cols = round(scores.numel() ** 0.5)  # patches per side (SIDE / patch size)
        grid = scores.reshape(cols, cols)
        grid = grid.repeat_interleave(SIDE // cols, 0).repeat_interleave(SIDE // cols, 1).numpy()
        ax.imshow(image, cmap="gray_r", vmin=0, vmax=1)
        top = float(scores.abs().max()) or 1.0
        low = -top if cmap == "RdBu_r" else 0
        ax.imshow(grid, cmap=cmap, vmin=low, vmax=top, alpha=0.6)
        ax.set_title(title, fontsize="medium")
    for ax in (axes[0], *axes[2:]):
        ax.set_xticks([])
        ax.set_yticks([])
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


class DigitsLive(LiveDisplay, anywidget.AnyWidget):
    """The live explorer of chapter 15 (see the module docstring).

    Traitlets (synced with the page): ``weights`` (float16 bytes), ``arch``
    (sizes and tensor layout), ``mean_image`` (64 floats, the mean-image
    fill), ``examples`` (the test digits to start from), ``pixels`` (the 64
    pixels drawn, row by row, in [0, 1]) and ``fill`` (``"zero"`` or ``"mean
    image"``). :meth:`set_model` hands it another model.
    """

    _module = "digits"
    _esm = module_source(_module)
    _page_state = ("weights", "arch", "mean_image", "examples", "pixels", "fill")
    weights = traitlets.Bytes(b"").tag(sync=True)
    arch = traitlets.Dict().tag(sync=True)
    mean_image = traitlets.List().tag(sync=True)
    examples = traitlets.List().tag(sync=True)
    pixels = traitlets.List().tag(sync=True)
    fill = traitlets.Unicode("zero").tag(sync=True)

    def __init__(self, model: TinyViT | None = None, pixels=None, fill: str = "zero"):
        super().__init__()
        shipped, arch, extras = load_chapter_weights()
        fill_image(fill, extras)  # checks the name
        if model is None:
            self.weights, self.arch = shipped, arch
        else:
            self.weights, self.arch = pack_vit(model)
        self.mean_image, self.examples = extras["mean_image"], extras["examples"]
        self.pixels = (
            [v / 16 for v in extras["examples"][DEFAULT_EXAMPLE]["ink"]]
            if pixels is None
            else check_pixels(pixels)
        )
        self.fill = fill

    def set_model(self, model: TinyViT) -> None:
        """Show ``model`` (e.g. one the reader trained)."""
        weights, arch = pack_vit(model)
        self.arch = arch
        self.weights = weights

    # -- what the page computes, in PyTorch -----------------------------------
    def forward(self) -> dict:
        extras = {"mean_image": self.mean_image}
        return run(self.weights, self.arch, self.pixels, fill_image(self.fill, extras))

    def alt_text(self) -> str:
        return describe(self.forward(), self.fill)

    def summary(self) -> str:
        """The stored picture's description (its alt text on the website)."""
        text = "An 8 by 8 digit and how the chapter's ViT reads it. "
        if not any(self.pixels):
            text += "The grid is blank, so there is no digit to explain. "
        return text + self.alt_text()

    def png(self) -> bytes:
        return picture(self.pixels, self.forward(), self.fill)

    # -- display (LiveDisplay; a blank grid has a picture too) -----------------

    def __repr__(self) -> str:
        a = self.arch
        inked = sum(v > 0 for v in self.pixels)
        return (
            f"DigitsLive(blocks={a['num_layers']}, heads={a['num_heads']}, width="
            f"{a['num_hiddens']}, fill={self.fill!r}, {inked} of 64 pixels inked)"
        )


# The test digit the explorer starts from (its index in ``examples``: the digit).
DEFAULT_EXAMPLE = 7


def digits_live(model: TinyViT | None = None, pixels=None, fill: str = "zero") -> DigitsLive:
    """Chapter 15's live explorer over ``model`` (default: the chapter's seed 0, as shipped).

    Args:
        model: an :class:`attnbook.vit.TinyViT` (8x8 one-channel images).
        pixels: the 64 pixels to start from, row by row, in [0, 1] (a list or
            a tensor); default: the first test image of a 7.
        fill: the occlusion fill, ``"zero"`` (blank paper, the chapter's frame
            explorer) or ``"mean image"`` (the mean training image).
    """
    if model is not None and not isinstance(model, TinyViT):
        raise TypeError(f"model must be an attnbook.vit.TinyViT, got {type(model).__name__}")
    if model is not None and (model.image_size, model.channels) != (SIDE, 1):
        raise ValueError(
            f"model must read 8x8 one-channel images, got {model.image_size}x{model.image_size} "
            f"with {model.channels} channels"
        )
    return DigitsLive(model, pixels, fill)
