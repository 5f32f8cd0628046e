"""The expression grammar's vocabulary: the whitelisted functions and row reductions, the tree of
whitelisted nodes an expression parses to, and the generic walks over that tree.

A leaf module of the expression package (:mod:`kernelgen.parser` builds these trees,
:mod:`kernelgen.emit` prints them, :mod:`kernelgen.rowplan` orders their reductions,
:mod:`kernelgen.cost` prices them); it imports nothing of kernelgen.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Union


@dataclass(frozen=True)
class Function:
    """A whitelisted math function."""

    arity: int
    doc: str
    torch: str  # PyTorch spelling, used by the reference
    fold: Callable[..., float]  # evaluation on Python floats, for constant folding
    positive_domain: bool = False  # only defined (or differentiable) for positive inputs


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


FUNCTIONS: dict[str, Function] = {
    "exp": Function(1, "e to the power x", "torch.exp", math.exp),
    "log": Function(1, "natural logarithm", "torch.log", math.log, positive_domain=True),
    "sqrt": Function(1, "square root", "torch.sqrt", math.sqrt, positive_domain=True),
    "rsqrt": Function(
        1, "1 / sqrt(x)", "torch.rsqrt", lambda x: 1.0 / math.sqrt(x), positive_domain=True
    ),
    "tanh": Function(1, "hyperbolic tangent", "torch.tanh", math.tanh),
    "sigmoid": Function(1, "1 / (1 + exp(-x))", "torch.sigmoid", _sigmoid),
    "abs": Function(1, "absolute value", "torch.abs", abs),
    "sin": Function(1, "sine", "torch.sin", math.sin),
    "cos": Function(1, "cosine", "torch.cos", math.cos),
    "erf": Function(1, "error function", "torch.erf", math.erf),
    "min": Function(2, "smaller of two values (NaN propagates)", "torch.minimum", min),
    "max": Function(2, "larger of two values (NaN propagates)", "torch.maximum", max),
    "pow": Function(2, "x to the power y", "torch.pow", math.pow, positive_domain=True),
}

#: Row reductions of the rowwise kind: name -> (what it computes, PyTorch spelling).
#: ``max`` and ``min`` with one argument reduce; with two they are the elementwise functions.
REDUCTIONS: dict[str, tuple[str, str]] = {
    "sum": ("sum over the row", "torch.sum"),
    "mean": ("mean over the row", "torch.mean"),
    "max": ("largest value of the row (NaN propagates)", "torch.amax"),
    "min": ("smallest value of the row (NaN propagates)", "torch.amin"),
}


# ---------------------------------------------------------------------------------------------
# The intermediate form: a tiny tree of whitelisted nodes.


@dataclass(frozen=True)
class Num:
    value: float  # always a finite Python float


@dataclass(frozen=True)
class Var:
    name: str


@dataclass(frozen=True)
class Neg:
    operand: Node


@dataclass(frozen=True)
class BinOp:
    op: str  # one of + - * /
    left: Node
    right: Node


@dataclass(frozen=True)
class Power:
    base: Node
    exponent: float


@dataclass(frozen=True)
class Call:
    func: str
    args: tuple[Node, ...]


@dataclass(frozen=True)
class Reduce:
    """A row reduction (rowwise kind only): ``func`` over the last dimension of ``arg``."""

    func: str  # one of REDUCTIONS
    arg: Node


@dataclass(frozen=True)
class RowRef:
    """The value of reduction number ``index`` of a :class:`~kernelgen.rowplan.RowPlan` (one scalar per row)."""

    index: int


Node = Union[Num, Var, Neg, BinOp, Power, Call, Reduce, RowRef]  # noqa: UP007 (forward references)


# ---------------------------------------------------------------------------------------------
# Walks over the tree.


def children(node: Node) -> tuple[Node, ...]:
    """The direct sub-expressions of ``node``, left to right."""
    if isinstance(node, Reduce):
        return (node.arg,)
    if isinstance(node, Neg):
        return (node.operand,)
    if isinstance(node, BinOp):
        return (node.left, node.right)
    if isinstance(node, Power):
        return (node.base,)
    if isinstance(node, Call):
        return node.args
    return ()


def map_children(node: Node, fn: Callable[[Node], Node]) -> Node:
    """``node`` rebuilt with ``fn`` applied to each of its children (:func:`children`'s order)."""
    if isinstance(node, Reduce):
        return Reduce(node.func, fn(node.arg))
    if isinstance(node, Neg):
        return Neg(fn(node.operand))
    if isinstance(node, BinOp):
        return BinOp(node.op, fn(node.left), fn(node.right))
    if isinstance(node, Power):
        return Power(fn(node.base), node.exponent)
    if isinstance(node, Call):
        return Call(node.func, tuple(fn(arg) for arg in node.args))
    return node


def replace(node: Node, old: Node, new: Node) -> Node:
    """``node`` with every occurrence of the subtree ``old`` replaced by ``new``."""
    if node == old:
        return new
    return map_children(node, lambda child: replace(child, old, new))


def collect(node: Node, pick: Callable[[Node], Any],
            kids: Callable[[Node], Iterable[Node]] = children) -> set[Any]:
    """The non-None values of ``pick`` over ``node`` and everything below it (``kids``: a node's subtrees;
    the backward passes :func:`kernelgen.diff.children`, which also enters its comparisons)."""
    found = set()
    stack = [node]
    while stack:
        current = stack.pop()
        value = pick(current)
        if value is not None:
            found.add(value)
        stack.extend(kids(current))
    return found


def variables(node: Node) -> set[str]:
    """The input and weight names ``node`` reads."""
    return collect(node, lambda n: n.name if isinstance(n, Var) else None)


def rowrefs(node: Node) -> set[int]:
    """The indices of the row reductions ``node`` reads (:class:`RowRef`)."""
    return collect(node, lambda n: n.index if isinstance(n, RowRef) else None)


def has_reduction(node: Node) -> bool:
    """True if ``node`` holds a row reduction, or a reference to one."""
    return isinstance(node, (Reduce, RowRef)) or any(has_reduction(child) for child in children(node))


def row_varying(node: Node, inputs: tuple[str, ...]) -> bool:
    """True if ``node`` reads an input outside any reduction (so it varies along the row)."""
    if isinstance(node, Var):
        return node.name in inputs
    if isinstance(node, (Reduce, RowRef)):
        return False
    return any(row_varying(child, inputs) for child in children(node))
