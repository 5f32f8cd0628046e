"""Symbolic differentiation of kernelgen's expression trees: the first building block of fused
backward kernels (``docs/backward.md``).

* :func:`derivative` gives the partial derivative of an elementwise tree with respect to an input,
  as a new tree of the same grammar (plus :class:`Compare`, see below), simplified as it is built.
* :func:`elementwise_vjp` gives ``grad * d out / d input`` for every input the expression reads.
* :func:`rowwise_vjp` runs reverse mode through the plan of a rowwise expression
  (:meth:`ParsedExpr.plan`) and returns a :class:`RowwiseBackward`: the gradient of every input, the
  per-element contributions of every weight (their column sums over the rows are the weight
  gradients), the reductions the backward needs and the forward's per-row statistics it reads.
* :func:`cse` finds the subtrees shared by a set of trees; :func:`emit_cse` prints them as bindings
  (``_t0``, ``_t1``, ...) plus the final expressions.

Two internal nodes exist here and nowhere in the parser, so no user text can produce them:

* :class:`Compare` (``[a > b]``, ``[a < b]``, ``[a == b]``): 1.0 where the comparison holds, else 0.0.
  Derivatives of abs, min, max and of the max/min reductions need it: no continuous function of the
  grammar is exactly 0 at 0 and +-1 elsewhere.
* :class:`RowLen` (``_n``): the row length, needed only for the sum over a row of a value that is
  constant along the row (``x * sum(x - sum(x))``). A mean never needs it.

Every tree is emitted through :class:`~kernelgen.expr.ParsedExpr`'s own emitters: the internal
nodes (and the per-row values, ``_r[k]`` / ``_rk``) are first replaced by placeholder names, the
rest is printed by ``ParsedExpr.cpp()/torch()/triton()``, then each placeholder is replaced by the
text printed here for it. Names printed here are fixed: ``_grad`` (the incoming gradient), ``_t<k>``
(bound subexpressions), ``_r[k]``/``_r<k>`` (per-row values) and ``_n``; input names cannot start
with ``_`` (:func:`kernelgen.spec.check_input_name`), so none of them can clash with an input.

The simplifier assumes finite values: ``x * 0`` is 0 and ``x - x`` is 0 even where x is inf or NaN.
That is fine for derivative trees (their inputs are the forward's finite inputs) and documented.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Union

from kernelgen.emit import small_whole
from kernelgen.expr import FUNCTIONS, BinOp, Call, Neg, Num, ParsedExpr, Power, Reduce, RowRef, Var

#: The name of the incoming gradient (``dL/d out``) in the gradient trees. Input and weight names
#: start with a lowercase letter, so a name starting with '_' cannot be one of them.
GRAD = "_grad"
#: The prefix of the names :func:`cse` binds (``_t0``, ``_t1``, ...).
TEMP_PREFIX = "_t"
#: The name the row length is emitted as (:class:`RowLen`).
ROW_LENGTH = "_n"

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


# ---------------------------------------------------------------------------------------------
# Internal nodes.


@dataclass(frozen=True)
class Compare:
    """``[left op right]``: 1.0 where the comparison holds, 0.0 elsewhere (also where an operand
    is NaN: every comparison with NaN is false). ``op`` is one of ``>``, ``<``, ``==``."""

    op: str
    left: Node
    right: Node

    def __post_init__(self) -> None:
        if self.op not in _COMPARE_OPS:
            raise ValueError(f"unknown comparison {self.op!r}")


@dataclass(frozen=True)
class RowLen:
    """The length of the row (rowwise backward only), emitted as ``_n``."""


_COMPARE_OPS = (">", "<", "==")

if TYPE_CHECKING:
    # kernelgen.expr types the children of its node classes as the grammar's own union, which has
    # no Compare or RowLen: trees here mix both, so they are typed loosely for the checker.
    Node = Any
else:
    Node = Union[Num, Var, Neg, BinOp, Power, Call, Reduce, RowRef, Compare, RowLen]  # noqa: UP007
_LEAVES = (Num, Var, RowRef, RowLen)


# ---------------------------------------------------------------------------------------------
# Tree helpers (our own: only the public node types are imported from kernelgen.expr).


def is_leaf(node: Node) -> bool:
    """Whether ``node`` has no subtrees: a number, a variable, a row's reduction (RowRef) or the row length."""
    return isinstance(node, _LEAVES)


def children(node: Node) -> tuple[Node, ...]:
    """The direct subtrees of ``node``, left to right."""
    if isinstance(node, (Neg,)):
        return (node.operand,)
    if isinstance(node, (BinOp, Compare)):
        return (node.left, node.right)
    if isinstance(node, Power):
        return (node.base,)
    if isinstance(node, Call):
        return node.args
    if isinstance(node, Reduce):
        return (node.arg,)
    return ()


def rebuild(node: Node, kids: Iterable[Node]) -> Node:
    """``node`` with its children replaced by ``kids`` (not simplified)."""
    kids = tuple(kids)
    if isinstance(node, Neg):
        return Neg(kids[0])
    if isinstance(node, BinOp):
        return BinOp(node.op, kids[0], kids[1])
    if isinstance(node, Compare):
        return Compare(node.op, kids[0], kids[1])
    if isinstance(node, Power):
        return Power(kids[0], node.exponent)
    if isinstance(node, Call):
        return Call(node.func, kids)
    if isinstance(node, Reduce):
        return Reduce(node.func, kids[0])
    return node


def transform(node: Node, fn: Callable[[Node], Node | None], memo: dict[Node, Node] | None = None) -> Node:
    """``node`` rewritten from the top: where ``fn(n)`` returns a node, it replaces ``n`` (and is not
    descended into); where it returns None, ``n`` is rebuilt from its transformed children. ``memo``
    (each node's rewrite under this ``fn``) may be passed in, so that an ``fn`` that transforms parts of
    a node itself shares one walk with its caller."""
    memo = {} if memo is None else memo

    def go(n: Node) -> Node:
        if n in memo:
            return memo[n]
        out = fn(n)
        if out is None:
            kids = children(n)
            out = rebuild(n, [go(k) for k in kids]) if kids else n
        memo[n] = out
        return out

    return go(node)


def walk(node: Node) -> Iterable[Node]:
    """Every node of the tree, parents before children."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(children(current)))


def size(node: Node) -> int:
    """The number of nodes of the tree."""
    return sum(1 for _ in walk(node))


def variables(node: Node) -> frozenset[str]:
    """The names (inputs, weights, the gradient, bound temporaries) the tree reads."""
    return frozenset(n.name for n in walk(node) if isinstance(n, Var))


def has_internal(node: Node) -> bool:
    """True if the tree has a :class:`Compare` or :class:`RowLen` (no grammar text for it)."""
    return any(isinstance(n, (Compare, RowLen)) for n in walk(node))


def has_reduction(node: Node) -> bool:
    return any(isinstance(n, (Reduce, RowRef)) for n in walk(node))


def row_varying(node: Node) -> bool:
    """True if the value changes along the row: the tree reads a name outside any reduction."""
    if isinstance(node, Var):
        return True
    if isinstance(node, (Reduce, RowRef, RowLen, Num)):
        return False
    return any(row_varying(child) for child in children(node))


# ---------------------------------------------------------------------------------------------
# Smart constructors: every derivative is built through them, so it comes out simplified.


def _is(node: Node, value: float) -> bool:
    return isinstance(node, Num) and node.value == value


def _coefficient(node: Node) -> tuple[float, Node | None]:
    """``node`` as ``c * rest`` (rest None for a number)."""
    if isinstance(node, Num):
        return node.value, None
    if isinstance(node, Neg):
        c, rest = _coefficient(node.operand)
        return -c, rest
    if isinstance(node, BinOp) and node.op == "*" and isinstance(node.left, Num):
        return node.left.value, node.right
    return 1.0, node


def _factors(node: Node) -> list[Node]:
    """The factors of a chain of products, left to right."""
    if isinstance(node, BinOp) and node.op == "*":
        return [*_factors(node.left), *_factors(node.right)]
    return [node]


def _same_product(p: Node, q: Node) -> bool:
    """Whether ``p`` and ``q`` are the same product of the same factors, in any order and grouping
    (``a * (b * c)`` and ``(c * a) * b``): equal in exact arithmetic, so ``c1 * p + c2 * q`` is
    ``(c1 + c2) * p`` within the roundings the products already make."""
    if p == q:
        return True
    fp, fq = _factors(p), _factors(q)
    if len(fp) != len(fq) or len(fp) == 1:
        return False
    rest = list(fq)
    for factor in fp:
        if factor not in rest:
            return False
        rest.remove(factor)
    return True


def _fold(fn: Callable[..., float], *values: float) -> Num | None:
    try:
        result = fn(*values)
    except (ValueError, ZeroDivisionError, OverflowError, TypeError):
        return None
    if isinstance(result, (int, float)) and not isinstance(result, bool) and math.isfinite(result):
        return Num(float(result))
    return None


def num(value: float) -> Num:
    return Num(float(value))


def neg(a: Node) -> Node:
    if isinstance(a, Num):
        return Num(-a.value)
    if isinstance(a, Neg):
        return a.operand
    if isinstance(a, BinOp) and a.op == "*" and isinstance(a.left, Num):
        return mul(Num(-a.left.value), a.right)
    if isinstance(a, BinOp) and a.op == "/" and isinstance(a.left, Num):
        return div(Num(-a.left.value), a.right)
    return Neg(a)


def add(a: Node, b: Node) -> Node:
    if isinstance(a, Num) and isinstance(b, Num):
        return _fold(lambda x, y: x + y, a.value, b.value) or BinOp("+", a, b)
    if _is(a, 0):
        return b
    if _is(b, 0):
        return a
    if isinstance(b, Neg):
        return sub(a, b.operand)
    if isinstance(b, Num) and b.value < 0:
        return sub(a, Num(-b.value))
    if isinstance(a, Neg):
        return sub(b, a.operand)
    if isinstance(a, Num):  # the number last: x + 1.0
        return add(b, a)
    if isinstance(b, Num) and isinstance(a, BinOp) and a.op in "+-" and isinstance(a.right, Num):
        c = _fold(lambda x, y: x + y, a.right.value if a.op == "+" else -a.right.value, b.value)
        if c is not None:
            return add(a.left, c)  # (p + 8) + 2 = p + 10
    ca, ra = _coefficient(a)
    cb, rb = _coefficient(b)
    if ra is not None and rb is not None and _same_product(ra, rb):
        return mul(num(ca + cb), ra)
    if isinstance(b, BinOp) and b.op == "*" and isinstance(b.left, Num) and b.left.value < 0:
        return sub(a, mul(Num(-b.left.value), b.right))
    return BinOp("+", a, b)


def sub(a: Node, b: Node) -> Node:
    if isinstance(a, Num) and isinstance(b, Num):
        return _fold(lambda x, y: x - y, a.value, b.value) or BinOp("-", a, b)
    if _is(b, 0):
        return a
    if _is(a, 0):
        return neg(b)
    if isinstance(b, Neg):
        return add(a, b.operand)
    if isinstance(b, Num) and b.value < 0:
        return add(a, Num(-b.value))
    if a == b:
        return Num(0.0)  # assumes finite values (module docstring)
    if isinstance(b, Num) and isinstance(a, BinOp) and a.op in "+-" and isinstance(a.right, Num):
        c = _fold(lambda x, y: x - y, a.right.value if a.op == "+" else -a.right.value, b.value)
        if c is not None:
            return add(a.left, c)  # (p + 8) - 8 = p
    ca, ra = _coefficient(a)
    cb, rb = _coefficient(b)
    if ra is not None and rb is not None and _same_product(ra, rb):
        return mul(num(ca - cb), ra)
    if isinstance(b, BinOp) and b.op == "*" and isinstance(b.left, Num) and b.left.value < 0:
        return add(a, mul(Num(-b.left.value), b.right))
    if isinstance(a, Neg):
        return neg(add(a.operand, b))
    return BinOp("-", a, b)


def _whole(value: float) -> bool:
    return value == int(value)


def mul(a: Node, b: Node) -> Node:
    if isinstance(a, Num) and isinstance(b, Num):
        return _fold(lambda x, y: x * y, a.value, b.value) or BinOp("*", a, b)
    if _is(a, 0) or _is(b, 0):
        return Num(0.0)  # assumes finite values (module docstring)
    if _is(a, 1):
        return b
    if _is(b, 1):
        return a
    if _is(a, -1):
        return neg(b)
    if _is(b, -1):
        return neg(a)
    if isinstance(a, Neg):
        return neg(mul(a.operand, b))
    if isinstance(b, Neg):
        return neg(mul(a, b.operand))
    if isinstance(b, Num):  # numbers first: 2.0 * x
        return mul(b, a)
    ca, ra = _coefficient(a)
    cb, rb = _coefficient(b)
    if (ca != 1 or cb != 1) and ra is not None and rb is not None:
        # pull the numeric factors to the front and combine them: (2 * x) * (3 * y) = 6 * (x * y)
        c = _fold(lambda x, y: x * y, ca, cb)
        if c is not None:
            return mul(c, mul(ra, rb))
    if isinstance(a, Num):
        if cb != 1 and rb is not None:
            c = _fold(lambda x, y: x * y, a.value, cb)
            if c is not None:
                return mul(c, rb)  # 2 * (3 * y) = 6 * y
        if isinstance(b, BinOp) and b.op == "/" and isinstance(b.left, Num):
            c = _fold(lambda x, y: x * y, a.value, b.left.value)
            if c is not None:
                return div(c, b.right)  # 2 * (3 / y) = 6 / y
        return BinOp("*", a, b)
    if a == b:
        return power(a, 2.0)
    for p, q in ((a, b), (b, a)):  # x ** 2 * x = x ** 3 (whole exponents only: exact everywhere)
        if isinstance(p, Power) and _whole(p.exponent) and p.exponent > 0:
            if p.base == q:
                return power(q, p.exponent + 1)
            if isinstance(q, Power) and q.base == p.base and _whole(q.exponent) and q.exponent > 0:
                return power(q.base, p.exponent + q.exponent)
    return BinOp("*", a, b)


def _power_of_two(value: float) -> bool:
    return value != 0 and math.isfinite(value) and math.frexp(abs(value))[0] == 0.5


def div(a: Node, b: Node) -> Node:
    if _is(b, 0):
        raise ZeroDivisionError("division by the number 0 in a derivative")  # pragma: no cover
    if isinstance(a, Num) and isinstance(b, Num):
        return _fold(lambda x, y: x / y, a.value, b.value) or BinOp("/", a, b)
    if _is(b, 1):
        return a
    if _is(b, -1):
        return neg(a)
    if _is(a, 0):
        return Num(0.0)  # assumes finite values
    if isinstance(a, Neg):
        return neg(div(a.operand, b))
    if isinstance(b, Neg):
        return neg(div(a, b.operand))
    if isinstance(b, Num) and _power_of_two(b.value):
        return mul(Num(1.0 / b.value), a)  # x / 4 = 0.25 * x exactly
    ca, ra = _coefficient(a)
    if ca != 1 and ra is not None and not isinstance(b, Num):
        return mul(Num(ca), div(ra, b))  # (2 * x) / y = 2 * (x / y)
    if isinstance(b, BinOp) and b.op == "/":  # a / (p / q) = a * q / p
        return div(mul(a, b.right), b.left)
    if isinstance(a, BinOp) and a.op == "/":  # (p / q) / b = p / (q * b)
        return div(a.left, mul(a.right, b))
    if isinstance(b, Power) and b.exponent < 0:  # a / x ** -k = a * x ** k
        return mul(a, power(b.base, -b.exponent))
    return BinOp("/", a, b)


def power(base: Node, exponent: float) -> Node:
    exponent = float(exponent)
    if exponent == 1:
        return base
    if exponent == 0:
        return Num(1.0)  # x ** 0 is 1 everywhere in PyTorch, NaN included
    if isinstance(base, Num):
        folded = _fold(math.pow, base.value, exponent)
        if folded is not None:
            return folded
    if exponent == 0.5:
        return call("sqrt", base)
    if exponent == -0.5:
        return call("rsqrt", base)
    if isinstance(base, Power) and _whole(base.exponent) and _whole(exponent):
        return power(base.base, base.exponent * exponent)
    return Power(base, exponent)


def call(func: str, *args: Node) -> Node:
    if func not in FUNCTIONS:
        raise ValueError(f"unknown function {func!r}")  # pragma: no cover
    if all(isinstance(arg, Num) for arg in args):
        folded = _fold(FUNCTIONS[func].fold, *(arg.value for arg in args))
        if folded is not None:
            return folded
    return Call(func, tuple(args))


def compare(op: str, a: Node, b: Node) -> Node:
    if isinstance(a, Num) and isinstance(b, Num):
        holds = {">": a.value > b.value, "<": a.value < b.value, "==": a.value == b.value}[op]
        return Num(1.0 if holds else 0.0)
    return Compare(op, a, b)


def simplify(node: Node) -> Node:
    """``node`` rebuilt bottom-up through the smart constructors (constant folding, x * 1, x * 0,
    x + 0, --x, x / 1, x ** 1, numeric factors combined, ...)."""

    def go(n: Node) -> Node:
        kids = [go(k) for k in children(n)]
        if isinstance(n, Neg):
            return neg(kids[0])
        if isinstance(n, BinOp):
            return {"+": add, "-": sub, "*": mul, "/": div}[n.op](kids[0], kids[1])
        if isinstance(n, Compare):
            return compare(n.op, kids[0], kids[1])
        if isinstance(n, Power):
            return power(kids[0], n.exponent)
        if isinstance(n, Call):
            return call(n.func, *kids)
        if isinstance(n, Reduce):
            return Reduce(n.func, kids[0])
        return n

    return go(node)


# ---------------------------------------------------------------------------------------------
# Derivatives.


def _sign(u: Node) -> Node:
    """sign(u) with sign(0) = 0 and sign(NaN) = 0: torch.sgn, which abs's backward uses."""
    return sub(compare(">", u, Num(0.0)), compare("<", u, Num(0.0)))


def _d(node: Node, wrt: Node, memo: dict[Node, Node]) -> Node:
    if node in memo:
        return memo[node]
    result = _d_uncached(node, wrt, memo)
    memo[node] = result
    return result


def _d_uncached(node: Node, wrt: Node, memo: dict[Node, Node]) -> Node:
    if node == wrt:
        return Num(1.0)
    if isinstance(node, (Num, Var, RowRef, RowLen, Compare)):
        return Num(0.0)  # a comparison is piecewise constant
    if isinstance(node, Reduce):
        raise ValueError("a tree with row reductions is differentiated through rowwise_vjp()")
    if isinstance(node, Neg):
        return neg(_d(node.operand, wrt, memo))
    if isinstance(node, BinOp):
        a, b = node.left, node.right
        da, db = _d(a, wrt, memo), _d(b, wrt, memo)
        if node.op == "+":
            return add(da, db)
        if node.op == "-":
            return sub(da, db)
        if node.op == "*":
            return add(mul(da, b), mul(a, db))
        # d(a / b) = da / b - a * db / b ** 2 (PyTorch: grad / b and -grad * a / (b * b)); with db = 0, da / b
        # alone (b ** 2 of a tiny literal is 0 in a double, and 0 / 0 has no value)
        if _is(db, 0):
            return div(da, b)
        return sub(div(da, b), div(mul(a, db), power(b, 2.0)))
    if isinstance(node, Power):
        du = _d(node.base, wrt, memo)
        if _is(du, 0):
            return Num(0.0)
        e = node.exponent
        return mul(mul(Num(e), power(node.base, e - 1)), du)
    if isinstance(node, Call):
        return _d_call(node, wrt, memo)
    raise AssertionError(f"unknown node {node!r}")  # pragma: no cover


def _d_call(node: Call, wrt: Node, memo: dict[Node, Node]) -> Node:
    f = node.func
    if f in ("min", "max"):
        return _d_minmax(node, wrt, memo)
    if f == "pow":
        a, b = node.args
        da, db = _d(a, wrt, memo), _d(b, wrt, memo)
        # d a**b = b * a**(b-1) da + a**b log(a) db (PyTorch's pow backward for a > 0)
        part_a = Num(0.0) if _is(da, 0) else mul(mul(b, _pow(a, sub(b, Num(1.0)))), da)
        part_b = Num(0.0) if _is(db, 0) else mul(mul(node, call("log", a)), db)
        return add(part_a, part_b)
    (u,) = node.args
    du = _d(u, wrt, memo)
    if _is(du, 0):
        return Num(0.0)
    if f == "log":
        return div(du, u)
    if f == "sqrt":  # PyTorch: grad / (2 * sqrt(u))
        return mul(Num(0.5), div(du, node))
    if f == "exp":
        outer: Node = node
    elif f == "rsqrt":  # PyTorch: -0.5 * rsqrt(u) ** 3
        outer = mul(Num(-0.5), power(node, 3.0))
    elif f == "tanh":
        outer = sub(Num(1.0), power(node, 2.0))
    elif f == "sigmoid":
        outer = mul(node, sub(Num(1.0), node))
    elif f == "abs":
        outer = _sign(u)
    elif f == "sin":
        outer = call("cos", u)
    elif f == "cos":
        outer = neg(call("sin", u))
    elif f == "erf":
        outer = mul(Num(_TWO_OVER_SQRT_PI), call("exp", neg(power(u, 2.0))))
    else:  # pragma: no cover
        raise AssertionError(f"no derivative for {f}")
    return mul(outer, du)


def _pow(a: Node, b: Node) -> Node:
    return power(a, b.value) if isinstance(b, Num) else call("pow", a, b)


def _d_minmax(node: Call, wrt: Node, memo: dict[Node, Node]) -> Node:
    """The subgradient of min/max that PyTorch's reference gives (kernelgen's torch() form):

    * two tensors, ``torch.maximum(a, b)``: a gets 1 where a > b, 1/2 where a == b, 0 where a < b
      and 1 where either is NaN (``where(a == b, g / 2, g).masked_fill_(a < b, 0)``), so
      ``1 - [a < b] - 0.5 [a == b]``; b the mirror. ``minimum`` the same with the order reversed.
    * a literal bound, ``torch.clamp(x, min=c)``: x gets ``[x > c]`` (0 at the tie and at NaN);
      ``clamp(x, max=c)``: ``[x < c]``.
    """
    a, b = node.args
    strict = ">" if node.func == "max" else "<"
    other = "<" if node.func == "max" else ">"
    if isinstance(b, Num) or isinstance(a, Num):
        x, c = (a, b) if isinstance(b, Num) else (b, a)
        return mul(compare(strict, x, c), _d(x, wrt, memo))
    da, db = _d(a, wrt, memo), _d(b, wrt, memo)
    half_tie = mul(Num(0.5), compare("==", a, b))
    part_a = Num(0.0) if _is(da, 0) else mul(sub(sub(Num(1.0), compare(other, a, b)), half_tie), da)
    part_b = Num(0.0) if _is(db, 0) else mul(sub(sub(Num(1.0), compare(strict, a, b)), half_tie), db)
    return add(part_a, part_b)


def derivative(tree: Node, var: str | Node) -> Node:
    """The partial derivative of the elementwise ``tree`` with respect to the input ``var`` (a
    name, or a :class:`~kernelgen.expr.RowRef` to differentiate a plan's tree by a reduction's
    value), simplified. Subgradients: see ``docs/backward.md`` (abs, min, max match PyTorch)."""
    wrt = Var(var) if isinstance(var, str) else var
    return _d(tree, wrt, {})


def elementwise_vjp(parsed: ParsedExpr, grad: str = GRAD) -> dict[str, Node]:
    """``grad * d out / d x`` for every input ``x`` the expression reads, in the order of
    ``parsed.inputs``. Inputs it does not read (``require_all=False``) are left out; an input it
    reads whose derivative simplifies to 0 (``x - x + y``) maps to ``Num(0.0)``."""
    if parsed.rowwise and has_reduction(parsed.tree):
        raise ValueError("a rowwise expression is differentiated through rowwise_vjp()")
    used = variables(parsed.tree)
    names = [name for name in parsed.inputs if name in used]
    grads = _chain_through(names, [parsed.tree], lambda wrt: mul(Var(grad), derivative(parsed.tree, wrt)))
    return dict(zip(names, _reciprocals([grads[name] for name in names], ()), strict=True))


# ---------------------------------------------------------------------------------------------
# Emission: through ParsedExpr's own emitters, with placeholders for what only we print.

_STYLES = ("cpp", "torch", "triton", "canonical")
_PLACEHOLDER = "_kgdiffhole"
_HOLE = re.compile(r"(?<![A-Za-z0-9_])" + _PLACEHOLDER + r"(\d+)(?![A-Za-z0-9_])")


def as_parsed(tree: Node, like: ParsedExpr, extra_inputs: Iterable[str] = ()) -> ParsedExpr:
    """A :class:`ParsedExpr` for a grammar tree built here (no :class:`Compare`/:class:`RowLen`),
    over ``like``'s inputs (plus ``extra_inputs``, e.g. the gradient name) and weights: its
    ``source`` is the canonical text, which parses back to ``tree`` (within the parser's limits:
    depth, length, and at least one input)."""
    if has_internal(tree):
        raise ValueError("the tree has a comparison or the row length: emit it with emit()")
    inputs = tuple(dict.fromkeys((*like.inputs, *extra_inputs)))
    probe = ParsedExpr("", inputs, tree, like.weights, like.rowwise)
    return ParsedExpr(probe.canonical, inputs, tree, like.weights, like.rowwise)


def emit(tree: Node, style: str = "cpp", *, acc_type: str = "acc_t", acc: str = "ACC",
         exact: bool = False, exact_nodes: Collection[Node] = ()) -> str:
    """The text of ``tree`` in ``style`` (``cpp``, ``torch``, ``triton`` or ``canonical``).

    Comparisons print as ``(a > b ? acc_t(1.0) : acc_t(0.0))`` (C++), ``(a > b).to(ACC)`` (Triton),
    ``(a > b).type_as(a)`` (PyTorch: the dtype of the non-literal operand) and ``[a > b]``
    (canonical, display only). Per-row values (:class:`RowRef`) print as ``_r[k]`` (C++) or ``_rk``,
    the row length as ``_n``. Reductions are not printed here (see :meth:`RowwiseBackward.emit`)
    except in the canonical style.

    ``exact`` (C++ and Triton) prints every sum, difference and product, whole powers included, with
    round-to-nearest operations the compiler never contracts into a fused multiply-add (``opmath::add_rn``,
    ``sub_rn``, ``mul_rn`` and ``ipow<N, true>``; ``libdevice.add_rn``, ``sub_rn`` and ``mul_rn``): two copies of
    such an expression in one kernel give the same bits however each is compiled. A mask ``[f == max(f)]``
    needs that. Without it, a copy contracts ``a * b + c`` or not by how its products are used around it,
    and so does a function's last multiplication with the addition that reads its result.

    ``exact_nodes`` prints only those subtrees (wherever they occur) as ``exact`` does, the rest as usual: a
    kernel that computes such a subtree exactly elsewhere then computes the very same operations here, which
    the compiler merges into one (a function of it, ``cos(f)``, included) instead of computing both."""
    if style not in _STYLES:
        raise ValueError(f"unknown style {style!r}; choose from {', '.join(_STYLES)}")
    holes: list[str] = []

    def hole(text: str) -> Node:
        holes.append(text)
        return Var(f"{_PLACEHOLDER}{len(holes) - 1}")

    def lift(node: Node) -> Node | None:
        if isinstance(node, Compare):
            left = emit(node.left, style, acc_type=acc_type, acc=acc)
            right = emit(node.right, style, acc_type=acc_type, acc=acc)
            cond = f"{left} {node.op} {right}"
            if style == "cpp":
                return hole(f"({cond} ? {acc_type}(1.0) : {acc_type}(0.0))")
            if style == "triton":
                return hole(f"({cond}).to({acc})")
            if style == "torch":
                like = right if isinstance(node.left, Num) else left
                return hole(f"({cond}).type_as({like})")
            return hole(f"[{cond}]")
        if isinstance(node, RowRef):
            return hole(f"_r[{node.index}]" if style == "cpp" else f"_r{node.index}")
        if isinstance(node, RowLen):
            return hole(ROW_LENGTH)
        if (exact or node in exact_nodes) and style in ("cpp", "triton"):
            text = _exact_text(node, style, acc_type, acc)
            if text is not None:
                return hole(text)
        if isinstance(node, Reduce):
            if style != "canonical":
                raise ValueError("reductions are emitted through RowwiseBackward.emit()")
            return hole(f"{node.func}({emit(node.arg, style)})")
        return None

    lifted = transform(tree, lift)
    carrier = ParsedExpr("", (), lifted)
    if style == "cpp":
        text = carrier.cpp(acc_type)
    elif style == "torch":
        text = carrier.torch()
    elif style == "triton":
        text = carrier.triton(acc)
    else:
        text = carrier.canonical
    return _HOLE.sub(lambda m: holes[int(m.group(1))], text)


_EXACT_OPS = {"+": "add_rn", "-": "sub_rn", "*": "mul_rn"}


def _exact_text(node: Node, style: str, acc_type: str, acc: str) -> str | None:
    """``node`` as an exact operation (see :func:`emit`), or None where it is not a sum, difference,
    product or whole power."""
    def operand(tree: Node) -> str:
        return emit(tree, style, acc_type=acc_type, acc=acc, exact=True)

    prefix = "opmath::" if style == "cpp" else "libdevice."
    if isinstance(node, BinOp) and node.op in _EXACT_OPS:
        return f"{prefix}{_EXACT_OPS[node.op]}({operand(node.left)}, {operand(node.right)})"
    exponent: float | None = None
    base: Node | None = None
    if isinstance(node, Power):
        base, exponent = node.base, node.exponent
    elif isinstance(node, Call) and node.func == "pow" and isinstance(node.args[1], Num):
        base, exponent = node.args[0], node.args[1].value
    if base is None or exponent is None:
        return None
    if style == "cpp" and small_whole(exponent) and exponent not in (0.0, 1.0):
        return f"opmath::ipow<{int(exponent)}, true>({operand(base)})"
    if style == "triton" and exponent in (2.0, 3.0, 4.0):
        text = operand(base)
        return "libdevice.mul_rn(" * (int(exponent) - 1) + text + f", {text})" * (int(exponent) - 1)
    return None


def canonical(tree: Node) -> str:
    """The tree printed in kernelgen's expression syntax; ``[a > b]`` and ``_n`` for the
    internal nodes (display only: those do not parse)."""
    return emit(tree, "canonical")


# ---------------------------------------------------------------------------------------------
# Common subexpressions.


def _cse_candidate(node: Node) -> bool:
    if is_leaf(node) or isinstance(node, Reduce):
        return False
    if isinstance(node, Neg) and is_leaf(node.operand):
        return False
    return not any(isinstance(n, Reduce) for n in walk(node))


def cse(trees: Iterable[Node], prefix: str = TEMP_PREFIX) -> tuple[list[tuple[str, Node]], list[Node]]:
    """Bind the subtrees that occur more than once across ``trees``: returns the bindings
    ``[(name, tree)]`` in evaluation order (a binding reads only earlier ones) and the trees
    rewritten over the names ``<prefix>0``, ``<prefix>1``, ... Largest repeated subtree first, so
    ``sigmoid(1.702 * x)`` is bound once and ``1.702 * x`` inside it is not bound again unless it
    also occurs elsewhere. Subtrees with reductions are left alone (the plan computes those)."""
    current = list(trees)
    bound: list[tuple[str, Node]] = []
    order: dict[Node, int] = {}
    while True:
        counts: dict[Node, int] = {}
        for root in current + [body for _, body in bound]:
            for node in walk(root):
                if _cse_candidate(node):
                    counts[node] = counts.get(node, 0) + 1
                    order.setdefault(node, len(order))
        repeated = [node for node, count in counts.items() if count >= 2]
        if not repeated:
            break
        best = max(repeated, key=lambda n: (size(n), -order[n]))
        name = Var(f"{_PLACEHOLDER}{len(bound)}")

        def swap(n: Node, best: Node = best, name: Var = name) -> Node | None:
            return name if n == best else None

        current = [transform(t, swap) for t in current]
        bound = [(k, transform(body, swap)) for k, body in bound]
        bound.append((name.name, best))
    # evaluation order: a binding after those it reads; then the final names
    bodies = dict(bound)
    done: list[str] = []

    def visit(key: str) -> None:
        if key in done:
            return
        for dep in sorted(variables(bodies[key]) & bodies.keys()):
            visit(dep)
        done.append(key)

    for key, _ in bound:
        visit(key)
    rename = {key: Var(f"{prefix}{index}") for index, key in enumerate(done)}

    def final(n: Node) -> Node | None:
        return rename.get(n.name) if isinstance(n, Var) else None

    bindings = [(rename[key].name, transform(bodies[key], final)) for key in done]
    return bindings, [transform(t, final) for t in current]


def emit_cse(
    trees: Iterable[Node], style: str = "cpp", *, acc_type: str = "acc_t", acc: str = "ACC",
    prefix: str = TEMP_PREFIX,
) -> tuple[list[tuple[str, str]], list[str]]:
    """:func:`cse`, printed: ``([(name, text)], [text of each tree])``. A C++ caller writes
    ``const acc_t _t0 = <text>;`` per binding, a Triton or PyTorch one ``_t0 = <text>``."""
    bindings, rewritten = cse(trees, prefix)
    return (
        [(name, emit(body, style, acc_type=acc_type, acc=acc)) for name, body in bindings],
        [emit(t, style, acc_type=acc_type, acc=acc) for t in rewritten],
    )


# ---------------------------------------------------------------------------------------------
# Rowwise: reverse mode through the plan.


@dataclass(frozen=True)
class BackwardStage:
    """One reduction of the backward: ``func`` over the row of ``arg``, which reads the inputs,
    the weights, the incoming gradient and earlier stages of the backward (as
    :class:`~kernelgen.expr.RowRef`, this plan's numbering). ``forward`` is the index of the
    forward reduction it equals (a per-row statistic the forward can save), or None when only the
    backward needs it."""

    func: str
    arg: Node
    forward: int | None
    canonical: str


@dataclass(frozen=True)
class RowwiseBackward:
    """The backward of a rowwise expression (:func:`rowwise_vjp`).

    ``inputs`` maps each input the expression reads to ``dL/dx`` as a rowwise tree (with
    :class:`~kernelgen.expr.Reduce` nodes; :class:`Compare`/:class:`RowLen` where needed).
    ``weights`` maps each weight to the per-element contribution ``dL/dw`` of one row: the weight's
    gradient is its sum over the rows (a column reduction the backward kernel adds).
    ``stages`` is the evaluation order of every reduction these trees read, inner first; the plan
    forms (``input_plan``, ``weight_plan``) read them as ``RowRef``. ``stabilizers`` are the forward
    max/min reductions found to have a zero total adjoint (the output does not change when that
    per-row value moves and the later reductions follow), shown symbolically: their adjoints cancel.
    """

    forward: ParsedExpr
    grad: str
    inputs: dict[str, Node]
    weights: dict[str, Node]
    stages: tuple[BackwardStage, ...]
    input_plan: dict[str, Node]
    weight_plan: dict[str, Node]
    stabilizers: tuple[int, ...] = field(default=())

    @property
    def saved(self) -> tuple[int, ...]:
        """The forward reductions (indexes into ``forward.plan().reductions``) the backward reads:
        the per-row statistics a fused forward can store so the backward does not recompute them."""
        return tuple(sorted(stage.forward for stage in self.stages if stage.forward is not None))

    @property
    def extra(self) -> tuple[BackwardStage, ...]:
        """The reductions only the backward computes (beyond the forward's)."""
        return tuple(stage for stage in self.stages if stage.forward is None)

    def emit(self, *, acc_type: str = "acc_t", acc: str = "ACC") -> dict[str, object]:
        """Every printed form a backward template needs. ``reductions``: per stage its function,
        ``forward`` index (or None), canonical text and the argument in ``cpp``/``torch``/``triton``
        (earlier stages as ``_r[k]`` / ``_rk``). Per style, ``bindings`` (``[(name, text)]``, the
        subexpressions the outputs share) and ``inputs``/``weights`` (name -> text over those
        bindings). The row length, where used, is ``_n``; the incoming gradient ``self.grad``."""
        names = [*self.input_plan, *self.weight_plan]
        trees = [*self.input_plan.values(), *self.weight_plan.values()]
        out: dict[str, object] = {
            "reductions": [
                {
                    "func": stage.func, "forward": stage.forward, "canonical": stage.canonical,
                    **{style: emit(stage.arg, style, acc_type=acc_type, acc=acc) for style in ("cpp", "torch", "triton")},
                }
                for stage in self.stages
            ],
        }
        for style in ("cpp", "torch", "triton"):
            bindings, texts = emit_cse(trees, style, acc_type=acc_type, acc=acc)
            by_name = dict(zip(names, texts, strict=True))
            out[style] = {
                "bindings": bindings,
                "inputs": {name: by_name[name] for name in self.input_plan},
                "weights": {name: by_name[name] for name in self.weight_plan},
            }
        return out


def rowwise_vjp(parsed: ParsedExpr, grad: str = GRAD) -> RowwiseBackward:
    """Reverse mode through ``parsed.plan()``.

    With r_k = R_k over the row of f_k (R in sum, mean, max, min) and out = F, the adjoint density
    of r_k is ``a_k = g * dF/dr_k + sum_{k' > k} e_k' * m_k' * df_k'/dr_k`` and the per-row factor
    ``e_k`` is ``sum(a_k)`` (sum), ``mean(a_k)`` (mean: no row length needed) or
    ``sum(a_k) / sum([f_k == r_k])`` (max/min: PyTorch splits the gradient evenly among tied
    extrema), with ``m_k = [f_k == r_k]`` for max/min and 1 otherwise. Then
    ``dL/dx = g * dF/dx + sum_k e_k * m_k * df_k/dx``; a weight gets the same per element.

    Each ``sum(a_k)`` is taken apart by linearity (:func:`_reduce_linear`): factors constant along
    the row come out, reductions equal to a forward one become that per-row value, and like terms
    cancel. So every backward-only reduction reads only the inputs, weights, the gradient and the
    forward's per-row values (one pass over the row computes them all), and the adjoint of a max that
    only stabilizes (softmax, log-softmax, logsumexp) cancels to exactly zero: such a reduction is
    listed in ``stabilizers`` and needs no mask and no count.
    """
    if not parsed.rowwise:
        raise ValueError("rowwise_vjp() takes a rowwise expression; use elementwise_vjp()")
    plan = parsed.plan()
    stages = plan.reductions
    g = Var(grad)
    known = {(stage.func, _poly_key(_poly(stage.arg))): RowRef(k) for k, stage in enumerate(stages)}

    masks: dict[int, Node] = {
        k: compare("==", stage.arg, RowRef(k)) for k, stage in enumerate(stages) if stage.func in ("max", "min")
    }
    factor: dict[int, Node] = {}  # e_k, in plan form (RowRef = the forward's reductions)
    zero_adjoint: list[int] = []
    for k in reversed(range(len(stages))):
        density = mul(g, derivative(plan.output, RowRef(k)))
        for later in range(k + 1, len(stages)):
            if later in factor:
                inner = derivative(stages[later].arg, RowRef(k))
                density = add(density, mul(factor[later], mul(masks.get(later, Num(1.0)), inner)))
        func = stages[k].func
        total = _reduce_linear("mean" if func == "mean" else "sum", density, known)
        if _is(total, 0):
            zero_adjoint.append(k)
            continue
        if func in ("sum", "mean"):
            factor[k] = total
        else:
            factor[k] = div(total, _reduce_linear("sum", masks[k], known))

    def adjoint(wrt: Node) -> Node:
        total = mul(g, derivative(plan.output, wrt))
        for k, stage in enumerate(stages):
            if k in factor:
                total = add(total, mul(factor[k], mul(masks.get(k, Num(1.0)), derivative(stage.arg, wrt))))
        return total

    used = variables(parsed.tree)
    read = [plan.output, *(stage.arg for k, stage in enumerate(stages) if k in factor)]
    grads = _chain_through([name for name in (*parsed.inputs, *parsed.weights) if name in used], read, adjoint)
    input_trees = {name: grads[name] for name in parsed.inputs if name in used}
    weight_trees = {name: grads[name] for name in parsed.weights if name in used}

    # back to the rowwise grammar: every RowRef becomes the forward's reduction again
    expanded: dict[int, Node] = {}
    for k, stage in enumerate(stages):
        expanded[k] = Reduce(stage.func, _expand(stage.arg, expanded))
    input_trees = {name: _expand(t, expanded) for name, t in input_trees.items()}
    weight_trees = {name: _expand(t, expanded) for name, t in weight_trees.items()}

    backward_stages, planned = _plan_backward([*input_trees.values(), *weight_trees.values()], expanded)
    planned = _reciprocals(planned, [stage.arg for stage in backward_stages])
    names = [*input_trees, *weight_trees]
    by_name = dict(zip(names, planned, strict=True))
    return RowwiseBackward(
        forward=parsed, grad=grad, inputs=input_trees, weights=weight_trees, stages=backward_stages,
        input_plan={name: by_name[name] for name in input_trees},
        weight_plan={name: by_name[name] for name in weight_trees},
        stabilizers=tuple(sorted(zero_adjoint)),
    )


# Sums of products, to take a reduction apart by linearity. A monomial is a sorted tuple of
# (atom, whole exponent); a polynomial maps monomials to their coefficients. Atoms are the nodes
# that are not + - * / or a whole power: calls, names, per-row values, reductions, comparisons, and
# sums that vary along the row (kept whole inside a product, so sum(g * (x - m)) stays one reduction).

Mono = tuple[tuple[Node, int], ...]
Poly = dict[Mono, float]
_ATOM_KEYS: dict[Node, str] = {}


def _atom_key(node: Node) -> str:
    key = _ATOM_KEYS.get(node)
    if key is None:
        # names first, then per-row values, then the rest: _grad * w * exp(x - max(x))
        rank = 0 if isinstance(node, Var) else 1 if isinstance(node, (RowRef, RowLen)) else 2
        key = f"{rank}{type(node).__name__}:{canonical(node)}"
        if len(_ATOM_KEYS) > 100_000:  # pragma: no cover - a bound on the cache, never reached in tests
            _ATOM_KEYS.clear()
        _ATOM_KEYS[node] = key
    return key


def _mono(factors: Mapping[Node, int]) -> Mono:
    return tuple(sorted(((a, e) for a, e in factors.items() if e != 0), key=lambda item: _atom_key(item[0])))


def _mono_mul(m1: Mono, m2: Mono, power2: int = 1) -> Mono:
    exps: dict[Node, int] = dict(m1)
    for atom, e in m2:
        exps[atom] = exps.get(atom, 0) + e * power2
    return _mono(exps)


def _poly_add(p: Poly, q: Poly, scale: float = 1.0) -> Poly:
    out = dict(p)
    for mono, c in q.items():
        out[mono] = out.get(mono, 0.0) + scale * c
    return {mono: c for mono, c in out.items() if c != 0}


def _poly_mul(p: Poly, q: Poly) -> Poly:
    out: Poly = {}
    for m1, c1 in p.items():
        for m2, c2 in q.items():
            mono = _mono_mul(m1, m2)
            out[mono] = out.get(mono, 0.0) + c1 * c2
    return {mono: c for mono, c in out.items() if c != 0}


def _atom(node: Node, exponent: int = 1) -> Poly:
    return {_mono({node: exponent}): 1.0}


def _poly(node: Node, top: bool = True) -> Poly:
    """``node`` as a polynomial. Sums are split at the top and where they are constant along the
    row; inside a product a row-varying sum is one atom."""
    if isinstance(node, Num):
        return {(): node.value} if node.value != 0 else {}
    if isinstance(node, Neg):
        return {mono: -c for mono, c in _poly(node.operand, top).items()}
    if isinstance(node, BinOp) and node.op in "+-":
        if not top and row_varying(node):
            return _atom(node)
        return _poly_add(_poly(node.left, top), _poly(node.right, top), 1.0 if node.op == "+" else -1.0)
    if isinstance(node, BinOp) and node.op == "*":
        return _poly_mul(_poly(node.left, False), _poly(node.right, False))
    if isinstance(node, BinOp) and node.op == "/":
        return _poly_mul(_poly(node.left, False), _poly_inverse(node.right))
    if isinstance(node, Power) and _whole(node.exponent):
        base = _poly(node.base, False)
        e = int(node.exponent)
        if len(base) == 1:
            ((mono, c),) = base.items()
            coefficient = _fold(math.pow, c, float(e))
            if coefficient is not None:
                return {_mono_mul((), mono, e): coefficient.value}
        return _atom(node.base, e)
    return _atom(node)


def _poly_inverse(node: Node) -> Poly:
    p = _poly(node, False)
    if len(p) == 1:
        ((mono, c),) = p.items()
        if c != 0:
            return {tuple((a, -e) for a, e in mono): 1.0 / c}
    return _atom(node, -1)


def _poly_key(p: Poly) -> tuple:
    return tuple(sorted(((tuple((_atom_key(a), e) for a, e in mono), c) for mono, c in p.items())))


def _mono_node(mono: Mono, coefficient: float = 1.0) -> Node:
    top: Node = Num(1.0)
    bottom: Node = Num(1.0)
    for atom, e in mono:
        if e > 0:
            top = mul(top, power(atom, float(e)))
        else:
            bottom = mul(bottom, power(atom, float(-e)))
    return mul(Num(coefficient), div(top, bottom))


def _poly_node(p: Poly) -> Node:
    out: Node = Num(0.0)
    for mono, c in p.items():
        out = add(out, _mono_node(mono, c))
    return out


def _reduce_linear(func: str, density: Node, known: Mapping[tuple, Node]) -> Node:
    """``func`` (sum or mean) over the row of ``density``, by linearity: the terms are grouped by
    their row-varying part, each group is ``(constant factors) * func(varying part)``, a reduction
    equal to a forward one (``known``: (func, polynomial key) -> RowRef) is that per-row value, and
    like terms cancel. The sum of a row constant is ``c * _n``; its mean is ``c``."""
    return _poly_node(_reduce_poly(func, _poly(density), known))


def _reduce_poly(func: str, poly: Poly, known: Mapping[tuple, Node]) -> Poly:
    groups: dict[Mono, Poly] = {}
    for mono, c in poly.items():
        varying = tuple((a, e) for a, e in mono if row_varying(a))
        constant = tuple((a, e) for a, e in mono if not row_varying(a))
        group = groups.setdefault(varying, {})
        group[constant] = group.get(constant, 0.0) + c
    total: Poly = {}
    for varying, factors in groups.items():
        total = _poly_add(total, _poly_mul(factors, _reduce_mono(func, varying, known)))
    return total


def _reduce_mono(func: str, varying: Mono, known: Mapping[tuple, Node]) -> Poly:
    if not varying:
        return {(): 1.0} if func == "mean" else _atom(RowLen())
    inner = {varying: 1.0}
    found = known.get((func, _poly_key(inner)))
    if found is not None:
        return _atom(found)
    if len(varying) == 1 and varying[0][1] == 1 and isinstance(varying[0][0], BinOp):
        # a lone sum, mean(x - m): split it if every piece is a forward value or a row constant
        split = _reduce_poly(func, _poly(varying[0][0], True), known)
        if not any(isinstance(a, Reduce) for mono in split for a, _ in mono):
            return split
    return _atom(Reduce(func, _mono_node(varying)))


def _shared_subtrees(names: list[str], trees: list[Node]) -> dict[str, Node]:
    """For each name, the largest proper subtree S of ``trees`` (elementwise, in plan form) that holds every
    use of the name, where another name's largest such subtree is the same S: then each name's gradient is
    ``adjoint(S) * dS/dname`` and the adjoint, the long part of both, is formed once (reverse mode through
    S) instead of once a name (:func:`_chain_through` then looks inside S the same way). Names without
    such a partner are left out."""
    subtrees = sorted({node for tree in trees for node in walk(tree) if children(node)}, key=size, reverse=True)

    def holds_every_use(node: Node, var: Var) -> bool:
        hole = Var("_S")
        return all(var not in walk(transform(tree, lambda n: hole if n == node else None)) for tree in trees)

    best: dict[str, Node] = {}
    for name in names:
        var = Var(name)
        for node in subtrees:
            if node not in trees and var in walk(node) and holds_every_use(node, var):
                best[name] = node
                break
    counts: dict[Node, int] = {}
    for node in best.values():
        counts[node] = counts.get(node, 0) + 1
    return {name: node for name, node in best.items() if counts[node] > 1}


def _chain_through(names: list[str], trees: list[Node], adjoint: Callable[[Node], Node]) -> dict[str, Node]:
    """Each name's gradient, ``adjoint(Var(name))`` (``adjoint(n)``: the loss's derivative with respect to the
    node ``n`` of ``trees``), in reverse mode through the subtrees names share (:func:`_shared_subtrees`):
    where every use of several names lies in one subtree S, S's adjoint is formed once and each name's
    gradient is that adjoint times dS/dname, found the same way inside S. So ``tanh((x3 * 2 - x2) / d)``
    gives x2 and x3 one adjoint of ``x3 * 2 - x2`` (through tanh, then the quotient), times -1 and 2; the
    products nest from the top down (``(adjoint(S) * dS/dS1) * dS1/dS2``), so that each prefix is one
    shared term."""
    through = _shared_subtrees(names, trees)
    out = {name: adjoint(Var(name)) for name in names if name not in through}
    for shared in dict.fromkeys(through.values()):
        group = [name for name in names if through.get(name) == shared]
        out.update(_chain_through(group, [shared], _inner_adjoint(adjoint(shared), shared)))
    return out


def _inner_adjoint(outer: Node, shared: Node) -> Callable[[Node], Node]:
    """The adjoint of a node inside ``shared`` whose adjoint is ``outer``: ``outer * d shared / d node``."""
    return lambda wrt: mul(outer, derivative(shared, wrt))


def _reciprocals(trees: list[Node], args: Iterable[Node]) -> list[Node]:
    """``trees`` (the gradients in plan form) with ``a / d`` as ``a * (1 / d)`` where one reciprocal
    serves several elements or several quotients. A denominator is taken apart into its factors (a product,
    whole powers: ``a / (p ** 2 * r)`` is ``a * (1 / p) ** 2 * (1 / r)``), and a quotient is rewritten where
    every factor's reciprocal is worth computing: a factor constant along the row costs one division a row
    (the compiler computes ``1 / r`` once, outside the loop over the elements), a row-varying factor one an
    element, so it must serve more than one quotient. The products round once or twice more than the
    quotient; the tests' error model walks these trees, so its bounds count that. A number's reciprocal is
    a number (``a / 3`` is ``a * 0.3333333333333333``, the literal rounding once more). Left alone: divisions
    inside a comparison (a mask compares the very bits its reduction saw) and quotients that are also a
    reduction's argument or part of one (the term is computed once for both)."""
    in_args: set[Node] = {node for arg in args for node in walk(arg)}
    users: dict[Node, set[Node]] = {}

    def number_reciprocal(f: Node, k: float) -> float | None:
        """``1 / f ** k`` for a number f where that is a finite, nonzero double; None otherwise."""
        if not isinstance(f, Num) or f.value == 0:
            return None
        try:
            value = (1.0 / f.value) ** k
        except OverflowError:
            return None
        return value if math.isfinite(value) and value != 0 else None

    def factors(d: Node) -> list[tuple[Node, float]]:
        if isinstance(d, BinOp) and d.op == "*" and not isinstance(d.left, Num):
            return [*factors(d.left), *factors(d.right)]
        if isinstance(d, Power) and _whole(d.exponent) and d.exponent >= 1:
            return [(f, k * d.exponent) for f, k in factors(d.base)]
        return [(d, 1.0)]

    def visit(node: Node) -> None:
        if isinstance(node, Compare):
            return
        if isinstance(node, BinOp) and node.op == "/" and node not in in_args:
            for f, _ in factors(node.right):
                users.setdefault(f, set()).add(node)
        for child in children(node):
            visit(child)

    for tree in trees:
        visit(tree)

    def served(node: BinOp) -> bool:
        fs = factors(node.right)
        if _is(node.left, 1) and len(fs) == 1 and fs[0][1] == 1:
            return False  # the reciprocal itself
        if any(isinstance(f, Num) and number_reciprocal(f, k) is None for f, k in fs):
            return False  # a quotient by zero (or by a number whose reciprocal overflows) stays as written
        varying = [f for f, _ in fs if row_varying(f)]
        if not varying:
            return row_varying(node.left)
        return all(len(users.get(f, ())) > 1 for f in varying)

    memo: dict[Node, Node] = {}  # one walk over every tree: shared subtrees are rewritten once

    def rewrite(node: Node) -> Node | None:
        if isinstance(node, Compare):
            return node
        if isinstance(node, BinOp) and node.op == "/" and node not in in_args and served(node):
            sign = -1.0 if _is(node.left, -1) else 1.0
            terms = [] if _is(node.left, sign) else [transform(node.left, rewrite, memo)]
            for f, k in factors(node.right):
                value = number_reciprocal(f, k)
                if value is not None:  # a number's reciprocal is a number (a / 4 -> a * 0.25)
                    terms.append(Num(value))
                    continue
                reciprocal = BinOp("/", Num(1.0), transform(f, rewrite, memo))
                terms.append(reciprocal if k == 1 else Power(reciprocal, k))
            out = functools.reduce(lambda p, q: BinOp("*", p, q), terms)
            return Neg(out) if sign < 0 else out
        return None

    return [transform(tree, rewrite, memo) for tree in trees]


def _expand(tree: Node, expanded: Mapping[int, Node]) -> Node:
    return transform(tree, lambda n: expanded[n.index] if isinstance(n, RowRef) else None)


def _plan_backward(trees: list[Node], forward: Mapping[int, Node]) -> tuple[tuple[BackwardStage, ...], list[Node]]:
    """Each distinct reduction of ``trees`` once, inner first, as a :class:`BackwardStage`."""
    index: dict[Node, int] = {}
    stages: list[BackwardStage] = []
    forward_index = {node: k for k, node in forward.items()}

    sums = {node.arg for tree in trees for node in walk(tree) if isinstance(node, Reduce) and node.func == "sum"}

    def stage_of(node: Reduce) -> Node:
        if node.func == "mean" and node not in forward_index and node.arg in sums:
            # the mean of what another stage sums: that sum over the row length, the very bits the
            # kernels' mean (the same fold, then one division by the length) would have
            length: Node = RowLen()
            return BinOp("/", stage_of(Reduce("sum", node.arg)), length)
        if node not in index:
            arg = transform(node.arg, rewrite)
            stages.append(BackwardStage(node.func, arg, forward_index.get(node), canonical(node)))
            index[node] = len(stages) - 1
        return RowRef(index[node])

    def rewrite(node: Node) -> Node | None:
        return stage_of(node) if isinstance(node, Reduce) else None

    planned = [transform(tree, rewrite) for tree in trees]
    return tuple(stages), planned
