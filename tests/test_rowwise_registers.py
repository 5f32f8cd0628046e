"""The rowwise CUDA kernel holds a row of several inputs in registers without spilling: ptxas at sm_90
on the generated kernel file (no GPU needed). A spilled row ran the two-input RMSNorm in bfloat16 at 32%
of a copy's bandwidth (docs/rowwise_diagnosis.md)."""

from __future__ import annotations

import importlib.util
import re
import subprocess
from pathlib import Path

import pytest
from conftest import cuda_toolkit

from kernelgen.render import generate
from kernelgen.spec import OpSpec, PackageSpec

CASES = {
    # The residual RMSNorm: two inputs, one weight.
    "resrms": ("x,res", "w", "(x + res) * rsqrt(mean((x + res) * (x + res)) + 1e-6) * w"),
    # Four inputs: elements per thread shrink to keep the row in 32 registers.
    "quad4": ("a,c,d,e", "w", "(a * c + d - e) * rsqrt(mean((a * c + d - e) ** 2) + 1e-6) * w"),
    # One input and a kept argument: the 2-byte types also take a deep cluster build (64 elements a thread).
    # (Its float64 kernels spill: float64 is reported, not a target.)
    "softmax": ("x", "", "exp(x - max(x)) / sum(exp(x - max(x)))"),
    # Seed 45's r16 of the rowwise sweep: two inputs, three reductions, a weight inside one. Its row fits
    # the budget at 32 elements a thread, and its formula's temporaries do not fit beside it.
    "r16": ("x1,x2", "w1,w2", "sigmoid(((x2 * x1 / (abs(sum(x2 * x1 * (x2 * x1) * w2)) + 1.0) + mean(x2 * x1)) * "
            "rsqrt(mean(x2 * x1 * (x2 * x1)) * mean(x2 * x1 * (x2 * x1)) + 1e-06) + mean(x2 * x1)) * w1)"),
    # Seed 59's r13 of the rowwise sweep: two inputs, no weights, seven backward reductions.
    "r13": ("x1,x2", "", "(x1 + x2) * rsqrt(mean((x1 + x2) * (x1 + x2)) * mean((x1 + x2) * (x1 + x2)) + 1e-06) + "
            "min(x1 - mean((x1 + x2) * (x1 + x2))) + max(x1 + x2)"),
    # A cosine squared, and its control with the cosine once: the compiler computes cos(x) once in both
    # (opmath's sin and cos are declared const in device code).
    "cos2": ("x", "", "cos(x) * cos(x) * sin(x) - mean(x)"),
    "cos1": ("x", "", "cos(x) * sin(x) - mean(x)"),
}
# kg::rowwise::rows_kernel<op::Op, dtype, kVec, ...> and cluster_rows_kernel<...>, which holds longer rows
# in a cluster of blocks the same way (the package's csrc/kernelgen/rowwise.cuh).
_ENTRY = re.compile(r"Compiling entry function '\w*?\d((?:cluster_)?)rows_kernelIN\d+\w*?2OpE(f|d|N3c104HalfE|N3c108BFloat16E)Li(\d+)E(\w*)' for 'sm_90'")


def _nvcc(op: str, tmp_path: Path, *output: str) -> subprocess.CompletedProcess:
    """nvcc at sm_90 on the op's generated kernel file, with its package's flags; `output` names what
    to make ("-ptx", or "-cubin" with ptxas -v) and where (-o, under tmp_path)."""
    toolkit = cuda_toolkit()
    if toolkit is None:
        pytest.skip("no CUDA toolkit (nvcc)")
    import torch.utils.cpp_extension as cpp

    inputs, weights, expr = CASES[op]
    spec = OpSpec.create(op, kind="rowwise", inputs=inputs, weights=weights, expr=expr)
    root = generate(PackageSpec.for_new_op(spec), tmp_path, force=False)
    build_py = root / op / "_build.py"
    module_spec = importlib.util.spec_from_file_location("_rowwise_build", build_py)
    assert module_spec is not None and module_spec.loader is not None
    build = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(build)
    _, nvcc_flags = build.compile_flags(True)
    includes = [f"-I{path}" for path in cpp.include_paths()]
    kernel = root / op / "csrc" / op / "cuda" / f"{op}_kernel.cu"
    command = [f"{toolkit}/bin/nvcc", "-std=c++17", *cpp.COMMON_NVCC_FLAGS, *nvcc_flags, *includes,
               "-gencode=arch=compute_90,code=sm_90", *output, str(kernel)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def _ptxas_report(op: str, tmp_path: Path, entry: re.Pattern[str] | None = None) -> dict[str, tuple[int, int]]:
    """kernel -> (registers, spill-store bytes) of every register-row kernel in the op's kernel file (of the
    kernels whose entry line `entry` matches: the key is its groups joined by '/')."""
    result = _nvcc(op, tmp_path, "-cubin", "-Xptxas", "-v", "-o", str(tmp_path / "k.cubin"))
    found: dict[str, tuple[int, int]] = {}
    name = None
    for line in result.stderr.splitlines():
        m = (entry or _ENTRY).search(line)
        if m:
            name = "/".join(m.groups()) if entry else f"{m.group(2)}/vec {m.group(3)}/{m.group(1)}{m.group(4)}"
            continue
        m = re.search(r"(\d+) bytes spill stores", line)
        if m and name:
            spills = int(m.group(1))
        m = re.search(r"Used (\d+) registers", line)
        if m and name:
            found[name] = (int(m.group(1)), spills)
            name = None
    return found


@pytest.mark.build
@pytest.mark.parametrize("op", ["quad4", "resrms"])
def test_the_vector_register_kernels_do_not_spill(op, tmp_path):
    report = _ptxas_report(op, tmp_path)
    vector = {name: figures for name, figures in report.items() if "/vec 1/" not in name}
    # float32, float64, float16, bfloat16: a kernel of 16-byte accesses for each, one or more shapes,
    # and a cluster kernel for each.
    assert {name.split("/")[0] for name in vector} == {"f", "d", "N3c104HalfE", "N3c108BFloat16E"}, sorted(report)
    assert {name.split("/")[0] for name in vector if "/cluster_" in name} == {"f", "d", "N3c104HalfE", "N3c108BFloat16E"}, sorted(report)
    # The cluster kernel is built twice: for two blocks an SM (64 registers) and for three (40), which the
    # launch takes only where it does not spill. The first must never spill; the second may.
    dense = {name for name in vector if re.search(r"/cluster_Li\d+ELi\d+ELi3ELb[01]EJ", name)}
    assert {name.split("/")[0] for name in dense} == {"f", "d", "N3c104HalfE", "N3c108BFloat16E"}, sorted(report)
    spilled = {name: figures for name, figures in vector.items() if figures[1] and name not in dense}
    assert not spilled, f"{op}: kernels spilling (registers, bytes): {spilled}"
    assert all(registers <= 64 for registers, _ in vector.values())
    assert all(vector[name][0] <= 40 for name in dense)


@pytest.mark.build
def test_the_deep_cluster_build_holds_64_elements_without_spilling(tmp_path):
    # Rows of more than 8 blocks of 32 elements: one 2-byte input takes 64 elements a thread, and the output
    # computes the kept exp(x - max) again (Lb0: not kept), so that the row still fits 32 registers.
    report = _ptxas_report("softmax", tmp_path)
    deep = {name: figures for name, figures in report.items() if re.search(r"/cluster_Li64ELi0ELi2ELb0EJ", name)}
    assert {name.split("/")[0] for name in deep} == {"N3c104HalfE", "N3c108BFloat16E"}, sorted(report)
    assert all(spills == 0 and registers <= 64 for registers, spills in deep.values()), deep
    # float32 holds 32 elements a thread either way: no deep build.
    assert not [name for name in report if name.startswith("f/") and "Li64E" in name], sorted(report)


@pytest.mark.build
def test_a_two_input_op_has_a_narrow_build_that_does_not_spill(tmp_path):
    # The launch compares each register kernel's local memory with its narrow build's (the row in 16
    # registers, 16 elements a thread of a 2-byte type) and takes the one that spills less, so the narrow
    # builds must be there, in blocks of 512 threads and of 1024 (rows of 16384), and hold the formula in
    # their 64 registers.
    report = _ptxas_report("r16", tmp_path)
    for dtype in ("N3c104HalfE", "N3c108BFloat16E"):
        narrow = {name: figures for name, figures in report.items()
                  if name.startswith(f"{dtype}/vec 8/") and re.match(r"Li16ELi0ELi(512|1024)E", name.split("/")[2])}
        assert len(narrow) == 2, sorted(report)
        assert all(spills == 0 and registers <= 64 for registers, spills in narrow.values()), narrow


# kg::rowwise::grad_rows_kernel<op::GradOp, dtype, kVec, kPer, kFixedThreads, kMaxThreads, kMinBlocks, ...>
_GRAD_ENTRY = re.compile(r"\.entry\s+\w*?grad_rows_kernelI\w*?6GradOpE(f|d|N3c104HalfE|N3c108BFloat16E)"
                         r"Li(\d+)ELi(\d+)ELi(\d+)ELi(\d+)E")


@pytest.mark.build
def test_the_backward_scalar_path_holds_rows_of_at_most_512_threads(tmp_path):
    # Misaligned rows take the scalar build (kVec 1). A 1024-thread scalar build would hold a row of 32
    # scalars a thread beside the derivative in 64 registers: it spilled, and ptxas took minutes on it for a
    # heavy formula. The launch sends those rows to the multi-pass kernel instead, so no such build exists;
    # the 16-byte path keeps its 1024-thread builds.
    _nvcc("resrms", tmp_path, "-ptx", "-o", str(tmp_path / "k.ptx"))
    builds = [(dtype, int(vec), int(most)) for dtype, vec, _, _, most in _GRAD_ENTRY.findall((tmp_path / "k.ptx").read_text())]
    assert {dtype for dtype, _, _ in builds} == {"f", "d", "N3c104HalfE", "N3c108BFloat16E"}, builds
    assert [b for b in builds if b[1] == 1] and all(most <= 512 for _, vec, most in builds if vec == 1), builds
    assert {dtype for dtype, vec, most in builds if vec > 1 and most == 1024} == {"f", "d", "N3c104HalfE", "N3c108BFloat16E"}, builds


@pytest.mark.build
def test_a_backward_of_many_reductions_has_no_1024_thread_build_of_one_vector_a_thread(tmp_path):
    # r13's backward has seven reductions and no weights. Its wide build (1024 threads, one block an SM) holds
    # one 16-byte vector of each column a thread in float16 and bfloat16 (8 elements): there the launch takes
    # the multi-pass kernel (GradLaunch::kWideHoldsBarriers; 0.57-0.89x the wide build's time on an H200,
    # docs/backward.md "Stop 59"), so no such build exists. float32 holds two vectors a thread (8 elements)
    # in its wide build and keeps it, as float64 does.
    _nvcc("r13", tmp_path, "-ptx", "-o", str(tmp_path / "k.ptx"))
    builds = [(dtype, int(vec), int(per), int(most)) for dtype, vec, per, _, most in _GRAD_ENTRY.findall((tmp_path / "k.ptx").read_text())]
    wide = {(dtype, per) for dtype, vec, per, most in builds if vec > 1 and most == 1024}
    assert {dtype for dtype, _ in wide} == {"f", "d"}, builds
    assert ("f", 8) in wide, builds
    # The 2-byte types keep their 512-thread builds of the same elements a thread (rows of up to 4096).
    assert {(dtype, per) for dtype, vec, per, most in builds if vec == 8 and most == 512} == {
        ("N3c104HalfE", 8), ("N3c108BFloat16E", 8)}, builds


# kg::rowwise::grad_cluster_rows_kernel<op::GradOp, dtype, kVec, kPerThread, kWeightGrads, ...>
_GRAD_CLUSTER_ENTRY = re.compile(r"Compiling entry function '\w*?grad_cluster_rows_kernelI\w*?6GradOpE(f|d|N3c104HalfE|N3c108BFloat16E)"
                                 r"Li(\d+)ELi(\d+)E")


@pytest.mark.build
def test_the_backward_cluster_build_holds_a_heavy_derivative_without_spilling(tmp_path):
    # r16's backward spills in its 1024-thread build (64 registers a thread) at rows of 16384; the launch then
    # takes the cluster build, the row split over blocks of 512 threads at up to 128 registers a thread. It
    # exists for the 16-byte path of float16 and bfloat16 (not float32 or float64, whose launch never takes it,
    # nor misaligned rows), holds the wide build's elements a thread, and must not spill itself.
    report = _ptxas_report("r16", tmp_path, _GRAD_CLUSTER_ENTRY)
    builds = {key.split("/")[0]: (int(key.split("/")[1]), int(key.split("/")[2]), spills) for key, (_, spills) in report.items()}
    assert all(registers <= 128 for registers, _ in report.values()), report
    assert set(builds) == {"N3c104HalfE", "N3c108BFloat16E"}, builds
    assert builds["N3c104HalfE"][0] == builds["N3c108BFloat16E"][0] == 8, builds
    assert all(per_thread >= 8 and spills == 0 for _, per_thread, spills in builds.values()), builds


# kg::rowwise::grad_long_rows_kernel<op::GradOp, dtype, kVec, kWeightGrads, ...>, up to its body's brace: the
# launch bounds ptxas reads (.maxntid, .minnctapersm) stand between the parameters and the body.
_GRAD_LONG_ENTRY = re.compile(r"\.entry\s+\w*?grad_long_rows_kernelI\w*?6GradOpE(f|d|N3c104HalfE|N3c108BFloat16E)"
                              r"Li(\d+)ELb([01])E[^{]*")


@pytest.fixture(scope="module")
def ptx(tmp_path_factory):
    """The PTX of an op's kernel file, compiled once for the module's tests."""
    texts: dict[str, str] = {}

    def compiled(op: str) -> str:
        if op not in texts:
            folder = tmp_path_factory.mktemp(op)
            _nvcc(op, folder, "-ptx", "-o", str(folder / f"{op}.ptx"))
            texts[op] = (folder / f"{op}.ptx").read_text()
        return texts[op]
    return compiled


# The entry of kg::rowwise::grad_cluster_rows_kernel<op::GradOp, dtype, kVec, kPerThread, ...> in PTX.
_GRAD_CLUSTER_PTX = re.compile(r"\.entry\s+\w*?grad_cluster_rows_kernelI\w*?6GradOpE(f|d|N3c104HalfE|N3c108BFloat16E)")


@pytest.mark.build
def test_the_backward_cluster_build_is_compiled_for_the_2_byte_types_with_and_without_weights(ptx):
    # The launch takes the cluster build with weights, and without them where two of its blocks share an SM
    # (GradLaunch::cluster_pays, a runtime answer: an x * tanh(max(x)) of 64 registers ran 1.23-1.34x faster in it
    # on an H200, template version 45, docs/backward.md "Stop 61"). So both kinds of backward have the build,
    # for float16 and bfloat16 only.
    built = {op: {m.group(1) for m in _GRAD_CLUSTER_PTX.finditer(ptx(op))} for op in ("resrms", "softmax")}
    assert built == {"resrms": {"N3c104HalfE", "N3c108BFloat16E"}, "softmax": {"N3c104HalfE", "N3c108BFloat16E"}}, built


@pytest.mark.build
def test_the_multi_pass_backward_asks_for_two_blocks_an_sm_only_with_weight_gradients(ptx):
    # With weight gradients the multi-pass kernel keeps a group of rows' running sums in registers and is built
    # for two 512-thread blocks an SM (.minnctapersm 2: at most 64 registers). Without them it names no
    # minimum: a minimum of one block let ptxas take more registers than with none (seed 56's r03 in bfloat16
    # 60 -> 70, csilu 32 -> 47), fewer blocks fit an SM, and the backward ran up to 1.28x the time on an H200
    # (template version 38, docs/backward.md "Stop 57").
    builds = {}
    for op in ("resrms", "softmax"):  # a weight; none
        for m in _GRAD_LONG_ENTRY.finditer(ptx(op)):
            minimum = re.search(r"\.minnctapersm\s+(\d+)", m.group(0))
            builds[(op, m.group(1), int(m.group(2)), m.group(3) == "1")] = int(minimum.group(1)) if minimum else None
    assert {(op, dtype) for op, dtype, _, _ in builds} == {(op, dtype) for op in ("resrms", "softmax")
                                                          for dtype in ("f", "d", "N3c104HalfE", "N3c108BFloat16E")}, builds
    assert {(op, weights) for op, _, _, weights in builds} == {("resrms", True), ("softmax", False)}, builds
    assert all(minimum == (2 if weights else None) for (_, _, _, weights), minimum in builds.items()), builds


# The forward's kg::rowwise::rows_kernel<op::Op, dtype, ...> in PTX, up to the next entry.
_ROWS_PTX = re.compile(r"\.entry\s+\w*?\d+rows_kernelIN\d+\w*?2OpE(f|d|N3c104HalfE|N3c108BFloat16E)[\s\S]*?(?=\.entry|\Z)")


@pytest.mark.build
def test_a_rows_maximum_and_minimum_in_float_are_one_instruction_each(ptx):
    # opmath's min and max of float take min.NaN.f32 / max.NaN.f32 (sm_80 and later): NaN-propagating, one
    # instruction where a compare-and-select takes three. Three max/min reductions over float16 rows ran
    # 0.64-0.72x the time with them (seed 64's r10, H200, template version 46, docs/backward.md "Stop 62").
    # float64 keeps the compare-and-select (PTX has no max.NaN.f64).
    for op, instruction in (("softmax", "max.NaN.f32"), ("r13", "min.NaN.f32")):
        bodies: dict[str, list[str]] = {}
        for m in _ROWS_PTX.finditer(ptx(op)):
            bodies.setdefault(m.group(1), []).append(m.group(0))
        assert set(bodies) == {"f", "d", "N3c104HalfE", "N3c108BFloat16E"}, (op, set(bodies))
        for dtype, texts in bodies.items():
            assert all((instruction in text) == (dtype != "d") for text in texts), (op, dtype, instruction)


@pytest.mark.build
def test_a_sine_or_cosine_repeated_in_a_step_is_computed_once(ptx):
    # sinf and cosf write a local array for arguments beyond 105615 (the Payne-Hanek reduction), so the
    # compiler does not merge two inlined copies of one call unless opmath declares the function const:
    # cos(u) * cos(u) in seed 64's r09 then cost a second cosine at every element, and its float16 rows of
    # 1024 ran at 0.66x of torch.compile on an H200 (template version 46, docs/backward.md "Stop 63"). With
    # the declaration, the forward of cos(x) * cos(x) * sin(x) - mean(x) has the code of cos(x) * sin(x) -
    # mean(x) and one multiplication more an element; a second cosine would add about a hundred PTX
    # instructions an element (its slow path included).
    def instructions(op: str) -> dict[str, int]:
        found: dict[str, int] = {}
        for m in _ROWS_PTX.finditer(ptx(op)):
            lines = [line for line in m.group(0).splitlines() if line.strip().endswith(";")]
            found[m.group(1)] = found.get(m.group(1), 0) + len(lines)
        return found

    twice, once = instructions("cos2"), instructions("cos1")
    assert set(twice) == set(once) == {"f", "d", "N3c104HalfE", "N3c108BFloat16E"}, (twice, once)
    for dtype in twice:
        assert twice[dtype] <= once[dtype] * 1.05, (dtype, twice[dtype], once[dtype])
