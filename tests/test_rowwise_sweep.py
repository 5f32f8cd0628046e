"""The rowwise sweep's generator and reports (docs/device/rowwise_sweep.py): reproducible, covering the
rowwise grammar the issue names, every expression an op kernelgen accepts on both backends of one package."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from kernelgen.spec import OpSpec

_PATH = Path(__file__).resolve().parent.parent / "docs" / "device" / "rowwise_sweep.py"
_spec = importlib.util.spec_from_file_location("rowwise_sweep", _PATH)
assert _spec is not None and _spec.loader is not None
sweep = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sweep)


def test_the_expressions_are_reproducible_and_cover_the_grammar():
    items = sweep.expressions(28, 40)
    assert items == sweep.expressions(28, 40)
    assert items != sweep.expressions(29, 40)
    assert len(items) == 40 and len({item["id"] for item in items}) == 40
    assert [item["id"] for item in items[: len(sweep.FIXED)]] == [ident for ident, *_ in sweep.FIXED]
    assert {"resrms", "csilu", "wrms", "lse"} <= {item["id"] for item in items}
    random_items = [item for item in items if item["origin"].startswith("random")]
    assert {len(item["inputs"]) for item in random_items} == {1, 2, 3, 4}
    assert {len(item["weights"]) for item in random_items} == {0, 1, 2, 3}
    assert {item["reductions"] for item in items} == {1, 2, 3, 4}
    assert max(item["nesting"] for item in items) == 3
    calls = [item["calls_inside"] + item["calls_outside"] for item in items]
    assert min(calls) == 0 and max(calls) == sweep.MAX_CALLS
    assert any(item["calls_inside"] for item in random_items) and any(item["calls_outside"] for item in random_items)
    assert any(item["weights_in_reduction"] for item in random_items)
    assert any(item["weights_output_only"] for item in random_items)
    assert any(item["weights_in_reduction"] and item["weights_output_only"] for item in random_items)
    for item in items:  # canonical and accepted: creating the op parses it again
        spec = OpSpec.create(str(item["id"]), kind="rowwise", inputs=item["inputs"], weights=item["weights"] or None,
                             expr=str(item["expr"]))
        assert spec.expr == item["expr"]


def _safe_argument(func: str, arg) -> bool:
    """log, sqrt and rsqrt of abs(e) + c or of a square plus c (c > 0); exp of -abs(e) or of e - max(e)."""
    from kernelgen import nodes as ex

    if func in ("log", "sqrt", "rsqrt"):
        if not (isinstance(arg, ex.BinOp) and arg.op == "+" and isinstance(arg.right, ex.Num) and arg.right.value > 0):
            return False
        left = arg.left
        return (isinstance(left, ex.Call) and left.func == "abs") or (
            isinstance(left, ex.BinOp) and left.op == "*" and left.left == left.right)
    if func == "exp":
        return (isinstance(arg, ex.Neg) and isinstance(arg.operand, ex.Call) and arg.operand.func == "abs") or (
            isinstance(arg, ex.BinOp) and arg.op == "-" and isinstance(arg.right, ex.Reduce) and arg.right.func == "max"
            and arg.right.arg == arg.left)
    return True


def test_the_values_stay_finite_by_construction():
    """Every log, sqrt, rsqrt and exp of the random expressions takes an argument that keeps it finite,
    and a sum reaches the output only as a divisor (or under rsqrt): float16 overflows at 65504."""
    from kernelgen import nodes as ex
    from kernelgen.expr import parse

    def check(node, text: str) -> None:
        if isinstance(node, ex.Call):
            assert _safe_argument(node.func, node.args[0]), f"{node.func} in {text}"
        if isinstance(node, ex.BinOp) and node.op in "+-*":
            for side in (node.left, node.right):
                assert not (isinstance(side, ex.Reduce) and side.func == "sum"), f"a sum {node.op} in {text}"
        for child in ex.children(node):
            check(child, text)

    random_items = [item for item in sweep.expressions(28, 80) if item["origin"] != "fixed"]
    assert len(random_items) == 80 - len(sweep.FIXED)
    for item in random_items:
        parsed = parse(str(item["expr"]), tuple(item["inputs"]), weights=tuple(item["weights"]), rowwise=True)
        check(parsed.tree, str(item["expr"]))


def test_generate_writes_one_package_with_both_backends_and_a_manifest(tmp_path):
    root = sweep.generate(tmp_path, seed=28, count=3, only={"softmax", "rmsnorm"})
    manifest = json.loads((tmp_path / sweep.MANIFEST).read_text())
    assert manifest["seed"] == 28
    names = [op["name"] for op in manifest["ops"]]
    assert names == ["softmax", "softmax_tl", "rmsnorm", "rmsnorm_tl"]
    assert "namespace: rsweep" in (root / ".copier-answers.yml").read_text()
    package = root / sweep.MODULE
    for op in manifest["ops"]:
        assert (package / "ops" / f"{op['name']}.py").is_file()
        spec = OpSpec.create(op["name"], kind="rowwise", backend=op["backend"], inputs=op["inputs"],
                             weights=op["weights"] or None, expr=op["expr"])
        assert spec.expr == op["expr"]
    assert (package / "csrc" / "rmsnorm" / "cuda" / "rmsnorm_kernel.cu").is_file()
    assert not (package / "csrc" / "rmsnorm_tl").exists()  # Triton ops compile nothing


def test_generate_with_random_expressions_and_one_backend(tmp_path):
    count = len(sweep.FIXED) + 2
    sweep.generate(tmp_path, seed=28, count=count, backends=("cuda",))
    manifest = json.loads((tmp_path / sweep.MANIFEST).read_text())
    assert len(manifest["ops"]) == count and {op["backend"] for op in manifest["ops"]} == {"cuda"}
    assert [op["name"] for op in manifest["ops"]][-2:] == ["r00", "r01"]


_LOG = """\
ptxas info    : Compiling entry function '_ZN6resrms55_GLOBAL__N__ca5db523_16_resrms_kernel_cu_5bae78d8_2091218resrms_rows_kernelIN3c108BFloat16ELi8ELi32ELi0EEEvPKT_S6_S6_PS4_ll' for 'sm_90'
ptxas info    : Function properties for x
    224 bytes stack frame, 200 bytes spill stores, 256 bytes spill loads
ptxas info    : Used 64 registers, used 1 barriers, 224 bytes cumulative stack size, 64 bytes smem
ptxas info    : Compiling entry function '_ZN3r0155_GLOBAL__N__ca5db523_16_r01_kernel_cu_5bae78d8_2091218r01_rows_kernelIfLi4ELi16ELi1024ELi1024EEEvPKT_S6_S6_PS4_ll' for 'sm_90'
ptxas info    : Function properties for x
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 55 registers, used 1 barriers, 128 bytes smem
ptxas info    : Compiling entry function '_ZN3r0155_GLOBAL__N__ca5db523_16_r01_kernel_cu_5bae78d8_2091223r01_long_rows_kernelIdLi2EEEvPKT_S6_S6_PS4_l' for 'sm_90'
ptxas info    : Function properties for x
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 28 registers, used 1 barriers, 64 bytes smem
"""


def test_registers_are_read_from_a_ptxas_report_of_either_kernel_signature():
    found = sweep.registers_from_log(_LOG)
    assert found == {
        "resrms": {"rows/bfloat16/8/32/0/512": {"registers": 64, "spill_bytes": 200, "stack": 224}},
        "r01": {"rows/float32/4/16/1024/1024": {"registers": 55, "spill_bytes": 0, "stack": 0},
                "long/float64/2": {"registers": 28, "spill_bytes": 0, "stack": 0}},
    }
    facts = sweep.cuda_facts(found["r01"], "float32", 16384, inputs=2, kept=False)
    assert facts["kernel"] == "rows/float32/4/16/1024/1024" and facts["registers"] == 55 and facts["threads"] == 1024
    assert sweep.cuda_facts({}, "float32", 1024, inputs=1, kept=False) == {}


_PACKAGE_LOG = """\
ptxas info    : Compiling entry function '_ZN2kg7rowwise53_GLOBAL__N__30f3365e_14_r02_kernel_cu_e2938a44_1368211rows_kernelIN3r0253_GLOBAL__N__30f3365e_14_r02_kernel_cu_e2938a44_136822OpEN3c108BFloat16ELi8ELi32ELi0ELi512EJLm0ELm1ELm2EEEEvDpPKT0_PS8_ll' for 'sm_90'
ptxas info    : Function properties for x
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 40 registers, used 1 barriers, 64 bytes smem
ptxas info    : Compiling entry function '_ZN2kg7rowwise53_GLOBAL__N__30f3365e_14_r02_kernel_cu_e2938a44_1368216long_rows_kernelIN3r0253_GLOBAL__N__30f3365e_14_r02_kernel_cu_e2938a44_136822OpEfLi4EJLm0ELm1EEEEvDpPKT0_PS8_l' for 'sm_90'
ptxas info    : Function properties for x
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 30 registers, used 1 barriers, 64 bytes smem
"""


def test_registers_are_read_from_the_package_kernels_names():
    # Template version 11 on: the kernels are kg::rowwise::rows_kernel<op::Op, dtype, ...>.
    assert sweep.registers_from_log(_PACKAGE_LOG) == {
        "r02": {"rows/bfloat16/8/32/0/512": {"registers": 40, "spill_bytes": 0, "stack": 0},
                "long/float32/4": {"registers": 30, "spill_bytes": 0, "stack": 0}},
    }


def test_the_mirrored_launch_rule_follows_the_row_registers():
    # One input: 32 per thread from 8192 columns (float32) and for every length (2-byte types).
    assert sweep.cuda_launch("float32", 16384, 1, False)["kernel"] == "rows/float32/4/32/512/512"
    assert sweep.cuda_launch("float32", 4096, 1, False)["kernel"] == "rows/float32/4/16/0/512"
    assert sweep.cuda_launch("bfloat16", 16384, 1, True)["kernel"] == "rows/bfloat16/8/32/0/512"
    # Two inputs: 2-byte rows still fit 32 per thread; float32 takes 16 and 1024 threads at 16384.
    assert sweep.cuda_launch("bfloat16", 16384, 2, False)["kernel"] == "rows/bfloat16/8/32/0/512"
    assert sweep.cuda_launch("float32", 16384, 2, False)["kernel"] == "rows/float32/4/16/1024/1024"
    # Four float32 inputs: 8 per thread, at most 8192 columns in registers.
    assert sweep.cuda_launch("float32", 8192, 4, False)["kernel"] == "rows/float32/4/8/1024/1024"
    assert sweep.cuda_launch("float32", 16384, 4, False)["kernel"] == "long/float32/4"
    assert sweep.cuda_launch("float16", 65536, 1, False)["kernel"] == "long/float16/8"


def test_the_mirrored_launch_takes_the_narrow_build_where_the_dense_one_spills():
    # Two 2-byte inputs: the dense build holds 32 a thread (32 registers of row), the narrow one 16 (1024
    # threads at 16384); one input already fits 16 registers: no narrow build.
    assert sweep.cuda_launch("float16", 1024, 2, False, narrow=True)["kernel"] == "rows/float16/8/16/0/512"
    assert sweep.cuda_launch("float16", 16384, 2, False, narrow=True)["kernel"] == "rows/float16/8/16/0/1024"
    assert sweep.cuda_launch("float16", 16384, 1, False, narrow=True) is None
    # float32 rows of up to 8192 that take the short build have no narrow one.
    assert sweep.cuda_launch("float32", 4096, 1, False, narrow=True) is None
    assert sweep.cuda_launch("float32", 4096, 2, False, narrow=True)["kernel"] == "rows/float32/4/8/512/512"
    dense, narrow = "rows/float16/8/32/0/512", "rows/float16/8/16/0/512"
    regs = {dense: {"registers": 64, "spill_bytes": 68, "stack": 72}, narrow: {"registers": 55, "spill_bytes": 0, "stack": 0}}
    assert sweep.cuda_facts(regs, "float16", 1024, 2, False)["kernel"] == narrow
    regs[narrow] = {"registers": 64, "spill_bytes": 68, "stack": 72}  # spills as much: the dense build stays
    assert sweep.cuda_facts(regs, "float16", 1024, 2, False)["kernel"] == dense
    # At 16384 the narrow build takes 1024 threads: only where it spares 64 bytes or more.
    dense, wide = "rows/float16/8/32/0/512", "rows/float16/8/16/0/1024"
    regs = {dense: {"registers": 64, "spill_bytes": 32, "stack": 32}, wide: {"registers": 54, "spill_bytes": 0, "stack": 0}}
    assert sweep.cuda_facts(regs, "float16", 16384, 2, False)["kernel"] == dense
    regs[dense] = {"registers": 64, "spill_bytes": 68, "stack": 72}
    assert sweep.cuda_facts(regs, "float16", 16384, 2, False)["kernel"] == wide


def test_occupancy_follows_registers_threads_and_shared_memory():
    assert sweep.occupancy(32, 256) == 1.0
    assert sweep.occupancy(64, 512) == 0.5
    assert sweep.occupancy(56, 128) == 9 * 128 / 2048  # 56 x 32 per warp: 36 warps, 9 blocks of 4
    assert sweep.occupancy(64, 1024) == 0.5
    assert sweep.occupancy(32, 256, shared=100 * 1024) == 2 * 256 / 2048


def test_summary_prints_the_distribution_and_the_worst_cells(capsys):
    def row(op, backend, dtype, cols, ratio, pct, reductions=1):
        return {"id": op, "op": op, "backend": backend, "expr": "e", "dtype": dtype, "cols": cols, "rows": 4, "n": 4 * cols,
                "vs_compile": ratio, "pct_of_copy": pct, "compile_pct_of_copy": pct * ratio, "reductions": reductions,
                "registers": 40, "spill_bytes": 0, "occupancy": 0.5, "kernel": "rows/x", "threads": 128}

    rows = [row("a", "cuda", "float16", 1024, 0.90, 80), row("b", "cuda", "float16", 1024, 1.00, 99),
            row("c", "cuda", "float16", 1024, 1.10, 99), row("a_tl", "triton", "float16", 65536, 0.97, 86)]
    sweep.summarize(rows)
    out = capsys.readouterr().out
    assert "cuda     float16      1024     3  0.90x  1.00x    2/3" in out
    assert "rows of 65536+, one reduction: 1/1 cells at >= 85% of copy" in out
    worst = out.split("ten worst:\n")[1].splitlines()
    assert worst[0].startswith("  0.90x 80% ") and "40 regs, 0 B spilled, occupancy 50%" in worst[0]
    assert len(worst) == 4


_SPILL_PATH = _PATH.parent / "spill_choices.py"
_GRAD = "_ZN2kg7rowwise51_GLOBAL__N__84d610f6_13_r16_kernel_cu_e7f0193d_258616grad_rows_kernelIN3r166GradOpEN3c108BFloat16E"
_SPILL_LOG = f"""\
ptxas info    : Compiling entry function '{_GRAD}Li8ELi32ELi0ELi512ELi1ELb1EJLm0ELm1ELm2ELm3ELm4EEEEvDpPKT0_NS1_11GradOutputsIT_S7_EEll' for 'sm_90'
ptxas info    : Function properties for x
    144 bytes stack frame, 140 bytes spill stores, 280 bytes spill loads
ptxas info    : Used 128 registers, used 1 barriers, 144 bytes cumulative stack size, 384 bytes smem
ptxas info    : Compiling entry function '{_GRAD}Li8ELi16ELi0ELi512ELi1ELb1EJLm0ELm1ELm2ELm3ELm4EEEEvDpPKT0_NS1_11GradOutputsIT_S7_EEll' for 'sm_90'
ptxas info    : Function properties for x
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 113 registers, used 1 barriers, 384 bytes smem
ptxas info    : Compiling entry function '_ZN2kg7rowwise53_GLOBAL__N__30f3365e_14_r02_kernel_cu_e2938a44_1368219cluster_rows_kernelIN3r0253_GLOBAL__N__30f3365e_14_r02_kernel_cu_e2938a44_136822OpEN3c108BFloat16ELi8ELi32ELi0ELi3ELb1EJLm0EEEEvDpPKT0_PS8_li' for 'sm_90'
ptxas info    : Function properties for x
    8 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads
ptxas info    : Used 40 registers, used 1 barriers, 64 bytes smem
"""


def test_spill_choices_name_the_builds_the_launch_compares(tmp_path):
    spec = importlib.util.spec_from_file_location("spill_choices", _SPILL_PATH)
    assert spec is not None and spec.loader is not None
    choices = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(choices)
    found = choices.read_log(_SPILL_LOG)
    # The backward's two builds of r16 in bfloat16; the cluster kernel is not a register kernel.
    assert list(found) == [("r16", "backward", "bfloat16")]
    assert found["r16", "backward", "bfloat16"][(8, 32, 0, 512, 1)] == {"registers": 128, "spill_bytes": 140, "stack": 144}
    [row] = choices.choices(found, ["bfloat16"], weighted={"r16"})
    assert (row["dense_per_thread"], row["narrow_per_thread"], row["takes_narrow"]) == (32, 16, True)
    # float32 and float64 backward with weights take the narrow build wherever it fits, spills or not.
    found_f32 = {("r16", "backward", "float32"): {(4, 16, 0, 512, 1): {"registers": 128, "spill_bytes": 8, "stack": 8},
                                                   (4, 4, 0, 512, 2): {"registers": 64, "spill_bytes": 0, "stack": 0}}}
    [row] = choices.choices(found_f32, ["float32"], weighted={"r16"})
    assert row["always_narrow"] and not row["takes_narrow"]


def test_ptxas_times_names_the_ops_and_kernels_ptxas_spends_its_time_on(tmp_path, capsys):
    import gzip
    import sys

    log = _SPILL_LOG.replace("384 bytes smem\n", "384 bytes smem\nptxas info    : Compile time = 25012.500 ms\n", 1)
    log += "ptxas info    : Compile time = 40.000 ms\n"
    entries = sweep.ptxas_entries(log)
    assert [facts["compile_us"] for _, facts in entries] == [25012500, 0, 40000]
    path = tmp_path / "build.log.gz"
    path.write_bytes(gzip.compress(log.encode()))
    spec = importlib.util.spec_from_file_location("ptxas_times", _PATH.parent / "ptxas_times.py")
    assert spec is not None and spec.loader is not None
    times = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(times)
    assert times.op_and_kernel(entries[0][0]) == ("r16", "grad_rows_kernel")
    assert times.op_and_kernel(entries[2][0]) == ("r02", "cluster_rows_kernel")
    old_argv = sys.argv
    sys.argv = ["ptxas_times.py", str(path), "--top", "1"]
    try:
        assert times.main() == 0
    finally:
        sys.argv = old_argv
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "3 kernels, 25.1 s of ptxas in all"
    assert out[2].split() == ["r16", "2", "25.0", "25.0"] and out[3].split() == ["r02", "1", "0.0", "0.0"]
    assert out[-1].split()[:4] == ["25.0", "s", "r16", "grad_rows_kernel"]


def test_grad_builds_reads_the_backward_builds_with_their_spill_loads(tmp_path, capsys):
    import sys

    spec = importlib.util.spec_from_file_location("grad_builds", _PATH.parent / "grad_builds.py")
    assert spec is not None and spec.loader is not None
    builds = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(builds)
    cluster = _GRAD.replace("grad_rows_kernel", "grad_cluster_rows_kernel").replace("258616", "258624")

    def entry(arguments: str, stack: int, registers: int, op: str = "r16") -> str:
        """ptxas -v's report of one cluster build (no spills) with these template arguments after the dtype."""
        return (f"ptxas info    : Compiling entry function '{cluster.replace('r16', op)}{arguments}"
                "JLm0ELm1EEEEvDpPKT0_NS1_11GradOutputsIT_S7_EEli' for 'sm_90'\n"
                f"ptxas info    : Function properties for x\n    {stack} bytes stack frame, 0 bytes spill stores, "
                f"0 bytes spill loads\nptxas info    : Used {registers} registers, used 1 barriers, 64 bytes smem\n")

    log = (_SPILL_LOG + entry("Li8ELi16ELb1E", 32, 119) + entry("Li8ELi32E", 0, 96)
           + entry("Li8ELi32ELi2E", 0, 64, op="r17"))
    found = builds.read_log(log)
    # The two register builds of r16's backward and its cluster builds (with kWeightGrads, as before version 44;
    # without, since; with a minimum of blocks, the 64-register candidate's), and a cluster build of an op (r17)
    # the log has no register build of; the forward's cluster kernel is not one.
    assert [(b["op"], b["kind"], b["per_thread"], b["threads"], b["loads"], b["min_blocks"]) for b in found] == [
        ("r16", "rows", 32, 512, 280, 1), ("r16", "rows", 16, 512, 0, 1), ("r16", "cluster", 16, 512, 0, 1),
        ("r16", "cluster", 32, 512, 0, 1), ("r17", "cluster", 32, 512, 0, 2)]
    assert found[0]["stack"] == 144 and found[0]["stores"] == 140 and found[0]["registers"] == 128
    assert found[0]["weights"] and found[0]["dtype"] == "bfloat16" and found[2]["registers"] == 119
    # A cluster build's name no longer says whether there are weights: the op's register builds do.
    assert found[3]["weights"] is True and found[3]["registers"] == 96 and found[4]["weights"] is None
    path = tmp_path / "build.log"
    path.write_text(log)
    old_argv = sys.argv
    sys.argv = ["grad_builds.py", str(path), "--threads", "512", "--dtypes", "bfloat16"]
    try:
        assert builds.main() == 0
    finally:
        sys.argv = old_argv
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 2 and all(" rows " in line for line in out)
    assert "stack  144  spill stores  140  loads  280" in out[0]


def test_fwd_ab_pairs_the_cells_of_two_runs_and_counts_the_faster_and_slower(tmp_path):
    spec = importlib.util.spec_from_file_location("fwd_ab", _PATH.parent / "fwd_ab.py")
    assert spec is not None and spec.loader is not None
    ab = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ab)

    def run(name, times):
        rows = [{"id": op, "backend": "cuda", "dtype": "float16", "cols": cols, "us": us, "vs_compile": 1.0,
                 "pct_of_copy": 80.0} for (op, cols), us in times.items()]
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps({"seed": 64, "rows": rows}))
        return ab.cells(str(path))

    old = run("old", {("r10", 1024): 100.0, ("r10", 4096): 100.0, ("r05", 1024): 100.0, ("only_old", 1024): 50.0})
    new = run("new", {("r10", 1024): 70.0, ("r10", 4096): 105.0, ("r05", 1024): 101.0, ("only_new", 1024): 50.0})
    lines = ab.compare(old, new)
    assert len(lines) == 1 + 3 + 1  # the header, the three shared cells, the summary
    assert "0.700" in next(line for line in lines if line.startswith("r10") and " 1024 " in line)
    assert lines[-1] == "forward new/old: median 1.010, min 0.700, max 1.050, 1 of 3 faster by 3% or more, 1 slower"


def test_rowwise_ptxas_counts_every_instruction_of_long_kernels_and_reads_a_seeds_draw():
    spec = importlib.util.spec_from_file_location("rowwise_ptxas", _PATH.parent / "rowwise_ptxas.py")
    assert spec is not None and spec.loader is not None
    ptxas = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ptxas)
    name = "_ZN2kg7rowwise11rows_kernelIN3r102OpEN3c104HalfELi8ELi32ELi0ELi512EJLm0EEEEvDpPKT0_PS7_ll"
    # Addresses past 0xffff take five hex digits: a kernel of more than 4096 instructions has them.
    sass = "\n".join([f"\t\tFunction : {name}",
                      "        /*fff0*/                   FMNMX.NAN R1, R2, R3, !PT ;   /* 0x0 */",
                      "        /*10000*/                  HADD2.F32 R4, -RZ, R5.H0_H0 ;   /* 0x0 */",
                      "        /*10010*/                  @P0 BRA 0x10100 ;   /* 0x0 */"])
    counts = ptxas.sass_counts(sass)
    assert counts == {"rows<float16/8/32/0/512>": {"ALL": 3, "FMNMX": 1, "HADD2.F32": 1, "BRA": 1}}, counts
    drawn = ptxas.drawn(64)
    assert drawn["softmax"] == ("x", "", "exp(x - max(x)) / sum(exp(x - max(x)))")
    assert drawn["r10"] == ("x1", "", "x1 * tanh(max(x1 * x1)) * tanh(min(x1 * x1)) - min(x1)")


def test_ncu_pair_table_pairs_each_cells_kernels_and_counts_per_element():
    spec = importlib.util.spec_from_file_location("ncu_pair_table", _PATH.parent / "ncu_pair_table.py")
    assert spec is not None and spec.loader is not None
    table = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(table)
    head = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
            '"Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"\n')

    def row(ident, kernel, metric, unit, value):
        return (f'"{ident}","1","python3","h","{kernel}","1","7","(128, 1, 1)","(16, 1, 1)","0","9.0",'
                f'"Command line profiler metrics","{metric}","{unit}","{value}"\n')

    ours, theirs = "void kg::<unnamed>::rows_kernel<r00::Op, c10::Half, 8>(const T2 *)", "triton_red_fused_sin_0"
    n = 2**20
    csv_text = "==PROF== Connected\n" + head + "".join([
        row(0, ours, "gpu__time_duration.sum", "ns", "292,128"),
        row(0, ours, "smsp__inst_executed.sum", "inst", f"{3 * n:,}"),  # 96 instructions an element
        row(1, theirs, "gpu__time_duration.sum", "us", "239.5"),
        row(1, theirs, "smsp__inst_executed.sum", "inst", f"{n // 2}"),
        row(2, ours, "gpu__time_duration.sum", "ms", "0.1"),
        row(3, theirs, "gpu__time_duration.sum", "ns", "50,000"),
    ])
    stderr = f"warm r00 float16 4096: ...\nCELL r00 float16 4096 {n}\nCELL r09 float16 1024 {n}\n"
    lines = table.table(csv_text, stderr).splitlines()
    assert len(lines) == 5, lines
    first, second = lines[1].split(), lines[2].split()
    assert first[:4] == ["r00", "float16", "4096", "ours"] and first[4:6] == ["292.1", "96.0"], first
    assert second[:4] == ["r00", "float16", "4096", "compile"] and second[4:6] == ["239.5", "16.0"], second
    assert lines[3].split()[:5] == ["r09", "float16", "1024", "ours", "100.0"], lines[3]
    assert lines[4].split()[:5] == ["r09", "float16", "1024", "compile", "50.0"], lines[4]
