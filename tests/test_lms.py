"""tools/lms.py: submissions read from an LMS's download, and grades written in
the files that Canvas's and Moodle's importers take as they are."""

from __future__ import annotations

import csv
import json

import pytest

from tools import lms

NOTEBOOK = json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})

CANVAS_HEADER = [
    "Student",
    "ID",
    "SIS User ID",
    "SIS Login ID",
    "Section",
    "Masked softmax (123)",
    "Attention pooling (124)",
    "Current Score",
]
WORKSHEET_HEADER = [
    "Identifier",
    "Full name",
    "Email address",
    "Status",
    "Grade",
    "Maximum grade",
    "Grade can be changed",
    "Last modified (submission)",
    "Last modified (grade)",
    "Feedback comments",
]


def touch(path, text=NOTEBOOK):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def write_rows(path, header, rows):
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def read_rows(path):
    with path.open(newline="") as f:
        return list(csv.reader(f))


def names(found):
    return [f.name for f in found]


def test_a_plain_folder_is_todays_layout(tmp_path):
    touch(tmp_path / "s01.ipynb")
    touch(tmp_path / "s02.zip", "zip")
    touch(tmp_path / "notes.txt", "see my e-mail")
    touch(tmp_path / "extra" / "s03.ipynb")
    touch(tmp_path / ".DS_Store", "")
    touch(tmp_path / "grades.csv", "submission,total,possible\n")
    touch(tmp_path / "feedback" / "s01.txt", "")
    found, problems = lms.collect(tmp_path)
    assert names(found) == ["s01", "s02"]
    assert [f.path.name for f in found] == ["s01.ipynb", "s02.zip"]
    assert all(f.student is None for f in found)
    assert len(problems) == 2
    assert problems[0].startswith("extra/: a folder, not read")
    assert problems[1].startswith("notes.txt: not a notebook")


def test_two_files_with_one_name_are_refused_both(tmp_path):
    touch(tmp_path / "x.ipynb")
    touch(tmp_path / "x.zip", "zip")
    touch(tmp_path / "Ada.ipynb")
    touch(tmp_path / "ada.ipynb")
    touch(tmp_path / "ok.ipynb")
    found, problems = lms.collect(tmp_path)
    assert names(found) == ["ok"]
    assert any("x: 2 submissions, none graded: x.ipynb, x.zip" in p for p in problems)
    assert any("Ada.ipynb, ada.ipynb: these give the same name" in p for p in problems)


def test_moodles_folder_per_student_download(tmp_path):
    touch(tmp_path / "Jane Smith_101_assignsubmission_file" / "masked-softmax.ipynb")
    touch(tmp_path / "Jane Smith_101_assignsubmission_file" / ".ipynb_checkpoints" / "m.ipynb")
    # Older Moodles end the folder's name with "_"; subfolders are kept.
    touch(tmp_path / "Ali Khan_102_assignsubmission_file_" / "work" / "export.zip", "zip")
    touch(tmp_path / "Bo Li_103_assignsubmission_file" / "answers.pdf", "pdf")
    touch(tmp_path / "Cy Ng_104_assignsubmission_file" / "a.ipynb")
    touch(tmp_path / "Cy Ng_104_assignsubmission_file" / "b.ipynb")
    touch(tmp_path / "Jane Smith_101_assignsubmission_onlinetext" / "onlinetext.html", "<p>")
    touch(tmp_path / "stray.ipynb")
    found, problems = lms.collect(tmp_path)
    assert names(found) == ["Ali Khan_102", "Jane Smith_101"]
    assert found[1].student == lms.Student("moodle", "101", "Jane Smith")
    assert found[1].path.name == "masked-softmax.ipynb"
    assert found[0].student == lms.Student("moodle", "102", "Ali Khan")
    text = "\n".join(problems)
    assert "Bo Li_103_assignsubmission_file/answers.pdf: not a notebook" in text
    assert "Bo Li_103_assignsubmission_file/: no notebook (.ipynb) or zip in this folder" in text
    assert (
        "Cy Ng (moodle id 104): 2 submissions, none graded: "
        "Cy Ng_104_assignsubmission_file/a.ipynb, Cy Ng_104_assignsubmission_file/b.ipynb" in text
    )
    assert "assignsubmission_onlinetext, not a file submission" in text
    assert "stray.ipynb: not named as Moodle's download" in text
    assert len(problems) == 5


def test_moodles_download_without_folders(tmp_path):
    touch(tmp_path / "Jane Smith_101_assignsubmission_file_masked-softmax.ipynb")
    touch(tmp_path / "Jane Smith_101_assignsubmission_file_masked-softmax_2.zip", "zip")
    touch(tmp_path / "Bo Li_103_assignsubmission_file_my_work.ipynb")
    touch(tmp_path / "Bo Li_103_assignsubmission_file_notes.txt", "notes")
    found, problems = lms.collect(tmp_path)
    assert names(found) == ["Bo Li_103"]
    assert found[0].student == lms.Student("moodle", "103", "Bo Li")
    assert found[0].path.name == "Bo Li_103_assignsubmission_file_my_work.ipynb"
    assert len(problems) == 2
    assert "Jane Smith (moodle id 101): 2 submissions, none graded" in problems[1]
    assert "Bo Li_103_assignsubmission_file_notes.txt: not a notebook" in problems[0]


def test_canvas_download(tmp_path):
    touch(tmp_path / "smithjane_4567_99001_masked-softmax.ipynb")
    touch(tmp_path / "khanali_late_4568_99002_masked-softmax-1.ipynb")
    touch(tmp_path / "ngcy_4569_99003_a.ipynb")
    touch(tmp_path / "ngcy_4569_99003_b.zip", "zip")
    touch(tmp_path / "libo_4570_99004_essay.pdf", "pdf")
    touch(tmp_path / "README.txt", "")
    found, problems = lms.collect(tmp_path)
    assert names(found) == ["khanali_4568", "smithjane_4567"]
    assert found[0].student == lms.Student("canvas", "4568", "khanali")
    assert found[1].path.name == "smithjane_4567_99001_masked-softmax.ipynb"
    text = "\n".join(problems)
    assert "README.txt: not named as Canvas's download" in text
    assert "libo_4570_99004_essay.pdf: not a notebook" in text
    assert (
        "ngcy (canvas id 4569): 2 submissions, none graded: ngcy_4569_99003_a.ipynb, ngcy_4569_99003_b.zip"
        in text
    )
    assert len(problems) == 3


def test_a_layout_can_be_named(tmp_path):
    touch(tmp_path / "smithjane_4567_99001_masked-softmax.ipynb")
    found, _ = lms.collect(tmp_path, layout="plain")
    assert names(found) == ["smithjane_4567_99001_masked-softmax"]
    with pytest.raises(ValueError, match="layout must be one of"):
        lms.collect(tmp_path, layout="blackboard")


def results(*rows):
    return [lms.Result(name, total, 4, status) for name, total, status in rows]


def canvas_folder(tmp_path):
    folder = tmp_path / "subs"
    touch(folder / "smithjane_4567_99001_masked-softmax.ipynb")
    touch(folder / "khanali_late_4568_99002_masked-softmax.ipynb")
    touch(folder / "stranger_9999_99009_masked-softmax.ipynb")
    return lms.collect(folder)[0]


def canvas_roster(tmp_path):
    return write_rows(
        tmp_path / "gradebook.csv",
        CANVAS_HEADER,
        [
            ["    Points Possible", "", "", "", "", "8.00", "10.00", "(read only)"],
            ["Smith, Jane", "4567", "s1", "jane@uni.example", "A", "", "7", "70"],
            ["Khan, Ali", "4568", "s2", "ali@uni.example", "A", "", "9", "90"],
            ["Li, Bo", "4570", "s3", "bo@uni.example", "B", "5.00", "", "50"],
        ],
    )


def test_canvas_import_has_the_documented_columns_and_leaves_errors_empty(tmp_path):
    found = canvas_folder(tmp_path)
    grades, notes = lms.final_grades(
        results(
            ("smithjane_4567", 3.5, "graded"),
            ("khanali_4568", 0.0, "error: Kernel didn't respond in 60 seconds"),
            ("stranger_9999", 4.0, "graded"),
        ),
        found,
    )
    assert notes == []
    roster = lms.read_roster(canvas_roster(tmp_path))
    header, rows, notes = lms.canvas_import(grades, roster, "Masked softmax (123)")
    assert header == [*lms.CANVAS_REQUIRED, "Masked softmax (123)"]
    assert header == [
        "Student",
        "ID",
        "SIS User ID",
        "SIS Login ID",
        "Section",
        "Masked softmax (123)",
    ]
    assert rows == [
        ["    Points Possible", "", "", "", "", "8.00"],
        ["Smith, Jane", "4567", "s1", "jane@uni.example", "A", "3.50"],
        ["Khan, Ali", "4568", "s2", "ali@uni.example", "A", ""],
        ["Li, Bo", "4570", "s3", "bo@uni.example", "B", "5.00"],
    ]
    text = "\n".join(notes)
    assert "khanali_4568: grade left empty, not 0: not graded (error: Kernel didn't respond" in text
    assert "stranger_9999: canvas id 9999 is not in the roster; not exported" in text
    assert "1 in the roster with no graded submission, left as they were: Li, Bo" in text
    assert "Masked softmax (123): Canvas counts it out of 8.00 points" in text
    assert "1 grades written" in text
    # Matched by id; a name that disagrees is said.
    assert "the roster names" not in text


def test_canvas_import_needs_its_export_and_one_assignment(tmp_path):
    roster = lms.read_roster(canvas_roster(tmp_path))
    with pytest.raises(ValueError, match="name the assignment's column"):
        lms.canvas_import([], roster)
    with pytest.raises(ValueError, match="no column 'Masked softmax'"):
        lms.canvas_import([], roster, "Masked softmax")
    bare = (["submission", "total"], [["s1", "3"]])
    with pytest.raises(ValueError, match="not a Canvas gradebook export: no column Student, ID"):
        lms.canvas_import([], bare, "total")


def moodle_folder(tmp_path):
    folder = tmp_path / "subs"
    touch(folder / "Jane Smith_101_assignsubmission_file" / "ms.ipynb")
    touch(folder / "Ali Khan_102_assignsubmission_file" / "ms.ipynb")
    touch(folder / "Bo Li_103_assignsubmission_file" / "ms.ipynb")
    return folder


def worksheet(tmp_path):
    common = [
        "",
        "Submitted for grading",
        "",
        "8.00",
        "Yes",
        "Friday, 27 November 2026, 10:00 AM",
        "-",
        "",
    ]
    rows = []
    for ident, name, email in [
        ("Participant 101", "Jane Smith", "jane@uni.example"),
        ("Participant 102", "Ali Khan", "ali@uni.example"),
        ("Participant 103", "Bo Li", "bo@uni.example"),
        ("Participant 104", "Cy Ng", "cy@uni.example"),
    ]:
        row = [ident, name, *common]
        row[2] = email
        rows.append(row)
    return write_rows(tmp_path / "worksheet.csv", WORKSHEET_HEADER, rows)


def test_moodle_worksheet_fills_the_grade_column_only(tmp_path):
    found, _ = lms.collect(moodle_folder(tmp_path))
    grades, _ = lms.final_grades(
        results(
            ("Jane Smith_101", 3.25, "graded"),
            ("Ali Khan_102", 0.0, "error: DeadKernelError"),
            ("Bo Li_103", 9.0, "graded"),
        ),
        found,
    )
    sheet = lms.read_roster(worksheet(tmp_path))
    header, rows, notes = lms.moodle_worksheet(grades, sheet)
    assert header == WORKSHEET_HEADER
    for column in ("Identifier", "Grade", "Last modified (grade)"):
        assert column in header  # what Moodle's importer looks up
    grade = header.index("Grade")
    assert [row[grade] for row in rows] == ["3.25", "", "", ""]
    unchanged = [i for i in range(len(header)) if i != grade]
    assert [[r[i] for i in unchanged] for r in rows] == [
        [r[i] for i in unchanged] for r in sheet[1]
    ]
    text = "\n".join(notes)
    assert "Ali Khan_102: grade left empty, not 0: not graded (error: DeadKernelError)" in text
    assert "Bo Li_103: grade left empty: 9.00 is above the worksheet's maximum grade 8" in text
    assert "left as they were: Cy Ng" in text
    assert "1 grades written" in text


def test_moodle_worksheet_checks_names_and_columns(tmp_path):
    found, _ = lms.collect(moodle_folder(tmp_path))
    grades, _ = lms.final_grades(results(("Jane Smith_101", 3.0, "graded")), found)
    header, rows = lms.read_roster(worksheet(tmp_path))
    rows[0][1] = "Janet Smyth"
    _, out, notes = lms.moodle_worksheet(grades, (header, rows))
    assert out[0][4] == "3.00"
    assert (
        "Jane Smith_101: the worksheet names moodle id 101 'Janet Smyth', the download "
        "'Jane Smith'; matched by the id" in notes
    )
    without = [h for h in header if h != "Last modified (grade)"]
    with pytest.raises(ValueError, match="no 'Last modified \\(grade\\)' column"):
        lms.moodle_worksheet(grades, (without, []))
    # A Canvas download's grades have no Moodle identity.
    canvas = [lms.Grade("smithjane_4567", lms.Student("canvas", "4567", "smithjane"), 3.0)]
    _, _, notes = lms.moodle_worksheet(canvas, (header, rows))
    assert "smithjane_4567: from a canvas download, with no moodle identity" in notes[0]


def test_moodle_gradebook_import_is_email_and_grade(tmp_path):
    found, _ = lms.collect(moodle_folder(tmp_path))
    grades, _ = lms.final_grades(
        results(
            ("Jane Smith_101", 3.25, "graded"),
            ("Ali Khan_102", 0.0, "error: DeadKernelError"),
            ("Bo Li_103", 4.0, "graded"),
        ),
        found,
    )
    header, rows, notes = lms.moodle_gradebook(
        grades, lms.read_roster(worksheet(tmp_path)), "Masked softmax"
    )
    assert header == ["Email address", "Masked softmax"]
    assert rows == [["jane@uni.example", "3.25"], ["bo@uni.example", "4.00"]]
    assert "Ali Khan_102: grade left empty, not 0: not graded (error: DeadKernelError)" in notes


def test_written_marks_are_added_and_missing_ones_leave_the_grade_empty(tmp_path):
    found, _ = lms.collect(moodle_folder(tmp_path))
    marks_file = write_rows(
        tmp_path / "written.csv",
        ["submission", "masking", "padding"],
        [
            ["Jane Smith_101", "2", "1.5"],
            ["Ali Khan_102", "2", ""],
            ["Bo Li_103", "two", "1"],
            ["Nobody_999", "1", "1"],
        ],
    )
    marks = lms.read_marks(marks_file)
    assert marks[0] == ["masking", "padding"]
    grades, notes = lms.final_grades(
        results(
            ("Jane Smith_101", 3.25, "graded"),
            ("Ali Khan_102", 4.0, "graded"),
            ("Bo Li_103", 4.0, "graded"),
        ),
        found,
        marks,
    )
    by_name = {g.name: g for g in grades}
    assert by_name["Jane Smith_101"].points == pytest.approx(6.75)
    assert by_name["Ali Khan_102"].points is None
    assert by_name["Ali Khan_102"].why_empty == "written marks missing for padding"
    assert by_name["Bo Li_103"].points is None
    assert "'two' is not a number" in by_name["Bo Li_103"].why_empty
    assert notes == ["Nobody_999: in the written marks but not in grades.csv; not used"]


def test_grades_csv_with_and_without_status(tmp_path):
    plain = write_rows(
        tmp_path / "old.csv",
        ["submission", "causal_lengths", "masking", "total", "possible"],
        [["s1", "1.00", "", "1.00", "1"]],
    )
    rows, warnings = lms.read_results(plain)
    assert rows == [lms.Result("s1", 1.0, 1.0, "graded")]
    assert "no status column" in warnings[0]
    new = write_rows(
        tmp_path / "new.csv",
        ["submission", "total", "possible", "status"],
        [["s1", "1.00", "4", "graded"], ["s2", "", "4", "error: DeadKernelError"]],
    )
    rows, warnings = lms.read_results(new)
    assert warnings == []
    assert rows[1] == lms.Result("s2", None, 4.0, "error: DeadKernelError")


def test_the_command_writes_the_worksheet_and_says_what_it_left_empty(tmp_path, capsys):
    folder = moodle_folder(tmp_path)
    touch(folder / "feedback" / "Jane Smith_101.txt", "")
    write_rows(
        folder / "grades.csv",
        ["submission", "causal_lengths", "total", "possible", "status"],
        [
            ["Ali Khan_102", "0.00", "0.00", "4", "error: Kernel didn't respond in 60 seconds"],
            ["Bo Li_103", "4.00", "4.00", "4", "graded"],
            ["Jane Smith_101", "3.00", "3.00", "4", "graded"],
        ],
    )
    marks = write_rows(
        tmp_path / "written.csv",
        ["submission", "masking"],
        [["Ali Khan_102", "1"], ["Bo Li_103", "3"], ["Jane Smith_101", "2.5"]],
    )
    assert (
        lms.main(
            ["moodle", str(folder), "--roster", str(worksheet(tmp_path)), "--written", str(marks)]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "3 submissions in" in out
    assert "Ali Khan_102: grade left empty, not 0: not graded (error: Kernel didn't" in out
    rows = read_rows(folder / "moodle-worksheet.csv")
    assert rows[0] == WORKSHEET_HEADER
    assert [row[4] for row in rows[1:]] == ["5.50", "", "7.00", ""]
    # Its own output is not a submission the next time.
    found, problems = lms.collect(folder)
    assert names(found) == ["Ali Khan_102", "Bo Li_103", "Jane Smith_101"]
    assert problems == []


def test_the_collect_command_fails_when_something_is_not_a_submission(tmp_path, capsys):
    touch(tmp_path / "Jane Smith_101_assignsubmission_file" / "ms.ipynb")
    assert lms.main(["collect", str(tmp_path)]) == 0
    touch(tmp_path / "Bo Li_103_assignsubmission_file" / "answers.pdf", "pdf")
    assert lms.main(["collect", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "  Bo Li_103_assignsubmission_file/answers.pdf: not a notebook" in out
    assert (
        "Jane Smith_101: Jane Smith_101_assignsubmission_file/ms.ipynb (moodle id 101, Jane Smith)"
        in out
    )
