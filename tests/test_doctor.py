"""kernelgen doctor: each check against a faked environment, never the machine the tests run on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kernelgen import doctor
from kernelgen.cli import main
from kernelgen.doctor import FAIL, OK, WARN, Probe, TorchInfo

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

    def run(self, argv):
        key = " ".join(argv[:2])
        return self.outputs.get(key, self.outputs.get(argv[0]))

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


def _op(tmp_path: Path, arch_list: str) -> Path:
    pkg = tmp_path / "op" / "op"
    pkg.mkdir(parents=True)
    (pkg / "_build.py").write_text(f'ARCH_LIST = "{arch_list}"\n')
    return tmp_path / "op"


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
    assert doctor.check_gpu(probe, CUDA_TORCH, not_an_op).status == FAIL


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
