"""The Triton rowwise launches read how many programs of a kernel the GPU holds from the compiled kernel
(_triton_rowwise.resident): the backward's rows kernel, and the forward's warps at its longest rows
(rows_warps). Where Triton does not report that, both must still run."""

from __future__ import annotations

import contextlib
import importlib
import sys

import pytest
from click.testing import CliRunner

from kernelgen.cli import main

torch = pytest.importorskip("torch", reason="the generated package runs on torch")


def _shared(tmp_path):
    pytest.importorskip("triton", reason="a Triton package imports without a build")
    result = CliRunner().invoke(main, ["new", "held-ops", "--op", "norm", "--kind", "rowwise", "--backend", "triton",
                                       "--inputs", "x", "--weights", "w", "--expr", "x * w - mean(x * w)", "--defaults",
                                       "--output", str(tmp_path)])
    assert result.exit_code == 0, result.output
    sys.path.insert(0, str(tmp_path / "held-ops"))
    try:
        return importlib.import_module("held_ops._triton_rowwise")
    finally:
        sys.path.remove(str(tmp_path / "held-ops"))


def _counts(monkeypatch, shared, at_16, spills_at_32):
    """Stands in for the compiled kernel's counts: resident() answers at_16 (programs held, bytes spilled) at 16
    warps and (66, spills_at_32) at 32. Returns the list of the warps it was asked about, in order."""
    asked = []

    def resident(kernel, args, options, device):
        asked.append(options["num_warps"])
        return at_16 if options["num_warps"] == 16 else (66, spills_at_32)

    monkeypatch.setattr(shared, "resident", resident)
    return asked


@pytest.mark.parametrize("at_16, spills_at_32, warps", [
    ((264, 0), 0, 16),   # two programs an SM at 16 warps: they hide each other's latency, 16 stay
    ((132, 0), 0, 32),   # one program an SM, and 32 warps do not spill: 32
    ((132, 0), 24, 16),  # one program an SM, but 32 warps spill: 16 stay
    ((132, 8), 24, None),  # both spill: the long kernel (None)
    ((0, 1), 1, 16),     # a Triton that does not report registers (resident's answer): 16 stay
])
def test_the_forward_takes_32_warps_only_where_16_leave_one_program_an_sm_and_32_do_not_spill(
        tmp_path, monkeypatch, at_16, spills_at_32, warps):
    shared = _shared(tmp_path)
    asked = _counts(monkeypatch, shared, at_16, spills_at_32)
    monkeypatch.setattr(shared, "_sm_count", lambda device: 132)
    options = {"BLOCK": 16384, "ACC": None, "num_warps": 16}
    assert shared.rows_warps(object(), [torch.bfloat16, torch.bfloat16, 16384], options, torch.device("cuda", 0), 32) == warps
    assert options["num_warps"] == 16  # the caller's options are not changed
    assert asked[0] == 16 and (len(asked) == 1) == (at_16[0] > 132 or at_16[0] == 0)


def test_a_triton_that_does_not_report_registers_takes_the_second_pass(tmp_path):
    # _triton_rowwise.resident reads a compiled kernel's registers and spills through a call Triton does not
    # document (CompiledKernel._init_handles). Without it, the backward of an op with weights must still run:
    # resident answers "spills" (the launch then takes the two passes), once, with a warning.
    shared = _shared(tmp_path)

    class Compiled:  # a compiled kernel of a Triton that keeps its counts elsewhere
        pass

    class Kernel:
        __name__ = "_norm_backward_rows_kernel"
        calls = 0

        def warmup(self, *args, **options):
            Kernel.calls += 1
            return Compiled()

    kernel = Kernel()
    with pytest.warns(UserWarning, match="does not report a compiled kernel's registers and spills"):
        assert shared.resident(kernel, [torch.float32, 16], {"BLOCK": 1024, "num_warps": 4}, torch.device("cuda", 0)) == (0, 1)
    assert shared.resident(kernel, [torch.float32, 16], {"BLOCK": 1024, "num_warps": 4}, torch.device("cuda", 0)) == (0, 1)
    assert Kernel.calls == 1  # compiled once, the answer kept


@pytest.mark.parametrize("at_16, spills_at_32, warps", [
    ((264, 0), 0, 16),      # no spill at the launch's warps: they stay, and nothing more is compiled
    ((264, 96), 1246, 16),  # a spill within SPILL_TOLERATED: the warps stay (seed 65's r06_tl spills 4 B at 1024)
    ((264, 2306), 1246, None),  # spills at 16 and at 32 warps (seed 65's r03_tl at 16384): the long kernel
    ((132, 960), 0, 32),    # spills at 16, not at 32: 32
    ((132, 960), 200, 32),  # spills at 16, within the tolerance at 32: 32
    ((0, 1), 1, 16),        # a Triton that does not report registers: the warps the row length chose
])
def test_the_backward_of_one_program_a_row_takes_the_long_kernel_where_it_spills_at_both_warps(
        tmp_path, monkeypatch, at_16, spills_at_32, warps):
    shared = _shared(tmp_path)
    asked = _counts(monkeypatch, shared, at_16, spills_at_32)
    options = {"BLOCK": 16384, "ACC": None, "num_warps": 16}
    assert shared.one_row_warps(object(), [torch.bfloat16] * 3 + [1, 16384], options, torch.device("cuda", 0)) == warps
    assert options["num_warps"] == 16
    assert asked == ([16] if at_16[1] <= shared.SPILL_TOLERATED or at_16[0] == 0 else [16, 32])


def test_the_backward_of_one_program_a_row_compiles_nothing_for_a_symbolic_row_length(tmp_path, monkeypatch):
    # Under torch.compile's dynamic shapes the row length is a SymInt: no kernel can be compiled ahead.
    shared = _shared(tmp_path)

    def resident(kernel, args, options, device):
        raise AssertionError("compiled a kernel for a symbolic row length")

    monkeypatch.setattr(shared, "resident", resident)

    class Symbolic:  # stands in for a SymInt, which is not an int
        pass

    assert shared.one_row_warps(object(), [torch.float32, Symbolic()], {"num_warps": 8}, torch.device("cuda", 0)) == 8


class _Recorder:
    """wrap() for a launch run on CPU tensors: records each kernel launched, its grid, arguments and options."""

    def __init__(self):
        self.launches = []

    def __call__(self, kernel):
        def grid(g):
            def launch(*args, **options):
                self.launches.append((kernel.__name__, g, args, options))
            return launch

        class Launchable:
            def __getitem__(self, g):
                return grid(g)
        return Launchable()


@pytest.fixture(scope="module")
def launch_ops(tmp_path_factory):
    """A Triton rowwise package of two ops, generated and imported once (an op is defined once a process): nrm
    with a weight, ctr without."""
    pytest.importorskip("triton", reason="a Triton package imports without a build")
    out = tmp_path_factory.mktemp("launch")
    result = CliRunner().invoke(main, ["new", "launch-ops", "--op", "nrm", "--kind", "rowwise", "--backend", "triton",
                                       "--inputs", "x", "--weights", "w", "--expr", "x * w - mean(x * w)", "--defaults",
                                       "--output", str(out)])
    assert result.exit_code == 0, result.output
    result = CliRunner().invoke(main, ["add", "ctr", "--package", str(out / "launch-ops"), "--kind", "rowwise",
                                       "--backend", "triton", "--inputs", "x", "--expr", "x - mean(x)"])
    assert result.exit_code == 0, result.output
    sys.path.insert(0, str(out / "launch-ops"))
    try:
        return {op: importlib.import_module(f"launch_ops.ops.{op}") for op in ("nrm", "ctr")}
    finally:
        sys.path.remove(str(out / "launch-ops"))


@pytest.mark.parametrize("weights", [True, False], ids=["weights", "no_weights"])
@pytest.mark.parametrize("one_row", [16, None], ids=["fits", "spills"])
def test_the_backward_launch_takes_the_long_kernel_where_the_row_kernel_spills(launch_ops, monkeypatch, weights, one_row):
    # The launch's choice, run on CPU tensors with the kernels recorded instead of launched: where the rows
    # kernel (weights only) and the kernel of one program a row both spill (one_row_warps answers None), the long
    # kernel takes rows of 16384; otherwise the kernel of one program a row, at the warps one_row_warps chose.
    name = "nrm" if weights else "ctr"
    module = launch_ops[name]
    asked = []

    def one_row_warps(kernel, args, options, device):
        asked.append((kernel, args, options))
        return one_row

    monkeypatch.setattr(module, "_one_row_warps", one_row_warps)
    if weights:
        monkeypatch.setattr(module, "_resident", lambda kernel, args, options, device: (132, 512))  # the rows kernel spills
        monkeypatch.setattr(module, "_splits", lambda device, rows, blocks, tile: (1, rows))
        monkeypatch.setattr(module, "_column_sum", lambda partial, dtype, wrap: partial.sum(0).to(dtype))
    monkeypatch.setattr(torch.cuda, "device", lambda device: contextlib.nullcontext())
    x = torch.randn(3, 16384)
    tensors = [torch.randn(3, 16384), x] + ([torch.randn(16384)] if weights else [])
    needs = [True] * (2 if weights else 1)
    wrap = _Recorder()
    grads = getattr(module, f"_{name}_backward_launch")(*tensors, needs, wrap)
    assert len(grads) == len(needs)
    launched = [kernel for kernel, *_ in wrap.launches]

    kernel, args, options = asked[0]
    assert kernel is getattr(module, f"_{name}_backward_kernel")
    # the arguments compiled for are the kernel's, in order: a dtype per tensor (the per-row values in op math), the
    # flags, the row length
    names = [a for a in kernel.arg_names if a not in ("BLOCK", "ACC")]
    assert len(args) == len(names) and args[-1] == 16384
    assert [a for a, n in zip(args, names, strict=True) if n == "_stats_ptr"] == ([torch.float32] if weights else [])
    assert options["BLOCK"] == 16384
    if one_row is None:
        assert launched[0] == f"_{name}_backward_long_kernel"
        assert wrap.launches[0][3]["BLOCK"] == module._LONG_BLOCK
    else:
        assert launched[0] == f"_{name}_backward_kernel" and wrap.launches[0][3]["num_warps"] == one_row
    assert launched[1:] == ([f"_{name}_weight_grad_kernel"] if weights else [])
