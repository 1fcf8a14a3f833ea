"""File notebooks that were already executed in Jupyter Book's execution cache.

``python -m tools.book_cache DIR`` adds every ``DIR/NAME.ipynb`` (written by
the nbval plugin ``tests/nbval_executed.py`` during ``make test``) to the cache
that ``make book`` and ``make pdf`` read (``_build/.jupyter_cache``, the
``execute_notebooks: cache`` mode of ``_config.yml``). The cache matches a
chapter by its code cells and kernel, so a notebook whose code has changed
since it was executed is never used: the build runs that one itself.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from jupyter_cache import get_cache
from jupyter_cache.base import CacheBundleIn

from .site import BOOK, ROOT

CACHE = ROOT / "_build" / ".jupyter_cache"


def file_executed(folder: Path, cache_path: Path = CACHE) -> list[str]:
    """Cache every executed notebook in ``folder``; return the names filed."""
    cache = get_cache(str(cache_path))
    filed = []
    for executed in sorted(folder.glob("*.ipynb")):
        source = BOOK / executed.name
        if not source.exists():
            raise SystemExit(f"{executed} is not a chapter: there is no {source}")
        notebook = nbformat.read(executed, as_version=4)
        cache.cache_notebook_bundle(
            CacheBundleIn(notebook, str(source), data={"executed_by": "nbval"}),
            check_validity=False,
            overwrite=True,
        )
        filed.append(executed.name)
    return filed


def main(args: list[str]) -> int:
    if len(args) != 1:
        print("usage: python -m tools.book_cache DIR", file=sys.stderr)
        return 2
    filed = file_executed(Path(args[0]))
    print(f"{len(filed)} notebooks executed by nbval filed in the book's execution cache")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
