"""The command line, as a user meets it: exit codes, one-line errors, nothing half-written."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import failing_replace, tree

from kernelgen.cli import main


def invoke(*args, input=None):
    return CliRunner().invoke(main, list(args), input=input, catch_exceptions=False)


@pytest.mark.parametrize("abi", ["stable", "full"])
def test_new_writes_the_documented_tree(tmp_path, abi):
    result = invoke("new", "muladd", "--inputs", "a,b,c", "--expr", "a*b+c", "--defaults", "--abi", abi, "-o", str(tmp_path))
    assert result.exit_code == 0, result.output
    files = {f for f in tree(tmp_path / "muladd") if not f.startswith(".kernelgen/")}
    # The stable ABI's helpers, and the package's op headers that hold the tensor code every op shares.
    stable_only = {"muladd/csrc/stable_utils.h", "muladd/csrc/stable_cuda.h", "muladd/csrc/kernelgen/tensors.h",
                   "muladd/csrc/kernelgen/cuda_op.h", "muladd/csrc/kernelgen/elementwise_cpu_op.h",
                   "muladd/csrc/kernelgen/elementwise_cuda_op.h"} if abi == "stable" else set()
    assert {
        "setup.py", "pyproject.toml", "README.md", ".copier-answers.yml", ".gitignore",
        "muladd/__init__.py", "muladd/_build.py", "muladd/_loader.py", "muladd/ops/__init__.py", "muladd/ops/muladd.py",
        "muladd/csrc/_module.cpp", "muladd/csrc/opmath.h",
        "muladd/csrc/muladd/muladd.cpp", "muladd/csrc/muladd/muladd.h", "muladd/csrc/muladd/muladd_checks.h",
        "muladd/csrc/muladd/cuda/muladd_cuda.cpp", "muladd/csrc/muladd/cuda/muladd_kernel.cu",
        "muladd/csrc/muladd/cuda/muladd_kernel.h", "muladd/csrc/kernelgen/elementwise.cuh",
        "muladd/csrc/kernelgen/per_device.cuh",
        "muladd/testing/__init__.py", "muladd/testing/error_model.py", "muladd/testing/suite.py",
        "muladd/testing/elementwise.py", "tests/test_muladd.py",
        "benchmarks/bench_muladd.py", "benchmarks/harness.py", "benchmarks/run_all.py",
    } | stable_only == files
    assert f"abi: {abi}\n" in (tmp_path / "muladd" / ".copier-answers.yml").read_text()
    # The merge ancestor for `kernelgen update` is one compressed record, not a second copy of the sources.
    assert {f for f in tree(tmp_path / "muladd") if f.startswith(".kernelgen/")} == {
        ".kernelgen/generated.json.gz", ".kernelgen/README.md"}
    from kernelgen.record import RECORD, decode_record

    record = decode_record((tmp_path / "muladd" / RECORD).read_bytes(), "record")
    assert set(record) == files
    assert all(record[f] == (tmp_path / "muladd" / f).read_bytes() for f in files)


def _common_rules(root, cu, cuda_cpp, cpp, empty_case="if (n == 0)"):
    """``cuda_cpp``: the op's CUDA tensor code, with the package's op headers it runs on (stable ABI)."""
    for needle in ["int64_t n", "Pack<scalar_t, kVec>", "is_aligned("]:
        assert needle in cu, needle
    for needle in ["contiguous(", empty_case]:
        assert needle in cuda_cpp, needle
    assert "<<<" in cu and ", 0, stream>>>" in cu  # launched on the current stream
    # nvcc never sees the tensor headers: they are most of a build's time
    for header in ["ATen/core/Tensor.h", "torch/library.h", "torch/csrc/stable/tensor.h", "stable_utils.h",
                   "muladd_checks.h"]:
        assert header not in cu and header not in (root / "muladd/csrc/muladd/muladd.h").read_text(), header
    for text in (cu, cuda_cpp, cpp):
        assert "#include <torch/extension.h>" not in text and "#include <ATen/cuda/CUDAContext.h>" not in text
    ops = (root / "muladd/ops/muladd.py").read_text()
    assert "register_fake" in ops and "register_autograd" in ops
    if "torch/csrc/stable" in cpp:
        # The generated backward op (stable ABI), and the vjp of the reference beside it.
        assert "register_fake(_BACKWARD)" in ops and "torch.ops.muladd.muladd_backward.default(" in ops
        assert "def _backward_vjp" in ops and "muladd_backward(Tensor _grad, Tensor a, Tensor b, Tensor c, bool[] _needs)" in cpp
    else:  # the ATen code keeps the vjp of the reference
        assert "AUTOGRAD STUB" in ops and "_backward" not in cpp
    build = (root / "muladd/_build.py").read_text()
    assert 'ARCH_LIST = "8.0;9.0+PTX"' in build and "arch" not in " ".join(
        line for line in build.splitlines() if line.startswith(("CXX_", "NVCC_")))
    compile(ops, "ops.py", "exec")
    compile((root / "tests/test_muladd.py").read_text(), "test_muladd.py", "exec")
    compile((root / "benchmarks/bench_muladd.py").read_text(), "bench.py", "exec")


def _sources(root):
    """The kernel (the package's elementwise kernel and the op's instantiation of it), the tensor side
    and the CPU code of the muladd op at ``root``."""
    kernel = (root / "muladd/csrc/kernelgen/elementwise.cuh").read_text()
    kernel += (root / "muladd/csrc/muladd/cuda/muladd_kernel.cu").read_text()
    return [kernel] + [(root / f"muladd/csrc/muladd/{rel}").read_text() for rel in ("cuda/muladd_cuda.cpp", "muladd.cpp")]


def test_generated_code_follows_the_rules(tmp_path):
    invoke("new", "muladd", "--inputs", "a,b,c", "--expr", "a*b+c", "--defaults", "-o", str(tmp_path))
    root = tmp_path / "muladd"
    cu, cuda_cpp, cpp = _sources(root)
    # The op's files call the package's op headers (csrc/kernelgen/), which hold the guard, the copies, the
    # allocations, the stream and the CPU loop once for every op.
    headers = {name: (root / "muladd/csrc/kernelgen" / name).read_text()
               for name in ("tensors.h", "cuda_op.h", "elementwise_cpu_op.h", "elementwise_cuda_op.h")}
    assert "kg::elementwise::CudaForward<3> forward({&a, &b, &c});" in cuda_cpp
    assert "forward.run<scalar_t>(launch_muladd<scalar_t>);" in cuda_cpp
    cuda_side = cuda_cpp + headers["tensors.h"] + headers["cuda_op.h"] + headers["elementwise_cuda_op.h"]
    _common_rules(root, cu, cuda_side, cpp, empty_case="if (out_.numel() == 0)")
    assert "STD_CUDA_KERNEL_LAUNCH_CHECK();" in cu
    for needle in ["kernelgen::DeviceGuard", "kernelgen::current_cuda_stream(", "THO_DISPATCH_V2", "torch::stable::empty(",
                   "ScalarType::BFloat16", "ScalarType::Half", "STABLE_TORCH_LIBRARY_IMPL(muladd, CUDA, m)", "TORCH_BOX("]:
        assert needle in cuda_side, needle
    # Stable ABI: no ATen or c10 header anywhere in the package's C++, only torch/csrc/stable and torch/headeronly.
    for path in (root / "muladd/csrc").rglob("*"):
        if path.suffix in (".cpp", ".cu", ".h", ".cuh"):
            includes = re.findall(r"^#include <([\w.]+)", path.read_text(), re.MULTILINE)
            assert {inc for inc in includes if inc in ("ATen", "c10") or "." not in inc} <= {"torch", "cstdint", "cstddef", "cmath",
                    "algorithm", "array", "atomic", "optional", "string", "tuple", "utility", "vector", "sstream", "stdexcept",
                    "type_traits"}, includes
            torch_includes = re.findall(r"^#include <(torch/[\w/.]+)", path.read_text(), re.MULTILINE)
            assert all(inc.startswith(("torch/csrc/stable/", "torch/headeronly/", "torch/csrc/inductor/aoti_torch/c/"))
                       for inc in torch_includes), (path.name, torch_includes)
    # FRAGMENT: several ops and packages share a namespace; a second library defining it would abort Python.
    assert "STABLE_TORCH_LIBRARY_FRAGMENT(muladd, m)" in cpp and "STABLE_TORCH_LIBRARY_IMPL(muladd, CPU, m)" in cpp
    assert "TORCH_LIBRARY(" not in cpp.replace("// ", "").split("namespace muladd {")[1]
    # The checks come before the parallel loop (the package's CPU loop, which the op's file builds after them):
    # nothing may throw across torch_parallel_for.
    assert cpp.index("check_inputs(a, b, c);\n") < cpp.index("kg::elementwise::CpuForward<3> forward(")
    assert "torch::stable::parallel_for(" in headers["elementwise_cpu_op.h"]
    build = (root / "muladd/_build.py").read_text()
    assert "TORCH_TARGET_VERSION = (2, 10)" in build and "py_limited_api=True" in build
    assert '"py_limited_api": "cp310"' in (root / "setup.py").read_text()
    assert 'requires-python = ">=3.10"' in (root / "pyproject.toml").read_text()


def test_full_abi_code_is_the_aten_code(tmp_path):
    invoke("new", "muladd", "--inputs", "a,b,c", "--expr", "a*b+c", "--defaults", "--abi", "full", "-o", str(tmp_path))
    root = tmp_path / "muladd"
    cu, cuda_cpp, cpp = _sources(root)
    _common_rules(root, cu, cuda_cpp, cpp)
    assert "C10_CUDA_KERNEL_LAUNCH_CHECK();" in cu
    for needle in ["CUDAGuard", "getCurrentCUDAStream()", "AT_DISPATCH_V2", ".contiguous()",
                   "at::kBFloat16", "at::kHalf", "TORCH_LIBRARY_IMPL(muladd, CUDA, m)"]:
        assert needle in cuda_cpp, needle
    assert "TORCH_LIBRARY_FRAGMENT(muladd, m)" in cpp and "TORCH_LIBRARY_IMPL(muladd, CPU, m)" in cpp
    assert "STABLE" not in cpp + cuda_cpp + cu and "torch/csrc/stable" not in cpp + cuda_cpp + cu
    build = (root / "muladd/_build.py").read_text()
    assert "TORCH_TARGET_VERSION" not in build and "py_limited_api" not in build
    assert 'requires-python = ">=3.9"' in (root / "pyproject.toml").read_text()


def test_hyphenated_name_is_announced(tmp_path):
    result = invoke("new", "fused-gelu", "--inputs", "x", "--expr", "x*sigmoid(1.702*x)", "--defaults", "-o", str(tmp_path))
    assert result.exit_code == 0
    assert "'fused-gelu' becomes 'fused_gelu'" in result.output
    assert (tmp_path / "fused-gelu" / "fused_gelu" / "ops" / "fused_gelu.py").is_file()


@pytest.mark.parametrize("name", ["", "1abc", "class", "float", "lambda", "new", "a/b", "../evil", "..", "a.b", "x y"])
def test_bad_names_exit_2_with_one_line_and_write_nothing(run_kernelgen, tmp_path, name):
    result = run_kernelgen("new", name, "--inputs", "a", "--expr", "a", "--defaults", "-o", str(tmp_path / "out"))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    error_lines = [line for line in result.stderr.splitlines() if line.startswith("Error")]
    assert len(error_lines) == 1, result.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("expr, fragment", [
    ("__import__('os').system('touch /tmp/pwned')", "unsupported call target"),
    ('a); system("x"); (a', "not a valid expression"),
    ("a*b+d", "unknown name 'd'"),
    ("a[0]", "subscript"),
])
def test_bad_expressions_exit_2_and_write_nothing(run_kernelgen, tmp_path, expr, fragment):
    result = run_kernelgen("new", "op", "--inputs", "a,b", "--expr", expr, "--defaults", "-o", str(tmp_path / "out"))
    assert result.returncode == 2
    assert fragment in result.stderr and "Traceback" not in result.stderr
    assert "--expr" in result.stderr
    assert not (tmp_path / "out").exists()


def test_options_cannot_inject_code(run_kernelgen, tmp_path):
    for args in (["--namespace", 'x"); system("id'], ["--dtypes", "float32; rm"], ["--arch-list", '9.0"; import os']):
        result = run_kernelgen("new", "op", "--inputs", "a", "--expr", "a", "--defaults", *args, "-o", str(tmp_path))
        assert result.returncode == 2, args
        assert "Traceback" not in result.stderr


def test_refuses_non_empty_destination_without_force(tmp_path):
    dest = tmp_path / "muladd"
    dest.mkdir()
    (dest / "notes.txt").write_text("mine")
    result = CliRunner().invoke(main, ["new", "muladd", "--inputs", "a", "--expr", "a", "--defaults", "-o", str(tmp_path)])
    assert result.exit_code == 1
    assert "exists and is not empty; use --force" in result.output
    assert [p.name for p in dest.iterdir()] == ["notes.txt"]


def test_force_keeps_user_files_and_overwrites_generated_ones(tmp_path):
    args = ["new", "muladd", "--inputs", "a,b,c", "--expr", "a*b+c", "--defaults", "-o", str(tmp_path)]
    assert invoke(*args).exit_code == 0
    (tmp_path / "muladd" / "notes.txt").write_text("mine")
    (tmp_path / "muladd" / "README.md").write_text("edited")
    assert invoke(*args, "--force").exit_code == 0
    assert (tmp_path / "muladd" / "notes.txt").read_text() == "mine"
    assert (tmp_path / "muladd" / "README.md").read_text().startswith("# muladd")
    backups = list((tmp_path / "muladd" / ".kernelgen" / "backup").glob("*/README.md"))
    assert [b.read_text() for b in backups] == ["edited"]  # --force never loses an edit


def test_existing_file_as_destination(tmp_path):
    (tmp_path / "muladd").write_text("a file")
    result = CliRunner().invoke(main, ["new", "muladd", "--inputs", "a", "--expr", "a", "--defaults", "-o", str(tmp_path)])
    assert result.exit_code == 1 and "is not a directory" in result.output


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores directory permissions")
def test_unwritable_output_fails_cleanly(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        result = CliRunner().invoke(main, ["new", "op", "--inputs", "a", "--expr", "a", "--defaults", "-o", str(locked)])
        assert result.exit_code == 1 and "cannot write" in result.output
    finally:
        locked.chmod(stat.S_IRWXU)


def test_failure_midway_restores_the_destination(tmp_path, monkeypatch):
    """A failure while moving files into place undoes every move: user files come back."""

    args = ["new", "muladd", "--inputs", "a,b,c", "--expr", "a*b+c", "--defaults", "-o", str(tmp_path)]
    assert invoke(*args).exit_code == 0
    dest = tmp_path / "muladd"
    (dest / "README.md").write_text("user edit")
    (dest / "notes.txt").write_text("mine")
    before = tree(dest)
    with failing_replace(monkeypatch, 2, OSError(28, "No space left on device")):
        result = CliRunner().invoke(main, [*args, "--force"])
        assert result.exit_code == 1
        assert "nothing was changed" in result.output
    assert tree(dest) == before
    assert not [p for p in dest.iterdir() if p.name.startswith(".kernelgen-staging")]  # no staging left behind


def test_failure_in_a_new_destination_leaves_nothing(tmp_path, monkeypatch):
    import kernelgen.render as render

    def broken(data, directory):
        Path(directory).mkdir(parents=True)
        (Path(directory) / "half.txt").write_text("x")
        raise render.RenderError("rendering the template failed: boom")

    monkeypatch.setattr(render, "_run_copier", broken)
    result = CliRunner().invoke(main, ["new", "op", "--inputs", "a", "--expr", "a", "--defaults", "-o", str(tmp_path)])
    assert result.exit_code == 1 and "boom" in result.output
    assert list(tmp_path.iterdir()) == []


def test_no_terminal_never_prompts(run_kernelgen, tmp_path):
    # stdin is not a TTY: missing options take their defaults instead of hanging on a prompt.
    result = run_kernelgen("new", "scale", "-o", str(tmp_path), input="")
    assert result.returncode == 0, result.stderr
    answers = (tmp_path / "scale" / ".copier-answers.yml").read_text()
    assert "expr: x" in answers and "kind: elementwise" in answers
    result = run_kernelgen("new", "-o", str(tmp_path), input="")
    assert result.returncode == 2 and "missing OP_NAME" in result.stderr


def test_prompts_when_interactive(tmp_path, monkeypatch):
    monkeypatch.setattr("kernelgen.cli._interactive", lambda defaults: not defaults)
    result = CliRunner().invoke(main, ["new", "-o", str(tmp_path)], input="gelu\nelementwise\nx\nx*sigmoid(1.702*x)\nfloat32,bfloat16\n9.0\n")
    assert result.exit_code == 0, result.output
    answers = (tmp_path / "gelu" / ".copier-answers.yml").read_text()
    assert "expr: x * sigmoid(1.702 * x)" in answers and "- bfloat16" in answers and "arch_list: '9.0'" in answers


def test_answers_file_regenerates_the_same_op(tmp_path):
    invoke("new", "fused-gelu", "--inputs", "x", "--expr", "x*sigmoid(1.702*x)", "--dtypes", "fp32,bf16", "--defaults", "-o", str(tmp_path / "a"))
    answers = tmp_path / "a" / "fused-gelu" / ".copier-answers.yml"
    result = invoke("new", "--answers", str(answers), "-o", str(tmp_path / "b"))
    assert result.exit_code == 0, result.output
    assert tree(tmp_path / "a" / "fused-gelu") == tree(tmp_path / "b" / "fused-gelu")


def test_bad_answers_file(tmp_path):
    bad = tmp_path / "answers.yml"
    bad.write_text("just: [a list")
    result = CliRunner().invoke(main, ["new", "--answers", str(bad), "-o", str(tmp_path)])
    assert result.exit_code == 1 and "not valid YAML" in result.output
    bad.write_text("foo: 1\n")
    result = CliRunner().invoke(main, ["new", "--answers", str(bad), "-o", str(tmp_path)])
    assert result.exit_code == 1 and "not a kernelgen answers file" in result.output


def test_list_shows_kinds():
    result = invoke("list")
    assert result.exit_code == 0
    assert "elementwise" in result.output and "matmul" in result.output


def test_python_dash_m_and_version(run_kernelgen):
    result = run_kernelgen("--version")
    assert result.returncode == 0 and "kernelgen, version" in result.stdout


@pytest.mark.parametrize(("args", "line"), [
    (["--inputs", "x,y", "--expr", "x * sigmod(y)"],
     "Error: --expr: unknown function 'sigmod' at column 5; did you mean 'sigmoid'?"),
    (["--inputs", "x,y", "--expr", "xx * y"],
     "Error: --expr: unknown name 'xx' at column 1; did you mean 'x'? (the inputs are: x, y)"),
    (["--kind", "rowwise", "--inputs", "x", "--expr", "x / summ(x)"],
     "Error: --expr: unknown function 'summ' at column 5; did you mean 'sum'?"),
    (["--kind", "matmul", "--epilogue", "acc * sigmod(acc)"],
     "Error: --epilogue: unknown function 'sigmod' at column 7; did you mean 'sigmoid'?"),
    (["--dtypes", "fp32,bfloat61"],
     "Error: --dtypes: unsupported dtype 'bfloat61'; did you mean 'bfloat16'? (choose from float32, float64, "
     "float16, bfloat16)"),
    (["--kind", "matmal"], "Error: Invalid value for '--kind': 'matmal' is not one of 'elementwise', 'matmul', "
     "'rowwise'; did you mean 'matmul'?"),
    (["--backend", "trition"], "; did you mean 'triton'?"),
    # Nothing close: the list of what is allowed, and no guess.
    (["--inputs", "x", "--expr", "foo(x)"],
     "Error: --expr: unknown function 'foo' at column 1; allowed: abs, cos, erf, exp, log, max, min, pow, rsqrt, "
     "sigmoid, sin, sqrt, tanh"),
])
def test_unknown_names_get_a_suggestion(tmp_path, args, line):
    result = CliRunner().invoke(main, ["new", "op", *args, "--defaults", "-o", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert line in result.output.splitlines()[-1]
    assert list(tmp_path.iterdir()) == []
    if "allowed:" in line:
        assert "did you mean" not in result.output


def test_without_a_terminal_the_kind_is_elementwise_whatever_the_options(tmp_path):
    # Prompts check answers against the kind the options point to; an unprompted run never guesses it.
    result = CliRunner().invoke(main, ["new", "op", "--weights", "w", "--defaults", "-o", str(tmp_path)])
    assert result.exit_code == 2 and "--weights is only for --kind rowwise, not elementwise" in result.output
    result = CliRunner().invoke(main, ["new", "op", "--epilogue", "acc", "--defaults", "-o", str(tmp_path)])
    assert result.exit_code == 2 and "--epilogue and --bias are only for --kind matmul" in result.output
