"""Names and option values from the security issue: each bad one gets a one-line SpecError with a
param, never a traceback, and the good ones people really use keep working."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kernelgen import names, reserved, template_scan
from kernelgen import torch_namespaces as torch_ns
from kernelgen.errors import InvalidNameError, SpecError
from kernelgen.spec import (
    KINDS,
    OpSpec,
    check_namespace,
    normalize_op_name,
    normalize_package_name,
    parse_arch_list,
    parse_dtypes,
    parse_inputs,
)


def _one_line(err: SpecError, param: str) -> str:
    message = str(err)
    assert "\n" not in message and "\r" not in message
    assert len(message) < 400
    message.encode("ascii")
    assert err.param == param
    return message


# ---- C and CUDA names -----------------------------------------------------------------------

C_NAMES = ["int64_t", "int32_t", "uint8_t", "int_fast16_t", "size_t", "ptrdiff_t", "printf", "malloc", "free",
           "memcpy", "strlen", "atoi", "qsort", "floor", "ceil", "fabs", "log10", "expf", "sinf", "fmaxl", "gamma",
           "j0", "y1", "dim3", "float4", "int2", "uchar3", "ulonglong4_32a", "make_float4", "half", "nv_bfloat16",
           "clock64", "normcdf"]


@pytest.mark.parametrize("name", C_NAMES)
def test_c_and_cuda_names_are_accepted_and_mapped_in_the_cpp(name):
    """An op, input or namespace may be named like a C or CUDA library name: the op's C++ namespace
    becomes <name>_op (a namespace of that name would clash with ::<name>), and names passed to the
    torch library macros are only pasted and stringified there."""
    assert normalize_op_name(name) == name
    assert names.cpp_namespace(name) == f"{name}_op"
    assert parse_inputs(f"a,{name}") == ("a", name)
    assert check_namespace(name, derived_from_op=False) == name


@pytest.mark.parametrize("name", ["linux", "unix", "stdin", "major"])
def test_c_macros_are_refused_as_namespace_and_mapped_as_input(name):
    with pytest.raises(InvalidNameError) as info:
        check_namespace(name, derived_from_op=False)
    assert "C macro" in _one_line(info.value, "namespace")
    assert names.cpp_namespace(name) == f"{name}_op"
    assert names.input_identifiers(("x", name), "op", "op", "op")[name] == f"{name}_arg"


def test_the_c_and_cuda_list_covers_what_the_issue_names():
    expected = {"int64_t", "uint64_t", "size_t", "printf", "malloc", "free", "memcpy", "floor", "ceil", "fabs", "exp",
                "log", "assert", "NULL", "dim3", "float4", "double2", "half", "nv_bfloat16", "threadIdx", "blockIdx",
                "blockDim", "gridDim", "warpSize", "cudaStream_t"}
    assert expected <= reserved.C_AND_CUDA_NAMES
    # every CUDA vector type, generated rather than typed
    for base in ("char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "longlong", "ulonglong",
                 "float", "double"):
        assert {f"{base}{n}" for n in (1, 2, 3, 4)} <= reserved.C_AND_CUDA_NAMES


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
def test_the_listed_names_really_clash_with_a_global_namespace(tmp_path):
    """What the list is for: the generated C++ opens `namespace <op_name>` at global scope."""
    def compiles(name: str) -> bool:
        source = tmp_path / f"{name}.cpp"
        source.write_text(f"#include <cmath>\n#include <cstdint>\n#include <cstring>\nnamespace {name} {{ int f(); }}\n")
        done = subprocess.run(["g++", "-std=c++17", "-fsyntax-only", str(source)], capture_output=True, timeout=60)
        return done.returncode == 0

    assert compiles("myop")
    for name in ("floor", "int64_t", "memcpy", "gamma"):
        assert name in reserved.C_AND_CUDA_NAMES and not compiles(name), name
        assert compiles(names.cpp_namespace(name)), name


def test_a_package_name_is_not_a_cpp_identifier_so_c_names_are_fine_there():
    assert normalize_package_name("gamma") == "gamma"
    with pytest.raises(InvalidNameError):
        normalize_package_name("sympy")


# ---- modules --------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["sympy", "jinja2", "filelock", "networkx", "fsspec", "typing_extensions", "numpy",
                                  "setuptools", "triton", "pytest", "mpmath", "markupsafe", "packaging", "yaml",
                                  "click", "copier", "pluggy", "json", "asyncio"])
def test_op_names_that_shadow_a_dependency_or_the_stdlib_are_refused(name):
    with pytest.raises(InvalidNameError) as info:
        normalize_op_name(name)
    assert "reserved" in _one_line(info.value, "op_name")


def test_a_module_installed_here_is_refused_for_a_new_package_only(tmp_path, monkeypatch):
    site = tmp_path / "site"
    site.mkdir()
    (site / "kg_probe_module.py").write_text("")
    (site / "kg_probe_namespace").mkdir()  # a bare directory: a namespace package, not a module
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InvalidNameError) as info:
        normalize_op_name("kg_probe_module", check_installed=True)
    assert "installed module 'kg_probe_module'" in _one_line(info.value, "op_name")
    with pytest.raises(InvalidNameError):
        normalize_package_name("kg-probe-module", check_installed=True)
    assert normalize_op_name("kg_probe_module") == "kg_probe_module"  # kernelgen add/update: its own package
    assert normalize_op_name("kg_probe_namespace", check_installed=True) == "kg_probe_namespace"
    # a package right in the current directory is the one being generated, not a clash
    monkeypatch.chdir(site)
    assert reserved.installed_module("kg_probe_module") is None


def test_installed_module_never_raises(monkeypatch):
    def broken(name):
        raise ValueError("broken finder")

    monkeypatch.setattr("importlib.util.find_spec", broken)
    assert reserved.installed_module("kg_never_imported_name") is None


# ---- input names against the templates ------------------------------------------------------

def _template_names():
    return template_scan.op_template_names(frozenset(kind for kind in KINDS if kind != "elementwise"))


@pytest.mark.parametrize("inputs, mapped", [
    ("dtype", {"dtype": "dtype_arg"}),
    ("x,stream", {"stream": "stream_arg"}),
    ("t,x", {"t": "t_arg"}),  # `for name, t in ...` in ops/<op>.py would rebind it
    ("a,a_contig", {"a": "a_arg"}),  # a yields: its local a_contig would be the other input
    ("x_ptr,x", {"x": "x_arg"}),
    ("torch,out,q,eps", {"torch": "torch_arg", "out": "out_arg"}),
    ("out_arg,out,dtype", {"out": "out_arg2", "dtype": "dtype_arg"}),  # a mangled name never takes a user's name
])
def test_input_names_that_collide_with_the_templates_are_mapped(inputs, mapped):
    names_in = parse_inputs(inputs)
    ids = names.input_identifiers(names_in, "op", "op", "op")
    assert {n: i for n, i in ids.items() if n != i} == mapped
    # every identifier and every local derived from it is unique and outside the templates' names
    used = _template_names()
    forms = [f"{p}{ident}{s}" for ident in ids.values() for p, s in {("", ""), *used.affixes}]
    assert len(forms) == len(set(forms))


def test_common_input_names_are_accepted():
    common = ("a", "b", "c", "x", "y", "w", "bias", "gate", "up", "z")
    assert parse_inputs(",".join(common)) == common
    assert parse_inputs("a,b,c,d") == ("a", "b", "c", "d")
    spec = OpSpec.create("gated", inputs="x,gate,up,bias", expr="x * sigmoid(gate) * up + bias")
    assert spec.inputs == ("x", "gate", "up", "bias")


def test_the_template_identifiers_are_derived_from_the_templates():
    used = _template_names()
    assert {"dtype", "stream", "harness", "scalar_t", "acc_t"} <= set(used.identifiers)
    assert {("", "_contig"), ("", "_ptr")} <= used.affixes
    # prose in comments and docstrings is not code
    assert "Differentiable" not in used.identifiers and "specification" not in used.identifiers


def test_the_derivation_is_generic(tmp_path, monkeypatch):
    """A template rewritten tomorrow: its new locals are refused without touching kernelgen."""
    (tmp_path / "copier.yml").write_text("")
    op = tmp_path / "elementwise" / "csrc"
    op.mkdir(parents=True)
    (op / "k.cpp.jinja").write_text(
        "// widget: only a comment\n"
        "void f({% for v in inputs %}const float* {{ v }}{{ ', ' if not loop.last }}{% endfor %}) {\n"
        "  int frobnicate = 0;  /* gizmo */\n"
        '  const char* msg = "doohickey";\n'
        "{% for v in inputs %}\n  auto {{ v }}_stride = 1;\n{% endfor %}\n"
        "  launch_{{ op_name }}(frobnicate);\n"
        "}\n"
    )
    (op / "k.py.jinja").write_text('"""thingamajig"""\nquux = 1  # whatsit\nprint(f"{quux} sprocket")\n')
    (tmp_path / "matmul").mkdir()
    (tmp_path / "matmul" / "m.cpp.jinja").write_text("int only_in_matmul = 0;\n")
    monkeypatch.setattr("kernelgen.paths.template_dir", lambda: tmp_path)
    used = _template_names()
    assert {"frobnicate", "quux", "msg", "f", "print"} <= set(used.identifiers)
    assert not {"widget", "gizmo", "doohickey", "thingamajig", "whatsit", "sprocket", "launch_", "only_in_matmul"} & set(used.identifiers)
    assert used.affixes == {("", "_stride")}
    assert used.op_affixes == {("launch_", "")}
    ids = names.input_identifiers(("frobnicate", "quux", "a", "a_stride", "widget", "launch_op"), "op", "op", "op")
    assert ids == {"frobnicate": "frobnicate_arg", "quux": "quux", "a": "a_arg", "a_stride": "a_stride",
                   "widget": "widget", "launch_op": "launch_op_arg"}


def test_the_safe_input_names_are_safe_in_the_templates():
    """Each allow-listed name the templates use is, in every file that renders input names in
    code, only a comprehension variable (its own scope): it cannot rebind an input."""
    from kernelgen.paths import template_dir

    used = _template_names()
    root = template_dir()
    checked = 0
    for name in sorted(names.SAFE_INPUT_NAMES & set(used.identifiers)):
        for rel in used.identifiers[name]:
            if rel not in used.input_files:
                continue  # the file never renders an input name outside strings
            path = root / rel
            code = template_scan.template_code(path.read_text(), Path(path.name[: -len(".jinja")]).suffix)
            assert code is not None
            for line in code.splitlines():
                if re.search(rf"(?<![\w.]){name}(?!\w)", line):
                    assert re.search(rf"[\[(].*\bfor\s+(?:\w+\s*,\s*)*{name}(?:\s*,\s*\w+)*\s+in\b", line), (rel, line)
                    checked += 1
    assert checked >= 1  # today: x in the generator of ops/<op>.py's backward


# ---- arch list, dtypes, empty values --------------------------------------------------------

@pytest.mark.parametrize("value, fragment", [
    ("９.０", "bad --arch-list entry"),
    ("8.0;９.０", "bad --arch-list entry"),
    ("8.0\u20039.0", "bad --arch-list entry"),  # a Unicode space is no separator
    ("9" * 5000 + ".0", "at most 3 per number"),
    ("1000.0", "at most 3 per number"),
    (";".join(["9.0"] * 40), "at most 32"),
    ("", "--arch-list is empty"),
    (" ; ", "--arch-list is empty"),
])
def test_bad_arch_lists(value, fragment):
    started = time.perf_counter()
    with pytest.raises(SpecError) as info:
        parse_arch_list(value)
    assert fragment in _one_line(info.value, "arch_list")
    assert time.perf_counter() - started < 0.5


def test_good_arch_lists_still_pass():
    assert parse_arch_list("8.0;9.0+PTX") == "8.0;9.0+PTX"
    assert parse_arch_list("10.0a, 12.0f") == "10.0a;12.0f"


@pytest.mark.parametrize("call, param", [
    (lambda: parse_dtypes(""), "dtypes"),
    (lambda: parse_dtypes("fp32,,bf16"), "dtypes"),
    (lambda: parse_dtypes([]), "dtypes"),
    (lambda: parse_dtypes(["fp32", 3]), "dtypes"),
    (lambda: parse_dtypes(None), "dtypes"),
    (lambda: parse_arch_list(""), "arch_list"),
    (lambda: parse_arch_list(9.0), "arch_list"),
    (lambda: parse_inputs(""), "inputs"),
    (lambda: parse_inputs([]), "inputs"),
    (lambda: parse_inputs(["a", 3]), "inputs"),
    (lambda: check_namespace("", derived_from_op=False), "namespace"),
    (lambda: check_namespace(None, derived_from_op=False), "namespace"),
    (lambda: OpSpec.create("op", inputs="x", expr="x", namespace=""), "namespace"),
    (lambda: OpSpec.create("op", inputs="x", expr="x", dtypes=""), "dtypes"),
])
def test_empty_and_mistyped_values_are_errors_not_defaults(call, param):
    with pytest.raises(SpecError) as info:
        call()
    _one_line(info.value, param)


# ---- torch.ops namespaces -------------------------------------------------------------------

def _installed_torch_namespaces() -> frozenset[str]:
    pytest.importorskip("torch")
    found = torch_ns.live_torch_namespaces()
    assert {"aten", "prims", "sparse", "quantized", "profiler"} <= found
    return found


def test_every_namespace_the_installed_torch_registers_is_refused():
    for ns in sorted(_installed_torch_namespaces()):
        with pytest.raises(SpecError) as info:
            check_namespace(ns, derived_from_op=False)
        _one_line(info.value, "namespace")
        with pytest.raises(SpecError) as info:
            check_namespace(ns, derived_from_op=True)
        _one_line(info.value, "op_name")


def test_the_recorded_list_alone_refuses_them_without_asking_torch(monkeypatch):
    monkeypatch.setenv(torch_ns.NO_TORCH_QUERY_ENV, "1")

    def no_query():
        raise AssertionError("torch was asked despite KERNELGEN_NO_TORCH_QUERY=1")

    monkeypatch.setattr(torch_ns, "live_torch_namespaces", no_query)
    recorded = torch_ns.RECORDED_TORCH_NAMESPACES | torch_ns.OTHER_TORCH_NAMESPACES
    assert {"aten", "prim", "prims", "sparse", "quantized", "profiler", "inductor", "mkl", "quantization",
            "_c10d_functional", "higher_order", "load_library"} <= recorded
    for ns in sorted(recorded):
        for derived, param in ((False, "namespace"), (True, "op_name")):
            with pytest.raises(SpecError) as info:
                check_namespace(ns, derived_from_op=derived)
            _one_line(info.value, param)
    assert check_namespace("myteam", derived_from_op=False) == "myteam"


def test_the_recorded_list_is_up_to_date_for_the_torch_it_came_from():
    torch = pytest.importorskip("torch")
    if torch.__version__ != torch_ns.RECORDED_FROM_TORCH:
        pytest.skip(f"recorded from torch {torch_ns.RECORDED_FROM_TORCH}, this is {torch.__version__}")
    assert _installed_torch_namespaces() <= torch_ns.RECORDED_TORCH_NAMESPACES


def test_without_torch_the_live_query_is_empty(monkeypatch):
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    monkeypatch.setattr("importlib.util.find_spec", lambda name: None)
    assert torch_ns.live_torch_namespaces.__wrapped__() == frozenset()


def test_namespace_messages_suggest_a_fix():
    with pytest.raises(SpecError) as info:
        check_namespace("sparse", derived_from_op=False)
    message = _one_line(info.value, "namespace")
    assert message.startswith("'sparse' is a namespace PyTorch owns (torch.ops.sparse")
    assert "--namespace myteam" in message
    with pytest.raises(SpecError) as info:
        OpSpec.create("sparse", inputs="x", expr="x")
    assert "--namespace <team>" in _one_line(info.value, "op_name")
    with pytest.raises(SpecError) as info:
        OpSpec.create("myop", inputs="x", expr="x", namespace="aten")
    _one_line(info.value, "namespace")
    with pytest.raises(SpecError) as info:
        check_namespace("_mine", derived_from_op=False)
    assert "starts or ends with '_'" in _one_line(info.value, "namespace")


def test_only_the_effective_namespace_is_checked():
    assert normalize_op_name("sparse") == "sparse"
    spec = OpSpec.create("sparse", inputs="x", expr="x * 2", namespace="myteam")
    assert spec.op_name == "sparse" and spec.namespace == "myteam"


# ---- giant values ---------------------------------------------------------------------------

@pytest.mark.parametrize("call, param", [
    (lambda big: normalize_op_name(big), "op_name"),
    (lambda big: normalize_op_name("x" * 100_000), "op_name"),
    (lambda big: parse_inputs(big), "inputs"),
    (lambda big: parse_inputs(",".join(["x"] * 50_000)), "inputs"),
    (lambda big: parse_inputs("x" * 100_000), "inputs"),
    (lambda big: check_namespace(big, derived_from_op=False), "namespace"),
    (lambda big: parse_dtypes(big), "dtypes"),
    (lambda big: parse_arch_list(big), "arch_list"),
    (lambda big: OpSpec.create("op", inputs="x", expr="x*" + "1" * 100_000), "expr"),
])
def test_giant_values_are_cheap_one_line_errors(call, param):
    big = "".join(chr(0x20 + (i * 7919) % 0x5F) for i in range(100_000))
    started = time.perf_counter()
    with pytest.raises(SpecError) as info:
        call(big)
    _one_line(info.value, param)
    assert time.perf_counter() - started < 1.0
