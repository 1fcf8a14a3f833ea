"""The JavaScript files of the live explorers, read and joined into one module."""

from __future__ import annotations

import re
from importlib import resources

_IMPORT = re.compile(r'^import \{[^}]*\} from "\./runtime\.js";\n', re.MULTILINE)
# The module syntax a classic script cannot hold: an export keyword before a
# declaration, and the default export (anywidget's `export default { render }`).
_EXPORT = re.compile(r"^export (?=(?:async )?function |const |let |class )", re.MULTILINE)
_DEFAULT = re.compile(r"^export default \{[^}]*\};?\n", re.MULTILINE)


def read_source(name: str) -> str:
    """The text of one of the package's JavaScript files (``name`` without ``.js``)."""
    return resources.files(__package__).joinpath(f"{name}.js").read_text(encoding="utf-8")


def module_source(name: str, *, shim: bool = False) -> str:
    """One ES module: the runtime, then explorer ``name`` (its runtime import
    removed), then, when ``shim`` is true, the website's ``localModel``."""
    explorer = read_source(name)
    found = _IMPORT.findall(explorer)
    if len(found) != 1:
        raise ValueError(
            f"{name}.js must import from ./runtime.js in exactly one line, found {len(found)}"
        )
    parts = [read_source("runtime"), _IMPORT.sub("", explorer)]
    if shim:
        parts.append(read_source("shim"))
    return "\n".join(parts)


def script_source(name: str, page: str) -> str:
    """A classic script that runs explorer ``name`` on a page: the runtime, the
    explorer and the shim (:func:`module_source`) without their ``export``
    keywords and default export, then the ``page``'s own code (which calls
    ``render``), all in one strict function scope, so that nothing reaches the
    page's globals.

    A classic inline script runs when the parser reaches it, before the page
    goes on; a module script, ``async`` or not, waits for a task of its own,
    which may come only after the page's deferred scripts (MathJax: 0.2 s after
    chapter 15's page became interactive, measured)."""
    source = _DEFAULT.sub("", _EXPORT.sub("", module_source(name, shim=True)))
    left = re.findall(r"^(?:export|import)\b.*", source, re.MULTILINE)
    if left:
        raise ValueError(f"{name}.js: module syntax a classic script cannot run: {left[0]!r}")
    return f'(() => {{\n"use strict";\n{source}\n{page}}})();\n'
