"""The generated benchmark harness (examples/muladd/benchmarks/harness.py and examples/myteam-ops/benchmarks/harness.py,
golden): how a case is built from what an op's benchmark declares, and how it is timed."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import torch

HARNESS = Path(__file__).resolve().parents[1] / "examples/muladd/benchmarks/harness.py"


def load_harness():
    spec = importlib.util.spec_from_file_location("kg_harness_under_test", HARNESS)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_rounds_are_interleaved_and_each_implementation_keeps_its_fastest(monkeypatch):
    harness = load_harness()
    # Scripted timings per implementation, one per round: a slow spell hits "op" in round 0 and
    # "eager" in round 1; the roofline is slowest in the last round.
    script = {"op": [8.0, 1.0, 1.1], "eager": [2.0, 9.0, 2.2], "copy": [0.5, 0.6, 0.9]}
    order = []

    def fake_timer(fn):
        name = fn()
        order.append(name)
        return script[name][sum(1 for n in order if n == name) - 1]

    monkeypatch.setattr(harness, "time_cpu", fake_timer)
    case = harness.Case(dtype="float32", size=4, shape="4", amount=1e9, unit="GB/s",
                        impls={"op": lambda: "op", "eager": lambda: "eager"},
                        roofline=("copy", 2e9, lambda: "copy"))
    row = harness.measure(case, torch.device("cpu"), rounds=3)
    assert order == ["op", "eager", "copy"] * 3
    assert row.seconds == {"op": 1.0, "eager": 2.0}
    assert row.throughput == {"op": 1.0, "eager": 0.5}
    assert row.roofline_name == "copy" and row.roofline_throughput == 4.0


def test_rounds_option_reaches_measure():
    harness = load_harness()
    assert harness.parse_args("x", []).rounds == 3
    assert harness.parse_args("x", ["--rounds", "1"]).rounds == 1


LIBRARY_HARNESS = Path(__file__).resolve().parents[1] / "examples/myteam-ops/benchmarks/harness.py"


def load_library_harness():
    """The harness of a package with every kind (elementwise, rowwise, matmul)."""
    spec = importlib.util.spec_from_file_location("kg_library_harness_under_test", LIBRARY_HARNESS)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_a_case_races_the_op_eager_twins_compile_and_fused_in_that_order(monkeypatch):
    harness = load_harness()
    compiled = []
    monkeypatch.setattr(torch, "compile", lambda fn, **options: compiled.append(options) or fn)
    races = harness.Races(op=lambda a, b: a + b, reference=lambda a, b: a + b, twins={"op_tl": lambda a, b: b + a},
                          fused=("add", torch.add), inputs=2)
    case, = harness.elementwise_cases("op", races, torch.device("cpu"), ["float32"], [64], use_compile=True)
    assert list(case.impls) == ["op", "eager", "op_tl", "compile", "add"]
    assert compiled == [{"dynamic": False, "mode": None}]
    results = [fn() for fn in case.impls.values()]
    assert all(torch.equal(result, results[0]) for result in results) and results[0].shape == (64,)
    # 2 inputs read and 1 output written, 4 bytes each; the copy reads and writes one input.
    assert (case.shape, case.amount, case.unit) == ("64", 3 * 64 * 4, "GB/s")
    assert case.roofline[:2] == ("copy", 2 * 64 * 4)
    case, = harness.elementwise_cases("op", races, torch.device("cpu"), ["float16"], [64], use_compile=False)
    assert list(case.impls) == ["op", "eager", "op_tl", "add"] and case.amount == 3 * 64 * 2


def test_the_inputs_are_drawn_from_the_declared_range():
    harness = load_harness()
    seen = []
    races = harness.Races(op=lambda x: seen.append(x), reference=lambda x: x, uniform=(0.5, 2.5))
    case, = harness.elementwise_cases("op", races, torch.device("cpu"), ["float64"], [4096], use_compile=False)
    case.impls["op"]()
    assert seen[0].min() >= 0.5 and seen[0].max() < 2.5
    races.uniform = None
    case, = harness.elementwise_cases("op", races, torch.device("cpu"), ["float64"], [4096], use_compile=False)
    case.impls["op"]()
    assert seen[1].min() < 0 < seen[1].max()


def test_rowwise_cases_read_the_weights_once_per_row_length():
    harness = load_library_harness()
    shapes = []
    races = harness.Races(op=lambda *args: shapes.append([tuple(a.shape) for a in args]), reference=lambda *args: None,
                          fused=("fused", lambda x, w, b: None), inputs=1, weights=2)
    cases = list(harness.rowwise_cases("ln", races, torch.device("cpu"), ["float32"], [4096], [256, 8192], use_compile=False))
    assert [(c.shape, c.size, c.group) for c in cases] == [("16x256", 256, "2^12"), ("1x8192", 8192, "2^13")]
    assert [c.amount for c in cases] == [(2 * 4096 + 2 * 256) * 4, (2 * 8192 + 2 * 8192) * 4]
    assert list(cases[0].impls) == ["ln", "eager", "fused"] and cases[0].roofline[1] == 2 * 4096 * 4
    cases[0].impls["ln"]()
    assert shapes == [[(16, 256), (256,), (256,)]]


def test_matmul_cases_run_float32_with_tf32_off_and_on(monkeypatch):
    harness = load_library_harness()
    flags = []
    races = harness.Races(op=lambda a, b, bias: flags.append(torch.backends.cuda.matmul.allow_tf32),
                          reference=lambda a, b, bias: None, bias=True)
    shapes = harness.matmul_shapes("8,4x6x2")
    assert shapes == [(8, 8, 8), (4, 6, 2)]
    cases = list(harness.matmul_cases("mm", races, torch.device("cpu"), ["float32", "bfloat16"], shapes, use_compile=False))
    assert [(c.dtype, c.shape, c.group) for c in cases] == [
        ("float32", "8^3", ""), ("float32", "4x6x2", "MxNxK"), ("float32+tf32", "8^3", ""),
        ("float32+tf32", "4x6x2", "MxNxK"), ("bfloat16", "8^3", ""), ("bfloat16", "4x6x2", "MxNxK")]
    assert cases[1].amount == 2.0 * 4 * 6 * 2 and cases[1].unit == "TFLOP/s" and cases[1].roofline is None
    previous = torch.backends.cuda.matmul.allow_tf32
    try:
        cases[0].impls["mm"]()
        cases[2].impls["mm"]()
    finally:
        torch.backends.cuda.matmul.allow_tf32 = previous
    assert flags == [False, True]


def test_backward_mode_races_a_training_step_of_each_implementation(monkeypatch):
    """--backward: every implementation's forward and backward through autograd, the vjp stub after eager,
    on leaves whose gradients each step writes afresh; the bytes (or operations) of both passes."""
    harness = load_library_harness()
    monkeypatch.setattr(torch, "compile", lambda fn, **options: fn)
    calls = []

    def op(a, b):
        calls.append("op")
        return a * b

    races = harness.Races(op=op, reference=lambda a, b: a * b, twins={"op_tl": lambda a, b: b * a},
                          fused=("mul", torch.mul), inputs=2, stub=lambda a, b: a * b)
    case, = harness.elementwise_cases("op", races, torch.device("cpu"), ["float32"], [64], use_compile=True, backward=True)
    assert list(case.impls) == ["op", "eager", "vjp", "op_tl", "compile", "mul"]
    assert case.amount == (3 * 2 + 2) * 64 * 4  # forward: a, b, out; backward: grad, a, b, da, db
    case.impls["op"]()
    first = [leaf.grad.clone() for leaf in case.impls["op"].leaves]
    case.impls["op"]()  # the gradients are written afresh, not accumulated
    assert calls == ["op", "op"]
    assert all(torch.equal(leaf.grad, g) for leaf, g in zip(case.impls["op"].leaves, first, strict=True))
    assert all(leaf.requires_grad and leaf.grad.shape == (64,) for leaf in case.impls["op"].leaves)
    rw = harness.Races(op=lambda x, w: x * w, reference=lambda x, w: x * w, inputs=1, weights=1)
    case, = harness.rowwise_cases("rw", rw, torch.device("cpu"), ["float32"], [256], [64], use_compile=False, backward=True)
    assert list(case.impls) == ["rw", "eager"] and case.amount == (5 * 256 + 3 * 64) * 4
    mm = harness.Races(op=lambda a, b: a @ b, reference=lambda a, b: a @ b)
    case = next(iter(harness.matmul_cases("mm", mm, torch.device("cpu"), ["bfloat16"], [(4, 6, 2)], use_compile=False,
                                          backward=True)))
    assert case.amount == 6.0 * 4 * 6 * 2
    case.impls["mm"]()
    assert harness.parse_args("x", ["--backward"]).backward and not harness.parse_args("x", []).backward


def test_main_refuses_an_unsupported_dtype_and_a_bad_size_on_one_line():
    harness = load_library_harness()

    def never(lib):
        raise AssertionError("the run must end before the races are declared")

    common = dict(package="math", op="op", backend="cuda", title="t", dtypes=["float32", "float16"])
    argv = ["--device", "cpu", "--dtypes", "float32,int8"]
    with pytest.raises(SystemExit, match=r"^unsupported dtype 'int8'; op supports float32, float16$"):
        harness.main_elementwise("d", argv, never, cuda_sizes=[8], cpu_sizes=[8], **common)
    with pytest.raises(SystemExit, match=r"^unsupported dtype 'int8'; op supports float32, float16$"):
        harness.main_rowwise("d", argv, never, cuda_sizes=[8], cpu_sizes=[8], cuda_cols=[8], cpu_cols=[8], **common)
    with pytest.raises(SystemExit, match=r"^bad --sizes value '7y': write positive integers separated by commas"):
        harness.main_elementwise("d", ["--device", "cpu", "--sizes", "4096,7y"], never, cuda_sizes=[8], cpu_sizes=[8], **common)
    with pytest.raises(SystemExit, match=r"^bad --cols value '0': write positive integers separated by commas"):
        harness.main_rowwise("d", ["--device", "cpu", "--cols", "0"], never, cuda_sizes=[8], cpu_sizes=[8], cuda_cols=[8],
                             cpu_cols=[8], **common)
    common.pop("backend")
    with pytest.raises(SystemExit, match=r"^bad size '7y': write N"):
        harness.main_matmul("d", ["--device", "cpu", "--sizes", "7y"], never, cuda_sizes="8", cpu_sizes="8", **common)


def test_a_package_harness_holds_the_cases_of_its_kinds_only():
    elementwise_only, every_kind = load_harness(), load_library_harness()
    assert hasattr(elementwise_only, "main_elementwise")
    assert not hasattr(elementwise_only, "main_rowwise") and not hasattr(elementwise_only, "main_matmul")
    assert all(hasattr(every_kind, f"main_{kind}") for kind in ("elementwise", "rowwise", "matmul"))
