"""End to end, as a user: generate a fresh op, build it with nvcc, run its own tests.

Uses an expression unlike the examples' (unary, transcendental) so that the template is exercised
beyond the golden files. Both ABIs: the default stable one (symbol audit, abi3 wheel, the loader's
minimum-torch guard) and --abi full (the exact-match stale-binary guard), against the real build.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile

import pytest
from click.testing import CliRunner
from conftest import cuda_toolkit
from test_stable_abi import audit, stable_abi_violations

from kernelgen.cli import main

torch = pytest.importorskip("torch", reason="building a generated op needs torch (pip install -e '.[test]')")


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(extra)
    return env


def _generate_and_build(tmp_path, name: str, *options: str):
    """`kernelgen new NAME ...`, `setup.py build_ext --inplace` and the package's own tests."""
    result = CliRunner().invoke(main, ["new", name, *options, "--defaults", "--output", str(tmp_path)])
    assert result.exit_code == 0, result.output
    root = tmp_path / name
    package = name.replace("-", "_")
    want_cuda = torch.version.cuda is not None and cuda_toolkit() is not None
    build = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"], cwd=root, capture_output=True,
                           text=True, timeout=1800, env=_env(TORCH_CUDA_ARCH_LIST=os.environ.get("TORCH_CUDA_ARCH_LIST", "9.0")))
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    info = json.loads((root / package / "_build_info.json").read_text())
    assert info["torch"] == torch.__version__
    assert info["with_cuda"] is want_cuda, "CUDA toolkit present but the build fell back to CPU-only"
    assert "warning" not in build.stderr.lower().replace("userwarning", ""), build.stderr[-3000:]

    tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=root,
                           capture_output=True, text=True, timeout=1800)
    assert tests.returncode == 0, tests.stdout[-5000:]
    assert " passed" in tests.stdout and " failed" not in tests.stdout
    return root, package, info


def _import_error(root, package: str, info: dict) -> str:
    """The last line of `import <package>` after its build record was replaced by ``info``."""
    (root / package / "_build_info.json").write_text(json.dumps(info))
    done = subprocess.run([sys.executable, "-c", f"import {package}"], cwd=root, capture_output=True, text=True)
    assert done.returncode != 0
    return done.stderr.strip().splitlines()[-1]


@pytest.mark.build
def test_generate_build_and_test_a_fresh_op(tmp_path):
    """The default: the stable ABI. Built, tested, audited, wheeled as cp310-abi3, guarded."""
    root, package, info = _generate_and_build(
        tmp_path, "soft-gate", "--inputs", "x,g", "--expr", "x * sigmoid(1.702 * g) + tanh(x) / 4")
    assert info["stable_abi"] is True and info["torch_target_version"] == "2.10"
    (library,) = (root / package).glob("_C*.so")
    audit(library)  # only the stable C shim, only PyInit__C exported, an .abi3.so

    # The wheel installs on every CPython >= 3.10 and every torch >= the target (objects reused: no recompile).
    wheel = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "-q", "-w",
                            str(tmp_path / "dist"), str(root)], capture_output=True, text=True, timeout=1800,
                           env=_env(TORCH_CUDA_ARCH_LIST=os.environ.get("TORCH_CUDA_ARCH_LIST", "9.0")))
    assert wheel.returncode == 0, wheel.stdout[-3000:] + wheel.stderr[-3000:]
    (built,) = (tmp_path / "dist").glob("*.whl")
    assert built.name.startswith("soft_gate-0.1.0-cp310-abi3-"), built.name
    with zipfile.ZipFile(built) as archive:
        metadata = archive.read("soft_gate-0.1.0.dist-info/METADATA").decode()
        tags = archive.read("soft_gate-0.1.0.dist-info/WHEEL").decode()
        assert "soft_gate/_C.abi3.so" in archive.namelist()
    assert "Tag: cp310-abi3-" in tags
    assert "Requires-Python: >=3.10" in metadata and "Requires-Dist: torch>=2.10" in metadata

    # The guard: a binary whose stable-ABI target is newer than the running torch is refused.
    last = _import_error(root, package, {**info, "torch_target_version": "99.0"})
    assert "ImportError: soft_gate needs torch >= 99.0" in last
    assert f"but torch {torch.__version__} is installed" in last and "pip install --no-build-isolation -e" in last
    # ... and a build record from another torch is fine, newer or older, as long as the target is met.
    for other in ("2.10.0", "2.99.0"):
        (root / package / "_build_info.json").write_text(json.dumps({**info, "torch": other}))
        done = subprocess.run([sys.executable, "-c", f"import {package}"], cwd=root, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.build
def test_full_abi_op_builds_and_keeps_its_exact_guard(tmp_path):
    """--abi full: the ATen code of template version 3, built and tested, with the exact-match guard."""
    root, package, info = _generate_and_build(tmp_path, "aten-gate", "--inputs", "x,g", "--expr", "x * sigmoid(g)",
                                              "--abi", "full")
    assert "torch_target_version" not in info
    (library,) = (root / package).glob("_C*.so")
    assert not library.name.endswith(".abi3.so")
    offending = stable_abi_violations(library)  # the audit sees the ATen calls
    assert any(name.startswith("at::") for name in offending) and any(name.startswith("c10::") for name in offending)

    last = _import_error(root, package, {**info, "torch": "1.0.0"})
    assert "ImportError: aten_gate was built against torch 1.0.0" in last
    assert f"but torch {torch.__version__}" in last and "pip install --no-build-isolation -e" in last


@pytest.mark.build
def test_a_rowwise_op_with_a_shared_term_builds_and_passes_its_tests(tmp_path):
    """A gated RMSNorm (Mamba2's): x * silu(z), normalised. Its gate is a per-element term that the
    reduction and the output both read, so the generated formula computes it once (_s0, kept in
    registers by the CUDA kernel; the CPU loop and the multi-pass kernel compute it where it is read);
    its backward does the same with the terms its own steps share. Built with nvcc, its own tests
    passing, the gradients included (their CUDA half needs a GPU)."""
    gate = "x * z * sigmoid(z)"
    root, package, _ = _generate_and_build(
        tmp_path, "gated-rms", "--kind", "rowwise", "--inputs", "x,z", "--weights", "w",
        "--expr", f"{gate} * rsqrt(mean(({gate}) ** 2) + 1e-5) * w")
    header = (root / package / "csrc" / "gated_rms" / "gated_rms.h").read_text()
    assert "constexpr int kShared = 1;" in header and "return x * z * opmath::sigmoid(z);" in header
    assert "_s0 * opmath::rsqrt(_r[0] + acc_t(1e-05)) * w" in header
    # its backward shares sigmoid(z) among its two reductions and the gradients (GradOp::kShared)
    assert "constexpr int kGradShared = 1;" in header and "  return opmath::sigmoid(z);" in header


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
    (jit_library,) = (root / "build" / "jit").rglob("jit_op_jit.so")
    assert stable_abi_violations(jit_library) == []  # JIT builds use the same flags: stable ABI too
    header = root / "jit_op" / "csrc" / "jit_op" / "jit_op.h"
    header.write_text(header.read_text().replace("return x * y;", "return x * y + acc_t(1);"))
    second = run()
    assert "RESULT [4.0, 7.0, 10.0, 13.0]" in second
    third = run()  # nothing changed: the cached build is reused
    print(f"\nJIT cold build: {first}\nJIT after editing the kernel body: {second}\nJIT unchanged: {third}")


@pytest.mark.build
def test_a_rowwise_op_with_a_masked_gradient_builds_and_passes_its_tests(tmp_path):
    """Two maxima that are not softmax stabilizers: the gradient reads the masks [f == max(f)], which must see
    the bits of f the reduction saw. The first's f reads only the columns: it is the backward's shared term
    _s0, computed once per element with exact sums and products (opmath::add_rn, mul_rn, ipow<N, true>: no
    fused multiply-add wherever it is computed again). The second's reads mean(x): it is the term _s1 of
    level 3, exact too, computed from _s0 once mean(x) is known. Built with nvcc and g++ (whose host versions are calls
    it cannot fuse across), its own tests passing: on the CPU the masks must still find every row's
    maximum, or the gradients fail their bound."""
    root, package, _ = _generate_and_build(
        tmp_path, "max-gap", "--kind", "rowwise", "--inputs", "x,y", "--weights", "w",
        "--expr", "(x * y - max(x * y * w + x ** 3)) * w + y * max(x * y * w + x ** 3 - mean(x))")
    header = (root / package / "csrc" / "max_gap" / "max_gap.h").read_text()
    assert ("OPMATH_FN acc_t max_gap_grad_shared0(acc_t _grad, acc_t x, acc_t y, acc_t w) {\n"
            "  return opmath::add_rn(opmath::mul_rn(opmath::mul_rn(x, y), w), opmath::ipow<3, true>(x));") in header
    # (the reductions numbered pass by pass: mean(x) is _r[2], the second maximum _r[5])
    assert "  return opmath::sub_rn(_s0, _r[2]);" in header
    assert "(_s1 == _r[5] ? acc_t(1.0) : acc_t(0.0))" in header and "static constexpr int kSharedLevel[kShared] = {0, 3};" in header
