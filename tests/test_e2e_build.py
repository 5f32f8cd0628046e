"""End to end, as a user: generate a fresh op, build it with nvcc, run its own tests.

Uses an expression unlike the examples' (unary, transcendental) so that the template is exercised
beyond the golden files. Also checks the stale-binary guard against the real build.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner
from conftest import cuda_toolkit

from kernelgen.cli import main

torch = pytest.importorskip("torch", reason="building a generated op needs torch (pip install -e '.[test]')")


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(extra)
    return env


@pytest.mark.build
def test_generate_build_and_test_a_fresh_op(tmp_path):
    result = CliRunner().invoke(main, ["new", "soft-gate", "--inputs", "x,g", "--expr", "x * sigmoid(1.702 * g) + tanh(x) / 4",
                                       "--defaults", "--output", str(tmp_path)])
    assert result.exit_code == 0, result.output
    root = tmp_path / "soft-gate"
    want_cuda = torch.version.cuda is not None and cuda_toolkit() is not None
    build = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"], cwd=root, capture_output=True,
                           text=True, timeout=1800, env=_env(TORCH_CUDA_ARCH_LIST=os.environ.get("TORCH_CUDA_ARCH_LIST", "9.0")))
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    info = json.loads((root / "soft_gate" / "_build_info.json").read_text())
    assert info["torch"] == torch.__version__
    assert info["with_cuda"] is want_cuda, "CUDA toolkit present but the build fell back to CPU-only"
    assert "warning" not in build.stderr.lower().replace("userwarning", ""), build.stderr[-3000:]

    tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=root,
                           capture_output=True, text=True, timeout=1800)
    assert tests.returncode == 0, tests.stdout[-5000:]
    assert " passed" in tests.stdout and " failed" not in tests.stdout

    # Stale-binary guard: pretend the extension was built against another torch.
    info["torch"] = "1.0.0"
    (root / "soft_gate" / "_build_info.json").write_text(json.dumps(info))
    stale = subprocess.run([sys.executable, "-c", "import soft_gate"], cwd=root, capture_output=True, text=True)
    assert stale.returncode != 0
    last = stale.stderr.strip().splitlines()[-1]
    assert "ImportError: soft_gate was built against torch 1.0.0" in last
    assert f"but torch {torch.__version__}" in last and "pip install --no-build-isolation -e" in last


@pytest.mark.build
def test_jit_mode_edit_and_rerun(tmp_path):
    """KERNELGEN_JIT=1: the package compiles csrc/ on import; an edit is picked up with no pip install."""
    result = CliRunner().invoke(main, ["new", "jit-op", "--inputs", "x,y", "--expr", "x * y", "--defaults", "--output", str(tmp_path)])
    assert result.exit_code == 0, result.output
    root = tmp_path / "jit-op"
    env = _env(KERNELGEN_JIT="1", TORCH_CUDA_ARCH_LIST=os.environ.get("TORCH_CUDA_ARCH_LIST", "9.0"))
    script = ("import time, torch; t = time.perf_counter(); import jit_op; took = time.perf_counter() - t; "
              "x = torch.arange(1., 5.); y = torch.full((4,), 3.); "
              "print('RESULT', jit_op.jit_op(x, y).tolist(), 'WITH_CUDA', jit_op.WITH_CUDA, f'IMPORT {took:.1f}s')")

    def run():
        done = subprocess.run([sys.executable, "-c", script], cwd=root, env=env, capture_output=True, text=True, timeout=1800)
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout.strip().splitlines()[-1]

    first = run()
    assert "RESULT [3.0, 6.0, 9.0, 12.0]" in first
    assert (root / "build" / "jit").is_dir()  # the documented, visible cache
    assert not list((root / "jit_op").glob("_C*.so"))  # nothing prebuilt was used
    header = root / "jit_op" / "csrc" / "jit_op" / "jit_op.h"
    header.write_text(header.read_text().replace("return x * y;", "return x * y + acc_t(1);"))
    second = run()
    assert "RESULT [4.0, 7.0, 10.0, 13.0]" in second
    third = run()  # nothing changed: the cached build is reused
    print(f"\nJIT cold build: {first}\nJIT after editing the kernel body: {second}\nJIT unchanged: {third}")
