"""Benchmark myteam::gelu (x * sigmoid(1.702 * x), CUDA C++ backend) against PyTorch.

    python benchmarks/bench_gelu.py [--dtypes float32,bfloat16] [--sizes 4096,268435456]
                                          [--json out.json] [--plot out.png] [--device cpu]

An elementwise op is memory-bound, so the figure of merit is bandwidth: bytes actually moved
(1 input read + 1 output written, per element) over time. It races, in the same run:
  eager     reference() in ops/gelu.py, run op by op by PyTorch (one kernel per operation)
  compile   torch.compile(reference): Inductor's fused Triton kernel
  gelu_tl   the same expression on the Triton backend (myteam_ops.gelu_tl)
and reports the percentage of a device-to-device copy measured in the same run, the practical
roofline: no kernel that reads and writes memory once can beat it by much.

--backward times a training step instead, out.backward(grad) through autograd, for every one of them
(the op with its generated backward) and for "vjp", the op with its stub (_backward_vjp: the vjp of
reference()); the bytes counted are then both passes' (the gradient and the inputs read again, the
inputs' gradients written).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # harness.py, beside this script
import harness  # noqa: E402

DTYPES = ["float32", "float64", "float16", "bfloat16"]
# From launch-bound (2^12) to far above the H100's 50 MB L2 (2^28 elements = 1 GiB in float32).
CUDA_SIZES = [2**12, 2**16, 2**20, 2**24, 2**26, 2**28]
CPU_SIZES = [2**12, 2**16, 2**20, 2**22]


def races(lib):  # lib is myteam_ops, imported by the harness once the arguments are parsed
    return harness.Races(
        op=lib.gelu,
        reference=lib.ops.gelu.reference,
        stub=harness.vjp_stub(lib.ops.gelu),  # --backward: the op with its vjp stub, the column "vjp"
        twins={"gelu_tl": lib.gelu_tl},
        inputs=1,
    )


def main(argv=None) -> None:
    harness.main_elementwise(__doc__, argv, races, package="myteam_ops", op="gelu", backend="cuda",
                             title="gelu: x * sigmoid(1.702 * x)",
                             dtypes=DTYPES, cuda_sizes=CUDA_SIZES, cpu_sizes=CPU_SIZES)


if __name__ == "__main__":
    main()
