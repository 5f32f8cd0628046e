"""kernelgen doctor: each check against a faked environment, never the machine the tests run on."""

from __future__ import annotations

import json
import os
import stat
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from kernelgen import doctor
from kernelgen.cli import main
from kernelgen.doctor import FAIL, OK, WARN, Probe, RunResult, TorchInfo

NVCC_13 = "Cuda compilation tools, release 13.0, V13.0.88\n"
DRYRUN = "#$ _HERE_=/opt/cuda-13.0/bin\n#$ _THERE_=/opt/cuda-13.0/bin\n"


class FakeProbe(Probe):
    def __init__(self, *, path=(), files=(), outputs=None, torch=None, environ=None, python=(3, 11, 7)):
        super().__init__()
        self.environ = dict(environ or {})
        self.path = dict(path)  # program name -> full path
        self.files = set(files)
        self.outputs = outputs or {}  # first argv element (+ flag) -> output
        self.info = torch
        self.python_version = python

    def which(self, name):
        return self.path.get(name)

    def exists(self, path):
        return str(path) in self.files

    def run(self, argv, *, input=None):
        key = " ".join(argv[:2])
        out = self.outputs.get(key, self.outputs.get(argv[0]))
        if out is None:
            return RunResult(None, error="No such file or directory")
        return out if isinstance(out, RunResult) else RunResult(0, out)

    def torch(self):
        return self.info


TOOLKIT = {"/opt/cuda-13.0/bin/nvcc", "/opt/cuda-13.0/include/cuda_runtime.h", "/opt/cuda-13.0/lib64/libcudart.so"}
CUDA_TORCH = TorchInfo("2.14.1+cu130", "13.0", [("NVIDIA H100", (9, 0))])


def healthy(**overrides):
    kwargs = dict(
        path={"nvcc": "/opt/cuda-13.0/bin/nvcc", "ninja": "/usr/bin/ninja", "c++": "/usr/bin/c++"},
        files=TOOLKIT,
        outputs={"/opt/cuda-13.0/bin/nvcc --version": NVCC_13, "/opt/cuda-13.0/bin/nvcc --dryrun": DRYRUN,
                 "/usr/bin/ninja": "1.11.1", "/usr/bin/c++": "c++ (GCC) 12.2.0"},
        torch=CUDA_TORCH,
    )
    kwargs.update(overrides)
    return FakeProbe(**kwargs)


def by_name(checks):
    return {check.name: check for check in checks}


def test_healthy_machine_is_all_ok():
    checks = by_name(doctor.run_checks(healthy()))
    assert all(check.status == OK for check in checks.values()), checks


def test_old_python_fails():
    check = doctor.check_python(healthy(python=(3, 9, 1)))
    assert check.status == FAIL and "3.10" in check.fix


def test_missing_and_cpu_only_torch():
    assert doctor.check_torch(healthy(), None).status == FAIL
    check = doctor.check_torch(healthy(), TorchInfo("2.14.1+cpu", None))
    assert check.status == WARN and "cannot link CUDA" in check.detail


def test_missing_nvcc_fails_with_a_fix():
    probe = healthy(path={"ninja": "/usr/bin/ninja"}, files=set())
    check = doctor.check_nvcc(probe, CUDA_TORCH)
    assert check.status == FAIL and "CUDA_HOME" in check.fix


def test_nvcc_major_must_match_torch():
    check = doctor.check_nvcc(healthy(), TorchInfo("2.5.0+cu124", "12.4"))
    assert check.status == FAIL and "CUDA 12.4" in check.detail and "13" in check.detail


def test_wrapper_in_usr_local_bin_makes_torch_guess_wrong():
    # nvcc reached through a wrapper script in /usr/local/bin: torch guesses /usr/local.
    probe = healthy(path={"nvcc": "/usr/local/bin/nvcc"},
                    outputs={"/usr/local/bin/nvcc --dryrun": DRYRUN, "/usr/local/bin/nvcc --version": NVCC_13})
    check = doctor.check_cuda_home(probe)
    assert check.status == FAIL
    assert "CUDA_HOME=/usr/local," in check.detail and "export CUDA_HOME=/opt/cuda-13.0" in check.fix
    # ... and an explicit CUDA_HOME fixes it
    probe.environ["CUDA_HOME"] = "/opt/cuda-13.0"
    assert doctor.check_cuda_home(probe).status == OK


def test_missing_cuda_runtime_files():
    probe = healthy(files={"/opt/cuda-13.0/bin/nvcc"})
    check = doctor.check_cuda_files(probe)
    assert check.status == FAIL and "cuda_runtime.h" in check.detail and "libcudart.so" in check.detail


def test_ninja_missing_is_a_warning():
    probe = healthy(path={"nvcc": "/opt/cuda-13.0/bin/nvcc", "c++": "/usr/bin/c++"})
    check = doctor.check_ninja(probe)
    assert check.status == WARN and check.fix == "pip install ninja"


def test_compiler_checks():
    assert doctor.check_compiler(healthy(path={})).status == FAIL
    old = healthy(outputs={"/usr/bin/c++": "c++ (GCC) 7.5.0"})
    assert doctor.check_compiler(old).status == FAIL
    assert doctor.check_compiler(healthy(environ={"CXX": "/usr/bin/c++"})).status == OK


def test_a_compiler_that_does_not_run_or_compile_fails():
    # $CXX names a program that is not there: before, this was reported as "ok"
    check = doctor.check_compiler(healthy(environ={"CXX": "/opt/nowhere/g++"}))
    assert check.status == FAIL and "/opt/nowhere/g++" in check.detail and "does not run" in check.detail
    check = doctor.check_compiler(healthy(environ={"CXX": "clang++-99"}))
    assert check.status == FAIL and "not found on PATH" in check.detail
    check = doctor.check_compiler(healthy(environ={"CXX": "g++ 'unbalanced"}))
    assert check.status == FAIL and "cannot be parsed" in check.detail
    broken = healthy(outputs={"/usr/bin/c++ --version": RunResult(1, "c++: fatal error: no input files\n")})
    assert doctor.check_compiler(broken).status == FAIL
    no_headers = healthy(outputs={"/usr/bin/c++ --version": "c++ (GCC) 12.2.0",
                                  "/usr/bin/c++ -std=c++17": RunResult(1, "fatal error: vector: No such file or directory")})
    check = doctor.check_compiler(no_headers)
    assert check.status == FAIL and "cannot compile" in check.detail and "vector: No such file" in check.detail


def _script(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_a_missing_or_broken_cxx_really_fails(tmp_path):
    probe = Probe()
    probe.environ["CXX"] = str(tmp_path / "no-such-compiler")
    check = doctor.check_compiler(probe)
    assert check.status == FAIL and "no-such-compiler" in check.detail
    # it runs and reports a version, but compiles nothing
    probe.environ["CXX"] = str(_script(tmp_path / "fake-g++", 'if [ "$1" = --version ]; then echo "g++ (GCC) 12.2.0"; exit 0; fi\n'
                                                               'echo "internal compiler error" >&2; exit 4'))
    check = doctor.check_compiler(probe)
    assert check.status == FAIL and "cannot compile" in check.detail and "exit status 4" in check.detail


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_hanging_nvcc_times_out_and_leaves_no_process(tmp_path):
    pids = tmp_path / "pids"
    # nvcc that never answers, and starts a child of its own that would outlive a plain kill
    nvcc = _script(tmp_path / "bin" / "nvcc", f"sleep 300 &\necho $! >> {pids}\necho $$ >> {pids}\nwait")
    probe = Probe(timeout=0.5)
    probe.environ = {"PATH": f"{nvcc.parent}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}"}
    started = time.monotonic()
    check = doctor.check_nvcc(probe, None)
    assert check.status == FAIL and "did not finish within 0.5 s" in check.detail and "\n" not in check.detail
    # the other checks asking the same nvcc do not wait again
    doctor.check_cuda_home(probe)
    doctor.check_cuda_files(probe)
    assert time.monotonic() - started < 5
    recorded = [int(line) for line in pids.read_text().split()]
    assert len(recorded) == 4  # --version and --dryrun: shell and sleep each
    deadline = time.monotonic() + 5
    while any(_alive(pid) for pid in recorded) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(pid) for pid in recorded)


def test_probe_run_reports_exit_status_and_missing_programs(tmp_path):
    probe = Probe(timeout=10)
    assert probe.run([sys.executable, "-c", "print('hi')"]) == RunResult(0, "hi\n")
    assert probe.run([sys.executable, "-c", "import sys; sys.exit(3)"]).returncode == 3
    assert probe.run([sys.executable, "-c", "import sys; print(sys.stdin.read())"], input="abc").output == "abc\n"
    missing = probe.run([str(tmp_path / "missing")])
    assert missing.returncode is None and not missing.ok and missing.error


def _op(tmp_path: Path, arch_list: str, *, answers: str | None = None, build: str | None = None) -> Path:
    """A generated package directory: its answers file records ``arch_list`` (package format)."""
    root = tmp_path / "op"
    (root / "op").mkdir(parents=True)
    if answers is None:
        answers = f"name: op\npackage: op\nnamespace: op\narch_list: '{arch_list}'\nops:\n- name: op\n  kind: matmul\n"
    (root / doctor.ANSWERS_FILE).write_text(answers)
    if build is not None:
        (root / "op" / "_build.py").write_text(f'ARCH_LIST = "{build}"\n')
    return root


@pytest.mark.parametrize("arch_list, capability, status", [
    ("8.0;9.0+PTX", (9, 0), OK),
    ("8.0;9.0+PTX", (8, 6), OK),        # sm_80 machine code runs on 8.6
    ("8.0;9.0+PTX", (10, 0), WARN),     # only through PTX
    ("9.0", (8, 0), FAIL),
    ("9.0a", (9, 0), OK),
    ("9.0a", (10, 0), FAIL),            # arch-specific code never runs elsewhere
])
def test_gpu_coverage_by_the_ops_arch_list(tmp_path, arch_list, capability, status):
    probe = healthy(torch=TorchInfo("2.14.1", "13.0", [("GPU", capability)]))
    assert doctor.check_gpu(probe, probe.torch(), _op(tmp_path, arch_list)).status == status


def test_gpu_env_override_and_no_gpu(tmp_path):
    probe = healthy(environ={"TORCH_CUDA_ARCH_LIST": "8.0"})
    check = doctor.check_gpu(probe, CUDA_TORCH, _op(tmp_path, "9.0"))
    assert check.status == FAIL and "TORCH_CUDA_ARCH_LIST=8.0" in check.detail
    assert doctor.check_gpu(probe, TorchInfo("2.14.1", "13.0", []), None).status == WARN
    not_an_op = tmp_path / "empty"
    not_an_op.mkdir()
    assert doctor.check_gpu(probe, CUDA_TORCH, not_an_op).status == WARN
    by = by_name(doctor.run_checks(healthy(), not_an_op))
    assert by["op dir"].status == FAIL and "kernelgen answers file" not in by["op dir"].detail


def test_an_arch_list_edited_in_build_py_is_what_counts(tmp_path):
    op = _op(tmp_path, "8.0", build="8.0;9.0")
    check, arch_list = doctor.op_arch_list(op)
    assert check.status == OK and arch_list == "8.0;9.0" and "edited in _build.py" in check.detail
    probe = healthy()
    assert doctor.check_gpu(probe, CUDA_TORCH, op).status == OK
    bad = _op(tmp_path / "bad", "8.0", build="9.0; -Xcompiler")
    assert doctor.op_arch_list(bad)[0].status == FAIL


NO_GPU = TorchInfo("2.14.1+cpu", None, [])


@pytest.mark.parametrize("answers, fragment", [
    (None, "not found"),  # no answers file at all
    ("name: [unclosed\n", "not valid YAML"),
    ("- a\n- b\n", "not a kernelgen answers file"),
    ("name: op\n", "has no arch_list"),
    ("name: op\narch_list: 9.0\n", "must be a string, not float"),
    ("name: op\narch_list: [8.0]\n", "must be a string, not list"),
    ("name: op\narch_list: '９.０'\n", "bad --arch-list entry"),
    ("name: op\narch_list: '9.0;7.0'\n", "older than 7.5"),
    ("name: op\narch_list: ''\n", "--arch-list is empty"),
    ("\x00\x01", "NUL"),
])
def test_op_dir_problems_are_reported_without_a_gpu(tmp_path, answers, fragment):
    op = _op(tmp_path, "8.0", answers=answers or "")
    if answers is None:
        (op / doctor.ANSWERS_FILE).unlink()
    checks = by_name(doctor.run_checks(healthy(torch=NO_GPU), op))
    check = checks["op dir"]
    assert check.status == FAIL and fragment in check.detail, check
    assert "\n" not in check.detail and check.fix
    assert checks["GPU"].status == WARN


@pytest.mark.parametrize("answers", [
    "name: muladd\nop_name: muladd\nkind: elementwise\narch_list: 8.0;9.0+PTX\n",  # template versions 1 and 2
    "name: lib\npackage: lib\nnamespace: team\narch_list: 8.0;9.0+PTX\nops: []\n",  # the package format
])
def test_both_answers_formats_give_the_arch_list(tmp_path, answers):
    check, arch_list = doctor.op_arch_list(_op(tmp_path, "", answers=answers))
    assert check.status == OK and arch_list == "8.0;9.0+PTX"


def test_op_dir_that_is_a_file_or_a_fifo(tmp_path):
    a_file = tmp_path / "file"
    a_file.write_text("")
    assert doctor.op_arch_list(a_file)[0].status == FAIL
    op = tmp_path / "pkg"
    op.mkdir()
    os.mkfifo(op / doctor.ANSWERS_FILE)  # must not hang
    check, _ = doctor.op_arch_list(op)
    assert check.status == FAIL and "not a regular file" in check.detail


def test_cli_output_json_and_exit_code(monkeypatch, tmp_path):
    monkeypatch.setattr(doctor, "Probe", lambda: healthy(path={}, files=set()))
    result = CliRunner().invoke(main, ["doctor"])
    assert result.exit_code == 1
    assert "fail  nvcc" in result.output and "fix: install the CUDA toolkit" in result.output
    result = CliRunner().invoke(main, ["doctor", "--json"])
    data = json.loads(result.output)
    assert data["ok"] is False and {c["name"] for c in data["checks"]} >= {"python", "torch", "nvcc", "CUDA_HOME", "ninja", "GPU"}
    monkeypatch.setattr(doctor, "Probe", lambda: healthy())
    result = CliRunner().invoke(main, ["doctor", "--op", str(_op(tmp_path, "8.0;9.0+PTX"))])
    assert result.exit_code == 0, result.output
    assert "ok    op dir" in result.output
    monkeypatch.setattr(doctor, "Probe", lambda: healthy(torch=NO_GPU))
    result = CliRunner().invoke(main, ["doctor", "--op", str(_op(tmp_path / "bad", "", answers="name: x\narch_list: 12\n"))])
    assert result.exit_code == 1 and "fail  op dir" in result.output and "Traceback" not in result.output


@pytest.mark.parametrize("version, status", [("2.9.1+cu128", FAIL), ("2.10.0", OK), ("2.14.1+cu130", OK)])
def test_a_stable_abi_package_needs_torch_at_least_its_target(tmp_path, version, status):
    answers = "name: op\npackage: op\nnamespace: op\narch_list: '8.0'\nabi: stable\nops:\n- name: op\n  kind: matmul\n"
    op = _op(tmp_path, "8.0", answers=answers)
    (op / "op" / "_build.py").write_text('ARCH_LIST = "8.0"\nTORCH_TARGET_VERSION = (2, 10)\n')
    checks = by_name(doctor.run_checks(healthy(torch=TorchInfo(version, "13.0", [])), op))
    assert checks["op torch"].status == status
    if status == FAIL:
        assert "older than 2.10" in checks["op torch"].detail and "torch>=2.10" in checks["op torch"].fix


def test_a_full_abi_package_gets_no_target_check(tmp_path):
    op = _op(tmp_path, "8.0")  # no abi recorded: a full-ABI package
    (op / "op" / "_build.py").write_text('ARCH_LIST = "8.0"\nTORCH_TARGET_VERSION = (2, 10)\n')
    assert "op torch" not in by_name(doctor.run_checks(healthy(torch=TorchInfo("2.9.1", "12.8", [])), op))


def _matmul_package(tmp_path, *, dtypes="float32,float16"):
    from kernelgen.render import generate
    from kernelgen.spec import OpSpec, PackageSpec

    return generate(PackageSpec.for_new_op(OpSpec.create("mm", kind="matmul", dtypes=dtypes)), tmp_path, force=False)


def test_op_cutlass_headers(tmp_path):
    """A package whose matmul op has the CUTLASS Hopper path: the headers are looked for where the build
    looks (KERNELGEN_CUTLASS_DIR, the nvidia-cutlass package, the copy an earlier build downloaded),
    only when 9.0 is a target; none there is a warning (the build downloads them), not a failure."""
    root = _matmul_package(tmp_path)
    assert list(root.glob("*/csrc/mm/cuda/mm_sm90.cu"))

    class Cutlass(FakeProbe):
        def package_dir(self, name):
            return "/site/cutlass_library" if name == "cutlass_library" else None

    check = doctor.check_op_cutlass(Cutlass(files={"/site/cutlass_library/source/include/cutlass/cutlass.h"}), root)
    assert check.status == OK and "/site/cutlass_library/source" in check.detail
    check = doctor.check_op_cutlass(FakeProbe(environ={"HOME": "/h"}), root)
    assert check.status == WARN, check
    assert "downloads them once (nvidia-cutlass 4.2.0.0" in check.detail and "/h/.cache/kernelgen/cutlass-4.2.0.0" in check.detail
    assert "pip install --no-deps nvidia-cutlass==4.2.0.0" in check.fix
    cached = FakeProbe(environ={"XDG_CACHE_HOME": "/c"}, files={"/c/kernelgen/cutlass-4.2.0.0/include/cutlass/cutlass.h"})
    check = doctor.check_op_cutlass(cached, root)
    assert check.status == OK and "downloaded by an earlier build" in check.detail
    check = doctor.check_op_cutlass(FakeProbe(environ={"KERNELGEN_CUTLASS_DIR": "/c"}, files={"/c/include/cutlass/cutlass.h"}), root)
    assert check.status == OK and "KERNELGEN_CUTLASS_DIR" in check.detail
    check = doctor.check_op_cutlass(FakeProbe(environ={"KERNELGEN_CUTLASS_DIR": "/nowhere"}), root)
    assert check.status == FAIL and "KERNELGEN_CUTLASS_DIR=/nowhere" in check.detail
    assert doctor.check_op_cutlass(FakeProbe(environ={"TORCH_CUDA_ARCH_LIST": "8.0"}), root).status == OK
    assert doctor.check_op_cutlass(FakeProbe(environ={"KERNELGEN_NO_CUTLASS": "1"}), root).status == WARN
    plain = _matmul_package(tmp_path / "f32", dtypes="float32")
    assert not list(plain.glob("*/csrc/mm/cuda/mm_sm90.cu")) and doctor.check_op_cutlass(FakeProbe(), plain) is None


def test_build_py_compiles_the_hopper_path_for_sm_90a(tmp_path, monkeypatch, capsys):
    """The generated _build.py: a 9.0 target becomes sm_90a machine code (+ the PTX the list asks
    for), with KG_SM90A and the CUTLASS include directories; no 9.0 target, or KERNELGEN_NO_CUTLASS,
    builds without the path; missing headers stop the build with one line."""
    import importlib.util

    root = _matmul_package(tmp_path)
    (build_py,) = root.glob("*/_build.py")
    spec = importlib.util.spec_from_file_location("_mm_build_test", build_py)
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    headers = tmp_path / "cutlass"
    (headers / "include" / "cutlass").mkdir(parents=True)
    (headers / "include" / "cutlass" / "cutlass.h").write_text("")
    monkeypatch.setenv("KERNELGEN_CUTLASS_DIR", str(headers))
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", "8.0;9.0+PTX")
    flags = build.sm90_flags()
    assert [f for f in flags if f.startswith("-gencode")] == [
        "-gencode=arch=compute_80,code=sm_80", "-gencode=arch=compute_90,code=compute_90",
        "-gencode=arch=compute_90a,code=sm_90a"]
    assert "-DKG_SM90A=1" in flags and f"-I{headers / 'include'}" in flags
    assert any(path.name == "mm_sm90.cu" for path in build.sources(True))
    assert not any(path.name == "mm_sm90.cu" for path in build.sources(False))
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", "8.0+PTX")
    assert build.sm90_flags() is None and not any(path.name == "mm_sm90.cu" for path in build.sources(True))
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", "9.0")
    monkeypatch.setenv("KERNELGEN_NO_CUTLASS", "1")
    assert build.sm90_flags() is None
    monkeypatch.delenv("KERNELGEN_NO_CUTLASS")
    monkeypatch.setenv("KERNELGEN_CUTLASS_DIR", str(tmp_path / "nowhere"))
    with pytest.raises(SystemExit, match=r"KERNELGEN_CUTLASS_DIR=.*nowhere holds no include/cutlass/cutlass\.h"):
        build.sm90_flags()
    # Worked out once per environment: a named arch is noted once, however often the build asks.
    monkeypatch.setenv("KERNELGEN_CUTLASS_DIR", str(headers))
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", "9.0;Hopper")
    capsys.readouterr()
    assert build.sm90_flags() is None and build.sm90_flags() is None and build.sources(True)
    assert capsys.readouterr().err.count("is not a number") == 1


def _fake_cutlass_wheel(directory, version="4.2.0.0"):
    """A wheel named like nvidia-cutlass's, with its layout (headers under cutlass_library/source/)."""
    import zipfile

    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"nvidia_cutlass-{version}-py3-none-any.whl"
    info = f"nvidia_cutlass-{version}.dist-info"
    with zipfile.ZipFile(path, "w") as wheel:
        wheel.writestr("cutlass_library/__init__.py", "")
        wheel.writestr("cutlass_library/source/include/cutlass/cutlass.h", "// cutlass\n")
        wheel.writestr("cutlass_library/source/tools/util/include/cutlass/util/device_memory.h", "// util\n")
        wheel.writestr("cutlass_library/source/examples/big.cu", "// not a header the build needs\n")
        wheel.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: nvidia-cutlass\nVersion: {version}\n")
        wheel.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        wheel.writestr(f"{info}/RECORD", "")
    return path


@pytest.fixture
def hopper_build(tmp_path, monkeypatch):
    """The generated _build.py of a matmul package, on a machine with no CUTLASS headers anywhere and pip
    reading a local folder only (no index: the tests never use the network)."""
    import importlib.util

    root = _matmul_package(tmp_path)
    (build_py,) = root.glob("*/_build.py")
    spec = importlib.util.spec_from_file_location("_mm_build_fetch", build_py)
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *args: None if name == "cutlass_library" else real_find_spec(name, *args))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path / "wheels"))
    (tmp_path / "wheels").mkdir()
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", "8.0;9.0+PTX")
    for name in ("KERNELGEN_CUTLASS_DIR", "KERNELGEN_NO_CUTLASS", "KERNELGEN_REQUIRE_CUDA"):
        monkeypatch.delenv(name, raising=False)
    return build


def test_build_without_cutlass_headers_leaves_the_hopper_path_out_in_one_line(hopper_build, monkeypatch, capsys):
    build = hopper_build
    assert build.sm90_flags() is None
    assert not any(path.name == "mm_sm90.cu" for path in build.sources(True))
    notes = [line for line in capsys.readouterr().err.splitlines() if "left out" in line]
    assert len(notes) == 1, notes
    assert "the matmul ops' Hopper (CUTLASS) path is left out" in notes[0]
    assert "pip download failed" in notes[0] and "pip install --no-deps nvidia-cutlass==4.2.0.0" in notes[0]
    assert not build.cutlass_cache().exists()
    # The build record keeps the line (pip shows no output of a build that succeeds).
    assert build.sm90_left_out() == notes[0].split("note: ", 1)[1]
    assert build.current_build_info(True)["cutlass_sm90_left_out"] == build.sm90_left_out()
    # CI (KERNELGEN_REQUIRE_CUDA=1) builds everything it promises, or stops.
    monkeypatch.setenv("KERNELGEN_REQUIRE_CUDA", "1")
    with pytest.raises(SystemExit, match="KERNELGEN_REQUIRE_CUDA=1 but the matmul ops' Hopper"):
        build.sm90_flags()


def test_build_downloads_checks_and_keeps_the_cutlass_headers(hopper_build, tmp_path, monkeypatch, capsys):
    import hashlib

    build = hopper_build
    wheel = _fake_cutlass_wheel(tmp_path / "wheels")
    # A wheel that is not the one whose SHA-256 the package names is refused, and nothing is kept.
    assert build.sm90_flags() is None
    err = capsys.readouterr().err
    assert f"has SHA-256 {hashlib.sha256(wheel.read_bytes()).hexdigest()}, not {build.CUTLASS_WHEEL_SHA256}" in err
    assert not build.cutlass_cache().exists()
    monkeypatch.setattr(build, "CUTLASS_WHEEL_SHA256", hashlib.sha256(wheel.read_bytes()).hexdigest())
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", "9.0")  # another environment: worked out again
    flags = build.sm90_flags()
    cache = tmp_path / "cache" / "kernelgen" / "cutlass-4.2.0.0"
    assert build.cutlass_cache() == cache
    assert flags is not None and f"-I{cache / 'include'}" in flags and f"-I{cache / 'tools' / 'util' / 'include'}" in flags
    assert "downloading the CUTLASS 4.2.0.0 headers" in capsys.readouterr().err
    assert (cache / "include" / "cutlass" / "cutlass.h").read_text() == "// cutlass\n"
    assert not (cache / "examples").exists() and not list((tmp_path / "cache" / "kernelgen").glob(".cutlass-*"))
    # The next build (another package, the same machine) finds them: no download.
    wheel.unlink()
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", "8.0;9.0")
    assert f"-I{cache / 'include'}" in build.sm90_flags()
    assert "downloading" not in capsys.readouterr().err
