"""The expression parser: what it accepts, what it emits, and what it refuses."""

from __future__ import annotations

import math
import random
import re
import time
from pathlib import Path

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
        ("-x**2", "x", "-opmath::square(x)", "-x ** 2.0"),
        ("(-x)**2", "x", "opmath::square(-x)", "(-x) ** 2.0"),
        ("x**0.5 + x**-1.5", "x", "opmath::sqrt(x) + opmath::pow(x, acc_t(-1.5))", "x ** 0.5 + x ** (-1.5)"),
        ("+x", "x", "x", "x"),
        ("x / 2", "x", "x / acc_t(2.0)", "x / 2.0"),
        ("min(x, 0) + max(2.5, x)", "x", "opmath::min(x, acc_t(0.0)) + opmath::max(acc_t(2.5), x)",
         "torch.clamp(x, max=0.0) + torch.clamp(x, min=2.5)"),
        # every number is a float literal, folded in float64: never a C++ integer literal
        ("x*(9007199254740992*9007199254740992)", "x", "x * acc_t(8.112963841460668e+31)",
         "x * 8.112963841460668e+31"),
        ("0x10 * x + 1_000", "x", "acc_t(16.0) * x + acc_t(1000.0)", "16.0 * x + 1000.0"),
        ("x * (1 / 3)", "x", "x * acc_t(0.3333333333333333)", "x * 0.3333333333333333"),
        # -(-x), never --x (a decrement in C++)
        ("--x", "x", "-(-x)", "-(-x)"),
        ("-(-x * 2)", "x", "-(-x * acc_t(2.0))", "-(-x * 2.0)"),
        # ** is right-associative: the inner power keeps its parentheses
        ("(x**2)**0.5", "x", "opmath::sqrt(opmath::square(x))", "(x ** 2.0) ** 0.5"),
        ("x**2**0.5", "x", f"opmath::pow(x, acc_t({2**0.5!r}))", f"x ** {2**0.5!r}"),
        ("pow(x, y)", "xy", "opmath::pow(x, y)", "torch.pow(x, y)"),
        # whole exponents are multiplications (opmath::ipow), not powf
        ("x ** 3 + pow(y, -2)", "xy", "opmath::ipow<3>(x) + opmath::ipow<-2>(y)", "x ** 3.0 + torch.pow(y, -2.0)"),
        ("x ** 16 + x ** 17 + x ** 0", "x", "opmath::ipow<16>(x) + opmath::pow(x, acc_t(17.0)) + opmath::ipow<0>(x)",
         "x ** 16.0 + x ** 17.0 + x ** 0.0"),
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


# ---- hardening: the text that reaches generated files is ours, never the user's -------------

SAFE_CANONICAL = re.compile(r"[A-Za-z0-9_ .+\-*/(),e]*")


@pytest.mark.parametrize(
    "source, column",
    [
        ("a*b+c # */ evil", 7),
        ("a*b+c#", 6),
        ("'''#' + a*b*c", 4),  # the quote never gets a chance to hide it: '#' is refused first
    ],
)
def test_comments_are_refused_with_their_column(source, column):
    with pytest.raises(ExprError) as info:
        parse(source, ("a", "b", "c"))
    message = str(info.value)
    assert "comments are not allowed in --expr" in message and f"column {column}" in message
    assert info.value.param == "expr" and "\n" not in message


@pytest.mark.parametrize("char", ["\x00", "\udcff", "é", "９", "\u2028", "\x0b", "\x0c", "\x85", "\ufeff", "\x7f", "\x1b"])
def test_non_printable_or_non_ascii_characters_are_refused(char):
    with pytest.raises(ExprError) as info:
        parse(f"a*b{char}+c", ("a", "b", "c"))
    message = str(info.value)
    assert f"U+{ord(char):04X} at column 4" in message and "printable ASCII" in message
    message.encode("ascii")  # printable on any terminal, even for a lone surrogate from a bad argv byte
    assert "\n" not in message


def test_tabs_count_as_spaces_and_surrounding_newlines_are_stripped():
    parsed = parse("\ta\t*\tb + c\n", ("a", "b", "c"))
    assert parsed.canonical == "a * b + c"


@pytest.mark.parametrize(
    "source, canonical",
    [
        ("a*b+c", "a * b + c"),
        ("a   *(b)+  (c)", "a * b + c"),
        ("+a * b - -c", "a * b - -c"),
        ("a * sigmoid(1.702*b) / c", "a * sigmoid(1.702 * b) / c"),
        ("min(a, 0) * max(b, c) ** 2", "min(a, 0.0) * max(b, c) ** 2.0"),
        ("a ** -1 * b * c", "a ** (-1.0) * b * c"),
        ("(a - b) - c + (a - (b - c))", "a - b - c + (a - (b - c))"),
        ("a * 1e-7 + b * 1.2e-38 + c * 1e16", "a * 1e-07 + b * 1.2e-38 + c * 1e+16"),
        ("exp(1) * a * b * c", f"{2.718281828459045!r} * a * b * c"),
    ],
)
def test_source_is_the_canonical_text_printed_from_the_tree(source, canonical):
    parsed = parse(source, ("a", "b", "c"))
    assert parsed.canonical == canonical
    assert parsed.source == parsed.canonical
    assert SAFE_CANONICAL.fullmatch(parsed.canonical)
    again = parse(parsed.canonical, ("a", "b", "c"))
    assert again.tree == parsed.tree and again.canonical == canonical


def test_numbers_are_the_same_float_literal_in_cpp_and_torch():
    parsed = parse("x * 3 + 0.1 * x ** 3 - min(x, 2) / 7 + 9007199254740992 * x", ("x",))
    cpp_numbers = re.findall(r"acc_t\(([^()]*)\)", parsed.cpp())
    torch_numbers = re.findall(r"(?<![\w.])\d[\d.e+-]*", parsed.torch())
    assert cpp_numbers == ["3.0", "0.1", "2.0", "7.0", "9007199254740992.0"]  # x ** 3 is ipow<3>(x)
    assert "opmath::ipow<3>(x)" in parsed.cpp()
    assert sorted(torch_numbers) == sorted(["3.0", "0.1", "3.0", "2.0", "7.0", "9007199254740992.0"])
    for text in cpp_numbers:
        assert "." in text or "e" in text  # a float literal in C++, never an int
        assert repr(float(text)) == text  # and it reads back as exactly the value


def _balanced_sum(terms: list[str]) -> str:
    if len(terms) == 1:
        return terms[0]
    half = len(terms) // 2
    return f"({_balanced_sum(terms[:half])})+({_balanced_sum(terms[half:])})"


@pytest.mark.parametrize(
    "source, message",
    [
        ("x * (" + "*".join(["9007199254740992"] * 40) + ")", "is not a finite number"),
        ("x * 10 ** 400", "is not a finite number"),
        ("x * (2 ** 1023 * 2)", "is not a finite number"),
        ("x * 9007199254740993", "larger than 2**53"),
        ("x * 1e309", "non-finite literal"),
        ("x * exp(1000)", "is not a finite number"),
        ("x * sigmoid(-1000)", "is not a finite number"),
        (_balanced_sum(["x*(1/3)"] * 128), "once written out"),
    ],
)
def test_constant_folding_is_float64_and_never_overflows(source, message):
    with pytest.raises(ExprError) as info:
        parse(source, ("x",))
    assert message in str(info.value) and "\n" not in str(info.value)


def test_a_huge_product_of_literals_folds_to_a_finite_float():
    parsed = parse("x * (9007199254740992 * 9007199254740992)", ("x",))
    assert parsed.canonical == f"x * {float(2**106)!r}"
    assert parsed.cpp() == f"x * acc_t({float(2**106)!r})"


@pytest.mark.parametrize(
    "source, message",
    [
        # 0 in float32 (1e-320 is a float64 subnormal; 1e-400 is 0 once read): x / 1e-320 is x / 0 there
        ("x / 1e-320", "the number '1e-320' at column 5 is out of range"),
        ("x * 1e-400", "the number '1e-400' at column 5 is out of range"),
        ("x * 0.5e-400", "the number '0.5e-400' at column 5 is out of range"),
        ("x * 1e-39", "the number '1e-39' at column 5 is out of range"),  # a float32 subnormal
        ("x / 1e39", "the number '1e39' at column 5 is out of range"),  # infinite in float32
        ("x * 3e38", "the number '3e38' at column 5 is out of range"),  # its reciprocal a float32 subnormal
        ("x * -1e-50", "the number '1e-50' at column 6 is out of range"),
        ("x ** 1e-50", "the number '1e-50' at column 6 is out of range"),
        ("x / (1e-30 * 1e-30)", "a constant sub-expression is 1.0000000000000001e-60, out of range"),
        ("x ** (2.0 ** 200)", "a constant sub-expression is 1.6069380442589903e+60, out of range"),
    ],
)
def test_a_number_that_float32_or_a_derivative_cannot_hold_is_refused(source, message):
    # The op computes in float32 for float32, float16 and bfloat16, where such a number, or the reciprocal a
    # derivative of a quotient by it takes, is 0, subnormal or infinite: the op would not compute what is written.
    with pytest.raises(ExprError) as info:
        parse(source, ("x",))
    assert message in str(info.value) and "1.2e-38 to 8.5e37" in str(info.value), str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("source", ["x * 0.0", "x * 0e-500", "x * 2e-38", "x * 8e37", "x / 1.5e-38",
                                    "x * (1e-30 * 1e-30 * 1e30)", "x * 1e-6 + 1e-12"])
def test_numbers_at_the_ends_of_the_range_and_zero_are_accepted(source):
    parse(source, ("x",))


def _random_expression(rng: random.Random, names: tuple[str, ...], depth: int = 0) -> str:
    """A random expression from the grammar, often valid, sometimes not."""
    choice = rng.randrange(9 if depth < 5 else 3)
    if choice == 0:
        return rng.choice(names)
    if choice == 1:
        return rng.choice(["0", "1", "2", "2.5", "1e-7", "1e308", "9007199254740992", "0x1F", "1_0", ".5", "3."])
    if choice == 2:
        return rng.choice(names) + rng.choice(["", " "])
    if choice in (3, 4):
        op = rng.choice(["+", "-", "*", "/", "**", " ** ", "//", "%", "@"])
        return _random_expression(rng, names, depth + 1) + op + _random_expression(rng, names, depth + 1)
    if choice == 5:
        return rng.choice(["-", "+", "~", "not "]) + _random_expression(rng, names, depth + 1)
    if choice == 6:
        return "(" + _random_expression(rng, names, depth + 1) + ")"
    func = rng.choice([*sorted(FUNCTIONS), "foo", "__import__", "eval"])
    args = [_random_expression(rng, names, depth + 1) for _ in range(rng.choice([1, 1, 2, 3]))]
    return f"{func}({', '.join(args)})"


INJECTIONS = [
    "'''", '"""', "'", '"', "\\N{DIGIT ONE}", "\\x00", "\\", "*/", "/*", "//", "{{ x }}", "{% raw %}", "{#", "#",
    "\n", "\r", "\r\n", "\u2028", "\u2029", "\x0b", "\x0c", "\x85", "\x00", "\t", "\udcff", "é", "；",
    '"); system("id"); ("', "x.__class__", "__import__('os')", "f'{x}'", "lambda: x", "[x]", "x if x else y",
    "1e999", "0b101", "1j", "True", "None", "...", "$", "`", "?", ";", ":", "=", "==", "@", "!",
]


def test_fuzz_parse_raises_only_expr_error_and_canonical_text_is_safe():
    rng = random.Random(20260523)
    pool = [chr(c) for c in range(32, 127)] + ["\x00", "\n", "\r", "\t", "\x0b", "\x0c", "\x85", "\u2028", "\udcff", "ÿ", "\ufeff"]
    accepted = tried = 0
    deadline = time.monotonic() + 3.0
    while time.monotonic() < deadline and tried < 20000:
        names = rng.choice([("x",), ("x", "y")])
        kind = tried % 4
        if kind == 0:
            text = "".join(rng.choice(pool) for _ in range(rng.randrange(1, 40)))
        elif kind == 1:
            text = _random_expression(rng, names)
        elif kind == 2:
            base = _random_expression(rng, names)
            cut = rng.randrange(len(base) + 1)
            text = base[:cut] + rng.choice(INJECTIONS) + base[cut:]
        else:
            text = " ".join(rng.choice([*INJECTIONS, *names, "+", "*", "(", ")", "exp(", "1.5"]) for _ in range(rng.randrange(1, 8)))
        tried += 1
        try:
            parsed = parse(text, names)
        except ExprError as err:
            assert "\n" not in str(err) and "\r" not in str(err), repr(text)
            str(err).encode("ascii", "backslashreplace")
            continue
        except Exception as err:  # anything else is a bug
            raise AssertionError(f"parse({text!r}) raised {type(err).__name__}: {err}") from err
        accepted += 1
        canonical = parsed.canonical
        assert parsed.source == canonical
        assert SAFE_CANONICAL.fullmatch(canonical), (text, canonical)
        again = parse(canonical, names)
        assert again.tree == parsed.tree and again.canonical == canonical, (text, canonical)
        # < > only as opmath::ipow<N>, N a whole number we printed
        assert re.fullmatch(r"[A-Za-z0-9_ .+\-*/(),:]*", re.sub(r"ipow<-?\d+>", "ipow", parsed.cpp())), parsed.cpp()
        assert re.fullmatch(r"[A-Za-z0-9_ .+\-*/(),=]*", parsed.torch()), parsed.torch()
    assert tried >= 1000 and accepted >= 100, (tried, accepted)


def _host_compiler_with_opmath(tmp_path: Path) -> str:
    """The host C++ compiler (or a skip), with the package's opmath.h rendered into tmp_path."""
    import shutil

    import jinja2

    compiler = shutil.which("g++") or shutil.which("c++")
    if compiler is None:
        pytest.skip("no C++ compiler on this machine")
    root = Path(__file__).resolve().parent.parent / "templates" / "package" / "{{package}}" / "csrc"
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                             keep_trailing_newline=True)
    (tmp_path / "opmath.h").write_text(env.from_string((root / "opmath.h.jinja").read_text()).render(
        abi="full", op_name="t", ops=[]))
    return compiler


def test_whole_powers_compile_to_multiplications_that_match_pow(tmp_path):
    """opmath::ipow (what x ** 3 emits) through the host compiler, against Python's pow."""
    import subprocess

    compiler = _host_compiler_with_opmath(tmp_path)
    exponents = [-3, -2, -1, 0, 1, 3, 4, 5, 7, 16]
    parsed = [parse(f"x ** {n}", ("x",)).cpp("double") for n in exponents]
    body = "\n".join(f'  std::printf("%.17g\\n", {text});' for text in parsed)
    (tmp_path / "main.cpp").write_text(
        f'#include <cstdio>\n#include "opmath.h"\nusing namespace t;\nint main() {{\n  double x = 1.37;\n{body}\n}}\n')
    subprocess.run([compiler, "-std=c++17", "-O2", "-o", str(tmp_path / "main"), str(tmp_path / "main.cpp")], check=True)
    values = [float(v) for v in subprocess.run([str(tmp_path / "main")], check=True, capture_output=True,
                                               text=True).stdout.split()]
    assert all("ipow" in text for text in parsed)
    for n, value in zip(exponents, values, strict=True):
        assert value == pytest.approx(1.37 ** n, rel=1e-14), n


def test_triton_powers():
    x = parse("x ** 3 + x ** -1 + x ** 2.5", ("x",)).triton()
    assert "(x) * (x) * (x)" in x and "1.0 / (x)" in x and "libdevice.pow(x, tl.full((), 2.5, ACC))" in x


class _ScalarTriton:
    """Just enough of triton.language and libdevice to evaluate an emitted Triton expression on floats."""

    class PropagateNan:
        ALL = None

    @staticmethod
    def full(shape, value, dtype):
        return value

    exp, log, erf, abs = math.exp, math.log, math.erf, abs
    rsqrt = staticmethod(lambda x: 1.0 / math.sqrt(x))
    sqrt_rn = staticmethod(math.sqrt)
    minimum = staticmethod(lambda a, b, propagate_nan=None: min(a, b))
    maximum = staticmethod(lambda a, b, propagate_nan=None: max(a, b))
    tanh, sin, cos, pow = math.tanh, math.sin, math.cos, math.pow


@pytest.mark.parametrize("text", [
    "a / y ** 2", "a / y ** 3", "a / y ** 4", "a / y ** -1", "a / pow(y, 2)", "a * y ** 2", "y ** 2 / a",
    "-y ** 2 + a", "a - -y ** 2", "a - y ** 2", "a - y ** -1", "(a / y) ** 2", "a / (y ** 2) ** 2", "a / y ** 2 * y",
    "a / y ** 2.5", "a / y ** 0.5", "2 / (a + y) ** 2 - y ** -1 / a",
])
def test_triton_text_computes_what_the_expression_says(text):
    """The Triton emitter prints x ** 2..4 as a product and x ** -1 as a division: where such a power
    is divided by, or subtracted, it keeps its parentheses (a / y ** 2 is a / (y * y), not a / y * y)."""
    parsed = parse(text, ("a", "y"))
    values = {"a": 1.7, "y": 0.6}
    names = {"tl": _ScalarTriton, "libdevice": _ScalarTriton, "ACC": None, **values}
    got = eval(parsed.triton(), names)  # our own emitted text, over floats
    want = eval(text.replace("pow(", "math.pow("), {"math": math, **values})
    assert got == pytest.approx(want, rel=1e-12), parsed.triton()


def test_math_cost_counts_what_the_launch_rule_weighs():
    """ParsedExpr.math_cost (the elementwise kernel's kMathCost): calls by MATH_COST, a division 10,
    +-* and negation 1, whole powers as their multiplications, other powers as pow."""
    from kernelgen.expr import MATH_COST

    assert parse("a * b + c", ("a", "b", "c")).math_cost == 2
    assert parse("x * sigmoid(1.702 * x)", ("x",)).math_cost == 2 + MATH_COST["sigmoid"]
    assert parse("a / b", ("a", "b")).math_cost == 10
    assert parse("-x", ("x",)).math_cost == 1
    assert parse("x ** 2", ("x",)).math_cost == 1  # one multiplication
    assert parse("x ** 3", ("x",)).math_cost == 2
    assert parse("x ** -1", ("x",)).math_cost == 1 + 10  # a reciprocal
    assert parse("x ** 0.5", ("x",)).math_cost == MATH_COST["sqrt"]
    assert parse("x ** 2.5", ("x",)).math_cost == MATH_COST["pow"]
    assert parse("sin(cos(x))", ("x",)).math_cost == MATH_COST["sin"] + MATH_COST["cos"]


def test_distinct_math_cost_counts_a_repeated_subexpression_once_and_sorts_epilogues():
    """distinct_math_cost (kernelgen.cost.heavy_epilogue's measure) counts each distinct subexpression once,
    as the compiler computes it once; heavy_epilogue keeps common epilogues light (fused) and sends several
    transcendental calls on acc to a pass of their own."""
    from kernelgen.cost import HEAVY_EPILOGUE_COST, distinct_math_cost, heavy_epilogue
    from kernelgen.expr import MATH_COST

    silu = parse("(acc + bias) * sigmoid(acc + bias)", ("acc", "bias")).tree
    assert distinct_math_cost(silu) == 2 + MATH_COST["sigmoid"]  # acc + bias once, the product, the call
    assert parse("(acc + bias) * sigmoid(acc + bias)", ("acc", "bias")).math_cost == 3 + MATH_COST["sigmoid"]
    light = ["acc + bias", "max(acc + bias, 0) ** 2", "(acc + bias) * sigmoid(acc + bias)",
             "0.5 * (acc + bias) * (1 + erf((acc + bias) * 0.7071067811865476))",
             "0.5 * acc * (1 + tanh(0.7978845608028654 * (acc + 0.044715 * acc ** 3)))"]
    heavy = ["tanh(cos(acc * 0.05))", "pow(abs(acc) + 1, bias * 0.25)", "sigmoid(tanh(sin(acc))) + bias"]
    for text in light + heavy:
        tree = parse(text, ("acc", "bias") if "bias" in text else ("acc",)).tree
        assert heavy_epilogue(tree) == (text in heavy), (text, distinct_math_cost(tree), HEAVY_EPILOGUE_COST)


def test_fast_float_keeps_its_type_through_every_function_and_matches_float_on_the_host(tmp_path):
    """opmath::fast_float (the float16/bfloat16 op-math type of the elementwise CUDA kernel): every
    emitted construct, with acc_t = fast_float, compiles, stays a fast_float (so the fast division and
    exp follow the whole expression), and on the host gives the float result bit for bit."""
    import subprocess

    from kernelgen.expr import FUNCTIONS

    compiler = _host_compiler_with_opmath(tmp_path)
    unary = sorted(name for name in FUNCTIONS if name not in ("min", "max", "pow"))
    texts = [f"{name}(abs(x) + 0.5) / (y - 3)" for name in unary] + [
        "min(x, y) * max(x, -y) - pow(abs(x) + 1, y)", "x ** 3 - 2 / y + x ** -2 + x ** 2.5 * 1e-3",
        "-(x * y) / 7 + 1 / (1 + exp(-x))", "sigmoid(x) * sigmoid(-y)", "(x + 1) ** 0.5 + y ** 2"]
    parsed = [parse(text, ("x", "y")) for text in texts]
    checks = []
    for p in parsed:
        fast, plain = p.cpp("opmath::fast_float"), p.cpp("float")
        checks.append(f"  static_assert(std::is_same<decltype({fast}), opmath::fast_float>::value, \"{p.canonical}\");\n"
                      f"  {{ const opmath::fast_float f = {fast};\n"
                      f"    const float g = [](float x, float y) {{ return {plain}; }}(xv, yv);\n"
                      f"    std::printf(\"%d\\n\", std::memcmp(&f.v, &g, sizeof g) == 0 || (g != g && f.v != f.v)); }}")
    calls = [f"opmath::{name}(x)" for name in unary] + ["opmath::pow(x, y)", "opmath::min(x, y)", "opmath::max(x, y)",
                                                     "opmath::ipow<-3>(x)", "opmath::square(x)", "-x", "2 / x"]
    checks += [f"  static_assert(std::is_same<decltype({call}), opmath::fast_float>::value, \"{call}\");" for call in calls]
    (tmp_path / "main.cpp").write_text(
        "#include <cstdio>\n#include <cstring>\n#include <initializer_list>\n#include <type_traits>\n#include \"opmath.h\"\nusing namespace t;\n"
        "int main() {\n  for (float xv : {-2.5f, -0.3f, 0.0f, 0.7f, 4.0f}) {\n"
        "  const float yv = xv * 0.5f + 0.25f;\n  const opmath::fast_float x = xv, y = yv;\n"
        + "\n".join(checks) + "\n  }\n}\n")
    done = subprocess.run([compiler, "-std=c++17", "-O1", "-o", str(tmp_path / "main"), str(tmp_path / "main.cpp")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    same = subprocess.run([str(tmp_path / "main")], check=True, capture_output=True, text=True).stdout.split()
    assert len(same) == 5 * len(texts) and set(same) == {"1"}, same


def test_a_near_miss_is_suggested_and_the_source_named():
    with pytest.raises(ExprError) as info:
        parse("x * sigmod(y)", ("x", "y"))
    assert str(info.value) == "unknown function 'sigmod' at column 5 in --expr; did you mean 'sigmoid'?"
    assert info.value.param == "expr"
    with pytest.raises(ExprError, match=r"^unknown name 'yy' at column 5 in --expr; did you mean 'y'\? \(the inputs are: x, y\)$"):
        parse("x + yy", ("x", "y"))
    # sum outside a rowwise op is a row reduction to explain, not a typo of sin.
    with pytest.raises(ExprError, match=r"unknown function 'sum'.*row reduction") as info:
        parse("x / sum(x)", ("x",))
    assert "did you mean" not in str(info.value)
