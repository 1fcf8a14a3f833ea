"""`make bench`: explorer redraw speed, frame economy and page weight, against budgets.

For each explorer it measures, side by side in one run:
  * live: the median time for the persistent figure to draw a stop's frame
    as PNG (``explorer.frame``, blitting). The live widget draws every state
    this way once, when it is built; a control change then draws nothing (the
    key-press latency in JupyterLab is the second part, tools/bench_jupyter.py);
  * naive: the median time to draw the same figure content the way
    ``interact`` + ``plt.show()`` does it (a new figure per event, full render);
and prints their ratio (budget: live at least 10x faster; goal 15x). It prints
the static fragment's bytes per stop now (base frame once, then only the
changed pixels of each stop) beside "before" (one full base64 PNG per stop, the
encoding the fragments used until the frame economy), and the fragment's size
(budget: 1 MiB). For each built page with an explorer it prints the page's
weight (HTML with its frames, plus its figures; budget: 1 MiB) and the time a
control's event takes to swap the picture in headless Chromium: median,
95th percentile and largest over every stop of every control, after MathJax has
typeset the page (budget: 95% within one animation frame, 16.7 ms). For each
page with a live explorer (tools/bench_live.py) it prints the page weight, the
time to the first result and the median and worst redraw per keystroke.
"""

from __future__ import annotations

import base64
import statistics
import sys
import time
from pathlib import Path

from attnbook import lm, widgets
from attnbook.training import RecallAttention, train_recall
from attnbook.widgets._core import encode_png

from . import bench_live
from .browser import NoBrowserError, find_chromium, launch
from .site import SITE, page_weight, serve

RATIO_BUDGET = 10.0
RATIO_GOAL = 15.0
SIZE_BUDGET = 1024 * 1024
FRAME_BUDGET_MS = 1000 / 60
ROUNDS = 3


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def training_steps():
    """The chapter's explorer: a recall model's snapshots (about a second of training)."""
    log = train_recall(
        RecallAttention(16), steps=300, batch=32, n=8, lr=0.5, record_at=list(range(0, 301, 25))
    )
    return widgets.training_steps_explorer(log)


def induction_steps():
    """Chapter 11's explorer: snapshots of the two-layer attention-only model (250 steps)."""
    from attnbook.induction import AttentionOnlyTransformer, train_induction

    log = train_induction(
        AttentionOnlyTransformer(seed=0), steps=250, record_every=10, copy_only=True
    )
    return widgets.induction_steps_explorer(log)


def alignment():
    """Chapter 13's explorer: the date model's training run (400 steps, about 8 s)."""
    from attnbook import seq2seq

    probe = seq2seq.figure_probe()
    log = seq2seq.train_dates(0, True, 400, record=seq2seq.DATE_RECORD, probe=probe)[1]
    steps = [0, 25, 50, 75, 100, 125, 150, 200, 300, 400]
    return widgets.alignment_explorer(log, steps=steps, value=400)


def decoding():
    """Chapter 10's explorer: the shipped model reading a short text."""
    model, tokenizer = lm.load_checkpoint()
    return widgets.decoding_explorer(model, tokenizer, DECODING_TEXT, layer=1)


DECODING_TEXT = "The query looks at the keys."


def vit_maps():
    """Chapter 15's explorer: a ViT briefly trained on the digits (as many stops as the chapter's)."""
    from attnbook.digits import load_digits_split
    from attnbook.vit import build_vit, train_vit

    data = load_digits_split()
    model = build_vit(0)
    train_vit(model, data.X_train, data.y_train, epochs=5)
    return widgets.vit_maps_explorer(model, data.X_test, data.y_test)


def kv_cache_speedups(lengths=(32, 64, 127), rounds=5) -> dict[int, float]:
    """Time per new token at step t, recomputing / with the cache (shipped model).

    Both times are medians over ``rounds`` of one decoding step at position t:
    the uncached step runs all t + 1 tokens, the cached one token against the
    stored keys and values of the other t.
    """
    import torch

    model, _ = lm.load_checkpoint()
    ratios = {}
    with torch.no_grad():
        for t in lengths:
            ids = torch.zeros(1, t + 1, dtype=torch.long)
            full, cached = [], []
            for _ in range(rounds):
                start = time.perf_counter()
                model(ids)
                full.append(time.perf_counter() - start)
                cache = lm.KVCache()
                model(ids[:, :t], cache)
                start = time.perf_counter()
                model(ids[:, t:], cache)
                cached.append(time.perf_counter() - start)
            ratios[t] = statistics.median(full) / statistics.median(cached)
    return ratios


EXPLORERS = {
    "query position": widgets.query_position_explorer,
    "kernel x width": lambda: widgets.kernel_width_explorer(kernels="all"),
    "kernel width": widgets.kernel_width_explorer,
    "valid length": widgets.valid_length_explorer,
    "dimension d": widgets.dimension_explorer,
    "offset": widgets.offset_explorer,
    "training steps": training_steps,
    "induction steps": induction_steps,
    "tiles": widgets.tiles_explorer,
    "heads h": widgets.heads_explorer,
    "norm placement": widgets.norm_placement_explorer,
    "decoding": decoding,
    "alignment": alignment,
    "rope dial": widgets.rope_dial_explorer,
    "vit maps": vit_maps,
}
# Which built page holds which explorer (the page's only one).
PAGES = {
    "queries-keys-values": "query position",
    "attention-pooling": "kernel x width",
    "masked-softmax": "valid length",
    "scoring-functions": "dimension d",
    "self-attention-positional-encoding": "offset",
    "attention-learns": "training steps",
    "induction-heads": "induction steps",
    "attention-at-scale": "tiles",
    "multi-head-attention": "heads h",
    "transformer-block": "norm placement",
    "causal-language-model": "decoding",
    "cross-attention": "alignment",
    "positions": "rope dial",
    "vision-transformer": "vit maps",
}


def redraw_times(explorer) -> tuple[list[float], list[float]]:
    """Seconds per redraw, live and naive, interleaved stop by stop.

    live: the persistent figure drawing the stop's frame (``explorer.frame``,
    blitting), which is what building the live widget costs per state;
    naive: a new figure and a full render of the same picture. Taking one of
    each in turn keeps both under the same machine load. With a second
    control, the slider sweeps its stops once per menu option.
    """
    live, naive = [], []
    others = [None] if len(explorer.controls) == 1 else explorer._controls[1].stops
    for _ in range(ROUNDS):
        for other in others:
            for stop in explorer.stops:
                start = time.perf_counter()
                explorer.frame(stop, other)
                live.append(time.perf_counter() - start)
                start = time.perf_counter()
                explorer.naive_frame(stop, other)
                naive.append(time.perf_counter() - start)
    return live, naive


def full_frame_bytes(explorer) -> int:
    """What the frames weighed before the frame economy: a base64 PNG per stop, as then."""
    return sum(
        len(base64.b64encode(encode_png(explorer._renderer.rgb(state), compress_level=6)))
        for state in explorer.states
    )


def browser_swap_ms(page_path: Path) -> tuple[float, float, float]:
    """Median, 95th percentile and largest time from a control's event to the new
    picture laid out.

    Every control of the page's explorers is swept across its range. Under one
    animation frame (16.7 ms) means the swap lands in the next frame.
    """
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright, serve(SITE) as base:
        browser = launch(playwright)
        page = browser.new_page()
        page.route(
            "**/*",
            lambda route: (
                route.continue_()
                if route.request.url.startswith((base, "data:"))
                else route.abort()
            ),
        )
        page.goto(f"{base}/{page_path.relative_to(SITE).as_posix()}", wait_until="load")
        # Let MathJax finish typesetting first: its layout work is not the swap's.
        page.wait_for_function("window.MathJax && MathJax.startup && MathJax.startup.promise")
        page.evaluate("MathJax.startup.promise")
        times = page.evaluate(
            """() => new Promise(resolve => {
                const steps = [];
                for (const root of document.querySelectorAll('.attnbook-explorer')) {
                    for (const control of root.querySelectorAll('input[type=range],select')) {
                        const n = control.tagName === 'SELECT' ? control.options.length
                                                              : Number(control.max) + 1;
                        for (let r = 0; r < 3; r++)
                            for (let i = 0; i < n; i++) steps.push([root, control, i]);
                    }
                }
                const times = [];
                let s = 0;
                function step() {
                    const [root, control, i] = steps[s];
                    control.value = String(i);
                    const start = performance.now();
                    control.dispatchEvent(new Event('input'));
                    // Force style and layout so the swap is really done.
                    root.querySelector('.attnbook-view').getBoundingClientRect();
                    for (const img of root.querySelectorAll('.attnbook-view img:not([hidden])'))
                        img.getBoundingClientRect();
                    times.push(performance.now() - start);
                    requestAnimationFrame(() => { if (++s < steps.length) step(); else resolve(times); });
                }
                step();
            })"""
        )
        browser.close()
    times = sorted(times)
    return statistics.median(times), times[int(0.95 * (len(times) - 1))], times[-1]


def tiled_against_sdpa(sizes=(256, 512, 1024), block_size=64) -> None:
    """Time ``flash.tiled_attention`` against PyTorch's fused SDPA on the CPU, as ratios.

    No budget: the tiled loop is pure PyTorch, so on a CPU it is expected to be
    slower than the fused kernel (the chapter explains why); the row shows how
    much. Only CPU is timed (no GPU here).
    """
    import torch
    import torch.nn.functional as F

    from attnbook import flash

    print("\ntiled_attention against scaled_dot_product_attention (CPU, one head, d = 64)")
    print(f"{'n':>6}{'block':>7}{'tiled / SDPA':>14}{'tiled / naive':>15}")
    g = torch.Generator().manual_seed(0)
    for n in sizes:
        q, k, v = (torch.randn(1, n, 64, generator=g) for _ in range(3))
        timings = {}
        for name, fn, kw in (
            ("sdpa", F.scaled_dot_product_attention, {}),
            ("naive", flash.naive_attention, {}),
            ("tiled", flash.tiled_attention, {"block_size": block_size}),
        ):
            fn(q, k, v, **kw)  # warm up
            samples = []
            for _ in range(ROUNDS):
                start = time.perf_counter()
                fn(q, k, v, **kw)
                samples.append(time.perf_counter() - start)
            timings[name] = statistics.median(samples)
        print(
            f"{n:>6}{block_size:>7}{timings['tiled'] / timings['sdpa']:>13.1f}x"
            f"{timings['tiled'] / timings['naive']:>14.1f}x"
        )


def main() -> int:
    ok = True
    rows = {}
    for name, make in EXPLORERS.items():
        explorer = make()
        explorer.frame(explorer.stops[0])  # warm caches (fonts, text layout)
        live_samples, naive_samples = redraw_times(explorer)
        live, naive = median_ms(live_samples), median_ms(naive_samples)
        ratio = naive / live
        size = len(explorer.to_html().encode())
        states = len(explorer.states)
        before = full_frame_bytes(explorer)
        ok &= ratio >= RATIO_BUDGET and size <= SIZE_BUDGET
        rows[name] = (states, live, naive, ratio, size, before)
    print("Live redraw (median over every stop; same figure content) and static fragment")
    print(
        f"{'explorer':<16}{'stops':>6}{'live ms':>9}{'naive ms':>10}{'ratio':>8}"
        f"{'B/stop before':>15}{'B/stop now':>12}{'fragment KiB':>14}"
    )
    for name, (states, live, naive, ratio, size, before) in rows.items():
        print(
            f"{name:<16}{states:>6}{live:>9.1f}{naive:>10.1f}{ratio:>7.1f}x"
            f"{before / states:>15.0f}{size / states:>12.0f}{size / 1024:>14.0f}"
        )
    print(
        f"budgets: ratio >= {RATIO_BUDGET:g}x (goal {RATIO_GOAL:g}x), "
        f"fragment <= {SIZE_BUDGET // 1024} KiB. 'before': one full PNG per stop, base64"
    )

    speedups = kv_cache_speedups()
    print("\nKV cache, chapter 10's model: time per new token at step t, recomputed / cached")
    print("  " + ", ".join(f"t = {t}: {r:.1f}x" for t, r in speedups.items()))

    print("\nBuilt pages with an explorer (HTML with frames + figures; browser swap)")
    for page, name in PAGES.items():
        path = SITE / "book" / f"{page}.html"
        if not path.exists():
            print(f"{page}: not built (run `make book`)")
            ok = False
            continue
        weight = page_weight(path)
        try:
            find_chromium()
        except NoBrowserError as error:
            print(f"no browser swap timing: {error}")
            swap = p95 = worst = float("nan")
        else:
            swap, p95, worst = browser_swap_ms(path)
        ok &= weight <= SIZE_BUDGET and p95 <= FRAME_BUDGET_MS
        print(
            f"{page:<20} {name:<15} {weight / 1024:>6.0f} KiB   "
            f"swap median {swap:5.2f} ms, 95% {p95:5.2f} ms, max {worst:5.2f} ms"
        )
    print(f"budgets: page <= {SIZE_BUDGET // 1024} KiB, 95% of swaps <= {FRAME_BUDGET_MS:.1f} ms")

    # The live explorers (tools/bench_live.py): the model runs in the page.
    print("\nLive explorers (page weight; first result after the page is interactive; redraw)")
    for name, explorer in bench_live.EXPLORERS.items():
        path = SITE / "book" / f"{explorer.page}.html"
        if not path.exists():
            print(f"{explorer.page}: not built (run `make book`)")
            ok = False
            continue
        with serve(SITE) as base:
            ok &= bench_live.report(name, path, base, SITE)
    print(
        f"budgets: page <= {SIZE_BUDGET // 1024} KiB, first result <= "
        f"{bench_live.FIRST_BUDGET_MS:g} ms, worst redraw <= {FRAME_BUDGET_MS:.1f} ms"
    )
    tiled_against_sdpa()
    print("\nall budgets met" if ok else "\nBUDGET MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
