"""`make bench` (second part): key press to new picture, in a real JupyterLab.

A throwaway JupyterLab (tools/jupyter_lab.py) runs copies of the chapters that
show explorers, plus a notebook of two references written here:

* naive: the usual way, ``interact`` over the kernel width with a new figure
  and ``plt.show()`` on every change (the same data, picture size and panels
  as the kernel-width explorer: heatmap with colour bar, fitted curve);
* echo: a slider whose observer swaps a 1x1 PNG in an ``ipywidgets.Image``:
  the floor that the widget messages alone cost.

For every control of every explorer (and for the references) headless
Chromium presses ArrowRight (Home at the end) and measures, in the page, from
the keydown event to the new picture loaded and decoded. It also measures the
size of the PNG that arrives and how long the browser takes to decode it, to
show where the time goes. Budgets (issue 12): median <= 40 ms, and at least
6x faster than the naive redraw.
"""

from __future__ import annotations

import statistics
import sys

import nbformat

from .browser import Offline, chromium
from .jupyter_lab import LabNotebook, explorer_notebooks, lab_server

PRESSES = 15
WARMUP = 3
MEDIAN_BUDGET_MS = 40.0
RATIO_BUDGET = 6.0

NAIVE = """\
import matplotlib.pyplot as plt
import ipywidgets
from attnbook.data import make_regression_data
from attnbook.pooling import nadaraya_watson

data = make_regression_data()
widths = (0.05, 0.07, 0.1, 0.15, 0.25, 0.35, 0.5, 0.7, 1, 1.5, 2.5, 5)


def draw(width):
    y_hat, weights = nadaraya_watson(data.x_train, data.y_train, data.x_query, "gaussian", width)
    fig, (ax_map, ax_fit) = plt.subplots(1, 2, figsize=(8.4, 3.3), dpi=80)
    image = ax_map.imshow(weights.numpy(), cmap="Reds", aspect="auto")
    fig.colorbar(image, ax=ax_map)
    ax_map.set_title("attention weights")
    ax_fit.plot(data.x_train.numpy(), data.y_train.numpy(), "o", color="0.6")
    ax_fit.plot(data.x_query.numpy(), data.y_query.numpy(), "k-")
    ax_fit.plot(data.x_query.numpy(), y_hat.numpy(), "-", color="tab:red")
    ax_fit.set_title("Nadaraya-Watson fit")
    fig.suptitle(f"gaussian kernel, width {width:g}")
    plt.show()


ipywidgets.interact(
    draw, width=ipywidgets.SelectionSlider(options=widths, value=0.5, description="width")
);
"""

ECHO = """\
import io
import ipywidgets
from PIL import Image


def pixel(colour):
    buffer = io.BytesIO()
    Image.new("RGB", (1, 1), colour).save(buffer, format="PNG")
    return buffer.getvalue()


pixels = [pixel("white"), pixel("black")]
echo_slider = ipywidgets.IntSlider(value=0, min=0, max=13, description="echo")
echo_image = ipywidgets.Image(value=pixels[0], format="png")
echo_slider.observe(lambda change: setattr(echo_image, "value", pixels[change["new"] % 2]), "value")
ipywidgets.VBox([echo_slider, echo_image])
"""

# Size of the picture now shown in ``area`` and the browser's time to decode it.
DECODE_JS = """async area => {
    const img = [...area.querySelectorAll('img')].pop();
    const blob = await (await fetch(img.src)).blob();
    const times = [];
    for (let i = 0; i < 5; i++) {
        const probe = new Image();
        probe.src = URL.createObjectURL(blob);
        const start = performance.now();
        await probe.decode();
        times.push(performance.now() - start);
        URL.revokeObjectURL(probe.src);
    }
    times.sort((a, b) => a - b);
    return {bytes: blob.size, decode_ms: times[2], width: img.naturalWidth, height: img.naturalHeight};
}"""


def references_notebook() -> nbformat.NotebookNode:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(NAIVE), nbformat.v4.new_code_cell(ECHO)]
    notebook.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    return notebook


def measure(lab_page: LabNotebook, explorer, control) -> dict:
    samples = []
    for press in range(WARMUP + PRESSES):
        result = lab_page.step(explorer, control)
        if press >= WARMUP:
            samples.append(result["ms"])
        lab_page.page.wait_for_timeout(150)  # let the kernel go idle between presses
    picture = explorer.evaluate(DECODE_JS)
    samples.sort()
    return {
        "median": statistics.median(samples),
        "p90": samples[int(0.9 * (len(samples) - 1))],
        **picture,
    }


def label_of(explorer, control) -> str:
    text = control.evaluate(
        """el => { const kinds = '.widget-slider, .widget-dropdown, .widget-toggle-buttons';
                   const box = el.closest(kinds) || el.closest('.jupyter-widgets') || el;
                   const label = box.querySelector('.widget-label');
                   return label ? label.textContent : ''; }"""
    )
    return text.strip().rstrip(":") or "control"


def main() -> int:
    notebooks = explorer_notebooks()
    rows = []
    references = {}
    with (
        lab_server(notebooks, {"bench-references.ipynb": references_notebook()}) as (base, _),
        chromium() as browser,
    ):
        for name in ["bench-references.ipynb", *(path.name for path in notebooks)]:
            with Offline(browser, viewport={"width": 1400, "height": 1000}) as offline:
                lab_page = LabNotebook(offline, base, name)
                lab_page.run_all()
                problems = lab_page.widget_errors() + lab_page.cell_errors()
                if problems:
                    print(f"{name}: {problems}")
                    return 1
                for explorer in lab_page.explorers():
                    for control in lab_page.controls(explorer):
                        label = label_of(explorer, control)
                        result = measure(lab_page, explorer, control)
                        if name == "bench-references.ipynb":
                            references["naive" if label == "width" else "echo"] = result
                        else:
                            rows.append((name.removesuffix(".ipynb"), label, result))
    naive = references["naive"]["median"]
    ok = bool(rows)
    print(
        "JupyterLab: key press to new picture loaded and decoded (ms; "
        f"{PRESSES} presses each, after {WARMUP} warm-up presses)"
    )
    header = f"{'notebook':<36}{'control':<18}{'median':>8}{'p90':>8}{'x naive':>9}"
    print(header + f"{'PNG KiB':>9}{'decode ms':>11}{'pixels':>11}")
    for name, label, result in [
        ("(reference)", "naive interact", references["naive"]),
        ("(reference)", "echo, 1x1 PNG", references["echo"]),
        *rows,
    ]:
        ratio = naive / result["median"]
        if name != "(reference)":
            ok &= result["median"] <= MEDIAN_BUDGET_MS and ratio >= RATIO_BUDGET
        print(
            f"{name[:35]:<36}{label[:17]:<18}{result['median']:>8.1f}{result['p90']:>8.1f}"
            f"{ratio:>8.1f}x{result['bytes'] / 1024:>9.1f}{result['decode_ms']:>11.2f}"
            f"{result['width']:>6}x{result['height']:<4}"
        )
    print(
        f"budgets: median <= {MEDIAN_BUDGET_MS:g} ms, at least {RATIO_BUDGET:g}x the naive redraw"
    )
    print("all budgets met" if ok else "BUDGET MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
