"""Read an expression's text into a tree of whitelisted nodes (:mod:`kernelgen.nodes`).

An expression such as ``x * sigmoid(1.702 * x)`` is parsed with :mod:`ast` and checked
against a whitelist. Only these are accepted:

* the binary operators ``+ - * /``, unary ``-`` and ``+``, and ``**`` with a numeric exponent;
* finite int or float literals (an int must be exact as a float64: at most 2**53), 0 or from 2**-126 to
  2**126 in magnitude, folded constants too (:data:`SMALLEST_NUMBER`, :data:`LARGEST_NUMBER`);
* the declared input names (and, for a rowwise expression, the weights);
* the functions in :data:`~kernelgen.nodes.FUNCTIONS` (and, rowwise, the row reductions of
  :data:`~kernelgen.nodes.REDUCTIONS`).

Anything else (attributes, subscripts, strings, comparisons, lambdas, keyword arguments, unknown
names, ...) raises :class:`~kernelgen.errors.ExprError` naming the offending token and its
column. Before parsing, the text must be one line of printable ASCII without ``#`` (a comment
would vanish from the tree); a tab counts as a space.

Sub-expressions made only of literals are folded to a number at parse time, in float64.
"""

from __future__ import annotations

import ast
import math
import warnings
from collections.abc import Callable, Mapping

from .emit import canonical
from .errors import ExprError, clip, did_you_mean
from .nodes import (
    FUNCTIONS,
    REDUCTIONS,
    BinOp,
    Call,
    Neg,
    Node,
    Num,
    Power,
    Reduce,
    Var,
    collect,
    row_varying,
    variables,
)

MAX_EXPR_LENGTH = 2000
MAX_DEPTH = 64
#: The largest integer literal accepted: every integer up to it is exact in float64.
MAX_EXACT_INT = 2**53
#: The magnitudes a nonzero number of an expression may have: float32's normal numbers whose reciprocals
#: are normal too (2**-126, about 1.2e-38, to 2**126, about 8.5e37). float32, float16 and bfloat16 ops
#: compute in float32, where a number outside that range is 0, subnormal (flushed to 0 where the GPU's
#: code flushes subnormals) or infinite, and so is the reciprocal a derivative of a quotient by it takes:
#: the op would compute with a number other than the one written, and its tests would fail on 0 * inf.
SMALLEST_NUMBER = 2.0**-126
LARGEST_NUMBER = 2.0**126

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


def parse_tree(
    source: str,
    inputs: tuple[str, ...] | list[str],
    *,
    weights: tuple[str, ...] | list[str] = (),
    rowwise: bool = False,
    option: str = "--expr",
    hints: Mapping[str, str] | None = None,
    require_all: bool = True,
) -> tuple[str, Node]:
    """Parse and validate ``source`` over the declared ``inputs``: its canonical text and its tree.

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
    # A literal out of range is refused where it is read (with its column); a constant sub-expression is
    # folded in float64 first, so only its value is checked, here.
    numbers = collect(tree, lambda n: n.value if isinstance(n, Num) else n.exponent if isinstance(n, Power) else None)
    folded = {value for value in numbers if not _in_range(value)}
    if folded:
        raise ExprError(f"a constant sub-expression is {min(folded, key=abs)!r}, out of range in {option}; {_RANGE}", field)
    used = variables(tree)
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
    written = canonical(tree)
    if len(written) > MAX_EXPR_LENGTH:  # so that the canonical text always parses again
        raise ExprError(
            f"{option} is {len(written)} characters long once written out (numbers in full, spaces "
            f"around operators); the limit is {MAX_EXPR_LENGTH}",
            field,
        )
    return written, tree


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

    def _mantissa(self, node: ast.AST) -> str:
        """The digits of a float literal's text before its exponent (``1.5`` of ``1.5e-400``)."""
        return (ast.get_source_segment(self.text, node) or "").lower().split("e")[0]

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
            # A literal such as 1e-400 is 0 once read: not what was written.
            underflowed = value == 0 and any(digit in "123456789" for digit in self._mantissa(node))
            if underflowed or not _in_range(value):
                raise ExprError(f"the number {self._where(node)} is out of range in {self.option}; {_RANGE}", self.field)
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
        if not row_varying(arg, self.inputs):
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


_RANGE = (
    "a nonzero number must be 1.2e-38 to 8.5e37 in magnitude: float32, float16 and bfloat16 ops compute in "
    "float32, where it or its reciprocal (in a derivative) would be 0, subnormal or infinite"
)


def _in_range(value: float) -> bool:
    return value == 0 or SMALLEST_NUMBER <= abs(value) <= LARGEST_NUMBER


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
