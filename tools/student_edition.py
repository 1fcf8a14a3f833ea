"""The student edition: the reader's edition of every chapter without its
solutions, for handouts and lab machines (`make student-edition`).

    python tools/student_edition.py                 # write _build/student/NAME.ipynb, every chapter
    python tools/student_edition.py book/X.ipynb    # the named chapters only

It starts from the reader's edition (tools/readers_edition.py: plain
CommonMark, folded setup cells, figure captions) and leaves out:

* every dropdown whose title starts with "Solution" (the written solutions);
* every code cell tagged ``solution`` (the solution functions, and the
  checker runs on them);
* every code cell that needs what a removed cell defined: the hidden checks
  that test a solution's numbers, a plot of a solution's output, and so on,
  found by reading the names each cell loads and stores (``ast``), so that the
  edition runs top to bottom; and the hidden checks (tag ``remove-cell``) whose
  comments say they check a solution ("# The solution quotes these");
* the pointers to the solutions ("Solution: open the dropdown ...") and the
  sentences that say every exercise has one.

In place of each checked exercise's solution cell it puts an empty answer cell:
the answer function's signature (the parameters the exercise names) with an
empty body, and the checker called on it, so that the edition is a workbook.
A note under the title says what this edition is. The exercises, their
checkers' imports and everything else stay as in the reader's edition, with
their stored outputs. Writing twice gives the same files.
"""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tools import readers_edition as reader

ROOT = reader.ROOT
OUT = ROOT / "_build" / "student"
STUDENT_NOTE = "student edition"

# "Solution: open the dropdown, then the folded code cell below it." and its variants.
POINTER = re.compile(r"[ \t]*\n?[ \t]*Solution: open the dropdown[^.]*\.")
# "Every exercise has a solution in a dropdown; ...", "Every solution is folded: ..."
EVERY_SOLUTION = re.compile(
    r"[ \t]*\bEvery (?:exercise has (?:a|its) (?:folded )?solution|solution is folded)[^.]*\.[ \t]?"
)


# A hidden check that says it checks a solution's numbers: "# The solution quotes these".
SOLUTION_COMMENT = re.compile(r"#[^\n]*\bsolution", re.IGNORECASE)


@dataclass
class Removed:
    """What the student edition of one chapter left out."""

    dropdowns: int = 0
    solution_cells: int = 0
    dependent_cells: list[str] = field(default_factory=list)
    pointers: int = 0


class _ModuleStores(ast.NodeVisitor):
    """The names a cell binds at module level (not inside a function, a class or a
    comprehension, whose names are their own)."""

    def __init__(self) -> None:
        self.names: set[str] = set()

    def visit_Name(self, node: ast.Name) -> None:
        if not isinstance(node.ctx, ast.Load):
            self.names.add(node.id)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self.names.add(node.name)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.names.add(node.name)

    def visit_Import(self, node: ast.Import | ast.ImportFrom) -> None:
        self.names.update((a.asname or a.name).split(".")[0] for a in node.names)

    visit_ImportFrom = visit_Import

    def visit_Lambda(self, node: ast.Lambda) -> None:
        pass

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = visit_Lambda


def _names(source: str) -> tuple[set[str], set[str]]:
    """The names a code cell needs from earlier cells (loaded anywhere, function
    bodies included, before the cell binds them) and the names it binds at module
    level.

    IPython magics and shell lines are blanked first; a cell that still does not
    parse loads and binds nothing we can see (it is kept as it is).
    """
    lines = ["" if re.match(r"\s*[%!]", line) else line for line in source.split("\n")]
    try:
        tree = ast.parse("\n".join(lines))
    except SyntaxError:
        return set(), set()
    # A name counts as loaded unless an earlier statement of the cell bound it.
    loads: set[str] = set()
    stores = _ModuleStores()
    for statement in tree.body:
        loads |= {
            node.id
            for node in ast.walk(statement)
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
        } - stores.names
        stores.visit(statement)
    return loads, stores.names


def answer_cell(cell: nbformat.NotebookNode) -> nbformat.NotebookNode | None:
    """The empty answer cell that replaces a checked exercise's solution cell: the
    answer function's signature with an empty body, and the checker called on it as
    the solution cell calls it. None for a cell that is not a checked exercise's."""
    meta = cell.metadata.get("attnbook", {})
    if not {"answer", "check", "solution"} <= set(meta):
        return None
    tree = ast.parse(cell.source)
    solution = next(
        (n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == meta["solution"]),
        None,
    )
    calls = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call)
        and (getattr(n.func, "id", None) or getattr(n.func, "attr", None)) == meta["check"]
    ]
    if solution is None or not calls:
        return None
    checker = ast.unparse(calls[0].func)
    # The parameters the exercise names: the solution's, less any it adds with a default.
    arguments = solution.args
    required = arguments.args[: len(arguments.args) - len(arguments.defaults)]
    signature = ", ".join(a.arg for a in arguments.posonlyargs + required)
    source = (
        f"# Your answer: write {meta['answer']}, then run this cell; the checker's report\n"
        "# says which cases pass and names the likely mistake.\n"
        f"def {meta['answer']}({signature}):\n"
        "    ...\n\n\n"
        f"{checker}({meta['answer']})"
    )
    answer = nbformat.v4.new_code_cell(source)
    answer.id = f"answer-{meta['answer'].replace('_', '-')}"
    return answer


def without_solutions(source: nbformat.NotebookNode, removed: Removed) -> nbformat.NotebookNode:
    """The chapter's cells without solution cells and the cells that need them.

    Walking the cells in order, a name stored by a removed cell is unavailable
    until a kept cell stores it again; a code cell that loads an unavailable
    name is removed too (and what it stores becomes unavailable), as is a
    hidden check whose comments name a solution.
    """
    nb = nbformat.from_dict(source)
    kept, unavailable = [], set()
    for cell in nb.cells:
        if cell.cell_type != "code":
            kept.append(cell)
            continue
        loads, stores = _names(cell.source)
        if "solution" in cell.metadata.get("tags", []):
            removed.solution_cells += 1
            unavailable |= stores
            answer = answer_cell(cell)
            if answer is not None:
                kept.append(answer)
                unavailable -= _names(answer.source)[1]
            continue
        hidden_check = "remove-cell" in cell.metadata.get("tags", [])
        if loads & unavailable or (hidden_check and SOLUTION_COMMENT.search(cell.source)):
            removed.dependent_cells.append(cell.get("id", "?"))
            unavailable |= stores
            continue
        unavailable -= stores
        kept.append(cell)
    nb.cells = kept
    return nb


class StudentConverter(reader.Converter):
    """The reader's edition's converter, with the solutions left out."""

    def __init__(self, book: reader.Book, page: str, removed: Removed):
        super().__init__(book, page)
        self.removed = removed

    def directive(self, name: str, argument: str, body: list[str], indent: str) -> str:
        options = reader._options(body)
        dropdown = name == "dropdown" or "dropdown" in str(options.get("class", "")).split()
        if dropdown and reader.plain_title(self.inline(argument)).lower().startswith("solution"):
            self.removed.dropdowns += 1
            return ""
        return super().directive(name, argument, body, indent)

    def markdown(self, text: str) -> str:
        text, pointers = POINTER.subn("", text)
        text, every = EVERY_SOLUTION.subn("", text)
        self.removed.pointers += pointers + every
        out = super().markdown(text)
        return re.sub(r"\n{3,}", "\n\n", out)

    def notebook(self, source: nbformat.NotebookNode, name: str) -> nbformat.NotebookNode:
        nb = super().notebook(without_solutions(source, self.removed), name)
        nb.cells = [c for c in nb.cells if c.cell_type != "markdown" or c.source.strip()]
        return nb

    def edition_note(self, name: str) -> nbformat.NotebookNode:
        url = self.book.url(self.page)
        note = nbformat.v4.new_markdown_cell(
            f"*This is the {STUDENT_NOTE} of the chapter: the reader's edition without the "
            "solutions to its exercises (the written solutions, the solution code and the "
            f"checks that use it). The full chapter is [on the book's website]({url}). "
            f"It is generated from `book/{name}` by `make student-edition`.*"
        )
        note.id = "student-edition-note"
        return note


def edition(path: Path, book: reader.Book | None = None) -> tuple[nbformat.NotebookNode, Removed]:
    """The student edition of one chapter notebook, and what it left out (nothing is written)."""
    book = book or reader.scan_book()
    removed = Removed()
    source = nbformat.read(path, as_version=4)
    nb = StudentConverter(book, f"book/{path.stem}", removed).notebook(source, path.name)
    return nb, removed


def write(paths: list[Path], out: Path = OUT) -> dict[str, Removed]:
    book = reader.scan_book()
    out.mkdir(parents=True, exist_ok=True)
    report = {}
    for path in paths:
        nb, removed = edition(path, book)
        (out / path.name).write_text(reader.dumps(nb))
        report[path.name] = removed
    return report


def main(argv: list[str]) -> int:
    if any(a.startswith("-") for a in argv):
        print(__doc__, file=sys.stderr)
        return 2
    paths = [Path(a).resolve() for a in argv] or reader.sources()
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        print(f"no such notebook: {', '.join(missing)}", file=sys.stderr)
        return 2
    report = write(paths)
    total = Removed()
    for removed in report.values():
        total.dropdowns += removed.dropdowns
        total.solution_cells += removed.solution_cells
        total.pointers += removed.pointers
        total.dependent_cells += removed.dependent_cells
    print(
        f"student edition: {len(report)} notebooks in {OUT.relative_to(ROOT)}/ "
        f"({total.dropdowns} solution dropdowns, {total.solution_cells} solution cells, "
        f"{len(total.dependent_cells)} cells that need them, {total.pointers} pointers left out)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
