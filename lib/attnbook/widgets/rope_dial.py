"""RoPE dial: shift a query and a key together, and watch what their score does.

Two controls: the offset o added to both positions (the query at m + o, the
key at n + o, so their distance m - n stays 3), and the position scheme.
Left: pair 0 of the query and the key that the scores see, as arrows in the
plane; under RoPE both turn by o radians and the angle between them stays.
Middle: the score of that query and key against the offset, with the
current offset marked: flat for RoPE, ALiBi and NoPE, wandering for
sinusoids added to the input and then projected. Right: the score against
the distance m - n for the scheme (RoPE's slow decay for q = k, ALiBi's
straight lines, chapter 7's sinusoid dot product, NoPE's nothing).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from matplotlib.figure import Figure

from ..alibi import alibi_slopes
from ..positional import sinusoidal_encoding
from ..rope import apply_rope
from ._core import Explorer, Renderer, menu_control, range_control, text_with_tail

__all__ = [
    "DEFAULT_SHIFTS",
    "DIAL_SCHEMES",
    "dial_scores",
    "RopeDialExplorer",
    "rope_dial_explorer",
]

DEFAULT_SHIFTS = tuple(range(0, 21, 2))
DIAL_SCHEMES = ("RoPE", "ALiBi", "sinusoidal", "NoPE")
_D = 8  # the head size of the dial's query and key
_M, _N = 5, 2  # their positions before the shift
_FAR = 64  # the right panel's largest distance
_WIDE = 64  # the head size behind the right panel's curves


def dial_scores(shifts: Sequence[int], seed: int = 3) -> dict:
    """Everything the dial draws, computed once, in float64.

    Returns {scheme: {"q": (shifts, 2), "k": (shifts, 2) pair-0 coordinates,
    "score": (shifts,) the score of the query at m + o with the key at n + o,
    "curves": list of (distances,) arrays, score against distance m - n}}.
    """
    g = torch.Generator().manual_seed(seed)
    x_q = torch.randn(_D, dtype=torch.float64, generator=g)
    x_k = torch.randn(_D, dtype=torch.float64, generator=g)
    W_q = torch.randn(_D, _D, dtype=torch.float64, generator=g) / _D**0.5
    W_k = torch.randn(_D, _D, dtype=torch.float64, generator=g) / _D**0.5
    q0, k0 = W_q @ x_q, W_k @ x_k  # projected content, no position
    top = max(shifts) + _M + 1
    P = sinusoidal_encoding(top, _D).double()  # (positions, d)
    distance = np.arange(_FAR + 1)
    slope = float(alibi_slopes(4, dtype=torch.float64)[0])
    out: dict = {}
    for scheme in DIAL_SCHEMES:
        qs, ks = [], []
        for o in shifts:
            m, n = _M + o, _N + o
            if scheme == "RoPE":
                q = apply_rope(q0[None], torch.tensor([m]))[0]
                k = apply_rope(k0[None], torch.tensor([n]))[0]
            elif scheme == "sinusoidal":
                q, k = W_q @ (x_q + P[m]), W_k @ (x_k + P[n])
            else:
                q, k = q0, k0
            qs.append(q)
            ks.append(k)
        score = torch.stack([q @ k for q, k in zip(qs, ks)]).numpy()
        if scheme == "ALiBi":
            score = score - slope * (_M - _N)
        if scheme == "RoPE":
            theta = 10000.0 ** (-np.arange(0, _WIDE, 2) / _WIDE)
            curves = [np.cos(distance[:, None] * theta[None, :]).mean(axis=1)]
        elif scheme == "ALiBi":
            curves = [-s * distance for s in alibi_slopes(4, dtype=torch.float64).tolist()]
        elif scheme == "sinusoidal":
            wide = sinusoidal_encoding(_FAR + 1, _WIDE).double().numpy()
            curves = [wide @ wide[0] / (_WIDE / 2)]
        else:
            curves = [np.zeros(_FAR + 1)]
        out[scheme] = {
            "q": torch.stack(qs)[:, :2].numpy(),
            "k": torch.stack(ks)[:, :2].numpy(),
            "score": score,
            "curves": curves,
            "slope": slope,
        }
    return out


_CURVE_NOTES = {
    "RoPE": "q = k, d = 64:\nscore / score at distance 0",
    "ALiBi": "bias -s_c (i - j), 4 heads",
    "sinusoidal": "p_i \u00b7 p_j / (d/2), d = 64",
    "NoPE": "nothing depends on i - j",
}


class _RopeDialRenderer(Renderer):
    """Pair 0 as arrows, the score against the shift, the score against the distance."""

    figsize = (8.4, 3.0)

    def __init__(self, shifts: Sequence[int], data: dict, first_state) -> None:
        self.shifts = list(shifts)
        self.data = data
        scores = np.concatenate([d["score"] for d in data.values()])
        pad = 0.15 * (scores.max() - scores.min() + 1e-9)
        self.score_limits = (scores.min() - pad, scores.max() + pad)
        radius = max(float(np.abs(np.concatenate([d["q"], d["k"]])).max()) for d in data.values())
        self.radius = 1.15 * radius
        super().__init__(first_state)

    def _build(self, fig: Figure, state) -> list:
        shift, scheme = state
        ax_a, ax_b, ax_c = fig.subplots(1, 3, gridspec_kw={"width_ratios": [0.8, 1.1, 1.1]})
        fig.subplots_adjust(left=0.03, right=0.98, bottom=0.17, top=0.78, wspace=0.35)
        data = self.data[scheme]
        i = self.shifts.index(shift)

        theta = np.linspace(0, 2 * np.pi, 100)
        ax_a.plot(
            self.radius * np.cos(theta) / 1.15,
            self.radius * np.sin(theta) / 1.15,
            color="0.9",
            linewidth=1,
        )
        (q_arrow,) = ax_a.plot(
            [0, data["q"][i, 0]],
            [0, data["q"][i, 1]],
            "-o",
            color="tab:blue",
            markevery=[1],
            linewidth=2,
            label="q",
        )
        (k_arrow,) = ax_a.plot(
            [0, data["k"][i, 0]],
            [0, data["k"][i, 1]],
            "-o",
            color="tab:orange",
            markevery=[1],
            linewidth=2,
            label="k",
        )
        ax_a.set_xlim(-self.radius, self.radius)
        ax_a.set_ylim(-self.radius, self.radius)
        ax_a.set_aspect("equal")
        ax_a.set_xticks([])
        ax_a.set_yticks([])
        ax_a.set_xlabel("feature 0")
        ax_a.set_ylabel("feature 1")
        ax_a.set_title("pair 0 of q and k", fontsize="medium")
        ax_a.legend(loc="lower left", fontsize="small", handlelength=1, frameon=False)

        (line,) = ax_b.plot(self.shifts, data["score"], "-", color="0.3", linewidth=1.5)
        (dot,) = ax_b.plot([shift], [data["score"][i]], "o", color="black", markersize=7)
        ax_b.set_xlim(-1, self.shifts[-1] + 1)
        ax_b.set_ylim(*self.score_limits)
        ax_b.set_xlabel(f"shift o (query at {_M} + o, key at {_N} + o)")
        ax_b.set_ylabel("score")
        ax_b.set_title("the same q and k, both shifted", fontsize="medium")

        distance = np.arange(_FAR + 1)
        curves = []
        colours = ("tab:purple", "tab:green", "tab:olive", "tab:gray")
        for j in range(4):
            y = data["curves"][j] if j < len(data["curves"]) else []
            x = distance if j < len(data["curves"]) else []
            (curve,) = ax_c.plot(x, y, color=colours[j], linewidth=1.5)
            curves.append(curve)
        ax_c.axvline(_M - _N, color="0.6", linestyle=":", linewidth=1)
        ax_c.axhline(0, color="0.85", linewidth=1)
        ax_c.set_xlim(0, _FAR)
        ax_c.set_ylim(-2.0, 1.1)
        ax_c.set_xlabel("distance i - j (dotted: 3)")
        ax_c.set_ylabel("score")
        note = ax_c.text(  # bottom right, below every scheme's curves
            0.97,
            0.04,
            _CURVE_NOTES[scheme],
            transform=ax_c.transAxes,
            ha="right",
            va="bottom",
            fontsize="small",
        )
        ax_c.set_title("score against distance", fontsize="medium")

        title = text_with_tail(
            fig,
            0.5,
            0.97,
            "shift both positions:",
            self._title(state),
            [self._title((o, s)) for o in self.shifts for s in DIAL_SCHEMES],
            fontsize="large",
            va="top",
        )
        return [q_arrow, k_arrow, line, dot, *curves, note, title]

    def _title(self, state) -> str:
        shift, scheme = state
        score = self.data[scheme]["score"][self.shifts.index(shift)]
        return f"{scheme}, o = {shift}, score {score:.2f}"

    def _update(self, state) -> None:
        shift, scheme = state
        data = self.data[scheme]
        i = self.shifts.index(shift)
        q_arrow, k_arrow, line, dot, *rest = self._dynamic
        curves, (note, title) = rest[:4], rest[4:]
        q_arrow.set_data([0, data["q"][i, 0]], [0, data["q"][i, 1]])
        k_arrow.set_data([0, data["k"][i, 0]], [0, data["k"][i, 1]])
        line.set_data(self.shifts, data["score"])
        dot.set_data([shift], [data["score"][i]])
        distance = np.arange(_FAR + 1)
        for j, curve in enumerate(curves):
            if j < len(data["curves"]):
                curve.set_data(distance, data["curves"][j])
            else:
                curve.set_data([], [])
        note.set_text(_CURVE_NOTES[scheme])
        title.set_text(self._title(state))

    def alt_text(self, state) -> str:
        shift, scheme = state
        data = self.data[scheme]
        i = self.shifts.index(shift)
        score = data["score"]
        angle = (
            float(
                np.degrees(
                    np.arctan2(data["q"][i, 1], data["q"][i, 0])
                    - np.arctan2(data["k"][i, 1], data["k"][i, 0])
                )
            )
            % 360
        )
        spread = float(score.max() - score.min())
        what = {
            "RoPE": "both arrows have turned by the shift in radians, so the angle between "
            "them stays",
            "ALiBi": "the arrows do not move: ALiBi leaves q and k alone and adds a bias "
            f"of -{data['slope']:.2f} times the distance 3 to the score; the angle between "
            "them is",
            "sinusoidal": "the sinusoids were added to the input before the projection, so the "
            "arrows move irregularly; the angle between them is now",
            "NoPE": "the arrows do not move: nothing in q or k says where they sit; the angle "
            "between them is",
        }[scheme]
        right = {
            "RoPE": "the average cosine over 32 frequency pairs, which decays from 1 as the "
            "distance grows, with ripples",
            "ALiBi": "four straight lines falling with slopes 1/4, 1/16, 1/64 and 1/256",
            "sinusoidal": "chapter 7's dot product of two encodings, falling from 1 with ripples",
            "NoPE": "a flat line at zero: the score carries no distance",
        }[scheme]
        return (
            f"{scheme}, shift {shift}: the query sits at position {_M + shift} and the key at "
            f"{_N + shift}. Left: {what} {angle:.0f} degrees. Middle: their score is "
            f"{score[i]:.2f}; over shifts 0 to {self.shifts[-1]} it varies by {spread:.2f}. "
            f"Right: score against distance for {scheme}: {right}."
        )


class RopeDialExplorer(Explorer):
    """Explorer over a shift of both positions and the position scheme."""


def rope_dial_explorer(
    shifts: Sequence[int] | None = None, scheme: str = "RoPE", value: int | None = None
) -> RopeDialExplorer:
    """A slider over the shift o of both positions, and a menu over the schemes.

    Args:
        shifts: the slider's stops, strictly increasing integers >= 0 (default
            0, 2, ..., 20, ``DEFAULT_SHIFTS``).
        scheme: the starting scheme, one of ``DIAL_SCHEMES``.
        value: the starting shift, one of ``shifts`` (default the first).

    Returns:
        A :class:`RopeDialExplorer`; display it to get the controls.
    """
    shifts = list(DEFAULT_SHIFTS if shifts is None else shifts)
    for i, o in enumerate(shifts):
        if isinstance(o, bool) or not isinstance(o, int) or o < 0:
            raise ValueError(f"shifts[{i}] must be an integer >= 0, got {o!r}")
    if len(shifts) < 2 or any(b <= a for a, b in zip(shifts, shifts[1:])):
        raise ValueError(f"shifts must hold at least 2 strictly increasing values, got {shifts!r}")
    if scheme not in DIAL_SCHEMES:
        raise ValueError(f"scheme must be one of {DIAL_SCHEMES}, got {scheme!r}")
    if value is None:
        value = shifts[0]
    elif value not in shifts:
        raise ValueError(f"value must be one of shifts {shifts}, got {value!r}")
    renderer = _RopeDialRenderer(shifts, dial_scores(shifts), (value, scheme))
    integer = shifts == list(range(shifts[0], shifts[-1] + 1))
    slider = range_control(
        "shift o:", shifts, [str(o) for o in shifts], int(value), integer=integer
    )
    menu = menu_control("scheme:", list(DIAL_SCHEMES), list(DIAL_SCHEMES), scheme)
    return RopeDialExplorer(
        "rope-dial", renderer, [slider, menu], lambda s: f"shift={s[0]}, scheme={s[1]!r}"
    )
