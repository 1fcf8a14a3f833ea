"""`make bench`: slider redraw speed and static page weight, against budgets.

For each explorer it measures, side by side in one run:
  * live: the median time from a slider change to new PNG bytes in
    ``explorer.image.value`` (persistent figure, blitting);
  * naive: the median time to draw the same figure content the way
    ``interact`` + ``plt.show()`` does it (a new figure per event, full render);
and prints their ratio (budget: live at least 8x faster). It also prints each
static fragment's size (budget: 1 MiB), each built interactive page's weight
(HTML with its frames, plus its figures; budget: 1 MiB), and the time the
built page takes to swap frames in headless Chromium (budget: one animation
frame, 16.7 ms).
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

from attnbook import widgets
from attnbook.training import RecallAttention, train_recall

from ._site import CHROMIUM, CHROMIUM_ARGS, SITE, serve
from .test_site import page_weight

RATIO_BUDGET = 8.0
SIZE_BUDGET = 1024 * 1024
FRAME_BUDGET_MS = 1000 / 60
ROUNDS = 3


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def live_redraw(explorer) -> list[float]:
    samples = []
    stops = explorer.stops
    for _ in range(ROUNDS):
        for stop in stops:
            start = time.perf_counter()
            explorer.slider.value = stop
            assert explorer.image.value  # the observer has set the new bytes
            samples.append(time.perf_counter() - start)
    return samples


def naive_redraw(explorer) -> list[float]:
    samples = []
    for stop in explorer.stops:
        start = time.perf_counter()
        explorer.naive_frame(stop)
        samples.append(time.perf_counter() - start)
    return samples


def browser_swap_ms(page_path: Path) -> float:
    """Median time from an input event to the new frame laid out (synchronous work).

    Under one animation frame (16.7 ms) means the swap lands in the next frame.
    """
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright, serve(SITE) as base:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.route(
            "**/*",
            lambda route: (
                route.continue_()
                if route.request.url.startswith((base, "data:"))
                else route.abort()
            ),
        )
        page.goto(f"{base}/{page_path.relative_to(SITE).as_posix()}")
        times = page.evaluate(
            """() => new Promise(resolve => {
                const input = document.querySelector('.attnbook-explorer input');
                const steps = Number(input.max) + 1, times = [];
                let i = 0;
                function step() {
                    input.value = String(i % steps);
                    const start = performance.now();
                    input.dispatchEvent(new Event('input'));
                    // Force style and layout so the swap is really done.
                    document.querySelector('.attnbook-explorer img:not([hidden])').getBoundingClientRect();
                    times.push(performance.now() - start);
                    requestAnimationFrame(() => { if (++i < 3 * steps) step(); else resolve(times); });
                }
                step();
            })"""
        )
        browser.close()
    return statistics.median(times)


def training_steps():
    """The chapter's explorer: a recall model's snapshots (about a second of training)."""
    log = train_recall(
        RecallAttention(16), steps=300, batch=32, n=8, lr=0.5, record_at=list(range(0, 301, 25))
    )
    return widgets.training_steps_explorer(log)


def main() -> int:
    ok = True
    rows = []
    for name, make in (
        ("kernel width", widgets.kernel_width_explorer),
        ("valid length", widgets.valid_length_explorer),
        ("training steps", training_steps),
    ):
        explorer = make()
        explorer.frame(explorer.stops[0])  # warm caches (fonts, text layout)
        naive = median_ms(naive_redraw(explorer))
        live = median_ms(live_redraw(explorer))
        ratio = naive / live
        size = len(explorer.to_html().encode())
        ok &= ratio >= RATIO_BUDGET and size <= SIZE_BUDGET
        rows.append((name, len(explorer.stops), live, naive, ratio, size))
    print("Slider redraw (median over every stop; same figure content)")
    print(
        f"{'explorer':<14}{'stops':>6}{'live ms':>10}{'naive ms':>10}{'ratio':>8}{'fragment KiB':>14}"
    )
    for name, stops, live, naive, ratio, size in rows:
        print(f"{name:<14}{stops:>6}{live:>10.1f}{naive:>10.1f}{ratio:>7.1f}x{size / 1024:>14.0f}")
    print(f"budgets: ratio >= {RATIO_BUDGET:g}x, fragment <= {SIZE_BUDGET // 1024} KiB")

    print("\nBuilt interactive pages (HTML with frames + figures; browser frame swap)")
    for page in ("attention-pooling", "masked-softmax", "attention-learns"):
        path = SITE / "book" / f"{page}.html"
        if not path.exists():
            print(f"{page}: not built (run `make book`)")
            ok = False
            continue
        weight = page_weight(path)
        swap = browser_swap_ms(path) if Path(CHROMIUM).exists() else float("nan")
        ok &= weight <= SIZE_BUDGET and swap <= FRAME_BUDGET_MS
        print(f"{page:<20} {weight / 1024:>7.0f} KiB   frame swap {swap:5.2f} ms")
    print(f"budgets: page <= {SIZE_BUDGET // 1024} KiB, swap <= {FRAME_BUDGET_MS:.1f} ms")
    print("\nall budgets met" if ok else "\nBUDGET MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
