"""Every script a generated package holds answers --help before the package is built, and a run of an
unbuilt package ends with one line that says to build it (with the command), not a traceback."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from kernelgen.cli import main

#: One op of every kind and backend (and the fused matmul's epilogue), in one package.
OPS = [
    ["ew", "--inputs", "x,y", "--expr", "x * sigmoid(y)"],
    ["rw", "--kind", "rowwise", "--inputs", "x", "--weights", "w", "--expr", "x * rsqrt(mean(x * x) + 1e-6) * w"],
    ["mm", "--kind", "matmul"],
    ["lin", "--kind", "matmul", "--bias", "--epilogue", "acc + bias"],
    ["ew_tl", "--backend", "triton", "--inputs", "x", "--expr", "x * x"],
    ["rw_tl", "--backend", "triton", "--kind", "rowwise", "--inputs", "x"],
]


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    out = tmp_path_factory.mktemp("help")
    first, *rest = OPS
    result = CliRunner().invoke(main, ["new", "lib", "--op", *first, "--defaults", "-o", str(out)])
    assert result.exit_code == 0, result.output
    for op in rest:
        result = CliRunner().invoke(main, ["add", *op, "--defaults", "--package", str(out / "lib")])
        assert result.exit_code == 0, result.output
    return out / "lib"


def scripts(root):
    return [*sorted((root / "benchmarks").glob("bench_*.py")), root / "benchmarks" / "run_all.py"]


def run(root, *args):
    # No JIT: with KERNELGEN_JIT=1 importing the package would compile it.
    env = {key: value for key, value in os.environ.items() if not key.startswith("KERNELGEN_")}
    return subprocess.run([sys.executable, *args], cwd=root, env=env, capture_output=True, text=True, timeout=300)


def test_the_package_has_a_benchmark_per_op(package):
    assert [path.name for path in scripts(package)] == [
        "bench_ew.py", "bench_ew_tl.py", "bench_lin.py", "bench_mm.py", "bench_rw.py", "bench_rw_tl.py", "run_all.py"]


def test_help_works_before_a_build(package):
    assert not list(package.rglob("_build_info.json")) and not list(package.rglob("_C*.so"))
    for script in scripts(package):
        result = run(package, str(script.relative_to(package)), "--help")
        assert result.returncode == 0, (script.name, result.stderr)
        assert result.stdout.startswith("usage: "), (script.name, result.stdout)
        assert "Traceback" not in result.stderr, (script.name, result.stderr)
        assert "--json-dir" in result.stdout if script.name == "run_all.py" else "--dtypes" in result.stdout
    assert "--cols" in run(package, "benchmarks/bench_rw.py", "--help").stdout
    result = run(package, "setup.py", "--help")
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    assert not list(package.rglob("_build_info.json")) and not (package / "build").exists()


def test_a_run_before_a_build_says_how_to_build_in_one_line(package):
    for script in scripts(package):
        result = run(package, str(script.relative_to(package)), "--device", "cpu", "--sizes", "64")
        assert result.returncode == 1, (script.name, result.stdout, result.stderr)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1, (script.name, result.stderr)
        assert "lib: the compiled extension is not built" in lines[0], lines[0]
        assert f"pip install --no-build-isolation -e {package}" in lines[0], lines[0]
