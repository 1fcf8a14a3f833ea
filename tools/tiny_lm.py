"""Build the tiny language model's shipped files: its corpus and its checkpoint.

Chapter 10 (book/causal-language-model.ipynb) trains a character-level model
on a corpus that ships inside the library, and prints its stored samples from
a small checkpoint that ships there too (a sample from a fresh training run is
not the same on every CPU). This program writes both; it is not a test.

    python tools/tiny_lm.py corpus      # lib/attnbook/lm_data/corpus.txt
    python tools/tiny_lm.py checkpoint  # lib/attnbook/lm_data/tiny_lm.pt

`make lm-checkpoint` runs the second. The corpus is a frozen copy of the
book's preface and Part I prose: rebuild it only on purpose (the checkpoint
must then be rebuilt too), since later edits of the chapters would otherwise
change the model's training data.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "lib" / "attnbook" / "lm_data"
# The preface, then Part I in reading order.
SOURCES = [
    "book/intro.md",
    "book/attention-cues.md",
    "book/queries-keys-values.ipynb",
    "book/attention-pooling.ipynb",
    "book/masked-softmax.ipynb",
    "book/scoring-functions.ipynb",
]
# Characters kept as they are; a few others are spelled in ASCII, the rest dropped.
KEEP = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,;:!?'()-\n")
SPELL = {"\u2014": " - ", "\u2013": "-", "\u2019": "'", "\u2018": "'", "\u201c": "'", "\u201d": "'"}


def markdown_of(path: Path) -> str:
    """The prose of a chapter: the file itself, or a notebook's Markdown cells."""
    if path.suffix == ".md":
        return path.read_text(encoding="utf-8")
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return "\n\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")


def plain(markdown: str) -> str:
    """Markdown and MyST reduced to plain sentences, one paragraph per line."""
    text = re.sub(r"```.*?```", "", markdown, flags=re.S)  # code and directives
    text = re.sub(r":::.*?:::", "", text, flags=re.S)
    text = re.sub(r"\$\$.*?\$\$", "", text, flags=re.S)  # display maths
    text = re.sub(r"\$[^$\n]*\$", "", text)  # inline maths
    text = re.sub(r"<[^>]+>", "", text)  # HTML
    text = re.sub(r"\{[a-z-]+\}`[^`]*`", "", text)  # roles: {cite}`...`, {ref}`...`
    text = re.sub(r"^\([^)]*\)=\s*$", "", text, flags=re.M)  # labels
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # links keep their text
    text = re.sub(r"`([^`]*)`", r"\1", text)  # inline code keeps its text
    text = re.sub(r"[*_#>|]", "", text)
    for old, new in SPELL.items():
        text = text.replace(old, new)
    text = "".join(c for c in text if c in KEEP)
    paragraphs = []
    for block in re.split(r"\n\s*\n", text):
        line = " ".join(block.split())
        # Keep sentences, not leftovers of tables, lists of symbols or headings.
        if len(line) >= 60 and sum(c.isalpha() for c in line) > 0.7 * len(line):
            paragraphs.append(line)
    return "\n".join(paragraphs)


def build_corpus() -> None:
    text = "\n".join(plain(markdown_of(ROOT / source)) for source in SOURCES) + "\n"
    DATA.mkdir(parents=True, exist_ok=True)
    (DATA / "corpus.txt").write_text(text, encoding="utf-8")
    print(f"wrote {DATA / 'corpus.txt'}: {len(text)} characters, {len(set(text))} distinct")


def build_checkpoint() -> None:
    from attnbook import lm

    start = time.perf_counter()
    cpu = time.process_time()
    model, losses, samples = lm.train_checkpoint_recipe()
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    path = DATA / lm.CHECKPOINT_FILE
    lm.save_checkpoint(model, path, losses, samples)
    info = lm.checkpoint_info()
    for step, text in samples.items():
        print(f"step {step:5d}: {text!r}")
    print(
        f"trained {lm.CHECKPOINT_RECIPE['steps']} steps in {seconds:.0f} s ({cpu:.0f} s CPU); "
        f"loss {info['train_loss']:.3f} on the training text, "
        f"{info['held_out_loss']:.3f} held out; wrote {path} ({info['bytes']} bytes)"
    )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("what", choices=["corpus", "checkpoint"])
    args = parser.parse_args(argv)
    build_corpus() if args.what == "corpus" else build_checkpoint()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
