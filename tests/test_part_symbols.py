"""Each Part's symbols at the Part's start (tools/part_symbols.py): the first
chapter of each Part carries its Part's section of the notation page, as that
page now reads."""

from __future__ import annotations

import nbformat

from tools import part_symbols


def test_each_part_starts_with_its_symbols_as_the_notation_page_lists_them():
    assert [n for n, _ in part_symbols.parts()] == ["I", "II", "III", "IV"]
    assert part_symbols.stale(write=False) == [], "run make part-symbols"


def test_a_changed_notation_page_makes_the_blocks_stale(tmp_path, monkeypatch):
    changed = tmp_path / "notation.md"
    text = part_symbols.NOTATION.read_text()
    changed.write_text(text.replace("| the number of blocks (layers) in a stack", "| blocks", 1))
    monkeypatch.setattr(part_symbols, "NOTATION", changed)
    assert part_symbols.stale(write=False) == ["transformer-block.ipynb"]


def test_only_the_first_chapter_of_a_part_has_the_block():
    firsts = {path for _, path in part_symbols.parts()}
    for path in sorted(part_symbols.ROOT.glob("book/*.ipynb")):
        cells = nbformat.read(path, as_version=4).cells
        tagged = [i for i, c in enumerate(cells) if part_symbols.TAG in c.metadata.get("tags", [])]
        assert tagged == ([1] if path in firsts else []), path.name
    for path in sorted(part_symbols.ROOT.glob("book/*.md")):
        count = path.read_text().count(part_symbols.BEGIN)
        assert count == (1 if path in firsts else 0), path.name


def test_the_block_keeps_labels_and_headings_out_of_the_page_outline():
    block = part_symbols.block("IV", part_symbols.NOTATION.read_text())
    assert "\n### " not in block and "**Where position comes from (chapter 14)**" in block
    assert block.startswith("````{dropdown} Symbols of Part IV") and block.endswith("````")
