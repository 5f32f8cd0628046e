"""Safe elementwise and rowwise expressions: parse once, emit C++ device code, Triton and a PyTorch
reference. The facade of the expression modules, and the names other code imports:

* :mod:`kernelgen.nodes`: the whitelist (:data:`FUNCTIONS`, :data:`REDUCTIONS`), the tree's node
  types and the walks over it;
* :mod:`kernelgen.parser`: text to tree, through a safe walk of Python's :mod:`ast`;
* :mod:`kernelgen.emit`: tree to C++, PyTorch, Triton or canonical text;
* :mod:`kernelgen.rowplan`: the evaluation order of a rowwise expression's reductions;
* :mod:`kernelgen.cost`: math cost, functions used, positive domain;
* :mod:`kernelgen.baselines`: the fused PyTorch call equal to an expression, if one is known.

:func:`parse` returns a :class:`ParsedExpr`, which answers everything the templates ask.

Nothing the user typed reaches a generated file. The emitters print whitelisted nodes only, every
number as ``repr`` of a finite Python float, and names that passed the identifier checks of
:mod:`kernelgen.spec`. Even the expression shown in comments and docstrings is
:attr:`ParsedExpr.canonical`, printed from the tree, never the raw text.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from . import baselines, cost, rowplan
from .cost import MATH_COST
from .emit import (
    MAX_WHOLE_EXPONENT,
    CanonicalStyle,
    CppStyle,
    TorchStyle,
    TritonStyle,
    canonical,
    emit,
    float_literal,
)
from .errors import clip
from .nodes import (
    FUNCTIONS,
    REDUCTIONS,
    BinOp,
    Call,
    Function,
    Neg,
    Node,
    Num,
    Power,
    Reduce,
    RowRef,
    Var,
    children,
    collect,
    has_reduction,
    map_children,
    replace,
    rowrefs,
    variables,
)
from .parser import MAX_DEPTH, MAX_EXACT_INT, MAX_EXPR_LENGTH, parse_tree
from .rowplan import RowPlan, RowStage

__all__ = [
    "FUNCTIONS",
    "MATH_COST",
    "MAX_DEPTH",
    "MAX_EXACT_INT",
    "MAX_EXPR_LENGTH",
    "MAX_WHOLE_EXPONENT",
    "REDUCTIONS",
    "BinOp",
    "Call",
    "Function",
    "Neg",
    "Node",
    "Num",
    "ParsedExpr",
    "Power",
    "Reduce",
    "RowPlan",
    "RowRef",
    "RowStage",
    "Var",
    "clip",
    "parse",
]


@dataclass(frozen=True)
class ParsedExpr:
    """A validated expression over ``inputs``; emit code with :meth:`cpp` and :meth:`torch`.

    ``source`` is the canonical text (:attr:`canonical`), never the text the user typed. A rowwise
    expression (``rowwise=True``) may also use the 1-D ``weights`` and the row reductions of
    :data:`REDUCTIONS`; emit it through :meth:`plan`.
    """

    source: str
    inputs: tuple[str, ...]
    tree: Node
    weights: tuple[str, ...] = ()
    rowwise: bool = False

    @property
    def variables(self) -> frozenset[str]:
        """The input and weight names the expression uses."""
        return frozenset(variables(self.tree))

    @property
    def canonical(self) -> str:
        """The expression re-printed from the tree in Python syntax: names, float literals,
        ``+ - * / **``, calls, parentheses, commas and spaces. Parsing it gives the same tree."""
        return canonical(self.tree)

    def cpp(self, acc_type: str = "acc_t") -> str:
        """The C++ expression, evaluated in the op-math type ``acc_type``."""
        return emit(self._elementwise_tree(), CppStyle(acc_type))

    def torch(self) -> str:
        """The PyTorch expression over tensors named like the inputs."""
        return emit(self._elementwise_tree(), TorchStyle())

    def triton(self, acc: str = "ACC") -> str:
        """The Triton expression over blocks named like the inputs, already converted to the
        op-math dtype ``acc`` (a ``tl.constexpr`` naming tl.float32 or tl.float64)."""
        return emit(self._elementwise_tree(), TritonStyle(acc))

    def renamed(self, mapping: Mapping[str, str]) -> ParsedExpr:
        """The same expression over other names (``mapping``: old name -> new name; names not in it
        stay): how the generated code refers to inputs whose names it maps to safe identifiers.
        ``source`` keeps the original canonical text."""
        if not mapping or all(mapping.get(name, name) == name for name in (*self.inputs, *self.weights)):
            return self

        def rename(node: Node) -> Node:
            if isinstance(node, Var):
                return Var(mapping.get(node.name, node.name))
            return map_children(node, rename)

        return ParsedExpr(
            self.source, tuple(mapping.get(n, n) for n in self.inputs), rename(self.tree),
            tuple(mapping.get(n, n) for n in self.weights), self.rowwise,
        )

    def _elementwise_tree(self) -> Node:
        if has_reduction(self.tree):
            raise ValueError("a rowwise expression with reductions is emitted through plan()")
        return self.tree

    def plan(self) -> RowPlan:
        """The evaluation order of a rowwise expression: equal reductions are computed once
        (``max(x)`` twice in a softmax is one reduction), and a reduction comes after those it uses."""
        return rowplan.plan(self.tree)

    def emit_plan(self, acc_type: str = "acc_t", acc: str = "ACC") -> dict[str, object]:
        """Every form of :meth:`plan` the templates need (:func:`kernelgen.rowplan.plan_forms`)."""
        return rowplan.plan_forms(self.tree, self.inputs, self.weights, acc_type, acc)

    @property
    def positive_domain(self) -> bool:
        """True if the expression is only smooth for positive inputs (log, sqrt, x / y, ...)."""
        return cost.needs_positive(self.tree)

    def fused_torch(self) -> str | None:
        """A single fused PyTorch call equal to the expression, when one is known (a baseline;
        see :func:`kernelgen.baselines.fused_torch`)."""
        return baselines.fused_torch(self.tree, self.rowwise)

    @property
    def math_cost(self) -> int:
        """A rough count of the float instructions one element costs on a GPU (:data:`MATH_COST`),
        emitted as the elementwise kernel's ``kMathCost``: its launch rule calls the math heavy at
        ``kHeavyCostPerByte`` (10) or more per byte an element moves."""
        return cost.math_cost(self.tree)

    @property
    def functions(self) -> tuple[str, ...]:
        """The whitelisted functions the expression uses, sorted."""
        return tuple(sorted(cost.functions(self.tree)))


def parse(
    source: str,
    inputs: tuple[str, ...] | list[str],
    *,
    weights: tuple[str, ...] | list[str] = (),
    rowwise: bool = False,
    option: str = "--expr",
    hints: Mapping[str, str] | None = None,
    require_all: bool = True,
) -> ParsedExpr:
    """Parse and validate ``source`` over the declared ``inputs`` (:func:`kernelgen.parser.parse_tree`).

    With ``rowwise``, the expression may also use the 1-D ``weights`` and the row reductions
    ``sum(e)``, ``mean(e)``, ``max(e)`` and ``min(e)`` (see :data:`REDUCTIONS`).
    Raises :class:`~kernelgen.errors.ExprError` with a one-line message naming the bad token and
    ``option`` (the command-line option the text came from; the error's ``param`` is its name without
    dashes). ``hints`` maps a name that is not declared to what the message says instead of listing
    the inputs (``{"bias": "the bias needs --bias"}``). With ``require_all=False`` a declared input or
    weight may go unused (the caller says what that means); at least one input must still be used.
    """
    source_text, tree = parse_tree(source, inputs, weights=weights, rowwise=rowwise, option=option, hints=hints,
                                   require_all=require_all)
    return ParsedExpr(source_text, tuple(inputs), tree, tuple(weights), rowwise)


# The private names under which other code imports the tree helpers from here; the helpers belong
# to kernelgen.nodes, .emit, .rowplan and .cost, where new code imports them from.
_children, _map_children, _replace, _collect = children, map_children, replace, collect
_variables, _rowrefs, _has_reduction = variables, rowrefs, has_reduction
_emit, _float_literal = emit, float_literal
_CppStyle, _TorchStyle, _TritonStyle, _CanonicalStyle = CppStyle, TorchStyle, TritonStyle, CanonicalStyle
_plan, _kept_argument = rowplan.plan, rowplan.kept_argument
_math_cost, _functions, _needs_positive = cost.math_cost, cost.functions, cost.needs_positive
