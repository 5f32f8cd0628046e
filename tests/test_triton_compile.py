"""Every Triton kernel kernelgen generates compiles for sm_90, on a machine without a GPU.

Triton compiles a kernel on its first launch, so a template error in a Triton op (a float32-only
function called in float64, a name a kernel does not define) would otherwise surface only on the GPU.
triton.compile with a GPUTarget needs no GPU: it runs the front end, the optimizer and ptxas. Each
kernel of the examples' Triton ops, and of ops written to reach the rarer templates (sqrt, a max mask in
the backward, weights inside a reduction, a weight that only the output reads), generated into one package,
is compiled for
float32, bfloat16 and float64 inputs.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from kernelgen.cli import main

triton = pytest.importorskip("triton", reason="compiling the Triton kernels needs triton (installed with torch on Linux)")
tl = pytest.importorskip("triton.language")
try:
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
except ImportError:  # pragma: no cover - a triton without the ahead-of-time compile API
    pytest.skip("this triton has no triton.compile(ASTSource, target=GPUTarget)", allow_module_level=True)

# (elements per program for the row kernels, the long kernels, the weights' tile and the column sum)
CONSTANTS = {"BLOCK": 1024, "BLOCK_R": 64, "BLOCK_C": 64, "BLOCK_P": 128}
DTYPES = {"float32": ("fp32", tl.float32), "bfloat16": ("bf16", tl.float32), "float64": ("fp64", tl.float64)}
# The examples' Triton ops (examples/regenerate.sh), generated again here: the examples' package imports only
# once built, and these formulas are what the golden test holds the examples to.
EXAMPLE_OPS = [
    ("gelu_tl", ["--inputs", "x", "--expr", "x * sigmoid(1.702 * x)"]),
    ("muladd_tl", ["--inputs", "a,b,c", "--expr", "a*b+c"]),
    ("softmax_tl", ["--kind", "rowwise", "--inputs", "x", "--expr", "exp(x - max(x)) / sum(exp(x - max(x)))"]),
    ("layernorm_tl", ["--kind", "rowwise", "--inputs", "x", "--weights", "w,b",
                      "--expr", "(x - mean(x)) * rsqrt(mean((x - mean(x)) ** 2) + 1e-5) * w + b"]),
]
RARE_OPS = [
    ("ew_sqrt", ["--inputs", "x,y", "--expr", "sqrt(x * x + 1.0) * tanh(y) + max(x, y)"]),
    ("rw_mask", ["--kind", "rowwise", "--inputs", "x,y", "--weights", "w", "--expr", "x / max(abs(x * y - 0.5 * x)) * w + y"]),
    ("rw_inside", ["--kind", "rowwise", "--inputs", "x", "--weights", "w,b",
                   "--expr", "x * rsqrt(mean(x * x * w) + 1e-6) + sqrt(abs(x) + 1.0) * b"]),
]


def _signature(kernel, dtype: str, hints: dict[str, str]) -> tuple[dict[str, str], dict[str, object]]:
    element, acc = DTYPES[dtype]
    opmath = "fp64" if dtype == "float64" else "fp32"
    signature: dict[str, str] = {}
    constants: dict[str, object] = {}
    for name in kernel.arg_names:
        if name == "ACC":
            constants[name] = acc
        elif name in CONSTANTS:
            constants[name] = CONSTANTS[name]
        elif name in hints:
            constants[name] = hints[name]
        if name in constants:
            signature[name] = "constexpr"
        elif name in ("_stats_ptr", "_known_ptr", "partial_ptr") or (name.startswith("_p") and name.endswith("_ptr")):
            signature[name] = "*" + opmath  # the backward's per-row values and partial sums: op-math precision
        elif name.endswith("_ptr"):
            signature[name] = "*" + element
        else:
            signature[name] = "i32"
    return signature, constants


def _kernels(package_dir: Path, package: str) -> list[tuple[str, object, object]]:
    sys.path.insert(0, str(package_dir))
    try:
        ops = importlib.import_module(f"{package}.ops")
        modules = [importlib.import_module(f"{package}.ops.{m.name}") for m in pkgutil.iter_modules(ops.__path__)]
        if (package_dir / package / "_triton_rowwise.py").exists():
            modules.append(importlib.import_module(f"{package}._triton_rowwise"))
    finally:
        sys.path.remove(str(package_dir))
    found = []
    for module in modules:
        for name, value in vars(module).items():
            # kernels only: the functions they call (_max_nan, a row's body) compile inlined in them
            if isinstance(value, triton.runtime.jit.JITFunction) and value.__module__ == module.__name__ \
                    and name.endswith("_kernel"):
                found.append((f"{module.__name__}.{name}", value, module))
    return found


def _compile_all(kernels) -> list[str]:
    failures = []
    for label, kernel, module in kernels:
        for dtype in DTYPES:
            # The long kernels' L2 eviction hints (KEEP, STREAM), as the op's launch passes them for dtype.
            hints = module._long_forward(getattr(torch, dtype))[1] if hasattr(module, "_long_forward") else {}
            signature, constants = _signature(kernel, dtype, hints)
            # the backward's kernel of one program a row: one row a program (STAGES=1), and pipelined over its rows
            # (STAGES=2), as the launch runs it where one program fills an SM
            # and the backward's long kernel loading the per-row values the forward saved (KNOWN) and not
            variants = [{"STAGES": 1}, {"STAGES": 2}] if "STAGES" in kernel.arg_names else [{}]
            if "KNOWN" in kernel.arg_names:
                variants = [{**v, "KNOWN": on} for v in variants for on in (False, True)]
            for variant in variants:
                for name, value in variant.items():
                    signature[name], constants[name] = "constexpr", value
                try:
                    triton.compile(ASTSource(kernel, signature=signature, constexprs=constants),
                                   target=GPUTarget("cuda", 90, 32), options={"num_warps": 4})
                except Exception as error:  # every failure is reported, with its kernel and dtype
                    shown = "".join(f", {name}={value}" for name, value in variant.items())
                    failures.append(f"{label} ({dtype}{shown}): {type(error).__name__}: {str(error)[-600:]}")
    return failures


def _unload(package: str) -> None:
    for name in [m for m in sys.modules if m == package or m.startswith(package + ".")]:
        del sys.modules[name]


def test_every_triton_template_compiles_for_sm90(tmp_path):
    runner = CliRunner()
    first, *rest = [*EXAMPLE_OPS, *RARE_OPS]
    result = runner.invoke(main, ["new", "tcomp", "--op", first[0], "--backend", "triton", *first[1], "--defaults",
                                  "--output", str(tmp_path)])
    assert result.exit_code == 0, result.output
    for name, options in rest:
        result = runner.invoke(main, ["add", name, "--backend", "triton", *options, "--defaults",
                                      "--package", str(tmp_path / "tcomp")])
        assert result.exit_code == 0, result.output
    kernels = _kernels(tmp_path / "tcomp", "tcomp")
    names = [label for label, _, _ in kernels]
    for part in ("_kernel", "_backward_kernel", "_backward_rows_kernel", "_backward_long_kernel", "_weight_grad_kernel",
                 "_column_sum_kernel"):
        assert any(n.endswith(part) for n in names), (part, names)
    try:
        assert _compile_all(kernels) == []
    finally:
        _unload("tcomp")
