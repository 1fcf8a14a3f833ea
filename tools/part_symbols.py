"""Each Part's symbols at the Part's start, copied from the notation page.

    python -m tools.part_symbols           # (re)write the blocks
    python -m tools.part_symbols --check   # exit 1, naming the chapter, if one is stale

``book/notation.md`` collects the book's symbols Part by Part. The first
chapter of each Part (from ``_toc.yml``) carries that Part's section as a
folded "Symbols of Part N" dropdown just after its opening, so a reader who
starts a Part has its symbols at hand without leaving the page. The notation
page is the source: the block is generated from it and ``tests/test_part_symbols.py``
fails when a block differs from what this tool would write (edit the notation
page, then run ``make part-symbols``). Each symbol is still taught where it is
first used; the block says so.

In a notebook the block is one Markdown cell tagged ``part-symbols``, just
after the opening cell; in a Markdown chapter it sits between two ``%``
comment lines, after the "What you will learn" list.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat
import yaml

ROOT = Path(__file__).resolve().parent.parent
NOTATION = ROOT / "book" / "notation.md"
TAG = "part-symbols"
BEGIN = "% part-symbols: generated from book/notation.md by tools/part_symbols.py; edit that page"
END = "% end of part-symbols"
ROMAN = {"I": 1, "II": 2, "III": 3, "IV": 4, "V": 5, "VI": 6}


def parts(toc_path: Path = ROOT / "_toc.yml") -> list[tuple[str, Path]]:
    """(numeral, first chapter) for each "Part N: ..." of the table of contents."""
    toc = yaml.safe_load(toc_path.read_text())
    out = []
    for part in toc["parts"]:
        found = re.match(r"Part ([IVX]+):", part.get("caption", ""))
        if found:
            stem = ROOT / part["chapters"][0]["file"]
            path = next(
                (p for p in (stem.with_suffix(".ipynb"), stem.with_suffix(".md")) if p.exists()),
                None,
            )
            if path is None:
                raise ValueError(
                    f"_toc.yml: Part {found.group(1)} starts with {stem}, which is not a page"
                )
            out.append((found.group(1), path))
    return out


def section(numeral: str, notation: str) -> str:
    """The body of the notation page's "## Part N: ..." section, its "###"
    headings made bold lines (a heading inside a dropdown would join the page's
    outline) and its labels dropped (they belong to the notation page)."""
    found = re.search(rf"^## Part {numeral}:.*?\n(.*?)(?=^## |\Z)", notation, re.M | re.S)
    if not found:
        raise ValueError(f"book/notation.md has no section '## Part {numeral}: ...'")
    lines = []
    for line in found.group(1).strip().splitlines():
        if re.match(r"^\([\w-]+\)=$", line):
            continue
        heading = re.match(r"^###\s+(.*)$", line)
        lines.append(f"**{heading.group(1)}**" if heading else line)
    return "\n".join(lines).strip()


def block(numeral: str, notation: str) -> str:
    """The dropdown of Part ``numeral``'s symbols (MyST)."""
    return (
        f"````{{dropdown}} Symbols of Part {numeral}, for reference\n"
        "Each symbol is defined where this Part first uses it; this list, the same as\n"
        "on the {ref}`notation page <chap-notation>`, is for looking one up later.\n\n"
        f"{section(numeral, notation)}\n"
        "````"
    )


def _markdown_chapter(text: str, wanted: str) -> str:
    """``text`` with its block replaced, or placed after "What you will learn"."""
    framed = f"{BEGIN}\n{wanted}\n{END}\n"
    old = re.search(rf"^{re.escape(BEGIN)}\n.*?^{re.escape(END)}\n", text, re.M | re.S)
    if old:
        return text[: old.start()] + framed + text[old.end() :]
    after = re.search(r"^\*\*What you will learn\*\*\n\n(?:- .*\n(?:  .*\n)*)+\n", text, re.M)
    if not after:
        raise ValueError("no 'What you will learn' list to put the Part's symbols after")
    return text[: after.end()] + framed + "\n" + text[after.end() :]


def _notebook(nb: nbformat.NotebookNode, wanted: str) -> bool:
    """Put the block in ``nb`` (True when the notebook changed)."""
    found = [i for i, c in enumerate(nb.cells) if TAG in c.metadata.get("tags", [])]
    if found:
        cell = nb.cells[found[0]]
        if cell.source == wanted:
            return False
        cell.source = wanted
        return True
    cell = nbformat.v4.new_markdown_cell(wanted, metadata={"tags": [TAG]})
    nb.cells.insert(1, cell)
    return True


def stale(write: bool) -> list[str]:
    """The chapters whose block is missing or differs (written when ``write``)."""
    notation = NOTATION.read_text()
    out = []
    for numeral, path in parts():
        wanted = block(numeral, notation)
        if path.suffix == ".md":
            text = path.read_text()
            new = _markdown_chapter(text, wanted)
            if new != text:
                out.append(path.name)
                if write:
                    path.write_text(new)
        else:
            nb = nbformat.read(path, as_version=4)
            if _notebook(nb, wanted):
                out.append(path.name)
                if write:
                    nbformat.write(nb, path)
    return out


def main(argv: list[str]) -> int:
    check = "--check" in argv
    changed = stale(write=not check)
    if check and changed:
        print(f"Part symbols out of date in: {', '.join(changed)} (run make part-symbols)")
        return 1
    print(f"Part symbols {'checked' if check else 'written'}: {len(changed)} chapter(s) changed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
