"""`kernelgen doctor`: check the toolchain a generated op needs, and say how to fix each problem.

Every check is a function of a :class:`Probe`, the only thing that looks at the machine (PATH,
environment, subprocesses, files, torch). Tests pass a fake Probe, so each check is tested against
the situation it is about rather than the machine the tests happen to run on.

Every subprocess runs in its own session with a timeout (:attr:`Probe.timeout`, 20 s): a hanging
nvcc or compiler is killed with its whole process group and reported as a failed check.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

OK, WARN, FAIL = "ok", "warn", "fail"

#: The answers file of a generated package; its top-level ``arch_list`` is the requested arch list.
ANSWERS_FILE = ".copier-answers.yml"

#: What the compiler check compiles: it needs the C++ standard headers, as torch extensions do.
_PROBE_PROGRAM = "#include <cstdio>\n#include <vector>\nint main() { std::vector<int> v{1}; std::printf(\"%d\", v[0]); }\n"


@dataclass
class Check:
    name: str
    status: str
    detail: str
    fix: str = ""


@dataclass
class RunResult:
    """How a subprocess went: ``returncode`` is None when it could not start or was killed."""

    returncode: int | None
    output: str = ""  # stdout and stderr together
    timed_out: bool = False
    error: str = ""  # why it could not start

    @property
    def ok(self) -> bool:
        return self.returncode == 0


@dataclass
class TorchInfo:
    version: str
    cuda: str | None  # None for a CPU-only build
    gpus: list[tuple[str, tuple[int, int]]] = field(default_factory=list)  # (name, capability)


class Probe:
    """Everything the checks may ask of the machine. Override in tests."""

    #: Seconds a probe subprocess may take (nvcc --version takes well under one).
    DEFAULT_TIMEOUT = 20.0

    def __init__(self, timeout: float | None = None) -> None:
        self.environ: dict[str, str] = dict(os.environ)
        self.python_version = sys.version_info[:3]
        self.timeout = self.DEFAULT_TIMEOUT if timeout is None else timeout
        self._runs: dict[tuple[tuple[str, ...], str | None], RunResult] = {}

    def which(self, name: str) -> str | None:
        return shutil.which(name, path=self.environ.get("PATH"))

    def run(self, argv: list[str], *, input: str | None = None) -> RunResult:
        """Run argv (stdin: ``input``, or nothing) in a new session, at most :attr:`timeout`
        seconds; on timeout its whole process group is killed. Results are remembered, so a hanging
        program costs one timeout, not one per check that asks."""
        key = (tuple(argv), input)
        if key not in self._runs:
            self._runs[key] = self._run(argv, input)
        return self._runs[key]

    def _run(self, argv: list[str], input: str | None) -> RunResult:
        try:
            proc = subprocess.Popen(
                argv, stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace",
                env=self.environ, start_new_session=True,
            )
        except (OSError, ValueError, subprocess.SubprocessError) as err:
            return RunResult(None, error=_one_line(getattr(err, "strerror", None) or str(err)))
        try:
            output, _ = proc.communicate(input, timeout=self.timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            return RunResult(None, timed_out=True, error=f"did not finish within {self.timeout:g} s (killed)")
        return RunResult(proc.returncode, output or "")

    def exists(self, path: str) -> bool:
        return Path(path).exists()

    def package_dir(self, name: str) -> str | None:
        """Where the installed Python package ``name`` is, found without importing it."""
        import importlib.util

        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            return None
        if spec is None or not spec.submodule_search_locations:
            return None
        return str(next(iter(spec.submodule_search_locations)))

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


def _kill_group(proc: subprocess.Popen[str]) -> None:
    """Kill ``proc`` and everything it started (its session's process group), then reap it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()
    try:
        proc.communicate(timeout=5)
    except (subprocess.TimeoutExpired, OSError, ValueError):  # a grandchild that left the group
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                stream.close()
        proc.wait()


def _one_line(text: str, limit: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


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
    out = probe.run([nvcc, "--dryrun", "-c", "-x", "cu", os.devnull, "-o", os.devnull]).output
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
    result = probe.run([nvcc, "--version"])
    if result.returncode is None:
        return Check("nvcc", FAIL, f"{nvcc} --version: {result.error}",
                     "check the CUDA toolkit installation (a wrapper script that waits? an unreachable network disk?)")
    out = result.output
    match = re.search(r"release ([0-9]+)\.([0-9]+)", out)
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
    result = probe.run([ninja, "--version"])
    if not result.ok:
        why = result.error or f"exit status {result.returncode}"
        return Check("ninja", WARN, f"{ninja} --version fails ({why}): builds fall back to serial, JIT mode fails",
                     "pip install --force-reinstall ninja")
    return Check("ninja", OK, f"ninja {_one_line(result.output)} at {ninja}")


def check_compiler(probe: Probe) -> Check:
    """The compiler torch would use ($CXX, else c++) exists, runs, is new enough, and compiles a
    program that includes standard headers."""
    name = "C++ compiler"
    env_cxx = probe.environ.get("CXX", "").strip()
    if env_cxx:
        try:
            argv = shlex.split(env_cxx)
        except ValueError as err:
            return Check(name, FAIL, f"CXX={env_cxx!r} cannot be parsed ({err})", "export CXX=g++")
        found = argv[0] if "/" in argv[0] else probe.which(argv[0])
        if found is None:
            return Check(name, FAIL, f"CXX={env_cxx!r}: {argv[0]} not found on PATH",
                         "export CXX to an installed compiler (e.g. CXX=g++), or unset it")
        argv[0] = found
        cxx = f"$CXX ({env_cxx})"
    else:
        found = probe.which("c++") or probe.which("g++")
        if found is None:
            return Check(name, FAIL, "no C++ compiler (c++, g++ or $CXX)", "install g++ (e.g. apt-get install g++)")
        argv, cxx = [found], found
    version = probe.run([*argv, "--version"])
    if not version.ok:
        why = version.error or f"exit status {version.returncode}: {_one_line(version.output, 120)}"
        return Check(name, FAIL, f"{cxx} does not run ({why})",
                     "install g++ (e.g. apt-get install g++), or export CXX to a working compiler")
    out = version.output
    match = re.search(r"([0-9]+)\.([0-9]+)\.[0-9]+", out)
    if "clang" not in out and match and int(match.group(1)) < 10:
        return Check(name, FAIL, f"{cxx} is GCC {match.group(0)}; torch's headers need C++20 (GCC 10 or newer)",
                     "install GCC 10+ and export CXX=g++-N")
    compiled = probe.run([*argv, "-std=c++17", "-x", "c++", "-c", "-", "-o", os.devnull], input=_PROBE_PROGRAM)
    if not compiled.ok:
        why = compiled.error or f"exit status {compiled.returncode}: {_one_line(compiled.output, 160)}"
        return Check(name, FAIL, f"{cxx} cannot compile a C++ program that includes <vector> ({why})",
                     "install the C++ standard library headers (e.g. apt-get install g++ libstdc++-dev)")
    first = out.splitlines()[0] if out.strip() else "unknown version"
    return Check(name, OK, f"{cxx}: {_one_line(first)}")


def _build_py_match(op_dir: Path, pattern: str) -> re.Match[str] | None:
    """The first match of ``pattern`` (multiline) in a generated package's <pkg>/_build.py, which
    the user may edit, or None."""
    try:
        builds = sorted(op_dir.glob("*/_build.py"))
    except OSError:
        return None
    for build in builds:
        try:
            text = build.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        match = re.search(pattern, text, re.MULTILINE)
        if match:
            return match
    return None


def read_arch_list(op_dir: Path) -> str | None:
    """The ARCH_LIST a generated package builds for (from <pkg>/_build.py), or None."""
    match = _build_py_match(op_dir, r'^ARCH_LIST = "([^"\n]*)"')
    return match.group(1) if match else None


def op_arch_list(op_dir: Path) -> tuple[Check, str | None]:
    """Check the package directory given with --op, and return the arch list it builds for.

    The requested arch list is the top-level ``arch_list`` of its answers file (every format of
    the file has it there); an ARCH_LIST edited in <pkg>/_build.py wins, as it does in the build.
    Any problem is one failed check, whatever the file holds.
    """
    from .answers import load_answers
    from .errors import KernelgenError
    from .spec import parse_arch_list

    name = "op dir"
    fix = "pass the directory of a package generated by kernelgen (it holds .copier-answers.yml)"
    if not op_dir.is_dir():
        return Check(name, FAIL, f"{op_dir} is not a directory", fix), None
    try:
        answers = load_answers(op_dir / ANSWERS_FILE)
    except KernelgenError as err:
        return Check(name, FAIL, _one_line(err.message), fix), None
    except Exception as err:  # a defensive reader must still never raise a traceback here
        return Check(name, FAIL, f"cannot read {op_dir / ANSWERS_FILE}: {_one_line(str(err))}", fix), None
    recorded = answers.get("arch_list") if isinstance(answers, dict) else None
    regenerate = "fix arch_list in .copier-answers.yml (e.g. arch_list: 8.0;9.0+PTX), then run kernelgen update"
    if recorded is None:
        return Check(name, FAIL, f"{op_dir / ANSWERS_FILE} has no arch_list", regenerate), None
    if not isinstance(recorded, str):
        return Check(name, FAIL, f"arch_list in {op_dir / ANSWERS_FILE} must be a string, not "
                     f"{type(recorded).__name__}", regenerate), None
    try:
        arch_list = parse_arch_list(recorded)
    except KernelgenError as err:
        return Check(name, FAIL, f"arch_list in {op_dir / ANSWERS_FILE}: {_one_line(err.message)}", regenerate), None
    built = read_arch_list(op_dir)
    if built is not None and built != arch_list:
        try:
            built = parse_arch_list(built)
        except KernelgenError as err:
            return Check(name, FAIL, f"ARCH_LIST in {op_dir}/*/_build.py: {_one_line(err.message)}",
                         f"fix ARCH_LIST in {op_dir}/*/_build.py (e.g. \"8.0;9.0+PTX\")"), None
        return Check(name, OK, f"{op_dir}: builds for ARCH_LIST={built} (edited in _build.py; "
                     f"the answers file records {arch_list})"), built
    return Check(name, OK, f"{op_dir}: builds for arch_list {arch_list}"), arch_list


def read_target_version(op_dir: Path) -> tuple[int, int] | None:
    """TORCH_TARGET_VERSION of a stable-ABI package (from <pkg>/_build.py), or None."""
    match = _build_py_match(op_dir, r"^TORCH_TARGET_VERSION = \((\d{1,3}), (\d{1,3})\)")
    return (int(match.group(1)), int(match.group(2))) if match else None


def check_op_torch(op_dir: Path, info: TorchInfo | None) -> Check | None:
    """For a package on the stable ABI: is the installed torch at least its TORCH_TARGET_VERSION?

    Its C++ compiles only against headers at least that new, and its loader refuses an older torch
    at import; this says so before a build fails. None for a full-ABI package (whose loader wants
    the exact torch it was built with) or when there is nothing to compare.
    """
    from .answers import load_answers
    from .errors import KernelgenError

    try:
        answers = load_answers(op_dir / ANSWERS_FILE)
    except (KernelgenError, OSError):
        return None  # the op dir check reports it
    if not isinstance(answers, dict) or answers.get("abi") != "stable" or info is None:
        return None
    target = read_target_version(op_dir)
    match = re.match(r"(\d+)\.(\d+)", info.version)
    if target is None or match is None:
        return None
    have = (int(match.group(1)), int(match.group(2)))
    wanted = f"{target[0]}.{target[1]}"
    if have < target:
        return Check("op torch", FAIL, f"torch {info.version} is older than {wanted}, the TORCH_TARGET_VERSION of "
                     f"{op_dir}'s stable-ABI build: it cannot compile it, and the package refuses it at import",
                     f"pip install 'torch>={wanted}' (a CUDA build matching your nvcc)")
    return Check("op torch", OK, f"torch {info.version} >= {wanted}, the package's stable-ABI target")


def check_op_cutlass(probe: Probe, op_dir: Path) -> Check | None:
    """For a package whose matmul ops have the CUTLASS Hopper path (csrc/*/cuda/*_sm90.cu): where will a
    build find the headers? It looks where the package's _build.py does (KERNELGEN_CUTLASS_DIR, an
    installed nvidia-cutlass, the copy a build downloaded before) and else downloads them, or, offline,
    builds without that path. None for a package without such an op."""
    if not any(op_dir.glob("*/csrc/*/cuda/*_sm90.cu")):
        return None
    _, arch_list = op_arch_list(op_dir)
    effective = probe.environ.get("TORCH_CUDA_ARCH_LIST") or arch_list or ""
    if not re.search(r"(^|[;\s])9\.0", effective):
        return Check("op cutlass", OK, f"no 9.0 target in {effective!r}: the matmul ops' Hopper path is not built")
    if probe.environ.get("KERNELGEN_NO_CUTLASS") == "1":
        return Check("op cutlass", WARN, "KERNELGEN_NO_CUTLASS=1: the matmul ops build without their Hopper (CUTLASS) path",
                     "unset KERNELGEN_NO_CUTLASS for cuBLAS-class float16/bfloat16 products on H100/H200")
    explicit = probe.environ.get("KERNELGEN_CUTLASS_DIR")
    if explicit:
        if probe.exists(f"{explicit}/include/cutlass/cutlass.h"):
            return Check("op cutlass", OK, f"CUTLASS headers in {explicit} (KERNELGEN_CUTLASS_DIR), for the matmul ops' "
                         "Hopper path")
        return Check("op cutlass", FAIL, f"KERNELGEN_CUTLASS_DIR={explicit} holds no include/cutlass/cutlass.h: a build "
                     "for 9.0 stops", "point it at a CUTLASS checkout, or unset it (the build then finds or downloads "
                     "the headers)")
    package = probe.package_dir("cutlass_library")
    if package and probe.exists(f"{package}/source/include/cutlass/cutlass.h"):
        return Check("op cutlass", OK, f"CUTLASS headers in {package}/source (the nvidia-cutlass package), for the "
                     "matmul ops' Hopper path")
    version = _cutlass_version(op_dir)
    base = probe.environ.get("XDG_CACHE_HOME") or f"{probe.environ.get('HOME') or Path.home()}/.cache"
    cache = f"{base}/kernelgen/cutlass-{version}"
    if probe.exists(f"{cache}/include/cutlass/cutlass.h"):
        return Check("op cutlass", OK, f"CUTLASS headers in {cache} (downloaded by an earlier build), for the matmul "
                     "ops' Hopper path")
    return Check("op cutlass", WARN, f"no CUTLASS headers yet: a build for 9.0 downloads them once (nvidia-cutlass "
                 f"{version}, 6 MB, into {cache}); offline it builds without the matmul ops' Hopper path",
                 f"offline: pip install --no-deps nvidia-cutlass=={version} from a wheel you have, or set "
                 "KERNELGEN_CUTLASS_DIR")


def _cutlass_version(op_dir: Path) -> str:
    """CUTLASS_VERSION of the package's _build.py (the headers its build downloads)."""
    for build in op_dir.glob("*/_build.py"):
        match = re.search(r'^CUTLASS_VERSION = "([^"]+)"', build.read_text(errors="replace"), re.MULTILINE)
        if match:
            return match.group(1)
    return "?"


def arch_covers(arch_list: str, capability: tuple[int, int]) -> str:
    """'sass' if machine code for the capability is built, 'ptx' if only PTX that can JIT to it, else ''."""
    best = ""
    for item in re.split(r"[;\s]+", arch_list.strip()):
        match = re.fullmatch(r"([0-9]+)\.([0-9]+)([af]?)(\+PTX)?", item)
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
    _, arch_list = op_arch_list(op_dir)
    if arch_list is None:
        return Check("GPU", WARN, f"{name} ({cc}): cannot tell whether {op_dir} covers it (see op dir)")
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
    checks = [
        check_python(probe),
        check_torch(probe, info),
        check_nvcc(probe, info),
        check_cuda_home(probe),
        check_cuda_files(probe),
        check_ninja(probe),
        check_compiler(probe),
    ]
    if op_dir is not None:  # reported with or without a GPU
        checks.append(op_arch_list(op_dir)[0])
        torch_check = check_op_torch(op_dir, info)
        if torch_check is not None:
            checks.append(torch_check)
        cutlass_check = check_op_cutlass(probe, op_dir)
        if cutlass_check is not None:
            checks.append(cutlass_check)
    checks.append(check_gpu(probe, info, op_dir))
    return checks


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
