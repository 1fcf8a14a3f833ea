"""One reader of submissions for both graders (attnbook.grading.submission):
``make grade`` reads one file per student, the Gradescope autograder a folder,
and both accept or refuse a file with the same words."""

import zipfile

import nbformat
from nbformat.v4 import new_code_cell, new_notebook

from attnbook.grading import submission


def notebook_file(path):
    nbformat.write(new_notebook(cells=[new_code_cell("x = 1")]), path)
    return path


def read(path, tmp_path):
    scratch = tmp_path / "scratch"
    scratch.mkdir(exist_ok=True)
    return submission.notebook_from(path, scratch)


def test_a_notebook_and_an_exported_zip_are_read(tmp_path):
    good = notebook_file(tmp_path / "good.ipynb")
    found, why = read(good, tmp_path)
    assert why == "" and found.name == "submission.ipynb" and found.read_text() == good.read_text()
    with zipfile.ZipFile(tmp_path / "export.zip", "w") as archive:
        archive.write(good, "hw/good.ipynb")
        archive.write(good, "__MACOSX/hw/._good.ipynb")  # macOS's copy is not a second one
        archive.write(good, "hw/.ipynb_checkpoints/good-checkpoint.ipynb")
        archive.writestr("../../escape/evil.ipynb", "[]")  # ignored, never extracted
    found, why = read(tmp_path / "export.zip", tmp_path)
    assert why == "" and found.read_text() == good.read_text()
    assert not (tmp_path.parent / "escape").exists()


def test_what_is_not_a_notebook_is_named(tmp_path):
    good = notebook_file(tmp_path / "good.ipynb")
    (tmp_path / "answers.txt").write_text("see my e-mail")
    (tmp_path / "broken.ipynb").write_text("{not json")
    (tmp_path / "empty.ipynb").write_text("")
    (tmp_path / "list.ipynb").write_text("[1, 2]")
    (tmp_path / "fake.zip").write_text("not a zip")
    with zipfile.ZipFile(tmp_path / "empty.zip", "w") as archive:
        archive.writestr("notes.md", "nothing")
    with zipfile.ZipFile(tmp_path / "two.zip", "w") as archive:
        archive.write(good, "a.ipynb")
        archive.write(good, "b/b.ipynb")
    expected = {
        "answers.txt": "not a notebook: answers.txt is neither a .ipynb nor an exported .zip",
        "broken.ipynb": "not a notebook: broken.ipynb: the notebook file is not JSON",
        "empty.ipynb": "the notebook file is empty",
        "list.ipynb": "JSON but not a Jupyter notebook",
        "fake.zip": "not a notebook: fake.zip is not a zip file",
        "empty.zip": "not a notebook: the zip empty.zip holds no .ipynb",
        "two.zip": "the zip two.zip holds 2 notebooks (a.ipynb, b/b.ipynb): it must hold one",
    }
    for name, words in expected.items():
        found, why = read(tmp_path / name, tmp_path)
        assert found is None and words in why, (name, why)


def test_a_notebook_too_large_is_refused_before_it_is_read(tmp_path, monkeypatch):
    good = notebook_file(tmp_path / "good.ipynb")
    with zipfile.ZipFile(tmp_path / "export.zip", "w") as archive:
        archive.write(good, "good.ipynb")
    monkeypatch.setattr(submission, "MAX_NOTEBOOK", good.stat().st_size - 1)
    for name in ("good.ipynb", "export.zip"):
        found, why = read(tmp_path / name, tmp_path)
        assert found is None and "good.ipynb is larger than" in why, (name, why)


def test_a_folder_holds_one_notebook_or_one_zip(tmp_path):
    folder = tmp_path / "submission"
    (folder / "__MACOSX").mkdir(parents=True)
    notebook_file(folder / "hw.ipynb")
    notebook_file(folder / "__MACOSX" / "hw.ipynb")
    notebook_file(folder / ".hidden.ipynb")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    found, why = submission.notebook_in(folder, scratch)
    assert why == "" and found is not None
    notebook_file(folder / "other.ipynb")
    found, why = submission.notebook_in(folder, scratch)
    assert found is None and "holds 2 notebooks (hw.ipynb, other.ipynb)" in why
