"""The expression parser: what it accepts, what it emits, and what it refuses."""

from __future__ import annotations

import math

import pytest

from kernelgen.errors import ExprError
from kernelgen.expr import FUNCTIONS, parse


@pytest.mark.parametrize(
    "source, inputs, cpp, torch_expr",
    [
        ("a*b+c", "abc", "a * b + c", "a * b + c"),
        ("x * sigmoid(1.702 * x)", "x", "x * opmath::sigmoid(acc_t(1.702) * x)", "x * torch.sigmoid(1.702 * x)"),
        ("a - (b - c)", "abc", "a - (b - c)", "a - (b - c)"),
        ("a / (b * c)", "abc", "a / (b * c)", "a / (b * c)"),
        ("(a + b) * c", "abc", "(a + b) * c", "(a + b) * c"),
        ("-x**2", "x", "-opmath::square(x)", "-x ** 2"),
        ("(-x)**2", "x", "opmath::square(-x)", "(-x) ** 2"),
        ("x**0.5 + x**-1.5", "x", "opmath::sqrt(x) + opmath::pow(x, acc_t(-1.5))", "x ** 0.5 + x ** (-1.5)"),
        ("+x", "x", "x", "x"),
        ("x / 2", "x", "x / acc_t(2)", "x / 2"),
        ("min(x, 0) + max(2.5, x)", "x", "opmath::min(x, acc_t(0)) + opmath::max(acc_t(2.5), x)",
         "torch.clamp(x, max=0) + torch.clamp(x, min=2.5)"),
        ("pow(x, y)", "xy", "opmath::pow(x, y)", "torch.pow(x, y)"),
        ("exp(1.0) * x", "x", f"acc_t({math.e!r}) * x", f"{math.e!r} * x"),
    ],
)
def test_emits_cpp_and_torch(source, inputs, cpp, torch_expr):
    parsed = parse(source, tuple(inputs))
    assert parsed.cpp() == cpp
    assert parsed.torch() == torch_expr


def test_every_documented_function_is_accepted_and_evaluates_like_torch():
    torch = pytest.importorskip("torch")
    x = torch.rand(50, dtype=torch.float64) + 0.5
    y = torch.rand(50, dtype=torch.float64) + 0.5
    for name, func in FUNCTIONS.items():
        source = f"{name}(x)" if func.arity == 1 else f"{name}(x, y)"
        parsed = parse(source, ("x", "y") if func.arity == 2 else ("x",))
        value = eval(parsed.torch(), {"torch": torch, "x": x, "y": y})  # our own emitted code
        fold = torch.tensor([func.fold(*(float(v) for v in vals)) for vals in zip(x, y, strict=True)][:50] if func.arity == 2
                            else [func.fold(float(v)) for v in x], dtype=torch.float64)
        torch.testing.assert_close(value, fold, rtol=1e-12, atol=1e-12, msg=name)


def test_the_whitelist_has_at_least_the_documented_functions():
    assert {"exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "abs", "min", "max", "pow", "sin", "cos", "erf"} <= set(FUNCTIONS)


@pytest.mark.parametrize(
    "source, message",
    [
        ("a.b", "unsupported attribute access 'a.b' at column 1"),
        ("__import__('os').system('x')", "unsupported call target"),
        ("__import__('os')", "unknown function '__import__'"),
        ("a[0]", "unsupported subscript 'a[0]'"),
        ("foo(a)", "unknown function 'foo'"),
        ("a if b else c", "unsupported conditional expression"),
        ("a // b", "unsupported operator '//'"),
        ("a % b", "unsupported operator '%'"),
        ("a @ b", "unsupported operator '@'"),
        ("a ** b", "'**' needs a numeric exponent, got 'b'"),
        ("a < b", "unsupported comparison"),
        ("a and b", "unsupported boolean operator"),
        ("lambda: a", "unsupported lambda"),
        ("'a'", "unsupported literal"),
        ("True * a", "unsupported literal 'True'"),
        ("1e400 * a", "non-finite literal"),
        ("1j * a", "unsupported literal"),
        ("d * a", "unknown name 'd' at column 1"),
        ("exp * a", "function 'exp' at column 1 must be called"),
        ("exp(a, b)", "exp() takes 1 argument, got 2"),
        ("exp(x=a)", "unsupported keyword argument"),
        ("exp(*a)", "unsupported star argument"),
        ("log(-1.0) * a", "constant sub-expression 'log(-1.0)'"),
        ("a / 0 * b", "division by zero in 'a / 0'"),
        ("1 + 2", "uses no input"),
        ("a * b", "input 'c' is declared in --inputs but not used"),
        ("a; import os", "not a valid expression"),
        ("a * b + c\n", None),  # trailing newline is stripped: fine
        ("a +\n b * c", "single line"),
        ("", "--expr is empty"),
        ("a" + "+a" * 1500 + "+b*c", "characters long"),
        ("(" * 70 + "a*b+c" + ")" * 70, None),
        ("-" * 100 + "a*b+c", "nested more than"),
        ("a.__class__", "unsupported attribute access"),
        ("[a, b, c]", "unsupported list"),
        ("f'{a}'", "unsupported f-string"),
        ("(a, b)", "unsupported tuple"),
        ("a; b", "not a valid expression"),
    ],
)
def test_rejects_with_a_message_naming_the_token(source, message):
    if message is None:
        parse(source, ("a", "b", "c"))
        return
    with pytest.raises(ExprError) as info:
        parse(source, ("a", "b", "c"))
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_emitted_code_contains_only_whitelisted_tokens():
    # Whatever the user typed, the C++ is built from our own spellings: no user text passes through.
    parsed = parse("x * sigmoid(1.702 * x) + exp(-abs(y)) / (1 + y ** 2)", ("x", "y"))
    import re

    tokens = set(re.findall(r"[A-Za-z_][A-Za-z0-9_:]*", parsed.cpp()))
    assert tokens <= {"x", "y", "acc_t", "opmath::sigmoid", "opmath::exp", "opmath::abs", "opmath::square"}


@pytest.mark.parametrize("source, positive", [("log(x)", True), ("x / y", True), ("y / 2", False),
                                              ("x ** 2", False), ("x ** 0.5", True), ("sqrt(x) * y", True),
                                              ("x * y", False)])
def test_positive_domain(source, positive):
    assert parse(source, ("x", "y") if "y" in source and "x" in source else tuple(n for n in "xy" if n in source)).positive_domain is positive


def test_fused_torch_baseline():
    assert parse("a*b+c", ("a", "b", "c")).fused_torch() == "torch.addcmul(c, a, b)"
    assert parse("c + a*b", ("a", "b", "c")).fused_torch() == "torch.addcmul(c, a, b)"
    assert parse("a*b-c", ("a", "b", "c")).fused_torch() is None
