"""The error model of an expression: Python code that bounds the rounding error of evaluating it.

A generated test compares an op with its reference evaluated in float64 on the same (already
rounded) inputs, and allows per element the error that evaluating the expression in op-math precision
(float32, or float64 for float64 ops) can accumulate. That allowance is derived from the parsed tree,
not chosen per dtype: :func:`error_bound_python` emits a Python function that walks the expression in
float64 alongside the reference and returns, per element, a first-order *running error bound* ``E``
in units of the op-math unit roundoff ``u``:

* an input is exact (E = 0): the kernel widens it to op-math without a rounding;
* a literal costs its own rounding to op-math (zero when it is exact in float32);
* ``a + b``, ``a - b``: E(a) + E(b) + one rounding of the result;
* ``a * b``: |b| E(a) + |a| E(b) + one rounding; ``a / b``: E(a) / |b| + |a / b| E(b) / |b| + the
  division's own error;
* ``f(a)``: |f'| E(a) + the function's own error (its documented ulp error, which the test's model
  looks up per backend and dtype: the fast ``exp`` and division of float16/bfloat16, Triton's
  approximate ``exp``, ``log`` and division), with |f'| the largest slope within a's error of a;
* ``min``, ``max``, ``abs``, ``-a``: no rounding; the larger (or the only) operand error;
* a row reduction: ``sum`` adds the terms' errors and a summation error for its length, ``mean``
  divides that by the length and adds a division, ``max``/``min`` take the largest error of the row.

The function calls a *model* object ``_m`` (written into the generated test) for everything that
depends on the dtype and the backend: ``_m.one_rounding(t)``, ``_m.literal_rounding(c)``,
``_m.function_error(f, x, fx)``, ``_m.division_error(q)``, ``_m.power_error(x, p, xp)``,
``_m.larger_error(e1, e2)``, ``_m.tie_step_error(a, b, e)`` and ``_m.sum_of_row / mean_of_row / max_of_row / min_of_row``. The emitted
code itself is only the expression's structure: the derivatives, written out per node.

Like the other emitters, it prints whitelisted nodes only: numbers as ``repr`` of finite floats, names
that passed kernelgen's identifier checks, and comments of canonical text. Every local it introduces
starts with ``_`` (input names never do), so no input can shadow one.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Mapping

from . import diff
from .emit import canonical, float_literal
from .errors import clip
from .expr import ParsedExpr
from .nodes import BinOp, Call, Neg, Node, Num, Power, Reduce, RowRef, Var
from .rowplan import plan

#: Each function's largest slope over its argument's error interval [x - d, x + d], as Python over
#: ``{x}``, ``{y}`` and the argument's absolute error bound ``{d}`` (float64 tensors). The first-order
#: slope at x alone misses where it nearly vanishes and the argument's error is large: cos of an argument
#: near 1e8 in float32 is off by whole radians where sin(x) is 0 (the mean value theorem takes the slope
#: somewhere in the interval, not at x). Where f'' is bounded, the slope at x plus d max|f''|, capped at
#: max|f'|; where it is not, the slope at the interval's steep end.
SLOPES_OVER: dict[str, str] = {
    "exp": "{y} * torch.exp({d})",
    "log": "1.0 / ({x}.abs() - {d}).clamp(min=0.0)",
    "sqrt": "0.5 / torch.sqrt(({x}.abs() - {d}).clamp(min=0.0))",
    "rsqrt": "0.5 * ({x}.abs() - {d}).clamp(min=0.0) ** -1.5",
    "tanh": "(1.0 - {y} * {y} + 0.7699 * {d}).clamp(max=1.0)",  # |tanh''| <= 4 / (3 sqrt(3))
    "sigmoid": "({y} * (1.0 - {y}) + 0.0963 * {d}).clamp(max=0.25)",  # |sigmoid''| <= 1 / (6 sqrt(3))
    "sin": "(torch.cos({x}).abs() + {d}).clamp(max=1.0)",
    "cos": "(torch.sin({x}).abs() + {d}).clamp(max=1.0)",
    "erf": "(1.1283791670955126 * torch.exp(-{x} * {x}) + 0.968 * {d}).clamp(max=1.1283791670955126)",  # |erf''| <= 2 sqrt(2 / (pi e))
}

_COMMENT_LIMIT = 72

#: Each function's own error in ulps of its result, for float and for double: the largest among what
#: the kernels and the reference call. CUDA's libdevice maxima (CUDA C Programming Guide, "Mathematical
#: Functions"), raised where tests/test_error_model.py measured more on the CPU: PyTorch's float32
#: sqrt (0.75 ulp) and its float64 rsqrt (1 / sqrt: 1.45 ulp), the reference's and a Triton op's CPU
#: implementation; glibc's functions (the CPU loop) are within them. "/" is one division, or a
#: reciprocal and a product. The generated tests print these tables (kg_function_ulps) and add the
#: fast variants of their backend to them.
FUNCTION_ULPS: dict[str, dict[str, float]] = {
    "float": {"exp": 2, "log": 1, "sqrt": 1, "rsqrt": 2, "tanh": 2, "sin": 2, "cos": 2, "erf": 2, "pow": 4, "/": 1},
    "double": {"exp": 1, "log": 1, "sqrt": 1, "rsqrt": 2, "tanh": 2, "sin": 2, "cos": 2, "erf": 2, "pow": 2, "/": 1},
}


def ulps_literal(precision: str) -> str:
    """:data:`FUNCTION_ULPS` of ``precision`` as a Python dict literal."""
    return "{" + ", ".join(f'"{name}": {value!r}' for name, value in FUNCTION_ULPS[precision].items()) + "}"


def exact_in_float32(value: float) -> bool:
    """Whether ``value`` is a float32 number (then writing it in op-math, float or double, is exact)."""
    try:
        return struct.unpack("<f", struct.pack("<f", value))[0] == value
    except OverflowError:
        return False


class _Emitter:
    """Walks a tree and writes one value line and (when it is not zero) one error line per node."""

    def __init__(self, leaf_errors: Mapping[str, str], names: Mapping[str, str], memo: bool = False) -> None:
        self.lines: list[str] = []
        self.count = 0
        self.leaf_errors = dict(leaf_errors)
        self.names = dict(names)
        # memo: a subtree seen before reuses its value and error (the gradients of one expression share
        # most of their terms)
        self.memo: dict[Node, tuple[str, str | None]] | None = {} if memo else None

    def _fresh(self) -> tuple[str, str]:
        k = self.count
        self.count += 1
        return f"_t{k}", f"_e{k}"

    def _assign(self, name: str, value: str, comment: str | None = None) -> None:
        line = f"    {name} = {value}"
        if comment:
            line += f"  # {clip(comment, _COMMENT_LIMIT)}"
        self.lines.append(line)

    @staticmethod
    def _abs(value: str) -> str:
        """|value| for a temporary, an input name or a number literal (negative ones in parentheses)."""
        number = value.strip("()")
        if number.lstrip("-")[:1].isdigit():
            return float_literal(abs(float(number)))
        return f"{value}.abs()"

    @staticmethod
    def _sum(terms: list[str | None]) -> str | None:
        kept = [term for term in terms if term is not None]
        return " + ".join(kept) if kept else None

    def _node(self, node: Node, value: str, error: str | None, comment: str) -> tuple[str, str | None]:
        """Writes ``_tK = value`` and ``_eK = error``; returns the names (the error's None if zero)."""
        t, e = self._fresh()
        self._assign(t, value.format(t=t), comment)
        if error is None:
            return t, None
        self._assign(e, error.format(t=t))
        return t, e

    def visit(self, node: Node) -> tuple[str, str | None]:
        """The Python value of ``node`` (a name or a literal) and its error in units of u (or None: 0)."""
        if self.memo is None:
            return self._visit(node)
        if node not in self.memo:
            self.memo[node] = self._visit(node)
        return self.memo[node]

    def _visit(self, node: Node) -> tuple[str, str | None]:
        if isinstance(node, Num):
            literal = float_literal(node.value)
            error = None if exact_in_float32(node.value) else f"_m.literal_rounding({literal})"
            return (f"({literal})" if literal.startswith("-") else literal), error
        if isinstance(node, Var):
            return self.names.get(node.name, node.name), self.leaf_errors.get(node.name)
        if isinstance(node, RowRef):
            return f"_r{node.index}", f"_q{node.index}"
        if isinstance(node, Reduce):  # pragma: no cover - rowwise trees are emitted through their plan
            raise AssertionError("reductions are emitted through the plan")
        if isinstance(node, diff.Compare):
            # A derivative's step (kernelgen.diff: abs, min, max): exactly 0 or 1 in the kernel as here
            # wherever the operands compare the same way; off by up to 1 within their errors of a tie.
            a, ea = self.visit(node.left)
            b, eb = self.visit(node.right)
            spread = self._sum([ea, eb])
            error = None if spread is None else f"_m.tie_step_error({a}, {b}, {spread})"
            return self._node(node, f"({a} {node.op} {b}).double()", error, diff.canonical(node))
        # reductions already computed print as _r0, _r1, ...; a derivative's steps as [a > b]
        comment = canonical(node) if not any(isinstance(n, diff.Compare) for n in diff.walk(node)) else diff.canonical(node)
        if isinstance(node, Neg):
            a, ea = self.visit(node.operand)
            t, _ = self._node(node, f"-{a}", None, comment)
            return t, ea
        if isinstance(node, BinOp):
            a, ea = self.visit(node.left)
            b, eb = self.visit(node.right)
            if node.op in "+-":
                error = self._sum([ea, eb, "_m.one_rounding({t})"])
            elif node.op == "*":
                error = self._sum([
                    f"{self._abs(b)} * {ea}" if ea else None,
                    f"{self._abs(a)} * {eb}" if eb else None,
                    f"_m.product_of_errors({ea}, {eb})" if ea and eb else None,
                    "_m.one_rounding({t})",
                ])
            else:
                error = self._sum([
                    f"{ea} / {self._abs(b)}" if ea else None,
                    f"({{t}} / {b}).abs() * {eb}" if eb else None,
                    "_m.division_error({t})",
                ])
            return self._node(node, f"{a} {node.op} {b}", error, comment)
        if isinstance(node, Power):
            return self._power(node.base, node.exponent, comment)
        if isinstance(node, Call):
            return self._call(node, comment)
        raise AssertionError(f"unknown node {node!r}")  # pragma: no cover

    def _power(self, base_node: Node, p: float, comment: str) -> tuple[str, str | None]:
        """``base ** p`` for a literal p: the derivative p * base ** (p - 1), then _m.power_error's
        (multiplications for a whole p, sqrt for 0.5, pow otherwise, and the exponent's rounding)."""
        x, ex = self.visit(base_node)
        p_text = float_literal(p)
        if p == 0:
            return self._node(base_node, f"torch.ones_like({x})", None, comment)
        if p == 1:
            slope = "1.0"
        elif p == 2:
            slope = f"(2.0 * {x}).abs()"
        else:
            slope = f"({p_text} * {x} ** {float_literal(p - 1)}).abs()"
        error = self._sum([
            f"{slope} * {ex}" if ex else None,
            f"_m.product_of_errors({ex}, {ex})" if ex and p == 2 else None,
            f"_m.power_error({x}, {p_text}, {{t}})",
        ])
        return self._node(base_node, f"{x} ** {p_text}" if p != 0.5 else f"torch.sqrt({x})", error, comment)

    def _call(self, node: Call, comment: str) -> tuple[str, str | None]:
        func = node.func
        if func == "pow":
            if isinstance(node.args[1], Num):  # pow(x, 3) is x ** 3, in the kernels too
                return self._power(node.args[0], node.args[1].value, comment)
            x, ex = self.visit(node.args[0])
            y, ey = self.visit(node.args[1])
            base = node.args[0]
            log_x = (float_literal(math.log(abs(base.value))) if base.value else "0.0") if isinstance(base, Num) else f"torch.log({x})"
            error = self._sum([
                f"({y} * torch.pow({x}, {y} - 1.0)).abs() * {ex}" if ex else None,
                f"({{t}} * {log_x}).abs() * {ey}" if ey else None,
                f"_m.function_error('pow', {x}, {{t}})",
            ])
            return self._node(node, f"torch.pow({x}, {y})", error, comment)
        if func in ("min", "max"):
            values = [self.visit(arg) for arg in node.args]
            literal = [isinstance(arg, Num) for arg in node.args]
            torch_name = "torch.minimum" if func == "min" else "torch.maximum"
            if any(literal):
                (tensor, et), (number, en) = (values[literal.index(False)], values[literal.index(True)])
                keyword = "max" if func == "min" else "min"
                value = f"torch.clamp({tensor}, {keyword}={number})"
            else:
                (a, et), (b, en) = values
                value = f"{torch_name}({a}, {b})"
            # |min(a~, b~) - min(a, b)| <= max(|a~ - a|, |b~ - b|): the larger operand error, no rounding
            error = f"_m.larger_error({et}, {en})" if et and en else (et or en)
            t, _ = self._node(node, value, None, comment)
            return t, error
        (x, ex), = [self.visit(arg) for arg in node.args]
        if func == "abs":
            t, _ = self._node(node, f"{x}.abs()", None, comment)
            return t, ex
        torch_name = {"rsqrt": "torch.rsqrt", "sigmoid": "torch.sigmoid", "erf": "torch.erf"}.get(func, f"torch.{func}")
        # an exact argument takes the slope at x; an argument off by up to ex u, the largest slope within that
        slope = SLOPES_OVER[func].format(x=x, y="{t}", d=f"{ex} * _m.u") if ex else None
        error = self._sum([f"{slope} * {ex}" if ex else None, f"_m.function_error({func!r}, {x}, {{t}})"])
        return self._node(node, f"{torch_name}({x})", error, comment)


_ROW_METHODS = {"sum": "sum_of_row", "mean": "mean_of_row", "max": "max_of_row", "min": "min_of_row"}


def error_bound_python(
    parsed: ParsedExpr,
    function: str = "error_bound",
    *,
    leaf_errors: Mapping[str, str] | None = None,
    names: Mapping[str, str] | None = None,
) -> str:
    """The source of ``def function(_m, <inputs>, <weights>, <leaf error names>)``: per element, the
    bound E on the rounding error of evaluating ``parsed`` in op-math precision, in units of its unit
    roundoff (``_m.u``). The arguments are float64 tensors of the (rounded) inputs; weights are 1-D,
    one value per element of a row. ``leaf_errors`` gives a leaf an error of its own, passed as an
    extra argument (the matmul epilogue's ``acc``: the dot product's). ``names`` renames leaves in the
    generated code (input name -> identifier). The result may be a number or broadcast to the
    inputs' shape (the caller broadcasts it).
    """
    leaf_errors = dict(leaf_errors or {})
    names = dict(names or {})
    emitter = _Emitter(leaf_errors, names)
    columns = [names.get(name, name) for name in (*parsed.inputs, *parsed.weights)]
    params = ", ".join(["_m", *columns, *leaf_errors.values()])
    doc = (
        f'    """The bound on the rounding error of {clip(parsed.source, 48)}, in units of _m.u,\n'
        '    element by element: one line per step of the expression (kernelgen writes it from the\n'
        '    expression; testing/error_model.py of the package says what each term means)."""'
    )
    lines = [f"def {function}({params}):", doc]
    body = emitter.lines
    if parsed.rowwise:
        row_plan = plan(parsed.tree)
        for index, stage in enumerate(row_plan.reductions):
            value, error = emitter.visit(stage.arg)
            body.append(
                f"    _r{index}, _q{index} = _m.{_ROW_METHODS[stage.func]}({value}, {error})"
                f"  # {clip(stage.canonical, _COMMENT_LIMIT)}"
            )
        output = row_plan.output
    else:
        output = parsed.tree
    _, error = emitter.visit(output)
    lines.extend(body)
    lines.append(f"    return {error if error is not None else '0.0'}")
    return "\n".join(lines) + "\n"


def gradient_error_bound_python(parsed: ParsedExpr, function: str = "grad_error_bound",
                                *, names: Mapping[str, str] | None = None,
                                leaf_errors: Mapping[str, str] | None = None) -> str:
    """The source of ``def function(_m, _grad, <inputs>, <leaf error names>)``: per element, the bound E
    (in units of _m.u) on the rounding error of evaluating each input's gradient ``_grad * d out / d
    input`` (the derivatives kernelgen writes from the expression, :func:`kernelgen.diff.elementwise_vjp`)
    in op-math precision, returned as a tuple in the order of the inputs. ``_grad`` (the incoming
    gradient) is an exact leaf, like the inputs, except those ``leaf_errors`` gives an error of their own
    (a matmul epilogue's ``acc``: the dot product's and the rounding of the saved accumulator)."""
    names = dict(names or {})
    leaf_errors = dict(leaf_errors or {})
    grads = diff.elementwise_vjp(parsed)
    emitter = _Emitter(leaf_errors, names, memo=True)
    params = ", ".join(["_m", diff.GRAD, *(names.get(name, name) for name in parsed.inputs), *leaf_errors.values()])
    doc = (
        f'    """The bounds on the rounding errors of the gradients of {clip(parsed.source, 40)}, in units of\n'
        '    _m.u, element by element, one per input: one line per step of each derivative (kernelgen writes\n'
        '    them from the expression; testing/error_model.py of the package says what each term means)."""'
    )
    results = []
    for name in parsed.inputs:
        tree = grads.get(name, Num(0.0))
        _, error = emitter.visit(tree)
        results.append(error if error is not None else "0.0")
    lines = [f"def {function}({params}):", doc, *emitter.lines]
    lines.append(f"    return ({', '.join(results)}{',' if len(results) == 1 else ''})")
    return "\n".join(lines) + "\n"


def rowwise_gradient_error_bound_python(parsed: ParsedExpr, function: str = "grad_error_bound",
                                        *, names: Mapping[str, str] | None = None) -> str:
    """The source of ``def function(_m, _grad, <inputs>, <weights>)`` for a rowwise expression: the bounds
    E (in units of _m.u) on the rounding errors of its gradients as :func:`kernelgen.diff.rowwise_vjp`
    derives them, one per input (per element, the shape of the rows) and then one per weight (per column:
    the weight's gradient sums its per-element contributions over the rows, ``_m.sum_of_column``),
    returned as a tuple in that order. ``_grad`` and the inputs arrive as 2-D float64 tensors of rows, the
    weights 1-D; the backward's reductions (the forward's it recomputes, and its own) are walked like the
    forward's, through their plan."""
    if not parsed.rowwise:
        raise ValueError("rowwise_gradient_error_bound_python() takes a rowwise expression")
    names = dict(names or {})
    backward = diff.rowwise_vjp(parsed)
    emitter = _Emitter({}, names, memo=True)
    inputs = [names.get(name, name) for name in parsed.inputs]
    weights = [names.get(name, name) for name in parsed.weights]
    params = ", ".join(["_m", diff.GRAD, *inputs, *weights])
    doc = (
        f'    """The bounds on the rounding errors of the gradients of {clip(parsed.source, 40)}, in units of\n'
        '    _m.u: one per input (per element) and one per weight (per column, summed over the rows). One\n'
        '    line per step of each derivative (kernelgen writes them from the expression;\n'
        '    testing/error_model.py of the package says what each term means)."""'
    )
    length = len(backward.stages)
    for index, stage in enumerate(backward.stages):
        value, error = emitter.visit(_row_length_as_ref(stage.arg, length))
        emitter.lines.append(
            f"    _r{index}, _q{index} = _m.{_ROW_METHODS[stage.func]}({value}, {error})"
            f"  # {clip(stage.canonical, _COMMENT_LIMIT)}"
        )
    results = []
    for name in parsed.inputs:
        _, error = emitter.visit(_row_length_as_ref(backward.input_plan.get(name, Num(0.0)), length))
        results.append(error if error is not None else "0.0")
    for name in parsed.weights:
        value, error = emitter.visit(_row_length_as_ref(backward.weight_plan.get(name, Num(0.0)), length))
        results.append(f"_m.sum_of_column({value}, {error}, {inputs[0]})[1]")
    lines = [f"def {function}({params}):", doc]
    if any(isinstance(node, diff.RowLen) for tree in (*backward.input_plan.values(), *backward.weight_plan.values(),
                                                         *(stage.arg for stage in backward.stages))
           for node in diff.walk(tree)):
        lines.append(f"    _r{length}, _q{length} = {inputs[0]}.new_full(({inputs[0]}.shape[0], 1), {inputs[0]}.shape[-1]), 0.0")
    lines.extend(emitter.lines)
    lines.append(f"    return ({', '.join(results)}{',' if len(results) == 1 else ''})")
    return "\n".join(lines) + "\n"


def _row_length_as_ref(tree: Node, index: int) -> Node:
    """``tree`` with the row length (:class:`kernelgen.diff.RowLen`) read as per-row value ``index``."""
    return diff.transform(tree, lambda node: RowRef(index) if isinstance(node, diff.RowLen) else None)
