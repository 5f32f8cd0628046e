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
