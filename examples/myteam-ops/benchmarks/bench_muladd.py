"""Benchmark myteam::muladd (a * b + c, CUDA C++ backend) against PyTorch.

    python benchmarks/bench_muladd.py [--dtypes float32,bfloat16] [--sizes 4096,268435456]
                                          [--json out.json] [--plot out.png] [--device cpu]

An elementwise op is memory-bound, so the figure of merit is bandwidth: bytes actually moved
(3 inputs read + 1 output written, per element) over time. It races, in the same run:
  eager     reference() in ops/muladd.py, run op by op by PyTorch (one kernel per operation)
  compile   torch.compile(reference): Inductor's fused Triton kernel
  addcmul   torch.addcmul(c, a, b), PyTorch's own fused kernel for this expression
  muladd_tl   the same expression on the Triton backend (myteam_ops.muladd_tl)
and reports the percentage of a device-to-device copy measured in the same run, the practical
roofline: no kernel that reads and writes memory once can beat it by much.

--backward times a training step instead, out.backward(grad) through autograd, for every one of them
(the op with its generated backward) and for "vjp", the op with its stub (_backward_vjp: the vjp of
reference()); the bytes counted are then both passes' (the gradient and the inputs read again, the
inputs' gradients written).
"""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # harness.py, beside this script
import harness  # noqa: E402

DTYPES = ["float32", "float64", "float16", "bfloat16"]
# From launch-bound (2^12) to far above the H100's 50 MB L2 (2^28 elements = 1 GiB in float32).
CUDA_SIZES = [2**12, 2**16, 2**20, 2**24, 2**26, 2**28]
CPU_SIZES = [2**12, 2**16, 2**20, 2**22]


def races(lib):  # lib is myteam_ops, imported by the harness once the arguments are parsed
    return harness.Races(
        op=lib.muladd,
        reference=lib.ops.muladd.reference,
        stub=harness.vjp_stub(lib.ops.muladd),  # --backward: the op with its vjp stub, the column "vjp"
        twins={"muladd_tl": lib.muladd_tl},
        fused=("addcmul", lambda a, b, c: torch.addcmul(c, a, b)),
        inputs=3,
    )


def main(argv=None) -> None:
    harness.main_elementwise(__doc__, argv, races, package="myteam_ops", op="muladd", backend="cuda",
                             title="muladd: a * b + c",
                             dtypes=DTYPES, cuda_sizes=CUDA_SIZES, cpu_sizes=CPU_SIZES)


if __name__ == "__main__":
    main()
