"""The LibTorch stable ABI: the symbol audit of built extensions, and the generated loader's guard.

A package generated with `--abi stable` (the default) may call libtorch only through its stable C
shim: the C functions declared in torch/csrc/stable/c/shim.h and torch/csrc/inductor/aoti_torch/c/
shim.h (aoti_torch_*, torch_*), which libtorch keeps from release to release. Everything else it
uses from torch must be header-only (torch/headeronly, the inline C++ of torch/csrc/stable), which
the compiler puts into the extension itself. The compiler already refuses ATen and c10 headers
(TORCH_TARGET_VERSION); the audit here checks the linked binary, so that nothing slips through a
header we did not think of.

The audit runs on every example that tests/run.sh builds (a missing build is a failure, not a
skip: CI builds examples/* before pytest), and, in tests/test_e2e_build.py, on freshly generated ops.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path
from types import ModuleType

import pytest
from click.testing import CliRunner
from conftest import REPO

from kernelgen.cli import main

#: C++ namespaces of libtorch, libc10 and libtorch_python: an undefined symbol in one of them is a
#: call into torch's unstable C++ ABI.
UNSTABLE_NAMESPACES = ("at::", "c10::", "torch::", "caffe2::", "aten::", "pybind11::")
#: The headers that declare the stable C shim (relative to torch's include directory).
SHIM_HEADERS = ("torch/csrc/stable/c/shim.h", "torch/csrc/inductor/aoti_torch/c/shim.h")

requires_nm = pytest.mark.skipif(shutil.which("nm") is None or sys.platform != "linux",
                                 reason="the symbol audit needs binutils' nm on Linux")


def _nm(args: list[str], library: Path) -> list[str]:
    """Dynamic symbol names of ``library``, demangled, without their @VERSION suffixes."""
    out = subprocess.run(["nm", "-D", "--demangle", *args, str(library)], capture_output=True, text=True,
                         check=True, timeout=120)
    names = []
    for line in out.stdout.splitlines():
        # "                 U name" (undefined) or "000000000001a2b0 T name" (defined)
        parts = line.split(maxsplit=2) if line[:1].strip() else line.split(maxsplit=1)
        if parts:
            names.append(parts[-1].strip().split("@")[0])
    return names


def _torch_dir() -> Path:
    import torch

    return Path(torch.__file__).parent


@cache
def stable_shim_functions(include_dir: Path | None = None) -> frozenset[str]:
    """Every C function the stable shim headers declare (aoti_torch_*, torch_*)."""
    include_dir = include_dir or _torch_dir() / "include"
    names: set[str] = set()
    for header in SHIM_HEADERS:
        text = (include_dir / header).read_text()
        names.update(re.findall(r"\b((?:aoti_torch|torch)_\w+)\s*\(", text))
    assert len(names) > 100, f"the shim headers declare only {len(names)} functions: wrong headers?"
    return frozenset(names)


@cache
def torch_exports(lib_dir: Path | None = None) -> frozenset[str]:
    """The symbols torch's own libraries (libtorch*.so, libc10*.so) define."""
    lib_dir = lib_dir or _torch_dir() / "lib"
    exports: set[str] = set()
    for lib in sorted([*lib_dir.glob("libtorch*.so"), *lib_dir.glob("libc10*.so")]):
        exports.update(_nm(["--defined-only"], lib))
    return frozenset(exports)


def stable_abi_violations(library: Path) -> list[str]:
    """The undefined symbols of ``library`` that are not on the stable ABI; [] when it is clean.

    A symbol offends if it is C++ in torch's namespaces (at::, c10::, torch::, ...), or a C symbol
    that torch's libraries export and the stable shim headers do not declare. libc, libstdc++,
    libcudart and CPython symbols pass; so does everything header-only, which the extension defines
    itself (it is not undefined).
    """
    undefined = _nm(["--undefined-only"], library)
    shim = stable_shim_functions()
    exports = torch_exports()
    offending = {name for name in undefined if any(ns in name for ns in UNSTABLE_NAMESPACES)}
    offending |= {name for name in undefined if name in exports and "::" not in name and name not in shim}
    return sorted(offending)


def stable_shim_calls(library: Path) -> list[str]:
    """The stable C shim functions ``library`` calls."""
    shim = stable_shim_functions()
    return sorted(name for name in _nm(["--undefined-only"], library) if name in shim)


def exported_symbols(library: Path) -> list[str]:
    """What ``library`` defines for others, less the weak instances of the C++ standard library."""
    return [name for name in _nm(["--defined-only"], library)
            if not name.startswith(("std::", "typeinfo", "vtable", "guard variable for std::", "_init", "_fini"))]


def audit(library: Path) -> None:
    """Assert that ``library`` is a clean stable-ABI, limited-API extension module."""
    assert library.name.endswith(".abi3.so"), f"{library} is not built with py_limited_api (no .abi3.so)"
    violations = stable_abi_violations(library)
    assert violations == [], f"{library.name} uses libtorch outside the stable ABI: {violations[:20]}"
    # -fvisibility=hidden: the inline c10::Half operators and the ops' own functions stay private.
    assert exported_symbols(library) == ["PyInit__C"], exported_symbols(library)
    calls = stable_shim_calls(library)
    assert "torch_library_impl" in calls or "aoti_torch_library_impl" in calls, calls  # it did register


# ---- the examples, as tests/run.sh builds them ----------------------------------------------

def _example_packages() -> list[Path]:
    return sorted(path for path in (REPO / "examples").iterdir() if (path / ".copier-answers.yml").is_file())


def _answers(example: Path) -> dict:
    import yaml

    return yaml.safe_load((example / ".copier-answers.yml").read_text())


@pytest.mark.build
@requires_nm
@pytest.mark.parametrize("example", _example_packages(), ids=lambda path: path.name)
def test_example_extension_is_on_the_stable_abi(example):
    """Run by tests/run.sh after it built every example: a missing build fails, it does not skip."""
    answers = _answers(example)
    assert answers.get("abi") == "stable", f"{example.name} is not generated on the stable ABI"
    if not any(op.get("backend", "cuda") == "cuda" for op in answers["ops"]):
        pytest.skip("only Triton ops: no extension")
    built = sorted((example / answers["package"]).glob("_C*.so"))
    assert built, (f"{example.name} is not built (no {answers['package']}/_C*.so): build the examples first, "
                   f"as tests/run.sh does (pip install --no-build-isolation -e examples/{example.name})")
    assert len(built) == 1, f"several builds of _C lie side by side: {[p.name for p in built]}"
    audit(built[0])
    info = json.loads((example / answers["package"] / "_build_info.json").read_text())
    assert info["stable_abi"] is True and info["torch_target_version"] == "2.10"


# ---- the audit itself -----------------------------------------------------------------------

@requires_nm
def test_the_shim_declares_what_the_generated_code_calls():
    shim = stable_shim_functions()
    for name in ("torch_library_impl", "torch_call_dispatcher", "torch_parallel_for", "aoti_torch_get_current_cuda_stream",
                 "torch_c10_cuda_check_msg", "aoti_torch_get_device_index"):
        assert name in shim, name


@requires_nm
def test_the_audit_flags_an_aten_extension(tmp_path):
    """libtorch_python is a torch library built on the full ABI: the audit must see through it."""
    offending = stable_abi_violations(_torch_dir() / "lib" / "libtorch_python.so")
    assert any(name.startswith(("at::", "c10::")) for name in offending)


# ---- the generated loader's guard (no build needed) ------------------------------------------

def _generated_loader(tmp_path: Path, abi: str) -> ModuleType:
    """The _loader module of a freshly generated package, imported without loading any _C."""
    result = CliRunner().invoke(main, ["new", f"guard-{abi}", "--inputs", "x", "--expr", "x", "--defaults",
                                       "--abi", abi, "--output", str(tmp_path)])
    assert result.exit_code == 0, result.output
    package = f"guard_{abi}"
    root = tmp_path / f"guard-{abi}" / package
    # The package itself without running its __init__ (which would load the missing _C).
    spec = importlib.util.spec_from_file_location(package, root / "__init__.py", submodule_search_locations=[str(root)])
    assert spec is not None
    sys.modules[package] = importlib.util.module_from_spec(spec)
    try:
        return importlib.import_module(f"{package}._loader")
    finally:
        for name in [name for name in sys.modules if name == package or name.startswith(package + ".")]:
            del sys.modules[name]


@pytest.fixture(scope="module")
def stable_loader(tmp_path_factory):
    pytest.importorskip("torch")
    return _generated_loader(tmp_path_factory.mktemp("stable"), "stable")


def _info(**changes):
    info = {"torch": "2.14.1", "torch_target_version": "2.10", "stable_abi": True, "cuda": None, "with_cuda": False}
    info.update(changes)
    return info


@pytest.mark.parametrize("running", ["2.10.0", "2.10.1+cu130", "2.14.1", "2.99.0+cu130", "3.0.0", "2.10.0.dev20251001"])
def test_loader_accepts_the_target_torch_and_newer(stable_loader, monkeypatch, running):
    monkeypatch.setattr(stable_loader.torch, "__version__", running)
    stable_loader.check_build_info(_info())


@pytest.mark.parametrize("running", ["2.9.1+cu128", "2.4.0", "1.13.1"])
def test_loader_refuses_an_older_torch_naming_both_versions(stable_loader, monkeypatch, running):
    monkeypatch.setattr(stable_loader.torch, "__version__", running)
    with pytest.raises(ImportError, match=rf"guard_stable needs torch >= 2\.10 .* but torch {re.escape(running)} is installed"):
        stable_loader.check_build_info(_info())


def test_loader_refuses_another_cuda_major(stable_loader, monkeypatch):
    monkeypatch.setattr(stable_loader.torch.version, "cuda", "12.8")
    with pytest.raises(ImportError, match=r"built with CUDA 13\.0 but torch .* uses CUDA 12\.8; the CUDA runtime is not covered"):
        stable_loader.check_build_info(_info(cuda="13.0", with_cuda=True))
    monkeypatch.setattr(stable_loader.torch.version, "cuda", "13.2")  # same major: fine
    stable_loader.check_build_info(_info(cuda="13.0", with_cuda=True))


def test_loader_refuses_a_cpu_torch_for_a_cuda_build(stable_loader, monkeypatch):
    monkeypatch.setattr(stable_loader.torch.version, "cuda", None)
    with pytest.raises(ImportError, match=r"CPU-only build"):
        stable_loader.check_build_info(_info(cuda="13.0", with_cuda=True))


def test_loader_keeps_the_exact_match_for_a_record_without_a_target(stable_loader, monkeypatch):
    """A binary built before the package moved to the stable ABI is tied to its torch."""
    monkeypatch.setattr(stable_loader.torch, "__version__", "2.14.1")
    stable_loader.check_build_info({"torch": "2.14.1", "cuda": None, "with_cuda": False})
    with pytest.raises(ImportError, match=r"was built against torch 2\.13\.0 \(not on the stable ABI\)"):
        stable_loader.check_build_info({"torch": "2.13.0", "cuda": None, "with_cuda": False})


def test_full_loader_keeps_its_exact_match(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    loader = _generated_loader(tmp_path, "full")
    monkeypatch.setattr(loader.torch, "__version__", "2.14.1")
    loader.check_build_info({"torch": "2.14.1", "cuda": None, "with_cuda": False})
    for other in ("2.14.2", "2.15.0"):  # any other torch, newer included
        with pytest.raises(ImportError, match=rf"guard_full was built against torch {re.escape(other)} but torch 2\.14\.1 .*is installed"):
            loader.check_build_info({"torch": other, "cuda": None, "with_cuda": False})


# ---- the oldest torch a stable-ABI op promises to load on -----------------------------------

#: Set by tests/run.sh to the include directory of torch==<TORCH_TARGET_VERSION>.0 (headers only,
#: from its wheel). The examples are built against the installed torch; this compiles their sources
#: against the oldest headers they claim, so that an API newer than TORCH_TARGET_VERSION shows here
#: and not first on a user's older torch (as STABLE_TORCH_ERROR_CODE_CHECK once did on torch 2.11).
OLDEST_INCLUDE_ENV = "KERNELGEN_OLDEST_TORCH_INCLUDE"


def _example_sources() -> list[tuple[Path, Path]]:
    found = []
    for example in _example_packages():
        package = example / _answers(example)["package"]
        found += [(example, source) for source in sorted((package / "csrc").rglob("*.c*"))
                  if source.suffix in (".cpp", ".cu")]
    return found


@pytest.mark.build
@pytest.mark.parametrize("example, source", _example_sources(), ids=lambda p: p.name)
def test_example_compiles_against_the_oldest_supported_torch(example, source, tmp_path, monkeypatch):
    import os
    import sysconfig

    # One target, 9.0: the CUTLASS Hopper sources of matmul ops (*_sm90.cu) then compile as a 9.0 build
    # compiles them (sm_90a, KG_SM90A, the CUTLASS headers), and every other .cu for sm_90a too.
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", "9.0")
    monkeypatch.delenv("KERNELGEN_NO_CUTLASS", raising=False)

    include = os.environ.get(OLDEST_INCLUDE_ENV)
    if not include:
        pytest.skip(f"{OLDEST_INCLUDE_ENV} is not set (tests/run.sh sets it to torch 2.10's headers)")
    include_dir = Path(include)
    assert (include_dir / "torch/csrc/stable/library.h").is_file(), f"{include_dir} holds no torch headers"
    spec = importlib.util.spec_from_file_location("_build_for_headers", example / _answers(example)["package"] / "_build.py")
    assert spec is not None and spec.loader is not None
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    assert build.target_version() == "2.10"
    assert f"torch-{build.target_version()}" in str(include_dir), include_dir  # the headers of that version
    cxx_flags, nvcc_flags = build.compile_flags(True)
    includes = [f"-I{include_dir}", f"-I{include_dir}/torch/csrc/api/include", f"-I{sysconfig.get_paths()['include']}"]
    cuda_home = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    if source.suffix == ".cu":
        arch = [] if any(flag.startswith("-gencode") for flag in nvcc_flags) else ["-gencode=arch=compute_90,code=sm_90"]
        command = [f"{cuda_home}/bin/nvcc", "-std=c++17", *nvcc_flags, *includes, *arch,
                   "-c", str(source), "-o", str(tmp_path / "kernel.o")]
    else:
        command = [os.environ.get("CXX", "g++"), "-std=c++17", "-fsyntax-only", *cxx_flags, *includes,
                   f"-I{cuda_home}/include", str(source)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, f"{source.relative_to(REPO)} does not compile against {include_dir}:\n{result.stderr[-3000:]}"


@pytest.mark.build
def test_the_oldest_headers_refuse_an_api_added_after_them(tmp_path):
    """The check above can fail: STABLE_TORCH_ERROR_CODE_CHECK (torch 2.11+) compiles against the
    installed torch and not against the oldest headers."""
    import os

    include = os.environ.get(OLDEST_INCLUDE_ENV)
    if not include:
        pytest.skip(f"{OLDEST_INCLUDE_ENV} is not set (tests/run.sh sets it to torch 2.10's headers)")
    source = tmp_path / "newer_api.cpp"
    source.write_text("#include <torch/csrc/stable/library.h>\n"
                      "void check(AOTITorchError code) { STABLE_TORCH_ERROR_CODE_CHECK(code); }\n")
    flags = ["-std=c++17", "-fsyntax-only", "-DTORCH_TARGET_VERSION=0x020a000000000000", str(source)]
    newest = _torch_dir() / "include"
    results = {}
    for name, root in (("installed", newest), ("oldest", Path(include))):
        results[name] = subprocess.run([os.environ.get("CXX", "g++"), f"-I{root}", f"-I{root}/torch/csrc/api/include",
                                        *flags], capture_output=True, text=True, timeout=300, check=False)
    assert results["installed"].returncode == 0, results["installed"].stderr[-2000:]
    assert results["oldest"].returncode != 0 and "STABLE_TORCH_ERROR_CODE_CHECK" in results["oldest"].stderr
