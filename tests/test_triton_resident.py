"""The Triton rowwise backward's launch reads how many programs of its rows kernel the GPU holds from the
compiled kernel (_triton_rowwise.resident). Where Triton does not report that, the backward must still run."""

from __future__ import annotations

import importlib
import sys

import pytest
from click.testing import CliRunner

from kernelgen.cli import main

torch = pytest.importorskip("torch", reason="the generated package runs on torch")


def test_a_triton_that_does_not_report_registers_takes_the_second_pass(tmp_path):
    # _triton_rowwise.resident reads a compiled kernel's registers and spills through a call Triton does not
    # document (CompiledKernel._init_handles). Without it, the backward of an op with weights must still run:
    # resident answers "spills" (the launch then takes the two passes), once, with a warning.
    pytest.importorskip("triton", reason="a Triton package imports without a build")
    result = CliRunner().invoke(main, ["new", "held-ops", "--op", "norm", "--kind", "rowwise", "--backend", "triton",
                                       "--inputs", "x", "--weights", "w", "--expr", "x * w - mean(x * w)", "--defaults",
                                       "--output", str(tmp_path)])
    assert result.exit_code == 0, result.output
    sys.path.insert(0, str(tmp_path / "held-ops"))
    try:
        shared = importlib.import_module("held_ops._triton_rowwise")
    finally:
        sys.path.remove(str(tmp_path / "held-ops"))

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
