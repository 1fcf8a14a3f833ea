"""The slips a hand makes, as edits of Python's ``ast``: the mutator behind the
checkers' diagnosis by matching mutants (``_matching``) and tools/mutants.py.

Each operator of :data:`OPERATORS` looks at one node of a parsed source and
yields the nodes that could replace it: a dim changed (``dim=-1`` to ``-2`` or
``0``), a bound off by one (``range``/``arange`` arguments, slice ends, an index,
``diagonal=``), ``<`` for ``<=``, ``+`` for ``-`` (or a minus dropped), ``*``
for ``/``, a reduction swapped (sum, mean, max, min), a scale dropped, a fill
of 0 for -inf, a transpose dropped, ``keepdim=True`` dropped. :func:`mutants`
applies them one site at a time: every mutant differs from the source by one
slip, and no two are alike. Each :class:`Mutant` also says its slip in plain
words (:attr:`Mutant.words`) and shows the changed expression before and after,
with long parts that did not change shortened to ``...``.
No dependency beyond the standard library.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable, Iterator
from dataclasses import dataclass

# Calls whose integer positional arguments are axes (x.sum(0), torch.cat(xs, 1), x.transpose(1, 2)).
_DIM_CALLS = {
    "sum", "mean", "amax", "amin", "max", "min", "argmax", "argmin", "softmax",
    "log_softmax", "logsumexp", "unsqueeze", "squeeze", "cumsum", "cat", "stack",
    "transpose", "flip", "norm", "prod", "var", "std", "chunk", "split", "swapaxes",
    "movedim", "roll", "flatten", "select", "narrow",
}  # fmt: skip
_REDUCTIONS = {
    "sum": ("mean", "amax"), "mean": ("sum",), "max": ("min",), "min": ("max",),
    "amax": ("amin", "sum"), "amin": ("amax",), "argmax": ("argmin",), "argmin": ("argmax",),
    "maximum": ("minimum",), "minimum": ("maximum",),
}  # fmt: skip
_TRANSPOSES = {"transpose", "t", "permute", "swapaxes", "movedim"}
_TRANSPOSE_ATTRS = {"T", "mT", "mH", "H"}
_COMPARISONS = {
    ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq, ast.NotEq: ast.Eq,
}  # fmt: skip


def _name(func: ast.expr) -> str | None:
    """The called name: ``sum`` for ``x.sum``, ``torch.sum`` and ``sum``."""
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return None


def _int(node: ast.expr) -> int | None:
    """The value of an integer literal (``2`` or ``-1``), else None."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _int(node.operand)
        return None if inner is None else -inner
    return None


def _literal(value: int) -> ast.expr:
    if value < 0:
        return ast.UnaryOp(ast.USub(), ast.Constant(-value))
    return ast.Constant(value)


def _shifted(node: ast.expr) -> list[ast.expr]:
    """``node + 1`` and ``node - 1`` (an integer literal folded: 3 gives 4 and 2)."""
    value = _int(node)
    if value is not None:
        return [_literal(value + 1), _literal(value - 1)]
    return [ast.BinOp(copy.deepcopy(node), op(), ast.Constant(1)) for op in (ast.Add, ast.Sub)]


def _replace(node: ast.AST, path: tuple, new: ast.AST) -> ast.AST:
    """A copy of ``node`` with the field at ``path`` (("args", 1) or ("value",)) set to ``new``."""
    node = copy.deepcopy(node)
    holder = node
    for step in path[:-1]:
        holder = getattr(holder, step) if isinstance(step, str) else holder[step]
    last = path[-1]
    if isinstance(last, str):
        setattr(holder, last, new)
    else:
        holder[last] = new
    return node


def op_dim(node: ast.AST) -> Iterator[ast.AST]:
    """A dim changed: ``dim=-1`` becomes ``dim=-2`` or ``dim=0``; ``x.sum(0)`` becomes ``x.sum(1)``."""
    if not isinstance(node, ast.Call):
        return
    for i, keyword in enumerate(node.keywords):
        if keyword.arg == "dim" and _int(keyword.value) is not None:
            for new in _shifted(keyword.value):
                yield _replace(node, ("keywords", i, "value"), new)
    if _name(node.func) in _DIM_CALLS:
        for i, arg in enumerate(node.args):
            if _int(arg) is not None:
                for new in _shifted(arg):
                    yield _replace(node, ("args", i), new)


def op_bound(node: ast.AST) -> Iterator[ast.AST]:
    """A bound off by one: an argument of range/arange, a slice's ends, an index, ``diagonal=``."""
    if isinstance(node, ast.Call):
        if _name(node.func) in ("range", "arange"):
            for i, arg in enumerate(node.args):
                for new in _shifted(arg):
                    yield _replace(node, ("args", i), new)
        for i, keyword in enumerate(node.keywords):
            if keyword.arg == "diagonal":
                for new in _shifted(keyword.value):
                    yield _replace(node, ("keywords", i, "value"), new)
    elif isinstance(node, ast.Slice):
        for end in ("lower", "upper"):
            if getattr(node, end) is not None:
                for new in _shifted(getattr(node, end)):
                    yield _replace(node, (end,), new)
    elif isinstance(node, ast.Subscript):
        index = node.slice
        items = index.elts if isinstance(index, ast.Tuple) else [index]
        for i, item in enumerate(items):
            if _int(item) is not None or isinstance(item, (ast.Name, ast.BinOp)):
                path = ("slice", "elts", i) if isinstance(index, ast.Tuple) else ("slice",)
                for new in _shifted(item):
                    yield _replace(node, path, new)


def op_compare(node: ast.AST) -> Iterator[ast.AST]:
    """``<`` for ``<=`` (and back), ``>`` for ``>=``, ``==`` for ``!=``."""
    if isinstance(node, ast.Compare):
        for i, op in enumerate(node.ops):
            if type(op) in _COMPARISONS:
                yield _replace(node, ("ops", i), _COMPARISONS[type(op)]())


def op_sign(node: ast.AST) -> Iterator[ast.AST]:
    """``+`` for ``-`` (and back), a minus sign dropped."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        yield _replace(node, ("op",), ast.Sub() if isinstance(node.op, ast.Add) else ast.Add())
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and _int(node) is None:
        yield copy.deepcopy(node.operand)  # -1 as an axis or index is the dim and bound slips


def op_times(node: ast.AST) -> Iterator[ast.AST]:
    """``*`` for ``/`` (and back)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Div)):
        yield _replace(node, ("op",), ast.Div() if isinstance(node.op, ast.Mult) else ast.Mult())


def op_reduction(node: ast.AST) -> Iterator[ast.AST]:
    """A reduction swapped: sum for mean, max for min, amax for amin or sum, argmax for argmin."""
    if isinstance(node, ast.Call) and _name(node.func) in _REDUCTIONS:
        for other in _REDUCTIONS[_name(node.func)]:
            new = copy.deepcopy(node)
            if isinstance(new.func, ast.Attribute):
                new.func.attr = other
            else:
                new.func.id = other
            yield new


def op_scale(node: ast.AST) -> Iterator[ast.AST]:
    """A scale dropped: ``a * b`` becomes ``a`` or ``b``; ``a / b`` and ``a // b`` become ``a``."""
    if isinstance(node, ast.BinOp):
        if isinstance(node.op, ast.Mult):
            yield copy.deepcopy(node.left)
            yield copy.deepcopy(node.right)
        elif isinstance(node.op, (ast.Div, ast.FloorDiv)):
            yield copy.deepcopy(node.left)


def _is_inf(node: ast.AST) -> bool:
    text = ast.unparse(node).replace(" ", "").replace("'", '"')
    return text in {
        "-math.inf", "-float(\"inf\")", "float(\"-inf\")", "-torch.inf", "-np.inf",
        "-float(\"infinity\")",
    } or (text.startswith("torch.finfo(") and text.endswith(").min"))  # fmt: skip


def op_fill(node: ast.AST) -> Iterator[ast.AST]:
    """A fill of 0 for -inf (``-math.inf``, ``float('-inf')``, ``torch.finfo(dtype).min``)."""
    if isinstance(node, ast.expr) and _is_inf(node):
        yield ast.Constant(0.0)


def op_keepdim(node: ast.AST) -> Iterator[ast.AST]:
    """``keepdim=True`` dropped: the reduced axis is gone, and broadcasting lines the rest up anew."""
    if isinstance(node, ast.Call):
        for i, keyword in enumerate(node.keywords):
            if keyword.arg == "keepdim":
                new = copy.deepcopy(node)
                del new.keywords[i]
                yield new


def op_transpose(node: ast.AST) -> Iterator[ast.AST]:
    """A transpose dropped: ``K.transpose(-2, -1)``, ``K.T``, ``x.permute(...)`` become ``K``, ``x``."""
    if isinstance(node, ast.Call) and _name(node.func) in _TRANSPOSES:
        if isinstance(node.func, ast.Attribute) and not (
            isinstance(node.func.value, ast.Name) and node.func.value.id in ("torch", "F")
        ):
            yield copy.deepcopy(node.func.value)
        elif node.args:  # torch.transpose(x, 0, 1)
            yield copy.deepcopy(node.args[0])
    elif isinstance(node, ast.Attribute) and node.attr in _TRANSPOSE_ATTRS:
        yield copy.deepcopy(node.value)


#: Every operator by name, in the order its mutants are listed.
OPERATORS: dict[str, Callable[[ast.AST], Iterator[ast.AST]]] = {
    "dim": op_dim,
    "bound": op_bound,
    "compare": op_compare,
    "sign": op_sign,
    "times": op_times,
    "reduction": op_reduction,
    "scale": op_scale,
    "fill": op_fill,
    "transpose": op_transpose,
    "keepdim": op_keepdim,
}


@dataclass(frozen=True)
class Mutant:
    """One slip in a source: its operator, a line saying what changed, the new source,
    and for a reader: the slip in plain words and the changed expression before and after."""

    operator: str
    label: str
    source: str
    words: str = ""
    before: str = ""
    after: str = ""


class _Apply(ast.NodeTransformer):
    """Replace the ``target``-th candidate site (in a pre-order walk) by its mutant."""

    def __init__(self, operators: dict, target: int):
        self.operators, self.target, self.count = operators, target, 0
        self.applied: tuple[str, ast.AST, ast.AST] | None = None
        self.parents: list[ast.AST] = []
        self.parent: ast.AST | None = None  # the node that holds the replaced one

    def visit(self, node: ast.AST) -> ast.AST:
        if self.applied is None:
            for name, operator in self.operators.items():
                for new in operator(node):
                    if self.count == self.target:
                        self.applied = (name, node, new)
                        holders = [p for p in self.parents[-2:] if isinstance(p, ast.Subscript)]
                        if isinstance(node, ast.BinOp) and self.parents:
                            holders += [p for p in self.parents[-1:] if isinstance(p, ast.BinOp)]
                        self.parent = copy.deepcopy(holders[-1]) if holders else None
                        return ast.copy_location(new, node) if hasattr(node, "lineno") else new
                    self.count += 1
        self.parents.append(node)
        try:
            return self.generic_visit(node)
        finally:
            self.parents.pop()


def mutants(source: str, operators: dict | None = None) -> list[Mutant]:
    """Every mutant of ``source``: one slip of one operator at one site each, each
    distinct from the source and from every earlier mutant."""
    operators = OPERATORS if operators is None else operators
    tree = ast.parse(source)
    original = ast.unparse(tree)
    counter = _Apply(operators, -1)
    counter.visit(copy.deepcopy(tree))
    found, seen = [], {original}
    for target in range(counter.count):
        apply = _Apply(operators, target)
        new_tree = ast.fix_missing_locations(apply.visit(copy.deepcopy(tree)))
        text = ast.unparse(new_tree)
        if text in seen:
            continue
        seen.add(text)
        name, old, new = apply.applied
        line = getattr(old, "lineno", None)
        where = f"line {line}: " if line else ""
        before, after = _excerpts(old, new, apply.parent)
        found.append(
            Mutant(
                name,
                f"{name}: {where}{ast.unparse(old)} -> {ast.unparse(new)}",
                text,
                _words(name, old, new),
                before,
                after,
            )
        )
    return found


# ---------------------------------------------------------------- the slip in plain words

#: Unchanged parts longer than this are shown as ``...`` in a mutant's excerpts.
_SHORT = 24


def _same_node(a: object, b: object) -> bool:
    return isinstance(a, ast.AST) and isinstance(b, ast.AST) and ast.dump(a) == ast.dump(b)


def _elide(a: ast.AST, b: ast.AST, top: bool = True) -> tuple[ast.AST, ast.AST]:
    """Copies of ``a`` and ``b`` with each long sub-expression they share shown as ``...``."""
    if not top and _same_node(a, b) and len(ast.unparse(a)) > _SHORT:
        if not isinstance(a, ast.Attribute):
            return ast.Name("..."), ast.Name("...")
        value, _ = _elide(a.value, b.value, False)  # x.sum keeps its .sum
        if isinstance(value, ast.Name) and value.id == "...":
            value = ast.Name("(...)")
        return ast.Attribute(value, a.attr), ast.Attribute(value, a.attr)
    a, b = copy.copy(a), copy.copy(b)
    if type(a) is not type(b):
        return a, b
    for name in a._fields:
        va, vb = getattr(a, name, None), getattr(b, name, None)
        if isinstance(va, ast.AST) and isinstance(vb, ast.AST):
            na, nb = _elide(va, vb, False)
            setattr(a, name, na)
            setattr(b, name, nb)
        elif isinstance(va, list) and isinstance(vb, list) and len(va) == len(vb):
            pairs = [
                _elide(x, y, False) if isinstance(x, ast.AST) and isinstance(y, ast.AST) else (x, y)
                for x, y in zip(va, vb)
            ]
            setattr(a, name, [x for x, _ in pairs])
            setattr(b, name, [y for _, y in pairs])
    return a, b


def _shorten(node: ast.AST, keep: ast.AST | None = None) -> str:
    """``node`` as source, its long parts other than ``keep`` shown as ``...``."""
    text = ast.unparse(node)
    if len(text) <= 2 * _SHORT:
        return text
    node = copy.deepcopy(node)
    for parent in ast.walk(node):
        for name in parent._fields:
            value = getattr(parent, name, None)
            children = value if isinstance(value, list) else [value]
            for i, child in enumerate(children):
                if (
                    isinstance(child, ast.expr)
                    and not _same_node(child, keep)
                    and len(ast.unparse(child)) > _SHORT
                    and not any(_same_node(n, keep) for n in ast.walk(child))
                ):
                    if isinstance(value, list):
                        value[i] = ast.Name("...")
                    else:
                        setattr(parent, name, ast.Name("..."))
    return ast.unparse(node)


def _excerpts(old: ast.AST, new: ast.AST, parent: ast.AST | None = None) -> tuple[str, str]:
    """The changed expression before and after the slip, shortened alike (a slice
    with the subscript that holds it: ``x[:-1]``, not ``:-1``)."""
    if isinstance(old, ast.Slice) and isinstance(parent, ast.Subscript):
        outer = copy.deepcopy(parent)
        if _same_node(outer.slice, old):
            outer.slice = new
        elif isinstance(outer.slice, ast.Tuple):
            outer.slice.elts = [new if _same_node(e, old) else e for e in outer.slice.elts]
        old, new = parent, outer
    elif isinstance(old, ast.BinOp) and isinstance(parent, ast.BinOp):
        # 2 * D in 2 * D * F: the slip shows in the whole product, 2 * F for 2 * D * F
        sides = [side for side in ("left", "right") if _same_node(getattr(parent, side), old)]
        products = (ast.Mult, ast.Div, ast.FloorDiv)
        chained = any(
            isinstance(old.op, kind) and isinstance(parent.op, kind)
            for kind in (products, (ast.Add, ast.Sub))
        )
        if sides and chained and len(ast.unparse(parent)) <= 2 * _SHORT:
            outer = copy.deepcopy(parent)
            setattr(outer, sides[0], new)
            old, new = parent, outer
    if type(old) is type(new):
        a, b = _elide(old, new)
        return _text(a), _text(b)
    return _shorten(old, keep=new), _shorten(new)


def _text(node: ast.AST) -> str:
    """``node`` as source, ``....sum`` written ``(...).sum``."""
    for inner in ast.walk(node):
        if isinstance(inner, ast.Attribute) and getattr(inner.value, "id", None) == "...":
            inner.value = ast.Name("(...)")
    return ast.unparse(node)


def _difference(old: ast.AST, new: ast.AST) -> tuple[ast.AST, ast.AST, tuple]:
    """The smallest pair of sub-nodes where ``old`` and ``new`` differ, and its path."""
    path: tuple = ()
    while type(old) is type(new):
        differing = []
        for name in old._fields:
            va, vb = getattr(old, name, None), getattr(new, name, None)
            if isinstance(va, list) and isinstance(vb, list) and len(va) == len(vb):
                differing += [
                    ((name, i), x, y)
                    for i, (x, y) in enumerate(zip(va, vb))
                    if not (_same_node(x, y) or x == y)
                ]
            elif isinstance(va, ast.AST) and isinstance(vb, ast.AST):
                if not _same_node(va, vb):
                    differing.append(((name,), va, vb))
            elif va != vb:
                return old, new, path
        if len(differing) != 1 or _int(old) is not None:
            break
        step, old, new = differing[0]
        path += step
    return old, new, path


#: Calls whose dim is the axis they reduce or normalise over ("the sum over dim 0").
_OVER = {"softmax", "log_softmax", "logsumexp", "cumsum", "norm", "prod", "var", "std"}

_OPERATOR_WORDS = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
    ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=",
}  # fmt: skip


def _bound_words(old: ast.AST, new: ast.AST) -> str:
    a, b, path = _difference(old, new)
    before, after = _int(a), _int(b)
    if before is not None and after is not None:
        later = after > before
    elif isinstance(b, ast.BinOp):
        later = isinstance(b.op, ast.Add)
    else:
        return "a bound off by one"
    if isinstance(old, ast.Slice):
        end = "starting" if path[:1] == ("lower",) else "stopping"
        return f"the slice {end} one {'later' if later else 'earlier'}"
    if isinstance(old, ast.Call) and path[:1] == ("keywords",):
        return f"the diagonal one {'higher' if later else 'lower'}"
    if isinstance(old, ast.Call):
        position = path[1] if len(path) > 1 else 0
        count = len(old.args)
        end = "start" if count > 1 and position == 0 else "step" if position == 2 else "end"
        what = f"`{_name(old.func)}`"
        return f"{what} with its {end} one {'higher' if later else 'lower'}"
    if isinstance(old, ast.Subscript) and getattr(old.value, "attr", None) == "shape":
        return (
            f"the size of axis {ast.unparse(b)} where the right answer takes axis {ast.unparse(a)}"
        )
    return f"the index one {'higher' if later else 'lower'}"


def _words(operator: str, old: ast.AST, new: ast.AST) -> str:
    """The slip in plain words: "the sum over dim -2 instead of dim -1"."""
    if operator == "dim":
        a, b, _ = _difference(old, new)
        name = _name(old.func) if isinstance(old, ast.Call) else None
        what = f"`{name}`" if name else "the operation"
        over = "over" if name in _REDUCTIONS or name in _OVER else "at"
        return f"{what} {over} dim {ast.unparse(b)} instead of dim {ast.unparse(a)}"
    if operator == "bound":
        return _bound_words(old, new)
    if operator in ("compare", "times") or (operator == "sign" and isinstance(old, ast.BinOp)):
        a, b, _ = _difference(old, new)
        was, now = _OPERATOR_WORDS.get(type(a), "?"), _OPERATOR_WORDS.get(type(b), "?")
        return f"`{now}` instead of `{was}`"
    if operator == "sign":
        return "a minus sign left out"
    if operator == "reduction":
        return f"`{_name(new.func)}` instead of `{_name(old.func)}`"
    if operator == "scale":
        if isinstance(old, ast.BinOp) and isinstance(old.op, ast.Mult):
            dropped = old.right if _same_node(new, old.left) else old.left
            return f"the factor `{_shorten(dropped)}` left out"
        return f"the division by `{_shorten(old.right)}` left out"
    if operator == "fill":
        return "a fill of 0 where the right answer fills with minus infinity"
    if operator == "transpose":
        return "the transpose left out"
    if operator == "keepdim":
        return "keepdim=True left out, so the reduced axis is dropped"
    return f"a slip of kind {operator}"
