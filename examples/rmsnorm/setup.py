"""Build rmsnorm's compiled extension, rmsnorm._C: every op of the package in one library.

    pip install --no-build-isolation -e .      # or: python setup.py build_ext --inplace

The CUDA kernel is compiled when a CUDA toolkit (nvcc) is found and torch is a CUDA build. A GPU
does not need to be visible: this file never asks torch.cuda.is_available(), so it works on
build machines and in CI. Without a toolkit it builds the CPU implementation only and says so.

Environment variables:
    TORCH_CUDA_ARCH_LIST     GPU architectures to build for (default: ARCH_LIST in _build.py)
    CUDA_HOME                the CUDA toolkit (default: found from nvcc, see _build.py)
    DEBUG=1                  host -g -O0, device -lineinfo (for compute-sanitizer and ncu)
    KERNELGEN_CPU_ONLY=1     skip the CUDA kernel even if a toolkit is found
    KERNELGEN_REQUIRE_CUDA=1 fail instead of falling back to a CPU-only build (for CI)
    MAX_JOBS                 parallel compile jobs (ninja)

--no-build-isolation matters: with isolation, pip builds against a fresh torch downloaded into a
throw-away environment. The binary is on LibTorch's stable ABI and loads on any torch >= its
TORCH_TARGET_VERSION (_build.py), but the CUDA runtime it links must match the CUDA major version
of your torch, and a throw-away torch may have another one.
"""

import importlib.util
from pathlib import Path

from setuptools import setup

ROOT = Path(__file__).resolve().parent

# _build.py holds the build configuration shared with JIT mode. It is loaded by path: importing
# the rmsnorm package would try to load the very extension this file is about to build.
_spec = importlib.util.spec_from_file_location("_rmsnorm_build", ROOT / "rmsnorm" / "_build.py")
assert _spec is not None and _spec.loader is not None
build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(build)

# The oldest torch the package supports: TORCH_TARGET_VERSION in _build.py, the one place it is
# written (pyproject.toml declares the dependencies dynamic for that reason).
requirements = [f"torch>={build.target_version()}"]

if not build.HAS_EXTENSION:
    # Only Triton ops: nothing to compile, no toolkit needed.
    setup(install_requires=requirements)
else:
    # Must run before torch.utils.cpp_extension is imported: that module reads CUDA_HOME once, at
    # import time, and guesses wrong when nvcc is reached through a wrapper in /usr/local/bin.
    with_cuda = build.configure_environment()

    from torch.utils.cpp_extension import BuildExtension

    class BuildWithRecord(BuildExtension):
        """torch's build_ext, then the build record (_build_info.json) that the loader checks: written
        once the extension is built, so that a command that builds nothing (`setup.py --help`) or a
        failed build never leaves a record saying the package is built."""

        def run(self) -> None:
            super().run()
            build.write_build_info(with_cuda)  # the source tree: editable installs, build_ext --inplace
            if not self.inplace:  # a wheel: its copy of the package is under build_lib
                target = Path(self.build_lib) / "rmsnorm" / build.BUILD_INFO.name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(build.BUILD_INFO.read_bytes())

    setup(
        ext_modules=[build.extension(with_cuda, relative_to=ROOT)],
        cmdclass={"build_ext": BuildWithRecord},
        package_data={"rmsnorm": ["_build_info.json"]},
        install_requires=requirements,
        # The extension is built with py_limited_api=True (see _build.py): tag the wheel cp310-abi3,
        # so that one wheel installs on every CPython >= 3.10 (with any torch >= the target version).
        options={"bdist_wheel": {"py_limited_api": "cp310"}},
    )
