"""Any name a user reaches for works: inputs named q, k, v, mask, eps, out, torch, ... and ops named
like a C library function. The generated code maps a name that collides with one of its own to a
safe identifier (kernelgen/names.py input_identifiers, cpp_namespace); the public Python signature,
the schema and every message keep the user's name."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from kernelgen import names
from kernelgen.cli import main
from kernelgen.spec import OpSpec, parse_inputs

#: Names people give tensors, many of which the generated code also uses for itself.
NATURAL_NAMES = (
    "q", "k", "v", "mask", "eps", "p", "r", "out", "grad", "alpha", "value", "key", "other", "acc", "idx",
    "f", "i", "m", "n", "s", "t", "u", "x", "y", "z", "w", "gamma", "beta", "bias", "gate", "up", "scale",
    "shift", "temperature", "logits", "labels", "target", "weight", "input", "hidden", "residual", "res",
    "dt", "tau", "mu", "sigma", "lam", "rho", "theta", "phi", "noise", "torch", "dtype", "stream", "name",
    "result", "data", "inputs", "ctx", "self", "size", "shape", "device", "block", "row", "col", "offset",
    "stride", "numel", "count", "tmp", "kernel", "launch", "config", "grid",
)


def _new(args: list[str]) -> None:
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output


def _chunks(items, size):
    return [items[i:i + size] for i in range(0, len(items), size)]


def test_at_least_fifty_natural_names_are_accepted_and_map_without_collision():
    assert len(set(NATURAL_NAMES)) == len(NATURAL_NAMES) >= 50
    mapped = 0
    for chunk in _chunks(NATURAL_NAMES, 16):
        assert parse_inputs(",".join(chunk)) == tuple(chunk)
        ids = names.input_identifiers(tuple(chunk), "op", "pkg", "ns")
        assert len(set(ids.values())) == len(chunk)
        mapped += sum(name != ident for name, ident in ids.items())
    assert mapped >= 10  # the list really exercises the mapping (out, torch, t, i, n, ... collide)


def _public_signature(path: Path, function: str) -> list[str]:
    tree = ast.parse(path.read_text())
    (node,) = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == function]
    return [arg.arg for arg in node.args.args]


@pytest.mark.parametrize("kind, backend", [("elementwise", "cuda"), ("elementwise", "triton"),
                                           ("rowwise", "cuda"), ("rowwise", "triton")])
def test_every_generated_python_file_compiles_over_the_natural_names(tmp_path, kind, backend):
    """Every natural name, 16 inputs an op, on each kind and backend: the package renders, every
    Python file compiles, and the public function's parameters are the user's names in order."""
    package = f"nat_{kind}_{backend}"
    for index, chunk in enumerate(_chunks(NATURAL_NAMES, 16)):
        op = f"op{index}"
        if kind == "rowwise":
            inputs, weights = chunk[:-2], chunk[-2:]
            expr = " + ".join(inputs) + " - mean(" + " * ".join(inputs[:2]) + ") * " + " * ".join(weights)
        else:
            inputs, weights = chunk, []
            expr = " * ".join(chunk[:3]) + " + " + " - ".join(chunk[3:])
        options = ["--kind", kind, "--backend", backend, "--inputs", ",".join(inputs), "--expr", expr, "--defaults"]
        if weights:
            options += ["--weights", ",".join(weights)]
        if index == 0:
            _new(["new", package, "--op", op, *options, "--output", str(tmp_path)])
        else:
            _new(["add", op, *options, "--package", str(tmp_path / package)])
        root = tmp_path / package
        assert _public_signature(root / package / "ops" / f"{op}.py", op) == [*inputs, *weights]
    for path in sorted((tmp_path / package).rglob("*.py")):
        compile(path.read_text(), str(path), "exec")  # raises SyntaxError (a duplicate argument, ...)


@pytest.mark.parametrize("op_name", ["norm", "floor", "std", "cute", "gamma", "int64_t", "kg"])
def test_an_op_named_like_a_c_name_gets_a_safe_cpp_namespace(tmp_path, op_name):
    _new(["new", op_name, "--inputs", "x", "--expr", "x * 2", "--defaults", "--output", str(tmp_path)])
    source = (tmp_path / op_name / op_name / "csrc" / op_name / f"{op_name}.cpp").read_text()
    assert f"namespace {op_name}_op {{" in source and f"namespace {op_name} {{" not in source
    assert f'm.def("{op_name}(' in source  # torch.ops keeps the user's name
    assert OpSpec.create(op_name, inputs="x", expr="x").cpp_namespace == f"{op_name}_op"


@pytest.mark.build
def test_natural_names_build_and_pass_their_own_suites(tmp_path):
    """The issue's cases, built and tested: an op over q,k,v,mask; a rowwise op with the input eps
    and weights gamma,beta in an op named like a C function; Triton ops over names the generated
    Python uses itself (out, torch, t, i, n, dtype)."""
    pytest.importorskip("torch")
    root = tmp_path / "natural"
    _new(["new", "natural", "--op", "attn", "--inputs", "q,k,v,mask", "--expr", "q * k * mask + v",
          "--defaults", "--output", str(tmp_path)])
    _new(["add", "norm", "--kind", "rowwise", "--inputs", "x,eps", "--weights", "gamma,beta", "--expr",
          "(x - mean(x)) * rsqrt(mean((x - mean(x)) ** 2) + eps * eps + 1e-5) * gamma + beta",
          "--defaults", "--package", str(root)])
    _new(["add", "mix_tl", "--backend", "triton", "--inputs", "out,torch,t,i,n", "--expr",
          "out * torch + t * i - n", "--defaults", "--package", str(root)])
    _new(["add", "gate_tl", "--kind", "rowwise", "--backend", "triton", "--inputs", "x,mask", "--weights", "dtype",
          "--expr", "x * mask - mean(x * dtype)", "--defaults", "--package", str(root)])
    env = dict(os.environ, TORCH_CUDA_ARCH_LIST=os.environ.get("TORCH_CUDA_ARCH_LIST", "9.0"))
    build = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"], cwd=root, capture_output=True,
                           text=True, timeout=1800, env=env)
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=root,
                           capture_output=True, text=True, timeout=1800)
    assert tests.returncode == 0, tests.stdout[-5000:]
    assert " passed" in tests.stdout and " failed" not in tests.stdout
    # The user's names are the public names: keyword arguments, the schema, the messages.
    probe = subprocess.run([sys.executable, "-c", """
import inspect, torch, natural
q, k, v, mask = (torch.randn(5, dtype=torch.float64) for _ in range(4))
assert torch.allclose(natural.attn(q=q, k=k, v=v, mask=mask), q * k * mask + v)
assert torch.allclose(torch.ops.natural.attn(q=q, k=k, v=v, mask=mask), q * k * mask + v)
assert list(inspect.signature(natural.norm).parameters) == ["x", "eps", "gamma", "beta"]
assert [a.name for a in torch.ops.natural.norm.default._schema.arguments] == ["x", "eps", "gamma", "beta"]
assert list(inspect.signature(natural.mix_tl).parameters) == ["out", "torch", "t", "i", "n"]
assert [a.name for a in torch.ops.natural.mix_tl.default._schema.arguments] == ["out", "torch", "t", "i", "n"]
xs = [torch.randn(4) for _ in range(5)]
assert torch.allclose(torch.ops.natural.mix_tl(out=xs[0], torch=xs[1], t=xs[2], i=xs[3], n=xs[4]),
                      xs[0] * xs[1] + xs[2] * xs[3] - xs[4])
try:
    natural.attn(q, k, v, mask.float())
except RuntimeError as err:
    assert "attn: mask has dtype" in str(err), err
else:
    raise AssertionError("no error")
print("ok")
"""], cwd=root, capture_output=True, text=True, timeout=300)
    assert probe.returncode == 0 and probe.stdout.strip() == "ok", probe.stdout + probe.stderr


# Triton's interpreter (TRITON_INTERPRET=1) runs a Triton kernel on the CPU: the kernels' own locals
# (mask, offsets, base, acc, result, ...) meet the user's names there, which the CPU suites, run on
# the reference, never reach.
_INTERPRETED = """
import importlib, sys
import torch, triton, triton.language as tl
sys.path.insert(0, sys.argv[1])
from natural_tl.ops import mix_tl, gate_tl
torch.manual_seed(0)
failures = []
for dtype, acc in ((torch.float32, tl.float32), (torch.float64, tl.float64)):
    xs = [torch.randn(3001, dtype=dtype) for _ in range(5)]
    out = torch.full_like(xs[0], float("nan"))
    mix_tl._mix_tl_kernel[(triton.cdiv(3001, 1024),)](*xs, out, 3001, BLOCK=1024, ACC=acc)
    if not torch.allclose(out, mix_tl.reference(*xs)):
        failures.append(f"mix_tl {dtype}")
    for cols, kernel, block in ((1000, gate_tl._gate_tl_kernel, 1024), (5000, gate_tl._gate_tl_long_kernel, 1024)):
        x, mask = torch.randn(3, cols, dtype=dtype), (torch.rand(3, cols) > 0.5).to(dtype)
        weight = torch.randn(cols, dtype=dtype)
        out = torch.full_like(x, float("nan"))
        hints = gate_tl._long_forward(dtype)[1] if kernel is gate_tl._gate_tl_long_kernel else {}
        saving = [out, 0] if "_save" in kernel.arg_names else []  # where to save the per-row values its backward reads
        kernel[(3,)](x, mask, weight, out, cols, *saving, BLOCK=block, ACC=acc, **hints)
        if not torch.allclose(out, gate_tl.reference(x, mask, weight)):
            failures.append(f"gate_tl {dtype} cols={cols}")
print("ok" if not failures else "FAILED " + ", ".join(failures))
"""


def test_triton_kernels_over_natural_names_run_in_the_interpreter(tmp_path):
    """The Triton kernels of ops over out,torch,t,i,n and x,mask with the weight dtype compile and
    compute the reference: an input named like a kernel local (mask) gets an identifier of its own."""
    pytest.importorskip("triton", reason="the Triton backend needs triton")
    pytest.importorskip("torch")
    _new(["new", "natural-tl", "--op", "mix_tl", "--backend", "triton", "--inputs", "out,torch,t,i,n", "--expr",
          "out * torch + t * i - n", "--dtypes", "float32,float64", "--defaults", "--output", str(tmp_path)])
    _new(["add", "gate_tl", "--kind", "rowwise", "--backend", "triton", "--inputs", "x,mask", "--weights", "dtype",
          "--expr", "x * mask - mean(x * dtype)", "--dtypes", "float32,float64", "--defaults",
          "--package", str(tmp_path / "natural-tl")])
    driver = tmp_path / "interpreted.py"
    driver.write_text(_INTERPRETED)
    done = subprocess.run([sys.executable, str(driver), str(tmp_path / "natural-tl")], capture_output=True, text=True,
                          env={**os.environ, "TRITON_INTERPRET": "1"}, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "ok", done.stdout
