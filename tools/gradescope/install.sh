#!/usr/bin/env bash
# The install step of setup.sh: a fresh virtual environment at $1 (made by
# $PYTHON, python3.11 by default) with requirements.txt's pinned packages and
# this zip's attnbook wheel, then `pip check` and an import of the grader. pip
# reads its own environment variables: the slow test runs this offline with
# PIP_NO_INDEX=1 and PIP_FIND_LINKS set to a folder of wheels.
set -euo pipefail
SOURCE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VENV="${1:?usage: install.sh VENV}"
"${PYTHON:-python3.11}" -m venv "$VENV"
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check --no-input)
"${PIP[@]}" install -r "$SOURCE/requirements.txt"
"${PIP[@]}" install --no-deps --no-index "$SOURCE"/wheels/attnbook-*.whl
"${PIP[@]}" check
"$VENV/bin/python" -c "import attnbook, attnbook.grading.gradescope; print('attnbook', attnbook.__version__)"
