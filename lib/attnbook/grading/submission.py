"""A submission as the graders read it: one notebook, from a ``.ipynb`` or from
the zip that an assignment's last cell exports.

``make grade`` (``tools/grade.py``, one file per student) and the Gradescope
autograder (:mod:`attnbook.grading.gradescope`, a folder per student) read
submissions with these functions, so the same file is accepted or refused, with
the same words, by both. A zip's notebook is read by name, never extracted to a
path the zip chooses; macOS's ``__MACOSX`` copies, hidden files and Jupyter's
checkpoints are not the student's notebook; a notebook over
:data:`MAX_NOTEBOOK` bytes is refused before it is read.
"""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

#: A submitted notebook larger than this is refused (bytes).
MAX_NOTEBOOK = 50 * 2**20
_NOT_THE_STUDENTS = ("__MACOSX", ".ipynb_checkpoints")


def _hidden(parts) -> bool:
    return any(p.startswith(".") or p in _NOT_THE_STUDENTS for p in parts)


def visible_files(folder: Path) -> list[Path]:
    """The files under ``folder``, sorted, without hidden files, ``__MACOSX`` and checkpoints."""
    return [
        path
        for path in sorted(folder.rglob("*"))
        if path.is_file() and not _hidden(path.relative_to(folder).parts)
    ]


def not_a_notebook(path: Path) -> str | None:
    """Why the file ``path`` is not a Jupyter notebook that can be run, or None."""
    try:
        notebook = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        what = "empty" if path.stat().st_size == 0 else f"not JSON ({type(err).__name__})"
        return f"the notebook file is {what}: it cannot be read as a notebook"
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        return "the file is JSON but not a Jupyter notebook (it has no list of cells)"
    return None


def _too_large(name: str, size: int) -> str | None:
    if size > MAX_NOTEBOOK:
        return f"not graded: {name} is larger than {MAX_NOTEBOOK // 2**20} MiB"
    return None


def notebook_from(path: Path, scratch: Path) -> tuple[Path | None, str]:
    """The notebook of one submitted file, ``path`` (a ``.ipynb`` or an exported
    ``.zip``), as ``scratch/submission.ipynb``; or None and why it cannot be graded."""
    target = scratch / "submission.ipynb"
    if path.suffix == ".ipynb":
        why = _too_large(path.name, path.stat().st_size)
        if why:
            return None, why
        shutil.copyfile(path, target)
    elif path.suffix == ".zip":
        try:
            with zipfile.ZipFile(path) as archive:
                members = [
                    m
                    for m in archive.infolist()
                    if m.filename.endswith(".ipynb") and not _hidden(m.filename.split("/"))
                ]
                if not members:
                    return None, f"not a notebook: the zip {path.name} holds no .ipynb"
                if len(members) > 1:
                    names = ", ".join(m.filename for m in members[:4])
                    return None, (
                        f"the zip {path.name} holds {len(members)} notebooks ({names}): "
                        "it must hold one"
                    )
                why = _too_large(members[0].filename, members[0].file_size)
                if why:
                    return None, why
                target.write_bytes(archive.read(members[0]))
        except zipfile.BadZipFile:
            return None, f"not a notebook: {path.name} is not a zip file"
    else:
        return None, f"not a notebook: {path.name} is neither a .ipynb nor an exported .zip"
    why = not_a_notebook(target)
    if why is not None:
        return None, f"not a notebook: {path.name}: {why}"
    return target, ""


def notebook_in(folder: Path, scratch: Path) -> tuple[Path | None, str]:
    """The one notebook of a submission folder (Gradescope's), read as
    :func:`notebook_from` reads a file: a ``.ipynb`` if there is one, else a single
    zip; or None and why."""
    files = visible_files(folder) if folder.is_dir() else []
    notebooks = [p for p in files if p.suffix == ".ipynb"]
    zips = [p for p in files if p.suffix == ".zip"]
    if len(notebooks) > 1:
        names = ", ".join(p.name for p in notebooks[:4])
        return None, f"the submission holds {len(notebooks)} notebooks ({names}): hand in one"
    if notebooks:
        return notebook_from(notebooks[0], scratch)
    if len(zips) == 1:
        return notebook_from(zips[0], scratch)
    seen = ", ".join(p.name for p in files[:6]) or "nothing"
    return None, (
        f"no notebook found (the submission holds {seen}): hand in the .ipynb, "
        "or the zip that its last cell makes"
    )
