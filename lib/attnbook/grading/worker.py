"""The student's side of a grading: run a notebook's code, then answer calls.

    python -m attnbook.grading.worker NOTEBOOK

runs inside the sandbox (see :mod:`attnbook.grading.sandbox`), in a process that
holds the student's code and nothing of the grader's. It runs the notebook's
code cells in order, as plain Python in one namespace (IPython's ``%`` and
``!`` lines dropped; a cell that raises is noted and the next one runs; otter's
``grader`` calls do nothing). Then it answers frames (:mod:`.wire`) read from
its standard input, writing the answers to what was its standard output:

- ``{"op": "describe", "names": [...]}``: for each name, whether the notebook
  defines a function of that name, its parameters and its source (with the
  notebook's definitions it uses);
- ``{"op": "call", "name": ..., "args": [...]}``: the function's result, or the
  exception it raised, and its arguments as they are after the call (so that
  the grader sees an in-place edit);
- ``{"op": "backward", "call": N, "grad": tensor}``: the gradient of call N's
  result, given the upstream gradient, with respect to each argument that was
  sent as requiring gradients;
- ``{"op": "values", "name": "answers", "keys": [...]}``: the entries of the
  notebook's dict ``answers`` (the concept questions' answers), as data.

Everything the student's code prints goes to standard error. Nothing here
decides a grade: the grader reads these answers as data and judges them itself,
so a student who changes this module in their own process changes only what
their own answers say.
"""

from __future__ import annotations

import ast
import linecache
import os
import sys
import textwrap
import types
import warnings
from typing import Any

from . import wire

# How many calls' results keep their autograd graph for a later backward.
_KEEP = 4


def cells(path: str) -> list[str]:
    """The notebook's code cells as plain Python (IPython's % and ! lines dropped)."""
    import json

    with open(path, encoding="utf-8") as f:
        notebook = json.load(f)
    out = []
    for cell in notebook.get("cells", []):
        if cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else str(source)
        out.append(
            "\n".join(
                line if not line.lstrip().startswith(("%", "!")) else ""
                for line in source.splitlines()
            )
        )
    return out


class _Nothing:
    """otter's ``Notebook`` here: every method does nothing."""

    def __init__(self, *args, **kwargs):
        pass

    def __getattr__(self, name):
        return lambda *args, **kwargs: None


def _fake_otter() -> None:
    module = types.ModuleType("otter")
    module.Notebook = _Nothing
    sys.modules["otter"] = module


def run_cells(sources: list[str], namespace: dict) -> list[str]:
    """Run each cell in ``namespace``; the errors, one line each. Each cell's source
    is registered with linecache, so that ``inspect.getsource`` finds it."""
    errors = []
    for i, source in enumerate(sources):
        filename = f"<notebook cell {i + 1}>"
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        try:
            code = compile(source, filename, "exec")
            exec(code, namespace)
        except BaseException as err:  # a student's cell may raise anything, SystemExit too
            errors.append(f"cell {i + 1}: {type(err).__name__}: {str(err)[:300]}")
    return errors


def _imported(name: str, value: Any) -> str | None:
    """An import line that binds ``name`` to ``value`` as the notebook did, for a
    module or a function or class of another module; None for anything else."""
    if isinstance(value, types.ModuleType):
        return f"import {value.__name__} as {name}"
    module, qualname = getattr(value, "__module__", None), getattr(value, "__qualname__", "")
    if (
        isinstance(value, (types.FunctionType, types.BuiltinFunctionType, type))
        and isinstance(module, str)
        and module != "__main__"
        and qualname.isidentifier()
    ):
        return f"from {module} import {qualname} as {name}"
    return None


def _source(fn: Any, namespace: dict) -> str | None:
    """The source of ``fn`` and of the notebook's functions and classes it names,
    transitively, after import lines for the modules and imported functions they
    name (so that a checker reading it knows what ``masked_softmax`` was)."""
    import inspect

    own = getattr(fn, "__module__", None)
    if own != "__main__" and isinstance(own, str):
        line = _imported(getattr(fn, "__name__", "answer"), fn)
        if line is not None:  # the answer is another module's function itself
            return f"{line}\n{fn.__name__}"
    try:
        first = inspect.getsource(fn)
    except (OSError, TypeError):
        return None
    parts, imports, seen, todo = [first], [], {getattr(fn, "__name__", "")}, [first]
    while todo:
        try:
            tree = ast.parse(textwrap.dedent(todo.pop()).strip() or "pass")
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if not isinstance(node, ast.Name) or node.id in seen or node.id not in namespace:
                continue
            seen.add(node.id)
            found = namespace[node.id]
            if isinstance(found, (types.FunctionType, type)) and (
                getattr(found, "__module__", None) == "__main__"
            ):
                try:
                    text = inspect.getsource(found)
                except (OSError, TypeError):
                    continue
                parts.append(text)
                todo.append(text)
            else:
                line = _imported(node.id, found)
                if line is not None:
                    imports.append(line)
    return "\n".join(imports) + ("\n\n" if imports else "") + "\n\n".join(parts)


def describe(names: list, namespace: dict) -> dict:
    import inspect

    out = {}
    for name in names:
        fn = namespace.get(name) if isinstance(name, str) else None
        if not callable(fn):
            out[str(name)] = {"defined": False, "kind": type(fn).__name__}
            continue
        try:
            parameters = list(inspect.signature(fn).parameters)
        except (TypeError, ValueError):
            parameters = []
        out[name] = {"defined": True, "parameters": parameters, "source": _source(fn, namespace)}
    return out


def call(message: dict, namespace: dict, graphs: dict) -> dict:
    import torch

    fn = namespace.get(message.get("name"))
    args = wire.decode(message.get("args", []))
    wants = message.get("grad") or []  # which arguments are sent as requiring gradients
    leaves = []
    for i in wants:
        if isinstance(i, int) and 0 <= i < len(args) and isinstance(args[i], torch.Tensor):
            args[i] = args[i].requires_grad_(True)
            leaves.append(args[i])
    if not callable(fn):
        raise wire.WireError(f"no function {message.get('name')!r}")
    try:
        result = fn(*args)
    except BaseException as err:  # the student's error is an answer, sent back as data
        return {"error": wire.encode(err), "args": wire.encode(list(args))}
    answer = {"value": wire.encode(result), "args": wire.encode(list(args))}
    if leaves and isinstance(result, torch.Tensor) and result.grad_fn is not None:
        graphs[message.get("id")] = (result, leaves)
        while len(graphs) > _KEEP:
            graphs.pop(next(iter(graphs)))
        answer["graph"] = True
    return answer


def values(message: dict, namespace: dict) -> dict:
    """The entries ``keys`` of the notebook's dict ``name``: each as data, or absent."""
    from .concepts import answer_of

    holder = namespace.get(message.get("name"))
    if not isinstance(holder, dict):
        return {"value": None, "kind": type(holder).__name__}
    out = {}
    for key in message.get("keys") or []:
        if not isinstance(key, str):
            continue
        try:
            if key in holder:
                out[key] = wire.encode(answer_of(holder[key]))
        except BaseException as err:  # the student's dict or value may raise anything
            out[key] = wire.encode(err)
    return {"value": out}


def backward(message: dict, graphs: dict) -> dict:
    import torch

    result, leaves = graphs.pop(message.get("call"), (None, None))
    if result is None:
        raise wire.WireError(f"no graph kept for call {message.get('call')!r}")
    upstream = wire.decode(message.get("grad"))
    try:
        grads = torch.autograd.grad(result, leaves, upstream, allow_unused=True)
    except Exception as err:
        return {"error": wire.encode(err)}
    return {"value": wire.encode(list(grads))}


def serve(notebook: str) -> None:
    # The protocol keeps the real stdin and stdout; the student's code gets
    # nothing to read and prints to stderr.
    inbox = os.fdopen(os.dup(0), "rb", buffering=0)
    outbox = os.fdopen(os.dup(1), "wb")
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    warnings.simplefilter("ignore")
    _fake_otter()
    namespace: dict = {"__name__": "__main__", "__builtins__": __builtins__}
    errors = run_cells(cells(notebook), namespace)
    wire.send(outbox, {"ready": True, "cell_errors": errors})
    graphs: dict = {}
    while True:
        try:
            message = wire.receive(inbox)
        except EOFError:
            return
        op = message.get("op")
        try:
            if op == "describe":
                answer = {"value": describe(message.get("names", []), namespace)}
            elif op == "call":
                answer = call(message, namespace, graphs)
            elif op == "backward":
                answer = backward(message, graphs)
            elif op == "values":
                answer = values(message, namespace)
            else:
                raise wire.WireError(f"unknown op {op!r}")
        except BaseException as err:  # never let the loop die on one request
            answer = {"failed": f"{type(err).__name__}: {str(err)[:300]}"}
        answer["id"] = message.get("id")
        try:
            wire.send(outbox, answer)
        except wire.WireError as err:  # e.g. a result too large to send
            wire.send(outbox, {"id": message.get("id"), "failed": str(err)})


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: python -m attnbook.grading.worker NOTEBOOK")
    serve(sys.argv[1])
