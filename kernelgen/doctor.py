"""`kernelgen doctor`: check the toolchain a generated op needs, and say how to fix each problem.

Every check is a function of a :class:`Probe`, the only thing that looks at the machine (PATH,
environment, subprocesses, files, torch). Tests pass a fake Probe, so each check is tested against
the situation it is about rather than the machine the tests happen to run on.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

OK, WARN, FAIL = "ok", "warn", "fail"


@dataclass
class Check:
    name: str
    status: str
    detail: str
    fix: str = ""


@dataclass
class TorchInfo:
    version: str
    cuda: str | None  # None for a CPU-only build
    gpus: list[tuple[str, tuple[int, int]]] = field(default_factory=list)  # (name, capability)


class Probe:
    """Everything the checks may ask of the machine. Override in tests."""

    def __init__(self) -> None:
        self.environ: dict[str, str] = dict(os.environ)
        self.python_version = sys.version_info[:3]

    def which(self, name: str) -> str | None:
        return shutil.which(name, path=self.environ.get("PATH"))

    def run(self, argv: list[str]) -> str | None:
        """stdout + stderr of argv, or None if it cannot run."""
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=self.environ)
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout + done.stderr

    def exists(self, path: str) -> bool:
        return Path(path).exists()

    def torch(self) -> TorchInfo | None:
        try:
            import torch
        except ImportError:
            return None
        gpus = []
        if torch.cuda.is_available():
            for index in range(torch.cuda.device_count()):
                gpus.append((torch.cuda.get_device_name(index), torch.cuda.get_device_capability(index)))
        return TorchInfo(torch.__version__, torch.version.cuda, gpus)


def _major(version: str | None) -> str | None:
    return version.split(".")[0] if version else None


def find_nvcc(probe: Probe) -> str | None:
    for var in ("CUDA_HOME", "CUDA_PATH"):
        home = probe.environ.get(var)
        if home and probe.exists(f"{home}/bin/nvcc"):
            return f"{home}/bin/nvcc"
    return probe.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if probe.exists("/usr/local/cuda/bin/nvcc") else None)


def toolkit_root(probe: Probe, nvcc: str) -> str:
    """Where the toolkit really is: nvcc --dryrun names its own bin directory (_HERE_)."""
    out = probe.run([nvcc, "--dryrun", "-c", "-x", "cu", os.devnull, "-o", os.devnull]) or ""
    match = re.search(r"^#\$ _HERE_=(.+)$", out, re.MULTILINE)
    if match:
        return str(Path(match.group(1).strip()).parent)
    return str(Path(nvcc).parent.parent)


def torch_guess(probe: Probe) -> str | None:
    """CUDA_HOME as torch.utils.cpp_extension guesses it (env, then `which nvcc`/.., then /usr/local/cuda)."""
    home = probe.environ.get("CUDA_HOME") or probe.environ.get("CUDA_PATH")
    if home:
        return home
    nvcc = probe.which("nvcc")
    if nvcc:
        return str(Path(nvcc).parent.parent)
    return "/usr/local/cuda" if probe.exists("/usr/local/cuda") else None


def check_python(probe: Probe) -> Check:
    version = ".".join(map(str, probe.python_version))
    if tuple(probe.python_version[:2]) < (3, 10):
        return Check("python", FAIL, f"Python {version}", "use Python 3.10 or newer")
    return Check("python", OK, f"Python {version}")


def check_torch(probe: Probe, info: TorchInfo | None) -> Check:
    if info is None:
        return Check("torch", FAIL, "torch is not installed", "pip install torch  (a CUDA build, matching your nvcc)")
    if info.cuda is None:
        return Check("torch", WARN, f"torch {info.version} is a CPU-only build: it cannot link CUDA code",
                     "pip install a CUDA build of torch (e.g. the default Linux wheel from PyPI)")
    return Check("torch", OK, f"torch {info.version}, CUDA {info.cuda}")


def check_nvcc(probe: Probe, info: TorchInfo | None) -> Check:
    nvcc = find_nvcc(probe)
    if nvcc is None:
        return Check("nvcc", FAIL, "nvcc not found (not on PATH, no $CUDA_HOME/bin/nvcc, no /usr/local/cuda)",
                     "install the CUDA toolkit, or export CUDA_HOME=/path/to/cuda")
    out = probe.run([nvcc, "--version"]) or ""
    match = re.search(r"release (\d+)\.(\d+)", out)
    if not match:
        return Check("nvcc", FAIL, f"{nvcc} does not report a version", "reinstall the CUDA toolkit")
    version = f"{match.group(1)}.{match.group(2)}"
    torch_cuda = info.cuda if info else None
    if torch_cuda and _major(torch_cuda) != match.group(1):
        return Check("nvcc", FAIL, f"nvcc {version} at {nvcc}, but torch is built with CUDA {torch_cuda}",
                     f"install CUDA {_major(torch_cuda)}.x, or a torch built for CUDA {match.group(1)}")
    return Check("nvcc", OK, f"nvcc {version} at {nvcc}")


def check_cuda_home(probe: Probe) -> Check:
    nvcc = find_nvcc(probe)
    if nvcc is None:
        return Check("CUDA_HOME", WARN, "no toolkit to check (see nvcc)")
    real = toolkit_root(probe, nvcc)
    guess = torch_guess(probe)
    if guess and Path(guess) != Path(real) and not probe.exists(f"{guess}/include/cuda_runtime.h"):
        return Check("CUDA_HOME", FAIL, f"torch would use CUDA_HOME={guess}, but the toolkit is at {real} "
                     "(links then fail with 'cannot find -lcudart')",
                     f"export CUDA_HOME={real}   (ops generated by kernelgen find it themselves)")
    return Check("CUDA_HOME", OK, f"{real}" + ("" if not guess or Path(guess) == Path(real) else f" (torch's guess {guess} also works)"))


def check_cuda_files(probe: Probe) -> Check:
    nvcc = find_nvcc(probe)
    if nvcc is None:
        return Check("CUDA files", WARN, "no toolkit to check (see nvcc)")
    root = toolkit_root(probe, nvcc)
    missing = [name for name, candidates in [
        ("cuda_runtime.h", [f"{root}/include/cuda_runtime.h"]),
        ("libcudart.so", [f"{root}/lib64/libcudart.so", f"{root}/lib/libcudart.so", f"{root}/targets/x86_64-linux/lib/libcudart.so"]),
    ] if not any(probe.exists(c) for c in candidates)]
    if missing:
        return Check("CUDA files", FAIL, f"{root} lacks {', '.join(missing)}", "install the CUDA toolkit's runtime headers and libraries (cuda-cudart-dev)")
    return Check("CUDA files", OK, f"cuda_runtime.h and libcudart.so in {root}")


def check_ninja(probe: Probe) -> Check:
    ninja = probe.which("ninja")
    if ninja is None:
        return Check("ninja", WARN, "ninja not found: builds are serial and slow, and JIT mode (KERNELGEN_JIT=1) fails",
                     "pip install ninja")
    version = (probe.run([ninja, "--version"]) or "").strip()
    return Check("ninja", OK, f"ninja {version} at {ninja}")


def check_compiler(probe: Probe) -> Check:
    cxx = probe.environ.get("CXX") or probe.which("c++") or probe.which("g++")
    if cxx is None:
        return Check("C++ compiler", FAIL, "no C++ compiler (c++, g++ or $CXX)", "install g++ (e.g. apt-get install g++)")
    out = probe.run([cxx, "--version"]) or ""
    match = re.search(r"(\d+)\.(\d+)\.\d+", out)
    if "clang" not in out and match and int(match.group(1)) < 10:
        return Check("C++ compiler", FAIL, f"{cxx} is GCC {match.group(0)}; torch's headers need C++20 (GCC 10 or newer)",
                     "install GCC 10+ and export CXX=g++-N")
    return Check("C++ compiler", OK, f"{cxx}: {out.splitlines()[0] if out else 'unknown version'}")


def read_arch_list(op_dir: Path) -> str | None:
    """The ARCH_LIST of a generated op (from <pkg>/_build.py), or None."""
    for build in sorted(op_dir.glob("*/_build.py")):
        match = re.search(r'^ARCH_LIST = "([^"]*)"', build.read_text(), re.MULTILINE)
        if match:
            return match.group(1)
    return None


def arch_covers(arch_list: str, capability: tuple[int, int]) -> str:
    """'sass' if machine code for the capability is built, 'ptx' if only PTX that can JIT to it, else ''."""
    best = ""
    for item in re.split(r"[;\s]+", arch_list.strip()):
        match = re.match(r"(\d+)\.(\d+)([af]?)(\+PTX)?$", item)
        if not match:
            continue
        arch = (int(match.group(1)), int(match.group(2)))
        if arch == capability or (arch[0] == capability[0] and arch[1] <= capability[1] and not match.group(3)):
            return "sass"
        if match.group(4) and arch <= capability:
            best = "ptx"
    return best


def check_gpu(probe: Probe, info: TorchInfo | None, op_dir: Path | None) -> Check:
    if info is None or not info.gpus:
        return Check("GPU", WARN, "no CUDA GPU visible: ops build, but CUDA tests skip and nothing runs on a GPU")
    name, capability = info.gpus[0]
    cc = f"{capability[0]}.{capability[1]}"
    if op_dir is None:
        return Check("GPU", OK, f"{name}, compute capability {cc}" + (f" (+{len(info.gpus) - 1} more)" if len(info.gpus) > 1 else ""))
    arch_list = read_arch_list(op_dir)
    if arch_list is None:
        return Check("GPU", FAIL, f"{op_dir} has no <pkg>/_build.py with ARCH_LIST: not a kernelgen op",
                     "pass the directory of an op generated by kernelgen")
    override = probe.environ.get("TORCH_CUDA_ARCH_LIST")
    effective = override or arch_list
    source = "TORCH_CUDA_ARCH_LIST" if override else "ARCH_LIST"
    covered = arch_covers(effective, capability)
    if covered == "sass":
        return Check("GPU", OK, f"{name} ({cc}) is covered by {source}={effective}")
    if covered == "ptx":
        return Check("GPU", WARN, f"{name} ({cc}) runs only through PTX JIT from {source}={effective} (slow first launch)",
                     f"add {cc} to ARCH_LIST in {op_dir}/*/_build.py")
    return Check("GPU", FAIL, f"{name} ({cc}) is not covered by {source}={effective}: the kernel cannot run on it",
                 f"add {cc} to ARCH_LIST in {op_dir}/*/_build.py, or build with TORCH_CUDA_ARCH_LIST={cc}")


def run_checks(probe: Probe | None = None, op_dir: Path | None = None) -> list[Check]:
    probe = probe or Probe()
    info = probe.torch()
    return [
        check_python(probe),
        check_torch(probe, info),
        check_nvcc(probe, info),
        check_cuda_home(probe),
        check_cuda_files(probe),
        check_ninja(probe),
        check_compiler(probe),
        check_gpu(probe, info, op_dir),
    ]


def format_checks(checks: list[Check]) -> str:
    lines = []
    for check in checks:
        line = f"{check.status:<5} {check.name:<13} {check.detail}"
        if check.fix and check.status != OK:
            line += f"\n{'':<20}fix: {check.fix}"
        lines.append(line)
    return "\n".join(lines)


def to_json(checks: list[Check]) -> str:
    return json.dumps({"ok": not any(c.status == FAIL for c in checks), "checks": [asdict(c) for c in checks]}, indent=2)
