"""Safe elementwise expressions: parse once, emit C++ device code and a PyTorch reference.

An expression such as ``x * sigmoid(1.702 * x)`` is parsed with :mod:`ast` and checked
against a whitelist. Only these are accepted:

* the binary operators ``+ - * /``, unary ``-`` and ``+``, and ``**`` with a numeric exponent;
* finite int or float literals (an int must be exact as a float64: at most 2**53);
* the declared input names;
* the functions in :data:`FUNCTIONS`.

Anything else (attributes, subscripts, strings, comparisons, lambdas, keyword arguments, unknown
names, ...) raises :class:`~kernelgen.errors.ExprError` naming the offending token and its
column. Before parsing, the text must be one line of printable ASCII without ``#`` (a comment
would vanish from the tree); a tab counts as a space.

Nothing the user typed reaches a generated file. The emitters print whitelisted nodes only, every
number as ``repr`` of a finite Python float (a float literal in C++ and Python alike, so both
compute with the same value), and names that passed the identifier checks of :mod:`kernelgen.spec`.
Even the expression shown in comments and docstrings is :attr:`ParsedExpr.canonical`, printed
from the tree, never the raw text.

Sub-expressions made only of literals are folded to a number at parse time, in float64.
"""

from __future__ import annotations

import ast
import math
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Union

from .errors import ExprError, did_you_mean

MAX_EXPR_LENGTH = 2000
MAX_DEPTH = 64
#: The largest integer literal accepted: every integer up to it is exact in float64.
MAX_EXACT_INT = 2**53


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
    """The value of reduction number ``index`` of a :class:`RowPlan` (one scalar per row)."""

    index: int


Node = Union[Num, Var, Neg, BinOp, Power, Call, Reduce, RowRef]  # noqa: UP007 (forward references)

#: Row reductions of the rowwise kind: name -> (what it computes, PyTorch spelling).
#: ``max`` and ``min`` with one argument reduce; with two they are the elementwise functions.
REDUCTIONS: dict[str, tuple[str, str]] = {
    "sum": ("sum over the row", "torch.sum"),
    "mean": ("mean over the row", "torch.mean"),
    "max": ("largest value of the row (NaN propagates)", "torch.amax"),
    "min": ("smallest value of the row (NaN propagates)", "torch.amin"),
}

_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}
_NODE_WORDS = {
    ast.Attribute: "attribute access",
    ast.Subscript: "subscript",
    ast.Compare: "comparison",
    ast.BoolOp: "boolean operator",
    ast.IfExp: "conditional expression",
    ast.Lambda: "lambda",
    ast.Starred: "star argument",
    ast.Tuple: "tuple",
    ast.List: "list",
    ast.Dict: "dict",
    ast.Set: "set",
    ast.JoinedStr: "f-string",
    ast.NamedExpr: "assignment expression",
    ast.ListComp: "comprehension",
    ast.GeneratorExp: "generator expression",
    ast.Await: "await",
}


@dataclass(frozen=True)
class RowStage:
    """One reduction of a rowwise expression: ``func`` over the row of ``arg``, which may use the
    inputs, the weights and earlier reductions (as :class:`RowRef`)."""

    func: str
    arg: Node
    canonical: str  # the reduction as written in the canonical expression, e.g. ``max(x)``


@dataclass(frozen=True)
class RowPlan:
    """A rowwise expression in evaluation order: each distinct reduction once (inner ones first),
    then the output, elementwise over the row, in terms of the inputs, weights and reductions."""

    reductions: tuple[RowStage, ...]
    output: Node


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
        return frozenset(_variables(self.tree))

    @property
    def canonical(self) -> str:
        """The expression re-printed from the tree in Python syntax: names, float literals,
        ``+ - * / **``, calls, parentheses, commas and spaces. Parsing it gives the same tree."""
        return _emit(self.tree, _CanonicalStyle())

    def cpp(self, acc_type: str = "acc_t") -> str:
        """The C++ expression, evaluated in the op-math type ``acc_type``."""
        return _emit(self._elementwise_tree(), _CppStyle(acc_type))

    def torch(self) -> str:
        """The PyTorch expression over tensors named like the inputs."""
        return _emit(self._elementwise_tree(), _TorchStyle())

    def triton(self, acc: str = "ACC") -> str:
        """The Triton expression over blocks named like the inputs, already converted to the
        op-math dtype ``acc`` (a ``tl.constexpr`` naming tl.float32 or tl.float64)."""
        return _emit(self._elementwise_tree(), _TritonStyle(acc))

    def renamed(self, mapping: Mapping[str, str]) -> ParsedExpr:
        """The same expression over other names (``mapping``: old name -> new name; names not in it
        stay): how the generated code refers to inputs whose names it maps to safe identifiers.
        ``source`` keeps the original canonical text."""
        if not mapping or all(mapping.get(name, name) == name for name in (*self.inputs, *self.weights)):
            return self

        def rename(node: Node) -> Node:
            if isinstance(node, Var):
                return Var(mapping.get(node.name, node.name))
            return _map_children(node, rename)

        return ParsedExpr(
            self.source, tuple(mapping.get(n, n) for n in self.inputs), rename(self.tree),
            tuple(mapping.get(n, n) for n in self.weights), self.rowwise,
        )

    def _elementwise_tree(self) -> Node:
        if _has_reduction(self.tree):
            raise ValueError("a rowwise expression with reductions is emitted through plan()")
        return self.tree

    def plan(self) -> RowPlan:
        """The evaluation order of a rowwise expression: equal reductions are computed once
        (``max(x)`` twice in a softmax is one reduction), and a reduction comes after those it uses."""
        return _plan(self.tree)

    def emit_plan(self, acc_type: str = "acc_t", acc: str = "ACC") -> dict[str, object]:
        """Every form of :meth:`plan` the templates need: per reduction its function, canonical
        text, C++ (reductions as ``_r[k]``), PyTorch and Triton (as ``_rk``) expressions and the
        names it reads; then the same for the output."""
        plan = self.plan()

        def forms(node: Node) -> dict[str, object]:
            used = _variables(node)
            return {
                "cpp": _emit(node, _CppStyle(acc_type)),
                "torch": _emit(node, _TorchStyle()),
                "triton": _emit(node, _TritonStyle(acc)),
                "inputs": [name for name in self.inputs if name in used],
                "weights": [name for name in self.weights if name in used],
                "rows": sorted(_rowrefs(node)),
            }

        output = forms(plan.output)
        kept = _kept_argument(plan, self.inputs)
        if kept is not None:
            # The C++ output reads reduction k's per-element argument as _a<k> (its callers pass it):
            # the register kernel keeps it from the reduction pass instead of computing it again.
            index, rewritten = kept
            output["kept"] = index
            output["cpp"] = _emit(rewritten, _CppStyle(acc_type))
            output["cpp_inputs"] = [name for name in self.inputs if name in _variables(rewritten)]
            output["cpp_weights"] = [name for name in self.weights if name in _variables(rewritten)]
        else:
            output.update(kept=None, cpp_inputs=output["inputs"], cpp_weights=output["weights"])
        return {
            "reductions": [
                {"func": stage.func, "canonical": stage.canonical, **forms(stage.arg)}
                for stage in plan.reductions
            ],
            "output": output,
        }

    @property
    def positive_domain(self) -> bool:
        """True if the expression is only smooth for positive inputs (log, sqrt, x / y, ...)."""
        return _needs_positive(self.tree)

    def fused_torch(self) -> str | None:
        """A single fused PyTorch call equal to the expression, when one is known (a baseline).

        Elementwise: ``x * y + z`` (and ``z + x * y``) is ``torch.addcmul(z, x, y)``. Rowwise: the
        textbook softmax, log-softmax, RMSNorm and LayerNorm (see :data:`_ROW_BASELINES`).
        """
        t = self.tree
        if self.rowwise:
            return _row_baseline(t)
        if isinstance(t, BinOp) and t.op == "+":
            for prod, add in ((t.left, t.right), (t.right, t.left)):
                if (
                    isinstance(prod, BinOp) and prod.op == "*" and isinstance(add, Var)
                    and isinstance(prod.left, Var) and isinstance(prod.right, Var)
                ):
                    return f"torch.addcmul({add.name}, {prod.left.name}, {prod.right.name})"
        return None

    @property
    def math_cost(self) -> int:
        """A rough count of the float instructions one element costs on a GPU (:data:`MATH_COST`),
        emitted as the elementwise kernel's ``kMathCost``: its launch rule calls the math heavy at
        ``kHeavyCostPerByte`` (10) or more per byte an element moves."""
        return _math_cost(self.tree)

    @property
    def functions(self) -> tuple[str, ...]:
        """The whitelisted functions the expression uses, sorted."""
        return tuple(sorted(_functions(self.tree)))


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
    """Parse and validate ``source`` over the declared ``inputs``.

    With ``rowwise``, the expression may also use the 1-D ``weights`` and the row reductions
    ``sum(e)``, ``mean(e)``, ``max(e)`` and ``min(e)`` (see :data:`REDUCTIONS`).
    Raises :class:`ExprError` with a one-line message naming the bad token and ``option`` (the
    command-line option the text came from; the error's ``param`` is its name without dashes).
    ``hints`` maps a name that is not declared to what the message says instead of listing the
    inputs (``{"bias": "the bias needs --bias"}``). With ``require_all=False`` a declared input or
    weight may go unused (the caller says what that means); at least one input must still be used.
    """
    field = option.lstrip("-")
    if not isinstance(source, str):
        raise ExprError(f"{option} must be a string, not {type(source).__name__}", field)
    inputs = tuple(inputs)
    weights = tuple(weights)
    text = _check_text(source, option)
    try:
        with warnings.catch_warnings():  # "invalid escape sequence" and the like: not for the user
            warnings.simplefilter("ignore")
            module = ast.parse(text, mode="eval")
    except SyntaxError as err:
        col = f" at column {err.offset}" if err.offset else ""
        raise ExprError(f"{option} is not a valid expression{col}: {_one_line(str(err.msg))}", field) from None
    except (ValueError, RecursionError, MemoryError):  # pragma: no cover - _check_text prevents them
        raise ExprError(f"{option} is not a valid expression", field) from None
    tree = _Converter(text, inputs, weights, rowwise, option, hints or {}).convert(module.body, depth=0)
    used = _variables(tree)
    if not used & set(inputs):
        raise ExprError(
            f"{option} {clip(text)!r} uses no input; it must use at least one of: " + ", ".join(inputs), field
        )
    for kind, declared, names in (("input", "--inputs", inputs), ("weight", "--weights", weights)):
        unused = [name for name in names if name not in used]
        if unused and require_all:
            raise ExprError(
                f"{kind} {unused[0]!r} is declared in {declared} but not used in {option} {clip(text)!r}", field
            )
    canonical = _emit(tree, _CanonicalStyle())
    if len(canonical) > MAX_EXPR_LENGTH:  # so that the canonical text always parses again
        raise ExprError(
            f"{option} is {len(canonical)} characters long once written out (numbers in full, spaces "
            f"around operators); the limit is {MAX_EXPR_LENGTH}",
            field,
        )
    return ParsedExpr(canonical, inputs, tree, weights, rowwise)


def _check_text(source: str, option: str = "--expr") -> str:
    """The stripped text, if it is one line of printable ASCII without a comment."""
    field = option.lstrip("-")
    text = source.strip(" \t\r\n")
    if not text:
        raise ExprError(f"{option} is empty; give a scalar expression such as 'a * b + c'", field)
    if len(text) > MAX_EXPR_LENGTH:
        raise ExprError(f"{option} is {len(text)} characters long; the limit is {MAX_EXPR_LENGTH}", field)
    text = text.replace("\t", " ")  # one for one: columns stay right
    for index, char in enumerate(text):
        if char in "\n\r":
            raise ExprError(f"{option} must be a single line", field)
        if char == "#":
            raise ExprError(
                f"comments are not allowed in {option} ('#' at column {index + 1}); remove it and what follows",
                field,
            )
        if not " " <= char <= "~":
            raise ExprError(
                f"{option} has the character U+{ord(char):04X} at column {index + 1}; "
                "only printable ASCII is allowed (letters, digits, operators, parentheses, spaces)",
                field,
            )
    return text


def clip(text: str, limit: int = 60) -> str:
    """``text`` cut to ``limit`` characters (ending in "...") to quote it in a one-line message."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _one_line(text: str) -> str:
    return " ".join(text.split())


class _Converter:
    def __init__(self, text: str, inputs: tuple[str, ...], weights: tuple[str, ...] = (), rowwise: bool = False,
                 option: str = "--expr", hints: Mapping[str, str] | None = None) -> None:
        self.text = text
        self.inputs = inputs
        self.weights = weights
        self.rowwise = rowwise
        self.option = option
        self.field = option.lstrip("-")
        self.hints = hints or {}

    def _where(self, node: ast.AST) -> str:
        segment = ast.get_source_segment(self.text, node) or type(node).__name__
        col = getattr(node, "col_offset", None)
        at = f" at column {col + 1}" if col is not None else ""
        return f"{clip(segment)!r}{at}"

    def _fail(self, node: ast.AST, what: str) -> ExprError:
        return ExprError(f"unsupported {what} {self._where(node)} in {self.option}", self.field)

    def convert(self, node: ast.AST, depth: int) -> Node:
        if depth > MAX_DEPTH:
            raise ExprError(f"{self.option} is nested more than {MAX_DEPTH} levels deep", self.field)
        if isinstance(node, ast.Constant):
            value = node.value
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise self._fail(node, "literal")
            if isinstance(value, int):
                if abs(value) > MAX_EXACT_INT:
                    raise self._fail(node, "integer literal (larger than 2**53, not exact in float64)")
                value = float(value)
            if not math.isfinite(value):
                raise self._fail(node, "non-finite literal")
            return Num(value)
        if isinstance(node, ast.Name):
            if node.id in self.inputs or node.id in self.weights:
                return Var(node.id)
            if node.id in FUNCTIONS:
                raise ExprError(
                    f"function {node.id!r} at column {node.col_offset + 1} must be called, "
                    f"as in {node.id}(x)",
                    self.field,
                )
            weights = f"; the weights are: {', '.join(self.weights)}" if self.weights else ""
            hint = self.hints.get(node.id)
            known = hint or f"the inputs are: {', '.join(self.inputs)}{weights}"
            # A near miss of a declared name (a typo) is suggested first: "xx" -> "x".
            close = "" if hint else did_you_mean(node.id, (*self.inputs, *self.weights))
            raise ExprError(
                f"unknown name {clip(node.id)!r} at column {node.col_offset + 1} in {self.option}"
                + (f"{close} ({known})" if close else f"; {known}"),
                self.field,
            )
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.op, ast.UAdd):
                return self.convert(node.operand, depth + 1)
            if isinstance(node.op, ast.USub):
                # -2.0 is one number: at the depth of the minus, as the canonical text prints it
                operand = self.convert(node.operand, depth if isinstance(node.operand, ast.Constant) else depth + 1)
                if isinstance(operand, Num):
                    return Num(-operand.value)
                return Neg(operand)
            raise self._fail(node, "unary operator")
        if isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.Pow):
                return self._power(node, depth)
            op = _BINOPS.get(type(node.op))
            if op is None:
                raise self._fail(node, f"operator {_op_symbol(node.op)!r} in")
            left = self.convert(node.left, depth + 1)
            right = self.convert(node.right, depth + 1)
            if isinstance(left, Num) and isinstance(right, Num):
                return self._fold(node, lambda x, y: _fold_binop(op, x, y), left.value, right.value)
            if op == "/" and isinstance(right, Num) and right.value == 0:
                raise ExprError(f"division by zero in {self._where(node)} in {self.option}", self.field)
            return BinOp(op, left, right)
        if isinstance(node, ast.Call):
            return self._call(node, depth)
        word = _NODE_WORDS.get(type(node), type(node).__name__)
        raise self._fail(node, word)

    def _power(self, node: ast.BinOp, depth: int) -> Node:
        base = self.convert(node.left, depth + 1)
        exponent = self.convert(node.right, depth + 1)
        if not isinstance(exponent, Num):
            raise ExprError(
                f"'**' needs a numeric exponent, got {self._where(node.right)}; "
                "use pow(x, y) for a tensor exponent",
                self.field,
            )
        if isinstance(base, Num):
            return self._fold(node, math.pow, base.value, exponent.value)
        return Power(base, exponent.value)

    def _call(self, node: ast.Call, depth: int) -> Node:
        if not isinstance(node.func, ast.Name):
            raise self._fail(node.func, "call target")
        name = node.func.id
        if name in REDUCTIONS and (name not in FUNCTIONS or len(node.args) < 2):
            return self._reduction(node, name, depth)
        func = FUNCTIONS.get(name)
        if func is None:
            raise self._unknown_function(name, node.func)
        if node.keywords:
            raise self._fail(node.keywords[0], "keyword argument")
        if len(node.args) != func.arity:
            raise ExprError(
                f"{name}() takes {func.arity} argument{'s' if func.arity > 1 else ''}, "
                f"got {len(node.args)} in {self._where(node)}",
                self.field,
            )
        args = tuple(self.convert(arg, depth + 1) for arg in node.args)
        if all(isinstance(arg, Num) for arg in args):
            return self._fold(node, func.fold, *(arg.value for arg in args))  # type: ignore[union-attr]
        return Call(name, args)

    def _unknown_function(self, name: str, func: ast.expr, hint: str = "") -> ExprError:
        where = f"unknown function {clip(name)!r} at column {func.col_offset + 1} in {self.option}"
        # A typo of an allowed function ("sigmod") gets the one it is closest to; anything else the list.
        close = "" if hint else did_you_mean(name, (*FUNCTIONS, *(REDUCTIONS if self.rowwise else ())))
        if close:
            return ExprError(where + close, self.field)
        return ExprError(f"{where}; allowed: {', '.join(sorted(FUNCTIONS))}{hint}", self.field)

    def _reduction(self, node: ast.Call, name: str, depth: int) -> Node:
        """``sum(e)``, ``mean(e)``, ``max(e)``, ``min(e)``: a row reduction (rowwise kind only)."""
        elementwise = name in FUNCTIONS  # max and min: elementwise with two arguments
        if not self.rowwise:
            if elementwise:
                raise ExprError(
                    f"{name}() takes 2 arguments, got {len(node.args)} in {self._where(node)}; "
                    f"{name} of one argument is a row reduction (--kind rowwise)",
                    self.field,
                )
            raise self._unknown_function(name, node.func, f" ({name} is a row reduction: --kind rowwise)")
        if node.keywords:
            raise self._fail(node.keywords[0], "keyword argument")
        if len(node.args) != 1:
            takes = "1 argument (a row reduction) or 2 (elementwise)" if elementwise else "1 argument (a row reduction)"
            raise ExprError(f"{name}() takes {takes}, got {len(node.args)} in {self._where(node)}", self.field)
        arg = self.convert(node.args[0], depth + 1)
        if not _row_varying(arg, self.inputs):
            raise ExprError(
                f"{name}() reduces no input in {self._where(node)}; a row reduction needs an input "
                f"outside any inner reduction ({', '.join(self.inputs)})",
                self.field,
            )
        return Reduce(name, arg)

    def _fold(self, node: ast.AST, fn: Callable[..., float], *values: float) -> Num:
        """Evaluate a constant sub-expression in float64; a non-finite result is refused."""
        try:
            result = fn(*(float(value) for value in values))
        except (ValueError, ZeroDivisionError, OverflowError, TypeError):
            result = math.nan
        if not isinstance(result, (int, float)) or isinstance(result, bool) or not math.isfinite(result):
            raise ExprError(f"constant sub-expression {self._where(node)} is not a finite number", self.field)
        return Num(float(result))


def _fold_binop(op: str, a: float, b: float) -> float:
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    return a / b


def _op_symbol(op: ast.operator) -> str:
    return {
        ast.FloorDiv: "//", ast.Mod: "%", ast.MatMult: "@", ast.LShift: "<<", ast.RShift: ">>",
        ast.BitOr: "|", ast.BitAnd: "&", ast.BitXor: "^",
    }.get(type(op), type(op).__name__)


def _children(node: Node) -> tuple[Node, ...]:
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


def _collect(node: Node, pick: Callable[[Node], Any]) -> set[Any]:
    """The non-None values of ``pick`` over ``node`` and everything below it."""
    found = set()
    stack = [node]
    while stack:
        current = stack.pop()
        value = pick(current)
        if value is not None:
            found.add(value)
        stack.extend(_children(current))
    return found


def _variables(node: Node) -> set[str]:
    return _collect(node, lambda n: n.name if isinstance(n, Var) else None)


def _has_reduction(node: Node) -> bool:
    return isinstance(node, (Reduce, RowRef)) or any(_has_reduction(child) for child in _children(node))


def _row_varying(node: Node, inputs: tuple[str, ...]) -> bool:
    """True if ``node`` reads an input outside any reduction (so it varies along the row)."""
    if isinstance(node, Var):
        return node.name in inputs
    if isinstance(node, (Reduce, RowRef)):
        return False
    return any(_row_varying(child, inputs) for child in _children(node))


def _rowrefs(node: Node) -> set[int]:
    return _collect(node, lambda n: n.index if isinstance(n, RowRef) else None)


def _plan(tree: Node) -> RowPlan:
    """Replace each distinct reduction by a RowRef, numbering them inner first."""
    index: dict[Reduce, int] = {}
    stages: list[RowStage] = []

    def rewrite(node: Node) -> Node:
        if isinstance(node, Reduce):
            if node not in index:
                arg = rewrite(node.arg)
                stages.append(RowStage(node.func, arg, _emit(node, _CanonicalStyle())))
                index[node] = len(stages) - 1
            return RowRef(index[node])
        return _map_children(node, rewrite)

    output = rewrite(tree)
    return RowPlan(tuple(stages), output)


def _map_children(node: Node, fn: Callable[[Node], Node]) -> Node:
    """``node`` rebuilt with ``fn`` applied to each of its children (:func:`_children`'s order)."""
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


def _replace(node: Node, old: Node, new: Node) -> Node:
    """``node`` with every occurrence of the subtree ``old`` replaced by ``new``."""
    if node == old:
        return new
    return _map_children(node, lambda child: _replace(child, old, new))


def _kept_argument(plan: RowPlan, inputs: tuple[str, ...]) -> tuple[int, Node] | None:
    """The reduction whose per-element argument the output recomputes, and the output reading it
    as ``_a<k>`` instead: ``exp(x - _r0)`` in softmax, summed and then divided. Only when the
    rewritten output reads no input directly, so that keeping the argument costs no registers (the
    inputs' registers are free once the argument is computed). The latest such reduction wins."""
    for index in reversed(range(len(plan.reductions))):
        arg = plan.reductions[index].arg
        if isinstance(arg, (Var, Num)):
            continue  # nothing to save: the input is already in a register
        rewritten = _replace(plan.output, arg, Var(f"_a{index}"))
        if rewritten != plan.output and not _variables(rewritten) & set(inputs):
            return index, rewritten
    return None


# The rowwise expressions PyTorch computes with one fused call (the benchmark's eager baseline).
# X, W and B stand for any input or weight, 0.125 for any number (the epsilon).
_ROW_BASELINES: tuple[tuple[str, tuple[str, ...], tuple[str, ...], str], ...] = (
    ("exp(X - max(X)) / sum(exp(X - max(X)))", ("X",), (), "torch.softmax({X}, dim=-1)"),
    ("X - max(X) - log(sum(exp(X - max(X))))", ("X",), (), "torch.log_softmax({X}, dim=-1)"),
    ("X * rsqrt(mean(X * X) + 0.125) * W", ("X",), ("W",),
     "torch.nn.functional.rms_norm({X}, ({X}.shape[-1],), {W}, eps={eps})"),
    ("X * rsqrt(mean(X * X) + 0.125)", ("X",), (), "torch.nn.functional.rms_norm({X}, ({X}.shape[-1],), eps={eps})"),
    ("(X - mean(X)) * rsqrt(mean((X - mean(X)) ** 2) + 0.125) * W + B", ("X",), ("W", "B"),
     "torch.nn.functional.layer_norm({X}, ({X}.shape[-1],), {W}, {B}, eps={eps})"),
    ("(X - mean(X)) * rsqrt(mean((X - mean(X)) ** 2) + 0.125)", ("X",), (),
     "torch.nn.functional.layer_norm({X}, ({X}.shape[-1],), eps={eps})"),
)
_ANY_NUMBER = 0.125


def _row_baseline(tree: Node) -> str | None:
    for text, inputs, weights, call in _ROW_BASELINES:
        pattern = parse(text, inputs, weights=weights, rowwise=True).tree
        binding: dict[str, str] = {}
        if _match(pattern, tree, binding):
            return call.format(**binding)
    return None


def _match(pattern: Node, node: Node, binding: dict[str, str]) -> bool:
    if isinstance(pattern, Var):
        if not isinstance(node, Var):
            return False
        if binding.setdefault(pattern.name, node.name) != node.name:
            return False
        return list(binding.values()).count(node.name) == 1  # distinct placeholders, distinct names
    if isinstance(pattern, Num):
        if not isinstance(node, Num):
            return False
        if pattern.value != _ANY_NUMBER:
            return pattern.value == node.value
        return binding.setdefault("eps", _float_literal(node.value)) == _float_literal(node.value)
    if type(pattern) is not type(node):
        return False
    if isinstance(pattern, (BinOp, Call, Reduce)) and (
        getattr(pattern, "op", None) != getattr(node, "op", None)
        or getattr(pattern, "func", None) != getattr(node, "func", None)
    ):
        return False
    if isinstance(pattern, Power) and pattern.exponent != node.exponent:  # type: ignore[union-attr]
        return False
    children, others = _children(pattern), _children(node)
    return len(children) == len(others) and all(_match(a, b, binding) for a, b in zip(children, others, strict=True))


#: Approximate instructions per call of each function on the float path of an H100 (CUDA's
#: accurate libm: exp and rsqrt are a few instructions around the special-function unit; sin and cos
#: add a range reduction; pow is a log, an exp and their special cases). Only the ratio to the bytes an
#: element moves matters (the launch rule of the elementwise kernel); the figures need not be exact.
MATH_COST: dict[str, int] = {
    "exp": 10, "log": 15, "sqrt": 8, "rsqrt": 4, "tanh": 20, "sigmoid": 20, "abs": 1, "sin": 25, "cos": 25,
    "erf": 20, "min": 2, "max": 2, "pow": 40,
}
_DIVISION_COST = 10  # an IEEE float division


def _math_cost(node: Node) -> int:
    own = 0
    if isinstance(node, Call):
        own = MATH_COST[node.func]
    elif isinstance(node, BinOp):
        own = _DIVISION_COST if node.op == "/" else 1
    elif isinstance(node, Power):
        e = node.exponent
        if e in (0.5, -0.5):
            own = MATH_COST["sqrt"]
        elif _small_whole(e):  # ipow: repeated squaring
            whole = abs(int(e))
            own = max(1, whole.bit_length() - 1 + bin(whole).count("1") - 1) + (_DIVISION_COST if e < 0 else 0)
        else:
            own = MATH_COST["pow"]
    elif isinstance(node, Neg):
        own = 1
    return own + sum(_math_cost(child) for child in _children(node))


def _functions(node: Node) -> set[str]:
    return _collect(node, lambda n: n.func if isinstance(n, Call) else None)


def _needs_positive(node: Node) -> bool:
    if isinstance(node, Call) and FUNCTIONS[node.func].positive_domain:
        return True
    if isinstance(node, BinOp) and node.op == "/" and _variables(node.right):
        return True
    if isinstance(node, Power) and (node.exponent < 0 or float(node.exponent) != int(node.exponent)):
        return True
    return any(_needs_positive(child) for child in _children(node))


# ---------------------------------------------------------------------------------------------
# Emitters. Precedence: 1 for + -, 2 for * /, 3 for unary minus, 4 for ** and atoms.


def _float_literal(value: float) -> str:
    """``repr`` of a finite float: the shortest text that reads back as exactly ``value``, and a
    valid float literal in C++ and Python alike (``2.0``, ``1e-07``, ``8.112963841460668e+31``)."""
    text = repr(float(value))
    if not math.isfinite(value) or not set(text) <= set("0123456789.e+-"):
        raise AssertionError(f"not a finite float literal: {text}")  # pragma: no cover
    return text


#: The whole exponents emitted as multiplications in C++ (opmath::ipow), the rest through pow.
MAX_WHOLE_EXPONENT = 16
#: The longest Triton base text repeated for x ** 2 .. x ** 4 (nested powers would multiply the text).
_MAX_REPEATED_BASE = 400


def _small_whole(exponent: float) -> bool:
    return exponent == int(exponent) and abs(exponent) <= MAX_WHOLE_EXPONENT


class _CppStyle:
    def __init__(self, acc: str) -> None:
        self.acc = acc

    def num(self, value: float) -> str:
        return f"{self.acc}({_float_literal(value)})"

    def call(self, func: str, args: list[str]) -> str:
        return f"opmath::{func}({', '.join(args)})"

    def power(self, base: str, exponent: float) -> str:
        if exponent == 2:
            return f"opmath::square({base})"
        if exponent == 0.5:
            return f"opmath::sqrt({base})"
        if _small_whole(exponent):
            # multiplications, not powf (see ipow in opmath.h)
            return f"opmath::ipow<{int(exponent)}>({base})"
        return f"opmath::pow({base}, {self.num(exponent)})"


class _TorchStyle:
    def num(self, value: float) -> str:
        return _float_literal(value)

    def call(self, func: str, args: list[str]) -> str:
        return f"{FUNCTIONS[func].torch}({', '.join(args)})"


class _TritonStyle:
    """Triton language. Literals are materialized in the op-math dtype (a bare Python float would
    be a float32 constant, wrong in float64). exp, log, rsqrt and erf are Triton's own; sqrt is the
    correctly rounded sqrt_rn (tl.sqrt is an approximation); tanh, sin, cos and pow come from
    libdevice, which picks the float or double routine from the argument's dtype, as opmath.h does
    for the CUDA kernel (Triton's own sin/cos are approximations that lose accuracy on large
    arguments)."""

    _TL = frozenset({"exp", "log", "rsqrt", "erf", "abs"})
    _LIBDEVICE = frozenset({"tanh", "sin", "cos", "pow"})

    def __init__(self, acc: str) -> None:
        self.acc = acc

    def num(self, value: float) -> str:
        return f"tl.full((), {_float_literal(value)}, {self.acc})"

    def call(self, func: str, args: list[str]) -> str:
        if func in self._TL:
            return f"tl.{func}({', '.join(args)})"
        if func in self._LIBDEVICE:
            return f"libdevice.{func}({', '.join(args)})"
        if func == "sqrt":
            return f"tl.sqrt_rn({args[0]})"
        if func == "sigmoid":
            return f"(1.0 / (1.0 + tl.exp(-({args[0]}))))"
        # torch.minimum/maximum propagate NaN; so must we (plain tl.minimum would not)
        spelled = {"min": "tl.minimum", "max": "tl.maximum"}[func]
        return f"{spelled}({args[0]}, {args[1]}, propagate_nan=tl.PropagateNan.ALL)"

    def power(self, base: str, exponent: float) -> str:
        if exponent == 0.5:
            return f"tl.sqrt_rn({base})"
        if exponent in (2, 3, 4) and len(base) <= _MAX_REPEATED_BASE:
            # multiplications, not pow (Triton's compiler computes the repeated base once)
            return " * ".join([f"({base})"] * int(exponent))
        if exponent == -1:
            return f"1.0 / ({base})"
        return f"libdevice.pow({base}, {self.num(exponent)})"


class _CanonicalStyle(_TorchStyle):
    """Python syntax over kernelgen's own function names: what --expr would be, written by us."""

    def call(self, func: str, args: list[str]) -> str:
        return f"{func}({', '.join(args)})"


_Style = Union[_CppStyle, _TorchStyle, _TritonStyle]  # noqa: UP007 (a runtime alias)


def _emit(node: Node, style: _Style) -> str:
    text, _ = _emit_prec(node, style)
    return text


def _emit_prec(node: Node, style: _Style) -> tuple[str, int]:
    if isinstance(node, Num):
        text = style.num(node.value)
        return (text, 3 if text.startswith("-") else 4)
    if isinstance(node, Var):
        return node.name, 4
    if isinstance(node, RowRef):
        return (f"_r[{node.index}]" if isinstance(style, _CppStyle) else f"_r{node.index}"), 4
    if isinstance(node, Reduce):
        if not isinstance(style, _CanonicalStyle):
            raise AssertionError("reductions are emitted through ParsedExpr.plan()")  # pragma: no cover
        return f"{node.func}({_emit(node.arg, style)})", 4
    if isinstance(node, Neg):
        inner, prec = _emit_prec(node.operand, style)
        # -(-x), never --x: in C++ that is a decrement
        return "-" + (inner if prec >= 3 and not inner.startswith("-") else f"({inner})"), 3
    if isinstance(node, BinOp):
        if (
            isinstance(style, _CppStyle) and node.op == "/" and _rowrefs(node.right)
            and not _variables(node.right)
        ):
            # Division by a value that is constant along the row (built from reductions): multiply by
            # its reciprocal instead. The compiler computes 1 / value once per row (the same
            # expression in every unrolled step), where an IEEE division per element would make a
            # half-precision softmax compute-bound. It may differ from a / value by one rounding.
            left, lp = _emit_prec(node.left, style)
            right, rp = _emit_prec(node.right, style)
            return f"{left if lp >= 2 else f'({left})'} * ({style.num(1.0)} / {right if rp >= 4 else f'({right})'})", 2
        mine = 1 if node.op in "+-" else 2
        left, lp = _emit_prec(node.left, style)
        right, rp = _emit_prec(node.right, style)
        if lp < mine:
            left = f"({left})"
        # the right operand of - and / (and of anything at equal precedence) keeps its parens
        if rp < mine or (rp == mine and node.op in "-/") or (rp == mine and isinstance(node.right, BinOp)):
            right = f"({right})"
        return f"{left} {node.op} {right}", mine
    if isinstance(node, Power):
        base, bp = _emit_prec(node.base, style)
        if isinstance(style, (_CppStyle, _TritonStyle)):
            return style.power(base, node.exponent), 4
        # ** is right-associative: (x ** 2.0) ** 3.0 needs its parentheses
        if bp < 4 or isinstance(node.base, Power):
            base = f"({base})"
        exponent = style.num(node.exponent)
        if exponent.startswith("-"):
            exponent = f"({exponent})"
        return f"{base} ** {exponent}", 4
    if isinstance(node, Call):
        args = [_emit_prec(arg, style)[0] for arg in node.args]
        if node.func == "pow" and isinstance(node.args[1], Num) and isinstance(style, (_CppStyle, _TritonStyle)):
            return style.power(args[0], node.args[1].value), 4  # pow(x, 3) is x ** 3
        if type(style) is _TorchStyle:
            return _torch_call(node, args), 4
        return style.call(node.func, args), 4
    raise AssertionError(f"unknown node {node!r}")  # pragma: no cover


def _torch_call(node: Call, args: list[str]) -> str:
    """torch.minimum/maximum/pow need a tensor operand; a folded literal needs another spelling."""
    if node.func in ("min", "max"):
        literal = [isinstance(arg, Num) for arg in node.args]
        if any(literal):
            tensor = args[literal.index(False)]
            bound = args[literal.index(True)]
            keyword = "max" if node.func == "min" else "min"
            return f"torch.clamp({tensor}, {keyword}={bound})"
    return f"{FUNCTIONS[node.func].torch}({', '.join(args)})"
