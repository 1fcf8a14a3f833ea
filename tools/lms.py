"""Submissions as an LMS hands them out, and grades in files its importer takes as they are.

    python -m tools.lms collect DIR
    python -m tools.lms canvas DIR --roster GRADEBOOK.csv [--column "Masked softmax (123)"]
                               [--written MARKS.csv] [--out FILE]
    python -m tools.lms moodle DIR --roster WORKSHEET.csv [--written MARKS.csv] [--out FILE]
    python -m tools.lms moodle-gradebook DIR --roster WORKSHEET.csv [--column NAME]
                               [--written MARKS.csv] [--out FILE]

DIR is the folder that ``make grade`` grades and writes ``grades.csv`` and
``feedback/`` into. Nothing here runs a submission: it only reads names and
CSV files, so it runs in the project's .venv with the standard library.

Reading a download: ``collect(folder) -> (found, problems)``
------------------------------------------------------------

``found`` is a list of ``Found(name, path, student)``, one per submission, sorted
by name; ``name`` is unique (also without regard to case, since it names the
feedback file ``feedback/NAME.txt``); ``student`` is the LMS identity,
``Student(lms, id, name)``, or None for a plain folder. ``problems`` is a list
of sentences, one per file or folder that is not a submission, saying why.
Nothing is dropped without a sentence. Three layouts are recognised, one per
folder (``layout="auto"`` picks Moodle if any entry is named as Moodle names
them, else Canvas if any is named as Canvas names them, else plain):

- ``plain``: today's layout. Every ``.ipynb`` or ``.zip`` file is a submission,
  its stem the name; ``student`` is None.
- ``moodle``: "Download all submissions" of a Moodle assignment. Moodle names
  each student's work ``PREFIX_assignsubmission_file`` where PREFIX is the
  student's full name (underscores turned into spaces), ``_`` and their
  participant id (``assign::get_uniqueid_for_user``, the number in the grading
  worksheet's "Participant 12345"); with "Download submissions in folders" (the
  default since Moodle 3.1) that is a folder holding the files as uploaded, and
  without it each file is ``PREFIX_assignsubmission_file_FILENAME``. Source:
  Moodle's ``mod/assign/classes/downloader.php`` (``get_student_prefix``,
  ``load_submissionplugin_filelist``) and the help string ``downloadasfolders_help``
  in ``mod/assign/lang/en/assign.php``. Older Moodles end the folder name with
  one more ``_``; both are read. The name is PREFIX, ``student.id`` the
  participant id. Other plugins' folders (``assignsubmission_onlinetext``) are
  problems. Team submissions are named after the group and its id, which the
  worksheet does not list: they are reported when the grades are written.
- ``canvas``: "Download Submissions" of a Canvas assignment, files named
  ``lastfirst_[late_]USERID_SUBMISSIONID_FILENAME`` (the student's name, lower
  case and run together; ``late`` for a late submission; the Canvas user id,
  the "ID" column of the gradebook export). Canvas documents no specification
  of these names that the search tool could reach; the layout is the one the
  teacher trial met, and the one in Canvas's own issue tracker
  (instructure/canvas-lms#2406: ``studenttest_3143_207797_zipsubmission.zip``).
  The name is ``lastfirst_USERID``, ``student.id`` the user id.

Each student gives at most one submission. A student with two notebooks (or a
notebook and a zip), two plain files with the same stem, a Moodle folder with no
notebook: each is a problem naming every path, and none of those files is a
submission, so that nothing is graded twice or overwritten; the teacher removes
the wrong one and runs again. Other files (a PDF beside the notebook) are
problems too, and the student's notebook is still a submission.

Writing grades
--------------

The input is the grading result (``read_results(grades.csv)``: one ``Result(name,
total, possible, status)`` per submission; ``status`` is ``graded`` or ``error:
REASON``; a grades.csv without a status column is read as all graded, with a
warning), the identities from ``collect`` on the same folder, the roster (the
teacher's export from the LMS) and optionally the written marks
(``read_marks``: a CSV with a ``submission`` column holding the names above and
one column per written question, points or empty). ``final_grades`` adds the
written marks to the total. A submission whose status is not ``graded``, or
whose written marks are missing or not numbers, gets no grade: its cell is left
as the roster has it (empty, unless the LMS already had a grade) and a line
says why, so that an error is never exported as a 0. Students of the roster
without a submission, and submissions whose student is not in the roster, are
named on stdout too.

Each writer copies the roster's own rows and columns and changes only the
grade cells it has a grade for, so the file is the LMS's own export with
grades filled in:

- ``canvas_import(grades, roster, assignment)``: Canvas's gradebook import
  (Grades, Import). The file is the gradebook export ("Export Entire
  Gradebook") cut down to its student columns ``Student``, ``ID``, ``SIS User
  ID``, ``SIS Login ID``, ``Section`` (and ``Integration ID`` or ``Root
  Account`` where the instance exports them) and the one assignment column,
  headed as Canvas heads it, ``Name (assignment id)``; its "Points Possible"
  row is kept. Students are matched by ``ID``, the Canvas user id. Sources:
  the Ohio State guide "Import a CSV File to Carmen Grades" (teaching.resources.
  osu.edu/toolsets/carmencanvas/guides/calculating-final-grades/
  import-csv-file-carmen-grades: Student name or ID or SIS User ID, SIS Login
  ID, Section, then the assignment column; a column not in the gradebook
  creates a new assignment) and VCU's "Gradebook Action Menu" (ts.vcu.edu/askit/
  teaching-and-learning/canvas/...: the read-only columns of the export are
  ignored on import). Instructure's own guide, "How do I import grades in the
  Gradebook?", could not be reached through the search tool.
- ``moodle_worksheet(grades, worksheet)``: Moodle's "Upload grading worksheet"
  (an assignment with the "Offline grading worksheet" feedback type). The
  roster is the worksheet from "Download grading worksheet": ``Identifier``
  ("Participant 12345"), ``Full name``, the identity fields (``Email
  address``...), ``Status``, ``Grade``, ``Maximum grade``, ``Grade can be
  changed``, ``Last modified (submission)``, ``Last modified (grade)``,
  ``Feedback comments``. Only ``Grade`` is written. Moodle's importer needs
  the ``Identifier``, ``Grade`` and ``Last modified (grade)`` columns, finds
  them by their headers in the site's language, strips "Participant " from the
  identifier and skips a grade changed in Moodle after the worksheet was
  downloaded: source, ``mod/assign/feedback/offline/importgradeslib.php``
  (``init``, ``next``) and the English strings ``recordid`` ("Identifier"),
  ``hiddenuser`` ("Participant "), ``lastmodifiedgrade`` ("Last modified
  (grade)") of ``mod/assign/lang/en/assign.php``. A site in another language
  heads them otherwise: pass the headers (``--identifier``, ``--grade``).
  A grade above the row's ``Maximum grade`` is left empty, with a line.
- ``moodle_gradebook(grades, worksheet, column)``: Moodle's gradebook import
  (Grades, Import, CSV file): one column mapped to a user field (id, ID number,
  email address or username) and one column per grade item, mapped in the
  import dialog. Written here as ``Email address`` (from the worksheet) and the
  grade column; source, ``grade/import/csv/classes/load_data.php``
  (``map_user_data_with_value``: ``userid``, ``useridnumber``, ``useremail``,
  ``username``). No moodledocs.org page on either import could be reached
  through the search tool; the sources above are Moodle's code.
"""

from __future__ import annotations

import argparse
import csv
import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path

SUBMISSION_SUFFIXES = (".ipynb", ".zip")
# What make grade and this tool write into the submissions folder: not submissions.
OUTPUTS = {
    "grades.csv",
    "feedback",
    "canvas-import.csv",
    "moodle-worksheet.csv",
    "moodle-gradebook.csv",
}
LAYOUTS = ("auto", "plain", "moodle", "canvas")

# Moodle: PREFIX_assignsubmission_PLUGIN[_FILENAME]; PREFIX is the full name with
# "_" turned into " ", then "_" and the participant id, so the name has no "_".
MOODLE = re.compile(
    r"^(?P<who>[^_]+)_(?P<id>\d+)_assignsubmission_(?P<plugin>[a-z]+)(?:_(?P<file>.*))?$"
)
# Canvas: lastfirst_[late_]USERID_SUBMISSIONID_FILENAME.
CANVAS = re.compile(r"^(?P<who>[^_]+)_(?:late_)?(?P<id>\d+)_(?P<submission>\d+)_(?P<file>.+)$")

CANVAS_STUDENT_COLUMNS = (
    "Student",
    "ID",
    "SIS User ID",
    "SIS Login ID",
    "Integration ID",
    "Root Account",
    "Section",
)
CANVAS_REQUIRED = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
CANVAS_ASSIGNMENT = re.compile(r"^.+ \((\d+)\)$")
MOODLE_IDENTIFIER = "Identifier"
MOODLE_GRADE = "Grade"
MOODLE_MODIFIED = "Last modified (grade)"
MOODLE_MAXIMUM = "Maximum grade"
MOODLE_FULLNAME = "Full name"
MOODLE_EMAIL = "Email address"


@dataclass(frozen=True)
class Student:
    """Who a submission belongs to, as the LMS's download names them."""

    lms: str  # "canvas" or "moodle"
    id: str  # Canvas user id, or Moodle participant id
    name: str  # Canvas's "lastfirst", or Moodle's full name


@dataclass(frozen=True)
class Found:
    """One submission: its unique name, its file, and its student (None in a plain folder)."""

    name: str
    path: Path
    student: Student | None


@dataclass(frozen=True)
class Result:
    """One row of grades.csv: a submission's checked points, and whether grading worked."""

    name: str
    total: float | None
    possible: float
    status: str  # "graded", or "error: REASON"


@dataclass(frozen=True)
class Grade:
    """What to export for one submission: points, or None with the reason."""

    name: str
    student: Student | None
    points: float | None
    why_empty: str | None = None


def _is_submission(path: Path) -> bool:
    return path.is_file() and path.suffix.lower() in SUBMISSION_SUFFIXES


def _entries(folder: Path) -> list[Path]:
    return sorted(
        p for p in folder.iterdir() if not p.name.startswith(".") and p.name not in OUTPUTS
    )


def _layout(entries: list[Path]) -> str:
    if any(MOODLE.match(p.name) for p in entries):
        return "moodle"
    if any(p.is_file() and CANVAS.match(p.name) for p in entries):
        return "canvas"
    return "plain"


def _not_a_submission(path: Path, folder: Path) -> str:
    return f"{path.relative_to(folder)}: not a notebook (.ipynb) or an exported zip; not graded"


def collect(folder: Path, layout: str = "auto") -> tuple[list[Found], list[str]]:
    """The submissions in ``folder`` and, for everything else in it, why it is not one."""
    folder = Path(folder)
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}, got {layout!r}")
    if not folder.is_dir():
        raise ValueError(f"not a folder: {str(folder)!r}")
    entries = _entries(folder)
    if layout == "auto":
        layout = _layout(entries)
    problems: list[str] = []
    # key (student id, or name in a plain folder) -> (student, paths)
    groups: dict[str, tuple[Student | None, str, list[Path]]] = {}

    def add(key: str, student: Student | None, name: str, path: Path) -> None:
        groups.setdefault(key, (student, name, []))[2].append(path)

    for entry in entries:
        if layout == "plain":
            if entry.is_dir():
                problems.append(
                    f"{entry.name}/: a folder, not read (a Moodle download's folders are named "
                    "'Full Name_12345_assignsubmission_file')"
                )
            elif _is_submission(entry):
                add(entry.stem, None, entry.stem, entry)
            else:
                problems.append(_not_a_submission(entry, folder))
            continue
        pattern = MOODLE if layout == "moodle" else CANVAS
        match = pattern.match(entry.name)
        if match is None or (layout == "canvas" and entry.is_dir()):
            kind = "Moodle" if layout == "moodle" else "Canvas"
            problems.append(
                f"{entry.name}{'/' if entry.is_dir() else ''}: not named as {kind}'s download "
                "names a student's work; not graded"
            )
            continue
        if layout == "moodle" and match["plugin"] != "file":
            problems.append(
                f"{entry.name}{'/' if entry.is_dir() else ''}: Moodle's "
                f"assignsubmission_{match['plugin']}, not a file submission; not graded"
            )
            continue
        who = match["who"]
        student = Student(layout, match["id"], who)
        name = f"{who}_{match['id']}"
        files = [entry]
        if entry.is_dir():
            files = sorted(
                p
                for p in entry.rglob("*")
                if p.is_file()
                and not any(part.startswith(".") for part in p.relative_to(entry).parts)
            )
        notebooks = [p for p in files if _is_submission(p)]
        for other in files:
            if other not in notebooks:
                problems.append(_not_a_submission(other, folder))
        if not notebooks:
            if entry.is_dir():
                problems.append(
                    f"{entry.name}/: no notebook (.ipynb) or zip in this folder; "
                    f"{who} ({layout} id {match['id']}) has no submission"
                )
            continue
        for notebook in notebooks:
            add(match["id"], student, name, notebook)

    found = []
    names: dict[str, list[str]] = {}
    for key, (student, name, paths) in groups.items():
        names.setdefault(name.casefold(), []).append(key)
        if len(paths) > 1:
            listed = ", ".join(str(p.relative_to(folder)) for p in paths)
            who = f"{student.name} ({student.lms} id {student.id})" if student else name
            problems.append(
                f"{who}: {len(paths)} submissions, none graded: {listed} "
                "(leave one in the folder and run again)"
            )
            continue
        found.append(Found(name, paths[0], student))
    # Two different students whose names differ only in case would share a feedback file.
    clashing = {key for keys in names.values() if len(keys) > 1 for key in keys}
    if clashing:
        for name_keys in names.values():
            if len(name_keys) > 1:
                paths = [str(p.relative_to(folder)) for k in name_keys for p in groups[k][2]]
                problems.append(
                    f"{', '.join(paths)}: these give the same name (its case aside), none graded"
                )
        found = [f for f in found if (f.student.id if f.student else f.name) not in clashing]
    return sorted(found, key=lambda f: f.name), problems


def _number(text: str, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{what}: {text!r} is not a number") from None
    if not math.isfinite(value):
        raise ValueError(f"{what}: {text!r} is not a finite number")
    return value


def read_results(path: Path) -> tuple[list[Result], list[str]]:
    """grades.csv's rows as Results, and warnings (no status column)."""
    with Path(path).open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        columns = reader.fieldnames or []
        missing = [c for c in ("submission", "total", "possible") if c not in columns]
        if missing:
            raise ValueError(f"{path}: no column {', '.join(missing)} (columns: {columns})")
        rows = list(reader)
    warnings = []
    if "status" not in columns:
        warnings.append(
            f"{path} has no status column: every row is taken as graded, so a zero from a "
            "submission the grader could not run is exported as a 0; check feedback/"
        )
    results = []
    for row in rows:
        status = (row.get("status") or "graded").strip()
        total = row["total"].strip()
        results.append(
            Result(
                name=row["submission"],
                total=_number(total, f"{row['submission']}'s total") if total else None,
                possible=_number(row["possible"], f"{row['submission']}'s possible"),
                status=status,
            )
        )
    return results, warnings


def read_marks(path: Path) -> tuple[list[str], dict[str, dict[str, str]]]:
    """The written marks: the question columns, and submission -> question -> cell."""
    with Path(path).open(newline="", encoding="utf-8-sig") as f:
        reader = csv.DictReader(f)
        columns = reader.fieldnames or []
        if "submission" not in columns:
            raise ValueError(f"{path}: the written marks need a 'submission' column, got {columns}")
        marks: dict[str, dict[str, str]] = {}
        for row in reader:
            name = row["submission"]
            if name in marks:
                raise ValueError(f"{path}: two rows for {name!r}")
            marks[name] = {q: (row[q] or "").strip() for q in columns if q != "submission"}
    return [c for c in columns if c != "submission"], marks


def final_grades(
    results: list[Result],
    found: list[Found],
    marks: tuple[list[str], dict[str, dict[str, str]]] | None = None,
) -> tuple[list[Grade], list[str]]:
    """Each graded submission's points (checked total plus written marks) and why
    the others get none; with lines for what does not match up."""
    by_name = {f.name: f for f in found}
    questions, written = marks if marks is not None else ([], {})
    notes = []
    grades = []
    for result in results:
        submission = by_name.get(result.name)
        student = submission.student if submission else None
        if submission is None:
            notes.append(
                f"{result.name}: in grades.csv but not among the submissions; not exported"
            )
            continue
        why = None
        points = None
        if result.status != "graded":
            why = f"not graded ({result.status})"
        elif result.total is None:
            why = "grades.csv has no total"
        else:
            points = result.total
            if marks is not None:
                row = written.get(result.name)
                if row is None:
                    why = "no row in the written marks"
                else:
                    empty = [q for q in questions if not row[q]]
                    try:
                        added = sum(
                            _number(row[q], f"{result.name}'s {q}") for q in questions if row[q]
                        )
                    except ValueError as err:
                        why = f"written marks: {err}"
                    else:
                        if empty:
                            why = f"written marks missing for {', '.join(empty)}"
                        else:
                            points += added
        if why is not None:
            points = None
        grades.append(Grade(result.name, student, points, why))
    graded = {r.name for r in results}
    for name in sorted(set(written) - graded):
        notes.append(f"{name}: in the written marks but not in grades.csv; not used")
    for f in found:
        if f.name not in graded:
            notes.append(f"{f.name}: a submission with no row in grades.csv (not graded yet?)")
    return grades, notes


def read_roster(path: Path) -> tuple[list[str], list[list[str]]]:
    """A CSV's header and rows, as the LMS wrote it (a byte-order mark allowed)."""
    with Path(path).open(newline="", encoding="utf-8-sig") as f:
        rows = list(csv.reader(f))
    if not rows:
        raise ValueError(f"{path}: empty")
    return rows[0], rows[1:]


def _points(value: float) -> str:
    return f"{value:.2f}"


def _squash(name: str) -> str:
    return "".join(c for c in name.casefold() if c.isalnum())


def _fill(
    grades: list[Grade],
    lms: str,
    roster_ids: dict[str, int],
    set_cell,
    label: str,
    roster_name,
) -> list[str]:
    """Put each grade into its roster row (by the LMS id); lines for the rest."""
    notes = []
    written = 0
    for grade in grades:
        if grade.student is None or grade.student.lms != lms:
            where = "a plain folder" if grade.student is None else f"a {grade.student.lms} download"
            notes.append(
                f"{grade.name}: from {where}, with no {lms} identity; not exported "
                f"(grade {lms}'s own download)"
            )
            continue
        index = roster_ids.get(grade.student.id)
        if index is None:
            notes.append(
                f"{grade.name}: {lms} id {grade.student.id} is not in the {label}; not exported"
            )
            continue
        listed = roster_name(index)
        if listed is not None and _squash(listed) != _squash(grade.student.name):
            notes.append(
                f"{grade.name}: the {label} names {lms} id {grade.student.id} {listed!r}, the "
                f"download {grade.student.name!r}; matched by the id"
            )
        if grade.points is None:
            notes.append(f"{grade.name}: grade left empty, not 0: {grade.why_empty}")
            continue
        problem = set_cell(index, grade)
        if problem:
            notes.append(f"{grade.name}: grade left empty: {problem}")
        else:
            written += 1
    notes.append(f"{written} grades written")
    return notes


def canvas_import(
    grades: list[Grade], roster: tuple[list[str], list[list[str]]], assignment: str | None = None
) -> tuple[list[str], list[list[str]], list[str]]:
    """Canvas's gradebook import: the export's student columns and one assignment column.
    Returns the header, the rows and lines for stdout."""
    header, rows = roster
    missing = [c for c in CANVAS_REQUIRED if c not in header]
    if missing:
        raise ValueError(
            f"the roster is not a Canvas gradebook export: no column {', '.join(missing)} "
            "(Grades, Export, Export Entire Gradebook)"
        )
    candidates = [c for c in header if CANVAS_ASSIGNMENT.match(c)]
    if assignment is None:
        if len(candidates) != 1:
            raise ValueError(
                "name the assignment's column (--column), one of: " + "; ".join(candidates)
            )
        assignment = candidates[0]
    if assignment not in header:
        raise ValueError(
            f"no column {assignment!r} in the roster; its assignment columns: "
            + "; ".join(candidates)
        )
    keep = [header.index(c) for c in CANVAS_STUDENT_COLUMNS if c in header]
    column = header.index(assignment)
    id_column = header.index("ID")
    out = [[row[i] if i < len(row) else "" for i in [*keep, column]] for row in rows]
    ids = {}
    possible = None
    for index, row in enumerate(rows):
        student = row[0].strip() if row else ""
        if student == "Points Possible":
            possible = row[column] if column < len(row) else None
            continue
        if id_column < len(row) and row[id_column].strip():
            ids[row[id_column].strip()] = index

    def set_cell(index, grade):
        out[index][-1] = _points(grade.points)

    notes = _fill(grades, "canvas", ids, set_cell, "roster", lambda i: rows[i][0])
    notes += _unsubmitted(ids, grades, "canvas", lambda i: rows[i][0])
    if possible is not None:
        notes.append(f"{assignment}: Canvas counts it out of {possible.strip()} points")
    return [header[i] for i in [*keep, column]], out, notes


def _unsubmitted(ids: dict[str, int], grades: list[Grade], lms: str, who) -> list[str]:
    having = {g.student.id for g in grades if g.student is not None and g.student.lms == lms}
    missing = [who(i) for student, i in ids.items() if student not in having]
    if not missing:
        return []
    return [
        f"{len(missing)} in the roster with no graded submission, left as they were: "
        + "; ".join(missing)
    ]


def _column(header: list[str], name: str, what: str) -> int:
    if name not in header:
        raise ValueError(f"the worksheet has no {what} column {name!r} (columns: {header})")
    return header.index(name)


def _fullname(rows: list[list[str]], column: int | None):
    """The worksheet's full name of a row, or None's stand-in: no check without the column."""
    if column is None:
        return lambda i: None
    return lambda i: rows[i][column]


def _worksheet_ids(rows: list[list[str]], identifier: int) -> dict[str, int]:
    ids = {}
    for index, row in enumerate(rows):
        match = re.search(r"(\d+)\s*$", row[identifier]) if identifier < len(row) else None
        if match:
            ids[match[1]] = index
    return ids


def moodle_worksheet(
    grades: list[Grade],
    worksheet: tuple[list[str], list[list[str]]],
    identifier: str = MOODLE_IDENTIFIER,
    grade_column: str = MOODLE_GRADE,
) -> tuple[list[str], list[list[str]], list[str]]:
    """Moodle's grading worksheet with its Grade column filled in; lines for stdout."""
    header, rows = worksheet
    id_index = _column(header, identifier, "identifier")
    grade_index = _column(header, grade_column, "grade")
    if MOODLE_MODIFIED not in header and identifier == MOODLE_IDENTIFIER:
        raise ValueError(
            f"the worksheet has no {MOODLE_MODIFIED!r} column, without which Moodle refuses it: "
            "use the file from 'Download grading worksheet' as it is"
        )
    maximum = header.index(MOODLE_MAXIMUM) if MOODLE_MAXIMUM in header else None
    out = [list(row) + [""] * (len(header) - len(row)) for row in rows]
    ids = _worksheet_ids(rows, id_index)

    def set_cell(index, grade):
        if maximum is not None and out[index][maximum].strip():
            top = _number(out[index][maximum].replace(",", "."), "Maximum grade")
            if grade.points > top + 1e-9:
                return f"{_points(grade.points)} is above the worksheet's maximum grade {top:g}"
        out[index][grade_index] = _points(grade.points)
        return None

    name = header.index(MOODLE_FULLNAME) if MOODLE_FULLNAME in header else None
    notes = _fill(grades, "moodle", ids, set_cell, "worksheet", _fullname(rows, name))
    notes += _unsubmitted(
        ids, grades, "moodle", lambda i: rows[i][id_index if name is None else name]
    )
    return header, out, notes


def moodle_gradebook(
    grades: list[Grade],
    worksheet: tuple[list[str], list[list[str]]],
    column: str,
    identifier: str = MOODLE_IDENTIFIER,
    email: str = MOODLE_EMAIL,
) -> tuple[list[str], list[list[str]], list[str]]:
    """Moodle's gradebook CSV import: Email address and one grade column, the
    students and their emails taken from the assignment's grading worksheet."""
    header, rows = worksheet
    id_index = _column(header, identifier, "identifier")
    email_index = _column(header, email, "email")
    ids = _worksheet_ids(rows, id_index)
    out = [[rows[i][email_index], ""] for i in ids.values()]
    position = {row_index: k for k, row_index in enumerate(ids.values())}

    def set_cell(index, grade):
        out[position[index]][1] = _points(grade.points)

    name = header.index(MOODLE_FULLNAME) if MOODLE_FULLNAME in header else None
    notes = _fill(grades, "moodle", ids, set_cell, "worksheet", _fullname(rows, name))
    notes += _unsubmitted(ids, grades, "moodle", lambda i: rows[i][email_index])
    # A row with no grade would clear nothing, but only rows with grades are needed.
    out = [row for row in out if row[1]]
    return [email, column], out, notes


def write_csv(path: Path, header: list[str], rows: list[list[str]]) -> None:
    with Path(path).open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    listing = commands.add_parser("collect", help="list the submissions in a folder")
    listing.add_argument("folder", type=Path)
    listing.add_argument("--layout", choices=LAYOUTS, default="auto")
    for name in ("canvas", "moodle", "moodle-gradebook"):
        command = commands.add_parser(name)
        command.add_argument("folder", type=Path)
        command.add_argument("--roster", type=Path, required=True)
        command.add_argument("--written", type=Path)
        command.add_argument("--out", type=Path)
        command.add_argument("--layout", choices=LAYOUTS, default="auto")
        if name != "moodle":
            # Canvas: the assignment's column in the export; Moodle's gradebook: any header.
            command.add_argument("--column", default=None if name == "canvas" else "Grade")
        if name != "canvas":
            command.add_argument("--identifier", default=MOODLE_IDENTIFIER)
        if name == "moodle":
            command.add_argument("--grade", default=MOODLE_GRADE)
        if name == "moodle-gradebook":
            command.add_argument("--email", default=MOODLE_EMAIL)
    args = parser.parse_args(argv)
    try:
        found, problems = collect(args.folder, args.layout)
        print(f"{len(found)} submissions in {args.folder}")
        for line in problems:
            print(f"  {line}")
        if args.command == "collect":
            for f in found:
                who = f" ({f.student.lms} id {f.student.id}, {f.student.name})" if f.student else ""
                print(f"  {f.name}: {f.path.relative_to(args.folder)}{who}")
            return 1 if problems else 0
        results, warnings = read_results(args.folder / "grades.csv")
        marks = read_marks(args.written) if args.written else None
        grades, notes = final_grades(results, found, marks)
        roster = read_roster(args.roster)
        if args.command == "canvas":
            header, rows, more = canvas_import(grades, roster, args.column)
            out = args.out or args.folder / "canvas-import.csv"
        elif args.command == "moodle":
            header, rows, more = moodle_worksheet(grades, roster, args.identifier, args.grade)
            out = args.out or args.folder / "moodle-worksheet.csv"
        else:
            header, rows, more = moodle_gradebook(
                grades, roster, args.column, args.identifier, args.email
            )
            out = args.out or args.folder / "moodle-gradebook.csv"
    except ValueError as err:
        raise SystemExit(f"error: {err}") from None
    for line in [*warnings, *notes, *more]:
        print(line)
    write_csv(out, header, rows)
    print(f"{len(grades)} rows of grades.csv: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
