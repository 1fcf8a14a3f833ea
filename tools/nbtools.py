"""Notebook maintenance for the book: the Colab install cell and re-execution.

    python tools/nbtools.py execute book/a.ipynb ...   # refresh stored outputs
    python tools/nbtools.py install-cell               # print the install cell
    python tools/nbtools.py install-cell --write [book/a.ipynb ...]
        # make every notebook's install cell match _config.yml (by default
        # every chapter, book/*.ipynb, and every slide notebook, slides/*.ipynb)

`execute` rewrites the install cell too, so `make notebooks` after a change
of `repository:` in _config.yml (a fork) leaves every notebook matching it.

Notebooks are executed in an empty temporary folder (so they cannot lean on
repository files), with the live widgets (ATTNBOOK_STATIC unset), no saved
widget state and no timing metadata, so that re-running them only changes
what really changed.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tools import nbrun

ROOT = Path(__file__).resolve().parent.parent
INSTALL_TAG = "remove-cell"


def repository(config_path: Path = ROOT / "_config.yml") -> tuple[str, str]:
    """The repository URL and branch (or tag) named once, in _config.yml."""
    config = yaml.safe_load(config_path.read_text())
    return config["repository"]["url"], config["repository"]["branch"]


def install_cell_source(config_path: Path = ROOT / "_config.yml", ref: str | None = None) -> str:
    """The exact source of the first code cell of every notebook: attnbook at the
    branch or tag _config.yml names, or at ``ref`` (an assignment names its commit)."""
    url, branch = repository(config_path)
    ref = ref or branch
    return f"""# Colab only: install the book's companion library, attnbook.
# Anywhere else this cell does nothing (locally, `make lab` has installed it).
import subprocess
import sys

if "google.colab" in sys.modules:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "attnbook @ git+{url}@{ref}#subdirectory=lib",
        ],
        check=True,
    )"""


def sync_install_cell(nb: nbformat.NotebookNode, name: str = "notebook") -> bool:
    """Set the first code cell's source to the install cell; True if it changed.

    The first code cell must already be the install cell (tagged INSTALL_TAG):
    anything else raises ValueError rather than overwriting a cell of content.
    """
    first = next((cell for cell in nb.cells if cell.cell_type == "code"), None)
    if first is None or INSTALL_TAG not in first.metadata.get("tags", []):
        raise ValueError(
            f"{name}: the first code cell is not the install cell (tagged {INSTALL_TAG!r})"
        )
    source = install_cell_source()
    if first.source == source:
        return False
    first.source = source
    return True


def install_cell_notebooks(root: Path | None = None) -> list[Path]:
    """The notebooks that start with the install cell: the chapters and the slide decks.

    A slide notebook opens in Jupyter or Colab like a chapter (its install cell
    is a ``skip`` slide, never shown in the deck), and ``execute`` already
    rewrites it there, so ``install-cell --write`` keeps it current too.
    """
    root = ROOT if root is None else root
    return sorted((root / "book").glob("*.ipynb")) + sorted((root / "slides").glob("*.ipynb"))


def write_install_cells(paths: list[Path]) -> list[Path]:
    """Rewrite the install cell of each notebook where it differs; the changed paths."""
    changed = []
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        if sync_install_cell(nb, name=str(path)):
            nbformat.write(nb, path)
            changed.append(path)
    return changed


def coalesce_streams(outputs: list) -> list:
    """Merge consecutive stream outputs of the same name (how they split varies)."""
    merged: list = []
    for output in outputs:
        previous = merged[-1] if merged else None
        if (
            output.get("output_type") == "stream"
            and previous is not None
            and previous.get("output_type") == "stream"
            and previous.get("name") == output.get("name")
        ):
            previous["text"] += output["text"]
        else:
            merged.append(output)
    return merged


def clean_metadata(nb: nbformat.NotebookNode) -> None:
    """Drop metadata that differs between runs or breaks GitHub's renderer."""
    nb.metadata.pop("widgets", None)
    nb.metadata["kernelspec"] = {
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
        "name": "python3",
    }
    for index, cell in enumerate(nb.cells):
        if not cell.get("id"):  # nbformat 4.5 wants a stable id on every cell
            cell["id"] = f"cell-{index:03d}"
        cell.metadata.pop("execution", None)
        if cell.cell_type == "code":
            cell.outputs = coalesce_streams(cell.outputs)
        cell.metadata.pop("ExecuteTime", None)


def execute(path: Path) -> None:
    """Run a notebook top to bottom and store its outputs in place."""
    nb = nbformat.read(path, as_version=4)
    sync_install_cell(nb, name=str(path))
    nbrun.execute(nb, timeout=600, static=False)
    clean_metadata(nb)
    nbformat.write(nb, path)


def main(argv: list[str]) -> int:
    if argv[:2] == ["install-cell", "--write"]:
        paths = [Path(name) for name in argv[2:]] or install_cell_notebooks()
        changed = write_install_cells(paths)
        print(f"install cell rewritten in {len(changed)} of {len(paths)} notebooks")
        for path in changed:
            print(f"  {path}")
        return 0
    if argv == ["install-cell"]:
        print(install_cell_source())
        return 0
    if argv[:1] == ["execute"] and len(argv) > 1:
        for name in argv[1:]:
            print(f"executing {name}", flush=True)
            execute(Path(name))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
