#!/usr/bin/env bash
# Gradescope's setup.sh for an assignment of "Attention, Interactively", written
# into the autograder zip by `make assignments` (tools/assignments.py) in place
# of otter's. It runs once, as root, when Gradescope builds the image, and
# fetches nothing from a git host: bubblewrap and Python 3.11 from the image's
# apt sources, the pinned packages of requirements.txt from PyPI and PyTorch's
# CPU index, and attnbook from the wheel inside this zip (install.sh).
set -euo pipefail
SOURCE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export DEBIAN_FRONTEND=noninteractive
apt-get update
# bubblewrap sandboxes each notebook where the container allows user
# namespaces; without it the grader runs the notebook as the user nobody.
apt-get install -y --no-install-recommends bubblewrap \
  || echo "setup.sh: no bubblewrap; notebooks will run as the user nobody"
# Python 3.11, the version the book is tested on (Ubuntu 22.04 has it in its
# own archive; choose that base image on Gradescope).
if ! python3.11 -c "import ensurepip, venv" 2>/dev/null; then
  apt-get install -y --no-install-recommends python3.11 python3.11-venv
fi
PYTHON=python3.11 "$SOURCE/install.sh" "${ATTNBOOK_VENV:-/opt/attnbook}"
