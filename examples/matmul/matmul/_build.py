"""Build configuration of matmul, shared by setup.py and JIT mode (KERNELGEN_JIT=1).

One place for the arch list, the compiler flags, the source files and the CUDA_HOME logic, so
that a prebuilt `pip install` and a JIT build compile the same code the same way. This module must
not import the rest of the package (setup.py loads it by path, before the extension exists) nor
torch.utils.cpp_extension at import time (see configure_environment).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Optional

PACKAGE = "matmul"
#: The torch.ops namespace of every op below, and the ops themselves. The loader checks, before it
#: loads the compiled code, that no other library in the process already defines one of them.
NAMESPACE = "matmul"
OPS = (
    "matmul",
)
#: The ops compiled into _C (the CUDA C++ backend). Triton ops are Python only: a package with no
#: C++ op builds no extension at all, so it installs instantly and needs no compiler.
EXTENSION_OPS = (
    "matmul",
)
HAS_EXTENSION = bool(EXTENSION_OPS)
PACKAGE_DIR = Path(__file__).resolve().parent
ROOT = PACKAGE_DIR.parent
BUILD_INFO = PACKAGE_DIR / "_build_info.json"

# GPU architectures to build for, in TORCH_CUDA_ARCH_LIST syntax: machine code for each listed
# compute capability, and "+PTX" adds PTX for the last one, which newer GPUs compile when the
# module loads. TORCH_CUDA_ARCH_LIST in the environment overrides it; a single arch (for example
# "9.0" on an H100) builds about twice as fast. Never put an -arch/-gencode flag in NVCC_FLAGS:
# torch then silently ignores this list.
ARCH_LIST = "8.0;9.0+PTX"

# -g0 cancels the -g that Python's own build flags (sysconfig) add to every host compile: debug
# info for the ATen headers costs a quarter of the .cpp compile time. DEBUG=1 below brings it back.
CXX_FLAGS = ["-O3", "-Wall", "-g0"]
NVCC_FLAGS = ["-O3"]
# DEBUG=1: host debug info without optimization, and device line info so that compute-sanitizer
# and ncu can point at source lines (-G would also disable device optimizations).
CXX_DEBUG_FLAGS = ["-g", "-O0", "-Wall"]
NVCC_DEBUG_FLAGS = ["-g", "-O0", "-lineinfo"]

# The sources are every .cpp and .cu file under csrc/: csrc/_module.cpp (the module init) and each
# op's csrc/<op>/ directory, so an op added by `kernelgen add` (or a file you add) is built without
# editing this file. Each op's CUDA side is two files: the tensor code (<op>_cuda.cpp, host
# compiler, ATen) and the kernel (<op>_kernel.cu, nvcc, no ATen tensor headers, which nvcc is slow
# to parse). Files under csrc/*/cuda/ are CUDA-only. Every basename is distinct: a JIT build names
# object files by basename, and <op>.cpp next to <op>.cu would both compile to <op>.o.
CSRC = PACKAGE_DIR / "csrc"


def log(message: str) -> None:
    print(f"{PACKAGE}: {message}", file=sys.stderr)


def _toolkit_at(path: Optional[str]) -> Optional[str]:
    if path and (Path(path) / "bin" / "nvcc").exists() and (Path(path) / "include" / "cuda_runtime.h").exists():
        return str(Path(path))
    return None


def find_cuda_home() -> Optional[str]:
    """The CUDA toolkit's root, or None.

    torch guesses CUDA_HOME as the parent of the directory holding `nvcc`, which is wrong when
    `nvcc` is a wrapper script or link in /usr/local/bin (it guesses /usr/local, and the link
    fails with "cannot find -lcudart"). So: an explicit CUDA_HOME/CUDA_PATH wins; otherwise ask
    nvcc itself where it lives (`--dryrun` prints its real bin directory as _HERE_); otherwise
    follow links; otherwise try /usr/local/cuda.
    """
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            found = _toolkit_at(os.environ[var])
            if found is None:
                log(f"warning: {var}={os.environ[var]} has no bin/nvcc and include/cuda_runtime.h")
            return found
    nvcc = shutil.which("nvcc")
    if nvcc:
        try:
            out = subprocess.run(
                [nvcc, "--dryrun", "-c", "-x", "cu", os.devnull, "-o", os.devnull],
                capture_output=True, text=True, timeout=60, check=False,
            )
            match = re.search(r"^#\$ _HERE_=(.+)$", out.stdout + out.stderr, re.MULTILINE)
            if match:
                found = _toolkit_at(str(Path(match.group(1).strip()).parent))
                if found:
                    return found
        except (OSError, subprocess.SubprocessError):
            pass
        found = _toolkit_at(str(Path(nvcc).resolve().parent.parent))
        if found:
            return found
    return _toolkit_at("/usr/local/cuda")


def configure_environment(jit: bool = False) -> bool:
    """Decide whether to build the CUDA kernel, and set CUDA_HOME / TORCH_CUDA_ARCH_LIST.

    Returns True when the CUDA kernel will be built. Call it before importing
    torch.utils.cpp_extension, which reads CUDA_HOME at import time.
    """
    require = os.environ.get("KERNELGEN_REQUIRE_CUDA") == "1"

    def cpu_only(reason: str) -> bool:
        if require:
            raise SystemExit(f"{PACKAGE}: error: KERNELGEN_REQUIRE_CUDA=1 but {reason}")
        log(f"note: building the CPU implementation only: {reason}")
        return False

    if os.environ.get("KERNELGEN_CPU_ONLY") == "1":
        return cpu_only("KERNELGEN_CPU_ONLY=1 is set")
    import torch

    if torch.version.cuda is None:
        return cpu_only(f"torch {torch.__version__} is a CPU-only build, which cannot link CUDA code")
    cuda_home = find_cuda_home()
    if cuda_home is None:
        return cpu_only("no CUDA toolkit found (no nvcc on PATH, CUDA_HOME unset, no /usr/local/cuda)")
    os.environ["CUDA_HOME"] = cuda_home
    if "torch.utils.cpp_extension" in sys.modules:  # imported earlier: correct its cached guess
        sys.modules["torch.utils.cpp_extension"].CUDA_HOME = cuda_home  # type: ignore[attr-defined]
    if not jit or not torch.cuda.is_available():
        # A JIT build without TORCH_CUDA_ARCH_LIST targets the visible GPU only, which is what an
        # edit-and-rerun loop wants; a package build (or a machine with no GPU to ask) must not
        # depend on the GPU of the build machine.
        os.environ.setdefault("TORCH_CUDA_ARCH_LIST", ARCH_LIST)
    log(f"building with CUDA from {cuda_home} for TORCH_CUDA_ARCH_LIST={os.environ.get('TORCH_CUDA_ARCH_LIST', '(visible GPU)')}")
    return True


def compile_flags() -> tuple[list[str], list[str]]:
    debug = os.environ.get("DEBUG") == "1"
    return (CXX_DEBUG_FLAGS if debug else CXX_FLAGS), (NVCC_DEBUG_FLAGS if debug else NVCC_FLAGS)


def sources(with_cuda: bool) -> list[Path]:
    """The files to compile, sorted (a stable order keeps ninja's incremental builds incremental)."""
    found = sorted(path for pattern in ("*.cpp", "*.cu") for path in CSRC.rglob(pattern))
    return [path for path in found if with_cuda or ("cuda" not in path.relative_to(CSRC).parts[:-1] and path.suffix != ".cu")]


def extension(with_cuda: bool, relative_to: Path) -> Any:
    """The setuptools Extension for matmul._C (every op of the package)."""
    from torch.utils.cpp_extension import CppExtension, CUDAExtension

    cxx, nvcc = compile_flags()
    args: dict[str, list[str]] = {"cxx": cxx}
    if with_cuda:
        args["nvcc"] = nvcc
    cls = CUDAExtension if with_cuda else CppExtension
    files = [str(path.relative_to(relative_to)) for path in sources(with_cuda)]
    return cls(name=f"{PACKAGE}._C", sources=files, extra_compile_args=args)


def current_build_info(with_cuda: bool) -> dict[str, Any]:
    import torch

    return {
        "torch": torch.__version__,
        "cuda": torch.version.cuda if with_cuda else None,
        "with_cuda": with_cuda,
        "arch_list": os.environ.get("TORCH_CUDA_ARCH_LIST") if with_cuda else None,
    }


def write_build_info(with_cuda: bool) -> None:
    """Record what the extension is built against; the loader refuses a mismatched torch."""
    BUILD_INFO.write_text(json.dumps(current_build_info(with_cuda), indent=2) + "\n")


def rebuild_command() -> str:
    return f"pip install --no-build-isolation -e {ROOT}"
