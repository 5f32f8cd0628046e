"""The Triton rowwise launches read how many programs of a kernel the GPU holds from the compiled kernel
(_triton_rowwise.resident): the backward's rows kernel, and the forward's warps at its longest rows
(rows_warps). Where Triton does not report that, both must still run."""

from __future__ import annotations

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
    asked = []

    def resident(kernel, args, options, device):
        asked.append(options["num_warps"])
        return at_16 if options["num_warps"] == 16 else (66, spills_at_32)

    monkeypatch.setattr(shared, "resident", resident)
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
