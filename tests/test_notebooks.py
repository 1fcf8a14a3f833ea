"""Notebook hygiene: the Colab install cell, structure, and clean stored outputs."""

from __future__ import annotations

import ast
import json
import re

import pytest

from tools.nbtools import INSTALL_TAG, install_cell_source
from tools.site import BOOK, NOTEBOOKS, config, read_notebook, toc_files

CHAPTERS = [
    "book/intro",
    "book/notation",
    "book/attention-cues",
    "book/queries-keys-values",
    "book/attention-pooling",
    "book/masked-softmax",
    "book/scoring-functions",
    "book/multi-head-attention",
    "book/self-attention-positional-encoding",
    "book/attention-learns",
    "book/transformer-block",
    "book/causal-language-model",
    "book/induction-heads",
    "book/attention-at-scale",
    "book/cross-attention",
    "book/positions",
    "book/vision-transformer",
    "book/references",
    "book/concept-answers",
    "book/instructor-guide",
    "book/teaching",
]
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
# Text that must never appear in a stored output: machine paths, memory addresses.
LEAKS = re.compile(r"(/work/|/home/|/root/|/tmp/|\.venv|site-packages|0x[0-9a-f]{6,})")
FORBIDDEN_CODE = re.compile(
    r"(sys\.path|NBVAL_|nbval-|urllib|requests\.|wget|curl |open\(|read_csv|Path\()"
)


def code_cells(nb):
    return [cell for cell in nb.cells if cell.cell_type == "code"]


def test_toc_lists_the_chapters_in_curriculum_order():
    assert toc_files() == CHAPTERS
    for name in CHAPTERS:
        assert (BOOK.parent / f"{name}.md").exists() or (BOOK.parent / f"{name}.ipynb").exists()


def test_notation_page_follows_the_preface_and_is_linked_from_it():
    assert toc_files()[:2] == ["book/intro", "book/notation"]
    assert "<chap-notation>" in (BOOK / "intro.md").read_text()
    notation = (BOOK / "notation.md").read_text()
    for must in ("$n$", "$d$", "$\\sigma$", "(batch, queries, keys)", "counted from 0"):
        assert must in notation, f"notation.md does not define {must}"
    # A reference for later, grouped by Part, every letter used twice said apart.
    assert "reference for" in notation
    parts = re.findall(r"^## (Part [IV]+):", notation, re.M)
    assert parts == ["Part I", "Part II", "Part III", "Part IV"]
    twice = notation.split("## Letters with two meanings", 1)[1]
    for letter in ("$L$", "$p$", "$\\mathbf{R}$", "$\\mathbf{z}$", "$m$", "`num_hiddens`"):
        assert f"| {letter} |" in twice, f"notation.md does not say apart the meanings of {letter}"


def test_every_chapter_notebook_is_in_the_book():
    assert sorted(f"book/{path.stem}" for path in NOTEBOOKS) == sorted(
        name for name in CHAPTERS if (BOOK.parent / f"{name}.ipynb").exists()
    )
    assert len(NOTEBOOKS) == len([c for c in CHAPTERS if (BOOK.parent / f"{c}.ipynb").exists()])


def test_install_cell_matches_config():
    url, ref = config()["repository"]["url"], config()["repository"]["branch"]
    source = install_cell_source()
    assert f"git+{url}@{ref}#subdirectory=lib" in source
    assert 'if "google.colab" in sys.modules:' in source


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
class TestNotebook:
    def test_first_code_cell_is_the_install_cell(self, path):
        first, second = code_cells(read_notebook(path))[:2]
        assert first.source == install_cell_source(), (
            f"{path.name}: the first code cell must be exactly the install cell "
            "(python tools/nbtools.py install-cell)"
        )
        assert INSTALL_TAG in first.metadata.get("tags", [])
        assert first.outputs == []
        assert "setup" in second.metadata.get("tags", [])
        assert "import" in second.source and "manual_seed" in second.source

    def test_opens_with_label_title_and_what_you_will_learn(self, path):
        first = read_notebook(path).cells[0]
        assert first.cell_type == "markdown"
        assert re.match(rf"^\(chap-{path.stem}\)=\n# \S", first.source)
        assert re.search(r"what you will learn", first.source, re.IGNORECASE)

    def test_ends_with_summary_and_exercises_with_solutions(self, path):
        text = "\n".join(c.source for c in read_notebook(path).cells if c.cell_type == "markdown")
        assert "\n## Summary" in "\n" + text and "\n## Exercises" in "\n" + text
        assert text.index("## Summary") < text.index("## Exercises")
        assert text.count("{dropdown}") >= 3
        checks_used = set(
            re.findall(r"check_\w+\(", "\n".join(c.source for c in code_cells(read_notebook(path))))
        )
        assert len(checks_used) >= 2, f"{path.name}: fewer than two checkable exercises"

    def test_solutions_are_folded_and_keep_their_own_names(self, path):
        nb = read_notebook(path)
        headings = [c.source for c in nb.cells if c.cell_type == "markdown"]
        start = next(i for i, c in enumerate(nb.cells) if "\n## Exercises" in "\n" + c.source)
        assert any("## Exercises" in h for h in headings)
        solutions = 0
        for index, cell in enumerate(nb.cells[start:], start=start):
            if cell.cell_type != "code":
                continue
            tags = cell.metadata.get("tags", [])
            where = f"{path.name} cell {index}"
            if "remove-cell" in tags:  # a hidden assert cell, never shown
                continue
            assert "solution" in tags, (
                f"{where}: a code cell among the exercises must be a solution"
            )
            solutions += 1
            # Folded on the website (code and output), in JupyterLab / Notebook 7, and in Colab.
            assert "hide-cell" in tags, f"{where}: tag the solution hide-cell"
            assert cell.metadata.get("jupyter", {}) == {
                "source_hidden": True,
                "outputs_hidden": True,
            }, f"{where}: solution must open collapsed in JupyterLab"
            assert cell.source.startswith("# @title Solution"), f"{where}: no Colab form title"
            # "Run all" must not overwrite the reader's own attempt.
            for name in _top_level_names(cell.source):
                assert name.startswith("solution_"), (
                    f"{where}: the solution defines {name!r}; name it solution_{name}"
                )
        assert solutions >= 2, f"{path.name}: fewer than two solution cells"

    def test_every_explorer_output_has_a_png_fallback(self, path):
        # GitHub, nbviewer and Colab before running cannot draw a widget: the
        # stored output must carry a PNG of the explorer's current frame (a
        # concept question, the question and its options as text).
        for index, cell in enumerate(code_cells(read_notebook(path))):
            for output in cell.get("outputs", []):
                data = output.get("data", {})
                if WIDGET_VIEW in data and cell.source.startswith("ask("):
                    # a concept question: its fallback is the question as text
                    text = "".join(data.get("text/plain", ""))
                    assert text.startswith("Check your understanding"), (
                        f"{path.name} code cell {index}: question without a text fallback"
                    )
                elif WIDGET_VIEW in data:
                    png = data.get("image/png", "")
                    assert png.startswith("iVBORw0KGgo"), (
                        f"{path.name} code cell {index}: explorer output without a PNG fallback"
                    )

    def test_kernelspec_and_no_widget_state(self, path):
        nb = read_notebook(path)
        assert nb.metadata.kernelspec.name == "python3"
        assert "widgets" not in nb.metadata  # a saved widget-state blob breaks GitHub's viewer
        for cell in nb.cells:
            assert "execution" not in cell.metadata

    def test_executed_in_order_without_gaps(self, path):
        counts = [cell.execution_count for cell in code_cells(read_notebook(path))]
        assert counts == list(range(1, len(counts) + 1)), f"{path.name}: run `make notebooks`"

    def test_outputs_are_clean(self, path):
        for index, cell in enumerate(read_notebook(path).cells):
            for output in cell.get("outputs", []):
                text = json.dumps({k: v for k, v in output.items() if k != "data"})
                text += json.dumps(
                    {k: v for k, v in output.get("data", {}).items() if not k.startswith("image/")}
                )
                assert not LEAKS.search(text), (
                    f"{path.name} cell {index}: {LEAKS.search(text).group(0)!r}"
                )
                assert "image/svg+xml" not in output.get("data", {})
                assert output.get("name") != "stderr", f"{path.name} cell {index} wrote to stderr"

    def test_code_is_self_contained(self, path):
        for index, cell in enumerate(code_cells(read_notebook(path))[1:], start=1):
            match = FORBIDDEN_CODE.search(cell.source)
            assert match is None, f"{path.name} code cell {index}: {match.group(0)!r}"
            assert "NBVAL" not in json.dumps(cell.metadata)

    def test_every_figure_has_alt_text_and_caption(self, path):
        for index, cell in enumerate(read_notebook(path).cells):
            # An explorer's PNG is only the fallback for viewers without widgets;
            # on the website it is the static explorer, with alt text per stop.
            figures = [
                o
                for o in cell.get("outputs", [])
                if "image/png" in o.get("data", {}) and WIDGET_VIEW not in o.get("data", {})
            ]
            if figures:
                mystnb = cell.metadata.get("mystnb", {})
                alt = mystnb.get("image", {}).get("alt", "")
                assert len(alt) > 20, f"{path.name} cell {index}: figure without alt text"
                assert mystnb.get("figure", {}).get("caption"), (
                    f"{path.name} cell {index}: no caption"
                )


def _top_level_names(source: str) -> set[str]:
    """Names a cell binds at module level (functions, classes, assignments, loops, imports)."""
    tree = ast.parse("\n".join(line for line in source.splitlines() if not line.startswith("%")))
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        else:
            targets = []
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.With)):
                targets = [getattr(node, "target", None)] + [
                    item.optional_vars for item in getattr(node, "items", [])
                ]
            for target in filter(None, targets):
                names.update(
                    n.id for n in ast.walk(target) if isinstance(n, ast.Name) and n.id != "_"
                )
    return names


def test_top_level_names_sees_every_binding():
    source = "import math as m\ndef f(): x = 1\ny, (z, w) = 1, (2, 3)\nfor i in []: pass\n_ = 0"
    assert _top_level_names(source) == {"m", "f", "y", "z", "w", "i"}


def test_prose_chapter_structure():
    text = (BOOK / "attention-cues.md").read_text()
    assert text.startswith("(chap-attention-cues)=\n# ")
    assert re.search(r"what you will learn", text, re.IGNORECASE)
    assert "## Summary" in text and "## Exercises" in text
    assert len(re.findall(r"\w+", text)) >= 1200
    for figure in re.findall(r"```\{figure\}[^`]*```", text):
        assert ":alt:" in figure and ":name:" in figure


def _raises(*args):
    raise ZeroDivisionError("always fails")


def test_checker_hints_name_sections_that_exist():
    """Every hint and every known mistake's diagnosis of every checker ends with
    see "<section>" in <chapter>; the chapter must be a notebook's title and the
    section one of its headings."""
    from attnbook import checks

    headings = {}  # chapter title -> its section headings
    for path in NOTEBOOKS:
        lines = [
            line.lstrip("#").strip()
            for cell in read_notebook(path).cells
            if cell.cell_type == "markdown"
            for line in cell.source.splitlines()
            if line.startswith("#")
        ]
        headings[lines[0]] = set(lines[1:])
    checkers = [getattr(checks, name) for name in dir(checks) if name.startswith("check_")]
    assert len(checkers) >= 8
    for checker in checkers:
        diagnoses = [m.diagnosis for m in getattr(checker, "mistakes", ())]
        for line in checker(_raises).lines + diagnoses:
            pointers = re.findall(r'see "([^"]+)" in ([^;)]+)', line)
            assert pointers, f"{checker.__name__}: no pointer to a section in {line!r}"
            for section, chapter in pointers:
                titles = [title for title in headings if title.startswith(chapter)]
                assert titles, f"{checker.__name__}: no chapter titled {chapter!r}"
                assert section in headings[titles[0]], (
                    f"{checker.__name__}: {titles[0]!r} has no section {section!r}"
                )


def test_preface_links_its_scale_claim_to_the_books_measurements():
    # The reason for the square root is told once, in scoring functions' section
    # sec-why-sqrt-d; the preface's short version links it and chapter 8's runs, and
    # no longer says the unscaled softmax passes no gradient (the measurements refute it).
    text = (BOOK / "intro.md").read_text()
    claim = text.index("single square root in the denominator")
    window = text[claim : claim + 800]
    assert "<chap-attention-learns>" in window and "<sec-why-sqrt-d>" in window
    assert "passes almost no gradient back" not in text
    scoring = (BOOK / "scoring-functions.ipynb").read_text()
    assert scoring.count("(sec-why-sqrt-d)=") == 1


def _shown(cell) -> bool:
    """A cell the reader sees on the website: not removed, folded or a solution."""
    return not {"remove-cell", "hide-cell", "solution"} & set(cell.metadata.get("tags", []))


def test_attention_learns_introduces_the_two_head_experiment_before_its_code():
    """The two-part task and the output matrix W_o were once introduced only by
    code: a rewrite dropped the paragraph, and the Summary went on crediting a W_o
    that the chapter never described. The prose between the previous shown code
    cell and the first one that trains on parts=2 must open a section and name
    the task's switch and the output matrix."""
    cells = read_notebook(BOOK / "attention-learns.ipynb").cells
    first = next(
        i
        for i, cell in enumerate(cells)
        if cell.cell_type == "code" and _shown(cell) and "parts=2" in cell.source
    )
    previous = max(i for i in range(first) if cells[i].cell_type == "code" and _shown(cells[i]))
    prose = "\n".join(
        cell.source for cell in cells[previous + 1 : first] if cell.cell_type == "markdown"
    )
    assert re.search(r"^##+ ", prose, re.MULTILINE), "no heading before the two-head experiment"
    for term in ("`parts=2`", r"\mathbf W_o", "`num_heads=2`"):
        assert term in prose, f"the two-head experiment's introduction never names {term}"
