"""Heads explorer: the same projections cut into 1, 2, 4, 8 or 16 heads.

Chapter 6 builds a multi-head layer by hand on the token sequence ``abcadbac``:
every token is 16 features, a one-hot position code (features 0-7) and a
one-hot symbol code (features 8-11); the query projection keeps both codes
(times a strength), the key projection shifts the position code by one place
and keeps the symbol code. With 2 heads, head 0 looks one token back and head
1 finds the tokens with the same symbol. The slider keeps those four matrices
fixed and changes only the number of heads h, so only two things change: which
features share one softmax (head j owns features j*p .. (j+1)*p - 1 of each
projection, p = 16 / h) and the scale 1/sqrt(p) of the scores. One panel per
head shows its (queries, keys) weights; only the heads that exist are drawn,
so with 2 heads the figure shows two panels, not two among sixteen.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
from matplotlib import colormaps
from matplotlib.cm import ScalarMappable
from matplotlib.colors import Normalize
from matplotlib.figure import Figure

from ..multihead import MultiHeadAttention
from ._core import Explorer, Renderer, range_control, text_with_tail

__all__ = [
    "TEXT",
    "WIDTH",
    "DEFAULT_HEADS",
    "MATCH_SCORE",
    "hand_made_tokens",
    "hand_made_layer",
    "HeadsExplorer",
    "heads_explorer",
]

TEXT = "abcadbac"
WIDTH = 16  # features per token: 8 position, 4 symbol, 4 unused
DEFAULT_HEADS = (1, 2, 4, 8, 16)
MATCH_SCORE = 6.0  # a match scores this much with 2 heads (p = 8)


def hand_made_tokens() -> torch.Tensor:
    """The chapter's (1, 8, 16) input: position code in features 0-7, symbol code in 8-11."""
    tokens = torch.zeros(1, len(TEXT), WIDTH)  # (batch, tokens, D)
    for i, ch in enumerate(TEXT):
        tokens[0, i, i] = 1.0
        tokens[0, i, 8 + "abcd".index(ch)] = 1.0
    return tokens


def hand_made_layer(num_heads: int) -> MultiHeadAttention:
    """The chapter's hand-set projections, cut into ``num_heads`` heads."""
    layer = MultiHeadAttention(WIDTH, num_heads)
    strength = MATCH_SCORE * math.sqrt(8)
    with torch.no_grad():
        for W in (layer.W_q, layer.W_k, layer.W_v, layer.W_o):
            W.weight.zero_()
        layer.W_q.weight[:8, :8] = strength * torch.eye(8)  # position code
        layer.W_k.weight[:8, :8] = torch.diag(torch.ones(7), -1)  # position j -> j + 1
        layer.W_q.weight[8:, 8:] = strength * torch.eye(8)  # symbol code
        layer.W_k.weight[8:, 8:] = torch.eye(8)
        layer.W_v.weight.copy_(torch.eye(WIDTH))
        layer.W_o.weight.copy_(torch.eye(WIDTH))
    return layer


def _ranges(items: list[int]) -> str:
    """[1, 2, 3, 5] -> '1-3, 5'."""
    parts, start = [], None
    for a, b in zip(items, items[1:] + [None]):
        start = a if start is None else start
        if b != a + 1:
            parts.append(str(a) if a == start else f"{start}-{a}")
            start = None
    return ", ".join(parts)


class _HeadsRenderer(Renderer):
    """Up to 16 panels in two rows; panel j shows head j's weights when j < h.

    Every panel is a block of one RGBA picture (colours looked up once, in
    ``__init__``), so a redraw blits one image and one short title. The head
    numbers and the row labels are static text; the picture is transparent
    over the numbers and labels in use and opaque white (the figure's colour)
    over the others, so only the heads that exist show: a panel, its frame,
    its number, and the labels of its row.
    """

    figsize = (8.6, 3.15)
    per_row = 8
    margin = 5  # cells left of the panels, for the row labels "head" and "queries"
    unused = (1.0, 1.0, 1.0)  # an unused slot is painted over in the figure's white

    def __init__(self, heads: Sequence[int]) -> None:
        self.heads = list(heads)
        self.n = len(TEXT)
        self.slots = max(self.heads)
        self.rows = -(-self.slots // self.per_row)
        self.cmap = colormaps["Reds"]
        tokens = hand_made_tokens()
        self.weights = {}  # h -> (h, queries, keys) numpy array
        self.pictures = {}  # h -> (rows*(n+3), per_row*(n+1) - 1, 4) RGBA picture
        for h in self.heads:
            layer = hand_made_layer(h)
            layer(tokens, tokens, tokens)
            self.weights[h] = layer.attention_weights[0].detach().numpy()
            self.pictures[h] = self._picture(self.weights[h])
        self._big = {h: self._pixels(p, h) for h, p in self.pictures.items()}  # drawn as is
        super().__init__(self.heads[0])

    def _origin(self, slot: int) -> tuple[int, int]:
        """Top-left cell (row, column) of panel ``slot`` in the picture.

        Each row of panels has a 2-cell strip for the head numbers above it and
        a 2-cell gap below it (the first row's "keys" label sits there); the
        first ``margin`` columns hold the row labels.
        """
        return (
            (slot // self.per_row) * (self.n + 4) + 2,
            self.margin + (slot % self.per_row) * (self.n + 1),
        )

    def _picture(self, weights: np.ndarray) -> np.ndarray:
        n = self.n
        shape = (self.rows * (n + 4), self.margin + self.per_row * (n + 1) - 1, 4)
        picture = np.zeros(shape)  # clear
        white = (*self.unused, 1.0)
        for slot in range(self.slots):
            top, left = self._origin(slot)
            used = slot < len(weights)
            block = picture[top : top + n, left : left + n]
            block[:] = self.cmap(weights[slot]) if used else white
            picture[top - 2 : top, left : left + n] = 0.0 if used else white  # its number
            if slot % self.per_row == 0 and not used:  # a whole row unused: hide its labels
                picture[top - 2 : top + n, : self.margin] = white
        return picture

    cell = 8  # pixels per weight: the picture is drawn unresampled (figimage)
    origin = (4, 16)  # pixel offset of the picture's lower-left corner

    def _build(self, fig: Figure, h: int) -> list:
        picture = self.pictures[h]
        rows, cols = picture.shape[:2]
        c, (x0, y0) = self.cell, self.origin
        image = fig.figimage(self._pixels(picture, h), xo=x0, yo=y0, origin="upper")
        if fig is getattr(self, "fig", None):
            # The live figure leaves the picture out of its background and pastes
            # the stored pixels in ``rgb`` (matplotlib would resample them).
            image.set_animated(True)
        width, height = fig.get_figwidth() * fig.dpi, fig.get_figheight() * fig.dpi

        def at(col: float, row: float) -> tuple[float, float]:  # picture cell -> figure fraction
            return (x0 + col * c) / width, (y0 + (rows - row) * c) / height

        for slot in range(self.slots):  # static: the picture hides unused numbers
            top, left = self._origin(slot)
            fig.text(
                *at(left + self.n / 2, top - 1),
                str(slot),
                ha="center",
                va="center",
                fontsize="small",
                zorder=0,
            )
        m = self.margin
        for row in range(self.rows):  # static: the picture hides the labels of unused rows
            top = row * (self.n + 4) + 2
            for text, col, at_row, size, angle in (
                ("head", m - 0.4, top - 1, "small", 0),
                ("queries", m - 0.6, top + self.n / 2, "x-small", 90),
            ):
                fig.text(
                    *at(col, at_row),
                    text,
                    ha="right",
                    va="center",
                    fontsize=size,
                    rotation=angle,
                    zorder=0,
                )
        fig.text(
            *at(m + self.n / 2, 2 + self.n + 0.2), "keys", ha="center", va="top", fontsize="x-small"
        )
        cax = fig.add_axes(
            ((x0 + cols * c + 24) / width, y0 / height, 0.012, (rows - 3) * c / height)
        )
        bar = fig.colorbar(ScalarMappable(Normalize(0.0, 1.0), self.cmap), cax=cax)
        bar.set_label("weight", fontsize="small")
        tails = [self._tail(s) for s in self.heads]
        title = text_with_tail(
            fig,
            0.5,
            0.91,
            f"tokens {TEXT}, the same matrices cut into",
            tails[0],
            tails,
            fontsize="large",
        )
        title.set_text(self._tail(h))
        return [title]

    def _pixels(self, picture: np.ndarray, used: int) -> np.ndarray:
        """The picture blown up to ``cell`` x ``cell`` pixels per entry, as uint8 RGBA."""
        big = np.repeat(np.repeat(picture, self.cell, axis=0), self.cell, axis=1)
        c, n = self.cell, self.n
        for slot in range(used):  # a thin grey frame around every panel in use
            top, left = self._origin(slot)
            block = big[top * c : (top + n) * c, left * c : (left + n) * c]
            for edge in (block[0], block[-1], block[:, 0], block[:, -1]):
                edge[:] = (0.6, 0.6, 0.6, 1.0)
        return np.round(big * 255).astype(np.uint8)

    @staticmethod
    def _tail(h: int) -> str:
        return f"{h} head{'s' if h > 1 else ''} of width {WIDTH // h}"

    def _update(self, h: int) -> None:
        (title,) = self._dynamic
        title.set_text(self._tail(h))

    def rgb(self, h: int) -> np.ndarray:
        """The frame: background and title blitted, then the stored pixels pasted in.

        The same pixels a ``figimage`` at ``origin`` draws (the naive redraw
        draws them that way).
        """
        frame = super().rgb(h)
        big = self._big[h]
        height, width = big.shape[:2]
        top = frame.shape[0] - self.origin[1] - height
        region = frame[top : top + height, self.origin[0] : self.origin[0] + width]
        opaque = big[..., 3:] > 0  # the picture is either opaque or clear
        region[:] = np.where(opaque, big[..., :3], region)
        return frame

    def roles(self, h: int) -> dict[str, list]:
        """For each head of ``h``, the queries it sends mostly back one token or to its symbol.

        Returns ``{"previous": [...], "symbol": [...], "even": [...], "blend": [...]}``,
        each a list (one entry per head) of the queries (rows) whose weight goes
        mostly (over 0.5) to key i - 1, mostly to keys with the query's symbol,
        evenly to every key, or a blend (some weight on key i - 1, the rest
        elsewhere).
        """
        weights = self.weights[h]
        same = np.array([[a == b for b in TEXT] for a in TEXT])  # (queries, keys)
        out: dict[str, list] = {"previous": [], "symbol": [], "even": [], "blend": []}
        for w in weights:  # (queries, keys)
            rows = {key: [] for key in out}
            for i, row in enumerate(w):
                back = row[i - 1] if i > 0 else 0.0
                if np.ptp(row) < 1e-6:
                    rows["even"].append(i)
                elif back > 0.5:
                    rows["previous"].append(i)
                elif row[same[i]].sum() > 0.5 and back < 0.1:
                    rows["symbol"].append(i)
                else:
                    rows["blend"].append(i)
            for key in out:
                out[key].append(rows[key])
        return out

    def alt_text(self, h: int) -> str:
        roles = self.roles(h)
        p = WIDTH // h

        def heads_doing(kind: str) -> str:
            doing = [
                f"head {j} for quer{'y' if len(q) == 1 else 'ies'} {_ranges(q)}"
                for j, q in enumerate(roles[kind])
                if q
            ]
            return "; ".join(doing) if doing else "no head"

        idle = [j for j, q in enumerate(roles["even"]) if len(q) == self.n]
        blends = sum(len(q) for q in roles["blend"])
        return (
            f"{h} panel{'s' if h > 1 else ''} of 8 by 8 attention weights over the tokens "
            f"{TEXT}, one per head of width {p}, all cut from the same four matrices. "
            f"Mostly one token back: {heads_doing('previous')}. "
            f"Mostly the tokens with the query's symbol: {heads_doing('symbol')}. "
            f"{len(idle)} head{'' if len(idle) == 1 else 's'} spread every row evenly. "
            f"{blends} of the {h * self.n} rows blend both kinds of key."
        )


class HeadsExplorer(Explorer):
    """Explorer over the number of heads the chapter's hand-made projections are cut into."""


def heads_explorer(heads: Sequence[int] | None = None, value: int | None = None) -> HeadsExplorer:
    """A slider over the number of heads h of the chapter's hand-made layer (width 16).

    Args:
        heads: the numbers of heads the slider offers, increasing divisors of
            16 (default 1, 2, 4, 8, 16).
        value: the starting number of heads, one of ``heads`` (default 2).

    Returns:
        A :class:`HeadsExplorer`; display it to get the slider.
    """
    if heads is None:
        heads = DEFAULT_HEADS
    if isinstance(heads, (str, bytes)) or not isinstance(heads, Sequence):
        raise TypeError(f"heads must be a sequence of divisors of {WIDTH}, got {heads!r}")
    stops = list(heads)
    if len(stops) < 2 or any(
        isinstance(h, bool) or not isinstance(h, int) or h < 1 or WIDTH % h for h in stops
    ):
        raise ValueError(
            f"heads must list at least 2 divisors of {WIDTH} (1, 2, 4, 8, 16), got {heads!r}"
        )
    if any(b <= a for a, b in zip(stops, stops[1:])):
        raise ValueError(f"heads must be increasing, got {heads!r}")
    if value is None:
        value = 2 if 2 in stops else stops[0]
    elif value not in stops:
        raise ValueError(f"value must be one of heads {stops}, got {value!r}")
    renderer = _HeadsRenderer(stops)
    control = range_control("heads h:", stops, [str(h) for h in stops], int(value))
    return HeadsExplorer("heads", renderer, [control], lambda h: f"heads={h}, width={WIDTH // h}")
