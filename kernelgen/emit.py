"""Print an expression tree (:mod:`kernelgen.nodes`) as C++, PyTorch, Triton or canonical Python.

Nothing the user typed reaches a generated file: the emitters print whitelisted nodes only, every
number as ``repr`` of a finite Python float (a float literal in C++ and Python alike, so both
compute with the same value), and names that passed the identifier checks of :mod:`kernelgen.spec`.

Precedence: 1 for + -, 2 for * /, 3 for unary minus, 4 for ** and atoms.
"""

from __future__ import annotations

import math
from typing import Union

from .nodes import FUNCTIONS, BinOp, Call, Neg, Node, Num, Power, Reduce, RowRef, Var, rowrefs, variables


def float_literal(value: float) -> str:
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


def small_whole(exponent: float) -> bool:
    """True for an exponent the C++ emits as multiplications (opmath::ipow)."""
    return exponent == int(exponent) and abs(exponent) <= MAX_WHOLE_EXPONENT


class CppStyle:
    """C++ device code in the op-math type ``acc`` (``opmath::`` functions; reductions as ``_r[k]``)."""

    def __init__(self, acc: str) -> None:
        self.acc = acc

    def num(self, value: float) -> str:
        return f"{self.acc}({float_literal(value)})"

    def call(self, func: str, args: list[str]) -> str:
        return f"opmath::{func}({', '.join(args)})"

    def power(self, base: str, exponent: float) -> str:
        if exponent == 2:
            return f"opmath::square({base})"
        if exponent == 0.5:
            return f"opmath::sqrt({base})"
        if small_whole(exponent):
            # multiplications, not powf (see ipow in opmath.h)
            return f"opmath::ipow<{int(exponent)}>({base})"
        return f"opmath::pow({base}, {self.num(exponent)})"


class TorchStyle:
    """PyTorch over tensors named like the inputs (the reference)."""

    def num(self, value: float) -> str:
        return float_literal(value)

    def call(self, func: str, args: list[str]) -> str:
        return f"{FUNCTIONS[func].torch}({', '.join(args)})"


class TritonStyle:
    """Triton language. Literals are materialized in the op-math dtype (a bare Python float would
    be a float32 constant, wrong in float64). exp, log, rsqrt and erf are Triton's own; sqrt is the
    correctly rounded libdevice.sqrt_rn (tl.sqrt is an approximation; tl.sqrt_rn takes float32 only); tanh, sin, cos and pow come from
    libdevice, which picks the float or double routine from the argument's dtype, as opmath.h does
    for the CUDA kernel (Triton's own sin/cos are approximations that lose accuracy on large
    arguments)."""

    _TL = frozenset({"exp", "log", "rsqrt", "erf", "abs"})
    _LIBDEVICE = frozenset({"tanh", "sin", "cos", "pow"})

    def __init__(self, acc: str) -> None:
        self.acc = acc

    def num(self, value: float) -> str:
        return f"tl.full((), {float_literal(value)}, {self.acc})"

    def call(self, func: str, args: list[str]) -> str:
        if func in self._TL:
            return f"tl.{func}({', '.join(args)})"
        if func in self._LIBDEVICE:
            return f"libdevice.{func}({', '.join(args)})"
        if func == "sqrt":
            return f"libdevice.sqrt_rn({args[0]})"
        if func == "sigmoid":
            return f"(1.0 / (1.0 + tl.exp(-({args[0]}))))"
        # torch.minimum/maximum propagate NaN; so must we (plain tl.minimum would not)
        spelled = {"min": "tl.minimum", "max": "tl.maximum"}[func]
        return f"{spelled}({args[0]}, {args[1]}, propagate_nan=tl.PropagateNan.ALL)"

    def power(self, base: str, exponent: float) -> str:
        if exponent == 0.5:
            return f"libdevice.sqrt_rn({base})"
        if exponent in (2, 3, 4) and len(base) <= _MAX_REPEATED_BASE:
            # multiplications, not pow (Triton's compiler computes the repeated base once)
            return " * ".join([f"({base})"] * int(exponent))
        if exponent == -1:
            return f"1.0 / ({base})"
        return f"libdevice.pow({base}, {self.num(exponent)})"


class CanonicalStyle(TorchStyle):
    """Python syntax over kernelgen's own function names: what --expr would be, written by us."""

    def call(self, func: str, args: list[str]) -> str:
        return f"{func}({', '.join(args)})"


Style = Union[CppStyle, TorchStyle, TritonStyle]  # noqa: UP007 (a runtime alias)


def emit(node: Node, style: Style) -> str:
    """``node`` printed in ``style``."""
    text, _ = _emit_prec(node, style)
    return text


def canonical(node: Node) -> str:
    """``node`` printed as canonical Python (:class:`CanonicalStyle`): parsing it gives the same tree."""
    return emit(node, CanonicalStyle())


def _emit_prec(node: Node, style: Style) -> tuple[str, int]:
    if isinstance(node, Num):
        text = style.num(node.value)
        return (text, 3 if text.startswith("-") else 4)
    if isinstance(node, Var):
        return node.name, 4
    if isinstance(node, RowRef):
        return (f"_r[{node.index}]" if isinstance(style, CppStyle) else f"_r{node.index}"), 4
    if isinstance(node, Reduce):
        if not isinstance(style, CanonicalStyle):
            raise AssertionError("reductions are emitted through ParsedExpr.plan()")  # pragma: no cover
        return f"{node.func}({emit(node.arg, style)})", 4
    if isinstance(node, Neg):
        inner, prec = _emit_prec(node.operand, style)
        # -(-x), never --x: in C++ that is a decrement
        return "-" + (inner if prec >= 3 and not inner.startswith("-") else f"({inner})"), 3
    if isinstance(node, BinOp):
        if (
            isinstance(style, CppStyle) and node.op == "/" and rowrefs(node.right)
            and not variables(node.right)
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
        if rp < mine or (rp == mine and node.op in "-/") or (rp == mine and isinstance(node.right, (BinOp, Power))):
            right = f"({right})"
        return f"{left} {node.op} {right}", mine
    if isinstance(node, Power):
        base, bp = _emit_prec(node.base, style)
        if isinstance(style, CppStyle):
            return style.power(base, node.exponent), 4
        if isinstance(style, TritonStyle):
            return _triton_power(style, base, node.exponent)
        # ** is right-associative: (x ** 2.0) ** 3.0 needs its parentheses
        if bp < 4 or isinstance(node.base, Power):
            base = f"({base})"
        exponent = style.num(node.exponent)
        if exponent.startswith("-"):
            exponent = f"({exponent})"
        return f"{base} ** {exponent}", 4
    if isinstance(node, Call):
        args = [_emit_prec(arg, style)[0] for arg in node.args]
        if node.func == "pow" and isinstance(node.args[1], Num) and isinstance(style, TritonStyle):
            return _triton_power(style, args[0], node.args[1].value)  # pow(x, 3) is x ** 3
        if node.func == "pow" and isinstance(node.args[1], Num) and isinstance(style, CppStyle):
            return style.power(args[0], node.args[1].value), 4
        if type(style) is TorchStyle:
            return _torch_call(node, args), 4
        return style.call(node.func, args), 4
    raise AssertionError(f"unknown node {node!r}")  # pragma: no cover


def _triton_power(style: TritonStyle, base: str, exponent: float) -> tuple[str, int]:
    """x ** 2 to 4 print as a product and x ** -1 as a division: they bind like * and /, so a division by
    them keeps its parentheses (a / y ** 2 is a / ((y) * (y)), never a / (y) * (y))."""
    text = style.power(base, exponent)
    return text, 4 if text.startswith(("tl.", "libdevice.")) else 2


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
