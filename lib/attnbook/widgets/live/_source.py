"""The JavaScript files of the live explorers, read and joined into one module."""

from __future__ import annotations

import re
from importlib import resources

_IMPORT = re.compile(r'^import \{[^}]*\} from "\./runtime\.js";\n', re.MULTILINE)


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
