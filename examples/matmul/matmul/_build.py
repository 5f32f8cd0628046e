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

# ---- LibTorch stable ABI ----------------------------------------------------------------------
# The C++ includes only torch/csrc/stable and torch/headeronly, so the binary calls libtorch through
# its stable C shim alone (aoti_torch_*, torch_*): built once, it loads on this torch and on every
# later one. The oldest torch it loads on is TORCH_TARGET_VERSION: the headers leave out every API
# newer than it, and the loader refuses an older torch. 2.10 is the oldest with everything the ops
# use (torch::stable::empty, contiguous, parallel_for, typed data pointers, STD_CUDA_CHECK). Raise it
# to use newer API (2.12: op tags in m.def; 2.13: Stream::nativeHandle()); it is the one place the
# version is written (the loader and the build record read it from here).
TORCH_TARGET_VERSION = (2, 10)
# The module init (csrc/_module.cpp) uses CPython's limited API, so one binary serves CPython 3.10
# and later (wheel tag cp310-abi3). torch's BuildExtension adds -DPy_LIMITED_API for
# py_limited_api=True with this very spelling; another spelling of the same number would make the
# compiler warn that the macro is redefined.
PY_LIMITED_API = "0x030A0000"


def target_version() -> str:
    """TORCH_TARGET_VERSION as torch prints versions: "2.10"."""
    return "%d.%d" % TORCH_TARGET_VERSION


def target_version_hex() -> str:
    """TORCH_TARGET_VERSION as torch/csrc/stable/version.h encodes it: major << 56 | minor << 48
    (a decimal such as 2.10 is a preprocessor error)."""
    return f"0x{(TORCH_TARGET_VERSION[0] << 56) | (TORCH_TARGET_VERSION[1] << 48):016x}"


def stable_defines(with_cuda: bool) -> list[str]:
    """The defines of every compile, host and nvcc. USE_CUDA declares the CUDA entries of the
    stable C shim (aoti_torch_get_current_cuda_stream, and torch_c10_cuda_check_msg behind
    STD_CUDA_CHECK); they exist only in a CUDA build."""
    defines = [f"-DTORCH_TARGET_VERSION={target_version_hex()}", f"-DPy_LIMITED_API={PY_LIMITED_API}"]
    return defines + (["-DUSE_CUDA"] if with_cuda else [])


# -g0 cancels the -g that Python's own build flags (sysconfig) add to every host compile: debug
# info for the torch headers costs compile time. DEBUG=1 below brings it back.
# -fvisibility=hidden: the library exports PyInit__C only. The inline functions of the headers
# (c10::Half's operators live outside the torch::stable namespaces, which are hidden already) and
# our own symbols then cannot interpose with those of another extension built with other headers.
CXX_FLAGS = ["-O3", "-Wall", "-g0", "-fvisibility=hidden"]
NVCC_FLAGS = ["-O3", "-Xcompiler=-fvisibility=hidden"]
# DEBUG=1: host debug info without optimization, and device line info so that compute-sanitizer
# and ncu can point at source lines (-G would also disable device optimizations).
CXX_DEBUG_FLAGS = ["-g", "-O0", "-Wall", "-fvisibility=hidden"]
NVCC_DEBUG_FLAGS = ["-g", "-O0", "-lineinfo", "-Xcompiler=-fvisibility=hidden"]

# The sources are every .cpp and .cu file under csrc/: csrc/_module.cpp (the module init) and each
# op's csrc/<op>/ directory, so an op added by `kernelgen add` (or a file you add) is built without
# editing this file. Each op's CUDA side is two files: the tensor code (<op>_cuda.cpp, host
# compiler, the stable tensor API) and the kernel (<op>_kernel.cu, nvcc, no tensor headers, which
# nvcc is slow to parse). Files under csrc/*/cuda/ are CUDA-only. Every basename is distinct: a JIT
# build names object files by basename, and <op>.cpp next to <op>.cu would both compile to <op>.o.
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


# ---- the Hopper path of the matmul ops (CUTLASS) ----------------------------------------------
# csrc/<op>/cuda/<op>_sm90.cu holds a CUTLASS 3.x GEMM for float16/bfloat16 (TMA, wgmma). wgmma needs
# sm_90a machine code, which TORCH_CUDA_ARCH_LIST's "9.0" does not produce: where the list has 9.0,
# this module passes the -gencode flags itself, with sm_90a in place of sm_90 (the same number of
# device compiles; sm_90a runs on H100/H200, as sm_90 does), PTX as the list says, and defines
# KG_SM90A, which lets the launcher take that path. The CUTLASS headers (header-only C++) are looked
# for in KERNELGEN_CUTLASS_DIR (a directory holding include/cutlass and tools/util/include), then in
# an installed nvidia-cutlass wheel, then in the copy a build on this machine downloaded before
# (cutlass_cache()); failing all three, the build downloads that copy itself: the nvidia-cutlass
# wheel of CUTLASS_VERSION, through pip (your index and proxy settings), checked against
# CUTLASS_WHEEL_SHA256, its headers unpacked once for every package. With no network either, the
# build leaves the Hopper path out, says so on one line, and the hand-written kernels serve every
# GPU. KERNELGEN_NO_CUTLASS=1 builds the hand-written kernels only.
SM90_SOURCE_SUFFIX = "_sm90.cu"
CUTLASS_VERSION = "4.2.0.0"
CUTLASS_WHEEL_SHA256 = "f9599ada45c7bcb6bf53f7d3f0a7d154183e53451c01bfa59eecd37dd4a693f6"
# The directories of the wheel that hold the headers (its Python tools and their dependencies are
# not needed to build: only these are unpacked).
_CUTLASS_WHEEL_ROOT = "cutlass_library/source/"
_CUTLASS_HEADER_DIRS = ("include/", "tools/util/include/")


def _cutlass_headers_at(root: Path) -> Optional[list[str]]:
    dirs = [root / "include", root / "tools" / "util" / "include"]
    return [str(d) for d in dirs] if (dirs[0] / "cutlass" / "cutlass.h").is_file() else None


def cutlass_cache() -> Path:
    """Where builds on this machine keep the CUTLASS headers they download (one copy per version)."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "kernelgen" / f"cutlass-{CUTLASS_VERSION}"


def cutlass_dirs() -> Optional[list[str]]:
    """The CUTLASS include directories found without downloading anything, or None."""
    root = os.environ.get("KERNELGEN_CUTLASS_DIR")
    if root:
        return _cutlass_headers_at(Path(root))
    import importlib.util

    spec = importlib.util.find_spec("cutlass_library")  # locates the package without importing it
    if spec is not None and spec.submodule_search_locations:
        found = _cutlass_headers_at(Path(next(iter(spec.submodule_search_locations))) / "source")
        if found:
            return found
    return _cutlass_headers_at(cutlass_cache())


def fetch_cutlass() -> Optional[str]:
    """Download the CUTLASS headers into cutlass_cache(); None when they are there, else why not."""
    import hashlib
    import tempfile
    import zipfile

    target = cutlass_cache()
    log(f"downloading the CUTLASS {CUTLASS_VERSION} headers for the matmul ops' Hopper path "
        f"(nvidia-cutlass, 6 MB, once per machine) into {target}")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=".cutlass-", dir=target.parent) as tmp:
            # --no-deps: the wheel's Python tools need packages the headers do not.
            result = subprocess.run(
                [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--no-input",
                 "--disable-pip-version-check", "-q", "-d", tmp, f"nvidia-cutlass=={CUTLASS_VERSION}"],
                capture_output=True, text=True, timeout=600, check=False,
            )
            wheels = list(Path(tmp).glob("nvidia_cutlass-*.whl"))
            if result.returncode != 0 or len(wheels) != 1:
                said = [line for line in (result.stderr + result.stdout).splitlines() if line.strip()]
                return f"pip download failed: {said[-1].strip() if said else f'exit code {result.returncode}'}"
            digest = hashlib.sha256(wheels[0].read_bytes()).hexdigest()
            if digest != CUTLASS_WHEEL_SHA256:
                return f"{wheels[0].name} has SHA-256 {digest}, not {CUTLASS_WHEEL_SHA256}"
            unpacked = Path(tmp) / "cutlass"
            with zipfile.ZipFile(wheels[0]) as wheel:
                for name in wheel.namelist():
                    relative = name[len(_CUTLASS_WHEEL_ROOT):]
                    if name.startswith(_CUTLASS_WHEEL_ROOT) and relative.startswith(_CUTLASS_HEADER_DIRS) \
                            and not name.endswith("/") and ".." not in Path(relative).parts:
                        (unpacked / relative).parent.mkdir(parents=True, exist_ok=True)
                        (unpacked / relative).write_bytes(wheel.read(name))
            if _cutlass_headers_at(unpacked) is None:
                return f"{wheels[0].name} holds no {_CUTLASS_WHEEL_ROOT}include/cutlass/cutlass.h"
            try:
                unpacked.rename(target)  # one step: a build never sees half the headers
            except OSError:
                if _cutlass_headers_at(target) is None:  # not a build beside this one that got there first
                    raise
    except (OSError, subprocess.SubprocessError, zipfile.BadZipFile) as err:
        return f"{type(err).__name__}: {err}"
    return None


def _arch_entries() -> list[str]:
    """The arch list of this build: TORCH_CUDA_ARCH_LIST, else (a JIT build) the visible GPUs'."""
    text = os.environ.get("TORCH_CUDA_ARCH_LIST", "").replace(" ", ";")
    if not text:
        import torch

        text = ";".join(sorted({"%d.%d" % torch.cuda.get_device_capability(i) for i in range(torch.cuda.device_count())}))
    return [entry for entry in text.split(";") if entry]


_SM90_FLAGS: dict[tuple[Optional[str], ...], Optional[list[str]]] = {}
_SM90_LEFT_OUT: dict[tuple[Optional[str], ...], str] = {}


def _sm90_key() -> tuple[Optional[str], ...]:
    return tuple(os.environ.get(name) for name in (
        "TORCH_CUDA_ARCH_LIST", "KERNELGEN_NO_CUTLASS", "KERNELGEN_CUTLASS_DIR", "KERNELGEN_REQUIRE_CUDA"))


def sm90_flags() -> Optional[list[str]]:
    """The nvcc flags of a build with the Hopper path, or None when this build has no 9.0 target,
    KERNELGEN_NO_CUTLASS=1, or no CUTLASS headers to be had (see sm90_left_out). Worked out once per
    environment: the flags, the source list and the build record all ask."""
    key = _sm90_key()
    if key not in _SM90_FLAGS:
        _SM90_FLAGS[key] = _sm90_flags(key)
    flags = _SM90_FLAGS[key]
    return None if flags is None else list(flags)


def sm90_left_out() -> Optional[str]:
    """Why this build leaves the Hopper path out for want of CUTLASS headers, or None. The build record
    keeps it, where the tests' skip reason shows it: pip hides the output of a build that succeeds."""
    sm90_flags()
    return _SM90_LEFT_OUT.get(_sm90_key())


def _sm90_flags(key: tuple[Optional[str], ...]) -> Optional[list[str]]:
    entries = _arch_entries()
    if os.environ.get("KERNELGEN_NO_CUTLASS") == "1" or not any(entry.split("+")[0] in ("9.0", "9.0a") for entry in entries):
        return None
    dirs = cutlass_dirs()
    if dirs is None and os.environ.get("KERNELGEN_CUTLASS_DIR"):
        sys.exit(f"{PACKAGE}: KERNELGEN_CUTLASS_DIR={os.environ['KERNELGEN_CUTLASS_DIR']} holds no "
                 "include/cutlass/cutlass.h (unset it to use the nvidia-cutlass headers)")
    if dirs is None:
        failure = fetch_cutlass()
        dirs = cutlass_dirs()
        if dirs is None:
            left_out = (f"the matmul ops' Hopper (CUTLASS) path is left out: no CUTLASS headers, and downloading "
                        f"them failed ({failure}); to build it, pip install --no-deps nvidia-cutlass=={CUTLASS_VERSION} "
                        "(or set KERNELGEN_CUTLASS_DIR) and rebuild")
            if os.environ.get("KERNELGEN_REQUIRE_CUDA") == "1":
                sys.exit(f"{PACKAGE}: error: KERNELGEN_REQUIRE_CUDA=1 but {left_out}")
            log(f"note: {left_out}")
            _SM90_LEFT_OUT[key] = left_out
            return None
    gencode = []
    for entry in entries:
        version = entry.split("+")[0].rstrip("a")
        if not re.fullmatch(r"\d+\.\d+", version):  # a named arch ("Hopper"): torch's flags, no Hopper path
            log(f"note: {entry!r} in TORCH_CUDA_ARCH_LIST is not a number: building without the CUTLASS path")
            return None
        num = version.replace(".", "")
        sass = "90a" if num == "90" else num + ("a" if entry.split("+")[0].endswith("a") else "")
        gencode.append(f"-gencode=arch=compute_{sass},code=sm_{sass}")
        if entry.endswith("+PTX"):
            gencode.append(f"-gencode=arch=compute_{num},code=compute_{num}")
    # 2908: CUTLASS's Blackwell headers, pulled in by its collective builders, capture `this` implicitly.
    # --threads and --split-compile: nvcc runs the arch passes of a file in parallel, and splits the
    # optimizer's work within a pass. The CUTLASS file's sm_90a pass is most of the build (about 95 s of
    # 160 on one core): split, it shares the cores with the other passes and files.
    return sorted(set(gencode)) + ["-DKG_SM90A=1", "--expt-relaxed-constexpr", "-diag-suppress=2908", "--threads=0",
                                   "--split-compile=0"] + [
        f"-I{d}" for d in dirs]


def compile_flags(with_cuda: bool) -> tuple[list[str], list[str]]:
    debug = os.environ.get("DEBUG") == "1"
    defines = stable_defines(with_cuda)
    sm90 = (sm90_flags() or []) if with_cuda else []
    return (CXX_DEBUG_FLAGS if debug else CXX_FLAGS) + defines, (NVCC_DEBUG_FLAGS if debug else NVCC_FLAGS) + defines + sm90


def sources(with_cuda: bool) -> list[Path]:
    """The files to compile, sorted (a stable order keeps ninja's incremental builds incremental)."""
    found = sorted(path for pattern in ("*.cpp", "*.cu") for path in CSRC.rglob(pattern))
    if not with_cuda or sm90_flags() is None:  # the Hopper path is compiled only for a 9.0 target
        found = [path for path in found if not path.name.endswith(SM90_SOURCE_SUFFIX)]
    return [path for path in found if with_cuda or ("cuda" not in path.relative_to(CSRC).parts[:-1] and path.suffix != ".cu")]


def extension(with_cuda: bool, relative_to: Path) -> Any:
    """The setuptools Extension for matmul._C (every op of the package)."""
    from torch.utils.cpp_extension import CppExtension, CUDAExtension

    cxx, nvcc = compile_flags(with_cuda)
    args: dict[str, list[str]] = {"cxx": cxx}
    if with_cuda:
        args["nvcc"] = nvcc
    cls = CUDAExtension if with_cuda else CppExtension
    files = [str(path.relative_to(relative_to)) for path in sources(with_cuda)]
    # py_limited_api=True: the module is built as _C.abi3.so, and torch does not link libtorch_python
    # (whose API is not stable). The wheel's abi3 tag comes from setup.py's bdist_wheel option.
    return cls(name=f"{PACKAGE}._C", sources=files, extra_compile_args=args, py_limited_api=True)


def current_build_info(with_cuda: bool) -> dict[str, Any]:
    import torch

    return {
        # The torch whose headers built it (for information: every torch >= the target loads it).
        "torch": torch.__version__,
        # The oldest torch the binary loads on: the stable ABI version it was compiled for.
        "torch_target_version": target_version(),
        "stable_abi": True,
        "py_limited_api": PY_LIMITED_API,
        # The CUDA runtime is outside the stable ABI: the binary needs a libcudart of this major.
        "cuda": torch.version.cuda if with_cuda else None,
        "with_cuda": with_cuda,
        "arch_list": os.environ.get("TORCH_CUDA_ARCH_LIST") if with_cuda else None,
        # Whether the matmul ops' CUTLASS Hopper path was compiled (the tests check which kernel runs).
        "cutlass_sm90": with_cuda and sm90_flags() is not None,
        "cutlass_sm90_left_out": sm90_left_out() if with_cuda else None,
    }


def write_build_info(with_cuda: bool) -> None:
    """Record what the extension is built for; the loader refuses a torch older than the target."""
    BUILD_INFO.write_text(json.dumps(current_build_info(with_cuda), indent=2) + "\n")


def rebuild_command() -> str:
    return f"pip install --no-build-isolation -e {ROOT}"
