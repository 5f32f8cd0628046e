"""Benchmark myteam::softmax (exp(x - max(x)) / sum(exp(x - max(x))), CUDA C++ backend, rowwise) against PyTorch.

    python benchmarks/bench_softmax.py [--dtypes float32,bfloat16] [--sizes 16777216,268435456]
                                          [--cols 1024,4096] [--json out.json] [--plot out.png] [--device cpu]

A rowwise op is memory-bound, so the figure of merit is bandwidth: bytes actually moved (1 input
read, 1 output written) over time. --sizes is the number of elements of each input in all, --cols the
row length: each size runs with every row length. It races, in the same run:
  eager     reference() in ops/softmax.py, run op by op by PyTorch
  compile   torch.compile(reference): Inductor's fused reduction kernel
  fused     torch.softmax(x, dim=-1), PyTorch's own kernel for this expression
  softmax_tl   the same expression on the Triton backend (myteam_ops.softmax_tl)
and reports the percentage of a device-to-device copy of one input measured in the same run, the
practical roofline.

--backward times a training step instead, out.backward(grad) through autograd, for every one of them
(the op with its generated backward) and for "vjp", the op with its stub (_backward_vjp: the vjp of
reference()); the bytes counted are then both passes' (the gradient, the inputs and the weights read
again, their gradients written).
"""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # harness.py, beside this script
import harness  # noqa: E402

DTYPES = ["float32", "float64", "float16", "bfloat16"]
# Elements of each input in all: from 2^24 (64 MiB of float32, above the H100's 50 MB L2) to 2^28.
CUDA_SIZES = [2**24, 2**26, 2**28]
CPU_SIZES = [2**18, 2**22]
# Row lengths: one block's registers hold a row up to 16384 on the CUDA backend, a cluster's above (sm_90).
CUDA_COLS = [1024, 4096, 16384, 65536]
CPU_COLS = [1024, 16384]


def races(lib):  # lib is myteam_ops, imported by the harness once the arguments are parsed
    return harness.Races(
        op=lib.softmax,
        reference=lib.ops.softmax.reference,
        stub=harness.vjp_stub(lib.ops.softmax),  # --backward: the op with its vjp stub, the column "vjp"
        twins={"softmax_tl": lib.softmax_tl},
        fused=("fused", lambda x: torch.softmax(x, dim=-1)),
        inputs=1,
        uniform=(0.5, 2.5),  # positive inputs: the expression is only smooth there (log, sqrt, x / y, ...)
    )


def main(argv=None) -> None:
    harness.main_rowwise(__doc__, argv, races, package="myteam_ops", op="softmax", backend="cuda",
                         title="softmax: exp(x - max(x)) / sum(exp(x - max(x)))",
                         dtypes=DTYPES, cuda_sizes=CUDA_SIZES, cpu_sizes=CPU_SIZES, cuda_cols=CUDA_COLS, cpu_cols=CPU_COLS)


if __name__ == "__main__":
    main()
