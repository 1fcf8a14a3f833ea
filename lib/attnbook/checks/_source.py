"""The source of the reader's function, and the shortcuts an exercise forbids found in it.

An exercise that says "from scratch", or forbids a trick, lists what it forbids
as :class:`Shortcut` objects; :func:`shortcut_taken` reads the reader's source
with :mod:`ast` (so comments and strings never count) and reports the first
reference to a forbidden name: the book's own function however it was imported
(``masking.masked_softmax``, ``attnbook.masking.masked_softmax``, ``from
attnbook.masking import masked_softmax``), a PyTorch function, or a value such
as ``torch.finfo(X.dtype).min``. A function of the reader's own that happens to
share the book's name is not the book's, and is not refused.

The source comes from :func:`source_of`: the ``__attnbook_source__`` attribute
that a grader running the function in another process sets on its proxy, or
:func:`inspect.getsource` of the function and of the definitions of its own
module (a notebook's ``__main__``) that it uses. When no source can be had,
nothing is refused (the runtime probes of :mod:`._probes` still watch what
runs in this process).
"""

from __future__ import annotations

import ast
import builtins
import functools
import importlib
import inspect
import textwrap
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass

#: The attribute through which a grader's proxy hands over the source of the
#: reader's function and of the notebook definitions it uses.
SOURCE_ATTRIBUTE = "__attnbook_source__"

# How many definitions source_of follows from one function, at most, and how many
# characters it trims off the end of a lambda's lines to find the lambda.
_MAX_DEFINITIONS = 64
_MAX_TRIM = 400

# Names a notebook binds in its setup cell, for source without its globals (a
# proxy's): the usual aliases of torch, and the book's modules by their names.
_USUAL = {"torch": "torch", "F": "torch.nn.functional", "nn": "torch.nn", "np": "numpy"}


@dataclass(frozen=True)
class Shortcut:
    """What an exercise forbids, and why.

    ``names`` are dotted names, as resolved from the reader's source: a module
    attribute (``"attnbook.masking.masked_softmax"``, ``"torch.softmax"``) or,
    with ``()`` for a call, an attribute of a call's result
    (``"torch.finfo().min"``). ``methods`` are attribute names refused on any
    value that is not a module (``"softmax"`` refuses ``X.softmax(dim=-1)``).
    ``name`` becomes the report's ``mistake``; ``why`` says why the exercise
    forbids it, in words that complete "it uses ... : ".

    ``remote`` marks a shortcut that a runtime probe of :mod:`._probes` already
    catches, under its own name, when the function runs in this process: it is
    read only in the source a grader's proxy hands over (``__attnbook_source__``),
    whose calls run in another process, out of the probe's sight.
    """

    name: str
    names: tuple[str, ...]
    why: str
    methods: tuple[str, ...] = ()
    remote: bool = False


def _unwrapped(fn: Callable) -> Callable:
    while isinstance(fn, functools.partial):
        fn = fn.func
    try:
        return inspect.unwrap(fn)
    except ValueError:  # a cycle of __wrapped__
        return fn


def _parses(text: str) -> str | None:
    """``text`` dedented if it parses, else a lambda cut out of it, else None.

    :func:`inspect.getsource` of a lambda gives the lines it sits on, which may
    be part of a larger statement (a call's argument, a list entry).
    """
    text = textwrap.dedent(text)
    try:
        ast.parse(text)
        return text
    except SyntaxError:
        pass
    start = text.find("lambda")
    if start < 0:
        return None
    piece = text[start:].rstrip()
    for _ in range(_MAX_TRIM):
        if not piece:
            break
        try:
            ast.parse(piece)
            return piece
        except SyntaxError:
            piece = piece[:-1].rstrip()
    return None


def _own_source(obj: object) -> str | None:
    try:
        text = inspect.getsource(obj)
    except Exception:  # a builtin, code typed at a prompt, a stale or odd linecache
        return None
    return _parses(text)


def _referenced(text: str) -> set[str]:
    return {n.id for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Name)}


def source_of(fn: Callable) -> str | None:
    """The source to inspect for ``fn``: its own, and that of the definitions it uses.

    If ``fn`` has an attribute ``__attnbook_source__`` (a str), that is returned
    as it is: a grader that runs the reader's function in another process sets
    it on its proxy. Otherwise the source of ``fn`` (found by
    :func:`inspect.getsource`), followed, transitively, by the source of every
    function and class in ``fn.__globals__`` that it names and that was
    defined in ``fn``'s own module (in a notebook, ``__main__``). None when
    ``fn``'s own source cannot be had (a builtin, a function made by ``exec``).
    """
    given = getattr(fn, SOURCE_ATTRIBUTE, None)
    if isinstance(given, str):
        return given
    fn = _unwrapped(fn)
    if not inspect.isroutine(fn) and not inspect.isclass(fn):
        fn = type(fn)  # a callable object: its class holds __call__
    own = _own_source(fn)
    if own is None:
        return None
    module = getattr(fn, "__module__", None)
    home = inspect.getmodule(fn)
    scope = getattr(fn, "__globals__", None) or (vars(home) if home is not None else {})
    pieces, seen, todo = [own], {id(fn)}, [own]
    while todo and len(pieces) < _MAX_DEFINITIONS:
        for name in sorted(_referenced(todo.pop())):
            obj = scope.get(name)
            if id(obj) in seen or not (inspect.isfunction(obj) or inspect.isclass(obj)):
                continue
            seen.add(id(obj))
            if getattr(obj, "__module__", None) != module:
                continue
            text = _own_source(obj)
            if text is not None:
                pieces.append(text)
                todo.append(text)
    return "\n\n".join(pieces)


#: PyTorch's softmax, however spelled (log_softmax too: its exp is the softmax).
SOFTMAXES = tuple(
    f"{where}.{name}"
    for where in ("torch", "torch.nn.functional", "torch.special", "torch.Tensor")
    for name in ("softmax", "log_softmax")
) + ("torch.nn.Softmax", "torch.nn.LogSoftmax")


# ---------------------------------------------------------------- finding a shortcut


def _object_at(dotted: str) -> object | None:
    """The object a dotted name of a forbidden thing names, if it can be found
    without running anything but imports of torch, numpy and the book."""
    if "()" in dotted:
        return None
    parts = dotted.split(".")
    if parts[0] not in ("torch", "attnbook", "numpy"):
        return None
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr, None)
            if obj is None:
                return None
        return obj
    return None


class _Names:
    """Resolves a name, attribute or call in the reader's source to a dotted name."""

    def __init__(self, tree: ast.AST, scope: dict | None, known: dict[int, str]) -> None:
        self.scope, self.known = scope, known
        self.aliases: dict[str, str] = {}
        self.local: set[str] = set()
        assigned: list[tuple[str, ast.expr]] = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        self.aliases[alias.asname] = alias.name
                    else:
                        top = alias.name.split(".")[0]
                        self.aliases[top] = top
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    self.aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.local.add(node.name)
            elif isinstance(node, ast.arg):
                self.local.add(node.arg)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                self.local.add(node.id)
            elif isinstance(node, ast.ExceptHandler) and node.name:
                self.local.add(node.name)
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
                if isinstance(target, ast.Name):
                    assigned.append((target.id, node.value))
        for _ in range(3):  # chains such as f = torch.finfo(X.dtype); low = f.min
            for name, value in assigned:
                dotted = self.resolve(value)
                if dotted is not None:
                    self.aliases.setdefault(name, dotted)

    def _global(self, name: str) -> str | None:
        obj = self.scope[name]
        if id(obj) in self.known:
            return self.known[id(obj)]
        if isinstance(obj, types.ModuleType):
            return obj.__name__
        return None

    def resolve(self, node: ast.AST) -> str | None:
        if isinstance(node, ast.Name):
            if node.id in self.aliases:
                return self.aliases[node.id]
            if node.id in self.local:
                return None
            if self.scope is not None and node.id in self.scope:
                return self._global(node.id)
            if self.scope is not None and hasattr(builtins, node.id):
                return None
            if node.id in _USUAL:
                return _USUAL[node.id]
            import attnbook

            if node.id in attnbook._SUBMODULES:
                return f"attnbook.{node.id}"
            return None
        if isinstance(node, ast.Attribute):
            base = self.resolve(node.value)
            return f"{base}.{node.attr}" if base is not None else None
        if isinstance(node, ast.Call):
            base = self.resolve(node.func)
            return f"{base}()" if base is not None else None
        return None


def _is_module(dotted: str | None) -> bool:
    if dotted is None or "()" in dotted:
        return False
    try:
        importlib.import_module(dotted)
    except ImportError:
        return False
    return True


def _scan(
    text: str, scope: dict | None, shortcuts: Sequence[Shortcut]
) -> tuple[Shortcut, str] | None:
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    known = {}
    for shortcut in shortcuts:
        for dotted in shortcut.names:
            obj = _object_at(dotted)
            if obj is not None:
                known.setdefault(id(obj), dotted)
    names = _Names(tree, scope, known)
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Name, ast.Attribute)):
            continue
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            continue
        dotted = names.resolve(node)
        for shortcut in shortcuts:
            if dotted is not None and dotted in shortcut.names:
                written, full = ast.unparse(node), dotted.replace("()", "(...)")
                return shortcut, written if full.endswith(written) else f"{written} ({full})"
            if (
                isinstance(node, ast.Attribute)
                and node.attr in shortcut.methods
                and not _is_module(names.resolve(node.value))
            ):
                return shortcut, f"{ast.unparse(node)}(...)"
    return None


def shortcut_taken(fn: Callable, shortcuts: Sequence[Shortcut]) -> tuple[Shortcut, str] | None:
    """The first of ``shortcuts`` that ``fn`` takes, and what in it takes it, or None.

    ``fn`` itself being a forbidden function (``masked_softmax_renorm =
    masking.masked_softmax``) counts. Otherwise the source of :func:`source_of`
    is read; the functions of the library itself (its known mistakes) are not.
    A ``remote`` shortcut counts only in a proxy's ``__attnbook_source__``.
    """
    given = getattr(fn, SOURCE_ATTRIBUTE, None)
    if not isinstance(given, str):
        shortcuts = [s for s in shortcuts if not s.remote]
    if not shortcuts:
        return None
    inner = _unwrapped(fn)
    for shortcut in shortcuts:
        for dotted in shortcut.names:
            obj = _object_at(dotted)
            if obj is not None and (inner is obj or fn is obj):
                return shortcut, f"{dotted} itself"
    if not isinstance(given, str) and str(getattr(inner, "__module__", "")).startswith("attnbook."):
        return None
    try:
        if isinstance(given, str):
            return _scan(given, None, shortcuts)
        text = source_of(fn)
        if text is None:
            return None
        return _scan(text, getattr(inner, "__globals__", None), shortcuts)
    except (RecursionError, SyntaxError, ValueError):  # source too deep or odd to read
        return None
